//! The table store as a sink: segments, key-index runs, manifest commit.
//!
//! Useful for: how a load's rows become a table: each shard's rows
//! appended to its segment files (small batches gathered first, a segment
//! closed at [`SEGMENT_TARGET_BYTES`]), keys gathered and written as
//! sorted runs checked for duplicates (`keys`), the load journal, and the
//! commit: files synced, then one new manifest naming them. Until that
//! manifest is published a reader sees none of the group; an abort
//! deletes every file the group made.
//! Not useful for: the file formats (`store`, FORMAT.md), or reading and
//! parsing (the rest of `load`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;

use crate::batch::{ColumnStats, Schema};
use crate::error::{Error, Result};
use crate::exec::worker_count;
use crate::index::{Built, RowId};
use crate::source::Input;
use crate::store::manifest::Sharding;
use crate::store::segment::SegmentWriter;
use crate::store::{Compression, Database, RunMeta, TableMeta};

use super::journal::write_journal;
use super::keys::{KeyJob, Keys, OpeningRuns, describe_existing, open_runs};
use super::options::checked_options;
use super::sink::{
    Committed, GroupFiles, Layout, Piece, Provenance, Route, Rows, Sink, describe_row,
};
use super::{LoadOptions, OnDuplicate};

/// A segment is closed once it reaches this many bytes: large enough that
/// the per-file cost (footer, fsync, manifest entry) is negligible, small
/// enough that a min/max zone map still prunes a time-ordered column well.
pub const SEGMENT_TARGET_BYTES: u64 = 128 << 20;

/// Batches with fewer rows are gathered until they hold `COALESCE_ROWS`.
const SMALL_BATCH_ROWS: usize = 8192;
const COALESCE_ROWS: usize = 65536;
/// ... or until their buffers take this much memory.
const COALESCE_BYTES: usize = 2 << 20;

/// Creates the shard directories of a table's first load: inside the
/// table's directory, or on another disk with a link to it from there.
/// Returns what it created (removed again if the load fails). A committed
/// table's shard directories are never created again: one that is missing
/// is an error ([`Error::ShardMissing`]: a disk not mounted).
pub(super) fn create_shard_dirs(
    db: &Database,
    table: &str,
    sharding: &Sharding,
) -> Result<Vec<PathBuf>> {
    if db.table(table).is_some() {
        db.check_shard_dirs(table)?;
        return Ok(Vec::new());
    }
    let mut made = Vec::new();
    for s in 0..sharding.count {
        let (_, link) = db.shard_dir(table, s, sharding.count);
        if link.exists() || link.is_symlink() {
            continue;
        }
        if sharding.paths.is_empty() {
            std::fs::create_dir_all(&link).map_err(|e| Error::io(&link, e))?;
            made.push(link);
            continue;
        }
        let base = Path::new(&sharding.paths[s as usize % sharding.paths.len()]);
        // A name no other database or table uses.
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let target = base.join(format!(
            "sluice-{table}-{}-{:x}-{nonce:x}",
            crate::store::shard_dir_name(s),
            std::process::id()
        ));
        std::fs::create_dir_all(&target).map_err(|e| Error::io(&target, e))?;
        made.push(target.clone());
        std::os::unix::fs::symlink(&target, &link).map_err(|e| Error::io(&link, e))?;
        made.push(link);
    }
    Ok(made)
}

/// What the writer keeps per shard: the segment being written, the
/// segments and runs written, and the shard's keys.
pub(super) struct ShardOut {
    pub(super) shard: u32,
    pub(super) rel_dir: String,
    pub(super) abs_dir: PathBuf,
    pub(super) current: Option<SegmentWriter>,
    pub(super) done: Vec<crate::store::SegmentMeta>,
    /// Columns stored plain for the rest of this load (see `write_batch`).
    pub(super) plain: Vec<bool>,
    /// Small batches waiting to be written as one (see `handle`).
    pub(super) pending: Vec<(RecordBatch, Vec<ColumnStats>)>,
    pub(super) pending_rows: usize,
    pub(super) pending_bytes: usize,
    /// Rows this load wrote to the shard.
    pub(super) rows: u64,
    pub(super) keys: Keys,
}

