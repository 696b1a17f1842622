//! What a load reports: live progress counters and the summary.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use super::Widening;

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
    pub(super) fn counts(&self) -> [u64; 3] {
        [&self.bytes_read, &self.rows, &self.files_done].map(|c| c.load(Ordering::Relaxed))
    }

    /// Sets the counters back to `counts` (a group read again).
    pub(super) fn restore(&self, counts: [u64; 3]) {
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
    /// Files of a bucketed dataset (`sluice convert --buckets N`) loaded
    /// into the shard of their bucket whole, their rows not re-hashed.
    pub files_by_bucket: u64,
    /// CPU seconds by stage (see [`crate::stages`]), for a load into a
    /// table; empty elsewhere.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<crate::stages::StageTime>,
}

impl LoadSummary {
    pub fn mb_per_s(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.seconds.max(1e-9)
    }

    pub fn rows_per_s(&self) -> f64 {
        self.rows as f64 / self.seconds.max(1e-9)
    }
}

impl LoadSummary {
    /// The summary of a load that has committed nothing yet.
    pub(super) fn empty(table: &str, threads: usize) -> Self {
        LoadSummary {
            table: table.to_string(),
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
            threads,
            block_size: 0,
            commits: 0,
            already_loaded: 0,
            listed_twice: 0,
            unreadable: Vec::new(),
            empty_files: Vec::new(),
            files_left: 0,
            widened: Vec::new(),
            files_by_bucket: 0,
            stages: Vec::new(),
        }
    }

    /// Adds a committed group's summary.
    pub(super) fn add_group(&mut self, g: LoadSummary) {
        self.created |= g.created;
        self.rows += g.rows;
        self.rejected += g.rejected;
        self.bytes += g.bytes;
        self.files += g.files;
        self.segments += g.segments;
        self.duplicates += g.duplicates;
        self.runs_merged += g.runs_merged;
        if g.merge_error.is_some() {
            self.merge_error = g.merge_error;
        }
        self.threads = g.threads;
        self.block_size = g.block_size;
        self.commits += g.commits;
        self.unreadable.extend(g.unreadable);
        self.empty_files.extend(g.empty_files);
        self.files_by_bucket += g.files_by_bucket;
    }
}
