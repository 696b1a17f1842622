//! Sorts past their memory limit: the rows of an ORDER BY (and a
//! worker's first rows under a LIMIT of many rows) that pass half the
//! limit are sorted to disk as runs and merged. Each query runs in
//! memory first; then at a tenth of its peak and at a small fixed
//! budget: the rows, in order, must be equal, bytes must have been
//! spilled, the pool must never pass its limit, and no spill file may be
//! left. Keys: unique, duplicated, NULL (first and last), text,
//! descending, an expression; LIMIT and OFFSET; over a grouping and a
//! join; ties keep the order the rows came in. Windows by partition:
//! their input written by the hash of a PARTITION BY column, then one
//! part at a time; windows of one partition: sorted through disk and
//! computed as the rows stream by.

use sluice::store::Database;

use crate::common::{
    SpillRun, TempDir, load_bytes, no_spill_files, opts, same_when_spilled, spill_run,
};

const ROWS: u64 = crate::common::SPILL_ROWS;

/// The tables of [`crate::common::spill_tables`] (`t(k, j, s, v, one)`,
/// `u(j, w)`).
fn tables() -> TempDir {
    crate::common::spill_tables("sortspill", 0x9E37_79B9_7F4A_7C15)
}

fn run(db: &Database, sql: &str, limit: u64, threads: usize, root: &std::path::Path) -> SpillRun {
    spill_run(db, sql, limit, threads, root)
        .unwrap_or_else(|e| panic!("{sql} (limit {limit}, {threads} threads): {e}"))
}

#[test]
fn orders_of_every_row_answer_the_same_from_runs_on_disk() {
    let dir = tables();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    for sql in [
        // Every row sorted; the answer its last rows (an answer must
        // fit: it is held whole).
        "SELECT k, v, s FROM t ORDER BY v DESC, s NULLS FIRST, k OFFSET 39950",
        "SELECT k, j FROM t ORDER BY j NULLS FIRST, k DESC OFFSET 39900 LIMIT 60",
        // Text keys with NULLs last, descending.
        "SELECT s, k FROM t ORDER BY s DESC NULLS LAST, k OFFSET 39960",
        // An expression (a hidden sort column) and a DOUBLE.
        "SELECT k FROM t ORDER BY (v * 0.37)::float8 DESC, j + k, k OFFSET 39970",
        // A LIMIT of most rows: each worker's first rows pass the limit.
        "SELECT k, s FROM t ORDER BY s NULLS FIRST, k LIMIT 50 OFFSET 34950",
    ] {
        same_when_spilled(&db, &root, sql, 256 << 10, false);
    }
}

#[test]
fn groupings_joins_and_derived_tables_sort_from_disk() {
    let dir = tables();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    for sql in [
        // The groups of a grouping, sorted by an aggregate.
        "SELECT s, count(*), sum(v) FROM t GROUP BY s ORDER BY count(*) DESC, s NULLS FIRST LIMIT 40 OFFSET 2900",
        // A join's rows.
        "SELECT t.k, u.w FROM t JOIN u ON t.j = u.j ORDER BY u.w DESC, t.k OFFSET 15850",
        // A derived table's first rows of many (a join's FROM item).
        "SELECT count(*), sum(x.k), min(x.s), max(x.s) FROM (SELECT k, s FROM t ORDER BY s DESC NULLS LAST, k LIMIT 30000) x JOIN u ON x.k = u.j",
        // A derived table's groups, not sorted, more than fit: its rows
        // go to disk as a FROM item's do.
        "SELECT count(*), sum(n), max(k) FROM (SELECT k, count(*) AS n FROM t GROUP BY k) z",
    ] {
        same_when_spilled(&db, &root, sql, 256 << 10, false);
    }
}

/// Rows that tie on every key keep the order they came in: sorted on
/// disk by `v` alone, they come out as the in-memory sort by `v` and
/// then by `k` (the load order) puts them.
#[test]
fn ties_keep_their_order_across_runs() {
    let dir = tables();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    for threads in [1, 3] {
        let want = run(
            &db,
            "SELECT k, v FROM t ORDER BY v DESC, k OFFSET 39000",
            1 << 40,
            threads,
            &root,
        );
        let got = run(
            &db,
            "SELECT k, v FROM t ORDER BY v DESC OFFSET 39000",
            128 << 10,
            threads,
            &root,
        );
        assert!(got.spilled > 0);
        assert_eq!(got.rows, want.rows, "threads {threads}");
        no_spill_files(&root);
    }
}

