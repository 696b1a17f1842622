//! A value that contradicts an inferred type late in a file (one the
//! samples missed) widens the type and the load starts over, before its
//! first commit; given types, and types a commit made final, still fail.
//!
//! Inference samples the first input only here (`max_files: 1`): a short
//! `head.csv` of ordinary rows, so that the values of the input after it
//! are values the samples missed, however much of a file inference reads.

use std::path::PathBuf;

use sluice::batch::{DataType, ValueOptions};
use sluice::infer::{InferOptions, Inferred, infer};
use sluice::load::{CommitEvery, LoadOptions, LoadSummary, Widening, load};
use sluice::parse::Dialect;
use sluice::source::Input;
use sluice::store::Database;

use crate::common::{TempDir, table_rows};

/// Rows of the generated files.
const ROWS: usize = 3000;

/// Rows of `head.csv`, the file inference samples.
const HEAD: usize = 20;

/// Infers the schema of `files` (from the first) with `types` given, as
/// a first load does, and loads them with the inferred columns checked
/// and widened.
fn first_load(
    files: &[PathBuf],
    types: &[(&str, DataType)],
    db_dir: &std::path::Path,
    tweak: impl FnOnce(&mut LoadOptions),
) -> (Inferred, sluice::Result<LoadSummary>) {
    let inputs: Vec<Input> = files.iter().cloned().map(Input::File).collect();
    let inf = infer(
        &inputs,
        &InferOptions {
            max_files: 1,
            types: types.iter().map(|(n, t)| (n.to_string(), *t)).collect(),
            ..InferOptions::default()
        },
    )
    .unwrap();
    let mut o = LoadOptions {
        schema: Some(inf.schema.clone()),
        dialect: Dialect {
            delimiter: inf.delimiter,
            ..Dialect::default()
        },
        header: sluice::load::Header::Yes,
        values: ValueOptions {
            exact: inf.exact.clone(),
            ..ValueOptions::default()
        },
        widen: inf.widen.clone(),
        ..LoadOptions::default()
    };
    tweak(&mut o);
    let mut db = Database::open_writer(db_dir).unwrap();
    let got = load(&mut db, "t", &inputs, &o);
    (inf, got)
}

/// `ROWS` lines of `id,<column>`: the value of row `i` is `late(i)` or
/// else `usual(i)`.
fn column_file(
    header: &str,
    usual: impl Fn(usize) -> String,
    late: impl Fn(usize) -> Option<&'static str>,
) -> Vec<u8> {
    let mut data = format!("id,{header}\n");
    for i in 0..ROWS {
        let v = late(i).map_or_else(|| usual(i), str::to_string);
        data.push_str(&format!("{i},{v}\n"));
    }
    data.into_bytes()
}

/// The inputs of a load of `data`: `head.csv`, its header and first
/// `HEAD` rows, which inference samples, then `in.csv`, all of it.
fn inputs(dir: &TempDir, data: &[u8]) -> Vec<PathBuf> {
    let text = String::from_utf8_lossy(data);
    let head: String = text.split_inclusive('\n').take(HEAD + 1).collect();
    vec![
        dir.write("head.csv", head.as_bytes()),
        dir.write("in.csv", data),
    ]
}

/// The table's column types, as text.
fn types_of(db_dir: &std::path::Path) -> String {
    Database::open(db_dir)
        .unwrap()
        .table("t")
        .unwrap()
        .schema
        .to_string()
}

fn widening(column: &str, from: &str, to: &str, path: &str, line: u64, value: &str) -> Widening {
    Widening {
        column: column.into(),
        from: from.parse().unwrap(),
        to: to.parse().unwrap(),
        path: path.into(),
        line,
        value: value.into(),
    }
}

