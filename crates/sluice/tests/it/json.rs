//! JSON input: JSON lines and top-level arrays, through the whole load
//! (reader, workers, writer): values, field mapping, errors with their
//! file and line, rejects, compressed input, keyed tables, and a parallel
//! load at any block size equal to a sequential parse.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use proptest::prelude::*;
use sluice::Error;
use sluice::batch::{BatchBuilder, Schema, ValueOptions};
use sluice::load::{ColumnRef, Header, LoadOptions, OnError, load};
use sluice::parse::{Format, JsonFormat, JsonShape, RowPolicy, parse_json_block};
use sluice::source::Input;
use sluice::store::Database;

use crate::common::{TempDir, rows_of, table_rows};

fn jsonl(schema: &str) -> LoadOptions {
    LoadOptions {
        schema: Some(schema.parse().unwrap()),
        format: Format::Json(JsonFormat::default()),
        reload: sluice::load::Reload::All,
        ..LoadOptions::default()
    }
}

fn json_array(schema: &str) -> LoadOptions {
    LoadOptions {
        format: Format::Json(JsonFormat {
            shape: JsonShape::Array,
            ignore_unknown: false,
        }),
        ..jsonl(schema)
    }
}

/// Writes `files` and loads them, in order, into table `t`.
fn load_files(
    dir: &TempDir,
    files: &[(&str, &[u8])],
    o: &LoadOptions,
) -> sluice::Result<sluice::load::LoadSummary> {
    let inputs: Vec<Input> = files
        .iter()
        .map(|(name, data)| Input::File(dir.write(name, data)))
        .collect();
    let mut db = Database::open_writer(dir.path().join("db"))?;
    load(&mut db, "t", &inputs, o)
}

fn rows(dir: &TempDir) -> Vec<Vec<Option<String>>> {
    table_rows(&dir.path().join("db"), "t")
}

fn path(dir: &TempDir, name: &str) -> String {
    dir.path().join(name).display().to_string()
}

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

fn row(v: &[Option<&str>]) -> Vec<Option<String>> {
    v.iter().map(|x| x.map(str::to_string)).collect()
}

#[test]
fn escapes_unicode_and_surrogate_pairs() {
    let dir = TempDir::new("json-esc");
    let data = concat!(
        r#"{"id":1,"t":"quote \" backslash \\ slash \/ tab \t nl \n cr \r bs \b ff \f"}"#,
        "\n",
        r#"{"id":2,"t":"\u00e9\u00C9 \u20ac \ud83d\ude00 \uD834\uDD1E \u0000end"}"#,
        "\n",
        "{\"id\":3,\"t\":\"raw UTF-8: é € 😀 𝄞\"}\r\n",
        r#"{"id":4,"t":""}"#,
    );
    load_files(
        &dir,
        &[("e.jsonl", data.as_bytes())],
        &jsonl("id INT, t TEXT"),
    )
    .unwrap();
    assert_eq!(
        rows(&dir),
        vec![
            vec![
                s("1"),
                s("quote \" backslash \\ slash / tab \t nl \n cr \r bs \u{8} ff \u{c}")
            ],
            vec![s("2"), s("éÉ € 😀 𝄞 \u{0}end")],
            vec![s("3"), s("raw UTF-8: é € 😀 𝄞")],
            vec![s("4"), s("")],
        ]
    );
}

#[test]
fn bad_escapes_and_invalid_utf8_say_file_line_and_column() {
    let dir = TempDir::new("json-bad-esc");
    let o = jsonl("id INT, t TEXT");
    let e = load_files(
        &dir,
        &[(
            "a.jsonl",
            b"{\"id\":1,\"t\":\"ok\"}\n{\"id\":2,\"t\":\"x\\ud800y\"}\n",
        )],
        &o,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:2: lone surrogate \\uD800 (a high surrogate must be followed by a low one, \\uDC00 to \\uDFFF) (character 15 of the line) (byte 32)",
            path(&dir, "a.jsonl")
        )
    );
    let e = load_files(
        &dir,
        &[("b.jsonl", b"{\"id\":1,\"t\":\"bad \xc3\x28\"}\n")],
        &o,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:1: column 2 (t): invalid TEXT value \"bad \u{fffd}(\": invalid UTF-8 at byte 4 of the value (another encoding? see --encoding) (byte 12)",
            path(&dir, "b.jsonl")
        )
    );
}

