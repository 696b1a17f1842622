//! `dataset::convert`: text files straight to a dataset. A bucketed
//! dataset holds, bucket by bucket, the rows of the sharded table the same
//! files load into; every row arrives once, in input order within each
//! file sequence; duplicate and NULL keys are named by file and line; a
//! failed conversion leaves nothing behind.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use proptest::prelude::*;
use sluice::Error;
use sluice::dataset::convert::{ConvertOptions, convert};
use sluice::dataset::{ExportOptions, FileFormat};
use sluice::load::{Header, LoadOptions, load};
use sluice::partition::shards_of;
use sluice::source::Input;
use sluice::store::Database;

use super::common::{TempDir, rows_of};

type Row = Vec<Option<String>>;

const SCHEMA: &str = "id BIGINT, grp TEXT, price DECIMAL(10,2), qty INT";

/// `n` rows with unique, scrambled ids from row `from` on.
fn rows(from: u64, n: u64) -> String {
    let mut s = String::new();
    for i in from..from + n {
        let id = (i.wrapping_mul(2_654_435_761) % 1_000_003) as i64 - 500_000;
        let grp = ["north", "a \"quoted\", name", "", "west"][(i % 4) as usize];
        let grp = if grp.contains('"') {
            format!("\"{}\"", grp.replace('"', "\"\""))
        } else {
            grp.to_string()
        };
        let qty = if i % 11 == 0 {
            String::new()
        } else {
            ((i * 7) % 101).to_string()
        };
        s.push_str(&format!("{id},{grp},{}.{:02},{qty}\n", i % 997, i % 100));
    }
    s
}

fn load_opts(key: bool) -> LoadOptions {
    let schema = if key {
        SCHEMA.replace("id BIGINT", "id BIGINT PRIMARY KEY")
    } else {
        SCHEMA.to_string()
    };
    LoadOptions {
        schema: Some(schema.parse().unwrap()),
        header: Header::No,
        // Many blocks: pieces cut by bucket many times.
        block_size: Some(4096),
        ..LoadOptions::default()
    }
}

fn convert_opts(buckets: u32) -> ConvertOptions {
    ConvertOptions {
        files: ExportOptions {
            // Several files a stream.
            target_file_size: 8 << 10,
            row_group_size: 500,
            ..ExportOptions::default()
        },
        buckets,
        ..ConvertOptions::default()
    }
}

fn write_parts(dir: &TempDir, parts: &[String]) -> Vec<Input> {
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| Input::File(dir.write(&format!("in-{i}.csv"), p.as_bytes())))
        .collect()
}

/// The Parquet files of a dataset by directory (relative, `""`: the
/// top), each directory's files in name order.
fn dataset_files(root: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut out: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "parquet") {
                let rel = d.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.entry(rel).or_default().push(p);
            }
        }
    }
    for files in out.values_mut() {
        files.sort();
    }
    out
}

fn parquet_rows(p: &Path) -> Vec<Row> {
    let r = ParquetRecordBatchReaderBuilder::try_new(File::open(p).unwrap())
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<_> = r.map(|b| b.unwrap()).collect();
    rows_of(&batches)
}

/// Per directory, per stream (the files' `part-NNNNN` prefix), its rows
/// in file order.
fn streams(root: &Path) -> BTreeMap<(String, String), Vec<Row>> {
    let mut out: BTreeMap<(String, String), Vec<Row>> = BTreeMap::new();
    for (dir, files) in dataset_files(root) {
        for f in files {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            let stream = name.rsplit_once('-').unwrap().0.to_string();
            out.entry((dir.clone(), stream))
                .or_default()
                .extend(parquet_rows(&f));
        }
    }
    out
}

/// Rows of a table's shard, sorted.
fn shard_rows(db: &Path, table: &str, shard: u32) -> Vec<Row> {
    let db = Database::open(db).unwrap();
    let meta = db.table(table).unwrap().clone();
    let schema = meta.schema.arrow_schema();
    let mut rows = Vec::new();
    for seg in meta.segments.iter().filter(|s| s.shard == shard) {
        let batches: Vec<_> = db
            .segment_batches(seg, &schema)
            .unwrap()
            .iter()
            .map(|b| sluice::batch::dict::decode_batch(b, &[]).unwrap())
            .collect();
        rows.extend(rows_of(&batches));
    }
    rows.sort();
    rows
}

