//! JSON input: JSON lines, and top-level arrays of rows.
//!
//! A row is a JSON object (fields matched to columns by name: exactly,
//! else ignoring ASCII case when one column alone matches so) or a JSON array (fields by position, named by a header row
//! or `--columns`). [`parse_json_block`] has the shape of
//! [`super::parse_block_with`]: it takes a block that starts at a row
//! boundary and appends its rows to a [`BatchBuilder`], so the parallel
//! parse equals the sequential one.
//!
//! * [`JsonShape::Lines`]: one value per line; blank lines are skipped. A
//!   raw newline cannot occur inside a JSON string, so blocks are cut at
//!   newlines, as for CSV without quotes.
//! * [`JsonShape::Array`]: the body of a top-level array: values separated
//!   by commas, with the outer `[` and `]` removed by the reader, which cuts
//!   blocks just after a comma between two elements
//!   ([`find_array_boundary`]: depth and strings tracked from the block
//!   start, whose state is known). The array may be a field of a top-level
//!   object ([`object_start`]); the reader then drops the rest of it too.
//! * [`JsonShape::Values`]: values one after another (pretty-printed
//!   objects): an array without brackets and commas, cut just after a
//!   value closes at depth 0 ([`find_values_boundary`]).
//!
//! Values: `null` is NULL; strings go through the column type's parser (so
//! `"2024-01-31"` loads into a DATE and `"12.50"` into a DECIMAL); numbers
//! keep their text and go through the same exact parsers (an integer of up
//! to 18 digits takes a fast path; nothing goes through `f64` but DOUBLE);
//! `true`/`false` into BOOLEAN or as text; nested objects and arrays into
//! TEXT as their JSON text, as written. A column with no field gets its
//! DEFAULT or NULL; a missing primary key is an error.
//!
//! The scanner is written by hand rather than taken from a SIMD JSON crate:
//! rows are short (the benchmark row is 67 bytes), and per-document set-up
//! dominated the crates measured (ARCHITECTURE.md has the figures). Strings
//! are scanned eight bytes at a time (SWAR) for a quote, a backslash or a
//! control character.
//!
//! ```
//! use std::sync::Arc;
//! use sluice::batch::{BatchBuilder, Schema, ValueOptions};
//! use sluice::parse::{JsonFormat, RowPolicy, parse_json_block};
//!
//! let schema: Schema = "id BIGINT, name TEXT".parse().unwrap();
//! let mut b = BatchBuilder::new(&schema, Arc::new(ValueOptions::default()), 4);
//! let data = br#"{"id": 1, "name": "caf\u00e9"}
//! {"name": null, "id": 2}
//! "#;
//! let info = parse_json_block(
//!     data, &JsonFormat::default(), &schema, &mut b, RowPolicy::default(), None, &mut Vec::new(),
//! ).unwrap();
//! assert_eq!((info.rows, info.newlines), (2, 2));
//! ```

use std::collections::HashMap;

use memchr::{memchr, memchr_iter, memrchr};

use super::{BlockError, BlockInfo, FieldMap, Reject, RowPolicy};
use crate::batch::{BatchBuilder, DataType, Schema, position_of};

/// How the values of a JSON input are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JsonShape {
    /// JSON lines (NDJSON): one value per line.
    #[default]
    Lines,
    /// One top-level array whose elements are the rows.
    Array,
    /// JSON values one after another, separated by whitespace only (objects
    /// pretty-printed over several lines each, or `{..}{..}`). `--format
    /// json` reads an input that starts with `{` so (see [`object_start`]).
    Values,
}

/// A JSON input's layout and field rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JsonFormat {
    pub shape: JsonShape,
    /// Fields (object keys, or array positions past the header) that name
    /// no column are skipped instead of being an error.
    pub ignore_unknown: bool,
}

/// Nesting deeper than this is an error (the validating scan of nested
/// values recurses; 512 levels take ~50 KiB of stack).
const MAX_DEPTH: usize = 512;

/// An error inside a row: where, which table column, why.
struct Fail {
    offset: usize,
    column: Option<usize>,
    message: String,
}

#[cold]
fn fail(offset: usize, message: impl Into<String>) -> Fail {
    Fail {
        offset,
        column: None,
        message: message.into(),
    }
}

/// Describes the byte at `pos` for a message.
fn found(data: &[u8], pos: usize) -> String {
    match data.get(pos) {
        None => "the end of the input".into(),
        Some(b'\n') => "the end of the line".into(),
        Some(&c) if c.is_ascii_graphic() => format!("'{}'", c as char),
        Some(&c) => format!("byte 0x{c:02x}"),
    }
}

/// The 1-based character position of `offset` in its line.
fn char_in_line(data: &[u8], offset: usize) -> usize {
    let line_start = memrchr(b'\n', &data[..offset]).map_or(0, |i| i + 1);
    // Count the bytes that start a UTF-8 character.
    data[line_start..offset]
        .iter()
        .filter(|&&b| (b as i8) >= -0x40)
        .count()
        + 1
}

fn block_error(lines: &mut super::LineCount, data: &[u8], f: Fail) -> BlockError {
    let offset = f.offset.min(data.len());
    let message = match f.column {
        // Value errors name the column; syntax errors say where in the line.
        Some(_) => f.message,
        None => format!(
            "{} (character {} of the line)",
            f.message,
            char_in_line(data, offset)
        ),
    };
    BlockError {
        offset,
        line_in_block: lines.before(data, offset),
        column: f.column,
        message,
        value: None,
    }
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// Marks (high bit of the byte) the bytes of `x` that end a plain run of
/// string text: a quote, a backslash or a control character. Only the
/// lowest mark is exact (borrows may mark bytes after a true one), which
/// is the one used.
#[inline(always)]
fn special_bytes(x: u64) -> u64 {
    let q = x ^ (LO * b'"' as u64);
    let b = x ^ (LO * b'\\' as u64);
    let quote = q.wrapping_sub(LO) & !q;
    let backslash = b.wrapping_sub(LO) & !b;
    let control = x.wrapping_sub(LO * 0x20) & !x;
    (quote | backslash | control) & HI
}

#[inline(always)]
fn is_special(c: u8) -> bool {
    c == b'"' || c == b'\\' || c < 0x20
}

/// A decoded string: a range of the input, or the scratch buffer (escapes).
enum Str {
    Slice(usize, usize),
    Scratch,
}

/// The scanner over one block.
struct Scanner<'a> {
    data: &'a [u8],
    pos: usize,
    /// Newlines are whitespace (inside a top-level array) or end a row.
    newline_is_space: bool,
    scratch: Vec<u8>,
}

