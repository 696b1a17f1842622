//! Inference tries the dialects real files use (no quote, spaces around
//! quoted fields, a space delimiter, runs of whitespace, a backslash
//! escape), finds notes above a table, reads small files whole, samples
//! compressed ones beyond their start, and says what broke each dialect
//! when none reads a file.

use std::io::Write;

use proptest::prelude::*;

use sluice::batch::DataType;
use sluice::infer::{InferOptions, Inferred, infer};
use sluice::load::{Header, LoadOptions, load};
use sluice::parse::{Dialect, Split};
use sluice::source::Input;
use sluice::store::Database;

use crate::common::{TempDir, load_bytes, opts, table_rows};

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

/// Loads `inputs` with what inference says of them (as the binary does),
/// with `block_size` when given; the rows read back, or the error.
fn load_inferred(
    dir: &TempDir,
    table: &str,
    inputs: &[Input],
    inf: &Inferred,
    block_size: Option<usize>,
) -> Result<Vec<Vec<Option<String>>>, String> {
    let o = inf.load_options(LoadOptions {
        block_size,
        ..LoadOptions::default()
    });
    let db_dir = dir.path().join("db");
    let mut db = Database::open_writer(&db_dir).unwrap();
    match load(&mut db, table, inputs, &o) {
        Ok(_) => Ok(table_rows(&db_dir, table)),
        Err(e) => Err(e.to_string()),
    }
}

/// Infers the schema of one file holding `data`, and loads it.
fn infer_and_load(name: &str, data: &[u8]) -> (Inferred, Result<Vec<Vec<Option<String>>>, String>) {
    let dir = TempDir::new("regression-dialects");
    let inputs = [Input::File(dir.write(name, data))];
    let inf = infer(&inputs, &InferOptions::default()).unwrap();
    let rows = load_inferred(&dir, "t", &inputs, &inf, None);
    (inf, rows)
}

#[test]
fn stray_quote_in_unquoted_tsv_field() {
    let (inf, rows) = infer_and_load(
        "tv.tsv",
        b"id\tname\tsize\n1\tTV\t5\" screen\n2\tradio\tsmall\n3\t\"best\" deal\t7\"\n",
    );
    assert_eq!(inf.delimiter, b'\t');
    assert_eq!(inf.dialect.quote, None);
    assert!(inf.header);
    assert_eq!(inf.schema.to_string(), "id BIGINT, name TEXT, size TEXT");
    assert_eq!(
        rows.unwrap(),
        vec![
            vec![s("1"), s("TV"), s("5\" screen")],
            vec![s("2"), s("radio"), s("small")],
            vec![s("3"), s("\"best\" deal"), s("7\"")],
        ]
    );
    // A quoted file whose quoting breaks is not read as unquoted: the
    // quotes would be kept as text. The load says where it breaks.
    let (inf, rows) = infer_and_load("q.csv", b"a;b\n\"1\";\"x\"y\n\"2\";\"z\"\n");
    assert_eq!(
        inf.dialect,
        Dialect {
            delimiter: b';',
            ..Dialect::default()
        }
    );
    let e = rows.unwrap_err();
    assert!(
        e.ends_with(
            "q.csv:2: column 2 (b): unexpected 'y' after a closing quote (expected a delimiter or the end of the line) (byte 11)"
        ),
        "{e}"
    );
}

#[test]
fn space_before_quoted_fields() {
    let (inf, rows) = infer_and_load(
        "scores.csv",
        b"\"Year\", \"Score\", \"Note\"\n\"2020\", \"5.5\", \"a, b\"\n\"2021\", \"7\",  plain \n",
    );
    assert_eq!(inf.delimiter, b',');
    assert!(inf.dialect.trim_around_quotes);
    assert_eq!(inf.dialect.quote, Some(b'"'));
    assert_eq!(
        inf.schema.to_string(),
        "year BIGINT, score DECIMAL(18,1), note TEXT"
    );
    assert_eq!(
        rows.unwrap(),
        vec![
            vec![s("2020"), s("5.5"), s("a, b")],
            vec![s("2021"), s("7.0"), s("  plain ")],
        ]
    );
    // Below comment lines a tool wrote.
    let (inf, rows) = infer_and_load(
        "noted.csv",
        b"# exported by a tool\n\"Year\", \"Score\"\n\"2020\", \"5\"\n",
    );
    assert!(inf.dialect.trim_around_quotes);
    assert_eq!(inf.leading_comment, Some(b'#'));
    assert_eq!(rows.unwrap(), vec![vec![s("2020"), s("5")]]);
}

