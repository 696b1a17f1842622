//! Queries past `--memory-limit` that spill (groupings, joins, sorts,
//! windows by partition): the answer of the query run in memory, the spill files gone after an answer, an error (a full
//! disk) or a kill (removed by the next start), and what was spilled
//! shown by `--timing` and EXPLAIN ANALYZE.

use std::path::Path;
use std::process::Command;

use super::{Tmp, fails, ok, sluice};

/// `t(k, v)`: 100,000 rows, `k` unique.
fn table(t: &Tmp) {
    let mut csv = String::from("k,v\n");
    for i in 0..100_000 {
        csv.push_str(&format!("{i},{}\n", i % 3));
    }
    t.write("t.csv", csv.as_bytes());
    ok(&t.0, &["load", "--schema", "k BIGINT, v INT", "t", "t.csv"]);
}

/// Entries of a spill root that are query directories or their locks.
fn spill_entries(root: &Path) -> Vec<String> {
    std::fs::read_dir(root)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("sluice-spill-"))
                .collect()
        })
        .unwrap_or_default()
}

/// `sql` under 512 KiB spilling into `root`, with the fault hook `fault`
/// set.
fn query_with_fault(t: &Tmp, root: &Path, fault: &str, sql: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .current_dir(&t.0)
        .env_remove("SLUICE_DB")
        .env("SLUICE_FAULT", fault)
        .args([
            "query",
            "--memory-limit",
            "512KiB",
            "--temp-dir",
            root.to_str().unwrap(),
            sql,
        ])
        .output()
        .unwrap()
}

const GROUPS: &str = "SELECT count(*), sum(n), max(k) FROM (SELECT k, count(*) AS n FROM t GROUP BY k HAVING k % 7 = 0) x";

/// A join whose sides and hash table pass 512 KiB: its FROM items' rows
/// go to disk, and it is made by partitions.
const JOINED: &str =
    "SELECT a.v, count(*), sum(b.k) FROM t a JOIN t b ON a.k = b.k + 1 GROUP BY a.v ORDER BY a.v";
const JOINED_CSV: &str =
    "v,count(*),sum(b.k)\n0,33333,1666650000\n1,33333,1666583334\n2,33333,1666616667\n";

/// Every row sorted (the answer its last rows), and a window by
/// partition over every row: past 512 KiB both go through disk.
const SORTED: &str = "SELECT k, v FROM t ORDER BY v DESC, k OFFSET 99995";
const WINDOWED: &str = "SELECT count(*), sum(r), max(r) FROM (SELECT rank() OVER (PARTITION BY k % 1000 ORDER BY v, k) r FROM t) x";

#[test]
fn a_sort_and_a_window_past_the_limit_spill_and_answer_as_in_memory() {
    let t = Tmp::new();
    table(&t);
    let root = t.0.join("scratch");
    for (sql, op) in [(SORTED, "sort: "), (WINDOWED, "window: ")] {
        let want = ok(&t.0, &["query", "--format", "csv", sql]);
        assert!(want.lines().count() > 1, "{want}");
        let out = sluice(
            &t.0,
            &[
                "query",
                "--memory-limit",
                "512KiB",
                "--temp-dir",
                root.to_str().unwrap(),
                "--timing",
                "--format",
                "csv",
                sql,
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{sql}: {stderr}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), want, "{sql}");
        assert!(stderr.contains("spilled: "), "{stderr}");
        assert_eq!(spill_entries(&root), Vec::<String>::new());
        let plan = ok(
            &t.0,
            &[
                "query",
                "--memory-limit",
                "512KiB",
                &format!("EXPLAIN ANALYZE {sql}"),
            ],
        );
        assert!(
            plan.lines()
                .any(|l| l.trim_start().starts_with(op) && l.contains(" runs")),
            "{op}: {plan}"
        );
    }
}

