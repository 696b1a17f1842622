//! Loads into a PostgreSQL server: binary COPY over parallel connections,
//! exactly once also across crashes.
//!
//! Useful for: what `sluice load --into postgresql://…` does on the
//! server: the table checked or created, the rows streamed, each commit
//! group published with its journal, an interrupted commit repaired, the
//! primary key added after the rows.
//! Not useful for: the encoding of rows (`sluice::pgcopy`), or reading
//! and parsing (`sluice::load`).
//!
//! # How a load runs
//!
//! A control connection takes a session advisory lock for the target
//! table (one sluice load into a table at a time, as for a local table),
//! creates the journal tables when missing, repairs an interrupted commit
//! (below), reads the journal to skip the files loaded before, and
//! creates a new table. For each commit group of the load, `N` copy
//! connections each open a transaction and run
//! `COPY t FROM STDIN (FORMAT binary)`; the pipeline's batches go to
//! whichever connection is free, which encodes them
//! ([`sluice::pgcopy::encode_batch`]) and sends them in 4 MiB messages.
//! Nothing is visible until the group's commit.
//!
//! # Exactly once
//!
//! At the commit every connection inserts a row into `sluice_load_parts`
//! (part `i` of `N` of commit `c` of the table) in its own transaction,
//! and the first connection also the group's files into
//! `sluice_load_journal` (name, size, modification time, CRC-32, rows, as
//! the local journal). Then the `N` transactions commit one after the
//! other. A group is loaded when all `N` of its parts are committed; the
//! next load skips its files. A crash, a network drop or a server restart
//! between the first and the last of those commits leaves some parts
//! committed: the next load finds the commit with fewer than `N` parts and
//! removes it in one transaction: the rows of each committed part are
//! those whose `xmin` (the inserting transaction) is that of its parts
//! row, inserted by the same transaction. Then the group's files are
//! loaded again. Before the first commit of a group nothing is visible;
//! an error or Ctrl-C rolls every connection back.

use std::collections::HashMap;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::SinkExt;
use sluice::batch::{DataType, Schema};
use sluice::load::sink::{Committed, GroupFiles, Layout, Provenance, Rows, Sink};
use sluice::load::{JournalNames, LoadOptions, is_journaled};
use sluice::source::Input;
use sluice::store::LoadedFile;
use sluice::{Error, Result};
use tokio_postgres::config::SslMode;
use tokio_postgres::{Client, Config, NoTls};

use crate::fanout::{Fanout, PartFailure, PartResult, Queue};
use crate::{LOCK_WAIT_SECONDS, ServerLoad, ServerSink, Sharing, Unique};

/// Bytes of encoded rows sent to the server in one message.
const FLUSH_BYTES: usize = 4 << 20;

/// A PostgreSQL server to load into, from a URL.
#[derive(Clone)]
pub struct PgTarget {
    config: Config,
    /// TLS, when the URL asks for it (`sslmode=require`).
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    /// The URL without its password, for messages.
    shown: String,
}

