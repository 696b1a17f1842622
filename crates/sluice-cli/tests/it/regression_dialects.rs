//! The dialect inference chose is printed, reaches the load, and holds
//! for loads that give the schema; when no dialect reads a file, the
//! error says what broke each.

use crate::{Tmp, fails, ok, sluice};

#[test]
fn stray_quote_in_unquoted_tsv_field() {
    let t = Tmp::new();
    t.write("tv.tsv", b"id\tsize\n1\t5\" screen\n2\t7\"\n");
    let out = ok(&t.0, &["load", "--dry-run", "t", "tv.tsv"]);
    assert_eq!(
        out,
        "inferred from 1 sample of 1 file (2 records): delimiter tab, header line, quote none\n--schema \"id BIGINT, size TEXT\"\n"
    );
    ok(&t.0, &["load", "-q", "t", "tv.tsv"]);
    assert_eq!(
        ok(&t.0, &["export", "t"]),
        "id,size\n1,\"5\"\" screen\"\n2,\"7\"\"\"\n"
    );
    // Appending to the table, and a given schema: the same dialect.
    ok(&t.0, &["load", "-q", "--reload", "t", "tv.tsv"]);
    ok(
        &t.0,
        &[
            "load",
            "-q",
            "--schema",
            "id BIGINT, size TEXT",
            "u",
            "tv.tsv",
        ],
    );
    assert_eq!(
        ok(&t.0, &["export", "u"]),
        "id,size\n1,\"5\"\" screen\"\n2,\"7\"\"\"\n"
    );
    // A given quote is kept: the load says where it breaks.
    let o = sluice(&t.0, &["load", "-q", "--quote", "\"", "v", "tv.tsv"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.starts_with("error: loading table v; nothing was committed: tv.tsv:2: column 2 (size): unexpected quote inside an unquoted field"),
        "{e}"
    );
}

#[test]
fn space_before_quoted_fields() {
    let t = Tmp::new();
    t.write(
        "s.csv",
        b"\"Year\", \"Score\"\n\"2020\", \"5\"\n\"2021\", \"7\"\n",
    );
    let out = ok(&t.0, &["load", "--dry-run", "t", "s.csv"]);
    assert_eq!(
        out,
        "inferred from 1 sample of 1 file (2 records): delimiter ',', header line, spaces around quoted fields trimmed\n--schema \"year BIGINT, score BIGINT\"\n"
    );
    ok(&t.0, &["load", "-q", "t", "s.csv"]);
    assert_eq!(ok(&t.0, &["export", "t"]), "year,score\n2020,5\n2021,7\n");
}

#[test]
fn space_delimited_file() {
    let t = Tmp::new();
    t.write("s.txt", b"x y\n1 a\n2 b\n");
    let out = ok(&t.0, &["load", "--dry-run", "t", "s.txt"]);
    assert_eq!(
        out,
        "inferred from 1 sample of 1 file (2 records): delimiter space, header line\n--schema \"x BIGINT, y TEXT\"\n"
    );
    ok(&t.0, &["load", "-q", "t", "s.txt"]);
    assert_eq!(ok(&t.0, &["export", "t"]), "x,y\n1,a\n2,b\n");
}

#[test]
fn backslash_escapes_are_detected() {
    let t = Tmp::new();
    t.write("e.csv", b"id,text\n1,\"say \\\"hi\\\"\"\n");
    let out = ok(&t.0, &["load", "--dry-run", "t", "e.csv"]);
    assert_eq!(
        out,
        "inferred from 1 sample of 1 file (1 records): delimiter ',', header line, escape '\\'\n--schema \"id BIGINT, text TEXT\"\n"
    );
    ok(&t.0, &["load", "-q", "t", "e.csv"]);
    assert_eq!(
        ok(&t.0, &["export", "t"]),
        "id,text\n1,\"say \"\"hi\"\"\"\n"
    );
}

#[test]
fn inference_failure_names_each_dialect_and_line() {
    let t = Tmp::new();
    t.write("bad.csv", b"\"a\"b,c\nd,\"e,f\"\n");
    let e = fails(&t.0, &["load", "t", "bad.csv"]);
    assert_eq!(
        e,
        "error: inferring the schema: bad.csv: no records to infer a schema from: no dialect reads its first records (tried \
         comma, tab, pipe, semicolon, space, whitespace with quote '\"': line 1, column 4: unexpected 'b' after a closing quote (expected a delimiter or the end of the line); \
         comma, tab, pipe, semicolon with quote '\"', spaces around quoted fields trimmed: line 1, column 4: unexpected 'b' after a closing quote (expected a delimiter or the end of the line); \
         comma with quote none: line 2: the delimiter inside a quoted field; \
         tab, pipe, semicolon, space, whitespace with quote none: one field per record); \
         give --delimiter, --quote or --schema\n"
    );
}
