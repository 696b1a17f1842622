//! The hash aggregate past its memory limit spills and answers what it
//! answers in memory (HAVING keeps a sample of the groups: the answer
//! itself is held in memory, and must fit): every aggregate function, text, integer, decimal
//! and multi-column keys with NULLs, one key holding half the rows,
//! HAVING, a grouping under a subquery, an empty input; one worker and
//! several, tiny morsels. Each query runs in memory first; its peak is
//! measured, and it runs again with a tenth of it (and with a fixed
//! small budget): the answers must be equal, bytes must have been
//! spilled, the pool must never pass its limit, and no spill file may be
//! left.

use sluice::query::memory::Memory;
use sluice::query::spill::Spill;
use sluice::query::{QueryOptions, query_with};
use sluice::store::Database;

use crate::common::{TempDir, load_bytes, no_spill_files, opts, rows_of};

const ROWS: u64 = 60_000;

/// `t(k, g, g2, h, n, d, m)`: `k` unique; `g` text, 'hot' in half the
/// rows, NULL in some; `g2` one of 5,000 texts; `h` an INT key, NULL
/// every 7th row; `n` small, NULL every 11th; `d` a double (halves: sums
/// exact in any order); `m` a decimal.
fn table() -> TempDir {
    table_laid_out(|o| o)
}

/// [`table`], its load options changed by `layout`.
fn table_laid_out(
    layout: impl FnOnce(sluice::load::LoadOptions) -> sluice::load::LoadOptions,
) -> TempDir {
    let dir = TempDir::new("aggspill");
    let mut csv = String::from("k,g,g2,h,n,d,m\n");
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..ROWS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let g = match x % 20 {
            0..=9 => "hot".to_string(),
            10 => String::new(),
            _ => format!("g{}", x % 9_000),
        };
        let g2 = format!("k{}", (x >> 8) % 5_000);
        let h = if i % 7 == 0 {
            String::new()
        } else {
            ((x >> 20) % 300).to_string()
        };
        let n = if i % 11 == 0 {
            String::new()
        } else {
            ((x >> 30) % 9).to_string()
        };
        let d = ((x >> 33) % 2_000) as f64 / 2.0 - 300.0;
        let m = format!("{}.{:02}", (x >> 40) % 1_000, (x >> 50) % 100);
        csv.push_str(&format!("{i},{g},{g2},{h},{n},{d},{m}\n"));
    }
    load_bytes(
        &dir,
        "t",
        csv.as_bytes(),
        &layout(opts(
            "k BIGINT, g TEXT, g2 TEXT, h INT, n INT, d DOUBLE, m DECIMAL(12,2)",
        )),
    )
    .unwrap();
    dir
}

struct Run {
    rows: Vec<Vec<Option<String>>>,
    peak: u64,
    spilled: u64,
}

