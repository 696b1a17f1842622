//! `sluice bench tpch`: the 22 TPC-H queries over the eight tables,
//! warm, through the library; DuckDB runs the same queries over the same
//! CSV files in the same run when python3 imports it, and every answer is
//! compared with DuckDB's before any time is reported. The runner of
//! `bench windows` (over the TPC-H tables) and `bench tpcds` too.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use super::common::{median, run_json, sluice_exe, sluice_process};

/// Generated tables a suite's queries read.
pub struct Dataset {
    /// Its name: the data goes in `DIR/<name>-sf<sf>/`, the databases in
    /// `DIR/<name>-sf<sf>.db` and `.duckdb`.
    pub name: &'static str,
    pub tables: &'static [&'static str],
    /// A table's `--schema`.
    pub schema: fn(&str) -> Option<String>,
    /// Writes `dir/<table>.csv` at a scale factor on some workers.
    pub write: fn(&Path, &str, f64, usize) -> Result<(std::path::PathBuf, u64)>,
}

/// The eight TPC-H tables.
pub const TPCH_DATA: Dataset = Dataset {
    name: "tpch",
    tables: &crate::generate::tpch::TABLES,
    schema: |t| crate::generate::tpch::schema(t).map(str::to_string),
    write: crate::generate::tpch::write_table,
};

/// The 24 TPC-DS tables.
pub const TPCDS_DATA: Dataset = Dataset {
    name: "tpcds",
    tables: &crate::generate::tpcds::TABLES,
    schema: crate::generate::tpcds::schema,
    write: crate::generate::tpcds::write_table,
};

/// A set of queries over a dataset's tables.
pub struct Suite {
    /// The scenario's name (`sluice bench NAME`).
    pub name: &'static str,
    /// What the queries are, for the table's title.
    pub title: &'static str,
    /// Before a query's number in the table (`Q1`, `W1`), when the
    /// queries have no `labels`.
    pub prefix: &'static str,
    /// The queries' names (`q14a`), if not the prefix and a number.
    pub labels: Option<&'static [&'static str]>,
    pub queries: &'static [&'static str],
    pub data: &'static Dataset,
    /// Whether a query sluice refuses or answers unlike DuckDB fails the
    /// run (else it is listed and not timed, and the others go on).
    pub strict: bool,
    /// The runs timed when `--mode` is not given.
    pub mode: Mode,
}

impl Suite {
    /// The name of query `q` (1-based).
    fn label(&self, q: usize) -> String {
        match self.labels {
            Some(l) => l[q - 1].to_string(),
            None => format!("{}{q}", self.prefix),
        }
    }
}

/// The 22 TPC-H queries.
pub const TPCH: Suite = Suite {
    name: "tpch",
    title: "TPC-H",
    prefix: "Q",
    labels: None,
    queries: &QUERIES,
    data: &TPCH_DATA,
    strict: true,
    mode: Mode::Both,
};

/// Window functions over the TPC-H tables (see [`super::windows`]).
pub const WINDOWS: Suite = Suite {
    name: "windows",
    title: "window queries over TPC-H",
    prefix: "W",
    labels: None,
    queries: &super::windows::QUERIES,
    data: &TPCH_DATA,
    strict: true,
    mode: Mode::Warm,
};

/// One query of each operator that holds rows, over the TPC-H tables,
/// each with a small answer (see [`SPILL_QUERIES`]): run with
/// `--memory-limit` below their needs, they show which operators spill.
pub const SPILL: Suite = Suite {
    name: "spill",
    title: "operators past the memory limit over TPC-H",
    prefix: "S",
    labels: None,
    queries: &SPILL_QUERIES,
    data: &TPCH_DATA,
    strict: true,
    mode: Mode::Both,
};

