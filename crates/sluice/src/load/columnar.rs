//! Loads of columnar files: Parquet and Arrow IPC, Hive-partitioned or
//! not. The rows are already typed: no splitting or parsing, only a
//! conversion to the table's types that refuses any value it would change.
//!
//! Useful for: `sluice load` of `.parquet` / Arrow files (detected by
//! their magic bytes), a dataset written by `sluice export`, Spark,
//! DuckDB or Polars. Every core decodes row groups (files × row groups
//! are the units of work); rows reach the table in file and row-group
//! order, through the table sink (keys checked, shards, one atomic commit
//! per group of files, the load journal, so that the same load run again
//! skips what was committed).
//! Not useful for: text (`load`), Arrow data already in memory
//! (`load_batches`).

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use arrow_array::{Array, ArrayRef, RecordBatch, StringArray, UInt32Array};
use arrow_schema::{DataType as Arrow, SchemaRef};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};

use crate::batch::{DataType, Schema, validate_identifier};
use crate::dataset::{hive, parquet_error};
use crate::error::{Error, Result};
use crate::exec::worker_count;
use crate::source::Input;
use crate::store::Database;

use super::options::checked_options;
use super::plan::{resume_plan, unique_inputs};
use super::request::LoadRequest;
use super::sink::{FileRecord, GroupFiles, Piece, Provenance, Rows, Sink};
use super::workers::{Cut, route_batch};
use super::{LoadOptions, LoadSummary, TableSink};
use crate::batch::column_stats;

/// Rows per batch handed to the table (the unit of zone maps and morsels).
const BATCH_ROWS: usize = 1 << 17;

/// A columnar file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Columnar {
    Parquet,
    /// The Arrow IPC file format (Feather v2).
    ArrowIpc,
}

impl Columnar {
    pub fn name(self) -> &'static str {
        match self {
            Columnar::Parquet => "Parquet",
            Columnar::ArrowIpc => "Arrow IPC",
        }
    }
}

/// The format a file's first bytes name: `PAR1` (Parquet) or `ARROW1`
/// (Arrow IPC file); `None` for anything else and for standard input.
pub fn sniff(input: &Input) -> Result<Option<Columnar>> {
    let Input::File(p) = input else {
        return Ok(None);
    };
    // (Nor a pipe's: a look would consume them.)
    if !input.rereadable() {
        return Ok(None);
    }
    let mut head = [0u8; 6];
    let n = {
        use std::io::Read;
        let mut f = match File::open(p) {
            Ok(f) => f,
            Err(_) => return Ok(None),
        };
        let mut n = 0;
        while n < head.len() {
            match f.read(&mut head[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) => return Err(Error::io(p, e)),
            }
        }
        n
    };
    Ok(if n >= 4 && &head[..4] == b"PAR1" {
        Some(Columnar::Parquet)
    } else if n >= 6 && &head == b"ARROW1" {
        Some(Columnar::ArrowIpc)
    } else {
        None
    })
}

/// Whether a file is a dataset's bookkeeping, not data: a name starting
/// with `_` or `.` (`_SUCCESS`, `_committed_…`, `.part-0.crc`), or a file
/// under the directories engines keep their own state in (`_temporary`:
/// unfinished task attempts of Spark and Hadoop; `_delta_log`,
/// `_spark_metadata`).
fn is_bookkeeping(p: &Path) -> bool {
    let named = p
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with('_') || n.starts_with('.'));
    named
        || p.components().any(|c| {
            matches!(
                c.as_os_str().to_str(),
                Some("_temporary" | "_delta_log" | "_spark_metadata")
            )
        })
}

/// The columnar format of a load's inputs: `given` (`--format parquet`
/// or `arrow`), else what the first data file's bytes say; `None`: text.
/// Bookkeeping files (`_SUCCESS`) are not looked at.
pub fn detect(inputs: &[Input], given: Option<Columnar>) -> Result<Option<Columnar>> {
    if given.is_some() {
        return Ok(given);
    }
    match inputs.iter().find(|i| match i {
        Input::File(p) => !is_bookkeeping(p),
        Input::Stdin => true,
    }) {
        Some(i) => sniff(i),
        None => Ok(None),
    }
}

/// One input file, opened: its columns and units of work.
struct ColFile {
    input: Input,
    path: PathBuf,
    kind: Columnar,
    /// Parquet: the footer, read once.
    parquet: Option<ArrowReaderMetadata>,
    schema: SchemaRef,
    /// Row groups (Parquet) or record batches (Arrow IPC).
    units: usize,
    /// Compressed bytes of each unit, for progress.
    unit_bytes: Vec<u64>,
    size: u64,
    mtime_ns: u64,
    /// `sluice.schema` of the file's metadata, if it has one.
    sluice_schema: Option<String>,
    /// Hive partition values of its path.
    parts: Vec<(String, Option<String>)>,
    /// The bucket its `sluice.bucket` metadata names (a dataset of
    /// `sluice convert --buckets N`).
    bucket: Option<Bucket>,
}

/// Bucket `index` of `of` by `column`: a file of a bucketed dataset, whose
/// rows all hash (the shard hash) to `index` of `of` on `column`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bucket {
    pub index: u32,
    pub of: u32,
    pub column: String,
}

impl Bucket {
    /// Reads `sluice.bucket`'s value, `b/N column`; `None` when it is not
    /// of that form (the file's rows are then routed by their hash).
    pub fn parse(s: &str) -> Option<Bucket> {
        let (place, column) = s.split_once(' ')?;
        let (index, of) = place.split_once('/')?;
        let (index, of): (u32, u32) = (index.parse().ok()?, of.parse().ok()?);
        let column = column.trim();
        (index < of && of <= crate::store::manifest::MAX_SHARDS && !column.is_empty()).then(|| {
            Bucket {
                index,
                of,
                column: column.to_string(),
            }
        })
    }
}

fn open_file(input: &Input, kind: Columnar) -> Result<ColFile> {
    let Input::File(path) = input else {
        return Err(Error::Config(format!(
            "{} input cannot come from standard input (it is read from its end); write it to a file",
            kind.name()
        )));
    };
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let md = file.metadata().map_err(|e| Error::io(path, e))?;
    let mtime_ns = md
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let not_it = |what: &str| Error::Input {
        path: path.display().to_string(),
        message: format!("is not a {} file ({what})", kind.name()),
    };
    match sniff(input)? {
        Some(k) if k == kind => {}
        _ => {
            return Err(not_it(
                "its first bytes say otherwise; every input of a load has one format",
            ));
        }
    }
    match kind {
        Columnar::Parquet => {
            let meta = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
                .map_err(|e| parquet_error(path, e))?;
            let pq = meta.metadata();
            let kv = pq.file_metadata().key_value_metadata();
            let value = |key: &str| {
                kv.and_then(|kv| {
                    kv.iter()
                        .find(|k| k.key == key)
                        .and_then(|k| k.value.clone())
                })
            };
            let sluice_schema = value("sluice.schema");
            let bucket = value("sluice.bucket").and_then(|b| Bucket::parse(&b));
            let unit_bytes = pq
                .row_groups()
                .iter()
                .map(|g| g.compressed_size().max(0) as u64)
                .collect();
            Ok(ColFile {
                input: input.clone(),
                path: path.clone(),
                kind,
                schema: meta.schema().clone(),
                units: pq.num_row_groups(),
                unit_bytes,
                parquet: Some(meta),
                size: md.len(),
                mtime_ns,
                sluice_schema,
                parts: Vec::new(),
                bucket,
            })
        }
        Columnar::ArrowIpc => {
            let r =
                arrow_ipc::reader::FileReader::try_new(file, None).map_err(|e| Error::Input {
                    path: path.display().to_string(),
                    message: format!("Arrow IPC: {e}"),
                })?;
            let n = r.num_batches();
            let sluice_schema = r.custom_metadata().get("sluice.schema").cloned();
            Ok(ColFile {
                input: input.clone(),
                path: path.clone(),
                kind,
                schema: r.schema(),
                units: n,
                unit_bytes: vec![md.len() / n.max(1) as u64; n],
                parquet: None,
                size: md.len(),
                mtime_ns,
                sluice_schema,
                parts: Vec::new(),
                bucket: None,
            })
        }
    }
}

