//! Runs of records read through the structural index: the fast path of
//! the block parser for delimited records whose columns are numbers,
//! dates and ASCII text.
//!
//! Two steps over a run of up to [`MAX_RUN`] records:
//! 1. **Read**: each field's end is the next bit of the structural index
//!    ([`super::structural`]), and the field is converted right then,
//!    while its bytes are in the first cache level, into its column's
//!    vector of values (TEXT: its bounds). A quoted field is closed by
//!    the next quote bit (with an escape byte, by the general
//!    quoted-field scan, and the index resumes after it). Integers,
//!    decimals and dates are converted by their known bounds, 16 bytes
//!    at a time (`byte_scan`), so no conversion sits on the path to the
//!    next field's start.
//! 2. **Append**: the values of every column by one copy a column.
//!
//! A run ends before the first record that is not plain (a blank or
//! comment line, the wrong number of fields, a quoted field with a
//! doubled quote or an escape, a quoted number, the end of the data
//! without a line end), and before the first record a field of which
//! a fast path does not take (an empty or NULL number, a sign the fast
//! paths do not read, bytes outside ASCII in text). The per-field loop
//! of `csv::parse_block_split` reads that record, with the same outcome
//! as before this path existed, and says what is wrong with it; then
//! the next run starts. What the index path takes, it reads as that
//! loop's fast paths do: the same values, or it does not take the
//! record (`csv::fast_path_tests` hold the two to each other).
//!
//! On x86-64 CPUs with AVX2 the whole path is compiled for them
//! ([`Indexed::run`] picks it at run time); elsewhere for SSE2, and for
//! other CPUs byte loops.
//!
//! Useful for: the throughput of the common file (numbers, dates,
//! unquoted or simply quoted text), which is the parse stage of a load.
//! Not useful for: anything unusual; that is the per-field loop's.

use super::Dialect;
use super::csv::{Field, POW10_18, Term, scan_decimal, scan_quoted, zero_first};
use super::structural::Structurals;
use crate::batch::{BatchBuilder, DataType, FastPath, Schema};
use crate::parse::FieldMap;

#[cfg(test)]
thread_local! {
    /// Records read by the index path on this thread (for the tests that
    /// say which records took it).
    pub(super) static ROWS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The most records in a run.
const MAX_RUN: usize = 1024;
/// The most records the per-field loop reads after failed tries before
/// the next try (1 in tests, so that they try the index path often).
#[cfg(not(test))]
const MAX_BACKOFF: usize = 256;
#[cfg(test)]
const MAX_BACKOFF: usize = 1;
/// The records in the first run of a block.
const FIRST_RUN: usize = 64;
/// Bit of a field's end that says it was quoted.
const QUOTED: u32 = 1 << 31;

/// How a column's fields are read: the per-field loop's fast paths, and
/// TEXT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// INT (`small`) or BIGINT; `exact`: no leading zeros.
    Integer {
        small: bool,
        exact: bool,
    },
    Decimal {
        scale: u8,
        int_digits: u8,
    },
    Date,
    /// TIMESTAMP, or TIMESTAMPTZ (`tz`), without `--timestamp-format`.
    Timestamp {
        tz: bool,
    },
    Text,
}

/// A column's converted values of a run.
enum Values {
    I32(Vec<i32>),
    I64(Vec<i64>),
    /// TEXT: where each field's contents start and end (with [`QUOTED`]
    /// when quoted), appended from the data.
    Text(Vec<(u32, u32)>),
}

/// Writes `x` as element `at` of `v`, whose length is set when the run
/// ends ([`Indexed::read`]): no length kept per value, no capacity test.
///
/// # Safety
/// `at < v.capacity()`.
#[inline(always)]
unsafe fn put<T>(v: &mut Vec<T>, at: usize, x: T) {
    debug_assert!(at < v.capacity());
    // SAFETY: the caller's.
    unsafe { v.as_mut_ptr().add(at).write(x) }
}

impl Values {
    /// A value a NULL stands in for, as element `at`.
    ///
    /// # Safety
    /// `at` is below the capacity of the vector.
    #[inline]
    unsafe fn put_zero(&mut self, at: usize) {
        // SAFETY: the caller's.
        unsafe {
            match self {
                Values::I32(v) => put(v, at, 0),
                Values::I64(v) => put(v, at, 0),
                Values::Text(_) => {}
            }
        }
    }

