//! `--on-error skip`: every record is either loaded or in the rejects
//! file, in input order, with its line, for any block size and thread
//! count; `--max-errors` fails the load and commits nothing;
//! `--allow-missing-columns` fills NULLs.

use proptest::prelude::*;
use sluice::load::{Header, LoadOptions, OnError, load};
use sluice::source::Input;
use sluice::store::Database;

use crate::common::{TempDir, opts, table_rows};

/// One record: good, or broken in one of the ways the loader rejects.
#[derive(Debug, Clone)]
enum Rec {
    Good(i32, String),
    BadNumber(String),
    TooFew(i32),
    TooMany(i32, String),
    BadUtf8(i32),
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!['a', 'b', ',', '"', '\n', ' ', 'é']),
        0..5,
    )
    .prop_map(|v| v.into_iter().collect())
}

fn rec() -> impl Strategy<Value = Rec> {
    prop_oneof![
        6 => (any::<i32>(), text()).prop_map(|(n, t)| Rec::Good(n, t)),
        1 => prop::sample::select(vec!["x", "1.5", "99999999999", "--1"]).prop_map(|s| Rec::BadNumber(s.to_string())),
        1 => any::<i32>().prop_map(Rec::TooFew),
        1 => (any::<i32>(), text()).prop_map(|(n, t)| Rec::TooMany(n, t)),
        1 => any::<i32>().prop_map(Rec::BadUtf8),
    ]
}

fn quoted(t: &str) -> String {
    format!("\"{}\"", t.replace('"', "\"\""))
}

/// The record's bytes (without its newline).
fn encode(r: &Rec) -> Vec<u8> {
    match r {
        Rec::Good(n, t) => format!("{n},{}", quoted(t)).into_bytes(),
        Rec::BadNumber(s) => format!("{s},{}", quoted("x")).into_bytes(),
        Rec::TooFew(n) => n.to_string().into_bytes(),
        Rec::TooMany(n, t) => format!("{n},{},z", quoted(t)).into_bytes(),
        Rec::BadUtf8(n) => {
            let mut v = format!("{n},\"a").into_bytes();
            v.push(0xff);
            v.push(b'"');
            v
        }
    }
}

/// Parses the rejects file: (line, record bytes) per rejected record.
fn read_rejects(path: &std::path::Path) -> Vec<(u64, Vec<u8>)> {
    let data = std::fs::read(path).unwrap();
    let header = b"file,line,byte,column,reason,record\n";
    assert!(
        data.starts_with(header),
        "{}",
        String::from_utf8_lossy(&data)
    );
    // A small CSV reader over bytes: quoted fields may hold anything.
    let mut out = Vec::new();
    let mut fields: Vec<Vec<u8>> = Vec::new();
    let mut cur = Vec::new();
    let mut i = header.len();
    let mut in_q = false;
    while i < data.len() {
        let b = data[i];
        if in_q {
            if b == b'"' && data.get(i + 1) == Some(&b'"') {
                cur.push(b'"');
                i += 1;
            } else if b == b'"' {
                in_q = false;
            } else {
                cur.push(b);
            }
        } else if b == b'"' {
            in_q = true;
        } else if b == b',' {
            fields.push(std::mem::take(&mut cur));
        } else if b == b'\n' {
            fields.push(std::mem::take(&mut cur));
            assert_eq!(fields.len(), 6, "{fields:?}");
            let line: u64 = String::from_utf8(fields[1].clone())
                .unwrap()
                .parse()
                .unwrap();
            out.push((line, fields[5].clone()));
            fields.clear();
        } else {
            cur.push(b);
        }
        i += 1;
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_record_is_loaded_or_rejected_in_order(
        recs in prop::collection::vec(rec(), 1..60),
        block in 16usize..400,
        threads in 1usize..4,
    ) {
        let dir = TempDir::new("rejects");
        let mut data = Vec::new();
        let mut expect_rows = Vec::new();
        let mut expect_rejects = Vec::new();
        let mut line = 1u64;
        for r in &recs {
            let bytes = encode(r);
            match r {
                Rec::Good(n, t) => expect_rows.push(vec![Some(n.to_string()), Some(t.clone())]),
                _ => expect_rejects.push((line, bytes.clone())),
            }
            line += 1 + bytes.iter().filter(|&&b| b == b'\n').count() as u64;
            data.extend_from_slice(&bytes);
            data.push(b'\n');
        }
        let file = dir.write("in.csv", &data);
        let rejects = dir.path().join("rejects.csv");
        let o = LoadOptions {
            header: Header::No,
            block_size: Some(block),
            threads: Some(threads),
            on_error: OnError::Skip,
            rejects: Some(rejects.clone()),
            ..opts("n INT, t TEXT")
        };
        let mut db = Database::open_writer(dir.path().join("db")).unwrap();
        let s = load(&mut db, "t", &[Input::File(file.clone())], &o).unwrap();
        // Without a rejects file or --max-errors the rejects are only
        // counted (their messages are not made): the same rows and count.
        let counted = LoadOptions { rejects: None, ..o };
        let c = load(&mut db, "u", &[Input::File(file)], &counted).unwrap();
        drop(db);
        prop_assert_eq!(s.rows + s.rejected, recs.len() as u64);
        prop_assert_eq!(s.rejected as usize, expect_rejects.len());
        prop_assert_eq!((c.rows, c.rejected), (s.rows, s.rejected));
        let got_rejects = read_rejects(&rejects);
        prop_assert_eq!(&got_rejects, &expect_rejects);
        if !expect_rows.is_empty() {
            prop_assert_eq!(table_rows(&dir.path().join("db"), "t"), expect_rows.clone());
            prop_assert_eq!(table_rows(&dir.path().join("db"), "u"), expect_rows);
        }
    }
}

#[test]
fn max_errors_fails_the_load_and_commits_nothing() {
    let dir = TempDir::new("maxerr");
    let data = b"1,a\nx,b\n3,c\ny,d\nz,e\n6,f\n";
    let o = LoadOptions {
        on_error: OnError::Skip,
        max_errors: Some(2),
        ..opts("n INT, t TEXT")
    };
    let e = crate::common::load_bytes(&dir, "t", data, &o)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(":5:")
            && e.contains(
                "more than --max-errors 2 records rejected; this one: invalid INT value \"z\""
            ),
        "{e}"
    );
    assert!(
        Database::open(dir.path().join("db"))
            .unwrap()
            .table("t")
            .is_none()
    );
    // At the limit, the load commits.
    let o = LoadOptions {
        max_errors: Some(3),
        ..o
    };
    let s = crate::common::load_bytes(&dir, "t", data, &o).unwrap();
    assert_eq!((s.rows, s.rejected), (3, 3));
}

