//! Edges of real-world files: empty files, a name that says CSV over
//! content that looks like JSON, a header one field short of its rows,
//! title lines above the header, and hints that fit the error they follow.

use crate::{Tmp, fails, ok, sluice};

/// Rows of table `t` as CSV, without the header.
fn rows(t: &Tmp) -> String {
    ok(&t.0, &["export", "--header", "false", "t"])
}

/// The summary after its first line (which holds timings).
fn after_first_line(out: &str) -> &str {
    out.split_once('\n').map_or("", |(_, rest)| rest)
}

#[test]
fn empty_file_with_a_schema_is_zero_rows() {
    let t = Tmp::new();
    t.write("empty.csv", b"");
    let out = ok(
        &t.0,
        &["load", "--schema", "a INT, b TEXT", "t", "empty.csv"],
    );
    assert!(
        out.starts_with("loaded 0 rows (0 B) from 1 file into t in "),
        "{out}"
    );
    assert_eq!(
        after_first_line(&out),
        "1 file was empty (0 rows): empty.csv\n"
    );
    assert_eq!(
        ok(&t.0, &["info"]).lines().next(),
        Some("t: 0 rows, 0 B on disk, 0 segments")
    );
    // A header and no rows is 0 rows too, the table's names from it;
    // one line of words alone is refused (a header, or a row?) unless
    // --header says (or R's quoted header with an empty first name).
    t.write("header.csv", b"id,name\n");
    let e = fails(&t.0, &["load", "u", "header.csv"]);
    assert!(
        e.contains("cannot tell whether line 1 is a header") && e.contains("--header"),
        "{e}"
    );
    let out = ok(&t.0, &["load", "--header", "u", "header.csv"]);
    assert!(
        out.contains("loaded 0 rows (8 B) from 1 file into u in "),
        "{out}"
    );
    assert!(
        out.ends_with(" thread\n") || out.ends_with(" threads\n"),
        "{out}"
    );
    assert!(ok(&t.0, &["info", "u"]).contains("  id "), "no column id");
    // Nothing to infer the columns from: an error that says so.
    assert_eq!(
        fails(&t.0, &["load", "v", "empty.csv"]),
        "error: inferring the schema: empty.csv: file is empty: nothing to infer the table's columns from; give them with --schema\n"
    );
    t.write("empty2.csv", b"");
    assert_eq!(
        fails(&t.0, &["load", "v", "empty.csv", "empty2.csv"]),
        "error: inferring the schema: all 2 input files are empty: nothing to infer the table's columns from; give them with --schema\n"
    );
}

#[test]
fn empty_file_in_a_directory_load_is_zero_rows() {
    let t = Tmp::new();
    // The empty file sorts first: the others give the columns and the
    // delimiter.
    t.write("d/a.csv", b"");
    t.write("d/b.csv", b"id|name\n1|x\n");
    t.write("d/c.csv", b"");
    t.write("d/d.csv", b"id|name\n2|y\n");
    let out = ok(&t.0, &["load", "t", "d"]);
    assert!(
        out.starts_with("loaded 2 rows (24 B) from 4 files into t in "),
        "{out}"
    );
    assert_eq!(
        after_first_line(&out),
        "2 files were empty (0 rows each): d/a.csv, d/c.csv\n"
    );
    assert_eq!(rows(&t), "1,x\n2,y\n");
    // With a schema, the delimiter is sniffed past the empty file too.
    let out = ok(&t.0, &["load", "--schema", "id INT, name TEXT", "u", "d"]);
    assert_eq!(
        after_first_line(&out),
        "2 files were empty (0 rows each): d/a.csv, d/c.csv\n"
    );
    assert_eq!(
        ok(&t.0, &["export", "--header", "false", "u"]),
        "1,x\n2,y\n"
    );
    // Journaled as loaded: run again, nothing is read twice.
    let out = ok(&t.0, &["load", "t", "d"]);
    assert_eq!(
        out,
        "skipped 4 files loaded by earlier commits (--reload loads them again)\nnothing to load into t\n"
    );
}

