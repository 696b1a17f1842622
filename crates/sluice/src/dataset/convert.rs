//! Text files straight to a dataset (`sluice convert`): the load pipeline
//! with files at its end instead of a table.
//!
//! Useful for: what one task of a distributed load runs over its share of
//! the files, and anyone who wants Parquet (or CSV, JSON lines) from CSV,
//! TSV or JSON with the loader's types, rejects, encodings and messages.
//! Not useful for: writing out a table (`export_table`), or reading a
//! dataset back (`load::columnar`).
//!
//! ```text
//!  load pipeline (reader, parse workers)     writer thread: DatasetSink::write
//!  blocks → Arrow batches, cut by bucket ─►  keys gathered per bucket,
//!  (the hash of `--shards`)                  pieces dealt to encoder threads ─► part files
//! ```
//!
//! The parse workers cut each block's rows by bucket with the hash that
//! cuts a sharded table's rows (`partition::shards_of`), so bucket `b` of
//! a dataset converted with `buckets = N` holds exactly the rows shard `b`
//! of a table loaded with `--shards N` on the same column holds. The sink
//! deals the pieces to encoder threads, one a core: each owns some
//! *streams* (a bucket's files; a bucket gets several streams when there
//! are fewer buckets than threads), so a file is written by one thread and
//! its rows keep input order. With a key, each bucket's keys are gathered
//! as the workers sorted them and merged at the end (as sorted runs on
//! disk when they outgrow their memory): a key twice in a bucket fails
//! the conversion naming both rows' files and lines, and since a key's
//! rows all land in one bucket, that proves the whole dataset unique.
//!
//! The dataset is written under a hidden name beside the output and
//! renamed into place with `_SUCCESS` when complete, as an export is: a
//! failed or killed conversion leaves nothing at the output.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;

use super::{ExportOptions, FileFormat, PartFile, Staging};
use crate::batch::{DataType, Schema};
use crate::error::{Error, Result};
use crate::exec::worker_count;
use crate::index::{Built, KeyBatch, RowId, Run};
use crate::load::keys::{Origin, origin_row};
use crate::load::sink::{
    Committed, GroupFiles, Layout, Provenance, Route, Rows, Sink, describe_row,
};
use crate::load::{CommitEvery, LoadOptions, LoadSummary, load_into};
use crate::source::Input;

/// What a conversion writes, beside the load's options.
#[derive(Debug, Clone)]
pub struct ConvertOptions {
    /// Format, compression, row groups, file size, threads, `overwrite`.
    pub files: ExportOptions,
    /// Buckets (0 or 1: none): rows go to `bucket=NN/` directories by the
    /// hash of `bucket_by`.
    pub buckets: u32,
    /// The column whose hash picks a row's bucket (default: the key).
    pub bucket_by: Option<String>,
    /// Names of the files written: `{prefix}-{stream}-{n}.parquet`.
    pub prefix: String,
    /// Check the key unique (false: the files still name their key, and
    /// a later stage checks it: [`check_bucket`]).
    pub check_key: bool,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            files: ExportOptions::default(),
            buckets: 0,
            bucket_by: None,
            prefix: "part".into(),
            check_key: true,
        }
    }
}

/// What a conversion did.
#[derive(Debug, Clone)]
pub struct ConvertSummary {
    /// The load's side: rows, rejects, input bytes and files, seconds.
    pub load: LoadSummary,
    /// Files written, and their bytes.
    pub files: u64,
    pub bytes: u64,
    /// Buckets (0: not bucketed), and the column that picked them.
    pub buckets: u32,
    pub bucket_by: Option<String>,
    /// The files' columns (inferred types may have widened on the way).
    pub schema: Schema,
}

