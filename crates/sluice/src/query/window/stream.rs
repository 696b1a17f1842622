//! Windows of one partition (no PARTITION BY) past the memory limit:
//! the rows are sorted by the calls' ORDER BY through disk (the external
//! sort of `sort.rs`) and the windows computed as the sorted rows stream
//! by, a chunk of about an eighth of the limit at a time, each chunk's
//! rows and values handed to the window's output (which writes them to
//! disk past half the limit).
//!
//! Each call is computed in one of four ways ([`Kind`]); a call none of
//! them covers (a frame that reaches back or ahead without bound in some
//! other way, a function over a frame the carried state cannot give)
//! leaves the window refused at the memory limit, as before:
//! - a frame of rows a bounded distance away (`ROWS BETWEEN 3 PRECEDING
//!   AND 1 FOLLOWING`, `lag`, `lead`): the in-memory code over the chunk
//!   with the rows before and after it that the frames reach;
//! - ranks and positions (`row_number`, `rank`, `dense_rank`, `ntile`,
//!   `percent_rank`, `cume_dist`): from the rows and peer groups before
//!   the chunk and the count of all rows;
//! - an aggregate from the first row to the current one (or its last
//!   peer): its state (count, exact sum, running double sum, best value)
//!   carried from chunk to chunk, added in row order as in memory;
//! - an aggregate over every row (`OVER ()`, `UNBOUNDED FOLLOWING`):
//!   computed over the input before it is sorted.

use std::sync::Arc;

use arrow_array::builder::{ArrayBuilder, Float64Builder, Int64Builder};
use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array};
use arrow_row::{OwnedRow, RowConverter, Rows, SortField};
use arrow_schema::{DataType as A, Field, Schema as ArrowSchema, SchemaRef, SortOptions};

use super::{OPERATOR, Out, compute_sorted, ints_of, ntile, sum_type};
use crate::error::{Error, Result};
use crate::query::QueryOptions;
use crate::query::agg::AggFunc;
use crate::query::expr::{canonical_doubles, exec_err};
use crate::query::join::Piece;
use crate::query::memory::{Reservation, batch_bytes, batches_bytes};
use crate::query::plan::SortKey;
use crate::query::plan::window::{Bound, Offset, Units, WinFunc, WindowCall, WindowInput};

/// How one call is computed as the rows stream by.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// By the in-memory code over the chunk and the rows around it that
    /// its frames reach.
    Local,
    /// From the rows and peer groups before the chunk.
    Rank,
    /// An aggregate from the first row to the current one, or to its last
    /// peer (`peers`), its state carried from chunk to chunk.
    Running { peers: bool },
    /// An aggregate over every row.
    Whole,
}

/// How a window's calls are computed as their rows stream by (see
/// [`plan`]).
#[derive(Debug)]
pub(super) struct Streamed {
    kinds: Vec<Kind>,
    /// The ORDER BY the rows stream in (empty: as they come).
    order: Vec<SortKey>,
    /// Rows before and after a chunk that its local frames reach.
    before: usize,
    after: usize,
}

impl Streamed {
    /// Whether a chunk must end where a peer group does (a value reads
    /// the current row's last peer).
    fn peer_ends(&self, calls: &[WindowCall]) -> bool {
        !self.order.is_empty()
            && self.kinds.iter().zip(calls).any(|(k, c)| match k {
                Kind::Running { peers } => *peers,
                Kind::Rank => c.func == WinFunc::CumeDist,
                _ => false,
            })
    }
}

/// The rows a frame end a bounded distance away reaches (before, after).
fn reach(b: &Bound) -> Option<(usize, usize)> {
    let n = |o: &Offset| match o {
        Offset::Count(v) => usize::try_from(*v).ok(),
        _ => None,
    };
    match b {
        Bound::Preceding(o) => Some((n(o)?, 0)),
        Bound::CurrentRow => Some((0, 0)),
        Bound::Following(o) => Some((0, n(o)?)),
        _ => None,
    }
}