#[test]
fn late_decimal_in_an_inferred_bigint_column_widens() {
    let dir = TempDir::new("widen-decimal");
    let data = column_file(
        "price",
        |i| i.to_string(),
        |i| (i == 1000).then_some("5.75"),
    );
    let files = inputs(&dir, &data);
    let f = &files[1];
    let db_dir = dir.path().join("db");
    let (inf, got) = first_load(&files, &[], &db_dir, |_| {});
    // The samples missed the value: price was inferred BIGINT.
    assert_eq!(inf.schema.to_string(), "id BIGINT, price BIGINT");
    let s = got.unwrap();
    assert_eq!(
        s.widened,
        vec![widening(
            "price",
            "BIGINT",
            "DECIMAL(18,2)",
            &f.display().to_string(),
            1002,
            "5.75"
        )]
    );
    assert_eq!(
        s.widened[0].to_string(),
        format!(
            "widened column price BIGINT → DECIMAL(18,2) at {} line 1002 (\"5.75\")",
            f.display()
        )
    );
    assert_eq!(s.rows, (HEAD + ROWS) as u64);
    assert_eq!(s.commits, 1);
    assert_eq!(types_of(&db_dir), "id BIGINT, price DECIMAL(18,2)");
    let rows = table_rows(&db_dir, "t");
    assert_eq!(rows.len(), HEAD + ROWS);
    assert_eq!(rows[HEAD + 999][1].as_deref(), Some("999.00"));
    assert_eq!(rows[HEAD + 1000][1].as_deref(), Some("5.75"));
}

#[test]
fn late_text_in_an_inferred_decimal_column_widens_to_text() {
    let dir = TempDir::new("widen-text");
    let data = column_file(
        "q",
        |i| format!("{}.25", i % 100),
        |i| (i == 1100).then_some("n/a"),
    );
    let files = inputs(&dir, &data);
    let f = &files[1];
    let db_dir = dir.path().join("db");
    let (inf, got) = first_load(&files, &[], &db_dir, |_| {});
    assert_eq!(inf.schema.to_string(), "id BIGINT, q DECIMAL(18,2)");
    let s = got.unwrap();
    assert_eq!(
        s.widened,
        vec![widening(
            "q",
            "DECIMAL(18,2)",
            "TEXT",
            &f.display().to_string(),
            1102,
            "n/a"
        )]
    );
    assert_eq!(types_of(&db_dir), "id BIGINT, q TEXT");
    // Every value as written.
    let rows = table_rows(&db_dir, "t");
    let text = String::from_utf8(data).unwrap();
    let values = text
        .lines()
        .skip(1)
        .map(|l| Some(l.split_once(',').unwrap().1.to_string()));
    let want: Vec<Option<String>> = values.clone().take(HEAD).chain(values).collect();
    let got: Vec<Option<String>> = rows.into_iter().map(|r| r[1].clone()).collect();
    assert_eq!(got, want);
}

#[test]
fn given_types_still_fail() {
    let data = column_file(
        "price",
        |i| i.to_string(),
        |i| (i == 1000).then_some("5.75"),
    );
    let byte = String::from_utf8_lossy(&data).find("\n1000,5.75").unwrap() + 6;
    // Given by `types` (--types): not widened.
    let dir = TempDir::new("widen-given");
    let files = inputs(&dir, &data);
    let f = &files[1];
    let db_dir = dir.path().join("db");
    let (inf, got) = first_load(&files, &[("price", DataType::BigInt)], &db_dir, |_| {});
    assert_eq!(inf.widen, vec!["id".to_string()]);
    let want = format!(
        "{}:1002: column 2 (price): invalid BIGINT value \"5.75\": not an integer (byte {byte})",
        f.display()
    );
    assert_eq!(got.unwrap_err().to_string(), want);
    assert!(Database::open(&db_dir).unwrap().table("t").is_none());
    // A whole schema given: nothing to widen.
    let (_, got) = first_load(&files, &[], &db_dir, |o| o.widen.clear());
    assert_eq!(got.unwrap_err().to_string(), want);
    // A table that exists keeps its types, also when a caller names the
    // column to widen.
    let plain = dir.write(
        "plain.csv",
        &column_file("price", |i| i.to_string(), |_| None),
    );
    let (_, got) = first_load(&[plain], &[], &db_dir, |o| o.widen.clear());
    got.unwrap();
    let (_, got) = first_load(&files, &[], &db_dir, |o| {
        o.schema = None;
        o.widen = vec!["price".into()];
    });
    assert_eq!(got.unwrap_err().to_string(), want);
    assert_eq!(types_of(&db_dir), "id BIGINT, price BIGINT");
}

