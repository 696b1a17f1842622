//! The primary-key index: immutable sorted runs of key → row id.
//!
//! A keyed table's rows are numbered in load order (the row id: rows of
//! the table's segments counted in manifest order). Each load extracts the
//! key of every row while parsing (in parallel, per batch, sorted there),
//! and at the end merges the sorted batches into a run file, checking
//! every key against the table's runs through their bloom filters.
//!
//! Runs are merged by size tier (see [`pick_merge`]): when a tier holds
//! [`MERGE_FANIN`] runs they become one run of the next tier, so a table
//! of N keys has at most `(MERGE_FANIN - 1)` runs per tier, about
//! `3 log4(N / 64 Ki)` in all, and each key is rewritten once per tier: a
//! load never pays for a merge of the whole table. A merge writes a new
//! run and swaps the manifest, so it is atomic like a load. The run format
//! is in [`run`] and FORMAT.md.

pub mod run;

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal64Type, Int32Type, Int64Type, Time64MicrosecondType,
    TimestampMicrosecondType,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType as ArrowType;

use crate::batch::{BatchBuilder, Column, DataType, Schema, ValueOptions};
use crate::error::{Error, Result};
use run::BloomKey;
pub use run::{BlockEncoder, Run, RunWriter, encode_i64, key_hash};

/// A row's position in its table, in load order.
pub type RowId = u64;

/// Runs of one size tier merged into one.
pub const MERGE_FANIN: usize = 4;
/// Runs below `4 * TIER_BASE` entries are tier 0; tier t holds runs of
/// `[TIER_BASE * 4^t, TIER_BASE * 4^(t+1))` entries from there on.
const TIER_BASE: u64 = 1 << 16;

/// The size tier of a run of `entries` keys.
pub fn tier(entries: u64) -> u32 {
    let mut t = 0;
    let mut limit = TIER_BASE * 4;
    while entries >= limit && t < 31 {
        t += 1;
        limit = limit.saturating_mul(4);
    }
    t
}

/// The runs (positions in `entries`, the runs' sizes) that should be
/// merged next: every run of the lowest tier holding at least
/// [`MERGE_FANIN`] runs; `None` when no tier does.
pub fn pick_merge(entries: &[u64]) -> Option<Vec<usize>> {
    let mut tiers: Vec<u32> = entries.iter().map(|&e| tier(e)).collect();
    tiers.sort_unstable();
    tiers.dedup();
    tiers.into_iter().find_map(|t| {
        let picked: Vec<usize> = (0..entries.len())
            .filter(|&i| tier(entries[i]) == t)
            .collect();
        (picked.len() >= MERGE_FANIN).then_some(picked)
    })
}

/// The keys of one batch in key order (equal keys by row), each with its
/// row: stored in that order, so that merging batches reads memory
/// sequentially.
pub struct KeyBatch {
    bytes: Vec<u8>,
    /// The `i`-th key is `bytes[offs[i]..offs[i+1]]`; empty when every key
    /// is 8 bytes (integers), the `i`-th at `8 * i`.
    offs: Vec<u32>,
    /// The first eight bytes of each key as a big-endian integer (zero
    /// padded): most comparisons end there.
    prefixes: Vec<u64>,
    /// [`key_hash`] of each key (the bloom filters' hash).
    hashes: Vec<u64>,
    /// The hashes again, ordered by their top [`ORDER_BITS`] bits, each with
    /// its key's position, when [`KeyBatch::order_by_hash`] was called
    /// (for [`check_batches`]).
    by_hash: Vec<(u64, u32)>,
    rows: Vec<u32>,
    /// The first row whose key is NULL, if any.
    pub null_row: Option<u32>,
}

/// The key of row `i` of a column, before sorting.
struct Unsorted<'a> {
    bytes: &'a [u8],
    offs: &'a [u32],
}

impl Unsorted<'_> {
    fn key(&self, i: usize) -> &[u8] {
        if self.offs.is_empty() {
            &self.bytes[8 * i..8 * i + 8]
        } else {
            &self.bytes[self.offs[i] as usize..self.offs[i + 1] as usize]
        }
    }
}

fn prefix_of(k: &[u8]) -> u64 {
    let mut p = [0u8; 8];
    let m = k.len().min(8);
    p[..m].copy_from_slice(&k[..m]);
    u64::from_be_bytes(p)
}

