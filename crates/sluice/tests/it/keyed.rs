//! Keyed tables, seen from outside: lookups after many loads and tiered
//! merges (TEXT and BIGINT keys, keys longer than an index block, keys
//! that are prefixes of each other), duplicate keys inside and across
//! loads with the exact places named, `OnDuplicate::Skip`, a model-based
//! property test, damaged run files, and a merge whose process really
//! dies before its commit (this test binary re-runs itself as the child).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use sluice::Error;
use sluice::load::{Header, LoadOptions, LoadSummary, OnDuplicate, OnError, load};
use sluice::source::Input;
use sluice::store::Database;

use crate::common::{TempDir, rows_of, table_rows};

type Row = Vec<Option<String>>;

fn keyed_opts(schema: &str) -> LoadOptions {
    LoadOptions {
        schema: Some(schema.parse().unwrap()),
        header: Header::No,
        ..LoadOptions::default()
    }
}

fn db_dir(dir: &TempDir) -> PathBuf {
    dir.path().join("db")
}

/// Writes the files into `dir` and loads them, in order, in one load.
fn load_files(
    dir: &TempDir,
    table: &str,
    files: &[(&str, &str)],
    o: &LoadOptions,
) -> sluice::Result<LoadSummary> {
    let inputs: Vec<Input> = files
        .iter()
        .map(|(n, t)| Input::File(dir.write(n, t.as_bytes())))
        .collect();
    let mut db = Database::open_writer(db_dir(dir))?;
    load(&mut db, table, &inputs, o)
}

/// The full path of an input file as messages show it.
fn shown(dir: &TempDir, name: &str) -> String {
    dir.path().join(name).display().to_string()
}

/// The formatted row of `key`, or `None`.
fn get(db: &Path, table: &str, key: &str) -> Option<Row> {
    let db = Database::open(db).unwrap();
    let t = db.keyed(table).unwrap();
    t.get(key).unwrap().map(|b| {
        assert_eq!(b.num_rows(), 1, "get returns one row");
        rows_of(&[b]).remove(0)
    })
}

/// Names of the files in a table's directory, sorted.
fn table_files(db: &Path, table: &str) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(db.join("tables").join(table)) else {
        return Vec::new();
    };
    let mut v: Vec<String> = rd
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

fn keys_files(db: &Path, table: &str) -> Vec<String> {
    table_files(db, table)
        .into_iter()
        .filter(|f| f.ends_with(".keys"))
        .collect()
}

fn run_count(db: &Path, table: &str) -> usize {
    Database::open(db).unwrap().table(table).unwrap().runs.len()
}

/// Rows of a table; 0 when there is no database or table yet.
fn row_count(db: &Path, table: &str) -> u64 {
    Database::open(db)
        .ok()
        .and_then(|d| d.table(table).map(|t| t.rows()))
        .unwrap_or(0)
}

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

/// Expected (runs after the load, runs merged by it) for the `n`-th
/// (1-based) load of a small table: tier 0 holds at most three runs,
/// and four runs of tier 0 become one.
fn expected_runs_after_load(n: usize) -> (usize, usize) {
    if n >= 4 && (n - 4).is_multiple_of(3) {
        (1, 4)
    } else {
        ((n - 1) % 3 + 1, 0)
    }
}

// ---------------------------------------------------------------------
// (a) lookups after many loads and merges
// ---------------------------------------------------------------------

