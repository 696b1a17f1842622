//! Running a [`JoinGroup`]: the FROM items' rows, joined in an order
//! chosen from their real sizes, on every core.
//!
//! For: materialising each leaf (a parallel scan with its own conditions
//! pushed in, or a subquery), then a greedy join order — the largest
//! leaf is the probe side, and the leaf joined next is the one connected
//! by an equality whose join is estimated to leave the fewest rows (its
//! rows kept by its conditions ÷ all its rows × rows per distinct key);
//! outer joins when the items their ON reads are joined; a cross product
//! only for an item no condition connects — and probing the hash tables
//! ([`super::hash_join`]) morsel by morsel on all workers. Conditions
//! over several items are applied as soon as their items are joined.
//! Not for: planning the group ([`super::plan::from`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType as A, Field, Schema, SchemaRef};

use super::QueryOptions;
use super::exec::ScanFacts;
use super::expr::{BinOp, Expr, exec_err};
use super::hash_join::{HashTable, Marks, eval_keys, joined_schema};
use super::memory::Reservation;
use super::plan::common_type;
use super::plan::from::{Conjunct, JoinGroup, JoinKind};
use crate::error::{Error, Result};
use crate::exec::worker_count;
use crate::store::Database;

mod disk;
mod grace;
mod pipeline;
mod runtime_filter;

pub use disk::ResultSpill;
use disk::Sink;
pub(crate) use disk::{Piece, rows_of};

pub use pipeline::Pipeline;

/// A join group's rows: made whole (`batches`, then `later`: those
/// written to disk), or the last join's probe side (`batches`, `later`)
/// with the join that `pipeline` applies to each of its morsels.
pub struct Joined {
    pub batches: Vec<RecordBatch>,
    pub later: Vec<super::scan::Later>,
    pub pipeline: Option<Pipeline>,
}

/// Rows a probe task takes at most.
const PROBE_ROWS: usize = 64 << 10;

/// Rows a task of a join step takes at most: [`PROBE_ROWS`], fewer under
/// a small memory limit (a thousandth of a worker's share of it, never
/// under 1,024), as the scans' morsels (each task's joined rows are made
/// at once).
fn probe_rows(opts: &QueryOptions, workers: usize) -> usize {
    let share = opts
        .memory
        .as_ref()
        .map_or(u64::MAX, |m| m.limit() / (workers.max(1) as u64 * 1024));
    usize::try_from(share)
        .unwrap_or(usize::MAX)
        .clamp(1024, PROBE_ROWS)
}
/// Pairs a cross product's task makes at most.
const CROSS_PAIRS: usize = 1 << 20;

/// Joined rows so far: batches whose columns are the global columns
/// `cols`, covering the FROM items `items` (bit per leaf). Some of its
/// rows may be on disk (`disk`, see [`disk`]); `batches` then still has
/// a batch, empty if need be, that tells the rows' schema.
struct Rel {
    batches: Vec<RecordBatch>,
    disk: Vec<Piece>,
    cols: Vec<usize>,
    items: u64,
    rows: usize,
    /// Its rows' bytes, counted in the query's memory (see [`Rel::counted`]).
    mem: Option<Reservation>,
}

impl Rel {
    /// `e` (over global columns) over this relation's columns.
    fn local(&self, e: &Expr) -> Result<Expr> {
        let mut e = e.clone();
        let mut missing = None;
        e.remap_columns(&mut |g| match self.cols.iter().position(|&c| c == g) {
            Some(p) => p,
            None => {
                missing = Some(g);
                0
            }
        });
        match missing {
            Some(g) => Err(Error::Internal(format!(
                "join: column {g} is not among the joined columns"
            ))),
            None => Ok(e),
        }
    }

    /// The columns of `self`'s rows followed by `other`'s, and both's
    /// items: the layout of their joined rows (no rows yet).
    fn beside(&self, other: &Rel) -> Rel {
        let mut cols = self.cols.clone();
        cols.extend(&other.cols);
        Rel {
            batches: Vec::new(),
            disk: Vec::new(),
            cols,
            items: self.items | other.items,
            rows: 0,
            mem: None,
        }
    }

    /// This relation with its rows' bytes counted in the query's memory
    /// (they are given back when it is dropped); past the limit, its
    /// rows written to disk instead (see [`disk`]).
    fn counted(mut self, opts: &QueryOptions) -> Result<Rel> {
        let bytes = super::memory::batches_bytes(&self.batches);
        let spill = opts.spill.is_some();
        let in_memory = self.batches.iter().any(|b| b.num_rows() > 0);
        // Past half the limit (or with the test knob) rows go to disk,
        // leaving room for the joins that read them (`Memory::keeps_rows`).
        let past_half = opts.memory.as_ref().is_some_and(|m| !m.keeps_rows(bytes));
        if spill && in_memory && (opts.join_rows_on_disk || past_half) {
            return self.to_disk(opts);
        }
        let r = match &mut self.mem {
            Some(m) => m.resize(bytes),
            None => opts.reserve(disk::OPERATOR, bytes).map(|m| {
                self.mem = Some(m);
            }),
        };
        match r {
            Ok(()) => Ok(self),
            Err(Error::MemoryLimit { .. }) if spill => self.to_disk(opts),
            Err(e) => Err(e),
        }
    }

    /// This relation with its rows in memory written to disk.
    fn to_disk(self, opts: &QueryOptions) -> Result<Rel> {
        let schema = self.schema()?;
        let sink = Sink::new(opts)?;
        for (n, b) in self.batches.into_iter().enumerate() {
            sink.put(n as u64, b)?;
        }
        // (What `self.mem` counted for them is given back with it.)
        let mut made = sink.finish()?;
        made.disk.extend(self.disk);
        Ok(Rel::made(made, Some(schema), self.cols, self.items))
    }

    /// Bytes its rows take (those on disk: their frames').
    fn bytes(&self) -> u64 {
        super::memory::batches_bytes(&self.batches)
            + self.disk.iter().map(Piece::bytes).sum::<u64>()
    }

    /// The schema of its rows.
    fn schema(&self) -> Result<SchemaRef> {
        self.batches
            .first()
            .map(|b| b.schema())
            .ok_or_else(|| Error::Internal("join: a side without a schema".into()))
    }

    /// Its rows as pieces of at most `rows` rows (in memory; a frame on
    /// disk is one piece), in order.
    fn pieces(&self, rows: usize) -> Vec<Piece> {
        let mut out: Vec<Piece> = slices(&self.batches, rows)
            .into_iter()
            .map(Piece::Mem)
            .collect();
        out.extend(self.disk.iter().cloned());
        out
    }

    /// The relation a [`Sink`] made (of rows of `schema` when none was
    /// put).
    fn made(made: disk::Made, schema: Option<SchemaRef>, cols: Vec<usize>, items: u64) -> Rel {
        let mut batches = made.batches;
        if batches.is_empty()
            && let Some(s) = made.schema.or(schema)
        {
            batches.push(RecordBatch::new_empty(s));
        }
        let rows = batches.iter().map(|b| b.num_rows()).sum::<usize>()
            + made.disk.iter().map(Piece::rows).sum::<usize>();
        Rel {
            batches,
            disk: made.disk,
            cols,
            items,
            rows,
            mem: Some(made.mem),
        }
    }

    /// Where each of the global columns `cols` is among this relation's.
    fn positions(&self, cols: &[usize]) -> Result<Vec<usize>> {
        cols.iter()
            .map(|c| {
                self.cols
                    .iter()
                    .position(|x| x == c)
                    .ok_or_else(|| Error::Internal(format!("join: output column {c} missing")))
            })
            .collect()
    }

    /// Each of `exprs` (over global columns) over this relation's columns.
    fn locals<'e>(&self, exprs: impl IntoIterator<Item = &'e Expr>) -> Result<Vec<Expr>> {
        exprs.into_iter().map(|e| self.local(e)).collect()
    }

    /// This relation's rows in a hash table by `keys` (over global
    /// columns), compared as `types`.
    fn hashed<'e>(
        &self,
        keys: impl IntoIterator<Item = &'e Expr>,
        types: Vec<A>,
        g: &JoinGroup,
        opts: &QueryOptions,
    ) -> Result<HashTable> {
        recorded(
            opts,
            || format!("Hash build on {}", label(g, self.items)),
            self.rows,
            || self.hash_rows(keys, types, opts),
            |t| t.rows(),
        )
    }

    fn hash_rows<'e>(
        &self,
        keys: impl IntoIterator<Item = &'e Expr>,
        types: Vec<A>,
        opts: &QueryOptions,
    ) -> Result<HashTable> {
        // Reserved before it is built (the rows copied into one batch
        // and the index), then set to what it holds.
        let mut mem = opts.reserve(
            "hash join build",
            HashTable::estimate(self.rows, self.bytes()),
        )?;
        let batch = self.one_batch()?;
        let arrays = eval_keys(&self.locals(keys)?, &batch, Some(&types))?;
        let mut t = HashTable::build(batch, &arrays, types, worker_count(opts.threads))?;
        mem.resize(t.bytes() as u64)?;
        t.mem = Some(mem);
        Ok(t)
    }

    /// A relation of `parts` (those with rows; one empty batch of
    /// `schema` when none has any).
    fn of(parts: Vec<RecordBatch>, schema: Option<SchemaRef>, cols: Vec<usize>, items: u64) -> Rel {
        let mut batches: Vec<RecordBatch> =
            parts.into_iter().filter(|b| b.num_rows() > 0).collect();
        if batches.is_empty()
            && let Some(s) = schema
        {
            batches.push(RecordBatch::new_empty(s));
        }
        let rows = batches.iter().map(|b| b.num_rows()).sum();
        Rel {
            batches,
            disk: Vec::new(),
            cols,
            items,
            rows,
            mem: None,
        }
    }

    /// Its rows in one batch (those on disk read back).
    fn one_batch(&self) -> Result<RecordBatch> {
        let schema = self.schema()?;
        if self.disk.is_empty() {
            return arrow_select::concat::concat_batches(&schema, &self.batches).map_err(exec_err);
        }
        let mut all = self.batches.clone();
        for p in &self.disk {
            all.push(p.load()?);
        }
        arrow_select::concat::concat_batches(&schema, &all).map_err(exec_err)
    }
}

