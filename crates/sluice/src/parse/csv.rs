//! The record tokenizer and block parser.

use memchr::{memchr, memchr_iter};

use super::{CLASS_DELIM, CLASS_NEWLINE, CLASS_QUOTE, Classes, Dialect, LineCount, Split};
use crate::batch::{BatchBuilder, DataType, FastPath, Schema};

/// A malformed record or value inside a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockError {
    /// Byte offset in the block of the record or field at fault.
    pub offset: usize,
    /// Number of newlines in the block before `offset`.
    pub line_in_block: u64,
    /// 0-based column index, when the error is about one field.
    pub column: Option<usize>,
    pub message: String,
    /// The field as read, when it is a value its column's type does not
    /// take (what widening an inferred type needs to know).
    pub value: Option<Vec<u8>>,
}

/// What a parsed block contained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockInfo {
    pub rows: u64,
    /// Newlines consumed, for line numbers of later blocks.
    pub newlines: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Term {
    Delim,
    Newline,
    Eof,
}

pub(super) enum Field {
    /// `data[start..end]`, as is.
    Slice(usize, usize),
    /// The unescaped contents in the scratch buffer.
    Scratch,
}

pub(super) struct Scanned {
    pub(super) field: Field,
    pub(super) quoted: bool,
    pub(super) term: Term,
    /// Where the next field or record starts.
    pub(super) next: usize,
    /// Newlines inside a quoted field.
    pub(super) newlines: u64,
}

/// Shortens a value for an error message.
pub(crate) fn snippet(v: &[u8]) -> String {
    const MAX: usize = 40;
    let s = String::from_utf8_lossy(&v[..v.len().min(MAX)]);
    if v.len() > MAX {
        format!("{:?}...", s)
    } else {
        format!("{:?}", s)
    }
}

/// [`scan_field`] for `d`'s split, chosen at run time (for the paths
/// that are not per field of a block).
fn scan_field_any(
    data: &[u8],
    pos: usize,
    d: &Dialect,
    classes: &Classes,
    scratch: &mut Vec<u8>,
) -> Result<Scanned, (usize, String)> {
    if d.split == Split::Whitespace {
        scan_field::<true>(data, pos, d, classes, scratch)
    } else {
        scan_field::<false>(data, pos, d, classes, scratch)
    }
}

/// Scans one field starting at `pos`; `pos == data.len()` is an empty
/// last field. `WS`: fields split at runs of whitespace (a type
/// parameter, so that the other splits' code has no test of it).
#[inline(always)]
fn scan_field<const WS: bool>(
    data: &[u8],
    pos: usize,
    d: &Dialect,
    classes: &Classes,
    scratch: &mut Vec<u8>,
) -> Result<Scanned, (usize, String)> {
    let n = data.len();
    if pos < n && Some(data[pos]) == d.quote {
        return scan_quoted(data, pos, d, scratch);
    }
    if d.trim_around_quotes && pos < n && data[pos] == b' ' {
        let at = pos + data[pos..].iter().take_while(|&&c| c == b' ').count();
        if at < n && Some(data[at]) == d.quote {
            return scan_quoted(data, at, d, scratch);
        }
    }
    let i = super::byte_scan::find_any(data, pos, classes.stops);
    let (end, term) = if i == n {
        (n, Term::Eof)
    } else {
        match classes.table[data[i] as usize] {
            CLASS_DELIM => (i, Term::Delim),
            CLASS_NEWLINE => (i, Term::Newline),
            CLASS_QUOTE => {
                return Err((
                    i,
                    "unexpected quote inside an unquoted field (quote the whole field and double inner quotes, or pass --quote '' to read quotes as text)".into(),
                ));
            }
            _ => unreachable!("classes hold 0..=3"),
        }
    };
    let mut fend = end;
    if term != Term::Delim && fend > pos && data[fend - 1] == b'\r' {
        fend -= 1;
    }
    let (term, next) = match term {
        Term::Delim if WS => after_run(data, end + 1),
        _ => (term, end + 1),
    };
    Ok(Scanned {
        field: Field::Slice(pos, fend),
        quoted: false,
        term,
        next,
        newlines: 0,
    })
}

/// Fields split at runs of whitespace: past the rest of the run that
/// ended a field at `at`, and what ends there (spaces and tabs before a
/// line's end end the record, not a field).
#[cold]
fn after_run(data: &[u8], mut at: usize) -> (Term, usize) {
    while at < data.len() && matches!(data[at], b' ' | b'\t') {
        at += 1;
    }
    match data.get(at) {
        None => (Term::Eof, data.len() + 1),
        Some(b'\n') => (Term::Newline, at + 1),
        Some(b'\r') if data.get(at + 1) == Some(&b'\n') => (Term::Newline, at + 2),
        Some(_) => (Term::Delim, at),
    }
}

/// Fields split at runs of whitespace: past the spaces and tabs at the
/// start of a record at `at`.
#[cold]
fn skip_indent(data: &[u8], mut at: usize) -> usize {
    while at < data.len() && matches!(data[at], b' ' | b'\t') {
        at += 1;
    }
    at
}

#[cold]
pub(super) fn scan_quoted(
    data: &[u8],
    start: usize,
    d: &Dialect,
    scratch: &mut Vec<u8>,
) -> Result<Scanned, (usize, String)> {
    let q = d.quote.expect("only called for a quote");
    let esc = d.distinct_escape();
    let doubling = d.doubling();
    let n = data.len();
    let mut pos = start + 1;
    let mut copied = false;
    let mut newlines = 0;
    let content_end;
    loop {
        let (hit, lines) = super::byte_scan::find_quote(data, pos, q, esc);
        newlines += lines;
        let Some(p) = hit else {
            return Err((
                start,
                "unterminated quoted field (no closing quote before the end of the input)".into(),
            ));
        };
        if Some(data[p]) == esc {
            if p + 1 >= n {
                return Err((
                    start,
                    "unterminated quoted field (escape at the end of the input)".into(),
                ));
            }
            if !copied {
                scratch.clear();
                copied = true;
            }
            scratch.extend_from_slice(&data[pos..p]);
            scratch.push(data[p + 1]);
            newlines += (data[p + 1] == b'\n') as u64;
            pos = p + 2;
            continue;
        }
        if doubling && p + 1 < n && data[p + 1] == q {
            if !copied {
                scratch.clear();
                copied = true;
            }
            scratch.extend_from_slice(&data[pos..=p]);
            pos = p + 2;
            continue;
        }
        if copied {
            scratch.extend_from_slice(&data[pos..p]);
        }
        content_end = p;
        pos = p + 1;
        break;
    }
    if d.trim_around_quotes {
        pos += data[pos..].iter().take_while(|&&c| c == b' ').count();
    }
    let (term, next) = match data.get(pos) {
        None => (Term::Eof, n + 1),
        Some(&c) if d.ends_field(c) => match d.split {
            Split::Whitespace => after_run(data, pos + 1),
            _ => (Term::Delim, pos + 1),
        },
        Some(b'\n') => (Term::Newline, pos + 1),
        Some(b'\r') if data.get(pos + 1) == Some(&b'\n') => (Term::Newline, pos + 2),
        Some(&c) => {
            return Err((
                pos,
                format!(
                    "unexpected {:?} after a closing quote (expected a delimiter or the end of the line)",
                    c as char
                ),
            ));
        }
    };
    Ok(Scanned {
        field: if copied {
            Field::Scratch
        } else {
            Field::Slice(start + 1, content_end)
        },
        quoted: true,
        term,
        next,
        newlines,
    })
}

fn block_error(data: &[u8], offset: usize, column: Option<usize>, message: String) -> BlockError {
    block_error_at(&mut LineCount::default(), data, offset, column, message)
}

/// [`block_error`], its line counted on from the block's last error.
fn block_error_at(
    lines: &mut LineCount,
    data: &[u8],
    offset: usize,
    column: Option<usize>,
    message: String,
) -> BlockError {
    let offset = offset.min(data.len());
    BlockError {
        offset,
        line_in_block: lines.before(data, offset),
        column,
        message,
        value: None,
    }
}

/// The integer fast path: an optional `-` and 1 to 18 digits right up to a
/// delimiter, newline or the end, parsed in the same pass that finds the
/// field's end. Anything else (spaces, quotes, 19+ digits) returns `None`
/// and takes the general path, which also makes the error messages.
#[inline(always)]
pub(crate) fn scan_integer(data: &[u8], pos: usize, delimiter: u8) -> Option<(i64, Term, usize)> {
    let n = data.len();
    let mut i = pos;
    let neg = i < n && data[i] == b'-';
    i += neg as usize;
    let start = i;
    let mut acc: i64 = 0;
    // Up to 15 digits with one vector; else eight bytes at a time while
    // they are all digits (SWAR).
    let mut swar = true;
    if let Some((v, len)) = super::byte_scan::leading_digits16(data, i) {
        acc = v as i64;
        i += len;
        swar = false;
    }
    while swar && i + 8 <= n {
        let chunk = u64::from_le_bytes(data[i..i + 8].try_into().expect("8 bytes"));
        let k = leading_digits(chunk);
        if k == 0 {
            break;
        }
        if i - start + k > 18 {
            return None;
        }
        acc = acc * POW10[k] + swar_digits(chunk, k) as i64;
        i += k;
        if k < 8 {
            break;
        }
    }
    (acc, i) = more_digits(data, i, acc);
    let digits = i - start;
    if digits == 0 || digits > 18 {
        return None;
    }
    let v = if neg { -acc } else { acc };
    let (term, next) = value_end(data, i, delimiter)?;
    Some((v, term, next))
}

