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

/// A small Parquet file of three typed columns, written by the `parquet`
/// crate as another tool would write it.
fn parquet_file() -> Vec<u8> {
    use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
    use parquet::arrow::ArrowWriter;
    let n = 300;
    let ids: ArrayRef = std::sync::Arc::new(Int64Array::from_iter_values(0..n));
    let names: ArrayRef = std::sync::Arc::new(StringArray::from_iter_values(
        (0..n).map(|i| format!("name {i}")),
    ));
    let xs: ArrayRef = std::sync::Arc::new(Float64Array::from_iter(
        (0..n).map(|i| (i % 7 != 0).then_some(i as f64 / 4.0)),
    ));
    let batch = RecordBatch::try_from_iter([("id", ids), ("name", names), ("x", xs)]).unwrap();
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    out
}

/// Loads `data` as a Parquet file into a new table: the error, if any.
fn load_parquet_bytes(data: &[u8]) -> sluice::Result<u64> {
    use sluice::load::columnar::{Columnar, load_columnar, prepare_columnar};
    let dir = TempDir::new("fuzzparquet");
    let inputs = [Input::File(dir.write("in.parquet", data))];
    let db = dir.path().join("db");
    let req = sluice::load::LoadRequest::default();
    let plan = prepare_columnar(&db, "t", &inputs, Columnar::Parquet, &req)?;
    let opts = plan.options(&req)?;
    let mut d = Database::open_writer(&db)?;
    Ok(load_columnar(&mut d, "t", &plan, &opts)?.rows)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Parquet bytes a stranger hands over, damaged anywhere (a byte
    /// changed, a run zeroed, the file cut): the load is the rows or an
    /// error value, never a panic or an abort.
    #[test]
    fn damaged_parquet_is_loaded_or_refused_never_a_panic(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
        cut in prop::option::of(any::<prop::sample::Index>()),
    ) {
        let mut data = parquet_file();
        for (at, byte, kind) in edits {
            let i = at.index(data.len());
            match kind {
                0 => data[i] = byte,
                1 => data[i] ^= 1 << (byte % 8),
                _ => {
                    let end = (i + 1 + byte as usize % 64).min(data.len());
                    data[i..end].fill(0);
                }
            }
        }
        if let Some(c) = cut {
            data.truncate(c.index(data.len()));
        }
        let r = std::panic::catch_unwind(|| load_parquet_bytes(&data));
        prop_assert!(r.is_ok(), "the Parquet load panicked");
        if let Ok(Err(e)) = r {
            prop_assert!(!e.to_string().is_empty());
        }
    }

    /// JSON bytes, damaged: inferred and loaded, or an error value.
    #[test]
    fn damaged_json_is_loaded_or_refused_never_a_panic(
        edits in prop::collection::vec((any::<prop::sample::Index>(), prop::sample::select(b"{}[]\",:\\ \n0a-.e".to_vec())), 0..8),
        lines in any::<bool>(),
    ) {
        let mut data: Vec<u8> = if lines {
            (0..30).map(|i| format!("{{\"id\": {i}, \"name\": \"n\\u00e9 {i}\", \"x\": [1, {{\"y\": null}}], \"ok\": true}}\n")).collect::<String>().into_bytes()
        } else {
            format!("{{\"data\": [{}]}}", (0..30).map(|i| format!("{{\"id\": {i}, \"v\": {}.5}}", i * 3)).collect::<Vec<_>>().join(",")).into_bytes()
        };
        for (at, byte) in edits {
            let i = at.index(data.len());
            data[i] = byte;
        }
        let dir = TempDir::new("fuzzjson");
        let name = if lines { "in.jsonl" } else { "in.json" };
        let file = dir.write(name, &data);
        let r = std::panic::catch_unwind(|| {
            // As `sluice load` does: the format from the name, the rows
            // inferred, then the load.
            let inputs = [Input::File(file.clone())];
            let db_dir = dir.path().join("db");
            let req = sluice::load::LoadRequest::default();
            let prepared = sluice::load::prepare(&db_dir, "t", &inputs, &req)?;
            let mut db = Database::open_writer(&db_dir)?;
            load(&mut db, "t", &inputs, &prepared.options).map(|_| ())
        });
        prop_assert!(r.is_ok(), "the JSON load panicked");
    }
}

#[test]
fn the_parquet_file_the_fuzz_damages_loads_whole() {
    assert_eq!(load_parquet_bytes(&parquet_file()).unwrap(), 300);
}
