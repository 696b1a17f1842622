//! Parsing: bytes of whole records → typed columns.
//!
//! [`parse_block`] takes a byte block of CSV/TSV that starts at a record
//! boundary (see [`crate::split`]) and appends its records to a
//! [`BatchBuilder`](crate::batch::BatchBuilder); [`parse_json_block`] does
//! the same for JSON lines and JSON arrays. The same code parses a whole
//! file or one block of it, so a parallel parse equals a sequential one.

mod byte_scan;
mod csv;
mod indexed;
pub mod json;
mod structural;
pub mod value;

pub(crate) use csv::snippet;
pub use csv::{
    BlockError, BlockInfo, COMMENT_NOTE, FieldMap, Reject, RowPolicy, parse_block,
    parse_block_reference, parse_block_with, read_record, read_record_quoting,
};

pub use json::{JsonFormat, JsonShape, parse_json_block};

use crate::error::{Error, Result};

/// Newlines before offsets of one block, counted on from the offset asked
/// about last: a block's errors come in order, so the line numbers of all
/// its rejects cost one pass over it (counting from the block's start for
/// each cost time quadratic in the rejects of a block: 132 s for a 9 MB
/// file of a million bad records).
#[derive(Debug, Default)]
pub(crate) struct LineCount {
    offset: usize,
    lines: u64,
}

impl LineCount {
    /// The newlines in `data[..offset]`.
    pub(crate) fn before(&mut self, data: &[u8], offset: usize) -> u64 {
        if offset < self.offset {
            *self = LineCount::default();
        }
        self.lines += memchr::memchr_iter(b'\n', &data[self.offset..offset]).count() as u64;
        self.offset = offset;
        self.lines
    }
}

/// Why a record longer than `--max-line-size` fails a load.
pub(crate) fn too_long_message(max: usize) -> String {
    format!("no end of record within --max-line-size ({max} bytes); an unterminated quote?")
}

/// What an input's text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Delimited records (CSV, TSV), read with a [`Dialect`].
    #[default]
    Delimited,
    /// JSON lines or a top-level JSON array of rows.
    Json(JsonFormat),
}

/// How records and fields are delimited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dialect {
    /// Field separator (`,` for CSV, `\t` for TSV).
    pub delimiter: u8,
    /// Quote character, or `None` when fields are never quoted.
    pub quote: Option<u8>,
    /// Escape inside quoted fields; `None` means RFC 4180 doubled quotes.
    pub escape: Option<u8>,
    /// Lines starting with this byte (after any spaces and tabs) are
    /// skipped.
    pub comment: Option<u8>,
    /// What a blank line is.
    pub blank_lines: BlankLines,
    /// Spaces before an opening quote and after a closing quote are
    /// skipped (`"Year", "Score"`, as some tools write); spaces around an
    /// unquoted field are kept. Needs a delimiter other than a space.
    pub trim_around_quotes: bool,
    /// How a record splits into fields: at each `delimiter` (the
    /// default), at runs of spaces and tabs, or not at all.
    pub split: Split,
}

/// What each byte means to the tokenizer ([`Dialect::classes`]): a table
/// of classes (`CLASS_*`, 0 for a byte of a field), and the (at most
/// four) bytes whose class is not 0, for the scans that look for them
/// 16 bytes at a time.
pub(crate) struct Classes {
    pub(crate) table: [u8; 256],
    pub(crate) stops: [u8; 4],
}

/// How a record splits into fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Split {
    /// At each delimiter byte.
    #[default]
    Delimiter,
    /// At each run of spaces and tabs, those at a line's start and end
    /// ignored: columns aligned for reading, as many tools print tables
    /// (`--delimiter whitespace`; the delimiter is a space). A line of
    /// only spaces is blank.
    Whitespace,
    /// Not at all: each line is one field (text that is not a table,
    /// loaded one line a row). Needs no quote.
    Line,
}

impl Default for Dialect {
    fn default() -> Self {
        Dialect {
            delimiter: b',',
            quote: Some(b'"'),
            escape: None,
            comment: None,
            blank_lines: BlankLines::Auto,
            trim_around_quotes: false,
            split: Split::Delimiter,
        }
    }
}

/// What a blank line (nothing before its LF or CR LF) is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BlankLines {
    /// [`BlankLines::Null`] for records of one field (a one-column table
    /// fed with no field map), where a blank line is an empty value, as
    /// PostgreSQL's COPY and DuckDB read it; else [`BlankLines::Skip`].
    #[default]
    Auto,
    /// Skipped: no record.
    Skip,
    /// A record of one empty field: NULL in a one-column table (unless
    /// `--null` names another marker); too few fields in a wider one.
    Null,
}

