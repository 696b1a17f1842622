//! Set operations past their memory limit: both sides' rows go to disk
//! by the hash of their whole row, and each of 64 parts is combined
//! alone (rows that are the same meet in one part); a part that does not
//! fit is split again. UNION ALL's sides past half the limit are read
//! back from disk by the workers. Each query runs in memory, then at a
//! tenth of its peak and at a small fixed budget: the same rows (in any
//! order: a set operation has none), bytes spilled, the pool never past
//! its limit, no spill file left. NULLs are one value; duplicates count
//! for the ALL forms.

use sluice::store::Database;

use crate::common::{same_when_spilled, spill_run};

/// The tables of [`crate::common::spill_tables`] (`t(k, j, s, v, one)`,
/// `u(j, w)`).
fn tables() -> crate::common::TempDir {
    crate::common::spill_tables("setopspill", 0x2545_F491_4F6C_DD1D)
}

#[test]
fn set_operations_combine_the_same_from_parts_on_disk() {
    let dir = tables();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    for sql in [
        // Distinct rows of both sides, NULLs one value.
        "SELECT count(*), sum(k), count(s), min(s), max(s) FROM (SELECT k, s FROM t UNION SELECT j, s FROM t) x",
        "SELECT count(*), min(s), max(v), count(j) FROM (SELECT s, v, j FROM t WHERE k % 2 = 0 INTERSECT SELECT s, v, j FROM t WHERE v < 60) x",
        "SELECT count(*), sum(v), count(j) FROM (SELECT j, v FROM t EXCEPT SELECT j, v FROM t WHERE k % 3 = 0) x",
        // The ALL forms count duplicates.
        "SELECT count(*), sum(v), count(j) FROM (SELECT v, j FROM t EXCEPT ALL SELECT v, j FROM t WHERE k % 5 = 0) x",
        "SELECT count(*), sum(v) FROM (SELECT v, one FROM t INTERSECT ALL SELECT v, one FROM t WHERE k % 3 = 0) x",
        // Nested, with a join's rows on one side; the rows themselves.
        "SELECT count(*), sum(j) FROM ((SELECT j, v FROM t UNION SELECT u.j, u.w FROM u JOIN t ON t.j = u.j) EXCEPT SELECT j, v FROM t WHERE v > 90) x",
        "SELECT s FROM t WHERE k % 4 = 0 EXCEPT SELECT s FROM t WHERE v < 50",
        // Every row of both sides, past the limit read from disk.
        "SELECT count(*), sum(k), count(s), max(s) FROM (SELECT k, s FROM t UNION ALL SELECT k + 1, s FROM t) x",
    ] {
        same_when_spilled(&db, &root, sql, 256 << 10, true);
    }
}

/// Many copies of one row (a review found every form but UNION ALL
/// refused at 4 MiB: a part of one row's copies cannot be split): each
/// side's rows go to disk once each with their count, so the copies
/// take one row; the ALL forms print a row as often as their counts say.
#[test]
fn copies_of_one_row_are_counted_not_held() {
    let dir = tables();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    for sql in [
        "SELECT count(*), sum(one) FROM (SELECT one FROM t INTERSECT ALL SELECT one FROM t WHERE k % 3 = 0) x",
        "SELECT count(*), sum(a) FROM (SELECT v % 2 AS a, one FROM t EXCEPT ALL SELECT v % 2, one FROM t WHERE k % 5 = 0) x",
        "SELECT count(*), sum(one) FROM (SELECT one, v / 50 FROM t UNION SELECT one, v / 50 FROM t WHERE k % 2 = 0) x",
        "SELECT count(*) FROM (SELECT one FROM t INTERSECT SELECT one FROM t WHERE v > 50 EXCEPT SELECT 2) x",
    ] {
        same_when_spilled(&db, &root, sql, 64 << 10, true);
    }
}

/// Nothing on one side, and SELECT DISTINCT of a set operation's rows:
/// the answers are the in-memory ones at a tiny limit.
#[test]
fn empty_sides_answer_past_the_limit() {
    let dir = tables();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    for (sql, want) in [
        (
            "SELECT count(*) FROM (SELECT k FROM t EXCEPT SELECT k FROM t WHERE v < 0) x",
            "40000",
        ),
        (
            "SELECT count(*) FROM (SELECT k FROM t WHERE v < 0 UNION SELECT k FROM t WHERE v < 0) x",
            "0",
        ),
        (
            "SELECT count(*) FROM (SELECT k FROM t INTERSECT SELECT k FROM t WHERE v < 0) x",
            "0",
        ),
    ] {
        for threads in [1, 3] {
            let got = spill_run(&db, sql, 128 << 10, threads, &root)
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
            assert_eq!(got.rows, vec![vec![Some(want.to_string())]], "{sql}");
            crate::common::no_spill_files(&root);
        }
    }
}
