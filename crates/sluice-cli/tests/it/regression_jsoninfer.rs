//! A new table's columns are inferred from JSON input, as from CSV.

use crate::{Tmp, ok};

#[test]
fn json_lines_columns_are_inferred() {
    let t = Tmp::new();
    t.write(
        "events.jsonl",
        b"{\"id\":1,\"name\":\"a\",\"price\":1.5,\"ok\":true}\n{\"id\":2,\"name\":\"b\",\"price\":2.25,\"ok\":false}\n",
    );
    let out = ok(&t.0, &["load", "--dry-run", "ev", "events.jsonl"]);
    assert_eq!(
        out,
        "inferred from 1 file (2 JSON rows)\n--schema \"id BIGINT, name TEXT, price DECIMAL(18,2), ok BOOLEAN\"\n"
    );
    let out = ok(&t.0, &["load", "ev", "events.jsonl"]);
    assert!(out.contains("loaded 2 rows ("), "{out}");
    assert_eq!(
        ok(&t.0, &["export", "ev"]),
        "id,name,price,ok\n1,a,1.50,true\n2,b,2.25,false\n"
    );
}

#[test]
fn json_array_of_objects_columns_are_inferred() {
    let t = Tmp::new();
    t.write(
        "rows.json",
        br#"[
  {"zip": "02134", "day": "2024-01-31", "n": 3, "meta": {"a": 1}},
  {"zip": "10001", "day": "2024-02-01", "meta": {"a": 2}, "extra": "x"}
]
"#,
    );
    let out = ok(&t.0, &["load", "--dry-run", "r", "rows.json"]);
    assert_eq!(
        out,
        "inferred from 1 file (2 JSON rows)\n--schema \"zip TEXT, day DATE, n BIGINT, meta TEXT, extra TEXT\"\n"
    );
    ok(&t.0, &["load", "r", "rows.json"]);
    assert_eq!(
        ok(&t.0, &["export", "r"]),
        "zip,day,n,meta,extra\n02134,2024-01-31,3,\"{\"\"a\"\": 1}\",\n10001,2024-02-01,,\"{\"\"a\"\": 2}\",x\n"
    );
}

#[test]
fn pretty_printed_values_columns_are_inferred() {
    let t = Tmp::new();
    t.write(
        "values.json",
        b"{\n  \"b\": 1,\n  \"a\": \"x\"\n}\n{\n  \"b\": 2,\n  \"a\": \"y\"\n}\n",
    );
    let out = ok(&t.0, &["load", "--dry-run", "v", "values.json"]);
    assert_eq!(
        out,
        "inferred from 1 file (2 JSON rows)\n--schema \"b BIGINT, a TEXT\"\n"
    );
    ok(&t.0, &["load", "v", "values.json"]);
    assert_eq!(ok(&t.0, &["export", "v"]), "b,a\n1,x\n2,y\n");
}

#[test]
fn json_integers_beyond_a_double_are_text() {
    let t = Tmp::new();
    t.write("big.jsonl", b"{\"big\": 12345678901234567890123}\n");
    let out = ok(&t.0, &["load", "--dry-run", "b", "big.jsonl"]);
    assert_eq!(
        out,
        "inferred from 1 file (1 JSON rows)\n--schema \"big TEXT\"\n"
    );
    ok(&t.0, &["load", "b", "big.jsonl"]);
    assert_eq!(ok(&t.0, &["export", "b"]), "big\n12345678901234567890123\n");
}