/// How `w`'s calls stream, or `None` when one of them cannot (or there
/// is a PARTITION BY: those windows spill by partition).
pub(super) fn plan(w: &WindowInput, schema: &ArrowSchema) -> Option<Streamed> {
    let (mut before, mut after) = (0usize, 0usize);
    let mut kinds = Vec::with_capacity(w.calls.len());
    for c in &w.calls {
        if !c.partition.is_empty() {
            return None;
        }
        let ordered = !c.order.is_empty();
        let f = &c.frame;
        // The frame's rows within a bounded distance: (before, after).
        let local = || -> Option<(usize, usize)> {
            if f.units != Units::Rows {
                return None;
            }
            let (a, b) = (reach(&f.start)?, reach(&f.end)?);
            Some((a.0.max(b.0), a.1.max(b.1)))
        };
        let kind = match &c.func {
            WinFunc::RowNumber
            | WinFunc::Rank
            | WinFunc::DenseRank
            | WinFunc::PercentRank
            | WinFunc::CumeDist
            | WinFunc::Ntile(_) => Kind::Rank,
            WinFunc::Lag(off) => {
                let d = usize::try_from(off.unsigned_abs()).ok()?;
                if *off >= 0 {
                    before = before.max(d);
                } else {
                    after = after.max(d);
                }
                Kind::Local
            }
            WinFunc::FirstValue | WinFunc::LastValue | WinFunc::NthValue(_) => {
                let (b, a) = local()?;
                before = before.max(b);
                after = after.max(a);
                Kind::Local
            }
            WinFunc::Agg(
                AggFunc::CountStar
                | AggFunc::Count
                | AggFunc::Sum
                | AggFunc::Avg
                | AggFunc::Min
                | AggFunc::Max,
            ) => {
                let from_first = f.start == Bound::UnboundedPreceding;
                let whole = (from_first && f.end == Bound::UnboundedFollowing)
                    || (!ordered
                        && f.units != Units::Rows
                        && matches!(f.start, Bound::UnboundedPreceding | Bound::CurrentRow)
                        && matches!(f.end, Bound::CurrentRow | Bound::UnboundedFollowing));
                if whole {
                    Kind::Whole
                } else if from_first && f.end == Bound::CurrentRow {
                    Kind::Running {
                        peers: ordered && f.units != Units::Rows,
                    }
                } else {
                    let (b, a) = local()?;
                    before = before.max(b);
                    after = after.max(a);
                    Kind::Local
                }
            }
            _ => return None,
        };
        if let (Kind::Running { .. } | Kind::Whole, Some(&a)) = (kind, c.args.first()) {
            let t = schema.fields().get(a)?.data_type();
            let sums = matches!(c.func, WinFunc::Agg(AggFunc::Sum | AggFunc::Avg));
            if sums && !matches!(t, A::Float64 | A::Int32 | A::Int64 | A::Decimal128(..)) {
                return None;
            }
        }
        kinds.push(kind);
    }
    // Every call but those over all rows in one order.
    let mut sorted = w
        .calls
        .iter()
        .zip(&kinds)
        .filter(|(_, k)| **k != Kind::Whole);
    let order = match sorted.next() {
        Some((first, _)) => {
            if !sorted.all(|(c, _)| c.same_sort(first)) {
                return None;
            }
            first.order.clone()
        }
        None => Vec::new(),
    };
    // An INTERVAL sorts by its length in days, its peers are equal
    // values: `1 mon` and `30 days` would interleave.
    for k in &order {
        if schema.fields().get(k.column)?.data_type() == &crate::query::interval::TYPE {
            return None;
        }
    }
    Some(Streamed {
        kinds,
        order,
        before,
        after,
    })
}

/// Computes `w`'s windows over the rows of `pieces` as `s` says, handing
/// the rows with their values to `out` in the ORDER BY's order.
pub(super) fn run(
    pieces: Vec<Piece>,
    pieces_held: Reservation,
    schema: &SchemaRef,
    w: &WindowInput,
    opts: &QueryOptions,
    s: Streamed,
    out: &mut Out,
) -> Result<()> {
    // The count of rows, and the aggregates over every row.
    let total: usize = pieces.iter().map(|p| p.rows()).sum();
    let mut totals: Vec<Option<ArrayRef>> = vec![None; w.calls.len()];
    if s.kinds.contains(&Kind::Whole) {
        let mut accs: Vec<Option<Acc>> = w
            .calls
            .iter()
            .zip(&s.kinds)
            .map(|(c, k)| (*k == Kind::Whole).then(|| Acc::new(c, schema)).transpose())
            .collect::<Result<_>>()?;
        for p in &pieces {
            opts.check_stop()?;
            let b = p.load()?;
            for (acc, c) in accs.iter_mut().zip(&w.calls) {
                if let Some(acc) = acc {
                    acc.run(arg(&b, c), b.num_rows(), &[])?;
                }
            }
        }
        for (t, (acc, c)) in totals.iter_mut().zip(accs.iter_mut().zip(&w.calls)) {
            if let Some(acc) = acc {
                *t = Some(acc.now(c)?);
            }
        }
    }
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    for (k, call) in w.calls.iter().enumerate() {
        fields.push(Field::new(format!("w{k}"), call.data_type.clone(), true));
    }
    let out_schema = Arc::new(ArrowSchema::new(fields));
    let mut st = Stream::new(
        w,
        opts,
        &s,
        totals,
        total,
        out_schema,
        schema.fields().len(),
    )?;
    // The rows with their positions (the sort's last key: ties keep the
    // order they came in).
    let mut at = 0u64;
    let mut positioned = |b: RecordBatch| -> Result<RecordBatch> {
        let n = b.num_rows() as u64;
        let mut cols = b.columns().to_vec();
        cols.push(Arc::new(arrow_array::UInt64Array::from_iter_values(
            at..at + n,
        )));
        at += n;
        let mut f: Vec<Field> = b
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        f.push(Field::new("position", A::UInt64, false));
        Ok(RecordBatch::try_new(Arc::new(ArrowSchema::new(f)), cols)?)
    };
    // (`pieces_held` counts the pieces in memory until they are taken.)
    if s.order.is_empty() {
        for p in pieces {
            opts.check_stop()?;
            st.push(positioned(p.load()?)?, out)?;
        }
        drop(pieces_held);
        return st.finish(out);
    }
    let sort = crate::query::sort::ExternalSort::new(&s.order, opts, None)
        .ok_or_else(|| Error::Internal("window: streamed without a memory limit".into()))?;
    // Rows in memory while they stay within an eighth of the limit (they
    // are held while the windows are computed); past it they are sorted
    // to disk as a run.
    let mut held: Vec<RecordBatch> = Vec::new();
    let mut held_mem = opts.reserve(OPERATOR, 0)?;
    let most = opts.memory.as_ref().map_or(0, |m| m.limit() / 8);
    for p in pieces {
        opts.check_stop()?;
        let b = positioned(p.load()?)?;
        let bytes = batch_bytes(&b);
        if sort.should_spill(bytes)
            || held_mem.bytes() + bytes > most
            || held_mem.grow(bytes).is_err()
        {
            held.push(b);
            sort.spill(&held)?;
            held.clear();
            held_mem.resize(0)?;
        } else {
            held.push(b);
        }
    }
    drop(pieces_held);
    sort.merge(&held, 0, None, &mut |b| st.push(b, out))?;
    drop(held);
    drop(held_mem);
    st.finish(out)
}