/// Converts `inputs` into a dataset at `output`: see the [module
/// documentation](self). `load` must carry the schema (`load.schema`),
/// its primary key the key checked unique. The conversion is one commit:
/// the dataset appears whole or not at all.
pub fn convert(
    inputs: &[Input],
    output: &Path,
    load: &LoadOptions,
    opts: &ConvertOptions,
) -> Result<ConvertSummary> {
    let Some(mut schema) = load.schema.clone() else {
        return Err(Error::Config(
            "a conversion needs the columns of its rows (a schema)".into(),
        ));
    };
    // The key named apart from the columns (`--key`) is the schema's.
    if let Some(k) = &load.key {
        schema.set_key(k)?;
    }
    bucket_column(&schema, opts)?;
    let mut load = load.clone();
    load.schema = Some(schema.clone());
    load.commit_every = CommitEvery::ONCE;
    load.stop = None;
    let mut sink = DatasetSink::new(output, opts)?;
    let name = output.display().to_string();
    let summary = load_into(&mut sink, &name, inputs, &load)?;
    Ok(ConvertSummary {
        load: summary,
        files: sink.written.0,
        bytes: sink.written.1,
        buckets: if opts.buckets > 1 { opts.buckets } else { 0 },
        bucket_by: sink.bucket_by.clone(),
        schema: sink.schema.clone().unwrap_or(schema),
    })
}

/// Checks the bucket options against the columns (as [`convert`] does
/// first): a caller may check before it prints or infers more.
pub fn check_options(schema: &Schema, opts: &ConvertOptions) -> Result<()> {
    bucket_column(schema, opts).map(|_| ())
}

/// The column that picks a row's bucket, when bucketed.
fn bucket_column(schema: &Schema, opts: &ConvertOptions) -> Result<Option<usize>> {
    if opts.buckets > MAX_BUCKETS {
        return Err(Error::Config(format!(
            "--buckets {}: at most {MAX_BUCKETS}",
            opts.buckets
        )));
    }
    if opts.buckets <= 1 {
        if let Some(c) = &opts.bucket_by {
            return Err(Error::Config(format!(
                "--bucket-by {c} needs --buckets N (2 or more)"
            )));
        }
        return Ok(None);
    }
    match &opts.bucket_by {
        Some(c) => schema.position(c).map(Some).ok_or_else(|| {
            Error::UndefinedColumn(format!(
                "--bucket-by {c}: no such column (the columns: {})",
                schema.column_names()
            ))
        }),
        None => match schema.key_column() {
            Some(k) => Ok(Some(k)),
            None => Err(Error::Config(
                "--buckets needs the column whose hash picks a row's bucket: --key or --bucket-by"
                    .into(),
            )),
        },
    }
}

/// Buckets a dataset may have (as shards a table may).
pub const MAX_BUCKETS: u32 = 256;

/// Messages a sink queues for an encoder thread before it waits.
const QUEUE: usize = 2;

/// Rows dealt to one encoder thread: stream, rows.
type Job = (usize, RecordBatch);

/// The [`Sink`] of a conversion: files in a staged dataset directory.
pub struct DatasetSink<'a> {
    opts: ConvertOptions,
    staging: Option<Staging>,
    /// The dataset's name in messages.
    name: String,
    group: Option<Group<'a>>,
    /// Files and bytes written by the committed group.
    written: (u64, u64),
    bucket_by: Option<String>,
    /// The columns of the last group begun.
    schema: Option<Schema>,
}

impl<'a> DatasetSink<'a> {
    /// A sink writing a dataset at `output` (staged beside it until the
    /// commit).
    pub fn new(output: &Path, opts: &ConvertOptions) -> Result<Self> {
        if opts.files.format == FileFormat::Parquet && opts.files.row_group_size == 0 {
            return Err(Error::Config("--row-group-size must be at least 1".into()));
        }
        let staging = Staging::new(output, opts.files.overwrite, None)?;
        Ok(DatasetSink {
            opts: opts.clone(),
            staging: Some(staging),
            name: output.display().to_string(),
            group: None,
            written: (0, 0),
            bucket_by: None,
            schema: None,
        })
    }

    fn group(&mut self) -> Result<&mut Group<'a>> {
        self.group
            .as_mut()
            .ok_or_else(|| Error::Internal("a write outside a group".into()))
    }
}

/// One group: its encoder threads and the keys it gathered.
struct Group<'a> {
    inputs: &'a [Input],
    dir: PathBuf,
    schema: Schema,
    key_col: Option<usize>,
    /// Streams of one bucket (fewer buckets than threads: several).
    per_bucket: usize,
    senders: Vec<SyncSender<Job>>,
    handles: Vec<JoinHandle<Result<(u64, u64)>>>,
    /// An encoder's error, for the writer to report.
    failed: Arc<Mutex<Option<Error>>>,
    /// Set on abort: encoders drop their files unfinished.
    abandon: Arc<AtomicBool>,
    /// Blocks written (they are dealt to a bucket's streams in turn).
    blocks: u64,
    keys: Vec<BucketKeys>,
    /// Bytes of keys held (all buckets) before runs are written.
    key_budget: usize,
    workers: usize,
    provenance: Vec<Provenance>,
}

