//! `sluice compact`: merge the key-index runs of a keyed table.

use std::path::Path;

use anyhow::{Context, Result};
use sluice::store::Database;

/// Merges each shard's key-index runs into one and says what it did.
pub fn run(db_dir: &Path, table: &str, quiet: bool) -> Result<()> {
    let mut db = Database::open_writer(db_dir)
        .with_context(|| format!("opening database {}", db_dir.display()))?;
    // Shards with more than one run: each ends with one.
    let (shards, merging) = match db.table(table) {
        Some(t) => {
            let stats = t.shard_stats();
            (stats.len(), stats.iter().filter(|s| s.runs >= 2).count())
        }
        None => (0, 0),
    };
    let n = db.compact(table)?;
    if quiet {
        return Ok(());
    }
    match (n, shards) {
        (0, 1) => println!("{table}: nothing to merge (at most one run)"),
        (0, _) => println!("{table}: nothing to merge (at most one run per shard)"),
        (n, 1) => println!("{table}: merged {n} runs into one"),
        (n, _) if merging == shards => {
            println!("{table}: merged {n} runs into {merging}, one per shard")
        }
        (n, _) => println!(
            "{table}: merged {n} runs into {merging}, one per shard that had more than one ({} of {shards} shards had at most one)",
            shards - merging
        ),
    }
    Ok(())
}
