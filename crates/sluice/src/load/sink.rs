//! The end of the load pipeline: where the parsed rows go.
//!
//! Useful for: a new destination of a load (the table store, Parquet
//! files, a database server, a Python caller) that reuses everything
//! before it: reading, decompression, cutting blocks, parsing on every
//! core, rejects, line numbers in messages, commit groups.
//! Not useful for: changing what a row is (that is `parse`, `batch`), or
//! how files are read (`reader`).
//!
//! # The contract
//!
//! A load is a sequence of **groups** of whole input files (see
//! [`CommitEvery`](super::CommitEvery)). For each group the pipeline calls,
//! from one thread:
//!
//! 1. [`Sink::begin`] with the group's options and inputs (the group is a
//!    prefix of them; how many files it held is known at commit). The sink
//!    answers with its [`Layout`]: the columns the rows must have, how to
//!    cut them into shards, and whether keys and provenance are wanted.
//! 2. [`Sink::write`] once per block, **in input order**: [`Rows`] holds
//!    the block's rows cut by shard ([`Piece`]s, Arrow batches; TEXT
//!    columns that repeat arrive dictionary-encoded), the number of the
//!    block's first row in the group, and where its rows came from
//!    ([`Provenance`]: file and line, for messages). It returns how many
//!    rows it kept (a sink may drop rows, e.g. duplicate keys).
//! 3. [`Sink::finish`] when every block of the group was written and the
//!    load was not cancelled: everything the commit will publish is
//!    written (files closed, indexes built). A check over the whole group
//!    (key uniqueness) fails here.
//! 4. [`Sink::commit`] publishes the group, atomically: before it returns
//!    `Ok`, nothing of the group may be visible to a reader of the
//!    destination; after, all of it is. It is told the group's input files
//!    (sizes, checksums, rows) so that it can record them for a resumed
//!    load. A failed commit leaves nothing of the group visible, except
//!    when the destination published it and only its durability failed
//!    (the error says so).
//!
//! After any error in 2 or 3, or a cancelled load, the pipeline calls
//! [`Sink::abort`]: it must remove everything of the group, leaving the
//! destination as its last commit left it. Groups committed before stay.
//!
//! Errors a sink returns about rows name them with [`describe_row`]
//! (`file:line`); errors about the input itself (a malformed record, a
//! value its column does not take) never reach the sink: the pipeline
//! reports them with file, line, byte and column.

use arrow_array::RecordBatch;

use crate::batch::{ColumnStats, Schema};
use crate::error::Result;
use crate::index::KeyBatch;
use crate::source::Input;

use super::LoadOptions;

/// The end of a load: see the [module documentation](self).
pub trait Sink<'a> {
    /// A group starts: its options and inputs (the group reads a prefix
    /// of `inputs`). Returns how the rows must be shaped for this sink.
    fn begin(&mut self, opts: &LoadOptions, inputs: &'a [Input]) -> Result<Layout>;
    /// The rows of one block, in input order; returns the rows kept.
    fn write(&mut self, rows: Rows<'_>) -> Result<u64>;
    /// Every block of the group has been written.
    fn finish(&mut self) -> Result<()>;
    /// Publishes the group.
    fn commit(&mut self, group: &GroupFiles<'_>) -> Result<Committed>;
    /// Removes everything the group wrote.
    fn abort(&mut self);
}

/// How the workers shape rows for a sink.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The columns of every batch.
    pub schema: Schema,
    /// Pieces a block's rows are cut into (1: not sharded).
    pub shards: u32,
    pub route: Route,
    /// A column whose values the workers extract and sort as keys
    /// ([`Piece::keys`]).
    pub key: Option<usize>,
    /// Per shard: order the keys by hash (for a check against key-index
    /// runs, [`crate::index::check_batches`]).
    pub check_keys: Vec<bool>,
    /// Whether [`Rows::provenance`] is wanted (it costs a little per file).
    pub provenance: bool,
    /// With `key`: each piece's rows put in key order by the workers
    /// (then [`Piece::rows`] names each row's row in the block, and the
    /// piece's keys are in the order of its rows), for a sink that sends
    /// rows in key order: its merge then reads each piece front to back.
    pub sort_rows: bool,
}

impl Layout {
    /// One piece a block, no keys, no provenance: the rows as they come.
    pub fn plain(schema: Schema) -> Self {
        Layout {
            schema,
            shards: 1,
            route: Route::One,
            key: None,
            check_keys: vec![false],
            provenance: false,
            sort_rows: false,
        }
    }
}

/// How a load's rows reach their shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// One shard.
    One,
    /// By the hash of this column's value.
    Hash(usize),
    /// Dealt in input order.
    RoundRobin,
}