#[test]
fn csv_name_wins_over_a_bracket_first_byte() {
    let t = Tmp::new();
    // Log-style fields in brackets: each line looks like a JSON array.
    t.write("log.csv", b"[1],[2]\n[3],[4]\n");
    let out = ok(&t.0, &["load", "t", "log.csv"]);
    assert!(out.starts_with("loaded 2 rows (16 B) from 1 file"), "{out}");
    assert_eq!(rows(&t), "[1],[2]\n[3],[4]\n");
    // A name that does not say: sniffed, the columns inferred from the
    // first line's first value, and the error says what was detected and
    // how to read it as CSV.
    t.write("log.txt", b"[1],[2]\n[3],[4]\n");
    let o = sluice(&t.0, &["load", "u", "log.txt"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "inferred from 1 file (1 JSON rows)\n--schema \"c1 BIGINT\"\nerror: loading table u; nothing was committed: log.txt:1: expected the end of the line after a row, found ',' (JSON lines hold one value per line) (character 4 of the line) (byte 3)\nhint: log.txt was read as JSON lines: its name does not say its format (.csv, .tsv, .json, .jsonl) and its text starts like JSON (\"[1],[2]\"); if it is CSV, give --format csv\n"
    );
    ok(&t.0, &["load", "--format", "csv", "u", "log.txt"]);
    assert_eq!(
        ok(&t.0, &["export", "--header", "false", "u"]),
        "[1],[2]\n[3],[4]\n"
    );
}

#[test]
fn trailing_delimiter_after_a_short_header() {
    let t = Tmp::new();
    // Every row ends with a delimiter; the header does not.
    t.write("tr.csv", b"id,qty\n1,2,\n3,4,\n");
    let out = ok(&t.0, &["load", "--dry-run", "t", "tr.csv"]);
    assert_eq!(
        out,
        "inferred from 1 sample of 1 file (2 records): delimiter ',', header line\n--schema \"id BIGINT, qty BIGINT, c3 TEXT\"\n"
    );
    ok(&t.0, &["load", "-q", "t", "tr.csv"]);
    assert_eq!(ok(&t.0, &["export", "t"]), "id,qty,c3\n1,2,\n3,4,\n");
    // Appended, the short header is known again, not read as data.
    t.write("tr2.csv", b"id,qty\n5,6,\n");
    ok(&t.0, &["load", "-q", "t", "tr2.csv"]);
    assert_eq!(rows(&t), "1,2,\n3,4,\n5,6,\n");
    // The printed schema reads the file the same way.
    ok(
        &t.0,
        &[
            "load",
            "-q",
            "--schema",
            "id BIGINT, qty BIGINT, c3 TEXT",
            "u",
            "tr.csv",
        ],
    );
    assert_eq!(ok(&t.0, &["export", "u"]), "id,qty,c3\n1,2,\n3,4,\n");
}

#[test]
fn notes_above_a_table_are_skipped_and_said() {
    // With two rows or more below them, inference finds the notes: the
    // summary says how many lines it skipped, and how to say otherwise.
    let t = Tmp::new();
    t.write(
        "report.csv",
        b"Sales report\nGenerated 2024-01-31\n\nid,qty,price\n1,2,3.50\n4,5,6.00\n",
    );
    let o = sluice(&t.0, &["load", "t", "report.csv"]);
    assert_eq!(o.status.code(), Some(0));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        err.contains("delimiter ',', header line, 3 lines of notes above the table skipped (--skip 3 to give another number)"),
        "{err}"
    );
    assert_eq!(
        ok(&t.0, &["export", "t"]),
        "id,qty,price\n1,2,3.50\n4,5,6.00\n"
    );
    // Appending another file of the same tool: the same lines skipped.
    t.write(
        "report2.csv",
        b"Sales report\nGenerated 2024-02-29\n\nid,qty,price\n7,8,9.00\n10,11,12.00\n",
    );
    let o = sluice(&t.0, &["load", "t", "report2.csv"]);
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        err.contains("3 lines of notes above the data skipped in each file"),
        "{err}"
    );
    assert_eq!(
        ok(&t.0, &["query", "SELECT count(*) FROM t"]).trim_end(),
        "count(*)\n4"
    );
    // --skip 0 looks for none: the title is a record of one field.
    let e = load_error(&t, &["load", "-q", "--skip", "0", "u", "report.csv"]);
    assert!(e.contains("report.csv:"), "{e}");
    // A program's report, no table: one line a row, said so.
    t.write(
        "vecm.txt",
        b"*** Tue 21 Jun 2016 ***\nd(Dp)(t-1)|   -0.515\n          |   (0.153)\nend of report\n",
    );
    let o = sluice(&t.0, &["load", "v", "vecm.txt"]);
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        err.contains("delimiter none (each line one field), no header line, no delimiter splits the lines alike"),
        "{err}"
    );
    assert_eq!(
        ok(&t.0, &["export", "v"]),
        "c1\n*** Tue 21 Jun 2016 ***\nd(Dp)(t-1)|   -0.515\n          |   (0.153)\nend of report\n"
    );
    // Columns aligned by spaces, given.
    t.write("al.txt", b"  a    b\n  1    x y\n");
    let e = load_error(
        &t,
        &["load", "-q", "--delimiter", "whitespace", "w", "al.txt"],
    );
    assert!(
        e.contains("al.txt:1: found a record with 2 fields, expected 3"),
        "{e}"
    );
}