/// `sslmode=require` as libpq means it: the connection is encrypted, the
/// server's certificate is not checked against an authority (the
/// handshake's signatures still are).
#[derive(Debug)]
struct EncryptOnly(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> std::result::Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The TLS connector of `sslmode=require`.
fn encrypting() -> Result<tokio_postgres_rustls::MakeRustlsConnect> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Internal(format!("TLS configuration: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(EncryptOnly(provider)))
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

impl PgTarget {
    /// `postgresql://user[:password]@host[:port]/database[?options]`; the
    /// password from the URL, else `password_file`, else `PGPASSWORD`.
    pub fn parse(url: &str, password_file: Option<&Path>) -> Result<PgTarget> {
        let mut config = Config::from_str(url).map_err(|e| {
            Error::Config(format!(
                "--into {}: not a PostgreSQL URL ({}): expected postgresql://user@host[:port]/database",
                crate::redact(url),
                chain(&e)
            ))
        })?;
        if config.get_password().is_none() {
            if let Some(f) = password_file {
                config.password(crate::read_password_file(f)?);
            } else if let Ok(p) = std::env::var("PGPASSWORD") {
                config.password(p);
            }
        }
        if config.get_user().is_none() {
            let user = std::env::var("PGUSER")
                .or_else(|_| std::env::var("USER"))
                .unwrap_or_else(|_| "postgres".into());
            config.user(user);
        }
        let tls = match config.get_ssl_mode() {
            SslMode::Require => Some(encrypting()?),
            _ => None,
        };
        config.application_name("sluice load");
        let host = match config.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
            Some(tokio_postgres::config::Host::Unix(p)) => p.display().to_string(),
            None => "localhost".into(),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let shown = format!(
            "postgresql://{}@{host}:{port}/{}",
            config.get_user().unwrap_or(""),
            config.get_dbname().unwrap_or("")
        );
        Ok(PgTarget { config, tls, shown })
    }

    /// The server and database, for messages (no password).
    pub fn shown(&self) -> &str {
        &self.shown
    }
}

/// One connection, with the runtime that drives it: the thread that
/// uses it blocks on each request.
struct Conn {
    rt: tokio::runtime::Runtime,
    client: Client,
}

impl Conn {
    fn open(t: &PgTarget) -> Result<Conn> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Internal(format!("cannot start a runtime: {e}")))?;
        let fail = |e: tokio_postgres::Error| {
            server_error(&e).context(format!("connecting to {}", t.shown))
        };
        let client = match &t.tls {
            Some(tls) => {
                let (client, connection) =
                    rt.block_on(t.config.connect(tls.clone())).map_err(fail)?;
                rt.spawn(async move {
                    let _ = connection.await;
                });
                client
            }
            None => {
                let (client, connection) = rt.block_on(t.config.connect(NoTls)).map_err(fail)?;
                rt.spawn(async move {
                    let _ = connection.await;
                });
                client
            }
        };
        Ok(Conn { rt, client })
    }

    fn exec(&self, sql: &str) -> std::result::Result<(), tokio_postgres::Error> {
        self.rt.block_on(self.client.batch_execute(sql))
    }

    fn query(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> std::result::Result<Vec<tokio_postgres::Row>, tokio_postgres::Error> {
        self.rt.block_on(self.client.query(sql, params))
    }

    fn execute(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> std::result::Result<u64, tokio_postgres::Error> {
        self.rt.block_on(self.client.execute(sql, params))
    }
}

/// An error of the client or the server as a sluice error: the server's
/// message, detail and hint, with its SQLSTATE.
fn server_error(e: &tokio_postgres::Error) -> Error {
    match e.as_db_error() {
        Some(db) => {
            let mut message = db.message().to_string();
            if let Some(d) = db.detail() {
                message.push_str(&format!(" ({d})"));
            }
            if let Some(h) = db.hint() {
                message.push_str(&format!("; hint: {h}"));
            }
            Error::Server {
                server: "PostgreSQL".into(),
                message,
                sqlstate: Some(db.code().code().to_string()),
            }
        }
        None => Error::Server {
            server: "PostgreSQL".into(),
            message: chain(e),
            sqlstate: None,
        },
    }
}

/// An error and its causes, one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(&format!(": {c}"));
        cur = c.source();
    }
    s
}

/// A name quoted as an SQL identifier.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A table's name as `--into` postgresql:// is given it, made the form
/// the load keeps (its journal's `target`): each part not in double
/// quotes a plain identifier (letters, digits, `_`), lower-cased as
/// PostgreSQL folds it; a part in double quotes kept as written.
pub fn table_name(name: &str) -> Result<String> {
    quote_table(name)?;
    let mut out = Vec::new();
    for part in split_table(name) {
        match part.strip_prefix('"') {
            Some(_) => out.push(part.to_string()),
            None => {
                sluice::batch::validate_identifier(part, "table")?;
                out.push(part.to_ascii_lowercase());
            }
        }
    }
    Ok(out.join("."))
}

/// The dot-separated parts of a table's name, a part in double quotes
/// (with its quotes) whole.
fn split_table(name: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut in_quotes) = (0, false);
    for (i, c) in name.char_indices() {
        match c {
            '"' => in_quotes = !in_quotes,
            '.' if !in_quotes => {
                parts.push(&name[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&name[start..]);
    parts
}

/// A table named as `--into` takes it, in SQL: `t` is `"t"`, `public.t`
/// is `"public"."t"` (a schema and a table), a part in double quotes is
/// taken as written (`"my.table"` is one name with a dot, `""` in it a
/// quote). Names keep their case, as every name sluice writes does.
pub fn quote_table(name: &str) -> Result<String> {
    let mut parts: Vec<String> = vec![String::new()];
    let mut quoted_part = vec![false];
    let mut chars = name.chars().peekable();
    let mut in_quotes = false;
    while let Some(c) = chars.next() {
        let part = parts.last_mut().expect("one part at least");
        match c {
            '"' if in_quotes && chars.peek() == Some(&'"') => {
                chars.next();
                part.push('"');
            }
            '"' if in_quotes => in_quotes = false,
            '"' if part.is_empty() => {
                in_quotes = true;
                *quoted_part.last_mut().expect("one part at least") = true;
            }
            '.' if !in_quotes => {
                parts.push(String::new());
                quoted_part.push(false);
            }
            c => part.push(c),
        }
    }
    let bad = |why: &str| {
        Error::Config(format!(
            "table {name:?}: {why} (write TABLE or SCHEMA.TABLE; a name with a dot in double quotes: '\"my.table\"')"
        ))
    };
    if in_quotes {
        return Err(bad("a double quote is not closed"));
    }
    if parts.len() > 2 {
        return Err(bad("more than a schema and a table"));
    }
    if parts
        .iter()
        .zip(&quoted_part)
        .any(|(p, q)| p.is_empty() && !q)
    {
        return Err(bad("an empty name"));
    }
    Ok(parts
        .iter()
        .map(|p| quote_ident(p))
        .collect::<Vec<_>>()
        .join("."))
}

/// The PostgreSQL type of a column of a sluice type.
pub fn pg_type(t: DataType) -> String {
    match t {
        DataType::Boolean => "boolean".into(),
        DataType::Int => "integer".into(),
        DataType::BigInt => "bigint".into(),
        DataType::Double => "double precision".into(),
        DataType::Decimal { precision, scale } => format!("numeric({precision},{scale})"),
        DataType::Date => "date".into(),
        DataType::Time => "time without time zone".into(),
        DataType::Interval => "interval".into(),
        DataType::Timestamp => "timestamp without time zone".into(),
        DataType::TimestampTz => "timestamp with time zone".into(),
        DataType::Text => "text".into(),
    }
}

/// The sluice type that loads a server column of type `t` (as
/// `format_type` prints it) in binary COPY; `None`: none does.
pub fn from_pg_type(t: &str) -> Option<DataType> {
    Some(match t {
        "boolean" => DataType::Boolean,
        "integer" => DataType::Int,
        "bigint" => DataType::BigInt,
        "double precision" => DataType::Double,
        "date" => DataType::Date,
        "time without time zone" => DataType::Time,
        "interval" => DataType::Interval,
        "timestamp without time zone" => DataType::Timestamp,
        "timestamp with time zone" => DataType::TimestampTz,
        "text" => DataType::Text,
        _ if t.starts_with("character varying") || t.starts_with("character(") => DataType::Text,
        _ => {
            let inner = t.strip_prefix("numeric(")?.strip_suffix(')')?;
            let (p, s) = inner.split_once(',')?;
            let (precision, scale) = (p.trim().parse().ok()?, s.trim().parse().ok()?);
            if precision > 18 {
                return None;
            }
            DataType::Decimal { precision, scale }
        }
    })
}

/// The table as the server has it.
struct ServerTable {
    schema: Schema,
    /// The columns with a DEFAULT on the server.
    defaults: Vec<String>,
    /// Whether it has a primary key.
    has_key: bool,
    /// Its unique indexes, for how rows are shared out.
    unique: Unique,
}

/// A load into one table of a PostgreSQL server: the control connection
/// and what it found. See the [module documentation](self).
pub struct PgLoad {
    target: PgTarget,
    control: Conn,
    table: String,
    /// The table's name in SQL: `"t"`, or `"schema"."t"` (see [`quote_table`]).
    quoted: String,
    existing: Option<ServerTable>,
    /// This load created the table (and may drop it again when nothing
    /// was committed to it).
    created: bool,
    /// Rows removed by the repair of an interrupted commit.
    repaired_rows: u64,
    /// Commits repaired.
    repaired_commits: u64,
}

const JOURNAL_DDL: &str = "
CREATE TABLE IF NOT EXISTS sluice_load_journal (
    target text NOT NULL,
    commit_no bigint NOT NULL,
    path text NOT NULL,
    size bigint NOT NULL,
    mtime_ns bigint NOT NULL,
    crc32 bigint NOT NULL,
    rows bigint NOT NULL,
    rejected bigint NOT NULL,
    committed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS sluice_load_journal_target ON sluice_load_journal (target, commit_no);
CREATE TABLE IF NOT EXISTS sluice_load_parts (
    target text NOT NULL,
    commit_no bigint NOT NULL,
    part integer NOT NULL,
    parts integer NOT NULL,
    rows bigint NOT NULL,
    committed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (target, commit_no, part)
);";

impl PgLoad {
    /// Connects, takes the table's load lock, makes the journal tables,
    /// repairs an interrupted commit and reads the table's columns.
    pub fn connect(target: &PgTarget, table: &str) -> Result<PgLoad> {
        let control = Conn::open(target)?;
        let ctx = |what: &str| format!("{what} on {}", target.shown);
        // The lock of a load that was just killed goes when the server
        // sees its connection close: wait a little for it.
        let locked = control
            .exec(&format!("SET lock_timeout = '{LOCK_WAIT_SECONDS}s'"))
            .and_then(|()| {
                // By the name in SQL: `t` and `public.t` may still be one
                // table, but `t` and `"t"` are one lock.
                control.query(
                    "SELECT pg_advisory_lock(hashtext('sluice load into ' || $1))",
                    &[&quote_table(table).unwrap_or_else(|_| table.to_string())],
                )
            })
            .and_then(|_| control.exec("RESET lock_timeout"));
        if let Err(e) = locked {
            if e.as_db_error().map(|d| d.code().code()) == Some("55P03") {
                return Err(Error::Config(format!(
                    "another sluice load into table {table} on {} is running (one load into a table at a time; waited {LOCK_WAIT_SECONDS} s); wait for it, or stop it",
                    target.shown
                )));
            }
            return Err(server_error(&e).context(ctx("taking the load lock")));
        }
        // Two loads into different tables may both create the journal:
        // the loser of that race finds it made.
        if let Err(e) = control.exec(JOURNAL_DDL) {
            let code = e.as_db_error().map(|d| d.code().code().to_string());
            if !matches!(code.as_deref(), Some("23505" | "42P07")) {
                return Err(server_error(&e).context(ctx("creating the journal tables")));
            }
        }
        let mut load = PgLoad {
            target: target.clone(),
            control,
            table: table.to_string(),
            quoted: quote_table(table)?,
            existing: None,
            created: false,
            repaired_rows: 0,
            repaired_commits: 0,
        };
        load.existing = load.read_table()?;
        load.repair()?;
        if load.existing.is_none() {
            load.forget_dropped()?;
        }
        Ok(load)
    }

    /// The table's columns as the server has them (`None`: no such table).
    fn read_table(&self) -> Result<Option<ServerTable>> {
        let rows = self
            .control
            .query(
                "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod),
                        EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid
                                AND i.indisprimary AND a.attnum = ANY (i.indkey)),
                        a.atthasdef
                   FROM pg_attribute a
                  WHERE a.attrelid = to_regclass($1)
                    AND a.attnum > 0 AND NOT a.attisdropped
                  ORDER BY a.attnum",
                &[&self.quoted],
            )
            .map_err(|e| {
                server_error(&e).context(format!("reading the columns of {}", self.table))
            })?;
        if rows.is_empty() {
            return Ok(None);
        }
        let mut columns = Vec::new();
        let mut defaults = Vec::new();
        let mut keys = 0;
        for r in &rows {
            let (name, ty, key): (String, String, bool) = (r.get(0), r.get(1), r.get(2));
            if r.get::<_, bool>(3) {
                defaults.push(name.clone());
            }
            let data_type = from_pg_type(&ty).ok_or_else(|| {
                Error::Schema(format!(
                    "table {} on {}: column {name} is {ty}, which sluice does not load (it loads integer, bigint, numeric(p,s) with p <= 18, double precision, boolean, date, timestamp, text and varchar)",
                    self.table, self.target.shown
                ))
            })?;
            keys += usize::from(key);
            columns.push(sluice::batch::Column {
                name,
                data_type,
                default: None,
                primary_key: key,
            });
        }
        // A key of several columns is the server's to check: the load
        // does not treat it as one.
        if keys > 1 {
            for c in &mut columns {
                c.primary_key = false;
            }
        }
        let schema = Schema::new(columns)
            .map_err(|e| e.context(format!("table {} on {}", self.table, self.target.shown)))?;
        // Per unique index, its columns (NULL: an expression).
        let indexes = self
            .control
            .query(
                "SELECT (SELECT array_agg(a.attname::text ORDER BY k.n)
                           FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
                           LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum)
                   FROM pg_index i
                  WHERE i.indrelid = to_regclass($1) AND i.indisunique",
                &[&self.quoted],
            )
            .map_err(|e| server_error(&e).context(format!("reading the indexes of {}", self.table)))?
            .iter()
            .map(|r| r.get::<_, Vec<Option<String>>>(0))
            .collect::<Vec<_>>();
        let unique = Unique::of(&schema, &indexes);
        Ok(Some(ServerTable {
            schema,
            defaults,
            has_key: keys > 0,
            unique,
        }))
    }

    /// Removes the journal of a table that is not there (dropped since it
    /// was loaded): its files load again into a new one.
    fn forget_dropped(&mut self) -> Result<()> {
        for t in ["sluice_load_parts", "sluice_load_journal"] {
            self.control
                .execute(
                    &format!("DELETE FROM {t} WHERE target = $1"),
                    &[&self.table],
                )
                .map_err(|e| server_error(&e).context("clearing the journal of a dropped table"))?;
        }
        Ok(())
    }

    /// The table's schema when it exists on the server.
    fn existing_schema_(&self) -> Option<&Schema> {
        self.existing.as_ref().map(|t| &t.schema)
    }

    /// Creates the table when it does not exist: with its primary key
    /// when `index_first`, else without (the key is added after the rows:
    /// [`PgLoad::finish`]). Returns whether it created it.
    fn create_table_(&mut self, schema: &Schema, index_first: bool) -> Result<bool> {
        if self.existing.is_some() {
            return Ok(false);
        }
        let mut cols: Vec<String> = schema
            .columns
            .iter()
            .map(|c| format!("{} {}", quote_ident(&c.name), pg_type(c.data_type)))
            .collect();
        if let (true, Some(k)) = (index_first, schema.key_column()) {
            cols.push(format!(
                "PRIMARY KEY ({})",
                quote_ident(&schema.columns[k].name)
            ));
        }
        let sql = format!("CREATE TABLE {} ({})", self.quoted, cols.join(", "));
        self.control
            .exec(&sql)
            .map_err(|e| server_error(&e).context(format!("creating table {}", self.table)))?;
        self.created = true;
        let key = schema.key_column().filter(|_| index_first);
        self.existing = Some(ServerTable {
            schema: schema.clone(),
            defaults: Vec::new(),
            has_key: key.is_some(),
            unique: key.map_or(Unique::None, Unique::Key),
        });
        Ok(true)
    }

    /// Removes every commit of the table with fewer parts committed than
    /// it had: see the [module documentation](self).
    fn repair(&mut self) -> Result<()> {
        let broken = self
            .control
            .query(
                "SELECT commit_no, array_agg(xmin::text) FROM sluice_load_parts
                  WHERE target = $1 GROUP BY commit_no HAVING count(*) < max(parts)",
                &[&self.table],
            )
            .map_err(|e| server_error(&e).context("reading the load journal"))?;
        for r in broken {
            let (commit, xids): (i64, Vec<String>) = (r.get(0), r.get(1));
            let ctx = || format!("removing the interrupted commit {commit} of {}", self.table);
            self.control
                .exec("BEGIN")
                .map_err(|e| server_error(&e).context(ctx()))?;
            let result = (|| {
                let mut removed = 0;
                if self.existing.is_some() {
                    removed = self.control.execute(
                        &format!(
                            "DELETE FROM {} WHERE xmin = ANY ($1::text[]::xid[])",
                            self.quoted
                        ),
                        &[&xids],
                    )?;
                }
                for t in ["sluice_load_parts", "sluice_load_journal"] {
                    self.control.execute(
                        &format!("DELETE FROM {t} WHERE target = $1 AND commit_no = $2"),
                        &[&self.table, &commit],
                    )?;
                }
                self.control.exec("COMMIT")?;
                Ok::<u64, tokio_postgres::Error>(removed)
            })();
            match result {
                Ok(n) => {
                    self.repaired_rows += n;
                    self.repaired_commits += 1;
                }
                Err(e) => {
                    let _ = self.control.exec("ROLLBACK");
                    return Err(server_error(&e).context(ctx()));
                }
            }
        }
        Ok(())
    }

    /// The files the table's journal records as loaded: journal name to
    /// (commit, what was recorded), for [`sluice::load::resume_inputs`].
    fn journaled_(&self) -> Result<HashMap<String, (u64, LoadedFile)>> {
        let rows = self
            .control
            .query(
                "SELECT path, commit_no, size, mtime_ns, crc32, rows, rejected
                   FROM sluice_load_journal WHERE target = $1",
                &[&self.table],
            )
            .map_err(|e| server_error(&e).context("reading the load journal"))?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let path: String = r.get(0);
                let n = |i: usize| r.get::<_, i64>(i) as u64;
                let f = LoadedFile {
                    path: path.clone(),
                    size: n(2),
                    mtime_ns: n(3),
                    crc32: n(4) as u32,
                    rows: n(5),
                    rejected: n(6),
                };
                (path, (n(1), f))
            })
            .collect())
    }

    /// The sink of the load's rows over `connections` copy connections.
    fn sink_<'a>(
        &self,
        schema: &Schema,
        connections: usize,
        sort_bytes: Option<usize>,
    ) -> Result<PgSink<'a>> {
        let last: i64 = self
            .control
            .query(
                "SELECT coalesce(max(commit_no), 0)::int8 FROM sluice_load_parts WHERE target = $1",
                &[&self.table],
            )
            .map_err(|e| server_error(&e).context("reading the load journal"))?
            .first()
            .map(|r| r.get(0))
            .unwrap_or(0);
        let columns = schema
            .columns
            .iter()
            .map(|c| quote_ident(&c.name))
            .collect::<Vec<_>>()
            .join(", ");
        Ok(PgSink {
            target: self.target.clone(),
            table: self.table.clone(),
            quoted: self.quoted.clone(),
            copy_sql: format!(
                "COPY {} ({columns}) FROM STDIN (FORMAT binary)",
                self.quoted
            ),
            names: schema.columns.iter().map(|c| c.name.clone()).collect(),
            defaults: self
                .existing
                .as_ref()
                .map(|t| t.defaults.clone())
                .unwrap_or_default(),
            share: Sharing::new(
                schema,
                self.existing.as_ref().map_or(Unique::None, |t| t.unique),
                connections,
                sort_bytes,
            ),
            next_commit: last as u64 + 1,
            created: self.created,
            inputs: &[],
            provenance: Vec::new(),
            group: None,
            parts: Vec::new(),
            committed: 0,
        })
    }

    /// After the rows: adds the primary key `schema` names when the table
    /// has none (a new table's, by default). Returns whether it did. A
    /// key the rows break fails; a table this load created is then
    /// dropped with its journal, leaving the server as before the load.
    fn finish_(&mut self, schema: &Schema) -> Result<bool> {
        let Some(k) = schema.key_column() else {
            return Ok(false);
        };
        if self.existing.as_ref().is_some_and(|t| t.has_key) {
            return Ok(false);
        }
        let key = &schema.columns[k].name;
        let sql = format!(
            "ALTER TABLE {} ADD PRIMARY KEY ({})",
            self.quoted,
            quote_ident(key)
        );
        match self.control.exec(&sql) {
            Ok(()) => {
                if let Some(t) = self.existing.as_mut() {
                    t.has_key = true;
                }
                Ok(true)
            }
            Err(e) => {
                let err = server_error(&e);
                if self.created {
                    self.drop_created_()?;
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

    /// Drops the table this load created, with its journal rows, in one
    /// transaction: after a failure that leaves nothing loaded.
    fn drop_created_(&mut self) -> Result<()> {
        if !self.created {
            return Ok(());
        }
        let t = &self.quoted;
        let sql = format!(
            "BEGIN; DROP TABLE IF EXISTS {t};
             DELETE FROM sluice_load_journal WHERE target = '{0}';
             DELETE FROM sluice_load_parts WHERE target = '{0}'; COMMIT",
            self.table.replace('\'', "''")
        );
        if let Err(e) = self.control.exec(&sql) {
            let _ = self.control.exec("ROLLBACK");
            return Err(server_error(&e).context(format!("dropping table {}", self.table)));
        }
        self.created = false;
        self.existing = None;
        Ok(())
    }
}

impl ServerLoad for PgLoad {
    fn shown(&self) -> &str {
        &self.target.shown
    }

    fn existing_schema(&self) -> Option<&Schema> {
        self.existing_schema_()
    }

    fn check_schema(&self, given: &Schema) -> Result<()> {
        match &self.existing {
            Some(t) => {
                crate::check_schema(&t.schema, given, &self.table, &self.target.shown, pg_type)
            }
            None => Ok(()),
        }
    }

    fn create_table(&mut self, schema: &Schema, index_first: bool) -> Result<bool> {
        self.create_table_(schema, index_first)
    }

    fn journaled(&mut self) -> Result<HashMap<String, (u64, LoadedFile)>> {
        self.journaled_()
    }

    fn sink<'a>(
        &mut self,
        schema: &Schema,
        connections: usize,
        sort_bytes: Option<usize>,
    ) -> Result<Box<dyn ServerSink<'a> + 'a>> {
        Ok(Box::new(self.sink_(schema, connections, sort_bytes)?))
    }

    fn finish(&mut self, schema: &Schema) -> Result<bool> {
        self.finish_(schema)
    }

    fn drop_created(&mut self) -> Result<()> {
        self.drop_created_()
    }

    fn repaired(&self) -> (u64, u64) {
        (self.repaired_commits, self.repaired_rows)
    }

    fn note(&self) -> Option<String> {
        self.existing.as_ref().and_then(|t| t.unique.note())
    }
}

impl<'a> ServerSink<'a> for PgSink<'a> {
    fn sharing(&self) -> &Sharing {
        &self.share
    }
}

/// A copy connection's share of a group.
struct Part {
    conn: Conn,
    /// Rows the server took.
    rows: u64,
    /// Sorted runs sent (0: not in key order).
    runs: u64,
}

/// The PostgreSQL sink: see the [module documentation](self).
pub struct PgSink<'a> {
    target: PgTarget,
    table: String,
    quoted: String,
    copy_sql: String,
    /// The load's columns, in the order of its batches.
    names: Vec<String>,
    /// The columns with a DEFAULT on the server (see [`fed_columns`]).
    defaults: Vec<String>,
    share: Sharing,
    next_commit: u64,
    created: bool,
    inputs: &'a [Input],
    provenance: Vec<Provenance>,
    group: Option<Fanout<Part>>,
    /// The group's parts, finished, waiting for the commit.
    parts: Vec<Part>,
    /// Groups committed.
    committed: u64,
}

