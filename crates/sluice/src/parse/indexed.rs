//! Runs of records read through the structural index, a column at a
//! time: the fast path of the block parser for delimited records whose
//! columns are numbers, dates and ASCII text.
//!
//! Three steps over a run of up to [`MAX_RUN`] records:
//! 1. **Split**: the field bounds of each record, from the structural
//!    index ([`super::structural`]); a quoted field is read by the
//!    general quoted-field scan and the index resumes after it.
//! 2. **Convert**: each column's fields of the run in one loop (no
//!    dispatch per field), into a vector of values.
//! 3. **Append**: the values of every column of the records all of whose
//!    fields converted, by one copy a column.
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
//! record (`csv::tests` hold the two to each other).
//!
//! Useful for: the throughput of the common file (numbers, dates,
//! unquoted or simply quoted text), which is the parse stage of a load.
//! Not useful for: anything unusual; that is the per-field loop's.

use super::Dialect;
use super::csv::{Field, Term, ascii_text, scan_date, scan_decimal, scan_quoted, zero_first};
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
    Text,
}

/// A column's converted values of a run.
enum Values {
    I32(Vec<i32>),
    I64(Vec<i64>),
    /// TEXT is appended from the field bounds.
    Text,
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
    /// Per field of the run's records, record by record: where its
    /// contents start and end (with [`QUOTED`] when quoted).
    bounds: Vec<(u32, u32)>,
    /// Per record of the run: where the next starts, and the newlines
    /// read up to there from the run's start.
    ends: Vec<(usize, u64)>,
    /// Records the next run may hold.
    want: usize,
    /// Records the per-field loop reads before the next run is tried,
    /// and how many it read after the last failed try.
    skip: usize,
    backoff: usize,
    scratch: Vec<u8>,
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
                _ => None,
            })
            .collect::<Option<Vec<Kind>>>()?;
        let values = kinds
            .iter()
            .map(|k| match k {
                Kind::Integer { small: true, .. } | Kind::Date => Values::I32(Vec::new()),
                Kind::Integer { small: false, .. } | Kind::Decimal { .. } => {
                    Values::I64(Vec::new())
                }
                Kind::Text => Values::Text,
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
            bounds: Vec::new(),
            ends: Vec::new(),
            want: FIRST_RUN,
            skip: 0,
            backoff: 0,
            scratch: Vec::new(),
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
        self.split(pos);
        let mut rows = self.ends.len();
        for c in 0..self.kinds.len() {
            if rows == 0 {
                break;
            }
            rows = self.convert(c, rows, out);
        }
        if rows == 0 {
            // The per-field loop reads this record; after failures in a
            // row, also the next ones (1, 2, 4 ... 256), so that a file
            // the index path never takes costs little more than before.
            self.skip = self.backoff;
            self.backoff = (self.backoff * 2).clamp(1, 256);
            self.want = FIRST_RUN;
            return None;
        }
        self.backoff = 0;
        self.want = if rows < self.ends.len() {
            // Records after a failing one are split again later: keep
            // runs about as long as the ones that go through.
            (2 * rows).max(8)
        } else {
            (2 * self.want).min(MAX_RUN)
        };
        self.append(rows, out);
        #[cfg(test)]
        ROWS.with(|r| r.set(r.get() + rows as u64));
        let (next, newlines) = self.ends[rows - 1];
        Some((next, rows as u64, newlines))
    }

    /// Step 1: the bounds of the fields of up to `want` plain records
    /// from `pos` into `bounds`, and their ends into `ends`.
    fn split(&mut self, mut pos: usize) {
        let (data, d) = (self.data, self.d);
        let n = data.len();
        let last = self.kinds.len() - 1;
        self.bounds.clear();
        self.ends.clear();
        let mut newlines = 0;
        self.ix.seek(pos);
        'records: while self.ends.len() < self.want && pos < n {
            let first = data[pos];
            let blank = first == b'\n' || (first == b'\r' && data.get(pos + 1) == Some(&b'\n'));
            if (blank && !self.blank_records) || d.starts_comment(&data[pos..]) {
                break;
            }
            let start = pos;
            let mark = self.bounds.len();
            let mut quoted_newlines = 0;
            for (c, &kind) in self.kinds.iter().enumerate() {
                let Some(end) = self.ix.pop() else {
                    self.bounds.truncate(mark);
                    break 'records;
                };
                let stop = data[end];
                if Some(stop) == d.quote {
                    // A quoted TEXT field as the per-field loop reads it;
                    // a quote inside an unquoted field is its error.
                    let s = match (end == pos && kind == Kind::Text)
                        .then(|| scan_quoted(data, pos, d, &mut self.scratch))
                    {
                        Some(Ok(s)) => s,
                        _ => {
                            self.bounds.truncate(mark);
                            break 'records;
                        }
                    };
                    let fits = match s.term {
                        Term::Delim => c < last,
                        Term::Newline => c == last,
                        Term::Eof => false,
                    };
                    let Field::Slice(a, z) = s.field else {
                        self.bounds.truncate(mark);
                        break 'records;
                    };
                    if !fits {
                        self.bounds.truncate(mark);
                        break 'records;
                    }
                    self.bounds.push((a as u32, z as u32 | QUOTED));
                    quoted_newlines += s.newlines;
                    pos = s.next;
                    // The stops inside the quotes are not the record's.
                    self.ix.seek(pos);
                    continue;
                }
                // Every field but the last ends at a delimiter; the last
                // at a line end.
                if (c == last) != (stop == b'\n') {
                    self.bounds.truncate(mark);
                    break 'records;
                }
                // As `scan_field`: a CR before the line end is not data.
                let mut z = end;
                if c == last && z > pos && data[z - 1] == b'\r' {
                    z -= 1;
                }
                self.bounds.push((pos as u32, z as u32));
                pos = end + 1;
            }
            // Longer than --max-line-size: the per-field loop says so.
            if self.max_record.is_some_and(|max| pos - start > max) {
                self.bounds.truncate(mark);
                break;
            }
            newlines += quoted_newlines + 1;
            self.ends.push((pos, newlines));
        }
    }

    /// Step 2: column `c`'s fields of the first `rows` records of the run
    /// converted; how many records from the first all converted.
    fn convert(&mut self, c: usize, rows: usize, out: &BatchBuilder) -> usize {
        let data = self.data;
        let ncols = self.kinds.len();
        let delimiter = self.d.delimiter;
        let fields = self.bounds[c..].iter().step_by(ncols).take(rows);
        match (self.kinds[c], &mut self.values[c]) {
            (Kind::Integer { exact, .. }, Values::I32(v)) => fill(v, fields, |s, z| {
                if exact && zero_first(data, s) {
                    return None;
                }
                i32::try_from(int_of(data, s, z)?).ok()
            }),
            (Kind::Integer { exact, .. }, Values::I64(v)) => fill(v, fields, |s, z| {
                if exact && zero_first(data, s) {
                    return None;
                }
                int_of(data, s, z)
            }),
            // The fast paths' scans over the field alone: they take it
            // when the value ends where the field does.
            (Kind::Decimal { scale, int_digits }, Values::I64(v)) => fill(v, fields, |s, z| {
                match scan_decimal(&data[..z], s, delimiter, scale, int_digits) {
                    Some((v, Term::Eof, _)) => Some(v),
                    _ => None,
                }
            }),
            (Kind::Date, Values::I32(v)) => fill(v, fields, |s, z| {
                match scan_date(&data[..z], s, delimiter) {
                    Some((v, Term::Eof, _)) => Some(v),
                    _ => None,
                }
            }),
            (Kind::Text, _) => {
                let (mut taken, mut bytes) = (0, 0);
                for &(s, z) in fields {
                    let (s, z) = (s as usize, (z & !QUOTED) as usize);
                    if !ascii_text(&data[s..z]) {
                        break;
                    }
                    bytes += z - s;
                    taken += 1;
                }
                if out.text_fits(c, bytes) { taken } else { 0 }
            }
            _ => 0,
        }
    }

    /// Step 3: the first `rows` records' values appended to `out`.
    fn append(&mut self, rows: usize, out: &mut BatchBuilder) {
        let ncols = self.kinds.len();
        for (c, values) in self.values.iter().enumerate() {
            match values {
                Values::I32(v) => out.append_i32s(c, &v[..rows]),
                Values::I64(v) => out.append_i64s(c, &v[..rows]),
                Values::Text => {
                    for &(s, z) in self.bounds[c..].iter().step_by(ncols).take(rows) {
                        let quoted = z & QUOTED != 0;
                        let field = &self.data[s as usize..(z & !QUOTED) as usize];
                        // ASCII, and fits: checked by `convert`.
                        let _ = out.push_ascii(c, field, quoted);
                    }
                }
            }
        }
    }
}

