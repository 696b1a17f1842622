//! Schema inference: delimiter, header and column types from samples.
//!
//! Samples are taken from the start, the middle and the end of each
//! sampled file (the middle and end only of plain files, which can seek),
//! and from several files spread over the input list, so that a type that
//! changes late in a file or in a later file is seen before the load
//! starts. Types are tried narrowest-safe first: BIGINT, DECIMAL, DOUBLE,
//! DATE, TIMESTAMP, BOOLEAN, and TEXT when nothing else fits. Integers are
//! BIGINT (an INT guess is the classic "fails on line 8 million");
//! decimals are DECIMAL(18, s) with the largest scale seen.

use std::io::{Read, Seek, SeekFrom};

use crate::batch::{Column, DataType, Schema, validate_identifier};
use crate::error::{Error, Result};
use crate::load::Header;
use crate::parse::value;
use crate::parse::{Dialect, read_record};
use crate::source::{Compression, Input, LineEnd};

/// Delimiters tried when none is given, in order of preference.
const DELIMITERS: [u8; 4] = [b',', b'\t', b'|', b';'];

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
            null: Vec::new(),
            date_format: None,
            timestamp_format: None,
            encoding: None,
            line_end: LineEnd::Auto,
            types: Vec::new(),
            sample_bytes: 256 << 10,
            max_files: 16,
        }
    }
}

