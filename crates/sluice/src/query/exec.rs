//! Morsel-driven parallel execution of a [`Plan`].
//!
//! ```text
//!  segments (zone maps prune)  ──open in parallel (mmap, CRC check)──►  batches
//!  batches cut into morsels    ──workers pull the next morsel index from an AtomicUsize──►
//!  per worker: filter → project            (results kept per morsel, in order)
//!           or filter → partial aggregate  (one GroupTable per worker)
//!  once: merge partial tables → HAVING → projection → sort → offset/limit
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions};
use arrow_ord::sort::{SortColumn, SortOptions, lexsort_to_indices};
use arrow_schema::{DataType as A, Field, Schema as ArrowSchema, SchemaRef};

use super::agg::spill::AggSpill;
use super::agg::{AggFunc, AggInput, GroupTable};
use super::expr::{Expr, eval_type, exec_err};
use super::fused::{Fused, Scratch as FusedScratch};
use super::intexpr::IntProgram;
use super::memory::Reservation;
use super::plan::{Body, Plan};
use super::scan::{Done, Inputs};
use crate::batch::StatRange;
use crate::batch::dict::decode_batch;
use crate::error::{Error, Result};
use crate::exec::worker_count;
use crate::store::Database;
use crate::store::segment::SegmentScan;

/// What the scan did, for EXPLAIN and `--timing`.
#[derive(Debug, Clone, Default)]
pub struct ScanFacts {
    pub segments_total: usize,
    pub segments_scanned: usize,
    pub rows: u64,
    pub morsel_rows: usize,
    pub morsels: usize,
    pub workers: usize,
    /// Distinct integer programs of the fused aggregation pass, when the
    /// aggregates allow it (see [`super::fused`]).
    pub fused_programs: Option<usize>,
    /// Rows read through the key index: (keys looked up, rows found).
    pub index_lookup: Option<(usize, usize)>,
    /// Shards of the table, and how many the query read (a lookup reads
    /// the shards of its keys; a scan those with segments kept).
    pub shards: u32,
    pub shards_read: usize,
    /// No column was read: the row counts came from the manifest.
    pub from_manifest: bool,
    /// Record batches of the segments scanned, and how many of them the
    /// zone maps in the segments' footers ruled out.
    pub batches_total: usize,
    pub batches_pruned: usize,
    /// Morsels that ORDER BY … LIMIT skipped by their batch's zone map
    /// (none of their rows could enter the first rows).
    pub morsels_skipped: usize,
    /// A pipelined join's rows as they are counted (see
    /// [`super::join::Pipeline`]): the rows the block read, where `rows`
    /// counts its probe side's.
    pub joined_rows: Option<Arc<std::sync::atomic::AtomicU64>>,
}

/// Smallest and largest morsel. A morsel is a zero-copy slice of a batch;
/// 16 Ki rows keep per-morsel overhead (expression dispatch, a counter
/// increment) under 1 % of its work, and the size grows with the table so
/// that each worker still gets ~16 morsels to balance with, up to 64 Ki
/// rows, where a morsel's intermediate columns (1 MiB of 128-bit values)
/// still fit the L2 cache. Measured on TPC-H Q1 SF 1, 1 thread: morsels of
/// 375 Ki rows took 0.63 s, of 64 Ki rows 0.29 s.
const MIN_MORSEL_ROWS: usize = 16 << 10;
const MAX_MORSEL_ROWS: usize = 64 << 10;

/// Morsel size for a table of `rows` and `workers`.
pub fn morsel_rows(rows: u64, workers: usize) -> usize {
    let per = rows as usize / (workers.max(1) * 16);
    per.clamp(MIN_MORSEL_ROWS, MAX_MORSEL_ROWS)
}

pub(crate) fn segment_may_match(stats: &[crate::batch::ColumnStats], plan: &Plan) -> bool {
    !plan.filter.as_ref().is_some_and(never_true)
        && plan
            .prune
            .iter()
            .all(|p| match stats.get(p.column).and_then(|s| s.range) {
                Some(StatRange::Int(min, max)) => {
                    p.lo.is_none_or(|lo| (max as i128) >= lo)
                        && p.hi.is_none_or(|hi| (min as i128) <= hi)
                }
                _ => true,
            })
}

/// Whether a filter keeps no row whatever the row: a FALSE or NULL
/// constant, or an AND with one (a condition pushed into a UNION ALL
/// branch that cannot hold, `'c' = 's'`, folds to one: the branch's
/// scan then reads no segment).
fn never_true(e: &Expr) -> bool {
    use arrow_array::cast::AsArray;
    match e {
        Expr::Literal(a) => {
            a.len() == 1
                && (a.is_null(0)
                    || (a.data_type() == &arrow_schema::DataType::Boolean
                        && !a.as_boolean().value(0)))
        }
        Expr::Binary {
            op: crate::query::expr::BinOp::And,
            left,
            right,
        } => never_true(left) || never_true(right),
        _ => false,
    }
}

/// A batch with no columns and `rows` rows (the input of `SELECT 1`).
pub(crate) fn empty_input(rows: usize) -> Result<RecordBatch> {
    Ok(RecordBatch::try_new_with_options(
        Arc::new(ArrowSchema::empty()),
        vec![],
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )?)
}

/// Expressions nested up to this deep (by [`Plan::depth`]) are evaluated
/// on threads of the default stack; deeper ones on threads with
/// [`DEEP_EVAL_STACK`].
pub const INLINE_EVAL_DEPTH: usize = 16;

/// The stack of a query's threads when its expressions nest deeper than
/// [`INLINE_EVAL_DEPTH`]: evaluation recurses once a level, up to
/// [`crate::query::bind::MAX_BIND_DEPTH`] levels, each taking up to
/// ~30 KiB of stack in a debug build (a few in a release one). Only the
/// pages used are ever touched.
pub const DEEP_EVAL_STACK: usize = 64 << 20;

/// Starts one of a query's worker threads in `s`: with a deep stack when
/// `plan` nests deep (see [`DEEP_EVAL_STACK`]).
fn spawn_worker<'scope, 'env, F, T>(
    s: &'scope std::thread::Scope<'scope, 'env>,
    plan: &Plan,
    f: F,
) -> std::thread::ScopedJoinHandle<'scope, T>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    if plan.depth > INLINE_EVAL_DEPTH {
        // As `Scope::spawn`, a thread that cannot be started is a panic.
        return std::thread::Builder::new()
            .stack_size(DEEP_EVAL_STACK)
            .spawn_scoped(s, f)
            .expect("starting a query worker thread");
    }
    s.spawn(f)
}

/// Runs `plan`; returns the result batches (visible columns only).
/// Under EXPLAIN ANALYZE the run is one step of the query's profile.
pub fn execute(
    db: &Database,
    plan: &Plan,
    opts: &super::QueryOptions,
) -> Result<(Vec<RecordBatch>, ScanFacts)> {
    match &opts.profile {
        None => execute_block(db, plan, opts),
        Some(p) => {
            let s = p.start();
            match execute_block(db, plan, opts) {
                Ok((batches, facts)) => {
                    // (With the rows a join's FROM item wrote to disk.)
                    let on_disk = opts
                        .result_spill
                        .as_deref()
                        .filter(|r| r.is_for(plan))
                        .map_or(0, |r| r.rows());
                    let rows = batches.iter().map(|b| b.num_rows() as u64).sum::<u64>() + on_disk;
                    let read = facts
                        .joined_rows
                        .as_ref()
                        .map_or(facts.rows, |r| r.load(Ordering::Relaxed));
                    p.finish(s, block_name(plan, &facts), Some(read), rows);
                    Ok((batches, facts))
                }
                Err(e) => {
                    p.abandon(s, block_name(plan, &ScanFacts::default()));
                    Err(e)
                }
            }
        }
    }
}

/// The rows of `batch` where `f` is true. A set test AND-ed first
/// (`k IN (…)` of many values, a join's runtime filter) runs first, and
/// the rest only over the rows it keeps, as PostgreSQL stops at a false
/// left side of AND.
fn filter_rows(f: &Expr, batch: RecordBatch) -> Result<RecordBatch> {
    let keep = |f: &Expr, batch: RecordBatch| -> Result<RecordBatch> {
        let mask = condition_mask(f, &batch)?;
        if mask.true_count() == batch.num_rows() {
            return Ok(batch);
        }
        arrow_select::filter::filter_record_batch(&batch, &mask).map_err(exec_err)
    };
    match f {
        Expr::Binary {
            op: super::expr::BinOp::And,
            left,
            right,
        } if matches!(left.as_ref(), Expr::InValues { .. } | Expr::Bloom { .. }) => {
            let batch = keep(left, batch)?;
            if batch.num_rows() == 0 {
                return Ok(batch);
            }
            filter_rows(right, batch)
        }
        f => keep(f, batch),
    }
}

/// The rows of `batch` where `f` is true (NULL as false); comparisons of
/// integer columns with constants tested in one pass a column
/// ([`super::range_mask`]).
fn condition_mask(f: &Expr, batch: &RecordBatch) -> Result<BooleanArray> {
    super::range_mask::mask(f, batch, &|f, b| {
        as_mask(&f.eval(b)?.into_array(b.num_rows())?)
    })
}

/// A block's pipeline as EXPLAIN ANALYZE names it: its source, then
/// each operator the rows pass (`Scan lineitem -> Filter -> Aggregate`).
fn block_name(plan: &Plan, facts: &ScanFacts) -> String {
    let mut parts: Vec<String> = Vec::new();
    parts.push(match (&plan.table, plan.input.as_deref()) {
        (Some(t), _) if facts.index_lookup.is_some() => format!("Index lookup {t}"),
        (Some(t), _) if facts.from_manifest => format!("Statistics of {t}"),
        (Some(t), _) => format!("Scan {t}"),
        (None, Some(super::plan::Input::Join(g))) => {
            let names: Vec<&str> = g.leaves.iter().map(|l| l.name.as_str()).collect();
            format!("Joined rows of {}", names.join(", "))
        }
        (None, Some(super::plan::Input::Set(_))) => "Set operation's rows".into(),
        (None, Some(super::plan::Input::Window(_))) => "Window functions' rows".into(),
        (None, None) => "One row".into(),
    });
    if plan.filter.is_some() {
        parts.push("Filter".into());
    }
    parts.push(match &plan.body {
        Body::Project(_) => "Projection".into(),
        Body::Aggregate { keys, .. } if keys.is_empty() => "Aggregate".into(),
        Body::Aggregate { .. } => "Hash aggregate".into(),
    });
    if !plan.order.is_empty() {
        parts.push(
            if top_k(plan).is_some() {
                "Top-k"
            } else {
                "Sort"
            }
            .into(),
        );
    }
    if plan.limit.is_some() || plan.offset > 0 {
        parts.push("Limit".into());
    }
    parts.join(" -> ")
}

/// Keys a worker looks up at least, when a plan reads rows by key: fewer
/// are not worth a thread.
const KEYS_PER_WORKER: usize = 64;

