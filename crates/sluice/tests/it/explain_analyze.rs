//! EXPLAIN ANALYZE runs the query and answers, in one `plan` column,
//! with the plan and what each step did: its rows in and out (counted
//! from the rows themselves, so a wrong count here is a wrong count in
//! the engine), its time, and each operator's peak memory.

use sluice::query::memory::Memory;
use sluice::query::{QueryOptions, query_with};
use sluice::store::Database;

use crate::common::{TempDir, load_bytes, opts};

/// `a(k, v)`: 3,000 rows, `k` 0..2999; `b(k, w)`: 300 rows, `k` the
/// multiples of 10 from 0; `c(k)`: 0..49, each twice.
fn tables() -> TempDir {
    let dir = TempDir::new("explain-analyze");
    let mut a = String::from("k,v\n");
    for i in 0..3000 {
        a.push_str(&format!("{i},{}\n", i % 7));
    }
    let mut b = String::from("k,w\n");
    for i in 0..300 {
        b.push_str(&format!("{},w{}\n", i * 10, i % 3));
    }
    let mut c = String::from("k\n");
    for i in 0..100 {
        c.push_str(&format!("{}\n", i % 50));
    }
    load_bytes(&dir, "a", a.as_bytes(), &opts("k BIGINT, v INT")).unwrap();
    load_bytes(&dir, "b", b.as_bytes(), &opts("k BIGINT, w TEXT")).unwrap();
    load_bytes(&dir, "c", c.as_bytes(), &opts("k BIGINT")).unwrap();
    dir
}

fn analyze(db: &Database, sql: &str, threads: usize) -> String {
    let r = query_with(
        db,
        &format!("EXPLAIN ANALYZE {sql}"),
        &QueryOptions {
            threads: Some(threads),
            morsel_rows: Some(256),
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("{sql}: {e}"));
    assert_eq!(r.schema.fields().len(), 1);
    assert_eq!(r.schema.field(0).name(), "plan");
    let text = r.explain.expect("EXPLAIN ANALYZE answers with its plan");
    // The rows hold the same text, a line each.
    let rows: usize = r.batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows, text.lines().count(), "{text}");
    text
}

/// The report's line for the step named `name` (its leading spaces
/// kept), with the time cut off.
fn step<'a>(text: &'a str, name: &str) -> &'a str {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no step {name:?} in\n{text}"));
    line.rsplit_once(", ").map_or(line, |(l, _)| l)
}

