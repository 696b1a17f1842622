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
use super::sink::{Committed, GroupFiles, Layout, Rows, Sink};

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
        DataType::Double
        | DataType::Date
        | DataType::Time
        | DataType::Interval
        | DataType::Timestamp
        | DataType::TimestampTz
        | DataType::Boolean => {
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

/// `values` for a one-column check of a value, the column named `name`:
/// the formats and NULL marker of the load, numbers exact (as every
/// inferred column is). Not a clone of `values`: its list of exact columns
/// holds every name of a wide table, and would be copied for every check.
fn probe_values(values: &ValueOptions, name: String) -> ValueOptions {
    ValueOptions {
        null: values.null.clone(),
        date_format: values.date_format.clone(),
        timestamp_format: values.timestamp_format.clone(),
        exact: vec![name],
    }
}

/// Whether a column of type `ty` takes `value` as a load of an inferred
/// column would: exactly as written.
fn takes(ty: DataType, value: &[u8], values: &ValueOptions) -> bool {
    checker(ty, values, 1).is_some_and(|mut b| b.push(0, value, true).is_ok())
}

/// A builder of one column of type `ty` that checks values as the load
/// reads them into such a column (`values`' formats and NULL marker,
/// numbers exact); `None` when no column can have the type.
fn checker(ty: DataType, values: &ValueOptions, capacity: usize) -> Option<BatchBuilder> {
    let name = "probe".to_string();
    let schema = Schema::new(vec![Column {
        name: name.clone(),
        data_type: ty,
        default: None,
        primary_key: false,
    }])
    .ok()?;
    Some(BatchBuilder::new(
        &schema,
        Arc::new(probe_values(values, name)),
        capacity,
    ))
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

/// A value a probe found that its column's type does not take.
pub(super) struct Probed {
    /// Its row of the group (records rejected for other reasons skipped).
    pub(super) row: u64,
    pub(super) column: usize,
    pub(super) value: Vec<u8>,
    /// Where: the file and 1-based line.
    pub(super) path: String,
    pub(super) line: u64,
}

/// Reads the group that starts `inputs` once more, writing nothing, to
/// find every value of `opts.widen`'s columns that their types refuse:
/// those columns are read as TEXT and each value is checked against its
/// column's type, which widens as values need it (as [`widen_probed`]
/// does). Returns them in input order. One probe widens all the columns a
/// file contradicts late, where reading the group again for each would
/// read a wide file (thousands of columns) thousands of times.
pub(super) fn probe(
    inputs: &[Input],
    opts: &LoadOptions,
    before: &[Widening],
) -> Result<Vec<Probed>> {
    let mut schema = opts
        .schema
        .clone()
        .ok_or_else(|| Error::Internal("a widening without a schema".into()))?;
    let counts = widenings_by_column(before);
    let mut checks = Vec::new();
    for (i, c) in schema.columns.iter_mut().enumerate() {
        if opts.widen.iter().any(|n| n.eq_ignore_ascii_case(&c.name))
            && c.data_type != DataType::Text
        {
            let times = counts.get(c.name.as_str()).copied().unwrap_or(0);
            let key = c.primary_key
                || opts
                    .key
                    .as_ref()
                    .is_some_and(|k| k.eq_ignore_ascii_case(&c.name));
            checks.push(Check {
                column: i,
                ty: c.data_type,
                key,
                times,
            });
            c.data_type = DataType::Text;
            c.primary_key = false;
        }
    }
    let o = LoadOptions {
        schema: Some(schema.clone()),
        on_error: super::OnError::Skip,
        rejects: None,
        max_errors: None,
        progress: None,
        stop: None,
        key: None,
        ..opts.clone()
    };
    let mut layout = Layout::plain(schema);
    layout.provenance = true;
    let mut prober = Prober {
        layout: Some(layout),
        inputs: &[],
        opts,
        checks,
        provenance: Vec::new(),
        found: Vec::new(),
    };
    super::pipeline::run_group(&mut prober, "", inputs, &o, &mut None, 0, &mut None)?;
    // Found column by column within a batch: in input order, as the
    // widenings are reported.
    prober.found.sort_by_key(|p| (p.row, p.column));
    Ok(prober.found)
}

/// A column a probe checks: its type so far and widenings of it.
struct Check {
    column: usize,
    ty: DataType,
    key: bool,
    times: usize,
}

/// The probe's sink: checks each value of the columns read as TEXT
/// against its column's type, widening that type as values need it.
struct Prober<'a, 'o> {
    layout: Option<Layout>,
    inputs: &'a [Input],
    opts: &'o LoadOptions,
    /// The columns checked, with their types so far.
    checks: Vec<Check>,
    provenance: Vec<super::sink::Provenance>,
    found: Vec<Probed>,
}

impl Prober<'_, '_> {
    /// A builder that checks values against `ty` (as [`takes`] does).
    fn checker(&self, ty: DataType) -> Option<BatchBuilder> {
        checker(ty, &self.opts.values, 1024)
    }
}

impl<'a> Sink<'a> for Prober<'a, '_> {
    fn begin(&mut self, _: &LoadOptions, inputs: &'a [Input]) -> Result<Layout> {
        self.inputs = inputs;
        self.layout
            .take()
            .ok_or_else(|| Error::Internal("a probe of more than one group".into()))
    }

    fn write(&mut self, rows: Rows<'_>) -> Result<u64> {
        use arrow_array::Array;
        self.provenance.extend(rows.provenance.iter().cloned());
        let mut n = 0u64;
        for piece in rows.pieces {
            let batch = crate::batch::dict::decode_batch(&piece.batch, &[])?;
            for k in 0..self.checks.len() {
                let col = self.checks[k].column;
                let Some(text) = batch
                    .column(col)
                    .as_any()
                    .downcast_ref::<arrow_array::StringArray>()
                else {
                    continue;
                };
                let mut check = self.checker(self.checks[k].ty);
                for r in 0..text.len() {
                    let (Some(b), false) = (check.as_mut(), text.is_null(r)) else {
                        continue;
                    };
                    let value = text.value(r).as_bytes();
                    if b.push(0, value, true).is_ok() {
                        continue;
                    }
                    let row = rows.first_row + n + r as u64;
                    let (path, line) = super::sink::locate(&self.provenance, self.inputs, row);
                    self.found.push(Probed {
                        row,
                        column: col,
                        value: value.to_vec(),
                        path,
                        line,
                    });
                    let c = &mut self.checks[k];
                    // Past the widenings a column may take, the load
                    // fails on the value as it would have.
                    check = match next_type(c.ty, value, &self.opts.values, c.key, c.times) {
                        Some(t) => {
                            c.ty = t;
                            c.times += 1;
                            self.checker(t)
                        }
                        None => None,
                    };
                }
            }
            n += batch.num_rows() as u64;
        }
        Ok(n)
    }

    fn finish(&mut self) -> Result<()> {
        Ok(())
    }

    fn commit(&mut self, _: &GroupFiles<'_>) -> Result<Committed> {
        Ok(Committed::default())
    }

    fn abort(&mut self) {}
}

/// The type a column of type `ty` widens to for `value`, after `times`
/// widenings of it (see [`wider_type`]); `None` past [`MAX_WIDENINGS`] or
/// when no type takes it.
fn next_type(
    ty: DataType,
    value: &[u8],
    values: &ValueOptions,
    key: bool,
    times: usize,
) -> Option<DataType> {
    if times >= MAX_WIDENINGS {
        return None;
    }
    wider_type(ty, value, values, key, times + 1 >= MAX_WIDENINGS)
}

/// Widens, in `opts`' schema, each column of `opts.widen` to the narrowest
/// type that takes all its values of `probed`, in order (within
/// [`MAX_WIDENINGS`] widenings of a column in all; a value past that fails
/// the next read as it would have), adding each step to `widened`.
pub(super) fn widen_probed(
    opts: &mut LoadOptions,
    probed: Vec<Probed>,
    widened: &mut Vec<Widening>,
) {
    let key = opts.key.clone();
    let values = opts.values.clone();
    let (widen, Some(schema)) = (&opts.widen, &mut opts.schema) else {
        return;
    };
    let mut counts: std::collections::HashMap<String, usize> = widenings_by_column(widened)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    for p in probed {
        let Some(col) = schema.columns.get_mut(p.column) else {
            continue;
        };
        if !widen.iter().any(|n| n.eq_ignore_ascii_case(&col.name))
            || takes(col.data_type, &p.value, &values)
        {
            continue;
        }
        let times = counts.get(&col.name).copied().unwrap_or(0);
        let is_key = col.primary_key
            || key
                .as_ref()
                .is_some_and(|k| k.eq_ignore_ascii_case(&col.name));
        let Some(wider) = next_type(col.data_type, &p.value, &values, is_key, times) else {
            continue;
        };
        widened.push(Widening {
            column: col.name.clone(),
            from: col.data_type,
            to: wider,
            path: p.path,
            line: p.line,
            value: String::from_utf8_lossy(&p.value).into_owned(),
        });
        *counts.entry(col.name.clone()).or_default() += 1;
        col.data_type = wider;
    }
}

/// How many times each column was widened.
fn widenings_by_column(widened: &[Widening]) -> std::collections::HashMap<&str, usize> {
    let mut counts = std::collections::HashMap::new();
    for w in widened {
        *counts.entry(w.column.as_str()).or_default() += 1;
    }
    counts
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
