//! Dialects, types, headers and the errors a user meets.

use sluice::load::{Header, LoadOptions, load};
use sluice::parse::Dialect;
use sluice::source::Input;
use sluice::store::Database;

use crate::common::{TempDir, load_bytes, opts, table_rows};

fn rows(data: &[u8], o: &LoadOptions) -> Vec<Vec<Option<String>>> {
    let dir = TempDir::new("load");
    load_bytes(&dir, "t", data, o).unwrap();
    table_rows(&dir.path().join("db"), "t")
}

fn err(data: &[u8], o: &LoadOptions) -> String {
    let dir = TempDir::new("load-err");
    let e = load_bytes(&dir, "t", data, o).unwrap_err().to_string();
    // Nothing was committed.
    assert!(
        sluice::store::Database::open(dir.path().join("db"))
            .unwrap()
            .table("t")
            .is_none()
    );
    e.replace(&format!("{}/", dir.path().display()), "")
}

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

#[test]
fn every_type_loads_exactly() {
    let o = opts(
        "b BOOLEAN, i INT, l BIGINT, x DOUBLE, d DECIMAL(18,4), day DATE, ts TIMESTAMP, t TEXT",
    );
    let got = rows(
        b"b,i,l,x,d,day,ts,t\n\
          true,-2147483648,9223372036854775807,1.5e-3,-12345678901234.5678,2024-02-29,2024-02-29 23:59:59.123456,h\xc3\xa9\n\
          F,,,,,,,\n",
        &o,
    );
    assert_eq!(
        got,
        vec![
            vec![
                s("true"),
                s("-2147483648"),
                s("9223372036854775807"),
                s("0.0015"),
                s("-12345678901234.5678"),
                s("2024-02-29"),
                s("2024-02-29 23:59:59.123456"),
                s("hé")
            ],
            vec![s("false"), None, None, None, None, None, None, None],
        ]
    );
}

#[test]
fn header_is_detected_skipped_or_forced() {
    let o = opts("id INT, name TEXT");
    assert_eq!(rows(b"ID , Name\n1,a\n", &o), vec![vec![s("1"), s("a")]]);
    let mut no = opts("id INT, name TEXT");
    no.header = Header::No;
    assert!(err(b"id,name\n1,a\n", &no).contains(":1: column 1 (id): invalid INT value \"id\""));
    let mut yes = opts("a TEXT, b TEXT");
    yes.header = Header::Yes;
    assert_eq!(rows(b"x,y\n1,2\n", &yes), vec![vec![s("1"), s("2")]]);
    assert!(
        err(b"x,y,z\n1,2\n", &yes)
            .ends_with(":1: the header has 3 fields, the table has 2 columns (byte 0)")
    );
    // Header only: an empty table.
    assert_eq!(rows(b"id,name\n", &o), Vec::<Vec<Option<String>>>::new());
}

#[test]
fn tsv_skip_comment_null_and_custom_formats() {
    let mut o = opts("k TEXT, v INT, d DATE, ts TIMESTAMP");
    o.dialect = Dialect {
        delimiter: b'\t',
        quote: None,
        escape: None,
        comment: Some(b'#'),
        ..Dialect::default()
    };
    o.skip = 2;
    o.values.null = b"\\N".to_vec();
    o.values.date_format = Some("%d/%m/%Y".into());
    o.values.timestamp_format = Some("%d/%m/%Y %H:%M".into());
    let got = rows(
        b"junk line 1\njunk \"line\" 2\n# comment\na\"b\t1\t02/01/2024\t02/01/2024 10:30\n\\N\t\\N\t\t\n",
        &o,
    );
    assert_eq!(
        got,
        vec![
            vec![s("a\"b"), s("1"), s("2024-01-02"), s("2024-01-02 10:30:00")],
            vec![None, None, None, None],
        ]
    );
}

#[test]
fn escape_character_inside_quotes() {
    let mut o = opts("a TEXT, b TEXT");
    o.dialect.escape = Some(b'\\');
    o.block_size = Some(8);
    let got = rows(b"\"x\\\"y\",\"new\\\nline\"\n\"q\\\\\",z\n", &o);
    assert_eq!(
        got,
        vec![vec![s("x\"y"), s("new\nline")], vec![s("q\\"), s("z")]]
    );
}

