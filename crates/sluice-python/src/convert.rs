//! Conversions from Python: `sluice.convert` (text files straight to a
//! Parquet dataset, what one task of a Spark or Dask load runs), the
//! schema a conversion would use, and the second stage of a distributed
//! load: a bucket's keys checked, a repeated key located in the inputs.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::exceptions::{PyKeyboardInterrupt, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use sluice::dataset::convert::{ConvertOptions, check_bucket, check_options, convert, locate_key};
use sluice::dataset::{Codec, ExportOptions, FileFormat};
use sluice::load::{LoadRequest, Prepared, Progress};
use sluice::source::Input;

use crate::errors::{Phase, to_py};
use crate::load::{request, wait};

/// What a conversion did.
#[pyclass(module = "sluice", name = "ConvertSummary", frozen, get_all)]
pub struct ConvertSummary {
    /// The dataset directory written.
    pub output: String,
    /// Rows written.
    pub rows: u64,
    /// Bytes of input read, and input files.
    pub bytes: u64,
    pub files: u64,
    /// Seconds the conversion took.
    pub seconds: f64,
    /// Malformed records set aside (`on_error="skip"`).
    pub rejected: u64,
    /// Worker threads.
    pub threads: usize,
    /// The rows' schema, as a `schema=` string.
    pub schema: String,
    /// The schema was inferred from the data (not given).
    pub inferred: bool,
    /// Files written, and their bytes.
    pub files_written: u64,
    pub bytes_written: u64,
    /// Buckets (0: none), and the column whose hash picked them.
    pub buckets: u32,
    pub bucket_by: Option<String>,
    /// Input files that held no data.
    pub empty_files: Vec<String>,
    /// Input files that could not be read, with why (`on_error="skip"`).
    pub unreadable: Vec<(String, String)>,
}

#[pymethods]
impl ConvertSummary {
    /// Megabytes of input per second.
    #[getter]
    fn mb_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / 1e6 / self.seconds
        } else {
            0.0
        }
    }

    /// The fields as a dict (for a task to return to its driver).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("output", &self.output)?;
        d.set_item("rows", self.rows)?;
        d.set_item("bytes", self.bytes)?;
        d.set_item("files", self.files)?;
        d.set_item("seconds", self.seconds)?;
        d.set_item("rejected", self.rejected)?;
        d.set_item("threads", self.threads)?;
        d.set_item("schema", &self.schema)?;
        d.set_item("inferred", self.inferred)?;
        d.set_item("files_written", self.files_written)?;
        d.set_item("bytes_written", self.bytes_written)?;
        d.set_item("buckets", self.buckets)?;
        d.set_item("bucket_by", &self.bucket_by)?;
        d.set_item("empty_files", &self.empty_files)?;
        d.set_item("unreadable", &self.unreadable)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "sluice.ConvertSummary(output={:?}, rows={}, bytes={}, seconds={:.3}, rejected={}, files={}, files_written={}, buckets={})",
            self.output,
            self.rows,
            self.bytes,
            self.seconds,
            self.rejected,
            self.files,
            self.files_written,
            self.buckets
        )
    }
}

