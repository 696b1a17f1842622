//! The grace hash join (Kitsuregawa, Tanaka and Moto-oka, 1983; Shapiro,
//! TODS 1986): a join by keys whose build side does not fit the query's
//! memory limit.
//!
//! Both sides are written to disk, each row to one of [`PARTS`]
//! partitions by the hash of its keys (the top bits, as the spilling
//! hash aggregate's partitions are chosen: [`part_of`]), or of fewer
//! groups of them when the build side needs fewer to fit ([`fan_out`]:
//! a side a few times the limit is split in a few parts, each written in
//! larger frames, not in 64 parts of tiny ones). Then the
//! partitions are joined one by one: a partition's build rows are hashed
//! in memory, and its probe rows, read back by every worker, probe them.
//! A partition whose build rows still do not fit is partitioned again by
//! the next bits of the hash, recursively, to [`MAX_LEVEL`]; rows of one
//! key that do not fit alone fail with the memory error. The joined rows
//! go to a [`Sink`]: in memory while the limit allows, on disk past it.
//!
//! Every kind keeps its meaning across partitions, since equal keys
//! meet in one partition. A row with a NULL in its keys matches nothing:
//! it is dropped on the way where only matches count (the inner join's
//! sides, a semi join's, NOT IN's build side), and put out as it is read
//! back where it comes out unmatched (a LEFT or anti join's probe rows,
//! a FULL join's both sides) — never hashed, so NULL keys however many
//! never make a partition too big. NOT IN is decided once for all partitions:
//! a NULL among the build side's keys keeps no row, and no build row at
//! all keeps every row (NULL keys too).
//!
//! What a row costs: it is written and read once per level (the hash
//! aggregate's rule: bytes through the disk, not rows hashed again).
//!
//! For: [`super::run`]'s joins by keys: inner, LEFT, FULL, semi and
//! anti. Not for: mark joins and cross products (their build sides must
//! fit).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType as A, SchemaRef};

use super::disk::{Piece, Sink, part_pieces};
use super::{Rel, parallel, probe_rows};
use crate::error::{Error, Result};
use crate::query::QueryOptions;
use crate::query::agg::hll;
use crate::query::expr::{Expr, exec_err};
use crate::query::hash_join::{HashTable, Marks, eval_keys, joined_schema};
use crate::query::memory::{Reservation, batch_bytes};
use crate::query::plan::from::JoinKind;
use crate::query::spill::{Encoded, MAX_LEVEL, PARTS, Run, RunWriter, Spill, part_of};

/// What its partitions count as on disk.
const OPERATOR: &str = "grace hash join";

/// A part whose table is joined by the pipeline takes at most this share
/// of the limit (an eighth: twice it is set aside, beside what the
/// operator above holds); the parts are made that small where the hash
/// allows ([`fan_out`]).
const PIPELINED_SHARE: u64 = 8;

/// The frames of the rows whose keys have a NULL (kept where they come
/// out unmatched): never hashed (they match nothing, and no partitioning
/// could split them), but put out as they are read.
const NULL_PART: u32 = PARTS;

/// A join to make by partitions: its kind, each side's keys (over its
/// own columns), the types both sides' keys are compared as, and the
/// conditions of its ON that are not keys (over the joined columns:
/// the probe side's, then the build side's).
pub(super) struct Spec<'a> {
    pub kind: JoinKind,
    pub probe_keys: &'a [Expr],
    pub build_keys: &'a [Expr],
    pub types: &'a [A],
    pub residual: Option<&'a Expr>,
}