#[test]
fn each_step_reports_the_rows_it_read_and_made() {
    let dir = tables();
    let db = Database::open(dir.path().join("db")).unwrap();
    for threads in [1, 2] {
        // A scan, filter, grouping, sort and limit: one pipeline.
        let t = analyze(
            &db,
            "SELECT v, count(*) FROM a WHERE k < 700 GROUP BY v ORDER BY v LIMIT 3",
            threads,
        );
        assert_eq!(
            step(&t, "Scan a -> Filter -> Hash aggregate -> Top-k -> Limit").trim(),
            // (The zone maps keep every batch: 3,000 rows read.)
            "Scan a -> Filter -> Hash aggregate -> Top-k -> Limit: 3000 -> 3 rows",
            "{t}"
        );
        assert!(t.contains("Result: 3 rows in "), "{t}");
        assert!(t.contains("Peak memory by operator:"), "{t}");
        assert!(t.contains("  hash aggregate: "), "{t}");
        // The plan itself comes first, as EXPLAIN prints it.
        assert!(t.starts_with("Limit: 3 offset 0\n"), "{t}");

        // A join: both inputs scanned, the smaller one hashed, the
        // larger one probing it; the aggregate reads the joined rows.
        let t = analyze(
            &db,
            "SELECT b.w, count(*), sum(a.v) FROM a JOIN b ON a.k = b.k \
             WHERE a.v <> 0 GROUP BY b.w ORDER BY b.w",
            threads,
        );
        assert_eq!(
            step(&t, "Hash build on (b)").trim(),
            "Hash build on (b): 300 -> 300 rows",
            "{t}"
        );
        // Of a's 3,000 rows, 2,571 have v <> 0; 300 of a's keys are b's,
        // 257 of them with v <> 0 (k % 7 <> 0 for k = 10 i).
        assert_eq!(
            step(&t, "Hash join (Inner) of (a) with (b)").trim(),
            "Hash join (Inner) of (a) with (b): 2571 -> 257 rows",
            "{t}"
        );
        assert_eq!(
            step(&t, "Scan a -> Filter -> Projection").trim(),
            "Scan a -> Filter -> Projection: 3000 -> 2571 rows",
            "{t}"
        );
        assert_eq!(
            step(&t, "Joined rows of a, b -> Hash aggregate -> Sort").trim(),
            "Joined rows of a, b -> Hash aggregate -> Sort: 257 -> 3 rows",
            "{t}"
        );
        // The join's steps run inside the query that reads the join:
        // indented under it.
        let outer = step(&t, "Joined rows of a, b -> Hash aggregate -> Sort");
        let inner = step(&t, "Hash join (Inner) of (a) with (b)");
        let indent = |l: &str| l.len() - l.trim_start().len();
        assert!(indent(inner) > indent(outer), "{t}");
        assert!(t.contains("  hash join build: "), "{t}");

        // A semi join (IN a subquery), the subquery's rows hashed.
        let t = analyze(
            &db,
            "SELECT count(*) FROM b WHERE k IN (SELECT k * 10 FROM c)",
            threads,
        );
        let semi = t
            .lines()
            .find(|l| l.contains("Hash join (Semi)"))
            .unwrap_or_else(|| panic!("no semi join in\n{t}"));
        // b's 300 rows in, the 50 whose key is 10 times one of c's out
        // (c is read whole: its keys would filter nothing).
        assert!(semi.contains(": 300 -> 50 rows"), "{t}");

        // The subquery cut by its own condition to 40 of c's 100 rows:
        // its 20 keys filter b's scan (a semi join's subquery is a
        // runtime filter's source), and the 20 rows it keeps all pass.
        let t = analyze(
            &db,
            "SELECT count(*) FROM b WHERE k IN (SELECT k * 10 FROM c WHERE k < 20)",
            threads,
        );
        assert_eq!(
            step(&t, "Scan b -> Filter -> Projection").trim(),
            "Scan b -> Filter -> Projection: 300 -> 20 rows",
            "{t}"
        );
        assert!(
            t.contains("Runtime filter on b: (b.k = __sq1.c0) IN the keys of __sq1: 40 -> 20 rows"),
            "{t}"
        );
        assert_eq!(
            step(&t, "Hash join (Semi) of (b) with (__sq1)").trim(),
            "Hash join (Semi) of (b) with (__sq1): 20 -> 20 rows",
            "{t}"
        );

        // EXISTS over a larger table: b, cut to a third by its own
        // condition, is read first, and its 100 keys (0, 30, 60, …: a
        // has each once) filter the subquery's scan of a.
        let t = analyze(
            &db,
            "SELECT count(*) FROM b WHERE w = 'w0' AND EXISTS (SELECT 1 FROM a WHERE a.k = b.k)",
            threads,
        );
        assert!(
            t.contains(
                "Runtime filter on __sq1: (__sq1.c0 = b.k) IN the keys of b: 100 -> 100 rows"
            ),
            "{t}"
        );
        assert_eq!(
            step(&t, "Scan a -> Filter -> Projection").trim(),
            "Scan a -> Filter -> Projection: 3000 -> 100 rows",
            "{t}"
        );
        assert!(t.contains("Result: 1 rows in "), "{t}");
    }
}

