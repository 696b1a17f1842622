//! Spilling: where an operator puts what does not fit the query's memory.
//!
//! A query spills into a directory of its own, made when it first spills
//! under the spill root (`<database>/tmp` unless `--temp-dir` says
//! otherwise) and removed with everything in it when the query ends —
//! with its answer, with an error, or canceled (Ctrl-C). A process that
//! dies mid-spill leaves its directory behind; the next `sluice query`,
//! `sluice serve` or Python `Database` on the database removes it at its
//! start, and so does the next query that spills under the same root
//! ([`sweep`]). Which directories are left behind is told by a lock: each
//! query's directory `sluice-spill-…` holds a file `lock` that the query
//! holds locked while it lives (the operating system lets the lock go
//! when the process dies, however it dies). The directory is made under
//! another name (`….new`), its lock taken, and only then renamed to its
//! name: a directory of that name whose lock can be taken belongs to no
//! one, whenever a sweep looks.
//!
//! A spill file is a *run*: frames one after another, each one record
//! batch of one partition of the operator (its rows, or its states), in
//! the Arrow IPC stream format, behind a header of a magic, the CRC-32 of
//! the frame's bytes and their length. The operator keeps where each
//! frame is ([`Frame`]); a frame read back whose magic, length or
//! checksum is not what was written is an error naming the file and the
//! offset ([`Error::Corrupt`]), never rows. Runs are not synced to disk:
//! they live no longer than the query.
//!
//! For: operators whose state outgrows the query's memory limit (today
//! the hash aggregate, [`super::agg`]). Not for: data that outlives a
//! query (segments, the key index).

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;

use super::QueryOptions;

use crate::error::{Error, Result};

/// What a frame starts with.
const MAGIC: &[u8; 4] = b"SLSP";
/// Magic, CRC-32, length.
const HEADER: u64 = 16;
/// Bits of a key's hash that pick a partition at each level of an
/// operator that spills by partitions (the hash aggregate, the grace
/// hash join): level 0 takes the top bits, each level the next.
const PART_BITS: u32 = 6;
/// Partitions of a level.
pub const PARTS: u32 = 1 << PART_BITS;
/// The deepest level: every bit of the hash used.
pub const MAX_LEVEL: u32 = 64 / PART_BITS - 1;

/// The partition of a key of hash `h` at `level`.
pub fn part_of(h: u64, level: u32) -> u32 {
    ((h >> (64 - PART_BITS * (level + 1))) & u64::from(PARTS - 1)) as u32
}

/// The name every query directory (and its lock file) starts with.
const PREFIX: &str = "sluice-spill-";

/// Where a query's operators spill, and what they spilled. Cloned into
/// every part of the query; the directory goes when the last clone does.
#[derive(Clone, Debug)]
pub struct Spill(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    root: PathBuf,
    /// The query's own directory, made at the first spill.
    dir: Mutex<Option<Arc<QueryDir>>>,
    files: AtomicU64,
    bytes: AtomicU64,
    /// The most bytes its files may hold: as given, or (`u64::MAX`
    /// until the query first spills) nine tenths of the space free under
    /// the root then.
    cap: AtomicU64,
    given_cap: bool,
}

/// A query's spill directory and the lock that says it is in use.
#[derive(Debug)]
struct QueryDir {
    path: PathBuf,
    _lock: File,
}