impl Spec<'_> {
    /// Its output holds the build side's columns (else only the probe
    /// side's rows it keeps).
    fn joins(&self) -> bool {
        matches!(self.kind, JoinKind::Inner | JoinKind::Left | JoinKind::Full)
    }

    /// Probe rows that match nothing come out.
    fn keeps_probe(&self) -> bool {
        matches!(
            self.kind,
            JoinKind::Left | JoinKind::Full | JoinKind::Anti | JoinKind::AntiNull
        )
    }

    /// Probe rows with a NULL in their keys come out (not NOT IN's:
    /// against rows, NULL IN them is NULL).
    fn keeps_probe_nulls(&self) -> bool {
        self.keeps_probe() && self.kind != JoinKind::AntiNull
    }
}

/// `probe` joined with `build` as `spec` says: the probe side's columns,
/// then (inner, LEFT, FULL) the build side's.
pub(super) fn join(
    probe: Rel,
    build: Rel,
    spec: &Spec,
    workers: usize,
    opts: &QueryOptions,
) -> Result<Rel> {
    if spec.kind == JoinKind::Mark {
        return Err(Error::Internal("grace join: a mark join".into()));
    }
    let out = if spec.joins() {
        probe.beside(&build)
    } else {
        probe.beside(&Rel::of(Vec::new(), None, Vec::new(), 0))
    };
    let probe_schema = probe.schema()?;
    let build_schema = build.schema()?;
    let schema = if spec.joins() {
        joined_schema(&probe_schema, &build_schema)
    } else {
        probe_schema.clone()
    };
    let full = spec.kind == JoinKind::Full;
    // Each side's memory is given back once it is on disk.
    let rows = probe_rows(opts, workers);
    let groups = fan_out(build.rows, build.bytes(), 4, opts);
    let (b, nulls) = partition(
        build.pieces(rows),
        spec.build_keys,
        spec.types,
        full,
        (0, groups),
        workers,
        opts,
    )?;
    let build_rows = build.rows;
    drop(build);
    if spec.kind == JoinKind::AntiNull && (nulls > 0 || build_rows == 0) {
        // NOT IN a list with a NULL: no row; NOT IN nothing: every row.
        return if nulls > 0 {
            Ok(Rel::made(
                Sink::new(opts)?.finish()?,
                Some(schema),
                out.cols,
                out.items,
            ))
        } else {
            Ok(probe)
        };
    }
    let (p, _) = partition(
        probe.pieces(rows),
        spec.probe_keys,
        spec.types,
        spec.keeps_probe_nulls(),
        (0, groups),
        workers,
        opts,
    )?;
    drop(probe);
    let sink = Sink::new(opts)?;
    let mut next = 0;
    unmatched_nulls(
        p.as_ref(),
        b.as_ref(),
        spec,
        &probe_schema,
        &build_schema,
        &sink,
        &mut next,
        workers,
        opts,
    )?;
    let sides = Sides {
        probe: p,
        build: b,
        groups,
        probe_schema,
        build_schema,
    };
    join_parts(&sides, spec, 0, &sink, &mut next, workers, opts)?;
    Ok(Rel::made(sink.finish()?, Some(schema), out.cols, out.items))
}

/// An inner or LEFT join's sides partitioned on disk for the group's
/// last join to be made part by part by the workers of the operator
/// above (see [`super::pipeline::Parts`]): per part the build side's
/// pieces and the probe side's, and the rows made here instead (a part
/// whose table would take more than a quarter of the limit: joined as
/// [`join`] joins it, split again if need be; a LEFT join's probe rows
/// with a NULL in their keys, NULL-filled).
pub(super) struct Parted {
    pub parts: Vec<(Vec<Piece>, Vec<Piece>)>,
    /// Memory set aside for the parts' tables (one reservation a table
    /// that may be built at once).
    pub room: Vec<Reservation>,
    pub joined: super::disk::Made,
    pub build_schema: SchemaRef,
}