#[test]
fn numbers_at_the_type_limits_are_exact() {
    let dir = TempDir::new("json-num");
    let data = concat!(
        r#"{"i":2147483647,"b":9223372036854775807,"d":9999999999999.99999,"f":2.5e2}"#,
        "\n",
        r#"{"i":-2147483648,"b":-9223372036854775808,"d":-0.00001,"f":-2.5E-3}"#,
        "\n",
        r#"{"i":"17","b":"-9223372036854775808","d":"12.50","f":"3"}"#,
        "\n",
        r#"{"i":null,"b":0,"d":0.1,"f":0}"#,
        "\n",
    );
    load_files(
        &dir,
        &[("n.jsonl", data.as_bytes())],
        &jsonl("i INT, b BIGINT, d DECIMAL(18,5), f DOUBLE"),
    )
    .unwrap();
    assert_eq!(
        rows(&dir),
        vec![
            vec![
                s("2147483647"),
                s("9223372036854775807"),
                s("9999999999999.99999"),
                s("250"),
            ],
            vec![
                s("-2147483648"),
                s("-9223372036854775808"),
                s("-0.00001"),
                s("-0.0025")
            ],
            vec![s("17"), s("-9223372036854775808"), s("12.50000"), s("3")],
            vec![None, s("0"), s("0.10000"), s("0")],
        ]
    );
    // One past each limit is an error naming the column.
    for (data, col, msg) in [
        (
            r#"{"i":2147483648}"#,
            "1 (i)",
            "invalid INT value \"2147483648\": out of range for INT (-2147483648..2147483647)",
        ),
        (
            r#"{"i":-2147483649}"#,
            "1 (i)",
            "invalid INT value \"-2147483649\": out of range for INT (-2147483648..2147483647)",
        ),
        (
            r#"{"b":9223372036854775808}"#,
            "2 (b)",
            "invalid BIGINT value",
        ),
        (
            r#"{"b":-9223372036854775809}"#,
            "2 (b)",
            "invalid BIGINT value",
        ),
        (r#"{"d":0.000001}"#, "3 (d)", "invalid DECIMAL(18,5) value"),
        (r#"{"i":1e3}"#, "1 (i)", "invalid INT value \"1e3\""),
    ] {
        let dir = TempDir::new("json-num-limit");
        let e = load_files(
            &dir,
            &[("x.jsonl", format!("{{}}\n{data}\n").as_bytes())],
            &jsonl("i INT, b BIGINT, d DECIMAL(18,5)"),
        )
        .unwrap_err();
        let want = format!("{}:2: column {col}: {msg}", path(&dir, "x.jsonl"));
        assert!(e.to_string().starts_with(&want), "{e} / {want}");
    }
}

#[test]
fn nulls_nested_values_and_booleans() {
    let dir = TempDir::new("json-nested");
    let data = concat!(
        r#"{"id":1,"ok":true,"doc":{"a":[1,{"b":null}],"c":"}\""},"tags":["x","y"]}"#,
        "\n",
        r#"{"id":2,"ok":false,"doc":null,"tags":[]}"#,
        "\n",
        r#"{"id":3,"ok":null,"doc":"plain text","tags":true}"#,
        "\n",
    );
    load_files(
        &dir,
        &[("n.jsonl", data.as_bytes())],
        &jsonl("id INT, ok BOOLEAN, doc TEXT, tags TEXT"),
    )
    .unwrap();
    assert_eq!(
        rows(&dir),
        vec![
            vec![
                s("1"),
                s("true"),
                s(r#"{"a":[1,{"b":null}],"c":"}\""}"#),
                s(r#"["x","y"]"#)
            ],
            vec![s("2"), s("false"), None, s("[]")],
            vec![s("3"), None, s("plain text"), s("true")],
        ]
    );
    let dir = TempDir::new("json-nested-bad");
    let e = load_files(
        &dir,
        &[("bad.jsonl", br#"{"id":[1]}"#.as_slice())],
        &jsonl("id INT"),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:1: column 1 (id): a JSON array cannot be a INT value (nested objects and arrays load into TEXT columns as JSON text) (byte 6)",
            path(&dir, "bad.jsonl")
        )
    );
}

#[test]
fn missing_unknown_and_duplicate_fields() {
    let dir = TempDir::new("json-fields");
    let schema = "id INT, name TEXT DEFAULT 'anon', n INT";
    load_files(
        &dir,
        &[(
            "m.jsonl",
            b"{\"ID\":1,\"Name\":\"a\",\"N\":5}\n{\"id\":2}\n{\"n\":3,\"id\":4,\"name\":null}\n",
        )],
        &jsonl(schema),
    )
    .unwrap();
    assert_eq!(
        rows(&dir),
        vec![
            row(&[Some("1"), Some("a"), Some("5")]),
            row(&[Some("2"), Some("anon"), None]),
            row(&[Some("4"), None, Some("3")]),
        ]
    );
    let e = load_files(
        &dir,
        &[("u.jsonl", b"{\"id\":1}\n{\"id\":2, \"extra\":[1,2]}\n")],
        &jsonl(schema),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:2: unknown field \"extra\" (the table's columns: id, name, n; --ignore-unknown skips such fields) (character 10 of the line) (byte 18)",
            path(&dir, "u.jsonl")
        )
    );
    let mut o = jsonl(schema);
    o.format = Format::Json(JsonFormat {
        shape: JsonShape::Lines,
        ignore_unknown: true,
    });
    let dir = TempDir::new("json-fields-ignore");
    load_files(
        &dir,
        &[(
            "u.jsonl",
            b"{\"id\":2, \"extra\":{\"deep\":[1,2]},\"n\":7}\n",
        )],
        &o,
    )
    .unwrap();
    assert_eq!(rows(&dir), vec![row(&[Some("2"), Some("anon"), Some("7")])]);
    let e = load_files(
        &dir,
        &[("d.jsonl", b"{\"id\":1,\"id\":2}\n")],
        &jsonl(schema),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:1: field \"id\" appears twice in the object (column id) (character 9 of the line) (byte 8)",
            path(&dir, "d.jsonl")
        )
    );
}

#[test]
fn a_bad_line_deep_in_a_file_names_its_line_at_any_block_size() {
    let mut data = String::new();
    for i in 0..500 {
        data.push_str(&format!("{{\"a\":{i},\"b\":\"row {i}\"}}\n"));
    }
    data.push_str("{\"a\":1,\"b\":\"x\"\n");
    data.push_str("{\"a\":\"oops\"}\n");
    let line_start = data.len() - "{\"a\":1,\"b\":\"x\"\n{\"a\":\"oops\"}\n".len();
    for block in [64, 100, 1000, 1 << 20] {
        for threads in [1, 2] {
            let dir = TempDir::new("json-badline");
            let mut o = jsonl("a INT, b TEXT");
            o.block_size = Some(block);
            o.threads = Some(threads);
            let e = load_files(&dir, &[("f.jsonl", data.as_bytes())], &o).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "{}:501: unterminated object: no '}}' before the end of the line (JSON lines hold one value per line; for a top-level array or values spread over several lines, use --format json) (character 1 of the line) (byte {line_start})",
                    path(&dir, "f.jsonl")
                ),
                "block {block} threads {threads}"
            );
        }
    }
}

#[test]
fn on_error_skip_writes_the_rejects_file() {
    let dir = TempDir::new("json-rejects");
    let rejects = dir.path().join("rejects.csv");
    let mut o = jsonl("a INT, b TEXT");
    o.on_error = OnError::Skip;
    o.rejects = Some(rejects.clone());
    o.block_size = Some(64);
    let data = concat!(
        "{\"a\":1,\"b\":\"x\"}\n",
        "{\"a\":\"no\",\"b\":\"y\"}\n",
        "\n",
        "{\"a\":3,\"zz\":1}\n",
        "{\"a\":4,\"b\":\"z\"}\n",
        "[5,\"arr\"]\n",
        "{\"a\":6,\"b\":\"unterminated}\n",
    );
    let sum = load_files(&dir, &[("r.jsonl", data.as_bytes())], &o).unwrap();
    assert_eq!(sum.rows, 3);
    assert_eq!(
        rows(&dir),
        vec![
            row(&[Some("1"), Some("x")]),
            row(&[Some("4"), Some("z")]),
            row(&[Some("5"), Some("arr")]),
        ]
    );
    let f = path(&dir, "r.jsonl");
    assert_eq!(
        std::fs::read_to_string(&rejects).unwrap(),
        format!(
            "file,line,byte,column,reason,record\n\
{f},2,21,1 (a),\"invalid INT value \"\"no\"\": not an integer\",\"{{\"\"a\"\":\"\"no\"\",\"\"b\"\":\"\"y\"\"}}\"\n\
{f},4,43,,\"unknown field \"\"zz\"\" (the table's columns: a, b; --ignore-unknown skips such fields) (character 8 of the line)\",\"{{\"\"a\"\":3,\"\"zz\"\":1}}\"\n\
{f},7,88,,unterminated string (JSON lines hold one value per line; a raw newline cannot be in a string: write \\n) (character 12 of the line),\"{{\"\"a\"\":6,\"\"b\"\":\"\"unterminated}}\"\n"
        )
    );
    // The same at every block size and thread count.
    let want_rejects = std::fs::read_to_string(&rejects).unwrap();
    for block in [1, 5, 17, 40, 1000] {
        for threads in [1, 2, 3] {
            let dir2 = TempDir::new("json-rejects-blocks");
            let mut o = o.clone();
            o.block_size = Some(block);
            o.threads = Some(threads);
            o.rejects = Some(dir2.path().join("rejects.csv"));
            load_files(&dir2, &[("r.jsonl", data.as_bytes())], &o).unwrap();
            assert_eq!(rows(&dir2), rows(&dir), "block {block} threads {threads}");
            assert_eq!(
                std::fs::read_to_string(dir2.path().join("rejects.csv"))
                    .unwrap()
                    .replace(&path(&dir2, "r.jsonl"), &f),
                want_rejects,
                "block {block} threads {threads}"
            );
        }
    }
    // --max-errors fails the load and commits nothing more.
    let dir = TempDir::new("json-max-errors");
    let mut o = jsonl("a INT, b TEXT");
    o.on_error = OnError::Skip;
    o.max_errors = Some(1);
    let e = load_files(&dir, &[("r.jsonl", data.as_bytes())], &o).unwrap_err();
    assert!(
        e.to_string()
            .contains("more than --max-errors 1 records rejected"),
        "{e}"
    );
    assert!(
        Database::open(dir.path().join("db"))
            .unwrap()
            .table("t")
            .is_none()
    );
}

#[test]
fn rejects_of_an_array_at_every_block_size() {
    let data =
        "[\n{\"a\":1},\n{\"a\":\"x\",\n \"b\":[1,\"],\"]},\n{\"a\":3,\"q\":{}},\n{\"a\":4}\n]\n";
    let mut want = None;
    for block in [1, 3, 10, 25, 1000] {
        for threads in [1, 2] {
            let dir = TempDir::new("json-array-rejects");
            let mut o = json_array("a INT, b TEXT");
            o.on_error = OnError::Skip;
            o.rejects = Some(dir.path().join("rejects.csv"));
            o.block_size = Some(block);
            o.threads = Some(threads);
            let sum = load_files(&dir, &[("r.json", data.as_bytes())], &o).unwrap();
            assert_eq!((sum.rows, sum.rejected), (2, 2));
            assert_eq!(
                rows(&dir),
                vec![row(&[Some("1"), None]), row(&[Some("4"), None])]
            );
            let got = std::fs::read_to_string(dir.path().join("rejects.csv"))
                .unwrap()
                .replace(&path(&dir, "r.json"), "r.json");
            match &want {
                None => {
                    assert_eq!(
                        got,
                        "file,line,byte,column,reason,record\n\
r.json,3,16,1 (a),\"invalid INT value \"\"x\"\": not an integer\",\"{\"\"a\"\":\"\"x\"\",\n \"\"b\"\":[1,\"\"],\"\"]}\"\n\
r.json,5,44,,\"unknown field \"\"q\"\" (the table's columns: a, b; --ignore-unknown skips such fields) (character 8 of the line)\",\"{\"\"a\"\":3,\"\"q\"\":{}}\"\n"
                    );
                    want = Some(got);
                }
                Some(w) => assert_eq!(&got, w, "block {block} threads {threads}"),
            }
        }
    }
}

#[test]
fn gzip_input_and_many_files_and_skip() {
    let dir = TempDir::new("json-gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(b"# a comment line\n{\"a\":1}\n{\"a\":2}\n")
        .unwrap();
    let gz = gz.finish().unwrap();
    let mut o = jsonl("a INT");
    o.skip = 1;
    load_files(
        &dir,
        &[
            ("one.jsonl.gz", gz.as_slice()),
            ("two.jsonl", b"skipped line\n{\"a\":3}".as_slice()),
        ],
        &o,
    )
    .unwrap();
    assert_eq!(
        rows(&dir),
        vec![row(&[Some("1")]), row(&[Some("2")]), row(&[Some("3")])]
    );
}

#[test]
fn array_of_objects() {
    let dir = TempDir::new("json-array");
    let data = b"[\n  {\"a\": 1, \"b\": \"x\"},\n  {\"b\": \"y\", \"a\": 2},\n  {\"a\": 3}\n]\n";
    for block in [8, 30, 1 << 20] {
        let mut o = json_array("a INT, b TEXT");
        o.block_size = Some(block);
        load_files(&dir, &[("a.json", data)], &o).unwrap();
    }
    let want = vec![
        row(&[Some("1"), Some("x")]),
        row(&[Some("2"), Some("y")]),
        row(&[Some("3"), None]),
    ];
    assert_eq!(rows(&dir), [want.clone(), want.clone(), want].concat());
    // An empty array, and the errors of the brackets.
    let dir = TempDir::new("json-array-errors");
    let o = json_array("a INT, b TEXT");
    load_files(&dir, &[("e.json", b" [ ] ")], &o).unwrap();
    assert_eq!(rows(&dir), Vec::<Vec<Option<String>>>::new());
    let e = load_files(&dir, &[("o.json", b"\n \"a\"")], &o).unwrap_err();
    assert!(
        e.to_string().starts_with(&format!(
            "{}:2: --format json reads a top-level array of rows, an object holding one, or objects one after another",
            path(&dir, "o.json")
        )),
        "{e}"
    );
    let e = load_files(&dir, &[("c.json", b"[{\"a\":1},\n{\"a\":2}")], &o).unwrap_err();
    assert!(
        e.to_string().starts_with(&format!(
            "{}: the JSON array is not closed: the input ends with",
            path(&dir, "c.json")
        )),
        "{e}"
    );
    let e = load_files(&dir, &[("t.json", b"[{\"a\":1},\n]")], &o).unwrap_err();
    assert!(
        e.to_string().contains("a comma before the closing ']'"),
        "{e}"
    );
    let e = load_files(&dir, &[("m.json", b"[{\"a\":1}\n{\"a\":2}]")], &o).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:2: expected ',' or ']' after an array element, found '{{' (character 1 of the line) (byte 9)",
            path(&dir, "m.json")
        )
    );
}

