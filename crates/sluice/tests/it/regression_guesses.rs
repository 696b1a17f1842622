//! Files that the dialect heuristics once loaded silently wrong (each
//! as it was found, on real files nobody here wrote), now loaded right
//! or refused with the option that decides. Each test failed on the
//! heuristics before they learnt to refuse.

use sluice::infer::{InferOptions, Inferred, infer};
use sluice::load::{Header, LoadOptions, load};
use sluice::source::Input;
use sluice::store::Database;

use crate::common::{TempDir, table_rows};

type Rows = Vec<Vec<Option<String>>>;

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

/// Infers the schema of one file holding `data` and loads it: what was
/// inferred and the rows, or the error of either step.
fn guess(name: &str, data: &[u8]) -> Result<(Inferred, Rows), String> {
    let dir = TempDir::new("regression-guesses");
    guess_files(&dir, &[(name, data)])
}

/// [`guess`] of several files in `dir`, loaded as one table.
fn guess_files(dir: &TempDir, files: &[(&str, &[u8])]) -> Result<(Inferred, Rows), String> {
    let inputs: Vec<Input> = files
        .iter()
        .map(|(n, d)| Input::File(dir.write(n, d)))
        .collect();
    let inf = infer(&inputs, &InferOptions::default()).map_err(|e| e.to_string())?;
    let db_dir = dir.path().join(format!("db-{}", files[0].0));
    let mut db = Database::open_writer(&db_dir).unwrap();
    load(
        &mut db,
        "t",
        &inputs,
        &inf.load_options(LoadOptions::default()),
    )
    .map_err(|e| e.to_string())?;
    drop(db);
    Ok((inf, table_rows(&db_dir, "t")))
}

fn names(inf: &Inferred) -> Vec<&str> {
    inf.schema.columns.iter().map(|c| c.name.as_str()).collect()
}

#[test]
fn quoted_values_holding_commas_are_one_column() {
    // Read with a comma and no quote: `"Dec 8` and ` 2022"`.
    let (inf, rows) = guess("dates.csv", b"\"Dec 8, 2022\"\n\"Sep 26, 2022\"\n").unwrap();
    assert_eq!(inf.dialect.quote, Some(b'"'));
    assert_eq!(rows, vec![vec![s("Dec 8, 2022")], vec![s("Sep 26, 2022")]]);
    // Tab with quotes, not comma without (the README's order).
    let (inf, rows) = guess(
        "names.txt",
        b"\"1\"\t\"ABBOTT, AMELIA\"\t\"x\"\n\"2\"\t\"BAKER, BOB\"\t\"y\"\n",
    )
    .unwrap();
    assert_eq!((inf.delimiter, inf.dialect.quote), (b'\t', Some(b'"')));
    assert_eq!(
        rows,
        vec![
            vec![s("1"), s("ABBOTT, AMELIA"), s("x")],
            vec![s("2"), s("BAKER, BOB"), s("y")]
        ]
    );
}

#[test]
fn one_column_of_names_with_spaces_is_not_split() {
    // Split at the space, with `name` a header one short.
    let (inf, rows) = guess("n.csv", b"name\nJohn Smith\nJane Doe\nBob Jones\n").unwrap();
    assert_eq!(names(&inf), ["name"]);
    assert_eq!(
        rows,
        vec![
            vec![s("John Smith")],
            vec![s("Jane Doe")],
            vec![s("Bob Jones")]
        ]
    );
    // A column of timestamps under its name: split at the space into a
    // date and a time before, with the name dropped as a note (or the
    // load failing at line 1), whether the file is read whole or sampled.
    for n in [3, 40_000] {
        let mut data = b"col1\n".to_vec();
        for i in 0..n {
            data.extend_from_slice(
                format!("2020-12-{:02} 01:25:{:02}\n", 1 + i % 28, i % 60).as_bytes(),
            );
        }
        let (inf, rows) = guess("ts.csv", &data).unwrap();
        assert_eq!(inf.schema.to_string(), "col1 TIMESTAMP", "{n} rows");
        assert_eq!(rows.len(), n);
        assert_eq!(rows[0], vec![s("2020-12-01 01:25:00")]);
    }
}

