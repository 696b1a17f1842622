//! `sluice bench parquet`: TPC-H lineitem out to Parquet and back in,
//! sluice beside DuckDB on the same rows, threads and compression (zstd),
//! each step a process of its own, interleaved run by run:
//! - export: `sluice export lineitem --output DIR` against DuckDB's
//!   `COPY lineitem TO 'DIR' (FORMAT parquet, PER_THREAD_OUTPUT)`;
//! - partitioned export: `--partition-by l_shipmode` against DuckDB's
//!   `PARTITION_BY (l_shipmode)`;
//! - load: `sluice load` of sluice's dataset into a new table against
//!   DuckDB's `CREATE TABLE … AS SELECT * FROM read_parquet(…)` of its own
//!   dataset into a new database file, checkpointed (on disk, as sluice's).
//!
//! Before any time is reported, every dataset (read by DuckDB) and every
//! loaded table answers one grouped question alike ([`CHECK`]).
//!
//! sluice's times are of the whole process (start-up included); DuckDB's
//! of its statement (its connection opened before the clock starts).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::common::{
    DUCKDB_LINEITEM, duckdb_version, lineitem, median, run_json, sluice_exe, sync,
};

/// The question every dataset and loaded table answers (`{src}`: the
/// table or DuckDB's reading of a dataset), checked before any time is
/// reported.
const CHECK: &str = "SELECT l_shipmode, count(*), sum(l_quantity), sum(l_extendedprice), \
     sum(l_orderkey), min(l_shipdate), max(l_commitdate), count(l_comment) FROM {src} GROUP BY l_shipmode";

/// DuckDB's side: one timed step, printed as JSON.
const PY_SCRIPT: &str = r#"
import json, os, sys, time
import duckdb
mode, duck_db, csv, threads, out, check = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]
if mode == "check":
    # A dataset's answer to the check, as DuckDB reads it.
    src = f"read_parquet('{out}/**/*.parquet', hive_partitioning=true)"
    print(json.dumps({"answer": rows(duckdb.connect(), check.format(src=src))}))
    sys.exit(0)
fresh = not os.path.exists(duck_db)
con = duckdb.connect(duck_db)
if fresh:
    lineitem(con, csv)
con.execute(f"SET threads={threads}")
con.execute("SET enable_progress_bar = false")
t = time.perf_counter()
if mode == "export":
    con.execute(f"COPY lineitem TO '{out}' (FORMAT parquet, COMPRESSION zstd, PER_THREAD_OUTPUT true)")
elif mode == "partitioned":
    con.execute(f"COPY lineitem TO '{out}' (FORMAT parquet, COMPRESSION zstd, PARTITION_BY (l_shipmode))")
else:
    # Into a database file of its own, checkpointed: on disk, as sluice's.
    target = out + ".load.duckdb"
    for f in (target, target + ".wal"):
        if os.path.exists(f):
            os.remove(f)
    disk = duckdb.connect(target)
    disk.execute(f"SET threads={threads}")
    disk.execute("SET enable_progress_bar = false")
    t = time.perf_counter()
    disk.execute(f"CREATE TABLE li AS SELECT * FROM read_parquet('{out}/**/*.parquet')")
    disk.execute("CHECKPOINT")
    secs = time.perf_counter() - t
    answer = rows(disk, check.format(src="li"))
    disk.close()
    os.remove(target)
    print(json.dumps({"seconds": secs, "duckdb": duckdb.__version__, "answer": answer}))
    sys.exit(0)
secs = time.perf_counter() - t
print(json.dumps({"seconds": secs, "duckdb": duckdb.__version__}))
"#;

fn dir_bytes(p: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(p) else {
        return 0;
    };
    rd.flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            _ => e.metadata().map(|m| m.len()).unwrap_or(0),
        })
        .sum()
}

