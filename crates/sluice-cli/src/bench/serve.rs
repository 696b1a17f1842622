//! `sluice bench serve`: `sluice serve` beside a private PostgreSQL, both
//! driven by pgbench with the same script (a prepared point select by a
//! BIGINT primary key), client counts interleaved; then a mixed run (TPC-H
//! Q1 in a loop while clients do point selects), a connection storm
//! (`pgbench -C`) and the memory of idle connections.
//!
//! PostgreSQL is Debian's: its `initdb` and `pg_ctl` run a cluster in a
//! temporary directory on a loopback port (as the `postgres` user when
//! this runs as root), removed at the end. Without PostgreSQL or pgbench
//! the scenario says so: sluice alone needs pgbench.
//!
//! Before any time is reported, point selects and an aggregate are
//! answered alike by sluice serve, the library and PostgreSQL (through
//! psql), and Q1 by the mixed run's server and the library.

use std::io::{BufRead, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::common::{lineitem_csv, median, percentile, sluice_exe};

/// What one pgbench run measured.
#[derive(Debug, Clone, Copy)]
pub(super) struct Run {
    pub(super) tps: f64,
    p50_ms: f64,
    pub(super) p99_ms: f64,
    pub(super) failed: u64,
    /// The server's CPU per transaction, in µs: the machine's busy CPU
    /// time over the run less pgbench's own, over the transactions (NaN
    /// where /proc cannot say). On a machine where pgbench shares the
    /// cores, this is what compares the servers' costs.
    server_cpu_us: f64,
    /// pgbench's own CPU per transaction, in µs (NaN where /proc cannot
    /// say): what the client costs, on the cores it shares with the server.
    client_cpu_us: f64,
}

/// The options of the scenario.
pub struct Opts<'a> {
    pub rows: u64,
    pub clients: &'a str,
    pub seconds: u64,
    pub runs: usize,
    pub dir: &'a Path,
    pub no_peers: bool,
    pub mixed_clients: usize,
    pub q1_sf: f64,
    pub storm_clients: usize,
    pub idle: usize,
    /// Seconds of the soak (0: none; see `soak`), and the idle
    /// connections it holds.
    pub soak: u64,
    pub soak_hold: usize,
}

