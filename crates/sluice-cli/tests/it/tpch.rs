//! TPC-H at scale factor 0.01: every query sluice answers gives DuckDB's
//! answer, on the tables as `gen tpch --load` makes them, cut into tiny
//! segments and record batches (every TEXT column of every batch its own
//! dictionary), and in 4 shards, at several thread counts.
//!
//! The expected files (`tests/expected/tpch/sf0.01-qN.csv`) were written
//! by DuckDB 2.0.1 (Python) from the same generated CSV files read with
//! the TPC-H types (DECIMAL(15,2), DATE), so its sums are exact too.

use super::*;

/// Every TPC-H query.
const QUERIES: std::ops::RangeInclusive<u32> = 1..=22;

const TABLES: [(&str, &str); 8] = [
    ("region", "r_regionkey BIGINT, r_name TEXT, r_comment TEXT"),
    (
        "nation",
        "n_nationkey BIGINT, n_name TEXT, n_regionkey BIGINT, n_comment TEXT",
    ),
    (
        "supplier",
        "s_suppkey BIGINT, s_name TEXT, s_address TEXT, s_nationkey BIGINT, s_phone TEXT, s_acctbal DECIMAL(15,2), s_comment TEXT",
    ),
    (
        "customer",
        "c_custkey BIGINT, c_name TEXT, c_address TEXT, c_nationkey BIGINT, c_phone TEXT, c_acctbal DECIMAL(15,2), c_mktsegment TEXT, c_comment TEXT",
    ),
    (
        "part",
        "p_partkey BIGINT, p_name TEXT, p_mfgr TEXT, p_brand TEXT, p_type TEXT, p_size INT, p_container TEXT, p_retailprice DECIMAL(15,2), p_comment TEXT",
    ),
    (
        "partsupp",
        "ps_partkey BIGINT, ps_suppkey BIGINT, ps_availqty INT, ps_supplycost DECIMAL(15,2), ps_comment TEXT",
    ),
    (
        "orders",
        "o_orderkey BIGINT, o_custkey BIGINT, o_orderstatus TEXT, o_totalprice DECIMAL(15,2), o_orderdate DATE, o_orderpriority TEXT, o_clerk TEXT, o_shippriority INT, o_comment TEXT",
    ),
    (
        "lineitem",
        "l_orderkey BIGINT, l_partkey BIGINT, l_suppkey BIGINT, l_linenumber INT, l_quantity DECIMAL(15,2), l_extendedprice DECIMAL(15,2), l_discount DECIMAL(15,2), l_tax DECIMAL(15,2), l_returnflag TEXT, l_linestatus TEXT, l_shipdate DATE, l_commitdate DATE, l_receiptdate DATE, l_shipinstruct TEXT, l_shipmode TEXT, l_comment TEXT",
    ),
];

/// Whether two cells say the same: the same text, or the same number —
/// decimals equal once the one with more digits is rounded to the
/// other's (DuckDB divides decimals as doubles, sluice as decimals),
/// doubles to 1e-12.
fn same_cell(got: &str, want: &str) -> bool {
    // NULL: an empty cell (a CSV writer quotes a line's one empty cell).
    let want = if want == "\"\"" { "" } else { want };
    if got == want {
        return true;
    }
    let (Ok(g), Ok(w)) = (got.parse::<f64>(), want.parse::<f64>()) else {
        return false;
    };
    let places = |s: &str| s.split_once('.').map_or(0, |(_, f)| f.len());
    if !got.contains(['e', 'E']) && !want.contains(['e', 'E']) {
        let p = places(got).min(places(want)) as i32;
        let round = |x: f64| (x * 10f64.powi(p)).round();
        if p >= 4 && round(g) == round(w) {
            return true;
        }
    }
    ((g - w) / w.abs().max(1e-300)).abs() < 1e-12
}

fn check(q: u32, got: &str, want: &str, run: &str) {
    let (g, w): (Vec<&str>, Vec<&str>) = (got.lines().collect(), want.lines().collect());
    assert_eq!(g.len(), w.len(), "q{q} ({run}): rows\n{got}");
    assert_eq!(g[0], w[0], "q{q}: header");
    for (i, (gl, wl)) in g.iter().zip(&w).enumerate().skip(1) {
        let wl = if *wl == "\"\"" { "" } else { wl };
        let (gc, wc): (Vec<&str>, Vec<&str>) = (gl.split(',').collect(), wl.split(',').collect());
        assert_eq!(gc.len(), wc.len(), "q{q} ({run}) row {i}: {gl} vs {wl}");
        for (name, (a, b)) in w[0].split(',').zip(gc.iter().zip(&wc)) {
            assert!(
                same_cell(a, b),
                "q{q} ({run}) row {i} {name}: {a} vs {b}\n{got}"
            );
        }
    }
}

#[test]
fn tpch_queries_match_duckdb() {
    let t = Tmp::new();
    let o = sluice(
        &t.0,
        &[
            "gen", "tpch", "--sf", "0.01", "--output", "csv", "--load", "-q",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The same rows in two more layouts: segments of 1,000 rows read in
    // blocks of ~100 rows, every TEXT column of every batch
    // dictionary-encoded (each of l_returnflag's dictionaries lists A, N
    // and R in its own order); and 4 shards.
    for (db, extra) in [
        (
            "tiny.db",
            &[
                "--segment-rows",
                "1000",
                "--dictionary-always",
                "--block-size",
                "12KiB",
            ][..],
        ),
        ("shards.db", &["--shards", "4"][..]),
    ] {
        for (table, schema) in TABLES {
            let file = format!("csv/{table}.csv");
            let mut args = vec!["--db", db, "load", "--schema", schema, "--header"];
            args.extend_from_slice(extra);
            args.extend_from_slice(&[table, &file]);
            ok(&t.0, &args);
        }
    }
    let info = ok(&t.0, &["--db", "tiny.db", "info", "lineitem"]);
    assert!(info.contains(" segments"), "{info}");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expected/tpch");
    for q in QUERIES {
        let sql = std::fs::read_to_string(dir.join(format!("q{q}.sql"))).unwrap();
        let want = std::fs::read_to_string(dir.join(format!("sf0.01-q{q}.csv"))).unwrap();
        for (db, threads) in [
            ("sluice.db", "1"),
            ("sluice.db", "2"),
            ("sluice.db", "64"),
            ("tiny.db", "1"),
            ("tiny.db", "3"),
            ("shards.db", "2"),
        ] {
            let got = ok(
                &t.0,
                &[
                    "--db",
                    db,
                    "query",
                    "--threads",
                    threads,
                    "--format",
                    "csv",
                    &sql,
                ],
            );
            check(q, &got, &want, &format!("{db}, threads {threads}"));
        }
    }
}
