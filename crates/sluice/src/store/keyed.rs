//! Keyed tables: lookups by primary key, and merging a table's runs.

use std::sync::{Arc, OnceLock};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::{Database, RunMeta, TableMeta};
use crate::batch::{Column, DataType, ValueOptions};
use crate::error::{Error, Result};
use crate::index::{KeyIndex, RowId, encode_key_text};

/// A segment opened for lookups: mapped, its footer read; a record
/// batch's columns are checked against their checksums and decoded the
/// first time a row of it is asked for (a lookup reads one batch, not the
/// whole segment: `sluice get` of one key in a 140 MB segment checked
/// and decoded all of it).
struct SegmentRows {
    scan: Arc<super::segment::SegmentScan>,
    /// The first row of each record batch.
    starts: Vec<u64>,
    batches: Vec<OnceLock<RecordBatch>>,
}

/// Row ids of a sharded table carry the shard in their top byte; each
/// shard's runs count its own rows.
const SHARD_SHIFT: u32 = 56;

/// A [`RowId`] as the lookup API gives it: `local` counts shard `shard`'s
/// rows (for a table of one shard, the row id itself).
pub fn tag_row(shard: u32, local: u64) -> RowId {
    (u64::from(shard) << SHARD_SHIFT) | local
}

fn untag_row(id: RowId) -> (u32, u64) {
    ((id >> SHARD_SHIFT) as u32, id & ((1u64 << SHARD_SHIFT) - 1))
}

/// One shard's runs and segments.
struct ShardIndex {
    index: KeyIndex,
    /// Positions in the table's segment list of the shard's segments.
    segs: Vec<usize>,
    /// Row id (in the shard) of each of those segments' first row.
    starts: Vec<u64>,
}

/// The database a [`KeyedTable`] reads: borrowed for one query, or
/// shared for a table kept open across queries ([`Database::keyed_shared`]).
#[derive(Clone)]
enum DbRef<'a> {
    Borrowed(&'a Database),
    Shared(Arc<Database>),
}

impl std::ops::Deref for DbRef<'_> {
    type Target = Database;
    fn deref(&self) -> &Database {
        match self {
            DbRef::Borrowed(d) => d,
            DbRef::Shared(d) => d,
        }
    }
}

/// A keyed table opened for lookups: its runs open, row ids mapped to
/// segments. Holds the snapshot of the manifest it was opened at. A key
/// is looked up in one shard: the one its hash names.
pub struct KeyedTable<'a> {
    db: DbRef<'a>,
    meta: TableMeta,
    key: usize,
    shards: Vec<ShardIndex>,
    schema: SchemaRef,
    values: Arc<ValueOptions>,
    segments: Vec<OnceLock<SegmentRows>>,
}

