//! Loads into a MariaDB or MySQL server: `LOAD DATA LOCAL INFILE` streams
//! fed from the batches over parallel connections (multi-row INSERTs when
//! the server has LOCAL INFILE off), exactly once by XA transactions.
//!
//! Useful for: what `sluice load --into mariadb://…` (or `mysql://`) does
//! on the server; the MariaDB counterpart of [`crate::pg`].
//! Not useful for: reading and parsing (`sluice::load`).
//!
//! # How a load runs
//!
//! A control connection takes the table's named lock (`GET_LOCK`: one
//! load into a table at a time), creates the journal tables when missing,
//! settles the XA transactions a crash left prepared (below), reads the
//! journal to skip the files loaded before, and creates a new table. For
//! each commit group, `N` connections each run `XA START` and
//! `LOAD DATA LOCAL INFILE`, whose data its LOCAL INFILE handler writes
//! from the batches it takes off the queue: tab-separated, `\N` for NULL,
//! backslash escapes. With LOCAL the server turns row errors into
//! warnings and skips duplicate keys, so a load with a warning, or with
//! fewer rows than were sent, fails the group, naming the server's first
//! warning. Sessions run in strict mode with the time zone UTC.
//!
//! # Exactly once
//!
//! At the commit each connection inserts its row of `sluice_load_parts`
//! (the first also the group's files into `sluice_load_journal`), then
//! `XA END` and `XA PREPARE`; only when all `N` are prepared do they
//! `XA COMMIT`, one after the other. A prepared XA transaction survives a
//! disconnect and a server restart (MariaDB 10.5 and later), so a crash
//! between the commits leaves the others prepared: the next load lists
//! them (`XA RECOVER`) and commits them when a part of their group is
//! committed (the decision was made: every part was prepared), else rolls
//! them back. Before the first commit nothing is visible; an error or
//! Ctrl-C rolls every connection back.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal64Type, Float64Type, Int32Type, Int64Type, Time64MicrosecondType,
    TimestampMicrosecondType, UInt16Type,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType as A, TimeUnit};
use mysql::prelude::Queryable;
use mysql::{Conn, LocalInfileHandler, Opts, OptsBuilder, Value};
use sluice::batch::{DataType, Schema};
use sluice::load::sink::{Committed, GroupFiles, Layout, Provenance, Rows, Sink};
use sluice::load::{JournalNames, LoadOptions, is_journaled};
use sluice::source::Input;
use sluice::store::LoadedFile;
use sluice::{Error, Result};

use crate::fanout::{Fanout, PartFailure, PartResult, Queue};
use crate::{LOCK_WAIT_SECONDS, ServerLoad, ServerSink, Sharing, Unique, table_tag};

/// Bytes of rows a LOCAL INFILE handler encodes before writing them.
const WRITE_BYTES: usize = 1 << 20;

/// Rows of one INSERT when LOCAL INFILE is off (at most 65,535
/// placeholders a statement).
const INSERT_ROWS: usize = 1000;

/// A MariaDB or MySQL server to load into, from a URL.
#[derive(Clone)]
pub struct MyTarget {
    opts: Opts,
    shown: String,
}

impl MyTarget {
    /// `mariadb://` or `mysql://user[:password]@host[:port]/database`; the
    /// password from the URL, else `password_file`, else `MYSQL_PWD`.
    pub fn parse(url: &str, password_file: Option<&Path>) -> Result<MyTarget> {
        let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
        // `sslmode=require` (as in PostgreSQL's URLs) is this crate's, not
        // the client's: taken out before the client reads the URL.
        let (rest, tls) = take_sslmode(rest).map_err(|what| {
            Error::Config(format!(
                "--into {}: {what} (sslmode=require encrypts the connection)",
                crate::redact(url)
            ))
        })?;
        let opts = Opts::from_url(&format!("mysql://{rest}")).map_err(|e| {
            Error::Config(format!(
                "--into {}: not a MariaDB URL ({e}): expected mariadb://user@host[:port]/database",
                crate::redact(url)
            ))
        })?;
        if opts.get_db_name().is_none_or(str::is_empty) {
            return Err(Error::Config(format!(
                "--into {}: the URL names no database: mariadb://user@host[:port]/database",
                crate::redact(url)
            )));
        }
        let mut b = OptsBuilder::from_opts(opts.clone())
            .prefer_socket(false)
            .tcp_connect_timeout(Some(std::time::Duration::from_secs(30)));
        if opts.get_pass().is_none() {
            if let Some(f) = password_file {
                b = b.pass(Some(crate::read_password_file(f)?));
            } else if let Ok(p) = std::env::var("MYSQL_PWD") {
                b = b.pass(Some(p));
            }
        }
        if tls {
            // As libpq's `require`: encrypted, the certificate not checked
            // against an authority.
            b = b.ssl_opts(Some(
                mysql::SslOpts::default()
                    .with_danger_accept_invalid_certs(true)
                    .with_danger_skip_domain_validation(true),
            ));
        }
        let opts: Opts = b.into();
        let shown = format!(
            "mariadb://{}@{}:{}/{}",
            opts.get_user().unwrap_or(""),
            opts.get_ip_or_hostname(),
            opts.get_tcp_port(),
            opts.get_db_name().unwrap_or("")
        );
        Ok(MyTarget { opts, shown })
    }

    pub fn shown(&self) -> &str {
        &self.shown
    }

    fn connect(&self) -> Result<Conn> {
        let mut c = Conn::new(self.opts.clone())
            .map_err(|e| my_error(&e).context(format!("connecting to {}", self.shown)))?;
        c.query_drop(
            "SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ENGINE_SUBSTITUTION', time_zone = '+00:00'",
        )
        .map_err(|e| my_error(&e).context(format!("setting up a session on {}", self.shown)))?;
        Ok(c)
    }
}