#[test]
fn spaces_around_quoted_fields_split_exactly_at_every_block_size() {
    // Quoted fields after spaces, with delimiters, doubled quotes and
    // newlines inside: every block size reads the same rows.
    let mut data = b"\"id\", \"text\"\n".to_vec();
    let mut want = Vec::new();
    for i in 0..300 {
        let text = match i % 4 {
            0 => format!("line {i},\nnext \"\"q\"\""),
            1 => format!("{i}"),
            2 => String::new(),
            _ => format!("a, \"\"b\"\"\n\nc {i}"),
        };
        data.extend_from_slice(format!("{i},  \"{text}\" \n").as_bytes());
        want.push(vec![s(&i.to_string()), s(&text.replace("\"\"", "\""))]);
    }
    let dir = TempDir::new("regression-dialects-blocks");
    let inputs = [Input::File(dir.write("in.csv", &data))];
    let inf = infer(&inputs, &InferOptions::default()).unwrap();
    assert!(inf.dialect.trim_around_quotes);
    assert_eq!(inf.schema.to_string(), "id BIGINT, text TEXT");
    for (k, block) in [64, 100, 333, 4096, 1 << 20].into_iter().enumerate() {
        let rows = load_inferred(&dir, &format!("t{k}"), &inputs, &inf, Some(block));
        assert_eq!(rows.as_ref(), Ok(&want), "block size {block}");
    }
}

#[test]
fn space_delimited_file() {
    let (inf, rows) = infer_and_load("s.txt", b"x y label\n1 2.5 a\n3 4 b\n-5 6 c\n");
    assert_eq!(inf.delimiter, b' ');
    assert_eq!(
        inf.schema.to_string(),
        "x BIGINT, y DECIMAL(18,1), label TEXT"
    );
    assert_eq!(
        rows.unwrap(),
        vec![
            vec![s("1"), s("2.5"), s("a")],
            vec![s("3"), s("4.0"), s("b")],
            vec![s("-5"), s("6.0"), s("c")],
        ]
    );
    // Columns aligned by runs of spaces split at each run.
    let (inf, rows) = infer_and_load("aligned.txt", b"name  age\nada   36\nbob    7\n");
    assert_eq!(inf.schema.to_string(), "name TEXT, age BIGINT");
    assert_eq!(inf.dialect.split, Split::Whitespace);
    assert_eq!(
        rows.unwrap(),
        vec![vec![s("ada"), s("36")], vec![s("bob"), s("7")]]
    );
    // Words in a one-column file do not make a space-delimited one.
    let (inf, _) = infer_and_load("w.txt", b"title\nHello world\nGood bye now\n");
    assert_eq!(inf.schema.to_string(), "title TEXT");
}

#[test]
fn backslash_escapes_are_detected() {
    let (inf, rows) = infer_and_load(
        "esc.csv",
        b"id,text\n1,\"say \\\"hi\\\", then go\"\n2,\"plain, text\"\n3,\"back\\\\slash\"\n",
    );
    assert_eq!(inf.dialect.escape, Some(b'\\'));
    assert_eq!(inf.schema.to_string(), "id BIGINT, text TEXT");
    assert_eq!(
        rows.unwrap(),
        vec![
            vec![s("1"), s("say \"hi\", then go")],
            vec![s("2"), s("plain, text")],
            vec![s("3"), s("back\\slash")],
        ]
    );
    // A backslash before a closing quote, read with doubled quotes, is
    // text: no escape is assumed where the default reads the file.
    let (inf, rows) = infer_and_load("path.csv", b"id,path\n1,\"C:\\dir\\\"\n2,\"x\"\n");
    assert_eq!(inf.dialect.escape, None);
    assert_eq!(
        rows.unwrap(),
        vec![vec![s("1"), s("C:\\dir\\")], vec![s("2"), s("x")]]
    );
}

