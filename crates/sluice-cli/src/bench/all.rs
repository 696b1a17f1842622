//! `sluice bench all`: every measuring scenario in turn, each writing its
//! results file, then the report of them. `--quick` runs each at a small
//! size (minutes on a laptop); without it, at the sizes BENCHMARKS.md
//! quotes (hours on 2 cores).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::Args;

use super::Scenario;

#[derive(Args)]
pub struct AllArgs {
    /// Small sizes and few runs: every scenario in minutes
    #[arg(long)]
    quick: bool,
    /// Where the data, the results (DIR/results) and the report
    /// (DIR/report) go
    #[arg(long, default_value = "bench-data")]
    pub dir: PathBuf,
    /// Only these scenarios, comma separated (ingest, q1, tpch, cold,
    /// secondary-index, resume, shards, rejects, parquet, python, serve, into)
    #[arg(long)]
    only: Option<String>,
    /// Do not run the peers
    #[arg(long)]
    no_peers: bool,
}

/// The scenarios `all` runs, in order, at the size `quick` asks for.
fn scenarios(a: &AllArgs) -> Vec<Scenario> {
    let q = a.quick;
    let dir = a.dir.clone();
    let no_peers = a.no_peers;
    let pick = |quick: &str, full: &str| if q { quick } else { full }.to_string();
    let (files, rows) = if q { (50, 20_000) } else { (200, 100_000) };
    let runs = |quick: usize, full: usize| if q { quick } else { full };
    let sf = if q { 0.5 } else { 1.0 };
    vec![
        Scenario::Ingest {
            data: "ints".into(),
            sf: 1.0,
            profile: false,
            size: pick("256MB", "1.28GB"),
            threads_list: pick(&sweep(), "1,2,64"),
            runs: 3,
            dir: dir.clone(),
            no_peers,
            json: false,
        },
        Scenario::Q1 {
            sf,
            threads_list: pick(&sweep(), "1,2,64"),
            runs: runs(3, 5),
            dir: dir.clone(),
            no_peers,
        },
        Scenario::Tpch {
            args: super::SuiteArgs {
                sf: if q { 0.1 } else { 1.0 },
                threads: None,
                runs: runs(3, 5),
                queries: "all".into(),
                mode: None,
                dir: dir.clone(),
                no_peers,
                memory_limit: None,
            },
        },
        Scenario::Cold {
            dataset: super::cold::Dataset::Lineitem,
            sf,
            runs: runs(5, 15),
            dir: dir.clone(),
            no_peers,
        },
        Scenario::SecondaryIndex {
            files,
            rows,
            lookups: if q { 20_000 } else { 100_000 },
            dir: dir.clone(),
            no_peers,
            keep: false,
            compression: "zstd".into(),
            runs: runs(1, 3),
            into_connections: Vec::new(),
        },
        Scenario::Resume {
            files,
            rows,
            dir: dir.clone(),
            settings: pick("all,16MiB,4MiB", "all,1GiB,256MiB,64MiB"),
            resume_every: pick("4MiB", "64MiB"),
            kill_at: 0.5,
            runs: runs(1, 3),
            no_key: false,
        },
        Scenario::Shards {
            files,
            rows,
            dir: dir.clone(),
            shards: pick("1,2,4", "1,2,4,8"),
            threads_list: "1,2".into(),
            routing: "key,round-robin".into(),
            formats: pick("tsv", "tsv,jsonl"),
            runs: runs(1, 3),
            compression: "none".into(),
        },
        Scenario::Rejects {
            records: if q { 200_000 } else { 1_000_000 },
            runs: 3,
            dir: dir.clone(),
        },
        Scenario::Parquet {
            sf,
            threads: None,
            runs: runs(3, 5),
            dir: dir.clone(),
            no_peers,
        },
        Scenario::Python {
            sf,
            size: pick("256MB", "1.28GB"),
            threads: None,
            runs: runs(3, 7),
            dir: dir.clone(),
            no_peers,
        },
        Scenario::Serve {
            rows: if q { 200_000 } else { 1_000_000 },
            clients: pick("1,8,64", "1,2,8,32,128,256,512,1024"),
            seconds: if q { 3 } else { 5 },
            runs: runs(1, 3),
            dir: dir.clone(),
            no_peers,
            mixed_clients: if q { 8 } else { 32 },
            q1_sf: sf,
            storm_clients: if q { 16 } else { 64 },
            idle: if q { 100 } else { 1000 },
            soak: if q { 0 } else { 600 },
            soak_hold: 100,
        },
        Scenario::Into {
            size: pick("256MB", "1.28GB"),
            connections_list: pick("1,2", "1,2,4,8"),
            runs: runs(1, 3),
            dir: dir.clone(),
            url: None,
            no_peers,
            no_pgloader: q,
        },
    ]
}

