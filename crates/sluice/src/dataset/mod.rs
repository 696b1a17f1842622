//! Datasets of files: a table written out as Parquet, CSV or JSON-lines
//! files, Hive-partitioned, for the engines that run on many machines
//! (Spark, Trino, Dask, DuckDB, Polars).
//!
//! Useful for: `sluice export` (every core writes; one directory per
//! partition value or per shard; atomic: the dataset appears whole, with
//! `_SUCCESS`, or not at all) and `sluice query --output FILE` (one file).
//! Not useful for: reading files back (`load::columnar`), or the store's
//! own segment files (`store`).
//!
//! # Parquet as written here
//!
//! Format 2.6 types with version-1 data pages (every engine reads them),
//! zstd (level 3) by default, dictionary encoding where a column repeats,
//! row groups of 1 Mi rows with statistics, the column and offset indexes
//! (page pruning), and the key-value metadata `sluice.schema` (the
//! table's columns, types and primary key, partition columns included)
//! and `sluice.key`. Types: INT as INT32, BIGINT as INT64, DECIMAL(p,s)
//! as an INT64-backed DECIMAL(p,s), DATE as DATE, TIMESTAMP as INT64
//! TIMESTAMP(MICROS, not adjusted to UTC), BOOLEAN, DOUBLE, TEXT as UTF-8
//! strings.

pub mod convert;
pub mod hive;

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array};
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};

use crate::batch::{Schema, format_value};
use crate::error::{Error, Result};
use crate::exec::worker_count;
use crate::query::filter::RowFilter;
use crate::store::Database;

/// The file format of a dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    Parquet,
    /// RFC 4180 CSV with a header line.
    Csv,
    /// One JSON object a line.
    Jsonl,
}

impl FileFormat {
    /// The files' extension.
    pub fn extension(self) -> &'static str {
        match self {
            FileFormat::Parquet => "parquet",
            FileFormat::Csv => "csv",
            FileFormat::Jsonl => "jsonl",
        }
    }

    /// The format a file name's extension names (`.parquet`, `.pq`,
    /// `.csv`, `.jsonl`, `.ndjson`), if any.
    pub fn from_path(p: &Path) -> Option<FileFormat> {
        let ext = p.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "parquet" | "pq" => Some(FileFormat::Parquet),
            "csv" => Some(FileFormat::Csv),
            "jsonl" | "ndjson" => Some(FileFormat::Jsonl),
            _ => None,
        }
    }
}

impl FromStr for FileFormat {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "parquet" => Ok(FileFormat::Parquet),
            "csv" => Ok(FileFormat::Csv),
            "jsonl" | "ndjson" => Ok(FileFormat::Jsonl),
            _ => Err(Error::Config(format!(
                "format {s:?}: expected parquet, csv or jsonl"
            ))),
        }
    }
}

/// How Parquet pages are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// zstd at this level (1 ..= 22).
    Zstd(i32),
    Snappy,
    None,
}

impl FromStr for Codec {
    type Err = Error;
    /// `zstd`, `zstd:N`, `snappy` or `none`.
    fn from_str(s: &str) -> Result<Self> {
        let l = s.to_ascii_lowercase();
        match l.as_str() {
            "zstd" => Ok(Codec::Zstd(3)),
            "snappy" => Ok(Codec::Snappy),
            "none" | "uncompressed" => Ok(Codec::None),
            _ => match l.strip_prefix("zstd:").and_then(|n| n.parse::<i32>().ok()) {
                Some(n) if (1..=22).contains(&n) => Ok(Codec::Zstd(n)),
                _ => Err(Error::Config(format!(
                    "compression {s:?}: expected zstd, zstd:LEVEL (1-22), snappy or none"
                ))),
            },
        }
    }
}

/// What a dataset's directories are split by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartitionBy {
    /// One directory per value of this column (`col=value/`); the column
    /// is not stored inside the files.
    Column(String),
    /// One directory per shard of a sharded table (`shard=03/`).
    Shard,
}

impl FromStr for PartitionBy {
    type Err = Error;
    /// `shard`, or a column name.
    fn from_str(s: &str) -> Result<Self> {
        if s.eq_ignore_ascii_case("shard") {
            Ok(PartitionBy::Shard)
        } else {
            Ok(PartitionBy::Column(s.to_ascii_lowercase()))
        }
    }
}