#[test]
fn exponents_in_a_decimal_looking_column() {
    // 300 KB: more than one 256 KiB sample; the exponent is on the last line.
    let mut data = b"id,price\n".to_vec();
    let mut i = 0;
    while data.len() < 300_000 {
        data.extend_from_slice(format!("{i},{}.25\n", i % 1000).as_bytes());
        i += 1;
    }
    data.extend_from_slice(format!("{i},1e3\n").as_bytes());
    let (inf, rows) = infer_and_load("prices.csv", &data);
    assert_eq!(inf.schema.to_string(), "id BIGINT, price DOUBLE");
    let rows = rows.unwrap();
    assert_eq!(rows[0], vec![s("0"), s("0.25")]);
    assert_eq!(rows.last().unwrap(), &vec![s(&i.to_string()), s("1000")]);
    // A DECIMAL column takes exponent notation when it is exact at the scale.
    let dir = TempDir::new("regression-dialects-decimal");
    load_bytes(&dir, "d", b"1e3\n1.5E2\n-25e-2\n", &opts("v DECIMAL(10,2)")).unwrap();
    assert_eq!(
        table_rows(&dir.path().join("db"), "d"),
        vec![vec![s("1000.00")], vec![s("150.00")], vec![s("-0.25")]]
    );
    let e = load_bytes(&dir, "e", b"1.234e-1\n", &opts("v DECIMAL(10,2)"))
        .unwrap_err()
        .to_string();
    assert!(
        e.ends_with(
            "e-input.csv:1: column 1 (v): invalid DECIMAL(10,2) value \"1.234e-1\": has 4 decimal places, more than the scale 2 (values are never rounded) (byte 0)"
        ),
        "{e}"
    );
}

#[test]
fn numbers_beyond_bigint_in_the_sample() {
    // Past the first 256 KiB of a small file.
    let mut data = b"id,n\n".to_vec();
    let mut i = 0;
    while data.len() < 400_000 {
        data.extend_from_slice(format!("{i},{}\n", i * 7).as_bytes());
        i += 1;
    }
    data.extend_from_slice(format!("{i},22193816997618274304\n").as_bytes());
    let (inf, rows) = infer_and_load("big.csv", &data);
    assert_eq!(inf.schema.to_string(), "id BIGINT, n TEXT");
    assert_eq!(
        rows.unwrap().last().unwrap(),
        &vec![s(&i.to_string()), s("22193816997618274304")]
    );
    // In the sample: TEXT, never a rounded DOUBLE.
    let (inf, rows) = infer_and_load("one.csv", b"n\n1\n22193816997618274304\n");
    assert_eq!(inf.schema.to_string(), "n TEXT");
    assert_eq!(
        rows.unwrap(),
        vec![vec![s("1")], vec![s("22193816997618274304")]]
    );
}

#[test]
fn small_file_is_sampled_whole() {
    // 6,000 records of about 70 bytes (400 KB); a value on the last
    // records contradicts the types of the first 3,600.
    let mut data = b"id,amount,day,flag\n".to_vec();
    for i in 0..6000 {
        let amount = if i == 5998 {
            "n/a".to_string()
        } else {
            format!("{}", i * 3)
        };
        let day = if i == 5999 {
            "soon".to_string()
        } else {
            format!("2024-01-{:02}", 1 + i % 28)
        };
        data.extend_from_slice(
            format!("{i},{amount},{day},padding-to-make-the-record-about-70-bytes-{i:08}\n")
                .as_bytes(),
        );
    }
    assert!(data.len() > 400_000);
    let (inf, rows) = infer_and_load("late.csv", &data);
    assert_eq!(
        inf.schema.to_string(),
        "id BIGINT, amount TEXT, day TEXT, flag TEXT"
    );
    assert_eq!((inf.samples, inf.records_sampled), (1, 6000));
    let rows = rows.unwrap();
    assert_eq!(rows.len(), 6000);
    assert_eq!(rows[5998][1], s("n/a"));
    assert_eq!(rows[5999][2], s("soon"));
    assert_eq!(rows[0][1], s("0"));
}

