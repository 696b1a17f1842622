//! `sluice load`: a value that contradicts an inferred type in a file the
//! samples missed widens the type, and the load starts over and says so;
//! given types, and types an earlier commit of the load made final, fail.
//!
//! Inference samples 16 files spread over the inputs, the first and the
//! last included: of 20 files, `f04.csv`, `f09.csv`, `f14.csv` and
//! `f18.csv` are not sampled, so their values are ones the samples
//! missed, however much of a file inference reads.

use crate::{Tmp, fails, ok, sluice};

const FILES: usize = 20;
const ROWS: usize = 100;

/// Writes `f00.csv` .. `f19.csv`, each a header `id,<header>` and `ROWS`
/// rows; the fields after the id of row `i` of file `f` are
/// `value(f, i)`. Returns the file names.
fn write_files(t: &Tmp, header: &str, value: impl Fn(usize, usize) -> String) -> Vec<String> {
    (0..FILES)
        .map(|f| {
            let name = format!("f{f:02}.csv");
            let mut data = format!("id,{header}\n");
            for i in 0..ROWS {
                data.push_str(&format!("{},{}\n", f * ROWS + i, value(f, i)));
            }
            t.write(&name, data.as_bytes());
            name
        })
        .collect()
}

/// `sluice load` with `args`, then the files.
fn load_args<'a>(args: &[&'a str], files: &'a [String]) -> Vec<&'a str> {
    let mut all = vec!["load"];
    all.extend_from_slice(args);
    all.extend(files.iter().map(String::as_str));
    all
}

/// Integers, and `5.75` at line 52 of `f04.csv`.
fn prices(t: &Tmp) -> Vec<String> {
    write_files(t, "price", |f, i| {
        if f == 4 && i == 50 {
            "5.75".into()
        } else {
            (f * ROWS + i).to_string()
        }
    })
}

#[test]
fn late_decimal_in_an_inferred_bigint_column_widens() {
    let t = Tmp::new();
    let files = prices(&t);
    let plan = ok(&t.0, &load_args(&["--dry-run", "t"], &files));
    assert!(
        plan.ends_with("--schema \"id BIGINT, price BIGINT\"\n"),
        "{plan}"
    );
    let out = ok(&t.0, &load_args(&["t"], &files));
    assert!(
        out.contains(
            "\nwidened column price BIGINT → DECIMAL(18,2) at f04.csv line 52 (\"5.75\"); the load started over\n"
        ),
        "{out}"
    );
    let info = ok(&t.0, &["info", "t"]);
    assert!(
        info.contains("  price                    DECIMAL(18,2)\n"),
        "{info}"
    );
    assert_eq!(
        ok(
            &t.0,
            &[
                "query",
                "select id, price from t where id in (449, 450) order by id"
            ]
        ),
        "id,price\n449,449.00\n450,5.75\n"
    );
    // The JSON summary lists it.
    let json = ok(&t.0, &load_args(&["--json", "t2"], &files));
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(
        v["widened"],
        serde_json::json!([{
            "column": "price",
            "from": "BIGINT",
            "to": "DECIMAL(18,2)",
            "path": "f04.csv",
            "line": 52,
            "value": "5.75",
        }])
    );
}

#[test]
fn late_text_in_an_inferred_decimal_column_widens_to_text() {
    let t = Tmp::new();
    let files = write_files(&t, "q", |f, i| {
        if f == 9 && i == 10 {
            "n/a".into()
        } else {
            format!("{}.25", i % 7)
        }
    });
    let out = ok(&t.0, &load_args(&["t"], &files));
    assert!(
        out.contains(
            "\nwidened column q DECIMAL(18,2) → TEXT at f09.csv line 12 (\"n/a\"); the load started over\n"
        ),
        "{out}"
    );
    // Every value as written, the header once.
    let mut want = String::from("id,q\n");
    for f in &files {
        let text = std::fs::read_to_string(t.0.join(f)).unwrap();
        want.extend(text.split_inclusive('\n').skip(1));
    }
    assert_eq!(ok(&t.0, &["export", "t"]), want);
}

#[test]
fn given_types_still_fail() {
    let t = Tmp::new();
    let files = prices(&t);
    let byte = std::fs::read_to_string(t.0.join("f04.csv"))
        .unwrap()
        .find("\n450,5.75")
        .unwrap()
        + 5;
    let o = sluice(&t.0, &load_args(&["--types", "price=BIGINT", "t"], &files));
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.ends_with(&format!(
            "error: loading table t; nothing was committed: f04.csv:52: column 2 (price): invalid BIGINT value \"5.75\": not an integer (byte {byte})\nhint: price is BIGINT, given by --types; load it with --types price=TEXT (or another type), or give the whole --schema\n"
        )),
        "{e}"
    );
    let e = fails(
        &t.0,
        &load_args(&["--schema", "id BIGINT, price BIGINT", "t"], &files),
    );
    assert_eq!(
        e,
        format!(
            "error: loading table t; nothing was committed: f04.csv:52: column 2 (price): invalid BIGINT value \"5.75\": not an integer (byte {byte})\n"
        )
    );
    assert!(!sluice(&t.0, &["info", "t"]).status.success());
}

