//! `sluice bench distributed`: the secondary-index benchmark's TSV files
//! to a Parquet dataset, on the same cores:
//! - `sluice.spark.load` (sluice as the per-task engine of Spark's
//!   executors, pyspark in local mode) against Spark's own
//!   `spark.read.csv(...).write.parquet(...)` (the same schema given, the
//!   same zstd), interleaved run by run in one Spark session (its start
//!   not timed);
//! - the same with a key checked unique and 8 buckets (work Spark's own
//!   path does not do);
//! - `sluice.dask.load` on a LocalCluster of as many single-thread
//!   workers as cores, and `sluice convert` alone, for scale;
//! - `sluice load` of the bucketed dataset into 8 shards, a bucket a
//!   shard, beside the same rows converted without buckets and hashed
//!   into 8 shards by the load.
//!
//! Every dataset's row count is checked against the input's, and its
//! answer (rows, sums, extremes, distinct keys) against the first
//! dataset's, Spark's and Dask's runs alike, before any time is reported.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::common::{median, sluice_exe, sync};
use crate::generate::objects::{UNKEYED_SCHEMA, object_files};

/// The Python side: `spark` times the Spark runs, `dask` the Dask runs,
/// each printing one JSON object of lists of seconds.
const PY_SCRIPT: &str = r#"
import json, os, shutil, sys, time
mode, data, work, cores, runs, rows, schema = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
import sluice
out = {}
def timed(name, f, target):
    shutil.rmtree(target, ignore_errors=True)
    t = time.perf_counter()
    f()
    out.setdefault(name, []).append(time.perf_counter() - t)
def count(target):
    # Every dataset's answer (rows, sums, extremes, distinct keys) checked
    # against the first's, and its rows against the input's.
    import pyarrow.parquet as pq, pyarrow.compute as pc
    tbl = pq.ParquetDataset(target).read(columns=["source_id", "chunkId", "subChunkId"])
    n = tbl.num_rows
    if n != rows:
        raise SystemExit(f"{target}: {n} rows, expected {rows} — no time is reported for a wrong answer")
    answer = [str(x) for x in (n, pc.sum(tbl["chunkId"]).as_py(), pc.sum(tbl["subChunkId"]).as_py(),
                               pc.min(tbl["source_id"]).as_py(), pc.max(tbl["source_id"]).as_py(),
                               pc.count_distinct(tbl["source_id"]).as_py())]
    first = out.setdefault("answer", {"row": answer, "from": os.path.basename(target)})
    if first["row"] != answer:
        raise SystemExit(f"{target}: answered {answer}, {first['from']} {first['row']} — no time is reported for a wrong answer")
    shutil.rmtree(target, ignore_errors=True)