#[test]
fn array_of_arrays_with_a_header_or_columns() {
    let dir = TempDir::new("json-aoa");
    let schema = "id INT, name TEXT, score DECIMAL(5,1) DEFAULT 0";
    // The header names the fields in any order; columns it lacks get
    // their DEFAULT.
    load_files(
        &dir,
        &[("h.json", b"[[\"name\",\"ID\"],\n[\"a\",1],\n[\"b\",2]\n]")],
        &json_array(schema),
    )
    .unwrap();
    // --columns names them instead (no header row).
    let mut o = json_array(schema);
    o.columns = Some(vec![
        ColumnRef::Name("score".into()),
        ColumnRef::Name("id".into()),
    ]);
    load_files(&dir, &[("c.json", b"[[1.5,3],[2,4]]")], &o).unwrap();
    // JSON lines of arrays, with a header line.
    let mut o = jsonl(schema);
    o.header = Header::Auto;
    load_files(
        &dir,
        &[("l.jsonl", b"[\"id\",\"name\",\"score\"]\n[5,\"e\",9.9]\n")],
        &o,
    )
    .unwrap();
    // No header: by position.
    let mut o = jsonl(schema);
    o.header = Header::No;
    load_files(&dir, &[("p.jsonl", b"[6,\"f\",1]\n")], &o).unwrap();
    assert_eq!(
        rows(&dir),
        vec![
            row(&[Some("1"), Some("a"), Some("0.0")]),
            row(&[Some("2"), Some("b"), Some("0.0")]),
            row(&[Some("3"), None, Some("1.5")]),
            row(&[Some("4"), None, Some("2.0")]),
            row(&[Some("5"), Some("e"), Some("9.9")]),
            row(&[Some("6"), Some("f"), Some("1.0")]),
        ]
    );
    let e = load_files(
        &dir,
        &[("bad.json", b"[[\"id\",\"nope\"],[1,2]]")],
        &json_array(schema),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}: the header names field \"nope\", which is not a column of the table (columns: id, name, score); --ignore-unknown skips it",
            path(&dir, "bad.json")
        )
    );
    let e = load_files(
        &dir,
        &[("long.json", b"[[\"id\",\"name\"],\n[1,\"a\",3]]")],
        &json_array(schema),
    )
    .unwrap_err();
    assert!(
        e.to_string().starts_with(&format!(
            "{}:2: the row has more than 2 values (the header names fewer fields)",
            path(&dir, "long.json")
        )),
        "{e}"
    );
}

