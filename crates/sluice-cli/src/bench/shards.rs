//! `sluice bench shards`: the secondary-index files, as TSV and as the
//! same rows in JSON lines, loaded into 1, 2, 4 and 8 shards at 1 and 2
//! threads, keyed (rows routed by the hash of the key) and unkeyed (dealt
//! round-robin); a matrix of seconds like the sharding study's, each
//! cell's ratio to one shard, and the input rate per core. No peer runs
//! here; every load's table answers one question alike (count, sums,
//! extremes) before any time is reported.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use sluice::load::{Header, LoadOptions, load};
use sluice::parse::{Format, JsonFormat};
use sluice::source::Input;
use sluice::store::{Compression, Database};

use super::common::median;
use crate::generate::objects::{SCHEMA, UNKEYED_SCHEMA, object_files, rows_as_json};

/// The question every load answers alike (see `run`).
const CHECK: &str = "SELECT count(*), count(source_id), min(source_id), max(source_id), \
     sum(chunkId), sum(subChunkId), min(subChunkId), max(chunkId) FROM objects";

/// What the rows are routed by.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Routing {
    Key,
    RoundRobin,
}

impl Routing {
    fn name(self) -> &'static str {
        match self {
            Routing::Key => "hash of key",
            Routing::RoundRobin => "round-robin",
        }
    }
}

/// The same rows as JSON lines, one file per TSV file (written once).
fn jsonl_copies(tsv: &[PathBuf], dir: &Path) -> Result<(Vec<PathBuf>, u64)> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut out = Vec::with_capacity(tsv.len());
    let mut bytes = 0;
    for p in tsv {
        let name = p
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        let j = dir.join(format!("{name}.jsonl"));
        if !j.exists() {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            let mut s = String::with_capacity(text.len() * 2 + 64);
            rows_as_json(&text, ["source_id", "chunkId", "subChunkId"], &mut s)
                .with_context(|| p.display().to_string())?;
            let tmp = j.with_extension("tmp");
            std::fs::write(&tmp, s.as_bytes())
                .with_context(|| format!("writing {}", tmp.display()))?;
            std::fs::rename(&tmp, &j)?;
        }
        bytes += std::fs::metadata(&j)?.len();
        out.push(j);
    }
    Ok((out, bytes))
}

