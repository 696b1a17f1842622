//! SQL answers are never silently wrong: -0.0 and NaN compare, group and
//! sort as SQL says, decimal division rounds, division by zero is an
//! error, and refused SQL says where.

use sluice::query::{QueryOptions, query_with};
use sluice::store::Database;

use crate::common::{TempDir, load_bytes, opts, rows_of};

/// A database with table `t` loaded from `csv` (header line included).
fn table(schema: &str, csv: &str) -> TempDir {
    let dir = TempDir::new("regq");
    load_bytes(&dir, "t", csv.as_bytes(), &opts(schema)).unwrap();
    dir
}

/// Each way a query runs: one worker, several workers with 1-row morsels
/// (partial aggregates merged across workers), and those yielding the CPU
/// between morsels as the server's scans do.
fn runs() -> [QueryOptions; 3] {
    [
        QueryOptions {
            threads: Some(1),
            morsel_rows: None,
            ..Default::default()
        },
        QueryOptions {
            threads: Some(4),
            morsel_rows: Some(1),
            ..Default::default()
        },
        QueryOptions {
            threads: Some(3),
            morsel_rows: Some(2),
            yield_between_morsels: true,
            ..Default::default()
        },
    ]
}

/// The rows of `sql`, NULL as "NULL"; the same on every run.
fn rows(dir: &TempDir, sql: &str) -> Vec<Vec<String>> {
    let db = Database::open(dir.path().join("db")).unwrap();
    let mut first: Option<Vec<Vec<String>>> = None;
    for o in runs() {
        let r = query_with(&db, sql, &o).unwrap_or_else(|e| panic!("{sql}: {e}"));
        let got: Vec<Vec<String>> = rows_of(&r.batches)
            .into_iter()
            .map(|r| {
                r.into_iter()
                    .map(|c| c.unwrap_or_else(|| "NULL".into()))
                    .collect()
            })
            .collect();
        match &first {
            None => first = Some(got),
            Some(f) => assert_eq!(&got, f, "{sql}: runs differ"),
        }
    }
    first.unwrap()
}

/// The one value of `sql`.
fn one(dir: &TempDir, sql: &str) -> String {
    let r = rows(dir, sql);
    assert_eq!(r.len(), 1, "{sql}: {r:?}");
    assert_eq!(r[0].len(), 1, "{sql}: {r:?}");
    r[0][0].clone()
}

/// The error of `sql`.
fn error(dir: &TempDir, sql: &str) -> String {
    let db = Database::open(dir.path().join("db")).unwrap();
    let mut first: Option<String> = None;
    for o in runs() {
        let e = match query_with(&db, sql, &o) {
            Ok(_) => panic!("{sql}: should fail"),
            Err(e) => e.to_string(),
        };
        match &first {
            None => first = Some(e),
            Some(f) => assert_eq!(&e, f, "{sql}: runs differ"),
        }
    }
    first.unwrap()
}

fn grid(v: &[&[&str]]) -> Vec<Vec<String>> {
    v.iter()
        .map(|r| r.iter().map(|c| c.to_string()).collect())
        .collect()
}

#[test]
fn negative_zero_equals_zero() {
    let dir = table("x DOUBLE", "x\n-0.0\n0.0\n1.5\n");
    let count = |w: &str| one(&dir, &format!("SELECT count(*) FROM t WHERE {w}"));
    assert_eq!(count("x = 0"), "2");
    assert_eq!(count("0 = x"), "2");
    assert_eq!(count("x = 0.0"), "2");
    assert_eq!(count("x = -0.0"), "2");
    assert_eq!(count("x = CAST('-0' AS DOUBLE)"), "2");
    assert_eq!(count("CAST('-0' AS DOUBLE) = x"), "2");
    assert_eq!(count("x < 0"), "0");
    assert_eq!(count("x <= 0"), "2");
    assert_eq!(count("x > CAST('-0' AS DOUBLE)"), "1");
    assert_eq!(count("x >= 0"), "3");
    assert_eq!(count("x <> 0"), "1");
    assert_eq!(count("x IN (0, 7)"), "2");
    assert_eq!(count("x BETWEEN 0 AND 0"), "2");
    assert_eq!(count("CASE x WHEN 0 THEN true ELSE false END"), "2");
    assert_eq!(
        one(&dir, "SELECT count(DISTINCT x) FROM t WHERE x < 1"),
        "1"
    );
    assert_eq!(
        rows(&dir, "SELECT x, count(*) FROM t GROUP BY x ORDER BY x"),
        grid(&[&["0", "2"], &["1.5", "1"]])
    );
    assert_eq!(
        rows(&dir, "SELECT min(x), max(x) FROM t WHERE x < 1"),
        grid(&[&["0", "0"]])
    );
    assert_eq!(
        rows(
            &dir,
            "SELECT count(*) FROM t GROUP BY x HAVING min(x) = 0 ORDER BY 1"
        ),
        grid(&[&["2"]])
    );
}

