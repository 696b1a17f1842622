//! One error type for the library, grouped by the phase that raised it.

use std::path::PathBuf;

/// Everything that can go wrong in sluice, grouped by phase.
///
/// Messages are written for the person at the terminal: input errors name
/// the file, line, column and the offending value.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system error on a named file or directory.
    /// (The I/O error is part of the message, not a separate `source`, so
    /// that printing the error chain does not repeat it.)
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },

    /// Malformed input: a bad row, a bad value, a bad quote.
    #[error("{}", format_parse(path, *line, *byte, column.as_deref(), message))]
    Parse {
        path: String,
        /// 1-based physical line where the offending field starts.
        line: u64,
        /// 0-based byte offset of the offending record or field in the file.
        byte: u64,
        /// "3 (price)": 1-based field number and column name, when known.
        column: Option<String>,
        message: String,
    },

    /// An input file that cannot be loaded at all (empty, binary, compressed).
    #[error("{}: {message}", path)]
    Input { path: String, message: String },

    /// A bad `--schema` string, a schema mismatch, a bad table name.
    #[error("{0}")]
    Schema(String),

    /// A bad option value (delimiter, date format, thread count...).
    #[error("{0}")]
    Config(String),

    /// A query that cannot be planned: unsupported construct, unknown
    /// column, type error. Says what and where.
    #[error("{0}")]
    Plan(String),

    /// SQL the parser rejects (SQLSTATE 42601).
    #[error("{0}")]
    Syntax(String),

    /// SQL outside what sluice supports (SQLSTATE 0A000).
    #[error("{0}")]
    Unsupported(String),

    /// SQL whose expressions nest deeper than a query may (SQLSTATE
    /// 54001, PostgreSQL's "stack depth limit exceeded").
    #[error("{0}")]
    TooDeep(String),

    /// A table that does not exist (SQLSTATE 42P01).
    #[error("{0}")]
    UndefinedTable(String),

    /// A column that does not exist (SQLSTATE 42703).
    #[error("{0}")]
    UndefinedColumn(String),

    /// A subquery used as a value that returned more than one row
    /// (SQLSTATE 21000).
    #[error("{0}")]
    Cardinality(String),

    /// A column or table name that several FROM items could mean
    /// (SQLSTATE 42702).
    #[error("{0}")]
    Ambiguous(String),

    /// A query that failed while running (overflow, a bad cast).
    #[error("{0}")]
    Exec(String),

    /// Division (or modulo) by zero while a query ran (SQLSTATE 22012).
    #[error("division by zero")]
    DivisionByZero,

    /// Division by zero of literals, found while planning (SQLSTATE
    /// 22012): ` at line L, column C` of the division.
    #[error("division by zero{0}")]
    DivisionByZeroAt(String),

    /// A value out of its type's range while a query ran (SQLSTATE 22003).
    #[error("{0}")]
    OutOfRange(String),

    /// A function's argument outside what it takes (a square root of a
    /// negative number, a logarithm of zero, a field position of 0), with
    /// PostgreSQL's SQLSTATE for it.
    #[error("{message}")]
    Argument {
        state: &'static str,
        message: String,
    },

    /// A query stopped before its end: canceled by its client or past its
    /// time limit (SQLSTATE 57014). Says which.
    #[error("canceling statement due to {0}")]
    QueryCanceled(String),

    /// A query's operator would hold more memory than the query memory
    /// limit allows (SQLSTATE 53200, PostgreSQL's out of memory).
    #[error(
        "out of memory: {operator} needs {} more, and {} of the memory limit of {} is in use (raise it with --memory-limit, or memory_limit= in Python)",
        crate::query::memory::human_bytes(*wanted),
        crate::query::memory::human_bytes(*used),
        crate::query::memory::human_bytes(*limit)
    )]
    MemoryLimit {
        operator: &'static str,
        wanted: u64,
        used: u64,
        limit: u64,
        /// Of `used`, what other queries held (a server's shared pool;
        /// 0 for a query's own limit): see `Memory::admit`.
        others: u64,
    },

    /// A query of a server ran out of the memory its queries share while
    /// others held some, and they did not give it back within
    /// `sluice serve --memory-wait` (SQLSTATE 53200).
    #[error(
        "{error}; waited {:.1} s for other queries to give memory back (raise --memory-wait)",
        waited.as_secs_f64()
    )]
    MemoryWait {
        error: Box<Error>,
        waited: std::time::Duration,
    },

    /// The database is locked by another writer.
    #[error("database {} is locked by another writer{}", path.display(), pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    Locked { path: PathBuf, pid: Option<u32> },

    /// A shard directory of a committed table is missing, or holds none of
    /// the files the manifest names in it: a disk not mounted. It is never
    /// recreated (files written there would vanish when the disk is mounted).
    #[error(
        "table {table}: shard {shard} directory {} is missing or empty — disk not mounted? (the manifest names {files} file{} in it; sluice never recreates it)",
        dir.display(),
        if *files == 1 { "" } else { "s" }
    )]
    ShardMissing {
        table: String,
        shard: u32,
        dir: PathBuf,
        files: usize,
    },

    /// A key loaded twice into a keyed table.
    #[error(
        "duplicate key {key} in table {table}: {second} repeats the key of {first} (--on-duplicate skip keeps the first row and goes on)"
    )]
    DuplicateKey {
        table: String,
        key: String,
        first: String,
        second: String,
    },

    /// Two rows of a dataset being written (`sluice convert --key`) with
    /// the same key.
    #[error("duplicate key {key} in {dataset}: {second} repeats the key of {first}")]
    DuplicateKeyIn {
        dataset: String,
        key: String,
        first: String,
        second: String,
    },

    /// The new manifest is in place (readers see the commit) but making
    /// it durable failed: the files it names are kept.
    #[error("committed, but the commit may not survive a crash: {0}")]
    NotDurable(String),

    /// An input file loaded by an earlier commit has changed since.
    #[error(
        "{path} was loaded before (commit {version}) and has changed since: {what}; --reload-changed loads it again (the rows loaded from it before stay)"
    )]
    Changed {
        path: String,
        version: u64,
        what: String,
    },

    /// A load that committed some groups of files and then failed.
    #[error(
        "{cause} ({committed} of {total} files were committed before this; fix the cause and run the same command again to load the rest)"
    )]
    PartlyLoaded {
        committed: u64,
        total: u64,
        cause: Box<Error>,
    },

    /// A value contradicts a column type this load inferred from samples
    /// (see `LoadOptions::widen`) after an earlier group of the load
    /// committed the table with that type: a committed type is never
    /// widened, so the rest of the files cannot load into this table.
    #[error(
        "{cause} ({committed} of {total} files were committed before this, with column {column} {ty} as inferred from samples; a type is widened only before a load's first commit: load the files into a new table with --types {column}={wider} (or a larger --commit-every), or give the whole --schema)"
    )]
    NotWidened {
        column: String,
        /// The column's type in the table.
        ty: crate::batch::DataType,
        /// The narrowest wider type that holds the value.
        wider: crate::batch::DataType,
        committed: u64,
        total: u64,
        cause: Box<Error>,
    },

    /// A database server a load writes to refused a request or could not
    /// be reached: its message, and its SQLSTATE when it gave one.
    #[error("{server}: {message}{}", sqlstate.as_deref().map(|c| format!(" (SQLSTATE {c})")).unwrap_or_default())]
    Server {
        server: String,
        message: String,
        sqlstate: Option<String>,
    },

    /// A stored file failed its checksum or could not be decoded.
    #[error("{}: corrupt: {message}", file.display())]
    Corrupt { file: PathBuf, message: String },

    /// An error from arrow while encoding or decoding a batch.
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),

    /// The load was cancelled (for example by Ctrl-C); nothing was committed.
    #[error("cancelled")]
    Cancelled,

    /// A broken invariant. This is a bug in sluice; please report it.
    #[error("internal error (this is a bug in sluice): {0}")]
    Internal(String),

    /// An error with what was being done when it happened (outermost
    /// first). The message holds the inner one's; [`Error::innermost`] is
    /// the error that happened, of its own kind.
    #[error("{context}: {source}")]
    Context {
        context: String,
        #[source]
        source: Box<Error>,
    },
}

