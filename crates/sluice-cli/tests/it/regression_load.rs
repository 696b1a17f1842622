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