/// The `g`-th TEXT key: a mix of shapes the run format treats
/// differently (packed lower-case hex and digit suffixes, upper-case hex,
/// multi-byte UTF-8, keys that are prefixes of others, keys longer than a
/// 2 KiB index block). All distinct.
fn text_key(g: usize) -> String {
    match g % 6 {
        0 => format!("{:x}", (g as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        1 => format!("obj-{g}"),
        // "pfx", "pfx0", "pfx00"...: every one a prefix of the next.
        2 => format!("pfx{}", "0".repeat(g / 6)),
        3 => format!("ключ{g}é"),
        4 => format!("DEADBEEF{g:X}"),
        _ => format!("L{}{g}", "ab".repeat(1500 + g % 7)),
    }
}

#[test]
fn text_keys_twelve_loads_merge_by_tier_and_every_key_is_found() {
    let dir = TempDir::new("keyed-text12");
    let db = db_dir(&dir);
    // The key is not the first column; files have a header.
    let mut o = keyed_opts("name TEXT, id TEXT PRIMARY KEY, n BIGINT");
    o.header = Header::Yes;
    let mut model: BTreeMap<String, Row> = BTreeMap::new();
    let mut g = 0usize;
    for load_no in 1..=12usize {
        let mut text = String::from("name,id,n\n");
        let mut added = Vec::new();
        for _ in 0..25 {
            let k = text_key(g);
            let name = format!("name {load_no}/{g}");
            text.push_str(&format!("\"{name}\",{k},{}\n", g as i64 * 3 - 100));
            added.push((
                k.clone(),
                vec![s(&name), s(&k), Some((g as i64 * 3 - 100).to_string())],
            ));
            g += 1;
        }
        // Every third load in a small batch size, two threads.
        if load_no % 3 == 0 {
            o.block_size = Some(64);
            o.threads = Some(2);
        } else {
            o.block_size = None;
            o.threads = Some(1);
        }
        let sum = load_files(&dir, "t", &[(&format!("f{load_no}.csv"), &text)], &o).unwrap();
        model.extend(added);
        assert_eq!(sum.rows, 25, "load {load_no}");
        assert_eq!(sum.duplicates, 0);
        assert_eq!(sum.merge_error, None);
        let (runs, merged) = expected_runs_after_load(load_no);
        assert_eq!(sum.runs_merged, merged, "runs merged by load {load_no}");
        assert_eq!(run_count(&db, "t"), runs, "runs after load {load_no}");
        // Merged runs leave no file behind.
        assert_eq!(keys_files(&db, "t").len(), runs, "after load {load_no}");
        // The keys of this load and of the first one are found now.
        let probe = text_key(g - 1);
        assert_eq!(get(&db, "t", &probe).as_ref(), model.get(&probe));
        assert_eq!(
            get(&db, "t", &text_key(0)).as_ref(),
            model.get(&text_key(0))
        );
    }
    assert_eq!(row_count(&db, "t"), 300);

    let check_all = |when: &str| {
        let d = Database::open(&db).unwrap();
        let t = d.keyed("t").unwrap();
        for (k, row) in &model {
            let got = t.get(k).unwrap().map(|b| rows_of(&[b]).remove(0));
            assert_eq!(got.as_ref(), Some(row), "{when}: key {k:.40}");
        }
        // Absent keys: near misses of every shape.
        let mut absent = vec![
            String::new(),
            "pf".to_string(),
            "pfy".to_string(),
            "obj-".to_string(),
            "obj-300".to_string(),
            "DEADBEEF".to_string(),
            "ключ".to_string(),
            "\u{10FFFF}".to_string(),
            format!("pfx{}", "0".repeat(60)),
        ];
        for k in model.keys().take(80) {
            absent.push(format!("{k}!"));
            absent.push(format!("{k}0"));
            absent.push(k.to_uppercase());
            let mut shorter = k.clone();
            shorter.pop();
            absent.push(shorter);
        }
        for a in &absent {
            let got = t.get(a).unwrap().map(|b| rows_of(&[b]).remove(0));
            assert_eq!(got.as_ref(), model.get(a), "{when}: probe {a:.40}");
        }
        // A batch lookup: the order asked, a key asked twice gives its
        // row twice, missing keys give nothing.
        let keys: Vec<&String> = model.keys().collect();
        let mut asked: Vec<String> = Vec::new();
        let mut want: Vec<Row> = Vec::new();
        for i in 0..60 {
            let k = keys[(i * 37) % keys.len()];
            asked.push(k.clone());
            want.push(model[k].clone());
            if i % 7 == 0 {
                asked.push(format!("{k}-missing"));
            }
            if i % 11 == 0 {
                asked.push(k.clone());
                want.push(model[k].clone());
            }
        }
        let got = rows_of(&[t.get_many(&asked).unwrap()]);
        assert_eq!(got, want, "{when}: get_many");
        let none: Vec<&str> = vec!["nope", "nada"];
        let empty = t.get_many(&none).unwrap();
        assert_eq!(empty.num_rows(), 0);
        assert_eq!(empty.num_columns(), 3);
        // locate and row agree with get.
        for k in keys.iter().step_by(13) {
            let id = t
                .locate(&t.encode_key(k).unwrap())
                .unwrap()
                .expect("located");
            assert_eq!(&rows_of(&[t.row(id).unwrap()])[0], &model[*k]);
        }
        assert_eq!(t.locate(&t.encode_key("nope").unwrap()).unwrap(), None);
        // A row id past the table is an error, not a row.
        assert!(matches!(t.row(300), Err(Error::Corrupt { .. })));
    };
    check_all("after 12 loads");

    // An explicit compaction merges the three runs left.
    let mut w = Database::open_writer(&db).unwrap();
    assert_eq!(w.compact("t").unwrap(), 3);
    assert_eq!(w.compact("t").unwrap(), 0, "one run: nothing to merge");
    drop(w);
    assert_eq!(run_count(&db, "t"), 1);
    assert_eq!(keys_files(&db, "t").len(), 1);
    check_all("after compact");
}

#[test]
fn bigint_keys_twelve_loads_extremes_and_neighbours() {
    let dir = TempDir::new("keyed-big12");
    let db = db_dir(&dir);
    let mut o = keyed_opts("v TEXT, id BIGINT");
    o.key = Some("id".into());
    let mut model: BTreeMap<i64, String> = BTreeMap::new();
    let specials = [
        i64::MIN,
        i64::MAX,
        0,
        -1,
        1,
        i32::MAX as i64,
        i32::MIN as i64,
        1 << 53,
        -(1 << 53) - 1,
        255,
        256,
        -256,
    ];
    let mut x: u64 = 0x1234_5678_9abc_def1;
    for load_no in 1..=12usize {
        let mut text = String::new();
        let mut keys = vec![specials[load_no - 1]];
        while keys.len() < 40 {
            // xorshift: spread over the whole range, both signs.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = match keys.len() % 3 {
                0 => x as i64,
                1 => (x % 2000) as i64 - 1000,
                _ => (x >> 20) as i64,
            };
            if !model.contains_key(&k) && !keys.contains(&k) && !specials.contains(&k) {
                keys.push(k);
            }
        }
        for (i, k) in keys.iter().enumerate() {
            let v = format!("l{load_no}r{i}");
            text.push_str(&format!("{v},{k}\n"));
            model.insert(*k, v);
        }
        o.threads = Some(1 + load_no % 2);
        o.block_size = (load_no % 2 == 0).then_some(64);
        let sum = load_files(&dir, "t", &[(&format!("b{load_no}.csv"), &text)], &o).unwrap();
        assert_eq!(sum.rows, 40);
        let (runs, merged) = expected_runs_after_load(load_no);
        assert_eq!(sum.runs_merged, merged, "load {load_no}");
        assert_eq!(run_count(&db, "t"), runs, "load {load_no}");
    }
    let d = Database::open(&db).unwrap();
    assert_eq!(d.table("t").unwrap().rows(), 480);
    let t = d.keyed("t").unwrap();
    for (k, v) in &model {
        let row = t.get(&k.to_string()).unwrap().expect("a loaded key");
        assert_eq!(rows_of(&[row])[0], vec![s(v), Some(k.to_string())], "{k}");
        // The neighbours are found only when loaded.
        for n in [k.checked_sub(1), k.checked_add(1)].into_iter().flatten() {
            let got = t
                .get(&n.to_string())
                .unwrap()
                .map(|b| rows_of(&[b])[0][0].clone());
            assert_eq!(got, model.get(&n).map(|v| s(v)), "neighbour {n}");
        }
    }
    // Surrounding blanks are trimmed from an integer key given as text.
    assert_eq!(
        rows_of(&[t.get(" -1 ").unwrap().unwrap()])[0][0],
        s(&model[&-1])
    );
    // Not a BIGINT: an error, not an empty answer.
    for bad in ["", "x", "1.5", "9223372036854775808"] {
        assert!(matches!(t.get(bad), Err(Error::Config(_))), "{bad:?}");
    }
}

#[test]
fn a_key_found_by_the_same_text_it_was_loaded_from_for_every_key_type() {
    // Rows the loader takes (others are rejected) must be found again by
    // the exact text of their key field, and by other spellings of the
    // same value.
    let dir = TempDir::new("keyed-forms");
    let cases: [(&str, &[&str]); 5] = [
        (
            "k INT PRIMARY KEY, n INT",
            &[
                "0",
                "-7",
                "2147483647",
                "-2147483648",
                "2147483648",
                "+5",
                "007",
            ],
        ),
        (
            "k DECIMAL(10,2) PRIMARY KEY, n INT",
            &[
                "0",
                "3.25",
                "-1.50",
                "12",
                ".5",
                "-0.01",
                "99999999.99",
                "3.251",
                "1e3",
            ],
        ),
        (
            "k DATE PRIMARY KEY, n INT",
            &[
                "2024-02-29",
                "1970-01-01",
                "1969-12-31",
                "0001-01-01",
                "9999-12-31",
                "2023-02-29",
            ],
        ),
        (
            "k TIMESTAMP PRIMARY KEY, n INT",
            &[
                "2024-01-01 10:00:00",
                "2024-01-01 10:00:00.5",
                "2024-01-01T10:00:01",
                "1969-12-31 23:59:59.999999",
                "2024-01-01",
            ],
        ),
        (
            "k TEXT PRIMARY KEY, n INT",
            &[
                "a",
                "A",
                "a b",
                "ab",
                "é",
                "0",
                "00",
                "abcdef0123456789",
                "x\ty",
            ],
        ),
    ];
    // (another spelling, the key loaded) per case.
    let aliases: [&[(&str, &str)]; 5] = [
        &[("5", "+5"), ("7", "007"), (" -7", "-7")],
        &[
            ("12.00", "12"),
            ("0.5", ".5"),
            ("-1.5", "-1.50"),
            ("0.00", "0"),
        ],
        &[],
        &[
            ("2024-01-01 00:00:00", "2024-01-01"),
            ("2024-01-01 10:00:01", "2024-01-01T10:00:01"),
            ("2024-01-01 10:00:00.500000", "2024-01-01 10:00:00.5"),
        ],
        &[],
    ];
    for (ci, (schema, keys)) in cases.iter().enumerate() {
        let table = format!("t{ci}");
        let mut o = keyed_opts(schema);
        o.on_error = OnError::Skip;
        let text: String = keys
            .iter()
            .enumerate()
            .map(|(i, k)| format!("\"{k}\",{i}\n"))
            .collect();
        let sum = load_files(&dir, &table, &[(&format!("{table}.csv"), &text)], &o);
        let sum = sum.unwrap_or_else(|e| panic!("{schema}: {e}"));
        assert!(sum.rows >= 5, "{schema}: only {} rows taken", sum.rows);
        let loaded: Vec<usize> = table_rows(&db_dir(&dir), &table)
            .iter()
            .map(|r| r[1].as_deref().unwrap().parse().unwrap())
            .collect();
        let d = Database::open(db_dir(&dir)).unwrap();
        let t = d.keyed(&table).unwrap();
        let spelled = |text: &str| {
            t.get(text)
                .unwrap_or_else(|e| panic!("{schema}: lookup of {text:?}: {e}"))
                .map(|b| rows_of(&[b])[0][1].clone().unwrap())
        };
        for (other, original) in aliases[ci] {
            let i = keys.iter().position(|k| k == original).unwrap();
            if loaded.contains(&i) {
                assert_eq!(spelled(other), Some(i.to_string()), "{schema}: {other:?}");
            }
        }
        for i in loaded {
            let got = t
                .get(keys[i])
                .unwrap_or_else(|e| panic!("{schema}: lookup of {:?}: {e}", keys[i]))
                .map(|b| rows_of(&[b])[0][1].clone());
            assert_eq!(
                got,
                Some(Some(i.to_string())),
                "{schema}: key {:?}",
                keys[i]
            );
        }
    }
}

// ---------------------------------------------------------------------
// (b) duplicate keys
// ---------------------------------------------------------------------

/// The parts of a duplicate key error.
fn dup_parts(e: &Error) -> (String, String, String, String) {
    match e {
        Error::DuplicateKey {
            table,
            key,
            first,
            second,
        } => (table.clone(), key.clone(), first.clone(), second.clone()),
        other => panic!("expected a duplicate key error, got {other:?}"),
    }
}

#[test]
fn a_duplicate_in_the_first_load_creates_no_table_and_names_both_lines() {
    let dir = TempDir::new("keyed-dup-first");
    let db = db_dir(&dir);
    let mut o = keyed_opts("id TEXT PRIMARY KEY, v INT");
    o.header = Header::Yes;
    let err = load_files(
        &dir,
        "t",
        &[("f.csv", "id,v\na,1\nb,2\nc,3\nb,4\nd,5\n")],
        &o,
    )
    .unwrap_err();
    let (table, key, first, second) = dup_parts(&err);
    assert_eq!(table, "t");
    assert_eq!(key, "'b'");
    assert_eq!(first, format!("{}:3", shown(&dir, "f.csv")));
    assert_eq!(second, format!("{}:5", shown(&dir, "f.csv")));
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!(
            "duplicate key 'b' in table t: {second} repeats the key of {first}"
        )),
        "{msg}"
    );
    // Nothing committed: no table, no files left.
    assert!(Database::open(&db).unwrap().table("t").is_none());
    assert_eq!(table_files(&db, "t"), Vec::<String>::new());
    // The same rows without the duplicate load.
    let sum = load_files(&dir, "t", &[("g.csv", "id,v\na,1\nb,2\nc,3\nd,5\n")], &o).unwrap();
    assert!(sum.created);
    assert_eq!(get(&db, "t", "b"), Some(vec![s("b"), s("2")]));
}