fn execute_block(
    db: &Database,
    plan: &Plan,
    opts: &super::QueryOptions,
) -> Result<(Vec<RecordBatch>, ScanFacts)> {
    // Scalar subqueries first: the plan then reads their values.
    let resolved;
    let plan = if plan.init_plans && !plan.explain {
        resolved = super::subquery::resolve(db, plan, opts)?;
        if let Some(r) = &opts.result_spill {
            r.alias(plan, &resolved);
        }
        &resolved
    } else {
        plan
    };
    let workers = worker_count(opts.threads);
    let mut facts = ScanFacts {
        workers,
        ..Default::default()
    };

    // The range of a one-integer GROUP BY key, from the zone maps.
    let mut key_range: Option<(i64, i64)> = None;
    // Aggregates answered by the segments' statistics (no column read).
    let mut stat_cols: Option<Vec<ArrayRef>> = None;
    // Inputs: the table's segments and batches that the zone maps cannot
    // rule out.
    let mut inputs = Inputs::default();
    inputs.stop = opts.stop.clone();
    inputs.yield_between_morsels = opts.yield_between_morsels;
    // Rows by key through the index when the plan allows it; a table
    // whose index cannot be opened is scanned instead (same answer).
    let keyed = match (&plan.table, &plan.key_lookup) {
        (Some(t), Some(_)) => db.keyed(t).ok(),
        _ => None,
    };
    match &plan.table {
        // Rows of a join (or of a subquery in FROM): made first, then
        // aggregated, ordered and cut as a table's would be.
        None if plan.input.is_some() => {
            if let Some(input) = plan.input.as_ref().filter(|_| !plan.explain) {
                let bounds = Arc::new(vec![None; plan.scan_columns.len()]);
                let (batches, later, pipeline) = match input.as_ref() {
                    super::plan::Input::Join(g) => {
                        let j = super::join::run(db, g, opts, &mut facts)?;
                        (j.batches, j.later, j.pipeline)
                    }
                    super::plan::Input::Set(s) => {
                        let (batches, later) = super::setop::run(db, s, opts)?;
                        (batches, later, None)
                    }
                    super::plan::Input::Window(w) => {
                        let (batches, later) = super::window::run(db, w, opts, plan.depth)?;
                        (batches, later, None)
                    }
                };
                for b in batches {
                    inputs.push_ready(b, bounds.clone());
                }
                // (Rows the join wrote to disk: read by the workers.)
                for l in later {
                    inputs.push_later(l, bounds.clone());
                }
                // The join's last step runs on each morsel of its probe
                // side, in the workers below.
                if let Some(p) = pipeline {
                    facts.joined_rows = Some(p.rows_out());
                    inputs.pipe(p);
                }
            }
        }
        None => inputs.push_ready(empty_input(1)?, Arc::new(Vec::new())),
        Some(_) if keyed.is_some() => {
            let keyed = keyed
                .as_ref()
                .ok_or_else(|| Error::Internal("no index".into()))?;
            let keys = plan.key_lookup.as_deref().unwrap_or_default();
            // Many keys (an index join's) are looked up by every worker, a
            // run of them each (the first lookup into a record batch
            // checks and decodes it); the rows stay in the keys' order.
            let look = |keys: &[Vec<u8>]| -> Result<Vec<RecordBatch>> {
                let mut rows = Vec::new();
                for k in keys {
                    if let Some(id) = keyed.locate(k)? {
                        rows.push(keyed.row(id)?.project(&plan.scan_columns)?);
                    }
                }
                Ok(rows)
            };
            let rows = if workers > 1 && keys.len() >= 2 * KEYS_PER_WORKER {
                let per = keys.len().div_ceil(workers).max(KEYS_PER_WORKER);
                let parts: Vec<Result<Vec<RecordBatch>>> = std::thread::scope(|s| {
                    let tasks: Vec<_> =
                        keys.chunks(per).map(|c| s.spawn(move || look(c))).collect();
                    tasks
                        .into_iter()
                        .map(|t| {
                            t.join().unwrap_or_else(|_| {
                                Err(Error::Internal("key lookup panicked".into()))
                            })
                        })
                        .collect()
                });
                let mut rows = Vec::new();
                for p in parts {
                    rows.extend(p?);
                }
                rows
            } else {
                look(keys)?
            };
            facts.index_lookup = Some((keys.len(), rows.len()));
            facts.segments_total = keyed.meta().segments.len();
            facts.shards = keyed.meta().shard_count();
            let probed: std::collections::HashSet<u32> =
                keys.iter().map(|k| keyed.shard_of(k)).collect();
            facts.shards_read = probed.len();
            if let Some(first) = rows.first() {
                let schema = first.schema();
                inputs.push_ready(
                    arrow_select::concat::concat_batches(&schema, &rows)?,
                    Arc::new(vec![None; plan.scan_columns.len()]),
                );
            }
        }
        Some(t) => {
            let meta = db
                .table(t)
                .ok_or_else(|| Error::UndefinedTable(format!("no table named {t:?}")))?
                .clone();
            facts.segments_total = meta.segments.len();
            let kept: Vec<_> = meta
                .segments
                .iter()
                .filter(|s| segment_may_match(&s.stats, plan))
                .cloned()
                .collect();
            facts.segments_scanned = kept.len();
            // One integer column grouped: its range over the segments
            // read (their zone maps) sizes the dense index at once.
            if let Body::Aggregate {
                keys, sets: None, ..
            } = &plan.body
                && let [Expr::Column { index, .. }] = keys.as_slice()
                && let Some(&c) = plan.scan_columns.get(*index)
            {
                key_range = kept
                    .iter()
                    .try_fold(None, |acc: Option<(i64, i64)>, s| {
                        match s.stats.get(c).and_then(|x| x.range.as_ref()) {
                            Some(StatRange::Int(lo, hi)) => Some(Some(
                                acc.map_or((*lo, *hi), |(a, b)| (a.min(*lo), b.max(*hi))),
                            )),
                            _ => None,
                        }
                    })
                    .flatten();
            }
            facts.shards = meta.shard_count();
            facts.shards_read = kept
                .iter()
                .map(|s| s.shard)
                .collect::<std::collections::HashSet<_>>()
                .len();
            let schema = meta.schema.arrow_schema();
            // No column read and no filter (`count(*)`): the rows come
            // from the manifest, no segment is opened (their shards'
            // directories must be there).
            // min/max/count of columns without a filter: from the
            // segments' statistics, when they have them.
            stat_cols = from_statistics(plan, &kept);
            let from_manifest =
                (plan.scan_columns.is_empty() && plan.filter.is_none()) || stat_cols.is_some();
            if from_manifest {
                db.check_shard_dirs(t)?;
                facts.from_manifest = true;
            }
            let next = AtomicUsize::new(0);
            let opened: Mutex<Vec<(usize, Result<Arc<SegmentScan>>)>> = Mutex::new(Vec::new());
            // Segments are opened by the workers; the manifest's counts
            // need none.
            let readers = if from_manifest {
                0
            } else {
                workers.min(kept.len())
            };
            std::thread::scope(|s| {
                for _ in 0..readers {
                    spawn_worker(s, plan, || {
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(seg) = kept.get(i) else { break };
                            let r = db.segment_scan(seg, &schema, &plan.scan_columns);
                            if let Ok(mut o) = opened.lock() {
                                o.push((i, r));
                            }
                        }
                    });
                }
            });
            let mut opened = opened
                .into_inner()
                .map_err(|_| Error::Internal("segment reader panicked".into()))?;
            if from_manifest {
                for seg in &kept {
                    inputs.push_ready(empty_input(seg.rows as usize)?, Arc::new(Vec::new()));
                }
            }
            opened.sort_by_key(|o| o.0);
            for (i, r) in opened {
                // Bounds of |value| per scanned column, from the zone map:
                // they let the fused path skip overflow checks.
                let bounds: Arc<Vec<Option<u128>>> = Arc::new(
                    plan.scan_columns
                        .iter()
                        .map(|&c| match kept[i].stats.get(c).and_then(|s| s.range) {
                            Some(StatRange::Int(lo, hi)) => {
                                Some(lo.unsigned_abs().max(hi.unsigned_abs()) as u128)
                            }
                            _ => None,
                        })
                        .collect(),
                );
                // Batches that the zone maps in the segment's footer rule
                // out get no morsels.
                inputs.push_segment(r?, bounds, |stats| segment_may_match(stats, plan));
            }
        }
    }
    facts.rows = inputs.rows;
    facts.batches_total = inputs.batches_total;
    facts.batches_pruned = inputs.batches_pruned;
    facts.morsel_rows = opts
        .morsel_rows
        .unwrap_or_else(|| {
            morsel_rows(facts.rows, workers).min(spill_morsel_rows(plan, opts, workers))
        })
        .max(1);
    inputs.cut(facts.morsel_rows, workers);
    // A table's pages that no result row can point into are let go as
    // their batches are done: every column under an aggregate (it copies
    // what it keeps), the columns a projection does not output.
    // So is every column of a plan whose rows may go to disk (a join's
    // FROM item, a window's or set operation's input): the rows it keeps
    // in memory are copied out of the pages (see `owned_batch`).
    // (A query's answer cut by LIMIT without ORDER BY too: the cut is
    // made as it is read back, see `ResultSpill::cut`.)
    let rows_to_disk =
        opts.result_spill.as_deref().is_some_and(|r| {
            r.is_for(plan) && (r.ordered || plan.limit.is_none() && plan.offset == 0)
        }) && top_k(plan).is_none()
            && plan.order.is_empty()
            && opts.spill.is_some();
    // Under a limit whose share for a worker is small (a batch of
    // lineitem at SF 1 is some 30 MiB), a batch's pages are let go morsel
    // by morsel as well.
    inputs.release_morsels = opts
        .memory
        .as_ref()
        .is_some_and(|m| m.limit() / (workers.max(1) as u64) < 256 << 20);
    if plan.table.is_some() {
        let n = plan.scan_columns.len();
        inputs.release = match &plan.body {
            Body::Aggregate { .. } => (0..n).collect(),
            Body::Project(_) if rows_to_disk => (0..n).collect(),
            // A sort of every row: what it keeps is a morsel's rows
            // until they are sorted (copied) into the answer or a run on
            // disk, and pages let go under rows still kept are read
            // again from the file when those rows are (a page under
            // rows sorted to disk was held beside the limit: `SELECT *
            // FROM lineitem ORDER BY l_comment` at 64 MiB held 170 MiB
            // of them).
            Body::Project(_) if !plan.order.is_empty() && top_k(plan).is_none() => (0..n).collect(),
            Body::Project(exprs) => {
                let mut used = vec![false; n];
                for e in exprs {
                    e.mark_columns(&mut used);
                }
                (0..n).filter(|&c| !used[c]).collect()
            }
        };
    }
    let mut inputs = inputs;
    let morsels = &inputs.morsels;
    facts.morsels = morsels.len();
    if let Body::Aggregate {
        aggs, sets: None, ..
    } = &plan.body
    {
        facts.fused_programs =
            Fused::new(aggs, &fast_programs(aggs, &plan.table_types)).map(|f| f.programs());
    }
    if plan.explain {
        return Ok((Vec::new(), facts));
    }

    let next = AtomicUsize::new(0);
    let types: Vec<A> = plan.table_types.clone();
    let keep_dict = dictionary_keys(plan);
    let work_filter = |batch: RecordBatch| -> Result<RecordBatch> {
        match &plan.filter {
            None => Ok(batch),
            Some(f) => filter_rows(f, batch),
        }
    };

    let out = match &plan.body {
        Body::Project(exprs) => {
            let results: Mutex<Vec<(usize, Result<RecordBatch>)>> = Mutex::new(Vec::new());
            let out_schema = output_schema(exprs, &types, &plan.names);
            // ORDER BY … LIMIT: each worker keeps only the first
            // `limit + offset` rows in the order that it has seen, with
            // their positions (see `top_rows`).
            let top = top_k(plan);
            let (filter_dicts, after_filter) = filter_dictionaries(plan, exprs);
            let skipped = AtomicUsize::new(0);
            // The best threshold any worker has reached (see
            // `stored_threshold`): a row worse than it is in no worker's
            // first rows, so every worker skips batches by it.
            let threshold: Mutex<Option<i128>> = Mutex::new(None);
            // The rows kept for the answer, counted as they are made.
            let held = Mutex::new(opts.reserve("scan result", 0)?);
            // A join's FROM item, its rows neither ordered nor cut: those
            // past the memory limit go to disk (see `join::ResultSpill`).
            let to_disk = opts.result_spill.as_deref().filter(|_| rows_to_disk);
            let visible: Vec<usize> = (0..plan.visible).collect();
            // Rows kept so far under a LIMIT without ORDER BY.
            // (Each done morsel's rows by its place in the table, and the
            // rows of the first morsels all done: the table's prefix.)
            let limited_rows: Mutex<(Vec<Option<usize>>, usize, usize)> =
                Mutex::new((vec![None; morsels.len()], 0, 0));
            // ORDER BY: rows past half the limit are sorted to disk (a
            // worker's first rows under LIMIT too), and merged at the end.
            let sorter = if plan.order.is_empty() {
                None
            } else {
                super::sort::ExternalSort::new(&plan.order, opts, top)
            };
            // One worker (a key lookup, a small table): on this thread,
            // without starting one (a thread costs more than the rows).
            // A worker's first rows so far and the candidates since, as
            // the first k of them all.
            let compact = |best: &mut Option<RecordBatch>,
                           pending: &mut Vec<RecordBatch>,
                           k: usize|
             -> Result<()> {
                if pending.is_empty() {
                    return Ok(());
                }
                let mut all: Vec<RecordBatch> = best.take().into_iter().collect();
                all.append(pending);
                let cat = arrow_select::concat::concat_batches(&all[0].schema(), &all)
                    .map_err(exec_err)?;
                *best = Some(top_rows(&cat, plan, k)?);
                Ok(())
            };
            let work = || {
                let mut best: Option<RecordBatch> = None;
                let mut pending: Vec<RecordBatch> = Vec::new();
                let mut pending_rows = 0usize;
                // The bytes of `best` and `pending`, counted.
                let mut top_mem = opts.reserve(super::sort::OPERATOR, 0).ok();
                while let Some(i) = inputs.nth(next.fetch_add(1, Ordering::Relaxed)) {
                    let Some(&m) = morsels.get(i) else {
                        break;
                    };
                    let _done = Done::new(&inputs, m);
                    // A batch none of whose rows could enter the
                    // first rows is not read.
                    let own = match (top, &best) {
                        (Some(k), Some(b)) => stored_threshold(exprs, b, plan, k),
                        _ => None,
                    };
                    let shared = threshold.lock().map(|g| *g).unwrap_or(None);
                    if let Some(t) = better_threshold(own, shared, plan)
                        && batch_beyond(inputs.stats(m.batch), exprs, plan, t)
                    {
                        skipped.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    let r = (|| {
                        // Without a filter, once the worker has its
                        // first rows, the first key's column is
                        // checked first: a morsel none of whose rows
                        // could enter is left before the bytes of its
                        // other columns are touched.
                        let key_only = match (top, &best, &plan.filter) {
                            (Some(k), Some(b), None) => stored_threshold(exprs, b, plan, k)
                                .and_then(|_| first_key_input(exprs, plan)),
                            _ => None,
                        };
                        let raw = match (key_only, top, &best) {
                            (Some(p), Some(k), Some(b)) => {
                                let raw = inputs.rows_checked(&m, Some(&[p]))?;
                                if could_enter_stored(&raw, exprs, b, plan, k)?
                                    .is_some_and(|mask| mask.true_count() == 0)
                                {
                                    skipped.fetch_add(1, Ordering::Relaxed);
                                    return Ok(None);
                                }
                                inputs.check(&m)?;
                                raw
                            }
                            _ => inputs.rows_of(&m)?,
                        };
                        let batch = work_filter(decode_batch(&raw, &filter_dicts)?)?;
                        let batch = decode_batch(&batch, &after_filter)?;
                        // Rows that cannot enter the worker's first
                        // rows, dropped before they are projected.
                        let (batch, rows) = match (top, &best) {
                            (Some(k), Some(best)) => {
                                match could_enter_stored(&batch, exprs, best, plan, k)? {
                                    Some(m) => {
                                        let rows: Vec<u64> =
                                            m.values().set_indices().map(|r| r as u64).collect();
                                        let kept =
                                            arrow_select::filter::filter_record_batch(&batch, &m)
                                                .map_err(exec_err)?;
                                        (kept, Some(rows))
                                    }
                                    None => (batch, None),
                                }
                            }
                            _ => (batch, None),
                        };
                        let out = project(&batch, exprs, &out_schema)?;
                        let Some(k) = top else {
                            // LIMIT without ORDER BY: a morsel keeps the
                            // rows the answer could take from it (copied:
                            // a slice would hold the whole morsel), and
                            // once the table's first morsels, all done,
                            // hold the answer's rows, no more are handed
                            // out (workers take morsels of two batches
                            // in turn: those done are not a prefix of
                            // the table until then).
                            let out = match (plan.order.is_empty(), plan.limit) {
                                (true, Some(l)) => {
                                    let want = l.saturating_add(plan.offset);
                                    let out = if out.num_rows() > want {
                                        let cut = out.slice(0, want);
                                        arrow_select::concat::concat_batches(&cut.schema(), [&cut])
                                            .map_err(exec_err)?
                                    } else {
                                        out
                                    };
                                    let mut g = limited_rows
                                        .lock()
                                        .map_err(|_| Error::Internal("worker panicked".into()))?;
                                    let (done, prefix, rows) = &mut *g;
                                    if let Some(d) = done.get_mut(i) {
                                        *d = Some(out.num_rows());
                                    }
                                    while let Some(Some(n)) = done.get(*prefix) {
                                        *rows += n;
                                        *prefix += 1;
                                    }
                                    if *rows >= want {
                                        next.store(usize::MAX / 2, Ordering::Relaxed);
                                    }
                                    out
                                }
                                _ => out,
                            };
                            let bytes = super::memory::batch_bytes(&out);
                            if let Some(s) = &sorter {
                                let grown = match s.should_spill(bytes) {
                                    true => Err(None),
                                    false => held
                                        .lock()
                                        .map_err(|_| Error::Internal("worker panicked".into()))?
                                        .grow(bytes)
                                        .map_err(Some),
                                };
                                match grown {
                                    Ok(()) => return Ok(Some(out)),
                                    Err(None | Some(Error::MemoryLimit { .. })) => {}
                                    Err(Some(e)) => return Err(e),
                                }
                                // Past half the limit: the rows held so far
                                // and these, sorted to disk.
                                let mut rows = vec![with_positions(&out, i, None)?];
                                let mut freed = 0;
                                {
                                    let mut o = results
                                        .lock()
                                        .map_err(|_| Error::Internal("worker panicked".into()))?;
                                    let mut kept = Vec::with_capacity(o.len());
                                    for (j, r) in o.drain(..) {
                                        match r {
                                            Ok(b) => {
                                                freed += super::memory::batch_bytes(&b);
                                                rows.push(with_positions(&b, j, None)?);
                                            }
                                            Err(e) => kept.push((j, Err(e))),
                                        }
                                    }
                                    *o = kept;
                                }
                                s.spill(&rows)?;
                                drop(rows);
                                let mut h = held
                                    .lock()
                                    .map_err(|_| Error::Internal("worker panicked".into()))?;
                                let left = h.bytes().saturating_sub(freed);
                                h.resize(left)?;
                                return Ok(None);
                            }
                            // (Past half the limit a join's rows go to
                            // disk: see `Memory::keeps_rows`.)
                            let past_half =
                                opts.memory.as_ref().is_some_and(|m| !m.keeps_rows(bytes));
                            let grown = match to_disk {
                                Some(d) if d.always || past_half || d.holds_answer() => Err(None),
                                _ => held
                                    .lock()
                                    .map_err(|_| Error::Internal("worker panicked".into()))?
                                    .grow(bytes)
                                    .map_err(Some),
                            };
                            return match (grown, to_disk) {
                                // (Its table's pages are let go: the rows
                                // kept must not point into them.)
                                (Ok(()), Some(_)) => Ok(Some(super::memory::owned_batch(&out)?)),
                                (Ok(()), None) => Ok(Some(out)),
                                (Err(None | Some(Error::MemoryLimit { .. })), Some(d)) => {
                                    d.write(opts, i, out.project(&visible).map_err(exec_err)?)?;
                                    Ok(None)
                                }
                                (Err(Some(e)), _) => Err(e),
                                (Err(None), None) => {
                                    Err(Error::Internal("a result without its disk".into()))
                                }
                            };
                        };
                        let cand = with_positions(&out, i, rows.as_deref())?;
                        let cand = match &best {
                            Some(best) if rows.is_none() => could_enter(&cand, best, plan, k)?,
                            _ => cand,
                        };
                        pending_rows += cand.num_rows();
                        pending.push(cand);
                        // The first rows counted; past half the limit
                        // sorted to disk (their first k), and begun anew.
                        if let (Some(s), Some(mem)) = (&sorter, top_mem.as_mut()) {
                            let bytes = best
                                .iter()
                                .chain(pending.iter())
                                .map(super::memory::batch_bytes)
                                .sum::<u64>();
                            let grow = bytes.saturating_sub(mem.bytes());
                            let fits = !s.should_spill(grow)
                                && match mem.resize(bytes) {
                                    Ok(()) => true,
                                    Err(Error::MemoryLimit { .. }) => false,
                                    Err(e) => return Err(e),
                                };
                            // Its first k rows alone may fit (a small k):
                            // sorted down to them first, when that leaves
                            // fewer.
                            let held = best.as_ref().map_or(0, |b| b.num_rows()) + pending_rows;
                            let fits = fits
                                || held > k && {
                                    compact(&mut best, &mut pending, k)?;
                                    pending_rows = 0;
                                    let bytes = best.as_ref().map_or(0, super::memory::batch_bytes);
                                    let grow = bytes.saturating_sub(mem.bytes());
                                    (grow == 0 || !s.should_spill(grow))
                                        && match mem.resize(bytes) {
                                            Ok(()) => true,
                                            Err(Error::MemoryLimit { .. }) => false,
                                            Err(e) => return Err(e),
                                        }
                                };
                            if !fits {
                                let mut rows: Vec<RecordBatch> = best.take().into_iter().collect();
                                rows.append(&mut pending);
                                pending_rows = 0;
                                s.spill(&rows)?;
                                drop(rows);
                                mem.resize(0)?;
                                return Ok(None);
                            }
                        }
                        // Sorted down to the first k once the rows held
                        // pass 2k: each row is sorted a bounded number of
                        // times whatever k (a top-k of half a table
                        // sorted its k rows again at every morsel: 16 s
                        // where a full sort takes one).
                        let held = best.as_ref().map_or(0, |b| b.num_rows()) + pending_rows;
                        if held >= k.saturating_mul(2) {
                            compact(&mut best, &mut pending, k)?;
                            pending_rows = 0;
                            if let Some(b) = &best
                                && let Some(t) = stored_threshold(exprs, b, plan, k)
                                && let Ok(mut shared) = threshold.lock()
                            {
                                *shared = better_threshold(Some(t), *shared, plan);
                            }
                        }
                        Ok(None)
                    })();
                    let failed = r.is_err();
                    let r = r.transpose();
                    if let (Some(r), Ok(mut o)) = (r, results.lock()) {
                        o.push((i, r));
                    }
                    if failed {
                        // Stop handing out morsels; the error is reported.
                        next.store(usize::MAX / 2, Ordering::Relaxed);
                    }
                }
                if let Some(k) = top
                    && let Err(e) = compact(&mut best, &mut pending, k)
                {
                    if let Ok(mut o) = results.lock() {
                        o.push((usize::MAX, Err(e)));
                    }
                    return;
                }
                if let (Some(best), Ok(mut o)) = (best, results.lock()) {
                    o.push((usize::MAX, Ok(best)));
                }
            };
            match workers.min(morsels.len()).max(1) {
                1 => work(),
                n => std::thread::scope(|s| {
                    for _ in 0..n {
                        spawn_worker(s, plan, work);
                    }
                }),
            }
            facts.morsels_skipped = skipped.into_inner();
            // Every morsel is done: a pipelined join's tables are let go
            // before the rows are merged (Q2's answer, under a limit of
            // 64 KiB, found no room beside them).
            inputs.let_go_of_pipeline();
            let mut results = results
                .into_inner()
                .map_err(|_| Error::Internal("worker panicked".into()))?;
            results.sort_by_key(|r| r.0);
            if let Some(s) = sorter.as_ref().filter(|s| s.spilled()) {
                // Some rows on disk: the rest with their positions (a
                // worker's first rows have theirs), merged with them.
                let rest = results
                    .into_iter()
                    .map(|(i, r)| match top {
                        Some(_) => r,
                        None => r.and_then(|b| with_positions(&b, i, None)),
                    })
                    .collect::<Result<Vec<_>>>()?;
                let keep: Vec<usize> = (0..plan.visible).collect();
                let schema = out_schema.project(&keep)?;
                let out = sorted_result(s, &rest, top.is_some(), plan, opts, schema)?;
                if let Some(e) = opts.stop.as_ref().and_then(|s| s.error()) {
                    return Err(e);
                }
                return Ok((out, facts));
            }
            if let Some(d) = to_disk.filter(|d| d.holds_answer()) {
                // Part of a query's answer went to disk: the rows held
                // follow it there, each in its morsel's place (in memory
                // they would come first).
                for (i, r) in results {
                    let b = r?;
                    if b.num_rows() > 0 {
                        d.write(opts, i, b.project(&visible).map_err(exec_err)?)?;
                    }
                }
                if plan.limit.is_some() || plan.offset > 0 {
                    d.cut(plan.offset, plan.limit);
                }
                opts.check_stop()?;
                let schema = Arc::new(out_schema.project(&visible)?);
                return Ok((vec![RecordBatch::new_empty(schema)], facts));
            }
            let batches: Vec<RecordBatch> =
                results.into_iter().map(|r| r.1).collect::<Result<_>>()?;
            match top {
                // The workers' first rows, each sorted (positions last):
                // many merged, not sorted again (a few sorted together).
                Some(_)
                    if sorter.is_some()
                        && batches.iter().map(|b| b.num_rows()).sum::<usize>() > 1 << 16 =>
                {
                    let Some(s) = &sorter else {
                        return Err(Error::Internal("a sort without its sorter".into()));
                    };
                    let keep: Vec<usize> = (0..plan.visible).collect();
                    let schema = out_schema.project(&keep)?;
                    let out = sorted_result(s, &batches, true, plan, opts, schema)?;
                    if let Some(e) = opts.stop.as_ref().and_then(|s| s.error()) {
                        return Err(e);
                    }
                    return Ok((out, facts));
                }
                Some(k) => {
                    // The workers' first rows, with their positions in the
                    // last column: the first k of them overall.
                    let schema = match batches.first() {
                        Some(b) => b.schema(),
                        None => position_schema(&out_schema),
                    };
                    let all = arrow_select::concat::concat_batches(&schema, &batches)
                        .map_err(exec_err)?;
                    let out = top_rows(&all, plan, k)?;
                    let keep: Vec<usize> = (0..out.num_columns() - 1).collect();
                    if let Some(e) = opts.stop.as_ref().and_then(|s| s.error()) {
                        return Err(e);
                    }
                    return Ok((vec![limit_rows(out.project(&keep)?, plan)?], facts));
                }
                None if batches.is_empty() => vec![RecordBatch::new_empty(out_schema)],
                // Nothing to order or cut: the morsels' batches in table
                // order, as they are (a concatenation would copy every
                // row of a `SELECT *` once more).
                None if plan.order.is_empty() && plan.limit.is_none() && plan.offset == 0 => {
                    if let Some(e) = opts.stop.as_ref().and_then(|s| s.error()) {
                        return Err(e);
                    }
                    let keep: Vec<usize> = (0..plan.visible).collect();
                    let mut batches = batches;
                    // Morsels a filter emptied are dropped (one is kept:
                    // a result has at least one batch).
                    if batches.iter().any(|b| b.num_rows() > 0) {
                        batches.retain(|b| b.num_rows() > 0);
                    } else {
                        batches.truncate(1);
                    }
                    let batches = batches
                        .into_iter()
                        .map(|b| {
                            if b.num_columns() == keep.len() {
                                Ok(b)
                            } else {
                                b.project(&keep).map_err(exec_err)
                            }
                        })
                        .collect::<Result<Vec<_>>>()?;
                    return Ok((batches, facts));
                }
                // Sorted and cut together (or, when a sorted copy does
                // not fit, by `sort_and_limit` a batch at a time).
                None if !plan.order.is_empty() => batches,
                None => vec![
                    arrow_select::concat::concat_batches(&out_schema, &batches)
                        .map_err(exec_err)?,
                ],
            }
        }
        Body::Aggregate {
            keys,
            aggs,
            having,
            post,
            sets,
        } => {
            let key_types: Vec<A> = keys.iter().map(|k| k.data_type(&types)).collect();
            let key_evals: Vec<KeyEval> = keys.iter().map(KeyEval::new).collect();
            let keys = &key_evals;
            // count(*) alone, no GROUP BY: a morsel counts its kept rows.
            let count_only = keys.is_empty() && aggs.iter().all(|a| a.arg.is_none());
            let mut agg_types = key_types.clone();
            agg_types.extend(aggs.iter().map(|c| c.output_type()));
            let agg_schema = Arc::new(ArrowSchema::new(
                agg_types
                    .iter()
                    .enumerate()
                    .map(|(i, t)| Field::new(format!("c{i}"), t.clone(), true))
                    .collect::<Vec<Field>>(),
            ));
            // The groups' columns as a batch, HAVING applied.
            let finish_cols = |cols: Vec<ArrayRef>| -> Result<RecordBatch> {
                // A grouping without keys is one row, also when it computes no
                // column (`SELECT 1 FROM t GROUP BY ()`, `… HAVING true`).
                let n = cols
                    .first()
                    .map_or(usize::from(key_types.is_empty()), |c| c.len());
                let agg_batch = RecordBatch::try_new_with_options(
                    agg_schema.clone(),
                    cols,
                    &RecordBatchOptions::new().with_row_count(Some(n)),
                )?;
                Ok(match having {
                    None => agg_batch,
                    Some(h) => {
                        let mask = h.eval(&agg_batch)?.into_array(agg_batch.num_rows())?;
                        arrow_select::filter::filter_record_batch(&agg_batch, &as_mask(&mask)?)
                            .map_err(exec_err)?
                    }
                })
            };
            let grouped = match stat_cols {
                Some(cols) => Grouped::Columns(cols),
                None => {
                    let fast = fast_programs(aggs, &types);

                    // Grouping sets fold each row once a set that no
                    // other set holds (the others are made from those
                    // sets' groups at the end): the general path.
                    let bases = sets
                        .as_deref()
                        .map(|s| super::grouping::bases(s))
                        .unwrap_or_default();
                    let fused = match sets {
                        None => Fused::new(aggs, &fast),
                        Some(_) => None,
                    };
                    let tables: Mutex<Vec<Result<(GroupTable, Reservation)>>> =
                        Mutex::new(Vec::new());
                    // Past the memory limit a grouping writes its tables
                    // out and merges them by partition (see
                    // `agg::spill`); one without keys has one group, and
                    // grouping sets merge their sets after.
                    let spiller = match (&opts.spill, sets) {
                        (Some(sp), None) if !key_types.is_empty() => Some(AggSpill::new(
                            sp.clone(),
                            key_types.clone(),
                            aggs.clone(),
                            opts.memory.as_ref().map_or(u64::MAX, |m| m.limit()),
                            opts.profile.clone(),
                        )),
                        _ => None,
                    };
                    let spiller = spiller.as_ref();
                    // The dense index of one integer key takes its slots
                    // at once, in one morsel (4 bytes a key of the range,
                    // or up to 32 a row of the input), before the table's
                    // bytes are next counted: a grouping that may spill
                    // does without it when that alone could pass a
                    // worker's share of the limit.
                    let share = match (spiller, &opts.memory) {
                        (Some(_), Some(m)) => m.limit() / (2 * workers.max(1) as u64),
                        _ => u64::MAX,
                    };
                    let dense_too_big = key_range.is_some_and(|(lo, hi)| {
                        (hi as i128 - lo as i128 + 1).max(0) as u64 * 4 > share
                    });
                    // Keys of no known range: the index may take up to 8
                    // slots (32 bytes) a row it is told of, so it is told
                    // of no more rows than a share holds at that.
                    let dense_rows = inputs.rows.min(share / 32);
                    // The table's bytes counted; past the limit, written
                    // out (when it may be) and emptied.
                    // Where it may spill, a table counts the room its
                    // vectors and maps would take for `rows` more groups
                    // too (a vector doubles at once): it spills before a
                    // morsel takes it past the limit, not after.
                    let need = |table: &GroupTable, rows: usize| -> u64 {
                        match spiller {
                            Some(_) => (table.bytes() + table.growth_for(rows)) as u64,
                            None => table.bytes() as u64,
                        }
                    };
                    let fit = |table: &mut GroupTable,
                               mem: &mut Reservation,
                               rows: usize|
                     -> Result<()> {
                        let r = mem.resize(need(table, rows));
                        let (Err(Error::MemoryLimit { .. }), Some(sp)) = (&r, spiller) else {
                            return r;
                        };
                        // A table small beside its share goes on as it is
                        // (the room for a morsel of all-new groups is a
                        // worst case): written out at every morsel, tables
                        // of a few groups made runs of tiny frames.
                        if (table.bytes() as u64).saturating_mul(4) < share
                            && mem.resize(table.bytes() as u64).is_ok()
                        {
                            return Ok(());
                        }
                        if table.groups() > 1 {
                            sp.spill(table)?;
                            if mem.resize(need(table, rows)).is_ok() {
                                return Ok(());
                            }
                        }
                        // An emptied table's room for a whole morsel of
                        // new groups may be more than a small limit holds:
                        // it takes the morsel with its own bytes counted.
                        // And the room may be the other workers': finished
                        // ones' tables are written out here, running ones
                        // are asked to write theirs at their next morsel.
                        for tries in 0.. {
                            match mem.resize(table.bytes() as u64) {
                                Err(Error::MemoryLimit { .. }) if tries == 0 => {
                                    let mut done = tables
                                        .lock()
                                        .map_err(|_| Error::Internal("worker panicked".into()))?;
                                    for (t, m) in done.iter_mut().flatten() {
                                        if t.groups() > 1 {
                                            sp.spill(t)?;
                                            m.resize(t.bytes() as u64)?;
                                        }
                                    }
                                    sp.ask_others();
                                }
                                Err(Error::MemoryLimit { .. }) if tries < SPILL_WAIT_TRIES => {
                                    std::thread::sleep(std::time::Duration::from_millis(1));
                                }
                                r => return r,
                            }
                        }
                        Ok(())
                    };
                    std::thread::scope(|s| {
                        for _ in 0..workers.min(morsels.len()).max(1) {
                            spawn_worker(s, plan, || {
                                let r = (|| {
                                    let mut table = GroupTable::new(&key_types, aggs.clone())?;
                                    table.expect_rows(dense_rows as usize);
                                    if dense_too_big {
                                        table.without_dense();
                                    } else if let Some((lo, hi)) = key_range {
                                        table.expect_range(lo, hi);
                                    }
                                    let mut mem = opts.reserve("hash aggregate", 0)?;
                                    let mut seen_asked = 0;
                                    // Buffers of the integer fast path, reused across morsels.
                                    let mut bufs: Vec<Vec<i128>> = vec![Vec::new(); aggs.len()];
                                    let mut pool: Vec<Vec<i128>> = Vec::new();
                                    let mut bufs64: Vec<Vec<i64>> = vec![Vec::new(); aggs.len()];
                                    let mut pool64: Vec<Vec<i64>> = Vec::new();
                                    let mut scratch = FusedScratch::default();
                                    while let Some(i) =
                                        inputs.nth(next.fetch_add(1, Ordering::Relaxed))
                                    {
                                        let Some(&m) = morsels.get(i) else {
                                            break;
                                        };
                                        let _done = Done::new(&inputs, m);
                                        // Another worker needs the room this
                                        // table holds.
                                        if let Some(sp) = spiller
                                            && sp.asked() != seen_asked
                                        {
                                            seen_asked = sp.asked();
                                            if table.groups() > 1 {
                                                sp.spill(&mut table)?;
                                            }
                                        }
                                        // Dictionary-encoded TEXT stays encoded only
                                        // where it is a bare group key.
                                        let rows = match (inputs.rows_of(&m), spiller) {
                                            // A pipelined join's rows that do
                                            // not fit beside the groups: the
                                            // groups go to disk (the other
                                            // workers' at their next morsel),
                                            // and the morsel is joined again.
                                            (Err(Error::MemoryLimit { .. }), Some(sp)) => {
                                                if table.groups() > 1 {
                                                    sp.spill(&mut table)?;
                                                    mem.resize(table.bytes() as u64)?;
                                                }
                                                sp.ask_others();
                                                inputs.rows_of(&m)?
                                            }
                                            (r, _) => r?,
                                        };
                                        let raw = decode_batch(&rows, &keep_dict)?;
                                        // The table as the last morsel left it,
                                        // with room for this one's rows.
                                        fit(&mut table, &mut mem, raw.num_rows())?;
                                        // (A pipelined join's rows are not the morsel's.)
                                        let len = raw.num_rows();
                                        if len == 0 {
                                            continue;
                                        }
                                        // Mostly-kept morsels are not copied: the
                                        // filter becomes a selection vector.
                                        let (mut batch, mut sel) = match &plan.filter {
                                            None => (raw, None),
                                            Some(f) => {
                                                let mask = condition_mask(f, &raw)?;
                                                let kept = mask.true_count();
                                                if kept == 0 {
                                                    continue;
                                                } else if kept == len {
                                                    (raw, None)
                                                } else if count_only {
                                                    // Only the kept rows' number
                                                    // matters: no column copied.
                                                    (empty_input(kept)?, None)
                                                } else if kept * 4 >= len * 3 {
                                                    (raw, Some(mask))
                                                } else {
                                                    let f =
                                                        arrow_select::filter::filter_record_batch(
                                                            &raw, &mask,
                                                        )
                                                        .map_err(exec_err)?;
                                                    (f, None)
                                                }
                                            }
                                        };
                                        // Group ids the fused pass found and did
                                        // not use: the general path's, not found twice.
                                        let mut found: Option<Vec<u32>> = None;
                                        // Few groups and integer sums: one fused pass.
                                        if let Some(fz) = &fused {
                                            let n = batch.num_rows();
                                            let k: Result<Vec<ArrayRef>> =
                                                keys.iter().map(|e| e.eval(&batch)).collect();
                                            if let Ok(k) = k {
                                                // A global aggregate over every row
                                                // of the morsel: no group ids.
                                                let groups = if keys.is_empty() && sel.is_none() {
                                                    Vec::new()
                                                } else {
                                                    table.group_ids(n, &k, sel.as_ref())?
                                                };
                                                let ran = fz.run(
                                                    &batch,
                                                    inputs.bounds(m.batch),
                                                    &groups,
                                                    table.groups(),
                                                    &mut scratch,
                                                );
                                                // A CASE condition may fail on a row
                                                // the filter excludes: the general
                                                // path below evaluates the kept rows.
                                                let ran = match ran {
                                                    Err(_) if sel.is_some() => false,
                                                    r => r?,
                                                };
                                                if ran {
                                                    table.add_dense(
                                                        &scratch.rows,
                                                        &scratch.sums,
                                                        fz.programs(),
                                                        fz.agg_programs(),
                                                    )?;
                                                    continue;
                                                }
                                                if !keys.is_empty() {
                                                    found = Some(groups);
                                                }
                                            }
                                        }
                                        let mut ev = AggEval {
                                            keys,
                                            aggs,
                                            fast: &fast,
                                            bufs: &mut bufs,
                                            bufs64: &mut bufs64,
                                            pool: &mut pool,
                                            pool64: &mut pool64,
                                        };
                                        let evaluated = match ev.eval(&batch) {
                                            Ok(e) => e,
                                            // Rows the filter excludes must not fail
                                            // the query: evaluate the kept rows only.
                                            Err(_) if sel.is_some() => {
                                                let mask = sel.take().expect("checked above");
                                                found = None;
                                                batch = arrow_select::filter::filter_record_batch(
                                                    &batch, &mask,
                                                )
                                                .map_err(exec_err)?;
                                                ev.eval(&batch)?
                                            }
                                            Err(e) => return Err(e),
                                        };
                                        let n = batch.num_rows();
                                        let (k, general, mut fast_nulls, wide) = evaluated;
                                        let mut a = Vec::with_capacity(aggs.len());
                                        let mut general = general.into_iter();
                                        for (j, (call, p)) in aggs.iter().zip(&fast).enumerate() {
                                            let g = general.next().flatten();
                                            a.push(match (&call.arg, p, g) {
                                                (None, _, _) => AggInput::Star,
                                                (Some(_), Some(_), _) if wide[j] => {
                                                    AggInput::Ints(&bufs[j], fast_nulls[j].take())
                                                }
                                                (Some(_), Some(_), _) => AggInput::Ints64(
                                                    &bufs64[j],
                                                    fast_nulls[j].take(),
                                                ),
                                                (Some(_), None, Some(arr)) => AggInput::Array(arr),
                                                (Some(_), None, None) => {
                                                    return Err(Error::Internal(
                                                        "aggregate argument not evaluated".into(),
                                                    ));
                                                }
                                            });
                                        }
                                        match sets {
                                            None => match found {
                                                Some(g) => table.update_groups(&g, &a)?,
                                                None => table.update(n, &k, &a, sel.as_ref())?,
                                            },
                                            Some(sets) => {
                                                for (s, present) in sets.iter().enumerate() {
                                                    // Made from a larger set's
                                                    // groups at the end.
                                                    if bases[s].is_some() {
                                                        continue;
                                                    }
                                                    let ks = super::grouping::set_keys(
                                                        &k, present, s, &key_types, n,
                                                    )?;
                                                    table.update(n, &ks, &a, sel.as_ref())?;
                                                }
                                            }
                                        }
                                    }
                                    fit(&mut table, &mut mem, 0)?;
                                    Ok((table, mem))
                                })();
                                if r.is_err() {
                                    next.store(usize::MAX / 2, Ordering::Relaxed);
                                }
                                if let Ok(mut t) = tables.lock() {
                                    t.push(r);
                                }
                            });
                        }
                    });
                    // Every morsel is grouped: a pipelined join's tables
                    // and rows are let go before the groups are merged.
                    inputs.let_go_of_pipeline();
                    let mut tables = tables
                        .into_inner()
                        .map_err(|_| Error::Internal("worker panicked".into()))?
                        .into_iter()
                        .collect::<Result<Vec<_>>>()?
                        .into_iter();
                    let (mut fin, mut mem) = match tables.next() {
                        Some(t) => t,
                        None => (
                            GroupTable::new(&key_types, aggs.clone())?,
                            opts.reserve("hash aggregate", 0)?,
                        ),
                    };
                    // Merged in memory, unless a table was written out or
                    // the merged table does not fit.
                    let mut over = spiller.is_some_and(|sp| sp.spilled());
                    if !over {
                        for (t, theirs) in tables.by_ref() {
                            fin.merge(t)?;
                            drop(theirs);
                            match (mem.resize(fin.bytes() as u64), spiller) {
                                (Err(Error::MemoryLimit { .. }), Some(_)) => {
                                    over = true;
                                    break;
                                }
                                (r, _) => r?,
                            }
                        }
                    }
                    match (spiller, over) {
                        (Some(sp), true) => {
                            // Every table out, then the partitions merged
                            // one a worker, all workers at once.
                            sp.spill(&mut fin)?;
                            drop((fin, mem));
                            for (mut t, m) in tables {
                                sp.spill(&mut t)?;
                                drop((t, m));
                            }
                            let runs = sp.take_runs()?;
                            let next = AtomicUsize::new(0);
                            // Per partition its batches, or None: it did
                            // not fit beside the others.
                            type Merged = Result<Option<Vec<RecordBatch>>>;
                            let parts: Mutex<Vec<(u32, Merged)>> = Mutex::new(Vec::new());
                            let parts_n = super::agg::spill::PARTS as usize;
                            std::thread::scope(|s| {
                                for _ in 0..workers.clamp(1, parts_n) {
                                    spawn_worker(s, plan, || {
                                        loop {
                                            let p = next.fetch_add(1, Ordering::Relaxed);
                                            if p >= parts_n {
                                                break;
                                            }
                                            let r = match opts.stop.as_ref().and_then(|s| s.error())
                                            {
                                                Some(e) => Err(e),
                                                None => sp.merge_partition(
                                                    &runs,
                                                    p as u32,
                                                    workers == 1,
                                                    opts,
                                                    &finish_cols,
                                                ),
                                            };
                                            let failed = r.is_err();
                                            if let Ok(mut d) = parts.lock() {
                                                d.push((p as u32, r));
                                            }
                                            if failed {
                                                // The others stop at their next partition.
                                                next.store(usize::MAX / 2, Ordering::Relaxed);
                                                break;
                                            }
                                        }
                                    });
                                }
                            });
                            let mut parts = parts
                                .into_inner()
                                .map_err(|_| Error::Internal("worker panicked".into()))?;
                            parts.sort_by_key(|p| p.0);
                            let mut batches = Vec::new();
                            for (p, r) in parts {
                                match r? {
                                    Some(b) => batches.extend(b),
                                    // Alone now, split if it must be.
                                    None => batches.extend(
                                        sp.merge_partition(&runs, p, true, opts, &finish_cols)?
                                            .unwrap_or_default(),
                                    ),
                                }
                            }
                            drop(runs);
                            Grouped::Batches(batches)
                        }
                        _ => Grouped::Columns(match sets {
                            None => fin.finish()?,
                            Some(sets) => {
                                fin.roll_up(&bases, sets)?;
                                mem.resize(fin.bytes() as u64)?;
                                super::grouping::with_empty_sets(
                                    fin.finish()?,
                                    sets,
                                    &key_types,
                                    aggs,
                                )?
                            }
                        }),
                    }
                }
            };
            let out_schema = output_schema(post, &agg_types, &plan.names);
            match grouped {
                Grouped::Columns(cols) => vec![project(&finish_cols(cols)?, post, &out_schema)?],
                // Each partition's groups projected; sorted and cut
                // together by `sort_and_limit`.
                Grouped::Batches(b) if !b.is_empty() => b
                    .iter()
                    .map(|b| project(b, post, &out_schema))
                    .collect::<Result<Vec<_>>>()?,
                Grouped::Batches(_) => vec![project(
                    &RecordBatch::new_empty(agg_schema.clone()),
                    post,
                    &out_schema,
                )?],
            }
        }
    };
    // A stopped query handed out no more morsels: its result is partial.
    if let Some(e) = opts.stop.as_ref().and_then(|s| s.error()) {
        return Err(e);
    }
    let out = sort_and_limit(out, plan, opts)?;
    Ok((out, facts))
}

