//! The store's answers that were wrong while another process wrote:
//! a check that overlapped a merge.

use sluice::load::{Header, LoadOptions, load};
use sluice::source::Input;
use sluice::store::Database;

use crate::common::TempDir;

/// Three loads of a keyed table: three key-index runs.
fn three_runs(dir: &TempDir) -> std::path::PathBuf {
    let db = dir.path().join("db");
    let o = LoadOptions {
        schema: Some("id BIGINT PRIMARY KEY, v INT".parse().unwrap()),
        header: Header::No,
        ..LoadOptions::default()
    };
    for i in 0..3 {
        let text: String = (0..50).map(|k| format!("{},{k}\n", i * 100 + k)).collect();
        let f = dir.write(&format!("f{i}.csv"), text.as_bytes());
        let mut w = Database::open_writer(&db).unwrap();
        load(&mut w, "t", &[Input::File(f)], &o).unwrap();
    }
    db
}

#[test]
fn check_during_compact_reads_one_snapshot() {
    let dir = TempDir::new("regression-store-check-compact");
    let db = three_runs(&dir);
    // The checker reads the manifest; then a merge commits and deletes
    // the three runs that snapshot names.
    let reader = Database::open(&db).unwrap();
    assert_eq!(reader.table("t").unwrap().runs.len(), 3);
    let before = reader.manifest().version;
    assert_eq!(Database::open_writer(&db).unwrap().compact("t").unwrap(), 3);
    let r = reader.check("t").unwrap();
    assert!(r.problems.is_empty(), "{r:?}");
    assert!(r.unnamed.is_empty(), "{r:?}");
    // It checked the newer snapshot: one run, all the rows.
    assert_eq!(r.version, before + 1);
    assert_eq!((r.segments, r.runs, r.journals), (3, 1, 3));
}

#[test]
fn check_names_files_of_the_snapshot_and_the_newest_manifest_as_named() {
    let dir = TempDir::new("regression-store-check-named");
    let db = three_runs(&dir);
    // A snapshot taken before the third load: the third load's files are
    // named by the newest manifest, so they are not leftovers.
    let reader = Database::open(&db).unwrap();
    let o = LoadOptions {
        header: Header::No,
        ..LoadOptions::default()
    };
    let f = dir.write("g.csv", b"1000,1\n");
    let mut w = Database::open_writer(&db).unwrap();
    load(&mut w, "t", &[Input::File(f)], &o).unwrap();
    drop(w);
    let r = reader.check("t").unwrap();
    assert!(r.problems.is_empty(), "{r:?}");
    assert!(r.unnamed.is_empty(), "{r:?}");
}
