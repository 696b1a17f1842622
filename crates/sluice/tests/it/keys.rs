//! Keyed tables: uniqueness across and inside loads, lookups after many
//! loads and merges, a model-based property test, damaged index files and
//! a merge that never committed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use sluice::Error;
use sluice::load::{Header, LoadOptions, LoadSummary, OnDuplicate, load};
use sluice::source::Input;
use sluice::store::Database;

use crate::common::{TempDir, rows_of, table_rows};

fn keyed_opts(schema: &str) -> LoadOptions {
    LoadOptions {
        schema: Some(schema.parse().unwrap()),
        header: Header::No,
        ..LoadOptions::default()
    }
}

/// Writes `files` (name, text) into `dir` and loads them in one load.
fn load_files(
    dir: &TempDir,
    table: &str,
    files: &[(&str, String)],
    o: &LoadOptions,
) -> sluice::Result<LoadSummary> {
    let inputs: Vec<Input> = files
        .iter()
        .map(|(n, t)| Input::File(dir.write(n, t.as_bytes())))
        .collect();
    let mut db = Database::open_writer(dir.path().join("db"))?;
    load(&mut db, table, &inputs, o)
}

fn db_dir(dir: &TempDir) -> PathBuf {
    dir.path().join("db")
}

/// The formatted row of `key`, or `None`.
fn get(db: &Path, table: &str, key: &str) -> Option<Vec<Option<String>>> {
    let db = Database::open(db).unwrap();
    let t = db.keyed(table).unwrap();
    t.get(key).unwrap().map(|b| rows_of(&[b]).remove(0))
}

fn table_files(db: &Path, table: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(db.join("tables").join(table))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

fn run_count(db: &Path, table: &str) -> usize {
    Database::open(db).unwrap().table(table).unwrap().runs.len()
}

#[test]
fn every_key_is_found_after_many_loads_and_merges() {
    let dir = TempDir::new("keys-many");
    let o = keyed_opts("id BIGINT PRIMARY KEY, v TEXT");
    let mut model: BTreeMap<i64, String> = BTreeMap::new();
    let mut merged_at = Vec::new();
    for load_no in 0..13i64 {
        // Keys spread over the range, unsorted, negative ones too.
        let text: String = (0..50)
            .map(|i| {
                let k = (i * 7919 + load_no * 104_729) % 1_000_003 - 500_000;
                model.insert(k, format!("v{load_no}-{i}"));
                format!("{k},v{load_no}-{i}\n")
            })
            .collect();
        let s = load_files(&dir, "t", &[(&format!("f{load_no}.csv"), text)], &o).unwrap();
        assert_eq!(s.rows, 50);
        if s.runs_merged > 0 {
            merged_at.push(load_no + 1);
        }
        // After every load: at most 3 runs of one tier (all tier 0 here).
        assert!(run_count(&db_dir(&dir), "t") <= 3, "load {load_no}");
    }
    // Four runs of tier 0 (below 256 Ki keys) become one, still of tier
    // 0 at this size: it is merged again with the next three.
    assert_eq!(merged_at, vec![4, 7, 10, 13]);
    let db = Database::open(db_dir(&dir)).unwrap();
    let t = db.keyed("t").unwrap();
    for (k, v) in &model {
        let row = t.get(&k.to_string()).unwrap().expect("a loaded key");
        assert_eq!(
            rows_of(&[row]),
            vec![vec![Some(k.to_string()), Some(v.clone())]]
        );
    }
    for absent in [-500_001i64, 1_000_000, 3, 499_999] {
        if !model.contains_key(&absent) {
            assert!(t.get(&absent.to_string()).unwrap().is_none(), "{absent}");
        }
    }
    // A batch lookup keeps the order asked for and skips missing keys.
    let some: Vec<String> = model.keys().rev().take(5).map(|k| k.to_string()).collect();
    let mut asked = some.clone();
    asked.insert(2, "123456789".into());
    let got = rows_of(&[t.get_many(&asked).unwrap()]);
    let want: Vec<Option<String>> = some.into_iter().map(Some).collect();
    assert_eq!(
        got.into_iter().map(|r| r[0].clone()).collect::<Vec<_>>(),
        want
    );
    // A key that is not a BIGINT is an error, not an empty result.
    assert!(t.get("twelve").is_err());
}

#[test]
fn a_duplicate_inside_one_load_names_both_lines_and_commits_nothing() {
    let dir = TempDir::new("keys-dup-in");
    let mut o = keyed_opts("code TEXT, n INT");
    o.key = Some("code".into());
    o.header = Header::Yes;
    load_files(&dir, "t", &[("a.csv", "code,n\nx,1\ny,2\n".into())], &o).unwrap();
    let manifest = std::fs::read(db_dir(&dir).join("MANIFEST")).unwrap();
    let files = table_files(&db_dir(&dir), "t");
    // b.csv line 3 and c.csv line 4 (headers count as lines).
    let err = load_files(
        &dir,
        "t",
        &[
            ("b.csv", "code,n\nm,3\nk,4\nz,5\n".into()),
            ("c.csv", "code,n\np,6\nq,7\nk,8\n".into()),
        ],
        &o,
    )
    .unwrap_err();
    match &err {
        Error::DuplicateKey {
            key, first, second, ..
        } => {
            assert_eq!(key, "'k'");
            assert!(first.ends_with("b.csv:3"), "{first}");
            assert!(second.ends_with("c.csv:4"), "{second}");
        }
        other => panic!("expected a duplicate key error, got {other}"),
    }
    assert_eq!(
        std::fs::read(db_dir(&dir).join("MANIFEST")).unwrap(),
        manifest
    );
    assert_eq!(table_files(&db_dir(&dir), "t"), files);
    // Inside one file too.
    let err = load_files(
        &dir,
        "t",
        &[("d.csv", "code,n\nr,1\ns,2\nr,3\n".into())],
        &o,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("d.csv:4 repeats the key of")
            && err.to_string().contains("d.csv:2"),
        "{err}"
    );
    // The table still takes good rows.
    load_files(&dir, "t", &[("e.csv", "code,n\nk,9\n".into())], &o).unwrap();
    assert_eq!(
        get(&db_dir(&dir), "t", "k").unwrap()[1].as_deref(),
        Some("9")
    );
    assert_eq!(table_rows(&db_dir(&dir), "t").len(), 3);
}

#[test]
fn a_duplicate_of_an_earlier_load_shows_the_row_already_there() {
    let dir = TempDir::new("keys-dup-across");
    let o = keyed_opts("id INT PRIMARY KEY, name TEXT");
    load_files(&dir, "t", &[("a.csv", "1,one\n2,two\n".into())], &o).unwrap();
    let err = load_files(&dir, "t", &[("b.csv", "3,three\n2,deux\n".into())], &o).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("duplicate key 2 in table t"), "{msg}");
    assert!(
        msg.contains("b.csv:2 repeats the key of a row loaded earlier (2, two)"),
        "{msg}"
    );
    assert_eq!(table_rows(&db_dir(&dir), "t").len(), 2);
    assert_eq!(run_count(&db_dir(&dir), "t"), 1);
}

