//! Keys: the uniqueness check of a keyed load and the runs it builds.
//!
//! Useful for: how a keyed table's keys are gathered per shard while
//! batches are written, written as sorted runs when they outgrow their
//! memory budget or the group ends ([`crate::index::build_run`], which
//! checks them against the table's runs and this load's earlier ones),
//! duplicates skipped (`OnDuplicate::Skip`) or reported naming both rows.
//! Not useful for: the run format or lookups (`index`), or extracting and
//! sorting a batch's keys (the workers do, `workers`).

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::RecordBatch;

use crate::batch::ColumnStats;
use crate::error::{Error, Result};
use crate::index::{Built, KeyBatch, RowId};
use crate::store::{Database, RunMeta};

use super::OnDuplicate;
use super::table::TableWriter;

/// The runs of [`open_runs`]: those already open, and a thread opening the
/// others.
pub(super) type OpeningRuns = (
    Vec<Option<Arc<crate::index::Run>>>,
    std::thread::JoinHandle<Result<Vec<Arc<crate::index::Run>>>>,
);

/// Starts opening `runs` (those the database has not opened before) on a
/// thread of its own; `None` when there are none.
pub(super) fn open_runs(db: &Database, runs: &[RunMeta]) -> Result<Option<OpeningRuns>> {
    if runs.is_empty() {
        return Ok(None);
    }
    let known: Vec<Option<Arc<crate::index::Run>>> =
        runs.iter().map(|r| db.cached_run(r)).collect();
    let todo: Vec<RunMeta> = runs
        .iter()
        .zip(&known)
        .filter(|(_, k)| k.is_none())
        .map(|(r, _)| r.clone())
        .collect();
    let dir = db.dir().to_path_buf();
    let handle = std::thread::Builder::new()
        .name("sluice-open-runs".into())
        .spawn(move || {
            todo.iter()
                .map(|r| crate::store::open_run(&dir, r))
                .collect()
        })
        .map_err(|e| Error::Internal(format!("cannot start a thread: {e}")))?;
    Ok(Some((known, handle)))
}

/// The keys of one shard in a keyed load.
pub(super) struct Keys {
    /// Row id of the load's first row in the shard (the shard's rows
    /// before it).
    pub(super) base_row: RowId,
    /// Sorted keys of the batches written, with their first row's id.
    pub(super) batches: Vec<(RowId, KeyBatch)>,
    /// Memory `batches` holds.
    pub(super) bytes: usize,
    /// The shard's runs before the load (the workers check keys against
    /// them; the writer too, with `OnDuplicate::Skip`).
    pub(super) table_runs: Vec<Arc<crate::index::Run>>,
    /// Runs this load wrote before (when its keys outgrew the budget):
    /// later runs are checked against them.
    pub(super) load_runs: Vec<Arc<crate::index::Run>>,
    /// Runs this load wrote.
    pub(super) runs: Vec<RunMeta>,
    /// With `OnDuplicate::Skip`: the keys of this load kept so far.
    pub(super) seen: std::collections::HashSet<Box<[u8]>>,
    /// Sharded tables, for messages: per batch written, (its first row in
    /// the shard, counted from `base_row`; its first row in the load; the
    /// load row of each of its rows after the first, relative to that).
    pub(super) origin: Origin,
}

