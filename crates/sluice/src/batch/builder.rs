//! Column builders: typed fields in, one Arrow `RecordBatch` out.

use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Date32Builder, Decimal64Builder, Float64Builder, Int32Builder, Int64Builder,
    IntervalMonthDayNanoBuilder, Time64MicrosecondBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_buffer::{Buffer, NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_schema::SchemaRef;
use serde::{Deserialize, Serialize};

use super::{DataType, Schema};
use crate::error::{Error, Result};
use crate::parse::value;

/// How text becomes values: NULL marker and date/time formats.
#[derive(Debug, Clone, Default)]
pub struct ValueOptions {
    /// An unquoted field equal to this is NULL (default: the empty string).
    pub null: Vec<u8>,
    /// chrono/strftime format for DATE columns; `None` is `YYYY-MM-DD`.
    pub date_format: Option<String>,
    /// chrono/strftime format for TIMESTAMP and TIMESTAMPTZ columns
    /// (`%z` for an offset); `None` is ISO 8601.
    pub timestamp_format: Option<String>,
    /// Numeric columns (by name) whose values must read back as written:
    /// no `+`, no leading zeros, no digits a DOUBLE would round. For
    /// types inferred from samples, whose other values the samples did
    /// not see: such a value fails rather than being stored changed.
    pub exact: Vec<String>,
}

enum Col {
    Bool(BooleanBuilder),
    Int(Int32Builder),
    BigInt(Int64Builder),
    Double(Float64Builder),
    Decimal(Decimal64Builder, u8, u8),
    Date(Date32Builder),
    Time(Time64MicrosecondBuilder),
    /// INTERVAL: months, days and nanoseconds (whole microseconds).
    Interval(IntervalMonthDayNanoBuilder),
    Timestamp(TimestampMicrosecondBuilder),
    /// TIMESTAMPTZ: UTC instants, the array's zone [`super::UTC_ZONE`].
    TimestampTz(TimestampMicrosecondBuilder),
    Text(TextBuilder),
}

/// The parser's fused scan-and-convert path for a column (see
/// [`BatchBuilder::fast_path`]); anything the path does not take goes
/// through [`BatchBuilder::push`], which is the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FastPath {
    None,
    Integer,
    /// At most `int_digits` digits before the point and `scale` after.
    Decimal {
        scale: u8,
        int_digits: u8,
    },
    Date,
}

/// Builds one batch of rows for a schema, one field at a time.
pub struct BatchBuilder {
    cols: Vec<Col>,
    /// Per column: whether it is one of `opts.exact`.
    exact: Vec<bool>,
    arrow_schema: SchemaRef,
    opts: Arc<ValueOptions>,
}

/// Min/max of one column in a segment, for pruning (a zone map).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum StatRange {
    /// Integers, decimals (scaled), dates (days), times and timestamps (µs),
    /// booleans (0/1).
    Int(i64, i64),
    /// Doubles, when every value is finite.
    Float(f64, f64),
}

/// Per-column statistics of a batch or segment.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ColumnStats {
    pub nulls: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<StatRange>,
}

impl ColumnStats {
    /// Combines the statistics of two row sets.
    pub fn merge(&mut self, other: &ColumnStats) {
        self.nulls += other.nulls;
        self.range = match (self.range, other.range) {
            (None, r) | (r, None) => r,
            (Some(StatRange::Int(a, b)), Some(StatRange::Int(c, d))) => {
                Some(StatRange::Int(a.min(c), b.max(d)))
            }
            (Some(StatRange::Float(a, b)), Some(StatRange::Float(c, d))) => {
                Some(StatRange::Float(a.min(c), b.max(d)))
            }
            _ => None,
        };
    }
}