/// The result: a schema and how to read the files.
#[derive(Debug, Clone, PartialEq)]
pub struct Inferred {
    pub schema: Schema,
    pub delimiter: u8,
    /// Whether each file starts with a header line.
    pub header: bool,
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
/// read as the load reads it), and the input's line end.
fn samples_of(input: &Input, o: &InferOptions) -> Result<(Vec<Sample>, LineEnd)> {
    if *input == Input::Stdin {
        return Err(Error::Config(
            "the schema cannot be inferred from standard input (it would be consumed); pass --schema".into(),
        ));
    }
    let n = o.sample_bytes;
    let (mut reader, compression, line_end) = input.open_lines(None, o.encoding, o.line_end)?;
    let head = read_up_to(&mut reader, n + 1).map_err(|e| input.io_error(e))?;
    let whole = head.len() <= n;
    let mut out = vec![Sample {
        data: head,
        start: true,
        whole,
    }];
    let plain =
        compression == Compression::None && o.encoding.is_none_or(|e| e == encoding_rs::UTF_8);
    if let (Input::File(p), false, true) = (input, whole, plain) {
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

/// The records of a sample, as raw fields. A chunk from inside a file
/// starts after its first newline; records that cannot be read there
/// (a cut inside quotes) are skipped to the next line. A file's start
/// drops `skip` lines, then the lines starting with `preamble` before
/// its first record.
fn records(s: &Sample, d: &Dialect, skip: u64, preamble: Option<u8>) -> Vec<Vec<Vec<u8>>> {
    let mut data: &[u8] = &s.data;
    if s.start {
        match after_skip(data, skip) {
            Some(rest) => data = rest,
            None => return Vec::new(),
        }
        if let Some(c) = preamble {
            data = &data[leading_lines(data, c).0..];
        }
    } else {
        match memchr::memchr(b'\n', data) {
            Some(i) => data = &data[i + 1..],
            None => return Vec::new(),
        }
    }
    let mut out = Vec::new();
    while !data.is_empty() {
        if data[0] == b'\n' || data.starts_with(b"\r\n") || Some(data[0]) == d.comment {
            match memchr::memchr(b'\n', data) {
                Some(i) => data = &data[i + 1..],
                None => break,
            }
            continue;
        }
        match read_record(data, d, s.whole) {
            Ok(Some((fields, used, _))) if used > 0 => {
                out.push(fields);
                data = &data[used..];
            }
            Ok(_) => break,
            Err(_) if s.start && out.is_empty() => break,
            Err(_) => match memchr::memchr(b'\n', data) {
                Some(i) => data = &data[i + 1..],
                None => break,
            },
        }
    }
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

/// The delimiter for records of `columns` fields (any number above one
/// when `None`; `o.delimiter` when given), from the first input's start
/// (`,` when no candidate splits records consistently), and the byte of
/// the comment lines above its data (see [`Inferred::leading_comment`]).
pub fn sniff_delimiter(
    inputs: &[Input],
    o: &InferOptions,
    columns: Option<usize>,
) -> Result<(u8, Option<u8>)> {
    let fallback = o.delimiter.unwrap_or(b',');
    // Standard input cannot be read twice: the default then.
    let small = InferOptions {
        sample_bytes: 64 << 10,
        ..o.clone()
    };
    // The first file that is not empty (an empty one is 0 rows), among
    // as many as inference samples.
    for input in inputs.iter().take(o.max_files.max(1)) {
        if *input == Input::Stdin {
            break;
        }
        let (samples, _) = samples_of(input, &small)?;
        if let Some(s) = samples.first().filter(|s| !s.data.is_empty()) {
            let preamble = leading_comment(s, o);
            let delimiter = o
                .delimiter
                .unwrap_or_else(|| sniff(s, o, columns, preamble));
            return Ok((delimiter, preamble));
        }
    }
    Ok((fallback, None))
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
    let delimiter = o
        .delimiter
        .unwrap_or_else(|| sniff(&rest, &plain, None, None));
    let d = Dialect {
        delimiter,
        ..o.dialect.clone()
    };
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
        // 0 and 1 are numbers first; a BOOLEAN column says true/false.
        if self.boolean && (value::parse_bool(t).is_err() || t.iter().all(u8::is_ascii_digit)) {
            self.boolean = false;
        }
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

/// Whether the first record is a header: some typed column (not TEXT in
/// the other records) has a first value that is not of its type, or every
/// column is TEXT and the first record's values are distinct, non-empty,
/// look like names, and are not repeated in the records below.
fn looks_like_header(
    first: &[Vec<u8>],
    rest: &[Candidates],
    rest_values: &[Vec<&[u8]>],
    o: &InferOptions,
) -> bool {
    let mut typed = 0;
    let mut votes = 0;
    for (c, cand) in rest.iter().enumerate() {
        let Some(v) = first.get(c) else { continue };
        let ty = cand.pick();
        if ty == DataType::Text {
            continue;
        }
        typed += 1;
        let mut one = Candidates::new();
        one.see(v, o);
        let fits = match ty {
            DataType::BigInt => one.bigint,
            DataType::Decimal { .. } => one.decimal,
            DataType::Double => one.double,
            DataType::Date => one.date,
            DataType::Timestamp => one.timestamp,
            DataType::Boolean => one.boolean,
            _ => true,
        };
        if !fits && !value::trim(v).is_empty() && v.as_slice() != o.null.as_slice() {
            votes += 1;
        }
    }
    if typed > 0 {
        return votes > 0 || row_names_header(first, rest, rest_values);
    }
    // All TEXT: names are short, distinct, start with a letter, and do not
    // appear again as values of their column.
    // A file of one name-like record (an export with no rows) is a header.
    !first.is_empty() && names_like(first, rest_values, 0)
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

/// R's `write.csv` header: an empty name over the row names (rising
/// integers: 1, 2, 3, … unless rows were dropped), and names over the
/// other columns (`"","x","y"` over `"1","a",3`). No type decides it, as
/// the empty name reads as NULL.
fn row_names_header(first: &[Vec<u8>], rest: &[Candidates], rest_values: &[Vec<&[u8]>]) -> bool {
    let rising = |vals: &Vec<&[u8]>| {
        let mut last = 0;
        !vals.is_empty()
            && vals.iter().all(|v| match value::parse_i64(v) {
                Ok(n) if n > last => {
                    last = n;
                    true
                }
                _ => false,
            })
    };
    first.len() >= 2
        && value::trim(&first[0]).is_empty()
        && rest.first().is_some_and(|c| c.pick() == DataType::BigInt)
        && rest_values.first().is_some_and(rising)
        && names_like(first, rest_values, 1)
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

/// A first record one field short of the records below, which all end
/// with an empty field, gets that empty field too: a header without the
/// trailing delimiter its rows have (`c1,c2` over `1,2,`), whose last,
/// unnamed column is then `c<N>` like any empty name. Only the first
/// sample's records decide; the load pads such a header the same way.
fn pad_short_header(recs: &mut [Vec<Vec<u8>>], ncols: usize) {
    let Some((first, rest)) = recs.split_first_mut() else {
        return;
    };
    let trailing_empty = |r: &Vec<Vec<u8>>| r.len() == ncols && r.last().is_some_and(Vec::is_empty);
    if first.len() + 1 == ncols && !rest.is_empty() && rest.iter().all(trailing_empty) {
        first.push(Vec::new());
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
    // Every sampled file empty: the first other file that is not.
    let others = (0..inputs.len()).filter(|i| !chosen.contains(i));
    for i in chosen.clone().into_iter().chain(others) {
        if !per_file.is_empty() && !chosen.contains(&i) {
            break;
        }
        let (samples, le) = samples_of(&inputs[i], o)?;
        // An empty file loads as 0 rows and says nothing of the table.
        if samples[0].data.is_empty() {
            continue;
        }
        if per_file.is_empty() {
            line_end = le;
        }
        per_file.push((i, samples));
    }
    let Some((_, first)) = per_file.first() else {
        return Err(nothing_to_infer(inputs));
    };
    let first = &first[0];
    let leading_comment = leading_comment(first, o);
    let delimiter = o
        .delimiter
        .unwrap_or_else(|| sniff(first, o, None, leading_comment));
    let d = Dialect {
        delimiter,
        ..o.dialect.clone()
    };
    let mut recs_of: Vec<Vec<Vec<Vec<u8>>>> = per_file
        .iter()
        .flat_map(|(_, samples)| {
            samples
                .iter()
                .map(|s| records(s, &d, o.skip, leading_comment))
        })
        .collect();
    // The first file's first record decides the header; every file's
    // start sample begins with its own.
    let starts: Vec<bool> = per_file
        .iter()
        .flat_map(|(_, samples)| samples.iter().map(|s| s.start))
        .collect();
    let ncols = modal_count(&recs_of[0])
        .0
        .max(recs_of[0].first().map_or(0, Vec::len));
    if o.header != Header::No {
        pad_short_header(&mut recs_of[0], ncols);
    }
    let first_recs = &recs_of[0];
    if ncols == 0 {
        return Err(Error::Input {
            path: inputs[per_file[0].0].display_name(),
            message: "no records to infer a schema from".into(),
        });
    }
    let observe = |skip_first: bool| -> (Vec<Candidates>, u64) {
        let mut cands = vec![Candidates::new(); ncols];
        let mut n = 0u64;
        for (recs, &start) in recs_of.iter().zip(&starts) {
            let from = usize::from(start && skip_first);
            for r in recs.iter().skip(from) {
                if r.len() != ncols {
                    continue;
                }
                n += 1;
                for (c, v) in r.iter().enumerate() {
                    if v.is_empty() || v.as_slice() == o.null.as_slice() {
                        continue;
                    }
                    cands[c].see(v, o);
                }
            }
        }
        (cands, n)
    };
    let header = match o.header {
        Header::Yes => true,
        Header::No => false,
        Header::Auto => {
            let (rest, _) = observe(true);
            let rest_values: Vec<Vec<&[u8]>> = (0..ncols)
                .map(|c| {
                    first_recs
                        .iter()
                        .skip(1)
                        .take(1000)
                        .filter_map(|r| r.get(c).map(|v| value::trim(v)))
                        .collect()
                })
                .collect();
            first_recs
                .first()
                .is_some_and(|f| f.len() == ncols && looks_like_header(f, &rest, &rest_values, o))
        }
    };
    let (cands, records_sampled) = observe(header);
    let mut columns: Vec<Column> = Vec::with_capacity(ncols);
    let raw: Vec<Vec<u8>> = (0..ncols)
        .map(
            |c| match (header, first_recs.first().and_then(|f| f.get(c))) {
                (true, Some(raw)) => raw.clone(),
                _ => Vec::new(),
            },
        )
        .collect();
    let names = column_names(&raw);
    for (cand, name) in cands.iter().zip(names) {
        columns.push(Column {
            name,
            data_type: cand.pick(),
            default: None,
            primary_key: false,
        });
    }
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
    let exact = columns
        .iter()
        .filter(|c| {
            matches!(
                c.data_type,
                DataType::BigInt | DataType::Decimal { .. } | DataType::Double
            ) && !o.types.iter().any(|(n, _)| n.eq_ignore_ascii_case(&c.name))
        })
        .map(|c| c.name.clone())
        .collect();
    let widen = columns
        .iter()
        .filter(|c| !o.types.iter().any(|(n, _)| n.eq_ignore_ascii_case(&c.name)))
        .map(|c| c.name.clone())
        .collect();
    Ok(Inferred {
        schema: Schema::new(columns)?,
        delimiter,
        header,
        line_end,
        leading_comment,
        files_sampled: per_file.len(),
        samples: recs_of.len(),
        records_sampled,
        exact,
        widen,
    })
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
        assert_eq!(
            pick(&["2013-01-01T10:00:00Z", "2013-01-01 10:00+01:00"]),
            DataType::Timestamp
        );
    }

    #[test]
    fn headers_are_told_from_data() {
        let o = InferOptions::default();
        let first_is_header = |data: &[u8]| {
            let recs = records(&sample(data), &Dialect::default(), 0, None);
            let mut rest = vec![Candidates::new(); recs[0].len()];
            let mut values: Vec<Vec<&[u8]>> = vec![Vec::new(); recs[0].len()];
            for r in &recs[1..] {
                for (c, v) in r.iter().enumerate() {
                    rest[c].see(v, &o);
                    values[c].push(v);
                }
            }
            looks_like_header(&recs[0], &rest, &values, &o)
        };
        assert!(first_is_header(
            b"id,name
1,ada
"
        ));
        assert!(!first_is_header(
            b"1,ada
2,bob
"
        ));
        assert!(first_is_header(
            b"name,city
ada,paris
"
        ));
        assert!(!first_is_header(
            b"ada,paris
bob,rome
ada,paris
"
        ));
        // Only a header: an export with no rows.
        assert!(first_is_header(
            b"id,name
"
        ));
        // R's write.csv: an empty name over the row numbers.
        assert!(first_is_header(
            b"\"\",\"x\",\"y\"\n\"1\",\"a\",\"b\"\n\"2\",\"c\",\"d\"\n"
        ));
        assert!(first_is_header(b"\"\",\"x\",\"y\"\n\"1\",2,3\n"));
        // An empty first field over integers that are no row numbers.
        assert!(!first_is_header(b",ada,paris\n3,bob,rome\n1,eve,oslo\n"));
        assert!(!first_is_header(b",x,y\n1,a,b\n,c,d\n"));
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