#[test]
fn a_title_above_a_csv_is_a_note_not_a_header() {
    // Taken for R's header one name short: `c1,report_title`, and
    // `id,name` loaded as a row.
    let (inf, rows) = guess("r.csv", b"Report title\nid,name\n1,a\n2,b\n3,c\n").unwrap();
    assert_eq!((inf.notes, inf.header), (1, true));
    assert_eq!(names(&inf), ["id", "name"]);
    assert_eq!(rows.len(), 3);
}

#[test]
fn comment_lines_never_cost_the_header() {
    // The notes heuristic dropped `x,y,z` with the comment below it.
    let (inf, rows) = guess("c.csv", b"x,y,z\n# c\n1,2,3\n4,5,6\n7,8,9\n").unwrap();
    assert_eq!(names(&inf), ["x", "y", "z"]);
    assert_eq!(inf.notes, 0);
    assert_eq!(rows.len(), 3);
    // Several comment lines among the records.
    let (inf, rows) = guess(
        "cc.csv",
        b"x,y,z\n# comment\n1,2,3\n# comment\n# comment\n4,5,6\n",
    )
    .unwrap();
    assert_eq!(names(&inf), ["x", "y", "z"]);
    assert_eq!(
        rows,
        vec![vec![s("1"), s("2"), s("3")], vec![s("4"), s("5"), s("6")]]
    );
    // A comment that holds the delimiter, among typed records.
    let (inf, rows) = guess("cd.csv", b"x,y\n1,2\n# totals, below\n3,4\n5,6\n").unwrap();
    assert_eq!(inf.dialect.comment, Some(b'#'));
    assert_eq!(rows.len(), 3);
}

#[test]
fn a_tsv_with_quotes_as_data_is_a_table() {
    let (inf, rows) = guess(
        "q.tsv",
        b"a\tb\nhe said \"hi\"\tx\n\"quoted\" start\ty\nend \"q\"\tz\n",
    )
    .unwrap();
    assert_eq!((inf.delimiter, inf.dialect.quote), (b'\t', None));
    assert_eq!(names(&inf), ["a", "b"]);
    assert_eq!(rows[1], vec![s("\"quoted\" start"), s("y")]);
}

#[test]
fn a_word_over_yes_and_no_is_no_header_beside_numbers() {
    // Read as a header (`c1,x`), losing a row.
    let (inf, rows) = guess("yn.csv", b"1,x\n2,y\n3,n\n4,y\n").unwrap();
    assert!(!inf.header);
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0], vec![s("1"), s("x")]);
}

#[test]
fn r_write_csv_headers_are_headers() {
    // A header alone: one row of names before.
    let (inf, rows) = guess("h.csv", b"\"\",\"friends\",\"advice\"\n").unwrap();
    assert!(inf.header);
    assert_eq!(names(&inf), ["c1", "friends", "advice"]);
    assert!(rows.is_empty());
    // Quoted names over a quoted row number and text.
    let (inf, rows) = guess(
        "t.csv",
        b"\"\",\"nonEnglish\",\"English\"\n\"1\",\"C_rdenas\",\"Cardenas\"\n",
    )
    .unwrap();
    assert!(inf.header);
    assert_eq!(rows, vec![vec![s("1"), s("C_rdenas"), s("Cardenas")]]);
    // Quoted numbers over bare numbers.
    let (inf, rows) = guess(
        "n.csv",
        b"\"\",\"1\",\"2\",\"3\"\n\"1\",50,19,26\n\"2\",40,18,20\n",
    )
    .unwrap();
    assert!(inf.header);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0], vec![s("1"), s("50"), s("19"), s("26")]);
}

