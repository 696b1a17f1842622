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
//! For: [`super::run`]'s last step and [`crate::query::scan::Inputs`]
//! that applies it. Not for: the joins before the last (they are made
//! whole: the next join's order depends on their rows).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

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
    /// The step in EXPLAIN ANALYZE's profile, filled in when dropped.
    step: Option<usize>,
    /// The probe side's rows, counted until the pipeline is done.
    _probe_rows: Option<Reservation>,
}

/// What the description of a pipelined join needs.
pub(super) struct Spec {
    pub table: Arc<HashTable>,
    pub keys: Vec<Expr>,
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
        let step = opts
            .profile
            .as_ref()
            .map(|p| p.placeholder(spec.name, Some(rows_in)));
        let marks = spec.tail.then(|| Marks::new(spec.table.rows()));
        let batches = std::mem::take(&mut probe.batches);
        Ok((
            Pipeline {
                table: spec.table,
                keys: spec.keys,
                residual: spec.residual,
                keep_probe: spec.keep_probe,
                marks,
                then: spec.then,
                pos,
                probe_schema,
                opts: opts.clone(),
                rows_out: Arc::new(AtomicU64::new(0)),
                nanos: AtomicU64::new(0),
                step,
                _probe_rows: probe.mem.take(),
            },
            batches,
        ))
    }

    /// The group's rows of one morsel of the probe side.
    pub fn apply(&self, b: &RecordBatch) -> Result<RecordBatch> {
        let at = Instant::now();
        let k = eval_keys(&self.keys, b, Some(self.table.key_types()))?;
        let mut scratch = self.opts.reserve("hash join probe", 0)?;
        let j = self.table.join_batch(
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
        let j = match &self.then {
            None => j,
            Some(c) => {
                let mask = c.eval(&j)?.into_array(j.num_rows())?;
                let mask = crate::query::hash_join::truth(&mask)?;
                arrow_select::filter::filter_record_batch(&j, &mask).map_err(exec_err)?
            }
        };
        output_batch(&j, &self.pos)
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

impl Drop for Pipeline {
    fn drop(&mut self) {
        if let (Some(p), Some(i)) = (&self.opts.profile, self.step) {
            p.fill(
                i,
                self.rows_out.load(Ordering::Relaxed),
                Duration::from_nanos(self.nanos.load(Ordering::Relaxed)),
            );
        }
    }
}