common = dict(tsv=True, header=False, schema=schema)
if mode == "spark":
    from pyspark.sql import SparkSession
    import sluice.spark
    spark = (SparkSession.builder.master(f"local[{cores}]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "4g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    out["spark"] = spark.version
    ddl = ", ".join(f"{n} {'STRING' if t == 'TEXT' else t}" for n, t in (c.strip().split() for c in schema.split(",")))
    for r in range(runs):
        t = os.path.join(work, "spark-own")
        timed("spark_own", lambda: spark.read.csv(data, sep="\t", schema=ddl).write.option("compression", "zstd").parquet(t), t)
        count(t)
        t = os.path.join(work, "spark-sluice")
        timed("spark_sluice", lambda: sluice.spark.load(spark, data, t, **common), t)
        count(t)
        t = os.path.join(work, "spark-sluice-key")
        timed("spark_sluice_key", lambda: sluice.spark.load(spark, data, t, key="source_id", buckets=8, **common), t)
        count(t)
        print(f"run {r + 1}/{runs}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in out.items() if isinstance(v, list)), file=sys.stderr)
    spark.stop()
else:
    from dask.distributed import Client, LocalCluster
    import dask, sluice.dask
    cluster = LocalCluster(n_workers=cores, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    out["dask"] = dask.__version__
    for r in range(runs):
        t = os.path.join(work, "dask-sluice")
        timed("dask_sluice", lambda: sluice.dask.load(data, t, client=client, **common), t)
        count(t)
        t = os.path.join(work, "dask-sluice-key")
        timed("dask_sluice_key", lambda: sluice.dask.load(data, t, client=client, key="source_id", buckets=8, **common), t)
        count(t)
    client.close()
    cluster.close()
print(json.dumps(out))
"#;

fn python_has(module: &str) -> bool {
    Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn run_py(mode: &str, args: &[String]) -> Result<serde_json::Value> {
    let out = Command::new("python3")
        .args(["-c", PY_SCRIPT, mode])
        .args(args)
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("running python3")?;
    if !out.status.success() {
        bail!("the {mode} runs failed (exit {:?})", out.status.code());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().unwrap_or("");
    serde_json::from_str(last).with_context(|| format!("reading the {mode} runs' output: {last}"))
}

/// Runs the comparisons and prints a table of medians.
pub fn run(files: usize, rows: u64, runs: usize, dir: &Path, quiet: bool) -> Result<()> {
    let runs = runs.max(1);
    let cores = sluice::exec::usable_cores();
    if !python_has("sluice.spark") {
        bail!(
            "python3 cannot import sluice; install it first: pip install ./crates/sluice-python pyarrow"
        );
    }
    let data = dir.join(format!("secondary-{files}x{rows}"));
    let (_, bytes) = object_files(&data, files, rows, quiet)?;
    let total = files as u64 * rows;
    let work = dir.join("bench-distributed");
    std::fs::create_dir_all(&work)?;
    sync();
    let exe = sluice_exe()?;
    // sluice convert alone, keyed and bucketed, for scale.
    let convert = |target: &Path, buckets: &[&str]| -> Result<f64> {
        let _ = std::fs::remove_dir_all(target);
        let start = Instant::now();
        let o = Command::new(&exe)
            .args([
                "convert",
                "-q",
                "--tsv",
                "--no-header",
                "--schema",
                UNKEYED_SCHEMA,
            ])
            .args(["--key", "source_id"])
            .args(buckets)
            .arg("--output")
            .arg(target)
            .arg(&data)
            .output()?;
        if !o.status.success() {
            bail!(
                "sluice convert failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        Ok(start.elapsed().as_secs_f64())
    };
    let bucketed = work.join("cli");
    let mut cli = Vec::new();
    for _ in 0..runs {
        cli.push(convert(&bucketed, &["--buckets", "8"])?);
    }
    // The dataset loaded back into a table of 8 shards: the bucketed one
    // a bucket a shard (no row hashed), beside the same rows converted
    // without buckets and hashed into 8 shards by the load; interleaved.
    let plain = work.join("cli-plain");
    convert(&plain, &[])?;
    let (mut back_direct, mut back_hashed) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        for (ds, shards, out) in [
            (&bucketed, None, &mut back_direct),
            (&plain, Some("8"), &mut back_hashed),
        ] {
            let db = work.join("back.db");
            let _ = std::fs::remove_dir_all(&db);
            sync();
            let mut cmd = Command::new(&exe);
            cmd.arg("--db")
                .arg(&db)
                .args(["load", "--json", "t"])
                .arg(ds);
            if let Some(n) = shards {
                cmd.args(["--shards", n]);
            }
            let start = Instant::now();
            let o = cmd.output()?;
            let secs = start.elapsed().as_secs_f64();
            if !o.status.success() {
                bail!("sluice load failed: {}", String::from_utf8_lossy(&o.stderr));
            }
            let v: serde_json::Value =
                serde_json::from_slice(&o.stdout).context("reading sluice load --json")?;
            if v["rows"].as_u64() != Some(files as u64 * rows) {
                bail!("{}: loaded {} rows", ds.display(), v["rows"]);
            }
            let placed = v["files_by_bucket"].as_u64().unwrap_or(0);
            if (shards.is_none() && placed == 0) || (shards.is_some() && placed > 0) {
                bail!("{}: {placed} files placed by bucket", ds.display());
            }
            out.push(secs);
        }
    }
    let _ = std::fs::remove_dir_all(work.join("back.db"));
    let _ = std::fs::remove_dir_all(&bucketed);
    let _ = std::fs::remove_dir_all(&plain);
    let args = [
        data.display().to_string(),
        work.display().to_string(),
        cores.to_string(),
        runs.to_string(),
        total.to_string(),
        UNKEYED_SCHEMA.to_string(),
    ];
    let spark = if python_has("pyspark") {
        Some(run_py("spark", &args)?)
    } else {
        if !quiet {
            eprintln!(
                "distributed: pyspark not importable: the Spark rows are left out (pip install pyspark; a JDK)"
            );
        }
        None
    };
    let dask = if python_has("dask.distributed") {
        Some(run_py("dask", &args)?)
    } else {
        if !quiet {
            eprintln!(
                "distributed: dask.distributed not importable: the Dask rows are left out (pip install \"dask[distributed]\")"
            );
        }
        None
    };
    let _ = std::fs::remove_dir_all(&work);
    // Spark's datasets and Dask's answered alike (each process checked its
    // own against its first).
    let mut answers = super::answers::Agreement::new(
        "distributed: each dataset's rows, sums, extremes and distinct keys",
    );
    for (who, v) in [("Spark's runs", &spark), ("Dask's runs", &dask)] {
        if let Some(a) = v
            .as_ref()
            .map(|v| &v["answer"]["row"])
            .filter(|a| !a.is_null())
        {
            answers.add(who, super::answers::json_rows(&serde_json::json!([a]))?)?;
        }
    }
    let floats = |v: &Option<serde_json::Value>, k: &str| -> Vec<f64> {
        v.as_ref()
            .and_then(|v| v[k].as_array())
            .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
            .unwrap_or_default()
    };
    let spark_own = floats(&spark, "spark_own");
    let spark_sluice = floats(&spark, "spark_sluice");
    let spark_key = floats(&spark, "spark_sluice_key");
    let dask_sluice = floats(&dask, "dask_sluice");
    let dask_key = floats(&dask, "dask_sluice_key");
    let step = |s: &str| serde_json::json!({"step": s, "bytes": bytes, "rows": total});
    super::record::runs(
        "sluice",
        step("convert, key, 8 buckets"),
        "seconds",
        "s",
        &cli,
    );
    super::record::runs(
        "sluice",
        step("load back, a bucket a shard"),
        "seconds",
        "s",
        &back_direct,
    );
    super::record::runs(
        "sluice",
        step("load back, hashed into 8 shards"),
        "seconds",
        "s",
        &back_hashed,
    );
    super::record::runs("spark", step("csv to parquet"), "seconds", "s", &spark_own);
    super::record::runs(
        "sluice-in-spark",
        step("csv to parquet"),
        "seconds",
        "s",
        &spark_sluice,
    );
    super::record::runs(
        "sluice-in-spark",
        step("key, 8 buckets"),
        "seconds",
        "s",
        &spark_key,
    );
    super::record::runs(
        "sluice-in-dask",
        step("csv to parquet"),
        "seconds",
        "s",
        &dask_sluice,
    );
    super::record::runs(
        "sluice-in-dask",
        step("key, 8 buckets"),
        "seconds",
        "s",
        &dask_key,
    );
    println!(
        "distributed: {files} TSV files, {total} rows, {bytes} bytes, {cores} cores, {runs} runs each; Spark {}, Dask {}",
        spark
            .as_ref()
            .and_then(|v| v["spark"].as_str())
            .unwrap_or("-"),
        dask.as_ref()
            .and_then(|v| v["dask"].as_str())
            .unwrap_or("-"),
    );
    println!(
        "{:<52} {:>10} {:>8} {:>14}",
        "load", "median_s", "MB/s", "vs_spark_own"
    );
    let base = (!spark_own.is_empty()).then(|| median(&spark_own));
    let line = |what: &str, v: &[f64]| {
        if v.is_empty() {
            return;
        }
        let m = median(v);
        let ratio = base
            .map(|b| format!("{:.2}x", b / m))
            .unwrap_or_else(|| "-".into());
        println!(
            "{what:<52} {m:>10.2} {:>8.1} {ratio:>14}",
            bytes as f64 / 1e6 / m
        );
    };
    line("Spark: spark.read.csv(...).write.parquet(...)", &spark_own);
    line("sluice.spark.load", &spark_sluice);
    line("sluice.spark.load, key checked, 8 buckets", &spark_key);
    line("sluice.dask.load", &dask_sluice);
    line("sluice.dask.load, key checked, 8 buckets", &dask_key);
    line("sluice convert (one process), key, 8 buckets", &cli);
    if !back_direct.is_empty() {
        let (d, h) = (median(&back_direct), median(&back_hashed));
        println!(
            "sluice load of the dataset into 8 shards: {d:.2} s a bucket a shard, {h:.2} s hashed (the same rows, not bucketed): {:.2}x",
            h / d
        );
    }
    Ok(())
}
