//! Differential test of window functions: random `… OVER (PARTITION BY
//! … ORDER BY … frame)` calls over random tables (NULLs and ties in the
//! partition and order keys, empty and one-row partitions), run by
//! sluice (several workers, tiny morsels; the tables in tiny segments
//! with dictionary-encoded TEXT every other round, across shards in
//! some) and by SQLite (bundled), must give the same rows.
//!
//! The generator keeps every answer determined: a function that reads
//! rows in their order (row_number, ntile, lag, lead, first/last/nth
//! value, a ROWS frame) orders by a unique `id` last; one that reads
//! peers (rank, a RANGE or GROUPS frame's aggregate) may order by a key
//! with ties. NULLS FIRST/LAST are explicit (the engines' defaults
//! differ); AVG and the ranks' fractions compare to 1e-9.

use sluice::query::{QueryOptions, query_with};

use crate::common::TempDir;
use crate::differential::{Rng, assert_same, random_tables, rows_of, sqlite_rows};

pub(crate) type Row = (i64, Option<i64>, Option<i64>, Option<&'static str>);

pub(crate) fn random_rows(rng: &mut Rng, n: usize) -> Vec<Row> {
    let texts = ["a", "b", "c", "ab", "ba", ""];
    (0..n)
        .map(|id| {
            let i = (rng.below(7) != 0).then(|| rng.below(41) as i64 - 20);
            let j = (rng.below(6) != 0).then(|| rng.below(5) as i64);
            let s = (rng.below(7) != 0).then(|| texts[rng.below(texts.len() as u64) as usize]);
            (id as i64, i, j, s)
        })
        .collect()
}

fn order_key(rng: &mut Rng, key: &str) -> String {
    format!(
        "{key} {} NULLS {}",
        rng.pick(&["ASC", "DESC"]),
        rng.pick(&["FIRST", "LAST"])
    )
}

fn bound(rng: &mut Rng, start: bool) -> (String, u8) {
    // (text, rank: 0 unbounded preceding … 4 unbounded following)
    let k = rng.below(4);
    match rng.below(5) {
        0 if start => ("UNBOUNDED PRECEDING".into(), 0),
        0 => ("UNBOUNDED FOLLOWING".into(), 4),
        1 => (format!("{k} PRECEDING"), 1),
        2 => ("CURRENT ROW".into(), 2),
        3 => (format!("{k} FOLLOWING"), 3),
        _ if start => ("UNBOUNDED PRECEDING".into(), 0),
        _ => ("UNBOUNDED FOLLOWING".into(), 4),
    }
}

/// A frame clause both engines accept (start no later than end's kind).
fn frame(rng: &mut Rng, units: &str) -> String {
    loop {
        let (s, a) = bound(rng, true);
        let (e, b) = bound(rng, false);
        let backwards = (a == 2 && b == 1) || (a == 3 && b < 3);
        if !backwards {
            return format!(" {units} BETWEEN {s} AND {e}");
        }
    }
}

/// One window call, always determined (see the module's comment).
fn window_call(rng: &mut Rng) -> String {
    let partition = match rng.below(4) {
        0 => "",
        1 => "PARTITION BY j ",
        2 => "PARTITION BY s ",
        _ => "PARTITION BY j, s ",
    };
    let key = rng.pick(&["i", "j", "s"]);
    // Functions that read rows in order: a total order.
    let total = format!("ORDER BY {}, id", order_key(rng, key));
    let by_peers = order_key(rng, key);
    match rng.below(12) {
        0 => format!("row_number() OVER ({partition}{total})"),
        1 => format!(
            "{}() OVER ({partition}ORDER BY {by_peers})",
            rng.pick(&["rank", "dense_rank", "percent_rank", "cume_dist"])
        ),
        2 => format!("ntile({}) OVER ({partition}{total})", 1 + rng.below(5)),
        3 => format!(
            "{}(i, {}, {}) OVER ({partition}{total})",
            rng.pick(&["lag", "lead"]),
            rng.below(4),
            rng.below(3) as i64 - 1
        ),
        4 => format!(
            "{}(i) OVER ({partition}{total})",
            rng.pick(&["lag", "lead"])
        ),
        5 => {
            let f = match rng.below(3) {
                0 => "first_value(i)".to_string(),
                1 => "last_value(s)".to_string(),
                _ => format!("nth_value(i, {})", 1 + rng.below(3)),
            };
            let fr = if rng.below(3) == 0 {
                String::new()
            } else {
                frame(rng, "ROWS")
            };
            format!("{f} OVER ({partition}{total}{fr})")
        }
        // Aggregates over ROWS frames: a total order.
        6 | 7 => format!(
            "{} OVER ({partition}{total}{})",
            rng.pick(&[
                "count(*)", "count(i)", "sum(i)", "avg(i)", "min(s)", "max(i)", "sum(j)"
            ]),
            frame(rng, "ROWS")
        ),
        // Over peers: RANGE (default, or offsets on one numeric key) and GROUPS.
        8 => format!(
            "{} OVER ({partition}ORDER BY {by_peers})",
            rng.pick(&["count(*)", "sum(i)", "min(i)", "max(s)", "avg(j)"])
        ),
        9 => {
            let k = rng.pick(&["i", "j"]);
            format!(
                "{} OVER ({partition}ORDER BY {}{})",
                rng.pick(&["count(*)", "sum(i)", "min(i)", "max(s)", "count(j)"]),
                order_key(rng, k),
                frame(rng, "RANGE")
            )
        }
        10 => format!(
            "{} OVER ({partition}ORDER BY {by_peers}{})",
            rng.pick(&["count(*)", "sum(i)", "max(i)", "min(s)"]),
            frame(rng, "GROUPS")
        ),
        _ => format!(
            "{} OVER ({})",
            rng.pick(&["count(*)", "sum(i)", "min(s)", "max(j)"]),
            partition.trim_end()
        ),
    }
}

fn random_query(rng: &mut Rng) -> String {
    let calls: Vec<String> = (0..1 + rng.below(3)).map(|_| window_call(rng)).collect();
    let filter = match rng.below(4) {
        0 => " WHERE i > 0",
        1 => " WHERE j IS NOT NULL OR s = 'a'",
        _ => "",
    };
    format!("SELECT id, {} FROM t{filter} ORDER BY id", calls.join(", "))
}

/// Windows over a grouping: the window calls read the groups.
fn grouped_query(rng: &mut Rng) -> String {
    let key = rng.pick(&["j", "s"]);
    let f = match rng.below(4) {
        0 => "rank() OVER (ORDER BY sum(i) DESC NULLS LAST)".to_string(),
        1 => "sum(count(*)) OVER ()".to_string(),
        2 => format!("sum(sum(i)) OVER (ORDER BY {key} ASC NULLS FIRST)"),
        _ => format!("lag(count(*), 1, 0) OVER (ORDER BY {key} DESC NULLS LAST)"),
    };
    format!("SELECT {key}, count(*), {f} FROM t GROUP BY {key} ORDER BY {key} NULLS FIRST")
}

#[test]
fn random_windows_agree_with_sqlite() {
    let mut rng = Rng(0x0b5e_55ed);
    let mut checked = 0;
    for round in 0..6u64 {
        let dir = TempDir::new("diffwin");
        let n = [0, 1, 30, 70, 120, 200][round as usize];
        let (db, lite) = random_tables(&mut rng, round, n, &dir);
        for q in 0..70 {
            let sql = if q % 7 == 6 {
                grouped_query(&mut rng)
            } else {
                random_query(&mut rng)
            };
            let opts = QueryOptions {
                threads: Some(3),
                morsel_rows: Some(1 + rng.below(9) as usize),
                ..Default::default()
            };
            let r = query_with(&db, &sql, &opts)
                .unwrap_or_else(|e| panic!("sluice failed on {sql}: {e}"));
            let ours = rows_of(&r);
            let theirs = sqlite_rows(&lite, &sql);
            assert_same(&sql, ours, theirs, true);
            checked += 1;
        }
    }
    assert_eq!(checked, 420);
}
