//! The catalog as tables: `pg_catalog`'s tables (`pg_class`,
//! `pg_attribute`, `pg_namespace`, `pg_type`, `pg_index`, `pg_constraint`,
//! `pg_attrdef`, `pg_description`, `pg_database`, `pg_am`, ...) and
//! `information_schema`'s (`tables`, `columns`, `schemata`,
//! `table_constraints`, `key_column_usage`), made from a database's
//! manifest and queried by the normal engine — joins, subqueries, window
//! functions and all — as drivers and tools query PostgreSQL's before
//! their first query (JDBC's `DatabaseMetaData`, psql, SQLAlchemy).
//!
//! A statement that names a table of either schema (or, unqualified, a
//! table of `pg_catalog`, which PostgreSQL searches first) is planned and
//! run over a small database of these tables, written to a temporary
//! directory for the plan ([`CatalogDb`]): it reads the catalog, not the
//! user's tables, so a join of both is refused (42P01, no such table).
//! The few functions of the catalog that drivers call are written as
//! plain expressions before planning ([`rewrite`]): `format_type`,
//! `pg_table_is_visible`, `pg_get_expr`, `pg_get_constraintdef`,
//! `pg_get_indexdef`, `'name'::regclass`, `'name'::regtype`,
//! `to_regtype`, an oid cast to regclass or regtype and then to text (the
//! name), `current_schemas(b)[i]`, `pg_get_userbyid`, `obj_description`,
//! `col_description`, `current_setting` of the fixed settings, the sizes
//! (`pg_table_size`, ...), `array_to_string` of the always NULL array
//! columns ([`known_array`]), `pg_catalog.` in front of any function and
//! type. A regclass or regtype select item is the name, as PostgreSQL
//! writes those types. A SELECT that reads one of the [`EMPTY`] tables so
//! that it has no rows is written as a SELECT of no rows ([`Empties`]):
//! psql's describe queries read them in expressions of arrays.
//!
//! `pg_index.indkey` (an `int2vector` in PostgreSQL) is the key column's
//! number: every index sluice has is a primary key of one column, so the
//! vector has one element (as have `indclass`, `indoption`,
//! `indcollation`); `information_schema._pg_expandarray(indkey)` (JDBC's
//! `getPrimaryKeys`) is read so, its `.x` the number, its `.n` 1, and
//! `unnest(indkey)` and `generate_subscripts(indkey, 1)` (SQLAlchemy's
//! reflection) are the element and 0.
//!
//! For: what PostgreSQL's catalog says of sluice's tables, exactly. Not
//! for: the catalog's other array columns (`pg_constraint.conkey`: a
//! query that reads one gets 42703; `pg_class.reloptions` is a TEXT
//! column, always NULL), and the rest of PostgreSQL's hundreds of catalog
//! tables (42P01).

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow_array::StringArray;
use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, RecordBatch};
use sqlparser::ast::{self, Expr, Spanned};

use super::sql::at;
use crate::batch::{DataType, Schema};
use crate::error::{Error, Result};
use crate::store::Database;

/// The schemas a catalog table lives in, as PostgreSQL numbers them.
pub const PG_CATALOG: i64 = 11;
pub const PUBLIC: i64 = 2200;
pub const INFORMATION_SCHEMA: i64 = 13_000;

/// The name of the database, as `current_database()` and the catalog say.
pub const DATABASE: &str = "sluice";
/// The owner of everything, as `current_user` and the catalog say.
pub const OWNER: &str = "sluice";

/// The first oid of the user's tables: table `i` (by name) is `16384 + i`,
/// the index of its primary key `16384 + n + i` (n tables).
pub const FIRST_OID: i64 = 16_384;

/// Whether `schema` is a schema of the catalog.
pub fn is_catalog_schema(schema: &str) -> bool {
    schema == "pg_catalog" || schema == "information_schema"
}

/// One value of a catalog row.
#[derive(Clone)]
enum V {
    I(i64),
    T(String),
    B(bool),
    F(f64),
    N,
}

fn t(s: &str) -> V {
    V::T(s.to_string())
}

/// A catalog table: schema, name, oid, columns, rows.
struct Table {
    schema: &'static str,
    name: &'static str,
    oid: i64,
    columns: &'static str,
    rows: Vec<Vec<V>>,
}

/// PostgreSQL's oid, type modifier, length and `format_type` name of a
/// column type.
pub fn pg_type(t: &DataType) -> (i64, i64, i64, String) {
    match t {
        DataType::Boolean => (16, -1, 1, "boolean".into()),
        DataType::Int => (23, -1, 4, "integer".into()),
        DataType::BigInt => (20, -1, 8, "bigint".into()),
        DataType::Double => (701, -1, 8, "double precision".into()),
        DataType::Decimal { precision, scale } => (
            1700,
            ((i64::from(*precision) << 16) | i64::from(*scale)) + 4,
            -1,
            format!("numeric({precision},{scale})"),
        ),
        DataType::Date => (1082, -1, 4, "date".into()),
        DataType::Time => (1083, -1, 8, "time without time zone".into()),
        DataType::Interval => (1186, -1, 16, "interval".into()),
        DataType::Timestamp => (1114, -1, 8, "timestamp without time zone".into()),
        DataType::TimestampTz => (1184, -1, 8, "timestamp with time zone".into()),
        DataType::Text => (25, -1, -1, "text".into()),
    }
}

/// `pg_type`'s rows: oid, name, length, category, format_type name, the
/// oid of its array type.
const TYPES: [(i64, &str, i64, &str, &str, i64); 17] = [
    (16, "bool", 1, "B", "boolean", 1000),
    (18, "char", 1, "Z", "\"char\"", 1002),
    (19, "name", 64, "S", "name", 1003),
    (20, "int8", 8, "N", "bigint", 1016),
    (21, "int2", 2, "N", "smallint", 1005),
    (23, "int4", 4, "N", "integer", 1007),
    (25, "text", -1, "S", "text", 1009),
    (26, "oid", 4, "N", "oid", 1028),
    (700, "float4", 4, "N", "real", 1021),
    (701, "float8", 8, "N", "double precision", 1022),
    (1043, "varchar", -1, "S", "character varying", 1015),
    (1082, "date", 4, "D", "date", 1182),
    (1083, "time", 8, "D", "time without time zone", 1183),
    (1186, "interval", 16, "T", "interval", 1187),
    (
        1114,
        "timestamp",
        8,
        "D",
        "timestamp without time zone",
        1115,
    ),
    (
        1184,
        "timestamptz",
        8,
        "D",
        "timestamp with time zone",
        1185,
    ),
    (1700, "numeric", -1, "N", "numeric", 1231),
];

/// The default btree operator classes of the types a key can have
/// (`pg_opclass`): oid, name, family, type.
const OPCLASSES: [(i64, &str, i64, i64); 9] = [
    (10003, "bool_ops", 424, 16),
    (3122, "date_ops", 434, 1082),
    (3123, "float8_ops", 1970, 701),
    (1978, "int4_ops", 1976, 23),
    (3124, "int8_ops", 1976, 20),
    (3125, "numeric_ops", 1988, 1700),
    (3126, "text_ops", 1994, 25),
    (3127, "timestamptz_ops", 434, 1184),
    (3128, "timestamp_ops", 434, 1114),
];

/// The default btree operator class of a key of type `t`.
fn opclass(t: &DataType) -> i64 {
    let ty = pg_type(t).0;
    OPCLASSES
        .iter()
        .find(|o| o.3 == ty)
        .map(|o| o.0)
        .unwrap_or(0)
}

