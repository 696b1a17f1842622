//! Differential test of EXISTS under OR and NOT (mark joins): random
//! WHERE clauses that combine `[NOT] EXISTS (SELECT … FROM t y WHERE
//! <correlation> AND <local condition>)`, uncorrelated EXISTS and plain
//! conditions with AND, OR and NOT, over random tables (NULLs in every
//! column, empty and one-row tables; tiny segments, shards), run by
//! sluice (several workers, tiny morsels) and SQLite, compared
//! unordered. A mark column that lost a row, or said true for a NULL
//! key, gives other rows than SQLite's.

use sluice::query::{QueryOptions, query_with};

use crate::common::TempDir;
use crate::differential::{Rng, assert_same, random_tables, rows_of, sqlite_rows};

fn plain(rng: &mut Rng, q: &str) -> String {
    match rng.below(5) {
        0 => format!("{q}.i > {}", rng.below(21) as i64 - 10),
        1 => format!("{q}.s = '{}'", rng.pick(&["a", "b", "ab", ""])),
        2 => format!("{q}.j IS NULL"),
        3 => format!("{q}.j < 3"),
        _ => format!("{q}.i IS NOT NULL"),
    }
}

fn exists(rng: &mut Rng) -> String {
    let corr = match rng.below(5) {
        0 => "y.j = x.j",
        1 => "y.i = x.j AND y.s = x.s",
        2 => "y.id = x.id + 1",
        3 => "y.j = x.i AND y.i < x.i",
        _ => "1 = 1",
    };
    let local = if rng.below(2) == 0 {
        format!(" AND {}", plain(rng, "y"))
    } else {
        String::new()
    };
    let not = if rng.below(3) == 0 { "NOT " } else { "" };
    format!("{not}EXISTS (SELECT 1 FROM t y WHERE {corr}{local})")
}

fn condition(rng: &mut Rng, depth: u32) -> String {
    if depth == 0 || rng.below(3) == 0 {
        return if rng.below(2) == 0 {
            exists(rng)
        } else {
            plain(rng, "x")
        };
    }
    let (a, b) = (condition(rng, depth - 1), condition(rng, depth - 1));
    match rng.below(3) {
        0 => format!("({a} OR {b})"),
        1 => format!("({a} AND {b})"),
        _ => format!("NOT ({a} OR {b})"),
    }
}

#[test]
fn exists_under_or_and_not_agrees_with_sqlite() {
    let mut rng = Rng(0x3a7c_e115);
    let mut checked = 0;
    for round in 0..6u64 {
        let dir = TempDir::new("diffexists");
        let n = [0, 1, 15, 40, 70, 110][round as usize];
        let (db, lite) = random_tables(&mut rng, round, n, &dir);
        for _ in 0..60 {
            let mut cond = condition(&mut rng, 2);
            // At least one EXISTS under an OR or a NOT.
            if !cond.contains("EXISTS") {
                cond = format!("({cond} OR {})", exists(&mut rng));
            }
            let sql = format!("SELECT x.id, x.i, x.s FROM t x WHERE {cond}");
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
    assert_eq!(checked, 360);
}