/// An answer of every row (100,000 rows, some 1.5 MiB) under a limit of
/// 512 KiB: past half the limit it goes to disk as it is made and is
/// printed from there, in every format and to a file, as in memory.
/// (Before, it failed at `query result`.)
#[test]
fn an_answer_bigger_than_the_limit_is_printed_from_disk() {
    let t = Tmp::new();
    table(&t);
    let root = t.0.join("scratch");
    let limited = |extra: &[&str], sql: &str| {
        let mut args = vec![
            "query",
            "--memory-limit",
            "512KiB",
            "--temp-dir",
            root.to_str().unwrap(),
            "--timing",
        ];
        args.extend_from_slice(extra);
        args.push(sql);
        let out = sluice(&t.0, &args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{sql} {extra:?}: {stderr}");
        assert!(stderr.contains("spilled: "), "{stderr}");
        assert_eq!(spill_entries(&root), Vec::<String>::new());
        (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
    };
    for sql in [
        "SELECT k, v FROM t ORDER BY v DESC, k",
        "SELECT k * 2 AS k2, v FROM t",
        "SELECT k, v FROM t LIMIT 90000 OFFSET 7",
    ] {
        for format in ["csv", "json", "table"] {
            let want = ok(&t.0, &["query", "--format", format, sql]);
            let (got, stderr) = limited(&["--format", format], sql);
            assert!(got == want, "{sql} as {format}: not the answer in memory");
            let rows = if sql.contains("LIMIT") {
                90_000
            } else {
                100_000
            };
            assert!(stderr.contains(&format!(" {rows} result rows")), "{stderr}");
        }
        let want = ok(&t.0, &["query", "--format", "csv", sql]);
        for file in ["out.csv", "out.parquet"] {
            let path = t.0.join(file);
            let _ = std::fs::remove_file(&path);
            limited(&["--output", path.to_str().unwrap()], sql);
            // Loaded back, in the file's order.
            let db = t.0.join("back.db");
            let _ = std::fs::remove_dir_all(&db);
            let db = db.to_str().unwrap();
            ok(&t.0, &["--db", db, "load", "back", file]);
            let back = ok(
                &t.0,
                &["--db", db, "query", "--format", "csv", "SELECT * FROM back"],
            );
            assert!(back == want, "{sql} to {file}: not the answer in memory");
        }
    }
}

#[test]
fn a_join_past_the_limit_spills_answers_and_leaves_nothing() {
    let t = Tmp::new();
    table(&t);
    assert_eq!(ok(&t.0, &["query", "--format", "csv", JOINED]), JOINED_CSV);
    let root = t.0.join("scratch");
    let out = sluice(
        &t.0,
        &[
            "query",
            "--memory-limit",
            "512KiB",
            "--temp-dir",
            root.to_str().unwrap(),
            "--timing",
            "--format",
            "csv",
            JOINED,
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), JOINED_CSV);
    assert!(stderr.contains("spilled: "), "{stderr}");
    assert_eq!(spill_entries(&root), Vec::<String>::new());
    // EXPLAIN ANALYZE names the join made by partitions and what each
    // part of the join spilled.
    let plan = ok(
        &t.0,
        &[
            "query",
            "--memory-limit",
            "512KiB",
            &format!("EXPLAIN ANALYZE {JOINED}"),
        ],
    );
    assert!(plan.contains("Grace hash join (Inner) of "), "{plan}");
    for op in ["grace hash join: ", "join (rows joined so far): "] {
        assert!(
            plan.lines()
                .any(|l| l.trim_start().starts_with(op) && l.contains(" runs")),
            "{op}: {plan}"
        );
    }
}

#[test]
fn a_grouping_past_the_limit_spills_answers_and_leaves_nothing() {
    let t = Tmp::new();
    table(&t);
    let want = ok(&t.0, &["query", "--format", "csv", GROUPS]);
    assert_eq!(want, "count(*),sum(n),max(k)\n14286,14286,99995\n");
    let root = t.0.join("scratch");
    let out = sluice(
        &t.0,
        &[
            "query",
            "--memory-limit",
            "512KiB",
            "--temp-dir",
            root.to_str().unwrap(),
            "--timing",
            "--format",
            "csv",
            GROUPS,
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
    assert!(stderr.contains("spilled: "), "{stderr}");
    assert!(stderr.contains("(removed)"), "{stderr}");
    assert!(root.is_dir(), "the root is made");
    assert_eq!(spill_entries(&root), Vec::<String>::new());
    // The default root: tmp in the database directory.
    let out = ok(
        &t.0,
        &[
            "query",
            "--memory-limit",
            "512KiB",
            "--format",
            "csv",
            GROUPS,
        ],
    );
    assert_eq!(out, want);
    assert!(t.0.join("sluice.db/tmp").is_dir());
    assert_eq!(
        spill_entries(&t.0.join("sluice.db/tmp")),
        Vec::<String>::new()
    );
    // EXPLAIN ANALYZE says what each operator spilled.
    let plan = ok(
        &t.0,
        &[
            "query",
            "--memory-limit",
            "512KiB",
            &format!("EXPLAIN ANALYZE {GROUPS}"),
        ],
    );
    assert!(plan.contains("Spilled to disk by operator:"), "{plan}");
    assert!(
        plan.lines()
            .any(|l| l.trim_start().starts_with("hash aggregate: ") && l.contains(" runs")),
        "{plan}"
    );
    // In memory: nothing spilled, no such lines.
    let plan = ok(&t.0, &["query", &format!("EXPLAIN ANALYZE {GROUPS}")]);
    assert!(!plan.contains("Spilled"), "{plan}");
}

#[test]
fn a_full_disk_fails_the_query_cleanly_and_leaves_no_spill_file() {
    let t = Tmp::new();
    table(&t);
    let root = t.0.join("scratch");
    for sql in [GROUPS, JOINED, SORTED, WINDOWED] {
        let o = query_with_fault(&t, &root, "disk-full-after=20000", sql);
        assert_eq!(o.status.code(), Some(2), "{sql}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("No space left on device"), "{err}");
        assert!(
            err.contains(root.to_str().unwrap()),
            "names the file: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(spill_entries(&root), Vec::<String>::new(), "{sql}");
    }
}

#[test]
fn a_query_killed_mid_spill_leaves_files_the_next_start_removes() {
    let t = Tmp::new();
    table(&t);
    let root = t.0.join("scratch");
    // (A join's spill files too: see below.)
    let o = query_with_fault(&t, &root, "spill-abort-after-bytes=30000", GROUPS);
    assert!(!o.status.success(), "the fault aborts it");
    assert_eq!(o.status.code(), None, "killed by a signal");
    let left = spill_entries(&root);
    assert_eq!(left.len(), 1, "its directory: {left:?}");
    let names: Vec<String> = std::fs::read_dir(root.join(&left[0]))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.contains(&"lock".to_string()), "{names:?}");
    assert!(names.len() > 1, "a run was being written: {names:?}");
    // The next start on the same root, whatever it runs, removes them.
    ok(
        &t.0,
        &["query", "--temp-dir", root.to_str().unwrap(), "SELECT 1"],
    );
    assert_eq!(spill_entries(&root), Vec::<String>::new());
    // And the query answers.
    assert_eq!(
        ok(
            &t.0,
            &[
                "query",
                "--memory-limit",
                "512KiB",
                "--temp-dir",
                root.to_str().unwrap(),
                "--format",
                "csv",
                GROUPS
            ]
        ),
        "count(*),sum(n),max(k)\n14286,14286,99995\n"
    );
    // A join, a sort and a window killed mid-spill: the same.
    for sql in [JOINED, SORTED, WINDOWED] {
        let o = query_with_fault(&t, &root, "spill-abort-after-bytes=30000", sql);
        assert_eq!(o.status.code(), None, "killed by a signal: {sql}");
        assert_eq!(spill_entries(&root).len(), 1, "{sql}");
        ok(
            &t.0,
            &["query", "--temp-dir", root.to_str().unwrap(), "SELECT 1"],
        );
        assert_eq!(spill_entries(&root), Vec::<String>::new(), "{sql}");
    }
}

#[test]
fn a_temp_dir_that_cannot_be_made_is_named_with_the_option() {
    let t = Tmp::new();
    table(&t);
    t.write("file", b"not a directory");
    let err = fails(
        &t.0,
        &[
            "query",
            "--memory-limit",
            "512KiB",
            "--temp-dir",
            "file/tmp",
            GROUPS,
        ],
    );
    assert!(err.contains("file/tmp"), "{err}");
    assert!(err.contains("--temp-dir"), "{err}");
}

/// `bench spill` under a memory limit: the grouping, the self-join, the
/// window by partition and the window of one partition answer (they
/// spill); under a tiny one, the queries refused are listed, not timed.
#[test]
fn bench_spill_times_what_answers_under_the_limit_and_lists_the_rest() {
    let t = Tmp::new();
    let base = [
        "bench",
        "spill",
        "--sf",
        "0.01",
        "--runs",
        "1",
        "--mode",
        "warm",
        "--queries",
        "1,5,7,9",
        "--no-peers",
        "--dir",
        "b",
    ];
    let out = ok(&t.0, &[&base[..], &["--memory-limit", "256KiB"]].concat());
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("spill: operators past the memory limit over TPC-H, SF 0.01, warm")
            && lines[0].contains("memory limit 256.0 KiB (both engines)"),
        "{out}"
    );
    for (line, name) in [(2, "S1"), (3, "S5"), (4, "S7"), (5, "S9")] {
        let s: Vec<&str> = lines[line].split_whitespace().collect();
        assert_eq!(s[0], name, "{out}");
        assert!(s[1].parse::<f64>().is_ok_and(|v| v > 0.0), "{out}");
    }
    assert!(out.contains("answered: 4 of 4"), "{out}");
    // At 32 KiB some are refused (the join's probe, the window's
    // partition): each such line names the error, and the summary them.
    let out = ok(&t.0, &[&base[..], &["--memory-limit", "32KiB"]].concat());
    let refused: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("sluice: out of memory"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(!refused.is_empty(), "{out}");
    assert!(
        out.contains(&format!(
            "answered: {} of 4 (not: {})",
            4 - refused.len(),
            refused.join(", ")
        )),
        "{out}"
    );
    // Its answer is the in-memory one: the same suite without the limit
    // answers all.
    let out = ok(&t.0, &base);
    assert!(!out.contains("out of memory"), "{out}");
    assert!(!out.contains("answered:"), "{out}");
}

/// `bench admission` runs its clients under the server's limit with and
/// without the wait, each answer compared with the query's alone (a
/// differing answer fails the command): every query is counted, as
/// answered or refused, and with the wait none fits alone yet is refused.
#[test]
fn bench_admission_counts_every_query_and_checks_every_answer() {
    let t = Tmp::new();
    let out = ok(
        &t.0,
        &[
            "bench",
            "admission",
            "--sf",
            "0.01",
            "--clients",
            "2",
            "--rounds",
            "1",
            "--queries",
            "3,18",
            "--memory-limit",
            "64MiB",
            "--runs",
            "1",
            "--dir",
            "b",
        ],
    );
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("2 clients x 1 rounds of TPC-H Q3,Q18 at SF 0.01"),
        "{out}"
    );
    for (line, wait) in lines[2..4].iter().zip(["0", "60s"]) {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f[0], wait, "{out}");
        assert_eq!(f[1], "4", "{out}");
        let (answered, refused): (f64, f64) = (f[2].parse().unwrap(), f[3].parse().unwrap());
        assert_eq!(answered + refused, 4.0, "{out}");
        if wait == "60s" {
            // 64 MiB holds either query at SF 0.01 alone.
            assert_eq!(refused, 0.0, "{out}");
        }
    }
}

/// Bytes in a size as EXPLAIN ANALYZE prints it (`539.2 KiB`).
fn size_bytes(text: &str) -> u64 {
    let mut words = text.split_whitespace();
    let v: f64 = words.next().and_then(|v| v.parse().ok()).unwrap();
    let unit = match words.next() {
        Some("B") => 1.0,
        Some("KiB") => 1024.0,
        Some("MiB") => 1024.0 * 1024.0,
        Some("GiB") => 1024.0 * 1024.0 * 1024.0,
        u => panic!("unit {u:?} in {text}"),
    };
    (v * unit) as u64
}

/// Every TPC-H query at SF 0.1 under a tenth of its own in-memory peak
/// (the peak EXPLAIN ANALYZE reports; at least 48 KiB, below which a
/// grouping's first table and a join's do not fit together, and at least
/// twice the answer's CSV size: the answer itself is held): the answer
/// of the query in memory, byte for byte, with 1 and 3 threads; most of
/// them spill. Q2, Q11 and Q22 were refused at a tenth at SF 1 (a
/// pipelined join's tables held while the answer was merged, a FROM item
/// filtered by a scalar subquery held whole).
#[test]
fn every_tpch_query_answers_at_a_tenth_of_its_peak() {
    let t = Tmp::new();
    ok(
        &t.0,
        &[
            "gen", "tpch", "--sf", "0.1", "--output", "csv", "--load", "-q",
        ],
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expected/tpch");
    let root = t.0.join("spill");
    std::fs::create_dir_all(&root).unwrap();
    let mut spilled = Vec::new();
    for q in 1..=22 {
        let sql = std::fs::read_to_string(dir.join(format!("q{q}.sql"))).unwrap();
        let want = ok(&t.0, &["query", "--format", "csv", &sql]);
        let explain = ok(&t.0, &["query", &format!("EXPLAIN ANALYZE {sql}")]);
        let peak = explain
            .split("peak query memory ")
            .nth(1)
            .and_then(|s| s.lines().next())
            .map(size_bytes)
            .unwrap_or_else(|| panic!("Q{q}: no peak in {explain}"));
        let limit = (peak / 10).max(48 << 10).max(2 * want.len() as u64);
        for threads in ["1", "3"] {
            let o = sluice(
                &t.0,
                &[
                    "query",
                    "--threads",
                    threads,
                    "--memory-limit",
                    &format!("{limit}B"),
                    "--temp-dir",
                    root.to_str().unwrap(),
                    "--timing",
                    "--format",
                    "csv",
                    &sql,
                ],
            );
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                o.status.success(),
                "Q{q} at {limit} B ({threads} threads, peak {peak} B): {err}"
            );
            assert_eq!(
                String::from_utf8_lossy(&o.stdout),
                want,
                "Q{q} at {limit} B, {threads} threads"
            );
            if threads == "3" && err.contains("spilled:") {
                spilled.push(q);
            }
            assert!(spill_entries(&root).is_empty(), "Q{q}: spill files left");
        }
    }
    assert!(spilled.len() >= 16, "only {spilled:?} spilled");
    // Q2 under 32 KiB: its first 100 rows, spilled, are merged once the
    // pipelined join's tables are let go (it failed at `query result`).
    let sql = std::fs::read_to_string(dir.join("q2.sql")).unwrap();
    let want = ok(&t.0, &["query", "--format", "csv", &sql]);
    for threads in ["1", "3"] {
        let got = ok(
            &t.0,
            &[
                "query",
                "--threads",
                threads,
                "--memory-limit",
                "32KiB",
                "--format",
                "csv",
                &sql,
            ],
        );
        assert_eq!(got, want, "Q2 at 32 KiB, {threads} threads");
    }
}