/// The catalog tables' definitions (rows are filled in by [`tables`]).
const DEFS: [(&str, &str, i64, &str); 31] = [
    (
        "pg_catalog",
        "pg_namespace",
        2615,
        "oid BIGINT, nspname TEXT, nspowner BIGINT, nspacl TEXT",
    ),
    (
        "pg_catalog",
        "pg_class",
        1259,
        "oid BIGINT, relname TEXT, relnamespace BIGINT, reltype BIGINT, reloftype BIGINT, \
         relowner BIGINT, relam BIGINT, relfilenode BIGINT, reltablespace BIGINT, relpages INT, \
         reltuples DOUBLE, relallvisible INT, reltoastrelid BIGINT, relhasindex BOOLEAN, \
         relisshared BOOLEAN, relpersistence TEXT, relkind TEXT, relnatts INT, \
         relchecks INT, relhasrules BOOLEAN, relhastriggers BOOLEAN, relhassubclass BOOLEAN, \
         relrowsecurity BOOLEAN, relforcerowsecurity BOOLEAN, relispopulated BOOLEAN, \
         relreplident TEXT, relispartition BOOLEAN, relrewrite BIGINT, reloptions TEXT, \
         relpartbound TEXT, relacl TEXT",
    ),
    (
        "pg_catalog",
        "pg_attribute",
        1249,
        "attrelid BIGINT, attname TEXT, atttypid BIGINT, attlen INT, attnum INT, \
         atttypmod INT, attndims INT, attnotnull BOOLEAN, atthasdef BOOLEAN, \
         atthasmissing BOOLEAN, attidentity TEXT, attgenerated TEXT, attisdropped BOOLEAN, \
         attislocal BOOLEAN, attinhcount INT, attcollation BIGINT, attstorage TEXT, \
         attcompression TEXT, attstattarget INT, attoptions TEXT, attacl TEXT",
    ),
    (
        "pg_catalog",
        "pg_type",
        1247,
        "oid BIGINT, typname TEXT, typnamespace BIGINT, typowner BIGINT, typlen INT, \
         typbyval BOOLEAN, typtype TEXT, typcategory TEXT, typisdefined BOOLEAN, \
         typdelim TEXT, typrelid BIGINT, typelem BIGINT, typarray BIGINT, \
         typnotnull BOOLEAN, typbasetype BIGINT, typtypmod INT, typndims INT, \
         typcollation BIGINT",
    ),
    (
        "pg_catalog",
        "pg_index",
        2610,
        "indexrelid BIGINT, indrelid BIGINT, indnatts INT, indnkeyatts INT, \
         indisunique BOOLEAN, indnullsnotdistinct BOOLEAN, indisprimary BOOLEAN, \
         indisexclusion BOOLEAN, indimmediate BOOLEAN, indisclustered BOOLEAN, \
         indisvalid BOOLEAN, indcheckxmin BOOLEAN, indisready BOOLEAN, indislive BOOLEAN, \
         indisreplident BOOLEAN, indexprs TEXT, indpred TEXT, indkey INT, \
         indcollation BIGINT, indclass BIGINT, indoption INT",
    ),
    (
        "pg_catalog",
        "pg_opclass",
        2616,
        "oid BIGINT, opcmethod BIGINT, opcname TEXT, opcnamespace BIGINT, opcowner BIGINT, \
         opcfamily BIGINT, opcintype BIGINT, opcdefault BOOLEAN, opckeytype BIGINT",
    ),
    (
        "pg_catalog",
        "pg_constraint",
        2606,
        "oid BIGINT, conname TEXT, connamespace BIGINT, contype TEXT, condeferrable BOOLEAN, \
         condeferred BOOLEAN, convalidated BOOLEAN, conrelid BIGINT, contypid BIGINT, \
         conindid BIGINT, conparentid BIGINT, confrelid BIGINT, confupdtype TEXT, \
         confdeltype TEXT, confmatchtype TEXT, conislocal BOOLEAN, coninhcount INT, \
         connoinherit BOOLEAN",
    ),
    (
        "pg_catalog",
        "pg_attrdef",
        2604,
        "oid BIGINT, adrelid BIGINT, adnum INT, adbin TEXT",
    ),
    (
        "pg_catalog",
        "pg_description",
        2609,
        "objoid BIGINT, classoid BIGINT, objsubid INT, description TEXT",
    ),
    (
        "pg_catalog",
        "pg_database",
        1262,
        "oid BIGINT, datname TEXT, datdba BIGINT, encoding INT, datlocprovider TEXT, \
         datistemplate BOOLEAN, datallowconn BOOLEAN, datconnlimit INT, \
         dattablespace BIGINT, datcollate TEXT, datctype TEXT, daticulocale TEXT, datacl TEXT",
    ),
    (
        "pg_catalog",
        "pg_am",
        2601,
        "oid BIGINT, amname TEXT, amtype TEXT",
    ),
    (
        "pg_catalog",
        "pg_tablespace",
        1213,
        "oid BIGINT, spcname TEXT, spcowner BIGINT",
    ),
    (
        "pg_catalog",
        "pg_inherits",
        2611,
        "inhrelid BIGINT, inhparent BIGINT, inhseqno INT, inhdetachpending BOOLEAN",
    ),
    (
        "pg_catalog",
        "pg_collation",
        3456,
        "oid BIGINT, collname TEXT, collnamespace BIGINT, collowner BIGINT, \
         collprovider TEXT, collisdeterministic BOOLEAN, collencoding INT",
    ),
    (
        "pg_catalog",
        "pg_roles",
        1260,
        "oid BIGINT, rolname TEXT, rolsuper BOOLEAN, rolinherit BOOLEAN, \
         rolcreaterole BOOLEAN, rolcreatedb BOOLEAN, rolcanlogin BOOLEAN, \
         rolreplication BOOLEAN, rolconnlimit INT, rolbypassrls BOOLEAN, \
         rolvaliduntil TIMESTAMPTZ",
    ),
    (
        "pg_catalog",
        "pg_sequence",
        2224,
        "seqrelid BIGINT, seqtypid BIGINT, seqstart BIGINT, seqincrement BIGINT, \
         seqmax BIGINT, seqmin BIGINT, seqcache BIGINT, seqcycle BOOLEAN",
    ),
    // Catalogs of objects sluice has none of (row security policies,
    // extended statistics, publications, triggers, rules, role
    // memberships, functions of its own, extensions): always empty.
    (
        "pg_catalog",
        "pg_auth_members",
        1261,
        "oid BIGINT, roleid BIGINT, member BIGINT, grantor BIGINT, admin_option BOOLEAN",
    ),
    (
        "pg_catalog",
        "pg_proc",
        1255,
        "oid BIGINT, proname TEXT, pronamespace BIGINT, proowner BIGINT, prolang BIGINT, \
         prokind TEXT, prorettype BIGINT, proretset BOOLEAN, pronargs INT, \
         provolatile TEXT, prosrc TEXT, proacl TEXT",
    ),
    (
        "pg_catalog",
        "pg_extension",
        3079,
        "oid BIGINT, extname TEXT, extowner BIGINT, extnamespace BIGINT, \
         extrelocatable BOOLEAN, extversion TEXT, extconfig TEXT, extcondition TEXT",
    ),
    (
        "pg_catalog",
        "pg_policy",
        3256,
        "oid BIGINT, polname TEXT, polrelid BIGINT, polcmd TEXT, polpermissive BOOLEAN, \
         polroles TEXT, polqual TEXT, polwithcheck TEXT",
    ),
    (
        "pg_catalog",
        "pg_statistic_ext",
        3381,
        "oid BIGINT, stxrelid BIGINT, stxname TEXT, stxnamespace BIGINT, stxowner BIGINT, \
         stxstattarget INT, stxkeys TEXT, stxkind TEXT, stxexprs TEXT",
    ),
    (
        "pg_catalog",
        "pg_publication",
        6104,
        "oid BIGINT, pubname TEXT, pubowner BIGINT, puballtables BOOLEAN, \
         pubinsert BOOLEAN, pubupdate BOOLEAN, pubdelete BOOLEAN, pubtruncate BOOLEAN, \
         pubviaroot BOOLEAN",
    ),
    (
        "pg_catalog",
        "pg_publication_namespace",
        6237,
        "oid BIGINT, pnpubid BIGINT, pnnspid BIGINT",
    ),
    (
        "pg_catalog",
        "pg_publication_rel",
        6106,
        "oid BIGINT, prpubid BIGINT, prrelid BIGINT, prqual TEXT, prattrs TEXT",
    ),
    (
        "pg_catalog",
        "pg_trigger",
        2620,
        "oid BIGINT, tgrelid BIGINT, tgparentid BIGINT, tgname TEXT, tgfoid BIGINT, \
         tgtype INT, tgenabled TEXT, tgisinternal BOOLEAN, tgconstrrelid BIGINT, \
         tgconstrindid BIGINT, tgconstraint BIGINT, tgdeferrable BOOLEAN, \
         tginitdeferred BOOLEAN, tgnargs INT",
    ),
    (
        "pg_catalog",
        "pg_rewrite",
        2618,
        "oid BIGINT, rulename TEXT, ev_class BIGINT, ev_type TEXT, ev_enabled TEXT, \
         is_instead BOOLEAN, ev_qual TEXT, ev_action TEXT",
    ),
    (
        "information_schema",
        "schemata",
        13_001,
        "catalog_name TEXT, schema_name TEXT, schema_owner TEXT",
    ),
    (
        "information_schema",
        "tables",
        13_002,
        "table_catalog TEXT, table_schema TEXT, table_name TEXT, table_type TEXT, \
         is_insertable_into TEXT, is_typed TEXT",
    ),
    (
        "information_schema",
        "columns",
        13_003,
        "table_catalog TEXT, table_schema TEXT, table_name TEXT, column_name TEXT, \
         ordinal_position INT, column_default TEXT, is_nullable TEXT, data_type TEXT, \
         character_maximum_length INT, numeric_precision INT, numeric_precision_radix INT, \
         numeric_scale INT, datetime_precision INT, udt_catalog TEXT, udt_schema TEXT, \
         udt_name TEXT, is_identity TEXT, is_generated TEXT, is_updatable TEXT",
    ),
    (
        "information_schema",
        "table_constraints",
        13_004,
        "constraint_catalog TEXT, constraint_schema TEXT, constraint_name TEXT, \
         table_catalog TEXT, table_schema TEXT, table_name TEXT, constraint_type TEXT, \
         is_deferrable TEXT, initially_deferred TEXT, enforced TEXT, nulls_distinct TEXT",
    ),
    (
        "information_schema",
        "key_column_usage",
        13_005,
        "constraint_catalog TEXT, constraint_schema TEXT, constraint_name TEXT, \
         table_catalog TEXT, table_schema TEXT, table_name TEXT, column_name TEXT, \
         ordinal_position INT, position_in_unique_constraint INT",
    ),
];

/// The catalog's tables of `schema`, as a list for an error message.
pub fn table_list(schema: &str) -> String {
    DEFS.iter()
        .filter(|d| d.0 == schema)
        .map(|d| d.1)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The oid of the catalog table `schema.name`, if there is one.
fn catalog_oid(schema: &str, name: &str) -> Option<i64> {
    DEFS.iter()
        .find(|d| d.0 == schema && d.1 == name)
        .map(|d| d.2)
}

/// A relation of the catalog: oid, schema oid, name, kind, columns
/// (name, type, not null, default), the oid of its primary key's index
/// and the key column's number.
struct Rel {
    oid: i64,
    nsp: i64,
    name: String,
    kind: &'static str,
    columns: Vec<(String, DataType, bool, Option<String>)>,
    key: Option<(i64, i32)>,
}

/// The user's tables (in name order) and the catalog's own, as relations.
fn relations(db: &Database) -> Result<Vec<Rel>> {
    let m = db.manifest();
    let n = m.tables.len() as i64;
    let mut out = Vec::new();
    for (i, (name, meta)) in m.tables.iter().enumerate() {
        let key = meta
            .schema
            .columns
            .iter()
            .position(|c| c.primary_key)
            .map(|k| (FIRST_OID + n + i as i64, k as i32 + 1));
        out.push(Rel {
            oid: FIRST_OID + i as i64,
            nsp: PUBLIC,
            name: name.clone(),
            kind: "r",
            columns: meta
                .schema
                .columns
                .iter()
                .map(|c| {
                    (
                        c.name.clone(),
                        c.data_type,
                        c.primary_key,
                        c.default.clone(),
                    )
                })
                .collect(),
            key,
        });
    }
    for (schema, name, oid, columns) in DEFS {
        let s: Schema = columns.parse()?;
        out.push(Rel {
            oid,
            nsp: if schema == "pg_catalog" {
                PG_CATALOG
            } else {
                INFORMATION_SCHEMA
            },
            name: name.to_string(),
            kind: if schema == "pg_catalog" { "r" } else { "v" },
            columns: s
                .columns
                .into_iter()
                .map(|c| (c.name, c.data_type, false, None))
                .collect(),
            key: None,
        });
    }
    Ok(out)
}

/// A column default as PostgreSQL prints it (`pg_get_expr`,
/// `information_schema.columns.column_default`): `0`, `'new'::text`.
fn default_expr(t: &DataType, v: &str) -> String {
    let quoted = format!("'{}'", v.replace('\'', "''"));
    let (_, _, _, name) = pg_type(t);
    match t {
        // A number is written as it is, a negative one quoted and cast
        // (PostgreSQL's deparsing of `DEFAULT -5`).
        DataType::Int | DataType::BigInt | DataType::Double | DataType::Decimal { .. } => {
            if v.starts_with('-') {
                let name = if matches!(t, DataType::Decimal { .. }) {
                    "numeric".into()
                } else {
                    name
                };
                format!("{quoted}::{name}")
            } else {
                v.to_string()
            }
        }
        DataType::Boolean => v.to_ascii_lowercase(),
        _ => format!("{quoted}::{name}"),
    }
}

fn schema_name(nsp: i64) -> &'static str {
    match nsp {
        PG_CATALOG => "pg_catalog",
        INFORMATION_SCHEMA => "information_schema",
        _ => "public",
    }
}