impl<'a> Scanner<'a> {
    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.data.get(self.pos).copied()
    }

    #[inline(always)]
    fn ws(&mut self) {
        // Compact JSON has none: one compare (every space byte is <= ' ').
        if self.data.get(self.pos).is_some_and(|&c| c > b' ') {
            return;
        }
        while let Some(&c) = self.data.get(self.pos) {
            match c {
                b' ' | b'\t' | b'\r' => self.pos += 1,
                b'\n' if self.newline_is_space => self.pos += 1,
                _ => break,
            }
        }
    }

    #[inline(always)]
    fn expect(&mut self, c: u8, what: &str) -> Result<(), Fail> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(fail(
                self.pos,
                format!("expected {what}, found {}", found(self.data, self.pos)),
            ))
        }
    }

    fn unterminated(&self, start: usize) -> Fail {
        if self.newline_is_space {
            fail(start, "unterminated string")
        } else {
            fail(
                start,
                "unterminated string (JSON lines hold one value per line; a raw newline cannot be in a string: write \\n)",
            )
        }
    }

    /// Scans the string whose opening quote is at `pos`.
    #[inline(always)]
    fn string(&mut self) -> Result<Str, Fail> {
        let data = self.data;
        let n = data.len();
        let start = self.pos;
        let mut i = start + 1;
        loop {
            if i + 8 <= n {
                let x = u64::from_le_bytes(data[i..i + 8].try_into().expect("8 bytes"));
                let m = special_bytes(x);
                if m == 0 {
                    i += 8;
                    continue;
                }
                i += (m.trailing_zeros() / 8) as usize;
            } else {
                while i < n && !is_special(data[i]) {
                    i += 1;
                }
                if i == n {
                    return Err(self.unterminated(start));
                }
            }
            return match data[i] {
                b'"' => {
                    self.pos = i + 1;
                    Ok(Str::Slice(start + 1, i))
                }
                b'\\' => self.string_escaped(start, i),
                c => Err(self.control(start, i, c)),
            };
        }
    }

    #[cold]
    fn control(&self, start: usize, at: usize, c: u8) -> Fail {
        if c == b'\n' {
            self.unterminated(start)
        } else {
            fail(
                at,
                format!("control character 0x{c:02x} in a string (write it as \\u{c:04x})"),
            )
        }
    }

    /// The rest of a string from its first backslash at `at`, decoded
    /// into the scratch buffer.
    #[cold]
    fn string_escaped(&mut self, start: usize, mut at: usize) -> Result<Str, Fail> {
        let data = self.data;
        let n = data.len();
        self.scratch.clear();
        self.scratch.extend_from_slice(&data[start + 1..at]);
        loop {
            // `at` is a backslash.
            let Some(&e) = data.get(at + 1) else {
                return Err(self.unterminated(start));
            };
            let mut next = at + 2;
            match e {
                b'"' => self.scratch.push(b'"'),
                b'\\' => self.scratch.push(b'\\'),
                b'/' => self.scratch.push(b'/'),
                b'b' => self.scratch.push(0x08),
                b'f' => self.scratch.push(0x0c),
                b'n' => self.scratch.push(b'\n'),
                b'r' => self.scratch.push(b'\r'),
                b't' => self.scratch.push(b'\t'),
                b'u' => {
                    let hi = hex4(data, at + 2).ok_or_else(|| {
                        fail(at, "invalid \\u escape (four hex digits must follow \\u)")
                    })?;
                    next = at + 6;
                    let ch = match hi {
                        0xD800..=0xDBFF => {
                            let lo = (data.get(next) == Some(&b'\\')
                                && data.get(next + 1) == Some(&b'u'))
                            .then(|| hex4(data, next + 2))
                            .flatten()
                            .filter(|lo| (0xDC00..=0xDFFF).contains(lo))
                            .ok_or_else(|| {
                                fail(
                                    at,
                                    format!(
                                        "lone surrogate \\u{hi:04X} (a high surrogate must be followed by a low one, \\uDC00 to \\uDFFF)"
                                    ),
                                )
                            })?;
                            next += 6;
                            0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                        }
                        0xDC00..=0xDFFF => {
                            return Err(fail(
                                at,
                                format!(
                                    "lone surrogate \\u{hi:04X} (a low surrogate without a high one before it)"
                                ),
                            ));
                        }
                        c => c,
                    };
                    let ch = char::from_u32(ch).expect("surrogates handled above");
                    let mut b = [0u8; 4];
                    self.scratch
                        .extend_from_slice(ch.encode_utf8(&mut b).as_bytes());
                }
                b'\n' => return Err(self.unterminated(start)),
                _ => {
                    return Err(fail(
                        at,
                        format!(
                            "invalid escape \\{} in a string (JSON has \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)",
                            String::from_utf8_lossy(&data[at + 1..(at + 2).min(n)])
                        ),
                    ));
                }
            }
            // Plain text up to the next special byte.
            let mut i = next;
            while i < n && !is_special(data[i]) {
                i += 1;
            }
            self.scratch.extend_from_slice(&data[next..i]);
            match data.get(i) {
                None => return Err(self.unterminated(start)),
                Some(b'"') => {
                    self.pos = i + 1;
                    return Ok(Str::Scratch);
                }
                Some(b'\\') => at = i,
                Some(&c) => return Err(self.control(start, i, c)),
            }
        }
    }

    /// Scans a number at `pos` (JSON grammar). Returns its end and, for an
    /// integer of at most 18 digits, its value.
    #[inline(always)]
    fn number(&mut self) -> Result<Option<i64>, Fail> {
        let data = self.data;
        let n = data.len();
        let start = self.pos;
        let mut i = start;
        let neg = data[i] == b'-';
        i += neg as usize;
        let digits_start = i;
        let mut acc: i64 = 0;
        while i < n {
            let d = data[i].wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            acc = acc.wrapping_mul(10).wrapping_add(d as i64);
            i += 1;
        }
        let digits = i - digits_start;
        if digits == 0 {
            return Err(fail(
                start,
                format!("invalid number: expected a digit, found {}", found(data, i)),
            ));
        }
        if digits > 1 && data[digits_start] == b'0' {
            return Err(fail(
                start,
                "invalid number: leading zeros are not allowed in JSON (write it as a string to keep them)",
            ));
        }
        let mut integer = true;
        if data.get(i) == Some(&b'.') {
            i += 1;
            let f = i;
            while i < n && data[i].is_ascii_digit() {
                i += 1;
            }
            if i == f {
                return Err(fail(
                    start,
                    "invalid number: no digit after the decimal point",
                ));
            }
            integer = false;
        }
        if matches!(data.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(data.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let f = i;
            while i < n && data[i].is_ascii_digit() {
                i += 1;
            }
            if i == f {
                return Err(fail(start, "invalid number: no digit in the exponent"));
            }
            integer = false;
        }
        self.pos = i;
        // (More digits may have wrapped `acc`: it is only used up to 18.)
        Ok((integer && digits <= 18).then(|| if neg { -acc } else { acc }))
    }

    /// Scans `lit` (true, false, null) at `pos`.
    #[inline(always)]
    fn literal(&mut self, lit: &[u8]) -> Result<(), Fail> {
        if self.data[self.pos..].starts_with(lit) {
            self.pos += lit.len();
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    #[cold]
    fn unexpected(&self) -> Fail {
        let pos = self.pos;
        let end = (pos + 1..self.data.len())
            .find(|&i| !self.data[i].is_ascii_alphanumeric())
            .unwrap_or(self.data.len())
            .min(pos + 20);
        let what = match self.data.get(pos) {
            Some(c) if c.is_ascii_alphabetic() => {
                format!("{:?}", String::from_utf8_lossy(&self.data[pos..end]))
            }
            _ => found(self.data, pos),
        };
        fail(
            pos,
            format!(
                "expected a JSON value (string, number, object, array, true, false or null), found {what}"
            ),
        )
    }

    /// Skips (validating) any value at `pos`.
    fn skip_value(&mut self, depth: usize) -> Result<(), Fail> {
        match self.peek() {
            Some(b'"') => self.string().map(|_| ()),
            Some(b'-' | b'0'..=b'9') => self.number().map(|_| ()),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(open @ (b'{' | b'[')) => {
                if depth >= MAX_DEPTH {
                    return Err(fail(
                        self.pos,
                        format!("nested deeper than {MAX_DEPTH} levels"),
                    ));
                }
                let start = self.pos;
                let close = if open == b'{' { b'}' } else { b']' };
                self.pos += 1;
                self.ws();
                if self.peek() == Some(close) {
                    self.pos += 1;
                    return Ok(());
                }
                loop {
                    if open == b'{' {
                        if self.peek() != Some(b'"') {
                            return Err(self.expected_name());
                        }
                        self.string()?;
                        self.ws();
                        self.expect(b':', "':' after a field name")?;
                        self.ws();
                    }
                    self.skip_value(depth + 1)?;
                    self.ws();
                    match self.peek() {
                        Some(b',') => {
                            self.pos += 1;
                            self.ws();
                        }
                        Some(c) if c == close => {
                            self.pos += 1;
                            return Ok(());
                        }
                        _ => return Err(self.unclosed(start, open)),
                    }
                }
            }
            _ => Err(self.unexpected()),
        }
    }

    #[cold]
    fn expected_name(&self) -> Fail {
        if !self.newline_is_space && matches!(self.peek(), None | Some(b'\n')) {
            // `{` alone on a line: an object spread over several lines.
            return fail(
                self.pos,
                "the line ends inside an object: JSON lines needs one value per line (for objects spread over several lines, use --format json)",
            );
        }
        fail(
            self.pos,
            format!(
                "expected a field name in double quotes, found {}",
                found(self.data, self.pos)
            ),
        )
    }

    #[cold]
    fn unclosed(&self, start: usize, open: u8) -> Fail {
        let (what, close) = if open == b'{' {
            ("object", '}')
        } else {
            ("array", ']')
        };
        let at_end = matches!(self.peek(), None | Some(b'\n'));
        if at_end && !self.newline_is_space {
            fail(
                start,
                format!(
                    "unterminated {what}: no '{close}' before the end of the line (JSON lines hold one value per line; for a top-level array or values spread over several lines, use --format json)"
                ),
            )
        } else {
            fail(
                self.pos,
                format!(
                    "expected ',' or '{close}' in an {what}, found {}",
                    found(self.data, self.pos)
                ),
            )
        }
    }
}

/// `a == b` for slices of equal length, without a library call for the
/// short ones (keys): two overlapping 8-byte loads cover 8 to 16 bytes.
#[inline(always)]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().expect("8 bytes"));
    match n {
        0..8 => a.iter().zip(b).all(|(x, y)| x == y),
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        _ => a == b,
    }
}

fn hex4(data: &[u8], at: usize) -> Option<u32> {
    let h = data.get(at..at + 4)?;
    let s = std::str::from_utf8(h).ok()?;
    if !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(s, 16).ok()
}

/// Per block: what the row parser knows about the table.
struct Columns<'s> {
    schema: &'s Schema,
    integer: Vec<bool>,
    /// The column names.
    names: Vec<&'s [u8]>,
    key: Option<usize>,
    /// Key bytes → column (`None`: no such column), filled on demand.
    by_name: HashMap<Vec<u8>, Option<usize>>,
    /// The k-th key of the previous object as written (when it had no
    /// escapes) and its column.
    predicted: Vec<Option<(Vec<u8>, usize)>>,
    /// Per column, the stamp of the last row that gave it a value.
    seen: Vec<u32>,
    stamp: u32,
    /// Columns given a value in the current row.
    filled: usize,
}

