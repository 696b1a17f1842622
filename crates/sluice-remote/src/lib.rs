//! Loads into database servers: sinks of sluice's load pipeline
//! ([`sluice::load::Sink`]) whose end is a table of a PostgreSQL or
//! MariaDB (MySQL) server,
//! so that every front-end feature of a load (every core, inference,
//! exact types, rejects, encodings, compression, JSON, resume) works the
//! same with a server at the end.
//!
//! Useful for: `sluice load --into URL`: what a target URL is
//! ([`Target`]), the server's table checked or created, and the load's
//! exactly-once bookkeeping on the server ([`pg`], [`my`]).
//! Not useful for: reading and parsing (`sluice::load`), or the binary
//! COPY encoding itself (`sluice::pgcopy`).

mod fanout;
pub mod my;
pub mod pg;

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use sluice::batch::{DataType, Schema};
use sluice::load::sink::{Layout, Route, Sink};
use sluice::store::LoadedFile;
use sluice::{Error, Result};

/// Seconds a load waits for another load of the same table to end (the
/// lock of a load that was just killed goes when the server sees its
/// connection close).
pub(crate) const LOCK_WAIT_SECONDS: u32 = 5;

/// Where a load goes: a database server's table, by URL.
pub enum Target {
    /// `postgresql://user[:password]@host[:port]/db[?sslmode=...]`
    Postgres(Box<pg::PgTarget>),
    /// `mariadb://` or `mysql://user[:password]@host[:port]/db`
    MariaDb(my::MyTarget),
}

impl Target {
    /// The target a URL names. The password comes from the URL, else from
    /// `password_file` (its first line), else from `PGPASSWORD`
    /// (PostgreSQL) or `MYSQL_PWD` (MariaDB).
    pub fn parse(url: &str, password_file: Option<&Path>) -> Result<Target> {
        let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        match scheme.as_deref() {
            Some("postgresql" | "postgres") => {
                pg::PgTarget::parse(url, password_file).map(|t| Target::Postgres(Box::new(t)))
            }
            Some("mysql" | "mariadb") => {
                my::MyTarget::parse(url, password_file).map(Target::MariaDb)
            }
            _ => Err(Error::Config(format!(
                "--into {}: expected a URL postgresql://user@host[:port]/database or mariadb://user@host[:port]/database",
                redact(url)
            ))),
        }
    }

    /// The server and database, for messages (no password).
    pub fn shown(&self) -> &str {
        match self {
            Target::Postgres(t) => t.shown(),
            Target::MariaDb(t) => t.shown(),
        }
    }

    /// Connects for a load into `table`: takes the table's load lock,
    /// makes the journal tables, settles a commit a crash interrupted, and
    /// reads the table's columns.
    pub fn connect(&self, table: &str) -> Result<Box<dyn ServerLoad>> {
        Ok(match self {
            Target::Postgres(t) => Box::new(pg::PgLoad::connect(t, table)?),
            Target::MariaDb(t) => Box::new(my::MyLoad::connect(t, table)?),
        })
    }
}

/// A load into one table of a server, from its control connection.
pub trait ServerLoad {
    /// The server and database, for messages (no password).
    fn shown(&self) -> &str;
    /// The table's schema when it exists on the server.
    fn existing_schema(&self) -> Option<&Schema>;
    /// Checks a schema given for the load against the existing table: the
    /// same columns, in order, of the same types.
    fn check_schema(&self, given: &Schema) -> Result<()>;
    /// Creates the table when it does not exist: with its primary key
    /// when `index_first`, else without (see [`ServerLoad::finish`]).
    /// Returns whether it created it.
    fn create_table(&mut self, schema: &Schema, index_first: bool) -> Result<bool>;
    /// The files the table's journal records as loaded: journal name to
    /// (commit, what was recorded), for `sluice::load::resume_inputs`.
    fn journaled(&mut self) -> Result<HashMap<String, (u64, LoadedFile)>>;
    /// The sink of the load's rows over `connections` connections;
    /// `sort_bytes`: when the table has a one-column unique key, each
    /// connection sends its rows in key order, sorted in runs of at most
    /// its share of this many bytes.
    fn sink<'a>(
        &mut self,
        schema: &Schema,
        connections: usize,
        sort_bytes: Option<usize>,
    ) -> Result<Box<dyn ServerSink<'a> + 'a>>;
    /// After the rows: adds the primary key `schema` names when the table
    /// has none. Returns whether it did. A key the rows break fails; a
    /// table this load created is then dropped with its journal rows.
    fn finish(&mut self, schema: &Schema) -> Result<bool>;
    /// Drops the table this load created, with its journal rows.
    fn drop_created(&mut self) -> Result<()>;
    /// Commits a crash had interrupted that this load settled, and the
    /// rows it removed for them.
    fn repaired(&self) -> (u64, u64);
    /// What the summary should say of how the rows were sent.
    fn note(&self) -> Option<String>;
}

