//! Input files mapped into memory (`LoadOptions::map_files`) load exactly
//! as files read into buffers: the same outcome (rows, rejects, the error
//! message with its line and byte), the same segment files byte for byte,
//! and the same journal (the file's size and checksum), for random files
//! of random dialects cut into random block sizes.

use std::path::Path;

use proptest::prelude::*;
use sluice::load::{Header, LoadOptions, OnError, load};
use sluice::parse::{Format, JsonFormat};
use sluice::source::Input;
use sluice::store::Database;

use crate::common::{TempDir, opts};

/// One field's text: plain, or quoted with the delimiter, doubled quotes
/// and line ends inside (CSV only).
fn field(quoting: bool) -> impl Strategy<Value = String> {
    let plain = prop_oneof![
        (0i64..100_000).prop_map(|i| i.to_string()),
        "[a-z]{0,6}",
        Just(String::new()),
    ];
    if quoting {
        prop_oneof![
            4 => plain.boxed(),
            1 => "[a-z,\n\"]{0,12}".prop_map(|s| format!("\"{}\"", s.replace('"', "\"\""))).boxed(),
            1 => "[a-z ]{20,300}".boxed(),
        ]
        .boxed()
    } else {
        plain.boxed()
    }
}

#[derive(Debug, Clone)]
struct File {
    bytes: Vec<u8>,
    json: bool,
    header: bool,
    comment: bool,
}

fn file() -> impl Strategy<Value = File> {
    (
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        0u8..4,
    )
        .prop_flat_map(|(json, header, crlf, bom, comment, tail)| {
            let rows = prop::collection::vec((field(!json), field(!json), 0u8..20), 1..120);
            rows.prop_map(move |rows| {
                let nl = if crlf && !json { "\r\n" } else { "\n" };
                let mut s = String::new();
                if bom {
                    s.push('\u{feff}');
                }
                if header && !json {
                    s.push_str("a,b");
                    s.push_str(nl);
                }
                for (a, b, odd) in rows {
                    if json {
                        let a = a
                            .parse::<i64>()
                            .map_or("null".to_string(), |i| i.to_string());
                        s.push_str(&format!("{{\"a\": {a}, \"b\": \"{b}\"}}"));
                    } else if comment && odd == 0 {
                        s.push_str("# a comment, \"odd");
                    } else if odd == 1 {
                        // A record the schema rejects (three fields).
                        s.push_str(&format!("{a},{b},x"));
                    } else {
                        s.push_str(&format!("{a},{b}"));
                    }
                    s.push_str(nl);
                }
                if tail == 0 {
                    // The last record without its line end.
                    s.truncate(s.len() - nl.len());
                }
                File {
                    bytes: s.into_bytes(),
                    json,
                    header: header && !json,
                    comment: comment && !json,
                }
            })
        })
}

/// Every segment file's bytes and every journal's files, by path.
fn stored(db: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![db.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let name = p.strip_prefix(db).unwrap().display().to_string();
            if name.ends_with(".arrow") {
                out.push((name, std::fs::read(&p).unwrap()));
            } else if name.ends_with(".load") {
                // The journal, less the time of the commit.
                let v: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
                out.push((name, v["files"].to_string().into_bytes()));
            }
        }
    }
    out.sort();
    out
}