/// The table store as the end of a load: one [`TableWriter`] a group.
pub struct TableSink<'a> {
    db: &'a mut Database,
    table: String,
    group: Option<TableWriter<'a>>,
}

impl<'a> TableSink<'a> {
    /// A sink into `table` of `db` (created by the first commit when it
    /// does not exist).
    pub fn new(db: &'a mut Database, table: &str) -> Self {
        TableSink {
            db,
            table: table.to_string(),
            group: None,
        }
    }

    fn group(&mut self) -> Result<&mut TableWriter<'a>> {
        self.group
            .as_mut()
            .ok_or_else(|| Error::Internal("rows for a table sink outside a group".into()))
    }

    /// A duplicate key of a row loaded earlier names that row's values.
    fn described(&self, e: Error) -> Error {
        let existing = self.group.as_ref().and_then(|g| g.conflict_existing);
        match (e, existing) {
            (
                Error::DuplicateKey {
                    table,
                    key,
                    first,
                    second,
                },
                Some(id),
            ) => Error::DuplicateKey {
                first: describe_existing(self.db, &self.table, id).unwrap_or(first),
                table,
                key,
                second,
            },
            (e, _) => e,
        }
    }

    /// Keeps the table's runs the group opened in the database handle.
    fn remember_runs(&self) {
        if let Some(g) = &self.group {
            for (meta, run) in g.opened_runs() {
                self.db.remember_run(&meta, run);
            }
        }
    }
}

impl<'a> Sink<'a> for TableSink<'a> {
    fn begin(&mut self, opts: &LoadOptions, inputs: &'a [Input]) -> Result<Layout> {
        let (writer, layout) = TableWriter::new(self.db, &self.table, opts, inputs)?;
        self.group = Some(writer);
        Ok(layout)
    }

    fn write(&mut self, rows: Rows<'_>) -> Result<u64> {
        let written = self.group()?.write(rows);
        written.map_err(|e| self.described(e))
    }

    fn finish(&mut self) -> Result<()> {
        let finished = self.group()?.finish();
        self.remember_runs();
        finished.map_err(|e| self.described(e))
    }

    fn commit(&mut self, files: &GroupFiles<'_>) -> Result<Committed> {
        let mut g = self
            .group
            .take()
            .ok_or_else(|| Error::Internal("a commit outside a group".into()))?;
        g.commit(self.db, files)
    }

    fn abort(&mut self) {
        self.remember_runs();
        if let Some(mut g) = self.group.take() {
            g.discard();
        }
    }
}

/// Writes one group of a load into the table: each batch into the
/// segments of its shard.
pub(super) struct TableWriter<'a> {
    pub(super) inputs: &'a [Input],
    pub(super) table: String,
    pub(super) schema: Schema,
    pub(super) key_col: Option<usize>,
    route: Route,
    pub(super) on_duplicate: OnDuplicate,
    /// The table as the group found it (`None`: this group creates it).
    existing: Option<TableMeta>,
    compression: Compression,
    /// Segments written past the page cache ([`LoadOptions::page_cache`]).
    direct: bool,
    sharding: Option<Sharding>,
    arrow_schema: arrow_schema::SchemaRef,
    /// The table's directory (the load journal goes there).
    rel_dir: String,
    abs_dir: PathBuf,
    pub(super) version: u64,
    /// Compute workers (the key index is merged with as many threads).
    pub(super) workers: usize,
    pub(super) outs: Vec<ShardOut>,
    /// Round-robin tables: rows of the table before this load (the next
    /// row goes to shard `(before + rows) % shards`).
    rows_before: u64,
    /// Files and directories this group made (deleted by a discard).
    pub(super) created: Vec<PathBuf>,
    /// Bytes of sorted keys (all shards) held before runs are written.
    key_budget: usize,
    /// Where the rows written so far came from (keyed tables, for the
    /// message about a duplicate found at the end).
    pub(super) provenance: Vec<Provenance>,
    pub(super) duplicates: u64,
    /// Segments the commit publishes.
    segments: u64,
    /// The row of the table a duplicate key repeats, when it was loaded
    /// before this load (a row id of the lookup API).
    pub(super) conflict_existing: Option<RowId>,
    /// The table's runs before the load, in manifest order.
    pub(super) table_runs: Vec<RunMeta>,
    /// The thread opening those not open yet ([`open_runs`]).
    pub(super) opening: Option<OpeningRuns>,
    /// [`LoadOptions::segment_rows`].
    segment_rows: Option<u64>,
}

