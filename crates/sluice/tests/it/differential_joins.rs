//! Differential test of joins and subqueries: random queries over three
//! random tables with NULLs and repeated keys, run by sluice (several
//! workers, tiny morsels; tables in tiny segments, and in shards, every
//! other round) and by SQLite (bundled), must give the same rows.
//!
//! The shapes: inner, LEFT, RIGHT and FULL joins on one or two keys
//! (integer or TEXT) with extra ON conditions, comma joins with WHERE,
//! three-way joins, `USING`, non-equality conditions, `[NOT] EXISTS`
//! (correlated by equality and by `<>`), `[NOT] IN (SELECT …)` over
//! sets with and without NULLs, scalar subqueries (uncorrelated, and
//! correlated by equality), derived tables and CTEs, set operations and
//! SELECT DISTINCT; the results
//! projected and ordered by every column (NULLS placed explicitly), or
//! grouped and compared as sets (grouped by one item's TEXT column with
//! aggregates of another's, every other time: eager aggregation).

use sluice::load::{Header, LoadOptions, load};
use sluice::query::{QueryOptions, query_with};
use sluice::source::Input;
use sluice::store::Database;

use crate::common::TempDir;
use crate::differential::{Rng, assert_same, rows_of, sqlite_rows};

type Row = (Option<i64>, Option<i64>, Option<&'static str>);

fn random_rows(rng: &mut Rng, n: usize) -> Vec<Row> {
    let texts = ["a", "b", "c", "ab", ""];
    (0..n)
        .map(|_| {
            let a = (rng.below(7) != 0).then(|| rng.below(8) as i64);
            let b = (rng.below(5) != 0).then(|| rng.below(5) as i64 - 1);
            let s = (rng.below(6) != 0).then(|| texts[rng.below(texts.len() as u64) as usize]);
            (a, b, s)
        })
        .collect()
}

/// A condition on one table's columns (`q`: its name).
fn local(rng: &mut Rng, q: &str) -> String {
    match rng.below(6) {
        0 => format!("{q}.a > {}", rng.below(6)),
        1 => format!("{q}.b IS NOT NULL"),
        2 => format!("{q}.s IN ('a', 'ab')"),
        3 => format!("{q}.s LIKE '%b%'"),
        4 => format!("({q}.a < 3 OR {q}.b = 1)"),
        _ => format!("{q}.b <> {}", rng.below(3)),
    }
}

/// An equality joining `l` and `r`.
fn key(rng: &mut Rng, l: &str, r: &str) -> String {
    match rng.below(5) {
        0 | 1 => format!("{l}.a = {r}.a"),
        2 => format!("{l}.b = {r}.a"),
        3 => format!("{l}.s = {r}.s"),
        _ => format!("{l}.a = {r}.a AND {l}.s = {r}.s"),
    }
}

/// A random FROM clause, the WHERE conditions it comes with, and the
/// names of its items.
fn random_from(rng: &mut Rng) -> (String, Vec<String>, Vec<&'static str>) {
    match rng.below(15) {
        0 | 1 => (
            format!("t1 JOIN t2 ON {}", key(rng, "t1", "t2")),
            vec![],
            vec!["t1", "t2"],
        ),
        2 => (
            format!(
                "t1 LEFT JOIN t2 ON {} AND {}",
                key(rng, "t1", "t2"),
                local(rng, "t2")
            ),
            vec![],
            vec!["t1", "t2"],
        ),
        3 => (
            format!("t1 LEFT JOIN t2 ON {}", key(rng, "t1", "t2")),
            vec![local(rng, "t1")],
            vec!["t1", "t2"],
        ),
        4 => (
            format!("t1 RIGHT JOIN t2 ON {}", key(rng, "t1", "t2")),
            vec![],
            vec!["t1", "t2"],
        ),
        5 => (
            format!("t1 FULL JOIN t2 ON {}", key(rng, "t1", "t2")),
            vec![],
            vec!["t1", "t2"],
        ),
        6 => (
            "t1, t2, t3".into(),
            vec![key(rng, "t1", "t2"), key(rng, "t2", "t3")],
            vec!["t1", "t2", "t3"],
        ),
        7 => (
            format!(
                "t1 JOIN t2 ON {} LEFT JOIN t3 ON {}",
                key(rng, "t1", "t2"),
                key(rng, "t2", "t3")
            ),
            vec![],
            vec!["t1", "t2", "t3"],
        ),
        8 => (
            "t1 JOIN t2 ON t1.a < t2.b".into(),
            vec![local(rng, "t2")],
            vec!["t1", "t2"],
        ),
        9 => ("t1 JOIN t2 USING (s)".into(), vec![], vec!["t1", "t2"]),
        10 => (
            "(SELECT a, s, count(*) AS b FROM t2 GROUP BY a, s) AS d JOIN t1 ON d.a = t1.a".into(),
            vec![],
            vec!["d", "t1"],
        ),
        // Stars: every other item keyed by t1's own columns (joined as
        // one chain of row numbers), with a condition over two of them.
        12 => (
            "t1, t2, t3".into(),
            vec![key(rng, "t1", "t2"), key(rng, "t1", "t3")],
            vec!["t1", "t2", "t3"],
        ),
        13 => (
            format!(
                "t1 JOIN t2 ON {} JOIN t3 ON {} AND t2.b <> t3.b JOIN t2 AS u ON t1.b = u.a",
                key(rng, "t1", "t2"),
                key(rng, "t1", "t3")
            ),
            vec![],
            vec!["t1", "t2", "t3", "u"],
        ),
        _ => ("t1".into(), vec![], vec!["t1"]),
    }
}

fn random_query(rng: &mut Rng) -> (String, bool) {
    let cols = |qs: &[&str]| -> Vec<String> {
        qs.iter()
            .flat_map(|q| ["a", "b", "s"].map(|c| format!("{q}.{c}")))
            .collect()
    };
    if rng.below(8) == 0 {
        // A set operation (SQLite has no INTERSECT ALL / EXCEPT ALL).
        let op = rng.pick(&["UNION", "UNION ALL", "INTERSECT", "EXCEPT"]);
        let c = rng.pick(&["a", "b", "a, s", "s"]);
        let d = match c {
            "a" | "b" => rng.pick(&["a", "b"]),
            "s" => "s",
            _ => "b, s",
        };
        return (
            format!(
                "SELECT {c} FROM t1 WHERE {} {op} SELECT {d} FROM t2 WHERE {}",
                local(rng, "t1"),
                local(rng, "t2")
            ),
            false,
        );
    }
    if rng.below(10) == 0 {
        let c = rng.pick(&["t1.a", "t1.s, t2.b", "t2.s"]);
        return (
            format!(
                "SELECT DISTINCT {c} FROM t1 JOIN t2 ON {}",
                key(rng, "t1", "t2")
            ),
            false,
        );
    }
    let (from, mut wheres, tables) = random_from(rng);
    // Subquery conditions.
    match rng.below(10) {
        0 => wheres.push(format!(
            "EXISTS (SELECT 1 FROM t3 WHERE t3.a = t1.a AND {})",
            local(rng, "t3")
        )),
        1 => wheres.push("NOT EXISTS (SELECT 1 FROM t3 WHERE t3.s = t1.s)".into()),
        2 => wheres.push("EXISTS (SELECT 1 FROM t3 WHERE t3.a = t1.a AND t3.b <> t1.b)".into()),
        3 => wheres.push(format!(
            "t1.a IN (SELECT t3.b FROM t3 WHERE {})",
            local(rng, "t3")
        )),
        // NOT IN over a set that may hold NULL (t3.a and t3.b have some).
        4 => wheres.push(format!(
            "t1.b NOT IN (SELECT t3.{} FROM t3 WHERE {})",
            rng.pick(&["a", "b"]),
            local(rng, "t3")
        )),
        5 => wheres
            .push("t1.a NOT IN (SELECT t3.a FROM t3 WHERE t3.a IS NOT NULL AND t3.b = 1)".into()),
        6 => wheres.push("t1.a >= (SELECT avg(t3.a) FROM t3)".into()),
        7 => wheres.push("t1.a >= (SELECT max(t3.b) FROM t3 WHERE t3.s = t1.s)".into()),
        _ => {}
    }
    let where_ = if wheres.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", wheres.join(" AND "))
    };
    let with = if rng.below(6) == 0 {
        "WITH t3 AS (SELECT a, b, s FROM t2 WHERE b IS NOT NULL) "
    } else {
        ""
    };
    if rng.below(2) == 0 {
        let items = if from.contains("USING") {
            vec!["s".to_string(), "t1.a".into(), "t2.b".into()]
        } else {
            cols(&tables)
        };
        let order: Vec<String> = (1..=items.len())
            .map(|p| format!("{p} {} NULLS FIRST", rng.pick(&["ASC", "DESC"])))
            .collect();
        (
            format!(
                "{with}SELECT {} FROM {from}{where_} ORDER BY {}",
                items.join(", "),
                order.join(", ")
            ),
            true,
        )
    } else {
        let last = tables[tables.len() - 1];
        let key = format!("{}.s", tables[0]);
        // Every other time the aggregates read only the last item, so
        // that the first is grouped by alone (eager aggregation lifts
        // it above a partial aggregate of the others).
        let aggs = if rng.below(2) == 0 {
            format!("count({last}.a), sum({}.a), max({last}.b)", tables[0])
        } else {
            format!("count({last}.a), sum({last}.a), avg({last}.b), min({last}.s), max({last}.b)")
        };
        (
            format!("{with}SELECT {key}, count(*), {aggs} FROM {from}{where_} GROUP BY {key}"),
            false,
        )
    }
}

