//! Differential test of the collecting aggregates: random `string_agg`
//! calls (ORDER BY one to three keys in every direction and NULL
//! placement, `id` last so that the order is total; DISTINCT; FILTER; a
//! value that is TEXT or a cast number), and random `percentile_cont`,
//! `percentile_disc` and `mode()` `WITHIN GROUP (ORDER BY …)`, grouped
//! by nothing or one column, with WHERE, over random tables (NULLs
//! everywhere, empty and one-row tables; tiny segments with
//! dictionary-encoded TEXT every other round, shards in one), run by
//! sluice with several workers and tiny morsels, and by SQLite: its own
//! `string_agg(… ORDER BY …)`, and for the ordered-set aggregates a
//! query over `row_number()` that picks or interpolates the rows as
//! PostgreSQL defines them. The rows are compared unordered.

use sluice::query::{QueryOptions, query_with};

use crate::common::TempDir;
use crate::differential::{Rng, assert_same, random_tables, rows_of, sqlite_rows};

/// A random ORDER BY key: its text (the same for both engines, NULL
/// placement always written: their defaults differ).
fn key(rng: &mut Rng, col: &str) -> String {
    let dir = rng.pick(&["", " DESC", " ASC"]);
    let nulls = rng.pick(&[" NULLS FIRST", " NULLS LAST"]);
    format!("{col}{dir}{nulls}")
}

/// A random string_agg call, in sluice's and SQLite's spelling.
fn string_agg(rng: &mut Rng) -> (String, String) {
    let value = rng.pick(&["s", "CAST(i AS TEXT)", "CAST(j AS TEXT)"]);
    let filter = rng.pick(&["", "", " FILTER (WHERE i > 0)", " FILTER (WHERE s <> 'b')"]);
    if rng.below(5) == 0 {
        // DISTINCT: ordered by the value itself, or not at all.
        let order = match rng.below(2) {
            0 => String::new(),
            _ => format!(" ORDER BY {}", key(rng, value)),
        };
        // SQLite takes DISTINCT with one argument only: its group_concat,
        // whose separator is ','. Without ORDER BY sluice sorts by the
        // value's bytes, ascending; SQLite is told to.
        let call = format!("string_agg(DISTINCT {value}, ','{order}){filter}");
        let order = if order.is_empty() {
            format!(" ORDER BY {value}")
        } else {
            order
        };
        let theirs = format!("group_concat(DISTINCT {value}{order}){filter}");
        return (call, theirs);
    }
    let sep = rng.pick(&["','", "' | '", "''"]);
    let mut keys: Vec<String> = (0..1 + rng.below(3))
        .map(|_| {
            let c = rng.pick(&["i", "j", "s", "i % 3", "upper(s)"]);
            key(rng, c)
        })
        .collect();
    keys.push(key(rng, "id"));
    let call = format!(
        "string_agg({value}, {sep} ORDER BY {}){filter}",
        keys.join(", ")
    );
    (call.clone(), call)
}