/// The input's rows as the dataset holds them (values formatted).
fn input_rows(text: &str) -> Vec<Row> {
    let dir = TempDir::new("convert-ref");
    let f = dir.write("all.csv", text.as_bytes());
    let mut db = Database::open_writer(dir.path().join("db")).unwrap();
    load(&mut db, "t", &[Input::File(f)], &load_opts(false)).unwrap();
    super::common::table_rows(&dir.path().join("db"), "t")
}

fn no_leftovers(parent: &Path) {
    let hidden: Vec<String> = std::fs::read_dir(parent)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "left behind: {hidden:?}");
}

#[test]
fn a_bucketed_dataset_holds_the_sharded_tables_rows_bucket_by_bucket() {
    let dir = TempDir::new("convert-buckets");
    let parts: Vec<String> = (0..5).map(|i| rows(i * 400, 400)).collect();
    let inputs = write_parts(&dir, &parts);
    let out = dir.path().join("out");
    let s = convert(&inputs, &out, &load_opts(true), &convert_opts(4)).unwrap();
    assert_eq!(s.load.rows, 2000);
    assert_eq!(s.buckets, 4);
    assert_eq!(s.bucket_by.as_deref(), Some("id"));
    assert!(out.join("_SUCCESS").is_file());
    assert!(!out.join("_sluice_keys").exists());
    let files = dataset_files(&out);
    assert_eq!(
        files.keys().cloned().collect::<Vec<_>>(),
        ["bucket=00", "bucket=01", "bucket=02", "bucket=03"]
    );
    let n_files: usize = files.values().map(Vec::len).sum();
    assert_eq!(s.files as usize, n_files);
    assert!(n_files > 4, "small target size: several files a bucket");

    let mut o = load_opts(true);
    o.shards = Some(4);
    let mut db = Database::open_writer(dir.path().join("db")).unwrap();
    load(&mut db, "t", &inputs, &o).unwrap();
    drop(db);
    for b in 0..4u32 {
        let mut got: Vec<Row> = files[&format!("bucket={b:02}")]
            .iter()
            .flat_map(|f| parquet_rows(f))
            .collect();
        got.sort();
        let want = shard_rows(&dir.path().join("db"), "t", b);
        assert!(!want.is_empty());
        assert_eq!(got.len(), want.len(), "bucket {b}");
        assert!(got == want, "bucket {b}: other rows than shard {b}");
    }
    // The files say what they hold.
    let f = &files["bucket=02"][0];
    let meta = ParquetRecordBatchReaderBuilder::try_new(File::open(f).unwrap())
        .unwrap()
        .metadata()
        .clone();
    let kv: BTreeMap<String, String> = meta
        .file_metadata()
        .key_value_metadata()
        .unwrap()
        .iter()
        .map(|k| (k.key.clone(), k.value.clone().unwrap_or_default()))
        .collect();
    assert_eq!(kv["sluice.bucket"], "2/4 id");
    assert_eq!(kv["sluice.key"], "id");
    no_leftovers(dir.path());
}

/// Three files of 300 rows whose third file's line 200 repeats the key
/// of the first file's line 17; and that key.
fn planted_duplicate() -> (Vec<String>, String) {
    let mut parts: Vec<String> = (0..3).map(|i| rows(i * 300, 300)).collect();
    let first: Vec<&str> = parts[0].lines().collect();
    let dup_id = first[16].split(',').next().unwrap().to_string();
    let mut third: Vec<String> = parts[2].lines().map(str::to_string).collect();
    third[199] = format!("{dup_id},late,1.00,1");
    parts[2] = third.join("\n") + "\n";
    (parts, dup_id)
}

#[test]
fn duplicate_keys_in_different_files_are_named_by_file_and_line() {
    // Once with every key in memory, once with a run written per block
    // (a budget of one byte), so that the duplicate is found against an
    // earlier run.
    for budget in [None, Some(1)] {
        let dir = TempDir::new("convert-dup");
        let (parts, dup_id) = planted_duplicate();
        let inputs = write_parts(&dir, &parts);
        let out = dir.path().join("out");
        let mut o = load_opts(true);
        o.key_budget = budget;
        for buckets in [0, 3] {
            let e = convert(&inputs, &out, &o, &convert_opts(buckets)).unwrap_err();
            let Error::DuplicateKeyIn {
                key, first, second, ..
            } = &e
            else {
                panic!("{e}");
            };
            assert_eq!(key, &dup_id);
            assert!(first.ends_with("in-0.csv:17"), "{e}");
            assert!(second.ends_with("in-2.csv:200"), "{e}");
            assert!(!out.exists());
            no_leftovers(dir.path());
        }
    }
}