/// Loads t1, t2 and t3 (random rows) into a database in `dir`, and the
/// same rows into SQLite.
fn tables(rng: &mut Rng, dir: &TempDir, round: usize) -> (Database, rusqlite::Connection) {
    let mut db = Database::open_writer(dir.path().join("db")).unwrap();
    let lite = rusqlite::Connection::open_in_memory().unwrap();
    // t3 (the subqueries' table) smaller, then larger, than the rows it
    // filters: semi joins hash either side.
    let t3 = if round.is_multiple_of(2) { 15 } else { 90 };
    for (t, n) in [("t1", 25 + 10 * round), ("t2", 20 + 5 * round), ("t3", t3)] {
        let rows = random_rows(rng, n);
        let mut csv = String::from("a,b,s\n");
        for (a, b, s) in &rows {
            let f = |v: &Option<i64>| v.map(|x| x.to_string()).unwrap_or_default();
            let s = s.map(|x| format!("\"{x}\"")).unwrap_or_default();
            csv.push_str(&format!("{},{},{}\n", f(a), f(b), s));
        }
        let file = dir.write(&format!("{t}.csv"), csv.as_bytes());
        let o = LoadOptions {
            schema: Some("a INT, b BIGINT, s TEXT".parse().unwrap()),
            header: Header::Yes,
            shards: (round % 3 == 2).then_some(3),
            ..Default::default()
        };
        let o = if round % 2 == 1 {
            crate::common::tiny_layout(o)
        } else {
            o
        };
        load(&mut db, t, &[Input::File(file)], &o).unwrap();
        lite.execute(
            &format!("CREATE TABLE {t} (a INTEGER, b INTEGER, s TEXT)"),
            [],
        )
        .unwrap();
        for (a, b, s) in &rows {
            lite.execute(
                &format!("INSERT INTO {t} VALUES (?1, ?2, ?3)"),
                rusqlite::params![a, b, s],
            )
            .unwrap();
        }
    }
    drop(db);
    (Database::open(dir.path().join("db")).unwrap(), lite)
}