#[test]
fn values_that_do_not_fit_are_errors_never_rounded() {
    let o = opts("id INT, p DECIMAL(5,2)");
    assert_eq!(
        err(b"1,1.5\n2,1.005\n", &o),
        "t-input.csv:2: column 2 (p): invalid DECIMAL(5,2) value \"1.005\": has 3 decimal places, more than the scale 2 (values are never rounded) (byte 8)"
    );
    assert_eq!(
        err(b"1,1000.00\n", &o),
        "t-input.csv:1: column 2 (p): invalid DECIMAL(5,2) value \"1000.00\": out of range for DECIMAL(5,2) (at most 3 digits before the point) (byte 2)"
    );
    assert_eq!(
        err(b"2147483648,1\n", &o),
        "t-input.csv:1: column 1 (id): invalid INT value \"2147483648\": out of range for INT (-2147483648..2147483647) (byte 0)"
    );
}

#[test]
fn malformed_rows_name_file_line_and_column() {
    let o = opts("id INT, t TEXT");
    assert_eq!(
        err(b"1,a\n2,b,c\n", &o),
        "t-input.csv:2: found a record with 3 fields, expected 2 (byte 4)"
    );
    assert_eq!(
        err(b"1,a\n2,\"open\n3,c\n", &o),
        "t-input.csv:2: column 2 (t): unterminated quoted field (no closing quote before the end of the input) (byte 6)"
    );
    assert_eq!(
        err(b"1,ok\n2,bad\xfe\n", &o),
        "t-input.csv:2: column 2 (t): invalid TEXT value \"bad\u{fffd}\": invalid UTF-8 at byte 3 of the value (another encoding? see --encoding) (byte 7)"
    );
}

#[test]
fn unusable_files_give_one_line_errors() {
    let o = opts("id INT");
    assert_eq!(
        err(b"\x00\x01\x02binary", &o),
        "t-input.csv: looks like a binary file (NUL byte at offset 0), not delimited text"
    );
    assert!(err(b"BZh91AY&SY", &o).starts_with("t-input.csv: is bzip2-compressed"));
    assert_eq!(
        err(b"\x1f\x8b\x08\x00", &o),
        "t-input.csv: corrupt or truncated gzip data (unexpected end of file)"
    );
    let e = sluice::source::expand(&["/nonexistent/file.csv".to_string()])
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("/nonexistent/file.csv: "), "{e}");
}

#[test]
fn a_runaway_quote_hits_the_line_limit() {
    let mut o = opts("t TEXT");
    o.block_size = Some(1024);
    o.max_line_size = 4096;
    let mut data = b"\"never closed\n".to_vec();
    data.extend(std::iter::repeat_n(b'x', 20_000));
    data.push(b'\n');
    let e = err(&data, &o);
    assert!(
        e.starts_with("t-input.csv:1: no end of record within --max-line-size (4096 bytes)"),
        "{e}"
    );
}

#[test]
fn many_files_load_in_order() {
    let dir = TempDir::new("many");
    let mut inputs = Vec::new();
    for f in 0..50 {
        let mut data = String::from("id,f\n");
        for i in 0..(f % 5) {
            data.push_str(&format!("{},{f}\n", f * 10 + i));
        }
        inputs.push(sluice::source::Input::File(
            dir.write(&format!("in{f:03}.csv"), data.as_bytes()),
        ));
    }
    let mut db = sluice::store::Database::open_writer(dir.path().join("db")).unwrap();
    let s = sluice::load::load(&mut db, "t", &inputs, &opts("id INT, f INT")).unwrap();
    assert_eq!((s.files, s.rows), (50, 100));
    let ids: Vec<i64> = table_rows(&dir.path().join("db"), "t")
        .iter()
        .map(|r| r[0].as_ref().unwrap().parse().unwrap())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted);
}

