//! The window operator: computes window functions over the rows of its
//! input plan.
//!
//! For: [`run`] — the input's rows are gathered (a window is a pipeline
//! breaker), then for each distinct PARTITION BY / ORDER BY (calls that
//! share one share a sort) the rows are hash-partitioned by their
//! partition key into one bucket per worker, each worker sorts its bucket
//! by (partition key, order key) in the row format and computes every
//! call of that sort over its partitions; the values go back to the rows'
//! places. Frames (ROWS, RANGE, GROUPS with UNBOUNDED, CURRENT ROW and
//! offsets) are ranges of a partition's sorted rows; aggregates over them
//! read prefix sums (counts, exact integer and decimal sums) or a segment
//! tree (sums of doubles, min, max), so no frame is summed row by row.
//! Not for: binding window calls ([`super::plan::window`]).

use std::sync::Arc;

use arrow_array::builder::{Float64Builder, Int64Builder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, UInt32Array};
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::{DataType as A, Field, Schema as ArrowSchema, SortOptions};

use super::QueryOptions;
use super::agg::AggFunc;
use super::expr::{canonical_doubles, exec_err};
use super::plan::window::{Bound, Frame, Offset, Units, WinFunc, WindowCall, WindowInput};
use super::scan::Later;
use super::spill::Output as Out;
use crate::error::{Error, Result};
use crate::store::Database;

mod stream;

/// Rows below which one worker computes a sort's windows (threads cost
/// more than they save).
const PARALLEL_ROWS: usize = 1 << 15;

/// The input's rows, then one column per window call: batches in
/// memory, and batches to read from disk when the rows did not fit (see
/// [`by_parts`]).
pub fn run(
    db: &Database,
    w: &WindowInput,
    opts: &QueryOptions,
    depth: usize,
) -> Result<(Vec<RecordBatch>, Vec<Later>)> {
    let inner = super::plan::Plan {
        depth: depth.max(w.input.depth),
        ..w.input.clone()
    };
    // Windows that can be computed a partition at a time: the input's
    // rows past half the limit go to disk as they are made.
    let key = shared_partition(w);
    // Windows of one partition: computed as their rows stream by in
    // order, when every call can be.
    let streamed = match key {
        None => stream::plan(w, &super::exec::result_schema(&inner)),
        Some(_) => None,
    };
    let spills = key.is_some() || streamed.is_some();
    let to_disk = spills && opts.spill.is_some();
    // Its input's rows held whole are the window's.
    let (batches, on_disk, held) = super::join::rows_of(
        &inner,
        opts,
        spills,
        opts.sort_rows_on_disk,
        OPERATOR,
        |o| super::exec::execute(db, &inner, o).map(|r| r.0),
    )?;
    let schema = match batches.first() {
        Some(b) => b.schema(),
        None => super::exec::result_schema(&inner),
    };
    let mut held = held;
    if on_disk.is_empty() && !(opts.sort_rows_on_disk && to_disk) {
        // (`compute` counts the rows itself.)
        let bytes = held.bytes();
        held.resize(0)?;
        match compute(&batches, &schema, w, opts) {
            Ok(b) => return Ok((vec![b], Vec::new())),
            Err(Error::MemoryLimit { .. }) if to_disk => {
                // Counted again while they go to disk (where the pool
                // has the room: what compute held is given back).
                let _ = held.resize(bytes);
            }
            Err(e) => return Err(e),
        }
    }
    let mut pieces: Vec<super::join::Piece> =
        batches.into_iter().map(super::join::Piece::Mem).collect();
    pieces.extend(on_disk);
    let Some(key) = key else {
        let s =
            streamed.ok_or_else(|| Error::Internal("window: rows on disk without a key".into()))?;
        let mut out = Out::new(opts, OPERATOR)?;
        stream::run(pieces, held, &schema, w, opts, s, &mut out)?;
        return out.finish();
    };
    // By partitions: every row to the part of its partition key's hash.
    let mut parts = Parts::new(opts)?;
    for p in pieces {
        opts.check_stop()?;
        parts.put(&p.load()?, &key, 0)?;
    }
    drop(held);
    let run = Arc::new(parts.finish()?);
    let mut out = Out::new(opts, OPERATOR)?;
    by_parts(&run, &schema, &key, 0, w, opts, &mut out)?;
    out.finish()
}

/// What the window's memory and spill go by.
const OPERATOR: &str = "window";

/// The input columns every call partitions by (in the first call's
/// order): rows that agree on them are in the same partition of every
/// call. `None` when there are none (a call without PARTITION BY sees
/// every row at once).
fn shared_partition(w: &WindowInput) -> Option<Vec<usize>> {
    let first = w.calls.first()?;
    let key: Vec<usize> = first
        .partition
        .iter()
        .copied()
        .filter(|c| w.calls.iter().all(|call| call.partition.contains(c)))
        .collect();
    (!key.is_empty()).then_some(key)
}

