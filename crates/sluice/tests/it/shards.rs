//! Sharded tables: the same answers for 1, 2, 7 and 16 shards (hashed by
//! key, by another column, and round-robin); a row's shard fixed by its
//! key across loads; lookups that read one shard; duplicates found inside
//! a shard with both places named; round-robin dealing that continues
//! across loads; shards placed in other directories and removed again
//! when the first load fails; bad options refused.

use std::path::{Path, PathBuf};

use sluice::Error;
use sluice::index::encode_i64;
use sluice::load::{Header, LoadOptions, OnDuplicate, load};
use sluice::partition::{shard_of_key, shards_of};
use sluice::query::{QueryOptions, query_with};
use sluice::source::Input;
use sluice::store::Database;

use crate::common::{TempDir, rows_of};

const SCHEMA: &str = "id BIGINT, grp TEXT, price DECIMAL(10,2), qty INT, d DATE";

/// `n` rows with unique ids (scrambled, some negative), a few groups,
/// NULLs in qty, starting at row `from`.
fn rows(from: u64, n: u64) -> String {
    let mut s = String::new();
    for i in from..from + n {
        let id = (i.wrapping_mul(2_654_435_761) % 1_000_003) as i64 - 500_000;
        let grp = ["north", "south", "east", "west", "x"][(i % 5) as usize];
        let price = format!("{}.{:02}", i % 997, i % 100);
        let qty = if i % 11 == 0 {
            String::new()
        } else {
            ((i * 7) % 101).to_string()
        };
        let d = format!("2024-{:02}-{:02}", 1 + i % 12, 1 + i % 28);
        s.push_str(&format!("{id},{grp},{price},{qty},{d}\n"));
    }
    s
}

fn opts(shards: u32) -> LoadOptions {
    LoadOptions {
        schema: Some(SCHEMA.parse().unwrap()),
        header: Header::No,
        shards: Some(shards),
        // Many blocks, so that batches are cut by shard many times.
        block_size: Some(4096),
        ..LoadOptions::default()
    }
}

fn db_of(dir: &TempDir) -> PathBuf {
    dir.path().join("db")
}

/// Loads `parts` as successive loads (one file each) into `table`.
fn load_parts(dir: &TempDir, table: &str, parts: &[String], o: &LoadOptions) {
    for (i, p) in parts.iter().enumerate() {
        let f = dir.write(&format!("{table}-{i}.csv"), p.as_bytes());
        let mut db = Database::open_writer(db_of(dir)).unwrap();
        load(&mut db, table, &[Input::File(f)], o).unwrap();
    }
}