impl Columns<'_> {
    /// The column a field name names: exactly, else ignoring ASCII case
    /// when one column alone matches so (`Duck` and `duck` are two).
    fn lookup(&mut self, key: &[u8]) -> Option<usize> {
        if let Some(c) = self.by_name.get(key) {
            return *c;
        }
        let c = position_of(self.names.iter().copied(), key);
        if self.by_name.len() < 4096 {
            self.by_name.insert(key.to_vec(), c);
        }
        c
    }

    fn list(&self) -> String {
        self.schema.column_names()
    }
}

/// Parses every row of `data` (which starts at a row boundary) into `out`.
///
/// With `format.shape == Lines`, rows are separated by newlines (blank
/// lines are skipped); with `Array`, by commas (a comma may end the block:
/// the reader cuts after one). Object rows map fields to columns by name;
/// array rows by position, through `map` (from a header row or
/// `--columns`; field i feeds `map.targets[i]`, and a row must not have
/// more fields than `map.targets`) or, without one, field i feeds column i.
/// With `policy.skip_bad`, a malformed row is appended to `rejects` (its
/// row completed with NULLs in the builder, to be dropped) and parsing
/// goes on; otherwise it is the error.
pub fn parse_json_block(
    data: &[u8],
    format: &JsonFormat,
    schema: &Schema,
    out: &mut BatchBuilder,
    policy: RowPolicy,
    map: Option<&FieldMap>,
    rejects: &mut Vec<Reject>,
) -> Result<BlockInfo, BlockError> {
    let ncols = schema.len();
    let lines = format.shape == JsonShape::Lines;
    let values = format.shape == JsonShape::Values;
    let mut s = Scanner {
        data,
        pos: 0,
        newline_is_space: !lines,
        scratch: Vec::new(),
    };
    let mut cols = Columns {
        schema,
        // Exact columns see each number's text (`-0` is a zero).
        integer: (0..ncols)
            .map(|c| out.is_integer(c) && !out.is_exact(c))
            .collect(),
        names: schema.columns.iter().map(|c| c.name.as_bytes()).collect(),
        key: schema.key_column(),
        by_name: HashMap::new(),
        predicted: Vec::new(),
        seen: vec![0; ncols],
        stamp: 0,
        filled: 0,
    };
    let n = data.len();
    let mut info = BlockInfo::default();
    let mut counted = super::LineCount::default();
    let mut builder_rows: u32 = 0;
    loop {
        // Between rows: whitespace, blank lines, a comma in an array.
        while let Some(&c) = data.get(s.pos) {
            match c {
                b' ' | b'\t' | b'\r' => s.pos += 1,
                b'\n' => {
                    s.pos += 1;
                    info.newlines += lines as u64;
                }
                _ => break,
            }
        }
        if s.pos >= n {
            break;
        }
        let record_start = s.pos;
        let newlines_before = info.newlines;
        cols.stamp = cols.stamp.wrapping_add(1);
        if cols.stamp == 0 {
            cols.seen.fill(0);
            cols.stamp = 1;
        }
        cols.filled = 0;
        let result = row(&mut s, &mut cols, out, format, policy, map).and_then(|()| {
            // The row's end: a newline (JSON lines) or a comma (array).
            if lines {
                while matches!(s.peek(), Some(b' ' | b'\t' | b'\r')) {
                    s.pos += 1;
                }
                match s.peek() {
                    None => Ok(()),
                    Some(b'\n') => {
                        s.pos += 1;
                        info.newlines += 1;
                        Ok(())
                    }
                    Some(_) => Err(fail(
                        s.pos,
                        format!(
                            "expected the end of the line after a row, found {} (JSON lines hold one value per line)",
                            found(data, s.pos)
                        ),
                    )),
                }
            } else if values {
                // The next value starts after any whitespace.
                Ok(())
            } else {
                s.ws();
                match s.peek() {
                    None => Ok(()),
                    Some(b',') => {
                        s.pos += 1;
                        Ok(())
                    }
                    Some(_) => Err(fail(
                        s.pos,
                        format!(
                            "expected ',' or ']' after an array element, found {}",
                            found(data, s.pos)
                        ),
                    )),
                }
            }
        });
        let Err(f) = result else {
            if let Some(max) = policy.max_record
                && s.pos - record_start > max
            {
                return Err(BlockError {
                    offset: record_start,
                    line_in_block: counted.before(data, record_start),
                    column: None,
                    message: super::too_long_message(max),
                    value: None,
                });
            }
            info.rows += 1;
            builder_rows += 1;
            continue;
        };
        let error = block_error(&mut counted, data, f);
        if !policy.skip_bad {
            return Err(error);
        }
        // The row ends at its line's end (JSON lines), at the next comma
        // between elements (array), or where a value next closes (values).
        let end = if lines {
            match memchr(b'\n', &data[record_start..]) {
                Some(i) => {
                    info.newlines = newlines_before + 1;
                    record_start + i + 1
                }
                None => n,
            }
        } else if values {
            find_values_boundary(&data[record_start..], 0).map_or(n, |c| record_start + c)
        } else {
            find_array_boundary(&data[record_start..], 0).map_or(n, |c| record_start + c)
        };
        s.pos = end;
        for c in 0..ncols {
            if cols.seen[c] != cols.stamp {
                out.push_null(c);
            }
        }
        let mut record = data[record_start..end].trim_ascii_end();
        if format.shape == JsonShape::Array {
            record = record.strip_suffix(b",").unwrap_or(record).trim_ascii_end();
        }
        rejects.push(Reject {
            error,
            record_offset: record_start,
            record: record.to_vec(),
            row: builder_rows,
        });
        builder_rows += 1;
    }
    if !lines {
        info.newlines = memchr_iter(b'\n', data).count() as u64;
    }
    Ok(info)
}