/// The options of a conversion's files, taken out of `options` (the
/// rest are a load's).
fn convert_options(
    options: &Bound<'_, PyDict>,
    threads: Option<usize>,
) -> PyResult<(ConvertOptions, LoadRequest)> {
    let rest = options.copy()?;
    let mut c = ConvertOptions {
        files: ExportOptions {
            threads,
            ..ExportOptions::default()
        },
        ..ConvertOptions::default()
    };
    let take = |name: &str| -> PyResult<Option<Bound<'_, PyAny>>> {
        let v = rest.get_item(name)?;
        rest.del_item(name).ok();
        Ok(v.filter(|v| !v.is_none()))
    };
    if let Some(v) = take("buckets")? {
        c.buckets = v.extract()?;
        if c.buckets == 0 {
            return Err(PyValueError::new_err("buckets must be at least 1"));
        }
    }
    if let Some(v) = take("bucket_by")? {
        c.bucket_by = Some(v.extract()?);
    }
    if let Some(v) = take("output_format")? {
        c.files.format = v
            .extract::<String>()?
            .parse::<FileFormat>()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
    }
    if let Some(v) = take("compression")? {
        c.files.compression = v
            .extract::<String>()?
            .parse::<Codec>()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
    }
    if let Some(v) = take("row_group_size")? {
        c.files.row_group_size = v.extract()?;
    }
    if let Some(v) = take("target_file_size")? {
        let text: String = v.extract()?;
        c.files.target_file_size = sluice::load::parse_size(&text, "target_file_size")
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
    }
    if let Some(v) = take("file_prefix")? {
        c.prefix = v.extract()?;
        if c.prefix.is_empty() || c.prefix.starts_with(['.', '_']) || c.prefix.contains('/') {
            return Err(PyValueError::new_err(format!(
                "file_prefix {:?}: a file name's start, not empty, without '/' and not starting with '.' or '_'",
                c.prefix
            )));
        }
    }
    if let Some(v) = take("check_key")? {
        c.check_key = v.extract()?;
    }
    if let Some(v) = take("overwrite")? {
        c.files.overwrite = v.extract()?;
    }
    for table_only in [
        "on_duplicate",
        "shards",
        "shard_by",
        "shard_paths",
        "commit_every",
        "reload",
    ] {
        if take(table_only)?.is_some() {
            return Err(PyTypeError::new_err(format!(
                "convert() got an unexpected keyword argument {table_only:?} (it is an option of a table's load)"
            )));
        }
    }
    let req = request(&rest, threads)?;
    Ok((c, req))
}

/// The inputs and how they read: the schema given or inferred, `--key`
/// made the schema's key.
fn plan(inputs: &[String], req: &LoadRequest) -> sluice::Result<(Vec<Input>, Prepared)> {
    let inputs = sluice::source::expand(inputs)?;
    if sluice::load::columnar::detect(&inputs, req.columnar)?.is_some() {
        return Err(sluice::Error::Config(
            "convert reads text inputs (CSV, TSV, JSON); for Parquet and Arrow files, load them into a table and export it".into(),
        ));
    }
    let mut p = sluice::load::prepare_for(None, &inputs, req)?;
    if let Some(k) = &req.key {
        p.schema.set_key(k)?;
        p.options.schema = Some(p.schema.clone());
    }
    Ok((inputs, p))
}

fn failed(py: Python<'_>, output: &str, e: sluice::Error) -> PyErr {
    let err = to_py(py, e, Phase::Load);
    if err.is_instance_of::<crate::errors::Error>(py) {
        let value = err.value(py);
        let message = value.str().map(|s| s.to_string()).unwrap_or_default();
        let _ = value.setattr(
            "args",
            (format!(
                "converting into {output}; nothing was written: {message}"
            ),),
        );
    }
    err
}

/// Converts `inputs` into a dataset at `output`: see `sluice.convert`.
#[pyfunction]
#[pyo3(signature = (inputs, output, options, threads = None, watch = None))]
pub fn _convert(
    py: Python<'_>,
    inputs: Vec<String>,
    output: PathBuf,
    options: &Bound<'_, PyDict>,
    threads: Option<usize>,
    watch: Option<Bound<'_, PyAny>>,
) -> PyResult<ConvertSummary> {
    let shown = output.display().to_string();
    let (copts, req) = convert_options(options, threads)?;
    let planned = py.detach(|| {
        let (inputs, p) = plan(&inputs, &req)?;
        check_options(&p.schema, &copts)?;
        Ok::<_, sluice::Error>((inputs, p))
    });
    let (inputs, prepared) = planned.map_err(|e| failed(py, &shown, e))?;
    py.check_signals()?;
    let inferred = prepared.inferred.is_some();
    let total_bytes: Option<u64> = inputs.iter().map(|i| i.len()).sum();
    let files = inputs.len() as u64;
    let progress = Arc::new(Progress::default());
    let cancel = Arc::new(AtomicBool::new(false));
    let mut opts = prepared.options;
    opts.progress = Some(progress.clone());
    opts.cancel = Some(cancel.clone());
    let (tx, rx) = std::sync::mpsc::channel();
    let out = output.clone();
    std::thread::Builder::new()
        .name("sluice-convert".into())
        .spawn(move || {
            let _ = tx.send(convert(&inputs, &out, &opts, &copts));
        })
        .map_err(|e| PyValueError::new_err(format!("cannot start the conversion's thread: {e}")))?;
    let (result, interrupted) = wait(
        py,
        rx,
        |_| cancel.store(true, Ordering::Relaxed),
        |_| match &watch {
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
        },
    )?;
    if interrupted {
        return Err(PyKeyboardInterrupt::new_err(format!(
            "conversion into {shown} stopped; nothing was written"
        )));
    }
    let s = result.map_err(|e| failed(py, &shown, e))?;
    let l = &s.load;
    Ok(ConvertSummary {
        output: shown,
        rows: l.rows,
        bytes: l.bytes,
        files: l.files,
        seconds: l.seconds,
        rejected: l.rejected,
        threads: l.threads,
        // Inferred types may have widened.
        schema: s.schema.to_string(),
        inferred,
        files_written: s.files,
        bytes_written: s.bytes,
        buckets: s.buckets,
        bucket_by: s.bucket_by.clone(),
        empty_files: l.empty_files.clone(),
        unreadable: l.unreadable.clone(),
    })
}

