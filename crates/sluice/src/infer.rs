//! Schema inference: delimiter, header and column types from samples.
//!
//! A file of at most [`InferOptions::whole_bytes`] is read whole (within a
//! budget of twice that over all files); of a longer one, samples are
//! taken from the start, the middle and the end (of a compressed or
//! re-encoded one, of its first `whole_bytes` read), and from several
//! files spread over the input list, so that a type that changes late in
//! a file or in a later file is seen before the load starts.
//!
//! The dialect is the one of the candidates (delimiters `,` tab `|` `;`,
//! then a space; quote `"` or none; spaces around quoted fields trimmed
//! or not; a backslash escape when the data has `\"`) that reads the
//! first file's start without error into records of one number of
//! fields, the given dialect first on ties. When none does, the error
//! says what broke each on which line. Types are tried narrowest-safe first: BIGINT, DECIMAL, DOUBLE,
//! DATE, TIMESTAMP, BOOLEAN, and TEXT when nothing else fits. Integers are
//! BIGINT (an INT guess is the classic "fails on line 8 million");
//! decimals are DECIMAL(18, s) with the largest scale seen.

use std::io::{Read, Seek, SeekFrom};

mod json;
pub use json::infer_json;

use crate::batch::{Column, DataType, Schema, validate_identifier};
use crate::error::{Error, Result};
use crate::load::Header;
use crate::parse::value;
use crate::parse::{BlankLines, Dialect, Split, read_record, read_record_quoting};
use crate::source::{Compression, Input, LineEnd};

/// Delimiters tried when none is given, in order of preference. A space
/// is tried only when none of these splits the records, as a text column
/// of words would split into as many fields on every line.
const DELIMITERS: [u8; 4] = [b',', b'\t', b'|', b';'];

/// Records of the first file's start that each candidate dialect reads:
/// 20 candidates over 1000 records cost about as much as reading the
/// types of 20,000 records.
const TRIAL_RECORDS: usize = 1000;

/// Bytes of the first file's start that each candidate dialect reads.
const TRIAL_BYTES: usize = 256 << 10;

/// What inference may assume, and what it must leave to the data.
#[derive(Debug, Clone)]
pub struct InferOptions {
    /// Field separator; `None`: detect it.
    pub delimiter: Option<u8>,
    /// Quote, escape and comment characters (the delimiter is ignored).
    pub dialect: Dialect,
    pub header: Header,
    /// Lines skipped at the start of each file.
    pub skip: u64,
    /// Look for notes above the table (a title, a description, counts)
    /// and skip them too (see [`Inferred::notes`]): false when `--skip`
    /// was given.
    pub detect_notes: bool,
    /// An unquoted field equal to this is NULL (and says nothing of types).
    pub null: Vec<u8>,
    pub date_format: Option<String>,
    pub timestamp_format: Option<String>,
    pub encoding: Option<&'static encoding_rs::Encoding>,
    /// How records end (`Auto`: from each file's start).
    pub line_end: LineEnd,
    /// Types forced by column name, whatever the samples say.
    pub types: Vec<(String, DataType)>,
    /// Bytes read per sample.
    pub sample_bytes: usize,
    /// A file of at most this many bytes (after decompression) is read
    /// whole, so that a value contradicting a type anywhere in it is seen;
    /// all files together at most twice this. 1 MiB: inference costs
    /// about 22 ms a MiB it reads (release, 5 columns), so a 16 MiB limit
    /// made `sluice load` of a 16 MiB file 3.2x slower (159 -> 517 ms);
    /// at 1 MiB a file read whole costs no more than the three samples of
    /// a longer one. A value the samples miss widens an inferred type
    /// (see `LoadOptions::widen`) instead of failing.
    pub whole_bytes: usize,
    /// Compressed or re-encoded input (whose length is not known without
    /// reading it) is read up to this many bytes, and sampled at the
    /// start, the middle and the end of what was read when it is longer
    /// than `whole_bytes`: so its samples reach beyond its first block.
    pub read_ahead_bytes: usize,
    /// Try other quoting than `dialect`'s (none, spaces around quoted
    /// fields, a backslash escape) when it does not read the data: false
    /// when the quote or escape was given.
    pub detect_quoting: bool,
    /// Files sampled, spread over the inputs (the first and last included).
    pub max_files: usize,
}

impl Default for InferOptions {
    fn default() -> Self {
        InferOptions {
            delimiter: None,
            dialect: Dialect::default(),
            header: Header::Auto,
            skip: 0,
            detect_notes: true,
            null: Vec::new(),
            date_format: None,
            timestamp_format: None,
            encoding: None,
            line_end: LineEnd::Auto,
            types: Vec::new(),
            sample_bytes: 256 << 10,
            whole_bytes: 1 << 20,
            read_ahead_bytes: 16 << 20,
            detect_quoting: true,
            max_files: 16,
        }
    }
}

/// The result: a schema and how to read the files.
#[derive(Debug, Clone, PartialEq)]
pub struct Inferred {
    pub schema: Schema,
    pub delimiter: u8,
    /// How to read the files: `delimiter`, and the quoting that reads the
    /// samples (the options' comment and blank lines as given).
    pub dialect: Dialect,
    /// Whether each file starts with a header line.
    pub header: bool,
    /// The header's names are the columns' (see `load::header`): the
    /// load recognises it by them in each file, and a file that starts
    /// with data keeps its first row. False: every file's first line is
    /// taken as the header.
    pub header_by_names: bool,
    /// Lines to skip at the start of each file: the options' `skip` and
    /// the `notes`.
    pub skip: u64,
    /// Lines of notes found above the table (after `skip`): lines that do
    /// not split like the records below them, which all do.
    pub notes: u64,
    /// JSON: the field of a top-level object that holds the rows
    /// inference read (so that the load reads the same ones, see
    /// [`LoadOptions::json_rows`](crate::load::LoadOptions::json_rows)).
    pub json_rows: Option<String>,
    /// Most records have fewer fields than the header, and none more:
    /// the missing ones are NULL (see
    /// [`LoadOptions::allow_missing_columns`](crate::load::LoadOptions::allow_missing_columns)).
    pub fill_missing: bool,
    /// The first file's line ends (never `Auto`).
    pub line_end: LineEnd,
    /// Lines starting with this byte before each file's first record are
    /// notes, not records (see [`crate::load::LoadOptions::leading_comment`]).
    pub leading_comment: Option<u8>,
    pub files_sampled: usize,
    pub samples: usize,
    pub records_sampled: u64,
    /// The numeric columns whose type the samples chose (not `types`):
    /// for [`ValueOptions::exact`](crate::batch::ValueOptions::exact), so
    /// that a value the samples missed fails the load rather than being
    /// stored changed (`0042` into a BIGINT, 20 digits into a DOUBLE).
    pub exact: Vec<String>,
    /// Every column whose type the samples chose (not `types`): for
    /// [`LoadOptions::widen`](crate::load::LoadOptions::widen), so that a
    /// value the samples missed widens the type instead of failing.
    pub widen: Vec<String>,
}

impl Inferred {
    /// `base` with what inference found of how to read the files and
    /// what table they make: the schema, dialect, header, lines to skip,
    /// notes above the data, NULL for missing trailing fields, and the
    /// columns whose type the samples chose (exact, widened).
    pub fn load_options(&self, base: crate::load::LoadOptions) -> crate::load::LoadOptions {
        let mut o = crate::load::LoadOptions {
            schema: Some(self.schema.clone()),
            dialect: self.dialect.clone(),
            header: match (self.header, self.header_by_names) {
                (true, true) => Header::Auto,
                (true, false) => Header::Yes,
                (false, _) => Header::No,
            },
            skip: self.skip,
            leading_comment: self.leading_comment,
            allow_missing_columns: base.allow_missing_columns || self.fill_missing,
            json_rows: base.json_rows.or_else(|| self.json_rows.clone()),
            widen: self.widen.clone(),
            ..base
        };
        o.values.exact = self.exact.clone();
        o
    }
}

/// One chunk of a file: its bytes, and whether it is the file's start.
struct Sample {
    data: Vec<u8>,
    start: bool,
    /// The chunk holds the whole file.
    whole: bool,
}

/// Reads up to `n` bytes.
fn read_up_to(r: &mut dyn Read, n: usize) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(n.min(1 << 20));
    r.take(n as u64).read_to_end(&mut out)?;
    Ok(out)
}

/// Samples of one input, their records ending with LF (a CR file's
/// read as the load reads it), and the input's line end. The input is
/// read whole when it has at most `o.whole_bytes` and `budget` bytes,
/// which the bytes read whole are taken from.
fn samples_of(
    input: &Input,
    o: &InferOptions,
    budget: &mut usize,
) -> Result<(Vec<Sample>, LineEnd)> {
    if !input.rereadable() {
        return Err(Error::Config(format!(
            "the schema cannot be inferred from {} (it can be read only once: a look would consume it); pass --schema",
            once_name(input)
        )));
    }
    let n = o.sample_bytes;
    let whole_max = o.whole_bytes.min(*budget).max(n);
    let (mut reader, compression, line_end) = input.open_lines(None, o.encoding, o.line_end)?;
    let plain =
        compression == Compression::None && o.encoding.is_none_or(|e| e == encoding_rs::UTF_8);
    // A plain file's length tells whether it is read whole; other input
    // is read up to `whole_max` to find out.
    let want = match (input, plain) {
        (Input::File(_), true) => match input.len() {
            Some(len) if len <= whole_max as u64 => whole_max,
            _ => n,
        },
        _ => o.read_ahead_bytes.max(whole_max),
    };
    let mut head = read_up_to(&mut reader, want + 1).map_err(|e| input.io_error(e))?;
    if head.len() <= want.min(whole_max) {
        *budget = budget.saturating_sub(head.len());
        let sample = Sample {
            data: head,
            start: true,
            whole: true,
        };
        return Ok((vec![sample], line_end));
    }
    if want > n {
        // More than a sample was read, not all of it: the start, the
        // middle and the end of what was read.
        let len = head.len();
        let chunk = |at: usize| Sample {
            data: head[at..(at + n).min(len)].to_vec(),
            start: false,
            whole: false,
        };
        let (middle, end) = (chunk(len / 2), chunk(len.saturating_sub(n)));
        head.truncate(n + 1);
        *budget = budget.saturating_sub(3 * n);
        let start = Sample {
            data: head,
            start: true,
            whole: false,
        };
        return Ok((vec![start, middle, end], line_end));
    }
    let mut out = vec![Sample {
        data: head,
        start: true,
        whole: false,
    }];
    if let (Input::File(p), true) = (input, plain) {
        let len = input.len().unwrap_or(0);
        if len > 3 * n as u64 {
            let mut f = std::fs::File::open(p).map_err(|e| Error::io(p, e))?;
            for at in [len / 2, len - n as u64] {
                f.seek(SeekFrom::Start(at)).map_err(|e| Error::io(p, e))?;
                let mut data = read_up_to(&mut f, n).map_err(|e| Error::io(p, e))?;
                if line_end == LineEnd::Cr {
                    for b in &mut data {
                        if *b == b'\r' {
                            *b = b'\n';
                        }
                    }
                }
                out.push(Sample {
                    data,
                    start: false,
                    whole: false,
                });
            }
        }
    }
    Ok((out, line_end))
}

/// The start of a file's text after `skip` lines (a UTF-8 byte order mark
/// was removed when the input was opened); `None` when nothing is left.
fn after_skip(mut data: &[u8], skip: u64) -> Option<&[u8]> {
    for _ in 0..skip {
        let i = memchr::memchr(b'\n', data)?;
        data = &data[i + 1..];
    }
    Some(data)
}

/// The lines at the start of `data` that are blank or start with
/// `comment`: the offset after them and the comment lines themselves.
fn leading_lines(data: &[u8], comment: u8) -> (usize, Vec<&[u8]>) {
    let mut at = 0;
    let mut lines = Vec::new();
    while at < data.len() {
        let rest = &data[at..];
        let blank = rest[0] == b'\n' || rest.starts_with(b"\r\n");
        if !blank && rest[0] != comment {
            break;
        }
        let end = memchr::memchr(b'\n', rest).map_or(rest.len(), |i| i + 1);
        if !blank {
            lines.push(&rest[..end]);
        }
        at += end;
    }
    (at, lines)
}

/// Walks the records of a sample, calling `f` with each record's offset
/// in the sample and its fields, or with the offset and message of a
/// record that cannot be read, until `f` returns false. A chunk from
/// inside a file starts after its first newline; records that cannot be
/// read there (a cut inside quotes) are skipped to the next line, and at
/// a file's start so is any but the first. A file's start drops `skip`
/// lines, then the lines starting with `preamble` before its first record.
fn walk(
    s: &Sample,
    d: &Dialect,
    skip: u64,
    preamble: Option<u8>,
    mut f: impl FnMut(usize, std::result::Result<Vec<Vec<u8>>, String>) -> bool,
) {
    let mut data: &[u8] = &s.data;
    if s.start {
        match after_skip(data, skip) {
            Some(rest) => data = rest,
            None => return,
        }
        if let Some(c) = preamble {
            data = &data[leading_lines(data, c).0..];
        }
    } else {
        match memchr::memchr(b'\n', data) {
            Some(i) => data = &data[i + 1..],
            None => return,
        }
    }
    let offset = |rest: &[u8]| s.data.len() - rest.len();
    let mut first = true;
    while !data.is_empty() {
        if data[0] == b'\n' || data.starts_with(b"\r\n") || d.starts_comment(data) {
            match memchr::memchr(b'\n', data) {
                Some(i) => data = &data[i + 1..],
                None => break,
            }
            continue;
        }
        match read_record(data, d, s.whole) {
            Ok(Some((fields, used, _))) if used > 0 => {
                if !f(offset(data), Ok(fields)) {
                    return;
                }
                first = false;
                data = &data[used..];
            }
            Ok(_) => break,
            Err(e) => {
                if !f(offset(data) + e.offset, Err(e.message)) || (s.start && first) {
                    return;
                }
                match memchr::memchr(b'\n', data) {
                    Some(i) => data = &data[i + 1..],
                    None => break,
                }
            }
        }
    }
}

/// The records of a sample, as raw fields (see [`walk`]).
fn records(s: &Sample, d: &Dialect, skip: u64, preamble: Option<u8>) -> Vec<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    walk(s, d, skip, preamble, |_, r| {
        if let Ok(fields) = r {
            out.push(fields);
        }
        true
    });
    out
}

/// The most common field count and how many records have it.
fn modal_count(recs: &[Vec<Vec<u8>>]) -> (usize, usize) {
    let mut counts: Vec<(usize, usize)> = Vec::new();
    for r in recs {
        match counts.iter_mut().find(|c| c.0 == r.len()) {
            Some(c) => c.1 += 1,
            None => counts.push((r.len(), 1)),
        }
    }
    counts
        .into_iter()
        .max_by_key(|&(n, k)| (k, n))
        .unwrap_or((0, 0))
}