#[test]
fn refusals_name_the_option_that_decides() {
    // A word over numbers beside a number over numbers.
    let e = guess("y.csv", b"id,2019\n1,5\n2,6\n").unwrap_err();
    assert!(e.contains("--header or --no-header"), "{e}");
    // Two delimiters that split every record alike, nothing to tell
    // which.
    let e = guess("p.txt", b"x,y;z\nu,v;w\n").unwrap_err();
    assert!(e.contains("--delimiter"), "{e}");
    // ... where a comma in prose (`Mar 24, 2006`) tells: the pipe.
    let (inf, rows) = guess("p.txt", b"Hanoi|Mar 24, 2006\nQuito|Jul 12, 2001\n").unwrap();
    assert_eq!(inf.delimiter, b'|');
    assert_eq!(rows[0], vec![s("Hanoi"), s("Mar 24, 2006")]);
    // A title line that splits like the records above a header.
    let e = guess(
        "t.csv",
        b"Sales by city, 2024\nscore,owner\n1,2\n3,4\n5,6\n",
    )
    .unwrap_err();
    assert!(e.contains("a title?") && e.contains("--header"), "{e}");
    // A `#` line that splits like records of text: comment or data?
    let e = guess(
        "h.csv",
        b"name,city\nAda Lovelace,Paris\n# a note, not data\nBob Jones,Rome\nCleo Smith,Oslo\nDmitri Berg,Lima\n",
    )
    .unwrap_err();
    assert!(e.contains("--comment '#'"), "{e}");
}

#[test]
fn a_header_in_another_order_is_refused_on_append() {
    let dir = TempDir::new("regression-guesses-order");
    let db_dir = dir.path().join("db");
    let first = [Input::File(dir.write("ab.csv", b"a,b\n1,x\n2,y\n"))];
    let inf = infer(&first, &InferOptions::default()).unwrap();
    let mut db = Database::open_writer(&db_dir).unwrap();
    load(
        &mut db,
        "t",
        &first,
        &inf.load_options(LoadOptions::default()),
    )
    .unwrap();
    // Appended by position before: the header as a row, the values in
    // each other's columns.
    let other = [Input::File(dir.write("ba.csv", b"b,a\nz,3\n"))];
    let o = LoadOptions {
        schema: Some(inf.schema.clone()),
        ..LoadOptions::default()
    };
    let e = load(&mut db, "t", &other, &o).unwrap_err().to_string();
    assert!(e.contains("--match-by-name"), "{e}");
    let by_name = LoadOptions {
        match_by_name: true,
        header: Header::Auto,
        ..o
    };
    load(&mut db, "t", &other, &by_name).unwrap();
    drop(db);
    assert_eq!(
        table_rows(&db_dir, "t"),
        vec![
            vec![s("1"), s("x")],
            vec![s("2"), s("y")],
            vec![s("3"), s("z")]
        ]
    );
}

/// Found by trying to break the heuristics with files written for it
/// (each loaded wrong before the fix that follows it).
#[test]
fn tables_split_at_spaces_of_any_length_are_tables() {
    // Space-separated pairs: 801 lines loaded right, 802 as one column
    // (the share of typed fields was taken over 200 records against
    // all 1000).
    for n in [50, 802, 1000] {
        let data: String = (0..n)
            .map(|i| format!("{:.2} {:.4}\n", i as f64 * 0.01, (i * i) as f64 * 0.0001))
            .collect();
        let (inf, rows) = guess("xy.txt", data.as_bytes()).unwrap();
        assert_eq!(inf.schema.columns.len(), 2, "{n} lines: {}", inf.schema);
        assert_eq!(rows.len(), n);
    }
}

