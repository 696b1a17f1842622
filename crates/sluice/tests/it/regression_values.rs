//! Values are stored as written or not at all: inference gives a column a
//! numeric type only when every value reads back the same, the load checks
//! the values the samples missed, and each parser takes exactly its forms.

use sluice::batch::{DataType, ValueOptions};
use sluice::infer::{InferOptions, infer};
use sluice::load::{LoadOptions, load};
use sluice::source::Input;
use sluice::store::Database;

use crate::common::{TempDir, load_bytes, opts, table_rows};

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

/// Infers the schema of `data` the way a first load does, loads it with
/// the inferred columns checked, and returns the schema and either the
/// rows read back or the error (without the directory).
fn infer_and_load(
    data: &[u8],
    sample_bytes: usize,
) -> (String, Result<Vec<Vec<Option<String>>>, String>) {
    let dir = TempDir::new("regression-values");
    let f = dir.write("in.csv", data);
    let inputs = [Input::File(f)];
    let inf = infer(
        &inputs,
        &InferOptions {
            sample_bytes,
            // The sample alone, also of a small file.
            whole_bytes: 0,
            ..InferOptions::default()
        },
    )
    .unwrap();
    let o = LoadOptions {
        schema: Some(inf.schema.clone()),
        header: sluice::load::Header::Yes,
        values: ValueOptions {
            exact: inf.exact.clone(),
            ..ValueOptions::default()
        },
        ..LoadOptions::default()
    };
    let db_dir = dir.path().join("db");
    let mut db = Database::open_writer(&db_dir).unwrap();
    let got = match load(&mut db, "t", &inputs, &o) {
        Ok(_) => Ok(table_rows(&db_dir, "t")),
        Err(e) => Err(e
            .to_string()
            .replace(&format!("{}/", dir.path().display()), "")),
    };
    (inf.schema.to_string(), got)
}

/// Loads `data` into a table of the explicit `schema`.
fn load_as(schema: &str, data: &[u8]) -> Result<Vec<Vec<Option<String>>>, String> {
    let dir = TempDir::new("regression-values-schema");
    match load_bytes(&dir, "t", data, &opts(schema)) {
        Ok(_) => Ok(table_rows(&dir.path().join("db"), "t")),
        Err(e) => Err(e
            .to_string()
            .replace(&format!("{}/", dir.path().display()), "")),
    }
}

#[test]
fn inference_keeps_leading_zeros_and_plus_signs() {
    let (schema, rows) = infer_and_load(
        b"zip,phone,code,big\n02134,+15551234,007,18446744073709551615\n10001,+15559999,123,1\n",
        256 << 10,
    );
    assert_eq!(schema, "zip TEXT, phone TEXT, code TEXT, big TEXT");
    assert_eq!(
        rows.unwrap(),
        vec![
            vec![
                s("02134"),
                s("+15551234"),
                s("007"),
                s("18446744073709551615")
            ],
            vec![s("10001"), s("+15559999"), s("123"), s("1")],
        ]
    );
    // Numbers written as sluice writes them back keep their types.
    let (schema, rows) = infer_and_load(b"n,d,x\n0,0.5,1e5\n-12,.25,2.5E-3\n", 256 << 10);
    assert_eq!(schema, "n BIGINT, d DECIMAL(18,2), x DOUBLE");
    assert_eq!(
        rows.unwrap(),
        vec![
            vec![s("0"), s("0.50"), s("100000")],
            vec![s("-12"), s("0.25"), s("0.0025")],
        ]
    );
}

#[test]
fn inference_never_rounds_long_numbers() {
    let (schema, rows) = infer_and_load(
        b"x,y\n0.1234567890123456789,1234567890.123456789\n2.5,1e5\n",
        256 << 10,
    );
    assert_eq!(schema, "x TEXT, y TEXT");
    assert_eq!(
        rows.unwrap(),
        vec![
            vec![s("0.1234567890123456789"), s("1234567890.123456789")],
            vec![s("2.5"), s("1e5")],
        ]
    );
}

/// A file of `n` lines of `line(i)` after a header, with `odd` as line
/// `at` (1-based, the header being line 1): the samples see the start,
/// the middle and the end of a file over three samples long.
fn file_with(header: &str, line: impl Fn(usize) -> String, odd: &str, at: usize) -> Vec<u8> {
    let mut s = format!("{header}\n");
    for i in 2..=6000 {
        s.push_str(&if i == at { odd.to_string() } else { line(i) });
        s.push('\n');
    }
    s.into_bytes()
}

