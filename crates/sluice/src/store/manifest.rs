//! The manifest: the one file that says what the database holds.
//!
//! Layout (see FORMAT.md):
//!
//! ```text
//! sluice-manifest <format> <crc32 of body, 8 hex> <body length, decimal>\n
//! <body: JSON>
//! ```
//!
//! It is replaced atomically: written to `MANIFEST.tmp`, fsynced, renamed
//! over `MANIFEST`, and the directory fsynced.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::batch::{ColumnStats, Schema};
use crate::error::{Error, Result};

/// Newest version of the manifest and segment layout this build reads
/// and writes (it reads every version from 1). A manifest is written with
/// the oldest version that describes it: 2 only when a table is sharded,
/// so that a build from before sharding refuses such a database instead
/// of looking keys up in the wrong runs.
pub const FORMAT_VERSION: u32 = 2;
/// The version of databases without sharded tables.
pub const FORMAT_VERSION_UNSHARDED: u32 = 1;
pub const MANIFEST_FILE: &str = "MANIFEST";
pub const MANIFEST_TMP: &str = "MANIFEST.tmp";
const MAGIC: &str = "sluice-manifest";

/// Everything committed in a database.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Incremented by every commit.
    pub version: u64,
    pub tables: BTreeMap<String, TableMeta>,
}

/// One table: its schema, its segments in load order, and the runs of its
/// key index (keyed tables only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableMeta {
    pub schema: Schema,
    pub segments: Vec<SegmentMeta>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<RunMeta>,
    /// How the table's segments compress their buffers.
    #[serde(default, skip_serializing_if = "Compression::is_none")]
    pub compression: Compression,
    /// The load journal: one file per commit of a load, naming the input
    /// files it held (resumed loads skip them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loads: Vec<LoadMeta>,
    /// How rows are spread over shards; absent for a table of one shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharding: Option<Sharding>,
}

/// A sharded table: rows are routed to `count` shards, each with its own
/// segments and key-index runs under `tables/<table>/sNN/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sharding {
    /// Number of shards (2 ..= [`MAX_SHARDS`]).
    pub count: u32,
    /// The column whose value's hash picks the shard; `None`: rows are
    /// dealt round-robin in input order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Directories holding the shards' files, shard `i` in
    /// `paths[i % paths.len()]` (`tables/<table>/sNN` is then a symbolic
    /// link to it); empty: inside the database directory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
}

/// What one shard holds (see [`TableMeta::shard_stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ShardStats {
    pub rows: u64,
    pub bytes: u64,
    pub segments: usize,
    pub runs: usize,
}

/// The most shards a table may have.
pub const MAX_SHARDS: u32 = 256;

/// One immutable load-journal file (FORMAT.md): the input files of one
/// commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadMeta {
    /// Path relative to the database directory.
    pub file: String,
    /// Input files the commit held.
    pub files: u64,
    /// Rows the commit added.
    pub rows: u64,
    /// File size in bytes.
    pub bytes: u64,
    /// CRC-32 (IEEE) of the whole file.
    pub crc32: u32,
}

/// The body of a load-journal file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadJournal {
    /// The manifest version of the commit.
    pub version: u64,
    /// When the commit was made, seconds since the Unix epoch.
    pub committed_at: u64,
    pub files: Vec<LoadedFile>,
}

/// One input file of a commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadedFile {
    /// Absolute path, the directory's symbolic links resolved (regular
    /// files only: standard input, pipes and devices are not journaled).
    pub path: String,
    /// Size in bytes when it was read.
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: u64,
    /// CRC-32 (IEEE) of the file's bytes as stored (before any
    /// decompression or decoding).
    pub crc32: u32,
    /// Rows it gave (before `--on-duplicate skip` dropped any).
    pub rows: u64,
    /// Records of it rejected (`--on-error skip`).
    pub rejected: u64,
}

/// Writes a journal file one entry at a time (the same JSON as
/// [`LoadJournal`] serialised whole).
pub struct JournalWriter {
    path: std::path::PathBuf,
    out: std::io::BufWriter<File>,
    crc: crc32fast::Hasher,
    bytes: u64,
    first: bool,
}

impl JournalWriter {
    fn put(&mut self, b: &[u8]) -> Result<()> {
        self.crc.update(b);
        self.bytes += b.len() as u64;
        crate::fault::charge(b.len())
            .and_then(|_| self.out.write_all(b))
            .map_err(|e| Error::io(&self.path, e))
    }