#[test]
fn widening_after_a_committed_group_fails_with_a_hint() {
    let dir = TempDir::new("widen-committed");
    let first = dir.write("a.csv", &column_file("v", |i| i.to_string(), |_| None));
    let data = column_file("v", |i| i.to_string(), |i| (i == 1000).then_some("4.5"));
    let byte = String::from_utf8_lossy(&data).find("\n1000,4.5").unwrap() + 6;
    let second = dir.write("b.csv", &data);
    let db_dir = dir.path().join("db");
    let (inf, got) = first_load(&[first, second.clone()], &[], &db_dir, |o| {
        o.commit_every = CommitEvery {
            files: Some(1),
            ..CommitEvery::ONCE
        };
    });
    assert_eq!(inf.schema.to_string(), "id BIGINT, v BIGINT");
    assert_eq!(
        got.unwrap_err().to_string(),
        format!(
            "{}:1002: column 2 (v): invalid BIGINT value \"4.5\": not an integer (byte {byte}) (1 of 2 files were committed before this, with column v BIGINT as inferred from samples; a type is widened only before a load's first commit: load the files into a new table with --types v=DECIMAL(18,1) (or a larger --commit-every), or give the whole --schema)",
            second.display()
        )
    );
    // The first file is committed, with the type it was loaded with.
    assert_eq!(types_of(&db_dir), "id BIGINT, v BIGINT");
    assert_eq!(table_rows(&db_dir, "t").len(), ROWS);
}

/// Cells equal as numbers when both read as numbers (`600` and
/// `600.00`), else as text.
fn same_value(got: &Option<String>, want: &str) -> bool {
    match (got.as_deref(), want) {
        (None, "") => true,
        (Some(g), w) => match (g.parse::<f64>(), w.parse::<f64>()) {
            (Ok(a), Ok(b)) => a == b,
            _ => g == w,
        },
        _ => false,
    }
}

#[test]
fn widened_load_keeps_every_row() {
    // Several columns contradicted, one of them twice, at lines the
    // samples miss (start, middle and end of the file are sampled).
    let mut data = String::from("id,a,b,c,d,e\n");
    for i in 0..ROWS {
        let a = match i {
            900 => "5.75".to_string(),
            2100 => "0.125".to_string(),
            _ => i.to_string(),
        };
        let b = if i == 1000 {
            "x1".into()
        } else {
            (i * 7).to_string()
        };
        let c = if i == 1100 {
            "2024-02-30".into()
        } else {
            format!("2024-01-{:02}", i % 28 + 1)
        };
        let d = if i == 2200 {
            "2.5e-7".into()
        } else {
            format!("{i}.5")
        };
        let e = if i % 10 == 0 {
            String::new()
        } else {
            i.to_string()
        };
        data.push_str(&format!("{i},{a},{b},{c},{d},{e}\n"));
    }
    let rows_in = data
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect::<Vec<_>>());
    let want: Vec<Vec<String>> = rows_in.clone().take(HEAD).chain(rows_in).collect();
    for threads in [1, 4] {
        for block_size in [Some(64), Some(1000), Some(7000), None] {
            let dir = TempDir::new("widen-rows");
            let files = inputs(&dir, data.as_bytes());
            let f = &files[1];
            let db_dir = dir.path().join("db");
            let (inf, got) = first_load(&files, &[], &db_dir, |o| {
                o.threads = Some(threads);
                o.block_size = block_size;
            });
            assert_eq!(
                inf.schema.to_string(),
                "id BIGINT, a BIGINT, b BIGINT, c DATE, d DECIMAL(18,1), e BIGINT"
            );
            let s = got.unwrap();
            let path = f.display().to_string();
            assert_eq!(
                s.widened,
                vec![
                    widening("a", "BIGINT", "DECIMAL(18,2)", &path, 902, "5.75"),
                    widening("b", "BIGINT", "TEXT", &path, 1002, "x1"),
                    widening("c", "DATE", "TEXT", &path, 1102, "2024-02-30"),
                    widening("a", "DECIMAL(18,2)", "DECIMAL(18,3)", &path, 2102, "0.125"),
                    widening("d", "DECIMAL(18,1)", "DOUBLE", &path, 2202, "2.5e-7"),
                ],
                "threads {threads}, block size {block_size:?}"
            );
            assert_eq!(s.rows, (HEAD + ROWS) as u64);
            assert_eq!(
                types_of(&db_dir),
                "id BIGINT, a DECIMAL(18,3), b TEXT, c TEXT, d DOUBLE, e BIGINT"
            );
            let rows = table_rows(&db_dir, "t");
            assert_eq!(rows.len(), HEAD + ROWS);
            for (r, (got, want)) in rows.iter().zip(&want).enumerate() {
                assert!(
                    got.iter().zip(want).all(|(g, w)| same_value(g, w)),
                    "row {r}: {got:?} for {want:?}, threads {threads}, block size {block_size:?}"
                );
            }
        }
    }
}

