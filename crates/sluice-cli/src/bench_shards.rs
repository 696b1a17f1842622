//! `sluice bench shards`: the secondary-index files loaded into 1, 2, 4
//! and 8 shards at 1 and 2 threads, keyed (rows routed by the hash of the
//! key) and unkeyed (dealt round-robin); a matrix of seconds like the
//! sharding study's, and each column's ratio to one shard.

use std::path::Path;
use std::time::Instant;

use anyhow::{Result, bail};
use sluice::load::{Header, LoadOptions, load};
use sluice::source::Input;
use sluice::store::{Compression, Database};

use crate::bench::median;
use crate::bench_index::generate;

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
pub fn run(
    files: usize,
    rows: u64,
    dir: &Path,
    shards: &str,
    threads: &str,
    routing: &str,
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
    let (paths, raw_bytes) = generate(&data, files, rows, quiet)?;
    let inputs: Vec<Input> = paths.iter().map(|p| Input::File(p.clone())).collect();
    let total_rows = files as u64 * rows;
    let db_dir = dir.join("shards.db");
    let cores = sluice::exec::usable_cores();
    println!(
        "sharded load: {files} files x {rows} rows ({:.0} MB of TSV), {} usable cores, compression {compression:?}, median of {runs}",
        raw_bytes as f64 / 1e6,
        cores
    );
    for routing in routings {
        // seconds[shard index][thread index]: every run of the matrix,
        // interleaved so that drift spreads over all cells.
        let mut times = vec![vec![Vec::new(); threads.len()]; shards.len()];
        for _ in 0..runs.max(1) {
            for (si, &s) in shards.iter().enumerate() {
                for (ti, &t) in threads.iter().enumerate() {
                    let _ = std::fs::remove_dir_all(&db_dir);
                    let mut o = LoadOptions {
                        schema: Some(crate::bench_index::SCHEMA.parse()?),
                        header: Header::No,
                        threads: Some(t),
                        shards: Some(s as u32),
                        compression: Some(compression),
                        commit_every: sluice::load::CommitEvery::ONCE,
                        ..Default::default()
                    };
                    o.dialect.delimiter = b'\t';
                    if routing == Routing::RoundRobin {
                        // The same columns without the key.
                        o.schema = Some("source_id TEXT, chunkId INT, subChunkId INT".parse()?);
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
                    if !quiet {
                        eprintln!("  {} shards={s} threads={t}: {secs:.2} s", routing.name());
                    }
                    times[si][ti].push(secs);
                }
            }
        }
        let _ = std::fs::remove_dir_all(&db_dir);
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
        let base: Vec<f64> = (0..threads.len())
            .map(|ti| median(&mut times[0][ti].clone()))
            .collect();
        for (si, s) in shards.iter().enumerate() {
            let mut line = format!("{s:>8}");
            for ti in 0..threads.len() {
                let m = median(&mut times[si][ti].clone());
                line.push_str(&format!(
                    " {:>18}",
                    format!("{m:.2} ({:.2}x)", m / base[ti])
                ));
            }
            println!("{line}");
        }
        let mut rate = format!("{:>8}", "MB/s");
        for ti in 0..threads.len() {
            rate.push_str(&format!(
                " {:>18}",
                format!("{:.0}", raw_bytes as f64 / 1e6 / base[ti])
            ));
        }
        println!("{rate}  (1 shard)");
    }
    Ok(())
}