impl KeyBatch {
    /// Extracts and sorts the keys of a column.
    pub fn from_array(a: &dyn Array) -> Result<KeyBatch> {
        let n = a.len();
        let null_row = (0..n).find(|&i| a.is_null(i)).map(|i| i as u32);
        let mut bytes = Vec::new();
        let mut offs = Vec::new();
        let ints: Option<Vec<i64>> = match a.data_type() {
            ArrowType::Int32 => Some(
                a.as_primitive::<Int32Type>()
                    .values()
                    .iter()
                    .map(|&v| v as i64)
                    .collect(),
            ),
            ArrowType::Int64 => Some(a.as_primitive::<Int64Type>().values().to_vec()),
            ArrowType::Date32 => Some(
                a.as_primitive::<Date32Type>()
                    .values()
                    .iter()
                    .map(|&v| v as i64)
                    .collect(),
            ),
            ArrowType::Timestamp(_, _) => Some(
                a.as_primitive::<TimestampMicrosecondType>()
                    .values()
                    .to_vec(),
            ),
            ArrowType::Time64(_) => {
                Some(a.as_primitive::<Time64MicrosecondType>().values().to_vec())
            }
            ArrowType::Decimal64(_, _) => Some(a.as_primitive::<Decimal64Type>().values().to_vec()),
            _ => None,
        };
        if let Some(ints) = ints {
            bytes.reserve(8 * n);
            for v in ints {
                bytes.extend_from_slice(&encode_i64(v));
            }
        } else {
            let plain: ArrayRef;
            let s = match a.data_type() {
                ArrowType::Utf8 => a.as_string::<i32>(),
                ArrowType::Dictionary(_, _) => {
                    plain = crate::batch::dict::decode(&arrow_array::make_array(a.to_data()))?;
                    plain.as_string::<i32>()
                }
                other => {
                    return Err(Error::Internal(format!("a key column of type {other}")));
                }
            };
            let o = s.value_offsets();
            let (first, last) = (o[0] as usize, o[n] as usize);
            bytes.extend_from_slice(&s.value_data()[first..last]);
            offs = o.iter().map(|&x| (x as usize - first) as u32).collect();
        }
        let src = Unsorted {
            bytes: &bytes,
            offs: &offs,
        };
        // Sort by the first eight bytes as an integer, then the whole key
        // (ties are rare), then the row: the first of equal keys first.
        let mut pairs: Vec<(u64, u32)> =
            (0..n).map(|i| (prefix_of(src.key(i)), i as u32)).collect();
        pairs.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| src.key(a.1 as usize).cmp(src.key(b.1 as usize)))
                .then(a.1.cmp(&b.1))
        });
        let mut sorted_bytes = Vec::with_capacity(bytes.len());
        let mut sorted_offs = Vec::with_capacity(if offs.is_empty() { 0 } else { n + 1 });
        if !offs.is_empty() {
            sorted_offs.push(0);
        }
        for &(_, r) in &pairs {
            sorted_bytes.extend_from_slice(src.key(r as usize));
            if !offs.is_empty() {
                sorted_offs.push(sorted_bytes.len() as u32);
            }
        }
        let mut kb = KeyBatch {
            bytes: sorted_bytes,
            offs: sorted_offs,
            prefixes: pairs.iter().map(|p| p.0).collect(),
            hashes: Vec::with_capacity(n),
            by_hash: Vec::new(),
            rows: pairs.iter().map(|p| p.1).collect(),
            null_row,
        };
        for i in 0..n {
            let h = key_hash(kb.sorted_key(i));
            kb.hashes.push(h);
        }
        Ok(kb)
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The `i`-th key in key order.
    pub fn sorted_key(&self, i: usize) -> &[u8] {
        if self.offs.is_empty() {
            &self.bytes[8 * i..8 * i + 8]
        } else {
            &self.bytes[self.offs[i] as usize..self.offs[i + 1] as usize]
        }
    }

    /// The first eight bytes of the `i`-th key in key order, as a
    /// big-endian integer (zero padded): ordering these orders the keys,
    /// except between keys that share them.
    pub fn sorted_prefix(&self, i: usize) -> u64 {
        self.prefixes[i]
    }

    /// The rows in key order, taken out: the caller puts its rows in this
    /// order, after which the `i`-th key's row is `i`.
    pub fn take_order(&mut self) -> Vec<u32> {
        let identity = (0..self.rows.len() as u32).collect();
        let order = std::mem::replace(&mut self.rows, identity);
        self.null_row = self
            .null_row
            .and_then(|n| order.iter().position(|&r| r == n).map(|i| i as u32));
        order
    }

    /// The row of the `i`-th key in key order.
    pub fn sorted_row(&self, i: usize) -> u32 {
        self.rows[i]
    }

    /// Memory held, for the loader's budget.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
            + 4 * self.offs.capacity()
            + 8 * self.prefixes.capacity()
            + 8 * self.hashes.capacity()
            + 16 * self.by_hash.capacity()
            + 4 * self.rows.capacity()
    }

    /// Orders the keys' hashes by their top bits for [`check_batches`]
    /// (a counting sort): done by the parse workers, batch by batch, in
    /// parallel and in the cache, rather than for all keys at the end.
    pub fn order_by_hash(&mut self) {
        self.by_hash = hash_order(&self.hashes);
    }
}

/// Two rows with the same key (row ids: the earlier first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub key: Vec<u8>,
    pub first: RowId,
    pub second: RowId,
}

/// The outcome of building a run: written, or a duplicate key found.
pub enum Built {
    Run { entries: u64, bytes: u64 },
    Duplicate(Conflict),
}

#[derive(Clone, Copy)]
struct Head<'a> {
    prefix: u64,
    key: &'a [u8],
    hash: u64,
    row: RowId,
    batch: usize,
    next: usize,
}

impl PartialEq for Head<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Head<'_> {}
impl PartialOrd for Head<'_> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Head<'_> {
    // Reversed: BinaryHeap is a max-heap, the merge wants the least.
    fn cmp(&self, o: &Self) -> Ordering {
        o.prefix
            .cmp(&self.prefix)
            .then_with(|| o.key.cmp(self.key))
            .then(o.row.cmp(&self.row))
    }
}

/// Merges sorted key batches (each with the row id of its first row) into
/// a run at `path`, after checking every key against the table's runs
/// (`table`, all at once: [`check_batches`]) and, as it merges, against
/// `older` runs (those the load itself wrote; by bloom filter, then a block
/// read). Stops at the first duplicate, inside the batches or against a
/// run, and leaves the file, if any, for the caller to remove.
pub fn build_run(
    path: &Path,
    batches: &[(RowId, KeyBatch)],
    table: &[Arc<Run>],
    older: &[Arc<Run>],
    threads: usize,
) -> Result<Built> {
    if let Some(c) = check_batches(batches, table, threads)? {
        return Ok(Built::Duplicate(c));
    }
    build_run_with(path, batches, older, threads, PARALLEL_MIN_KEYS, PART_KEYS)
}

/// Bits of a hash that order the keys for a check ([`hash_order`]): 4,096
/// buckets keep the counting sort's write positions in the L2 cache, and a
/// bucket still spans a small stretch of every filter (7.5 KiB of a 30 MiB
/// one).
const ORDER_BITS: u32 = 12;
const ORDER_SHIFT: u32 = 64 - ORDER_BITS;
/// Keys probed together: their filter lines are requested first, then
/// tested, so that the memory accesses overlap.
const GROUP: usize = 32;
/// Keys gathered from the batches before they are probed: whole buckets,
/// at least this many, so that their filter lines are read once.
const GATHER: usize = 4096;