#[test]
fn nan_equals_nan_and_sorts_last() {
    // Three NaNs, one of them with the sign bit set.
    let dir = table(
        "k INT, x DOUBLE",
        "k,x\n1,NaN\n2,1\n3,-inf\n4,inf\n5,NaN\n6,-NaN\n7,\n",
    );
    let count = |w: &str| one(&dir, &format!("SELECT count(*) FROM t WHERE {w}"));
    assert_eq!(count("x = CAST('NaN' AS DOUBLE)"), "3");
    assert_eq!(count("CAST('NaN' AS DOUBLE) = x"), "3");
    assert_eq!(count("x <> CAST('NaN' AS DOUBLE)"), "3");
    assert_eq!(count("x > CAST('inf' AS DOUBLE)"), "3");
    assert_eq!(count("x >= CAST('NaN' AS DOUBLE)"), "3");
    assert_eq!(count("x < CAST('NaN' AS DOUBLE)"), "3");
    assert_eq!(count("x IN (CAST('NaN' AS DOUBLE))"), "3");
    assert_eq!(
        rows(&dir, "SELECT x, count(*) FROM t GROUP BY x ORDER BY x"),
        grid(&[
            &["-Infinity", "1"],
            &["1", "1"],
            &["Infinity", "1"],
            &["NaN", "3"],
            &["NULL", "1"]
        ])
    );
    assert_eq!(
        rows(&dir, "SELECT x FROM t ORDER BY x"),
        grid(&[
            &["-Infinity"],
            &["1"],
            &["Infinity"],
            &["NaN"],
            &["NaN"],
            &["NaN"],
            &["NULL"]
        ])
    );
    assert_eq!(
        rows(
            &dir,
            "SELECT x FROM t WHERE x IS NOT NULL ORDER BY x DESC LIMIT 4"
        ),
        grid(&[&["NaN"], &["NaN"], &["NaN"], &["Infinity"]])
    );
    assert_eq!(
        rows(&dir, "SELECT min(x), max(x), count(DISTINCT x) FROM t"),
        grid(&[&["-Infinity", "NaN", "4"]])
    );
}

