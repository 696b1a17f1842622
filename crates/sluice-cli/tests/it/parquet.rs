//! Parquet (and CSV / JSON-lines) datasets: `sluice export` out,
//! `sluice load` back in, Hive partitions, atomic publication, and
//! DuckDB reading what sluice wrote and writing what sluice reads.

use std::process::Command;

use super::{Tmp, duckdb_available, fails, ok, sluice};

const ALL_TYPES: &str = "id BIGINT, n INT, amount DECIMAL(18,4), x DOUBLE, flag BOOLEAN, d DATE, ts TIMESTAMP, label TEXT, note TEXT";

/// Rows with every type, NULLs, empty strings, extreme decimals and
/// dates, and text a partition directory must escape.
fn all_types_csv() -> String {
    let mut s = String::from("id,n,amount,x,flag,d,ts,label,note\n");
    s.push_str("1,2147483647,99999999999999.9999,1.5,true,0001-01-01,2024-02-29 23:59:59.999999,a/b=c d,\"\"\n");
    s.push_str("2,-2147483648,-99999999999999.9999,-0.25,false,9999-12-31,1970-01-01 00:00:00,100%,\"line\nbreak\"\n");
    s.push_str("3,,,,,,,,\n");
    s.push_str(
        "4,0,0.0001,1e300,true,1969-12-31,1900-01-01 12:00:00.5,a/b=c d,\"quote \"\" inside\"\n",
    );
    for i in 5..200 {
        s.push_str(&format!(
            "{i},{},{}.{:04},{}.5,{},2024-01-{:02},2024-01-01 00:00:{:02},{},n{i}\n",
            i * 7,
            i * 13,
            i % 10000,
            i,
            i % 2 == 0,
            i % 28 + 1,
            i % 60,
            ["red", "green", "blue"][i % 3]
        ));
    }
    s
}

/// The rows of a query as CSV.
fn rows(dir: &std::path::Path, db: &str, sql: &str) -> String {
    ok(dir, &["--db", db, "query", "--format", "csv", sql])
}

