//! `sluice check`: verify a table's files against the manifest without
//! changing anything.

use std::collections::HashSet;
use std::path::Path;

use super::manifest::{LoadJournal, MANIFEST_TMP, Manifest};
use super::{Database, TABLES_DIR, TableMeta, segment};
use crate::error::{Error, Result};

/// How many times a check starts again on a newer manifest when a
/// writer's commit removed files of the snapshot it was checking (a merge
/// deletes the runs it replaced). Each retry needs another commit during
/// the check, so three means a writer committing without pause.
const CHECK_RETRIES: usize = 3;

/// What a check found.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct CheckReport {
    pub table: String,
    /// The manifest version whose files were checked.
    pub version: u64,
    pub segments: usize,
    pub runs: usize,
    pub journals: usize,
    /// Bytes read and verified.
    pub bytes: u64,
    /// Damage: a file missing, truncated, failing its checksum, or
    /// disagreeing with the manifest.
    pub problems: Vec<String>,
    /// Files in the table's directory that no manifest names (left by an
    /// interrupted load or merge, which the next writer removes, or being
    /// written by a writer now: see [`Database::live_writer`]). Harmless.
    pub unnamed: Vec<String>,
}

/// A writer holding the database's lock now (see [`Database::live_writer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct LiveWriter {
    /// Its process id, as it wrote it in the lock file.
    pub pid: Option<u32>,
}

impl Database {
    /// Reads every file of `table` and checks it: segments (size, CRC-32,
    /// Arrow IPC structure, row counts), key-index runs (size, every
    /// checksum, keys in order, one entry per row) and load journals (size,
    /// CRC-32). Writes nothing.
    ///
    /// It checks the files of one snapshot, the manifest this handle read.
    /// When it finds damage and a writer has committed since (a merge
    /// deletes the runs it replaced), it checks the newer snapshot
    /// instead; a table that keeps changing is an error, not damage.
    pub fn check(&self, table: &str) -> Result<CheckReport> {
        let name = table.to_ascii_lowercase();
        let no_table = || Error::Schema(format!("no table named {table:?}"));
        let mut meta = self.table(&name).ok_or_else(no_table)?.clone();
        let mut version = self.manifest.version;
        for _ in 0..=CHECK_RETRIES {
            let mut r = self.check_snapshot(&name, &meta);
            r.version = version;
            let now = Manifest::read(&self.dir)?.unwrap_or_default();
            let fresh = now.tables.get(&name).cloned();
            if now.version == version || r.problems.is_empty() {
                r.unnamed = self.unnamed_files(&name, &meta, fresh.as_ref());
                return Ok(r);
            }
            meta = fresh.ok_or_else(no_table)?;
            version = now.version;
        }
        Err(Error::Config(format!(
            "table {name} changed {} times while it was checked (a writer is committing); run the check again",
            CHECK_RETRIES + 1
        )))
    }

    /// Checks the files `meta` names (one snapshot of table `name`).
    fn check_snapshot(&self, name: &str, meta: &TableMeta) -> CheckReport {
        let mut r = CheckReport {
            table: name.to_string(),
            segments: meta.segments.len(),
            runs: meta.runs.len(),
            journals: meta.loads.len(),
            ..CheckReport::default()
        };
        if let Err(e) = super::shard_dirs_present(&self.dir, name, meta) {
            // Every file of that shard would fail alike: say why once.
            r.problems.push(e.to_string());
            return r;
        }
        let schema = meta.schema.arrow_schema();
        for seg in &meta.segments {
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
        r
    }

    /// Files in the directories of table `name` that neither the snapshot
    /// checked nor the newest manifest names, relative to the table's
    /// directory.
    fn unnamed_files(
        &self,
        name: &str,
        meta: &TableMeta,
        fresh: Option<&TableMeta>,
    ) -> Vec<String> {
        let named: HashSet<&str> = [Some(meta), fresh]
            .into_iter()
            .flatten()
            .flat_map(|m| {
                m.segments
                    .iter()
                    .map(|s| s.file.as_str())
                    .chain(m.runs.iter().map(|x| x.file.as_str()))
                    .chain(m.loads.iter().map(|x| x.file.as_str()))
            })
            .collect();
        let (rel, dir) = self.table_dir(name);
        let mut out: Vec<String> = table_files(&dir, &rel, meta.shard_count() > 1)
            .into_iter()
            .filter(|f| !named.contains(f.as_str()))
            .map(|f| f[rel.len() + 1..].to_string())
            .collect();
        out.sort();
        out
    }

    /// Files that no table of the manifest names and that are outside
    /// the committed tables' directories: a `MANIFEST.tmp` (a commit that
    /// was interrupted), and the files of a table whose first load never
    /// committed. Paths relative to the database directory; with `table`,
    /// only those of that table (and `MANIFEST.tmp`).
    pub fn leftovers(&self, table: Option<&str>) -> Result<Vec<String>> {
        let mut out = Vec::new();
        if self.dir.join(MANIFEST_TMP).exists() {
            out.push(MANIFEST_TMP.to_string());
        }
        let now = Manifest::read(&self.dir)?.unwrap_or_default();
        let tables = self.dir.join(TABLES_DIR);
        let Ok(entries) = std::fs::read_dir(&tables) else {
            return Ok(out);
        };
        let wanted = table.map(str::to_ascii_lowercase);
        let mut found = Vec::new();
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if self.manifest.tables.contains_key(&name)
                || now.tables.contains_key(&name)
                || wanted.as_ref().is_some_and(|w| *w != name)
            {
                continue;
            }
            let rel = format!("{TABLES_DIR}/{name}");
            if e.path().is_dir() {
                found.extend(table_files(&e.path(), &rel, true));
            } else {
                found.push(rel);
            }
        }
        found.sort();
        out.extend(found);
        Ok(out)
    }

    /// The writer holding the database's lock now, if any (this handle
    /// itself when it is a writer). Takes no lock that a writer could
    /// wait for: it only probes.
    pub fn live_writer(&self) -> Option<LiveWriter> {
        if self.lock.is_some() {
            return Some(LiveWriter {
                pid: Some(std::process::id()),
            });
        }
        let path = self.dir.join(super::LOCK_FILE);
        let mut f = std::fs::File::open(&path).ok()?;
        match f.try_lock_shared() {
            Ok(()) => {
                let _ = f.unlock();
                None
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut s = String::new();
                let _ = std::io::Read::read_to_string(&mut f, &mut s);
                Some(LiveWriter {
                    pid: s.trim().parse().ok(),
                })
            }
            Err(std::fs::TryLockError::Error(_)) => None,
        }
    }
}

/// The files under a table's directory `dir` (relative path `rel`), as
/// paths relative to the database directory; with `shards`, those in its
/// shard directories (`sNNN`, or links to them) too.
fn table_files(dir: &Path, rel: &str, shards: bool) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = format!("{rel}/{name}");
        if e.path().is_dir() {
            if shards && super::is_shard_dir_name(&name) {
                out.extend(table_files(&e.path(), &path, false));
            } else {
                out.push(format!("{path}/"));
            }
        } else if !(shards && super::is_shard_dir_name(&name) && e.path().is_symlink()) {
            out.push(path);
        }
    }
    out
}