#[test]
fn files_that_start_otherwise_than_the_first_are_right_or_refused() {
    let dir = TempDir::new("regression-guesses-files");
    let run = |files: &[(&str, &str)]| -> Result<Rows, String> {
        let files: Vec<(&str, &[u8])> = files.iter().map(|(n, d)| (*n, d.as_bytes())).collect();
        guess_files(&dir, &files).map(|(_, rows)| rows)
    };
    // A file split in parts: only the first has the header, and every
    // part's first row is kept (it was skipped as a header).
    let rows = run(&[
        ("p0.csv", "id,name\n1,a\n2,b\n"),
        ("p1.csv", "3,c\n4,d\n"),
        ("p2.csv", "5,e\n"),
    ])
    .unwrap();
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[2], vec![s("3"), s("c")]);
    // Notes above the first file's table only: refused (the second
    // lost its first row as a header before).
    let e = run(&[
        ("n0.csv", "Sales report\na,b\n1,2\n3,4\n"),
        ("n1.csv", "a,b\n5,6\n7,8\n"),
    ])
    .unwrap_err();
    assert!(e.contains("not alike"), "{e}");
    // No header in the first file, a header in the second: refused (it
    // was loaded as a row).
    let e = run(&[("h0.csv", "1,2\n3,4\n"), ("h1.csv", "a,b\n5,6\n")]).unwrap_err();
    assert!(e.contains("line of names"), "{e}");
}

#[test]
fn one_column_headers_are_not_taken_for_notes_or_row_names() {
    // `date` was dropped as a note and the values split at the comma;
    // `amount` was shifted over R-style row names 1, 2, 12.
    for data in [
        &b"date\nDec 8, 2022\nJan 15, 2023\nFeb 1, 2023\n"[..],
        b"amount\n1,000\n2,500\n12,750\n",
        b"id,name,score\n1,Smith, John,5\n2,Doe, Jane,6\n",
    ] {
        let e = guess("c.csv", data).unwrap_err();
        assert!(e.contains("expected 2") || e.contains("expected 4"), "{e}");
    }
    let (inf, rows) = guess("d.txt", b"duration\n5 min\n10 min\n15 min\n").unwrap();
    assert_eq!(names(&inf), ["duration"]);
    assert_eq!(rows[0], vec![s("5 min")]);
    // A placeholder over numbers is no name.
    let (inf, rows) = guess("p.csv", b"-,-\n1,2\n3,4\n").unwrap();
    assert!(!inf.header);
    assert_eq!(rows.len(), 3);
}

#[test]
fn hash_lines_are_comments_by_their_words_and_data_by_their_numbers() {
    // `#12` is a ticket number: data (3 of 4 rows were dropped as
    // comments).
    let (inf, rows) = guess(
        "t.csv",
        b"ticket,title,votes\n#12,Fix bug,3\n#13,Add feature,5\n#14,Docs,1\n15,Tests,2\n",
    )
    .unwrap();
    assert_eq!(inf.dialect.comment, None);
    assert_eq!(rows.len(), 4);
    // Words where the records have numbers: a comment holding the
    // delimiter.
    let (inf, rows) = guess("c.csv", b"x,y\n1,2\n# totals, below\n3,4\n5,6\n").unwrap();
    assert_eq!(inf.dialect.comment, Some(b'#'));
    assert_eq!(rows.len(), 3);
}

#[test]
fn aligned_columns_and_quotes_over_lines_are_refused_not_misread() {
    // One column of whole lines before.
    let e = guess(
        "a.txt",
        b"city        pop\nNew York    8.4\nParis       2.1\nRome        2.8\n",
    )
    .unwrap_err();
    assert!(e.contains("--delimiter whitespace"), "{e}");
    // Two records merged into one by a quote that is data.
    let e = guess(
        "q.tsv",
        b"id\ttext\tn\n1\t\"Hello\t5\n2\tworld\"\t6\n3\tfine\t7\n4\tok\t8\n",
    )
    .unwrap_err();
    assert!(e.contains("--quote"), "{e}");
}

#[test]
fn excels_sep_line_names_the_delimiter() {
    // Refused before (the `sep=;` line taken for a title over a header).
    let (inf, rows) = guess("x.csv", b"sep=;\na;b\n1;2,5\n3;4,5\n").unwrap();
    assert_eq!((inf.delimiter, inf.notes, inf.header), (b';', 1, true));
    assert_eq!(names(&inf), ["a", "b"]);
    assert_eq!(rows, vec![vec![s("1"), s("2,5")], vec![s("3"), s("4,5")]]);
}