#[test]
fn parquet_round_trip_keeps_every_value_type_key_and_shard() {
    let t = Tmp::new();
    t.write("all.csv", all_types_csv().as_bytes());
    ok(
        &t.0,
        &[
            "load", "--schema", ALL_TYPES, "--key", "id", "--shards", "3", "t", "all.csv",
        ],
    );
    // A dataset by shard, one file, and a dataset by a text column.
    ok(
        &t.0,
        &[
            "export",
            "t",
            "--output",
            "by_shard",
            "--partition-by",
            "shard",
        ],
    );
    for s in 0..3 {
        let d = t.0.join(format!("by_shard/shard={s:02}"));
        assert!(d.is_dir(), "{} missing", d.display());
    }
    assert!(t.0.join("by_shard/_SUCCESS").is_file());
    ok(&t.0, &["export", "t", "--output", "one.parquet"]);
    ok(
        &t.0,
        &[
            "export",
            "t",
            "--output",
            "by_label",
            "--partition-by",
            "label",
        ],
    );
    let names: Vec<String> = std::fs::read_dir(t.0.join("by_label"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    for want in [
        "label=a%2Fb%3Dc%20d",
        "label=100%25",
        "label=__HIVE_DEFAULT_PARTITION__",
        "label=red",
        "_SUCCESS",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
    }

    let all = "SELECT id, n, amount, x, flag, d, ts, label, note FROM {} ORDER BY id";
    let want = rows(&t.0, "sluice.db", &all.replace("{}", "t"));
    assert!(want.contains("99999999999999.9999") && want.contains("0001-01-01"));
    // Back in: each way gives the same rows, types and key.
    let out = ok(
        &t.0,
        &[
            "--db",
            "back.db",
            "load",
            "--commit-every",
            "1files",
            "s",
            "by_shard",
        ],
    );
    assert!(out.contains("skipped 1 bookkeeping file"), "{out}");
    assert!(out.contains("committed in 3 groups of files"), "{out}");
    ok(&t.0, &["--db", "back.db", "load", "one", "one.parquet"]);
    ok(
        &t.0,
        &[
            "--db",
            "back.db",
            "load",
            "--hive-partitioning",
            "l",
            "by_label",
        ],
    );
    for table in ["s", "one", "l"] {
        assert_eq!(
            rows(&t.0, "back.db", &all.replace("{}", table)),
            want,
            "table {table}"
        );
        ok(&t.0, &["--db", "back.db", "check", table]);
    }
    let info = ok(&t.0, &["--db", "back.db", "info", "one", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!(
        v[0]["schema"].as_str().unwrap(),
        "id BIGINT PRIMARY KEY, n INT, amount DECIMAL(18,4), x DOUBLE, flag BOOLEAN, d DATE, ts TIMESTAMP, label TEXT, note TEXT"
    );
    // The key came back, with its index.
    let got = ok(
        &t.0,
        &["--db", "back.db", "get", "one", "4", "--format", "csv"],
    );
    assert!(got.contains("0.0001"), "{got}");
    // The partition column comes last, typed by the files' metadata.
    let info = ok(&t.0, &["--db", "back.db", "info", "l", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert!(
        v[0]["schema"]
            .as_str()
            .unwrap()
            .ends_with("note TEXT, label TEXT"),
        "{v}"
    );

    // Loading the same files again skips them (the journal).
    let again = ok(&t.0, &["--db", "back.db", "load", "one", "one.parquet"]);
    assert!(
        again.contains("skipped 1 file loaded by earlier commits"),
        "{again}"
    );
    // A duplicate key from Parquet commits nothing.
    ok(
        &t.0,
        &[
            "export",
            "t",
            "--output",
            "dup.parquet",
            "--where",
            "id = 1",
        ],
    );
    let e = fails(&t.0, &["--db", "back.db", "load", "one", "dup.parquet"]);
    assert!(e.contains("duplicate key"), "{e}");
    assert_eq!(
        rows(&t.0, "back.db", "SELECT count(*) FROM one"),
        "count(*)\n199\n"
    );
}

#[test]
fn export_filters_writes_csv_and_jsonl_and_query_results() {
    let t = Tmp::new();
    t.write("all.csv", all_types_csv().as_bytes());
    ok(&t.0, &["load", "--schema", ALL_TYPES, "t", "all.csv"]);
    let out = ok(
        &t.0,
        &[
            "export",
            "t",
            "--output",
            "few",
            "--where",
            "id <= 4 AND n IS NOT NULL",
        ],
    );
    assert!(out.is_empty());
    ok(&t.0, &["--db", "few.db", "load", "few", "few"]);
    assert_eq!(
        rows(&t.0, "few.db", "SELECT count(*) FROM few"),
        "count(*)\n3\n"
    );

    ok(
        &t.0,
        &[
            "export",
            "t",
            "--format",
            "csv",
            "--output",
            "csvs",
            "--partition-by",
            "flag",
        ],
    );
    assert!(t.0.join("csvs/flag=true").is_dir() && t.0.join("csvs/flag=false").is_dir());
    ok(
        &t.0,
        &[
            "export", "t", "--format", "jsonl", "--output", "lines", "--where", "id = 2",
        ],
    );
    let file = std::fs::read_dir(t.0.join("lines"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let text = std::fs::read_to_string(file).unwrap();
    let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(v["note"], "line\nbreak");
    // Exact, as written (a float would round it).
    assert!(text.contains("\"amount\": -99999999999999.9999,"), "{text}");

    // A query's result as a Parquet file, loaded back.
    ok(
        &t.0,
        &[
            "query",
            "--output",
            "agg.parquet",
            "SELECT label, count(*) AS c, sum(amount) AS total FROM t WHERE id > 4 GROUP BY label ORDER BY label",
        ],
    );
    ok(&t.0, &["--db", "agg.db", "load", "agg", "agg.parquet"]);
    assert_eq!(
        rows(
            &t.0,
            "agg.db",
            "SELECT label, c FROM agg WHERE label = 'red'"
        ),
        "label,c\nred,65\n"
    );

    // Mistakes, said in one line each.
    let e = fails(
        &t.0,
        &["export", "t", "--output", "x", "--partition-by", "nope"],
    );
    assert!(
        e.contains("--partition-by nope: table t has no such column"),
        "{e}"
    );
    let e = fails(
        &t.0,
        &["export", "t", "--output", "x", "--partition-by", "shard"],
    );
    assert!(e.contains("is not sharded"), "{e}");
    let e = fails(&t.0, &["export", "t", "--format", "parquet"]);
    assert!(e.contains("needs --output"), "{e}");
    let e = fails(&t.0, &["export", "t", "--output", "few"]);
    assert!(
        e.contains("already exists") && e.contains("--overwrite"),
        "{e}"
    );
    let e = fails(
        &t.0,
        &["export", "t", "--output", "x", "--where", "sum(n) > 1"],
    );
    assert!(e.contains("--where"), "{e}");
    let e = fails(&t.0, &["query", "--output", "r.xlsx", "SELECT 1"]);
    assert!(e.contains(".parquet, .csv, .tsv or .jsonl"), "{e}");
    let e = fails(&t.0, &["load", "--delimiter", "tab", "z", "agg.parquet"]);
    assert!(
        e.contains("--delimiter applies to text input, not to Parquet files"),
        "{e}"
    );
    // A dataset mixing Parquet and text names the odd file.
    std::fs::copy(t.0.join("all.csv"), t.0.join("few/zz.csv")).unwrap();
    let e = fails(&t.0, &["load", "mixed", "few"]);
    assert!(
        e.contains("zz.csv") && e.contains("is not a Parquet file"),
        "{e}"
    );
}

#[test]
fn a_killed_export_leaves_nothing_and_overwrite_replaces_whole() {
    let t = Tmp::new();
    t.write("all.csv", all_types_csv().as_bytes());
    ok(&t.0, &["load", "--schema", ALL_TYPES, "t", "all.csv"]);
    // Abort the process (as kill -9 would stop it) after 2 of its files.
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .current_dir(&t.0)
        .env("SLUICE_FAULT", "export-abort-after-files=2")
        .args(["export", "t", "--output", "out", "--partition-by", "d"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(!t.0.join("out").exists(), "a half dataset was published");
    let stale = std::fs::read_dir(&t.0)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".out.sluice-tmp-")
        })
        .count();
    assert_eq!(stale, 1, "the killed export's hidden directory");
    // The next export publishes a whole dataset and clears what the
    // killed one left.
    ok(
        &t.0,
        &["export", "t", "--output", "out", "--partition-by", "d"],
    );
    assert!(t.0.join("out/_SUCCESS").is_file());
    let hidden = std::fs::read_dir(&t.0)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with('.')
        })
        .count();
    assert_eq!(hidden, 0);
    ok(
        &t.0,
        &["--db", "a.db", "load", "--hive-partitioning", "a", "out"],
    );
    assert_eq!(
        rows(&t.0, "a.db", "SELECT count(*) FROM a"),
        "count(*)\n199\n"
    );
    // --overwrite swaps in the new dataset whole.
    ok(
        &t.0,
        &[
            "export",
            "t",
            "--output",
            "out",
            "--where",
            "id = 1",
            "--overwrite",
        ],
    );
    assert!(!t.0.join("out/d=2024-01-02").exists());
    ok(&t.0, &["--db", "b.db", "load", "b", "out"]);
    assert_eq!(
        rows(&t.0, "b.db", "SELECT count(*) FROM b"),
        "count(*)\n1\n"
    );
}

#[test]
fn duckdb_reads_the_dataset_and_sluice_loads_what_duckdb_writes() {
    if !duckdb_available("duckdb_reads_the_dataset_and_sluice_loads_what_duckdb_writes") {
        return;
    }
    let t = Tmp::new();
    t.write("all.csv", all_types_csv().as_bytes());
    ok(&t.0, &["load", "--schema", ALL_TYPES, "t", "all.csv"]);
    ok(
        &t.0,
        &["export", "t", "--output", "ds", "--partition-by", "label"],
    );
    let want = rows(
        &t.0,
        "sluice.db",
        "SELECT count(*) AS c, sum(amount) AS s, count(label) AS l, min(d) AS d, max(ts) AS ts FROM t",
    );
    let script = r#"
import duckdb
c = duckdb.connect()
r = c.sql("SELECT count(*) AS c, sum(amount) AS s, count(label) AS l, min(d) AS d, max(ts) AS ts FROM read_parquet('ds/**/*.parquet', hive_partitioning=true)").fetchall()[0]
print("c,s,l,d,ts")
print(f"{r[0]},{r[1]},{r[2]},{r[3]},{r[4]}")
n = c.sql("SELECT count(*) FROM read_parquet('ds/**/*.parquet', hive_partitioning=true) WHERE label = 'a/b=c d'").fetchall()[0][0]
assert n == 2, n
c.sql("COPY (SELECT i::BIGINT AS id, (i * 1.25)::DECIMAL(12,2) AS price, DATE '2024-01-01' + i::INT AS d, i % 3 = 0 AS b, 'k' || (i % 5) AS k FROM range(1000) t(i)) TO 'duck' (FORMAT parquet, PARTITION_BY (k))")
"#;
    let o = Command::new("python3")
        .current_dir(&t.0)
        .args(["-c", script])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got = String::from_utf8(o.stdout).unwrap();
    // DuckDB prints a timestamp with a space and no trailing zeros, as
    // sluice does.
    assert_eq!(
        got,
        want.replace("count(*)", "c"),
        "DuckDB: {got} sluice: {want}"
    );
    ok(
        &t.0,
        &[
            "--db",
            "duck.db",
            "load",
            "--hive-partitioning",
            "duck",
            "duck",
        ],
    );
    assert_eq!(
        rows(
            &t.0,
            "duck.db",
            "SELECT count(*), sum(price), min(d), count(DISTINCT k) FROM duck WHERE b"
        ),
        "count(*),sum(price),min(d),count(DISTINCT k)\n334,208541.25,2024-01-01,5\n"
    );
    let info = ok(&t.0, &["--db", "duck.db", "info", "duck", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!(
        v[0]["schema"].as_str().unwrap(),
        "id BIGINT, price DECIMAL(12,2), d DATE, b BOOLEAN, k TEXT"
    );
}

#[test]
fn loading_nothing_but_bookkeeping_or_a_bad_value_fails_cleanly() {
    let t = Tmp::new();
    t.write("ds/_SUCCESS", b"");
    // A directory holding only _SUCCESS is not a dataset yet.
    let o = sluice(&t.0, &["load", "--format", "parquet", "x", "ds"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("no data files"), "{e}");
    // A value that does not fit the table's column is refused, naming
    // the file and the value.
    t.write("all.csv", all_types_csv().as_bytes());
    ok(&t.0, &["load", "--schema", ALL_TYPES, "t", "all.csv"]);
    ok(
        &t.0,
        &[
            "export",
            "t",
            "--output",
            "big.parquet",
            "--where",
            "n > 40000",
        ],
    );
    t.write("small.csv", b"id,n,amount,x,flag,d,ts,label,note\n4,0,0.0001,1,true,2024-01-01,2024-01-01 00:00:00,x,y\n");
    ok(
        &t.0,
        &[
            "--db",
            "s.db",
            "load",
            "--schema",
            "id BIGINT, n INT, amount DECIMAL(6,4), x DOUBLE, flag BOOLEAN, d DATE, ts TIMESTAMP, label TEXT, note TEXT",
            "small",
            "small.csv",
        ],
    );
    let e = fails(&t.0, &["--db", "s.db", "load", "small", "big.parquet"]);
    assert!(
        e.contains("big.parquet") && e.contains("column amount"),
        "{e}"
    );
    assert_eq!(
        rows(&t.0, "s.db", "SELECT count(*) FROM small WHERE id > 1000"),
        "count(*)\n0\n"
    );
}

#[test]
fn exports_guard_what_is_there_and_name_what_they_cannot_load() {
    let t = Tmp::new();
    t.write("all.csv", all_types_csv().as_bytes());
    ok(
        &t.0,
        &["load", "--schema", ALL_TYPES, "--key", "id", "t", "all.csv"],
    );
    // --overwrite replaces datasets only, never the database.
    t.write("notes/todo.txt", b"keep me");
    let e = fails(&t.0, &["export", "t", "--output", "notes", "--overwrite"]);
    assert!(e.contains("is not a dataset"), "{e}");
    assert!(t.0.join("notes/todo.txt").is_file());
    let e = fails(
        &t.0,
        &["export", "t", "--output", "sluice.db", "--overwrite"],
    );
    assert!(e.contains("holds the database"), "{e}");
    let here = t.0.to_str().unwrap();
    let e = fails(&t.0, &["export", "t", "--output", here, "--overwrite"]);
    assert!(e.contains("holds the database"), "{e}");
    // An old dataset a killed --overwrite left aside comes back.
    ok(
        &t.0,
        &["export", "t", "--output", "ds", "--where", "id = 1"],
    );
    std::fs::rename(t.0.join("ds"), t.0.join(".ds.sluice-old-4000000000")).unwrap();
    let e = fails(&t.0, &["export", "t", "--output", "ds"]);
    assert!(e.contains("already exists"), "{e}");
    assert!(t.0.join("ds/_SUCCESS").is_file());

    // No rows: one empty file keeps the columns; it loads as an empty table.
    ok(
        &t.0,
        &["export", "t", "--output", "none", "--where", "id < 0"],
    );
    assert!(t.0.join("none/part-00000.parquet").is_file());
    ok(&t.0, &["--db", "e.db", "load", "e", "none"]);
    assert_eq!(
        rows(&t.0, "e.db", "SELECT count(*) FROM e"),
        "count(*)\n0\n"
    );

    // A column whose name needs escaping partitions and comes back.
    t.write("odd.csv", b"\"a/b=c\",v\nx/y,1\nz,2\n");
    ok(
        &t.0,
        &[
            "load",
            "--schema",
            "\"a/b=c\" TEXT, v INT",
            "odd",
            "odd.csv",
        ],
    );
    ok(
        &t.0,
        &[
            "export",
            "odd",
            "--output",
            "oddds",
            "--partition-by",
            "a/b=c",
        ],
    );
    assert!(t.0.join("oddds/a%2Fb%3Dc=x%2Fy").is_dir());
    ok(
        &t.0,
        &[
            "--db",
            "o.db",
            "load",
            "--hive-partitioning",
            "odd",
            "oddds",
        ],
    );
    assert_eq!(
        rows(&t.0, "o.db", "SELECT \"a/b=c\", v FROM odd ORDER BY v"),
        "a/b=c,v\nx/y,1\nz,2\n"
    );

    // Unfinished task attempts under _temporary are not data.
    ok(&t.0, &["export", "t", "--output", "sp"]);
    std::fs::create_dir_all(t.0.join("sp/_temporary/0")).unwrap();
    std::fs::copy(
        t.0.join("sp/part-00000.parquet"),
        t.0.join("sp/_temporary/0/part-00000.parquet"),
    )
    .unwrap();
    let out = ok(&t.0, &["--db", "sp.db", "load", "sp", "sp"]);
    assert!(out.contains("skipped 2 bookkeeping files"), "{out}");
    assert_eq!(
        rows(&t.0, "sp.db", "SELECT count(*) FROM sp"),
        "count(*)\n199\n"
    );
    // A duplicate key names the file and its row.
    std::fs::create_dir_all(t.0.join("again")).unwrap();
    std::fs::copy(
        t.0.join("sp/part-00000.parquet"),
        t.0.join("again/p.parquet"),
    )
    .unwrap();
    let e = fails(&t.0, &["--db", "sp.db", "load", "sp", "again/p.parquet"]);
    assert!(e.contains("again/p.parquet:1"), "{e}");
    // A format and a file name that disagree.
    let e = fails(
        &t.0,
        &["export", "t", "--format", "csv", "--output", "a.parquet"],
    );
    assert!(e.contains("say different formats"), "{e}");
}