impl Keys {
    pub(super) fn lookup_older(&self, key: &[u8]) -> Result<Option<RowId>> {
        let h = crate::index::key_hash(key);
        for r in self.table_runs.iter().chain(&self.load_runs) {
            if let Some(id) = r.get_hashed(key, h)? {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    /// The load row of row `local` of the shard (counted from
    /// `base_row`).
    pub(super) fn load_row(&self, local: u64) -> u64 {
        origin_row(&self.origin, local)
    }
}

/// Where the rows of one shard (or bucket) came from: per batch written,
/// (its first row in the shard, its first row in the load, the load row
/// of each of its rows relative to that; empty: consecutive).
pub(crate) type Origin = Vec<(u64, u64, Arc<Vec<u32>>)>;

/// The load row of row `local` of a shard whose batches came from
/// `origin` (rows before its first entry are load rows as they are).
pub(crate) fn origin_row(origin: &[(u64, u64, Arc<Vec<u32>>)], local: u64) -> u64 {
    let i = origin.partition_point(|o| o.0 <= local);
    match i.checked_sub(1).map(|i| &origin[i]) {
        Some((first, load_first, rows)) => {
            let off = (local - first) as usize;
            load_first + rows.get(off).copied().unwrap_or(off as u32) as u64
        }
        None => local,
    }
}

/// A row of the table described for a message: its values.
pub(super) fn describe_existing(db: &Database, table: &str, id: RowId) -> Option<String> {
    let t = db.keyed(table).ok()?;
    let row = t.row(id).ok()?;
    let values: Vec<String> = row
        .columns()
        .iter()
        .map(|a| crate::batch::format_value(a.as_ref(), 0).unwrap_or_else(|| "NULL".into()))
        .collect();
    Some(format!("a row loaded earlier ({})", values.join(", ")))
}

/// A run to build from a shard's gathered keys.
pub(super) struct KeyJob {
    pub(super) name: String,
    pub(super) path: PathBuf,
    pub(super) batches: Vec<(RowId, KeyBatch)>,
    /// The shard's runs before the load, to check the keys against (none
    /// with `OnDuplicate::Skip`, which looked each key up as it came).
    pub(super) table: Vec<Arc<crate::index::Run>>,
    /// This load's earlier runs of the shard (a key there is a duplicate).
    pub(super) older: Vec<Arc<crate::index::Run>>,
}

impl TableWriter<'_> {
    /// Drops the rows whose key is already in the shard, in this load, or
    /// earlier in the batch; returns the batch, its stats and keys, and
    /// the block rows of the rows kept.
    pub(super) fn skip_duplicates(
        &mut self,
        s: usize,
        batch: RecordBatch,
        stats: Vec<ColumnStats>,
        kb: KeyBatch,
        rows: Vec<u32>,
    ) -> Result<(RecordBatch, Vec<ColumnStats>, KeyBatch, Vec<u32>)> {
        self.table_runs_ready()?;
        let n = batch.num_rows();
        let mut keep = vec![true; n];
        let mut dropped = 0usize;
        let mut prev: Option<&[u8]> = None;
        let keys = &mut self.outs[s].keys;
        for i in 0..kb.len() {
            let r = kb.sorted_row(i);
            let key = kb.sorted_key(i);
            let dup =
                prev == Some(key) || keys.seen.contains(key) || keys.lookup_older(key)?.is_some();
            if dup {
                keep[r as usize] = false;
                dropped += 1;
            } else {
                prev = Some(key);
            }
        }
        for i in 0..kb.len() {
            if keep[kb.sorted_row(i) as usize] {
                keys.seen.insert(kb.sorted_key(i).into());
            }
        }
        if dropped == 0 {
            return Ok((batch, stats, kb, rows));
        }
        self.duplicates += dropped as u64;
        let rows = if rows.is_empty() {
            rows
        } else {
            rows.iter()
                .zip(&keep)
                .filter(|(_, k)| **k)
                .map(|(r, _)| *r)
                .collect()
        };
        let mask = arrow_array::BooleanArray::from(keep);
        let plain = crate::batch::dict::decode_batch(&batch, &[])?;
        let kept = arrow_select::filter::filter_record_batch(&plain, &mask)?;
        let stats = kept
            .columns()
            .iter()
            .map(|a| crate::batch::column_stats(a.as_ref()))
            .collect();
        let k = self.key_col.unwrap_or(0);
        let kb = KeyBatch::from_array(kept.column(k).as_ref())?;
        Ok((crate::batch::dict::encode_batch(kept)?, stats, kb, rows))
    }

    /// Writes the keys shard `s` gathered so far as a run, checked against
    /// the shard's runs and this load's earlier ones.
    pub(super) fn flush_keys(&mut self, s: usize) -> Result<()> {
        self.table_runs_ready()?;
        let Some(job) = self.key_job(s) else {
            return Ok(());
        };
        let built = crate::index::build_run(
            &job.path,
            &job.batches,
            &job.table,
            &job.older,
            self.workers,
        );
        self.keys_built(s, job, built)
    }

    /// Waits for the table's runs to be open ([`open_runs`]) and hands
    /// them to their shards.
    pub(super) fn table_runs_ready(&mut self) -> Result<()> {
        let Some((mut known, handle)) = self.opening.take() else {
            return Ok(());
        };
        let opened = handle.join().unwrap_or_else(|_| {
            Err(Error::Internal(
                "the thread opening the key index panicked".into(),
            ))
        })?;
        let mut opened = opened.into_iter();
        for (meta, k) in self.table_runs.iter().zip(&mut known) {
            let run = match k.take() {
                Some(r) => r,
                None => opened
                    .next()
                    .ok_or_else(|| Error::Internal("a run was not opened".into()))?,
            };
            self.outs[meta.shard as usize].keys.table_runs.push(run);
        }
        Ok(())
    }

    /// The table's runs this load opened, to keep in the database handle.
    pub(super) fn opened_runs(&self) -> Vec<(RunMeta, Arc<crate::index::Run>)> {
        let mut next = vec![0usize; self.outs.len()];
        self.table_runs
            .iter()
            .filter_map(|m| {
                let i = &mut next[m.shard as usize];
                let r = self.outs[m.shard as usize].keys.table_runs.get(*i)?;
                *i += 1;
                Some((m.clone(), r.clone()))
            })
            .collect()
    }

    /// Takes shard `s`'s gathered keys for a run (none: `None`).
    pub(super) fn key_job(&mut self, s: usize) -> Option<KeyJob> {
        let o = &mut self.outs[s];
        if o.keys.batches.is_empty() {
            return None;
        }
        let name = format!("{:06}-{:05}.keys", self.version, o.keys.runs.len());
        let path = o.abs_dir.join(&name);
        self.created.push(path.clone());
        o.keys.bytes = 0;
        Some(KeyJob {
            name,
            path,
            batches: std::mem::take(&mut o.keys.batches),
            table: match self.on_duplicate {
                OnDuplicate::Error => o.keys.table_runs.clone(),
                OnDuplicate::Skip => Vec::new(),
            },
            older: o.keys.load_runs.clone(),
        })
    }

    /// Records the run built for shard `s`, or reports its duplicate.
    pub(super) fn keys_built(&mut self, s: usize, job: KeyJob, built: Result<Built>) -> Result<()> {
        let KeyJob { name, path, .. } = job;
        let o = &mut self.outs[s];
        match built? {
            Built::Run { entries, bytes } => {
                o.keys.runs.push(RunMeta {
                    file: format!("{}/{name}", o.rel_dir),
                    entries,
                    bytes,
                    shard: o.shard,
                });
                // Keys written to a run are found there from now on: the
                // set of this load's keys (skip mode) starts again empty.
                o.keys.seen.clear();
                // Later runs of this load are checked against this one.
                o.keys
                    .load_runs
                    .push(Arc::new(crate::index::Run::open(&path)?));
                Ok(())
            }
            Built::Duplicate(c) => {
                let key_type = self
                    .key_col
                    .map(|k| self.schema.columns[k].data_type)
                    .unwrap_or(crate::batch::DataType::Text);
                let o = &self.outs[s];
                let base = o.keys.base_row;
                let first = if c.first < base {
                    self.conflict_existing = Some(crate::store::keyed::tag_row(o.shard, c.first));
                    format!("row {} already in the table", c.first)
                } else {
                    self.describe_row(o.keys.load_row(c.first - base))
                };
                Err(Error::DuplicateKey {
                    table: self.table.clone(),
                    key: crate::index::display_key(key_type, &c.key),
                    first,
                    second: self.describe_row(o.keys.load_row(c.second - base)),
                })
            }
        }
    }
}
