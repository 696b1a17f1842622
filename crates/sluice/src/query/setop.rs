//! Running set operations: `UNION [ALL]`, `INTERSECT [ALL]`, `EXCEPT
//! [ALL]` and `SELECT DISTINCT`.
//!
//! For: each side's rows (a query of its own), cast to the output types,
//! then kept or dropped by their whole row compared as `arrow_row` bytes
//! — so two NULLs are the same value here, as SQL's set operations want,
//! and doubles are made canonical first (`-0.0` is `0.0`, one NaN). The
//! `ALL` forms count: INTERSECT ALL keeps a row as often as the fewer
//! side has it, EXCEPT ALL as often as the left has it more. Past the
//! memory limit both sides go to disk in parts by the hash of the whole
//! row, combined a part at a time (see [`run`]). Not for: planning
//! ([`super::plan::setop`]).

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType as A, Field, Schema, SchemaRef};

use super::QueryOptions;
use super::expr::{canonical_doubles, cast, exec_err};
use super::interval;
use super::join::Piece;
use super::memory::Reservation;
use super::plan::setop::{SetKind, SetOp};
use super::scan::Later;
use super::spill::{Frame, Output, Run, RunWriter};
use crate::error::{Error, Result};
use crate::store::Database;

/// The name the set operation's memory and spill go by.
const OPERATOR: &str = "set operation";

/// `b`'s columns as the output types.
fn conform(b: &RecordBatch, types: &[A], schema: &SchemaRef) -> Result<RecordBatch> {
    let cols = b
        .columns()
        .iter()
        .zip(types)
        .map(|(c, t)| {
            let c = super::expr::widen(c);
            if c.data_type() == t {
                Ok(c)
            } else {
                cast(&c, t)
            }
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
    )?)
}

/// One side's rows: in memory (of the output types), and those past
/// half the limit on disk (as the side made them: [`conform`] them when
/// read).
fn side(
    db: &Database,
    p: &super::plan::Plan,
    types: &[A],
    schema: &SchemaRef,
    opts: &QueryOptions,
) -> Result<(Vec<Piece>, Reservation)> {
    let (batches, on_disk, held) =
        super::join::rows_of(p, opts, true, opts.join_rows_on_disk, OPERATOR, |o| {
            super::run_plan(db, p, o).map(|r| r.batches)
        })?;
    let mut pieces = batches
        .iter()
        .map(|b| conform(b, types, schema).map(Piece::Mem))
        .collect::<Result<Vec<_>>>()?;
    pieces.extend(on_disk);
    Ok((pieces, held))
}

/// A piece's rows, of the output types.
fn load(p: &Piece, types: &[A], schema: &SchemaRef) -> Result<RecordBatch> {
    match p {
        Piece::Mem(b) => Ok(b.clone()),
        Piece::Disk(..) => conform(&p.load()?, types, schema),
    }
}

/// Each row of `b` as bytes that are equal exactly when the rows are
/// the same values (NULL the same as NULL): an INTERVAL by PostgreSQL's
/// equality (`1 mon` = `30 days`: its [`key_type`] key), a DOUBLE's NaNs
/// and zeros as one.
fn row_keys(conv: &RowConverter, b: &RecordBatch) -> Result<arrow_row::Rows> {
    let cols: Vec<ArrayRef> = b
        .columns()
        .iter()
        .map(|c| {
            if *c.data_type() == interval::TYPE {
                interval::eval(
                    interval::Op::Key,
                    std::slice::from_ref(c),
                    &key_type(c.data_type()),
                )
            } else {
                Ok(canonical_doubles(c))
            }
        })
        .collect::<Result<_>>()?;
    conv.convert_columns(&cols).map_err(exec_err)
}

/// The type a column of type `t` is compared as: itself, or an
/// INTERVAL's key (its value with a month as 30 days, in microseconds).
fn key_type(t: &A) -> A {
    if *t == interval::TYPE {
        A::Decimal128(38, 0)
    } else {
        t.clone()
    }
}

