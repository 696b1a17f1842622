//! The inputs of a query, batch by batch, opened lazily and let go early.
//!
//! The segments that the manifest's zone maps keep are opened first (each
//! mapped and its metadata checked: this lists its record batches with
//! their rows and zone maps). Batches whose zone maps rule out the filter
//! get no morsels. A batch's columns are checked and decoded when a
//! worker first takes one of its morsels; once every morsel of a batch is
//! done its decoded columns are dropped and the mapped pages of the
//! columns no result row can point into ([`Inputs::release`]) are let go,
//! and once every batch of a segment is done the segment is, which unmaps
//! it unless the database handle keeps it: a one-shot query's resident
//! memory is the batches in flight (and the columns it outputs), not the
//! table.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;

use crate::batch::ColumnStats;
use crate::error::{Error, Result};
use crate::store::segment::SegmentScan;

/// Where a batch's rows come from.
enum Source {
    /// Rows already in memory (`SELECT 1`, key lookups, counts from the
    /// manifest).
    Ready(RecordBatch),
    /// Record batch `index` of segment `seg`.
    Segment { seg: usize, index: usize },
    /// The pipelined join's last rows (its build rows that no probe row
    /// matched): one morsel, handed out last, made once every other
    /// morsel is done.
    Tail,
    /// Rows read by the first worker that needs them (a join's rows
    /// that were written to disk), dropped once their morsels are done.
    Later(Later),
}

/// A batch of rows made when first needed: `rows` rows, by `load`.
pub struct Later {
    pub rows: usize,
    pub load: Box<dyn Fn() -> Result<RecordBatch> + Send + Sync>,
}

struct BatchSlot {
    source: Source,
    rows: usize,
    /// Zone-map bounds of |value| per scanned column (the fused path
    /// skips overflow checks with them).
    bounds: Arc<Vec<Option<u128>>>,
    /// Morsels of this batch not yet done.
    remaining: AtomicUsize,
    decoded: Mutex<Option<RecordBatch>>,
}

struct SegmentSlot {
    scan: Mutex<Option<Arc<SegmentScan>>>,
    /// Batches of this segment (with morsels) not yet done.
    remaining: AtomicUsize,
}

/// A morsel: rows `off..off + len` of batch `batch`.
#[derive(Debug, Clone, Copy)]
pub struct Morsel {
    pub batch: usize,
    pub off: usize,
    pub len: usize,
}

/// The batches of a query and their morsels, in table order.
#[derive(Default)]
pub struct Inputs {
    segments: Vec<SegmentSlot>,
    batches: Vec<BatchSlot>,
    /// Per batch: its zone map (table columns), where known.
    stats: Vec<Option<Vec<ColumnStats>>>,
    pub morsels: Vec<Morsel>,
    /// The order in which workers take the morsels (indices into
    /// `morsels`, which are in table order; see [`Inputs::cut`]).
    order: Vec<usize>,
    /// Rows of the batches kept.
    pub rows: u64,
    /// Batches ruled out by their zone maps.
    pub batches_pruned: usize,
    pub batches_total: usize,
    /// When set, no more morsels are handed out.
    pub stop: Option<super::Stop>,
    /// Yield the CPU before each take of a morsel but the query's first
    /// (see [`super::QueryOptions::yield_between_morsels`]); a worker's
    /// last take, which finds none left, yields too.
    pub yield_between_morsels: bool,
    /// The join applied to each morsel of the batches before a worker
    /// sees its rows (a join group's last join, see
    /// [`super::join::Pipeline`]).
    pipeline: Option<super::join::Pipeline>,
    /// Morsels not yet done but the tail's.
    pending: AtomicUsize,
    /// Scanned columns (positions) whose mapped pages are let go once
    /// every morsel of their batch is done: those no result row can
    /// still point into (see [`SegmentScan::release`]).
    pub release: Vec<usize>,
    /// Let those columns' pages go morsel by morsel too (a batch's pages
    /// all go once its columns are checked, and each morsel's once it is
    /// done): under a memory limit of which a batch of a quarter million
    /// rows, held by each worker, would be a good part.
    pub release_morsels: bool,
}