#[test]
fn a_null_key_is_named_by_file_and_line() {
    let dir = TempDir::new("convert-null");
    let mut text = rows(0, 50);
    text.push_str(",x,1.00,2\n");
    let inputs = write_parts(&dir, &[text]);
    let out = dir.path().join("out");
    let e = convert(&inputs, &out, &load_opts(true), &convert_opts(2)).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("in-0.csv:51") && msg.contains("NULL"), "{msg}");
    assert!(!out.exists());
    no_leftovers(dir.path());
}

#[test]
fn a_widened_type_starts_the_dataset_over() {
    let dir = TempDir::new("convert-widen");
    let mut text = String::new();
    for i in 0..3000 {
        text.push_str(&format!("{i},{}\n", if i == 2900 { "2.5" } else { "7" }));
    }
    let inputs = write_parts(&dir, &[text]);
    let out = dir.path().join("out");
    let o = LoadOptions {
        schema: Some("id BIGINT, v INT".parse().unwrap()),
        header: Header::No,
        block_size: Some(4096),
        widen: vec!["v".into()],
        ..LoadOptions::default()
    };
    let s = convert(&inputs, &out, &o, &convert_opts(0)).unwrap();
    assert_eq!(s.load.widened.len(), 1, "{:?}", s.load.widened);
    let files = dataset_files(&out);
    let all: Vec<Row> = files
        .values()
        .flatten()
        .flat_map(|f| parquet_rows(f))
        .collect();
    assert_eq!(all.len(), 3000, "no file of the first attempt is left");
    assert!(all.iter().any(|r| r[1].as_deref() == Some("2.5")));
    assert_eq!(
        s.files as usize,
        files.values().map(Vec::len).sum::<usize>()
    );
}

#[test]
fn bad_options_are_refused_before_anything_is_written() {
    let dir = TempDir::new("convert-bad");
    let inputs = write_parts(&dir, &[rows(0, 10)]);
    let out = dir.path().join("out");
    let e = convert(&inputs, &out, &load_opts(false), &convert_opts(4)).unwrap_err();
    assert!(e.to_string().contains("--key or --bucket-by"), "{e}");
    let mut c = convert_opts(4);
    c.bucket_by = Some("nope".into());
    let e = convert(&inputs, &out, &load_opts(false), &c).unwrap_err();
    assert!(e.to_string().contains("--bucket-by nope"), "{e}");
    let mut c = convert_opts(0);
    c.bucket_by = Some("grp".into());
    let e = convert(&inputs, &out, &load_opts(false), &c).unwrap_err();
    assert!(e.to_string().contains("needs --buckets"), "{e}");
    let e = convert(&inputs, &out, &load_opts(false), &convert_opts(1000)).unwrap_err();
    assert!(e.to_string().contains("at most 256"), "{e}");
    assert!(!out.exists());
    // An output that is a directory of something else stays untouched.
    std::fs::create_dir_all(out.join("mine")).unwrap();
    let e = convert(&inputs, &out, &load_opts(false), &convert_opts(0)).unwrap_err();
    assert!(e.to_string().contains("already exists"), "{e}");
    assert!(out.join("mine").is_dir());
    no_leftovers(dir.path());
}

