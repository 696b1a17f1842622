//! A database kept open for many queries, reopened when a commit changes
//! it: a long-lived reader (the server, a Python handle) sees each commit
//! without paying the open (manifest read, segment mapping and checksum)
//! on every query.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
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
/// [`Snapshots::get`] asks whether the manifest changed and reopens only
/// when it did. A snapshot handed out stays as it was (its segments stay
/// mapped) for as long as its holder keeps it.
///
/// Asking costs a `stat` of the manifest (a path lookup: measured at about
/// a tenth of a point select's cost in the server, BENCHMARKS.md serve),
/// except where a [`Watch`] on the directory says nothing happened to the
/// manifest since the last ask, which is one `read` that finds nothing.
pub struct Snapshots {
    dir: PathBuf,
    manifest: PathBuf,
    open: Mutex<Option<Open>>,
    /// Not watched: not asked for, or the directory exists but cannot be
    /// watched (another file system, no inotify): not tried again.
    unwatchable: std::sync::atomic::AtomicBool,
    /// Stats of the manifest so far (tests: the watch spares them).
    stats: std::sync::atomic::AtomicUsize,
}

/// The last commit opened, and its keyed tables opened for lookups.
struct Open {
    seen: Option<Stamp>,
    db: Arc<Database>,
    keyed: HashMap<String, Arc<KeyedTable<'static>>>,
}

impl Snapshots {
    /// Opens nothing yet: the first [`Snapshots::get`] does. Each ask
    /// stats the manifest.
    pub fn new(dir: impl AsRef<Path>) -> Self {
        Self::with_watch(dir, false)
    }

    /// As [`Snapshots::new`], and its views ([`SnapshotView`]) watch the
    /// directory where they can (for a long-lived reader asking many times
    /// a second: the server). A watch holds an inotify instance, of which a
    /// user has few (128 by default): not for handles opened by the dozen.
    pub fn watched(dir: impl AsRef<Path>) -> Self {
        Self::with_watch(dir, true)
    }

