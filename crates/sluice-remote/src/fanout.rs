//! A commit group's batches fanned out to connection threads: the part
//! both server sinks share.
//!
//! Useful for: how a sink hands the pipeline's batches (in input order,
//! from one thread) to `N` connections, each taking the next batch when it
//! is free from one bounded queue, and how their results come back: the
//! finished parts, or the first error in row order, named `file:line`.
//! Not useful for: what a connection does with its batches (`pg`, `my`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use arrow_array::RecordBatch;
use sluice::load::sink::{Provenance, Rows, describe_row};
use sluice::source::Input;
use sluice::{Error, Result};

/// Batches waiting for a free connection, per connection.
const QUEUE_PER_CONNECTION: usize = 2;

/// What the connections take: the group's row number of a batch's first
/// row, and the batch.
pub(crate) type Job = (u64, RecordBatch);

/// The queue a connection thread takes its batches from, until it closes.
pub(crate) type Queue = Arc<Mutex<Receiver<Job>>>;

/// The next batch of the queue; `None` once the group's batches are all
/// taken.
pub(crate) fn next(queue: &Mutex<Receiver<Job>>) -> std::result::Result<Option<Job>, Error> {
    match queue.lock() {
        Ok(rx) => Ok(rx.recv().ok()),
        Err(_) => Err(Error::Internal("the load queue is poisoned".into())),
    }
}

/// Why a connection's share of a group failed.
pub(crate) struct PartFailure {
    pub(crate) error: Error,
    /// The group's row the server named, when it named one.
    pub(crate) row: Option<u64>,
}

impl PartFailure {
    pub(crate) fn new(error: Error, row: Option<u64>) -> Box<PartFailure> {
        Box::new(PartFailure { error, row })
    }
}

/// A connection's result: its part, ready to commit, or why it failed
/// (its connection closed, which rolls its transaction back).
pub(crate) type PartResult<P> = std::result::Result<P, Box<PartFailure>>;

/// Maps a row the server named in one connection's stream (0-based) to
/// the group's row: `map` holds, per batch the connection sent, its first
/// row in the stream and in the group.
pub(crate) fn group_row(map: &[(u64, u64)], stream_row: u64) -> Option<u64> {
    let i = map
        .partition_point(|(s, _)| *s <= stream_row)
        .checked_sub(1)?;
    Some(map[i].1 + (stream_row - map[i].0))
}

/// The connections of one group.
pub(crate) struct Fanout<P> {
    tx: Option<SyncSender<Job>>,
    workers: Vec<JoinHandle<PartResult<P>>>,
    failed: Arc<AtomicBool>,
}

impl<P: Send + 'static> Fanout<P> {
    /// Starts `n` threads named `name-i`, each running `part(i, queue)`.
    pub(crate) fn start<F>(n: usize, name: &str, part: F) -> Result<Fanout<P>>
    where
        F: Fn(usize, Queue) -> PartResult<P> + Send + Sync + 'static,
    {
        let (tx, rx) = sync_channel::<Job>(n * QUEUE_PER_CONNECTION);
        let rx = Arc::new(Mutex::new(rx));
        let failed = Arc::new(AtomicBool::new(false));
        let part = Arc::new(part);
        let mut workers = Vec::with_capacity(n);
        for i in 0..n {
            let (rx, failed, part) = (rx.clone(), failed.clone(), part.clone());
            let w = std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || {
                    let r = part(i, rx);
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    r
                })
                .map_err(|e| Error::Internal(format!("cannot start a thread: {e}")))?;
            workers.push(w);
        }
        Ok(Fanout {
            tx: Some(tx),
            workers,
            failed,
        })
    }

    /// Queues a block's batches; `false` when a connection failed (then
    /// [`Fanout::join`] says why).
    pub(crate) fn send(&self, rows: Rows<'_>) -> (bool, u64) {
        let mut n = 0;
        let mut first = rows.first_row;
        for p in rows.pieces {
            let len = p.batch.num_rows() as u64;
            if len == 0 {
                continue;
            }
            let sent = self.tx.as_ref().map(|tx| tx.send((first, p.batch)));
            if self.failed.load(Ordering::Relaxed) || !matches!(sent, Some(Ok(()))) {
                return (false, n);
            }
            first += len;
            n += len;
        }
        (true, n)
    }

    /// Tells the connections to stop taking batches (a failure elsewhere).
    pub(crate) fn stop(&self) {
        self.failed.store(true, Ordering::Relaxed);
    }

    /// Closes the queue and waits for every connection: their parts, or
    /// the earliest error in row order (the others are dropped, which
    /// closes their connections), with the row named as `file:line` by
    /// `provenance`.
    pub(crate) fn join(mut self, provenance: &[Provenance], inputs: &[Input]) -> Result<Vec<P>> {
        drop(self.tx.take());
        let mut parts = Vec::new();
        let mut failures = Vec::new();
        for w in self.workers.drain(..) {
            match w.join() {
                Ok(Ok(p)) => parts.push(p),
                Ok(Err(f)) => failures.push(*f),
                Err(_) => failures.push(PartFailure {
                    error: Error::Internal("a connection's thread panicked".into()),
                    row: None,
                }),
            }
        }
        if failures.is_empty() {
            return Ok(parts);
        }
        drop(parts);
        // A connection that lost its stream because another failed says
        // less than the one whose row the server named.
        failures.sort_by_key(|f| f.row.unwrap_or(u64::MAX));
        let first = failures.swap_remove(0);
        Err(match first.row {
            Some(row) => first.error.context(describe_row(provenance, inputs, row)),
            None => first.error,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_rows_map_to_group_rows_through_the_batches_taken() {
        // This connection took group rows 100..110 and 300..305.
        let map = [(0, 100), (10, 300)];
        assert_eq!(group_row(&map, 0), Some(100));
        assert_eq!(group_row(&map, 9), Some(109));
        assert_eq!(group_row(&map, 10), Some(300));
        assert_eq!(group_row(&map, 14), Some(304));
        assert_eq!(group_row(&[], 3), None);
    }
}