/// The URL's rest without an `sslmode` parameter, and whether it asked
/// for TLS (`require`); another mode is an error.
fn take_sslmode(rest: &str) -> std::result::Result<(String, bool), String> {
    let Some((base, query)) = rest.split_once('?') else {
        return Ok((rest.to_string(), false));
    };
    let mut tls = false;
    let mut kept = Vec::new();
    for param in query.split('&') {
        match param.split_once('=') {
            Some(("sslmode", "require")) => tls = true,
            Some(("sslmode", "disable" | "prefer")) => {}
            Some(("sslmode", other)) => {
                return Err(format!(
                    "sslmode={other} is not supported (require, disable)"
                ));
            }
            _ => kept.push(param),
        }
    }
    Ok(if kept.is_empty() {
        (base.to_string(), tls)
    } else {
        (format!("{base}?{}", kept.join("&")), tls)
    })
}

/// An error of the client or the server as a sluice error.
fn my_error(e: &mysql::Error) -> Error {
    match e {
        mysql::Error::MySqlError(m) => Error::Server {
            server: "MariaDB".into(),
            message: format!("{} (error {})", m.message, m.code),
            sqlstate: Some(m.state.clone()),
        },
        other => Error::Server {
            server: "MariaDB".into(),
            message: other.to_string(),
            sqlstate: None,
        },
    }
}

/// A name quoted as a MariaDB identifier.
pub fn quote_ident(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// A string as an SQL literal.
fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

/// The MariaDB type of a column of a sluice type; a TEXT key is a
/// VARCHAR, which an index takes whole (768 characters of utf8mb4).
pub fn my_type(t: DataType, key: bool) -> String {
    match t {
        DataType::Boolean => "BOOLEAN".into(),
        DataType::Int => "INT".into(),
        DataType::BigInt => "BIGINT".into(),
        DataType::Double => "DOUBLE".into(),
        DataType::Decimal { precision, scale } => format!("DECIMAL({precision},{scale})"),
        DataType::Date => "DATE".into(),
        DataType::Time => "TIME(6)".into(),
        // No such type: `create_table` refuses it first.
        DataType::Interval => "INTERVAL".into(),
        DataType::Timestamp => "DATETIME(6)".into(),
        // MariaDB has no type that keeps an instant: its UTC time, in a
        // DATETIME (its TIMESTAMP converts by the session's zone).
        DataType::TimestampTz => "DATETIME(6)".into(),
        DataType::Text if key => "VARCHAR(768)".into(),
        DataType::Text => "LONGTEXT".into(),
    }
}

/// The sluice type that loads a server column (`DATA_TYPE`, `COLUMN_TYPE`
/// and precision of `information_schema.COLUMNS`) exactly; `None`: none.
pub fn from_my_type(data_type: &str, column_type: &str, p: u64, s: u64) -> Option<DataType> {
    if column_type.contains("unsigned") {
        return None;
    }
    Some(match data_type {
        "int" => DataType::Int,
        "bigint" => DataType::BigInt,
        "double" => DataType::Double,
        "tinyint" if column_type == "tinyint(1)" => DataType::Boolean,
        "date" => DataType::Date,
        "time" if column_type == "time(6)" => DataType::Time,
        "datetime" if column_type == "datetime(6)" => DataType::Timestamp,
        "decimal" if p <= 18 => DataType::Decimal {
            precision: p as u8,
            scale: s as u8,
        },
        "varchar" | "char" | "text" | "tinytext" | "mediumtext" | "longtext" => DataType::Text,
        _ => return None,
    })
}

/// One row's field `row` of column `a` as MariaDB reads it in LOAD DATA
/// and as a parameter: `None` for NULL.
fn field(a: &ArrayRef, row: usize, out: &mut Vec<u8>) -> Result<bool> {
    if a.is_null(row) {
        return Ok(false);
    }
    match a.data_type() {
        A::Int32 => write!(out, "{}", a.as_primitive::<Int32Type>().value(row)),
        A::Int64 => write!(out, "{}", a.as_primitive::<Int64Type>().value(row)),
        A::Float64 => write!(out, "{}", a.as_primitive::<Float64Type>().value(row)),
        A::Boolean => write!(out, "{}", u8::from(a.as_boolean().value(row))),
        A::Utf8 => out.write_all(a.as_string::<i32>().value(row).as_bytes()),
        A::Dictionary(k, v) if **k == A::UInt16 && **v == A::Utf8 => {
            let d = a.as_dictionary::<UInt16Type>();
            let key = d.keys().value(row) as usize;
            out.write_all(d.values().as_string::<i32>().value(key).as_bytes())
        }
        A::Date32 => {
            let days = a.as_primitive::<Date32Type>().value(row);
            let d = chrono::DateTime::from_timestamp(i64::from(days) * 86_400, 0)
                .ok_or_else(|| Error::Internal(format!("date {days} out of range")))?;
            write!(out, "{}", d.format("%Y-%m-%d"))
        }
        A::Time64(TimeUnit::Microsecond) => {
            let us = a.as_primitive::<Time64MicrosecondType>().value(row);
            out.write_all(sluice::batch::format_time(us).as_bytes())
        }
        A::Timestamp(TimeUnit::Microsecond, _) => {
            let us = a.as_primitive::<TimestampMicrosecondType>().value(row);
            let t = chrono::DateTime::from_timestamp_micros(us)
                .ok_or_else(|| Error::Internal(format!("timestamp {us} out of range")))?;
            write!(out, "{}", t.format("%Y-%m-%d %H:%M:%S%.6f"))
        }
        A::Decimal64(_, s) if *s >= 0 => {
            let v = a.as_primitive::<Decimal64Type>().value(row);
            let scale = *s as u32;
            let unit = 10u64.pow(scale);
            let (int, frac) = (v.unsigned_abs() / unit, v.unsigned_abs() % unit);
            let sign = if v < 0 { "-" } else { "" };
            if scale == 0 {
                write!(out, "{sign}{int}")
            } else {
                write!(out, "{sign}{int}.{frac:0width$}", width = scale as usize)
            }
        }
        other => {
            return Err(Error::Internal(format!(
                "a MariaDB load of a column of type {other}"
            )));
        }
    }
    .map_err(|e| Error::Internal(format!("formatting a value: {e}")))?;
    Ok(true)
}

/// The rows of a batch as LOAD DATA's default text: fields ended by tab,
/// rows by newline, NULL as `\N`, backslash escapes.
pub fn encode_tsv(batch: &RecordBatch, out: &mut Vec<u8>) -> Result<()> {
    let mut value = Vec::new();
    let cols = batch.columns();
    for row in 0..batch.num_rows() {
        for (i, a) in cols.iter().enumerate() {
            if i > 0 {
                out.push(b'\t');
            }
            value.clear();
            if !field(a, row, &mut value)? {
                out.extend_from_slice(b"\\N");
                continue;
            }
            for &b in &value {
                match b {
                    b'\\' => out.extend_from_slice(b"\\\\"),
                    b'\t' => out.extend_from_slice(b"\\t"),
                    b'\n' => out.extend_from_slice(b"\\n"),
                    b'\r' => out.extend_from_slice(b"\\r"),
                    0 => out.extend_from_slice(b"\\0"),
                    _ => out.push(b),
                }
            }
        }
        out.push(b'\n');
    }
    Ok(())
}

/// The values of rows `rows` of a batch as INSERT parameters.
fn params(batch: &RecordBatch, rows: std::ops::Range<usize>) -> Result<Vec<Value>> {
    let mut v = Vec::with_capacity(rows.len() * batch.num_columns());
    for row in rows {
        for a in batch.columns() {
            let mut b = Vec::new();
            v.push(if field(a, row, &mut b)? {
                Value::Bytes(b)
            } else {
                Value::NULL
            });
        }
    }
    Ok(v)
}

/// A column as `information_schema.COLUMNS` has it: name, DATA_TYPE,
/// COLUMN_TYPE, precision, scale, COLUMN_KEY.
type ColumnRow = (String, String, String, Option<u64>, Option<u64>, String);

struct ServerTable {
    schema: Schema,
    has_key: bool,
    unique: Unique,
}

const JOURNAL_DDL: [&str; 2] = [
    "CREATE TABLE IF NOT EXISTS sluice_load_journal (
        target VARCHAR(64) NOT NULL,
        commit_no BIGINT NOT NULL,
        path TEXT NOT NULL,
        size BIGINT NOT NULL,
        mtime_ns BIGINT NOT NULL,
        crc32 BIGINT NOT NULL,
        `rows` BIGINT NOT NULL,
        rejected BIGINT NOT NULL,
        committed_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
        KEY (target, commit_no)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
    "CREATE TABLE IF NOT EXISTS sluice_load_parts (
        target VARCHAR(64) NOT NULL,
        commit_no BIGINT NOT NULL,
        part INT NOT NULL,
        parts INT NOT NULL,
        `rows` BIGINT NOT NULL,
        committed_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
        PRIMARY KEY (target, commit_no, part)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
];

/// A load into one table of a MariaDB server: the control connection and
/// what it found. See the [module documentation](self).
pub struct MyLoad {
    target: MyTarget,
    control: Conn,
    table: String,
    existing: Option<ServerTable>,
    created: bool,
    /// The server has LOCAL INFILE off: rows go as INSERTs.
    inserts: bool,
    repaired_commits: u64,
    /// `database.table` hashed, for the lock's name and the XA ids.
    tag: String,
    /// The collation of a TEXT key of a table the load creates.
    key_collation: &'static str,
}

/// The collation that compares a TEXT key byte for byte, as sluice
/// compares keys ('a', 'A' and 'a ' are three keys, and the order sluice
/// sorts them in is the index's): MariaDB's `utf8mb4_nopad_bin`, MySQL
/// 8's `utf8mb4_0900_bin`; MySQL 5.7 has only `utf8mb4_bin`, which ignores
/// trailing spaces.
fn key_collation(version: &str) -> &'static str {
    let major: u32 = version
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    if version.contains("MariaDB") {
        "utf8mb4_nopad_bin"
    } else if major >= 8 {
        "utf8mb4_0900_bin"
    } else {
        "utf8mb4_bin"
    }
}