/// `data` compressed with gzip.
fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[test]
fn gzip_is_sampled_beyond_its_first_block() {
    // 1 MB of text, an integer column that holds a word near the end.
    let mut data = b"id,v\n".to_vec();
    let mut i = 0;
    while data.len() < 1_000_000 {
        data.extend_from_slice(format!("{i},{}\n", i % 97).as_bytes());
        i += 1;
    }
    data.extend_from_slice(format!("{i},none\n").as_bytes());
    let dir = TempDir::new("regression-dialects-gzip");
    let inputs = [Input::File(dir.write("in.csv.gz", &gzip(&data)))];
    let inf = infer(&inputs, &InferOptions::default()).unwrap();
    assert_eq!(inf.schema.to_string(), "id BIGINT, v TEXT");
    assert_eq!(inf.samples, 1, "read whole");
    let rows = load_inferred(&dir, "t", &inputs, &inf, None).unwrap();
    assert_eq!(rows.len(), i + 1);
    assert_eq!(rows[i], vec![s(&i.to_string()), s("none")]);
    // Longer than read whole: the start, middle and end of what was read.
    let o = InferOptions {
        sample_bytes: 64 << 10,
        whole_bytes: 512 << 10,
        read_ahead_bytes: 512 << 10,
        ..InferOptions::default()
    };
    let mut late = data[..500_000].to_vec();
    late.extend_from_slice(b"1,2.5\n");
    late.extend_from_slice(&data[500_000..]);
    let inputs = [Input::File(dir.write("late.csv.gz", &gzip(&late)))];
    let inf = infer(&inputs, &o).unwrap();
    assert_eq!(inf.samples, 3);
    assert_eq!(
        inf.schema.columns[1].data_type,
        DataType::Decimal {
            precision: 18,
            scale: 1
        },
        "the value in the end chunk of the first 512 KiB is seen"
    );
}

#[test]
fn inference_failure_names_each_dialect_and_line() {
    let dir = TempDir::new("regression-dialects-fail");
    let f = dir.write("bad.csv", b"\"a\"b,c\nd,\"e,f\"\n");
    let e = infer(&[Input::File(f)], &InferOptions::default())
        .unwrap_err()
        .to_string();
    let e = e.replace(&format!("{}/", dir.path().display()), "");
    assert_eq!(
        e,
        "bad.csv: no records to infer a schema from: no dialect reads its first records (tried \
         comma, tab, pipe, semicolon, space, whitespace with quote '\"': line 1, column 4: unexpected 'b' after a closing quote (expected a delimiter or the end of the line); \
         comma, tab, pipe, semicolon with quote '\"', spaces around quoted fields trimmed: line 1, column 4: unexpected 'b' after a closing quote (expected a delimiter or the end of the line); \
         comma with quote none: line 2: the delimiter inside a quoted field; \
         tab, pipe, semicolon, space, whitespace with quote none: one field per record); \
         give --delimiter, --quote or --schema"
    );
}