    pub fn add(&mut self, f: &LoadedFile) -> Result<()> {
        let json = serde_json::to_vec(f)
            .map_err(|e| Error::Internal(format!("load journal JSON: {e}")))?;
        if !std::mem::take(&mut self.first) {
            self.put(b",")?;
        }
        self.put(&json)
    }

    /// Ends and fsyncs the file; returns its size and CRC-32.
    pub fn finish(mut self) -> Result<(u64, u32)> {
        self.put(b"]}")?;
        let f = self
            .out
            .into_inner()
            .map_err(|e| Error::io(&self.path, e.into_error()))?;
        crate::stages::time(crate::stages::Stage::Sync, || f.sync_all())
            .map_err(|e| Error::io(&self.path, e))?;
        Ok((self.bytes, self.crc.finalize()))
    }
}

impl LoadJournal {
    /// Starts a journal file at `path`.
    pub fn writer(path: &Path, version: u64, committed_at: u64) -> Result<JournalWriter> {
        let f = File::create(path).map_err(|e| Error::io(path, e))?;
        let mut w = JournalWriter {
            path: path.to_path_buf(),
            out: std::io::BufWriter::new(f),
            crc: crc32fast::Hasher::new(),
            bytes: 0,
            first: true,
        };
        w.put(
            format!("{{\"version\":{version},\"committed_at\":{committed_at},\"files\":[")
                .as_bytes(),
        )?;
        Ok(w)
    }

    /// Reads the journal file of `meta` under `dir`, checking its size and
    /// checksum against the manifest.
    pub fn read(dir: &Path, meta: &LoadMeta) -> Result<LoadJournal> {
        let path = dir.join(&meta.file);
        let body = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        let corrupt = |message: String| Error::Corrupt {
            file: path.clone(),
            message,
        };
        if body.len() as u64 != meta.bytes {
            return Err(corrupt(format!(
                "{} bytes, the manifest says {} (truncated?)",
                body.len(),
                meta.bytes
            )));
        }
        if crc32fast::hash(&body) != meta.crc32 {
            return Err(corrupt("checksum mismatch".into()));
        }
        serde_json::from_slice(&body).map_err(|e| corrupt(format!("bad load journal: {e}")))
    }
}

/// Compression of a table's segment buffers (Arrow IPC body
/// compression). Chosen when the table is created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// Buffers as they are: read by mapping the file, no copy (fastest
    /// queries).
    #[default]
    None,
    /// Every buffer zstd-compressed: smaller files, a decompression pass
    /// when a segment is first read.
    Zstd,
}

impl Compression {
    pub fn is_none(&self) -> bool {
        *self == Compression::None
    }
}

impl std::str::FromStr for Compression {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "none" => Ok(Compression::None),
            "zstd" => Ok(Compression::Zstd),
            _ => Err(Error::Config(format!(
                "compression {s:?}: expected none or zstd"
            ))),
        }
    }
}

/// One immutable key-index run file (FORMAT.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// Path relative to the database directory.
    pub file: String,
    /// Keys in the run.
    pub entries: u64,
    /// File size in bytes.
    pub bytes: u64,
    /// The shard whose rows the run indexes (its row ids count that
    /// shard's rows).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shard: u32,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

impl TableMeta {
    pub fn rows(&self) -> u64 {
        self.segments.iter().map(|s| s.rows).sum()
    }

    /// Number of shards (1 for a table that is not sharded).
    pub fn shard_count(&self) -> u32 {
        self.sharding.as_ref().map_or(1, |s| s.count)
    }

    /// Per shard: rows, bytes on disk (segments and runs), segments, runs.
    pub fn shard_stats(&self) -> Vec<ShardStats> {
        let mut v = vec![ShardStats::default(); self.shard_count() as usize];
        for s in &self.segments {
            if let Some(x) = v.get_mut(s.shard as usize) {
                x.rows += s.rows;
                x.bytes += s.bytes;
                x.segments += 1;
            }
        }
        for r in &self.runs {
            if let Some(x) = v.get_mut(r.shard as usize) {
                x.bytes += r.bytes;
                x.runs += 1;
            }
        }
        v
    }

    /// Rows stored in shard `shard`.
    pub fn shard_rows(&self, shard: u32) -> u64 {
        self.segments
            .iter()
            .filter(|s| s.shard == shard)
            .map(|s| s.rows)
            .sum()
    }

    /// Bytes of segments and index runs.
    pub fn bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.bytes).sum::<u64>()
            + self.runs.iter().map(|r| r.bytes).sum::<u64>()
    }
}