impl Drop for QueryDir {
    fn drop(&mut self) {
        // The lock file with the rest; the lock goes when `_lock` closes,
        // after.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The file in a query's directory that its query holds locked.
const LOCK: &str = "lock";
/// The suffix of a query's directory while it is being made.
const NEW: &str = ".new";
/// How old a directory left half made (its process died between making
/// and naming it) must be before a sweep removes it.
const NEW_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

impl Spill {
    /// Spills under `root` (made when first needed). Touches nothing
    /// until the query spills: then the directories that dead processes
    /// left under the root are removed first ([`sweep`]; a program that
    /// runs queries sweeps at its start too).
    ///
    /// Its files may hold at most nine tenths of the space free under the
    /// root when the query first spills: past that a spill fails as a
    /// full disk does (53100), before the disk is full (a join whose rows
    /// multiply into billions would fill it).
    pub fn new(root: impl Into<PathBuf>) -> Spill {
        Spill::with_cap(root, None)
    }

    /// [`Spill::new`] whose files may hold at most `cap` bytes.
    pub fn limited(root: impl Into<PathBuf>, cap: u64) -> Spill {
        Spill::with_cap(root, Some(cap))
    }

    fn with_cap(root: impl Into<PathBuf>, cap: Option<u64>) -> Spill {
        Spill(Arc::new(Inner {
            root: root.into(),
            dir: Mutex::new(None),
            files: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            cap: AtomicU64::new(cap.unwrap_or(u64::MAX)),
            given_cap: cap.is_some(),
        }))
    }

    /// The root the query's directory is made under.
    pub fn root(&self) -> &Path {
        &self.0.root
    }

    /// Bytes written to spill files so far.
    pub fn bytes_written(&self) -> u64 {
        self.0.bytes.load(Ordering::Relaxed)
    }

    /// Spill files (runs) written so far.
    pub fn files_written(&self) -> u64 {
        self.0.files.load(Ordering::Relaxed)
    }

    /// The query's directory, made now if it is not yet.
    fn dir(&self) -> Result<Arc<QueryDir>> {
        let mut d = self
            .0
            .dir
            .lock()
            .map_err(|_| Error::Internal("spill directory lock poisoned".into()))?;
        if let Some(d) = &*d {
            return Ok(d.clone());
        }
        let root = &self.0.root;
        let hint = |e: std::io::Error, p: &Path| {
            Error::io(p, e).context(format!(
                "making the spill directory under {} (a query that outgrows its memory limit writes there; choose another with --temp-dir)",
                root.display()
            ))
        };
        // The root itself, not its parents: a mistyped --temp-dir is an
        // error, not a new tree.
        match std::fs::create_dir(root) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && root.is_dir() => {}
            Err(e) => return Err(hint(e, root)),
        }
        sweep(root);
        if !self.0.given_cap
            && let Some(free) = free_bytes(root)
        {
            self.0.cap.store(free / 10 * 9, Ordering::Relaxed);
        }
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!(
            "{PREFIX}{}-{}-{nanos:x}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let path = root.join(&name);
        // Made under another name, locked, then named: no sweep ever
        // sees this directory by its name without its lock held.
        let making = root.join(format!("{name}{NEW}"));
        std::fs::create_dir(&making).map_err(|e| hint(e, &making))?;
        let made = (|| {
            let lock_path = making.join(LOCK);
            let lock = File::create(&lock_path).map_err(|e| hint(e, &lock_path))?;
            lock.try_lock()
                .map_err(|e| Error::Internal(format!("locking {}: {e}", lock_path.display())))?;
            std::fs::rename(&making, &path).map_err(|e| hint(e, &path))?;
            Ok(lock)
        })();
        let lock = match made {
            Ok(l) => l,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&making);
                return Err(e);
            }
        };
        let qd = Arc::new(QueryDir { path, _lock: lock });
        *d = Some(qd.clone());
        Ok(qd)
    }

    /// A new run for `operator` to write.
    pub fn writer(
        &self,
        operator: &'static str,
        profile: Option<Arc<super::profile::Profile>>,
    ) -> Result<RunWriter> {
        let dir = self.dir()?;
        let n = self.0.files.fetch_add(1, Ordering::Relaxed);
        let path = dir.path.join(format!("run-{n}.arrows"));
        let file = File::create(&path).map_err(|e| {
            Error::io(&path, e).context(format!(
                "spilling the {operator} to disk (choose another directory with --temp-dir)"
            ))
        })?;
        if let Some(p) = &profile {
            p.spilled(operator, 0, 1);
        }
        Ok(RunWriter {
            file: BufWriter::with_capacity(256 << 10, file),
            run: RunFile {
                path,
                file: Mutex::new(None),
                _dir: dir,
            },
            at: 0,
            frames: Vec::new(),
            spill: self.clone(),
            operator,
            profile,
        })
    }
}

/// Bytes free to an unprivileged writer on the file system of `path`.
fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a NUL-terminated path; `s` is a plain struct that
    // statvfs fills.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::statvfs(c.as_ptr(), &mut s) };
    (r == 0).then(|| (s.f_bavail as u64).saturating_mul(s.f_frsize as u64))
}