/// The delimiter that splits the first sample's first records into the
/// same number (> 1) of fields most consistently; `want` when known.
fn sniff(s: &Sample, o: &InferOptions, want: Option<usize>, preamble: Option<u8>) -> u8 {
    let mut best = (b',', 0.0f64);
    for &delim in &DELIMITERS {
        let d = Dialect {
            delimiter: delim,
            ..o.dialect.clone()
        };
        let mut recs = records(s, &d, o.skip, preamble);
        recs.truncate(200);
        if recs.is_empty() {
            continue;
        }
        let (n, k) = modal_count(&recs);
        if n < 2 || want.is_some_and(|w| w != n) {
            continue;
        }
        let score = k as f64 / recs.len() as f64;
        if score > best.1 + 1e-9 {
            best = (delim, score);
        }
    }
    best.0
}

/// How one candidate dialect reads the start of the first file.
struct Trial {
    dialect: Dialect,
    /// Field counts, how many records have each, and the line of the
    /// first of them.
    counts: Vec<(usize, usize, u64)>,
    /// The first record that cannot be read: its line, column and why.
    error: Option<(u64, u64, String)>,
    /// A record the dialect reads, but surely not as meant: its line and
    /// why. With no quote, a field that a quote opens and closes
    /// (`"Year"`: the data is quoted, whatever breaks the quoting); with a
    /// space delimiter, an empty field (a run of spaces aligning columns).
    suspect: Option<(u64, &'static str)>,
    /// The first field of each record after the first, and whether it
    /// was quoted: row names under a header one name short.
    firsts: Vec<(Vec<u8>, bool)>,
    /// Every record after the first ends with an empty field.
    trailing_empty: bool,
    /// The first record's last field is empty (a delimiter after the
    /// last name of a header one field long).
    first_last_empty: bool,
    /// Of the non-empty fields of the records after the first (up to
    /// [`TYPED_RECORDS`]): how many, and how many are numbers, dates,
    /// timestamps or booleans (see [`typed_cell`]). Of two dialects that
    /// read every record alike, the one whose fields have types splits
    /// at the right character (`May 25, 1993|1`: the pipe).
    cells: usize,
    typed: usize,
    /// Of those fields, how many hold another candidate delimiter as no
    /// text does (see [`dirty_cell`]).
    dirty: usize,
    /// Quotes read as quotes (+1: the dialect quotes, and the records
    /// read hold its quote) or as text where they open a field (-1: the
    /// dialect has none, and a field starts with the quote).
    quote_use: i8,
}

/// Records whose fields a trial types (see [`Trial::typed`]).
const TYPED_RECORDS: usize = 200;

/// Whether a field of a reading at `delimiter` holds another candidate
/// delimiter as text does not: a tab, a pipe not between spaces, a comma
/// or semicolon not followed by a space (`Hanoi|Mar 24` read at the
/// comma; but `Lima, Peru`, `a; b` and `x | y` are text).
fn dirty_cell(v: &[u8], delimiter: u8) -> bool {
    (0..v.len()).any(|i| {
        let c = v[i];
        if c == delimiter {
            return false;
        }
        let next = v.get(i + 1).copied();
        let prev = if i > 0 { Some(v[i - 1]) } else { None };
        match c {
            b'\t' => true,
            b'|' => !(prev == Some(b' ') && next == Some(b' ')),
            b',' | b';' => next != Some(b' ') && next.is_some(),
            _ => false,
        }
    })
}

/// Whether a field is a number (also with a decimal comma, `1,5`), a
/// date, a timestamp or a boolean.
fn typed_cell(v: &[u8]) -> bool {
    let t = value::trim(v);
    // What no number, date, timestamp or boolean starts with: text.
    match t.first() {
        Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b't' | b'T' | b'f' | b'F' | b'y' | b'Y')
        | Some(b'n' | b'N' | b'i' | b'I') => {}
        _ => return false,
    }
    let comma_decimal = || {
        let body = t.strip_prefix(b"-").unwrap_or(t);
        match memchr::memchr(b',', body) {
            Some(i) => {
                i > 0
                    && i + 1 < body.len()
                    && body[..i].iter().all(u8::is_ascii_digit)
                    && body[i + 1..].iter().all(u8::is_ascii_digit)
            }
            None => false,
        }
    };
    is_number(t)
        || comma_decimal()
        || value::parse_date(t, None).is_ok()
        || value::parse_timestamptz(t, None).is_ok()
        || value::parse_bool(t).is_ok()
}

impl Trial {
    fn records(&self) -> usize {
        self.counts.iter().map(|c| c.1).sum()
    }

    /// The most common field count and how many records have it.
    fn modal(&self) -> (usize, usize) {
        self.counts
            .iter()
            .map(|&(n, k, _)| (n, k))
            .max_by_key(|&(n, k)| (k, n))
            .unwrap_or((0, 0))
    }

    /// Whether it reads every record without error into more than one
    /// field, `want` fields when known, and (with `consistent`) the same
    /// number in every record but perhaps the first (a header one name
    /// short, over row names, or one longer, see [`header_fits`]).
    fn reads(&self, want: Option<usize>, consistent: bool) -> bool {
        let (n, _) = self.modal();
        self.error.is_none()
            && self.suspect.is_none()
            && n >= 2
            && want.is_none_or(|w| w == n)
            && (!consistent || self.consistent())
    }

    /// Every record has the modal count, but perhaps a first record one
    /// field off: a header one name long, or one name short where the
    /// records below say why (see [`short_header_evidence`]).
    fn consistent(&self) -> bool {
        let (n, _) = self.modal();
        let first_line = self.counts.iter().map(|c| c.2).min().unwrap_or(0);
        match self.counts.as_slice() {
            [_] => true,
            [a, b] => {
                let (one, rest) = if a.0 == n { (b, a) } else { (a, b) };
                one.1 == 1
                    && rest.1 >= 2
                    && one.2 == first_line
                    && ((one.0 == n + 1 && self.first_last_empty)
                        || (one.0 + 1 == n
                            && short_header_evidence(&self.firsts, self.trailing_empty)))
                    && one.0 >= 1
            }
            _ => false,
        }
    }

    /// What broke it, for an error message.
    fn why(&self, want: Option<usize>) -> String {
        if let Some((line, column, message)) = &self.error {
            return format!("line {line}, column {column}: {message}");
        }
        if let Some((line, why)) = self.suspect {
            return format!("line {line}: {why}");
        }
        let (n, _) = self.modal();
        match self.counts.as_slice() {
            [] => "no records".into(),
            _ if n < 2 => "one field per record".into(),
            _ if want.is_some_and(|w| w != n) => {
                format!("{n} fields per record, {} wanted", want.unwrap_or(0))
            }
            [a, b, ..] => {
                let (a, b) = if a.2 <= b.2 { (a, b) } else { (b, a) };
                format!("{} fields on line {}, {} on line {}", a.0, a.2, b.0, b.2)
            }
            [_] => "reads the records".into(),
        }
    }
}

/// Whether the records below a first record one field short of them say
/// why it is short, so that it is a header: every one ends with an empty
/// field (a delimiter after the last value, none after the last name), or
/// their first fields are row names, as R's `write.table` writes them
/// under a header with no name over them: integers rising from the
/// first record on, or distinct values, quoted. Without such evidence a
/// short first line is a title, or the table is one column whose values
/// hold the delimiter (`name` over `John Smith`).
fn short_header_evidence(firsts: &[(Vec<u8>, bool)], trailing_empty: bool) -> bool {
    if firsts.len() < 2 {
        return false;
    }
    if trailing_empty {
        return true;
    }
    // Unquoted integers are no evidence: `amount` over `1,000`, `2,500`
    // is one column of numbers with a thousands comma, not a header
    // over row names 1 and 2 (R's `write.table` quotes its row names).
    let mut names: Vec<&[u8]> = firsts.iter().map(|(v, _)| v.as_slice()).collect();
    names.sort_unstable();
    firsts.iter().all(|(v, quoted)| *quoted && !v.is_empty())
        && names.windows(2).all(|w| w[0] != w[1])
}

/// Why a record that `d` reads is surely not read as meant, if it is:
/// with no quote, a field that `text_quote` opens and closes (`"Year"`:
/// the data is quoted, whatever breaks the quoting), or a quoted span
/// holding the delimiter (see [`splits_in_quotes`]); a tab inside an
/// unquoted field of a delimiter other than tab (the file is split at
/// the wrong character: `May 25, 1993<TAB>1` is no comma-separated
/// `May 25` and ` 1993<TAB>1`); with a single space delimiter, an
/// empty field (a run of spaces aligning columns). `rest`: the data
/// from the record's start.
fn suspect(
    d: &Dialect,
    fields: &[Vec<u8>],
    rest: &[u8],
    text_quote: Option<u8>,
) -> Option<&'static str> {
    let line = &rest[..memchr::memchr(b'\n', rest).unwrap_or(rest.len())];
    let in_quotes = |f: &Vec<u8>| {
        let f = value::trim(f);
        f.len() >= 2 && Some(f[0]) == text_quote && Some(f[f.len() - 1]) == text_quote
    };
    if d.quote.is_none() && fields.iter().any(in_quotes) {
        return Some("a field in quotes");
    }
    if d.quote.is_none()
        && text_quote.is_some_and(|q| match d.split {
            Split::Delimiter => splits_in_quotes(line, d.delimiter, q),
            Split::Whitespace => {
                splits_in_quotes(line, b' ', q) || splits_in_quotes(line, b'\t', q)
            }
            Split::Line => false,
        })
    {
        return Some("the delimiter inside a quoted field");
    }
    if d.split == Split::Delimiter
        && d.delimiter != b'\t'
        && fields.iter().any(|f| f.contains(&b'\t'))
    {
        let quoted = match read_record_quoting(rest, d, true) {
            Ok(Some((_, q, _, _))) => q,
            _ => Vec::new(),
        };
        let bare_tab = fields
            .iter()
            .enumerate()
            .any(|(i, f)| f.contains(&b'\t') && !quoted.get(i).copied().unwrap_or(false));
        if bare_tab {
            return Some("a tab inside an unquoted field");
        }
    }
    if (d.delimiter == b' ' || d.split == Split::Whitespace)
        && d.split != Split::Line
        && fields
            .iter()
            .any(|f| f.contains(&b'|') || f.contains(&b'\t'))
    {
        return Some("a pipe or a tab inside a field split at spaces");
    }
    if d.delimiter == b' ' && d.split == Split::Delimiter && fields.iter().any(Vec::is_empty) {
        return Some(
            "an empty field: columns aligned by runs of spaces are not read as one delimiter",
        );
    }
    None
}

/// Whether the record at the start of `rest` starts with a quoted field.
fn starts_quoted(rest: &[u8], d: &Dialect) -> bool {
    let skip = match d.split {
        Split::Whitespace => rest
            .iter()
            .take_while(|c| **c == b' ' || **c == b'\t')
            .count(),
        _ if d.trim_around_quotes => rest.iter().take_while(|c| **c == b' ').count(),
        _ => 0,
    };
    d.quote.is_some() && rest.get(skip).copied() == d.quote
}

/// Whether `line` (one line of a file) holds a span that `quote` opens at
/// the start of a field and closes at the end of one, as a field would be
/// quoted under any of the candidate delimiters, with `delimiter` inside
/// it: read with no quote at `delimiter`, the line is split inside a
/// quoted field (`"Dec 8, 2022"` is one value, not two).
fn splits_in_quotes(line: &[u8], delimiter: u8, quote: u8) -> bool {
    let boundary = |c: u8| DELIMITERS.contains(&c) || matches!(c, b' ' | b'\r' | b'\n');
    let mut i = 0;
    while i < line.len() {
        if line[i] != quote || (i > 0 && !boundary(line[i - 1])) {
            i += 1;
            continue;
        }
        // The quote that closes it: one not doubled, before a boundary.
        let mut j = i + 1;
        let mut close = None;
        while j < line.len() {
            if line[j] == quote {
                if line.get(j + 1) == Some(&quote) {
                    j += 2;
                    continue;
                }
                if line.get(j + 1).is_none_or(|&c| boundary(c)) {
                    close = Some(j);
                }
                break;
            }
            j += 1;
        }
        match close {
            Some(j) if line[i + 1..j].contains(&delimiter) => return true,
            Some(j) => i = j + 1,
            None => i += 1,
        }
    }
    false
}

/// A dialect's delimiter's name in messages.
fn delimiter_name(d: &Dialect) -> String {
    match d.split {
        Split::Whitespace => return "whitespace".into(),
        Split::Line => return "none".into(),
        Split::Delimiter => {}
    }
    match d.delimiter {
        b',' => "comma".into(),
        b'\t' => "tab".into(),
        b'|' => "pipe".into(),
        b';' => "semicolon".into(),
        b' ' => "space".into(),
        c => format!("{:?}", c as char),
    }
}

/// How a dialect quotes, in words (`quote '"'`, `quote none`, `escape
/// '\'`, `spaces around quoted fields trimmed`), for messages and the
/// printed summary.
pub fn quoting_words(d: &Dialect) -> Vec<String> {
    let mut out = Vec::new();
    match d.quote {
        None => out.push("quote none".to_string()),
        Some(q) => out.push(format!("quote '{}'", q as char)),
    }
    if let Some(e) = d.distinct_escape() {
        out.push(format!("escape '{}'", e as char));
    }
    if d.trim_around_quotes {
        out.push("spaces around quoted fields trimmed".into());
    }
    out
}

