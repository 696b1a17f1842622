//! Catalog queries answered exactly: `information_schema.tables`,
//! `information_schema.columns` and `pg_catalog.pg_type` are tables made
//! from the database's manifest, and the query engine runs the client's
//! query over them — its WHERE, aggregates, DISTINCT, ORDER BY and LIMIT
//! included. A query the engine cannot run over them (a join, a column
//! the table lacks) gets the engine's error, never a canned answer.
//!
//! For: the catalog queries clients send through SQL. Not for: psql's
//! `\dt` and `\d TABLE`, which join `pg_catalog` tables and are
//! recognized in [`super::session`].

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow_array::{ArrayRef, Int32Array, RecordBatch, StringArray};
use sluice::store::Database;

use crate::Failure;
use crate::session::{Answer, pg_type_name};

/// The catalog tables: the name a query writes (lower case), the table in
/// the catalog database, and its columns.
const TABLES: [(&str, &str, &str); 3] = [
    (
        "information_schema.tables",
        "information_schema_tables",
        "table_catalog TEXT, table_schema TEXT, table_name TEXT, table_type TEXT",
    ),
    (
        "information_schema.columns",
        "information_schema_columns",
        "table_catalog TEXT, table_schema TEXT, table_name TEXT, column_name TEXT, \
         ordinal_position INT, data_type TEXT, is_nullable TEXT",
    ),
    ("pg_catalog.pg_type", "pg_type", "oid INT, typname TEXT"),
];

/// The types sluice's results have, as `pg_type` lists them.
const TYPES: [(i32, &str); 11] = [
    (16, "bool"),
    (20, "int8"),
    (21, "int2"),
    (23, "int4"),
    (25, "text"),
    (700, "float4"),
    (701, "float8"),
    (1082, "date"),
    (1114, "timestamp"),
    (1184, "timestamptz"),
    (1700, "numeric"),
];

/// Whether `n` (a normalized statement: lower case, single spaces) reads
/// a catalog table this module answers.
pub fn reads_catalog(n: &str) -> bool {
    if n.contains("information_schema.") {
        return true;
    }
    // pg_type alone: psql's `\d` queries name it beside pg_attribute,
    // pg_class and others, and are answered in `session`.
    let other = n
        .match_indices("pg_catalog.pg_")
        .any(|(i, _)| !n[i..].starts_with("pg_catalog.pg_type"));
    !other
        && (n.contains("pg_catalog.pg_type")
            || n.contains("from pg_type")
            || n.contains("join pg_type"))
}

/// `sql` with the catalog tables' names written as the catalog
/// database's (`information_schema.tables` → `information_schema_tables`),
/// matched without regard to case; `None` when it names a table of
/// `information_schema` that is not there.
fn rewritten(sql: &str) -> Result<String, Failure> {
    let lower = sql.to_ascii_lowercase();
    let mut out = String::with_capacity(sql.len());
    let mut i = 0;
    'scan: while i < sql.len() {
        for (name, table, _) in TABLES {
            if lower[i..].starts_with(name) {
                let end = i + name.len();
                let boundary = lower[end..]
                    .chars()
                    .next()
                    .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
                if boundary {
                    out.push_str(table);
                    i = end;
                    continue 'scan;
                }
            }
        }
        if lower[i..].starts_with("information_schema.") {
            let rest: String = lower[i + "information_schema.".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            return Err(Failure::new(
                "0A000",
                format!(
                    "information_schema.{rest} is not supported: sluice has information_schema.tables and information_schema.columns"
                ),
            ));
        }
        let c = sql[i..].chars().next().unwrap_or(' ');
        out.push(c);
        i += c.len_utf8();
    }
    Ok(out)
}

/// A directory removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn text(v: Vec<String>) -> ArrayRef {
    Arc::new(StringArray::from(v))
}

