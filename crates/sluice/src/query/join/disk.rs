//! A join's rows on disk.
//!
//! The rows a join step makes (and a FROM item's rows) are kept in
//! memory while the query's memory limit allows. Past it they go to a
//! run in the query's spill directory (see [`crate::query::spill`]), one
//! frame a batch, and the relation holds where each frame is: its
//! [`Piece`]s. The next step reads a piece back when a worker takes it
//! ([`Piece::load`]), and the group's last rows are read by the workers
//! of the operator above ([`crate::query::scan::Later`]). So a join's
//! rows in memory are the morsels in flight, not the relation.
//!
//! For: [`super::Rel`]'s rows past the limit, the grace join's
//! partitions ([`super::grace`]). Not for: hash tables (a build side is
//! in memory while it is probed; the grace join splits one that does
//! not fit).

use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::error::{Error, Result};
use crate::query::QueryOptions;
use crate::query::memory::{Reservation, batch_bytes};
use crate::query::scan::Later;
use crate::query::spill::{Run, RunWriter};

/// What the rows of a join count as, in memory and on disk.
pub(super) const OPERATOR: &str = "join (rows joined so far)";

/// Some rows of a relation: a batch in memory, or frame `.1` of a run.
#[derive(Clone)]
pub(crate) enum Piece {
    Mem(RecordBatch),
    Disk(Arc<Run>, usize),
}

impl Piece {
    pub fn rows(&self) -> usize {
        match self {
            Piece::Mem(b) => b.num_rows(),
            Piece::Disk(r, i) => r.frames()[*i].rows as usize,
        }
    }

    /// Bytes its rows take in memory (on disk: its frame's, about the
    /// same).
    pub fn bytes(&self) -> u64 {
        match self {
            Piece::Mem(b) => batch_bytes(b),
            Piece::Disk(r, i) => r.frames()[*i].len,
        }
    }

    /// Its rows, read back (checked) if they are on disk.
    pub fn load(&self) -> Result<RecordBatch> {
        match self {
            Piece::Mem(b) => Ok(b.clone()),
            Piece::Disk(r, i) => r.read(&r.frames()[*i]),
        }
    }

    /// Its rows for a scan to read when a worker first needs them,
    /// through `then` (the group's output columns).
    pub fn later(
        self,
        then: Option<Arc<dyn Fn(&RecordBatch) -> Result<RecordBatch> + Send + Sync>>,
    ) -> Later {
        Later {
            rows: self.rows(),
            load: Box::new(move || {
                let b = self.load()?;
                match &then {
                    Some(f) => f(&b),
                    None => Ok(b),
                }
            }),
        }
    }
}

/// The frames of partition `part` of `run`, as pieces.
pub(super) fn part_pieces(run: &Arc<Run>, part: u32) -> Vec<Piece> {
    run.frames()
        .iter()
        .enumerate()
        .filter(|(_, f)| f.part == part)
        .map(|(i, _)| Piece::Disk(run.clone(), i))
        .collect()
}

/// Where the rows a step makes go, from every worker: kept in memory
/// while they and all else held stay within half the query's limit (see
/// [`crate::query::memory::Memory::keeps_rows`]), else written to a run. They come out
/// in the order of the numbers they were put with.
pub(super) struct Sink<'o> {
    opts: &'o QueryOptions,
    /// Every batch to disk (the test knob, see
    /// [`QueryOptions::join_rows_on_disk`]).
    to_disk: bool,
    held: Mutex<Held>,
}

struct Held {
    parts: Vec<((u64, u32), Stored)>,
    mem: Reservation,
    writer: Option<RunWriter>,
    schema: Option<SchemaRef>,
}

enum Stored {
    Mem(RecordBatch),
    Frame(usize),
}

/// What a sink made: the batches in memory (counted in `mem`) and the
/// pieces on disk, each in order; `schema` that of the rows, if any
/// batch was put.
pub(super) struct Made {
    pub batches: Vec<RecordBatch>,
    pub disk: Vec<Piece>,
    pub mem: Reservation,
    pub schema: Option<SchemaRef>,
}