pub fn run(o: Opts, quiet: bool) -> Result<()> {
    if o.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let clients: Vec<usize> = o
        .clients
        .split(',')
        .map(|c| {
            c.trim()
                .parse()
                .with_context(|| format!("--clients: {c:?} is not a number"))
        })
        .collect::<Result<_>>()?;
    let pgbench = which("pgbench").context(
        "pgbench is not installed (Debian: apt-get install postgresql-contrib or postgresql-client); the scenario drives both servers with it",
    )?;
    let data = o.dir.join("serve");
    std::fs::create_dir_all(&data).with_context(|| format!("creating {}", data.display()))?;
    let csv = data.join(format!("objects-{}.csv", o.rows));
    if !csv.exists() {
        write_objects(&csv, o.rows)?;
    }
    let exe = sluice_exe()?;
    let sdb = data.join(format!("objects-{}.db", o.rows));
    if !sdb.join("MANIFEST").exists() {
        let _ = std::fs::remove_dir_all(&sdb);
        if !quiet {
            eprintln!("loading {} rows into {} ...", o.rows, sdb.display());
        }
        let st = Command::new(&exe)
            .arg("--db")
            .arg(&sdb)
            .args(["--quiet", "load", "--key", "id", "objects"])
            .arg(&csv)
            .status()
            .context("running sluice load")?;
        if !st.success() {
            bail!("sluice load of {} failed", csv.display());
        }
    }
    // The mixed run's server holds both tables: the point selects and Q1
    // share one server, as a long query and short ones would.
    let li_csv = lineitem_csv(o.q1_sf, o.dir, quiet)?;
    let mdb = data.join(format!("mixed-{}-sf{}.db", o.rows, o.q1_sf));
    // Both loads done (a run stopped between them loads both again).
    let ready = sluice::store::Database::open(&mdb)
        .is_ok_and(|db| db.table("objects").is_some() && db.table("lineitem").is_some());
    if !ready {
        let _ = std::fs::remove_dir_all(&mdb);
        if !quiet {
            eprintln!("loading objects and lineitem into {} ...", mdb.display());
        }
        let schema = crate::generate::tpch::schema("lineitem").unwrap_or_default();
        let loads: [(&str, &PathBuf, Vec<&str>); 2] = [
            ("objects", &csv, vec!["--key", "id"]),
            ("lineitem", &li_csv, vec!["--header", "--schema", schema]),
        ];
        for (table, file, args) in loads {
            let st = Command::new(&exe)
                .arg("--db")
                .arg(&mdb)
                .args(["--quiet", "load"])
                .args(args)
                .arg(table)
                .arg(file)
                .status()
                .context("running sluice load")?;
            if !st.success() {
                bail!("sluice load of {} into {table} failed", file.display());
            }
        }
    }
    let script = data.join("point.sql");
    std::fs::write(
        &script,
        format!(
            "\\set id random(1, {})\nSELECT id, a, b FROM objects WHERE id = :id;\n",
            o.rows
        ),
    )?;

    let sluice_srv = Served::sluice(&exe, &sdb)?;
    let pg = if o.no_peers {
        None
    } else {
        match Postgres::start(&csv, quiet) {
            Ok(p) => Some(p),
            Err(e) => {
                eprintln!("PostgreSQL: not run ({e:#})");
                None
            }
        }
    };
    // Answers before times: point selects (one id past the end) and a
    // whole-table aggregate, through sluice serve, from the library on the
    // same database, and through PostgreSQL.
    let mut checks: Vec<String> = [1, o.rows / 3 + 1, o.rows, o.rows + 1]
        .iter()
        .map(|id| format!("SELECT id, a, b FROM objects WHERE id = {id}"))
        .collect();
    checks.push(
        "SELECT count(*), sum(a), sum(b), min(id), max(id), min(a), max(b) FROM objects".into(),
    );
    for sql in &checks {
        let mut a = super::answers::Agreement::new(format!("serve: {sql}"));
        a.add("the library", super::answers::sluice_answer(&sdb, sql)?)?;
        a.add("sluice serve", psql_rows(sluice_srv.port, sql)?)?;
        if let Some(p) = &pg {
            a.add("PostgreSQL", psql_rows(p.port, sql)?)?;
        }
    }
    if !quiet {
        eprintln!(
            "answers: {} point selects and an aggregate agree (sluice serve, the library{})",
            checks.len() - 1,
            if pg.is_some() { ", PostgreSQL" } else { "" }
        );
    }
    let logs = data.join("logs");
    let bench = |port: u16, c: usize, connect_each: bool| -> Result<Run> {
        pgbench_run(&pgbench, port, &script, c, o.seconds, connect_each, &logs)
    };

    println!(
        "pgbench -M prepared point selects, {} rows, {} s per run, median of {} (interleaved){}",
        o.rows,
        o.seconds,
        o.runs,
        if pg.is_some() {
            ", PostgreSQL in the same run"
        } else {
            ""
        }
    );
    println!(
        "(cpu us: the machine's busy CPU over a run less pgbench's own, per transaction: the server's cost, kernel included; pgb us: pgbench's own)"
    );
    println!(
        "{:>7} {:>11} {:>8} {:>8} {:>7} {:>7} {:>11} {:>8} {:>8} {:>7} {:>7} {:>7}",
        "clients",
        "sluice tps",
        "p50 ms",
        "p99 ms",
        "cpu us",
        "pgb us",
        "pg tps",
        "p50 ms",
        "p99 ms",
        "cpu us",
        "pgb us",
        "ratio"
    );
    for &c in &clients {
        let (mut s_runs, mut p_runs) = (Vec::new(), Vec::new());
        let mut failures = Vec::new();
        for _ in 0..o.runs {
            match bench(sluice_srv.port, c, false) {
                Ok(r) => s_runs.push(r),
                Err(e) => failures.push(format!("sluice: {e:#}")),
            }
            if let Some(pg) = &pg {
                match bench(pg.port, c, false) {
                    Ok(r) => p_runs.push(r),
                    Err(e) => failures.push(format!("PostgreSQL: {e:#}")),
                }
            }
        }
        for f in &failures {
            eprintln!("{c} clients: {f}");
        }
        record_runs("sluice", serde_json::json!({"clients": c}), &s_runs);
        record_runs("postgresql", serde_json::json!({"clients": c}), &p_runs);
        if s_runs.is_empty() {
            println!("{c:>7} (every sluice run failed)");
            continue;
        }
        let s = med(&s_runs);
        let cells = |r: Option<Run>| match r {
            Some(r) => format!(
                "{:>11.0} {:>8.2} {:>8.2} {:>7.1} {:>7.1}",
                r.tps, r.p50_ms, r.p99_ms, r.server_cpu_us, r.client_cpu_us
            ),
            None => format!("{:>11} {:>8} {:>8} {:>7} {:>7}", "-", "-", "-", "-", "-"),
        };
        let p = (!p_runs.is_empty()).then(|| med(&p_runs));
        println!(
            "{c:>7} {} {} {:>7}{}",
            cells(Some(s)),
            cells(p),
            p.map_or("-".into(), |p| format!("{:.2}x", s.tps / p.tps)),
            failed_note(&s_runs, &p_runs)
        );
    }

    // Mixed: point selects with and without one client running Q1.
    let c = o.mixed_clients;
    let mixed_srv = Served::sluice(&exe, &mdb)?;
    let mut q1 = super::answers::Agreement::new("serve: TPC-H Q1 of the mixed run");
    q1.add("the library", super::answers::sluice_answer(&mdb, Q1)?)?;
    q1.add("sluice serve", psql_rows(mixed_srv.port, Q1)?)?;
    // Alone and with Q1, interleaved, --runs times: the p99 of one run
    // moves with where the scheduler put pgbench's threads.
    let (mut alone, mut mixed, mut q1_runs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..o.runs {
        alone.push(bench(mixed_srv.port, c, false)?);
        let looping = Q1Loop::start(&pgbench, mixed_srv.port, &data, o.seconds + 1)?;
        let r = bench(mixed_srv.port, c, false);
        q1_runs.push(looping.stop()?);
        mixed.push(r?);
    }
    drop(mixed_srv);
    record_runs(
        "sluice",
        serde_json::json!({"run": "mixed", "q1": false}),
        &alone,
    );
    record_runs(
        "sluice",
        serde_json::json!({"run": "mixed", "q1": true}),
        &mixed,
    );
    let q1_rates: Vec<f64> = q1_runs.iter().map(|q| q.per_s).collect();
    super::record::runs(
        "sluice",
        serde_json::json!({"run": "mixed", "q1": true}),
        "q1_per_s",
        "1/s",
        &q1_rates,
    );
    let p99 = |runs: &[Run]| median(&runs.iter().map(|r| r.p99_ms).collect::<Vec<_>>());
    let tps = |runs: &[Run]| median(&runs.iter().map(|r| r.tps).collect::<Vec<_>>());
    let list = |runs: &[Run]| {
        runs.iter()
            .map(|r| format!("{:.2}", r.p99_ms))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "\nmixed, sluice: {c} clients of point selects, p99 {:.2} ms alone ({}), {:.2} ms with one more client running TPC-H Q1 (SF {}) in a loop on the same server ({}): {:.2}x (medians of {} runs); Q1 {:.1} a second; tps {:.0} -> {:.0}",
        p99(&alone),
        list(&alone),
        p99(&mixed),
        o.q1_sf,
        list(&mixed),
        p99(&mixed) / p99(&alone),
        o.runs,
        median(&q1_rates),
        tps(&alone),
        tps(&mixed)
    );

    // A new connection per transaction.
    let sc = o.storm_clients;
    let s = bench(sluice_srv.port, sc, true)?;
    let p = match &pg {
        Some(pg) => Some(bench(pg.port, sc, true)?),
        None => None,
    };
    let storm = || serde_json::json!({"run": "storm"});
    super::record::value("sluice", storm(), "connections_per_s", "1/s", s.tps);
    if let Some(p) = p {
        super::record::value("postgresql", storm(), "connections_per_s", "1/s", p.tps);
    }
    println!(
        "storm (pgbench -C, {sc} clients): sluice {:.0} tps, {} failed{}",
        s.tps,
        s.failed,
        p.map_or(String::new(), |p| format!(
            "; PostgreSQL {:.0} tps, {} failed",
            p.tps, p.failed
        ))
    );

    // Idle connections: the resident memory of a fresh server (one that
    // served the runs above keeps the memory its allocator got then, and
    // new connections reuse it) after one query on one connection, and
    // with the idle connections open.
    drop(sluice_srv);
    let fresh = Served::sluice(&exe, &sdb)?;
    let mut first = super::pgwire::Client::connect(fresh.port, "bench")?;
    first.simple("SELECT id, a, b FROM objects WHERE id = 1")?;
    drop(first);
    let before = rss_kib(fresh.child.id())?;
    let conns = idle_connections(fresh.port, o.idle)?;
    let after = rss_kib(fresh.child.id())?;
    for (n, kib) in [(0, before), (conns.len(), after)] {
        let case = serde_json::json!({"run": "idle", "connections": n});
        super::record::value("sluice", case, "rss_bytes", "bytes", (kib * 1024) as f64);
    }
    println!(
        "idle: {} connections open, sluice RSS {:.1} MiB -> {:.1} MiB ({:.1} KiB each)",
        conns.len(),
        before as f64 / 1024.0,
        after as f64 / 1024.0,
        (after.saturating_sub(before)) as f64 / conns.len().max(1) as f64
    );
    drop(conns);
    drop(fresh);
    if o.soak > 0 {
        let run = |port: u16, c: usize, secs: u64| -> Result<Run> {
            pgbench_run(&pgbench, port, &script, c, secs, false, &logs)
        };
        super::soak::run(
            &exe,
            &sdb,
            o.rows,
            o.soak,
            o.mixed_clients,
            o.soak_hold,
            &run,
            quiet,
        )?;
    }
    let _ = std::fs::remove_dir_all(&logs);
    Ok(())
}

fn failed_note(a: &[Run], b: &[Run]) -> String {
    let f: u64 = a.iter().chain(b).map(|r| r.failed).sum();
    if f == 0 {
        String::new()
    } else {
        format!("  ({f} failed transactions)")
    }
}

/// Records every run's tps and latencies under `series` and `case`.
fn record_runs(series: &str, case: serde_json::Value, runs: &[Run]) {
    let of = |f: fn(&Run) -> f64| runs.iter().map(f).collect::<Vec<_>>();
    super::record::runs(series, case.clone(), "tps", "tx/s", &of(|r| r.tps));
    super::record::runs(series, case.clone(), "p50_ms", "ms", &of(|r| r.p50_ms));
    super::record::runs(series, case.clone(), "p99_ms", "ms", &of(|r| r.p99_ms));
    let cpu = of(|r| r.server_cpu_us);
    if cpu.iter().all(|v| v.is_finite()) {
        super::record::runs(series, case.clone(), "server_cpu_us", "us", &cpu);
    }
    let client = of(|r| r.client_cpu_us);
    if client.iter().all(|v| v.is_finite()) {
        super::record::runs(series, case, "client_cpu_us", "us", &client);
    }
}

/// CPU seconds so far: the machine's busy time (`/proc/stat`: user, nice,
/// system, irq, softirq) and that of this process's children it has
/// waited for (`/proc/self/stat`), both in USER_HZ (100 a second).
fn cpu_now() -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let cpu: Vec<f64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    let busy = [0, 1, 2, 5, 6]
        .iter()
        .map(|&i| cpu.get(i).copied())
        .sum::<Option<f64>>()?;
    let me = std::fs::read_to_string("/proc/self/stat").ok()?;
    // After the command's name in parentheses: fields 3 on; cutime and
    // cstime are fields 16 and 17.
    let rest: Vec<&str> = me.rsplit_once(')')?.1.split_whitespace().collect();
    let children = rest.get(13)?.parse::<f64>().ok()? + rest.get(14)?.parse::<f64>().ok()?;
    Some((busy / 100.0, children / 100.0))
}

