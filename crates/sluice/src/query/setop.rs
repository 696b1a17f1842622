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

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType as A, Field, Schema, SchemaRef};

use super::QueryOptions;
use super::expr::{canonical_doubles, cast, exec_err};
use super::interval;
use super::join::Piece;
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
) -> Result<Vec<Piece>> {
    let (batches, on_disk) =
        super::join::rows_of(p, opts, true, opts.join_rows_on_disk, OPERATOR, |o| {
            super::run_plan(db, p, o).map(|r| r.batches)
        })?;
    let mut pieces = batches
        .iter()
        .map(|b| conform(b, types, schema).map(Piece::Mem))
        .collect::<Result<Vec<_>>>()?;
    pieces.extend(on_disk);
    Ok(pieces)
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
    let left = side(db, &s.left, &s.types, &schema, opts)?;
    let right = match &s.right {
        Some(r) => Some(side(db, r, &s.types, &schema, opts)?),
        None => None,
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
        match combine(s, &l, r.as_ref(), opts) {
            Ok(out) => return Ok((out, Vec::new())),
            Err(Error::MemoryLimit { .. }) if opts.spill.is_some() => {}
            Err(e) => return Err(e),
        }
    }
    // By parts of the rows' hash.
    let conv = converter(&s.types)?;
    let mut lparts = Parts::new(opts)?;
    for p in left {
        opts.check_stop()?;
        lparts.put(&conv, &load(&p, &s.types, &schema)?, 0)?;
    }
    let lrun = Arc::new(lparts.w.finish()?);
    let rrun = match right {
        Some(ps) => {
            let mut rparts = Parts::new(opts)?;
            for p in ps {
                opts.check_stop()?;
                rparts.put(&conv, &load(&p, &s.types, &schema)?, 0)?;
            }
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
    let rows_of = |run: &Arc<Run>, part: u32| -> Result<Vec<RecordBatch>> {
        let frames: Vec<Frame> = run.frames_of(part).copied().collect();
        frames.iter().map(|f| run.read(f)).collect()
    };
    for part in 0..super::spill::PARTS {
        opts.check_stop()?;
        let l = rows_of(left, part)?;
        let r = match right {
            Some(run) => Some(rows_of(run, part)?),
            None => None,
        };
        let r_rows: usize = r.iter().flatten().map(|b| b.num_rows()).sum();
        let l_rows: usize = l.iter().map(|b| b.num_rows()).sum();
        // Nothing of the left: only a UNION keeps the right's rows.
        if l_rows == 0 && (r_rows == 0 || s.kind != SetKind::Union) {
            continue;
        }
        let lb = arrow_select::concat::concat_batches(schema, &l).map_err(exec_err)?;
        let rb = match &r {
            Some(r) => Some(arrow_select::concat::concat_batches(schema, r).map_err(exec_err)?),
            None => None,
        };
        let mut got = combine(s, &lb, rb.as_ref(), opts);
        if matches!(got, Err(Error::MemoryLimit { .. })) && out.holds() {
            // The parts done make room first.
            out.write_out()?;
            got = combine(s, &lb, rb.as_ref(), opts);
        }
        match got {
            Ok(batches) => {
                for b in batches {
                    if b.num_rows() > 0 {
                        out.put(b)?;
                    }
                }
            }
            Err(Error::MemoryLimit { .. }) if level < super::spill::MAX_LEVEL => {
                let mut lp = Parts::new(opts)?;
                lp.put(conv, &lb, level + 1)?;
                let sub_left = Arc::new(lp.w.finish()?);
                let sub_right = match &rb {
                    Some(rb) => {
                        let mut rp = Parts::new(opts)?;
                        rp.put(conv, rb, level + 1)?;
                        Some(Arc::new(rp.w.finish()?))
                    }
                    None => None,
                };
                drop((lb, rb, l, r));
                by_parts(
                    s,
                    conv,
                    schema,
                    &sub_left,
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

/// One side's rows written by part (of their whole row's hash).
struct Parts {
    w: RunWriter,
}

impl Parts {
    fn new(opts: &QueryOptions) -> Result<Parts> {
        let spill = opts
            .spill
            .as_ref()
            .ok_or_else(|| Error::Internal("set operation: spilling without a spill".into()))?;
        Ok(Parts {
            w: spill.writer(OPERATOR, opts.profile.clone())?,
        })
    }

    fn put(&mut self, conv: &RowConverter, b: &RecordBatch, level: u32) -> Result<()> {
        if b.num_rows() == 0 {
            return Ok(());
        }
        let keys = row_keys(conv, b)?;
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); super::spill::PARTS as usize];
        for r in 0..keys.num_rows() {
            let h = super::agg::hll::hash(keys.row(r).data());
            members[super::spill::part_of(h, level) as usize].push(r as u32);
        }
        for (p, m) in members.into_iter().enumerate() {
            if m.is_empty() {
                continue;
            }
            let idx = UInt32Array::from(m);
            let rows = arrow_select::take::take_record_batch(b, &idx).map_err(exec_err)?;
            self.w.write(p as u32, &rows)?;
        }
        Ok(())
    }
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
