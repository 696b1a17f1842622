//! Loads that once stored wrong rows: a runaway quote read as one record
//! past `--max-line-size`, line numbers of many rejects in one block, a
//! NUL byte past the first block.

use sluice::load::{LoadOptions, OnError};
use sluice::parse::{Format, JsonFormat, JsonShape};

use crate::common::{TempDir, load_bytes, opts, table_rows};

const SCHEMA: &str = "id INT, name TEXT, price DECIMAL(15,2), d DATE";

/// Block sizes that put the cut search everywhere: smaller than a line,
/// a few lines, larger than the limit, the default.
const BLOCK_SIZES: [Option<usize>; 5] = [Some(7), Some(100), Some(1000), Some(10_000), None];

/// Line 1 a good record, line 2 opens a quote that closes `lines` lines
/// later (the runaway quote, at small scale).
fn runaway_quote(lines: usize) -> Vec<u8> {
    let mut data = b"0,z,1.00,2024-01-01\n1,\"a,1.50,2024-01-01\n".to_vec();
    for i in 0..lines {
        data.extend_from_slice(format!("{},b,1.00,2024-01-01\n", i + 2).as_bytes());
    }
    data.extend_from_slice(b"x\",1.00,2024-01-01\n");
    data
}

/// Loads `data` at every block size of [`BLOCK_SIZES`] with a
/// `--max-line-size` of 4096 bytes: it fails naming the line and byte
/// where the record too long starts.
fn too_long_at_every_block_size(data: &[u8], base: &LoadOptions, line: u64, byte: usize) {
    for bs in BLOCK_SIZES {
        let dir = TempDir::new("too-long");
        let o = LoadOptions {
            max_line_size: 4096,
            block_size: bs,
            ..base.clone()
        };
        let e = load_bytes(&dir, "t", data, &o).unwrap_err().to_string();
        assert_eq!(e, too_long_message(&dir, line, byte), "block size {bs:?}");
    }
}

/// The error of a record too long that starts at `line` and `byte`.
fn too_long_message(dir: &TempDir, line: u64, byte: usize) -> String {
    format!(
        "{}/t-input.csv:{line}: no end of record within --max-line-size (4096 bytes); an unterminated quote? (byte {byte})",
        dir.path().display()
    )
}

#[test]
fn max_line_size_fires_on_a_runaway_quote() {
    let data = runaway_quote(2000);
    too_long_at_every_block_size(&data, &opts(SCHEMA), 2, 20);
}

#[test]
fn max_line_size_fires_on_a_runaway_quote_after_many_blocks() {
    // The open record starts far into the file: its line is counted
    // across the blocks sent before it.
    let mut data = Vec::new();
    for i in 0..500 {
        data.extend_from_slice(format!("{i},b,1.00,2024-01-01\n").as_bytes());
    }
    let at = data.len();
    data.extend_from_slice(&runaway_quote(2000)[20..]);
    too_long_at_every_block_size(&data, &opts(SCHEMA), 501, at);
}

#[test]
fn max_line_size_fires_on_one_long_json_line() {
    let mut data = b"{\"id\": 1, \"name\": \"a\"}\n".to_vec();
    data.extend_from_slice(
        format!("{{\"id\": 2, \"name\": \"{}\"}}\n", "x".repeat(20_000)).as_bytes(),
    );
    data.extend_from_slice(b"{\"id\": 3, \"name\": \"c\"}\n");
    too_long_at_every_block_size(
        &data,
        &LoadOptions {
            format: Format::Json(JsonFormat {
                shape: JsonShape::Lines,
                ..JsonFormat::default()
            }),
            ..opts("id INT, name TEXT")
        },
        2,
        23,
    );
}

#[test]
fn max_line_size_fires_on_one_long_json_array_element() {
    let mut data = b"[\n{\"id\": 1, \"name\": \"a\"},\n".to_vec();
    data.extend_from_slice(
        format!("{{\"id\": 2, \"name\": \"{}\"}},\n", "x".repeat(20_000)).as_bytes(),
    );
    data.extend_from_slice(b"{\"id\": 3, \"name\": \"c\"}\n]\n");
    too_long_at_every_block_size(
        &data,
        &LoadOptions {
            format: Format::Json(JsonFormat {
                shape: JsonShape::Array,
                ..JsonFormat::default()
            }),
            ..opts("id INT, name TEXT")
        },
        3,
        26,
    );
}

#[test]
fn records_longer_than_the_cut_search_within_the_limit_load_whole() {
    // Long quoted records (newlines inside) among short ones: cut before
    // each long one, they load as they are, in order, at every block size.
    let mut data = Vec::new();
    let mut want = Vec::new();
    for i in 0..60 {
        let name = if i % 7 == 3 {
            "long\nline, \"\"quoted\"\"\n".repeat(200 + i)
        } else {
            format!("n{i}")
        };
        data.extend_from_slice(format!("{i},\"{name}\",1.00,2024-01-01\n").as_bytes());
        want.push(vec![
            Some(i.to_string()),
            Some(name.replace("\"\"", "\"")),
            Some("1.00".to_string()),
            Some("2024-01-01".to_string()),
        ]);
    }
    for bs in BLOCK_SIZES {
        let dir = TempDir::new("long-records");
        let o = LoadOptions {
            max_line_size: 8000,
            block_size: bs,
            ..opts(SCHEMA)
        };
        let s = load_bytes(&dir, "t", &data, &o).unwrap();
        assert_eq!(s.rows, 60, "block size {bs:?}");
        assert_eq!(
            table_rows(&dir.path().join("db"), "t"),
            want,
            "block size {bs:?}"
        );
    }
}