/// The decimal fast path: an optional `-`, at most `int_digits` digits,
/// and optionally a `.` and at most `scale` digits (one digit at least),
/// right up to a delimiter, newline or the end, scaled by 10^scale in the
/// same pass that finds the field's end. Anything else (a `+`, spaces,
/// an exponent, more digits, quotes) returns `None` and takes the general
/// path, which also says why a value does not fit.
#[inline(always)]
pub(crate) fn scan_decimal(
    data: &[u8],
    pos: usize,
    delimiter: u8,
    scale: u8,
    int_digits: u8,
) -> Option<(i64, Term, usize)> {
    let n = data.len();
    let mut i = pos;
    let neg = i < n && data[i] == b'-';
    i += neg as usize;
    let start = i;
    // At most 18 digits in all (DECIMAL's precision): no overflow.
    let mut acc: i64 = 0;
    (acc, i) = more_digits(data, i, acc);
    let whole = i - start;
    if whole > int_digits as usize {
        return None;
    }
    let mut frac = 0;
    if i < n && data[i] == b'.' {
        i += 1;
        let from = i;
        (acc, i) = more_digits(data, i, acc);
        frac = i - from;
        if frac > scale as usize {
            return None;
        }
    }
    if whole + frac == 0 {
        return None;
    }
    let v = acc * POW10_18[scale as usize - frac];
    let v = if neg { -v } else { v };
    let (term, next) = value_end(data, i, delimiter)?;
    Some((v, term, next))
}

/// The date fast path: exactly `YYYY-MM-DD` right up to a delimiter,
/// newline or the end, a valid day, as days since 1970-01-01. Anything
/// else takes the general path (one-digit months, spaces, errors).
#[inline(always)]
pub(crate) fn scan_date(data: &[u8], pos: usize, delimiter: u8) -> Option<(i32, Term, usize)> {
    let f: &[u8; 10] = data.get(pos..pos + 10)?.try_into().ok()?;
    let digit = |k: usize| {
        let v = f[k].wrapping_sub(b'0');
        (v <= 9).then_some(v as u32)
    };
    if f[4] != b'-' || f[7] != b'-' {
        return None;
    }
    let y = digit(0)? * 1000 + digit(1)? * 100 + digit(2)? * 10 + digit(3)?;
    let m = digit(5)? * 10 + digit(6)?;
    let day = digit(8)? * 10 + digit(9)?;
    let v = super::value::ymd_days(y, m, day)?;
    let (term, next) = value_end(data, pos + 10, delimiter)?;
    Some((v, term, next))
}

/// What ends a value of a fast path at `i`: the delimiter, a line end
/// (LF or CR LF) or the end of the data (then `data.len() + 1`, as for
/// every last field); `None` for anything else.
#[inline(always)]
fn value_end(data: &[u8], i: usize, delimiter: u8) -> Option<(Term, usize)> {
    match data.get(i) {
        Some(&c) if c == delimiter => Some((Term::Delim, i + 1)),
        Some(b'\n') => Some((Term::Newline, i + 1)),
        Some(b'\r') if data.get(i + 1) == Some(&b'\n') => Some((Term::Newline, i + 2)),
        None => Some((Term::Eof, data.len() + 1)),
        _ => None,
    }
}

/// The digits from `i` on added to `acc` (wrapping: the callers refuse
/// more digits than fit), and where they end.
#[inline(always)]
fn more_digits(data: &[u8], mut i: usize, mut acc: i64) -> (i64, usize) {
    while i < data.len() {
        let d = data[i].wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        acc = acc.wrapping_mul(10).wrapping_add(d as i64);
        i += 1;
    }
    (acc, i)
}

/// 10^0 ..= 10^18.
pub(super) const POW10_18: [i64; 19] = {
    let mut t = [1i64; 19];
    let mut k = 1;
    while k < 19 {
        t[k] = t[k - 1] * 10;
        k += 1;
    }
    t
};

/// Whether the field at `pos` starts with a zero that a number read back
/// would not have (`007`, `-0`): such a field of an exact column takes the
/// slow path, which says why it cannot be stored as written.
#[inline]
pub(super) fn zero_first(data: &[u8], pos: usize) -> bool {
    match data.get(pos..pos + 2) {
        Some([b'0', c]) => c.is_ascii_digit(),
        Some([b'-', b'0']) => true,
        _ => false,
    }
}

const POW10: [i64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// How many of the 8 bytes (first byte lowest) are ASCII digits before the
/// first non-digit.
#[inline(always)]
fn leading_digits(chunk: u64) -> usize {
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    // A byte is a digit iff its high nibble is 3 and adding 6 keeps it 3.
    // (A carry out of a byte >= 0xFA only disturbs bytes after that
    // non-digit, which are not counted.)
    let a = chunk & HIGH;
    let b = chunk.wrapping_add(0x0606_0606_0606_0606) & HIGH;
    let ok = !(a ^ 0x3030_3030_3030_3030) & !(b ^ 0x3030_3030_3030_3030) & HIGH;
    // `ok` has 0xF0 in each digit byte; count the digit bytes from the low end.
    ((!ok & HIGH).trailing_zeros() / 8) as usize
}

/// The value of the first `k` (1..=8) digit bytes of `chunk`.
#[inline(always)]
fn swar_digits(chunk: u64, k: usize) -> u64 {
    // Move the k digits to the top bytes: the low bytes become leading zeros.
    let mut v = (chunk << (8 * (8 - k))) & 0x0F0F_0F0F_0F0F_0F0F;
    v = (v * 10 + (v >> 8)) & 0x00FF_00FF_00FF_00FF;
    v = (v * 100 + (v >> 16)) & 0x0000_FFFF_0000_FFFF;
    (v * 10_000 + (v >> 32)) & 0xFFFF_FFFF
}

/// What to do with a malformed record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowPolicy {
    /// Reject the record (see [`Reject`]) and go on, instead of failing.
    pub skip_bad: bool,
    /// A record with too few fields gets NULLs for the missing ones.
    pub fill_missing: bool,
    /// A record longer than this many bytes fails the block, also with
    /// `skip_bad` (`--max-line-size`: the reader fails a longer one that
    /// has not ended where it cuts, so a block of any size does the same).
    pub max_record: Option<usize>,
    /// With `skip_bad`: rejects are only counted (no rejects file, no
    /// `--max-errors`), so their messages and record bytes are not made.
    /// Formatting them was 6/7 of the cost of a block of rejects.
    pub counted_only: bool,
}

/// A record that was not loaded, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reject {
    /// Where and why, as the error would have said.
    pub error: BlockError,
    /// Byte offset in the block where the record starts.
    pub record_offset: usize,
    /// The record's bytes, without its line ending.
    pub record: Vec<u8>,
    /// Its row in the builder: the row holds placeholder values and must
    /// be dropped (see `BatchBuilder::finish_without`).
    pub row: u32,
}

/// Which input field feeds which table column, for one file (from
/// `--columns` or `--match-by-name`). Without one, field i feeds column i
/// and a record has exactly as many fields as the table has columns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldMap {
    /// Per input field, by position: the table column it feeds, if any
    /// (fields past the end are skipped too).
    pub targets: Vec<Option<usize>>,
    /// Table columns no field feeds, with their DEFAULT text (`None`:
    /// NULL).
    pub fills: Vec<(usize, Option<Vec<u8>>)>,
    /// Fields a record must have: one past the last field that feeds a
    /// column.
    pub needed: usize,
}

/// How to continue after a malformed record.
enum Resume {
    /// The failing field ended at `.0` with terminator `.1`.
    Field(usize, Term),
    /// The tokenizer failed at `.0`: resume after the next newline.
    Line(usize),
    /// The record ended at `.0` (field count errors).
    Ended(usize),
}

/// [`BatchBuilder::push`], refusing a NUL byte: text never holds one. The
/// reader refuses a file with one near its start as binary; one further
/// on fails its value (or is rejected) wherever it is, never loaded. A
/// TEXT field is looked at once for both a NUL and a byte that is not
/// ASCII (then checked as UTF-8); a field of another type that fails
/// for a NUL says so when the table has TEXT columns (`nul_said`).
#[inline]
fn push_field(
    out: &mut BatchBuilder,
    col: usize,
    bytes: &[u8],
    quoted: bool,
    text: bool,
    nul_said: bool,
) -> Result<(), String> {
    let nul = |z: usize| format!("a NUL byte at byte {z} of the value (binary data, not text)");
    if text {
        if super::byte_scan::ascii_text(bytes, 0, bytes.len()) {
            return out.push_ascii(col, bytes, quoted);
        }
        if let Some(z) = memchr(0, bytes) {
            return Err(nul(z));
        }
        return out.push(col, bytes, quoted);
    }
    out.push(col, bytes, quoted)
        .map_err(|m| match memchr(0, bytes) {
            Some(z) if nul_said => nul(z),
            _ => m,
        })
}