/// Parses one row (an object or an array) at `s.pos`, and gives the
/// columns it has no field for their DEFAULT or NULL.
#[inline(always)]
fn row(
    s: &mut Scanner<'_>,
    cols: &mut Columns<'_>,
    out: &mut BatchBuilder,
    format: &JsonFormat,
    policy: RowPolicy,
    map: Option<&FieldMap>,
) -> Result<(), Fail> {
    let start = s.pos;
    match s.peek() {
        Some(b'{') => object_row(s, cols, out, format)?,
        Some(b'[') => array_row(s, cols, out, format, policy, map)?,
        _ => {
            let what = match s.peek() {
                Some(b'"') => "a string".to_string(),
                Some(b'-' | b'0'..=b'9') => "a number".to_string(),
                Some(b't' | b'f') => "a boolean".to_string(),
                Some(b'n') => "null".to_string(),
                Some(b']') if !s.newline_is_space => {
                    "']' (a top-level array? use --format json)".to_string()
                }
                _ => found(s.data, s.pos),
            };
            return Err(fail(
                start,
                format!("expected a row (a JSON object or array), found {what}"),
            ));
        }
    }
    let ncols = cols.names.len();
    if cols.filled < ncols {
        for c in 0..ncols {
            if cols.seen[c] == cols.stamp {
                continue;
            }
            let column = &cols.schema.columns[c];
            match &column.default {
                Some(d) => out.push(c, d.as_bytes(), true).map_err(|msg| Fail {
                    offset: start,
                    column: Some(c),
                    message: format!("DEFAULT: {msg}"),
                })?,
                None if cols.key == Some(c) => {
                    return Err(fail(
                        start,
                        format!(
                            "the row has no field for the primary key {} (a key needs a value in every row)",
                            column.name
                        ),
                    ));
                }
                None => out.push_null(c),
            }
            cols.seen[c] = cols.stamp;
        }
    }
    Ok(())
}

#[inline(always)]
fn object_row(
    s: &mut Scanner<'_>,
    cols: &mut Columns<'_>,
    out: &mut BatchBuilder,
    format: &JsonFormat,
) -> Result<(), Fail> {
    let data = s.data;
    let start = s.pos;
    s.pos += 1;
    s.ws();
    if s.peek() == Some(b'}') {
        s.pos += 1;
        return Ok(());
    }
    let mut k = 0;
    loop {
        if s.peek() != Some(b'"') {
            return Err(s.expected_name());
        }
        let key_start = s.pos;
        // Objects usually repeat one key order: try the k-th key of the
        // previous object, comparing the raw bytes.
        let hit = match cols.predicted.get(k) {
            Some(Some((raw, p))) => {
                let end = key_start + 1 + raw.len();
                (data.get(end) == Some(&b'"') && same_bytes(&data[key_start + 1..end], raw))
                    .then_some((end, *p))
            }
            _ => None,
        };
        let col = match hit {
            Some((end, p)) => {
                s.pos = end + 1;
                (p != usize::MAX).then_some(p)
            }
            None => {
                let (key, plain) = match s.string()? {
                    Str::Slice(a, b) => (&data[a..b], true),
                    Str::Scratch => (s.scratch.as_slice(), false),
                };
                let c = cols.lookup(key);
                if c.is_none() && !format.ignore_unknown {
                    return Err(fail(
                        key_start,
                        format!(
                            "unknown field {} (the table's columns: {}; --ignore-unknown skips such fields)",
                            show_key(key),
                            cols.list()
                        ),
                    ));
                }
                // A key with escapes is never compared raw.
                if cols.predicted.len() <= k {
                    cols.predicted.resize(k + 1, None);
                }
                cols.predicted[k] = plain.then(|| (key.to_vec(), c.unwrap_or(usize::MAX)));
                c
            }
        };
        s.ws();
        s.expect(b':', "':' after a field name")?;
        s.ws();
        match col {
            Some(c) => {
                if cols.seen[c] == cols.stamp {
                    return Err(fail(
                        key_start,
                        format!(
                            "field {} appears twice in the object (column {})",
                            show_key(&raw_key(data, key_start)),
                            cols.schema.columns[c].name
                        ),
                    ));
                }
                value(s, cols, out, c)?;
                cols.seen[c] = cols.stamp;
                cols.filled += 1;
            }
            None => s.skip_value(1)?,
        }
        k += 1;
        s.ws();
        match s.peek() {
            Some(b',') => {
                s.pos += 1;
                s.ws();
            }
            Some(b'}') => {
                s.pos += 1;
                return Ok(());
            }
            _ => return Err(s.unclosed(start, b'{')),
        }
    }
}

#[inline(always)]
fn array_row(
    s: &mut Scanner<'_>,
    cols: &mut Columns<'_>,
    out: &mut BatchBuilder,
    format: &JsonFormat,
    policy: RowPolicy,
    map: Option<&FieldMap>,
) -> Result<(), Fail> {
    let start = s.pos;
    let ncols = cols.names.len();
    let expected = map.map_or(ncols, |m| m.targets.len());
    s.pos += 1;
    s.ws();
    let mut i = 0;
    if s.peek() == Some(b']') {
        s.pos += 1;
    } else {
        loop {
            let target = match map {
                None => (i < ncols).then_some(i),
                Some(m) => m.targets.get(i).copied().flatten(),
            };
            match target {
                Some(c) => {
                    value(s, cols, out, c)?;
                    cols.seen[c] = cols.stamp;
                    cols.filled += 1;
                }
                None if i >= expected && !format.ignore_unknown => {
                    return Err(fail(
                        s.pos,
                        format!(
                            "the row has more than {expected} values ({}); --ignore-unknown skips the extra ones",
                            if map.is_some() {
                                "the header names fewer fields"
                            } else {
                                "the table has fewer columns"
                            }
                        ),
                    ));
                }
                None => s.skip_value(1)?,
            }
            i += 1;
            s.ws();
            match s.peek() {
                Some(b',') => {
                    s.pos += 1;
                    s.ws();
                }
                Some(b']') => {
                    s.pos += 1;
                    break;
                }
                _ => return Err(s.unclosed(start, b'[')),
            }
        }
    }
    if i < expected && !policy.fill_missing {
        return Err(fail(
            start,
            format!(
                "found a row with {i} value{}, expected {expected} (--allow-missing-columns fills NULLs)",
                if i == 1 { "" } else { "s" }
            ),
        ));
    }
    Ok(())
}

/// Parses the value at `s.pos` into column `c`.
#[inline(always)]
fn value(
    s: &mut Scanner<'_>,
    cols: &Columns<'_>,
    out: &mut BatchBuilder,
    c: usize,
) -> Result<(), Fail> {
    let data = s.data;
    let start = s.pos;
    match s.peek() {
        Some(b'"') => {
            let bytes = match s.string()? {
                Str::Slice(a, b) => &data[a..b],
                Str::Scratch => s.scratch.as_slice(),
            };
            out.push(c, bytes, true)
                .map_err(|msg| value_error(cols, c, start, bytes, &msg))
        }
        Some(b'-' | b'0'..=b'9') => {
            let int = s.number()?;
            match int {
                Some(v) if cols.integer[c] => out.push_integer(c, v),
                _ => out.push(c, &data[start..s.pos], true),
            }
            .map_err(|msg| value_error(cols, c, start, &data[start..s.pos], &msg))
        }
        Some(b'n') => {
            s.literal(b"null")?;
            out.push_null(c);
            Ok(())
        }
        Some(b't') => {
            s.literal(b"true")?;
            out.push(c, b"true", true)
                .map_err(|msg| value_error(cols, c, start, b"true", &msg))
        }
        Some(b'f') => {
            s.literal(b"false")?;
            out.push(c, b"false", true)
                .map_err(|msg| value_error(cols, c, start, b"false", &msg))
        }
        Some(open @ (b'{' | b'[')) => {
            s.skip_value(1)?;
            let ty = cols.schema.columns[c].data_type;
            if ty != DataType::Text {
                return Err(Fail {
                    offset: start,
                    column: Some(c),
                    message: format!(
                        "a JSON {} cannot be a {ty} value (nested objects and arrays load into TEXT columns as JSON text)",
                        if open == b'{' { "object" } else { "array" }
                    ),
                });
            }
            let text = &data[start..s.pos];
            out.push(c, text, true)
                .map_err(|msg| value_error(cols, c, start, text, &msg))
        }
        _ => Err(s.unexpected()),
    }
}

#[cold]
fn value_error(cols: &Columns<'_>, c: usize, offset: usize, bytes: &[u8], msg: &str) -> Fail {
    let ty = cols.schema.columns[c].data_type;
    Fail {
        offset,
        column: Some(c),
        message: format!("invalid {ty} value {}: {msg}", super::csv::snippet(bytes)),
    }
}

/// A key as written (for messages), from its opening quote.
fn raw_key(data: &[u8], at: usize) -> Vec<u8> {
    let mut s = Scanner {
        data,
        pos: at,
        newline_is_space: true,
        scratch: Vec::new(),
    };
    match s.string() {
        Ok(Str::Slice(a, b)) => data[a..b].to_vec(),
        Ok(Str::Scratch) => s.scratch,
        Err(_) => Vec::new(),
    }
}