/// Runs a load that must fail; returns its stderr (an error and a hint
/// are two lines).
fn load_error(t: &Tmp, args: &[&str]) -> String {
    let o = sluice(&t.0, args);
    assert_eq!(o.status.code(), Some(2), "sluice {args:?} should fail");
    String::from_utf8(o.stderr).unwrap()
}

#[test]
fn preamble_lines_hint_skip() {
    let t = Tmp::new();
    t.write(
        "report.csv",
        b"Sales report\nGenerated 2024-01-31\n\nid,qty,price\n1,2,3.50\n",
    );
    assert_eq!(
        load_error(&t, &["load", "-q", "t", "report.csv"]),
        "error: loading table t; nothing was committed: report.csv:1: found a record with 1 field, expected 3 (byte 0)\nhint: lines 1 to 3 do not split into 3 fields like the records below them; if they are a title or notes above the data, load with --skip 3\n"
    );
    // As the hint says: the header below the notes is a header.
    ok(&t.0, &["load", "-q", "--skip", "3", "t", "report.csv"]);
    assert_eq!(ok(&t.0, &["export", "t"]), "id,qty,price\n1,2,3.50\n");
    // One title line, a given schema: found and skipped.
    t.write("two.csv", b"Inventory\n1,2,3\n4,5,6\n");
    ok(
        &t.0,
        &[
            "load",
            "-q",
            "--schema",
            "a INT, b INT, c INT",
            "u",
            "two.csv",
        ],
    );
    assert_eq!(ok(&t.0, &["export", "u"]), "a,b,c\n1,2,3\n4,5,6\n");
    // A short record among the data is no preamble: the hint names
    // --rejects, not --skip.
    t.write("ragged.csv", b"1,2,3\n4,5\n6,7,8\n");
    assert_eq!(
        load_error(
            &t,
            &["load", "--schema", "a INT, b INT, c INT", "u", "ragged.csv"]
        ),
        "error: loading table u; nothing was committed: ragged.csv:2: found a record with 2 fields, expected 3 (byte 6)\nhint: to set aside records with another number of fields and load the others, load with --rejects FILE (or --on-error skip); if the delimiter is another, give --delimiter\n"
    );
}