/// `probe` joined with `build` by `spec`'s keys (an inner or LEFT join,
/// `probe` the preserved side), by partitions on disk as [`join`] makes
/// them, the parts' joins left to the pipeline: the joined rows never go
/// to disk, only both sides' rows, once.
pub(super) fn parted(
    probe: Rel,
    build: Rel,
    spec: &Spec,
    workers: usize,
    opts: &QueryOptions,
) -> Result<Parted> {
    if !matches!(spec.kind, JoinKind::Inner | JoinKind::Left) {
        return Err(Error::Internal(
            "grace join: only an inner or LEFT join is made by the pipeline".into(),
        ));
    }
    let probe_schema = probe.schema()?;
    let build_schema = build.schema()?;
    let rows = probe_rows(opts, workers);
    let groups = fan_out(build.rows, build.bytes(), PIPELINED_SHARE, opts);
    // NULL keys match nothing: dropped from both sides (a LEFT join's
    // probe rows with one come out NULL-filled).
    let (b, _) = partition(
        build.pieces(rows),
        spec.build_keys,
        spec.types,
        false,
        (0, groups),
        workers,
        opts,
    )?;
    drop(build);
    let (p, _) = partition(
        probe.pieces(rows),
        spec.probe_keys,
        spec.types,
        spec.keeps_probe_nulls(),
        (0, groups),
        workers,
        opts,
    )?;
    drop(probe);
    let limit = opts.memory.as_ref().map_or(u64::MAX, |m| m.limit());
    let sides = Sides {
        probe: p,
        build: b,
        groups,
        probe_schema,
        build_schema: build_schema.clone(),
    };
    let mut g = Gathered::default();
    for part in 0..groups {
        let of = |r: &Option<Arc<Run>>| r.as_ref().map_or_else(Vec::new, |r| part_pieces(r, part));
        let (build, probe) = (of(&sides.build), of(&sides.probe));
        gather(build, probe, 0, spec, limit, &mut g, workers, opts)?;
    }
    let Gathered {
        mut parts,
        largest,
        mut here,
    } = g;
    // The room the parts' tables are built in, set aside now, before the
    // operator above starts: the largest estimate for each table that
    // may be in memory at once. Without it, every part is joined here.
    // (Under a limit too small for those tables beside the workers'
    // morsels, the caller made the join whole: `join.rs`, `grace_last`.)
    let mut room = Vec::new();
    if !parts.is_empty() {
        for _ in 0..super::pipeline::TABLES_AT_ONCE {
            match opts.reserve("hash join build", largest) {
                Ok(r) => room.push(r),
                Err(Error::MemoryLimit { .. }) => {
                    here.append(&mut parts);
                    room.clear();
                    break;
                }
                Err(e) => return Err(e),
            }
        }
    }
    // (Rows made here go to disk: the operator above reads them while the
    // parts' tables are in memory.)
    let sink = Sink::on_disk(opts)?;
    let mut next = 0;
    unmatched_nulls(
        sides.probe.as_ref(),
        sides.build.as_ref(),
        spec,
        &sides.probe_schema,
        &sides.build_schema,
        &sink,
        &mut next,
        workers,
        opts,
    )?;
    for (build, probe, level) in here {
        join_pieces(
            build, probe, &sides, spec, level, &sink, &mut next, workers, opts,
        )?;
    }
    let parts = parts.into_iter().map(|(b, p, _)| (b, p)).collect();
    Ok(Parted {
        parts,
        room,
        joined: sink.finish()?,
        build_schema,
    })
}

/// A part's build and probe rows, at its level of partitioning.
type PartRows = (Vec<Piece>, Vec<Piece>, u32);

/// The parts of [`parted`]: those the pipeline joins, the largest of
/// their tables' estimates, and those joined here.
#[derive(Default)]
struct Gathered {
    parts: Vec<PartRows>,
    largest: u64,
    here: Vec<PartRows>,
}

