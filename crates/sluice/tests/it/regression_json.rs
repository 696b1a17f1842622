//! Real-world JSON: pretty-printed objects one after another, an object
//! holding the array of rows, a clear error for an object spread over
//! lines of JSON lines, and keys that are not identifiers or differ only
//! in case.

use std::sync::Arc;

use proptest::prelude::*;
use sluice::batch::{BatchBuilder, Schema, ValueOptions};
use sluice::load::{LoadOptions, load};
use sluice::parse::{Format, JsonFormat, JsonShape, RowPolicy, parse_json_block};
use sluice::query::query;
use sluice::source::Input;
use sluice::store::Database;

use crate::common::{TempDir, rows_of, table_rows};
use crate::json::sequential;

/// `--format json`.
fn json(schema: &str) -> LoadOptions {
    LoadOptions {
        schema: Some(schema.parse().unwrap()),
        format: Format::Json(JsonFormat {
            shape: JsonShape::Array,
            ignore_unknown: false,
        }),
        reload: sluice::load::Reload::All,
        ..LoadOptions::default()
    }
}

/// `--format jsonl`.
fn jsonl(schema: &str) -> LoadOptions {
    LoadOptions {
        format: Format::Json(JsonFormat::default()),
        ..json(schema)
    }
}

/// Loads `data` as file `name` of `dir` into table `t` (errors with the
/// file's path as FILE).
fn load_into(dir: &TempDir, name: &str, data: &[u8], o: &LoadOptions) -> Result<(), String> {
    let f = dir.write(name, data);
    let mut db = Database::open_writer(dir.path().join("db")).unwrap();
    let path = f.display().to_string();
    load(&mut db, "t", &[Input::File(f)], o).map_err(|e| e.to_string().replace(&path, "FILE"))?;
    Ok(())
}

/// Loads `data` as file `name` into table `t`: its rows, or the error.
fn load_data(name: &str, data: &[u8], o: &LoadOptions) -> Result<Vec<Vec<Option<String>>>, String> {
    let dir = TempDir::new("regression-json");
    load_into(&dir, name, data, o)?;
    Ok(table_rows(&dir.path().join("db"), "t"))
}

/// The rows of `sql` on the database of `dir`, or the error.
fn sql(dir: &TempDir, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
    let db = Database::open(dir.path().join("db")).unwrap();
    query(&db, sql, Some(2))
        .map(|r| rows_of(&r.batches))
        .map_err(|e| e.to_string())
}

fn some(v: &[&str]) -> Vec<Option<String>> {
    v.iter().map(|s| Some(s.to_string())).collect()
}

fn row(a: &str, b: Option<&str>) -> Vec<Option<String>> {
    vec![Some(a.to_string()), b.map(str::to_string)]
}

const PRETTY: &str = r#"{
  "id": 1,
  "name": "a {brace} and \"quote\" ]"
}
{
  "name": null,
  "id": 2
}{"id": 3, "name": "x"}

 {"id": 4,
  "name": "}{"}  {"id": 5}
"#;

#[test]
fn pretty_printed_objects_are_rows() {
    let want = vec![
        row("1", Some("a {brace} and \"quote\" ]")),
        row("2", None),
        row("3", Some("x")),
        row("4", Some("}{")),
        row("5", None),
    ];
    let o = json("id BIGINT, name TEXT");
    assert_eq!(load_data("p.json", PRETTY.as_bytes(), &o).unwrap(), want);
    // Errors name the line of the value, in any block.
    let bad = PRETTY.replace("\"id\": 4", "\"id\": \"four\"");
    for block in [8, 64, 1 << 20] {
        let o = LoadOptions {
            block_size: Some(block),
            threads: Some(2),
            ..json("id BIGINT, name TEXT")
        };
        assert_eq!(
            load_data("p.json", bad.as_bytes(), &o).unwrap_err(),
            "FILE:10: column 1 (id): invalid BIGINT value \"four\": not an integer (byte 114)",
            "block {block}"
        );
    }
}