/// Runs a set operation: its rows in memory, and those read from disk
/// (the rows of a spilled one past half the limit, a UNION ALL's sides'
/// rows that went to disk).
///
/// Past the memory limit (or with a side on disk) both sides' rows are
/// written to 64 parts by the hash of their whole row, and each part is
/// combined alone (rows that are the same land in the same part); a
/// part that does not fit is split again by the next bits of the hash.
pub fn run(
    db: &Database,
    s: &SetOp,
    opts: &QueryOptions,
) -> Result<(Vec<RecordBatch>, Vec<Later>)> {
    let fields: Vec<Field> = s
        .types
        .iter()
        .enumerate()
        .map(|(i, t)| Field::new(format!("c{i}"), t.clone(), true))
        .collect();
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    // (Each side's rows in memory counted until they are taken.)
    let (left, mut lheld) = side(db, &s.left, &s.types, &schema, opts)?;
    let (right, mut rheld) = match &s.right {
        Some(r) => {
            let (p, h) = side(db, r, &s.types, &schema, opts)?;
            (Some(p), Some(h))
        }
        None => (None, None),
    };
    // Every row of both sides: those on disk read by the workers.
    if s.kind == SetKind::Union && s.all {
        let (mut ready, mut later) = (Vec::new(), Vec::new());
        for p in left.into_iter().chain(right.into_iter().flatten()) {
            match p {
                Piece::Mem(b) => ready.push(b),
                disk => {
                    let (types, schema) = (s.types.clone(), schema.clone());
                    later.push(disk.later(Some(Arc::new(move |b: &RecordBatch| {
                        conform(b, &types, &schema)
                    }))));
                }
            }
        }
        return Ok((ready, later));
    }
    let on_disk = left
        .iter()
        .chain(right.iter().flatten())
        .any(|p| matches!(p, Piece::Disk(..)));
    if !on_disk && !opts.join_rows_on_disk {
        let whole = |ps: &[Piece]| -> Result<RecordBatch> {
            let bs: Vec<RecordBatch> = ps
                .iter()
                .map(|p| load(p, &s.types, &schema))
                .collect::<Result<_>>()?;
            arrow_select::concat::concat_batches(&schema, &bs).map_err(exec_err)
        };
        let l = whole(&left)?;
        let r = right.as_deref().map(whole).transpose()?;
        // (`combine` counts them itself.)
        let bytes = (lheld.bytes(), rheld.as_ref().map_or(0, |h| h.bytes()));
        lheld.resize(0)?;
        if let Some(h) = &mut rheld {
            h.resize(0)?;
        }
        match combine(s, &l, r.as_ref(), opts) {
            Ok(out) => return Ok((out, Vec::new())),
            Err(Error::MemoryLimit { .. }) if opts.spill.is_some() => {
                // Counted again while they go to disk, where there is
                // room (what `combine` held is given back).
                let _ = lheld.resize(bytes.0);
                if let Some(h) = &mut rheld {
                    let _ = h.resize(bytes.1);
                }
            }
            Err(e) => return Err(e),
        }
    }
    // By parts of the rows' hash.
    let conv = converter(&s.types)?;
    let mut lparts = Parts::new(opts, schema.fields().len())?;
    for p in left {
        opts.check_stop()?;
        lparts.put(&conv, &load(&p, &s.types, &schema)?, 0)?;
    }
    drop(lheld);
    let lrun = Arc::new(lparts.w.finish()?);
    let rrun = match right {
        Some(ps) => {
            let mut rparts = Parts::new(opts, schema.fields().len())?;
            for p in ps {
                opts.check_stop()?;
                rparts.put(&conv, &load(&p, &s.types, &schema)?, 0)?;
            }
            drop(rheld);
            Some(Arc::new(rparts.w.finish()?))
        }
        None => None,
    };
    let mut out = Output::new(opts, OPERATOR)?;
    by_parts(s, &conv, &schema, &lrun, rrun.as_ref(), 0, opts, &mut out)?;
    out.finish()
}

/// The converter of whole rows of `types` into comparable bytes.
fn converter(types: &[A]) -> Result<RowConverter> {
    RowConverter::new(types.iter().map(|t| SortField::new(key_type(t))).collect()).map_err(exec_err)
}