impl Database {
    /// Opens `table` for key lookups; an error if it has no PRIMARY KEY.
    pub fn keyed(&self, table: &str) -> Result<KeyedTable<'_>> {
        self.keyed_in(DbRef::Borrowed(self), table)
    }

    /// [`Database::keyed`] holding its own handle on `db`: a table that
    /// outlives the borrow, to be kept open across queries (see
    /// [`super::Snapshots::keyed`]).
    pub fn keyed_shared(db: &Arc<Database>, table: &str) -> Result<KeyedTable<'static>> {
        db.keyed_in(DbRef::Shared(db.clone()), table)
    }

    fn keyed_in<'a>(&self, db: DbRef<'a>, table: &str) -> Result<KeyedTable<'a>> {
        let meta = self
            .table(table)
            .ok_or_else(|| Error::Schema(format!("no table named {table:?}")))?
            .clone();
        match self.keyed_at(db.clone(), table, meta) {
            // A merge committed since this handle read the manifest may
            // have deleted runs it names: read the manifest again (rows
            // are only ever added, so the newer snapshot holds them all).
            Err(Error::Io { error, .. }) if error.kind() == std::io::ErrorKind::NotFound => {
                let fresh = super::Manifest::read(&self.dir)?
                    .and_then(|m| m.tables.get(&table.to_ascii_lowercase()).cloned())
                    .ok_or_else(|| Error::Schema(format!("no table named {table:?}")))?;
                self.keyed_at(db, table, fresh)
            }
            other => other,
        }
    }

    fn keyed_at<'a>(&self, db: DbRef<'a>, table: &str, meta: TableMeta) -> Result<KeyedTable<'a>> {
        let key = meta.schema.key_column().ok_or_else(|| {
            Error::Schema(format!(
                "table {table} has no primary key (create it with --key COLUMN or PRIMARY KEY in --schema)"
            ))
        })?;
        let count = meta.shard_count();
        let mut shards = Vec::with_capacity(count as usize);
        for shard in 0..count {
            let runs = meta
                .runs
                .iter()
                .filter(|r| r.shard == shard)
                .map(|r| self.run(r))
                .collect::<Result<Vec<_>>>()?;
            let mut segs = Vec::new();
            let mut starts = Vec::new();
            let mut n = 0;
            for (i, s) in meta.segments.iter().enumerate() {
                if s.shard == shard {
                    segs.push(i);
                    starts.push(n);
                    n += s.rows;
                }
            }
            shards.push(ShardIndex {
                index: KeyIndex::new(runs),
                segs,
                starts,
            });
        }
        Ok(KeyedTable {
            db,
            key,
            shards,
            schema: meta.schema.arrow_schema(),
            values: Arc::new(ValueOptions::default()),
            segments: (0..meta.segments.len()).map(|_| OnceLock::new()).collect(),
            meta,
        })
    }

    /// Merges every run of each shard of a keyed table into one and
    /// commits; returns the number of runs merged (0 when each shard had
    /// at most one). A table without a key has no runs: an error.
    pub fn compact(&mut self, table: &str) -> Result<usize> {
        let meta = self
            .table(table)
            .ok_or_else(|| Error::Schema(format!("no table named {table:?}")))?;
        if meta.schema.key_column().is_none() {
            return Err(Error::Schema(format!(
                "table {table} has no primary key, so no key index to merge (compact merges the key-index runs of a table created with --key COLUMN)"
            )));
        }
        self.check_shard_dirs(table)?;
        let mut merged = 0;
        for shard in 0..meta.shard_count() {
            let picked = self.shard_runs(table, shard)?;
            if picked.len() >= 2 {
                merged += self.merge_picked(table, &picked)?;
            }
        }
        Ok(merged)
    }

    /// Positions in the table's run list of shard `shard`'s runs.
    fn shard_runs(&self, table: &str, shard: u32) -> Result<Vec<usize>> {
        Ok(self
            .table(table)
            .ok_or_else(|| Error::Schema(format!("no table named {table:?}")))?
            .runs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.shard == shard)
            .map(|(i, _)| i)
            .collect())
    }

    /// Merges runs by size tier until no tier holds
    /// [`crate::index::MERGE_FANIN`] runs (see [`crate::index::pick_merge`]);
    /// returns the number of runs merged. Loads call this after their
    /// commit.
    pub fn merge_tiers(&mut self, table: &str) -> Result<usize> {
        let count = self
            .table(table)
            .ok_or_else(|| Error::Schema(format!("no table named {table:?}")))?
            .shard_count();
        let mut merged = 0;
        for shard in 0..count {
            loop {
                let at = self.shard_runs(table, shard)?;
                let runs = &self
                    .table(table)
                    .ok_or_else(|| Error::Schema(format!("no table named {table:?}")))?
                    .runs;
                let entries: Vec<u64> = at.iter().map(|&i| runs[i].entries).collect();
                match crate::index::pick_merge(&entries) {
                    Some(p) => {
                        let picked: Vec<usize> = p.iter().map(|&i| at[i]).collect();
                        merged += self.merge_picked(table, &picked)?
                    }
                    None => break,
                }
            }
        }
        Ok(merged)
    }

    /// Merges the runs at positions `picked` into one, in place of the
    /// first of them, and commits. Atomic: a crash before the commit
    /// leaves the old runs, and the new file is removed as an orphan when
    /// the database is next opened for writing.
    fn merge_picked(&mut self, table: &str, picked: &[usize]) -> Result<usize> {
        let name = table.to_ascii_lowercase();
        let meta = self
            .table(&name)
            .ok_or_else(|| Error::Schema(format!("no table named {table:?}")))?
            .clone();
        let old: Vec<RunMeta> = picked
            .iter()
            .filter_map(|&i| meta.runs.get(i).cloned())
            .collect();
        if old.len() != picked.len() || old.len() < 2 {
            return Err(Error::Internal("a merge of runs that do not exist".into()));
        }
        let runs = old
            .iter()
            .map(|r| self.run(r))
            .collect::<Result<Vec<_>>>()?;
        let version = self.manifest.version + 1;
        let shard = old[0].shard;
        if old.iter().any(|r| r.shard != shard) {
            return Err(Error::Internal(
                "a merge of runs of different shards".into(),
            ));
        }
        let (rel_dir, abs_dir) = self.shard_dir(&name, shard, meta.shard_count());
        let file = format!("{version:06}-merged.keys");
        let path = abs_dir.join(&file);
        let threads = crate::exec::worker_count(None);
        let (entries, bytes) = match crate::index::merge_runs(&runs, &path, threads) {
            Ok(r) => r,
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                return Err(e);
            }
        };
        if let Err(e) = super::manifest::sync_dir(&abs_dir) {
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        // Fault injection for the crash tests: die with the merged run
        // written and the manifest not yet swapped.
        if std::env::var_os("SLUICE_FAULT").is_some_and(|v| v == "merge-before-commit") {
            std::process::abort();
        }
        let mut next = self.manifest.clone();
        let t = next
            .tables
            .get_mut(&name)
            .ok_or_else(|| Error::Internal("table vanished".into()))?;
        let new = RunMeta {
            file: format!("{rel_dir}/{file}"),
            entries,
            bytes,
            shard,
        };
        let mut kept = Vec::with_capacity(t.runs.len() + 1 - old.len());
        for (i, r) in t.runs.iter().enumerate() {
            if i == picked[0] {
                kept.push(new.clone());
            } else if !picked.contains(&i) {
                kept.push(r.clone());
            }
        }
        t.runs = kept;
        match self.commit(next) {
            Ok(()) => {}
            // Published: the new run stays, and so do the old ones (an
            // older reader may still name them; the next writer removes
            // them as orphans).
            Err(e @ Error::NotDurable(_)) => return Err(e),
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                return Err(e);
            }
        }
        // The old runs are no longer named by the manifest. Readers that
        // have them open keep reading them (unlinked files stay mapped).
        if let Ok(mut c) = self.runs.lock() {
            for r in &old {
                c.remove(&r.file);
            }
        }
        for r in &old {
            let _ = std::fs::remove_file(self.dir.join(&r.file));
        }
        Ok(old.len())
    }
}

