//! A commit group's batches fanned out to connection threads: the part
//! both server sinks share.
//!
//! Useful for: how a sink hands the pipeline's batches (in input order,
//! from one thread) to `N` connections, each taking the next batch when it
//! is free from one bounded queue, and how their results come back: the
//! finished parts, or the first error in row order, named `file:line`;
//! and, when the table's key is best filled in key order, how each
//! connection sends its share sorted by key ([`Queue`] merges the keys
//! the parse workers sorted block by block).
//! Not useful for: what a connection does with its batches (`pg`, `my`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use arrow_array::RecordBatch;
use sluice::index::KeyBatch;
use sluice::load::sink::{Provenance, Rows, describe_row};
use sluice::source::Input;
use sluice::{Error, Result};

/// Batches waiting for a free connection, per connection.
const QUEUE_PER_CONNECTION: usize = 2;

/// Rows a batch merged in key order holds (the last of a run fewer).
const MERGED_ROWS: usize = 32 * 1024;

/// What the connections take: a batch, and the group's rows it holds.
pub(crate) struct Job {
    pub(crate) batch: RecordBatch,
    rows: RowIds,
    /// Its keys, sorted, when the connections send in key order.
    keys: Option<KeyBatch>,
}

/// The group's rows of a batch: consecutive from a row, or (a piece of a
/// block cut by key) the block's first row plus each row's place in the
/// block, or (rows merged in key order) each row's own.
#[derive(Clone)]
enum RowIds {
    From(u64),
    At(u64, Arc<Vec<u32>>),
    Each(Arc<Vec<u64>>),
}

impl RowIds {
    /// The group's row of the batch's row `k`.
    fn row(&self, k: usize) -> Option<u64> {
        match self {
            RowIds::From(first) => Some(first + k as u64),
            RowIds::At(first, at) => Some(first + u64::from(*at.get(k)?)),
            RowIds::Each(rows) => rows.get(k).copied(),
        }
    }
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
        rows.row((stream_row - start) as usize)
    }
}

/// The batches of one connection: taken off the group's queue as they
/// come, or, in key order, gathered into runs of at most `run_bytes`
/// each sent merged by key (the whole group when it fits).
pub(crate) struct Queue {
    rx: Arc<Mutex<Receiver<Job>>>,
    sort: Option<Sorted>,
    /// Another connection failed, or the load stopped: a connection
    /// sending a sorted run stops too, rather than send it all first.
    failed: Arc<AtomicBool>,
}

/// A connection's runs in key order.
struct Sorted {
    run_bytes: usize,
    merge: Option<Merge>,
    /// The queue closed: the run being merged is the last.
    closed: bool,
    /// Runs gathered so far.
    runs: u64,
}

impl Queue {
    /// The next batch; `None` once the group's batches are all sent.
    pub(crate) fn next(&mut self) -> std::result::Result<Option<Job>, Error> {
        let Some(s) = self.sort.as_mut() else {
            return take(&self.rx);
        };
        // Said only when nothing else failed (see `Fanout::join`).
        let stopped = || Err(Error::Cancelled);
        loop {
            if self.failed.load(Ordering::Relaxed) {
                return stopped();
            }
            if let Some(job) = s.merge.as_mut().and_then(Merge::next) {
                return job.map(Some);
            }
            s.merge = None;
            if s.closed {
                return Ok(None);
            }
            let mut run = Vec::new();
            let mut bytes = 0;
            while bytes < s.run_bytes {
                let Some(job) = take(&self.rx)? else {
                    s.closed = true;
                    break;
                };
                if self.failed.load(Ordering::Relaxed) {
                    return stopped();
                }
                bytes += job.batch.get_array_memory_size()
                    + job.keys.as_ref().map_or(0, KeyBatch::heap_bytes);
                run.push(job);
            }
            if !run.is_empty() {
                s.runs += 1;
                s.merge = Some(Merge::new(run)?);
            }
        }
    }

    /// Sorted runs this connection sent (0 when not in key order).
    pub(crate) fn runs(&self) -> u64 {
        self.sort.as_ref().map_or(0, |s| s.runs)
    }
}

fn take(rx: &Mutex<Receiver<Job>>) -> std::result::Result<Option<Job>, Error> {
    match rx.lock() {
        Ok(rx) => Ok(rx.recv().ok()),
        Err(_) => Err(Error::Internal("the load queue is poisoned".into())),
    }
}

/// A k-way merge of batches whose keys are each sorted: a binary heap of
/// each batch's next key, smallest on top; equal keys come in the order
/// the batches arrived.
struct Merge {
    run: Vec<Job>,
    heap: Vec<Head>,
}

/// A batch's next key: its first eight bytes (most comparisons end
/// there, without reading the key), the batch, its place in the batch's
/// key order.
#[derive(Clone, Copy)]
struct Head {
    prefix: u64,
    job: u32,
    at: u32,
}