/// One immutable segment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentMeta {
    /// Path relative to the database directory.
    pub file: String,
    pub rows: u64,
    /// File size in bytes.
    pub bytes: u64,
    /// CRC-32 (IEEE) of the whole file.
    pub crc32: u32,
    /// Zone map: per-column null count and min/max.
    pub stats: Vec<ColumnStats>,
    /// The shard holding the segment.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shard: u32,
    /// CRC-32s of the file's parts, so that a query checks only what it
    /// reads (see [`SegmentChecksums`]); absent in segments written before
    /// them, which are checked whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksums: Option<SegmentChecksums>,
}

/// CRC-32s (IEEE) of a segment file's parts: `meta`, every byte outside
/// the bodies of its record batches (the magic, the schema, message
/// headers, dictionary batches, the footer); `columns[c]`, the bytes of
/// column c's buffers in every record batch, in file order. The padding
/// between buffers is covered by the whole-file `crc32` only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentChecksums {
    pub meta: u32,
    pub columns: Vec<u32>,
}

impl Manifest {
    /// Reads the manifest of `dir`; `Ok(None)` when there is none yet.
    pub fn read(dir: &Path) -> Result<Option<Manifest>> {
        let path = dir.join(MANIFEST_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, e)),
        };
        let corrupt = |message: String| Error::Corrupt {
            file: path.clone(),
            message,
        };
        let nl = memchr::memchr(b'\n', &bytes).ok_or_else(|| corrupt("no header line".into()))?;
        let header =
            std::str::from_utf8(&bytes[..nl]).map_err(|_| corrupt("header is not text".into()))?;
        let parts: Vec<&str> = header.split(' ').collect();
        let [magic, format, crc, len] = parts.as_slice() else {
            return Err(corrupt(format!("bad header {header:?}")));
        };
        if *magic != MAGIC {
            return Err(corrupt(format!("bad magic {magic:?}")));
        }
        let format: u32 = format
            .parse()
            .map_err(|_| corrupt(format!("bad format {format:?}")))?;
        if !(1..=FORMAT_VERSION).contains(&format) {
            return Err(Error::Config(format!(
                "{}: format version {format}, this sluice reads versions 1 to {FORMAT_VERSION} (written by a newer sluice?)",
                path.display()
            )));
        }
        let crc = u32::from_str_radix(crc, 16)
            .map_err(|_| corrupt(format!("bad checksum field {crc:?}")))?;
        let len: usize = len
            .parse()
            .map_err(|_| corrupt(format!("bad length field {len:?}")))?;
        let body = &bytes[nl + 1..];
        if body.len() != len {
            return Err(corrupt(format!(
                "body is {} bytes, header says {len} (truncated?)",
                body.len()
            )));
        }
        if crc32fast::hash(body) != crc {
            return Err(corrupt("checksum mismatch".into()));
        }
        let m: Manifest =
            serde_json::from_slice(body).map_err(|e| corrupt(format!("bad JSON: {e}")))?;
        Ok(Some(m))
    }

    /// The format version this manifest is written with: the oldest that
    /// describes it (see [`FORMAT_VERSION`]).
    pub fn format_version(&self) -> u32 {
        if self.tables.values().any(|t| t.sharding.is_some()) {
            FORMAT_VERSION
        } else {
            FORMAT_VERSION_UNSHARDED
        }
    }

    /// Publishes this manifest atomically in `dir`.
    pub fn write_atomic(&self, dir: &Path) -> Result<()> {
        let body = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::Internal(format!("manifest JSON: {e}")))?;
        let header = format!(
            "{MAGIC} {} {:08x} {}\n",
            self.format_version(),
            crc32fast::hash(&body),
            body.len()
        );
        let tmp = dir.join(MANIFEST_TMP);
        let mut f = File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        crate::fault::charge(header.len() + body.len())
            .and_then(|_| f.write_all(header.as_bytes()))
            .and_then(|_| f.write_all(&body))
            .and_then(|_| crate::stages::time(crate::stages::Stage::Sync, || f.sync_all()))
            .map_err(|e| Error::io(&tmp, e))?;
        drop(f);
        let dst = dir.join(MANIFEST_FILE);
        std::fs::rename(&tmp, &dst).map_err(|e| Error::io(&dst, e))?;
        sync_dir(dir)
    }
}

/// fsyncs a directory so that a rename or create in it is durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| crate::stages::time(crate::stages::Stage::Sync, || d.sync_all()))
        .map_err(|e| Error::io(dir, e))
}