/// The column type a table gets for an Arrow type of the data, `None`
/// when sluice stores no such values.
pub fn column_type(t: &Arrow) -> Option<DataType> {
    Some(match t {
        Arrow::Boolean => DataType::Boolean,
        Arrow::Int8 | Arrow::Int16 | Arrow::Int32 | Arrow::UInt8 | Arrow::UInt16 => DataType::Int,
        Arrow::Int64 | Arrow::UInt32 | Arrow::UInt64 => DataType::BigInt,
        Arrow::Float16 | Arrow::Float32 | Arrow::Float64 => DataType::Double,
        Arrow::Utf8 | Arrow::LargeUtf8 | Arrow::Utf8View => DataType::Text,
        Arrow::Dictionary(_, v)
            if matches!(**v, Arrow::Utf8 | Arrow::LargeUtf8 | Arrow::Utf8View) =>
        {
            DataType::Text
        }
        Arrow::Date32 | Arrow::Date64 => DataType::Date,
        // An instant (a zone given, Parquet's isAdjustedToUTC) is one still.
        Arrow::Timestamp(_, Some(_)) => DataType::TimestampTz,
        Arrow::Timestamp(_, None) => DataType::Timestamp,
        // Seconds, milliseconds, microseconds (nanoseconds when they are
        // whole microseconds: the cast is checked).
        Arrow::Time32(_) | Arrow::Time64(_) => DataType::Time,
        // Months, days and nanoseconds (whole microseconds: checked), or
        // Arrow's year-month and day-time intervals.
        Arrow::Interval(_) => DataType::Interval,
        // Wider decimals (a sum written by an engine is DECIMAL(38,s))
        // become DECIMAL(18,s): a value that does not fit is refused.
        Arrow::Decimal32(p, s)
        | Arrow::Decimal64(p, s)
        | Arrow::Decimal128(p, s)
        | Arrow::Decimal256(p, s)
            if *s >= 0 && (*s as u8) <= (*p).min(crate::batch::MAX_DECIMAL_PRECISION) =>
        {
            DataType::Decimal {
                precision: (*p).min(crate::batch::MAX_DECIMAL_PRECISION),
                scale: *s as u8,
            }
        }
        _ => return None,
    })
}

/// Why a column of Arrow type `t` gets no sluice type, for messages.
fn unsupported(file: &Path, name: &str, t: &Arrow) -> Error {
    let why = match t {
        Arrow::Decimal128(p, s) | Arrow::Decimal256(p, s) => format!(
            "DECIMAL({p},{s}) has a scale sluice's exact decimals (DECIMAL(18,s) at most) cannot hold; give --schema with {name} as DOUBLE or a DECIMAL of smaller scale"
        ),
        _ => format!(
            "{t} is not a type sluice stores (integers, floats, decimals, text, dates, times, timestamps, intervals, booleans); leave the column out with --columns"
        ),
    };
    Error::Input {
        path: file.display().to_string(),
        message: format!("column {name}: {why}"),
    }
}

/// `c` as type `to`, refused when a value would change: a float with a
/// fraction into an integer, a decimal rounded, an integer out of range,
/// sub-microsecond time. Checked by casting back and comparing (text read
/// back must be the same text: `"1.5"` into DECIMAL(4,2) reads back
/// `"1.50"` and is refused; give data of the column's type). Dictionaries
/// are checked as their values, time-zone timestamps as their UTC value
/// (what they store). Anything into TEXT is taken as written.
pub fn exact_cast(c: &ArrayRef, to: &Arrow) -> std::result::Result<ArrayRef, String> {
    cast_checked(c, to, true)
}

fn cast_checked(
    c: &ArrayRef,
    to: &Arrow,
    check_text: bool,
) -> std::result::Result<ArrayRef, String> {
    if matches!(to, Arrow::Time64(_)) {
        times_of_day(c)?;
    }
    if let Arrow::Interval(arrow_schema::IntervalUnit::MonthDayNano) = c.data_type() {
        use arrow_array::cast::AsArray;
        let v = c.as_primitive::<arrow_array::types::IntervalMonthDayNanoType>();
        if let Some(row) = v
            .iter()
            .position(|x| x.is_some_and(|x| x.nanoseconds % 1_000 != 0))
        {
            return Err(format!(
                "the interval of {} ns (row {}) is not whole microseconds",
                v.value(row).nanoseconds,
                row + 1
            ));
        }
    }
    if c.data_type() == to {
        return Ok(c.clone());
    }
    let opts = arrow_cast::CastOptions {
        safe: false,
        ..Default::default()
    };
    let cast = |a: &ArrayRef, t: &Arrow| {
        arrow_cast::cast_with_options(a, t, &opts).map_err(|e| e.to_string())
    };
    // What the values are: a dictionary's values, a zoned timestamp's
    // stored (UTC) value.
    let plain = match c.data_type() {
        Arrow::Dictionary(_, v) => cast(c, v)?,
        Arrow::Timestamp(unit, Some(_)) => {
            let data = c
                .to_data()
                .into_builder()
                .data_type(Arrow::Timestamp(*unit, None));
            arrow_array::make_array(data.build().map_err(|e| e.to_string())?)
        }
        _ => c.clone(),
    };
    if let Some(out) = text_as_time_or_interval(&plain, to)? {
        return Ok(out);
    }
    let out = cast(&plain, to)?;
    let text = matches!(
        plain.data_type(),
        Arrow::Utf8 | Arrow::LargeUtf8 | Arrow::Utf8View
    );
    if matches!(to, Arrow::Utf8) || (text && !check_text) {
        return Ok(out);
    }
    let back = cast(&out, plain.data_type())?;
    let differs = arrow_ord::cmp::distinct(&back, &plain).map_err(|e| e.to_string())?;
    if let Some(row) = differs.iter().position(|d| d == Some(true)) {
        let shown =
            arrow_cast::display::ArrayFormatter::try_new(plain.as_ref(), &Default::default())
                .map(|f| f.value(row).to_string())
                .unwrap_or_default();
        return Err(format!("the value {shown} (row {}) would change", row + 1));
    }
    Ok(out)
}

