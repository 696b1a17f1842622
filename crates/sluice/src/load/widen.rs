//! Widening an inferred column type that a later value contradicts.
//!
//! Inference sees samples; a value it did not see (`5.75` in a column
//! whose samples were all integers) fails the load. For a column whose
//! type the load inferred, of a table the load creates, and before the
//! load's first commit, the type is widened instead to the narrowest type
//! that holds the value as written, and the group of files is read again:
//! BIGINT → DECIMAL(18,s) → DOUBLE → TEXT, DECIMAL → a larger scale →
//! DOUBLE → TEXT, DOUBLE, DATE, TIMESTAMP and BOOLEAN → TEXT.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde::Serialize;

use crate::batch::{BatchBuilder, Column, DataType, Schema, ValueOptions};
use crate::error::{Error, Result};
use crate::parse::value;
use crate::source::Input;

use super::LoadOptions;
use super::plan::is_regular;

/// Widenings of one column at most: the last one goes to TEXT, which
/// takes every value, so that a column whose values keep needing more
/// (a DECIMAL scale growing one digit a time) reads its files at most
/// this many times again.
pub(super) const MAX_WIDENINGS: usize = 3;

/// A column whose type a load widened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Widening {
    pub column: String,
    pub from: DataType,
    pub to: DataType,
    /// Where the value that did not fit was: file and 1-based line.
    pub path: String,
    pub line: u64,
    /// The value, as written (invalid UTF-8 replaced).
    pub value: String,
}

impl std::fmt::Display for Widening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "widened column {} {} → {} at {} line {} ({:?})",
            self.column, self.from, self.to, self.path, self.line, self.value
        )
    }
}

/// A value of a block that its column's type did not take, as the
/// writer saw it first in input order.
#[derive(Debug, Clone)]
pub(super) struct Contradiction {
    /// The input it is in (an index into the group's inputs).
    pub file: usize,
    pub column: usize,
    pub value: Vec<u8>,
}

/// The narrowest type wider than `from` that takes `value` as written
/// (with `values`' NULL marker and formats, and read back exactly as a
/// number); only TEXT when `last`. `None` when none does (TEXT itself
/// refuses invalid UTF-8). A `key` column skips DOUBLE, which cannot be
/// a key.
pub fn wider_type(
    from: DataType,
    value: &[u8],
    values: &ValueOptions,
    key: bool,
    last: bool,
) -> Option<DataType> {
    let scale = fraction_digits(value);
    let decimal = |at_least: u8| {
        scale.map(|s| DataType::Decimal {
            precision: 18,
            scale: s.max(at_least),
        })
    };
    let candidates: Vec<Option<DataType>> = match from {
        DataType::Int => vec![
            Some(DataType::BigInt),
            decimal(0),
            Some(DataType::Double),
            Some(DataType::Text),
        ],
        DataType::BigInt => vec![decimal(0), Some(DataType::Double), Some(DataType::Text)],
        DataType::Decimal { scale: s, .. } => {
            vec![decimal(s), Some(DataType::Double), Some(DataType::Text)]
        }
        DataType::Double | DataType::Date | DataType::Timestamp | DataType::Boolean => {
            vec![Some(DataType::Text)]
        }
        DataType::Text => Vec::new(),
    };
    candidates
        .into_iter()
        .flatten()
        .filter(|t| *t != from && (!last || *t == DataType::Text))
        .filter(|t| !key || t.can_be_key())
        .find(|t| takes(*t, value, values))
}

/// Digits after the point of a plain decimal (`-12.50`: 2), or `None`
/// when the value is not one that a DECIMAL(18, s) could hold.
fn fraction_digits(v: &[u8]) -> Option<u8> {
    let t = value::trim(v);
    let body = t.strip_prefix(b"-").unwrap_or(t);
    let (int, frac) = match memchr::memchr(b'.', body) {
        Some(i) => (&body[..i], &body[i + 1..]),
        None => (body, &body[..0]),
    };
    let digits = |d: &[u8]| d.iter().all(u8::is_ascii_digit);
    (!(int.is_empty() && frac.is_empty())
        && digits(int)
        && digits(frac)
        && int.len() + frac.len() <= 18)
        .then_some(frac.len() as u8)
}

/// Whether a column of type `ty` takes `value` as a load of an inferred
/// column would: exactly as written.
fn takes(ty: DataType, value: &[u8], values: &ValueOptions) -> bool {
    let name = "probe".to_string();
    let Ok(schema) = Schema::new(vec![Column {
        name: name.clone(),
        data_type: ty,
        default: None,
        primary_key: false,
    }]) else {
        return false;
    };
    let opts = ValueOptions {
        exact: vec![name],
        ..values.clone()
    };
    let mut b = BatchBuilder::new(&schema, Arc::new(opts), 1);
    b.push(0, value, true).is_ok()
}

/// A group of files that failed to load, and what widening needs to know
/// of it.
pub(super) struct Failure<'a> {
    pub(super) error: Error,
    /// The value behind `error`, when it is one its column's type did not
    /// take.
    pub(super) contradiction: Option<Contradiction>,
    /// The group's inputs (and those after it).
    pub(super) inputs: &'a [Input],
    /// The table did not exist when the load started.
    pub(super) new_table: bool,
    /// Files committed by this load's earlier groups (and in all), if any.
    pub(super) committed: Option<(u64, u64)>,
}