/// Parses every record of `data` (which starts at a record boundary) into
/// `out`. Blank lines and comment lines are skipped. The first malformed
/// record is an error.
pub fn parse_block(
    data: &[u8],
    d: &Dialect,
    schema: &Schema,
    out: &mut BatchBuilder,
) -> Result<BlockInfo, BlockError> {
    parse_block_with(
        data,
        d,
        schema,
        out,
        RowPolicy::default(),
        None,
        &mut Vec::new(),
    )
}

/// [`parse_block`] with a policy for malformed records: with
/// `skip_bad`, each one is appended to `rejects` (its row completed with
/// NULLs in the builder, to be dropped) and parsing goes on.
pub fn parse_block_with(
    data: &[u8],
    d: &Dialect,
    schema: &Schema,
    out: &mut BatchBuilder,
    policy: RowPolicy,
    map: Option<&FieldMap>,
    rejects: &mut Vec<Reject>,
) -> Result<BlockInfo, BlockError> {
    if d.split == Split::Whitespace {
        parse_block_split::<true, true>(data, d, schema, out, policy, map, rejects)
    } else {
        parse_block_split::<false, true>(data, d, schema, out, policy, map, rejects)
    }
}

/// [`parse_block_with`] by the reference path alone: every field
/// scanned by the general tokenizer and converted by
/// [`BatchBuilder::push`], none by a fused fast path. What the fast paths
/// are tested against: for any input both give the same rows, or the
/// same error.
pub fn parse_block_reference(
    data: &[u8],
    d: &Dialect,
    schema: &Schema,
    out: &mut BatchBuilder,
    policy: RowPolicy,
    map: Option<&FieldMap>,
    rejects: &mut Vec<Reject>,
) -> Result<BlockInfo, BlockError> {
    if d.split == Split::Whitespace {
        parse_block_split::<true, false>(data, d, schema, out, policy, map, rejects)
    } else {
        parse_block_split::<false, false>(data, d, schema, out, policy, map, rejects)
    }
}

/// [`parse_block_with`] for one kind of split (`WS`: runs of whitespace);
/// `FAST`: with the fused scan-and-convert paths.
fn parse_block_split<const WS: bool, const FAST: bool>(
    data: &[u8],
    d: &Dialect,
    schema: &Schema,
    out: &mut BatchBuilder,
    policy: RowPolicy,
    map: Option<&FieldMap>,
    rejects: &mut Vec<Reject>,
) -> Result<BlockInfo, BlockError> {
    let classes = d.classes();
    let ncols = schema.len();
    let n = data.len();
    let mut scratch = Vec::new();
    let mut info = BlockInfo::default();
    let mut lines = LineCount::default();
    // The fast paths end a field at the delimiter byte: not for lines
    // read whole; `FAST = false` is the reference path (every field
    // through `scan_field` and `BatchBuilder::push`).
    // Nor when the delimiter or the quote is a byte a number or a date
    // is written with (`-d .`, `--quote -`): the general path ends the
    // field there.
    let number_byte = |b: u8| b.is_ascii_digit() || matches!(b, b'-' | b'.' | b'+');
    let clash = number_byte(d.delimiter) || d.quote.is_some_and(number_byte);
    let fast: Vec<FastPath> = (0..ncols)
        .map(|c| {
            if FAST && d.split != Split::Line && !clash {
                out.fast_path(c)
            } else {
                FastPath::None
            }
        })
        .collect();
    let exact: Vec<bool> = (0..ncols).map(|c| out.is_exact(c)).collect();
    // A NUL byte fails its value: checked per TEXT field in the pass that
    // finds bytes outside ASCII (every other type's parser refuses it).
    let text: Vec<bool> = schema
        .columns
        .iter()
        .map(|c| c.data_type == DataType::Text)
        .collect();
    let nul_said = text.contains(&true);
    let mut builder_rows: u32 = 0;
    // Runs of records read by the structural index where they can be
    // (not split at whitespace: the index knows one delimiter byte).
    let mut indexed = if WS {
        None
    } else {
        super::indexed::Indexed::new(data, d, schema, out, &fast, map, policy.max_record)
    };
    let blank_records = d.blank_lines.are_records(ncols == 1 && map.is_none());
    let whitespace = WS;
    let mut pos = 0;
    while pos < n {
        if whitespace {
            pos = skip_indent(data, pos);
            if pos == n {
                break;
            }
        }
        let c = data[pos];
        if c == b'\n' && !blank_records {
            pos += 1;
            info.newlines += 1;
            continue;
        }
        if c == b'\r' && data.get(pos + 1) == Some(&b'\n') && !blank_records {
            pos += 2;
            info.newlines += 1;
            continue;
        }
        if d.comment.is_some() && d.starts_comment(&data[pos..]) {
            match memchr(b'\n', &data[pos..]) {
                Some(i) => {
                    pos += i + 1;
                    info.newlines += 1;
                }
                None => pos = n,
            }
            continue;
        }
        let record_start = pos;
        if let Some(ix) = indexed.as_mut()
            && let Some((next, rows, newlines)) = ix.run(pos, out)
        {
            pos = next;
            info.newlines += newlines;
            info.rows += rows;
            builder_rows += rows as u32;
            continue;
        }
        let newlines_before = info.newlines;
        let mut col = 0;
        // Columns of this record pushed into the builder so far.
        let mut pushed = 0;
        let mut failure: Option<(BlockError, Resume)> = None;
        loop {
            let field_start = pos;
            // The table column this field feeds, if any.
            let target = match map {
                None => (col < ncols).then_some(col),
                Some(m) => m.targets.get(col).copied().flatten(),
            };
            if let Some(t) = target {
                let fast = match fast[t] {
                    FastPath::None => None,
                    FastPath::Integer => None,
                    FastPath::Decimal { scale, int_digits } => {
                        scan_decimal(data, pos, d.delimiter, scale, int_digits).map(
                            |(v, term, next)| {
                                out.push_decimal(t, v);
                                (term, next)
                            },
                        )
                    }
                    FastPath::Date => scan_date(data, pos, d.delimiter).map(|(v, term, next)| {
                        out.push_date(t, v);
                        (term, next)
                    }),
                };
                if let Some((term, next)) = fast {
                    let (term, next) = match term {
                        Term::Delim if whitespace => after_run(data, next),
                        _ => (term, next),
                    };
                    pushed += 1;
                    col += 1;
                    pos = next;
                    match term {
                        Term::Delim => continue,
                        Term::Newline => {
                            info.newlines += 1;
                            break;
                        }
                        Term::Eof => break,
                    }
                }
            }
            if let Some(t) = target
                && fast[t] == FastPath::Integer
                && !(exact[t] && zero_first(data, pos))
                && let Some((v, term, field_next)) = scan_integer(data, pos, d.delimiter)
            {
                let (term, next) = match term {
                    Term::Delim if whitespace => after_run(data, field_next),
                    _ => (term, field_next),
                };
                if let Err(msg) = out.push_integer(t, v) {
                    let ty = schema.columns[t].data_type;
                    // The field without what ended it (nor, split at
                    // whitespace, the rest of the run).
                    let bytes = &data[field_start..field_next.min(n)];
                    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
                    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
                    let bytes = bytes.strip_suffix(&[d.delimiter]).unwrap_or(bytes);
                    let mut e = block_error_at(
                        &mut lines,
                        data,
                        field_start,
                        Some(t),
                        value_message(policy, ty, bytes, &msg),
                    );
                    // What widening an inferred type needs; a reject
                    // is never widened.
                    if !policy.skip_bad {
                        e.value = Some(bytes.to_vec());
                    }
                    failure = Some((e, Resume::Field(next, term)));
                    break;
                }
                pushed += 1;
                col += 1;
                pos = next;
                match term {
                    Term::Delim => continue,
                    Term::Newline => {
                        info.newlines += 1;
                        break;
                    }
                    Term::Eof => break,
                }
            }
            let s = match scan_field::<WS>(data, pos, d, &classes, &mut scratch) {
                Ok(s) => s,
                Err((off, msg)) => {
                    let e = block_error_at(&mut lines, data, off, target, msg);
                    failure = Some((e, Resume::Line(off)));
                    break;
                }
            };
            info.newlines += s.newlines;
            if let Some(t) = target {
                let (bytes, quoted) = match s.field {
                    Field::Slice(a, b) => (&data[a..b], s.quoted),
                    Field::Scratch => (scratch.as_slice(), s.quoted),
                };
                if let Err(msg) = push_field(out, t, bytes, quoted, text[t], nul_said) {
                    let ty = schema.columns[t].data_type;
                    let mut e = block_error_at(
                        &mut lines,
                        data,
                        field_start,
                        Some(t),
                        value_message(policy, ty, bytes, &msg),
                    );
                    // What widening an inferred type needs; a reject
                    // is never widened.
                    if !policy.skip_bad {
                        e.value = Some(bytes.to_vec());
                    }
                    failure = Some((e, Resume::Field(s.next, s.term)));
                    break;
                }
                pushed += 1;
            }
            col += 1;
            pos = s.next;
            match s.term {
                Term::Delim => continue,
                Term::Newline => {
                    info.newlines += 1;
                    break;
                }
                Term::Eof => break,
            }
        }
        // A record with the wrong number of fields is reported as that,
        // before a bad value in it (its values are likely in the wrong
        // columns): the fields after the bad one are counted.
        if let Some((_, Resume::Field(next, term))) = &failure
            && let Some((fields, end)) =
                count_fields(data, *next, *term, col + 1, d, &classes, &mut scratch)
            && let Some(message) = field_count_error(fields, ncols, map, policy)
        {
            let e = block_error_at(&mut lines, data, record_start, None, message);
            failure = Some((e, Resume::Ended(end)));
        }
        if let (None, Some(m)) = (&failure, map) {
            // Mapped: extra fields are skipped; missing ones are an error
            // (or NULL); unfed columns get their DEFAULT.
            if let Some(message) = field_count_error(col, ncols, map, policy) {
                let e = block_error_at(&mut lines, data, record_start, None, message);
                failure = Some((e, Resume::Ended(pos)));
            } else {
                for t in m.targets.iter().take(m.needed).skip(col).flatten() {
                    out.push_null(*t);
                }
                for (c, fill) in &m.fills {
                    match fill {
                        Some(v) => out.push(*c, v, true).map_err(|msg| {
                            block_error_at(
                                &mut lines,
                                data,
                                record_start,
                                Some(*c),
                                format!("DEFAULT: {msg}"),
                            )
                        })?,
                        None => out.push_null(*c),
                    }
                }
            }
        } else if failure.is_none() && col != ncols {
            match field_count_error(col, ncols, map, policy) {
                None => {
                    for c in col..ncols {
                        out.push_null(c);
                    }
                }
                Some(message) => {
                    let e = block_error_at(&mut lines, data, record_start, None, message);
                    failure = Some((e, Resume::Ended(pos)));
                }
            }
        }
        let Some((mut error, resume)) = failure else {
            if let Some(max) = policy.max_record
                && pos.min(n) - record_start > max
            {
                let message = super::too_long_message(max);
                return Err(block_error_at(
                    &mut lines,
                    data,
                    record_start,
                    None,
                    message,
                ));
            }
            info.rows += 1;
            builder_rows += 1;
            continue;
        };
        if data[record_start] == COMMENT_LIKE && d.comment.is_none() {
            error.message.push_str(COMMENT_NOTE);
        }
        if !policy.skip_bad {
            return Err(error);
        }
        // Find the end of the record, complete its row with NULLs, and
        // remember it as rejected.
        pos = match resume {
            Resume::Ended(p) => p,
            Resume::Line(off) => next_line(data, off),
            Resume::Field(mut p, mut term) => loop {
                match term {
                    Term::Newline | Term::Eof => break p,
                    Term::Delim => match scan_field::<WS>(data, p, d, &classes, &mut scratch) {
                        Ok(s) => {
                            p = s.next;
                            term = s.term;
                        }
                        Err((off, _)) => break next_line(data, off),
                    },
                }
            },
        };
        // A field at the end of the data ends at n + 1 (no trailing field).
        let end = pos.min(n);
        info.newlines =
            newlines_before + memchr_iter(b'\n', &data[record_start..end]).count() as u64;
        match map {
            None => {
                for c in pushed..ncols {
                    out.push_null(c);
                }
            }
            Some(m) => {
                // The fields before the failing one fed their columns.
                let mut fed = vec![false; ncols];
                for t in m.targets.iter().take(col).flatten() {
                    fed[*t] = true;
                }
                for (c, _) in fed.iter().enumerate().filter(|(_, f)| !**f) {
                    out.push_null(c);
                }
            }
        }
        let mut record = &data[record_start..end];
        record = record.strip_suffix(b"\n").unwrap_or(record);
        record = record.strip_suffix(b"\r").unwrap_or(record);
        rejects.push(Reject {
            error,
            record_offset: record_start,
            record: if policy.counted_only {
                Vec::new()
            } else {
                record.to_vec()
            },
            row: builder_rows,
        });
        builder_rows += 1;
    }
    Ok(info)
}

