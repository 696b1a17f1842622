//! The hash join operator: a hash table over the build side's rows by
//! their join keys, probed by the other side's rows batch by batch.
//!
//! For: building the table ([`HashTable::build`]; one integer key — any
//! integer, date or timestamp — is hashed as an `i64`, other keys as
//! their row-format bytes, so TEXT keys compare by value whatever
//! dictionary they came from), finding the matches of a probe batch
//! ([`HashTable::matches`]) and assembling the joined rows for inner,
//! left and full joins with a residual condition
//! ([`HashTable::join_batch`]). A row whose key has a NULL never matches
//! (SQL's `=`). Not for: choosing what to build and probe, or running
//! probes on every core ([`super::join`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::{DataType as A, Field, Schema};

use super::expr::{Expr, exec_err};
use super::memory::Reservation;
use crate::error::{Error, Result};

type Hasher = foldhash::fast::FixedState;

/// End of a chain of rows with the same key (or hash).
const END: u32 = u32::MAX;

enum Index {
    /// One integer-like key; `unique`: no key is on two rows (every
    /// chain is one row long, and a probe need not read `next`).
    Int {
        heads: IntHeads,
        next: Vec<u32>,
        unique: bool,
    },
    /// Two integer-like keys (TPC-H's `ps_partkey, ps_suppkey`), packed
    /// into one `u128`: compared whole, no row-format bytes made.
    Pair {
        heads: HashMap<u128, u32, Hasher>,
        next: Vec<u32>,
    },
    /// Any keys: the hash of their row-format bytes; a chain may hold
    /// other keys of the same hash, compared byte by byte.
    Rows {
        conv: RowConverter,
        rows: Rows,
        heads: HashMap<u64, u32, Hasher>,
        next: Vec<u32>,
    },
    /// No keys: every row matches every probe row (a cross product, or a
    /// join whose condition has no equality).
    All,
}

/// The first build row of each integer key (`END`: none).
enum IntHeads {
    /// Keys spread over at most [`DENSE_ROWS_PER_KEY`] slots a build row:
    /// `slots[k - base]`, one load where a hash map takes a hash and a
    /// probe of a table several times larger (DuckDB's perfect hash join
    /// does the same). TPC-H's keys (customers, orders, parts, suppliers,
    /// nations) are all of this kind.
    Dense { base: i64, slots: Vec<u32> },
    /// Keys too spread for that (a share of the orders, by their keys):
    /// open addressing, filled by every worker at once (see [`OpenMap`]).
    Open(OpenMap),
    /// The same keys when an [`OpenMap`] could not hold them (a
    /// partition filled up, or probes ran too long: keys made to collide).
    Map(HashMap<i64, u32, Hasher>),
}

impl IntHeads {
    #[inline]
    fn first(&self, k: i64) -> u32 {
        match self {
            IntHeads::Dense { base, slots } => {
                // Keys below `base` wrap to huge offsets: no slot.
                let at = k.wrapping_sub(*base) as u64;
                if at < slots.len() as u64 {
                    slots[at as usize]
                } else {
                    END
                }
            }
            IntHeads::Open(m) => m.first(k),
            IntHeads::Map(m) => m.get(&k).copied().unwrap_or(END),
        }
    }

    /// Asks for the memory that [`IntHeads::first`] of `k` reads first
    /// (a probe of a table larger than the caches waits on it: asked a
    /// few rows ahead, it is there when the probe comes).
    #[inline]
    fn prefetch(&self, k: i64) {
        match self {
            IntHeads::Dense { base, slots } => {
                if let Some(s) = slots.get(k.wrapping_sub(*base) as u64 as usize) {
                    crate::exec::prefetch(s);
                }
            }
            IntHeads::Open(m) => crate::exec::prefetch(&m.slots[m.home(k)]),
            IntHeads::Map(_) => {}
        }
    }

    fn bytes(&self) -> usize {
        match self {
            IntHeads::Dense { slots, .. } => slots.capacity() * 4,
            IntHeads::Open(m) => m.slots.capacity() * std::mem::size_of::<Slot>(),
            // A hash map's entry and its control byte, at its capacity.
            IntHeads::Map(m) => m.capacity() * 13,
        }
    }
}

/// Probe rows ahead of the one looked up whose slot is asked for.
const PREFETCH_AHEAD: usize = 16;

/// Build rows from which a table is built by several workers (fewer: the
/// threads cost more than they save).
const PARALLEL_BUILD_ROWS: usize = 1 << 16;

/// A key of an [`OpenMap`] and its first build row (`END`: empty).
#[derive(Clone, Copy)]
struct Slot {
    key: i64,
    head: u32,
}

const EMPTY: Slot = Slot { key: 0, head: END };

/// Integer keys by open addressing with linear probing: a power of two
/// of [`Slot`]s (a key and its row side by side, one cache line for
/// both), at most three quarters full, the key's slot taken from the top
/// bits of its Fibonacci hash. The slots are cut into partitions by
/// those bits (as many as the build's workers, rounded up to a power of
/// two); a probe wraps within its partition, so each worker fills its
/// own partitions, scanning every key but writing only its own slots —
/// no locks, no atomic slots, the chains as a single worker makes them
/// (DuckDB's and Umbra's builds partition too; they radix-sort the rows
/// first, which a table of this size does not need).
struct OpenMap {
    slots: Vec<Slot>,
    /// 64 less the bits of a slot's number.
    shift: u32,
    /// Slots a partition has, less one.
    part_mask: usize,
}