impl<'a> TableWriter<'a> {
    /// Checks the options against the table, opens its key-index runs
    /// (on a thread of their own), makes the table's directories.
    fn new(
        db: &Database,
        table: &str,
        opts: &LoadOptions,
        inputs: &'a [Input],
    ) -> Result<(Self, Layout)> {
        let (existing, schema, compression, sharding) = checked_options(db, table, opts)?;
        let workers = worker_count(opts.threads);
        let version = db.manifest().version + 1;
        let (rel_dir, abs_dir) = db.table_dir(table);
        let key_col = schema.key_column();
        let count = sharding.as_ref().map_or(1, |s| s.count);
        let route = match &sharding {
            None => Route::One,
            Some(Sharding { by: None, .. }) => Route::RoundRobin,
            Some(Sharding { by: Some(c), .. }) => Route::Hash(
                schema
                    .columns
                    .iter()
                    .position(|x| x.name.eq_ignore_ascii_case(c))
                    .ok_or_else(|| {
                        Error::Schema(format!("table {table} is sharded by {c}, which it lacks"))
                    })?,
            ),
        };
        // The table's runs are opened (footer, index and filter checked) on a
        // thread of their own while the load parses: its keys are checked
        // against them when the group's run is built.
        let table_runs: Vec<RunMeta> = existing
            .as_ref()
            .map(|t| t.runs.clone())
            .unwrap_or_default();
        let mut has_runs = vec![false; count as usize];
        for r in &table_runs {
            *has_runs
                .get_mut(r.shard as usize)
                .ok_or_else(|| Error::Corrupt {
                    file: db.dir().join(&r.file),
                    message: format!("a run of shard {} in a table of {count}", r.shard),
                })? = true;
        }
        let opening = open_runs(db, &table_runs)?;
        let created_dir = !abs_dir.exists();
        std::fs::create_dir_all(&abs_dir).map_err(|e| Error::io(&abs_dir, e))?;
        let mut created = Vec::new();
        if created_dir {
            created.push(abs_dir.clone());
        }
        if let Some(sh) = &sharding {
            match create_shard_dirs(db, table, sh) {
                Ok(made) => created.extend(made),
                Err(e) => {
                    for p in created.iter().rev() {
                        let _ = std::fs::remove_file(p).or_else(|_| std::fs::remove_dir(p));
                    }
                    return Err(e);
                }
            }
        }
        let outs = (0..count)
            .map(|s| {
                let (rel_dir, abs_dir) = db.shard_dir(table, s, count);
                ShardOut {
                    shard: s,
                    rel_dir,
                    abs_dir,
                    current: None,
                    done: Vec::new(),
                    plain: vec![false; schema.columns.len()],
                    pending: Vec::new(),
                    pending_rows: 0,
                    pending_bytes: 0,
                    rows: 0,
                    keys: Keys {
                        base_row: existing.as_ref().map(|t| t.shard_rows(s)).unwrap_or(0),
                        batches: Vec::new(),
                        bytes: 0,
                        table_runs: Vec::new(),
                        load_runs: Vec::new(),
                        runs: Vec::new(),
                        seen: std::collections::HashSet::new(),
                        origin: Vec::new(),
                    },
                }
            })
            .collect();
        let layout = Layout {
            schema: schema.clone(),
            shards: count,
            route,
            key: key_col,
            check_keys: has_runs
                .iter()
                .map(|&r| r && opts.on_duplicate == OnDuplicate::Error)
                .collect(),
            provenance: key_col.is_some(),
            sort_rows: false,
        };
        let writer = TableWriter {
            inputs,
            table: table.to_string(),
            arrow_schema: schema.arrow_schema(),
            schema,
            key_col,
            route,
            on_duplicate: opts.on_duplicate,
            rows_before: existing.as_ref().map(|t| t.rows()).unwrap_or(0),
            existing,
            compression,
            direct: !opts.page_cache,
            sharding,
            rel_dir,
            abs_dir,
            version,
            workers,
            outs,
            created,
            key_budget: opts.key_budget.unwrap_or((opts.memory_limit / 2) as usize),
            provenance: Vec::new(),
            duplicates: 0,
            segments: 0,
            conflict_existing: None,
            table_runs,
            opening,
            segment_rows: opts.segment_rows,
        };
        Ok((writer, layout))
    }