impl PgSink<'_> {
    /// Waits for the copy connections: their parts, or the first error
    /// with every part rolled back.
    fn join(&mut self) -> Result<()> {
        let Some(g) = self.group.take() else {
            return Ok(());
        };
        self.parts = g.join(&self.provenance, self.inputs)?;
        self.share.joined(self.parts.iter().map(|p| p.runs));
        Ok(())
    }

    /// Rolls back every finished part.
    fn rollback(&mut self) {
        for p in self.parts.drain(..) {
            let _ = p.conn.exec("ROLLBACK");
        }
    }
}

impl<'a> Sink<'a> for PgSink<'a> {
    fn begin(&mut self, opts: &LoadOptions, inputs: &'a [Input]) -> Result<Layout> {
        self.inputs = inputs;
        self.provenance.clear();
        self.parts.clear();
        // Columns with a server DEFAULT that no file of the group has are
        // left out of the COPY, so that the server gives them their
        // default, as its own COPY with a column list does.
        let (sql, project) = match fed_columns(opts, inputs, &self.names, &self.defaults)? {
            Some(keep) => {
                let columns = keep
                    .iter()
                    .map(|&i| quote_ident(&self.names[i]))
                    .collect::<Vec<_>>()
                    .join(", ");
                let sql = format!(
                    "COPY {} ({columns}) FROM STDIN (FORMAT binary)",
                    self.quoted
                );
                (sql, Some(std::sync::Arc::new(keep)))
            }
            None => (self.copy_sql.clone(), None),
        };
        // Connections are opened here, in parallel, by their threads.
        let target = self.target.clone();
        let plan = self.share.plan();
        self.group = Some(Fanout::start(
            plan.connections,
            "sluice-copy",
            plan.routed,
            plan.sort_bytes,
            move |_, mut queue| copy_part(&target, &sql, project.as_deref(), &mut queue),
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
                "a copy connection stopped without an error".into(),
            ));
        }
        Ok(n)
    }

    fn finish(&mut self) -> Result<()> {
        self.join()
    }

    fn commit(&mut self, group: &GroupFiles<'_>) -> Result<Committed> {
        let commit = self.next_commit as i64;
        let parts = self.parts.len() as i32;
        let table = self.table.clone();
        let ctx = |what: &str| format!("{what} (commit {commit} of {table})");
        // Everything but the COMMITs first: a failure here rolls back.
        let mut names = JournalNames::default();
        let (mut paths, mut sizes, mut mtimes, mut crcs, mut nrows, mut rejected) = (
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
        );
        for (f, input) in group.files.iter().zip(self.inputs) {
            if f.unreadable.is_some() || !is_journaled(input) {
                continue;
            }
            paths.push(names.of(input));
            sizes.push(f.size as i64);
            mtimes.push(f.mtime_ns as i64);
            crcs.push(i64::from(f.crc32));
            nrows.push(f.rows as i64);
            rejected.push(f.rejected as i64);
        }
        let prepared = (|| {
            for (i, p) in self.parts.iter().enumerate() {
                p.conn.execute(
                    "INSERT INTO sluice_load_parts (target, commit_no, part, parts, rows)
                     VALUES ($1, $2, $3, $4, $5)",
                    &[&self.table, &commit, &(i as i32), &parts, &(p.rows as i64)],
                )?;
                if i == 0 && !paths.is_empty() {
                    p.conn.execute(
                        "INSERT INTO sluice_load_journal
                           (target, commit_no, path, size, mtime_ns, crc32, rows, rejected)
                         SELECT $1, $2, * FROM unnest($3::text[], $4::int8[], $5::int8[],
                                                      $6::int8[], $7::int8[], $8::int8[])",
                        &[
                            &self.table,
                            &commit,
                            &paths,
                            &sizes,
                            &mtimes,
                            &crcs,
                            &nrows,
                            &rejected,
                        ],
                    )?;
                }
            }
            Ok::<(), tokio_postgres::Error>(())
        })();
        if let Err(e) = prepared {
            self.rollback();
            return Err(server_error(&e).context(ctx("journaling the commit")));
        }
        let mut done = 0;
        let mut pending = std::mem::take(&mut self.parts).into_iter();
        while let Some(p) = pending.next() {
            if let Err(e) = p.conn.exec("COMMIT") {
                let err = server_error(&e);
                for q in pending {
                    let _ = q.conn.exec("ROLLBACK");
                }
                if done == 0 {
                    return Err(err.context(ctx("committing")));
                }
                return Err(err.context(ctx(&format!(
                    "committing: {done} of {parts} connections committed before this failed; the same command run again removes their rows and loads the group's files again"
                ))));
            }
            done += 1;
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
        self.rollback();
    }
}

