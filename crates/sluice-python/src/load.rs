//! Loads from Python: files with the options of `sluice load`, or Arrow
//! data. The load runs on a thread of its own; the calling thread waits
//! without the GIL, wakes every 0.1 s for Ctrl-C, and reports progress.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use arrow_array::RecordBatchReader;
use arrow_pyarrow::FromPyArrow;
use pyo3::exceptions::{PyKeyboardInterrupt, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use sluice::load::{LoadOptions, LoadRequest, LoadSummary as Summary, Progress};

use crate::errors::{Phase, to_py};

/// What a load did (the fields of `sluice load --json`).
#[pyclass(module = "sluice", name = "LoadSummary", frozen, get_all)]
pub struct LoadSummary {
    /// The table loaded.
    pub table: String,
    /// The load created the table.
    pub created: bool,
    /// Rows committed.
    pub rows: u64,
    /// Bytes of input read.
    pub bytes: u64,
    /// Seconds the load took.
    pub seconds: f64,
    /// Malformed records set aside (`on_error="skip"`).
    pub rejected: u64,
    /// Rows dropped as duplicate keys (`on_duplicate="skip"`).
    pub duplicates: u64,
    /// Input files read.
    pub files: u64,
    /// Input files skipped: an earlier commit of the table loaded them.
    pub files_skipped: u64,
    /// Input files left unread: the load was stopped (Ctrl-C).
    pub files_left: u64,
    /// Commits the load made.
    pub commits: u64,
    /// Worker threads.
    pub threads: usize,
    /// The table's schema, as a `schema=` string.
    pub schema: String,
    /// The schema was inferred from the data (not given, not the table's).
    pub inferred: bool,
    /// Input files that held no data.
    pub empty_files: Vec<String>,
    /// Input files that could not be read, with why (`on_error="skip"`).
    pub unreadable: Vec<(String, String)>,
    /// Files of a bucketed dataset loaded into their bucket's shard
    /// whole, their rows not hashed again.
    pub files_by_bucket: u64,
}

#[pymethods]
impl LoadSummary {
    /// Megabytes of input per second.
    #[getter]
    fn mb_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / 1e6 / self.seconds
        } else {
            0.0
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "sluice.LoadSummary(table={:?}, rows={}, bytes={}, seconds={:.3}, rejected={}, files={}, files_skipped={})",
            self.table,
            self.rows,
            self.bytes,
            self.seconds,
            self.rejected,
            self.files,
            self.files_skipped
        )
    }
}

impl LoadSummary {
    fn of(s: &Summary, schema: String, inferred: bool) -> Self {
        LoadSummary {
            table: s.table.clone(),
            created: s.created,
            rows: s.rows,
            bytes: s.bytes,
            seconds: s.seconds,
            rejected: s.rejected,
            duplicates: s.duplicates,
            files: s.files,
            files_skipped: s.already_loaded,
            files_left: s.files_left,
            commits: s.commits,
            threads: s.threads,
            schema,
            inferred,
            empty_files: s.empty_files.clone(),
            unreadable: s.unreadable.clone(),
            files_by_bucket: s.files_by_bucket,
        }
    }
}

/// The value of `choices` named `given`; else a ValueError in the words
/// of `expected` (`"skip" or "null"`).
pub(crate) fn choice<T: Copy>(
    name: &str,
    given: &str,
    choices: &[(&str, T)],
    expected: &str,
) -> PyResult<T> {
    choices
        .iter()
        .find(|(n, _)| *n == given)
        .map(|(_, v)| *v)
        .ok_or_else(|| PyValueError::new_err(format!("{name} must be {expected}, not {given:?}")))
}