/// Whether prepared XA transactions of this server version survive a
/// disconnect: MariaDB 10.5+, MySQL 5.7.7+.
fn xa_survives_disconnect(version: &str) -> bool {
    let nums: Vec<u32> = version
        .split(|c: char| !c.is_ascii_digit())
        .take(3)
        .map(|n| n.parse().unwrap_or(0))
        .collect();
    let v = (
        nums.first().copied().unwrap_or(0),
        nums.get(1).copied().unwrap_or(0),
        nums.get(2).copied().unwrap_or(0),
    );
    if version.contains("MariaDB") {
        v >= (10, 5, 0)
    } else {
        v >= (5, 7, 7)
    }
}

impl MyLoad {
    pub fn connect(target: &MyTarget, table: &str) -> Result<MyLoad> {
        let mut control = target.connect()?;
        let ctx = |what: &str| format!("{what} on {}", target.shown);
        // A prepared XA transaction must outlive its connection (the
        // recovery of a crash between commits): MariaDB 10.5, MySQL 5.7.7.
        let version: Option<String> = control
            .query_first("SELECT VERSION()")
            .map_err(|e| my_error(&e).context(ctx("reading the server's version")))?;
        let version = version.unwrap_or_default();
        if !xa_survives_disconnect(&version) {
            return Err(Error::Unsupported(format!(
                "{} is version {version}: loads need MariaDB 10.5 or later (or MySQL 5.7.7 or later), whose prepared XA transactions survive a disconnect",
                target.shown
            )));
        }
        let tag = table_tag(target.opts.get_db_name().unwrap_or(""), table);
        let locked: Option<Option<i64>> = control
            .exec_first(
                "SELECT GET_LOCK(?, ?)",
                (format!("sluice:{tag}"), LOCK_WAIT_SECONDS),
            )
            .map_err(|e| my_error(&e).context(ctx("taking the load lock")))?;
        if locked.flatten() != Some(1) {
            return Err(Error::Config(format!(
                "another sluice load into table {table} on {} is running (one load into a table at a time; waited {LOCK_WAIT_SECONDS} s); wait for it, or stop it",
                target.shown
            )));
        }
        for ddl in JOURNAL_DDL {
            control
                .query_drop(ddl)
                .map_err(|e| my_error(&e).context(ctx("creating the journal tables")))?;
        }
        let local_infile: Option<i64> = control
            .query_first("SELECT @@local_infile")
            .map_err(|e| my_error(&e).context(ctx("reading local_infile")))?;
        let mut load = MyLoad {
            target: target.clone(),
            control,
            table: table.to_string(),
            existing: None,
            created: false,
            inserts: local_infile != Some(1),
            repaired_commits: 0,
            tag,
            key_collation: key_collation(&version),
        };
        load.settle_prepared()?;
        load.existing = load.read_table()?;
        if load.existing.is_none() {
            // The journal of a table dropped since: its files load again.
            for t in ["sluice_load_parts", "sluice_load_journal"] {
                load.control
                    .exec_drop(format!("DELETE FROM {t} WHERE target = ?"), (table,))
                    .map_err(|e| {
                        my_error(&e).context(ctx("clearing the journal of a dropped table"))
                    })?;
            }
        }
        Ok(load)
    }