/// The argument column of call `c` in `b` (none for `count(*)`).
fn arg<'b>(b: &'b RecordBatch, c: &WindowCall) -> Option<&'b ArrayRef> {
    c.args.first().map(|&a| b.column(a))
}

fn arg_type(c: &WindowCall, schema: &ArrowSchema) -> A {
    c.args
        .first()
        .and_then(|&a| schema.fields().get(a))
        .map_or(A::Null, |f| f.data_type().clone())
}

/// The sorted rows not yet computed, and what the chunks before them
/// leave to the next.
struct Stream<'a> {
    w: &'a WindowInput,
    opts: &'a QueryOptions,
    s: &'a Streamed,
    peer_ends: bool,
    /// Each call's value over every row (`Kind::Whole`).
    totals: Vec<Option<ArrayRef>>,
    /// Rows in all.
    total: u64,
    /// The output's schema: the input's columns, then one per call.
    out_schema: SchemaRef,
    /// Sorted rows not yet computed (positions last).
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    /// The last rows computed, which the next chunk's frames may reach.
    left: Option<RecordBatch>,
    /// The bytes of `pending` and `left`.
    held: Reservation,
    /// Rows in a chunk (set by the first rows' size).
    target: usize,
    /// `pending_rows` at which a chunk is looked for next (after a look
    /// found no peer group's end).
    next_try: usize,
    /// Rows computed so far.
    done: u64,
    /// Peer groups begun so far, and where the last began.
    groups: u64,
    group_start: u64,
    /// The ORDER BY key of the last row computed.
    last_key: Option<OwnedRow>,
    conv: Option<RowConverter>,
    /// The carried state of each running aggregate.
    accs: Vec<Option<Acc>>,
    /// The local calls, ties broken by position (their order is then
    /// the stream's).
    local: Vec<WindowCall>,
    /// The pending rows' schema (positions last), once rows came.
    schema: Option<SchemaRef>,
    /// A peer group of more rows than a chunk, on disk until its end.
    parked: Option<Parked>,
    /// The peer group whose rows come back from disk, its end known.
    known: Option<Known>,
}

/// The rows of a peer group too large for a chunk, written to disk until
/// a row of another group (or the end) says where it ends: a running
/// aggregate by peers, and `cume_dist`, read the group's last row.
struct Parked {
    w: crate::query::spill::RunWriter,
    rows: u64,
    /// The running aggregates' states from the group's first row on.
    accs: Vec<Option<Acc>>,
    key: OwnedRow,
}

/// A peer group read back from disk: where it ends (rows before its
/// end, over all), and each running aggregate by peers at its end.
struct Known {
    key: OwnedRow,
    end: u64,
    snap: Vec<Option<ArrayRef>>,
}