/// A random ordered-set aggregate grouped by `group` (a column, or `1`
/// for the whole table), with `filter` (a WHERE condition or `1=1`): its
/// sluice call and a SQLite query of (group, value) rows computing it.
fn ordered_set(rng: &mut Rng, group: &str, filter: &str) -> (String, String) {
    let x = rng.pick(&["i", "j", "id % 7", "s"]);
    let numeric = x != "s";
    let dir = rng.pick(&["", " DESC"]);
    let kind = if numeric {
        rng.below(3)
    } else {
        1 + rng.below(2)
    };
    let f = rng.pick(&["0", "0.25", "0.5", "0.9", "1", "0.333"]);
    let ranked = format!(
        "SELECT {group} AS g, {x} AS x, row_number() OVER (PARTITION BY {group} ORDER BY {x}{dir}) - 1 AS rn, count(*) OVER (PARTITION BY {group}) AS n FROM t WHERE ({filter}) AND {x} IS NOT NULL"
    );
    // A global aggregate (group `1`) has a row over no rows too.
    let groups = if group == "1" {
        "SELECT 1 AS g".to_string()
    } else {
        format!("SELECT DISTINCT {group} AS g FROM t WHERE {filter}")
    };
    match kind {
        0 => {
            // percentile_cont: between rows floor and ceil of f·(n - 1).
            let pos = format!("({f} * (v.n - 1))");
            let lo = format!("CAST({pos} AS INTEGER)");
            let oracle = format!(
                "WITH v AS ({ranked}) SELECT gs.g, (SELECT a.x + ({pos} - {lo}) * (b.x - a.x) FROM v, v a, v b WHERE v.g IS gs.g AND v.rn = 0 AND a.g IS gs.g AND a.rn = {lo} AND b.g IS gs.g AND b.rn = {lo} + ({pos} > {lo})) FROM ({groups}) gs"
            );
            (
                format!("percentile_cont({f}) WITHIN GROUP (ORDER BY {x}{dir})"),
                oracle,
            )
        }
        1 => {
            // percentile_disc: the first row whose position reaches f·n.
            let k = format!(
                "(CASE WHEN CAST({f} * v.n AS INTEGER) < {f} * v.n THEN CAST({f} * v.n AS INTEGER) + 1 ELSE CAST({f} * v.n AS INTEGER) END)"
            );
            let oracle = format!(
                "WITH v AS ({ranked}) SELECT gs.g, (SELECT a.x FROM v, v a WHERE v.g IS gs.g AND v.rn = 0 AND a.g IS gs.g AND a.rn = max({k}, 1) - 1) FROM ({groups}) gs"
            );
            (
                format!("percentile_disc({f}) WITHIN GROUP (ORDER BY {x}{dir})"),
                oracle,
            )
        }
        _ => {
            // mode: the most frequent value; of equals, the first in the
            // order.
            let first = if dir.is_empty() { "min" } else { "max" };
            let oracle = format!(
                "WITH c AS (SELECT {group} AS g, {x} AS x, count(*) AS m FROM t WHERE ({filter}) AND {x} IS NOT NULL GROUP BY 1, 2) SELECT gs.g, (SELECT {first}(c.x) FROM c WHERE c.g IS gs.g AND c.m = (SELECT max(m) FROM c c2 WHERE c2.g IS gs.g)) FROM ({groups}) gs"
            );
            (format!("mode() WITHIN GROUP (ORDER BY {x}{dir})"), oracle)
        }
    }
}

#[test]
fn random_ordered_aggregates_agree_with_sqlite() {
    let mut rng = Rng(0x0_5e7_a66);
    let mut checked = 0;
    for round in 0..6u64 {
        let dir = TempDir::new("diffoa");
        let n = [0, 1, 30, 70, 120, 200][round as usize];
        let (db, lite) = random_tables(&mut rng, round, n, &dir);
        for q in 0..50 {
            let group = rng.pick(&["", "i", "s", "j % 4"]);
            let filter = rng.pick(&["", "i > 2", "s IS NOT NULL OR j < 0"]);
            let (sql, oracle) = if q % 2 == 0 {
                let calls: Vec<(String, String)> = (0..1 + rng.below(2))
                    .map(|_| string_agg(&mut rng))
                    .collect();
                let ours: Vec<&str> = calls.iter().map(|c| c.0.as_str()).collect();
                let theirs: Vec<&str> = calls.iter().map(|c| c.1.as_str()).collect();
                let w = if filter.is_empty() {
                    String::new()
                } else {
                    format!(" WHERE {filter}")
                };
                let (sel, by) = if group.is_empty() {
                    (String::new(), String::new())
                } else {
                    (format!("{group}, "), format!(" GROUP BY {group}"))
                };
                (
                    format!("SELECT {sel}{} FROM t{w}{by}", ours.join(", ")),
                    format!("SELECT {sel}{} FROM t{w}{by}", theirs.join(", ")),
                )
            } else {
                let g = if group.is_empty() { "1" } else { group };
                let f = if filter.is_empty() { "1=1" } else { filter };
                let (call, oracle) = ordered_set(&mut rng, g, f);
                let w = if filter.is_empty() {
                    String::new()
                } else {
                    format!(" WHERE {filter}")
                };
                let sql = if group.is_empty() {
                    format!("SELECT 1, {call} FROM t{w}")
                } else {
                    format!("SELECT {group}, {call} FROM t{w} GROUP BY {group}")
                };
                (sql, oracle)
            };
            let opts = QueryOptions {
                threads: Some(3),
                morsel_rows: Some(1 + rng.below(9) as usize),
                ..Default::default()
            };
            let r = query_with(&db, &sql, &opts)
                .unwrap_or_else(|e| panic!("sluice failed on {sql}: {e}"));
            let theirs = sqlite_rows(&lite, &oracle);
            assert_same(
                &format!("{sql}\n  oracle: {oracle}"),
                rows_of(&r),
                theirs,
                false,
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 300);
}
