//! The plan of a load: which inputs it reads.
//!
//! Useful for: an input listed twice (a glob and its own name) read once,
//! and the resume: inputs an earlier commit of the table loaded (its load
//! journal names them with size and CRC-32) skipped, read again, or an
//! error when they changed (`--reload`). Commit groups are cut by the
//! reader, after the file that reaches a `--commit-every` limit.
//! Not useful for: writing the journal (`journal`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};
use crate::exec::worker_count;
use crate::source::Input;
use crate::store::{Database, LoadJournal, LoadedFile};

use super::journal::JournalPaths;
use super::{LoadOptions, Reload};

/// The inputs with each file once (`None`: all of them are), and how many
/// were dropped. Known by device and inode: 16 bytes a file, for loads of
/// 100,000 files. The list is copied only when something is dropped.
pub(super) fn unique_inputs(inputs: &[Input]) -> (Option<Vec<Input>>, u64) {
    let mut seen = std::collections::HashSet::new();
    let keep: Vec<bool> = inputs
        .iter()
        .map(|i| file_id(i).is_none_or(|id| seen.insert(id)))
        .collect();
    drop(seen);
    let listed_twice = keep.iter().filter(|k| !**k).count() as u64;
    let deduped: Option<Vec<Input>> = (listed_twice > 0).then(|| {
        inputs
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(i, _)| i.clone())
            .collect()
    });
    (deduped, listed_twice)
}

/// The inputs still to load (`None`: all of them), and how many are
/// skipped because an earlier commit of the table loaded them: the same
/// path, size and CRC-32 of the bytes. The size and modification time
/// alone never skip a file: an edit that keeps both (`touch -r`, a copy
/// with `cp -p`, a clock set back) would leave its new rows unloaded.
pub(super) fn resume_plan(
    db: &Database,
    table: &str,
    inputs: &[Input],
    opts: &LoadOptions,
) -> Result<(Option<Vec<Input>>, u64)> {
    let meta = match db.table(table) {
        Some(m) if !m.loads.is_empty() && opts.reload != Reload::All => m,
        _ => return Ok((None, 0)),
    };
    let mut loaded: HashMap<String, (u64, LoadedFile)> = HashMap::new();
    for l in &meta.loads {
        let j = LoadJournal::read(db.dir(), l)?;
        for f in j.files {
            loaded.insert(f.path.clone(), (j.version, f));
        }
    }
    resume_against(&loaded, inputs, opts)
}

/// [`resume_plan`] against the files of any journal: `loaded` maps a
/// file's journal name ([`JournalPaths`]) to the commit that loaded it
/// (a number for messages) and what was recorded of it.
pub(super) fn resume_against(
    loaded: &HashMap<String, (u64, LoadedFile)>,
    inputs: &[Input],
    opts: &LoadOptions,
) -> Result<(Option<Vec<Input>>, u64)> {
    let reload = opts.reload;
    if loaded.is_empty() || reload == Reload::All {
        return Ok((None, 0));
    }
    // Per input: load it (`None`), or compare its bytes with the journal's.
    let mut plan: Vec<Option<Compare>> = Vec::with_capacity(inputs.len());
    let mut paths = JournalPaths::default();
    for input in inputs {
        let Input::File(p) = input else {
            plan.push(None);
            continue;
        };
        let Some((version, f)) = loaded.get(&paths.of(input)) else {
            plan.push(None);
            continue;
        };
        // A file that cannot be read is the load's to report; a pipe or
        // device is read again.
        let Ok(md) = std::fs::metadata(p) else {
            plan.push(None);
            continue;
        };
        if !md.is_file() {
            plan.push(None);
            continue;
        }
        let size = md.len();
        if size != f.size {
            if reload == Reload::Changed {
                plan.push(None);
                continue;
            }
            return Err(Error::Changed {
                path: input.display_name(),
                version: *version,
                what: format!("{} bytes then, {size} now", f.size),
            });
        }
        plan.push(Some(Compare {
            version: *version,
            same_time: mtime_ns(&md) == f.mtime_ns,
            crc32: f.crc32,
        }));
    }
    let crcs = fingerprints(inputs, &plan, worker_count(opts.threads))?;
    let mut todo = Vec::new();
    let mut skipped = 0;
    for ((input, p), crc) in inputs.iter().zip(&plan).zip(crcs) {
        match (p, crc) {
            (Some(c), Some(crc)) if c.crc32 == crc => skipped += 1,
            (Some(c), Some(_)) if reload != Reload::Changed => {
                return Err(Error::Changed {
                    path: input.display_name(),
                    version: c.version,
                    what: if c.same_time {
                        "same size and modification time, different contents".to_string()
                    } else {
                        "same size, different contents".to_string()
                    },
                });
            }
            _ => todo.push(input.clone()),
        }
    }
    Ok((Some(todo), skipped))
}

/// An input file an earlier commit loaded, with its size then: its bytes
/// are compared with what the journal says of them.
struct Compare {
    /// The commit that loaded it.
    version: u64,
    /// Whether its modification time is the one journaled (for messages).
    same_time: bool,
    crc32: u32,
}

/// The CRC-32 of each input that `plan` says to compare (`None` for the
/// others), read on `threads` threads: a resumed load of many files reads
/// the files committed before again, at the speed of the disk.
fn fingerprints(
    inputs: &[Input],
    plan: &[Option<Compare>],
    threads: usize,
) -> Result<Vec<Option<u32>>> {
    let next = AtomicU64::new(0);
    let results: Vec<Mutex<Option<Result<u32>>>> = plan.iter().map(|_| Mutex::new(None)).collect();
    let todo = plan.iter().filter(|p| p.is_some()).count();
    std::thread::scope(|s| {
        for _ in 0..threads.min(todo) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                    if i >= plan.len() {
                        break;
                    }
                    let (Some(_), Input::File(p)) = (&plan[i], &inputs[i]) else {
                        continue;
                    };
                    let crc = crate::source::fingerprint(p);
                    if let Ok(mut r) = results[i].lock() {
                        *r = Some(crc);
                    }
                }
            });
        }
    });
    results
        .into_iter()
        .zip(plan)
        .map(|(r, p)| {
            let r = r
                .into_inner()
                .map_err(|_| Error::Internal("a checksum thread panicked".into()))?;
            match (p, r) {
                (None, _) => Ok(None),
                (Some(_), Some(crc)) => crc.map(Some),
                (Some(_), None) => Err(Error::Internal("a file was not checksummed".into())),
            }
        })
        .collect()
}

/// Whether an input is a regular file (not standard input, a pipe or a
/// device): only those are journaled and skipped by a later load.
pub(super) fn is_regular(input: &Input) -> bool {
    match input {
        Input::File(p) => std::fs::metadata(p).is_ok_and(|m| m.is_file()),
        Input::Stdin => false,
    }
}

/// The identity of an input file (device, inode), when the system gives one.
fn file_id(input: &Input) -> Option<(u64, u64)> {
    let Input::File(p) = input else {
        return None;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = p;
        None
    }
}

/// A file's modification time in nanoseconds since the Unix epoch (0 when
/// the system cannot say).
pub(crate) fn mtime_ns(md: &std::fs::Metadata) -> u64 {
    md.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}