/// Reads the start of `s` (its first [`TRIAL_RECORDS`] records in its
/// first [`TRIAL_BYTES`]) with `d`; `text_quote` is the quote that `d`,
/// if it has none, reads as text.
fn trial(
    s: &Sample,
    d: &Dialect,
    skip: u64,
    preamble: Option<u8>,
    text_quote: Option<u8>,
) -> Trial {
    // Whole lines only, read to their end: an error is an error, except
    // a quote still open where the lines were cut.
    let cut = s.data.len() > TRIAL_BYTES || !s.whole;
    let mut data = &s.data[..s.data.len().min(TRIAL_BYTES)];
    if cut {
        data = memchr::memrchr(b'\n', data).map_or(&data[..0], |i| &data[..i + 1]);
    }
    let part = Sample {
        data: data.to_vec(),
        start: true,
        whole: true,
    };
    let place = |at: usize| {
        let before = &part.data[..at.min(part.data.len())];
        let line = memchr::memchr_iter(b'\n', before).count() as u64 + 1;
        let column = before.len() - memchr::memrchr(b'\n', before).map_or(0, |i| i + 1) + 1;
        (line, column as u64)
    };
    let mut t = Trial {
        dialect: d.clone(),
        counts: Vec::new(),
        error: None,
        suspect: None,
        firsts: Vec::new(),
        trailing_empty: true,
        first_last_empty: false,
        cells: 0,
        typed: 0,
        dirty: 0,
        quote_use: match d.quote {
            Some(q) if memchr::memchr(q, &part.data).is_some() => 1,
            _ => 0,
        },
    };
    let mut first = true;
    walk(&part, d, skip, preamble, |at, r| {
        match r {
            Ok(fields) => {
                if d.quote.is_none()
                    && fields.iter().any(|f| {
                        value::trim(f).first().copied() == text_quote && text_quote.is_some()
                    })
                {
                    t.quote_use = -1;
                }
                if t.suspect.is_none()
                    && let Some(why) = suspect(d, &fields, &part.data[at..], text_quote)
                {
                    t.suspect = Some((place(at).0, why));
                }
                if first {
                    t.first_last_empty = fields.last().is_some_and(|f| value::trim(f).is_empty());
                }
                if !std::mem::replace(&mut first, false) {
                    if t.firsts.len() < TYPED_RECORDS {
                        for f in &fields {
                            let v = value::trim(f);
                            if !v.is_empty() && !is_na_like(v) {
                                t.cells += 1;
                                if typed_cell(v) {
                                    t.typed += 1;
                                } else if d.split != Split::Line && dirty_cell(v, d.delimiter) {
                                    t.dirty += 1;
                                }
                            }
                        }
                    }
                    t.trailing_empty &= fields.last().is_some_and(Vec::is_empty);
                    let quoted = starts_quoted(&part.data[at..], d);
                    t.firsts
                        .push((fields.first().cloned().unwrap_or_default(), quoted));
                }
                match t.counts.iter_mut().find(|c| c.0 == fields.len()) {
                    Some(c) => c.1 += 1,
                    None => t.counts.push((fields.len(), 1, place(at).0)),
                }
            }
            Err(message) => {
                if !(cut && message.starts_with("unterminated quoted field")) {
                    let (line, column) = place(at);
                    t.error = Some((line, column, message));
                }
                return false;
            }
        }
        t.records() < TRIAL_RECORDS
    });
    t
}

/// The candidate dialects with delimiter `delimiter`, the given quoting
/// first: a backslash escape when `data` has one before a quote, spaces
/// around quoted fields trimmed, no quote.
fn candidates(delimiter: u8, o: &InferOptions, data: &[u8]) -> Vec<Dialect> {
    let given = Dialect {
        delimiter,
        ..o.dialect.clone()
    };
    let mut out = vec![given.clone()];
    let Some(q) = given.quote.filter(|_| o.detect_quoting) else {
        return out;
    };
    let escape = given.escape.is_none()
        && q != b'\\'
        && delimiter != b'\\'
        && memchr::memmem::find(data, &[b'\\', q]).is_some();
    if escape {
        out.push(Dialect {
            escape: Some(b'\\'),
            ..given.clone()
        });
    }
    if delimiter != b' ' {
        out.push(Dialect {
            trim_around_quotes: true,
            ..given.clone()
        });
    }
    out.push(Dialect {
        quote: None,
        escape: None,
        ..given
    });
    out
}

/// The candidates split at a single space, then the same split at runs of
/// whitespace (tried when no other delimiter reads every record alike).
fn space_candidates(o: &InferOptions, data: &[u8]) -> Vec<Dialect> {
    let spaces = candidates(b' ', o, data);
    let runs: Vec<Dialect> = spaces
        .iter()
        .map(|d| Dialect {
            split: Split::Whitespace,
            ..d.clone()
        })
        .collect();
    spaces.into_iter().chain(runs).collect()
}

/// The dialect that reads the first sample `s`: of the candidates (see
/// [`candidates`]) that read its start without error into records of
/// more than one field (`want` when known), the one whose records most
/// often have the same count, the earlier on ties. Quoting other than
/// the given one, a space delimiter and runs of whitespace must give
/// every record the same count (see [`Trial::consistent`]); they are
/// tried when no other delimiter does. `Err`: every trial, none reads it.
fn choose_dialect(
    s: &Sample,
    o: &InferOptions,
    want: Option<usize>,
    preamble: Option<u8>,
) -> std::result::Result<Dialect, Vec<Trial>> {
    choose(s, o, want, preamble, false)
        .map(|(d, _)| d)
        .map_err(|e| match e {
            NoDialect::Trials(t) => t,
            NoDialect::Ambiguous(_) => Vec::new(),
        })
}

/// [`choose_dialect`], and whether every record (but perhaps a header
/// one field off) has the same count.
fn choose(
    s: &Sample,
    o: &InferOptions,
    want: Option<usize>,
    preamble: Option<u8>,
    comments: bool,
) -> std::result::Result<(Dialect, bool), NoDialect> {
    let head = &s.data[..s.data.len().min(TRIAL_BYTES)];
    let delimiters = match o.delimiter {
        Some(d) => vec![d],
        None => DELIMITERS.to_vec(),
    };
    let given = |d: &Dialect| {
        d.quote == o.dialect.quote && d.escape == o.dialect.escape && !d.trim_around_quotes
    };
    let mut trials: Vec<Trial> = Vec::new();
    let mut best: Option<(usize, f64)> = None;
    // Candidates of the first pass that read every record alike (but
    // perhaps a header one off): the index of each.
    let mut alike: Vec<usize> = Vec::new();
    for pass in [false, true] {
        let space = pass && o.delimiter.is_none();
        let all_read = |best: Option<(usize, f64)>, trials: &[Trial]| {
            best.is_some_and(|(i, _)| trials[i].counts.len() == 1)
        };
        if pass && (all_read(best, &trials) || !space) {
            break;
        }
        let mut tried: Vec<Dialect> = if space {
            space_candidates(o, head)
        } else {
            delimiters
                .iter()
                .flat_map(|&delimiter| candidates(delimiter, o, head))
                .collect()
        };
        // Lines starting with `#` among the records: each candidate
        // again with them as comments, after all without (which wins
        // ties: `#ff0000,red` is data).
        if comments && !space && o.dialect.comment.is_none() && has_hash_line(head) {
            let commented: Vec<Dialect> = tried
                .iter()
                .map(|d| Dialect {
                    comment: Some(COMMENT),
                    ..d.clone()
                })
                .collect();
            tried.extend(commented);
        }
        for d in tried {
            let t = trial(s, &d, o.skip, preamble, o.dialect.quote);
            // A space splits one line of words as well as a table: it
            // needs two records alike at least.
            // Nor may its fields hold another delimiter (`Silva;Mar`),
            // and some must be numbers, dates or booleans: lines of
            // words (`Ada Lovelace`) split as well.
            // Nor when the records whole (one field each) are typed as
            // often as its fields: `2020-12-30 01:25:58` is one value.
            let rate = |t: &Trial| t.typed as f64 / t.cells.max(1) as f64;
            let one_field = trials
                .first()
                .filter(|f| f.modal().0 == 1 && f.dialect.delimiter == b',')
                .map_or(0.0, rate);
            if t.reads(want, space || !given(&d))
                && (!space
                    || (t.records() >= 2
                        && t.dirty == 0
                        && t.typed * 2 >= t.firsts.len().min(TYPED_RECORDS)
                        && rate(&t) > one_field))
            {
                let (_, k) = t.modal();
                let score = k as f64 / t.records() as f64;
                // Every record alike, then all but a header one off.
                let score = match (t.counts.len(), t.consistent()) {
                    (1, _) => 1.0,
                    (_, true) => 1.0 - 1e-6,
                    _ => score,
                };
                // `#` lines as comments only where reading them as data
                // does not make every record alike (`#12,Fix bug,3` is
                // data).
                let plain_alike = d.comment.is_some()
                    && alike.iter().any(|&i| {
                        trials[i].dialect
                            == Dialect {
                                comment: None,
                                ..d.clone()
                            }
                    });
                if !space && score >= 1.0 - 1e-6 && !plain_alike {
                    alike.push(trials.len());
                }
                if best.is_none_or(|(_, b)| score > b + 1e-9) {
                    best = Some((trials.len(), score));
                }
            }
            trials.push(t);
        }
    }
    // Of the dialects that read every record alike, the one whose fields
    // are typed most often (the earliest, the given quoting and RFC
    // 4180's comma first, on ties of one delimiter). Two delimiters tied
    // are two readings of the file that nothing tells apart: refused.
    // (Unless a split at spaces reads every record alike where these
    // read all but a header one off.)
    if alike.len() > 1 && best.is_some_and(|(i, _)| alike.contains(&i)) {
        let rate = |t: &Trial| {
            let full = t.counts.len() == 1;
            let r = (t.typed as f64 - t.dirty as f64) / t.cells.max(1) as f64;
            ((t.dirty == 0, full, t.quote_use), r)
        };
        let top = alike
            .iter()
            .copied()
            .max_by(|&a, &b| {
                let (fa, ra) = rate(&trials[a]);
                let (fb, rb) = rate(&trials[b]);
                fa.cmp(&fb)
                    .then(ra.partial_cmp(&rb).unwrap_or(std::cmp::Ordering::Equal))
                    // The earlier wins ties.
                    .then(b.cmp(&a))
            })
            .unwrap_or(alike[0]);
        // Quotes around fields that span lines which, the quotes read as
        // text, split like every other record (`"Hello<TAB>5` over
        // `2<TAB>world"`): quoting, or data?
        let t = &trials[top];
        let as_text = alike.iter().find(|&&i| {
            let o = &trials[i].dialect;
            o.quote.is_none()
                && t.dialect.quote.is_some()
                && o.delimiter == t.dialect.delimiter
                && o.split == t.dialect.split
                && trials[i].records() != t.records()
        });
        if as_text.is_some() {
            return Err(NoDialect::Ambiguous(format!(
                "quoted fields hold line ends, and with the quotes read as text every line splits alike at the {}: give --quote '\"' to read them as quotes, or --quote none",
                delimiter_name(&t.dialect)
            )));
        }
        let (ft, rt) = rate(&trials[top]);
        let rival = alike.iter().copied().find(|&i| {
            let (f, r) = rate(&trials[i]);
            i != top
                && f == ft
                && (r - rt).abs() < 1e-9
                && (trials[i].dialect.delimiter != trials[top].dialect.delimiter
                    || trials[i].dialect.split != trials[top].dialect.split)
        });
        if let Some(r) = rival {
            let (a, b) = (&trials[top], &trials[r]);
            let name = |t: &Trial| {
                format!(
                    "{} ({} fields a record)",
                    delimiter_name(&t.dialect),
                    t.modal().0
                )
            };
            return Err(NoDialect::Ambiguous(format!(
                "two delimiters split every record alike, and nothing in the data tells which is meant: {} and {}; give --delimiter",
                name(a),
                name(b)
            )));
        }
        best = Some((top, 1.0));
    }
    match best {
        Some((i, _)) => {
            // Fields holding another delimiter (`Sales by city, 2024` over
            // `May 25, 1993|1`, read at the comma): alike, but perhaps
            // only because notes above a table split so; notes are
            // looked for, as when the records are not alike.
            let consistent = trials[i].consistent() && trials[i].dirty == 0;
            Ok((trials.swap_remove(i).dialect, consistent))
        }
        None => Err(NoDialect::Trials(trials)),
    }
}

/// Whether a line of `data` starts with [`COMMENT`] (after spaces and
/// tabs).
fn has_hash_line(data: &[u8]) -> bool {
    let starts = |line: &[u8]| line.iter().find(|&&b| b != b' ' && b != b'\t') == Some(&COMMENT);
    data.split(|&b| b == b'\n').any(starts)
}

/// Why [`choose`] chose no dialect.
enum NoDialect {
    /// None reads the file: every trial.
    Trials(Vec<Trial>),
    /// Two read it alike, and nothing tells which is meant: why.
    Ambiguous(String),
}

/// Why no dialect reads a file: each candidate tried and what broke it,
/// the delimiters of one quoting that the same thing broke together.
fn no_dialect_message(trials: &[Trial], want: Option<usize>) -> String {
    let mut groups: Vec<(String, String, Vec<String>)> = Vec::new();
    for t in trials {
        let quoting = quoting_words(&t.dialect).join(", ");
        let why = t.why(want);
        let name = delimiter_name(&t.dialect);
        match groups.iter_mut().find(|g| g.0 == quoting && g.1 == why) {
            Some(g) => g.2.push(name),
            None => groups.push((quoting, why, vec![name])),
        }
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|(quoting, why, names)| format!("{} with {quoting}: {why}", names.join(", ")))
        .collect();
    format!(
        "no records to infer a schema from: no dialect reads its first records (tried {}); give --delimiter, --quote or --schema",
        parts.join("; ")
    )
}

/// How the inputs of a table whose columns are known read: see
/// [`sniff_delimiter`].
#[derive(Debug, Clone, PartialEq)]
pub struct Sniffed {
    pub dialect: Dialect,
    /// The byte of the comment lines above the data (see
    /// [`Inferred::leading_comment`]).
    pub leading_comment: Option<u8>,
    /// Lines to skip at each file's start: the options' `skip` and the
    /// `notes`.
    pub skip: u64,
    /// Lines of notes found above the table (see [`Inferred::notes`]).
    pub notes: u64,
}

/// An input that can be read only once, as messages name it.
pub(crate) fn once_name(input: &Input) -> String {
    match input {
        Input::Stdin => "standard input".into(),
        Input::File(p) => format!("{}, a pipe or device", p.display()),
    }
}

/// The dialect for records of `columns` fields (any number above one
/// when `None`; `o.delimiter` when given), from the first input's start
/// (`o.dialect` with a `,` when no candidate reads records consistently),
/// the comment lines above its data, and the lines of notes above the
/// table when no dialect reads every record from the first line alike.
pub fn sniff_delimiter(
    inputs: &[Input],
    o: &InferOptions,
    columns: Option<usize>,
) -> Result<Sniffed> {
    let fallback = Dialect {
        delimiter: o.delimiter.unwrap_or(b','),
        ..o.dialect.clone()
    };
    let small = InferOptions {
        sample_bytes: 64 << 10,
        ..o.clone()
    };
    // The first file that is not empty (an empty one is 0 rows), among
    // as many as inference samples.
    for input in inputs.iter().take(o.max_files.max(1)) {
        // Standard input (or a pipe) cannot be read twice: the default
        // then.
        if !input.rereadable() {
            break;
        }
        let (samples, _) = samples_of(input, &small, &mut 0)?;
        if let Some(s) = samples.first().filter(|s| !s.data.is_empty()) {
            let preamble = leading_comment(s, o);
            let chosen = choose(s, o, columns, preamble, false);
            let comments = matches!(&chosen, Ok((d, false))
                if d.comment.is_none() && comments_among(s, d, o.skip, preamble));
            if !matches!(chosen, Ok((_, true)))
                && !comments
                && o.detect_notes
                && let Some((notes, dialect)) = find_notes(s, o, columns, true)
            {
                return Ok(Sniffed {
                    dialect,
                    leading_comment: None,
                    skip: o.skip + notes,
                    notes,
                });
            }
            if let Err(NoDialect::Ambiguous(why)) = &chosen {
                return Err(Error::Input {
                    path: input.display_name(),
                    message: why.clone(),
                });
            }
            let dialect = chosen.map(|(d, _)| d).unwrap_or_else(|_| Dialect {
                delimiter: o
                    .delimiter
                    .unwrap_or_else(|| sniff(s, o, columns, preamble)),
                ..o.dialect.clone()
            });
            return Ok(Sniffed {
                dialect,
                leading_comment: preamble,
                skip: o.skip,
                notes: 0,
            });
        }
    }
    Ok(Sniffed {
        dialect: fallback,
        leading_comment: None,
        skip: o.skip,
        notes: 0,
    })
}

