//! `sluice load --into mariadb://…` against real MariaDB servers: each
//! test starts a private one (`mariadb-install-db` in a temporary
//! directory, a loopback port, a user with a password) and checks what
//! the server holds through the `mariadb` client. Without MariaDB's
//! programs the tests are skipped with a printed reason, except under
//! CI=true, where that fails.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use crate::Tmp;
use crate::into_pg::{assert_exactly_once, fails, is_root, load_args, ok, run, write_files};

const PASSWORD: &str = "sluice-test-pw";

/// A private MariaDB server, killed when dropped.
struct My {
    dir: Tmp,
    port: u16,
    server: Option<Child>,
    local_infile: bool,
    /// Serves TLS with a self-signed certificate.
    tls: bool,
}

fn programs() -> Option<(PathBuf, PathBuf)> {
    let find = |name: &str| {
        ["/usr/sbin", "/usr/bin", "/usr/local/bin", "/usr/local/sbin"]
            .iter()
            .map(|d| Path::new(d).join(name))
            .find(|p| p.exists())
    };
    Some((find("mariadb-install-db")?, find("mariadbd")?))
}

impl My {
    fn start(test: &str, local_infile: bool) -> Option<My> {
        My::start_with(test, local_infile, false)
    }

    fn start_with(test: &str, local_infile: bool, tls: bool) -> Option<My> {
        let Some((install, _)) = programs() else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{test}: MariaDB's server programs were not found, and CI=true requires them (apt-get install mariadb-server)"
            );
            eprintln!(
                "{test}: skipped: MariaDB's server programs were not found (apt-get install mariadb-server)"
            );
            return None;
        };
        let dir = Tmp::new();
        // A temporary directory of its own: bootstraps run side by side in
        // one /tmp collide on their temporary tables' names ("Unknown
        // table 'mysql.tmp_user_sys'", about one in three of 12 at once).
        std::fs::create_dir(dir.0.join("tmp")).unwrap();
        if is_root() {
            let ok = Command::new("chown")
                .args(["-R", "mysql:", dir.0.to_str().unwrap()])
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "{test}: cannot chown the server's directory to mysql");
        }
        let data = dir.0.join("data");
        let mut c = Command::new(install);
        c.args(["--no-defaults", "--auth-root-authentication-method=normal"])
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", dir.0.join("tmp").display()))
            .arg("--skip-test-db");
        if is_root() {
            c.arg("--user=mysql");
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{test}: mariadb-install-db failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut my = My {
            dir,
            port,
            server: None,
            local_infile,
            tls,
        };
        if tls {
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
                .current_dir(&my.dir.0)
                .output()
                .expect("openssl is needed for the TLS test");
            assert!(
                out.status.success(),
                "openssl: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            if is_root() {
                for f in ["server.key", "server.crt"] {
                    let _ = Command::new("chown")
                        .arg("mysql:")
                        .arg(my.dir.0.join(f))
                        .status();
                }
            }
        }
        my.start_server();
        my.root(&format!(
            "CREATE DATABASE shop; CREATE USER 'sl'@'%' IDENTIFIED BY '{PASSWORD}'; GRANT ALL ON *.* TO 'sl'@'%'"
        ));
        Some(my)
    }

    fn socket(&self) -> PathBuf {
        self.dir.0.join("sock")
    }

    fn start_server(&mut self) {
        let (_, mariadbd) = programs().unwrap();
        let mut c = Command::new(mariadbd);
        c.arg("--no-defaults")
            .arg(format!("--datadir={}", self.dir.0.join("data").display()))
            .arg(format!("--tmpdir={}", self.dir.0.join("tmp").display()))
            .arg(format!("--socket={}", self.socket().display()))
            .arg(format!("--port={}", self.port))
            .args(["--bind-address=127.0.0.1", "--skip-name-resolve"])
            .arg(format!("--local-infile={}", u8::from(self.local_infile)))
            .args([
                "--innodb-buffer-pool-size=64M",
                "--innodb-log-file-size=48M",
            ])
            .arg(format!(
                "--log-error={}",
                self.dir.0.join("err.log").display()
            ))
            .arg(format!("--pid-file={}", self.dir.0.join("pid").display()))
            .args(if self.tls {
                vec![
                    format!("--ssl-cert={}", self.dir.0.join("server.crt").display()),
                    format!("--ssl-key={}", self.dir.0.join("server.key").display()),
                ]
            } else {
                vec![]
            })
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if is_root() {
            c.arg("--user=mysql");
        }
        self.server = Some(c.spawn().unwrap());
        for _ in 0..300 {
            let up = Command::new("mariadb")
                .args(["--no-defaults", "-u", "root", "-e", "SELECT 1"])
                .arg(format!("--socket={}", self.socket().display()))
                .output()
                .is_ok_and(|o| o.status.success());
            if up {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "mariadbd did not start: {}",
            std::fs::read_to_string(self.dir.0.join("err.log")).unwrap_or_default()
        );
    }

    /// Kills the server (SIGKILL), as a crash would.
    fn crash(&mut self) {
        if let Some(mut c) = self.server.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn url(&self) -> String {
        format!("mariadb://sl:{PASSWORD}@127.0.0.1:{}/shop", self.port)
    }

    fn root(&self, sql: &str) -> Output {
        let out = Command::new("mariadb")
            .args(["--no-defaults", "-u", "root", "-N", "-B", "-e", sql])
            .arg(format!("--socket={}", self.socket().display()))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Rows of a query in database `shop`: fields joined by `|`.
    fn query(&self, sql: &str) -> String {
        let out = self.root(&format!(
            "USE shop; {}",
            sql.replace("sum(rows)", "sum(`rows`)")
        ));
        String::from_utf8(out.stdout).unwrap().replace('\t', "|")
    }
}

impl Drop for My {
    fn drop(&mut self) {
        self.crash();
    }
}

#[test]
fn mariadb_every_type_and_null_round_trips() {
    let Some(my) = My::start("mariadb_every_type_and_null_round_trips", true) else {
        return;
    };
    let t = Tmp::new();
    std::fs::write(
        t.0.join("all.csv"),
        "id,i,d,f,b,day,ts,s,tm\n\
         1,-2147483648,-123456789.125,1.5,true,1970-01-01,2000-01-01 00:00:00,plain,00:00:00\n\
         2,2147483647,0.001,-0.25,false,1999-12-31,1999-12-31 23:59:59.999999,\"tab\there, back\\\\slash\",24:00:00\n\
         9223372036854775807,,,,,,,,\n\
         -9223372036854775808,7,999999999.999,1e300,true,2262-04-11,1900-01-01 12:00:00.5,ünïcödé ☃,23:59:59.000001\n",
    )
    .unwrap();
    let url = my.url();
    let types = "id BIGINT, i INT, d DECIMAL(12,3), f DOUBLE, b BOOLEAN, day DATE, ts TIMESTAMP, s TEXT, tm TIME";
    let out = ok(
        &t.0,
        &[
            "load",
            "--into",
            &url,
            "--schema",
            types,
            "--header",
            "--delimiter",
            ",",
            "typed",
            "all.csv",
        ],
    );
    assert!(out.contains("loaded 4 rows"), "{out}");
    let got = my.query("SELECT id, i, d, f, b, day, ts, tm FROM typed ORDER BY id");
    assert_eq!(
        got,
        "-9223372036854775808|7|999999999.999|1e300|1|2262-04-11|1900-01-01 12:00:00.500000|23:59:59.000001\n\
         1|-2147483648|-123456789.125|1.5|1|1970-01-01|2000-01-01 00:00:00.000000|00:00:00.000000\n\
         2|2147483647|0.001|-0.25|0|1999-12-31|1999-12-31 23:59:59.999999|24:00:00.000000\n\
         9223372036854775807|NULL|NULL|NULL|NULL|NULL|NULL|NULL\n"
    );
    // Text byte for byte: tabs, backslashes, UTF-8, NULL.
    let hex = my.query("SELECT id, HEX(s) FROM typed ORDER BY id");
    let h = |s: &str| s.bytes().map(|b| format!("{b:02X}")).collect::<String>();
    assert_eq!(
        hex,
        format!(
            "-9223372036854775808|{}\n1|{}\n2|{}\n9223372036854775807|NULL\n",
            h("ünïcödé ☃"),
            h("plain"),
            h("tab\there, back\\\\slash")
        )
    );
    // The same file again: skipped.
    let out = ok(&t.0, &["load", "--into", &url, "typed", "all.csv"]);
    assert!(
        out.contains("skipped 1 file loaded by earlier commits"),
        "{out}"
    );
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
    assert!(err.contains("column i is int on the server (INT)"), "{err}");
}

#[test]
fn mariadb_refuses_an_interval_before_creating_anything() {
    let Some(my) = My::start("mariadb_refuses_an_interval_before_creating_anything", true) else {
        return;
    };
    let t = Tmp::new();
    std::fs::write(t.0.join("s.csv"), "id,iv\n1,1 day\n").unwrap();
    let err = fails(
        &t.0,
        &[
            "load",
            "--into",
            &my.url(),
            "--types",
            "iv=INTERVAL",
            "spans",
            "s.csv",
        ],
    );
    assert!(
        err.contains("column iv: MariaDB has no INTERVAL type") && err.contains("--types iv=TEXT"),
        "{err}"
    );
    assert_eq!(
        my.query("SELECT count(*) FROM information_schema.tables WHERE table_name = 'spans'"),
        "0\n"
    );
}

#[test]
fn mariadb_a_crash_between_xa_commits_is_settled_by_the_next_run() {
    let Some(my) = My::start(
        "mariadb_a_crash_between_xa_commits_is_settled_by_the_next_run",
        true,
    ) else {
        return;
    };
    let t = Tmp::new();
    let files = write_files(&t, 4, 20_000);
    let url = my.url();
    let args = load_args(&url, "crashy", &files);
    let o = run(&t.0, &args, &[("SLUICE_FAULT", "into-exit-after-parts=4")]);
    assert_eq!(
        o.status.code(),
        Some(137),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Two parts of the second group are left prepared.
    assert_eq!(my.query("XA RECOVER").lines().count(), 2);
    let o = run(&t.0, &args, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("settled 2 prepared transactions"), "{err}");
    assert_eq!(my.query("XA RECOVER"), "");
    assert_exactly_once(|q| my.query(q), "crashy", 4, 20_000);
}

#[test]
fn mariadb_sigkill_at_random_moments_then_the_same_command_loads_every_row_once() {
    let Some(my) = My::start(
        "mariadb_sigkill_at_random_moments_then_the_same_command_loads_every_row_once",
        true,
    ) else {
        return;
    };
    let t = Tmp::new();
    let files = write_files(&t, 10, 10_000);
    let url = my.url();
    // Keyed: each connection's rows are sorted before they are sent.
    my.query("CREATE TABLE killed (id BIGINT PRIMARY KEY, v INT)");
    let args = load_args(&url, "killed", &files);
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
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
        std::thread::sleep(Duration::from_millis(50 + x % 800));
        let _ = child.kill();
        let _ = child.wait();
    }
    ok(&t.0, &args);
    assert_exactly_once(|q| my.query(q), "killed", 10, 10_000);
}

#[test]
fn mariadb_a_server_crash_mid_load_fails_clearly_and_the_rerun_loads_every_row_once() {
    let Some(mut my) = My::start(
        "mariadb_a_server_crash_mid_load_fails_clearly_and_the_rerun_loads_every_row_once",
        true,
    ) else {
        return;
    };
    let t = Tmp::new();
    let files = write_files(&t, 8, 30_000);
    let url = my.url();
    let args = load_args(&url, "restarted", &files);
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .current_dir(&t.0)
        .env_remove("SLUICE_FAULT")
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..600 {
        let n = my.query(
            "SELECT count(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'shop' AND TABLE_NAME = 'sluice_load_parts'",
        );
        if n.trim() == "1"
            && my
                .query("SELECT count(*) FROM sluice_load_parts WHERE target = 'restarted'")
                .trim()
                != "0"
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    my.crash();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    my.start_server();
    if !o.status.success() {
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("MariaDB"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        ok(&t.0, &args);
    }
    assert_exactly_once(|q| my.query(q), "restarted", 8, 30_000);
}

#[test]
fn mariadb_duplicate_keys_load_nothing_and_are_named() {
    let Some(my) = My::start("mariadb_duplicate_keys_load_nothing_and_are_named", true) else {
        return;
    };
    let t = Tmp::new();
    std::fs::write(t.0.join("dup.csv"), "id,v\n1,a\n2,b\n3,c\n2,d\n").unwrap();
    let url = my.url();
    let err = fails(
        &t.0,
        &[
            "load", "--into", &url, "--key", "id", "--index", "after", "after", "dup.csv",
        ],
    );
    assert!(err.contains("Duplicate entry '2'"), "{err}");
    assert!(err.contains("nothing is loaded"), "{err}");
    assert_eq!(
        my.query("SELECT count(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'shop' AND TABLE_NAME = 'after'"),
        "0\n"
    );
    // Into the indexed table: LOAD DATA skips the duplicate with a
    // warning, which fails the load.
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
    assert!(
        err.contains("Duplicate entry '2'") && err.contains("LOAD DATA took"),
        "{err}"
    );
    assert_eq!(
        my.query("SELECT count(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'shop' AND TABLE_NAME = 'first'"),
        "0\n"
    );
    assert_eq!(
        my.query("SELECT count(*) FROM sluice_load_journal WHERE target IN ('after', 'first')"),
        "0\n"
    );
    // The schema given and a TEXT key: the table is made with the key a
    // VARCHAR an index takes, indexed first when asked (both once reached
    // only the key added after the rows, which failed on a LONGTEXT).
    let err = fails(
        &t.0,
        &[
            "load",
            "--into",
            &url,
            "--schema",
            "id TEXT, v TEXT",
            "--key",
            "id",
            "--index-first",
            "first",
            "dup.csv",
        ],
    );
    assert!(
        err.contains("Duplicate entry '2'") && err.contains("LOAD DATA took"),
        "{err}"
    );
    std::fs::write(t.0.join("good.csv"), "id,v\nx,a\ny,b\n").unwrap();
    for (table, first) in [("text_first", true), ("text_after", false)] {
        let mut args = vec![
            "load",
            "--into",
            &url,
            "--schema",
            "id TEXT, v TEXT",
            "--key",
            "id",
        ];
        args.extend(if first {
            ["--index-first"].as_slice()
        } else {
            ["--index", "after"].as_slice()
        });
        args.extend([table, "good.csv"]);
        ok(&t.0, &args);
        let ddl = my.query(&format!(
            "SELECT COLUMN_TYPE, COLUMN_KEY FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'shop' AND TABLE_NAME = '{table}' AND COLUMN_NAME = 'id'"
        ));
        assert_eq!(ddl, "varchar(768)|PRI\n", "{table}");
        assert_eq!(my.query(&format!("SELECT count(*) FROM {table}")), "2\n");
    }
}

/// Keys 0..n in a shuffled order, as `id,v,,` lines (the table's `seq`
/// and `conn` are set by its trigger).
fn write_shuffled(t: &Tmp, name: &str, n: u64) {
    let text: String = std::iter::once("id,v,seq,conn\n".to_string())
        .chain((0..n).map(|i| format!("{},{i},,\n", (i * 7919) % n)))
        .collect();
    std::fs::write(t.0.join(name), text).unwrap();
}

/// A table whose trigger numbers the rows in the order each connection
/// sent them.
fn make_numbered(my: &My, table: &str) {
    my.query(&format!(
        "CREATE TABLE {table} (id BIGINT PRIMARY KEY, v INT, seq INT, conn BIGINT)"
    ));
    my.query(&format!(
        "CREATE TRIGGER {table}_seq BEFORE INSERT ON {table} FOR EACH ROW \
         SET NEW.seq = (@n := COALESCE(@n, 0) + 1), NEW.conn = CONNECTION_ID()"
    ));
}

/// Rows a connection sent after a larger key.
fn inversions(my: &My, table: &str) -> u64 {
    my.query(&format!(
        "SELECT count(*) FROM (SELECT id, LAG(id) OVER (PARTITION BY conn ORDER BY seq) AS p FROM {table}) x WHERE p > id"
    ))
    .trim()
    .parse()
    .unwrap()
}

#[test]
fn mariadb_rows_go_in_key_order_and_keys_are_exact() {
    let Some(my) = My::start("mariadb_rows_go_in_key_order_and_keys_are_exact", true) else {
        return;
    };
    let t = Tmp::new();
    write_shuffled(&t, "shuffled.csv", 3000);
    let url = my.url();
    let load = |table: &str, extra: &[&str]| {
        let mut a = vec![
            "load",
            "--into",
            &url,
            "--connections",
            "2",
            "--block-size",
            "8KiB",
        ];
        a.extend_from_slice(extra);
        a.extend([table, "shuffled.csv"]);
        ok(&t.0, &a)
    };
    // By default, into a table with a one-column key: each connection's
    // rows ascend. In input order they do not (the check can fail).
    make_numbered(&my, "ordered");
    let out = load("ordered", &[]);
    assert!(out.contains("rows sent in key order\n"), "{out}");
    assert_eq!(inversions(&my, "ordered"), 0);
    make_numbered(&my, "input_order");
    let out = load("input_order", &["--index", "first"]);
    assert!(!out.contains("key order"), "{out}");
    assert!(inversions(&my, "input_order") > 100);
    // Little sort memory: several sorted runs, said; every row once.
    make_numbered(&my, "runs");
    let out = load("runs", &["--sort-memory", "32KiB"]);
    assert!(out.contains("sorted runs a connection"), "{out}");
    assert_eq!(
        my.query("SELECT count(*), count(DISTINCT id), sum(id) FROM runs"),
        "3000|3000|4498500\n"
    );
    assert!(inversions(&my, "runs") > 0);
    // A TEXT column of few values across many blocks and a short last
    // one (the workers dictionary-encode such columns elsewhere; pieces to
    // be merged must all be alike).
    let mut text = String::from("id,colour\n");
    for i in 0..3001u64 {
        let c = ["red", "green", "blue"][(i % 3) as usize];
        text.push_str(&format!("{},{c}\n", (i * 7919) % 3001));
    }
    std::fs::write(t.0.join("colours.csv"), text).unwrap();
    let out = ok(
        &t.0,
        &[
            "load",
            "--into",
            &url,
            "--key",
            "id",
            "--block-size",
            "4KiB",
            "colours",
            "colours.csv",
        ],
    );
    assert!(out.contains("rows sent in key order"), "{out}");
    assert_eq!(
        my.query("SELECT colour, count(*) FROM colours GROUP BY colour ORDER BY colour"),
        "blue|1000\ngreen|1000\nred|1001\n"
    );
    assert_eq!(
        my.query("SELECT colour FROM colours WHERE id = 7919 % 3001"),
        "green\n"
    );
    // A new table's TEXT key compares bytes, as sluice's keys do.
    std::fs::write(t.0.join("case.csv"), "k,v\nb,1\nA,2\na,3\na ,4\n").unwrap();
    let out = ok(
        &t.0,
        &["load", "--into", &url, "--key", "k", "cased", "case.csv"],
    );
    assert!(out.contains("loaded 4 rows"), "{out}");
    assert_eq!(
        my.query("SELECT HEX(k) FROM cased ORDER BY k"),
        "41\n61\n6120\n62\n"
    );
    // A row the server warns about is named by its file and line,
    // through the sort.
    my.query("CREATE TABLE narrow (id BIGINT PRIMARY KEY, s VARCHAR(3))");
    let mut text = String::from("id,s\n");
    for i in 0..500u64 {
        let s = if i == 321 { "long" } else { "ok" };
        text.push_str(&format!("{},{s}\n", (i * 7919) % 500));
    }
    std::fs::write(t.0.join("narrow.csv"), text).unwrap();
    let err = fails(
        &t.0,
        &[
            "load",
            "--into",
            &url,
            "--block-size",
            "4KiB",
            "narrow",
            "narrow.csv",
        ],
    );
    assert!(err.contains("narrow.csv:323"), "{err}");
    assert!(
        err.contains("Data too long") || err.contains("truncated"),
        "{err}"
    );
    assert_eq!(my.query("SELECT count(*) FROM narrow"), "0\n");
}

#[test]
fn mariadb_with_local_infile_refused_the_rows_go_as_inserts_and_say_so() {
    let Some(my) = My::start(
        "mariadb_with_local_infile_refused_the_rows_go_as_inserts_and_say_so",
        false,
    ) else {
        return;
    };
    let t = Tmp::new();
    let files = write_files(&t, 3, 2_500);
    let url = my.url();
    let args = load_args(&url, "inserted", &files);
    let out = ok(&t.0, &args);
    assert!(
        out.contains("local_infile off: rows were sent as multi-row INSERTs"),
        "{out}"
    );
    assert_exactly_once(|q| my.query(q), "inserted", 3, 2_500);
    // A duplicate key through INSERT names where its statement started.
    std::fs::write(t.0.join("dup.csv"), "id,v\n1,a\n1,b\n").unwrap();
    let err = fails(
        &t.0,
        &[
            "load",
            "--into",
            &url,
            "--key",
            "id",
            "--index-first",
            "k",
            "dup.csv",
        ],
    );
    assert!(
        err.contains("dup.csv:2") && err.contains("Duplicate entry '1'"),
        "{err}"
    );
}

#[test]
fn mariadb_bad_credentials_are_a_clear_error_and_write_nothing() {
    let Some(my) = My::start(
        "mariadb_bad_credentials_are_a_clear_error_and_write_nothing",
        true,
    ) else {
        return;
    };
    let t = Tmp::new();
    std::fs::write(t.0.join("a.csv"), "id,v\n1,a\n").unwrap();
    let bad = format!("mariadb://sl:wrong@127.0.0.1:{}/shop", my.port);
    let err = fails(&t.0, &["load", "--into", &bad, "creds", "a.csv"]);
    assert!(
        err.contains("Access denied") && err.contains("1045"),
        "{err}"
    );
    assert!(!err.contains("wrong"), "the password is printed: {err}");
    assert_eq!(my.query("SHOW TABLES"), "");
    // From a file, and from MYSQL_PWD.
    let plain = format!("mariadb://sl@127.0.0.1:{}/shop", my.port);
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
        &[("MYSQL_PWD", PASSWORD)],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(my.query("SELECT count(*) FROM creds"), "2\n");
}

#[test]
fn mariadb_a_duplicate_key_across_blocks_fails_the_load_instead_of_hanging() {
    let Some(my) = My::start(
        "mariadb_a_duplicate_key_across_blocks_fails_the_load_instead_of_hanging",
        true,
    ) else {
        return;
    };
    let t = Tmp::new();
    crate::into_pg::write_late_duplicate(&t);
    let url = my.url();
    my.query("CREATE TABLE late (id BIGINT PRIMARY KEY, v LONGTEXT)");
    let o = crate::into_pg::run_guarded(
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
    assert!(err.contains("Duplicate entry '5'"), "{err}");
    assert_eq!(my.query("SELECT count(*) FROM late"), "0\n");
}

#[test]
fn mariadb_sslmode_require_loads_over_tls() {
    let Some(my) = My::start_with("mariadb_sslmode_require_loads_over_tls", true, true) else {
        return;
    };
    my.root(&format!(
        "CREATE USER 'tls'@'%' IDENTIFIED BY '{PASSWORD}' REQUIRE SSL; GRANT ALL ON *.* TO 'tls'@'%'"
    ));
    let t = Tmp::new();
    std::fs::write(t.0.join("a.csv"), "id,v\n1,a\n2,b\n").unwrap();
    let plain = format!("mariadb://tls:{PASSWORD}@127.0.0.1:{}/shop", my.port);
    // The user may only connect over TLS.
    let err = fails(&t.0, &["load", "--into", &plain, "tls", "a.csv"]);
    assert!(err.contains("Access denied"), "{err}");
    let url = format!("{plain}?sslmode=require");
    let out = ok(&t.0, &["load", "--into", &url, "tls", "a.csv"]);
    assert!(out.contains("loaded 2 rows"), "{out}");
    assert_eq!(my.query("SELECT count(*) FROM tls"), "2\n");
}