/// The keys of one bucket.
#[derive(Default)]
struct BucketKeys {
    /// Rows of the bucket so far.
    rows: u64,
    batches: Vec<(RowId, KeyBatch)>,
    bytes: usize,
    /// Runs written when the keys outgrew their budget.
    runs: Vec<Arc<Run>>,
    origin: Origin,
}

impl<'a> Sink<'a> for DatasetSink<'a> {
    fn begin(&mut self, opts: &LoadOptions, inputs: &'a [Input]) -> Result<Layout> {
        let schema = opts
            .schema
            .clone()
            .ok_or_else(|| Error::Config("a conversion needs a schema".into()))?;
        let bucket_col = bucket_column(&schema, &self.opts)?;
        self.schema = Some(schema.clone());
        self.bucket_by = bucket_col.map(|c| schema.columns[c].name.clone());
        let buckets = if bucket_col.is_some() {
            self.opts.buckets
        } else {
            1
        };
        let threads = worker_count(self.opts.files.threads.or(opts.threads));
        let per_bucket = (threads / buckets as usize).max(1);
        let streams = buckets as usize * per_bucket;
        let dir = self
            .staging
            .as_ref()
            .map(|s| s.tmp.clone())
            .ok_or_else(|| Error::Internal("a conversion already published".into()))?;
        // The key checked here, or left to a later stage.
        let key_col = schema.key_column().filter(|_| self.opts.check_key);
        let arrow: SchemaRef = schema.arrow_schema();
        let failed = Arc::new(Mutex::new(None));
        let abandon = Arc::new(AtomicBool::new(false));
        // Per bucket: its directory and file properties.
        let width = (buckets.saturating_sub(1)).to_string().len().max(2);
        let mut dirs = Vec::with_capacity(buckets as usize);
        let mut props = Vec::with_capacity(buckets as usize);
        for b in 0..buckets {
            let d = if buckets > 1 {
                let d = dir.join(format!("bucket={b:0width$}"));
                std::fs::create_dir_all(&d).map_err(|e| Error::io(&d, e))?;
                d
            } else {
                dir.clone()
            };
            dirs.push(d);
            props.push(bucket_properties(
                &schema,
                &self.opts.files,
                self.bucket_by.as_deref().map(|c| (c, b, buckets)),
            ));
        }
        // A row group is cut early once its encoded columns pass this, so
        // that many open files do not each hold a big one.
        let row_group_cap =
            ((opts.memory_limit / 4) / streams as u64).clamp(8 << 20, 256 << 20) as usize;
        let threads = threads.min(streams);
        let mut senders = Vec::with_capacity(threads);
        let mut handles = Vec::with_capacity(threads);
        for t in 0..threads {
            let (tx, rx) = sync_channel::<Job>(QUEUE);
            let enc = Encoder {
                rx,
                dirs: dirs.clone(),
                props: props.clone(),
                per_bucket,
                schema: arrow.clone(),
                opts: self.opts.files.clone(),
                prefix: self.opts.prefix.clone(),
                row_group_cap,
                failed: failed.clone(),
                abandon: abandon.clone(),
            };
            let h = std::thread::Builder::new()
                .name(format!("sluice-encode-{t}"))
                .spawn(move || enc.run())
                .map_err(|e| Error::Internal(format!("cannot start a thread: {e}")))?;
            senders.push(tx);
            handles.push(h);
        }
        let workers = worker_count(opts.threads);
        self.group = Some(Group {
            inputs,
            dir,
            schema: schema.clone(),
            key_col,
            per_bucket,
            senders,
            handles,
            failed,
            abandon,
            blocks: 0,
            keys: (0..buckets).map(|_| BucketKeys::default()).collect(),
            key_budget: opts.key_budget.unwrap_or((opts.memory_limit / 2) as usize),
            workers,
            provenance: Vec::new(),
        });
        let route = match bucket_col {
            Some(c) => Route::Hash(c),
            None => Route::One,
        };
        Ok(Layout {
            schema,
            shards: buckets,
            route,
            key: key_col,
            check_keys: vec![false; buckets as usize],
            provenance: key_col.is_some(),
            sort_rows: false,
        })
    }

    fn write(&mut self, rows: Rows<'_>) -> Result<u64> {
        let name = self.name.clone();
        self.group()?.write(rows, &name)
    }

    fn finish(&mut self) -> Result<()> {
        let name = self.name.clone();
        let g = self.group()?;
        // The keys are checked while the encoders finish their files.
        g.senders.clear();
        for b in 0..g.keys.len() {
            g.check_keys(b, &name, true)?;
        }
        let (files, bytes) = g.join()?;
        self.written = (files, bytes);
        Ok(())
    }

    fn commit(&mut self, _group: &GroupFiles<'_>) -> Result<Committed> {
        let g = self
            .group
            .take()
            .ok_or_else(|| Error::Internal("a commit outside a group".into()))?;
        let keys = g.dir.join(KEYS_DIR);
        if keys.exists() {
            std::fs::remove_dir_all(&keys).map_err(|e| Error::io(&keys, e))?;
        }
        let staging = self
            .staging
            .take()
            .ok_or_else(|| Error::Internal("a conversion published twice".into()))?;
        // No row at all: one empty file with the columns, so that readers
        // see the schema (as an export writes one).
        if self.written.0 == 0 {
            let path = g.dir.join(format!(
                "{}-00000-000.{}",
                self.opts.prefix,
                self.opts.files.format.extension()
            ));
            let props = bucket_properties(&g.schema, &self.opts.files, None);
            let f = PartFile::create(&path, &g.schema.arrow_schema(), props, &self.opts.files)?;
            self.written = (1, f.close()?);
        }
        staging.publish()?;
        Ok(Committed {
            created: true,
            segments: self.written.0,
            ..Committed::default()
        })
    }

    fn abort(&mut self) {
        if let Some(mut g) = self.group.take() {
            g.abandon.store(true, Ordering::Relaxed);
            g.senders.clear();
            let _ = g.join();
            // Start again empty (a group read again with a wider type).
            if let Ok(entries) = std::fs::read_dir(&g.dir) {
                for e in entries.flatten() {
                    let p = e.path();
                    let _ = if p.is_dir() {
                        std::fs::remove_dir_all(&p)
                    } else {
                        std::fs::remove_file(&p)
                    };
                }
            }
        }
    }
}

