//! What the scenarios share: medians and percentiles, the `sluice` binary
//! and the peers (DuckDB's version), running a process for the JSON
//! summary it prints, the thread lists of the command line, and TPC-H
//! lineitem (generated, loaded into sluice, and DuckDB's table of it).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

/// The median of `v` (the mean of the middle two of an even count).
pub fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The value at fraction `p` of `sorted` (nearest rank); NaN when empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

/// The ingest benchmark's three-integer CSV of `size` in `dir`
/// (`ints-<bytes>.csv`, fixed seed), generated once.
pub fn ints_file(size: &str, dir: &Path, quiet: bool) -> Result<PathBuf> {
    use crate::generate::Limit;
    use crate::generate::ints::{self, write_ints_file};
    let bytes = crate::util::parse_size(size, "--size")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let csv = dir.join(format!("ints-{bytes}.csv"));
    if !csv.exists() {
        if !quiet {
            eprintln!("generating {} ...", csv.display());
        }
        let tmp = csv.with_extension("tmp");
        write_ints_file(&tmp, Limit::Bytes(bytes), 42, &ints::INGEST)?;
        std::fs::rename(&tmp, &csv)?;
    }
    Ok(csv)
}

/// `sluice load --json` of the ingest file into table `ints` of `db`
/// with `threads` workers, as both ingest benchmarks run it.
pub fn load_ints(exe: &Path, db: &Path, threads: usize, csv: &Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg("load")
        .arg("--db")
        .arg(db)
        .args(["--threads", &threads.to_string()])
        .args([
            "--no-header",
            "--schema",
            "a INT, b INT, c INT",
            "--json",
            "ints",
        ])
        .arg(csv);
    cmd
}

/// This binary, to run `sluice load` as a process of its own.
pub fn sluice_exe() -> Result<PathBuf> {
    std::env::current_exe().context("locating the sluice binary")
}

/// One fresh `sluice query` process over `db` (at `threads`, or the
/// default): its seconds, spawn to exit, and its peak RSS in MiB (what
/// its `--timing` says; NaN if it says none).
pub fn sluice_process(
    exe: &Path,
    db: &Path,
    threads: Option<usize>,
    memory_limit: Option<u64>,
    sql: &str,
) -> Result<(f64, f64)> {
    let start = std::time::Instant::now();
    let mut cmd = Command::new(exe);
    cmd.arg("--db").arg(db);
    if let Some(t) = threads {
        cmd.args(["--threads", &t.to_string()]);
    }
    cmd.arg("query");
    if let Some(l) = memory_limit {
        cmd.args(["--memory-limit", &l.to_string()]);
    }
    let out = cmd
        // `--` first: a query may begin with a comment (`-- TPC-DS …`),
        // which is not an option.
        .args(["--timing", "--", sql])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .context("running sluice query")?;
    let secs = start.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!("sluice query failed: {sql}\n{err}");
    }
    let mib = err
        .split("peak RSS ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|m| m.parse::<f64>().ok())
        .unwrap_or(f64::NAN);
    Ok((secs, mib))
}

/// Flushes the dirty pages of the previous run, so that its write-back
/// does not land in the next run's time.
pub fn sync() {
    let _ = Command::new("sync").status();
}

/// Python: `peak_rss()`, the process's peak RSS in bytes (VmHWM). Not
/// `ru_maxrss`: Linux keeps that across exec, so a child started by a big
/// process would report its parent's peak.
pub const PY_PEAK_RSS: &str = r#"
def peak_rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0
"#;

