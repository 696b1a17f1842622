//! The load pipeline: read → split → parse → write → commit.
//!
//! ```text
//!  splitter thread          compute workers (= usable cores)     writer (this thread)
//!  read blocks of a file ─► parse block → Arrow batch + stats ─► reorder by block
//!  cut at record ends       (any block, any file)                number, append to
//!  one file at a time                                            segment files
//!        ▲                                                            │
//!        └────────────── tokens: at most `in_flight` blocks ──────────┘
//! ```
//!
//! Memory is bounded by the tokens: a block is read only when one of the
//! `in_flight` tokens is free, and the writer returns the token once the
//! block's batch is on disk. Batches are written in input order, so the
//! table's rows are in the same order as a sequential parse would give.
//! Nothing is visible until the manifest naming the new segments is
//! published; on any error the new segment files are deleted.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arrow_array::RecordBatch;
use serde::Serialize;

use crate::batch::{BatchBuilder, Column, ColumnStats, Schema, ValueOptions, validate_identifier};
use crate::error::{Error, Result};
use crate::exec::worker_count;
use crate::index::{Built, KeyBatch, RowId};
use crate::parse::{
    BlockError, BlockInfo, Dialect, FieldMap, Format, JsonFormat, JsonShape, Reject, RowPolicy,
    parse_block_with, parse_json_block, read_record,
};
use crate::source::{Input, LineEnd, check_text};
use crate::split::find_boundary;
use crate::store::manifest::{MAX_SHARDS, Sharding};
use crate::store::segment::SegmentWriter;
use crate::store::{Compression, Database, LoadJournal, LoadMeta, LoadedFile, RunMeta, TableMeta};

mod json_input;
mod widen;
use json_input::{close_json_array, json_columns, json_header};
use widen::{Contradiction, MAX_WIDENINGS};
pub use widen::{Widening, wider_type};

/// Largest block a file is cut into. 16 MiB keeps per-block overhead
/// (channel hops, batch headers) well under 1 % at ~1 GB/s per core, while
/// a 1 GB file still gives ~64 blocks to balance over the workers.
pub const MAX_BLOCK_SIZE: usize = 16 << 20;
/// Smallest block, whatever the memory limit.
pub const MIN_BLOCK_SIZE: usize = 64 << 10;
/// A segment is closed once it reaches this many bytes: large enough that
/// the per-file cost (footer, fsync, manifest entry) is negligible, small
/// enough that a min/max zone map still prunes a time-ordered column well.
pub const SEGMENT_TARGET_BYTES: u64 = 128 << 20;

/// Batches with fewer rows are gathered until they hold `COALESCE_ROWS`.
const SMALL_BATCH_ROWS: usize = 8192;
const COALESCE_ROWS: usize = 65536;
/// ... or until their buffers take this much memory.
const COALESCE_BYTES: usize = 2 << 20;
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

/// The largest field position `--columns` accepts.
const MAX_FIELD_POSITION: usize = 1 << 16;

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

/// A header name as a column name: lower case, `_` for runs of other
/// characters (the names inference gives columns).
pub fn normalize_name(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw).trim().to_lowercase();
    let mut name = String::new();
    for ch in text.chars() {
        if ch.is_ascii_alphanumeric() {
            name.push(ch);
        } else if !name.ends_with('_') && !name.is_empty() {
            name.push('_');
        }
    }
    name.trim_end_matches('_').to_string()
}

/// Whether a header field names column `column`: as written (ignoring
/// case and surrounding spaces), or as inference normalises it
/// (`First Name` names `first_name`), so that a file whose header gave
/// the table its names is recognised again on a later load.
fn header_names(field: &[u8], column: &str) -> bool {
    std::str::from_utf8(field).is_ok_and(|f| f.trim().eq_ignore_ascii_case(column))
        || normalize_name(field).eq_ignore_ascii_case(column)
}

/// A header one field short of a table whose last column is `c<N>` (N
/// its position) gets an empty last field: inference names so the empty
/// field that rows ending with a delimiter have after the header's last
/// name (`c1,c2` over `1,2,`; see `infer`), and the header is then
/// recognised by those names.
fn pad_short_header(fields: &mut Vec<Vec<u8>>, cols: &[Column]) {
    if fields.len() + 1 == cols.len()
        && cols
            .last()
            .is_some_and(|c| c.name.eq_ignore_ascii_case(&format!("c{}", cols.len())))
    {
        fields.push(Vec::new());
    }
}