#[test]
fn csv_and_json_lines_datasets_hold_every_row() {
    let dir = TempDir::new("convert-text");
    let text = rows(0, 700);
    let inputs = write_parts(&dir, std::slice::from_ref(&text));
    for format in [FileFormat::Csv, FileFormat::Jsonl] {
        let out = dir.path().join(format!("out-{}", format.extension()));
        let mut c = convert_opts(2);
        c.files.format = format;
        let mut o = load_opts(true);
        o.threads = Some(2);
        let s = convert(&inputs, &out, &o, &c).unwrap();
        assert_eq!(s.load.rows, 700);
        let mut lines = 0;
        for d in ["bucket=00", "bucket=01"] {
            for e in std::fs::read_dir(out.join(d)).unwrap() {
                let body = std::fs::read_to_string(e.unwrap().path()).unwrap();
                lines += body.lines().count();
                if format == FileFormat::Csv {
                    assert!(body.starts_with("id,grp,price,qty\n"), "{body}");
                    lines -= 1;
                } else {
                    assert!(body.starts_with("{\"id\":"), "{body}");
                }
            }
        }
        assert_eq!(lines, 700);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Whatever the buckets, threads and blocks: every row once, each in
    /// the bucket its id hashes to, and each file sequence in input order.
    #[test]
    fn every_row_once_in_its_bucket_in_input_order(
        n in 1u64..1500,
        files in 1usize..5,
        buckets in 0u32..7,
        threads in 1usize..5,
        block in 1024usize..9000,
    ) {
        let dir = TempDir::new("convert-prop");
        let per = n.div_ceil(files as u64);
        let parts: Vec<String> = (0..files as u64)
            .map(|i| rows(i * per, per.min(n.saturating_sub(i * per))))
            .collect();
        let inputs = write_parts(&dir, &parts);
        let out = dir.path().join("out");
        let mut o = load_opts(buckets > 1);
        o.threads = Some(threads);
        o.block_size = Some(block);
        let s = convert(&inputs, &out, &o, &convert_opts(buckets)).unwrap();
        prop_assert_eq!(s.load.rows, n);
        let want = input_rows(&parts.concat());
        let position: std::collections::HashMap<&Row, usize> =
            want.iter().enumerate().map(|(i, r)| (r, i)).collect();
        let mut seen = vec![false; want.len()];
        for ((d, stream), got) in streams(&out) {
            let mut last = None;
            for r in &got {
                let i = *position.get(r).expect("a row of the input");
                prop_assert!(!seen[i], "row {} twice", i);
                seen[i] = true;
                prop_assert!(last < Some(i), "{}/{} out of input order", d, stream);
                last = Some(i);
                if buckets > 1 {
                    let id: i64 = r[0].as_deref().unwrap().parse().unwrap();
                    let b = shards_of(&arrow_array::Int64Array::from(vec![id]), buckets).unwrap()[0];
                    prop_assert_eq!(d.clone(), format!("bucket={b:02}"));
                } else {
                    prop_assert_eq!(d.as_str(), "");
                }
            }
        }
        prop_assert!(seen.iter().all(|&s| s), "a row is missing");
    }
}

/// Two tasks of a distributed load, each converting its share of the
/// files into buckets of its own, their files then gathered bucket by
/// bucket: the per-bucket check finds a key both tasks wrote, and each
/// task's inputs locate its row by file and line.
#[test]
fn a_key_written_by_two_tasks_is_found_in_its_bucket_and_located() {
    use sluice::dataset::convert::{check_bucket, locate_key};
    let dir = TempDir::new("convert-tasks");
    let (parts, dup_id) = planted_duplicate();
    let inputs = write_parts(&dir, &parts);
    let shares = [&inputs[..2], &inputs[2..]];
    let o = load_opts(true);
    let merged = dir.path().join("merged");
    for (task, share) in shares.iter().enumerate() {
        let out = dir.path().join(format!("task-{task}"));
        let mut c = convert_opts(3);
        c.prefix = format!("part-{task:05}");
        convert(share, &out, &o, &c).unwrap();
        for b in 0..3 {
            let to = merged.join(format!("bucket={b:02}"));
            std::fs::create_dir_all(&to).unwrap();
            for e in std::fs::read_dir(out.join(format!("bucket={b:02}"))).unwrap() {
                let p = e.unwrap().path();
                std::fs::rename(&p, to.join(p.file_name().unwrap())).unwrap();
            }
        }
    }
    let key = sluice::index::encode_i64(dup_id.parse().unwrap());
    let home = sluice::partition::shard_of_key(&key, 3);
    for b in 0..3u32 {
        let found = check_bucket(&merged.join(format!("bucket={b:02}")), Some(2)).unwrap();
        if b != home {
            assert_eq!(found, None, "bucket {b}");
            continue;
        }
        let r = found.expect("the repeated key");
        assert_eq!(r.shown, dup_id);
        assert_eq!(r.key, key.to_vec());
        let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name(&r.first.0).starts_with("part-00000-"), "{r:?}");
        assert!(name(&r.second.0).starts_with("part-00001-"), "{r:?}");
        // The rows hold the key.
        for (f, row) in [&r.first, &r.second] {
            let rows = parquet_rows(f);
            assert_eq!(rows[*row as usize][0].as_deref(), Some(dup_id.as_str()));
        }
        let a = locate_key(shares[0], &o, &r.key).unwrap();
        let b2 = locate_key(shares[1], &o, &r.key).unwrap();
        assert_eq!(a.len(), 1, "{a:?}");
        assert!(a[0].ends_with("in-0.csv:17"), "{a:?}");
        assert_eq!(b2.len(), 1, "{b2:?}");
        assert!(b2[0].ends_with("in-2.csv:200"), "{b2:?}");
    }
}

