//! sluice's errors as Python exceptions, with the message the CLI prints
//! and, for input errors, where: `file`, `line`, `column`, `byte`.

use pyo3::exceptions::{PyException, PyKeyboardInterrupt};
use pyo3::prelude::*;

pyo3::create_exception!(
    sluice,
    Error,
    PyException,
    "Any error of sluice; the message is the one the sluice command prints."
);
pyo3::create_exception!(
    sluice,
    LoadError,
    Error,
    "A load failed: a malformed record or value (file, line, column and byte are set), a duplicate key, a bad option. Nothing of the failed commit group was committed; the message says when earlier groups were."
);
pyo3::create_exception!(
    sluice,
    QueryError,
    Error,
    "A query failed: bad SQL, an unknown table or column, an unsupported construct, an error while running (`sqlstate` holds the PostgreSQL code)."
);
pyo3::create_exception!(
    sluice,
    CorruptError,
    Error,
    "A file of the database is damaged: a checksum or size does not match (`file` is set)."
);
pyo3::create_exception!(
    sluice,
    LockedError,
    Error,
    "Another writer holds the database (`pid` is set when known)."
);

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("LoadError", py.get_type::<LoadError>())?;
    m.add("QueryError", py.get_type::<QueryError>())?;
    m.add("CorruptError", py.get_type::<CorruptError>())?;
    m.add("LockedError", py.get_type::<LockedError>())?;
    Ok(())
}

/// What was being done: picks the exception of errors that could come
/// from either.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Load,
    Query,
    Other,
}

/// The Python exception of a sluice error.
pub fn to_py(py: Python<'_>, e: sluice::Error, phase: Phase) -> PyErr {
    use sluice::Error as E;
    let message = e.to_string();
    // The innermost error says what kind it is.
    let mut inner = &e;
    loop {
        match inner {
            E::Context { source, .. } => inner = source,
            E::PartlyLoaded { cause, .. } => inner = cause,
            _ => break,
        }
    }
    let err = match inner {
        E::Cancelled | E::QueryCanceled(_) => return PyKeyboardInterrupt::new_err(message),
        E::Corrupt { .. } => CorruptError::new_err(message.clone()),
        E::Locked { .. } => LockedError::new_err(message.clone()),
        E::Syntax(_)
        | E::Plan(_)
        | E::Unsupported(_)
        | E::UndefinedTable(_)
        | E::UndefinedColumn(_)
        | E::Exec(_)
        | E::DivisionByZero
        | E::OutOfRange(_)
            if phase == Phase::Query =>
        {
            QueryError::new_err(message.clone())
        }
        _ if phase == Phase::Load => LoadError::new_err(message.clone()),
        _ if phase == Phase::Query => QueryError::new_err(message.clone()),
        _ => Error::new_err(message.clone()),
    };
    let value = err.value(py);
    let set = |name: &str, v: Bound<'_, PyAny>| {
        let _ = value.setattr(name, v);
    };
    let none = || py.None().into_bound(py);
    let (mut file, mut line, mut column, mut byte, mut pid) =
        (none(), none(), none(), none(), none());
    match inner {
        E::Parse {
            path,
            line: l,
            byte: b,
            column: c,
            ..
        } => {
            file = path
                .into_pyobject(py)
                .map(|o| o.into_any())
                .unwrap_or_else(|_| none());
            line = l
                .into_pyobject(py)
                .map(|o| o.into_any())
                .unwrap_or_else(|_| none());
            byte = b
                .into_pyobject(py)
                .map(|o| o.into_any())
                .unwrap_or_else(|_| none());
            if let Some(c) = c {
                column = c
                    .into_pyobject(py)
                    .map(|o| o.into_any())
                    .unwrap_or_else(|_| none());
            }
        }
        E::Input { path, .. } => {
            file = path
                .into_pyobject(py)
                .map(|o| o.into_any())
                .unwrap_or_else(|_| none());
        }
        E::Io { path, .. } | E::Corrupt { file: path, .. } => {
            file = path
                .display()
                .to_string()
                .into_pyobject(py)
                .map(|o| o.into_any())
                .unwrap_or_else(|_| none());
        }
        E::Locked { pid: Some(p), .. } => {
            pid = p
                .into_pyobject(py)
                .map(|o| o.into_any())
                .unwrap_or_else(|_| none());
        }
        _ => {}
    }
    set("file", file);
    set("line", line);
    set("column", column);
    set("byte", byte);
    set("pid", pid);
    let code = inner.sqlstate();
    set(
        "sqlstate",
        code.into_pyobject(py)
            .map(|o| o.into_any())
            .unwrap_or_else(|_| none()),
    );
    err
}