#[test]
fn max_line_size_is_kept_by_rejects_too() {
    // --on-error skip does not make a runaway quote a reject: the
    // record has no end to cut it at.
    let o = LoadOptions {
        on_error: OnError::Skip,
        ..opts(SCHEMA)
    };
    too_long_at_every_block_size(&runaway_quote(2000), &o, 2, 20);
}

#[test]
fn max_line_size_fires_on_a_gzipped_runaway_quote() {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(&runaway_quote(2000)).unwrap();
    let data = e.finish().unwrap();
    too_long_at_every_block_size(&data, &opts(SCHEMA), 2, 20);
}

/// `lines` good records, then one whose name holds a NUL byte, then one
/// more good record.
fn nul_late(lines: usize) -> Vec<u8> {
    let mut data = Vec::new();
    for i in 0..lines {
        data.extend_from_slice(format!("{i},b,1.00,2024-01-01\n").as_bytes());
    }
    data.extend_from_slice(b"7,a\0b,1.00,2024-01-01\n8,c,2.00,2024-01-02\n");
    data
}

#[test]
fn nul_byte_in_a_later_block_is_treated_like_the_first() {
    // Past the first 8 KiB that the binary check reads: a NUL never
    // reaches a TEXT column, whatever the block size.
    let data = nul_late(1000);
    let at = data.len() - b"7,a\0b,1.00,2024-01-01\n8,c,2.00,2024-01-02\n".len() + 2;
    for bs in BLOCK_SIZES {
        let dir = TempDir::new("nul");
        let o = LoadOptions {
            block_size: bs,
            ..opts(SCHEMA)
        };
        let e = load_bytes(&dir, "t", &data, &o).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}/t-input.csv:1001: column 2 (name): invalid TEXT value \"a\\0b\": a NUL byte at byte 1 of the value (binary data, not text) (byte {at})",
                dir.path().display()
            ),
            "block size {bs:?}"
        );
    }
    // In the first block it is a binary file.
    let dir = TempDir::new("nul-first");
    let e = load_bytes(&dir, "t", &nul_late(3), &opts(SCHEMA))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!(
            "{}/t-input.csv: looks like a binary file (NUL byte at offset 63), not delimited text",
            dir.path().display()
        )
    );
}

#[test]
fn nul_byte_in_a_later_block_is_rejected_with_on_error_skip() {
    let dir = TempDir::new("nul-skip");
    let o = LoadOptions {
        block_size: Some(1000),
        on_error: OnError::Skip,
        ..opts(SCHEMA)
    };
    let s = load_bytes(&dir, "t", &nul_late(1000), &o).unwrap();
    assert_eq!((s.rows, s.rejected), (1001, 1));
    let rows = table_rows(&dir.path().join("db"), "t");
    assert_eq!(rows.len(), 1001);
    assert!(rows.iter().all(|r| !r[1].as_ref().unwrap().contains('\0')));
}

#[test]
fn many_rejects_in_one_block_keep_their_line_numbers() {
    // Every other record bad, some good ones spanning two lines: each
    // reject names its own line, in blocks holding thousands of them.
    let mut data = Vec::new();
    let mut want = Vec::new();
    let mut line = 1;
    for i in 0..6000 {
        if i % 2 == 1 {
            data.extend_from_slice(format!("x{i},b,1.00,2024-01-01\n").as_bytes());
            want.push(line);
            line += 1;
        } else if i % 10 == 0 {
            data.extend_from_slice(format!("{i},\"two\nlines\",1.00,2024-01-01\n").as_bytes());
            line += 2;
        } else {
            data.extend_from_slice(format!("{i},b,1.00,2024-01-01\n").as_bytes());
            line += 1;
        }
    }
    for bs in [Some(100), Some(10_000), None] {
        let dir = TempDir::new("many-rejects");
        let rejects = dir.path().join("rejects.csv");
        let o = LoadOptions {
            block_size: bs,
            rejects: Some(rejects.clone()),
            on_error: OnError::Skip,
            ..opts(SCHEMA)
        };
        let s = load_bytes(&dir, "t", &data, &o).unwrap();
        assert_eq!((s.rows, s.rejected), (3000, 3000), "block size {bs:?}");
        let text = std::fs::read_to_string(&rejects).unwrap();
        let lines: Vec<u64> = text
            .lines()
            .skip(1)
            .map(|l| l.split(',').nth(1).unwrap().parse().unwrap())
            .collect();
        assert_eq!(lines, want, "block size {bs:?}");
    }
}