    /// Commits the XA transactions a crash left prepared whose group has a
    /// committed part, and rolls back the others.
    fn settle_prepared(&mut self) -> Result<()> {
        let prefix = format!("sluice:{}:", self.tag);
        let rows: Vec<mysql::Row> = self
            .control
            .query("XA RECOVER")
            .map_err(|e| my_error(&e).context("listing prepared XA transactions"))?;
        for r in rows {
            let Some(data) = r.get::<Vec<u8>, _>("data") else {
                continue;
            };
            let Ok(xid) = String::from_utf8(data) else {
                continue;
            };
            let Some(commit) = xid
                .strip_prefix(&prefix)
                .and_then(|rest| rest.split(':').next())
                .and_then(|c| c.parse::<i64>().ok())
            else {
                continue;
            };
            let decided: Option<i64> = self
                .control
                .exec_first(
                    "SELECT count(*) FROM sluice_load_parts WHERE target = ? AND commit_no = ?",
                    (&self.table, commit),
                )
                .map_err(|e| my_error(&e).context("reading the load journal"))?;
            let verb = if decided.unwrap_or(0) > 0 {
                "COMMIT"
            } else {
                "ROLLBACK"
            };
            self.control
                .query_drop(format!("XA {verb} {}", literal(&xid)))
                .map_err(|e| {
                    my_error(&e).context(format!("XA {verb} of the interrupted commit {commit}"))
                })?;
            self.repaired_commits += 1;
        }
        Ok(())
    }

    fn read_table(&mut self) -> Result<Option<ServerTable>> {
        let rows: Vec<ColumnRow> = self
            .control
            .exec(
                "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, NUMERIC_PRECISION, NUMERIC_SCALE, COLUMN_KEY
                   FROM information_schema.COLUMNS
                  WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?
                  ORDER BY ORDINAL_POSITION",
                (&self.table,),
            )
            .map_err(|e| my_error(&e).context(format!("reading the columns of {}", self.table)))?;
        if rows.is_empty() {
            return Ok(None);
        }
        let keys = rows.iter().filter(|r| r.5 == "PRI").count();
        let mut columns = Vec::new();
        for (name, dt, ct, p, s, key) in rows {
            let data_type = from_my_type(&dt, &ct, p.unwrap_or(0), s.unwrap_or(0)).ok_or_else(|| {
                Error::Schema(format!(
                    "table {} on {}: column {name} is {ct}, which sluice does not load exactly (it loads int, bigint, decimal(p,s) with p <= 18, double, boolean, date, datetime(6) and text types)",
                    self.table, self.target.shown
                ))
            })?;
            columns.push(sluice::batch::Column {
                name,
                data_type,
                default: None,
                primary_key: key == "PRI" && keys == 1,
            });
        }
        let schema = Schema::new(columns)
            .map_err(|e| e.context(format!("table {} on {}", self.table, self.target.shown)))?;
        let index_columns: Vec<(String, String)> = self
            .control
            .exec(
                "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS
                  WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND NON_UNIQUE = 0
                  ORDER BY INDEX_NAME, SEQ_IN_INDEX",
                (&self.table,),
            )
            .map_err(|e| my_error(&e).context(format!("reading the indexes of {}", self.table)))?;
        let mut indexes: Vec<(String, Vec<Option<String>>)> = Vec::new();
        for (index, column) in index_columns {
            match indexes.last_mut() {
                Some((i, cols)) if *i == index => cols.push(Some(column)),
                _ => indexes.push((index, vec![Some(column)])),
            }
        }
        let indexes: Vec<Vec<Option<String>>> = indexes.into_iter().map(|(_, c)| c).collect();
        let unique = Unique::of(&schema, &indexes);
        Ok(Some(ServerTable {
            schema,
            has_key: keys > 0,
            unique,
        }))
    }

    fn exec_control(&mut self, sql: &str, what: &str) -> Result<()> {
        self.control
            .query_drop(sql)
            .map_err(|e| my_error(&e).context(format!("{what} ({})", self.table)))
    }
}

impl ServerLoad for MyLoad {
    fn shown(&self) -> &str {
        &self.target.shown
    }