#[test]
fn missing_columns_are_an_error_or_null_when_allowed() {
    let dir = TempDir::new("ragged");
    let data = b"1,a,x\n2\n3,c\n";
    let e = crate::common::load_bytes(&dir, "t", data, &opts("n INT, t TEXT, u TEXT"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(":2: found a record with 1 field, expected 3"),
        "{e}"
    );
    let o = LoadOptions {
        allow_missing_columns: true,
        ..opts("n INT, t TEXT, u TEXT")
    };
    crate::common::load_bytes(&dir, "t", data, &o).unwrap();
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        table_rows(&dir.path().join("db"), "t"),
        vec![
            vec![s("1"), s("a"), s("x")],
            vec![s("2"), None, None],
            vec![s("3"), s("c"), None],
        ]
    );
    // Too many fields stay an error.
    let e = crate::common::load_bytes(&dir, "t", b"4,d,y,extra\n", &o)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("found a record with 4 fields, expected 3"),
        "{e}"
    );
}

#[test]
fn small_files_packed_together_keep_their_own_names_and_lines() {
    let dir = TempDir::new("packed");
    // Many small files travel in one block; errors and rejects must still
    // name the right file and line.
    let mut inputs = Vec::new();
    for f in 0..30 {
        let body = if f == 17 {
            "1,a\n2,b\nbad,c\n4,d\n".to_string()
        } else {
            format!("{f},x\n")
        };
        inputs.push(Input::File(
            dir.write(&format!("f{f:02}.csv"), body.as_bytes()),
        ));
    }
    let mut db = Database::open_writer(dir.path().join("db")).unwrap();
    let e = load(&mut db, "t", &inputs, &opts("n INT, t TEXT"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("f17.csv:3: column 1 (n): invalid INT value \"bad\""),
        "{e}"
    );
    let rejects = dir.path().join("rejects.csv");
    let o = LoadOptions {
        on_error: OnError::Skip,
        rejects: Some(rejects.clone()),
        ..opts("n INT, t TEXT")
    };
    let s = load(&mut db, "t", &inputs, &o).unwrap();
    assert_eq!((s.rows, s.rejected), (32, 1));
    let got = read_rejects(&rejects);
    assert_eq!(got, vec![(3, b"bad,c".to_vec())]);
    let text = std::fs::read_to_string(&rejects).unwrap();
    assert!(
        text.lines().nth(1).unwrap().contains("f17.csv,3,"),
        "{text}"
    );
    drop(db);
    let rows = table_rows(&dir.path().join("db"), "t");
    let firsts: Vec<String> = rows.iter().map(|r| r[0].clone().unwrap()).collect();
    let mut want: Vec<String> = (0..17).map(|f| f.to_string()).collect();
    want.extend(["1", "2", "4"].map(String::from));
    want.extend((18..30).map(|f| f.to_string()));
    assert_eq!(firsts, want, "rows stay in file order");
}