/// The options of an export (`sluice export`'s, of the same names).
#[derive(Debug, Clone)]
pub struct ExportOptions {
    pub format: FileFormat,
    pub partition_by: Option<PartitionBy>,
    /// Rows per Parquet row group.
    pub row_group_size: usize,
    pub compression: Codec,
    /// A file is closed and the next begun once it holds about this many
    /// bytes.
    pub target_file_size: u64,
    /// Only rows for which this SQL condition holds.
    pub filter: Option<String>,
    /// Writers (`None`: every usable core).
    pub threads: Option<usize>,
    /// Replace a dataset already at the output path.
    pub overwrite: bool,
    /// CSV: the field delimiter.
    pub delimiter: u8,
    /// CSV: write a header line in each file.
    pub header: bool,
    /// Set to stop the export: nothing is published.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Counters for a progress display: segment bytes read, rows written.
    pub progress: Option<Arc<crate::load::Progress>>,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            format: FileFormat::Parquet,
            partition_by: None,
            row_group_size: 1 << 20,
            compression: Codec::Zstd(3),
            target_file_size: 512 << 20,
            filter: None,
            threads: None,
            overwrite: false,
            delimiter: b',',
            header: true,
            cancel: None,
            progress: None,
        }
    }
}

/// What an export wrote.
#[derive(Debug, Clone, Default)]
pub struct ExportSummary {
    pub rows: u64,
    pub files: u64,
    pub bytes: u64,
    /// Partition directories (0: not partitioned).
    pub partitions: u64,
    pub workers: usize,
    pub seconds: f64,
}

/// Open writers per worker before all of them are closed (a partition
/// column with many values must not hold a row group of each in memory).
const MAX_OPEN_FILES: usize = 128;