/// Hashes with their positions, ordered by the top [`ORDER_BITS`] bits.
fn hash_order(hashes: &[u64]) -> Vec<(u64, u32)> {
    let mut starts = vec![0u32; (1 << ORDER_BITS) + 1];
    for &h in hashes {
        starts[(h >> ORDER_SHIFT) as usize + 1] += 1;
    }
    for b in 1..starts.len() {
        starts[b] += starts[b - 1];
    }
    let mut order = vec![(0u64, 0u32); hashes.len()];
    for (i, &h) in hashes.iter().enumerate() {
        let b = &mut starts[(h >> ORDER_SHIFT) as usize];
        order[*b as usize] = (h, i as u32);
        *b += 1;
    }
    order
}

/// Checks the keys of `batches` against `runs`, which must hold none of
/// them; returns the conflict of the first such key in row order.
///
/// Bloom filter blocks are chosen by the top bits of the hash in every
/// run, so keys taken in hash order walk every filter once, from start to
/// end: the batches' keys, each batch already in hash order
/// ([`KeyBatch::order_by_hash`]), are merged bucket by bucket, a few
/// thousand at a time, and probed; `threads` threads take a share of the
/// buckets each. A key is read only on a bloom hit. Checking each parse
/// block's keys on their own walked every filter once a block: for 2M keys
/// against three runs of 18M keys, four times the memory traffic.
pub fn check_batches(
    batches: &[(RowId, KeyBatch)],
    runs: &[Arc<Run>],
    threads: usize,
) -> Result<Option<Conflict>> {
    check_batches_with(batches, runs, threads, GATHER)
}

fn check_batches_with(
    batches: &[(RowId, KeyBatch)],
    runs: &[Arc<Run>],
    threads: usize,
    gather: usize,
) -> Result<Option<Conflict>> {
    let gather = gather.max(1);
    let total: usize = batches.iter().map(|(_, b)| b.len()).sum();
    if runs.is_empty() || total == 0 {
        return Ok(None);
    }
    let computed: Vec<Vec<(u64, u32)>> = batches
        .iter()
        .map(|(_, kb)| {
            if kb.by_hash.len() == kb.len() {
                Vec::new()
            } else {
                hash_order(&kb.hashes)
            }
        })
        .collect();
    let orders: Vec<&[(u64, u32)]> = batches
        .iter()
        .zip(&computed)
        .map(|((_, kb), c)| {
            if kb.by_hash.len() == kb.len() {
                &kb.by_hash[..]
            } else {
                &c[..]
            }
        })
        .collect();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let buckets = 1usize << ORDER_BITS;
    let threads = threads.clamp(1, (total / gather).clamp(1, buckets));
    let share = |t: usize| {
        let (lo, hi) = (t * buckets / threads, (t + 1) * buckets / threads);
        probe_buckets(batches, &orders, runs, lo as u64, hi as u64, gather, &stop)
    };
    let found = if threads == 1 {
        share(0)?
    } else {
        let results: Vec<Result<bool>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads).map(|t| s.spawn(move || share(t))).collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::Internal("a key-check thread panicked".into()))
                    })
                })
                .collect()
        });
        let mut any = false;
        for r in results {
            any |= r?;
        }
        any
    };
    if found {
        first_conflict(batches, runs)
    } else {
        Ok(None)
    }
}

/// Probes `runs` for the keys whose hashes fall in buckets `lo..hi`:
/// whether any is there. Stops early when `stop` is set (by another
/// thread's find) and sets it on a find.
fn probe_buckets(
    batches: &[(RowId, KeyBatch)],
    orders: &[&[(u64, u32)]],
    runs: &[Arc<Run>],
    lo: u64,
    hi: u64,
    gather: usize,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<bool> {
    let mut at: Vec<usize> = orders
        .iter()
        .map(|o| o.partition_point(|&(h, _)| h >> ORDER_SHIFT < lo))
        .collect();
    let mut keys: Vec<(u64, u32, u32)> = Vec::with_capacity(2 * gather);
    let mut bks = [BloomKey::new(0); GROUP];
    let mut block = Vec::new();
    let mut bucket = lo;
    while bucket < hi {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(false);
        }
        // Whole buckets until `gather` keys (or the share's end).
        keys.clear();
        while bucket < hi && keys.len() < gather {
            bucket += 1;
            for (b, o) in orders.iter().enumerate() {
                let i = &mut at[b];
                while let Some(&(h, pos)) = o.get(*i) {
                    if h >> ORDER_SHIFT >= bucket {
                        break;
                    }
                    keys.push((h, b as u32, pos));
                    *i += 1;
                }
            }
        }
        for group in keys.chunks(GROUP) {
            // The keys' in-block bits are computed in the first pass, with
            // the prefetches, in place: read back at once, as vectors,
            // the words written one at a time stalled on store forwarding.
            for (bk, &(h, _, _)) in bks.iter_mut().zip(group) {
                bk.set(h);
                for r in runs {
                    r.prefetch(h);
                }
            }
            for (bk, &(_, b, pos)) in bks.iter().zip(group) {
                for r in runs {
                    if !r.may_contain_key(bk) {
                        continue;
                    }
                    let key = batches[b as usize].1.sorted_key(pos as usize);
                    if r.get_unfiltered_read(key, &mut block)?.is_some() {
                        stop.store(true, std::sync::atomic::Ordering::Relaxed);
                        return Ok(true);
                    }
                }
            }
        }
    }
    Ok(false)
}

/// The conflict of the first key of `batches`, in row order, found in
/// `runs` (once a key is known to be there: the message names the first,
/// whichever thread found one).
fn first_conflict(batches: &[(RowId, KeyBatch)], runs: &[Arc<Run>]) -> Result<Option<Conflict>> {
    let mut order: Vec<(RowId, usize, usize)> = Vec::new();
    for (b, (base, kb)) in batches.iter().enumerate() {
        order.extend((0..kb.len()).map(|i| (base + kb.sorted_row(i) as u64, b, i)));
    }
    order.sort_unstable();
    for (row, b, i) in order {
        let kb = &batches[b].1;
        let key = kb.sorted_key(i);
        for r in runs {
            if let Some(first) = r.get_hashed(key, kb.hashes[i])? {
                return Ok(Some(Conflict {
                    key: key.to_vec(),
                    first,
                    second: row,
                }));
            }
        }
    }
    Ok(None)
}