/// Removes the spill directories under `root` that no living process
/// holds (their lock can be taken, or they have none: a removal cut
/// short), and directories left half made a minute ago or more; says how
/// many it removed. Errors are ignored: what cannot be removed now is
/// tried again by the next sweep.
pub fn sweep(root: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(root) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with(PREFIX) {
            continue;
        }
        let path = root.join(&name);
        let dead = if name.ends_with(NEW) {
            e.metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age >= NEW_GRACE)
        } else {
            match File::open(path.join(LOCK)) {
                // Unheld: its query is dead (the lock is let go with the
                // file when this handle closes).
                Ok(f) => f.try_lock().is_ok(),
                Err(e) => e.kind() == std::io::ErrorKind::NotFound,
            }
        };
        if dead && std::fs::remove_dir_all(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Where one frame of a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// The operator's partition it holds.
    pub part: u32,
    /// Where its header starts.
    pub offset: u64,
    /// Bytes after the header.
    pub len: u64,
    pub rows: u32,
}

/// A run being written.
pub struct RunWriter {
    file: BufWriter<File>,
    run: RunFile,
    at: u64,
    frames: Vec<Frame>,
    spill: Spill,
    operator: &'static str,
    profile: Option<Arc<super::profile::Profile>>,
}

/// A frame encoded (Arrow IPC, its checksum), not yet written: made by
/// [`RunWriter::encode`] outside the lock that a run shared by workers
/// is written under.
pub struct Encoded {
    payload: Vec<u8>,
    crc: u32,
    rows: u32,
}

impl RunWriter {
    /// `batch` as a frame's bytes (see [`Encoded`]).
    pub fn encode(batch: &RecordBatch) -> Result<Encoded> {
        let mut payload = Vec::new();
        {
            let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut payload, &batch.schema())?;
            w.write(batch)?;
            w.finish()?;
        }
        Ok(Encoded {
            crc: crc32fast::hash(&payload),
            payload,
            rows: batch.num_rows() as u32,
        })
    }

    /// Appends `batch` as a frame of partition `part`.
    pub fn write(&mut self, part: u32, batch: &RecordBatch) -> Result<()> {
        let e = Self::encode(batch)?;
        self.write_encoded(part, e)
    }

    /// Appends an encoded frame as one of partition `part`.
    pub fn write_encoded(&mut self, part: u32, e: Encoded) -> Result<()> {
        let Encoded { payload, crc, rows } = e;
        let mut header = [0u8; HEADER as usize];
        header[..4].copy_from_slice(MAGIC);
        header[4..8].copy_from_slice(&crc.to_le_bytes());
        header[8..].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        let n = HEADER + payload.len() as u64;
        let cap = self.spill.0.cap.load(Ordering::Relaxed);
        if self.spill.bytes_written().saturating_add(n) > cap {
            let why = if self.spill.0.given_cap {
                "its limit".to_string()
            } else {
                format!(
                    "nine tenths of the space that was free under {} when it began to spill",
                    self.spill.root().display()
                )
            };
            return Err(
                Error::io(&self.run.path, std::io::Error::from_raw_os_error(28)).context(format!(
                    "spilling the {} to disk: the query's spill files would pass {} ({why}; free space there, or choose another directory with --temp-dir)",
                    self.operator,
                    super::memory::human_bytes(cap)
                )),
            );
        }
        crate::fault::charge(n as usize)
            .and_then(|()| self.file.write_all(&header))
            .and_then(|()| self.file.write_all(&payload))
            .map_err(|e| self.io_error(e))?;
        self.frames.push(Frame {
            part,
            offset: self.at,
            len: payload.len() as u64,
            rows,
        });
        self.at += n;
        self.spill.0.bytes.fetch_add(n, Ordering::Relaxed);
        if let Some(p) = &self.profile {
            p.spilled(self.operator, n, 0);
        }
        crate::fault::spilled(n);
        Ok(())
    }

    /// An error writing the run, with what was being done and the way
    /// out.
    fn io_error(&self, e: std::io::Error) -> Error {
        Error::io(&self.run.path, e).context(format!(
            "spilling the {} to disk (free space under {}, or choose another directory with --temp-dir)",
            self.operator,
            self.spill.root().display()
        ))
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.at
    }

    /// Frames written so far (the next frame's number).
    pub fn frame_count(&self) -> usize {
        self.frames.len()
    }

    /// The run, written out, to be read.
    pub fn finish(mut self) -> Result<Run> {
        if let Err(e) = self.file.flush() {
            return Err(self.io_error(e));
        }
        Ok(Run {
            file: Arc::new(self.run),
            frames: self.frames,
        })
    }
}