/// How many times (a millisecond apart) a worker whose emptied table
/// still does not fit waits for the others to write theirs out.
const SPILL_WAIT_TRIES: u32 = 1000;

/// A grouping's groups: its columns, or, when it spilled, its
/// partitions' batches (HAVING applied to each).
enum Grouped {
    Columns(Vec<ArrayRef>),
    Batches(Vec<RecordBatch>),
}

/// Most rows of a morsel of a grouping that may spill: a morsel's new
/// groups grow structures the table's count cannot foresee (see
/// `GroupTable::growth_for`), by some hundred bytes a row; under a small
/// memory limit, morsels of at most a thousandth of a worker's share of
/// it keep that within a tenth of the limit (never under 1,024 rows;
/// under a limit of gigabytes, no change). So do a join's rows: each
/// morsel of a pipelined join's probe side makes its joined rows at once.
fn spill_morsel_rows(plan: &Plan, opts: &super::QueryOptions, workers: usize) -> usize {
    let grouped = matches!(&plan.body, Body::Aggregate { keys, .. } if !keys.is_empty());
    let joined = matches!(plan.input.as_deref(), Some(super::plan::Input::Join(_)));
    match (&opts.memory, &opts.spill) {
        (Some(m), Some(_)) if grouped || joined => {
            let rows = m.limit() / (workers.max(1) as u64 * 1024);
            usize::try_from(rows).unwrap_or(usize::MAX).max(1024)
        }
        _ => usize::MAX,
    }
}

