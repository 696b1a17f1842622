//! `sluice bench q1`: TPC-H Q1 over lineitem, warm, at several thread
//! counts, through the library; DuckDB runs the same data and query in the
//! same run when python3 imports it.

use std::path::Path;
use std::process::Command;

use anyhow::{Result, bail};

use super::common::{DUCKDB_LINEITEM, duckdb_version, lineitem, median, parse_threads, run_json};

/// TPC-H Q1, as in the specification with the usual 90-day delta (the
/// same text the correctness test checks against DuckDB's answers).
const Q1: &str = include_str!("../../tests/expected/tpch/q1.sql");

/// Appended to [`DUCKDB_LINEITEM`].
const DUCKDB_Q1_SCRIPT: &str = r#"
import duckdb, json, os, sys, time
db, csv, query, threads, runs = sys.argv[1], sys.argv[2], sys.argv[3], [int(t) for t in sys.argv[4].split(",")], int(sys.argv[5])
fresh = not os.path.exists(db)
con = duckdb.connect(db)
if fresh:
    lineitem(con, csv)
answer = rows(con, query)
times = {t: [] for t in threads}
for t in threads:
    con.execute(f"SET threads={t}")
    con.execute(query).fetchall()
for _ in range(runs):
    for t in threads:
        con.execute(f"SET threads={t}")
        start = time.perf_counter()
        con.execute(query).fetchall()
        times[t].append(time.perf_counter() - start)
print(json.dumps({"times": {str(t): v for t, v in times.items()}, "version": duckdb.__version__, "rows": answer}))
"#;

/// Times Q1 over lineitem at each thread count, warm, DuckDB beside.
pub fn run(
    sf: f64,
    threads_list: &str,
    runs: usize,
    dir: &Path,
    no_peers: bool,
    quiet: bool,
) -> Result<()> {
    let threads = parse_threads(threads_list)?;
    let runs = runs.max(1);
    let cores = sluice::exec::usable_cores();
    let (csv, db_dir, rows) = lineitem(sf, dir, quiet)?;
    let db = sluice::store::Database::open(&db_dir)?;
    let duck = if no_peers { None } else { duckdb_version() };
    let duck_db = dir.join(format!("q1-sf{sf}.duckdb"));
    // Rows: (engine, threads, times). Thread counts are interleaved run by
    // run, so that drift of the machine hits them alike.
    let mut results: Vec<(&str, usize, Vec<f64>)> =
        threads.iter().map(|&t| ("sluice", t, Vec::new())).collect();
    // Warm: the first run opens and checks the segments; not timed. Each
    // thread count's answer is kept, to be checked against DuckDB's.
    let mut answers = Vec::new();
    for &t in &threads {
        let out = sluice::query::query(&db, Q1, Some(t))?;
        answers.push((t, super::answers::sluice_rows(&out)));
    }
    for _ in 0..runs {
        for r in results.iter_mut() {
            let start = std::time::Instant::now();
            let out = sluice::query::query(&db, Q1, Some(r.1))?;
            r.2.push(start.elapsed().as_secs_f64());
            if out.batches.iter().map(|b| b.num_rows()).sum::<usize>() != 4 {
                bail!("Q1 returned an unexpected number of groups");
            }
        }
    }
    if !quiet {
        for r in &results {
            eprintln!("sluice threads={}: {:.3?}", r.1, r.2);
        }
    }
    let duck_threads: Vec<usize> = threads.iter().copied().filter(|&t| t <= cores).collect();
    if duck.is_some() && !duck_threads.is_empty() {
        let list: Vec<String> = duck_threads.iter().map(|t| t.to_string()).collect();
        let v = run_json(
            Command::new("python3")
                .args([
                    "-c",
                    &format!(
                        "{DUCKDB_LINEITEM}{}{DUCKDB_Q1_SCRIPT}",
                        super::answers::DUCKDB_ROWS
                    ),
                ])
                .arg(&duck_db)
                .arg(&csv)
                .arg(Q1)
                .arg(list.join(","))
                .arg(runs.to_string()),
            "duckdb",
        )?;
        // No time is reported for a wrong answer.
        let theirs = super::answers::json_rows(&v["rows"])?;
        for (t, ours) in &answers {
            super::answers::check(
                &format!("q1 (sluice at {t} threads)"),
                "duckdb",
                true,
                ours,
                &theirs,
            )?;
        }
        if !quiet {
            eprintln!("answers: sluice's Q1 equals DuckDB's at every thread count");
        }
        for &t in &duck_threads {
            let times: Vec<f64> = v["times"][t.to_string()]
                .as_array()
                .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
                .unwrap_or_default();
            if !quiet {
                eprintln!("duckdb threads={t}: {times:.3?}");
            }
            let at = results
                .iter()
                .position(|r| r.0 == "sluice" && r.1 == t)
                .map_or(results.len(), |p| p + 1);
            results.insert(at, ("duckdb", t, times));
        }
    }
    for (engine, t, times) in &results {
        let case = serde_json::json!({"threads": t, "sf": sf, "rows": rows});
        super::record::runs(engine, case, "seconds", "s", times);
    }
    let med = median;
    let t1 = results
        .iter()
        .find(|r| r.0 == "sluice" && r.1 == 1)
        .map(|r| med(&r.2));
    let best = results
        .iter()
        .filter(|r| r.0 == "sluice")
        .map(|r| med(&r.2))
        .fold(f64::INFINITY, f64::min);
    println!(
        "q1: TPC-H Q1 over lineitem SF {sf} ({rows} rows), warm, {runs} runs each, {cores} usable cores"
    );
    println!(
        "{:<7} {:>7} {:>9} {:>12} {:>10} {:>10} {:>8}",
        "engine", "threads", "median_s", "rows/s", "efficiency", "vs_duckdb", "vs_best"
    );
    for (engine, t, times) in &results {
        let m = med(times);
        let n = (*t).min(cores).max(1) as f64;
        let eff = match (engine, t1) {
            (&"sluice", Some(t1)) => format!("{:.2}", t1 / (n * m)),
            _ => "-".into(),
        };
        let vs = if *engine == "sluice" {
            results
                .iter()
                .find(|d| d.0 == "duckdb" && d.1 == *t)
                .map(|d| format!("{:.2}x", med(&d.2) / m))
                .unwrap_or_else(|| "-".into())
        } else {
            "-".into()
        };
        let vb = if *engine == "sluice" {
            format!("{:.3}", m / best)
        } else {
            "-".into()
        };
        println!(
            "{engine:<7} {t:>7} {m:>9.4} {:>12.0} {eff:>10} {vs:>10} {vb:>8}",
            rows as f64 / m
        );
    }
    println!(
        "efficiency: t1 / (n x tn), n = min(threads, cores); vs_duckdb: DuckDB median / sluice median (>1: sluice faster)"
    );
    Ok(())
}