#[test]
fn concatenated_values_load_at_every_block_size() {
    let schema = "id BIGINT, name TEXT";
    let mut text = String::new();
    for i in 0..40 {
        match i % 4 {
            0 => text.push_str(&format!(
                "{{\n  \"id\": {i},\n  \"name\": \"n{i} }}\"\n}}\n"
            )),
            1 => text.push_str(&format!("{{\"id\": {i}, \"name\": [1, {{\"x\": \"]\"}}]}}")),
            2 => text.push_str(&format!("\n\n{{ \"name\": \"\\\"{{\", \"id\": {i} }} ")),
            _ => text.push_str(&format!("{{\"id\":{i}}}\n")),
        }
    }
    let want = sequential(text.as_bytes(), JsonShape::Values, schema);
    assert_eq!(want.len(), 40);
    assert_eq!(want[1], row("1", Some(r#"[1, {"x": "]"}]"#)));
    for block in [1, 2, 3, 7, 16, 50, 333, 1 << 20] {
        for threads in [1, 2, 3] {
            let o = LoadOptions {
                block_size: Some(block),
                threads: Some(threads),
                ..json(schema)
            };
            assert_eq!(
                load_data("v.json", text.as_bytes(), &o).unwrap(),
                want,
                "block {block}, {threads} threads"
            );
        }
    }
}

#[test]
fn object_holding_an_array_of_rows() {
    let schema = "id BIGINT, name TEXT";
    let data = r#"{"meta": {"count": 2, "rows": [1, 2]}, "tags": ["x"],
 "data": [
  {"id": 1, "name": "a"},
  {"id": 2, "name": "],}"}
 ],
 "next": null}
"#;
    let want = vec![row("1", Some("a")), row("2", Some("],}"))];
    for block in [1, 5, 30, 1 << 20] {
        let o = LoadOptions {
            block_size: Some(block),
            threads: Some(2),
            ..json(schema)
        };
        assert_eq!(load_data("w.json", data.as_bytes(), &o).unwrap(), want);
    }
    // Array rows, with a header row, and an empty array.
    let o = json(schema);
    assert_eq!(
        load_data("w.json", br#"{"rows": [["name", "id"], ["a", 1]]}"#, &o).unwrap(),
        vec![row("1", Some("a"))]
    );
    assert_eq!(
        load_data("w.json", b"{\"rows\": [ ]}\n", &o).unwrap(),
        Vec::<Vec<Option<String>>>::new()
    );
    // An error in a row names its line.
    assert_eq!(
        load_data(
            "w.json",
            data.replace("\"id\": 2", "\"id\": 2.5").as_bytes(),
            &o
        )
        .unwrap_err(),
        "FILE:4: column 1 (id): invalid BIGINT value \"2.5\": not an integer (byte 100)"
    );
    // A field naming a column after the array: the object was a row.
    assert_eq!(
        load_data("w.json", br#"{"extra": [{"x": 1}], "id": 1}"#, &o).unwrap_err(),
        "FILE: the input was read as an object holding an array of rows (its fields before the array name no column), but the object also has field \"id\", which names a column (if the objects are rows, put a field that names a column first)"
    );
    // Anything after the object.
    assert_eq!(
        load_data("w.json", b"{\"data\": [{\"id\": 1}]}\n{\"id\": 2}\n", &o).unwrap_err(),
        "FILE: after the object holding the rows array, found '{' (the input holds one such object)"
    );
    // --json-rows names the field, whatever the others are.
    let named = |field: &str| LoadOptions {
        json_rows: Some(field.into()),
        ..json(schema)
    };
    let data = br#"{"id": 0, "rows": [{"id": 1}], "name": "n", "more": [{"id": 2}]}"#;
    assert_eq!(
        load_data("n.json", data, &named("rows")).unwrap(),
        vec![row("1", None)]
    );
    assert_eq!(
        load_data("n.json", data, &named("more")).unwrap(),
        vec![row("2", None)]
    );
    assert_eq!(
        load_data("n.json", data, &named("name")).unwrap_err(),
        "FILE:1: field \"name\" of the top-level object holds a string, not an array of rows (--json-rows) (byte 0)"
    );
    assert_eq!(
        load_data("n.json", data, &named("nope")).unwrap_err(),
        "FILE:1: the top-level object has no field \"nope\" (--json-rows) (byte 0)"
    );
    assert_eq!(
        load_data("n.json", b"[{\"id\": 1}]", &named("rows")).unwrap_err(),
        "FILE:1: --json-rows names a field of a top-level object, and this input is an array (byte 0)"
    );
    let o = LoadOptions {
        json_rows: Some("rows".into()),
        ..jsonl(schema)
    };
    assert_eq!(
        load_data("n.jsonl", data, &o).unwrap_err(),
        "--json-rows names the field of a top-level object that holds the rows, for --format json"
    );
    let o = json(schema);
    // A field naming a column first: the objects are rows.
    assert_eq!(
        load_data("w.json", br#"{"id": 1, "data": [{"id": 2}]}"#, &o).unwrap_err(),
        "FILE:1: unknown field \"data\" (the table's columns: id, name; --ignore-unknown skips such fields) (character 11 of the line) (byte 10)"
    );
}

#[test]
fn json_lines_error_on_a_lone_brace_names_format_json() {
    let o = jsonl("a INT");
    assert_eq!(
        load_data("p.jsonl", b"{\n  \"a\": 1\n}\n", &o).unwrap_err(),
        "FILE:1: the line ends inside an object: JSON lines needs one value per line (for objects spread over several lines, use --format json) (character 2 of the line) (byte 1)"
    );
}

#[test]
fn quoted_column_names_of_any_text() {
    let schema: Schema = r#""$lib" TEXT, "a b" INT, "say ""hi""" TEXT, id INT"#
        .parse()
        .unwrap();
    let names: Vec<&str> = schema.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["$lib", "a b", "say \"hi\"", "id"]);
    // Printed as it parses back.
    assert_eq!(
        schema.to_string(),
        r#""$lib" TEXT, "a b" INT, "say ""hi""" TEXT, id INT"#
    );
    assert_eq!(schema.to_string().parse::<Schema>().unwrap(), schema);
    // Commas and parentheses inside quotes belong to the name or literal.
    let s: Schema = r#""a, b (c" TEXT DEFAULT 'x, (y', n INT"#.parse().unwrap();
    assert_eq!(s.columns[0].name, "a, b (c");
    assert_eq!(s.columns[0].default.as_deref(), Some("x, (y"));
    assert_eq!(s.to_string().parse::<Schema>().unwrap(), s);
    // Bare names stay identifiers.
    assert_eq!(
        "$lib TEXT".parse::<Schema>().unwrap_err().to_string(),
        "invalid column name \"$lib\": use letters, digits and '_', not starting with a digit, at most 63 characters (or write any name in double quotes: \"$lib\" TEXT)"
    );
    let dir = TempDir::new("regression-json-names");
    let o = LoadOptions {
        schema: Some(schema),
        ..jsonl("x INT")
    };
    let data = br#"{"$lib": "core", "a b": 2, "say \"hi\"": "yes", "id": 1}
{"id": 2, "$lib": null}
"#;
    load_into(&dir, "n.jsonl", data, &o).unwrap();
    assert_eq!(
        sql(
            &dir,
            r#"SELECT "$lib", "a b" + 1, "say ""hi""" FROM t WHERE id = 1"#
        )
        .unwrap(),
        vec![some(&["core", "3", "yes"])]
    );
    assert_eq!(
        sql(&dir, r#"SELECT id FROM t WHERE "$lib" IS NULL"#).unwrap(),
        vec![some(&["2"])]
    );
}

#[test]
fn keys_differing_only_in_case_are_two_columns() {
    let schema: Schema = r#""Duck" INT, "duck" INT, Name TEXT"#.parse().unwrap();
    assert_eq!(schema.to_string(), r#""Duck" INT, "duck" INT, Name TEXT"#);
    assert_eq!(schema.to_string().parse::<Schema>().unwrap(), schema);
    // Bare, or one of them bare, they are one column named twice.
    for (s, twice) in [
        ("Duck INT, duck INT", "duck"),
        (r#""Duck" INT, duck INT"#, "duck"),
        (r#"a INT, "a" INT"#, "a"),
    ] {
        assert_eq!(
            s.parse::<Schema>().unwrap_err().to_string(),
            format!("column {twice:?} appears twice"),
            "{s}"
        );
    }
    let dir = TempDir::new("regression-json-case");
    let o = LoadOptions {
        schema: Some(schema),
        ..jsonl("x INT")
    };
    // Exact names first; another case only when one column alone matches.
    let data = br#"{"Duck": 1, "duck": 2, "NAME": "a"}
{"duck": 3, "Duck": 4, "name": "b"}
"#;
    load_into(&dir, "d.jsonl", data, &o).unwrap();
    assert_eq!(
        sql(&dir, "SELECT * FROM t ORDER BY 1").unwrap(),
        vec![some(&["1", "2", "a"]), some(&["4", "3", "b"])]
    );
    assert_eq!(
        sql(&dir, r#"SELECT "Duck", duck, name FROM t WHERE Duck = 4"#).unwrap(),
        vec![some(&["4", "3", "b"])]
    );
    // A key that matches both in another case names neither.
    assert_eq!(
        load_into(&dir, "e.jsonl", b"{\"DUCK\": 5}\n", &o).unwrap_err(),
        "FILE:1: unknown field \"DUCK\" (the table's columns: Duck, duck, Name; --ignore-unknown skips such fields) (character 2 of the line) (byte 1)"
    );
    assert_eq!(
        sql(&dir, "SELECT DUCK FROM t").unwrap_err(),
        "column name \"DUCK\" is ambiguous: columns Duck, duck differ in case alone (write the one meant in double quotes, as it is written) at line 1, column 8"
    );
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
            b"\n",
            b" ",
            b"null",
            b"\xff",
            b"{\"n\":1,\"t\":\"x\"}\n",
            b"{\n \"n\": 2\n}",
        ]),
        0..40,
    )
    .prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any bytes: the parser and the boundary scan of values one after
    /// another return, never panic; skipping, the builder holds a row for
    /// each row and each reject.
    #[test]
    fn any_bytes_as_values_parse_or_fail_cleanly(data in noise(), skip in any::<bool>(), target in 0usize..64) {
        let schema: Schema = "n INT, t TEXT".parse().unwrap();
        let mut b = BatchBuilder::new(&schema, Arc::new(ValueOptions::default()), 4);
        let mut rejects = Vec::new();
        let r = parse_json_block(
            &data,
            &JsonFormat { shape: JsonShape::Values, ignore_unknown: false },
            &schema,
            &mut b,
            RowPolicy { skip_bad: skip, ..RowPolicy::default() },
            None,
            &mut rejects,
        );
        if let Some(c) = sluice::parse::json::find_values_boundary(&data, target) {
            prop_assert!(c > target && c <= data.len());
        }
        if skip {
            let info = r.unwrap();
            let drop: Vec<u32> = rejects.iter().map(|r| r.row).collect();
            let (batch, _) = b.finish_without(&drop).unwrap();
            prop_assert_eq!(batch.num_rows() as u64, info.rows);
        } else if let Err(e) = r {
            prop_assert!(e.offset <= data.len());
        }
    }

    /// Pretty-printed objects load in parallel at any block size as one
    /// sequential parse reads them.
    #[test]
    fn parallel_values_load_equals_sequential_parse(
        rows in prop::collection::vec((any::<i32>(), "[a-z{}\\[\\]\",: ]{0,8}", 0usize..3), 1..20),
        block in 1usize..200,
        threads in 1usize..4,
    ) {
        let text: String = rows
            .iter()
            .map(|(id, name, sep)| {
                let name = serde_json::to_string(name).unwrap();
                match sep {
                    0 => format!("{{\n  \"id\": {id},\n  \"name\": {name}\n}}\n"),
                    1 => format!("{{\"name\":{name},\"id\":{id}}}"),
                    _ => format!(" {{\"id\": {id}, \"name\": [{name}]}}\n\n"),
                }
            })
            .collect();
        let schema = "id BIGINT, name TEXT";
        let want = sequential(text.as_bytes(), JsonShape::Values, schema);
        prop_assert_eq!(want.len(), rows.len());
        let o = LoadOptions { block_size: Some(block), threads: Some(threads), ..json(schema) };
        prop_assert_eq!(load_data("v.json", text.as_bytes(), &o).unwrap(), want);
    }
}

#[test]
fn rows_held_by_an_object_whose_fields_name_columns_too() {
    // GeoJSON: `type` comes before the rows array, and the rows have a
    // `type` too. Inference reads the rows of `features`; the load reads
    // the same rows, not the object as one row.
    let dir = TempDir::new("geojson");
    let f = dir.write(
        "g.json",
        br#"{"type": "FeatureCollection", "features": [
  {"type": "Feature", "id": 1, "properties": {"p": "a"}},
  {"type": "Feature", "id": 2, "properties": {"p": "b"}}
]}"#,
    );
    let inputs = [Input::File(f)];
    let o = sluice::infer::InferOptions::default();
    let inf = sluice::infer::infer_json(&inputs, &o, None).unwrap();
    assert_eq!(inf.json_rows.as_deref(), Some("features"));
    assert_eq!(
        inf.schema.to_string(),
        "id BIGINT, properties TEXT, type TEXT"
    );
    let lo = inf.load_options(LoadOptions {
        format: Format::Json(JsonFormat {
            shape: JsonShape::Array,
            ignore_unknown: false,
        }),
        ..LoadOptions::default()
    });
    let db_dir = dir.path().join("db");
    let mut db = Database::open_writer(&db_dir).unwrap();
    load(&mut db, "t", &inputs, &lo).unwrap();
    drop(db);
    assert_eq!(
        table_rows(&db_dir, "t"),
        vec![
            vec![
                Some("1".into()),
                Some(r#"{"p": "a"}"#.into()),
                Some("Feature".into())
            ],
            vec![
                Some("2".into()),
                Some(r#"{"p": "b"}"#.into()),
                Some("Feature".into())
            ],
        ]
    );
}