#[test]
fn inferred_numbers_reject_later_values_they_would_change() {
    let line = |i: usize| format!("{i},{}.5e3,{}", i, 10000 + i);
    let cases = [
        (
            "1500,15.5e3,02134",
            "in.csv:1500: column 3 (z): invalid BIGINT value \"02134\": has a leading zero, which a BIGINT does not keep (byte 27771)",
        ),
        (
            "1500,15.5e3,+11500",
            "in.csv:1500: column 3 (z): invalid BIGINT value \"+11500\": has a \"+\" sign, which a BIGINT does not keep (byte 27771)",
        ),
        (
            "1500,15.5e3,-0",
            "in.csv:1500: column 3 (z): invalid BIGINT value \"-0\": is a negative zero, which a BIGINT stores as 0 (byte 27771)",
        ),
        (
            "1500,0.1234567890123456789e3,11500",
            "in.csv:1500: column 2 (v): invalid DOUBLE value \"0.1234567890123456789e3\": has 19 significant digits; a DOUBLE would round it to 123.45678901234568 (byte 27764)",
        ),
    ];
    for (odd, want) in cases {
        let data = file_with("id,v,z", line, odd, 1500);
        let (schema, got) = infer_and_load(&data, 4096);
        assert_eq!(schema, "id BIGINT, v DOUBLE, z BIGINT", "{odd}");
        assert_eq!(got.unwrap_err(), format!("{want}"), "{odd}");
    }
    // What the samples missed but a number keeps loads.
    let data = file_with("id,v,z", line, "1500,0.30000000000000004,11500", 1500);
    let (_, got) = infer_and_load(&data, 4096);
    assert_eq!(
        got.unwrap()[1498],
        vec![s("1500"), s("0.30000000000000004"), s("11500")]
    );
    // A DOUBLE the schema names rounds, as in PostgreSQL.
    assert_eq!(
        load_as("v DOUBLE, z BIGINT", b"v,z\n18446744073709551615,007\n").unwrap(),
        vec![vec![s("1.8446744073709552e+19"), s("7")]]
    );
}

#[test]
fn inferred_decimals_reject_later_leading_zeros() {
    let line = |i: usize| format!("{i},{i}.25");
    let data = file_with("id,d", line, "1500,01500.25", 1500);
    let (schema, got) = infer_and_load(&data, 4096);
    assert_eq!(schema, "id BIGINT, d DECIMAL(18,2)");
    assert_eq!(
        got.unwrap_err(),
        "in.csv:1500: column 2 (d): invalid DECIMAL(18,2) value \"01500.25\": has a leading zero, which a DECIMAL does not keep (byte 17276)"
    );
}

#[test]
fn two_digit_years_are_not_dates() {
    let (schema, rows) = infer_and_load(b"d\n24-01-31\n99-12-31\n", 256 << 10);
    assert_eq!(schema, "d TEXT");
    assert_eq!(
        rows.unwrap(),
        vec![vec![s("24-01-31")], vec![s("99-12-31")]]
    );
    assert_eq!(
        load_as("d DATE", b"d\n24-01-31\n").unwrap_err(),
        "t-input.csv:2: column 1 (d): invalid DATE value \"24-01-31\": not a date in the form YYYY-MM-DD (a four-digit year); use --date-format (byte 2)"
    );
    assert_eq!(
        load_as("d TIMESTAMP", b"d\n24-01-31 10:00:00\n").unwrap_err(),
        "t-input.csv:2: column 1 (d): invalid TIMESTAMP value \"24-01-31 10:00:00\": not a timestamp in the form YYYY-MM-DD HH:MM[:SS[.ffffff]][Z|+HH:MM]; use --timestamp-format (byte 2)"
    );
    // Single-digit months and days are still dates.
    assert_eq!(
        load_as("d DATE", b"d\n2024-1-5\n").unwrap(),
        vec![vec![s("2024-01-05")]]
    );
}

