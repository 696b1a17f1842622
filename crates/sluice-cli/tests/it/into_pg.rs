//! `sluice load --into postgresql://…` against real PostgreSQL servers:
//! each test starts a private one (`initdb` in a temporary directory, a
//! loopback port, password authentication) and checks what the server
//! holds through `psql`. Without PostgreSQL's binaries the tests are
//! skipped with a printed reason, except under CI=true, where that fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::Tmp;

const PASSWORD: &str = "sluice-test-pw";

/// A private PostgreSQL server, stopped (immediately) when dropped.
struct Pg {
    bin: PathBuf,
    dir: Tmp,
    port: u16,
    /// Commands run as the `postgres` user (initdb refuses root).
    as_postgres: bool,
}

/// The directory of PostgreSQL's server programs: Debian's newest
/// `/usr/lib/postgresql/N/bin`, else where `pg_config --bindir` says.
fn pg_bin() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, b)) = versions.pop() {
        return Some(b);
    }
    let out = Command::new("pg_config").arg("--bindir").output().ok()?;
    let bin = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    bin.join("initdb").exists().then_some(bin)
}

pub(crate) fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

impl Pg {
    /// Starts a server, or says why not and returns `None` (a failure
    /// under CI=true).
    fn start(test: &str) -> Option<Pg> {
        Pg::start_with(test, false)
    }