fn build_run_with(
    path: &Path,
    batches: &[(RowId, KeyBatch)],
    older: &[Arc<Run>],
    threads: usize,
    parallel_min_keys: usize,
    part_keys: usize,
) -> Result<Built> {
    let total: usize = batches.iter().map(|(_, b)| b.len()).sum();
    let mut w = RunWriter::create(path)?;
    // Key ranges merged in parallel, `threads` at a time, each into its
    // own blocks in memory, appended in order: parts of at most
    // PART_KEYS keys bound the memory.
    let parts = if threads <= 1 || total < parallel_min_keys {
        1
    } else {
        // A multiple of the threads, so that no round runs short.
        total.div_ceil(part_keys.max(1)).div_ceil(threads) * threads
    };
    let bounds = part_bounds(batches, parts);
    let ranges: Vec<&[Vec<usize>]> = bounds.windows(2).collect();
    let conflict = in_parallel(ranges.len(), threads, &mut w, |i| {
        merge_part(batches, &ranges[i][0], &ranges[i][1], older)
    })?;
    if let Some(c) = conflict {
        return Ok(Built::Duplicate(c));
    }
    let (entries, bytes) = w.finish()?;
    Ok(Built::Run { entries, bytes })
}

/// Runs `part(0..parts)` on up to `threads` threads (each takes the next
/// part from a counter) and appends the results to `w` in part order as
/// they arrive, so that writing overlaps merging; at most about two
/// finished parts a thread wait in memory. Stops at the first duplicate.
fn in_parallel<F>(
    parts: usize,
    threads: usize,
    w: &mut RunWriter,
    part: F,
) -> Result<Option<Conflict>>
where
    F: Fn(usize) -> Result<Result<BlockEncoder, Conflict>> + Sync,
{
    let threads = threads.clamp(1, parts.max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (tx, rx) = std::sync::mpsc::sync_channel(threads);
    std::thread::scope(|s| {
        for _ in 0..threads {
            let tx = tx.clone();
            let (next, stop, part) = (&next, &stop, &part);
            s.spawn(move || {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= parts || stop.load(std::sync::atomic::Ordering::Relaxed) {
                        return;
                    }
                    if tx.send((i, part(i))).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        let mut pending = std::collections::BTreeMap::new();
        let mut want = 0;
        let mut outcome = Ok(None);
        for (i, r) in rx {
            pending.insert(i, r);
            while let Some(r) = pending.remove(&want) {
                want += 1;
                let step = match r {
                    Ok(Ok(enc)) => w.append(enc).map(|_| None),
                    Ok(Err(c)) => Ok(Some(c)),
                    Err(e) => Err(e),
                };
                match step {
                    Ok(None) => {}
                    other => {
                        outcome = other;
                        stop.store(true, std::sync::atomic::Ordering::Relaxed);
                        break;
                    }
                }
            }
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
        }
        // Dropping the receiver unblocks workers waiting to send.
        outcome
    })
}

/// Below this many keys a load's run is merged on one thread.
const PARALLEL_MIN_KEYS: usize = 1 << 18;
/// Keys in one part of a parallel merge (its blocks are held in memory,
/// ~13 bytes a key for numeric ids, until appended).
const PART_KEYS: usize = 4 << 20;

/// Where each of `parts` key ranges starts in each batch: `parts + 1`
/// rows of per-batch positions, the first all 0, the last the lengths.
/// Splitters come from an even sample of every batch; equal keys always
/// fall in one range, so duplicates meet in one part.
fn part_bounds(batches: &[(RowId, KeyBatch)], parts: usize) -> Vec<Vec<usize>> {
    let mut bounds = vec![vec![0; batches.len()]];
    if parts > 1 {
        let mut sample: Vec<&[u8]> = Vec::new();
        for (_, kb) in batches {
            let step = (kb.len() / (4 * parts)).max(1);
            sample.extend((0..kb.len()).step_by(step).map(|i| kb.sorted_key(i)));
        }
        sample.sort_unstable();
        sample.dedup();
        for j in 1..parts {
            let Some(&split) = sample.get(j * sample.len() / parts) else {
                continue;
            };
            bounds.push(
                batches
                    .iter()
                    .map(|(_, kb)| {
                        // First position whose key is >= split.
                        let (mut lo, mut hi) = (0, kb.len());
                        while lo < hi {
                            let mid = (lo + hi) / 2;
                            if kb.sorted_key(mid) < split {
                                lo = mid + 1;
                            } else {
                                hi = mid;
                            }
                        }
                        lo
                    })
                    .collect(),
            );
        }
    }
    bounds.push(batches.iter().map(|(_, kb)| kb.len()).collect());
    bounds
}

/// Merges positions `lo[b]..hi[b]` of every batch into blocks; a
/// duplicate (inside, or against `older`) stops it.
fn merge_part(
    batches: &[(RowId, KeyBatch)],
    lo: &[usize],
    hi: &[usize],
    older: &[Arc<Run>],
) -> Result<Result<BlockEncoder, Conflict>> {
    let mut enc = BlockEncoder::new();
    let merged = merge_keys(batches, lo, hi, older, |key, row, hash| {
        enc.add(key, row, hash)
    })?;
    Ok(merged.map(|()| enc))
}

/// The first key of `batches` (in key order) that repeats one before it,
/// found by merging them; nothing is written. Key ranges are merged on up
/// to `threads` threads. What [`build_run`] finds without a table's or
/// older runs to check against, at the cost of the merge alone.
pub fn first_repeat(batches: &[(RowId, KeyBatch)], threads: usize) -> Result<Option<Conflict>> {
    let total: usize = batches.iter().map(|(_, b)| b.len()).sum();
    let parts = if threads <= 1 || total < PARALLEL_MIN_KEYS {
        1
    } else {
        total.div_ceil(PART_KEYS).div_ceil(threads) * threads
    };
    let bounds = part_bounds(batches, parts);
    let ranges: Vec<&[Vec<usize>]> = bounds.windows(2).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let found: std::sync::Mutex<Vec<(usize, Result<Conflict>)>> = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, ranges.len().max(1)) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(r) = ranges.get(i) else { return };
                    let outcome = match merge_keys(batches, &r[0], &r[1], &[], |_, _, _| Ok(())) {
                        Ok(Ok(())) => continue,
                        Ok(Err(c)) => Ok(c),
                        Err(e) => Err(e),
                    };
                    if let Ok(mut f) = found.lock() {
                        f.push((i, outcome));
                    }
                }
            });
        }
    });
    let mut found = found
        .into_inner()
        .map_err(|_| Error::Internal("a key check panicked".into()))?;
    found.sort_by_key(|(i, _)| *i);
    found.into_iter().next().map(|(_, c)| c).transpose()
}