/// Sorts one part's rows (at `level`) into `g`: a part whose table's
/// estimate is within the pipeline's share of the limit is the
/// pipeline's; a bigger one is split by the next bits of the hash and
/// its parts sorted so in turn — unless the split leaves one part with
/// most of its rows (one key of many rows: splitting again cannot
/// help), or the levels run out: then it is joined here.
#[allow(clippy::too_many_arguments)]
fn gather(
    mut build: Vec<Piece>,
    mut probe: Vec<Piece>,
    level: u32,
    spec: &Spec,
    limit: u64,
    g: &mut Gathered,
    workers: usize,
    opts: &QueryOptions,
) -> Result<()> {
    build.retain(|p| p.rows() > 0);
    probe.retain(|p| p.rows() > 0);
    if probe.is_empty() || (build.is_empty() && !spec.keeps_probe()) {
        return Ok(());
    }
    let rows: usize = build.iter().map(Piece::rows).sum();
    let bytes = build.iter().map(Piece::bytes).sum();
    let need = HashTable::estimate(rows, bytes);
    if need <= limit / PIPELINED_SHARE {
        g.largest = g.largest.max(need);
        g.parts.push((build, probe, level));
        return Ok(());
    }
    if level >= MAX_LEVEL {
        g.here.push((build, probe, level));
        return Ok(());
    }
    let deeper = (level + 1, PARTS);
    let (b, _) = partition(
        build.clone(),
        spec.build_keys,
        spec.types,
        false,
        deeper,
        workers,
        opts,
    )?;
    let b_rows = |part: u32| -> usize {
        b.as_ref()
            .map_or(0, |r| part_pieces(r, part).iter().map(Piece::rows).sum())
    };
    if (0..PARTS).map(b_rows).max().unwrap_or(0) > rows / 2 {
        g.here.push((build, probe, level));
        return Ok(());
    }
    drop(build);
    let (p, _) = partition(
        probe,
        spec.probe_keys,
        spec.types,
        false,
        deeper,
        workers,
        opts,
    )?;
    for part in 0..PARTS {
        let of = |r: &Option<Arc<Run>>| r.as_ref().map_or_else(Vec::new, |r| part_pieces(r, part));
        gather(of(&b), of(&p), level + 1, spec, limit, g, workers, opts)?;
    }
    Ok(())
}

/// The hash table of a part's build rows, `keys` over them compared as
/// `types` (see [`table_of`]).
pub(super) fn part_table(
    pieces: &[Piece],
    schema: &SchemaRef,
    keys: &[Expr],
    types: &[A],
    workers: usize,
    opts: &QueryOptions,
) -> Result<HashTable> {
    part_table_in(pieces, schema, keys, types, workers, opts, None)
}

/// [`part_table`], its bytes counted in `room` when given (memory set
/// aside for it, resized to its estimate and then to its size).
pub(super) fn part_table_in(
    pieces: &[Piece],
    schema: &SchemaRef,
    keys: &[Expr],
    types: &[A],
    workers: usize,
    opts: &QueryOptions,
    room: Option<Reservation>,
) -> Result<HashTable> {
    let rows = pieces.iter().map(Piece::rows).sum();
    let bytes = pieces.iter().map(Piece::bytes).sum();
    let need = HashTable::estimate(rows, bytes);
    // (The room is kept whole for the parts after this one: it only
    // grows.)
    let keep = room.as_ref().map_or(0, |r| r.bytes());
    let mut mem = match room {
        Some(mut r) => {
            r.resize(need.max(keep))?;
            r
        }
        None => opts.reserve("hash join build", need)?,
    };
    let batches = pieces.iter().map(Piece::load).collect::<Result<Vec<_>>>()?;
    let batch = arrow_select::concat::concat_batches(schema, &batches).map_err(exec_err)?;
    drop(batches);
    let arrays = eval_keys(keys, &batch, Some(types))?;
    let mut t = HashTable::build(batch, &arrays, types.to_vec(), workers)?;
    mem.resize((t.bytes() as u64).max(keep))?;
    t.mem = Some(mem);
    Ok(t)
}

