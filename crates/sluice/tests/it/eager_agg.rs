//! Eager aggregation: an aggregate grouped by a dimension's TEXT columns
//! over a fact table is first grouped by the fact's join key, below the
//! join. The answers must be the plain plan's (checked here against sums
//! made in Rust, over many segments and shards); EXPLAIN ANALYZE shows
//! the partial aggregate and how few rows it leaves; shapes it must not
//! touch keep their plan.

use sluice::load::LoadOptions;
use sluice::query::{QueryOptions, query_with};
use sluice::store::Database;

use crate::common::{TempDir, explain_analyze, load_bytes, opts, rows_of};

/// `fact(k, v)`: 30,000 rows, `k` = j % 50 (NULL every 97th row), `v` =
/// j % 13 (NULL every 11th). `dim(k, name)`: keys 0..39, key 7 twice
/// (two names), one NULL key; names `n<k % 5>` (so several keys share
/// a name).
fn tables(segment_rows: Option<u64>, shards: Option<u32>) -> TempDir {
    let dir = TempDir::new("eager-agg");
    let mut fact = String::from("k,v\n");
    for j in 0..30_000u64 {
        let k = if j % 97 == 0 {
            String::new()
        } else {
            (j % 50).to_string()
        };
        let v = if j % 11 == 0 {
            String::new()
        } else {
            (j % 13).to_string()
        };
        fact.push_str(&format!("{k},{v}\n"));
    }
    let fact_opts = LoadOptions {
        segment_rows,
        shards,
        block_size: segment_rows.map(|_| 16 << 10),
        ..opts("k INT, v BIGINT")
    };
    load_bytes(&dir, "fact", fact.as_bytes(), &fact_opts).unwrap();
    let mut dim = String::from("k,name\n");
    for k in 0..40 {
        dim.push_str(&format!("{k},n{}\n", k % 5));
    }
    dim.push_str("7,seven\n,ghost\n");
    load_bytes(&dir, "dim", dim.as_bytes(), &opts("k INT, name TEXT")).unwrap();
    dir
}

/// Per name: count(*), count(v), sum(v), min(v), max(v), as the join
/// makes them (a fact row meets each dim row of its key).
fn expected() -> Vec<(String, i64, i64, i64, i64, i64)> {
    let mut dims: Vec<(u64, String)> = (0..40).map(|k| (k, format!("n{}", k % 5))).collect();
    dims.push((7, "seven".into()));
    let mut out: std::collections::BTreeMap<String, (i64, i64, i64, i64, i64)> = Default::default();
    for j in 0..30_000u64 {
        if j % 97 == 0 {
            continue;
        }
        let k = j % 50;
        let v = (j % 11 != 0).then_some((j % 13) as i64);
        for (_, name) in dims.iter().filter(|d| d.0 == k) {
            let e = out
                .entry(name.clone())
                .or_insert((0, 0, 0, i64::MAX, i64::MIN));
            e.0 += 1;
            if let Some(v) = v {
                e.1 += 1;
                e.2 += v;
                e.3 = e.3.min(v);
                e.4 = e.4.max(v);
            }
        }
    }
    out.into_iter()
        .map(|(n, (a, b, c, d, e))| (n, a, b, c, d, e))
        .collect()
}

const GROUPED: &str = "SELECT d.name, count(*), count(f.v), sum(f.v), min(f.v), max(f.v), avg(f.v) \
     FROM fact f JOIN dim d ON f.k = d.k GROUP BY d.name ORDER BY d.name";

#[test]
fn grouped_by_a_dimension_the_answer_is_the_joins() {
    let want = expected();
    for (segment_rows, shards) in [(None, None), (Some(500), None), (Some(700), Some(3))] {
        let dir = tables(segment_rows, shards);
        let db = Database::open(dir.path().join("db")).unwrap();
        for threads in [1, 2, 4] {
            let r = query_with(
                &db,
                GROUPED,
                &QueryOptions {
                    threads: Some(threads),
                    morsel_rows: Some(300),
                    ..Default::default()
                },
            )
            .unwrap();
            let rows = rows_of(&r.batches);
            assert_eq!(rows.len(), want.len());
            for (row, w) in rows.iter().zip(&want) {
                let cell = |i: usize| row[i].clone().unwrap();
                assert_eq!(cell(0), w.0);
                let ints: Vec<i64> = (1..6).map(|i| cell(i).parse().unwrap()).collect();
                assert_eq!(ints, vec![w.1, w.2, w.3, w.4, w.5], "{}", w.0);
                let avg: f64 = cell(6).parse().unwrap();
                assert!((avg - w.3 as f64 / w.2 as f64).abs() < 1e-9, "{}", w.0);
            }
        }
    }
}

#[test]
fn explain_analyze_shows_the_partial_aggregate() {
    let dir = tables(Some(500), None);
    let db = Database::open(dir.path().join("db")).unwrap();
    let text = explain_analyze(&db, GROUPED);
    assert!(text.contains("Subquery partial(f):"), "{text}");
    // The partial aggregate is fact's scan's, streamed: its 30,000 rows
    // grouped by key (50 keys and NULL); the join meets 51 rows, not
    // 30,000.
    assert!(
        text.lines()
            .any(|l| l.contains("Scan fact -> Hash aggregate: 30000 -> 51 rows")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("Hash join (Inner) of (partial(f)) with (d): 51 -> ")),
        "{text}"
    );
}

#[test]
fn shapes_it_must_not_touch_keep_their_plan() {
    let dir = tables(None, None);
    let db = Database::open(dir.path().join("db")).unwrap();
    for sql in [
        // An outer join fills rows with NULLs: the partial counts would not.
        "SELECT d.name, sum(f.v) FROM dim d LEFT JOIN fact f ON f.k = d.k GROUP BY d.name",
        // DISTINCT does not add up across partial groups.
        "SELECT d.name, count(DISTINCT f.v) FROM fact f JOIN dim d ON f.k = d.k GROUP BY d.name",
        // A condition other than = between the two sides.
        "SELECT d.name, sum(f.v) FROM fact f JOIN dim d ON f.k = d.k AND f.v < d.k GROUP BY d.name",
        // Grouped by integers only: nothing dear to carry.
        "SELECT d.k, sum(f.v) FROM fact f JOIN dim d ON f.k = d.k GROUP BY d.k",
        // The aggregate reads the dimension.
        "SELECT d.name, max(d.k), sum(f.v) FROM fact f JOIN dim d ON f.k = d.k GROUP BY d.name",
    ] {
        let r = query_with(&db, &format!("EXPLAIN {sql}"), &QueryOptions::default()).unwrap();
        let text = r.explain.unwrap();
        assert!(!text.contains("partial("), "{sql}\n{text}");
    }
}
