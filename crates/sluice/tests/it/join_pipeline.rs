//! A join group's last join runs inside the operator that reads its rows
//! (see `query::join::pipeline`): the joined rows stream morsel by
//! morsel into the aggregate, so a join whose rows would pass the memory
//! limit answers when only its aggregate is kept; the build rows that no
//! probe matched (a FULL join's, a LEFT join hashed on its preserved
//! side) come once, after every morsel, at any number of workers.
//! Expected answers are counted here from the rows loaded.

use sluice::query::memory::Memory;
use sluice::query::{QueryOptions, query_with};
use sluice::store::Database;

use crate::common::{TempDir, load_bytes, opts, rows_of};

const ROWS: i64 = 200_000;

/// `t(k, v)`: `k` = 0..ROWS, `v` = k % 7.
fn table() -> TempDir {
    let dir = TempDir::new("joinpipe");
    let mut csv = String::from("k,v\n");
    for i in 0..ROWS {
        csv.push_str(&format!("{i},{}\n", i % 7));
    }
    load_bytes(&dir, "t", csv.as_bytes(), &opts("k BIGINT, v INT")).unwrap();
    dir
}

fn run(db: &Database, sql: &str, o: QueryOptions) -> sluice::Result<Vec<Vec<Option<String>>>> {
    Ok(rows_of(&query_with(db, sql, &o)?.batches))
}

fn with(threads: usize, morsel_rows: Option<usize>, memory: &Memory) -> QueryOptions {
    QueryOptions {
        threads: Some(threads),
        morsel_rows,
        memory: Some(memory.clone()),
        ..Default::default()
    }
}

fn cell(v: i64) -> Option<String> {
    Some(v.to_string())
}