impl BatchBuilder {
    pub fn new(schema: &Schema, opts: Arc<ValueOptions>, capacity: usize) -> Self {
        let cols = schema
            .columns
            .iter()
            .map(|c| match c.data_type {
                DataType::Boolean => Col::Bool(BooleanBuilder::with_capacity(capacity)),
                DataType::Int => Col::Int(Int32Builder::with_capacity(capacity)),
                DataType::BigInt => Col::BigInt(Int64Builder::with_capacity(capacity)),
                DataType::Double => Col::Double(Float64Builder::with_capacity(capacity)),
                DataType::Decimal { precision, scale } => Col::Decimal(
                    Decimal64Builder::with_capacity(capacity)
                        .with_precision_and_scale(precision, scale as i8)
                        .expect("schema validated precision and scale"),
                    precision,
                    scale,
                ),
                DataType::Date => Col::Date(Date32Builder::with_capacity(capacity)),
                DataType::Time => Col::Time(Time64MicrosecondBuilder::with_capacity(capacity)),
                DataType::Interval => {
                    Col::Interval(IntervalMonthDayNanoBuilder::with_capacity(capacity))
                }
                DataType::Timestamp => {
                    Col::Timestamp(TimestampMicrosecondBuilder::with_capacity(capacity))
                }
                DataType::TimestampTz => Col::TimestampTz(
                    TimestampMicrosecondBuilder::with_capacity(capacity)
                        .with_timezone(super::UTC_ZONE),
                ),
                DataType::Text => Col::Text(TextBuilder::with_capacity(capacity, capacity * 8)),
            })
            .collect();
        let exact = schema
            .columns
            .iter()
            .map(|c| opts.exact.iter().any(|n| n.eq_ignore_ascii_case(&c.name)))
            .collect();
        BatchBuilder {
            cols,
            exact,
            arrow_schema: schema.arrow_schema(),
            opts,
        }
    }

    /// Appends one field to column `col`. `quoted` fields are never NULL.
    ///
    /// Non-text columns take an empty field as NULL whatever `--null` says:
    /// it cannot be a value of theirs.
    #[inline]
    pub fn push(&mut self, col: usize, field: &[u8], quoted: bool) -> Result<(), String> {
        let is_null = !quoted && field == self.opts.null.as_slice();
        let c = &mut self.cols[col];
        if let Col::Text(b) = c {
            if is_null {
                b.append_null();
                return Ok(());
            }
            let s = if field.is_ascii() {
                // SAFETY: ASCII is valid UTF-8.
                unsafe { std::str::from_utf8_unchecked(field) }
            } else {
                std::str::from_utf8(field).map_err(|e| {
                    format!(
                        "invalid UTF-8 at byte {} of the value (another encoding? see --encoding)",
                        e.valid_up_to()
                    )
                })?
            };
            return append_text(b, s);
        }
        if is_null || field.is_empty() {
            self.push_null(col);
            return Ok(());
        }
        if self.exact[col] {
            self.check_exact(col, field)?;
        }
        match &mut self.cols[col] {
            Col::Bool(b) => b.append_value(value::parse_bool(field)?),
            Col::Int(b) => b.append_value(value::parse_i32(field)?),
            Col::BigInt(b) => b.append_value(value::parse_i64(field)?),
            Col::Double(b) => {
                let v = value::parse_f64(field)?;
                if self.exact[col] {
                    value::check_f64_exact(field, v)?;
                }
                b.append_value(v)
            }
            Col::Decimal(b, p, s) => b.append_value(value::parse_decimal(field, *p, *s)?),
            Col::Date(b) => {
                b.append_value(value::parse_date(field, self.opts.date_format.as_deref())?)
            }
            Col::Time(b) => b.append_value(value::parse_time(field)?),
            Col::Interval(b) => b.append_value(value::parse_interval(field)?),
            Col::Timestamp(b) => b.append_value(value::parse_timestamp(
                field,
                self.opts.timestamp_format.as_deref(),
            )?),
            Col::TimestampTz(b) => b.append_value(value::parse_timestamptz(
                field,
                self.opts.timestamp_format.as_deref(),
            )?),
            Col::Text(_) => unreachable!("handled above"),
        }
        Ok(())
    }