/// Text as a TIME or an INTERVAL, read as the loader reads a CSV field
/// of one (PostgreSQL's forms; Arrow's casts take no `24:00:00` nor
/// PostgreSQL's text of an interval); `None` for other types.
fn text_as_time_or_interval(
    plain: &ArrayRef,
    to: &Arrow,
) -> std::result::Result<Option<ArrayRef>, String> {
    use crate::parse::value;
    use arrow_array::cast::AsArray;
    if !matches!(
        to,
        Arrow::Time64(arrow_schema::TimeUnit::Microsecond)
            | Arrow::Interval(arrow_schema::IntervalUnit::MonthDayNano)
    ) || !matches!(
        plain.data_type(),
        Arrow::Utf8 | Arrow::LargeUtf8 | Arrow::Utf8View
    ) {
        return Ok(None);
    }
    let text = arrow_cast::cast(plain, &Arrow::Utf8).map_err(|e| e.to_string())?;
    let text = text.as_string::<i32>();
    // Each value read by `parse`, NULL kept; an error names the row.
    fn each<T, C: FromIterator<Option<T>>>(
        text: &StringArray,
        parse: impl Fn(&[u8]) -> std::result::Result<T, String>,
    ) -> std::result::Result<C, String> {
        (0..text.len())
            .map(|r| {
                text.is_valid(r)
                    .then(|| {
                        parse(text.value(r).as_bytes()).map_err(|why| {
                            format!("the value {:?} (row {}) {why}", text.value(r), r + 1)
                        })
                    })
                    .transpose()
            })
            .collect()
    }
    let out: ArrayRef = if matches!(to, Arrow::Time64(_)) {
        Arc::new(each::<_, arrow_array::Time64MicrosecondArray>(
            text,
            value::parse_time,
        )?)
    } else {
        Arc::new(each::<_, arrow_array::IntervalMonthDayNanoArray>(
            text,
            value::parse_interval,
        )?)
    };
    Ok(Some(out))
}

/// Checks that an Arrow time column holds times of day: 0 to 24:00:00
/// (Arrow's types allow any number, Parquet's any 32 or 64 bits).
fn times_of_day(c: &ArrayRef) -> std::result::Result<(), String> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{
        Time32MillisecondType, Time32SecondType, Time64MicrosecondType, Time64NanosecondType,
    };
    use arrow_schema::TimeUnit;
    fn check<T>(a: &ArrayRef, day: i64, unit: &str) -> std::result::Result<(), String>
    where
        T: arrow_array::ArrowPrimitiveType,
        T::Native: Into<i64>,
    {
        let values = a.as_primitive::<T>();
        match values
            .iter()
            .position(|v| v.is_some_and(|v| !(0..=day).contains(&v.into())))
        {
            Some(row) => Err(format!(
                "the value {} {unit} (row {}) is not a time of day (00:00:00 to 24:00:00)",
                values.value(row).into(),
                row + 1
            )),
            None => Ok(()),
        }
    }
    match c.data_type() {
        Arrow::Time32(TimeUnit::Second) => check::<Time32SecondType>(c, 86_400, "s"),
        Arrow::Time32(TimeUnit::Millisecond) => check::<Time32MillisecondType>(c, 86_400_000, "ms"),
        Arrow::Time64(TimeUnit::Microsecond) => {
            check::<Time64MicrosecondType>(c, 86_400_000_000, "µs")
        }
        Arrow::Time64(TimeUnit::Nanosecond) => {
            check::<Time64NanosecondType>(c, 86_400_000_000_000, "ns")
        }
        _ => Ok(()),
    }
}

/// The type of a Hive partition column seen only in paths: INT or BIGINT
/// when every value is an integer, DATE when every one is YYYY-MM-DD,
/// else TEXT.
fn partition_type<'a>(values: impl Iterator<Item = &'a str> + Clone) -> DataType {
    let mut vals = values.peekable();
    if vals.peek().is_none() {
        return DataType::Text;
    }
    if vals.clone().all(|v| v.parse::<i32>().is_ok()) {
        return DataType::Int;
    }
    if vals.clone().all(|v| v.parse::<i64>().is_ok()) {
        return DataType::BigInt;
    }
    let is_date = |v: &str| {
        v.len() == 10
            && v.as_bytes()[4] == b'-'
            && v.as_bytes()[7] == b'-'
            && chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d").is_ok()
    };
    if vals.all(is_date) {
        return DataType::Date;
    }
    DataType::Text
}

/// A columnar load, worked out: the files and the table's columns.
pub struct ColumnarPlan {
    pub format: Columnar,
    files: Vec<ColFile>,
    /// The table's columns: given, the table's own, or from the files.
    pub schema: Schema,
    /// The schema came from the files (not given, no table yet).
    pub inferred: bool,
    /// Bookkeeping files skipped (`_SUCCESS`).
    pub skipped: u64,
    /// Hive partition columns read from the paths.
    pub partition_columns: Vec<String>,
    /// Every file is a bucket of this many by this column, and every
    /// bucket is there (a whole dataset of `sluice convert --buckets N`).
    pub buckets: Option<(u32, String)>,
    /// No such table yet: this load creates it.
    pub new_table: bool,
}

impl ColumnarPlan {
    /// The options of the load `req` asks for (key, shards, compression,
    /// commit groups, reload, threads), with the plan's schema.
    pub fn options(&self, req: &LoadRequest) -> Result<LoadOptions> {
        let mut o = LoadOptions {
            schema: Some(self.schema.clone()),
            threads: req.threads,
            key: req.key.clone(),
            shards: req.shards,
            shard_by: req.shard_by.clone(),
            shard_paths: req.shard_paths.clone(),
            on_duplicate: req.on_duplicate,
            reload: req.reload,
            commit_every: super::request::parse_commit_every(&req.commit_every)?,
            ..LoadOptions::default()
        };
        if let Some(c) = &req.compression {
            o.compression = Some(c.parse()?);
        }
        // A new table from a whole bucketed dataset: a shard a bucket, by
        // the bucket column, unless the load says otherwise.
        if let Some((n, column)) = self.default_shards(req) {
            o.shards = Some(n);
            o.shard_by = Some(column);
        }
        Ok(o)
    }

    /// The shards a new table gets from a bucketed dataset when the load
    /// names none (`--shards`, `--shard-by`, `--shard-paths`): its
    /// buckets, by the bucket column (unless the table's key is another
    /// column: a keyed table is sharded by its key).
    pub fn default_shards(&self, req: &LoadRequest) -> Option<(u32, String)> {
        let (n, column) = self.buckets.as_ref()?;
        // A keyed table is sharded by its key only.
        let key_fits = self
            .schema
            .key_column()
            .is_none_or(|k| self.schema.columns[k].name.eq_ignore_ascii_case(column));
        (self.new_table
            && *n > 1
            && req.shards.is_none()
            && req.shard_by.is_none()
            && req.shard_paths.is_empty()
            && self.schema.position(column).is_some()
            && key_fits)
            .then(|| (*n, column.clone()))
    }
}