impl Inputs {
    /// Joins each morsel's rows by `p` before a worker sees them; its
    /// tail, if it has one, is the last morsel.
    pub fn pipe(&mut self, p: super::join::Pipeline) {
        if p.has_tail() {
            self.batches_total += 1;
            self.batches.push(BatchSlot {
                source: Source::Tail,
                rows: 1,
                bounds: Arc::new(Vec::new()),
                remaining: AtomicUsize::new(0),
                decoded: Mutex::new(None),
            });
            self.stats.push(None);
        }
        self.pipeline = Some(p);
    }

    /// Drops the pipelined join (its tables, and the memory they hold)
    /// once every morsel is done.
    pub fn let_go_of_pipeline(&mut self) {
        self.pipeline = None;
    }

    /// A batch already in memory.
    pub fn push_ready(&mut self, batch: RecordBatch, bounds: Arc<Vec<Option<u128>>>) {
        self.rows += batch.num_rows() as u64;
        self.batches_total += 1;
        self.batches.push(BatchSlot {
            rows: batch.num_rows(),
            source: Source::Ready(batch),
            bounds,
            remaining: AtomicUsize::new(0),
            decoded: Mutex::new(None),
        });
        self.stats.push(None);
    }

    /// A batch read when first needed.
    pub fn push_later(&mut self, later: Later, bounds: Arc<Vec<Option<u128>>>) {
        self.rows += later.rows as u64;
        self.batches_total += 1;
        self.batches.push(BatchSlot {
            rows: later.rows,
            source: Source::Later(later),
            bounds,
            remaining: AtomicUsize::new(0),
            decoded: Mutex::new(None),
        });
        self.stats.push(None);
    }

    /// The batches of an opened segment that `keep` (given a batch's zone
    /// map, when the segment lists them) does not rule out.
    pub fn push_segment(
        &mut self,
        scan: Arc<SegmentScan>,
        bounds: Arc<Vec<Option<u128>>>,
        keep: impl Fn(&[ColumnStats]) -> bool,
    ) {
        let seg = self.segments.len();
        let mut kept = 0;
        for index in 0..scan.len() {
            let info = scan.info(index);
            self.batches_total += 1;
            if info.rows == 0 || info.stats.is_some_and(|s| !keep(s)) {
                self.batches_pruned += usize::from(info.rows > 0);
                continue;
            }
            kept += 1;
            self.rows += info.rows as u64;
            self.stats.push(info.stats.map(|s| s.to_vec()));
            self.batches.push(BatchSlot {
                source: Source::Segment { seg, index },
                rows: info.rows,
                bounds: bounds.clone(),
                remaining: AtomicUsize::new(0),
                decoded: Mutex::new(None),
            });
        }
        self.segments.push(SegmentSlot {
            scan: Mutex::new((kept > 0).then_some(scan)),
            remaining: AtomicUsize::new(kept),
        });
    }

    /// Cuts the batches into morsels of at most `rows` rows, and orders
    /// them for `workers` workers: batches in groups of `workers`, and in
    /// a group the first morsel of each batch, then the second of each,
    /// and so on. So the workers start on different batches (the first to
    /// reach a batch checks and decodes it while the others wait for it),
    /// and no more than about a group of batches is decoded at once.
    /// A pipeline whose parts are joined in order (see
    /// [`super::join::Pipeline::in_order`]) gets the batches one at a
    /// time, each batch's morsels before the next batch's.
    pub fn cut(&mut self, rows: usize, workers: usize) {
        self.morsels.clear();
        let mut first = Vec::with_capacity(self.batches.len() + 1);
        // The tail is not grouped with the batches: its morsel comes last.
        let tail = matches!(self.batches.last(), Some(s) if matches!(s.source, Source::Tail));
        let grouped = self.batches.len() - usize::from(tail);
        for (b, slot) in self.batches.iter().enumerate() {
            first.push(self.morsels.len());
            let mut off = 0;
            let mut count = 0;
            while off < slot.rows {
                let len = rows.min(slot.rows - off);
                self.morsels.push(Morsel { batch: b, off, len });
                off += len;
                count += 1;
            }
            slot.remaining.store(count, Ordering::Relaxed);
        }
        first.push(self.morsels.len());
        self.pending.store(
            first.get(grouped).copied().unwrap_or(self.morsels.len()),
            Ordering::Relaxed,
        );
        self.order.clear();
        // (A grace join's parts are joined in order: one batch at a time.)
        let group = if self.pipeline.as_ref().is_some_and(|p| p.in_order()) {
            1
        } else {
            workers.max(1)
        };
        for group in (0..grouped).collect::<Vec<_>>().chunks(group) {
            let most = group
                .iter()
                .map(|&b| first[b + 1] - first[b])
                .max()
                .unwrap_or(0);
            for j in 0..most {
                for &b in group {
                    if first[b] + j < first[b + 1] {
                        self.order.push(first[b] + j);
                    }
                }
            }
        }
        if tail {
            self.order.extend(first[grouped]..first[grouped + 1]);
        }
    }