/// Computes the windows of each part of `run` (level `level`) in turn;
/// a part that does not fit is split again by the next bits of its
/// hash.
fn by_parts(
    run: &Arc<super::spill::Run>,
    schema: &arrow_schema::SchemaRef,
    key: &[usize],
    level: u32,
    w: &WindowInput,
    opts: &QueryOptions,
    out: &mut Out,
) -> Result<()> {
    for part in 0..super::spill::PARTS {
        opts.check_stop()?;
        let frames: Vec<super::spill::Frame> = run.frames_of(part).copied().collect();
        if frames.is_empty() {
            continue;
        }
        let batches = frames
            .iter()
            .map(|f| run.read(f))
            .collect::<Result<Vec<_>>>()?;
        let mut r = compute(&batches, schema, w, opts);
        if matches!(r, Err(Error::MemoryLimit { .. })) && out.holds() {
            // The parts done make room first.
            out.write_out()?;
            r = compute(&batches, schema, w, opts);
        }
        match r {
            Ok(b) => out.put(b)?,
            Err(Error::MemoryLimit { .. }) if level < super::spill::MAX_LEVEL => {
                let mut parts = Parts::new(opts)?;
                for b in batches {
                    parts.put(&b, key, level + 1)?;
                }
                let sub = Arc::new(parts.finish()?);
                by_parts(&sub, schema, key, level + 1, w, opts, out)?;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The rows of a window's input written by part (of their partition
/// key's hash).
struct Parts {
    w: super::spill::RunWriter,
}

impl Parts {
    fn new(opts: &QueryOptions) -> Result<Parts> {
        let spill = opts
            .spill
            .as_ref()
            .ok_or_else(|| Error::Internal("window: spilling without a spill".into()))?;
        Ok(Parts {
            w: spill.writer(OPERATOR, opts.profile.clone())?,
        })
    }

    /// Writes `batch`'s rows, each to the part at `level` of its key's
    /// hash.
    fn put(&mut self, batch: &RecordBatch, key: &[usize], level: u32) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        // Compared as the windows compare them (see `compute_sorted`).
        let cols: Vec<ArrayRef> = key
            .iter()
            .map(|&c| canonical_doubles(batch.column(c)))
            .collect();
        let conv = RowConverter::new(
            cols.iter()
                .map(|c| SortField::new(c.data_type().clone()))
                .collect(),
        )
        .map_err(exec_err)?;
        let rows = conv.convert_columns(&cols).map_err(exec_err)?;
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); super::spill::PARTS as usize];
        for r in 0..rows.num_rows() {
            let h = super::agg::hll::hash(rows.row(r).as_ref());
            members[super::spill::part_of(h, level) as usize].push(r as u32);
        }
        for (p, m) in members.into_iter().enumerate() {
            if m.is_empty() {
                continue;
            }
            let idx = UInt32Array::from(m);
            let b = arrow_select::take::take_record_batch(batch, &idx).map_err(exec_err)?;
            self.w.write(p as u32, &b)?;
        }
        Ok(())
    }

    fn finish(self) -> Result<super::spill::Run> {
        self.w.finish()
    }
}

/// The windows of `calls` over `batches` (all of a partition's rows
/// among them): the rows, then one column per call. Fails with the
/// memory error when the rows, their sorted copy and the values do not
/// fit.
fn compute(
    batches: &[RecordBatch],
    schema: &arrow_schema::SchemaRef,
    w: &WindowInput,
    opts: &QueryOptions,
) -> Result<RecordBatch> {
    // The rows in one batch, a sorted copy of them, and each call's
    // values.
    let rows = super::memory::batches_bytes(batches);
    let mut mem = opts.reserve(OPERATOR, rows)?;
    let batch = arrow_select::concat::concat_batches(schema, batches).map_err(exec_err)?;
    mem.grow(rows + 24 * batch.num_rows() as u64 * (1 + w.calls.len() as u64))?;
    let workers = crate::exec::worker_count(opts.threads);
    // A sort's rows are shared among the workers when each gets a few
    // morsels' worth (with the default morsels: `PARALLEL_ROWS`).
    let min_rows = opts
        .morsel_rows
        .map_or(PARALLEL_ROWS, |m| m.saturating_mul(4).min(PARALLEL_ROWS));
    let mut out: Vec<Option<ArrayRef>> = vec![None; w.calls.len()];
    for i in 0..w.calls.len() {
        if out[i].is_some() {
            continue;
        }
        let group: Vec<usize> = (i..w.calls.len())
            .filter(|&j| out[j].is_none() && w.calls[j].same_sort(&w.calls[i]))
            .collect();
        let calls: Vec<&WindowCall> = group.iter().map(|&j| &w.calls[j]).collect();
        let cols = compute_sorted(&batch, &calls, workers, min_rows, opts.stop.as_ref())?;
        for (j, c) in group.into_iter().zip(cols) {
            out[j] = Some(c);
        }
        opts.check_stop()?;
    }
    let mut columns = batch.columns().to_vec();
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    for (k, (c, call)) in out.into_iter().zip(&w.calls).enumerate() {
        let c = c.ok_or_else(|| Error::Internal("a window call was not computed".into()))?;
        if c.data_type() != &call.data_type {
            return Err(Error::Internal(format!(
                "window {} made {} values, not {}",
                call.name,
                c.data_type(),
                call.data_type
            )));
        }
        fields.push(Field::new(format!("w{k}"), call.data_type.clone(), true));
        columns.push(c);
    }
    Ok(RecordBatch::try_new_with_options(
        Arc::new(ArrowSchema::new(fields)),
        columns,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )?)
}

/// The values of `calls` (which share their PARTITION BY and ORDER BY)
/// over `batch`, each in the batch's row order.
fn compute_sorted(
    batch: &RecordBatch,
    calls: &[&WindowCall],
    workers: usize,
    min_rows: usize,
    stop: Option<&super::Stop>,
) -> Result<Vec<ArrayRef>> {
    let n = batch.num_rows();
    let first = calls[0];
    // Doubles as the engine compares them: -0 is 0, every NaN one NaN
    // (greater than every number).
    let col = |c: usize| canonical_doubles(batch.column(c));
    let part_cols: Vec<ArrayRef> = first.partition.iter().map(|&c| col(c)).collect();
    let order_cols: Vec<ArrayRef> = first.order.iter().map(|k| col(k.column)).collect();
    let order_fields: Vec<SortField> = first
        .order
        .iter()
        .map(|k| {
            SortField::new_with_options(
                batch.column(k.column).data_type().clone(),
                SortOptions {
                    descending: k.descending,
                    nulls_first: k.nulls_first,
                },
            )
        })
        .collect();
    let part_fields: Vec<SortField> = part_cols
        .iter()
        .map(|c| SortField::new(c.data_type().clone()))
        .collect();
    // The sort's key: partition then order columns in one row format.
    let mut all_fields = part_fields.clone();
    all_fields.extend(order_fields.iter().cloned());
    let mut all_cols = part_cols.clone();
    all_cols.extend(order_cols.iter().cloned());
    let sort_rows = Key::of(all_fields, &all_cols)?;
    let part_rows = Key::of(part_fields, &part_cols)?;
    let order_rows = Key::of(order_fields, &order_cols)?;

    // Buckets by the partition key's hash: a partition is in one bucket.
    let buckets = if first.partition.is_empty() || n < min_rows || workers < 2 {
        1
    } else {
        workers
    };
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); buckets];
    if buckets == 1 {
        members[0] = (0..n as u32).collect();
    } else {
        use std::hash::BuildHasher;
        let state = foldhash::fast::FixedState::with_seed(0x5eed);
        for r in 0..n {
            let h = state.hash_one(part_rows.bytes(r));
            members[(h % buckets as u64) as usize].push(r as u32);
        }
    }
    let ctx = Ctx {
        batch,
        sort_rows: &sort_rows,
        part_rows: &part_rows,
        order_rows: &order_rows,
        calls,
        stop,
    };
    let results: Vec<Result<(Vec<u32>, Vec<ArrayRef>)>> = if buckets == 1 {
        members.into_iter().map(|m| ctx.bucket(m)).collect()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = members
                .into_iter()
                .map(|m| {
                    let ctx = &ctx;
                    s.spawn(move || ctx.bucket(m))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::Internal("a window worker panicked".into())))
                })
                .collect()
        })
    };
    // Back to the rows' places: the buckets' values concatenated, then
    // taken by each row's place among them.
    let mut place = vec![0u32; n];
    let mut per_call: Vec<Vec<ArrayRef>> = vec![Vec::new(); calls.len()];
    let mut at = 0u32;
    for r in results {
        let (rows, vals) = r?;
        for &row in &rows {
            place[row as usize] = at;
            at += 1;
        }
        for (k, v) in vals.into_iter().enumerate() {
            per_call[k].push(v);
        }
    }
    let place = UInt32Array::from(place);
    per_call
        .into_iter()
        .zip(calls)
        .map(|(parts, call)| {
            let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
            let all = if refs.is_empty() {
                arrow_array::new_empty_array(&call.data_type)
            } else {
                arrow_select::concat::concat(&refs).map_err(exec_err)?
            };
            arrow_select::take::take(all.as_ref(), &place, None).map_err(exec_err)
        })
        .collect()
}