/// After a failed group: the options to read it again with, with the
/// offending value's column widened (see [`LoadOptions::widen`]), and
/// what was widened; or the error to fail with. `before` are the
/// widenings of this load so far.
pub(super) fn widen_after(
    opts: &LoadOptions,
    f: Failure<'_>,
    before: &[Widening],
) -> Result<(LoadOptions, Widening)> {
    let (Error::Parse { path, line, .. }, Some(c), Some(schema), true) =
        (&f.error, &f.contradiction, &opts.schema, f.new_table)
    else {
        return Err(f.error);
    };
    let Some(col) = schema.columns.get(c.column) else {
        return Err(f.error);
    };
    if !opts.widen.iter().any(|n| n.eq_ignore_ascii_case(&col.name)) {
        return Err(f.error);
    }
    let times = before.iter().filter(|w| w.column == col.name).count();
    let key = col.primary_key
        || opts
            .key
            .as_ref()
            .is_some_and(|k| k.eq_ignore_ascii_case(&col.name));
    let last = times + 1 >= MAX_WIDENINGS;
    let Some(wider) = wider_type(col.data_type, &c.value, &opts.values, key, last) else {
        return Err(f.error);
    };
    if let Some((committed, total)) = f.committed {
        return Err(Error::NotWidened {
            column: col.name.clone(),
            ty: col.data_type,
            wider,
            committed,
            total,
            cause: Box::new(f.error),
        });
    }
    // Read again only what can be: not a stream, not after a stop.
    let stopping = [&opts.stop, &opts.cancel]
        .into_iter()
        .flatten()
        .any(|s| s.load(Ordering::Relaxed));
    let rereadable = f
        .inputs
        .get(..=c.file)
        .is_some_and(|read| read.iter().all(is_regular));
    if times >= MAX_WIDENINGS || stopping || !rereadable {
        return Err(f.error);
    }
    let widening = Widening {
        column: col.name.clone(),
        from: col.data_type,
        to: wider,
        path: path.clone(),
        line: *line,
        value: String::from_utf8_lossy(&c.value).into_owned(),
    };
    let mut next = opts.clone();
    if let Some(s) = &mut next.schema {
        s.columns[c.column].data_type = wider;
    }
    Ok((next, widening))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wider(from: DataType, v: &str) -> Option<DataType> {
        wider_type(from, v.as_bytes(), &ValueOptions::default(), false, false)
    }

    const fn dec(scale: u8) -> DataType {
        DataType::Decimal {
            precision: 18,
            scale,
        }
    }

    #[test]
    fn each_type_widens_to_the_narrowest_that_keeps_the_value() {
        assert_eq!(wider(DataType::BigInt, "5.75"), Some(dec(2)));
        assert_eq!(wider(DataType::BigInt, "-0.5"), Some(dec(1)));
        assert_eq!(wider(DataType::BigInt, "1.5e3"), Some(DataType::Double));
        assert_eq!(wider(DataType::BigInt, "n/a"), Some(DataType::Text));
        // Would not read back as written: a code, not a number.
        assert_eq!(wider(DataType::BigInt, "0042"), Some(DataType::Text));
        assert_eq!(wider(DataType::BigInt, "+5.5"), Some(DataType::Text));
        assert_eq!(
            wider(DataType::BigInt, "18446744073709551615"),
            Some(DataType::Text)
        );
        assert_eq!(wider(DataType::Int, "5000000000"), Some(DataType::BigInt));
        assert_eq!(wider(dec(3), "0.9732"), Some(dec(4)));
        assert_eq!(wider(dec(2), "0.12345678901234567"), Some(dec(17)));
        assert_eq!(wider(dec(2), "0.1234567890123456789"), Some(DataType::Text));
        assert_eq!(wider(dec(2), "abc"), Some(DataType::Text));
        assert_eq!(wider(DataType::Double, "1,5"), Some(DataType::Text));
        assert_eq!(wider(DataType::Date, "2024-13-45"), Some(DataType::Text));
        assert_eq!(wider(DataType::Timestamp, "later"), Some(DataType::Text));
        assert_eq!(wider(DataType::Boolean, "maybe"), Some(DataType::Text));
        assert_eq!(wider(DataType::Text, "x"), None);
    }

    #[test]
    fn keys_skip_double_and_the_last_widening_is_text() {
        let o = ValueOptions::default();
        assert_eq!(
            wider_type(DataType::BigInt, b"1.5e3", &o, true, false),
            Some(DataType::Text)
        );
        assert_eq!(
            wider_type(DataType::BigInt, b"5.75", &o, true, false),
            Some(dec(2))
        );
        assert_eq!(
            wider_type(DataType::BigInt, b"5.75", &o, false, true),
            Some(DataType::Text)
        );
        // Nothing takes invalid UTF-8.
        assert_eq!(wider_type(DataType::Date, b"\xff", &o, false, false), None);
    }
}
