//! `sluice convert`: text files to a Parquet dataset. Buckets hold what
//! the shards of a table loaded from the same files hold; a duplicate key
//! names both files and lines; a killed conversion leaves nothing, and
//! the next one publishes the whole dataset.

use std::path::Path;
use std::process::{Command, Stdio};

use super::{Tmp, fails, ok, sluice};

/// `n` rows `id,name,amount` with unique scrambled ids from `from` on.
fn rows(from: u64, n: u64) -> String {
    let mut s = String::from("id,name,amount\n");
    for i in from..from + n {
        let id = (i.wrapping_mul(2_654_435_761) % 1_000_003) as i64 - 500_000;
        let name = ["ann", "bo, jr", "", "cy"][(i % 4) as usize];
        let name = if name.contains(',') {
            format!("\"{name}\"")
        } else {
            name.to_string()
        };
        s.push_str(&format!("{id},{name},{}.{:02}\n", i % 997, i % 100));
    }
    s
}

fn hidden(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

fn csv(dir: &Path, db: &str, sql: &str) -> String {
    ok(dir, &["--db", db, "query", "--format", "csv", sql])
}

#[test]
fn buckets_hold_the_rows_of_the_sharded_tables_shards() {
    let t = Tmp::new();
    for i in 0..4 {
        t.write(&format!("in/{i}.csv"), rows(i * 500, 500).as_bytes());
    }
    let out = ok(
        &t.0,
        &[
            "convert",
            "--key",
            "id",
            "--buckets",
            "3",
            "--output",
            "ds",
            "in/",
        ],
    );
    assert!(out.starts_with("converted 2000 rows ("), "{out}");
    assert!(out.contains(" in 3 buckets by id"), "{out}");
    assert!(t.0.join("ds/_SUCCESS").is_file());
    ok(&t.0, &["load", "--key", "id", "--shards", "3", "t", "in/"]);
    ok(
        &t.0,
        &["export", "t", "--output", "exp", "--partition-by", "shard"],
    );
    for b in 0..3 {
        let (bt, st) = (format!("b{b}"), format!("s{b}"));
        ok(
            &t.0,
            &["--db", "x.db", "load", &bt, &format!("ds/bucket={b:02}")],
        );
        ok(
            &t.0,
            &["--db", "x.db", "load", &st, &format!("exp/shard={b:02}")],
        );
        let got = csv(&t.0, "x.db", &format!("SELECT * FROM {bt} ORDER BY id"));
        let want = csv(&t.0, "x.db", &format!("SELECT * FROM {st} ORDER BY id"));
        assert!(got.lines().count() > 100, "{got}");
        assert!(got == want, "bucket {b} differs from shard {b}");
    }
    let all: u64 = (0..3)
        .map(|b| {
            let n = csv(&t.0, "x.db", &format!("SELECT count(*) AS n FROM b{b}"));
            n.lines().nth(1).unwrap().parse::<u64>().unwrap()
        })
        .sum();
    assert_eq!(all, 2000);
}

#[test]
fn a_duplicate_key_names_both_files_and_lines_and_writes_nothing() {
    let t = Tmp::new();
    t.write("a.csv", b"id,v\n1,x\n2,y\n3,z\n");
    t.write("b.csv", b"id,v\n4,x\n5,y\n");
    t.write("c.csv", b"id,v\n6,x\n3,again\n");
    for extra in [&[][..], &["--buckets", "4"][..]] {
        let mut args = vec!["convert", "-q", "--key", "id", "--output", "out"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["a.csv", "b.csv", "c.csv"]);
        let err = fails(&t.0, &args);
        assert!(err.contains("duplicate key 3"), "{err}");
        assert!(err.contains("c.csv:3 repeats the key of a.csv:4"), "{err}");
        assert!(!t.0.join("out").exists());
        assert!(hidden(&t.0).is_empty(), "{:?}", hidden(&t.0));
    }
}

#[test]
fn dry_run_json_summary_rejects_and_formats() {
    let t = Tmp::new();
    t.write("a.csv", b"id,price\n1,2.50\n2,x\n3,4\n");
    let out = ok(&t.0, &["convert", "--dry-run", "--output", "out", "a.csv"]);
    assert!(out.contains("--schema \"id BIGINT, price TEXT\""), "{out}");
    assert!(!t.0.join("out").exists());
    let out = ok(
        &t.0,
        &[
            "convert",
            "--schema",
            "id INT, price DECIMAL(6,2)",
            "--rejects",
            "bad.csv",
            "--json",
            "--output",
            "out",
            "a.csv",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["rows"], 2);
    assert_eq!(v["rejected"], 1);
    assert_eq!(v["output"]["format"], "parquet");
    assert_eq!(v["output"]["files"], 1);
    assert_eq!(v["output"]["buckets"], 0);
    let bad = std::fs::read_to_string(t.0.join("bad.csv")).unwrap();
    assert!(bad.contains("a.csv") && bad.contains("2,x"), "{bad}");
    ok(&t.0, &["load", "p", "out"]);
    assert_eq!(
        csv(&t.0, "sluice.db", "SELECT id, price FROM p ORDER BY id"),
        "id,price\n1,2.50\n3,4.00\n"
    );
    // --key beside a --schema without PRIMARY KEY keys it.
    let out = ok(
        &t.0,
        &[
            "convert",
            "--dry-run",
            "--schema",
            "id INT, price TEXT",
            "--key",
            "id",
            "--buckets",
            "2",
            "--output",
            "k",
            "a.csv",
        ],
    );
    assert!(out.contains("id INT PRIMARY KEY, price TEXT"), "{out}");
    // JSON lines out; --overwrite replaces the dataset.
    ok(
        &t.0,
        &[
            "convert",
            "--schema",
            "id INT, price TEXT",
            "--output-format",
            "jsonl",
            "--overwrite",
            "--output",
            "out",
            "a.csv",
        ],
    );
    let body = std::fs::read_to_string(t.0.join("out/part-00000-000.jsonl")).unwrap();
    assert_eq!(
        body,
        "{\"id\": 1, \"price\": \"2.50\"}\n{\"id\": 2, \"price\": \"x\"}\n{\"id\": 3, \"price\": \"4\"}\n"
    );
}

#[test]
fn bad_options_are_refused_in_one_line() {
    let t = Tmp::new();
    t.write("a.csv", b"id,v\n1,x\n");
    let err = fails(&t.0, &["convert", "--buckets", "4", "-o", "out", "a.csv"]);
    assert!(err.contains("--key or --bucket-by"), "{err}");
    let err = fails(
        &t.0,
        &["convert", "-q", "--file-prefix", "_x", "-o", "out", "a.csv"],
    );
    assert!(err.contains("--file-prefix"), "{err}");
    let err = fails(
        &t.0,
        &[
            "convert",
            "-q",
            "--output-format",
            "xml",
            "-o",
            "out",
            "a.csv",
        ],
    );
    assert!(err.contains("xml"), "{err}");
    let err = fails(
        &t.0,
        &[
            "convert",
            "-q",
            "--buckets",
            "2",
            "--bucket-by",
            "nope",
            "-o",
            "out",
            "a.csv",
        ],
    );
    assert!(err.contains("--bucket-by nope"), "{err}");
    // --bucket-by needs --buckets: clap says so.
    let o = sluice(&t.0, &["convert", "--bucket-by", "v", "-o", "out", "a.csv"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--buckets"));
    // Parquet input is for load.
    ok(&t.0, &["convert", "-q", "-o", "pq", "a.csv"]);
    let err = fails(&t.0, &["convert", "-o", "again", "pq"]);
    assert!(err.contains("text inputs"), "{err}");
    assert!(!t.0.join("out").exists() && !t.0.join("again").exists());
}

#[test]
fn a_conversion_aborted_midway_leaves_nothing_and_the_next_publishes_whole() {
    let t = Tmp::new();
    t.write("a.csv", rows(0, 20_000).as_bytes());
    let args = [
        "convert",
        "--key",
        "id",
        "--buckets",
        "4",
        "--target-file-size",
        "16KiB",
        "--output",
        "out",
        "a.csv",
    ];
    // Abort the process (as kill -9 would stop it) after 2 files.
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .current_dir(&t.0)
        .env("SLUICE_FAULT", "export-abort-after-files=2")
        .args(args)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(!t.0.join("out").exists(), "a half dataset was published");
    assert_eq!(hidden(&t.0).len(), 1, "the aborted conversion's directory");
    let out = ok(&t.0, &args);
    assert!(out.starts_with("converted 20000 rows"), "{out}");
    assert!(hidden(&t.0).is_empty(), "{:?}", hidden(&t.0));
    ok(&t.0, &["load", "t", "out"]);
    assert_eq!(
        csv(
            &t.0,
            "sluice.db",
            "SELECT count(*) AS n, count(DISTINCT id) AS k FROM t"
        ),
        "n,k\n20000,20000\n"
    );
}

#[test]
fn sigkill_at_any_moment_leaves_nothing_or_the_whole_dataset() {
    let t = Tmp::new();
    ok(
        &t.0,
        &["gen", "ints", "--rows", "1500000", "--output", "big.csv"],
    );
    for (i, ms) in [30u64, 120, 300, 700].into_iter().enumerate() {
        let out = format!("out{i}");
        let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .current_dir(&t.0)
            .args([
                "convert",
                "--no-header",
                "--schema",
                "a BIGINT, b BIGINT, c BIGINT",
                "--buckets",
                "3",
                "--bucket-by",
                "a",
                "--output",
                &out,
                "big.csv",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(ms));
        let _ = child.kill();
        let _ = child.wait();
        if t.0.join(&out).exists() {
            // It finished first: the whole dataset.
            assert!(t.0.join(&out).join("_SUCCESS").is_file());
            let db = format!("{out}.db");
            ok(&t.0, &["--db", &db, "load", "t", &out]);
            assert_eq!(
                csv(&t.0, &db, "SELECT count(*) AS n FROM t"),
                "n\n1500000\n"
            );
        }
    }
    // A later conversion to the same name clears what a killed one left.
    t.write("small.csv", b"1,2,3\n");
    for i in 0..4 {
        let out = format!("out{i}");
        ok(
            &t.0,
            &[
                "convert",
                "--no-header",
                "--schema",
                "a BIGINT, b BIGINT, c BIGINT",
                "--output",
                &out,
                "--overwrite",
                "small.csv",
            ],
        );
    }
    assert!(hidden(&t.0).is_empty(), "{:?}", hidden(&t.0));
}

#[test]
fn a_bucketed_dataset_loads_back_a_bucket_a_shard() {
    let t = Tmp::new();
    for i in 0..4 {
        t.write(&format!("in/{i}.csv"), rows(i * 500, 500).as_bytes());
    }
    ok(
        &t.0,
        &[
            "convert",
            "--key",
            "id",
            "--buckets",
            "3",
            "--output",
            "ds",
            "in/",
        ],
    );
    ok(&t.0, &["load", "--key", "id", "--shards", "3", "t", "in/"]);
    // No --shards: a shard a bucket, said on stderr; every file placed whole.
    let o = sluice(&t.0, &["load", "back", "ds"]);
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("a dataset of 3 buckets by id: the new table gets 3 shards by id"),
        "{err}"
    );
    assert!(out.contains("loaded 2000 rows"), "{out}");
    assert!(
        out.contains("of a bucketed dataset went to their bucket's shard whole"),
        "{out}"
    );
    // Shard by shard, the table of the text files.
    for (table, dir) in [("t", "exp-t"), ("back", "exp-back")] {
        ok(
            &t.0,
            &["export", table, "--output", dir, "--partition-by", "shard"],
        );
    }
    for s in 0..3 {
        let (a, b) = (format!("a{s}"), format!("b{s}"));
        ok(
            &t.0,
            &["--db", "x.db", "load", &a, &format!("exp-t/shard={s:02}")],
        );
        ok(
            &t.0,
            &[
                "--db",
                "x.db",
                "load",
                &b,
                &format!("exp-back/shard={s:02}"),
            ],
        );
        let want = csv(&t.0, "x.db", &format!("SELECT * FROM {a} ORDER BY id"));
        let got = csv(&t.0, "x.db", &format!("SELECT * FROM {b} ORDER BY id"));
        assert!(want.lines().count() > 100, "{want}");
        assert!(got == want, "shard {s} differs");
    }
    // A key lookup finds a row through the shard its bucket became.
    let one = csv(&t.0, "sluice.db", "SELECT id FROM t ORDER BY id LIMIT 1");
    let id = one.lines().nth(1).unwrap();
    let got = csv(
        &t.0,
        "sluice.db",
        &format!("SELECT id, name, amount FROM back WHERE id = {id}"),
    );
    let want = csv(
        &t.0,
        "sluice.db",
        &format!("SELECT id, name, amount FROM t WHERE id = {id}"),
    );
    assert_eq!(got.lines().count(), 2, "{got}");
    assert_eq!(got, want);
    // --json counts the files placed whole; --shards 2 re-hashes every row.
    let j = ok(&t.0, &["load", "--json", "back2", "ds", "--shards", "2"]);
    let v: serde_json::Value = serde_json::from_str(j.trim()).unwrap();
    assert_eq!(v["files_by_bucket"], 0, "{j}");
    assert_eq!(v["rows"], 2000, "{j}");
    let j = ok(&t.0, &["load", "--json", "back3", "ds"]);
    let v: serde_json::Value = serde_json::from_str(j.trim()).unwrap();
    let files = std::fs::read_dir(t.0.join("ds"))
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).into_iter().flatten())
        .filter(|f| {
            f.as_ref()
                .is_ok_and(|f| f.path().extension().is_some_and(|x| x == "parquet"))
        })
        .count();
    assert!(files >= 3);
    assert_eq!(v["files_by_bucket"], files as u64, "{j}");
}