/// Opens the inputs (footers only) and works out the table's columns:
/// the existing table's, else `--schema`, else the files' (`sluice.schema`
/// metadata, written by `sluice export`, gives exact types and the key;
/// other files' Arrow types are mapped), restricted by `--columns`, with
/// `--key`. With `--hive-partitioning`, `col=value` directories add columns (appended,
/// typed by the table, the metadata, or their values). The text options
/// of `req` (delimiter, quote, header, …) are refused.
pub fn prepare_columnar(
    db_dir: &Path,
    table: &str,
    inputs: &[Input],
    format: Columnar,
    req: &LoadRequest,
) -> Result<ColumnarPlan> {
    let hive = req.hive_partitioning;
    refuse_text_options(req, format)?;
    validate_identifier(table, "table")?;
    let table = table.to_ascii_lowercase();
    let mut skipped = 0;
    let mut files = Vec::new();
    for i in inputs {
        if let Input::File(p) = i
            && is_bookkeeping(p)
        {
            skipped += 1;
            continue;
        }
        let mut f = open_file(i, format)?;
        if hive {
            f.parts = hive::partition_values(&f.path);
        }
        files.push(f);
    }
    let Some(first) = files.first() else {
        return Err(Error::Config(
            "no data files among the inputs (only _SUCCESS and the like)".into(),
        ));
    };
    // Partition columns: the same names, in the same order, in every path.
    let part_names: Vec<String> = first
        .parts
        .iter()
        .map(|(k, _)| k.to_ascii_lowercase())
        .collect();
    for f in &files {
        let names: Vec<String> = f
            .parts
            .iter()
            .map(|(k, _)| k.to_ascii_lowercase())
            .collect();
        if names != part_names {
            return Err(Error::Input {
                path: f.path.display().to_string(),
                message: format!(
                    "its partition directories ({}) are not those of {} ({}); --hive-partitioning needs the same col=value levels in every path",
                    names.join("/"),
                    first.path.display(),
                    part_names.join("/")
                ),
            });
        }
    }
    let existing = Database::open(db_dir)
        .ok()
        .and_then(|db| db.table(&table).map(|t| t.schema.clone()));
    let new_table = existing.is_none();
    // A whole bucketed dataset: every file a bucket of the same count by
    // the same column, and every bucket there.
    let buckets = first
        .bucket
        .as_ref()
        .filter(|b| {
            let mut seen = vec![false; b.of as usize];
            files.iter().all(|f| {
                f.bucket.as_ref().is_some_and(|x| {
                    x.of == b.of && x.column.eq_ignore_ascii_case(&b.column) && {
                        seen[x.index as usize] = true;
                        true
                    }
                })
            }) && seen.iter().all(|&s| s)
        })
        .map(|b| (b.of, b.column.clone()));
    let mut inferred = false;
    let mut schema = match (existing, &req.schema) {
        (Some(s), None) => s,
        (Some(s), Some(given)) => {
            let given: Schema = given.parse()?;
            if given.to_string() != s.to_string() {
                return Err(Error::Schema(format!(
                    "--schema \"{given}\" differs from table {table}'s columns \"{s}\"; leave --schema out to load into the table"
                )));
            }
            s
        }
        (None, Some(given)) => given.parse()?,
        (None, None) => {
            inferred = true;
            files_schema(first, &part_names, &files)?
        }
    };
    if inferred {
        if let Some(cols) = &req.columns {
            let mut picked = Vec::new();
            for name in cols.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                let Some(i) = schema.position(name) else {
                    return Err(Error::UndefinedColumn(format!(
                        "--columns {name}: {} has no such column (its columns: {})",
                        first.path.display(),
                        schema.column_names()
                    )));
                };
                picked.push(schema.columns[i].clone());
            }
            schema = Schema::new(picked)?;
        }
        if let Some(k) = &req.key {
            for c in &mut schema.columns {
                c.primary_key = false;
            }
            schema.set_key(k)?;
        }
    } else if req.columns.is_some() {
        // The table's columns are loaded by name; --columns would only
        // restate them.
        return Err(Error::Config(
            "--columns picks the columns of a new table from Parquet or Arrow files; the table's (or --schema's) columns are matched by name".into(),
        ));
    }
    Ok(ColumnarPlan {
        format,
        partition_columns: part_names,
        files,
        schema,
        inferred,
        skipped,
        buckets,
        new_table,
    })
}

/// The columns of a new table from the first file (and the partition
/// values of all files).
fn files_schema(first: &ColFile, part_names: &[String], files: &[ColFile]) -> Result<Schema> {
    let exact: Option<Schema> = first.sluice_schema.as_deref().and_then(|s| s.parse().ok());
    let mut cols = Vec::new();
    for f in first.schema.fields() {
        let name = f.name().to_ascii_lowercase();
        let known = exact
            .as_ref()
            .and_then(|s| s.position(&name).map(|i| s.columns[i].clone()));
        let col = match known {
            Some(c) => c,
            None => {
                let t = column_type(f.data_type())
                    .ok_or_else(|| unsupported(&first.path, f.name(), f.data_type()))?;
                format!("\"{}\" {t}", f.name().replace('"', "\"\""))
                    .parse::<Schema>()?
                    .columns
                    .remove(0)
            }
        };
        cols.push(col);
    }
    for (i, name) in part_names.iter().enumerate() {
        if cols.iter().any(|c| c.name.eq_ignore_ascii_case(name)) {
            return Err(Error::Input {
                path: first.path.display().to_string(),
                message: format!(
                    "column {name} is both in the file and a partition directory; load without --hive-partitioning"
                ),
            });
        }
        let known = exact
            .as_ref()
            .and_then(|s| s.position(name).map(|i| s.columns[i].clone()));
        let col = match known {
            Some(c) => c,
            None => {
                let values: Vec<&str> = files
                    .iter()
                    .filter_map(|f| f.parts.get(i).and_then(|(_, v)| v.as_deref()))
                    .collect();
                let t = partition_type(values.iter().copied());
                format!("\"{}\" {t}", name.replace('"', "\"\""))
                    .parse::<Schema>()?
                    .columns
                    .remove(0)
            }
        };
        cols.push(col);
    }
    // A key recorded in the metadata survives only with its column.
    if let Some(s) = &exact
        && let Some(k) = s.key_column()
    {
        let key = &s.columns[k].name;
        for c in &mut cols {
            c.primary_key = c.name.eq_ignore_ascii_case(key);
        }
    }
    Schema::new(cols)
}

