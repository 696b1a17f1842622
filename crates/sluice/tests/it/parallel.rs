//! The parallel, block-split load equals a sequential parse of the whole
//! input, for any block size and thread count.

use std::sync::Arc;

use proptest::prelude::*;
use sluice::batch::{BatchBuilder, Schema, ValueOptions};
use sluice::load::{Header, LoadOptions};
use sluice::parse::{Dialect, parse_block};

use crate::common::{TempDir, load_bytes, rows_of, table_rows};

const SCHEMA: &str = "a TEXT, n INT, b TEXT";

/// One field's text, drawn from the characters that make CSV hard.
fn field() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!['a', 'b', ',', '"', '\n', '\r', ' ', 'é']),
        0..6,
    )
    .prop_map(|v| v.into_iter().collect())
}

fn encode(v: &str, force_quotes: bool) -> String {
    if force_quotes || v.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

prop_compose! {
    fn csv_input()(rows in prop::collection::vec((field(), any::<i32>(), field(), any::<bool>(), 0..3u8), 1..40),
                   trailing_newline in any::<bool>()) -> (String, Vec<(String, i32, String)>) {
        let mut s = String::new();
        let mut expect = Vec::new();
        for (i, (a, n, b, q, term)) in rows.iter().enumerate() {
            s.push_str(&encode(a, *q));
            s.push(',');
            s.push_str(&n.to_string());
            s.push(',');
            // A bare `\r` before the terminator is kept by the parser only
            // when quoted; quote to make the expected value unambiguous.
            let b_enc = encode(b, *q || b.ends_with('\r'));
            // "\r\r\n" after a quoted field is malformed: "\r\n" there.
            let term = if *term == 2 && b_enc.ends_with('"') { 1 } else { *term };
            s.push_str(&b_enc);
            let last = i + 1 == rows.len();
            if !last || trailing_newline {
                // With "\r\r\n" the record ends at "\r\n" and the unquoted
                // last field keeps one '\r'.
                s.push_str(match term { 0 => "\n", 1 => "\r\n", _ => "\r\r\n" });
            }
            let b_val = if term == 2 && (!last || trailing_newline) { format!("{b}\r") } else { b.clone() };
            expect.push((a.clone(), *n, b_val));
        }
        (s, expect)
    }
}

fn sequential(data: &[u8]) -> Vec<Vec<Option<String>>> {
    let schema: Schema = SCHEMA.parse().unwrap();
    let mut b = BatchBuilder::new(&schema, Arc::new(ValueOptions::default()), 16);
    parse_block(data, &Dialect::default(), &schema, &mut b).unwrap();
    rows_of(&[b.finish().unwrap().0])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn parallel_load_equals_sequential_parse(
        (data, _) in csv_input(),
        block in 1usize..200,
        threads in 1usize..4,
    ) {
        let dir = TempDir::new("prop");
        let o = LoadOptions {
            schema: Some(SCHEMA.parse().unwrap()),
            header: Header::No,
            block_size: Some(block),
            threads: Some(threads),
            ..LoadOptions::default()
        };
        load_bytes(&dir, "t", data.as_bytes(), &o).unwrap();
        let got = table_rows(&dir.path().join("db"), "t");
        prop_assert_eq!(got, sequential(data.as_bytes()));
    }

    #[test]
    fn values_round_trip(
        (data, expect) in csv_input(),
        block in 1usize..200,
    ) {
        let dir = TempDir::new("prop-rt");
        let o = LoadOptions {
            schema: Some(SCHEMA.parse().unwrap()),
            header: Header::No,
            block_size: Some(block),
            ..LoadOptions::default()
        };
        load_bytes(&dir, "t", data.as_bytes(), &o).unwrap();
        let got = table_rows(&dir.path().join("db"), "t");
        prop_assert_eq!(got.len(), expect.len());
        for (g, (a, n, b)) in got.iter().zip(&expect) {
            // An unquoted empty field is NULL; a quoted one is "".
            prop_assert_eq!(g[0].as_deref().unwrap_or(""), a.as_str());
            prop_assert_eq!(g[1].clone(), Some(n.to_string()));
            prop_assert_eq!(g[2].as_deref().unwrap_or(""), b.as_str());
        }
    }
}

/// Every block size from 1 byte to past the input gives the same table,
/// with a quoted newline and doubled quotes near every possible cut.
#[test]
fn every_block_size_gives_the_same_rows() {
    let data = "x,1,\"a\nb\"\r\n\"q\"\"\",2,\n,3,\"\"\"\n\"\"\"\n\"\",4,z";
    let want = sequential(data.as_bytes());
    assert_eq!(want.len(), 4);
    for block in 1..=data.len() + 1 {
        for threads in [1, 2, 3] {
            let dir = TempDir::new("blocks");
            let o = LoadOptions {
                schema: Some(SCHEMA.parse().unwrap()),
                header: Header::No,
                block_size: Some(block),
                threads: Some(threads),
                ..LoadOptions::default()
            };
            load_bytes(&dir, "t", data.as_bytes(), &o).unwrap();
            assert_eq!(
                table_rows(&dir.path().join("db"), "t"),
                want,
                "block {block} threads {threads}"
            );
        }
    }
}

/// An error deep in a file split into many blocks names the right line,
/// and the earliest error wins although later blocks also fail.
#[test]
fn the_first_error_in_file_order_is_reported_with_its_line() {
    let mut data = String::new();
    for i in 0..2000 {
        if i == 1234 || i == 1500 || i == 1999 {
            data.push_str(&format!("r{i},notanint,x\n"));
        } else if i % 7 == 0 {
            data.push_str(&format!("\"multi\nline {i}\",{i},y\n"));
        } else {
            data.push_str(&format!("r{i},{i},y\n"));
        }
    }
    // Physical line of record 1234: one extra line per multi-line record before it.
    let line = 1234 + (0..1234).filter(|i| i % 7 == 0).count() + 1;
    for block in [64, 1000, 1 << 20] {
        let dir = TempDir::new("err");
        let o = LoadOptions {
            schema: Some(SCHEMA.parse().unwrap()),
            header: Header::No,
            block_size: Some(block),
            ..LoadOptions::default()
        };
        let e = load_bytes(&dir, "t", data.as_bytes(), &o)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!(
                "t-input.csv:{line}: column 2 (n): invalid INT value \"notanint\": not an integer"
            )),
            "block {block}: {e}"
        );
    }
}