/// The field map of one file, from `--columns` or its header names.
fn field_map(shared: &Shared<'_>, file: &str, header: Option<&Vec<Vec<u8>>>) -> Result<FieldMap> {
    let opts = shared.opts;
    let cols = &shared.schema.columns;
    let names = || {
        cols.iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let input_err = |message: String| Error::Input {
        path: file.to_string(),
        message,
    };
    let header_pos = |want: &str| -> Result<usize> {
        let h = header.ok_or_else(|| {
            input_err("mapping columns by name needs a header line (or give positions)".into())
        })?;
        h.iter()
            .position(|f| normalize_name(f).eq_ignore_ascii_case(&normalize_name(want.as_bytes())))
            .ok_or_else(|| {
                input_err(format!(
                    "has no field named {want:?} (its header: {})",
                    h.iter()
                        .map(|f| String::from_utf8_lossy(f).to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    };
    let mut targets: Vec<Option<usize>> = Vec::new();
    let feed = |field: usize, col: usize, targets: &mut Vec<Option<usize>>| -> Result<()> {
        if targets.len() <= field {
            targets.resize(field + 1, None);
        }
        if targets[field].is_some() {
            return Err(input_err(format!("field {} feeds two columns", field + 1)));
        }
        targets[field] = Some(col);
        Ok(())
    };
    if opts.match_by_name {
        if opts.columns.is_some() {
            return Err(Error::Config(
                "--columns and --match-by-name do not go together: pick one".into(),
            ));
        }
        let h = header.ok_or_else(|| input_err("--match-by-name needs a header line".into()))?;
        for (i, f) in h.iter().enumerate() {
            let n = normalize_name(f);
            let c = cols
                .iter()
                .position(|c| c.name.eq_ignore_ascii_case(&n))
                .ok_or_else(|| {
                    input_err(format!(
                        "header field {:?} is not a column of the table (columns: {}); choose fields with --columns",
                        String::from_utf8_lossy(f),
                        names()
                    ))
                })?;
            if targets.contains(&Some(c)) {
                return Err(input_err(format!(
                    "two header fields name column {}",
                    cols[c].name
                )));
            }
            feed(i, c, &mut targets)?;
        }
    } else if let Some(list) = &opts.columns {
        if list.len() > cols.len() {
            return Err(Error::Config(format!(
                "--columns lists {} fields, the table has {} columns ({})",
                list.len(),
                cols.len(),
                names()
            )));
        }
        for (c, r) in list.iter().enumerate() {
            let field = match r {
                ColumnRef::Position(p) if (1..=MAX_FIELD_POSITION).contains(p) => p - 1,
                ColumnRef::Position(p) => {
                    return Err(Error::Config(format!(
                        "--columns: position {p} is out of range (1 to {MAX_FIELD_POSITION})"
                    )));
                }
                ColumnRef::Name(n) => header_pos(n)?,
            };
            feed(field, c, &mut targets)?;
        }
    }
    let needed = targets
        .iter()
        .rposition(Option::is_some)
        .map_or(0, |i| i + 1);
    let fills = (0..cols.len())
        .filter(|c| !targets.contains(&Some(*c)))
        .map(|c| (c, cols[c].default.clone().map(String::into_bytes)))
        .collect();
    let m = FieldMap {
        targets,
        fills,
        needed,
    };
    // Defaults must parse with this load's formats (--date-format...).
    let mut probe = BatchBuilder::new(shared.schema, shared.values.clone(), 1);
    for (c, d) in &m.fills {
        if let Some(d) = d {
            probe.push(*c, d, true).map_err(|msg| {
                Error::Config(format!(
                    "DEFAULT '{}' of column {} does not read with this load's formats: {msg}",
                    String::from_utf8_lossy(d),
                    cols[*c].name
                ))
            })?;
        }
    }
    Ok(m)
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
        }
    }
}

/// Counters a progress bar can poll while a load runs.
#[derive(Debug, Default)]
pub struct Progress {
    /// Bytes read from inputs so far.
    pub bytes_read: AtomicU64,
    /// Rows written so far.
    pub rows: AtomicU64,
    /// Input files fully read.
    pub files_done: AtomicU64,
}

impl Progress {
    /// The counters now.
    fn counts(&self) -> [u64; 3] {
        [&self.bytes_read, &self.rows, &self.files_done].map(|c| c.load(Ordering::Relaxed))
    }

    /// Sets the counters back to `counts` (a group read again).
    fn restore(&self, counts: [u64; 3]) {
        for (c, v) in [&self.bytes_read, &self.rows, &self.files_done]
            .into_iter()
            .zip(counts)
        {
            c.store(v, Ordering::Relaxed);
        }
    }
}

/// What a finished load did.
#[derive(Debug, Clone, Serialize)]
pub struct LoadSummary {
    pub table: String,
    /// True when this load created the table.
    pub created: bool,
    pub rows: u64,
    /// Records rejected (with `OnError::Skip`); `rows + rejected` is every
    /// record of the input.
    pub rejected: u64,
    /// Input bytes read.
    pub bytes: u64,
    pub files: u64,
    /// New segment files.
    pub segments: u64,
    /// Rows skipped because their key was already loaded
    /// (`OnDuplicate::Skip`).
    pub duplicates: u64,
    /// Key-index runs merged after the load (by size tier; 0: none).
    pub runs_merged: usize,
    /// Why that merge failed, if it did (the load is committed; the runs
    /// stay as they were).
    pub merge_error: Option<String>,
    pub seconds: f64,
    /// Compute workers used.
    pub threads: usize,
    pub block_size: usize,
    /// Commits made (groups of files, see `CommitEvery`).
    pub commits: u64,
    /// Input files skipped because an earlier commit loaded them.
    pub already_loaded: u64,
    /// Inputs named more than once in this load (read once).
    pub listed_twice: u64,
    /// Input files that could not be read and were skipped
    /// (`OnError::Skip`), with why.
    pub unreadable: Vec<(String, String)>,
    /// Input files that hold no text at all: each loaded as 0 rows.
    pub empty_files: Vec<String>,
    /// Input files left unread because the load was stopped (`stop`);
    /// running the same load again loads them.
    pub files_left: u64,
    /// Inferred column types a later value contradicted, widened in
    /// order (see [`LoadOptions::widen`]); the table has the last type of
    /// each column.
    pub widened: Vec<Widening>,
}

impl LoadSummary {
    pub fn mb_per_s(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.seconds.max(1e-9)
    }

    pub fn rows_per_s(&self) -> f64 {
        self.rows as f64 / self.seconds.max(1e-9)
    }
}

/// Blocks in flight for `workers`: each worker parsing one and holding one
/// finished, plus two for the reader and the writer to overlap.
fn in_flight(workers: usize) -> usize {
    2 * workers + 2
}

/// Memory held whatever the block size: the binary, thread stacks, the
/// segment writer's buffer.
pub const FIXED_MEMORY: u64 = 16 << 20;

/// The block size for a memory limit. A block in flight costs up to four
/// times its size: the raw bytes, a pooled spare buffer, the parsed columns
/// (for numbers about 0.4x the text, for text about 1.1x), and the growth
/// slack of those buffers.
pub fn block_size_for(memory_limit: u64, workers: usize) -> usize {
    let per_block = memory_limit.saturating_sub(FIXED_MEMORY) / (4 * in_flight(workers) as u64);
    (per_block as usize).clamp(MIN_BLOCK_SIZE, MAX_BLOCK_SIZE)
}

struct Block {
    seq: u64,
    data: Buf,
    /// What `data` holds: one piece of one file, or several small files
    /// packed together (one hand-off for many files).
    parts: Vec<Part>,
}

/// A range of a block's data that comes from one file.
#[derive(Clone)]
struct Part {
    file: usize,
    /// Byte offset of the range's first byte in its file.
    offset: u64,
    /// Lines before it, when it starts the file's data.
    first_line: Option<u64>,
    start: usize,
    end: usize,
    /// The file's column mapping, if any.
    map: Option<Arc<FieldMap>>,
    /// JSON: how the file's rows are laid out (`--format json` reads an
    /// array or values one after another, as the file starts).
    json: JsonShape,
}

/// A reusable byte buffer: `bytes[..len]` holds data, the rest of `bytes`
/// is initialised space kept so that refilling it never zeroes memory again
/// (zeroing cost ~3 % of a load's CPU before).
#[derive(Default)]
struct Buf {
    bytes: Vec<u8>,
    len: usize,
}

impl Buf {
    fn data(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Drops the first `n` bytes.
    fn consume(&mut self, n: usize) {
        self.bytes.copy_within(n..self.len, 0);
        self.len -= n;
    }

    /// Replaces the contents with `src`.
    fn set(&mut self, src: &[u8]) {
        if self.bytes.len() < src.len() {
            self.bytes.resize(src.len(), 0);
        }
        self.bytes[..src.len()].copy_from_slice(src);
        self.len = src.len();
    }
}

/// A parsed block: its rows cut by shard, and per part what it held; or
/// why it failed.
type Parsed = Result<(Vec<Out>, Vec<(BlockInfo, Vec<Reject>, bool)>), Failed>;

/// One shard's rows of a parsed block.
struct Out {
    /// The shard; for round-robin routing the slice (see
    /// [`crate::partition::deal`]) that the writer turns into a shard.
    shard: u32,
    batch: RecordBatch,
    stats: Vec<ColumnStats>,
    /// Its keys, sorted and checked against the shard's runs.
    keys: Option<KeyBatch>,
    /// Each row's row in the block (empty: the block's rows, in order).
    rows: Vec<u32>,
}

/// How a load's rows reach their shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// A table of one shard.
    One,
    /// By the hash of this column's value.
    Hash(usize),
    /// Dealt in input order.
    RoundRobin,
}

/// Why a block failed.
enum Failed {
    /// Part `.0` of the block does not parse.
    Part(usize, BlockError),
    /// Anything else (a damaged key-index run, an Arrow error): reported
    /// as it is, never as a malformed input.
    Other(Error),
}

struct Done {
    seq: u64,
    parts: Vec<Part>,
    /// `None`: skipped because the load is failing or cancelled.
    result: Option<Parsed>,
}

/// The runs of [`open_runs`]: those already open, and a thread opening the
/// others.
type OpeningRuns = (
    Vec<Option<Arc<crate::index::Run>>>,
    std::thread::JoinHandle<Result<Vec<Arc<crate::index::Run>>>>,
);

/// Starts opening `runs` (those the database has not opened before) on a
/// thread of its own; `None` when there are none.
fn open_runs(db: &Database, runs: &[RunMeta]) -> Result<Option<OpeningRuns>> {
    if runs.is_empty() {
        return Ok(None);
    }
    let known: Vec<Option<Arc<crate::index::Run>>> =
        runs.iter().map(|r| db.cached_run(r)).collect();
    let todo: Vec<RunMeta> = runs
        .iter()
        .zip(&known)
        .filter(|(_, k)| k.is_none())
        .map(|(r, _)| r.clone())
        .collect();
    let dir = db.dir().to_path_buf();
    let handle = std::thread::Builder::new()
        .name("sluice-open-runs".into())
        .spawn(move || {
            todo.iter()
                .map(|r| crate::store::open_run(&dir, r))
                .collect()
        })
        .map_err(|e| Error::Internal(format!("cannot start a thread: {e}")))?;
    Ok(Some((known, handle)))
}

/// Shared by the pipeline's threads.
struct Shared<'a> {
    opts: &'a LoadOptions,
    /// The PRIMARY KEY column, if the table has one.
    key_col: Option<usize>,
    /// Per shard: whether its keys will be checked against runs of the
    /// table ([`crate::index::check_batches`]), so that the workers order
    /// each batch's keys by hash for it.
    check_keys: Vec<bool>,
    route: Route,
    shards: u32,
    table: &'a str,
    schema: &'a Schema,
    values: Arc<ValueOptions>,
    inputs: &'a [Input],
    block_size: usize,
    /// Lowest block number that failed to parse (`u64::MAX`: none).
    first_error: AtomicU64,
    /// Stop everything (writer failed, or the caller cancelled).
    stop: AtomicBool,
    pool: Mutex<Vec<Buf>>,
    /// Per input file read so far, in order: what the journal records.
    read: Mutex<Vec<FileRead>>,
}

/// An input file as the reader saw it (small: a load may read 100,000).
struct FileRead {
    /// Bytes read (as stored).
    size: u64,
    mtime_ns: u64,
    crc32: u32,
    /// Why it was skipped (`OnError::Skip`), if it could not be read.
    unreadable: Option<Box<str>>,
    /// It holds no text: 0 rows.
    empty: bool,
}

impl Shared<'_> {
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
            || self.first_error.load(Ordering::Relaxed) != u64::MAX
            || self
                .opts
                .cancel
                .as_ref()
                .is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// A buffer from the pool: the largest, so that buffers already grown
    /// to a block (and zeroed once) are reused rather than a small one
    /// grown again for every small file.
    fn take_buf(&self) -> Buf {
        let mut b = self
            .pool
            .lock()
            .map(|mut p| {
                let largest = (0..p.len()).max_by_key(|&i| p[i].bytes.len())?;
                Some(p.swap_remove(largest))
            })
            .ok()
            .flatten()
            .unwrap_or_default();
        b.len = 0;
        b
    }

    fn give_buf(&self, b: Buf) {
        if let Ok(mut p) = self.pool.lock() {
            p.push(b);
        }
    }
}

/// Loads `inputs` into `table`, creating it from `opts.schema` if needed.
///
/// The files are committed in groups (`opts.commit_every`; one group by
/// default unless the input passes 1 GiB), each group all or nothing, and
/// each commit journals its files: the same load run again skips the
/// files already committed (`opts.reload`). An error leaves every earlier
/// group committed and says how many files they held.
pub fn load(
    db: &mut Database,
    table: &str,
    inputs: &[Input],
    opts: &LoadOptions,
) -> Result<LoadSummary> {
    let start = Instant::now();
    validate_identifier(table, "table")?;
    let table = table.to_ascii_lowercase();
    if inputs.is_empty() {
        return Err(Error::Config("no input files given".into()));
    }
    checked_options(db, &table, opts)?;
    // A file listed twice (a glob and its own name) is read once. Known by
    // device and inode: 16 bytes a file, for loads of 100,000 files.
    // The lists are copied only when something is dropped from them.
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
    drop(keep);
    let unique: &[Input] = deduped.as_deref().unwrap_or(inputs);
    let (rest, already_loaded) = resume_plan(db, &table, unique, opts)?;
    let todo: &[Input] = rest.as_deref().unwrap_or(unique);
    let mut total = LoadSummary {
        table: table.clone(),
        created: false,
        rows: 0,
        rejected: 0,
        bytes: 0,
        files: 0,
        segments: 0,
        duplicates: 0,
        runs_merged: 0,
        merge_error: None,
        seconds: 0.0,
        threads: worker_count(opts.threads),
        block_size: 0,
        commits: 0,
        already_loaded,
        listed_twice,
        unreadable: Vec::new(),
        empty_files: Vec::new(),
        files_left: 0,
        widened: Vec::new(),
    };
    if todo.is_empty() {
        if db.table(&table).is_none() {
            return Err(Error::Internal(
                "every input skipped for a new table".into(),
            ));
        }
        total.seconds = start.elapsed().as_secs_f64();
        return Ok(total);
    }
    // One rejects file for all the groups; a resumed load appends to it.
    let mut rejects = match &opts.rejects {
        Some(p) => Some(RejectsFile::create(p, already_loaded > 0)?),
        None => None,
    };
    // Inferred types of a table this load creates may widen until the
    // load's first commit (`LoadOptions::widen`): the options then carry
    // the widened schema.
    let new_table = db.table(&table).is_none();
    let mut widened: Option<LoadOptions> = None;
    let mut done = 0usize;
    let result = loop {
        let cur = widened.as_ref().unwrap_or(opts);
        let progress_before = cur.progress.as_deref().map(Progress::counts);
        let mut contradiction = None;
        let group = load_group(
            db,
            &table,
            &todo[done..],
            cur,
            &mut rejects,
            total.rejected,
            &mut contradiction,
        );
        let g = match group {
            Ok(g) => g,
            Err(e) => {
                let failed = Failure {
                    error: e,
                    contradiction,
                    inputs: &todo[done..],
                    new_table,
                    committed: (done > 0)
                        .then_some((already_loaded + done as u64, unique.len() as u64)),
                };
                match widen_after(cur, failed, &total.widened) {
                    Ok((next, w)) => {
                        if let (Some(p), Some(c)) = (&cur.progress, progress_before) {
                            p.restore(c);
                        }
                        total.widened.push(w);
                        widened = Some(next);
                        continue;
                    }
                    Err(e @ Error::NotWidened { .. }) => break Err(e),
                    Err(e) if done == 0 => break Err(e),
                    Err(e) => {
                        break Err(Error::PartlyLoaded {
                            committed: already_loaded + done as u64,
                            total: unique.len() as u64,
                            cause: Box::new(e),
                        });
                    }
                }
            }
        };
        total.created |= g.created;
        total.rows += g.rows;
        total.rejected += g.rejected;
        total.bytes += g.bytes;
        total.files += g.files;
        total.segments += g.segments;
        total.duplicates += g.duplicates;
        total.runs_merged += g.runs_merged;
        if g.merge_error.is_some() {
            total.merge_error = g.merge_error;
        }
        total.threads = g.threads;
        total.block_size = g.block_size;
        total.commits += g.commits;
        if let Some(r) = rejects.as_mut() {
            for (file, why) in &g.unreadable {
                r.unreadable(file, why)?;
            }
        }
        total.unreadable.extend(g.unreadable);
        total.empty_files.extend(g.empty_files);
        done += g.files as usize;
        if done >= todo.len() {
            break Ok(());
        }
        if g.files == 0
            || opts
                .stop
                .as_ref()
                .is_some_and(|s| s.load(Ordering::Relaxed))
        {
            total.files_left = (todo.len() - done) as u64;
            break Ok(());
        }
    };
    if let Some(r) = rejects {
        r.finish()?;
    }
    result?;
    total.seconds = start.elapsed().as_secs_f64();
    Ok(total)
}

/// A group of files that failed to load, and what widening needs to know
/// of it.
struct Failure<'a> {
    error: Error,
    /// The value behind `error`, when it is one its column's type did not
    /// take.
    contradiction: Option<Contradiction>,
    /// The group's inputs (and those after it).
    inputs: &'a [Input],
    /// The table did not exist when the load started.
    new_table: bool,
    /// Files committed by this load's earlier groups (and in all), if any.
    committed: Option<(u64, u64)>,
}

/// After a failed group: the options to read it again with, with the
/// offending value's column widened (see [`LoadOptions::widen`]), and
/// what was widened; or the error to fail with. `before` are the
/// widenings of this load so far.
fn widen_after(
    opts: &LoadOptions,
    f: Failure<'_>,
    before: &[Widening],
) -> Result<(LoadOptions, Widening)> {
    let (Error::Parse { path, line, .. }, Some(c), Some(schema), true) =
        (&f.error, &f.contradiction, &opts.schema, f.new_table)
    else {
        return Err(f.error);
    };
    let Some(col) = schema.columns.get(c.column) else {
        return Err(f.error);
    };
    if !opts.widen.iter().any(|n| n.eq_ignore_ascii_case(&col.name)) {
        return Err(f.error);
    }
    let times = before.iter().filter(|w| w.column == col.name).count();
    let key = col.primary_key
        || opts
            .key
            .as_ref()
            .is_some_and(|k| k.eq_ignore_ascii_case(&col.name));
    let last = times + 1 >= MAX_WIDENINGS;
    let Some(wider) = wider_type(col.data_type, &c.value, &opts.values, key, last) else {
        return Err(f.error);
    };
    if let Some((committed, total)) = f.committed {
        return Err(Error::NotWidened {
            column: col.name.clone(),
            ty: col.data_type,
            wider,
            committed,
            total,
            cause: Box::new(f.error),
        });
    }
    // Read again only what can be: not a stream, not after a stop.
    let stopping = [&opts.stop, &opts.cancel]
        .into_iter()
        .flatten()
        .any(|s| s.load(Ordering::Relaxed));
    let rereadable = f
        .inputs
        .get(..=c.file)
        .is_some_and(|read| read.iter().all(is_regular));
    if times >= MAX_WIDENINGS || stopping || !rereadable {
        return Err(f.error);
    }
    let widening = Widening {
        column: col.name.clone(),
        from: col.data_type,
        to: wider,
        path: path.clone(),
        line: *line,
        value: String::from_utf8_lossy(&c.value).into_owned(),
    };
    let mut next = opts.clone();
    if let Some(s) = &mut next.schema {
        s.columns[c.column].data_type = wider;
    }
    Ok((next, widening))
}

/// The inputs still to load (`None`: all of them), and how many are
/// skipped because an earlier commit of the table loaded them: the same
/// path, size and CRC-32 of the bytes. The size and modification time
/// alone never skip a file: an edit that keeps both (`touch -r`, a copy
/// with `cp -p`, a clock set back) would leave its new rows unloaded.
fn resume_plan(
    db: &Database,
    table: &str,
    inputs: &[Input],
    opts: &LoadOptions,
) -> Result<(Option<Vec<Input>>, u64)> {
    let reload = opts.reload;
    let meta = match db.table(table) {
        Some(m) if !m.loads.is_empty() && reload != Reload::All => m,
        _ => return Ok((None, 0)),
    };
    let mut loaded: std::collections::HashMap<String, (u64, LoadedFile)> =
        std::collections::HashMap::new();
    for l in &meta.loads {
        let j = LoadJournal::read(db.dir(), l)?;
        for f in j.files {
            loaded.insert(f.path.clone(), (j.version, f));
        }
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
fn is_regular(input: &Input) -> bool {
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

/// Checks the options against the table (or for creating it): the
/// table as it is, the schema to load with, the segment compression.
fn checked_options(
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
                        schema
                            .columns
                            .iter()
                            .map(|c| c.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
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

/// Creates the shard directories of a table's first load: inside the
/// table's directory, or on another disk with a link to it from there.
/// Returns what it created (removed again if the load fails). A committed
/// table's shard directories are never created again: one that is missing
/// is an error ([`Error::ShardMissing`]: a disk not mounted).
fn create_shard_dirs(db: &Database, table: &str, sharding: &Sharding) -> Result<Vec<PathBuf>> {
    if db.table(table).is_some() {
        db.check_shard_dirs(table)?;
        return Ok(Vec::new());
    }
    let mut made = Vec::new();
    for s in 0..sharding.count {
        let (_, link) = db.shard_dir(table, s, sharding.count);
        if link.exists() || link.is_symlink() {
            continue;
        }
        if sharding.paths.is_empty() {
            std::fs::create_dir_all(&link).map_err(|e| Error::io(&link, e))?;
            made.push(link);
            continue;
        }
        let base = Path::new(&sharding.paths[s as usize % sharding.paths.len()]);
        // A name no other database or table uses.
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let target = base.join(format!(
            "sluice-{table}-{}-{:x}-{nonce:x}",
            crate::store::shard_dir_name(s),
            std::process::id()
        ));
        std::fs::create_dir_all(&target).map_err(|e| Error::io(&target, e))?;
        made.push(target.clone());
        std::os::unix::fs::symlink(&target, &link).map_err(|e| Error::io(&link, e))?;
        made.push(link);
    }
    Ok(made)
}

/// The journal's name of an input: its absolute path with the directory's
/// symbolic links resolved (`<stdin>` for standard input). Directories are
/// resolved once for all the files in them.
#[derive(Default)]
struct JournalPaths {
    last: Option<(PathBuf, PathBuf)>,
}

impl JournalPaths {
    fn of(&mut self, input: &Input) -> String {
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

/// Loads the first files of `inputs` as one commit: until a limit of
/// `opts.commit_every` or `opts.stop` ends the group after a file.
/// `summary.files` says how many were consumed.
fn load_group(
    db: &mut Database,
    table: &str,
    inputs: &[Input],
    opts: &LoadOptions,
    rejects: &mut Option<RejectsFile>,
    rejected_before: u64,
    contradiction: &mut Option<Contradiction>,
) -> Result<LoadSummary> {
    let start = Instant::now();
    let table = table.to_string();
    let (existing, schema, compression, sharding) = checked_options(db, &table, opts)?;
    let workers = worker_count(opts.threads);
    let block_size = opts
        .block_size
        .unwrap_or_else(|| block_size_for(opts.memory_limit, workers))
        .max(1);
    let version = db.manifest().version + 1;
    let (rel_dir, abs_dir) = db.table_dir(&table);
    let key_col = schema.key_column();
    let count = sharding.as_ref().map_or(1, |s| s.count);
    let route = match &sharding {
        None => Route::One,
        Some(Sharding { by: None, .. }) => Route::RoundRobin,
        Some(Sharding { by: Some(c), .. }) => Route::Hash(
            schema
                .columns
                .iter()
                .position(|x| x.name.eq_ignore_ascii_case(c))
                .ok_or_else(|| {
                    Error::Schema(format!("table {table} is sharded by {c}, which it lacks"))
                })?,
        ),
    };
    // The table's runs are opened (footer, index and filter checked) on a
    // thread of their own while the load parses: its keys are checked
    // against them when the group's run is built.
    let table_runs: Vec<RunMeta> = existing
        .as_ref()
        .map(|t| t.runs.clone())
        .unwrap_or_default();
    let mut has_runs = vec![false; count as usize];
    for r in &table_runs {
        *has_runs
            .get_mut(r.shard as usize)
            .ok_or_else(|| Error::Corrupt {
                file: db.dir().join(&r.file),
                message: format!("a run of shard {} in a table of {count}", r.shard),
            })? = true;
    }
    let opening = open_runs(db, &table_runs)?;
    let created_dir = !abs_dir.exists();
    std::fs::create_dir_all(&abs_dir).map_err(|e| Error::io(&abs_dir, e))?;
    let mut created = Vec::new();
    if created_dir {
        created.push(abs_dir.clone());
    }
    if let Some(sh) = &sharding {
        match create_shard_dirs(db, &table, sh) {
            Ok(made) => created.extend(made),
            Err(e) => {
                for p in created.iter().rev() {
                    let _ = std::fs::remove_file(p).or_else(|_| std::fs::remove_dir(p));
                }
                return Err(e);
            }
        }
    }

    let shared = Shared {
        opts,
        check_keys: has_runs
            .iter()
            .map(|&r| r && opts.on_duplicate == OnDuplicate::Error)
            .collect(),
        route,
        shards: count,
        table: &table,
        key_col,
        schema: &schema,
        values: Arc::new(opts.values.clone()),
        inputs,
        block_size,
        first_error: AtomicU64::new(u64::MAX),
        stop: AtomicBool::new(false),
        pool: Mutex::new(Vec::new()),
        read: Mutex::new(Vec::new()),
    };
    let outs = (0..count)
        .map(|s| {
            let (rel_dir, abs_dir) = db.shard_dir(&table, s, count);
            ShardOut {
                shard: s,
                rel_dir,
                abs_dir,
                current: None,
                done: Vec::new(),
                plain: vec![false; schema.columns.len()],
                pending: Vec::new(),
                pending_rows: 0,
                pending_bytes: 0,
                rows: 0,
                keys: Keys {
                    base_row: existing.as_ref().map(|t| t.shard_rows(s)).unwrap_or(0),
                    batches: Vec::new(),
                    bytes: 0,
                    table_runs: Vec::new(),
                    load_runs: Vec::new(),
                    runs: Vec::new(),
                    seen: std::collections::HashSet::new(),
                    origin: Vec::new(),
                },
            }
        })
        .collect();
    let mut writer = Writer {
        shared: &shared,
        arrow_schema: schema.arrow_schema(),
        rel_dir,
        abs_dir,
        version,
        workers,
        compression,
        outs,
        rows_before: existing.as_ref().map(|t| t.rows()).unwrap_or(0),
        rejected: rejected_before,
        rejects: rejects.take(),
        file_rows: vec![(0, 0); inputs.len()],
        created,
        rows: 0,
        line: 0,
        file: usize::MAX,
        key_budget: opts.key_budget.unwrap_or((opts.memory_limit / 2) as usize),
        provenance: Vec::new(),
        duplicates: 0,
        conflict_existing: None,
        table_runs,
        opening,
        contradiction: None,
    };
    let slots = in_flight(workers);
    let (block_tx, block_rx) = sync_channel::<Block>(slots);
    let (done_tx, done_rx) = sync_channel::<Done>(slots);
    let (token_tx, token_rx) = sync_channel::<()>(slots);
    for _ in 0..slots {
        token_tx.send(()).expect("receiver alive");
    }
    let block_rx = Mutex::new(block_rx);
    let (split_res, write_res) = std::thread::scope(|s| {
        let shared = &shared;
        let spawn_err = |e: std::io::Error| Error::Internal(format!("cannot start a thread: {e}"));
        let splitter = std::thread::Builder::new()
            .name("sluice-read".into())
            .spawn_scoped(s, move || split_all(shared, block_tx, token_rx))
            .map_err(spawn_err);
        for i in 0..workers {
            let done_tx = done_tx.clone();
            let block_rx = &block_rx;
            // Without workers nothing drains the blocks: the reader would
            // block, so a failure to start one stops the load.
            if let Err(e) = std::thread::Builder::new()
                .name(format!("sluice-parse-{i}"))
                .spawn_scoped(s, move || work(shared, block_rx, done_tx))
            {
                shared.stop.store(true, Ordering::Relaxed);
                return (Err(spawn_err(e)), Ok(()));
            }
        }
        drop(done_tx);
        let write_res = writer.run(done_rx, token_tx);
        if write_res.is_err() {
            shared.stop.store(true, Ordering::Relaxed);
        }
        let split_res = splitter.and_then(|h| {
            h.join()
                .unwrap_or_else(|_| Err(Error::Internal("the reader thread panicked".into())))
        });
        (split_res, write_res)
    });

    // The writer's error is the earliest in input order: it saw every block
    // the reader produced before the reader stopped.
    let result = write_res.and(split_res).and_then(|files| {
        if opts
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
        {
            return Err(Error::Cancelled);
        }
        writer.finish()?;
        Ok(files)
    });
    for (meta, run) in writer.opened_runs() {
        db.remember_run(&meta, run);
    }
    // The rejects file is kept also when the load fails: it shows why.
    *rejects = writer.rejects.take();
    let result = result.and_then(|files| {
        if let Some(r) = rejects.as_mut() {
            r.flush()?;
        }
        Ok(files)
    });

    let files = match result {
        Ok(files) => files,
        Err(Error::DuplicateKey {
            table: t,
            key,
            first,
            second,
        }) => {
            // An earlier row of the table: show it.
            let first = match writer.conflict_existing {
                Some(id) => describe_existing(db, &table, id).unwrap_or(first),
                None => first,
            };
            writer.discard();
            return Err(Error::DuplicateKey {
                table: t,
                key,
                first,
                second,
            });
        }
        Err(e) => {
            *contradiction = writer.contradiction.take();
            writer.discard();
            return Err(e);
        }
    };
    // A stop asked while a stream (standard input, a pipe) was read may
    // have cut it short (Ctrl-C reaches the whole pipeline): its group is
    // not committed.
    let stopped = opts
        .stop
        .as_ref()
        .is_some_and(|s| s.load(Ordering::Relaxed));
    if stopped && inputs[..files.0 as usize].iter().any(|i| !is_regular(i)) {
        writer.discard();
        return Err(Error::Cancelled);
    }
    // The journal: which files this commit holds.
    let journal = match writer.journal(files.0 as usize) {
        Ok(j) => j,
        Err(e) => {
            writer.discard();
            return Err(e);
        }
    };
    // New files must be durable before the manifest names them.
    let synced = std::iter::once(&writer.abs_dir)
        .chain(writer.outs.iter().map(|o| &o.abs_dir).filter(|_| count > 1))
        .try_for_each(|d| crate::store::manifest::sync_dir(d));
    if let Err(e) = synced {
        writer.discard();
        return Err(e);
    }
    let mut next = db.manifest().clone();
    let new_segments = writer.outs.iter().map(|o| o.done.len() as u64).sum();
    let entry = next
        .tables
        .entry(table.clone())
        .or_insert_with(|| TableMeta {
            schema: schema.clone(),
            segments: Vec::new(),
            runs: Vec::new(),
            compression,
            loads: Vec::new(),
            sharding: sharding.clone(),
        });
    for o in &mut writer.outs {
        entry.segments.append(&mut o.done);
        entry.runs.append(&mut o.keys.runs);
    }
    entry.loads.extend(journal);
    match db.commit(next) {
        Ok(()) => {}
        // Published: its files stay.
        Err(e @ Error::NotDurable(_)) => return Err(e),
        Err(e) => {
            writer.discard();
            return Err(e);
        }
    }
    // Committed. Many runs slow lookups and key checks: merge by size
    // tier (each merge its own atomic commit; a failure leaves the load
    // committed).
    let (runs_merged, merge_error) = if key_col.is_some() {
        match db.merge_tiers(&table) {
            Ok(n) => (n, None),
            Err(e) => (0, Some(e.to_string())),
        }
    } else {
        (0, None)
    };
    Ok(LoadSummary {
        table: table.clone(),
        created: existing.is_none(),
        rows: writer.rows,
        rejected: writer.rejected - rejected_before,
        bytes: files.1,
        files: files.0,
        segments: new_segments,
        duplicates: writer.duplicates,
        runs_merged,
        merge_error,
        seconds: start.elapsed().as_secs_f64(),
        threads: workers,
        block_size,
        commits: 1,
        already_loaded: 0,
        listed_twice: 0,
        unreadable: shared
            .read
            .lock()
            .map(|r| {
                r.iter()
                    .zip(inputs)
                    .filter_map(|(f, i)| {
                        let why = f.unreadable.as_ref()?;
                        Some((i.display_name(), why.to_string()))
                    })
                    .collect()
            })
            .unwrap_or_default(),
        empty_files: shared
            .read
            .lock()
            .map(|r| {
                r.iter()
                    .zip(inputs)
                    .filter(|(f, _)| f.empty)
                    .map(|(_, i)| i.display_name())
                    .collect()
            })
            .unwrap_or_default(),
        files_left: 0,
        widened: Vec::new(),
    })
}

/// Worker: parse blocks until the block channel closes.
fn work(shared: &Shared<'_>, blocks: &Mutex<Receiver<Block>>, done: SyncSender<Done>) {
    let mut rows_per_byte = 1.0 / 16.0;
    loop {
        let next = match blocks.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(block) = next else { return };
        let cancelled = shared
            .opts
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed));
        let result = if cancelled
            || shared.stop.load(Ordering::Relaxed)
            || shared.first_error.load(Ordering::Relaxed) < block.seq
        {
            None
        } else {
            let data = block.data.data();
            let capacity = (data.len() as f64 * rows_per_byte * 1.1) as usize + 16;
            let mut builder = BatchBuilder::new(shared.schema, shared.values.clone(), capacity);
            let policy = RowPolicy {
                skip_bad: shared.opts.on_error == OnError::Skip,
                fill_missing: shared.opts.allow_missing_columns,
                max_record: Some(shared.opts.max_line_size),
                counted_only: shared.opts.rejects.is_none() && shared.opts.max_errors.is_none(),
            };
            let mut parts = Vec::with_capacity(block.parts.len());
            let mut drop: Vec<u32> = Vec::new();
            let mut rows_in_builder = 0u32;
            let mut failed = None;
            for (k, part) in block.parts.iter().enumerate() {
                let mut rejects = Vec::new();
                let bytes = &data[part.start..part.end];
                let map = part.map.as_deref();
                let parsed = match &shared.opts.format {
                    Format::Delimited => parse_block_with(
                        bytes,
                        &shared.opts.dialect,
                        shared.schema,
                        &mut builder,
                        policy,
                        map,
                        &mut rejects,
                    ),
                    Format::Json(j) => parse_json_block(
                        bytes,
                        &JsonFormat {
                            shape: part.json,
                            ..*j
                        },
                        shared.schema,
                        &mut builder,
                        policy,
                        map,
                        &mut rejects,
                    ),
                };
                match parsed {
                    Ok(info) => {
                        // Rows of rejects count from the part's first row.
                        for r in &mut rejects {
                            r.row += rows_in_builder;
                            drop.push(r.row);
                        }
                        rows_in_builder += (info.rows + rejects.len() as u64) as u32;
                        // One record a line (row i is the part's line i+1):
                        // as many newlines as rows, one fewer when the part
                        // ends without one. Blank or comment lines and
                        // quoted newlines break it.
                        let bytes = &data[part.start..part.end];
                        let open_end = !bytes.is_empty() && bytes.last() != Some(&b'\n');
                        let one_a_line =
                            info.newlines + open_end as u64 == info.rows + rejects.len() as u64;
                        parts.push((info, rejects, one_a_line));
                    }
                    Err(e) => {
                        failed = Some((k, e));
                        break;
                    }
                }
            }
            Some(match failed {
                None => {
                    if !data.is_empty() {
                        rows_per_byte = rows_in_builder as f64 / data.len() as f64;
                    }
                    // Repeating TEXT values are dictionary-encoded here,
                    // in parallel, so the writer only merges dictionaries.
                    // So are the keys extracted and sorted.
                    match builder
                        .finish_without(&drop)
                        .and_then(|(b, stats)| route_batch(shared, b, stats))
                    {
                        Ok(outs) => Ok((outs, parts)),
                        Err(e) => Err(Failed::Other(e)),
                    }
                }
                Some((k, e)) => {
                    shared.first_error.fetch_min(block.seq, Ordering::Relaxed);
                    Err(Failed::Part(k, e))
                }
            })
        };
        let Block { seq, data, parts } = block;
        shared.give_buf(data);
        // If the writer is gone, keep draining so the reader never blocks.
        let _ = done.send(Done { seq, parts, result });
    }
}

/// Cuts a parsed batch by shard; per shard, extracts and sorts the keys
/// and checks them against the shard's runs, and dictionary-encodes
/// repeating TEXT. Runs on the workers, in parallel.
fn route_batch(shared: &Shared<'_>, b: RecordBatch, stats: Vec<ColumnStats>) -> Result<Vec<Out>> {
    use crate::partition::{deal, shards_of, split};
    let n = shared.shards;
    let pieces = match shared.route {
        Route::One => return Ok(vec![finish_piece(shared, 0, b, stats, Vec::new())?]),
        Route::Hash(c) => split(&b, &shards_of(b.column(c).as_ref(), n)?, n)?,
        Route::RoundRobin => deal(&b, n),
    };
    if let [one] = pieces.as_slice()
        && one.rows.len() == b.num_rows()
    {
        return Ok(vec![finish_piece(shared, one.shard, b, stats, Vec::new())?]);
    }
    // Which TEXT columns repeat enough to encode: asked once of the whole
    // batch, not once a piece.
    let gains = crate::batch::dict::text_gains(&b);
    pieces
        .into_iter()
        .map(|p| {
            let stats = p
                .batch
                .columns()
                .iter()
                .map(|a| crate::batch::column_stats(a.as_ref()))
                .collect();
            finish_piece_where(shared, p.shard, p.batch, stats, p.rows, Some(&gains))
        })
        .collect()
}

fn finish_piece(
    shared: &Shared<'_>,
    shard: u32,
    batch: RecordBatch,
    stats: Vec<ColumnStats>,
    rows: Vec<u32>,
) -> Result<Out> {
    finish_piece_where(shared, shard, batch, stats, rows, None)
}

/// [`finish_piece`], dictionary-encoding only the TEXT columns `encode`
/// marks (all that gain when `None`).
fn finish_piece_where(
    shared: &Shared<'_>,
    shard: u32,
    batch: RecordBatch,
    stats: Vec<ColumnStats>,
    rows: Vec<u32>,
    encode: Option<&[bool]>,
) -> Result<Out> {
    let keys = match shared.key_col {
        Some(k) => {
            let mut kb = KeyBatch::from_array(batch.column(k).as_ref())?;
            // Checked against the table's runs when the group's run is
            // built, all of its keys at once (`index::check_batches`).
            if shared.check_keys.get(shard as usize) == Some(&true) {
                kb.order_by_hash();
            }
            Some(kb)
        }
        None => None,
    };
    Ok(Out {
        shard,
        batch: crate::batch::dict::encode_batch_where(batch, encode)?,
        stats,
        keys,
        rows,
    })
}

/// Reader: cut every input into blocks. Returns (files, bytes).
fn split_all(
    shared: &Shared<'_>,
    blocks: SyncSender<Block>,
    tokens: Receiver<()>,
) -> Result<(u64, u64)> {
    let mut seq = 0u64;
    let mut bytes = 0u64;
    let mut stored = 0u64;
    let mut pack = Pack::default();
    let started = Instant::now();
    let every = shared.opts.commit_every;
    let mut files = 0u64;
    for (i, input) in shared.inputs.iter().enumerate() {
        if shared.stopping() {
            return Err(Error::Cancelled);
        }
        bytes += split_file(shared, i, input, &blocks, &tokens, &mut seq, &mut pack)?;
        files += 1;
        if let Some(p) = &shared.opts.progress {
            p.files_done.fetch_add(1, Ordering::Relaxed);
        }
        // The group ends after a file that reaches a limit, or when the
        // caller asks to stop: the files read so far are committed.
        stored += shared
            .read
            .lock()
            .ok()
            .and_then(|r| r.last().map(|f| f.size))
            .unwrap_or(0);
        let full = every.bytes.is_some_and(|b| stored >= b)
            || every.files.is_some_and(|f| files >= f)
            || every
                .seconds
                .is_some_and(|s| started.elapsed().as_secs() >= s)
            || shared
                .opts
                .stop
                .as_ref()
                .is_some_and(|s| s.load(Ordering::Relaxed));
        if full {
            break;
        }
    }
    pack.send(shared, &blocks, &tokens, &mut seq)?;
    Ok((files, bytes))
}

/// Reads into `buf` until it holds `want` bytes or the input ends.
/// Returns true at end of input.
fn fill(r: &mut dyn Read, buf: &mut Buf, want: usize, name: &Input) -> Result<bool> {
    if buf.len >= want {
        return Ok(false);
    }
    if buf.bytes.len() < want {
        buf.bytes.resize(want, 0);
    }
    while buf.len < want {
        match r.read(&mut buf.bytes[buf.len..want]) {
            Ok(0) => return Ok(true),
            Ok(n) => buf.len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(match name {
                    Input::File(p) => Error::io(p, e),
                    Input::Stdin => Error::io("<stdin>", e),
                });
            }
        }
    }
    Ok(false)
}

/// How far before the end of a full buffer the search for a record end
/// starts: the bytes after the cut are copied into the next buffer, so this
/// bounds that copy (it was 1/8 of every block, ~3 % of a load's CPU).
const CUT_SEARCH: usize = 64 << 10;

fn split_file(
    shared: &Shared<'_>,
    file: usize,
    input: &Input,
    blocks: &SyncSender<Block>,
    tokens: &Receiver<()>,
    seq: &mut u64,
    pack: &mut Pack,
) -> Result<u64> {
    let opts = shared.opts;
    let name = input.display_name();
    let bs = shared.block_size;
    // Progress counts the bytes of the file (compressed or not); the
    // summary counts the text parsed.
    // The bytes as stored feed the journal's checksum (and progress).
    let seen = Arc::new(Mutex::new((crc32fast::Hasher::new(), 0u64)));
    let on_read: crate::source::OnRead = {
        let seen = seen.clone();
        let progress = opts.progress.clone();
        Box::new(move |b: &[u8]| {
            if let Some(p) = &progress {
                p.bytes_read.fetch_add(b.len() as u64, Ordering::Relaxed);
            }
            if let Ok(mut s) = seen.lock() {
                s.0.update(b);
                s.1 += b.len() as u64;
            }
        })
    };
    let mtime_ns = match input {
        Input::File(p) => std::fs::metadata(p).map(|m| mtime_ns(&m)).unwrap_or(0),
        Input::Stdin => 0,
    };
    let record = |unreadable: Option<Box<str>>, empty: bool| {
        let (crc32, size) = seen
            .lock()
            .map(|s| (s.0.clone().finalize(), s.1))
            .unwrap_or_default();
        if let Ok(mut r) = shared.read.lock() {
            r.push(FileRead {
                size,
                mtime_ns,
                crc32,
                unreadable,
                empty,
            });
        }
    };
    // With --on-error skip, a file that cannot be opened is skipped and
    // reported; otherwise it fails the load.
    let skip_bad = opts.on_error == OnError::Skip;
    let (mut reader, _compression, line_end) =
        match input.open_lines(Some(on_read), opts.encoding, opts.line_end) {
            Ok(r) => r,
            Err(e) if skip_bad => {
                record(Some(e.to_string().into()), false);
                return Ok(0);
            }
            Err(e) => return Err(e),
        };
    let mut buf = shared.take_buf();
    let mut eof = fill(&mut reader, &mut buf, bs, input)?;
    // An empty file (an export of no rows, a placeholder) is 0 rows, and
    // the summary names it.
    if buf.is_empty() {
        shared.give_buf(buf);
        record(None, true);
        return Ok(0);
    }
    check_text(&name, buf.data())?;
    let mut offset = 0u64;
    let mut line = 0u64;
    let mut total = buf.len as u64;
    // Grows `buf` by one block; errors when a record exceeds the line limit.
    let mut grow = |buf: &mut Buf, eof: &mut bool| -> Result<()> {
        let before = buf.len;
        *eof = fill(&mut reader, buf, before + bs, input)?;
        total += (buf.len - before) as u64;
        Ok(())
    };
    let too_long = |line: u64, offset: u64| Error::Parse {
        path: name.clone(),
        line: line + 1,
        byte: offset,
        column: None,
        message: crate::parse::too_long_message(opts.max_line_size),
    };

    for _ in 0..opts.skip {
        loop {
            if let Some(i) = memchr::memchr(b'\n', buf.data()) {
                buf.consume(i + 1);
                offset += i as u64 + 1;
                line += 1;
                break;
            }
            offset += buf.len as u64;
            buf.len = 0;
            if eof {
                break;
            }
            grow(&mut buf, &mut eof)?;
        }
    }

    // JSON: the reader drops an array's brackets and reads a header row.
    let json_format = match opts.format {
        Format::Json(j) => Some(j),
        Format::Delimited => None,
    };
    let json_start = match json_format {
        Some(j) => Some(json_header(
            shared,
            j,
            &name,
            &mut buf,
            &mut eof,
            &mut offset,
            &mut line,
            &mut grow,
            &too_long,
        )?),
        None => None,
    };
    let json_shape = json_start.as_ref().map_or(JsonShape::Lines, |s| s.shape);
    let json_array = json_shape == JsonShape::Array;
    let in_object = json_start.as_ref().is_some_and(|s| s.in_object);
    let json_map = json_start.and_then(|s| s.map);
    let mapped = (opts.columns.is_some() || opts.match_by_name) && json_format.is_none();
    // With names to map, the header is required.
    let names_needed = opts.match_by_name
        || opts
            .columns
            .as_ref()
            .is_some_and(|c| c.iter().any(|r| matches!(r, ColumnRef::Name(_))));
    let header_mode = if names_needed && opts.header == Header::Auto {
        Header::Yes
    } else {
        opts.header
    };
    let mut header_fields: Option<Vec<Vec<u8>>> = None;
    let comment = opts.dialect.comment.or(opts.leading_comment);
    if let (None, Some(c)) = (json_format, opts.leading_comment) {
        // Notes above the header or the data.
        loop {
            let Some((pre, pre_lines)) = preamble(buf.data(), Some(c), eof) else {
                if buf.len <= opts.max_line_size {
                    grow(&mut buf, &mut eof)?;
                    continue;
                }
                return Err(too_long(line, offset));
            };
            buf.consume(pre);
            offset += pre as u64;
            line += pre_lines;
            break;
        }
    }
    if header_mode != Header::No && json_format.is_none() {
        loop {
            // Blank and comment lines before the header are skipped, as
            // inference skips them.
            let Some((pre, pre_lines)) = preamble(buf.data(), comment, eof) else {
                if buf.len <= opts.max_line_size {
                    grow(&mut buf, &mut eof)?;
                    continue;
                }
                return Err(too_long(line, offset));
            };
            if pre == buf.len {
                if header_mode == Header::Yes {
                    buf.consume(pre);
                    offset += pre as u64;
                    line += pre_lines;
                }
                break;
            }
            match read_record(&buf.data()[pre..], &opts.dialect, eof) {
                Ok(Some((mut fields, used, newlines))) => {
                    let cols = &shared.schema.columns;
                    if !mapped {
                        pad_short_header(&mut fields, cols);
                    }
                    let names_match = if mapped {
                        // The fields the mapping reads are the names of
                        // the columns they feed.
                        field_map(shared, &name, Some(&fields)).is_ok_and(|m| {
                            m.targets.iter().enumerate().all(|(i, t)| {
                                t.is_none_or(|c| {
                                    fields.get(i).is_some_and(|f| {
                                        normalize_name(f).eq_ignore_ascii_case(&cols[c].name)
                                    })
                                })
                            })
                        })
                    } else {
                        fields.len() == cols.len()
                            && (fields
                                .iter()
                                .zip(cols)
                                .all(|(f, c)| header_names(f, &c.name))
                                || crate::infer::named_by(&fields, cols))
                    };
                    if header_mode == Header::Yes && !mapped && fields.len() != cols.len() {
                        return Err(Error::Parse {
                            path: name,
                            line: line + pre_lines + 1,
                            byte: offset + pre as u64,
                            column: None,
                            message: format!(
                                "the header has {} fields, the table has {} columns",
                                fields.len(),
                                cols.len()
                            ),
                        });
                    }
                    if header_mode == Header::Yes || names_match {
                        buf.consume(pre + used);
                        offset += (pre + used) as u64;
                        line += pre_lines + newlines;
                        header_fields = Some(fields);
                    }
                    break;
                }
                Ok(None) if buf.len <= opts.max_line_size => grow(&mut buf, &mut eof)?,
                Ok(None) => return Err(too_long(line, offset)),
                // A malformed first record: the data parse reports it.
                Err(_) if header_mode == Header::Auto => break,
                Err(e) => {
                    return Err(Error::Parse {
                        path: name,
                        line: line + pre_lines + 1 + e.line_in_block,
                        byte: offset + (pre + e.offset) as u64,
                        column: None,
                        message: format!("in the header: {}", e.message),
                    });
                }
            }
        }
    }

    let map = if let Some(m) = json_map {
        Some(Arc::new(m))
    } else if mapped {
        Some(Arc::new(field_map(shared, &name, header_fields.as_ref())?))
    } else {
        None
    };
    let mut first_line = Some(line);
    let mut closed = !json_array;
    // `buf[..open]` holds no record end: the record that starts the
    // buffer is still open through it (0: nothing known).
    let mut open = 0usize;
    // Lines before the buffer, for the message about a record too long,
    // are counted as blocks go only for a stream, which cannot be read
    // again; a file's are counted from its start on that error path
    // (counting every block's lines took 5.5 % of a load's CPU time).
    let stream = !matches!(input, Input::File(_));
    // A record longer than --max-line-size, starting at `start` of `buf`.
    let too_long_at = |buf: &Buf, start: usize, line: u64, offset: u64| {
        let at = offset + start as u64;
        if !stream && let Ok(before) = lines_before(input, opts, line_end, at) {
            return too_long(before, at);
        }
        let before = memchr::memchr_iter(b'\n', &buf.data()[..start]).count() as u64;
        too_long(line + before, at)
    };
    loop {
        if !eof && buf.len < bs {
            grow(&mut buf, &mut eof)?;
        }
        if eof && !closed {
            closed = true;
            close_json_array(shared, &mut buf, first_line.is_none(), in_object).map_err(
                |message| Error::Input {
                    path: name.clone(),
                    message,
                },
            )?;
        }
        let cut = if eof {
            if buf.is_empty() {
                break;
            }
            // The last record ends with the input: only a buffer longer
            // than the limit can hold one too long.
            if buf.len > opts.max_line_size {
                let start = last_cut(opts, json_shape, buf.data(), open, buf.len - 1).unwrap_or(0);
                if buf.len - start > opts.max_line_size {
                    return Err(too_long_at(&buf, start, line, offset));
                }
            }
            buf.len
        } else {
            let target = (buf.len - (buf.len / 8).clamp(1, CUT_SEARCH)).max(open);
            match find_cut(opts, json_shape, buf.data(), target) {
                Some(c) => {
                    open = 0;
                    c
                }
                None => {
                    // No record ends after `target`: the one open there
                    // starts at the last record end before it. What
                    // precedes it goes as a block, so that the buffer
                    // holds the long record alone (memory: a block and
                    // the limit), and it fails once it passes the limit.
                    let start = last_cut(opts, json_shape, buf.data(), open, target).unwrap_or(0);
                    if buf.len - start > opts.max_line_size {
                        return Err(too_long_at(&buf, start, line, offset));
                    }
                    if start == 0 {
                        open = buf.len;
                        grow(&mut buf, &mut eof)?;
                        continue;
                    }
                    open = buf.len - start;
                    start
                }
            }
        };
        let part = Part {
            file,
            offset,
            first_line: first_line.take(),
            start: 0,
            end: cut,
            map: map.clone(),
            json: json_shape,
        };
        // A whole small file joins the pack; anything else goes alone,
        // after the pack (blocks leave in input order).
        if eof && cut == buf.len && part.first_line.is_some() && cut <= bs / 8 {
            if pack.len() + cut > PACK_BYTES.min(bs) {
                pack.send(shared, blocks, tokens, seq)?;
            }
            pack.add(shared, buf.data(), part);
            buf.len = 0;
            break;
        }
        pack.send(shared, blocks, tokens, seq)?;
        let mut tail = shared.take_buf();
        tail.set(&buf.data()[cut..]);
        buf.len = cut;
        let data = std::mem::replace(&mut buf, tail);
        let len = data.len as u64;
        if stream {
            line += memchr::memchr_iter(b'\n', data.data()).count() as u64;
        }
        send_block(shared, blocks, tokens, seq, data, vec![part])?;
        offset += len;
    }
    shared.give_buf(buf);
    record(None, false);
    Ok(total)
}

/// The newlines in the first `at` bytes of a file as the load reads it
/// (decoded, line ends as `line_end`): the line of the record at `at`,
/// less one. Only on an error path: it reads the file again.
fn lines_before(
    input: &Input,
    opts: &LoadOptions,
    line_end: crate::source::LineEnd,
    at: u64,
) -> Result<u64> {
    let (mut r, _, _) = input.open_lines(None, opts.encoding, line_end)?;
    let mut chunk = vec![0u8; 1 << 16];
    let (mut left, mut lines) = (at, 0u64);
    while left > 0 {
        let want = chunk.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let k = r.read(&mut chunk[..want]).map_err(|e| input.io_error(e))?;
        if k == 0 {
            break;
        }
        lines += memchr::memchr_iter(b'\n', &chunk[..k]).count() as u64;
        left -= k as u64;
    }
    Ok(lines)
}

/// The last record boundary `c` with `from < c <= to` in `data`, by input
/// format (`json`: the file's layout): the start of the record open at
/// `to` (`None`: none ends there).
fn last_cut(
    opts: &LoadOptions,
    json: JsonShape,
    data: &[u8],
    from: usize,
    to: usize,
) -> Option<usize> {
    match (opts.format, json) {
        (Format::Delimited, _) => crate::split::last_boundary(data, from, to, &opts.dialect),
        (Format::Json(_), JsonShape::Lines) => {
            let to = to.min(data.len());
            memchr::memrchr(b'\n', data.get(from..to)?).map(|i| from + i + 1)
        }
        (Format::Json(_), JsonShape::Array) => {
            crate::parse::json::last_array_boundary(data, from, to)
        }
        (Format::Json(_), JsonShape::Values) => {
            crate::parse::json::last_values_boundary(data, from, to)
        }
    }
}

/// The bytes and lines of the blank lines and the lines starting with
/// `comment` at the start of `data` (what may come before a header);
/// `None` when `data` ends inside them and more input may follow.
fn preamble(data: &[u8], comment: Option<u8>, eof: bool) -> Option<(usize, u64)> {
    let (mut at, mut lines) = (0, 0);
    loop {
        let rest = &data[at..];
        match rest {
            [] => return eof.then_some((at, lines)),
            [b'\r'] if !eof => return None,
            [b'\n', ..] | [b'\r', b'\n', ..] => {}
            [c, ..] if Some(*c) == comment => {}
            _ => return Some((at, lines)),
        }
        match memchr::memchr(b'\n', rest) {
            Some(i) => {
                at += i + 1;
                lines += 1;
            }
            None => return eof.then_some((data.len(), lines)),
        }
    }
}

/// The first record boundary after `target` in `data`, by input format
/// (`json`: the file's layout).
fn find_cut(opts: &LoadOptions, json: JsonShape, data: &[u8], target: usize) -> Option<usize> {
    match (opts.format, json) {
        (Format::Delimited, _) => find_boundary(data, target, &opts.dialect),
        (Format::Json(_), JsonShape::Lines) => crate::parse::json::find_line_boundary(data, target),
        (Format::Json(_), JsonShape::Array) => {
            crate::parse::json::find_array_boundary(data, target)
        }
        (Format::Json(_), JsonShape::Values) => {
            crate::parse::json::find_values_boundary(data, target)
        }
    }
}

/// Sends one block (waiting for a token: a bound on blocks in flight).
fn send_block(
    shared: &Shared<'_>,
    blocks: &SyncSender<Block>,
    tokens: &Receiver<()>,
    seq: &mut u64,
    data: Buf,
    parts: Vec<Part>,
) -> Result<()> {
    if tokens.recv().is_err() || shared.stopping() {
        return Err(Error::Cancelled);
    }
    let block = Block {
        seq: *seq,
        data,
        parts,
    };
    *seq += 1;
    blocks.send(block).map_err(|_| Error::Cancelled)
}

/// A pack of small files is sent once it holds this much: large enough
/// that a hand-off carries many files, small enough that the packs of a
/// pile of small files still spread over every worker.
const PACK_BYTES: usize = 256 << 10;

/// Small files gathered into one block.
#[derive(Default)]
struct Pack {
    data: Option<Buf>,
    parts: Vec<Part>,
}

impl Pack {
    fn len(&self) -> usize {
        self.data.as_ref().map_or(0, |d| d.len)
    }

    /// Appends a whole file's data (`part` describes it).
    fn add(&mut self, shared: &Shared<'_>, bytes: &[u8], mut part: Part) {
        let data = self.data.get_or_insert_with(|| shared.take_buf());
        if data.bytes.len() < data.len + bytes.len() {
            data.bytes.resize((data.len + bytes.len()).max(64 << 10), 0);
        }
        data.bytes[data.len..data.len + bytes.len()].copy_from_slice(bytes);
        part.start = data.len;
        part.end = data.len + bytes.len();
        data.len += bytes.len();
        self.parts.push(part);
    }

    fn send(
        &mut self,
        shared: &Shared<'_>,
        blocks: &SyncSender<Block>,
        tokens: &Receiver<()>,
        seq: &mut u64,
    ) -> Result<()> {
        if self.parts.is_empty() {
            return Ok(());
        }
        let data = self.data.take().unwrap_or_default();
        let parts = std::mem::take(&mut self.parts);
        send_block(shared, blocks, tokens, seq, data, parts)
    }
}

/// The rejects file: CSV with a header, one line per rejected record.
struct RejectsFile {
    path: PathBuf,
    out: std::io::BufWriter<std::fs::File>,
}

impl RejectsFile {
    /// Creates the file, or with `append` (a resumed load) adds to it
    /// when it exists.
    fn create(path: &Path, append: bool) -> Result<Self> {
        let exists = append && path.exists();
        let f = if exists {
            std::fs::OpenOptions::new().append(true).open(path)
        } else {
            std::fs::File::create(path)
        }
        .map_err(|e| Error::io(path, e))?;
        let mut r = RejectsFile {
            path: path.to_path_buf(),
            out: std::io::BufWriter::new(f),
        };
        if !exists {
            r.write_all(b"file,line,byte,column,reason,record\n")
                .map_err(|e| Error::io(path, e))?;
        }
        Ok(r)
    }

    fn flush(&mut self) -> Result<()> {
        self.out.flush().map_err(|e| Error::io(&self.path, e))
    }

    /// A row for a whole file that could not be read (line 0).
    fn unreadable(&mut self, file: &str, why: &str) -> Result<()> {
        let mut row = Vec::new();
        csv_field(&mut row, file.as_bytes());
        row.extend_from_slice(b",0,0,,");
        csv_field(&mut row, format!("unreadable file: {why}").as_bytes());
        row.extend_from_slice(b",\n");
        self.write_all(&row).map_err(|e| Error::io(&self.path, e))
    }

    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.out.write_all(b)
    }

    fn finish(mut self) -> Result<()> {
        self.out.flush().map_err(|e| Error::io(&self.path, e))
    }
}

/// Appends `v` as a CSV field, quoted when it needs to be.
fn csv_field(out: &mut Vec<u8>, v: &[u8]) {
    if v.iter().any(|&b| matches!(b, b',' | b'"' | b'\n' | b'\r')) || v.first() == Some(&b' ') {
        out.push(b'"');
        for &b in v {
            if b == b'"' {
                out.push(b'"');
            }
            out.push(b);
        }
        out.push(b'"');
    } else {
        out.extend_from_slice(v);
    }
}

/// Where the rows of one part of a block came from.
#[derive(Clone)]
struct Provenance {
    /// Row of the load (0 = its first) of the part's first row.
    row: u64,
    file: usize,
    /// Lines of the file before the part.
    line: u64,
    /// One record per line (record i is line `line + i + 1`).
    exact: bool,
    /// Records of the part that were rejected (`--on-error skip`), in
    /// order, counted from the part's first record: row ids skip them.
    rejected: Vec<u32>,
}

/// The keys of one shard in a keyed load.
struct Keys {
    /// Row id of the load's first row in the shard (the shard's rows
    /// before it).
    base_row: RowId,
    /// Sorted keys of the batches written, with their first row's id.
    batches: Vec<(RowId, KeyBatch)>,
    /// Memory `batches` holds.
    bytes: usize,
    /// The shard's runs before the load (the workers check keys against
    /// them; the writer too, with `OnDuplicate::Skip`).
    table_runs: Vec<Arc<crate::index::Run>>,
    /// Runs this load wrote before (when its keys outgrew the budget):
    /// later runs are checked against them.
    load_runs: Vec<Arc<crate::index::Run>>,
    /// Runs this load wrote.
    runs: Vec<RunMeta>,
    /// With `OnDuplicate::Skip`: the keys of this load kept so far.
    seen: std::collections::HashSet<Box<[u8]>>,
    /// Sharded tables, for messages: per batch written, (its first row in
    /// the shard, counted from `base_row`; its first row in the load; the
    /// load row of each of its rows after the first, relative to that).
    origin: Vec<(u64, u64, Arc<Vec<u32>>)>,
}

impl Keys {
    fn lookup_older(&self, key: &[u8]) -> Result<Option<RowId>> {
        let h = crate::index::key_hash(key);
        for r in self.table_runs.iter().chain(&self.load_runs) {
            if let Some(id) = r.get_hashed(key, h)? {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    /// The load row of row `local` of the shard (counted from
    /// `base_row`).
    fn load_row(&self, local: u64) -> u64 {
        let i = self.origin.partition_point(|o| o.0 <= local);
        match i.checked_sub(1).map(|i| &self.origin[i]) {
            Some((first, load_first, rows)) => {
                let off = (local - first) as usize;
                load_first + rows.get(off).copied().unwrap_or(off as u32) as u64
            }
            None => local,
        }
    }
}

/// A row of the table described for a message: its values.
fn describe_existing(db: &Database, table: &str, id: RowId) -> Option<String> {
    let t = db.keyed(table).ok()?;
    let row = t.row(id).ok()?;
    let values: Vec<String> = row
        .columns()
        .iter()
        .map(|a| crate::batch::format_value(a.as_ref(), 0).unwrap_or_else(|| "NULL".into()))
        .collect();
    Some(format!("a row loaded earlier ({})", values.join(", ")))
}

/// A run to build from a shard's gathered keys.
struct KeyJob {
    name: String,
    path: PathBuf,
    batches: Vec<(RowId, KeyBatch)>,
    /// The shard's runs before the load, to check the keys against (none
    /// with `OnDuplicate::Skip`, which looked each key up as it came).
    table: Vec<Arc<crate::index::Run>>,
    /// This load's earlier runs of the shard (a key there is a duplicate).
    older: Vec<Arc<crate::index::Run>>,
}

/// What the writer keeps per shard: the segment being written, the
/// segments and runs written, and the shard's keys.
struct ShardOut {
    shard: u32,
    rel_dir: String,
    abs_dir: PathBuf,
    current: Option<SegmentWriter>,
    done: Vec<crate::store::SegmentMeta>,
    /// Columns stored plain for the rest of this load (see `write_batch`).
    plain: Vec<bool>,
    /// Small batches waiting to be written as one (see `handle`).
    pending: Vec<(RecordBatch, Vec<ColumnStats>)>,
    pending_rows: usize,
    pending_bytes: usize,
    /// Rows this load wrote to the shard.
    rows: u64,
    keys: Keys,
}

/// Writer: puts batches in input order into segment files, each into the
/// segments of its shard.
struct Writer<'a> {
    shared: &'a Shared<'a>,
    arrow_schema: arrow_schema::SchemaRef,
    /// The table's directory (the load journal goes there).
    rel_dir: String,
    abs_dir: PathBuf,
    version: u64,
    /// Compute workers (the key index is merged with as many threads).
    workers: usize,
    compression: Compression,
    outs: Vec<ShardOut>,
    /// Round-robin tables: rows of the table before this load (the next
    /// row goes to shard `(before + rows) % shards`).
    rows_before: u64,
    /// Records rejected so far, and where they are written.
    rejected: u64,
    rejects: Option<RejectsFile>,
    /// Per input file: rows parsed, records rejected.
    file_rows: Vec<(u64, u64)>,
    created: Vec<PathBuf>,
    rows: u64,
    /// Lines before the next block of `file`.
    line: u64,
    file: usize,
    /// Bytes of sorted keys (all shards) held before runs are written.
    key_budget: usize,
    provenance: Vec<Provenance>,
    duplicates: u64,
    /// The row of the table a duplicate key repeats, when it was loaded
    /// before this load (a row id of the lookup API).
    conflict_existing: Option<RowId>,
    /// The table's runs before the load, in manifest order.
    table_runs: Vec<RunMeta>,
    /// The thread opening those not open yet ([`open_runs`]).
    opening: Option<OpeningRuns>,
    /// The value behind a failure, when it is one its column's type does
    /// not take.
    contradiction: Option<Contradiction>,
}

impl Writer<'_> {
    fn run(&mut self, done: Receiver<Done>, tokens: SyncSender<()>) -> Result<()> {
        let mut pending = BTreeMap::new();
        let mut next = 0u64;
        for d in done {
            pending.insert(d.seq, d);
            while let Some(d) = pending.remove(&next) {
                self.handle(d)?;
                next += 1;
                let _ = tokens.send(());
            }
        }
        if !pending.is_empty() {
            return Err(Error::Internal(format!(
                "{} blocks never arrived in order",
                pending.len()
            )));
        }
        Ok(())
    }

    /// Moves the line count to the start of `part`.
    fn enter(&mut self, part: &Part) {
        if part.file != self.file {
            self.file = part.file;
            self.line = 0;
        }
        if let Some(l) = part.first_line {
            self.line = l;
        }
    }

    fn handle(&mut self, d: Done) -> Result<()> {
        let Some(result) = d.result else {
            return Err(Error::Cancelled);
        };
        let (outs, infos) = match result {
            Ok(r) => r,
            Err(Failed::Other(e)) => return Err(e),
            Err(Failed::Part(k, e)) => {
                let part = d
                    .parts
                    .get(k)
                    .ok_or_else(|| Error::Internal("error in a part that does not exist".into()))?;
                self.enter(part);
                let column = e
                    .column
                    .map(|c| format!("{} ({})", c + 1, self.shared.schema.columns[c].name));
                if let (Some(c), Some(value)) = (e.column, e.value) {
                    self.contradiction = Some(Contradiction {
                        file: part.file,
                        column: c,
                        value,
                    });
                }
                return Err(Error::Parse {
                    path: self.shared.inputs[part.file].display_name(),
                    line: self.line + e.line_in_block + 1,
                    byte: part.offset + e.offset as u64,
                    column,
                    message: e.message,
                });
            }
        };
        let keyed = self.shared.key_col.is_some();
        let mut row = self.rows;
        // Where this batch's rows came from (for messages about keys).
        let mut here: Vec<Provenance> = Vec::new();
        // The part's first record among the block's records.
        let mut first_record = 0u32;
        for (part, (info, rejects, exact)) in d.parts.iter().zip(infos) {
            self.enter(part);
            let rejected: Vec<u32> = if keyed {
                rejects.iter().map(|r| r.row - first_record).collect()
            } else {
                Vec::new()
            };
            first_record += (info.rows + rejects.len() as u64) as u32;
            if let Some(f) = self.file_rows.get_mut(part.file) {
                f.0 += info.rows;
                f.1 += rejects.len() as u64;
            }
            for r in rejects {
                self.reject(part.file, part.offset, r)?;
            }
            if keyed && info.rows > 0 {
                here.push(Provenance {
                    row,
                    file: part.file,
                    line: self.line,
                    exact,
                    rejected,
                });
            }
            row += info.rows;
            self.line += info.newlines;
        }
        // Kept for the whole load to name both rows of a duplicate found
        // at the end (row ids shift when skipping, which needs none).
        if self.shared.opts.on_duplicate == OnDuplicate::Error {
            self.provenance.extend(here.iter().cloned());
        }
        let round_robin = self.shared.route == Route::RoundRobin;
        let count = self.outs.len() as u64;
        let batch_first = self.rows;
        let mut written = 0u64;
        for out in outs {
            let shard = if round_robin {
                ((self.rows_before + batch_first + out.shard as u64) % count) as usize
            } else {
                out.shard as usize
            };
            written += self.put(shard, out, batch_first, &here)?;
        }
        self.rows += written;
        if let Some(p) = &self.shared.opts.progress {
            p.rows.fetch_add(written, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Writes one shard's part of a block (whose first row is row
    /// `batch_first` of the load); returns the rows written.
    fn put(&mut self, s: usize, out: Out, batch_first: u64, here: &[Provenance]) -> Result<u64> {
        let Out {
            batch,
            stats,
            keys,
            rows,
            ..
        } = out;
        if batch.num_rows() == 0 {
            return Ok(0);
        }
        // The load row of row `r` of this part.
        let load_row = |r: u32| batch_first + rows.get(r as usize).copied().unwrap_or(r) as u64;
        let (batch, stats) = match keys {
            None => (batch, stats),
            Some(kb) => {
                if let Some(r) = kb.null_row {
                    return Err(Error::Input {
                        path: self.describe_in(here, load_row(r)),
                        message: format!(
                            "the key column {} is NULL (a primary key needs a value in every row)",
                            self.key_name()
                        ),
                    });
                }
                let (batch, stats, kb, rows) = match self.shared.opts.on_duplicate {
                    OnDuplicate::Error => (batch, stats, kb, rows),
                    OnDuplicate::Skip => self.skip_duplicates(s, batch, stats, kb, rows)?,
                };
                if batch.num_rows() == 0 {
                    return Ok(0);
                }
                let o = &mut self.outs[s];
                let first = o.keys.base_row + o.rows;
                if !rows.is_empty() && self.shared.opts.on_duplicate == OnDuplicate::Error {
                    o.keys.origin.push((o.rows, batch_first, Arc::new(rows)));
                }
                o.keys.bytes += kb.heap_bytes();
                o.keys.batches.push((first, kb));
                let held: usize = self.outs.iter().map(|o| o.keys.bytes).sum();
                if held > self.key_budget {
                    for i in 0..self.outs.len() {
                        self.flush_keys(i)?;
                    }
                }
                (batch, stats)
            }
        };
        let n = batch.num_rows();
        let o = &mut self.outs[s];
        o.rows += n as u64;
        // Small batches (small files, small blocks) are gathered and
        // written as one: a segment of 100,000 one-line batches would be
        // mostly per-batch metadata, and every batch a morsel.
        if n < SMALL_BATCH_ROWS {
            o.pending_rows += n;
            o.pending_bytes += batch.get_array_memory_size();
            o.pending.push((batch, stats));
            // Bounded in rows, and in memory: each tiny batch costs a few
            // KiB of buffers however few rows it holds.
            if o.pending_rows >= COALESCE_ROWS || o.pending_bytes >= COALESCE_BYTES {
                self.flush_pending(s)?;
            }
            return Ok(n as u64);
        }
        self.flush_pending(s)?;
        self.write_batch(s, &batch, &stats)?;
        Ok(n as u64)
    }

    fn key_name(&self) -> &str {
        self.shared
            .key_col
            .map(|k| self.shared.schema.columns[k].name.as_str())
            .unwrap_or("")
    }

    /// Where row `row` of this load came from: `file:line`, or the file
    /// and the line its block starts at when records and lines do not
    /// match one to one.
    fn describe_row(&self, row: u64) -> String {
        self.describe_in(&self.provenance, row)
    }

    fn describe_in(&self, p: &[Provenance], row: u64) -> String {
        let i = p.partition_point(|x| x.row <= row);
        let Some(x) = i.checked_sub(1).map(|i| &p[i]) else {
            return format!("row {} of this load", row + 1);
        };
        let name = self.shared.inputs[x.file].display_name();
        // Row ids count accepted records; rejected ones sit between them.
        let mut record = row - x.row;
        for &r in &x.rejected {
            if u64::from(r) <= record {
                record += 1;
            }
        }
        if x.exact {
            format!("{name}:{}", x.line + record + 1)
        } else {
            format!("{name} (record {} after line {})", record + 1, x.line)
        }
    }

    /// Drops the rows whose key is already in the shard, in this load, or
    /// earlier in the batch; returns the batch, its stats and keys, and
    /// the block rows of the rows kept.
    fn skip_duplicates(
        &mut self,
        s: usize,
        batch: RecordBatch,
        stats: Vec<ColumnStats>,
        kb: KeyBatch,
        rows: Vec<u32>,
    ) -> Result<(RecordBatch, Vec<ColumnStats>, KeyBatch, Vec<u32>)> {
        self.table_runs_ready()?;
        let n = batch.num_rows();
        let mut keep = vec![true; n];
        let mut dropped = 0usize;
        let mut prev: Option<&[u8]> = None;
        let keys = &mut self.outs[s].keys;
        for i in 0..kb.len() {
            let r = kb.sorted_row(i);
            let key = kb.sorted_key(i);
            let dup =
                prev == Some(key) || keys.seen.contains(key) || keys.lookup_older(key)?.is_some();
            if dup {
                keep[r as usize] = false;
                dropped += 1;
            } else {
                prev = Some(key);
            }
        }
        for i in 0..kb.len() {
            if keep[kb.sorted_row(i) as usize] {
                keys.seen.insert(kb.sorted_key(i).into());
            }
        }
        if dropped == 0 {
            return Ok((batch, stats, kb, rows));
        }
        self.duplicates += dropped as u64;
        let rows = if rows.is_empty() {
            rows
        } else {
            rows.iter()
                .zip(&keep)
                .filter(|(_, k)| **k)
                .map(|(r, _)| *r)
                .collect()
        };
        let mask = arrow_array::BooleanArray::from(keep);
        let plain = crate::batch::dict::decode_batch(&batch, &[])?;
        let kept = arrow_select::filter::filter_record_batch(&plain, &mask)?;
        let stats = kept
            .columns()
            .iter()
            .map(|a| crate::batch::column_stats(a.as_ref()))
            .collect();
        let k = self.shared.key_col.unwrap_or(0);
        let kb = KeyBatch::from_array(kept.column(k).as_ref())?;
        Ok((crate::batch::dict::encode_batch(kept)?, stats, kb, rows))
    }

    /// Writes the keys shard `s` gathered so far as a run, checked against
    /// the shard's runs and this load's earlier ones.
    fn flush_keys(&mut self, s: usize) -> Result<()> {
        self.table_runs_ready()?;
        let Some(job) = self.key_job(s) else {
            return Ok(());
        };
        let built = crate::index::build_run(
            &job.path,
            &job.batches,
            &job.table,
            &job.older,
            self.workers,
        );
        self.keys_built(s, job, built)
    }

    /// Waits for the table's runs to be open ([`open_runs`]) and hands
    /// them to their shards.
    fn table_runs_ready(&mut self) -> Result<()> {
        let Some((mut known, handle)) = self.opening.take() else {
            return Ok(());
        };
        let opened = handle.join().unwrap_or_else(|_| {
            Err(Error::Internal(
                "the thread opening the key index panicked".into(),
            ))
        })?;
        let mut opened = opened.into_iter();
        for (meta, k) in self.table_runs.iter().zip(&mut known) {
            let run = match k.take() {
                Some(r) => r,
                None => opened
                    .next()
                    .ok_or_else(|| Error::Internal("a run was not opened".into()))?,
            };
            self.outs[meta.shard as usize].keys.table_runs.push(run);
        }
        Ok(())
    }

    /// The table's runs this load opened, to keep in the database handle.
    fn opened_runs(&self) -> Vec<(RunMeta, Arc<crate::index::Run>)> {
        let mut next = vec![0usize; self.outs.len()];
        self.table_runs
            .iter()
            .filter_map(|m| {
                let i = &mut next[m.shard as usize];
                let r = self.outs[m.shard as usize].keys.table_runs.get(*i)?;
                *i += 1;
                Some((m.clone(), r.clone()))
            })
            .collect()
    }

    /// Takes shard `s`'s gathered keys for a run (none: `None`).
    fn key_job(&mut self, s: usize) -> Option<KeyJob> {
        let o = &mut self.outs[s];
        if o.keys.batches.is_empty() {
            return None;
        }
        let name = format!("{:06}-{:05}.keys", self.version, o.keys.runs.len());
        let path = o.abs_dir.join(&name);
        self.created.push(path.clone());
        o.keys.bytes = 0;
        Some(KeyJob {
            name,
            path,
            batches: std::mem::take(&mut o.keys.batches),
            table: match self.shared.opts.on_duplicate {
                OnDuplicate::Error => o.keys.table_runs.clone(),
                OnDuplicate::Skip => Vec::new(),
            },
            older: o.keys.load_runs.clone(),
        })
    }

    /// Records the run built for shard `s`, or reports its duplicate.
    fn keys_built(&mut self, s: usize, job: KeyJob, built: Result<Built>) -> Result<()> {
        let KeyJob { name, path, .. } = job;
        let o = &mut self.outs[s];
        match built? {
            Built::Run { entries, bytes } => {
                o.keys.runs.push(RunMeta {
                    file: format!("{}/{name}", o.rel_dir),
                    entries,
                    bytes,
                    shard: o.shard,
                });
                // Keys written to a run are found there from now on: the
                // set of this load's keys (skip mode) starts again empty.
                o.keys.seen.clear();
                // Later runs of this load are checked against this one.
                o.keys
                    .load_runs
                    .push(Arc::new(crate::index::Run::open(&path)?));
                Ok(())
            }
            Built::Duplicate(c) => {
                let key_type = self
                    .shared
                    .key_col
                    .map(|k| self.shared.schema.columns[k].data_type)
                    .unwrap_or(crate::batch::DataType::Text);
                let o = &self.outs[s];
                let base = o.keys.base_row;
                let first = if c.first < base {
                    self.conflict_existing = Some(crate::store::keyed::tag_row(o.shard, c.first));
                    format!("row {} already in the table", c.first)
                } else {
                    self.describe_row(o.keys.load_row(c.first - base))
                };
                Err(Error::DuplicateKey {
                    table: self.shared.table.to_string(),
                    key: crate::index::display_key(key_type, &c.key),
                    first,
                    second: self.describe_row(o.keys.load_row(c.second - base)),
                })
            }
        }
    }

    /// Writes shard `s`'s gathered small batches as one batch.
    fn flush_pending(&mut self, s: usize) -> Result<()> {
        let o = &mut self.outs[s];
        let pending = std::mem::take(&mut o.pending);
        o.pending_rows = 0;
        o.pending_bytes = 0;
        match pending.len() {
            0 => Ok(()),
            1 => self.write_batch(s, &pending[0].0, &pending[0].1),
            _ => {
                let mut stats = pending[0].1.clone();
                for (_, st) in &pending[1..] {
                    for (a, b) in stats.iter_mut().zip(st) {
                        a.merge(b);
                    }
                }
                // Batches may differ in which TEXT columns they encoded.
                let plain = pending
                    .iter()
                    .map(|(b, _)| crate::batch::dict::decode_batch(b, &[]))
                    .collect::<Result<Vec<_>>>()?;
                let merged = arrow_select::concat::concat_batches(&self.arrow_schema, &plain)?;
                let merged = crate::batch::dict::encode_batch(merged)?;
                self.write_batch(s, &merged, &stats)
            }
        }
    }

    /// Appends a batch to shard `s`'s current segment (opening one if
    /// needed).
    fn write_batch(&mut self, s: usize, batch: &RecordBatch, stats: &[ColumnStats]) -> Result<()> {
        // A column that outgrows its segment dictionary closes the
        // segment and stays plain for the rest of the load; the batch is
        // written again into the next segment.
        loop {
            let o = &mut self.outs[s];
            if o.current.is_none() {
                let name = format!("{:06}-{:05}.arrow", self.version, o.done.len());
                let path = o.abs_dir.join(&name);
                self.created.push(path.clone());
                o.current = Some(SegmentWriter::create(
                    path,
                    format!("{}/{name}", o.rel_dir),
                    &self.arrow_schema,
                    self.compression,
                )?);
            }
            let seg = o
                .current
                .as_mut()
                .ok_or_else(|| Error::Internal("no segment".into()))?;
            match seg.write(batch, stats, &o.plain)? {
                None => {
                    if seg.bytes() >= SEGMENT_TARGET_BYTES {
                        self.close_segment(s)?;
                    }
                    return Ok(());
                }
                Some(c) if !o.plain[c] => {
                    o.plain[c] = true;
                    self.close_segment(s)?;
                }
                Some(_) => return Err(Error::Internal("a plain column was encoded".into())),
            }
        }
    }

    /// Counts a rejected record, writes it to the rejects file, and fails
    /// the load past `--max-errors`.
    fn reject(&mut self, file: usize, offset: u64, r: Reject) -> Result<()> {
        self.rejected += 1;
        let over_max = self
            .shared
            .opts
            .max_errors
            .is_some_and(|max| self.rejected > max);
        if self.rejects.is_none() && !over_max {
            // Only counted: nothing to name (a million rejects format
            // nothing).
            return Ok(());
        }
        let path = self.shared.inputs[file].display_name();
        let line = self.line + r.error.line_in_block + 1;
        let byte = offset + r.error.offset as u64;
        let column = r
            .error
            .column
            .map(|c| format!("{} ({})", c + 1, self.shared.schema.columns[c].name));
        if let Some(w) = self.rejects.as_mut() {
            let mut row = Vec::with_capacity(r.record.len() + 64);
            csv_field(&mut row, path.as_bytes());
            row.push(b',');
            row.extend_from_slice(line.to_string().as_bytes());
            row.push(b',');
            row.extend_from_slice(byte.to_string().as_bytes());
            row.push(b',');
            csv_field(&mut row, column.as_deref().unwrap_or("").as_bytes());
            row.push(b',');
            csv_field(&mut row, r.error.message.as_bytes());
            row.push(b',');
            csv_field(&mut row, &r.record);
            row.push(b'\n');
            w.write_all(&row).map_err(|e| Error::io(&w.path, e))?;
        }
        if let Some(max) = self.shared.opts.max_errors
            && self.rejected > max
        {
            return Err(Error::Parse {
                path,
                line,
                byte,
                column,
                message: format!(
                    "more than --max-errors {max} records rejected; this one: {}",
                    r.error.message
                ),
            });
        }
        Ok(())
    }

    /// Closes shard `s`'s current segment.
    fn close_segment(&mut self, s: usize) -> Result<()> {
        self.flush_pending(s)?;
        let o = &mut self.outs[s];
        if let Some(seg) = o.current.take() {
            let mut meta = seg.finish()?;
            meta.shard = o.shard;
            o.done.push(meta);
        }
        Ok(())
    }

    /// Closes every shard's segment and, for a keyed table, writes the
    /// keys left as runs: the shards in parallel (each finish ends with an
    /// fsync; N shards would otherwise wait for N in a row).
    fn finish(&mut self) -> Result<()> {
        let n = self.outs.len();
        if n == 1 {
            if self.shared.key_col.is_none() {
                return self.close_segment(0);
            }
            self.flush_pending(0)?;
            let seg = self.outs[0].current.take();
            // The segment's footer and fsync go on beside the key work
            // (the check, the merge, the run's own fsync), as the shards'
            // do below: on a disk the CPU work hides under the flush.
            let (meta, keys) = std::thread::scope(|sc| {
                let closing = seg.map(|w| sc.spawn(move || w.finish()));
                let keys = self.flush_keys(0);
                let meta = closing.map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::Internal(
                            "the thread closing a segment panicked".into(),
                        ))
                    })
                });
                (meta, keys)
            });
            if let Some(m) = meta {
                let mut m = m?;
                m.shard = self.outs[0].shard;
                self.outs[0].done.push(m);
            }
            return keys;
        }
        for s in 0..n {
            self.flush_pending(s)?;
        }
        self.table_runs_ready()?;
        let mut jobs: Vec<(Option<SegmentWriter>, Option<KeyJob>)> = Vec::with_capacity(n);
        for s in 0..n {
            let seg = self.outs[s].current.take();
            let keys = if self.shared.key_col.is_some() {
                self.key_job(s)
            } else {
                None
            };
            jobs.push((seg, keys));
        }
        let threads = (self.workers / n).max(1);
        type Finished = (
            Option<Result<crate::store::SegmentMeta>>,
            Option<Result<Built>>,
        );
        let results: Vec<Finished> = std::thread::scope(|sc| {
            let handles: Vec<_> = jobs
                .iter_mut()
                .map(|(seg, keys)| {
                    let seg = seg.take();
                    let keys = keys.as_ref();
                    sc.spawn(move || {
                        let meta = seg.map(|w| w.finish());
                        let built = keys.map(|j| {
                            crate::index::build_run(
                                &j.path, &j.batches, &j.table, &j.older, threads,
                            )
                        });
                        (meta, built)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        (
                            Some(Err(Error::Internal(
                                "a shard's finishing thread panicked".into(),
                            ))),
                            None,
                        )
                    })
                })
                .collect()
        });
        for (s, ((meta, built), (_, job))) in results.into_iter().zip(jobs).enumerate() {
            if let Some(m) = meta {
                let mut m = m?;
                m.shard = self.outs[s].shard;
                self.outs[s].done.push(m);
            }
            if let (Some(b), Some(job)) = (built, job) {
                self.keys_built(s, job, b)?;
            }
        }
        Ok(())
    }

    /// Writes the load journal of the first `files` inputs (the files of
    /// this commit) next to the segments; returns its manifest entry.
    /// Streamed: a commit may hold 100,000 files.
    fn journal(&mut self, files: usize) -> Result<Option<LoadMeta>> {
        let read = self
            .shared
            .read
            .lock()
            .map_err(|_| Error::Internal("the reader's record is poisoned".into()))?;
        let n = read
            .iter()
            .zip(self.shared.inputs)
            .take(files)
            .filter(|(f, i)| f.unreadable.is_none() && is_regular(i))
            .count();
        if n == 0 {
            return Ok(None);
        }
        let name = format!("{:06}.load", self.version);
        let path = self.abs_dir.join(&name);
        self.created.push(path.clone());
        let committed_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let mut paths = JournalPaths::default();
        let mut w = LoadJournal::writer(&path, self.version, committed_at)?;
        for (i, f) in read.iter().enumerate().take(files) {
            // Streams cannot be read again the same way: not journaled.
            if f.unreadable.is_some() || !is_regular(&self.shared.inputs[i]) {
                continue;
            }
            let (rows, rejected) = self.file_rows.get(i).copied().unwrap_or_default();
            w.add(&LoadedFile {
                path: paths.of(&self.shared.inputs[i]),
                size: f.size,
                mtime_ns: f.mtime_ns,
                crc32: f.crc32,
                rows,
                rejected,
            })?;
        }
        let (bytes, crc32) = w.finish()?;
        Ok(Some(LoadMeta {
            file: format!("{}/{name}", self.rel_dir),
            files: n as u64,
            rows: self.rows,
            bytes,
            crc32,
        }))
    }

    /// Deletes the files of a load that will not be committed.
    fn discard(&mut self) {
        for o in &mut self.outs {
            o.current = None;
        }
        for p in self.created.iter().rev() {
            if p.is_symlink() || p.is_file() {
                let _ = std::fs::remove_file(p);
            } else {
                // Shard directories this load made: removed when empty.
                let _ = std::fs::remove_dir(p);
            }
        }
        // Succeeds only when empty, that is when this load created it.
        let _ = std::fs::remove_dir(&self.abs_dir);
    }
}