#[test]
fn quoting_error_hint_does_not_suggest_types() {
    let t = Tmp::new();
    // (Inference would read this file with no quote; --quote keeps it.)
    t.write("q.csv", b"id,name\n1,x\n2,\"y\"z\n");
    assert_eq!(
        load_error(&t, &["load", "-q", "--quote", "\"", "t", "q.csv"]),
        "error: loading table t; nothing was committed: q.csv:3: column 2 (name): unexpected 'z' after a closing quote (expected a delimiter or the end of the line) (byte 17)\nhint: a field that starts with a quote ends at the next lone quote, and a quote inside it is doubled (\"\"); if quotes in this file are data, load with --quote ''; if it escapes them with a backslash, with --escape '\\'\n"
    );
    // Bad UTF-8 in a TEXT column: the message names --encoding, and
    // --types cannot help.
    t.write("u.csv", b"id,name\n1,x\n2,y\xff\n");
    assert_eq!(
        load_error(&t, &["load", "-q", "t", "u.csv"]),
        "error: loading table t; nothing was committed: u.csv:3: column 2 (name): invalid TEXT value \"y\u{fffd}\": invalid UTF-8 at byte 1 of the value (another encoding? see --encoding) (byte 14)\n"
    );
    // A value that contradicts a chosen type still gets its hint.
    t.write("v.csv", b"id,name\n1,x\nn/a,z\n");
    assert_eq!(
        load_error(&t, &["load", "-q", "--types", "id=BIGINT", "t", "v.csv"]),
        "error: loading table t; nothing was committed: v.csv:3: column 1 (id): invalid BIGINT value \"n/a\": not an integer (byte 12)\nhint: id is BIGINT, given by --types; load it with --types id=TEXT (or another type), or give the whole --schema\n"
    );
}

#[test]
fn comment_line_hint_suggests_comment() {
    let t = Tmp::new();
    t.write("c.csv", b"a,b\n1,2\n# totals below\n3,4\n");
    assert_eq!(
        load_error(
            &t,
            &["load", "-q", "--schema", "a INT, b INT", "t", "c.csv"]
        ),
        "error: loading table t; nothing was committed: c.csv:3: found a record with 1 field, expected 2 (the line starts with '#') (byte 8)\nhint: if lines starting with '#' are comments, load with --comment '#' to skip them\n"
    );
    // Inferred, such lines are found to be comments, and the summary
    // says so.
    let o = sluice(&t.0, &["load", "v", "c.csv"]);
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        err.contains("lines starting with '#' among the records skipped as comments"),
        "{err}"
    );
    assert_eq!(ok(&t.0, &["export", "v"]), "a,b\n1,2\n3,4\n");
    // As many fields as the table: a value error, the same hint.
    t.write("d.csv", b"a,b\n1,2\n#x,4\n");
    assert_eq!(
        load_error(&t, &["load", "--schema", "a INT, b INT", "u", "d.csv"]),
        "error: loading table u; nothing was committed: d.csv:3: column 1 (a): invalid INT value \"#x\": not an integer (the line starts with '#') (byte 8)\nhint: if lines starting with '#' are comments, load with --comment '#' to skip them\n"
    );
    ok(&t.0, &["load", "-q", "--comment", "#", "t", "c.csv"]);
    assert_eq!(rows(&t), "1,2\n3,4\n");
}

#[test]
fn wrong_field_count_is_reported_before_a_type_error() {
    let t = Tmp::new();
    // Line 3 has a bad first value and a field too many: the count is
    // what is wrong (the values are shifted).
    t.write("w.csv", b"a,b\n1,2\nx,3,4\n");
    let schema = "a INT, b INT";
    assert_eq!(
        load_error(&t, &["load", "--schema", schema, "t", "w.csv"]),
        "error: loading table t; nothing was committed: w.csv:3: found a record with 3 fields, expected 2 (byte 8)\nhint: to set aside records with another number of fields and load the others, load with --rejects FILE (or --on-error skip); if the delimiter is another, give --delimiter\n"
    );
    t.write("s.csv", b"a,b\n1,2\nx\n");
    assert_eq!(
        load_error(&t, &["load", "--schema", schema, "t", "s.csv"]),
        "error: loading table t; nothing was committed: s.csv:3: found a record with 1 field, expected 2 (byte 8)\nhint: to set aside records with another number of fields and load the others, load with --rejects FILE (or --on-error skip); if the delimiter is another, give --delimiter\n"
    );
    // Too few fields allowed: the value error it is.
    assert_eq!(
        load_error(
            &t,
            &[
                "load",
                "--allow-missing-columns",
                "--schema",
                schema,
                "t",
                "s.csv"
            ]
        ),
        "error: loading table t; nothing was committed: s.csv:3: column 1 (a): invalid INT value \"x\": not an integer (byte 8)\n"
    );
}