/// Combines each part of `left` and `right` (at `level` of the rows'
/// hash) alone; a part that does not fit is split by the next bits.
/// The parts' rows are counted (see [`Parts::put`]).
#[allow(clippy::too_many_arguments)]
fn by_parts(
    s: &SetOp,
    conv: &RowConverter,
    schema: &SchemaRef,
    left: &Arc<Run>,
    right: Option<&Arc<Run>>,
    level: u32,
    opts: &QueryOptions,
    out: &mut Output,
) -> Result<()> {
    let rows_of = |run: &Arc<Run>, part: u32| -> Result<Option<RecordBatch>> {
        let frames: Vec<Frame> = run.frames_of(part).copied().collect();
        let batches = frames
            .iter()
            .map(|f| run.read(f))
            .collect::<Result<Vec<_>>>()?;
        match batches.first() {
            None => Ok(None),
            Some(b) => Ok(Some(
                arrow_select::concat::concat_batches(&b.schema(), &batches).map_err(exec_err)?,
            )),
        }
    };
    for part in 0..super::spill::PARTS {
        opts.check_stop()?;
        let lb = rows_of(left, part)?;
        let rb = match right {
            Some(run) => rows_of(run, part)?,
            None => None,
        };
        // Nothing of the left: only a UNION keeps the right's rows.
        if lb.is_none() && (rb.is_none() || s.kind != SetKind::Union) {
            continue;
        }
        let mut got = combine_counted(s, conv, schema, lb.as_ref(), rb.as_ref(), opts, out);
        if matches!(got, Err(Error::MemoryLimit { .. })) && out.holds() {
            // The parts done make room first.
            out.write_out()?;
            got = combine_counted(s, conv, schema, lb.as_ref(), rb.as_ref(), opts, out);
        }
        match got {
            Ok(()) => {}
            Err(Error::MemoryLimit { .. }) if level < super::spill::MAX_LEVEL => {
                let split = |b: &Option<RecordBatch>| -> Result<Option<Arc<Run>>> {
                    match b {
                        None => Ok(None),
                        Some(b) => {
                            let mut p = Parts::new(opts, schema.fields().len())?;
                            p.put(conv, b, level + 1)?;
                            Ok(Some(Arc::new(p.w.finish()?)))
                        }
                    }
                };
                let sub_left = split(&lb)?;
                let sub_right = split(&rb)?;
                drop((lb, rb));
                let empty;
                let sub_left = match &sub_left {
                    Some(l) => l,
                    None => {
                        empty = Arc::new(Parts::new(opts, schema.fields().len())?.w.finish()?);
                        &empty
                    }
                };
                by_parts(
                    s,
                    conv,
                    schema,
                    sub_left,
                    sub_right.as_ref(),
                    level + 1,
                    opts,
                    out,
                )?;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One side's rows written by part (of their whole row's hash), each
/// row once with its count (a last column): the copies of a row, however
/// many, take one row on disk and in a part.
struct Parts {
    w: RunWriter,
    /// The output's columns (a counted batch has one more).
    cols: usize,
}

impl Parts {
    fn new(opts: &QueryOptions, cols: usize) -> Result<Parts> {
        let spill = opts
            .spill
            .as_ref()
            .ok_or_else(|| Error::Internal("set operation: spilling without a spill".into()))?;
        Ok(Parts {
            w: spill.writer(OPERATOR, opts.profile.clone())?,
            cols,
        })
    }

    /// Writes the rows of `b` (of the output types, or counted already:
    /// with one more column, their counts) to their parts at `level`.
    fn put(&mut self, conv: &RowConverter, b: &RecordBatch, level: u32) -> Result<()> {
        if b.num_rows() == 0 {
            return Ok(());
        }
        let cols = self.cols;
        let (rows, counts) = if b.num_columns() > cols {
            let n = b
                .column(cols)
                .as_primitive::<arrow_array::types::UInt64Type>()
                .clone();
            (b.project(&(0..cols).collect::<Vec<_>>())?, Some(n))
        } else {
            (b.clone(), None)
        };
        let keys = row_keys(conv, &rows)?;
        // Each row once, with how many it stands for.
        let mut first: KeyMap = KeyMap::default();
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); super::spill::PARTS as usize];
        let mut count: Vec<u64> = Vec::new();
        let mut at: Vec<u32> = Vec::new();
        for r in 0..keys.num_rows() {
            let k = keys.row(r).data();
            let h = super::agg::hll::hash(k);
            let n = counts.as_ref().map_or(1, |c| c.value(r));
            let slot = *first.entry(Key(h, k)).or_insert_with(|| {
                members[super::spill::part_of(h, level) as usize].push(count.len() as u32);
                at.push(r as u32);
                count.push(0);
                count.len() - 1
            });
            count[slot] += n;
        }
        let once = arrow_select::take::take_record_batch(&rows, &UInt32Array::from(at))
            .map_err(exec_err)?;
        let mut fields: Vec<Field> = once
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.push(Field::new("n", A::UInt64, false));
        let mut columns = once.columns().to_vec();
        columns.push(Arc::new(arrow_array::UInt64Array::from(count)));
        let once = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?;
        for (p, m) in members.into_iter().enumerate() {
            if m.is_empty() {
                continue;
            }
            let idx = UInt32Array::from(m);
            let part = arrow_select::take::take_record_batch(&once, &idx).map_err(exec_err)?;
            self.w.write(p as u32, &part)?;
        }
        Ok(())
    }
}

/// Combines one part's counted rows (see [`Parts::put`]) and hands the
/// rows `s` keeps to `out`: a UNION each row once (the left's first),
/// INTERSECT and EXCEPT each row once where the right has it or not,
/// INTERSECT ALL a row as often as the fewer side has it, EXCEPT ALL as
/// often as the left has it more — the first of its copies each time,
/// as PostgreSQL's hashed set operations print it.
fn combine_counted(
    s: &SetOp,
    conv: &RowConverter,
    schema: &SchemaRef,
    left: Option<&RecordBatch>,
    right: Option<&RecordBatch>,
    opts: &QueryOptions,
    out: &mut Output,
) -> Result<()> {
    let cols = schema.fields().len();
    let split = |b: Option<&RecordBatch>| -> Result<Option<(RecordBatch, Vec<u64>)>> {
        match b {
            None => Ok(None),
            Some(b) => {
                let n = b
                    .column(cols)
                    .as_primitive::<arrow_array::types::UInt64Type>()
                    .values()
                    .to_vec();
                let rows = RecordBatch::try_new_with_options(
                    schema.clone(),
                    b.columns()[..cols].to_vec(),
                    &RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
                )?;
                Ok(Some((rows, n)))
            }
        }
    };
    let (l, r) = (split(left)?, split(right)?);
    let bytes = |b: &Option<(RecordBatch, Vec<u64>)>| {
        b.as_ref().map_or(0, |(b, _)| {
            super::memory::batch_bytes(b) + 33 * b.num_rows() as u64
        })
    };
    let mut mem = opts.reserve(OPERATOR, bytes(&l) + bytes(&r))?;
    let lk = l.as_ref().map(|(b, _)| row_keys(conv, b)).transpose()?;
    let rk = r.as_ref().map(|(b, _)| row_keys(conv, b)).transpose()?;
    mem.grow(
        lk.as_ref().map_or(0, |k| k.size()) as u64 + rk.as_ref().map_or(0, |k| k.size()) as u64,
    )?;
    // Each row's total on each side (a row is once a side in a part,
    // but a part split again may hold pieces counted apart).
    let mut theirs: HashMap<&[u8], u64, _> = HashMap::with_hasher(SPLIT);
    if let (Some(k), Some((_, n))) = (&rk, &r) {
        for (i, c) in n.iter().enumerate() {
            *theirs.entry(k.row(i).data()).or_insert(0) += c;
        }
    }
    let mut mine: HashMap<&[u8], (u64, u32), _> = HashMap::with_hasher(SPLIT);
    if let (Some(k), Some((_, n))) = (&lk, &l) {
        for (i, c) in n.iter().enumerate() {
            mine.entry(k.row(i).data()).or_insert((0, i as u32)).0 += c;
        }
    }
    // The rows kept, and how often.
    let mut keep: Vec<(u32, u64)> = Vec::new();
    if let Some(k) = &lk {
        for i in 0..k.num_rows() {
            let key = k.row(i).data();
            let Some(&(n, firsts)) = mine.get(key) else {
                continue;
            };
            if firsts != i as u32 {
                continue;
            }
            let t = theirs.get(key).copied().unwrap_or(0);
            let copies = match (s.kind, s.all) {
                (SetKind::Union | SetKind::Distinct, _) => 1,
                (SetKind::Intersect, false) => u64::from(t > 0),
                (SetKind::Intersect, true) => n.min(t),
                (SetKind::Except, false) => u64::from(t == 0),
                (SetKind::Except, true) => n.saturating_sub(t),
            };
            if copies > 0 {
                keep.push((i as u32, copies));
            }
        }
    }
    emit(l.as_ref().map(|(b, _)| b), &keep, out)?;
    if s.kind == SetKind::Union
        && let (Some(k), Some((b, _))) = (&rk, &r)
    {
        let mut seen: HashMap<&[u8], (), _> = HashMap::with_hasher(SPLIT);
        let mut keep = Vec::new();
        for i in 0..k.num_rows() {
            let key = k.row(i).data();
            if !mine.contains_key(key) && seen.insert(key, ()).is_none() {
                keep.push((i as u32, 1));
            }
        }
        emit(Some(b), &keep, out)?;
    }
    Ok(())
}

/// The rows of `b` at `keep`, each as often as it says, to `out` (a few
/// thousand rows a batch).
fn emit(b: Option<&RecordBatch>, keep: &[(u32, u64)], out: &mut Output) -> Result<()> {
    let Some(b) = b else {
        return Ok(());
    };
    const BATCH: usize = 8192;
    let mut idx: Vec<u32> = Vec::with_capacity(BATCH);
    let mut flush = |idx: &mut Vec<u32>| -> Result<()> {
        if !idx.is_empty() {
            let i = UInt32Array::from(std::mem::take(idx));
            out.put(arrow_select::take::take_record_batch(b, &i).map_err(exec_err)?)?;
        }
        Ok(())
    };
    for &(row, copies) in keep {
        let mut left = copies;
        while left > 0 {
            let n = left.min((BATCH - idx.len()) as u64);
            idx.extend(std::iter::repeat_n(row, n as usize));
            left -= n;
            if idx.len() == BATCH {
                flush(&mut idx)?;
            }
        }
    }
    flush(&mut idx)
}

/// Parts the rows are combined in (by the top bits of their hash).
const COMBINE_BITS: u32 = 6;
const COMBINE_PARTS: usize = 1 << COMBINE_BITS;

/// The hash that splits rows into parts.
const SPLIT: foldhash::fast::FixedState = foldhash::fast::FixedState::with_seed(0x5e70_9a27);

/// One side's rows of a part: their keys, which rows, and every row's
/// hash.
struct Side<'a> {
    keys: &'a arrow_row::Rows,
    rows: &'a [u32],
    hashes: &'a [u64],
}