    fn with_watch(dir: impl AsRef<Path>, watch: bool) -> Self {
        let dir = dir.as_ref().to_path_buf();
        Snapshots {
            manifest: dir.join(MANIFEST_FILE),
            dir,
            open: Mutex::new(None),
            unwatchable: std::sync::atomic::AtomicBool::new(!watch),
            stats: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// The database as of its last commit.
    pub fn get(&self) -> Result<Arc<Database>> {
        // Stat first: a commit after this reopens on the next call.
        self.stats.fetch_add(1, Relaxed);
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

    /// A view of these snapshots for one thread that asks often (a
    /// connection thread of the server): see [`SnapshotView`].
    pub fn local(&self) -> SnapshotView {
        SnapshotView {
            watch: None,
            db: None,
            keyed: HashMap::new(),
        }
    }

    /// A new watch on the directory, unless it cannot be watched.
    fn watch(&self) -> Option<Watch> {
        if self.unwatchable.load(Relaxed) {
            return None;
        }
        let w = Watch::new(&self.dir);
        if w.is_none() && self.dir.is_dir() {
            self.unwatchable.store(true, Relaxed);
        }
        w
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

/// One thread's view of a [`Snapshots`]: the last commit it saw, the keyed
/// tables it opened, and a watch of its own on the directory. While the
/// watch has seen nothing happen to the manifest, asking returns the
/// commit seen last with one `read` (that finds nothing): no `stat`, and
/// no lock shared with the other threads (measured on 2 cores, the
/// shared lock made the two connection threads wait on each other in
/// `futex` about once a query). Every view gets every event, so each
/// sees each commit on its next ask. Where the directory cannot be
/// watched, every ask goes to the shared [`Snapshots::get`].
pub struct SnapshotView {
    watch: Option<Watch>,
    db: Option<Arc<Database>>,
    keyed: HashMap<String, Arc<KeyedTable<'static>>>,
}

impl SnapshotView {
    /// The database as of its last commit (`shared`: the snapshots this
    /// view was made from).
    pub fn get(&mut self, shared: &Snapshots) -> Result<Arc<Database>> {
        match self.watch.as_ref().map(Watch::changed) {
            Some(Change::Quiet) => {
                if let Some(db) = &self.db {
                    return Ok(db.clone());
                }
            }
            Some(Change::Broken) => self.watch = None,
            Some(Change::Maybe) | None => {}
        }
        // Watching before the stat: a commit after it leaves an event.
        if self.watch.is_none() {
            self.watch = shared.watch();
        }
        let db = shared.get();
        match &db {
            Ok(d) if self.db.as_ref().is_some_and(|o| Arc::ptr_eq(o, d)) => {}
            _ => {
                self.keyed.clear();
                self.db = db.as_ref().ok().cloned();
            }
        }
        db
    }

    /// [`Snapshots::keyed`], kept by this view for as long as `db` is the
    /// commit it saw last.
    pub fn keyed(
        &mut self,
        shared: &Snapshots,
        db: &Arc<Database>,
        table: &str,
    ) -> Result<Arc<KeyedTable<'static>>> {
        let mine = self.db.as_ref().is_some_and(|d| Arc::ptr_eq(d, db));
        if mine && let Some(t) = self.keyed.get(table) {
            return Ok(t.clone());
        }
        let t = shared.keyed(db, table)?;
        if mine {
            self.keyed.insert(table.to_string(), t.clone());
        }
        Ok(t)
    }
}

/// What a [`Watch`] saw since it was last asked.
#[derive(Debug, PartialEq, Eq)]
enum Change {
    /// Nothing happened to the manifest.
    Quiet,
    /// The manifest may have changed (or events were lost): stat it.
    Maybe,
    /// The directory went away or was moved: the watch is no more.
    Broken,
}

/// An inotify watch on a database directory (Linux, on local file
/// systems whose changes it reports: over a network file system another
/// machine's commit would raise no event, so there it is not used). The
/// kernel queues the event inside the `rename` that commits, so a read
/// after the commit's `rename` returned finds it.
struct Watch {
    #[cfg(target_os = "linux")]
    fd: std::os::fd::OwnedFd,
}

impl Watch {
    #[cfg(target_os = "linux")]
    fn new(dir: &Path) -> Option<Watch> {
        use std::os::fd::{FromRawFd, OwnedFd};
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        // SAFETY: statfs with a NUL-terminated path and a zeroed struct;
        // inotify_init1 and inotify_add_watch with plain flags, the fd
        // owned at once.
        unsafe {
            let mut fs: libc::statfs = std::mem::zeroed();
            if libc::statfs(path.as_ptr(), &mut fs) != 0 || !local_fs(fs.f_type as i64) {
                return None;
            }
            let fd = libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC);
            if fd < 0 {
                return None;
            }
            let fd = OwnedFd::from_raw_fd(fd);
            let mask = libc::IN_MOVED_TO
                | libc::IN_MOVED_FROM
                | libc::IN_CREATE
                | libc::IN_DELETE
                | libc::IN_CLOSE_WRITE
                | libc::IN_ATTRIB
                | libc::IN_DELETE_SELF
                | libc::IN_MOVE_SELF
                | libc::IN_ONLYDIR;
            if libc::inotify_add_watch(std::os::fd::AsRawFd::as_raw_fd(&fd), path.as_ptr(), mask)
                < 0
            {
                return None;
            }
            Some(Watch { fd })
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn new(_dir: &Path) -> Option<Watch> {
        None
    }

    /// Reads every event queued: any about the manifest (or about the
    /// directory itself, or lost ones) makes the answer other than quiet.
    #[cfg(target_os = "linux")]
    fn changed(&self) -> Change {
        use std::os::fd::AsRawFd;
        const HEAD: usize = std::mem::size_of::<libc::inotify_event>();
        let mut buf = [0u64; 512];
        let mut seen = Change::Quiet;
        loop {
            // SAFETY: read into a local buffer of its length.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    std::mem::size_of_val(&buf),
                )
            };
            if n <= 0 {
                // EAGAIN: nothing (more) queued. Another error: unknown.
                if n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::WouldBlock
                {
                    return Change::Broken;
                }
                return seen;
            }
            // SAFETY: the kernel wrote `n` bytes of whole events.
            let bytes =
                unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), n as usize) };
            let mut at = 0;
            while at + HEAD <= bytes.len() {
                let mask = u32::from_ne_bytes(bytes[at + 4..at + 8].try_into().expect("4"));
                let len =
                    u32::from_ne_bytes(bytes[at + 12..at + 16].try_into().expect("4")) as usize;
                let name = bytes.get(at + HEAD..at + HEAD + len).unwrap_or(&[]);
                let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
                at += HEAD + len;
                if mask & (libc::IN_IGNORED | libc::IN_DELETE_SELF | libc::IN_MOVE_SELF) != 0 {
                    return Change::Broken;
                }
                if mask & libc::IN_Q_OVERFLOW != 0 || name == MANIFEST_FILE.as_bytes() {
                    seen = Change::Maybe;
                }
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn changed(&self) -> Change {
        Change::Maybe
    }
}

/// File systems whose inotify events cover every change (local ones; not
/// overlayfs, where a change made below the overlay raises no event).
#[cfg(target_os = "linux")]
fn local_fs(magic: i64) -> bool {
    const EXT4: i64 = 0xEF53;
    const XFS: i64 = 0x5846_5342;
    const BTRFS: i64 = 0x9123_683E;
    const TMPFS: i64 = 0x0102_1994;
    const F2FS: i64 = 0xF2F5_2010;
    matches!(magic, EXT4 | XFS | BTRFS | TMPFS | F2FS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Loads `csv` (one INT column `a`) into `table` of the database `dir`.
    fn load_csv(dir: &Path, csv: &Path, table: &str, key: Option<&str>) {
        let mut db = Database::open_writer(dir).unwrap();
        let opts = crate::load::LoadOptions {
            schema: Some("a INT".parse().unwrap()),
            key: key.map(str::to_string),
            ..Default::default()
        };
        crate::load::load(
            &mut db,
            table,
            &[crate::source::Input::File(csv.to_path_buf())],
            &opts,
        )
        .unwrap();
    }

    #[test]
    fn a_commit_is_seen_and_an_unchanged_manifest_is_not_reopened() {
        let dir = std::env::temp_dir().join(format!("sluice-snap-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let csv = dir.with_extension("csv");
        std::fs::write(&csv, "1\n2\n").unwrap();
        let snaps = Snapshots::new(&dir);
        assert!(snaps.get().is_err(), "no database yet");
        let load = |table: &str| load_csv(&dir, &csv, table, None);
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

    /// Where the directory can be watched, a view ([`SnapshotView`]) asks again
    /// without a stat until the manifest changes; a file written beside
    /// it changes nothing; each commit is seen by the next ask of every
    /// view; a directory moved away and back is watched again.
    #[test]
    fn local_views_spare_the_stat_and_still_see_each_commit() {
        let dir = std::env::temp_dir().join(format!("sluice-snapw-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let csv = dir.with_extension("csv");
        std::fs::write(&csv, "1\n2\n").unwrap();
        let load = |table: &str| load_csv(&dir, &csv, table, Some("a"));
        load("t");
        // Not watched: every ask of a view is a stat.
        let plain = Snapshots::new(&dir);
        let mut l = plain.local();
        l.get(&plain).unwrap();
        l.get(&plain).unwrap();
        assert_eq!(plain.stats.load(Relaxed), 2, "not watched: a stat an ask");

        let snaps = Snapshots::watched(&dir);
        let stats = || snaps.stats.load(Relaxed);
        let (mut one, mut two) = (snaps.local(), snaps.local());
        let a = one.get(&snaps).unwrap();
        if snaps.unwatchable.load(Relaxed) || !cfg!(target_os = "linux") {
            eprintln!("skipped: {} cannot be watched here", dir.display());
            return;
        }
        assert!(Arc::ptr_eq(&a, &two.get(&snaps).unwrap()));
        assert_eq!(stats(), 2);
        let ka = one.keyed(&snaps, &a, "t").unwrap();
        for _ in 0..50 {
            assert!(Arc::ptr_eq(&a, &one.get(&snaps).unwrap()));
            assert!(Arc::ptr_eq(&a, &two.get(&snaps).unwrap()));
            assert!(Arc::ptr_eq(&ka, &one.keyed(&snaps, &a, "t").unwrap()));
        }
        assert_eq!(stats(), 2, "quiet watches: no stat");
        std::fs::write(dir.join("notes.txt"), "not a commit").unwrap();
        assert!(Arc::ptr_eq(&a, &one.get(&snaps).unwrap()));
        assert_eq!(stats(), 2, "another file: no stat");

        for (i, t) in ["u", "v", "w"].into_iter().enumerate() {
            load(t);
            let b = one.get(&snaps).unwrap();
            assert!(b.table(t).is_some(), "commit {t} seen by the next ask");
            let c = two.get(&snaps).unwrap();
            assert!(Arc::ptr_eq(&b, &c), "and by the other view's");
            assert_eq!(stats(), 4 + 2 * i);
            assert!(Arc::ptr_eq(&b, &one.get(&snaps).unwrap()));
            assert_eq!(stats(), 4 + 2 * i);
            let kb = one.keyed(&snaps, &b, "t").unwrap();
            assert!(!Arc::ptr_eq(&ka, &kb), "keyed tables of the new commit");
        }

        // Moved away: the watch breaks, the ask fails; back: watched again.
        let away = dir.with_extension("away");
        std::fs::rename(&dir, &away).unwrap();
        assert!(one.get(&snaps).is_err());
        std::fs::rename(&away, &dir).unwrap();
        let c = one.get(&snaps).unwrap();
        assert!(c.table("w").is_some());
        let n = stats();
        assert!(Arc::ptr_eq(&c, &one.get(&snaps).unwrap()));
        assert_eq!(stats(), n, "watched again");
        load("x");
        assert!(one.get(&snaps).unwrap().table("x").is_some());

        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_file(&csv).unwrap();
    }
}
