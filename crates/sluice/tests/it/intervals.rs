//! INTERVAL as a stored column: read from PostgreSQL's text (never
//! inferred, never a key), refused where a file's text is not one,
//! exported as text that loads back to the same intervals, refused for
//! Parquet (no exact type) without writing a file. Query answers:
//! `intervals_stored.slt`.

use sluice::dataset::{ExportOptions, FileFormat, export_table};
use sluice::infer::{InferOptions, infer};
use sluice::load::{Header, LoadOptions};
use sluice::source::Input;
use sluice::store::Database;

use crate::common::{TempDir, load_bytes, opts, table_rows};

const CSV: &str = "id,iv\n\
1,1 year 2 mons 3 days 04:05:06.5\n\
2,-1 days +02:00:00\n\
3,\n\
4,@ 1 day ago\n\
5,-1.5 hours\n\
6,30 days\n";

#[test]
fn an_interval_is_read_as_postgresql_writes_it_and_never_guessed() {
    let dir = TempDir::new("iv");
    load_bytes(&dir, "s", CSV.as_bytes(), &opts("id INT, iv INTERVAL")).unwrap();
    let rows: Vec<Option<String>> = table_rows(&dir.path().join("db"), "s")
        .into_iter()
        .map(|r| r[1].clone())
        .collect();
    let want = [
        Some("1 year 2 mons 3 days 04:05:06.5"),
        Some("-1 days +02:00:00"),
        None,
        Some("-1 days"),
        Some("-01:30:00"),
        Some("30 days"),
    ];
    assert_eq!(rows, want.map(|v| v.map(str::to_string)));
    // Text that reads as an interval is text to inference: a guess of a
    // unit's meaning is not made.
    let f = dir.write("guess.csv", CSV.as_bytes());
    let inf = infer(&[Input::File(f)], &InferOptions::default()).unwrap();
    assert_eq!(inf.schema.to_string(), "id BIGINT, iv TEXT");
    // Equal intervals of other fields (1 mon, 30 days) would be two keys.
    let e = "iv INTERVAL PRIMARY KEY"
        .parse::<sluice::batch::Schema>()
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot be a key"), "{e}");
}

#[test]
fn text_that_is_no_interval_fails_the_load_at_its_line_and_column() {
    for (bad, why) in [
        ("a fortnight", "invalid input syntax for type interval"),
        ("2 fortnights", "invalid input syntax for type interval"),
        ("999999999 years", "interval"),
    ] {
        let dir = TempDir::new("iv-bad");
        let csv = format!("id,iv\n1,1 day\n2,{bad}\n");
        let err = load_bytes(
            &dir,
            "s",
            csv.as_bytes(),
            &LoadOptions {
                header: Header::Yes,
                ..opts("id INT, iv INTERVAL")
            },
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("s-input.csv:3: column 2 (iv)"), "{bad}: {err}");
        assert!(err.contains(why), "{bad}: {err}");
    }
}

#[test]
fn intervals_export_as_text_that_loads_back_and_parquet_is_refused() {
    let dir = TempDir::new("iv-export");
    load_bytes(&dir, "s", CSV.as_bytes(), &opts("id INT, iv INTERVAL")).unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    let pq = dir.path().join("s.parquet");
    let e = export_table(&db, "s", &pq, &ExportOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("column iv") && e.contains("--format csv"), "{e}");
    assert!(!pq.exists(), "a refused export leaves no file");
    let csv = dir.path().join("s-csv");
    export_table(
        &db,
        "s",
        &csv,
        &ExportOptions {
            format: FileFormat::Csv,
            header: false,
            ..ExportOptions::default()
        },
    )
    .unwrap();
    drop(db);
    let mut text = Vec::new();
    for f in std::fs::read_dir(&csv).unwrap() {
        let f = f.unwrap().path();
        if f.extension().is_some_and(|e| e == "csv") {
            text.extend(std::fs::read(f).unwrap());
        }
    }
    let back = TempDir::new("iv-back");
    let o = LoadOptions {
        header: Header::No,
        ..opts("id INT, iv INTERVAL")
    };
    load_bytes(&back, "s", &text, &o).unwrap();
    let sorted = |d: &TempDir| {
        let mut r = table_rows(&d.path().join("db"), "s");
        r.sort();
        r
    };
    assert_eq!(sorted(&back), sorted(&dir));
}