/// Text with quotes, newlines in fields and many blocks' worth of rows.
fn varied_csv(rows: usize) -> Vec<u8> {
    let mut s = String::new();
    for i in 0..rows {
        s.push_str(&format!(
            "{i},\"name, {}\",\"line\nbreak {}\",{}.{:02}\n",
            i % 17,
            i % 5,
            i / 3,
            i % 100
        ));
    }
    s.into_bytes()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[test]
fn gzip_and_zstd_inputs_load_like_the_text_they_hold() {
    let schema = "id INT, name TEXT, note TEXT, price DECIMAL(10,2)";
    let data = varied_csv(3000);
    let mut o = opts(schema);
    o.block_size = Some(4096);
    let plain_dir = TempDir::new("plain");
    load_bytes(&plain_dir, "t", &data, &o).unwrap();
    let want = table_rows(&plain_dir.path().join("db"), "t");
    assert_eq!(want.len(), 3000);

    // Detected by content: the files have no telling extension.
    let gz_dir = TempDir::new("gz");
    let s = load_bytes(&gz_dir, "t", &gzip(&data), &o).unwrap();
    assert_eq!(s.rows, 3000);
    assert_eq!(s.bytes, data.len() as u64, "the summary counts the text");
    assert_eq!(table_rows(&gz_dir.path().join("db"), "t"), want);

    let zst_dir = TempDir::new("zst");
    let z = zstd::encode_all(&data[..], 3).unwrap();
    load_bytes(&zst_dir, "t", &z, &o).unwrap();
    assert_eq!(table_rows(&zst_dir.path().join("db"), "t"), want);

    // Several gzip members (as `cat a.gz b.gz` makes) are one stream.
    let half = data.len() / 2;
    let cut = half + data[half..].iter().position(|&b| b == b'\n').unwrap() + 1;
    let cut = {
        // A record boundary: a newline outside quotes (an even count of
        // quotes before it).
        let mut c = cut;
        while data[..c].iter().filter(|&&b| b == b'"').count() % 2 == 1 {
            c += data[c..].iter().position(|&b| b == b'\n').unwrap() + 1;
        }
        c
    };
    let mut members = gzip(&data[..cut]);
    members.extend(gzip(&data[cut..]));
    let multi_dir = TempDir::new("gzmulti");
    load_bytes(&multi_dir, "t", &members, &o).unwrap();
    assert_eq!(table_rows(&multi_dir.path().join("db"), "t"), want);
}

#[test]
fn damaged_compressed_input_is_an_error_naming_the_file() {
    let dir = TempDir::new("gzbad");
    let gz = gzip(&varied_csv(200));
    let e = load_bytes(
        &dir,
        "t",
        &gz[..gz.len() / 2],
        &opts("id INT, name TEXT, note TEXT, price DECIMAL(10,2)"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("t-input.csv: corrupt or truncated gzip data"),
        "{e}"
    );
    let db = sluice::store::Database::open(dir.path().join("db")).unwrap();
    assert!(db.table("t").is_none());
}

#[test]
fn byte_order_marks_and_encodings_become_utf8() {
    let o = opts("id INT, name TEXT");
    let s = |v: &str| Some(v.to_string());
    let want = vec![vec![s("1"), s("café")], vec![s("2"), s("日本")]];
    let text = "id,name\n1,café\n2,日本\n";
    // UTF-8 with a byte order mark: the mark is not part of the header.
    let dir = TempDir::new("bom8");
    let mut data = b"\xef\xbb\xbf".to_vec();
    data.extend_from_slice(text.as_bytes());
    load_bytes(&dir, "t", &data, &o).unwrap();
    assert_eq!(table_rows(&dir.path().join("db"), "t"), want);
    // UTF-16 in either byte order, found by its byte order mark.
    for (tag, le) in [("u16le", true), ("u16be", false)] {
        let dir = TempDir::new(tag);
        let mut data = Vec::new();
        for u in "\u{feff}".encode_utf16().chain(text.encode_utf16()) {
            data.extend_from_slice(&if le { u.to_le_bytes() } else { u.to_be_bytes() });
        }
        load_bytes(&dir, "t", &data, &o).unwrap();
        assert_eq!(table_rows(&dir.path().join("db"), "t"), want, "{tag}");
    }
    // Latin-1 only when asked: by default it is invalid UTF-8.
    let latin1 = b"id,name\n1,caf\xe9\n2,\xc5ngstr\xf6m\n";
    let dir = TempDir::new("latin1");
    let e = load_bytes(&dir, "t", latin1, &o).unwrap_err().to_string();
    assert!(
        e.contains(":2: column 2 (name): invalid TEXT value") && e.contains("see --encoding"),
        "{e}"
    );
    let lo = LoadOptions {
        encoding: Some(sluice::source::encoding_for("latin1").unwrap()),
        ..opts("id INT, name TEXT")
    };
    load_bytes(&dir, "t", latin1, &lo).unwrap();
    assert_eq!(
        table_rows(&dir.path().join("db"), "t"),
        vec![vec![s("1"), s("café")], vec![s("2"), s("Ångström")]]
    );
    // Malformed UTF-16 is an error, never replaced.
    let dir = TempDir::new("badu16");
    let e = load_bytes(&dir, "t", b"\xff\xfe1\x00,\x00\x00\xd8", &o)
        .unwrap_err()
        .to_string();
    assert!(
        e.ends_with("/t-input.csv: invalid UTF-16LE at byte 6 of the file"),
        "{e}"
    );
    assert!(sluice::source::encoding_for("klingon").is_err());
}

#[test]
fn inference_samples_the_middle_and_end_of_files_and_later_files() {
    use sluice::batch::DataType;
    use sluice::infer::{InferOptions, infer};
    let dir = TempDir::new("infer");
    // 200,000 rows: `v` is an integer until the very last rows, where it
    // has decimals; `note` is empty until the middle, then text.
    let mut s = String::from("id;v;note;day\n");
    for i in 0..200_000 {
        let v = if i >= 199_990 {
            format!("{i}.25")
        } else {
            i.to_string()
        };
        let note = if i >= 100_000 { "late" } else { "" };
        s.push_str(&format!("{i};{v};{note};2024-01-{:02}\n", 1 + i % 28));
    }
    let big = dir.write("big.csv", s.as_bytes());
    // (Larger than a file read whole.)
    let o = InferOptions {
        whole_bytes: 1 << 20,
        ..InferOptions::default()
    };
    let inf = infer(&[sluice::source::Input::File(big.clone())], &o).unwrap();
    assert_eq!(inf.delimiter, b';');
    assert!(inf.header);
    assert_eq!(
        inf.schema.to_string(),
        "id BIGINT, v DECIMAL(18,2), note TEXT, day DATE"
    );
    assert_eq!(inf.samples, 3, "start, middle and end");

    // Many files: the last one holds text where the others hold numbers.
    let mut inputs = Vec::new();
    for f in 0..40 {
        let body = if f == 39 { "x,abc\n" } else { "1,2\n" };
        inputs.push(sluice::source::Input::File(dir.write(
            &format!("part{f:02}.csv"),
            format!("a,b\n{body}").as_bytes(),
        )));
    }
    let inf = infer(&inputs, &o).unwrap();
    assert_eq!(inf.schema.to_string(), "a TEXT, b TEXT");
    assert!(inf.files_sampled >= 2 && inf.files_sampled <= 16);
    // Overrides win; a name that is not a column is an error.
    let o = InferOptions {
        types: vec![("b".into(), DataType::Double)],
        ..InferOptions::default()
    };
    assert_eq!(
        infer(&inputs, &o).unwrap().schema.to_string(),
        "a TEXT, b DOUBLE"
    );
    let o = InferOptions {
        types: vec![("zz".into(), DataType::Double)],
        ..InferOptions::default()
    };
    let e = infer(&inputs, &o).unwrap_err().to_string();
    assert!(e.contains("\"zz\"") && e.contains("a, b"), "{e}");
    // Standard input cannot be sampled.
    let e = infer(&[sluice::source::Input::Stdin], &InferOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("pass --schema"), "{e}");
}

#[test]
fn headerless_files_get_numbered_columns() {
    use sluice::infer::{InferOptions, infer};
    let dir = TempDir::new("infer2");
    let f = dir.write(
        "n.tsv",
        b"1\t2024-01-01 10:00:00\tyes\n2\t2024-01-02 11:00:00\tno\n",
    );
    let inf = infer(&[sluice::source::Input::File(f)], &InferOptions::default()).unwrap();
    assert_eq!(inf.delimiter, b'\t');
    assert!(!inf.header);
    assert_eq!(
        inf.schema.to_string(),
        "c1 BIGINT, c2 TIMESTAMP, c3 BOOLEAN"
    );
}

#[test]
fn columns_choose_and_order_fields_and_defaults_fill_the_rest() {
    use sluice::load::ColumnRef;
    let schema = "id BIGINT, name TEXT, price DECIMAL(8,2), status TEXT DEFAULT 'new', note TEXT";
    let s = |v: &str| Some(v.to_string());
    let data = b"name,id,junk,price\nada,1,x,1.5\nbob,2,y,2\n";
    // By header name, skipping `junk`; status gets its DEFAULT, note NULL.
    let dir = TempDir::new("cols");
    let o = LoadOptions {
        columns: Some(vec![
            ColumnRef::Name("ID".into()),
            ColumnRef::Name("name".into()),
            ColumnRef::Position(4),
        ]),
        ..opts(schema)
    };
    load_bytes(&dir, "t", data, &o).unwrap();
    assert_eq!(
        table_rows(&dir.path().join("db"), "t"),
        vec![
            vec![s("1"), s("ada"), s("1.50"), s("new"), None],
            vec![s("2"), s("bob"), s("2.00"), s("new"), None],
        ]
    );
    // By position without a header; extra fields are skipped, a record
    // too short for the mapping is an error naming its line.
    let dir = TempDir::new("cols2");
    let o = LoadOptions {
        header: Header::No,
        columns: Some(vec![ColumnRef::Position(2), ColumnRef::Position(1)]),
        ..opts(schema)
    };
    load_bytes(&dir, "t", b"a,7,zz,yy\nb,8\n", &o).unwrap();
    assert_eq!(
        table_rows(&dir.path().join("db"), "t"),
        vec![
            vec![s("7"), s("a"), None, s("new"), None],
            vec![s("8"), s("b"), None, s("new"), None],
        ]
    );
    let e = load_bytes(&dir, "t", b"c,9\n10\n", &o)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(":2: found a record with 1 field, the column mapping needs 2"),
        "{e}"
    );
    // Names need a header; unknown names are errors.
    let o = LoadOptions {
        header: Header::No,
        columns: Some(vec![ColumnRef::Name("id".into())]),
        ..opts(schema)
    };
    let e = load_bytes(&dir, "t", b"1\n", &o).unwrap_err().to_string();
    assert!(
        e.contains("mapping columns by name needs a header line"),
        "{e}"
    );
    let o = LoadOptions {
        columns: Some(vec![ColumnRef::Name("nope".into())]),
        ..opts(schema)
    };
    let e = load_bytes(&dir, "t", data, &o).unwrap_err().to_string();
    assert!(
        e.contains("has no field named \"nope\" (its header: name, id, junk, price)"),
        "{e}"
    );
}

#[test]
fn match_by_name_maps_each_file_by_its_own_header() {
    let schema = "id BIGINT, name TEXT, price DECIMAL(8,2), status TEXT DEFAULT 'new'";
    let dir = TempDir::new("byname");
    let files = [
        dir.write("a.csv", b"id,name,price\n1,ada,1.5\n"),
        dir.write("b.csv", b"Price,ID,Status\n3.25,2,old\n"),
        dir.write("c.csv", b"name,id\nbob,3\n"),
    ];
    let o = LoadOptions {
        match_by_name: true,
        ..opts(schema)
    };
    let mut db = Database::open_writer(dir.path().join("db")).unwrap();
    let inputs: Vec<Input> = files.iter().cloned().map(Input::File).collect();
    load(&mut db, "t", &inputs, &o).unwrap();
    drop(db);
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        table_rows(&dir.path().join("db"), "t"),
        vec![
            vec![s("1"), s("ada"), s("1.50"), s("new")],
            vec![s("2"), None, s("3.25"), s("old")],
            vec![s("3"), s("bob"), None, s("new")],
        ]
    );
    let bad = dir.write("d.csv", b"id,colour\n4,red\n");
    let mut db = Database::open_writer(dir.path().join("db")).unwrap();
    let e = load(&mut db, "t", &[Input::File(bad)], &o)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("header field \"colour\" is not a column of the table (columns: id, name, price, status)"),
        "{e}"
    );
}

#[test]
fn rejected_records_of_a_mapped_file_leave_whole_rows() {
    use sluice::load::{ColumnRef, OnError};
    let dir = TempDir::new("maprej");
    let o = LoadOptions {
        header: Header::No,
        columns: Some(vec![ColumnRef::Position(3), ColumnRef::Position(1)]),
        on_error: OnError::Skip,
        ..opts("n INT, t TEXT, z TEXT DEFAULT 'd'")
    };
    let s = load_bytes(&dir, "t", b"a,_,1\nb,_,x\nc\nd,_,4,extra\n", &o).unwrap();
    assert_eq!((s.rows, s.rejected), (2, 2));
    let v = |x: &str| Some(x.to_string());
    assert_eq!(
        table_rows(&dir.path().join("db"), "t"),
        vec![vec![v("1"), v("a"), v("d")], vec![v("4"), v("d"), v("d")]]
    );
}