/// A sort key of every row in the row format (`None`: no key, every
/// row's the same).
struct Key(Option<Rows>);

impl Key {
    fn of(fields: Vec<SortField>, cols: &[ArrayRef]) -> Result<Self> {
        if cols.is_empty() {
            return Ok(Key(None));
        }
        let conv = RowConverter::new(fields).map_err(exec_err)?;
        Ok(Key(Some(conv.convert_columns(cols).map_err(exec_err)?)))
    }

    fn bytes(&self, r: usize) -> &[u8] {
        match &self.0 {
            Some(rows) => rows.row(r).data(),
            None => &[],
        }
    }

    fn cmp(&self, a: u32, b: u32) -> std::cmp::Ordering {
        match &self.0 {
            Some(rows) => rows.row(a as usize).cmp(&rows.row(b as usize)),
            None => std::cmp::Ordering::Equal,
        }
    }
}

/// Sorts a bucket's rows by their key (`sort_rows`), DuckDB's way: each
/// row's key becomes a 128-bit integer of its row-format bytes — of
/// fixed-width keys only the bytes that differ between rows (an INT
/// partition key and a DECIMAL order key: a few bytes each), so that the
/// integers compare as the keys do and most sorts never read a key's
/// bytes again; otherwise the first 16 bytes, ties broken by the bytes.
///
/// When the integers are the whole keys, also returns them in the sorted
/// order and how many of their leading bits are the partition key's
/// (whose bytes come first in `key` and are `part_width` bytes): the
/// partition and peer bounds then need no key bytes read again (reading
/// them in sorted order is a cache miss a row).
fn sort_bucket(
    rows: &mut Vec<u32>,
    key: &Key,
    part_width: Option<usize>,
) -> Option<(Vec<u128>, u32)> {
    let all = key.0.as_ref()?;
    let &first = rows.first()?;
    let bytes = |r: u32| all.row(r as usize).data();
    let width = bytes(first).len();
    let fixed = rows.iter().all(|&r| bytes(r).len() == width);
    // Positions where some row's byte differs from the first row's.
    let varying: Vec<usize> = if fixed {
        let base = bytes(first);
        let mut differs = vec![false; width];
        for &r in rows.iter() {
            for (d, (a, b)) in differs.iter_mut().zip(bytes(r).iter().zip(base)) {
                *d |= a != b;
            }
        }
        (0..width).filter(|&i| differs[i]).collect()
    } else {
        (0..width.min(16)).collect()
    };
    let exact = fixed && varying.len() <= 16;
    let take = varying.len().min(16);
    let mut keyed: Vec<(u128, u32)> = rows
        .iter()
        .map(|&r| {
            let b = bytes(r);
            let mut k = 0u128;
            for &p in &varying[..take] {
                k = (k << 8) | u128::from(b.get(p).copied().unwrap_or(0));
            }
            // Shorter keys (fewer than 16 positions) still compare
            // left-aligned.
            // (no varying byte: every key is one).
            (k.checked_shl(8 * (16 - take) as u32).unwrap_or(0), r)
        })
        .collect();
    if exact {
        keyed.sort_unstable_by_key(|x| x.0);
    } else {
        keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| bytes(a.1).cmp(bytes(b.1))));
    }
    for (slot, (_, r)) in rows.iter_mut().zip(&keyed) {
        *slot = *r;
    }
    let part_width = part_width?;
    if !exact {
        return None;
    }
    let part_bits = 8 * varying.iter().filter(|&&p| p < part_width).count() as u32;
    Some((keyed.into_iter().map(|x| x.0).collect(), part_bits))
}

