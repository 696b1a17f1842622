//! `sluice bench index-join`: a table keyed by a TEXT id (the objects of
//! `sluice gen objects`) joined to a few thousand of its ids (`sources`),
//! each run a fresh `sluice query` process: read by the key index (an
//! index nested-loop join), and as a hash join over a scan of the same
//! rows loaded without a key; DuckDB runs the same join on the same rows
//! (a fresh read-only connection each run; its table without and with a
//! PRIMARY KEY) when `import duckdb` works in python3. Interleaved, page
//! cache warm; the answers are compared before a time is reported.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use super::common::{duckdb_version, median, sluice_exe, sluice_process};

const JOIN: &str =
    "SELECT count(*), sum(o.chunkId) FROM {t} o JOIN sources s ON o.source_id = s.source_id";

/// Python: builds DuckDB's database of the same rows (objects, objects
/// with a PRIMARY KEY, sources) as a `.part` file, then renames it.
const DUCKDB_BUILD: &str = r#"
import duckdb, sys, os
db, tsv, csv = sys.argv[1:4]
part = db + ".part"
for f in (part, part + ".wal"):
    if os.path.exists(f):
        os.remove(f)
con = duckdb.connect(part)
con.execute("SET enable_progress_bar = false")
con.execute("CREATE TABLE objects AS SELECT * FROM read_csv(?, delim='\t', header=false, quote='', columns={'source_id': 'VARCHAR', 'chunkId': 'INTEGER', 'subChunkId': 'INTEGER'})", [tsv])
con.execute("CREATE TABLE objects_pk (source_id VARCHAR PRIMARY KEY, chunkId INTEGER, subChunkId INTEGER)")
con.execute("INSERT INTO objects_pk SELECT * FROM objects")
con.execute("CREATE TABLE sources AS SELECT * FROM read_csv(?, header=true, columns={'source_id': 'VARCHAR', 'n': 'BIGINT'})", [csv])
con.execute("CHECKPOINT")
con.close()
os.replace(part, db)
"#;

/// Python: per table name read from stdin, the join by a fresh read-only
/// connection (connect to the last row fetched): `seconds answer`.
const DUCKDB_RUN: &str = r#"
import duckdb, sys, time
db, q = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    st = time.perf_counter()
    con = duckdb.connect(db, read_only=True)
    r = con.execute(q.replace("{t}", line.strip())).fetchall()
    con.close()
    print(time.perf_counter() - st, "%d,%d" % r[0], flush=True)
"#;

fn sluice(exe: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new(exe)
        .args(args)
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("running sluice {}", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "sluice {} failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).to_string())
}

/// The objects' TSV, the sources' CSV (every `rows / sources`-th id) and
/// sluice's database of them in `dir`, made once.
fn data(exe: &Path, rows: u64, sources: usize, dir: &Path, quiet: bool) -> Result<[PathBuf; 3]> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tsv = dir.join(format!("objects-{rows}.tsv"));
    if !tsv.exists() {
        if !quiet {
            eprintln!("generating {rows} objects ...");
        }
        let part = tsv.with_extension("tsv.part");
        let p = part.display().to_string();
        sluice(
            exe,
            &[
                "-q",
                "gen",
                "objects",
                "--rows",
                &rows.to_string(),
                "--tsv",
                "--output",
                &p,
            ],
        )?;
        std::fs::rename(&part, &tsv).with_context(|| format!("renaming {p}"))?;
    }
    let csv = dir.join(format!("sources-{rows}-{sources}.csv"));
    if !csv.exists() {
        let every = (rows / sources.max(1) as u64).max(1) as usize;
        let f = std::fs::File::open(&tsv).with_context(|| format!("reading {}", tsv.display()))?;
        let mut out = String::from("source_id,n\n");
        let mut taken = 0;
        for (i, line) in BufReader::new(f).lines().enumerate() {
            let line = line.with_context(|| format!("reading {}", tsv.display()))?;
            if i % every == every / 2 && taken < sources {
                let id = line.split('\t').next().unwrap_or_default();
                out.push_str(&format!("{id},{i}\n"));
                taken += 1;
            }
        }
        std::fs::write(&csv, out).with_context(|| format!("writing {}", csv.display()))?;
    }
    let db = dir.join(format!("index-join-{rows}-{sources}.db"));
    let loaded = sluice::store::Database::open(&db)
        .ok()
        .is_some_and(|d| d.table("sources").is_some());
    if !loaded {
        if db.exists() {
            std::fs::remove_dir_all(&db).with_context(|| format!("removing {}", db.display()))?;
        }
        if !quiet {
            eprintln!("loading them into {} ...", db.display());
        }
        let d = db.display().to_string();
        let (t, c) = (tsv.display().to_string(), csv.display().to_string());
        let objects = "source_id TEXT, chunkId INT, subChunkId INT";
        let tsv_in: [&str; 2] = ["--tsv", "--no-header"];
        for (table, key, format, schema, file) in [
            (
                "objects",
                &["--key", "source_id"][..],
                &tsv_in[..],
                objects,
                &t,
            ),
            ("objects_plain", &[][..], &tsv_in[..], objects, &t),
            ("sources", &[][..], &[][..], "source_id TEXT, n BIGINT", &c),
        ] {
            let mut args = vec!["--db", &d, "-q", "load"];
            args.extend_from_slice(key);
            args.extend_from_slice(format);
            args.extend(["--schema", schema, table, file.as_str()]);
            sluice(exe, &args)?;
        }
    }
    Ok([tsv, csv, db])
}