/// `values` cleared and filled with `f` of each unquoted field's bounds
/// while it gives one; how many it gave.
#[inline(always)]
fn fill<'b, T>(
    values: &mut Vec<T>,
    fields: impl Iterator<Item = &'b (u32, u32)>,
    f: impl Fn(usize, usize) -> Option<T>,
) -> usize {
    values.clear();
    for &(s, z) in fields {
        if z & QUOTED != 0 {
            break;
        }
        match f(s as usize, z as usize) {
            Some(x) => values.push(x),
            None => break,
        }
    }
    values.len()
}

/// The integer in `data[s..z]` when it is what the integer fast path
/// takes: an optional `-` and 1 to 18 digits, nothing else.
#[inline(always)]
fn int_of(data: &[u8], s: usize, z: usize) -> Option<i64> {
    let neg = s < z && data[s] == b'-';
    let from = s + neg as usize;
    let len = z.checked_sub(from)?;
    if len == 0 || len > 18 {
        return None;
    }
    let magnitude = match super::byte_scan::digits16(data, z, len) {
        Some(v) => v,
        None => {
            let mut acc = 0u64;
            for &b in &data[from..z] {
                let d = b.wrapping_sub(b'0');
                if d > 9 {
                    return None;
                }
                acc = acc * 10 + d as u64;
            }
            acc
        }
    } as i64;
    Some(if neg { -magnitude } else { magnitude })
}
