//! `sluice bench rejects`: a file of records that all fail loaded with
//! `--on-error skip`, beside a file of as many good records; each run's
//! counts of rows and rejects checked before any time is reported.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};

use super::common::{Measure, measure, median, run_json, sluice_exe};
use crate::generate::text::write_records;

/// The `rejects` scenario: good and bad records, loaded alike.
pub fn run(records: u64, runs: usize, dir: &Path, quiet: bool) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let exe = sluice_exe()?;
    let mut files = Vec::new();
    for (kind, prefix) in [("good", ""), ("bad", "x")] {
        let p = dir.join(format!("rejects-{kind}-{records}.csv"));
        if !p.exists() {
            let tmp = p.with_extension("tmp");
            write_records(&tmp, records, prefix)?;
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
            // The answer before the time: every good record loaded, every
            // bad one rejected.
            let (rows, rejected) = (v["rows"].as_u64(), v["rejected"].as_u64());
            let want = if *kind == "good" {
                (records, 0)
            } else {
                (0, records)
            };
            if (rows, rejected) != (Some(want.0), Some(want.1)) {
                anyhow::bail!(
                    "rejects: the {kind} file loaded {rows:?} rows and rejected {rejected:?}, not {} and {} — no time is reported for a wrong answer",
                    want.0,
                    want.1
                );
            }
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
    for (kind, _, measures) in &files {
        let secs: Vec<f64> = measures.iter().map(|m| m.seconds).collect();
        let case = serde_json::json!({"file": kind});
        super::record::runs("sluice", case, "seconds", "s", &secs);
    }
    let med = |m: &[Measure]| median(&m.iter().map(|m| m.seconds).collect::<Vec<_>>());
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