/// Ternary logic partitioning (a metamorphic check, no reference
/// engine): the rows of a join are those where a condition `p` is true,
/// those where it is false and those where it is NULL, no more, no less.
#[test]
fn join_rows_split_by_any_condition_into_true_false_and_null() {
    let mut rng = Rng(0x7e12_0077);
    let mut checked = 0;
    for round in 0..4 {
        let dir = TempDir::new("tlp");
        let (db, _) = tables(&mut rng, &dir, round);
        for _ in 0..40 {
            let (from, wheres, items) = random_from(&mut rng);
            let q = items[rng.below(items.len() as u64) as usize];
            let p = match rng.below(3) {
                0 => local(&mut rng, q),
                1 => format!("{}.a < {}.b", items[0], items[items.len() - 1]),
                _ => format!("{q}.s = 'a' OR {q}.a > 4"),
            };
            let opts = QueryOptions {
                threads: Some(2),
                morsel_rows: Some(1 + rng.below(7) as usize),
                // Every other round: the joins' rows on disk, inner
                // joins by partitions (grace), as past a memory limit.
                join_rows_on_disk: round % 2 == 1,
                ..Default::default()
            };
            let count = |extra: Option<String>| -> i64 {
                let mut w = wheres.clone();
                w.extend(extra);
                let sql = if w.is_empty() {
                    format!("SELECT count(*) FROM {from}")
                } else {
                    format!("SELECT count(*) FROM {from} WHERE {}", w.join(" AND "))
                };
                let r = query_with(&db, &sql, &opts)
                    .unwrap_or_else(|e| panic!("sluice failed on {sql}: {e}"));
                rows_of(&r)[0][0].parse().unwrap()
            };
            let all = count(None);
            let parts = count(Some(format!("({p})")))
                + count(Some(format!("NOT ({p})")))
                + count(Some(format!("({p}) IS NULL")));
            assert_eq!(all, parts, "FROM {from} WHERE {wheres:?}, p = {p}");
            checked += 1;
        }
    }
    assert_eq!(checked, 160);
}

#[test]
fn random_joins_and_subqueries_agree_with_sqlite() {
    let mut rng = Rng(0x0901_2345);
    let mut checked = 0;
    for round in 0..6 {
        let dir = TempDir::new("diffjoin");
        let (db, lite) = tables(&mut rng, &dir, round);
        for _ in 0..60 {
            let (sql, ordered) = random_query(&mut rng);
            let opts = QueryOptions {
                threads: Some(3),
                morsel_rows: Some(1 + rng.below(9) as usize),
                // Every other round: the joins' rows on disk, inner
                // joins by partitions (grace), as past a memory limit.
                join_rows_on_disk: round % 2 == 1,
                ..Default::default()
            };
            let r = query_with(&db, &sql, &opts)
                .unwrap_or_else(|e| panic!("sluice failed on {sql}: {e}"));
            let ours = rows_of(&r);
            let theirs = sqlite_rows(&lite, &sql);
            assert_same(&sql, ours, theirs, ordered);
            checked += 1;
        }
    }
    assert_eq!(checked, 360);
}
