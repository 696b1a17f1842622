//! `sluice load` stores values as written or not at all: inferred types
//! that keep every sampled value, later values checked, exact parsers.

use crate::{Tmp, ok};

#[test]
fn inference_keeps_leading_zeros_and_plus_signs() {
    let t = Tmp::new();
    t.write(
        "f.csv",
        b"zip,phone,code,big\n02134,+15551234,007,18446744073709551615\n10001,+15559999,123,1\n",
    );
    let out = ok(&t.0, &["load", "--dry-run", "t", "f.csv"]);
    assert!(
        out.ends_with("--schema \"zip TEXT, phone TEXT, code TEXT, big TEXT\"\n"),
        "{out}"
    );
    ok(&t.0, &["load", "-q", "t", "f.csv"]);
    assert_eq!(
        ok(&t.0, &["export", "t"]),
        "zip,phone,code,big\n02134,+15551234,007,18446744073709551615\n10001,+15559999,123,1\n"
    );
}

#[test]
fn inference_never_rounds_long_numbers() {
    let t = Tmp::new();
    t.write("f.csv", b"x\n0.1234567890123456789\n");
    ok(&t.0, &["load", "-q", "t", "f.csv"]);
    assert_eq!(
        ok(&t.0, &["query", "select x from t"]),
        "x\n0.1234567890123456789\n"
    );
    // A value the samples did not see is never rounded: the inferred
    // column widens to TEXT (see regression_widen). (Over 16 MiB: a
    // smaller file is read whole.)
    let pad = "p".repeat(80);
    let mut big = String::from("id,v,pad\n");
    for i in 0..200_000 {
        if i == 60_000 {
            big.push_str(&format!("60000,18446744073709551615,{pad}\n"));
        } else {
            big.push_str(&format!("{i},{i}.5e3,{pad}\n"));
        }
    }
    assert!(big.len() > 16 << 20);
    t.write("big.csv", big.as_bytes());
    ok(&t.0, &["load", "-q", "big", "big.csv"]);
    assert!(ok(&t.0, &["info", "big"]).contains("  v                        TEXT\n"));
    assert_eq!(
        ok(&t.0, &["query", "select v from big where id = 60000"]),
        "v\n18446744073709551615\n"
    );
}

#[test]
fn timestamps_accept_minutes_and_offsets() {
    let t = Tmp::new();
    // Every time with an offset: instants (TIMESTAMPTZ), shown in UTC.
    t.write(
        "f.csv",
        b"at\n2013-01-01T10:00:00Z\n2013-01-01 10:30-02\n2013-01-01T12:00+01:00\n",
    );
    let out = ok(&t.0, &["load", "--dry-run", "t", "f.csv"]);
    assert!(out.ends_with("--schema \"at TIMESTAMPTZ\"\n"), "{out}");
    ok(&t.0, &["load", "-q", "t", "f.csv"]);
    assert_eq!(
        ok(
            &t.0,
            &[
                "query",
                "select at from t where at >= TIMESTAMPTZ '2013-01-01T10:30Z' order by at"
            ]
        ),
        "at\n2013-01-01 11:00:00+00\n2013-01-01 12:30:00+00\n"
    );
    // Times with and without one: text, as written (no zone guessed).
    t.write(
        "g.csv",
        b"at\n2013-01-01T10:00:00Z\n2013-01-01 10:30\n2013-01-01T12:00+01:00\n",
    );
    let out = ok(&t.0, &["load", "--dry-run", "g", "g.csv"]);
    assert!(out.ends_with("--schema \"at TEXT\"\n"), "{out}");
    // A TIMESTAMP given for them: the error names the line and TIMESTAMPTZ.
    let o = crate::sluice(&t.0, &["load", "--schema", "at TIMESTAMP", "g", "g.csv"]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("g.csv:2:") && e.contains("TIMESTAMPTZ"), "{e}");
}
