//! `sluice bench resume`: what committing a long load in groups costs,
//! and what running it again after a kill saves. The secondary-index
//! files, loaded keyed as in that scenario, by `sluice load` processes.
//! Every table, whole or resumed, answers one question (count, sums,
//! extremes) alike before any time is reported.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::common::{median, sluice_exe, sync, timed_load};
use crate::generate::objects::{SCHEMA, UNKEYED_SCHEMA, object_files};

/// One `sluice load` of all the files into a fresh database at `db`.
fn load_cmd(db: &Path, every: &str, paths: &[PathBuf], keyed: bool) -> Result<Command> {
    let mut cmd = Command::new(sluice_exe()?);
    cmd.arg("--db")
        .arg(db)
        .args(["load", "--json", "--tsv", "--no-header"]);
    if keyed {
        cmd.args(["--key", "source_id", "--schema", SCHEMA]);
    } else {
        cmd.args(["--schema", UNKEYED_SCHEMA]);
    }
    cmd.args(["--compression", "zstd", "--commit-every", every, "objects"])
        .args(paths)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Ok(cmd)
}

#[allow(clippy::too_many_arguments)]
/// Runs the scenario and prints its table.
pub fn run(
    files: usize,
    rows: u64,
    dir: &Path,
    settings: &str,
    resume_every: &str,
    kill_at: f64,
    runs: usize,
    keyed: bool,
    quiet: bool,
) -> Result<()> {
    if !(0.05..=0.95).contains(&kill_at) {
        bail!("--kill-at must be between 0.05 and 0.95 (a fraction of the full load's time)");
    }
    let runs = runs.max(1);
    let data = dir.join(format!("secondary-{files}x{rows}"));
    let (paths, raw_bytes) = object_files(&data, files, rows, quiet)?;
    let settings: Vec<String> = settings.split(',').map(|s| s.trim().to_string()).collect();
    if !settings.iter().any(|s| s == resume_every) {
        bail!("--resume-every {resume_every} must be one of --settings");
    }
    let db = dir.join("resume-db");
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); settings.len()];
    let mut commits = vec![0u64; settings.len()];
    // Every table, loaded whole or killed and run again, answers one
    // question alike (no file lost or loaded twice) before any time is
    // reported.
    let check = "SELECT count(*), count(source_id), min(source_id), max(source_id), \
                 sum(chunkId), sum(subChunkId) FROM objects";
    let mut answers = super::answers::Agreement::new(format!("resume: {check}"));
    // Interleaved run by run, so that drift hits every setting alike.
    for r in 0..runs {
        for (i, s) in settings.iter().enumerate() {
            let _ = std::fs::remove_dir_all(&db);
            sync();
            let (secs, v) = timed_load(&mut load_cmd(&db, s, &paths, keyed)?, "sluice load")?;
            if v["rows"].as_u64() != Some(files as u64 * rows) {
                bail!("--commit-every {s}: loaded {} rows", v["rows"]);
            }
            commits[i] = v["commits"].as_u64().unwrap_or(0);
            answers.add(
                &format!("--commit-every {s}, run {}", r + 1),
                super::answers::sluice_answer(&db, check)?,
            )?;
            if !quiet {
                eprintln!(
                    "run {}: --commit-every {s}: {secs:.2} s, {} commits",
                    r + 1,
                    commits[i]
                );
            }
            times[i].push(secs);
        }
    }
    for (i, s) in settings.iter().enumerate() {
        let case = serde_json::json!({"setting": s, "load": "full"});
        super::record::runs("sluice", case, "seconds", "s", &times[i]);
    }
    let medians: Vec<f64> = times.iter().map(|t| median(t)).collect();
    let base = medians[0];
    let full = medians[settings.iter().position(|s| s == resume_every).unwrap_or(0)];

    // Kill at a fraction of the full load's time, then run it again.
    let mut resumed = Vec::new();
    let mut committed = Vec::new();
    for r in 0..runs {
        let _ = std::fs::remove_dir_all(&db);
        sync();
        let mut child = load_cmd(&db, resume_every, &paths, keyed)?
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting sluice load")?;
        std::thread::sleep(Duration::from_secs_f64(full * kill_at));
        let _ = child.kill();
        let status = child.wait()?;
        if status.success() {
            bail!("the load finished before the kill at {kill_at} of {full:.2} s");
        }
        let (secs, v) = timed_load(
            &mut load_cmd(&db, resume_every, &paths, keyed)?,
            "sluice load",
        )?;
        let skipped = v["already_loaded"].as_u64().unwrap_or(0);
        answers.add(
            &format!("killed and run again, run {}", r + 1),
            super::answers::sluice_answer(&db, check)?,
        )?;
        if !quiet {
            eprintln!(
                "resume run {}: killed at {:.2} s with {skipped} of {files} files committed; the rerun took {secs:.2} s",
                r + 1,
                full * kill_at
            );
        }
        resumed.push(secs);
        committed.push(skipped as f64 / files as f64);
    }
    let case = || {
        let load = "rerun after kill";
        serde_json::json!({"setting": resume_every, "load": load, "kill_at": kill_at})
    };
    super::record::runs("sluice", case(), "seconds", "s", &resumed);
    super::record::runs("sluice", case(), "committed_fraction", "1", &committed);
    let resume = median(&resumed);
    let at_kill = median(&committed);
    let _ = std::fs::remove_dir_all(&db);

    println!(
        "resume: {files} TSV files x {rows} rows, {} raw, {}, zstd; {} usable cores; medians of {runs} runs\n",
        crate::util::human_bytes(raw_bytes),
        if keyed { "keyed (source_id)" } else { "no key" },
        sluice::exec::usable_cores()
    );
    println!("| --commit-every | commits | time (s) | vs one commit |");
    println!("|---|---:|---:|---:|");
    for (i, s) in settings.iter().enumerate() {
        println!(
            "| {s}{} | {} | {:.2} | {:+.1} % |",
            if s == "1GiB" { " (default)" } else { "" },
            commits[i],
            medians[i],
            (medians[i] / base - 1.0) * 100.0
        );
    }
    println!(
        "\nresume: a load with --commit-every {resume_every} killed at {:.0} % of its time ({:.2} s) had {:.0} % of the files committed; running it again took {resume:.2} s = {:.2}x the full load ({full:.2} s)",
        kill_at * 100.0,
        full * kill_at,
        at_kill * 100.0,
        resume / full
    );
    Ok(())
}
