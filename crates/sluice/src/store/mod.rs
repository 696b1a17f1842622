//! The database directory: manifest, tables, segments and the writer lock.
//!
//! ```text
//! DIR/
//!   MANIFEST                    the committed state (atomically replaced)
//!   LOCK                        held (flock) by the one writer; holds its pid
//!   tables/<table>/<v>-<n>.arrow segment files (Arrow IPC)
//!   tables/<table>/<v>-<n>.keys  key-index runs (keyed tables)
//!   tables/<table>/<v>.load      load journal: the input files of a commit
//! ```
//!
//! Readers read `MANIFEST` once and see that snapshot; segments named by a
//! committed manifest are never modified. A writer takes `LOCK`, and on
//! open removes files that no manifest names (left by a crashed load).

pub mod check;
pub mod direct;
pub mod keyed;
pub mod manifest;
pub mod segment;
mod snapshot;

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

pub use check::CheckReport;
pub use keyed::KeyedTable;
pub use manifest::{
    Compression, LoadJournal, LoadMeta, LoadedFile, Manifest, RunMeta, SegmentChecksums,
    SegmentMeta, ShardStats, Sharding, TableMeta,
};
pub use snapshot::{SnapshotView, Snapshots};

use crate::error::{Error, Result};

const LOCK_FILE: &str = "LOCK";

/// A segment's file and the columns a scan of it reads.
type ScanKey = (String, Vec<usize>);
const TABLES_DIR: &str = "tables";

/// An open database directory.
pub struct Database {
    dir: PathBuf,
    manifest: Manifest,
    lock: Option<File>,
    /// Segments already opened (mmapped and checked) by this handle:
    /// segment files never change, so repeated queries reuse them.
    segments: Mutex<HashMap<String, Arc<Vec<RecordBatch>>>>,
    /// Columns of segments already read by this handle, by file and
    /// column list (see [`Database::segment_scan`]).
    projected: Mutex<HashMap<ScanKey, Arc<segment::SegmentScan>>>,
    /// See [`Database::set_keep_segments`].
    keep_segments: bool,
    /// Key-index runs already opened by this handle.
    runs: Mutex<HashMap<String, Arc<crate::index::Run>>>,
    /// The catalog's tables of this handle's manifest, made at the first
    /// catalog query of a reader (see [`crate::query::catalog`]).
    pub(crate) catalog: std::sync::OnceLock<Arc<crate::query::catalog::CatalogDb>>,
}

impl Database {
    /// Opens an existing database for reading.
    pub fn open(dir: impl AsRef<Path>) -> Result<Database> {
        let dir = dir.as_ref().to_path_buf();
        if dir.exists() && !dir.is_dir() {
            return Err(not_a_directory(&dir));
        }
        if !dir.is_dir() {
            return Err(Error::Config(format!(
                "no database at {} (load data first, or pass --db)",
                dir.display()
            )));
        }
        let manifest = Manifest::read(&dir)?.unwrap_or_default();
        Ok(Database {
            dir,
            manifest,
            lock: None,
            segments: Mutex::default(),
            projected: Mutex::default(),
            keep_segments: true,
            runs: Mutex::default(),
            catalog: std::sync::OnceLock::new(),
        })
    }

