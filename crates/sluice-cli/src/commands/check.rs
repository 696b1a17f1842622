//! `sluice check`: verify every file of a table against the manifest.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use sluice::store::Database;

use super::tables_of;

/// Prints what `check` found; exits 1 when anything is damaged (the
/// manifest itself included), 2 when it cannot check at all.
pub fn run(db_dir: &Path, table: Option<&str>, json: bool) -> Result<()> {
    // A manifest that fails its own checks is damage that check reports,
    // not a failure to run.
    let mut damaged_db: Vec<String> = Vec::new();
    let mut reports = Vec::new();
    let mut leftovers = Vec::new();
    let mut writer = None;
    match Database::open(db_dir) {
        Err(e @ sluice::Error::Corrupt { .. }) => damaged_db.push(e.to_string()),
        Err(e) => return Err(e.into()),
        Ok(db) => {
            let exists = table.is_none_or(|t| db.table(t).is_some());
            leftovers = match db.leftovers(table) {
                Err(e @ sluice::Error::Corrupt { .. }) => {
                    damaged_db.push(e.to_string());
                    Vec::new()
                }
                other => other?,
            };
            writer = db.live_writer();
            // A table whose first load never committed has only leftovers.
            if exists || leftovers.is_empty() {
                for (name, _) in tables_of(&db, db_dir, table)? {
                    match db.check(name) {
                        Err(e @ sluice::Error::Corrupt { .. }) => damaged_db.push(e.to_string()),
                        other => reports.push(other?),
                    }
                }
            }
        }
    }
    // Why files no manifest names are there.
    let why = match writer {
        Some(w) => format!(
            "a writer{} holds the database: files of its load or merge in progress",
            w.pid.map(|p| format!(", pid {p},")).unwrap_or_default()
        ),
        None => "left by an interrupted load or merge; the next load removes them".to_string(),
    };
    let mut out = std::io::stdout().lock();
    if json {
        let v = serde_json::json!({
            "tables": reports,
            "problems": damaged_db,
            "leftovers": leftovers,
            "writer": writer,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        for p in &damaged_db {
            writeln!(out, "damaged: {p}")?;
        }
        for r in &reports {
            writeln!(
                out,
                "{}: {} segment{}, {} key-index run{}, {} load journal{} ({}): {}",
                r.table,
                r.segments,
                if r.segments == 1 { "" } else { "s" },
                r.runs,
                if r.runs == 1 { "" } else { "s" },
                r.journals,
                if r.journals == 1 { "" } else { "s" },
                crate::util::human_bytes(r.bytes),
                if r.problems.is_empty() {
                    "ok".to_string()
                } else {
                    format!(
                        "{} problem{}",
                        r.problems.len(),
                        if r.problems.len() == 1 { "" } else { "s" }
                    )
                }
            )?;
            for p in &r.problems {
                writeln!(out, "  damaged: {p}")?;
            }
            if !r.unnamed.is_empty() {
                writeln!(
                    out,
                    "  {} file{} not named by the manifest ({why}): {}",
                    r.unnamed.len(),
                    if r.unnamed.len() == 1 { "" } else { "s" },
                    r.unnamed.join(", ")
                )?;
            }
        }
        if !leftovers.is_empty() {
            writeln!(
                out,
                "{} file{} of no committed table ({why}): {}",
                leftovers.len(),
                if leftovers.len() == 1 { "" } else { "s" },
                leftovers.join(", ")
            )?;
        }
    }
    let damaged = damaged_db.len() + reports.iter().map(|r| r.problems.len()).sum::<usize>();
    if damaged > 0 {
        out.flush()?;
        drop(out);
        std::process::exit(1);
    }
    Ok(())
}