    /// The rows of one block: each piece to its shard.
    fn write(&mut self, rows: Rows<'_>) -> Result<u64> {
        let Rows {
            pieces,
            first_row: batch_first,
            provenance: here,
        } = rows;
        // Kept for the whole load to name both rows of a duplicate found
        // at the end (row ids shift when skipping, which needs none).
        if self.key_col.is_some() && self.on_duplicate == OnDuplicate::Error {
            self.provenance.extend(here.iter().cloned());
        }
        let round_robin = self.route == Route::RoundRobin;
        let count = self.outs.len() as u64;
        let mut written = 0u64;
        for out in pieces {
            let shard = if round_robin {
                ((self.rows_before + batch_first + out.shard as u64) % count) as usize
            } else {
                out.shard as usize
            };
            written += self.put(shard, out, batch_first, here)?;
        }
        Ok(written)
    }

    /// Writes one shard's part of a block (whose first row is row
    /// `batch_first` of the load); returns the rows written.
    fn put(&mut self, s: usize, out: Piece, batch_first: u64, here: &[Provenance]) -> Result<u64> {
        let Piece {
            batch,
            stats,
            keys,
            rows,
            ..
        } = out;
        if batch.num_rows() == 0 {
            return Ok(0);
        }
        // The load row of row `r` of this part.
        let load_row = |r: u32| batch_first + rows.get(r as usize).copied().unwrap_or(r) as u64;
        let (batch, stats) = match keys {
            None => (batch, stats),
            Some(kb) => {
                if let Some(r) = kb.null_row {
                    return Err(Error::Input {
                        path: describe_row(here, self.inputs, load_row(r)),
                        message: format!(
                            "the key column {} is NULL (a primary key needs a value in every row)",
                            self.key_name()
                        ),
                    });
                }
                let (batch, stats, kb, rows) = match self.on_duplicate {
                    OnDuplicate::Error => (batch, stats, kb, rows),
                    OnDuplicate::Skip => self.skip_duplicates(s, batch, stats, kb, rows)?,
                };
                if batch.num_rows() == 0 {
                    return Ok(0);
                }
                let o = &mut self.outs[s];
                let first = o.keys.base_row + o.rows;
                if !rows.is_empty() && self.on_duplicate == OnDuplicate::Error {
                    o.keys.origin.push((o.rows, batch_first, Arc::new(rows)));
                }
                o.keys.bytes += kb.heap_bytes();
                o.keys.batches.push((first, kb));
                let held: usize = self.outs.iter().map(|o| o.keys.bytes).sum();
                if held > self.key_budget {
                    for i in 0..self.outs.len() {
                        self.flush_keys(i)?;
                    }
                }
                (batch, stats)
            }
        };
        let n = batch.num_rows();
        let o = &mut self.outs[s];
        o.rows += n as u64;
        // Small batches (small files, small blocks) are gathered and
        // written as one: a segment of 100,000 one-line batches would be
        // mostly per-batch metadata, and every batch a morsel.
        if n < SMALL_BATCH_ROWS && self.segment_rows.is_none() {
            o.pending_rows += n;
            o.pending_bytes += batch.get_array_memory_size();
            o.pending.push((batch, stats));
            // Bounded in rows, and in memory: each tiny batch costs a few
            // KiB of buffers however few rows it holds.
            if o.pending_rows >= COALESCE_ROWS || o.pending_bytes >= COALESCE_BYTES {
                self.flush_pending(s)?;
            }
            return Ok(n as u64);
        }
        self.flush_pending(s)?;
        self.write_batch(s, &batch, &stats)?;
        Ok(n as u64)
    }

    fn key_name(&self) -> &str {
        self.key_col
            .map(|k| self.schema.columns[k].name.as_str())
            .unwrap_or("")
    }

    /// Where row `row` of this load came from (see [`describe_row`]).
    pub(super) fn describe_row(&self, row: u64) -> String {
        describe_row(&self.provenance, self.inputs, row)
    }