/// A key's home slot among `2^(64 - shift)`.
#[inline]
fn home(k: i64, shift: u32) -> usize {
    ((k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize
}

impl OpenMap {
    #[inline]
    fn home(&self, k: i64) -> usize {
        home(k, self.shift)
    }

    #[inline]
    fn first(&self, k: i64) -> u32 {
        let mut at = self.home(k);
        loop {
            let s = self.slots[at];
            if s.head == END {
                return END;
            }
            if s.key == k {
                return s.head;
            }
            at = (at & !self.part_mask) | ((at + 1) & self.part_mask);
        }
    }

    /// Slots for `rows` keys: at most three quarters full.
    fn slots_for(rows: usize) -> usize {
        (rows + rows / 3 + 1).max(1 << 10).next_power_of_two()
    }

    /// The table of the rows of `vals` that `ok` keeps, in `slots` slots
    /// (a power of two), filled by `workers`; each row's next row of the
    /// same key set in `next` (rows of a key chained in ascending
    /// order). Returns the distinct keys too. `None` when a partition
    /// fills up or probes run far longer than keys spread by a hash
    /// make them: keys chosen to collide, for the caller to index
    /// another way. An error only if a worker panicked.
    fn build(
        vals: &[i64],
        ok: &(dyn Fn(usize) -> bool + Sync),
        slots: usize,
        workers: usize,
        next: &[AtomicU32],
    ) -> Result<Option<(OpenMap, usize)>> {
        let parts = workers
            .clamp(1, 64)
            .next_power_of_two()
            .min(slots / 4)
            .max(1);
        let part_len = slots / parts;
        let part_mask = part_len - 1;
        let part_shift = part_len.trailing_zeros();
        let shift = 64 - slots.trailing_zeros();
        let mut table = vec![EMPTY; slots];
        let workers = workers.clamp(1, parts);
        // Worker w fills partitions w, w + workers, w + 2 * workers, …
        let mut mine: Vec<Vec<&mut [Slot]>> = (0..workers).map(|_| Vec::new()).collect();
        for (p, chunk) in table.chunks_mut(part_len).enumerate() {
            mine[p % workers].push(chunk);
        }
        let fill = |w: usize, chunks: &mut [&mut [Slot]]| -> Option<usize> {
            let mut distinct = 0;
            let mut held = vec![0usize; chunks.len()];
            let (mut probes, mut rows) = (0usize, 0usize);
            for r in (0..vals.len()).rev() {
                // The slot of a row a few ahead (rows go backwards), if
                // this worker fills it: asked for now, there when needed.
                if let Some(&k) = r.checked_sub(PREFETCH_AHEAD).map(|a| &vals[a]) {
                    let at = home(k, shift);
                    let p = at >> part_shift;
                    if p % workers == w {
                        crate::exec::prefetch(&chunks[p / workers][at & part_mask]);
                    }
                }
                if !ok(r) {
                    continue;
                }
                let k = vals[r];
                let at = home(k, shift);
                let p = at >> part_shift;
                if p % workers != w {
                    continue;
                }
                let (chunk, count) = (&mut chunks[p / workers], &mut held[p / workers]);
                let mut i = at & part_mask;
                rows += 1;
                loop {
                    let s = &mut chunk[i];
                    if s.head == END {
                        // One slot a partition stays empty: a probe of
                        // a key not there ends.
                        *count += 1;
                        if *count >= part_len {
                            return None;
                        }
                        *s = Slot {
                            key: k,
                            head: r as u32,
                        };
                        distinct += 1;
                        break;
                    }
                    if s.key == k {
                        next[r].store(s.head, Ordering::Relaxed);
                        s.head = r as u32;
                        break;
                    }
                    i = (i + 1) & part_mask;
                    probes += 1;
                }
                if probes > 64 * rows + 4096 {
                    return None;
                }
            }
            Some(distinct)
        };
        let counts = each_on_a_thread(mine.iter_mut().collect(), |w, c| fill(w, c))?;
        let mut distinct = 0;
        for c in counts {
            let Some(c) = c else { return Ok(None) };
            distinct += c;
        }
        drop(mine);
        Ok(Some((
            OpenMap {
                slots: table,
                shift,
                part_mask,
            },
            distinct,
        )))
    }
}

/// `f(i, part)` for each of `parts`, each on a thread of its own (one
/// part: on this thread); the results in order. An error only if a
/// thread panicked.
fn each_on_a_thread<P: Send, R: Send>(
    parts: Vec<P>,
    f: impl Fn(usize, P) -> R + Sync,
) -> Result<Vec<R>> {
    if parts.len() <= 1 {
        return Ok(parts.into_iter().map(|p| f(0, p)).collect());
    }
    std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = parts
            .into_iter()
            .enumerate()
            .map(|(i, p)| s.spawn(move || f(i, p)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| Error::Internal("a hash join build worker panicked".into()))
            })
            .collect()
    })
}

/// The dense index of the rows of `vals` that `ok` keeps, keys `base ..
/// base + span`, filled by `workers` (each the keys of its share of the
/// slots, scanning every row); chains in `next`. Returns the distinct
/// keys too (an error only if a worker panicked).
fn dense_index(
    vals: &[i64],
    ok: &(dyn Fn(usize) -> bool + Sync),
    base: i64,
    span: usize,
    workers: usize,
    next: &[AtomicU32],
) -> Result<(Vec<u32>, usize)> {
    let mut slots = vec![END; span];
    let share = span.div_ceil(workers.max(1)).max(1);
    let fill = |from: usize, part: &mut [u32]| -> usize {
        let mut d = 0;
        for r in (0..vals.len()).rev() {
            if let Some(&k) = r.checked_sub(PREFETCH_AHEAD).map(|a| &vals[a])
                && let Some(h) = part.get(((k.wrapping_sub(base)) as usize).wrapping_sub(from))
            {
                crate::exec::prefetch(h);
            }
            if !ok(r) {
                continue;
            }
            // Keys outside this share wrap past its end.
            let at = ((vals[r] - base) as usize).wrapping_sub(from);
            if let Some(h) = part.get_mut(at) {
                d += usize::from(*h == END);
                next[r].store(*h, Ordering::Relaxed);
                *h = r as u32;
            }
        }
        d
    };
    let d = each_on_a_thread(slots.chunks_mut(share).collect(), |i, part| {
        fill(i * share, part)
    })?
    .into_iter()
    .sum();
    Ok((slots, d))
}

/// Slots a dense index of join keys may have per build row (beyond
/// [`DENSE_MIN_SLOTS`]): 4 bytes a slot, so at most 16 bytes a row, about
/// what a hash map's entries take; and at most [`DENSE_MAX_SLOTS`].
const DENSE_ROWS_PER_KEY: usize = 4;
const DENSE_MIN_SLOTS: usize = 1 << 12;
const DENSE_MAX_SLOTS: usize = 1 << 28;

/// Build rows that some probe task matched: a bit a row, shared by every
/// task (where a vector of a flag a build row per task cost the build's
/// rows in bytes each task: TPC-H Q13's LEFT join at SF 10 made 229
/// vectors of 1.5 M flags, and OR-ed them together).
pub struct Marks(Vec<AtomicU64>);

impl Marks {
    pub fn new(rows: usize) -> Marks {
        Marks((0..rows.div_ceil(64)).map(|_| AtomicU64::new(0)).collect())
    }

    #[inline]
    pub fn set(&self, row: u32) {
        let (w, bit) = (&self.0[row as usize >> 6], 1u64 << (row & 63));
        // Most marks are of rows already marked: a load, no write.
        if w.load(Ordering::Relaxed) & bit == 0 {
            w.fetch_or(bit, Ordering::Relaxed);
        }
    }