#[test]
fn columns_aligned_by_runs_of_whitespace() {
    // Indents, runs of spaces and tabs, spaces at a line's end, a line of
    // only spaces, and a quoted field holding spaces (as astropy and
    // NIST write tables).
    let data =
        b"  obsid    offset   name          oaa  \n   \n  3102     0.32    \"Source 82\"   9\n\
        \t877\t 0.22    Q1250+568-B   12.5  \n";
    let (inf, rows) = infer_and_load("t.txt", data);
    assert_eq!(inf.dialect.split, Split::Whitespace);
    assert!(inf.header);
    assert_eq!(
        inf.schema.to_string(),
        "obsid BIGINT, offset DECIMAL(18,2), name TEXT, oaa DECIMAL(18,1)"
    );
    assert_eq!(
        rows.unwrap(),
        vec![
            vec![s("3102"), s("0.32"), s("Source 82"), s("9.0")],
            vec![s("877"), s("0.22"), s("Q1250+568-B"), s("12.5")],
        ]
    );
    // Every block size cuts the same records.
    let mut data = b"id    value   label\n".to_vec();
    let mut want = Vec::new();
    for i in 0..300 {
        let pad = " ".repeat(i % 5 + 1);
        data.extend_from_slice(format!("{pad}{i}{pad}\t{}  x{i}{pad}\n", i * 3).as_bytes());
        want.push(vec![
            s(&i.to_string()),
            s(&(i * 3).to_string()),
            s(&format!("x{i}")),
        ]);
    }
    let dir = TempDir::new("regression-whitespace-blocks");
    let inputs = [Input::File(dir.write("in.txt", &data))];
    let inf = infer(&inputs, &InferOptions::default()).unwrap();
    assert_eq!(inf.dialect.split, Split::Whitespace);
    for (k, block) in [32, 77, 1000, 1 << 20].into_iter().enumerate() {
        let rows = load_inferred(&dir, &format!("t{k}"), &inputs, &inf, Some(block));
        assert_eq!(rows.as_ref(), Ok(&want), "block size {block}");
    }
}

#[test]
fn notes_above_the_table_are_skipped() {
    // A title, a description and a blank line above a CSV header.
    let (inf, rows) = infer_and_load(
        "notes.csv",
        b"Series Id:    LNS14000000Q\nSeries title: (Seas) Unemployment Rate\n\nyear,period,value\n1959,Q01,5.8\n1959,Q02,5.1\n1959,Q03,5.3\n",
    );
    assert_eq!((inf.notes, inf.skip), (3, 3));
    assert!(inf.header);
    assert_eq!(
        inf.schema.to_string(),
        "year BIGINT, period TEXT, value DECIMAL(18,1)"
    );
    assert_eq!(rows.unwrap().len(), 3);
    // A count line above headerless data (as scikit-learn ships them).
    let (inf, rows) = infer_and_load(
        "counts.csv",
        b"4,2,class_0,class_1\n14.23,0\n13.2,1\n13.16,0\n14.37,1\n",
    );
    assert_eq!(inf.notes, 1);
    assert!(!inf.header);
    assert_eq!(rows.unwrap()[0], vec![s("14.23"), s("0")]);
    // Prose above columns aligned by spaces, with a line of words that
    // splits like the data above the header (NIST and JMulTi files).
    let (inf, rows) = infer_and_load(
        "nist.dat",
        b"NIST/ITL StRD\nDataset Name:  Norris (Norris.dat)\n\nFile Format:   ASCII\n               Certified Values (lines 31 to 46)\n               Data            (lines 61 to 96)\n\n\
          Procedure:     Linear Least Squares Regression\nReference:     Norris, J., NIST.\n               Calibration of Ozone Monitors.\n\n\
          Data:          1 Response Variable (y)\n               1 Predictor Variable (x)\n               36 Observations\n<1960 Q1>\n  y      x\n 0.1    0.2\n 338.8  337.4\n 118.1  118.2\n",
    );
    assert_eq!(inf.dialect.split, Split::Whitespace);
    assert_eq!(inf.notes, 15);
    assert_eq!(inf.schema.to_string(), "y DECIMAL(18,1), x DECIMAL(18,1)");
    assert_eq!(rows.unwrap().len(), 3);
    // A line of notes with as many words as the table has columns, and
    // a line of words that splits like the data above its header.
    let (inf, rows) = infer_and_load(
        "e1.dat",
        b"/*quarterly figures, seasonally adjusted,\nin billions, 1960Q1-1961Q4;\n*/\n<1960 Q1>\ninvest     income     cons\n180         451       415\n179         465       421\n",
    );
    assert_eq!((inf.notes, inf.header), (4, true));
    assert_eq!(
        inf.schema.to_string(),
        "invest BIGINT, income BIGINT, cons BIGINT"
    );
    assert_eq!(rows.unwrap().len(), 2);
    // With --skip given, no notes are looked for.
    let dir = TempDir::new("regression-notes-given");
    let f = dir.write("n.csv", b"title\nnote here\na,b\n1,2\n3,4\n5,6\n");
    let o = InferOptions {
        skip: 2,
        detect_notes: false,
        ..InferOptions::default()
    };
    let inf = infer(&[Input::File(f)], &o).unwrap();
    assert_eq!((inf.notes, inf.skip), (0, 2));
}