/// The directory of the staged dataset holding key runs (removed before
/// it is published).
const KEYS_DIR: &str = "_sluice_keys";

impl Group<'_> {
    fn write(&mut self, rows: Rows<'_>, name: &str) -> Result<u64> {
        let Rows {
            pieces,
            first_row,
            provenance: here,
        } = rows;
        if self.key_col.is_some() {
            self.provenance.extend(here.iter().cloned());
        }
        let block = self.blocks;
        self.blocks += 1;
        let mut written = 0u64;
        for p in pieces {
            let n = p.batch.num_rows() as u64;
            if n == 0 {
                continue;
            }
            let b = p.shard as usize;
            if let Some(kb) = p.keys {
                let load_row =
                    |r: u32| first_row + p.rows.get(r as usize).copied().unwrap_or(r) as u64;
                if let Some(r) = kb.null_row {
                    return Err(Error::Input {
                        path: describe_row(here, self.inputs, load_row(r)),
                        message: format!(
                            "the key column {} is NULL (a key needs a value in every row)",
                            self.key_name()
                        ),
                    });
                }
                let k = &mut self.keys[b];
                k.origin.push((k.rows, first_row, Arc::new(p.rows)));
                k.bytes += kb.heap_bytes();
                k.batches.push((k.rows, kb));
                let held: usize = self.keys.iter().map(|k| k.bytes).sum();
                if held > self.key_budget {
                    for b in 0..self.keys.len() {
                        self.check_keys(b, name, false)?;
                    }
                }
            }
            self.keys[b].rows += n;
            let stream = b * self.per_bucket + (block % self.per_bucket as u64) as usize;
            let t = stream % self.senders.len();
            if self.senders[t].send((stream, p.batch)).is_err() {
                return Err(self.encoder_error());
            }
            written += n;
        }
        Ok(written)
    }

    fn key_name(&self) -> &str {
        self.key_col
            .map(|k| self.schema.columns[k].name.as_str())
            .unwrap_or("")
    }

    /// What stopped an encoder.
    fn encoder_error(&self) -> Error {
        self.failed
            .lock()
            .ok()
            .and_then(|mut f| f.take())
            .unwrap_or_else(|| Error::Internal("a file encoder stopped".into()))
    }

    /// Checks bucket `b`'s gathered keys: against each other and the
    /// bucket's earlier runs, the keys then written as a run of their
    /// own, unless `last` and there are no earlier runs (then only merged,
    /// nothing written). A key twice is an error naming both rows.
    fn check_keys(&mut self, b: usize, name: &str, last: bool) -> Result<()> {
        let k = &mut self.keys[b];
        if k.batches.is_empty() {
            return Ok(());
        }
        let batches = std::mem::take(&mut k.batches);
        k.bytes = 0;
        let conflict = if last && k.runs.is_empty() {
            crate::index::first_repeat(&batches, self.workers)?
        } else {
            let dir = self.dir.join(KEYS_DIR);
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
            let path = dir.join(format!("{b:03}-{:05}.keys", k.runs.len()));
            match crate::index::build_run(&path, &batches, &[], &k.runs, self.workers)? {
                Built::Run { .. } => {
                    k.runs.push(Arc::new(Run::open(&path)?));
                    None
                }
                Built::Duplicate(c) => Some(c),
            }
        };
        drop(batches);
        let Some(c) = conflict else {
            return Ok(());
        };
        let key_type = self
            .key_col
            .map(|k| self.schema.columns[k].data_type)
            .unwrap_or(DataType::Text);
        let origin = &self.keys[b].origin;
        let describe =
            |local: RowId| describe_row(&self.provenance, self.inputs, origin_row(origin, local));
        Err(Error::DuplicateKeyIn {
            dataset: name.to_string(),
            key: crate::index::display_key(key_type, &c.key),
            first: describe(c.first),
            second: describe(c.second),
        })
    }

    /// Waits for the encoders (their senders dropped): files and bytes
    /// written, or the first error.
    fn join(&mut self) -> Result<(u64, u64)> {
        self.senders.clear();
        let mut first: Option<Error> = None;
        let (mut files, mut bytes) = (0, 0);
        for h in self.handles.drain(..) {
            match h.join() {
                Ok(Ok((f, b))) => {
                    files += f;
                    bytes += b;
                }
                Ok(Err(e)) => {
                    first.get_or_insert(e);
                }
                Err(_) => {
                    first.get_or_insert(Error::Internal("a file encoder panicked".into()));
                }
            }
        }
        if let Some(e) = self.failed.lock().ok().and_then(|mut f| f.take()) {
            return Err(e);
        }
        match first {
            Some(e) => Err(e),
            None => Ok((files, bytes)),
        }
    }
}