/// A run's file, removed when dropped.
#[derive(Debug)]
struct RunFile {
    path: PathBuf,
    /// Opened for reading at the first read.
    file: Mutex<Option<File>>,
    /// The directory lives while its files do.
    _dir: Arc<QueryDir>,
}

impl Drop for RunFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A run written: its frames, to read back by partition.
#[derive(Debug, Clone)]
pub struct Run {
    file: Arc<RunFile>,
    frames: Vec<Frame>,
}

impl Run {
    /// The frames of partition `part`, in the order written.
    pub fn frames_of(&self, part: u32) -> impl Iterator<Item = &Frame> {
        self.frames.iter().filter(move |f| f.part == part)
    }

    pub fn frames(&self) -> &[Frame] {
        &self.frames
    }

    pub fn path(&self) -> &Path {
        &self.file.path
    }

    /// Reads one frame back, checking its header and checksum.
    pub fn read(&self, f: &Frame) -> Result<RecordBatch> {
        let path = &self.file.path;
        let corrupt = |what: String| Error::Corrupt {
            file: path.clone(),
            message: format!("spill frame at byte {}: {what}", f.offset),
        };
        let mut buf = vec![0u8; (HEADER + f.len) as usize];
        {
            let mut g = self
                .file
                .file
                .lock()
                .map_err(|_| Error::Internal("spill file lock poisoned".into()))?;
            if g.is_none() {
                *g = Some(File::open(path).map_err(|e| Error::io(path, e))?);
            }
            let file = g.as_mut().expect("opened above");
            file.seek(SeekFrom::Start(f.offset))
                .and_then(|_| file.read_exact(&mut buf))
                .map_err(|e| Error::io(path, e))?;
        }
        if &buf[..4] != MAGIC {
            return Err(corrupt("no frame header".into()));
        }
        let len = u64::from_le_bytes(buf[8..16].try_into().expect("8 bytes"));
        if len != f.len {
            return Err(corrupt(format!("length {len}, written {}", f.len)));
        }
        let crc = u32::from_le_bytes(buf[4..8].try_into().expect("4 bytes"));
        let payload = &buf[HEADER as usize..];
        if crc32fast::hash(payload) != crc {
            return Err(corrupt("checksum mismatch".into()));
        }
        let mut r = arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(payload), None)
            .map_err(|e| corrupt(e.to_string()))?;
        match r.next() {
            Some(Ok(b)) => Ok(b),
            Some(Err(e)) => Err(corrupt(e.to_string())),
            None => Err(corrupt("no record batch".into())),
        }
    }
}

/// The rows an operator that spilled hands on (a window's parts, a set
/// operation's): kept in memory while they stay within half the limit,
/// else written to disk for the plan above to read.
pub(crate) struct Output {
    operator: &'static str,
    held: super::memory::Reservation,
    kept: Vec<RecordBatch>,
    disk: Option<super::spill::RunWriter>,
    opts: QueryOptions,
}

impl Output {
    pub(crate) fn new(opts: &QueryOptions, operator: &'static str) -> Result<Output> {
        Ok(Output {
            operator,
            held: opts.reserve(operator, 0)?,
            kept: Vec::new(),
            disk: None,
            opts: opts.clone(),
        })
    }

    pub(crate) fn put(&mut self, b: RecordBatch) -> Result<()> {
        let bytes = super::memory::batch_bytes(&b);
        let keeps = !self.opts.sort_rows_on_disk
            && self
                .opts
                .memory
                .as_ref()
                .is_some_and(|m| m.keeps_rows(bytes));
        if keeps && self.held.grow(bytes).is_ok() {
            self.kept.push(b);
            return Ok(());
        }
        self.write(&b)
    }