/// The types of a plan's visible columns as its expressions have them:
/// a bare NULL is NULL-typed here (a set operation takes the other
/// side's type for it), where [`result_schema`] shows it as TEXT.
pub fn result_types(plan: &Plan) -> Vec<A> {
    if plan.explain || plan.analyze {
        return vec![A::Utf8];
    }
    let types = &plan.table_types;
    let (exprs, input) = match &plan.body {
        Body::Project(exprs) => (exprs, types.clone()),
        Body::Aggregate {
            keys, aggs, post, ..
        } => {
            let mut agg_types: Vec<A> = keys.iter().map(|k| k.data_type(types)).collect();
            agg_types.extend(aggs.iter().map(|c| c.output_type()));
            (post, agg_types)
        }
    };
    exprs
        .iter()
        .take(plan.visible)
        .map(|e| match e.data_type(&input) {
            A::Null => A::Null,
            t => eval_type(&t),
        })
        .collect()
}

/// The columns of a plan's result (names and types), known before it runs.
pub fn result_schema(plan: &Plan) -> SchemaRef {
    if plan.explain || plan.analyze {
        return Arc::new(ArrowSchema::new(vec![Field::new("plan", A::Utf8, false)]));
    }
    // NULL-typed results (SELECT NULL) are shown as TEXT.
    let fields: Vec<Field> = result_types(plan)
        .into_iter()
        .zip(&plan.names)
        .map(|(t, n)| Field::new(n, if t == A::Null { A::Utf8 } else { t }, true))
        .collect();
    Arc::new(ArrowSchema::new(fields))
}