    fn existing_schema(&self) -> Option<&Schema> {
        self.existing.as_ref().map(|t| &t.schema)
    }

    fn check_schema(&self, given: &Schema) -> Result<()> {
        match &self.existing {
            Some(t) => {
                crate::check_schema(&t.schema, given, &self.table, &self.target.shown, |d| {
                    my_type(d, false).to_ascii_lowercase()
                })
            }
            None => Ok(()),
        }
    }

    fn create_table(&mut self, schema: &Schema, index_first: bool) -> Result<bool> {
        if self.existing.is_some() {
            return Ok(false);
        }
        if let Some(c) = schema
            .columns
            .iter()
            .find(|c| c.data_type == DataType::Interval)
        {
            return Err(Error::Unsupported(format!(
                "column {}: MariaDB has no INTERVAL type (its TIME holds no months or days); load it as TEXT (--types {}=TEXT)",
                c.name, c.name
            )));
        }
        let key = schema.key_column();
        let mut cols: Vec<String> = schema
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let collate = if key == Some(i) && c.data_type == DataType::Text {
                    format!(" COLLATE {}", self.key_collation)
                } else {
                    String::new()
                };
                format!(
                    "{} {}{collate}",
                    quote_ident(&c.name),
                    my_type(c.data_type, key == Some(i))
                )
            })
            .collect();
        if let (true, Some(k)) = (index_first, key) {
            cols.push(format!(
                "PRIMARY KEY ({})",
                quote_ident(&schema.columns[k].name)
            ));
        }
        let sql = format!(
            "CREATE TABLE {} ({}) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
            quote_ident(&self.table),
            cols.join(", ")
        );
        self.exec_control(&sql, "creating the table")?;
        self.created = true;
        let key = key.filter(|_| index_first);
        self.existing = Some(ServerTable {
            schema: schema.clone(),
            has_key: key.is_some(),
            unique: key.map_or(Unique::None, Unique::Key),
        });
        Ok(true)
    }

    fn journaled(&mut self) -> Result<HashMap<String, (u64, LoadedFile)>> {
        let rows: Vec<(String, i64, i64, i64, i64, i64, i64)> = self
            .control
            .exec(
                "SELECT path, commit_no, size, mtime_ns, crc32, `rows`, rejected
                   FROM sluice_load_journal WHERE target = ?",
                (&self.table,),
            )
            .map_err(|e| my_error(&e).context("reading the load journal"))?;
        Ok(rows
            .into_iter()
            .map(|(path, commit, size, mtime, crc, n, rejected)| {
                let f = LoadedFile {
                    path: path.clone(),
                    size: size as u64,
                    mtime_ns: mtime as u64,
                    crc32: crc as u32,
                    rows: n as u64,
                    rejected: rejected as u64,
                };
                (path, (commit as u64, f))
            })
            .collect())
    }

    fn sink<'a>(
        &mut self,
        schema: &Schema,
        connections: usize,
        sort_bytes: Option<usize>,
    ) -> Result<Box<dyn ServerSink<'a> + 'a>> {
        let last: Option<i64> = self
            .control
            .exec_first(
                "SELECT coalesce(max(commit_no), 0) FROM sluice_load_parts WHERE target = ?",
                (&self.table,),
            )
            .map_err(|e| my_error(&e).context("reading the load journal"))?;
        let columns = schema
            .columns
            .iter()
            .map(|c| quote_ident(&c.name))
            .collect::<Vec<_>>()
            .join(", ");
        let t = quote_ident(&self.table);
        let per = (INSERT_ROWS).min(60_000 / schema.len().max(1)).max(1);
        let row = format!("({})", vec!["?"; schema.len()].join(", "));
        Ok(Box::new(MySink {
            target: self.target.clone(),
            table: self.table.clone(),
            load_sql: format!(
                "LOAD DATA LOCAL INFILE 'sluice' INTO TABLE {t} CHARACTER SET utf8mb4 \
                 FIELDS TERMINATED BY '\\t' ESCAPED BY '\\\\' LINES TERMINATED BY '\\n' ({columns})"
            ),
            insert: Insert {
                per,
                sql: format!(
                    "INSERT INTO {t} ({columns}) VALUES {}",
                    vec![row.as_str(); per].join(", ")
                ),
                prefix: format!("INSERT INTO {t} ({columns}) VALUES "),
                row,
            },
            inserts: self.inserts,
            share: Sharing::new(
                schema,
                self.existing.as_ref().map_or(Unique::None, |t| t.unique),
                connections,
                sort_bytes,
            ),
            tag: self.tag.clone(),
            next_commit: last.unwrap_or(0) as u64 + 1,
            created: self.created,
            inputs: &[],
            provenance: Vec::new(),
            group: None,
            parts: Vec::new(),
            committed: 0,
        }))
    }

    fn finish(&mut self, schema: &Schema) -> Result<bool> {
        let Some(k) = schema.key_column() else {
            return Ok(false);
        };
        if self.existing.as_ref().is_some_and(|t| t.has_key) {
            return Ok(false);
        }
        let key = schema.columns[k].name.clone();
        let sql = format!(
            "ALTER TABLE {} ADD PRIMARY KEY ({})",
            quote_ident(&self.table),
            quote_ident(&key)
        );
        match self.control.query_drop(&sql) {
            Ok(()) => {
                if let Some(t) = self.existing.as_mut() {
                    t.has_key = true;
                }
                Ok(true)
            }
            Err(e) => {
                let err = my_error(&e);
                if self.created {
                    self.drop_created()?;
                    return Err(err.context(format!(
                        "adding primary key ({key}) to {} after the rows; the table this load created was dropped, nothing is loaded",
                        self.table
                    )));
                }
                Err(err.context(format!(
                    "adding primary key ({key}) to {} after the rows (they are committed; the table has no primary key)",
                    self.table
                )))
            }
        }
    }

    fn drop_created(&mut self) -> Result<()> {
        if !self.created {
            return Ok(());
        }
        // DDL commits on its own: the table goes first; journal rows a
        // failure here would leave are cleared by the next load, which
        // finds no table.
        let drop = format!("DROP TABLE IF EXISTS {}", quote_ident(&self.table));
        self.exec_control(&drop, "dropping the table")?;
        self.created = false;
        self.existing = None;
        for t in ["sluice_load_journal", "sluice_load_parts"] {
            self.control
                .exec_drop(format!("DELETE FROM {t} WHERE target = ?"), (&self.table,))
                .map_err(|e| my_error(&e).context("clearing the journal of the dropped table"))?;
        }
        Ok(())
    }

    fn repaired(&self) -> (u64, u64) {
        (self.repaired_commits, 0)
    }

    fn note(&self) -> Option<String> {
        let unique = self.existing.as_ref().and_then(|t| t.unique.note());
        let inserts = self.inserts.then(|| {
            "the server has local_infile off: rows were sent as multi-row INSERTs (SET GLOBAL local_infile = 1 for LOAD DATA LOCAL INFILE, several times faster)".to_string()
        });
        match (unique, inserts) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        }
    }
}

