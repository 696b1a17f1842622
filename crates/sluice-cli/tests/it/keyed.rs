//! The CLI on keyed tables: `load --key`, `get` (CSV text exact, keys
//! from a file or standard input, JSON and table output), duplicate key
//! errors, `--on-duplicate skip`, and `compact` killed by
//! `SLUICE_FAULT=merge-before-commit` before its commit.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::{Tmp, fails, ok, sluice};

/// `sluice --db db ARGS...` in `t`, which must succeed; its stdout.
fn db_ok(t: &Tmp, args: &[&str]) -> String {
    let mut a = vec!["--db", "db"];
    a.extend_from_slice(args);
    ok(&t.0, &a)
}

/// `sluice --db db ARGS...`, which must fail with exit code 2; its
/// one-line stderr.
fn db_fails(t: &Tmp, args: &[&str]) -> String {
    let mut a = vec!["--db", "db"];
    a.extend_from_slice(args);
    fails(&t.0, &a)
}

/// `sluice --db db ARGS...` with `SLUICE_FAULT=merge-before-commit`.
fn with_fault(t: &Tmp, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .current_dir(&t.0)
        .env_remove("SLUICE_DB")
        .env("SLUICE_FAULT", "merge-before-commit")
        .args(["--db", "db"])
        .args(args)
        .output()
        .unwrap()
}

/// The process was ended by `abort()` (SIGABRT on Unix).
fn assert_aborted(o: &Output) {
    assert!(
        !o.status.success(),
        "the fault did not fire: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(o.status.signal(), Some(6), "not an abort: {:?}", o.status);
    }
}

fn keys_files(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("db/tables/t"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".keys")
        })
        .count()
}

fn info_json(t: &Tmp) -> serde_json::Value {
    serde_json::from_str(&db_ok(t, &["info", "--json"])).unwrap()
}

#[test]
fn keyed_load_and_get_print_exact_rows() {
    let t = Tmp::new();
    t.write(
        "a.tsv",
        b"id\tname\tqty\n3\tc\t30\n1\t\"x, y\"\t10\n2\t\t\n-5\tminus\t-1\n",
    );
    let out = db_ok(
        &t,
        &[
            "load",
            "--key",
            "id",
            "--tsv",
            "--schema",
            "id BIGINT, name TEXT, qty INT",
            "t",
            "a.tsv",
        ],
    );
    assert!(out.starts_with("loaded 4 rows ("), "{out}");
    // CSV (the default when piped), in the order asked; missing keys
    // print nothing; NULL as an empty field; quoting where needed.
    assert_eq!(
        // A negative key is a key, not an option.
        db_ok(&t, &["get", "t", "1", "42", "3", "2", "-5", "1"]),
        "id,name,qty\n1,\"x, y\",10\n3,c,30\n2,,\n-5,minus,-1\n1,\"x, y\",10\n"
    );
    // Only missing keys: the header alone.
    assert_eq!(db_ok(&t, &["get", "t", "42"]), "id,name,qty\n");
    assert_eq!(db_ok(&t, &["get", "t", "42", "0", "4"]), "id,name,qty\n");
    // Keys from a file: blank lines and CR line ends ignored, combined
    // with keys given as arguments (those first).
    t.write("wanted.txt", b"2\r\n\r\n-5\r\n77\n3");
    assert_eq!(
        db_ok(&t, &["get", "t", "1", "--keys", "wanted.txt"]),
        "id,name,qty\n1,\"x, y\",10\n2,,\n-5,minus,-1\n3,c,30\n"
    );
    // ... or from standard input.
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .current_dir(&t.0)
        .env_remove("SLUICE_DB")
        .args(["--db", "db", "get", "t", "--keys", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"3\n1\n").unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        "id,name,qty\n3,c,30\n1,\"x, y\",10\n"
    );
    // JSON and table output.
    assert_eq!(
        db_ok(&t, &["get", "t", "2", "3", "--format", "json"]),
        "[\n  {\"id\": 2, \"name\": null, \"qty\": null},\n  {\"id\": 3, \"name\": \"c\", \"qty\": 30}\n]\n"
    );
    assert_eq!(
        db_ok(&t, &["get", "t", "1", "2", "--format", "table"]),
        "id | name | qty\n---+------+-----\n 1 | x, y |   10\n 2 | NULL | NULL\n(2 rows)\n"
    );
    // Errors: a key that is not a BIGINT, no keys, a keys file missing,
    // a table that does not exist.
    let e = db_fails(&t, &["get", "t", "1", "x1"]);
    assert!(e.contains("\"x1\" is not a BIGINT"), "{e}");
    let e = db_fails(&t, &["get", "t"]);
    assert!(e.contains("no keys given"), "{e}");
    let e = db_fails(&t, &["get", "t", "--keys", "nope.txt"]);
    assert!(e.contains("nope.txt"), "{e}");
    let e = db_fails(&t, &["get", "nosuch", "1"]);
    assert!(e.contains("nosuch"), "{e}");
    // The table's key and run are listed.
    let info = db_ok(&t, &["info", "t"]);
    assert!(info.contains("t: 4 rows, "), "{info}");
    assert!(info.contains(", 1 key-index run\n"), "{info}");
    assert!(info.contains("BIGINT PRIMARY KEY"), "{info}");
    let j = info_json(&t);
    assert_eq!(j[0]["key"], "id");
    assert_eq!(j[0]["index_runs"], 1);
}

