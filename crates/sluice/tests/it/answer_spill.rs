//! Answers bigger than the memory limit (`QueryOptions::answer_to_disk`,
//! as `sluice query`, the server and Python run): past half the limit an
//! answer's rows go to disk as they are made and come back from
//! `QueryResult::later` a frame at a time, in order. Each query runs in
//! memory, then at a tenth of its peak and at a small budget, with 1 and
//! 3 workers, over a table of many segments in 3 shards: the same rows
//! in the same order (or, where the query gives none, the same rows),
//! some of them read back from disk, the pool never past its limit, no
//! spill file left once the answer is dropped.

use std::path::Path;

use sluice::query::memory::Memory;
use sluice::query::spill::Spill;
use sluice::query::{QueryOptions, query_with};
use sluice::store::Database;

use crate::common::{TempDir, load_bytes, no_spill_files, opts, rows_of};

type Rows = Vec<Vec<Option<String>>>;

/// `t(k, j, s, v)` of 40,000 rows (NULL `j` and `s` among them) cut into
/// 3 shards of segments of 900 rows; `u(j, w)` of 5,000.
fn tables() -> TempDir {
    let dir = TempDir::new("answerspill");
    let mut csv = String::from("k,j,s,v\n");
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..40_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let j = match i % 13 {
            0 => String::new(),
            _ => ((x >> 8) % 6_000).to_string(),
        };
        let s = match i % 17 {
            0 => String::new(),
            _ => format!("text-{}", (x >> 24) % 3_000),
        };
        csv.push_str(&format!("{i},{j},{s},{}\n", (x >> 40) % 100));
    }
    let laid_out = sluice::load::LoadOptions {
        shards: Some(3),
        block_size: Some(16 << 10),
        segment_rows: Some(900),
        ..opts("k BIGINT, j INT, s TEXT, v INT")
    };
    load_bytes(&dir, "t", csv.as_bytes(), &laid_out).unwrap();
    let mut csv = String::from("j,w\n");
    for j in (0..6_000).filter(|j| j % 7 != 0) {
        csv.push_str(&format!("{j},{}\n", j % 10));
    }
    load_bytes(&dir, "u", csv.as_bytes(), &opts("j INT, w INT")).unwrap();
    dir
}

/// A run with `threads` workers in morsels of `morsel` rows, under a
/// pool of `limit` bytes, spilling under `root`; its answer let go to
/// disk when `to_disk`.
fn limited(limit: u64, threads: usize, morsel: usize, root: &Path, to_disk: bool) -> QueryOptions {
    QueryOptions {
        threads: Some(threads),
        morsel_rows: Some(morsel),
        memory: Some(Memory::new(limit)),
        spill: Some(Spill::new(root)),
        answer_to_disk: to_disk,
        ..Default::default()
    }
}

/// Every row of an answer, those read back from disk too, formatted.
fn answer_rows(r: &sluice::query::QueryResult) -> sluice::Result<Rows> {
    let mut batches = Vec::new();
    r.for_each_batch(|b| {
        batches.push(b.clone());
        Ok::<_, sluice::Error>(())
    })?;
    Ok(rows_of(&batches))
}

/// What one run answered.
struct Answer {
    rows: Rows,
    /// Rows read back from disk.
    on_disk: usize,
    peak: u64,
}

fn run(
    db: &Database,
    sql: &str,
    limit: u64,
    threads: usize,
    root: &Path,
    to_disk: bool,
) -> sluice::Result<Answer> {
    let o = limited(limit, threads, 2048, root, to_disk);
    let memory = o.memory.clone().unwrap();
    let r = query_with(db, sql, &o);
    // (Its spill directory goes with the last of its files.)
    drop(o);
    assert!(memory.peak() <= limit, "{sql}: the pool passed its limit");
    let r = r?;
    let on_disk = r.later.iter().map(|l| l.rows).sum();
    let rows = answer_rows(&r)?;
    assert_eq!(rows.len(), r.num_rows(), "{sql}: rows counted");
    drop(r);
    no_spill_files(root);
    Ok(Answer {
        rows,
        on_disk,
        peak: memory.peak(),
    })
}

