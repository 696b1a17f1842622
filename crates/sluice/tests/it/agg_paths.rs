//! Grouped sums take one of several paths per morsel: the fused 64-bit pass
//! (few groups, no NULLs, values bounded), the 64-bit and 128-bit integer
//! paths, one-byte key codes, packed keys or the row format. This property
//! test chooses data that forces every path, often within one query, and
//! checks the answers against a model that sums in 128 bits.

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Float64Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use proptest::prelude::*;
use sluice::load::{Header, LoadOptions, load};
use sluice::query::{QueryOptions, query_with};
use sluice::source::Input;
use sluice::store::Database;

use crate::common::TempDir;

#[derive(Debug, Clone)]
struct Row {
    k: Option<String>,
    x: Option<i64>,
    y: Option<i32>,
}

/// Keys: one-byte flags, longer text, many distinct values, or NULL.
fn key() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        6 => prop::sample::select(vec!["A", "N", "R", "F", "O"]).prop_map(|s| Some(s.to_string())),
        1 => prop::sample::select(vec!["xy", "", "longer key"]).prop_map(|s| Some(s.to_string())),
        1 => (0..100u32).prop_map(|i| Some(format!("k{i}"))),
        1 => Just(None),
    ]
}

/// Values: small, past the fused bound (2^52), near the 64-bit limit, NULL.
fn value() -> impl Strategy<Value = Option<i64>> {
    prop_oneof![
        8 => (-1000i64..1000).prop_map(Some),
        1 => (-(1i64 << 53)..(1i64 << 53)).prop_map(Some),
        1 => prop::sample::select(vec![i64::MAX, i64::MIN + 1, i64::MAX / 3]).prop_map(Some),
        1 => Just(None),
    ]
}

fn row() -> impl Strategy<Value = Row> {
    (key(), value(), prop::option::weighted(0.9, 0..10i32)).prop_map(|(k, x, y)| Row { k, x, y })
}

/// The table's rows: whole runs of one kind, so that some morsels hold
/// only flags and small values (the fused path), some large values without
/// NULLs (the bound check), and others anything.
fn table() -> impl Strategy<Value = Vec<Row>> {
    prop::collection::vec(
        prop_oneof![
            3 => prop::collection::vec(
                (prop::sample::select(vec!["A", "N", "R"]), -1000i64..1000, 0..10i32).prop_map(
                    |(k, x, y)| Row { k: Some(k.to_string()), x: Some(x), y: Some(y) }
                ),
                1..600,
            ),
            1 => prop::collection::vec(
                (prop::sample::select(vec!["A", "N"]), value(), 0..10i32).prop_map(
                    |(k, x, y)| Row { k: Some(k.to_string()), x: Some(x.unwrap_or(i64::MAX / 3)), y: Some(y) }
                ),
                1..50,
            ),
            1 => prop::collection::vec(row(), 1..200),
        ],
        1..8,
    )
    .prop_map(|runs| runs.concat())
}

#[derive(Default, Debug, PartialEq)]
struct Group {
    sum_x: Option<i128>,
    sum_xy: Option<i128>,
    sum_y1: Option<i128>,
    count_x: i64,
    count: i64,
}

fn add(acc: &mut Option<i128>, v: Option<i128>) {
    if let Some(v) = v {
        *acc = Some(acc.unwrap_or(0) + v);
    }
}

fn model(rows: &[Row]) -> BTreeMap<Option<String>, Group> {
    let mut m: BTreeMap<Option<String>, Group> = BTreeMap::new();
    // WHERE y <> 7: NULL y is not kept.
    for r in rows.iter().filter(|r| r.y.is_some_and(|y| y != 7)) {
        let g = m.entry(r.k.clone()).or_default();
        let x = r.x.map(|v| v as i128);
        let y = r.y.map(|v| v as i128);
        add(&mut g.sum_x, x);
        add(&mut g.sum_xy, x.zip(y).map(|(a, b)| a * b));
        add(&mut g.sum_y1, y.map(|v| v + 1));
        g.count_x += x.is_some() as i64;
        g.count += 1;
    }
    m
}

