//! Differential test of conditions moved into subqueries: random WHERE
//! conditions on the rows of random subqueries and CTEs — UNION ALL
//! branches with a constant column, UNION, GROUP BY (conditions on keys
//! and on aggregates), a global aggregate, DISTINCT, LIMIT, a LEFT JOIN
//! (its NULL-filled side), a window function, EXCEPT, INTERSECT, a CTE
//! read twice — run by sluice (several workers, tiny morsels; tiny
//! segments with dictionary-encoded TEXT every other round, shards in
//! one) and by SQLite (bundled) on the same rows, compared unordered.
//! A condition moved past what changes its answer (below a LIMIT, into
//! the NULL-filled side of an outer join, below an aggregate it reads)
//! gives other rows than SQLite's.

use sluice::load::{Header, LoadOptions, load};
use sluice::query::{QueryOptions, query_with};
use sluice::source::Input;
use sluice::store::Database;

use crate::common::TempDir;
use crate::differential::{Rng, assert_same, random_tables, rows_of, sqlite_rows};

/// The subqueries: SQL and their columns (integer or text).
const VIEWS: [(&str, &[(&str, bool)]); 12] = [
    (
        "SELECT i, j, s, 'a' AS tag FROM t UNION ALL SELECT j, i, s, 'b' FROM t WHERE id % 3 = 0",
        &[("i", true), ("j", true), ("s", false), ("tag", false)],
    ),
    (
        "SELECT i, s FROM t UNION SELECT j, s FROM t",
        &[("i", true), ("s", false)],
    ),
    (
        "SELECT s, i, count(*) AS n, sum(j) AS sj FROM t GROUP BY s, i",
        &[("s", false), ("i", true), ("n", true), ("sj", true)],
    ),
    (
        "SELECT count(*) AS n, sum(i) AS si FROM t WHERE j > 1",
        &[("n", true), ("si", true)],
    ),
    ("SELECT DISTINCT i, s FROM t", &[("i", true), ("s", false)]),
    (
        "SELECT i, s FROM t ORDER BY id LIMIT 7",
        &[("i", true), ("s", false)],
    ),
    (
        "SELECT a.i AS i, b.j AS j, b.s AS s FROM t a LEFT JOIN t b ON a.id = b.i",
        &[("i", true), ("j", true), ("s", false)],
    ),
    (
        "SELECT i, s, row_number() OVER (PARTITION BY s ORDER BY id) AS rn FROM t",
        &[("i", true), ("s", false), ("rn", true)],
    ),
    (
        "SELECT i, s FROM t EXCEPT SELECT j, s FROM t",
        &[("i", true), ("s", false)],
    ),
    (
        "SELECT i, s FROM t INTERSECT SELECT j, s FROM t",
        &[("i", true), ("s", false)],
    ),
    (
        "SELECT x.i AS i, y.s AS s, x.j + y.j AS jj FROM t x, t y WHERE x.id = y.j",
        &[("i", true), ("s", false), ("jj", true)],
    ),
    (
        "SELECT k, tot FROM (SELECT s AS k, sum(i) AS tot FROM t GROUP BY s UNION ALL SELECT 'all', sum(i) FROM t) q",
        &[("k", false), ("tot", true)],
    ),
];

/// One condition on a column of `cols` (prefixed by `q`).
fn atom(rng: &mut Rng, q: &str, cols: &[(&str, bool)]) -> String {
    let (c, int) = cols[rng.below(cols.len() as u64) as usize];
    let c = format!("{q}{c}");
    match rng.below(8) {
        0 => format!("{c} IS NULL"),
        1 => format!("{c} IS NOT NULL"),
        2 => rng.pick(&["1 = 0", "1 = 1", "NULL IS NULL"]).to_string(),
        _ if int => {
            let k = rng.below(21) as i64 - 10;
            match rng.below(4) {
                0 => format!("{c} > {k}"),
                1 => format!("{c} + 1 <= {k}"),
                2 => format!("{c} = {}", k.rem_euclid(5)),
                _ => format!("{c} BETWEEN {} AND {}", k - 3, k + 3),
            }
        }
        _ => {
            let v = rng.pick(&["a", "b", "c", "ab", ""]);
            match rng.below(3) {
                0 => format!("{c} = '{v}'"),
                1 => format!("{c} > '{v}'"),
                _ => format!("{c} IN ('{v}', 'b')"),
            }
        }
    }
}

fn condition(rng: &mut Rng, q: &str, cols: &[(&str, bool)]) -> String {
    let n = 1 + rng.below(3);
    let parts: Vec<String> = (0..n)
        .map(|_| {
            if rng.below(4) == 0 {
                format!("({} OR {})", atom(rng, q, cols), atom(rng, q, cols))
            } else {
                atom(rng, q, cols)
            }
        })
        .collect();
    parts.join(" AND ")
}