/// Writes `table` as a dataset in directory `output`: see the [module
/// documentation](self). The dataset is written under a hidden name
/// beside `output` and renamed into place with `_SUCCESS` once complete;
/// a failed or cancelled export leaves nothing at `output`.
pub fn export_table(
    db: &Database,
    table: &str,
    output: &Path,
    opts: &ExportOptions,
) -> Result<ExportSummary> {
    let start = Instant::now();
    let meta = db
        .table(table)
        .ok_or_else(|| Error::UndefinedTable(format!("no table named {table:?}")))?
        .clone();
    db.check_shard_dirs(table)?;
    let schema = &meta.schema;
    let part_col = match &opts.partition_by {
        None => None,
        Some(PartitionBy::Shard) => {
            if meta.sharding.is_none() {
                return Err(Error::Config(format!(
                    "--partition-by shard: table {table} is not sharded (partition by one of its columns instead)"
                )));
            }
            None
        }
        Some(PartitionBy::Column(c)) => Some(schema.position(c).ok_or_else(|| {
            Error::UndefinedColumn(format!(
                "--partition-by {c}: table {table} has no such column (its columns: {})",
                schema.column_names()
            ))
        })?),
    };
    let filter = match &opts.filter {
        Some(p) => Some(RowFilter::new(db, table, p)?),
        None => None,
    };
    let stored = schema.arrow_schema();
    // The files' columns: the table's, less a partition column.
    let kept: Vec<usize> = (0..schema.len()).filter(|&c| Some(c) != part_col).collect();
    if kept.is_empty() {
        return Err(Error::Config(format!(
            "--partition-by: table {table} has no other column to write into the files"
        )));
    }
    let file_schema = Arc::new(stored.project(&kept)?);
    let shard_width = meta
        .sharding
        .as_ref()
        .map(|s| (s.count.saturating_sub(1)).to_string().len().max(2))
        .unwrap_or(2);

    let staging = Staging::new(output, opts.overwrite, Some(db.dir()))?;
    let segments: Vec<_> = meta
        .segments
        .iter()
        .filter(|s| filter.as_ref().is_none_or(|f| f.may_match(s)))
        .cloned()
        .collect();
    let workers = worker_count(opts.threads).min(segments.len()).max(1);
    let ctx = Ctx {
        dir: staging.tmp.clone(),
        schema: file_schema.clone(),
        props: writer_properties(schema, opts),
        opts,
        next_file: AtomicUsize::new(0),
        files: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        partitions: Mutex::new(std::collections::HashSet::new()),
    };
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let rows = AtomicU64::new(0);
    let run = |_: usize| -> Result<()> {
        let mut open: HashMap<String, PartFile> = HashMap::new();
        let result = (|| -> Result<()> {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(seg) = segments.get(i) else {
                    return Ok(());
                };
                if failed.load(Ordering::Relaxed)
                    || opts
                        .cancel
                        .as_ref()
                        .is_some_and(|c| c.load(Ordering::Relaxed))
                {
                    return Ok(());
                }
                let batches =
                    crate::store::segment::read_segment(&db.dir().join(&seg.file), seg, &stored)?;
                for b in batches {
                    let b = match &filter {
                        Some(f) => f.apply(&b)?,
                        None => b,
                    };
                    if b.num_rows() == 0 {
                        continue;
                    }
                    let b = crate::batch::dict::decode_batch(&b, &[])?;
                    let n = b.num_rows() as u64;
                    match (&opts.partition_by, part_col) {
                        (Some(PartitionBy::Shard), _) => {
                            let dir = format!("shard={:0w$}", seg.shard, w = shard_width);
                            ctx.write(&mut open, dir, &b.project(&kept)?)?;
                        }
                        (_, Some(c)) => {
                            for (dir, rows) in
                                split_by_value(b.column(c).as_ref(), &schema.columns[c].name)
                            {
                                let idx = UInt32Array::from(rows);
                                let cols: Vec<ArrayRef> = kept
                                    .iter()
                                    .map(|&k| arrow_select::take::take(b.column(k), &idx, None))
                                    .collect::<std::result::Result<_, _>>()?;
                                let part = RecordBatch::try_new(file_schema.clone(), cols)?;
                                ctx.write(&mut open, dir, &part)?;
                            }
                        }
                        _ => ctx.write(&mut open, String::new(), &b)?,
                    }
                    rows.fetch_add(n, Ordering::Relaxed);
                    if let Some(p) = &opts.progress {
                        p.rows.fetch_add(n, Ordering::Relaxed);
                    }
                }
                if let Some(p) = &opts.progress {
                    p.bytes_read.fetch_add(seg.bytes, Ordering::Relaxed);
                }
            }
        })();
        let closed = ctx.close_all(&mut open);
        if result.is_err() || closed.is_err() {
            failed.store(true, Ordering::Relaxed);
        }
        result.and(closed)
    };
    let results: Vec<Result<()>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers).map(|w| s.spawn(move || run(w))).collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::Internal("an export worker panicked".into())))
            })
            .collect()
    });
    for r in results {
        r?;
    }
    if opts
        .cancel
        .as_ref()
        .is_some_and(|c| c.load(Ordering::Relaxed))
    {
        return Err(Error::Cancelled);
    }
    // No row at all: one empty file with the columns, so that readers
    // (and `sluice load`) see the schema, as Spark writes one.
    if ctx.files.load(Ordering::Relaxed) == 0 {
        let path = ctx
            .dir
            .join(format!("part-00000.{}", opts.format.extension()));
        let f = PartFile::create(&path, &ctx.schema, ctx.props.clone(), opts)?;
        ctx.close(f)?;
    }
    let partitions = ctx.partitions.lock().map(|p| p.len()).unwrap_or(0) as u64;
    let summary = ExportSummary {
        rows: rows.load(Ordering::Relaxed),
        files: ctx.files.load(Ordering::Relaxed),
        bytes: ctx.bytes.load(Ordering::Relaxed),
        partitions: if opts.partition_by.is_some() {
            partitions
        } else {
            0
        },
        workers,
        seconds: 0.0,
    };
    staging.publish()?;
    Ok(ExportSummary {
        seconds: start.elapsed().as_secs_f64(),
        ..summary
    })
}