#[test]
fn a_join_bigger_than_the_limit_streams_into_its_aggregate() {
    let dir = table();
    let db = Database::open(dir.path().join("db")).unwrap();
    // Each of t's 200,000 rows meets the 7 or 8 of the first 50 rows with
    // its v: 1.4 M joined rows of four columns (about 40 MiB made whole),
    // from 2.4 MiB of input.
    let sql = "SELECT count(*), sum(a.k + b.k) FROM t a JOIN t b ON a.v = b.v WHERE b.k < 50";
    let (mut count, mut sum) = (0i64, 0i64);
    for a in 0..ROWS {
        for b in 0..50 {
            if a % 7 == b % 7 {
                count += 1;
                sum += a + b;
            }
        }
    }
    assert_eq!(count, 1_428_572);
    let limit = 16 << 20;
    for threads in [1, 2] {
        let m = Memory::new(limit);
        let got = run(&db, sql, with(threads, None, &m)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(got, vec![vec![cell(count), cell(sum)]], "threads {threads}");
        assert!(m.peak() <= limit);
        assert_eq!(m.used(), 0);
    }
    // The same rows kept whole (every one is in the answer) still stop
    // at the limit.
    let m = Memory::new(limit);
    let e = run(
        &db,
        "SELECT a.k, b.k FROM t a JOIN t b ON a.v = b.v WHERE b.k < 50 ORDER BY 1, 2",
        with(2, None, &m),
    )
    .expect_err("1.4 M rows sorted in 16 MiB");
    assert_eq!(e.sqlstate(), "53200", "{e}");
    assert_eq!(m.used(), 0);
}

#[test]
fn unmatched_build_rows_come_once_after_every_morsel() {
    let dir = table();
    let db = Database::open(dir.path().join("db")).unwrap();
    let memory = Memory::with_default_limit();
    // LEFT join whose NULL-filled side is the larger: s (50 rows) is
    // hashed, t probes it, and s's rows no t row matched come last. s.k
    // = 10 v meets t's rows of that v for s.k in 0, 10, …, 60 (< 50: 5).
    let left = "SELECT count(*), count(b.k), sum(s.k) FROM (SELECT k FROM t WHERE k < 50) s \
                LEFT JOIN t b ON s.k = b.v * 10";
    let per_v = |v: i64| (0..ROWS).filter(|k| k % 7 == v).count() as i64;
    let matched: i64 = (0..5).map(per_v).sum();
    let matched_sum: i64 = (0..5).map(|v| per_v(v) * v * 10).sum();
    let lonely_sum: i64 = (0..50).filter(|k| k % 10 != 0).sum();
    let want_left = vec![vec![
        cell(matched + 45),
        cell(matched),
        cell(matched_sum + lonely_sum),
    ]];
    // FULL join: t probes the 50 rows of s; s.k + 199,990 is a k of t for
    // s.k < 10, so 40 of s's rows are unmatched.
    let full = "SELECT count(*), count(a.k), count(s.k) FROM t a \
                FULL JOIN (SELECT k FROM t WHERE k < 50) s ON a.k = s.k + 199990";
    let want_full = vec![vec![cell(ROWS + 40), cell(ROWS), cell(50)]];
    // The same with a condition over both sides after the join (WHERE):
    // it is applied to the unmatched rows too (NULL: dropped).
    let full_where = "SELECT count(*) FROM t a \
                FULL JOIN (SELECT k FROM t WHERE k < 50) s ON a.k = s.k + 199990 \
                WHERE a.k IS NULL OR a.k + coalesce(s.k, 0) >= 199990";
    // a.k >= 199990 unmatched (a.k < 199990 never matches: 0 ≤ s.k):
    // a.k 199990..199999 matched, and the 40 unmatched of s.
    let want_where = vec![vec![cell(10 + 40)]];
    for threads in [1, 2, 4] {
        for morsels in [None, Some(1000), Some(7)] {
            let o = || with(threads, morsels, &memory);
            let at = format!("threads {threads}, morsels {morsels:?}");
            assert_eq!(run(&db, left, o()).unwrap(), want_left, "{at}");
            assert_eq!(run(&db, full, o()).unwrap(), want_full, "{at}");
            assert_eq!(run(&db, full_where, o()).unwrap(), want_where, "{at}");
        }
    }
    assert_eq!(memory.used(), 0);

    // EXPLAIN ANALYZE lists the pipelined join with its rows, and the
    // aggregate reads the joined rows.
    let r = query_with(
        &db,
        &format!("EXPLAIN ANALYZE {left}"),
        &with(2, None, &memory),
    )
    .unwrap();
    let text = r.explain.unwrap();
    let rows = matched + 45;
    assert!(
        text.contains(&format!(
            "Hash join (Left) of (s) with (b): 200000 -> {rows} rows"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "Joined rows of s, b -> Aggregate: {rows} -> 1 rows"
        )),
        "{text}"
    );
}

/// A star (every build side keyed by the probe side's own columns) is
/// joined as one chain of row numbers per morsel: with two dimensions
/// that each multiply the rows, the rows of the first join alone (1.4 M
/// of four columns) would pass the limit; made a morsel at a time they
/// never exist whole, and only the columns read after the joins are
/// made. The fact table is cut into segments of a few hundred rows, its
/// dimensions have TEXT (dictionary-encoded), and a condition over two
/// dimensions and a NULL key are among the rows.
#[test]
fn a_star_of_joins_streams_as_one_chain_of_row_numbers() {
    let dir = TempDir::new("joinstar");
    let mut csv = String::from("k,v,s\n");
    for i in 0..ROWS {
        // Every 1,000th row has no v: it joins nothing.
        let v = if i % 1000 == 999 {
            String::new()
        } else {
            (i % 7).to_string()
        };
        csv.push_str(&format!("{i},{v},n{}\n", i % 3));
    }
    let o = sluice::load::LoadOptions {
        segment_rows: Some(800),
        dictionary_always: true,
        ..crate::common::opts("k BIGINT, v INT, s TEXT")
    };
    load_bytes(&dir, "t", csv.as_bytes(), &o).unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    let v_of = |i: i64| (i % 1000 != 999).then_some(i % 7);
    let sql = "SELECT count(*), sum(c1.k), sum(c2.k), min(c1.s || c2.s) \
               FROM t a, t c1, t c2 \
               WHERE a.v = c1.v AND c1.k < 50 AND a.v = c2.v AND c2.k < 100 \
               AND c1.s <> c2.s";
    let (mut count, mut s1, mut s2) = (0i64, 0i64, 0i64);
    for a in 0..ROWS {
        let Some(v) = v_of(a) else { continue };
        for c1 in (0..50).filter(|&c| v_of(c) == Some(v)) {
            for c2 in (0..100).filter(|&c| v_of(c) == Some(v)) {
                if c1 % 3 != c2 % 3 {
                    count += 1;
                    s1 += c1;
                    s2 += c2;
                }
            }
        }
    }
    let want = vec![vec![
        cell(count),
        cell(s1),
        cell(s2),
        Some("n0n1".to_string()),
    ]];
    let limit = 16 << 20;
    // (A morsel's own pairs, ~100 a row, must fit: morsels of a few
    // thousand rows.)
    for threads in [1, 3] {
        for morsels in [Some(700), Some(1500)] {
            let m = Memory::new(limit);
            let got = run(&db, sql, with(threads, morsels, &m))
                .unwrap_or_else(|e| panic!("threads {threads}, morsels {morsels:?}: {e}"));
            assert_eq!(got, want, "threads {threads}, morsels {morsels:?}");
            assert!(m.peak() <= limit);
            assert_eq!(m.used(), 0);
        }
    }
    // EXPLAIN ANALYZE shows each join of the chain with the rows it read
    // and made; the first reads every row of a that has a v.
    let m = Memory::new(limit);
    let r = query_with(
        &db,
        &format!("EXPLAIN ANALYZE {sql}"),
        &with(2, Some(1500), &m),
    )
    .unwrap();
    let text = r.explain.unwrap();
    let joins: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("Hash join (Inner)"))
        .collect();
    assert_eq!(joins.len(), 2, "{text}");
    assert!(joins.iter().all(|l| l.contains(", pipelined: ")), "{text}");
    // (a's rows without v are cut by c1's keys before the join.)
    let with_v = ROWS - ROWS / 1000;
    assert!(joins[0].contains(&format!(": {with_v} -> ")), "{text}");
}