/// A random query: a condition on a subquery's rows, in FROM or as a CTE
/// (once, or read twice and joined).
fn random_query(rng: &mut Rng) -> String {
    let (view, cols) = VIEWS[rng.below(VIEWS.len() as u64) as usize];
    match rng.below(3) {
        0 => format!(
            "SELECT * FROM ({view}) v WHERE {}",
            condition(rng, "", cols)
        ),
        1 => format!(
            "WITH v AS ({view}) SELECT * FROM v WHERE {}",
            condition(rng, "", cols)
        ),
        _ => {
            let (c, _) = cols[0];
            format!(
                "WITH v AS ({view}) SELECT x.*, y.* FROM v x, v y WHERE x.{c} = y.{c} AND {} AND {}",
                condition(rng, "x.", cols),
                condition(rng, "y.", cols)
            )
        }
    }
}

#[test]
fn conditions_moved_into_subqueries_agree_with_sqlite() {
    let mut rng = Rng(0x9f1e_7e12);
    let mut checked = 0;
    for round in 0..6u64 {
        let dir = TempDir::new("diffpush");
        let n = [0, 1, 20, 45, 80, 120][round as usize];
        let (db, lite) = random_tables(&mut rng, round, n, &dir);
        for _ in 0..80 {
            let sql = random_query(&mut rng);
            let opts = QueryOptions {
                threads: Some(3),
                morsel_rows: Some(1 + rng.below(9) as usize),
                ..Default::default()
            };
            let r = query_with(&db, &sql, &opts)
                .unwrap_or_else(|e| panic!("sluice failed on {sql}: {e}"));
            assert_same(&sql, rows_of(&r), sqlite_rows(&lite, &sql), false);
            checked += 1;
        }
    }
    assert_eq!(checked, 480);
}

/// The rule does its work: a CTE's UNION ALL branch that the condition
/// rules out scans with a false filter, the other with the condition,
/// and a condition on a subquery's column prunes segments by zone maps.
#[test]
fn conditions_reach_the_scans_and_their_zone_maps() {
    let dir = TempDir::new("pushplan");
    let mut csv = String::from("id,i,s\n");
    for k in 0..300 {
        csv.push_str(&format!("{k},{},s{}\n", k % 50, k % 7));
    }
    let file = dir.write("t.csv", csv.as_bytes());
    let mut db = Database::open_writer(dir.path().join("db")).unwrap();
    let o = crate::common::tiny_layout(LoadOptions {
        schema: Some("id BIGINT, i INT, s TEXT".parse().unwrap()),
        header: Header::Yes,
        ..Default::default()
    });
    load(&mut db, "t", &[Input::File(file)], &o).unwrap();
    drop(db);
    let db = Database::open(dir.path().join("db")).unwrap();

    let r = query_with(
        &db,
        "EXPLAIN WITH v AS (SELECT id, i, 'a' AS tag FROM t UNION ALL SELECT id, i + 1, 'b' FROM t) \
         SELECT * FROM v WHERE tag = 'b' AND id < 10",
        &QueryOptions::default(),
    )
    .unwrap();
    let plan = r.explain.expect("an EXPLAIN gives its plan");
    let scans: Vec<&str> = plan
        .lines()
        .filter(|l| l.trim_start().starts_with("Filter:"))
        .map(str::trim)
        .collect();
    assert_eq!(
        scans,
        ["Filter: (false AND (id < 10))", "Filter: (id < 10)"],
        "{plan}"
    );

    let r = query_with(
        &db,
        "SELECT count(*) FROM (SELECT id, i FROM t) s WHERE id < 10",
        &QueryOptions::default(),
    )
    .unwrap();
    assert_eq!(rows_of(&r), [["10"]]);
    assert!(r.facts.segments_total > 20, "{:?}", r.facts.segments_total);
    assert!(
        r.facts.segments_scanned <= 2,
        "scanned {} of {} segments",
        r.facts.segments_scanned,
        r.facts.segments_total
    );
}

/// Moving a condition through nested subqueries nests their select
/// lists into it: past what a thread evaluates safely it stays where it
/// is (nine levels of 200 additions overflowed the evaluation stack).
#[test]
fn conditions_through_deep_select_lists_stay_evaluable() {
    let dir = TempDir::new("pushdeep");
    let file = dir.write("h.csv", b"i\n0\n2\n");
    let mut db = Database::open_writer(dir.path().join("db")).unwrap();
    let o = LoadOptions {
        schema: Some("i INT".parse().unwrap()),
        header: Header::Yes,
        ..Default::default()
    };
    load(&mut db, "h", &[Input::File(file)], &o).unwrap();
    drop(db);
    let db = Database::open(dir.path().join("db")).unwrap();
    let chain = "+1".repeat(200);
    let mut sql = "SELECT i AS x FROM h".to_string();
    for k in 0..9 {
        sql = format!("SELECT x{chain} AS x FROM ({sql}) q{k}");
    }
    let sql = format!("SELECT count(*) FROM ({sql}) z WHERE x{chain} > 0");
    let r = query_with(&db, &sql, &QueryOptions::default()).unwrap();
    assert_eq!(rows_of(&r), [["2"]]);
}
