//! The grace hash join (Kitsuregawa, Tanaka and Moto-oka, 1983; Shapiro,
//! TODS 1986): an inner join by keys whose build side does not fit the
//! query's memory limit.
//!
//! Both sides are written to disk, each row to one of [`PARTS`]
//! partitions by the hash of its keys (the top bits, as the spilling
//! hash aggregate's partitions are chosen: [`part_of`]); rows with a NULL
//! in their keys match nothing and are dropped on the way. Then the
//! partitions are joined one by one: a partition's build rows are hashed
//! in memory, and its probe rows, read back by every worker, probe them.
//! A partition whose build rows still do not fit is partitioned again by
//! the next bits of the hash, recursively, to [`MAX_LEVEL`]; rows of one
//! key that do not fit alone fail with the memory error. The joined rows
//! go to a [`Sink`]: in memory while the limit allows, on disk past it.
//!
//! What a row costs: it is written and read once per level (the hash
//! aggregate's rule: bytes through the disk, not rows hashed again).
//!
//! For: [`super::run`]'s inner joins by keys. Not for: outer, semi, anti
//! and mark joins, cross products, the pipelined last join (their build
//! sides must fit).

use std::sync::{Arc, Mutex};

use arrow_array::{Array, ArrayRef, UInt32Array};
use arrow_row::{RowConverter, SortField};
use arrow_schema::DataType as A;

use super::disk::{Piece, Sink, part_pieces};
use super::{PROBE_ROWS, Rel, parallel};
use crate::error::{Error, Result};
use crate::query::QueryOptions;
use crate::query::agg::hll;
use crate::query::expr::{Expr, exec_err};
use crate::query::hash_join::{HashTable, eval_keys, joined_schema};
use crate::query::spill::{MAX_LEVEL, PARTS, Run, RunWriter, part_of};

/// What its partitions count as on disk.
const OPERATOR: &str = "grace hash join";

/// The keys of one side (over its columns) and the types both sides'
/// keys are compared as.
struct Keys<'a> {
    probe: &'a [Expr],
    build: &'a [Expr],
    types: &'a [A],
}

/// The inner join of `probe` with `build` by `probe_keys` = `build_keys`
/// (over each side's columns), compared as `types`: `probe`'s columns,
/// then `build`'s.
pub(super) fn inner(
    probe: Rel,
    build: Rel,
    probe_keys: &[Expr],
    build_keys: &[Expr],
    types: &[A],
    workers: usize,
    opts: &QueryOptions,
) -> Result<Rel> {
    let out = probe.beside(&build);
    let schema = joined_schema(&*probe.schema()?, &*build.schema()?);
    let keys = Keys {
        probe: probe_keys,
        build: build_keys,
        types,
    };
    // Each side's memory is given back once it is on disk.
    let b = partition(
        build.pieces(PROBE_ROWS),
        keys.build,
        types,
        0,
        workers,
        opts,
    )?;
    drop(build);
    let p = partition(
        probe.pieces(PROBE_ROWS),
        keys.probe,
        types,
        0,
        workers,
        opts,
    )?;
    drop(probe);
    let sink = Sink::new(opts)?;
    let mut next = 0;
    if let (Some(p), Some(b)) = (p, b) {
        join_parts(&p, &b, &keys, 0, &sink, &mut next, workers, opts)?;
    }
    Ok(Rel::made(sink.finish()?, Some(schema), out.cols, out.items))
}