impl BlankLines {
    /// Whether a blank line is a record, for records of `one_field`.
    pub fn are_records(self, one_field: bool) -> bool {
        match self {
            BlankLines::Auto => one_field,
            BlankLines::Skip => false,
            BlankLines::Null => true,
        }
    }
}

pub(crate) const CLASS_DELIM: u8 = 1;
pub(crate) const CLASS_NEWLINE: u8 = 2;
pub(crate) const CLASS_QUOTE: u8 = 3;

impl Dialect {
    /// Checks that the special bytes are distinct and not newlines.
    pub fn validate(&self) -> Result<()> {
        let named = [
            ("delimiter", Some(self.delimiter)),
            ("quote", self.quote),
            ("escape", self.escape.filter(|e| Some(*e) != self.quote)),
            ("comment", self.comment),
        ];
        for (i, (name, b)) in named.iter().enumerate() {
            let Some(b) = b else { continue };
            if *b == b'\n' || *b == b'\r' {
                return Err(Error::Config(format!("the {name} cannot be a newline")));
            }
            if !b.is_ascii() {
                return Err(Error::Config(format!(
                    "the {name} must be a single ASCII character"
                )));
            }
            for (other, ob) in &named[..i] {
                if *ob == Some(*b) {
                    return Err(Error::Config(format!(
                        "the {name} and the {other} are both {:?}",
                        *b as char
                    )));
                }
            }
        }
        if self.trim_around_quotes && (self.delimiter == b' ' || self.quote.is_none()) {
            return Err(Error::Config(
                "trimming spaces around quoted fields needs a quote and a delimiter other than a space".into(),
            ));
        }
        if self.split == Split::Whitespace && self.delimiter != b' ' {
            return Err(Error::Config(
                "fields split at runs of whitespace have a space as their delimiter".into(),
            ));
        }
        if self.split == Split::Line && self.quote.is_some() {
            return Err(Error::Config(
                "lines read as one field each are not quoted".into(),
            ));
        }
        Ok(())
    }

    /// True when doubled quotes (`""`) stand for one quote inside a quoted field.
    pub(crate) fn doubling(&self) -> bool {
        self.escape.is_none() || self.escape == self.quote
    }

    /// Whether a line starting at `rest` is a comment: it starts with
    /// the comment character, after any spaces and tabs.
    #[inline]
    pub fn starts_comment(&self, rest: &[u8]) -> bool {
        let Some(cm) = self.comment else {
            return false;
        };
        match rest.first() {
            Some(&c) if c == cm => true,
            Some(b' ' | b'\t') => rest.iter().find(|&&b| b != b' ' && b != b'\t') == Some(&cm),
            _ => false,
        }
    }

    /// Whether `c`, just after a field, ends it (a delimiter).
    #[inline]
    pub(crate) fn ends_field(&self, c: u8) -> bool {
        match self.split {
            Split::Delimiter => c == self.delimiter,
            Split::Whitespace => c == b' ' || c == b'\t',
            Split::Line => false,
        }
    }

    /// The escape byte, when it differs from the quote.
    pub(crate) fn distinct_escape(&self) -> Option<u8> {
        self.escape.filter(|e| Some(*e) != self.quote)
    }

    /// Byte classes for the unquoted-field scan.
    pub(crate) fn classes(&self) -> Classes {
        let table = self.class_table();
        // The bytes of a class, the first repeated to fill four.
        let mut stops = [b'\n'; 4];
        let mut k = 0;
        for (b, c) in table.iter().enumerate() {
            if *c != 0 && k < 4 {
                stops[k] = b as u8;
                k += 1;
            }
        }
        let first = stops[0];
        for s in stops.iter_mut().skip(k) {
            *s = first;
        }
        Classes { table, stops }
    }

    fn class_table(&self) -> [u8; 256] {
        let mut t = [0u8; 256];
        match self.split {
            Split::Delimiter => t[self.delimiter as usize] = CLASS_DELIM,
            Split::Whitespace => {
                t[b' ' as usize] = CLASS_DELIM;
                t[b'\t' as usize] = CLASS_DELIM;
            }
            Split::Line => {}
        }
        t[b'\n' as usize] = CLASS_NEWLINE;
        if let Some(q) = self.quote {
            t[q as usize] = CLASS_QUOTE;
        }
        t
    }
}