/// The version of DuckDB that python3 imports, if it does.
pub fn duckdb_version() -> Option<String> {
    let out = Command::new("python3")
        .args(["-c", "import duckdb; print(duckdb.__version__)"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Runs `cmd` to the end and parses the JSON summary its last line of
/// output holds.
pub fn run_json(cmd: &mut Command, what: &str) -> Result<serde_json::Value> {
    let out = cmd.output().with_context(|| format!("starting {what}"))?;
    if !out.status.success() {
        bail!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().unwrap_or("");
    serde_json::from_str(last).with_context(|| format!("{what} printed no JSON summary: {text}"))
}

/// Runs a `sluice load --json` process to the end: its wall time (start-up
/// included) and its JSON summary; `what` names it when it fails.
pub fn timed_load(cmd: &mut Command, what: &str) -> Result<(f64, serde_json::Value)> {
    let start = Instant::now();
    let out = cmd.output().context("running sluice load")?;
    let secs = start.elapsed().as_secs_f64();
    if !out.status.success() {
        bail!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let v = serde_json::from_slice(&out.stdout).context("sluice load printed no JSON summary")?;
    Ok((secs, v))
}

/// One timed run of a process that prints a JSON summary.
pub struct Measure {
    pub seconds: f64,
    /// CPU seconds (user + system) of the whole process.
    pub cpu: f64,
    pub peak_rss: u64,
}

/// The measure of a summary (`seconds`, `cpu_seconds`, `peak_rss_bytes`).
pub fn measure(v: &serde_json::Value) -> Measure {
    Measure {
        seconds: v["seconds"].as_f64().unwrap_or(f64::NAN),
        cpu: v["cpu_seconds"].as_f64().unwrap_or(f64::NAN),
        peak_rss: v["peak_rss_bytes"].as_u64().unwrap_or(0),
    }
}

/// Parses `--threads-list`: thread counts, comma separated.
pub fn parse_threads(list: &str) -> Result<Vec<usize>> {
    list.split(',')
        .map(|t| {
            t.trim()
                .parse::<usize>()
                .with_context(|| format!("--threads-list: {t:?} is not a number"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_percentiles() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        let sorted = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(percentile(&sorted, 0.5), 3.0);
        assert_eq!(percentile(&sorted, 0.99), 5.0);
        assert!(percentile(&[], 0.5).is_nan());
    }
}

/// Python that defines `lineitem(con, csv)`: DuckDB's table of the TPC-H
/// lineitem CSV, with the types sluice loads it with.
pub const DUCKDB_LINEITEM: &str = r#"
def lineitem(con, csv):
    con.execute("SET enable_progress_bar = false")
    cols = {"l_orderkey": "BIGINT", "l_partkey": "BIGINT", "l_suppkey": "BIGINT", "l_linenumber": "INTEGER",
            "l_quantity": "DECIMAL(15,2)", "l_extendedprice": "DECIMAL(15,2)", "l_discount": "DECIMAL(15,2)",
            "l_tax": "DECIMAL(15,2)", "l_returnflag": "VARCHAR", "l_linestatus": "VARCHAR", "l_shipdate": "DATE",
            "l_commitdate": "DATE", "l_receiptdate": "DATE", "l_shipinstruct": "VARCHAR", "l_shipmode": "VARCHAR",
            "l_comment": "VARCHAR"}
    con.execute("CREATE TABLE lineitem AS SELECT * FROM read_csv(?, header=true, columns=?)", [csv, cols])
    con.execute("CHECKPOINT")
"#;

/// TPC-H lineitem's CSV at scale factor `sf` in `dir`
/// (`tpch-sf<sf>/lineitem.csv`, generated once).
pub fn lineitem_csv(sf: f64, dir: &Path, quiet: bool) -> Result<PathBuf> {
    let data = dir.join(format!("tpch-sf{sf}"));
    std::fs::create_dir_all(&data).with_context(|| format!("creating {}", data.display()))?;
    let csv = data.join("lineitem.csv");
    if !csv.exists() {
        if !quiet {
            eprintln!("generating lineitem at SF {sf} ...");
        }
        crate::generate::tpch::write_table(&data, "lineitem", sf, sluice::exec::usable_cores())?;
    }
    Ok(csv)
}

/// TPC-H lineitem at scale factor `sf` in `dir`: its CSV
/// (`tpch-sf<sf>/lineitem.csv`, generated once) and the sluice database
/// holding it (`q1-sf<sf>.db`, loaded once); returns both and the rows.
pub fn lineitem(sf: f64, dir: &Path, quiet: bool) -> Result<(PathBuf, PathBuf, u64)> {
    let csv = lineitem_csv(sf, dir, quiet)?;
    let db_dir = dir.join(format!("q1-sf{sf}.db"));
    let mut db = sluice::store::Database::open_writer(&db_dir)?;
    if db.table("lineitem").is_none() {
        if !quiet {
            eprintln!("loading lineitem into {} ...", db_dir.display());
        }
        let opts = sluice::load::LoadOptions {
            schema: Some(
                crate::generate::tpch::schema("lineitem")
                    .unwrap_or_default()
                    .parse()?,
            ),
            header: sluice::load::Header::Yes,
            ..Default::default()
        };
        sluice::load::load(
            &mut db,
            "lineitem",
            &[sluice::source::Input::File(csv.clone())],
            &opts,
        )?;
    }
    drop(db);
    let rows = sluice::store::Database::open(&db_dir)?
        .table("lineitem")
        .map_or(0, |t| t.rows());
    Ok((csv, db_dir, rows))
}
