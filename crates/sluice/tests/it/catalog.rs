//! The catalog as tables (`sluice::query::catalog`): what drivers ask of
//! `pg_catalog` and `information_schema` — the PostgreSQL JDBC driver's
//! own `DatabaseMetaData` queries, verbatim — answered by the engine as
//! PostgreSQL 15 answers them for the same tables (checked there), and
//! the errors of names that are not there.

use sluice::query::{QueryOptions, query_with};
use sluice::store::Database;

use crate::common::{TempDir, load_bytes, opts, rows_of};

fn db() -> (TempDir, Database) {
    let dir = TempDir::new("catalog");
    load_bytes(
        &dir,
        "people",
        b"id,name,price,d,ts,ok,n\n1,ada,12.50,2024-01-02,2024-01-02 03:04:05,true,7\n",
        &opts(
            "id BIGINT PRIMARY KEY, name TEXT DEFAULT 'new', price DECIMAL(10,2), d DATE, \
             ts TIMESTAMP, ok BOOLEAN, n INT DEFAULT '-5'",
        ),
    )
    .unwrap();
    load_bytes(&dir, "tables", b"x\n1\n", &opts("x DOUBLE")).unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    (dir, db)
}

/// The rows of `sql`'s answer, each as its values joined by `|`.
fn rows(db: &Database, sql: &str) -> Vec<String> {
    let r = query_with(db, sql, &QueryOptions::default()).unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows_of(&r.batches)
        .into_iter()
        .map(|r| {
            r.into_iter()
                .map(|v| v.unwrap_or_else(|| "NULL".into()))
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

fn fails(db: &Database, sql: &str) -> (&'static str, String) {
    match query_with(db, sql, &QueryOptions::default()) {
        Ok(_) => panic!("{sql}: should fail"),
        Err(e) => (e.sqlstate(), e.to_string()),
    }
}

#[test]
fn jdbc_get_tables_lists_the_tables_as_postgresql_does() {
    let (_dir, db) = db();
    // PgDatabaseMetaData.getTables(null, null, "%", {"TABLE"}), PostgreSQL JDBC 42.5.
    let sql = "SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, c.relname AS TABLE_NAME, CASE n.nspname ~ '^pg_' OR n.nspname = 'information_schema' WHEN true THEN CASE WHEN n.nspname = 'pg_catalog' OR n.nspname = 'information_schema' THEN CASE c.relkind WHEN 'r' THEN 'SYSTEM TABLE' WHEN 'v' THEN 'SYSTEM VIEW' WHEN 'i' THEN 'SYSTEM INDEX' ELSE NULL END WHEN n.nspname = 'pg_toast' THEN CASE c.relkind WHEN 'r' THEN 'SYSTEM TOAST TABLE' WHEN 'i' THEN 'SYSTEM TOAST INDEX' ELSE NULL END ELSE CASE c.relkind WHEN 'r' THEN 'TEMPORARY TABLE' WHEN 'p' THEN 'TEMPORARY TABLE' WHEN 'i' THEN 'TEMPORARY INDEX' WHEN 'S' THEN 'TEMPORARY SEQUENCE' WHEN 'v' THEN 'TEMPORARY VIEW' ELSE NULL END END WHEN false THEN CASE c.relkind WHEN 'r' THEN 'TABLE' WHEN 'p' THEN 'PARTITIONED TABLE' WHEN 'i' THEN 'INDEX' WHEN 'P' then 'PARTITIONED INDEX' WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW' WHEN 'c' THEN 'TYPE' WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE NULL END ELSE NULL END AS TABLE_TYPE, d.description AS REMARKS, '' as TYPE_CAT, '' as TYPE_SCHEM, '' as TYPE_NAME, '' AS SELF_REFERENCING_COL_NAME, '' AS REF_GENERATION FROM pg_catalog.pg_namespace n, pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_description d ON (c.oid = d.objoid AND d.objsubid = 0 and d.classoid = 'pg_class'::regclass) WHERE c.relnamespace = n.oid AND c.relname LIKE '%' AND (false OR ( c.relkind = 'r' AND n.nspname !~ '^pg_' AND n.nspname <> 'information_schema' ) ) ORDER BY TABLE_TYPE,TABLE_SCHEM,TABLE_NAME";
    assert_eq!(
        rows(&db, sql),
        [
            "NULL|public|people|TABLE|NULL|||||",
            "NULL|public|tables|TABLE|NULL|||||"
        ]
    );
}

#[test]
fn jdbc_get_columns_and_primary_keys_answer_as_postgresql_does() {
    let (_dir, db) = db();
    // PgDatabaseMetaData.getColumns(null, null, "people", "%"), the columns it reads.
    let sql = "SELECT attname, atttypid, attnotnull, atttypmod, attlen, attnum, adsrc, typtype FROM (SELECT n.nspname,c.relname,a.attname,a.atttypid,a.attnotnull OR (t.typtype = 'd' AND t.typnotnull) AS attnotnull,a.atttypmod,a.attlen,t.typtypmod,row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum) AS attnum, nullif(a.attidentity, '') as attidentity,nullif(a.attgenerated, '') as attgenerated,pg_catalog.pg_get_expr(def.adbin, def.adrelid) AS adsrc,dsc.description,t.typbasetype,t.typtype FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_class c ON (c.relnamespace = n.oid) JOIN pg_catalog.pg_attribute a ON (a.attrelid=c.oid) JOIN pg_catalog.pg_type t ON (a.atttypid = t.oid) LEFT JOIN pg_catalog.pg_attrdef def ON (a.attrelid=def.adrelid AND a.attnum = def.adnum) LEFT JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid) LEFT JOIN pg_catalog.pg_class dc ON (dc.oid=dsc.classoid AND dc.relname='pg_class') LEFT JOIN pg_catalog.pg_namespace dn ON (dc.relnamespace=dn.oid AND dn.nspname='pg_catalog') WHERE c.relkind in ('r','p','v','f','m') and a.attnum > 0 AND NOT a.attisdropped AND c.relname LIKE 'people') c WHERE true AND attname LIKE '%' ORDER BY nspname,c.relname,attnum";
    assert_eq!(
        rows(&db, sql),
        [
            "id|20|true|-1|8|1|NULL|b",
            "name|25|false|-1|-1|2|'new'::text|b",
            "price|1700|false|655366|-1|3|NULL|b",
            "d|1082|false|-1|4|4|NULL|b",
            "ts|1114|false|-1|8|5|NULL|b",
            "ok|16|false|-1|1|6|NULL|b",
            "n|23|false|-1|4|7|'-5'::integer|b",
        ]
    );
    // getPrimaryKeys(null, null, "people"): _pg_expandarray of the index's key.
    let sql = "SELECT result.TABLE_CAT, result.TABLE_SCHEM, result.TABLE_NAME, result.COLUMN_NAME, result.KEY_SEQ, result.PK_NAME FROM (SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, ct.relname AS TABLE_NAME, a.attname AS COLUMN_NAME, (information_schema._pg_expandarray(i.indkey)).n AS KEY_SEQ, ci.relname AS PK_NAME, information_schema._pg_expandarray(i.indkey) AS KEYS, a.attnum AS A_ATTNUM FROM pg_catalog.pg_class ct JOIN pg_catalog.pg_attribute a ON (ct.oid = a.attrelid) JOIN pg_catalog.pg_namespace n ON (ct.relnamespace = n.oid) JOIN pg_catalog.pg_index i ON ( a.attrelid = i.indrelid) JOIN pg_catalog.pg_class ci ON (ci.oid = i.indexrelid) WHERE true AND ct.relname = 'people' AND i.indisprimary ) result where result.A_ATTNUM = (result.KEYS).x ORDER BY result.table_name, result.pk_name, result.key_seq";
    assert_eq!(rows(&db, sql), ["NULL|public|people|id|1|people_pkey"]);
    // getSchemas().
    let sql = "SELECT nspname AS TABLE_SCHEM, NULL AS TABLE_CATALOG FROM pg_catalog.pg_namespace WHERE nspname <> 'pg_toast' AND (nspname !~ '^pg_temp_' OR nspname = (pg_catalog.current_schemas(true))[1]) AND (nspname !~ '^pg_toast_temp_' OR nspname = replace((pg_catalog.current_schemas(true))[1], 'pg_temp_', 'pg_toast_temp_')) ORDER BY TABLE_SCHEM";
    assert_eq!(
        rows(&db, sql),
        ["information_schema|NULL", "pg_catalog|NULL", "public|NULL"]
    );
}

#[test]
fn information_schema_describes_columns_keys_and_defaults() {
    let (_dir, db) = db();
    let sql = "SELECT column_name, ordinal_position, column_default, is_nullable, data_type, \
               numeric_precision, numeric_scale, datetime_precision, udt_name \
               FROM information_schema.columns WHERE table_schema = 'public' \
               AND table_name = 'people' ORDER BY ordinal_position";
    assert_eq!(
        rows(&db, sql),
        [
            "id|1|NULL|NO|bigint|64|0|NULL|int8",
            "name|2|'new'::text|YES|text|NULL|NULL|NULL|text",
            "price|3|NULL|YES|numeric|10|2|NULL|numeric",
            "d|4|NULL|YES|date|NULL|NULL|0|date",
            "ts|5|NULL|YES|timestamp without time zone|NULL|NULL|6|timestamp",
            "ok|6|NULL|YES|boolean|NULL|NULL|NULL|bool",
            "n|7|'-5'::integer|YES|integer|32|0|NULL|int4",
        ]
    );
    let sql = "SELECT tc.constraint_type, tc.table_name, k.column_name, k.ordinal_position \
               FROM information_schema.table_constraints tc \
               JOIN information_schema.key_column_usage k \
               ON k.constraint_name = tc.constraint_name AND k.table_name = tc.table_name \
               WHERE tc.table_schema = 'public'";
    assert_eq!(rows(&db, sql), ["PRIMARY KEY|people|id|1"]);
    // A user's table named `tables` is not information_schema's.
    assert_eq!(rows(&db, "SELECT x FROM tables"), ["1"]);
    assert_eq!(rows(&db, "SELECT x FROM public.tables"), ["1"]);
    assert_eq!(
        rows(
            &db,
            "SELECT table_name, table_type FROM information_schema.tables \
             WHERE table_schema = 'public' ORDER BY 1"
        ),
        ["people|BASE TABLE", "tables|BASE TABLE"]
    );
    assert_eq!(
        rows(
            &db,
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute \
             WHERE attrelid = 'people'::regclass ORDER BY attnum"
        ),
        [
            "bigint",
            "text",
            "numeric(10,2)",
            "date",
            "timestamp without time zone",
            "boolean",
            "integer"
        ]
    );
}

#[test]
fn names_that_are_not_there_fail_as_in_postgresql() {
    let (_dir, db) = db();
    let (state, msg) = fails(&db, "SELECT * FROM nosuch.t");
    assert_eq!(state, "42P01");
    assert!(msg.contains("schema \"nosuch\" does not exist"), "{msg}");
    // A table of PostgreSQL's catalog sluice's lacks: refused, naming it.
    let (state, msg) = fails(&db, "SELECT * FROM pg_catalog.pg_settings");
    assert_eq!(state, "0A000");
    assert!(
        msg.contains("pg_catalog.pg_settings is not supported"),
        "{msg}"
    );
    let (state, msg) = fails(&db, "SELECT * FROM information_schema.views");
    assert_eq!(state, "0A000");
    assert!(msg.contains("schemata, tables, columns"), "{msg}");
    let (state, msg) = fails(&db, "SELECT 'nosuch'::regclass FROM pg_class");
    assert_eq!(state, "42P01");
    assert!(msg.contains("relation \"nosuch\" does not exist"), "{msg}");
    // The catalog is its own database: a join with a user's table is
    // refused, not answered without it.
    let (state, _) = fails(&db, "SELECT * FROM pg_class, people");
    assert_eq!(state, "42P01");
    // A column cast to regclass: a name is looked up, an oid is itself
    // (compared, the oid); as a select item or cast back to text, the
    // name (PostgreSQL shows a regclass so).
    assert_eq!(
        rows(
            &db,
            "SELECT CAST(relname AS regclass), CAST(CAST(oid AS regclass) AS TEXT), \
             CAST(CAST(relname AS regclass) AS TEXT), CAST(CAST(atttypid AS regtype) AS TEXT), \
             CAST(relname AS regclass) = 16384, CAST(oid AS regclass) = 16384 \
             FROM pg_class JOIN pg_attribute ON attrelid = oid \
             WHERE relname = 'people' AND attnum = 1"
        ),
        ["people|people|people|bigint|true|true"]
    );
    // A quoted name keeps its case.
    let (state, msg) = fails(&db, "SELECT '\"People\"'::regclass FROM pg_class");
    assert_eq!(state, "42P01");
    assert!(msg.contains("relation \"People\" does not exist"), "{msg}");
}

#[test]
fn catalog_tables_are_named_as_in_postgresql_and_its_functions_run_alone() {
    let (_dir, db) = db();
    // Qualified by the table's name, with or without its schema.
    assert_eq!(
        rows(
            &db,
            "SELECT pg_catalog.pg_class.relname, pg_class.relkind FROM pg_catalog.pg_class \
             WHERE pg_class.relnamespace = 2200 ORDER BY 1"
        ),
        ["people|r", "people_pkey|i", "tables|r"]
    );
    assert_eq!(
        rows(
            &db,
            "SELECT information_schema.tables.table_name FROM information_schema.tables \
             WHERE table_schema = 'public' ORDER BY 1"
        ),
        ["people", "tables"]
    );
    // Without any table; each as PostgreSQL 15 answers it.
    let r = query_with(
        &db,
        "SELECT format_type(1043, 24), format_type(1114, 3), format_type(0, -1), \
         format_type(1700, 983046), format_type(99999, -1), format_type(NULL, -1), \
         (current_schemas(true))[1], (current_schemas(false))[2], current_schema(), \
         pg_encoding_to_char(0), pg_table_is_visible('people'::regclass)",
        &QueryOptions::default(),
    )
    .unwrap();
    assert_eq!(
        rows_of(&r.batches)[0],
        [
            "character varying(20)",
            "timestamp(3) without time zone",
            "-",
            "numeric(15,2)",
            "???"
        ]
        .iter()
        .map(|s| Some(s.to_string()))
        .chain([
            None,
            Some("pg_catalog".into()),
            None,
            Some("public".into()),
            Some("SQL_ASCII".into()),
            Some("true".into())
        ])
        .collect::<Vec<_>>()
    );
    // current_database(), current_schema (SQL's form, no parentheses)
    // beside other values; varchar's type modifier of no length.
    let r2 = query_with(
        &db,
        "SELECT 'x' || current_database(), current_schema, format_type(1043, 4), \
         format_type(1043, 5), format_type(1700, 4)",
        &QueryOptions::default(),
    )
    .unwrap();
    assert_eq!(
        rows_of(&r2.batches)[0],
        [
            "xsluice",
            "public",
            "character varying",
            "character varying(1)",
            "numeric(0,0)"
        ]
        .map(|s| Some(s.to_string()))
    );
    assert_eq!(r2.schema.field(1).name(), "current_schema");
    // Columns named after the function, as PostgreSQL names them.
    assert_eq!(r.schema.field(0).name(), "format_type");
    assert_eq!(r.schema.field(6).name(), "current_schemas");
}

#[test]
fn sqlalchemy_reflection_queries_answer_as_postgresql_does() {
    let (_dir, db) = db();
    // SQLAlchemy 2.0's PostgreSQL dialect, get_pk_constraint (the oids
    // of its IN lists written as 'name'::regclass).
    let pk = "SELECT attr.conrelid = 'people'::regclass, array_agg(CAST(attr.attname AS TEXT) ORDER BY attr.ord) AS cols, attr.conname, min(attr.description) AS description, min(attr.indnkeyatts) AS indnkeyatts, bool_and(attr.indnullsnotdistinct) AS indnullsnotdistinct FROM (SELECT con.conrelid AS conrelid, con.conname AS conname, con.description AS description, con.ord AS ord, con.indnkeyatts AS indnkeyatts, con.indnullsnotdistinct AS indnullsnotdistinct, pg_catalog.pg_attribute.attname AS attname FROM pg_catalog.pg_attribute JOIN (SELECT pg_catalog.pg_constraint.conrelid AS conrelid, pg_catalog.pg_constraint.conname AS conname, unnest(pg_catalog.pg_index.indkey) AS attnum, generate_subscripts(pg_catalog.pg_index.indkey, 1) AS ord, pg_catalog.pg_index.indnkeyatts AS indnkeyatts, pg_catalog.pg_index.indnullsnotdistinct AS indnullsnotdistinct, pg_catalog.pg_description.description AS description FROM pg_catalog.pg_constraint JOIN pg_catalog.pg_index ON pg_catalog.pg_constraint.conindid = pg_catalog.pg_index.indexrelid LEFT OUTER JOIN pg_catalog.pg_description ON pg_catalog.pg_description.objoid = pg_catalog.pg_constraint.oid AND pg_catalog.pg_description.classoid = CAST('pg_catalog.pg_constraint' AS REGCLASS) WHERE pg_catalog.pg_constraint.contype = 'p' AND pg_catalog.pg_constraint.conrelid IN ('people'::regclass, 'tables'::regclass)) AS con ON pg_catalog.pg_attribute.attnum = con.attnum AND pg_catalog.pg_attribute.attrelid = con.conrelid WHERE con.conrelid IN ('people'::regclass, 'tables'::regclass)) AS attr GROUP BY attr.conrelid, attr.conname ORDER BY attr.conrelid, attr.conname";
    assert_eq!(rows(&db, pk), ["true|{id}|people_pkey|NULL|1|false"]);
    // get_columns: correlated subqueries in the select list (inside
    // CASE), json_build_object, regclass casts of a column, ANY(ARRAY).
    let columns = "SELECT pg_catalog.pg_attribute.attname AS name, pg_catalog.format_type(pg_catalog.pg_attribute.atttypid, pg_catalog.pg_attribute.atttypmod) AS format_type, CASE WHEN pg_catalog.pg_attribute.atthasdef THEN (SELECT pg_catalog.pg_get_expr(pg_catalog.pg_attrdef.adbin, pg_catalog.pg_attrdef.adrelid) AS pg_get_expr_1 FROM pg_catalog.pg_attrdef WHERE pg_catalog.pg_attribute.atthasdef AND pg_catalog.pg_attrdef.adrelid = pg_catalog.pg_attribute.attrelid AND pg_catalog.pg_attrdef.adnum = pg_catalog.pg_attribute.attnum) ELSE NULL END AS \"default\", pg_catalog.pg_attribute.attnotnull AS not_null, pg_catalog.pg_class.relname AS table_name, pg_catalog.pg_description.description AS comment, pg_catalog.pg_attribute.attgenerated AS generated, CASE WHEN (pg_catalog.pg_attribute.attidentity != '') THEN (SELECT json_build_object('always', pg_catalog.pg_attribute.attidentity = 'a', 'start', pg_catalog.pg_sequence.seqstart, 'increment', pg_catalog.pg_sequence.seqincrement, 'minvalue', pg_catalog.pg_sequence.seqmin, 'maxvalue', pg_catalog.pg_sequence.seqmax, 'cache', pg_catalog.pg_sequence.seqcache, 'cycle', pg_catalog.pg_sequence.seqcycle) AS json_build_object_1 FROM pg_catalog.pg_sequence WHERE pg_catalog.pg_attribute.attidentity != '' AND pg_catalog.pg_sequence.seqrelid = CAST(CAST(pg_catalog.pg_get_serial_sequence(CAST(CAST(pg_catalog.pg_attribute.attrelid AS REGCLASS) AS TEXT), pg_catalog.pg_attribute.attname) AS REGCLASS) AS OID)) ELSE NULL END AS identity_options, CASE WHEN (pg_catalog.pg_attribute.attcollation != 0 AND (SELECT pg_catalog.pg_type.typcollation FROM pg_catalog.pg_type WHERE pg_catalog.pg_type.oid = pg_catalog.pg_attribute.atttypid) != pg_catalog.pg_attribute.attcollation) THEN (SELECT json_build_object('name', pg_catalog.pg_collation.collname, 'schema', CASE WHEN pg_catalog.pg_collation_is_visible(pg_catalog.pg_collation.oid) THEN NULL ELSE pg_catalog.pg_namespace.nspname END) AS json_build_object_9 FROM pg_catalog.pg_collation JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_collation.collnamespace WHERE pg_catalog.pg_collation.oid = pg_catalog.pg_attribute.attcollation) ELSE NULL END AS collation FROM pg_catalog.pg_class LEFT OUTER JOIN pg_catalog.pg_attribute ON pg_catalog.pg_class.oid = pg_catalog.pg_attribute.attrelid AND pg_catalog.pg_attribute.attnum > 0 AND NOT pg_catalog.pg_attribute.attisdropped LEFT OUTER JOIN pg_catalog.pg_description ON pg_catalog.pg_description.objoid = pg_catalog.pg_attribute.attrelid AND pg_catalog.pg_description.objsubid = pg_catalog.pg_attribute.attnum JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace WHERE pg_catalog.pg_class.relkind = ANY (ARRAY['r', 'p', 'f', 'v', 'm']) AND pg_catalog.pg_table_is_visible(pg_catalog.pg_class.oid) AND pg_catalog.pg_namespace.nspname != 'pg_catalog' AND pg_catalog.pg_class.relname IN ('people', 'tables') ORDER BY pg_catalog.pg_class.relname, pg_catalog.pg_attribute.attnum";
    assert_eq!(
        rows(&db, columns),
        [
            "id|bigint|NULL|true|people|NULL||NULL|NULL",
            "name|text|'new'::text|false|people|NULL||NULL|NULL",
            "price|numeric(10,2)|NULL|false|people|NULL||NULL|NULL",
            "d|date|NULL|false|people|NULL||NULL|NULL",
            "ts|timestamp without time zone|NULL|false|people|NULL||NULL|NULL",
            "ok|boolean|NULL|false|people|NULL||NULL|NULL",
            "n|integer|'-5'::integer|false|people|NULL||NULL|NULL",
            "x|double precision|NULL|false|tables|NULL||NULL|NULL",
        ]
    );
    let defs = "SELECT pg_get_constraintdef(oid, true), pg_get_indexdef(conindid), pg_get_indexdef(conindid, 0, true), pg_get_indexdef(conindid, 1, true), pg_get_indexdef(conindid, 2, true) FROM pg_constraint WHERE conrelid = 'people'::regclass";
    assert_eq!(
        rows(&db, defs),
        [
            "PRIMARY KEY (id)|CREATE UNIQUE INDEX people_pkey ON public.people USING btree (id)|\
          CREATE UNIQUE INDEX people_pkey ON people USING btree (id)|id|"
        ]
    );
    // psycopg's TypeInfo.fetch (hstore is not there: NULL).
    let types = "SELECT t.typname, t.typarray, CAST(CAST(t.oid AS regtype) AS TEXT), CAST('int' AS regtype) = t.oid, to_regtype('bigint') = t.oid, to_regtype('hstore') FROM pg_type t WHERE t.oid = to_regtype('int8')";
    assert_eq!(rows(&db, types), ["int8|1016|bigint|false|true|NULL"]);
}

/// The queries of a fixture of psql's (one a paragraph, each ended by
/// `;`, `--` lines left out), `{oid}` replaced by `oid`.
fn fixture(text: &str, oid: i64) -> Vec<String> {
    text.split(";\n")
        .map(|q| {
            q.lines()
                .filter(|l| !l.starts_with("--"))
                .collect::<Vec<_>>()
                .join("\n")
                .replace("{oid}", &oid.to_string())
        })
        .filter(|q| !q.trim().is_empty())
        .collect()
}

/// psql 15's own queries for `\dt`, `\d`, `\d TABLE`, `\d+ TABLE`, `\dn`,
/// `\l` and `\dt+` (`psql -E`, verbatim in `psql15_describe.sql`),
/// answered by the engine as PostgreSQL 15 answers them for the same
/// tables (checked there), but for the owner's name, the oids and the
/// sizes.
#[test]
fn psql_describe_queries_answer_as_postgresql_does() {
    let (_dir, db) = db();
    let queries = fixture(include_str!("psql15_describe.sql"), 16384);
    assert_eq!(queries.len(), 16);
    let tables = ["public|people|table|sluice", "public|tables|table|sluice"];
    let flags = ["0|r|true|false|false|false|false|false|false||0||p|d|heap"];
    let columns = [
        "id|bigint|NULL|true|NULL||",
        "name|text|'new'::text|false|NULL||",
        "price|numeric(10,2)|NULL|false|NULL||",
        "d|date|NULL|false|NULL||",
        "ts|timestamp without time zone|NULL|false|NULL||",
        "ok|boolean|NULL|false|NULL||",
        "n|integer|'-5'::integer|false|NULL||",
    ];
    let storage = ["p", "x", "m", "p", "p", "p", "p"];
    let columns_plus: Vec<String> = columns
        .iter()
        .zip(storage)
        .map(|(c, s)| format!("{c}|{s}||NULL|NULL"))
        .collect();
    let none: [&str; 0] = [];
    let expected: Vec<Vec<String>> = vec![
        tables.map(String::from).to_vec(),
        vec!["16384|public|people".into()],
        flags.map(String::from).to_vec(),
        columns.map(String::from).to_vec(),
        vec![
            "people_pkey|true|true|false|true|CREATE UNIQUE INDEX people_pkey ON people USING btree (id)|PRIMARY KEY (id)|p|false|false|false|0".into(),
        ],
        // Policies, extended statistics, publications, parents, partitions.
        none.map(String::from).to_vec(),
        none.map(String::from).to_vec(),
        none.map(String::from).to_vec(),
        none.map(String::from).to_vec(),
        none.map(String::from).to_vec(),
        // \d+: its table flags and columns.
        flags.map(String::from).to_vec(),
        columns_plus,
        vec!["public|sluice".into()],
        vec!["sluice|sluice|UTF8|C.UTF-8|C.UTF-8|NULL|libc|NULL".into()],
        // \dt+: the sizes are the table's files'.
        Vec::new(),
        tables.map(String::from).to_vec(),
    ];
    for (i, (q, want)) in queries.iter().zip(&expected).enumerate() {
        let got = rows(&db, q);
        if i == 14 {
            assert_eq!(got.len(), 2, "{q}");
            for (g, t) in got.iter().zip(tables) {
                let f: Vec<&str> = g.split('|').collect();
                assert_eq!(f[..4].join("|"), t);
                assert_eq!(f[4..6], ["permanent", "heap"]);
                assert!(f[6].ends_with(" bytes") && f[6] != "0 bytes", "{g}");
                assert_eq!(f[7], "NULL");
            }
            continue;
        }
        assert_eq!(&got, want, "query {i}: {q}");
    }
}

/// The select items' names of psql's describe queries are PostgreSQL's,
/// where psql reads them by name (`\l`'s headings) or a client would.
#[test]
fn catalog_select_items_are_named_as_in_postgresql() {
    let (_dir, db) = db();
    let names = |sql: &str| -> Vec<String> {
        let r = query_with(&db, sql, &QueryOptions::default()).unwrap();
        r.schema.fields().iter().map(|f| f.name().clone()).collect()
    };
    assert_eq!(
        names("SELECT c.oid::pg_catalog.regclass FROM pg_catalog.pg_class c WHERE c.oid = 16384"),
        ["oid"]
    );
    assert_eq!(
        rows(
            &db,
            "SELECT c.oid::pg_catalog.regclass, c.oid::regclass::text FROM pg_catalog.pg_class c WHERE c.oid = 16384"
        ),
        ["people|people"]
    );
    // Over an empty catalog table: no rows, named as PostgreSQL names them.
    assert_eq!(
        names(
            "SELECT polname, NULL, pol.polroles = '{0}' AS r, CASE WHEN true THEN 1 END, pg_catalog.pg_get_expr(pol.polqual, pol.polrelid) FROM pg_catalog.pg_policy pol ORDER BY nosuch"
        ),
        ["polname", "?column?", "r", "case", "pg_get_expr"]
    );
    // An aggregate over an empty table has a row: bound as any query.
    assert_eq!(
        rows(&db, "SELECT count(*) FROM pg_catalog.pg_trigger"),
        ["0"]
    );
    // A right join keeps the other side's rows.
    assert_eq!(
        rows(
            &db,
            "SELECT n.nspname FROM pg_catalog.pg_policy p RIGHT JOIN pg_catalog.pg_namespace n ON p.oid = n.oid WHERE n.nspname = 'public'"
        ),
        ["public"]
    );
}

/// psql 15's queries for `\d INDEX` (`psql15_describe_index.sql`),
/// answered as PostgreSQL 15 answers them (checked there), but for the
/// oid: the last one reads EXISTS in its select list.
#[test]
fn psql_describe_index_queries_answer_as_postgresql_does() {
    let (_dir, db) = db();
    let queries = fixture(include_str!("psql15_describe_index.sql"), 16386);
    let expected = [
        vec!["16386|public|people_pkey"],
        vec!["0|i|false|false|false|false|false|false|false||0||p|n|btree"],
        vec!["id|bigint|yes|id"],
        vec!["true|true|false|true|false|false|false|false|btree|people|NULL"],
    ];
    assert_eq!(queries.len(), expected.len());
    for (q, want) in queries.iter().zip(expected) {
        assert_eq!(rows(&db, q), want, "{q}");
    }
}

/// The always empty catalog tables keep their columns' types where a
/// query reads them through a subquery or a derived table.
#[test]
fn empty_catalog_tables_keep_their_column_types() {
    let (_dir, db) = db();
    assert_eq!(
        rows(
            &db,
            "SELECT relname FROM pg_class WHERE relname = 'people' \
             AND oid NOT IN (SELECT polrelid FROM pg_policy)"
        ),
        ["people"]
    );
    assert!(
        rows(
            &db,
            "SELECT s.n + 1 FROM (SELECT tgrelid AS n FROM pg_trigger) s"
        )
        .is_empty()
    );
    let r = query_with(
        &db,
        "SELECT c.relname, (SELECT tgname FROM pg_trigger WHERE tgrelid = c.oid) \
         FROM pg_class c WHERE relname = 'people'",
        &QueryOptions::default(),
    )
    .unwrap();
    let names: Vec<&str> = r
        .schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(names, ["relname", "tgname"]);
    assert_eq!(rows_of(&r.batches)[0][1], None);
}

#[test]
fn psql_role_function_and_extension_lists_answer_from_the_catalog() {
    let (_d, db) = db();
    // psql 15's `\du`, verbatim: one role, no memberships.
    let du = "SELECT r.rolname, r.rolsuper, r.rolinherit,
  r.rolcreaterole, r.rolcreatedb, r.rolcanlogin,
  r.rolconnlimit, r.rolvaliduntil,
  ARRAY(SELECT b.rolname
        FROM pg_catalog.pg_auth_members m
        JOIN pg_catalog.pg_roles b ON (m.roleid = b.oid)
        WHERE m.member = r.oid) as memberof
, r.rolreplication
, r.rolbypassrls
FROM pg_catalog.pg_roles r
WHERE r.rolname !~ '^pg_'
ORDER BY 1";
    assert_eq!(
        rows(&db, du),
        ["sluice|true|true|false|false|true|-1|NULL|{}|false|false"]
    );
    // `\df`: the database has no functions of its own.
    let df = "SELECT n.nspname as \"Schema\", p.proname as \"Name\",
  pg_catalog.pg_get_function_result(p.oid) as \"Result data type\",
  pg_catalog.pg_get_function_arguments(p.oid) as \"Argument data types\"
FROM pg_catalog.pg_proc p
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
WHERE pg_catalog.pg_function_is_visible(p.oid)
      AND n.nspname <> 'pg_catalog'
ORDER BY 1, 2, 4";
    assert!(rows(&db, df).is_empty());
    assert_eq!(
        rows(&db, "SELECT count(*) FROM pg_catalog.pg_extension"),
        ["0"]
    );
    // `\l+`'s privilege test and sizes; a read-only server lets every
    // client read.
    assert_eq!(
        rows(
            &db,
            "SELECT d.datname, pg_catalog.has_database_privilege(d.datname, 'CONNECT'), \
             has_table_privilege('people', 'SELECT'), \
             has_schema_privilege('x', 'public', 'USAGE') FROM pg_catalog.pg_database d"
        ),
        ["sluice|true|true|true"]
    );
}

#[test]
fn jdbc_get_index_info_answers_as_postgresql_does() {
    let (_d, db) = db();
    // The PostgreSQL JDBC driver's getIndexInfo(null, null, "people",
    // false, false), verbatim (42.6).
    let sql = "SELECT     tmp.TABLE_CAT,     tmp.TABLE_SCHEM,     tmp.TABLE_NAME,     tmp.NON_UNIQUE,     tmp.INDEX_QUALIFIER,     tmp.INDEX_NAME,     tmp.TYPE,     tmp.ORDINAL_POSITION,     trim(both '\"' from pg_catalog.pg_get_indexdef(tmp.CI_OID, tmp.ORDINAL_POSITION, false)) AS COLUMN_NAME,   CASE tmp.AM_NAME     WHEN 'btree' THEN CASE tmp.I_INDOPTION[tmp.ORDINAL_POSITION - 1] & 1::smallint       WHEN 1 THEN 'D'       ELSE 'A'     END     ELSE NULL   END AS ASC_OR_DESC,     tmp.CARDINALITY,     tmp.PAGES,     tmp.FILTER_CONDITION FROM (SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM,   ct.relname AS TABLE_NAME, NOT i.indisunique AS NON_UNIQUE,   NULL AS INDEX_QUALIFIER, ci.relname AS INDEX_NAME,   CASE i.indisclustered     WHEN true THEN 1    ELSE CASE am.amname       WHEN 'hash' THEN 2      ELSE 3    END   END AS TYPE,   (information_schema._pg_expandarray(i.indkey)).n AS ORDINAL_POSITION,   ci.reltuples AS CARDINALITY,   ci.relpages AS PAGES,   pg_catalog.pg_get_expr(i.indpred, i.indrelid) AS FILTER_CONDITION,   ci.oid AS CI_OID,   i.indoption AS I_INDOPTION,   am.amname AS AM_NAME FROM pg_catalog.pg_class ct   JOIN pg_catalog.pg_namespace n ON (ct.relnamespace = n.oid)   JOIN pg_catalog.pg_index i ON (ct.oid = i.indrelid)   JOIN pg_catalog.pg_class ci ON (ci.oid = i.indexrelid)   JOIN pg_catalog.pg_am am ON (ci.relam = am.oid) WHERE true  AND n.nspname = E'public' AND ct.relname = E'people') AS tmp ORDER BY NON_UNIQUE, TYPE, INDEX_NAME, ORDINAL_POSITION";
    let got = rows(&db, sql);
    assert_eq!(got.len(), 1, "{got:?}");
    let cols: Vec<&str> = got[0].split('|').collect();
    assert_eq!(
        &cols[..10],
        [
            "NULL",
            "public",
            "people",
            "false",
            "NULL",
            "people_pkey",
            "3",
            "1",
            "id",
            "A"
        ],
        "{got:?}"
    );
    assert!(rows(&db, &sql.replace("E'people'", "E'tables'")).is_empty());
}