    /// Whether rows are kept in memory.
    pub(crate) fn holds(&self) -> bool {
        !self.kept.is_empty()
    }

    /// The rows kept in memory, written out.
    pub(crate) fn write_out(&mut self) -> Result<()> {
        for b in std::mem::take(&mut self.kept) {
            self.write(&b)?;
        }
        self.held.resize(0)
    }

    fn write(&mut self, b: &RecordBatch) -> Result<()> {
        let bytes = super::memory::batch_bytes(b);
        let w = match &mut self.disk {
            Some(w) => w,
            None => {
                let spill = self.opts.spill.as_ref().ok_or_else(|| {
                    Error::Internal(format!("{}: spilling without a spill", self.operator))
                })?;
                self.disk
                    .insert(spill.writer(self.operator, self.opts.profile.clone())?)
            }
        };
        // In frames of about a megabyte (a frame is read whole).
        let rows = b.num_rows();
        let per = ((rows as u64 * (1 << 20)) / bytes.max(1))
            .max(1024)
            .min(rows.max(1) as u64) as usize;
        let mut at = 0;
        while at < rows {
            let len = per.min(rows - at);
            w.write(0, &b.slice(at, len))?;
            at += len;
        }
        Ok(())
    }

    pub(crate) fn finish(self) -> Result<(Vec<RecordBatch>, Vec<super::scan::Later>)> {
        let mut later = Vec::new();
        if let Some(w) = self.disk {
            let run = Arc::new(w.finish()?);
            for i in 0..run.frames().len() {
                later.push(super::join::Piece::Disk(run.clone(), i).later(None));
            }
        }
        Ok((self.kept, later))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Int64Array, StringArray};