/// Writes `batches` as one file at `path` (Parquet, CSV or JSON lines by
/// `opts.format`), atomically: under a hidden name beside it, renamed
/// into place when complete. Returns the rows and bytes written.
/// `schema_meta`: the sluice columns, recorded in a Parquet file's
/// metadata when given.
pub fn write_file(
    path: &Path,
    schema: &SchemaRef,
    batches: impl IntoIterator<Item = Result<RecordBatch>>,
    schema_meta: Option<&Schema>,
    opts: &ExportOptions,
) -> Result<(u64, u64)> {
    let name = path
        .file_name()
        .ok_or_else(|| Error::Config(format!("{}: not a file name", path.display())))?;
    if path.is_dir() {
        return Err(Error::Config(format!(
            "{} is a directory; give a file name, or --partition-by for a dataset",
            path.display()
        )));
    }
    let tmp = path.with_file_name(format!(
        ".{}.sluice-tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let props = match schema_meta {
        Some(s) => writer_properties(s, opts),
        None => base_properties(opts).build(),
    };
    let written = (|| -> Result<(u64, u64)> {
        let mut f = PartFile::create(&tmp, schema, props, opts)?;
        let mut rows = 0u64;
        for b in batches {
            if opts
                .cancel
                .as_ref()
                .is_some_and(|c| c.load(Ordering::Relaxed))
            {
                return Err(Error::Cancelled);
            }
            let b = crate::batch::dict::decode_batch(&b?, &[])?;
            rows += b.num_rows() as u64;
            f.write(&b)?;
            if let Some(p) = &opts.progress {
                p.rows.store(rows, Ordering::Relaxed);
            }
        }
        Ok((rows, f.close()?))
    })();
    match written {
        Ok(done) => {
            std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))?;
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                crate::store::manifest::sync_dir(parent)?;
            }
            Ok(done)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// The writer settings every Parquet file gets.
fn base_properties(opts: &ExportOptions) -> parquet::file::properties::WriterPropertiesBuilder {
    let compression = match opts.compression {
        Codec::Zstd(level) => Compression::ZSTD(ZstdLevel::try_new(level).unwrap_or_default()),
        Codec::Snappy => Compression::SNAPPY,
        Codec::None => Compression::UNCOMPRESSED,
    };
    WriterProperties::builder()
        .set_compression(compression)
        .set_max_row_group_row_count(Some(opts.row_group_size.max(1)))
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_created_by(format!("sluice version {}", env!("CARGO_PKG_VERSION")))
}

/// [`base_properties`] with the table's schema and key in the metadata.
fn writer_properties(schema: &Schema, opts: &ExportOptions) -> WriterProperties {
    properties_with(schema, opts, Vec::new())
}

/// [`writer_properties`] with more key-value metadata.
fn properties_with(schema: &Schema, opts: &ExportOptions, more: Vec<KeyValue>) -> WriterProperties {
    let mut kv = vec![KeyValue::new(
        "sluice.schema".to_string(),
        schema.to_string(),
    )];
    if let Some(k) = schema.key_column() {
        kv.push(KeyValue::new(
            "sluice.key".to_string(),
            schema.columns[k].name.clone(),
        ));
    }
    kv.extend(more);
    without_key_dictionary(base_properties(opts), schema)
        .set_key_value_metadata(Some(kv))
        .build()
}

/// No dictionary for the key column: its values never repeat, so that
/// the writer would only fill one and fall back (a tenth of a conversion's
/// time with a TEXT key).
fn without_key_dictionary(
    b: parquet::file::properties::WriterPropertiesBuilder,
    schema: &Schema,
) -> parquet::file::properties::WriterPropertiesBuilder {
    match schema.key_column() {
        Some(k) => b.set_column_dictionary_enabled(
            parquet::schema::types::ColumnPath::from(schema.columns[k].name.as_str()),
            false,
        ),
        None => b,
    }
}

/// Rows of a batch grouped by the partition directory of their value in
/// `col`, in order of first appearance.
fn split_by_value(col: &dyn Array, name: &str) -> Vec<(String, Vec<u32>)> {
    let mut order: Vec<(String, Vec<u32>)> = Vec::new();
    let mut at: HashMap<Option<String>, usize> = HashMap::new();
    for r in 0..col.len() {
        let v = format_value(col, r);
        let i = *at.entry(v.clone()).or_insert_with(|| {
            order.push((
                format!(
                    "{}={}",
                    hive::escape_value(Some(name)),
                    hive::escape_value(v.as_deref())
                ),
                Vec::new(),
            ));
            order.len() - 1
        });
        order[i].1.push(r as u32);
    }
    order
}

/// What the workers of one export share.
struct Ctx<'o> {
    dir: PathBuf,
    schema: SchemaRef,
    props: WriterProperties,
    opts: &'o ExportOptions,
    next_file: AtomicUsize,
    files: AtomicU64,
    bytes: AtomicU64,
    partitions: Mutex<std::collections::HashSet<String>>,
}

