//! `sluice bench python`: the Python package (`import sluice`) against
//! the library and the command line, in the same run:
//! - TPC-H Q1 through `db.query` against the same query through the
//!   library in this process (warm, the same thread count);
//! - `SELECT * FROM lineitem` into a pyarrow Table through the PyCapsule
//!   export against DuckDB's `con.sql(...).arrow()` of the same table (both
//!   in one Python process, interleaved);
//! - `db.load` of the ingest benchmark's file against `sluice load`
//!   (each a process of its own, interleaved; the load's own time).
//!
//! Before any time is reported, the answers are checked: Q1 from Python,
//! the library and DuckDB; a summary of the exported Arrow table (rows,
//! sums, extremes, counts) from sluice and DuckDB; each load's table.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::common::{
    DUCKDB_LINEITEM, duckdb_version, ints_file, lineitem, load_ints, median, run_json, sluice_exe,
    sync,
};

const Q1: &str = include_str!("../../tests/expected/tpch/q1.sql");

/// The Python side: `query` times Q1 and the full-table export (and
/// DuckDB's, when a DuckDB database is given); `load` times one load.
/// Appended to [`DUCKDB_LINEITEM`].
const PY_SCRIPT: &str = r#"
import json, sys, time
import sluice
mode = sys.argv[1]
if mode == "query":
    db_dir, q1, threads, runs, duck_db, csv = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7]
    db = sluice.connect(db_dir, threads=threads)
    out = {"q1": [], "arrow": [], "duck_arrow": [], "sluice": sluice.__version__}
    assert db.query(q1).num_rows == 4
    out["q1_rows"] = [[None if v is None else str(v) for v in r.values()]
                      for r in db.query(q1).to_arrow().to_pylist()]
    for _ in range(runs):
        t = time.perf_counter()
        r = db.query(q1)
        out["q1"].append(time.perf_counter() - t)
    star = "SELECT * FROM lineitem"
    rows = db.query(star).to_arrow().num_rows
    con = None
    if duck_db:
        import duckdb, os
        fresh = not os.path.exists(duck_db)
        con = duckdb.connect(duck_db)
        if fresh:
            lineitem(con, csv)
        con.execute(f"SET threads={threads}")
        out["duckdb"] = duckdb.__version__
        def duck_table():
            x = con.sql(star).arrow()
            return x.read_all() if hasattr(x, "read_all") else x
        assert duck_table().num_rows == rows
        out["duck_q1_rows"] = rows_of(con, q1)
    import pyarrow.compute as pc
    def summary(tbl):
        # The exported table's answer: rows, sums, extremes and counts.
        return [[str(tbl.num_rows)] + [None if v is None else str(v) for v in (
            pc.sum(tbl["l_quantity"]).as_py(), pc.sum(tbl["l_extendedprice"]).as_py(),
            pc.sum(tbl["l_orderkey"]).as_py(), pc.min(tbl["l_shipdate"]).as_py(),
            pc.max(tbl["l_receiptdate"]).as_py(), pc.count(tbl["l_comment"]).as_py(),
            pc.count_distinct(tbl["l_shipmode"]).as_py())]]
    out["arrow_answer"] = summary(db.query(star).to_arrow())
    if con is not None:
        out["duck_arrow_answer"] = summary(duck_table())
    for _ in range(runs):
        t = time.perf_counter()
        tbl = db.query(star).to_arrow()
        out["arrow"].append(time.perf_counter() - t)
        assert tbl.num_rows == rows
        del tbl
        if con is not None:
            t = time.perf_counter()
            tbl = duck_table()
            out["duck_arrow"].append(time.perf_counter() - t)
            del tbl
    out["rows"] = rows
    print(json.dumps(out))
else:
    db_dir, csv, threads = sys.argv[2], sys.argv[3], int(sys.argv[4])
    db = sluice.connect(db_dir, threads=threads)
    s = db.load("ints", csv, schema="a INT, b INT, c INT", header=False, progress=False)
    print(json.dumps({"seconds": s.seconds, "rows": s.rows}))
"#;

/// The question both loads of the ingest file answer alike.
const LOAD_CHECK: &str = "SELECT count(*), sum(a), sum(b), sum(c), min(a), max(c) FROM {t}";