/// The rows whose keys have a NULL ([`NULL_PART`] of runs `p` and `b`)
/// as they come out unmatched: a LEFT or FULL join's probe rows with
/// NULL build columns, an anti join's probe rows, a FULL join's build
/// rows with NULL probe columns; to `sink`, numbered from `next` on.
#[allow(clippy::too_many_arguments)]
fn unmatched_nulls(
    p: Option<&Arc<Run>>,
    b: Option<&Arc<Run>>,
    spec: &Spec,
    probe_schema: &SchemaRef,
    build_schema: &SchemaRef,
    sink: &Sink,
    next: &mut u64,
    workers: usize,
    opts: &QueryOptions,
) -> Result<()> {
    let mut tasks: Vec<(u64, bool, Piece)> = Vec::new();
    for (run, probe_side) in [(p, true), (b, false)] {
        for piece in run.map_or_else(Vec::new, |r| part_pieces(r, NULL_PART)) {
            *next += 1;
            tasks.push((*next, probe_side, piece));
        }
    }
    parallel(tasks, workers, opts, |(n, probe_side, piece)| {
        let rows = piece.load()?;
        let out = match (probe_side, spec.joins()) {
            (true, false) => rows,
            (true, true) => null_filled(&rows, build_schema, true)?,
            (false, _) => null_filled(&rows, probe_schema, false)?,
        };
        sink.put(n, out)
    })?;
    Ok(())
}

/// `rows` beside NULL columns of `other` (after them if `first`, else
/// before), as joined rows.
fn null_filled(rows: &RecordBatch, other: &SchemaRef, first: bool) -> Result<RecordBatch> {
    let n = rows.num_rows();
    let nulls: Vec<ArrayRef> = other
        .fields()
        .iter()
        .map(|f| arrow_array::new_null_array(f.data_type(), n))
        .collect();
    let (cols, schema) = if first {
        let mut c = rows.columns().to_vec();
        c.extend(nulls);
        (c, joined_schema(&rows.schema(), other))
    } else {
        let mut c = nulls;
        c.extend(rows.columns().iter().cloned());
        (c, joined_schema(other, &rows.schema()))
    };
    Ok(RecordBatch::try_new_with_options(
        schema,
        cols,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(n)),
    )?)
}

/// Both sides' runs, partitioned at one level into `groups` parts, and
/// their rows' schemas.
struct Sides {
    probe: Option<Arc<Run>>,
    build: Option<Arc<Run>>,
    groups: u32,
    probe_schema: SchemaRef,
    build_schema: SchemaRef,
}

/// Joins `sides` partition by partition (at `level`); the joined rows to
/// `sink`, numbered from `next` on.
fn join_parts(
    sides: &Sides,
    spec: &Spec,
    level: u32,
    sink: &Sink,
    next: &mut u64,
    workers: usize,
    opts: &QueryOptions,
) -> Result<()> {
    let all: Vec<u32> = (0..sides.groups).collect();
    join_some(sides, &all, spec, level, sink, next, workers, opts)
}

/// Joins the partitions `parts` of `sides` (at `level`), as
/// [`join_parts`].
#[allow(clippy::too_many_arguments)]
fn join_some(
    sides: &Sides,
    parts: &[u32],
    spec: &Spec,
    level: u32,
    sink: &Sink,
    next: &mut u64,
    workers: usize,
    opts: &QueryOptions,
) -> Result<()> {
    for &part in parts {
        let build = sides
            .build
            .as_ref()
            .map_or_else(Vec::new, |r| part_pieces(r, part));
        let probe = sides
            .probe
            .as_ref()
            .map_or_else(Vec::new, |r| part_pieces(r, part));
        join_pieces(build, probe, sides, spec, level, sink, next, workers, opts)?;
    }
    Ok(())
}