#[test]
fn a_bad_record_near_the_top_is_not_taken_for_notes() {
    // Records above the bad one split like the table: the load fails
    // at the bad record, none is skipped.
    let (inf, rows) = infer_and_load("bad.csv", b"a,b\n1,2\n3,4,5\n6,7\n8,9\n10,11\n");
    assert_eq!(inf.notes, 0);
    let e = rows.unwrap_err();
    assert!(
        e.contains(":3: found a record with 3 fields, expected 2"),
        "{e}"
    );
    // Right below the header: the header splits like the records.
    let (inf, rows) = infer_and_load("bad2.csv", b"a,b\n1,2,3\n4,5\n6,7\n8,9\n");
    assert_eq!(inf.notes, 0);
    assert!(
        rows.unwrap_err()
            .contains(":2: found a record with 3 fields, expected 2")
    );
}

#[test]
fn headers_one_field_off_their_records() {
    // R's write.table: no name over the row names, space-delimited.
    let (inf, rows) = infer_and_load(
        "scotvote.dat",
        b"\"Males\" \"Females\"\n\"Aberdeen_City\" 100 96\n\"Angus\" 50 52\n\"Fife\" 7 9\n",
    );
    assert!(inf.header);
    assert_eq!(
        inf.schema.to_string(),
        "c1 TEXT, males BIGINT, females BIGINT"
    );
    assert_eq!(rows.unwrap()[1], vec![s("Angus"), s("50"), s("52")]);
    // The same as CSV, over quoted row numbers.
    let (inf, rows) = infer_and_load(
        "dietox.csv",
        b"\"Weight\",\"Feed\"\n\"1\",26.5,NA\n\"2\",27.5,5.2\n\"3\",36.5,17.6\n",
    );
    assert!(inf.header);
    assert_eq!(inf.schema.columns[1].name, "weight");
    assert_eq!(rows.unwrap().len(), 3);
    // A delimiter after the header's last name.
    let (inf, rows) = infer_and_load("trail.csv", b"id,year,value,\nx,1959,5.8\ny,1960,5.1\n");
    assert_eq!(
        inf.schema.to_string(),
        "id TEXT, year BIGINT, value DECIMAL(18,1)"
    );
    assert_eq!(rows.unwrap()[1], vec![s("y"), s("1960"), s("5.1")]);
}

#[test]
fn rows_shorter_than_the_header_end_in_nulls() {
    // Forecasts: most rows leave the last columns off.
    let (inf, rows) = infer_and_load(
        "forecast.csv",
        b"date,cpi,predict,stderr\n1950:1,28.98\n1950:2,29.15,29.848\n1950:3,29.35\n1950:4,29.37\n1951:1,29.37,29.9,0.5\n",
    );
    assert!(inf.fill_missing);
    assert_eq!(
        rows.unwrap(),
        vec![
            vec![s("1950:1"), s("28.98"), None, None],
            vec![s("1950:2"), s("29.15"), s("29.848"), None],
            vec![s("1950:3"), s("29.35"), None, None],
            vec![s("1950:4"), s("29.37"), None, None],
            vec![s("1951:1"), s("29.37"), s("29.900"), s("0.5")],
        ]
    );
    // One short row among full ones is an error, as before.
    let (inf, rows) = infer_and_load("short.csv", b"a,b,c\n1,2,3\n4,5\n6,7,8\n");
    assert!(!inf.fill_missing);
    assert!(
        rows.unwrap_err()
            .contains("found a record with 2 fields, expected 3")
    );
}