/// With the check left to a later stage, a duplicate is written, and the
/// bucket's check finds it.
#[test]
fn a_key_left_unchecked_is_found_by_the_buckets_check() {
    use sluice::dataset::convert::check_bucket;
    let dir = TempDir::new("convert-unchecked");
    let (parts, dup_id) = planted_duplicate();
    let inputs = write_parts(&dir, &parts);
    let out = dir.path().join("out");
    let mut c = convert_opts(2);
    c.check_key = false;
    let s = convert(&inputs, &out, &load_opts(true), &c).unwrap();
    assert_eq!(s.load.rows, 900);
    let found: Vec<_> = (0..2)
        .filter_map(|b| check_bucket(&out.join(format!("bucket={b:02}")), None).unwrap())
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].shown, dup_id);
}

/// Loads the Parquet `files` into `table` the way `sluice load` does.
fn load_dataset(
    db: &Path,
    table: &str,
    files: &[PathBuf],
    shards: Option<u32>,
) -> sluice::Result<sluice::load::LoadSummary> {
    load_dataset_as(db, table, files, shards, None)
}

/// [`load_dataset`] into a new table of the columns `schema`.
fn load_dataset_as(
    db: &Path,
    table: &str,
    files: &[PathBuf],
    shards: Option<u32>,
    schema: Option<&str>,
) -> sluice::Result<sluice::load::LoadSummary> {
    use sluice::load::columnar::{Columnar, load_columnar, prepare_columnar};
    let inputs: Vec<Input> = files.iter().cloned().map(Input::File).collect();
    let req = sluice::load::LoadRequest {
        shards,
        schema: schema.map(str::to_string),
        // Loaded again, the files are read again (not skipped as loaded).
        reload: sluice::load::Reload::All,
        ..Default::default()
    };
    let plan = prepare_columnar(db, table, &inputs, Columnar::Parquet, &req)?;
    let opts = plan.options(&req)?;
    let mut d = Database::open_writer(db)?;
    load_columnar(&mut d, table, &plan, &opts)
}

#[test]
fn a_bucketed_dataset_loads_back_a_bucket_a_shard_without_rehashing() {
    let dir = TempDir::new("convert-load-back");
    let parts: Vec<String> = (0..5).map(|i| rows(i * 400, 400)).collect();
    let inputs = write_parts(&dir, &parts);
    let out = dir.path().join("out");
    convert(&inputs, &out, &load_opts(true), &convert_opts(4)).unwrap();
    let files: Vec<PathBuf> = dataset_files(&out).into_values().flatten().collect();
    // The reference: the text files loaded into 4 shards.
    let mut o = load_opts(true);
    o.shards = Some(4);
    let db = dir.path().join("db");
    let mut d = Database::open_writer(&db).unwrap();
    load(&mut d, "t", &inputs, &o).unwrap();
    drop(d);

    // No --shards: the new table gets a shard a bucket, by the key, and
    // every file goes to its bucket's shard whole.
    let s = load_dataset(&db, "back", &files, None).unwrap();
    assert_eq!(s.rows, 2000);
    assert_eq!(s.files_by_bucket as usize, files.len());
    let meta = Database::open(&db).unwrap().table("back").unwrap().clone();
    let sharding = meta.sharding.expect("a sharded table");
    assert_eq!(sharding.count, 4);
    assert_eq!(sharding.by.as_deref(), Some("id"));
    assert_eq!(meta.schema.key_column(), Some(0));
    for b in 0..4 {
        let got = shard_rows(&db, "back", b);
        assert!(!got.is_empty());
        assert!(got == shard_rows(&db, "t", b), "shard {b}");
    }
    // Loaded again into the same table: the keys are checked against
    // those of the table's shards.
    let e = load_dataset(&db, "back", &files, None).unwrap_err();
    assert!(e.to_string().contains("duplicate key"), "{e}");

    // Another shard count: the rows are routed by their hash.
    let s = load_dataset(&db, "two", &files, Some(2)).unwrap();
    assert_eq!(s.files_by_bucket, 0);
    let mut o = load_opts(true);
    o.shards = Some(2);
    let mut d = Database::open_writer(&db).unwrap();
    load(&mut d, "t2", &inputs, &o).unwrap();
    drop(d);
    for b in 0..2 {
        assert!(
            shard_rows(&db, "two", b) == shard_rows(&db, "t2", b),
            "shard {b}"
        );
    }
}