    /// Per row of `rows`: whether it was marked (read after the tasks
    /// are joined).
    pub fn to_vec(&self, rows: usize) -> Vec<bool> {
        (0..rows)
            .map(|r| self.0[r >> 6].load(Ordering::Relaxed) >> (r & 63) & 1 == 1)
            .collect()
    }
}

/// Pairs a probe makes, at most, between two counts of their bytes.
const PAIRS_CHECKED: usize = 1 << 16;

/// The build side of a hash join.
pub struct HashTable {
    /// Every build row, all its columns (one batch).
    pub batch: RecordBatch,
    index: Index,
    /// The types the keys are compared as (the probe side's keys are cast
    /// to them).
    key_types: Vec<A>,
    /// Distinct non-NULL keys (of hashes, for keys other than one integer).
    pub distinct: usize,
    /// Rows whose key has a NULL (they match nothing).
    pub null_keys: usize,
    /// Per row, whether its key has no NULL (`None`: none has one).
    valid: Option<Vec<bool>>,
    /// The bytes it holds, counted in the query's memory while it lives.
    pub(crate) mem: Option<crate::query::memory::Reservation>,
}

/// Whether a key type is hashed as an `i64`.
fn int_like(t: &A) -> bool {
    matches!(
        t,
        A::Int8
            | A::Int16
            | A::Int32
            | A::Int64
            | A::UInt8
            | A::UInt16
            | A::UInt32
            | A::Date32
            | A::Date64
            | A::Time64(_)
            | A::Timestamp(..)
    )
}

/// Two integer-like keys per row, packed into one `u128` (NULL rows
/// give some value: the caller skips them).
fn packed_pairs(keys: &[ArrayRef]) -> Result<Vec<u128>> {
    let (a, b) = (as_i64(&keys[0])?, as_i64(&keys[1])?);
    Ok(a.values()
        .iter()
        .zip(b.values().iter())
        .map(|(&x, &y)| ((x as u64 as u128) << 64) | y as u64 as u128)
        .collect())
}

/// An integer-like array's values as `i64` (nulls left as they are).
fn as_i64(a: &ArrayRef) -> Result<arrow_array::Int64Array> {
    macro_rules! widen {
        ($t:ty) => {
            a.as_primitive::<$t>().unary::<_, Int64Type>(|v| v as i64)
        };
    }
    Ok(match a.data_type() {
        A::Int8 => widen!(Int8Type),
        A::Int16 => widen!(Int16Type),
        A::Int32 => widen!(Int32Type),
        A::Int64 => a.as_primitive::<Int64Type>().clone(),
        A::UInt8 => widen!(UInt8Type),
        A::UInt16 => widen!(UInt16Type),
        A::UInt32 => widen!(UInt32Type),
        A::Date32 => widen!(Date32Type),
        A::Date64 => widen!(Date64Type),
        A::Time64(_) => a.as_primitive::<Time64MicrosecondType>().reinterpret_cast(),
        A::Timestamp(_, _) => {
            let c = arrow_cast::cast(a, &A::Int64).map_err(exec_err)?;
            c.as_primitive::<Int64Type>().clone()
        }
        other => return Err(Error::Internal(format!("integer join key of type {other}"))),
    })
}

/// Rows (of `n`) whose keys are all non-NULL.
fn valid_rows(keys: &[ArrayRef], n: usize) -> Option<Vec<bool>> {
    if keys.iter().all(|k| k.null_count() == 0) {
        return None;
    }
    let mut ok = vec![true; n];
    for k in keys {
        if let Some(nulls) = k.logical_nulls() {
            for (r, o) in ok.iter_mut().enumerate() {
                *o &= nulls.is_valid(r);
            }
        }
    }
    Some(ok)
}

/// Evaluates key expressions over a batch, cast to `types` where given.
pub fn eval_keys(
    exprs: &[Expr],
    batch: &RecordBatch,
    types: Option<&[A]>,
) -> Result<Vec<ArrayRef>> {
    let n = batch.num_rows();
    let mut out = Vec::with_capacity(exprs.len());
    for (i, e) in exprs.iter().enumerate() {
        let a = e.eval(batch)?.into_array(n)?;
        let a = super::expr::widen(&a);
        // Keys are compared as values: a dictionary's codes are decoded.
        let a = match a.data_type() {
            A::Dictionary(_, v) => arrow_cast::cast(&a, v).map_err(exec_err)?,
            _ => a,
        };
        let a = match types.and_then(|t| t.get(i)) {
            Some(t) if t != a.data_type() => super::expr::cast(&a, t)?,
            _ => a,
        };
        // -0.0 and 0.0 are one key, and so is every NaN (as `=` has them).
        let a = if a.data_type() == &A::Float64 {
            super::expr::canonical_doubles(&a)
        } else {
            a
        };
        out.push(a);
    }
    Ok(out)
}

/// The index of one integer key over the rows of `vals` that `ok`
/// keeps: dense when the keys' range is at most [`DENSE_ROWS_PER_KEY`]
/// slots a row, else open addressing (a hash map if keys collide past
/// what a hash makes), filled by `workers`. Returns each row's next row
/// of its key (ascending) and the distinct keys too.
fn int_index(
    vals: &[i64],
    ok: &(dyn Fn(usize) -> bool + Sync),
    workers: usize,
) -> Result<(IntHeads, Vec<u32>, usize)> {
    let n = vals.len();
    let next: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(END)).collect();
    let range = (0..n)
        .filter(|&r| ok(r))
        .fold(None, |acc: Option<(i64, i64)>, r| {
            let v = vals[r];
            Some(acc.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))))
        });
    let span = range.map_or(0, |(lo, hi)| hi as i128 - lo as i128 + 1);
    let room = n
        .saturating_mul(DENSE_ROWS_PER_KEY)
        .saturating_add(DENSE_MIN_SLOTS)
        .min(DENSE_MAX_SLOTS);
    let (heads, d) = match range {
        Some((base, _)) if span <= room as i128 => {
            let (slots, d) = dense_index(vals, ok, base, span as usize, workers, &next)?;
            (IntHeads::Dense { base, slots }, d)
        }
        _ => match OpenMap::build(vals, ok, OpenMap::slots_for(n), workers, &next)? {
            Some((m, d)) => (IntHeads::Open(m), d),
            None => {
                let next: Vec<u32> = vec![END; n];
                let (heads, next, d) = int_map(vals, ok, next);
                return Ok((heads, next, d));
            }
        },
    };
    // Same size and layout: collected in place.
    let next = next.into_iter().map(AtomicU32::into_inner).collect();
    Ok((heads, next, d))
}

