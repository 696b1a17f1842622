//! `sluice bench tpch`: the 22 TPC-H queries over the eight tables,
//! warm, through the library; DuckDB runs the same queries over the same
//! CSV files in the same run when python3 imports it, and every answer is
//! compared with DuckDB's before any time is reported. The runner of
//! `bench windows` (over the TPC-H tables) and `bench tpcds` too.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::common::{duckdb_version, median, run_json};

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
};

/// The 99 TPC-DS queries (see [`super::tpcds`]).
pub const TPCDS: Suite = Suite {
    name: "tpcds",
    title: "TPC-DS",
    prefix: "",
    labels: Some(&super::tpcds::LABELS),
    queries: &super::tpcds::QUERIES,
    data: &TPCDS_DATA,
    strict: false,
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
# The queries: a file's JSON (a hundred texts exceed an argument's limit).
queries = json.load(open(sys.argv[6]))
fresh = not os.path.exists(db)
con = duckdb.connect(db)
con.execute("SET enable_progress_bar = false")
if fresh:
    for t, cols in schemas.items():
        con.execute(f"CREATE TABLE {t} AS SELECT * FROM read_csv(?, header=true, columns=?)", [f"{data}/{t}.csv", dict(cols)])
    con.execute("CHECKPOINT")
con.execute(f"SET threads={threads}")
answers, times, errors = {}, {}, {}
for q, sql in queries.items():
    times[q] = []
    try:
        answers[q] = rows(con, sql)
    except Exception as e:
        errors[q] = str(e)
        continue
    for _ in range(runs):
        start = time.perf_counter()
        con.execute(sql).fetchall()
        times[q].append(time.perf_counter() - start)
print(json.dumps({"times": times, "rows": answers, "errors": errors, "version": duckdb.__version__}))
"#;

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
fn tables(
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
    let queries = parse_queries(queries, suite.queries.len(), suite.labels)?;
    let title = suite.title;
    let runs = runs.max(1);
    let cores = sluice::exec::usable_cores();
    let threads = threads.unwrap_or(cores).max(1);
    let (data, db_dir) = tables(suite.data, sf, dir, quiet)?;
    let db = sluice::store::Database::open(&db_dir)?;
    // Per query: its number, times and answer (or why there is none).
    let mut ours: Vec<(usize, Vec<f64>, std::result::Result<Answer, String>)> = Vec::new();
    for &q in &queries {
        let sql = suite.queries[q - 1];
        let label = suite.label(q);
        // Warm: the first run opens the segments; its answer is kept.
        let first = match sluice::query::query(&db, sql, Some(threads)) {
            Ok(r) => r,
            Err(e) if !suite.strict => {
                if !quiet {
                    eprintln!("sluice {label}: {e}");
                }
                ours.push((q, Vec::new(), Err(format!("sluice: {e}"))));
                continue;
            }
            Err(e) => return Err(e).with_context(|| format!("{title} {label}")),
        };
        let answer = super::answers::sluice_rows(&first);
        let mut times = Vec::new();
        for _ in 0..runs {
            let start = std::time::Instant::now();
            sluice::query::query(&db, sql, Some(threads))?;
            times.push(start.elapsed().as_secs_f64());
        }
        if !quiet {
            eprintln!("sluice {label}: {times:.3?}");
        }
        ours.push((q, times, Ok(answer)));
    }
    let mut theirs: Option<serde_json::Value> = None;
    if !no_peers && duckdb_version().is_some() {
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
        // A file, not an argument: one argument holds at most 128 KiB.
        let texts_file = dir.join(format!("{}-queries.json", suite.name));
        std::fs::write(&texts_file, serde_json::Value::Object(texts).to_string())
            .with_context(|| format!("writing {}", texts_file.display()))?;
        let v = run_json(
            Command::new("python3")
                .args([
                    "-c",
                    &format!("{}{DUCKDB_SCRIPT}", super::answers::DUCKDB_ROWS),
                ])
                .arg(dir.join(format!("{}-sf{sf}.duckdb", suite.data.name)))
                .arg(&data)
                .arg(threads.min(cores).to_string())
                .arg(runs.to_string())
                .arg(serde_json::Value::Object(schemas).to_string())
                .arg(&texts_file),
            "duckdb",
        )?;
        // No time is reported for a wrong answer.
        for (q, times, answer) in &mut ours {
            let what = format!("{title} {}", suite.label(*q));
            let checked = match (answer.as_ref(), v["errors"].get(q.to_string())) {
                (Err(_), _) => continue,
                (Ok(_), Some(e)) => Err(anyhow::anyhow!("{what}: DuckDB failed: {e}")),
                (Ok(a), None) => super::answers::json_rows(&v["rows"][q.to_string()])
                    .and_then(|peer| super::answers::check(&what, "duckdb", true, a, &peer)),
            };
            if let Err(e) = checked {
                if suite.strict {
                    return Err(e);
                }
                if !quiet {
                    eprintln!("{e:#}");
                }
                times.clear();
                *answer = Err("differs from DuckDB".into());
            }
        }
        if !quiet && suite.strict {
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
    let mut failed = Vec::new();
    for (q, times, answer) in &ours {
        let label = suite.label(*q);
        if let Err(why) = answer {
            println!("{label:<6} {:>10} {:>10} {:>10}  {why}", "-", "-", "-");
            failed.push(label);
            continue;
        }
        let m = median(times);
        sum_ours += m;
        super::record::runs(
            "sluice",
            serde_json::json!({"query": label, "sf": sf, "threads": threads}),
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
                    serde_json::json!({"query": label, "sf": sf, "threads": threads.min(cores)}),
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
        println!("{label:<6} {m:>10.4} {dm:>10} {vs:>10}");
    }
    if n_ratio > 0 {
        println!(
            "{:<6} {sum_ours:>10.4} {sum_theirs:>10.4} {:>10}",
            "sum",
            format!("{:.2}x", sum_theirs / sum_ours)
        );
        println!(
            "geometric mean of vs_duckdb: {:.2}x (over the {n_ratio} queries answered alike)",
            (log_ratio / n_ratio as f64).exp()
        );
    }
    if !suite.strict {
        println!(
            "answered{}: {} of {}{}",
            if theirs.is_some() { " as DuckDB" } else { "" },
            ours.len() - failed.len(),
            ours.len(),
            if failed.is_empty() {
                String::new()
            } else {
                format!(" (not: {})", failed.join(", "))
            }
        );
    }
    println!("vs_duckdb: DuckDB median / sluice median (>1: sluice faster)");
    Ok(())
}