/// The file properties of bucket `bucket` of `buckets` (by `column`), or
/// of an unbucketed dataset: an export's, with the bucket in the
/// key-value metadata.
fn bucket_properties(
    schema: &Schema,
    opts: &ExportOptions,
    bucket: Option<(&str, u32, u32)>,
) -> WriterProperties {
    let more = bucket
        .map(|(column, b, n)| {
            KeyValue::new("sluice.bucket".to_string(), format!("{b}/{n} {column}"))
        })
        .into_iter()
        .collect();
    super::properties_with(schema, opts, more)
}

/// One encoder thread: the files of the streams dealt to it.
struct Encoder {
    rx: Receiver<Job>,
    dirs: Vec<PathBuf>,
    props: Vec<WriterProperties>,
    per_bucket: usize,
    schema: SchemaRef,
    opts: ExportOptions,
    prefix: String,
    row_group_cap: usize,
    failed: Arc<Mutex<Option<Error>>>,
    abandon: Arc<AtomicBool>,
}

impl Encoder {
    /// Writes what comes until the sink hangs up; returns the files and
    /// bytes written. An error is left in `failed` (and the queue closed,
    /// so that the sink's next send fails and reports it).
    fn run(self) -> Result<(u64, u64)> {
        let mut open: HashMap<usize, PartFile> = HashMap::new();
        let mut next: HashMap<usize, u32> = HashMap::new();
        let (mut files, mut bytes) = (0u64, 0u64);
        let result = (|| -> Result<()> {
            while let Ok((stream, batch)) = self.rx.recv() {
                let batch = crate::batch::dict::decode_batch(&batch, &[])?;
                let f = match open.entry(stream) {
                    std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                    std::collections::hash_map::Entry::Vacant(e) => {
                        let seq = next.entry(stream).or_insert(0);
                        let bucket = stream / self.per_bucket;
                        let path = self.dirs[bucket].join(format!(
                            "{}-{stream:05}-{:03}.{}",
                            self.prefix,
                            *seq,
                            self.opts.format.extension()
                        ));
                        *seq += 1;
                        e.insert(PartFile::create(
                            &path,
                            &self.schema,
                            self.props[bucket].clone(),
                            &self.opts,
                        )?)
                    }
                };
                f.write(&batch)?;
                f.cap_row_group(self.row_group_cap)?;
                if f.size() >= self.opts.target_file_size
                    && let Some(f) = open.remove(&stream)
                {
                    bytes += f.close()?;
                    files += 1;
                    crate::fault::export_file_closed();
                }
            }
            if self.abandon.load(Ordering::Relaxed) {
                return Ok(());
            }
            for (_, f) in open.drain() {
                bytes += f.close()?;
                files += 1;
                crate::fault::export_file_closed();
            }
            Ok(())
        })();
        match result {
            Ok(()) => Ok((files, bytes)),
            Err(e) => {
                if let Ok(mut f) = self.failed.lock() {
                    f.get_or_insert(e);
                }
                Err(Error::Internal("a file encoder failed".into()))
            }
        }
    }
}

