//! `sluice load` of JSON: the format from the file name or its first
//! bytes, fields by name, a new table's columns inferred.

use crate::{Tmp, fails, ok};

#[test]
fn jsonl_and_json_arrays_load_by_name_and_by_sniffing() {
    let t = Tmp::new();
    t.write(
        "events.jsonl",
        b"{\"id\":1,\"tags\":[\"a\",\"b\"],\"name\":\"caf\\u00e9\"}\n{\"name\":null,\"id\":2,\"extra\":true}\n",
    );
    let schema = "id BIGINT, name TEXT, tags TEXT";
    // Unknown fields are an error unless --ignore-unknown.
    let err = fails(&t.0, &["load", "--schema", schema, "ev", "events.jsonl"]);
    assert!(
        err.contains("events.jsonl:2: unknown field \"extra\""),
        "{err}"
    );
    let out = ok(
        &t.0,
        &[
            "load",
            "--schema",
            schema,
            "--ignore-unknown",
            "ev",
            "events.jsonl",
        ],
    );
    assert!(out.starts_with("loaded 2 rows ("), "{out}");
    // No extension: the first bytes say it is an array of arrays, whose
    // first row names the fields.
    t.write("more", b"[\n  [\"name\", \"id\"],\n  [\"x\", 3]\n]\n");
    ok(&t.0, &["load", "ev", "more"]);
    let rows = ok(&t.0, &["export", "ev"]);
    assert_eq!(
        rows,
        "id,name,tags\n1,caf\u{e9},\"[\"\"a\"\",\"\"b\"\"]\"\n2,,\n3,x,\n"
    );
    // A new table takes its columns from the rows' keys.
    let out = ok(&t.0, &["load", "--dry-run", "fresh", "events.jsonl"]);
    assert_eq!(
        out,
        "inferred from 1 file (2 JSON rows)\n--schema \"id BIGINT, tags TEXT, name TEXT, extra BOOLEAN\"\n"
    );
    let out = ok(&t.0, &["load", "fresh", "events.jsonl"]);
    assert!(out.starts_with("loaded 2 rows ("), "{out}");
    let err = fails(
        &t.0,
        &["load", "--format", "jsonl", "--tsv", "ev", "events.jsonl"],
    );
    assert!(
        err.contains("--delimiter is for CSV and TSV input"),
        "{err}"
    );
}