/// A row of `pg_attribute`: column `num` of relation `rel`.
fn attribute(rel: i64, name: &str, ty: &DataType, num: i64, not_null: bool, def: bool) -> Vec<V> {
    let (typ, typmod, len, _) = pg_type(ty);
    let collation = if matches!(ty, DataType::Text) { 100 } else { 0 };
    vec![
        V::I(rel),
        t(name),
        V::I(typ),
        V::I(len),
        V::I(num),
        V::I(typmod),
        V::I(0),
        V::B(not_null),
        V::B(def),
        V::B(false),
        t(""),
        t(""),
        V::B(false),
        V::B(true),
        V::I(0),
        V::I(collation),
        // How PostgreSQL would store a value of the type: plain when of a
        // fixed length, `main` a numeric, `extended` text.
        t(match ty {
            DataType::Text => "x",
            DataType::Decimal { .. } => "m",
            _ => "p",
        }),
        t(""),
        V::I(-1),
        V::N,
        V::N,
    ]
}

/// The catalog tables, with their rows, made from `db`'s manifest.
fn tables(db: &Database) -> Result<Vec<Table>> {
    let rels = relations(db)?;
    let mut rows: BTreeMap<&str, Vec<Vec<V>>> = BTreeMap::new();
    let mut put = |table: &'static str, row: Vec<V>| rows.entry(table).or_default().push(row);
    let owner = V::I(10);
    for (oid, name) in [
        (PG_CATALOG, "pg_catalog"),
        (PUBLIC, "public"),
        (INFORMATION_SCHEMA, "information_schema"),
    ] {
        put(
            "pg_namespace",
            vec![V::I(oid), t(name), owner.clone(), V::N],
        );
        put("schemata", vec![t(DATABASE), t(name), t(OWNER)]);
    }
    for (oid, name, len, cat, _, array) in TYPES {
        let collation = if cat == "S" { 100 } else { 0 };
        put(
            "pg_type",
            vec![
                V::I(oid),
                t(name),
                V::I(PG_CATALOG),
                owner.clone(),
                V::I(len),
                V::B(len > 0 && len <= 8),
                t("b"),
                t(cat),
                V::B(true),
                t(","),
                V::I(0),
                V::I(0),
                V::I(array),
                V::B(false),
                V::I(0),
                V::I(-1),
                V::I(0),
                V::I(collation),
            ],
        );
    }
    let rows_of = |name: &str| -> f64 {
        db.table(name)
            .map(|m| m.segments.iter().map(|s| s.rows).sum::<u64>() as f64)
            .unwrap_or(-1.0)
    };
    for r in &rels {
        let user = r.nsp == PUBLIC;
        let class = |oid: i64, name: &str, kind: &str, natts: usize, tuples: f64, index: bool| {
            let am = match kind {
                "i" => 403,
                "r" => 2,
                _ => 0,
            };
            vec![
                V::I(oid),
                t(name),
                V::I(r.nsp),
                V::I(0),
                V::I(0),
                V::I(10),
                V::I(am),
                V::I(if kind == "v" { 0 } else { oid }),
                V::I(0),
                V::I(0),
                V::F(tuples),
                V::I(0),
                V::I(0),
                V::B(index),
                V::B(false),
                t("p"),
                t(kind),
                V::I(natts as i64),
                V::I(0),
                V::B(false),
                V::B(false),
                V::B(false),
                V::B(false),
                V::B(false),
                V::B(true),
                t(if kind == "i" { "n" } else { "d" }),
                V::B(false),
                V::I(0),
                V::N,
                V::N,
                V::N,
            ]
        };
        let tuples = if user { rows_of(&r.name) } else { -1.0 };
        put(
            "pg_class",
            class(
                r.oid,
                &r.name,
                r.kind,
                r.columns.len(),
                tuples,
                r.key.is_some(),
            ),
        );
        let schema = schema_name(r.nsp);
        if r.kind == "r" || r.kind == "v" {
            put(
                "tables",
                vec![
                    t(DATABASE),
                    t(schema),
                    t(&r.name),
                    t(if r.kind == "v" { "VIEW" } else { "BASE TABLE" }),
                    t(if r.kind == "v" { "NO" } else { "YES" }),
                    t("NO"),
                ],
            );
        }
        for (i, (col, ty, not_null, default)) in r.columns.iter().enumerate() {
            let (typ, _, _, fmt) = pg_type(ty);
            let num = i as i64 + 1;
            put(
                "pg_attribute",
                attribute(r.oid, col, ty, num, *not_null, default.is_some()),
            );
            let def = default.as_ref().map(|d| default_expr(ty, d));
            if let Some(d) = &def {
                put(
                    "pg_attrdef",
                    vec![
                        V::I(2_000_000 + r.oid * 1_000 + num),
                        V::I(r.oid),
                        V::I(num),
                        t(d),
                    ],
                );
            }
            let (precision, radix, scale) = match ty {
                DataType::Int => (V::I(32), V::I(2), V::I(0)),
                DataType::BigInt => (V::I(64), V::I(2), V::I(0)),
                DataType::Double => (V::I(53), V::I(2), V::N),
                DataType::Decimal { precision, scale } => (
                    V::I(i64::from(*precision)),
                    V::I(10),
                    V::I(i64::from(*scale)),
                ),
                _ => (V::N, V::N, V::N),
            };
            let datetime = match ty {
                DataType::Date => V::I(0),
                DataType::Timestamp
                | DataType::TimestampTz
                | DataType::Time
                | DataType::Interval => V::I(6),
                _ => V::N,
            };
            let udt = TYPES.iter().find(|x| x.0 == typ).map(|x| x.1).unwrap_or("");
            let data_type = if let DataType::Decimal { .. } = ty {
                "numeric".to_string()
            } else {
                fmt
            };
            put(
                "columns",
                vec![
                    t(DATABASE),
                    t(schema),
                    t(&r.name),
                    t(col),
                    V::I(num),
                    def.map(V::T).unwrap_or(V::N),
                    t(if *not_null { "NO" } else { "YES" }),
                    t(&data_type),
                    V::N,
                    precision,
                    radix,
                    scale,
                    datetime,
                    t(DATABASE),
                    t("pg_catalog"),
                    t(udt),
                    t("NO"),
                    t("NEVER"),
                    t(if user { "YES" } else { "NO" }),
                ],
            );
        }
        if let Some((index, attnum)) = r.key {
            let iname = format!("{}_pkey", r.name);
            let (col, ty, _, _) = &r.columns[attnum as usize - 1];
            put("pg_class", class(index, &iname, "i", 1, tuples, false));
            put("pg_attribute", attribute(index, col, ty, 1, false, false));
            put(
                "pg_index",
                vec![
                    V::I(index),
                    V::I(r.oid),
                    V::I(1),
                    V::I(1),
                    V::B(true),
                    V::B(false),
                    V::B(true),
                    V::B(false),
                    V::B(true),
                    V::B(false),
                    V::B(true),
                    V::B(false),
                    V::B(true),
                    V::B(true),
                    V::B(false),
                    V::N,
                    V::N,
                    V::I(i64::from(attnum)),
                    V::I(if matches!(ty, DataType::Text) { 100 } else { 0 }),
                    V::I(opclass(ty)),
                    V::I(0),
                ],
            );
            // The constraint's oid: past every index's.
            let con = index + 1_000_000;
            put(
                "pg_constraint",
                vec![
                    V::I(con),
                    t(&iname),
                    V::I(PUBLIC),
                    t("p"),
                    V::B(false),
                    V::B(false),
                    V::B(true),
                    V::I(r.oid),
                    V::I(0),
                    V::I(index),
                    V::I(0),
                    V::I(0),
                    t(" "),
                    t(" "),
                    t(" "),
                    V::B(true),
                    V::I(0),
                    V::B(true),
                ],
            );
            let common = vec![
                t(DATABASE),
                t("public"),
                t(&iname),
                t(DATABASE),
                t("public"),
                t(&r.name),
            ];
            let mut tc = common.clone();
            tc.extend([t("PRIMARY KEY"), t("NO"), t("NO"), t("YES"), V::N]);
            put("table_constraints", tc);
            let mut kcu = common;
            kcu.extend([t(col), V::I(1), V::N]);
            put("key_column_usage", kcu);
        }
    }
    put(
        "pg_database",
        vec![
            V::I(16_383),
            t(DATABASE),
            V::I(10),
            V::I(6),
            t("c"),
            V::B(false),
            V::B(true),
            V::I(-1),
            V::I(1663),
            t("C.UTF-8"),
            t("C.UTF-8"),
            V::N,
            V::N,
        ],
    );
    for (oid, name, family, ty) in OPCLASSES {
        put(
            "pg_opclass",
            vec![
                V::I(oid),
                V::I(403),
                t(name),
                V::I(PG_CATALOG),
                V::I(10),
                V::I(family),
                V::I(ty),
                V::B(true),
                V::I(0),
            ],
        );
    }
    put("pg_am", vec![V::I(2), t("heap"), t("t")]);
    put("pg_am", vec![V::I(403), t("btree"), t("i")]);
    put("pg_tablespace", vec![V::I(1663), t("pg_default"), V::I(10)]);
    put("pg_tablespace", vec![V::I(1664), t("pg_global"), V::I(10)]);
    put(
        "pg_collation",
        vec![
            V::I(100),
            t("default"),
            V::I(PG_CATALOG),
            V::I(10),
            t("d"),
            V::B(true),
            V::I(-1),
        ],
    );
    put(
        "pg_roles",
        vec![
            V::I(10),
            t(OWNER),
            V::B(true),
            V::B(true),
            V::B(false),
            V::B(false),
            V::B(true),
            V::B(false),
            V::I(-1),
            V::B(false),
            V::N,
        ],
    );
    Ok(DEFS
        .iter()
        .map(|&(schema, name, oid, columns)| Table {
            schema,
            name,
            oid,
            columns,
            rows: rows.remove(name).unwrap_or_default(),
        })
        .collect())
}

/// Column `i` of `rows` as an array, each value taken by `pick`
/// (`None`: a value of another type).
fn column<T, A: FromIterator<Option<T>>>(
    rows: &[Vec<V>],
    i: usize,
    pick: impl Fn(&V) -> Option<T>,
) -> Option<A> {
    rows.iter()
        .map(|r| match r.get(i).unwrap_or(&V::N) {
            V::N => Some(None),
            v => pick(v).map(Some),
        })
        .collect()
}