/// Rows of a key column read at once by [`check_bucket`].
const CHECK_BATCH_ROWS: usize = 1 << 20;

/// A key found twice in one bucket of a dataset ([`check_bucket`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repeat {
    /// The key in the key index's byte form, and as a message shows it.
    pub key: Vec<u8>,
    pub shown: String,
    /// The files holding the two rows (the earlier first, in file name
    /// order), and each row's number in its file (0 = its first).
    pub first: (PathBuf, u64),
    pub second: (PathBuf, u64),
}

/// Checks that no key repeats among the Parquet files of directory `dir`
/// (one bucket of a converted dataset, written by many tasks: a key's
/// rows all land in one bucket, so that checking each bucket checks the
/// whole dataset). The key column is the one the files' `sluice.key`
/// names. Returns the first key found twice, with the files and rows of
/// both; `None` when every key is unique (or the files have no key).
pub fn check_bucket(dir: &Path, threads: Option<usize>) -> Result<Option<Repeat>> {
    use parquet::arrow::ProjectionMask;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    files.sort();
    let mut batches: Vec<(RowId, KeyBatch)> = Vec::new();
    // Per file: its first row id.
    let mut starts: Vec<u64> = Vec::with_capacity(files.len());
    let mut key_type = None;
    let mut next: u64 = 0;
    for f in &files {
        starts.push(next);
        let file = std::fs::File::open(f).map_err(|e| Error::io(f, e))?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| super::parquet_error(f, e))?;
        let kv = builder.metadata().file_metadata().key_value_metadata();
        let meta = |name: &str| {
            kv.and_then(|kv| kv.iter().find(|k| k.key == name))
                .and_then(|k| k.value.clone())
        };
        let (Some(key), Some(schema)) = (meta("sluice.key"), meta("sluice.schema")) else {
            return Ok(None);
        };
        let schema: Schema = schema.parse()?;
        let k = schema.position(&key).ok_or_else(|| Error::Input {
            path: f.display().to_string(),
            message: format!("its key column {key} is not among its columns"),
        })?;
        key_type = Some(schema.columns[k].data_type);
        let leaf = builder
            .parquet_schema()
            .columns()
            .iter()
            .position(|c| c.name() == key)
            .ok_or_else(|| Error::Input {
                path: f.display().to_string(),
                message: format!("no column {key} in the file"),
            })?;
        let mask = ProjectionMask::leaves(builder.parquet_schema(), [leaf]);
        // Large batches: each is sorted on its own and merged with the
        // others, so that the merge's heap holds few.
        let reader = builder
            .with_projection(mask)
            .with_batch_size(CHECK_BATCH_ROWS)
            .build()
            .map_err(|e| super::parquet_error(f, e))?;
        for b in reader {
            let b = b.map_err(|e| Error::Input {
                path: f.display().to_string(),
                message: format!("Parquet: {e}"),
            })?;
            let n = b.num_rows() as u64;
            if n > 0 {
                batches.push((next, KeyBatch::from_array(b.column(0).as_ref())?));
            }
            next += n;
        }
    }
    let Some(c) = crate::index::first_repeat(&batches, worker_count(threads))? else {
        return Ok(None);
    };
    let at = |row: RowId| {
        let i = starts.partition_point(|&s| s <= row) - 1;
        (files[i].clone(), row - starts[i])
    };
    Ok(Some(Repeat {
        shown: crate::index::display_key(key_type.unwrap_or(DataType::Text), &c.key),
        key: c.key,
        first: at(c.first),
        second: at(c.second),
    }))
}