/// A later join's key is evaluated over the rows the joins before it
/// kept, not over the whole morsel: `100 / g.v` and a cast of `g.s` fail
/// only on rows that the join with e1 drops (v = 0, s = 'x'), and the
/// query answers as when joined one by one.
#[test]
fn a_stars_later_keys_see_only_the_rows_kept_so_far() {
    let dir = TempDir::new("starkeys");
    let mut g = String::from("id,a,v,s\n");
    for i in 0..5000 {
        let (v, s) = if i % 100 == 0 { (5, "7") } else { (0, "x") };
        g.push_str(&format!("{i},{},{v},{s}\n", i % 1000));
    }
    let o = |schema: &str| crate::common::opts(schema);
    load_bytes(&dir, "g", g.as_bytes(), &o("id INT, a INT, v INT, s TEXT")).unwrap();
    load_bytes(&dir, "e1", b"a\n0\n", &o("a INT")).unwrap();
    let e2: String = (0..100).map(|k| format!("{k},m{k}\n")).collect();
    load_bytes(
        &dir,
        "e2",
        format!("k,m\n{e2}").as_bytes(),
        &o("k INT, m TEXT"),
    )
    .unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    let memory = Memory::with_default_limit();
    for threads in [1, 2] {
        let o = || with(threads, None, &memory);
        let got = run(
            &db,
            "SELECT count(*) FROM g JOIN e1 ON g.a = e1.a JOIN e2 ON 100 / g.v = e2.k",
            o(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(got, vec![vec![cell(5)]]);
        let got = run(
            &db,
            "SELECT g.id, e2.m FROM g JOIN e1 ON g.a = e1.a \
             JOIN e2 ON CAST(g.s AS INT) = e2.k ORDER BY 1",
            o(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let want: Vec<Vec<Option<String>>> = (0..5)
            .map(|i| vec![cell(i * 1000), Some("m7".into())])
            .collect();
        assert_eq!(got, want);
    }
}