#[test]
fn duplicate_keys_fail_with_both_places_and_commit_nothing() {
    let t = Tmp::new();
    // Inside one load: b.tsv line 3 repeats a.tsv line 2 (headers count).
    t.write("a.tsv", b"id\tv\n7\tseven\n8\teight\n");
    t.write("b.tsv", b"id\tv\n9\tnine\n7\tagain\n");
    let load_ab = [
        "load",
        "--key",
        "id",
        "--tsv",
        "--schema",
        "id BIGINT, v TEXT",
        "t",
        "a.tsv",
        "b.tsv",
    ];
    let mut args = vec!["--db", "db"];
    args.extend_from_slice(&load_ab);
    let o = sluice(&t.0, &args);
    assert_eq!(o.status.code(), Some(2));
    let e = db_fails(&t, &load_ab);
    assert!(
        e.contains("duplicate key 7 in table t: b.tsv:3 repeats the key of a.tsv:2"),
        "{e}"
    );
    assert!(e.contains("nothing was committed"), "{e}");
    assert!(e.contains("--on-duplicate skip"), "{e}");
    assert!(
        String::from_utf8_lossy(&o.stdout).is_empty(),
        "nothing printed as loaded"
    );
    // No table was created.
    let info = db_ok(&t, &["info"]);
    assert!(!info.contains("t: "), "{info}");

    // Across loads: the earlier row is shown with its values.
    db_ok(
        &t,
        &[
            "load",
            "-q",
            "--key",
            "id",
            "--tsv",
            "--schema",
            "id BIGINT, v TEXT",
            "t",
            "a.tsv",
        ],
    );
    let manifest = std::fs::read(t.0.join("db/MANIFEST")).unwrap();
    let e = db_fails(&t, &["load", "--tsv", "t", "b.tsv"]);
    assert!(
        e.contains(
            "duplicate key 7 in table t: b.tsv:3 repeats the key of a row loaded earlier (7, seven)"
        ),
        "{e}"
    );
    assert_eq!(std::fs::read(t.0.join("db/MANIFEST")).unwrap(), manifest);
    assert_eq!(info_json(&t)[0]["rows"], 2);
    assert_eq!(db_ok(&t, &["get", "t", "9"]), "id,v\n");
    // Skipping keeps the first and says how many were skipped.
    let out = db_ok(
        &t,
        &["load", "--tsv", "--on-duplicate", "skip", "t", "b.tsv"],
    );
    assert!(out.starts_with("loaded 1 rows ("), "{out}");
    assert!(
        out.contains("skipped 1 row whose key was already loaded"),
        "{out}"
    );
    t.write("c.tsv", b"id\tv\n10\tten\n10\tTEN\n8\tEIGHT\n11\televen\n");
    let out = db_ok(
        &t,
        &["load", "--tsv", "--on-duplicate", "skip", "t", "c.tsv"],
    );
    assert!(
        out.contains("skipped 2 rows whose key was already loaded"),
        "{out}"
    );
    assert_eq!(
        db_ok(&t, &["get", "t", "7", "8", "9", "10", "11"]),
        "id,v\n7,seven\n8,eight\n9,nine\n10,ten\n11,eleven\n"
    );
    assert_eq!(info_json(&t)[0]["rows"], 5);
    // A NULL key fails the load.
    t.write("n.tsv", b"id\tv\n12\ttwelve\n\tnothing\n");
    let e = db_fails(&t, &["load", "--tsv", "t", "n.tsv"]);
    assert!(e.contains("n.tsv:3") && e.contains("NULL"), "{e}");
    assert_eq!(info_json(&t)[0]["rows"], 5);
}

/// Loads `loads` files of 20 keys each (`f{l}.tsv`); returns the CSV
/// text `get` prints for all of them, in key order, and the keys.
fn six_loads(t: &Tmp, loads: u32) -> (String, Vec<String>) {
    let mut all = String::from("k,v\n");
    let mut keys = Vec::new();
    for l in 0..loads {
        let mut text = String::from("k\tv\n");
        for i in 0..20 {
            let k = format!("key-{l}-{i:02}");
            text.push_str(&format!("{k}\tload {l}\n"));
            all.push_str(&format!("{k},load {l}\n"));
            keys.push(k);
        }
        let name = format!("f{l}.tsv");
        t.write(&name, text.as_bytes());
        let out = db_ok(t, &["load", "--key", "k", "--tsv", "t", &name]);
        // The fourth load merges four runs of one size tier.
        assert_eq!(
            out.contains("merged 4 key-index runs (by size tier)"),
            l == 3,
            "load {l}: {out}"
        );
    }
    (all, keys)
}

