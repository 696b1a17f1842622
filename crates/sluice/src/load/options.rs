//! What a load can be told, and the checks of it against the table.
//!
//! Useful for: every option of a load ([`LoadOptions`]) with its default,
//! and their validation before anything is read: the dialect, the schema
//! against an existing table's, the key, compression and sharding of a
//! new table.
//! Not useful for: what the options do (the stage that reads each one).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde::Serialize;

use crate::batch::{Schema, ValueOptions};
use crate::error::{Error, Result};
use crate::parse::{Dialect, Format};
use crate::source::LineEnd;
use crate::store::manifest::{MAX_SHARDS, Sharding};
use crate::store::{Compression, Database, TableMeta};

use super::Progress;
use super::json_input::json_columns;

/// Default for `--memory-limit`.
pub const DEFAULT_MEMORY_LIMIT: u64 = 2 << 30;

/// Default for `--max-line-size`.
pub const DEFAULT_MAX_LINE_SIZE: usize = 16 << 20;

/// Whether the first record of each file is a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Header {
    /// A header iff the first record's fields equal the column names
    /// (ignoring case and surrounding spaces), as written or as inference
    /// normalises them (`First Name` for `first_name`).
    #[default]
    Auto,
    Yes,
    No,
}

/// Everything a load can be told.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Columns of a new table; for an existing table it must match.
    pub schema: Option<Schema>,
    pub dialect: Dialect,
    /// Delimited text (read with `dialect`) or JSON.
    pub format: Format,
    pub header: Header,
    /// Lines to skip at the start of each file, before the header.
    pub skip: u64,
    pub values: ValueOptions,
    /// Compute workers requested (`None` = every usable core).
    pub threads: Option<usize>,
    /// Bound on the memory the pipeline holds, in bytes.
    pub memory_limit: u64,
    /// Fixed block size (tests use tiny blocks); `None` derives it from
    /// the memory limit.
    pub block_size: Option<usize>,
    /// A record longer than this is an error.
    pub max_line_size: usize,
    /// Live counters for a progress display.
    pub progress: Option<Arc<Progress>>,
    /// Set to stop the load; nothing is committed.
    pub cancel: Option<Arc<AtomicBool>>,
    /// What a malformed record does to the load.
    pub on_error: OnError,
    /// With `OnError::Skip`: where rejected records are written (CSV).
    pub rejects: Option<PathBuf>,
    /// With `OnError::Skip`: fail the load when more records than this are
    /// rejected (`None`: no limit).
    pub max_errors: Option<u64>,
    /// A record with too few fields gets NULLs for the rest instead of
    /// being an error.
    pub allow_missing_columns: bool,
    /// Encoding of the input text (`None`: UTF-8). A byte order mark
    /// overrides it; a UTF-8 one is skipped.
    pub encoding: Option<&'static encoding_rs::Encoding>,
    /// Lines starting with this byte before each file's first record
    /// (header or data) are skipped: notes a tool wrote above the data, as
    /// inference detects them. Unlike `dialect.comment`, a line starting
    /// with it below the first record is a record.
    pub leading_comment: Option<u8>,
    /// How records end: `Auto` tells a lone CR (classic Mac OS) from
    /// each file's first 64 KiB.
    pub line_end: LineEnd,
    /// The input fields that feed the table's columns, in column order
    /// (by header name or 1-based position); other fields are skipped and
    /// columns past the list get their DEFAULT or NULL.
    pub columns: Option<Vec<ColumnRef>>,
    /// Map fields to columns by the header names of each file, in any
    /// order; columns a file lacks get their DEFAULT or NULL.
    pub match_by_name: bool,
    /// JSON (`--format json`): the field of the top-level object that
    /// holds the array of rows (`None`: found as `parse::json::
    /// object_start` says).
    pub json_rows: Option<String>,
    /// The PRIMARY KEY column of a new table (or `PRIMARY KEY` in the
    /// schema); for an existing table it must name its key.
    pub key: Option<String>,
    /// What a row whose key is already loaded does.
    pub on_duplicate: OnDuplicate,
    /// Segment compression of a new table (`None`: uncompressed); for an
    /// existing table it must match when given.
    pub compression: Option<Compression>,
    /// Bytes of sorted keys a keyed load holds before writing them as a
    /// run (`None`: half of `memory_limit`; tests use tiny budgets).
    pub key_budget: Option<usize>,
    /// When a multi-file load commits: after groups of whole files.
    pub commit_every: CommitEvery,
    /// Which input files that earlier commits loaded are read again.
    pub reload: Reload,
    /// Set to end the load at the next file boundary: the files read so
    /// far are committed and the rest left for the same load run again
    /// (the first Ctrl-C). `cancel` is the hard stop.
    pub stop: Option<Arc<AtomicBool>>,
    /// Shards of a new table (`None` or 1: not sharded); for an existing
    /// table it must match when given.
    pub shards: Option<u32>,
    /// The column whose hash routes a row to its shard (default: the
    /// primary key; round-robin for a table without one). A keyed table
    /// is sharded by its key.
    pub shard_by: Option<String>,
    /// Directories for the shards' files of a new table, shard `i` in
    /// `shard_paths[i % len]` (default: inside the database directory).
    pub shard_paths: Vec<PathBuf>,
    /// Columns (by name) whose type was inferred from samples, not given:
    /// when the load creates the table, a later value of delimited input
    /// that such a type does not take widens it ([`wider_type`]) and the
    /// files are read again,
    /// as long as no group of the load has committed
    /// ([`LoadSummary::widened`] says so); after a commit such a value
    /// fails the load ([`Error::NotWidened`]).
    pub widen: Vec<String>,
    /// Segments closed after this many rows, each batch written as it
    /// comes (no gathering of small batches); `None`: segments close at
    /// [`crate::load::SEGMENT_TARGET_BYTES`]. For tests: with tiny blocks,
    /// a table of a few hundred rows gets dozens of segments.
    pub segment_rows: Option<u64>,
    /// Every TEXT column of every batch dictionary-encoded, however few
    /// rows the batch has and however little its values repeat (up to
    /// the dictionaries' limits). For tests: with tiny blocks, every
    /// TEXT column gets many dictionaries, as a large table's do.
    pub dictionary_always: bool,
    /// Segment files written through the page cache. By default they are
    /// written past it (`O_DIRECT`) where the file system allows: the
    /// kernel then copies nothing into the cache and writes no dirty
    /// pages back (10-30 % of a load's CPU time), and the bytes reach the
    /// disk as they are written, which the commit's `fsync` waits for
    /// anyway. A query right after the load reads them from the disk.
    pub page_cache: bool,
    /// Large plain input files (not compressed, UTF-8, LF or CR LF line
    /// ends) mapped into memory rather than read into buffers: no copy of
    /// their bytes (see [`crate::source::Mapped`]). Off by default: a file
    /// truncated by another process during the load then ends the whole
    /// process (with a message), which only a command-line tool should
    /// choose; `sluice load` does, unless `--no-mmap`.
    pub map_files: bool,
}