    /// Empty, with room for `rows` values.
    fn clear_for(&mut self, rows: usize) {
        match self {
            Values::I32(v) => {
                v.clear();
                v.reserve(rows)
            }
            Values::I64(v) => {
                v.clear();
                v.reserve(rows)
            }
            Values::Text(v) => {
                v.clear();
                v.reserve(rows)
            }
        }
    }

    /// Holding the first `rows` values written by [`put`].
    ///
    /// # Safety
    /// Each of the first `rows` was written.
    unsafe fn set_rows(&mut self, rows: usize) {
        // SAFETY: the caller's; the elements are plain numbers and pairs.
        unsafe {
            match self {
                Values::I32(v) => v.set_len(rows),
                Values::I64(v) => v.set_len(rows),
                Values::Text(v) => v.set_len(rows),
            }
        }
    }
}

/// The state of the index path over one block.
pub(super) struct Indexed<'a> {
    data: &'a [u8],
    d: &'a Dialect,
    blank_records: bool,
    max_record: Option<usize>,
    kinds: Vec<Kind>,
    values: Vec<Values>,
    ix: Structurals<'a>,
    /// Records the next run may hold.
    want: usize,
    /// Records the per-field loop reads before the next run is tried,
    /// and how many it read after the last failed try.
    skip: usize,
    backoff: usize,
    scratch: Vec<u8>,
    months: Months,
    /// Whether quoted fields have an escape byte other than the quote.
    escapes: bool,
    /// The NULL marker (`--null`).
    null: Vec<u8>,
    /// Per column: empty while the run has no NULL in it; else whether
    /// each record's value is one.
    valid: Vec<Vec<bool>>,
}

impl<'a> Indexed<'a> {
    /// The index path over `data`, when every record may take it: a
    /// delimiter split with the fast paths on (`fast`: the columns'), no
    /// field map, no trimming around quotes, every column a number or
    /// date with a fast path, or TEXT; `None` otherwise.
    pub(super) fn new(
        data: &'a [u8],
        d: &'a Dialect,
        schema: &Schema,
        out: &BatchBuilder,
        fast: &[FastPath],
        map: Option<&FieldMap>,
        max_record: Option<usize>,
    ) -> Option<Self> {
        if d.split != super::Split::Delimiter
            || d.trim_around_quotes
            || map.is_some()
            || schema.columns.is_empty()
            || data.len() >= QUOTED as usize
        {
            return None;
        }
        let kinds = schema
            .columns
            .iter()
            .enumerate()
            .map(|(c, col)| match (fast[c], col.data_type) {
                (FastPath::Integer, ty) => Some(Kind::Integer {
                    small: ty == DataType::Int,
                    exact: out.is_exact(c),
                }),
                (FastPath::Decimal { scale, int_digits }, _) => {
                    Some(Kind::Decimal { scale, int_digits })
                }
                (FastPath::Date, _) => Some(Kind::Date),
                (FastPath::None, DataType::Text) => Some(Kind::Text),
                (FastPath::None, DataType::Timestamp | DataType::TimestampTz) => {
                    out.timestamp_fast(c).then_some(Kind::Timestamp {
                        tz: col.data_type == DataType::TimestampTz,
                    })
                }
                _ => None,
            })
            .collect::<Option<Vec<Kind>>>()?;
        let values = kinds
            .iter()
            .map(|k| match k {
                Kind::Integer { small: true, .. } | Kind::Date => Values::I32(Vec::new()),
                Kind::Integer { small: false, .. }
                | Kind::Decimal { .. }
                | Kind::Timestamp { .. } => Values::I64(Vec::new()),
                Kind::Text => Values::Text(Vec::new()),
            })
            .collect();
        let q = d.quote.unwrap_or(b'\n');
        Some(Indexed {
            data,
            d,
            blank_records: d.blank_lines.are_records(schema.columns.len() == 1),
            max_record,
            kinds,
            values,
            ix: Structurals::new(data, [d.delimiter, b'\n', q]),
            want: FIRST_RUN,
            skip: 0,
            backoff: 0,
            scratch: Vec::new(),
            months: Months::new(),
            escapes: d.distinct_escape().is_some(),
            null: out.null_marker().to_vec(),
            valid: vec![Vec::new(); schema.columns.len()],
        })
    }