/// Nothing to sort, and an answer that does not fit: the one answers
/// with no row, the other fails with the memory error of the answer
/// (the query result), leaving no spill file.
#[test]
fn empty_inputs_and_answers_too_big_end_cleanly() {
    let dir = tables();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    let got = run(
        &db,
        "SELECT k FROM t WHERE v < 0 ORDER BY k DESC",
        64 << 10,
        2,
        &root,
    );
    assert!(got.rows.is_empty());
    let sql = "SELECT k, s FROM t ORDER BY s, k";
    let e = match spill_run(&db, sql, 256 << 10, 2, &root) {
        Ok(r) => panic!("{sql}: answered {} rows past the limit", r.rows.len()),
        Err(e) => e,
    };
    assert_eq!(e.sqlstate(), "53200", "{e}");
    // (Also where the merge's next frame finds no room beside it: the
    // answer is named, not the sort.)
    assert!(e.to_string().contains("query result"), "{e}");
    no_spill_files(&root);
}

/// Windows whose calls share a PARTITION BY column: past the limit the
/// input's rows go to disk by the hash of that column, and each part's
/// windows are computed alone (a part that does not fit is split
/// again). NULL keys are one partition; frames, ranks, offsets and
/// aggregates over them answer the same.
#[test]
fn windows_by_partition_answer_the_same_from_parts_on_disk() {
    let dir = tables();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    for sql in [
        // Text keys, NULL one partition; ranks and a running sum.
        "SELECT count(*), sum(r), max(r), sum(c) FROM (SELECT rank() OVER (PARTITION BY s ORDER BY v, k) r, sum(v) OVER (PARTITION BY s ORDER BY k ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) c FROM t) x",
        // Calls of two partitions that share `v`; an offset and a count.
        "SELECT v, sum(d), max(n) FROM (SELECT v, k - lag(k, 1, 0) OVER (PARTITION BY v, k % 3 ORDER BY k) d, count(*) OVER (PARTITION BY v) n FROM t) x GROUP BY v ORDER BY v LIMIT 30",
        // The window over a join's rows.
        "SELECT count(*), sum(r) FROM (SELECT row_number() OVER (PARTITION BY t.v, u.w ORDER BY t.k DESC) r FROM t JOIN u ON t.j = u.j) x",
    ] {
        same_when_spilled(&db, &root, sql, 256 << 10, false);
    }
}