/// What starts the comment lines inference looks for above the data.
const COMMENT: u8 = b'#';

/// `#` when the file's start (after `skip` lines) is a run of lines
/// starting with `#` above records of two or more fields, and some of
/// those lines do not split into as many fields: notes a tool wrote
/// above the data, not records. Only that run is skipped, never a `#`
/// line below it (`#ff0000,red` is data); `None` when `--comment` is
/// given.
fn leading_comment(s: &Sample, o: &InferOptions) -> Option<u8> {
    if o.dialect.comment.is_some() || !s.start {
        return None;
    }
    let data = after_skip(&s.data, o.skip)?;
    let (at, lines) = leading_lines(data, COMMENT);
    if lines.is_empty() || at == data.len() {
        return None;
    }
    let rest = Sample {
        data: data[at..].to_vec(),
        start: true,
        whole: s.whole,
    };
    let plain = InferOptions {
        skip: 0,
        ..o.clone()
    };
    let d = choose_dialect(&rest, &plain, None, None).unwrap_or_else(|_| Dialect {
        delimiter: o
            .delimiter
            .unwrap_or_else(|| sniff(&rest, &plain, None, None)),
        ..o.dialect.clone()
    });
    let (n, _) = modal_count(&records(&rest, &d, 0, None));
    let splits_like_data = |line: &&[u8]| {
        read_record(line, &d, true)
            .ok()
            .flatten()
            .is_some_and(|(fields, _, _)| fields.len() == n)
    };
    (n >= 2 && !lines.iter().all(splits_like_data)).then_some(COMMENT)
}

/// Which types a column's values allow so far.
#[derive(Debug, Clone)]
struct Candidates {
    bigint: bool,
    decimal: bool,
    double: bool,
    date: bool,
    timestamp: bool,
    /// Every value a timestamp with a UTC offset or `Z` (TIMESTAMPTZ).
    timestamptz: bool,
    /// Every value a time of day `HH:MM:SS[.fraction]` (TIME).
    time: bool,
    boolean: bool,
    /// Largest scale and integer digits of the decimals seen.
    scale: u8,
    int_digits: u8,
    values: u64,
}

impl Candidates {
    fn new() -> Self {
        Candidates {
            bigint: true,
            decimal: true,
            double: true,
            date: true,
            timestamp: true,
            timestamptz: true,
            time: true,
            boolean: true,
            scale: 0,
            int_digits: 0,
            values: 0,
        }
    }

    fn see(&mut self, v: &[u8], o: &InferOptions) {
        let t = value::trim(v);
        self.values += 1;
        // A number type only for values it gives back as written: no `+`,
        // no leading zeros (`02134` is a code, not 2134), no digits lost.
        let number = value::NumberText::parse(t);
        let kept = |name: &str, negative_zero: bool| {
            number.is_some_and(|n| n.unkept_form(name, negative_zero).is_none())
        };
        if self.bigint && (value::parse_i64(t).is_err() || !kept("BIGINT", false)) {
            self.bigint = false;
        }
        if self.decimal && !kept("DECIMAL", false) {
            self.decimal = false;
        }
        if self.decimal {
            match decimal_shape(t) {
                Some((int_digits, scale)) => {
                    self.int_digits = self.int_digits.max(int_digits);
                    self.scale = self.scale.max(scale);
                    if self.int_digits as usize + self.scale as usize > 18 {
                        self.decimal = false;
                    }
                }
                None => self.decimal = false,
            }
        }
        if self.double
            && (number.is_none()
                || !value::parse_f64(t).is_ok_and(|f| value::check_f64_exact(t, f).is_ok()))
        {
            self.double = false;
        }
        if self.date && value::parse_date(t, o.date_format.as_deref()).is_err() {
            self.date = false;
        }
        if self.timestamp && value::parse_timestamp(t, o.timestamp_format.as_deref()).is_err() {
            self.timestamp = false;
        }
        if self.timestamptz
            && !value::timestamp_has_zone(t, o.timestamp_format.as_deref()).unwrap_or(false)
        {
            self.timestamptz = false;
        }
        if self.time && !value::is_strict_time(t) {
            self.time = false;
        }
        // 0 and 1 are numbers first; a BOOLEAN column says true/false.
        if self.boolean && (value::parse_bool(t).is_err() || t.iter().all(u8::is_ascii_digit)) {
            self.boolean = false;
        }
    }

    /// Adds what `other`'s values allow (values of the same column).
    fn merge(&mut self, other: &Candidates) {
        self.bigint &= other.bigint;
        self.decimal &= other.decimal;
        self.double &= other.double;
        self.date &= other.date;
        self.timestamp &= other.timestamp;
        self.timestamptz &= other.timestamptz;
        self.time &= other.time;
        self.boolean &= other.boolean;
        self.scale = self.scale.max(other.scale);
        self.int_digits = self.int_digits.max(other.int_digits);
        if self.int_digits as usize + self.scale as usize > 18 {
            self.decimal = false;
        }
        self.values += other.values;
    }

    fn pick(&self) -> DataType {
        if self.values == 0 {
            DataType::Text
        } else if self.bigint {
            DataType::BigInt
        } else if self.decimal {
            DataType::Decimal {
                precision: 18,
                scale: self.scale,
            }
        } else if self.double {
            DataType::Double
        } else if self.date {
            DataType::Date
        } else if self.timestamp {
            DataType::Timestamp
        } else if self.timestamptz {
            DataType::TimestampTz
        } else if self.time {
            DataType::Time
        } else if self.boolean {
            DataType::Boolean
        } else {
            DataType::Text
        }
    }
}

/// Integer digits and scale of a plain decimal (`-12.50`), or `None`.
fn decimal_shape(t: &[u8]) -> Option<(u8, u8)> {
    let body = match t.first() {
        Some(b'-' | b'+') => &t[1..],
        _ => t,
    };
    let (int, frac) = match memchr::memchr(b'.', body) {
        Some(i) => (&body[..i], &body[i + 1..]),
        None => (body, &body[..0]),
    };
    if (int.is_empty() && frac.is_empty())
        || !int.iter().chain(frac).all(u8::is_ascii_digit)
        || int.len() > 18
        || frac.len() > 18
    {
        return None;
    }
    let int_digits = int.iter().skip_while(|&&c| c == b'0').count();
    Some((int_digits as u8, frac.len() as u8))
}

/// A column name from a header field: lower case, letters, digits and
/// `_`, not starting with a digit; `c<N>` when nothing is left.
fn column_name(raw: &[u8], n: usize, taken: &[String]) -> String {
    let mut name = crate::load::normalize_name(raw);
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, 'c');
    }
    name.truncate(60);
    if name.is_empty() || validate_identifier(&name, "column").is_err() {
        name = format!("c{n}");
    }
    let base = name.clone();
    let mut k = 2;
    while taken.iter().any(|t| t.eq_ignore_ascii_case(&name)) {
        name = format!("{base}_{k}");
        k += 1;
    }
    name
}

/// The column names inference gives a header's fields.
pub(crate) fn column_names(fields: &[Vec<u8>]) -> Vec<String> {
    let mut names: Vec<String> = Vec::with_capacity(fields.len());
    for (c, raw) in fields.iter().enumerate() {
        let name = column_name(raw, c + 1, &names);
        names.push(name);
    }
    names
}

/// Whether inference names `cols` after the header `fields`
/// (`Order ID`: order_id; an empty name: c<N> at position N). Fields
/// with no letter other than empty ones never match, nor do only empty
/// fields: `1,2` and `,` are data, not the names c1, c2.
pub(crate) fn named_by(fields: &[Vec<u8>], cols: &[Column]) -> bool {
    let letters = |f: &[u8]| f.iter().any(u8::is_ascii_alphabetic);
    fields.len() == cols.len()
        && fields.iter().any(|f| letters(f))
        && fields
            .iter()
            .all(|f| value::trim(f).is_empty() || letters(f))
        && column_names(fields)
            .iter()
            .zip(cols)
            .all(|(n, c)| n.eq_ignore_ascii_case(&c.name))
}

/// What the first record of a file is, by the evidence of the records
/// below it.
#[derive(Debug, Clone, PartialEq)]
enum HeaderCall {
    Header,
    Data,
    /// The evidence disagrees, or there is none: why, for the refusal
    /// that names `--header` and `--no-header`.
    Unsure(String),
}