/// When a multi-file load commits. A group closes after the file that
/// reaches any of the limits; a file is never split across commits. With
/// no limit, the load is one commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CommitEvery {
    /// Input bytes (as stored, compressed or not).
    pub bytes: Option<u64>,
    pub files: Option<u64>,
    pub seconds: Option<u64>,
}

impl CommitEvery {
    /// One commit for the whole load.
    pub const ONCE: CommitEvery = CommitEvery {
        bytes: None,
        files: None,
        seconds: None,
    };
}

impl Default for CommitEvery {
    /// Every 1 GiB of input: a load that fits in that is all or nothing.
    fn default() -> Self {
        CommitEvery {
            bytes: Some(DEFAULT_COMMIT_BYTES),
            files: None,
            seconds: None,
        }
    }
}

/// Default of `--commit-every`.
pub const DEFAULT_COMMIT_BYTES: u64 = 1 << 30;

/// Which input files that earlier commits of the table loaded are read
/// again (the load journal names them, with size, time and checksum).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Reload {
    /// Skip them; one that changed since is an error.
    #[default]
    None,
    /// Skip the unchanged, load the changed again.
    Changed,
    /// Load every input, loaded before or not.
    All,
}

/// What a duplicate key does to a load.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub enum OnDuplicate {
    /// The load fails, naming both rows, and commits nothing.
    #[default]
    Error,
    /// The first row with the key is kept (an existing one, or the first
    /// in input order); later ones are skipped and counted.
    Skip,
}