fn show_key(key: &[u8]) -> String {
    super::csv::snippet(key)
}

/// Returns the first cut point `c > target` just after a comma that
/// separates two elements of the array whose body `data` is (`data`
/// starts at an element boundary, outside any string, at depth 0), or
/// `None` when there is none (the body ends first, or it is malformed:
/// the parser says how).
pub fn find_array_boundary(data: &[u8], target: usize) -> Option<usize> {
    let mut found = None;
    cuts::<false>(data, target, |_, c| {
        found = Some(c);
        false
    });
    found
}

/// The last cut point after a comma at `from` or later and before `to`
/// in the rows of a JSON array (as [`find_array_boundary`] cuts), or
/// `None`: the start of the element still open at `to`.
pub fn last_array_boundary(data: &[u8], from: usize, to: usize) -> Option<usize> {
    last_cut::<false>(data, from, to)
}

/// The position of the `]` that closes the array whose body `data` is
/// (from an element boundary, as [`find_array_boundary`]), if `data`
/// holds it.
pub fn array_body_end(data: &[u8]) -> Option<usize> {
    cuts::<false>(data, usize::MAX, |_, _| true)
}

/// Returns the first cut point `c > target` just after a value that
/// closes at depth 0 (its `}` or `]` at `target` or later) in values one
/// after another ([`JsonShape::Values`]; `data` starts between two
/// values), or `None` when there is none.
pub fn find_values_boundary(data: &[u8], target: usize) -> Option<usize> {
    let mut found = None;
    cuts::<true>(data, target, |_, c| {
        found = Some(c);
        false
    });
    found
}

/// The last cut point after a value that closes at `from` or later and
/// before `to` (as [`find_values_boundary`] cuts), or `None`.
pub fn last_values_boundary(data: &[u8], from: usize, to: usize) -> Option<usize> {
    last_cut::<true>(data, from, to)
}

fn last_cut<const VALUES: bool>(data: &[u8], from: usize, to: usize) -> Option<usize> {
    let mut last = None;
    cuts::<VALUES>(data, from, |at, c| {
        if at >= to {
            return false;
        }
        last = Some(c);
        true
    });
    last
}

/// Calls `cut` with each separator at or after `target` and the cut point
/// after it (see [`find_array_boundary`]), in order, while it returns
/// true. The separators: commas between elements of an array body, or
/// with `VALUES`, the closing bracket of each top-level value. Returns
/// the position of a closing bracket at depth 0 (the end of an array
/// body), if the scan stops there.
#[inline(always)]
fn cuts<const VALUES: bool>(
    data: &[u8],
    target: usize,
    mut cut: impl FnMut(usize, usize) -> bool,
) -> Option<usize> {
    // A byte loop, strings skipped with memchr: rows are dense with
    // structure (a quote or a comma every few bytes), where a word-at-a-time
    // scan for the structural bytes measured 30 % slower, and a byte loop
    // through strings 70 % slower.
    let n = data.len();
    let mut depth: usize = 0;
    let mut i = 0;
    while i < n {
        match data[i] {
            b'"' => {
                // Skip the string: to the next quote not escaped.
                let mut j = i + 1;
                loop {
                    let r = memchr::memchr2(b'"', b'\\', &data[j..])?;
                    if data[j + r] == b'\\' {
                        j += r + 2;
                        if j > n {
                            return None;
                        }
                    } else {
                        i = j + r;
                        break;
                    }
                }
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                if depth == 0 {
                    // The end of the top-level array.
                    return Some(i);
                }
                depth -= 1;
                if VALUES && depth == 0 && i >= target && !cut(i, after_separator(data, i + 1)) {
                    return None;
                }
            }
            b',' if !VALUES
                && depth == 0
                && i >= target
                && !cut(i, after_separator(data, i + 1)) =>
            {
                return None;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The position after spaces and one newline (if one follows) from `i`:
/// where a cut after a separator goes, so that a block of an array written
/// one element a line starts a line (and its rows' lines are exact).
pub fn after_separator(data: &[u8], mut i: usize) -> usize {
    while i < data.len() && matches!(data[i], b' ' | b'\t' | b'\r') {
        i += 1;
    }
    i + (data.get(i) == Some(&b'\n')) as usize
}

/// Returns the first cut point `c > target` just after a newline, or
/// `None` when `data[target..]` has none (JSON lines).
pub fn find_line_boundary(data: &[u8], target: usize) -> Option<usize> {
    memchr(b'\n', data.get(target..)?).map(|i| target + i + 1)
}

/// What the first row of a file is, for header detection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FirstRow {
    /// An array of strings: the names, and the bytes and newlines up to
    /// the next row (through the newline, or past the comma).
    Names(Vec<Vec<u8>>, usize, u64),
    /// Anything else (an object, an array holding a non-string, nothing).
    Data,
    /// `data` ends before the first row does and more can be read.
    NeedMore,
}

/// Reads the first row of `data` (the start of a file's rows) when it is
/// an array of strings: a header naming the columns of array rows.
pub fn read_first_row(data: &[u8], shape: JsonShape, at_eof: bool) -> FirstRow {
    let lines = shape == JsonShape::Lines;
    let start = data
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(data.len());
    if start == data.len() {
        return if at_eof {
            FirstRow::Data
        } else {
            FirstRow::NeedMore
        };
    }
    if data[start] != b'[' {
        return FirstRow::Data;
    }
    // A line holds the whole row; an array element may run to the end.
    let limit = if lines {
        match find_line_boundary(data, start) {
            Some(e) => e,
            None if at_eof => data.len(),
            None => return FirstRow::NeedMore,
        }
    } else {
        data.len()
    };
    let mut s = Scanner {
        data: &data[..limit],
        pos: start + 1,
        newline_is_space: !lines,
        scratch: Vec::new(),
    };
    // Not a header, or cut short by the end of what was read so far.
    let other = |s: &Scanner<'_>| {
        if !lines && !at_eof && s.pos >= limit {
            FirstRow::NeedMore
        } else {
            FirstRow::Data
        }
    };
    let mut names = Vec::new();
    s.ws();
    if s.peek() == Some(b']') {
        return FirstRow::Data;
    }
    loop {
        if s.peek() != Some(b'"') {
            return other(&s);
        }
        match s.string() {
            Ok(Str::Slice(a, b)) => names.push(data[a..b].to_vec()),
            Ok(Str::Scratch) => names.push(s.scratch.clone()),
            Err(_) => {
                s.pos = limit;
                return other(&s);
            }
        }
        s.ws();
        match s.peek() {
            Some(b',') => {
                s.pos += 1;
                s.ws();
            }
            Some(b']') => {
                s.pos += 1;
                break;
            }
            _ => return other(&s),
        }
    }
    // Then the end of the line (JSON lines), a comma or the array's
    // closing bracket (left for the reader), or the next value.
    let array = shape == JsonShape::Array;
    let used = if shape == JsonShape::Values {
        after_separator(data, s.pos)
    } else {
        s.newline_is_space = true;
        s.ws();
        match s.peek() {
            None if lines || at_eof => limit,
            None => return FirstRow::NeedMore,
            Some(b',') if array => after_separator(data, s.pos + 1),
            Some(b']') if array => s.pos,
            Some(_) => return FirstRow::Data,
        }
    };
    let newlines = memchr_iter(b'\n', &data[..used]).count() as u64;
    FirstRow::Names(names, used, newlines)
}

/// What an input that `--format json` reads holds, when it starts with
/// `{` (see [`object_start`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectStart {
    /// An object holding the rows array: its first element is at or after
    /// this offset (just past the `[`).
    Rows(usize),
    /// Values one after another, rows themselves ([`JsonShape::Values`]),
    /// or, with a rows field named, no such field: the message says why.
    Values,
    /// The named rows field is missing or holds no array: why.
    NoRows(String),
    /// `data` ends before this is known and more can be read.
    NeedMore,
}

/// Tells an object holding an array of rows (`{"data": [{..}, {..}],
/// "meta": ..}`) from values that are rows themselves, at the start of
/// `data`. Its fields are read in order: one that names a column
/// (`is_column`) makes the object a row; one that holds an array of
/// objects or arrays (or an empty one), before any such field, is the
/// rows array. The fields after the array must name no column either
/// ([`object_rest`] checks them). A malformed object is a row too: the
/// parser says what is wrong with it. With `rows` (a field name), that
/// field is the rows array, whatever the fields before it.
pub fn object_start(
    data: &[u8],
    at_eof: bool,
    rows: Option<&[u8]>,
    is_column: impl Fn(&[u8]) -> bool,
) -> ObjectStart {
    let start = data
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(data.len());
    if data.get(start) != Some(&b'{') {
        return ObjectStart::Values;
    }
    let mut s = Scanner {
        data,
        pos: start + 1,
        newline_is_space: true,
        scratch: Vec::new(),
    };
    // Ran out of data (more may come), or malformed.
    let other = |s: &Scanner<'_>| {
        if !at_eof && s.pos >= data.len() {
            ObjectStart::NeedMore
        } else {
            ObjectStart::Values
        }
    };
    let missing = |rows: &[u8]| {
        ObjectStart::NoRows(format!(
            "the top-level object has no field {} (--json-rows)",
            show_key(rows)
        ))
    };
    loop {
        s.ws();
        if s.peek() != Some(b'"') {
            return match (other(&s), rows) {
                (ObjectStart::Values, Some(r)) => missing(r),
                (o, _) => o,
            };
        }
        let key = match s.string() {
            Ok(Str::Slice(a, b)) => data[a..b].to_vec(),
            Ok(Str::Scratch) => s.scratch.clone(),
            Err(_) => {
                // An unterminated string runs to the end of the data.
                s.pos = data.len();
                return other(&s);
            }
        };
        if rows.is_none() && is_column(&key) {
            return ObjectStart::Values;
        }
        s.ws();
        if s.peek() != Some(b':') {
            return other(&s);
        }
        s.pos += 1;
        s.ws();
        if let Some(r) = rows
            && key == r
        {
            return match s.peek() {
                Some(b'[') => ObjectStart::Rows(s.pos + 1),
                None if !at_eof => ObjectStart::NeedMore,
                other => ObjectStart::NoRows(format!(
                    "field {} of the top-level object holds {}, not an array of rows (--json-rows)",
                    show_key(r),
                    match other {
                        Some(b'"') => "a string".to_string(),
                        Some(b'-' | b'0'..=b'9') => "a number".to_string(),
                        Some(b'{') => "an object".to_string(),
                        Some(b't' | b'f') => "a boolean".to_string(),
                        Some(b'n') => "null".to_string(),
                        _ => found(data, s.pos),
                    }
                )),
            };
        }
        if rows.is_none() && s.peek() == Some(b'[') {
            let open = s.pos;
            s.pos += 1;
            s.ws();
            match s.peek() {
                Some(b'{' | b'[' | b']') => return ObjectStart::Rows(open + 1),
                None => return other(&s),
                Some(_) => s.pos = open,
            }
        }
        if s.skip_value(1).is_err() {
            // Perhaps cut short by the end of the data: read more.
            s.pos = data.len();
            return other(&s);
        }
        s.ws();
        match (s.peek(), rows) {
            (Some(b','), _) => s.pos += 1,
            (Some(b'}'), Some(r)) => return missing(r),
            _ => return other(&s),
        }
    }
}