/// The record batch of a table's rows.
fn batch(schema: &Schema, rows: &[Vec<V>]) -> Result<RecordBatch> {
    let mut cols: Vec<ArrayRef> = Vec::new();
    for (i, c) in schema.columns.iter().enumerate() {
        let a: Option<ArrayRef> = match c.data_type {
            DataType::BigInt => column::<_, Int64Array>(rows, i, |v| match v {
                V::I(x) => Some(*x),
                _ => None,
            })
            .map(|a| Arc::new(a) as ArrayRef),
            DataType::Int => column::<_, Int32Array>(rows, i, |v| match v {
                V::I(x) => i32::try_from(*x).ok(),
                _ => None,
            })
            .map(|a| Arc::new(a) as ArrayRef),
            DataType::Double => column::<_, Float64Array>(rows, i, |v| match v {
                V::F(x) => Some(*x),
                _ => None,
            })
            .map(|a| Arc::new(a) as ArrayRef),
            DataType::Boolean => column::<_, BooleanArray>(rows, i, |v| match v {
                V::B(x) => Some(*x),
                _ => None,
            })
            .map(|a| Arc::new(a) as ArrayRef),
            DataType::Text => column::<_, StringArray>(rows, i, |v| match v {
                V::T(x) => Some(x.clone()),
                _ => None,
            })
            .map(|a| Arc::new(a) as ArrayRef),
            // A column of another type holds only NULLs
            // (`pg_roles.rolvaliduntil`).
            t => rows
                .iter()
                .all(|r| matches!(r.get(i), None | Some(V::N)))
                .then(|| arrow_array::new_null_array(&t.arrow_type(), rows.len())),
        };
        cols.push(a.ok_or_else(|| {
            Error::Internal(format!("catalog column {} of a wrong type", c.name))
        })?);
    }
    Ok(RecordBatch::try_new(schema.arrow_schema(), cols)?)
}

/// The name a catalog table has in a [`CatalogDb`]:
/// `pg_catalog__pg_class` (a table name holds no dot).
pub fn stored_name(schema: &str, name: &str) -> String {
    format!("{schema}__{name}")
}

/// The catalog tables of a database, written to a temporary directory
/// (removed when dropped) for the plans that read them.
pub struct CatalogDb {
    db: Database,
    dir: PathBuf,
    /// Oids of the relations by name (`'name'::regclass`), the user's
    /// under their own name and `public.` name, the catalog's under
    /// `schema.name` and, for `pg_catalog`, their own name too.
    oids: BTreeMap<String, i64>,
    /// `pg_get_constraintdef` and `pg_get_indexdef` of each primary key:
    /// (constraint oid, index oid, `PRIMARY KEY (c)`, the index's
    /// `CREATE UNIQUE INDEX …` without and with `pretty`, its column).
    keys: Vec<KeyDef>,
    /// Bytes on disk of each user table: its oid, its segments', its key
    /// index's oid (when keyed) and the index's runs'.
    sizes: Vec<(i64, u64, Option<i64>, u64)>,
}

struct KeyDef {
    constraint: i64,
    index: i64,
    constraint_def: String,
    index_def: String,
    index_def_pretty: String,
    column: String,
}

/// A name as PostgreSQL's `quote_ident` writes it: bare when lower-case
/// letters, digits and underscores (not first a digit), else in quotes.
fn quote_ident(name: &str) -> String {
    let bare = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if bare {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

impl std::fmt::Debug for CatalogDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CatalogDb({})", self.dir.display())
    }
}

impl Drop for CatalogDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl CatalogDb {
    /// The catalog of `db`, as it is now.
    pub fn build(db: &Database) -> Result<Arc<CatalogDb>> {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "sluice-catalog-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let mut oids = BTreeMap::new();
        let mut keys = Vec::new();
        let mut sizes = Vec::new();
        let m = db.manifest();
        let n = m.tables.len() as i64;
        for (i, (name, meta)) in m.tables.iter().enumerate() {
            let keyed = meta.schema.columns.iter().any(|c| c.primary_key);
            sizes.push((
                FIRST_OID + i as i64,
                meta.segments.iter().map(|s| s.bytes).sum(),
                keyed.then_some(FIRST_OID + n + i as i64),
                meta.runs.iter().map(|r| r.bytes).sum(),
            ));
            oids.insert(name.clone(), FIRST_OID + i as i64);
            oids.insert(format!("public.{name}"), FIRST_OID + i as i64);
            let columns = &m.tables[name].schema.columns;
            if let Some(key) = columns.iter().find(|c| c.primary_key) {
                let index = FIRST_OID + n + i as i64;
                oids.insert(format!("{name}_pkey"), index);
                oids.insert(format!("public.{name}_pkey"), index);
                let (table, iname, col) = (
                    quote_ident(name),
                    quote_ident(&format!("{name}_pkey")),
                    quote_ident(&key.name),
                );
                let def =
                    |on: &str| format!("CREATE UNIQUE INDEX {iname} ON {on} USING btree ({col})");
                keys.push(KeyDef {
                    constraint: index + 1_000_000,
                    index,
                    constraint_def: format!("PRIMARY KEY ({col})"),
                    index_def: def(&format!("public.{table}")),
                    index_def_pretty: def(&table),
                    column: col,
                });
            }
        }
        let written = (|| -> Result<Database> {
            let mut w = Database::open_writer(&dir)?;
            for table in tables(db)? {
                let schema: Schema = table.columns.parse()?;
                let b = batch(&schema, &table.rows)?;
                let opts = crate::load::LoadOptions {
                    schema: Some(schema),
                    ..Default::default()
                };
                crate::load::load_batches(
                    &mut w,
                    &stored_name(table.schema, table.name),
                    [b],
                    &opts,
                )?;
                oids.insert(format!("{}.{}", table.schema, table.name), table.oid);
                if table.schema == "pg_catalog" {
                    oids.insert(table.name.to_string(), table.oid);
                }
            }
            drop(w);
            Database::open(&dir)
        })();
        match written {
            Ok(db) => Ok(Arc::new(CatalogDb {
                db,
                dir,
                oids,
                keys,
                sizes,
            })),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                Err(Error::Internal(format!("writing the catalog: {e}")))
            }
        }
    }

    pub fn db(&self) -> &Database {
        &self.db
    }

    /// The oid of a relation named as `'name'::regclass` names it.
    fn regclass(&self, name: &str) -> Option<i64> {
        // A quoted name keeps its case; an unquoted one is folded.
        let n: String = name
            .split('.')
            .map(
                |p| match p.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
                    Some(q) => q.to_string(),
                    None => p.to_ascii_lowercase(),
                },
            )
            .collect::<Vec<_>>()
            .join(".");
        self.oids.get(&n).copied()
    }
}

/// The stored table a FROM item's name means, its parts lower case:
/// `t` and `public.t` → `t`; `pg_catalog.x` and `information_schema.x`
/// → [`stored_name`]; an unqualified name that is a table of
/// `pg_catalog` → that table (PostgreSQL searches `pg_catalog` first).
/// `None`: a schema that is not there.
pub fn resolve(parts: &[String], has: impl Fn(&str) -> bool) -> Option<String> {
    match parts {
        [name] => {
            let cat = stored_name("pg_catalog", name);
            Some(if has(&cat) { cat } else { name.clone() })
        }
        [schema, name] if schema == "public" => Some(name.clone()),
        [schema, name] if is_catalog_schema(schema) => Some(stored_name(schema, name)),
        [db, schema, name] if db == DATABASE => resolve(&[schema.clone(), name.clone()], has),
        _ => None,
    }
}