/// The catalog tables' rows, from the manifest of `db`.
fn batches(db: &Database) -> Vec<(&'static str, &'static str, RecordBatch)> {
    let m = db.manifest();
    let names: Vec<&String> = m.tables.keys().collect();
    let n = names.len();
    let tables = vec![
        text(vec!["sluice".into(); n]),
        text(vec!["public".into(); n]),
        text(names.iter().map(|s| s.to_string()).collect()),
        text(vec!["BASE TABLE".into(); n]),
    ];
    let (mut tn, mut cn, mut pos, mut ty, mut null) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (name, meta) in &m.tables {
        for (i, c) in meta.schema.columns.iter().enumerate() {
            tn.push(name.clone());
            cn.push(c.name.clone());
            pos.push(i as i32 + 1);
            ty.push(pg_type_name(&c.data_type));
            null.push(if c.primary_key { "NO" } else { "YES" }.to_string());
        }
    }
    let k = tn.len();
    let columns = vec![
        text(vec!["sluice".into(); k]),
        text(vec!["public".into(); k]),
        text(tn),
        text(cn),
        Arc::new(Int32Array::from(pos)) as ArrayRef,
        text(ty),
        text(null),
    ];
    let types = vec![
        Arc::new(Int32Array::from(
            TYPES.iter().map(|t| t.0).collect::<Vec<_>>(),
        )) as ArrayRef,
        text(TYPES.iter().map(|t| t.1.to_string()).collect()),
    ];
    let mut out = Vec::new();
    for ((_, table, schema), cols) in TABLES.iter().zip([tables, columns, types]) {
        let arrow = match schema.parse::<sluice::batch::Schema>() {
            Ok(s) => s.arrow_schema(),
            Err(_) => continue,
        };
        if let Ok(b) = RecordBatch::try_new(arrow, cols) {
            out.push((*table, *schema, b));
        }
    }
    out
}

/// Runs `sql`, a query of the catalog tables, over a database of them
/// made from `db`'s manifest: the engine's answer, or its error.
pub fn answer(sql: &str, db: &Database) -> Result<Answer, Failure> {
    static N: AtomicU64 = AtomicU64::new(0);
    let sql = rewritten(sql)?;
    let dir = Scratch(std::env::temp_dir().join(format!(
        "sluice-catalog-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )));
    let internal = |e: sluice::Error| Failure::internal(format!("the catalog: {e}"));
    {
        let mut w = Database::open_writer(&dir.0).map_err(internal)?;
        for (table, schema, batch) in batches(db) {
            let opts = sluice::load::LoadOptions {
                schema: Some(schema.parse().map_err(internal)?),
                ..Default::default()
            };
            sluice::load::load_batches(&mut w, table, [batch], &opts).map_err(internal)?;
        }
    }
    let cat = Database::open(&dir.0).map_err(internal)?;
    let r = sluice::query::query(&cat, &sql, Some(1))?;
    let schema = r.schema.clone();
    let batch = arrow_select::concat::concat_batches(&schema, &r.batches)
        .map_err(|e| Failure::internal(format!("the catalog: {e}")))?;
    Ok(Answer::Rows(batch))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psql_queries_of_other_catalog_tables_are_left_to_the_session() {
        assert!(reads_catalog("select * from information_schema.tables"));
        assert!(reads_catalog(
            "select typname from pg_catalog.pg_type where oid = 23"
        ));
        assert!(reads_catalog("select typname from pg_type"));
        // psql's `\d TABLE` column query names pg_type beside pg_attribute.
        assert!(!reads_catalog(
            "select a.attname, (select c.collname from pg_catalog.pg_collation c, pg_catalog.pg_type t where c.oid = a.attcollation) from pg_catalog.pg_attribute a"
        ));
    }

    #[test]
    fn names_are_rewritten_whatever_their_case() {
        assert_eq!(
            rewritten("SELECT * FROM Information_Schema.TABLES WHERE x = 1").unwrap(),
            "SELECT * FROM information_schema_tables WHERE x = 1"
        );
        assert_eq!(
            rewritten("select typname from pg_catalog.pg_type").unwrap(),
            "select typname from pg_type"
        );
        // Not a prefix of a longer name.
        assert_eq!(
            rewritten("SELECT 1 FROM information_schema.tablesx")
                .unwrap_err()
                .code,
            "0A000"
        );
        let e = rewritten("SELECT * FROM information_schema.views").unwrap_err();
        assert_eq!(e.code, "0A000");
        assert!(
            e.message.contains("information_schema.views"),
            "{}",
            e.message
        );
    }
}