/// [`int_index`]'s fallback: a hash map, one worker.
fn int_map(
    vals: &[i64],
    ok: &(dyn Fn(usize) -> bool + Sync),
    mut next: Vec<u32>,
) -> (IntHeads, Vec<u32>, usize) {
    let mut heads: HashMap<i64, u32, Hasher> =
        HashMap::with_capacity_and_hasher(vals.len(), Hasher::default());
    for r in (0..vals.len()).rev() {
        if !ok(r) {
            continue;
        }
        let h = heads.entry(vals[r]).or_insert(END);
        next[r] = *h;
        *h = r as u32;
    }
    let d = heads.len();
    (IntHeads::Map(heads), next, d)
}

impl HashTable {
    /// Hashes `batch`'s rows by `keys` (evaluated over it, cast to
    /// `key_types`); no keys: every row matches every probe row. One
    /// integer key's index is filled by `workers` threads (a table of
    /// [`PARALLEL_BUILD_ROWS`] rows or more).
    pub fn build(
        batch: RecordBatch,
        keys: &[ArrayRef],
        key_types: Vec<A>,
        workers: usize,
    ) -> Result<HashTable> {
        let n = batch.num_rows();
        if n >= END as usize {
            return Err(Error::Unsupported(format!(
                "a join's build side of {n} rows (at most {} rows)",
                END - 1
            )));
        }
        if keys.is_empty() {
            return Ok(HashTable {
                batch,
                index: Index::All,
                key_types,
                distinct: 1,
                null_keys: 0,
                valid: None,
                mem: None,
            });
        }
        let valid = valid_rows(keys, n);
        let null_keys = valid
            .as_ref()
            .map_or(0, |v| v.iter().filter(|x| !**x).count());
        let ok = |r: usize| valid.as_ref().is_none_or(|v| v[r]);
        let workers = if n >= PARALLEL_BUILD_ROWS { workers } else { 1 };
        let (index, distinct) = if keys.len() == 1 && int_like(&key_types[0]) {
            let vals = as_i64(&keys[0])?;
            let (heads, next, d) = int_index(vals.values(), &ok, workers)?;
            let unique = d + null_keys == n;
            (
                Index::Int {
                    heads,
                    next,
                    unique,
                },
                d,
            )
        } else if keys.len() == 2 && key_types.iter().all(int_like) {
            let mut next = vec![END; n];
            let vals = packed_pairs(keys)?;
            let mut heads: HashMap<u128, u32, Hasher> =
                HashMap::with_capacity_and_hasher(n, Hasher::default());
            for r in (0..n).rev() {
                if !ok(r) {
                    continue;
                }
                let h = heads.entry(vals[r]).or_insert(END);
                next[r] = *h;
                *h = r as u32;
            }
            let d = heads.len();
            (Index::Pair { heads, next }, d)
        } else {
            let conv = RowConverter::new(
                key_types
                    .iter()
                    .map(|t| SortField::new(t.clone()))
                    .collect(),
            )
            .map_err(exec_err)?;
            let rows = conv.convert_columns(keys).map_err(exec_err)?;
            let mut next = vec![END; n];
            let mut heads: HashMap<u64, u32, Hasher> =
                HashMap::with_capacity_and_hasher(n, Hasher::default());
            for r in (0..n).rev() {
                if !ok(r) {
                    continue;
                }
                let h = heads.entry(hash_bytes(rows.row(r).as_ref())).or_insert(END);
                next[r] = *h;
                *h = r as u32;
            }
            let d = heads.len();
            (
                Index::Rows {
                    conv,
                    rows,
                    heads,
                    next,
                },
                d,
            )
        };
        Ok(HashTable {
            batch,
            index,
            key_types,
            distinct,
            null_keys,
            valid,
            mem: None,
        })
    }

    /// Bytes the table holds: its rows, its keys and its index.
    pub fn bytes(&self) -> usize {
        // A hash map's entry and its control byte, at its capacity.
        let index = match &self.index {
            Index::Int { heads, next, .. } => heads.bytes() + next.capacity() * 4,
            Index::Pair { heads, next } => heads.capacity() * 21 + next.capacity() * 4,
            Index::Rows {
                rows, heads, next, ..
            } => rows.size() + heads.capacity() * 13 + next.capacity() * 4,
            Index::All => 0,
        };
        crate::query::memory::batch_bytes(&self.batch) as usize
            + index
            + self.valid.as_ref().map_or(0, |v| v.capacity())
    }

    /// Bytes of a joined row of `probe_batch`'s and this table's, on
    /// average.
    pub fn pair_bytes(&self, probe_batch: &RecordBatch) -> u64 {
        let per =
            |b: &RecordBatch| crate::query::memory::batch_bytes(b) / (b.num_rows().max(1) as u64);
        per(probe_batch) + per(&self.batch)
    }

    /// Bytes a table of `rows` rows of `row_bytes` takes, about, before
    /// it is built: its rows, and an index of one integer key.
    pub fn estimate(rows: usize, row_bytes: u64) -> u64 {
        row_bytes + rows as u64 * (4 + 2 * 13)
    }

    /// Per build row: whether its key has no NULL.
    pub fn null_free_rows(&self) -> Vec<bool> {
        self.valid
            .clone()
            .unwrap_or_else(|| vec![true; self.rows()])
    }

    /// The types probe keys must have.
    pub fn key_types(&self) -> &[A] {
        &self.key_types
    }

    pub fn rows(&self) -> usize {
        self.batch.num_rows()
    }