fn outcome(
    dir: &TempDir,
    name: &str,
    input: &Path,
    o: &LoadOptions,
) -> (String, Vec<(String, Vec<u8>)>, String) {
    let db_dir = dir.path().join(name);
    let rejects = dir.path().join(format!("{name}-rejects.csv"));
    let o = LoadOptions {
        rejects: (o.on_error == OnError::Skip).then(|| rejects.clone()),
        // Every block's batch written as it comes (small ones are not
        // gathered), so that the segments show where blocks were cut.
        segment_rows: Some(1 << 20),
        ..o.clone()
    };
    let mut db = Database::open_writer(&db_dir).unwrap();
    let r = match load(&mut db, "t", &[Input::File(input.to_path_buf())], &o) {
        Ok(s) => format!("ok rows={} rejected={}", s.rows, s.rejected),
        Err(e) => format!("error {e}"),
    };
    drop(db);
    let rejected = std::fs::read_to_string(&rejects).unwrap_or_default();
    (r, stored(&db_dir), rejected)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn a_mapped_file_loads_as_a_file_read(
        f in file(),
        block in 16usize..2000,
        threads in 1usize..3,
        skip in any::<bool>(),
        short_lines in any::<bool>(),
    ) {
        let dir = TempDir::new("mapped");
        let input = dir.write("in.csv", &f.bytes);
        let mut o = LoadOptions {
            block_size: Some(block),
            threads: Some(threads),
            on_error: if skip { OnError::Skip } else { OnError::Abort },
            header: if f.header { Header::Yes } else { Header::No },
            // Some records longer than the limit: the error names them.
            max_line_size: if short_lines { 200 } else { 1 << 20 },
            ..opts("a BIGINT, b TEXT")
        };
        if f.json {
            o.format = Format::Json(JsonFormat::default());
        }
        if f.comment {
            o.dialect.comment = Some(b'#');
        }
        let read = outcome(&dir, "read", &input, &o);
        o.map_files = true;
        let mapped = outcome(&dir, "mapped", &input, &o);
        prop_assert_eq!(&read.0, &mapped.0);
        prop_assert_eq!(&read.2, &mapped.2);
        prop_assert_eq!(read.1.len(), mapped.1.len());
        for (a, b) in read.1.iter().zip(&mapped.1) {
            prop_assert_eq!(&a.0, &b.0);
            prop_assert!(a.1 == b.1, "{} differs", a.0);
        }
    }
}

type Outcome = (String, Vec<(String, Vec<u8>)>, String);

/// `input` (no header, `a BIGINT, b TEXT`) loaded read, then mapped, in
/// blocks of `block` bytes.
fn both_ways(dir: &TempDir, input: &Path, block: usize, threads: usize) -> (Outcome, Outcome) {
    let mut o = LoadOptions {
        block_size: Some(block),
        threads: Some(threads),
        header: Header::No,
        ..opts("a BIGINT, b TEXT")
    };
    let read = outcome(dir, &format!("read{block}"), input, &o);
    o.map_files = true;
    let mapped = outcome(dir, &format!("mapped{block}"), input, &o);
    (read, mapped)
}

/// A file whose records are all in quotes that hold line ends and
/// delimiters, in blocks of a few records: the cut of every block decides
/// by the parity of the quotes counted while the file was scanned.
#[test]
fn quoted_line_ends_are_cut_alike_in_many_blocks() {
    let dir = TempDir::new("mapped-quotes");
    let mut s = String::new();
    for i in 0..5000 {
        s.push_str(&format!(
            "{i},\"line {i}\nand, \"\"more\"\"\n{}\"\n",
            "x".repeat(i % 97)
        ));
    }
    let input = dir.write("in.csv", s.as_bytes());
    for block in [64, 1000, 4096, 100_000] {
        let (read, mapped) = both_ways(&dir, &input, block, 2);
        assert_eq!(read.0, "ok rows=5000 rejected=0");
        assert_eq!(read.0, mapped.0);
        assert!(read.1 == mapped.1, "segments differ at block size {block}");
    }
}

/// Every block size from 16 to 400 bytes over one small file: among them
/// are windows that end exactly at the end of the file, where a read
/// comes back full and only the next one finds the end.
#[test]
fn every_small_block_size_cuts_alike() {
    let dir = TempDir::new("mapped-sizes");
    let mut s = String::new();
    for i in 0..300 {
        s.push_str(&format!("{i},{}\n", "y".repeat(i % 7)));
    }
    // Without its last line end: a block that the window's end closes
    // holds the last record, one that a read coming back full did not
    // leaves it to a block of its own.
    s.pop();
    let input = dir.write("in.csv", s.as_bytes());
    for block in 16..400 {
        let (read, mapped) = both_ways(&dir, &input, block, 1);
        assert_eq!(read.0, "ok rows=300 rejected=0");
        assert!(read.1 == mapped.1, "segments differ at block size {block}");
    }
}