/// Rows of an item that its own conditions did not cut (a dimension such
/// as TPC-H's nations) that is joined into its one neighbour first.
const SMALL_ITEM_ROWS: usize = 1024;

/// A batch with every field nullable and named by position (batches of
/// one side then concatenate whatever they came from).
fn plain(b: RecordBatch) -> Result<RecordBatch> {
    let fields: Vec<Field> = b
        .schema()
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| Field::new(format!("c{i}"), f.data_type().clone(), true))
        .collect();
    let n = b.num_rows();
    Ok(RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        b.columns().to_vec(),
        &RecordBatchOptions::new().with_row_count(Some(n)),
    )?)
}

fn and_all(list: Vec<Expr>) -> Option<Expr> {
    super::optimize::join(list, BinOp::And)
}

/// Runs `f` over `tasks` on up to `workers` threads; the results in task
/// order. The first error stops the others' next tasks.
fn parallel<T: Send, R: Send>(
    tasks: Vec<T>,
    workers: usize,
    opts: &QueryOptions,
    f: impl Fn(T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let n = tasks.len();
    let slots: Vec<Mutex<Option<T>>> = tasks.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let out: Mutex<Vec<(usize, Result<R>)>> = Mutex::new(Vec::with_capacity(n));
    let next = AtomicUsize::new(0);
    let work = || {
        loop {
            if opts.stop.as_ref().is_some_and(|s| s.is_set()) {
                break;
            }
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                break;
            }
            let Some(t) = slots[i].lock().ok().and_then(|mut s| s.take()) else {
                break;
            };
            let r = f(t);
            let failed = r.is_err();
            if let Ok(mut o) = out.lock() {
                o.push((i, r));
            }
            if failed {
                next.store(usize::MAX / 2, Ordering::Relaxed);
            }
        }
    };
    match workers.min(n) {
        0 | 1 => work(),
        w => std::thread::scope(|s| {
            for _ in 0..w {
                s.spawn(work);
            }
        }),
    }
    if let Some(e) = opts.stop.as_ref().and_then(|s| s.error()) {
        return Err(e);
    }
    let mut out = out
        .into_inner()
        .map_err(|_| Error::Internal("join worker panicked".into()))?;
    if out.len() != n {
        // A task failed and the rest were not run: report the failure.
        out.sort_by_key(|o| o.0);
        for (_, r) in out {
            r?;
        }
        return Err(Error::Internal("join tasks left undone".into()));
    }
    out.sort_by_key(|o| o.0);
    out.into_iter().map(|(_, r)| r).collect()
}

/// Slices of a relation's batches of at most `rows` rows each.
fn slices(batches: &[RecordBatch], rows: usize) -> Vec<RecordBatch> {
    let mut out = Vec::new();
    for b in batches {
        let mut off = 0;
        while off < b.num_rows() {
            let len = rows.min(b.num_rows() - off);
            out.push(b.slice(off, len));
            off += len;
        }
    }
    out
}

/// Runs `f` over `rel`'s rows, pieces of at most `rows` rows (each read
/// back if it is on disk), on up to `workers` threads; what it makes goes
/// to a [`Sink`], in the pieces' order.
fn each_piece(
    rel: &Rel,
    rows: usize,
    workers: usize,
    opts: &QueryOptions,
    f: impl Fn(&RecordBatch) -> Result<RecordBatch> + Sync,
) -> Result<disk::Made> {
    let sink = Sink::new(opts)?;
    let tasks: Vec<(u64, Piece)> = (0..).zip(rel.pieces(rows)).collect();
    parallel(tasks, workers, opts, |(n, piece)| {
        let b = piece.load()?;
        sink.put(n, f(&b)?)
    })?;
    sink.finish()
}

/// The rows of `rel` where `cond` (over global columns) holds.
fn filter(
    rel: Rel,
    cond: &Expr,
    g: &JoinGroup,
    workers: usize,
    opts: &QueryOptions,
) -> Result<Rel> {
    let (items, rows) = (rel.items, rel.rows);
    recorded(
        opts,
        || format!("Filter on {}", label(g, items)),
        rows,
        || filter_rows(rel, cond, workers, opts),
        |r| r.rows,
    )
}

fn filter_rows(rel: Rel, cond: &Expr, workers: usize, opts: &QueryOptions) -> Result<Rel> {
    let local = rel.local(cond)?;
    let schema = rel.batches.first().map(|b| b.schema());
    let made = each_piece(&rel, probe_rows(opts, workers), workers, opts, |b| {
        let mask = local.eval(b)?.into_array(b.num_rows())?;
        let mask = super::hash_join::truth(&mask)?;
        arrow_select::filter::filter_record_batch(b, &mask).map_err(exec_err)
    })?;
    Ok(Rel::made(made, schema, rel.cols, rel.items))
}

/// The keys of joining `probe` (the items `have`) with leaf `r`: per
/// usable equality, the probe side's and the build side's expressions
/// and the conjunct's number.
fn keys_for(conjuncts: &[(Conjunct, bool)], have: u64, right: u64) -> Vec<(Expr, Expr, usize)> {
    let mut out = Vec::new();
    for (i, (c, done)) in conjuncts.iter().enumerate() {
        if *done {
            continue;
        }
        if let Some((l, lm, rt, rm)) = &c.equi {
            if *lm & !have == 0 && *rm & !right == 0 {
                out.push((l.clone(), rt.clone(), i));
            } else if *rm & !have == 0 && *lm & !right == 0 {
                out.push((rt.clone(), l.clone(), i));
            }
        }
    }
    out
}

/// The inner join to make next: the leaf, its keys (probe side, build
/// side, conjunct), the rows it is estimated to leave, its rows.
struct Choice {
    est: f64,
    rows: usize,
    leaf: usize,
    keys: Vec<(Expr, Expr, usize)>,
    /// Its hash table fits the memory limit (else it is joined by
    /// partitions, see `grace`).
    fits: bool,
}