/// The result columns of a global aggregate without a filter whose every
/// aggregate is `count(*)`, `count(col)` (rows less NULLs) or `min`/`max`
/// of an integer, decimal, date, timestamp or boolean column: from the
/// exact statistics each segment keeps of its columns (row and NULL
/// counts, smallest and largest value), with no segment read. `None` when
/// the query is of another shape or a segment lacks the statistics.
fn from_statistics(plan: &Plan, segs: &[crate::store::SegmentMeta]) -> Option<Vec<ArrayRef>> {
    use arrow_array::{
        BooleanArray, Date32Array, Decimal128Array, Int32Array, Int64Array,
        TimestampMicrosecondArray,
    };
    let Body::Aggregate { keys, aggs, .. } = &plan.body else {
        return None;
    };
    if !keys.is_empty() || plan.filter.is_some() || plan.key_lookup.is_some() {
        return None;
    }
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(aggs.len());
    for call in aggs.iter() {
        let column = match &call.arg {
            None => None,
            Some(Expr::Column { index, .. }) => Some(*plan.scan_columns.get(*index)?),
            Some(_) => return None,
        };
        let stats = |seg: &crate::store::SegmentMeta| -> Option<crate::batch::ColumnStats> {
            seg.stats.get(column?).copied()
        };
        match (call.func, call.distinct) {
            (AggFunc::CountStar, _) => {
                let n: u64 = segs.iter().map(|s| s.rows).sum();
                cols.push(Arc::new(Int64Array::from(vec![n as i64])));
            }
            (AggFunc::Count, false) => {
                let mut n = 0u64;
                for seg in segs {
                    n += seg.rows.checked_sub(stats(seg)?.nulls)?;
                }
                cols.push(Arc::new(Int64Array::from(vec![n as i64])));
            }
            (AggFunc::Min | AggFunc::Max, _) => {
                let max = call.func == AggFunc::Max;
                let mut best: Option<i64> = None;
                for seg in segs {
                    let st = stats(seg)?;
                    let v = match st.range {
                        Some(StatRange::Int(lo, hi)) => {
                            if max {
                                hi
                            } else {
                                lo
                            }
                        }
                        // Every value NULL: nothing to take.
                        None if st.nulls == seg.rows => continue,
                        _ => return None,
                    };
                    best = Some(match best {
                        Some(b) if max => b.max(v),
                        Some(b) => b.min(v),
                        None => v,
                    });
                }
                let col: ArrayRef = match call.output_type() {
                    A::Int32 => Arc::new(Int32Array::from(vec![best.map(|v| v as i32)])),
                    A::Int64 => Arc::new(Int64Array::from(vec![best])),
                    A::Date32 => Arc::new(Date32Array::from(vec![best.map(|v| v as i32)])),
                    A::Boolean => Arc::new(BooleanArray::from(vec![best.map(|v| v != 0)])),
                    A::Decimal128(p, s) => Arc::new(
                        Decimal128Array::from(vec![best.map(|v| v as i128)])
                            .with_precision_and_scale(p, s)
                            .ok()?,
                    ),
                    A::Timestamp(arrow_schema::TimeUnit::Microsecond, tz) => {
                        Arc::new(TimestampMicrosecondArray::from(vec![best]).with_timezone_opt(tz))
                    }
                    A::Time64(arrow_schema::TimeUnit::Microsecond) => {
                        Arc::new(arrow_array::Time64MicrosecondArray::from(vec![best]))
                    }
                    _ => return None,
                };
                cols.push(col);
            }
            _ => return None,
        }
    }
    Some(cols)
}

