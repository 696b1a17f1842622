//! Real-world files load as written or fail: classic Mac line ends,
//! blank lines before a header, R's `write.csv` header, comment lines
//! above the data, blank lines in one-column files.

use crate::{Tmp, fails, ok, sluice};

#[test]
fn cr_only_line_ends_are_records() {
    let t = Tmp::new();
    t.write("mac.csv", b"a|b|c\r1|x,y|3\r4|z|6\r");
    let out = ok(&t.0, &["load", "--dry-run", "t", "mac.csv"]);
    assert_eq!(
        out,
        "inferred from 1 sample of 1 file (2 records): delimiter '|', header line, line ends a lone CR (classic Mac OS)\n--schema \"a BIGINT, b TEXT, c BIGINT\"\n"
    );
    ok(&t.0, &["load", "-q", "t", "mac.csv"]);
    assert_eq!(ok(&t.0, &["export", "t"]), "a,b,c\n1,\"x,y\",3\n4,z,6\n");
    // A given schema: each file's line ends are told from its start.
    ok(
        &t.0,
        &[
            "load",
            "-q",
            "--schema",
            "a INT, b TEXT, c INT",
            "u",
            "mac.csv",
        ],
    );
    assert_eq!(ok(&t.0, &["export", "u"]), "a,b,c\n1,\"x,y\",3\n4,z,6\n");
    // Errors name the line as the file counts them.
    t.write("bad.csv", b"a|b\r1|2\r3|x\r");
    let o = sluice(&t.0, &["load", "--schema", "a INT, b INT", "v", "bad.csv"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "error: loading table v; nothing was committed: bad.csv:3: column 2 (b): invalid INT value \"x\": not an integer (byte 10)\n"
    );
    // --line-end lf reads a lone CR as data, as before.
    t.write("one.csv", b"x\ry\r");
    ok(
        &t.0,
        &[
            "load",
            "-q",
            "--line-end",
            "lf",
            "--no-header",
            "--schema",
            "a TEXT",
            "w",
            "one.csv",
        ],
    );
    assert_eq!(ok(&t.0, &["export", "w"]), "a\n\"x\ry\"\n");
}

#[test]
fn blank_first_line_is_not_a_second_header() {
    let t = Tmp::new();
    t.write("f.txt", b"\nname val\nb 2\nc 3\n");
    let out = ok(&t.0, &["load", "t", "f.txt"]);
    assert!(out.starts_with("loaded 2 rows "), "{out}");
    // (Delimited by single spaces.)
    assert_eq!(ok(&t.0, &["export", "t"]), "name,val\nb,2\nc,3\n");
    // Appending: the header is told by its names, after the blank line.
    ok(&t.0, &["load", "-q", "--reload", "t", "f.txt"]);
    assert_eq!(ok(&t.0, &["export", "t"]), "name,val\nb,2\nc,3\nb,2\nc,3\n");
    // --skip, then blank lines, then the header; line numbers count them all.
    t.write("g.csv", b"junk\n\n\na,b\n1,2\nx,3\n");
    let o = sluice(
        &t.0,
        &[
            "load",
            "--skip",
            "1",
            "--header",
            "--schema",
            "a INT, b INT",
            "u",
            "g.csv",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "error: loading table u; nothing was committed: g.csv:6: column 1 (a): invalid INT value \"x\": not an integer (byte 15)\n"
    );
    t.write("g.csv", b"junk\n\n\na,b\n1,2\n3,4\n");
    ok(&t.0, &["load", "-q", "--skip", "1", "u", "g.csv"]);
    assert_eq!(ok(&t.0, &["export", "u"]), "a,b\n1,2\n3,4\n");
    // A header of the wrong width is reported where it is.
    let o = sluice(
        &t.0,
        &[
            "load", "--skip", "1", "--header", "--schema", "a INT", "v", "g.csv",
        ],
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "error: loading table v; nothing was committed: g.csv:4: the header has 2 fields, the table has 1 columns (byte 7)\n"
    );
}

#[test]
fn r_write_csv_header_is_a_header() {
    let t = Tmp::new();
    // write.csv(data.frame(x = c("a", "c"), y = c("b", "d")))
    t.write(
        "r.csv",
        b"\"\",\"x\",\"y\"\n\"1\",\"a\",\"b\"\n\"2\",\"c\",\"d\"\n",
    );
    let out = ok(&t.0, &["load", "--dry-run", "t", "r.csv"]);
    assert_eq!(
        out,
        "inferred from 1 sample of 1 file (2 records): delimiter ',', header line\n--schema \"c1 BIGINT, x TEXT, y TEXT\"\n"
    );
    let out = ok(&t.0, &["load", "t", "r.csv"]);
    assert!(out.starts_with("loaded 2 rows "), "{out}");
    assert_eq!(ok(&t.0, &["export", "t"]), "c1,x,y\n1,a,b\n2,c,d\n");
    // Appended, the same header is known by the names it gave.
    ok(&t.0, &["load", "-q", "--reload", "t", "r.csv"]);
    assert_eq!(
        ok(&t.0, &["query", "select count(*), count(c1) from t"]),
        "count(*),count(c1)\n4,4\n"
    );
    // Numeric columns too.
    t.write("n.csv", b"\"\",\"x\",\"y\"\n\"1\",2,3\n");
    ok(&t.0, &["load", "-q", "u", "n.csv"]);
    assert_eq!(ok(&t.0, &["export", "u"]), "c1,x,y\n1,2,3\n");
}

#[test]
fn r_header_over_text_row_names_and_na_values_is_a_header() {
    // Two shapes a corpus of R datasets showed loaded with their header
    // as a data row: row names that are text, and numeric columns whose
    // missing values are written NA (so every column is TEXT).
    let t = Tmp::new();
    t.write(
        "un.csv",
        b"\"\",\"infant.mortality\",\"gdp\"\n\"Afghanistan\",154,2848\n\"Albania\",32,863\n\"American.Samoa\",11,NA\n\"Andorra\",NA,19000\n",
    );
    ok(&t.0, &["load", "-q", "un", "un.csv"]);
    assert_eq!(
        ok(&t.0, &["export", "un"]),
        "c1,infant_mortality,gdp\nAfghanistan,154,2848\nAlbania,32,863\nAmerican.Samoa,11,NA\nAndorra,NA,19000\n"
    );
    t.write(
        "dict.csv",
        b"\"\",\"Content\"\n\"V1\",\"Do you often long for excitement?\"\n\"V2\",\"Are you usually carefree?\"\n",
    );
    ok(&t.0, &["load", "-q", "dict", "dict.csv"]);
    assert_eq!(
        ok(&t.0, &["export", "dict"]),
        "c1,content\nV1,Do you often long for excitement?\nV2,Are you usually carefree?\n"
    );
    // Without the empty name, a first row of text over text is data
    // when its values are not name-like.
    t.write("data.csv", b"x1,Do you?\nx2,Are you?\n");
    ok(&t.0, &["load", "-q", "data", "data.csv"]);
    assert_eq!(
        ok(&t.0, &["query", "select count(*) from data"]),
        "count(*)\n2\n"
    );
}

#[test]
fn comment_lines_are_not_data() {
    let t = Tmp::new();
    t.write(
        "f.csv",
        b"# exported by a tool\n# 2024-01-31, all stations\n# units: mm\n#\n# end of notes\na;b\n1;2\n",
    );
    let out = ok(&t.0, &["load", "--dry-run", "t", "f.csv"]);
    assert_eq!(
        out,
        "inferred from 1 sample of 1 file (1 records): delimiter ';', header line, comment lines ('#') above the data skipped\n--schema \"a BIGINT, b BIGINT\"\n"
    );
    let out = ok(&t.0, &["load", "t", "f.csv"]);
    assert!(out.starts_with("loaded 1 rows "), "{out}");
    assert_eq!(ok(&t.0, &["export", "t"]), "a,b\n1,2\n");
    // Appending (no inference): the same notes are skipped.
    ok(&t.0, &["load", "-q", "--reload", "t", "f.csv"]);
    assert_eq!(ok(&t.0, &["export", "t"]), "a,b\n1,2\n1,2\n");
    // Without a header; appended, the first row is no header named c1, c2.
    t.write("g.csv", b"# note\n# more notes here\n1;2\n3;4\n");
    ok(&t.0, &["load", "-q", "u", "g.csv"]);
    ok(&t.0, &["load", "-q", "--reload", "u", "g.csv"]);
    assert_eq!(ok(&t.0, &["export", "u"]), "c1,c2\n1,2\n3,4\n1,2\n3,4\n");
    // Only the notes above the data: a `#` value below them is data, and
    // lines that split like the data are data.
    t.write("h.csv", b"# colours\nc,n\n#ff0000,red\n#00ff00,green\n");
    ok(&t.0, &["load", "-q", "v", "h.csv"]);
    assert_eq!(
        ok(&t.0, &["export", "v"]),
        "c,n\n#ff0000,red\n#00ff00,green\n"
    );
    t.write("k.csv", b"#ff0000,red\n#00ff00,green\n");
    ok(&t.0, &["load", "-q", "w", "k.csv"]);
    assert_eq!(
        ok(&t.0, &["export", "w"]),
        "c1,c2\n#ff0000,red\n#00ff00,green\n"
    );
}

#[test]
fn blank_lines_in_one_column_files() {
    let t = Tmp::new();
    t.write("one.csv", b"\nv\na1\n\nb2\r\n\r\nc3\n");
    // A one-column table: a blank line is an empty value, a NULL row
    // (blank lines before the header are no rows).
    let out = ok(&t.0, &["load", "t", "one.csv"]);
    assert!(out.starts_with("loaded 5 rows "), "{out}");
    assert_eq!(
        ok(&t.0, &["query", "select count(*), count(v) from t"]),
        "count(*),count(v)\n5,3\n"
    );
    // --blank-lines skip: no rows.
    ok(
        &t.0,
        &["load", "-q", "--blank-lines", "skip", "u", "one.csv"],
    );
    assert_eq!(ok(&t.0, &["export", "u"]), "v\na1\nb2\nc3\n");
    // Wider tables skip them; --blank-lines null makes them too few fields.
    t.write("two.csv", b"a,b\n1,2\n\n3,4\n");
    ok(&t.0, &["load", "-q", "w", "two.csv"]);
    assert_eq!(ok(&t.0, &["export", "w"]), "a,b\n1,2\n3,4\n");
    let o = sluice(&t.0, &["load", "--blank-lines", "null", "x", "two.csv"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).ends_with(
            "error: loading table x; nothing was committed: two.csv:3: found a record with 1 field, expected 2 (byte 8)\nhint: to set aside records with another number of fields and load the others, load with --rejects FILE (or --on-error skip); if the delimiter is another, give --delimiter\n"
        ),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// csvkit's `examples/bad.csv`: a record too long and one too short among
/// the data. The refusal names the line and the options that load the
/// others; `--rejects` loads them and sets the two aside. A quoted CR of a
/// CR-ended file (csvkit's `mac_newlines.csv`) stays data.
#[test]
fn ragged_records_among_the_data_name_rejects() {
    let t = Tmp::new();
    t.write(
        "bad.csv",
        b"column_a,column_b,column_c\n1,27,,\"I'm too long!\"\n,\"I'm too short!\"\n0,mixed types.... uh oh,17\n",
    );
    let o = sluice(&t.0, &["load", "t", "bad.csv"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).ends_with(
            "error: loading table t; nothing was committed: bad.csv:2: found a record with 4 fields, expected 3 (byte 27)\nhint: to set aside records with another number of fields and load the others, load with --rejects FILE (or --on-error skip); if the delimiter is another, give --delimiter\n"
        ),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    ok(
        &t.0,
        &["load", "-q", "--rejects", "rej.csv", "t", "bad.csv"],
    );
    assert_eq!(
        ok(&t.0, &["export", "t"]),
        "column_a,column_b,column_c\n0,mixed types.... uh oh,17\n"
    );
    t.write("mac.csv", b"a,b,c\r1,2,3\r\"Once upon\ra time\",5,6\r");
    ok(&t.0, &["load", "-q", "m", "mac.csv"]);
    let rows = ok(&t.0, &["query", "--format", "json", "SELECT a FROM m"]);
    assert!(rows.contains("Once upon\\ra time"), "{rows}");
}

/// astropy's `short.rdb`: a header, a line of types, data, then a line
/// ` # comment` among the data. Inferred, that line is a comment. With
/// the schema given, the records above the failing line have the
/// table's field count: it is among the data, and the hint names
/// --rejects, not a --skip that would skip the header.
#[test]
fn a_bad_line_below_data_is_not_called_a_preamble() {
    let t = Tmp::new();
    t.write(
        "short.rdb",
        b"\n# blank lines\n\nagasc_id\tn_noids\tn_obs\nN\tN\tN\n115345072\t1\t1\n # comment\n335416352\t3\t8\n266612160\t1\t1\n645803280\t1\t1\n",
    );
    // Inferred: the line of types under the header (`N`, words where
    // the table has numbers) makes two lines of names over the data,
    // and which is the header is not guessed: refused, naming --skip.
    let e = fails(&t.0, &["load", "-q", "r", "short.rdb"]);
    assert!(
        e.contains("its second record") && e.contains("--skip"),
        "{e}"
    );
    let schema = "agasc_id TEXT, n_noids TEXT, n_obs TEXT";
    let o = sluice(&t.0, &["load", "--schema", schema, "t", "short.rdb"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.ends_with(
            "short.rdb:7: found a record with 1 field, expected 3 (byte 59)\nhint: to set aside records with another number of fields and load the others, load with --rejects FILE (or --on-error skip); if the delimiter is another, give --delimiter\n"
        ),
        "{e}"
    );
}