/// Checks what follows the `]` of the rows array of an object
/// ([`object_start`]): more fields, none naming a column, then the `}`,
/// then nothing but whitespace.
pub fn object_rest(data: &[u8], is_column: impl Fn(&[u8]) -> bool) -> Result<(), String> {
    let mut s = Scanner {
        data,
        pos: 0,
        newline_is_space: true,
        scratch: Vec::new(),
    };
    let what = "the object holding the rows array";
    loop {
        s.ws();
        match s.peek() {
            Some(b'}') => {
                s.pos += 1;
                break;
            }
            Some(b',') => {
                s.pos += 1;
                s.ws();
            }
            _ => {
                return Err(format!(
                    "expected ',' or '}}' in {what} after the array, found {}",
                    found(data, s.pos)
                ));
            }
        }
        let key = match s.peek() {
            Some(b'"') => s
                .string()
                .map_err(|f| format!("in {what}: {}", f.message))?,
            _ => return Err(format!("in {what}: {}", s.expected_name().message)),
        };
        let key = match key {
            Str::Slice(a, b) => data[a..b].to_vec(),
            Str::Scratch => s.scratch.clone(),
        };
        if is_column(&key) {
            return Err(format!(
                "the input was read as an object holding an array of rows (its fields before the array name no column), but the object also has field {}, which names a column (if the objects are rows, put a field that names a column first)",
                show_key(&key)
            ));
        }
        s.ws();
        s.expect(b':', "':' after a field name")
            .and_then(|()| {
                s.ws();
                s.skip_value(1)
            })
            .map_err(|f| format!("in {what}: {}", f.message))?;
    }
    s.ws();
    match s.peek() {
        None => Ok(()),
        Some(_) => Err(format!(
            "after {what}, found {} (the input holds one such object)",
            found(data, s.pos)
        )),
    }
}