#[test]
fn widening_after_a_committed_group_fails_with_a_hint() {
    let t = Tmp::new();
    let files = prices(&t);
    let byte = std::fs::read_to_string(t.0.join("f04.csv"))
        .unwrap()
        .find("\n450,5.75")
        .unwrap()
        + 5;
    let e = fails(
        &t.0,
        &load_args(&["-q", "--commit-every", "1files", "t"], &files),
    );
    assert_eq!(
        e,
        format!(
            "error: loading table t: f04.csv:52: column 2 (price): invalid BIGINT value \"5.75\": not an integer (byte {byte}) (4 of 20 files were committed before this, with column price BIGINT as inferred from samples; a type is widened only before a load's first commit: load the files into a new table with --types price=DECIMAL(18,2) (or a larger --commit-every), or give the whole --schema)\n"
        )
    );
    let info = ok(&t.0, &["info", "t"]);
    assert!(info.starts_with("t: 400 rows,"), "{info}");
    assert!(
        info.contains("  price                    BIGINT\n"),
        "{info}"
    );
    // The hint works.
    ok(
        &t.0,
        &load_args(
            &[
                "-q",
                "--commit-every",
                "1files",
                "--types",
                "price=DECIMAL(18,2)",
                "t2",
            ],
            &files,
        ),
    );
    assert_eq!(
        ok(&t.0, &["query", "select count(*), sum(price) from t2"]),
        format!(
            "count(*),sum(price)\n{},{}.75\n",
            FILES * ROWS,
            (0..FILES * ROWS).sum::<usize>() - 450 + 5
        )
    );
}

/// Cells equal as numbers when both read as numbers (`7` and `7.00`),
/// else as text.
fn same_value(got: &str, want: &str) -> bool {
    match (got.parse::<f64>(), want.parse::<f64>()) {
        (Ok(a), Ok(b)) => a == b,
        _ => got == want,
    }
}

#[test]
fn widened_load_keeps_every_row() {
    // Several columns contradicted in the files the samples miss, one of
    // them twice.
    let t = Tmp::new();
    let files = write_files(&t, "a,b,c,d", |f, i| {
        let n = f * ROWS + i;
        let a = match (f, i) {
            (4, 30) => "5.75".to_string(),
            (14, 60) => "0.125".to_string(),
            _ => n.to_string(),
        };
        let b = if (f, i) == (9, 5) {
            "x1".to_string()
        } else {
            (n * 7).to_string()
        };
        let c = if (f, i) == (18, 99) {
            "2024-02-30".to_string()
        } else {
            format!("2024-01-{:02}", n % 28 + 1)
        };
        let d = if n.is_multiple_of(10) {
            String::new()
        } else {
            format!("{n}.5")
        };
        format!("{a},{b},{c},{d}")
    });
    let mut input = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(t.0.join(f)).unwrap();
        input.extend(text.lines().skip(1).map(str::to_string));
    }
    for threads in ["1", "3"] {
        for block_size in ["300", "4KiB", "1MiB"] {
            let table = format!("t{threads}_{}", block_size.to_lowercase());
            let out = ok(
                &t.0,
                &load_args(
                    &["--threads", threads, "--block-size", block_size, &table],
                    &files,
                ),
            );
            let widened: Vec<&str> = out.lines().filter(|l| l.starts_with("widened")).collect();
            assert_eq!(
                widened,
                [
                    "widened column a BIGINT → DECIMAL(18,2) at f04.csv line 32 (\"5.75\"); the load started over",
                    "widened column b BIGINT → TEXT at f09.csv line 7 (\"x1\"); the load started over",
                    "widened column a DECIMAL(18,2) → DECIMAL(18,3) at f14.csv line 62 (\"0.125\"); the load started over",
                    "widened column c DATE → TEXT at f18.csv line 101 (\"2024-02-30\"); the load started over",
                ],
                "threads {threads}, block size {block_size}"
            );
            let export = ok(&t.0, &["export", &table]);
            let mut lines = export.lines();
            assert_eq!(lines.next(), Some("id,a,b,c,d"));
            let rows: Vec<&str> = lines.collect();
            assert_eq!(rows.len(), input.len());
            for (got, want) in rows.iter().zip(&input) {
                assert!(
                    got.split(',')
                        .zip(want.split(','))
                        .all(|(g, w)| same_value(g, w))
                        && got.split(',').count() == want.split(',').count(),
                    "{got} for {want}, threads {threads}, block size {block_size}"
                );
            }
        }
    }
}

#[test]
fn a_file_that_widens_many_columns_lists_ten_and_counts_the_rest() {
    // 30 columns, each contradicted late (line 52 of f04.csv, a file the
    // samples miss): 30 widenings, 10 listed.
    let t = Tmp::new();
    let header: Vec<String> = (0..30).map(|c| format!("v{c}")).collect();
    let files = write_files(&t, &header.join(","), |f, i| {
        (0..30)
            .map(|c| {
                if f == 4 && i == 50 {
                    "5.75".to_string()
                } else {
                    (i * c).to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(",")
    });
    let out = ok(&t.0, &load_args(&["t"], &files));
    let listed = out
        .lines()
        .filter(|l| l.starts_with("widened column v"))
        .count();
    assert_eq!(listed, 10, "{out}");
    assert!(
        out.contains(
            "\nwidened column v0 BIGINT → DECIMAL(18,2) at f04.csv line 52 (\"5.75\"); the load started over\n"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "\nand 20 more widenings; 30 columns widened in all (--json lists every one)\n"
        ),
        "{out}"
    );
    let json = ok(&t.0, &load_args(&["--json", "t2"], &files));
    assert_eq!(json.matches("\"column\":").count(), 30, "{json}");
}