/// Whether the statement names a table of the catalog (`pg_catalog.x`,
/// `information_schema.x`, or an unqualified name of a `pg_catalog` table).
pub fn references_catalog(stmt: &ast::Statement) -> bool {
    let hit = ast::visit_relations(stmt, |name| {
        let parts: Vec<String> = name
            .0
            .iter()
            .filter_map(|p| p.as_ident())
            .map(|i| i.value.to_ascii_lowercase())
            .collect();
        let catalog = match parts.as_slice() {
            [n] => catalog_oid("pg_catalog", n).is_some(),
            [.., s, _] => is_catalog_schema(s),
            _ => false,
        };
        if catalog {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    hit.is_break()
        || ast::visit_expressions(stmt, |e| match e {
            Expr::Cast { data_type, .. }
                if matches!(data_type, ast::DataType::Regclass) || is_regtype(data_type) =>
            {
                ControlFlow::Break(())
            }
            Expr::Function(f) if is_catalog_function(f) => ControlFlow::Break(()),
            Expr::Identifier(i)
                if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("current_schema") =>
            {
                ControlFlow::Break(())
            }
            _ => ControlFlow::Continue(()),
        })
        .is_break()
}

/// The catalog's functions ([`rewrite`] writes them as expressions).
const FUNCTIONS: [&str; 30] = [
    "pg_table_size",
    "pg_relation_size",
    "pg_indexes_size",
    "pg_total_relation_size",
    "pg_database_size",
    "array_to_string",
    "format_type",
    "to_regtype",
    "pg_get_constraintdef",
    "pg_get_indexdef",
    "pg_get_serial_sequence",
    "pg_collation_is_visible",
    "pg_table_is_visible",
    "pg_get_expr",
    "pg_get_userbyid",
    "obj_description",
    "col_description",
    "shobj_description",
    "pg_encoding_to_char",
    "current_schemas",
    "_pg_expandarray",
    "current_schema",
    "current_database",
    "has_database_privilege",
    "has_schema_privilege",
    "has_table_privilege",
    "pg_function_is_visible",
    "pg_type_is_visible",
    "pg_get_function_result",
    "pg_get_function_arguments",
];

fn is_catalog_function(f: &ast::Function) -> bool {
    let name = f.name.0.last().and_then(|p| p.as_ident());
    name.is_some_and(|n| FUNCTIONS.contains(&n.value.to_ascii_lowercase().as_str()))
        || f.name.0.len() == 2
            && f.name.0[0]
                .as_ident()
                .is_some_and(|s| is_catalog_schema(&s.value.to_ascii_lowercase()))
}

fn lit_str(s: &str) -> Expr {
    Expr::Value(ast::Value::SingleQuotedString(s.to_string()).into())
}

fn lit_int(i: i64) -> Expr {
    Expr::Value(ast::Value::Number(i.to_string(), false).into())
}

fn null_text() -> Expr {
    Expr::Cast {
        kind: ast::CastKind::Cast,
        expr: Box::new(Expr::Value(ast::Value::Null.into())),
        data_type: ast::DataType::Text,
        format: None,
    }
}

/// The arguments of a function call, when plain.
fn args(f: &ast::Function) -> Vec<Expr> {
    match &f.args {
        ast::FunctionArguments::List(l) => l
            .args
            .iter()
            .filter_map(|a| match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn parse_expr(sql: &str) -> Result<Expr> {
    sqlparser::parser::Parser::new(&sqlparser::dialect::GenericDialect {})
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| Error::Internal(format!("the catalog's expression {sql}: {e}")))
}

/// `format_type(type, typmod)` as an expression of its arguments.
fn format_type(ty: &Expr, typmod: &Expr) -> Result<Expr> {
    let mut sql = format!(
        "CASE WHEN ({ty}) IS NULL THEN CAST(NULL AS TEXT) \
         WHEN ({ty}) = 0 THEN '-' \
         WHEN ({ty}) = 1700 AND ({typmod}) >= 4 AND ({typmod}) < 65536 * 1001 THEN 'numeric(' || CAST((({typmod}) - 4) / 65536 AS TEXT) || ',' || CAST((({typmod}) - 4) % 65536 AS TEXT) || ')' \
         WHEN ({ty}) = 1043 AND ({typmod}) > 4 THEN 'character varying(' || CAST(({typmod}) - 4 AS TEXT) || ')' \
         WHEN ({ty}) = 1114 AND ({typmod}) >= 0 THEN 'timestamp(' || CAST(({typmod}) AS TEXT) || ') without time zone' \
         WHEN ({ty}) = 1184 AND ({typmod}) >= 0 THEN 'timestamp(' || CAST(({typmod}) AS TEXT) || ') with time zone'"
    );
    for (oid, _, _, _, name, _) in TYPES {
        sql.push_str(&format!(
            " WHEN ({ty}) = {oid} THEN '{}'",
            name.replace('\'', "''")
        ));
    }
    sql.push_str(" ELSE '???' END");
    parse_expr(&sql)
}

/// The statement with the catalog's functions written as expressions the
/// engine runs, and schema-qualified column names (`pg_catalog.pg_class.relname`)
/// as the table's (`pg_class.relname`).
pub fn rewrite(stmt: &mut ast::Statement, cat: &CatalogDb) -> Result<()> {
    let _ = ast::VisitMut::visit(stmt, &mut Empties);
    // A select item that is a call of one of these functions keeps the
    // function's name as its column's (PostgreSQL's `format_type`).
    struct Names;
    impl ast::VisitorMut for Names {
        type Break = ();
        fn pre_visit_query(&mut self, q: &mut ast::Query) -> ControlFlow<()> {
            if let ast::SetExpr::Select(sel) = q.body.as_mut() {
                for item in &mut sel.projection {
                    // Or one that casts to regclass or regtype, which is
                    // rewritten: PostgreSQL's name for it.
                    let reg = |e: &Expr| {
                        ast::visit_expressions(e, |x| match x {
                            Expr::Cast { data_type, .. }
                                if matches!(data_type, ast::DataType::Regclass)
                                    || is_regtype(data_type) =>
                            {
                                ControlFlow::Break(())
                            }
                            _ => ControlFlow::Continue(()),
                        })
                        .is_break()
                    };
                    if let ast::SelectItem::UnnamedExpr(e) = item
                        && let Some(name) = call_name(e).or_else(|| {
                            reg(e)
                                .then(|| item_name(&ast::SelectItem::UnnamedExpr(e.clone())))
                                .flatten()
                        })
                    {
                        *item = ast::SelectItem::ExprWithAlias {
                            expr: e.clone(),
                            alias: ast::Ident::new(name),
                        };
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    let _ = ast::VisitMut::visit(stmt, &mut Names);
    let mut failure: Option<Error> = None;
    let _ = ast::visit_expressions_mut(stmt, |e| {
        match rewrite_one(e, cat) {
            Ok(Some(new)) => *e = new,
            Ok(None) => {}
            Err(err) => {
                failure = Some(err);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::<()>::Continue(())
    });
    if let Some(e) = failure {
        return Err(e);
    }
    // A select item that is a value cast to regclass or regtype: its
    // name, as PostgreSQL's output of those types writes it; the item is
    // named as the value is (`c.oid::regclass` is "oid").
    struct Outputs<'a> {
        cat: &'a CatalogDb,
        failure: Option<Error>,
    }
    impl ast::VisitorMut for Outputs<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, q: &mut ast::Query) -> ControlFlow<()> {
            if let ast::SetExpr::Select(sel) = q.body.as_mut() {
                for item in &mut sel.projection {
                    let (ast::SelectItem::UnnamedExpr(e)
                    | ast::SelectItem::ExprWithAlias { expr: e, .. }) = item
                    else {
                        continue;
                    };
                    let Some((kind, x)) = marked(e) else {
                        continue;
                    };
                    let name = match &x {
                        Expr::Identifier(i) => Some(i.value.clone()),
                        Expr::CompoundIdentifier(p) => p.last().map(|i| i.value.clone()),
                        _ => None,
                    };
                    match reg_name(self.cat, kind, &x) {
                        Ok(v) => *e = v,
                        Err(err) => {
                            self.failure = Some(err);
                            return ControlFlow::Break(());
                        }
                    }
                    if let (ast::SelectItem::UnnamedExpr(e), Some(name)) = (&*item, name) {
                        *item = ast::SelectItem::ExprWithAlias {
                            expr: e.clone(),
                            alias: ast::Ident::new(name),
                        };
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut outputs = Outputs { cat, failure: None };
    let _ = ast::VisitMut::visit(stmt, &mut outputs);
    if let Some(e) = outputs.failure {
        return Err(e);
    }
    // A value cast to regclass or regtype and not then to text: the oid
    // (a name is looked up; an oid is itself).
    let mut failure = None;
    let _ = ast::visit_expressions_mut(stmt, |e| {
        if let Some((kind, x)) = marked(e) {
            if number(&x).is_some() {
                *e = x;
                return ControlFlow::Continue(());
            }
            let mut sql = format!("CASE CAST(({x}) AS TEXT)");
            for (oid, name) in reg_names(cat, kind) {
                sql.push_str(&format!(" WHEN '{}' THEN {oid}", name.replace('\'', "''")));
            }
            sql.push_str(&format!(" ELSE CAST(CAST(({x}) AS TEXT) AS BIGINT) END"));
            match parse_expr(&sql) {
                Ok(v) => *e = v,
                Err(err) => {
                    failure = Some(err);
                    return ControlFlow::Break(());
                }
            }
        }
        ControlFlow::<()>::Continue(())
    });
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn rewrite_one(e: &mut Expr, cat: &CatalogDb) -> Result<Option<Expr>> {
    match e {
        Expr::CompoundIdentifier(parts)
            if parts.len() == 3 && is_catalog_schema(&parts[0].value.to_ascii_lowercase())
                || parts.len() == 3 && parts[0].value.eq_ignore_ascii_case("public") =>
        {
            parts.remove(0);
            Ok(None)
        }
        Expr::Cast {
            expr, data_type, ..
        } if matches!(data_type, ast::DataType::Regclass) => {
            let mut inner = expr.as_ref();
            while let Expr::Nested(x) | Expr::Cast { expr: x, .. } = inner {
                inner = x;
            }
            let name = match inner {
                Expr::Value(v) => match &v.value {
                    ast::Value::SingleQuotedString(s) => Some(s.clone()),
                    // NULL::regclass is NULL (the server plans a prepared
                    // statement's text parameters so).
                    ast::Value::Null => return Ok(Some(parse_expr("CAST(NULL AS BIGINT)")?)),
                    ast::Value::Number(..) => None,
                    _ => return Err(regclass_refused(e)),
                },
                _ => None,
            };
            // An oid as a regclass: the oid, marked, so that a cast of it
            // to text (the relation's name) can be told (see REGCLASS_OID).
            let Some(name) = name else {
                return Ok(Some(mark(REGCLASS_OID, expr.as_ref().clone())));
            };
            match cat.regclass(&name) {
                Some(oid) => Ok(Some(mark(REGCLASS_OID, lit_int(oid)))),
                None => Err(Error::UndefinedTable(format!(
                    "relation \"{}\" does not exist{}",
                    name.replace('"', ""),
                    at(e.span())
                ))),
            }
        }
        // A type's name as a regtype: its oid (an unknown name is an
        // error, as in PostgreSQL); an oid as a regtype: the oid, marked.
        Expr::Cast {
            expr, data_type, ..
        } if is_regtype(data_type) => {
            let site = at(expr.span());
            let mut inner = expr.as_ref();
            while let Expr::Nested(x) | Expr::Cast { expr: x, .. } = inner {
                inner = x;
            }
            match inner {
                Expr::Value(v) => match &v.value {
                    ast::Value::SingleQuotedString(s) => match type_oid(s) {
                        Some(oid) => Ok(Some(mark(REGTYPE_OID, lit_int(oid)))),
                        None => Err(Error::Argument {
                            state: "42704",
                            message: format!("type \"{s}\" does not exist{site}"),
                        }),
                    },
                    ast::Value::Null => Ok(Some(parse_expr("CAST(NULL AS BIGINT)")?)),
                    _ => Ok(Some(mark(REGTYPE_OID, expr.as_ref().clone()))),
                },
                _ => Ok(Some(mark(REGTYPE_OID, expr.as_ref().clone()))),
            }
        }
        // An oid as a regclass or regtype, as text: the relation's or the
        // type's name (the number when there is none).
        Expr::Cast {
            expr, data_type, ..
        } if matches!(
            data_type,
            ast::DataType::Text | ast::DataType::Varchar(_) | ast::DataType::String(_)
        ) && marked(expr).is_some() =>
        {
            let Some((kind, x)) = marked(expr) else {
                return Ok(None);
            };
            Ok(Some(reg_name(cat, kind, &x)?))
        }
        // PostgreSQL's oid type: a BIGINT here; its smallint (attnum,
        // int2 in PostgreSQL's catalog, is an INT column here): INT.
        Expr::Cast { data_type, .. } if is_oid_type(data_type) => {
            *data_type = ast::DataType::BigInt(None);
            Ok(None)
        }
        Expr::Cast { data_type, .. }
            if matches!(
                data_type,
                ast::DataType::SmallInt(_) | ast::DataType::Int2(_)
            ) =>
        {
            *data_type = ast::DataType::Int(None);
            Ok(None)
        }
        Expr::Cast { data_type, .. } if is_reg_type(data_type) => {
            let what = data_type.to_string();
            Err(Error::Unsupported(format!(
                "{what} is not supported{}",
                at(e.span())
            )))
        }
        // A field of `information_schema._pg_expandarray(indkey)` (the
        // record (x, n) of each element and its place): every index has
        // one key column, so x is `indkey` and n is 1.
        Expr::CompoundFieldAccess { root, access_chain } if matches!(access_chain.as_slice(), [ast::AccessExpr::Dot(Expr::Identifier(f))] if f.value.eq_ignore_ascii_case("x") || f.value.eq_ignore_ascii_case("n")) =>
        {
            let [ast::AccessExpr::Dot(Expr::Identifier(f))] = access_chain.as_slice() else {
                return Ok(None);
            };
            let mut inner = root.as_ref();
            while let Expr::Nested(x) = inner {
                inner = x;
            }
            Ok(Some(if f.value.eq_ignore_ascii_case("n") {
                lit_int(1)
            } else {
                inner.clone()
            }))
        }
        Expr::CompoundFieldAccess { root, access_chain } => {
            // current_schemas(b)[i]: the search path's schemas, a constant.
            let mut root = root.as_ref();
            while let Expr::Nested(x) = root {
                root = x;
            }
            // An element of one of pg_index's vectors (JDBC's
            // getIndexInfo: `tmp.I_INDOPTION[tmp.ORDINAL_POSITION - 1]`):
            // each holds one element, at subscript 0.
            // (`t.col[i]` is the root `t` with `.col` and `[i]`.)
            let vector = match (root, access_chain.as_slice()) {
                (_, [ast::AccessExpr::Subscript(ast::Subscript::Index { index })])
                    if is_index_vector(root) =>
                {
                    Some((root.to_string(), index))
                }
                (
                    Expr::Identifier(t),
                    [
                        ast::AccessExpr::Dot(Expr::Identifier(c)),
                        ast::AccessExpr::Subscript(ast::Subscript::Index { index }),
                    ],
                ) if is_index_vector(&Expr::Identifier(c.clone())) => {
                    Some((format!("{t}.{c}"), index))
                }
                _ => None,
            };
            if let Some((column, index)) = vector {
                return Ok(Some(parse_expr(&format!(
                    "CASE WHEN ({index}) = 0 THEN ({column}) END"
                ))?));
            }
            let Expr::Function(f) = root else {
                return Ok(None);
            };
            if function_name(f).as_deref() != Some("current_schemas") {
                return Ok(None);
            }
            let [ast::AccessExpr::Subscript(ast::Subscript::Index { index })] =
                access_chain.as_slice()
            else {
                return Ok(None);
            };
            let a = args(f);
            let with_implicit = match a.as_slice() {
                [Expr::Value(v)] if matches!(v.value, ast::Value::Null) => {
                    return Ok(Some(null_text()));
                }
                [Expr::Value(v)] => matches!(v.value, ast::Value::Boolean(true)),
                _ => {
                    return Err(Error::Unsupported(format!(
                        "current_schemas() of anything but true or false is not supported{}",
                        at(e.span())
                    )));
                }
            };
            let schemas: &[&str] = if with_implicit {
                &["pg_catalog", "public"]
            } else {
                &["public"]
            };
            let i = match index {
                Expr::Value(v) => match &v.value {
                    ast::Value::Number(n, _) => n.parse::<i64>().ok(),
                    _ => None,
                },
                _ => None,
            };
            let Some(i) = i else {
                return Err(Error::Unsupported(format!(
                    "current_schemas() subscripted by anything but a number is not supported{}",
                    at(e.span())
                )));
            };
            Ok(Some(
                match usize::try_from(i - 1).ok().and_then(|i| schemas.get(i)) {
                    Some(s) => lit_str(s),
                    None => null_text(),
                },
            ))
        }
        // `current_schema` without parentheses (SQL's form).
        Expr::Identifier(i)
            if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("current_schema") =>
        {
            Ok(Some(lit_str("public")))
        }
        Expr::Function(f) => {
            if f.name.0.len() == 2
                && f.name
                    .to_string()
                    .eq_ignore_ascii_case("information_schema._pg_expandarray")
            {
                // One element, as every index's indkey has (see above).
                return match args(f).as_slice() {
                    [k] if k.to_string().to_ascii_lowercase().ends_with("indkey") => {
                        Ok(Some(k.clone()))
                    }
                    _ => Err(Error::Unsupported(format!(
                        "_pg_expandarray of anything but pg_index.indkey is not supported{}",
                        at(e.span())
                    ))),
                };
            }
            // pg_catalog.f(...) is f(...).
            if f.name.0.len() == 2
                && f.name.0[0]
                    .as_ident()
                    .is_some_and(|i| i.value.eq_ignore_ascii_case("pg_catalog"))
            {
                f.name.0.remove(0);
            }
            let Some(name) = function_name(f) else {
                return Ok(None);
            };
            let a = args(f);
            let n = a.len();
            Ok(match (name.as_str(), a.as_slice()) {
                ("format_type", [ty, typmod]) => Some(format_type(ty, typmod)?),
                ("pg_table_is_visible", [oid]) => {
                    let oids: Vec<String> = cat
                        .oids
                        .iter()
                        .filter(|(k, _)| !k.contains('.') || k.starts_with("pg_catalog."))
                        .map(|(_, v)| v.to_string())
                        .collect();
                    Some(parse_expr(&format!(
                        "CASE WHEN ({oid}) IN ({}) THEN true END",
                        oids.join(", ")
                    ))?)
                }
                // pg_attrdef's adbin holds the expression's text.
                ("pg_get_expr", [expr, _]) | ("pg_get_expr", [expr, _, _]) => Some(expr.clone()),
                ("pg_get_userbyid", [oid]) => Some(parse_expr(&format!(
                    "CASE WHEN ({oid}) IS NULL THEN CAST(NULL AS TEXT) WHEN ({oid}) = 10 THEN '{OWNER}' ELSE 'unknown (OID=' || CAST(({oid}) AS TEXT) || ')' END"
                ))?),
                // No object has a description.
                ("obj_description", _) | ("col_description", _) | ("shobj_description", _)
                    if (1..=3).contains(&n) =>
                {
                    Some(null_text())
                }
                ("pg_encoding_to_char", [x]) => Some(parse_expr(&format!(
                    "CASE ({x}) WHEN 6 THEN 'UTF8' WHEN 0 THEN 'SQL_ASCII' ELSE CASE WHEN ({x}) IS NULL THEN CAST(NULL AS TEXT) ELSE '' END END"
                ))?),
                ("current_schema", []) => Some(lit_str("public")),
                // Of each primary key (the only constraints and indexes).
                ("pg_get_constraintdef", [oid]) | ("pg_get_constraintdef", [oid, _]) => {
                    let mut sql = format!("CASE WHEN ({oid}) IS NULL THEN CAST(NULL AS TEXT)");
                    for k in &cat.keys {
                        sql.push_str(&format!(
                            " WHEN ({oid}) = {} THEN '{}'",
                            k.constraint,
                            k.constraint_def.replace('\'', "''")
                        ));
                    }
                    sql.push_str(" ELSE CAST(NULL AS TEXT) END");
                    Some(parse_expr(&sql)?)
                }
                ("pg_get_indexdef", [oid]) => Some(index_def(cat, oid, None, false)?),
                ("pg_get_indexdef", [oid, col, pretty]) => {
                    let pretty = matches!(pretty, Expr::Value(v) if matches!(v.value, ast::Value::Boolean(true)));
                    Some(index_def(cat, oid, Some(col), pretty)?)
                }
                ("to_regtype", [Expr::Value(v)]) => match &v.value {
                    ast::Value::SingleQuotedString(name) => Some(match type_oid(name) {
                        Some(oid) => mark(REGTYPE_OID, lit_int(oid)),
                        None => parse_expr("CAST(NULL AS BIGINT)")?,
                    }),
                    ast::Value::Null => Some(parse_expr("CAST(NULL AS BIGINT)")?),
                    _ => None,
                },
                // No column of sluice's is serial or an identity.
                ("pg_get_serial_sequence", [_, _]) => Some(null_text()),
                // Every collation is in pg_catalog, which is searched.
                ("pg_collation_is_visible", [x]) => Some(parse_expr(&format!(
                    "CASE WHEN ({x}) IS NOT NULL THEN true END"
                ))?),
                // The vectors of pg_index hold one element each (every
                // index has one key column): unnest is the element, and
                // its subscript 0 (an int2vector's or oidvector's lower
                // bound).
                ("unnest", [v]) if is_index_vector(v) => Some(v.clone()),
                // (A dimension but 1 has no subscripts: NULL here, where
                // PostgreSQL gives no row; drivers ask for dimension 1.)
                ("generate_subscripts", [v, d]) if is_index_vector(v) => Some(if is_one(d) {
                    lit_int(0)
                } else {
                    parse_expr(&format!("CASE WHEN ({d}) = 1 THEN 0 END"))?
                }),
                // The settings that are the same in every session (the
                // server answers SHOW of the others).
                ("current_setting", [x]) => {
                    let mut sql = format!("CASE ({x})");
                    for (name, value) in FIXED_SETTINGS {
                        sql.push_str(&format!(" WHEN '{name}' THEN '{value}'"));
                    }
                    sql.push_str(" END");
                    let known = matches!(x, Expr::Value(v) if matches!(&v.value, ast::Value::SingleQuotedString(n) if FIXED_SETTINGS.iter().any(|s| s.0 == n)));
                    if matches!(x, Expr::Value(_)) && !known {
                        return Err(Error::Unsupported(format!(
                            "current_setting({x}) in a query of the catalog is not supported (SHOW answers it){}",
                            at(e.span())
                        )));
                    }
                    Some(parse_expr(&sql)?)
                }
                ("current_database", []) => Some(lit_str(DATABASE)),
                // A read-only server: whoever connects may read everything.
                ("has_database_privilege" | "has_schema_privilege" | "has_table_privilege", _)
                    if (2..=3).contains(&n) =>
                {
                    Some(parse_expr("true")?)
                }
                // Every type and function is in pg_catalog, which is
                // searched (sluice has no functions of its own: pg_proc
                // is empty).
                ("pg_function_is_visible" | "pg_type_is_visible", [x]) => Some(parse_expr(
                    &format!("CASE WHEN ({x}) IS NOT NULL THEN true END"),
                )?),
                ("pg_get_function_result" | "pg_get_function_arguments", [_]) => Some(null_text()),
                // Bytes on disk: a table's segments, an index's runs (the
                // catalog's own tables are made for the query: 0).
                ("pg_table_size" | "pg_relation_size", [oid])
                | ("pg_relation_size", [oid, _])
                | ("pg_indexes_size" | "pg_total_relation_size", [oid]) => {
                    let mut sql = format!("CASE CAST(({oid}) AS BIGINT)");
                    for (table, segments, index, runs) in &cat.sizes {
                        let of_table = match name.as_str() {
                            "pg_indexes_size" => *runs,
                            "pg_total_relation_size" => segments + runs,
                            _ => *segments,
                        };
                        sql.push_str(&format!(" WHEN {table} THEN {of_table}"));
                        if let Some(index) = index
                            && name != "pg_indexes_size"
                        {
                            sql.push_str(&format!(" WHEN {index} THEN {runs}"));
                        }
                    }
                    let catalog: Vec<String> = cat
                        .oids
                        .iter()
                        .filter(|(k, _)| k.contains('.') && !k.starts_with("public."))
                        .map(|(_, v)| v.to_string())
                        .collect();
                    sql.push_str(&format!(
                        " WHEN {} THEN 0 ELSE CAST(NULL AS BIGINT) END",
                        catalog.join(" THEN 0 WHEN ")
                    ));
                    Some(parse_expr(&sql)?)
                }
                ("pg_database_size", [_]) => {
                    let all: u64 = cat.sizes.iter().map(|s| s.1 + s.3).sum();
                    Some(lit_int(all as i64))
                }
                // The catalog's array columns are always NULL (see
                // [`known_array`]).
                ("array_to_string", [a, _]) | ("array_to_string", [a, _, _]) => {
                    match known_array(a) {
                        Some(Known::Null) => Some(null_text()),
                        Some(Known::Empty) => Some(lit_str("")),
                        None => {
                            return Err(Error::Unsupported(format!(
                                "array_to_string of anything but the catalog's array columns is not supported{}",
                                at(e.span())
                            )));
                        }
                    }
                }
                _ => None,
            })
        }
        _ => Ok(None),
    }
}

/// The name of the relation or type (`kind`) whose oid is `x`, as
/// regclass and regtype output write it (the number when there is none).
fn reg_name(cat: &CatalogDb, kind: &str, x: &Expr) -> Result<Expr> {
    // An oid known now: its name.
    if let Some(n) = number(x) {
        return Ok(lit_str(
            &reg_names(cat, kind)
                .into_iter()
                .find(|r| r.0 == n)
                .map(|r| r.1)
                .unwrap_or_else(|| n.to_string()),
        ));
    }
    // The value as text is a name or an oid (regclass and regtype read
    // both).
    let mut sql = format!("CASE CAST(({x}) AS TEXT)");
    for (oid, name) in reg_names(cat, kind) {
        sql.push_str(&format!(
            " WHEN '{oid}' THEN '{0}' WHEN '{0}' THEN '{0}'",
            name.replace('\'', "''")
        ));
    }
    sql.push_str(&format!(" ELSE CAST(({x}) AS TEXT) END"));
    parse_expr(&sql)
}

/// The catalog's tables that never have a row: sluice has no row security
/// policies, extended statistics, publications, triggers, rules, role
/// memberships, functions of its own (PostgreSQL's built-in ones are not
/// listed) or extensions.
const EMPTY: [&str; 10] = [
    "pg_auth_members",
    "pg_proc",
    "pg_extension",
    "pg_policy",
    "pg_statistic_ext",
    "pg_publication",
    "pg_publication_namespace",
    "pg_publication_rel",
    "pg_trigger",
    "pg_rewrite",
];

/// A query whose every SELECT reads one of the [`EMPTY`] tables where an
/// empty table empties the SELECT (first in FROM or inner-joined, with no
/// right or full join, no aggregate, no GROUP BY): a query of no rows,
/// its columns named as PostgreSQL names them (typed TEXT). psql asks
/// such tables about each table it describes, in expressions of arrays
/// that sluice has no type for; over no rows, none is computed, so none
/// is bound either (an expression over these tables that PostgreSQL
/// would refuse is not refused here).
struct Empties;

impl ast::VisitorMut for Empties {
    type Break = ();
    fn pre_visit_query(&mut self, q: &mut ast::Query) -> ControlFlow<()> {
        // A select item that is a subquery keeps the name of the
        // subquery's item, which may be rewritten below.
        if let ast::SetExpr::Select(s) = q.body.as_mut() {
            for item in &mut s.projection {
                if let ast::SelectItem::UnnamedExpr(e @ Expr::Subquery(_)) = item {
                    let Expr::Subquery(sq) = &*e else { continue };
                    if let ast::SetExpr::Select(inner) = sq.body.as_ref()
                        && let [one] = inner.projection.as_slice()
                        && let Some(name) = item_name(one)
                    {
                        *item = ast::SelectItem::ExprWithAlias {
                            expr: e.clone(),
                            alias: ast::Ident::new(name),
                        };
                    }
                }
            }
        }
        let mut arms = Vec::new();
        if !empty_arms(q.body.as_mut(), &mut arms) {
            return ControlFlow::Continue(());
        }
        for arm in arms {
            let ast::SetExpr::Select(s) = arm else {
                continue;
            };
            // Each item of the type of the column it is, else TEXT.
            let items: Vec<String> = s
                .projection
                .iter()
                .filter_map(|p| {
                    let name = item_name(p)?;
                    let (ast::SelectItem::UnnamedExpr(e)
                    | ast::SelectItem::ExprWithAlias { expr: e, .. }) = p
                    else {
                        return None;
                    };
                    let mut e = e;
                    while let Expr::Nested(x) = e {
                        e = x;
                    }
                    let column = match e {
                        Expr::Identifier(i) => Some(&i.value),
                        Expr::CompoundIdentifier(p) => p.last().map(|i| &i.value),
                        _ => None,
                    };
                    let ty = column.and_then(|c| empty_column_type(c)).unwrap_or("TEXT");
                    Some(format!(
                        "CAST(NULL AS {ty}) AS \"{}\"",
                        name.replace('"', "\"\"")
                    ))
                })
                .collect();
            let sql = format!("SELECT {} WHERE false", items.join(", "));
            if let Ok(ast::Statement::Query(empty)) = super::sql::parse(&sql)
                && let ast::SetExpr::Select(e) = *empty.body
            {
                *s = e;
            }
        }
        // Zero rows need no order (and ORDER BY may name a column of the
        // table no longer read).
        q.order_by = None;
        ControlFlow::Continue(())
    }

    /// `ARRAY(SELECT …)` of a query of no rows is the empty array,
    /// written `{}` (as TEXT: psql's `\du` asks for a role's memberships,
    /// of which there are none).
    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if let Expr::Function(f) = e
            && f.name.to_string().eq_ignore_ascii_case("array")
            && let ast::FunctionArguments::Subquery(q) = &f.args
        {
            let mut body = q.body.clone();
            let mut arms = Vec::new();
            if empty_arms(&mut body, &mut arms) {
                *e = lit_str("{}");
            }
        }
        ControlFlow::Continue(())
    }
}

/// The type of a column of one of the [`EMPTY`] tables, by its name.
fn empty_column_type(name: &str) -> Option<&'static str> {
    DEFS.iter()
        .filter(|d| d.0 == "pg_catalog" && EMPTY.contains(&d.1))
        .flat_map(|d| d.3.split(','))
        .find_map(|c| {
            let mut w = c.split_whitespace();
            let (n, t) = (w.next()?, w.next()?);
            n.eq_ignore_ascii_case(name).then_some(t)
        })
}

/// Whether every SELECT of `body` (through set operations) reads an
/// [`EMPTY`] table so that it has no rows; they are pushed to `arms`.
fn empty_arms<'a>(body: &'a mut ast::SetExpr, arms: &mut Vec<&'a mut ast::SetExpr>) -> bool {
    match body {
        ast::SetExpr::SetOperation { left, right, .. } => {
            empty_arms(left, arms) && empty_arms(right, arms)
        }
        ast::SetExpr::Select(s) if select_is_empty(s) => {
            arms.push(body);
            true
        }
        _ => false,
    }
}

fn select_is_empty(s: &ast::Select) -> bool {
    let is_empty_table = |f: &ast::TableFactor| match f {
        ast::TableFactor::Table {
            name, args: None, ..
        } => {
            let parts: Vec<String> = name
                .0
                .iter()
                .filter_map(|p| p.as_ident())
                .map(|i| i.value.to_ascii_lowercase())
                .collect();
            match parts.as_slice() {
                [n] => EMPTY.contains(&n.as_str()),
                [schema, n] => schema == "pg_catalog" && EMPTY.contains(&n.as_str()),
                _ => false,
            }
        }
        _ => false,
    };
    let grouped = !matches!(&s.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty())
        || s.having.is_some()
        || s.projection.iter().any(|p| match p {
            // An aggregate of this SELECT (not of a subquery in it).
            ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                super::bind::contains_aggregate(e)
            }
            _ => false,
        });
    let named = s.projection.iter().all(|p| item_name(p).is_some());
    !grouped
        && named
        && s.from.iter().any(|t| {
            let outer = t.joins.iter().any(|j| {
                matches!(
                    j.join_operator,
                    ast::JoinOperator::RightOuter(_)
                        | ast::JoinOperator::FullOuter(_)
                        | ast::JoinOperator::Right(_)
                )
            });
            !outer && is_empty_table(&t.relation)
                || t.joins.iter().any(|j| {
                    matches!(
                        j.join_operator,
                        ast::JoinOperator::Inner(_)
                            | ast::JoinOperator::Join(_)
                            | ast::JoinOperator::CrossJoin(_)
                    ) && is_empty_table(&j.relation)
                })
        })
}

/// The name PostgreSQL gives a select item (its alias; a column's name; a
/// function's; `case`; else `?column?`); `None` for `*`.
fn item_name(p: &ast::SelectItem) -> Option<String> {
    fn of(e: &Expr) -> String {
        match e {
            Expr::Nested(x) | Expr::Cast { expr: x, .. } => of(x),
            Expr::Identifier(i) => i.value.clone(),
            Expr::CompoundIdentifier(p) => p.last().map(|i| i.value.clone()).unwrap_or_default(),
            Expr::Function(f) => f
                .name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .map(|i| i.value.to_ascii_lowercase())
                .unwrap_or_default(),
            Expr::Case { .. } => "case".into(),
            _ => "?column?".into(),
        }
    }
    match p {
        ast::SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
        ast::SelectItem::UnnamedExpr(e) => Some(of(e)),
        _ => None,
    }
}

/// The catalog's array columns (PostgreSQL's `text[]`, `aclitem[]`, ...):
/// TEXT columns here, always NULL: sluice's tables have no options or
/// access lists, and the tables that have other arrays have no rows.
const NULL_ARRAYS: [&str; 12] = [
    "nspacl",
    "reloptions",
    "relacl",
    "datacl",
    "attoptions",
    "attacl",
    "polroles",
    "stxkeys",
    "stxkind",
    "prattrs",
    "proconfig",
    "setconfig",
];

/// What an array of the catalog is known to be.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Known {
    Null,
    Empty,
}

/// What the array `e` is when it is made of the catalog's array columns
/// ([`NULL_ARRAYS`]): one of them is NULL; `ARRAY(SELECT … FROM
/// unnest(one of them))` and `ARRAY[]` are empty; `a || b` is NULL when
/// both are, else empty (PostgreSQL's `array_cat`). `None`: not known.
fn known_array(e: &Expr) -> Option<Known> {
    match e {
        Expr::Nested(x) => known_array(x),
        Expr::Identifier(i) => NULL_ARRAYS
            .contains(&i.value.to_ascii_lowercase().as_str())
            .then_some(Known::Null),
        Expr::CompoundIdentifier(p) => p
            .last()
            .filter(|i| NULL_ARRAYS.contains(&i.value.to_ascii_lowercase().as_str()))
            .map(|_| Known::Null),
        Expr::Array(a) if a.elem.is_empty() => Some(Known::Empty),
        Expr::BinaryOp {
            left,
            op: ast::BinaryOperator::StringConcat,
            right,
        } => match (known_array(left)?, known_array(right)?) {
            (Known::Null, Known::Null) => Some(Known::Null),
            _ => Some(Known::Empty),
        },
        Expr::Function(f)
            if f.name.0.len() == 1
                && f.name.to_string().eq_ignore_ascii_case("array")
                && matches!(&f.args, ast::FunctionArguments::Subquery(q) if rows_none(q)) =>
        {
            Some(Known::Empty)
        }
        _ => None,
    }
}

/// Whether the query is a SELECT from `unnest` of an array known NULL or
/// empty (so it has no rows).
fn rows_none(q: &ast::Query) -> bool {
    let ast::SetExpr::Select(s) = q.body.as_ref() else {
        return false;
    };
    let [from] = s.from.as_slice() else {
        return false;
    };
    let (name, args) = match &from.relation {
        ast::TableFactor::Function { name, args, .. } => (name, args),
        ast::TableFactor::Table {
            name,
            args: Some(a),
            ..
        } => (name, &a.args),
        ast::TableFactor::UNNEST { array_exprs, .. } => {
            return from.joins.is_empty()
                && matches!(array_exprs.as_slice(), [a] if known_array(a).is_some());
        }
        _ => return false,
    };
    let unnest = name
        .0
        .last()
        .and_then(|p| p.as_ident())
        .is_some_and(|i| i.value.eq_ignore_ascii_case("unnest"));
    unnest
        && from.joins.is_empty()
        && matches!(args.as_slice(), [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(a))] if known_array(a).is_some())
}

/// The names of the marks of an oid cast to regclass or regtype, while
/// [`rewrite`] runs (after it, the oid).
const REGCLASS_OID: &str = "sluice_regclass_oid";
const REGTYPE_OID: &str = "sluice_regtype_oid";

/// `e` marked as an oid of `kind` (a call of the mark).
fn mark(kind: &str, e: Expr) -> Expr {
    Expr::Function(ast::Function {
        name: ast::ObjectName::from(vec![ast::Ident::new(kind)]),
        uses_odbc_syntax: false,
        parameters: ast::FunctionArguments::None,
        args: ast::FunctionArguments::List(ast::FunctionArgumentList {
            duplicate_treatment: None,
            args: vec![ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))],
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

/// The kind and the oid of `e` when it is a marked oid.
fn marked(e: &Expr) -> Option<(&'static str, Expr)> {
    let mut e = e;
    while let Expr::Nested(x) = e {
        e = x;
    }
    let Expr::Function(f) = e else {
        return None;
    };
    let kind = match function_name(f).as_deref() {
        Some(REGCLASS_OID) => REGCLASS_OID,
        Some(REGTYPE_OID) => REGTYPE_OID,
        _ => return None,
    };
    args(f).into_iter().next().map(|a| (kind, a))
}

/// The oids and names (as `regclass` or `regtype` output writes them)
/// of the relations or the types.
fn reg_names(cat: &CatalogDb, kind: &str) -> Vec<(i64, String)> {
    // Oid 0 is written `-`.
    let mut out = vec![(0, "-".to_string())];
    if kind == REGCLASS_OID {
        out.extend(
            cat.oids
                .iter()
                .filter(|(name, _)| !name.contains('.'))
                .map(|(name, oid)| (*oid, quote_ident(name))),
        );
    } else {
        out.extend(TYPES.iter().map(|t| (t.0, t.4.to_string())));
    }
    out
}

/// The integer `e` is, when it is a number literal.
fn number(e: &Expr) -> Option<i64> {
    match e {
        Expr::Nested(x) => number(x),
        Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n.parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

/// The oid of the type PostgreSQL's `regtype` input reads `name` as
/// (its name in pg_type, or as `format_type` writes it, or a common
/// alias); `None` when sluice has no such type.
fn type_oid(name: &str) -> Option<i64> {
    let n = name.trim().to_ascii_lowercase();
    let n = n.strip_prefix("pg_catalog.").unwrap_or(&n);
    let alias = match n {
        "int" | "integer" => "int4",
        "smallint" => "int2",
        "bigint" => "int8",
        "decimal" => "numeric",
        "float" | "double precision" => "float8",
        "real" => "float4",
        "boolean" => "bool",
        "character varying" => "varchar",
        "timestamp without time zone" => "timestamp",
        "timestamp with time zone" => "timestamptz",
        other => other,
    };
    TYPES.iter().find(|t| t.1 == alias).map(|t| t.0)
}

/// PostgreSQL's `regtype`.
fn is_regtype(t: &ast::DataType) -> bool {
    matches!(t, ast::DataType::Custom(n, a) if a.is_empty() && {
        let n = n.to_string().to_ascii_lowercase();
        n == "regtype" || n == "pg_catalog.regtype"
    })
}

/// Whether `e` is a vector column of pg_index (`indkey`, `indclass`,
/// `indoption`, `indcollation`).
fn is_index_vector(e: &Expr) -> bool {
    let name = match e {
        Expr::Identifier(i) => &i.value,
        Expr::CompoundIdentifier(p) => match p.last() {
            Some(i) => &i.value,
            None => return false,
        },
        _ => return false,
    };
    // The column, or a derived table's column named after it
    // (`I_INDOPTION AS` of `i.indoption`).
    let name = name.to_ascii_lowercase();
    ["indkey", "indclass", "indoption", "indcollation"]
        .iter()
        .any(|n| name == *n || name.ends_with(&format!("_{n}")))
}

/// The settings `current_setting` reads in a query of the catalog.
const FIXED_SETTINGS: [(&str, &str); 6] = [
    ("default_table_access_method", "heap"),
    ("server_encoding", "UTF8"),
    ("standard_conforming_strings", "on"),
    ("max_identifier_length", "63"),
    ("integer_datetimes", "on"),
    ("block_size", "8192"),
];

/// Whether `e` is the number 1 (in parentheses or casts: `1::INTEGER`).
fn is_one(e: &Expr) -> bool {
    match e {
        Expr::Nested(x) | Expr::Cast { expr: x, .. } => is_one(x),
        Expr::Value(v) => matches!(&v.value, ast::Value::Number(n, _) if n == "1"),
        _ => false,
    }
}

/// `pg_get_indexdef(oid)` (`col` None), or of column `col` (0: the
/// whole definition): of each primary key's index.
fn index_def(cat: &CatalogDb, oid: &Expr, col: Option<&Expr>, pretty: bool) -> Result<Expr> {
    let mut sql = format!("CASE WHEN ({oid}) IS NULL THEN CAST(NULL AS TEXT)");
    for k in &cat.keys {
        let whole = if pretty {
            &k.index_def_pretty
        } else {
            &k.index_def
        };
        let q = |s: &str| s.replace('\'', "''");
        match col {
            None => sql.push_str(&format!(" WHEN ({oid}) = {} THEN '{}'", k.index, q(whole))),
            Some(c) => sql.push_str(&format!(
                " WHEN ({oid}) = {} THEN CASE WHEN ({c}) = 0 THEN '{}' WHEN ({c}) = 1 THEN '{}' ELSE '' END",
                k.index,
                q(whole),
                q(&k.column)
            )),
        }
    }
    sql.push_str(" ELSE CAST(NULL AS TEXT) END");
    parse_expr(&sql)
}

/// PostgreSQL's `oid` type.
fn is_oid_type(t: &ast::DataType) -> bool {
    matches!(t, ast::DataType::Custom(n, a) if a.is_empty() && n.to_string().eq_ignore_ascii_case("oid"))
}

/// A cast to one of PostgreSQL's object-name types but regclass.
fn is_reg_type(t: &ast::DataType) -> bool {
    match t {
        ast::DataType::Custom(n, _) => {
            let n = n.to_string().to_ascii_lowercase();
            n.starts_with("reg") || n == "pg_catalog.regtype"
        }
        _ => false,
    }
}

/// The name PostgreSQL gives a select item that calls a catalog
/// function (also through a field or subscript of its result).
fn call_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Nested(x) => call_name(x),
        Expr::CompoundFieldAccess { root, .. } => call_name(root),
        Expr::Identifier(i)
            if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("current_schema") =>
        {
            Some("current_schema".into())
        }
        Expr::Function(f) if is_catalog_function(f) => f
            .name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(|i| i.value.to_ascii_lowercase()),
        _ => None,
    }
}

fn regclass_refused(e: &Expr) -> Error {
    Error::Unsupported(format!(
        "a cast to regclass of anything but a name or an oid is not supported{}",
        at(e.span())
    ))
}

fn function_name(f: &ast::Function) -> Option<String> {
    match f.name.0.as_slice() {
        [p] => p.as_ident().map(|i| i.value.to_ascii_lowercase()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_as_postgresql_searches_them() {
        let has = |n: &str| n == "pg_catalog__pg_class";
        let r = |p: &[&str]| resolve(&p.iter().map(|s| s.to_string()).collect::<Vec<_>>(), has);
        assert_eq!(r(&["t"]).as_deref(), Some("t"));
        assert_eq!(r(&["public", "t"]).as_deref(), Some("t"));
        assert_eq!(r(&["pg_class"]).as_deref(), Some("pg_catalog__pg_class"));
        assert_eq!(
            r(&["information_schema", "tables"]).as_deref(),
            Some("information_schema__tables")
        );
        assert_eq!(r(&["sluice", "public", "t"]).as_deref(), Some("t"));
        assert_eq!(r(&["other", "t"]), None);
    }

    #[test]
    fn catalog_references_are_found_in_every_from_item() {
        let yes = [
            "SELECT 1 FROM pg_catalog.pg_class",
            "SELECT 1 FROM pg_class",
            "SELECT * FROM t WHERE EXISTS (SELECT 1 FROM information_schema.columns)",
            "SELECT * FROM t JOIN pg_namespace n ON true",
        ];
        for sql in yes {
            assert!(
                references_catalog(&super::super::sql::parse(sql).unwrap()),
                "{sql}"
            );
        }
        for sql in [
            "SELECT 1 FROM t",
            "SELECT 1 FROM public.t",
            "SELECT pg_class FROM t",
        ] {
            assert!(
                !references_catalog(&super::super::sql::parse(sql).unwrap()),
                "{sql}"
            );
        }
    }

    #[test]
    fn numeric_type_modifiers_are_precision_and_scale() {
        let (oid, typmod, _, name) = pg_type(&DataType::Decimal {
            precision: 15,
            scale: 2,
        });
        assert_eq!(
            (oid, typmod, name.as_str()),
            (1700, 983_046, "numeric(15,2)")
        );
    }
}