#[test]
fn a_keyed_table_from_json_names_the_duplicate_lines() {
    let dir = TempDir::new("json-keyed");
    let mut o = jsonl("source_id TEXT, chunkId INT, subChunkId INT");
    o.key = Some("source_id".into());
    let e = load_files(
        &dir,
        &[(
            "k.jsonl",
            b"{\"source_id\":\"a\",\"chunkId\":1,\"subChunkId\":1}\n{\"source_id\":\"b\",\"chunkId\":1,\"subChunkId\":2}\n{\"source_id\":\"a\",\"chunkId\":2,\"subChunkId\":3}\n",
        )],
        &o,
    )
    .unwrap_err();
    let f = path(&dir, "k.jsonl");
    assert!(
        e.to_string().starts_with(&format!(
            "duplicate key 'a' in table t: {f}:3 repeats the key of {f}:1"
        )),
        "{e}"
    );
    // A missing key field is a row error with its line.
    let e = load_files(
        &dir,
        &[("m.jsonl", b"{\"source_id\":\"a\"}\n{\"chunkId\":1}\n")],
        &o,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:2: the row has no field for the primary key source_id (a key needs a value in every row) (character 1 of the line) (byte 18)",
            path(&dir, "m.jsonl")
        )
    );
    // The same from an array, one element a line: exact lines too.
    let dir = TempDir::new("json-keyed-array");
    let mut o = json_array("source_id TEXT, chunkId INT");
    o.key = Some("source_id".into());
    o.block_size = Some(40);
    let e = load_files(
        &dir,
        &[(
            "k.json",
            b"[\n{\"source_id\":\"a\",\"chunkId\":1},\n{\"source_id\":\"b\",\"chunkId\":1},\n{\"source_id\":\"c\",\"chunkId\":1},\n{\"source_id\":\"b\",\"chunkId\":2}\n]\n",
        )],
        &o,
    )
    .unwrap_err();
    let f = path(&dir, "k.json");
    assert!(
        e.to_string().starts_with(&format!(
            "duplicate key 'b' in table t: {f}:5 repeats the key of {f}:3"
        )),
        "{e}"
    );
}

