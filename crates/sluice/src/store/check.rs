//! `sluice check`: verify a table's files against the manifest without
//! changing anything.

use std::collections::HashSet;

use super::manifest::LoadJournal;
use super::{Database, segment};
use crate::error::{Error, Result};

/// What a check found.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct CheckReport {
    pub table: String,
    pub segments: usize,
    pub runs: usize,
    pub journals: usize,
    /// Bytes read and verified.
    pub bytes: u64,
    /// Damage: a file missing, truncated, failing its checksum, or
    /// disagreeing with the manifest.
    pub problems: Vec<String>,
    /// Files in the table's directory that the manifest does not name
    /// (left by an interrupted load or merge; the next writer removes
    /// them). Harmless.
    pub unnamed: Vec<String>,
}

impl Database {
    /// Reads every file of `table` and checks it: segments (size, CRC-32,
    /// Arrow IPC structure, row counts), key-index runs (size, every
    /// checksum, keys in order, one entry per row) and load journals (size,
    /// CRC-32). Writes nothing.
    pub fn check(&self, table: &str) -> Result<CheckReport> {
        let meta = self
            .table(table)
            .ok_or_else(|| Error::Schema(format!("no table named {table:?}")))?
            .clone();
        let mut r = CheckReport {
            table: table.to_ascii_lowercase(),
            ..CheckReport::default()
        };
        let schema = meta.schema.arrow_schema();
        for seg in &meta.segments {
            r.segments += 1;
            let path = self.dir.join(&seg.file);
            match segment::read_segment(&path, seg, &schema) {
                Ok(batches) => {
                    r.bytes += seg.bytes;
                    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
                    if rows as u64 != seg.rows {
                        r.problems.push(format!(
                            "{}: {rows} rows, the manifest says {}",
                            path.display(),
                            seg.rows
                        ));
                    }
                }
                Err(e) => r.problems.push(e.to_string()),
            }
        }
        let count = meta.shard_count();
        let mut keys = vec![0u64; count as usize];
        for run in &meta.runs {
            r.runs += 1;
            if run.shard >= count {
                r.problems.push(format!(
                    "{}: in shard {}, the table has {count}",
                    self.dir.join(&run.file).display(),
                    run.shard
                ));
                continue;
            }
            let rows = meta.shard_rows(run.shard);
            match self.run(run).and_then(|open| open.verify(rows)) {
                Ok(()) => {
                    r.bytes += run.bytes;
                    keys[run.shard as usize] += run.entries;
                }
                Err(e) => r.problems.push(e.to_string()),
            }
        }
        if meta.schema.key_column().is_some() && r.problems.is_empty() {
            for (shard, &k) in keys.iter().enumerate() {
                let rows = meta.shard_rows(shard as u32);
                if k != rows {
                    let which = if count > 1 {
                        format!(" of shard {shard}")
                    } else {
                        String::new()
                    };
                    r.problems.push(format!(
                        "the key index{which} holds {k} keys for {rows} rows (every row has one key)"
                    ));
                }
            }
        }
        for l in &meta.loads {
            r.journals += 1;
            match LoadJournal::read(&self.dir, l) {
                Ok(j) if j.files.len() as u64 != l.files => r.problems.push(format!(
                    "{}: {} files, the manifest says {}",
                    self.dir.join(&l.file).display(),
                    j.files.len(),
                    l.files
                )),
                Ok(_) => r.bytes += l.bytes,
                Err(e) => r.problems.push(e.to_string()),
            }
        }
        let named: HashSet<&str> = meta
            .segments
            .iter()
            .map(|s| s.file.as_str())
            .chain(meta.runs.iter().map(|x| x.file.as_str()))
            .chain(meta.loads.iter().map(|x| x.file.as_str()))
            .collect();
        let (rel, dir) = self.table_dir(&r.table);
        let mut dirs = vec![(rel.clone(), dir.clone())];
        if count > 1 {
            for s in 0..count {
                let name = super::shard_dir_name(s);
                dirs.push((format!("{rel}/{name}"), dir.join(&name)));
            }
        }
        for (rel_dir, dir) in dirs {
            if let Ok(entries) = std::fs::read_dir(&dir) {
                for e in entries.flatten() {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let path = format!("{rel_dir}/{name}");
                    let shard_dir = count > 1 && rel_dir == rel && e.path().is_dir();
                    if !named.contains(path.as_str()) && !shard_dir {
                        r.unnamed.push(path[rel.len() + 1..].to_string());
                    }
                }
            }
        }
        r.unnamed.sort();
        Ok(r)
    }
}
