//! Loads that once stored wrong rows, or said less than they did: a header
//! loaded as data, a changed file skipped, a runaway quote read as one
//! record, a NUL byte loaded into TEXT.

use crate::{Tmp, fails, ok};

/// Rows of table `t` as CSV, without the header.
fn rows(t: &Tmp) -> String {
    ok(&t.0, &["export", "--header", "false", "t"])
}

#[test]
fn normalised_header_names_are_recognised_on_append() {
    let t = Tmp::new();
    t.write("q1.csv", b"First Name,City\nann,Oslo\n");
    t.write("q2.csv", b"First Name,City\ncat,Paris\n");
    ok(&t.0, &["load", "t", "q1.csv"]);
    let out = ok(&t.0, &["load", "t", "q2.csv"]);
    assert!(out.starts_with("loaded 1 rows ("), "{out}");
    assert_eq!(rows(&t), "ann,Oslo\ncat,Paris\n");
}

#[test]
fn normalised_header_names_are_recognised_with_the_printed_schema() {
    let t = Tmp::new();
    t.write("q.csv", b"First Name,Born On\nann,2024-01-31\n");
    ok(
        &t.0,
        &[
            "load",
            "--schema",
            "first_name TEXT, born_on DATE",
            "t",
            "q.csv",
        ],
    );
    assert_eq!(rows(&t), "ann,2024-01-31\n");
}

/// Rewrites `name` in `t` with `data` and gives it back its modification
/// time, as `touch -r` would.
fn rewrite_keeping_mtime(t: &Tmp, name: &str, data: &[u8]) {
    let path = t.0.join(name);
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    std::fs::write(&path, data).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), mtime);
}

#[test]
fn changed_file_with_restored_mtime_is_not_skipped() {
    let t = Tmp::new();
    t.write("f.csv", b"1,a\n2,b\n");
    let load = [
        "load",
        "--no-header",
        "--schema",
        "id INT, v TEXT",
        "t",
        "f.csv",
    ];
    ok(&t.0, &load);
    rewrite_keeping_mtime(&t, "f.csv", b"1,a\n2,c\n");
    let err = fails(&t.0, &load);
    assert_eq!(
        err,
        "error: loading table t; nothing was committed: f.csv was loaded before (commit 1) and has changed since: same size and modification time, different contents; --reload-changed loads it again (the rows loaded from it before stay)\n"
    );
    let mut again = load.to_vec();
    again.insert(1, "--reload-changed");
    let out = ok(&t.0, &again);
    assert!(out.starts_with("loaded 2 rows ("), "{out}");
    assert_eq!(rows(&t), "1,a\n2,b\n1,a\n2,c\n");
}

#[test]
fn unchanged_file_with_restored_mtime_is_still_skipped() {
    let t = Tmp::new();
    t.write("f.csv", b"1,a\n2,b\n");
    let load = [
        "load",
        "--no-header",
        "--schema",
        "id INT, v TEXT",
        "t",
        "f.csv",
    ];
    ok(&t.0, &load);
    rewrite_keeping_mtime(&t, "f.csv", b"1,a\n2,b\n");
    let out = ok(&t.0, &load);
    assert!(
        out.contains("skipped 1 file loaded by earlier commits"),
        "{out}"
    );
    assert_eq!(rows(&t), "1,a\n2,b\n");
}