    /// [`Self::push`] of a field its caller knows to be ASCII (no UTF-8
    /// to check) when column `col` is TEXT.
    #[inline]
    pub fn push_ascii(&mut self, col: usize, field: &[u8], quoted: bool) -> Result<(), String> {
        let is_null = !quoted && field == self.opts.null.as_slice();
        match &mut self.cols[col] {
            Col::Text(b) if is_null => {
                b.append_null();
                Ok(())
            }
            Col::Text(b) => {
                debug_assert!(field.is_ascii());
                // SAFETY: the caller checked the bytes are ASCII, which is
                // valid UTF-8.
                append_text(b, unsafe { std::str::from_utf8_unchecked(field) })
            }
            _ => self.push(col, field, quoted),
        }
    }

    /// Appends INT or DATE values read by the parser's fast paths; with
    /// `valid`, those it says are not are NULLs.
    #[inline]
    pub fn append_i32s(&mut self, col: usize, v: &[i32], valid: Option<&[bool]>) {
        match (&mut self.cols[col], valid) {
            (Col::Int(b), None) => b.append_slice(v),
            (Col::Int(b), Some(ok)) => b.append_values(v, ok),
            (Col::Date(b), None) => b.append_slice(v),
            (Col::Date(b), Some(ok)) => b.append_values(v, ok),
            _ => debug_assert!(false, "i32s pushed to column {col}"),
        }
    }

    /// Appends BIGINT or DECIMAL (scaled) values read by the parser's
    /// fast paths; with `valid`, those it says are not are NULLs.
    #[inline]
    pub fn append_i64s(&mut self, col: usize, v: &[i64], valid: Option<&[bool]>) {
        match (&mut self.cols[col], valid) {
            (Col::BigInt(b), None) => b.append_slice(v),
            (Col::BigInt(b), Some(ok)) => b.append_values(v, ok),
            (Col::Decimal(b, ..), None) => b.append_slice(v),
            (Col::Decimal(b, ..), Some(ok)) => b.append_values(v, ok),
            (Col::Timestamp(b) | Col::TimestampTz(b), None) => b.append_slice(v),
            (Col::Timestamp(b) | Col::TimestampTz(b), Some(ok)) => b.append_values(v, ok),
            _ => debug_assert!(false, "i64s pushed to column {col}"),
        }
    }

    /// The NULL marker (`--null`; empty by default).
    pub fn null_marker(&self) -> &[u8] {
        &self.opts.null
    }

    /// Appends TEXT values `data[s..z]` for each `(s, z)` of `fields`
    /// (with `quoted_bit` in `z` when the field was quoted), as
    /// [`Self::push_ascii`] does each: the bytes are ASCII and fit (the
    /// caller checked both).
    pub fn append_texts(
        &mut self,
        col: usize,
        data: &[u8],
        fields: &[(u32, u32)],
        quoted_bit: u32,
    ) {
        let null = self.opts.null.as_slice();
        let Col::Text(b) = &mut self.cols[col] else {
            debug_assert!(false, "texts pushed to column {col}");
            return;
        };
        for &(s, z) in fields {
            let quoted = z & quoted_bit != 0;
            let (s, z) = (s as usize, (z & !quoted_bit) as usize);
            let is_null =
                !quoted && z - s == null.len() && (null.is_empty() || &data[s..z] == null);
            if is_null {
                b.append_null();
            } else {
                b.append_from(data, s, z);
            }
        }
    }

    /// Whether `len` more bytes of text fit column `col`'s values in
    /// this block (what [`Self::push_ascii`] refuses past 2 GiB).
    #[inline]
    pub fn text_fits(&self, col: usize, len: usize) -> bool {
        match &self.cols[col] {
            Col::Text(b) => b.values_slice().len() + len <= i32::MAX as usize,
            _ => false,
        }
    }

