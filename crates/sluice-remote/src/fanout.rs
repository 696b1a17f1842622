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

/// What the connections take: a batch, and the group's rows it holds.
pub(crate) struct Job {
    pub(crate) batch: RecordBatch,
    rows: RowIds,
}

/// The group's rows of a batch: consecutive from a row, or (a piece of a
/// block cut by key) the block's first row plus each row's place in the
/// block.
#[derive(Clone)]
enum RowIds {
    From(u64),
    At(u64, Arc<Vec<u32>>),
}

/// What a connection sent, for naming the row a server's error names:
/// per batch, its first row in the connection's stream and its rows.
#[derive(Default, Clone)]
pub(crate) struct Stream {
    batches: Vec<(u64, RowIds)>,
    /// Rows sent.
    pub(crate) sent: u64,
}

impl Stream {
    /// Notes a batch about to be sent.
    pub(crate) fn push(&mut self, job: &Job) {
        self.batches.push((self.sent, job.rows.clone()));
        self.sent += job.batch.num_rows() as u64;
    }

    /// The group's row of the stream's row `stream_row` (0-based).
    pub(crate) fn group_row(&self, stream_row: u64) -> Option<u64> {
        let i = self
            .batches
            .partition_point(|(s, _)| *s <= stream_row)
            .checked_sub(1)?;
        let (start, rows) = &self.batches[i];
        let k = stream_row - start;
        Some(match rows {
            RowIds::From(first) => first + k,
            RowIds::At(first, at) => first + u64::from(*at.get(k as usize)?),
        })
    }
}

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
    /// `row` is the first of a statement's rows, not the failing one.
    pub(crate) from: bool,
}

impl PartFailure {
    pub(crate) fn new(error: Error, row: Option<u64>) -> Box<PartFailure> {
        Box::new(PartFailure {
            error,
            row,
            from: false,
        })
    }

    /// A failure of a statement of many rows, the first of them `row`.
    pub(crate) fn of_rows_from(error: Error, row: u64) -> Box<PartFailure> {
        Box::new(PartFailure {
            error,
            row: Some(row),
            from: true,
        })
    }
}

/// A connection's result: its part, ready to commit, or why it failed
/// (its connection closed, which rolls its transaction back).
pub(crate) type PartResult<P> = std::result::Result<P, Box<PartFailure>>;

/// The connections of one group.
pub(crate) struct Fanout<P> {
    /// One queue for all (any free connection takes the next batch), or
    /// one a connection (`routed`: a piece goes to the connection of its
    /// shard).
    tx: Vec<SyncSender<Job>>,
    workers: Vec<JoinHandle<PartResult<P>>>,
    failed: Arc<AtomicBool>,
}

impl<P: Send + 'static> Fanout<P> {
    /// Starts `n` threads named `name-i`, each running `part(i, queue)`.
    /// `routed`: each connection has its queue, and a block's piece goes
    /// to the connection its shard names (rows with equal keys to the
    /// same connection, so that two transactions never wait on each
    /// other's uncommitted key).
    pub(crate) fn start<F>(n: usize, name: &str, routed: bool, part: F) -> Result<Fanout<P>>
    where
        F: Fn(usize, Queue) -> PartResult<P> + Send + Sync + 'static,
    {
        let (mut tx, mut rxs) = (Vec::new(), Vec::new());
        if routed {
            for _ in 0..n {
                let (t, r) = sync_channel::<Job>(QUEUE_PER_CONNECTION);
                tx.push(t);
                rxs.push(Arc::new(Mutex::new(r)));
            }
        } else {
            let (t, r) = sync_channel::<Job>(n * QUEUE_PER_CONNECTION);
            tx.push(t);
            rxs.push(Arc::new(Mutex::new(r)));
        }
        let failed = Arc::new(AtomicBool::new(false));
        let part = Arc::new(part);
        let mut workers = Vec::with_capacity(n);
        for i in 0..n {
            let rx = rxs[i % rxs.len()].clone();
            let (failed, part) = (failed.clone(), part.clone());
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
            tx,
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
            let ids = if p.rows.is_empty() {
                RowIds::From(first)
            } else {
                RowIds::At(rows.first_row, Arc::new(p.rows))
            };
            first += len;
            let queue = &self.tx[p.shard as usize % self.tx.len()];
            let sent = queue.send(Job {
                batch: p.batch,
                rows: ids,
            });
            if self.failed.load(Ordering::Relaxed) || sent.is_err() {
                return (false, n);
            }
            n += len;
        }
        (true, n)
    }

    /// Closes the queues (a failure elsewhere, or Ctrl-C): the
    /// connections finish with what they took, and [`Fanout::join`]
    /// collects them to be rolled back.
    pub(crate) fn stop(&mut self) {
        self.failed.store(true, Ordering::Relaxed);
        self.tx.clear();
    }

    /// Closes the queue and waits for every connection: their parts, or
    /// the earliest error in row order (the others are dropped, which
    /// closes their connections), with the row named as `file:line` by
    /// `provenance`.
    pub(crate) fn join(mut self, provenance: &[Provenance], inputs: &[Input]) -> Result<Vec<P>> {
        self.tx.clear();
        let mut parts = Vec::new();
        let mut failures = Vec::new();
        for w in self.workers.drain(..) {
            match w.join() {
                Ok(Ok(p)) => parts.push(p),
                Ok(Err(f)) => failures.push(*f),
                Err(_) => failures.push(*PartFailure::new(
                    Error::Internal("a connection's thread panicked".into()),
                    None,
                )),
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
            Some(row) if first.from => first.error.context(format!(
                "a statement of rows from {}",
                describe_row(provenance, inputs, row)
            )),
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
        let batch = |n: i32| {
            RecordBatch::try_from_iter(vec![(
                "a",
                Arc::new(arrow_array::Int32Array::from((0..n).collect::<Vec<_>>()))
                    as arrow_array::ArrayRef,
            )])
            .unwrap()
        };
        // Group rows 100..110, then a piece of a block starting at row 300
        // holding the block's rows 1, 4 and 7.
        let mut s = Stream::default();
        s.push(&Job {
            batch: batch(10),
            rows: RowIds::From(100),
        });
        s.push(&Job {
            batch: batch(3),
            rows: RowIds::At(300, Arc::new(vec![1, 4, 7])),
        });
        assert_eq!(s.sent, 13);
        assert_eq!(s.group_row(0), Some(100));
        assert_eq!(s.group_row(9), Some(109));
        assert_eq!(s.group_row(10), Some(301));
        assert_eq!(s.group_row(12), Some(307));
        assert_eq!(Stream::default().group_row(3), None);
    }
}
