//! Shards, keys, check, compact and messages: the cases where sluice
//! was silently wrong or said the wrong thing.

use std::path::Path;

use crate::{Tmp, fails, ok, sluice};

/// The target of a shard's link: where its files live.
fn shard_target(t: &Tmp, shard: &str) -> String {
    std::fs::read_link(t.0.join("db/tables/t").join(shard))
        .unwrap()
        .to_str()
        .unwrap()
        .to_string()
}

fn entries(p: &Path) -> usize {
    std::fs::read_dir(p).unwrap().count()
}

#[test]
fn missing_shard_directory_is_an_error_not_recreated() {
    let t = Tmp::new();
    t.write("a.csv", b"1,x\n2,y\n3,z\n4,w\n");
    t.write("b.csv", b"5,v\n");
    let load = |file: &'static str| -> Vec<&'static str> {
        vec![
            "--db",
            "db",
            "load",
            "--no-header",
            "--schema",
            "k INT, s TEXT",
            "--shards",
            "2",
            "--shard-paths",
            "d1,d2",
            "t",
            file,
        ]
    };
    ok(&t.0, &load("a.csv"));
    let target = shard_target(&t, "s000");
    // The disk of d1 is not mounted: d1 is an empty directory.
    std::fs::rename(t.0.join("d1"), t.0.join("d1-disk")).unwrap();
    std::fs::create_dir(t.0.join("d1")).unwrap();
    let missing = format!(
        "table t: shard 0 directory {target} is missing or empty — disk not mounted? (the manifest names 1 file in it; sluice never recreates it)"
    );
    let append = [
        "--db",
        "db",
        "load",
        "--no-header",
        "--schema",
        "k INT, s TEXT",
        "t",
        "b.csv",
    ];
    for _ in 0..2 {
        let err = fails(&t.0, &append);
        assert_eq!(
            err,
            format!("error: loading table t; nothing was committed: {missing}\n")
        );
        // Nothing was created on the wrong disk, the link is untouched.
        assert_eq!(entries(&t.0.join("d1")), 0);
        assert_eq!(shard_target(&t, "s000"), target);
    }
    let err = fails(
        &t.0,
        &["--db", "db", "query", "SELECT count(*), sum(k) FROM t"],
    );
    assert_eq!(err, format!("error: {missing}\n"));
    let err = fails(&t.0, &["--db", "db", "info", "t"]);
    assert_eq!(err, format!("error: {missing}\n"));
    let err = fails(&t.0, &["--db", "db", "export", "t"]);
    assert_eq!(err, format!("error: {missing}\n"));
    let o = sluice(&t.0, &["--db", "db", "check", "t"]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.contains(&format!("  damaged: {missing}\n")), "{out}");

    // The disk is back: the table is whole, and loads go on.
    std::fs::remove_dir(t.0.join("d1")).unwrap();
    std::fs::rename(t.0.join("d1-disk"), t.0.join("d1")).unwrap();
    ok(&t.0, &append);
    let out = ok(
        &t.0,
        &[
            "--db",
            "db",
            "query",
            "--format",
            "csv",
            "SELECT count(*), sum(k) FROM t",
        ],
    );
    assert_eq!(out, "count(*),sum(k)\n5,15\n");
    assert_eq!(entries(&t.0.join("d1")), 1);
}

#[test]
fn shard_paths_parent_must_exist() {
    let t = Tmp::new();
    t.write("a.csv", b"1,x\n2,y\n");
    let err = fails(
        &t.0,
        &[
            "--db",
            "db",
            "load",
            "--no-header",
            "--schema",
            "k INT, s TEXT",
            "--shards",
            "2",
            "--shard-paths",
            "nope/d1,d2",
            "t",
            "a.csv",
        ],
    );
    assert_eq!(
        err,
        "error: loading table t; nothing was committed: --shard-paths nope/d1: nope does not exist (sluice creates the last directory of a path only)\n"
    );
    assert!(!t.0.join("nope").exists());
    // The database directory's parent too.
    let err = fails(
        &t.0,
        &[
            "--db",
            "nope/db",
            "load",
            "--no-header",
            "--schema",
            "k INT, s TEXT",
            "t",
            "a.csv",
        ],
    );
    assert_eq!(
        err,
        "error: opening database nope/db: database directory nope/db: nope does not exist (sluice creates the last directory of a path only)\n"
    );
    assert!(!t.0.join("nope").exists());
}

#[test]
fn key_option_and_schema_key_must_agree() {
    let t = Tmp::new();
    t.write("a.csv", b"1,x\n2,y\n");
    let load = |key: &'static str, schema: &'static str| -> Vec<&'static str> {
        vec![
            "--db",
            "db",
            "load",
            "--no-header",
            "--key",
            key,
            "--schema",
            schema,
            "t",
            "a.csv",
        ]
    };
    let err = fails(&t.0, &load("v", "k BIGINT PRIMARY KEY, v TEXT"));
    assert_eq!(
        err,
        "error: loading table t; nothing was committed: --key v and PRIMARY KEY k in --schema name two different keys (a table has one key: give it once)\n"
    );
    assert!(!t.0.join("db/tables/t").exists());
    // The same key named twice is one key.
    ok(&t.0, &load("K", "k BIGINT PRIMARY KEY, v TEXT"));
    let info = ok(&t.0, &["--db", "db", "info", "t"]);
    assert!(
        info.contains("  k                        BIGINT PRIMARY KEY\n"),
        "{info}"
    );
    // An existing table keeps its key.
    t.write("b.csv", b"3,z\n");
    let err = fails(
        &t.0,
        &[
            "--db",
            "db",
            "load",
            "--no-header",
            "--key",
            "v",
            "t",
            "b.csv",
        ],
    );
    assert_eq!(
        err,
        "error: loading table t; nothing was committed: table t exists with primary key k; --key gives v\n"
    );
}