/// The queries of `bench spill`: groupings of many groups (S1-S4), a
/// self-join (S5), a top-k of half the rows (S6), a window by partition
/// over every row (S7), a sort of every row (S8), a window of one
/// partition, every row (S9).
pub const SPILL_QUERIES: [&str; 9] = [
    // S1: GROUP BY l_orderkey (1.5 M groups at SF 1), TPC-H Q18's inner query.
    "SELECT count(*), sum(q) FROM (SELECT l_orderkey, sum(l_quantity) AS q FROM lineitem GROUP BY l_orderkey HAVING sum(l_quantity) > 300) x",
    // S2: two keys, 800 K groups, several aggregates.
    "SELECT count(*), sum(n), sum(p) FROM (SELECT l_partkey, l_suppkey, count(*) AS n, sum(l_extendedprice) AS p, max(l_shipdate) AS d FROM lineitem GROUP BY l_partkey, l_suppkey HAVING count(*) > 7) x",
    // S3: DISTINCT and text states per order.
    "SELECT count(*), max(m) FROM (SELECT l_orderkey, count(DISTINCT l_suppkey) AS s, max(l_comment) AS m FROM lineitem GROUP BY l_orderkey HAVING count(DISTINCT l_suppkey) = 7) x",
    // S4: TPC-H Q18 whole.
    include_str!("../../tests/expected/tpch/q18.sql"),
    // S5: lineitem joined with itself on l_orderkey.
    "SELECT count(*), sum(a.l_quantity * b.l_quantity) FROM lineitem a JOIN lineitem b ON a.l_orderkey = b.l_orderkey",
    // S6: every line sorted (a top-k of half the rows).
    "SELECT count(*), sum(l_quantity) FROM (SELECT l_quantity FROM lineitem ORDER BY l_extendedprice DESC, l_orderkey, l_linenumber LIMIT 3000000) x",
    // S7: a window over every line.
    "SELECT max(r), count(*) FROM (SELECT rank() OVER (PARTITION BY l_suppkey ORDER BY l_extendedprice) AS r FROM lineitem) x",
    // S8: every line sorted (a LIMIT past the table).
    "SELECT max(l_orderkey), count(*), sum(l_quantity) FROM (SELECT l_orderkey, l_quantity FROM lineitem ORDER BY l_shipdate, l_orderkey, l_linenumber LIMIT 1000000000) x",
    // S9: a window without PARTITION BY: every line one partition.
    "SELECT max(r), count(*) FROM (SELECT row_number() OVER (ORDER BY l_extendedprice, l_orderkey, l_linenumber) AS r FROM lineitem) x",
];

/// The 99 TPC-DS queries (see [`super::tpcds`]).
pub const TPCDS: Suite = Suite {
    name: "tpcds",
    title: "TPC-DS",
    prefix: "",
    labels: Some(&super::tpcds::LABELS),
    queries: &super::tpcds::QUERIES,
    data: &TPCDS_DATA,
    strict: false,
    mode: Mode::Warm,
};

/// The query texts (the same the correctness test checks at SF 0.01).
pub const QUERIES: [&str; 22] = [
    include_str!("../../tests/expected/tpch/q1.sql"),
    include_str!("../../tests/expected/tpch/q2.sql"),
    include_str!("../../tests/expected/tpch/q3.sql"),
    include_str!("../../tests/expected/tpch/q4.sql"),
    include_str!("../../tests/expected/tpch/q5.sql"),
    include_str!("../../tests/expected/tpch/q6.sql"),
    include_str!("../../tests/expected/tpch/q7.sql"),
    include_str!("../../tests/expected/tpch/q8.sql"),
    include_str!("../../tests/expected/tpch/q9.sql"),
    include_str!("../../tests/expected/tpch/q10.sql"),
    include_str!("../../tests/expected/tpch/q11.sql"),
    include_str!("../../tests/expected/tpch/q12.sql"),
    include_str!("../../tests/expected/tpch/q13.sql"),
    include_str!("../../tests/expected/tpch/q14.sql"),
    include_str!("../../tests/expected/tpch/q15.sql"),
    include_str!("../../tests/expected/tpch/q16.sql"),
    include_str!("../../tests/expected/tpch/q17.sql"),
    include_str!("../../tests/expected/tpch/q18.sql"),
    include_str!("../../tests/expected/tpch/q19.sql"),
    include_str!("../../tests/expected/tpch/q20.sql"),
    include_str!("../../tests/expected/tpch/q21.sql"),
    include_str!("../../tests/expected/tpch/q22.sql"),
];

