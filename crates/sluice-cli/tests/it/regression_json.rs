//! `sluice load` of real-world JSON: pretty-printed objects (guessed from
//! the first line), a clear error for them as JSON lines, and quoted
//! column names of any text.

use crate::{Tmp, fails, ok};

const PRETTY: &[u8] =
    b"{\n  \"id\": 1,\n  \"name\": \"a\"\n}\n{\n  \"id\": 2,\n  \"name\": \"b\"\n}\n";

#[test]
fn pretty_printed_objects_are_rows() {
    let t = Tmp::new();
    // No extension: a first line holding only '{' means --format json.
    t.write("rows", PRETTY);
    let out = ok(
        &t.0,
        &["load", "--schema", "id INT, name TEXT", "t", "rows"],
    );
    assert!(out.starts_with("loaded 2 rows ("), "{out}");
    t.write(
        "wrapped.json",
        b"{\"count\": 1,\n \"data\": [\n  {\"id\": 3, \"name\": \"c\"}\n ]\n}\n",
    );
    ok(&t.0, &["load", "t", "wrapped.json"]);
    assert_eq!(
        ok(&t.0, &["query", "SELECT id, name FROM t ORDER BY id"]),
        "id,name\n1,a\n2,b\n3,c\n"
    );
}

#[test]
fn json_lines_error_on_a_lone_brace_names_format_json() {
    let t = Tmp::new();
    t.write("rows.jsonl", PRETTY);
    let err = fails(
        &t.0,
        &["load", "--schema", "id INT, name TEXT", "t", "rows.jsonl"],
    );
    assert_eq!(
        err,
        "error: loading table t; nothing was committed: rows.jsonl:1: the line ends inside an object: JSON lines needs one value per line (for objects spread over several lines, use --format json) (character 2 of the line) (byte 1)\n"
    );
}

#[test]
fn quoted_column_names_of_any_text() {
    let t = Tmp::new();
    t.write(
        "k.jsonl",
        b"{\"$lib\": \"x\", \"Duck\": 1, \"duck\": 2}\n{\"duck\": 3, \"Duck\": 4, \"$lib\": null}\n",
    );
    let schema = r#""$lib" TEXT, "Duck" INT, "duck" INT"#;
    // The schema is printed so that a shell passes it back as it is.
    assert_eq!(
        ok(
            &t.0,
            &["load", "--dry-run", "--schema", schema, "t", "k.jsonl"]
        ),
        "format jsonl\n--schema '\"$lib\" TEXT, \"Duck\" INT, \"duck\" INT'\n"
    );
    ok(&t.0, &["load", "--schema", schema, "t", "k.jsonl"]);
    assert_eq!(
        ok(
            &t.0,
            &["query", r#"SELECT "$lib", "Duck", duck FROM t ORDER BY 2"#]
        ),
        "$lib,Duck,duck\nx,1,2\n,4,3\n"
    );
}