/// The options of a text load make no sense for columnar files: say so
/// rather than ignore them.
fn refuse_text_options(req: &LoadRequest, format: Columnar) -> Result<()> {
    let d = LoadRequest::default();
    let given: Vec<&str> = [
        (!req.types.is_empty(), "--types"),
        (req.match_by_name, "--match-by-name"),
        (req.ignore_unknown, "--ignore-unknown"),
        (req.json_rows.is_some(), "--json-rows"),
        (req.delimiter.is_some() || req.tsv, "--delimiter"),
        (req.quote.is_some(), "--quote"),
        (req.escape.is_some(), "--escape"),
        (req.header != d.header, "--header/--no-header"),
        (req.null != d.null, "--null"),
        (req.skip.is_some(), "--skip"),
        (req.comment.is_some(), "--comment"),
        (req.blank_lines.is_some(), "--blank-lines"),
        (req.line_end != d.line_end, "--line-end"),
        (req.date_format.is_some(), "--date-format"),
        (req.timestamp_format.is_some(), "--timestamp-format"),
        (req.encoding.is_some(), "--encoding"),
        (req.rejects.is_some(), "--rejects"),
        (req.max_errors.is_some(), "--max-errors"),
        (req.allow_missing_columns, "--allow-missing-columns"),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .map(|(_, name)| name)
    .collect();
    if !given.is_empty() {
        return Err(Error::Config(format!(
            "{} appl{} to text input, not to {} files (their columns are typed; a value that does not fit its column fails the load)",
            given.join(", "),
            if given.len() == 1 { "ies" } else { "y" },
            format.name()
        )));
    }
    Ok(())
}

/// How each table column is filled from a file: a column of the file, or
/// a partition value of its path.
#[derive(Clone)]
enum Source {
    Column(usize),
    Partition(usize),
}

/// The sources of the table's columns in file `f`.
fn sources(f: &ColFile, schema: &Schema) -> Result<Vec<Source>> {
    let names = |s: &SchemaRef| {
        s.fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = Vec::with_capacity(schema.len());
    for c in &schema.columns {
        let found: Vec<usize> = f
            .schema
            .fields()
            .iter()
            .enumerate()
            .filter(|(_, d)| d.name().eq_ignore_ascii_case(&c.name))
            .map(|(i, _)| i)
            .collect();
        match found.as_slice() {
            [i] => out.push(Source::Column(*i)),
            [] => match f
                .parts
                .iter()
                .position(|(k, _)| k.eq_ignore_ascii_case(&c.name))
            {
                Some(p) => out.push(Source::Partition(p)),
                None => {
                    return Err(Error::Input {
                        path: f.path.display().to_string(),
                        message: format!(
                            "has no column {} (its columns: {}){}",
                            c.name,
                            names(&f.schema),
                            if f.parts.is_empty() {
                                "; a partition column in the path needs --hive-partitioning"
                            } else {
                                ""
                            }
                        ),
                    });
                }
            },
            _ => {
                return Err(Error::Input {
                    path: f.path.display().to_string(),
                    message: format!("has more than one column named {} (in any case)", c.name),
                });
            }
        }
    }
    Ok(out)
}

/// A unit of work: row group (or batch) `unit` of file `file`.
#[derive(Clone, Copy)]
struct Unit {
    file: usize,
    unit: usize,
}

/// Reads one unit and converts its rows to the table's types.
fn read_unit(
    f: &ColFile,
    u: usize,
    target: &SchemaRef,
    src: &[Source],
) -> Result<Vec<RecordBatch>> {
    let needed: Vec<usize> = {
        let mut v: Vec<usize> = src
            .iter()
            .filter_map(|s| match s {
                Source::Column(i) => Some(*i),
                Source::Partition(_) => None,
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let raw: Vec<RecordBatch> = match f.kind {
        Columnar::Parquet => {
            let meta = f
                .parquet
                .clone()
                .ok_or_else(|| Error::Internal("a Parquet file without its footer".into()))?;
            let file = File::open(&f.path).map_err(|e| Error::io(&f.path, e))?;
            let mask = ProjectionMask::roots(meta.parquet_schema(), needed.iter().copied());
            let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, meta)
                .with_row_groups(vec![u])
                .with_projection(mask)
                .with_batch_size(BATCH_ROWS)
                .build()
                .map_err(|e| parquet_error(&f.path, e))?;
            reader
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| Error::Input {
                    path: f.path.display().to_string(),
                    message: format!("row group {}: {e}", u + 1),
                })?
        }
        Columnar::ArrowIpc => {
            let file = File::open(&f.path).map_err(|e| Error::io(&f.path, e))?;
            let ipc_err = |e: arrow_schema::ArrowError| Error::Input {
                path: f.path.display().to_string(),
                message: format!("Arrow IPC batch {}: {e}", u + 1),
            };
            let mut r = arrow_ipc::reader::FileReader::try_new(file, Some(needed.clone()))
                .map_err(ipc_err)?;
            r.set_index(u).map_err(ipc_err)?;
            match r.next() {
                Some(b) => vec![b.map_err(ipc_err)?],
                None => Vec::new(),
            }
        }
    };
    // Projected batches hold the needed columns in file order.
    let at: HashMap<usize, usize> = needed.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    let mut out = Vec::with_capacity(raw.len());
    for b in raw {
        let n = b.num_rows();
        if n == 0 {
            continue;
        }
        let mut cols = Vec::with_capacity(target.fields().len());
        for (field, s) in target.fields().iter().zip(src) {
            let col = match s {
                Source::Column(i) => {
                    let c = b.column(at[i]);
                    exact_cast(c, field.data_type()).map_err(|why| Error::Input {
                        path: f.path.display().to_string(),
                        message: format!(
                            "row group {}: column {}: {} does not fit {}: {why}",
                            u + 1,
                            field.name(),
                            c.data_type(),
                            crate::query::expr::type_name(field.data_type())
                        ),
                    })?
                }
                Source::Partition(p) => partition_column(f, *p, field.data_type(), n)?,
            };
            if !field.is_nullable() && col.null_count() > 0 {
                return Err(Error::Input {
                    path: f.path.display().to_string(),
                    message: format!("column {} is NOT NULL and has NULLs", field.name()),
                });
            }
            cols.push(col);
        }
        let whole = RecordBatch::try_new(target.clone(), cols)?;
        let mut at_row = 0;
        while at_row < n {
            let k = BATCH_ROWS.min(n - at_row);
            out.push(whole.slice(at_row, k));
            at_row += k;
        }
    }
    Ok(out)
}

/// `n` copies of partition value `p` of file `f`, as type `t`.
fn partition_column(f: &ColFile, p: usize, t: &Arrow, n: usize) -> Result<ArrayRef> {
    let (name, value) = &f.parts[p];
    let one: ArrayRef = Arc::new(StringArray::from(vec![value.clone()]));
    // Directory names are text as engines write it ("1.5" for 1.50); a
    // TIME or an INTERVAL is read as the loader reads one (see
    // `cast_checked`).
    let typed = cast_checked(&one, t, false);
    let typed = typed.map_err(|why| Error::Input {
        path: f.path.display().to_string(),
        message: format!(
            "partition directory {name}={}: not a {}: {why}",
            value.as_deref().unwrap_or(hive::NULL_PARTITION),
            crate::query::expr::type_name(t)
        ),
    })?;
    let zeros = UInt32Array::from(vec![0u32; n]);
    Ok(arrow_select::take::take(typed.as_ref(), &zeros, None)?)
}

/// What the reader threads and the committing thread share.
struct Ordered {
    /// Finished units by number, waiting for their turn: per batch, its
    /// pieces (cut by shard, keys sorted, TEXT dictionary-encoded).
    done: Mutex<BTreeMap<usize, Result<Vec<Vec<Piece>>>>>,
    ready: Condvar,
    /// Units handed to the table so far.
    consumed: AtomicUsize,
    next: AtomicUsize,
    quit: AtomicBool,
}

/// Loads the files of `plan` into `table`, committing after each group of
/// files (`opts.commit_every`: bytes and files; one group by default up
/// to 1 GiB). Files an earlier commit loaded are skipped (`opts.reload`).
/// `opts.stop` ends the load after the file being read (its group is
/// committed); `opts.cancel` at once (the group is not).
pub fn load_columnar(
    db: &mut Database,
    table: &str,
    plan: &ColumnarPlan,
    opts: &LoadOptions,
) -> Result<LoadSummary> {
    let start = Instant::now();
    let table = table.to_ascii_lowercase();
    let inputs: Vec<Input> = plan.files.iter().map(|f| f.input.clone()).collect();
    let (deduped, listed_twice) = unique_inputs(&inputs);
    let unique: Vec<Input> = deduped.unwrap_or(inputs);
    let (rest, already_loaded) = resume_plan(db, &table, &unique, opts)?;
    let todo_inputs: Vec<Input> = rest.unwrap_or(unique);
    let todo: Vec<&ColFile> = {
        let by_path: HashMap<&Path, &ColFile> =
            plan.files.iter().map(|f| (f.path.as_path(), f)).collect();
        todo_inputs
            .iter()
            .filter_map(|i| match i {
                Input::File(p) => by_path.get(p.as_path()).copied(),
                Input::Stdin => None,
            })
            .collect()
    };
    let workers = worker_count(opts.threads);
    let mut total = LoadSummary::empty(&table, workers);
    total.already_loaded = already_loaded;
    total.listed_twice = listed_twice;
    let target = plan.schema.arrow_schema();
    let srcs: Vec<Vec<Source>> = todo
        .iter()
        .map(|f| sources(f, &plan.schema))
        .collect::<Result<_>>()?;
    let mut opts = opts.clone();
    opts.schema = Some(plan.schema.clone());
    // Groups of files, cut after the file that reaches a limit.
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    let (mut from, mut bytes) = (0, 0u64);
    for (i, f) in todo.iter().enumerate() {
        bytes += f.size;
        let n = (i + 1 - from) as u64;
        if opts.commit_every.bytes.is_some_and(|b| bytes >= b)
            || opts.commit_every.files.is_some_and(|k| n >= k)
        {
            groups.push(from..i + 1);
            from = i + 1;
            bytes = 0;
        }
    }
    if from < todo.len() {
        groups.push(from..todo.len());
    }
    let stopped = |o: &LoadOptions| o.stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed));
    for (g, range) in groups.iter().enumerate() {
        if stopped(&opts) {
            total.files_left = (todo.len() - range.start) as u64;
            break;
        }
        let files = &todo[range.clone()];
        let group_inputs: Vec<Input> = files.iter().map(|f| f.input.clone()).collect();
        let (rows, files_done, records, committed, placed) = load_group(
            db,
            &table,
            files,
            &srcs[range.clone()],
            &group_inputs,
            &target,
            &opts,
            workers,
        )?;
        total.rows += rows;
        total.files += files_done as u64;
        total.files_by_bucket += placed;
        total.bytes += records.iter().map(|r| r.size).sum::<u64>();
        total.segments += committed.segments;
        total.duplicates += committed.duplicates;
        total.runs_merged += committed.runs_merged;
        total.merge_error = committed.merge_error.or(total.merge_error.take());
        total.created |= committed.created;
        total.commits += 1;
        if files_done < files.len() {
            total.files_left = (todo.len() - range.start - files_done) as u64;
            break;
        }
        let _ = g;
    }
    total.seconds = start.elapsed().as_secs_f64();
    Ok(total)
}

/// One commit group: the files read in parallel by unit (decoded,
/// converted, cut by shard, keys sorted, TEXT dictionary-encoded on the
/// workers), handed to the table in order on this thread; stops at a
/// file boundary when `opts.stop` is set. Returns the rows, the files
/// committed, their records, the commit, and how many of those files
/// went to their bucket's shard whole.
#[allow(clippy::too_many_arguments)]
fn load_group(
    db: &mut Database,
    table: &str,
    files: &[&ColFile],
    srcs: &[Vec<Source>],
    inputs: &[Input],
    target: &SchemaRef,
    opts: &LoadOptions,
    workers: usize,
) -> Result<(u64, usize, Vec<FileRecord>, super::sink::Committed, u64)> {
    let units: Vec<Unit> = files
        .iter()
        .enumerate()
        .flat_map(|(fi, f)| (0..f.units).map(move |u| Unit { file: fi, unit: u }))
        .collect();
    // The last unit of each file (files without row groups: none).
    let mut last_unit: Vec<Option<usize>> = vec![None; files.len()];
    for (i, u) in units.iter().enumerate() {
        last_unit[u.file] = Some(i);
    }
    // A file's CRC-32 is taken by the worker that reads its first unit;
    // a file without any, here.
    let records: Mutex<Vec<FileRecord>> = Mutex::new(
        files
            .iter()
            .map(|f| {
                Ok(FileRecord {
                    size: f.size,
                    mtime_ns: f.mtime_ns,
                    empty: f.units == 0,
                    crc32: if f.units == 0 { file_crc(&f.path)? } else { 0 },
                    ..Default::default()
                })
            })
            .collect::<Result<_>>()?,
    );
    checked_options(db, table, opts)?;
    let mut sink = TableSink::new(db, table);
    let layout = sink.begin(opts, inputs)?;
    let layout_provenance = layout.provenance;
    let cut = Cut::layout(&layout);
    // Files of a bucketed dataset whose buckets are the table's shards go
    // to their shard whole: no hash a row, no cutting.
    let by_bucket: Vec<Option<u32>> = files.iter().map(|f| bucket_shard(f, &layout)).collect();
    let shared = Ordered {
        done: Mutex::new(BTreeMap::new()),
        ready: Condvar::new(),
        consumed: AtomicUsize::new(0),
        next: AtomicUsize::new(0),
        quit: AtomicBool::new(false),
    };
    let window = workers + 1;
    let cancelled = || {
        opts.cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
    };
    let wait = |g| {
        shared
            .ready
            .wait_timeout(g, std::time::Duration::from_millis(50))
            .map(|(g, _)| g)
            .unwrap_or_else(|p| p.into_inner().0)
    };
    let written = std::thread::scope(|s| {
        for _ in 0..workers.min(units.len()).max(1) {
            s.spawn(|| {
                loop {
                    if shared.quit.load(Ordering::Relaxed) || cancelled() {
                        break;
                    }
                    let i = shared.next.fetch_add(1, Ordering::Relaxed);
                    let Some(u) = units.get(i) else { break };
                    // Not too far ahead of the table: bounded memory.
                    {
                        let mut g = shared.done.lock().unwrap_or_else(|p| p.into_inner());
                        while i >= shared.consumed.load(Ordering::Relaxed) + window
                            && !shared.quit.load(Ordering::Relaxed)
                        {
                            g = wait(g);
                        }
                    }
                    if shared.quit.load(Ordering::Relaxed) {
                        break;
                    }
                    let f = files[u.file];
                    // A panic in a decoder (a damaged file) is this unit's
                    // error: the table's side waits for every unit in turn.
                    let work = std::panic::AssertUnwindSafe(|| {
                        read_unit(f, u.unit, target, &srcs[u.file]).and_then(|bs| {
                            bs.into_iter()
                                .map(|b| {
                                    let stats = b
                                        .columns()
                                        .iter()
                                        .map(|a| column_stats(a.as_ref()))
                                        .collect();
                                    match by_bucket[u.file] {
                                        Some(shard) => route_to_shard(&cut, b, stats, shard)
                                            .map_err(|m| Error::Input {
                                                path: f.path.display().to_string(),
                                                message: format!("row group {}: {m}", u.unit + 1),
                                            }),
                                        None => route_batch(&cut, b, stats),
                                    }
                                })
                                .collect::<Result<Vec<_>>>()
                        })
                    });
                    let mut result = std::panic::catch_unwind(work).unwrap_or_else(|_| {
                        Err(Error::Input {
                            path: f.path.display().to_string(),
                            message: format!(
                                "row group {}: the {} reader failed on it (a damaged file?)",
                                u.unit + 1,
                                f.kind.name()
                            ),
                        })
                    });
                    if u.unit == 0 && result.is_ok() {
                        match file_crc(&f.path) {
                            Ok(crc) => {
                                if let Ok(mut r) = records.lock() {
                                    r[u.file].crc32 = crc;
                                }
                            }
                            Err(e) => result = Err(e),
                        }
                    }
                    let mut g = shared.done.lock().unwrap_or_else(|p| p.into_inner());
                    g.insert(i, result);
                    shared.ready.notify_all();
                }
            });
        }
        // The table's side, on this thread: units in order.
        let mut files_done = 0;
        let mut file_rows = vec![0u64; files.len()];
        let written = (|| -> Result<u64> {
            let mut rows = 0u64;
            for (i, u) in units.iter().enumerate() {
                // Stopped: end the group where a file ends.
                if u.unit == 0
                    && opts
                        .stop
                        .as_ref()
                        .is_some_and(|s| s.load(Ordering::Relaxed))
                {
                    break;
                }
                let mut g = shared.done.lock().unwrap_or_else(|p| p.into_inner());
                let r = loop {
                    if let Some(r) = g.remove(&i) {
                        break r;
                    }
                    if cancelled() {
                        break Err(Error::Cancelled);
                    }
                    g = wait(g);
                };
                shared.consumed.store(i + 1, Ordering::Relaxed);
                shared.ready.notify_all();
                drop(g);
                let mut unit_rows = 0;
                for pieces in r? {
                    // Rows are named `file:N`, N the row of the file.
                    let here = [Provenance {
                        row: rows,
                        file: u.file,
                        line: file_rows[u.file],
                        exact: true,
                        rejected: Vec::new(),
                    }];
                    let n: u64 = pieces.iter().map(|p| p.batch.num_rows() as u64).sum();
                    file_rows[u.file] += n;
                    let kept = sink.write(Rows {
                        pieces,
                        first_row: rows,
                        provenance: if layout_provenance { &here } else { &[] },
                    })?;
                    rows += kept;
                    unit_rows += kept;
                    if let Some(p) = &opts.progress {
                        p.rows.fetch_add(kept, Ordering::Relaxed);
                    }
                }
                if let Ok(mut rec) = records.lock() {
                    rec[u.file].rows += unit_rows;
                }
                if let Some(p) = &opts.progress {
                    p.bytes_read.fetch_add(
                        files[u.file].unit_bytes.get(u.unit).copied().unwrap_or(0),
                        Ordering::Relaxed,
                    );
                }
                if last_unit[u.file] == Some(i) {
                    files_done = u.file + 1;
                    if let Some(p) = &opts.progress {
                        p.files_done.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            if cancelled() {
                return Err(Error::Cancelled);
            }
            sink.finish()?;
            Ok(rows)
        })();
        shared.quit.store(true, Ordering::Relaxed);
        shared.ready.notify_all();
        written.map(|rows| (rows, files_done))
    });
    let (rows, mut files_done) = match written {
        Ok(w) => w,
        Err(e) => {
            sink.abort();
            return Err(e);
        }
    };
    // Files without units right after the last one read are done too.
    let stopped = opts
        .stop
        .as_ref()
        .is_some_and(|s| s.load(Ordering::Relaxed));
    if !stopped || files_done > 0 {
        while files_done < files.len() && files[files_done].units == 0 {
            files_done += 1;
        }
    }
    if !stopped {
        files_done = files.len();
    }
    let recs: Vec<FileRecord> = records
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .take(files_done)
        .collect();
    let committed = sink.commit(&GroupFiles { files: &recs, rows })?;
    let placed = by_bucket[..files_done].iter().flatten().count() as u64;
    Ok((rows, files_done, recs, committed, placed))
}

/// The shard all rows of file `f` go to, when the table's shards are its
/// dataset's buckets: as many, by the same column (by name), of a type
/// that hashes alike (the hash is of the value as typed: the text '7'
/// and the number 7 differ). `None`: the rows are routed by their hash.
fn bucket_shard(f: &ColFile, layout: &super::sink::Layout) -> Option<u32> {
    let b = f.bucket.as_ref()?;
    let super::sink::Route::Hash(c) = layout.route else {
        return None;
    };
    let column = layout.schema.columns.get(c)?;
    if layout.shards != b.of || !column.name.eq_ignore_ascii_case(&b.column) {
        return None;
    }
    // The type the conversion hashed: the file's own schema (exact),
    // else its Arrow type's.
    let exact = f
        .sluice_schema
        .as_deref()
        .and_then(|s| s.parse::<Schema>().ok())
        .and_then(|s| s.position(&b.column).map(|i| s.columns[i].data_type));
    let hashed = exact.or_else(|| {
        f.schema
            .fields()
            .iter()
            .find(|x| x.name().eq_ignore_ascii_case(&b.column))
            .and_then(|x| column_type(x.data_type()))
    })?;
    hashes_alike(&hashed, &column.data_type).then_some(b.index)
}

/// Whether equal values of types `a` and `b` hash to the same shard
/// ([`crate::partition::shards_of`]): INT and BIGINT do (both as 64-bit
/// integers), decimals of one scale do, other types only with
/// themselves.
fn hashes_alike(a: &DataType, b: &DataType) -> bool {
    match (a, b) {
        (DataType::Int | DataType::BigInt, DataType::Int | DataType::BigInt) => true,
        (DataType::Decimal { scale: x, .. }, DataType::Decimal { scale: y, .. }) => x == y,
        _ => a == b,
    }
}

/// A batch of a bucket's file as one piece of `shard`. The metadata is
/// trusted, not every row re-hashed; the first and last rows are, so a
/// file from another hash, another count or another column is refused
/// rather than loaded into the wrong shard.
fn route_to_shard(
    cut: &Cut<'_>,
    b: RecordBatch,
    stats: Vec<crate::batch::ColumnStats>,
    shard: u32,
) -> std::result::Result<Vec<Piece>, String> {
    let super::sink::Route::Hash(c) = cut.route else {
        return Err("not a hashed table (this is a bug)".into());
    };
    let n = b.num_rows();
    if n > 0 {
        let mut found = Vec::with_capacity(2);
        for row in [0, n - 1] {
            let one = b.column(c).slice(row, 1);
            found.extend(
                crate::partition::shards_of(one.as_ref(), cut.shards).map_err(|e| e.to_string())?,
            );
        }
        if let Some(other) = found.iter().find(|&&s| s != shard) {
            return Err(format!(
                "its metadata (sluice.bucket) puts it in bucket {shard} of {}, but a row's {} belongs in bucket {other}; the file is not the bucket it says it is (written by another version, or changed since)",
                cut.shards,
                b.schema().field(c).name(),
            ));
        }
    }
    super::workers::finish_one(cut, shard, b, stats)
        .map(|p| vec![p])
        .map_err(|e| e.to_string())
}

/// CRC-32 of a whole file (the load journal's check for a resumed load).
fn file_crc(path: &Path) -> Result<u32> {
    use std::io::Read;
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut h = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_metadata_is_read_and_nonsense_ignored() {
        assert_eq!(
            Bucket::parse("3/16 source_id"),
            Some(Bucket {
                index: 3,
                of: 16,
                column: "source_id".into()
            })
        );
        for bad in [
            "16/16 id", // no such bucket
            "1/300 id", // more than a table can have shards
            "1/4", "1/4 ", "x/4 id", "1-4 id", "",
        ] {
            assert_eq!(Bucket::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn partition_values_are_typed_by_what_they_all_are() {
        assert_eq!(
            partition_type(["1", "-20", "03"].into_iter()),
            DataType::Int
        );
        assert_eq!(
            partition_type(["1", "9000000000"].into_iter()),
            DataType::BigInt
        );
        assert_eq!(
            partition_type(["2024-01-31", "1999-12-01"].into_iter()),
            DataType::Date
        );
        assert_eq!(partition_type(["2024-02-30"].into_iter()), DataType::Text);
        assert_eq!(partition_type(["1", "x"].into_iter()), DataType::Text);
        assert_eq!(partition_type([].into_iter()), DataType::Text);
    }

    #[test]
    fn arrow_types_map_to_columns_and_wide_decimals_narrow() {
        assert_eq!(column_type(&Arrow::UInt16), Some(DataType::Int));
        assert_eq!(column_type(&Arrow::UInt64), Some(DataType::BigInt));
        assert_eq!(
            column_type(&Arrow::Decimal128(38, 4)),
            Some(DataType::Decimal {
                precision: 18,
                scale: 4
            })
        );
        assert_eq!(column_type(&Arrow::Decimal128(38, 20)), None);
        assert_eq!(
            column_type(&Arrow::Dictionary(
                Box::new(Arrow::Int32),
                Box::new(Arrow::Utf8)
            )),
            Some(DataType::Text)
        );
        assert_eq!(column_type(&Arrow::Binary), None);
    }

    #[test]
    fn exact_casts_refuse_changed_values() {
        let f: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![1.0, 2.5]));
        let e = exact_cast(&f, &Arrow::Int64).unwrap_err();
        assert!(e.contains("2.5") && e.contains("row 2"), "{e}");
        let big: ArrayRef = Arc::new(arrow_array::UInt64Array::from(vec![u64::MAX]));
        assert!(exact_cast(&big, &Arrow::Int64).is_err());
        let ns: ArrayRef = Arc::new(arrow_array::TimestampNanosecondArray::from(vec![
            1_000, 1_001,
        ]));
        let e = exact_cast(
            &ns,
            &Arrow::Timestamp(arrow_schema::TimeUnit::Microsecond, None),
        )
        .unwrap_err();
        assert!(e.contains("row 2"), "{e}");
        // A zoned timestamp is checked as its stored (UTC) value.
        let zoned: ArrayRef = Arc::new(
            arrow_array::TimestampNanosecondArray::from(vec![2_000, 2_001]).with_timezone("UTC"),
        );
        let e = exact_cast(
            &zoned,
            &Arrow::Timestamp(arrow_schema::TimeUnit::Microsecond, None),
        )
        .unwrap_err();
        assert!(e.contains("row 2"), "{e}");
        // Times of day of every unit: 0 to 24:00:00, nanoseconds whole
        // microseconds; Arrow's types hold any number.
        let us = Arrow::Time64(arrow_schema::TimeUnit::Microsecond);
        let day: ArrayRef = Arc::new(arrow_array::Time32SecondArray::from(vec![
            Some(0),
            None,
            Some(86_400),
        ]));
        assert!(exact_cast(&day, &us).is_ok());
        for (bad, row) in [
            (
                Arc::new(arrow_array::Time32SecondArray::from(vec![0, 86_401])) as ArrayRef,
                "86401 s (row 2)",
            ),
            (
                Arc::new(arrow_array::Time32MillisecondArray::from(vec![-1])),
                "-1 ms (row 1)",
            ),
            (
                Arc::new(arrow_array::Time64MicrosecondArray::from(vec![
                    86_400_000_001,
                ])),
                "86400000001 µs (row 1)",
            ),
            (
                Arc::new(arrow_array::Time64NanosecondArray::from(vec![
                    1_000,
                    86_400_000_000_001,
                ])),
                "86400000000001 ns (row 2)",
            ),
        ] {
            let e = exact_cast(&bad, &us).unwrap_err();
            assert!(e.contains(row) && e.contains("not a time of day"), "{e}");
        }
        // Text into a TIME or an INTERVAL is read as the loader reads it.
        let text: ArrayRef = Arc::new(StringArray::from(vec![
            Some("24:00:00"),
            None,
            Some("9:30"),
        ]));
        let t = exact_cast(&text, &us).unwrap();
        assert_eq!(
            (0..3)
                .map(|i| crate::batch::format_value(t.as_ref(), i))
                .collect::<Vec<_>>(),
            [Some("24:00:00".into()), None, Some("09:30:00".into())]
        );
        let iv = Arrow::Interval(arrow_schema::IntervalUnit::MonthDayNano);
        let text: ArrayRef = Arc::new(StringArray::from(vec![
            "1 year 2 mons 3 days 04:05:06.5",
            "@ 1 day ago",
        ]));
        let t = exact_cast(&text, &iv).unwrap();
        assert_eq!(
            crate::batch::format_value(t.as_ref(), 1).as_deref(),
            Some("-1 days")
        );
        let text: ArrayRef = Arc::new(StringArray::from(vec!["1 day", "a fortnight"]));
        let e = exact_cast(&text, &iv).unwrap_err();
        assert!(e.contains("\"a fortnight\" (row 2)"), "{e}");
        // A dictionary is checked as its values.
        let dict: ArrayRef = Arc::new(
            arrow_array::DictionaryArray::<arrow_array::types::Int32Type>::try_new(
                arrow_array::Int32Array::from(vec![0, 1]),
                Arc::new(arrow_array::Float64Array::from(vec![1.0, 1.5])),
            )
            .unwrap(),
        );
        assert!(
            exact_cast(&dict, &Arrow::Int64)
                .unwrap_err()
                .contains("1.5")
        );
        // Text must read back as written; partition values need not.
        let text: ArrayRef = Arc::new(StringArray::from(vec!["1.005"]));
        assert!(exact_cast(&text, &Arrow::Decimal64(4, 2)).is_err());
        let text: ArrayRef = Arc::new(StringArray::from(vec!["1.50"]));
        assert!(exact_cast(&text, &Arrow::Decimal64(4, 2)).is_ok());
        let loose: ArrayRef = Arc::new(StringArray::from(vec!["1.5"]));
        assert!(cast_checked(&loose, &Arrow::Decimal64(4, 2), false).is_ok());
        let ok: ArrayRef = Arc::new(arrow_array::Int32Array::from(vec![Some(7), None]));
        let out = exact_cast(&ok, &Arrow::Int64).unwrap();
        assert_eq!(out.null_count(), 1);
    }
}
