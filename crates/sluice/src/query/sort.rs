//! External merge sort: the rows of an ORDER BY (or of a LIMIT of more
//! rows than fit) that pass half the memory limit are sorted and written
//! to disk as a run, and the query goes on; at the end the runs, and the
//! rows still in memory, are merged into the answer a frame of each run
//! at a time. Too many runs for the memory to hold a frame of each are
//! merged first, a group at a time, into longer ones.
//!
//! Every row carries its position in the input as its last column (see
//! `exec::with_positions`), the last sort key: rows that tie on the
//! ORDER BY keep the order they came in, so that the answer is the one a
//! stable sort of all rows gives, whatever went to disk and whatever the
//! workers' timing. The keys are compared as `arrow_row` rows while
//! merging, by the values [`super::expr::ordering_values`] gives (as the
//! in-memory sort compares them).

use std::sync::Mutex;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_ord::sort::{SortColumn, SortOptions, lexsort_to_indices};
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::DataType as A;

use super::QueryOptions;
use super::expr::exec_err;
use super::memory::{Reservation, array_bytes, batch_bytes, batches_bytes};
use super::plan::SortKey;
use super::spill::{Run, RunWriter};
use crate::error::{Error, Result};

/// The name the sort's memory and spill go by (EXPLAIN ANALYZE, errors).
pub(crate) const OPERATOR: &str = "sort";

/// A sort that may write runs: made by the operator that holds the rows
/// to sort, fed by its workers with [`ExternalSort::spill`] whenever what
/// they hold passes half the limit, and read with
/// [`ExternalSort::merge`].
pub(crate) struct ExternalSort<'a> {
    order: &'a [SortKey],
    opts: &'a QueryOptions,
    /// The rows of each run past which none can be in the answer (a
    /// LIMIT's count plus its OFFSET).
    fetch: Option<usize>,
    runs: Mutex<Vec<Run>>,
    /// Bytes a frame of a run holds (about): the unit read back.
    frame_bytes: u64,
    /// Runs merged at once.
    fan_in: usize,
}