/// Merges key range `lo..hi` of each batch, passing each key with its row
/// and hash to `emit` in key order; stops at the first key that repeats
/// the one before it or is in an `older` run.
fn merge_keys(
    batches: &[(RowId, KeyBatch)],
    lo: &[usize],
    hi: &[usize],
    older: &[Arc<Run>],
    mut emit: impl FnMut(&[u8], RowId, u64) -> Result<()>,
) -> Result<Result<(), Conflict>> {
    let mut heap = BinaryHeap::with_capacity(batches.len());
    let head = |b: usize, i: usize| {
        let (base, kb) = &batches[b];
        Head {
            prefix: kb.prefixes[i],
            key: kb.sorted_key(i),
            hash: kb.hashes[i],
            row: base + kb.sorted_row(i) as u64,
            batch: b,
            next: i + 1,
        }
    };
    for b in 0..batches.len() {
        if lo[b] < hi[b] {
            heap.push(head(b, lo[b]));
        }
    }
    let mut last: Option<(Vec<u8>, RowId)> = None;
    while let Some(mut top) = heap.peek_mut() {
        let h = Head { ..*top };
        // The batch's next key replaces the top in place (one sift down
        // instead of a pop and a push).
        if h.next < hi[h.batch] {
            *top = head(h.batch, h.next);
        } else {
            std::collections::binary_heap::PeekMut::pop(top);
        }
        if let Some((k, r)) = &last
            && k.as_slice() == h.key
        {
            return Ok(Err(Conflict {
                key: h.key.to_vec(),
                first: *r,
                second: h.row,
            }));
        }
        for run in older {
            if let Some(r) = run.get_hashed(h.key, h.hash)? {
                return Ok(Err(Conflict {
                    key: h.key.to_vec(),
                    first: r,
                    second: h.row,
                }));
            }
        }
        emit(h.key, h.row, h.hash)?;
        match &mut last {
            Some((k, r)) => {
                k.clear();
                k.extend_from_slice(h.key);
                *r = h.row;
            }
            None => last = Some((h.key.to_vec(), h.row)),
        }
    }
    Ok(Ok(()))
}

/// Merges runs (whose keys never repeat) into one at `path`, by key
/// ranges on up to `threads` threads (ranges cut at block first keys of
/// the runs), appended in order.
pub fn merge_runs(runs: &[Arc<Run>], path: &Path, threads: usize) -> Result<(u64, u64)> {
    merge_runs_with(runs, path, threads, PARALLEL_MIN_KEYS, PART_KEYS)
}

fn merge_runs_with(
    runs: &[Arc<Run>],
    path: &Path,
    threads: usize,
    parallel_min_keys: usize,
    part_keys: usize,
) -> Result<(u64, u64)> {
    let total: u64 = runs.iter().map(|r| r.entries()).sum();
    let parts = if threads <= 1 || (total as usize) < parallel_min_keys {
        1
    } else {
        (total as usize)
            .div_ceil(part_keys.max(1))
            .div_ceil(threads)
            * threads
    };
    // Splitters: evenly spaced among the block first keys of every run.
    let mut firsts: Vec<&[u8]> = runs.iter().flat_map(|r| r.block_first_keys()).collect();
    firsts.sort_unstable();
    firsts.dedup();
    let mut cuts: Vec<Option<&[u8]>> = vec![None];
    for j in 1..parts {
        if let Some(&k) = firsts.get(j * firsts.len() / parts)
            && cuts.last().is_none_or(|c| c.is_none_or(|c| c < k))
        {
            cuts.push(Some(k));
        }
    }
    cuts.push(None);
    let mut w = RunWriter::create(path)?;
    let ranges: Vec<KeyRange<'_>> = cuts.windows(2).map(|c| (c[0], c[1])).collect();
    let conflict = in_parallel(ranges.len(), threads, &mut w, |i| {
        merge_range(runs, ranges[i].0, ranges[i].1).map(Ok)
    })?;
    if conflict.is_some() {
        return Err(Error::Internal("a merge of runs found a duplicate".into()));
    }
    w.finish()
}