/// One row of the property test: fields in a random order, some missing,
/// with values that make JSON hard.
#[derive(Debug, Clone)]
struct Obj {
    fields: Vec<(usize, String)>,
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "a",
            "\\\"",
            "\\\\",
            ",",
            "]",
            "}",
            "[",
            "{",
            "é",
            "\\u00e9",
            "\\ud83d\\ude00",
            " ",
            "\\n",
        ]),
        0..6,
    )
    .prop_map(|v| format!("\"{}\"", v.concat()))
}

fn value() -> impl Strategy<Value = (usize, String)> {
    prop_oneof![
        (
            Just(0usize),
            prop_oneof![
                any::<i32>().prop_map(|n| n.to_string()),
                Just("null".to_string())
            ]
        ),
        (Just(1usize), text()),
        (
            Just(2usize),
            prop_oneof![
                text(),
                text().prop_map(|t| format!("{{\"k\": [{t}, 1, {{}}]}}")),
                Just("[]".to_string()),
            ]
        ),
    ]
}

fn obj() -> impl Strategy<Value = Obj> {
    prop::collection::vec(value(), 0..4).prop_map(|v| {
        let mut seen = [false; 3];
        Obj {
            fields: v
                .into_iter()
                .filter(|(c, _)| !std::mem::replace(&mut seen[*c], true))
                .collect(),
        }
    })
}