/// Joins one part's `build` and `probe` rows (at `level`; `sides` for
/// the schemas), as [`join_parts`].
#[allow(clippy::too_many_arguments)]
fn join_pieces(
    build: Vec<Piece>,
    probe: Vec<Piece>,
    sides: &Sides,
    spec: &Spec,
    level: u32,
    sink: &Sink,
    next: &mut u64,
    workers: usize,
    opts: &QueryOptions,
) -> Result<()> {
    let full = spec.kind == JoinKind::Full;
    {
        let needed = match spec.kind {
            JoinKind::Full => !build.is_empty() || !probe.is_empty(),
            _ if spec.keeps_probe() => !probe.is_empty(),
            _ => !build.is_empty() && !probe.is_empty(),
        };
        if !needed {
            return Ok(());
        }
        let table = match table_of(&build, &sides.build_schema, spec, workers, opts) {
            Ok(t) => t,
            Err(Error::MemoryLimit { .. }) if level < MAX_LEVEL => {
                // Split again as finely as the hash allows: its table
                // was thought to fit and did not (what the query holds
                // beside it, or a table's least size, decided).
                let deeper = level + 1;
                let groups = PARTS;
                let (b, _) = partition(
                    build,
                    spec.build_keys,
                    spec.types,
                    full,
                    (deeper, groups),
                    workers,
                    opts,
                )?;
                let (p, _) = partition(
                    probe,
                    spec.probe_keys,
                    spec.types,
                    spec.keeps_probe_nulls(),
                    (deeper, groups),
                    workers,
                    opts,
                )?;
                let sides = Sides {
                    probe: p,
                    build: b,
                    groups,
                    probe_schema: sides.probe_schema.clone(),
                    build_schema: sides.build_schema.clone(),
                };
                return join_parts(&sides, spec, deeper, sink, next, workers, opts);
            }
            Err(e) => return Err(e),
        };
        let marks = Marks::new(if full { table.rows() } else { 0 });
        let tasks: Vec<(u64, Piece)> = probe
            .into_iter()
            .map(|piece| {
                *next += 1;
                (*next, piece)
            })
            .collect();
        let probe_rows = |rows: &RecordBatch| {
            let k = eval_keys(spec.probe_keys, rows, Some(table.key_types()))?;
            let mut scratch = opts.reserve("hash join probe", 0)?;
            if spec.joins() {
                let keep = spec.kind != JoinKind::Inner;
                let marks = full.then_some(&marks);
                table.join_batch(rows, &k, spec.residual, keep, marks, &mut scratch)
            } else {
                let anti = spec.kind != JoinKind::Semi;
                table.semi_batch(rows, &k, spec.residual, anti, &mut scratch)
            }
        };
        // A part's table past a sixteenth of the limit (`fan_out`
        // sizes them to a quarter) is probed by one worker: workers
        // probing a key of many rows at once took the room each other's
        // halved batches needed, and a join that one worker makes
        // failed (a review found 6 of 8 runs failing with 8 threads).
        let probers = match opts.memory.as_ref() {
            Some(m) if table.bytes() as u64 > m.limit() / 16 => 1,
            _ => workers,
        };
        parallel(tasks, probers, opts, |(n, piece)| {
            sink.put_split(n, piece.load()?, &probe_rows)
        })?;
        if full {
            // The partition's build rows no probe row matched.
            *next += 1;
            let matched = marks.to_vec(table.rows());
            sink.put(*next, table.unmatched(&sides.probe_schema, &matched)?)?;
        }
    }
    Ok(())
}

/// The hash table of a partition's build rows (of `schema`; none: an
/// empty table), reserved before they are read back (a partition that
/// cannot fit is not read).
fn table_of(
    pieces: &[Piece],
    schema: &SchemaRef,
    spec: &Spec,
    workers: usize,
    opts: &QueryOptions,
) -> Result<HashTable> {
    part_table(pieces, schema, spec.build_keys, spec.types, workers, opts)
}