#[test]
fn a_file_whose_bucket_metadata_lies_is_refused() {
    use parquet::arrow::ArrowWriter;
    use parquet::file::metadata::KeyValue;
    use parquet::file::properties::WriterProperties;
    let dir = TempDir::new("convert-bucket-lies");
    let inputs = write_parts(&dir, &[rows(0, 800)]);
    let out = dir.path().join("out");
    convert(&inputs, &out, &load_opts(true), &convert_opts(4)).unwrap();
    let by_dir = dataset_files(&out);
    // Bucket 1's rows in a file that says it is bucket 0.
    let src = &by_dir["bucket=01"][0];
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(src).unwrap()).unwrap();
    let kv: Vec<KeyValue> = reader
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .unwrap()
        .iter()
        .map(|k| {
            if k.key == "sluice.bucket" {
                KeyValue::new(k.key.clone(), "0/4 id".to_string())
            } else {
                k.clone()
            }
        })
        .collect();
    let schema = reader.schema().clone();
    let liar = dir.path().join("liar.parquet");
    let props = WriterProperties::builder()
        .set_key_value_metadata(Some(kv))
        .build();
    let mut w = ArrowWriter::try_new(File::create(&liar).unwrap(), schema, Some(props)).unwrap();
    for b in reader.build().unwrap() {
        w.write(&b.unwrap()).unwrap();
    }
    w.close().unwrap();
    let db = dir.path().join("db");
    let e = load_dataset(&db, "t", &[liar], Some(4)).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("liar.parquet"), "{msg}");
    assert!(msg.contains("row group 1"), "{msg}");
    assert!(
        msg.contains("puts it in bucket 0 of 4, but a row's id belongs in bucket 1"),
        "{msg}"
    );
    // Nothing was committed.
    assert!(
        Database::open(&db)
            .map(|d| d.table("t").is_none())
            .unwrap_or(true)
    );
}

#[test]
fn buckets_hashed_as_another_type_are_hashed_again() {
    // The dataset hashed id as a BIGINT; a table whose id is TEXT hashes
    // the text: its shards are not the buckets.
    let dir = TempDir::new("convert-bucket-type");
    let parts: Vec<String> = (0..3).map(|i| rows(i * 300, 300)).collect();
    let inputs = write_parts(&dir, &parts);
    let out = dir.path().join("out");
    convert(&inputs, &out, &load_opts(true), &convert_opts(4)).unwrap();
    let files: Vec<PathBuf> = dataset_files(&out).into_values().flatten().collect();
    let text_id = "id TEXT PRIMARY KEY, grp TEXT, price DECIMAL(10,2), qty INT";
    let db = dir.path().join("db");
    let s = load_dataset_as(&db, "back", &files, Some(4), Some(text_id)).unwrap();
    assert_eq!((s.rows, s.files_by_bucket), (900, 0));
    let mut o = load_opts(true);
    o.schema = Some(text_id.parse().unwrap());
    o.shards = Some(4);
    let mut d = Database::open_writer(&db).unwrap();
    load(&mut d, "t", &inputs, &o).unwrap();
    drop(d);
    for b in 0..4 {
        let got = shard_rows(&db, "back", b);
        assert!(!got.is_empty());
        assert!(got == shard_rows(&db, "t", b), "shard {b}");
    }
}

#[test]
fn a_keyed_dataset_bucketed_by_another_column_loads_unsharded() {
    // Every bucket is there (qty has many values), so the dataset is whole.
    let dir = TempDir::new("convert-bucket-other");
    let inputs = write_parts(&dir, &[rows(0, 500)]);
    let out = dir.path().join("out");
    let c = ConvertOptions {
        bucket_by: Some("qty".into()),
        ..convert_opts(3)
    };
    convert(&inputs, &out, &load_opts(true), &c).unwrap();
    let by_dir = dataset_files(&out);
    assert_eq!(by_dir.len(), 3, "{:?}", by_dir.keys());
    let files: Vec<PathBuf> = by_dir.into_values().flatten().collect();
    let db = dir.path().join("db");
    let s = load_dataset(&db, "back", &files, None).unwrap();
    assert_eq!((s.rows, s.files_by_bucket), (500, 0));
    let meta = Database::open(&db).unwrap().table("back").unwrap().clone();
    assert!(meta.sharding.is_none());
    assert_eq!(meta.schema.key_column(), Some(0));
}