impl<'a> Stream<'a> {
    fn new(
        w: &'a WindowInput,
        opts: &'a QueryOptions,
        s: &'a Streamed,
        totals: Vec<Option<ArrayRef>>,
        total: usize,
        out_schema: SchemaRef,
        input: usize,
    ) -> Result<Stream<'a>> {
        let accs = w
            .calls
            .iter()
            .zip(&s.kinds)
            .map(|(c, k)| match k {
                Kind::Running { .. } => Acc::new(c, &out_schema).map(Some),
                _ => Ok(None),
            })
            .collect::<Result<_>>()?;
        let local = w
            .calls
            .iter()
            .zip(&s.kinds)
            .filter(|(_, k)| **k == Kind::Local)
            .map(|(c, _)| {
                let mut c = c.clone();
                c.order.push(SortKey {
                    column: input,
                    descending: false,
                    nulls_first: false,
                });
                c
            })
            .collect();
        Ok(Stream {
            w,
            opts,
            s,
            peer_ends: s.peer_ends(&w.calls),
            totals,
            total: total as u64,
            out_schema,
            pending: Vec::new(),
            pending_rows: 0,
            left: None,
            held: opts.reserve(OPERATOR, 0)?,
            target: 0,
            next_try: 0,
            done: 0,
            groups: 0,
            group_start: 0,
            last_key: None,
            conv: None,
            accs,
            local,
            schema: None,
            parked: None,
            known: None,
        })
    }

    /// Takes sorted rows (positions last); computes the chunks they
    /// complete.
    fn push(&mut self, b: RecordBatch, out: &mut Out) -> Result<()> {
        if b.num_rows() == 0 {
            return Ok(());
        }
        self.opts.check_stop()?;
        if self.target == 0 {
            // A chunk's work about an eighth of the limit (see
            // `Stream::chunk`).
            let limit = self.opts.memory.as_ref().map_or(64 << 20, |m| m.limit());
            let per_row = 3 * (batch_bytes(&b) / b.num_rows() as u64).max(1)
                + 24 * (1 + self.w.calls.len() as u64);
            self.target = usize::try_from((limit / 8) / per_row)
                .unwrap_or(usize::MAX)
                .max(1);
            self.next_try = self.target + self.s.after;
        }
        if self.schema.is_none() {
            self.schema = Some(b.schema());
        }
        // A large batch (rows held in memory before the sort) a chunk's
        // rows at a time.
        if b.num_rows() > self.target.max(1024) {
            let mut at = 0;
            while at < b.num_rows() {
                let len = self.target.max(1024).min(b.num_rows() - at);
                self.push(b.slice(at, len), out)?;
                at += len;
            }
            return Ok(());
        }
        let bytes = batch_bytes(&b);
        with_room(out, || self.held.grow(bytes))?;
        self.pending_rows += b.num_rows();
        self.pending.push(b);
        while self.pending_rows >= self.next_try {
            if !self.chunk(false, out)? {
                // No peer group ends among them: wait for a chunk's
                // worth more.
                self.next_try = self.pending_rows + self.target;
            }
        }
        Ok(())
    }

    /// Computes what is left.
    fn finish(mut self, out: &mut Out) -> Result<()> {
        while self.pending_rows > 0 || self.parked.is_some() {
            self.chunk(true, out)?;
        }
        Ok(())
    }

    /// Writes `batch` (every pending row, of the peer group `key`) to
    /// disk, its rows added to the parked running aggregates.
    fn park(&mut self, batch: &RecordBatch, key: OwnedRow) -> Result<()> {
        if self.parked.is_none() {
            let spill = self
                .opts
                .spill
                .as_ref()
                .ok_or_else(|| Error::Internal("window: spilling without a spill".into()))?;
            self.parked = Some(Parked {
                w: spill.writer(OPERATOR, self.opts.profile.clone())?,
                rows: 0,
                accs: self.accs.clone(),
                key,
            });
        }
        let p = self
            .parked
            .as_mut()
            .ok_or_else(|| Error::Internal("window: no parked group".into()))?;
        let n = batch.num_rows();
        for (acc, call) in p.accs.iter_mut().zip(&self.w.calls) {
            if let Some(acc) = acc {
                acc.run(arg(batch, call), n, &[])?;
            }
        }
        let mut at = 0;
        while at < n {
            let len = self.target.min(n - at);
            p.w.write(0, &batch.slice(at, len))?;
            at += len;
        }
        p.rows += n as u64;
        self.pending.clear();
        self.pending_rows = 0;
        self.next_try = self.target + self.s.after;
        self.held.resize(self.left.as_ref().map_or(0, batch_bytes))
    }

    /// The parked group ends at row `b` of `batch` (the pending rows):
    /// its rows are read back and computed, then the pending rows.
    fn unpark(&mut self, batch: RecordBatch, b: usize, out: &mut Out) -> Result<()> {
        let Some(p) = self.parked.take() else {
            return Ok(());
        };
        let mut accs = p.accs;
        let head = batch.slice(0, b);
        let mut snap = Vec::with_capacity(accs.len());
        for ((acc, call), kind) in accs.iter_mut().zip(&self.w.calls).zip(&self.s.kinds) {
            snap.push(match (acc, kind) {
                (Some(acc), Kind::Running { peers: true }) => {
                    acc.run(arg(&head, call), b, &[])?;
                    Some(acc.now(call)?)
                }
                _ => None,
            });
        }
        self.known = Some(Known {
            key: p.key,
            end: self.done + p.rows + b as u64,
            snap,
        });
        let run = p.w.finish()?;
        self.pending.clear();
        self.pending_rows = 0;
        for f in run.frames().to_vec() {
            let rows = run.read(&f)?;
            with_room(out, || self.held.grow(batch_bytes(&rows)))?;
            self.pending_rows += rows.num_rows();
            self.pending.push(rows);
            while self.pending_rows >= self.target + self.s.after {
                if !self.chunk(false, out)? {
                    break;
                }
            }
        }
        if batch.num_rows() > 0 {
            with_room(out, || self.held.grow(batch_bytes(&batch)))?;
            self.pending_rows += batch.num_rows();
            self.pending.push(batch);
        }
        self.next_try = self.target + self.s.after;
        Ok(())
    }

    /// Computes the next chunk of the pending rows; `false` when none
    /// can be cut yet (every row, when `last`).
    fn chunk(&mut self, last: bool, out: &mut Out) -> Result<bool> {
        let Some(schema) = self.schema.clone() else {
            return Ok(false);
        };
        let batch =
            arrow_select::concat::concat_batches(&schema, &self.pending).map_err(exec_err)?;
        let n = batch.num_rows();
        let keys = self.keys(&batch)?;
        let new_peer = |i: usize| match &keys {
            None => false,
            Some(k) => i > 0 && k.row(i) != k.row(i - 1),
        };
        // A parked group: its rows go to disk until one of another
        // group comes.
        if let (Some(p), Some(k)) = (&self.parked, &keys) {
            match (0..n).find(|&i| k.row(i) != p.key.row()) {
                None if !last => {
                    let key = p.key.clone();
                    self.park(&batch, key)?;
                }
                end => {
                    drop(keys);
                    self.unpark(batch, end.unwrap_or(n), out)?;
                }
            }
            return Ok(true);
        }
        // The rows of a group read back from disk: cut anywhere in it.
        let in_group = match (&self.known, &keys) {
            (Some(g), Some(k)) => (0..n).find(|&i| k.row(i) != g.key.row()).unwrap_or(n),
            _ => 0,
        };
        if in_group == 0 {
            self.known = None;
        }
        let after = self.s.after;
        let cut = if last {
            Some(n)
        } else if in_group > 0 {
            let c = self.target.min(in_group);
            (c + after <= n).then_some(c)
        } else if !self.peer_ends {
            (self.target + after <= n).then_some(self.target)
        } else {
            // A peer group ends at `i` only where row `i` is here (and
            // the rows after it that frames reach).
            let hi = n.saturating_sub(after);
            match (self.target.max(1)..hi).find(|&i| new_peer(i)) {
                Some(c) => Some(c),
                None if n >= 2 * self.target => match (1..hi).rev().find(|&i| new_peer(i)) {
                    // A smaller chunk: what follows is a large group.
                    Some(c) => Some(c),
                    // One group: on disk until it ends.
                    None if !(hi.max(1)..n).any(new_peer) => {
                        if let Some(k) = &keys {
                            let key = k.row(0).owned();
                            self.park(&batch, key)?;
                            return Ok(true);
                        }
                        None
                    }
                    None => None,
                },
                None => None,
            }
        };
        let Some(c) = cut else {
            return Ok(false);
        };
        let in_group = in_group.min(c);
        // The chunk's work: the pending rows copied together, the chunk
        // with its context copied again, sorted keys and values (as the
        // in-memory window counts them).
        let around = (c + self.s.before + self.s.after.min(n - c)) as u64;
        let work = batch_bytes(&batch)
            + batch_bytes(&batch) / n.max(1) as u64 * around
            + 24 * around * (1 + self.w.calls.len() as u64);
        let _work = with_room(out, || self.opts.reserve(OPERATOR, work))?;
        let chunk = batch.slice(0, c);
        let mut values: Vec<Option<ArrayRef>> = vec![None; self.w.calls.len()];
        // Local frames: over the rows before, the chunk and after.
        if !self.local.is_empty() {
            let right = self.s.after.min(n - c);
            let around = batch.slice(0, c + right);
            let (input, skip) = match &self.left {
                Some(l) => (
                    arrow_select::concat::concat_batches(&schema, [l, &around])
                        .map_err(exec_err)?,
                    l.num_rows(),
                ),
                None => (around, 0),
            };
            let calls: Vec<&WindowCall> = self.local.iter().collect();
            let got = compute_sorted(&input, &calls, 1, usize::MAX, self.opts.stop.as_ref())?;
            let mut got = got.into_iter();
            for (v, k) in values.iter_mut().zip(&self.s.kinds) {
                if *k == Kind::Local {
                    let a = got
                        .next()
                        .ok_or_else(|| Error::Internal("a local window was not computed".into()))?;
                    *v = Some(a.slice(skip, c));
                }
            }
        }
        // Where each row's peer group begins and ends, within the chunk.
        let mut starts_group = vec![false; c];
        for (i, s) in starts_group.iter_mut().enumerate() {
            *s = match (&keys, i) {
                (None, _) => i == 0 && self.done == 0,
                (Some(k), 0) => self.last_key.as_ref().is_none_or(|l| l.row() != k.row(0)),
                _ => new_peer(i),
            };
        }
        let mut peer_end = vec![c; c];
        for i in (0..c.saturating_sub(1)).rev() {
            peer_end[i] = if new_peer(i + 1) {
                i + 1
            } else {
                peer_end[i + 1]
            };
        }
        // Ranks, from the rows and groups before.
        let (done, mut groups, mut group_start) = (self.done, self.groups, self.group_start);
        let mut rank = Vec::with_capacity(c);
        let mut dense = Vec::with_capacity(c);
        for (i, &s) in starts_group.iter().enumerate() {
            if s {
                groups += 1;
                group_start = done + i as u64;
            }
            rank.push(group_start + 1);
            dense.push(groups);
        }
        let ordered = keys.is_some();
        for (k, call) in self.w.calls.iter().enumerate() {
            if self.s.kinds[k] != Kind::Rank {
                continue;
            }
            let n_all = self.total;
            let a: ArrayRef = match &call.func {
                WinFunc::RowNumber => ints(c, |i| done as i64 + i as i64 + 1),
                WinFunc::Rank if ordered => ints(c, |i| rank[i] as i64),
                WinFunc::DenseRank if ordered => ints(c, |i| dense[i] as i64),
                WinFunc::Rank | WinFunc::DenseRank => ints(c, |_| 1),
                WinFunc::PercentRank => floats(c, |i| {
                    let r = if ordered { rank[i] - 1 } else { 0 };
                    if n_all > 1 {
                        r as f64 / (n_all - 1) as f64
                    } else {
                        0.0
                    }
                }),
                WinFunc::CumeDist => floats(c, |i| {
                    let end = match &self.known {
                        Some(g) if i < in_group => g.end,
                        _ if ordered => done + peer_end[i] as u64,
                        _ => n_all,
                    };
                    end as f64 / n_all as f64
                }),
                WinFunc::Ntile(b) => {
                    let b = *b as u64;
                    ints(c, |i| ntile(done + i as u64, n_all, b))
                }
                other => return Err(Error::Internal(format!("{other:?} as a rank"))),
            };
            values[k] = Some(a);
        }
        // Running aggregates: each row's frame ends at it, or at its
        // last peer.
        for (k, call) in self.w.calls.iter().enumerate() {
            let Kind::Running { peers } = self.s.kinds[k] else {
                continue;
            };
            let ends: Vec<usize> = if peers {
                peer_end.clone()
            } else {
                (1..=c).collect()
            };
            if let Some(acc) = &mut self.accs[k] {
                let mut v = acc.run(arg(&chunk, call), c, &ends)?;
                // A group read back from disk: its value at its end.
                if let (Some(g), true) = (&self.known, peers && in_group > 0) {
                    let at = g.snap[k].as_ref().ok_or_else(|| {
                        Error::Internal("a parked group without its value".into())
                    })?;
                    let same = UInt32Array::from(vec![0u32; in_group]);
                    let head =
                        arrow_select::take::take(at.as_ref(), &same, None).map_err(exec_err)?;
                    let tail = v.slice(in_group, c - in_group);
                    v = arrow_select::concat::concat(&[head.as_ref(), tail.as_ref()])
                        .map_err(exec_err)?;
                }
                values[k] = Some(v);
            }
        }
        // Over every row.
        let zeros = UInt32Array::from(vec![0u32; c]);
        for (v, t) in values.iter_mut().zip(&self.totals) {
            if let Some(t) = t {
                *v = Some(arrow_select::take::take(t.as_ref(), &zeros, None).map_err(exec_err)?);
            }
        }
        // The chunk's rows (without positions) and values, out.
        let mut columns = chunk.columns()[..chunk.num_columns() - 1].to_vec();
        for (k, v) in values.into_iter().enumerate() {
            let v = v.ok_or_else(|| Error::Internal("a window call was not computed".into()))?;
            if v.data_type() != &self.w.calls[k].data_type {
                return Err(Error::Internal(format!(
                    "window {} made {} values, not {}",
                    self.w.calls[k].name,
                    v.data_type(),
                    self.w.calls[k].data_type
                )));
            }
            columns.push(v);
        }
        out.put(RecordBatch::try_new_with_options(
            self.out_schema.clone(),
            columns,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(c)),
        )?)?;
        // What the next chunk reads.
        if let (Some(k), true) = (&keys, c > 0) {
            self.last_key = Some(k.row(c - 1).owned());
        }
        self.done += c as u64;
        self.groups = groups;
        self.group_start = group_start;
        if self.s.before > 0 {
            let tail = match self.left.take() {
                Some(l) => {
                    arrow_select::concat::concat_batches(&schema, [&l, &chunk]).map_err(exec_err)?
                }
                None => chunk,
            };
            let keep = self.s.before.min(tail.num_rows());
            self.left = Some(compact(&tail.slice(tail.num_rows() - keep, keep))?);
        }
        let rest = compact(&batch.slice(c, n - c))?;
        self.pending_rows = rest.num_rows();
        self.pending = if self.pending_rows > 0 {
            vec![rest]
        } else {
            Vec::new()
        };
        self.next_try = self.target + self.s.after;
        if in_group < c {
            self.known = None;
        }
        let held = batches_bytes(&self.pending) + self.left.as_ref().map_or(0, batch_bytes);
        self.held.resize(held)?;
        Ok(true)
    }

    /// The ORDER BY keys of `batch`'s rows (`None` without ORDER BY), as
    /// the in-memory window compares them.
    fn keys(&mut self, batch: &RecordBatch) -> Result<Option<Rows>> {
        if self.s.order.is_empty() {
            return Ok(None);
        }
        let cols: Vec<ArrayRef> = self
            .s
            .order
            .iter()
            .map(|k| canonical_doubles(batch.column(k.column)))
            .collect();
        if self.conv.is_none() {
            let fields = self
                .s
                .order
                .iter()
                .zip(&cols)
                .map(|(k, c)| {
                    SortField::new_with_options(
                        c.data_type().clone(),
                        SortOptions {
                            descending: k.descending,
                            nulls_first: k.nulls_first,
                        },
                    )
                })
                .collect();
            self.conv = Some(RowConverter::new(fields).map_err(exec_err)?);
        }
        match &self.conv {
            Some(conv) => Ok(Some(conv.convert_columns(&cols).map_err(exec_err)?)),
            None => Ok(None),
        }
    }
}