    /// Writes shard `s`'s gathered small batches as one batch.
    fn flush_pending(&mut self, s: usize) -> Result<()> {
        let o = &mut self.outs[s];
        let pending = std::mem::take(&mut o.pending);
        o.pending_rows = 0;
        o.pending_bytes = 0;
        match pending.len() {
            0 => Ok(()),
            1 => self.write_batch(s, &pending[0].0, &pending[0].1),
            _ => {
                let mut stats = pending[0].1.clone();
                for (_, st) in &pending[1..] {
                    for (a, b) in stats.iter_mut().zip(st) {
                        a.merge(b);
                    }
                }
                // Batches may differ in which TEXT columns they encoded.
                let plain = pending
                    .iter()
                    .map(|(b, _)| crate::batch::dict::decode_batch(b, &[]))
                    .collect::<Result<Vec<_>>>()?;
                let merged = arrow_select::concat::concat_batches(&self.arrow_schema, &plain)?;
                let merged = crate::batch::dict::encode_batch(merged)?;
                self.write_batch(s, &merged, &stats)
            }
        }
    }

    /// Appends a batch to shard `s`'s current segment (opening one if
    /// needed).
    fn write_batch(&mut self, s: usize, batch: &RecordBatch, stats: &[ColumnStats]) -> Result<()> {
        // A column that outgrows its segment dictionary closes the
        // segment and stays plain for the rest of the load; the batch is
        // written again into the next segment.
        loop {
            let o = &mut self.outs[s];
            if o.current.is_none() {
                let name = format!("{:06}-{:05}.arrow", self.version, o.done.len());
                let path = o.abs_dir.join(&name);
                self.created.push(path.clone());
                o.current = Some(SegmentWriter::create(
                    path,
                    format!("{}/{name}", o.rel_dir),
                    &self.arrow_schema,
                    self.compression,
                    self.direct,
                )?);
            }
            let seg = o
                .current
                .as_mut()
                .ok_or_else(|| Error::Internal("no segment".into()))?;
            match seg.write(batch, stats, &o.plain)? {
                None => {
                    if seg.bytes() >= SEGMENT_TARGET_BYTES
                        || self.segment_rows.is_some_and(|r| seg.rows() >= r)
                    {
                        self.close_segment(s)?;
                    }
                    return Ok(());
                }
                Some(c) if !o.plain[c] => {
                    o.plain[c] = true;
                    self.close_segment(s)?;
                }
                Some(_) => return Err(Error::Internal("a plain column was encoded".into())),
            }
        }
    }

    /// Closes shard `s`'s current segment.
    fn close_segment(&mut self, s: usize) -> Result<()> {
        self.flush_pending(s)?;
        let o = &mut self.outs[s];
        if let Some(seg) = o.current.take() {
            let mut meta = seg.finish()?;
            meta.shard = o.shard;
            o.done.push(meta);
        }
        Ok(())
    }