pub fn run(
    rows: u64,
    sources: usize,
    runs: usize,
    dir: &Path,
    no_peers: bool,
    quiet: bool,
) -> Result<()> {
    if runs == 0 || sources == 0 {
        bail!("--runs and --sources must be at least 1");
    }
    let exe = sluice_exe()?;
    let [tsv, csv, db] = data(&exe, rows, sources, dir, quiet)?;
    let d = db.display().to_string();
    let keyed = JOIN.replace("{t}", "objects");
    let plain = JOIN.replace("{t}", "objects_plain");
    // The keyed run must be what it claims: rows read by the key index.
    let plan = sluice(
        &exe,
        &["--db", &d, "query", &format!("EXPLAIN ANALYZE {keyed}")],
    )?;
    if !plan.contains("Index lookup objects") {
        bail!("the join over the keyed table was not read by the key index:\n{plan}");
    }
    let answer = |sql: &str| -> Result<String> {
        Ok(sluice(&exe, &["--db", &d, "query", sql])?
            .trim()
            .lines()
            .last()
            .unwrap_or("")
            .to_string())
    };
    let want = answer(&keyed)?;
    if answer(&plain)? != want {
        bail!("the hash join's answer is not the index join's ({want})");
    }
    let mut duck = None;
    if !no_peers {
        match duckdb_version() {
            None => {
                eprintln!("duckdb: not installed for python3 (pip install duckdb); sluice alone")
            }
            Some(v) => {
                let ddb = dir.join(format!("index-join-{rows}-{sources}.duckdb"));
                if !ddb.exists() {
                    if !quiet {
                        eprintln!("loading them into DuckDB {v} ...");
                    }
                    let ok = Command::new("python3")
                        .args(["-c", DUCKDB_BUILD])
                        .args([&ddb, &tsv, &csv])
                        .status()
                        .context("running python3 to build DuckDB's database")?
                        .success();
                    if !ok {
                        bail!("DuckDB could not load the objects");
                    }
                }
                let mut child = Command::new("python3")
                    .args(["-c", DUCKDB_RUN])
                    .arg(&ddb)
                    .arg(JOIN)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .spawn()
                    .context("starting python3 with duckdb")?;
                let stdin = child.stdin.take().context("duckdb's stdin")?;
                let stdout = BufReader::new(child.stdout.take().context("duckdb's stdout")?);
                duck = Some((v, child, stdin, stdout));
            }
        }
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); 4];
    // One warm-up round, then the timed ones, the four runs interleaved.
    for round in 0..=runs {
        let a = sluice_process(&exe, &db, None, None, &keyed)?.0;
        let b = sluice_process(&exe, &db, None, None, &plain)?.0;
        if round > 0 {
            times[0].push(a);
            times[1].push(b);
        }
        if let Some((_, _, stdin, stdout)) = duck.as_mut() {
            for (i, t) in [(2, "objects"), (3, "objects_pk")] {
                writeln!(stdin, "{t}").context("writing to duckdb")?;
                let mut line = String::new();
                stdout.read_line(&mut line).context("reading from duckdb")?;
                let mut it = line.split_whitespace();
                let secs: f64 = it
                    .next()
                    .and_then(|s| s.parse().ok())
                    .with_context(|| format!("duckdb said {line:?}"))?;
                let got = it.next().unwrap_or_default();
                if got != want {
                    bail!("DuckDB's answer over {t} is {got}, sluice's {want}: no time reported");
                }
                if round > 0 {
                    times[i].push(secs);
                }
            }
        }
    }
    let peer = duck.as_ref().map(|(v, ..)| v.clone());
    if let Some((_, mut child, stdin, _)) = duck {
        drop(stdin);
        let _ = child.wait();
    }
    let meds: Vec<f64> = times
        .iter()
        .map(|t| if t.is_empty() { f64::NAN } else { median(t) })
        .collect();
    println!(
        "index-join: objects of {rows} rows keyed by source_id, joined to {sources} of their ids (answer {want}); medians of {runs} runs, a fresh process or connection each"
    );
    println!("{:<44} {:>10} {:>10}", "how", "ms", "vs_duckdb");
    let names = [
        "sluice: by the key index (index join)",
        "sluice: hash join over a scan (no key)",
        "duckdb",
        "duckdb: table with a PRIMARY KEY",
    ];
    for (i, name) in names.iter().enumerate() {
        if times[i].is_empty() {
            continue;
        }
        let ratio = if i < 2 && peer.is_some() {
            format!("{:.2}x", meds[2] / meds[i])
        } else {
            "-".into()
        };
        println!("{name:<44} {:>10.1} {ratio:>10}", meds[i] * 1000.0);
    }
    if let Some(v) = peer {
        println!(
            "duckdb {v}: a fresh read-only connection each run, connect to the last row fetched"
        );
    }
    Ok(())
}