/// A row's key in a part's map: its bytes, hashed once.
#[derive(Clone, Copy)]
struct Key<'a>(u64, &'a [u8]);

impl PartialEq for Key<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.0 == o.0 && self.1 == o.1
    }
}

impl Eq for Key<'_> {}

impl std::hash::Hash for Key<'_> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        h.write_u64(self.0);
    }
}

/// The hasher of [`Key`]s: their hash turned so that the bits a part
/// shares (the top ones) are not those its map reads first.
#[derive(Default, Clone, Copy)]
struct Turned(u64);

impl std::hash::Hasher for Turned {
    fn finish(&self) -> u64 {
        self.0.rotate_left(32)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

type KeyMap<'a> = HashMap<Key<'a>, usize, std::hash::BuildHasherDefault<Turned>>;

/// Row `r` of `side` as a map key.
fn key<'a>(side: &Side<'a>, r: u32) -> Key<'a> {
    let keys: &'a arrow_row::Rows = side.keys;
    Key(side.hashes[r as usize], keys.row(r as usize).data())
}

/// The rows of one part that `s` keeps: of the left side (`mine`, in
/// order), and for a UNION of the right (`theirs`).
fn keep_part(s: &SetOp, mine: Side<'_>, theirs: Option<Side<'_>>) -> (Vec<u32>, Vec<u32>) {
    // Rows of the right side, counted.
    let mut counts = KeyMap::default();
    if let Some(t) = &theirs
        && s.kind != SetKind::Union
    {
        counts.reserve(t.rows.len());
        for &r in t.rows {
            *counts.entry(key(t, r)).or_insert(0) += 1;
        }
    }
    let mut seen = KeyMap::default();
    seen.reserve(mine.rows.len());
    let mut keep_left: Vec<u32> = Vec::new();
    let mut keep_right: Vec<u32> = Vec::new();
    for &r in mine.rows {
        let k = key(&mine, r);
        let n = seen.entry(k).or_insert(0);
        *n += 1;
        let keep = match (s.kind, s.all) {
            (SetKind::Union | SetKind::Distinct, _) => *n == 1,
            (SetKind::Intersect, false) => *n == 1 && counts.contains_key(&k),
            (SetKind::Intersect, true) => *n <= counts.get(&k).copied().unwrap_or(0),
            (SetKind::Except, false) => *n == 1 && !counts.contains_key(&k),
            (SetKind::Except, true) => *n > counts.get(&k).copied().unwrap_or(0),
        };
        if keep {
            keep_left.push(r);
        }
    }
    if s.kind == SetKind::Union
        && let Some(t) = &theirs
    {
        for &r in t.rows {
            let n = seen.entry(key(t, r)).or_insert(0);
            *n += 1;
            if *n == 1 {
                keep_right.push(r);
            }
        }
    }
    (keep_left, keep_right)
}