    /// Every (probe row, build row) pair of `n` probe rows whose keys
    /// (cast to [`HashTable::key_types`]) are equal, appended to
    /// `probe` and `build`, probe rows in order. The pairs' bytes are
    /// held in `scratch` as they grow (a key that matches many rows many
    /// times fails at the memory limit, not in the allocator).
    pub fn matches(
        &self,
        keys: &[ArrayRef],
        n: usize,
        probe: &mut Vec<u32>,
        build: &mut Vec<u32>,
        scratch: &mut Reservation,
    ) -> Result<()> {
        let valid = valid_rows(keys, n);
        let ok = |r: usize| valid.as_ref().is_none_or(|v| v[r]);
        // The pairs' bytes are counted after each block of probe rows, a
        // block being as many rows as may make PAIRS_CHECKED pairs at
        // most: no key has more build rows than the rows that are not
        // the first of their key, plus one (a table of unique keys: one;
        // 65,536 probe rows a block). A test per block, not per row,
        // keeps the probe loop as tight as it was without the check.
        let most = match &self.index {
            Index::All => self.rows(),
            _ => self.rows().saturating_sub(self.distinct) + 1,
        };
        let block = (PAIRS_CHECKED / most.max(1)).max(1);
        // Counted again once PAIRS_CHECKED more pairs are made, not after
        // every block: a table of 734,523 rows and 700,000 keys (TPC-H
        // Q21's semi join at SF 10) makes blocks of one row, and counting
        // each (atomics on the query's shared counter) took a quarter of
        // the query's time. Uncounted pairs stay under 2 × PAIRS_CHECKED.
        let mut counted = 0usize;
        let mut check = |pairs: usize| {
            if pairs < counted.saturating_add(PAIRS_CHECKED) {
                return Ok(());
            }
            counted = pairs;
            scratch.resize(pairs as u64 * 8)
        };
        let blocks = (0..n).step_by(block).map(|s| s..(s + block).min(n));
        match &self.index {
            Index::All => {
                for part in blocks {
                    for p in part {
                        for b in 0..self.rows() {
                            probe.push(p as u32);
                            build.push(b as u32);
                        }
                    }
                    check(probe.len())?;
                }
            }
            Index::Int {
                heads,
                next: _,
                unique: true,
            } => {
                let vals = as_i64(&keys[0])?;
                let vals = vals.values();
                for part in blocks {
                    for p in part {
                        if let Some(&k) = vals.get(p + PREFETCH_AHEAD) {
                            heads.prefetch(k);
                        }
                        if !ok(p) {
                            continue;
                        }
                        let b = heads.first(vals[p]);
                        if b != END {
                            probe.push(p as u32);
                            build.push(b);
                        }
                    }
                    check(probe.len())?;
                }
            }
            Index::Int { heads, next, .. } => {
                let vals = as_i64(&keys[0])?;
                let vals = vals.values();
                for part in blocks {
                    for p in part {
                        if let Some(&k) = vals.get(p + PREFETCH_AHEAD) {
                            heads.prefetch(k);
                        }
                        if !ok(p) {
                            continue;
                        }
                        let mut b = heads.first(vals[p]);
                        while b != END {
                            probe.push(p as u32);
                            build.push(b);
                            b = next[b as usize];
                        }
                    }
                    check(probe.len())?;
                }
            }
            Index::Pair { heads, next } => {
                let vals = packed_pairs(keys)?;
                for part in blocks {
                    for p in part {
                        if !ok(p) {
                            continue;
                        }
                        let mut b = heads.get(&vals[p]).copied().unwrap_or(END);
                        while b != END {
                            probe.push(p as u32);
                            build.push(b);
                            b = next[b as usize];
                        }
                    }
                    check(probe.len())?;
                }
            }
            Index::Rows {
                conv,
                rows,
                heads,
                next,
            } => {
                let probe_rows = conv.convert_columns(keys).map_err(exec_err)?;
                for part in blocks {
                    for p in part {
                        if !ok(p) {
                            continue;
                        }
                        let key = probe_rows.row(p);
                        let mut b = heads.get(&hash_bytes(key.as_ref())).copied().unwrap_or(END);
                        while b != END {
                            if rows.row(b as usize) == key {
                                probe.push(p as u32);
                                build.push(b);
                            }
                            b = next[b as usize];
                        }
                    }
                    check(probe.len())?;
                }
            }
        }
        scratch.resize(probe.len() as u64 * 8)
    }

    /// Joins a probe batch: the probe columns, then the build columns.
    /// `residual` (over those columns) must hold for a pair to match.
    /// `keep_probe`: probe rows without a match are kept with NULL build
    /// columns (the probe side of a LEFT or FULL join). `matched`: the
    /// build rows that found a match are marked (a FULL join's).
    pub fn join_batch(
        &self,
        probe_batch: &RecordBatch,
        keys: &[ArrayRef],
        residual: Option<&Expr>,
        keep_probe: bool,
        matched: Option<&Marks>,
        scratch: &mut Reservation,
    ) -> Result<RecordBatch> {
        let n = probe_batch.num_rows();
        let (mut p, mut b) = (Vec::new(), Vec::new());
        self.matches(keys, n, &mut p, &mut b, scratch)?;
        // The pairs the residual keeps, from the columns it reads; then
        // the joined rows of those, counted before they are made.
        if let Some(r) = residual {
            let mask = pair_mask(r, probe_batch, &self.batch, &p, &b)?;
            if mask.true_count() < p.len() {
                let keep = |v: &Vec<u32>| -> Vec<u32> {
                    v.iter()
                        .zip(mask.values().iter())
                        .filter(|(_, k)| *k)
                        .map(|(x, _)| *x)
                        .collect()
                };
                p = keep(&p);
                b = keep(&b);
            }
        }
        scratch.grow(self.pair_bytes(probe_batch) * p.len() as u64)?;
        let joined = assemble(probe_batch, &self.batch, &p, &b)?;
        if let Some(m) = matched {
            for &x in &b {
                m.set(x);
            }
        }
        if !keep_probe {
            return Ok(joined);
        }
        let mut hit = vec![false; n];
        for &x in &p {
            hit[x as usize] = true;
        }
        let lonely: Vec<u32> = (0..n as u32).filter(|&r| !hit[r as usize]).collect();
        if lonely.is_empty() {
            return Ok(joined);
        }
        let alone = assemble_outer(probe_batch, &self.batch, &lonely)?;
        arrow_select::concat::concat_batches(&joined.schema(), [&joined, &alone]).map_err(exec_err)
    }

    /// The probe rows of a semi join (`anti`: of an anti join): those
    /// with (without) a build row of an equal key for which `residual`
    /// (over the probe columns, then the build columns) holds.
    pub fn semi_batch(
        &self,
        probe_batch: &RecordBatch,
        keys: &[ArrayRef],
        residual: Option<&Expr>,
        anti: bool,
        scratch: &mut Reservation,
    ) -> Result<RecordBatch> {
        let hit = self.hits(probe_batch, keys, residual, scratch)?;
        let mask = BooleanArray::from(hit.iter().map(|h| *h != anti).collect::<Vec<bool>>());
        arrow_select::filter::filter_record_batch(probe_batch, &mask).map_err(exec_err)
    }