impl Ctx<'_> {
    /// Appends `b` to the worker's open file of partition `dir` (`""`:
    /// not partitioned), opening one, and closing it once it is full.
    fn write(
        &self,
        open: &mut HashMap<String, PartFile>,
        dir: String,
        b: &RecordBatch,
    ) -> Result<()> {
        if !open.contains_key(&dir) && open.len() >= MAX_OPEN_FILES {
            self.close_all(open)?;
        }
        if !open.contains_key(&dir) {
            let d = self.dir.join(&dir);
            if !dir.is_empty() {
                std::fs::create_dir_all(&d).map_err(|e| Error::io(&d, e))?;
                if let Ok(mut p) = self.partitions.lock() {
                    p.insert(dir.clone());
                }
            }
            let n = self.next_file.fetch_add(1, Ordering::Relaxed);
            let path = d.join(format!("part-{n:05}.{}", self.opts.format.extension()));
            let f = PartFile::create(&path, &self.schema, self.props.clone(), self.opts)?;
            open.insert(dir.clone(), f);
        }
        let Some(f) = open.get_mut(&dir) else {
            return Err(Error::Internal("export: a file just opened is gone".into()));
        };
        f.write(b)?;
        if f.size() >= self.opts.target_file_size
            && let Some(f) = open.remove(&dir)
        {
            self.close(f)?;
        }
        Ok(())
    }

    fn close(&self, f: PartFile) -> Result<()> {
        let bytes = f.close()?;
        crate::fault::export_file_closed();
        self.files.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        Ok(())
    }

    fn close_all(&self, open: &mut HashMap<String, PartFile>) -> Result<()> {
        let mut first = Ok(());
        for (_, f) in open.drain() {
            let r = self.close(f);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

/// One file being written.
struct PartFile {
    path: PathBuf,
    inner: Inner,
}

enum Inner {
    Parquet(Box<ArrowWriter<File>>),
    Text {
        out: BufWriter<File>,
        bytes: u64,
        format: FileFormat,
        delimiter: u8,
        names: Vec<String>,
    },
}

impl PartFile {
    fn create(
        path: &Path,
        schema: &SchemaRef,
        props: WriterProperties,
        opts: &ExportOptions,
    ) -> Result<PartFile> {
        let file = File::create(path).map_err(|e| Error::io(path, e))?;
        let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
        if opts.format == FileFormat::Parquet
            && let Some(f) = schema
                .fields()
                .iter()
                .find(|f| matches!(f.data_type(), arrow_schema::DataType::Interval(_)))
        {
            // Parquet's INTERVAL holds unsigned months, days and
            // milliseconds: a negative or finer interval would change.
            let _ = std::fs::remove_file(path);
            return Err(Error::Unsupported(format!(
                "column {}: an INTERVAL has no exact Parquet type (Parquet's holds no negative parts nor microseconds); export as CSV or JSON lines (--format csv|jsonl), which write PostgreSQL's text of it",
                f.name()
            )));
        }
        let inner = match opts.format {
            FileFormat::Parquet => Inner::Parquet(Box::new(
                ArrowWriter::try_new(file, schema.clone(), Some(props))
                    .map_err(|e| parquet_error(path, e))?,
            )),
            format => {
                let mut out = BufWriter::with_capacity(1 << 20, file);
                let mut bytes = 0;
                if format == FileFormat::Csv && opts.header {
                    let mut line = Vec::new();
                    let cells: Vec<Option<String>> = names.iter().cloned().map(Some).collect();
                    crate::batch::write_csv_row(&mut line, &cells, opts.delimiter)
                        .map_err(|e| Error::io(path, e))?;
                    out.write_all(&line).map_err(|e| Error::io(path, e))?;
                    bytes = line.len() as u64;
                }
                Inner::Text {
                    out,
                    bytes,
                    format,
                    delimiter: opts.delimiter,
                    names,
                }
            }
        };
        Ok(PartFile {
            path: path.to_path_buf(),
            inner,
        })
    }

    fn write(&mut self, b: &RecordBatch) -> Result<()> {
        let path = &self.path;
        match &mut self.inner {
            Inner::Parquet(w) => w.write(b).map_err(|e| parquet_error(path, e)),
            Inner::Text {
                out,
                bytes,
                format,
                delimiter,
                names,
            } => {
                let mut line = Vec::with_capacity(256);
                let mut cells = Vec::with_capacity(b.num_columns());
                for r in 0..b.num_rows() {
                    line.clear();
                    match format {
                        FileFormat::Jsonl => {
                            crate::batch::write_json_object(&mut line, names, b.columns(), r)
                                .map_err(|e| Error::io(path, e))?;
                            line.push(b'\n');
                        }
                        _ => {
                            cells.clear();
                            cells.extend(b.columns().iter().map(|c| format_value(c.as_ref(), r)));
                            crate::batch::write_csv_row(&mut line, &cells, *delimiter)
                                .map_err(|e| Error::io(path, e))?;
                        }
                    }
                    out.write_all(&line).map_err(|e| Error::io(path, e))?;
                    *bytes += line.len() as u64;
                }
                Ok(())
            }
        }
    }

    /// Ends the Parquet row group being built once its encoded columns
    /// hold `cap` bytes (many files open at once must not each hold a
    /// large one).
    fn cap_row_group(&mut self, cap: usize) -> Result<()> {
        if let Inner::Parquet(w) = &mut self.inner
            && w.in_progress_size() >= cap
        {
            w.flush().map_err(|e| parquet_error(&self.path, e))?;
        }
        Ok(())
    }

    /// Bytes in the file so far (Parquet: with what is buffered for the
    /// row group being built, as encoded).
    fn size(&self) -> u64 {
        match &self.inner {
            Inner::Parquet(w) => (w.bytes_written() + w.in_progress_size()) as u64,
            Inner::Text { bytes, .. } => *bytes,
        }
    }

    /// Finishes the file and flushes it to disk; returns its size.
    fn close(self) -> Result<u64> {
        let path = self.path;
        let file = match self.inner {
            Inner::Parquet(w) => w.into_inner().map_err(|e| parquet_error(&path, e))?,
            Inner::Text { out, .. } => out
                .into_inner()
                .map_err(|e| Error::io(&path, e.into_error()))?,
        };
        file.sync_all().map_err(|e| Error::io(&path, e))?;
        let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        Ok(len)
    }
}

/// A Parquet error about file `path`.
pub(crate) fn parquet_error(path: &Path, e: parquet::errors::ParquetError) -> Error {
    match e {
        parquet::errors::ParquetError::External(inner) => {
            match inner.downcast::<std::io::Error>() {
                Ok(io) => Error::io(path, *io),
                Err(other) => Error::Input {
                    path: path.display().to_string(),
                    message: format!("Parquet: {other}"),
                },
            }
        }
        other => Error::Input {
            path: path.display().to_string(),
            message: format!("Parquet: {other}"),
        },
    }
}

/// A dataset directory being written: a hidden sibling of the final
/// path, renamed into place by [`Staging::publish`]; removed if dropped
/// before.
struct Staging {
    tmp: PathBuf,
    output: PathBuf,
    overwrite: bool,
    published: bool,
}

impl Staging {
    /// `db_dir`: a database the dataset must not be written over.
    fn new(output: &Path, overwrite: bool, db_dir: Option<&Path>) -> Result<Staging> {
        let name = output
            .file_name()
            .ok_or_else(|| {
                Error::Config(format!(
                    "--output {}: not a directory name",
                    output.display()
                ))
            })?
            .to_string_lossy()
            .into_owned();
        // Never over (or around) the database itself.
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let out = match output.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => canon(parent).join(&name),
            _ => canon(Path::new(".")).join(&name),
        };
        if let Some(db_dir) = db_dir
            && canon(db_dir).starts_with(&out)
        {
            return Err(Error::Config(format!(
                "--output {} holds the database {}; choose another directory",
                output.display(),
                db_dir.display()
            )));
        }
        remove_stale(output, &name);
        if output.is_dir() && !is_empty_dir(output) {
            if !overwrite {
                return Err(Error::Config(format!(
                    "{} already exists; remove it, choose another --output, or give --overwrite",
                    output.display()
                )));
            }
            // --overwrite replaces a dataset, not any directory.
            if !output.join("_SUCCESS").is_file() {
                return Err(Error::Config(format!(
                    "--overwrite: {} is not a dataset (it has no _SUCCESS file); remove it yourself if it should go",
                    output.display()
                )));
            }
        }
        if output.is_file() {
            return Err(Error::Config(format!(
                "{} is a file; a dataset is a directory",
                output.display()
            )));
        }
        let tmp = output.with_file_name(format!(".{name}.sluice-tmp-{}", std::process::id()));
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
        }
        std::fs::create_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
        Ok(Staging {
            tmp,
            output: output.to_path_buf(),
            overwrite,
            published: false,
        })
    }

    /// `_SUCCESS` written last, then the directory renamed into place
    /// (an old dataset moved aside first, and removed after).
    fn publish(mut self) -> Result<()> {
        let ok = self.tmp.join("_SUCCESS");
        File::create(&ok)
            .and_then(|f| f.sync_all())
            .map_err(|e| Error::io(&ok, e))?;
        sync_tree(&self.tmp)?;
        let mut old = None;
        if self.output.exists() {
            if is_empty_dir(&self.output) {
                std::fs::remove_dir(&self.output).map_err(|e| Error::io(&self.output, e))?;
            } else if self.overwrite {
                let aside = self.output.with_file_name(format!(
                    ".{}.sluice-old-{}",
                    self.output
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    std::process::id()
                ));
                std::fs::rename(&self.output, &aside).map_err(|e| Error::io(&self.output, e))?;
                old = Some(aside);
            }
        }
        if let Err(e) = std::fs::rename(&self.tmp, &self.output) {
            // Put the old dataset back where it was.
            if let Some(old) = &old {
                let _ = std::fs::rename(old, &self.output);
            }
            return Err(Error::io(&self.output, e));
        }
        self.published = true;
        if let Some(parent) = self.output.parent().filter(|p| !p.as_os_str().is_empty()) {
            crate::store::manifest::sync_dir(parent)?;
        }
        // The new dataset is in place; an old one left behind is removed
        // by the next export to this name.
        if let Some(old) = old {
            let _ = std::fs::remove_dir_all(&old);
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.published {
            let _ = std::fs::remove_dir_all(&self.tmp);
        }
    }
}

/// Cleans up after exports to `output` that were killed (their PID is
/// gone; Linux: no `/proc/PID`, elsewhere nothing is touched): their
/// unfinished `.NAME.sluice-tmp-PID` is removed; an old dataset an
/// `--overwrite` had moved aside (`.NAME.sluice-old-PID`) is put back when
/// nothing took its place, else removed.
fn remove_stale(output: &Path, name: &str) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let parent = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let gone = |pid: &str| pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists();
    for e in entries.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if let Some(pid) = n.strip_prefix(&format!(".{name}.sluice-tmp-"))
            && gone(pid)
        {
            let _ = std::fs::remove_dir_all(e.path());
        } else if let Some(pid) = n.strip_prefix(&format!(".{name}.sluice-old-"))
            && gone(pid)
        {
            if output.exists() {
                let _ = std::fs::remove_dir_all(e.path());
            } else {
                let _ = std::fs::rename(e.path(), output);
            }
        }
    }
}

fn is_empty_dir(p: &Path) -> bool {
    std::fs::read_dir(p).is_ok_and(|mut d| d.next().is_none())
}

/// fsyncs every directory of a tree (the files were synced as closed).
fn sync_tree(dir: &Path) -> Result<()> {
    for e in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let e = e.map_err(|e| Error::io(dir, e))?;
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            sync_tree(&e.path())?;
        }
    }
    crate::store::manifest::sync_dir(dir)
}