/// The INSERT statements of a load without LOCAL INFILE.
#[derive(Clone)]
struct Insert {
    /// Rows a full statement takes.
    per: usize,
    /// The full statement, prepared once a connection.
    sql: String,
    /// A shorter last statement: this, then `row` a row.
    prefix: String,
    row: String,
}

/// A connection's share of a group, loaded, in its XA transaction.
struct Part {
    conn: Conn,
    xid: String,
    rows: u64,
    /// Sorted runs sent (0: not in key order).
    runs: u64,
}

/// The MariaDB sink: see the [module documentation](self).
pub struct MySink<'a> {
    target: MyTarget,
    table: String,
    load_sql: String,
    insert: Insert,
    inserts: bool,
    share: Sharing,
    /// See [`MyLoad`].
    tag: String,
    next_commit: u64,
    created: bool,
    inputs: &'a [Input],
    provenance: Vec<Provenance>,
    group: Option<Fanout<Part>>,
    parts: Vec<Part>,
    committed: u64,
}

impl MySink<'_> {
    /// Waits for the connections: their parts, or the first error (the
    /// connections closed, which rolls their XA transactions back).
    fn join(&mut self) -> Result<()> {
        let Some(g) = self.group.take() else {
            return Ok(());
        };
        self.parts = g.join(&self.provenance, self.inputs)?;
        self.share.joined(self.parts.iter().map(|p| p.runs));
        Ok(())
    }
}

impl<'a> ServerSink<'a> for MySink<'a> {
    fn sharing(&self) -> &Sharing {
        &self.share
    }
}

impl<'a> Sink<'a> for MySink<'a> {
    fn begin(&mut self, _opts: &LoadOptions, inputs: &'a [Input]) -> Result<Layout> {
        self.inputs = inputs;
        self.provenance.clear();
        self.parts.clear();
        let (target, tag, commit) = (self.target.clone(), self.tag.clone(), self.next_commit);
        let how = if self.inserts {
            How::Insert(self.insert.clone())
        } else {
            How::LoadData(self.load_sql.clone())
        };
        let plan = self.share.plan();
        self.group = Some(Fanout::start(
            plan.connections,
            "sluice-load",
            plan.routed,
            plan.sort_bytes,
            move |i, queue| load_part(&target, &how, format!("sluice:{tag}:{commit}:{i}"), queue),
        )?);
        Ok(plan.layout)
    }

    fn write(&mut self, rows: Rows<'_>) -> Result<u64> {
        self.provenance.extend_from_slice(rows.provenance);
        let g = self
            .group
            .as_ref()
            .ok_or_else(|| Error::Internal("write outside a group".into()))?;
        let (ok, n) = g.send(rows);
        if !ok {
            self.join()?;
            return Err(Error::Internal(
                "a load connection stopped without an error".into(),
            ));
        }
        Ok(n)
    }

    fn finish(&mut self) -> Result<()> {
        self.join()
    }

    fn commit(&mut self, group: &GroupFiles<'_>) -> Result<Committed> {
        let commit = self.next_commit as i64;
        let parts = self.parts.len() as i64;
        let table = self.table.clone();
        let ctx = |what: &str| format!("{what} (commit {commit} of {table})");
        let mut names = JournalNames::default();
        let files: Vec<Value> = group
            .files
            .iter()
            .zip(self.inputs)
            .filter(|(f, input)| f.unreadable.is_none() && is_journaled(input))
            .flat_map(|(f, input)| {
                [
                    Value::from(table.as_str()),
                    Value::Int(commit),
                    Value::from(names.of(input)),
                    Value::Int(f.size as i64),
                    Value::Int(f.mtime_ns as i64),
                    Value::Int(i64::from(f.crc32)),
                    Value::Int(f.rows as i64),
                    Value::Int(f.rejected as i64),
                ]
            })
            .collect();
        let mut taken = std::mem::take(&mut self.parts);
        // Everything but the XA COMMITs first: a failure here rolls back
        // (closing a connection rolls back its unprepared transaction; a
        // prepared one is rolled back by name).
        let prepared = (|| {
            for (i, p) in taken.iter_mut().enumerate() {
                p.conn.exec_drop(
                    "INSERT INTO sluice_load_parts (target, commit_no, part, parts, `rows`) VALUES (?, ?, ?, ?, ?)",
                    (&table, commit, i as i64, parts, p.rows as i64),
                )?;
                if i == 0 {
                    for chunk in files.chunks(8 * 1000) {
                        let n = chunk.len() / 8;
                        let sql = format!(
                            "INSERT INTO sluice_load_journal (target, commit_no, path, size, mtime_ns, crc32, `rows`, rejected) VALUES {}",
                            vec!["(?, ?, ?, ?, ?, ?, ?, ?)"; n].join(", ")
                        );
                        p.conn.exec_drop(sql, chunk.to_vec())?;
                    }
                }
                p.conn.query_drop(format!("XA END {}", literal(&p.xid)))?;
                p.conn
                    .query_drop(format!("XA PREPARE {}", literal(&p.xid)))?;
            }
            Ok::<(), mysql::Error>(())
        })();
        if let Err(e) = prepared {
            for mut p in taken {
                let _ = p
                    .conn
                    .query_drop(format!("XA ROLLBACK {}", literal(&p.xid)));
            }
            return Err(my_error(&e).context(ctx("journaling the commit")));
        }
        for (done, mut p) in taken.into_iter().enumerate() {
            if let Err(e) = p.conn.query_drop(format!("XA COMMIT {}", literal(&p.xid))) {
                return Err(my_error(&e).context(ctx(&format!(
                    "committing: {done} of {parts} connections committed before this failed; the same command run again commits the rest of the group"
                ))));
            }
            self.share.parts_committed += 1;
            crate::fault_after_part_commit();
        }
        self.next_commit += 1;
        self.committed += 1;
        Ok(Committed {
            created: self.created && self.committed == 1,
            ..Default::default()
        })
    }

    fn abort(&mut self) {
        if let Some(g) = self.group.as_mut() {
            g.stop();
        }
        let _ = self.join();
        self.parts.clear();
    }
}