    /// Opens (creating if needed) a database for writing: takes the writer
    /// lock and removes files left by crashed loads. Only the database
    /// directory itself is created: its parent must exist (a mistyped path
    /// is an error, not a new tree of directories).
    pub fn open_writer(dir: impl AsRef<Path>) -> Result<Database> {
        let dir = dir.as_ref().to_path_buf();
        create_last_dir(&dir, "database directory")?;
        let tables = dir.join(TABLES_DIR);
        if !tables.is_dir() {
            std::fs::create_dir(&tables).map_err(|e| Error::io(&tables, e))?;
        }
        let lock_path = dir.join(LOCK_FILE);
        let mut lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(|e| Error::io(&lock_path, e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut s = String::new();
                let _ = lock.read_to_string(&mut s);
                return Err(Error::Locked {
                    path: dir,
                    pid: s.trim().parse().ok(),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(&lock_path, e)),
        }
        lock.set_len(0)
            .and_then(|_| lock.rewind())
            .and_then(|_| write!(lock, "{}", std::process::id()))
            .map_err(|e| Error::io(&lock_path, e))?;
        let manifest = Manifest::read(&dir)?.unwrap_or_default();
        let db = Database {
            dir,
            manifest,
            lock: Some(lock),
            segments: Mutex::default(),
            projected: Mutex::default(),
            keep_segments: true,
            runs: Mutex::default(),
            catalog: std::sync::OnceLock::new(),
        };
        db.remove_orphans()?;
        Ok(db)
    }

    /// Whether this handle is a reader (its manifest never changes).
    pub(crate) fn is_reader(&self) -> bool {
        self.lock.is_none()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    pub fn table(&self, name: &str) -> Option<&TableMeta> {
        self.manifest.tables.get(&name.to_ascii_lowercase())
    }

    /// Reads the committed manifest again (readers: see newer commits).
    pub fn refresh(&mut self) -> Result<()> {
        self.manifest = Manifest::read(&self.dir)?.unwrap_or_default();
        Ok(())
    }

    /// Directory of a table's segments, relative and absolute.
    pub(crate) fn table_dir(&self, table: &str) -> (String, PathBuf) {
        let rel = format!("{TABLES_DIR}/{table}");
        let abs = self.dir.join(&rel);
        (rel, abs)
    }

    /// Publishes `next` as the new committed state (writers only).
    pub(crate) fn commit(&mut self, mut next: Manifest) -> Result<()> {
        if self.lock.is_none() {
            return Err(Error::Internal("commit without the writer lock".into()));
        }
        next.version = self.manifest.version + 1;
        match next.write_atomic(&self.dir) {
            Ok(()) => {
                self.manifest = next;
                Ok(())
            }
            Err(e) => {
                // If the rename happened (only the directory fsync
                // failed), the manifest on disk names the new files:
                // callers must not delete them.
                let version = next.version;
                if Manifest::read(&self.dir)
                    .ok()
                    .flatten()
                    .is_some_and(|m| m.version == version)
                {
                    self.manifest = next;
                    return Err(Error::NotDurable(e.to_string()));
                }
                Err(e)
            }
        }
    }

    /// Removes segment files and temporary files that no manifest names,
    /// in the tables' directories and their shard directories (following
    /// a shard directory's link to another disk).
    fn remove_orphans(&self) -> Result<()> {
        let _ = std::fs::remove_file(self.dir.join(manifest::MANIFEST_TMP));
        let tables = self.dir.join(TABLES_DIR);
        let entries = std::fs::read_dir(&tables).map_err(|e| Error::io(&tables, e))?;
        for t in entries {
            let t = t.map_err(|e| Error::io(&tables, e))?;
            let name = t.file_name().to_string_lossy().to_string();
            let tdir = t.path();
            let Some(meta) = self.manifest.tables.get(&name) else {
                // A table whose first load never committed: its shard
                // directories on other disks go too.
                remove_shard_targets(&tdir)?;
                std::fs::remove_dir_all(&tdir).map_err(|e| Error::io(&tdir, e))?;
                continue;
            };
            let keep: std::collections::HashSet<&str> = meta
                .segments
                .iter()
                .map(|s| &s.file)
                .chain(meta.runs.iter().map(|r| &r.file))
                .chain(meta.loads.iter().map(|l| &l.file))
                .map(|f| f.as_str())
                .collect();
            let rel = format!("{TABLES_DIR}/{name}");
            remove_unnamed(&tdir, &rel, &keep, true)?;
        }
        Ok(())
    }

    /// Checks that every shard directory of `table` is there and, when the
    /// manifest names files in it, holds at least one of them; else
    /// [`Error::ShardMissing`] (a disk not mounted). Tables of one shard
    /// pass.
    pub fn check_shard_dirs(&self, table: &str) -> Result<()> {
        let name = table.to_ascii_lowercase();
        match self.manifest.tables.get(&name) {
            Some(meta) => shard_dirs_present(&self.dir, &name, meta),
            None => Ok(()),
        }
    }

    /// `e`, or, when it is a missing `file` of a shard whose directory is
    /// missing or empty, the [`Error::ShardMissing`] that explains it.
    fn explain_missing(&self, file: &str, e: Error) -> Error {
        let Error::Io { error, .. } = &e else {
            return e;
        };
        if error.kind() != std::io::ErrorKind::NotFound {
            return e;
        }
        let Some(table) = file
            .strip_prefix(TABLES_DIR)
            .and_then(|f| f.strip_prefix('/'))
            .and_then(|f| f.split('/').next())
        else {
            return e;
        };
        match self.manifest.tables.get(table) {
            Some(meta) => shard_dirs_present(&self.dir, table, meta)
                .err()
                .unwrap_or(e),
            None => e,
        }
    }

    /// Directory of shard `shard` of a table of `count` shards, relative
    /// and absolute: the table's directory for a table of one shard,
    /// `tables/<table>/sNNN` otherwise.
    pub(crate) fn shard_dir(&self, table: &str, shard: u32, count: u32) -> (String, PathBuf) {
        let (rel, abs) = self.table_dir(table);
        if count <= 1 {
            return (rel, abs);
        }
        let name = shard_dir_name(shard);
        (format!("{rel}/{name}"), abs.join(name))
    }

    /// A segment's batches: mmapped, checksum verified, decoded without
    /// copying; cached in this handle so that later queries skip the work.
    pub fn segment_batches(
        &self,
        seg: &SegmentMeta,
        schema: &SchemaRef,
    ) -> Result<Arc<Vec<RecordBatch>>> {
        if let Some(b) = self
            .segments
            .lock()
            .ok()
            .and_then(|c| c.get(&seg.file).cloned())
        {
            return Ok(b);
        }
        let batches = Arc::new(
            segment::read_segment(&self.dir.join(&seg.file), seg, schema)
                .map_err(|e| self.explain_missing(&seg.file, e))?,
        );
        if let Ok(mut c) = self.segments.lock() {
            c.insert(seg.file.clone(), batches.clone());
        }
        Ok(batches)
    }

    /// Columns `cols` (in that order) of a segment, opened for a query
    /// (see [`segment::SegmentScan`]): mapped, its metadata checked, each
    /// batch's columns checked and decoded when first read, without
    /// touching other columns; kept in this handle unless it was told
    /// not to ([`Database::set_keep_segments`]).
    pub fn segment_scan(
        &self,
        seg: &SegmentMeta,
        schema: &SchemaRef,
        cols: &[usize],
    ) -> Result<Arc<segment::SegmentScan>> {
        let open = || {
            segment::SegmentScan::open(
                &self.dir.join(&seg.file),
                seg,
                schema,
                cols,
                self.keep_segments,
            )
            .map_err(|e| self.explain_missing(&seg.file, e))
        };
        if !self.keep_segments {
            return Ok(Arc::new(open()?));
        }
        let key = (seg.file.clone(), cols.to_vec());
        if let Some(b) = self
            .projected
            .lock()
            .ok()
            .and_then(|c| c.get(&key).cloned())
        {
            // A file changed in place since (damage, or another hand) is
            // opened and checked again, never read through the old checks.
            if b.is_current(&self.dir.join(&seg.file)) {
                return Ok(b);
            }
            if let Ok(mut c) = self.projected.lock() {
                c.retain(|(file, _), _| file != &seg.file);
            }
        }
        let scan = Arc::new(open()?);
        if let Ok(mut c) = self.projected.lock() {
            c.insert(key, scan.clone());
        }
        Ok(scan)
    }

    /// Whether this handle keeps the segments that queries open (with
    /// what they decoded) for the next query: yes by default; a process
    /// that runs one query turns it off, so that each segment is unmapped
    /// as soon as the query is done with it.
    pub fn set_keep_segments(&mut self, keep: bool) {
        self.keep_segments = keep;
    }

    /// A key-index run, opened (footer, index and bloom filter checked)
    /// once per handle; its size must match the manifest.
    pub fn run(&self, meta: &RunMeta) -> Result<Arc<crate::index::Run>> {
        if let Some(r) = self.cached_run(meta) {
            return Ok(r);
        }
        let run = open_run(&self.dir, meta).map_err(|e| self.explain_missing(&meta.file, e))?;
        self.remember_run(meta, run.clone());
        Ok(run)
    }

    /// The run if this handle has opened it before.
    pub fn cached_run(&self, meta: &RunMeta) -> Option<Arc<crate::index::Run>> {
        self.runs
            .lock()
            .ok()
            .and_then(|c| c.get(&meta.file).cloned())
    }

    /// Keeps a run opened elsewhere (by [`open_run`]) for [`Database::run`].
    pub fn remember_run(&self, meta: &RunMeta, run: Arc<crate::index::Run>) {
        if let Ok(mut c) = self.runs.lock() {
            c.insert(meta.file.clone(), run);
        }
    }

    /// Reads a table's batches in load order, checking every segment's
    /// checksum. Segments are read one at a time.
    pub fn scan(&self, table: &str) -> Result<impl Iterator<Item = Result<RecordBatch>> + use<>> {
        let meta = self
            .table(table)
            .ok_or_else(|| Error::Schema(format!("no table named {table:?}")))?
            .clone();
        self.check_shard_dirs(table)?;
        let schema = meta.schema.arrow_schema();
        let dir = self.dir.clone();
        Ok(meta.segments.into_iter().flat_map(move |seg| {
            match segment::read_segment(&dir.join(&seg.file), &seg, &schema) {
                // Plain TEXT for callers of scan.
                Ok(batches) => batches
                    .iter()
                    .map(|b| crate::batch::dict::decode_batch(b, &[]))
                    .collect::<Vec<_>>(),
                Err(e) => vec![Err(e)],
            }
        }))
    }
}

/// The name of a shard's directory inside its table's directory.
pub(crate) fn shard_dir_name(shard: u32) -> String {
    format!("s{shard:03}")
}

/// Removes the files under `dir` (relative path `rel`) that `keep` does
/// not name; with `shards`, descends into shard directories (`sNNN`, or
/// links to them).
fn remove_unnamed(
    dir: &Path,
    rel: &str,
    keep: &std::collections::HashSet<&str>,
    shards: bool,
) -> Result<()> {
    for f in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let f = f.map_err(|e| Error::io(dir, e))?;
        let name = f.file_name().to_string_lossy().to_string();
        let p = f.path();
        let child = format!("{rel}/{name}");
        if shards && is_shard_dir_name(&name) && p.is_dir() {
            remove_unnamed(&p, &child, keep, false)?;
            continue;
        }
        if shards && is_shard_dir_name(&name) && p.is_symlink() {
            // A link to a shard directory that is not there (a disk not
            // mounted): the table needs it back, untouched.
            continue;
        }
        if !keep.contains(child.as_str()) {
            if p.is_dir() && !p.is_symlink() {
                std::fs::remove_dir_all(&p).map_err(|e| Error::io(&p, e))?;
            } else {
                std::fs::remove_file(&p).map_err(|e| Error::io(&p, e))?;
            }
        }
    }
    Ok(())
}

/// The error for a path that exists and is not a directory.
fn not_a_directory(dir: &Path) -> Error {
    Error::Config(format!(
        "{} is not a directory (a database is a directory: pass another --db)",
        dir.display()
    ))
}

/// Creates directory `dir` unless it exists, but not its parents: a
/// parent that does not exist is an error (`what` names the directory).
pub(crate) fn create_last_dir(dir: &Path, what: &str) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if dir.exists() || dir.is_symlink() {
        return Err(Error::Config(format!(
            "{what} {} is not a directory",
            dir.display()
        )));
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(Error::Config(format!(
            "{what} {}: {} does not exist (sluice creates the last directory of a path only)",
            dir.display(),
            parent.display()
        )));
    }
    std::fs::create_dir(dir).map_err(|e| Error::io(dir, e))
}

/// Checks the shard directories of table `name` (see
/// [`Database::check_shard_dirs`]).
fn shard_dirs_present(dir: &Path, name: &str, meta: &TableMeta) -> Result<()> {
    let count = meta.shard_count();
    if count <= 1 {
        return Ok(());
    }
    for shard in 0..count {
        let rel = format!("{TABLES_DIR}/{name}/{}", shard_dir_name(shard));
        let abs = dir.join(&rel);
        let named: Vec<&str> = meta
            .segments
            .iter()
            .filter(|s| s.shard == shard)
            .map(|s| s.file.as_str())
            .chain(
                meta.runs
                    .iter()
                    .filter(|r| r.shard == shard)
                    .map(|r| r.file.as_str()),
            )
            .collect();
        let present =
            abs.is_dir() && (named.is_empty() || named.iter().any(|f| dir.join(f).exists()));
        if !present {
            // Where the files should be: the link's target for a shard on
            // another disk.
            let shown = std::fs::read_link(&abs)
                .map(|t| {
                    if t.is_absolute() {
                        t
                    } else {
                        abs.join("..").join(t)
                    }
                })
                .unwrap_or(abs);
            return Err(Error::ShardMissing {
                table: name.to_string(),
                shard,
                dir: shown,
                files: named.len(),
            });
        }
    }
    Ok(())
}

fn is_shard_dir_name(name: &str) -> bool {
    name.len() == 4 && name.starts_with('s') && name[1..].bytes().all(|b| b.is_ascii_digit())
}

/// Removes the directories that a table's shard links point to (shards
/// placed on other disks); the links themselves go with the table.
pub(crate) fn remove_shard_targets(table_dir: &Path) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(table_dir) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let p = e.path();
        if is_shard_dir_name(&e.file_name().to_string_lossy())
            && p.is_symlink()
            && let Ok(target) = std::fs::read_link(&p)
            && target.is_dir()
        {
            std::fs::remove_dir_all(&target).map_err(|e| Error::io(&target, e))?;
        }
    }
    Ok(())
}

/// Opens the key-index run `meta` names in the database at `dir`: the
/// footer, the index and the bloom filter checked, its size and key count
/// against the manifest's.
pub fn open_run(dir: &Path, meta: &RunMeta) -> Result<Arc<crate::index::Run>> {
    let path = dir.join(&meta.file);
    let size = std::fs::metadata(&path)
        .map_err(|e| Error::io(&path, e))?
        .len();
    if size != meta.bytes {
        return Err(Error::Corrupt {
            file: path,
            message: format!(
                "{size} bytes, the manifest says {} (truncated?)",
                meta.bytes
            ),
        });
    }
    let run = Arc::new(crate::index::Run::open(&path)?);
    if run.entries() != meta.entries {
        return Err(Error::Corrupt {
            file: path,
            message: format!("{} keys, the manifest says {}", run.entries(), meta.entries),
        });
    }
    Ok(run)
}