/// An input field, named in `--columns`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnRef {
    /// By its header name (compared as `normalize_name` writes it).
    Name(String),
    /// By its 1-based position.
    Position(usize),
}

impl std::str::FromStr for ColumnRef {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let s = s.trim();
        if s.is_empty() {
            return Err(Error::Config("--columns: an empty entry".into()));
        }
        match s.parse::<usize>() {
            Ok(0) => Err(Error::Config("--columns: positions start at 1".into())),
            Ok(p) => Ok(ColumnRef::Position(p)),
            Err(_) => Ok(ColumnRef::Name(s.to_string())),
        }
    }
}

impl std::fmt::Display for ColumnRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ColumnRef::Name(n) => write!(f, "{n:?}"),
            ColumnRef::Position(p) => write!(f, "{p}"),
        }
    }
}

/// What a malformed record does to the load.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub enum OnError {
    /// The load fails at the first one and commits nothing.
    #[default]
    Abort,
    /// The record is rejected (counted, written to the rejects file) and
    /// the load goes on.
    Skip,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            schema: None,
            dialect: Dialect::default(),
            format: Format::Delimited,
            header: Header::Auto,
            skip: 0,
            values: ValueOptions::default(),
            threads: None,
            memory_limit: DEFAULT_MEMORY_LIMIT,
            block_size: None,
            max_line_size: DEFAULT_MAX_LINE_SIZE,
            progress: None,
            cancel: None,
            on_error: OnError::Abort,
            rejects: None,
            max_errors: None,
            allow_missing_columns: false,
            encoding: None,
            line_end: LineEnd::Auto,
            leading_comment: None,
            columns: None,
            match_by_name: false,
            json_rows: None,
            key: None,
            on_duplicate: OnDuplicate::Error,
            compression: None,
            key_budget: None,
            commit_every: CommitEvery::default(),
            reload: Reload::None,
            stop: None,
            shards: None,
            shard_by: None,
            shard_paths: Vec::new(),
            widen: Vec::new(),
            segment_rows: None,
            dictionary_always: false,
            page_cache: false,
            map_files: false,
        }
    }
}