const NAMES: [&str; 3] = ["n", "t", "j"];
const SCHEMA: &str = "n INT, t TEXT, j TEXT";

fn encode(o: &Obj, spaces: bool) -> String {
    let sep = if spaces { ", " } else { "," };
    let fields: Vec<String> = o
        .fields
        .iter()
        .map(|(c, v)| format!("\"{}\":{v}", NAMES[*c]))
        .collect();
    format!("{{{}}}", fields.join(sep))
}

/// One parse of the whole of `data`, in one block, into `schema`.
pub(crate) fn sequential(data: &[u8], shape: JsonShape, schema: &str) -> Vec<Vec<Option<String>>> {
    let schema: Schema = schema.parse().unwrap();
    let mut b = BatchBuilder::new(&schema, Arc::new(ValueOptions::default()), 16);
    parse_json_block(
        data,
        &JsonFormat {
            shape,
            ignore_unknown: false,
        },
        &schema,
        &mut b,
        RowPolicy::default(),
        None,
        &mut Vec::new(),
    )
    .unwrap();
    rows_of(&[b.finish().unwrap().0])
}

fn load_one(data: &[u8], o: &LoadOptions) -> Vec<Vec<Option<String>>> {
    let dir = TempDir::new("json-prop");
    let f: PathBuf = dir.write("p.json", data);
    let mut db = Database::open_writer(dir.path().join("db")).unwrap();
    load(&mut db, "t", &[Input::File(f)], o).unwrap();
    drop(db);
    rows(&dir)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn parallel_json_load_equals_sequential_parse(
        objs in prop::collection::vec((obj(), any::<bool>()), 1..30),
        block in 1usize..300,
        threads in 1usize..4,
        array in any::<bool>(),
        blank_lines in any::<bool>(),
    ) {
        let rows: Vec<String> = objs.iter().map(|(o, sp)| encode(o, *sp)).collect();
        let (file, body, shape) = if array {
            let body = rows.join(if blank_lines { ",\n\n " } else { ",\n" });
            (format!("[\n{body}\n]\n"), format!("{body}\n"), JsonShape::Array)
        } else {
            let body = rows.join(if blank_lines { "\n\n" } else { "\n" });
            (body.clone(), body, JsonShape::Lines)
        };
        let o = LoadOptions {
            schema: Some(SCHEMA.parse().unwrap()),
            format: Format::Json(JsonFormat { shape, ignore_unknown: false }),
            block_size: Some(block),
            threads: Some(threads),
            ..LoadOptions::default()
        };
        let want = sequential(body.as_bytes(), shape, SCHEMA);
        prop_assert_eq!(want.len(), objs.len());
        prop_assert_eq!(load_one(file.as_bytes(), &o), want);
    }
}