impl<'a> ExternalSort<'a> {
    /// A sort by `order` under `opts`'s memory and spill; `None` when the
    /// query has no memory limit or no place to spill (the rows are then
    /// sorted in memory, as before).
    pub(crate) fn new(
        order: &'a [SortKey],
        opts: &'a QueryOptions,
        fetch: Option<usize>,
    ) -> Option<ExternalSort<'a>> {
        let limit = opts.memory.as_ref()?.limit();
        opts.spill.as_ref()?;
        // A frame a 256th of the limit (4 KiB to 1 MiB); the runs merged
        // at once hold, with their keys, at most half the limit.
        let frame_bytes = (limit / 256).clamp(4 << 10, 1 << 20);
        let fan_in = usize::try_from(limit / 2 / (3 * frame_bytes))
            .unwrap_or(usize::MAX)
            .clamp(2, 256);
        Some(ExternalSort {
            order,
            opts,
            fetch,
            runs: Mutex::new(Vec::new()),
            frame_bytes,
            fan_in,
        })
    }

    /// Whether rows of `bytes` more should go to disk now: past half the
    /// limit (see [`super::memory::Memory::keeps_rows`]), so that sorting
    /// what is held, and the merge, find room.
    pub(crate) fn should_spill(&self, bytes: u64) -> bool {
        self.opts.sort_rows_on_disk
            || self
                .opts
                .memory
                .as_ref()
                .is_some_and(|m| !m.keeps_rows(bytes))
    }

    /// Whether a run was written.
    pub(crate) fn spilled(&self) -> bool {
        self.runs.lock().map(|r| !r.is_empty()).unwrap_or(true)
    }

    /// Sorts `batches` (their positions last) and writes them as one run
    /// (or, where sorting them all at once does not fit, each batch as a
    /// run of its own, halved if need be). Their memory stays the
    /// caller's to give back.
    pub(crate) fn spill(&self, batches: &[RecordBatch]) -> Result<()> {
        let batches: Vec<RecordBatch> = batches
            .iter()
            .filter(|b| b.num_rows() > 0)
            .cloned()
            .collect();
        if batches.is_empty() {
            return Ok(());
        }
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        // The keys copied together (one batch's are sorted where they
        // are), their indices, one frame.
        let keys = match batches.len() {
            1 => 0,
            _ => self.key_bytes(&batches)?,
        };
        let frame = self.frame_bytes.min(batches_bytes(&batches));
        let work = keys + 12 * rows as u64 + frame;
        match self.opts.reserve(OPERATOR, work) {
            Ok(mem) => self.write_run(&batches, mem),
            Err(Error::MemoryLimit { .. }) if batches.len() > 1 => {
                for b in batches {
                    self.spill(&[b])?;
                }
                Ok(())
            }
            Err(Error::MemoryLimit { .. }) if rows > 1 => {
                let (a, b) = halves(batches);
                self.spill(&a)?;
                self.spill(&b)
            }
            // One row is sorted as it is: written without more memory.
            Err(Error::MemoryLimit { .. }) => {
                self.write_run(&batches, self.opts.reserve(OPERATOR, 0)?)
            }
            Err(e) => Err(e),
        }
    }

    /// Writes `batches` sorted as a run, `mem` holding the work's bytes.
    fn write_run(&self, batches: &[RecordBatch], mem: Reservation) -> Result<()> {
        let order = self.sorted_rows(batches)?;
        let refs: Vec<&RecordBatch> = batches.iter().collect();
        let per_frame = self.frame_rows(batches);
        let mut w = self.writer()?;
        for chunk in order.chunks(per_frame) {
            self.check_stop()?;
            let b = arrow_select::interleave::interleave_record_batch(&refs, chunk)
                .map_err(exec_err)?;
            w.write(0, &b)?;
        }
        drop(mem);
        let run = w.finish()?;
        self.runs
            .lock()
            .map_err(|_| Error::Internal("sort runs lock poisoned".into()))?
            .push(run);
        Ok(())
    }

    /// Merges the runs written and `rest` (rows in memory, unsorted,
    /// positions last) in order, skipping the first `skip` rows and
    /// stopping after `take`; hands the rows to `emit` a frame at a time
    /// (positions still last).
    pub(crate) fn merge(
        &self,
        rest: &[RecordBatch],
        skip: usize,
        take: Option<usize>,
        emit: &mut dyn FnMut(RecordBatch) -> Result<()>,
    ) -> Result<()> {
        self.merge_with(rest, false, skip, take, emit)
    }

    /// [`ExternalSort::merge`] where each batch of `rest` is sorted
    /// already (a worker's first rows): merged as runs of their own,
    /// not sorted again.
    pub(crate) fn merge_sorted(
        &self,
        rest: &[RecordBatch],
        skip: usize,
        take: Option<usize>,
        emit: &mut dyn FnMut(RecordBatch) -> Result<()>,
    ) -> Result<()> {
        self.merge_with(rest, true, skip, take, emit)
    }

    fn merge_with(
        &self,
        rest: &[RecordBatch],
        rest_sorted: bool,
        skip: usize,
        take: Option<usize>,
        emit: &mut dyn FnMut(RecordBatch) -> Result<()>,
    ) -> Result<()> {
        let mut runs = std::mem::take(
            &mut *self
                .runs
                .lock()
                .map_err(|_| Error::Internal("sort runs lock poisoned".into()))?,
        );
        let rest: Vec<RecordBatch> = rest.iter().filter(|b| b.num_rows() > 0).cloned().collect();
        // Longer runs until the last merge holds a frame of each (of
        // the largest frames written: a row may be larger than a frame).
        let in_memory = match rest_sorted {
            true => rest.len(),
            false => usize::from(!rest.is_empty()),
        };
        let largest = runs
            .iter()
            .flat_map(|r| r.frames())
            .map(|f| f.len)
            .max()
            .unwrap_or(0)
            .max(self.frame_bytes);
        let fan_in = match self.opts.memory.as_ref() {
            Some(m) => usize::try_from(m.limit() / 2 / (3 * largest))
                .unwrap_or(usize::MAX)
                .clamp(2, self.fan_in),
            None => self.fan_in,
        };
        while runs.len() >= 2 && runs.len() + in_memory > fan_in {
            let group: Vec<Run> = runs.drain(..fan_in.min(runs.len())).collect();
            let mut w = self.writer()?;
            self.merge_sources(
                group.into_iter().map(Source::disk).collect(),
                0,
                self.fetch,
                &mut |b| w.write(0, &b),
            )?;
            runs.push(w.finish()?);
        }
        let mut sources: Vec<Source> = runs.into_iter().map(Source::disk).collect();
        if rest_sorted {
            for batch in rest {
                let per_frame = self.frame_rows(std::slice::from_ref(&batch));
                sources.push(Source::Sorted {
                    batch,
                    at: 0,
                    per_frame,
                });
            }
        } else if !rest.is_empty() {
            let order = self.sorted_rows(&rest)?;
            let per_frame = self.frame_rows(&rest);
            sources.push(Source::Memory {
                batches: rest,
                order,
                at: 0,
                per_frame,
            });
        }
        self.merge_sources(sources, skip, take, emit)
    }

    /// Merges sorted `sources` (see [`ExternalSort::merge`]).
    fn merge_sources(
        &self,
        mut sources: Vec<Source>,
        mut skip: usize,
        take: Option<usize>,
        emit: &mut dyn FnMut(RecordBatch) -> Result<()>,
    ) -> Result<()> {
        let mut mem = self.opts.reserve(OPERATOR, 0)?;
        let mut converter: Option<RowConverter> = None;
        let mut cursors: Vec<Option<Cursor>> = Vec::with_capacity(sources.len());
        for s in sources.iter_mut() {
            let c = match s.next_batch()? {
                Some(b) => Some(self.cursor(b, &mut converter)?),
                None => None,
            };
            cursors.push(c);
        }
        self.count(&cursors, &mut mem)?;
        let Some(schema) = cursors.iter().flatten().map(|c| c.batch.schema()).next() else {
            return Ok(());
        };
        // The current batch of each source (an exhausted one's last, or
        // an empty one): what the rows taken point into.
        let empty = RecordBatch::new_empty(schema);
        let mut heap: Vec<usize> = (0..cursors.len())
            .filter(|&i| cursors[i].is_some())
            .collect();
        let less = |cursors: &[Option<Cursor>], a: usize, b: usize| -> bool {
            match (&cursors[a], &cursors[b]) {
                (Some(x), Some(y)) => x.rows.row(x.at) < y.rows.row(y.at),
                _ => false,
            }
        };
        for i in (0..heap.len() / 2).rev() {
            sift_down(&mut heap, i, |a, b| less(&cursors, a, b));
        }
        let out_rows = self.frame_rows_of(&cursors);
        let mut taken: Vec<(usize, usize)> = Vec::with_capacity(out_rows);
        let mut left = take.unwrap_or(usize::MAX);
        let flush = |taken: &mut Vec<(usize, usize)>,
                     cursors: &[Option<Cursor>],
                     emit: &mut dyn FnMut(RecordBatch) -> Result<()>|
         -> Result<()> {
            if taken.is_empty() {
                return Ok(());
            }
            let refs: Vec<&RecordBatch> = cursors
                .iter()
                .map(|c| c.as_ref().map_or(&empty, |c| &c.batch))
                .collect();
            let b = arrow_select::interleave::interleave_record_batch(&refs, taken)
                .map_err(exec_err)?;
            taken.clear();
            emit(b)
        };
        while let Some(&top) = heap.first() {
            if left == 0 {
                break;
            }
            let Some(c) = cursors[top].as_mut() else {
                return Err(Error::Internal("sort: an empty source merged".into()));
            };
            if skip > 0 {
                skip -= 1;
            } else {
                taken.push((top, c.at));
                left -= 1;
            }
            c.at += 1;
            if c.at == c.batch.num_rows() {
                // The rows taken point into this batch: out first.
                flush(&mut taken, &cursors, emit)?;
                self.check_stop()?;
                cursors[top] = match sources[top].next_batch()? {
                    Some(b) => Some(self.cursor(b, &mut converter)?),
                    None => None,
                };
                self.count(&cursors, &mut mem)?;
                if cursors[top].is_none() {
                    let last = heap.len() - 1;
                    heap.swap(0, last);
                    heap.pop();
                }
            } else if taken.len() >= out_rows {
                flush(&mut taken, &cursors, emit)?;
            }
            sift_down(&mut heap, 0, |a, b| less(&cursors, a, b));
        }
        flush(&mut taken, &cursors, emit)
    }

    /// A source's next batch with its keys as rows.
    fn cursor(&self, batch: RecordBatch, conv: &mut Option<RowConverter>) -> Result<Cursor> {
        let keys = key_columns(self.order, &batch)?;
        if conv.is_none() {
            let fields = keys
                .iter()
                .map(|k| {
                    SortField::new_with_options(
                        k.values.data_type().clone(),
                        k.options.unwrap_or_default(),
                    )
                })
                .collect();
            *conv = Some(RowConverter::new(fields).map_err(exec_err)?);
        }
        let conv = conv.as_ref().expect("made above");
        let cols: Vec<ArrayRef> = keys.into_iter().map(|k| k.values).collect();
        let rows = conv.convert_columns(&cols).map_err(exec_err)?;
        Ok(Cursor { batch, rows, at: 0 })
    }

    /// Holds the bytes of the batches being merged and their keys.
    fn count(&self, cursors: &[Option<Cursor>], mem: &mut Reservation) -> Result<()> {
        let bytes: u64 = cursors
            .iter()
            .flatten()
            .map(|c| batch_bytes(&c.batch) + c.rows.size() as u64)
            .sum();
        mem.resize(bytes)
    }

    /// The rows of `batches` in order: (batch, row) pairs, at most
    /// `fetch` of them.
    fn sorted_rows(&self, batches: &[RecordBatch]) -> Result<Vec<(usize, usize)>> {
        let keys: Vec<Vec<SortColumn>> = batches
            .iter()
            .map(|b| key_columns(self.order, b))
            .collect::<Result<_>>()?;
        let Some(first) = keys.first() else {
            return Ok(Vec::new());
        };
        let cols: Vec<SortColumn> = match keys.len() {
            1 => keys.into_iter().next().unwrap_or_default(),
            _ => (0..first.len())
                .map(|k| {
                    let arrays: Vec<&dyn Array> =
                        keys.iter().map(|c| c[k].values.as_ref()).collect();
                    Ok(SortColumn {
                        values: arrow_select::concat::concat(&arrays).map_err(exec_err)?,
                        options: first[k].options,
                    })
                })
                .collect::<Result<_>>()?,
        };
        let idx = lexsort_to_indices(&cols, self.fetch).map_err(exec_err)?;
        let mut starts = Vec::with_capacity(batches.len());
        let mut n = 0usize;
        for b in batches {
            starts.push(n);
            n += b.num_rows();
        }
        Ok(idx
            .values()
            .iter()
            .map(|&g| {
                let g = g as usize;
                let b = starts.partition_point(|&s| s <= g) - 1;
                (b, g - starts[b])
            })
            .collect())
    }

    /// Bytes of the keys of `batches`.
    fn key_bytes(&self, batches: &[RecordBatch]) -> Result<u64> {
        let mut n = 0;
        for b in batches {
            for k in key_columns(self.order, b)? {
                n += array_bytes(k.values.as_ref());
            }
        }
        Ok(n)
    }

    /// Rows of a frame of rows like `batches`'.
    fn frame_rows(&self, batches: &[RecordBatch]) -> usize {
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        let bytes = batches_bytes(batches).max(1);
        rows_within(self.frame_bytes, rows, bytes)
    }

    /// Rows of a frame of the merge's output.
    fn frame_rows_of(&self, cursors: &[Option<Cursor>]) -> usize {
        let (rows, bytes) = cursors.iter().flatten().fold((0usize, 0u64), |(r, b), c| {
            (r + c.batch.num_rows(), b + batch_bytes(&c.batch))
        });
        rows_within(self.frame_bytes, rows, bytes.max(1))
    }

    fn writer(&self) -> Result<RunWriter> {
        self.opts
            .spill
            .as_ref()
            .ok_or_else(|| Error::Internal("sort: spilling without a spill".into()))?
            .writer(OPERATOR, self.opts.profile.clone())
    }

    fn check_stop(&self) -> Result<()> {
        self.opts.check_stop()
    }
}