/// What every bucket reads.
struct Ctx<'a> {
    batch: &'a RecordBatch,
    sort_rows: &'a Key,
    part_rows: &'a Key,
    order_rows: &'a Key,
    calls: &'a [&'a WindowCall],
    /// A query canceled or past its time limit stops between calls.
    stop: Option<&'a super::Stop>,
}

/// One bucket's rows in (partition, order) order, with where each row's
/// partition and peer group begin and end (positions in that order).
struct Sorted {
    rows: Vec<u32>,
    part_start: Vec<u32>,
    part_end: Vec<u32>,
    peer_start: Vec<u32>,
    peer_end: Vec<u32>,
    /// Each position's peer group, counted over the bucket.
    group: Vec<u32>,
    /// Where each peer group starts (one more entry: the end).
    group_start: Vec<u32>,
}

impl Ctx<'_> {
    fn bucket(&self, mut rows: Vec<u32>) -> Result<(Vec<u32>, Vec<ArrayRef>)> {
        let (p, o) = (self.part_rows, self.order_rows);
        // The partition key's width, when every row's is the same.
        let part_width = match rows.first() {
            None => None,
            Some(&f) => {
                let w = p.bytes(f as usize).len();
                rows.iter()
                    .all(|&r| p.bytes(r as usize).len() == w)
                    .then_some(w)
            }
        };
        let keys = sort_bucket(&mut rows, self.sort_rows, part_width);
        let m = rows.len();
        let mut s = Sorted {
            part_start: vec![0; m],
            part_end: vec![0; m],
            peer_start: vec![0; m],
            peer_end: vec![0; m],
            group: vec![0; m],
            group_start: Vec::new(),
            rows,
        };
        let mut ps = 0usize;
        let mut gs = 0usize;
        for i in 0..=m {
            let (new_part, new_peer) = match &keys {
                _ if i == 0 => (false, false),
                _ if i == m => (true, true),
                Some((k, bits)) => {
                    let part = |x: u128| x.checked_shr(128 - bits).unwrap_or(0);
                    let np = *bits > 0 && part(k[i]) != part(k[i - 1]);
                    (np, np || k[i] != k[i - 1])
                }
                None => {
                    let np = p.cmp(s.rows[i], s.rows[i - 1]).is_ne();
                    (np, np || o.cmp(s.rows[i], s.rows[i - 1]).is_ne())
                }
            };
            if i > 0 && new_peer {
                for j in gs..i {
                    s.peer_start[j] = gs as u32;
                    s.peer_end[j] = i as u32;
                    s.group[j] = s.group_start.len() as u32;
                }
                s.group_start.push(gs as u32);
                gs = i;
            }
            if i > 0 && new_part {
                for j in ps..i {
                    s.part_start[j] = ps as u32;
                    s.part_end[j] = i as u32;
                }
                ps = i;
            }
        }
        s.group_start.push(m as u32);
        let vals = self
            .calls
            .iter()
            .map(|c| {
                if let Some(e) = self.stop.and_then(|s| s.error()) {
                    return Err(e);
                }
                self.call(c, &s)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((s.rows, vals))
    }

    /// One call's values in the bucket's sorted order.
    fn call(&self, c: &WindowCall, s: &Sorted) -> Result<ArrayRef> {
        let m = s.rows.len();
        let ints = |f: &dyn Fn(usize) -> i64| -> ArrayRef {
            let mut b = Int64Builder::with_capacity(m);
            (0..m).for_each(|i| b.append_value(f(i)));
            Arc::new(b.finish())
        };
        let (ps, pe) = (&s.part_start, &s.part_end);
        Ok(match &c.func {
            WinFunc::RowNumber => ints(&|i| (i - ps[i] as usize + 1) as i64),
            WinFunc::Rank => ints(&|i| (s.peer_start[i] - ps[i] + 1) as i64),
            WinFunc::DenseRank => ints(&|i| (s.group[i] - s.group[ps[i] as usize] + 1) as i64),
            WinFunc::PercentRank => {
                let mut b = Float64Builder::with_capacity(m);
                for i in 0..m {
                    let n = (pe[i] - ps[i]) as f64;
                    let r = (s.peer_start[i] - ps[i]) as f64;
                    b.append_value(if n > 1.0 { r / (n - 1.0) } else { 0.0 });
                }
                Arc::new(b.finish())
            }
            WinFunc::CumeDist => {
                let mut b = Float64Builder::with_capacity(m);
                for i in 0..m {
                    let n = (pe[i] - ps[i]) as f64;
                    b.append_value((s.peer_end[i] - ps[i]) as f64 / n);
                }
                Arc::new(b.finish())
            }
            WinFunc::Ntile(k) => {
                let k = *k as u64;
                ints(&|i| ntile((i - ps[i] as usize) as u64, (pe[i] - ps[i]) as u64, k))
            }
            WinFunc::Lag(off) => {
                let arg = self.batch.column(c.args[0]);
                let mut idx = Vec::with_capacity(m);
                let mut outside = Vec::with_capacity(m);
                for i in 0..m {
                    let j = (i as i64).checked_sub(*off).unwrap_or(-1);
                    if j >= ps[i] as i64 && j < pe[i] as i64 {
                        idx.push(Some(s.rows[j as usize]));
                        outside.push(false);
                    } else {
                        idx.push(None);
                        outside.push(true);
                    }
                }
                let got = take_rows(arg, idx)?;
                match c.args.get(1) {
                    None => got,
                    Some(&d) => {
                        let here: Vec<Option<u32>> = s.rows.iter().map(|&r| Some(r)).collect();
                        let dflt = take_rows(self.batch.column(d), here)?;
                        let mask = BooleanArray::from(outside);
                        arrow_select::zip::zip(&mask, &dflt, &got).map_err(exec_err)?
                    }
                }
            }
            WinFunc::FirstValue | WinFunc::LastValue | WinFunc::NthValue(_) => {
                let arg = self.batch.column(c.args[0]);
                let frames = Frames::new(self, c, s)?;
                let mut idx = Vec::with_capacity(m);
                for i in 0..m {
                    let (a, b) = frames.of(i);
                    let pick = match &c.func {
                        WinFunc::FirstValue => (a < b).then_some(a),
                        WinFunc::LastValue => (a < b).then(|| b - 1),
                        WinFunc::NthValue(n) => {
                            let at = a.saturating_add(*n as usize - 1);
                            (at < b).then_some(at)
                        }
                        _ => None,
                    };
                    idx.push(pick.map(|p| s.rows[p]));
                }
                take_rows(arg, idx)?
            }
            WinFunc::Agg(f) => {
                let frames = Frames::new(self, c, s)?;
                aggregate(*f, c, self.batch, s, &frames)?
            }
        })
    }
}

/// The bucket (1..=k) of `ntile(k)` of the row at `r` of a partition of
/// `n` rows: the first `n % k` buckets hold one row more.
fn ntile(r: u64, n: u64, k: u64) -> i64 {
    let (q, rem) = (n / k, n % k);
    let big = rem * (q + 1);
    (if r < big {
        r / (q + 1)
    } else {
        rem + (r - big) / q.max(1)
    } + 1) as i64
}

/// The type of a window sum of `t`: BIGINT for a sum of INT, as the
/// aggregate's, else a DECIMAL of 38 digits at `t`'s scale.
fn sum_type(t: &A) -> A {
    match t {
        A::Int8 | A::Int16 | A::Int32 => A::Int64,
        A::Decimal128(_, s) => A::Decimal128(38, *s),
        _ => A::Decimal128(38, 0),
    }
}

/// The values of `arg` at `idx` (NULL where `None`).
fn take_rows(arg: &ArrayRef, idx: Vec<Option<u32>>) -> Result<ArrayRef> {
    let idx = UInt32Array::from(idx);
    arrow_select::take::take(arg.as_ref(), &idx, None).map_err(exec_err)
}

/// The ORDER BY key of a RANGE frame with offsets, per sorted position.
enum RangeKey {
    Int(Vec<Option<i128>>, i128, i128),
    Float(Vec<Option<f64>>, f64, f64),
}

/// Each position's frame, `[start, end)` in the sorted positions.
struct Frames<'s> {
    frame: Frame,
    s: &'s Sorted,
    key: Option<RangeKey>,
    /// Per position, its partition's non-NULL keys (RANGE offsets).
    run: Vec<(u32, u32)>,
    descending: bool,
}