    /// The morsel that the `t`-th take gets (an index into `morsels`).
    /// `None` once the query is asked to stop (see [`super::Stop`]).
    pub fn nth(&self, t: usize) -> Option<usize> {
        if self.stop.as_ref().is_some_and(|s| s.is_set()) {
            return None;
        }
        if self.yield_between_morsels && t > 0 {
            std::thread::yield_now();
        }
        self.order.get(t).copied()
    }

    pub fn len(&self) -> usize {
        self.batches.len()
    }

    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    /// The zone-map bounds of batch `b`'s scanned columns.
    pub fn bounds(&self, b: usize) -> &[Option<u128>] {
        &self.batches[b].bounds
    }

    /// Batch `b`'s zone map (table columns), where its segment lists one.
    pub fn stats(&self, b: usize) -> Option<&[ColumnStats]> {
        self.stats.get(b).and_then(|s| s.as_deref())
    }

    /// The rows of morsel `m`: its batch checked and decoded by the first
    /// worker that needs it (others wait for that one).
    pub fn rows_of(&self, m: &Morsel) -> Result<RecordBatch> {
        self.rows_checked(m, None)
    }

    /// The rows of morsel `m` with only the columns at positions `which`
    /// checked (all when `None`): the values of other columns must not
    /// be used before [`Inputs::check`] has checked them.
    pub fn rows_checked(&self, m: &Morsel, which: Option<&[usize]>) -> Result<RecordBatch> {
        let slot = &self.batches[m.batch];
        let (seg, index) = match (&slot.source, &self.pipeline) {
            (Source::Ready(b), None) => return Ok(b.slice(m.off, m.len)),
            (Source::Ready(b), Some(p)) => return p.apply_in(m.batch, &b.slice(m.off, m.len)),
            (Source::Tail, p) => return self.tail(p.as_ref()),
            (Source::Later(l), p) => {
                let mut decoded = slot
                    .decoded
                    .lock()
                    .map_err(|_| Error::Internal("batch lock poisoned".into()))?;
                if decoded.is_none() {
                    *decoded = Some((l.load)()?);
                }
                let b = match &*decoded {
                    Some(b) => b.slice(m.off, m.len),
                    None => return Err(Error::Internal("batch not read".into())),
                };
                drop(decoded);
                return match p {
                    Some(p) => p.apply_in(m.batch, &b),
                    None => Ok(b),
                };
            }
            (Source::Segment { seg, index }, _) => (*seg, *index),
        };
        let scan = self.scan(seg)?;
        let mut decoded = slot
            .decoded
            .lock()
            .map_err(|_| Error::Internal("batch lock poisoned".into()))?;
        match which {
            Some(w) => scan.check(index, w.iter().copied())?,
            None => scan.check(index, 0..scan.columns())?,
        }
        if decoded.is_none() {
            *decoded = Some(scan.decode(index)?);
            // The check read every page of the batch's columns: let go
            // of them; a morsel's rows are mapped again as it reads them.
            if self.release_morsels && !self.release.is_empty() {
                scan.release(index, &self.release);
            }
        }
        match &*decoded {
            Some(b) => Ok(b.slice(m.off, m.len)),
            None => Err(Error::Internal("batch not decoded".into())),
        }
    }