/// The run of median TPS.
fn med(runs: &[Run]) -> Run {
    let m = median(&runs.iter().map(|r| r.tps).collect::<Vec<_>>());
    *runs
        .iter()
        .min_by(|a, b| (a.tps - m).abs().total_cmp(&(b.tps - m).abs()))
        .unwrap_or(&Run {
            tps: f64::NAN,
            p50_ms: f64::NAN,
            p99_ms: f64::NAN,
            failed: 0,
            server_cpu_us: f64::NAN,
            client_cpu_us: f64::NAN,
        })
}

/// `rows` rows `id,a,b`: ids 1..=rows, the others from a fixed sequence.
fn write_objects(path: &Path, rows: u64) -> Result<()> {
    let tmp = path.with_extension("partial");
    let mut w = std::io::BufWriter::new(
        std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?,
    );
    writeln!(w, "id,a,b")?;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for id in 1..=rows {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        writeln!(w, "{id},{},{}", x % 1_000_000, (x >> 32) % 1000)?;
    }
    w.flush()?;
    drop(w);
    std::fs::rename(&tmp, path)?;
    Ok(())
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Waits until something accepts connections on `port`.
fn wait_port(port: u16, what: &str) -> Result<()> {
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if start.elapsed() > Duration::from_secs(60) {
            bail!("{what} did not start listening on port {port}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// A `sluice serve` process, stopped when dropped.
pub(super) struct Served {
    pub(super) child: Child,
    pub(super) port: u16,
}

impl Served {
    pub(super) fn sluice(exe: &Path, db: &Path) -> Result<Served> {
        Served::sluice_with(exe, db, &[])
    }

    /// `sluice serve` with options `extra` too.
    pub(super) fn sluice_with(exe: &Path, db: &Path, extra: &[&str]) -> Result<Served> {
        let port = free_port()?;
        let child = Command::new(exe)
            .arg("--db")
            .arg(db)
            .args(["--quiet", "serve", "--max-connections", "1100", "--listen"])
            .arg(format!("127.0.0.1:{port}"))
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting sluice serve")?;
        let s = Served { child, port };
        wait_port(port, "sluice serve")?;
        Ok(s)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A private PostgreSQL cluster holding `objects`, stopped and removed
/// when dropped.
struct Postgres {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    as_postgres: bool,
}

impl Postgres {
    fn start(csv: &Path, quiet: bool) -> Result<Postgres> {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .context("PostgreSQL is not installed (Debian: apt-get install postgresql)")?
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .filter(|p| p.join("initdb").is_file())
            .max()
            .context("no PostgreSQL server binaries under /usr/lib/postgresql")?;
        // initdb refuses root: the cluster is the postgres user's then.
        let as_postgres = is_root();
        let data = std::env::temp_dir().join(format!("sluice-bench-pg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&data);
        std::fs::create_dir_all(&data)?;
        let port = free_port()?;
        let pg = Postgres {
            bin,
            data,
            port,
            as_postgres,
        };
        if as_postgres {
            let st = Command::new("chown")
                .arg("postgres")
                .arg(&pg.data)
                .status()?;
            if !st.success() {
                bail!("chown postgres {} failed", pg.data.display());
            }
        }
        if !quiet {
            eprintln!("starting PostgreSQL on port {port} ...");
        }
        let pgdata = pg.data.join("db");
        pg.as_owner(&pg.bin.join("initdb"))
            .args(["-A", "trust", "-U", "postgres", "-D"])
            .arg(&pgdata)
            .stdout(Stdio::null())
            .status_ok("initdb")?;
        pg.as_owner(&pg.bin.join("pg_ctl"))
            .arg("-D")
            .arg(&pgdata)
            .arg("-l")
            .arg(pg.data.join("log"))
            .arg("-o")
            .arg(format!(
                "-p {port} -k {} -c listen_addresses=127.0.0.1 -c max_connections=1100 -c shared_buffers=256MB -c fsync=off",
                pg.data.display()
            ))
            .args(["-w", "start"])
            .stdout(Stdio::null())
            .status_ok("pg_ctl start")?;
        pg.psql(
            "CREATE TABLE objects (id BIGINT PRIMARY KEY, a BIGINT, b BIGINT)",
            None,
        )?;
        pg.psql(
            "COPY objects FROM STDIN WITH (FORMAT csv, HEADER)",
            Some(csv),
        )?;
        pg.psql("VACUUM ANALYZE objects", None)?;
        Ok(pg)
    }

    fn as_owner(&self, prog: &Path) -> Command {
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(prog);
            c
        } else {
            Command::new(prog)
        }
    }

    fn psql(&self, sql: &str, stdin: Option<&Path>) -> Result<()> {
        let mut c = Command::new("psql");
        c.args([
            "-X",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            "127.0.0.1",
            "-U",
            "postgres",
        ])
        .args(["-p", &self.port.to_string(), "-c", sql, "postgres"])
        .stdout(Stdio::null());
        if let Some(f) = stdin {
            c.stdin(std::fs::File::open(f)?);
        }
        c.status_ok(sql)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self
            .as_owner(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.data.join("db"))
            .args(["-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.data);
    }
}

fn is_root() -> bool {
    // The owner of /proc/self is this process's user.
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

trait StatusOk {
    fn status_ok(&mut self, what: &str) -> Result<()>;
}

impl StatusOk for Command {
    fn status_ok(&mut self, what: &str) -> Result<()> {
        let out = self
            .stderr(Stdio::piped())
            .output()
            .with_context(|| format!("running {what}"))?;
        if !out.status.success() {
            bail!(
                "{what} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(())
    }
}

/// The rows psql prints for `sql` on the server at `port` (unaligned, a
/// unit separator between fields, an empty field as an empty text).
pub(super) fn psql_rows(port: u16, sql: &str) -> Result<super::answers::Rows> {
    let out = Command::new("psql")
        .args([
            "-X",
            "-A",
            "-t",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-F",
            "\u{1f}",
        ])
        .args(["-h", "127.0.0.1", "-U", "postgres", "-p", &port.to_string()])
        .args(["-c", sql, "postgres"])
        .output()
        .context("running psql to check an answer")?;
    if !out.status.success() {
        bail!(
            "psql on port {port}: {sql}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split('\u{1f}').map(|c| Some(c.to_string())).collect())
        .collect())
}

/// One pgbench run; latencies from its per-transaction log.
fn pgbench_run(
    pgbench: &Path,
    port: u16,
    script: &Path,
    clients: usize,
    seconds: u64,
    connect_each: bool,
    logs: &Path,
) -> Result<Run> {
    let _ = std::fs::remove_dir_all(logs);
    std::fs::create_dir_all(logs)?;
    let mut c = Command::new(pgbench);
    c.args(["-n", "-h", "127.0.0.1", "-U", "postgres", "-M", "prepared"])
        .args(["-p", &port.to_string()])
        .args([
            "-c",
            &clients.to_string(),
            "-j",
            &clients.min(2).to_string(),
        ])
        .args(["-T", &seconds.to_string(), "-f"])
        .arg(script)
        .arg("-l")
        .arg(format!("--log-prefix={}", logs.join("tx").display()));
    if connect_each {
        c.arg("-C");
    }
    c.arg("postgres");
    let before = cpu_now();
    let out = c.output().context("running pgbench")?;
    let after = cpu_now();
    let text = String::from_utf8_lossy(&out.stdout);
    let transactions = processed(&text).map(|n| n as f64);
    let server_cpu_us = match (before, after, transactions) {
        (Some((m0, c0)), Some((m1, c1)), Some(n)) if n > 0.0 => {
            ((m1 - m0) - (c1 - c0)).max(0.0) / n * 1e6
        }
        _ => f64::NAN,
    };
    let client_cpu_us = match (before, after, transactions) {
        (Some((_, c0)), Some((_, c1)), Some(n)) if n > 0.0 => (c1 - c0) / n * 1e6,
        _ => f64::NAN,
    };
    let tps = text
        .lines()
        .find_map(|l| l.strip_prefix("tps = "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse::<f64>().ok());
    let Some(tps) = tps else {
        bail!(
            "pgbench on port {port} at {clients} clients gave no result: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    };
    let failed = text
        .lines()
        .find_map(|l| l.strip_prefix("number of failed transactions: "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    // Each line: client, transaction, latency in microseconds, ...
    let mut lat = Vec::new();
    for e in std::fs::read_dir(logs)? {
        let f = std::fs::File::open(e?.path())?;
        for line in std::io::BufReader::new(f).lines() {
            if let Some(us) = line?
                .split_whitespace()
                .nth(2)
                .and_then(|v| v.parse::<f64>().ok())
            {
                lat.push(us / 1000.0);
            }
        }
    }
    lat.sort_by(f64::total_cmp);
    Ok(Run {
        tps,
        p50_ms: percentile(&lat, 0.5),
        p99_ms: percentile(&lat, 0.99),
        failed,
        server_cpu_us,
        client_cpu_us,
    })
}

/// One client running TPC-H Q1 again and again (psql), until stopped.
/// The transactions pgbench's summary says it processed.
fn processed(summary: &str) -> Option<u64> {
    summary
        .lines()
        .find_map(|l| l.strip_prefix("number of transactions actually processed: "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// One client running TPC-H Q1 in a loop on one connection: pgbench,
/// one client, a script of Q1, for a fixed time (a new psql process per
/// query would measure process start-ups as much as the server).
struct Q1Loop {
    child: Child,
    seconds: u64,
}

/// What the Q1 client did.
struct Q1Done {
    per_s: f64,
}

impl Q1Loop {
    fn start(pgbench: &Path, port: u16, data: &Path, seconds: u64) -> Result<Q1Loop> {
        let script = data.join("q1.sql");
        std::fs::write(&script, Q1).with_context(|| format!("writing {}", script.display()))?;
        let child = Command::new(pgbench)
            .args([
                "-n",
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                "-c",
                "1",
                "-j",
                "1",
            ])
            .args(["-p", &port.to_string(), "-T", &seconds.to_string(), "-f"])
            .arg(&script)
            .arg("postgres")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("running pgbench for Q1")?;
        Ok(Q1Loop { child, seconds })
    }

    fn stop(self) -> Result<Q1Done> {
        let out = self
            .child
            .wait_with_output()
            .context("waiting for the Q1 client")?;
        let text = String::from_utf8_lossy(&out.stdout);
        let done = processed(&text);
        match done {
            Some(done) if out.status.success() => Ok(Q1Done {
                per_s: done as f64 / self.seconds.max(1) as f64,
            }),
            _ => bail!(
                "the Q1 client failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        }
    }
}

const Q1: &str = include_str!("../../tests/expected/tpch/q1.sql");

/// `n` connections through startup to ReadyForQuery, held open.
fn idle_connections(port: u16, n: usize) -> Result<Vec<super::pgwire::Client>> {
    (0..n)
        .map(|i| {
            super::pgwire::Client::connect(port, "bench")
                .with_context(|| format!("idle connection {}", i + 1))
        })
        .collect()
}

/// Resident memory of process `pid`, KiB.
fn rss_kib(pid: u32) -> Result<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .context("no VmRSS")
}