fn dec(b: &RecordBatch, c: usize, r: usize) -> Option<i128> {
    let a = b.column(c).as_primitive::<Decimal128Type>();
    a.is_valid(r).then(|| a.value(r))
}

fn answer(batches: &[RecordBatch]) -> BTreeMap<Option<String>, (Group, Option<f64>)> {
    let mut out = BTreeMap::new();
    for b in batches {
        for r in 0..b.num_rows() {
            let k = b.column(0).as_string::<i32>();
            let key = k.is_valid(r).then(|| k.value(r).to_string());
            let avg = b.column(4).as_primitive::<Float64Type>();
            let g = Group {
                sum_x: dec(b, 1, r),
                sum_xy: dec(b, 2, r),
                sum_y1: dec(b, 3, r),
                count_x: b.column(5).as_primitive::<Int64Type>().value(r),
                count: b.column(6).as_primitive::<Int64Type>().value(r),
            };
            let prev = out.insert(key.clone(), (g, avg.is_valid(r).then(|| avg.value(r))));
            assert!(prev.is_none(), "group {key:?} appears twice");
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn every_aggregation_path_gives_exact_sums(
        rows in table(),
        morsel in prop_oneof![1usize..8, 100usize..5000],
        threads in 1usize..4,
    ) {
        let dir = TempDir::new("aggpaths");
        let mut csv = String::from("k,x,y\n");
        for r in &rows {
            let k = r.k.as_ref().map(|s| format!("\"{s}\"")).unwrap_or_default();
            let x = r.x.map(|v| v.to_string()).unwrap_or_default();
            let y = r.y.map(|v| v.to_string()).unwrap_or_default();
            csv.push_str(&format!("{k},{x},{y}\n"));
        }
        let file = dir.write("t.csv", csv.as_bytes());
        let mut db = Database::open_writer(dir.path().join("db")).unwrap();
        let o = LoadOptions {
            schema: Some("k TEXT, x BIGINT, y INT".parse().unwrap()),
            header: Header::Yes,
            ..Default::default()
        };
        load(&mut db, "t", &[Input::File(file)], &o).unwrap();
        drop(db);
        let db = Database::open(dir.path().join("db")).unwrap();
        let sql = "SELECT k, sum(x), sum(x * y), sum(y + 1), avg(x), count(x), count(*) \
                   FROM t WHERE y <> 7 GROUP BY k";
        let opts = QueryOptions { threads: Some(threads), morsel_rows: Some(morsel), ..Default::default() };
        let got = query_with(&db, sql, &opts).unwrap();
        let got = answer(&got.batches);
        let want = model(&rows);
        // Without the product, large x alone decides the path.
        let narrow = "SELECT k, sum(x), count(*) FROM t WHERE y <> 7 GROUP BY k";
        let n = query_with(&db, narrow, &opts).unwrap();
        let mut seen = 0;
        for b in &n.batches {
            for r in 0..b.num_rows() {
                let k = b.column(0).as_string::<i32>();
                let key = k.is_valid(r).then(|| k.value(r).to_string());
                let w = want.get(&key).expect("a group of the model");
                prop_assert_eq!(dec(b, 1, r), w.sum_x, "narrow sum of {:?}", key);
                prop_assert_eq!(b.column(2).as_primitive::<Int64Type>().value(r), w.count);
                seen += 1;
            }
        }
        prop_assert_eq!(seen, want.len());
        prop_assert_eq!(got.len(), want.len());
        for (k, w) in &want {
            let (g, avg) = got.get(k).expect("every group of the model");
            prop_assert_eq!(g, w, "group {:?}", k);
            let want_avg = w.sum_x.map(|s| s as f64 / w.count_x as f64);
            match (avg, want_avg) {
                (Some(a), Some(b)) => prop_assert!((a - b).abs() <= b.abs() * 1e-12, "avg {} vs {}", a, b),
                (a, b) => prop_assert_eq!(a.is_some(), b.is_some()),
            }
        }
    }
}