    /// Reads a run of records from `pos` (a record's start) into `out`:
    /// where the next record starts, the records read and the newlines
    /// read. `None` (nothing read) when the record at `pos` is one for
    /// the per-field loop, or while that loop reads the records after a
    /// failed try.
    pub(super) fn run(&mut self, pos: usize, out: &mut BatchBuilder) -> Option<(usize, u64, u64)> {
        if self.skip > 0 {
            self.skip -= 1;
            return None;
        }
        #[cfg(target_arch = "x86_64")]
        if self.ix.avx2 {
            // SAFETY: the CPU has AVX2 (detected by `Structurals::new`),
            // and with it the other features `run_avx2` is compiled for.
            return unsafe { self.run_avx2(pos, out) };
        }
        self.run_any::<false>(pos, out)
    }

    /// [`Self::run`] compiled for CPUs with AVX2 (the x86-64 of the last
    /// decade): the splitting and converting loops inlined into it use
    /// their instructions (`tzcnt`, `blsr`, SSSE3's byte multiply-add).
    ///
    /// # Safety
    /// The CPU has AVX2, BMI1, BMI2, LZCNT, POPCNT and SSE4.2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt,sse4.2")]
    unsafe fn run_avx2(&mut self, pos: usize, out: &mut BatchBuilder) -> Option<(usize, u64, u64)> {
        self.run_any::<true>(pos, out)
    }

    #[inline(always)]
    fn run_any<const AVX2: bool>(
        &mut self,
        pos: usize,
        out: &mut BatchBuilder,
    ) -> Option<(usize, u64, u64)> {
        let (rows, next, newlines) = self.read::<AVX2>(pos);
        let rows = if self.text_fits(rows, out) { rows } else { 0 };
        if rows == 0 {
            // The per-field loop reads this record; after failures in a
            // row, also the next ones (1, 2, 4 ... 256), so that a file
            // the index path never takes costs little more than before.
            self.skip = self.backoff;
            self.backoff = (self.backoff * 2).clamp(1, MAX_BACKOFF);
            self.want = FIRST_RUN;
            return None;
        }
        self.backoff = 0;
        self.want = (2 * self.want).min(MAX_RUN);
        self.append(rows, out);
        #[cfg(test)]
        ROWS.with(|r| r.set(r.get() + rows as u64));
        Some((next, rows as u64, newlines))
    }