/// Thread counts up to this machine's cores: 1, 2, 4, ... and the cores.
fn sweep() -> String {
    let cores = sluice::exec::usable_cores().max(2);
    let mut t: Vec<usize> = std::iter::successors(Some(1usize), |x| Some(x * 2))
        .take_while(|&x| x < cores)
        .collect();
    t.push(cores);
    t.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Why `name` cannot run here, when it cannot.
fn missing(name: &str) -> Option<String> {
    let has = |prog: &str, arg: &str| {
        Command::new(prog)
            .arg(arg)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    match name {
        "python"
            if !Command::new("python3")
                .args(["-c", "import sluice, pyarrow"])
                .output()
                .is_ok_and(|o| o.status.success()) =>
        {
            Some(
                "python3 cannot import sluice and pyarrow (pip install ./crates/sluice-python pyarrow)"
                    .into(),
            )
        }
        "serve" if !has("pgbench", "--version") => {
            Some("no pgbench (apt-get install postgresql-client)".into())
        }
        "serve" | "into" if !postgres_installed() => {
            Some("no PostgreSQL server programs (apt-get install postgresql)".into())
        }
        _ => None,
    }
}

/// Whether PostgreSQL's server programs (initdb) are installed, as the
/// serve and into scenarios look for them.
fn postgres_installed() -> bool {
    let debian = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| d.flatten().any(|e| e.path().join("bin/initdb").is_file()))
        .unwrap_or(false);
    debian
        || Command::new("pg_config")
            .arg("--bindir")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .is_some_and(|o| {
                Path::new(String::from_utf8_lossy(&o.stdout).trim())
                    .join("initdb")
                    .is_file()
            })
}

pub fn run(a: AllArgs, quiet: bool) -> Result<()> {
    let all = scenarios(&a);
    let names: Vec<&str> = all.iter().map(|s| s.name()).collect();
    let only: Option<Vec<String>> = a
        .only
        .as_deref()
        .map(|o| o.split(',').map(|s| s.trim().to_string()).collect());
    if let Some(only) = &only {
        for o in only {
            if !names.contains(&o.as_str()) {
                bail!("--only: no scenario {o:?} (there are {})", names.join(", "));
            }
        }
    }
    let results = a.dir.join("results");
    let started = Instant::now();
    let mut ran = Vec::new();
    let mut left_out = Vec::new();
    let mut failed = Vec::new();
    for s in all {
        let name = s.name();
        if only.as_ref().is_some_and(|o| !o.iter().any(|x| x == name)) {
            continue;
        }
        // An older file would be charted as if this run had made it.
        let file = results.join(format!("{name}.json"));
        match std::fs::remove_file(&file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                bail!("removing {}: {e}", file.display())
            }
            _ => {}
        }
        if let Some(why) = missing(name) {
            eprintln!("== {name}: left out: {why}");
            left_out.push(format!("{name} ({why})"));
            continue;
        }
        eprintln!("== {name}");
        let t = Instant::now();
        super::record::take();
        match super::run_scenario(s, quiet) {
            Ok(()) => {
                super::write_results(&file, name, &a.dir, quiet)?;
                eprintln!("== {name}: {:.0} s", t.elapsed().as_secs_f64());
                ran.push(name);
            }
            Err(e) => {
                eprintln!("== {name}: failed: {e:#}");
                failed.push(format!("{name} ({e:#})"));
            }
        }
    }
    let report = a.dir.join("report");
    if ran.is_empty() {
        eprintln!("no scenario ran; no report");
    } else {
        super::report::run(&[results], &report, quiet)?;
    }
    eprintln!(
        "bench all: {} ran in {:.0} s ({}); report: {}",
        ran.len(),
        started.elapsed().as_secs_f64(),
        ran.join(", "),
        report.join("index.html").display()
    );
    if !left_out.is_empty() {
        eprintln!("left out: {}", left_out.join("; "));
    }
    if !failed.is_empty() {
        bail!("{} scenario(s) failed: {}", failed.len(), failed.join("; "));
    }
    Ok(())
}