/// Rows of about `target` bytes, where `rows` take `bytes` (one at
/// least).
fn rows_within(target: u64, rows: usize, bytes: u64) -> usize {
    let per_row = (bytes / rows.max(1) as u64).max(1);
    usize::try_from(target / per_row)
        .unwrap_or(usize::MAX)
        .max(1)
}

/// `batches` in two halves by rows (a single batch sliced).
fn halves(mut batches: Vec<RecordBatch>) -> (Vec<RecordBatch>, Vec<RecordBatch>) {
    if batches.len() == 1 {
        let b = batches.remove(0);
        let half = b.num_rows() / 2;
        return (
            vec![b.slice(0, half)],
            vec![b.slice(half, b.num_rows() - half)],
        );
    }
    let second = batches.split_off(batches.len() / 2);
    (batches, second)
}

/// The sort keys of `batch`: the ORDER BY's values as the in-memory sort
/// compares them (dictionaries as their values), then the position.
fn key_columns(order: &[SortKey], batch: &RecordBatch) -> Result<Vec<SortColumn>> {
    let mut keys = order
        .iter()
        .map(|k| {
            let mut values = super::expr::ordering_values(batch.column(k.column))?;
            if let A::Dictionary(_, v) = values.data_type() {
                values = arrow_cast::cast(&values, v).map_err(exec_err)?;
            }
            Ok(SortColumn {
                values,
                options: Some(SortOptions {
                    descending: k.descending,
                    nulls_first: k.nulls_first,
                }),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let last = batch
        .num_columns()
        .checked_sub(1)
        .ok_or_else(|| Error::Internal("sort: rows without their positions".into()))?;
    keys.push(SortColumn {
        values: batch.column(last).clone(),
        options: None,
    });
    Ok(keys)
}

/// Where a merge reads sorted batches from.
enum Source {
    /// A run's frames, in order.
    Disk { run: Run, next: usize },
    /// Rows in memory in order, a frame's rows at a time.
    Sorted {
        batch: RecordBatch,
        at: usize,
        per_frame: usize,
    },
    /// Rows in memory and their order, a frame's rows at a time.
    Memory {
        batches: Vec<RecordBatch>,
        order: Vec<(usize, usize)>,
        at: usize,
        per_frame: usize,
    },
}

impl Source {
    fn disk(run: Run) -> Source {
        Source::Disk { run, next: 0 }
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        match self {
            Source::Disk { run, next } => {
                let Some(f) = run.frames().get(*next).copied() else {
                    return Ok(None);
                };
                *next += 1;
                run.read(&f).map(Some)
            }
            Source::Sorted {
                batch,
                at,
                per_frame,
            } => {
                if *at >= batch.num_rows() {
                    return Ok(None);
                }
                let len = (*per_frame).min(batch.num_rows() - *at);
                let b = batch.slice(*at, len);
                *at += len;
                Ok(Some(b))
            }
            Source::Memory {
                batches,
                order,
                at,
                per_frame,
            } => {
                if *at >= order.len() {
                    return Ok(None);
                }
                let end = (*at + *per_frame).min(order.len());
                let refs: Vec<&RecordBatch> = batches.iter().collect();
                let b = arrow_select::interleave::interleave_record_batch(&refs, &order[*at..end])
                    .map_err(exec_err)?;
                *at = end;
                Ok(Some(b))
            }
        }
    }
}

/// A source's current batch and the next row of it to merge.
struct Cursor {
    batch: RecordBatch,
    rows: Rows,
    at: usize,
}

/// Restores the heap order below `i` (`less(a, b)`: `a` comes first).
fn sift_down(heap: &mut [usize], mut i: usize, less: impl Fn(usize, usize) -> bool) {
    loop {
        let l = 2 * i + 1;
        if l >= heap.len() {
            return;
        }
        let r = l + 1;
        let m = if r < heap.len() && less(heap[r], heap[l]) {
            r
        } else {
            l
        };
        if less(heap[m], heap[i]) {
            heap.swap(m, i);
            i = m;
        } else {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use arrow_array::{Int64Array, StringArray, UInt64Array};
    use arrow_schema::{Field, Schema};

    fn batch(keys: &[Option<i64>], names: &[&str], first_pos: u64) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", A::Int64, true),
            Field::new("s", A::Utf8, false),
            Field::new("#position", A::UInt64, false),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(keys.to_vec())),
                Arc::new(StringArray::from(names.to_vec())),
                Arc::new(UInt64Array::from_iter_values(
                    (0..keys.len() as u64).map(|r| first_pos + r),
                )),
            ],
        )
        .unwrap()
    }

    /// A fresh spill root of this test's own.
    fn root() -> std::path::PathBuf {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let r = std::env::temp_dir().join(format!(
            "sluice-sort-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&r);
        r
    }

    fn opts(limit: u64, dir: &std::path::Path) -> QueryOptions {
        QueryOptions {
            memory: Some(super::super::memory::Memory::new(limit)),
            spill: Some(super::super::spill::Spill::new(dir)),
            ..Default::default()
        }
    }

    /// Merged rows as (key, name) pairs.
    fn merged(
        s: &ExternalSort,
        rest: &[RecordBatch],
        skip: usize,
        take: Option<usize>,
    ) -> Vec<(Option<i64>, String)> {
        let mut out = Vec::new();
        s.merge(rest, skip, take, &mut |b| {
            let k = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            let n = b.column(1).as_any().downcast_ref::<StringArray>().unwrap();
            for r in 0..b.num_rows() {
                out.push((k.is_valid(r).then(|| k.value(r)), n.value(r).to_string()));
            }
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn runs_and_rows_in_memory_merge_into_a_stable_order() {
        let dir = root();
        let o = opts(1 << 30, &dir);
        let order = [SortKey {
            column: 0,
            descending: true,
            nulls_first: true,
        }];
        let s = ExternalSort::new(&order, &o, None).unwrap();
        // Ties on the key keep their positions' order, across runs.
        s.spill(&[batch(&[Some(1), Some(3), None], &["a", "b", "c"], 0)])
            .unwrap();
        s.spill(&[batch(&[Some(3), Some(2)], &["d", "e"], 10)])
            .unwrap();
        assert!(s.spilled());
        let rest = [batch(&[Some(1), None, Some(3)], &["f", "g", "h"], 20)];
        let got = merged(&s, &rest, 0, None);
        let want = vec![
            (None, "c"),
            (None, "g"),
            (Some(3), "b"),
            (Some(3), "d"),
            (Some(3), "h"),
            (Some(2), "e"),
            (Some(1), "a"),
            (Some(1), "f"),
        ];
        let want: Vec<(Option<i64>, String)> =
            want.into_iter().map(|(k, n)| (k, n.to_string())).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn offset_and_limit_cut_the_merged_rows() {
        let dir = root();
        let o = opts(1 << 30, &dir);
        let order = [SortKey {
            column: 0,
            descending: false,
            nulls_first: false,
        }];
        let s = ExternalSort::new(&order, &o, Some(4)).unwrap();
        s.spill(&[batch(&[Some(5), Some(1), Some(9)], &["a", "b", "c"], 0)])
            .unwrap();
        s.spill(&[batch(&[Some(4), Some(2), None], &["d", "e", "f"], 10)])
            .unwrap();
        let got: Vec<Option<i64>> = merged(&s, &[], 1, Some(3))
            .into_iter()
            .map(|r| r.0)
            .collect();
        assert_eq!(got, vec![Some(2), Some(4), Some(5)]);
    }

    #[test]
    fn many_runs_under_a_tiny_limit_merge_in_passes() {
        let dir = root();
        // 64 KiB: frames of 4 KiB, two runs merged at once.
        let o = opts(64 << 10, &dir);
        let order = [SortKey {
            column: 0,
            descending: false,
            nulls_first: false,
        }];
        let s = ExternalSort::new(&order, &o, None).unwrap();
        assert_eq!(s.fan_in, 2);
        let mut want = Vec::new();
        let mut state = 7u64;
        for run in 0..9u64 {
            let mut keys = Vec::new();
            let mut names = Vec::new();
            for r in 0..500u64 {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let k = (state >> 40) as i64 % 100;
                keys.push(Some(k));
                names.push(format!("{run}-{r}"));
                want.push((k, run * 1000 + r, format!("{run}-{r}")));
            }
            let names: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
            s.spill(&[batch(&keys, &names, run * 1000)]).unwrap();
        }
        want.sort();
        let got = merged(&s, &[], 0, None);
        let want: Vec<(Option<i64>, String)> =
            want.into_iter().map(|(k, _, n)| (Some(k), n)).collect();
        assert_eq!(got.len(), 4500);
        assert_eq!(got, want);
        assert!(o.spill.as_ref().unwrap().files_written() > 9);
    }
}