impl Merge {
    fn new(run: Vec<Job>) -> std::result::Result<Merge, Error> {
        if run.iter().any(|j| j.keys.is_none()) {
            return Err(Error::Internal("a batch to merge without its keys".into()));
        }
        let mut m = Merge {
            heap: (0..run.len() as u32)
                .filter_map(|j| {
                    let keys = run[j as usize].keys.as_ref()?;
                    (!keys.is_empty()).then(|| Head {
                        prefix: keys.sorted_prefix(0),
                        job: j,
                        at: 0,
                    })
                })
                .collect(),
            run,
        };
        for i in (0..m.heap.len() / 2).rev() {
            m.sift_down(i);
        }
        Ok(m)
    }

    fn key(&self, h: Head) -> &[u8] {
        match &self.run[h.job as usize].keys {
            Some(k) => k.sorted_key(h.at as usize),
            None => &[],
        }
    }

    #[inline]
    fn less(&self, a: Head, b: Head) -> bool {
        if a.prefix != b.prefix {
            return a.prefix < b.prefix;
        }
        match self.key(a).cmp(self.key(b)) {
            std::cmp::Ordering::Equal => a.job < b.job,
            o => o.is_lt(),
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < n && self.less(self.heap[l], self.heap[m]) {
                m = l;
            }
            if r < n && self.less(self.heap[r], self.heap[m]) {
                m = r;
            }
            if m == i {
                return;
            }
            self.heap.swap(i, m);
            i = m;
        }
    }