/// `sql` in memory, then at a tenth of its peak and at `small`: the same
/// rows (sorted first unless `ordered`), some read back from disk.
fn same_from_disk(db: &Database, root: &Path, sql: &str, small: u64, ordered: bool) {
    let answer = |limit: u64, threads: usize| {
        let mut a = run(db, sql, limit, threads, root, true)
            .unwrap_or_else(|e| panic!("{sql} (limit {limit}, {threads} threads): {e}"));
        if !ordered {
            a.rows.sort();
        }
        a
    };
    for threads in [1, 3] {
        let base = answer(1 << 40, threads);
        assert_eq!(base.on_disk, 0, "{sql}: on disk in memory");
        assert!(base.rows.len() > 1_000, "{sql}: {} rows", base.rows.len());
        for limit in [base.peak / 10, small] {
            let got = answer(limit, threads);
            assert!(
                got.on_disk > 0,
                "{sql}: no row on disk at {limit} of {} (threads {threads})",
                base.peak
            );
            assert_eq!(got.rows.len(), base.rows.len(), "{sql}: limit {limit}");
            assert!(
                got.rows == base.rows,
                "{sql}: limit {limit}, threads {threads}: rows differ"
            );
        }
    }
}

#[test]
fn answers_past_the_limit_come_back_from_disk_in_order() {
    let dir = tables();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    for sql in [
        // Sorted: the merge's frames past half the limit.
        "SELECT k, j, s, v FROM t ORDER BY s DESC NULLS LAST, k",
        "SELECT k, s FROM t ORDER BY v, k LIMIT 30000 OFFSET 4000",
        // The table's rows in its order, filtered, cut (a prefix).
        "SELECT * FROM t",
        "SELECT k, s FROM t WHERE v < 70",
        "SELECT k, s, v FROM t LIMIT 25000 OFFSET 3001",
        "SELECT k, s FROM t WHERE v > 10 OFFSET 20000",
        // Groups, a join's rows, window functions, sorted.
        "SELECT k % 20000 AS g, count(*), max(s) FROM t GROUP BY 1 ORDER BY 1",
        "SELECT t.k, u.w, t.s FROM t JOIN u ON t.j = u.j ORDER BY t.k",
        "SELECT k, row_number() OVER (ORDER BY k DESC), s FROM t ORDER BY k",
    ] {
        same_from_disk(&db, &root, sql, 256 << 10, true);
    }
    // No order asked for: the same rows.
    for sql in [
        "SELECT k % 20000 AS g, count(*), min(s) FROM t GROUP BY 1",
        "SELECT t.k, u.w, t.s FROM t JOIN u ON t.j = u.j",
        "SELECT k, s FROM t UNION ALL SELECT k + 1, s FROM t WHERE v < 50",
        "SELECT DISTINCT s, v FROM t",
    ] {
        same_from_disk(&db, &root, sql, 256 << 10, false);
    }
}

/// Not asked for (a caller that reads `batches` alone), the answer that
/// does not fit fails as before: nothing is dropped.
#[test]
fn an_answer_not_let_go_to_disk_fails_at_the_limit() {
    let dir = tables();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    for sql in ["SELECT k, j, s, v FROM t ORDER BY s, k", "SELECT * FROM t"] {
        let e = match run(&db, sql, 256 << 10, 3, &root, false) {
            Ok(a) => panic!("{sql}: answered {} rows at 256 KiB", a.rows.len()),
            Err(e) => e.to_string(),
        };
        assert!(
            e.contains("query result") || e.contains("scan result"),
            "{sql}: {e}"
        );
        let a = run(&db, sql, 256 << 10, 3, &root, true).unwrap();
        assert_eq!(a.rows.len(), 40_000, "{sql}");
    }
}

