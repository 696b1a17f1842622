//! `sluice bench into`: the ingest benchmark's three-integer CSV loaded
//! into an unindexed PostgreSQL table by `sluice load --into` at several
//! connection counts, beside `psql -c "\copy …"` (one stream of CSV) and
//! pgloader when installed; a table of medians and rates. The server is a
//! private one this scenario starts (`initdb` under `--dir`), or the one
//! `--url` names.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::common::{ints_file, median, parse_threads, sluice_exe};

/// A PostgreSQL server for the scenario: started here (and stopped when
/// dropped), or given.
struct Server {
    url: String,
    /// `pg_ctl` and the data directory of a server started here.
    started: Option<(PathBuf, PathBuf, bool)>,
}

/// Debian's newest `/usr/lib/postgresql/N/bin`, else `pg_config --bindir`.
fn pg_bin() -> Option<PathBuf> {
    let mut v: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, b): &(u32, PathBuf)| b.join("initdb").exists())
        .collect();
    v.sort();
    v.pop().map(|(_, b)| b).or_else(|| {
        let out = Command::new("pg_config").arg("--bindir").output().ok()?;
        let b = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
        b.join("initdb").exists().then_some(b)
    })
}

/// A server program run as the `postgres` user when this is root
/// (initdb and postgres refuse root).
fn as_server(root: bool, program: &Path) -> Command {
    if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

impl Server {
    fn start(dir: &Path, quiet: bool) -> Result<Server> {
        let bin = pg_bin().context(
            "no PostgreSQL server programs found (apt-get install postgresql), and no --url given",
        )?;
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
        let base = std::path::absolute(dir.join("pg-into"))?;
        let data = base.join("data");
        std::fs::create_dir_all(&base)?;
        if root {
            Command::new("chown")
                .args(["-R", "postgres:"])
                .arg(&base)
                .status()?;
        }
        if !data.join("PG_VERSION").exists() {
            if !quiet {
                eprintln!("initdb {} ...", data.display());
            }
            let ok = as_server(root, &bin.join("initdb"))
                .args(["-A", "trust", "-U", "postgres", "-D"])
                .arg(&data)
                .stdout(Stdio::null())
                .status()?
                .success();
            if !ok {
                bail!("initdb {} failed", data.display());
            }
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        // Settings of a server meant for bulk loads; durable (fsync on).
        let opts = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c shared_buffers=1GB -c max_wal_size=16GB -c checkpoint_timeout=1h -c max_connections=50",
            base.display()
        );
        let ok = as_server(root, &bin.join("pg_ctl"))
            .arg("-D")
            .arg(&data)
            .args(["-o", &opts, "-l"])
            .arg(base.join("log"))
            .args(["-w", "start"])
            .stdout(Stdio::null())
            .status()?
            .success();
        if !ok {
            bail!("pg_ctl start failed: see {}", base.join("log").display());
        }
        Ok(Server {
            url: format!("postgresql://postgres@127.0.0.1:{port}/postgres"),
            started: Some((bin.join("pg_ctl"), data, root)),
        })
    }

    /// Runs SQL through psql; returns its unaligned output.
    fn psql(&self, sql: &str) -> Result<String> {
        let out = Command::new("psql")
            .args([
                "-X",
                "-At",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                &self.url,
                "-c",
                sql,
            ])
            .output()
            .context("running psql (apt-get install postgresql-client)")?;
        if !out.status.success() {
            bail!("psql {sql}: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    fn version(&self) -> String {
        self.psql("SHOW server_version").unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some((pg_ctl, data, root)) = &self.started {
            let _ = as_server(*root, pg_ctl)
                .arg("-D")
                .arg(data)
                .args(["-m", "fast", "-w", "stop"])
                .stdout(Stdio::null())
                .status();
        }
    }
}

/// One way of loading, and its times.
struct Row {
    engine: String,
    connections: usize,
    seconds: Vec<f64>,
}

pub fn run(
    size: &str,
    connections: &str,
    runs: usize,
    dir: &Path,
    url: Option<String>,
    (no_peers, no_pgloader): (bool, bool),
    quiet: bool,
) -> Result<()> {
    let counts = parse_threads(connections)?;
    let csv = std::path::absolute(ints_file(size, dir, quiet)?)?;
    let bytes = std::fs::metadata(&csv)?.len();
    let server = match url {
        Some(url) => Server { url, started: None },
        None => Server::start(dir, quiet)?,
    };
    let exe = sluice_exe()?;
    let pgloader = !no_peers
        && !no_pgloader
        && Command::new("pgloader")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
    let mut rows: Vec<Row> = Vec::new();
    if !no_peers {
        rows.push(Row {
            engine: "psql \\copy".into(),
            connections: 1,
            seconds: vec![],
        });
        if pgloader {
            rows.push(Row {
                engine: "pgloader".into(),
                connections: 1,
                seconds: vec![],
            });
        } else if !quiet && !no_pgloader {
            eprintln!("peer: pgloader not found (apt-get install pgloader) — not compared");
        }
    }
    for &c in &counts {
        rows.push(Row {
            engine: "sluice".into(),
            connections: c,
            seconds: vec![],
        });
    }
    let mut expected: Option<String> = None;
    for run in 0..runs {
        for row in rows.iter_mut() {
            server.psql(
                "DROP TABLE IF EXISTS ints; CREATE TABLE ints (a integer, b integer, c integer);
                 DO $$ BEGIN IF to_regclass('sluice_load_parts') IS NOT NULL THEN
                   DELETE FROM sluice_load_parts WHERE target = 'ints';
                   DELETE FROM sluice_load_journal WHERE target = 'ints'; END IF; END $$;
                 CHECKPOINT",
            )?;
            let mut cmd = match row.engine.as_str() {
                "sluice" => {
                    let mut c = Command::new(&exe);
                    c.args([
                        "-q",
                        "load",
                        "--into",
                        &server.url,
                        "--no-header",
                        "--delimiter",
                        ",",
                    ])
                    .args(["--connections", &row.connections.to_string(), "ints"])
                    .arg(&csv);
                    c
                }
                "pgloader" => {
                    let mut c = Command::new("pgloader");
                    c.args([
                        "--type", "csv", "--field", "a", "--field", "b", "--field", "c",
                    ])
                    .args([
                        "--with",
                        "fields terminated by ','",
                        "--with",
                        "fields not enclosed",
                    ])
                    .arg(&csv)
                    .arg(format!("{}?tablename=ints", server.url));
                    c
                }
                _ => {
                    let mut c = Command::new("psql");
                    c.args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", &server.url, "-c"])
                        .arg(format!("\\copy ints FROM '{}' (FORMAT csv)", csv.display()));
                    c
                }
            };
            let start = Instant::now();
            let out = cmd
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .output()
                .with_context(|| format!("running {}", row.engine))?;
            let s = start.elapsed().as_secs_f64();
            if !out.status.success() {
                bail!(
                    "{} failed: {}",
                    row.engine,
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            // Every way must load the same rows.
            let got = server.psql("SELECT count(*), sum(a::int8), sum(c::int8) FROM ints")?;
            match &expected {
                None => expected = Some(got),
                Some(e) if *e != got => {
                    bail!("{} loaded {got} (count, sums), others {e}", row.engine)
                }
                _ => {}
            }
            if !quiet {
                eprintln!(
                    "run {}/{runs}: {:<11} connections={:<2} {s:.3} s",
                    run + 1,
                    row.engine,
                    row.connections
                );
            }
            row.seconds.push(s);
        }
    }
    for r in &rows {
        let series = match r.engine.as_str() {
            "sluice" => "sluice --into",
            peer => peer,
        };
        let case = serde_json::json!({"connections": r.connections, "bytes": bytes});
        super::record::runs(series, case, "seconds", "s", &r.seconds);
    }
    let n: f64 = expected
        .as_deref()
        .and_then(|e| e.split('|').next()?.parse().ok())
        .unwrap_or(0.0);
    let copy = rows
        .iter()
        .find(|r| r.engine.starts_with("psql"))
        .map(|r| median(&r.seconds));
    println!(
        "into: {} ({bytes} bytes, {n} rows) into an unindexed table of PostgreSQL {}, {runs} runs each, {} usable cores",
        csv.display(),
        server.version(),
        sluice::exec::usable_cores()
    );
    println!(
        "{:<11} {:>11} {:>9} {:>8} {:>11} {:>20} {:>9}",
        "engine", "connections", "median_s", "MB/s", "rows/s", "rows/s/connection", "vs_copy"
    );
    for r in &rows {
        let m = median(&r.seconds);
        println!(
            "{:<11} {:>11} {:>9.3} {:>8.1} {:>11.0} {:>20.0} {:>9}",
            r.engine,
            r.connections,
            m,
            bytes as f64 / 1e6 / m,
            n / m,
            n / m / r.connections as f64,
            copy.map(|c| format!("{:.2}x", c / m))
                .unwrap_or_else(|| "-".into())
        );
    }
    println!("vs_copy: psql \\copy median / this median (>1 means faster than \\copy)");
    Ok(())
}