/// The schema a conversion (or load into a new table) of `inputs` with
/// these options would use, as a `schema=` string.
#[pyfunction]
#[pyo3(signature = (inputs, options, threads = None))]
pub fn _infer(
    py: Python<'_>,
    inputs: Vec<String>,
    options: &Bound<'_, PyDict>,
    threads: Option<usize>,
) -> PyResult<String> {
    let (_, req) = convert_options(options, threads)?;
    py.detach(|| plan(&inputs, &req).map(|(_, p)| p.schema.to_string()))
        .map_err(|e| to_py(py, e, Phase::Load))
}

/// A key found twice among the Parquet files of one bucket directory:
/// None, or a dict with `key` (bytes, as `_locate_key` takes it), `shown`
/// (the key as messages show it), `first` and `second` (file, row).
#[pyfunction]
#[pyo3(signature = (dir, threads = None))]
pub fn _check_bucket<'py>(
    py: Python<'py>,
    dir: PathBuf,
    threads: Option<usize>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let found = py
        .detach(|| check_bucket(&dir, threads))
        .map_err(|e| to_py(py, e, Phase::Other))?;
    let Some(r) = found else {
        return Ok(None);
    };
    let d = PyDict::new(py);
    d.set_item("key", PyBytes::new(py, &r.key))?;
    d.set_item("shown", &r.shown)?;
    d.set_item("first", (r.first.0.display().to_string(), r.first.1))?;
    d.set_item("second", (r.second.0.display().to_string(), r.second.1))?;
    Ok(Some(d))
}

/// Where the rows of `inputs` (read with these options, the schema
/// given) whose key is `key` come from: `file:line` each, in input order.
#[pyfunction]
#[pyo3(signature = (inputs, options, key, threads = None))]
pub fn _locate_key(
    py: Python<'_>,
    inputs: Vec<String>,
    options: &Bound<'_, PyDict>,
    key: Vec<u8>,
    threads: Option<usize>,
) -> PyResult<Vec<String>> {
    let (_, req) = convert_options(options, threads)?;
    py.detach(|| {
        let (inputs, p) = plan(&inputs, &req)?;
        locate_key(&inputs, &p.options, &key)
    })
    .map_err(|e| to_py(py, e, Phase::Other))
}

/// The files that paths, globs and directories name, as `sluice load`
/// and `sluice convert` read them (in that order), each with its size:
/// what a distributed load shares out among its tasks.
#[pyfunction]
pub fn _expand(py: Python<'_>, inputs: Vec<String>) -> PyResult<Vec<(String, u64)>> {
    py.detach(|| {
        let inputs = sluice::source::expand(&inputs)?;
        Ok::<_, sluice::Error>(
            inputs
                .iter()
                .map(|i| (i.display_name(), i.len().unwrap_or(0)))
                .collect(),
        )
    })
    .map_err(|e| to_py(py, e, Phase::Other))
}
