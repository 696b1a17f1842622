//! A database kept open for many queries, reopened when a commit changes
//! it: a long-lived reader (the server, a Python handle) sees each commit
//! without paying the open (manifest read, segment mapping and checksum)
//! on every query.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};

use super::manifest::MANIFEST_FILE;
use super::{Database, KeyedTable};

/// The manifest file as last seen: a commit renames a new one into place,
/// which changes its inode (and usually its size and time).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Stamp {
    ino: u64,
    len: u64,
    mtime: Option<std::time::SystemTime>,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let ino = std::os::unix::fs::MetadataExt::ino(&m);
    #[cfg(not(unix))]
    let ino = 0;
    Some(Stamp {
        ino,
        len: m.len(),
        mtime: m.modified().ok(),
    })
}

/// The database directory's last commit, opened once and shared: each
/// [`Snapshots::get`] stats the manifest and reopens only when it changed.
/// A snapshot handed out stays as it was (its segments stay mapped) for
/// as long as its holder keeps it.
pub struct Snapshots {
    dir: PathBuf,
    manifest: PathBuf,
    open: Mutex<Option<Open>>,
}

/// The last commit opened, and its keyed tables opened for lookups.
struct Open {
    seen: Option<Stamp>,
    db: Arc<Database>,
    keyed: HashMap<String, Arc<KeyedTable<'static>>>,
}

impl Snapshots {
    /// Opens nothing yet: the first [`Snapshots::get`] does.
    pub fn new(dir: impl AsRef<Path>) -> Self {
        let dir = dir.as_ref().to_path_buf();
        Snapshots {
            manifest: dir.join(MANIFEST_FILE),
            dir,
            open: Mutex::new(None),
        }
    }

    /// The database as of its last commit.
    pub fn get(&self) -> Result<Arc<Database>> {
        // Stat first: a commit after this reopens on the next call.
        let now = stamp(&self.manifest);
        let mut g = self
            .open
            .lock()
            .map_err(|_| Error::Internal("snapshot lock poisoned".into()))?;
        match &*g {
            Some(o) if o.seen == now => Ok(o.db.clone()),
            _ => {
                let db = Arc::new(Database::open(&self.dir)?);
                *g = Some(Open {
                    seen: now,
                    db: db.clone(),
                    keyed: HashMap::new(),
                });
                Ok(db)
            }
        }
    }

    /// `table` of `db` (a snapshot from [`Snapshots::get`]) opened for key
    /// lookups, kept open while `db` is the last commit: a point query pays
    /// for opening the index and mapping row ids once, not every time. An
    /// older snapshot's table is opened for the caller alone.
    pub fn keyed(&self, db: &Arc<Database>, table: &str) -> Result<Arc<KeyedTable<'static>>> {
        let lock = || {
            self.open
                .lock()
                .map_err(|_| Error::Internal("snapshot lock poisoned".into()))
        };
        if let Some(o) = &*lock()?
            && Arc::ptr_eq(&o.db, db)
            && let Some(t) = o.keyed.get(table)
        {
            return Ok(t.clone());
        }
        // Opened without the lock: other queries go on meanwhile.
        let t = Arc::new(Database::keyed_shared(db, table)?);
        if let Some(o) = &mut *lock()?
            && Arc::ptr_eq(&o.db, db)
        {
            o.keyed.insert(table.to_string(), t.clone());
        }
        Ok(t)
    }

    /// Lets go of the open database (snapshots handed out keep theirs).
    pub fn clear(&self) {
        if let Ok(mut g) = self.open.lock() {
            *g = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_is_seen_and_an_unchanged_manifest_is_not_reopened() {
        let dir = std::env::temp_dir().join(format!("sluice-snap-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let csv = dir.with_extension("csv");
        std::fs::write(&csv, "1\n2\n").unwrap();
        let snaps = Snapshots::new(&dir);
        assert!(snaps.get().is_err(), "no database yet");
        let load = |table: &str| {
            let mut db = Database::open_writer(&dir).unwrap();
            let opts = crate::load::LoadOptions {
                schema: Some("a INT".parse().unwrap()),
                ..Default::default()
            };
            crate::load::load(
                &mut db,
                table,
                &[crate::source::Input::File(csv.clone())],
                &opts,
            )
            .unwrap();
        };
        load("t");
        let a = snaps.get().unwrap();
        let b = snaps.get().unwrap();
        assert!(Arc::ptr_eq(&a, &b), "same commit, same handle");
        assert!(a.table("u").is_none());
        load("u");
        let c = snaps.get().unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        assert!(c.table("u").is_some());
        assert!(
            a.table("u").is_none(),
            "a snapshot handed out stays as it was"
        );
        snaps.clear();
        assert!(!Arc::ptr_eq(&c, &snaps.get().unwrap()));
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_file(&csv).unwrap();
    }
}