/// Checks the options against the table (or for creating it): the
/// table as it is, the schema to load with, the segment compression.
pub(super) fn checked_options(
    db: &Database,
    table: &str,
    opts: &LoadOptions,
) -> Result<(Option<TableMeta>, Schema, Compression, Option<Sharding>)> {
    opts.dialect.validate()?;
    json_columns(opts)?;
    let existing = db.table(table).cloned();
    let mut wanted = opts.schema.clone();
    if let (Some(t), Some(k)) = (&existing, &opts.key) {
        let have = t.schema.key_column().map(|i| &t.schema.columns[i].name);
        if !have.is_some_and(|h| h.eq_ignore_ascii_case(k)) {
            return Err(Error::Schema(match have {
                Some(h) => format!("table {table} exists with primary key {h}; --key gives {k}"),
                None => format!(
                    "table {table} exists without a primary key; a key is given when a table is created"
                ),
            }));
        }
        // The stored schema holds the key; compare the rest.
        if let Some(s) = &mut wanted
            && let Some(c) = t.schema.key_column().and_then(|i| s.columns.get_mut(i))
        {
            c.primary_key = true;
        }
    }
    if let (Some(s), Some(k)) = (&mut wanted, &opts.key) {
        s.set_key(k)?;
    }
    let schema = match (&existing, &wanted) {
        (Some(t), Some(s)) if &t.schema != s => {
            return Err(Error::Schema(format!(
                "table {table} exists with columns ({}); --schema gives ({s})",
                t.schema
            )));
        }
        (Some(t), _) => t.schema.clone(),
        (None, Some(s)) => s.clone(),
        (None, None) => {
            return Err(Error::Schema(format!(
                "table {table} does not exist; create it by giving its columns, e.g. --schema \"id BIGINT, name TEXT\""
            )));
        }
    };
    if opts.memory_limit < 32 << 20 {
        return Err(Error::Config(
            "--memory-limit must be at least 32 MiB".into(),
        ));
    }
    let compression = match (&existing, opts.compression) {
        (Some(t), Some(c)) if t.compression != c => {
            return Err(Error::Schema(format!(
                "table {table} exists with compression {:?}; --compression gives {c:?} (it is chosen when a table is created)",
                t.compression
            )));
        }
        (Some(t), _) => t.compression,
        (None, c) => c.unwrap_or_default(),
    };
    let sharding = match &existing {
        Some(t) => {
            let have = t.shard_count();
            if let Some(n) = opts.shards
                && n != have
            {
                return Err(Error::Schema(format!(
                    "table {table} exists with {have} shard{}; --shards gives {n} (shards are chosen when a table is created)",
                    if have == 1 { "" } else { "s" }
                )));
            }
            let by = t.sharding.as_ref().and_then(|s| s.by.as_deref());
            if let Some(b) = &opts.shard_by
                && !by.is_some_and(|h| h.eq_ignore_ascii_case(b))
            {
                return Err(Error::Schema(format!(
                    "table {table} exists {}; --shard-by gives {b} (chosen when a table is created)",
                    match by {
                        Some(h) => format!("sharded by {h}"),
                        None if have > 1 => "with rows dealt round-robin".to_string(),
                        None => "with one shard".to_string(),
                    }
                )));
            }
            if !opts.shard_paths.is_empty() {
                return Err(Error::Schema(format!(
                    "table {table} exists; --shard-paths places the shards of a new table"
                )));
            }
            db.check_shard_dirs(table)?;
            t.sharding.clone()
        }
        None => new_sharding(table, &schema, opts)?,
    };
    Ok((existing, schema, compression, sharding))
}

/// The sharding of a new table from `--shards`, `--shard-by` and
/// `--shard-paths`.
fn new_sharding(table: &str, schema: &Schema, opts: &LoadOptions) -> Result<Option<Sharding>> {
    let count = opts.shards.unwrap_or(1);
    if count == 0 || count > MAX_SHARDS {
        return Err(Error::Config(format!(
            "--shards {count}: expected 1 to {MAX_SHARDS}"
        )));
    }
    if count == 1 {
        if opts.shard_by.is_some() || !opts.shard_paths.is_empty() {
            return Err(Error::Config(
                "--shard-by and --shard-paths need --shards 2 or more".into(),
            ));
        }
        return Ok(None);
    }
    let key = schema.key_column().map(|k| schema.columns[k].name.clone());
    let by = match (&opts.shard_by, &key) {
        (Some(b), Some(k)) if !b.eq_ignore_ascii_case(k) => {
            return Err(Error::Schema(format!(
                "table {table} has primary key {k}: a keyed table is sharded by its key (so that a lookup reads one shard and uniqueness is checked within it), not by {b}"
            )));
        }
        (_, Some(k)) => Some(k.clone()),
        (Some(b), None) => {
            let c = schema
                .columns
                .iter()
                .find(|c| c.name.eq_ignore_ascii_case(b))
                .ok_or_else(|| {
                    Error::Schema(format!(
                        "--shard-by {b}: table {table} has no such column (columns: {})",
                        schema.column_names()
                    ))
                })?;
            Some(c.name.clone())
        }
        (None, None) => None,
    };
    let mut paths = Vec::with_capacity(opts.shard_paths.len());
    for p in &opts.shard_paths {
        crate::store::create_last_dir(p, "--shard-paths")?;
        let abs = p.canonicalize().map_err(|e| Error::io(p, e))?;
        let text = abs.to_str().ok_or_else(|| {
            Error::Config(format!(
                "--shard-paths: {} is not valid UTF-8",
                abs.display()
            ))
        })?;
        paths.push(text.to_string());
    }
    Ok(Some(Sharding { count, by, paths }))
}