#[test]
fn an_analyzed_query_is_held_to_the_memory_limit() {
    let dir = tables();
    let db = Database::open(dir.path().join("db")).unwrap();
    // (The join would go to disk; its sorted answer cannot.)
    let small = Memory::new(1 << 10);
    let e = query_with(
        &db,
        "EXPLAIN ANALYZE SELECT a.k, b.w FROM a JOIN b ON a.k = b.k ORDER BY a.k",
        &QueryOptions {
            memory: Some(small.clone()),
            ..Default::default()
        },
    )
    .err()
    .expect("past the limit");
    assert_eq!(e.sqlstate(), "53200", "{e}");
    assert_eq!(small.used(), 0);
}

#[test]
fn explain_without_analyze_runs_nothing_and_reports_no_steps() {
    let dir = tables();
    let db = Database::open(dir.path().join("db")).unwrap();
    // Under a 1-byte limit a run would fail: EXPLAIN only plans.
    let r = query_with(
        &db,
        "EXPLAIN SELECT b.w, count(*) FROM a JOIN b ON a.k = b.k GROUP BY b.w",
        &QueryOptions {
            memory: Some(Memory::new(1)),
            ..Default::default()
        },
    )
    .unwrap();
    let text = r.explain.unwrap();
    assert!(!text.contains("Steps"), "{text}");
    assert!(!text.contains("Result:"), "{text}");
}

/// A CTE the statement names twice is run once: its second use takes the
/// first's rows (one scan of its table in the profile), and the answer is
/// that of the statement written with the CTE's query twice. A second use
/// whose pushed-down condition differs is run again, as is a CTE named
/// once (nothing kept).
#[test]
fn a_cte_named_twice_runs_once_with_the_same_answer() {
    let dir = tables();
    let db = Database::open(dir.path().join("db")).unwrap();
    let run = |sql: &str| {
        crate::common::rows_of(
            &query_with(&db, sql, &QueryOptions::default())
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
                .batches,
        )
    };
    let scans = |text: &str| text.lines().filter(|l| l.contains("Scan a ")).count();
    let reused = |text: &str| {
        text.lines()
            .filter(|l| l.contains("(its rows from its first use)"))
            .count()
    };
    let cte = "WITH s AS (SELECT v, sum(k) AS t FROM a GROUP BY v) \
               SELECT x.v, x.t FROM s x, s y WHERE x.v = y.v AND y.t = (SELECT max(t) FROM s) ORDER BY x.v";
    let inlined = "SELECT x.v, x.t FROM (SELECT v, sum(k) AS t FROM a GROUP BY v) x, \
                   (SELECT v, sum(k) AS t FROM a GROUP BY v) y WHERE x.v = y.v AND \
                   y.t = (SELECT max(t) FROM (SELECT v, sum(k) AS t FROM a GROUP BY v) z) ORDER BY x.v";
    let want = run(inlined);
    assert_eq!(want.len(), 1, "{want:?}");
    assert_eq!(run(cte), want);
    for threads in [1, 2] {
        let text = analyze(&db, cte, threads);
        assert_eq!(scans(&text), 1, "{text}");
        assert_eq!(reused(&text), 2, "{text}");
        // The same subqueries written out: each runs.
        let text = analyze(&db, inlined, threads);
        assert_eq!(scans(&text), 3, "{text}");
    }
    // Different conditions pushed into each use: two runs, right answers.
    let pushed = "WITH s AS (SELECT v, sum(k) AS t FROM a GROUP BY v) \
                  SELECT x.v, y.v FROM s x, s y WHERE x.v = 1 AND y.v = 2";
    assert_eq!(
        run(pushed),
        vec![vec![Some("1".to_string()), Some("2".to_string())]]
    );
    let text = analyze(&db, pushed, 2);
    assert_eq!(scans(&text), 2, "{text}");
    assert_eq!(reused(&text), 0, "{text}");
    // Named once: nothing kept, nothing reused.
    let once = "WITH s AS (SELECT v, sum(k) AS t FROM a GROUP BY v) SELECT count(*) FROM s";
    assert_eq!(run(once), vec![vec![Some("7".to_string())]]);
    assert_eq!(reused(&analyze(&db, once, 2)), 0);
}