#[test]
fn text_that_is_not_a_table_loads_one_line_a_row() {
    // A program's report: a title line, then lines that a pipe splits
    // in two, then a closing line.
    let data = b"*** Sat 3 Sep 2016 ***\n\nd(Dp)(t-1)|   -0.515\n          |   (0.153)\n\nsummary of 2 terms\n";
    let (inf, rows) = infer_and_load("report.txt", data);
    assert_eq!(inf.dialect.split, Split::Line);
    assert!(!inf.header);
    assert_eq!(inf.schema.to_string(), "c1 TEXT");
    assert_eq!(
        rows.unwrap(),
        vec![
            vec![s("*** Sat 3 Sep 2016 ***")],
            vec![s("d(Dp)(t-1)|   -0.515")],
            vec![s("          |   (0.153)")],
            vec![s("summary of 2 terms")],
        ]
    );
    // A one-column file stays one: its header and quoting as before.
    let (inf, rows) = infer_and_load("one.csv", b"name\n\"Smith, J\"\nDoe\n");
    assert_eq!(inf.dialect.split, Split::Delimiter);
    assert_eq!(inf.schema.to_string(), "name TEXT");
    assert_eq!(rows.unwrap(), vec![vec![s("Smith, J")], vec![s("Doe")]]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Words set apart by any runs of spaces and tabs, with indents,
    /// spaces at line ends, lines of only spaces, LF or CR LF: read with
    /// runs of whitespace as the delimiter, at any block size and thread
    /// count, the rows are the words.
    #[test]
    fn whitespace_split_reads_the_words(
        rows in prop::collection::vec(prop::collection::vec("[a-z0-9.]{1,6}", 3), 1..40),
        gaps in prop::collection::vec("[ \t]{1,4}", 4),
        indent in "[ \t]{0,3}",
        crlf in any::<bool>(),
        blank in 0usize..5,
        block in 16usize..300,
        threads in 1usize..3,
    ) {
        let end = if crlf { "\r\n" } else { "\n" };
        let mut data = String::new();
        for (i, r) in rows.iter().enumerate() {
            if i == blank {
                data.push_str(&format!("{}{end}", gaps[3]));
            }
            data.push_str(&format!(
                "{indent}{}{}{}{}{}{}{end}",
                r[0], gaps[i % 3], r[1], gaps[(i + 1) % 3], r[2], gaps[3]
            ));
        }
        let dir = TempDir::new("whitespace-prop");
        let o = LoadOptions {
            dialect: Dialect {
                delimiter: b' ',
                quote: None,
                split: Split::Whitespace,
                ..Dialect::default()
            },
            header: Header::No,
            block_size: Some(block),
            threads: Some(threads),
            ..opts("a TEXT, b TEXT, c TEXT")
        };
        load_bytes(&dir, "t", data.as_bytes(), &o).unwrap();
        let want: Vec<Vec<Option<String>>> = rows
            .iter()
            .map(|r| r.iter().map(|v| Some(v.clone())).collect())
            .collect();
        prop_assert_eq!(table_rows(&dir.path().join("db"), "t"), want);
    }
}

#[test]
fn comment_lines_among_the_records() {
    // RDB as astropy writes it: `#` lines (one indented) among the
    // records, and only they split otherwise.
    let (inf, rows) = infer_and_load(
        "short.rdb",
        b"\n# blank lines\n\nid\tn\tobs\n115345072\t1\t1\n # comment\n335416352\t3\t8\n266612160\t1\t1\n",
    );
    assert_eq!(inf.dialect.comment, Some(b'#'));
    assert_eq!(inf.schema.to_string(), "id BIGINT, n BIGINT, obs BIGINT");
    assert_eq!(rows.unwrap().len(), 3);
    // A `#` line that splits like the records is data: no comment.
    let (inf, rows) = infer_and_load(
        "colors.csv",
        b"hex,name\n#ff0000,red\n#00ff00,green\n# note\nblue\n",
    );
    assert_eq!(inf.dialect.comment, None);
    assert!(rows.is_err());
}