/// The message of a value that does not fit its column (none when the
/// reject is only counted).
fn value_message(policy: RowPolicy, ty: DataType, bytes: &[u8], msg: &str) -> String {
    if policy.skip_bad && policy.counted_only {
        String::new()
    } else {
        format!("invalid {ty} value {}: {msg}", snippet(bytes))
    }
}

/// What starts the comment lines of many tools (R, gnuplot, shell).
const COMMENT_LIKE: u8 = b'#';

/// Said after the error of a record that starts like a comment line,
/// when no comment character is set: `--comment '#'` may be the fix.
pub const COMMENT_NOTE: &str = " (the line starts with '#')";

/// Why a record of `fields` fields cannot be loaded, if it cannot: not as
/// many as the table has columns (fewer are NULL-filled with
/// `fill_missing`), or, mapped, fewer than the mapping reads.
fn field_count_error(
    fields: usize,
    ncols: usize,
    map: Option<&FieldMap>,
    policy: RowPolicy,
) -> Option<String> {
    let s = if fields == 1 { "" } else { "s" };
    match map {
        Some(m) if fields < m.needed && !policy.fill_missing => Some(format!(
            "found a record with {fields} field{s}, the column mapping needs {}",
            m.needed
        )),
        Some(_) => None,
        None if fields > ncols || (fields < ncols && !policy.fill_missing) => Some(format!(
            "found a record with {fields} field{s}, expected {ncols}"
        )),
        None => None,
    }
}

/// Counts the fields of a record on from a field that ended at `next`
/// with `term`, `seen` fields so far: the record's field count and where
/// it ends, or `None` when the rest cannot be tokenized.
fn count_fields(
    data: &[u8],
    mut next: usize,
    mut term: Term,
    mut seen: usize,
    d: &Dialect,
    classes: &Classes,
    scratch: &mut Vec<u8>,
) -> Option<(usize, usize)> {
    loop {
        match term {
            Term::Newline | Term::Eof => return Some((seen, next)),
            Term::Delim => {
                let s = scan_field_any(data, next, d, classes, scratch).ok()?;
                seen += 1;
                next = s.next;
                term = s.term;
            }
        }
    }
}

/// The offset just past the next newline at or after `off` (or the end).
fn next_line(data: &[u8], off: usize) -> usize {
    let off = off.min(data.len());
    memchr(b'\n', &data[off..]).map_or(data.len(), |i| off + i + 1)
}

/// Reads the first record of `data` as raw fields (for a header line).
///
/// Returns the fields, the bytes consumed (through the record's newline) and
/// the newlines consumed; `None` when `data` holds no complete record and
/// `at_eof` is false.
pub fn read_record(
    data: &[u8],
    d: &Dialect,
    at_eof: bool,
) -> Result<Option<(Vec<Vec<u8>>, usize, u64)>, BlockError> {
    read_record_into(data, d, at_eof, None)
}

/// [`read_record`], and whether each field was quoted in the data (its
/// first byte, after the spaces `trim_around_quotes` skips, the quote):
/// what tells a header of quoted names from rows of bare numbers.
#[allow(clippy::type_complexity)]
pub fn read_record_quoting(
    data: &[u8],
    d: &Dialect,
    at_eof: bool,
) -> Result<Option<(Vec<Vec<u8>>, Vec<bool>, usize, u64)>, BlockError> {
    let mut quoted = Vec::new();
    Ok(read_record_into(data, d, at_eof, Some(&mut quoted))?
        .map(|(fields, used, newlines)| (fields, quoted, used, newlines)))
}