/// One copy connection's share of a group: connect, open a transaction,
/// COPY the batches it takes from the queue until the queue closes, and
/// finish the COPY, leaving the transaction open for the commit.
/// With `--match-by-name`, the columns (by position in `names`) the COPY
/// of a group sends: all but those with a server DEFAULT (`defaults`)
/// that no input's header names; `None` when that is all of them. A
/// column with a DEFAULT that some inputs have and others lack is
/// refused: one COPY cannot give it the default for some rows only.
fn fed_columns(
    opts: &LoadOptions,
    inputs: &[Input],
    names: &[String],
    defaults: &[String],
) -> Result<Option<Vec<usize>>> {
    if !opts.match_by_name
        || defaults.is_empty()
        || !matches!(opts.format, sluice::parse::Format::Delimited)
    {
        return Ok(None);
    }
    let norm = |s: &[u8]| sluice::load::normalize_name(s).to_lowercase();
    let mut fed_by: Vec<Vec<usize>> = vec![Vec::new(); names.len()];
    for (f, input) in inputs.iter().enumerate() {
        let header = first_record(input, opts)?;
        let fields: Vec<String> = header.iter().map(|h| norm(h)).collect();
        for (c, name) in names.iter().enumerate() {
            if fields.contains(&norm(name.as_bytes())) {
                fed_by[c].push(f);
            }
        }
    }
    let mut keep = Vec::new();
    for (c, name) in names.iter().enumerate() {
        if !defaults.iter().any(|d| d == name) || fed_by[c].len() == inputs.len() {
            keep.push(c);
        } else if !fed_by[c].is_empty() {
            let lacking = (0..inputs.len())
                .find(|f| !fed_by[c].contains(f))
                .map(|f| inputs[f].display_name())
                .unwrap_or_default();
            return Err(Error::Config(format!(
                "column {name} has a DEFAULT on the server, which a COPY gives only to a column no file has: {} has it, {lacking} does not; load them separately",
                inputs[fed_by[c][0]].display_name()
            )));
        }
    }
    Ok((keep.len() < names.len()).then_some(keep))
}

