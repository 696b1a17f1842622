//! `sluice bench ingest`: the three-integer CSV loaded by `sluice load`
//! processes at several thread counts, DuckDB beside when python3 imports
//! it; a table of medians, rates, CPU time and peak memory. Every run's
//! table answers one question (count, sums, minima, maxima), checked
//! against the first answer before any time is reported.

use std::path::Path;
use std::process::Command;

use anyhow::Result;

use super::common::{
    Measure, duckdb_version, ints_file, load_ints, measure, median, parse_threads, run_json,
    sluice_exe, sync,
};

/// One engine at one thread count, and its runs.
struct Row {
    engine: &'static str,
    threads: usize,
    runs: Vec<Measure>,
}

/// DuckDB loading the same file, printing a summary like `sluice load --json`.
const DUCKDB_SCRIPT: &str = r#"
import duckdb, json, resource, sys, time
db, csv, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
con = duckdb.connect(db)
con.execute(f"SET threads={threads}")
t = time.perf_counter()
con.execute("CREATE TABLE ints AS SELECT * FROM read_csv(?, header=false, auto_detect=false, delim=',', "
            "columns={'a': 'INTEGER', 'b': 'INTEGER', 'c': 'INTEGER'})", [csv])
con.execute("CHECKPOINT")
seconds = time.perf_counter() - t
n = con.execute("SELECT count(*) FROM ints").fetchone()[0]
answer = rows(con, sys.argv[4])
con.close()
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": seconds, "rows": n, "cpu_seconds": usage.ru_utime + usage.ru_stime, "peak_rss_bytes": peak_rss(),
                  "version": duckdb.__version__, "answer": answer}))
"#;

/// The question every loaded table answers, sluice's at every thread
/// count and DuckDB's alike, before any time is reported.
const CHECK: &str =
    "SELECT count(*), count(c), sum(a), sum(b), sum(c), min(a), max(a), min(c), max(c) FROM ints";