/// The rows `s` keeps of `left` and `right` (all of both sides' rows
/// that can be the same), in memory.
fn combine(
    s: &SetOp,
    left: &RecordBatch,
    right: Option<&RecordBatch>,
    opts: &QueryOptions,
) -> Result<Vec<RecordBatch>> {
    let mut mem = opts.reserve(OPERATOR, super::memory::batch_bytes(left))?;
    if let Some(r) = right {
        mem.grow(super::memory::batch_bytes(r))?;
    }
    let conv = converter(&s.types)?;
    // Each row's key in the row format, and an entry a row in the
    // hash maps below (a key's slice and its count, and a control byte).
    let lk = row_keys(&conv, left)?;
    mem.grow((lk.size() + left.num_rows() * 25) as u64)?;
    let rk = match right {
        Some(r) => Some(row_keys(&conv, r)?),
        None => None,
    };
    if let (Some(rk), Some(r)) = (&rk, right) {
        mem.grow((rk.size() + r.num_rows() * 25) as u64)?;
    }
    // Rows by part of their key's hash: rows that are the same meet in
    // one part, whose hash maps stay small, and the parts are combined
    // on every worker. The rows each part keeps, in row order, are those
    // one pass over all rows keeps (the first of each key for UNION, …).
    // (Each row's hash once: the part is its top bits, the part's maps
    // read the rest.)
    let split = |keys: &arrow_row::Rows| -> (Vec<Vec<u32>>, Vec<u64>) {
        let mut parts = vec![Vec::new(); COMBINE_PARTS];
        let mut hashes = Vec::with_capacity(keys.num_rows());
        for r in 0..keys.num_rows() {
            let h = SPLIT.hash_one(keys.row(r).data());
            parts[(h >> (64 - COMBINE_BITS)) as usize].push(r as u32);
            hashes.push(h);
        }
        (parts, hashes)
    };
    let rows = left.num_rows() + right.map_or(0, |r| r.num_rows());
    mem.grow(12 * rows as u64)?;
    let lparts = split(&lk);
    let rparts = rk.as_ref().map(split);
    let next = AtomicUsize::new(0);
    let work = || -> Vec<(Vec<u32>, Vec<u32>)> {
        let mut done = Vec::new();
        loop {
            let p = next.fetch_add(1, Ordering::Relaxed);
            if p >= COMBINE_PARTS {
                return done;
            }
            let theirs = match (&rk, &rparts) {
                (Some(k), Some((parts, hashes))) => Some(Side {
                    keys: k,
                    rows: &parts[p][..],
                    hashes,
                }),
                _ => None,
            };
            let mine = Side {
                keys: &lk,
                rows: &lparts.0[p],
                hashes: &lparts.1,
            };
            done.push(keep_part(s, mine, theirs));
        }
    };
    let workers = crate::exec::worker_count(opts.threads).min(COMBINE_PARTS);
    let results: Vec<(Vec<u32>, Vec<u32>)> = if workers < 2 || rows < 1 << 15 {
        work()
    } else {
        std::thread::scope(|sc| {
            let handles: Vec<_> = (0..workers).map(|_| sc.spawn(work)).collect();
            let mut all = Vec::new();
            for h in handles {
                all.extend(
                    h.join()
                        .map_err(|_| Error::Internal("a set operation worker panicked".into()))?,
                );
            }
            Ok::<_, Error>(all)
        })?
    };
    let mut keep_left: Vec<u32> = results
        .iter()
        .flat_map(|(l, _)| l.iter().copied())
        .collect();
    let mut keep_right: Vec<u32> = results
        .iter()
        .flat_map(|(_, r)| r.iter().copied())
        .collect();
    keep_left.sort_unstable();
    keep_right.sort_unstable();
    let take = |b: &RecordBatch, rows: Vec<u32>| -> Result<RecordBatch> {
        let idx = UInt32Array::from(rows);
        let cols = b
            .columns()
            .iter()
            .map(|c| arrow_select::take::take(c, &idx, None).map_err(exec_err))
            .collect::<Result<Vec<_>>>()?;
        Ok(RecordBatch::try_new_with_options(
            b.schema(),
            cols,
            &RecordBatchOptions::new().with_row_count(Some(idx.len())),
        )?)
    };
    let mut out = vec![take(left, keep_left)?];
    if let Some(r) = right
        && !keep_right.is_empty()
    {
        out.push(take(r, keep_right)?);
    }
    Ok(out)
}