#[test]
fn match_by_name_and_positions_are_refused_for_json() {
    let dir = TempDir::new("json-opts");
    let mut o = jsonl("a INT");
    o.match_by_name = true;
    let e = load_files(&dir, &[("a.jsonl", b"{\"a\":1}")], &o).unwrap_err();
    assert!(matches!(e, Error::Config(_)), "{e}");
    let mut o = jsonl("a INT");
    o.columns = Some(vec![ColumnRef::Position(1)]);
    let e = load_files(&dir, &[("a.jsonl", b"[1]")], &o).unwrap_err();
    assert!(e.to_string().contains("is a position"), "{e}");
}

/// Bytes that make JSON hard, in any order.
fn noise() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop::sample::select(vec![
            &b"{"[..],
            b"}",
            b"[",
            b"]",
            b"\"",
            b"\\",
            b":",
            b",",
            b"\"n\":",
            b"\"t\":",
            b"1",
            b"-",
            b".",
            b"e",
            b"\n",
            b" ",
            b"null",
            b"true",
            b"\\u",
            b"d83d",
            b"\xc3\xa9",
            b"\xff",
            b"\x01",
            b"{\"n\":1,\"t\":\"x\"}\n",
        ]),
        0..40,
    )
    .prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Any bytes: the parser returns (never panics); skipping, every
    /// non-blank line of JSON lines is a row or a reject, and the builder
    /// holds one row for each.
    #[test]
    fn any_bytes_parse_or_fail_cleanly(data in noise(), array in any::<bool>(), skip in any::<bool>()) {
        let schema: Schema = "n INT, t TEXT".parse().unwrap();
        let shape = if array { JsonShape::Array } else { JsonShape::Lines };
        let mut b = BatchBuilder::new(&schema, Arc::new(ValueOptions::default()), 4);
        let mut rejects = Vec::new();
        let r = parse_json_block(
            &data,
            &JsonFormat { shape, ignore_unknown: false },
            &schema,
            &mut b,
            RowPolicy { skip_bad: skip, ..RowPolicy::default() },
            None,
            &mut rejects,
        );
        if skip {
            let info = r.unwrap();
            let drop: Vec<u32> = rejects.iter().map(|r| r.row).collect();
            let (batch, _) = b.finish_without(&drop).unwrap();
            prop_assert_eq!(batch.num_rows() as u64, info.rows);
            if !array {
                let lines = data
                    .split(|&c| c == b'\n')
                    .filter(|l| l.iter().any(|c| !matches!(c, b' ' | b'\t' | b'\r')))
                    .count() as u64;
                prop_assert_eq!(info.rows + rejects.len() as u64, lines);
                prop_assert_eq!(info.newlines, data.iter().filter(|&&c| c == b'\n').count() as u64);
            }
        } else if let Err(e) = r {
            prop_assert!(e.offset <= data.len());
        }
    }
}

#[test]
fn a_row_longer_than_max_line_size_is_an_error() {
    for (o, name, data) in [
        (
            jsonl("t TEXT"),
            "l.jsonl",
            format!("{{\"t\":\"a\"}}\n{{\"t\":\"{}\"}}\n", "x".repeat(100_000)),
        ),
        (
            json_array("t TEXT"),
            "a.json",
            format!(
                "[{{\"t\":\"a\"}},\n{{\"t\":\"{}\"}}]\n",
                "x".repeat(100_000)
            ),
        ),
    ] {
        let dir = TempDir::new("json-long");
        let mut o = o;
        o.block_size = Some(1024);
        o.max_line_size = 4096;
        let e = load_files(&dir, &[(name, data.as_bytes())], &o).unwrap_err();
        // The line where the long row starts, as for CSV.
        assert!(
            e.to_string().starts_with(&format!(
                "{}:2: no end of record within --max-line-size (4096 bytes)",
                path(&dir, name)
            )),
            "{e}"
        );
    }
}