/// Windows without PARTITION BY (every row one partition): past the
/// limit the rows are sorted through disk and the windows computed as
/// they stream by in order, a chunk at a time — ranks from the rows and
/// peer groups before a chunk, aggregates from the first row carried
/// from chunk to chunk, bounded frames and offsets over the chunk and
/// the rows around it, aggregates over every row computed first. Keys
/// with ties, NULLs first and last, text, descending; ties of a running
/// aggregate by RANGE (peers) across chunks, and peer groups larger than
/// a chunk (written to disk until their end is known).
#[test]
fn windows_of_one_partition_stream_from_disk() {
    let dir = tables();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    for sql in [
        // Positions and ranks over ties (`v` holds 100 values), NULL
        // keys first; doubles compared as whole numbers.
        "SELECT count(*), sum(n), max(n), sum(r), sum(d), max(d), sum((p * 1e9)::bigint), sum((c * 1e9)::bigint) FROM (SELECT row_number() OVER (ORDER BY j NULLS FIRST, v) n, rank() OVER (ORDER BY j NULLS FIRST, v) r, dense_rank() OVER (ORDER BY j NULLS FIRST, v) d, percent_rank() OVER (ORDER BY j NULLS FIRST, v) p, cume_dist() OVER (ORDER BY j NULLS FIRST, v) c FROM t) x",
        "SELECT q, count(*), min(k), max(k) FROM (SELECT k, ntile(7) OVER (ORDER BY v DESC, k) q FROM t) x GROUP BY q ORDER BY q",
        // Running aggregates by rows, over INT and text with NULLs.
        "SELECT sum(a), max(a), min(b), max(b), min(m), max(m), sum(length(m)) FROM (SELECT sum(v) OVER (ORDER BY k ROWS UNBOUNDED PRECEDING) a, min(j) OVER (ORDER BY k) b, max(s) OVER (ORDER BY k ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) m FROM t) x",
        // By peers: ties of `v` across chunks; a DOUBLE.
        "SELECT sum(c), sum(n), sum((f * 100)::bigint), sum(g), min(m), sum(length(m)) FROM (SELECT count(j) OVER (ORDER BY v) c, count(*) OVER (ORDER BY v) n, avg(v::float8) OVER (ORDER BY v) f, sum(j) OVER (ORDER BY v) g, max(s) OVER (ORDER BY v) m FROM t) x",
        "SELECT sum(g), count(g), sum(length(m)), count(m) FROM (SELECT sum(j) OVER (ORDER BY s DESC NULLS FIRST) g, min(s) OVER (ORDER BY s DESC NULLS FIRST) m FROM t) x",
        // Peer groups larger than a chunk (`j = 0` holds half the rows,
        // `one` all of them): on disk until their last row comes.
        "SELECT sum(g), count(g), sum(c), max(r), sum((d * 1e9)::bigint) FROM (SELECT sum(j) OVER (ORDER BY j) g, count(*) OVER (ORDER BY j) c, rank() OVER (ORDER BY j) r, cume_dist() OVER (ORDER BY j) d FROM t) x",
        "SELECT min(d), max(d), max(c), sum(r) FROM (SELECT cume_dist() OVER (ORDER BY one) d, count(s) OVER (ORDER BY one) c, row_number() OVER (ORDER BY one) r FROM t) x",
        // Bounded frames and offsets, reaching into the chunks before
        // and after.
        "SELECT sum(a), sum(l), count(l), sum(length(e)), min(f), sum(m), sum((g * 1000)::bigint) FROM (SELECT sum(v) OVER (ORDER BY k ROWS BETWEEN 3 PRECEDING AND 2 FOLLOWING) a, lag(k, 5) OVER (ORDER BY k) l, lead(s, 2, 'none') OVER (ORDER BY k) e, first_value(j) OVER (ORDER BY k ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) f, max(v) OVER (ORDER BY k ROWS BETWEEN 2 FOLLOWING AND 9 FOLLOWING) m, avg(v) OVER (ORDER BY k ROWS BETWEEN 40 PRECEDING AND CURRENT ROW) g FROM t) x",
        // Over every row, beside a rank; and without any ORDER BY.
        "SELECT sum(r), max(n), max(tot), min(lo), max(hi) FROM (SELECT rank() OVER (ORDER BY v, k) r, count(*) OVER () n, sum(v) OVER () tot, min(s) OVER (ORDER BY k ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) lo, max(j) OVER () hi FROM t) x",
        "SELECT sum(r), count(*), max(n) FROM (SELECT row_number() OVER () r, count(j) OVER () n FROM t) x",
        // The rows of a join, and the last rows themselves in order.
        "SELECT count(*), sum(r) FROM (SELECT row_number() OVER (ORDER BY t.k, u.w) r FROM t JOIN u ON t.j = u.j) x",
        "SELECT k, r, c FROM (SELECT k, rank() OVER (ORDER BY s DESC NULLS LAST) r, count(*) OVER (ORDER BY s DESC NULLS LAST) c FROM t) x ORDER BY r DESC, k LIMIT 25",
    ] {
        same_when_spilled(&db, &root, sql, 256 << 10, false);
    }
}

/// A window of one partition answers at every limit from a small one
/// up (a review found text keys refused at 256 and 384 KiB but not at
/// 320: the output kept in memory left no room for a chunk), and calls
/// over every row alone answer as they do beside an ordered call.
#[test]
fn windows_of_one_partition_answer_at_every_limit() {
    let dir = tables();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    for sql in [
        "SELECT sum(r), max(r), sum(d) FROM (SELECT rank() OVER (ORDER BY s DESC NULLS FIRST) r, dense_rank() OVER (ORDER BY s DESC NULLS FIRST) d FROM t) x",
        "SELECT count(x), max(x), max(n) FROM (SELECT max(s) OVER () x, count(*) OVER () n FROM t) z",
    ] {
        for threads in [1, 3] {
            let want = run(&db, sql, 1 << 40, threads, &root);
            for limit in (128..=512).step_by(64) {
                let got = run(&db, sql, limit << 10, threads, &root);
                assert_eq!(got.rows, want.rows, "{sql} at {limit} KiB");
                assert!(got.spilled > 0, "{sql} at {limit} KiB: nothing spilled");
                no_spill_files(&root);
            }
        }
    }
}