/// The first record of a delimited input (its header), after `skip`
/// lines and the blank and comment lines before it.
fn first_record(input: &Input, opts: &LoadOptions) -> Result<Vec<Vec<u8>>> {
    use std::io::Read;
    let (r, _) = input.open_text(None, opts.encoding)?;
    let mut head = Vec::new();
    r.take(1 << 20)
        .read_to_end(&mut head)
        .map_err(|e| input.io_error(e))?;
    let mut data = &head[..];
    for _ in 0..opts.skip {
        match memchr_newline(data) {
            Some(i) => data = &data[i + 1..],
            None => return Ok(Vec::new()),
        }
    }
    let comment = opts.dialect.comment.or(opts.leading_comment);
    loop {
        let blank = data.first().is_some_and(|&b| b == b'\n' || b == b'\r');
        if data.is_empty() || !(blank || comment.is_some_and(|c| data[0] == c)) {
            break;
        }
        match memchr_newline(data) {
            Some(i) => data = &data[i + 1..],
            None => return Ok(Vec::new()),
        }
    }
    Ok(sluice::parse::read_record(data, &opts.dialect, true)
        .ok()
        .flatten()
        .map(|(fields, _, _)| fields)
        .unwrap_or_default())
}

fn memchr_newline(data: &[u8]) -> Option<usize> {
    data.iter().position(|&b| b == b'\n')
}