    fn root(name: &str) -> PathBuf {
        let r =
            std::env::temp_dir().join(format!("sluice-spill-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&r);
        r
    }

    fn batch(lo: i64, n: i64) -> RecordBatch {
        let a: ArrayRef = Arc::new(Int64Array::from_iter_values(lo..lo + n));
        let b: ArrayRef = Arc::new(StringArray::from_iter_values(
            (lo..lo + n).map(|i| format!("v{i}")),
        ));
        RecordBatch::try_from_iter([("a", a), ("b", b)]).unwrap()
    }

    #[test]
    fn frames_come_back_by_partition_and_the_directory_goes_with_the_query() {
        let r = root("roundtrip");
        let spill = Spill::new(&r);
        let mut w = spill.writer("test", None).unwrap();
        w.write(3, &batch(0, 10)).unwrap();
        w.write(1, &batch(10, 5)).unwrap();
        w.write(3, &batch(20, 7)).unwrap();
        let run = w.finish().unwrap();
        assert_eq!(spill.files_written(), 1);
        assert!(spill.bytes_written() > 0);
        let three: Vec<RecordBatch> = run.frames_of(3).map(|f| run.read(f).unwrap()).collect();
        assert_eq!(three, vec![batch(0, 10), batch(20, 7)]);
        assert_eq!(
            run.read(run.frames_of(1).next().unwrap()).unwrap(),
            batch(10, 5)
        );
        assert_eq!(run.frames_of(0).count(), 0);
        let file = run.path().to_path_buf();
        assert!(file.exists());
        // The run's file goes with the run; the directory with the query.
        drop(run);
        assert!(!file.exists());
        let dir = file.parent().unwrap().to_path_buf();
        assert!(dir.exists());
        drop(spill);
        assert!(!dir.exists());
        assert_eq!(std::fs::read_dir(&r).unwrap().count(), 0);
        std::fs::remove_dir_all(&r).unwrap();
    }

    #[test]
    fn a_changed_byte_is_found_in_every_part_of_a_frame() {
        let r = root("corrupt");
        let spill = Spill::new(&r);
        let mut w = spill.writer("test", None).unwrap();
        w.write(0, &batch(0, 100)).unwrap();
        let run = w.finish().unwrap();
        let f = run.frames()[0];
        let bytes = std::fs::read(run.path()).unwrap();
        // Every byte of the header and a spread of the payload's.
        let at: Vec<usize> = (0..16).chain((16..bytes.len()).step_by(37)).collect();
        for i in at {
            let mut b = bytes.clone();
            b[i] ^= 0x5a;
            std::fs::write(run.path(), &b).unwrap();
            // A fresh handle: the file is read again.
            let again = Run {
                file: Arc::new(RunFile {
                    path: run.path().to_path_buf(),
                    file: Mutex::new(None),
                    _dir: run.file._dir.clone(),
                }),
                frames: run.frames.clone(),
            };
            let e = again.read(&f).unwrap_err();
            assert!(matches!(e, Error::Corrupt { .. }), "byte {i}: {e}");
            assert!(e.to_string().contains("spill frame at byte 0"), "{e}");
            std::mem::forget(again); // the file is `run`'s to remove
        }
        drop(run);
        drop(spill);
        std::fs::remove_dir_all(&r).unwrap();
    }

    #[test]
    fn a_sweep_removes_what_dead_queries_left_and_spares_the_living() {
        let r = root("sweep");
        let live = Spill::new(&r);
        let w = live.writer("test", None).unwrap();
        let live_dir = w.run.path.parent().unwrap().to_path_buf();
        assert!(live_dir.join(LOCK).exists());
        // A dead query's: its lock file unheld, a run inside.
        let dead = r.join(format!("{PREFIX}1-2-3"));
        std::fs::create_dir_all(&dead).unwrap();
        std::fs::write(dead.join("run-0.arrows"), b"x").unwrap();
        std::fs::write(dead.join(LOCK), b"").unwrap();
        // A removal cut short: no lock file left.
        let cut = r.join(format!("{PREFIX}4-5-6"));
        std::fs::create_dir_all(&cut).unwrap();
        // Half made: young, kept (its process may be naming it now);
        // old, removed.
        let young = r.join(format!("{PREFIX}7-8-9{NEW}"));
        std::fs::create_dir_all(&young).unwrap();
        let old = r.join(format!("{PREFIX}7-8-10{NEW}"));
        std::fs::create_dir_all(&old).unwrap();
        File::open(&old)
            .unwrap()
            .set_modified(std::time::SystemTime::now() - 2 * NEW_GRACE)
            .unwrap();
        // Not ours: kept.
        std::fs::write(r.join("notes.txt"), b"keep").unwrap();
        assert_eq!(sweep(&r), 3);
        assert!(!dead.exists() && !cut.exists() && !old.exists());
        assert!(young.exists());
        assert!(live_dir.exists(), "a living query's directory is kept");
        assert!(r.join("notes.txt").exists());
        drop(w);
        drop(live);
        assert!(!live_dir.exists());
        std::fs::remove_dir_all(&r).unwrap();
    }

    /// Queries starting and ending while others sweep the same root: no
    /// living query's directory is ever taken (the review's race: a sweep
    /// between a lock file's making and its locking).
    #[test]
    fn sweeps_beside_starting_queries_never_take_a_living_directory() {
        let r = root("race");
        std::fs::create_dir_all(&r).unwrap();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for i in 0..200 {
                        let spill = Spill::new(&r);
                        let mut w = spill.writer("test", None).unwrap();
                        w.write(0, &batch(i, 3)).unwrap();
                        let run = w.finish().unwrap();
                        assert_eq!(run.read(&run.frames()[0]).unwrap(), batch(i, 3));
                    }
                });
            }
            s.spawn(|| {
                for _ in 0..2000 {
                    sweep(&r);
                }
            });
        });
        assert_eq!(std::fs::read_dir(&r).unwrap().count(), 0);
        std::fs::remove_dir_all(&r).unwrap();
    }

    #[test]
    fn a_root_that_cannot_be_made_is_an_error_naming_it_and_the_option() {
        let r = root("blocked");
        std::fs::write(&r, b"a file, not a directory").unwrap();
        let spill = Spill::new(r.join("tmp"));
        let e = spill.writer("test", None).err().expect("cannot make it");
        let msg = e.to_string();
        assert!(msg.contains("--temp-dir"), "{msg}");
        std::fs::remove_file(&r).unwrap();
        // Only the root is made, not its parents.
        let spill = Spill::new(r.join("a/b"));
        let e = spill.writer("test", None).err().expect("no parent");
        assert!(e.to_string().contains("a/b"), "{e}");
        assert!(!r.exists());
    }
}
