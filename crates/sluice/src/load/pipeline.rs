//! One commit group through the pipeline: the threads and what they share.
//!
//! ```text
//!  reader thread            compute workers (= usable cores)     writer (this thread)
//!  read blocks of a file ─► parse block → Arrow batch + stats ─► reorder by block
//!  cut at record ends       → cut by shard, keys sorted          number, rejects,
//!  one file at a time       (any block, any file)                lines ─► the Sink
//!        ▲                                                            │
//!        └────────────── tokens: at most `in_flight` blocks ──────────┘
//! ```
//!
//! Useful for: how the stages are wired (channels, tokens, stop flags),
//! and what happens between the last block and the commit.
//! Not useful for: what a stage does (`reader`, `workers`, `writer`), or
//! where rows end up (`sink`, `table`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::batch::{Schema, ValueOptions};
use crate::error::{Error, Result};
use crate::exec::worker_count;
use crate::source::Input;

use super::plan::is_regular;
use super::reader::{Block, Buf, block_size_for, in_flight, split_all};
use super::rejects::RejectsFile;
use super::sink::{FileRecord, GroupFiles, Route, Sink};
use super::widen::Contradiction;
use super::workers::{Done, work};
use super::writer::Writer;
use super::{LoadOptions, LoadSummary};

/// Shared by the pipeline's threads.
pub(super) struct Shared<'a> {
    pub(super) opts: &'a LoadOptions,
    /// The column whose values are keys (the table's PRIMARY KEY).
    pub(super) key_col: Option<usize>,
    /// Per shard: whether its keys will be checked against runs of the
    /// table ([`crate::index::check_batches`]), so that the workers order
    /// each batch's keys by hash for it.
    pub(super) check_keys: Vec<bool>,
    /// See [`super::sink::Layout::sort_rows`].
    pub(super) sort_rows: bool,
    pub(super) route: Route,
    pub(super) shards: u32,
    /// The sink names rows by where they came from.
    pub(super) provenance: bool,
    pub(super) schema: &'a Schema,
    pub(super) values: Arc<ValueOptions>,
    pub(super) inputs: &'a [Input],
    pub(super) block_size: usize,
    /// Parse workers.
    pub(super) workers: usize,
    /// Lowest block number that failed to parse (`u64::MAX`: none).
    pub(super) first_error: AtomicU64,
    /// Stop everything (writer failed, or the caller cancelled).
    pub(super) stop: AtomicBool,
    pub(super) pool: Mutex<Vec<Buf>>,
    /// Per input file read so far, in order: what the commit records.
    pub(super) read: Mutex<Vec<FileRecord>>,
}

impl Shared<'_> {
    pub(super) fn stopping(&self) -> bool {
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
    pub(super) fn take_buf(&self) -> Buf {
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

    pub(super) fn give_buf(&self, b: Buf) {
        if let Ok(mut p) = self.pool.lock() {
            p.push(b);
        }
    }
}

/// Loads the first files of `inputs` as one commit of `sink`: until a
/// limit of `opts.commit_every` or `opts.stop` ends the group after a
/// file. `summary.files` says how many were consumed. Rejected records
/// go to `rejects` (numbered on from `rejected_before`); when a value
/// its column's type does not take fails the group, `contradiction` says
/// which (see `widen`).
pub(super) fn run_group<'a>(
    sink: &mut dyn Sink<'a>,
    table: &str,
    inputs: &'a [Input],
    opts: &LoadOptions,
    rejects: &mut Option<RejectsFile>,
    rejected_before: u64,
    contradiction: &mut Option<Contradiction>,
) -> Result<LoadSummary> {
    let start = Instant::now();
    let layout = sink.begin(opts, inputs)?;
    let workers = worker_count(opts.threads);
    let block_size = opts
        .block_size
        .unwrap_or_else(|| block_size_for(opts.memory_limit, workers))
        .max(1);
    let shared = Shared {
        opts,
        key_col: layout.key,
        check_keys: layout.check_keys.clone(),
        sort_rows: layout.sort_rows,
        route: layout.route,
        shards: layout.shards,
        provenance: layout.provenance,
        schema: &layout.schema,
        values: Arc::new(opts.values.clone()),
        inputs,
        block_size,
        workers,
        first_error: AtomicU64::new(u64::MAX),
        stop: AtomicBool::new(false),
        pool: Mutex::new(Vec::new()),
        read: Mutex::new(Vec::new()),
    };
    let mut writer = Writer::new(&shared, sink, rejects.take(), rejected_before);
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
        crate::stages::time(crate::stages::Stage::Encode, || writer.sink.finish())?;
        Ok(files)
    });
    // The rejects file is kept also when the load fails: it shows why.
    *rejects = writer.rejects.take();
    let result = result.and_then(|files| {
        if let Some(r) = rejects.as_mut() {
            r.flush()?;
        }
        Ok(files)
    });
    let (files, bytes) = match result {
        Ok(files) => files,
        Err(e) => {
            *contradiction = writer.contradiction.take();
            writer.sink.abort();
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
    if stopped && inputs[..files as usize].iter().any(|i| !is_regular(i)) {
        writer.sink.abort();
        return Err(Error::Cancelled);
    }
    let Ok(mut read) = shared.read.lock() else {
        writer.sink.abort();
        return Err(Error::Internal("the reader's record is poisoned".into()));
    };
    for (f, (rows, rejected)) in read.iter_mut().zip(&writer.file_rows) {
        f.rows = *rows;
        f.rejected = *rejected;
    }
    let read = &read[..(files as usize).min(read.len())];
    let committed = crate::stages::time(crate::stages::Stage::Commit, || {
        writer.sink.commit(&GroupFiles {
            files: read,
            rows: writer.rows,
        })
    })?;
    Ok(LoadSummary {
        table: table.to_string(),
        created: committed.created,
        rows: writer.rows,
        rejected: writer.rejected - rejected_before,
        bytes,
        files,
        segments: committed.segments,
        duplicates: committed.duplicates,
        runs_merged: committed.runs_merged,
        merge_error: committed.merge_error,
        seconds: start.elapsed().as_secs_f64(),
        threads: workers,
        block_size,
        commits: 1,
        already_loaded: 0,
        listed_twice: 0,
        unreadable: read
            .iter()
            .zip(inputs)
            .filter_map(|(f, i)| {
                let why = f.unreadable.as_ref()?;
                Some((i.display_name(), why.to_string()))
            })
            .collect(),
        empty_files: read
            .iter()
            .zip(inputs)
            .filter(|(f, _)| f.empty)
            .map(|(_, i)| i.display_name())
            .collect(),
        files_left: 0,
        widened: Vec::new(),
        files_by_bucket: 0,
        stages: Vec::new(),
    })
}
