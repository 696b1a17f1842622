//! What a PostgreSQL-protocol client sees of query errors and results:
//! each kind of error has its SQLSTATE, a stopped query fails (never a
//! partial answer), and a result with no rows still has its columns.

use sluice::query::{QueryOptions, Stop, query_with};
use sluice::store::Database;

use crate::common::{TempDir, load_bytes, opts};

fn table() -> TempDir {
    let dir = TempDir::new("sqlstate");
    let mut csv = String::from("k,v,d,t\n");
    for i in 0..5000 {
        csv.push_str(&format!(
            "{i},{}.25,2024-01-{:02},x{i}\n",
            i % 7,
            i % 28 + 1
        ));
    }
    load_bytes(
        &dir,
        "t",
        csv.as_bytes(),
        &opts("k BIGINT, v DECIMAL(10,2), d DATE, t TEXT"),
    )
    .unwrap();
    dir
}

fn state(db: &Database, sql: &str) -> (&'static str, String) {
    match query_with(db, sql, &QueryOptions::default()) {
        Ok(_) => panic!("{sql}: should fail"),
        Err(e) => (e.sqlstate(), e.to_string()),
    }
}

#[test]
fn each_error_has_its_sqlstate() {
    let dir = table();
    let db = Database::open(dir.path().join("db")).unwrap();
    let cases = [
        ("SELEC 1", "42601", "Expected"),
        ("SELECT k FROM nope", "42P01", "no table named \"nope\""),
        (
            "SELECT nope FROM t",
            "42703",
            "no column named \"nope\" in table t",
        ),
        (
            "SELECT k FROM t, LATERAL (SELECT 1) AS x",
            "0A000",
            "LATERAL is not supported",
        ),
        (
            "SELECT (SELECT k FROM t) FROM t",
            "21000",
            "more than one row returned by a subquery used as an expression",
        ),
        (
            "SELECT k FROM t, t AS u WHERE k = 1",
            "42702",
            "column reference \"k\" is ambiguous",
        ),
        (
            "SELECT k FROM t UNION SELECT t FROM t",
            "42804",
            "UNION types BIGINT and TEXT cannot be matched",
        ),
        ("SELECT k / (k - k) FROM t", "22012", "division by zero"),
        (
            "SELECT CAST(k * 1000000 AS INT) * 100000 FROM t",
            "22003",
            "out of range",
        ),
        ("SELECT sum(t) FROM t", "42804", ""),
        (
            "SELECT CAST(true AS BIGINT) FROM t",
            "42846",
            "cannot cast BOOLEAN to BIGINT",
        ),
    ];
    for (sql, code, text) in cases {
        let (got, msg) = state(&db, sql);
        assert_eq!(got, code, "{sql}: {msg}");
        assert!(msg.contains(text), "{sql}: {msg}");
    }
}

#[test]
fn a_stopped_query_fails_and_says_why() {
    let dir = table();
    let db = Database::open(dir.path().join("db")).unwrap();
    for (stop_it, why) in [
        (
            Stop::cancel as fn(&Stop),
            "canceling statement due to user request",
        ),
        (
            Stop::time_out,
            "canceling statement due to statement timeout",
        ),
    ] {
        for sql in [
            "SELECT count(*), sum(v) FROM t WHERE k > 3",
            "SELECT k, t FROM t ORDER BY v DESC LIMIT 3",
            "SELECT t FROM t WHERE k > 10",
        ] {
            let stop = Stop::default();
            stop_it(&stop);
            let o = QueryOptions {
                morsel_rows: Some(100),
                stop: Some(stop),
                ..Default::default()
            };
            match query_with(&db, sql, &o) {
                Ok(r) => panic!(
                    "{sql}: a stopped query answered {} batches",
                    r.batches.len()
                ),
                Err(e) => {
                    assert_eq!(e.sqlstate(), "57014");
                    assert_eq!(e.to_string(), why);
                }
            }
        }
    }
    // An unset flag changes nothing.
    let o = QueryOptions {
        stop: Some(Stop::default()),
        ..Default::default()
    };
    let r = query_with(&db, "SELECT count(*) FROM t", &o).unwrap();
    assert_eq!(r.batches[0].num_rows(), 1);
}

#[test]
fn an_empty_result_has_its_columns() {
    let dir = table();
    let db = Database::open(dir.path().join("db")).unwrap();
    let sql = "SELECT k, v * 2 AS w, d, t, k > 3 AS b FROM t WHERE k < 0";
    let p = sluice::query::plan::plan_sql(sql, &db).unwrap();
    let schema = sluice::query::exec::result_schema(&p);
    let got: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| format!("{} {}", f.name(), f.data_type()))
        .collect();
    assert_eq!(
        got,
        [
            "k Int64",
            "w Decimal128(38, 2)",
            "d Date32",
            "t Utf8",
            "b Boolean"
        ]
    );
    // And the columns a run gives agree with those known before it.
    let r = query_with(
        &db,
        &sql.replace("k < 0", "k < 2"),
        &QueryOptions::default(),
    )
    .unwrap();
    assert_eq!(r.schema.fields().len(), 5);
    for (a, b) in r.schema.fields().iter().zip(schema.fields()) {
        assert_eq!(a.data_type(), b.data_type(), "{}", a.name());
    }
    let agg = "SELECT t, count(*) AS n, sum(v) FROM t WHERE k < 0 GROUP BY t ORDER BY n";
    let p = sluice::query::plan::plan_sql(agg, &db).unwrap();
    let names: Vec<String> = sluice::query::exec::result_schema(&p)
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names.len(), 3);
    assert_eq!(names[0], "t");
    assert_eq!(names[1], "n");
}
