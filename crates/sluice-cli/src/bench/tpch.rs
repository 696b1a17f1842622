//! `sluice bench tpch`: the 22 TPC-H queries over the eight tables,
//! warm, through the library; DuckDB runs the same queries over the same
//! CSV files in the same run when python3 imports it, and every answer is
//! compared with DuckDB's before any time is reported.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::common::{duckdb_version, median, run_json};

/// A set of queries over the TPC-H tables.
pub struct Suite {
    /// The scenario's name (`sluice bench NAME`).
    pub name: &'static str,
    /// What the queries are, for the table's title.
    pub title: &'static str,
    /// Before a query's number in the table (`Q1`, `W1`).
    pub prefix: &'static str,
    pub queries: &'static [&'static str],
}

/// The 22 TPC-H queries.
pub const TPCH: Suite = Suite {
    name: "tpch",
    title: "TPC-H",
    prefix: "Q",
    queries: &QUERIES,
};

/// Window functions over the TPC-H tables (see [`super::windows`]).
pub const WINDOWS: Suite = Suite {
    name: "windows",
    title: "window queries over TPC-H",
    prefix: "W",
    queries: &super::windows::QUERIES,
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

/// Python: DuckDB's tables of the eight CSV files with sluice's types,
/// then each query's answer and timed runs, as JSON.
const DUCKDB_SCRIPT: &str = r#"
import duckdb, json, os, sys, time
db, data, threads, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
schemas = json.loads(sys.argv[5])
queries = json.loads(sys.argv[6])
fresh = not os.path.exists(db)
con = duckdb.connect(db)
con.execute("SET enable_progress_bar = false")
if fresh:
    for t, cols in schemas.items():
        con.execute(f"CREATE TABLE {t} AS SELECT * FROM read_csv(?, header=true, columns=?)", [f"{data}/{t}.csv", dict(cols)])
    con.execute("CHECKPOINT")
con.execute(f"SET threads={threads}")
answers, times = {}, {}
for q, sql in queries.items():
    answers[q] = rows(con, sql)
    times[q] = []
    for _ in range(runs):
        start = time.perf_counter()
        con.execute(sql).fetchall()
        times[q].append(time.perf_counter() - start)
print(json.dumps({"times": times, "rows": answers, "version": duckdb.__version__}))
"#;

/// A query's rows as text, NULL as `None`.
type Answer = Vec<Vec<Option<String>>>;

/// `--queries`: "all" or a list such as "1,3,5-9", of `n` queries.
fn parse_queries(s: &str, n: usize) -> Result<Vec<usize>> {
    if s == "all" {
        return Ok((1..=n).collect());
    }
    let mut out = Vec::new();
    for part in s.split(',') {
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

/// The eight tables at `sf`: CSV files in `dir/tpch-sf<sf>/`, loaded once
/// into `dir/tpch-sf<sf>.db`.
fn tables(sf: f64, dir: &Path, quiet: bool) -> Result<(std::path::PathBuf, std::path::PathBuf)> {
    let data = dir.join(format!("tpch-sf{sf}"));
    std::fs::create_dir_all(&data).with_context(|| format!("creating {}", data.display()))?;
    let db_dir = dir.join(format!("tpch-sf{sf}.db"));
    let mut db = sluice::store::Database::open_writer(&db_dir)?;
    for t in crate::generate::tpch::TABLES {
        let csv = data.join(format!("{t}.csv"));
        if !csv.exists() {
            if !quiet {
                eprintln!("generating {} ...", csv.display());
            }
            crate::generate::tpch::write_table(&data, t, sf, sluice::exec::usable_cores())?;
        }
        if db.table(t).is_none() {
            if !quiet {
                eprintln!("loading {t} into {} ...", db_dir.display());
            }
            let opts = sluice::load::LoadOptions {
                schema: Some(
                    crate::generate::tpch::schema(t)
                        .unwrap_or_default()
                        .parse()?,
                ),
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

/// Times the suite's queries at `threads`, DuckDB beside.
#[allow(clippy::too_many_arguments)]
pub fn run(
    suite: &Suite,
    sf: f64,
    threads: Option<usize>,
    runs: usize,
    queries: &str,
    dir: &Path,
    no_peers: bool,
    quiet: bool,
) -> Result<()> {
    let queries = parse_queries(queries, suite.queries.len())?;
    let (title, p) = (suite.title, suite.prefix);
    let runs = runs.max(1);
    let cores = sluice::exec::usable_cores();
    let threads = threads.unwrap_or(cores).max(1);
    let (data, db_dir) = tables(sf, dir, quiet)?;
    let db = sluice::store::Database::open(&db_dir)?;
    // Per query: its number, times and answer.
    let mut ours: Vec<(usize, Vec<f64>, Answer)> = Vec::new();
    for &q in &queries {
        let sql = suite.queries[q - 1];
        // Warm: the first run opens the segments; its answer is kept.
        let first = sluice::query::query(&db, sql, Some(threads))
            .with_context(|| format!("{title} {p}{q}"))?;
        let answer = super::answers::sluice_rows(&first);
        let mut times = Vec::new();
        for _ in 0..runs {
            let start = std::time::Instant::now();
            sluice::query::query(&db, sql, Some(threads))?;
            times.push(start.elapsed().as_secs_f64());
        }
        if !quiet {
            eprintln!("sluice {p}{q}: {times:.3?}");
        }
        ours.push((q, times, answer));
    }
    let mut theirs: Option<serde_json::Value> = None;
    if !no_peers && duckdb_version().is_some() {
        let schemas: serde_json::Map<String, serde_json::Value> = crate::generate::tpch::TABLES
            .iter()
            .map(|t| {
                (
                    t.to_string(),
                    duck_columns(crate::generate::tpch::schema(t).unwrap_or_default()),
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
        let v = run_json(
            Command::new("python3")
                .args([
                    "-c",
                    &format!("{}{DUCKDB_SCRIPT}", super::answers::DUCKDB_ROWS),
                ])
                .arg(dir.join(format!("tpch-sf{sf}.duckdb")))
                .arg(&data)
                .arg(threads.min(cores).to_string())
                .arg(runs.to_string())
                .arg(serde_json::Value::Object(schemas).to_string())
                .arg(serde_json::Value::Object(texts).to_string()),
            "duckdb",
        )?;
        // No time is reported for a wrong answer.
        for (q, _, answer) in &ours {
            let peer = super::answers::json_rows(&v["rows"][q.to_string()])?;
            super::answers::check(&format!("{title} {p}{q}"), "duckdb", true, answer, &peer)?;
        }
        if !quiet {
            eprintln!("answers: every query's rows equal DuckDB's");
        }
        theirs = Some(v);
    }
    println!(
        "{}: {title}, SF {sf}, warm, {runs} runs each, {threads} threads, {cores} usable cores{}",
        suite.name,
        if theirs.is_some() {
            ", answers checked against DuckDB"
        } else {
            ""
        }
    );
    println!(
        "{:<6} {:>10} {:>10} {:>10}",
        "query", "sluice_s", "duckdb_s", "vs_duckdb"
    );
    let (mut sum_ours, mut sum_theirs, mut log_ratio, mut n_ratio) = (0.0, 0.0, 0.0, 0);
    for (q, times, _) in &ours {
        let m = median(times);
        sum_ours += m;
        super::record::runs(
            "sluice",
            serde_json::json!({"query": q, "sf": sf, "threads": threads}),
            "seconds",
            "s",
            times,
        );
        let d: Option<Vec<f64>> = theirs.as_ref().map(|v| {
            v["times"][q.to_string()]
                .as_array()
                .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
                .unwrap_or_default()
        });
        let (dm, vs) = match &d {
            Some(d) if !d.is_empty() => {
                super::record::runs(
                    "duckdb",
                    serde_json::json!({"query": q, "sf": sf, "threads": threads.min(cores)}),
                    "seconds",
                    "s",
                    d,
                );
                let dm = median(d);
                sum_theirs += dm;
                log_ratio += (dm / m).ln();
                n_ratio += 1;
                (format!("{dm:.4}"), format!("{:.2}x", dm / m))
            }
            _ => ("-".into(), "-".into()),
        };
        println!("{:<6} {m:>10.4} {dm:>10} {vs:>10}", format!("{p}{q}"));
    }
    if n_ratio > 0 {
        println!(
            "{:<6} {sum_ours:>10.4} {sum_theirs:>10.4} {:>10}",
            "sum",
            format!("{:.2}x", sum_theirs / sum_ours)
        );
        println!(
            "geometric mean of vs_duckdb: {:.2}x",
            (log_ratio / n_ratio as f64).exp()
        );
    }
    println!("vs_duckdb: DuckDB median / sluice median (>1: sluice faster)");
    Ok(())
}