    /// Reads up to `want` records from `pos` (a record's start), each
    /// field converted as it is found (while its bytes are in the first
    /// cache level), into `values`; stops before the first record that
    /// is not plain or has a field its kind does not take. The records
    /// read, where the next starts, and the newlines read.
    #[inline(always)]
    fn read<const AVX2: bool>(&mut self, mut pos: usize) -> (usize, usize, u64) {
        let (data, d) = (self.data, self.d);
        let n = data.len();
        let last = self.kinds.len() - 1;
        // Each column's values are written as element `rows` of its
        // vector while `rows < want` (so within the room made here), and
        // its length set to the records read at the end.
        let want = self.want;
        for v in &mut self.values {
            v.clear_for(want);
        }
        for v in &mut self.valid {
            v.clear();
        }
        let mut rows = 0;
        let mut newlines = 0;
        // Where the record after the last one read starts.
        let mut done = pos;
        self.ix.seek(pos);
        'records: while rows < want && pos < n {
            let first = data[pos];
            let blank = first == b'\n' || (first == b'\r' && data.get(pos + 1) == Some(&b'\n'));
            if (blank && !self.blank_records) || d.starts_comment(&data[pos..]) {
                break;
            }
            let start = pos;
            let mut quoted_newlines = 0;
            for (c, &kind) in self.kinds.iter().enumerate() {
                let Some(end) = self.ix.pop() else {
                    break 'records;
                };
                let stop = data[end];
                if Some(stop) == d.quote {
                    // Only a TEXT field that starts with the quote.
                    let Values::Text(v) = &mut self.values[c] else {
                        break 'records;
                    };
                    if end != pos {
                        break 'records;
                    }
                    let (a, z, next, lines) = if !self.escapes {
                        // The next quote closes it (a doubled quote, read by
                        // `scan_quoted` as one, is left to the per-field
                        // loop); the delimiters and line ends before it
                        // are its contents.
                        let mut inner = 0;
                        let close = loop {
                            match self.ix.pop() {
                                Some(p) if Some(data[p]) == d.quote => break Some(p),
                                Some(p) => inner += (data[p] == b'\n') as u64,
                                None => break None,
                            }
                        };
                        // Then the delimiter (every field but the last)
                        // or the line end (the last), right after it.
                        let follows = close.zip(self.ix.pop()).filter(|&(q, e)| {
                            if c < last {
                                e == q + 1 && data[e] == d.delimiter
                            } else {
                                data[e] == b'\n'
                                    && (e == q + 1 || (e == q + 2 && data[q + 1] == b'\r'))
                            }
                        });
                        let Some((q, e)) = follows else {
                            break 'records;
                        };
                        (pos + 1, q, e + 1, inner)
                    } else {
                        // With escapes: as the per-field loop reads it.
                        let Ok(s) = scan_quoted(data, pos, d, &mut self.scratch) else {
                            break 'records;
                        };
                        let fits = match s.term {
                            Term::Delim => c < last,
                            Term::Newline => c == last,
                            Term::Eof => false,
                        };
                        let Field::Slice(a, z) = s.field else {
                            break 'records;
                        };
                        if !fits {
                            break 'records;
                        }
                        // The stops inside the quotes are not the record's.
                        self.ix.seek(s.next);
                        (a, z, s.next, s.newlines)
                    };
                    if !super::byte_scan::ascii_text(data, a, z) {
                        break 'records;
                    }
                    // SAFETY: `rows < want`, the room made above.
                    unsafe { put(v, rows, (a as u32, z as u32 | QUOTED)) };
                    quoted_newlines += lines;
                    pos = next;
                    continue;
                }
                // Every field but the last ends at a delimiter; the last
                // at a line end.
                if (c == last) != (stop == b'\n') {
                    break 'records;
                }
                // As `scan_field`: a CR before the line end is not data.
                let mut z = end;
                if c == last && z > pos && data[z - 1] == b'\r' {
                    z -= 1;
                }
                let s = pos;
                // An empty number or the NULL marker is NULL, as in
                // `BatchBuilder::push` (TEXT has its own test in
                // `append_texts`).
                if kind != Kind::Text
                    && (z == s || (!self.null.is_empty() && data[s..z] == *self.null))
                {
                    // SAFETY: `rows < want`, the room made above.
                    unsafe { self.values[c].put_zero(rows) };
                    let valid = &mut self.valid[c];
                    if valid.is_empty() {
                        // The first NULL of the column in this run.
                        valid.resize(rows, true);
                    }
                    valid.push(false);
                    pos = end + 1;
                    continue;
                }
                if !self.valid[c].is_empty() {
                    self.valid[c].push(true);
                }
                let taken = match (kind, &mut self.values[c]) {
                    (Kind::Integer { exact, .. }, Values::I32(v)) => {
                        match int_of::<AVX2>(data, s, z).and_then(|x| i32::try_from(x).ok()) {
                            Some(x) if !(exact && zero_first(data, s)) => {
                                // SAFETY: `rows < want`, the room made above.
                                unsafe { put(v, rows, x) };
                                true
                            }
                            _ => false,
                        }
                    }
                    (Kind::Integer { exact, .. }, Values::I64(v)) => {
                        match int_of::<AVX2>(data, s, z) {
                            Some(x) if !(exact && zero_first(data, s)) => {
                                // SAFETY: `rows < want`, the room made above.
                                unsafe { put(v, rows, x) };
                                true
                            }
                            _ => false,
                        }
                    }
                    (Kind::Decimal { scale, int_digits }, Values::I64(v)) => {
                        let x = decimal_of::<AVX2>(data, s, z, scale, int_digits).or_else(|| {
                            // The fast path's own scan over the field
                            // alone: it takes the field when its value
                            // ends where the field does (no stop lies
                            // inside a field).
                            match scan_decimal(&data[..z], s, d.delimiter, scale, int_digits) {
                                Some((x, Term::Eof, _)) => Some(x),
                                _ => None,
                            }
                        });
                        // SAFETY: `rows < want`, the room made above.
                        x.map(|x| unsafe { put(v, rows, x) }).is_some()
                    }
                    (Kind::Date, Values::I32(v)) => date_of(data, s, z, &mut self.months)
                        // SAFETY: `rows < want`, the room made above.
                        .map(|x| unsafe { put(v, rows, x) })
                        .is_some(),
                    (Kind::Timestamp { tz }, Values::I64(v)) => {
                        timestamp_of(data, s, z, tz, &mut self.months)
                            // SAFETY: `rows < want`, the room made above.
                            .map(|x| unsafe { put(v, rows, x) })
                            .is_some()
                    }
                    (Kind::Text, Values::Text(v)) => {
                        let ok = super::byte_scan::ascii_text(data, s, z);
                        if ok {
                            // SAFETY: `rows < want`, the room made above.
                            unsafe { put(v, rows, (s as u32, z as u32)) };
                        }
                        ok
                    }
                    _ => false,
                };
                if !taken {
                    break 'records;
                }
                pos = end + 1;
            }
            // Longer than --max-line-size: the per-field loop says so.
            if self.max_record.is_some_and(|max| pos - start > max) {
                break;
            }
            newlines += quoted_newlines + 1;
            rows += 1;
            done = pos;
        }
        // The records read; a record that broke off wrote values past
        // them in some columns, which are not counted.
        for v in &mut self.values {
            // SAFETY: every column wrote element `r` of each record `r`
            // read.
            unsafe { v.set_rows(rows) };
        }
        for v in &mut self.valid {
            v.truncate(rows);
        }
        (rows, done, newlines)
    }

    /// Whether the run's first `rows` records' text fits its columns
    /// (what [`BatchBuilder::push_ascii`] refuses past 2 GiB).
    fn text_fits(&self, rows: usize, out: &BatchBuilder) -> bool {
        self.values.iter().enumerate().all(|(c, v)| match v {
            Values::Text(b) => {
                let bytes: usize = b[..rows]
                    .iter()
                    .map(|&(s, z)| (z & !QUOTED) as usize - s as usize)
                    .sum();
                out.text_fits(c, bytes)
            }
            _ => true,
        })
    }

    /// The first `rows` records' values appended to `out`.
    #[inline(always)]
    fn append(&mut self, rows: usize, out: &mut BatchBuilder) {
        for (c, values) in self.values.iter().enumerate() {
            match values {
                Values::I32(v) => out.append_i32s(c, &v[..rows], self.valid[c].get(..rows)),
                Values::I64(v) => out.append_i64s(c, &v[..rows], self.valid[c].get(..rows)),
                // ASCII (checked by `read`), and fits (`text_fits`).
                Values::Text(v) => out.append_texts(c, self.data, &v[..rows], QUOTED),
            }
        }
    }
}