    /// The pipelined join's tail, once every other morsel is done (the
    /// worker that takes it waits for the others' last morsels; a
    /// stopped query waits for nothing: its rows are not used).
    fn tail(&self, p: Option<&super::join::Pipeline>) -> Result<RecordBatch> {
        let p = p.ok_or_else(|| Error::Internal("a tail without its join".into()))?;
        while self.pending.load(Ordering::Acquire) > 0 {
            if let Some(e) = self.stop.as_ref().and_then(|s| s.error()) {
                return Err(e);
            }
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
        p.tail()
    }

    /// Checks every column of morsel `m`'s batch (see
    /// [`Inputs::rows_checked`]).
    pub fn check(&self, m: &Morsel) -> Result<()> {
        if let Source::Segment { seg, index } = self.batches[m.batch].source {
            let scan = self.scan(seg)?;
            scan.check(index, 0..scan.columns())?;
        }
        Ok(())
    }

    fn scan(&self, seg: usize) -> Result<Arc<SegmentScan>> {
        self.segments[seg]
            .scan
            .lock()
            .ok()
            .and_then(|s| s.clone())
            .ok_or_else(|| Error::Internal("segment let go too early".into()))
    }

    /// Marks morsel `m` done (read, skipped or failed): the last morsel of
    /// a batch drops its decoded columns, the last batch of a segment the
    /// segment.
    pub fn done(&self, m: &Morsel) {
        let slot = &self.batches[m.batch];
        if !matches!(slot.source, Source::Tail) {
            self.pending.fetch_sub(1, Ordering::AcqRel);
        }
        if slot.remaining.fetch_sub(1, Ordering::AcqRel) != 1 {
            // A morsel of a batch others still read: its rows' pages
            // (not a small one's: each call to let pages go stops every
            // core a moment, and TPC-H Q1 at a tenth of its peak, in
            // morsels of 1,100 rows, took 0.07 s -> 0.24 s so).
            if self.release_morsels
                && m.len >= 16 << 10
                && !self.release.is_empty()
                && let Source::Segment { seg, .. } = slot.source
                && let Ok(scan) = self.scan(seg)
                && let Some(b) = slot.decoded.lock().ok().and_then(|d| d.clone())
            {
                scan.release_rows(&b, m.off, m.len, &self.release);
            }
            return;
        }
        if let Some(p) = &self.pipeline {
            p.batch_done(m.batch);
        }
        if let Ok(mut d) = slot.decoded.lock() {
            d.take();
        }
        if let Source::Segment { seg, index } = slot.source {
            let s = &self.segments[seg];
            if !self.release.is_empty()
                && let Ok(scan) = self.scan(seg)
            {
                scan.release(index, &self.release);
            }
            if s.remaining.fetch_sub(1, Ordering::AcqRel) == 1
                && let Ok(mut g) = s.scan.lock()
            {
                g.take();
            }
        }
    }
}

/// Calls [`Inputs::done`] for a morsel when dropped, whichever way the
/// worker leaves it.
pub struct Done<'a> {
    inputs: &'a Inputs,
    morsel: Morsel,
}

impl<'a> Done<'a> {
    pub fn new(inputs: &'a Inputs, morsel: Morsel) -> Self {
        Done { inputs, morsel }
    }
}

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.inputs.done(&self.morsel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(rows: usize) -> RecordBatch {
        crate::query::exec::empty_input(rows).unwrap()
    }

    #[test]
    fn workers_start_on_different_batches_and_every_morsel_is_taken_once() {
        let mut inputs = Inputs::default();
        for rows in [7, 3, 10, 1, 6] {
            inputs.push_ready(batch(rows), Arc::new(Vec::new()));
        }
        inputs.cut(3, 2);
        // Table order: batch by batch, offsets rising.
        let m: Vec<(usize, usize, usize)> = inputs
            .morsels
            .iter()
            .map(|m| (m.batch, m.off, m.len))
            .collect();
        assert_eq!(
            m,
            vec![
                (0, 0, 3),
                (0, 3, 3),
                (0, 6, 1),
                (1, 0, 3),
                (2, 0, 3),
                (2, 3, 3),
                (2, 6, 3),
                (2, 9, 1),
                (3, 0, 1),
                (4, 0, 3),
                (4, 3, 3),
            ]
        );
        let order: Vec<usize> = (0..).map_while(|t| inputs.nth(t)).collect();
        // Batches 0 and 1 interleaved, then 2 and 3, then 4.
        assert_eq!(order, vec![0, 3, 1, 2, 4, 8, 5, 6, 7, 9, 10]);
        // One worker: table order.
        inputs.cut(3, 1);
        let order: Vec<usize> = (0..).map_while(|t| inputs.nth(t)).collect();
        assert_eq!(order, (0..11).collect::<Vec<_>>());
        // Each morsel done lets go of its batch after the last one.
        for &i in &order {
            let m = inputs.morsels[i];
            assert_eq!(inputs.rows_of(&m).unwrap().num_rows(), m.len);
            inputs.done(&m);
        }
        assert!(
            inputs
                .batches
                .iter()
                .all(|b| b.remaining.load(Ordering::Relaxed) == 0)
        );
    }
}