#[test]
fn a_duplicate_across_two_files_of_one_load_commits_nothing() {
    let dir = TempDir::new("keyed-dup-files");
    let db = db_dir(&dir);
    let mut o = keyed_opts("id BIGINT PRIMARY KEY, v TEXT");
    o.header = Header::Yes;
    load_files(&dir, "t", &[("base.csv", "id,v\n1,one\n2,two\n")], &o).unwrap();
    let manifest = std::fs::read(db.join("MANIFEST")).unwrap();
    let files = table_files(&db, "t");
    // 40 at x.csv:4 and y.csv:2; CRLF line ends in y.csv.
    let err = load_files(
        &dir,
        "t",
        &[
            ("x.csv", "id,v\n10,a\n20,b\n40,c\n50,d\n"),
            ("y.csv", "id,v\r\n40,e\r\n60,f\r\n"),
        ],
        &o,
    )
    .unwrap_err();
    let (_, key, first, second) = dup_parts(&err);
    assert_eq!(key, "40");
    assert_eq!(first, format!("{}:4", shown(&dir, "x.csv")));
    assert_eq!(second, format!("{}:2", shown(&dir, "y.csv")));
    assert_eq!(std::fs::read(db.join("MANIFEST")).unwrap(), manifest);
    assert_eq!(table_files(&db, "t"), files);
    assert_eq!(row_count(&db, "t"), 2);
    assert_eq!(get(&db, "t", "10"), None, "a row of the failed load");
    // A good load afterwards.
    let sum = load_files(&dir, "t", &[("z.csv", "id,v\n40,forty\n")], &o).unwrap();
    assert_eq!(sum.rows, 1);
    assert_eq!(get(&db, "t", "40"), Some(vec![s("40"), s("forty")]));
    assert_eq!(row_count(&db, "t"), 3);
}

#[test]
fn duplicates_far_apart_in_many_blocks_and_small_files_name_exact_lines() {
    let dir = TempDir::new("keyed-dup-blocks");
    let db = db_dir(&dir);
    let mut o = keyed_opts("id BIGINT PRIMARY KEY, v TEXT");
    o.header = Header::Yes;
    o.block_size = Some(64);
    o.threads = Some(2);
    // Three files of 200 rows each in ~64-byte blocks; key 1006 is at
    // a.csv line 8 and again at c.csv line 151.
    let mk = |base: i64, dup_at: Option<usize>| {
        let mut t = String::from("id,v\n");
        for i in 0..200usize {
            let k = if Some(i) == dup_at {
                1006
            } else {
                base + i as i64
            };
            t.push_str(&format!("{k},v{k}\n"));
        }
        t
    };
    let (a, b, c) = (mk(1000, None), mk(2000, None), mk(3000, Some(149)));
    let err = load_files(
        &dir,
        "t",
        &[("a.csv", &a), ("b.csv", &b), ("c.csv", &c)],
        &o,
    )
    .unwrap_err();
    let (_, key, first, second) = dup_parts(&err);
    assert_eq!(key, "1006");
    assert_eq!(first, format!("{}:8", shown(&dir, "a.csv")));
    assert_eq!(second, format!("{}:151", shown(&dir, "c.csv")));
    assert!(Database::open(&db).unwrap().table("t").is_none());
    assert_eq!(table_files(&db, "t"), Vec::<String>::new());

    // Forty small files packed into one block: the key of s05.csv line 3
    // again at s33.csv line 2.
    let mut o = keyed_opts("id TEXT PRIMARY KEY, v TEXT");
    o.header = Header::Yes;
    let names: Vec<String> = (0..40).map(|f| format!("s{f:02}.csv")).collect();
    let texts: Vec<String> = (0..40)
        .map(|f| {
            if f == 33 {
                "id,v\nk5-1,x\nk33-1,y\n".to_string()
            } else {
                format!("id,v\nk{f}-0,x\nk{f}-1,y\n")
            }
        })
        .collect();
    let files: Vec<(&str, &str)> = names
        .iter()
        .zip(&texts)
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let err = load_files(&dir, "small", &files, &o).unwrap_err();
    let (_, key, first, second) = dup_parts(&err);
    assert_eq!(key, "'k5-1'");
    assert_eq!(first, format!("{}:3", shown(&dir, "s05.csv")));
    assert_eq!(second, format!("{}:2", shown(&dir, "s33.csv")));

    // Lines skipped before the header count too.
    let mut o = keyed_opts("id BIGINT PRIMARY KEY, v TEXT");
    o.header = Header::Yes;
    o.skip = 2;
    let err = load_files(
        &dir,
        "skipped",
        &[("k.csv", "junk\nmore junk\nid,v\n7,a\n8,b\n7,c\n")],
        &o,
    )
    .unwrap_err();
    let (_, _, first, second) = dup_parts(&err);
    assert_eq!(first, format!("{}:4", shown(&dir, "k.csv")));
    assert_eq!(second, format!("{}:6", shown(&dir, "k.csv")));
}

#[test]
fn a_duplicate_of_an_earlier_load_shows_the_earlier_row_even_after_merges() {
    let dir = TempDir::new("keyed-dup-earlier");
    let db = db_dir(&dir);
    let o = keyed_opts("id INT PRIMARY KEY, name TEXT, d DATE");
    // Five loads: four merged into one, then one more run.
    for l in 0..5 {
        let text: String = (0..10)
            .map(|i| {
                let k = l * 10 + i;
                format!("{k},name {k},2024-01-{:02}\n", i + 1)
            })
            .collect();
        load_files(&dir, "t", &[(&format!("l{l}.csv"), &text)], &o).unwrap();
    }
    assert_eq!(run_count(&db, "t"), 2);
    let manifest = std::fs::read(db.join("MANIFEST")).unwrap();
    let files = table_files(&db, "t");
    for (k, want_first) in [
        (7, "a row loaded earlier (7, name 7, 2024-01-08)"),
        (45, "a row loaded earlier (45, name 45, 2024-01-06)"),
    ] {
        let text = format!("100,new,\n101,new,\n{k},again,2025-01-01\n");
        let err = load_files(&dir, "t", &[("again.csv", &text)], &o).unwrap_err();
        let (table, key, first, second) = dup_parts(&err);
        assert_eq!(
            (table.as_str(), key.as_str()),
            ("t", k.to_string().as_str())
        );
        assert_eq!(first, want_first);
        assert_eq!(second, format!("{}:3", shown(&dir, "again.csv")));
        assert_eq!(std::fs::read(db.join("MANIFEST")).unwrap(), manifest);
        assert_eq!(table_files(&db, "t"), files);
    }
    assert_eq!(row_count(&db, "t"), 50);
    assert_eq!(get(&db, "t", "100"), None);
    // The same load without the repeated key goes in.
    load_files(&dir, "t", &[("ok.csv", "100,new,\n101,new,\n")], &o).unwrap();
    assert_eq!(get(&db, "t", "101"), Some(vec![s("101"), s("new"), None]));
    assert_eq!(
        get(&db, "t", "7"),
        Some(vec![s("7"), s("name 7"), s("2024-01-08")])
    );
}

