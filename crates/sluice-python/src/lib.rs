//! The Python module `sluice._sluice`: a database handle, query results
//! that cross to Python as Arrow without copying, and loads run on their
//! own thread while the caller waits for Ctrl-C.
//!
//! The Python package (`python/sluice/__init__.py`) wraps it: `connect`,
//! keyword arguments of `load`, progress display.

use std::path::PathBuf;

use arrow_array::RecordBatch;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use sluice::store::Snapshots;

mod convert;
mod errors;
mod export;
mod load;

pub use convert::ConvertSummary;
use errors::{Phase, to_py};
pub use export::QueryResult;
pub use load::LoadSummary;

/// A sluice database directory. Queries read the last commit; each load
/// takes the writer lock for its duration.
#[pyclass(module = "sluice", name = "Database", frozen, subclass)]
pub struct Database {
    path: PathBuf,
    threads: Option<usize>,
    /// Bytes one query may hold (see `sluice::query::memory`).
    memory_limit: u64,
    /// Where queries past the limit spill (`None`: `tmp` in the database).
    temp_dir: Option<PathBuf>,
    /// The database as of its last commit, opened once and reopened
    /// when a commit changes the manifest.
    snap: Snapshots,
}

#[pymethods]
impl Database {
    #[new]
    #[pyo3(signature = (path = None, threads = None, memory_limit = None, temp_dir = None))]
    fn new(
        path: Option<PathBuf>,
        threads: Option<usize>,
        memory_limit: Option<&Bound<'_, PyAny>>,
        temp_dir: Option<PathBuf>,
    ) -> PyResult<Self> {
        if threads == Some(0) {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "threads must be at least 1 (or None: every usable core)",
            ));
        }
        let memory_limit = match memory_limit {
            None => sluice::query::memory::default_limit(),
            Some(v) if v.is_none() => sluice::query::memory::default_limit(),
            Some(v) => match v.extract::<u64>() {
                Ok(n) => n,
                Err(_) => match v.extract::<String>() {
                    Ok(s) => sluice::load::parse_size(&s, "memory_limit")
                        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?,
                    Err(_) => {
                        return Err(pyo3::exceptions::PyTypeError::new_err(
                            "memory_limit takes a number of bytes or a size such as \"2GiB\"",
                        ));
                    }
                },
            },
        };
        if memory_limit == 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "memory_limit must be more than 0 bytes",
            ));
        }
        let path = path.unwrap_or_else(|| PathBuf::from("sluice.db"));
        // What queries killed mid-spill left.
        sluice::query::spill::sweep(&temp_dir.clone().unwrap_or_else(|| path.join("tmp")));
        Ok(Database {
            snap: Snapshots::new(&path),
            path,
            threads,
            memory_limit,
            temp_dir,
        })
    }

    /// Bytes one query may hold (its hash tables, aggregates, sorts and
    /// result); past it a GROUP BY, joins by keys, ORDER BY and windows
    /// by partition spill to `temp_dir` (default: `tmp` in the
    /// database) and other operators raise
    /// QueryError (sqlstate 53200).
    #[getter]
    fn memory_limit(&self) -> u64 {
        self.memory_limit
    }

    /// The database directory.
    #[getter]
    fn path(&self) -> String {
        self.path.display().to_string()
    }

    /// Worker threads of loads and queries (`None`: every usable core).
    #[getter]
    fn threads(&self) -> Option<usize> {
        self.threads
    }

    /// Runs one SQL statement on a thread of its own; the calling thread
    /// waits without the GIL, and Ctrl-C stops the query (it raises
    /// KeyboardInterrupt).
    fn query(&self, py: Python<'_>, sql: &str) -> PyResult<QueryResult> {
        let threads = self.threads;
        let planned = py.detach(|| {
            let db = self.snap.get()?;
            let plan = sluice::query::plan::plan_sql(sql, db.as_ref())?;
            Ok::<_, sluice::Error>((db, plan))
        });
        let (db, plan) = planned.map_err(|e| to_py(py, e, Phase::Query))?;
        let stop = sluice::query::Stop::default();
        let opts = sluice::query::QueryOptions {
            threads,
            stop: Some(stop.clone()),
            memory: Some(sluice::query::memory::Memory::new(self.memory_limit)),
            spill: Some(sluice::query::spill::Spill::new(
                self.temp_dir
                    .clone()
                    .unwrap_or_else(|| sluice::query::default_spill_root(&db)),
            )),
            // The answer is the caller's to hold: one past half the limit
            // is made on disk, then read into the result.
            answer_to_disk: true,
            ..Default::default()
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("sluice-query".into())
            .spawn(move || {
                let r = sluice::query::run_plan(&db, &plan, &opts).and_then(|r| {
                    let (schema, explain) = (r.schema.clone(), r.explain.clone());
                    let batches = r.into_batches()?;
                    let (schema, batches) = export::narrow_decimals(&plan, schema, batches)?;
                    Ok(QueryResult::new(schema, batches, explain))
                });
                // Its spill directory goes before the answer is seen.
                drop(opts);
                let _ = tx.send(r);
            })
            .map_err(|e| {
                pyo3::exceptions::PyRuntimeError::new_err(format!(
                    "cannot start the query's thread: {e}"
                ))
            })?;
        let (r, _) = load::wait(py, rx, |_| stop.cancel(), |_| Ok(()))?;
        r.map_err(|e| to_py(py, e, Phase::Query))
    }

    /// The rows of a keyed table with these keys, in the order given;
    /// keys not in the table give no row.
    fn get(&self, py: Python<'_>, table: &str, keys: &Bound<'_, PyAny>) -> PyResult<QueryResult> {
        // A key is a str or an int (a bool or bytes is a mistake, not a key).
        let key_text = |k: &Bound<'_, PyAny>| -> PyResult<String> {
            if k.is_instance_of::<pyo3::types::PyBool>()
                || !(k.is_instance_of::<pyo3::types::PyString>()
                    || k.is_instance_of::<pyo3::types::PyInt>())
            {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "a key is a str or an int, not {}",
                    k.get_type().name()?
                )));
            }
            Ok(k.str()?.to_string())
        };
        let mut texts: Vec<String> = Vec::new();
        if keys.is_instance_of::<pyo3::types::PyString>()
            || keys.is_instance_of::<pyo3::types::PyInt>()
        {
            texts.push(key_text(keys)?);
        } else {
            for k in keys.try_iter()? {
                texts.push(key_text(&k?)?);
            }
        }
        let r = py.detach(|| -> sluice::Result<RecordBatch> {
            let db = self.snap.get()?;
            let t = db.keyed(table)?;
            t.get_many(&texts)
        });
        match r.and_then(export::decimal128) {
            Ok(b) => Ok(QueryResult::new(b.schema(), vec![b], None)),
            Err(e) => Err(to_py(py, e, Phase::Query)),
        }
    }

    /// The names of the tables, sorted.
    fn tables(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        match self.snap.get() {
            Ok(db) => Ok(db.manifest().tables.keys().cloned().collect()),
            Err(sluice::Error::Config(_)) if !self.path.exists() => Ok(Vec::new()),
            Err(e) => Err(to_py(py, e, Phase::Other)),
        }
    }

    /// A table's columns: a list of `(name, type)`, the type as in a
    /// schema string (`"BIGINT"`, `"DECIMAL(15,2)"`); the primary key's
    /// type ends in `" PRIMARY KEY"`.
    fn schema(&self, py: Python<'_>, table: &str) -> PyResult<Vec<(String, String)>> {
        let db = self.snap.get().map_err(|e| to_py(py, e, Phase::Other))?;
        let Some(t) = db.table(table) else {
            return Err(to_py(
                py,
                sluice::Error::UndefinedTable(format!("table {table:?} does not exist")),
                Phase::Other,
            ));
        };
        let key = t.schema.key_column();
        Ok(t.schema
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut ty = c.data_type.to_string();
                if key == Some(i) {
                    ty.push_str(" PRIMARY KEY");
                }
                (c.name.clone(), ty)
            })
            .collect())
    }

    /// Verifies every checksum of one table (or all): a list of dicts,
    /// one a table (`table`, `ok`, `version`, `segments`, `runs`,
    /// `bytes`, `problems`, `unnamed`). Changes nothing.
    #[pyo3(signature = (table = None))]
    fn check<'py>(&self, py: Python<'py>, table: Option<&str>) -> PyResult<Bound<'py, PyList>> {
        let reports = py.detach(
            || -> sluice::Result<Vec<sluice::store::check::CheckReport>> {
                let db = sluice::store::Database::open(&self.path)?;
                let names: Vec<String> = match table {
                    Some(t) => vec![t.to_ascii_lowercase()],
                    None => db.manifest().tables.keys().cloned().collect(),
                };
                names.iter().map(|t| db.check(t)).collect()
            },
        );
        let reports = reports.map_err(|e| to_py(py, e, Phase::Other))?;
        let out = PyList::empty(py);
        for r in reports {
            let d = PyDict::new(py);
            d.set_item("table", &r.table)?;
            d.set_item("ok", r.problems.is_empty())?;
            d.set_item("version", r.version)?;
            d.set_item("segments", r.segments)?;
            d.set_item("runs", r.runs)?;
            d.set_item("bytes", r.bytes)?;
            d.set_item("problems", &r.problems)?;
            d.set_item("unnamed", &r.unnamed)?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// Loads files (paths, globs, directories) into `table` with the
    /// options of `sluice load`, given as a dict of its long option names
    /// with `_` for `-`; `watch(bytes, total, rows, files_done, files)`
    /// is called about every 0.2 s while it runs. Ctrl-C stops after the
    /// file being read (what was read is committed) and raises
    /// KeyboardInterrupt; a second one stops at once.
    #[pyo3(signature = (table, inputs, options, watch = None))]
    fn _load_files(
        &self,
        py: Python<'_>,
        table: &str,
        inputs: Vec<String>,
        options: &Bound<'_, PyDict>,
        watch: Option<Bound<'_, PyAny>>,
    ) -> PyResult<LoadSummary> {
        load::load_files(py, &self.path, self.threads, table, inputs, options, watch)
    }

    /// Loads Arrow data (anything with `__arrow_c_stream__`) into `table`,
    /// in one commit; the table's columns come from the data's (or from
    /// `schema`).
    #[pyo3(signature = (table, data, options))]
    fn _load_arrow(
        &self,
        py: Python<'_>,
        table: &str,
        data: &Bound<'_, PyAny>,
        options: &Bound<'_, PyDict>,
    ) -> PyResult<LoadSummary> {
        load::load_arrow(py, &self.path, self.threads, table, data, options)
    }

    fn __repr__(&self) -> String {
        format!("sluice.Database({:?})", self.path.display().to_string())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        self.close();
        false
    }

    /// Lets go of the segments this handle has mapped (results already
    /// returned keep theirs). The handle can still be used: it reopens.
    fn close(&self) {
        self.snap.clear();
    }
}

#[pymodule]
#[pyo3(name = "_sluice")]
fn sluice_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Database>()?;
    m.add_class::<QueryResult>()?;
    m.add_class::<LoadSummary>()?;
    m.add_class::<ConvertSummary>()?;
    m.add_function(wrap_pyfunction!(convert::_convert, m)?)?;
    m.add_function(wrap_pyfunction!(convert::_infer, m)?)?;
    m.add_function(wrap_pyfunction!(convert::_check_bucket, m)?)?;
    m.add_function(wrap_pyfunction!(convert::_locate_key, m)?)?;
    m.add_function(wrap_pyfunction!(convert::_expand, m)?)?;
    errors::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