fn copy_part(
    target: &PgTarget,
    sql: &str,
    project: Option<&Vec<usize>>,
    queue: &mut Queue,
) -> PartResult<Part> {
    // Without a connection nothing can be sent: this one takes no work.
    let conn = Conn::open(target).map_err(|e| PartFailure::new(e, None))?;
    let started = conn
        .exec("BEGIN")
        .and_then(|()| conn.rt.block_on(conn.client.copy_in::<_, Bytes>(sql)));
    let sink = started.map_err(|e| PartFailure::new(server_error(&e), None))?;
    let mut sink = Box::pin(sink);
    let mut stream = crate::fanout::Stream::default();
    let mut buf = Vec::with_capacity(FLUSH_BYTES + FLUSH_BYTES / 4);
    buf.extend_from_slice(sluice::pgcopy::HEADER);
    let result: std::result::Result<u64, CopyError> = (|| {
        while let Some(job) = queue.next().map_err(CopyError::Other)? {
            stream.push(&job);
            match project {
                Some(p) => {
                    let batch = job.batch.project(p).map_err(|e| {
                        CopyError::Other(Error::Internal(format!("projecting a batch: {e}")))
                    })?;
                    sluice::pgcopy::encode_batch(&batch, &mut buf)
                }
                None => sluice::pgcopy::encode_batch(&job.batch, &mut buf),
            }
            .map_err(CopyError::Other)?;
            if buf.len() >= FLUSH_BYTES {
                let full =
                    std::mem::replace(&mut buf, Vec::with_capacity(FLUSH_BYTES + FLUSH_BYTES / 4));
                conn.rt
                    .block_on(sink.send(Bytes::from(full)))
                    .map_err(CopyError::Pg)?;
            }
        }
        buf.extend_from_slice(sluice::pgcopy::TRAILER);
        let last = Bytes::from(std::mem::take(&mut buf));
        conn.rt
            .block_on(async {
                sink.send(last).await?;
                sink.as_mut().finish().await
            })
            .map_err(CopyError::Pg)
    })();
    // A failed COPY is aborted (CopyFail) when its sink is dropped; the
    // connection goes with the failure, which rolls its transaction back.
    drop(sink);
    match result {
        Ok(rows) => Ok(Part {
            conn,
            rows,
            runs: queue.runs(),
        }),
        Err(CopyError::Other(error)) => Err(PartFailure::new(error, None)),
        Err(CopyError::Pg(e)) => {
            // The row the server named ("COPY t, line 5"), as the group's.
            let row = copy_line(&e)
                .and_then(|line| line.checked_sub(1))
                .and_then(|r| stream.group_row(r));
            Err(PartFailure::new(server_error(&e), row))
        }
    }
}

