//! Differential test of grouping sets: random `GROUP BY ROLLUP / CUBE /
//! GROUPING SETS / a, ROLLUP (…)` queries with `grouping()`, WHERE and
//! HAVING over random tables (NULLs in every key, empty tables, one-row
//! tables), run by sluice (several workers, tiny morsels; tiny segments
//! with dictionary-encoded TEXT every other round, shards in one) and by
//! SQLite (bundled), which has no grouping sets: its query is the UNION
//! ALL of one plain GROUP BY a set, the keys a set does not group by
//! written as NULL and `grouping()` as the constant the set gives it. The
//! rows are compared unordered.

use sluice::query::{QueryOptions, query_with};

use crate::common::TempDir;
use crate::differential::{Rng, assert_same, random_tables, rows_of, sqlite_rows};

const KEYS: [&str; 3] = ["i", "j", "s"];

/// A random GROUP BY clause over `KEYS`: its text and its sets (indexes
/// into `KEYS`), expanded as the SQL standard defines them.
fn grouping_clause(rng: &mut Rng) -> (String, Vec<Vec<usize>>) {
    let mut order: Vec<usize> = vec![0, 1, 2];
    for i in (1..3).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let n = 1 + rng.below(3) as usize;
    let keys = &order[..n];
    let names =
        |ks: &[usize]| -> String { ks.iter().map(|&k| KEYS[k]).collect::<Vec<_>>().join(", ") };
    match rng.below(4) {
        0 => {
            let sets = (0..=n).rev().map(|m| keys[..m].to_vec()).collect();
            (format!("ROLLUP ({})", names(keys)), sets)
        }
        1 => {
            let sets = (0..1usize << n)
                .map(|mask| {
                    (0..n)
                        .filter(|b| mask & (1 << b) != 0)
                        .map(|b| keys[b])
                        .collect()
                })
                .collect();
            (format!("CUBE ({})", names(keys)), sets)
        }
        2 => {
            let count = 1 + rng.below(4) as usize;
            let sets: Vec<Vec<usize>> = (0..count)
                .map(|_| keys.iter().copied().filter(|_| rng.below(2) == 0).collect())
                .collect();
            let written: Vec<String> = sets.iter().map(|s| format!("({})", names(s))).collect();
            (format!("GROUPING SETS ({})", written.join(", ")), sets)
        }
        _ => {
            // A plain key, then a ROLLUP of the others (n >= 2).
            let (first, rest) = keys.split_at(1);
            if rest.is_empty() {
                return (names(first), vec![first.to_vec()]);
            }
            let sets = (0..=rest.len())
                .rev()
                .map(|m| [first, &rest[..m]].concat())
                .collect();
            (format!("{}, ROLLUP ({})", names(first), names(rest)), sets)
        }
    }
}

/// A random query: its sluice text and SQLite's UNION ALL of its sets.
fn random_query(rng: &mut Rng) -> (String, String) {
    let (clause, sets) = grouping_clause(rng);
    let mut used: Vec<usize> = sets.iter().flatten().copied().collect();
    used.sort();
    used.dedup();
    let aggs: Vec<&str> = (0..1 + rng.below(3))
        .map(|_| {
            rng.pick(&[
                "count(*)",
                "sum(i)",
                "min(s)",
                "max(j)",
                "count(DISTINCT j)",
                "avg(i)",
                "count(s)",
            ])
        })
        .collect();
    // grouping() of one or two of the keys, when there are keys.
    let tested: Vec<usize> = match used.len() {
        0 => vec![],
        n => (0..1 + rng.below(2))
            .map(|_| used[rng.below(n as u64) as usize])
            .collect(),
    };
    let filter = match rng.below(4) {
        0 => " WHERE i > 0",
        1 => " WHERE j IS NOT NULL OR s = 'a'",
        _ => "",
    };
    let having = match rng.below(4) {
        0 => " HAVING count(*) > 1",
        _ => "",
    };
    let mut items: Vec<String> = used.iter().map(|&k| KEYS[k].to_string()).collect();
    items.extend(aggs.iter().map(|a| a.to_string()));
    if !tested.is_empty() {
        let args: Vec<&str> = tested.iter().map(|&k| KEYS[k]).collect();
        items.push(format!("grouping({})", args.join(", ")));
    }
    let ours = format!(
        "SELECT {} FROM t{filter} GROUP BY {clause}{having}",
        items.join(", ")
    );
    let branches: Vec<String> = sets
        .iter()
        .map(|set| {
            let mut items: Vec<String> = used
                .iter()
                .map(|&k| {
                    if set.contains(&k) {
                        KEYS[k].to_string()
                    } else {
                        "NULL".to_string()
                    }
                })
                .collect();
            items.extend(aggs.iter().map(|a| a.to_string()));
            if !tested.is_empty() {
                let bits = tested
                    .iter()
                    .fold(0, |acc, k| (acc << 1) | i32::from(!set.contains(k)));
                items.push(bits.to_string());
            }
            let group = if set.is_empty() {
                String::new()
            } else {
                let mut ks = set.clone();
                ks.sort();
                ks.dedup();
                let ks: Vec<&str> = ks.iter().map(|&k| KEYS[k]).collect();
                format!(" GROUP BY {}", ks.join(", "))
            };
            format!("SELECT {} FROM t{filter}{group}{having}", items.join(", "))
        })
        .collect();
    (ours, branches.join(" UNION ALL "))
}

#[test]
fn random_grouping_sets_agree_with_sqlite() {
    let mut rng = Rng(0x6e05_feed);
    let mut checked = 0;
    for round in 0..6u64 {
        let dir = TempDir::new("diffgs");
        let n = [0, 1, 25, 60, 110, 180][round as usize];
        let (db, lite) = random_tables(&mut rng, round, n, &dir);
        for _ in 0..60 {
            let (sql, oracle) = random_query(&mut rng);
            let opts = QueryOptions {
                threads: Some(3),
                morsel_rows: Some(1 + rng.below(9) as usize),
                ..Default::default()
            };
            let r = query_with(&db, &sql, &opts)
                .unwrap_or_else(|e| panic!("sluice failed on {sql}: {e}"));
            let ours = rows_of(&r);
            let theirs = sqlite_rows(&lite, &oracle);
            assert_same(&sql, ours, theirs, false);
            checked += 1;
        }
    }
    assert_eq!(checked, 360);
}