    /// Closes every shard's segment and, for a keyed table, writes the
    /// keys left as runs: the shards in parallel (each finish ends with an
    /// fsync; N shards would otherwise wait for N in a row).
    fn finish(&mut self) -> Result<()> {
        let n = self.outs.len();
        if n == 1 {
            if self.key_col.is_none() {
                return self.close_segment(0);
            }
            self.flush_pending(0)?;
            let seg = self.outs[0].current.take();
            // The segment's footer and fsync go on beside the key work
            // (the check, the merge, the run's own fsync), as the shards'
            // do below: on a disk the CPU work hides under the flush.
            let (meta, keys) = std::thread::scope(|sc| {
                let closing = seg.map(|w| sc.spawn(move || w.finish()));
                let keys = self.flush_keys(0);
                let meta = closing.map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::Internal(
                            "the thread closing a segment panicked".into(),
                        ))
                    })
                });
                (meta, keys)
            });
            if let Some(m) = meta {
                let mut m = m?;
                m.shard = self.outs[0].shard;
                self.outs[0].done.push(m);
            }
            return keys;
        }
        for s in 0..n {
            self.flush_pending(s)?;
        }
        self.table_runs_ready()?;
        let mut jobs: Vec<(Option<SegmentWriter>, Option<KeyJob>)> = Vec::with_capacity(n);
        for s in 0..n {
            let seg = self.outs[s].current.take();
            let keys = if self.key_col.is_some() {
                self.key_job(s)
            } else {
                None
            };
            jobs.push((seg, keys));
        }
        let threads = (self.workers / n).max(1);
        type Finished = (
            Option<Result<crate::store::SegmentMeta>>,
            Option<Result<Built>>,
        );
        let results: Vec<Finished> = std::thread::scope(|sc| {
            let handles: Vec<_> = jobs
                .iter_mut()
                .map(|(seg, keys)| {
                    let seg = seg.take();
                    let keys = keys.as_ref();
                    sc.spawn(move || {
                        let meta = seg.map(|w| w.finish());
                        let built = keys.map(|j| {
                            crate::index::build_run(
                                &j.path, &j.batches, &j.table, &j.older, threads,
                            )
                        });
                        (meta, built)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        (
                            Some(Err(Error::Internal(
                                "a shard's finishing thread panicked".into(),
                            ))),
                            None,
                        )
                    })
                })
                .collect()
        });
        for (s, ((meta, built), (_, job))) in results.into_iter().zip(jobs).enumerate() {
            if let Some(m) = meta {
                let mut m = m?;
                m.shard = self.outs[s].shard;
                self.outs[s].done.push(m);
            }
            if let (Some(b), Some(job)) = (built, job) {
                self.keys_built(s, job, b)?;
            }
        }
        Ok(())
    }

    /// Publishes the group: the journal of its files, every new file and
    /// directory synced, then one new manifest naming them; then, for a
    /// keyed table, the key-index runs merged by size tier (each merge its
    /// own atomic commit). Leaves nothing of the group when it fails before
    /// the manifest is published.
    fn commit(&mut self, db: &mut Database, group: &GroupFiles<'_>) -> Result<Committed> {
        let published = self.publish(db, group);
        match published {
            Ok(()) => {}
            // Published: its files stay.
            Err(e @ Error::NotDurable(_)) => return Err(e),
            Err(e) => {
                self.discard();
                return Err(e);
            }
        }
        // Committed. Many runs slow lookups and key checks: merge by size
        // tier (a failure leaves the load committed).
        let (runs_merged, merge_error) = if self.key_col.is_some() {
            match db.merge_tiers(&self.table) {
                Ok(n) => (n, None),
                Err(e) => (0, Some(e.to_string())),
            }
        } else {
            (0, None)
        };
        Ok(Committed {
            created: self.existing.is_none(),
            segments: self.segments,
            duplicates: self.duplicates,
            runs_merged,
            merge_error,
        })
    }

    fn publish(&mut self, db: &mut Database, group: &GroupFiles<'_>) -> Result<()> {
        // The journal: which files this commit holds.
        let journal = write_journal(
            group,
            self.inputs,
            self.version,
            (&self.rel_dir, &self.abs_dir),
            &mut self.created,
        )?;
        // New files must be durable before the manifest names them.
        let sharded = self.outs.len() > 1;
        std::iter::once(&self.abs_dir)
            .chain(self.outs.iter().map(|o| &o.abs_dir).filter(|_| sharded))
            .try_for_each(|d| crate::store::manifest::sync_dir(d))?;
        let mut next = db.manifest().clone();
        self.segments = self.outs.iter().map(|o| o.done.len() as u64).sum();
        let entry = next
            .tables
            .entry(self.table.clone())
            .or_insert_with(|| TableMeta {
                schema: self.schema.clone(),
                segments: Vec::new(),
                runs: Vec::new(),
                compression: self.compression,
                loads: Vec::new(),
                sharding: self.sharding.clone(),
            });
        for o in &mut self.outs {
            entry.segments.append(&mut o.done);
            entry.runs.append(&mut o.keys.runs);
        }
        entry.loads.extend(journal);
        db.commit(next)
    }

    /// Deletes the files of a load that will not be committed.
    /// Deletes the files of a load that will not be committed.
    pub(super) fn discard(&mut self) {
        for o in &mut self.outs {
            o.current = None;
        }
        for p in self.created.iter().rev() {
            if p.is_symlink() || p.is_file() {
                let _ = std::fs::remove_file(p);
            } else {
                // Shard directories this load made: removed when empty.
                let _ = std::fs::remove_dir(p);
            }
        }
        // Succeeds only when empty, that is when this load created it.
        let _ = std::fs::remove_dir(&self.abs_dir);
    }
}