/// Python: `config(threads)`, a DuckDB connection's configuration: its
/// threads, and the memory limit and spill directory of `--memory-limit`
/// (from the environment: `SLUICE_BENCH_MEMORY_LIMIT` in bytes,
/// `SLUICE_BENCH_TEMP_DIR`), so that DuckDB runs under the limit sluice
/// runs under.
const DUCKDB_CONFIG: &str = r#"
import os
def config(threads):
    c = {"threads": threads}
    limit = os.environ.get("SLUICE_BENCH_MEMORY_LIMIT")
    if limit:
        c["memory_limit"] = f"{int(limit) // 1024}KiB"
        c["temp_directory"] = os.environ["SLUICE_BENCH_TEMP_DIR"]
    return c
"#;

/// Python: DuckDB's database of the suite's CSV files with sluice's types
/// (made once, under another name until it is complete), then, on one
/// read-only connection kept open (warm), a query's rows or one timed run
/// for each request read from stdin: `rows Q` prints the rows (or the
/// error) as JSON, `warm Q` the seconds of one run.
const DUCKDB_WARM_SCRIPT: &str = r#"
import duckdb, json, os, sys, time
db, data, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
schemas = json.loads(sys.argv[4])
# The queries: a file's JSON (a hundred texts exceed an argument's limit).
queries = json.load(open(sys.argv[5]))
if not os.path.exists(db):
    part = db + ".part"
    for f in (part, part + ".wal"):
        if os.path.exists(f):
            os.remove(f)
    con = duckdb.connect(part)
    con.execute("SET enable_progress_bar = false")
    for t, cols in schemas.items():
        con.execute(f"CREATE TABLE {t} AS SELECT * FROM read_csv(?, header=true, columns=?)", [f"{data}/{t}.csv", dict(cols)])
    con.execute("CHECKPOINT")
    con.close()
    os.replace(part, db)
con = duckdb.connect(db, read_only=True, config=config(threads))
con.execute("SET enable_progress_bar = false")
print("ready", json.dumps(duckdb.__version__), flush=True)
for line in sys.stdin:
    what, q = line.split()
    if what == "rows":
        try:
            print(json.dumps({"rows": rows(con, queries[q])}), flush=True)
        except Exception as e:
            print(json.dumps({"error": str(e)}), flush=True)
    else:
        start = time.perf_counter()
        con.execute(queries[q]).fetchall()
        print(time.perf_counter() - start, flush=True)
"#;

/// Python: one cold run of a query in a fresh process: a fresh read-only
/// connection to DuckDB's database, timed from connect to the last row
/// fetched (the interpreter's start and `import duckdb` are not counted),
/// and the process's peak RSS, with its RSS before the connection (the
/// interpreter and the module) beside it.
const DUCKDB_COLD_SCRIPT: &str = r#"
import duckdb, json, sys, time
db, threads, q = sys.argv[1], int(sys.argv[2]), sys.argv[4]
sql = json.load(open(sys.argv[3]))[q]
base = peak_rss()
start = time.perf_counter()
con = duckdb.connect(db, read_only=True, config=config(threads))
# No progress bar (it would print on a long query); the SET is not
# DuckDB's work for the query: its time is not counted.
set_start = time.perf_counter()
con.execute("SET enable_progress_bar = false")
set_time = time.perf_counter() - set_start
con.execute(sql).fetchall()
con.close()
seconds = time.perf_counter() - start - set_time
print(json.dumps({"seconds": seconds, "peak_rss_bytes": peak_rss(), "base_rss_bytes": base}))
"#;

/// Which runs `bench tpch` (and the other suites) time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// One process: each query run once for its answer, then timed
    Warm,
    /// A fresh process per run (a `sluice query` process; a python3
    /// process with a fresh read-only DuckDB connection), with peak RSS
    Cold,
    /// Warm, then cold
    Both,
}

/// DuckDB answering and timing queries on request over one warm
/// connection (see [`DUCKDB_WARM_SCRIPT`]).
struct WarmDuck {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
    version: String,
}