fn answer(db: &Database, sql: &str, threads: usize) -> Vec<Vec<Option<String>>> {
    let r = query_with(
        db,
        sql,
        &QueryOptions {
            threads: Some(threads),
            morsel_rows: Some(97),
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows_of(&r.batches)
}

const QUERIES: &[&str] = &[
    "SELECT count(*), sum(price), avg(qty), min(d), max(d), count(DISTINCT grp), count(qty), min(id), max(id) FROM t",
    "SELECT grp, count(*), sum(price), avg(price), min(qty), max(qty), count(DISTINCT qty), sum(qty) FROM t GROUP BY grp ORDER BY grp",
    "SELECT id, grp, price FROM t WHERE qty > 50 ORDER BY id LIMIT 20",
    "SELECT d, sum(qty), count(*) FROM t WHERE price BETWEEN 10 AND 500 GROUP BY d ORDER BY 2 DESC, 1 LIMIT 7",
    "SELECT extract(month FROM d) AS m, count(DISTINCT id) FROM t GROUP BY m ORDER BY m",
    "SELECT * FROM t WHERE id = 144",
    "SELECT count(*), sum(qty) FROM t WHERE id IN (144, -500000, 3, 77, 123456)",
    "SELECT grp, max(price) FROM t WHERE qty IS NULL GROUP BY grp HAVING count(*) > 3 ORDER BY 2 DESC",
];

#[test]
fn one_two_seven_and_sixteen_shards_give_the_same_answers() {
    let parts = vec![rows(0, 1500), rows(1500, 700), rows(2200, 1300)];
    // Hashed by the key, by another column, and dealt round-robin.
    let setups: [(&str, Option<&str>, Option<&str>); 3] = [
        ("key", Some("id"), None),
        ("by grp", None, Some("grp")),
        ("round-robin", None, None),
    ];
    for (what, key, by) in setups {
        let mut expected = None;
        for shards in [1u32, 2, 7, 16] {
            let dir = TempDir::new("shards-same");
            let mut o = opts(shards);
            o.key = key.map(str::to_string);
            o.shard_by = if shards > 1 {
                by.map(str::to_string)
            } else {
                None
            };
            load_parts(&dir, "t", &parts, &o);
            let db = Database::open(db_of(&dir)).unwrap();
            let meta = db.table("t").unwrap();
            assert_eq!(meta.shard_count(), shards, "{what}");
            assert_eq!(meta.rows(), 3500);
            let report = db.check("t").unwrap();
            assert!(
                report.problems.is_empty(),
                "{what}, {shards}: {:?}",
                report.problems
            );
            assert!(
                report.unnamed.is_empty(),
                "{what}, {shards}: {:?}",
                report.unnamed
            );
            if shards > 1 {
                let used = meta.shard_stats().iter().filter(|s| s.rows > 0).count();
                // Five groups can fill at most five shards.
                let want = if by.is_some() {
                    (shards as usize).min(5) - 1
                } else {
                    shards as usize
                };
                assert!(used >= want, "{what}: {shards} shards, {used} with rows");
            }
            let got: Vec<_> = QUERIES
                .iter()
                .filter(|q| key.is_some() || !q.contains("id ="))
                .flat_map(|q| [answer(&db, q, 1), answer(&db, q, 3)])
                .collect();
            match &expected {
                None => expected = Some(got),
                Some(e) => assert_eq!(&got, e, "{what}: {shards} shards differ from 1"),
            }
        }
    }
}

#[test]
fn a_key_lands_in_the_same_shard_in_every_load() {
    let dir = TempDir::new("shards-stable");
    let mut o = opts(4);
    o.key = Some("id".into());
    let parts: Vec<String> = (0..5).map(|i| rows(i * 400, 400)).collect();
    load_parts(&dir, "t", &parts, &o);
    let db = Database::open(db_of(&dir)).unwrap();
    let meta = db.table("t").unwrap().clone();
    let schema = meta.schema.arrow_schema();
    let mut seen = 0;
    for seg in &meta.segments {
        for b in db.segment_batches(seg, &schema).unwrap().iter() {
            let ids = shards_of(b.column(0).as_ref(), 4).unwrap();
            assert!(
                ids.iter().all(|&s| s == seg.shard),
                "{} holds rows of another shard",
                seg.file
            );
            seen += b.num_rows();
        }
    }
    assert_eq!(seen, 2000);
    // Each run indexes its own shard's rows, and a lookup reads the
    // shard the key hashes to.
    let t = db.keyed("t").unwrap();
    for line in parts.concat().lines() {
        let id: i64 = line.split(',').next().unwrap().parse().unwrap();
        let key = encode_i64(id);
        let row = t.locate(&key).unwrap().expect("every key is found");
        assert_eq!((row >> 56) as u32, shard_of_key(&key, 4));
        let got = rows_of(&[t.row(row).unwrap()]);
        assert_eq!(got[0][0].as_deref(), Some(id.to_string().as_str()));
    }
    assert!(t.get("1000004").unwrap().is_none());
    assert!(t.get("-99999999").unwrap().is_none());
    // EXPLAIN shows the fan-out of a scan, and one shard for one key.
    let plan = |sql: &str| {
        let r = query_with(&db, sql, &QueryOptions::default()).unwrap();
        r.explain.unwrap()
    };
    let scan = plan("EXPLAIN SELECT grp, sum(qty) FROM t GROUP BY grp");
    assert!(scan.contains("Fan-out over 4 of 4 shards"), "{scan}");
    let one = plan("EXPLAIN SELECT * FROM t WHERE id = 144");
    assert!(one.contains("Fan-out over 1 of 4 shards"), "{one}");
    assert!(one.contains("Index lookup"), "{one}");
    // A long list of keys (one array of values) is looked up too.
    let many = plan("EXPLAIN SELECT * FROM t WHERE id IN (144, 1, 2, 3, 4, 5, 6, 7, 8, 9)");
    assert!(many.contains("Index lookup"), "{many}");
    assert!(many.contains("10 keys"), "{many}");
}

#[test]
fn merged_runs_stay_in_their_shard() {
    let dir = TempDir::new("shards-merge");
    let mut o = opts(3);
    o.key = Some("id".into());
    // A tiny key budget: many runs per load, merged by tier per shard.
    o.key_budget = Some(2048);
    let parts: Vec<String> = (0..6).map(|i| rows(i * 300, 300)).collect();
    load_parts(&dir, "t", &parts, &o);
    let mut db = Database::open_writer(db_of(&dir)).unwrap();
    db.compact("t").unwrap();
    let meta = db.table("t").unwrap();
    assert_eq!(meta.runs.len(), 3, "one run per shard after compact");
    let mut shards: Vec<u32> = meta.runs.iter().map(|r| r.shard).collect();
    shards.sort();
    assert_eq!(shards, vec![0, 1, 2]);
    assert!(db.check("t").unwrap().problems.is_empty());
    let t = db.keyed("t").unwrap();
    for line in parts.concat().lines() {
        let id = line.split(',').next().unwrap();
        assert!(t.get(id).unwrap().is_some(), "key {id}");
    }
}

/// Writes the files and loads them in one load.
fn load_files(dir: &TempDir, files: &[(&str, String)], o: &LoadOptions) -> sluice::Result<u64> {
    let inputs: Vec<Input> = files
        .iter()
        .map(|(n, t)| Input::File(dir.write(n, t.as_bytes())))
        .collect();
    let mut db = Database::open_writer(db_of(dir))?;
    load(&mut db, "t", &inputs, o).map(|s| s.rows)
}

#[test]
fn duplicates_name_both_places_inside_and_across_loads() {
    let dir = TempDir::new("shards-dup");
    let mut o = opts(5);
    o.key = Some("id".into());
    let a = rows(0, 300);
    // Line 5 of b.csv repeats line 37 of a.csv.
    let line37 = a.lines().nth(36).unwrap().to_string();
    let mut b = rows(300, 4);
    b.push_str(&line37);
    b.push('\n');
    b.push_str(&rows(304, 50));
    let err = load_files(&dir, &[("a.csv", a.clone()), ("b.csv", b.clone())], &o).unwrap_err();
    let Error::DuplicateKey {
        key, first, second, ..
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!(key, line37.split(',').next().unwrap());
    assert!(first.ends_with("a.csv:37"), "{first}");
    assert!(second.ends_with("b.csv:5"), "{second}");
    assert!(
        Database::open(db_of(&dir)).unwrap().table("t").is_none(),
        "nothing committed"
    );

    // Against a committed load: the earlier row is shown by its values.
    load_files(&dir, &[("a.csv", a)], &o).unwrap();
    let err = load_files(&dir, &[("b.csv", b.clone())], &o).unwrap_err();
    let Error::DuplicateKey { first, second, .. } = &err else {
        panic!("{err}");
    };
    assert!(first.contains("a row loaded earlier"), "{first}");
    assert!(first.contains(line37.split(',').nth(1).unwrap()), "{first}");
    assert!(second.ends_with("b.csv:5"), "{second}");

    // Skipping keeps the first.
    o.on_duplicate = OnDuplicate::Skip;
    let mut db = Database::open_writer(db_of(&dir)).unwrap();
    let f = dir.write("b.csv", b.as_bytes());
    let s = load(&mut db, "t", &[Input::File(f)], &o).unwrap();
    assert_eq!((s.rows, s.duplicates), (54, 1));
    assert_eq!(db.table("t").unwrap().rows(), 354);
    assert!(db.check("t").unwrap().problems.is_empty());
}

#[test]
fn round_robin_deals_rows_evenly_across_loads() {
    let dir = TempDir::new("shards-rr");
    let o = opts(4);
    load_parts(&dir, "t", &[rows(0, 100), rows(100, 10)], &o);
    let db = Database::open(db_of(&dir)).unwrap();
    let meta = db.table("t").unwrap();
    let per: Vec<u64> = meta.shard_stats().iter().map(|s| s.rows).collect();
    assert_eq!(per, vec![28, 28, 27, 27]);
    assert_eq!(meta.sharding.as_ref().unwrap().by, None);
}

fn sluice_dirs(p: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(p)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn shards_can_live_in_other_directories() {
    let dir = TempDir::new("shards-paths");
    let disk1 = dir.path().join("disk1");
    let disk2 = dir.path().join("disk2");
    let mut o = opts(3);
    o.key = Some("id".into());
    o.shard_paths = vec![disk1.clone(), disk2.clone()];

    // A first load that fails leaves nothing behind, there either.
    let bad = format!("{}oops,x,1,1,2024-01-01\n", rows(0, 50));
    let err = load_files(&dir, &[("bad.csv", bad)], &o).unwrap_err();
    assert!(err.to_string().contains("bad.csv:51"), "{err}");
    assert!(sluice_dirs(&disk1).is_empty(), "{:?}", sluice_dirs(&disk1));
    assert!(sluice_dirs(&disk2).is_empty());

    load_files(&dir, &[("a.csv", rows(0, 600))], &o).unwrap();
    // Shards 0 and 2 on disk1, shard 1 on disk2, each holding segments.
    assert_eq!(sluice_dirs(&disk1).len(), 2);
    assert_eq!(sluice_dirs(&disk2).len(), 1);
    for d in sluice_dirs(&disk1) {
        let files = sluice_dirs(&disk1.join(&d));
        assert!(files.iter().any(|f| f.ends_with(".arrow")), "{files:?}");
        assert!(files.iter().any(|f| f.ends_with(".keys")), "{files:?}");
    }
    // Appending needs no paths; giving them again is refused.
    let err = load_files(&dir, &[("b.csv", rows(600, 10))], &o).unwrap_err();
    assert!(err.to_string().contains("--shard-paths"), "{err}");
    o.shard_paths.clear();
    load_files(&dir, &[("b.csv", rows(600, 10))], &o).unwrap();
    let db = Database::open(db_of(&dir)).unwrap();
    assert_eq!(db.table("t").unwrap().rows(), 610);
    assert!(db.check("t").unwrap().problems.is_empty());
    let r = answer(&db, "SELECT count(*), sum(qty) FROM t", 2);
    assert_eq!(r[0][0].as_deref(), Some("610"));
    // Row 0's id is -500000.
    assert!(db.keyed("t").unwrap().get("-500000").unwrap().is_some());
}

#[test]
fn files_a_crash_left_in_shard_directories_are_removed() {
    let dir = TempDir::new("shards-orphans");
    let mut o = opts(2);
    o.key = Some("id".into());
    load_files(&dir, &[("a.csv", rows(0, 100))], &o).unwrap();
    let stray = db_of(&dir).join("tables/t/s001/000009-00000.arrow");
    std::fs::write(&stray, b"left by a crash").unwrap();
    let db = Database::open(db_of(&dir)).unwrap();
    assert_eq!(
        db.check("t").unwrap().unnamed,
        vec!["s001/000009-00000.arrow".to_string()]
    );
    drop(db);
    let db = Database::open_writer(db_of(&dir)).unwrap();
    assert!(!stray.exists());
    assert!(db.check("t").unwrap().unnamed.is_empty());
}

#[test]
fn bad_shard_options_are_refused() {
    let dir = TempDir::new("shards-bad");
    let f = |o: &LoadOptions| {
        load_files(&dir, &[("a.csv", rows(0, 10))], o)
            .unwrap_err()
            .to_string()
    };
    let mut o = opts(0);
    assert!(f(&o).contains("--shards 0"), "{}", f(&o));
    o.shards = Some(300);
    assert!(f(&o).contains("1 to 256"));
    o.shards = Some(4);
    o.key = Some("id".into());
    o.shard_by = Some("grp".into());
    let e = f(&o);
    assert!(e.contains("sharded by its key"), "{e}");
    o.key = None;
    o.shard_by = Some("nope".into());
    assert!(f(&o).contains("no such column"));
    o.shards = Some(1);
    o.shard_by = Some("grp".into());
    assert!(f(&o).contains("--shards 2 or more"));
    // An existing table keeps its shards.
    let o4 = opts(4);
    load_files(&dir, &[("a.csv", rows(0, 10))], &o4).unwrap();
    let e = f(&opts(8));
    assert!(e.contains("exists with 4 shards"), "{e}");
    let same = LoadOptions {
        shards: None,
        ..opts(4)
    };
    load_files(&dir, &[("b.csv", rows(10, 10))], &same).unwrap();
}

#[test]
fn a_first_load_that_died_leaves_no_shard_directories_elsewhere() {
    // What a load killed before its first commit leaves: the table's
    // directory with a link to a shard directory on another disk.
    let dir = TempDir::new("shards-died");
    let disk = dir.path().join("disk");
    let target = disk.join("sluice-t-s000-1-2");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::write(target.join("000001-00000.arrow"), b"half written").unwrap();
    let tdir = db_of(&dir).join("tables/t");
    std::fs::create_dir_all(&tdir).unwrap();
    std::os::unix::fs::symlink(&target, tdir.join("s000")).unwrap();
    let db = Database::open_writer(db_of(&dir)).unwrap();
    assert!(db.table("t").is_none());
    assert!(!tdir.exists());
    assert!(
        !target.exists(),
        "the shard directory elsewhere is removed too"
    );
    assert!(disk.exists(), "the directory given is kept");
}

/// The format number in the manifest's header line.
fn manifest_format(db: &Path) -> String {
    let text = std::fs::read(db.join("MANIFEST")).unwrap();
    let line = text.split(|&b| b == b'\n').next().unwrap();
    String::from_utf8_lossy(line)
        .split(' ')
        .nth(1)
        .unwrap()
        .to_string()
}

#[test]
fn a_sharded_table_raises_the_format_so_older_builds_refuse_it() {
    let dir = TempDir::new("shards-format");
    let plain = LoadOptions {
        shards: None,
        ..opts(1)
    };
    load_parts(&dir, "plain", &[rows(0, 50)], &plain);
    assert_eq!(
        manifest_format(&db_of(&dir)),
        "1",
        "no sharded table: version 1"
    );
    load_parts(&dir, "split", &[rows(0, 50)], &opts(3));
    assert_eq!(
        manifest_format(&db_of(&dir)),
        "2",
        "a sharded table: version 2"
    );
    // This build reads both; a version from the future is refused by name.
    let db = Database::open(db_of(&dir)).unwrap();
    assert_eq!(db.table("split").unwrap().shard_count(), 3);
    drop(db);
    let path = db_of(&dir).join("MANIFEST");
    let text = std::fs::read(&path).unwrap();
    let nl = text.iter().position(|&b| b == b'\n').unwrap();
    let head = String::from_utf8(text[..nl].to_vec()).unwrap();
    let mut newer = head.replacen(" 2 ", " 9 ", 1).into_bytes();
    newer.extend_from_slice(&text[nl..]);
    std::fs::write(&path, newer).unwrap();
    let e = Database::open(db_of(&dir))
        .err()
        .expect("version 9 is refused");
    let msg = e.to_string();
    assert!(
        msg.contains("format version 9") && msg.contains("MANIFEST"),
        "{msg}"
    );
}