#[test]
fn a_wide_file_contradicted_late_in_many_columns_widens_them_all() {
    // 300 columns, each contradicted at a line of its own, some twice:
    // read again once a column this took minutes on a real file of 6,830
    // columns; one probe of the file finds them all. The result must be
    // what widening one column at a time gives.
    const COLS: usize = 300;
    let header: Vec<String> = (0..COLS).map(|c| format!("v{c}")).collect();
    let mut data = format!("id,{}\n", header.join(","));
    for i in 0..ROWS {
        let row: Vec<String> = (0..COLS)
            .map(|c| match i {
                // Column c gets a decimal at line 100 + c and, for every
                // third column, a word at line 1000 + c.
                _ if i == 100 + c => "1.25".to_string(),
                _ if c % 3 == 0 && i == 1000 + c => "many".to_string(),
                _ => (i * c).to_string(),
            })
            .collect();
        data.push_str(&format!("{i},{}\n", row.join(",")));
    }
    for block_size in [Some(4096), None] {
        let dir = TempDir::new("widen-wide");
        let files = inputs(&dir, data.as_bytes());
        let path = files[1].display().to_string();
        let db_dir = dir.path().join("db");
        let (_, got) = first_load(&files, &[], &db_dir, |o| {
            o.threads = Some(2);
            o.block_size = block_size;
        });
        let s = got.unwrap();
        assert_eq!(s.rows, (HEAD + ROWS) as u64);
        // Every column widened to DECIMAL, every third again to TEXT, in
        // input order (line 2 is the file's first row: row i is line i+2).
        let mut want: Vec<(usize, Widening)> = Vec::new();
        for c in 0..COLS {
            let name = format!("v{c}");
            want.push((
                100 + c,
                widening(
                    &name,
                    "BIGINT",
                    "DECIMAL(18,2)",
                    &path,
                    102 + c as u64,
                    "1.25",
                ),
            ));
            if c % 3 == 0 {
                want.push((
                    1000 + c,
                    widening(
                        &name,
                        "DECIMAL(18,2)",
                        "TEXT",
                        &path,
                        1002 + c as u64,
                        "many",
                    ),
                ));
            }
        }
        want.sort_by_key(|(row, _)| *row);
        let want: Vec<Widening> = want.into_iter().map(|(_, w)| w).collect();
        assert_eq!(s.widened, want, "block size {block_size:?}");
        let types: Vec<String> = (0..COLS)
            .map(|c| {
                let t = if c % 3 == 0 { "TEXT" } else { "DECIMAL(18,2)" };
                format!("v{c} {t}")
            })
            .collect();
        assert_eq!(
            types_of(&db_dir),
            format!("id BIGINT, {}", types.join(", "))
        );
        // Values as written: a row with a widened value, and one without.
        let rows = table_rows(&db_dir, "t");
        let r = &rows[HEAD + 103];
        assert_eq!(r[4].as_deref(), Some("1.25"));
        assert_eq!(r[5].as_deref(), Some("412.00"));
        assert_eq!(rows[HEAD + 1003][4].as_deref(), Some("many"));
    }
}
