//! The load journal: which input files each commit of a table holds.
//!
//! Useful for: what a commit records of its files (the journal's name of
//! a file, size, modification time, CRC-32, rows, rejects) so that the
//! same load run again skips them (`plan` reads it back), and
//! `sluice info --loads`. The file format is in FORMAT.md
//! ([`crate::store::LoadJournal`] reads and writes it).
//! Not useful for: deciding what to skip (`plan`).

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::source::Input;
use crate::store::{LoadJournal, LoadMeta, LoadedFile};

use super::plan::is_regular;
use super::sink::GroupFiles;

/// The journal's name of an input: its absolute path with the directory's
/// symbolic links resolved (`<stdin>` for standard input). Directories are
/// resolved once for all the files in them.
#[derive(Default)]
pub struct JournalPaths {
    last: Option<(PathBuf, PathBuf)>,
}

impl JournalPaths {
    /// The journal name of `input`.
    pub fn of(&mut self, input: &Input) -> String {
        let Input::File(p) = input else {
            return "<stdin>".to_string();
        };
        let abs = std::path::absolute(p).unwrap_or_else(|_| p.clone());
        let (Some(dir), Some(name)) = (abs.parent(), abs.file_name()) else {
            return abs.to_string_lossy().into_owned();
        };
        let resolved = match &self.last {
            Some((d, r)) if d == dir => r.clone(),
            _ => {
                let r = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
                self.last = Some((dir.to_path_buf(), r.clone()));
                r
            }
        };
        resolved.join(name).to_string_lossy().into_owned()
    }
}

/// Writes the journal of a commit's files (`group`, the first of
/// `inputs`) as `dir/<version>.load`, returning its manifest entry, or
/// `None` when no file is journaled (streams and unreadable files are
/// not: they cannot be read again the same way). `created` gets the path
/// before the file is made, for a discard. Streamed: a commit may hold
/// 100,000 files.
pub(super) fn write_journal(
    group: &GroupFiles<'_>,
    inputs: &[Input],
    version: u64,
    (rel_dir, abs_dir): (&str, &Path),
    created: &mut Vec<PathBuf>,
) -> Result<Option<LoadMeta>> {
    let journaled =
        |(f, i): &(&super::sink::FileRecord, &Input)| f.unreadable.is_none() && is_regular(i);
    let n = group.files.iter().zip(inputs).filter(journaled).count();
    if n == 0 {
        return Ok(None);
    }
    let name = format!("{version:06}.load");
    let path = abs_dir.join(&name);
    created.push(path.clone());
    let committed_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut paths = JournalPaths::default();
    let mut w = LoadJournal::writer(&path, version, committed_at)?;
    for (f, input) in group.files.iter().zip(inputs) {
        if !journaled(&(f, input)) {
            continue;
        }
        w.add(&LoadedFile {
            path: paths.of(input),
            size: f.size,
            mtime_ns: f.mtime_ns,
            crc32: f.crc32,
            rows: f.rows,
            rejected: f.rejected,
        })?;
    }
    let (bytes, crc32) = w.finish()?;
    Ok(Some(LoadMeta {
        file: format!("{rel_dir}/{name}"),
        files: n as u64,
        rows: group.rows,
        bytes,
        crc32,
    }))
}