#[test]
fn a_compaction_killed_before_its_commit_leaves_a_working_table() {
    let t = Tmp::new();
    let (all, keys) = six_loads(&t, 6);
    t.write("all.txt", keys.join("\n").as_bytes());
    assert_eq!(db_ok(&t, &["get", "t", "--keys", "all.txt"]), all);
    assert!(db_ok(&t, &["info", "t"]).contains(", 3 key-index runs\n"));
    assert_eq!(keys_files(&t.0), 3);
    let manifest = std::fs::read(t.0.join("db/MANIFEST")).unwrap();

    let o = with_fault(&t, &["compact", "t"]);
    assert_aborted(&o);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("merged"));
    // The merged run is on disk, the manifest is the one before.
    assert_eq!(keys_files(&t.0), 4);
    assert_eq!(std::fs::read(t.0.join("db/MANIFEST")).unwrap(), manifest);
    // Every key is found; info still lists the three runs.
    assert_eq!(db_ok(&t, &["get", "t", "--keys", "all.txt"]), all);
    assert!(db_ok(&t, &["info", "t"]).contains("t: 120 rows, "));
    assert!(db_ok(&t, &["info", "t"]).contains(", 3 key-index runs\n"));
    assert_eq!(info_json(&t)[0]["index_runs"], 3);
    // A later compaction succeeds and leaves one run (the orphan is
    // removed by the writer).
    assert_eq!(db_ok(&t, &["compact", "t"]), "t: merged 3 runs into one\n");
    assert!(db_ok(&t, &["info", "t"]).contains(", 1 key-index run\n"));
    assert_eq!(keys_files(&t.0), 1);
    assert_eq!(db_ok(&t, &["get", "t", "--keys", "all.txt"]), all);
    assert_eq!(
        db_ok(&t, &["compact", "t"]),
        "t: nothing to merge (at most one run)\n"
    );
    // The keys are still checked.
    t.write("dup.tsv", b"k\tv\nnew\t1\nkey-5-19\t2\n");
    let e = db_fails(&t, &["load", "--tsv", "t", "dup.tsv"]);
    assert!(
        e.contains("dup.tsv:3 repeats the key of a row loaded earlier (key-5-19, load 5)"),
        "{e}"
    );
}

#[test]
fn a_load_killed_in_its_tier_merge_is_committed_and_the_next_load_merges() {
    let t = Tmp::new();
    let (mut all, mut keys) = six_loads(&t, 3);
    // The fourth load commits, then dies merging four runs.
    let mut text = String::from("k\tv\n");
    for i in 0..20 {
        let k = format!("key-3-{i:02}");
        text.push_str(&format!("{k}\tload 3\n"));
        all.push_str(&format!("{k},load 3\n"));
        keys.push(k);
    }
    t.write("f3.tsv", text.as_bytes());
    let o = with_fault(&t, &["load", "--tsv", "t", "f3.tsv"]);
    assert_aborted(&o);
    t.write("all.txt", keys.join("\n").as_bytes());
    assert_eq!(db_ok(&t, &["get", "t", "--keys", "all.txt"]), all);
    assert_eq!(info_json(&t)[0]["index_runs"], 4);
    assert_eq!(info_json(&t)[0]["rows"], 80);
    assert_eq!(keys_files(&t.0), 5);
    // The same file again: the load journal skips it ...
    let out = db_ok(&t, &["load", "--tsv", "t", "f3.tsv"]);
    assert!(
        out.starts_with("skipped 1 file loaded by earlier commits"),
        "{out}"
    );
    // ... and read again, every key is already there.
    let e = db_fails(&t, &["load", "--reload", "--tsv", "t", "f3.tsv"]);
    assert!(e.contains("duplicate key 'key-3-00'"), "{e}");
    // The next load merges the five runs of the tier.
    t.write("f4.tsv", b"k\tv\nlast\tload 4\n");
    let out = db_ok(&t, &["load", "--tsv", "t", "f4.tsv"]);
    assert!(
        out.contains("merged 5 key-index runs (by size tier)"),
        "{out}"
    );
    assert_eq!(info_json(&t)[0]["index_runs"], 1);
    assert_eq!(keys_files(&t.0), 1);
    assert_eq!(db_ok(&t, &["get", "t", "--keys", "all.txt"]), all);
    assert_eq!(db_ok(&t, &["get", "t", "last"]), "k,v\nlast,load 4\n");
}