#[test]
fn decimal_division_rounds_half_away_from_zero() {
    let dir = table(
        "d DECIMAL(10,2), i BIGINT",
        "d,i\n7101.11,7\n-7101.11,7\n2.00,3\n",
    );
    // 16 decimal places (as PostgreSQL's at least 16 significant
    // digits for a quotient near 1), the last digit rounded.
    assert_eq!(
        one(&dir, "SELECT CAST(2 AS DECIMAL(10,2)) / 3"),
        "0.6666666666666667"
    );
    assert_eq!(one(&dir, "SELECT 7101.11 / 7"), "1014.4442857142857143");
    assert_eq!(one(&dir, "SELECT -7101.11 / 7"), "-1014.4442857142857143");
    assert_eq!(one(&dir, "SELECT 7101.11 / -7"), "-1014.4442857142857143");
    // Exactly half at the cut: away from zero.
    for (sql, want) in [
        (
            "SELECT CAST(1 AS DECIMAL(5,0)) / 20000000000000000",
            "0.0000000000000001",
        ),
        (
            "SELECT CAST(-1 AS DECIMAL(5,0)) / 20000000000000000",
            "-0.0000000000000001",
        ),
        (
            "SELECT CAST(1 AS DECIMAL(5,0)) / -20000000000000000",
            "-0.0000000000000001",
        ),
    ] {
        assert_eq!(one(&dir, sql), want, "{sql}");
    }
    // Over columns, not only folded literals.
    assert_eq!(
        rows(&dir, "SELECT d / i, d / 3 FROM t ORDER BY d"),
        grid(&[
            &["-1014.4442857142857143", "-2367.0366666666666667"],
            &["0.6666666666666667", "0.6666666666666667"],
            &["1014.4442857142857143", "2367.0366666666666667"]
        ])
    );
    // A smaller scale in CAST rounds the same way.
    assert_eq!(one(&dir, "SELECT CAST(1.005 AS DECIMAL(5,2))"), "1.01");
    assert_eq!(one(&dir, "SELECT CAST(-1.005 AS DECIMAL(5,2))"), "-1.01");
    assert_eq!(one(&dir, "SELECT CAST(1.004 AS DECIMAL(5,2))"), "1.00");
    assert_eq!(
        rows(&dir, "SELECT CAST(d AS DECIMAL(10,1)) FROM t ORDER BY d"),
        grid(&[&["-7101.1"], &["2.0"], &["7101.1"]])
    );
    assert_eq!(
        one(
            &dir,
            "SELECT CAST(CAST('1.005' AS DOUBLE) AS DECIMAL(10,2))"
        ),
        "1.01"
    );
}

#[test]
fn division_by_zero_is_an_error() {
    let dir = table(
        "score DOUBLE, n BIGINT, d DECIMAL(10,2)",
        "score,n,d\n1.5,3,2.50\n,,\n",
    );
    for sql in [
        "SELECT score / 0 FROM t",
        "SELECT score / 0.0 FROM t",
        "SELECT score / CAST(0 AS DOUBLE) FROM t",
        "SELECT score / CAST('-0' AS DOUBLE) FROM t",
        "SELECT score / (score - score) FROM t",
        "SELECT n / 0 FROM t",
        "SELECT d / 0 FROM t",
        "SELECT d / (d - d) FROM t",
        "SELECT sum(score / 0) FROM t",
    ] {
        assert_eq!(error(&dir, sql), "division by zero", "{sql}");
    }
    // Folded while planning, the division says where it is.
    assert_eq!(
        error(&dir, "SELECT 1,\n 1.5 / 0"),
        "division by zero at line 2, column 2"
    );
    assert_eq!(
        error(&dir, "SELECT 2.5e0 / 0"),
        "division by zero at line 1, column 8"
    );
    // A NULL side is NULL, not an error (as in PostgreSQL).
    assert_eq!(
        rows(&dir, "SELECT score / 0, d / 0 FROM t WHERE score IS NULL"),
        grid(&[&["NULL", "NULL"]])
    );
    // Rows a filter drops never fail the query.
    assert_eq!(one(&dir, "SELECT count(*) FROM t WHERE score / n > 0"), "1");
}

