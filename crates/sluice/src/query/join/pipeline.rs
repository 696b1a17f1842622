//! A join group's last join, run by the workers of the operator that
//! reads its rows: each morsel of the probe side is probed, filtered by
//! the conditions left, cut to the group's output columns and handed on
//! (to the aggregate, the projection or the top-k) — the joined rows are
//! never all in memory at once (morsel-driven pipelines, Leis et al.,
//! SIGMOD 2014: the probe is a pipeline's step, the aggregate its
//! breaker).
//!
//! An inner join, a LEFT join probed from its preserved side, a FULL
//! join, and a LEFT join whose preserved side is the hashed one: the
//! build rows that no probe row matched (FULL, and the last) are the
//! pipeline's tail, made once every morsel is probed.
//!
//! Inner joins of a star (every build side keyed by the probe side's
//! own columns: a fact table's rows against its dimensions) are all
//! pipelined: each morsel goes through the chain of hash tables as row
//! numbers alone — a stage probes with the keys of the rows the stages
//! before it kept — and its joined rows are made once, at the end, of
//! only the columns the conditions left and the group's output read. No
//! joined row of the stages between is made, and a dimension's TEXT is
//! copied once, not once a later join.
//!
//! A grace join's parts (an inner join whose table does not fit: both
//! sides partitioned on disk, [`super::grace::parted`]) are pipelined
//! too: the probe rows of each part, read back, are the pipeline's input
//! in part order, and a part's table is built when the first of its
//! morsels needs it and let go when its last is done ([`Parts`]). So the
//! joined rows, often many times either side, never go to disk.
//!
//! For: [`super::run`]'s last step and [`crate::query::scan::Inputs`]
//! that applies it. Not for: the joins before the last that are not of
//! such a star (they are made whole: the next join's order depends on
//! their rows).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow_schema::{DataType as A, Field, Schema, SchemaRef};

use super::disk::Piece;

use super::{Rel, output_batch};
use crate::error::{Error, Result};
use crate::query::QueryOptions;
use crate::query::expr::{Expr, exec_err};
use crate::query::hash_join::{HashTable, Marks, eval_keys};
use crate::query::memory::Reservation;

/// The last join of a group, applied morsel by morsel.
pub struct Pipeline {
    table: Arc<HashTable>,
    /// The probe side's keys, over its columns.
    keys: Vec<Expr>,
    /// Inner joins made before this one, in order, by keys over the
    /// probe side's columns (see the module's note).
    chain: Vec<Stage>,
    /// For an inner join: the joined rows made from pairs of row
    /// numbers, of only the columns read after it.
    narrow: Option<Narrow>,
    /// Non-equality conditions of the join's ON, over the joined columns.
    residual: Option<Expr>,
    /// Probe rows without a match are kept, NULL-filled (LEFT, FULL).
    keep_probe: bool,
    /// Build rows matched so far; their unmatched rows are the tail.
    marks: Option<Marks>,
    /// Conditions left after the join (WHERE's over several items), over
    /// the joined columns.
    then: Option<Expr>,
    /// The group's output columns among the joined columns.
    pos: Vec<usize>,
    probe_schema: SchemaRef,
    opts: QueryOptions,
    rows_out: Arc<AtomicU64>,
    nanos: AtomicU64,
    /// Rows its own join read (counted when it has a chain).
    rows_in: AtomicU64,
    /// The step in EXPLAIN ANALYZE's profile, filled in when dropped.
    step: Option<usize>,
    /// The probe side's rows, counted until the pipeline is done.
    _probe_rows: Option<Reservation>,
    /// A grace join's parts, each with its own table (then `table` is an
    /// empty one, of the build side's columns).
    parts: Option<Parts>,
}