#[test]
fn skipping_duplicates_keeps_the_first_row() {
    let dir = TempDir::new("keys-skip");
    let mut o = keyed_opts("id BIGINT PRIMARY KEY, v TEXT");
    o.on_duplicate = OnDuplicate::Skip;
    load_files(&dir, "t", &[("a.csv", "1,a\n2,b\n".into())], &o).unwrap();
    let s = load_files(
        &dir,
        "t",
        &[
            ("b.csv", "2,B\n3,c\n3,C\n".into()),
            ("c.csv", "4,d\n1,A\n3,CC\n".into()),
        ],
        &o,
    )
    .unwrap();
    assert_eq!((s.rows, s.duplicates), (2, 4));
    let mut rows = table_rows(&db_dir(&dir), "t");
    rows.sort();
    let want: Vec<Vec<Option<String>>> = [("1", "a"), ("2", "b"), ("3", "c"), ("4", "d")]
        .iter()
        .map(|(k, v)| vec![Some(k.to_string()), Some(v.to_string())])
        .collect();
    assert_eq!(rows, want);
    for (k, v) in [("1", "a"), ("3", "c")] {
        assert_eq!(get(&db_dir(&dir), "t", k).unwrap()[1].as_deref(), Some(v));
    }
}

#[test]
fn lines_are_named_only_when_records_and_lines_agree() {
    let dir = TempDir::new("keys-lines");
    let o = keyed_opts("id BIGINT PRIMARY KEY, v TEXT");
    // A blank line and no final newline: line counting would be off by
    // one if the two were taken to cancel out.
    let err = load_files(&dir, "t", &[("a.csv", "1,a\n\n1,b".into())], &o).unwrap_err();
    let msg = err.to_string();
    assert!(!msg.contains("a.csv:3"), "{msg}");
    assert!(msg.contains("a.csv (record 2 after line 0)"), "{msg}");
    // A quoted newline moves every later line.
    let err = load_files(&dir, "t", &[("b.csv", "1,\"x\ny\"\n2,b\n1,c\n".into())], &o).unwrap_err();
    assert!(
        err.to_string().contains("b.csv (record 3 after line 0)"),
        "{err}"
    );
    // Without either, lines are exact, also without a final newline.
    let err = load_files(&dir, "t", &[("c.csv", "1,a\n2,b\n1,c".into())], &o).unwrap_err();
    assert!(
        err.to_string().contains("c.csv:3 repeats the key of"),
        "{err}"
    );
}