#[test]
fn unsupported_sql_names_line_and_column() {
    let dir = table("a INT, score DOUBLE, s TEXT", "a,score,s\n1,1.5,x\n");
    assert_eq!(
        error(&dir, "INSERT INTO t VALUES (1, 2.0, 'y')"),
        "only SELECT and EXPLAIN SELECT are supported, not INSERT at line 1, column 1"
    );
    assert_eq!(
        error(&dir, "\n  DELETE FROM t"),
        "only SELECT and EXPLAIN SELECT are supported, not DELETE at line 2, column 3"
    );
    assert_eq!(
        error(&dir, "SELECT a FROM t,\n LATERAL (SELECT 1) AS x"),
        "LATERAL is not supported at line 2, column 11"
    );
    assert_eq!(
        error(
            &dir,
            "SELECT a FROM t GROUP BY\n GROUPING SETS ((a), CUBE (a))"
        ),
        "ROLLUP, CUBE or GROUPING SETS nested in another is not supported at line 2, column 22"
    );
    assert_eq!(
        error(&dir, "VALUES (1)"),
        "VALUES is not supported at line 1, column 1"
    );
    // A CAST that fails while running says where it is.
    assert_eq!(
        error(&dir, "SELECT a,\n  CAST(s AS INT) FROM t"),
        "cannot cast \"x\" to INT: not an integer at line 2, column 3"
    );
    // ... and names the type as written, not as evaluated.
    assert_eq!(
        error(&dir, "SELECT CAST(score * 1e9 AS DECIMAL(10,2)) FROM t"),
        "value out of range for DECIMAL(10,2) at line 1, column 8"
    );
    assert_eq!(
        error(&dir, "SELECT CAST(CAST('nan' AS DOUBLE) AS DECIMAL(10,2))"),
        "cannot cast NaN to DECIMAL(10,2) at line 1, column 8"
    );
    assert_eq!(
        error(&dir, "SELECT CAST(s AS DECIMAL(10,2)) FROM t"),
        "cannot cast \"x\" to DECIMAL(10,2): not a decimal number at line 1, column 8"
    );
    assert_eq!(
        error(&dir, "SELECT CAST(a > 0 AS DECIMAL(10,2)) FROM t"),
        "cannot cast BOOLEAN to DECIMAL(10,2) at line 1, column 8"
    );
    // The parser's own errors say where in the same words.
    assert_eq!(
        error(&dir, "SELECT a\n FROM t WHER a = 1"),
        "sql parser error: Expected: end of statement, found: a at line 2, column 14"
    );
    assert_eq!(
        error(&dir, "SELECT a FROM t WHERE"),
        "sql parser error: Expected: an expression, found: EOF"
    );
}

#[test]
fn decimal_cast_checks_the_written_precision() {
    let dir = table("d DECIMAL(10,2)", "d\n123.45\n");
    assert_eq!(one(&dir, "SELECT CAST(d AS DECIMAL(5,2)) FROM t"), "123.45");
    assert_eq!(one(&dir, "SELECT CAST(d AS DECIMAL(4,1)) FROM t"), "123.5");
    assert_eq!(
        error(&dir, "SELECT CAST(d AS DECIMAL(4,2)) FROM t"),
        "value out of range for DECIMAL(4,2) at line 1, column 8"
    );
    assert_eq!(
        error(&dir, "SELECT CAST(123.45 AS DECIMAL(4,2))"),
        "value out of range for DECIMAL(4,2) at line 1, column 8"
    );
    // The outer CAST of two that start at one place.
    assert_eq!(
        error(
            &dir,
            "SELECT 1, CAST(CAST(d AS DECIMAL(10,1)) AS DECIMAL(2,0)) FROM t"
        ),
        "value out of range for DECIMAL(2,0) at line 1, column 11"
    );
    assert_eq!(
        error(
            &dir,
            "SELECT 1, CAST( CAST(d AS DECIMAL(3,1)) + 1 AS DECIMAL(10,2)) FROM t"
        ),
        "value out of range for DECIMAL(3,1) at line 1, column 17"
    );
    assert_eq!(
        error(&dir, "SELECT d::DECIMAL(3,1) FROM t"),
        "value out of range for DECIMAL(3,1) at line 1, column 8"
    );
}