/// Runs the group; its output columns ([`JoinGroup::output`]) in order.
pub fn run(
    db: &Database,
    g: &JoinGroup,
    opts: &QueryOptions,
    facts: &mut ScanFacts,
) -> Result<Joined> {
    let workers = worker_count(opts.threads);
    let outer_leaf: u64 = g.outer.iter().fold(0, |m, s| m | (1 << s.leaf));
    // Each leaf's rows, and the share of its table they are. Items cut
    // by their own conditions first: a table that a smaller, cut item
    // joins by `=` is read after it, and reads only the rows whose keys
    // that item has (see `runtime_filter`).
    let table_rows: Vec<Option<u64>> = (0..g.leaves.len())
        .map(|i| {
            let rows = |t: &str| {
                db.table(t)
                    .map(|m| m.segments.iter().map(|s| s.rows).sum::<u64>())
                    .unwrap_or(0)
            };
            // A UNION ALL of scans: its branches' tables' rows; a
            // subquery that is a join: its largest table's.
            let union = runtime_filter::union_tables(g, i);
            let nested = runtime_filter::nested_tables(g, i);
            runtime_filter::scanned_table(g, i)
                .map(rows)
                .or_else(|| (!union.is_empty()).then(|| union.iter().map(|t| rows(t)).sum()))
                .or_else(|| nested.iter().map(|t| rows(t)).max())
        })
        .collect();
    // Each table leaf's primary-key column (of its table's columns): a
    // runtime filter on it with few keys reads its rows by the key index.
    let key_cols: Vec<Option<usize>> = (0..g.leaves.len())
        .map(|i| {
            runtime_filter::scanned_table(g, i)
                .and_then(|t| db.table(t))
                .and_then(|m| m.schema.key_column())
        })
        .collect();
    let excluded = outer_leaf | g.nullable;
    let mut leaves: Vec<Option<Rel>> = (0..g.leaves.len()).map(|_| None).collect();
    let mut kept: Vec<f64> = vec![1.0; g.leaves.len()];
    let mut unread: Vec<usize> = (0..g.leaves.len()).collect();
    while !unread.is_empty() {
        let i =
            runtime_filter::next_leaf(g, &unread, &leaves, excluded, &table_rows, &key_cols, &kept);
        unread.retain(|&u| u != i);
        let leaf = &g.leaves[i];
        let filtered = runtime_filter::filtered_plan(
            g,
            i,
            &leaves,
            excluded,
            table_rows[i].unwrap_or(0),
            key_cols[i],
            &kept,
            opts,
        )?;
        let plan = filtered.as_ref().map_or(&leaf.plan, |f| &f.0);
        // A CTE the statement names more than once, with no runtime
        // filter of this group: run once for every use with this plan.
        // Known by its plan's text, which is exact unless it holds an
        // array of more than 20 values (a runtime filter's keys pushed
        // into it by a group around, a long IN list): printed by its
        // ends alone, two such plans could read alike (found by review),
        // so those run every time.
        let text = format!("{:?}", leaf.plan);
        let exact = !text.contains(" elements...,");
        let shared = match (leaf.cte, &filtered, &opts.cte_results) {
            (Some(id), None, Some(kept)) if exact => Some((kept, (id, text))),
            _ => None,
        };
        let mut on_disk = Vec::new();
        let r = match shared.as_ref().and_then(|(kept, key)| kept.get(key)) {
            Some((schema, batches)) => {
                if let Some(p) = &opts.profile {
                    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
                    let i = p.placeholder(
                        format!("CTE {} (its rows from its first use)", leaf.name),
                        None,
                    );
                    p.fill(i, rows as u64, std::time::Duration::ZERO);
                }
                super::QueryResult {
                    schema,
                    batches,
                    later: Vec::new(),
                    explain: None,
                    facts: ScanFacts::default(),
                }
            }
            None => {
                // Its rows past the memory limit go to disk as they are
                // made.
                let to_disk = opts
                    .spill
                    .is_some()
                    .then(|| Arc::new(ResultSpill::new(plan, opts.join_rows_on_disk)));
                let leaf_opts = QueryOptions {
                    result_spill: to_disk.clone(),
                    ..opts.clone()
                };
                let r = super::run_plan(db, plan, &leaf_opts)?;
                if let Some(t) = to_disk {
                    on_disk = t.finish()?;
                }
                // A CTE's rows are kept for its next use when they are
                // all in memory and fit beside the rest; else it runs
                // again there.
                if let Some((kept, key)) = shared
                    && on_disk.is_empty()
                {
                    match kept.keep(key, r.schema.clone(), r.batches.clone(), opts) {
                        Ok(()) | Err(Error::MemoryLimit { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
                r
            }
        };
        // The filter's keys are given back once its leaf is read.
        drop(filtered);
        facts.segments_total += r.facts.segments_total;
        facts.segments_scanned += r.facts.segments_scanned;
        facts.rows += r.facts.rows;
        let mut batches = r
            .batches
            .into_iter()
            .map(plain)
            .collect::<Result<Vec<_>>>()?;
        if batches.is_empty() {
            batches.push(plain(RecordBatch::new_empty(r.schema.clone()))?);
        }
        let rows = batches.iter().map(|b| b.num_rows()).sum::<usize>()
            + on_disk.iter().map(Piece::rows).sum::<usize>();
        let mut rel = Rel {
            batches,
            disk: on_disk,
            cols: leaf.columns.clone(),
            items: 1 << i,
            rows,
            mem: None,
        }
        .counted(opts)?;
        if let Some(f) = &leaf.filter {
            // Over the leaf's own columns: positions are global - offset.
            let mut global = f.clone();
            global.remap_columns(&mut |c| leaf.columns[c]);
            rel = filter(rel, &global, g, workers, opts)?;
        }
        let total = table_rows[i].unwrap_or(rel.rows as u64);
        kept[i] = if total == 0 {
            1.0
        } else {
            rel.rows as f64 / total as f64
        };
        leaves[i] = Some(rel);
    }

    let mut steps_done = vec![false; g.outer.len()];
    let mut built: HashMap<(usize, Vec<usize>), Arc<HashTable>> = HashMap::new();
    // A semi or anti join whose condition reads one other item, with a
    // side no larger than that item's rows, is made on that item before
    // any join (TPC-H Q18's 57 orders, Q16's complaining suppliers).
    for (i, st) in g.outer.iter().enumerate() {
        let others = st.on.iter().fold(0u64, |m, c| m | c.items) & !(1u64 << st.leaf);
        if !is_semi(st.kind) || others.count_ones() != 1 {
            continue;
        }
        let l = others.trailing_zeros() as usize;
        let (Some(item), Some(sub)) = (&leaves[l], &leaves[st.leaf]) else {
            continue;
        };
        if (outer_leaf | g.nullable) & (1 << l) != 0 || sub.rows > item.rows {
            continue;
        }
        let item = leaves[l]
            .take()
            .ok_or_else(|| Error::Internal("join: leaf taken".into()))?;
        leaves[l] = Some(run_step(
            item,
            st,
            &mut leaves,
            &mut built,
            g,
            workers,
            opts,
        )?);
        steps_done[i] = true;
    }
    let mut conjuncts: Vec<(Conjunct, bool)> =
        g.conjuncts.iter().map(|c| (c.clone(), false)).collect();
    // A filtered item joined to one other item alone, with fewer rows
    // and not the largest, is joined into it first (a nation filtered to
    // one of 25 into the
    // suppliers, TPC-H Q5, Q7, Q8, Q11, Q21): the other item is then a
    // smaller build side, and no larger join carries the unfiltered rows.
    // So is a small item, filtered or not, joined to one other item that
    // is not the largest (the 25 nations of TPC-H Q9's suppliers and Q10's
    // customers): that item then carries the small one's columns into a
    // later join — the last, which is pipelined (see `pipeline`) — where
    // joined last the small item was probed by every joined row, made
    // whole twice.
    loop {
        let present: Vec<usize> = (0..leaves.len())
            .filter(|&i| leaves[i].is_some() && (outer_leaf | g.nullable) & (1 << i) == 0)
            .collect();
        let largest = present
            .iter()
            .filter_map(|&i| leaves[i].as_ref().map(|r| r.rows))
            .max()
            .unwrap_or(0);
        let mut merged = false;
        for &d in &present {
            let Some(dr) = leaves[d].as_ref() else {
                continue;
            };
            let whole = kept[d] >= 1.0;
            if whole && dr.rows > SMALL_ITEM_ROWS {
                continue;
            }
            let near: Vec<usize> = present
                .iter()
                .copied()
                .filter(|&p| p != d && leaves[p].is_some())
                .filter(|&p| {
                    let pi = leaves[p].as_ref().map_or(0, |x| x.items);
                    !keys_for(&conjuncts, pi, dr.items).is_empty()
                })
                .collect();
            let [p] = near.as_slice() else { continue };
            let p = *p;
            let (Some(pr), Some(_)) = (&leaves[p], &leaves[d]) else {
                continue;
            };
            // (Into the largest item, the probe side to start from, it
            // is joined by the main loop: one stage of a star's chain.)
            if pr.rows <= dr.rows || pr.rows >= largest {
                continue;
            }
            // Only an item no other item reaches but through `d`'s one
            // neighbour: d's conditions with any third item wait.
            let others = conjuncts.iter().any(|(c, done)| {
                !done && c.items & dr.items != 0 && c.items & !(dr.items | pr.items) != 0
            });
            if others {
                continue;
            }
            let keys = keys_for(&conjuncts, pr.items, dr.items);
            let probe_side = leaves[p]
                .take()
                .ok_or_else(|| Error::Internal("join: leaf taken".into()))?;
            let build_side = leaves[d]
                .take()
                .ok_or_else(|| Error::Internal("join: leaf taken".into()))?;
            let table = if opts.join_rows_on_disk {
                None
            } else {
                match build_side.hashed(keys.iter().map(|k| &k.1), key_types(&keys, g), g, opts) {
                    Err(Error::MemoryLimit { .. }) if opts.spill.is_some() => None,
                    t => Some(t?),
                }
            };
            let probe_keys = probe_side.locals(keys.iter().map(|k| &k.0))?;
            for k in &keys {
                conjuncts[k.2].1 = true;
            }
            let both = probe_side.items | build_side.items;
            let mut joined = match table {
                // Its build side does not fit: by partitions on disk (the
                // group's only join's parts by the workers that read its
                // rows).
                None => {
                    if let Some(then) =
                        last_step(&leaves, &steps_done, &conjuncts, both, !g.nullable)
                    {
                        return grace_last(
                            probe_side,
                            build_side,
                            JoinKind::Inner,
                            &keys,
                            None,
                            &mut conjuncts,
                            then,
                            g,
                            workers,
                            opts,
                        );
                    }
                    grace_join(probe_side, build_side, &keys, g, workers, opts)?
                }
                Some(table) => {
                    // The group's only join: run by the workers that read
                    // its rows.
                    if let Some(then) =
                        last_step(&leaves, &steps_done, &conjuncts, both, !g.nullable)
                    {
                        return inner_last(
                            probe_side,
                            &build_side,
                            Arc::new(table),
                            probe_keys,
                            &mut conjuncts,
                            then,
                            g,
                            opts,
                        );
                    }
                    inner_join(
                        probe_side,
                        &build_side,
                        &table,
                        &probe_keys,
                        g,
                        workers,
                        opts,
                    )?
                }
            };
            // Conditions now wholly inside the joined pair.
            let ready: Vec<usize> = conjuncts
                .iter()
                .enumerate()
                .filter(|(_, (c, done))| !done && c.items & !joined.items == 0)
                .map(|(i, _)| i)
                .collect();
            if let Some(c) = and_all(ready.iter().map(|&i| conjuncts[i].0.expr.clone()).collect()) {
                for &i in &ready {
                    conjuncts[i].1 = true;
                }
                joined = filter(joined, &c, g, workers, opts)?;
            }
            kept[p] *= kept[d];
            leaves[p] = Some(joined);
            merged = true;
            break;
        }
        if !merged {
            break;
        }
    }
    // The probe side to start from: the largest item no outer join fills
    // that something can join without a cross product: an item an outer
    // join's ON reads, or one an equality joins to an item no outer join
    // fills. (An item whose only condition reads the NULL-filled side of
    // a LEFT join waits for that join: started from, it could only be
    // crossed with the LEFT join's other side.)
    let present: Vec<usize> = (0..leaves.len())
        .filter(|&i| outer_leaf & (1 << i) == 0 && leaves[i].is_some())
        .collect();
    let joinable = |i: usize| {
        let items = leaves[i].as_ref().map_or(1 << i, |r| r.items);
        let in_on = g.outer.iter().any(|st| {
            st.on
                .iter()
                .any(|c| c.items & !(1u64 << st.leaf) & items != 0)
        });
        let keyed = conjuncts.iter().any(|(c, done)| {
            !done
                && c.equi.is_some()
                && c.items & items != 0
                && c.items & !items != 0
                && c.items & (g.nullable | outer_leaf) == 0
        });
        in_on || keyed
    };
    // Better still, an item from which every other is reached by
    // equalities and outer joins alone, no cross product on the way
    // (`c LEFT JOIN o … JOIN l ON l.ok = o.ok JOIN d ON d.x = l.id`:
    // from d, l is reached, then nothing without crossing with c).
    let items: Vec<u64> = leaves
        .iter()
        .enumerate()
        .map(|(i, l)| l.as_ref().map_or(1 << i, |r| r.items))
        .collect();
    let crosses_nothing = |start: usize| {
        let mut have = items[start];
        let mut settled = !g.nullable;
        let mut done = steps_done.clone();
        loop {
            let mut grew = false;
            for &r in &present {
                if items[r] & have != 0 {
                    continue;
                }
                let joins = conjuncts.iter().any(|(c, finished)| {
                    !finished
                        && c.equi.is_some()
                        && c.items & have != 0
                        && c.items & items[r] != 0
                        && c.items & !((have & settled) | items[r]) == 0
                });
                if joins {
                    have |= items[r];
                    grew = true;
                }
            }
            for (k, st) in g.outer.iter().enumerate() {
                let ready_on = if is_semi(st.kind) || st.kind == JoinKind::Mark {
                    have & settled
                } else {
                    have
                };
                if done[k]
                    || !st
                        .on
                        .iter()
                        .all(|c| c.items & !(1u64 << st.leaf) & !ready_on == 0)
                {
                    continue;
                }
                done[k] = true;
                have |= 1 << st.leaf;
                settled |= g.nullable & (1 << st.leaf);
                if st.kind == JoinKind::Full {
                    settled |= g.nullable;
                }
                grew = true;
            }
            if !grew {
                break;
            }
        }
        present.iter().all(|&r| items[r] & !have == 0) && done.iter().all(|d| *d)
    };
    let clean: Vec<usize> = present
        .iter()
        .copied()
        .filter(|&i| crosses_nothing(i))
        .collect();
    let starts: Vec<usize> = if !clean.is_empty() {
        clean
    } else {
        match present
            .iter()
            .copied()
            .filter(|&i| joinable(i))
            .collect::<Vec<_>>()
        {
            j if j.is_empty() => present,
            j => j,
        }
    };
    let base = starts
        .into_iter()
        .max_by_key(|&i| {
            (
                leaves[i].as_ref().map_or(0, |r| r.rows),
                std::cmp::Reverse(i),
            )
        })
        .ok_or_else(|| Error::Internal("join: no item to start from".into()))?;
    let mut s = leaves[base]
        .take()
        .ok_or_else(|| Error::Internal("join: base taken".into()))?;
    // Items whose NULL-filling is over: conditions that read an item an
    // outer join fills wait for it.
    let mut settled: u64 = !g.nullable;

    loop {
        // Conditions whose items are all joined.
        let ready: Vec<usize> = conjuncts
            .iter()
            .enumerate()
            .filter(|(_, (c, done))| !done && c.items & !(s.items & settled) == 0)
            .map(|(i, _)| i)
            .collect();
        if !ready.is_empty() {
            let cond = and_all(ready.iter().map(|&i| conjuncts[i].0.expr.clone()).collect());
            for &i in &ready {
                conjuncts[i].1 = true;
            }
            if let Some(c) = cond {
                s = filter(s, &c, g, workers, opts)?;
            }
        }
        // A semi or anti join that is ready and no larger than the rows
        // so far: before any other join (it only drops rows).
        let early = g.outer.iter().enumerate().find(|(i, st)| {
            !steps_done[*i]
                && is_semi(st.kind)
                && st
                    .on
                    .iter()
                    .all(|c| c.items & !(1u64 << st.leaf) & !(s.items & settled) == 0)
                && leaves[st.leaf].as_ref().is_some_and(|r| r.rows <= s.rows)
        });
        if let Some((i, st)) = early {
            steps_done[i] = true;
            s = run_step(s, st, &mut leaves, &mut built, g, workers, opts)?;
            continue;
        }
        let remaining: Vec<usize> = (0..leaves.len())
            .filter(|&i| leaves[i].is_some() && outer_leaf & (1 << i) == 0)
            .collect();
        // The inner join that leaves the fewest rows.
        let mut best: Option<Choice> = None;
        for &r in &remaining {
            let r_items = leaves[r].as_ref().map_or(1 << r, |x| x.items);
            let keys = keys_for(&conjuncts, s.items & settled, r_items);
            if keys.is_empty() {
                continue;
            }
            // A table that does not fit (its join will be made by
            // partitions, see `grace`): one row a key, as far as known.
            let (fan, rows, fits) = match fitting_table(&mut built, &leaves, r, &keys, g, opts)? {
                Some(t) => (t.rows() as f64 / t.distinct.max(1) as f64, t.rows(), true),
                None => (1.0, leaves[r].as_ref().map_or(0, |x| x.rows), false),
            };
            let items: Vec<u64> = leaves
                .iter()
                .enumerate()
                .map(|(i, l)| l.as_ref().map_or(1 << i, |x| x.items))
                .collect();
            let est = s.rows as f64
                * branch_kept(r, s.items, &remaining, &conjuncts, &kept, &items)
                * fan;
            if best.as_ref().is_none_or(|b| (est, rows) < (b.est, b.rows)) {
                best = Some(Choice {
                    est,
                    rows,
                    leaf: r,
                    keys,
                    fits,
                });
            }
        }
        if best.is_some() && steps_done.iter().all(|d| *d) {
            let star = star_last(
                s,
                &mut leaves,
                &mut built,
                &mut conjuncts,
                settled,
                &kept,
                g,
                opts,
            )?;
            match star {
                Ok(joined) => return Ok(joined),
                Err(back) => s = back,
            }
        }
        if let Some(Choice {
            leaf: r,
            keys,
            fits,
            ..
        }) = best
        {
            let table = if opts.join_rows_on_disk || !fits {
                None
            } else {
                fitting_table(&mut built, &leaves, r, &keys, g, opts)?
            };
            let probe_keys = s.locals(keys.iter().map(|k| &k.0))?;
            for k in &keys {
                conjuncts[k.2].1 = true;
            }
            let right = leaves[r]
                .take()
                .ok_or_else(|| Error::Internal("join: leaf taken".into()))?;
            let Some(table) = table else {
                // Its build side does not fit: joined by partitions on
                // disk (the conditions left are applied above, as after
                // any join); the last join's parts by the workers that
                // read its rows.
                if let Some(then) = last_step(
                    &leaves,
                    &steps_done,
                    &conjuncts,
                    s.items | right.items,
                    settled,
                ) {
                    return grace_last(
                        s,
                        right,
                        JoinKind::Inner,
                        &keys,
                        None,
                        &mut conjuncts,
                        then,
                        g,
                        workers,
                        opts,
                    );
                }
                s = grace_join(s, right, &keys, g, workers, opts)?;
                continue;
            };
            // The last join: run by the workers that read its rows.
            if let Some(then) = last_step(
                &leaves,
                &steps_done,
                &conjuncts,
                s.items | right.items,
                settled,
            ) {
                return inner_last(s, &right, table, probe_keys, &mut conjuncts, then, g, opts);
            }
            s = inner_join(s, &right, &table, &probe_keys, g, workers, opts)?;
            continue;
        }
        // An outer join whose ON reads only joined items.
        // (A semi or anti join's condition waits, as WHERE's, for the
        // items it reads to be settled.)
        let step = g.outer.iter().enumerate().find(|(i, st)| {
            let have = if is_semi(st.kind) || st.kind == JoinKind::Mark {
                s.items & settled
            } else {
                s.items
            };
            !steps_done[*i]
                && st
                    .on
                    .iter()
                    .all(|c| c.items & !(1u64 << st.leaf) & !have == 0)
        });
        if let Some((i, st)) = step {
            steps_done[i] = true;
            let mut after = settled | (g.nullable & (1 << st.leaf));
            if st.kind == JoinKind::Full {
                after |= g.nullable;
            }
            // The last join, a LEFT or FULL one by keys: run by the
            // workers that read its rows.
            let on: Vec<(Conjunct, bool)> = st.on.iter().map(|c| (c.clone(), false)).collect();
            let keys = keys_for(&on, s.items, 1 << st.leaf);
            let last = matches!(st.kind, JoinKind::Left | JoinKind::Full)
                && !keys.is_empty()
                && leaves
                    .iter()
                    .enumerate()
                    .all(|(j, l)| j == st.leaf || l.is_none())
                && steps_done.iter().all(|d| *d)
                && conjuncts
                    .iter()
                    .all(|(c, done)| *done || c.items & !((s.items | 1 << st.leaf) & after) == 0);
            let by_parts = last && step_by_partitions(&s, st, &leaves, opts);
            if by_parts && st.kind == JoinKind::Left {
                // By partitions on disk, its parts pipelined.
                let then: Vec<usize> = (0..conjuncts.len()).filter(|&j| !conjuncts[j].1).collect();
                let used: Vec<usize> = keys.iter().map(|k| k.2).collect();
                let rest = and_all(
                    on.iter()
                        .enumerate()
                        .filter(|(j, _)| !used.contains(j))
                        .map(|(_, c)| c.0.expr.clone())
                        .collect(),
                );
                let right = leaves[st.leaf]
                    .take()
                    .ok_or_else(|| Error::Internal("join: outer leaf taken".into()))?;
                return grace_last(
                    s,
                    right,
                    JoinKind::Left,
                    &keys,
                    rest.as_ref(),
                    &mut conjuncts,
                    then,
                    g,
                    workers,
                    opts,
                );
            }
            if last && !by_parts {
                let then: Vec<usize> = (0..conjuncts.len()).filter(|&j| !conjuncts[j].1).collect();
                return outer_last(
                    s,
                    st,
                    &mut leaves,
                    &mut built,
                    &mut conjuncts,
                    then,
                    g,
                    opts,
                );
            }
            s = run_step(s, st, &mut leaves, &mut built, g, workers, opts)?;
            settled = after;
            continue;
        }
        // An item no condition connects: a cross product, smallest first.
        if let Some(&r) = remaining
            .iter()
            .min_by_key(|&&r| leaves[r].as_ref().map_or(0, |x| x.rows))
        {
            let table = table_for(&mut built, &leaves, r, &[], g, opts)?;
            let right = leaves[r]
                .take()
                .ok_or_else(|| Error::Internal("join: leaf taken".into()))?;
            s = inner_join(s, &right, &table, &[], g, workers, opts)?;
            continue;
        }
        if steps_done.iter().any(|d| !d) || conjuncts.iter().any(|c| !c.1) {
            return Err(Error::Internal(
                "join: conditions left that no order of the FROM items can apply".into(),
            ));
        }
        break;
    }
    joined_rows(s, g)
}

/// The group's rows `s` as its output columns, in the group's order.
fn joined_rows(s: Rel, g: &JoinGroup) -> Result<Joined> {
    let pos = s.positions(&g.output)?;
    let batches = s
        .batches
        .iter()
        .filter(|b| b.num_rows() > 0)
        .map(|b| output_batch(b, &pos))
        .collect::<Result<_>>()?;
    let out: Arc<dyn Fn(&RecordBatch) -> Result<RecordBatch> + Send + Sync> =
        Arc::new(move |b: &RecordBatch| output_batch(b, &pos));
    let later = s
        .disk
        .into_iter()
        .map(|p| p.later(Some(out.clone())))
        .collect();
    Ok(Joined {
        batches,
        later,
        pipeline: None,
    })
}

/// Columns `pos` of `b`, named by position, every one nullable.
fn output_batch(b: &RecordBatch, pos: &[usize]) -> Result<RecordBatch> {
    let cols = pos.iter().map(|&p| b.column(p).clone()).collect();
    let fields: Vec<Field> = pos
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            Field::new(
                format!("c{i}"),
                b.schema().field(p).data_type().clone(),
                true,
            )
        })
        .collect();
    Ok(RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
    )?)
}

/// After a step that leaves the items `items` joined (their NULL-filling
/// over for `settled`): whether it is the group's last — every leaf
/// joined, every outer step done, and every condition left reads only
/// joined items; then those conditions (to apply to its rows).
fn last_step(
    leaves: &[Option<Rel>],
    steps_done: &[bool],
    conjuncts: &[(Conjunct, bool)],
    items: u64,
    settled: u64,
) -> Option<Vec<usize>> {
    if leaves.iter().any(|l| l.is_some()) || steps_done.iter().any(|d| !d) {
        return None;
    }
    let mut then = Vec::new();
    for (i, (c, done)) in conjuncts.iter().enumerate() {
        if *done {
            continue;
        }
        if c.items & !(items & settled) != 0 {
            return None;
        }
        then.push(i);
    }
    Some(then)
}

/// Conditions `then` (numbers in `conjuncts`, marked done) as one, over
/// the columns of `out`.
fn then_of(
    conjuncts: &mut [(Conjunct, bool)],
    then: Vec<usize>,
    out: &Rel,
) -> Result<Option<Expr>> {
    for &i in &then {
        conjuncts[i].1 = true;
    }
    and_all(then.iter().map(|&i| conjuncts[i].0.expr.clone()).collect())
        .map(|c| out.local(&c))
        .transpose()
}

/// The group's rows as `probe`'s rows with the join `spec` left to apply
/// to each of their morsels (`out`: the joined rows' layout).
fn pipelined(
    mut probe: Rel,
    out: &Rel,
    spec: pipeline::Spec,
    g: &JoinGroup,
    opts: &QueryOptions,
) -> Result<Joined> {
    let later = std::mem::take(&mut probe.disk)
        .into_iter()
        .map(|p| p.later(None))
        .collect();
    let (p, batches) = Pipeline::new(probe, out, spec, &g.output, opts)?;
    Ok(Joined {
        batches,
        later,
        pipeline: Some(p),
    })
}

/// The inner join of `probe` with `build` (hashed as `table`, probed by
/// `probe_keys`) as the group's last join, pipelined (see [`pipeline`]);
/// `then`: the conditions left, applied to its rows.
#[allow(clippy::too_many_arguments)]
fn inner_last(
    probe: Rel,
    build: &Rel,
    table: Arc<HashTable>,
    probe_keys: Vec<Expr>,
    conjuncts: &mut [(Conjunct, bool)],
    then: Vec<usize>,
    g: &JoinGroup,
    opts: &QueryOptions,
) -> Result<Joined> {
    let out = probe.beside(build);
    let then = then_of(conjuncts, then, &out)?;
    let name = format!(
        "Hash join (Inner) of {} with {}",
        label(g, probe.items),
        label(g, build.items)
    );
    let spec = pipeline::Spec {
        table,
        keys: probe_keys,
        chain: Vec::new(),
        residual: None,
        keep_probe: false,
        tail: false,
        then,
        name,
    };
    pipelined(probe, &out, spec, g, opts)
}

/// The inner joins of `s` with every leaf left, as the group's last
/// join, pipelined as one chain (see [`pipeline`]), when each of those
/// leaves is joined by keys over `s`'s own columns (a star: `s` a fact
/// table's rows, the leaves its dimensions) and no outer step is left;
/// else `s` back. The leaves are joined in the order of the rows they
/// are estimated to leave, fewest first, as the greedy order would take
/// them.
#[allow(clippy::too_many_arguments)]
fn star_last(
    s: Rel,
    leaves: &mut [Option<Rel>],
    built: &mut HashMap<(usize, Vec<usize>), Arc<HashTable>>,
    conjuncts: &mut [(Conjunct, bool)],
    settled: u64,
    kept: &[f64],
    g: &JoinGroup,
    opts: &QueryOptions,
) -> Result<std::result::Result<Joined, Rel>> {
    let remaining: Vec<usize> = (0..leaves.len()).filter(|&i| leaves[i].is_some()).collect();
    let items: Vec<u64> = leaves
        .iter()
        .enumerate()
        .map(|(i, l)| l.as_ref().map_or(1 << i, |x| x.items))
        .collect();
    let all = remaining.iter().fold(s.items, |m, &r| m | items[r]);
    if remaining.len() < 2 || all & !settled != 0 || opts.join_rows_on_disk {
        return Ok(Err(s));
    }
    let mut order = Vec::with_capacity(remaining.len());
    for &r in &remaining {
        let keys = keys_for(conjuncts, s.items, items[r]);
        if keys.is_empty() {
            return Ok(Err(s));
        }
        // (A table that does not fit: joined one at a time, by
        // partitions.)
        let Some(table) = fitting_table(built, leaves, r, &keys, g, opts)? else {
            return Ok(Err(s));
        };
        let fan = table.rows() as f64 / table.distinct.max(1) as f64;
        let est =
            s.rows as f64 * branch_kept(r, s.items, &remaining, conjuncts, kept, &items) * fan;
        order.push((est, table.rows(), r, keys, table));
    }
    order.sort_by(|a, b| {
        (a.0, a.1)
            .partial_cmp(&(b.0, b.1))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let mut out = s.beside(&Rel::of(Vec::new(), None, Vec::new(), 0));
    let mut chain = Vec::with_capacity(order.len());
    for (_, _, r, keys, table) in order {
        let right = leaves[r]
            .take()
            .ok_or_else(|| Error::Internal("join: leaf taken".into()))?;
        for k in &keys {
            conjuncts[k.2].1 = true;
        }
        let name = format!(
            "Hash join (Inner) of {} with {}",
            label(g, out.items),
            label(g, right.items)
        );
        let probe_keys = s.locals(keys.iter().map(|k| &k.0))?;
        out = out.beside(&right);
        chain.push(pipeline::Stage::new(table, probe_keys, name));
    }
    // Every condition left reads joined, settled items now.
    let then: Vec<usize> = (0..conjuncts.len()).filter(|&i| !conjuncts[i].1).collect();
    let then = then_of(conjuncts, then, &out)?;
    let own = chain
        .pop()
        .ok_or_else(|| Error::Internal("join: an empty chain".into()))?;
    let spec = pipeline::Spec {
        table: own.table,
        keys: own.keys,
        chain,
        residual: None,
        keep_probe: false,
        tail: false,
        then,
        name: own.name,
    };
    pipelined(s, &out, spec, g, opts).map(Ok)
}

/// The LEFT or FULL join `st` of `s` as the group's last join, pipelined
/// (see [`pipeline`]); `then`: the conditions left, applied to its rows.
#[allow(clippy::too_many_arguments)]
fn outer_last(
    s: Rel,
    st: &super::plan::from::OuterStep,
    leaves: &mut [Option<Rel>],
    built: &mut HashMap<(usize, Vec<usize>), Arc<HashTable>>,
    conjuncts: &mut [(Conjunct, bool)],
    then: Vec<usize>,
    g: &JoinGroup,
    opts: &QueryOptions,
) -> Result<Joined> {
    let on: Vec<(Conjunct, bool)> = st.on.iter().map(|c| (c.clone(), false)).collect();
    let keys = keys_for(&on, s.items, 1 << st.leaf);
    let used: Vec<usize> = keys.iter().map(|k| k.2).collect();
    let rest = and_all(
        on.iter()
            .enumerate()
            .filter(|(j, _)| !used.contains(j))
            .map(|(_, c)| c.0.expr.clone())
            .collect(),
    );
    let name = format!(
        "Hash join ({:?}) of {} with {}",
        st.kind,
        label(g, s.items),
        label(g, 1 << st.leaf)
    );
    let other_rows = leaves[st.leaf].as_ref().map_or(0, |r| r.rows);
    let take = |leaves: &mut [Option<Rel>]| {
        leaves[st.leaf]
            .take()
            .ok_or_else(|| Error::Internal("join: outer leaf taken".into()))
    };
    // A LEFT join with more rows on its NULL-filled side hashes its own
    // rows; the other side probes them, and its rows no probe matched
    // come last (as `left_by_probing_the_other_side`). Else the step's
    // leaf is hashed and probed by `s`; a FULL join's build rows no
    // probe matched come last.
    let (probe, table, probe_keys, out, keep_probe, tail) = if st.kind == JoinKind::Left
        && other_rows > s.rows
    {
        let right = take(leaves)?;
        let table = Arc::new(s.hashed(keys.iter().map(|k| &k.0), key_types(&keys, g), g, opts)?);
        let probe_keys = right.locals(keys.iter().map(|k| &k.1))?;
        let out = right.beside(&s);
        (right, table, probe_keys, out, false, true)
    } else {
        let table = table_for(built, leaves, st.leaf, &keys, g, opts)?;
        let right = take(leaves)?;
        let probe_keys = s.locals(keys.iter().map(|k| &k.0))?;
        let out = s.beside(&right);
        (s, table, probe_keys, out, true, st.kind == JoinKind::Full)
    };
    let residual = rest.map(|r| out.local(&r)).transpose()?;
    let then = then_of(conjuncts, then, &out)?;
    let spec = pipeline::Spec {
        table,
        keys: probe_keys,
        chain: Vec::new(),
        residual,
        keep_probe,
        tail,
        then,
        name,
    };
    pipelined(probe, &out, spec, g, opts)
}

/// The share of rows that joining leaf `r` keeps, counting the leaves
/// that only `r` connects to the items joined so far (`have`): a
/// supplier leaf that alone leads to a nation filtered to 1 of 25 keeps
/// 1/25 (TPC-H Q5, Q21), though its own rows are all kept.
fn branch_kept(
    r: usize,
    have: u64,
    remaining: &[usize],
    conjuncts: &[(Conjunct, bool)],
    kept: &[f64],
    items: &[u64],
) -> f64 {
    // Equalities between two single leaves: the join graph's edges.
    let edges: Vec<(u64, u64)> = conjuncts
        .iter()
        .filter(|(_, done)| !done)
        .filter_map(|(c, _)| c.equi.as_ref())
        .filter(|(_, lm, _, rm)| lm.count_ones() == 1 && rm.count_ones() == 1)
        .map(|(_, lm, _, rm)| (*lm, *rm))
        .collect();
    let touches = |a: u64, b: u64| {
        edges
            .iter()
            .any(|&(l, m)| (l & a != 0 && m & b != 0) || (m & a != 0 && l & b != 0))
    };
    let mut seen = items[r];
    let mut share = kept[r];
    let mut todo = vec![r];
    while let Some(x) = todo.pop() {
        for &y in remaining {
            let bits = items[y];
            if seen & bits != 0 || !touches(items[x], bits) || touches(bits, have) {
                continue;
            }
            seen |= bits;
            share *= kept[y];
            todo.push(y);
        }
    }
    share
}

/// The inner join of `s` with `right` through `table` (its hash table by
/// `probe_keys`; no keys: a cross product), a step of the profile.
fn inner_join(
    s: Rel,
    right: &Rel,
    table: &HashTable,
    probe_keys: &[Expr],
    g: &JoinGroup,
    workers: usize,
    opts: &QueryOptions,
) -> Result<Rel> {
    let what = if probe_keys.is_empty() {
        "Cross product"
    } else {
        "Hash join (Inner)"
    };
    let name = format!(
        "{what} of {} with {}",
        label(g, s.items),
        label(g, right.items)
    );
    let rows = s.rows;
    recorded(
        opts,
        || name,
        rows,
        || {
            probe(
                s,
                right,
                table,
                probe_keys,
                None,
                JoinKind::Inner,
                workers,
                opts,
            )
        },
        |r| r.rows,
    )
}

/// The inner join of `s` with `right` by `keys` by partitions on disk
/// ([`grace`]), a step of the profile.
fn grace_join(
    s: Rel,
    right: Rel,
    keys: &[(Expr, Expr, usize)],
    g: &JoinGroup,
    workers: usize,
    opts: &QueryOptions,
) -> Result<Rel> {
    let name = format!(
        "Grace hash join (Inner) of {} with {}",
        label(g, s.items),
        label(g, right.items)
    );
    let rows = s.rows;
    recorded(
        opts,
        || name,
        rows,
        || grace_rows(s, right, JoinKind::Inner, keys, None, g, workers, opts),
        |r| r.rows,
    )
}

/// The inner or LEFT join (`kind`; `s` the preserved side) of `s` with
/// `right` by `keys` and the ON's `rest` (over global columns) as the
/// group's last join, by partitions on disk whose joins are pipelined
/// (see [`pipeline`]'s note): both sides are partitioned here, each
/// part's probe rows are the pipeline's input and its table is built as
/// they are reached; `then`: the conditions left, applied to its rows.
#[allow(clippy::too_many_arguments)]
fn grace_last(
    s: Rel,
    right: Rel,
    kind: JoinKind,
    keys: &[(Expr, Expr, usize)],
    rest: Option<&Expr>,
    conjuncts: &mut [(Conjunct, bool)],
    then: Vec<usize>,
    g: &JoinGroup,
    workers: usize,
    opts: &QueryOptions,
) -> Result<Joined> {
    // Under a limit so small that the workers' morsels of joined rows
    // would take a quarter of it (beside the parts' tables, up to
    // another quarter): the join made whole by partitions, its rows to
    // disk and read by the operator above, as any other join's.
    let per_row = |r: &Rel| r.bytes() / r.rows.max(1) as u64;
    let working =
        (workers * probe_rows(opts, workers)) as u64 * (per_row(&s) + per_row(&right)) * 2;
    if opts
        .memory
        .as_ref()
        .is_some_and(|m| working > m.limit() / 4)
    {
        let name = format!(
            "Grace hash join ({kind:?}) of {} with {}",
            label(g, s.items),
            label(g, right.items)
        );
        let rows = s.rows;
        let joined = recorded(
            opts,
            || name,
            rows,
            || grace_rows(s, right, kind, keys, rest, g, workers, opts),
            |r| r.rows,
        )?;
        for &i in &then {
            conjuncts[i].1 = true;
        }
        let joined = match and_all(then.iter().map(|&i| conjuncts[i].0.expr.clone()).collect()) {
            Some(c) => filter(joined, &c, g, workers, opts)?,
            None => joined,
        };
        return joined_rows(joined, g);
    }
    let out = s.beside(&right);
    let then = then_of(conjuncts, then, &out)?;
    let residual = rest.map(|r| out.local(r)).transpose()?;
    let types = key_types(keys, g);
    let probe_keys = s.locals(keys.iter().map(|k| &k.0))?;
    let build_keys = right.locals(keys.iter().map(|k| &k.1))?;
    let probe_schema = s.schema()?;
    let (probe_rows, items, cols) = (s.rows, s.items, s.cols.clone());
    let name = format!(
        "Grace hash join ({kind:?}) of {} with {}",
        label(g, s.items),
        label(g, right.items)
    );
    let spec = grace::Spec {
        kind,
        probe_keys: &probe_keys,
        build_keys: &build_keys,
        types: &types,
        residual: residual.as_ref(),
    };
    let parted = recorded(
        opts,
        || format!("{name}: both sides partitioned on disk"),
        probe_rows,
        || grace::parted(s, right, &spec, workers, opts),
        |p| {
            p.joined.batches.iter().map(|b| b.num_rows()).sum::<usize>()
                + p.joined.disk.iter().map(|d| d.rows()).sum::<usize>()
        },
    )?;
    let empty_build = RecordBatch::new_empty(parted.build_schema.clone());
    let empty_keys = eval_keys(&build_keys, &empty_build, Some(&types))?;
    let table = Arc::new(HashTable::build(
        empty_build,
        &empty_keys,
        types.clone(),
        1,
    )?);
    // The pipeline's own probe side: none in memory (its input is the
    // parts' probe rows, read back).
    let mut probe = Rel::of(Vec::new(), Some(probe_schema), cols, items);
    probe.rows = probe_rows;
    let spec = pipeline::Spec {
        table,
        keys: probe_keys,
        chain: Vec::new(),
        residual,
        keep_probe: kind == JoinKind::Left,
        tail: false,
        then,
        name: format!("{name}, its parts pipelined"),
    };
    let (mut p, _) = Pipeline::new(probe, &out, spec, &g.output, opts)?;
    let grace::Parted {
        parts,
        room,
        joined,
        build_schema,
    } = parted;
    // The input: the rows joined already, then each part's probe rows.
    let mut of_batch: Vec<Option<usize>> = vec![None; joined.batches.len()];
    let mut later = Vec::new();
    for d in joined.disk {
        of_batch.push(None);
        later.push(d.later(None));
    }
    let mut builds = Vec::with_capacity(parts.len());
    for (q, (build, probe)) in parts.into_iter().enumerate() {
        for piece in probe {
            of_batch.push(Some(q));
            later.push(piece.later(None));
        }
        builds.push(build);
    }
    p.by_parts(pipeline::Parts::new(
        of_batch,
        builds,
        build_schema,
        build_keys,
        types,
        workers,
        joined.mem,
        room,
    ));
    Ok(Joined {
        batches: joined.batches,
        later,
        pipeline: Some(p),
    })
}

/// `s` joined with `right` as `kind` by `keys` and the ON's `residual`
/// (over global columns) by partitions on disk ([`grace`]).
#[allow(clippy::too_many_arguments)]
fn grace_rows(
    s: Rel,
    right: Rel,
    kind: JoinKind,
    keys: &[(Expr, Expr, usize)],
    residual: Option<&Expr>,
    g: &JoinGroup,
    workers: usize,
    opts: &QueryOptions,
) -> Result<Rel> {
    let types = key_types(keys, g);
    let probe_keys = s.locals(keys.iter().map(|k| &k.0))?;
    let build_keys = right.locals(keys.iter().map(|k| &k.1))?;
    let residual = residual.map(|r| s.beside(&right).local(r)).transpose()?;
    let spec = grace::Spec {
        kind,
        probe_keys: &probe_keys,
        build_keys: &build_keys,
        types: &types,
        residual: residual.as_ref(),
    };
    grace::join(s, right, &spec, workers, opts)
}

/// Whether an outer, semi or anti step `st` with `s` as its probe side
/// is made by partitions on disk ([`grace`]): it joins by keys (and is
/// not a mark join), and the side it would hash does not fit beside
/// what the query holds (or the test knob says so).
fn step_by_partitions(
    s: &Rel,
    st: &super::plan::from::OuterStep,
    leaves: &[Option<Rel>],
    opts: &QueryOptions,
) -> bool {
    let on: Vec<(Conjunct, bool)> = st.on.iter().map(|c| (c.clone(), false)).collect();
    if st.kind == JoinKind::Mark
        || opts.spill.is_none()
        || keys_for(&on, s.items, 1 << st.leaf).is_empty()
    {
        return false;
    }
    let Some(other) = leaves[st.leaf].as_ref() else {
        return false;
    };
    if opts.join_rows_on_disk {
        return true;
    }
    // The side hashed: the smaller, as the steps choose it.
    let hashed = if other.rows > s.rows && st.kind != JoinKind::Full {
        s
    } else {
        other
    };
    let need = HashTable::estimate(hashed.rows, hashed.bytes());
    opts.memory
        .as_ref()
        .is_some_and(|m| m.used().saturating_add(need) > m.limit())
}

/// The FROM items of `items` by name: `(o, l)`.
fn label(g: &JoinGroup, items: u64) -> String {
    let names: Vec<&str> = g
        .leaves
        .iter()
        .enumerate()
        .filter(|(i, _)| items & (1 << i) != 0)
        .map(|(_, l)| l.name.as_str())
        .collect();
    format!("({})", names.join(", "))
}

/// `f` as a step of the query's profile (EXPLAIN ANALYZE), when it has
/// one: its name, the rows it reads and the rows it makes.
fn recorded<T>(
    opts: &QueryOptions,
    name: impl FnOnce() -> String,
    rows_in: usize,
    f: impl FnOnce() -> Result<T>,
    rows_out: impl FnOnce(&T) -> usize,
) -> Result<T> {
    match &opts.profile {
        None => f(),
        Some(p) => p.step(name, Some(rows_in as u64), f, |t| rows_out(t) as u64),
    }
}

/// Whether a step only keeps or drops its probe rows.
fn is_semi(kind: JoinKind) -> bool {
    matches!(kind, JoinKind::Semi | JoinKind::Anti | JoinKind::AntiNull)
}

/// Runs the outer, semi or anti step `st` with `s` as its probe side.
fn run_step(
    s: Rel,
    st: &super::plan::from::OuterStep,
    leaves: &mut [Option<Rel>],
    built: &mut HashMap<(usize, Vec<usize>), Arc<HashTable>>,
    g: &JoinGroup,
    workers: usize,
    opts: &QueryOptions,
) -> Result<Rel> {
    let (items, rows) = (s.items, s.rows);
    // (Named as made by partitions when known before; a table found too
    // big only as it is built keeps the name.)
    let grace = if step_by_partitions(&s, st, leaves, opts) {
        "Grace hash join"
    } else {
        "Hash join"
    };
    recorded(
        opts,
        || {
            format!(
                "{grace} ({:?}) of {} with {}",
                st.kind,
                label(g, items),
                label(g, 1 << st.leaf)
            )
        },
        rows,
        || step_inner(s, st, leaves, built, g, workers, opts),
        |r| r.rows,
    )
}

fn step_inner(
    s: Rel,
    st: &super::plan::from::OuterStep,
    leaves: &mut [Option<Rel>],
    built: &mut HashMap<(usize, Vec<usize>), Arc<HashTable>>,
    g: &JoinGroup,
    workers: usize,
    opts: &QueryOptions,
) -> Result<Rel> {
    let on: Vec<(Conjunct, bool)> = st.on.iter().map(|c| (c.clone(), false)).collect();
    let keys = keys_for(&on, s.items, 1 << st.leaf);
    let used: Vec<usize> = keys.iter().map(|k| k.2).collect();
    let rest = and_all(
        on.iter()
            .enumerate()
            .filter(|(j, _)| !used.contains(j))
            .map(|(_, c)| c.0.expr.clone())
            .collect(),
    );
    let take = |leaves: &mut [Option<Rel>]| {
        leaves[st.leaf]
            .take()
            .ok_or_else(|| Error::Internal("join: outer leaf taken".into()))
    };
    // By partitions on disk: when the side to hash does not fit (known
    // before, or found when its table is built).
    let by_parts = !keys.is_empty() && st.kind != JoinKind::Mark && opts.spill.is_some();
    let partitioned = |s: Rel, leaves: &mut [Option<Rel>]| {
        let right = take(leaves)?;
        grace_rows(s, right, st.kind, &keys, rest.as_ref(), g, workers, opts)
    };
    if step_by_partitions(&s, st, leaves, opts) {
        return partitioned(s, leaves);
    }
    // A semi or anti join against more rows than it keeps or drops
    // hashes its own rows and is probed by the other side's; so does a
    // LEFT join with more rows on its NULL-filled side (the other side's
    // table is not built).
    let other_rows = leaves[st.leaf].as_ref().map_or(0, |r| r.rows);
    let own_table =
        (is_semi(st.kind) || st.kind == JoinKind::Left) && other_rows > s.rows && !keys.is_empty();
    if own_table {
        let table = match s.hashed(keys.iter().map(|k| &k.0), key_types(&keys, g), g, opts) {
            Err(Error::MemoryLimit { .. }) if by_parts => return partitioned(s, leaves),
            Ok(_) if by_parts && !leaves_room(opts) => return partitioned(s, leaves),
            t => t?,
        };
        let right = take(leaves)?;
        return if is_semi(st.kind) {
            semi_by_probing_the_other_side(
                s,
                table,
                &right,
                &keys,
                rest.as_ref(),
                st.kind,
                workers,
                opts,
            )
        } else {
            left_by_probing_the_other_side(s, table, &right, &keys, rest.as_ref(), workers, opts)
        };
    }
    let table = match table_for(built, leaves, st.leaf, &keys, g, opts) {
        Err(Error::MemoryLimit { .. }) if by_parts => {
            built.clear();
            return partitioned(s, leaves);
        }
        Ok(_) if by_parts && !leaves_room(opts) => {
            built.clear();
            return partitioned(s, leaves);
        }
        t => t?,
    };
    let probe_keys = s.locals(keys.iter().map(|k| &k.0))?;
    let right = take(leaves)?;
    if st.kind == JoinKind::Mark {
        let col = st
            .mark
            .ok_or_else(|| Error::Internal("mark join without its column".into()))?;
        mark(
            s,
            &right,
            &table,
            &probe_keys,
            rest.as_ref(),
            col,
            st.leaf,
            workers,
            opts,
        )
    } else if is_semi(st.kind) {
        semi(
            s,
            &right,
            &table,
            &probe_keys,
            rest.as_ref(),
            st.kind,
            workers,
            opts,
        )
    } else {
        probe(
            s,
            &right,
            &table,
            &probe_keys,
            rest.as_ref(),
            st.kind,
            workers,
            opts,
        )
    }
}

/// [`table_for`], or `None` when the table does not fit the memory
/// limit (the memoised tables let go first to make room) and its inner
/// join can be made by partitions on disk instead ([`grace`]).
fn fitting_table(
    built: &mut HashMap<(usize, Vec<usize>), Arc<HashTable>>,
    leaves: &[Option<Rel>],
    r: usize,
    keys: &[(Expr, Expr, usize)],
    g: &JoinGroup,
    opts: &QueryOptions,
) -> Result<Option<Arc<HashTable>>> {
    if keys.is_empty() || opts.spill.is_none() {
        return table_for(built, leaves, r, keys, g, opts).map(Some);
    }
    // One that surely does not fit, beside the eighth of the limit its
    // probes need, is not built to find out: each such try cost a table's
    // build (TPC-H Q9 at a tenth of its peak tried its orders' 8 times).
    let id: Vec<usize> = keys.iter().map(|k| k.2).collect();
    if !built.contains_key(&(r, id))
        && let (Some(rel), Some(m)) = (leaves[r].as_ref(), opts.memory.as_ref())
    {
        let need = HashTable::estimate(rel.rows, rel.bytes());
        if m.used().saturating_add(need).saturating_add(m.limit() / 8) > m.limit() {
            return Ok(None);
        }
    }
    let t = match table_for(built, leaves, r, keys, g, opts) {
        Err(Error::MemoryLimit { .. }) if !built.is_empty() => {
            built.clear();
            match table_for(built, leaves, r, keys, g, opts) {
                Err(Error::MemoryLimit { .. }) => return Ok(None),
                t => t?,
            }
        }
        Err(Error::MemoryLimit { .. }) => return Ok(None),
        t => t?,
    };
    if leaves_room(opts) {
        return Ok(Some(t));
    }
    // Built, but with no room left for its probes: by partitions.
    drop(t);
    built.clear();
    Ok(None)
}

/// Whether the query's memory has room left beside what it holds (an
/// eighth of the limit) for the probes of a table just built: a table
/// that fits only just is no better than one that does not (its probes
/// fail), and is made by partitions instead.
fn leaves_room(opts: &QueryOptions) -> bool {
    opts.memory
        .as_ref()
        .is_none_or(|m| m.used() <= m.limit() - m.limit() / 8)
}

/// The hash table of leaf `r` by the build sides of `keys` (built once).
fn table_for(
    built: &mut HashMap<(usize, Vec<usize>), Arc<HashTable>>,
    leaves: &[Option<Rel>],
    r: usize,
    keys: &[(Expr, Expr, usize)],
    g: &JoinGroup,
    opts: &QueryOptions,
) -> Result<Arc<HashTable>> {
    let id: Vec<usize> = keys.iter().map(|k| k.2).collect();
    // (An outer join's keys are numbered among its ON's conjuncts; its
    // leaf is never an inner join's, so the numbers cannot clash.)
    let memo = (r, id);
    if let Some(t) = built.get(&memo) {
        return Ok(t.clone());
    }
    let rel = leaves[r]
        .as_ref()
        .ok_or_else(|| Error::Internal("join: leaf already joined".into()))?;
    let t = Arc::new(rel.hashed(keys.iter().map(|k| &k.1), key_types(keys, g), g, opts)?);
    built.insert(memo, t.clone());
    Ok(t)
}

/// [`semi`] with `s`'s rows hashed and `right`'s rows probing them
/// (when `right` has more rows): `s`'s rows that some row of `right`
/// matched are kept (`Semi`) or dropped (`Anti`, `AntiNull`).
#[allow(clippy::too_many_arguments)]
fn semi_by_probing_the_other_side(
    s: Rel,
    table: HashTable,
    right: &Rel,
    keys: &[(Expr, Expr, usize)],
    residual: Option<&Expr>,
    kind: JoinKind,
    workers: usize,
    opts: &QueryOptions,
) -> Result<Rel> {
    let their_keys = right.locals(keys.iter().map(|k| &k.1))?;
    // Pairs are checked over s's columns, then right's (as `semi` does).
    let residual = residual.map(|r| s.beside(right).local(r)).transpose()?;
    let n = table.rows();
    // s's rows matched by any task; per task, whether a key of right was
    // NULL.
    let marks = Marks::new(n);
    let parts = parallel(
        right.pieces(probe_rows(opts, workers)),
        workers,
        opts,
        |piece| {
            let b = piece.load()?;
            let k = eval_keys(&their_keys, &b, Some(table.key_types()))?;
            let null_key = k.iter().any(|a| a.null_count() > 0);
            let (mut p, mut m) = (Vec::new(), Vec::new());
            let mut scratch = opts.reserve("hash join probe", 0)?;
            table.matches(&k, b.num_rows(), &mut p, &mut m, &mut scratch)?;
            match &residual {
                None => m.iter().for_each(|&x| marks.set(x)),
                Some(r) => {
                    let mask = super::hash_join::pair_mask(r, &table.batch, &b, &m, &p)?;
                    for (x, keep) in m.iter().zip(mask.values().iter()) {
                        if keep {
                            marks.set(*x);
                        }
                    }
                }
            }
            Ok(null_key)
        },
    )?;
    let hit = marks.to_vec(n);
    let their_null = parts.into_iter().any(|nk| nk);
    let empty = right.rows == 0;
    let keep: Vec<bool> = match kind {
        JoinKind::Semi => hit,
        JoinKind::AntiNull if their_null => vec![false; n],
        JoinKind::AntiNull if !empty => {
            // NOT IN: a NULL on the left is NULL (no row) against rows.
            let valid = table.null_free_rows();
            hit.iter().zip(valid).map(|(h, v)| !h && v).collect()
        }
        _ => hit.iter().map(|h| !h).collect(),
    };
    let mask = arrow_array::BooleanArray::from(keep);
    let kept = arrow_select::filter::filter_record_batch(&table.batch, &mask).map_err(exec_err)?;
    Rel {
        rows: kept.num_rows(),
        batches: vec![kept],
        disk: Vec::new(),
        cols: s.cols,
        items: s.items,
        mem: None,
    }
    .counted(opts)
}

/// A LEFT join whose right side has more rows: `s`'s rows hashed and
/// probed by the right side's (pairs), then `s`'s rows no pair used
/// with NULL right columns. The columns: the right side's, then `s`'s.
fn left_by_probing_the_other_side(
    s: Rel,
    table: HashTable,
    right: &Rel,
    keys: &[(Expr, Expr, usize)],
    residual: Option<&Expr>,
    workers: usize,
    opts: &QueryOptions,
) -> Result<Rel> {
    let their_keys = right.locals(keys.iter().map(|k| &k.1))?;
    let out = right.beside(&s);
    let residual = residual.map(|r| out.local(r)).transpose()?;
    let n = table.rows();
    let marks = Marks::new(n);
    let sink = Sink::new(opts)?;
    let tasks: Vec<(u64, Piece)> = (0..).zip(right.pieces(probe_rows(opts, workers))).collect();
    let last = tasks.len() as u64;
    parallel(tasks, workers, opts, |(i, piece)| {
        let b = piece.load()?;
        let k = eval_keys(&their_keys, &b, Some(table.key_types()))?;
        let mut scratch = opts.reserve("hash join probe", 0)?;
        let j = table.join_batch(&b, &k, residual.as_ref(), false, Some(&marks), &mut scratch)?;
        sink.put(i, j)
    })?;
    let matched = marks.to_vec(n);
    let rest = table.unmatched(&*right.schema()?, &matched)?;
    sink.put(last, rest)?;
    Ok(Rel::made(sink.finish()?, None, out.cols, out.items))
}

/// The types two sides' keys are compared as.
fn key_types(keys: &[(Expr, Expr, usize)], g: &JoinGroup) -> Vec<A> {
    keys.iter()
        .map(|(p, b, _)| {
            let (pt, bt) = (p.data_type(&g.types), b.data_type(&g.types));
            if pt == bt {
                pt
            } else {
                common_type(&[pt.clone(), bt]).unwrap_or(pt)
            }
        })
        .collect()
}

/// The rows of `s` with (`Semi`) or without (`Anti`, `AntiNull`) a
/// match in `table` (the rows of `right`).
#[allow(clippy::too_many_arguments)]
fn semi(
    s: Rel,
    right: &Rel,
    table: &HashTable,
    keys: &[Expr],
    residual: Option<&Expr>,
    kind: JoinKind,
    workers: usize,
    opts: &QueryOptions,
) -> Result<Rel> {
    let residual = residual.map(|r| s.beside(right).local(r)).transpose()?;
    let schema = s.batches.first().map(|b| b.schema());
    // NOT IN: a NULL among the subquery's values makes it true for no row.
    if kind == JoinKind::AntiNull && table.null_keys > 0 {
        let batches = schema.map(RecordBatch::new_empty).into_iter().collect();
        return Ok(Rel {
            batches,
            disk: Vec::new(),
            rows: 0,
            ..s
        });
    }
    let per_task = if keys.is_empty() && residual.is_some() {
        (CROSS_PAIRS / table.rows().max(1)).max(1)
    } else {
        probe_rows(opts, workers)
    };
    let anti = kind != JoinKind::Semi;
    let empty = table.rows() == 0;
    let made = each_piece(&s, per_task, workers, opts, |b| {
        let k = eval_keys(keys, b, Some(table.key_types()))?;
        let mut scratch = opts.reserve("hash join probe", 0)?;
        let out = table.semi_batch(b, &k, residual.as_ref(), anti, &mut scratch)?;
        if kind != JoinKind::AntiNull || empty {
            return Ok(out);
        }
        // NOT IN with a NULL on its left: NULL (no row) unless the
        // subquery has no rows.
        let k = eval_keys(keys, &out, Some(table.key_types()))?;
        let mut keep = vec![true; out.num_rows()];
        for a in &k {
            if let Some(nulls) = a.logical_nulls() {
                for (r, x) in keep.iter_mut().enumerate() {
                    *x &= nulls.is_valid(r);
                }
            }
        }
        let mask = arrow_array::BooleanArray::from(keep);
        arrow_select::filter::filter_record_batch(&out, &mask).map_err(exec_err)
    })?;
    Ok(Rel::made(made, schema, s.cols, s.items))
}

/// Every row of `s` with one more column, global column `col`: whether
/// the row has a match in `right` (the rows in `table`) — EXISTS under
/// OR or NOT. The rows then count as joined with `leaf`.
#[allow(clippy::too_many_arguments)]
fn mark(
    s: Rel,
    right: &Rel,
    table: &HashTable,
    keys: &[Expr],
    residual: Option<&Expr>,
    col: usize,
    leaf: usize,
    workers: usize,
    opts: &QueryOptions,
) -> Result<Rel> {
    let residual = residual.map(|r| s.beside(right).local(r)).transpose()?;
    let per_task = if keys.is_empty() && residual.is_some() {
        (CROSS_PAIRS / table.rows().max(1)).max(1)
    } else {
        probe_rows(opts, workers)
    };
    let schema = s.batches.first().map(|b| {
        let mut fields: Vec<Field> = b.schema().fields().iter().map(|f| (**f).clone()).collect();
        fields.push(Field::new(format!("c{}", fields.len()), A::Boolean, false));
        Arc::new(arrow_schema::Schema::new(fields))
    });
    let out_schema = schema.clone();
    let made = each_piece(&s, per_task, workers, opts, |b| {
        let k = eval_keys(keys, b, Some(table.key_types()))?;
        let mut scratch = opts.reserve("hash join probe", 0)?;
        let hit = table.hits(b, &k, residual.as_ref(), &mut scratch)?;
        let mut cols = b.columns().to_vec();
        cols.push(Arc::new(arrow_array::BooleanArray::from(hit)));
        let schema = out_schema
            .clone()
            .ok_or_else(|| Error::Internal("mark join: no schema".into()))?;
        RecordBatch::try_new(schema, cols).map_err(exec_err)
    })?;
    let mut cols = s.cols;
    cols.push(col);
    Ok(Rel::made(made, schema, cols, s.items | (1u64 << leaf)))
}

/// Joins `s` (probe) with `right` (the rows in `table`).
#[allow(clippy::too_many_arguments)]
fn probe(
    s: Rel,
    right: &Rel,
    table: &HashTable,
    keys: &[Expr],
    residual: Option<&Expr>,
    kind: JoinKind,
    workers: usize,
    opts: &QueryOptions,
) -> Result<Rel> {
    let out = s.beside(right);
    let residual = residual.map(|r| out.local(r)).transpose()?;
    let per_task = if keys.is_empty() {
        (CROSS_PAIRS / table.rows().max(1)).max(1)
    } else {
        probe_rows(opts, workers)
    };
    let probe_schema = s.batches.first().map(|b| b.schema());
    let full = kind == JoinKind::Full;
    let keep = kind != JoinKind::Inner;
    let build_rows = table.rows();
    let marks = Marks::new(if full { build_rows } else { 0 });
    let sink = Sink::new(opts)?;
    let tasks: Vec<(u64, Piece)> = (0..).zip(s.pieces(per_task)).collect();
    let last = tasks.len() as u64;
    let probe_rows = |b: &RecordBatch| {
        let k = eval_keys(keys, b, Some(table.key_types()))?;
        let mut scratch = opts.reserve("hash join probe", 0)?;
        table.join_batch(
            b,
            &k,
            residual.as_ref(),
            keep,
            full.then_some(&marks),
            &mut scratch,
        )
    };
    parallel(tasks, workers, opts, |(i, piece)| {
        sink.put_split(i, piece.load()?, &probe_rows)
    })?;
    let matched = marks.to_vec(if full { build_rows } else { 0 });
    let ps =
        probe_schema.ok_or_else(|| Error::Internal("join: probe side without schema".into()))?;
    if full {
        sink.put(last, table.unmatched(&ps, &matched)?)?;
    }
    let schema = joined_schema(&ps, &table.batch.schema());
    Ok(Rel::made(sink.finish()?, Some(schema), out.cols, out.items))
}