/// `f` (which reserves memory), again after the output kept in memory
/// is written to disk when it finds no room.
fn with_room<T>(out: &mut Out, mut f: impl FnMut() -> Result<T>) -> Result<T> {
    match f() {
        Err(Error::MemoryLimit { .. }) if out.holds() => {
            out.write_out()?;
            f()
        }
        r => r,
    }
}

/// A slice's rows in buffers of their own (a slice keeps its whole
/// batch alive).
fn compact(b: &RecordBatch) -> Result<RecordBatch> {
    crate::query::memory::owned_batch(b)
}

fn ints(n: usize, f: impl Fn(usize) -> i64) -> ArrayRef {
    let mut b = Int64Builder::with_capacity(n);
    (0..n).for_each(|i| b.append_value(f(i)));
    Arc::new(b.finish())
}

fn floats(n: usize, f: impl Fn(usize) -> f64) -> ArrayRef {
    let mut b = Float64Builder::with_capacity(n);
    (0..n).for_each(|i| b.append_value(f(i)));
    Arc::new(b.finish())
}

/// An aggregate's state from the first row on: what the in-memory
/// window's prefix sums, running double sum and segment tree give at
/// each frame's end, kept from one chunk to the next.
struct Acc {
    f: AggFunc,
    /// Rows, and non-NULL arguments, so far.
    rows: i64,
    valid: i64,
    /// The exact sum of integers and decimals (unscaled).
    int: i128,
    /// The running sum of doubles (`None` before the first row), and
    /// whether a non-finite double was added.
    flt: Option<f64>,
    odd: bool,
    /// The best value so far (`min`, `max`): its row-format key and the
    /// value (one row).
    best: Option<(OwnedRow, ArrayRef)>,
    conv: Option<RowConverter>,
    sum_type: A,
    /// The argument's values as last seen, no rows of them (the type of
    /// an aggregate over no more rows, see [`Acc::now`]).
    empty: Option<ArrayRef>,
}

