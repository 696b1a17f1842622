//! Random bytes through the loader with random options: every outcome is
//! a committed load or an error value, never a panic, and a failed load
//! commits nothing.

use proptest::prelude::*;
use sluice::load::{ColumnRef, Header, LoadOptions, OnError, load};
use sluice::source::Input;
use sluice::store::Database;

use crate::common::{TempDir, opts};

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            6 => prop::sample::select(b"0123456789".to_vec()),
            2 => prop::sample::select(b"ab -.".to_vec()),
            3 => prop::sample::select(b",\n\"".to_vec()),
            1 => prop::sample::select(vec![b'\r', b'\t', b'|', 0xff, 0xc3, 0xa9, 0xef, 0xbb, 0xbf, 0xfe]),
        ],
        0..400,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn garbage_never_panics(
        data in bytes(),
        skip in any::<bool>(),
        fill in any::<bool>(),
        mapped in 0u8..3,
        header in 0u8..3,
        latin1 in any::<bool>(),
        block in 8usize..200,
        threads in 1usize..3,
    ) {
        let dir = TempDir::new("fuzz");
        let file = dir.write("in.csv", &data);
        let o = LoadOptions {
            on_error: if skip { OnError::Skip } else { OnError::Abort },
            rejects: skip.then(|| dir.path().join("rejects.csv")),
            allow_missing_columns: fill,
            columns: match mapped {
                0 => None,
                1 => Some(vec![ColumnRef::Position(2), ColumnRef::Position(1)]),
                _ => Some(vec![ColumnRef::Name("b".into())]),
            },
            match_by_name: false,
            header: match header {
                0 => Header::Auto,
                1 => Header::Yes,
                _ => Header::No,
            },
            encoding: latin1.then(|| sluice::source::encoding_for("latin1").unwrap()),
            block_size: Some(block),
            threads: Some(threads),
            ..opts("a INT, b TEXT, c DECIMAL(6,2) DEFAULT 0")
        };
        let mut db = Database::open_writer(dir.path().join("db")).unwrap();
        match load(&mut db, "t", &[Input::File(file)], &o) {
            Ok(s) => {
                drop(db);
                let db = Database::open(dir.path().join("db")).unwrap();
                let rows: usize = db.scan("t").unwrap().map(|b| b.unwrap().num_rows()).sum();
                prop_assert_eq!(rows as u64, s.rows);
            }
            Err(e) => {
                // An error value with a message; nothing committed.
                prop_assert!(!e.to_string().is_empty());
                drop(db);
                let db = Database::open(dir.path().join("db")).unwrap();
                prop_assert!(db.table("t").is_none());
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn inference_of_garbage_is_a_schema_or_an_error(data in bytes(), small in any::<bool>()) {
        let dir = TempDir::new("fuzzinfer");
        let file = dir.write("in.csv", &data);
        let o = sluice::infer::InferOptions {
            sample_bytes: if small { 16 } else { 1 << 16 },
            ..Default::default()
        };
        match sluice::infer::infer(&[Input::File(file.clone())], &o) {
            // What inference says must load the sample it came from, or
            // fail with an error value.
            Ok(inf) => {
                let lo = inf.load_options(LoadOptions::default());
                let mut db = Database::open_writer(dir.path().join("db")).unwrap();
                let _ = load(&mut db, "t", &[Input::File(file)], &lo);
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}