/// How a connection sends its rows.
enum How {
    /// LOAD DATA LOCAL INFILE with this statement.
    LoadData(String),
    /// INSERTs.
    Insert(Insert),
}

/// One connection's share of a group: connect, `XA START`, load the
/// batches it takes off the queue until it closes.
fn load_part(target: &MyTarget, how: &How, xid: String, mut queue: Queue) -> PartResult<Part> {
    let fail = PartFailure::new;
    let mut conn = target.connect().map_err(|e| fail(e, None))?;
    // The server waits for LOAD DATA's next bytes only net_read_timeout
    // (30 s by default): a slow input, or a run gathered to be sorted,
    // can take longer. A client that dies closes the connection anyway.
    conn.query_drop(format!(
        "SET SESSION net_read_timeout = {NET_READ_TIMEOUT_SECONDS}"
    ))
    .map_err(|e| fail(my_error(&e), None))?;
    conn.query_drop(format!("XA START {}", literal(&xid)))
        .map_err(|e| fail(my_error(&e), None))?;
    let (rows, runs) = match how {
        How::LoadData(sql) => {
            let queue = Arc::new(Mutex::new(queue));
            let rows = load_data(&mut conn, sql, queue.clone())?;
            let runs = queue.lock().map_or(0, |q| q.runs());
            (rows, runs)
        }
        How::Insert(ins) => (insert_rows(&mut conn, ins, &mut queue)?, queue.runs()),
    };
    Ok(Part {
        conn,
        xid,
        rows,
        runs,
    })
}

/// See [`load_part`].
const NET_READ_TIMEOUT_SECONDS: u32 = 3600;

/// Streams the batches as LOAD DATA LOCAL INFILE; a warning, or rows
/// the server did not take, fail the part.
fn load_data(conn: &mut Conn, sql: &str, queue: Arc<Mutex<Queue>>) -> PartResult<u64> {
    let fail = PartFailure::new;
    // Stream row of each batch's first row, and its group row; rows sent.
    let map: Arc<Mutex<crate::fanout::Stream>> = Arc::default();
    let encode_error: Arc<Mutex<Option<Error>>> = Arc::default();
    let (m, ee) = (map.clone(), encode_error.clone());
    conn.set_local_infile_handler(Some(LocalInfileHandler::new(move |_, w| {
        // An error of ours (not the server's) is kept as it is, for the
        // part's failure.
        let keep = |e: Error| {
            let msg = e.to_string();
            if let Ok(mut slot) = ee.lock() {
                *slot = Some(e);
            }
            std::io::Error::other(msg)
        };
        let mut buf = Vec::with_capacity(WRITE_BYTES + WRITE_BYTES / 4);
        let mut queue = queue
            .lock()
            .map_err(|_| std::io::Error::other("the load queue is poisoned"))?;
        while let Some(job) = queue.next().map_err(keep)? {
            if let Ok(mut m) = m.lock() {
                m.push(&job);
            }
            encode_tsv(&job.batch, &mut buf).map_err(keep)?;
            if buf.len() >= WRITE_BYTES {
                w.write_all(&buf)?;
                buf.clear();
            }
        }
        w.write_all(&buf)?;
        Ok(())
    })));
    let result = conn.query_drop(sql);
    conn.set_local_infile_handler(None);
    if let Some(e) = encode_error.lock().ok().and_then(|mut s| s.take()) {
        return Err(fail(e, None));
    }
    result.map_err(|e| {
        let refused = matches!(&e, mysql::Error::MySqlError(m) if matches!(m.code, 1148 | 3948 | 4166));
        let err = my_error(&e);
        if refused {
            fail(
                err.context("the server refused LOAD DATA LOCAL INFILE (SET GLOBAL local_infile = 1 allows it)"),
                None,
            )
        } else {
            fail(err, None)
        }
    })?;
    let (affected, warnings) = (conn.affected_rows(), conn.warnings());
    let stream = map.lock().map(|m| m.clone()).unwrap_or_default();
    let sent = stream.sent;
    if warnings == 0 && affected == sent {
        return Ok(sent);
    }
    // The first warning, and the row it names ("at row 5": the stream's).
    let first: Option<(String, u32, String)> =
        conn.query_first("SHOW WARNINGS LIMIT 1").ok().flatten();
    let (message, row) = match first {
        Some((_, code, message)) => {
            let row = message
                .rfind(" at row ")
                .and_then(|i| message[i + 8..].trim().parse::<u64>().ok())
                .and_then(|line| line.checked_sub(1))
                .and_then(|r| stream.group_row(r));
            (format!("{message} (warning {code})"), row)
        }
        None => (String::new(), None),
    };
    Err(fail(
        Error::Server {
            server: "MariaDB".into(),
            message: format!(
                "LOAD DATA took {affected} of {sent} rows with {warnings} warning{}: {message}",
                if warnings == 1 { "" } else { "s" }
            ),
            sqlstate: None,
        },
        row,
    ))
}