#[test]
fn a_null_key_is_named_by_line_also_when_skipping_duplicates() {
    let dir = TempDir::new("keys-null-skip");
    let mut o = keyed_opts("id BIGINT PRIMARY KEY, v TEXT");
    o.on_duplicate = OnDuplicate::Skip;
    load_files(&dir, "t", &[("a.csv", "1,a\n2,b\n".into())], &o).unwrap();
    let err = load_files(&dir, "t", &[("b.csv", "1,a\n3,c\n,d\n".into())], &o).unwrap_err();
    assert!(err.to_string().contains("b.csv:3"), "{err}");
}

#[test]
fn a_null_key_fails_the_load() {
    let dir = TempDir::new("keys-null");
    let o = keyed_opts("id BIGINT PRIMARY KEY, v TEXT");
    let err = load_files(&dir, "t", &[("a.csv", "1,a\n,b\n".into())], &o).unwrap_err();
    assert!(err.to_string().contains("a.csv:2"), "{err}");
    assert!(err.to_string().contains("NULL"), "{err}");
}

#[test]
fn keys_of_every_key_type_are_found() {
    let dir = TempDir::new("keys-types");
    for (n, (schema, rows, probe, absent)) in [
        (
            "k DATE PRIMARY KEY, v INT",
            "2024-02-29,1\n1970-01-01,2\n",
            "2024-02-29",
            "2024-03-01",
        ),
        (
            "k DECIMAL(10,2) PRIMARY KEY, v INT",
            "-1.50,1\n3.25,2\n",
            "3.25",
            "3.26",
        ),
        (
            "k TIMESTAMP PRIMARY KEY, v INT",
            "2024-01-01 10:00:00,1\n2024-01-01 10:00:01,2\n",
            "2024-01-01 10:00:01",
            "2024-01-01 10:00:02",
        ),
        (
            "k INT PRIMARY KEY, v INT",
            "-7,1\n2147483647,2\n",
            "2147483647",
            "0",
        ),
        ("k TEXT PRIMARY KEY, v INT", "é,1\n\"\",2\nab,3\n", "é", "a"),
    ]
    .into_iter()
    .enumerate()
    {
        let name = format!("t{n}");
        let o = keyed_opts(schema);
        load_files(
            &dir,
            &name,
            &[(&format!("{name}.csv"), rows.to_string())],
            &o,
        )
        .unwrap();
        assert!(
            get(&db_dir(&dir), &name, probe).is_some(),
            "{schema}: {probe}"
        );
        assert!(
            get(&db_dir(&dir), &name, absent).is_none(),
            "{schema}: {absent}"
        );
    }
    // Keys that cannot be keys.
    for bad in [
        "k DOUBLE PRIMARY KEY",
        "k BOOLEAN PRIMARY KEY",
        "a INT PRIMARY KEY, b INT PRIMARY KEY",
    ] {
        assert!(bad.parse::<sluice::batch::Schema>().is_err(), "{bad}");
    }
}

#[test]
fn a_load_bigger_than_its_key_budget_writes_several_runs_and_checks_across_them() {
    let dir = TempDir::new("keys-budget");
    let mut o = keyed_opts("id BIGINT PRIMARY KEY, v INT");
    o.key_budget = Some(1);
    o.block_size = Some(64);
    o.threads = Some(2);
    let text: String = (0..200)
        .map(|i| format!("{},{i}\n", (i * 37) % 1000))
        .collect();
    let s = load_files(&dir, "t", &[("a.csv", text)], &o).unwrap();
    assert_eq!(s.rows, 200);
    // One run per flushed batch, then merged by tier as the load ends.
    assert!(run_count(&db_dir(&dir), "t") <= 3);
    for i in 0..200 {
        let k = (i * 37) % 1000;
        assert_eq!(
            get(&db_dir(&dir), "t", &k.to_string()).unwrap()[1],
            Some(i.to_string())
        );
    }
    // A duplicate far apart in one load, across the runs it writes.
    let mut text: String = (0..100).map(|i| format!("{},1\n", 5000 + i)).collect();
    text.push_str("5003,2\n");
    let err = load_files(&dir, "t", &[("b.csv", text)], &o).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("b.csv:101 repeats the key of") && msg.contains("b.csv:4 ("),
        "{msg}"
    );
    assert_eq!(table_rows(&db_dir(&dir), "t").len(), 200);
}