/// LIMIT without ORDER BY answers the table's first rows, whatever the
/// workers: they take the morsels of two batches in turn, and stopped
/// once the rows of the morsels done reached the limit, which were not
/// all the first (a review of answers past the limit found rows of a
/// later batch in place of the last 1,058 of TPC-H's `lineitem LIMIT
/// 300000 OFFSET 123457` on 2 workers).
#[test]
fn a_limit_without_order_answers_the_tables_first_rows() {
    let dir = tables();
    let db = Database::open(dir.path().join("db")).unwrap();
    let all = crate::common::rows_of(
        &sluice::query::query(&db, "SELECT k, s FROM t", Some(1))
            .unwrap()
            .batches,
    );
    assert_eq!(all.len(), 40_000);
    for (limit, offset) in [
        (100, 0),
        (2500, 7),
        (9000, 12345),
        (30000, 5000),
        (1, 39999),
    ] {
        for (threads, morsel) in [(1, 2048), (2, 2048), (3, 500), (4, 64)] {
            let r = query_with(
                &db,
                &format!("SELECT k, s FROM t LIMIT {limit} OFFSET {offset}"),
                &QueryOptions {
                    threads: Some(threads),
                    morsel_rows: Some(morsel),
                    ..Default::default()
                },
            )
            .unwrap();
            let got = rows_of(&r.batches);
            assert!(
                got == all[offset..offset + limit],
                "LIMIT {limit} OFFSET {offset}, {threads} workers, morsels of {morsel}: not the first rows"
            );
        }
    }
}

/// EXPLAIN ANALYZE of a query whose answer passes the limit runs it as
/// the query runs (its rows counted on disk), not failing at `query
/// result` (a review found it so on the CLI and the server).
#[test]
fn explain_analyze_of_an_answer_past_the_limit_counts_its_rows() {
    let dir = tables();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    for sql in ["SELECT k, j, s, v FROM t ORDER BY s, k", "SELECT * FROM t"] {
        let r = query_with(
            &db,
            &format!("EXPLAIN ANALYZE {sql}"),
            &limited(256 << 10, 2, 2048, &root, true),
        )
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let plan = r.explain.clone().unwrap();
        assert!(plan.contains("Result: 40000 rows"), "{sql}: {plan}");
        assert!(plan.contains("query result"), "{sql}: {plan}");
        assert!(r.later.is_empty(), "{sql}: the plan is the answer");
        drop(r);
        no_spill_files(&root);
    }
}

/// Under a small limit a batch's mapped pages are let go morsel by
/// morsel (morsels of 16 Ki rows or more) and once its columns are
/// checked: the rows read afterwards, and those kept, are the same
/// (pages are mapped again from the file; nothing else is let go).
#[test]
fn pages_let_go_under_morsels_read_back_the_same() {
    let dir = TempDir::new("answerpages");
    let mut csv = String::from("k,d,s,day\n");
    for i in 0..60_000u64 {
        let s = match i % 11 {
            0 => String::new(),
            _ => format!("word-{}-{}", i % 977, "x".repeat((i % 23) as usize)),
        };
        csv.push_str(&format!(
            "{i},{}.{:02},{s},2024-{:02}-{:02}\n",
            i % 5000,
            i % 100,
            1 + i % 12,
            1 + i % 28
        ));
    }
    load_bytes(
        &dir,
        "w",
        csv.as_bytes(),
        &opts("k BIGINT, d DECIMAL(12,2), s TEXT, day DATE"),
    )
    .unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    for sql in [
        "SELECT * FROM w ORDER BY s, k",
        "SELECT * FROM w",
        "SELECT k, s FROM w WHERE d > 100",
        "SELECT count(*), sum(d), max(s), min(day), count(s) FROM w",
        "SELECT day, count(*), sum(k), max(s) FROM w GROUP BY day ORDER BY day",
    ] {
        let at = |limit: u64, threads: usize| {
            let r = query_with(&db, sql, &limited(limit, threads, 20_000, &root, true))
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
            answer_rows(&r).unwrap()
        };
        let want = at(1 << 40, 1);
        assert!(!want.is_empty(), "{sql}");
        for threads in [1, 2, 3] {
            assert!(at(1 << 20, threads) == want, "{sql}: {threads} threads");
        }
        no_spill_files(&root);
    }
}
