//! A query past its memory limit (in an operator that does not spill)
//! fails with the error of the operator that would pass it (SQLSTATE 53200, naming the operator and the
//! limit), gives back every byte it reserved, and leaves the database as
//! it was; the same query under a limit it fits answers as before.

use sluice::query::memory::Memory;
use sluice::query::{QueryOptions, query_with};
use sluice::store::Database;

use crate::common::{TempDir, load_bytes, opts, rows_of};

const ROWS: usize = 200_000;

/// `t(k, g, v)`: `k` unique, `g` one of 50,000 texts, `v` small.
fn table() -> TempDir {
    let dir = TempDir::new("memlimit");
    let mut csv = String::from("k,g,v\n");
    for i in 0..ROWS {
        csv.push_str(&format!("{i},group-{},{}\n", i % 50_000, i % 7));
    }
    load_bytes(&dir, "t", csv.as_bytes(), &opts("k BIGINT, g TEXT, v INT")).unwrap();
    dir
}

fn run(db: &Database, sql: &str, memory: &Memory, threads: usize) -> sluice::Result<String> {
    let r = query_with(
        db,
        sql,
        &QueryOptions {
            threads: Some(threads),
            memory: Some(memory.clone()),
            ..Default::default()
        },
    )?;
    Ok(format!("{:?}", rows_of(&r.batches)))
}

/// `sql` fails under `limit` with the error of `operator`, and answers
/// `expected` under the default limit; every reservation is given back.
fn refused_then_answered(db: &Database, sql: &str, limit: u64, operator: &str, expected: &str) {
    for threads in [1, 2] {
        let small = Memory::new(limit);
        let e = run(db, sql, &small, threads).expect_err(sql);
        assert_eq!(e.sqlstate(), "53200", "{sql}: {e}");
        let text = e.to_string();
        assert!(text.contains(operator), "{sql}: {text}");
        assert!(
            text.contains(&sluice::query::memory::human_bytes(limit)),
            "{sql}: {text}"
        );
        assert!(text.contains("--memory-limit"), "{sql}: {text}");
        assert_eq!(small.used(), 0, "{sql}: reservations left after the error");
        assert!(small.peak() <= limit, "{sql}: the pool passed its limit");

        let enough = Memory::with_default_limit();
        let got = run(db, sql, &enough, threads).unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert!(got.starts_with(expected), "{sql}: {got:.200}");
        assert_eq!(
            enough.used(),
            0,
            "{sql}: reservations left after the answer"
        );
        assert!(
            enough.peak() > limit,
            "{sql}: counted {} bytes",
            enough.peak()
        );
    }
}

#[test]
fn each_operator_fails_past_the_limit_and_answers_under_it() {
    let dir = table();
    let db = Database::open(dir.path().join("db")).unwrap();
    // (A grouping past the limit spills instead: see `agg_spill`; so
    // do joins by keys: see `join_spill`, and sorts: see `sort_spill`.
    // A mark join, EXISTS under OR, does not.)
    // The join's two sides fit (1.6 MB of keys each); its hash table not.
    refused_then_answered(
        &db,
        "SELECT count(*) FROM t a WHERE EXISTS (SELECT 1 FROM t b WHERE b.k = a.k) OR a.v = 100",
        6 << 20,
        "hash join build",
        r#"[[Some("200000")]]"#,
    );
    // Sorted rows go to disk (see `sort_spill`), but the answer, 1.6 MB
    // of keys, is held whole.
    refused_then_answered(
        &db,
        "SELECT k FROM t ORDER BY k DESC",
        1 << 20,
        "query result",
        r#"[[Some("199999")], [Some("199998")], "#,
    );
    // A result of every row (a join's FROM item's rows would go to
    // disk: see `join_spill`).
    refused_then_answered(
        &db,
        "SELECT k, g FROM t WHERE v < 7",
        1 << 20,
        "scan result",
        r#"[[Some("0"), Some("group-0")], [Some("1"), Some("group-1")]"#,
    );
    // A window of one partition whose frames cannot stream (a RANGE
    // offset: see `sort_spill` for those that do) holds its input. (Set
    // operations spill: see `setop_spill`.)
    refused_then_answered(
        &db,
        "SELECT max(r) FROM (SELECT count(*) OVER (ORDER BY k RANGE BETWEEN 5 PRECEDING AND 5 FOLLOWING) AS r FROM t) x",
        2 << 20,
        "window",
        r#"[[Some("11")]]"#,
    );
}

#[test]
fn the_database_is_unchanged_and_the_next_query_runs() {
    let dir = table();
    let db = Database::open(dir.path().join("db")).unwrap();
    let before = run(
        &db,
        "SELECT count(*), sum(k) FROM t",
        &Memory::new(1 << 20),
        2,
    )
    .unwrap();
    // One pool for several queries, as a server's: a failed query leaves
    // nothing reserved for the next.
    let shared = Memory::new(1 << 20);
    for _ in 0..3 {
        let e = run(&db, "SELECT k FROM t ORDER BY k DESC", &shared, 2).unwrap_err();
        assert_eq!(e.sqlstate(), "53200", "{e}");
        assert_eq!(shared.used(), 0);
        assert_eq!(
            run(&db, "SELECT count(*), sum(k) FROM t", &shared, 2).unwrap(),
            before
        );
    }
    let db = Database::open(dir.path().join("db")).unwrap();
    assert_eq!(
        run(
            &db,
            "SELECT count(*), sum(k) FROM t",
            &Memory::with_default_limit(),
            1
        )
        .unwrap(),
        before
    );
}

/// Joins whose rows multiply (a key of many duplicates on both sides, a
/// cross product: billions of pairs) and go to disk (not the last step,
/// which streams into the operator above, a morsel in halves if need
/// be) stop at the spill's cap (nine tenths of the free space by
/// default) as a full disk does (53100), never filling the disk, or at
/// the memory limit where one probe row's pairs do not fit beside what
/// the other worker holds (53200), never in the allocator.
#[test]
fn joins_that_multiply_rows_stop_at_the_limit() {
    let dir = table();
    let db = Database::open(dir.path().join("db")).unwrap();
    let cap = ("53100", "spill files would pass 64.0 MiB (its limit");
    let probe = ("53200", "hash join probe");
    for (sql, stops) in [
        (
            "SELECT count(*) FROM t a JOIN t b ON a.v = b.v JOIN t c ON c.k = b.k",
            vec![cap, probe],
        ),
        // A cross product whose pairs carry columns (a bare count(*) of
        // one holds no columns, so no memory: it is slow, not refused).
        ("SELECT max(a.k + b.k) FROM t a, t b", vec![cap]),
    ] {
        let m = Memory::new(64 << 20);
        let root = dir.path().join("spill");
        let e = query_with(
            &db,
            sql,
            &QueryOptions {
                threads: Some(2),
                memory: Some(m.clone()),
                spill: Some(sluice::query::spill::Spill::limited(&root, 64 << 20)),
                ..Default::default()
            },
        )
        .err()
        .unwrap_or_else(|| panic!("{sql}: answered"));
        assert!(
            stops
                .iter()
                .any(|(code, what)| e.sqlstate() == *code && e.to_string().contains(what)),
            "{sql}: {e}"
        );
        assert_eq!(m.used(), 0, "{sql}");
        let left = std::fs::read_dir(&root).map_or(0, |d| d.count());
        assert_eq!(left, 0, "{sql}: spill files left");
    }
}
