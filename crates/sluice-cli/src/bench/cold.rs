//! `sluice bench cold`: queries over TPC-H lineitem, each one a fresh
//! `sluice query` process (spawn to exit, as a user runs it), against a
//! fresh DuckDB connection to its own database file of the same table
//! (connect to the last row fetched), interleaved query by query, page
//! cache warm. What it measures is the cost of opening a table as much as
//! of the query.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::common::{DUCKDB_LINEITEM, duckdb_version, lineitem, median, sluice_exe};

/// The queries: counts, sums, filters, GROUP BY on TEXT, on two keys and
/// on an expression, COUNT DISTINCT, CASE, Q1, Q6, a top-10 and a LIKE.
pub const QUERIES: [(&str, &str); 13] = [
    ("count", "SELECT count(*) FROM lineitem"),
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
    ("q1", include_str!("../../tests/expected/tpch-q1.sql")),
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

/// DuckDB's side (appended to [`DUCKDB_LINEITEM`]): makes its database
/// when missing, then for each query index read from stdin runs the
/// query on a fresh read-only connection and prints the seconds.
const DUCKDB_COLD_SCRIPT: &str = r#"
import duckdb, os, sys, time, json
db, csv = sys.argv[1], sys.argv[2]
queries = json.loads(sys.argv[3])
if not os.path.exists(db):
    con = duckdb.connect(db)
    lineitem(con, csv)
    con.close()
print("ready", flush=True)
for line in sys.stdin:
    q = queries[int(line)]
    start = time.perf_counter()
    con = duckdb.connect(db, read_only=True)
    con.execute(q).fetchall()
    con.close()
    print(time.perf_counter() - start, flush=True)
"#;

/// DuckDB running queries on request, one fresh connection each.
struct Duck {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Duck {
    fn start(db: &Path, csv: &Path) -> Result<Duck> {
        let queries: Vec<&str> = QUERIES.iter().map(|q| q.1).collect();
        let mut child = Command::new("python3")
            .args(["-c", &format!("{DUCKDB_LINEITEM}{DUCKDB_COLD_SCRIPT}")])
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

    /// Seconds of query `i` on a fresh connection.
    fn time(&mut self, i: usize) -> Result<f64> {
        let stdin = self.child.stdin.as_mut().context("DuckDB's input")?;
        writeln!(stdin, "{i}")?;
        stdin.flush()?;
        self.line()?.parse().context("DuckDB's time")
    }
}

impl Drop for Duck {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// One fresh `sluice query` process: its seconds (spawn to exit) and peak
/// RSS (what `--timing` says of it).
fn sluice_query(exe: &Path, db: &Path, sql: &str) -> Result<(f64, f64)> {
    let start = Instant::now();
    let out = Command::new(exe)
        .arg("--db")
        .arg(db)
        .args(["query", "--timing", sql])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .context("running sluice query")?;
    let secs = start.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!("sluice query failed: {sql}\n{err}");
    }
    let rss = err
        .split("peak RSS ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|m| m.parse::<f64>().ok())
        .unwrap_or(f64::NAN);
    Ok((secs, rss))
}

/// Times each query `runs` times (after one warm-up of each), sluice and
/// DuckDB interleaved, and prints a table of medians.
pub fn run(sf: f64, runs: usize, dir: &Path, no_peers: bool, quiet: bool) -> Result<()> {
    let runs = runs.max(1);
    let (csv, db_dir, rows) = lineitem(sf, dir, quiet)?;
    let exe = sluice_exe()?;
    let mut duck = match (no_peers, duckdb_version()) {
        (false, Some(_)) => {
            if !quiet {
                eprintln!("DuckDB's database of lineitem (made once) ...");
            }
            Some(Duck::start(&dir.join(format!("q1-sf{sf}.duckdb")), &csv)?)
        }
        _ => None,
    };
    let n = QUERIES.len();
    let mut s_times = vec![Vec::new(); n];
    let mut s_rss = vec![Vec::new(); n];
    let mut d_times = vec![Vec::new(); n];
    for round in 0..=runs {
        for (i, (_, sql)) in QUERIES.iter().enumerate() {
            let (t, rss) = sluice_query(&exe, &db_dir, sql)?;
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
    println!(
        "cold: lineitem SF {sf} ({rows} rows), each query a fresh sluice process and a fresh DuckDB connection, {runs} runs, medians"
    );
    println!(
        "{:<20} {:>10} {:>10} {:>10} {:>12}",
        "query", "sluice_ms", "duckdb_ms", "vs_duckdb", "sluice_rss_mb"
    );
    let mut ratios = Vec::new();
    for (i, (name, _)) in QUERIES.iter().enumerate() {
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