#[test]
fn damaged_runs_are_errors_naming_the_file_never_wrong_rows() {
    let dir = TempDir::new("keys-damage");
    let o = keyed_opts("id BIGINT PRIMARY KEY, v TEXT");
    let text: String = (0..3000).map(|i| format!("{},v{i}\n", i * 3)).collect();
    load_files(&dir, "t", &[("a.csv", text)], &o).unwrap();
    let db = db_dir(&dir);
    let run_rel = Database::open(&db).unwrap().table("t").unwrap().runs[0]
        .file
        .clone();
    let run_path = db.join(&run_rel);
    let good = std::fs::read(&run_path).unwrap();
    let name = run_path.file_name().unwrap().to_string_lossy().to_string();
    let check = |db: &Path| {
        let d = Database::open(db).unwrap();
        let t = match d.keyed("t") {
            Ok(t) => t,
            Err(e) => {
                assert!(matches!(e, Error::Corrupt { .. }), "{e}");
                assert!(e.to_string().contains(&name), "{e}");
                return;
            }
        };
        for i in (0..3000).step_by(41) {
            match t.get(&(i * 3).to_string()) {
                Ok(Some(row)) => assert_eq!(
                    rows_of(&[row])[0][1].as_deref(),
                    Some(format!("v{i}").as_str()),
                    "a wrong row for key {}",
                    i * 3
                ),
                Ok(None) => panic!("key {} lost without an error", i * 3),
                Err(e) => {
                    assert!(matches!(e, Error::Corrupt { .. }), "{e}");
                    assert!(e.to_string().contains(&name), "{e}");
                }
            }
        }
    };
    for at in (0..good.len()).step_by(131) {
        let mut bad = good.clone();
        bad[at] ^= 0x41;
        std::fs::write(&run_path, &bad).unwrap();
        check(&db);
    }
    // Truncated: the size no longer matches the manifest.
    std::fs::write(&run_path, &good[..good.len() - 10]).unwrap();
    let e = Database::open(&db)
        .unwrap()
        .keyed("t")
        .err()
        .expect("truncation detected");
    assert!(e.to_string().contains("truncated"), "{e}");
    // A missing run is an I/O error naming it.
    std::fs::remove_file(&run_path).unwrap();
    let e = Database::open(&db)
        .unwrap()
        .keyed("t")
        .err()
        .expect("missing run detected");
    assert!(e.to_string().contains(&name), "{e}");
}

#[test]
fn a_merge_that_never_committed_leaves_the_old_runs_and_its_file_is_removed() {
    let dir = TempDir::new("keys-crash");
    let o = keyed_opts("id BIGINT PRIMARY KEY, v TEXT");
    for f in 0..3 {
        let text: String = (0..40)
            .map(|i| format!("{},f{f}\n", f * 1000 + i))
            .collect();
        load_files(&dir, "t", &[(&format!("f{f}.csv"), text)], &o).unwrap();
    }
    let db = db_dir(&dir);
    let manifest = std::fs::read(db.join("MANIFEST")).unwrap();
    // What a merge writes before it commits: a new run the manifest does
    // not name (here the merged content, copied by hand).
    let tdir = db.join("tables/t");
    let some_run = std::fs::read_dir(&tdir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "keys"))
        .unwrap();
    std::fs::copy(&some_run, tdir.join("000099-merged.keys")).unwrap();
    // Readers see the committed runs; the next writer removes the orphan.
    assert_eq!(get(&db, "t", "2039").unwrap()[1].as_deref(), Some("f2"));
    drop(Database::open_writer(&db).unwrap());
    assert!(!tdir.join("000099-merged.keys").exists());
    assert_eq!(std::fs::read(db.join("MANIFEST")).unwrap(), manifest);
    // A real merge afterwards keeps every key.
    let mut w = Database::open_writer(&db).unwrap();
    assert_eq!(w.compact("t").unwrap(), 3);
    drop(w);
    assert_eq!(run_count(&db, "t"), 1);
    for f in 0..3 {
        for i in 0..40 {
            let row = get(&db, "t", &(f * 1000 + i).to_string()).unwrap();
            assert_eq!(row[1].as_deref(), Some(format!("f{f}").as_str()));
        }
    }
    assert_eq!(
        table_files(&db, "t")
            .iter()
            .filter(|f| f.ends_with(".keys"))
            .count(),
        1
    );
}