/// Sends the batches as multi-row INSERTs (LOCAL INFILE off).
fn insert_rows(conn: &mut Conn, ins: &Insert, queue: &mut Queue) -> PartResult<u64> {
    let fail = PartFailure::new;
    let full = conn.prep(&ins.sql).map_err(|e| fail(my_error(&e), None))?;
    let mut stream = crate::fanout::Stream::default();
    while let Some(job) = queue.next().map_err(|e| fail(e, None))? {
        let start = stream.sent;
        stream.push(&job);
        let batch = &job.batch;
        let n = batch.num_rows();
        let mut at = 0;
        while at < n {
            let k = ins.per.min(n - at);
            let values = params(batch, at..at + k).map_err(|e| fail(e, None))?;
            let r = if k == ins.per {
                conn.exec_drop(&full, values)
            } else {
                let sql = format!("{}{}", ins.prefix, vec![ins.row.as_str(); k].join(", "));
                conn.exec_drop(sql, values)
            };
            // The statement's first row: the server names no row.
            r.map_err(|e| {
                let row = stream.group_row(start + at as u64);
                match row {
                    Some(row) => PartFailure::of_rows_from(my_error(&e), row),
                    None => fail(my_error(&e), None),
                }
            })?;
            at += k;
        }
    }
    Ok(stream.sent)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{
        BooleanArray, Date32Array, Decimal64Array, Float64Array, Int32Array, StringArray,
        TimestampMicrosecondArray,
    };

    use super::*;

    #[test]
    fn tsv_escapes_and_formats_every_type() {
        let batch = RecordBatch::try_from_iter(vec![
            (
                "i",
                Arc::new(Int32Array::from(vec![Some(-5), None])) as ArrayRef,
            ),
            (
                "d",
                Arc::new(
                    Decimal64Array::from(vec![Some(-5), Some(123_456)])
                        .with_precision_and_scale(12, 3)
                        .unwrap(),
                ),
            ),
            ("f", Arc::new(Float64Array::from(vec![1.5, -0.25]))),
            ("b", Arc::new(BooleanArray::from(vec![true, false]))),
            ("day", Arc::new(Date32Array::from(vec![0, -1]))),
            (
                "ts",
                Arc::new(TimestampMicrosecondArray::from(vec![500_000, -1])),
            ),
            (
                "s",
                Arc::new(StringArray::from(vec![Some("a\tb\\c\nd"), Some("\\N")])),
            ),
        ])
        .unwrap();
        let mut out = Vec::new();
        encode_tsv(&batch, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "-5\t-0.005\t1.5\t1\t1970-01-01\t1970-01-01 00:00:00.500000\ta\\tb\\\\c\\nd\n\
             \\N\t123.456\t-0.25\t0\t1969-12-31\t1969-12-31 23:59:59.999999\t\\\\N\n"
        );
    }

    #[test]
    fn server_types_map_exactly_or_not_at_all() {
        assert_eq!(from_my_type("int", "int(11)", 10, 0), Some(DataType::Int));
        assert_eq!(
            key_collation("10.11.19-MariaDB-0+deb12u1"),
            "utf8mb4_nopad_bin"
        );
        assert_eq!(key_collation("8.0.36"), "utf8mb4_0900_bin");
        assert_eq!(key_collation("5.7.44-log"), "utf8mb4_bin");
        assert_eq!(from_my_type("int", "int(10) unsigned", 10, 0), None);
        assert_eq!(
            from_my_type("tinyint", "tinyint(1)", 3, 0),
            Some(DataType::Boolean)
        );
        assert_eq!(from_my_type("tinyint", "tinyint(4)", 3, 0), None);
        assert_eq!(from_my_type("datetime", "datetime", 0, 0), None);
        assert_eq!(
            from_my_type("datetime", "datetime(6)", 0, 0),
            Some(DataType::Timestamp)
        );
        assert_eq!(
            from_my_type("decimal", "decimal(12,3)", 12, 3),
            Some(DataType::Decimal {
                precision: 12,
                scale: 3
            })
        );
        assert_eq!(from_my_type("decimal", "decimal(30,3)", 30, 3), None);
        assert_eq!(
            from_my_type("varchar", "varchar(20)", 0, 0),
            Some(DataType::Text)
        );
        assert_eq!(my_type(DataType::Text, true), "VARCHAR(768)");
    }

    #[test]
    fn sslmode_is_taken_out_of_the_url() {
        assert_eq!(
            take_sslmode("u@h/db?sslmode=require").unwrap(),
            ("u@h/db".to_string(), true)
        );
        assert_eq!(
            take_sslmode("u@h/db?a=1&sslmode=disable&b=2").unwrap(),
            ("u@h/db?a=1&b=2".to_string(), false)
        );
        assert!(take_sslmode("u@h/db?sslmode=verify-full").is_err());
        assert!(MyTarget::parse("mariadb://u@h/db?sslmode=require", None).is_ok());
    }

    #[test]
    fn urls_need_a_database_and_keep_the_password_out_of_messages() {
        let t = MyTarget::parse("mariadb://ann:secret@127.0.0.1:3307/shop", None).unwrap();
        assert_eq!(t.shown(), "mariadb://ann@127.0.0.1:3307/shop");
        let e = MyTarget::parse("mysql://ann:secret@h", None)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("names no database") && !e.contains("secret"),
            "{e}"
        );
    }
}