/// Bytes of a part's rows gathered before they are written as one
/// frame: the `groups` parts' buffers together hold at most an eighth of
/// the memory limit (within these bounds: frames of a few rows cost more
/// in their headers than in their rows).
fn flush_bytes(opts: &QueryOptions, groups: u32) -> u64 {
    let limit = opts.memory.as_ref().map_or(u64::MAX, |m| m.limit());
    (limit / 8 / u64::from(groups.max(1))).clamp(8 << 10, 4 << 20)
}

/// Into how many parts (a power of two, 2 to [`PARTS`]) a build side of
/// `rows` rows and `bytes` bytes is split: as many as give each part's
/// hash table (its rows and entries, [`HashTable::estimate`]) a `share`
/// of the limit — a quarter: what a part's table may take beside the
/// rows the query holds (up to half the limit) and its probes; an
/// eighth for the pipelined parts ([`parted`]). A part that still does
/// not fit is split again, into [`PARTS`] ([`join_parts`]). Each part
/// holds whole partitions of [`part_of`] (`PARTS / groups` of them).
fn fan_out(rows: usize, bytes: u64, share: u64, opts: &QueryOptions) -> u32 {
    let limit = opts.memory.as_ref().map_or(u64::MAX, |m| m.limit());
    let need = HashTable::estimate(rows, bytes);
    let parts = need.div_ceil((limit / share).max(1));
    parts.next_power_of_two().clamp(2, u64::from(PARTS)) as u32
}

/// The rows of `pieces` written to one run, as frames of the part of
/// their `keys`' hash at `level` (`at`: the level and the number of
/// parts, whole partitions of [`part_of`] each); a row with a NULL in its keys to
/// [`NULL_PART`] if `nulls` says so, else dropped. `None` when no row was
/// written; with the rows that had a NULL in their keys.
fn partition(
    pieces: Vec<Piece>,
    keys: &[Expr],
    types: &[A],
    nulls: bool,
    at: (u32, u32),
    workers: usize,
    opts: &QueryOptions,
) -> Result<(Option<Arc<Run>>, u64)> {
    let (level, groups) = at;
    let per_group = PARTS / groups.clamp(1, PARTS);
    let spill = opts
        .spill
        .as_ref()
        .ok_or_else(|| Error::Internal("grace join without a spill directory".into()))?;
    let flush_at = flush_bytes(opts, groups);
    let out = Mutex::new(Partitions {
        writer: None,
        held: vec![(Vec::new(), 0); NULL_PART as usize + 1],
        mem: opts.reserve(OPERATOR, 0)?,
    });
    let poisoned = || Error::Internal("grace join writer lock poisoned".into());
    let null_rows = AtomicU64::new(0);
    parallel(pieces, workers, opts, |piece| {
        let rows = piece.load()?;
        let k = eval_keys(keys, &rows, Some(types))?;
        let hashes = key_hashes(&k)?;
        let mut by_part: Vec<Vec<u32>> = vec![Vec::new(); NULL_PART as usize + 1];
        let mut null_here = 0;
        for (r, h) in hashes.iter().enumerate() {
            if k.iter().all(|a| a.is_valid(r)) {
                by_part[(part_of(*h, level) / per_group) as usize].push(r as u32);
            } else {
                null_here += 1;
                if nulls {
                    by_part[NULL_PART as usize].push(r as u32);
                }
            }
        }
        null_rows.fetch_add(null_here, Ordering::Relaxed);
        for (part, rows_of) in by_part.into_iter().enumerate() {
            if rows_of.is_empty() {
                continue;
            }
            let taken = arrow_select::take::take_record_batch(&rows, &UInt32Array::from(rows_of))
                .map_err(exec_err)?;
            let bytes = batch_bytes(&taken);
            // Past its share, or past the limit, the part is written:
            // its rows taken out under the lock, made one frame and
            // encoded outside it (the other workers go on), and the
            // frame appended under it.
            let full = {
                let mut o = out.lock().map_err(|_| poisoned())?;
                let o = &mut *o;
                let counted = o.mem.grow(bytes).is_ok();
                o.held[part].0.push(taken);
                if counted {
                    o.held[part].1 += bytes;
                }
                (!counted || o.held[part].1 >= flush_at).then(|| std::mem::take(&mut o.held[part]))
            };
            if let Some((batches, held)) = full {
                let frame = one_frame(batches)?;
                let mut o = out.lock().map_err(|_| poisoned())?;
                o.write(part, frame, held, spill, opts)?;
            }
        }
        Ok(())
    })?;
    let mut o = out.into_inner().map_err(|_| poisoned())?;
    for part in 0..=NULL_PART as usize {
        o.flush(part, spill, opts)?;
    }
    let run = o
        .writer
        .take()
        .map(RunWriter::finish)
        .transpose()?
        .map(Arc::new);
    Ok((run, null_rows.into_inner()))
}