impl Clone for Acc {
    /// (The converter is made again: rows of one are those of another.)
    fn clone(&self) -> Acc {
        Acc {
            f: self.f,
            rows: self.rows,
            valid: self.valid,
            int: self.int,
            flt: self.flt,
            odd: self.odd,
            best: self.best.clone(),
            conv: None,
            sum_type: self.sum_type.clone(),
            empty: self.empty.clone(),
        }
    }
}

impl Acc {
    fn new(c: &WindowCall, schema: &ArrowSchema) -> Result<Acc> {
        let WinFunc::Agg(f) = c.func else {
            return Err(Error::Internal(format!("{:?} as an aggregate", c.func)));
        };
        let t = arg_type(c, schema);
        Ok(Acc {
            f,
            rows: 0,
            valid: 0,
            int: 0,
            flt: None,
            odd: false,
            best: None,
            conv: None,
            sum_type: sum_type(&t),
            empty: None,
        })
    }

    /// The value over every row added so far.
    fn now(&mut self, c: &WindowCall) -> Result<ArrayRef> {
        match (self.empty.clone(), c.args.is_empty(), self.f) {
            (Some(a), _, _) => self.run(Some(&a), 0, &[0]),
            (None, true, _) => self.run(None, 0, &[0]),
            (None, false, AggFunc::Count) => Ok(Arc::new(arrow_array::Int64Array::from(vec![0]))),
            (None, false, _) => Ok(arrow_array::new_null_array(&c.data_type, 1)),
        }
    }