fn format_parse(path: &str, line: u64, byte: u64, column: Option<&str>, message: &str) -> String {
    match column {
        Some(c) => format!("{path}:{line}: column {c}: {message} (byte {byte})"),
        None => format!("{path}:{line}: {message} (byte {byte})"),
    }
}

impl Error {
    /// The SQLSTATE code a PostgreSQL client expects for this error (an
    /// error with context: the inner one's).
    pub fn sqlstate(&self) -> &'static str {
        match self.innermost() {
            Error::Syntax(_) => "42601",
            Error::Unsupported(_) => "0A000",
            Error::TooDeep(_) => "54001",
            Error::UndefinedTable(_) => "42P01",
            Error::UndefinedColumn(_) => "42703",
            Error::Ambiguous(_) => "42702",
            Error::Cardinality(_) => "21000",
            // Other planning errors: type mismatches, misplaced aggregates.
            Error::Plan(_) => "42804",
            Error::DivisionByZero | Error::DivisionByZeroAt(_) => "22012",
            Error::OutOfRange(_) => "22003",
            Error::Argument { state, .. } => state,
            Error::Exec(_) => "22000",
            Error::QueryCanceled(_) | Error::Cancelled => "57014",
            Error::MemoryLimit { .. } | Error::MemoryWait { .. } => "53200",
            Error::Parse { .. } | Error::Input { .. } => "22P02",
            Error::Schema(_) | Error::Config(_) => "22023",
            Error::Locked { .. } => "55006",
            Error::Corrupt { .. } => "XX001",
            // PostgreSQL's disk_full: a spill or a load that found no room.
            Error::Io { error, .. } if error.raw_os_error() == Some(28) => "53100",
            Error::Io { .. } | Error::ShardMissing { .. } | Error::NotDurable(_) => "58030",
            Error::DuplicateKey { .. } | Error::DuplicateKeyIn { .. } => "23505",
            _ => "XX000",
        }
    }

    /// This error with what was being done when it happened.
    pub fn context(self, context: impl Into<String>) -> Error {
        Error::Context {
            context: context.into(),
            source: Box::new(self),
        }
    }

    /// The error that happened, past what was being done
    /// ([`Error::Context`]); the error itself when it has none.
    pub fn innermost(&self) -> &Error {
        let mut e = self;
        while let Error::Context { source, .. } = e {
            e = source;
        }
        e
    }

    pub(crate) fn io(path: impl Into<PathBuf>, error: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            error,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What was being done, added to the error of a [`Result`]
/// ([`Error::Context`]).
pub trait ResultExt<T> {
    /// The error, if any, with `context`.
    fn context(self, context: impl Into<String>) -> Result<T>;

    /// The error, if any, with the context `f` gives (only called on an
    /// error).
    fn with_context<C: Into<String>>(self, f: impl FnOnce() -> C) -> Result<T>;
}

impl<T> ResultExt<T> for Result<T> {
    fn context(self, context: impl Into<String>) -> Result<T> {
        self.map_err(|e| e.context(context))
    }

    fn with_context<C: Into<String>>(self, f: impl FnOnce() -> C) -> Result<T> {
        self.map_err(|e| e.context(f()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_keeps_the_inner_error() {
        let e: Result<()> = Err(Error::Config("bad".into()));
        let e = e
            .context("inner step")
            .with_context(|| format!("outer {}", 1))
            .unwrap_err();
        assert_eq!(e.to_string(), "outer 1: inner step: bad");
        assert!(matches!(e.innermost(), Error::Config(m) if m == "bad"));
        assert_eq!(e.sqlstate(), "22023");
        let source = std::error::Error::source(&e).unwrap();
        assert_eq!(source.to_string(), "inner step: bad");
    }
}