/// A GROUP BY key as evaluated for each morsel.
enum KeyEval<'a> {
    Expr(&'a Expr),
    /// `CASE WHEN c1 THEN 'a' … ELSE 'z' END`, every value a TEXT literal
    /// (bands, labels): evaluated as codes into one dictionary of the
    /// labels, made once for the query, so that the group table maps codes
    /// to groups (as for a dictionary-encoded column) instead of hashing
    /// strings copied out for every row.
    Labels {
        whens: Vec<(&'a Expr, u16)>,
        otherwise: u16,
        labels: ArrayRef,
    },
}

impl<'a> KeyEval<'a> {
    fn new(e: &'a Expr) -> Self {
        let Expr::Case { whens, otherwise } = e else {
            return KeyEval::Expr(e);
        };
        let label = |e: &Expr| match e {
            Expr::Literal(a) if a.data_type() == &A::Utf8 && a.is_valid(0) => Some(
                arrow_array::cast::AsArray::as_string::<i32>(a)
                    .value(0)
                    .to_string(),
            ),
            _ => None,
        };
        let mut labels: Vec<String> = Vec::new();
        let mut code = |e: &Expr| -> Option<u16> {
            let l = label(e)?;
            let i = labels.iter().position(|x| *x == l).unwrap_or_else(|| {
                labels.push(l);
                labels.len() - 1
            });
            u16::try_from(i).ok()
        };
        let mut coded = Vec::with_capacity(whens.len());
        for (c, v) in whens {
            match code(v) {
                Some(k) => coded.push((c, k)),
                None => return KeyEval::Expr(e),
            }
        }
        let Some(other) = code(otherwise) else {
            return KeyEval::Expr(e);
        };
        KeyEval::Labels {
            whens: coded,
            otherwise: other,
            labels: Arc::new(arrow_array::StringArray::from(labels)),
        }
    }

    fn eval(&self, batch: &RecordBatch) -> Result<ArrayRef> {
        match self {
            KeyEval::Expr(e) => e.eval(batch)?.into_array(batch.num_rows()),
            KeyEval::Labels {
                whens,
                otherwise,
                labels,
            } => {
                let mut codes = vec![*otherwise; batch.num_rows()];
                for (c, k) in whens.iter().rev() {
                    for i in super::intexpr::condition(c, batch)?.set_indices() {
                        codes[i] = *k;
                    }
                }
                let keys = arrow_array::UInt16Array::from(codes);
                Ok(Arc::new(
                    arrow_array::DictionaryArray::try_new(keys, labels.clone())
                        .map_err(exec_err)?,
                ))
            }
        }
    }
}

/// Scanned columns that may stay dictionary-encoded: those read only as
/// bare GROUP BY keys (the group table maps their codes to groups).
fn dictionary_keys(plan: &Plan) -> Vec<bool> {
    // Grouping sets mix a key's codes with NULLs of its type: decoded.
    let Body::Aggregate {
        keys,
        aggs,
        sets: None,
        ..
    } = &plan.body
    else {
        return Vec::new();
    };
    let n = plan.table_types.len();
    let mut bare = vec![false; n];
    let mut other = vec![false; n];
    for k in keys {
        match k {
            Expr::Column { index, .. } if *index < n => bare[*index] = true,
            e => e.mark_columns(&mut other),
        }
    }
    for a in aggs.iter() {
        if let Some(e) = &a.arg {
            e.mark_columns(&mut other);
        }
    }
    // A column the filter only compares with TEXT literals (or LIKE, IS
    // NULL, IN) may stay encoded: those evaluate on the dictionary.
    let mut filtered = vec![false; n];
    if let Some(f) = &plan.filter {
        let mut used = vec![false; n];
        f.mark_columns(&mut used);
        for c in 0..n {
            if used[c] {
                if f.takes_dictionary(c) {
                    filtered[c] = true;
                } else {
                    other[c] = true;
                }
            }
        }
    }
    (0..n)
        .map(|c| (bare[c] || filtered[c]) && !other[c])
        .collect()
}

/// The columns that a projection's filter may read dictionary-encoded
/// (those it only compares with TEXT literals, see
/// [`Expr::takes_dictionary`]), and those that stay encoded after it
/// (the columns no projected expression reads): a column both filtered
/// and projected is decoded for the rows the filter kept only.
fn filter_dictionaries(plan: &Plan, exprs: &[Expr]) -> (Vec<bool>, Vec<bool>) {
    let n = plan.table_types.len();
    let Some(f) = &plan.filter else {
        return (Vec::new(), Vec::new());
    };
    let mut used = vec![false; n];
    f.mark_columns(&mut used);
    let mut projected = vec![false; n];
    for e in exprs {
        e.mark_columns(&mut projected);
    }
    (
        (0..n).map(|c| used[c] && f.takes_dictionary(c)).collect(),
        projected.iter().map(|p| !p).collect(),
    )
}

/// SUM/AVG over integer and decimal arithmetic skip Arrow arrays: their
/// integer programs, per aggregate (`None`: the general path).
fn fast_programs(aggs: &[super::agg::AggCall], types: &[A]) -> Vec<Option<IntProgram>> {
    aggs.iter()
        .map(|c| match (c.func, &c.arg) {
            (AggFunc::Sum | AggFunc::Avg, Some(e))
                if matches!(c.arg_type, A::Int32 | A::Int64 | A::Decimal128(..)) =>
            {
                IntProgram::compile(e, types).filter(|p| match c.arg_type {
                    A::Decimal128(_, s) => p.scale == s,
                    _ => p.scale == 0,
                })
            }
            _ => None,
        })
        .collect()
}

fn as_mask(a: &ArrayRef) -> Result<BooleanArray> {
    use arrow_array::cast::AsArray;
    let b = match a.data_type() {
        A::Boolean => a.as_boolean().clone(),
        A::Null => BooleanArray::from(vec![false; a.len()]),
        other => return Err(Error::Internal(format!("filter of type {other}"))),
    };
    Ok(if b.null_count() > 0 {
        arrow_select::filter::prep_null_mask_filter(&b)
    } else {
        b
    })
}

fn output_schema(exprs: &[Expr], input: &[A], names: &[String]) -> SchemaRef {
    let fields: Vec<Field> = exprs
        .iter()
        .zip(names)
        .map(|(e, n)| {
            let t = e.data_type(input);
            let t = if t == A::Null { A::Utf8 } else { eval_type(&t) };
            Field::new(n, t, true)
        })
        .collect();
    Arc::new(ArrowSchema::new(fields))
}

fn project(batch: &RecordBatch, exprs: &[Expr], schema: &SchemaRef) -> Result<RecordBatch> {
    let n = batch.num_rows();
    let mut cols = Vec::with_capacity(exprs.len());
    for (e, f) in exprs.iter().zip(schema.fields()) {
        let a = e.eval(batch)?.into_array(n)?;
        // NULL-typed results (SELECT NULL) are shown as TEXT.
        let a = if a.data_type() != f.data_type() {
            super::expr::cast(&a, f.data_type())?
        } else {
            a
        };
        cols.push(a);
    }
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(n)),
    )?)
}