impl KeyedTable<'_> {
    pub fn key_column(&self) -> &Column {
        &self.meta.schema.columns[self.key]
    }

    pub fn meta(&self) -> &TableMeta {
        &self.meta
    }

    /// The index's byte form of a key given as text. Dates and timestamps
    /// are read in their canonical form only (lookups have no
    /// `--date-format`), and the message says so.
    pub fn encode_key(&self, text: &str) -> Result<Vec<u8>> {
        let c = self.key_column();
        encode_key_text(c, text, &self.values).map_err(|e| {
            let form = match c.data_type {
                DataType::Date => "YYYY-MM-DD",
                DataType::Time => "HH:MM[:SS[.ffffff]]",
                DataType::Timestamp => "YYYY-MM-DD HH:MM:SS[.ffffff]",
                DataType::TimestampTz => "YYYY-MM-DD HH:MM:SS[.ffffff][+HH:MM] (UTC without one)",
                _ => return e,
            };
            Error::Config(format!(
                "key {text:?} is not a {} in the form {form} (the key column {} is one; keys take that form whatever format the load read)",
                c.data_type, c.name
            ))
        })
    }

    /// The row id of an encoded key (looked up in its shard only).
    pub fn locate(&self, key: &[u8]) -> Result<Option<RowId>> {
        let shard = self.shard_of(key);
        let Some(s) = self.shards.get(shard as usize) else {
            return Ok(None);
        };
        Ok(s.index.get(key)?.map(|id| tag_row(shard, id)))
    }

    /// The shard that holds an encoded key, if the table has it.
    pub fn shard_of(&self, key: &[u8]) -> u32 {
        crate::partition::shard_of_key(key, self.meta.shard_count())
    }

    /// One row by row id, as a one-row batch of the table's plain schema.
    pub fn row(&self, id: RowId) -> Result<RecordBatch> {
        let (batch, at) = self.place(id)?;
        crate::batch::dict::decode_batch(&batch.slice(at, 1), &[])
    }

    /// The stored batch holding row `id`, and the row's position in it.
    fn place(&self, id: RowId) -> Result<(&RecordBatch, usize)> {
        let (shard, local) = untag_row(id);
        let found = self.shards.get(shard as usize).and_then(|sh| {
            let i = sh
                .starts
                .partition_point(|&st| st <= local)
                .checked_sub(1)?;
            let s = sh.segs[i];
            let m = self.meta.segments.get(s)?;
            (local - sh.starts[i] < m.rows).then_some((s, m, local - sh.starts[i]))
        });
        let Some((s, seg_meta, at)) = found else {
            return Err(Error::Corrupt {
                file: self.db.dir().join(
                    self.meta
                        .runs
                        .first()
                        .map(|r| r.file.as_str())
                        .unwrap_or_default(),
                ),
                message: format!("the index points at row {id}, past the table's rows"),
            });
        };
        let rows = match self.segments[s].get() {
            Some(r) => r,
            None => {
                let all: Vec<usize> = (0..self.schema.fields().len()).collect();
                let scan = self.db.segment_scan(seg_meta, &self.schema, &all)?;
                let mut starts = Vec::with_capacity(scan.len());
                let mut n = 0u64;
                for b in 0..scan.len() {
                    starts.push(n);
                    n += scan.info(b).rows as u64;
                }
                let batches = (0..scan.len()).map(|_| OnceLock::new()).collect();
                let _ = self.segments[s].set(SegmentRows {
                    scan,
                    starts,
                    batches,
                });
                self.segments[s]
                    .get()
                    .ok_or_else(|| Error::Internal("segment cache emptied".into()))?
            }
        };
        // The batch's rows stay cached in `self.segments` for as long as
        // `self` lives: borrow them from there.
        let found = match rows.starts.partition_point(|&st| st <= at).checked_sub(1) {
            Some(b) => {
                let batch = match rows.batches[b].get() {
                    Some(batch) => batch,
                    None => {
                        let _ = rows.batches[b].set(rows.scan.batch(b)?);
                        rows.batches[b]
                            .get()
                            .ok_or_else(|| Error::Internal("batch cache emptied".into()))?
                    }
                };
                let r = (at - rows.starts[b]) as usize;
                (r < batch.num_rows()).then_some((batch, r))
            }
            None => None,
        };
        found.ok_or_else(|| Error::Corrupt {
            file: self.db.dir().join(&seg_meta.file),
            message: format!("holds fewer rows than the manifest says (row {at} asked)"),
        })
    }

    /// The row with key `key` (as text), or `None`.
    pub fn get(&self, key: &str) -> Result<Option<RecordBatch>> {
        let k = self.encode_key(key)?;
        match self.locate(&k)? {
            Some(id) => self.row(id).map(Some),
            None => Ok(None),
        }
    }

    /// The rows of the keys found, in the order the keys are given (a key
    /// given twice gives its row twice); missing keys give no row.
    pub fn get_many<S: AsRef<str>>(&self, keys: &[S]) -> Result<RecordBatch> {
        // The batches holding the rows (plain TEXT, each once), and per
        // row found: (which of them, row in it).
        let mut sources: Vec<RecordBatch> = Vec::new();
        let mut seen: std::collections::HashMap<*const RecordBatch, usize> =
            std::collections::HashMap::new();
        let mut picks: Vec<(usize, usize)> = Vec::new();
        for k in keys {
            let key = self.encode_key(k.as_ref())?;
            let Some(id) = self.locate(&key)? else {
                continue;
            };
            let (batch, at) = self.place(id)?;
            let i = match seen.get(&(batch as *const RecordBatch)) {
                Some(&i) => i,
                None => {
                    seen.insert(batch, sources.len());
                    sources.push(crate::batch::dict::decode_batch(batch, &[])?);
                    sources.len() - 1
                }
            };
            picks.push((i, at));
        }
        let schema = self.meta.schema.arrow_schema();
        if picks.is_empty() {
            return Ok(RecordBatch::new_empty(schema));
        }
        let refs: Vec<&RecordBatch> = sources.iter().collect();
        Ok(arrow_select::interleave::interleave_record_batch(
            &refs, &picks,
        )?)
    }
}