    /// Checks that a value of an exact INT, BIGINT or DECIMAL column reads
    /// back as written (DOUBLE values are checked once parsed).
    fn check_exact(&self, col: usize, field: &[u8]) -> Result<(), String> {
        let t = value::trim(field);
        if matches!(self.cols[col], Col::TimestampTz(_)) {
            // Inferred from times that all carried an offset: one without
            // is not read in a zone nobody wrote.
            return match value::timestamp_has_zone(t, self.opts.timestamp_format.as_deref()) {
                Some(false) => Err(
                    "has no UTC offset, where the values the column's type was inferred from have one (give its type with --types or --schema)"
                        .into(),
                ),
                _ => Ok(()),
            };
        }
        let Some(text) = value::NumberText::parse(t) else {
            // Not a number: the type's parser says why.
            return Ok(());
        };
        let name = match &self.cols[col] {
            Col::Int(_) => "INT",
            Col::BigInt(_) => "BIGINT",
            Col::Decimal(..) => "DECIMAL",
            _ => return Ok(()),
        };
        match text.unkept_form(name, false) {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    /// Whether column `col` is one whose values must read back as written
    /// (see [`ValueOptions::exact`]).
    pub fn is_exact(&self, col: usize) -> bool {
        self.exact[col]
    }

    /// Whether column `col` takes the integer fast path of the parser: an
    /// INT or BIGINT column whose NULL marker cannot look like a number.
    pub fn is_integer(&self, col: usize) -> bool {
        let null_is_numeric = matches!(self.opts.null.first(), Some(b'0'..=b'9' | b'-' | b'+'));
        matches!(self.cols[col], Col::Int(_) | Col::BigInt(_)) && !null_is_numeric
    }

    /// Whether column `col` is a TIMESTAMP or TIMESTAMPTZ read without
    /// `--timestamp-format`, whose common form the structural index's
    /// runs read themselves.
    pub fn timestamp_fast(&self, col: usize) -> bool {
        matches!(self.cols[col], Col::Timestamp(_) | Col::TimestampTz(_))
            && self.opts.timestamp_format.is_none()
    }

    /// Which of the parser's fused scan-and-convert paths column `col`
    /// takes: integers as [`Self::is_integer`]; DECIMAL (not one of
    /// `opts.exact`) and DATE without `--date-format` when the NULL
    /// marker cannot look like one of their values.
    pub fn fast_path(&self, col: usize) -> FastPath {
        let null_is_numeric = matches!(
            self.opts.null.first(),
            Some(b'0'..=b'9' | b'-' | b'+' | b'.')
        );
        if null_is_numeric {
            return FastPath::None;
        }
        match &self.cols[col] {
            Col::Int(_) | Col::BigInt(_) => FastPath::Integer,
            Col::Decimal(_, p, s) if !self.exact[col] => FastPath::Decimal {
                scale: *s,
                int_digits: p - s,
            },
            Col::Date(_) if self.opts.date_format.is_none() => FastPath::Date,
            _ => FastPath::None,
        }
    }

    /// Appends a DECIMAL value already scaled by the fast path.
    #[inline(always)]
    pub fn push_decimal(&mut self, col: usize, v: i64) {
        if let Col::Decimal(b, ..) = &mut self.cols[col] {
            b.append_value(v)
        }
    }

    /// Appends a DATE (days since 1970-01-01) read by the fast path.
    #[inline(always)]
    pub fn push_date(&mut self, col: usize, days: i32) {
        if let Col::Date(b) = &mut self.cols[col] {
            b.append_value(days)
        }
    }

    /// Appends an integer already parsed by the fast path (range-checked
    /// for INT).
    #[inline(always)]
    pub fn push_integer(&mut self, col: usize, v: i64) -> Result<(), String> {
        match &mut self.cols[col] {
            Col::Int(b) => b.append_value(
                i32::try_from(v)
                    .map_err(|_| "out of range for INT (-2147483648..2147483647)".to_string())?,
            ),
            Col::BigInt(b) => b.append_value(v),
            _ => {
                return Err(
                    "internal: integer pushed to a non-integer column (this is a bug)".into(),
                );
            }
        }
        Ok(())
    }

    /// Appends a NULL to column `col` (missing fields, rejected rows).
    #[inline]
    pub fn push_null(&mut self, col: usize) {
        match &mut self.cols[col] {
            Col::Bool(b) => b.append_null(),
            Col::Int(b) => b.append_null(),
            Col::BigInt(b) => b.append_null(),
            Col::Double(b) => b.append_null(),
            Col::Decimal(b, ..) => b.append_null(),
            Col::Date(b) => b.append_null(),
            Col::Time(b) => b.append_null(),
            Col::Interval(b) => b.append_null(),
            Col::Timestamp(b) | Col::TimestampTz(b) => b.append_null(),
            Col::Text(b) => b.append_null(),
        }
    }

    /// [`Self::finish`] without the rows `drop` (sorted, distinct): rows of
    /// rejected records. Statistics cover the rows kept.
    pub fn finish_without(&mut self, drop: &[u32]) -> Result<(RecordBatch, Vec<ColumnStats>)> {
        if drop.is_empty() {
            return self.finish();
        }
        let (batch, _) = self.finish()?;
        let mut keep = vec![true; batch.num_rows()];
        for &r in drop {
            if let Some(k) = keep.get_mut(r as usize) {
                *k = false;
            }
        }
        let mask = arrow_array::BooleanArray::from(keep);
        let batch = arrow_select::filter::filter_record_batch(&batch, &mask)?;
        let stats = batch
            .columns()
            .iter()
            .map(|a| column_stats(a.as_ref()))
            .collect();
        Ok((batch, stats))
    }

    /// Finishes the batch and computes its per-column statistics.
    pub fn finish(&mut self) -> Result<(RecordBatch, Vec<ColumnStats>)> {
        let arrays: Vec<ArrayRef> = self
            .cols
            .iter_mut()
            .map(|c| -> ArrayRef {
                match c {
                    Col::Bool(b) => Arc::new(b.finish()),
                    Col::Int(b) => Arc::new(b.finish()),
                    Col::BigInt(b) => Arc::new(b.finish()),
                    Col::Double(b) => Arc::new(b.finish()),
                    Col::Decimal(b, ..) => Arc::new(b.finish()),
                    Col::Date(b) => Arc::new(b.finish()),
                    Col::Time(b) => Arc::new(b.finish()),
                    Col::Interval(b) => Arc::new(b.finish()),
                    Col::Timestamp(b) | Col::TimestampTz(b) => Arc::new(b.finish()),
                    Col::Text(b) => Arc::new(b.finish()),
                }
            })
            .collect();
        let stats = arrays.iter().map(|a| column_stats(a.as_ref())).collect();
        let batch =
            RecordBatch::try_new(self.arrow_schema.clone(), arrays).map_err(Error::Arrow)?;
        Ok((batch, stats))
    }
}

/// A TEXT column as Arrow lays out a string array (the values' bytes one
/// after another, their end offsets, the validity bits), built without
/// a copy call per value: a value read from a block of input is copied
/// 32 bytes at a time (`append_from`), which is most of them.
struct TextBuilder {
    values: Vec<u8>,
    /// Ends of the values so far, after a first 0.
    offsets: Vec<i32>,
    nulls: NullBufferBuilder,
}

impl TextBuilder {
    fn with_capacity(items: usize, bytes: usize) -> Self {
        let mut offsets = Vec::with_capacity(items + 1);
        offsets.push(0);
        TextBuilder {
            values: Vec::with_capacity(bytes),
            offsets,
            nulls: NullBufferBuilder::new(items),
        }
    }

    fn values_slice(&self) -> &[u8] {
        &self.values
    }

    #[inline]
    fn append_null(&mut self) {
        self.offsets.push(self.values.len() as i32);
        self.nulls.append_null();
    }

    #[inline]
    fn append_value(&mut self, s: &str) {
        self.values.extend_from_slice(s.as_bytes());
        self.offsets.push(self.values.len() as i32);
        self.nulls.append_non_null();
    }

    /// Appends `data[s..z]`, which is ASCII (the caller checked).
    #[inline(always)]
    fn append_from(&mut self, data: &[u8], s: usize, z: usize) {
        let len = z - s;
        if len <= 32 && s + 32 <= data.len() {
            self.values.reserve(32);
            // SAFETY: 32 bytes are read from `data[s..]` (checked) and
            // written into the reserved capacity of `values`; only the
            // first `len` of them count.
            unsafe {
                let at = self.values.len();
                std::ptr::copy_nonoverlapping(
                    data.as_ptr().add(s),
                    self.values.as_mut_ptr().add(at),
                    32,
                );
                self.values.set_len(at + len);
            }
        } else {
            self.values.extend_from_slice(&data[s..z]);
        }
        self.offsets.push(self.values.len() as i32);
        self.nulls.append_non_null();
    }

    /// The values so far as a string array; the builder starts again.
    fn finish(&mut self) -> StringArray {
        let values = std::mem::take(&mut self.values);
        let offsets = std::mem::replace(&mut self.offsets, vec![0]);
        // SAFETY: the offsets start at 0 and never decrease (each is the
        // length of `values` after a push), and the values are UTF-8
        // (`append_value` takes `str`, `append_from` ASCII only).
        unsafe {
            let offsets = OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets));
            StringArray::new_unchecked(offsets, Buffer::from_vec(values), self.nulls.finish())
        }
    }
}