    /// Adds `n` rows of `arg`, and gives the value at each of `ends` (the
    /// state once the rows before `ends[i]` are added; non-decreasing).
    fn run(&mut self, arg: Option<&ArrayRef>, n: usize, ends: &[usize]) -> Result<ArrayRef> {
        if let Some(a) = arg {
            self.empty = Some(a.slice(0, 0));
        }
        let valid = |j: usize| arg.is_none_or(|a| a.is_valid(j));
        let mut j = 0usize;
        match self.f {
            AggFunc::CountStar | AggFunc::Count => {
                let mut out = Int64Builder::with_capacity(ends.len());
                for &e in ends.iter().chain([&n]) {
                    while j < e {
                        self.rows += 1;
                        self.valid += i64::from(valid(j));
                        j += 1;
                    }
                    if out.len() < ends.len() {
                        out.append_value(if self.f == AggFunc::CountStar {
                            self.rows
                        } else {
                            self.valid
                        });
                    }
                }
                Ok(Arc::new(out.finish()))
            }
            AggFunc::Sum | AggFunc::Avg if arg.is_some_and(|a| a.data_type() == &A::Float64) => {
                let a = arg.ok_or_else(|| Error::Internal("sum without argument".into()))?;
                let v = a.as_primitive::<Float64Type>();
                let mut out = Float64Builder::with_capacity(ends.len());
                for &e in ends.iter().chain([&n]) {
                    while j < e {
                        let x = if v.is_valid(j) { v.value(j) } else { 0.0 };
                        self.valid += i64::from(v.is_valid(j));
                        self.odd |= !x.is_finite();
                        self.flt = Some(match self.flt {
                            None => x,
                            Some(p) => p + x,
                        });
                        j += 1;
                    }
                    if out.len() == ends.len() {
                        continue;
                    }
                    if self.valid == 0 {
                        out.append_null();
                        continue;
                    }
                    let sum = self.flt.unwrap_or(0.0);
                    if !sum.is_finite() && !self.odd {
                        return Err(Error::OutOfRange("value out of range: overflow".into()));
                    }
                    out.append_value(if self.f == AggFunc::Sum {
                        sum
                    } else {
                        sum / self.valid as f64
                    });
                }
                Ok(Arc::new(out.finish()))
            }
            AggFunc::Sum | AggFunc::Avg => {
                let a = arg.ok_or_else(|| Error::Internal("sum without argument".into()))?;
                let v = ints_of(a)?;
                let (mut sums, mut seen) = (Vec::new(), Vec::new());
                let mut avg = Float64Builder::with_capacity(ends.len());
                let scale = match a.data_type() {
                    A::Decimal128(_, s) => *s,
                    _ => 0,
                };
                let div = 10f64.powi(i32::from(scale));
                for &e in ends.iter().chain([&n]) {
                    while j < e {
                        self.int = self.int.checked_add(v[j].unwrap_or(0)).ok_or_else(|| {
                            Error::OutOfRange("numeric field overflow in a window sum".into())
                        })?;
                        self.valid += i64::from(v[j].is_some());
                        j += 1;
                    }
                    if sums.len() + avg.len() == ends.len() {
                        continue;
                    }
                    if self.f == AggFunc::Sum {
                        sums.push(self.int);
                        seen.push(self.valid > 0);
                    } else {
                        avg.append_option(
                            (self.valid > 0).then(|| self.int as f64 / div / self.valid as f64),
                        );
                    }
                }
                match self.f {
                    AggFunc::Sum => crate::query::agg::sum_array(sums, seen, &self.sum_type),
                    _ => Ok(Arc::new(avg.finish())),
                }
            }
            AggFunc::Min | AggFunc::Max => {
                let a = canonical_doubles(
                    arg.ok_or_else(|| Error::Internal("min without argument".into()))?,
                );
                if self.conv.is_none() {
                    let f = SortField::new(a.data_type().clone());
                    self.conv = Some(RowConverter::new(vec![f]).map_err(exec_err)?);
                }
                let conv = self
                    .conv
                    .as_ref()
                    .ok_or_else(|| Error::Internal("min without its converter".into()))?;
                let rows = conv
                    .convert_columns(std::slice::from_ref(&a))
                    .map_err(exec_err)?;
                let max = self.f == AggFunc::Max;
                // The best: the carried value (`Err`) or a row here.
                let mut cur: Option<std::result::Result<usize, ()>> =
                    self.best.as_ref().map(|_| Err(()));
                let mut idx: Vec<Option<u32>> = Vec::with_capacity(ends.len());
                for &e in ends.iter().chain([&n]) {
                    while j < e {
                        if a.is_valid(j) {
                            let better = match cur {
                                None => true,
                                Some(b) => {
                                    let best = match b {
                                        Ok(r) => rows.row(r),
                                        Err(()) => match &self.best {
                                            Some((k, _)) => k.row(),
                                            None => rows.row(j),
                                        },
                                    };
                                    let o = best.cmp(&rows.row(j));
                                    // Ties take the later row, as the
                                    // in-memory tree does.
                                    !((o == std::cmp::Ordering::Greater) == max
                                        && o != std::cmp::Ordering::Equal)
                                }
                            };
                            if better {
                                cur = Some(Ok(j));
                            }
                        }
                        j += 1;
                    }
                    if idx.len() < ends.len() {
                        idx.push(cur.map(|b| match b {
                            Ok(r) => r as u32 + 1,
                            Err(()) => 0,
                        }));
                    }
                }
                let carried = match &self.best {
                    Some((_, v)) => v.clone(),
                    None => arrow_array::new_null_array(a.data_type(), 1),
                };
                if let Some(Ok(r)) = cur {
                    self.best = Some((rows.row(r).owned(), compact_array(&a.slice(r, 1))?));
                }
                let both = arrow_select::concat::concat(&[carried.as_ref(), a.as_ref()])
                    .map_err(exec_err)?;
                let idx = UInt32Array::from(idx);
                arrow_select::take::take(both.as_ref(), &idx, None).map_err(exec_err)
            }
            other => Err(Error::Internal(format!("{other:?} over a streamed window"))),
        }
    }
}

/// One value in a buffer of its own (a slice keeps its whole array).
fn compact_array(a: &ArrayRef) -> Result<ArrayRef> {
    let idx = UInt32Array::from_iter_values(0..a.len() as u32);
    arrow_select::take::take(a.as_ref(), &idx, None).map_err(exec_err)
}