/// The integer in `data[s..z]` when it is what the integer fast path
/// takes: an optional `-` and 1 to 18 digits, nothing else. `SSSE3`:
/// only where the CPU has it.
#[inline(always)]
fn int_of<const SSSE3: bool>(data: &[u8], s: usize, z: usize) -> Option<i64> {
    let neg = s < z && data[s] == b'-';
    let from = s + neg as usize;
    let len = z.checked_sub(from)?;
    if len == 0 || len > 18 {
        return None;
    }
    // SAFETY: `SSSE3` only where the CPU has it (the caller's).
    let magnitude = match unsafe { super::byte_scan::digits16::<SSSE3>(data, z, len) } {
        Some(v) => v,
        None => digits(&data[from..z])?,
    } as i64;
    Some(if neg { -magnitude } else { magnitude })
}

/// The value of a run of digits (at most 19), one at a time; `None` if
/// a byte is not a digit.
#[inline(always)]
fn digits(bytes: &[u8]) -> Option<u64> {
    let mut acc = 0u64;
    for &b in bytes {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        acc = acc * 10 + d as u64;
    }
    Some(acc)
}

/// The DECIMAL in `data[s..z]`, scaled by 10^`scale`, when the decimal
/// fast path takes it (`csv::scan_decimal`: an optional `-`, at most
/// `int_digits` digits, optionally a `.` and at most `scale` digits, one
/// digit at least) and the field (less its sign) is at most 16 bytes
/// with 16 bytes before its end; `None` otherwise (the caller then asks
/// that scan).
#[inline(always)]
fn decimal_of<const SSSE3: bool>(
    data: &[u8],
    s: usize,
    z: usize,
    scale: u8,
    int_digits: u8,
) -> Option<i64> {
    let neg = s < z && data[s] == b'-';
    let from = s + neg as usize;
    let len = z.checked_sub(from)?;
    // SAFETY: `SSSE3` only where the CPU has it (the caller's).
    let (magnitude, frac) = unsafe { super::byte_scan::point_digits16::<SSSE3>(data, z, len)? };
    let frac_digits = frac.unwrap_or(0);
    let whole = len - frac.map_or(0, |f| f + 1);
    if whole > int_digits as usize || frac_digits > scale as usize || whole + frac_digits == 0 {
        return None;
    }
    // At most `int_digits + scale` (18) digits: no overflow.
    let v = magnitude as i64 * POW10_18[scale as usize - frac_digits];
    Some(if neg { -v } else { v })
}