impl<'s> Frames<'s> {
    fn new(ctx: &Ctx, c: &WindowCall, s: &'s Sorted) -> Result<Self> {
        let frame = c.frame.clone();
        let offsets = |b: &Bound| match b {
            Bound::Preceding(o) | Bound::Following(o) => Some(o.clone()),
            _ => None,
        };
        let (lo, hi) = (offsets(&frame.start), offsets(&frame.end));
        let key = if frame.units == Units::Range && (lo.is_some() || hi.is_some()) {
            let k = c
                .order
                .first()
                .ok_or_else(|| Error::Internal("RANGE offset without ORDER BY".into()))?;
            let a = &canonical_doubles(ctx.batch.column(k.column));
            let at = |o: &Option<Offset>| match o {
                Some(Offset::Int(v)) => *v,
                Some(Offset::Count(v)) => *v as i128,
                _ => 0,
            };
            let atf = |o: &Option<Offset>| match o {
                Some(Offset::Float(v)) => *v,
                Some(Offset::Int(v)) => *v as f64,
                Some(Offset::Count(v)) => *v as f64,
                None => 0.0,
            };
            Some(match a.data_type() {
                A::Float64 => {
                    let v = a.as_primitive::<Float64Type>();
                    RangeKey::Float(
                        s.rows
                            .iter()
                            .map(|&r| (!v.is_null(r as usize)).then(|| v.value(r as usize)))
                            .collect(),
                        atf(&lo),
                        atf(&hi),
                    )
                }
                _ => {
                    let v = ints_of(a)?;
                    RangeKey::Int(
                        s.rows.iter().map(|&r| v[r as usize]).collect(),
                        at(&lo),
                        at(&hi),
                    )
                }
            })
        } else {
            None
        };
        // Per position, its partition's run of non-NULL keys (NULLs sort
        // at one end of a partition), found once a partition.
        let mut run = Vec::new();
        if let Some(key) = &key {
            let valid = |i: usize| match key {
                RangeKey::Int(k, ..) => k[i].is_some(),
                RangeKey::Float(k, ..) => k[i].is_some(),
            };
            run = vec![(0u32, 0u32); s.rows.len()];
            let mut i = 0;
            while i < s.rows.len() {
                let (ps, pe) = (s.part_start[i] as usize, s.part_end[i] as usize);
                let lead = (ps..pe).take_while(|&j| !valid(j)).count();
                let len = (ps + lead..pe).take_while(|&j| valid(j)).count();
                let r = ((ps + lead) as u32, (ps + lead + len) as u32);
                run[ps..pe].iter_mut().for_each(|x| *x = r);
                i = pe;
            }
        }
        Ok(Frames {
            frame,
            s,
            key,
            run,
            descending: c.order.first().is_some_and(|k| k.descending),
        })
    }