/// Keys `[lo, hi)`; `None` is unbounded.
type KeyRange<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// Merges the entries with keys in `[lo, hi)` of every run into blocks.
/// Runs are few (a tier's worth, or a table's): the smallest current key
/// is found by a scan over the cursors, with no allocation per entry.
fn merge_range(runs: &[Arc<Run>], lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<BlockEncoder> {
    let mut cursors = runs
        .iter()
        .map(|r| run::Cursor::seek(r, lo))
        .collect::<Result<Vec<_>>>()?;
    let mut enc = BlockEncoder::new();
    loop {
        let mut best: Option<usize> = None;
        for (i, c) in cursors.iter().enumerate() {
            let Some((k, _)) = c.current() else { continue };
            if hi.is_some_and(|h| k >= h) {
                continue;
            }
            if best.is_none_or(|b| cursors[b].current().is_none_or(|(bk, _)| k < bk)) {
                best = Some(i);
            }
        }
        let Some(b) = best else { break };
        let (key, loc) = cursors[b].current().unwrap_or_default();
        enc.add(key, loc, key_hash(key))
            .map_err(|_| Error::Corrupt {
                file: cursors[b].run().path().to_path_buf(),
                message: "a key repeats across runs".into(),
            })?;
        cursors[b].advance()?;
    }
    Ok(enc)
}

/// A key given as text (the command line, a keys file) in the index's
/// byte form for a key column of `column`'s type.
pub fn encode_key_text(column: &Column, text: &str, values: &Arc<ValueOptions>) -> Result<Vec<u8>> {
    match column.data_type {
        DataType::Text => Ok(text.as_bytes().to_vec()),
        DataType::BigInt | DataType::Int => {
            let v: i64 = text.trim().parse().map_err(|_| {
                Error::Config(format!(
                    "key {text:?} is not a {} (the key column {} is one)",
                    column.data_type, column.name
                ))
            })?;
            if column.data_type == DataType::Int && i32::try_from(v).is_err() {
                return Err(Error::Config(format!(
                    "key {text:?} is out of range for INT column {}",
                    column.name
                )));
            }
            Ok(encode_i64(v).to_vec())
        }
        _ => {
            let one = Schema {
                columns: vec![Column {
                    primary_key: false,
                    default: None,
                    ..column.clone()
                }],
            };
            let mut b = BatchBuilder::new(&one, values.clone(), 1);
            b.push(0, text.trim().as_bytes(), false).map_err(|m| {
                Error::Config(format!("key {text:?} for column {}: {m}", column.name))
            })?;
            let (batch, _) = b.finish()?;
            let kb = KeyBatch::from_array(batch.column(0).as_ref())?;
            Ok(kb.sorted_key(0).to_vec())
        }
    }
}

/// A key's bytes as text for messages.
pub fn display_key(data_type: DataType, key: &[u8]) -> String {
    match (data_type, <[u8; 8]>::try_from(key)) {
        (DataType::Text, _) => format!("'{}'", String::from_utf8_lossy(key)),
        (DataType::BigInt | DataType::Int, Ok(b)) => {
            ((u64::from_be_bytes(b) ^ (1 << 63)) as i64).to_string()
        }
        (DataType::Decimal { scale, .. }, Ok(b)) => crate::batch::format::format_decimal(
            (u64::from_be_bytes(b) ^ (1 << 63)) as i64,
            scale as u32,
        ),
        (DataType::Time, Ok(b)) => {
            crate::batch::format_time((u64::from_be_bytes(b) ^ (1 << 63)) as i64)
        }
        (_, Ok(b)) => format!("{} (as stored)", (u64::from_be_bytes(b) ^ (1 << 63)) as i64),
        _ => format!("{key:?}"),
    }
}

/// The runs of a table, open, newest last.
pub struct KeyIndex {
    runs: Vec<Arc<Run>>,
}

impl KeyIndex {
    pub fn new(runs: Vec<Arc<Run>>) -> KeyIndex {
        KeyIndex { runs }
    }

    pub fn runs(&self) -> &[Arc<Run>] {
        &self.runs
    }

    /// The row id of `key` (in index byte form), or `None`.
    pub fn get(&self, key: &[u8]) -> Result<Option<RowId>> {
        let h = key_hash(key);
        for r in self.runs.iter().rev() {
            if let Some(id) = r.get_hashed(key, h)? {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_keep_few_runs_and_merge_each_key_once_per_tier() {
        assert_eq!(tier(0), 0);
        assert_eq!(tier(4 * TIER_BASE - 1), 0);
        assert_eq!(tier(4 * TIER_BASE), 1);
        assert_eq!(tier(16 * TIER_BASE), 2);
        assert_eq!(pick_merge(&[10, 20, 30]), None);
        assert_eq!(pick_merge(&[10, 20, 30, 40]), Some(vec![0, 1, 2, 3]));
        // The big run is another tier: left alone.
        assert_eq!(
            pick_merge(&[10, 1 << 30, 20, 30, 40]),
            Some(vec![0, 2, 3, 4])
        );
        // 1,000 loads of 100,000 keys: runs stay few, rewrites stay
        // logarithmic.
        let (mut runs, mut rewritten, mut most) = (Vec::<u64>::new(), 0u64, 0usize);
        for _ in 0..1000 {
            runs.push(100_000);
            while let Some(p) = pick_merge(&runs) {
                let merged: u64 = p.iter().map(|&i| runs[i]).sum();
                rewritten += merged;
                for &i in p.iter().rev() {
                    runs.remove(i);
                }
                runs.push(merged);
            }
            most = most.max(runs.len());
        }
        assert_eq!(runs.iter().sum::<u64>(), 100_000_000);
        assert!(most <= 3 * 6 + 1, "{most} runs at once");
        // Each key rewritten about once per tier (log4(1000) ~ 5).
        assert!(rewritten <= 6 * 100_000_000, "{rewritten} keys rewritten");
    }
    use arrow_array::{Int64Array, StringArray};

    #[test]
    fn text_keys_sort_as_bytes_and_first_row_wins_ties() {
        let a = StringArray::from(vec!["b", "a", "ab", "a", "abcdefghij", "abcdefghi"]);
        let kb = KeyBatch::from_array(&a).unwrap();
        let got: Vec<(&[u8], u32)> = (0..kb.len())
            .map(|i| (kb.sorted_key(i), kb.sorted_row(i)))
            .collect();
        let want: Vec<(&[u8], u32)> = vec![
            (b"a", 1),
            (b"a", 3),
            (b"ab", 2),
            (b"abcdefghi", 5),
            (b"abcdefghij", 4),
            (b"b", 0),
        ];
        assert_eq!(got, want);
        assert_eq!(kb.null_row, None);
    }

    #[test]
    fn null_keys_are_reported() {
        let a = Int64Array::from(vec![Some(3), None, Some(-1)]);
        let kb = KeyBatch::from_array(&a).unwrap();
        assert_eq!(kb.null_row, Some(1));
        assert_eq!(kb.sorted_key(0), encode_i64(-1));
    }

    fn tmp(name: &str) -> std::path::PathBuf {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        std::env::temp_dir().join(format!("sluice-idx-{}-{n}-{name}", std::process::id()))
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..Default::default() })]

        /// The parallel merge (many key ranges, several threads) writes
        /// the same entries as a model, and finds a planted duplicate.
        #[test]
        fn parallel_merge_agrees_with_a_model(
            batches in proptest::collection::vec(
                proptest::collection::vec(0u32..5000, 0..300), 1..8),
            threads in 1usize..4,
            part_keys in 1usize..200,
            dup in proptest::prelude::any::<bool>(),
        ) {
            // Keys unique across batches unless `dup` plants one.
            let mut seen = std::collections::HashSet::new();
            let mut rows: Vec<Vec<String>> = batches
                .iter()
                .map(|b| b.iter().filter(|&&k| seen.insert(k)).map(|k| format!("k{k:05}")).collect())
                .collect();
            let planted = dup && rows.iter().filter(|r| !r.is_empty()).count() >= 2;
            if planted {
                let src = rows.iter().position(|r| !r.is_empty()).unwrap();
                let dst = rows.iter().rposition(|r| !r.is_empty()).unwrap();
                let k = rows[src][0].clone();
                rows[dst].push(k);
            }
            let mut kbs = Vec::new();
            let mut base = 0u64;
            let mut model = std::collections::BTreeMap::new();
            for r in &rows {
                let a = StringArray::from(r.clone());
                for (i, k) in r.iter().enumerate() {
                    model.entry(k.clone().into_bytes()).or_insert(base + i as u64);
                }
                kbs.push((base, KeyBatch::from_array(&a).unwrap()));
                base += r.len() as u64;
            }
            let p = tmp("par");
            match build_run_with(&p, &kbs, &[], threads, 0, part_keys).unwrap() {
                Built::Run { entries, .. } => {
                    proptest::prop_assert!(!planted, "planted duplicate missed");
                    proptest::prop_assert_eq!(entries, model.len() as u64);
                    let run = Run::open(&p).unwrap();
                    let mut all = Vec::new();
                    run.for_each(|k, v| all.push((k.to_vec(), v))).unwrap();
                    proptest::prop_assert_eq!(all, model.into_iter().collect::<Vec<_>>());
                }
                Built::Duplicate(c) => {
                    proptest::prop_assert!(planted, "a duplicate that was not planted: {:?}", c);
                    proptest::prop_assert_eq!(model.get(&c.key).copied(), Some(c.first));
                }
            }
            let _ = std::fs::remove_file(&p);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..Default::default() })]

        /// Merging runs by key ranges on several threads keeps every entry
        /// once, in order.
        #[test]
        fn parallel_run_merge_agrees_with_a_model(
            keys in proptest::collection::btree_set(0u32..100_000, 0..3000),
            runs in 1usize..6,
            threads in 1usize..4,
            part_keys in 1usize..500,
        ) {
            let mut model = std::collections::BTreeMap::new();
            let mut files = Vec::new();
            let mut opened = Vec::new();
            for r in 0..runs {
                let p = tmp("mr");
                let mut w = RunWriter::create(&p).unwrap();
                for (i, k) in keys.iter().enumerate().filter(|(i, _)| i % runs == r) {
                    let key = format!("{k:07}").into_bytes();
                    w.add(&key, i as u64).unwrap();
                    model.insert(key, i as u64);
                }
                w.finish().unwrap();
                opened.push(Arc::new(Run::open(&p).unwrap()));
                files.push(p);
            }
            let m = tmp("merged");
            let (n, _) = merge_runs_with(&opened, &m, threads, 0, part_keys).unwrap();
            proptest::prop_assert_eq!(n, model.len() as u64);
            let merged = Run::open(&m).unwrap();
            let mut all = Vec::new();
            merged.for_each(|k, v| all.push((k.to_vec(), v))).unwrap();
            proptest::prop_assert_eq!(all, model.into_iter().collect::<Vec<_>>());
            for f in files.into_iter().chain([m]) {
                let _ = std::fs::remove_file(f);
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 32, ..Default::default() })]

        /// Checking a load's batches against the table's runs (in hash
        /// order, by bucket shares on several threads, some batches ordered
        /// by the workers and some not) finds a key already in the table
        /// exactly when there is one, and names the first in row order.
        #[test]
        fn check_against_the_table_agrees_with_a_model(
            table in proptest::collection::btree_set(0u32..20_000, 0..1500),
            runs in 1usize..4,
            batches in proptest::collection::vec(
                proptest::collection::vec(0u32..20_000, 0..400), 1..6),
            ordered in proptest::prelude::any::<u8>(),
            threads in 1usize..4,
            gather in 1usize..64,
        ) {
            // The table's keys spread over `runs` runs; ids 1,000,000 + i.
            let mut files = Vec::new();
            let mut opened = Vec::new();
            let mut model = std::collections::HashMap::new();
            for r in 0..runs {
                let p = tmp("chk");
                let mut w = RunWriter::create(&p).unwrap();
                for (i, k) in table.iter().enumerate().filter(|(i, _)| i % runs == r) {
                    let key = format!("id{k:06}").into_bytes();
                    w.add(&key, 1_000_000 + i as u64).unwrap();
                    model.insert(key, 1_000_000 + i as u64);
                }
                w.finish().unwrap();
                opened.push(Arc::new(Run::open(&p).unwrap()));
                files.push(p);
            }
            // The load's keys, unique within the load.
            let mut seen = std::collections::HashSet::new();
            let mut kbs = Vec::new();
            let mut base = 0u64;
            let mut want: Option<Conflict> = None;
            for (b, keys) in batches.iter().enumerate() {
                let keys: Vec<String> = keys
                    .iter()
                    .filter(|&&k| seen.insert(k))
                    .map(|k| format!("id{k:06}"))
                    .collect();
                for (i, k) in keys.iter().enumerate() {
                    if let Some(&first) = model.get(k.as_bytes())
                        && want.is_none()
                    {
                        want = Some(Conflict {
                            key: k.clone().into_bytes(),
                            first,
                            second: base + i as u64,
                        });
                    }
                }
                let mut kb = KeyBatch::from_array(&StringArray::from(keys.clone())).unwrap();
                if ordered & (1 << b) != 0 {
                    kb.order_by_hash();
                }
                kbs.push((base, kb));
                base += keys.len() as u64;
            }
            let got = check_batches_with(&kbs, &opened, threads, gather).unwrap();
            proptest::prop_assert_eq!(got, want);
            for f in files {
                let _ = std::fs::remove_file(f);
            }
        }
    }

    #[test]
    fn a_check_on_several_threads_finds_a_lone_duplicate_in_any_bucket() {
        // 60,000 table keys in two runs (those ≡ 0 and ≡ 1 mod 4 below
        // 120,000); 50,000 new keys in five batches, none in the table
        // but one planted late in the fourth batch. The planted keys are
        // taken at the first and last buckets of every thread's share (2
        // and 3 threads), where a walk that skipped one would miss it.
        let p = [tmp("big0"), tmp("big1")];
        let mut runs = Vec::new();
        for (r, path) in p.iter().enumerate() {
            let mut w = RunWriter::create(path).unwrap();
            for i in (r as i64..120_000).step_by(4) {
                w.add(&encode_i64(i), i as u64).unwrap();
            }
            w.finish().unwrap();
            runs.push(Arc::new(Run::open(path).unwrap()));
        }
        let check = |planted: Option<i64>, threads: usize, gather: usize| {
            let mut kbs = Vec::new();
            for b in 0..5i64 {
                // Odd keys from 1,000,001 on: never in the table.
                let mut keys: Vec<i64> = (0..10_000)
                    .map(|i| 1_000_001 + 2 * (b * 10_000 + i))
                    .collect();
                if b == 3
                    && let Some(k) = planted
                {
                    keys[9_000] = k;
                }
                let mut kb = KeyBatch::from_array(&Int64Array::from(keys)).unwrap();
                if b != 1 {
                    kb.order_by_hash();
                }
                kbs.push((b as u64 * 10_000, kb));
            }
            check_batches_with(&kbs, &runs, threads, gather).unwrap()
        };
        let bucket = |k: i64| key_hash(&encode_i64(k)) >> ORDER_SHIFT;
        let buckets = 1u64 << ORDER_BITS;
        let mut edges = vec![0, buckets - 1];
        for threads in [2, 3] {
            for t in 1..threads {
                let start = t * buckets / threads;
                edges.extend([start - 1, start]);
            }
        }
        for edge in edges {
            let k = (0..120_000i64)
                .filter(|k| k % 4 < 2)
                .find(|&k| bucket(k) == edge)
                .expect("a table key in every bucket");
            for (threads, gather) in [(2, GATHER), (3, GATHER), (3, 100)] {
                assert_eq!(
                    check(Some(k), threads, gather),
                    Some(Conflict {
                        key: encode_i64(k).to_vec(),
                        first: k as u64,
                        second: 39_000,
                    }),
                    "key {k} in bucket {edge}, {threads} threads"
                );
            }
        }
        for absent in [117_998, 119_999, 200_000] {
            assert_eq!(check(Some(absent), 2, GATHER), None, "key {absent}");
        }
        assert_eq!(check(None, 3, 100), None);
        for f in p {
            let _ = std::fs::remove_file(f);
        }
    }

    #[test]
    fn build_finds_duplicates_inside_and_against_older_runs() {
        let b1 = KeyBatch::from_array(&Int64Array::from(vec![5, 1, 9])).unwrap();
        let b2 = KeyBatch::from_array(&Int64Array::from(vec![7, 2])).unwrap();
        let p = tmp("a");
        let Built::Run { entries, .. } = build_run(&p, &[(0, b1), (3, b2)], &[], &[], 1).unwrap()
        else {
            panic!("no duplicate expected");
        };
        assert_eq!(entries, 5);
        let old = Arc::new(Run::open(&p).unwrap());
        assert_eq!(old.get(&encode_i64(7)).unwrap(), Some(3));
        // Against the older run: key 9 is row 2 there.
        let b3 = KeyBatch::from_array(&Int64Array::from(vec![100, 9])).unwrap();
        let q = tmp("b");
        match build_run(&q, &[(5, b3)], &[], std::slice::from_ref(&old), 1).unwrap() {
            Built::Duplicate(c) => assert_eq!(
                c,
                Conflict {
                    key: encode_i64(9).to_vec(),
                    first: 2,
                    second: 6
                }
            ),
            Built::Run { .. } => panic!("duplicate against the older run missed"),
        }
        // Inside one load, across batches.
        let b4 = KeyBatch::from_array(&Int64Array::from(vec![40, 41])).unwrap();
        let b5 = KeyBatch::from_array(&Int64Array::from(vec![42, 40])).unwrap();
        match build_run(&q, &[(10, b4), (12, b5)], &[], &[], 1).unwrap() {
            Built::Duplicate(c) => assert_eq!((c.first, c.second), (10, 13)),
            Built::Run { .. } => panic!("duplicate across batches missed"),
        }
        // Merging runs keeps every entry.
        let b6 = KeyBatch::from_array(&Int64Array::from(vec![3, 4])).unwrap();
        let r = tmp("c");
        build_run(&r, &[(20, b6)], &[], &[], 1).unwrap();
        let newer = Arc::new(Run::open(&r).unwrap());
        let m = tmp("m");
        let (n, _) = merge_runs(&[old.clone(), newer.clone()], &m, 1).unwrap();
        assert_eq!(n, 7);
        let merged = Run::open(&m).unwrap();
        for (k, id) in [(1, 1), (2, 4), (3, 20), (4, 21), (5, 0), (7, 3), (9, 2)] {
            assert_eq!(merged.get(&encode_i64(k)).unwrap(), Some(id), "key {k}");
        }
        assert_eq!(merged.get(&encode_i64(6)).unwrap(), None);
        for f in [p, q, r, m] {
            let _ = std::fs::remove_file(f);
        }
    }
}