    /// A server that, with `tls`, takes only TLS connections over TCP (a
    /// self-signed certificate made with openssl).
    fn start_with(test: &str, tls: bool) -> Option<Pg> {
        let Some(bin) = pg_bin() else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{test}: PostgreSQL's initdb was not found, and CI=true requires it (apt-get install postgresql)"
            );
            eprintln!(
                "{test}: skipped: PostgreSQL's initdb was not found (apt-get install postgresql)"
            );
            return None;
        };
        let dir = Tmp::new();
        let as_postgres = is_root();
        if as_postgres {
            let ok = Command::new("chown")
                .args(["-R", "postgres:", dir.0.to_str().unwrap()])
                .status()
                .is_ok_and(|s| s.success());
            assert!(
                ok,
                "{test}: cannot chown the server's directory to postgres"
            );
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let pg = Pg {
            bin,
            dir,
            port,
            as_postgres,
        };
        let pwfile = pg.dir.0.join("pw");
        std::fs::write(&pwfile, format!("{PASSWORD}\n")).unwrap();
        if as_postgres {
            let _ = Command::new("chown")
                .args(["postgres:", pwfile.to_str().unwrap()])
                .status();
        }
        let data = pg.dir.0.join("data");
        let out = pg.server_cmd(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                "postgres",
                "--auth=scram-sha-256",
                "--pwfile",
                pwfile.to_str().unwrap(),
                "--no-sync",
            ],
        );
        assert!(
            out.status.success(),
            "{test}: initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if tls {
            pg.enable_tls(&data);
        }
        pg.pg_ctl_start();
        Some(pg)
    }

    fn enable_tls(&self, data: &Path) {
        let out = Command::new("openssl")
            .args([
                "req",
                "-new",
                "-x509",
                "-days",
                "2",
                "-nodes",
                "-subj",
                "/CN=localhost",
            ])
            .args([
                "-newkey",
                "rsa:2048",
                "-keyout",
                "server.key",
                "-out",
                "server.crt",
            ])
            .current_dir(data)
            .output()
            .expect("openssl is needed for the TLS test");
        assert!(
            out.status.success(),
            "openssl: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let hba = "local all all scram-sha-256\n\
                   hostssl all all 127.0.0.1/32 scram-sha-256\n\
                   hostnossl all all 127.0.0.1/32 reject\n";
        std::fs::write(data.join("pg_hba.conf"), hba).unwrap();
        let mut conf = std::fs::read_to_string(data.join("postgresql.conf")).unwrap();
        conf.push_str("\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n");
        std::fs::write(data.join("postgresql.conf"), conf).unwrap();
        for f in ["server.key", "server.crt", "pg_hba.conf", "postgresql.conf"] {
            let p = data.join(f);
            if self.as_postgres {
                let _ = Command::new("chown").arg("postgres:").arg(&p).status();
            }
            if f == "server.key" {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
            }
        }
    }

    fn server_cmd(&self, program: &str, args: &[&str]) -> Output {
        let path = self.bin.join(program);
        let mut c = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&path);
            c
        } else {
            Command::new(&path)
        };
        c.args(args)
            .current_dir(&self.dir.0)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    fn pg_ctl_start(&self) {
        let data = self.dir.0.join("data");
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c shared_buffers=32MB -c max_connections=40",
            self.port,
            self.dir.0.display()
        );
        let log = self.dir.0.join("log");
        let out = self.server_cmd(
            "pg_ctl",
            &[
                "-D",
                data.to_str().unwrap(),
                "-o",
                &opts,
                "-l",
                log.to_str().unwrap(),
                "-w",
                "start",
            ],
        );
        assert!(
            out.status.success(),
            "pg_ctl start failed: {}{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }

    /// Stops the server at once, as a crash would (`-m immediate`).
    fn crash(&self) {
        let data = self.dir.0.join("data");
        let _ = self.server_cmd(
            "pg_ctl",
            &[
                "-D",
                data.to_str().unwrap(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        );
    }

    fn url(&self) -> String {
        format!(
            "postgresql://postgres:{PASSWORD}@127.0.0.1:{}/postgres",
            self.port
        )
    }

    /// The URL without the password (it comes from elsewhere).
    fn url_no_password(&self) -> String {
        format!("postgresql://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Rows of a query through psql: fields separated by `|`, NULL as
    /// `<null>`.
    fn psql(&self, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args([
                "-X",
                "-At",
                "-P",
                "null=<null>",
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
            ])
            .args(["-p", &self.port.to_string(), "-d", "postgres", "-c", sql])
            .env("PGPASSWORD", PASSWORD)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        self.crash();
    }
}

/// `sluice` run in `dir` with no PostgreSQL variables from the caller.
pub(crate) fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.current_dir(dir)
        .env_remove("PGPASSWORD")
        .env_remove("MYSQL_PWD")
        .env_remove("SLUICE_FAULT")
        .args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

pub(crate) fn ok(dir: &Path, args: &[&str]) -> String {
    let o = run(dir, args, &[]);
    assert!(
        o.status.success(),
        "sluice {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

pub(crate) fn fails(dir: &Path, args: &[&str]) -> String {
    let o = run(dir, args, &[]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "sluice {args:?} should fail with 2"
    );
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{err}"
    );
    err
}

const TYPES: &str =
    "id BIGINT, i INT, d DECIMAL(12,3), f DOUBLE, b BOOLEAN, day DATE, ts TIMESTAMP, s TEXT";

#[test]
fn every_type_and_null_round_trips_through_the_server() {
    let Some(pg) = Pg::start("every_type_and_null_round_trips_through_the_server") else {
        return;
    };
    let t = Tmp::new();
    std::fs::write(
        t.0.join("all.csv"),
        "id,i,d,f,b,day,ts,s\n\
         1,-2147483648,-123456789.125,1.5,true,1970-01-01,2000-01-01 00:00:00,plain\n\
         2,2147483647,0.001,-0.25,false,1999-12-31,1999-12-31 23:59:59.999999,\"quoted, with \"\"quotes\"\"\"\n\
         9223372036854775807,,,,,,,\n\
         -9223372036854775808,7,999999999.999,1e300,true,2262-04-11,1900-01-01 12:00:00.5,ünïcödé ☃\n\
         5,0,-0.5,0,false,0001-01-01,2024-02-29 08:30:00,\n",
    )
    .unwrap();
    let url = pg.url();
    let out = ok(
        &t.0,
        &[
            "load", "--into", &url, "--schema", TYPES, "--header", "--null", "", "typed", "all.csv",
        ],
    );
    assert!(out.contains("loaded 5 rows"), "{out}");
    let got = pg.psql("SELECT * FROM typed ORDER BY id");
    let want = "\
-9223372036854775808|7|999999999.999|1e+300|t|2262-04-11|1900-01-01 12:00:00.5|ünïcödé ☃
1|-2147483648|-123456789.125|1.5|t|1970-01-01|2000-01-01 00:00:00|plain
2|2147483647|0.001|-0.25|f|1999-12-31|1999-12-31 23:59:59.999999|quoted, with \"quotes\"
5|0|-0.500|0|f|0001-01-01|2024-02-29 08:30:00|<null>
9223372036854775807|<null>|<null>|<null>|<null>|<null>|<null>|<null>
";
    assert_eq!(got, want);
    // The server's types are the schema's.
    let types = pg.psql(
        "SELECT string_agg(format_type(atttypid, atttypmod), ', ' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'typed'::regclass AND attnum > 0",
    );
    assert_eq!(
        types.trim(),
        "bigint, integer, numeric(12,3), double precision, boolean, date, timestamp without time zone, text"
    );
    // The same file again: skipped, as for a local table; --reload loads it again.
    let out = ok(&t.0, &["load", "--into", &url, "typed", "all.csv"]);
    assert!(
        out.contains("skipped 1 file loaded by earlier commits"),
        "{out}"
    );
    assert_eq!(pg.psql("SELECT count(*) FROM typed").trim(), "5");
    // An existing table's columns are checked against --schema.
    let err = fails(
        &t.0,
        &[
            "load",
            "--into",
            &url,
            "--schema",
            "id BIGINT, i BIGINT",
            "typed",
            "all.csv",
        ],
    );
    assert!(
        err.contains("column i is integer on the server (INT), BIGINT in --schema"),
        "{err}"
    );
}

/// `n` CSV files of `rows` rows each: id `f * 1_000_000 + i`, v = f.
pub(crate) fn write_files(t: &Tmp, n: usize, rows: usize) -> Vec<String> {
    (0..n)
        .map(|f| {
            let name = format!("f{f:02}.csv");
            let text: String = (0..rows)
                .map(|i| format!("{},{f}\n", f * 1_000_000 + i))
                .collect();
            std::fs::write(t.0.join(&name), text).unwrap();
            name
        })
        .collect()
}

pub(crate) fn load_args<'a>(url: &'a str, table: &'a str, files: &'a [String]) -> Vec<&'a str> {
    let mut a = vec![
        "load",
        "--into",
        url,
        "--no-header",
        "--delimiter",
        ",",
        "--schema",
        "id BIGINT, v INT",
        "--commit-every",
        "2files",
        "--connections",
        "3",
        "--block-size",
        "64KiB",
        table,
    ];
    a.extend(files.iter().map(String::as_str));
    a
}

/// Every row of the files once, and the journal agreeing; `query`
/// returns a row's fields joined by `|`.
pub(crate) fn assert_exactly_once(
    query: impl Fn(&str) -> String,
    table: &str,
    files: usize,
    rows: usize,
) {
    let got = query(&format!(
        "SELECT count(*), count(DISTINCT id), sum(id) FROM {table}"
    ));
    let ids: u64 = (0..files as u64)
        .flat_map(|f| (0..rows as u64).map(move |i| f * 1_000_000 + i))
        .sum();
    let n = files * rows;
    assert_eq!(got.trim(), format!("{n}|{n}|{ids}"));
    let journal = query(&format!(
        "SELECT count(*), sum(rows) FROM sluice_load_journal WHERE target = '{table}'"
    ));
    assert_eq!(journal.trim(), format!("{files}|{n}"));
}

#[test]
fn a_crash_between_the_commits_of_a_groups_parts_is_repaired_by_the_next_run() {
    let Some(pg) =
        Pg::start("a_crash_between_the_commits_of_a_groups_parts_is_repaired_by_the_next_run")
    else {
        return;
    };
    let t = Tmp::new();
    let files = write_files(&t, 4, 20_000);
    let url = pg.url();
    let args = load_args(&url, "crashy", &files);
    // Exits after the first group (3 parts) and one part of the second.
    let o = run(&t.0, &args, &[("SLUICE_FAULT", "into-exit-after-parts=4")]);
    assert_eq!(
        o.status.code(),
        Some(137),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let partial: u64 = pg
        .psql("SELECT count(*) FROM crashy")
        .trim()
        .parse()
        .unwrap();
    // The first group, and what the committed part of the second took
    // (a connection may have taken no batch).
    assert!((40_000..=80_000).contains(&partial), "{partial}");
    let o = run(&t.0, &args, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(err.contains("of 1 commit a crash interrupted"), "{err}");
    assert!(
        out.contains("skipped 2 files loaded by earlier commits"),
        "{out}"
    );
    assert_exactly_once(|q| pg.psql(q), "crashy", 4, 20_000);
}

#[test]
fn sigkill_at_random_moments_then_the_same_command_loads_every_row_once() {
    let Some(pg) =
        Pg::start("sigkill_at_random_moments_then_the_same_command_loads_every_row_once")
    else {
        return;
    };
    let t = Tmp::new();
    let files = write_files(&t, 10, 10_000);
    let url = pg.url();
    let args = load_args(&url, "killed", &files);
    // A cheap deterministic sequence of kill times.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..6 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .current_dir(&t.0)
            .env_remove("SLUICE_FAULT")
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(50 + x % 600));
        let _ = child.kill();
        let _ = child.wait();
    }
    ok(&t.0, &args);
    assert_exactly_once(|q| pg.psql(q), "killed", 10, 10_000);
}

#[test]
fn a_server_crash_mid_load_fails_clearly_and_the_rerun_loads_every_row_once() {
    let Some(pg) =
        Pg::start("a_server_crash_mid_load_fails_clearly_and_the_rerun_loads_every_row_once")
    else {
        return;
    };
    let t = Tmp::new();
    let files = write_files(&t, 8, 30_000);
    let url = pg.url();
    let args = load_args(&url, "restarted", &files);
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .current_dir(&t.0)
        .env_remove("SLUICE_FAULT")
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the first commit is in, the server goes down.
    for _ in 0..600 {
        let n = pg.psql("SELECT count(*) FROM pg_class WHERE relname = 'sluice_load_parts'");
        if n.trim() == "1"
            && pg
                .psql("SELECT count(*) FROM sluice_load_parts WHERE target = 'restarted'")
                .trim()
                != "0"
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    pg.crash();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    if o.status.success() {
        // The load won the race: nothing to recover, still exactly once.
        eprintln!("the load finished before the server went down");
        pg.pg_ctl_start();
        assert_exactly_once(|q| pg.psql(q), "restarted", 8, 30_000);
        return;
    }
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("PostgreSQL"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    pg.pg_ctl_start();
    ok(&t.0, &args);
    assert_exactly_once(|q| pg.psql(q), "restarted", 8, 30_000);
}

#[test]
fn duplicate_keys_load_nothing_and_name_the_key_or_the_line() {
    let Some(pg) = Pg::start("duplicate_keys_load_nothing_and_name_the_key_or_the_line") else {
        return;
    };
    let t = Tmp::new();
    std::fs::write(t.0.join("dup.csv"), "id,v\n1,a\n2,b\n3,c\n2,d\n").unwrap();
    let url = pg.url();
    // The key added after the rows fails: the new table is dropped again.
    let err = fails(
        &t.0,
        &["load", "--into", &url, "--key", "id", "after", "dup.csv"],
    );
    assert!(err.contains("Key (id)=(2) is duplicated"), "{err}");
    assert!(err.contains("nothing is loaded"), "{err}");
    assert_eq!(pg.psql("SELECT to_regclass('after') IS NULL").trim(), "t");
    assert_eq!(
        pg.psql("SELECT count(*) FROM sluice_load_journal WHERE target = 'after'")
            .trim(),
        "0"
    );
    // Loaded into the indexed table: the server names the row, sluice
    // its file and line.
    let err = fails(
        &t.0,
        &[
            "load",
            "--into",
            &url,
            "--key",
            "id",
            "--index-first",
            "first",
            "dup.csv",
        ],
    );
    assert!(err.contains("dup.csv:5"), "{err}");
    assert!(err.contains("23505"), "{err}");
    assert_eq!(pg.psql("SELECT to_regclass('first') IS NULL").trim(), "t");
    // The same with the schema given: --key still makes the index first
    // (it once reached only the key added after the rows).
    let err = fails(
        &t.0,
        &[
            "load",
            "--into",
            &url,
            "--schema",
            "id INT, v TEXT",
            "--key",
            "id",
            "--index-first",
            "first",
            "dup.csv",
        ],
    );
    assert!(err.contains("dup.csv:5") && err.contains("23505"), "{err}");
    // Rows sent in key order: the server's row is still named by its
    // file and line (the second 2, line 5, comes after the first).
    let err = fails(
        &t.0,
        &[
            "load", "--into", &url, "--key", "id", "--index", "sorted", "sorted", "dup.csv",
        ],
    );
    assert!(err.contains("dup.csv:5") && err.contains("23505"), "{err}");
    std::fs::write(
        t.0.join("desc.csv"),
        "id,v
3,c
1,a
2,b
",
    )
    .unwrap();
    let out = ok(
        &t.0,
        &[
            "load", "--into", &url, "--key", "id", "--index", "sorted", "sorted", "desc.csv",
        ],
    );
    assert!(out.contains("rows sent in key order"), "{out}");
    assert_eq!(
        pg.psql("SELECT string_agg(v, '' ORDER BY id) FROM sorted")
            .trim(),
        "abc"
    );
    // The key added after good rows: there, with the rows.
    std::fs::write(t.0.join("good.csv"), "id,v\n1,a\n2,b\n").unwrap();
    let out = ok(
        &t.0,
        &["load", "--into", &url, "--key", "id", "keyed", "good.csv"],
    );
    assert!(
        out.contains("primary key (id) added after the rows"),
        "{out}"
    );
    assert_eq!(
        pg.psql(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) WHERE i.indrelid = 'keyed'::regclass AND i.indisprimary"
        )
        .trim(),
        "id"
    );
    // An existing keyed table: a duplicate names its line, the table
    // keeps what it had.
    let err = fails(&t.0, &["load", "--into", &url, "keyed", "dup.csv"]);
    assert!(
        err.contains("dup.csv:2") && err.contains("already exists"),
        "{err}"
    );
    assert_eq!(pg.psql("SELECT count(*) FROM keyed").trim(), "2");
}

#[test]
fn credentials_come_from_the_url_a_file_or_pgpassword_and_bad_ones_write_nothing() {
    let Some(pg) =
        Pg::start("credentials_come_from_the_url_a_file_or_pgpassword_and_bad_ones_write_nothing")
    else {
        return;
    };
    let t = Tmp::new();
    std::fs::write(t.0.join("a.csv"), "id,v\n1,a\n").unwrap();
    let bad = format!("postgresql://postgres:wrong@127.0.0.1:{}/postgres", pg.port);
    let err = fails(&t.0, &["load", "--into", &bad, "creds", "a.csv"]);
    assert!(err.contains("password authentication failed"), "{err}");
    assert!(err.contains("28P01"), "{err}");
    assert!(!err.contains("wrong"), "the password is printed: {err}");
    assert_eq!(
        pg.psql("SELECT count(*) FROM pg_class WHERE relname IN ('creds', 'sluice_load_journal')")
            .trim(),
        "0"
    );
    let plain = pg.url_no_password();
    // No password at all.
    let err = fails(&t.0, &["load", "--into", &plain, "creds", "a.csv"]);
    assert!(err.contains("password"), "{err}");
    // From a file, and from PGPASSWORD.
    std::fs::write(t.0.join("pw"), format!("{PASSWORD}\n")).unwrap();
    ok(
        &t.0,
        &[
            "load",
            "--into",
            &plain,
            "--password-file",
            "pw",
            "creds",
            "a.csv",
        ],
    );
    let o = run(
        &t.0,
        &["load", "--into", &plain, "--reload", "creds", "a.csv"],
        &[("PGPASSWORD", PASSWORD)],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(pg.psql("SELECT count(*) FROM creds").trim(), "2");
}

#[test]
fn rejects_the_json_summary_and_inference_work_as_for_local_loads() {
    let Some(pg) = Pg::start("rejects_the_json_summary_and_inference_work_as_for_local_loads")
    else {
        return;
    };
    let t = Tmp::new();
    std::fs::write(
        t.0.join("r.csv"),
        "id,zip,amount\n1,00501,1.50\n2,oops,x\n3,02134,2.25\n",
    )
    .unwrap();
    let url = pg.url();
    let o = run(
        &t.0,
        &[
            "load",
            "--into",
            &url,
            "--json",
            "--rejects",
            "bad.csv",
            "--schema",
            "id INT, zip TEXT, amount DECIMAL(8,2)",
            "--header",
            "rj",
            "r.csv",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["rows"], 2, "{v}");
    assert_eq!(v["rejected"], 1, "{v}");
    assert_eq!(
        v["into"]["connections"].as_u64().map(|c| c >= 1),
        Some(true),
        "{v}"
    );
    assert!(
        !v["into"]["url"].as_str().unwrap().contains(PASSWORD),
        "{v}"
    );
    let bad = std::fs::read_to_string(t.0.join("bad.csv")).unwrap();
    assert!(bad.contains("r.csv") && bad.contains("oops"), "{bad}");
    assert_eq!(
        pg.psql("SELECT id, zip, amount FROM rj ORDER BY id"),
        "1|00501|1.50\n3|02134|2.25\n"
    );
    // Inferred for a new table: leading zeros stay text.
    std::fs::write(t.0.join("z.csv"), "zip,n\n00501,1\n02134,2\n").unwrap();
    ok(&t.0, &["load", "--into", &url, "zips", "z.csv"]);
    assert_eq!(
        pg.psql("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'zips'::regclass AND attname = 'zip'"),
        "text\n"
    );
    assert_eq!(pg.psql("SELECT zip FROM zips ORDER BY n"), "00501\n02134\n");
}

#[test]
fn sslmode_require_loads_over_tls() {
    let Some(pg) = Pg::start_with("sslmode_require_loads_over_tls", true) else {
        return;
    };
    let t = Tmp::new();
    std::fs::write(t.0.join("a.csv"), "id,v\n1,a\n2,b\n").unwrap();
    // The server refuses connections without TLS.
    let plain = pg.url();
    let err = fails(
        &t.0,
        &[
            "load",
            "--into",
            &format!("{plain}?sslmode=disable"),
            "tls",
            "a.csv",
        ],
    );
    assert!(err.contains("no encryption"), "{err}");
    let url = format!("{plain}?sslmode=require");
    let out = ok(&t.0, &["load", "--into", &url, "tls", "a.csv"]);
    assert!(out.contains("loaded 2 rows"), "{out}");
    assert_eq!(pg.psql("SELECT count(*) FROM tls").trim(), "2");
}

/// Runs `sluice` and waits for it at most `limit`: a load that hangs is
/// killed and fails the test (a guard against a deadlock, not a timing).
pub(crate) fn run_guarded(dir: &Path, args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .current_dir(dir)
        .env_remove("PGPASSWORD")
        .env_remove("MYSQL_PWD")
        .env_remove("SLUICE_FAULT")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!(
                "sluice {args:?} hung: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// A keyed file whose key 5 comes again in its last line, in blocks small
/// enough to spread over every connection.
pub(crate) fn write_late_duplicate(t: &Tmp) -> u64 {
    let mut text = String::from("id,v\n");
    for i in 0..30_000 {
        text.push_str(&format!("{i},{}\n", i % 7));
    }
    text.push_str("5,dup\n");
    std::fs::write(t.0.join("late.csv"), text).unwrap();
    30_002
}

#[test]
fn a_duplicate_key_across_blocks_fails_the_load_instead_of_hanging() {
    let Some(pg) = Pg::start("a_duplicate_key_across_blocks_fails_the_load_instead_of_hanging")
    else {
        return;
    };
    let t = Tmp::new();
    let line = write_late_duplicate(&t);
    let url = pg.url();
    pg.psql("CREATE TABLE late (id bigint PRIMARY KEY, v text)");
    let o = run_guarded(
        &t.0,
        &[
            "load",
            "--into",
            &url,
            "--connections",
            "3",
            "--block-size",
            "16KiB",
            "late",
            "late.csv",
        ],
        Duration::from_secs(120),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("late.csv:{line}")), "{err}");
    assert!(err.contains("Key (id)=(5) already exists"), "{err}");
    assert_eq!(pg.psql("SELECT count(*) FROM late").trim(), "0");
    // A unique index on two columns: one connection, said in the summary.
    pg.psql("CREATE TABLE pairs (id bigint, v text, UNIQUE (id, v))");
    let out = ok(
        &t.0,
        &[
            "load",
            "--into",
            &url,
            "--connections",
            "3",
            "pairs",
            "late.csv",
        ],
    );
    assert!(out.contains("over 1 connection"), "{out}");
    assert!(out.contains("unique index on several columns"), "{out}");
    assert_eq!(pg.psql("SELECT count(*) FROM pairs").trim(), "30001");
}

/// `--match-by-name` into a table with DEFAULTs: the columns no file has
/// get the server's defaults (as PostgreSQL's COPY with a column list
/// gives them), not NULL; a column some files have and others lack is
/// refused.
#[test]
fn match_by_name_leaves_the_servers_defaults_to_the_server() {
    let Some(pg) = Pg::start("match_by_name_leaves_the_servers_defaults_to_the_server") else {
        return;
    };
    pg.psql("CREATE TABLE d (id bigint, status text DEFAULT 'new', n int DEFAULT 7, name text)");
    let t = Tmp::new();
    t.write("a.csv", b"name,id\nada,1\nbob,2\n");
    let url = pg.url();
    ok(
        &t.0,
        &[
            "load",
            "-q",
            "--into",
            &url,
            "--match-by-name",
            "d",
            "a.csv",
        ],
    );
    assert_eq!(
        pg.psql("SELECT id, status, n, name FROM d ORDER BY id")
            .trim(),
        "1|new|7|ada\n2|new|7|bob"
    );
    // One file has `status`, another lacks it: which rows get the
    // default is not one COPY's to say.
    t.write("b.csv", b"id,status\n3,old\n");
    t.write("c.csv", b"id\n4\n");
    let e = fails(
        &t.0,
        &[
            "load",
            "--into",
            &url,
            "--match-by-name",
            "d",
            "b.csv",
            "c.csv",
        ],
    );
    assert!(e.contains("column status has a DEFAULT"), "{e}");
}

#[test]
fn a_table_may_name_its_schema_and_instants_load_as_timestamptz() {
    let Some(pg) = Pg::start("a_table_may_name_its_schema_and_instants_load_as_timestamptz") else {
        return;
    };
    pg.psql("CREATE SCHEMA s");
    let t = Tmp::new();
    t.write(
        "a.csv",
        b"id,at\n1,2024-01-31T23:30:00Z\n2,2024-02-01 01:15:00+02:00\n",
    );
    t.write("b.csv", b"id,at\n3,2024-02-01 10:00:00-05\n");
    let url = pg.url();
    for file in ["a.csv", "b.csv"] {
        ok(&t.0, &["load", "-q", "--into", &url, "s.ev", file]);
    }
    assert_eq!(
        pg.psql(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 's.ev'::regclass AND attname = 'at'"
        )
        .trim(),
        "timestamp with time zone"
    );
    assert_eq!(
        pg.psql("SELECT id, at AT TIME ZONE 'UTC' FROM s.ev ORDER BY id")
            .trim(),
        "1|2024-01-31 23:30:00\n2|2024-01-31 23:15:00\n3|2024-02-01 15:00:00"
    );
    // Nothing went to a table of that name in the search path.
    assert_eq!(
        pg.psql(
            "SELECT count(*) FROM pg_tables WHERE tablename IN ('ev', 's.ev') AND schemaname <> 's'"
        )
        .trim(),
        "0"
    );
    // A dotted name in quotes is one table; three parts are refused.
    ok(&t.0, &["load", "-q", "--into", &url, "\"my.ev\"", "a.csv"]);
    assert_eq!(pg.psql("SELECT count(*) FROM \"my.ev\"").trim(), "2");
    let e = fails(&t.0, &["load", "--into", &url, "a.b.c", "a.csv"]);
    assert!(e.contains("more than a schema and a table"), "{e}");
}

#[test]
fn times_and_intervals_load_as_postgresql_time_and_interval() {
    let Some(pg) = Pg::start("times_and_intervals_load_as_postgresql_time_and_interval") else {
        return;
    };
    let t = Tmp::new();
    t.write(
        "t.csv",
        b"id,opens,open_for\n1,09:30:00,1 year 2 mons 3 days 04:05:06.5\n2,23:59:59.999999,-1 days +02:00:00\n3,24:00:00,-00:00:00.000001\n4,,\n5,00:00:00,30 days\n",
    );
    ok(
        &t.0,
        &[
            "load",
            "-q",
            "--into",
            &pg.url(),
            "--types",
            "open_for=INTERVAL",
            "shops",
            "t.csv",
        ],
    );
    assert_eq!(
        pg.psql(
            "SELECT string_agg(format_type(atttypid, atttypmod), ',' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'shops'::regclass AND attnum > 1"
        )
        .trim(),
        "time without time zone,interval"
    );
    assert_eq!(
        pg.psql("SELECT id, open_for FROM shops ORDER BY id").trim(),
        "1|1 year 2 mons 3 days 04:05:06.5\n2|-1 days +02:00:00\n3|-00:00:00.000001\n4|<null>\n5|30 days"
    );
    assert_eq!(
        pg.psql("SELECT id, opens FROM shops ORDER BY id").trim(),
        "1|09:30:00\n2|23:59:59.999999\n3|24:00:00\n4|<null>\n5|00:00:00"
    );
}

/// Named time zones (`SET TimeZone = 'Europe/Berlin'`): sluice's offset
/// of each instant, and its reading of each local time (those daylight
/// saving time skips or repeats included), are PostgreSQL's, over 45
/// years of zones with rules of every kind (half-hour DST, a zone that
/// crossed the date line, a zone whose DST was suspended for Ramadan).
#[test]
fn named_time_zones_agree_with_postgresql() {
    use sluice::zone::Zone;
    let Some(pg) = Pg::start("named_time_zones_agree_with_postgresql") else {
        return;
    };
    let zones = [
        "Europe/Berlin",
        "America/New_York",
        "Australia/Lord_Howe",
        "Asia/Kolkata",
        "America/Sao_Paulo",
        "Pacific/Apia",
        "Europe/Moscow",
        "Africa/Casablanca",
    ];
    let mut checked = 0;
    for name in zones {
        let zone = match sluice::zone::named(name) {
            Ok(z) => Zone::Named(z),
            Err(e) => panic!("{name}: {e}"),
        };
        // Local times every 211 minutes: as PostgreSQL reads each.
        let local = pg.psql(&format!(
            "SET TimeZone = '{name}'; SELECT g::text || '|' || CAST(CAST(g AS text) AS timestamptz)::text \
             FROM generate_series(timestamp '1990-01-01', timestamp '2035-01-01', interval '211 minutes') g"
        ));
        for line in local.lines().filter(|l| l.contains('|')) {
            let (g, want) = line.split_once('|').unwrap();
            let l = sluice::parse::value::parse_timestamp_sql(g.as_bytes()).unwrap();
            let utc = zone.to_utc(l);
            let got = sluice::batch::format_timestamptz(utc, zone.utc_offset(utc));
            assert_eq!(got, want, "{name}: local time {g}");
            checked += 1;
        }
        // Instants every 211 minutes: each shown with its offset.
        let instants = pg.psql(&format!(
            "SET TimeZone = '{name}'; SELECT (extract(epoch FROM g) * 1000000)::bigint || '|' || g::text \
             FROM generate_series(timestamptz '1990-01-01 00:00Z', timestamptz '2035-01-01 00:00Z', interval '211 minutes') g"
        ));
        for line in instants.lines().filter(|l| l.contains('|')) {
            let (us, want) = line.split_once('|').unwrap();
            let us: i64 = us.parse().unwrap();
            let got = sluice::batch::format_timestamptz(us, zone.utc_offset(us));
            assert_eq!(got, want, "{name}: instant {us}");
            checked += 1;
        }
    }
    assert!(checked > 8 * 2 * 100_000, "{checked}");
}

impl Pg {
    /// The rows of `sql` as `psql -At` prints them (fields split by the
    /// unit separator, NULL as `<null>`), or its error.
    fn try_psql(&self, sql: &str) -> Result<String, String> {
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-At", "-P", "null=<null>", "-F", "\u{1f}"])
            .args(["-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-U", "postgres"])
            .args(["-p", &self.port.to_string(), "-d", "postgres", "-c", sql])
            .env("PGPASSWORD", PASSWORD)
            .output()
            .unwrap();
        if out.status.success() {
            Ok(String::from_utf8(out.stdout).unwrap())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }
}

/// A small deterministic generator (xorshift).
struct Gen(u64);

impl Gen {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
    fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        v[self.below(v.len() as u64) as usize]
    }
}

/// A random text expression (PostgreSQL's and sluice's types agree).
fn text_expr(g: &mut Gen, depth: u32) -> String {
    let small = |g: &mut Gen| format!("{}", g.below(9) as i64 - 3);
    if depth == 0 || g.below(4) == 0 {
        return g
            .pick(&["s", "s", "'héllo wörld'", "''", "'a-b--c'", "upper(s)"])
            .to_string();
    }
    let t = |g: &mut Gen| text_expr(g, depth - 1);
    match g.below(17) {
        0 => format!("left({}, {})", t(g), small(g)),
        1 => format!("right({}, {})", t(g), small(g)),
        2 => format!(
            "lpad({}, {}, {})",
            t(g),
            g.below(12),
            g.pick(&["'xy'", "''", "'é'"])
        ),
        3 => format!("rpad({}, {})", t(g), g.below(12)),
        4 => format!(
            "replace({}, {}, {})",
            t(g),
            g.pick(&["'a'", "'-'", "''", "'ö'"]),
            g.pick(&["'Z'", "''", "'--'"])
        ),
        5 => format!(
            "split_part({}, {}, {})",
            t(g),
            g.pick(&["'-'", "' '", "''", "'--'"]),
            g.pick(&["1", "2", "3", "-1", "-2", "5"])
        ),
        6 => format!("initcap({})", t(g)),
        7 => format!("repeat({}, {})", t(g), g.below(4)),
        8 => format!("reverse({})", t(g)),
        9 => format!(
            "btrim({}, {})",
            t(g),
            g.pick(&["'a'", "'ah'", "' '", "'-'"])
        ),
        10 => format!("ltrim({})", t(g)),
        11 => format!("rtrim({}, 'c')", t(g)),
        12 => format!("({} || {})", t(g), t(g)),
        13 => format!("concat({}, a, NULL, {})", t(g), t(g)),
        14 => format!("substr({}, {}, {})", t(g), g.below(5), g.below(5)),
        15 => format!("trim(BOTH 'a' FROM {})", t(g)),
        _ => format!(
            "CASE WHEN starts_with({}, 'a') THEN 'yes' ELSE {} END",
            t(g),
            t(g)
        ),
    }
}

/// A random BIGINT expression.
fn int_expr(g: &mut Gen) -> String {
    match g.below(6) {
        0 => format!(
            "strpos({}, {})",
            text_expr(g, 1),
            g.pick(&["'a'", "'ö'", "''", "'-'"])
        ),
        1 => format!("mod(a, {})", g.pick(&["3", "-7", "1"])),
        2 => format!("(a % {})", g.pick(&["4", "-2"])),
        3 => format!("greatest(a, {}, NULL)", g.below(5) as i64 - 2),
        4 => "least(a, id)".to_string(),
        _ => format!("nullif(a, {})", g.below(3)),
    }
}

/// A random DECIMAL expression (scales that agree: a DECIMAL keeps its
/// column's scale in sluice, its value's in PostgreSQL).
fn dec_expr(g: &mut Gen) -> String {
    match g.below(8) {
        0 => format!(
            "round(d, {})",
            g.pick(&["0", "1", "2", "3", "4", "-1", "-2"])
        ),
        1 => format!("trunc(d, {})", g.pick(&["0", "1", "2", "-1"])),
        2 => "floor(d)".into(),
        3 => "ceil(d)".into(),
        4 => format!("mod(d, {})", g.pick(&["0.700", "2.000", "-1.250"])),
        5 => format!("greatest(d, {})", g.pick(&["0.000", "-1.500", "2.250"])),
        6 => format!("nullif(d, {})", g.pick(&["0.000", "1.500"])),
        _ => format!("round(d * 2, {})", g.pick(&["0", "2"])),
    }
}

/// A random DOUBLE expression.
fn dbl_expr(g: &mut Gen) -> String {
    match g.below(10) {
        0 => "round(f)".into(),
        1 => "trunc(f)".into(),
        2 => "floor(f)".into(),
        3 => "ceil(f)".into(),
        4 => "sign(f)".into(),
        5 => "sqrt(abs(f))".into(),
        6 => "power(f, 2)".into(),
        7 => "ln(abs(f) + 1)".into(),
        8 => "exp(f / 100)".into(),
        _ => format!("CASE WHEN f > 0 THEN log(f) ELSE {} END", g.below(3)),
    }
}

/// Random calls of the scalar functions over random rows, in sluice and
/// in PostgreSQL: the same values (as text) and the same queries refused.
#[test]
fn functions_agree_with_postgresql() {
    let Some(pg) = Pg::start("functions_agree_with_postgresql") else {
        return;
    };
    let dir = Tmp::new();
    // Another seed: FUNCTIONS_SEED=n (a failure prints the query).
    let seed = std::env::var("FUNCTIONS_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(0x9e37_79b9_7f4a_7c15);
    let mut g = Gen(seed | 1);
    let texts = [
        "hello world",
        "a-b--c",
        "",
        "ÄÖü straße",
        "x",
        "  padded  ",
        "aaa",
        "ab ab",
        "Ünïcødé-😀",
        "a",
        "c-",
        "-a-",
    ];
    let mut csv = String::from("id,a,s,d,f\n");
    let mut values = Vec::new();
    for id in 1..=240 {
        let a = g.below(41) as i64 - 20;
        let null_s = g.below(9) == 0;
        let s = g.pick(&texts);
        let d = (g.below(40_001) as i64 - 20_000) as f64 / 1000.0;
        // Halves and quarters (round's ties), small and negative values.
        let f = (g.below(4_001) as i64 - 2_000) as f64 / 4.0;
        csv.push_str(&format!(
            "{id},{a},{},{d:.3},{f}\n",
            if null_s {
                String::new()
            } else {
                format!("\"{s}\"")
            }
        ));
        values.push(format!(
            "({id}, {a}, {}, {d:.3}, {f})",
            if null_s {
                "NULL".into()
            } else {
                format!("'{s}'")
            }
        ));
    }
    std::fs::write(dir.0.join("t.csv"), csv).unwrap();
    ok(
        &dir.0,
        &[
            "load",
            "--schema",
            "id INT, a BIGINT, s TEXT, d DECIMAL(10,3), f DOUBLE",
            "t",
            "t.csv",
        ],
    );
    pg.try_psql(&format!(
        "CREATE TABLE t (id INT, a BIGINT, s TEXT, d DECIMAL(10,3), f DOUBLE PRECISION); \
         INSERT INTO t VALUES {}",
        values.join(", ")
    ))
    .unwrap();
    // sluice's CSV of (id, value): NULL is an empty field, '' is "".
    let sluice_rows = |out: &str| -> Vec<(String, Option<String>)> {
        out.lines()
            .skip(1)
            .map(|l| {
                let (id, v) = l.split_once(',').unwrap();
                let v = if v.is_empty() {
                    None
                } else if let Some(q) = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
                    Some(q.replace("\"\"", "\""))
                } else {
                    Some(v.to_string())
                };
                (id.to_string(), v)
            })
            .collect()
    };
    let pg_rows = |out: &str| -> Vec<(String, Option<String>)> {
        out.lines()
            .map(|l| {
                let (id, v) = l.split_once('\u{1f}').unwrap();
                (id.to_string(), (v != "<null>").then(|| v.to_string()))
            })
            .collect()
    };
    let (mut same, mut refused) = (0, 0);
    for i in 0..160 {
        let e = match i % 4 {
            0 | 1 => text_expr(&mut g, 3),
            2 => match g.below(2) {
                0 => int_expr(&mut g),
                _ => dec_expr(&mut g),
            },
            _ => dbl_expr(&mut g),
        };
        let sql = format!("SELECT id, CAST({e} AS TEXT) FROM t ORDER BY id");
        let ours = run(&dir.0, &["query", "--format", "csv", &sql], &[]);
        let theirs = pg.try_psql(&sql);
        match (ours.status.success(), theirs) {
            (true, Ok(p)) => {
                let a = sluice_rows(&String::from_utf8_lossy(&ours.stdout));
                let b = pg_rows(&p);
                assert_eq!(a.len(), b.len(), "{sql}");
                for (x, y) in a.iter().zip(&b) {
                    assert_eq!(x, y, "{sql}");
                }
                same += 1;
            }
            (false, Err(_)) => refused += 1,
            (true, Err(e)) => panic!("{sql}: PostgreSQL refuses it ({e}), sluice answers"),
            (false, Ok(_)) => panic!(
                "{sql}: sluice refuses it ({}), PostgreSQL answers",
                String::from_utf8_lossy(&ours.stderr)
            ),
        }
    }
    eprintln!("functions_agree_with_postgresql: {same} queries equal, {refused} refused by both");
    assert!(same > 120, "{same} equal, {refused} refused");
}