impl WarmDuck {
    fn start(db: &Path, data: &Path, threads: usize, schemas: &str, texts: &Path) -> Result<Self> {
        let mut child = Command::new("python3")
            .args([
                "-c",
                &format!(
                    "{}{DUCKDB_CONFIG}{DUCKDB_WARM_SCRIPT}",
                    super::answers::DUCKDB_ROWS
                ),
            ])
            .arg(db)
            .arg(data)
            .arg(threads.to_string())
            .arg(schemas)
            .arg(texts)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("starting python3 for DuckDB")?;
        let out = BufReader::new(child.stdout.take().context("DuckDB's output")?);
        let mut d = WarmDuck {
            child,
            out,
            version: String::new(),
        };
        // Anything printed before it is ready is not an answer.
        loop {
            let line = d.line()?;
            if let Some(v) = line.strip_prefix("ready ") {
                d.version = serde_json::from_str(v).unwrap_or_default();
                break;
            }
        }
        Ok(d)
    }

    fn line(&mut self) -> Result<String> {
        let mut s = String::new();
        if self.out.read_line(&mut s)? == 0 {
            bail!("DuckDB stopped (see its error above)");
        }
        Ok(s.trim().to_string())
    }

    fn ask(&mut self, what: &str, q: usize) -> Result<String> {
        let stdin = self.child.stdin.as_mut().context("DuckDB's input")?;
        writeln!(stdin, "{what} {q}")?;
        stdin.flush()?;
        self.line()
    }

    /// DuckDB's rows of query `q`, or its error.
    fn rows(&mut self, q: usize) -> Result<std::result::Result<Answer, String>> {
        let line = self.ask("rows", q)?;
        let v: serde_json::Value = serde_json::from_str(&line)
            .with_context(|| format!("DuckDB's answer: got {line:?}"))?;
        Ok(match v.get("error") {
            Some(e) => Err(e.as_str().unwrap_or_default().to_string()),
            None => Ok(super::answers::json_rows(&v["rows"])?),
        })
    }

    /// Seconds of one warm run of query `q`.
    fn time(&mut self, q: usize) -> Result<f64> {
        let line = self.ask("warm", q)?;
        line.parse()
            .with_context(|| format!("DuckDB's time: got {line:?}"))
    }
}