/// Whether the first record is a header, by evidence, never by its
/// position alone:
/// - R's `write.csv`/`write.table` header: an empty name over row names
///   (rising integers, or distinct text), names or quoted fields over the
///   other columns; alone in a file, an export with no rows.
/// - Quoting: every field of the first record quoted, over a column
///   whose values never are (`"","1","2"` over `"1",50,19`).
/// - Types: a first value that is not of its column's type (a word over
///   numbers, dates or timestamps) says header; one that is says data.
///   Both at once, in different columns, is refused. A word over
///   `true`/`false` or `y`/`n` is weaker: a number that fits its column
///   outweighs it (`1,x` over `2,y` is data).
/// - Every column text: a name-like first record (short, distinct, not
///   repeated below) is a header when some column's values below never
///   have the shape of its name (letters in other cases, digits, spaces,
///   punctuation), or when no record follows; otherwise refused.
fn header_call(
    first: &[Vec<u8>],
    first_quoted: &[bool],
    rest: &[Candidates],
    rest_values: &[Vec<&[u8]>],
    rest_quoted: &[(usize, usize)],
    o: &InferOptions,
) -> HeaderCall {
    let no_rows = rest_values.iter().all(Vec::is_empty);
    let all_quoted = first_quoted.len() == first.len() && first_quoted.iter().all(|&q| q);
    if first.len() >= 2 && value::trim(&first[0]).is_empty() {
        if no_rows && all_quoted {
            return HeaderCall::Header;
        }
        if rest_values.first().is_some_and(|v| rising(v))
            && (names_like(first, rest_values, 1) || all_quoted)
        {
            return HeaderCall::Header;
        }
        if all_quoted
            && rest.first().is_some_and(|c| c.pick() == DataType::Text)
            && text_row_names_header(first, rest_values)
        {
            return HeaderCall::Header;
        }
    }
    // Quoted where no quote is needed (no delimiter, quote, line end or
    // space at an end to protect), over values that are never quoted.
    let needs_quotes = |v: &[u8]| {
        v.iter()
            .any(|&c| matches!(c, b',' | b'\t' | b'|' | b';' | b'"' | b'\n' | b'\r'))
            || v.first() == Some(&b' ')
            || v.last() == Some(&b' ')
    };
    if all_quoted
        && !first.iter().any(|v| needs_quotes(v))
        && rest_quoted
            .iter()
            .any(|&(quoted, bare)| quoted == 0 && bare > 0)
    {
        return HeaderCall::Header;
    }
    let mut call = type_votes(first, rest, o);
    if call.typed == 0 {
        // All TEXT, perhaps only because missing values are written `NA`
        // (as R writes them): with those read as missing, some column
        // may be typed.
        let na_free: Vec<Candidates> = rest_values
            .iter()
            .map(|vals| {
                let mut c = Candidates::new();
                for v in vals.iter().filter(|v| !v.is_empty() && !is_na_like(v)) {
                    c.see(v, o);
                }
                c
            })
            .collect();
        call = type_votes(first, &na_free, o);
    }
    if call.typed == 0 {
        // Numbers that no type holds as written (`0.1234567890123456789`)
        // are numbers still: a word over them is a name.
        for (c, vals) in rest_values.iter().enumerate() {
            let mut vals = vals
                .iter()
                .filter(|v| !v.is_empty() && !is_na_like(v))
                .peekable();
            if vals.peek().is_none() || !vals.all(|v| is_number(v)) {
                continue;
            }
            let Some(t) = first.get(c).map(|f| value::trim(f)) else {
                continue;
            };
            if t.is_empty() || is_na_like(t) {
                continue;
            }
            call.typed += 1;
            if is_number(t) {
                call.values.push(c);
            } else {
                call.names.push(c);
            }
        }
    }
    let show = |cols: &[usize]| {
        cols.iter()
            .map(|&c| format!("{:?}", String::from_utf8_lossy(value::trim(&first[c]))))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (call.names.is_empty(), call.values.is_empty()) {
        (false, true) => return HeaderCall::Header,
        (true, false) => {
            // Values of the typed columns' types, but text unlike the
            // text below (`Sales by city, 2024` over `Hanoi,1`): a title?
            let text: Vec<usize> = (0..first.len())
                .filter(|&c| rest.get(c).is_some_and(|r| r.pick() == DataType::Text))
                .collect();
            let firsts: Vec<Vec<u8>> = text.iter().map(|&c| first[c].clone()).collect();
            let below: Vec<Vec<&[u8]>> = text
                .iter()
                .map(|&c| rest_values.get(c).cloned().unwrap_or_default())
                .collect();
            if shape_differs(&firsts, &below) {
                return HeaderCall::Unsure(format!(
                    "its {} of the type of the values below, but its text unlike theirs (a title?)",
                    show(&call.values)
                ));
            }
            return HeaderCall::Data;
        }
        (false, false) => {
            return HeaderCall::Unsure(format!(
                "its {} where the values below are of another type (a header), but its {} of the type of the values below (data)",
                show(&call.names),
                show(&call.values)
            ));
        }
        (true, true) => {}
    }
    // Words over true/false alone, no number to say otherwise.
    if !call.weak_names.is_empty() && call.weak_values.is_empty() {
        return HeaderCall::Header;
    }
    if call.typed > 0 && first.iter().any(|v| !value::trim(v).is_empty()) {
        // Typed columns, and the first record fits each (or is empty):
        // data.
        if call.weak_names.is_empty() {
            return HeaderCall::Data;
        }
    }
    if first.is_empty() {
        return HeaderCall::Data;
    }
    if !names_like(first, rest_values, 0) {
        // No names, and unlike the values below (`Sales by city, 2024`
        // over words): a title, or a record?
        if call.typed == 0 && shape_differs(first, rest_values) {
            return HeaderCall::Unsure(
                "its fields are no names, and unlike the values below them (a title?)".into(),
            );
        }
        return HeaderCall::Data;
    }
    if no_rows {
        return HeaderCall::Unsure(
            "it is the only record, and a line of names is a line of words as well".into(),
        );
    }
    if shape_differs(first, rest_values) {
        return HeaderCall::Header;
    }
    HeaderCall::Unsure(format!(
        "every column is text and its fields ({}) look like names, as the values below them may",
        show(&(0..first.len()).collect::<Vec<_>>())
    ))
}

/// Whether the first of `below` (the records after a file's first) is a
/// header by the evidence of the records below it (see [`header_call`]).
fn second_is_header(below: &[Vec<Vec<u8>>], ncols: usize, o: &InferOptions) -> bool {
    let Some((second, rest)) = below.split_first() else {
        return false;
    };
    let rest: Vec<&Vec<Vec<u8>>> = rest.iter().filter(|r| r.len() == ncols).collect();
    if second.len() != ncols || rest.len() < 2 {
        return false;
    }
    let mut cands = vec![Candidates::new(); ncols];
    let mut values: Vec<Vec<&[u8]>> = vec![Vec::new(); ncols];
    for r in &rest {
        for (c, v) in r.iter().enumerate() {
            let t = value::trim(v);
            values[c].push(t);
            if !t.is_empty() && v.as_slice() != o.null.as_slice() {
                cands[c].see(v, o);
            }
        }
    }
    header_call(second, &[], &cands, &values, &[], o) == HeaderCall::Header
}

/// Integers rising from the first on (row numbers, unless rows were
/// dropped).
fn rising(vals: &[&[u8]]) -> bool {
    let mut last = i64::MIN;
    !vals.is_empty()
        && vals.iter().all(|v| match value::parse_i64(value::trim(v)) {
            Ok(n) if n > last => {
                last = n;
                true
            }
            _ => false,
        })
}

/// The shape of a text value: which of upper case, lower case, digits
/// and spaces it has (punctuation says little: `Lovelace, Bob`).
fn shape(v: &[u8]) -> u8 {
    v.iter().fold(0, |acc, &c| {
        acc | match c {
            b'A'..=b'Z' => 1,
            b'a'..=b'z' => 2,
            b'0'..=b'9' => 4,
            b' ' => 8,
            _ => 0,
        }
    })
}

/// Whether some column has at least two values below whose shapes (see
/// [`shape`]) the first record's field over it does not share: every
/// value has upper case, lower case, digits or spaces and the field has
/// none, or the field has them and no value has (`name` over `Ada
/// Lovelace` and `Bob Jones`).
fn shape_differs(first: &[Vec<u8>], rest_values: &[Vec<&[u8]>]) -> bool {
    first.iter().zip(rest_values).any(|(name, vals)| {
        let vals: Vec<u8> = vals
            .iter()
            .filter(|v| !v.is_empty() && !is_na_like(v))
            .map(|v| shape(v))
            .collect();
        let name = value::trim(name);
        if name.is_empty() || is_na_like(name) {
            return false;
        }
        let s = shape(name);
        let all = vals.iter().fold(0xff, |a, &v| a & v);
        let any = vals.iter().fold(0, |a, &v| a | v);
        vals.len() >= 2 && ((all & !s) != 0 || (s & !any) != 0)
    })
}

/// Of the columns typed by `cands`: how many, and the first record's
/// fields that are not of their column's type (names) or are (values).
struct TypeVotes {
    typed: usize,
    names: Vec<usize>,
    values: Vec<usize>,
    /// The same over BOOLEAN columns, weaker evidence (`y`/`n`).
    weak_names: Vec<usize>,
    weak_values: Vec<usize>,
}

fn type_votes(first: &[Vec<u8>], cands: &[Candidates], o: &InferOptions) -> TypeVotes {
    let mut out = TypeVotes {
        typed: 0,
        names: Vec::new(),
        values: Vec::new(),
        weak_names: Vec::new(),
        weak_values: Vec::new(),
    };
    for (c, cand) in cands.iter().enumerate() {
        let Some(v) = first.get(c) else { continue };
        let ty = cand.pick();
        if ty == DataType::Text {
            continue;
        }
        out.typed += 1;
        let t = value::trim(v);
        if t.is_empty() || v.as_slice() == o.null.as_slice() || is_na_like(t) {
            continue;
        }
        let mut one = Candidates::new();
        one.see(v, o);
        let fits = match ty {
            DataType::BigInt => one.bigint,
            DataType::Decimal { .. } => one.decimal,
            DataType::Double => one.double,
            DataType::Date => one.date,
            DataType::Time => one.time,
            // A time with or without an offset is a time: whether the
            // column keeps offsets is the type's choice, not a header's.
            DataType::Timestamp | DataType::TimestampTz => one.timestamp || one.timestamptz,
            DataType::Boolean => one.boolean,
            _ => true,
        };
        // A number over numbers of another kind (`1.5` over integers)
        // is a value still.
        // (`inf` and `nan` are words here: a column named `inf`.)
        let number_like = matches!(
            ty,
            DataType::BigInt | DataType::Decimal { .. } | DataType::Double
        ) && is_number(t)
            && t.iter().any(u8::is_ascii_digit);
        // Over `y`/`n`, a short word (`x`) is weak evidence; a longer
        // one (`Sales by city`) is not.
        let weak = ty == DataType::Boolean && t.len() <= 5 && !t.contains(&b' ');
        let (names, values) = if weak {
            (&mut out.weak_names, &mut out.weak_values)
        } else {
            (&mut out.names, &mut out.values)
        };
        if fits || number_like {
            values.push(c);
        } else if t.iter().any(u8::is_ascii_alphanumeric) {
            // A name has a letter or a digit (`100022` over booleans is
            // one; `-` or `?` over numbers is none).
            names.push(c);
        }
    }
    out
}

/// R's `write.csv` header over row names that are text (`"","x"` over
/// `"Albania",32`): an empty first name, the others names, and the first
/// column's values below distinct and never empty, as row names are.
fn text_row_names_header(first: &[Vec<u8>], rest_values: &[Vec<&[u8]>]) -> bool {
    let distinct = |vals: &Vec<&[u8]>| {
        let mut v = vals.clone();
        v.sort_unstable();
        v.len() >= 2 && v.iter().all(|x| !x.is_empty()) && v.windows(2).all(|w| w[0] != w[1])
    };
    first.len() >= 2
        && value::trim(&first[0]).is_empty()
        && rest_values.first().is_some_and(distinct)
        && names_like(first, rest_values, 1)
}

/// Missing values as R (`NA`), spreadsheets (`#N/A`, `N/A`) and others
/// write them: they say nothing of a column's type when telling a header
/// from data (they stay text in the table: `--null` makes them NULL).
fn is_na_like(v: &[u8]) -> bool {
    matches!(
        v,
        b"NA" | b"N/A" | b"n/a" | b"#N/A" | b"NULL" | b"null" | b"None" | b"nan" | b"NaN"
    )
}

/// Whether the fields of `first` from `from` on are short, distinct,
/// start with a letter, and do not appear again as values of their column.
fn names_like(first: &[Vec<u8>], rest_values: &[Vec<&[u8]>], from: usize) -> bool {
    let mut seen: Vec<&[u8]> = Vec::new();
    for (c, v) in first.iter().enumerate().skip(from) {
        let t = value::trim(v);
        let name_like = !t.is_empty()
            && t.len() <= 64
            && t[0].is_ascii_alphabetic()
            && t.iter()
                .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b' ' | b'-' | b'.'));
        if !name_like || seen.contains(&t) {
            return false;
        }
        if rest_values.get(c).is_some_and(|vals| vals.contains(&t)) {
            return false;
        }
        seen.push(t);
    }
    true
}

/// Why no schema can be inferred from `inputs`, every one of them empty.
fn nothing_to_infer(inputs: &[Input]) -> Error {
    const WHAT: &str = "nothing to infer the table's columns from; give them with --schema";
    match inputs {
        [one] => Error::Input {
            path: one.display_name(),
            message: format!("file is empty: {WHAT}"),
        },
        _ => Error::Config(format!(
            "all {} input files are empty: {WHAT}",
            inputs.len()
        )),
    }
}

/// A first record one field off the `ncols` of the records below is
/// made a header of `ncols` names (the load fits it the same way, see
/// `load::header::fit_header`). One short, over records that all end
/// with an empty field: an empty last name (a header without the
/// trailing delimiter its rows have, `c1,c2` over `1,2,`; the column is
/// then `c<N>` like any empty name). One short over full records: an
/// empty first name (R's `write.table` header, no name over the row
/// names; only when `row_names`, see [`short_header_evidence`]). One
/// long with an empty last field: that field dropped (a delimiter after
/// the last name). Only the first file's records decide.
fn fit_header(
    first: &mut Option<Vec<Vec<u8>>>,
    below: &[Vec<Vec<u8>>],
    ncols: usize,
    row_names: bool,
) {
    let Some(first) = first.as_mut() else {
        return;
    };
    let trailing_empty = |r: &Vec<Vec<u8>>| r.len() == ncols && r.last().is_some_and(Vec::is_empty);
    let full = |r: &Vec<Vec<u8>>| r.len() == ncols;
    if first.len() + 1 == ncols && !below.is_empty() && below.iter().all(trailing_empty) {
        first.push(Vec::new());
    } else if first.len() + 1 == ncols
        && ncols >= 2
        && below.len() >= 2
        && below.iter().all(full)
        && row_names
    {
        first.insert(0, Vec::new());
    } else if first.len() == ncols + 1 && first.last().is_some_and(|v| value::trim(v).is_empty()) {
        first.pop();
    }
}

/// Where a file's table starts when notes come before it (a title, a
/// description, a count of rows, blank lines): of the candidate dialects,
/// the one whose records from some line on all have the same number of
/// fields, at least two, to the end of the first sample (and its first
/// [`TRIAL_RECORDS`]), its header perhaps one field off, with the most
/// such records. The lines above (at most [`MAX_NOTES`]) are notes when
/// none of them is a record of the table (splits alike with numbers
/// where it has numbers; of twenty lines or more, under a tenth), none is
/// a line of numbers (no word where the table has numbers) that splits
/// otherwise right below one that splits like a header (a bad record
/// under the table's header), and at least [`MIN_TABLE`] records
/// follow; lines of words just above the header that split alike are
/// notes too. Returns the lines of notes
/// (after `o.skip`) and the dialect.
fn find_notes(
    s: &Sample,
    o: &InferOptions,
    want: Option<usize>,
    spaces: bool,
) -> Option<(u64, Dialect)> {
    if !s.start {
        return None;
    }
    let data = after_skip(&s.data, o.skip)?;
    let mut data = &data[..data.len().min(TRIAL_BYTES)];
    if data.len() < s.data.len() || !s.whole {
        data = memchr::memrchr(b'\n', data).map_or(&data[..0], |i| &data[..i + 1]);
    }
    let tried: Vec<Dialect> = match o.delimiter {
        Some(d) => candidates(d, o, data),
        None => DELIMITERS
            .iter()
            .flat_map(|&d| candidates(d, o, data))
            .chain(if spaces {
                space_candidates(o, data)
            } else {
                Vec::new()
            })
            .collect(),
    };
    let mut best: Option<((bool, usize), u64, Dialect)> = None;
    for d in tried.into_iter().filter(|d| d.split != Split::Line) {
        let recs = line_records(data, &d);
        let Some(n) = recs.last().map(|r| r.1.len()) else {
            continue;
        };
        if n < 2 || want.is_some_and(|w| w != n) {
            continue;
        }
        let mut b = recs.len();
        while b > 0 && recs[b - 1].1.len() == n {
            b -= 1;
        }
        let run = b;
        // A single space splitting columns aligned by runs of spaces
        // reads empty fields: runs of whitespace read them.
        let single_space = d.delimiter == b' ' && d.split == Split::Delimiter;
        if single_space && recs[run..].iter().any(|r| r.1.iter().any(Vec::is_empty)) {
            continue;
        }
        // Split at spaces, a table has numbers, dates or booleans (lines
        // of words split as well).
        if d.delimiter == b' ' || d.split == Split::Whitespace {
            let typed: usize = recs[run..]
                .iter()
                .map(|r| r.1.iter().filter(|v| typed_cell(v)).count())
                .sum();
            let cells: usize = recs[run..].iter().map(|r| r.1.len()).sum();
            if typed * 2 < recs.len() - run {
                continue;
            }
            // Nor when its lines whole are typed as often: one column of
            // values that hold a space (`2020-12-30 01:25:58`).
            let whole = recs[run..]
                .iter()
                .filter(|r| {
                    let line = &data[r.2..];
                    let line = &line[..memchr::memchr(b'\n', line).unwrap_or(line.len())];
                    typed_cell(line)
                })
                .count();
            if whole * cells >= typed * (recs.len() - run) {
                continue;
            }
        }
        // A record of the table the dialect surely misreads, or a field
        // holding another delimiter.
        if recs[run..].iter().any(|r| {
            suspect(&d, &r.1, &data[r.2..], o.dialect.quote).is_some()
                || r.1
                    .iter()
                    .any(|v| !typed_cell(v) && dirty_cell(v, d.delimiter))
        }) {
            continue;
        }
        // The columns of numbers, by the lower half of the run.
        let below = &recs[b + (recs.len() - b) / 2..];
        let numeric: Vec<bool> = (0..n)
            .map(|c| {
                let mut vals = below
                    .iter()
                    .map(|r| value::trim(&r.1[c]))
                    .filter(|v| !v.is_empty());
                let mut any = false;
                vals.all(|v| {
                    any = true;
                    is_na_like(v) || is_number(v)
                }) && any
            })
            .collect();
        // A record of names over them: a word where a number goes.
        let heads = |r: &[Vec<u8>]| {
            r.iter().zip(&numeric).any(|(v, &num)| {
                let v = value::trim(v);
                num && !v.is_empty() && !is_na_like(v) && !is_number(v)
            })
        };
        // Names (see [`names_like`]): a header's fields.
        let names = |r: &[Vec<u8>]| !r.is_empty() && names_like(r, &[], 0);
        // Two lines of words where the table has numbers: the upper is
        // a note when it has no names and the lower has (`<1960 Q1>`
        // over `y x`); else which is the header is not for a guess.
        let mut names_over_words = false;
        while b + 1 < recs.len() && heads(&recs[b].1) && heads(&recs[b + 1].1) {
            if names(&recs[b].1) {
                names_over_words = true;
                break;
            }
            b += 1;
        }
        if names_over_words {
            continue;
        }
        let rows = recs.len() - b - usize::from(heads(&recs[b].1));
        // Above data, a header of names one short (no name over the row
        // names, as R writes) or one long (a delimiter after the last).
        if b == run && b > 0 && !heads(&recs[b].1) {
            let h = &recs[b - 1].1;
            let names = h
                .iter()
                .all(|v| !value::trim(v).is_empty() && !is_number(value::trim(v)));
            let firsts: Vec<(Vec<u8>, bool)> = recs[b..]
                .iter()
                .map(|r| {
                    let first = r.1.first().cloned().unwrap_or_default();
                    (first, starts_quoted(&data[r.2..], &d))
                })
                .collect();
            let trailing = recs[b..]
                .iter()
                .all(|r| r.1.last().is_some_and(Vec::is_empty));
            let short = h.len() + 1 == n && names && short_header_evidence(&firsts, trailing);
            let long = h.len() == n + 1
                && h.last().is_some_and(|v| value::trim(v).is_empty())
                && h[..n].iter().all(|v| !is_number(value::trim(v)));
            if short || long {
                b -= 1;
            }
        }
        if b == 0 || rows < MIN_TABLE || recs[b].0 > MAX_NOTES {
            continue;
        }
        // Names right above records with no header of their own, split
        // where text and numbers hold the delimiter (a space after it in
        // every record, or a comma before it: `date` over `Dec 8, 2022`,
        // at the comma or the space; three digits after it:
        // `amount` over `1,000`): the header of one column read at the
        // wrong delimiter, not a note (`Inventory` over `1,2,3` is one;
        // a split at spaces always may be: `duration` over `5 min`).
        let in_text = |r: &Vec<Vec<u8>>| {
            r.windows(2).any(|w| {
                w[1].first() == Some(&b' ')
                    || matches!(w[0].last(), Some(b',' | b';'))
                    || (w[1].len() == 3
                        && w[1].iter().all(u8::is_ascii_digit)
                        && w[0].last().is_some_and(u8::is_ascii_digit))
            })
        };
        if !heads(&recs[b].1)
            && !names(&recs[b].1)
            && names(&recs[b - 1].1)
            && (d.delimiter == b' '
                || d.split == Split::Whitespace
                || recs[b..].iter().all(|r| in_text(&r.1)))
        {
            continue;
        }
        // No line that splits like the records and could be one of them
        // or their header is dropped: numbers where the table has them
        // (a record), or names (`x,y,z` over `# c` over numbers), or
        // any line of the table's count where it has no numbers to
        // tell. Words where the table has numbers, no names, are notes
        // (`in billions, 1960Q1-1961Q4;` over `invest income cons`).
        let any_numeric = numeric.iter().any(|&x| x);
        if recs[..b]
            .iter()
            .any(|r| r.1.len() == n && (!any_numeric || !heads(&r.1) || names(&r.1)))
        {
            continue;
        }
        let numbers = |r: &[Vec<u8>]| {
            let k = r.iter().filter(|v| is_number(value::trim(v))).count();
            k > 0 && k * 2 >= r.len()
        };
        let broken = recs[..run].windows(2).any(|w| {
            let (above, bad) = (&w[0].1, &w[1].1);
            above.len() == n && heads(above) && bad.len() != n && !heads(bad) && numbers(bad)
        });
        if broken {
            continue;
        }
        // A delimiter before spaces (a TSV's note splits at its spaces
        // like the fields that hold spaces), then the most records, the
        // header included.
        let table = (
            d.delimiter != b' ' && d.split != Split::Whitespace,
            recs.len() - b,
        );
        if best.as_ref().is_none_or(|(r, _, _)| table > *r) {
            best = Some((table, recs[b].0, d));
        }
    }
    best.map(|(_, line, d)| (line, d))
}