/// Rows that an ORDER BY … LIMIT query keeps: `limit + offset`, when the
/// query has both an order and a limit.
fn top_k(plan: &Plan) -> Option<usize> {
    match (plan.order.is_empty(), plan.limit) {
        (false, Some(l)) => Some(l.saturating_add(plan.offset)),
        _ => None,
    }
}

/// `schema` with the position column of [`first_rows`] after its fields.
fn position_schema(schema: &SchemaRef) -> SchemaRef {
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new("#position", A::UInt64, false));
    Arc::new(ArrowSchema::new(fields))
}

/// `batch` with a last column of positions in the table: morsel `i`'s
/// row r is at `i << 32 | r`; `rows`: the morsel rows that `batch`'s rows
/// are (all of them, in order, when `None`).
fn with_positions(batch: &RecordBatch, i: usize, rows: Option<&[u64]>) -> Result<RecordBatch> {
    let n = batch.num_rows();
    let base = (i as u64) << 32;
    let mut cols = batch.columns().to_vec();
    cols.push(Arc::new(match rows {
        Some(rows) => arrow_array::UInt64Array::from_iter_values(rows.iter().map(|r| base | r)),
        None => arrow_array::UInt64Array::from_iter_values((0..n as u64).map(|r| base | r)),
    }));
    Ok(RecordBatch::try_new_with_options(
        position_schema(&batch.schema()),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(n)),
    )?)
}

/// The first `k` rows of `batch` (positions last, see [`with_positions`])
/// in the plan's order, ties broken by position, so that the answer is
/// the one a stable sort of all rows would give, whatever the morsels.
fn top_rows(batch: &RecordBatch, plan: &Plan, k: usize) -> Result<RecordBatch> {
    let n = batch.num_rows();
    if n <= 1 || k == 0 {
        return Ok(batch.slice(0, k.min(n)));
    }
    let mut cols = sort_columns(batch, plan)?;
    cols.push(SortColumn {
        values: batch.column(batch.num_columns() - 1).clone(),
        options: None,
    });
    let idx = lexsort_to_indices(&cols, Some(k)).map_err(exec_err)?;
    arrow_select::take::take_record_batch(batch, &idx).map_err(exec_err)
}

/// The rows of `cand` that could still enter `best`, a worker's first `k`
/// rows so far: all of them until `best` is full, then those whose first
/// sort key is NULL or not worse than the first key of `best`'s last row.
/// Most rows of a large scan fail this one comparison and are never
/// sorted.
fn could_enter(
    cand: &RecordBatch,
    best: &RecordBatch,
    plan: &Plan,
    k: usize,
) -> Result<RecordBatch> {
    let Some(first) = plan.order.first() else {
        return Ok(cand.clone());
    };
    if best.num_rows() < k || k == 0 {
        return Ok(cand.clone());
    }
    let last = best.column(first.column).slice(k - 1, 1);
    match enter_mask(cand.column(first.column), &last, first.descending)? {
        Some(keep) => Ok(arrow_select::filter::filter_record_batch(cand, &keep).map_err(exec_err)?),
        None => Ok(cand.clone()),
    }
}

/// [`could_enter`] before the projection, on the stored column when the
/// first sort key is one as it is (a DECIMAL's threshold narrowed to the
/// stored 64 bits): the rows that fail are never projected. `None` when
/// the key is an expression, `best` is not full, or the threshold does not
/// fit the stored type, or a projected expression could fail.
fn could_enter_stored(
    input: &RecordBatch,
    exprs: &[Expr],
    best: &RecordBatch,
    plan: &Plan,
    k: usize,
) -> Result<Option<BooleanArray>> {
    let Some(first) = plan.order.first() else {
        return Ok(None);
    };
    let Some(Expr::Column { index, .. }) = exprs.get(first.column) else {
        return Ok(None);
    };
    // Only where projecting a row cannot fail: whether a query fails must
    // not depend on which rows a worker had seen when it met a bad one.
    let plain = exprs
        .iter()
        .all(|e| matches!(e, Expr::Column { .. } | Expr::Literal(_)));
    if !plain || best.num_rows() < k || k == 0 {
        return Ok(None);
    }
    let raw = input.column(*index);
    let last = best.column(first.column).slice(k - 1, 1);
    let Some(last) = super::expr::narrow_to_stored(&last, raw.data_type())? else {
        return Ok(None);
    };
    enter_mask(raw, &last, first.descending)
}

/// The threshold of a worker's full first `k` rows `best` (the k-th
/// row's first sort key) as the stored integer of its column (INT,
/// BIGINT, DECIMAL, DATE, TIMESTAMP), where batches may be skipped by it:
/// the first key is a bare column, and neither the filter nor the
/// projection can fail on a row (a skipped batch's rows are never
/// evaluated, and whether a query fails must not depend on the threshold
/// a worker had reached).
fn stored_threshold(exprs: &[Expr], best: &RecordBatch, plan: &Plan, k: usize) -> Option<i128> {
    let first = plan.order.first()?;
    let Some(Expr::Column { index, .. }) = exprs.get(first.column) else {
        return None;
    };
    let plain = exprs
        .iter()
        .all(|e| matches!(e, Expr::Column { .. } | Expr::Literal(_)));
    if !plain
        || k == 0
        || best.num_rows() < k
        || !plan.filter.as_ref().is_none_or(Expr::cannot_fail)
    {
        return None;
    }
    let stored = plan.table_types.get(*index)?;
    let last = best.column(first.column).slice(k - 1, 1);
    let t = super::expr::narrow_to_stored(&last, stored).ok()??;
    stored_int(&t)
}

/// The input column of the first sort key, when it is a bare column.
fn first_key_input(exprs: &[Expr], plan: &Plan) -> Option<usize> {
    match exprs.get(plan.order.first()?.column)? {
        Expr::Column { index, .. } => Some(*index),
        _ => None,
    }
}

/// The better of two thresholds in the first key's order (the larger for
/// DESC).
fn better_threshold(a: Option<i128>, b: Option<i128>, plan: &Plan) -> Option<i128> {
    let desc = plan.order.first().is_some_and(|o| o.descending);
    match (a, b) {
        (Some(a), Some(b)) => Some(if desc { a.max(b) } else { a.min(b) }),
        (a, b) => a.or(b),
    }
}

/// Whether every row of a batch with zone map `stats` is worse than the
/// threshold `t` (see [`stored_threshold`]) in the first key's order, so
/// that none can enter any worker's first rows: the batch has no NULL in
/// that column and its range lies beyond `t` (a row equal to it may
/// still enter by its position).
fn batch_beyond(
    stats: Option<&[crate::batch::ColumnStats]>,
    exprs: &[Expr],
    plan: &Plan,
    t: i128,
) -> bool {
    let (Some(stats), Some(first)) = (stats, plan.order.first()) else {
        return false;
    };
    let Some(Expr::Column { index, .. }) = exprs.get(first.column) else {
        return false;
    };
    let Some(s) = plan.scan_columns.get(*index).and_then(|&c| stats.get(c)) else {
        return false;
    };
    let (Some(StatRange::Int(lo, hi)), 0) = (s.range, s.nulls) else {
        return false;
    };
    range_beyond(lo, hi, t, first.descending)
}

/// Whether every value in `lo..=hi` is strictly worse than `t`. A value
/// equal to `t` is not: it may still enter by its position (another
/// worker's k-th row with key `t` may come later in the table).
fn range_beyond(lo: i64, hi: i64, t: i128, descending: bool) -> bool {
    if descending {
        (hi as i128) < t
    } else {
        (lo as i128) > t
    }
}

/// The one value of a stored integer-like array (what a zone map's `Int`
/// range holds: integers, scaled decimals, days, microseconds).
fn stored_int(a: &ArrayRef) -> Option<i128> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    if a.len() != 1 || a.is_null(0) {
        return None;
    }
    Some(match a.data_type() {
        A::Int32 => a.as_primitive::<Int32Type>().value(0) as i128,
        A::Int64 => a.as_primitive::<Int64Type>().value(0) as i128,
        A::Date32 => a.as_primitive::<Date32Type>().value(0) as i128,
        A::Decimal64(..) => a.as_primitive::<Decimal64Type>().value(0) as i128,
        A::Timestamp(arrow_schema::TimeUnit::Microsecond, _) => {
            a.as_primitive::<TimestampMicrosecondType>().value(0) as i128
        }
        A::Time64(arrow_schema::TimeUnit::Microsecond) => {
            a.as_primitive::<Time64MicrosecondType>().value(0) as i128
        }
        _ => return None,
    })
}

/// Rows of `keys` whose value is NULL or not worse than `last` (one value
/// of the same type) in the order; `None` when `last` is NULL.
fn enter_mask(keys: &ArrayRef, last: &ArrayRef, descending: bool) -> Result<Option<BooleanArray>> {
    let last = super::expr::ordering_values(last)?;
    if last.is_null(0) {
        return Ok(None);
    }
    let keys = super::expr::ordering_values(keys)?;
    let threshold = arrow_array::Scalar::new(last);
    let m = if descending {
        arrow_ord::cmp::gt_eq(&keys, &threshold)
    } else {
        arrow_ord::cmp::lt_eq(&keys, &threshold)
    }
    .map_err(exec_err)?;
    // NULL keys are kept: whether they come first is the sort's business.
    let keep = match m.nulls() {
        Some(n) => m.values() | &!n.inner(),
        None => m.values().clone(),
    };
    Ok(Some(BooleanArray::new(keep, None)))
}

/// The plan's ORDER BY keys over `batch`.
fn sort_columns(batch: &RecordBatch, plan: &Plan) -> Result<Vec<SortColumn>> {
    plan.order
        .iter()
        .map(|k| {
            Ok(SortColumn {
                // NaN sorts after every number, whatever its sign bit; an
                // INTERVAL by PostgreSQL's order.
                values: super::expr::ordering_values(batch.column(k.column))?,
                options: Some(SortOptions {
                    descending: k.descending,
                    nulls_first: k.nulls_first,
                }),
            })
        })
        .collect()
}