fn run(db: &Database, sql: &str, limit: u64, threads: usize, root: &std::path::Path) -> Run {
    let memory = Memory::new(limit);
    let spill = Spill::new(root);
    let r = query_with(
        db,
        sql,
        &QueryOptions {
            threads: Some(threads),
            morsel_rows: Some(4096),
            memory: Some(memory.clone()),
            spill: Some(spill.clone()),
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("{sql} (limit {limit}, {threads} threads): {e}"));
    assert_eq!(memory.used(), 0, "{sql}: reservations left");
    assert!(memory.peak() <= limit, "{sql}: the pool passed its limit");
    let mut rows = rows_of(&r.batches);
    rows.sort();
    drop(r);
    Run {
        rows,
        peak: memory.peak(),
        spilled: spill.bytes_written(),
    }
}

/// `sql` in memory, then at `1/divisor` of its peak and at `small`: the
/// same rows, spilled.
fn same_when_spilled(db: &Database, root: &std::path::Path, sql: &str, small: u64, divisor: u64) {
    for threads in [1, 3] {
        let base = run(db, sql, 1 << 40, threads, root);
        assert_eq!(base.spilled, 0, "{sql}: spilled in memory");
        assert!(!base.rows.is_empty() || sql.contains("k < 0"), "{sql}");
        for limit in [base.peak / divisor, small] {
            let got = run(db, sql, limit, threads, root);
            assert!(
                got.spilled > 0,
                "{sql}: nothing spilled at {limit} of {} (threads {threads})",
                base.peak
            );
            assert_eq!(
                got.rows, base.rows,
                "{sql}: limit {limit}, threads {threads}"
            );
            no_spill_files(root);
        }
    }
}

#[test]
fn every_aggregate_answers_the_same_when_spilled() {
    let dir = table();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    same_when_spilled(
        &db,
        &root,
        "SELECT g2, count(*), count(n), sum(n), avg(n), min(n), max(n), sum(d), avg(d), \
         min(d), max(g), min(m), sum(m), avg(m), count(DISTINCT n), count(DISTINCT g), \
         count(DISTINCT m), round(var_samp(n), 6), round(stddev_pop(d), 6), bool_and(n > 3), \
         bool_or(n > 5), string_agg(CAST(k AS TEXT), ',' ORDER BY k), \
         percentile_cont(0.5) WITHIN GROUP (ORDER BY d), \
         percentile_disc(0.25) WITHIN GROUP (ORDER BY n), mode() WITHIN GROUP (ORDER BY n), \
         array_agg(n ORDER BY k), approx_count_distinct(k), approx_count_distinct(m) \
         FROM t GROUP BY g2 HAVING min(k) % 40 < 2",
        256 << 10,
        10,
    );
}

#[test]
fn skewed_null_and_multi_column_keys_answer_the_same_when_spilled() {
    let dir = table();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    for sql in [
        // One key ('hot') holds half the rows; NULL keys group together.
        "SELECT g, h, count(*), sum(n), min(g2), max(k), count(DISTINCT n), sum(m) FROM t \
         GROUP BY g, h HAVING max(k) % 20 = 0 OR g = 'hot'",
        "SELECT h, n, count(*), sum(d) FROM t GROUP BY h, n HAVING min(k) % 10 = 0",
        "SELECT m, count(*), max(g) FROM t GROUP BY m HAVING max(k) % 50 = 0",
        // Every row its own group.
        "SELECT k, sum(n), min(g) FROM t GROUP BY k HAVING max(k) % 500 = 0",
        "SELECT k % 20000 AS r, sum(n), count(*) FROM t GROUP BY k % 20000 HAVING sum(n) > 20",
        "SELECT count(*), sum(c) FROM (SELECT g, n, count(*) AS c FROM t GROUP BY g, n HAVING max(k) % 7 = 0) x",
    ] {
        same_when_spilled(&db, &root, sql, 128 << 10, 10);
    }
    // The grouping of a subquery (TPC-H Q18's shape): the semi join's
    // runtime filter does not spill; the budget leaves room for it.
    same_when_spilled(
        &db,
        &root,
        "SELECT count(*), sum(n) FROM t WHERE k IN \
         (SELECT k % 30000 FROM t GROUP BY k % 30000 HAVING sum(n) > 14)",
        512 << 10,
        3,
    );
}

/// SELECT DISTINCT is made by the hash aggregate, so it spills too:
/// skew ('hot' in half the rows), NULLs, doubles, several columns. (Its
/// distinct rows must fit: a subquery's answer is held whole, and a
/// sort of many rows does not spill.)
#[test]
fn select_distinct_answers_the_same_when_spilled() {
    let dir = table();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    for sql in [
        "SELECT DISTINCT g, n FROM t WHERE k % 97 = 0 OR g IS NULL ORDER BY g, n LIMIT 50",
        "SELECT count(*), count(g), sum(n) FROM (SELECT DISTINCT g, n FROM t) x",
        "SELECT count(*), count(h), sum(n) FROM (SELECT DISTINCT h, n, g IS NULL FROM t) x",
        "SELECT count(*), min(h), max(n) FROM (SELECT DISTINCT h, n FROM t WHERE m < 500) x",
    ] {
        same_when_spilled(&db, &root, sql, 256 << 10, 10);
    }
}

#[test]
fn an_empty_input_and_a_grouping_that_fits_do_not_spill() {
    let dir = table();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    let r = run(
        &db,
        "SELECT g, count(*) FROM t WHERE k < 0 GROUP BY g",
        64 << 10,
        2,
        &root,
    );
    assert_eq!((r.rows.len(), r.spilled), (0, 0));
    let r = run(
        &db,
        "SELECT n, count(*) FROM t GROUP BY n",
        1 << 20,
        2,
        &root,
    );
    assert_eq!((r.rows.len(), r.spilled), (10, 0));
    // Nothing spilled, nothing made.
    assert!(!root.exists());
}

/// One group whose state alone outgrows the limit (a COUNT(DISTINCT) of
/// every row) cannot be split: the query fails with the memory-limit
/// error, its reservations and spill files gone.
#[test]
fn one_group_past_the_limit_fails_cleanly() {
    let dir = table();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    let memory = Memory::new(256 << 10);
    let e = query_with(
        &db,
        "SELECT g IS NULL, count(DISTINCT k), count(DISTINCT g2) FROM t GROUP BY g IS NULL",
        &QueryOptions {
            threads: Some(2),
            morsel_rows: Some(4096),
            memory: Some(memory.clone()),
            spill: Some(Spill::new(&root)),
            ..Default::default()
        },
    )
    .err()
    .expect("one group's state does not fit");
    assert_eq!(e.sqlstate(), "53200", "{e}");
    assert!(e.to_string().contains("hash aggregate"), "{e}");
    assert_eq!(memory.used(), 0);
    no_spill_files(&root);
}

/// approx_count_distinct beside count(DISTINCT): equal for a group of at
/// most 512 distinct values, within four standard errors (6.5 %) past
/// that (the 'hot' group's 30,000 keys, the table's 60,000); the same
/// answer from one worker or three, in memory or spilled (sketches merge
/// exactly).
#[test]
fn approx_count_distinct_is_near_the_exact_count_however_it_runs() {
    let dir = table();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    let sql = "SELECT g, approx_count_distinct(k), count(DISTINCT k), \
               approx_count_distinct(d), count(DISTINCT d) FROM t GROUP BY g \
               UNION ALL SELECT 'all', approx_count_distinct(k), count(DISTINCT k), \
               approx_count_distinct(h), count(DISTINCT h) FROM t";
    let base = run(&db, sql, 1 << 30, 1, &root);
    let mut dense = 0;
    for row in &base.rows {
        for (a, e) in [(1, 2), (3, 4)] {
            let approx: f64 = row[a].as_deref().unwrap().parse().unwrap();
            let exact: f64 = row[e].as_deref().unwrap().parse().unwrap();
            if exact <= 512.0 {
                assert_eq!(approx, exact, "{row:?}");
            } else {
                dense += 1;
                assert!(
                    (approx - exact).abs() / exact < 0.065,
                    "{row:?}: {approx} for {exact}"
                );
            }
        }
    }
    assert!(dense >= 3, "no group large enough: {:?}", base.rows);
    let grouped = "SELECT g, approx_count_distinct(k), approx_count_distinct(d) FROM t GROUP BY g";
    let one = run(&db, grouped, 1 << 30, 1, &root);
    for threads in [1, 3] {
        let spilled = run(&db, grouped, 256 << 10, threads, &root);
        assert!(spilled.spilled > 0, "nothing spilled");
        assert_eq!(spilled.rows, one.rows, "{threads} threads, spilled");
        assert_eq!(run(&db, grouped, 1 << 30, threads, &root).rows, one.rows);
    }
    no_spill_files(&root);
}

/// The table cut into 4 shards of about 19 segments each: morsels of
/// every segment and shard feed the spilling workers, and the answers are
/// those in memory.
#[test]
fn a_table_of_many_segments_and_shards_answers_the_same_when_spilled() {
    let dir = table_laid_out(|o| sluice::load::LoadOptions {
        shards: Some(4),
        block_size: Some(16 << 10),
        segment_rows: Some(800),
        ..o
    });
    let db = Database::open(dir.path().join("db")).unwrap();
    let segments: usize = db.table("t").unwrap().segments.len();
    assert!(segments >= 60, "only {segments} segments");
    let root = dir.path().join("spill");
    for sql in [
        "SELECT g, count(*), sum(n), count(DISTINCT n), approx_count_distinct(k) FROM t \
         GROUP BY g HAVING max(k) % 20 = 0 OR g = 'hot'",
        "SELECT k % 20000 AS r, sum(n), min(g2), string_agg(g, ',' ORDER BY k) FROM t \
         GROUP BY k % 20000 HAVING sum(n) > 20",
    ] {
        same_when_spilled(&db, &root, sql, 128 << 10, 10);
    }
}