#[test]
fn negative_zero_agrees_with_sqlite() {
    let values = [
        Some(-0.0),
        Some(0.0),
        Some(0.5),
        None,
        Some(-1.5),
        Some(-0.0),
        Some(0.0),
    ];
    let mut csv = String::from("k,x\n");
    for (k, v) in values.iter().enumerate() {
        let x = v.map(|x: f64| format!("{x:?}")).unwrap_or_default();
        csv.push_str(&format!("{k},{x}\n"));
    }
    let dir = table("k INT, x DOUBLE", &csv);
    let lite = rusqlite::Connection::open_in_memory().unwrap();
    lite.execute("CREATE TABLE t (k INTEGER, x REAL)", [])
        .unwrap();
    for (k, v) in values.iter().enumerate() {
        lite.execute(
            "INSERT INTO t VALUES (?1, ?2)",
            rusqlite::params![k as i64, v],
        )
        .unwrap();
    }
    let number = |s: &str| -> Option<f64> { s.parse().ok() };
    for sql in [
        "SELECT count(*) FROM t WHERE x = 0",
        "SELECT count(*) FROM t WHERE x < 0",
        "SELECT count(*) FROM t WHERE x <= 0",
        "SELECT count(*) FROM t WHERE x > -0.0",
        "SELECT count(*) FROM t WHERE x IN (0)",
        "SELECT count(DISTINCT x) FROM t",
        "SELECT x, count(*) FROM t GROUP BY x ORDER BY x NULLS LAST",
        "SELECT min(x), max(x) FROM t WHERE x >= 0",
        "SELECT k FROM t WHERE x = 0 ORDER BY k",
    ] {
        let ours = rows(&dir, sql);
        let mut stmt = lite.prepare(sql).unwrap();
        let n = stmt.column_count();
        let theirs: Vec<Vec<String>> = stmt
            .query_map([], |row| {
                (0..n)
                    .map(|c| {
                        Ok(match row.get_ref(c)? {
                            rusqlite::types::ValueRef::Null => "NULL".to_string(),
                            rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                            rusqlite::types::ValueRef::Real(v) => v.to_string(),
                            other => format!("{other:?}"),
                        })
                    })
                    .collect()
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        // Numbers compare by value: -0 and 0 print differently and are equal.
        let same = ours.len() == theirs.len()
            && ours.iter().zip(&theirs).all(|(a, b)| {
                a.iter()
                    .zip(b)
                    .all(|(x, y)| x == y || (number(x).is_some() && number(x) == number(y)))
            });
        assert!(same, "{sql}\nsluice: {ours:?}\nsqlite: {theirs:?}");
    }
}

/// ORDER BY … LIMIT keeps each morsel's first rows and merges them; rows
/// tied on the sort keys come in table order, as a stable sort of every
/// row would give them, whatever the workers and morsels.
#[test]
fn a_limited_order_breaks_ties_by_table_order() {
    let mut csv = String::from("id,g\n");
    for id in 1..=200 {
        csv.push_str(&format!("{id},{}\n", id % 3));
    }
    let dir = table("id INT, g INT", &csv);
    let mut stable: Vec<i64> = (1..=200).collect();
    stable.sort_by_key(|id| id % 3);
    for (sql, from) in [
        ("SELECT id FROM t ORDER BY g LIMIT 5 OFFSET 2", 2),
        ("SELECT id FROM t ORDER BY g DESC LIMIT 4", 0),
        ("SELECT id FROM t WHERE id > 100 ORDER BY g LIMIT 3", 0),
    ] {
        let mut want: Vec<i64> = if sql.contains("DESC") {
            let mut s: Vec<i64> = (1..=200).collect();
            s.sort_by_key(|id| std::cmp::Reverse(id % 3));
            s
        } else if sql.contains("id > 100") {
            stable.iter().copied().filter(|&id| id > 100).collect()
        } else {
            stable.clone()
        };
        want = want.into_iter().skip(from).collect();
        want.truncate(rows(&dir, sql).len());
        let got: Vec<i64> = rows(&dir, sql)
            .iter()
            .map(|r| r[0].parse().unwrap())
            .collect();
        assert_eq!(got, want, "{sql}");
    }
    // A limit past the rows, and LIMIT 0.
    assert_eq!(
        rows(&dir, "SELECT id FROM t ORDER BY g LIMIT 1000").len(),
        200
    );
    assert!(rows(&dir, "SELECT id FROM t ORDER BY g LIMIT 0").is_empty());
}

/// The threshold of ORDER BY … LIMIT on a stored DECIMAL or DOUBLE
/// column (compared before the projection) keeps NULLs, NaN and -0.0
/// where the order puts them.
#[test]
fn a_limited_order_over_decimals_and_doubles_keeps_nulls_and_nan() {
    let mut csv = String::from("id,d,x\n");
    // d: NULL every 5th row; x: NaN every 7th, -0.0 every 11th.
    for id in 0..300i64 {
        let d = if id % 5 == 0 {
            String::new()
        } else {
            format!("{}.{:02}", (id * 37) % 101, id % 100)
        };
        let x = if id % 7 == 0 {
            "NaN".to_string()
        } else if id % 11 == 0 {
            "-0.0".to_string()
        } else {
            format!("{}", ((id * 53) % 97) as f64 / 4.0 - 10.0)
        };
        csv.push_str(&format!("{id},{d},{x}\n"));
    }
    let dir = table("id INT, d DECIMAL(10,2), x DOUBLE", &csv);
    // The same query without LIMIT gives the full order: the limited one
    // must be its first rows.
    for (order, k) in [
        ("d DESC NULLS LAST, id", 7),
        ("d NULLS FIRST, id", 65),
        ("d DESC NULLS FIRST, id", 3),
        ("x DESC, id", 50),
        ("x, id", 20),
    ] {
        let all = rows(&dir, &format!("SELECT id, d, x FROM t ORDER BY {order}"));
        let top = rows(
            &dir,
            &format!("SELECT id, d, x FROM t ORDER BY {order} LIMIT {k}"),
        );
        assert_eq!(top, all[..k].to_vec(), "ORDER BY {order} LIMIT {k}");
    }
}

/// `x = a OR x = b OR x = c` is bound as `x IN (a, b, c)` (a set lookup,
/// not a comparison a term): the same answers, NULLs included.
#[test]
fn or_of_equalities_answers_as_written() {
    let dir = table("k INT, i BIGINT", "k,i\n1,1\n2,2\n3,3\n4,\n");
    assert_eq!(
        one(&dir, "SELECT count(*) FROM t WHERE i = 1 OR i = 2 OR i = 5"),
        "2"
    );
    assert_eq!(
        rows(&dir, "SELECT i = 1 OR i = 2 OR i = 5 FROM t ORDER BY k"),
        grid(&[&["true"], &["true"], &["false"], &["NULL"]])
    );
    // A NULL among the values: what is not found is NULL, not false.
    assert_eq!(
        rows(&dir, "SELECT i = 1 OR i = NULL OR i = 5 FROM t ORDER BY k"),
        grid(&[&["true"], &["NULL"], &["NULL"], &["NULL"]])
    );
    assert_eq!(
        rows(
            &dir,
            "SELECT NOT (i = 1 OR i = 2 OR i = 5) FROM t ORDER BY k"
        ),
        grid(&[&["false"], &["false"], &["true"], &["NULL"]])
    );
    // Mixed columns or operators stay an OR.
    assert_eq!(
        one(&dir, "SELECT count(*) FROM t WHERE i = 1 OR k = 2 OR i > 2"),
        "3"
    );
    let db = Database::open(dir.path().join("db")).unwrap();
    let plan = query_with(
        &db,
        "EXPLAIN SELECT count(*) FROM t WHERE i = 1 OR i = 2 OR i = 5",
        &QueryOptions::default(),
    )
    .unwrap()
    .explain
    .unwrap();
    assert!(plan.contains("Filter: i IN (1, 2, 5)"), "{plan}");
}

/// A list of 8 or more literals is bound a type at a time, but what it
/// answers and which item its error names are those of the same list
/// bound an item at a time (a list of 7): the first item at fault.
#[test]
fn long_in_lists_fail_where_short_ones_do() {
    let dir = table("i INT, dt DATE", "i,dt\n1,2020-01-01\n2,2020-01-04\n,\n");
    for (head, tail) in [
        ("dt IN ('2020-01-01', 'bad', 5", ""),
        ("i IN (1, 'x', 3, 4, 1e999", ""),
        ("dt IN ('2020-01-01', '2020-02-30', -'x'", ""),
        ("dt IN ('2020-01-01', 5, 'bad'", ""),
    ] {
        let short = format!("SELECT i FROM t WHERE {head}, 6, 7, 8, 9{tail})");
        let long = format!("SELECT i FROM t WHERE {head}, 6, 7, 8, 9, 10, 11, 12{tail})");
        let (a, b) = (error(&dir, &short), error(&dir, &long));
        // The same message about the same item (its column is the same
        // in both: the lists differ only after it).
        assert_eq!(a, b, "{short} / {long}");
    }
    // And answers as the short list does.
    let short = "SELECT i FROM t WHERE dt IN ('2020-01-04', NULL, '2020-01-09', '2021-01-01', '2022-01-01', '2023-01-01', '2024-01-01')";
    let long = format!(
        "{}, '2025-01-01', '2026-01-01')",
        short.trim_end_matches(')')
    );
    assert_eq!(rows(&dir, short), rows(&dir, &long));
    assert_eq!(rows(&dir, short), grid(&[&["2"]]));
}