/// Whether a field is a number (as a header tells names from data).
fn is_number(v: &[u8]) -> bool {
    std::str::from_utf8(v).is_ok_and(|s| s.parse::<f64>().is_ok())
}

/// Lines of notes at most above a table (see [`find_notes`]).
const MAX_NOTES: u64 = 200;

/// Records at least below notes (see [`find_notes`]).
const MIN_TABLE: usize = 2;

/// The records of `data` (a file's start) read with `d`: each one's
/// first line (0-based) and its fields, none for a line that cannot be
/// read (the reading goes on at the next line). Blank lines, lines of
/// only spaces and comment lines are not records.
fn line_records(data: &[u8], d: &Dialect) -> Vec<(u64, Vec<Vec<u8>>, usize)> {
    let mut out = Vec::new();
    let (mut at, mut line) = (0usize, 0u64);
    while at < data.len() && out.len() < TRIAL_RECORDS {
        let rest = &data[at..];
        // (A line of tabs is a record of empty fields to a TSV.)
        let tab_fields = d.delimiter == b'\t' && d.split == Split::Delimiter;
        let indent = rest
            .iter()
            .take_while(|&&c| c == b' ' || (c == b'\t' && !tab_fields))
            .count();
        let blank = matches!(&rest[indent..], [] | [b'\n', ..] | [b'\r', b'\n', ..])
            || d.starts_comment(rest);
        if !blank {
            match read_record(rest, d, true) {
                Ok(Some((fields, used, newlines))) if used > 0 => {
                    out.push((line, fields, at));
                    at += used;
                    line += newlines;
                    continue;
                }
                _ => out.push((line, Vec::new(), at)),
            }
        }
        match memchr::memchr(b'\n', rest) {
            Some(i) => {
                at += i + 1;
                line += 1;
            }
            None => break,
        }
    }
    out
}

/// Whether, of the records of `s` read with `d`, those that start with
/// [`COMMENT`] (after any spaces and tabs) are the only ones (but the
/// first) with another count of fields than the most common one, and
/// none of them has that count.
fn comments_among(s: &Sample, d: &Dialect, skip: u64, preamble: Option<u8>) -> bool {
    let mut recs: Vec<(bool, usize)> = Vec::new();
    walk(s, d, skip, preamble, |at, r| {
        let Ok(fields) = r else { return false };
        let rest = &s.data[at..];
        let indent = rest
            .iter()
            .take_while(|&&b| b == b' ' || b == b'\t')
            .count();
        recs.push((rest.get(indent) == Some(&COMMENT), fields.len()));
        recs.len() < TRIAL_RECORDS
    });
    let mut counts: Vec<(usize, usize)> = Vec::new();
    for &(_, n) in recs.iter().filter(|r| !r.0) {
        match counts.iter_mut().find(|c| c.0 == n) {
            Some(c) => c.1 += 1,
            None => counts.push((n, 1)),
        }
    }
    let modal = counts
        .iter()
        .max_by_key(|&&(n, k)| (k, n))
        .map_or(0, |c| c.0);
    modal >= 2
        && recs.iter().any(|r| r.0)
        && recs.iter().enumerate().all(|(i, &(comment, n))| {
            if comment {
                n != modal
            } else {
                n == modal || (i == 0 && n.abs_diff(modal) == 1)
            }
        })
}

/// `d` reading each line as one field; blank lines are no rows unless
/// `--blank-lines null` says otherwise.
fn as_lines(d: Dialect) -> Dialect {
    Dialect {
        split: Split::Line,
        quote: None,
        escape: None,
        trim_around_quotes: false,
        blank_lines: match d.blank_lines {
            BlankLines::Auto => BlankLines::Skip,
            given => given,
        },
        ..d
    }
}

/// Why lines that split in no one way are not read as lines, if a table
/// ends them: of the delimiters (with the given quoting), one splits the
/// last records of the first sample (at least [`MIN_TABLE`]) into the
/// same number of fields, two or more, that lines above do not all
/// lack (else [`find_notes`] had taken them for notes).
fn table_at_end(s: &Sample, o: &InferOptions) -> Option<String> {
    if !s.start || !s.whole {
        return None;
    }
    let data = after_skip(&s.data, o.skip)?;
    for d in DELIMITERS
        .iter()
        .flat_map(|&delim| candidates(delim, o, data))
    {
        let recs = line_records(data, &d);
        let Some(n) = recs.last().map(|r| r.1.len()) else {
            continue;
        };
        let run = recs.iter().rev().take_while(|r| r.1.len() == n).count();
        if n >= 2 && run >= MIN_TABLE && run < recs.len() {
            let at = recs[recs.len() - run].0 + o.skip + 1;
            return Some(format!(
                "lines above a table: the last {run} records split into {n} fields at the {} from line {at} on, and a line above splits like them too (a note, or the header?); give --skip N for the lines above the table, or --delimiter none to read each line as one field",
                delimiter_name(&d)
            ));
        }
    }
    None
}

/// Whether the first record of `s` read with `d` has fewer fields than
/// most records, and those are not all in one run at the end (a title
/// above a table too short to tell notes by: its load fails, naming
/// `--skip`).
fn starts_short(s: &Sample, d: &Dialect, skip: u64, preamble: Option<u8>) -> bool {
    let mut recs = records(s, d, skip, preamble);
    recs.truncate(TRIAL_RECORDS);
    let (n, k) = modal_count(&recs);
    let in_one_run_at_end = recs.iter().rev().take_while(|r| r.len() == n).count() == k;
    recs.first().is_some_and(|r| r.len() < n) && !in_one_run_at_end
}

/// Whether the records of `s` read with `d` are mostly of one field but
/// some split into more: lines of text, not a table of one column.
fn splits_unevenly(s: &Sample, d: &Dialect, skip: u64, preamble: Option<u8>) -> bool {
    let mut counts: Vec<(usize, usize)> = Vec::new();
    let mut seen = 0;
    walk(s, d, skip, preamble, |_, r| {
        let n = r.map_or(0, |f| f.len());
        match counts.iter_mut().find(|c| c.0 == n) {
            Some(c) => c.1 += 1,
            None => counts.push((n, 1)),
        }
        seen += 1;
        seen < TRIAL_RECORDS
    });
    let modal = counts
        .iter()
        .max_by_key(|&&(n, k)| (k, n))
        .map_or(0, |c| c.0);
    modal <= 1 && counts.len() > 1
}

/// Whether, of the records of `s` read with `d` (the first apart, it may
/// be a header), some that start with `#` have as many fields as the
/// most common count but words where the others have numbers, dates or
/// timestamps (`# totals, below` among numbers): comments that hold the
/// delimiter.
fn hash_lines_misfit(s: &Sample, d: &Dialect, o: &InferOptions, preamble: Option<u8>) -> bool {
    let mut plain: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut hashed: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut first = true;
    walk(s, d, o.skip, preamble, |at, r| {
        let Ok(fields) = r else { return true };
        if std::mem::replace(&mut first, false) {
            return true;
        }
        let rest = &s.data[at..];
        let indent = rest
            .iter()
            .take_while(|&&b| b == b' ' || b == b'\t')
            .count();
        if rest.get(indent) == Some(&COMMENT) {
            hashed.push(fields);
        } else {
            plain.push(fields);
        }
        plain.len() + hashed.len() < TRIAL_RECORDS
    });
    if hashed.is_empty() || plain.is_empty() {
        return false;
    }
    let (n, _) = modal_count(&plain);
    let mut cands = vec![Candidates::new(); n];
    for r in plain.iter().filter(|r| r.len() == n) {
        for (c, v) in cands.iter_mut().zip(r) {
            let t = value::trim(v);
            if !t.is_empty() && !is_na_like(t) && v.as_slice() != o.null.as_slice() {
                c.see(v, o);
            }
        }
    }
    hashed.iter().filter(|r| r.len() == n).any(|r| {
        cands.iter().zip(r).any(|(c, v)| {
            let t = value::trim(v).strip_prefix(b"#").unwrap_or(value::trim(v));
            let t = value::trim(t);
            matches!(
                c.pick(),
                DataType::BigInt
                    | DataType::Decimal { .. }
                    | DataType::Double
                    | DataType::Date
                    | DataType::Time
                    | DataType::Timestamp
                    | DataType::TimestampTz
            ) && t.iter().any(u8::is_ascii_alphabetic)
                && !is_number(t)
                && !is_na_like(t)
        })
    })
}

/// Whether record `r` (of `ncols` fields) holds a word that would make a
/// column `cands` types (other than BOOLEAN) text: a name where the
/// records have numbers, dates or timestamps (not `02134` among
/// integers, nor `5.5`, `inf` or `NA`).
fn word_misfits(cands: &[Candidates], r: &[Vec<u8>], ncols: usize, o: &InferOptions) -> bool {
    r.len() == ncols
        && cands.iter().zip(r).any(|(c, v)| {
            let t = value::trim(v);
            let ty = c.pick();
            if matches!(ty, DataType::Text | DataType::Boolean)
                || t.is_empty()
                || is_na_like(t)
                || is_number(t)
                || !t.iter().any(u8::is_ascii_alphabetic)
            {
                return false;
            }
            let mut one = Candidates::new();
            one.see(v, o);
            let mut both = c.clone();
            both.merge(&one);
            // Times with and without offsets are times all the same.
            let a_time = matches!(ty, DataType::Timestamp | DataType::TimestampTz)
                && (one.timestamp || one.timestamptz);
            both.pick() == DataType::Text && !a_time
        })
}

/// Why the records below the first are not one table, if a line among
/// them splits like the records but is surely not one of them, which no
/// guess may decide: a line starting with `#` whose values are not of
/// the types of the records that do not (a comment holding the
/// delimiter: `--comment '#'`, or data: `--types`), or a second record
/// that is not of the types of those below it, as the first is not (two
/// lines of names, or a title and a header, over the data: `--skip`).
/// `below`: the records after the first, `hash`: which of them start
/// with `#`.
fn misfit_below(
    first: Option<&Vec<Vec<u8>>>,
    below: &[Vec<Vec<u8>>],
    hash: &[bool],
    d: &Dialect,
    ncols: usize,
    o: &InferOptions,
) -> Option<String> {
    let types_of = |rows: &mut dyn Iterator<Item = &Vec<Vec<u8>>>| {
        let mut cands = vec![Candidates::new(); ncols];
        for r in rows.filter(|r| r.len() == ncols) {
            for (c, v) in cands.iter_mut().zip(r) {
                let t = value::trim(v);
                if !t.is_empty() && !is_na_like(t) && v.as_slice() != o.null.as_slice() {
                    c.see(v, o);
                }
            }
        }
        cands
    };
    let misfits = |cands: &[Candidates], r: &[Vec<u8>]| word_misfits(cands, r, ncols, o);
    if d.comment.is_none() && hash.iter().any(|&h| h) {
        let cands = types_of(&mut below.iter().zip(hash).filter(|(_, h)| !**h).map(|(r, _)| r));
        let line = |i: usize| String::from_utf8_lossy(&below[i].join(&d.delimiter)).into_owned();
        if let Some(i) = (0..below.len()).find(|&i| hash[i] && misfits(&cands, &below[i])) {
            return Some(format!(
                "the record {:?} starts with '#' and splits like the records, but its values are not of their types: give --comment '#' if such lines are comments, or --schema to read them as data",
                line(i)
            ));
        }
        // A few such lines among records that do not start so, and no
        // type to tell: comments holding the delimiter, or data?
        let alike: Vec<usize> = (0..below.len())
            .filter(|&i| hash[i] && below[i].len() == ncols)
            .collect();
        if !alike.is_empty() && alike.len() * 2 < below.len() {
            return Some(format!(
                "the record {:?} starts with '#' and splits like the records: give --comment '#' if such lines are comments, or --schema to read them as data",
                line(alike[0])
            ));
        }
    }
    let lower = &below[(below.len() / 2).max(1).min(below.len())..];
    if lower.len() >= 2 && !hash.first().copied().unwrap_or(false) {
        // The types of the lower half of the records.
        let cands = types_of(&mut lower.iter());
        if misfits(&cands, &below[0]) && first.is_some_and(|f| misfits(&cands, f)) {
            return Some(
                "its second record, like its first, is not of the types of the records below (two lines of names, or a title over a header?): give --skip N for the lines above the header, and --header or --no-header".into(),
            );
        }
    }
    None
}