    /// Per probe row: whether some build row matches its keys (and
    /// `residual` over the pair). A NULL key matches nothing.
    pub fn hits(
        &self,
        probe_batch: &RecordBatch,
        keys: &[ArrayRef],
        residual: Option<&Expr>,
        scratch: &mut Reservation,
    ) -> Result<Vec<bool>> {
        let n = probe_batch.num_rows();
        let mut hit = vec![false; n];
        match (residual, &self.index) {
            (None, Index::All) => hit.fill(self.rows() > 0),
            (None, Index::Int { heads, .. }) => {
                let valid = valid_rows(keys, n);
                let vals = as_i64(&keys[0])?;
                let vals = vals.values();
                for (p, h) in hit.iter_mut().enumerate() {
                    if let Some(&k) = vals.get(p + PREFETCH_AHEAD) {
                        heads.prefetch(k);
                    }
                    *h = valid.as_ref().is_none_or(|v| v[p]) && heads.first(vals[p]) != END;
                }
            }
            _ => {
                let (mut p, mut b) = (Vec::new(), Vec::new());
                self.matches(keys, n, &mut p, &mut b, scratch)?;
                let keep: Vec<bool> = match residual {
                    None => vec![true; p.len()],
                    Some(r) => pair_mask(r, probe_batch, &self.batch, &p, &b)?
                        .values()
                        .iter()
                        .collect(),
                };
                for (x, k) in p.iter().zip(keep) {
                    if k {
                        hit[*x as usize] = true;
                    }
                }
            }
        }
        Ok(hit)
    }

    /// The build rows not in `matched`, with NULL probe columns of
    /// `probe_schema` before them (a FULL join's last rows).
    pub fn unmatched(&self, probe_schema: &Schema, matched: &[bool]) -> Result<RecordBatch> {
        let rows: Vec<u32> = (0..self.rows() as u32)
            .filter(|&r| !matched[r as usize])
            .collect();
        let idx = UInt32Array::from(rows);
        let mut cols: Vec<ArrayRef> = probe_schema
            .fields()
            .iter()
            .map(|f| arrow_array::new_null_array(f.data_type(), idx.len()))
            .collect();
        for c in self.batch.columns() {
            cols.push(arrow_select::take::take(c, &idx, None).map_err(exec_err)?);
        }
        let schema = joined_schema(probe_schema, &self.batch.schema());
        Ok(RecordBatch::try_new_with_options(
            schema,
            cols,
            &RecordBatchOptions::new().with_row_count(Some(idx.len())),
        )?)
    }
}

fn hash_bytes(b: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    Hasher::default().hash_one(b)
}

/// A condition's result as a filter: NULL is false.
pub(crate) fn truth(a: &ArrayRef) -> Result<BooleanArray> {
    let b = match a.data_type() {
        A::Boolean => a.as_boolean().clone(),
        A::Null => BooleanArray::from(vec![false; a.len()]),
        other => return Err(Error::Internal(format!("join condition of type {other}"))),
    };
    Ok(if b.null_count() > 0 {
        arrow_select::filter::prep_null_mask_filter(&b)
    } else {
        b
    })
}

/// The schema of joined rows: every field nullable (an outer join fills
/// either side with NULLs).
pub fn joined_schema(probe: &Schema, build: &Schema) -> Arc<Schema> {
    let fields: Vec<Field> = probe
        .fields()
        .iter()
        .chain(build.fields().iter())
        .enumerate()
        .map(|(i, f)| Field::new(format!("c{i}"), f.data_type().clone(), true))
        .collect();
    Arc::new(Schema::new(fields))
}

/// The pairs `(p[i], b[i])` as rows: probe columns, then build columns.
/// Whether `residual` (over `left`'s columns, then `right`'s) holds for
/// each pair (`l[i]` of `left`, `r[i]` of `right`); NULL is false. Only
/// the columns it reads are gathered for the pairs: a semi join's
/// `l2.l_suppkey <> l1.l_suppkey` (TPC-H Q21) reads two of a dozen.
pub(crate) fn pair_mask(
    residual: &Expr,
    left: &RecordBatch,
    right: &RecordBatch,
    l: &[u32],
    r: &[u32],
) -> Result<BooleanArray> {
    let width = left.num_columns();
    let mut used = vec![false; width + right.num_columns()];
    residual.mark_columns(&mut used);
    let mut at = vec![usize::MAX; used.len()];
    let (li, ri) = (UInt32Array::from(l.to_vec()), UInt32Array::from(r.to_vec()));
    let (mut fields, mut cols) = (Vec::new(), Vec::new());
    for (c, _) in used.iter().enumerate().filter(|(_, u)| **u) {
        at[c] = cols.len();
        let (batch, idx, i) = if c < width {
            (left, &li, c)
        } else {
            (right, &ri, c - width)
        };
        fields.push(batch.schema().field(i).clone());
        cols.push(arrow_select::take::take(batch.column(i), idx, None).map_err(exec_err)?);
    }
    let mut expr = residual.clone();
    expr.remap_columns(&mut |c| at.get(c).copied().unwrap_or(c));
    let pairs = RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(l.len())),
    )?;
    let mask = expr.eval(&pairs)?.into_array(l.len())?;
    truth(&mask)
}

pub(crate) fn assemble(
    probe: &RecordBatch,
    build: &RecordBatch,
    p: &[u32],
    b: &[u32],
) -> Result<RecordBatch> {
    let pi = UInt32Array::from(p.to_vec());
    let bi = UInt32Array::from(b.to_vec());
    let mut cols = Vec::with_capacity(probe.num_columns() + build.num_columns());
    for c in probe.columns() {
        cols.push(arrow_select::take::take(c, &pi, None).map_err(exec_err)?);
    }
    for c in build.columns() {
        cols.push(arrow_select::take::take(c, &bi, None).map_err(exec_err)?);
    }
    let schema = joined_schema(&probe.schema(), &build.schema());
    Ok(RecordBatch::try_new_with_options(
        schema,
        cols,
        &RecordBatchOptions::new().with_row_count(Some(p.len())),
    )?)
}