    /// The frame of position `i`: `[start, end)`, empty when end ≤ start.
    fn of(&self, i: usize) -> (usize, usize) {
        let s = self.s;
        let (ps, pe) = (s.part_start[i] as usize, s.part_end[i] as usize);
        let a = self.bound(&self.frame.start, i, true).clamp(ps, pe);
        let b = self.bound(&self.frame.end, i, false).clamp(ps, pe);
        (a, b.max(a))
    }

    fn bound(&self, b: &Bound, i: usize, start: bool) -> usize {
        let s = self.s;
        let (ps, pe) = (s.part_start[i] as usize, s.part_end[i] as usize);
        match (b, self.frame.units) {
            (Bound::UnboundedPreceding, _) => ps,
            (Bound::UnboundedFollowing, _) => pe,
            (Bound::CurrentRow, Units::Rows) => {
                if start {
                    i
                } else {
                    i + 1
                }
            }
            (Bound::CurrentRow, _) => {
                if start {
                    s.peer_start[i] as usize
                } else {
                    s.peer_end[i] as usize
                }
            }
            (Bound::Preceding(o) | Bound::Following(o), Units::Rows) => {
                let k = count(o);
                let base = if start { i } else { i + 1 };
                if matches!(b, Bound::Preceding(_)) {
                    base.saturating_sub(k).max(ps)
                } else {
                    base.saturating_add(k).min(pe)
                }
            }
            (Bound::Preceding(o) | Bound::Following(o), Units::Groups) => {
                let k = count(o) as i64;
                let g = s.group[i] as i64;
                let first = s.group[ps] as i64;
                let last = s.group[pe - 1] as i64;
                let target = if matches!(b, Bound::Preceding(_)) {
                    g - k
                } else {
                    g.saturating_add(k)
                };
                if start {
                    if target < first {
                        ps
                    } else if target > last {
                        pe
                    } else {
                        s.group_start[target as usize] as usize
                    }
                } else if target < first {
                    ps
                } else if target > last {
                    pe
                } else {
                    s.group_start[target as usize + 1] as usize
                }
            }
            (Bound::Preceding(_) | Bound::Following(_), Units::Range) => {
                self.range_bound(i, matches!(b, Bound::Preceding(_)), start)
            }
        }
    }

    /// A RANGE offset bound: the first position (after the current
    /// row's key moved by the offset) whose key is past it; a row whose
    /// key is NULL frames its NULL peers.
    fn range_bound(&self, i: usize, preceding: bool, start: bool) -> usize {
        let s = self.s;
        let (rs, re) = self
            .run
            .get(i)
            .map_or((i, i), |&(a, b)| (a as usize, b as usize));
        let desc = self.descending;
        // In the sort's direction, the target is key − offset (PRECEDING)
        // or key + offset (FOLLOWING); descending flips the sign.
        let toward_smaller = preceding != desc;
        match &self.key {
            Some(RangeKey::Int(k, lo, hi)) => {
                let Some(v) = k[i] else {
                    return if start {
                        s.peer_start[i] as usize
                    } else {
                        s.peer_end[i] as usize
                    };
                };
                let off = if start { *lo } else { *hi };
                let t = if toward_smaller {
                    v.saturating_sub(off)
                } else {
                    v.saturating_add(off)
                };
                first_past(&k[rs..re], |x| {
                    // Before the bound: for a start, keys "before" t;
                    // for an end, keys not after t.
                    let ord = if desc { t.cmp(&x) } else { x.cmp(&t) };
                    if start {
                        ord == std::cmp::Ordering::Less
                    } else {
                        ord != std::cmp::Ordering::Greater
                    }
                }) + rs
            }
            Some(RangeKey::Float(k, lo, hi)) => {
                let Some(v) = k[i] else {
                    return if start {
                        s.peer_start[i] as usize
                    } else {
                        s.peer_end[i] as usize
                    };
                };
                let off = if start { *lo } else { *hi };
                let t = if toward_smaller { v - off } else { v + off };
                first_past(&k[rs..re], |x| {
                    let ord = if desc {
                        t.total_cmp(&x)
                    } else {
                        x.total_cmp(&t)
                    };
                    if start {
                        ord == std::cmp::Ordering::Less
                    } else {
                        ord != std::cmp::Ordering::Greater
                    }
                }) + rs
            }
            None => i,
        }
    }
}

