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

/// Version of the manifest and segment layout this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
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
}

impl TableMeta {
    pub fn rows(&self) -> u64 {
        self.segments.iter().map(|s| s.rows).sum()
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
        if format != FORMAT_VERSION {
            return Err(Error::Config(format!(
                "{}: format version {format}, this sluice reads version {FORMAT_VERSION}",
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

    /// Publishes this manifest atomically in `dir`.
    pub fn write_atomic(&self, dir: &Path) -> Result<()> {
        let body = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::Internal(format!("manifest JSON: {e}")))?;
        let header = format!(
            "{MAGIC} {FORMAT_VERSION} {:08x} {}\n",
            crc32fast::hash(&body),
            body.len()
        );
        let tmp = dir.join(MANIFEST_TMP);
        let mut f = File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        f.write_all(header.as_bytes())
            .and_then(|_| f.write_all(&body))
            .and_then(|_| f.sync_all())
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
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, e))
}