/// Runs the three comparisons and prints a table of medians.
#[allow(clippy::too_many_arguments)]
pub fn run(
    sf: f64,
    size: &str,
    threads: Option<usize>,
    runs: usize,
    dir: &Path,
    no_peers: bool,
    quiet: bool,
) -> Result<()> {
    let runs = runs.max(1);
    let cores = sluice::exec::usable_cores();
    let threads = threads.unwrap_or(cores).max(1);
    let probe = Command::new("python3")
        .args(["-c", "import sluice, pyarrow; print(sluice.__version__)"])
        .output()
        .context("running python3")?;
    if !probe.status.success() {
        bail!(
            "python3 cannot import sluice and pyarrow ({}); install them first: pip install ./crates/sluice-python pyarrow",
            String::from_utf8_lossy(&probe.stderr)
                .trim()
                .lines()
                .last()
                .unwrap_or("")
        );
    }
    let script = format!(
        "{DUCKDB_LINEITEM}{}{PY_SCRIPT}",
        super::answers::DUCKDB_ROWS.replace("def rows(", "def rows_of(")
    );

    // Q1 and the full-table export.
    let (csv, db_dir, _) = lineitem(sf, dir, quiet)?;
    let duck = if no_peers { None } else { duckdb_version() };
    let duck_db = dir.join(format!("q1-sf{sf}.duckdb"));
    let db = sluice::store::Database::open(&db_dir)?;
    sluice::query::query(&db, Q1, Some(threads))?;
    let mut rust_q1 = Vec::new();
    let time_rust = |n: usize, into: &mut Vec<f64>| -> Result<()> {
        for _ in 0..n {
            let start = std::time::Instant::now();
            let r = sluice::query::query(&db, Q1, Some(threads))?;
            into.push(start.elapsed().as_secs_f64());
            if r.batches.iter().map(|b| b.num_rows()).sum::<usize>() != 4 {
                bail!("Q1 returned an unexpected number of groups");
            }
        }
        Ok(())
    };
    // The library before and after the Python process, so that drift of
    // the machine hits both alike.
    time_rust(runs.div_ceil(2), &mut rust_q1)?;
    if !quiet {
        eprintln!("python: Q1 and SELECT * FROM lineitem, {runs} runs ...");
    }
    let py = run_json(
        Command::new("python3")
            .args(["-c", &script, "query"])
            .arg(&db_dir)
            .arg(Q1)
            .arg(threads.to_string())
            .arg(runs.to_string())
            .arg(if duck.is_some() {
                duck_db.as_os_str()
            } else {
                "".as_ref()
            })
            .arg(&csv),
        "python3 (import sluice)",
    )?;
    time_rust(runs / 2, &mut rust_q1)?;
    // Answers before times: Q1 through Python, the library and DuckDB;
    // the exported table's summary from sluice and DuckDB.
    let mut q1 = super::answers::Agreement::new("python: TPC-H Q1");
    q1.add(
        "the library",
        super::answers::sluice_rows(&sluice::query::query(&db, Q1, Some(threads))?),
    )?;
    q1.add(
        "db.query",
        super::answers::json_rows(&py["q1_rows"]).context("the Python Q1 answer")?,
    )?;
    if !py["duck_q1_rows"].is_null() {
        q1.add("duckdb", super::answers::json_rows(&py["duck_q1_rows"])?)?;
    }
    let mut arrow = super::answers::Agreement::new(
        "python: SELECT * FROM lineitem's rows, sums, extremes and counts",
    );
    arrow.add(
        "sluice .to_arrow()",
        super::answers::json_rows(&py["arrow_answer"])?,
    )?;
    if !py["duck_arrow_answer"].is_null() {
        arrow.add(
            "duckdb .arrow()",
            super::answers::json_rows(&py["duck_arrow_answer"])?,
        )?;
    }
    drop(db);
    let floats = |k: &str| -> Vec<f64> {
        py[k]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_f64()).collect())
            .unwrap_or_default()
    };
    let (py_q1, py_arrow, duck_arrow) = (floats("q1"), floats("arrow"), floats("duck_arrow"));
    let rows = py["rows"].as_u64().unwrap_or(0);

    // The ingest file, loaded by `sluice load` and by `db.load`.
    let ints_csv = ints_file(size, dir, quiet)?;
    let file_bytes = std::fs::metadata(&ints_csv)?.len();
    let exe = sluice_exe()?;
    let (mut cli_load, mut py_load) = (Vec::new(), Vec::new());
    let mut loads = super::answers::Agreement::new(format!("python: {LOAD_CHECK}"));
    for run in 0..runs {
        for python in [false, true] {
            let target = dir.join(format!("bench-python-load-{}.db", std::process::id()));
            let _ = std::fs::remove_dir_all(&target);
            sync();
            let (v, table) = if python {
                let v = run_json(
                    Command::new("python3")
                        .args(["-c", &script, "load"])
                        .arg(&target)
                        .arg(&ints_csv)
                        .arg(threads.to_string()),
                    "python3 db.load",
                )?;
                (v, "ints")
            } else {
                let v = run_json(
                    &mut load_ints(&exe, &target, threads, &ints_csv),
                    "sluice load",
                )?;
                (v, "ints")
            };
            loads.add(
                &format!(
                    "{} run {}",
                    if python { "db.load" } else { "sluice load" },
                    run + 1
                ),
                super::answers::sluice_answer(&target, &LOAD_CHECK.replace("{t}", table))?,
            )?;
            let _ = std::fs::remove_dir_all(&target);
            let s = v["seconds"].as_f64().unwrap_or(f64::NAN);
            if !quiet {
                eprintln!(
                    "load run {}/{runs}: {} {s:.3} s",
                    run + 1,
                    if python { "db.load    " } else { "sluice load" }
                );
            }
            if python {
                py_load.push(s);
            } else {
                cli_load.push(s);
            }
        }
    }

    let step = |s: &str| serde_json::json!({"step": s});
    super::record::runs("library", step("q1"), "seconds", "s", &rust_q1);
    super::record::runs("python", step("q1"), "seconds", "s", &py_q1);
    let arrow = || step("select * to arrow");
    super::record::runs("python", arrow(), "seconds", "s", &py_arrow);
    super::record::runs("duckdb", arrow(), "seconds", "s", &duck_arrow);
    let load = || serde_json::json!({"step": "load", "bytes": file_bytes});
    super::record::runs("cli", load(), "seconds", "s", &cli_load);
    super::record::runs("python", load(), "seconds", "s", &py_load);
    println!(
        "python: sluice {} from python3, {threads} threads, {runs} runs each, {cores} usable cores; lineitem SF {sf} ({rows} rows), ingest file {} ({file_bytes} bytes)",
        py["sluice"].as_str().unwrap_or("?"),
        ints_csv.display()
    );
    println!(
        "{:<44} {:>10} {:>10} {:>8}",
        "what", "median_s", "vs_median", "ratio"
    );
    let line = |what: &str, v: &[f64], base: Option<(&str, &[f64])>| {
        let m = median(v);
        let (name, ratio) = match base {
            Some((n, b)) if !b.is_empty() => (n.to_string(), format!("{:.3}", m / median(b))),
            _ => ("-".into(), "-".into()),
        };
        println!("{what:<44} {m:>10.4} {name:>10} {ratio:>8}");
    };
    line("Q1, library (Rust)", &rust_q1, None);
    line("Q1, db.query (Python)", &py_q1, Some(("Rust", &rust_q1)));
    line(
        "SELECT * FROM lineitem .to_arrow() (sluice)",
        &py_arrow,
        None,
    );
    if !duck_arrow.is_empty() {
        line(
            &format!(
                "SELECT * FROM lineitem .arrow() (duckdb {})",
                py["duckdb"].as_str().unwrap_or("?")
            ),
            &duck_arrow,
            Some(("sluice", &py_arrow)),
        );
    } else if !no_peers {
        println!("(duckdb not importable from python3: `pip install duckdb` to compare)");
    }
    line("load ingest file, sluice load (CLI)", &cli_load, None);
    line(
        "load ingest file, db.load (Python)",
        &py_load,
        Some(("CLI", &cli_load)),
    );
    Ok(())
}