/// One partition bigger than the limit cannot be split: the query fails
/// with the window's memory error and leaves no spill file; so does a
/// window of one partition whose frames cannot stream (a RANGE offset,
/// a frame from the first row to one after the current one).
#[test]
fn a_partition_past_the_limit_fails_cleanly() {
    let dir = tables();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    for sql in [
        "SELECT count(*), sum(r) FROM (SELECT rank() OVER (PARTITION BY k % 2 ORDER BY s, k) r FROM t) x",
        "SELECT max(r) FROM (SELECT count(*) OVER (ORDER BY v RANGE BETWEEN 2 PRECEDING AND 2 FOLLOWING) r FROM t) x",
        "SELECT max(r) FROM (SELECT sum(v) OVER (ORDER BY k ROWS BETWEEN UNBOUNDED PRECEDING AND 1 FOLLOWING) r FROM t) x",
    ] {
        let e = match spill_run(&db, sql, 128 << 10, 2, &root) {
            Ok(r) => panic!("{sql}: answered {:?} past the limit", r.rows),
            Err(e) => e,
        };
        assert_eq!(e.sqlstate(), "53200", "{e}");
        assert!(e.to_string().contains("window needs"), "{sql}: {e}");
        no_spill_files(&root);
    }
}

/// A LIMIT of a few rows holds them alone, never spilling, however
/// small the limit; rows larger than a frame (texts of tens of
/// kilobytes) are read back a row at a time.
#[test]
fn few_first_rows_stay_in_memory_and_wide_rows_sort_from_disk() {
    let dir = tables();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    let sql = "SELECT k, s FROM t ORDER BY s DESC NULLS LAST, k LIMIT 3";
    for threads in [1, 3] {
        let base = run(&db, sql, 1 << 40, threads, &root);
        let got = run(&db, sql, 96 << 10, threads, &root);
        assert_eq!(got.spilled, 0, "{sql}: spilled");
        assert_eq!(got.rows, base.rows);
    }
    let mut csv = String::from("id,s\n");
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    for i in 0..200 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = 1_000 + (x % 40_000) as usize;
        let c = (b'a' + (x >> 20) as u8 % 8) as char;
        csv.push_str(&format!("{i},{}{}\n", c.to_string().repeat(len), i % 10));
    }
    load_bytes(&dir, "w", csv.as_bytes(), &opts("id INT, s TEXT")).unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    same_when_spilled(
        &db,
        &root,
        "SELECT id, length(s) FROM w ORDER BY s, id OFFSET 190",
        768 << 10,
        false,
    );
}

/// A LIMIT without ORDER BY answers the table's first rows: a morsel
/// keeps only the rows the answer could take from it, and no morsel is
/// read once those done hold them, so a small limit answers; a derived
/// table's groups cut by OFFSET, more than fit, go to disk.
#[test]
fn a_limit_without_order_holds_only_its_rows() {
    let dir = tables();
    let db = Database::open(dir.path().join("db")).unwrap();
    let root = dir.path().join("spill");
    for threads in [1, 3] {
        let sql = "SELECT k, s FROM t WHERE v > 10 LIMIT 5 OFFSET 3";
        let base = run(&db, sql, 1 << 40, threads, &root);
        assert_eq!(base.rows.len(), 5);
        let got = run(&db, sql, 64 << 10, threads, &root);
        assert_eq!(got.rows, base.rows, "threads {threads}");
        let sql = "SELECT count(*) FROM (SELECT k, count(*) AS n FROM t GROUP BY k OFFSET 7) z";
        let got = run(&db, sql, 256 << 10, threads, &root);
        assert_eq!(got.rows, vec![vec![Some((ROWS - 7).to_string())]]);
        assert!(got.spilled > 0);
        no_spill_files(&root);
    }
}