/// Among a partition's sorted non-NULL keys, the place of the first for
/// which `before` is false (a binary search).
fn first_past<T: Copy>(keys: &[Option<T>], before: impl Fn(T) -> bool) -> usize {
    keys.partition_point(|k| k.is_some_and(&before))
}

fn count(o: &Offset) -> usize {
    match o {
        Offset::Count(v) => usize::try_from(*v).unwrap_or(usize::MAX),
        _ => 0,
    }
}

/// Integers and decimals as unscaled 128-bit values.
fn ints_of(a: &ArrayRef) -> Result<Vec<Option<i128>>> {
    Ok(match a.data_type() {
        A::Int32 => a
            .as_primitive::<Int32Type>()
            .iter()
            .map(|v| v.map(i128::from))
            .collect(),
        A::Int64 => a
            .as_primitive::<Int64Type>()
            .iter()
            .map(|v| v.map(i128::from))
            .collect(),
        A::Decimal128(..) => a.as_primitive::<Decimal128Type>().iter().collect(),
        other => {
            return Err(Error::Internal(format!(
                "a window over {other} as integers"
            )));
        }
    })
}

/// An aggregate over each position's frame.
fn aggregate(
    f: AggFunc,
    c: &WindowCall,
    batch: &RecordBatch,
    s: &Sorted,
    frames: &Frames,
) -> Result<ArrayRef> {
    let m = s.rows.len();
    let arg = c.args.first().map(|&a| batch.column(a).clone());
    // Non-NULL arguments before each position.
    let mut seen = vec![0u64; m + 1];
    if let Some(a) = &arg {
        for (i, &r) in s.rows.iter().enumerate() {
            seen[i + 1] = seen[i] + u64::from(a.is_valid(r as usize));
        }
    }
    let counted = |a: usize, b: usize| seen[b] - seen[a];
    match f {
        AggFunc::CountStar | AggFunc::Count => {
            let mut out = Int64Builder::with_capacity(m);
            for i in 0..m {
                let (a, b) = frames.of(i);
                out.append_value(if f == AggFunc::CountStar {
                    (b - a) as i64
                } else {
                    counted(a, b) as i64
                });
            }
            Ok(Arc::new(out.finish()))
        }
        AggFunc::Sum | AggFunc::Avg => {
            let a = arg.ok_or_else(|| Error::Internal("sum without argument".into()))?;
            if matches!(a.data_type(), A::Float64) {
                let v = a.as_primitive::<Float64Type>();
                let vals: Vec<f64> = s
                    .rows
                    .iter()
                    .map(|&r| {
                        if v.is_valid(r as usize) {
                            v.value(r as usize)
                        } else {
                            0.0
                        }
                    })
                    .collect();
                let mut odd = vec![0u64; m + 1];
                for (i, x) in vals.iter().enumerate() {
                    odd[i + 1] = odd[i] + u64::from(!x.is_finite());
                }
                // Frames from the partition's start: a running sum, in
                // row order as PostgreSQL adds; others: a segment tree.
                let running = frames.frame.start == Bound::UnboundedPreceding;
                let mut pre = vec![0.0f64; if running { m + 1 } else { 0 }];
                if running {
                    for i in 0..m {
                        let from_start = i == s.part_start[i] as usize;
                        pre[i + 1] = if from_start {
                            vals[i]
                        } else {
                            pre[i] + vals[i]
                        };
                    }
                }
                let tree = (!running).then(|| Tree::new(vals, 0.0, |x: f64, y: f64| x + y));
                let mut out = Float64Builder::with_capacity(m);
                for i in 0..m {
                    let (a, b) = frames.of(i);
                    let n = counted(a, b);
                    if n == 0 {
                        out.append_null();
                        continue;
                    }
                    let sum = match &tree {
                        Some(t) => t.fold(a, b),
                        None => pre[b],
                    };
                    if !sum.is_finite() && odd[b] == odd[a] {
                        return Err(Error::OutOfRange("value out of range: overflow".into()));
                    }
                    out.append_value(if f == AggFunc::Sum {
                        sum
                    } else {
                        sum / n as f64
                    });
                }
                return Ok(Arc::new(out.finish()));
            }
            let scale = match a.data_type() {
                A::Decimal128(_, s) => *s,
                _ => 0,
            };
            let v = ints_of(&a)?;
            let mut pre = vec![0i128; m + 1];
            for (i, &r) in s.rows.iter().enumerate() {
                pre[i + 1] = pre[i]
                    .checked_add(v[r as usize].unwrap_or(0))
                    .ok_or_else(|| {
                        Error::OutOfRange("numeric field overflow in a window sum".into())
                    })?;
            }
            if f == AggFunc::Sum {
                let (mut sums, mut seen) = (Vec::with_capacity(m), Vec::with_capacity(m));
                for i in 0..m {
                    let (a, b) = frames.of(i);
                    sums.push(pre[b] - pre[a]);
                    seen.push(counted(a, b) > 0);
                }
                super::agg::sum_array(sums, seen, &sum_type(a.data_type()))
            } else {
                let div = 10f64.powi(scale as i32);
                let mut out = Float64Builder::with_capacity(m);
                for i in 0..m {
                    let (a, b) = frames.of(i);
                    let n = counted(a, b);
                    out.append_option((n > 0).then(|| (pre[b] - pre[a]) as f64 / div / n as f64));
                }
                Ok(Arc::new(out.finish()))
            }
        }
        AggFunc::Min | AggFunc::Max => {
            let a = canonical_doubles(
                &arg.ok_or_else(|| Error::Internal("min without argument".into()))?,
            );
            let conv =
                RowConverter::new(vec![SortField::new(a.data_type().clone())]).map_err(exec_err)?;
            let rows = conv
                .convert_columns(std::slice::from_ref(&a))
                .map_err(exec_err)?;
            let max = f == AggFunc::Max;
            let leaves: Vec<Option<u32>> = s
                .rows
                .iter()
                .map(|&r| a.is_valid(r as usize).then_some(r))
                .collect();
            let better = |x: Option<u32>, y: Option<u32>| match (x, y) {
                (None, y) => y,
                (x, None) => x,
                (Some(p), Some(q)) => {
                    let o = rows.row(p as usize).cmp(&rows.row(q as usize));
                    if (o == std::cmp::Ordering::Greater) == max && o != std::cmp::Ordering::Equal {
                        Some(p)
                    } else {
                        Some(q)
                    }
                }
            };
            let tree = Tree::new(leaves, None, better);
            let idx: Vec<Option<u32>> = (0..m)
                .map(|i| {
                    let (a, b) = frames.of(i);
                    tree.fold(a, b)
                })
                .collect();
            take_rows(&a, idx)
        }
        other => Err(Error::Internal(format!("{other:?} over a window frame"))),
    }
}

