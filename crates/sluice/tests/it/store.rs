//! Atomic commits, orphan cleanup, checksums and the writer lock.

use sluice::Error;
use sluice::load::{LoadOptions, load};
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
    // The segment and the load journal stay.
    assert_eq!(
        segment_files(dir.path()),
        ["000001-00000.arrow", "000001.load"]
    );
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

/// The physical Arrow type of column `c` in each segment of table t.
fn physical_types(db_dir: &std::path::Path, c: usize) -> Vec<arrow_schema::DataType> {
    let db = Database::open(db_dir).unwrap();
    let meta = db.table("t").unwrap().clone();
    let schema = meta.schema.arrow_schema();
    meta.segments
        .iter()
        .flat_map(|s| {
            db.segment_batches(s, &schema)
                .unwrap()
                .iter()
                .map(|b| b.column(c).data_type().clone())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn repeating_text_is_stored_as_a_dictionary_and_read_back_as_text() {
    let dir = TempDir::new("dict");
    let mut data = String::new();
    let flags = ["A", "N", "R", ""];
    for i in 0..3000 {
        // NULL (an empty unquoted field) every 7th row.
        let flag = if i % 7 == 0 {
            String::new()
        } else {
            format!("\"{}\"", flags[i % 4])
        };
        data.push_str(&format!("{i},{flag},name {i}\n"));
    }
    let mut o = opts("id INT, flag TEXT, name TEXT");
    o.block_size = Some(4096);
    load_bytes(&dir, "t", data.as_bytes(), &o).unwrap();
    let db_dir = dir.path().join("db");
    let dict = arrow_schema::DataType::Dictionary(
        Box::new(arrow_schema::DataType::UInt16),
        Box::new(arrow_schema::DataType::Utf8),
    );
    let types = physical_types(&db_dir, 1);
    assert!(types.iter().all(|t| *t == dict));
    // ~80 blocks of ~40 rows were written as one batch, not 80.
    assert_eq!(types.len(), 1, "{types:?}");
    assert!(
        physical_types(&db_dir, 2)
            .iter()
            .all(|t| *t == arrow_schema::DataType::Utf8)
    );
    let rows = table_rows(&db_dir, "t");
    assert_eq!(rows.len(), 3000);
    for (i, r) in rows.iter().enumerate() {
        let want = if i % 7 == 0 {
            None
        } else {
            Some(flags[i % 4].to_string())
        };
        assert_eq!(r[1], want, "row {i}");
        assert_eq!(r[2].as_deref(), Some(format!("name {i}").as_str()));
    }
}

#[test]
fn a_column_that_outgrows_its_dictionary_continues_plain_in_a_new_segment() {
    let dir = TempDir::new("dictroll");
    let mut data = String::new();
    // 60,000 rows of three codes, then 60,000 distinct codes, in blocks of
    // ~20,000 rows (large enough to be written as they come): the first
    // blocks are encoded, then the segment dictionary overflows.
    for i in 0..120000 {
        let code = if i < 60000 {
            format!("c{}", i % 3)
        } else {
            format!("u{i}")
        };
        data.push_str(&format!("{i},{code}\n"));
    }
    let mut o = opts("id INT, code TEXT");
    o.block_size = Some(256 << 10);
    load_bytes(&dir, "t", data.as_bytes(), &o).unwrap();
    let db_dir = dir.path().join("db");
    let types = physical_types(&db_dir, 1);
    assert!(
        matches!(types[0], arrow_schema::DataType::Dictionary(..)),
        "{types:?}"
    );
    assert_eq!(types.last(), Some(&arrow_schema::DataType::Utf8));
    let db = Database::open(&db_dir).unwrap();
    assert!(db.table("t").unwrap().segments.len() >= 2);
    let rows = table_rows(&db_dir, "t");
    assert_eq!(rows.len(), 120000);
    for (i, r) in rows.iter().enumerate() {
        let want = if i < 60000 {
            format!("c{}", i % 3)
        } else {
            format!("u{i}")
        };
        assert_eq!(r[0].as_deref(), Some(i.to_string().as_str()));
        assert_eq!(r[1].as_deref(), Some(want.as_str()), "row {i}");
    }
    // Grouping over both kinds of segments finds each code once.
    let q = sluice::query::query(
        &db,
        "SELECT code, count(*) FROM t GROUP BY code ORDER BY code LIMIT 4",
        Some(2),
    )
    .unwrap();
    let got = crate::common::rows_of(&q.batches);
    assert_eq!(
        got,
        vec![
            vec![Some("c0".into()), Some("20000".into())],
            vec![Some("c1".into()), Some("20000".into())],
            vec![Some("c2".into()), Some("20000".into())],
            vec![Some("u100000".into()), Some("1".into())],
        ]
    );
}

#[test]
fn zstd_segments_read_back_the_same_rows_and_are_smaller() {
    let mut data = String::new();
    for i in 0..20_000 {
        data.push_str(&format!("{i},{},name-{}\n", i % 7, i % 1000));
    }
    let schema = "id BIGINT, k INT, name TEXT";
    let plain_dir = TempDir::new("plain");
    load_bytes(&plain_dir, "t", data.as_bytes(), &opts(schema)).unwrap();
    let zstd_dir = TempDir::new("zstd");
    let mut o = opts(schema);
    o.compression = Some(sluice::store::Compression::Zstd);
    load_bytes(&zstd_dir, "t", data.as_bytes(), &o).unwrap();
    // A second load keeps the table's compression; another is refused.
    load_bytes(&zstd_dir, "t", b"20000,1,x\n", &opts(schema)).unwrap();
    let mut other = opts(schema);
    other.compression = Some(sluice::store::Compression::None);
    let err = load_bytes(&zstd_dir, "t", b"20001,1,x\n", &other).unwrap_err();
    assert!(err.to_string().contains("compression"), "{err}");

    let plain = table_rows(&plain_dir.path().join("db"), "t");
    let mut zstd = table_rows(&zstd_dir.path().join("db"), "t");
    assert_eq!(
        zstd.pop(),
        Some(vec![
            Some("20000".into()),
            Some("1".into()),
            Some("x".into())
        ])
    );
    assert_eq!(plain, zstd);
    let size = |d: &TempDir| {
        let db = Database::open(d.path().join("db")).unwrap();
        db.table("t").unwrap().bytes()
    };
    assert!(
        size(&zstd_dir) * 2 < size(&plain_dir),
        "zstd {} vs plain {}",
        size(&zstd_dir),
        size(&plain_dir)
    );
    let sum = |d: &TempDir| {
        let db = Database::open(d.path().join("db")).unwrap();
        let r = sluice::query::query(
            &db,
            "SELECT sum(id), count(DISTINCT name) FROM t WHERE k = 3",
            Some(2),
        )
        .unwrap();
        sluice::batch::format_value(r.batches[0].column(0).as_ref(), 0)
    };
    assert_eq!(sum(&zstd_dir), sum(&plain_dir));
}

/// The one row of a one-value query, as text.
/// `sluice check` of table t reports a checksum mismatch.
fn check_finds_a_checksum_mismatch(db: &Database) {
    let report = db.check("t").unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("checksum mismatch")),
        "{:?}",
        report.problems
    );
}

fn one_value(db: &Database, sql: &str) -> sluice::Result<String> {
    let r = sluice::query::query(db, sql, Some(2))?;
    Ok(crate::common::rows_of(&r.batches)[0][0]
        .clone()
        .unwrap_or_default())
}

#[test]
fn a_query_checks_the_columns_it_reads_and_only_those() {
    let dir = TempDir::new("corrupt-column");
    // Column a holds a value whose bytes are easy to find in the file.
    let marker: i64 = 0x5A17_C0DE_0BAD_F00D;
    let mut data = String::new();
    for i in 0..1000i64 {
        let a = if i == 500 { marker } else { i };
        data.push_str(&format!("{a},{}\n", i * 7));
    }
    load_bytes(&dir, "t", data.as_bytes(), &opts("a BIGINT, b BIGINT")).unwrap();
    let db_dir = dir.path().join("db");
    let seg = db_dir.join("tables/t/000001-00000.arrow");
    let mut bytes = std::fs::read(&seg).unwrap();
    let at = bytes
        .windows(8)
        .position(|w| w == marker.to_le_bytes())
        .expect("the marker is in the file");
    bytes[at + 3] ^= 0x10;
    std::fs::write(&seg, &bytes).unwrap();
    let db = Database::open(&db_dir).unwrap();
    // A query of b reads b's bytes and the file's metadata: it succeeds.
    let sum_b: i64 = (0..1000).map(|i| i * 7).sum();
    assert_eq!(
        one_value(&db, "SELECT sum(b) FROM t").unwrap(),
        sum_b.to_string()
    );
    // count(*) reads no column: the manifest's counts.
    assert_eq!(one_value(&db, "SELECT count(*) FROM t").unwrap(), "1000");
    let plan = sluice::query::query(&db, "EXPLAIN SELECT count(*) FROM t", None).unwrap();
    assert!(
        plan.explain
            .unwrap()
            .contains("counted from the manifest (no segment read)"),
    );
    // min, max and count of a column without a filter come from the
    // segment's statistics of it, kept in the manifest: no byte of a read.
    assert_eq!(
        one_value(&db, "SELECT max(a) FROM t").unwrap(),
        marker.to_string()
    );
    assert_eq!(one_value(&db, "SELECT min(a) FROM t").unwrap(), "0");
    assert_eq!(one_value(&db, "SELECT count(a) FROM t").unwrap(), "1000");
    let plan = sluice::query::query(&db, "EXPLAIN SELECT min(a), max(a) FROM t", None).unwrap();
    assert!(
        plan.explain
            .unwrap()
            .contains("min/max/count taken from the column statistics from the manifest"),
    );
    // With a filter they read a, and fail.
    assert!(one_value(&db, "SELECT max(a) FROM t WHERE b >= 0").is_err());
    // A query of a fails, naming the file and the column.
    let e = one_value(&db, "SELECT sum(a) FROM t").unwrap_err();
    assert!(matches!(e, Error::Corrupt { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("000001-00000.arrow: corrupt: checksum mismatch in column a (crc32"),
        "{e}"
    );
    // A filter on b that reads a too.
    assert!(one_value(&db, "SELECT count(*) FROM t WHERE a > b").is_err());
    // check reads everything.
    check_finds_a_checksum_mismatch(&db);
    // A segment of a manifest without checksums of parts (written before
    // them) is checked whole: a query of b now finds the damage too.
    let mut m = sluice::store::Manifest::read(&db_dir).unwrap().unwrap();
    for s in &mut m.tables.get_mut("t").unwrap().segments {
        assert!(s.checksums.is_some());
        s.checksums = None;
    }
    m.write_atomic(&db_dir).unwrap();
    let db = Database::open(&db_dir).unwrap();
    let e = one_value(&db, "SELECT sum(b) FROM t")
        .unwrap_err()
        .to_string();
    assert!(e.contains("corrupt: checksum mismatch (crc32"), "{e}");
    // Repaired, both read again.
    bytes[at + 3] ^= 0x10;
    std::fs::write(&seg, &bytes).unwrap();
    let db = Database::open(&db_dir).unwrap();
    assert_eq!(
        one_value(&db, "SELECT sum(b) FROM t").unwrap(),
        sum_b.to_string()
    );
}

#[test]
fn every_flipped_byte_of_a_segment_is_found_by_check_and_never_misread() {
    // Every byte of a small segment (BIGINT, TEXT, a NULL) flipped in
    // turn: a query of each column either fails as corrupt or returns
    // the right rows (a flip in padding changes nothing it reads), and
    // check always reports the damage.
    let dir = TempDir::new("corrupt-every-byte");
    load_bytes(
        &dir,
        "t",
        b"1,ann\n2,\n3,carl\n",
        &opts("id BIGINT, name TEXT"),
    )
    .unwrap();
    let db_dir = dir.path().join("db");
    let seg = db_dir.join("tables/t/000001-00000.arrow");
    let good = std::fs::read(&seg).unwrap();
    let want = ["1,ann", "2,", "3,carl"];
    for i in 0..good.len() {
        let mut bytes = good.clone();
        bytes[i] ^= 0x01;
        std::fs::write(&seg, &bytes).unwrap();
        let db = Database::open(&db_dir).unwrap();
        for sql in [
            "SELECT id FROM t",
            "SELECT name FROM t",
            "SELECT id, name FROM t",
        ] {
            match sluice::query::query(&db, sql, Some(1)) {
                Ok(r) => {
                    let rows = crate::common::rows_of(&r.batches);
                    let got: Vec<String> = rows
                        .iter()
                        .map(|r| {
                            r.iter()
                                .map(|v| v.clone().unwrap_or_default())
                                .collect::<Vec<_>>()
                                .join(",")
                        })
                        .collect();
                    let cols = sql.matches(',').count() + 1;
                    let expect: Vec<String> = want
                        .iter()
                        .map(|w| match (sql, cols) {
                            ("SELECT id FROM t", _) => w.split(',').next().unwrap().to_string(),
                            ("SELECT name FROM t", _) => w.split(',').nth(1).unwrap().to_string(),
                            _ => w.to_string(),
                        })
                        .collect();
                    assert_eq!(got, expect, "byte {i} flipped, {sql}");
                }
                Err(e) => assert!(matches!(e, Error::Corrupt { .. }), "byte {i}: {e}"),
            }
        }
        let report = db.check("t").unwrap();
        assert!(
            !report.problems.is_empty(),
            "byte {i} flipped: check found nothing"
        );
    }
}

#[test]
fn segments_of_every_column_type_have_checksums_of_their_parts() {
    // Each type a table holds (TEXT both dictionary-encoded and plain):
    // the writer splits the file into its parts, so queries check only
    // what they read.
    let dir = TempDir::new("checksums-every-type");
    let mut data = String::new();
    for i in 0..5000 {
        data.push_str(&format!(
            "{i},{},{}.25,{}.5,2024-01-{:02},2024-01-01 10:00:{:02},{},{},word{}\n",
            i % 100,
            i % 7,
            i,
            i % 28 + 1,
            i % 60,
            i % 2 == 0,
            ["a", "b", "c"][i % 3],
            i
        ));
    }
    let schema = "k BIGINT, n INT, d DECIMAL(12,2), f DOUBLE, day DATE, at TIMESTAMP, ok BOOLEAN, few TEXT, many TEXT";
    for (table, compression) in [("t", None), ("z", Some(sluice::store::Compression::Zstd))] {
        let o = sluice::load::LoadOptions {
            compression,
            ..opts(schema)
        };
        load_bytes(&dir, table, data.as_bytes(), &o).unwrap();
        let db = Database::open(dir.path().join("db")).unwrap();
        let t = db.table(table).unwrap();
        assert!(!t.segments.is_empty());
        for s in &t.segments {
            let parts = s.checksums.as_ref().expect("checksums of parts");
            assert_eq!(parts.columns.len(), 9);
        }
        assert_eq!(
            one_value(
                &db,
                &format!("SELECT count(DISTINCT few) FROM {table} WHERE d > 3")
            )
            .unwrap(),
            "3"
        );
        assert!(db.check(table).unwrap().problems.is_empty());
    }
}

/// A table of `n` rows `(a, b)` with a = i (ascending) and b = i * 7,
/// loaded in blocks of 256 KiB: one segment of record batches of ~20,000
/// rows (batches under 8,192 rows would be gathered into one).
fn batched_table(dir: &TempDir, n: i64) -> std::path::PathBuf {
    let mut data = String::new();
    for i in 0..n {
        data.push_str(&format!("{i},{}\n", i * 7));
    }
    let o = LoadOptions {
        block_size: Some(256 << 10),
        ..opts("a BIGINT, b BIGINT")
    };
    load_bytes(dir, "t", data.as_bytes(), &o).unwrap();
    dir.path().join("db")
}

#[test]
fn a_query_checks_only_the_record_batches_it_reads() {
    let dir = TempDir::new("corrupt-batch");
    let db_dir = batched_table(&dir, 100_000);
    let seg = db_dir.join("tables/t/000001-00000.arrow");
    let before = Database::open(&db_dir).unwrap();
    assert_eq!(before.table("t").unwrap().segments.len(), 1);
    // Damage a's value 95,000, in the last batch.
    let mut bytes = std::fs::read(&seg).unwrap();
    let hits: Vec<usize> = bytes
        .windows(8)
        .enumerate()
        .filter(|(_, w)| *w == 95_000i64.to_le_bytes())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(hits.len(), 1, "the value is in the file once");
    bytes[hits[0] + 1] ^= 0x40;
    std::fs::write(&seg, &bytes).unwrap();
    let db = Database::open(&db_dir).unwrap();

    // A filter whose zone maps rule out the damaged batch: it is never
    // read, and the answer is right.
    let want: i64 = (0..10_000).sum();
    assert_eq!(
        one_value(&db, "SELECT sum(a) FROM t WHERE a < 10000").unwrap(),
        want.to_string()
    );
    let plan = sluice::query::query(&db, "EXPLAIN SELECT sum(a) FROM t WHERE a < 10000", None)
        .unwrap()
        .explain
        .unwrap();
    assert!(
        plan.contains("record batches pruned by the zone maps in their segments"),
        "{plan}"
    );
    // Column b of every batch is intact.
    let sum_b: i64 = (0..100_000).map(|i| i * 7).sum();
    assert_eq!(
        one_value(&db, "SELECT sum(b) FROM t").unwrap(),
        sum_b.to_string()
    );
    // The first rows in a's order: the later batches cannot hold any of
    // them and are skipped (one worker: the threshold is there before the
    // damaged batch comes).
    let r = sluice::query::query(&db, "SELECT a, b FROM t ORDER BY a LIMIT 3", Some(1)).unwrap();
    assert_eq!(
        crate::common::rows_of(&r.batches),
        vec![
            vec![Some("0".to_string()), Some("0".to_string())],
            vec![Some("1".to_string()), Some("7".to_string())],
            vec![Some("2".to_string()), Some("14".to_string())],
        ]
    );
    assert!(r.facts.morsels_skipped > 0, "{:?}", r.facts);
    // Reading the damaged batch's column a fails, naming file, column and
    // batch.
    for sql in [
        "SELECT sum(a) FROM t",
        "SELECT count(*) FROM t WHERE a > 90000",
        "SELECT a FROM t ORDER BY a DESC LIMIT 3",
    ] {
        let e = one_value(&db, sql).unwrap_err();
        assert!(matches!(e, Error::Corrupt { .. }), "{sql}: {e}");
        let m = e.to_string();
        assert!(
            m.contains("000001-00000.arrow: corrupt: checksum mismatch in column a (crc32")
                && m.contains("for record batch"),
            "{sql}: {m}"
        );
    }
    // check reads everything.
    check_finds_a_checksum_mismatch(&db);
}

#[test]
fn order_by_limit_skips_batches_and_gives_the_first_rows_of_the_whole_order() {
    let dir = TempDir::new("topk-batches");
    // Values in three-way ties, rising, NULLs in the first batch only:
    // a = i / 3, NULL for every 97th of the first 5,000 rows; b the row
    // number. Batches of ~13,000 rows.
    let a_of = |i: i64| (i >= 5000 || i % 97 != 0).then_some(i / 3);
    let mut data = String::new();
    for i in 0..60_000i64 {
        let a = a_of(i).map(|a| a.to_string()).unwrap_or_default();
        data.push_str(&format!("{a},{i}\n"));
    }
    let o = LoadOptions {
        block_size: Some(128 << 10),
        ..opts("a BIGINT, b BIGINT")
    };
    load_bytes(&dir, "t", data.as_bytes(), &o).unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    let mut skipped = 0;
    for order in [
        "a",
        "a DESC",
        "a NULLS FIRST",
        "a DESC NULLS LAST",
        "a, b DESC",
    ] {
        let all = sluice::query::query(
            &db,
            &format!("SELECT a, b FROM t ORDER BY {order}"),
            Some(1),
        )
        .unwrap();
        let all = crate::common::rows_of(&all.batches);
        for k in [1usize, 4, 10, 50] {
            for threads in [1usize, 2, 3] {
                let sql = format!("SELECT a, b FROM t ORDER BY {order} LIMIT {k}");
                let r = sluice::query::query(&db, &sql, Some(threads)).unwrap();
                skipped += r.facts.morsels_skipped;
                let got = crate::common::rows_of(&r.batches);
                // The keys are those of the whole order's first rows (rows
                // of equal keys may come in any order but the last).
                let keys = |rows: &[Vec<Option<String>>]| -> Vec<Option<String>> {
                    rows.iter().map(|r| r[0].clone()).collect()
                };
                assert_eq!(keys(&got), keys(&all[..k]), "{sql}, {threads} threads");
                if order == "a, b DESC" {
                    assert_eq!(got, all[..k], "{sql}, {threads} threads");
                }
                // Each row is one of the table's.
                for row in &got {
                    let b: i64 = row[1].as_deref().unwrap().parse().unwrap();
                    assert_eq!(row[0], a_of(b).map(|a| a.to_string()), "{sql}");
                }
            }
        }
    }
    assert!(skipped > 0, "no batch was skipped");
    // With a filter that cannot fail, batches are still skipped.
    let r = sluice::query::query(
        &db,
        "SELECT a, b FROM t WHERE b >= 0 ORDER BY a DESC NULLS LAST LIMIT 2",
        Some(1),
    )
    .unwrap();
    assert_eq!(
        crate::common::rows_of(&r.batches)
            .iter()
            .map(|r| r[0].clone().unwrap_or_default())
            .collect::<Vec<_>>(),
        vec!["19999", "19999"]
    );
}

#[test]
fn filters_on_dictionary_encoded_text_give_the_answers_of_plain_text() {
    let dir = TempDir::new("dict-filters");
    // s repeats five values (one NULL): stored dictionary-encoded; p holds
    // the same text in a column of distinct values (stored plain).
    let vals = [Some("ab"), Some("b"), Some("c"), None, Some("é")];
    let mut data = String::new();
    for i in 0..4000usize {
        let s = vals[i % 5].map(|v| format!("\"{v}\"")).unwrap_or_default();
        let p = vals[i % 5]
            .map(|v| format!("\"{v}#{i}\""))
            .unwrap_or_default();
        data.push_str(&format!("{i},{s},{p}\n"));
    }
    let mut o = opts("k INT, s TEXT, p TEXT");
    o.block_size = Some(64 << 10);
    load_bytes(&dir, "t", data.as_bytes(), &o).unwrap();
    let db_dir = dir.path().join("db");
    let dict = arrow_schema::DataType::Dictionary(
        Box::new(arrow_schema::DataType::UInt16),
        Box::new(arrow_schema::DataType::Utf8),
    );
    assert!(physical_types(&db_dir, 1).iter().all(|t| *t == dict));
    let db = Database::open(&db_dir).unwrap();
    // Each filter on s against the count the filter gives on the values.
    let count = |w: &str| one_value(&db, &format!("SELECT count(*) FROM t WHERE {w}")).unwrap();
    let n = |f: &dyn Fn(Option<&str>) -> bool| -> String {
        (0..4000).filter(|i| f(vals[i % 5])).count().to_string()
    };
    let cases: Vec<(&str, String)> = vec![
        ("s = 'b'", n(&|v| v == Some("b"))),
        ("'b' = s", n(&|v| v == Some("b"))),
        ("s <> 'b'", n(&|v| v.is_some_and(|v| v != "b"))),
        ("s < 'b'", n(&|v| v.is_some_and(|v| v < "b"))),
        ("'b' <= s", n(&|v| v.is_some_and(|v| v >= "b"))),
        ("s > 'c'", n(&|v| v.is_some_and(|v| v > "c"))),
        ("s LIKE 'a%'", n(&|v| v.is_some_and(|v| v.starts_with('a')))),
        (
            "s NOT LIKE '%b'",
            n(&|v| v.is_some_and(|v| !v.ends_with('b'))),
        ),
        ("s ILIKE 'É'", n(&|v| v == Some("é"))),
        ("s IN ('c', 'é')", n(&|v| matches!(v, Some("c" | "é")))),
        ("s NOT IN ('c')", n(&|v| v.is_some_and(|v| v != "c"))),
        ("s IS NULL", n(&|v| v.is_none())),
        (
            "s IS NOT NULL AND s <> 'ab'",
            n(&|v| v.is_some_and(|v| v != "ab")),
        ),
        (
            "s = 'b' OR k < 10",
            (0..4000)
                .filter(|&i| vals[i % 5] == Some("b") || i < 10)
                .count()
                .to_string(),
        ),
        ("upper(s) = 'B'", n(&|v| v == Some("b"))),
        ("s = 'zz'", "0".to_string()),
    ];
    for (w, want) in &cases {
        assert_eq!(&count(w), want, "WHERE {w}");
    }
    // The filter's column read back in the result, grouped, summed.
    let r = sluice::query::query(
        &db,
        "SELECT s, count(*), sum(k) FROM t WHERE s <> 'c' GROUP BY s ORDER BY s",
        Some(2),
    )
    .unwrap();
    let sum = |j: usize| -> String { (0..4000).filter(|i| i % 5 == j).sum::<usize>().to_string() };
    assert_eq!(
        crate::common::rows_of(&r.batches),
        vec![
            vec![
                Some("ab".to_string()),
                Some("800".to_string()),
                Some(sum(0))
            ],
            vec![Some("b".to_string()), Some("800".to_string()), Some(sum(1))],
            vec![Some("é".to_string()), Some("800".to_string()), Some(sum(4))],
        ]
    );
    let r = sluice::query::query(
        &db,
        "SELECT k, p FROM t WHERE s = 'é' ORDER BY k LIMIT 2",
        Some(2),
    )
    .unwrap();
    assert_eq!(
        crate::common::rows_of(&r.batches),
        vec![
            vec![Some("4".to_string()), Some("é#4".to_string())],
            vec![Some("9".to_string()), Some("é#9".to_string())],
        ]
    );
    let r = sluice::query::query(
        &db,
        "SELECT k, s FROM t WHERE s LIKE '%b' AND k < 3",
        Some(2),
    )
    .unwrap();
    assert_eq!(
        crate::common::rows_of(&r.batches),
        vec![
            vec![Some("0".to_string()), Some("ab".to_string())],
            vec![Some("1".to_string()), Some("b".to_string())],
        ]
    );
}

#[test]
fn a_long_lived_handle_finds_a_segment_damaged_after_its_first_query() {
    // A handle keeps the segments its queries opened (a server's does),
    // mapped and checked. A file damaged in place afterwards shows its
    // new bytes through that mapping: the next query must check them
    // again, not read them unchecked.
    let dir = TempDir::new("damaged-after-read");
    let n = 100_000i64;
    let db_dir = batched_table(&dir, n);
    let seg = db_dir.join("tables/t/000001-00000.arrow");
    assert!(
        std::fs::metadata(&seg).unwrap().len() > 64 << 10,
        "a mapped file"
    );
    let db = Database::open(&db_dir).unwrap();
    let sum_a: i64 = (0..n).sum();
    assert_eq!(
        one_value(&db, "SELECT sum(a) FROM t WHERE b >= 0").unwrap(),
        sum_a.to_string()
    );
    // Column a's value 77,777 (its 8 bytes are in the file once) gets
    // another bit, in place: same inode and size, a later modification
    // time.
    let bytes = std::fs::read(&seg).unwrap();
    let at = bytes
        .windows(16)
        .position(|w| w[..8] == 77_777i64.to_le_bytes() && w[8..] == 77_778i64.to_le_bytes())
        .expect("the value is in the file");
    std::thread::sleep(std::time::Duration::from_millis(20));
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::OpenOptions::new().write(true).open(&seg).unwrap();
        f.seek(SeekFrom::Start(at as u64 + 2)).unwrap();
        f.write_all(&[bytes[at + 2] ^ 0x01]).unwrap();
        f.sync_all().unwrap();
    }
    let e = one_value(&db, "SELECT sum(a) FROM t WHERE b >= 0").unwrap_err();
    assert!(matches!(e, Error::Corrupt { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("000001-00000.arrow: corrupt: checksum mismatch in column a"),
        "{e}"
    );
    // Put back, the handle reads the right answer again.
    std::fs::write(&seg, &bytes).unwrap();
    assert_eq!(
        one_value(&db, "SELECT sum(a) FROM t WHERE b >= 0").unwrap(),
        sum_a.to_string()
    );
}