/// Times a sluice process (its wall time, start-up included).
fn timed(cmd: &mut Command, what: &str) -> Result<f64> {
    let start = Instant::now();
    let out = cmd.output().with_context(|| format!("starting {what}"))?;
    let secs = start.elapsed().as_secs_f64();
    if !out.status.success() {
        bail!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(secs)
}

/// Runs the steps and prints a table of medians.
pub fn run(
    sf: f64,
    threads: Option<usize>,
    runs: usize,
    dir: &Path,
    no_peers: bool,
    quiet: bool,
) -> Result<()> {
    let runs = runs.max(1);
    let cores = sluice::exec::usable_cores();
    let threads = threads.unwrap_or(cores).max(1);
    let (csv, db_dir, rows) = lineitem(sf, dir, quiet)?;
    let duck = if no_peers { None } else { duckdb_version() };
    let duck_db = dir.join(format!("q1-sf{sf}.duckdb"));
    let script = format!(
        "{DUCKDB_LINEITEM}{}{PY_SCRIPT}",
        super::answers::DUCKDB_ROWS
    );
    let mut answers = super::answers::Agreement::new(format!("parquet: {CHECK}"));
    // The answer of a dataset as DuckDB reads it (the exports are checked
    // in the first run; the loads in every run).
    let dataset_answer = |what: &str, data: &Path| -> Result<super::answers::Rows> {
        let v = run_json(
            Command::new("python3")
                .args(["-c", &script, "check"])
                .arg(&duck_db)
                .arg(&csv)
                .arg("1")
                .arg(data)
                .arg(CHECK),
            &format!("DuckDB reading {what}"),
        )?;
        super::answers::json_rows(&v["answer"])
    };
    let exe = sluice_exe()?;
    let work = dir.join(format!("bench-parquet-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let steps = ["export", "partitioned", "load"];
    let mut ours: Vec<Vec<f64>> = vec![Vec::new(); steps.len()];
    let mut theirs: Vec<Vec<f64>> = vec![Vec::new(); steps.len()];
    let (mut our_bytes, mut their_bytes) = (0, 0);
    let mut version = String::new();
    for run in 0..runs {
        for (i, step) in steps.iter().enumerate() {
            // sluice.
            let out = work.join(format!("sluice-{step}"));
            if *step != "load" {
                let _ = std::fs::remove_dir_all(&out);
            }
            sync();
            let secs = match *step {
                "export" | "partitioned" => {
                    let mut c = Command::new(&exe);
                    c.arg("--db")
                        .arg(&db_dir)
                        .args([
                            "--threads",
                            &threads.to_string(),
                            "-q",
                            "export",
                            "lineitem",
                            "--output",
                        ])
                        .arg(&out);
                    if *step == "partitioned" {
                        c.args(["--partition-by", "l_shipmode"]);
                    }
                    timed(&mut c, &format!("sluice export ({step})"))?
                }
                _ => {
                    let target = work.join("load.db");
                    let _ = std::fs::remove_dir_all(&target);
                    let t = timed(
                        Command::new(&exe)
                            .arg("--db")
                            .arg(&target)
                            .args(["--threads", &threads.to_string(), "-q", "load", "li"])
                            .arg(work.join("sluice-export")),
                        "sluice load (Parquet)",
                    )?;
                    let got = sluice::store::Database::open(&target)?
                        .table("li")
                        .map_or(0, |t| t.rows());
                    if got != rows {
                        bail!("the Parquet load gave {got} rows, not {rows}");
                    }
                    answers.add(
                        &format!("sluice's load of its dataset, run {}", run + 1),
                        super::answers::sluice_answer(&target, &CHECK.replace("{src}", "li"))?,
                    )?;
                    let _ = std::fs::remove_dir_all(&target);
                    t
                }
            };
            if *step == "export" {
                our_bytes = dir_bytes(&out);
            }
            if run == 0 && *step != "load" && duck.is_some() {
                answers.add(
                    &format!("sluice's {step} dataset read by DuckDB"),
                    dataset_answer(step, &out)?,
                )?;
            }
            ours[i].push(secs);
            // DuckDB.
            if duck.is_some() {
                let out = work.join(format!("duckdb-{step}"));
                if *step != "load" {
                    let _ = std::fs::remove_dir_all(&out);
                    let _ = std::fs::remove_file(&out);
                }
                sync();
                let v = run_json(
                    Command::new("python3")
                        .args(["-c", &script, if *step == "load" { "load" } else { step }])
                        .arg(&duck_db)
                        .arg(&csv)
                        .arg(threads.to_string())
                        .arg(if *step == "load" {
                            work.join("duckdb-export")
                        } else {
                            out.clone()
                        })
                        .arg(CHECK),
                    &format!("DuckDB ({step})"),
                )?;
                if *step == "load" {
                    answers.add(
                        &format!("DuckDB's load of its dataset, run {}", run + 1),
                        super::answers::json_rows(&v["answer"])?,
                    )?;
                } else if run == 0 {
                    answers.add(
                        &format!("DuckDB's {step} dataset read by DuckDB"),
                        dataset_answer(step, &out)?,
                    )?;
                }
                if *step == "export" {
                    their_bytes = dir_bytes(&out);
                }
                version = v["duckdb"].as_str().unwrap_or("?").to_string();
                theirs[i].push(v["seconds"].as_f64().unwrap_or(f64::NAN));
            }
            if !quiet {
                eprintln!(
                    "run {}/{runs} {step}: sluice {secs:.3} s{}",
                    run + 1,
                    theirs[i]
                        .last()
                        .map(|d| format!(", DuckDB {d:.3} s"))
                        .unwrap_or_default()
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    if !quiet {
        eprintln!(
            "answers: every dataset and loaded table gave the same {} groups of counts and sums",
            answers.rows()
        );
    }
    for (i, step) in steps.iter().enumerate() {
        let case = || serde_json::json!({"step": step});
        super::record::runs("sluice", case(), "seconds", "s", &ours[i]);
        super::record::runs("duckdb", case(), "seconds", "s", &theirs[i]);
    }
    let export = || serde_json::json!({"step": "export"});
    super::record::value("sluice", export(), "bytes", "bytes", our_bytes as f64);
    if duck.is_some() {
        super::record::value("duckdb", export(), "bytes", "bytes", their_bytes as f64);
    }
    println!(
        "parquet: lineitem SF {sf} ({rows} rows), {threads} threads, zstd, {runs} runs each, {cores} usable cores; sluice's dataset {} bytes{}",
        our_bytes,
        if duck.is_some() {
            format!(", DuckDB {version}'s {their_bytes} bytes")
        } else {
            String::new()
        }
    );
    println!(
        "{:<34} {:>10} {:>10} {:>14}",
        "step", "sluice_s", "duckdb_s", "duckdb/sluice"
    );
    let what = [
        "export to Parquet",
        "export, partitioned by l_shipmode",
        "load the Parquet dataset",
    ];
    for i in 0..steps.len() {
        let m = median(&ours[i]);
        let (d, r) = if theirs[i].is_empty() {
            ("-".to_string(), "-".to_string())
        } else {
            let d = median(&theirs[i]);
            (format!("{d:.3}"), format!("{:.2}", d / m))
        };
        println!("{:<34} {m:>10.3} {d:>10} {r:>14}", what[i]);
    }
    if duck.is_none() && !no_peers {
        println!("(duckdb not importable from python3: `pip install duckdb` to compare)");
    }
    Ok(())
}
