//! `sluice info`: the tables with their schema, rows, bytes on disk and
//! segments, or (`--loads`) the load journal of each.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use sluice::store::Database;

use super::tables_of;

/// Prints the tables, or with `loads` their load journals.
pub fn run(db_dir: &Path, table: Option<&str>, json: bool, loads: bool) -> Result<()> {
    if loads {
        self::loads(db_dir, table, json)
    } else {
        tables(db_dir, table, json)
    }
}

/// `info --loads`: the commits of loads and the input files each held.
fn loads(db_dir: &Path, table: Option<&str>, json: bool) -> Result<()> {
    let db = Database::open(db_dir)?;
    let mut out = std::io::stdout().lock();
    let mut all = Vec::new();
    for (name, t) in tables_of(&db, db_dir, table)? {
        let mut journals = Vec::new();
        for l in &t.loads {
            journals.push(sluice::store::LoadJournal::read(db.dir(), l)?);
        }
        if json {
            all.push(serde_json::json!({ "table": name, "loads": journals }));
            continue;
        }
        if journals.is_empty() {
            writeln!(out, "{name}: no loads recorded")?;
        }
        for (j, l) in journals.iter().zip(&t.loads) {
            writeln!(
                out,
                "{name}: commit {} at {}: {} file{}, {} rows",
                j.version,
                crate::util::utc_time(j.committed_at),
                j.files.len(),
                if j.files.len() == 1 { "" } else { "s" },
                l.rows
            )?;
            for f in &j.files {
                writeln!(
                    out,
                    "  {}  {}, {} rows{}, crc32 {:08x}",
                    f.path,
                    crate::util::human_bytes(f.size),
                    f.rows,
                    if f.rejected > 0 {
                        format!(", {} rejected", f.rejected)
                    } else {
                        String::new()
                    },
                    f.crc32
                )?;
            }
        }
    }
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&all)?)?;
    }
    Ok(())
}

/// Each table's schema, rows, bytes on disk, segments and shards.
fn tables(db_dir: &Path, table: Option<&str>, json: bool) -> Result<()> {
    let db = Database::open(db_dir)?;
    let tables = tables_of(&db, db_dir, table)?;
    // A shard on a disk that is not mounted: say so, not its row counts.
    for (name, _) in &tables {
        db.check_shard_dirs(name)?;
    }
    let mut out = std::io::stdout().lock();
    if json {
        let v: Vec<_> = tables
            .iter()
            .map(|(name, t)| {
                serde_json::json!({
                    "table": name,
                    "schema": t.schema.to_string(),
                    "columns": t.schema.columns,
                    "rows": t.rows(),
                    "bytes": t.bytes(),
                    "segments": t.segments.len(),
                    "key": t.schema.key_column().map(|k| t.schema.columns[k].name.clone()),
                    "index_runs": t.runs.len(),
                    "sharding": t.sharding,
                    "shards": t.shard_stats().iter().enumerate().map(|(i, s)| serde_json::json!({
                        "shard": i, "rows": s.rows, "bytes": s.bytes,
                        "segments": s.segments, "index_runs": s.runs,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(());
    }
    if tables.is_empty() {
        writeln!(out, "no tables in {}", db_dir.display())?;
    }
    for (name, t) in tables {
        let runs = match t.runs.len() {
            0 => String::new(),
            1 => ", 1 key-index run".to_string(),
            n => format!(", {n} key-index runs"),
        };
        writeln!(
            out,
            "{name}: {} rows, {} on disk, {} segment{}{runs}",
            t.rows(),
            crate::util::human_bytes(t.bytes()),
            t.segments.len(),
            if t.segments.len() == 1 { "" } else { "s" }
        )?;
        for c in &t.schema.columns {
            let key = if c.primary_key { " PRIMARY KEY" } else { "" };
            writeln!(out, "  {:<24} {}{key}", c.name, c.data_type)?;
        }
        if let Some(sh) = &t.sharding {
            let how = match &sh.by {
                Some(c) => format!("by hash of {c}"),
                None => "round-robin".to_string(),
            };
            let place = if sh.paths.is_empty() {
                String::new()
            } else {
                format!(", on {}", sh.paths.join(", "))
            };
            writeln!(out, "  {} shards, {how}{place}:", sh.count)?;
            for (i, s) in t.shard_stats().iter().enumerate() {
                writeln!(
                    out,
                    "    shard {i:<3} {:>12} rows {:>10} {:>4} segment{}",
                    s.rows,
                    crate::util::human_bytes(s.bytes),
                    s.segments,
                    if s.segments == 1 { "" } else { "s" }
                )?;
            }
        }
    }
    Ok(())
}