fn read_record_into(
    data: &[u8],
    d: &Dialect,
    at_eof: bool,
    mut quoted: Option<&mut Vec<bool>>,
) -> Result<Option<(Vec<Vec<u8>>, usize, u64)>, BlockError> {
    let classes = d.classes();
    let mut scratch = Vec::new();
    let mut fields = Vec::new();
    let mut pos = 0;
    let mut newlines = 0;
    if d.split == Split::Whitespace {
        // Indents, and lines of only spaces (blank), come before it.
        loop {
            pos = skip_indent(data, pos);
            match &data[pos..] {
                [b'\n', ..] => pos += 1,
                [b'\r', b'\n', ..] => pos += 2,
                [] | [b'\r'] if !at_eof => return Ok(None),
                _ => break,
            }
            newlines += 1;
        }
    }
    loop {
        if let Some(q) = quoted.as_deref_mut() {
            let at = if d.trim_around_quotes {
                pos + data[pos..].iter().take_while(|&&c| c == b' ').count()
            } else {
                pos
            };
            q.push(d.quote.is_some() && data.get(at).copied() == d.quote);
        }
        let s = match scan_field_any(data, pos, d, &classes, &mut scratch) {
            Ok(s) => s,
            Err(_) if !at_eof => return Ok(None),
            Err((off, msg)) => return Err(block_error(data, off, None, msg)),
        };
        newlines += s.newlines;
        fields.push(match s.field {
            Field::Slice(a, b) => data[a..b].to_vec(),
            Field::Scratch => scratch.clone(),
        });
        pos = s.next;
        match s.term {
            Term::Delim => continue,
            Term::Newline => return Ok(Some((fields, pos, newlines + 1))),
            Term::Eof if at_eof => return Ok(Some((fields, data.len(), newlines))),
            Term::Eof => return Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::batch::{ValueOptions, format_value};
    use crate::parse::BlankLines;

    fn parse(
        data: &str,
        schema: &str,
        d: &Dialect,
    ) -> Result<Vec<Vec<Option<String>>>, BlockError> {
        let schema: Schema = schema.parse().unwrap();
        let mut b = BatchBuilder::new(&schema, Arc::new(ValueOptions::default()), 16);
        parse_block(data.as_bytes(), d, &schema, &mut b)?;
        let (batch, _) = b.finish().unwrap();
        Ok((0..batch.num_rows())
            .map(|r| {
                batch
                    .columns()
                    .iter()
                    .map(|c| format_value(c.as_ref(), r))
                    .collect()
            })
            .collect())
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn rfc4180_quotes_crlf_and_last_line() {
        let d = Dialect::default();
        let rows = parse(
            "1,\"a,b\"\r\n2,\"say \"\"hi\"\"\"\n3,\"multi\nline\"\n4,plain",
            "id INT, t TEXT",
            &d,
        )
        .unwrap();
        assert_eq!(
            rows,
            vec![
                vec![s("1"), s("a,b")],
                vec![s("2"), s("say \"hi\"")],
                vec![s("3"), s("multi\nline")],
                vec![s("4"), s("plain")],
            ]
        );
    }

    #[test]
    fn runs_of_whitespace_split_fields() {
        let d = Dialect {
            delimiter: b' ',
            split: Split::Whitespace,
            ..Dialect::default()
        };
        let rows = parse(
            "  1   a  \n\t2\t \"b c\"\t\r\n   \n3 d\n 4   e",
            "id INT, t TEXT",
            &d,
        )
        .unwrap();
        assert_eq!(
            rows,
            vec![
                vec![s("1"), s("a")],
                vec![s("2"), s("b c")],
                vec![s("3"), s("d")],
                vec![s("4"), s("e")],
            ]
        );
        // A third field is a third field, however it is spaced.
        let e = parse("1  a  x\n", "id INT, t TEXT", &d).unwrap_err();
        assert_eq!(e.message, "found a record with 3 fields, expected 2");
        // A header line: indent and lines of only spaces before it.
        let (fields, used, lines) = read_record(b"  \n   x   y  \n1 2\n", &d, false)
            .unwrap()
            .unwrap();
        assert_eq!(fields, vec![b"x".to_vec(), b"y".to_vec()]);
        assert_eq!((used, lines), (14, 2));
        assert_eq!(read_record(b"   ", &d, false).unwrap(), None);
    }

    #[test]
    fn lines_are_one_field_each() {
        let d = Dialect {
            quote: None,
            split: Split::Line,
            ..Dialect::default()
        };
        d.validate().unwrap();
        let rows = parse("a, b | c\t\"d\r\n  e  \n", "line TEXT", &d).unwrap();
        assert_eq!(rows, vec![vec![s("a, b | c\t\"d")], vec![s("  e  ")]]);
        assert!(
            Dialect {
                quote: Some(b'"'),
                ..d
            }
            .validate()
            .is_err()
        );
    }

    #[test]
    fn null_marker_and_quoted_empty() {
        let d = Dialect::default();
        let rows = parse("1,\n,\"\"\n", "id INT, t TEXT", &d).unwrap();
        assert_eq!(rows, vec![vec![s("1"), None], vec![None, s("")]]);
    }

    #[test]
    fn carriage_return_inside_field_is_kept() {
        let d = Dialect::default();
        let rows = parse(
            "a\r\r\nb\r,c\n",
            "x TEXT, y TEXT",
            &Dialect {
                delimiter: b'\t',
                ..d.clone()
            },
        );
        assert!(rows.is_err(), "one field per line with a tab delimiter");
        let rows = parse("a\r,b\r\r\n", "x TEXT, y TEXT", &d).unwrap();
        assert_eq!(rows, vec![vec![s("a\r"), s("b\r")]]);
    }

    #[test]
    fn escapes_comments_and_blank_lines() {
        let d = Dialect {
            escape: Some(b'\\'),
            comment: Some(b'#'),
            ..Dialect::default()
        };
        let rows = parse(
            "# a comment, with \"quote\n\n1,\"a\\\"b\"\n",
            "id INT, t TEXT",
            &d,
        )
        .unwrap();
        assert_eq!(rows, vec![vec![s("1"), s("a\"b")]]);
    }

    #[test]
    fn spaces_around_quoted_fields_are_trimmed_when_asked() {
        let d = Dialect {
            trim_around_quotes: true,
            ..Dialect::default()
        };
        let rows = parse(
            "\"a\", \"b, c\"  ,  d \n  \"e\"\"\" ,\"f\nf\", \r\n",
            "x TEXT, y TEXT, z TEXT",
            &d,
        )
        .unwrap();
        assert_eq!(
            rows,
            vec![
                vec![s("a"), s("b, c"), s("  d ")],
                vec![s("e\""), s("f\nf"), s(" ")],
            ]
        );
        // A quote after other text, or text after a closing quote, is
        // still an error.
        let e = parse("1, x\"y\"\n", "a INT, b TEXT", &d).unwrap_err();
        assert!(
            e.message
                .starts_with("unexpected quote inside an unquoted field")
        );
        let e = parse("1, \"y\" z\n", "a INT, b TEXT", &d).unwrap_err();
        assert!(
            e.message
                .starts_with("unexpected 'z' after a closing quote")
        );
        // Without it, a quote after a space is an error.
        let e = parse("1, \"y\"\n", "a INT, b TEXT", &Dialect::default()).unwrap_err();
        assert!(
            e.message
                .starts_with("unexpected quote inside an unquoted field")
        );
    }

    #[test]
    fn blank_lines_are_null_in_one_column() {
        let d = Dialect::default();
        let rows = parse("a\n\nb\r\n\r\n\nc", "t TEXT", &d).unwrap();
        assert_eq!(
            rows,
            vec![
                vec![s("a")],
                vec![None],
                vec![s("b")],
                vec![None],
                vec![None],
                vec![s("c")]
            ]
        );
        let rows = parse("1\n\n2\n", "n INT", &d).unwrap();
        assert_eq!(rows, vec![vec![s("1")], vec![None], vec![s("2")]]);
        let skip = Dialect {
            blank_lines: BlankLines::Skip,
            ..Dialect::default()
        };
        let rows = parse("a\n\nb\n", "t TEXT", &skip).unwrap();
        assert_eq!(rows, vec![vec![s("a")], vec![s("b")]]);
        // Wider records: skipped, unless asked, then too few fields.
        let rows = parse("1,a\n\n2,b\n", "n INT, t TEXT", &d).unwrap();
        assert_eq!(rows.len(), 2);
        let null = Dialect {
            blank_lines: BlankLines::Null,
            ..Dialect::default()
        };
        let e = parse("1,a\n\n2,b\n", "n INT, t TEXT", &null).unwrap_err();
        assert_eq!(e.message, "found a record with 1 field, expected 2");
        assert_eq!(e.line_in_block, 1);
    }

    #[test]
    fn errors_say_where_and_why() {
        let d = Dialect::default();
        let e = parse("1,2\n3\n", "a INT, b INT", &d).unwrap_err();
        assert_eq!((e.offset, e.line_in_block, e.column), (4, 1, None));
        assert_eq!(e.message, "found a record with 1 field, expected 2");
        let e = parse("1,2\n3,x\n", "a INT, b INT", &d).unwrap_err();
        assert_eq!((e.offset, e.line_in_block, e.column), (6, 1, Some(1)));
        assert_eq!(e.message, "invalid INT value \"x\": not an integer");
        let e = parse("1,\"abc\n", "a INT, b TEXT", &d).unwrap_err();
        assert_eq!(
            e.message,
            "unterminated quoted field (no closing quote before the end of the input)"
        );
        let e = parse("1,ab\"c\n", "a INT, b TEXT", &d).unwrap_err();
        assert!(
            e.message
                .starts_with("unexpected quote inside an unquoted field")
        );
        let e = parse("1,\"ab\"c\n", "a INT, b TEXT", &d).unwrap_err();
        assert!(
            e.message
                .starts_with("unexpected 'c' after a closing quote")
        );
        let e = parse("1,2,3\n", "a INT, b INT", &d).unwrap_err();
        assert_eq!(e.message, "found a record with 3 fields, expected 2");
    }

    #[test]
    fn wrong_field_count_is_reported_before_a_type_error() {
        let d = Dialect::default();
        let e = parse("1,2\nx,3,4\n", "a INT, b INT", &d).unwrap_err();
        assert_eq!((e.offset, e.line_in_block, e.column), (4, 1, None));
        assert_eq!(e.message, "found a record with 3 fields, expected 2");
        // The integer fast path, and a record that ends the data.
        let e = parse("1,2\n3,99999999999", "a INT, b INT, c INT", &d).unwrap_err();
        assert_eq!(e.message, "found a record with 2 fields, expected 3");
        // The right count: the value error it is.
        let e = parse("1,2\nx,3\n", "a INT, b INT", &d).unwrap_err();
        assert_eq!(e.message, "invalid INT value \"x\": not an integer");
    }

    #[test]
    fn a_failing_line_that_starts_with_a_hash_says_so() {
        let d = Dialect::default();
        let e = parse("1,2\n# note\n", "a INT, b INT", &d).unwrap_err();
        assert_eq!(
            e.message,
            "found a record with 1 field, expected 2 (the line starts with '#')"
        );
        let c = Dialect {
            comment: Some(b';'),
            ..Dialect::default()
        };
        let e = parse("1,2\n#x,3\n", "a INT, b INT", &c).unwrap_err();
        assert_eq!(e.message, "invalid INT value \"#x\": not an integer");
    }

    #[test]
    fn invalid_utf8_in_text_is_an_error() {
        let schema: Schema = "t TEXT".parse().unwrap();
        let mut b = BatchBuilder::new(&schema, Arc::new(ValueOptions::default()), 4);
        let e = parse_block(b"ok\nbad\xff\n", &Dialect::default(), &schema, &mut b).unwrap_err();
        assert_eq!(e.line_in_block, 1);
        assert_eq!(
            e.message,
            "invalid TEXT value \"bad\u{fffd}\": invalid UTF-8 at byte 3 of the value (another encoding? see --encoding)"
        );
    }

    #[test]
    fn integer_fast_path_agrees_with_the_general_parser() {
        let mut rng = 0x1234_5678_9abc_def0u64;
        let alphabet = b"0123456789-+ ,\r\nx\xfa";
        for _ in 0..20_000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let len = (rng % 24) as usize;
            let mut s: Vec<u8> = (0..len)
                .map(|i| alphabet[((rng >> (i * 2)) % alphabet.len() as u64) as usize])
                .collect();
            if rng.is_multiple_of(3) {
                s = (rng % 10_000_000_000_000_000_000).to_string().into_bytes();
            }
            s.extend_from_slice(b",1\n");
            if let Some((v, term, next)) = scan_integer(&s, 0, b',') {
                let end = s.iter().position(|&c| c == b',' || c == b'\n').unwrap();
                let field = s[..end].strip_suffix(b"\r").unwrap_or(&s[..end]);
                let shown = String::from_utf8_lossy(&s);
                assert_eq!(crate::parse::value::parse_i64(field), Ok(v), "{shown:?}");
                assert_eq!(
                    term,
                    if s[end] == b',' {
                        Term::Delim
                    } else {
                        Term::Newline
                    },
                    "{shown:?}"
                );
                assert_eq!(next, end + 1, "{shown:?}");
            }
        }
        assert_eq!(
            scan_integer(b"123456789012345678,", 0, b','),
            Some((123456789012345678, Term::Delim, 19))
        );
        assert_eq!(scan_integer(b"1234567890123456789,", 0, b','), None);
        assert_eq!(
            scan_integer(b"-00000000000000001\r\n", 0, b','),
            Some((-1, Term::Newline, 20))
        );
        assert_eq!(
            scan_integer(b"12345678", 0, b','),
            Some((12345678, Term::Eof, 9))
        );
        assert_eq!(scan_integer(b"1 ,", 0, b','), None);
    }

    #[test]
    fn read_record_needs_a_whole_line() {
        let d = Dialect::default();
        assert_eq!(read_record(b"a,\"b", &d, false).unwrap(), None);
        assert_eq!(read_record(b"a,b", &d, false).unwrap(), None);
        let (f, used, nl) = read_record(b"a,\"b\nc\"\r\n1,2\n", &d, false)
            .unwrap()
            .unwrap();
        assert_eq!(f, vec![b"a".to_vec(), b"b\nc".to_vec()]);
        assert_eq!((used, nl), (9, 2));
    }
}

/// The fused fast paths (integers, decimals, dates) against the reference
/// path on records made of the values that come near their edges: every
/// block gives the same rows, rejects and counts, or the same error.
#[cfg(test)]
mod fast_path_tests {
    use std::sync::Arc;

    use proptest::prelude::*;

    use super::*;
    use crate::batch::ValueOptions;
    use crate::parse::BlankLines;

    fn field() -> impl Strategy<Value = String> {
        let pieces = prop_oneof![
            3 => prop::collection::vec(prop::sample::select(b"0123456789".to_vec()), 0..22)
                .prop_map(|d| String::from_utf8(d).unwrap()),
            1 => Just("-".to_string()),
            1 => Just("+".to_string()),
            2 => Just(".".to_string()),
            1 => Just(" ".to_string()),
            1 => Just("e".to_string()),
            2 => Just("-".to_string()),
            1 => Just("\"".to_string()),
            1 => Just("x".to_string()),
            1 => Just("\r".to_string()),
        ];
        let date = (0u32..10_001, 0u32..14, 0u32..33, any::<bool>()).prop_map(|(y, m, d, pad)| {
            if pad {
                format!("{y:04}-{m:02}-{d:02}")
            } else {
                format!("{y}-{m}-{d}")
            }
        });
        let decimal = (any::<bool>(), 0u64..10_000_000_000, 0u32..5, 0usize..6).prop_map(
            |(neg, v, frac, zeros)| {
                let s = v.to_string();
                let cut = (frac as usize).min(s.len());
                let (a, b) = s.split_at(s.len() - cut);
                format!(
                    "{}{}{a}{}{b}",
                    if neg { "-" } else { "" },
                    "0".repeat(zeros % 3),
                    if cut > 0 { "." } else { "" }
                )
            },
        );
        prop_oneof![
            4 => prop::collection::vec(pieces, 0..4).prop_map(|p| p.concat()),
            3 => date,
            3 => decimal,
            1 => Just(String::new()),
            1 => Just("NA".to_string()),
        ]
    }

    fn block() -> impl Strategy<Value = (String, u8, bool)> {
        (
            prop::collection::vec(prop::collection::vec(field(), 1..7), 0..8),
            prop::sample::select(vec![b',', b'|', b'\t', b' ', b',', b'-', b'.', b'5']),
            any::<bool>(),
        )
            .prop_map(|(records, delim, crlf)| {
                let sep = (delim as char).to_string();
                let end = if crlf { "\r\n" } else { "\n" };
                let text = records
                    .iter()
                    .map(|r| r.join(&sep))
                    .collect::<Vec<_>>()
                    .join(end);
                (text, delim, crlf)
            })
    }

    type Outcome = Result<(arrow_array::RecordBatch, BlockInfo, Vec<(u32, String)>), BlockError>;

    fn run(
        reference: bool,
        data: &[u8],
        d: &Dialect,
        schema: &Schema,
        values: &Arc<ValueOptions>,
        policy: RowPolicy,
    ) -> Outcome {
        let mut b = BatchBuilder::new(schema, values.clone(), 4);
        let mut rejects = Vec::new();
        let f = if reference {
            parse_block_reference
        } else {
            parse_block_with
        };
        let info = f(data, d, schema, &mut b, policy, None, &mut rejects)?;
        let (batch, _) = b.finish().unwrap();
        let rejects = rejects
            .into_iter()
            .map(|r| (r.row, r.error.message))
            .collect();
        Ok((batch, info, rejects))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3_000, ..ProptestConfig::default() })]

        #[test]
        fn fast_paths_answer_as_the_reference(
            (text, delim, _crlf) in block(),
            scale in 0u8..5,
            int_digits in 0u8..8,
            null_na in any::<bool>(),
            exact in any::<bool>(),
            skip_bad in any::<bool>(),
            whitespace in any::<bool>(),
            trailing in any::<bool>(),
            quote in prop::sample::select(vec![Some(b'"'), Some(b'"'), Some(b'-'), Some(b'.'), None]),
        ) {
            let mut text = text;
            if trailing {
                text.push('\n');
            }
            let schema: Schema = format!(
                "i INT, d DECIMAL({}, {scale}), t DATE, b BIGINT, d2 DECIMAL(18, 2), x TEXT",
                (int_digits + scale).max(1)
            )
            .parse()
            .unwrap();
            let values = Arc::new(ValueOptions {
                null: if null_na { b"NA".to_vec() } else { Vec::new() },
                exact: if exact { vec!["d".into(), "i".into()] } else { Vec::new() },
                ..ValueOptions::default()
            });
            let d = Dialect {
                delimiter: delim,
                quote: quote.filter(|&q| q != delim),
                split: if whitespace && delim == b' ' { Split::Whitespace } else { Split::Delimiter },
                ..Dialect::default()
            };
            let policy = RowPolicy { skip_bad, fill_missing: skip_bad, ..RowPolicy::default() };
            let fast = run(false, text.as_bytes(), &d, &schema, &values, policy);
            let reference = run(true, text.as_bytes(), &d, &schema, &values, policy);
            prop_assert_eq!(fast, reference, "{:?}", text);
        }
    }

    /// A field for a column of kind `k` (0 INT, 1 BIGINT, 2 DECIMAL,
    /// 3 DATE, 4 TEXT): mostly what the index path takes, sometimes what
    /// it must leave to the per-field loop.
    fn typed_field(k: usize) -> BoxedStrategy<String> {
        let junk = prop_oneof![
            Just(String::new()),
            Just("NA".to_string()),
            Just("-".to_string()),
            Just("+1".to_string()),
            Just(" 1".to_string()),
            Just("\"7\"".to_string()),
            Just("x\"y".to_string()),
            Just("\u{e9}".to_string()),
            Just("a\0b".to_string()),
            Just("1\r2".to_string()),
        ];
        let value = match k {
            0 => prop_oneof![
                12 => any::<i32>().prop_map(|v| v.to_string()),
                1 => (0i64..1 << 40).prop_map(|v| v.to_string()),
                1 => (0u32..1000, 1usize..4).prop_map(|(v, z)| format!("{}{v}", "0".repeat(z))),
                1 => Just("-0".to_string()),
            ]
            .boxed(),
            1 => prop_oneof![
                12 => any::<i64>().prop_map(|v| (v / 10).to_string()),
                1 => any::<i64>().prop_map(|v| v.to_string()),
                2 => (0u32..100).prop_map(|v| v.to_string()),
                1 => (0usize..22).prop_map(|n| "9".repeat(n)),
                1 => (0u32..1000, 1usize..4).prop_map(|(v, z)| format!("-{}{v}", "0".repeat(z))),
            ]
            .boxed(),
            2 => (
                any::<bool>(),
                prop_oneof![6 => 0u64..1_000_000_000, 1 => 0u64..10_000_000_000],
                prop_oneof![6 => 0usize..4, 1 => 4usize..6],
                0usize..3,
            )
                .prop_map(|(neg, v, frac, zeros)| {
                    let s = v.to_string();
                    let cut = frac.min(s.len());
                    let (a, b) = s.split_at(s.len() - cut);
                    let dot = if cut > 0 || zeros == 2 { "." } else { "" };
                    format!(
                        "{}{}{a}{dot}{b}",
                        if neg { "-" } else { "" },
                        "0".repeat(zeros)
                    )
                })
                .boxed(),
            3 => prop_oneof![
                6 => (0u32..10_000, 1u32..13, 1u32..29),
                1 => (0u32..10_001, 0u32..14, 0u32..33),
            ]
            .prop_map(|(y, m, d)| format!("{y:04}-{m:02}-{d:02}"))
            .boxed(),
            // TIMESTAMP (5) and TIMESTAMPTZ (6): the common form, with
            // and without a `Z`, and the forms next to it.
            5 | 6 => (
                prop_oneof![
                    6 => (0u32..10_000, 1u32..13, 1u32..29),
                    1 => (0u32..10_001, 0u32..14, 0u32..33),
                ],
                prop_oneof![
                    8 => (0u32..24, 0u32..60, 0u32..60),
                    1 => (0u32..26, 0u32..61, 0u32..62),
                ],
                prop::sample::select(vec!["T", "T", " ", "t", "_"]),
                prop::sample::select(vec![
                    "", "", "Z", "Z", "z", "+01:00", "-0530", ".5", ".123456Z",
                ]),
            )
                .prop_map(|((y, m, d), (h, mi, s), sep, tail)| {
                    format!("{y:04}-{m:02}-{d:02}{sep}{h:02}:{mi:02}:{s:02}{tail}")
                })
                .boxed(),
            _ => prop_oneof![
                12 => "[a-z ]{0,20}",
                6 => "[a-z,;|\t]{0,12}".prop_map(|t| format!("\"{t}\"")),
                3 => "[a-z]{0,3}\n[a-z]{0,3}".prop_map(|t| format!("\"{t}\"")),
                1 => "[a-z]{0,3}".prop_map(|t| format!("\"{t}\"\"{t}\"")),
                1 => "[a-z]{0,3}".prop_map(|t| format!("\"{t}\\\"{t}\"")),
                1 => "[a-z]{0,3}".prop_map(|t| format!("\"{t}\\\\\"")),
                1 => "[a-z]{0,3}".prop_map(|t| format!("\"{t}\"x")),
                1 => "[a-z]{0,3}".prop_map(|t| format!("\"{t}\"\r")),
                1 => "[a-z]{0,40}",
            ]
            .boxed(),
        };
        prop_oneof![40 => value, 1 => junk].boxed()
    }

    /// Blocks of records of the schema's column kinds: mostly the right
    /// number of fields, sometimes one more or less, blank lines and
    /// comment lines among them, LF or CR LF, the last line ended or not.
    fn typed_block() -> impl Strategy<Value = (Vec<usize>, String)> {
        prop::collection::vec(0usize..7, 1..6).prop_flat_map(|kinds| {
            let fields: Vec<BoxedStrategy<String>> =
                kinds.iter().map(|&k| typed_field(k)).collect();
            let record = prop_oneof![
                60 => fields.prop_map(|f| f.join(",")),
                1 => Just(String::new()),
                1 => Just("# note, 1".to_string()),
                1 => Just("1,2,3,4,5,6,7".to_string()),
                1 => Just("9".to_string()),
            ];
            (
                Just(kinds),
                prop::collection::vec((record, any::<bool>()), 0..60),
                any::<bool>(),
            )
                .prop_map(|(kinds, records, ended)| {
                    let mut text = String::new();
                    for (i, (r, crlf)) in records.iter().enumerate() {
                        text.push_str(r);
                        if ended || i + 1 < records.len() {
                            text.push_str(if *crlf { "\r\n" } else { "\n" });
                        }
                    }
                    (kinds, text)
                })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3_000, ..ProptestConfig::default() })]

        /// Records the structural index reads run by run (and records it
        /// leaves to the per-field loop among them) give the same rows,
        /// line counts, rejects and errors as the reference path, under
        /// every option that changes what a record means.
        #[test]
        fn indexed_runs_answer_as_the_reference(
            (kinds, text) in typed_block(),
            null_na in any::<bool>(),
            exact in any::<bool>(),
            skip_bad in any::<bool>(),
            comment in any::<bool>(),
            blank in prop::sample::select(vec![BlankLines::Auto, BlankLines::Skip, BlankLines::Null]),
            max_record in prop::sample::select(vec![None, None, None, None, Some(20), Some(200)]),
            escape in prop::sample::select(vec![None, None, Some(b'\\'), Some(b'"')]),
            sse2 in any::<bool>(),
        ) {
            // Half the cases by the code for CPUs without AVX2.
            super::super::structural::NO_AVX2.with(|n| n.set(sse2));
            let names = [
                "i INT",
                "b BIGINT",
                "d DECIMAL(12, 3)",
                "t DATE",
                "x TEXT",
                "s TIMESTAMP",
                "z TIMESTAMPTZ",
            ];
            let schema: Schema = kinds
                .iter()
                .enumerate()
                .map(|(c, &k)| names[k].replacen(' ', &format!("{c} "), 1))
                .collect::<Vec<_>>()
                .join(", ")
                .parse()
                .unwrap();
            // Exact numbers: INT and BIGINT only (an exact DECIMAL has no
            // fast path, so no index path); an exact TIMESTAMPTZ refuses
            // a time without an offset.
            let all: Vec<String> = schema
                .columns
                .iter()
                .filter(|c| {
                    matches!(
                        c.data_type,
                        DataType::Int | DataType::BigInt | DataType::TimestampTz
                    )
                })
                .map(|c| c.name.clone())
                .collect();
            let values = Arc::new(ValueOptions {
                null: if null_na { b"NA".to_vec() } else { Vec::new() },
                exact: if exact { all } else { Vec::new() },
                ..ValueOptions::default()
            });
            let d = Dialect {
                comment: comment.then_some(b'#'),
                blank_lines: blank,
                escape,
                ..Dialect::default()
            };
            let policy = RowPolicy {
                skip_bad,
                fill_missing: skip_bad,
                max_record,
                ..RowPolicy::default()
            };
            let fast = run(false, text.as_bytes(), &d, &schema, &values, policy);
            let reference = run(true, text.as_bytes(), &d, &schema, &values, policy);
            prop_assert_eq!(fast, reference, "{:?}", text);
        }
    }

    /// What follows a quoted field decides where the record ends, after
    /// plain records (the index path running) and at a block's start:
    /// the per-field loop's answer, error or rows, each time.
    #[test]
    fn quoted_fields_end_where_the_loop_ends_them() {
        let values = Arc::new(ValueOptions::default());
        let cases: [(&str, &str); 9] = [
            // A short record, then a line that would complete it.
            ("a TEXT, b INT", "\"ab\"\n9\n"),
            ("a TEXT, b INT", "\"ab\"\r\n9\n"),
            ("a INT, b TEXT", "1,\"ab\"x\n"),
            ("a INT, b TEXT", "1,\"ab\"x,\n"),
            ("a INT, b TEXT", "1,\"ab\"\r\r\n"),
            ("a TEXT, b INT", "\"a\"\"b\",1\n"),
            ("a TEXT, b INT", "\"a,\nb\",1\n"),
            ("a TEXT, b INT", "\"ab\""),
            ("a TEXT, b INT", "\"ab\",1"),
        ];
        for (schema, tail) in cases {
            let schema: Schema = schema.parse().unwrap();
            let plain = if schema.columns[0].data_type == DataType::Text {
                "\"p\",5\n"
            } else {
                "5,\"p\"\n"
            };
            for lead in [0, 200] {
                let text = format!("{}{tail}{}", plain.repeat(lead), plain.repeat(3));
                for skip_bad in [false, true] {
                    let policy = RowPolicy {
                        skip_bad,
                        ..RowPolicy::default()
                    };
                    let d = Dialect::default();
                    let fast = run(false, text.as_bytes(), &d, &schema, &values, policy);
                    let reference = run(true, text.as_bytes(), &d, &schema, &values, policy);
                    assert_eq!(fast, reference, "{text:?}");
                }
            }
        }
    }

    /// Parses `text` by the reference path and by the index path (the
    /// AVX2 and the SSE2 code): the same outcome, with `taken` records
    /// read by the index path each time. Returns the reference's.
    fn by_the_index_path(
        text: &str,
        d: &Dialect,
        schema: &Schema,
        values: &Arc<ValueOptions>,
        taken: u64,
    ) -> Outcome {
        let policy = RowPolicy::default();
        let reference = run(true, text.as_bytes(), d, schema, values, policy);
        for sse2 in [false, true] {
            super::super::structural::NO_AVX2.with(|n| n.set(sse2));
            super::super::indexed::ROWS.with(|r| r.set(0));
            let fast = run(false, text.as_bytes(), d, schema, values, policy);
            let rows = super::super::indexed::ROWS.with(|r| r.get());
            super::super::structural::NO_AVX2.with(|n| n.set(false));
            assert_eq!(rows, taken, "every plain record by the index path");
            assert_eq!(fast, reference);
        }
        reference
    }

    /// Plain records go through the index path (what the property test
    /// above holds to the reference is not only the per-field loop), a
    /// record it cannot take among them goes through the loop, and the
    /// runs go on after it.
    #[test]
    fn plain_records_take_the_index_path() {
        let schema: Schema = "a INT, b DECIMAL(15, 2), c DATE, d TEXT, e BIGINT"
            .parse()
            .unwrap();
        let values = Arc::new(ValueOptions::default());
        let d = Dialect::default();
        let mut text = String::new();
        for i in 0..5_000 {
            if i == 1_000 {
                // NULLs: an empty INT, DECIMAL and DATE (the index path
                // takes them).
                text.push_str(",,,\"y\",8\n");
            }
            if i == 2_500 {
                // Not for the index path: a quoted INT.
                text.push_str("\"7\",1.5,2024-02-29,\"x\",7\n");
            }
            text.push_str(&format!(
                "{i},{}.{:02},1996-03-{:02},\"note {i}, quoted\",{}\n",
                i * 7,
                i % 100,
                1 + i % 31,
                -(i as i64) * 1_000_000_007
            ));
        }
        let reference = by_the_index_path(&text, &d, &schema, &values, 5_001);
        let (batch, info, _) = reference.unwrap();
        assert_eq!(batch.num_rows(), 5_002);
        assert_eq!(info.newlines, 5_002);
        let v = |c: usize, r: usize| crate::batch::format_value(batch.column(c).as_ref(), r);
        assert_eq!(v(0, 1_000), None);
        assert_eq!(v(1, 1_000), None);
        assert_eq!(v(2, 1_000), None);
        assert_eq!(v(3, 1_000), Some("y".into()));
        assert_eq!(v(0, 1_001), Some("1000".into()));
        assert_eq!(v(0, 2_501), Some("7".into()));
        assert_eq!(v(1, 2_502), Some("17500.00".into()));
        assert_eq!(v(3, 5_001), Some("note 4999, quoted".into()));
    }

    /// Timestamps as most files write them (`Z` for a TIMESTAMPTZ, none
    /// for a TIMESTAMP; `NA` for NULL, as the flights write it) take the
    /// index path; a fraction or an offset goes to the per-field loop,
    /// which reads it. The values are the reference's.
    #[test]
    fn timestamps_in_their_common_form_take_the_index_path() {
        let schema: Schema = "a INT, t TIMESTAMPTZ, u TIMESTAMP".parse().unwrap();
        let values = Arc::new(ValueOptions {
            null: b"NA".to_vec(),
            ..ValueOptions::default()
        });
        let d = Dialect::default();
        let mut text = String::new();
        for i in 0..3_000 {
            if i == 1_000 {
                text.push_str("1,NA,NA\n");
            }
            // Not for the index path: a fraction, an offset.
            if i == 2_000 {
                text.push_str("2,2013-01-01T10:00:00.5Z,2013-01-01 10:00:00\n");
            }
            if i == 2_500 {
                text.push_str("3,2013-01-01T10:00:00+05:00,2013-01-01T10:00:00\n");
            }
            text.push_str(&format!(
                "{i},2013-{:02}-{:02}T{:02}:{:02}:{:02}Z,1999-12-31 23:59:{:02}\n",
                1 + i % 12,
                1 + i % 28,
                i % 24,
                i % 60,
                (i * 7) % 60,
                i % 60
            ));
        }
        let reference = by_the_index_path(&text, &d, &schema, &values, 3_001);
        let (batch, _, _) = reference.unwrap();
        assert_eq!(batch.num_rows(), 3_003);
        let v = |c: usize, r: usize| crate::batch::format_value(batch.column(c).as_ref(), r);
        assert_eq!(v(1, 0), Some("2013-01-01 00:00:00+00".into()));
        assert_eq!(v(2, 0), Some("1999-12-31 23:59:00".into()));
        assert_eq!(v(1, 1_000), None);
        assert_eq!(v(2, 1_000), None);
        assert_eq!(v(1, 2_001), Some("2013-01-01 10:00:00.5+00".into()));
        assert_eq!(v(1, 2_502), Some("2013-01-01 05:00:00+00".into()));
        assert_eq!(v(1, 3_002), Some("2013-12-04 23:59:53+00".into()));
    }

    /// A delimiter or quote that numbers and dates are written with
    /// ends the field where the general path ends it (review cases).
    #[test]
    fn number_bytes_as_delimiter_or_quote_take_the_general_path() {
        let values = Arc::new(ValueOptions::default());
        let cases: [(&[u8], &str, u8, Option<u8>); 5] = [
            (b"12.34\n", "a DECIMAL(10,2), b INT", b'.', Some(b'"')),
            (
                b"2024-01-05-x-y\n",
                "a DATE, b TEXT, c TEXT, d TEXT",
                b'-',
                Some(b'"'),
            ),
            (
                b"-5-2\n",
                "a DECIMAL(5,1), b DECIMAL(5,1), c INT",
                b'-',
                Some(b'"'),
            ),
            (b"1.,2\n", "a DECIMAL(5,1), b INT", b',', Some(b'.')),
            (b"-5,2\n", "a DECIMAL(5,1), b INT", b',', Some(b'-')),
        ];
        for (text, schema, delimiter, quote) in cases {
            let schema: Schema = schema.parse().unwrap();
            let d = Dialect {
                delimiter,
                quote,
                ..Dialect::default()
            };
            let fast = run(false, text, &d, &schema, &values, RowPolicy::default());
            let reference = run(true, text, &d, &schema, &values, RowPolicy::default());
            assert_eq!(fast, reference, "{:?}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn text_is_checked_for_nul_and_utf8_in_one_pass() {
        let schema: Schema = "i INT, t TEXT".parse().unwrap();
        let values = Arc::new(ValueOptions::default());
        let d = Dialect::default();
        let run1 = |text: &[u8]| run(false, text, &d, &schema, &values, RowPolicy::default());
        let err = |text: &[u8]| run1(text).unwrap_err().message;
        assert!(err(b"1,a\0b\n").contains("a NUL byte at byte 1 of the value"));
        assert!(err(b"1,\"\0\"\n").contains("a NUL byte at byte 0 of the value"));
        // A NUL in a number: said as a NUL, the table having TEXT.
        assert!(err(b"1\0,a\n").contains("a NUL byte at byte 1 of the value"));
        assert!(err(b"1,\x80\n").contains("invalid UTF-8 at byte 0"));
        assert!(err(b"1,ab\xff\n").contains("invalid UTF-8 at byte 2"));
        let (batch, _, _) = run1("1,\u{e9}t\u{e9}\n2,\x7f~\n3,\n".as_bytes()).unwrap();
        let t = |r| crate::batch::format_value(batch.column(1).as_ref(), r);
        assert_eq!(t(0), Some("\u{e9}t\u{e9}".into()));
        assert_eq!(t(1), Some("\u{7f}~".into()));
        assert_eq!(t(2), None);
        // Without TEXT columns, a number's own error.
        let ints: Schema = "i INT".parse().unwrap();
        let e = run(false, b"1\0\n", &d, &ints, &values, RowPolicy::default()).unwrap_err();
        assert!(
            e.message.contains("not an integer") || e.message.contains("invalid INT"),
            "{}",
            e.message
        );
    }

    #[test]
    fn fast_paths_take_the_common_forms() {
        let schema: Schema = "d DECIMAL(15, 2), t DATE".parse().unwrap();
        let values = Arc::new(ValueOptions::default());
        let d = Dialect::default();
        for text in [
            "21168.23,1996-03-13\n-0.04,2000-02-29\n.5,0000-01-01\n7.,9999-12-31",
            "1,1996-03-13\r\n",
            "00012.5,1996-02-30\n",
            "1.234,1996-03-13\n",
            "1e2,1996-03-13\n",
        ] {
            let fast = run(
                false,
                text.as_bytes(),
                &d,
                &schema,
                &values,
                RowPolicy::default(),
            );
            let reference = run(
                true,
                text.as_bytes(),
                &d,
                &schema,
                &values,
                RowPolicy::default(),
            );
            assert_eq!(fast, reference, "{text:?}");
        }
        let (batch, _, _) = run(
            false,
            b"21168.23,1996-03-13\n-0.04,2000-02-29\n",
            &d,
            &schema,
            &values,
            RowPolicy::default(),
        )
        .unwrap();
        assert_eq!(
            crate::batch::format_value(batch.column(0).as_ref(), 0),
            Some("21168.23".into())
        );
        assert_eq!(
            crate::batch::format_value(batch.column(0).as_ref(), 1),
            Some("-0.04".into())
        );
        assert_eq!(
            crate::batch::format_value(batch.column(1).as_ref(), 1),
            Some("2000-02-29".into())
        );
    }
}