/// The options dict (names of `sluice load`'s long options, `_` for `-`)
/// as a [`LoadRequest`]. The Python layer has checked the names and
/// turned values into strings, ints and bools.
pub(crate) fn request(
    options: &Bound<'_, PyDict>,
    threads: Option<usize>,
) -> PyResult<LoadRequest> {
    let mut r = LoadRequest {
        threads,
        ..LoadRequest::default()
    };
    for (k, v) in options.iter() {
        let name: String = k.extract()?;
        if v.is_none() {
            continue;
        }
        let text = || -> PyResult<String> { v.extract::<String>() };
        let flag = || -> PyResult<bool> { v.extract::<bool>() };
        match name.as_str() {
            "schema" => r.schema = Some(text()?),
            "types" => r.types = vec![text()?],
            "columns" => r.columns = Some(text()?),
            "match_by_name" => r.match_by_name = flag()?,
            "format" => match text()?.to_ascii_lowercase().as_str() {
                "parquet" => r.columnar = Some(sluice::load::columnar::Columnar::Parquet),
                "arrow" => r.columnar = Some(sluice::load::columnar::Columnar::ArrowIpc),
                f => {
                    r.format = Some(f.parse().map_err(|e: sluice::Error| {
                        PyValueError::new_err(format!("{e}, parquet or arrow"))
                    })?)
                }
            },
            "hive_partitioning" => r.hive_partitioning = flag()?,
            "page_cache" => r.page_cache = flag()?,
            "ignore_unknown" => r.ignore_unknown = flag()?,
            "json_rows" => r.json_rows = Some(text()?),
            "delimiter" => r.delimiter = Some(text()?),
            "quote" => r.quote = Some(text()?),
            "escape" => r.escape = Some(text()?),
            "header" => {
                r.header = if flag()? {
                    sluice::load::Header::Yes
                } else {
                    sluice::load::Header::No
                }
            }
            "null" => r.null = text()?,
            "skip" => r.skip = Some(v.extract()?),
            "comment" => r.comment = Some(text()?),
            "blank_lines" => {
                r.blank_lines = Some(choice(
                    "blank_lines",
                    &text()?,
                    &[
                        ("skip", sluice::parse::BlankLines::Skip),
                        ("null", sluice::parse::BlankLines::Null),
                    ],
                    "\"skip\" or \"null\"",
                )?)
            }
            "line_end" => r.line_end = text()?,
            "date_format" => r.date_format = Some(text()?),
            "timestamp_format" => r.timestamp_format = Some(text()?),
            "memory_limit" => r.memory_limit = text()?,
            "max_line_size" => r.max_line_size = text()?,
            "block_size" => r.block_size = Some(text()?),
            "on_error" => {
                r.on_error = Some(choice(
                    "on_error",
                    &text()?,
                    &[
                        ("abort", sluice::load::OnError::Abort),
                        ("skip", sluice::load::OnError::Skip),
                    ],
                    "\"abort\" or \"skip\"",
                )?)
            }
            "rejects" => r.rejects = Some(PathBuf::from(text()?)),
            "max_errors" => r.max_errors = Some(v.extract()?),
            "allow_missing_columns" => r.allow_missing_columns = flag()?,
            "encoding" => r.encoding = Some(text()?),
            "key" => r.key = Some(text()?),
            "on_duplicate" => {
                r.on_duplicate = choice(
                    "on_duplicate",
                    &text()?,
                    &[
                        ("error", sluice::load::OnDuplicate::Error),
                        ("skip", sluice::load::OnDuplicate::Skip),
                    ],
                    "\"error\" or \"skip\"",
                )?
            }
            "compression" => r.compression = Some(text()?),
            "shards" => r.shards = Some(v.extract()?),
            "shard_by" => r.shard_by = Some(text()?),
            "shard_paths" => r.shard_paths = v.extract::<Vec<PathBuf>>()?,
            "commit_every" => r.commit_every = text()?,
            "reload" => {
                r.reload = choice(
                    "reload",
                    &text()?,
                    &[
                        ("none", sluice::load::Reload::None),
                        ("changed", sluice::load::Reload::Changed),
                        ("all", sluice::load::Reload::All),
                    ],
                    "False, \"changed\" or True",
                )?
            }
            other => {
                return Err(PyTypeError::new_err(format!(
                    "load() got an unexpected keyword argument {other:?}"
                )));
            }
        }
    }
    Ok(r)
}

/// The message of a failed load: as `sluice load` says it.
fn load_failed(py: Python<'_>, table: &str, e: sluice::Error) -> PyErr {
    let err = to_py(py, e, Phase::Load);
    if !err.is_instance_of::<crate::errors::Error>(py) {
        return err;
    }
    let value = err.value(py);
    let message = value.str().map(|s| s.to_string()).unwrap_or_default();
    let committed = message.contains("committed");
    let text = if committed {
        format!("loading table {table}: {message}")
    } else {
        format!("loading table {table}; nothing was committed: {message}")
    };
    let _ = value.setattr("args", (text,));
    err
}

