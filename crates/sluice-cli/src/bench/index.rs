//! `sluice bench secondary-index`: many TSV files of (object id, chunkId,
//! subChunkId) loaded into a keyed table, at once and as ten incremental
//! loads; then key lookups through the library. MariaDB (InnoDB, one
//! `LOAD DATA INFILE` per file, as the archive did) runs in the same run
//! when its server is installed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use sluice::load::{Header, LoadOptions, Progress, load};
use sluice::source::Input;
use sluice::store::{Compression, Database};

use super::common::{median, percentile, sluice_exe, sync, timed_load};
use crate::generate::Rng;
use crate::generate::objects::{FILES_SEED, SCHEMA, object_files, object_id};

fn opts(compression: Compression, progress: Option<Arc<Progress>>) -> Result<LoadOptions> {
    let mut o = LoadOptions {
        schema: Some(SCHEMA.parse()?),
        header: Header::No,
        progress,
        compression: Some(compression),
        ..Default::default()
    };
    o.dialect.delimiter = b'\t';
    Ok(o)
}

fn inputs(paths: &[PathBuf]) -> Vec<Input> {
    paths.iter().map(|p| Input::File(p.clone())).collect()
}

#[allow(clippy::too_many_arguments)]
/// Runs the scenario and prints its tables.
pub fn run(
    files: usize,
    rows: u64,
    lookups: usize,
    dir: &Path,
    compression: Compression,
    runs: usize,
    no_peers: bool,
    keep: bool,
    into_connections: &[usize],
    quiet: bool,
) -> Result<()> {
    if files < 10 {
        bail!("--files must be at least 10 (the load is timed in tenths)");
    }
    let data = dir.join(format!("secondary-{files}x{rows}"));
    let (paths, raw_bytes) = object_files(&data, files, rows, quiet)?;
    let total_rows = files as u64 * rows;
    let tenth = |i: usize| &paths[i * files / 10..(i + 1) * files / 10];
    let tenth_rows = |i: usize| tenth(i).len() as u64 * rows;
    sync();

    // 1. One load over every file; the time at which each tenth of the
    // rows has been parsed and written comes from the progress counters.
    // 2. Ten incremental loads into a fresh database, each opening it as
    // a separate `sluice load` would. Both `runs` times, interleaved; the
    // figures are medians (per tenth for the incremental loads).
    let one_db = dir.join("secondary-one.db");
    let inc_db = dir.join("secondary-inc.db");
    let mut one_runs: Vec<(f64, Vec<f64>)> = Vec::new();
    let mut inc_runs: Vec<Vec<f64>> = Vec::new();
    let mut merged_at = Vec::new();
    for run in 0..runs.max(1) {
        let _ = std::fs::remove_dir_all(&one_db);
        sync();
        let progress = Arc::new(Progress::default());
        let mut db = Database::open_writer(&one_db)?;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let start = Instant::now();
        let watcher = {
            let (p, stop) = (progress.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut marks = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let done = p.rows.load(Ordering::Relaxed);
                    while marks.len() < 10 && done >= (marks.len() as u64 + 1) * total_rows / 10 {
                        marks.push(start.elapsed().as_secs_f64());
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                marks
            })
        };
        let s = load(
            &mut db,
            "objects",
            &inputs(&paths),
            &opts(compression, Some(progress.clone()))?,
        )?;
        stop.store(true, Ordering::Relaxed);
        let marks = watcher.join().unwrap_or_default();
        if s.rows != total_rows {
            bail!("loaded {} rows, expected {total_rows}", s.rows);
        }
        drop(db);
        one_runs.push((s.seconds, marks));

        let _ = std::fs::remove_dir_all(&inc_db);
        sync();
        let mut inc = Vec::new();
        // Each incremental load is a `sluice load` process, as a loader
        // script would run it (its wall time, start-up included).
        let exe = sluice_exe()?;
        for i in 0..10 {
            let mut cmd = Command::new(&exe);
            cmd.arg("--db")
                .arg(&inc_db)
                .args([
                    "load",
                    "--json",
                    "--tsv",
                    "--no-header",
                    "--key",
                    "source_id",
                ])
                .args(["--schema", SCHEMA, "--compression"])
                .arg(format!("{compression:?}").to_ascii_lowercase())
                .arg("objects")
                .args(tenth(i));
            let (wall, v) = timed_load(&mut cmd, &format!("incremental load {}", i + 1))?;
            inc.push(wall);
            if v["runs_merged"].as_u64().unwrap_or(0) > 0 && run == 0 {
                merged_at.push(i + 1);
            }
        }
        if !quiet {
            eprintln!(
                "run {}: one load {:.2} s; incremental {:?}",
                run + 1,
                s.seconds,
                inc.iter().map(|t| format!("{t:.3}")).collect::<Vec<_>>()
            );
        }
        inc_runs.push(inc);
    }
    let all = || serde_json::json!({"load": "all files"});
    for i in 0..10 {
        let case = serde_json::json!({"tenth": i + 1, "rows": tenth_rows(i)});
        // A mark the watcher missed is a run left out of that tenth.
        let one: Vec<f64> = one_runs
            .iter()
            .map(|(_, m)| {
                let at = |k: usize| m.get(k).copied().unwrap_or(f64::NAN);
                at(i) - if i == 0 { 0.0 } else { at(i - 1) }
            })
            .collect();
        // Its marks are at tenths of the rows, not of the files.
        let rows = (i as u64 + 1) * total_rows / 10 - i as u64 * total_rows / 10;
        let one_case = serde_json::json!({"tenth": i + 1, "rows": rows});
        super::record::runs("sluice, one load", one_case, "seconds", "s", &one);
        let inc: Vec<f64> = inc_runs.iter().map(|r| r[i]).collect();
        super::record::runs("sluice, 10 loads", case, "seconds", "s", &inc);
    }
    let one_totals: Vec<f64> = one_runs.iter().map(|r| r.0).collect();
    super::record::runs("sluice, one load", all(), "seconds", "s", &one_totals);
    let inc_totals: Vec<f64> = inc_runs.iter().map(|r| r.iter().sum()).collect();
    super::record::runs("sluice, 10 loads", all(), "seconds", "s", &inc_totals);
    let med = |v: Vec<f64>| median(&v);
    let inc: Vec<f64> = (0..10)
        .map(|i| med(inc_runs.iter().map(|r| r[i]).collect()))
        .collect();
    let inc_total = med(inc_runs.iter().map(|r| r.iter().sum()).collect());
    // The one-load run with the median time gives the per-tenth marks.
    one_runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (one_seconds, one_marks) = one_runs[one_runs.len() / 2].clone();

    // 3. Size and lookups (through the library, one thread).
    let db = Database::open(&one_db)?;
    let meta = db.table("objects").context("the table is missing")?.clone();
    let seg_bytes: u64 = meta.segments.iter().map(|s| s.bytes).sum();
    let run_bytes: u64 = meta.runs.iter().map(|r| r.bytes).sum();
    let t = db.keyed("objects")?;
    let mut rng = Rng::new(FILES_SEED + 1);
    let keys: Vec<String> = (0..lookups)
        .map(|_| object_id(rng.below(total_rows)).to_string())
        .collect();
    // Warm: every segment and index block read once.
    for k in &keys {
        t.get(k)?;
    }
    let mut lat = Vec::with_capacity(keys.len());
    let start = Instant::now();
    let mut found = 0usize;
    for k in &keys {
        let t0 = Instant::now();
        if t.get(k)?.is_some() {
            found += 1;
        }
        lat.push(t0.elapsed().as_secs_f64());
    }
    let single = start.elapsed().as_secs_f64();
    if found != keys.len() {
        bail!(
            "{} of {} present keys were not found",
            keys.len() - found,
            keys.len()
        );
    }
    lat.sort_by(f64::total_cmp);
    const BATCH: usize = 1000;
    let mut blat = Vec::new();
    let start = Instant::now();
    for chunk in keys.chunks(BATCH) {
        let t0 = Instant::now();
        let got = t.get_many(chunk)?;
        if got.num_rows() != chunk.len() {
            bail!(
                "a batch of {} keys found {} rows",
                chunk.len(),
                got.num_rows()
            );
        }
        blat.push(t0.elapsed().as_secs_f64());
    }
    let batched = start.elapsed().as_secs_f64();
    blat.sort_by(f64::total_cmp);

    // 4. The peer.
    let maria = if no_peers {
        None
    } else {
        match mariadb_load(dir, &paths, into_connections, quiet) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("peer: mariadb failed: {e:#}");
                None
            }
        }
    };

    // Answers before times: sluice's two tables and MariaDB's hold the
    // same rows (and MariaDB's own tables, loaded by LOAD DATA and by
    // `sluice load --into`, agree with each other).
    let check = "SELECT COUNT(*), SUM(chunkId), SUM(subChunkId) FROM objects";
    let mut answers = super::answers::Agreement::new(format!("secondary-index: {check}"));
    answers.add(
        "sluice, one load",
        super::answers::sluice_answer(&one_db, check)?,
    )?;
    answers.add(
        "sluice, ten loads",
        super::answers::sluice_answer(&inc_db, check)?,
    )?;
    if let Some(m) = &maria {
        if !m.same {
            bail!(
                "MariaDB's table loaded by LOAD DATA and the ones loaded by `sluice load --into` differ (count, sum of key CRC-32s, sums) — no time is reported for a wrong answer"
            );
        }
        answers.add(
            "MariaDB",
            vec![m.answer.split('\t').map(|c| Some(c.to_string())).collect()],
        )?;
    }
    if let Some(m) = &maria {
        for (i, at) in m.marks.iter().enumerate().take(10) {
            let took = at - if i == 0 { 0.0 } else { m.marks[i - 1] };
            let case = serde_json::json!({"tenth": i + 1, "rows": tenth_rows(i)});
            super::record::value("mariadb", case, "seconds", "s", took);
        }
        super::record::value("mariadb", all(), "seconds", "s", m.seconds);
        super::record::value("sluice --into mariadb", all(), "seconds", "s", m.into);
        for (n, secs) in &m.sorted {
            let case = serde_json::json!({"connections": n});
            super::record::value(
                "sluice --into mariadb, key order",
                case,
                "seconds",
                "s",
                *secs,
            );
        }
    }
    let per_s = |way: &str, secs: f64| {
        let (case, rate) = (serde_json::json!({"lookups": way}), lookups as f64 / secs);
        super::record::value("sluice", case, "lookups_per_s", "1/s", rate);
    };
    per_s("one at a time", single);
    per_s("batches", batched);
    let size = |what: &str, b: u64| {
        let case = serde_json::json!({"size": what});
        super::record::value("sluice", case, "bytes", "bytes", b as f64);
    };
    size("table", seg_bytes + run_bytes);
    size("raw tsv", raw_bytes);

    let cores = sluice::exec::usable_cores();
    println!(
        "secondary-index: {files} TSV files x {rows} rows = {total_rows} rows, {} raw; {} usable cores; segments {compression:?}; medians of {runs} runs",
        crate::util::human_bytes(raw_bytes),
        cores
    );
    println!();
    println!("| load | time (s) | rows/s |");
    println!("|---|---:|---:|");
    println!(
        "| sluice, one load of all files | {one_seconds:.2} | {} |",
        crate::util::human_count((total_rows as f64 / one_seconds) as u64)
    );
    println!(
        "| sluice, 10 incremental loads | {inc_total:.2} | {} |",
        crate::util::human_count((total_rows as f64 / inc_total) as u64)
    );
    if let Some(m) = &maria {
        println!(
            "| MariaDB {} InnoDB, LOAD DATA per file | {:.1} | {} |",
            m.version,
            m.seconds,
            crate::util::human_count((total_rows as f64 / m.seconds) as u64)
        );
        println!(
            "| sluice load --into MariaDB, key added after | {:.1} | {} |",
            m.into,
            crate::util::human_count((total_rows as f64 / m.into) as u64)
        );
        for (n, secs) in &m.sorted {
            println!(
                "| sluice load --into MariaDB, rows in key order, {n} connection{} | {secs:.1} | {} |",
                if *n == 1 { "" } else { "s" },
                crate::util::human_count((total_rows as f64 / secs) as u64)
            );
        }
    }
    println!();
    println!("| tenth of the files | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10 |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let row = |label: &str, secs: &[f64]| {
        let cells: Vec<String> = (0..10)
            .map(|i| match secs.get(i) {
                Some(s) => crate::util::human_count((tenth_rows(i) as f64 / s) as u64),
                None => "-".into(),
            })
            .collect();
        println!("| {label} rows/s | {} |", cells.join(" | "));
    };
    let one_tenths: Vec<f64> = one_marks
        .iter()
        .enumerate()
        .map(|(i, &m)| m - if i == 0 { 0.0 } else { one_marks[i - 1] })
        .collect();
    row("one load (parse + write)", &one_tenths);
    row("incremental loads", &inc);
    if let Some(m) = maria.as_ref().filter(|m| m.marks.len() == 10) {
        let tenths: Vec<f64> = (0..10)
            .map(|i| m.marks[i] - if i == 0 { 0.0 } else { m.marks[i - 1] })
            .collect();
        row("MariaDB, LOAD DATA per file", &tenths);
    }
    println!();
    let last_first = inc[0] / inc[9];
    println!(
        "incremental: last tenth / first tenth rate = {last_first:.2} (target >= 0.9); runs merged after load {}",
        if merged_at.is_empty() {
            "none".to_string()
        } else {
            merged_at
                .iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    println!(
        "one load: {:.2} s parsing and writing rows, {:.2} s after the last row (merging sorted keys into the index, commit)",
        one_marks.last().copied().unwrap_or(f64::NAN),
        one_seconds - one_marks.last().copied().unwrap_or(f64::NAN)
    );
    println!(
        "size: {} on disk ({} segments + {} key index) = {:.2}x the raw TSV (target <= 1)",
        crate::util::human_bytes(seg_bytes + run_bytes),
        crate::util::human_bytes(seg_bytes),
        crate::util::human_bytes(run_bytes),
        (seg_bytes + run_bytes) as f64 / raw_bytes as f64
    );
    println!(
        "lookups, {lookups} random present keys, warm, one thread: {} /s one at a time (p50 {:.1} us, p99 {:.1} us); {} /s in batches of {BATCH} (p50 {:.2} ms, p99 {:.2} ms a batch)",
        crate::util::human_count((lookups as f64 / single) as u64),
        percentile(&lat, 0.5) * 1e6,
        percentile(&lat, 0.99) * 1e6,
        crate::util::human_count((lookups as f64 / batched) as u64),
        percentile(&blat, 0.5) * 1e3,
        percentile(&blat, 0.99) * 1e3,
    );
    if let Some(m) = &maria {
        println!(
            "vs MariaDB: sluice one load {:.1}x faster, incremental {:.1}x faster (target >= 50x)",
            m.seconds / one_seconds,
            m.seconds / inc_total
        );
        let best = m.sorted.iter().map(|s| s.1).fold(m.into, f64::min);
        println!(
            "into MariaDB: sluice load --into {:.1}x faster than LOAD DATA per file into the indexed table (key added after: {:.1}x; target >= 5x); the final tables are identical (count, sum of key CRC-32s, column sums)",
            m.seconds / best,
            m.seconds / m.into,
        );
    }
    if !keep {
        let _ = std::fs::remove_dir_all(&one_db);
        let _ = std::fs::remove_dir_all(&inc_db);
    }
    Ok(())
}

/// Starts a private MariaDB server in `dir` (a socket, and a loopback
/// port for sluice), loads every file with `LOAD DATA INFILE` into an
/// InnoDB table with the archive's schema, one statement per file, then
/// the same files with `sluice load --into` into the same table without
/// its key (added after the rows), then into a table sluice makes with
/// its key, rows in key order, over each of `connections` (none: its
/// default); returns the times and whether the tables agree.
/// `None` when no server is installed.
fn mariadb_load(
    dir: &Path,
    paths: &[PathBuf],
    connections: &[usize],
    quiet: bool,
) -> Result<Option<Maria>> {
    let server = ["mariadbd", "mysqld"]
        .iter()
        .map(|s| PathBuf::from("/usr/sbin").join(s))
        .find(|p| p.exists());
    let Some(server) = server else {
        if !quiet {
            eprintln!("peer: no MariaDB server (apt-get install mariadb-server to compare)");
        }
        return Ok(None);
    };
    let base = std::fs::canonicalize(dir)?.join("mariadb");
    let _ = std::fs::remove_dir_all(&base);
    let datadir = base.join("data");
    std::fs::create_dir_all(&datadir)?;
    let sock = base.join("mysqld.sock");
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let user = if is_root() { "root" } else { "" };
    let mut install = Command::new("mariadb-install-db");
    install
        .arg(format!("--datadir={}", datadir.display()))
        .arg("--auth-root-authentication-method=normal")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if !user.is_empty() {
        install.arg(format!("--user={user}"));
    }
    if !install
        .status()
        .context("running mariadb-install-db")?
        .success()
    {
        bail!("mariadb-install-db failed");
    }
    let mut srv = Command::new(&server);
    srv.arg("--no-defaults")
        .arg(format!("--datadir={}", datadir.display()))
        .arg(format!("--socket={}", sock.display()))
        .arg(format!("--port={port}"))
        .arg("--bind-address=127.0.0.1")
        .arg(format!("--pid-file={}", base.join("pid").display()))
        .arg("--secure-file-priv=")
        .arg("--innodb-buffer-pool-size=1G")
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(base.join("server.log"))?));
    if !user.is_empty() {
        srv.arg(format!("--user={user}"));
    }
    let mut child = srv.spawn().context("starting the MariaDB server")?;
    let client = |sql: &str| -> Result<String> {
        let out = Command::new("mariadb")
            .arg(format!("--socket={}", sock.display()))
            .args(["-uroot", "-N", "-B", "-e", sql])
            .output()
            .context("running the mariadb client")?;
        if !out.status.success() {
            bail!("{}", String::from_utf8_lossy(&out.stderr).trim());
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let result = (|| -> Result<Maria> {
        let mut up = false;
        for _ in 0..300 {
            if client("SELECT 1").is_ok() {
                up = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        if !up {
            bail!(
                "the server did not start (see {})",
                base.join("server.log").display()
            );
        }
        let version = client("SELECT VERSION()")?;
        client(
            "CREATE DATABASE bench; CREATE TABLE bench.objects (source_id CHAR(28) NOT NULL PRIMARY KEY, chunkId INT, subChunkId INT) ENGINE=InnoDB",
        )?;
        if !quiet {
            eprintln!(
                "peer: MariaDB {version}: loading {} files one by one ...",
                paths.len()
            );
        }
        // One client session, one LOAD DATA per file, as a loader script
        // would; autocommit, so each file is its own transaction.
        // After each tenth of the files a `SELECT i` marks the time; the
        // client flushes each result (--unbuffered), read as it comes.
        let mut c = Command::new("mariadb")
            .arg(format!("--socket={}", sock.display()))
            .args(["-uroot", "--unbuffered", "-N", "-B", "bench"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let stdout = c.stdout.take().context("client stdout")?;
        let start = Instant::now();
        let marker = std::thread::spawn(move || {
            use std::io::BufRead;
            std::io::BufReader::new(stdout)
                .lines()
                .map_while(|l| l.ok())
                .filter(|l| l.trim().starts_with("tenth"))
                .map(|_| start.elapsed().as_secs_f64())
                .collect::<Vec<f64>>()
        });
        {
            let mut stdin = c.stdin.take().context("client stdin")?;
            let n = paths.len();
            for (i, p) in paths.iter().enumerate() {
                let p = std::fs::canonicalize(p)?;
                writeln!(
                    stdin,
                    "LOAD DATA INFILE '{}' INTO TABLE objects FIELDS TERMINATED BY '\\t' LINES TERMINATED BY '\\n';",
                    p.display()
                )?;
                // The last file of a tenth as `tenth(k)` cuts them.
                if n >= 10 && (0..10).any(|k| (k + 1) * n / 10 == i + 1) {
                    writeln!(stdin, "SELECT 'tenth';")?;
                }
            }
        }
        if !c.wait()?.success() {
            bail!("a LOAD DATA statement failed");
        }
        let secs = start.elapsed().as_secs_f64();
        let marks = marker.join().unwrap_or_default();
        let n = client("SELECT COUNT(*) FROM bench.objects")?;
        let answer = client("SELECT COUNT(*), SUM(chunkId), SUM(subChunkId) FROM bench.objects")?;
        if !quiet {
            eprintln!("peer: MariaDB loaded {n} rows in {secs:.1} s");
        }
        // The same files by `sluice load --into` into the same table
        // without its key, which is added after the rows.
        client(
            "CREATE TABLE bench.objects2 (source_id CHAR(28) NOT NULL, chunkId INT, subChunkId INT) ENGINE=InnoDB;
             CREATE USER 'bench'@'localhost'; GRANT ALL ON *.* TO 'bench'@'localhost'",
        )?;
        let start = Instant::now();
        let out = Command::new(sluice_exe()?)
            .args(["-q", "load", "--into"])
            .arg(format!("mariadb://bench@127.0.0.1:{port}/bench"))
            .args(["--tsv", "--no-header", "--key", "source_id"])
            .args(["--index", "after", "objects2"])
            .args(paths)
            .output()?;
        let into = start.elapsed().as_secs_f64();
        if !out.status.success() {
            bail!(
                "sluice load --into failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let check =
            "SELECT COUNT(*), SUM(CRC32(source_id)), SUM(chunkId), SUM(subChunkId) FROM bench.";
        let (a, b) = (
            client(&format!("{check}objects"))?,
            client(&format!("{check}objects2"))?,
        );
        if !quiet {
            eprintln!(
                "sluice load --into MariaDB loaded the same files in {into:.1} s; count and sums: {a} / {b}"
            );
        }
        let mut same = a == b;
        // sluice's default: a new table made with its key, each
        // connection's rows sent in key order.
        let mut sorted = Vec::new();
        let counts: Vec<Option<usize>> = if connections.is_empty() {
            vec![None]
        } else {
            connections.iter().map(|&n| Some(n)).collect()
        };
        for n in counts {
            client(
                "DROP TABLE IF EXISTS bench.objects3; DELETE FROM bench.sluice_load_journal WHERE target = 'objects3'",
            )?;
            let mut cmd = Command::new(sluice_exe()?);
            cmd.args(["-q", "load", "--json", "--into"])
                .arg(format!("mariadb://bench@127.0.0.1:{port}/bench"))
                .args(["--tsv", "--no-header", "--key", "source_id"])
                .args(["--schema", "source_id TEXT, chunkId INT, subChunkId INT"]);
            if let Some(n) = n {
                cmd.args(["--connections", &n.to_string()]);
            }
            let start = Instant::now();
            let out = cmd.arg("objects3").args(paths).output()?;
            let took = start.elapsed().as_secs_f64();
            if !out.status.success() {
                bail!(
                    "sluice load --into (key order) failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            let summary: serde_json::Value = serde_json::from_slice(&out.stdout)
                .context("reading the --json summary of sluice load --into")?;
            let used = summary["into"]["connections"].as_u64().unwrap_or(0) as usize;
            let c = client(&format!("{check}objects3"))?;
            same &= c == a;
            if !quiet {
                eprintln!(
                    "sluice load --into MariaDB, rows in key order over {used} connections: {took:.1} s; count and sums: {c}"
                );
            }
            sorted.push((used, took));
        }
        Ok(Maria {
            seconds: secs,
            marks,
            version,
            into,
            sorted,
            same,
            answer,
        })
    })();
    let _ = client("SHUTDOWN");
    std::thread::sleep(Duration::from_millis(500));
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&base);
    result.map(Some)
}

/// The MariaDB runs: the peer's time, and sluice's into the same server.
struct Maria {
    /// One LOAD DATA INFILE per file into the indexed table.
    seconds: f64,
    /// Seconds from the start at which each tenth of the files was in.
    marks: Vec<f64>,
    version: String,
    /// `sluice load --into`, the key added after the rows.
    into: f64,
    /// `sluice load --into` in key order: connections and seconds.
    sorted: Vec<(usize, f64)>,
    /// Both tables hold the same rows (count, sum of key CRC-32s, sums).
    same: bool,
    /// `SELECT COUNT(*), SUM(chunkId), SUM(subChunkId)` of the LOAD DATA
    /// table, tab-separated.
    answer: String,
}

fn is_root() -> bool {
    std::env::var("USER").is_ok_and(|u| u == "root")
        || Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}