/// The rows of one block.
pub struct Rows<'r> {
    /// Cut by shard (one piece when not sharded).
    pub pieces: Vec<Piece>,
    /// The group's row number of the block's first row (rows kept by the
    /// sink before it).
    pub first_row: u64,
    /// Where the rows came from, a part a file (only when
    /// [`Layout::provenance`]).
    pub provenance: &'r [Provenance],
}

/// One shard's rows of a parsed block.
pub struct Piece {
    /// The shard; for round-robin routing the slice (see
    /// [`crate::partition::deal`]) that the sink turns into a shard.
    pub shard: u32,
    pub batch: RecordBatch,
    pub stats: Vec<ColumnStats>,
    /// Its keys, sorted (when the layout has a key column).
    pub keys: Option<KeyBatch>,
    /// Each row's row in the block (empty: the block's rows, in order).
    pub rows: Vec<u32>,
}

/// Where the rows of one part of a block came from.
#[derive(Debug, Clone)]
pub struct Provenance {
    /// Row of the group (0 = its first) of the part's first row.
    pub row: u64,
    /// The file, as an index into the group's inputs.
    pub file: usize,
    /// Lines of the file before the part.
    pub line: u64,
    /// One record per line (record i is line `line + i + 1`).
    pub exact: bool,
    /// Records of the part that were rejected (`--on-error skip`), in
    /// order, counted from the part's first record: row numbers skip them.
    pub rejected: Vec<u32>,
}

/// Where row `row` of a group came from, for a message: `file:line`, or
/// the file and the line its block starts at when records and lines do
/// not match one to one. `p` is the provenance of the rows written so far,
/// in order.
pub fn describe_row(p: &[Provenance], inputs: &[Input], row: u64) -> String {
    let i = p.partition_point(|x| x.row <= row);
    let Some(x) = i.checked_sub(1).map(|i| &p[i]) else {
        return format!("row {} of this load", row + 1);
    };
    let name = inputs[x.file].display_name();
    let record = record_of(x, row);
    if x.exact {
        format!("{name}:{}", x.line + record + 1)
    } else {
        format!("{name} (record {} after line {})", record + 1, x.line)
    }
}

/// The file and 1-based line of row `row` (see [`describe_row`]): where
/// records and lines do not match one to one, the line after which its
/// part starts.
pub fn locate(p: &[Provenance], inputs: &[Input], row: u64) -> (String, u64) {
    let i = p.partition_point(|x| x.row <= row);
    let Some(x) = i.checked_sub(1).map(|i| &p[i]) else {
        return (String::new(), 0);
    };
    let line = if x.exact {
        x.line + record_of(x, row) + 1
    } else {
        x.line + 1
    };
    (inputs[x.file].display_name(), line)
}

/// The record of part `x` that holds row `row`: row ids count accepted
/// records; rejected ones sit between them.
fn record_of(x: &Provenance, row: u64) -> u64 {
    let mut record = row - x.row;
    for &r in &x.rejected {
        if u64::from(r) <= record {
            record += 1;
        }
    }
    record
}

/// What a commit is told of its group.
pub struct GroupFiles<'g> {
    /// The group's input files, in order (the first `files.len()` of the
    /// inputs `begin` was given).
    pub files: &'g [FileRecord],
    /// Rows the sink kept.
    pub rows: u64,
}

/// An input file of a group as the pipeline read it (small: a load may
/// read 100,000).
#[derive(Debug, Clone, Default)]
pub struct FileRecord {
    /// Bytes read (as stored, compressed or not).
    pub size: u64,
    pub mtime_ns: u64,
    /// CRC-32 of those bytes.
    pub crc32: u32,
    /// Why it was skipped (`OnError::Skip`), if it could not be read.
    pub unreadable: Option<Box<str>>,
    /// It holds no text: 0 rows.
    pub empty: bool,
    /// Rows parsed from it, and records rejected.
    pub rows: u64,
    pub rejected: u64,
}

/// What a commit did, for the summary.
#[derive(Debug, Clone, Default)]
pub struct Committed {
    /// The commit created the destination (a new table).
    pub created: bool,
    /// Files written (segments).
    pub segments: u64,
    /// Rows dropped as duplicate keys.
    pub duplicates: u64,
    /// Key-index runs merged after the commit.
    pub runs_merged: usize,
    /// Why that merge failed, if it did (the commit stands).
    pub merge_error: Option<String>,
}