/// Waits for work running on a thread of its own: without the GIL,
/// waking every 0.1 s to run Python's signal handlers and to call
/// `watch`. On a KeyboardInterrupt `interrupt(second)` is called (a load:
/// the first sets `stop`, the second `cancel`) and the wait goes on; on
/// another exception `interrupt(true)` is called, the work waited for,
/// and the exception raised. Returns the work's result and whether Ctrl-C
/// was pressed.
pub(crate) fn wait<T: Send>(
    py: Python<'_>,
    rx: std::sync::mpsc::Receiver<sluice::Result<T>>,
    interrupt: impl Fn(bool),
    mut watch: impl FnMut(Python<'_>) -> PyResult<()>,
) -> PyResult<(sluice::Result<T>, bool)> {
    let mut interrupted = false;
    let mut last_watch = Instant::now();
    // Waited on without the GIL, from this thread only.
    let rx = std::sync::Mutex::new(rx);
    let recv = |timeout: Option<Duration>| {
        let rx = rx
            .lock()
            .map_err(|_| std::sync::mpsc::RecvTimeoutError::Disconnected)?;
        match timeout {
            Some(t) => rx.recv_timeout(t),
            None => rx
                .recv()
                .map_err(|_| std::sync::mpsc::RecvTimeoutError::Disconnected),
        }
    };
    loop {
        let got = py.detach(|| recv(Some(Duration::from_millis(100))));
        match got {
            Ok(r) => return Ok((r, interrupted)),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Ok((
                    Err(sluice::Error::Internal(
                        "the worker thread ended without a result".into(),
                    )),
                    interrupted,
                ));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        // Python code runs here (signal handlers, the progress
        // callback): what it raises stops the work, which is waited for,
        // so that nothing goes on behind the caller's back.
        let mut raised = py.check_signals().err();
        if raised.is_none() && last_watch.elapsed() >= Duration::from_millis(200) {
            last_watch = Instant::now();
            raised = watch(py).err();
        }
        if let Some(e) = raised {
            if !e.is_instance_of::<PyKeyboardInterrupt>(py) {
                // Stop at once and raise it.
                interrupt(true);
                let _ = py.detach(|| recv(None));
                return Err(e);
            }
            interrupt(interrupted);
            interrupted = true;
        }
    }
}

/// How a load of files was planned.
enum Plan {
    Text(Box<sluice::load::Prepared>),
    Columnar(Box<sluice::load::columnar::ColumnarPlan>),
}

#[allow(clippy::too_many_arguments)]
pub fn load_files(
    py: Python<'_>,
    path: &Path,
    threads: Option<usize>,
    table: &str,
    inputs: Vec<String>,
    options: &Bound<'_, PyDict>,
    watch: Option<Bound<'_, PyAny>>,
) -> PyResult<LoadSummary> {
    let req = request(options, threads)?;
    // Text is planned by `prepare`; Parquet and Arrow files by
    // `prepare_columnar` (known by their first bytes, or `format=`).
    let prepared = py.detach(|| {
        let inputs = sluice::source::expand(&inputs)?;
        let plan = match sluice::load::columnar::detect(&inputs, req.columnar)? {
            Some(kind) => Plan::Columnar(Box::new(sluice::load::columnar::prepare_columnar(
                path, table, &inputs, kind, &req,
            )?)),
            None => Plan::Text(Box::new(sluice::load::prepare(path, table, &inputs, &req)?)),
        };
        Ok::<_, sluice::Error>((inputs, plan))
    });
    let (inputs, plan) = prepared.map_err(|e| load_failed(py, table, e))?;
    // A Ctrl-C while the load was planned: nothing is loaded.
    py.check_signals()?;
    let (schema, inferred, base) = match &plan {
        Plan::Text(p) => (
            p.schema.to_string(),
            p.inferred.is_some(),
            p.options.clone(),
        ),
        Plan::Columnar(p) => (
            p.schema.to_string(),
            p.inferred,
            p.options(&req).map_err(|e| load_failed(py, table, e))?,
        ),
    };
    let total_bytes: Option<u64> = inputs.iter().map(|i| i.len()).sum();
    let files = inputs.len() as u64;
    let progress = Arc::new(Progress::default());
    let stop = Arc::new(AtomicBool::new(false));
    let cancel = Arc::new(AtomicBool::new(false));
    let opts = LoadOptions {
        progress: Some(progress.clone()),
        stop: Some(stop.clone()),
        cancel: Some(cancel.clone()),
        ..base
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let (dir, name) = (path.to_path_buf(), table.to_string());
    std::thread::Builder::new()
        .name("sluice-load".into())
        .spawn(move || {
            let r = sluice::store::Database::open_writer(&dir).and_then(|mut db| match &plan {
                Plan::Text(_) => sluice::load::load(&mut db, &name, &inputs, &opts),
                Plan::Columnar(p) => {
                    sluice::load::columnar::load_columnar(&mut db, &name, p, &opts)
                }
            });
            let _ = tx.send(r);
        })
        .map_err(|e| PyValueError::new_err(format!("cannot start the load's thread: {e}")))?;
    let interrupt = |second: bool| {
        stop.store(true, Ordering::Relaxed);
        if second {
            cancel.store(true, Ordering::Relaxed);
        }
    };
    let (result, interrupted) = wait(py, rx, interrupt, |_| match &watch {
        Some(w) => {
            w.call1((
                progress.bytes_read.load(Ordering::Relaxed),
                total_bytes,
                progress.rows.load(Ordering::Relaxed),
                progress.files_done.load(Ordering::Relaxed),
                files,
            ))?;
            Ok(())
        }
        None => Ok(()),
    })?;
    let summary = result.map_err(|e| load_failed(py, table, e))?;
    // The table's schema as committed: inferred types may have widened.
    let schema = sluice::store::Database::open(path)
        .ok()
        .and_then(|db| db.table(table).map(|t| t.schema.to_string()))
        .unwrap_or(schema);
    if interrupted {
        return Err(PyKeyboardInterrupt::new_err(format!(
            "load of table {table} stopped: {} rows of {} files committed, {} files left (run the same load again to load the rest)",
            summary.rows, summary.files, summary.files_left
        )));
    }
    Ok(LoadSummary::of(&summary, schema, inferred))
}

/// A schema string for the columns of Arrow data.
fn schema_of(s: &arrow_schema::Schema) -> PyResult<String> {
    let mut cols = Vec::new();
    for f in s.fields() {
        let ty = match sluice::load::columnar::column_type(f.data_type()) {
            Some(ty) => ty.to_string(),
            None => {
                return Err(PyTypeError::new_err(format!(
                    "column {:?} is {}, which sluice does not store (it stores integers, floats, decimals, text, dates, timestamps and booleans); cast it first, or give schema=",
                    f.name(),
                    f.data_type()
                )));
            }
        };
        let not_null = if f.is_nullable() { "" } else { " NOT NULL" };
        cols.push(format!(
            "\"{}\" {ty}{not_null}",
            f.name().replace('"', "\"\"")
        ));
    }
    Ok(cols.join(", "))
}

/// Rows per batch of Arrow data loaded.
const CHUNK: usize = 1 << 17;

pub fn load_arrow(
    py: Python<'_>,
    path: &Path,
    threads: Option<usize>,
    table: &str,
    data: &Bound<'_, PyAny>,
    options: &Bound<'_, PyDict>,
) -> PyResult<LoadSummary> {
    let req = request(options, threads)?;
    let reader = arrow_array::ffi_stream::RecordBatchStreamReader::from_pyarrow_bound(data)?;
    let data_schema = reader.schema();
    let batches: Vec<RecordBatch> = reader
        .collect::<Result<_, _>>()
        .map_err(|e| PyValueError::new_err(format!("reading the Arrow data: {e}")))?;
    py.check_signals()?;
    // The table's columns: its own when it exists, else `schema=`, else
    // the data's.
    let existing = sluice::store::Database::open(path)
        .ok()
        .and_then(|db| db.table(table).map(|t| t.schema.clone()));
    let (schema, inferred) = match (existing, &req.schema) {
        (Some(s), None) => (s, false),
        (_, Some(text)) => (
            text.parse::<sluice::batch::Schema>()
                .map_err(|e| load_failed(py, table, e))?,
            false,
        ),
        (None, None) => {
            let text = schema_of(&data_schema)?;
            let mut s: sluice::batch::Schema =
                text.parse().map_err(|e| load_failed(py, table, e))?;
            if let Some(k) = &req.key {
                s.set_key(k).map_err(|e| load_failed(py, table, e))?;
            }
            (s, true)
        }
    };
    let target = schema.arrow_schema();
    // Columns are matched by name (in any case), never by position: data
    // whose columns come in another order loads each into its own.
    let names = |s: &arrow_schema::Schema| {
        s.fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut order = Vec::with_capacity(target.fields().len());
    for f in target.fields() {
        let found: Vec<usize> = data_schema
            .fields()
            .iter()
            .enumerate()
            .filter(|(_, d)| d.name().eq_ignore_ascii_case(f.name()))
            .map(|(i, _)| i)
            .collect();
        match found.as_slice() {
            [i] => order.push(*i),
            _ => {
                return Err(load_failed(
                    py,
                    table,
                    sluice::Error::Schema(format!(
                        "the data's columns ({}) are not table {table}'s ({}): {} column {}",
                        names(&data_schema),
                        names(&target),
                        if found.is_empty() {
                            "no"
                        } else {
                            "more than one"
                        },
                        f.name()
                    )),
                ));
            }
        }
    }
    if data_schema.fields().len() != target.fields().len() {
        return Err(load_failed(
            py,
            table,
            sluice::Error::Schema(format!(
                "the data's columns ({}) are not table {table}'s ({}): the data has {} columns",
                names(&data_schema),
                names(&target),
                data_schema.fields().len()
            )),
        ));
    }
    let mut cast = Vec::with_capacity(batches.len());
    for b in &batches {
        let mut cols = Vec::with_capacity(b.num_columns());
        for (f, &i) in target.fields().iter().zip(&order) {
            let c = b.column(i);
            let col = sluice::load::columnar::exact_cast(c, f.data_type()).map_err(|why| {
                load_failed(
                    py,
                    table,
                    sluice::Error::Schema(format!(
                        "column {}: the data's {} does not fit {}: {why}",
                        f.name(),
                        c.data_type(),
                        f.data_type()
                    )),
                )
            })?;
            cols.push(col);
        }
        let whole = RecordBatch::try_new(target.clone(), cols)
            .map_err(|e| load_failed(py, table, sluice::Error::Schema(e.to_string())))?;
        // Batches of at most CHUNK rows: the unit of zone maps, of
        // morsels, and of the checks for Ctrl-C.
        let mut at = 0;
        while at < whole.num_rows() {
            let n = CHUNK.min(whole.num_rows() - at);
            cast.push(whole.slice(at, n));
            at += n;
        }
    }
    drop(batches);
    let mut opts = LoadOptions {
        schema: Some(schema.clone()),
        threads,
        key: req.key.clone(),
        shards: req.shards,
        shard_by: req.shard_by.clone(),
        shard_paths: req.shard_paths.clone(),
        on_duplicate: req.on_duplicate,
        ..LoadOptions::default()
    };
    if let Some(c) = &req.compression {
        opts.compression = Some(c.parse().map_err(|e| load_failed(py, table, e))?);
    }
    // One commit group: Ctrl-C cancels it (nothing is committed).
    let cancel = Arc::new(AtomicBool::new(false));
    opts.cancel = Some(cancel.clone());
    let (tx, rx) = std::sync::mpsc::channel();
    let (dir, name) = (path.to_path_buf(), table.to_string());
    std::thread::Builder::new()
        .name("sluice-load".into())
        .spawn(move || {
            let r = sluice::store::Database::open_writer(&dir)
                .and_then(|mut db| sluice::load::load_batches(&mut db, &name, cast, &opts));
            let _ = tx.send(r);
        })
        .map_err(|e| PyValueError::new_err(format!("cannot start the load's thread: {e}")))?;
    let (result, interrupted) = wait(
        py,
        rx,
        |_| cancel.store(true, Ordering::Relaxed),
        |_| Ok(()),
    )?;
    let summary = result.map_err(|e| load_failed(py, table, e))?;
    if interrupted {
        return Err(PyKeyboardInterrupt::new_err(format!(
            "load of table {table} stopped after its commit ({} rows)",
            summary.rows
        )));
    }
    Ok(LoadSummary::of(&summary, schema.to_string(), inferred))
}