/// Parses a list of positive numbers, comma separated.
fn parse_list(s: &str, what: &str) -> Result<Vec<usize>> {
    s.split(',')
        .map(|t| {
            t.trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| anyhow::anyhow!("{what}: {t:?} is not a positive number"))
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
/// Runs the scenario and prints a matrix for each input and routing.
pub fn run(
    files: usize,
    rows: u64,
    dir: &Path,
    shards: &str,
    threads: &str,
    routing: &str,
    formats: &str,
    runs: usize,
    compression: Compression,
    quiet: bool,
) -> Result<()> {
    let shards = parse_list(shards, "--shards")?;
    let threads = parse_list(threads, "--threads-list")?;
    if let Some(&s) = shards.iter().find(|&&s| s > 256) {
        bail!("--shards {s}: at most 256");
    }
    let routings = routing
        .split(',')
        .map(|r| match r.trim() {
            "key" => Ok(Routing::Key),
            "round-robin" | "rr" => Ok(Routing::RoundRobin),
            other => bail!("--routing {other:?}: expected key or round-robin"),
        })
        .collect::<Result<Vec<_>>>()?;
    let data = dir.join(format!("secondary-{files}x{rows}"));
    let (paths, tsv_bytes) = object_files(&data, files, rows, quiet)?;
    let mut sets = Vec::new();
    for f in formats.split(',') {
        match f.trim() {
            "tsv" => sets.push(("tsv", paths.clone(), tsv_bytes)),
            "jsonl" => {
                let (j, b) =
                    jsonl_copies(&paths, &dir.join(format!("secondary-{files}x{rows}-jsonl")))?;
                sets.push(("jsonl", j, b));
            }
            other => bail!("--formats {other:?}: expected tsv or jsonl"),
        }
    }
    let total_rows = files as u64 * rows;
    let db_dir = dir.join("shards.db");
    let cores = sluice::exec::usable_cores();
    println!(
        "sharded load: {files} files x {rows} rows ({:.0} MB of TSV), {} usable cores, compression {compression:?}, median of {runs}",
        tsv_bytes as f64 / 1e6,
        cores
    );
    // Every load, whatever its format, routing, shards and threads, holds
    // the same rows: its answer to one question is checked against the
    // first before any time is reported.
    let mut answers = super::answers::Agreement::new(format!("shards: {CHECK}"));
    for (format, paths, raw_bytes) in &sets {
        let inputs: Vec<Input> = paths.iter().map(|p| Input::File(p.clone())).collect();
        for &routing in &routings {
            // seconds[shard index][thread index]: every run of the matrix,
            // interleaved so that drift spreads over all cells.
            let mut times = vec![vec![Vec::new(); threads.len()]; shards.len()];
            for _ in 0..runs.max(1) {
                for (si, &s) in shards.iter().enumerate() {
                    for (ti, &t) in threads.iter().enumerate() {
                        let _ = std::fs::remove_dir_all(&db_dir);
                        let mut o = LoadOptions {
                            schema: Some(SCHEMA.parse()?),
                            header: Header::No,
                            threads: Some(t),
                            shards: Some(s as u32),
                            compression: Some(compression),
                            commit_every: sluice::load::CommitEvery::ONCE,
                            ..Default::default()
                        };
                        o.dialect.delimiter = b'\t';
                        if *format == "jsonl" {
                            o.format = Format::Json(JsonFormat::default());
                        }
                        if routing == Routing::RoundRobin {
                            // The same columns without the key.
                            o.schema = Some(UNKEYED_SCHEMA.parse()?);
                        }
                        let mut db = Database::open_writer(&db_dir)?;
                        let start = Instant::now();
                        let summary = load(&mut db, "objects", &inputs, &o)?;
                        let secs = start.elapsed().as_secs_f64();
                        if summary.rows != total_rows {
                            bail!("loaded {} rows, expected {total_rows}", summary.rows);
                        }
                        let per = db
                            .table("objects")
                            .map(|m| m.shard_stats())
                            .unwrap_or_default();
                        if per.len() != s || per.iter().any(|p| p.rows == 0) {
                            bail!(
                                "{s} shards asked, {} hold rows",
                                per.iter().filter(|p| p.rows > 0).count()
                            );
                        }
                        answers.add(
                            &format!("{format} {} shards={s} threads={t}", routing.name()),
                            super::answers::sluice_rows(&sluice::query::query(&db, CHECK, None)?),
                        )?;
                        if !quiet {
                            eprintln!(
                                "  {format} {} shards={s} threads={t}: {secs:.2} s",
                                routing.name()
                            );
                        }
                        times[si][ti].push(secs);
                    }
                }
            }
            let _ = std::fs::remove_dir_all(&db_dir);
            let route = match routing {
                Routing::Key => "key",
                Routing::RoundRobin => "round-robin",
            };
            for (si, &s) in shards.iter().enumerate() {
                for (ti, &t) in threads.iter().enumerate() {
                    let case = serde_json::json!({
                        "shards": s, "threads": t, "routing": route, "format": format,
                    });
                    super::record::runs("sluice", case, "seconds", "s", &times[si][ti]);
                }
            }
            println!();
            println!(
                "routing: {} — seconds (ratio to 1 shard at the same threads)",
                routing.name()
            );
            let mut head = format!("{:>8}", "shards");
            for t in &threads {
                head.push_str(&format!(" {:>18}", format!("threads={t}")));
            }
            println!("{head}");
            let base: Vec<f64> = (0..threads.len()).map(|ti| median(&times[0][ti])).collect();
            for (si, s) in shards.iter().enumerate() {
                let mut line = format!("{s:>8}");
                for ti in 0..threads.len() {
                    let m = median(&times[si][ti]);
                    line.push_str(&format!(
                        " {:>18}",
                        format!("{m:.2} ({:.2}x)", m / base[ti])
                    ));
                }
                println!("{line}");
            }
            let mut rate = format!("{:>8}", "MB/s/core");
            for (ti, t) in threads.iter().enumerate() {
                let mbs = *raw_bytes as f64 / 1e6 / base[ti];
                rate.push_str(&format!(
                    " {:>18}",
                    format!("{:.0}", mbs / (*t).min(cores) as f64)
                ));
            }
            println!("{rate}  (1 shard: input MB/s over the threads used)");
        }
    }
    Ok(())
}