/// The field map of array rows: field i feeds the column that `names[i]`
/// (a header row or `--columns`) names (exactly, else ignoring ASCII case
/// when one column alone matches so). A name that
/// is no column is an error unless `ignore_unknown` (then the field is
/// skipped); a column named twice is an error.
pub fn names_field_map(
    schema: &Schema,
    names: &[Vec<u8>],
    ignore_unknown: bool,
) -> Result<FieldMap, String> {
    let mut targets = Vec::with_capacity(names.len());
    for name in names {
        let c = position_of(schema.columns.iter().map(|c| c.name.as_bytes()), name);
        match c {
            Some(c) if targets.contains(&Some(c)) => {
                return Err(format!(
                    "the header names column {} twice",
                    schema.columns[c].name
                ));
            }
            None if !ignore_unknown => {
                return Err(format!(
                    "the header names field {}, which is not a column of the table (columns: {}); --ignore-unknown skips it",
                    show_key(name),
                    schema.column_names()
                ));
            }
            c => targets.push(c),
        }
    }
    let fills = (0..schema.len())
        .filter(|c| !targets.contains(&Some(*c)))
        .map(|c| (c, schema.columns[c].default.clone().map(String::into_bytes)))
        .collect();
    Ok(FieldMap {
        needed: targets.len(),
        targets,
        fills,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::batch::{ValueOptions, format_value};

    type Rows = Vec<Vec<Option<String>>>;

    fn parse_with(
        data: &str,
        schema: &str,
        format: JsonFormat,
        map: Option<&FieldMap>,
    ) -> Result<(Rows, BlockInfo), BlockError> {
        let schema: Schema = schema.parse().unwrap();
        let mut b = BatchBuilder::new(&schema, Arc::new(ValueOptions::default()), 16);
        let info = parse_json_block(
            data.as_bytes(),
            &format,
            &schema,
            &mut b,
            RowPolicy::default(),
            map,
            &mut Vec::new(),
        )?;
        let (batch, _) = b.finish().unwrap();
        let rows = (0..batch.num_rows())
            .map(|r| {
                batch
                    .columns()
                    .iter()
                    .map(|c| format_value(c.as_ref(), r))
                    .collect()
            })
            .collect();
        Ok((rows, info))
    }

    fn parse(data: &str, schema: &str) -> Result<Rows, BlockError> {
        parse_with(data, schema, JsonFormat::default(), None).map(|r| r.0)
    }

    fn err(data: &str, schema: &str) -> (u64, Option<usize>, String) {
        let e = parse(data, schema).unwrap_err();
        (e.line_in_block, e.column, e.message)
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn objects_in_any_order_with_missing_fields() {
        let rows = parse(
            "{\"a\":1,\"b\":\"x\"}\n\n{\"b\":\"y\",\"A\":2}\r\n{\"a\":3}\n{}",
            "a INT, b TEXT",
        )
        .unwrap();
        assert_eq!(
            rows,
            vec![
                vec![s("1"), s("x")],
                vec![s("2"), s("y")],
                vec![s("3"), None],
                vec![None, None],
            ]
        );
    }

    #[test]
    fn escapes_and_unicode() {
        let rows = parse(
            r#"{"t":"a\"b\\c\/d\b\f\n\r\t"}
{"t":"caf\u00e9 \u20ac \ud83d\ude00 \u0041"}
{"t":"café €"}
"#,
            "t TEXT",
        )
        .unwrap();
        assert_eq!(
            rows,
            vec![
                vec![s("a\"b\\c/d\u{8}\u{c}\n\r\t")],
                vec![s("café € 😀 A")],
                vec![s("café €")],
            ]
        );
        let e = err(r#"{"t":"\ud83d x"}"#, "t TEXT");
        assert_eq!(
            e.2,
            "lone surrogate \\uD83D (a high surrogate must be followed by a low one, \\uDC00 to \\uDFFF) (character 7 of the line)"
        );
        let e = err("{\"t\":\"ok\"}\n{\"t\":\"a\\qb\"}", "t TEXT");
        assert_eq!(e.0, 1);
        assert!(e.2.starts_with("invalid escape \\q in a string"), "{}", e.2);
        assert!(e.2.ends_with("(character 8 of the line)"), "{}", e.2);
        let e = err("{\"t\":\"a\tb\"}", "t TEXT");
        assert!(e.2.starts_with("control character 0x09"), "{}", e.2);
        let e = err("{\"t\":\"abc}\n", "t TEXT");
        assert!(e.2.starts_with("unterminated string"), "{}", e.2);
    }

    #[test]
    fn invalid_utf8_names_the_column() {
        let schema: Schema = "t TEXT".parse().unwrap();
        let mut b = BatchBuilder::new(&schema, Arc::new(ValueOptions::default()), 4);
        let e = parse_json_block(
            b"{\"t\":\"ok\"}\n{\"t\":\"bad\xff\"}\n",
            &JsonFormat::default(),
            &schema,
            &mut b,
            RowPolicy::default(),
            None,
            &mut Vec::new(),
        )
        .unwrap_err();
        assert_eq!((e.line_in_block, e.column, e.offset), (1, Some(0), 16));
        assert!(e.message.starts_with("invalid TEXT value"), "{}", e.message);
    }

    #[test]
    fn numbers_are_exact_and_range_checked() {
        let rows = parse(
            r#"{"i":2147483647,"b":9223372036854775807,"d":12345678901234.5678,"f":1.5e3}
{"i":-2147483648,"b":-9223372036854775808,"d":"-0.0001","f":-0}
{"i":-0,"b":123456789012345678,"d":0,"f":1E-2}
"#,
            "i INT, b BIGINT, d DECIMAL(18,4), f DOUBLE",
        )
        .unwrap();
        assert_eq!(
            rows,
            vec![
                vec![
                    s("2147483647"),
                    s("9223372036854775807"),
                    s("12345678901234.5678"),
                    s("1500")
                ],
                vec![
                    s("-2147483648"),
                    s("-9223372036854775808"),
                    s("-0.0001"),
                    s("-0")
                ],
                vec![s("0"), s("123456789012345678"), s("0.0000"), s("0.01")],
            ]
        );
        let e = err(r#"{"i":2147483648}"#, "i INT");
        assert_eq!(
            (e.1, e.2.as_str()),
            (
                Some(0),
                "invalid INT value \"2147483648\": out of range for INT (-2147483648..2147483647)"
            )
        );
        let e = err(r#"{"b":9223372036854775808}"#, "b BIGINT");
        assert_eq!(e.1, Some(0));
        assert!(
            e.2.starts_with("invalid BIGINT value \"9223372036854775808\""),
            "{}",
            e.2
        );
        let e = err(r#"{"b":-9223372036854775809}"#, "b BIGINT");
        assert!(e.2.starts_with("invalid BIGINT value"), "{}", e.2);
        let e = err(r#"{"i":1.5}"#, "i INT");
        assert!(e.2.starts_with("invalid INT value \"1.5\""), "{}", e.2);
        let e = err(r#"{"i":012}"#, "i INT");
        assert!(e.2.starts_with("invalid number: leading zeros"), "{}", e.2);
        let e = err(r#"{"i":1.}"#, "i INT");
        assert!(e.2.starts_with("invalid number: no digit after"), "{}", e.2);
        let e = err(r#"{"i":+1}"#, "i INT");
        assert!(e.2.starts_with("expected a JSON value"), "{}", e.2);
        let e = err(r#"{"d":1.23456}"#, "d DECIMAL(10,2)");
        assert!(e.2.starts_with("invalid DECIMAL(10,2) value"), "{}", e.2);
    }

    #[test]
    fn strings_go_through_the_type_parsers() {
        let rows = parse(
            r#"{"d":"2024-01-31","n":"42","x":"12.50","ok":true}
{"d":null,"n":"","x":"7","ok":"no"}
"#,
            "d DATE, n INT, x DECIMAL(6,2), ok BOOLEAN",
        )
        .unwrap();
        assert_eq!(
            rows,
            vec![
                vec![s("2024-01-31"), s("42"), s("12.50"), s("true")],
                vec![None, None, s("7.00"), s("false")],
            ]
        );
        let rows = parse(
            r#"{"t":true,"u":false,"v":12.0,"w":""}"#,
            "t TEXT, u TEXT, v TEXT, w TEXT",
        )
        .unwrap();
        assert_eq!(rows, vec![vec![s("true"), s("false"), s("12.0"), s("")]]);
    }

    #[test]
    fn nested_values_are_text() {
        let rows = parse(
            r#"{"id":1,"j":{"a":[1,2,{"b":"c\"}"}],"e":{}}}
{"id":2,"j":[ ]}
"#,
            "id INT, j TEXT",
        )
        .unwrap();
        assert_eq!(
            rows,
            vec![
                vec![s("1"), s(r#"{"a":[1,2,{"b":"c\"}"}],"e":{}}"#)],
                vec![s("2"), s("[ ]")],
            ]
        );
        let e = err(r#"{"id":{"a":1}}"#, "id INT, j TEXT");
        assert_eq!(e.1, Some(0));
        assert!(
            e.2.starts_with("a JSON object cannot be a INT value"),
            "{}",
            e.2
        );
        let e = err(r#"{"id":1,"j":[1,2}"#, "id INT, j TEXT");
        assert!(
            e.2.starts_with("expected ',' or ']' in an array, found '}'"),
            "{}",
            e.2
        );
        let e = err(r#"{"id":1,"j":[1,2"#, "id INT, j TEXT");
        assert!(e.2.starts_with("unterminated array"), "{}", e.2);
    }

    #[test]
    fn unknown_and_duplicate_fields() {
        let e = err("{\"a\":1}\n{\"a\":2,\"zz\":3}", "a INT, b TEXT");
        assert_eq!(e.0, 1);
        assert_eq!(
            e.2,
            "unknown field \"zz\" (the table's columns: a, b; --ignore-unknown skips such fields) (character 8 of the line)"
        );
        let f = JsonFormat {
            ignore_unknown: true,
            ..Default::default()
        };
        let (rows, _) = parse_with(
            r#"{"a":2,"zz":{"q":[1]},"b":"x"}"#,
            "a INT, b TEXT",
            f,
            None,
        )
        .unwrap();
        assert_eq!(rows, vec![vec![s("2"), s("x")]]);
        let e = err(r#"{"a":1,"b":"x","A":2}"#, "a INT, b TEXT");
        assert_eq!(
            e.2,
            "field \"A\" appears twice in the object (column a) (character 16 of the line)"
        );
    }

    #[test]
    fn defaults_and_missing_keys() {
        let rows = parse(r#"{"a":1}"#, "a INT, b TEXT DEFAULT 'new', c INT DEFAULT 7").unwrap();
        assert_eq!(rows, vec![vec![s("1"), s("new"), s("7")]]);
        let e = err(r#"{"b":"x"}"#, "a INT PRIMARY KEY, b TEXT");
        assert!(
            e.2.starts_with("the row has no field for the primary key a"),
            "{}",
            e.2
        );
    }

    #[test]
    fn array_rows_by_position_and_by_header() {
        let rows = parse("[1,\"a\"]\n[2,null]\n", "a INT, b TEXT").unwrap();
        assert_eq!(rows, vec![vec![s("1"), s("a")], vec![s("2"), None]]);
        let e = err("[1]\n", "a INT, b TEXT");
        assert!(
            e.2.starts_with("found a row with 1 value, expected 2"),
            "{}",
            e.2
        );
        let e = err("[1,\"a\",3]\n", "a INT, b TEXT");
        assert!(e.2.starts_with("the row has more than 2 values"), "{}", e.2);
        let schema: Schema = "a INT, b TEXT, c INT DEFAULT 5".parse().unwrap();
        let map = names_field_map(&schema, &[b"B".to_vec(), b"a".to_vec()], false).unwrap();
        let (rows, _) = parse_with(
            "[\"x\",1]\n[\"y\",2]\n",
            "a INT, b TEXT, c INT DEFAULT 5",
            JsonFormat::default(),
            Some(&map),
        )
        .unwrap();
        assert_eq!(
            rows,
            vec![vec![s("1"), s("x"), s("5")], vec![s("2"), s("y"), s("5")]]
        );
        assert!(names_field_map(&schema, &[b"q".to_vec()], false).is_err());
        assert!(names_field_map(&schema, &[b"a".to_vec(), b"A".to_vec()], false).is_err());
        let m = names_field_map(&schema, &[b"q".to_vec(), b"a".to_vec()], true).unwrap();
        assert_eq!(m.targets, vec![None, Some(0)]);
    }

    #[test]
    fn array_shape_counts_newlines_and_allows_a_cut_after_a_comma() {
        let f = JsonFormat {
            shape: JsonShape::Array,
            ..Default::default()
        };
        let (rows, info) = parse_with(
            "\n  {\"a\": 1,\n   \"b\": \"x\"},\n  {\"a\": 2},\n",
            "a INT, b TEXT",
            f,
            None,
        )
        .unwrap();
        assert_eq!(rows, vec![vec![s("1"), s("x")], vec![s("2"), None]]);
        assert_eq!((info.rows, info.newlines), (2, 4));
        let e = parse_with("{\"a\":1}\n{\"a\":2}", "a INT", f, None).unwrap_err();
        assert!(
            e.message
                .starts_with("expected ',' or ']' after an array element"),
            "{}",
            e.message
        );
        assert_eq!(e.line_in_block, 1);
        let e = parse_with("{\"a\":1},,{\"a\":2}", "a INT", f, None).unwrap_err();
        assert!(e.message.starts_with("expected a row"), "{}", e.message);
    }

    #[test]
    fn rejects_complete_the_row_and_keep_the_record() {
        let schema: Schema = "a INT, b TEXT".parse().unwrap();
        for (shape, data, record, line) in [
            (
                JsonShape::Lines,
                "{\"a\":1,\"b\":\"x\"}\n{\"b\":\"y\",\"a\":\"no\"}\r\n{\"a\":3}\n",
                "{\"b\":\"y\",\"a\":\"no\"}",
                1,
            ),
            (
                JsonShape::Array,
                "{\"a\":1,\"b\":\"x\"},\n{\"b\":\"y\",\n\"a\":[1,\"]\"]},\n{\"a\":3}",
                "{\"b\":\"y\",\n\"a\":[1,\"]\"]}",
                2,
            ),
        ] {
            let mut b = BatchBuilder::new(&schema, Arc::new(ValueOptions::default()), 4);
            let mut rejects = Vec::new();
            let info = parse_json_block(
                data.as_bytes(),
                &JsonFormat {
                    shape,
                    ignore_unknown: false,
                },
                &schema,
                &mut b,
                RowPolicy {
                    skip_bad: true,
                    ..RowPolicy::default()
                },
                None,
                &mut rejects,
            )
            .unwrap();
            assert_eq!(info.rows, 2);
            assert_eq!(rejects.len(), 1);
            assert_eq!(rejects[0].row, 1);
            assert_eq!(rejects[0].error.line_in_block, line);
            assert_eq!(String::from_utf8_lossy(&rejects[0].record), record);
            let (batch, _) = b.finish_without(&[1]).unwrap();
            assert_eq!(batch.num_rows(), 2);
            assert_eq!(format_value(batch.column(0).as_ref(), 1), s("3"));
        }
    }

    #[test]
    fn rows_must_be_objects_or_arrays_one_a_line() {
        let e = err("1\n", "a INT");
        assert!(e.2.starts_with("expected a row (a JSON object or array), found a number"));
        let e = err("{\"a\":1} {\"a\":2}\n", "a INT");
        assert!(
            e.2.starts_with("expected the end of the line after a row"),
            "{}",
            e.2
        );
        let e = err("{\"a\":\n1}\n", "a INT");
        assert!(e.2.starts_with("expected a JSON value"), "{}", e.2);
        let e = err("{\"a\":1,\n", "a INT");
        assert!(e.2.starts_with("the line ends inside an object"), "{}", e.2);
        let e = err("{\"a\" 1}", "a INT");
        assert!(
            e.2.starts_with("expected ':' after a field name, found '1'"),
            "{}",
            e.2
        );
        let e = err("{\"a\":tru}", "a INT");
        assert!(e.2.starts_with("expected a JSON value (string, number, object, array, true, false or null), found \"tru\""), "{}", e.2);
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(600), "]".repeat(600));
        let e = err(&deep, "a TEXT");
        assert!(e.2.starts_with("nested deeper than 512 levels"), "{}", e.2);
    }

    #[test]
    fn boundaries() {
        let body = br#"{"a":"x,]}\"",
 "b":[1,{"c":2}]}, [3,4] ,5,
6]"#;
        let first = body.windows(3).position(|w| w == b"}, ").unwrap() + 1;
        assert_eq!(find_array_boundary(body, 0), Some(first + 2));
        let c = find_array_boundary(body, first + 2).unwrap();
        assert_eq!(&body[first + 2..c], b"[3,4] ,".as_slice());
        let d = find_array_boundary(body, c).unwrap();
        assert_eq!(&body[c..d], b"5,\n".as_slice());
        assert_eq!(find_array_boundary(body, d), None);
        assert_eq!(find_array_boundary(b"1,2] ", 2), None);
        assert_eq!(find_line_boundary(b"ab\ncd\n", 0), Some(3));
        assert_eq!(find_line_boundary(b"ab\ncd\n", 3), Some(6));
        assert_eq!(find_line_boundary(b"ab\ncd", 3), None);
    }

    #[test]
    fn first_row_header() {
        assert_eq!(
            read_first_row(b"[\"a\", \"b\"]\n[1,2]\n", JsonShape::Lines, false),
            FirstRow::Names(vec![b"a".to_vec(), b"b".to_vec()], 11, 1)
        );
        assert_eq!(
            read_first_row(b"\n [\"a\",\n \"b\"] ,\n[1,2]", JsonShape::Array, false),
            FirstRow::Names(vec![b"a".to_vec(), b"b".to_vec()], 16, 3)
        );
        assert_eq!(
            read_first_row(b"[\"a\"]\n]\n", JsonShape::Array, true),
            FirstRow::Names(vec![b"a".to_vec()], 6, 1)
        );
        assert_eq!(
            read_first_row(b"[\"a\"", JsonShape::Array, false),
            FirstRow::NeedMore
        );
        assert_eq!(
            read_first_row(b"[\"a\", 1]\n", JsonShape::Lines, false),
            FirstRow::Data
        );
        assert_eq!(
            read_first_row(b"{\"a\":1}\n", JsonShape::Lines, false),
            FirstRow::Data
        );
        assert_eq!(
            read_first_row(b"[\"a\", ", JsonShape::Lines, false),
            FirstRow::NeedMore
        );
        assert_eq!(
            read_first_row(b"[\"a\"]", JsonShape::Lines, true),
            FirstRow::Names(vec![b"a".to_vec()], 5, 0)
        );
    }

    #[test]
    fn swar_scan_agrees_with_a_byte_scan() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let alphabet = b"ab\"\\\x01\x1f \x7f\x80\xff\xe9\n";
        for _ in 0..20_000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let len = (rng % 20) as usize;
            let v: Vec<u8> = (0..len)
                .map(|i| alphabet[((rng >> (i * 3)) % alphabet.len() as u64) as usize])
                .collect();
            let mut x = [b'a'; 8];
            x[..len.min(8)].copy_from_slice(&v[..len.min(8)]);
            let m = special_bytes(u64::from_le_bytes(x));
            let want = x.iter().position(|&c| is_special(c));
            let got = (m != 0).then(|| (m.trailing_zeros() / 8) as usize);
            assert_eq!(got, want, "{x:?}");
        }
    }
}