/// The parts of a grace join made by a pipeline (see the module's note):
/// which part each input batch holds the probe rows of, and per part its
/// build rows on disk and its table while its morsels are joined.
///
/// At most two parts' tables at a time ([`TABLES_AT_ONCE`]): a part's
/// table is built once every part before it but one is done (or, after
/// 10 ms of waiting, when the limit has room for it beside theirs), and
/// let go when its own last morsel is. The scan hands the batches out in
/// order (see [`Pipeline::in_order`]), so a worker that waits for an
/// earlier part waits for morsels other workers hold, and the workers
/// on the earliest two parts never wait: no worker waits for ever. With
/// two workers none waits at all — a waiting worker cannot write its
/// operator's rows out when another asks it to (a GROUP BY over the join
/// at 128 KiB failed so when one table at a time was the rule).
pub(super) struct Parts {
    /// Per input batch (as the scan numbers them): its part, or `None`
    /// for rows joined already (only cut to the output).
    of_batch: Vec<Option<usize>>,
    parts: Vec<Part>,
    build_schema: SchemaRef,
    build_keys: Vec<Expr>,
    types: Vec<A>,
    workers: usize,
    /// The rows joined already that are in memory, counted.
    _held: Reservation,
    /// Memory set aside, before the operator above starts, for the
    /// parts' tables (the largest one's estimate): each table is counted
    /// in it and gives it back when let go, so the operator above cannot
    /// take the room a part's table needs between two parts (a review
    /// saw a GROUP BY of many groups fail so, 6 runs in 45).
    room: Mutex<Vec<Reservation>>,
}

/// Parts' tables in memory at once, each in room set aside for it.
pub(super) const TABLES_AT_ONCE: usize = 2;

struct Part {
    build: Vec<Piece>,
    /// Its batches with a morsel not yet done.
    left: AtomicUsize,
    /// Its table, once built (`None` again once let go).
    table: Mutex<Option<Arc<HashTable>>>,
}

impl Parts {
    /// `builds[q]`: part `q`'s build rows; `of_batch`: as the field.
    pub(super) fn new(
        of_batch: Vec<Option<usize>>,
        builds: Vec<Vec<Piece>>,
        build_schema: SchemaRef,
        build_keys: Vec<Expr>,
        types: Vec<A>,
        workers: usize,
        held: Reservation,
        room: Vec<Reservation>,
    ) -> Parts {
        let mut left = vec![0usize; builds.len()];
        for q in of_batch.iter().flatten() {
            if let Some(n) = left.get_mut(*q) {
                *n += 1;
            }
        }
        Parts {
            of_batch,
            parts: builds
                .into_iter()
                .zip(left)
                .map(|(build, n)| Part {
                    build,
                    left: AtomicUsize::new(n),
                    table: Mutex::new(None),
                })
                .collect(),
            build_schema,
            build_keys,
            types,
            workers,
            _held: held,
            room: Mutex::new(room),
        }
    }