/// Where the rows of `inputs` whose key (`load`'s schema's key column,
/// or `load.key`) is `key` (in the key index's byte form, as
/// [`Repeat::key`]) come from, as messages name rows (`file:line`), in
/// input order: after a repeat found in a bucket, the lines of the input
/// files of the tasks that wrote the two rows.
pub fn locate_key(inputs: &[Input], load: &LoadOptions, key: &[u8]) -> Result<Vec<String>> {
    let Some(mut schema) = load.schema.clone() else {
        return Err(Error::Config("locating a key needs the schema".into()));
    };
    if let Some(k) = &load.key {
        schema.set_key(k)?;
    }
    let mut load = load.clone();
    load.schema = Some(schema);
    load.commit_every = CommitEvery::ONCE;
    load.rejects = None;
    let mut sink = Locate {
        key: key.to_vec(),
        inputs: &[],
        provenance: Vec::new(),
        found: Vec::new(),
    };
    load_into(&mut sink, "locate", inputs, &load)?;
    Ok(sink.found)
}

/// The sink of [`locate_key`]: rows of one key named, nothing kept.
struct Locate<'a> {
    key: Vec<u8>,
    inputs: &'a [Input],
    provenance: Vec<Provenance>,
    found: Vec<String>,
}

impl<'a> Sink<'a> for Locate<'a> {
    fn begin(&mut self, opts: &LoadOptions, inputs: &'a [Input]) -> Result<Layout> {
        let schema = opts
            .schema
            .clone()
            .ok_or_else(|| Error::Config("locating a key needs the schema".into()))?;
        let key = schema
            .key_column()
            .ok_or_else(|| Error::Config("locating a key needs a key column".into()))?;
        self.inputs = inputs;
        self.provenance.clear();
        self.found.clear();
        let mut layout = Layout::plain(schema);
        layout.key = Some(key);
        layout.provenance = true;
        Ok(layout)
    }

    fn write(&mut self, rows: Rows<'_>) -> Result<u64> {
        self.provenance.extend(rows.provenance.iter().cloned());
        let mut n = 0;
        for p in rows.pieces {
            if let Some(kb) = &p.keys {
                let mut rows_found: Vec<u32> = (0..kb.len())
                    .filter(|&i| kb.sorted_key(i) == self.key.as_slice())
                    .map(|i| kb.sorted_row(i))
                    .collect();
                rows_found.sort_unstable();
                for r in rows_found {
                    let block_row = p.rows.get(r as usize).copied().unwrap_or(r);
                    self.found.push(describe_row(
                        &self.provenance,
                        self.inputs,
                        rows.first_row + u64::from(block_row),
                    ));
                }
            }
            n += p.batch.num_rows() as u64;
        }
        Ok(n)
    }

    fn finish(&mut self) -> Result<()> {
        Ok(())
    }

    fn commit(&mut self, _group: &GroupFiles<'_>) -> Result<Committed> {
        Ok(Committed::default())
    }

    fn abort(&mut self) {}
}