    /// The next batch of up to [`MERGED_ROWS`] rows in key order.
    fn next(&mut self) -> Option<std::result::Result<Job, Error>> {
        if self.heap.is_empty() {
            return None;
        }
        let mut picks: Vec<(usize, usize)> = Vec::with_capacity(MERGED_ROWS);
        let mut rows = Vec::with_capacity(MERGED_ROWS);
        while picks.len() < MERGED_ROWS {
            let Some(&Head { job: j, at, .. }) = self.heap.first() else {
                break;
            };
            let job = &self.run[j as usize];
            let Some(keys) = &job.keys else { break };
            let r = keys.sorted_row(at as usize) as usize;
            picks.push((j as usize, r));
            rows.push(job.rows.row(r).unwrap_or(u64::MAX));
            if at as usize + 1 < keys.len() {
                self.heap[0].at = at + 1;
                self.heap[0].prefix = keys.sorted_prefix(at as usize + 1);
            } else {
                // This batch is done: its memory goes once the batch
                // built from it goes.
                let last = self.heap.len() - 1;
                self.heap.swap(0, last);
                self.heap.pop();
                self.run[j as usize].keys = None;
            }
            if !self.heap.is_empty() {
                self.sift_down(0);
            }
        }
        // Only the batches this one takes rows of (fewer dictionaries to
        // merge), renumbered.
        let mut used: Vec<usize> = picks.iter().map(|p| p.0).collect();
        used.sort_unstable();
        used.dedup();
        let batches: Vec<&RecordBatch> = used.iter().map(|&j| &self.run[j].batch).collect();
        for p in &mut picks {
            p.0 = used.binary_search(&p.0).unwrap_or(0);
        }
        let batch = arrow_select::interleave::interleave_record_batch(&batches, &picks)
            .map_err(|e| Error::Internal(format!("merging rows in key order: {e}")));
        // Batches whose keys are all sent give their rows back.
        for &j in &used {
            if self.run[j].keys.is_none() {
                let schema = self.run[j].batch.schema();
                self.run[j].batch = RecordBatch::new_empty(schema);
            }
        }
        Some(batch.map(|batch| Job {
            batch,
            rows: RowIds::Each(Arc::new(rows)),
            keys: None,
        }))
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
    /// other's uncommitted key). `sort_bytes`: each connection sends its
    /// rows merged in key order, in runs of at most this many bytes (the
    /// layout must have the key, [`sluice::load::sink::Layout::key`]).
    pub(crate) fn start<F>(
        n: usize,
        name: &str,
        routed: bool,
        sort_bytes: Option<usize>,
        part: F,
    ) -> Result<Fanout<P>>
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
            let queue = Queue {
                rx: rxs[i % rxs.len()].clone(),
                sort: sort_bytes.map(|b| Sorted {
                    run_bytes: (b / n).max(1),
                    merge: None,
                    closed: false,
                    runs: 0,
                }),
                failed: failed.clone(),
            };
            let (failed, part) = (failed.clone(), part.clone());
            let w = std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || {
                    let r = part(i, queue);
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
                keys: p.keys,
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
        // less than the one whose row the server named, and one that
        // stopped because another failed says nothing.
        failures.sort_by_key(|f| {
            (
                matches!(f.error, Error::Cancelled),
                f.row.unwrap_or(u64::MAX),
            )
        });
        let first = failures.swap_remove(0);
        Err(match first.row {
            Some(row) if first.from => first.error.context(format!(
                "a statement of many rows, the first of them from {}",
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
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::{ArrayRef, Int64Array, StringArray};
    use proptest::prelude::*;

    /// A piece of `keys` (a TEXT key column and a column holding each
    /// row's group row) sent as the sink sends it, its keys sorted.
    fn job(keys: &[String], group_rows: &[u64], ids: RowIds) -> Job {
        let k: ArrayRef = Arc::new(StringArray::from(keys.to_vec()));
        let g: ArrayRef = Arc::new(Int64Array::from(
            group_rows.iter().map(|&r| r as i64).collect::<Vec<_>>(),
        ));
        let batch = RecordBatch::try_from_iter(vec![("k", k.clone()), ("g", g)]).unwrap();
        Job {
            batch,
            rows: ids,
            keys: Some(KeyBatch::from_array(k.as_ref()).unwrap()),
        }
    }

    /// Every batch a queue sends in key order: keys and group rows.
    fn drain(queue: &mut Queue) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        while let Some(j) = queue.next().unwrap() {
            let mut s = Stream::default();
            s.push(&j);
            let k = j.batch.column(0).as_string::<i32>();
            let g = j.batch.column(1).as_primitive::<Int64Type>();
            for i in 0..j.batch.num_rows() {
                // The row the stream names is the row the batch holds.
                assert_eq!(s.group_row(i as u64), Some(g.value(i) as u64));
                out.push((k.value(i).to_string(), g.value(i) as u64));
            }
        }
        out
    }

    proptest! {
        /// Merged in key order, in runs when the memory is short: each
        /// run's keys ascend (equal keys in arrival order), every row is
        /// sent once, and the rows the streams name are the rows sent.
        #[test]
        fn rows_merge_in_key_order_and_keep_their_group_rows(
            pieces in prop::collection::vec(prop::collection::vec("[a-c]{0,3}|aaaaaaa[a-c]{0,4}", 0..40), 1..12),
            cut in any::<bool>(),
            run_bytes in prop_oneof![Just(usize::MAX), 1usize..20_000],
        ) {
            let (tx, rx) = sync_channel(pieces.len());
            let mut first = 0u64;
            let mut all = Vec::new();
            for keys in &pieces {
                // Either consecutive rows, or every other row of a block.
                let (ids, group): (RowIds, Vec<u64>) = if cut {
                    let at: Vec<u32> = (0..keys.len() as u32).map(|i| 2 * i).collect();
                    let g = at.iter().map(|&a| first + u64::from(a)).collect();
                    (RowIds::At(first, Arc::new(at)), g)
                } else {
                    (RowIds::From(first), (first..first + keys.len() as u64).collect())
                };
                all.extend(keys.iter().cloned().zip(group.iter().copied()));
                tx.send(job(keys, &group, ids)).unwrap();
                first += 2 * keys.len() as u64 + 1;
            }
            drop(tx);
            let mut queue = Queue {
                rx: Arc::new(Mutex::new(rx)),
                sort: Some(Sorted { run_bytes, merge: None, closed: false, runs: 0 }),
                failed: Arc::default(),
            };
            let out = drain(&mut queue);
            let runs = queue.runs();
            prop_assert!(runs >= 1);
            if run_bytes == usize::MAX {
                prop_assert_eq!(runs, 1);
                let mut want = all.clone();
                // Stable: equal keys keep the order their rows came in.
                want.sort_by(|a, b| a.0.cmp(&b.0));
                prop_assert_eq!(&out, &want);
            } else {
                let descents = out.windows(2).filter(|w| w[1].0 < w[0].0).count() as u64;
                prop_assert!(descents < runs, "{} descents in {} runs", descents, runs);
            }
            let (mut got, mut want) = (out, all);
            got.sort();
            want.sort();
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn a_queue_in_input_order_passes_batches_through() {
        let (tx, rx) = sync_channel(2);
        let keys = ["b".to_string(), "a".to_string()];
        tx.send(job(&keys, &[7, 8], RowIds::From(7))).unwrap();
        drop(tx);
        let mut queue = Queue {
            rx: Arc::new(Mutex::new(rx)),
            sort: None,
            failed: Arc::default(),
        };
        assert_eq!(drain(&mut queue), vec![("b".into(), 7), ("a".into(), 8)]);
        assert_eq!(queue.runs(), 0);
    }

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
            keys: None,
        });
        s.push(&Job {
            batch: batch(3),
            rows: RowIds::At(300, Arc::new(vec![1, 4, 7])),
            keys: None,
        });
        assert_eq!(s.sent, 13);
        assert_eq!(s.group_row(0), Some(100));
        assert_eq!(s.group_row(9), Some(109));
        assert_eq!(s.group_row(10), Some(301));
        assert_eq!(s.group_row(12), Some(307));
        assert_eq!(Stream::default().group_row(3), None);
    }
}