/// Probe rows `p` with NULL build columns.
fn assemble_outer(probe: &RecordBatch, build: &RecordBatch, p: &[u32]) -> Result<RecordBatch> {
    let pi = UInt32Array::from(p.to_vec());
    let mut cols = Vec::with_capacity(probe.num_columns() + build.num_columns());
    for c in probe.columns() {
        cols.push(arrow_select::take::take(c, &pi, None).map_err(exec_err)?);
    }
    for f in build.schema().fields() {
        cols.push(arrow_array::new_null_array(f.data_type(), p.len()));
    }
    let schema = joined_schema(&probe.schema(), &build.schema());
    Ok(RecordBatch::try_new_with_options(
        schema,
        cols,
        &RecordBatchOptions::new().with_row_count(Some(p.len())),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch() -> Reservation {
        crate::query::memory::Memory::new(u64::MAX)
            .reserve("test", 0)
            .unwrap()
    }
    use arrow_array::{Int32Array, Int64Array, StringArray};

    fn batch(cols: Vec<ArrayRef>) -> RecordBatch {
        let fields: Vec<Field> = cols
            .iter()
            .enumerate()
            .map(|(i, c)| Field::new(format!("c{i}"), c.data_type().clone(), true))
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap()
    }

    fn pairs(t: &HashTable, keys: &[ArrayRef], n: usize) -> Vec<(u32, u32)> {
        let (mut p, mut b) = (Vec::new(), Vec::new());
        t.matches(keys, n, &mut p, &mut b, &mut scratch()).unwrap();
        let mut v: Vec<(u32, u32)> = p.into_iter().zip(b).collect();
        v.sort();
        v
    }

    /// Marks at the edges of the bitmap's words: a table of 0, 1, 63,
    /// 64, 65, 127, 128 and 129 rows, each row marked or not by a pattern
    /// (first, last, every third), from 2 threads, reads back exactly
    /// the rows marked.
    #[test]
    fn marks_read_back_the_rows_marked_at_every_word_boundary() {
        for rows in [0usize, 1, 63, 64, 65, 127, 128, 129] {
            let want: Vec<bool> = (0..rows)
                .map(|r| r == 0 || r + 1 == rows || r % 3 == 1)
                .collect();
            let marks = Marks::new(rows);
            std::thread::scope(|s| {
                for half in 0..2 {
                    let (marks, want) = (&marks, &want);
                    s.spawn(move || {
                        for r in (half..rows).step_by(2) {
                            if want[r] {
                                marks.set(r as u32);
                                // Marked twice: still one mark.
                                marks.set(r as u32);
                            }
                        }
                    });
                }
            });
            assert_eq!(marks.to_vec(rows), want, "{rows} rows");
        }
    }

    #[test]
    fn integer_keys_match_every_equal_row_and_never_null() {
        let k: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), Some(2), None, Some(1)]));
        let t = HashTable::build(batch(vec![k.clone()]), &[k], vec![A::Int64], 1).unwrap();
        assert_eq!(t.distinct, 2);
        // Probe keys of another integer width are compared as values.
        let probe: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None, Some(3), Some(2)]));
        let probe = super::super::expr::cast(&probe, &A::Int64).unwrap();
        assert_eq!(pairs(&t, &[probe], 4), vec![(0, 0), (0, 3), (3, 1)]);
    }

    /// Build keys: close together (a dense index), spread out (a hash
    /// map), or at the ends of i64; some NULL, some repeated.
    fn int_keys() -> impl proptest::strategy::Strategy<Value = Vec<Option<i64>>> {
        use proptest::prelude::*;
        let key = prop_oneof![
            4 => (-20i64..20).prop_map(Some),
            1 => any::<i64>().prop_map(Some),
            1 => prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(i64::MIN + 1)].prop_map(Some),
            1 => Just(None),
        ];
        proptest::collection::vec(key, 0..60)
    }

    proptest::proptest! {
        /// An integer key's pairs and hits are those of a nested loop over
        /// both sides, by either index.
        #[test]
        fn integer_index_matches_a_nested_loop(build in int_keys(), probe in int_keys()) {
            let k: ArrayRef = Arc::new(Int64Array::from(build.clone()));
            let t = HashTable::build(batch(vec![k.clone()]), &[k], vec![A::Int64], 1).unwrap();
            let pk: ArrayRef = Arc::new(Int64Array::from(probe.clone()));
            let mut want = Vec::new();
            for (p, pv) in probe.iter().enumerate() {
                for (b, bv) in build.iter().enumerate() {
                    if pv.is_some() && pv == bv {
                        want.push((p as u32, b as u32));
                    }
                }
            }
            proptest::prop_assert_eq!(pairs(&t, std::slice::from_ref(&pk), probe.len()), want.clone());
            let hits = t
                .hits(&batch(vec![pk.clone()]), &[pk], None, &mut scratch())
                .unwrap();
            let want_hits: Vec<bool> =
                (0..probe.len()).map(|p| want.iter().any(|w| w.0 == p as u32)).collect();
            proptest::prop_assert_eq!(hits, want_hits);
            let distinct: std::collections::HashSet<i64> = build.iter().flatten().copied().collect();
            proptest::prop_assert_eq!(t.distinct, distinct.len());
        }
    }

    use proptest::strategy::Strategy;

    /// The rows of key `k` by walking its chain.
    fn chain(heads: &IntHeads, next: &[u32], k: i64) -> Vec<u32> {
        let mut out = Vec::new();
        let mut b = heads.first(k);
        while b != END {
            out.push(b);
            b = next[b as usize];
        }
        out
    }

    /// The rows of each key, ascending, by a loop over them.
    fn rows_by_key(keys: &[Option<i64>]) -> std::collections::BTreeMap<i64, Vec<u32>> {
        let mut want: std::collections::BTreeMap<i64, Vec<u32>> = Default::default();
        for (r, k) in keys.iter().enumerate() {
            if let Some(k) = k {
                want.entry(*k).or_default().push(r as u32);
            }
        }
        want
    }

    proptest::proptest! {
        /// However many workers fill it, and whichever index the keys
        /// take (dense, open addressing), each key's chain is its rows in
        /// ascending order, a key not built has none, and the distinct
        /// keys are counted once.
        #[test]
        fn integer_index_by_several_workers_chains_each_keys_rows_in_order(
            keys in proptest::collection::vec(
                proptest::prop_oneof![
                    3 => (0i64..300).prop_map(Some),
                    1 => proptest::prelude::any::<i64>().prop_map(Some),
                    1 => proptest::strategy::Just(None),
                ],
                0..400,
            ),
            workers in 1usize..5,
        ) {
            let vals: Vec<i64> = keys.iter().map(|k| k.unwrap_or(0)).collect();
            let ok = |r: usize| keys[r].is_some();
            let (heads, next, d) = int_index(&vals, &ok, workers).unwrap();
            let want = rows_by_key(&keys);
            proptest::prop_assert_eq!(d, want.len());
            for (k, rows) in &want {
                proptest::prop_assert_eq!(&chain(&heads, &next, *k), rows);
            }
            for absent in [-1i64, 301, i64::MIN, i64::MAX] {
                if !want.contains_key(&absent) {
                    proptest::prop_assert!(chain(&heads, &next, absent).is_empty());
                }
            }
        }

        /// An open-addressing table given too few slots for its keys
        /// reports it (its caller then takes a hash map) and never loops
        /// or loses a key; given enough, it finds every key's rows, with
        /// probes that wrap around the end of a partition.
        #[test]
        fn open_table_too_small_says_so_and_one_large_enough_finds_every_row(
            keys in proptest::collection::vec(proptest::prelude::any::<i16>().prop_map(|k| Some(k as i64)), 0..80),
            slots_log in 2u32..8,
            workers in 1usize..5,
        ) {
            let vals: Vec<i64> = keys.iter().map(|k| k.unwrap_or(0)).collect();
            let next: Vec<AtomicU32> = (0..vals.len()).map(|_| AtomicU32::new(END)).collect();
            let want = rows_by_key(&keys);
            let slots = 1usize << slots_log;
            match OpenMap::build(&vals, &|_| true, slots, workers, &next).unwrap() {
                None => {
                    // Some partition (of at most `slots` slots) had to
                    // take as many keys as it has slots.
                    proptest::prop_assert!(want.len() >= slots / workers.next_power_of_two().min(slots / 4).max(1));
                }
                Some((m, d)) => {
                    proptest::prop_assert_eq!(d, want.len());
                    let heads = IntHeads::Open(m);
                    let next: Vec<u32> = next.into_iter().map(AtomicU32::into_inner).collect();
                    for (k, rows) in &want {
                        proptest::prop_assert_eq!(&chain(&heads, &next, *k), rows);
                    }
                    if !want.contains_key(&i64::MAX) {
                        proptest::prop_assert!(chain(&heads, &next, i64::MAX).is_empty());
                    }
                }
            }
        }
    }

    proptest::proptest! {
        /// Two integer keys (packed into one u128): the pairs of a nested
        /// loop, a NULL in either key matching nothing; an INT key beside
        /// a BIGINT one, negative values and i64's ends included.
        #[test]
        fn two_integer_keys_match_a_nested_loop(
            build in proptest::collection::vec((int_keys(), int_keys()), 1..2),
            probe in proptest::collection::vec((int_keys(), int_keys()), 1..2),
        ) {
            let pairs_of = |v: &Vec<(Vec<Option<i64>>, Vec<Option<i64>>)>| -> Vec<(Option<i64>, Option<i64>)> {
                let (a, b) = &v[0];
                a.iter().zip(b.iter()).map(|(x, y)| (*x, y.map(|y| y % 1000))).collect()
            };
            let (bk, pk) = (pairs_of(&build), pairs_of(&probe));
            let cols = |v: &[(Option<i64>, Option<i64>)]| -> Vec<ArrayRef> {
                vec![
                    Arc::new(Int64Array::from(v.iter().map(|p| p.0).collect::<Vec<_>>())),
                    Arc::new(Int32Array::from(v.iter().map(|p| p.1.map(|y| y as i32)).collect::<Vec<_>>())),
                ]
            };
            let types = vec![A::Int64, A::Int32];
            let bc = cols(&bk);
            let t = HashTable::build(batch(bc.clone()), &bc, types, 1).unwrap();
            let packed = matches!(&t.index, Index::Pair { .. });
            proptest::prop_assert!(packed);
            let pc = cols(&pk);
            let mut want = Vec::new();
            for (p, pv) in pk.iter().enumerate() {
                for (b, bv) in bk.iter().enumerate() {
                    if pv.0.is_some() && pv.1.is_some() && pv == bv {
                        want.push((p as u32, b as u32));
                    }
                }
            }
            proptest::prop_assert_eq!(pairs(&t, &pc, pk.len()), want.clone());
            let hits = t.hits(&batch(pc.clone()), &pc, None, &mut scratch()).unwrap();
            let want_hits: Vec<bool> =
                (0..pk.len()).map(|p| want.iter().any(|w| w.0 == p as u32)).collect();
            proptest::prop_assert_eq!(hits, want_hits);
        }
    }

    #[test]
    fn close_integer_keys_take_the_dense_index_and_spread_ones_the_map() {
        let dense: ArrayRef = Arc::new(Int64Array::from(vec![10, 12, 4000, 7]));
        let t = HashTable::build(batch(vec![dense.clone()]), &[dense], vec![A::Int64], 1).unwrap();
        assert!(matches!(
            &t.index,
            Index::Int {
                heads: IntHeads::Dense { base: 7, .. },
                ..
            }
        ));
        let spread: ArrayRef = Arc::new(Int64Array::from(vec![1, 1 << 40]));
        let t =
            HashTable::build(batch(vec![spread.clone()]), &[spread], vec![A::Int64], 1).unwrap();
        assert!(matches!(
            &t.index,
            Index::Int {
                heads: IntHeads::Open(_),
                ..
            }
        ));
        let probe: ArrayRef = Arc::new(Int64Array::from(vec![1 << 40, 2, 1]));
        assert_eq!(pairs(&t, &[probe], 3), vec![(0, 1), (2, 0)]);
    }

    #[test]
    fn text_keys_compare_values_across_dictionaries() {
        // Two dictionaries that code the same values differently.
        let build: ArrayRef = Arc::new(
            vec!["b", "a", "b"]
                .into_iter()
                .collect::<arrow_array::DictionaryArray<UInt16Type>>(),
        );
        let probe: ArrayRef = Arc::new(
            vec!["a", "b", "c"]
                .into_iter()
                .collect::<arrow_array::DictionaryArray<UInt16Type>>(),
        );
        let b = batch(vec![build.clone()]);
        let bk = eval_keys(
            &[Expr::Column {
                index: 0,
                name: "k".into(),
            }],
            &b,
            None,
        )
        .unwrap();
        let t = HashTable::build(b, &bk, vec![A::Utf8], 1).unwrap();
        let pb = batch(vec![probe]);
        let pk = eval_keys(
            &[Expr::Column {
                index: 0,
                name: "k".into(),
            }],
            &pb,
            Some(&[A::Utf8]),
        )
        .unwrap();
        assert_eq!(pairs(&t, &pk, 3), vec![(0, 1), (1, 0), (1, 2)]);
    }

    #[test]
    fn left_join_keeps_lonely_probe_rows_and_full_join_marks_build_rows() {
        let k: ArrayRef = Arc::new(Int64Array::from(vec![1, 2]));
        let v: ArrayRef = Arc::new(StringArray::from(vec!["one", "two"]));
        let t = HashTable::build(batch(vec![k.clone(), v]), &[k], vec![A::Int64], 1).unwrap();
        let pk: ArrayRef = Arc::new(Int64Array::from(vec![Some(2), Some(5), None]));
        let pb = batch(vec![pk.clone()]);
        let marks = Marks::new(2);
        let out = t
            .join_batch(&pb, &[pk], None, true, Some(&marks), &mut scratch())
            .unwrap();
        let matched = marks.to_vec(2);
        assert_eq!(out.num_rows(), 3);
        assert_eq!(out.column(2).null_count(), 2);
        assert_eq!(matched, vec![false, true]);
        let rest = t.unmatched(&pb.schema(), &matched).unwrap();
        assert_eq!(rest.num_rows(), 1);
        assert_eq!(rest.column(0).null_count(), 1);
    }
}