/// Appends a TEXT value, refusing to grow a block's column past 2 GiB.
#[inline]
fn append_text(b: &mut TextBuilder, s: &str) -> Result<(), String> {
    if b.values_slice().len() + s.len() > i32::MAX as usize {
        return Err("text column exceeds 2 GiB in one block; lower --memory-limit".into());
    }
    b.append_value(s);
    Ok(())
}

fn int_range<T: Copy + Into<i64>>(values: impl Iterator<Item = Option<T>>) -> Option<StatRange> {
    let mut r: Option<(i64, i64)> = None;
    for v in values.flatten() {
        let v: i64 = v.into();
        r = Some(match r {
            None => (v, v),
            Some((lo, hi)) => (lo.min(v), hi.max(v)),
        });
    }
    r.map(|(a, b)| StatRange::Int(a, b))
}

/// [`int_range`] of a primitive array: without NULLs a min/max over the
/// values buffer that the compiler vectorises (the iterator of options
/// took 6 % of a load of integers).
fn primitive_range<T>(a: &arrow_array::PrimitiveArray<T>) -> Option<StatRange>
where
    T: arrow_array::ArrowPrimitiveType,
    T::Native: Into<i64> + Ord + Copy,
{
    if a.null_count() > 0 {
        return int_range(a.iter());
    }
    let v = a.values();
    let first = *v.first()?;
    let (lo, hi) = v
        .iter()
        .fold((first, first), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    Some(StatRange::Int(lo.into(), hi.into()))
}

/// Computes null count and min/max of one array.
pub fn column_stats(a: &dyn Array) -> ColumnStats {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    use arrow_schema::DataType as A;
    let range = match a.data_type() {
        A::Int32 => primitive_range(a.as_primitive::<Int32Type>()),
        A::Int64 => primitive_range(a.as_primitive::<Int64Type>()),
        A::Decimal64(..) => primitive_range(a.as_primitive::<Decimal64Type>()),
        A::Date32 => primitive_range(a.as_primitive::<Date32Type>()),
        A::Timestamp(..) => primitive_range(a.as_primitive::<TimestampMicrosecondType>()),
        A::Time64(_) => primitive_range(a.as_primitive::<Time64MicrosecondType>()),
        A::Boolean => int_range(a.as_boolean().iter().map(|v| v.map(i64::from))),
        A::Float64 => {
            let mut r: Option<(f64, f64)> = None;
            let mut finite = true;
            for v in a.as_primitive::<Float64Type>().iter().flatten() {
                finite &= v.is_finite();
                r = Some(match r {
                    None => (v, v),
                    Some((lo, hi)) => (lo.min(v), hi.max(v)),
                });
            }
            r.filter(|_| finite).map(|(a, b)| StatRange::Float(a, b))
        }
        _ => None,
    };
    ColumnStats {
        nulls: a.null_count() as u64,
        range,
    }
}