#[test]
fn a_reader_opened_before_a_merge_still_finds_every_key() {
    let dir = TempDir::new("keys-reader");
    let o = keyed_opts("id BIGINT PRIMARY KEY, v TEXT");
    for f in 0..3 {
        let text: String = (0..20).map(|i| format!("{},f{f}\n", f * 100 + i)).collect();
        load_files(&dir, "t", &[(&format!("f{f}.csv"), text)], &o).unwrap();
    }
    let reader = Database::open(db_dir(&dir)).unwrap();
    assert_eq!(reader.table("t").unwrap().runs.len(), 3);
    // A merge commits and deletes the runs the reader's snapshot names.
    Database::open_writer(db_dir(&dir))
        .unwrap()
        .compact("t")
        .unwrap();
    let t = reader.keyed("t").unwrap();
    for f in 0..3 {
        let row = t.get(&(f * 100 + 7).to_string()).unwrap().unwrap();
        assert_eq!(rows_of(&[row])[0][1], Some(format!("f{f}")));
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// Load these keys (one load; it must fail if any repeats).
    Load(Vec<u16>),
    Compact,
    Probe(Vec<u16>),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => prop::collection::vec(0u16..400, 1..40).prop_map(Op::Load),
        1 => Just(Op::Compact),
        2 => prop::collection::vec(0u16..400, 1..20).prop_map(Op::Probe),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Random loads (some with duplicates, which must fail whole), merges
    /// and lookups agree with a BTreeMap.
    #[test]
    fn lookups_agree_with_a_model(
        ops in prop::collection::vec(op(), 1..14),
        tiny_blocks in any::<bool>(),
        threads in 1usize..3,
    ) {
        let dir = TempDir::new("keys-model");
        let mut o = keyed_opts("k TEXT PRIMARY KEY, n BIGINT");
        o.threads = Some(threads);
        if tiny_blocks {
            o.block_size = Some(48);
        }
        let mut model: BTreeMap<String, u64> = BTreeMap::new();
        let mut n = 0u64;
        for (step, op) in ops.iter().enumerate() {
            match op {
                Op::Load(keys) => {
                    let text: String = keys
                        .iter()
                        .enumerate()
                        .map(|(i, k)| format!("key{k},{}\n", n + i as u64))
                        .collect();
                    let mut seen = std::collections::HashSet::new();
                    let dup = keys
                        .iter()
                        .any(|k| !seen.insert(*k) || model.contains_key(&format!("key{k}")));
                    let r = load_files(&dir, "t", &[(&format!("s{step}.csv"), text)], &o);
                    if dup {
                        let e = r.expect_err("a load with a duplicate key succeeded");
                        prop_assert!(matches!(e, Error::DuplicateKey { .. }), "{}", e);
                    } else {
                        r.unwrap();
                        for (i, k) in keys.iter().enumerate() {
                            model.insert(format!("key{k}"), n + i as u64);
                        }
                    }
                    n += keys.len() as u64;
                }
                Op::Compact => {
                    if Database::open(db_dir(&dir)).map(|d| d.table("t").is_some()).unwrap_or(false) {
                        Database::open_writer(db_dir(&dir)).unwrap().compact("t").unwrap();
                        prop_assert_eq!(run_count(&db_dir(&dir), "t"), 1);
                    }
                }
                Op::Probe(keys) => {
                    let Ok(db) = Database::open(db_dir(&dir)) else { continue };
                    let Ok(t) = db.keyed("t") else { continue };
                    for k in keys {
                        let key = format!("key{k}");
                        let got = t.get(&key).unwrap().map(|b| rows_of(&[b])[0][1].clone().unwrap());
                        prop_assert_eq!(got, model.get(&key).map(|v| v.to_string()), "{}", key);
                    }
                }
            }
        }
        // Finally every key of the model, and the row count.
        if let Ok(db) = Database::open(db_dir(&dir))
            && db.table("t").is_some()
        {
            let t = db.keyed("t").unwrap();
            for (k, v) in &model {
                let row = t.get(k).unwrap();
                prop_assert_eq!(row.map(|b| rows_of(&[b])[0][1].clone().unwrap()), Some(v.to_string()));
            }
            prop_assert_eq!(db.table("t").unwrap().rows(), model.len() as u64);
        }
    }
}