/// The delimiter Excel's first line `sep=X` names, at the start of `s`
/// after `skip` lines.
fn excel_sep(s: &Sample, skip: u64) -> Option<u8> {
    let data = after_skip(&s.data, skip)?;
    let line = &data[..memchr::memchr(b'\n', data)?];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match line {
        [b's' | b'S', b'e' | b'E', b'p' | b'P', b'=', c] if !c.is_ascii_alphanumeric() => Some(*c),
        _ => None,
    }
}

/// Infers how to read `inputs` and what table they make.
pub fn infer(inputs: &[Input], o: &InferOptions) -> Result<Inferred> {
    if inputs.is_empty() {
        return Err(Error::Config("no input to infer a schema from".into()));
    }
    // Files spread over the list, the first and the last included.
    let k = o.max_files.max(1).min(inputs.len());
    let mut chosen: Vec<usize> = (0..k)
        .map(|i| {
            if k == 1 {
                0
            } else {
                i * (inputs.len() - 1) / (k - 1)
            }
        })
        .collect();
    chosen.dedup();
    let mut per_file: Vec<(usize, Vec<Sample>)> = Vec::new();
    let mut line_end = LineEnd::Lf;
    let mut budget = o.whole_bytes.saturating_mul(2);
    // Every sampled file empty: the first other file that is not.
    let others = (0..inputs.len()).filter(|i| !chosen.contains(i));
    for i in chosen.clone().into_iter().chain(others) {
        if !per_file.is_empty() && !chosen.contains(&i) {
            break;
        }
        let (samples, le) = samples_of(&inputs[i], o, &mut budget)?;
        // An empty file loads as 0 rows and says nothing of the table.
        if samples[0].data.is_empty() {
            continue;
        }
        if per_file.is_empty() {
            line_end = le;
        }
        per_file.push((i, samples));
    }
    let Some((first_file, first)) = per_file.first() else {
        return Err(nothing_to_infer(inputs));
    };
    let (first_file, first) = (*first_file, &first[0]);
    // Excel's `sep=;` first line names the delimiter: taken, and skipped
    // in every file as a line of notes.
    if o.delimiter.is_none()
        && o.detect_notes
        && let Some(sep) = excel_sep(first, o.skip)
    {
        let given = InferOptions {
            delimiter: Some(sep),
            skip: o.skip + 1,
            detect_notes: false,
            ..o.clone()
        };
        let mut inf = infer(inputs, &given)?;
        inf.notes += 1;
        return Ok(inf);
    }
    let mut leading_comment = leading_comment(first, o);
    let mut chosen = choose(first, o, None, leading_comment, true);
    // Lines starting with `#` among the records, and only they split
    // otherwise, are comments, not notes above a table.
    let comments = matches!(&chosen, Ok((d, false))
        if d.comment.is_none() && comments_among(first, d, o.skip, leading_comment));
    // Notes above the table: when no dialect reads every record alike,
    // but one reads all from some line on.
    // A table at another delimiter under notes comes before records
    // alike only when split at spaces (a TSV's note and fields hold
    // spaces too).
    // (Unless the fields that delimiter reads are aligned by runs of
    // spaces: `id  value  label` over ` 0 <TAB>0  x0` is one table
    // aligned by spaces and tabs, its header no note of a TSV.)
    let at_spaces = o.delimiter.is_none()
        && matches!(&chosen, Ok((d, _)) if d.delimiter == b' ' || d.split == Split::Whitespace);
    let aligned = |notes: u64, d: &Dialect| {
        let recs = records(first, d, o.skip + notes, None);
        let spaced = |f: &Vec<u8>| {
            memchr::memmem::find(f, b"  ").is_some()
                || (f.first() == Some(&b' ') && f.last() == Some(&b' '))
        };
        let n = recs.iter().filter(|r| r.iter().any(spaced)).count();
        n * 2 >= recs.len()
    };
    let mut with_notes = None;
    if (!matches!(chosen, Ok((_, true))) || at_spaces)
        && !comments
        && o.detect_notes
        && let Some((notes, d)) = find_notes(first, o, None, !at_spaces)
        && !(at_spaces && aligned(notes, &d))
    {
        let o = InferOptions {
            skip: o.skip + notes,
            ..o.clone()
        };
        chosen = match choose(first, &o, None, None, true) {
            Ok((d, true)) => Ok((d, true)),
            _ => Ok((d, true)),
        };
        leading_comment = None;
        with_notes = Some((o, notes));
    }
    let notes = with_notes.as_ref().map_or(0, |w| w.1);
    let o = with_notes.as_ref().map_or(o, |w| &w.0);
    let (d, trials) = match chosen {
        // A first line shorter than most records, and no line from which
        // all split alike: a report of several parts, not a table.
        Ok((d, false))
            if o.delimiter.is_none()
                && with_notes.is_none()
                && starts_short(first, &d, o.skip, leading_comment) =>
        {
            if let Some(why) = table_at_end(first, o) {
                return Err(Error::Input {
                    path: inputs[first_file].display_name(),
                    message: why,
                });
            }
            (as_lines(d), Vec::new())
        }
        // Lines starting with `#` among the records, and only they split
        // otherwise: comments (as RDB files and astropy write them).
        Ok((d, false))
            if d.comment.is_none() && comments_among(first, &d, o.skip, leading_comment) =>
        {
            let d = Dialect {
                comment: Some(COMMENT),
                ..d
            };
            (d, Vec::new())
        }
        Ok((d, _)) => (d, Vec::new()),
        Err(NoDialect::Ambiguous(why)) => {
            return Err(Error::Input {
                path: inputs[first_file].display_name(),
                message: why,
            });
        }
        // None reads every record: the given quoting, and the load says
        // where a record breaks it.
        Err(NoDialect::Trials(trials)) => {
            let delimiter = o
                .delimiter
                .unwrap_or_else(|| sniff(first, o, None, leading_comment));
            let d = Dialect {
                delimiter,
                ..o.dialect.clone()
            };
            // Lines that split in no one way (a report, a program's
            // output, prose): each line one field, rather than a table
            // of one column that a later line breaks.
            let d = match o.delimiter {
                None if splits_unevenly(first, &d, o.skip, leading_comment) => {
                    if let Some(why) = table_at_end(first, o) {
                        return Err(Error::Input {
                            path: inputs[first_file].display_name(),
                            message: why,
                        });
                    }
                    as_lines(d)
                }
                _ => d,
            };
            (d, trials)
        }
    };
    // `#` lines that split like the records but hold words where the
    // other records (but the first) have numbers: comments.
    let d = if d.comment.is_none()
        && d.split != Split::Line
        && o.dialect.comment.is_none()
        && hash_lines_misfit(first, &d, o, leading_comment)
    {
        Dialect {
            comment: Some(COMMENT),
            ..d
        }
    } else {
        d
    };
    let delimiter = d.delimiter;
    // The first file's first record decides the header, by the values
    // below it (up to 1000 records); every file's start sample begins
    // with its own.
    let mut counts: Vec<(usize, usize)> = Vec::new();
    let mut first_rec: Option<Vec<Vec<u8>>> = None;
    let mut below: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut below_firsts: Vec<(Vec<u8>, bool)> = Vec::new();
    // Which fields of the first record were quoted, and of the values
    // below, how many were and were not in each column.
    let mut first_quoted: Vec<bool> = Vec::new();
    let mut first_line = 1;
    // Which records below the first start with `#`.
    let mut below_hash: Vec<bool> = Vec::new();
    // A record the dialect cannot read (the load will say where).
    let mut unreadable = false;
    let mut below_quoted: Vec<(usize, usize)> = Vec::new();
    walk(first, &d, o.skip, leading_comment, |at, r| {
        let Ok(fields) = r else {
            unreadable = true;
            return true;
        };
        let quoting = || match read_record_quoting(&first.data[at..], &d, true) {
            Ok(Some((_, q, _, _))) => q,
            _ => Vec::new(),
        };
        if first_rec.is_none() {
            first_quoted = quoting();
            first_line = memchr::memchr_iter(b'\n', &first.data[..at]).count() as u64 + 1;
        } else if below.len() < 1000 {
            let rest = &first.data[at..];
            let indent = rest
                .iter()
                .take_while(|&&b| b == b' ' || b == b'\t')
                .count();
            below_hash.push(rest.get(indent) == Some(&COMMENT));
            let quoted = starts_quoted(&first.data[at..], &d);
            below_firsts.push((fields.first().cloned().unwrap_or_default(), quoted));
            for (c, (q, v)) in quoting().into_iter().zip(&fields).enumerate() {
                if below_quoted.len() <= c {
                    below_quoted.resize(c + 1, (0, 0));
                }
                if !v.is_empty() {
                    if q {
                        below_quoted[c].0 += 1;
                    } else {
                        below_quoted[c].1 += 1;
                    }
                }
            }
        }
        match counts.iter_mut().find(|c| c.0 == fields.len()) {
            Some(c) => c.1 += 1,
            None => counts.push((fields.len(), 1)),
        }
        if first_rec.is_none() {
            first_rec = Some(fields);
        } else if below.len() < 1000 {
            below.push(fields);
        }
        true
    });
    let modal = counts
        .iter()
        .max_by_key(|&&(n, k)| (k, n))
        .map_or(0, |c| c.0);
    let first_len = first_rec.as_ref().map_or(0, Vec::len);
    // A header one name longer than the records, its last empty (a
    // delimiter after the last name), names those records' columns.
    let long_header = first_len == modal + 1
        && modal >= 1
        && first_rec
            .as_ref()
            .and_then(|f| f.last())
            .is_some_and(|v| value::trim(v).is_empty());
    let ncols = if long_header && o.header != Header::No {
        modal
    } else {
        modal.max(first_len)
    };
    if o.header != Header::No {
        let trailing_empty = below.iter().all(|r| r.last().is_some_and(Vec::is_empty));
        let row_names = short_header_evidence(&below_firsts, trailing_empty);
        fit_header(&mut first_rec, &below, ncols, row_names);
    }
    // Most records shorter than a first record that no record outgrows:
    // values left off at the end of rows under a header (as forecasts
    // and sparse exports are written), NULL when that is a header.
    let short_rows = first_rec.as_ref().is_some_and(|f| f.len() == ncols)
        && modal < ncols
        && counts.iter().all(|c| c.0 <= ncols)
        && d.split != Split::Line;
    if ncols == 0 {
        let tried = trials
            .iter()
            .any(|t| t.error.is_some() || !t.counts.is_empty());
        return Err(Error::Input {
            path: inputs[first_file].display_name(),
            message: if tried {
                no_dialect_message(&trials, None)
            } else {
                "no records to infer a schema from".into()
            },
        });
    }
    // What the values allow, apart for the first record of each file.
    let mut rest = vec![Candidates::new(); ncols];
    let mut firsts = vec![Candidates::new(); ncols];
    let (mut n_rest, mut n_firsts) = (0u64, 0u64);
    let mut samples = 0;
    for s in per_file.iter().flat_map(|(_, samples)| samples) {
        samples += 1;
        let mut at_first = s.start;
        walk(s, &d, o.skip, leading_comment, |_, r| {
            let Ok(fields) = r else { return true };
            let is_first = std::mem::replace(&mut at_first, false);
            if fields.len() > ncols || (fields.len() < ncols && !short_rows) {
                return true;
            }
            let (cands, n) = if is_first {
                (&mut firsts, &mut n_firsts)
            } else {
                (&mut rest, &mut n_rest)
            };
            *n += 1;
            for (cand, v) in cands.iter_mut().zip(&fields) {
                if !v.is_empty() && v.as_slice() != o.null.as_slice() {
                    cand.see(v, o);
                }
            }
            true
        });
    }
    let header = match o.header {
        Header::Yes => true,
        Header::No => false,
        Header::Auto => {
            let rest_values: Vec<Vec<&[u8]>> = (0..ncols)
                .map(|c| {
                    below
                        .iter()
                        .filter(|r| r.len() == ncols || (short_rows && r.len() < ncols))
                        .filter_map(|r| r.get(c).map(|v| value::trim(v)))
                        .collect()
                })
                .collect();
            let call = match first_rec.as_ref() {
                Some(f) if f.len() == ncols => {
                    // A header fitted to the columns (one name added)
                    // is quoted where its fields were.
                    let mut q = first_quoted.clone();
                    if q.len() + 1 == f.len() {
                        if value::trim(&f[0]).is_empty() {
                            q.insert(0, true);
                        } else {
                            q.push(true);
                        }
                    }
                    header_call(f, &q, &rest, &rest_values, &below_quoted, o)
                }
                _ => HeaderCall::Data,
            };
            match call {
                HeaderCall::Header => true,
                // Data, unless the second record is a header by the
                // evidence of the records below it: then the first is a
                // note above it, or a header over a header.
                HeaderCall::Data if second_is_header(&below, ncols, o) => {
                    return Err(Error::Input {
                        path: inputs[first_file].display_name(),
                        message: format!(
                            "the record after line {first_line} looks like a header over the records below it, and line {first_line} is above it (a title?); give --skip N for the lines above the header, and --header"
                        ),
                    });
                }
                HeaderCall::Data => false,
                // Only records that cannot be read below: the load fails
                // there, and says why, whatever the first line is.
                HeaderCall::Unsure(_) if unreadable && below.is_empty() => true,
                HeaderCall::Unsure(why) => {
                    return Err(Error::Input {
                        path: inputs[first_file].display_name(),
                        message: format!(
                            "cannot tell whether line {first_line} is a header: {why}; give --header or --no-header"
                        ),
                    });
                }
            }
        }
    };
    let refuse = |message: String| Error::Input {
        path: inputs[first_file].display_name(),
        message,
    };
    // One column whose lines hold runs of spaces or tabs, as columns
    // aligned by spaces do, that split unevenly (`New York    8.4` under
    // `city        pop`): not one column of text.
    if ncols == 1 && d.split == Split::Delimiter {
        let aligned = |r: &Vec<Vec<u8>>| {
            r.first().is_some_and(|v| {
                let v = value::trim(v);
                memchr::memmem::find(v, b"  ").is_some() || v.contains(&b'\t')
            })
        };
        let all: Vec<&Vec<Vec<u8>>> = first_rec.iter().chain(&below).collect();
        let n = all.iter().filter(|r| aligned(r)).count();
        if all.len() >= 2 && n * 2 >= all.len() {
            return Err(Error::Input {
                path: inputs[first_file].display_name(),
                message: "its lines hold runs of spaces, as columns aligned by spaces do, but no split reads them alike (a value with a space, or a missing one?): give --delimiter whitespace, or --delimiter none to read each line whole".into(),
            });
        }
    }
    if d.split != Split::Line
        && let Some(why) = misfit_below(first_rec.as_ref(), &below, &below_hash, &d, ncols, o)
    {
        return Err(refuse(why));
    }
    let fill_missing = header && short_rows;
    // The other files sampled must start as the first does: as many
    // lines of notes, and, under no header, no line of names.
    for (i, samples) in per_file.iter().skip(1) {
        let Some(s) = samples.first().filter(|s| s.start) else {
            continue;
        };
        let base = InferOptions {
            skip: o.skip - notes,
            ..o.clone()
        };
        let theirs = if o.detect_notes {
            find_notes(s, &base, Some(ncols), true).map_or(0, |n| n.0)
        } else {
            notes
        };
        let differ = |what: String| Error::Input {
            path: inputs[*i].display_name(),
            message: format!(
                "{what}, where {} {}: the files are not alike; load them separately, or give --skip and --header or --no-header",
                inputs[first_file].display_name(),
                if notes > 0 {
                    format!("has {notes} line(s) of notes above its table")
                } else if header {
                    "starts with its header".to_string()
                } else {
                    "starts with data".to_string()
                }
            ),
        };
        if theirs != notes {
            return Err(differ(format!("{theirs} line(s) of notes above its table")));
        }
        if !header {
            let mut start: Option<Vec<Vec<u8>>> = None;
            walk(s, &d, o.skip, leading_comment, |_, r| {
                start = r.ok();
                false
            });
            let named = start
                .as_ref()
                .is_some_and(|f| word_misfits(&rest, f, ncols, o));
            if named {
                return Err(differ("it starts with a line of names".into()));
            }
        }
    }
    let (cands, records_sampled) = if header {
        (rest, n_rest)
    } else {
        for (c, f) in rest.iter_mut().zip(&firsts) {
            c.merge(f);
        }
        (rest, n_rest + n_firsts)
    };
    let mut columns: Vec<Column> = Vec::with_capacity(ncols);
    let raw: Vec<Vec<u8>> = (0..ncols)
        .map(
            |c| match (header, first_rec.as_ref().and_then(|f| f.get(c))) {
                (true, Some(raw)) => raw.clone(),
                _ => Vec::new(),
            },
        )
        .collect();
    let names = column_names(&raw);
    // Whether the load recognises the header by these names in every
    // file (`Header::Auto`: a file that starts with data, as the parts
    // of a split file do, keeps its first row), or must take each
    // file's first line as one (names no column gets, `"1"`).
    let by_names = header
        && first_rec.as_ref().is_some_and(|f| {
            let cols: Vec<Column> = names
                .iter()
                .map(|n| Column {
                    name: n.clone(),
                    data_type: DataType::Text,
                    default: None,
                    primary_key: false,
                })
                .collect();
            named_by(f, &cols)
        });
    for (cand, name) in cands.iter().zip(names) {
        columns.push(Column {
            name,
            data_type: cand.pick(),
            default: None,
            primary_key: false,
        });
    }
    apply_types(&mut columns, o)?;
    let (exact, widen) = chosen_columns(&columns, o);
    Ok(Inferred {
        schema: Schema::new(columns)?,
        delimiter,
        dialect: d,
        header,
        header_by_names: by_names,
        skip: o.skip,
        notes,
        json_rows: None,
        fill_missing,
        line_end,
        leading_comment,
        files_sampled: per_file.len(),
        samples,
        records_sampled,
        exact,
        widen,
    })
}