/// Days since 1970-01-01 of `data[s..z]` when the date fast path takes
/// it (`csv::scan_date`: exactly `YYYY-MM-DD`, a valid day): the first
/// day and the length of each month met are kept in `months`, so a
/// date costs a check of its bytes and a look-up.
#[inline(always)]
fn date_of(data: &[u8], s: usize, z: usize, months: &mut Months) -> Option<i32> {
    if z != s + 10 {
        return None;
    }
    let f: &[u8; 10] = data.get(s..z)?.try_into().ok()?;
    let head = u64::from_le_bytes(f[..8].try_into().ok()?);
    // Bytes 0-3 and 5-6 digits, 4 and 7 a '-'.
    const DASHES: u64 = 0x2d00_002d_0000_0000;
    const MASK: u64 = 0xff00_00ff_0000_0000;
    let digits = (head & !MASK) | (0x3030_3030_3030_3030 & MASK);
    if head & MASK != DASHES || !all_digits(digits) {
        return None;
    }
    let (d1, d2) = (f[8].wrapping_sub(b'0'), f[9].wrapping_sub(b'0'));
    if d1 > 9 || d2 > 9 {
        return None;
    }
    let day = (d1 * 10 + d2) as i32;
    let (first, len) = months.of(head);
    (day >= 1 && day <= len).then(|| first + day - 1)
}

/// A timestamp `data[s..z]` in the one form most files write,
/// `YYYY-MM-DD HH:MM:SS` (or `T` between), as microseconds since
/// 1970-01-01 00:00:00: with `tz` (TIMESTAMPTZ) it must end in `Z` (UTC),
/// without (TIMESTAMP) it must not; `None` for every other form
/// (fractions, offsets, other widths, hours past 23, leap seconds), which
/// the per-field loop reads.
#[inline(always)]
fn timestamp_of(data: &[u8], s: usize, z: usize, tz: bool, months: &mut Months) -> Option<i64> {
    if z != s + 19 + tz as usize || (tz && data[z - 1] != b'Z') {
        return None;
    }
    let days = date_of(data, s, s + 10, months)? as i64;
    let t: &[u8; 9] = data.get(s + 10..s + 19)?.try_into().ok()?;
    if !matches!(t[0], b'T' | b' ') || t[3] != b':' || t[6] != b':' {
        return None;
    }
    let two = |i: usize| {
        let (a, b) = (t[i].wrapping_sub(b'0'), t[i + 1].wrapping_sub(b'0'));
        (a <= 9 && b <= 9).then_some(a as i64 * 10 + b as i64)
    };
    let (h, m, sec) = (two(1)?, two(4)?, two(7)?);
    if h > 23 || m > 59 || sec > 59 {
        return None;
    }
    Some((days * 86_400 + h * 3_600 + m * 60 + sec) * 1_000_000)
}

/// Whether the 8 bytes of `w` are all ASCII digits.
#[inline(always)]
fn all_digits(w: u64) -> bool {
    // A byte is a digit iff its high nibble is 3 and adding 6 keeps it 3.
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    let a = w & HIGH;
    let b = w.wrapping_add(0x0606_0606_0606_0606) & HIGH;
    a == 0x3030_3030_3030_3030 && b == 0x3030_3030_3030_3030
}

/// Slots of [`Months`]: 1,024 (16 KiB), some 85 years of months.
const MONTH_BITS: u32 = 10;
const MONTH_SLOTS: usize = 1 << MONTH_BITS;

/// The months a column's dates fell in: per `YYYY-MM-` (as 8 bytes), its
/// first day (days since 1970-01-01) and its days (0 for no month).
pub(super) struct Months {
    slots: Box<[(u64, i32, i32); MONTH_SLOTS]>,
}

impl Months {
    pub(super) fn new() -> Self {
        // Key 0 is no `YYYY-MM-`: never matched.
        Months {
            slots: Box::new([(0, 0, 0); MONTH_SLOTS]),
        }
    }