/// A partitioning's run being written, and each partition's rows not
/// yet written (and their bytes counted in `mem`).
struct Partitions {
    writer: Option<RunWriter>,
    held: Vec<(Vec<RecordBatch>, u64)>,
    mem: Reservation,
}

/// Rows of one partition as one encoded frame (`None`: no rows).
fn one_frame(batches: Vec<RecordBatch>) -> Result<Option<Encoded>> {
    let Some(first) = batches.first() else {
        return Ok(None);
    };
    let batch =
        arrow_select::concat::concat_batches(&first.schema(), &batches).map_err(exec_err)?;
    drop(batches);
    RunWriter::encode(&batch).map(Some)
}

impl Partitions {
    /// Writes partition `part`'s rows held as one frame.
    fn flush(&mut self, part: usize, spill: &Spill, opts: &QueryOptions) -> Result<()> {
        let (batches, bytes) = std::mem::take(&mut self.held[part]);
        let frame = one_frame(batches)?;
        self.write(part, frame, bytes, spill, opts)
    }

    /// Appends `frame`, partition `part`'s rows of `bytes` counted
    /// bytes, and gives those bytes back.
    fn write(
        &mut self,
        part: usize,
        frame: Option<Encoded>,
        bytes: u64,
        spill: &Spill,
        opts: &QueryOptions,
    ) -> Result<()> {
        if let Some(frame) = frame {
            let w = match &mut self.writer {
                Some(w) => w,
                None => self
                    .writer
                    .insert(spill.writer(OPERATOR, opts.profile.clone())?),
            };
            w.write_encoded(part as u32, frame)?;
        }
        let held = self.mem.bytes().saturating_sub(bytes);
        self.mem.resize(held)
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::memory::Memory;

    fn limited(limit: u64) -> QueryOptions {
        QueryOptions {
            memory: Some(Memory::new(limit)),
            ..Default::default()
        }
    }

    #[test]
    fn a_side_is_split_into_as_many_parts_as_make_each_table_fit() {
        let o = limited(4 << 20);
        // A table of a quarter of the limit: 2 parts (never 1: the side
        // was found not to fit whole).
        assert_eq!(fan_out(10, 1 << 20, 4, &o), 2);
        // 300 K rows of 16 bytes (about 13.7 MiB with their entries):
        // 16 parts of under 1 MiB.
        let need = HashTable::estimate(300_000, 300_000 * 16);
        assert_eq!(need.div_ceil(1 << 20), 14);
        assert_eq!(fan_out(300_000, 300_000 * 16, 4, &o), 16);
        // Far past the limit: every partition.
        assert_eq!(fan_out(1 << 30, 1 << 40, 4, &o), PARTS);
        // The parts' buffers share an eighth of the limit.
        assert_eq!(flush_bytes(&o, 16), (4 << 20) / 8 / 16);
        assert_eq!(flush_bytes(&limited(64 << 10), PARTS), 8 << 10);
    }
}
