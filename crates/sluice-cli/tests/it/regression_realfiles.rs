//! Real-world files load as written or fail: classic Mac line ends,
//! blank lines before a header, R's `write.csv` header, comment lines
//! above the data, blank lines in one-column files.

use crate::{Tmp, ok, sluice};

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