#[allow(clippy::too_many_arguments)]
pub fn run(
    size: &str,
    threads: &str,
    runs: usize,
    dir: &Path,
    no_peers: bool,
    json: bool,
    quiet: bool,
) -> Result<()> {
    let threads = parse_threads(threads)?;
    let csv = ints_file(size, dir, quiet)?;
    let file_bytes = std::fs::metadata(&csv)?.len();
    let exe = sluice_exe()?;
    let duck = if no_peers { None } else { duckdb_version() };
    if !quiet {
        match &duck {
            Some(v) => eprintln!("peer: duckdb {v} (python)"),
            None if !no_peers => eprintln!(
                "peer: duckdb not importable from python3; `pip install duckdb` to compare"
            ),
            None => {}
        }
    }
    let cores = sluice::exec::usable_cores();
    let mut rows: Vec<Row> = Vec::new();
    for &t in &threads {
        rows.push(Row {
            engine: "sluice",
            threads: t,
            runs: vec![],
        });
        if duck.is_some() && t <= cores {
            rows.push(Row {
                engine: "duckdb",
                threads: t,
                runs: vec![],
            });
        }
    }
    let mut answers = super::answers::Agreement::new(format!("ingest: {CHECK}"));
    // Interleave engines and thread counts so drift hits all alike.
    for run in 0..runs {
        for row in rows.iter_mut() {
            let db = dir.join(format!("{}-{}.db", row.engine, row.threads));
            let _ = std::fs::remove_dir_all(&db);
            let _ = std::fs::remove_file(&db);
            sync();
            let who = format!("{} threads={} run {}", row.engine, row.threads, run + 1);
            let v = match row.engine {
                "sluice" => {
                    let v = run_json(&mut load_ints(&exe, &db, row.threads, &csv), "sluice load")?;
                    answers.add(&who, super::answers::sluice_answer(&db, CHECK)?)?;
                    v
                }
                _ => {
                    let v = run_json(
                        Command::new("python3")
                            .args([
                                "-c",
                                &format!(
                                    "{}{}{DUCKDB_SCRIPT}",
                                    super::answers::DUCKDB_ROWS,
                                    super::common::PY_PEAK_RSS
                                ),
                            ])
                            .arg(&db)
                            .arg(&csv)
                            .arg(row.threads.to_string())
                            .arg(CHECK),
                        "duckdb",
                    )?;
                    answers.add(&who, super::answers::json_rows(&v["answer"])?)?;
                    v
                }
            };
            let m = measure(&v);
            if !quiet {
                eprintln!(
                    "run {}/{runs}: {:<6} threads={:<3} {:.3} s",
                    run + 1,
                    row.engine,
                    row.threads,
                    m.seconds
                );
            }
            row.runs.push(m);
            let _ = std::fs::remove_dir_all(&db);
            let _ = std::fs::remove_file(&db);
        }
    }

    if !quiet {
        eprintln!("answers: every run's table gave the same count, sums, minima and maxima");
    }
    for r in &rows {
        let case = || serde_json::json!({"threads": r.threads, "bytes": file_bytes});
        let of = |f: fn(&Measure) -> f64| r.runs.iter().map(f).collect::<Vec<_>>();
        super::record::runs(r.engine, case(), "seconds", "s", &of(|m| m.seconds));
        super::record::runs(r.engine, case(), "cpu_seconds", "s", &of(|m| m.cpu));
        // A peak of 0 is one the summary did not hold.
        let mut rss = of(|m| m.peak_rss as f64);
        rss.retain(|&b| b > 0.0);
        super::record::runs(r.engine, case(), "peak_rss_bytes", "bytes", &rss);
    }

    let med = |r: &Row| median(&r.runs.iter().map(|m| m.seconds).collect::<Vec<_>>());
    let best_sluice = rows
        .iter()
        .filter(|r| r.engine == "sluice")
        .map(med)
        .fold(f64::INFINITY, f64::min);
    println!(
        "ingest: {} ({} bytes), 3 INT columns, {runs} runs each, {cores} usable cores",
        csv.display(),
        file_bytes
    );
    println!(
        "{:<7} {:>7} {:>9} {:>9} {:>10} {:>8} {:>9} {:>12} {:>10} {:>10} {:>9}",
        "engine",
        "threads",
        "median_s",
        "MB/s",
        "MB/s/core",
        "cpu_s",
        "MB/cpu_s",
        "rows/s",
        "peak_rss",
        "vs_duckdb",
        "vs_best"
    );
    let rows_in_file = count_lines(&csv)?;
    for r in &rows {
        let m = med(r);
        let workers = r.threads.min(cores).max(1);
        let mbs = file_bytes as f64 / 1e6 / m;
        let rss = r.runs.iter().map(|m| m.peak_rss).max().unwrap_or(0);
        let vs_duck = if r.engine == "sluice" {
            rows.iter()
                .find(|d| d.engine == "duckdb" && d.threads == r.threads)
                .map(|d| format!("{:.2}x", med(d) / m))
                .unwrap_or_else(|| "-".into())
        } else {
            "-".into()
        };
        let vs_best = if r.engine == "sluice" {
            format!("{:.3}", m / best_sluice)
        } else {
            "-".into()
        };
        let cpu = median(&r.runs.iter().map(|m| m.cpu).collect::<Vec<_>>());
        println!(
            "{:<7} {:>7} {:>9.3} {:>9.1} {:>10.1} {:>8.2} {:>9.1} {:>12.0} {:>10} {:>10} {:>9}",
            r.engine,
            r.threads,
            m,
            mbs,
            mbs / workers as f64,
            cpu,
            file_bytes as f64 / 1e6 / cpu,
            rows_in_file as f64 / m,
            crate::util::human_bytes(rss),
            vs_duck,
            vs_best
        );
        if json {
            println!(
                "{}",
                serde_json::json!({
                    "scenario": "ingest", "engine": r.engine, "threads": r.threads, "bytes": file_bytes,
                    "rows": rows_in_file, "median_seconds": m, "median_cpu_seconds": cpu, "runs": r.runs.iter().map(|m| m.seconds).collect::<Vec<_>>(),
                    "peak_rss_bytes": rss, "duckdb": duck,
                })
            );
        }
    }
    println!(
        "vs_duckdb: DuckDB median / sluice median at equal threads (>1 means sluice is faster); vs_best: sluice median / best sluice median"
    );
    Ok(())
}

/// Lines of the file at `p`.
fn count_lines(p: &Path) -> Result<u64> {
    use std::io::Read;
    let mut f = std::fs::File::open(p)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        let k = f.read(&mut buf)?;
        if k == 0 {
            return Ok(n);
        }
        n += memchr_count(&buf[..k]);
    }
}

/// LF bytes in `b`.
fn memchr_count(b: &[u8]) -> u64 {
    b.iter().filter(|&&c| c == b'\n').count() as u64
}