/// The sink of a [`ServerLoad`].
pub trait ServerSink<'a>: Sink<'a> {
    /// How the sink shares its rows out, and what it committed.
    fn sharing(&self) -> &Sharing;
    /// Whether any connection committed anything (then a failed load
    /// must not drop the table it created: the next run settles it).
    fn any_committed(&self) -> bool {
        self.sharing().parts_committed > 0
    }
    /// Connections a group uses.
    fn connections(&self) -> usize {
        self.sharing().plan().connections
    }
    /// When the rows went in key order: the most sorted runs a
    /// connection sent in one group (1: each group's share in one run).
    fn sorted_runs(&self) -> Option<u64> {
        let s = self.sharing();
        s.plan().sort_bytes.map(|_| s.sorted_runs)
    }
}

/// What both server sinks keep of how a load's rows are shared out among
/// connections, and of what they committed.
pub struct Sharing {
    pub(crate) schema: Schema,
    pub(crate) unique: Unique,
    /// Connections asked for.
    pub(crate) connections: usize,
    /// See [`ServerLoad::sink`].
    pub(crate) sort_bytes: Option<usize>,
    /// The most sorted runs a connection sent in one group.
    pub(crate) sorted_runs: u64,
    /// Parts committed (of any group).
    pub(crate) parts_committed: u64,
}

impl Sharing {
    pub(crate) fn new(
        schema: &Schema,
        unique: Unique,
        connections: usize,
        sort_bytes: Option<usize>,
    ) -> Sharing {
        Sharing {
            schema: schema.clone(),
            unique,
            connections: connections.max(1),
            sort_bytes,
            sorted_runs: 0,
            parts_committed: 0,
        }
    }

    /// How a group's rows go.
    pub(crate) fn plan(&self) -> Plan {
        self.unique
            .plan(&self.schema, self.connections, self.sort_bytes)
    }

    /// Notes the sorted runs each connection of a group sent.
    pub(crate) fn joined(&mut self, runs: impl Iterator<Item = u64>) {
        self.sorted_runs = self.sorted_runs.max(runs.max().unwrap_or(0));
    }
}

/// The unique indexes of a target table: how its rows may be shared out
/// among connections. Two transactions inserting the same key wait on
/// each other until one commits, and a group's connections commit only
/// together: rows with equal keys must go to the same connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unique {
    /// None: any connection takes any batch.
    None,
    /// One, on this column: rows go to connections by its hash.
    Key(usize),
    /// Others (several columns, several indexes, expressions): one
    /// connection.
    Other,
}

impl Unique {
    /// From the unique indexes found: per index, its columns (a column
    /// named `None` when it is an expression).
    pub(crate) fn of(schema: &Schema, indexes: &[Vec<Option<String>>]) -> Unique {
        match indexes {
            [] => Unique::None,
            [one] if one.len() == 1 => {
                let col = one[0].as_deref().and_then(|c| schema.position(c));
                match col {
                    Some(c) if schema.columns[c].data_type.can_be_key() => Unique::Key(c),
                    _ => Unique::Other,
                }
            }
            _ => Unique::Other,
        }
    }

    /// How a group's rows go, for `connections` asked and `sort_bytes`
    /// (send in key order, runs of this size, when the table has a key).
    pub(crate) fn plan(
        self,
        schema: &Schema,
        connections: usize,
        sort_bytes: Option<usize>,
    ) -> Plan {
        let mut layout = Layout::plain(schema.clone());
        layout.provenance = true;
        let sort_bytes = match self {
            Unique::Key(c) => sort_bytes.inspect(|_| {
                layout.key = Some(c);
                layout.sort_rows = true;
            }),
            _ => None,
        };
        let (connections, routed) = match self {
            Unique::Key(c) if connections > 1 => {
                layout.shards = connections as u32;
                layout.route = Route::Hash(c);
                layout.check_keys = vec![false; connections];
                (connections, true)
            }
            Unique::Other => (1, false),
            _ => (connections, false),
        };
        Plan {
            connections,
            routed,
            sort_bytes,
            layout,
        }
    }

    /// What the summary says of it.
    pub(crate) fn note(self) -> Option<String> {
        (self == Unique::Other).then(|| {
            "the table has a unique index on several columns (or several unique indexes): its rows were loaded over one connection, so that no two transactions wait on each other's keys".to_string()
        })
    }
}