#[test]
fn double_overflow_is_an_error() {
    assert_eq!(
        load_as("x DOUBLE", b"x\n1.5\n1e400\n").unwrap_err(),
        "t-input.csv:3: column 1 (x): invalid DOUBLE value \"1e400\": out of range for DOUBLE (beyond ±1.8e308) (byte 6)"
    );
    assert_eq!(
        load_as("x DOUBLE", b"x\n-1e-400\n").unwrap_err(),
        "t-input.csv:2: column 1 (x): invalid DOUBLE value \"-1e-400\": out of range for DOUBLE (too close to zero; below 4.9e-324) (byte 2)"
    );
    // Infinities and NaN spelled out are values, as in PostgreSQL.
    assert_eq!(
        load_as("x DOUBLE", b"x\ninf\n-Infinity\nNaN\n1e308\n").unwrap(),
        vec![
            vec![s("Infinity")],
            vec![s("-Infinity")],
            vec![s("NaN")],
            vec![s("1e+308")]
        ]
    );
}

#[test]
fn timestamps_accept_minutes_and_offsets() {
    // Times with an offset are instants: TIMESTAMPTZ, shown in UTC.
    let (schema, rows) = infer_and_load(
        b"t\n2013-01-01T10:00:00Z\n2013-01-01 10:30-02\n2013-01-01T12:00:00+01:00\n",
        256 << 10,
    );
    assert_eq!(schema, "t TIMESTAMPTZ");
    assert_eq!(
        rows.unwrap(),
        vec![
            vec![s("2013-01-01 10:00:00+00")],
            vec![s("2013-01-01 12:30:00+00")],
            vec![s("2013-01-01 11:00:00+00")],
        ]
    );
    // Times with and without one: no zone is guessed for the others.
    let (schema, rows) = infer_and_load(
        b"t\n2013-01-01T10:00:00Z\n2013-01-01 10:30\n2013-01-01T12:00:00+01:00\n",
        256 << 10,
    );
    assert_eq!(schema, "t TEXT");
    assert_eq!(rows.unwrap()[1], vec![s("2013-01-01 10:30")]);
    // The time without one first, over times with one: a value still, no
    // second header line (frictionless' timezone.csv).
    let (schema, rows) = infer_and_load(
        b"datetime\n2020-01-01T15:00:00\n2020-01-01T15:00:00Z\n2020-01-01T15:00:00+03:00\n2020-01-01T15:00:00-03:00\n",
        256 << 10,
    );
    assert_eq!(schema, "datetime TEXT");
    assert_eq!(rows.unwrap().len(), 4);
    // Minutes without seconds, and offsets, into a TIMESTAMPTZ column;
    // a time without an offset is UTC there.
    assert_eq!(
        load_as(
            "t TIMESTAMPTZ",
            b"t\n2024-01-31 13:45\n2024-01-31T13:45:00Z\n2024-01-31T13:45:00.5-0530\n2024-01-01 00:30+01\n"
        )
        .unwrap(),
        vec![
            vec![s("2024-01-31 13:45:00+00")],
            vec![s("2024-01-31 13:45:00+00")],
            vec![s("2024-01-31 19:15:00.5+00")],
            vec![s("2023-12-31 23:30:00+00")],
        ]
    );
    // A TIMESTAMP keeps no offset: one in the file is an error that says
    // where and names TIMESTAMPTZ, never a time shifted or dropped.
    assert_eq!(
        load_as("t TIMESTAMP", b"t\n2024-01-31 13:45\n").unwrap(),
        vec![vec![s("2024-01-31 13:45:00")]]
    );
    let e = load_as(
        "t TIMESTAMP",
        b"t\n2024-01-31 13:45\n2024-01-31T13:45:00Z\n",
    )
    .unwrap_err();
    assert!(
        e.contains(":3: column 1 (t)") && e.contains("TIMESTAMPTZ") && e.contains("\"Z\""),
        "{e}"
    );
}

#[test]
fn types_named_by_the_user_are_not_checked_as_inferred() {
    let dir = TempDir::new("regression-values-types");
    let f = dir.write("in.csv", b"z\n10001\n");
    let inf = infer(
        &[Input::File(f)],
        &InferOptions {
            types: vec![("z".into(), DataType::BigInt)],
            ..InferOptions::default()
        },
    )
    .unwrap();
    assert_eq!(inf.schema.to_string(), "z BIGINT");
    assert!(inf.exact.is_empty());
    let f = dir.write("in2.csv", b"z\n10001\n");
    let inf = infer(&[Input::File(f)], &InferOptions::default()).unwrap();
    assert_eq!(inf.exact, vec!["z".to_string()]);
}