/// Sets the types `--types` names on the inferred `columns`.
pub(crate) fn apply_types(columns: &mut [Column], o: &InferOptions) -> Result<()> {
    for (name, ty) in &o.types {
        match columns
            .iter_mut()
            .find(|c| c.name.eq_ignore_ascii_case(name))
        {
            Some(c) => c.data_type = *ty,
            None => {
                return Err(Error::Config(format!(
                    "--types names column {name:?}, but the inferred columns are: {}",
                    columns
                        .iter()
                        .map(|c| c.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
    }
    Ok(())
}

/// The columns whose types the samples chose (not `--types`): the numeric
/// ones, which must read back as written (`Inferred::exact`), and all of
/// them, which may widen (`Inferred::widen`).
pub(crate) fn chosen_columns(columns: &[Column], o: &InferOptions) -> (Vec<String>, Vec<String>) {
    let chosen = |c: &&Column| !o.types.iter().any(|(n, _)| n.eq_ignore_ascii_case(&c.name));
    let exact = columns
        .iter()
        .filter(chosen)
        .filter(|c| {
            matches!(
                c.data_type,
                DataType::BigInt
                    | DataType::Decimal { .. }
                    | DataType::Double
                    | DataType::TimestampTz
            )
        })
        .map(|c| c.name.clone())
        .collect();
    let widen = columns
        .iter()
        .filter(chosen)
        .map(|c| c.name.clone())
        .collect();
    (exact, widen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(data: &[u8]) -> Sample {
        Sample {
            data: data.to_vec(),
            start: true,
            whole: true,
        }
    }

    #[test]
    fn delimiters_are_sniffed_from_consistent_field_counts() {
        let o = InferOptions::default();
        assert_eq!(sniff(&sample(b"a\tb\tc\n1\t2\t3\n"), &o, None, None), b'\t');
        assert_eq!(
            sniff(&sample(b"a;b\n\"x;y\";2\n3;4\n"), &o, None, None),
            b';'
        );
        assert_eq!(sniff(&sample(b"a,b|c\n1,2|3\n"), &o, Some(2), None), b',');
        assert_eq!(sniff(&sample(b"one\ntwo\n"), &o, None, None), b',');
    }

    #[test]
    fn dialects_are_chosen_by_what_reads_the_first_records() {
        let o = InferOptions::default();
        let pick = |data: &[u8]| {
            choose_dialect(&sample(data), &o, None, None)
                .map(|d| (d.delimiter as char, d.quote, d.escape, d.trim_around_quotes))
                .map_err(|trials| no_dialect_message(&trials, None))
        };
        let q = Some(b'"');
        assert_eq!(pick(b"a,b\n\"x,y\",2\n"), Ok((',', q, None, false)));
        assert_eq!(pick(b"a\tb\n5\" tv\t2\n"), Ok(('\t', None, None, false)));
        assert_eq!(pick(b"\"a\", \"b\"\n1, \"x\"\n"), Ok((',', q, None, true)));
        assert_eq!(
            pick(b"a,b\n\"x\\\"y\",2\n"),
            Ok((',', q, Some(b'\\'), false))
        );
        assert_eq!(pick(b"a b\n1 2\n"), Ok((' ', q, None, false)));
        // Ragged records under a quoting other than the given one, fields
        // in quotes with none, runs of spaces: not taken.
        assert!(pick(b"a;b\n\"1\";\"x\"y\n").is_err());
        // Runs of spaces: one delimiter, when no other reads the records.
        assert_eq!(pick(b"a  b\n1  2\n"), Ok((' ', q, None, false)));
        let runs = choose_dialect(&sample(b"a  b\n1  2\n"), &o, None, None);
        assert!(runs.is_ok_and(|d| d.split == Split::Whitespace));
        assert!(pick(b"one\ntwo\n").is_err());
        // Given quoting: taken also when ragged, the load says where.
        assert_eq!(pick(b"a,b\n1,2\n3,4,5\n"), Ok((',', q, None, false)));
        // A given quote is the only one tried.
        let given = InferOptions {
            detect_quoting: false,
            ..InferOptions::default()
        };
        assert!(choose_dialect(&sample(b"a\tb\n5\" tv\t2\n"), &given, None, None).is_err());
    }

    #[test]
    fn types_are_the_narrowest_that_every_value_fits() {
        let o = InferOptions::default();
        let pick = |vals: &[&str]| {
            let mut c = Candidates::new();
            for v in vals {
                c.see(v.as_bytes(), &o);
            }
            c.pick()
        };
        assert_eq!(pick(&["1", "-20", "0"]), DataType::BigInt);
        assert_eq!(
            pick(&["1.5", "2", "-3.25"]),
            DataType::Decimal {
                precision: 18,
                scale: 2
            }
        );
        assert_eq!(pick(&["1e5", "2.5"]), DataType::Double);
        assert_eq!(pick(&["2024-01-31", "1999-12-01"]), DataType::Date);
        assert_eq!(
            pick(&["2024-01-31 10:00:00", "2024-01-31T11:30:00"]),
            DataType::Timestamp
        );
        assert_eq!(pick(&["true", "false", "yes"]), DataType::Boolean);
        // Times of day, two digits each and the seconds written; up to
        // 24:00:00 (PostgreSQL's end of the day).
        assert_eq!(
            pick(&["09:30:00", "23:59:59.999999", "24:00:00"]),
            DataType::Time
        );
        // Not times: minutes and seconds or a score (`12:30`, `3:1`),
        // a one-digit hour (read back as `09:30:00`), a duration past a
        // day, an offset (a TIME keeps none), a time of another form.
        assert_eq!(pick(&["12:30", "09:30:00"]), DataType::Text);
        assert_eq!(pick(&["9:30:00", "10:30:00"]), DataType::Text);
        assert_eq!(pick(&["25:00:00", "10:30:00"]), DataType::Text);
        assert_eq!(pick(&["24:00:01"]), DataType::Text);
        assert_eq!(pick(&["10:30:00+02", "10:30:00"]), DataType::Text);
        assert_eq!(pick(&["10:30:00 PM"]), DataType::Text);
        assert_eq!(pick(&["10:60:00"]), DataType::Text);
        assert_eq!(pick(&["10:30:00.1234567"]), DataType::Text);
        assert_eq!(pick(&["0", "1"]), DataType::BigInt);
        assert_eq!(pick(&["1", "x"]), DataType::Text);
        assert_eq!(pick(&[]), DataType::Text);
        // 19 significant digits fit neither DECIMAL(18, s) nor DOUBLE.
        assert_eq!(pick(&["1234567890.123456789"]), DataType::Text);
        assert_eq!(pick(&["0.1234567890123456789"]), DataType::Text);
        // 17 digits that a double gives back as written are one.
        assert_eq!(pick(&["0.30000000000000004", "1e5"]), DataType::Double);
        // Codes, not numbers: leading zeros, a sign, more than 64 bits.
        assert_eq!(pick(&["02134", "10001"]), DataType::Text);
        assert_eq!(pick(&["+15551234"]), DataType::Text);
        assert_eq!(pick(&["007", "123"]), DataType::Text);
        assert_eq!(pick(&["18446744073709551615", "1"]), DataType::Text);
        // A BIGINT has no negative zero; a DOUBLE does.
        assert_eq!(pick(&["-0", "1"]), DataType::Double);
        assert_eq!(pick(&["-0", "x"]), DataType::Text);
        assert_eq!(pick(&["00.5"]), DataType::Text);
        assert_eq!(
            pick(&["0.5", ".25"]),
            DataType::Decimal {
                precision: 18,
                scale: 2
            }
        );
        assert_eq!(pick(&["0", "-3"]), DataType::BigInt);
        assert_eq!(pick(&["2.5E-3", "-1e5"]), DataType::Double);
        assert_eq!(pick(&["1e400"]), DataType::Text);
        assert_eq!(pick(&["NaN"]), DataType::Text);
        assert_eq!(pick(&["24-01-31", "99-12-31"]), DataType::Text);
        // Times with an offset are instants; a column that mixes them
        // with times without one is text (no zone is guessed).
        assert_eq!(
            pick(&["2013-01-01T10:00:00Z", "2013-01-01 10:00+01:00"]),
            DataType::TimestampTz
        );
        assert_eq!(
            pick(&["2013-01-01T10:00:00Z", "2013-01-01 10:00"]),
            DataType::Text
        );
    }

    #[test]
    fn headers_are_told_from_data() {
        let o = InferOptions::default();
        let call = |data: &[u8]| {
            let d = Dialect::default();
            let mut lines: Vec<(Vec<Vec<u8>>, Vec<bool>)> = Vec::new();
            let mut at = 0;
            while at < data.len() {
                let (fields, quoted, used, _) =
                    read_record_quoting(&data[at..], &d, true).unwrap().unwrap();
                lines.push((fields, quoted));
                at += used;
            }
            let n = lines[0].0.len();
            let mut rest = vec![Candidates::new(); n];
            let mut values: Vec<Vec<&[u8]>> = vec![Vec::new(); n];
            let mut quoting = vec![(0, 0); n];
            for (r, q) in &lines[1..] {
                for (c, v) in r.iter().enumerate() {
                    rest[c].see(v, &o);
                    values[c].push(v);
                    if q[c] {
                        quoting[c].0 += 1;
                    } else {
                        quoting[c].1 += 1;
                    }
                }
            }
            header_call(&lines[0].0, &lines[0].1, &rest, &values, &quoting, &o)
        };
        let first_is_header = |data: &[u8]| call(data) == HeaderCall::Header;
        let first_is_data = |data: &[u8]| call(data) == HeaderCall::Data;
        assert!(first_is_header(b"id,name\n1,ada\n"));
        assert!(first_is_data(b"1,ada\n2,bob\n"));
        // Text under text: names by shape only.
        assert!(first_is_header(
            b"name,city\nAda Lovelace,Paris\nBob,Rome\n"
        ));
        assert!(matches!(
            call(b"name,city\nada,paris\n"),
            HeaderCall::Unsure(_)
        ));
        assert!(first_is_data(b"ada,paris\nbob,rome\nada,paris\n"));
        // One line of words alone: names, or one row?
        assert!(matches!(call(b"id,name\n"), HeaderCall::Unsure(_)));
        // R's write.csv: an empty name over the row numbers.
        assert!(first_is_header(
            b"\"\",\"x\",\"y\"\n\"1\",\"a\",\"b\"\n\"2\",\"c\",\"d\"\n"
        ));
        assert!(first_is_header(b"\"\",\"x\",\"y\"\n\"1\",2,3\n"));
        // ... alone, and over numbers with numbers for names.
        assert!(first_is_header(b"\"\",\"friends\",\"advice\"\n"));
        assert!(first_is_header(
            b"\"\",\"1\",\"2\",\"3\"\n\"1\",50,19,26\n\"2\",40,18,20\n"
        ));
        // An empty first field over integers that are no row numbers.
        assert!(first_is_data(b",ada,paris\n3,bob,rome\n1,eve,oslo\n"));
        assert!(first_is_data(b",x,y\n1,a,b\n,c,d\n"));
        // A number that fits outweighs a word over y/n.
        assert!(first_is_data(b"1,x\n2,y\n3,n\n4,y\n"));
        // A word over numbers beside a number over numbers: refused.
        assert!(matches!(
            call(b"id,2019\n1,5\n2,6\n"),
            HeaderCall::Unsure(_)
        ));
    }

    #[test]
    fn header_names_become_identifiers() {
        assert_eq!(column_name(b"Order ID", 1, &[]), "order_id");
        assert_eq!(column_name(b"2024 total ($)", 2, &[]), "c2024_total");
        assert_eq!(column_name(b"", 3, &[]), "c3");
        assert_eq!(column_name(b"id", 4, &["id".into()]), "id_2");
        assert_eq!(column_name("prix €".as_bytes(), 5, &[]), "prix");
    }
}