/// A segment tree over the sorted positions: the fold of any range in
/// O(log n) steps.
struct Tree<T, F> {
    n: usize,
    nodes: Vec<T>,
    zero: T,
    op: F,
}

impl<T: Copy, F: Fn(T, T) -> T> Tree<T, F> {
    fn new(leaves: Vec<T>, zero: T, op: F) -> Self {
        let n = leaves.len();
        let mut nodes = vec![zero; 2 * n];
        nodes[n..].copy_from_slice(&leaves);
        for i in (1..n).rev() {
            nodes[i] = op(nodes[2 * i], nodes[2 * i + 1]);
        }
        Tree { n, nodes, zero, op }
    }

    /// The fold of `[a, b)`, left to right.
    fn fold(&self, a: usize, b: usize) -> T {
        let (mut l, mut r) = (a + self.n, b + self.n);
        let (mut left, mut right) = (self.zero, self.zero);
        while l < r {
            if l & 1 == 1 {
                left = (self.op)(left, self.nodes[l]);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                right = (self.op)(self.nodes[r], right);
            }
            l >>= 1;
            r >>= 1;
        }
        (self.op)(left, right)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_folds_every_range_as_a_loop_does() {
        let v: Vec<i64> = (0..37).map(|i| (i * 7919) % 101 - 50).collect();
        let t = Tree::new(v.clone(), i64::MIN, |a: i64, b: i64| a.max(b));
        let s = Tree::new(v.clone(), 0, |a: i64, b: i64| a + b);
        for a in 0..=v.len() {
            for b in a..=v.len() {
                let want = v[a..b].iter().copied().max().unwrap_or(i64::MIN);
                assert_eq!(t.fold(a, b), want, "max of {a}..{b}");
                assert_eq!(s.fold(a, b), v[a..b].iter().sum::<i64>(), "sum of {a}..{b}");
            }
        }
    }

    #[test]
    fn a_bucket_sorts_as_its_key_bytes_compare() {
        use arrow_array::{Int32Array, StringArray};
        let mut x = 7u64;
        let mut next = |m: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        for round in 0..40 {
            let n = 1 + next(300) as usize;
            let spread = [1, 3, 1000, 1 << 30][round % 4];
            let ints: ArrayRef =
                Arc::new(Int32Array::from_iter((0..n).map(|_| {
                    (next(8) != 0).then(|| next(spread) as i32 - (spread / 2) as i32)
                })));
            let texts: ArrayRef = Arc::new(StringArray::from_iter(
                (0..n).map(|_| (next(5) != 0).then(|| "ab".repeat(next(12) as usize))),
            ));
            let cols: Vec<ArrayRef> = if round % 3 == 0 {
                vec![ints.clone()]
            } else {
                vec![ints.clone(), texts.clone()]
            };
            let fields = cols
                .iter()
                .map(|c| {
                    SortField::new_with_options(
                        c.data_type().clone(),
                        SortOptions {
                            descending: round % 2 == 1,
                            nulls_first: round % 5 == 0,
                        },
                    )
                })
                .collect();
            let key = Key::of(fields, &cols).unwrap();
            let mut rows: Vec<u32> = (0..n as u32).collect();
            sort_bucket(&mut rows, &key, None);
            let mut sorted = rows.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..n as u32).collect::<Vec<_>>(), "a permutation");
            for w in rows.windows(2) {
                assert!(
                    key.cmp(w[0], w[1]).is_le(),
                    "round {round}: rows out of order"
                );
            }
        }
    }

    #[test]
    fn first_past_finds_the_bound_by_binary_search() {
        let k = [Some(1), Some(3), Some(3), Some(7)];
        assert_eq!(first_past(&k, |x| x < 3), 1);
        assert_eq!(first_past(&k, |x| x <= 3), 3);
        assert_eq!(first_past(&k, |x| x < 100), 4);
        assert_eq!(first_past(&k, |x| x < 0), 0);
    }
}