fn sort_and_limit(
    batches: Vec<RecordBatch>,
    plan: &Plan,
    opts: &super::QueryOptions,
) -> Result<Vec<RecordBatch>> {
    let n: usize = batches.iter().map(|b| b.num_rows()).sum();
    let needs_sort = !plan.order.is_empty() && n > 1;
    // Rows that are not sorted are answered in one batch.
    let batches = match (needs_sort, batches.len()) {
        (false, 2..) => vec![
            arrow_select::concat::concat_batches(&batches[0].schema(), &batches)
                .map_err(exec_err)?,
        ],
        _ => batches,
    };
    // Cut by LIMIT and OFFSET first when not sorted: only the rows kept
    // are held (copied out of the rest).
    if !needs_sort && (plan.limit.is_some() || plan.offset > 0) {
        let Some(batch) = batches.into_iter().next() else {
            return Err(Error::Internal("a result without batches".into()));
        };
        let cut = limit_rows(batch, plan)?;
        let cut = arrow_select::concat::concat_batches(&cut.schema(), [&cut]).map_err(exec_err)?;
        let from_item = opts
            .result_spill
            .as_deref()
            .filter(|r| r.is_for(plan) && opts.spill.is_some());
        return match (
            opts.reserve("query result", super::memory::batch_bytes(&cut)),
            from_item,
        ) {
            (Ok(_), _) => Ok(vec![cut]),
            (Err(Error::MemoryLimit { .. }), Some(d)) => result_to_disk(d, vec![cut], opts),
            (Err(e), _) => Err(e),
        };
    }
    // The rows to answer with, and while they are sorted, their sorted
    // copy and its row numbers.
    let rows = super::memory::batches_bytes(&batches);
    let fetch = top_k(plan);
    let sorter = match needs_sort {
        true => super::sort::ExternalSort::new(&plan.order, opts, fetch),
        false => None,
    };
    // A join's FROM item whose rows, not sorted nor cut, do not fit:
    // to its disk (see `join::ResultSpill`), in frames.
    let to_disk = opts.result_spill.as_deref().filter(|r| {
        r.is_for(plan)
            && !needs_sort
            && plan.limit.is_none()
            && plan.offset == 0
            && opts.spill.is_some()
    });
    let whole = match (opts.reserve("query result", rows), &sorter, to_disk) {
        (Ok(m), _, _) => Some(m),
        (Err(Error::MemoryLimit { .. }), Some(_), _) => None,
        (Err(Error::MemoryLimit { .. }), None, Some(d)) => {
            let keep: Vec<usize> = (0..plan.visible).collect();
            let batches = batches
                .into_iter()
                .map(|b| b.project(&keep).map_err(exec_err))
                .collect::<Result<Vec<_>>>()?;
            return result_to_disk(d, batches, opts);
        }
        (Err(e), _, _) => return Err(e),
    };
    let sort = match needs_sort && whole.is_some() && !opts.sort_rows_on_disk {
        false => None,
        true => match (
            opts.reserve(super::sort::OPERATOR, rows + 4 * n as u64),
            &sorter,
        ) {
            (Ok(m), _) => Some(m),
            (Err(Error::MemoryLimit { .. }), Some(_)) => None,
            (Err(e), _) => return Err(e),
        },
    };
    let sorter = sorter.filter(|_| sort.is_none());
    if let Some(s) = &sorter {
        // No room for a sorted copy: sorted a piece at a time to disk,
        // then merged.
        let limit = opts.memory.as_ref().map_or(u64::MAX, |m| m.limit());
        let keep: Vec<usize> = (0..plan.visible).collect();
        let schema = match batches.first() {
            Some(b) => b.schema().project(&keep)?,
            None => return Err(Error::Internal("a sort without rows".into())),
        };
        let mut p = 0;
        for batch in batches {
            let n = batch.num_rows();
            let bytes = super::memory::batch_bytes(&batch);
            let piece = ((n as u128 * (limit / 8).max(1) as u128) / bytes.max(1) as u128)
                .clamp(1, n.max(1) as u128) as usize;
            for start in (0..n).step_by(piece) {
                let len = piece.min(n - start);
                s.spill(&[with_positions(&batch.slice(start, len), p, None)?])?;
                p += 1;
            }
        }
        drop(whole);
        return sorted_result(s, &[], false, plan, opts, schema);
    }
    let _whole = whole;
    let mut batch = match batches.len() {
        1 => batches.into_iter().next().expect("one batch"),
        _ => {
            let schema = batches
                .first()
                .map(|b| b.schema())
                .ok_or_else(|| Error::Internal("a result without batches".into()))?;
            arrow_select::concat::concat_batches(&schema, &batches).map_err(exec_err)?
        }
    };
    if needs_sort {
        let cols = sort_columns(&batch, plan)?;
        let idx = lexsort_to_indices(&cols, fetch).map_err(exec_err)?;
        batch = arrow_select::take::take_record_batch(&batch, &idx).map_err(exec_err)?;
        drop(sort);
    }
    Ok(vec![limit_rows(batch, plan)?])
}

/// A join's FROM item's rows (visible columns only) written to its disk
/// in frames of a sixteenth of the limit; its rows in memory: none.
fn result_to_disk(
    d: &super::join::ResultSpill,
    batches: Vec<RecordBatch>,
    opts: &super::QueryOptions,
) -> Result<Vec<RecordBatch>> {
    let limit = opts.memory.as_ref().map_or(u64::MAX, |m| m.limit());
    let mut frame = 0;
    let mut schema = None;
    for batch in batches {
        schema.get_or_insert_with(|| batch.schema());
        let n = batch.num_rows();
        let bytes = super::memory::batch_bytes(&batch);
        let per = ((n as u128 * (limit / 16).max(1) as u128) / bytes.max(1) as u128)
            .clamp(1, n.max(1) as u128) as usize;
        for start in (0..n).step_by(per) {
            d.write(opts, frame, batch.slice(start, per.min(n - start)))?;
            frame += 1;
        }
    }
    let schema = schema.ok_or_else(|| Error::Internal("a result without batches".into()))?;
    Ok(vec![RecordBatch::new_empty(schema)])
}

/// The rows of a sort that spilled: its runs and `rest` merged, OFFSET
/// and LIMIT applied, the hidden columns dropped. A join's FROM item
/// writes what passes half the limit to disk (see
/// `join::ResultSpill`); any other answer is held, counted.
fn sorted_result(
    s: &super::sort::ExternalSort,
    rest: &[RecordBatch],
    rest_sorted: bool,
    plan: &Plan,
    opts: &super::QueryOptions,
    schema: ArrowSchema,
) -> Result<Vec<RecordBatch>> {
    let keep: Vec<usize> = (0..plan.visible).collect();
    let to_disk = opts
        .result_spill
        .as_deref()
        .filter(|r| r.is_for(plan) && opts.spill.is_some());
    let mut held = opts.reserve("query result", 0)?;
    let mut out = Vec::new();
    let mut frames = 0usize;
    let mut emit = |b: RecordBatch| -> Result<()> {
        let b = b.project(&keep).map_err(exec_err)?;
        let bytes = super::memory::batch_bytes(&b);
        if let Some(d) = to_disk {
            let past_half = opts.memory.as_ref().is_some_and(|m| !m.keeps_rows(bytes));
            if d.always || past_half || d.holds_answer() {
                d.write(opts, frames, b)?;
                frames += 1;
                return Ok(());
            }
        }
        held.grow(bytes)?;
        out.push(b);
        Ok(())
    };
    let merged = match rest_sorted {
        true => s.merge_sorted(rest, plan.offset, plan.limit, &mut emit),
        false => s.merge(rest, plan.offset, plan.limit, &mut emit),
    };
    match merged {
        // The merge's next frame found no room beside the answer held:
        // the answer is what does not fit.
        Err(Error::MemoryLimit {
            operator: super::sort::OPERATOR,
            wanted,
            used,
            limit,
            others,
        }) if held.bytes() > 0 => {
            return Err(Error::MemoryLimit {
                operator: "query result",
                wanted,
                used,
                limit,
                others,
            });
        }
        r => r?,
    }
    if out.is_empty() {
        out.push(RecordBatch::new_empty(Arc::new(schema)));
    }
    Ok(out)
}

/// OFFSET and LIMIT over rows already in order; drops the hidden
/// sort-key columns.
fn limit_rows(batch: RecordBatch, plan: &Plan) -> Result<RecordBatch> {
    let start = plan.offset.min(batch.num_rows());
    let len = plan
        .limit
        .unwrap_or(usize::MAX)
        .min(batch.num_rows() - start);
    let batch = batch.slice(start, len);
    // Drop the hidden sort-key columns.
    let keep: Vec<usize> = (0..plan.visible).collect();
    Ok(batch.project(&keep)?)
}

/// The evaluated inputs of one morsel for the aggregates: key columns,
/// general-path arguments, and NULL rows and width of the fast-path ones
/// (whose values are left in the buffers).
type AggEvaluated = (
    Vec<ArrayRef>,
    Vec<Option<ArrayRef>>,
    Vec<Option<arrow_buffer::NullBuffer>>,
    Vec<bool>,
);

/// Evaluates group keys and aggregate arguments over a batch.
struct AggEval<'a> {
    keys: &'a [KeyEval<'a>],
    aggs: &'a [super::agg::AggCall],
    fast: &'a [Option<IntProgram>],
    bufs: &'a mut Vec<Vec<i128>>,
    bufs64: &'a mut Vec<Vec<i64>>,
    pool: &'a mut Vec<Vec<i128>>,
    pool64: &'a mut Vec<Vec<i64>>,
}

impl AggEval<'_> {
    fn eval(&mut self, batch: &RecordBatch) -> Result<AggEvaluated> {
        let n = batch.num_rows();
        let mut k = Vec::with_capacity(self.keys.len());
        for key in self.keys {
            k.push(key.eval(batch)?);
        }
        let mut general = Vec::with_capacity(self.aggs.len());
        let mut nulls = Vec::with_capacity(self.aggs.len());
        let mut wide = vec![false; self.aggs.len()];
        for (j, (call, p)) in self.aggs.iter().zip(self.fast).enumerate() {
            match (p, &call.arg) {
                // Fast path: 64-bit first, 128-bit if a value overflowed.
                (Some(p), _) => {
                    if !p.eval_i64(batch, &mut self.bufs64[j], self.pool64)? {
                        p.eval_into(batch, &mut self.bufs[j], self.pool)?;
                        wide[j] = true;
                    }
                    nulls.push(p.nulls(batch)?);
                    general.push(None);
                }
                (None, Some(e)) => {
                    nulls.push(None);
                    general.push(Some(e.eval(batch)?.into_array(n)?));
                }
                (None, None) => {
                    nulls.push(None);
                    general.push(None);
                }
            }
        }
        Ok((k, general, nulls, wide))
    }
}

#[cfg(test)]
mod tests {
    use super::range_beyond;

    #[test]
    fn a_batch_is_skipped_only_when_every_value_is_strictly_worse() {
        // Ascending: worse is larger.
        assert!(range_beyond(11, 20, 10, false));
        assert!(!range_beyond(10, 20, 10, false), "a tie may still enter");
        assert!(!range_beyond(5, 20, 10, false));
        // Descending: worse is smaller.
        assert!(range_beyond(0, 9, 10, true));
        assert!(!range_beyond(0, 10, 10, true), "a tie may still enter");
        assert!(!range_beyond(0, 20, 10, true));
        // Thresholds beyond 64 bits (a DECIMAL's) compare exactly.
        assert!(!range_beyond(
            i64::MIN,
            i64::MAX,
            i64::MAX as i128 + 1,
            false
        ));
        assert!(range_beyond(i64::MIN, i64::MAX, i64::MAX as i128 + 1, true));
    }
}