    /// The first day and the days of the month `head` (`YYYY-MM-`, its
    /// digits checked).
    #[inline(always)]
    fn of(&mut self, head: u64) -> (i32, i32) {
        let slot = (head.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - MONTH_BITS)) as usize;
        let (key, first, len) = self.slots[slot];
        if key == head {
            return (first, len);
        }
        let digit = |k: u32| ((head >> (8 * k)) & 0xff) as u32 - b'0' as u32;
        let y = digit(0) * 1000 + digit(1) * 100 + digit(2) * 10 + digit(3);
        let m = digit(5) * 10 + digit(6);
        let entry = match super::value::ymd_days(y, m, 1) {
            Some(first) => (first, super::value::days_in_month(y, m) as i32),
            None => (0, 0),
        };
        self.slots[slot] = (head, entry.0, entry.1);
        entry
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::csv::{scan_date, scan_integer};
    use proptest::prelude::*;

    /// Fields of digits, points, signs and a few other bytes, after a
    /// prefix (sometimes shorter than 16 bytes: the byte loops).
    fn field() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
        let piece = prop_oneof![
            6 => b'0'..=b'9',
            1 => Just(b'.'),
            1 => Just(b'-'),
            1 => Just(b'+'),
            1 => Just(b'/'),
            1 => Just(b':'),
            1 => Just(b' '),
        ];
        (
            prop::collection::vec(b'0'..=b'9', 0..20),
            prop_oneof![
                3 => prop::collection::vec(piece, 0..22),
                2 => (0u32..10_001, 0u32..14, 0u32..33)
                    .prop_map(|(y, m, d)| format!("{y:04}-{m:02}-{d:02}").into_bytes()),
            ],
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 10_000, ..ProptestConfig::default() })]

        /// Each converter takes a field only as the per-field loop's fast
        /// path does, with the same value (with and without SSSE3).
        #[test]
        fn converters_are_the_fast_paths(
            (prefix, f) in field(),
            scale in 0u8..5,
            int_digits in 0u8..14,
        ) {
            let mut data = prefix.clone();
            data.push(b',');
            let s = data.len();
            data.extend_from_slice(&f);
            let z = data.len();
            data.extend_from_slice(b",1\n");
            let whole = |r: Option<(i64, Term, usize)>| match r {
                Some((v, Term::Delim, next)) if next == z + 1 => Some(v),
                _ => None,
            };
            let int = whole(scan_integer(&data, s, b','));
            prop_assert_eq!(int_of::<false>(&data, s, z), int);
            let dec = whole(scan_decimal(&data, s, b',', scale, int_digits));
            // `None`: the caller asks the scan itself; a field of fewer
            // than 17 digits in all, 16 bytes from the data's start,
            // is always answered.
            let got = decimal_of::<false>(&data, s, z, scale, int_digits);
            prop_assert!(got.is_none() || got == dec, "{:?} {:?}", got, dec);
            #[cfg(target_arch = "x86_64")]
            if z - s <= 16 && s >= 16 && dec.is_some() {
                prop_assert_eq!(got, dec);
            }
            let date = match scan_date(&data, s, b',') {
                Some((v, Term::Delim, next)) if next == z + 1 => Some(v),
                _ => None,
            };
            prop_assert_eq!(date_of(&data, s, z, &mut Months::new()), date);
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("ssse3") {
                prop_assert_eq!(int_of::<true>(&data, s, z), int);
                let got = decimal_of::<true>(&data, s, z, scale, int_digits);
                prop_assert!(got.is_none() || got == dec);
            }
        }
    }

    /// The month look-up gives every day of 400 years as the calendar
    /// does, through one table of months (slots reused and replaced).
    #[test]
    fn months_are_the_calendar() {
        let mut months = Months::new();
        let mut want = crate::parse::value::ymd_days(1800, 1, 1).unwrap();
        for y in 1800..2200u32 {
            for m in 1..=12u32 {
                for d in 1..=31u32 {
                    let text = format!("x,{y:04}-{m:02}-{d:02}");
                    let got = date_of(text.as_bytes(), 2, text.len(), &mut months);
                    let day = crate::parse::value::ymd_days(y, m, d);
                    assert_eq!(got, day, "{text}");
                    if let Some(day) = day {
                        assert_eq!(day, want);
                        want += 1;
                    }
                }
            }
        }
        for bad in [
            "x,1996-02-30",
            "x,1996-13-01",
            "x,1996-00-10",
            "x,1996-01-00",
            "x,1996/01/10",
        ] {
            assert_eq!(
                date_of(bad.as_bytes(), 2, bad.len(), &mut months),
                None,
                "{bad}"
            );
        }
    }
}