impl<'o> Sink<'o> {
    /// Puts what `f` makes of `rows` as the `n`-th batch; when that does
    /// not fit the memory limit (a key of many rows met by many), `rows`
    /// is halved and each half's made and put on its own, down to one
    /// row.
    pub fn put_split(
        &self,
        n: u64,
        rows: RecordBatch,
        f: &(dyn Fn(&RecordBatch) -> Result<RecordBatch> + Sync),
    ) -> Result<()> {
        self.split_from(n, 0, rows, f)
    }

    fn split_from(
        &self,
        n: u64,
        off: u32,
        rows: RecordBatch,
        f: &(dyn Fn(&RecordBatch) -> Result<RecordBatch> + Sync),
    ) -> Result<()> {
        match f(&rows) {
            Err(Error::MemoryLimit { .. }) if rows.num_rows() > 1 && self.opts.spill.is_some() => {
                let half = rows.num_rows() / 2;
                let rest = rows.num_rows() - half;
                self.split_from(n, off, rows.slice(0, half), f)?;
                self.split_from(n, off + half as u32, rows.slice(half, rest), f)
            }
            r => self.put_at(n, off, r?),
        }
    }

    pub fn new(opts: &'o QueryOptions) -> Result<Sink<'o>> {
        Ok(Sink {
            opts,
            to_disk: opts.join_rows_on_disk && opts.spill.is_some(),
            held: Mutex::new(Held {
                parts: Vec::new(),
                mem: opts.reserve(OPERATOR, 0)?,
                writer: None,
                schema: None,
            }),
        })
    }

    /// A sink whose rows all go to disk (when the query has a spill
    /// directory).
    pub fn on_disk(opts: &'o QueryOptions) -> Result<Sink<'o>> {
        let mut s = Sink::new(opts)?;
        s.to_disk = opts.spill.is_some();
        Ok(s)
    }

    /// Puts `b` as the `n`-th batch.
    pub fn put(&self, n: u64, b: RecordBatch) -> Result<()> {
        self.put_at(n, 0, b)
    }

    /// Puts `b` as the rows from `off` on of the `n`-th batch.
    pub fn put_at(&self, n: u64, off: u32, b: RecordBatch) -> Result<()> {
        let lock = || {
            self.held
                .lock()
                .map_err(|_| Error::Internal("join sink lock poisoned".into()))
        };
        {
            let mut h = lock()?;
            if h.schema.is_none() {
                h.schema = Some(b.schema());
            }
            if b.num_rows() == 0 {
                return Ok(());
            }
            let bytes = batch_bytes(&b);
            let keep = match (&self.opts.memory, &self.opts.spill) {
                (Some(m), Some(_)) => m.keeps_rows(bytes),
                _ => true,
            };
            if !self.to_disk && keep {
                match h.mem.grow(bytes) {
                    Ok(()) => {
                        h.parts.push(((n, off), Stored::Mem(b)));
                        return Ok(());
                    }
                    Err(Error::MemoryLimit { .. }) if self.opts.spill.is_some() => {}
                    Err(e) => return Err(e),
                }
            }
        }
        // To disk: encoded outside the lock (the other workers go on),
        // appended under it.
        let frame = RunWriter::encode(&b)?;
        drop(b);
        let mut h = lock()?;
        let w = match &mut h.writer {
            Some(w) => w,
            None => {
                let spill = self
                    .opts
                    .spill
                    .as_ref()
                    .ok_or_else(|| Error::Internal("join: spilling without a spill".into()))?;
                h.writer
                    .insert(spill.writer(OPERATOR, self.opts.profile.clone())?)
            }
        };
        let i = w.frame_count();
        w.write_encoded(0, frame)?;
        h.parts.push(((n, off), Stored::Frame(i)));
        Ok(())
    }

    pub fn finish(self) -> Result<Made> {
        let mut h = self
            .held
            .into_inner()
            .map_err(|_| Error::Internal("join sink lock poisoned".into()))?;
        h.parts.sort_by_key(|p| p.0);
        let run = h.writer.map(RunWriter::finish).transpose()?.map(Arc::new);
        let mut batches = Vec::new();
        let mut disk = Vec::new();
        for (_, s) in h.parts {
            match (s, &run) {
                (Stored::Mem(b), _) => batches.push(b),
                (Stored::Frame(i), Some(r)) => disk.push(Piece::Disk(r.clone(), i)),
                (Stored::Frame(_), None) => {
                    return Err(Error::Internal("join: a frame without its run".into()));
                }
            }
        }
        Ok(Made {
            batches,
            disk,
            mem: h.mem,
            schema: h.schema,
        })
    }
}

/// Where a FROM item's rows go past the memory limit while its plan
/// runs (the scan's result is then the item's rows in memory, and
/// these): frames of one run, each the rows of one morsel, as the join
/// holds its rows ([`super::plain`]). Made by [`super::run`] for the
/// item's plan alone: a plan run under it (a subquery, a set
/// operation's branch) keeps its rows.
pub struct ResultSpill {
    /// The plan whose rows it takes (by address).
    plan: usize,
    /// The same plan with its scalar subqueries' values in it, made when
    /// it runs (see [`ResultSpill::alias`]); 0 before.
    resolved: std::sync::atomic::AtomicUsize,
    /// Every batch to disk (the test knob).
    pub(crate) always: bool,
    /// The rows are a query's answer, whose order counts: once a row has
    /// gone to disk every later row follows it there (see
    /// [`ResultSpill::answer`]).
    pub(crate) ordered: bool,
    /// What its rows count as (EXPLAIN ANALYZE, errors).
    operator: &'static str,
    writer: Mutex<Option<RunWriter>>,
    /// (morsel, frame) of each frame written.
    frames: Mutex<Vec<(usize, usize)>>,
    /// OFFSET and LIMIT left to apply to an answer's frames (a plan
    /// without ORDER BY wrote its rows uncut).
    cut: Mutex<Option<(usize, Option<usize>)>>,
    rows: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for ResultSpill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResultSpill")
    }
}

/// The rows of `plan`, run by `run` with the options it is given: where
/// `spills` (and the query may spill) those past half the limit go to
/// disk as they are made, for `operator` (every row, with `always`).
/// Its rows in memory (counted for `operator` in the reservation given
/// back; when they find no room there, written to disk too), then those
/// on disk; a result that still does not fit fails with `operator`'s
/// memory error.
pub(crate) fn rows_of(
    plan: &crate::query::plan::Plan,
    opts: &QueryOptions,
    spills: bool,
    always: bool,
    operator: &'static str,
    run: impl FnOnce(&QueryOptions) -> Result<Vec<RecordBatch>>,
) -> Result<(Vec<RecordBatch>, Vec<Piece>, Reservation)> {
    let to_disk = (spills && opts.spill.is_some())
        .then(|| Arc::new(ResultSpill::for_operator(plan, always, operator)));
    let inner = QueryOptions {
        result_spill: to_disk.clone(),
        ..opts.clone()
    };
    let batches = run(&inner).map_err(|e| match e {
        Error::MemoryLimit {
            operator: "scan result",
            wanted,
            used,
            limit,
            others,
        } => Error::MemoryLimit {
            operator,
            wanted,
            used,
            limit,
            others,
        },
        e => e,
    })?;
    // The rows kept in memory stay counted while the operator holds
    // them (the run's own count ended with it).
    let (batches, held) = match (opts.reserve(operator, batch_bytes_of(&batches)), &to_disk) {
        (Ok(held), _) => (batches, held),
        (Err(Error::MemoryLimit { .. }), Some(t)) => {
            for b in batches {
                t.write(opts, usize::MAX, b)?;
            }
            (Vec::new(), opts.reserve(operator, 0)?)
        }
        (Err(e), _) => return Err(e),
    };
    let on_disk = match &to_disk {
        Some(t) => t.finish()?,
        None => Vec::new(),
    };
    Ok((batches, on_disk, held))
}

fn batch_bytes_of(batches: &[RecordBatch]) -> u64 {
    batches.iter().map(batch_bytes).sum()
}

impl ResultSpill {
    pub(crate) fn new(plan: &crate::query::plan::Plan, always: bool) -> ResultSpill {
        Self::for_operator(plan, always, OPERATOR)
    }