    /// Part `q`'s table: built by the first worker that needs it, once
    /// every part before it but one is done.
    fn table(&self, q: usize, opts: &QueryOptions) -> Result<Arc<HashTable>> {
        let part = self
            .parts
            .get(q)
            .ok_or_else(|| Error::Internal("join: a part out of range".into()))?;
        let since = Instant::now();
        let mut tried = Duration::ZERO;
        loop {
            let alive = self.parts[..q]
                .iter()
                .filter(|p| p.left.load(Ordering::Acquire) > 0)
                .count();
            // Built when at most one part before it is not done; after a
            // while, tried anyway (every 10 ms) if the limit has room for
            // it beside the earlier parts' tables: a worker waiting here
            // cannot write its own operator's rows out when another asks
            // it to. Out of memory with an earlier table alive: wait for
            // it to go.
            let waited = since.elapsed();
            if alive < TABLES_AT_ONCE || waited >= tried + Duration::from_millis(10) {
                tried = waited;
                match self.try_table(part, opts) {
                    Err(Error::MemoryLimit { .. }) if alive > 0 => {}
                    r => return r,
                }
            }
            if let Some(e) = opts.stop.as_ref().and_then(|s| s.error()) {
                return Err(e);
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    /// `part`'s table, built now if no worker has built it.
    fn try_table(&self, part: &Part, opts: &QueryOptions) -> Result<Arc<HashTable>> {
        let mut t = part
            .table
            .lock()
            .map_err(|_| Error::Internal("join: a part's lock poisoned".into()))?;
        if let Some(t) = &*t {
            return Ok(t.clone());
        }
        if part.left.load(Ordering::Acquire) == 0 {
            return Err(Error::Internal(
                "join: a part's table after its last morsel".into(),
            ));
        }
        // A room set aside, grown to this table's estimate (given back
        // if it cannot grow: the next try, or the next part, needs it).
        let mut room = self.room.lock().ok().and_then(|mut r| r.pop());
        if let Some(r) = &mut room {
            let rows = part.build.iter().map(Piece::rows).sum();
            let bytes = part.build.iter().map(Piece::bytes).sum();
            let need = HashTable::estimate(rows, bytes);
            if let Err(e) = r.resize(need.max(r.bytes())) {
                if let (Some(r), Ok(mut pool)) = (room, self.room.lock()) {
                    pool.push(r);
                }
                return Err(e);
            }
        }
        let built = Arc::new(super::grace::part_table_in(
            &part.build,
            &self.build_schema,
            &self.build_keys,
            &self.types,
            self.workers,
            opts,
            room,
        )?);
        *t = Some(built.clone());
        Ok(built)
    }

    /// Every morsel of input batch `batch` is done: the last batch of a
    /// part lets its table go.
    fn batch_done(&self, batch: usize) {
        let Some(part) = self
            .of_batch
            .get(batch)
            .copied()
            .flatten()
            .and_then(|q| self.parts.get(q))
        else {
            return;
        };
        // The table goes before the count reaches 0: a worker that sees
        // the part done builds the next part's table, and must find this
        // one's memory given back (under the lock, so that the last batch
        // is known: the others' counts are taken under it too).
        let Ok(mut t) = part.table.lock() else {
            part.left.fetch_sub(1, Ordering::AcqRel);
            return;
        };
        if part.left.load(Ordering::Acquire) == 1
            && let Some(table) = t.take()
        {
            // Its memory back to the room set aside, for the next part.
            if let Ok(mut table) = Arc::try_unwrap(table)
                && let Some(m) = table.mem.take()
                && let Ok(mut room) = self.room.lock()
                && room.len() < TABLES_AT_ONCE
            {
                room.push(m);
            }
        }
        part.left.fetch_sub(1, Ordering::AcqRel);
    }
}

/// An inner join of a pipeline's chain: its hash table, the probe
/// side's keys (over the probe side's columns), and its line in EXPLAIN
/// ANALYZE's profile with the rows it read and made.
pub(super) struct Stage {
    pub table: Arc<HashTable>,
    pub keys: Vec<Expr>,
    pub name: String,
    step: Option<usize>,
    rows_in: AtomicU64,
    rows_out: AtomicU64,
    nanos: AtomicU64,
}

impl Stage {
    pub fn new(table: Arc<HashTable>, keys: Vec<Expr>, name: String) -> Stage {
        Stage {
            table,
            keys,
            name,
            step: None,
            rows_in: AtomicU64::new(0),
            rows_out: AtomicU64::new(0),
            nanos: AtomicU64::new(0),
        }
    }
}

/// The joined columns an inner pipeline makes: `cols[i]` is the `i`-th
/// column made, as (source, column): source 0 the probe side, `j + 1`
/// the `j`-th build side (the chain's, then the pipeline's own); `then`
/// and `pos` over the columns made.
struct Narrow {
    cols: Vec<(usize, usize)>,
    then: Option<Expr>,
    pos: Vec<usize>,
}

/// What the description of a pipelined join needs.
pub(super) struct Spec {
    pub table: Arc<HashTable>,
    pub keys: Vec<Expr>,
    /// Inner joins before this one (`keep_probe` false and no residual
    /// then).
    pub chain: Vec<Stage>,
    pub residual: Option<Expr>,
    pub keep_probe: bool,
    pub tail: bool,
    pub then: Option<Expr>,
    pub name: String,
}

impl Pipeline {
    /// The join of `probe`'s rows (morsel by morsel, later) with
    /// `spec.table`; the joined rows have `probe`'s columns, then the
    /// build side's, `out` their layout; `output` the group's columns.
    /// Returns the probe side's batches (the pipeline's input) too.
    pub(super) fn new(
        mut probe: Rel,
        out: &Rel,
        spec: Spec,
        output: &[usize],
        opts: &QueryOptions,
    ) -> Result<(Pipeline, Vec<RecordBatch>)> {
        let pos = out.positions(output)?;
        let probe_schema = probe
            .batches
            .first()
            .map(|b| b.schema())
            .ok_or_else(|| Error::Internal("join: probe side without schema".into()))?;
        let rows_in = probe.rows as u64;
        let mut chain = spec.chain;
        for st in &mut chain {
            st.step = opts
                .profile
                .as_ref()
                .map(|p| p.placeholder(format!("{}, pipelined", st.name), None));
        }
        let step = opts.profile.as_ref().map(|p| {
            if chain.is_empty() {
                p.placeholder(spec.name, Some(rows_in))
            } else {
                p.placeholder(format!("{}, pipelined", spec.name), None)
            }
        });
        let marks = spec.tail.then(|| Marks::new(spec.table.rows()));
        let narrow = if spec.residual.is_none() && !spec.keep_probe && marks.is_none() {
            // Each joined column's source, in the joined rows' order.
            let mut sources = Vec::new();
            for c in 0..probe_schema.fields().len() {
                sources.push((0, c));
            }
            let builds = chain.iter().map(|s| &s.table).chain([&spec.table]);
            for (j, t) in builds.enumerate() {
                for c in 0..t.batch.num_columns() {
                    sources.push((j + 1, c));
                }
            }
            if sources.len() != out.cols.len() {
                return Err(Error::Internal(
                    "join: a pipeline's columns are not its sides'".into(),
                ));
            }
            let mut used = vec![false; sources.len()];
            for &p in &pos {
                used[p] = true;
            }
            if let Some(t) = &spec.then {
                t.mark_columns(&mut used);
            }
            let made: Vec<usize> = (0..used.len()).filter(|&c| used[c]).collect();
            let at = |c: usize| made.iter().position(|&m| m == c).unwrap_or(0);
            let then = spec.then.clone().map(|mut t| {
                t.remap_columns(&mut |c| at(c));
                t
            });
            Some(Narrow {
                cols: made.iter().map(|&c| sources[c]).collect(),
                then,
                pos: pos.iter().map(|&p| at(p)).collect(),
            })
        } else if !chain.is_empty() {
            return Err(Error::Internal(
                "join: a chain of joins before an outer join".into(),
            ));
        } else {
            None
        };
        let batches = std::mem::take(&mut probe.batches);
        Ok((
            Pipeline {
                table: spec.table,
                keys: spec.keys,
                chain,
                narrow,
                residual: spec.residual,
                keep_probe: spec.keep_probe,
                marks,
                then: spec.then,
                pos,
                probe_schema,
                opts: opts.clone(),
                rows_out: Arc::new(AtomicU64::new(0)),
                nanos: AtomicU64::new(0),
                rows_in: AtomicU64::new(0),
                step,
                _probe_rows: probe.mem.take(),
                parts: None,
            },
            batches,
        ))
    }

    /// Makes it the join of a grace join's parts (see [`Parts`]).
    pub(super) fn by_parts(&mut self, parts: Parts) {
        self.parts = Some(parts);
    }

    /// Whether the scan must hand its batches out in order, each batch's
    /// morsels before the next batch's (a grace join's parts: see
    /// [`Parts`]).
    pub fn in_order(&self) -> bool {
        self.parts.is_some()
    }

    /// Every morsel of input batch `batch` is done.
    pub fn batch_done(&self, batch: usize) {
        if let Some(p) = &self.parts {
            p.batch_done(batch);
        }
    }

    /// The group's rows of one morsel of input batch `batch`.
    pub fn apply_in(&self, batch: usize, b: &RecordBatch) -> Result<RecordBatch> {
        let Some(parts) = &self.parts else {
            return self.apply(b);
        };
        match parts.of_batch.get(batch).copied().flatten() {
            // Rows joined already.
            None => {
                let at = Instant::now();
                let out = self.finish_rows(b.clone())?;
                self.counted(&out, at);
                Ok(out)
            }
            Some(q) => {
                let table = parts.table(q, &self.opts)?;
                self.apply_with(&table, b)
            }
        }
    }

    /// The group's rows of one morsel of the probe side.
    pub fn apply(&self, b: &RecordBatch) -> Result<RecordBatch> {
        self.apply_with(&self.table, b)
    }

    fn apply_with(&self, table: &HashTable, b: &RecordBatch) -> Result<RecordBatch> {
        match self.apply_whole(table, b) {
            // Pairs past the memory limit (a table that only just fit):
            // the morsel joined in halves, down to one row, the halves'
            // rows put together (they are not counted; the pairs are).
            Err(Error::MemoryLimit { .. }) if b.num_rows() > 1 && self.opts.spill.is_some() => {
                let half = b.num_rows() / 2;
                let first = self.apply_with(table, &b.slice(0, half))?;
                let second = self.apply_with(table, &b.slice(half, b.num_rows() - half))?;
                arrow_select::concat::concat_batches(&first.schema(), [&first, &second])
                    .map_err(exec_err)
            }
            r => r,
        }
    }

    fn apply_whole(&self, table: &HashTable, b: &RecordBatch) -> Result<RecordBatch> {
        let at = Instant::now();
        let mut scratch = self.opts.reserve("hash join probe", 0)?;
        if let Some(n) = &self.narrow {
            let out = self.by_row_numbers(table, b, n, &mut scratch)?;
            self.counted(&out, at);
            return Ok(out);
        }
        let k = eval_keys(&self.keys, b, Some(table.key_types()))?;
        let j = table.join_batch(
            b,
            &k,
            self.residual.as_ref(),
            self.keep_probe,
            self.marks.as_ref(),
            &mut scratch,
        )?;
        let out = self.finish_rows(j)?;
        self.counted(&out, at);
        Ok(out)
    }

    /// The inner joins of the chain and this one over morsel `b`, as
    /// row numbers: per stage, the probe rows kept so far probe its
    /// table, and every side's row numbers follow the pairs it made;
    /// then the joined rows of the columns `n` makes, through the
    /// conditions left, cut to the output.
    fn by_row_numbers(
        &self,
        own_table: &HashTable,
        b: &RecordBatch,
        n: &Narrow,
        scratch: &mut Reservation,
    ) -> Result<RecordBatch> {
        // The probe rows kept (`None`: all, in order), and per build side
        // so far the row paired with each.
        let mut sel: Option<Vec<u32>> = None;
        let mut picks: Vec<Vec<u32>> = Vec::with_capacity(self.chain.len() + 1);
        let own = (own_table, &self.keys, None);
        let stages = self
            .chain
            .iter()
            .map(|s| (s.table.as_ref(), &s.keys, Some(s)))
            .chain([own]);
        for (table, keys, stage) in stages {
            let at = Instant::now();
            // A later stage's keys are evaluated over the rows kept so
            // far alone (the columns they read, taken): a key that fails
            // on a row an earlier join dropped (`100 / v`, a cast) must
            // not fail the query, as it does not when joined one by one.
            let (k, rows) = match &sel {
                None => (eval_keys(keys, b, Some(table.key_types()))?, b.num_rows()),
                Some(s) => {
                    let kept = kept_columns(b, keys, s)?;
                    (
                        eval_keys(&kept.1, &kept.0, Some(table.key_types()))?,
                        s.len(),
                    )
                }
            };
            let (mut p, mut hit) = (Vec::new(), Vec::new());
            table.matches(&k, rows, &mut p, &mut hit, scratch)?;
            sel = Some(match sel {
                None => p.clone(),
                Some(s) => p.iter().map(|&i| s[i as usize]).collect(),
            });
            for pick in &mut picks {
                *pick = p.iter().map(|&i| pick[i as usize]).collect();
            }
            picks.push(hit);
            if let Some(st) = stage {
                st.rows_in.fetch_add(rows as u64, Ordering::Relaxed);
                st.rows_out.fetch_add(p.len() as u64, Ordering::Relaxed);
                st.nanos
                    .fetch_add(at.elapsed().as_nanos() as u64, Ordering::Relaxed);
            } else {
                self.rows_in.fetch_add(rows as u64, Ordering::Relaxed);
            }
        }
        let sel = sel.unwrap_or_default();
        // The pairs' bytes, counted before they are made.
        let per_row = |src: &RecordBatch, c: usize| {
            crate::query::memory::array_bytes(src.column(c).as_ref()) / src.num_rows().max(1) as u64
        };
        let source = |s: usize| -> &RecordBatch {
            if s == 0 {
                b
            } else if s <= self.chain.len() {
                &self.chain[s - 1].table.batch
            } else {
                &own_table.batch
            }
        };
        let bytes: u64 = n.cols.iter().map(|&(s, c)| per_row(source(s), c)).sum();
        scratch.grow(bytes * sel.len() as u64)?;
        let mut idx = Vec::with_capacity(picks.len() + 1);
        idx.push(UInt32Array::from(sel));
        idx.extend(picks.into_iter().map(UInt32Array::from));
        let rows = idx[0].len();
        let mut fields = Vec::with_capacity(n.cols.len());
        let mut cols = Vec::with_capacity(n.cols.len());
        for (i, &(s, c)) in n.cols.iter().enumerate() {
            let col =
                arrow_select::take::take(source(s).column(c), &idx[s], None).map_err(exec_err)?;
            fields.push(Field::new(format!("c{i}"), col.data_type().clone(), true));
            cols.push(col);
        }
        let j = RecordBatch::try_new_with_options(
            Arc::new(Schema::new(fields)),
            cols,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )?;
        through_then(j, n.then.as_ref(), &n.pos)
    }

    /// Whether the pipeline ends with the build rows no probe row matched
    /// ([`Pipeline::tail`]).
    pub fn has_tail(&self) -> bool {
        self.marks.is_some()
    }

    /// The build rows that no probe row matched, NULL-filled on the probe
    /// side: called once every morsel is probed.
    pub fn tail(&self) -> Result<RecordBatch> {
        let at = Instant::now();
        let rows = self.table.rows();
        let matched = match &self.marks {
            Some(m) => m.to_vec(rows),
            None => vec![true; rows],
        };
        let rest = self.table.unmatched(&self.probe_schema, &matched)?;
        let out = self.finish_rows(rest)?;
        self.counted(&out, at);
        Ok(out)
    }

    /// Joined rows through the conditions left, cut to the output columns.
    fn finish_rows(&self, j: RecordBatch) -> Result<RecordBatch> {
        through_then(j, self.then.as_ref(), &self.pos)
    }

    fn counted(&self, out: &RecordBatch, at: Instant) {
        self.rows_out
            .fetch_add(out.num_rows() as u64, Ordering::Relaxed);
        self.nanos
            .fetch_add(at.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    /// The count of the rows it has made so far.
    pub fn rows_out(&self) -> Arc<AtomicU64> {
        self.rows_out.clone()
    }
}

/// Joined rows `j` where `then` holds, cut to the columns `pos`.
fn through_then(j: RecordBatch, then: Option<&Expr>, pos: &[usize]) -> Result<RecordBatch> {
    let j = match then {
        None => j,
        Some(c) => {
            let mask = c.eval(&j)?.into_array(j.num_rows())?;
            let mask = crate::query::hash_join::truth(&mask)?;
            arrow_select::filter::filter_record_batch(&j, &mask).map_err(exec_err)?
        }
    };
    output_batch(&j, pos)
}

/// The columns of `b` that `keys` read, at rows `sel`, and `keys` over
/// them.
fn kept_columns(b: &RecordBatch, keys: &[Expr], sel: &[u32]) -> Result<(RecordBatch, Vec<Expr>)> {
    let mut used = vec![false; b.num_columns()];
    for k in keys {
        k.mark_columns(&mut used);
    }
    let reads: Vec<usize> = (0..used.len()).filter(|&c| used[c]).collect();
    let idx = UInt32Array::from(sel.to_vec());
    let mut fields = Vec::with_capacity(reads.len());
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(reads.len());
    for &c in &reads {
        fields.push(b.schema().field(c).clone());
        cols.push(arrow_select::take::take(b.column(c), &idx, None).map_err(exec_err)?);
    }
    let batch = RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(sel.len())),
    )?;
    let keys = keys
        .iter()
        .map(|k| {
            let mut k = k.clone();
            k.remap_columns(&mut |c| reads.iter().position(|&r| r == c).unwrap_or(c));
            k
        })
        .collect();
    Ok((batch, keys))
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        let Some(p) = &self.opts.profile else {
            return;
        };
        // The chain's stages: their own rows and time; the pipeline's
        // own line has the whole pipeline's time.
        for st in &self.chain {
            if let Some(i) = st.step {
                p.fill_in(
                    i,
                    st.rows_in.load(Ordering::Relaxed),
                    st.rows_out.load(Ordering::Relaxed),
                    Duration::from_nanos(st.nanos.load(Ordering::Relaxed)),
                );
            }
        }
        if let Some(i) = self.step {
            let time = Duration::from_nanos(self.nanos.load(Ordering::Relaxed));
            let out = self.rows_out.load(Ordering::Relaxed);
            if self.chain.is_empty() {
                p.fill(i, out, time);
            } else {
                p.fill_in(i, self.rows_in.load(Ordering::Relaxed), out, time);
            }
        }
    }
}