#[test]
fn null_and_missing_keys_fail_the_load() {
    let dir = TempDir::new("keyed-null");
    let db = db_dir(&dir);
    let o = keyed_opts("id BIGINT PRIMARY KEY, v TEXT");
    load_files(&dir, "t", &[("a.csv", "1,a\n")], &o).unwrap();
    let files = table_files(&db, "t");
    for (name, text, line, null) in [
        ("n1.csv", "2,b\n,c\n3,d\n", 2, ""),
        ("n2.csv", "2,b\n3,c\n4,d\n\\N,e\n", 4, "\\N"),
    ] {
        let mut o = o.clone();
        o.values.null = null.as_bytes().to_vec();
        let err = load_files(&dir, "t", &[(name, text)], &o).unwrap_err();
        assert!(matches!(err, Error::Input { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("{}:{line}", shown(&dir, name))),
            "{msg}"
        );
        assert!(msg.contains("NULL"), "{msg}");
        assert_eq!(table_files(&db, "t"), files);
        assert_eq!(row_count(&db, "t"), 1);
    }
}

#[test]
fn key_options_that_do_not_fit_the_table_are_refused() {
    let dir = TempDir::new("keyed-opts");
    let db = db_dir(&dir);
    load_files(
        &dir,
        "k",
        &[("k.csv", "1,a\n")],
        &keyed_opts("id BIGINT PRIMARY KEY, v TEXT"),
    )
    .unwrap();
    load_files(
        &dir,
        "p",
        &[("p.csv", "1,a\n")],
        &keyed_opts("id BIGINT, v TEXT"),
    )
    .unwrap();
    // Another key for a keyed table; a key for a table created without.
    let mut o = keyed_opts("id BIGINT, v TEXT");
    o.key = Some("v".into());
    assert!(load_files(&dir, "k", &[("k2.csv", "2,b\n")], &o).is_err());
    o.key = Some("id".into());
    assert!(load_files(&dir, "p", &[("p2.csv", "2,b\n")], &o).is_err());
    // A key that is not a column.
    o.key = Some("nope".into());
    assert!(load_files(&dir, "q", &[("q.csv", "2,b\n")], &o).is_err());
    assert!(Database::open(&db).unwrap().table("q").is_none());
    // A schema for the keyed table must say PRIMARY KEY too.
    let err = load_files(
        &dir,
        "k",
        &[("k5.csv", "3,c\n")],
        &keyed_opts("id BIGINT, v TEXT"),
    )
    .unwrap_err();
    assert!(matches!(err, Error::Schema(_)), "{err}");
    // The keyed table takes a load with no schema and no key option and
    // still checks keys.
    let plain = LoadOptions {
        header: Header::No,
        ..LoadOptions::default()
    };
    load_files(&dir, "k", &[("k3.csv", "2,b\n")], &plain).unwrap();
    let err = load_files(&dir, "k", &[("k4.csv", "1,again\n")], &plain).unwrap_err();
    assert!(matches!(err, Error::DuplicateKey { .. }), "{err}");
    // Lookups need a key, and so does compact.
    let d = Database::open(&db).unwrap();
    assert!(matches!(d.keyed("p"), Err(Error::Schema(_))));
    assert!(d.keyed("missing").is_err());
    drop(d);
    let mut w = Database::open_writer(&db).unwrap();
    let err = w.compact("p").unwrap_err();
    assert_eq!(
        err.to_string(),
        "table p has no primary key, so no key index to merge (compact merges the key-index runs of a table created with --key COLUMN)"
    );
    assert!(w.compact("missing").is_err());
    assert_eq!(w.compact("k").unwrap(), 2);
    drop(w);
    assert_eq!(get(&db, "k", "1"), Some(vec![s("1"), s("a")]));
    assert_eq!(get(&db, "k", "2"), Some(vec![s("2"), s("b")]));
}

#[test]
fn an_empty_first_load_creates_a_keyed_table_without_runs() {
    let dir = TempDir::new("keyed-empty");
    let db = db_dir(&dir);
    let mut o = keyed_opts("id TEXT PRIMARY KEY, v INT");
    o.header = Header::Yes;
    let sum = load_files(&dir, "t", &[("e.csv", "id,v\n")], &o).unwrap();
    assert_eq!(sum.rows, 0);
    assert_eq!(get(&db, "t", "x"), None);
    load_files(&dir, "t", &[("f.csv", "id,v\nx,1\n")], &o).unwrap();
    assert_eq!(get(&db, "t", "x"), Some(vec![s("x"), s("1")]));
    assert!(load_files(&dir, "t", &[("g.csv", "id,v\nx,2\n")], &o).is_err());
}

#[test]
fn rejected_records_do_not_shift_row_ids_or_key_checks() {
    let dir = TempDir::new("keyed-rejects");
    let db = db_dir(&dir);
    let mut o = keyed_opts("id BIGINT PRIMARY KEY, v TEXT, n INT");
    o.on_error = OnError::Skip;
    o.block_size = Some(64);
    o.threads = Some(2);
    // Every fifth record is malformed (a non-number id or n).
    let mut text = String::new();
    let mut model = BTreeMap::new();
    for i in 0..120 {
        match i % 5 {
            2 => text.push_str(&format!("x{i},bad,{i}\n")),
            4 => text.push_str(&format!("{},bad,n{i}\n", 10_000 + i)),
            _ => {
                text.push_str(&format!("{},v{i},{i}\n", 500 - i));
                model.insert(500 - i, i);
            }
        }
    }
    let sum = load_files(&dir, "t", &[("r.csv", &text)], &o).unwrap();
    assert_eq!((sum.rows, sum.rejected), (72, 48));
    let d = Database::open(&db).unwrap();
    let t = d.keyed("t").unwrap();
    for (k, i) in &model {
        let row = rows_of(&[t.get(&k.to_string()).unwrap().expect("loaded")]).remove(0);
        assert_eq!(
            row,
            vec![
                Some(k.to_string()),
                Some(format!("v{i}")),
                Some(i.to_string())
            ]
        );
    }
    for i in (4..120).step_by(5) {
        assert!(
            t.get(&(10_000 + i).to_string()).unwrap().is_none(),
            "a rejected row's key"
        );
    }
    drop(t);
    drop(d);
    // Rejected rows hold no key: a later load may use them; the kept
    // ones are still checked.
    let sum = load_files(&dir, "t", &[("s.csv", "10004,now,1\n")], &o).unwrap();
    assert_eq!(sum.rows, 1);
    let err = load_files(&dir, "t", &[("u.csv", "1,a,1\n499,b,2\n")], &o).unwrap_err();
    let (_, key, first, second) = dup_parts(&err);
    assert_eq!(key, "499");
    assert_eq!(first, "a row loaded earlier (499, v1, 1)");
    assert_eq!(second, format!("{}:2", shown(&dir, "u.csv")));
}

#[test]
fn a_duplicate_after_a_rejected_record_is_placed_by_record() {
    let dir = TempDir::new("keyed-rejects-dup");
    let mut o = keyed_opts("id BIGINT PRIMARY KEY, v TEXT");
    o.on_error = OnError::Skip;
    // Record 2 is rejected; key 1 repeats at record 4, line 4.
    let err = load_files(&dir, "t", &[("r.csv", "1,a\nx,b\n2,c\n1,d\n")], &o).unwrap_err();
    let (_, _, first, second) = dup_parts(&err);
    let f = shown(&dir, "r.csv");
    assert!(
        first == format!("{f}:1") || first.starts_with(&format!("{f} (record 1 ")),
        "{first}"
    );
    // Exactly line 4, or "record 4" (the fourth record of the file):
    // never a place that names record 3 ("2,c").
    assert!(
        second == format!("{f}:4") || second == format!("{f} (record 4 after line 0)"),
        "{second}"
    );
}

#[test]
fn repeated_text_keys_in_big_batches_are_skipped_or_named() {
    // 2,000 rows over 40 keys: the batches' key columns are dictionary
    // encoded.
    let dir = TempDir::new("keyed-dict");
    let db = db_dir(&dir);
    let mut o = keyed_opts("k TEXT PRIMARY KEY, n BIGINT, c TEXT");
    o.on_duplicate = OnDuplicate::Skip;
    let text: String = (0..2000)
        .map(|i| format!("key-{},{i},c{}\n", (i * 7) % 40, i % 3))
        .collect();
    let sum = load_files(&dir, "t", &[("d.csv", &text)], &o).unwrap();
    assert_eq!((sum.rows, sum.duplicates), (40, 1960));
    for i in 0..40 {
        let k = format!("key-{}", (i * 7) % 40);
        assert_eq!(
            get(&db, "t", &k),
            Some(vec![
                s(&k),
                Some(i.to_string()),
                Some(format!("c{}", i % 3))
            ])
        );
    }
    // Error mode: a repeat of an existing key inside a dictionary-encoded
    // batch names the key and the line.
    let mut text: String = (0..500)
        .map(|i| format!("new-{},{i},x\n", i % 10))
        .collect();
    text.insert_str(0, "fresh,0,y\n");
    let mut text2 = String::from("fresh2,0,y\nkey-17,1,z\n");
    text2.push_str(&text);
    o.on_duplicate = OnDuplicate::Error;
    let err = load_files(&dir, "t", &[("e.csv", &text2)], &o).unwrap_err();
    let (_, key, first, second) = dup_parts(&err);
    // Either the repeat of key-17 (line 2) or one of new-* is named,
    // each with its true places.
    if key == "'key-17'" {
        assert_eq!(first, "a row loaded earlier (key-17, 31, c1)");
        assert_eq!(second, format!("{}:2", shown(&dir, "e.csv")));
    } else {
        assert_eq!(key, "'new-0'", "{err}");
        assert_eq!(first, format!("{}:4", shown(&dir, "e.csv")));
        assert_eq!(second, format!("{}:14", shown(&dir, "e.csv")));
    }
    assert_eq!(row_count(&db, "t"), 40);
}

#[test]
fn zstd_keyed_tables_find_their_rows() {
    let dir = TempDir::new("keyed-zstd");
    let db = db_dir(&dir);
    let mut o = keyed_opts("id BIGINT PRIMARY KEY, v TEXT");
    o.compression = Some(sluice::store::Compression::Zstd);
    for l in 0..5 {
        let text: String = (0..300)
            .map(|i| format!("{},v{l}-{i}\n", l * 1000 + i))
            .collect();
        load_files(&dir, "t", &[(&format!("z{l}.csv"), &text)], &o).unwrap();
    }
    let d = Database::open(&db).unwrap();
    let t = d.keyed("t").unwrap();
    let asked: Vec<String> = (0..5)
        .flat_map(|l| [l * 1000 + 299, l * 1000])
        .map(|k| k.to_string())
        .collect();
    let got = rows_of(&[t.get_many(&asked).unwrap()]);
    let want: Vec<Row> = (0..5)
        .flat_map(|l| [(l, 299), (l, 0)])
        .map(|(l, i)| vec![Some((l * 1000 + i).to_string()), Some(format!("v{l}-{i}"))])
        .collect();
    assert_eq!(got, want);
}

/// The `i`-th key of the big load: distinct for i < 1,000,000,007.
fn big_key(i: u64) -> u64 {
    (i * 2_654_435_761) % 1_000_000_007
}

#[test]
fn a_big_run_is_its_own_tier_and_parallel_builds_and_merges_keep_every_key() {
    let dir = TempDir::new("keyed-big");
    let db = db_dir(&dir);
    let mut o = keyed_opts("id BIGINT PRIMARY KEY, v INT");
    o.threads = Some(2);
    // 300,000 keys (over the size where a run is built by key ranges on
    // several threads, and of tier 1): first with a repeat far apart.
    let n = 300_000u64;
    let mut text: String = (0..n)
        .map(|i| format!("{},{}\n", big_key(i), i % 1000))
        .collect();
    text.push_str(&format!("{},1\n", big_key(10)));
    let err = load_files(&dir, "t", &[("big.csv", &text)], &o).unwrap_err();
    let (_, key, first, second) = dup_parts(&err);
    assert_eq!(key, big_key(10).to_string());
    assert_eq!(first, format!("{}:11", shown(&dir, "big.csv")));
    assert_eq!(second, format!("{}:300001", shown(&dir, "big.csv")));
    assert!(Database::open(&db).unwrap().table("t").is_none());
    // Without it.
    text.truncate(text.len() - format!("{},1\n", big_key(10)).len());
    let sum = load_files(&dir, "t", &[("big.csv", &text)], &o).unwrap();
    assert_eq!((sum.rows, sum.runs_merged), (n, 0));
    assert_eq!(run_count(&db, "t"), 1);
    // Small loads: four small runs merge, the big one is left alone.
    for l in 0..4u64 {
        let small: String = (0..50)
            .map(|i| format!("{},{}\n", 2_000_000_000 + l * 100 + i, l))
            .collect();
        let sum = load_files(&dir, "t", &[(&format!("s{l}.csv"), &small)], &o).unwrap();
        let want = if l == 3 { (4, 2) } else { (0, l as usize + 2) };
        assert_eq!(
            (sum.runs_merged, run_count(&db, "t")),
            want,
            "small load {l}"
        );
    }
    // A small load repeating a key of the big run.
    let again = format!("5,1\n{},2\n", big_key(123_456));
    let err = load_files(&dir, "t", &[("again.csv", &again)], &o).unwrap_err();
    let (_, _, first, second) = dup_parts(&err);
    assert_eq!(
        first,
        format!("a row loaded earlier ({}, 456)", big_key(123_456))
    );
    assert_eq!(second, format!("{}:2", shown(&dir, "again.csv")));
    let check = |when: &str| {
        let d = Database::open(&db).unwrap();
        let t = d.keyed("t").unwrap();
        for i in (0..n).step_by(101).chain([0, n - 1]) {
            let row = t.get(&big_key(i).to_string()).unwrap();
            assert_eq!(
                row.map(|b| rows_of(&[b]).remove(0)),
                Some(vec![
                    Some(big_key(i).to_string()),
                    Some((i % 1000).to_string())
                ]),
                "{when}: big key {i}"
            );
        }
        for l in 0..4u64 {
            for i in 0..50 {
                let k = 2_000_000_000 + l * 100 + i;
                let row = t
                    .get(&k.to_string())
                    .unwrap()
                    .map(|b| rows_of(&[b]).remove(0));
                assert_eq!(
                    row,
                    Some(vec![Some(k.to_string()), Some(l.to_string())]),
                    "{when}"
                );
            }
        }
        assert!(t.get("5").unwrap().is_none());
        assert!(t.get(&(big_key(n)).to_string()).unwrap().is_none());
    };
    check("two tiers");
    // Compaction merges both (by key ranges, in parallel at this size).
    assert_eq!(Database::open_writer(&db).unwrap().compact("t").unwrap(), 2);
    assert_eq!(run_count(&db, "t"), 1);
    let meta = Database::open(&db).unwrap().table("t").unwrap().runs[0].clone();
    assert_eq!(meta.entries, n + 200);
    check("compacted");
}

// ---------------------------------------------------------------------
// (c) OnDuplicate::Skip
// ---------------------------------------------------------------------

#[test]
fn skip_keeps_the_first_row_inside_the_load_and_against_the_table() {
    let dir = TempDir::new("keyed-skip");
    let db = db_dir(&dir);
    let mut o = keyed_opts("id BIGINT PRIMARY KEY, v TEXT");
    o.on_duplicate = OnDuplicate::Skip;
    let sum = load_files(
        &dir,
        "t",
        &[("a.csv", "1,a\n2,b\n3,c\n4,d\n5,e\n2,dup\n")],
        &o,
    )
    .unwrap();
    assert_eq!((sum.rows, sum.duplicates), (5, 1));
    let sum = load_files(
        &dir,
        "t",
        &[
            ("b.csv", "3,B\n6,f\n6,F\n7,g\n"),
            ("c.csv", "7,G\n8,h\n1,A\n6,FF\n"),
        ],
        &o,
    )
    .unwrap();
    assert_eq!((sum.rows, sum.duplicates), (3, 5));
    assert_eq!(row_count(&db, "t"), 8);
    let want: BTreeMap<&str, &str> = [
        ("1", "a"),
        ("2", "b"),
        ("3", "c"),
        ("4", "d"),
        ("5", "e"),
        ("6", "f"),
        ("7", "g"),
        ("8", "h"),
    ]
    .into_iter()
    .collect();
    for (k, v) in &want {
        assert_eq!(get(&db, "t", k), Some(vec![s(k), s(v)]), "key {k}");
    }
    let mut rows = table_rows(&db, "t");
    rows.sort();
    assert_eq!(rows.len(), 8);
    // All skipped: nothing added, no run written.
    let runs = run_count(&db, "t");
    let sum = load_files(&dir, "t", &[("d.csv", "1,x\n8,y\n")], &o).unwrap();
    assert_eq!((sum.rows, sum.duplicates), (0, 2));
    assert_eq!(run_count(&db, "t"), runs);
    assert_eq!(row_count(&db, "t"), 8);
    // In error mode the kept row is the one named.
    let existing = LoadOptions {
        header: Header::No,
        ..LoadOptions::default()
    };
    let err = load_files(&dir, "t", &[("e.csv", "9,i\n6,z\n")], &existing).unwrap_err();
    let (_, key, first, _) = dup_parts(&err);
    assert_eq!(
        (key.as_str(), first.as_str()),
        ("6", "a row loaded earlier (6, f)")
    );
}

#[test]
fn skip_keeps_the_first_in_input_order_across_blocks_threads_and_runs() {
    for (threads, key_budget) in [(1, None), (2, None), (2, Some(1usize))] {
        let dir = TempDir::new("keyed-skip-many");
        let db = db_dir(&dir);
        let mut o = keyed_opts("id TEXT PRIMARY KEY, first BIGINT");
        o.on_duplicate = OnDuplicate::Skip;
        o.block_size = Some(64);
        o.threads = Some(threads);
        o.key_budget = key_budget;
        // 600 rows over three files; key i % 97, so rows 0..97 are the
        // first of each key.
        let texts: Vec<String> = (0..3)
            .map(|f| {
                (f * 200..(f + 1) * 200)
                    .map(|i| format!("key{},{i}\n", (i * 31) % 97))
                    .collect()
            })
            .collect();
        let files = [
            ("p0.csv", texts[0].as_str()),
            ("p1.csv", texts[1].as_str()),
            ("p2.csv", texts[2].as_str()),
        ];
        let sum = load_files(&dir, "t", &files, &o).unwrap();
        assert_eq!((sum.rows, sum.duplicates), (97, 503), "threads {threads}");
        let d = Database::open(&db).unwrap();
        let t = d.keyed("t").unwrap();
        for i in 0..97 {
            let k = format!("key{}", (i * 31) % 97);
            let row = rows_of(&[t.get(&k).unwrap().expect("kept")]).remove(0);
            assert_eq!(row, vec![s(&k), Some(i.to_string())], "threads {threads}");
        }
        drop(t);
        drop(d);
        // Loading the same files again: the journal skips them ...
        let sum = load_files(&dir, "t", &files, &o).unwrap();
        assert_eq!((sum.rows, sum.duplicates, sum.already_loaded), (0, 0, 3));
        // ... and read again, every row is a duplicate.
        let again = LoadOptions {
            reload: sluice::load::Reload::All,
            ..o.clone()
        };
        let sum = load_files(&dir, "t", &files, &again).unwrap();
        assert_eq!((sum.rows, sum.duplicates), (0, 600));
        assert_eq!(row_count(&db, "t"), 97);
    }
}

// ---------------------------------------------------------------------
// (d) a model-based property test
// ---------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    /// One load of these files (keys from a small space); with `skip`,
    /// duplicates are skipped, otherwise any repeat fails the whole load.
    Load {
        files: Vec<Vec<u16>>,
        skip: bool,
    },
    Compact,
    Probe(Vec<u16>),
    ProbeMany(Vec<u16>),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (
            prop::collection::vec(prop::collection::vec(0u16..300, 1..30), 1..3),
            prop::bool::weighted(0.25),
        )
            .prop_map(|(files, skip)| Op::Load { files, skip }),
        1 => Just(Op::Compact),
        2 => prop::collection::vec(0u16..300, 1..20).prop_map(Op::Probe),
        1 => prop::collection::vec(0u16..300, 0..20).prop_map(Op::ProbeMany),
    ]
}