    /// One whose rows are `operator`'s input (a window's).
    pub(crate) fn for_operator(
        plan: &crate::query::plan::Plan,
        always: bool,
        operator: &'static str,
    ) -> ResultSpill {
        ResultSpill {
            plan: plan as *const _ as usize,
            resolved: std::sync::atomic::AtomicUsize::new(0),
            always,
            ordered: false,
            operator,
            writer: Mutex::new(None),
            frames: Mutex::new(Vec::new()),
            cut: Mutex::new(None),
            rows: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Where a query's answer goes past half the memory limit (the
    /// caller reads it back a frame at a time: see
    /// [`crate::query::QueryResult::later`]). Its frames come back in
    /// the order of the morsels that made them, and a plan that wrote
    /// some writes the rest of its rows too (in memory they would come
    /// first): the answer's order is kept.
    pub(crate) fn answer(plan: &crate::query::plan::Plan) -> ResultSpill {
        ResultSpill {
            ordered: true,
            ..Self::for_operator(plan, false, "query result")
        }
    }

    /// Whether rows of an answer have gone to disk: the rest must follow.
    pub(crate) fn holds_answer(&self) -> bool {
        self.ordered && self.writer.lock().map(|w| w.is_some()).unwrap_or(true)
    }

    /// Asks that the answer's frames be cut to `limit` rows after the
    /// first `offset`, as they are read back.
    pub(crate) fn cut(&self, offset: usize, limit: Option<usize>) {
        if let Ok(mut c) = self.cut.lock() {
            *c = Some((offset, limit));
        }
    }

    /// The cut asked for, if any.
    pub(crate) fn cut_asked(&self) -> Option<(usize, Option<usize>)> {
        self.cut.lock().ok().and_then(|c| *c)
    }

    /// Whether it takes `plan`'s rows.
    pub(crate) fn is_for(&self, plan: &crate::query::plan::Plan) -> bool {
        let at = plan as *const _ as usize;
        self.plan == at || self.resolved.load(std::sync::atomic::Ordering::Relaxed) == at
    }

    /// `to` is `from` with its scalar subqueries' values in it, run in
    /// its place: when this takes `from`'s rows it takes `to`'s. (A FROM
    /// item such as `c_acctbal > (SELECT avg(…) …)` runs as such a copy;
    /// found by its address alone, its rows were held whole.)
    pub(crate) fn alias(&self, from: &crate::query::plan::Plan, to: &crate::query::plan::Plan) {
        if self.is_for(from) {
            self.resolved.store(
                to as *const _ as usize,
                std::sync::atomic::Ordering::Relaxed,
            );
        }
    }

    /// Writes the rows of morsel `morsel`.
    pub(crate) fn write(&self, opts: &QueryOptions, morsel: usize, b: RecordBatch) -> Result<()> {
        let b = super::plain(b)?;
        let spill = opts
            .spill
            .as_ref()
            .ok_or_else(|| Error::Internal("join: spilling without a spill".into()))?;
        let mut w = self
            .writer
            .lock()
            .map_err(|_| Error::Internal("join result lock poisoned".into()))?;
        let w = match &mut *w {
            Some(w) => w,
            None => w.insert(spill.writer(self.operator, opts.profile.clone())?),
        };
        let i = w.frame_count();
        w.write(0, &b)?;
        self.rows
            .fetch_add(b.num_rows() as u64, std::sync::atomic::Ordering::Relaxed);
        self.frames
            .lock()
            .map_err(|_| Error::Internal("join result lock poisoned".into()))?
            .push((morsel, i));
        Ok(())
    }

    /// Rows written so far.
    pub(crate) fn rows(&self) -> u64 {
        self.rows.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The pieces written, in the morsels' order.
    pub(crate) fn finish(&self) -> Result<Vec<Piece>> {
        let poisoned = || Error::Internal("join result lock poisoned".into());
        let w = self.writer.lock().map_err(|_| poisoned())?.take();
        let Some(run) = w.map(RunWriter::finish).transpose()?.map(Arc::new) else {
            return Ok(Vec::new());
        };
        let mut frames = std::mem::take(&mut *self.frames.lock().map_err(|_| poisoned())?);
        frames.sort_unstable();
        Ok(frames
            .into_iter()
            .map(|(_, i)| Piece::Disk(run.clone(), i))
            .collect())
    }
}