/// How a COPY failed: at the server (or the connection), or before.
enum CopyError {
    Pg(tokio_postgres::Error),
    Other(Error),
}

/// The line of a COPY the server's error context names
/// (`COPY t, line 5[, column c: ...]`): in binary COPY, the row.
fn copy_line(e: &tokio_postgres::Error) -> Option<u64> {
    line_of_context(e.as_db_error()?.where_()?)
}

fn line_of_context(context: &str) -> Option<u64> {
    let rest = &context[context.find(", line ")? + 7..];
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_map_both_ways() {
        for t in [
            DataType::Boolean,
            DataType::Int,
            DataType::BigInt,
            DataType::Double,
            DataType::Decimal {
                precision: 15,
                scale: 2,
            },
            DataType::Date,
            DataType::Time,
            DataType::Interval,
            DataType::Timestamp,
            DataType::TimestampTz,
            DataType::Text,
        ] {
            assert_eq!(from_pg_type(&pg_type(t)), Some(t), "{t}");
        }
        assert_eq!(from_pg_type("character varying(20)"), Some(DataType::Text));
        assert_eq!(from_pg_type("numeric(38,2)"), None);
        assert_eq!(from_pg_type("numeric"), None);
        assert_eq!(from_pg_type("smallint"), None);
        assert_eq!(from_pg_type("time with time zone"), None);
    }

    #[test]
    fn identifiers_are_quoted() {
        assert_eq!(quote_ident("a"), "\"a\"");
        assert_eq!(quote_ident("we\"ird"), "\"we\"\"ird\"");
        assert_eq!(quote_table("t").unwrap(), "\"t\"");
        assert_eq!(quote_table("public.T").unwrap(), "\"public\".\"T\"");
        assert_eq!(quote_table("\"my.table\"").unwrap(), "\"my.table\"");
        assert_eq!(quote_table("s.\"a\"\"b\"").unwrap(), "\"s\".\"a\"\"b\"");
        for bad in ["a.b.c", "a.", ".b", "\"open", "a..b"] {
            assert!(quote_table(bad).is_err(), "{bad}");
        }
        assert_eq!(table_name("Public.Ev").unwrap(), "public.ev");
        assert_eq!(table_name("\"My.Ev\"").unwrap(), "\"My.Ev\"");
        assert_eq!(table_name("s.\"T\"").unwrap(), "s.\"T\"");
        assert!(table_name("s.e-v").is_err());
        assert!(table_name("a.b.c").is_err());
    }

    #[test]
    fn urls_parse_with_the_password_kept_out_of_messages() {
        let t = PgTarget::parse("postgresql://ann:secret@127.0.0.1:5433/shop", None).unwrap();
        assert_eq!(t.shown(), "postgresql://ann@127.0.0.1:5433/shop");
        let t = PgTarget::parse("postgresql://ann:secret@h/db?sslmode=require", None).unwrap();
        assert!(t.tls.is_some());
        assert!(
            PgTarget::parse("postgresql://ann@h/db", None)
                .unwrap()
                .tls
                .is_none()
        );
        let e = PgTarget::parse("postgresql://ann:secret@h:notaport/db", None)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("not a PostgreSQL URL") && !e.contains("secret"),
            "{e}"
        );
    }

    #[test]
    fn copy_lines_are_read_from_the_context() {
        assert_eq!(line_of_context("COPY t, line 5"), Some(5));
        assert_eq!(
            line_of_context("COPY t, line 12, column x: \"abc\""),
            Some(12)
        );
        assert_eq!(line_of_context("SQL statement"), None);
    }
}