/// The key text of `k`: TEXT keys of three shapes (digits, digits with a
/// suffix, a prefix then digits: "1" is a prefix of "10" and "1x"), or a
/// BIGINT spread over both signs.
fn model_key(k: u16, text: bool) -> String {
    if text {
        match k % 3 {
            0 => k.to_string(),
            1 => format!("{k}x"),
            _ => format!("z{k}"),
        }
    } else {
        ((k as i64 - 150) * 1_000_003).to_string()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn keyed_loads_compactions_and_lookups_agree_with_a_btreemap(
        ops in prop::collection::vec(op(), 1..16),
        text in any::<bool>(),
        small_blocks in any::<bool>(),
        tiny_key_budget in prop::bool::weighted(0.25),
        threads in 1usize..=2,
    ) {
        let dir = TempDir::new("keyed-model");
        let db = db_dir(&dir);
        let schema = if text {
            "k TEXT PRIMARY KEY, n BIGINT"
        } else {
            "k BIGINT PRIMARY KEY, n BIGINT"
        };
        let mut o = keyed_opts(schema);
        o.threads = Some(threads);
        o.block_size = small_blocks.then_some(64);
        o.key_budget = tiny_key_budget.then_some(1);
        // key -> n (the input row number that put it there).
        let mut model: BTreeMap<String, u64> = BTreeMap::new();
        let mut n = 0u64;
        let mut table_exists = false;
        for (step, op) in ops.iter().enumerate() {
            match op {
                Op::Load { files, skip } => {
                    let mut lo = o.clone();
                    lo.on_duplicate = if *skip { OnDuplicate::Skip } else { OnDuplicate::Error };
                    let mut names = Vec::new();
                    let mut texts = Vec::new();
                    let mut next = model.clone();
                    let (mut added, mut dups, mut dup) = (0u64, 0u64, false);
                    for (f, keys) in files.iter().enumerate() {
                        let mut t = String::new();
                        for k in keys {
                            let key = model_key(*k, text);
                            t.push_str(&format!("{key},{n}\n"));
                            if let std::collections::btree_map::Entry::Vacant(e) = next.entry(key) {
                                e.insert(n);
                                added += 1;
                            } else {
                                dup = true;
                                dups += 1;
                            }
                            n += 1;
                        }
                        names.push(format!("s{step}-{f}.csv"));
                        texts.push(t);
                    }
                    let inputs: Vec<(&str, &str)> = names
                        .iter()
                        .zip(&texts)
                        .map(|(a, b)| (a.as_str(), b.as_str()))
                        .collect();
                    let files_before = table_files(&db, "t");
                    let rows_before = row_count(&db, "t");
                    let r = load_files(&dir, "t", &inputs, &lo);
                    if dup && !*skip {
                        let e = r.expect_err("a load with a repeated key succeeded");
                        prop_assert!(matches!(e, Error::DuplicateKey { .. }), "{}", e);
                        prop_assert_eq!(table_files(&db, "t"), files_before);
                        prop_assert_eq!(row_count(&db, "t"), rows_before);
                    } else {
                        let sum = r.unwrap();
                        prop_assert_eq!(sum.rows, added);
                        prop_assert_eq!(sum.duplicates, dups);
                        model = next;
                        table_exists = true;
                        prop_assert_eq!(row_count(&db, "t"), model.len() as u64);
                        // Small runs: tier 0 never keeps four.
                        prop_assert!(run_count(&db, "t") <= 3);
                        prop_assert_eq!(
                            keys_files(&db, "t").len(),
                            run_count(&db, "t")
                        );
                    }
                }
                Op::Compact => {
                    if table_exists {
                        let before = run_count(&db, "t");
                        let merged = Database::open_writer(&db).unwrap().compact("t").unwrap();
                        prop_assert_eq!(merged, if before >= 2 { before } else { 0 });
                        prop_assert_eq!(run_count(&db, "t"), before.min(1));
                        prop_assert_eq!(keys_files(&db, "t").len(), before.min(1));
                    }
                }
                Op::Probe(keys) => {
                    if !table_exists {
                        continue;
                    }
                    let d = Database::open(&db).unwrap();
                    let t = d.keyed("t").unwrap();
                    for k in keys {
                        let key = model_key(*k, text);
                        let got = t.get(&key).unwrap().map(|b| rows_of(&[b]).remove(0));
                        let want = model.get(&key).map(|v| vec![Some(key.clone()), Some(v.to_string())]);
                        prop_assert_eq!(got, want, "key {}", key);
                    }
                }
                Op::ProbeMany(keys) => {
                    if !table_exists {
                        continue;
                    }
                    let d = Database::open(&db).unwrap();
                    let t = d.keyed("t").unwrap();
                    let asked: Vec<String> = keys.iter().map(|k| model_key(*k, text)).collect();
                    let got = rows_of(&[t.get_many(&asked).unwrap()]);
                    let want: Vec<Row> = asked
                        .iter()
                        .filter_map(|k| model.get(k).map(|v| vec![Some(k.clone()), Some(v.to_string())]))
                        .collect();
                    prop_assert_eq!(got, want);
                }
            }
        }
        if table_exists {
            let d = Database::open(&db).unwrap();
            let t = d.keyed("t").unwrap();
            for (k, v) in &model {
                let got = t.get(k).unwrap().map(|b| rows_of(&[b]).remove(0));
                prop_assert_eq!(got, Some(vec![Some(k.clone()), Some(v.to_string())]));
            }
            for k in 0..300u16 {
                let key = model_key(k, text);
                if !model.contains_key(&key) {
                    prop_assert!(t.get(&key).unwrap().is_none(), "{}", key);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------
// (e) damaged run files
// ---------------------------------------------------------------------

/// Checks every key of `model` (and absent ones) through a fresh handle:
/// each lookup is the right row, or an `Error::Corrupt` naming `file`.
/// Returns whether any error was seen.
/// Each key of `model` has its row id (as located in the intact run) and
/// its value. `quick: Some(j)` compares the row ids of every third key
/// (from the `j`-th); `None` compares rows of every key, and tries absent
/// keys and a batch lookup too.
fn lookups_right_or_corrupt(
    db: &Path,
    model: &BTreeMap<String, (u64, String)>,
    file: &str,
    ctx: &str,
    quick: Option<usize>,
) -> bool {
    let is_named_corrupt =
        |e: &Error| matches!(e, Error::Corrupt { .. }) && e.to_string().contains(file);
    let d = Database::open(db).unwrap();
    let t = match d.keyed("t") {
        Ok(t) => t,
        Err(e) => {
            assert!(is_named_corrupt(&e), "{ctx}: opening: {e:?}");
            return true;
        }
    };
    let mut errors = false;
    for (i, (k, (id, v))) in model.iter().enumerate() {
        if let Some(j) = quick {
            if i % 3 != j % 3 {
                continue;
            }
            let key = t.encode_key(k).unwrap();
            match t.locate(&key) {
                Ok(Some(got)) => assert_eq!(got, *id, "{ctx}: a wrong row id for {k}"),
                Ok(None) => panic!("{ctx}: key {k} lost without an error"),
                Err(e) => {
                    assert!(is_named_corrupt(&e), "{ctx}: {k}: {e:?}");
                    errors = true;
                }
            }
            continue;
        }
        match t.get(k) {
            Ok(Some(b)) => assert_eq!(
                rows_of(&[b]).remove(0),
                vec![s(k), s(v)],
                "{ctx}: a wrong row for {k}"
            ),
            Ok(None) => panic!("{ctx}: key {k} lost without an error"),
            Err(e) => {
                assert!(is_named_corrupt(&e), "{ctx}: {k}: {e:?}");
                errors = true;
            }
        }
        let absent = format!("{k}~");
        match t.get(&absent) {
            Ok(None) => {}
            Ok(Some(b)) => panic!("{ctx}: absent key {absent} found: {:?}", rows_of(&[b])),
            Err(e) => {
                assert!(is_named_corrupt(&e), "{ctx}: {absent}: {e:?}");
                errors = true;
            }
        }
    }
    if quick.is_some() {
        return errors;
    }
    // A batch lookup of them all: the right rows or an error.
    let keys: Vec<&String> = model.keys().collect();
    match t.get_many(&keys) {
        Ok(b) => {
            let want: Vec<Row> = model.iter().map(|(k, (_, v))| vec![s(k), s(v)]).collect();
            assert_eq!(rows_of(&[b]), want, "{ctx}: get_many");
        }
        Err(e) => {
            assert!(is_named_corrupt(&e), "{ctx}: get_many: {e:?}");
            errors = true;
        }
    }
    errors
}

#[test]
fn every_damaged_byte_of_a_run_is_an_error_naming_it_or_harmless() {
    let dir = TempDir::new("keyed-damage");
    let db = db_dir(&dir);
    let o = keyed_opts("k TEXT PRIMARY KEY, v TEXT");
    let mut model = BTreeMap::new();
    // What is checked after each damage: every key of the damaged
    // (first) run, a few of the other.
    let mut probed = BTreeMap::new();
    // Two runs; the first is damaged. Keys with packed digit suffixes
    // and plain ones, over several blocks.
    for l in 0..2 {
        let text: String = (0..400)
            .map(|i| {
                let k = if i % 2 == 0 {
                    format!("id{l}{i:06}")
                } else {
                    // Upper-case noise: stored unpacked, little shared.
                    let noise: String = (0..5 + i % 11)
                        .map(|j| (b'A' + ((i * 7 + j * 13 + l * 5) % 26) as u8) as char)
                        .collect();
                    format!("{noise}-{l}-{i}")
                };
                let v = format!("v{l}.{i}");
                let id = (l * 400 + i) as u64;
                if l == 0 || i % 60 == 1 {
                    probed.insert(k.clone(), (id, v.clone()));
                }
                model.insert(k.clone(), (id, v.clone()));
                format!("{k},{v}\n")
            })
            .collect();
        load_files(&dir, "t", &[(&format!("l{l}.csv"), &text)], &o).unwrap();
    }
    let meta = Database::open(&db).unwrap().table("t").unwrap().runs[0].clone();
    let run_path = db.join(&meta.file);
    let name = run_path.file_name().unwrap().to_string_lossy().to_string();
    let good = std::fs::read(&run_path).unwrap();
    let blocks = sluice::index::Run::open(&run_path)
        .unwrap()
        .block_first_keys()
        .count();
    assert!(blocks >= 2, "a run of several blocks: {blocks}");
    assert!(!lookups_right_or_corrupt(
        &db, &model, &name, "intact", None
    ));
    let (mut detected, mut tried) = (0, 0);
    // Every other byte of the data blocks, every byte of the index, the
    // bloom filter and the footer (the last ~900 bytes).
    for at in (0..good.len()).filter(|&at| at % 2 == 0 || at + 900 >= good.len()) {
        tried += 1;
        let mut bad = good.clone();
        bad[at] ^= if at % 2 == 0 { 0x01 } else { 0xa5 };
        std::fs::write(&run_path, &bad).unwrap();
        let quick = (at % 25 != 0).then_some(at / 2);
        if lookups_right_or_corrupt(
            &db,
            &probed,
            &name,
            &format!("byte {at} of {}", good.len()),
            quick,
        ) {
            detected += 1;
        }
    }
    // Nearly every byte is covered by a checksum or checked field.
    assert!(
        detected * 100 >= tried * 95,
        "{detected} of {tried} damages detected"
    );
    // Truncated or grown: the size differs from the manifest.
    for len in [0, 1, 39, 40, good.len() / 2, good.len() - 1] {
        std::fs::write(&run_path, &good[..len]).unwrap();
        let e = Database::open(&db)
            .unwrap()
            .keyed("t")
            .err()
            .expect("truncation detected");
        assert!(matches!(e, Error::Corrupt { .. }), "{len}: {e:?}");
        assert!(e.to_string().contains(&name), "{e}");
    }
    let mut longer = good.clone();
    longer.extend_from_slice(b"garbage");
    std::fs::write(&run_path, &longer).unwrap();
    let e = Database::open(&db)
        .unwrap()
        .keyed("t")
        .err()
        .expect("growth detected");
    assert!(
        matches!(e, Error::Corrupt { .. }) && e.to_string().contains(&name),
        "{e}"
    );
    // All zeros, same size.
    std::fs::write(&run_path, vec![0u8; good.len()]).unwrap();
    assert!(lookups_right_or_corrupt(&db, &model, &name, "zeroed", None));
    std::fs::write(&run_path, &good).unwrap();
    assert!(!lookups_right_or_corrupt(
        &db, &model, &name, "restored", None
    ));
}

#[test]
fn a_load_never_commits_a_repeated_key_past_a_damaged_run() {
    let dir = TempDir::new("keyed-damage-load");
    let db = db_dir(&dir);
    let o = keyed_opts("k BIGINT PRIMARY KEY, v TEXT");
    let text: String = (0..400).map(|i| format!("{i},v{i}\n")).collect();
    load_files(&dir, "t", &[("a.csv", &text)], &o).unwrap();
    let meta = Database::open(&db).unwrap().table("t").unwrap().runs[0].clone();
    let run_path = db.join(&meta.file);
    let good = std::fs::read(&run_path).unwrap();
    // Damage the first data block (key 0 is in it).
    let mut bad = good.clone();
    bad[5] ^= 0x10;
    std::fs::write(&run_path, &bad).unwrap();
    let files = table_files(&db, "t");
    let mut errors = Vec::new();
    for skip in [false, true] {
        let mut lo = o.clone();
        if skip {
            lo.on_duplicate = OnDuplicate::Skip;
        }
        // Key 0 must be looked up in the damaged block: the load fails
        // and commits nothing.
        let e = load_files(&dir, "t", &[("b.csv", "1000,new\n0,again\n")], &lo)
            .expect_err("a load checked against a damaged run succeeded");
        assert_eq!(row_count(&db, "t"), 400, "skip={skip}");
        assert_eq!(table_files(&db, "t"), files, "skip={skip}");
        assert!(e.to_string().contains(&meta.file), "skip={skip}: {e}");
        errors.push((skip, e));
    }
    // ... and says the run is corrupt (not that the input is malformed).
    for (skip, e) in errors {
        match e {
            Error::Corrupt { file, .. } => assert_eq!(file, run_path, "skip={skip}"),
            other => panic!("skip={skip}: expected Error::Corrupt, got {other:?}"),
        }
    }
    std::fs::write(&run_path, &good).unwrap();
    let d = Database::open(&db).unwrap();
    let t = d.keyed("t").unwrap();
    assert_eq!(
        rows_of(&[t.get("0").unwrap().unwrap()])[0],
        vec![s("0"), s("v0")]
    );
}

// ---------------------------------------------------------------------
// (f) a merge whose process dies before its commit
// ---------------------------------------------------------------------

const CRASH_DB: &str = "SLUICE_IT_KEYED_CRASH_DB";
const CRASH_MODE: &str = "SLUICE_IT_KEYED_CRASH_MODE";

/// Run by [`run_crash_child`] in a child process of this test binary
/// (ignored, and a no-op, otherwise): compacts, or loads `crash.csv`,
/// with `SLUICE_FAULT=merge-before-commit`, which aborts the process.
#[test]
#[ignore = "run as a child process by the crash tests"]
fn crash_child() {
    let (Some(db), Some(mode)) = (std::env::var_os(CRASH_DB), std::env::var_os(CRASH_MODE)) else {
        return;
    };
    let db = PathBuf::from(db);
    let mut w = Database::open_writer(&db).unwrap();
    if mode == "compact" {
        let _ = w.compact("t");
    } else {
        let f = db.parent().unwrap().join("crash.csv");
        let _ = load(
            &mut w,
            "t",
            &[Input::File(f)],
            &keyed_opts("k BIGINT PRIMARY KEY, v TEXT"),
        );
    }
    // The fault should have ended the process.
    std::process::exit(77);
}

fn run_crash_child(dir: &TempDir, mode: &str) -> std::process::ExitStatus {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "keyed::crash_child",
            "--ignored",
            "--test-threads=1",
        ])
        .current_dir(dir.path())
        .env(CRASH_DB, db_dir(dir))
        .env(CRASH_MODE, mode)
        .env("SLUICE_FAULT", "merge-before-commit")
        .output()
        .unwrap();
    assert!(
        !out.status.success() && out.status.code() != Some(77),
        "the fault did not fire: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout)
    );
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            out.status.signal(),
            Some(6),
            "killed by SIGABRT: {:?}",
            out.status
        );
    }
    out.status
}

fn crash_fixture(dir: &TempDir, loads: i64) -> BTreeMap<String, String> {
    let o = keyed_opts("k BIGINT PRIMARY KEY, v TEXT");
    let mut model = BTreeMap::new();
    for l in 0..loads {
        let text: String = (0..30)
            .map(|i| {
                let k = l * 1000 + i;
                model.insert(k.to_string(), format!("l{l}"));
                format!("{k},l{l}\n")
            })
            .collect();
        load_files(dir, "t", &[(&format!("c{l}.csv"), &text)], &o).unwrap();
    }
    model
}

fn all_found(db: &Path, model: &BTreeMap<String, String>) {
    let d = Database::open(db).unwrap();
    let t = d.keyed("t").unwrap();
    for (k, v) in model {
        let row = t.get(k).unwrap().unwrap_or_else(|| panic!("key {k} lost"));
        assert_eq!(rows_of(&[row])[0], vec![s(k), s(v)]);
    }
    assert_eq!(d.table("t").unwrap().rows(), model.len() as u64);
}

#[test]
fn a_compaction_killed_before_its_commit_leaves_the_old_runs_working() {
    let dir = TempDir::new("keyed-crash-compact");
    let db = db_dir(&dir);
    let model = crash_fixture(&dir, 3);
    let manifest = std::fs::read(db.join("MANIFEST")).unwrap();
    let before = keys_files(&db, "t");
    assert_eq!(before.len(), 3);
    run_crash_child(&dir, "compact");
    // The merged run was written; the manifest is the old one.
    assert_eq!(std::fs::read(db.join("MANIFEST")).unwrap(), manifest);
    let after = keys_files(&db, "t");
    let extra: Vec<&String> = after.iter().filter(|f| !before.contains(f)).collect();
    assert_eq!(extra.len(), 1, "{after:?}");
    assert!(extra[0].ends_with("-merged.keys"), "{extra:?}");
    // Readers use the committed runs.
    assert_eq!(run_count(&db, "t"), 3);
    all_found(&db, &model);
    // The next writer removes the orphan; a merge then works.
    drop(Database::open_writer(&db).unwrap());
    assert_eq!(keys_files(&db, "t"), before);
    assert_eq!(std::fs::read(db.join("MANIFEST")).unwrap(), manifest);
    assert_eq!(Database::open_writer(&db).unwrap().compact("t").unwrap(), 3);
    assert_eq!(run_count(&db, "t"), 1);
    assert_eq!(keys_files(&db, "t").len(), 1);
    all_found(&db, &model);
}

#[test]
fn a_load_whose_tier_merge_is_killed_stays_committed() {
    let dir = TempDir::new("keyed-crash-load");
    let db = db_dir(&dir);
    let mut model = crash_fixture(&dir, 3);
    // The fourth load commits, then its merge of four runs dies.
    let text: String = (0..30).map(|i| format!("{},l3\n", 3000 + i)).collect();
    dir.write("crash.csv", text.as_bytes());
    for i in 0..30 {
        model.insert((3000 + i).to_string(), "l3".into());
    }
    run_crash_child(&dir, "load");
    assert_eq!(
        run_count(&db, "t"),
        4,
        "the load committed, the merge did not"
    );
    assert_eq!(
        keys_files(&db, "t").len(),
        5,
        "four runs and the uncommitted merge"
    );
    all_found(&db, &model);
    // The next writer cleans up; the next load merges all five runs.
    drop(Database::open_writer(&db).unwrap());
    assert_eq!(keys_files(&db, "t").len(), 4);
    let o = keyed_opts("k BIGINT PRIMARY KEY, v TEXT");
    let sum = load_files(&dir, "t", &[("c4.csv", "4000,l4\n")], &o).unwrap();
    model.insert("4000".into(), "l4".into());
    assert_eq!(sum.runs_merged, 5);
    assert_eq!(run_count(&db, "t"), 1);
    assert_eq!(keys_files(&db, "t").len(), 1);
    all_found(&db, &model);
    // Keys of the crashed load are still checked.
    let err = load_files(&dir, "t", &[("c5.csv", "3007,again\n")], &o).unwrap_err();
    let (_, _, first, _) = dup_parts(&err);
    assert_eq!(first, "a row loaded earlier (3007, l3)");
}

/// A lookup checks and decodes the one record batch that holds its row,
/// not the whole segment: with a byte of one batch damaged, each key's
/// row comes back right or the lookup fails naming the segment — the
/// keys of the damaged batch fail, those of the other batches are found.
#[test]
fn a_damaged_record_batch_fails_only_the_lookups_that_read_it() {
    let dir = TempDir::new("keyed-batch-damage");
    let db = db_dir(&dir);
    let o = LoadOptions {
        // Blocks of ~2,000 rows, each its own record batch (a segment
        // size given keeps small batches apart), in one segment.
        block_size: Some(32 << 10),
        segment_rows: Some(1 << 20),
        ..keyed_opts("k BIGINT PRIMARY KEY, v TEXT")
    };
    let text: String = (0..20_000).map(|i| format!("{i},value-{i}\n")).collect();
    load_files(&dir, "t", &[("a.csv", &text)], &o).unwrap();
    let meta = Database::open(&db).unwrap().table("t").unwrap().clone();
    assert_eq!(meta.segments.len(), 1);
    let seg = db.join(&meta.segments[0].file);
    let mut bytes = std::fs::read(&seg).unwrap();
    // A byte in the middle of the file: inside some batch's values.
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(&seg, &bytes).unwrap();
    let name = seg.file_name().unwrap().to_string_lossy().to_string();
    let handle = Database::open(&db).unwrap();
    let t = handle.keyed("t").unwrap();
    let (mut found, mut failed) = (0, 0);
    for i in (0..20_000).step_by(97) {
        match t.get(&i.to_string()) {
            Ok(Some(b)) => {
                assert_eq!(
                    rows_of(&[b]),
                    vec![vec![s(&i.to_string()), s(&format!("value-{i}"))]]
                );
                found += 1;
            }
            Ok(None) => panic!("key {i} not found"),
            Err(e) => {
                let msg = e.to_string();
                assert!(
                    msg.contains(&name) && msg.contains("checksum"),
                    "key {i}: {msg}"
                );
                failed += 1;
            }
        }
    }
    let first = (0..20_000).find_map(|i| t.get(&i.to_string()).err().map(|e| e.to_string()));
    assert!(
        found > 0 && failed > 0,
        "{found} found, {failed} failed: {first:?}"
    );
    // Most keys are in the intact batches.
    assert!(found > failed, "{found} found, {failed} failed");
}