/// How a group's rows are shared out among connections.
pub(crate) struct Plan {
    pub(crate) connections: usize,
    /// Rows go to connections by the key's hash.
    pub(crate) routed: bool,
    /// Each connection sends its rows in key order, in runs of this many
    /// bytes.
    pub(crate) sort_bytes: Option<usize>,
    pub(crate) layout: Layout,
}

/// Memory a load may hold to send its rows in key order, when not given:
/// a quarter of this machine's memory, or of the container's limit when
/// it has a lower one (2 GiB where neither can be read).
pub fn default_sort_memory() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    });
    // cgroup v2, then v1 ("max" or a huge number: no limit).
    let limit = [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .find_map(|f| std::fs::read_to_string(f).ok()?.trim().parse::<u64>().ok());
    let memory = match (total, limit) {
        (Some(t), Some(l)) => Some(t.min(l)),
        (t, l) => t.or(l),
    };
    memory.map_or(2 << 30, |m| m / 4)
}

/// A short name of a database's table for server-wide names (locks, XA
/// transaction ids) that have length limits: the CRC-32 of
/// `database.table`, in hex.
pub(crate) fn table_tag(database: &str, table: &str) -> String {
    format!(
        "{:08x}",
        crc32fast::hash(format!("{database}.{table}").as_bytes())
    )
}

/// Checks `given` against the columns a server table `have`s: names (in
/// any ASCII case) and types, in order; the error names the column.
pub(crate) fn check_schema(
    have: &Schema,
    given: &Schema,
    table: &str,
    shown: &str,
    server_type: impl Fn(DataType) -> String,
) -> Result<()> {
    let mismatch = |what: String| {
        Err(Error::Schema(format!(
            "table {table} on {shown} does not match --schema: {what}"
        )))
    };
    for (i, g) in given.columns.iter().enumerate() {
        let Some(h) = have.columns.get(i) else {
            return mismatch(format!(
                "column {} ({}) is not in the table, which has {} columns: {}",
                i + 1,
                g.name,
                have.len(),
                have.column_names()
            ));
        };
        if !h.name.eq_ignore_ascii_case(&g.name) {
            return mismatch(format!(
                "column {} is {} on the server, {} in --schema",
                i + 1,
                h.name,
                g.name
            ));
        }
        if h.data_type != g.data_type {
            return mismatch(format!(
                "column {} is {} on the server ({}), {} in --schema",
                h.name,
                server_type(h.data_type),
                h.data_type,
                g.data_type
            ));
        }
    }
    if have.len() > given.len() {
        return mismatch(format!(
            "the table has {} columns more: {}",
            have.len() - given.len(),
            have.columns[given.len()..]
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(())
}

/// The process exits after this many part commits
/// (`SLUICE_FAULT=into-exit-after-parts=N`): a crash between the commits
/// of a group's connections, for the tests of the recovery.
pub(crate) fn fault_after_part_commit() {
    static LIMIT: OnceLock<Option<u64>> = OnceLock::new();
    static DONE: AtomicU64 = AtomicU64::new(0);
    let limit = *LIMIT.get_or_init(|| {
        std::env::var("SLUICE_FAULT")
            .ok()?
            .strip_prefix("into-exit-after-parts=")?
            .parse()
            .ok()
    });
    if let Some(n) = limit
        && DONE.fetch_add(1, Ordering::Relaxed) + 1 >= n
    {
        std::process::exit(137);
    }
}

/// A URL with its password replaced by `***`, for messages.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (auth, host) = match rest.rsplit_once('@') {
        Some(x) => x,
        None => return url.to_string(),
    };
    match auth.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_string(),
    }
}

/// The first line of a password file, without its line end.
pub(crate) fn read_password_file(path: &Path) -> Result<String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::Config(format!(
            "--password-file {}: cannot read it: {e}",
            path.display()
        ))
    })?;
    Ok(text.lines().next().unwrap_or("").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_hides_only_the_password() {
        assert_eq!(
            redact("postgresql://ann:secret@db:5432/x"),
            "postgresql://ann:***@db:5432/x"
        );
        assert_eq!(redact("postgresql://ann@db/x"), "postgresql://ann@db/x");
        assert_eq!(redact("not a url"), "not a url");
    }

    #[test]
    fn unknown_schemes_are_clear_errors() {
        let e = Target::parse("ftp://x/y", None).err().unwrap().to_string();
        assert!(e.contains("expected a URL postgresql://"), "{e}");
        assert!(Target::parse("mariadb://u@h/db", None).is_ok());
        assert!(Target::parse("mysql://u@h/db", None).is_ok());
    }
}