/// Joins partition by partition the rows of runs `p` (probe side) and
/// `b` (build side), partitioned at `level`; the joined rows to `sink`,
/// numbered from `next` on.
#[allow(clippy::too_many_arguments)]
fn join_parts(
    p: &Arc<Run>,
    b: &Arc<Run>,
    keys: &Keys,
    level: u32,
    sink: &Sink,
    next: &mut u64,
    workers: usize,
    opts: &QueryOptions,
) -> Result<()> {
    for part in 0..PARTS {
        let build = part_pieces(b, part);
        let probe = part_pieces(p, part);
        if build.is_empty() || probe.is_empty() {
            continue;
        }
        match table_of(&build, keys, workers, opts) {
            Ok(table) => {
                let tasks: Vec<(u64, Piece)> = probe
                    .into_iter()
                    .map(|piece| {
                        *next += 1;
                        (*next, piece)
                    })
                    .collect();
                parallel(tasks, workers, opts, |(n, piece)| {
                    let rows = piece.load()?;
                    let k = eval_keys(keys.probe, &rows, Some(table.key_types()))?;
                    let mut scratch = opts.reserve("hash join probe", 0)?;
                    let joined = table.join_batch(&rows, &k, None, false, None, &mut scratch)?;
                    sink.put(n, joined)
                })?;
            }
            Err(Error::MemoryLimit { .. }) if level < MAX_LEVEL => {
                let deeper = level + 1;
                let b2 = partition(build, keys.build, keys.types, deeper, workers, opts)?;
                let p2 = partition(probe, keys.probe, keys.types, deeper, workers, opts)?;
                if let (Some(p2), Some(b2)) = (p2, b2) {
                    join_parts(&p2, &b2, keys, deeper, sink, next, workers, opts)?;
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The hash table of a partition's build rows, reserved before they are
/// read back (a partition that cannot fit is not read).
fn table_of(
    pieces: &[Piece],
    keys: &Keys,
    workers: usize,
    opts: &QueryOptions,
) -> Result<HashTable> {
    let rows = pieces.iter().map(Piece::rows).sum();
    let bytes = pieces.iter().map(Piece::bytes).sum();
    let mut mem = opts.reserve("hash join build", HashTable::estimate(rows, bytes))?;
    let batches = pieces.iter().map(Piece::load).collect::<Result<Vec<_>>>()?;
    let schema = batches
        .first()
        .map(|b| b.schema())
        .ok_or_else(|| Error::Internal("grace join: a partition without rows".into()))?;
    let batch = arrow_select::concat::concat_batches(&schema, &batches).map_err(exec_err)?;
    drop(batches);
    let arrays = eval_keys(keys.build, &batch, Some(keys.types))?;
    let mut t = HashTable::build(batch, &arrays, keys.types.to_vec(), workers)?;
    mem.resize(t.bytes() as u64)?;
    t.mem = Some(mem);
    Ok(t)
}

/// The rows of `pieces` without a NULL in their `keys`, written to one
/// run, each as a frame of the partition of its keys' hash at `level`;
/// `None` when there is no such row.
fn partition(
    pieces: Vec<Piece>,
    keys: &[Expr],
    types: &[A],
    level: u32,
    workers: usize,
    opts: &QueryOptions,
) -> Result<Option<Arc<Run>>> {
    let spill = opts
        .spill
        .as_ref()
        .ok_or_else(|| Error::Internal("grace join without a spill directory".into()))?;
    let writer: Mutex<Option<RunWriter>> = Mutex::new(None);
    parallel(pieces, workers, opts, |piece| {
        let rows = piece.load()?;
        let k = eval_keys(keys, &rows, Some(types))?;
        let hashes = key_hashes(&k)?;
        let mut by_part: Vec<Vec<u32>> = vec![Vec::new(); PARTS as usize];
        for (r, h) in hashes.iter().enumerate() {
            if k.iter().all(|a| a.is_valid(r)) {
                by_part[part_of(*h, level) as usize].push(r as u32);
            }
        }
        for (part, rows_of) in by_part.into_iter().enumerate() {
            if rows_of.is_empty() {
                continue;
            }
            let taken = arrow_select::take::take_record_batch(&rows, &UInt32Array::from(rows_of))
                .map_err(exec_err)?;
            let mut w = writer
                .lock()
                .map_err(|_| Error::Internal("grace join writer lock poisoned".into()))?;
            let w = match &mut *w {
                Some(w) => w,
                None => w.insert(spill.writer(OPERATOR, opts.profile.clone())?),
            };
            w.write(part as u32, &taken)?;
        }
        Ok(())
    })?;
    let w = writer
        .into_inner()
        .map_err(|_| Error::Internal("grace join writer lock poisoned".into()))?;
    Ok(w.map(RunWriter::finish).transpose()?.map(Arc::new))
}

/// Each row's hash of its keys (compared as equal, hashed as equal:
/// both sides' keys are of the same types). Not the hash tables' own
/// hash, whose top bits would then be the same in a partition.
fn key_hashes(keys: &[ArrayRef]) -> Result<Vec<u64>> {
    let conv = RowConverter::new(
        keys.iter()
            .map(|k| SortField::new(k.data_type().clone()))
            .collect(),
    )
    .map_err(exec_err)?;
    let rows = conv.convert_columns(keys).map_err(exec_err)?;
    Ok((0..rows.num_rows())
        .map(|r| hll::hash(rows.row(r).as_ref()))
        .collect())
}