impl Drop for WarmDuck {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// One cold run of query `q` by DuckDB (see [`DUCKDB_COLD_SCRIPT`]):
/// seconds, peak RSS and the RSS before the connection, in bytes.
fn duck_cold(db: &Path, threads: usize, texts: &Path, q: usize) -> Result<(f64, f64, f64)> {
    let v = run_json(
        Command::new("python3")
            .args([
                "-c",
                &format!(
                    "{}{DUCKDB_CONFIG}{DUCKDB_COLD_SCRIPT}",
                    super::common::PY_PEAK_RSS
                ),
            ])
            .arg(db)
            .arg(threads.to_string())
            .arg(texts)
            .arg(q.to_string()),
        &format!("duckdb (cold, query {q})"),
    )?;
    let num = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    Ok((num("seconds"), num("peak_rss_bytes"), num("base_rss_bytes")))
}

/// A query's rows as text, NULL as `None`.
type Answer = Vec<Vec<Option<String>>>;

/// `--queries`: "all" or a list such as "1,3,5-9" (or of `labels`:
/// "q14a,q39b"), of `n` queries.
fn parse_queries(s: &str, n: usize, labels: Option<&[&str]>) -> Result<Vec<usize>> {
    if s == "all" {
        return Ok((1..=n).collect());
    }
    let mut out = Vec::new();
    for part in s.split(',') {
        if let Some(i) =
            labels.and_then(|l| l.iter().position(|x| x.eq_ignore_ascii_case(part.trim())))
        {
            out.push(i + 1);
            continue;
        }
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (usize, usize) = (
            a.trim()
                .parse()
                .with_context(|| format!("bad query number {a:?}"))?,
            b.trim()
                .parse()
                .with_context(|| format!("bad query number {b:?}"))?,
        );
        if a == 0 || b > n || a > b {
            bail!("the queries are numbered 1 to {n}, not {part:?}");
        }
        out.extend(a..=b);
    }
    Ok(out)
}

/// A dataset's tables at `sf`: CSV files in `dir/<name>-sf<sf>/`, loaded
/// once into `dir/<name>-sf<sf>.db`.
pub(super) fn tables(
    set: &Dataset,
    sf: f64,
    dir: &Path,
    quiet: bool,
) -> Result<(std::path::PathBuf, std::path::PathBuf)> {
    let data = dir.join(format!("{}-sf{sf}", set.name));
    std::fs::create_dir_all(&data).with_context(|| format!("creating {}", data.display()))?;
    let db_dir = dir.join(format!("{}-sf{sf}.db", set.name));
    let mut db = sluice::store::Database::open_writer(&db_dir)?;
    for &t in set.tables {
        let csv = data.join(format!("{t}.csv"));
        if !csv.exists() {
            if !quiet {
                eprintln!("generating {} ...", csv.display());
            }
            (set.write)(&data, t, sf, sluice::exec::usable_cores())?;
        }
        if db.table(t).is_none() {
            if !quiet {
                eprintln!("loading {t} into {} ...", db_dir.display());
            }
            let opts = sluice::load::LoadOptions {
                schema: Some((set.schema)(t).unwrap_or_default().parse()?),
                header: sluice::load::Header::Yes,
                ..Default::default()
            };
            sluice::load::load(&mut db, t, &[sluice::source::Input::File(csv)], &opts)
                .with_context(|| format!("loading {t}"))?;
        }
    }
    Ok((data, db_dir))
}

/// DuckDB's column types of a table, from sluice's `--schema` text: a
/// list of [name, type] pairs, in the file's order.
fn duck_columns(schema: &str) -> serde_json::Value {
    let mut m = Vec::new();
    for col in schema.split(", ") {
        let (name, ty) = col.split_once(' ').unwrap_or((col, "TEXT"));
        let ty = match ty {
            "TEXT" => "VARCHAR",
            "INT" => "INTEGER",
            other => other,
        };
        m.push(serde_json::json!([name, ty]));
    }
    serde_json::Value::Array(m)
}

/// One query's measures: sluice's and DuckDB's warm and cold seconds, and
/// the cold runs' peak RSS in bytes (DuckDB's RSS before its connection
/// beside).
#[derive(Default)]
struct Measures {
    warm: Vec<f64>,
    duck_warm: Vec<f64>,
    cold: Vec<f64>,
    duck_cold: Vec<f64>,
    rss: Vec<f64>,
    duck_rss: Vec<f64>,
    duck_base_rss: Vec<f64>,
    /// DuckDB refused the query under `--memory-limit`: sluice's runs
    /// are timed alone.
    duck_refused: bool,
}

/// The median of `v` and the ratio `theirs / ours` of two medians, as the
/// table prints them; "-" where a side has no runs.
fn pair(ours: &[f64], theirs: &[f64], scale: f64) -> (String, String, String, Option<f64>) {
    if ours.is_empty() {
        return ("-".into(), "-".into(), "-".into(), None);
    }
    let m = median(ours);
    if theirs.is_empty() {
        return (format!("{:.4}", m * scale), "-".into(), "-".into(), None);
    }
    let d = median(theirs);
    (
        format!("{:.4}", m * scale),
        format!("{:.4}", d * scale),
        format!("{:.2}x", d / m),
        Some(d / m),
    )
}

/// The geometric mean of `ratios`.
fn geo_mean(ratios: &[f64]) -> f64 {
    (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp()
}

/// Times the suite's queries at `threads` (warm, cold or both), DuckDB
/// beside, interleaved query by query, after every answer is checked.
#[allow(clippy::too_many_arguments)]
pub fn run(
    suite: &Suite,
    sf: f64,
    threads: Option<usize>,
    runs: usize,
    queries: &str,
    mode: Mode,
    dir: &Path,
    no_peers: bool,
    memory_limit: Option<u64>,
    quiet: bool,
) -> Result<()> {
    let queries = parse_queries(queries, suite.queries.len(), suite.labels)?;
    let title = suite.title;
    let runs = runs.max(1);
    let cores = sluice::exec::usable_cores();
    let threads = threads.unwrap_or(cores).max(1);
    // Under a memory limit, both engines spill where they can; DuckDB's
    // connections learn it from the environment (see DUCKDB_CONFIG).
    if let Some(limit) = memory_limit {
        let tmp = dir.join("duckdb-tmp");
        // SAFETY: set at the start of the run, before it starts a thread
        // or a child process.
        unsafe {
            std::env::set_var("SLUICE_BENCH_MEMORY_LIMIT", limit.to_string());
            std::env::set_var("SLUICE_BENCH_TEMP_DIR", &tmp);
        }
    }
    // A query refused (out of memory, past the limit) is listed and not
    // timed; one that answers unlike DuckDB fails a strict suite's run.
    let refusals_ok = !suite.strict || memory_limit.is_some();
    let run_query = |db: &sluice::store::Database, sql: &str| {
        sluice::query::query_with(
            db,
            sql,
            &sluice::query::QueryOptions {
                threads: Some(threads),
                memory: memory_limit.map(sluice::query::memory::Memory::new),
                ..Default::default()
            },
        )
    };
    let (warm, cold) = (mode != Mode::Cold, mode != Mode::Warm);
    let (data, db_dir) = tables(suite.data, sf, dir, quiet)?;
    let db = sluice::store::Database::open(&db_dir)?;
    let duck_db = dir.join(format!("{}-sf{sf}.duckdb", suite.data.name));
    // The texts in a file, not arguments: one argument holds at most 128 KiB.
    let texts_file = dir.join(format!("{}-queries.json", suite.name));
    let mut duck = None;
    if !no_peers && super::common::duckdb_version().is_some() {
        let schemas: serde_json::Map<String, serde_json::Value> = suite
            .data
            .tables
            .iter()
            .map(|t| {
                (
                    t.to_string(),
                    duck_columns(&(suite.data.schema)(t).unwrap_or_default()),
                )
            })
            .collect();
        let texts: serde_json::Map<String, serde_json::Value> = queries
            .iter()
            .map(|&q| {
                (
                    q.to_string(),
                    serde_json::Value::String(suite.queries[q - 1].into()),
                )
            })
            .collect();
        std::fs::write(&texts_file, serde_json::Value::Object(texts).to_string())
            .with_context(|| format!("writing {}", texts_file.display()))?;
        if !quiet && !duck_db.exists() {
            eprintln!("making DuckDB's database {} ...", duck_db.display());
        }
        duck = Some(WarmDuck::start(
            &duck_db,
            &data,
            threads.min(cores),
            &serde_json::Value::Object(schemas).to_string(),
            &texts_file,
        )?);
    }
    let version = duck.as_ref().map(|d| d.version.clone());
    // Per query: its number, measures and answer (or why there is none).
    let mut ours: Vec<(usize, Measures, std::result::Result<(), String>)> = Vec::new();
    for &q in &queries {
        let sql = suite.queries[q - 1];
        let label = suite.label(q);
        let what = format!("{title} {label}");
        let mut m = Measures::default();
        // The first run (the warm-up: it opens the segments) gives the
        // answer; DuckDB's first run gives its own.
        let first = match run_query(&db, sql) {
            Ok(r) => r,
            Err(e) if refusals_ok => {
                if !quiet {
                    eprintln!("sluice {label}: {e}");
                }
                ours.push((q, m, Err(format!("sluice: {e}"))));
                continue;
            }
            Err(e) => return Err(e).with_context(|| what.clone()),
        };
        if let Some(d) = duck.as_mut() {
            let answer = super::answers::sluice_rows(&first);
            drop(first);
            // No time is reported for a wrong answer.
            let checked = match d.rows(q)? {
                // Under a memory limit DuckDB may run out of it too.
                Err(e) if memory_limit.is_some() && e.contains("Out of Memory") => {
                    if !quiet {
                        eprintln!(
                            "{what}: DuckDB refused it: {}",
                            e.lines().next().unwrap_or("")
                        );
                    }
                    m.duck_refused = true;
                    Ok(())
                }
                Err(e) => Err(anyhow::anyhow!("{what}: DuckDB failed: {e}")),
                Ok(peer) => super::answers::check(&what, "duckdb", true, &answer, &peer),
            };
            if let Err(e) = checked {
                if suite.strict {
                    return Err(e);
                }
                if !quiet {
                    eprintln!("{e:#}");
                }
                ours.push((q, m, Err("differs from DuckDB".into())));
                continue;
            }
        }
        if warm {
            // Interleaved run by run: a drift of the machine hits both.
            for _ in 0..runs {
                let start = std::time::Instant::now();
                run_query(&db, sql)?;
                m.warm.push(start.elapsed().as_secs_f64());
                if let Some(d) = duck.as_mut().filter(|_| !m.duck_refused) {
                    m.duck_warm.push(d.time(q)?);
                }
            }
            if !quiet {
                eprintln!(
                    "warm {label}: sluice {:.3?} duckdb {:.3?}",
                    m.warm, m.duck_warm
                );
            }
        }
        ours.push((q, m, Ok(())));
    }
    if !quiet && duck.is_some() && suite.strict {
        eprintln!("answers: every query's rows equal DuckDB's");
    }
    // DuckDB's warm process goes before the cold runs: its buffers are
    // not theirs to compete with.
    drop(duck.take());
    drop(db);
    if cold {
        let exe = sluice_exe()?;
        // Round 0 warms the page cache of both; it is not counted.
        for round in 0..=runs {
            for (q, m, answer) in &mut ours {
                if answer.is_err() {
                    continue;
                }
                let (t, mib) = sluice_process(
                    &exe,
                    &db_dir,
                    Some(threads),
                    memory_limit,
                    suite.queries[*q - 1],
                )?;
                let rss = mib * (1u64 << 20) as f64;
                let d = match &version {
                    Some(_) if !m.duck_refused => {
                        Some(duck_cold(&duck_db, threads.min(cores), &texts_file, *q)?)
                    }
                    _ => None,
                };
                if round > 0 {
                    m.cold.push(t);
                    m.rss.push(rss);
                    if let Some((t, peak, base)) = d {
                        m.duck_cold.push(t);
                        m.duck_rss.push(peak);
                        m.duck_base_rss.push(base);
                    }
                }
            }
            if !quiet && round > 0 {
                eprintln!("cold: round {round} of {runs}");
            }
        }
    }
    let checked = version.is_some();
    println!(
        "{}: {title}, SF {sf}, {}, {runs} runs each, {threads} threads, {cores} usable cores{}{}",
        suite.name,
        match mode {
            Mode::Warm => "warm",
            Mode::Cold => "cold (a fresh process per run)",
            Mode::Both => "warm and cold (a fresh process per run)",
        },
        match memory_limit {
            Some(l) => format!(
                ", memory limit {} (both engines)",
                sluice::query::memory::human_bytes(l)
            ),
            None => String::new(),
        },
        match &version {
            Some(v) => format!(", answers checked against DuckDB {v}"),
            None => String::new(),
        }
    );
    let mut head = format!("{:<6}", "query");
    if warm {
        head += &format!(" {:>10} {:>10} {:>9}", "sluice_s", "duckdb_s", "vs_duckdb");
    }
    if cold {
        head += &format!(
            " {:>10} {:>10} {:>9} {:>10} {:>10}",
            "cold_s", "duck_cold", "vs_cold", "rss_mib", "duck_rss"
        );
    }
    println!("{head}");
    let (mut warm_ratios, mut cold_ratios, mut rss_ratios) = (Vec::new(), Vec::new(), Vec::new());
    let (mut sum_ours, mut sum_theirs) = (0.0, 0.0);
    let mut failed = Vec::new();
    let mib = 1.0 / (1u64 << 20) as f64;
    for (q, m, answer) in &ours {
        let label = suite.label(*q);
        if let Err(why) = answer {
            println!("{label:<6} -  {why}");
            failed.push(label);
            continue;
        }
        let case = |mode: &str| match memory_limit {
            None => serde_json::json!({"query": label, "sf": sf, "threads": threads, "mode": mode}),
            Some(l) => {
                serde_json::json!({"query": label, "sf": sf, "threads": threads, "mode": mode, "memory_limit_bytes": l})
            }
        };
        let mut line = format!("{label:<6}");
        if warm {
            super::record::runs("sluice", case("warm"), "seconds", "s", &m.warm);
            super::record::runs("duckdb", case("warm"), "seconds", "s", &m.duck_warm);
            let (s, d, vs, r) = pair(&m.warm, &m.duck_warm, 1.0);
            let d = if m.duck_refused { "OOM".to_string() } else { d };
            if let Some(r) = r {
                warm_ratios.push(r);
                sum_ours += median(&m.warm);
                sum_theirs += median(&m.duck_warm);
            }
            line += &format!(" {s:>10} {d:>10} {vs:>9}");
        }
        if cold {
            super::record::runs("sluice", case("cold"), "seconds", "s", &m.cold);
            super::record::runs("duckdb", case("cold"), "seconds", "s", &m.duck_cold);
            super::record::runs("sluice", case("cold"), "peak_rss_bytes", "bytes", &m.rss);
            super::record::runs(
                "duckdb",
                case("cold"),
                "peak_rss_bytes",
                "bytes",
                &m.duck_rss,
            );
            let (s, d, vs, r) = pair(&m.cold, &m.duck_cold, 1.0);
            cold_ratios.extend(r);
            let rss = m.rss.iter().copied().fold(0.0, f64::max);
            let duck_rss = m.duck_rss.iter().copied().fold(0.0, f64::max);
            if duck_rss > 0.0 {
                rss_ratios.push(duck_rss / rss);
            }
            let d = if m.duck_refused { "OOM".to_string() } else { d };
            line += &format!(
                " {s:>10} {d:>10} {vs:>9} {:>10.1} {:>10}",
                rss * mib,
                if duck_rss > 0.0 {
                    format!("{:.1}", duck_rss * mib)
                } else {
                    "-".into()
                }
            );
        }
        println!("{line}");
    }
    if !warm_ratios.is_empty() {
        println!(
            "warm: sum {sum_ours:.4} s against {sum_theirs:.4} s ({:.2}x); geometric mean of vs_duckdb {:.2}x, lowest {:.2}x (over the {} queries answered alike)",
            sum_theirs / sum_ours,
            geo_mean(&warm_ratios),
            warm_ratios.iter().copied().fold(f64::INFINITY, f64::min),
            warm_ratios.len()
        );
    }
    if !cold_ratios.is_empty() {
        println!(
            "cold: geometric mean of vs_cold {:.2}x, lowest {:.2}x",
            geo_mean(&cold_ratios),
            cold_ratios.iter().copied().fold(f64::INFINITY, f64::min),
        );
    }
    if !rss_ratios.is_empty() {
        let base = ours
            .iter()
            .flat_map(|(_, m, _)| m.duck_base_rss.iter().copied())
            .fold(0.0, f64::max);
        println!(
            "peak RSS (cold, highest of the runs): DuckDB's / sluice's, lowest {:.2}x, geometric mean {:.2}x; {} of {} queries at or below DuckDB's (DuckDB's process held {:.1} MiB before connecting)",
            rss_ratios.iter().copied().fold(f64::INFINITY, f64::min),
            geo_mean(&rss_ratios),
            rss_ratios.iter().filter(|&&r| r >= 1.0).count(),
            rss_ratios.len(),
            base * mib
        );
    }
    if refusals_ok {
        println!(
            "answered{}: {} of {}{}",
            if checked { " as DuckDB" } else { "" },
            ours.len() - failed.len(),
            ours.len(),
            if failed.is_empty() {
                String::new()
            } else {
                format!(" (not: {})", failed.join(", "))
            }
        );
    }
    println!("vs_duckdb, vs_cold: DuckDB median / sluice median (>1: sluice faster)");
    let refused: Vec<String> = ours
        .iter()
        .filter(|(_, m, _)| m.duck_refused)
        .map(|(q, _, _)| suite.label(*q))
        .collect();
    if !refused.is_empty() {
        println!(
            "OOM: DuckDB ran out of the memory limit (so those answers were not checked: {})",
            refused.join(", ")
        );
    }
    Ok(())
}
