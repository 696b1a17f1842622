//! Atomic commits, orphan cleanup, checksums and the writer lock.

use sluice::Error;
use sluice::load::load;
use sluice::source::Input;
use sluice::store::Database;

use crate::common::{TempDir, load_bytes, opts, table_rows};

fn segment_files(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.join("db/tables/t"))
        .map(|r| {
            r.map(|e| e.unwrap().file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn a_failed_load_leaves_the_table_exactly_as_before() {
    let dir = TempDir::new("atomic");
    let o = opts("id INT, v TEXT");
    load_bytes(&dir, "t", b"1,a\n2,b\n", &o).unwrap();
    let before_rows = table_rows(&dir.path().join("db"), "t");
    let before_files = segment_files(dir.path());
    let before_manifest = std::fs::read(dir.path().join("db/MANIFEST")).unwrap();
    // Many good blocks, then a bad row at the very end.
    let mut data = String::new();
    for i in 0..5000 {
        data.push_str(&format!("{i},row {i}\n"));
    }
    data.push_str("x,bad\n");
    let mut o2 = opts("id INT, v TEXT");
    o2.block_size = Some(256);
    let e = load_bytes(&dir, "t", data.as_bytes(), &o2).unwrap_err();
    assert!(matches!(e, Error::Parse { line: 5001, .. }), "{e}");
    assert_eq!(table_rows(&dir.path().join("db"), "t"), before_rows);
    assert_eq!(segment_files(dir.path()), before_files);
    assert_eq!(
        std::fs::read(dir.path().join("db/MANIFEST")).unwrap(),
        before_manifest
    );
}

#[test]
fn later_loads_append_and_keep_order() {
    let dir = TempDir::new("append");
    let o = opts("id INT, v TEXT");
    load_bytes(&dir, "t", b"1,a\n2,b\n", &o).unwrap();
    let s = load_bytes(&dir, "t", b"3,c\n", &sluice::load::LoadOptions::default()).unwrap();
    assert!(!s.created);
    let rows = table_rows(&dir.path().join("db"), "t");
    let ids: Vec<_> = rows.iter().map(|r| r[0].clone().unwrap()).collect();
    assert_eq!(ids, ["1", "2", "3"]);
    let e = load_bytes(&dir, "t", b"4\n", &opts("id INT"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "table t exists with columns (id INT, v TEXT); --schema gives (id INT)"
    );
}

#[test]
fn files_no_manifest_names_are_removed_on_open() {
    let dir = TempDir::new("orphans");
    load_bytes(&dir, "t", b"1\n", &opts("id INT")).unwrap();
    let db_dir = dir.path().join("db");
    std::fs::write(
        db_dir.join("tables/t/999999-00000.arrow"),
        b"half a segment",
    )
    .unwrap();
    std::fs::create_dir_all(db_dir.join("tables/ghost")).unwrap();
    std::fs::write(db_dir.join("tables/ghost/000001-00000.arrow"), b"x").unwrap();
    std::fs::write(db_dir.join("MANIFEST.tmp"), b"partial").unwrap();
    drop(Database::open_writer(&db_dir).unwrap());
    assert_eq!(segment_files(dir.path()), ["000001-00000.arrow"]);
    assert!(!db_dir.join("tables/ghost").exists());
    assert!(!db_dir.join("MANIFEST.tmp").exists());
    assert_eq!(table_rows(&db_dir, "t").len(), 1);
}

#[test]
fn a_flipped_byte_in_a_segment_is_detected() {
    let dir = TempDir::new("corrupt");
    load_bytes(&dir, "t", b"1,a\n2,b\n", &opts("id INT, v TEXT")).unwrap();
    let seg = dir.path().join("db/tables/t/000001-00000.arrow");
    let mut bytes = std::fs::read(&seg).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&seg, &bytes).unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    let e = db.scan("t").unwrap().next().unwrap().unwrap_err();
    assert!(matches!(e, Error::Corrupt { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("000001-00000.arrow: corrupt: checksum mismatch"),
        "{e}"
    );
    // Truncation too.
    std::fs::write(&seg, &bytes[..mid]).unwrap();
    let e = db
        .scan("t")
        .unwrap()
        .next()
        .unwrap()
        .unwrap_err()
        .to_string();
    assert!(e.contains("(truncated or overwritten)"), "{e}");
}

#[test]
fn a_damaged_manifest_is_detected() {
    let dir = TempDir::new("manifest");
    load_bytes(&dir, "t", b"1\n", &opts("id INT")).unwrap();
    let m = dir.path().join("db/MANIFEST");
    let mut bytes = std::fs::read(&m).unwrap();
    let last = bytes.len() - 3;
    bytes[last] ^= 1;
    std::fs::write(&m, &bytes).unwrap();
    let e = Database::open(dir.path().join("db"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.ends_with("MANIFEST: corrupt: checksum mismatch"), "{e}");
}

#[test]
fn a_second_writer_is_refused_with_the_pid() {
    let dir = TempDir::new("lock");
    let db_dir = dir.path().join("db");
    let first = Database::open_writer(&db_dir).unwrap();
    let e = Database::open_writer(&db_dir).err().unwrap();
    assert!(
        matches!(e, Error::Locked { pid: Some(p), .. } if p == std::process::id()),
        "{e}"
    );
    drop(first);
    let mut again = Database::open_writer(&db_dir).unwrap();
    let f = dir.write("x.csv", b"1\n");
    load(&mut again, "t", &[Input::File(f)], &opts("id INT")).unwrap();
}

#[test]
fn segments_roll_over_and_keep_zone_maps() {
    let dir = TempDir::new("zones");
    let mut data = String::new();
    for i in 0..3000 {
        data.push_str(&format!("{i},{}\n", if i % 10 == 0 { "" } else { "x" }));
    }
    load_bytes(&dir, "t", data.as_bytes(), &opts("id INT, v TEXT")).unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    let t = db.table("t").unwrap();
    assert_eq!(t.rows(), 3000);
    let s = &t.segments[0].stats;
    assert_eq!(s[0].range, Some(sluice::batch::StatRange::Int(0, 2999)));
    assert_eq!(s[1].nulls, 300);
}
