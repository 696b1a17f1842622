//! Arrow columns as PostgreSQL values: the type of each result column,
//! and its rows as DataRow messages in text or binary format.
//!
//! Written here rather than through a helper crate: those target another
//! arrow version, and PostgreSQL's text forms (a timestamp without
//! trailing zeros, a numeric with exactly its scale) are easy to get
//! subtly wrong.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal64Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, Time64MicrosecondType, TimestampMicrosecondType,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType as A, Schema, TimeUnit};
use bytes::{BufMut, BytesMut};
use pgwire::api::Type;
use pgwire::api::results::{FieldFormat, FieldInfo};
use pgwire::messages::data::DataRow;

/// Days from 1970-01-01 to PostgreSQL's epoch, 2000-01-01.
const PG_EPOCH_DAYS: i32 = 10_957;
/// Microseconds from 1970-01-01 to 2000-01-01.
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;

/// The PostgreSQL type of an Arrow column.
pub fn pg_type(t: &A) -> Type {
    match t {
        A::Boolean => Type::BOOL,
        A::Int8 | A::Int16 | A::UInt8 => Type::INT2,
        A::Int32 | A::UInt16 => Type::INT4,
        A::Int64 | A::UInt32 => Type::INT8,
        A::Float32 => Type::FLOAT4,
        A::Float64 => Type::FLOAT8,
        A::Decimal128(_, _) | A::Decimal64(_, _) | A::UInt64 => Type::NUMERIC,
        A::Date32 => Type::DATE,
        A::Time64(_) => Type::TIME,
        A::Timestamp(_, None) => Type::TIMESTAMP,
        A::Timestamp(_, Some(_)) => Type::TIMESTAMPTZ,
        A::Interval(_) => Type::INTERVAL,
        A::Dictionary(_, v) => pg_type(v),
        A::List(f) => array_type(&pg_type(f.data_type())),
        _ => Type::TEXT,
    }
}

/// The array type of an element type (`text[]` of `text`).
fn array_type(element: &Type) -> Type {
    match *element {
        Type::BOOL => Type::BOOL_ARRAY,
        Type::INT2 => Type::INT2_ARRAY,
        Type::INT4 => Type::INT4_ARRAY,
        Type::INT8 => Type::INT8_ARRAY,
        Type::FLOAT4 => Type::FLOAT4_ARRAY,
        Type::FLOAT8 => Type::FLOAT8_ARRAY,
        Type::NUMERIC => Type::NUMERIC_ARRAY,
        Type::DATE => Type::DATE_ARRAY,
        Type::TIME => Type::TIME_ARRAY,
        Type::TIMESTAMP => Type::TIMESTAMP_ARRAY,
        Type::TIMESTAMPTZ => Type::TIMESTAMPTZ_ARRAY,
        _ => Type::TEXT_ARRAY,
    }
}

/// The RowDescription of a result: each column's name and type, in the
/// format the client asked for (`binary(i)`).
pub fn fields(schema: &Schema, binary: impl Fn(usize) -> bool) -> Vec<FieldInfo> {
    schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let format = if binary(i) {
                FieldFormat::Binary
            } else {
                FieldFormat::Text
            };
            let info = FieldInfo::new(f.name().clone(), None, None, pg_type(f.data_type()), format);
            match f.data_type() {
                // numeric(p, s) as PostgreSQL packs it: clients take the
                // scale from it.
                A::Decimal128(p, s) | A::Decimal64(p, s) => {
                    info.with_type_modifier(((*p as i32) << 16 | (*s as i32 & 0xffff)) + 4)
                }
                _ => info,
            }
        })
        .collect()
}

/// A column downcast once per batch.
enum Col<'a> {
    Bool(&'a arrow_array::BooleanArray),
    I16(&'a arrow_array::Int16Array),
    I32(&'a arrow_array::Int32Array),
    I64(&'a arrow_array::Int64Array),
    F32(&'a arrow_array::Float32Array),
    F64(&'a arrow_array::Float64Array),
    Dec(&'a arrow_array::Decimal128Array, i8),
    Dec64(&'a arrow_array::Decimal64Array, i8),
    Date(&'a arrow_array::Date32Array),
    Ts(&'a arrow_array::TimestampMicrosecondArray),
    /// A time of day: microseconds since midnight.
    Time(&'a arrow_array::Time64MicrosecondArray),
    /// An instant and its zone's offset in seconds (the session's).
    TsTz(
        &'a arrow_array::TimestampMicrosecondArray,
        sluice::zone::Zone,
    ),
    Str(&'a arrow_array::StringArray),
    Interval(&'a arrow_array::IntervalMonthDayNanoArray),
    /// An array (array_agg's): its elements are read as a column of
    /// their own.
    List(&'a arrow_array::ListArray),
    /// Anything else, shown as Arrow's text of it.
    Other(ArrayRef),
}

fn col(a: &ArrayRef) -> Col<'_> {
    match a.data_type() {
        A::Boolean => Col::Bool(a.as_boolean()),
        A::Int16 => Col::I16(a.as_primitive::<Int16Type>()),
        A::Int32 => Col::I32(a.as_primitive::<Int32Type>()),
        A::Int64 => Col::I64(a.as_primitive::<Int64Type>()),
        A::Float32 => Col::F32(a.as_primitive::<Float32Type>()),
        A::Float64 => Col::F64(a.as_primitive::<Float64Type>()),
        A::Decimal128(_, s) => Col::Dec(a.as_primitive::<Decimal128Type>(), *s),
        A::Decimal64(_, s) => Col::Dec64(a.as_primitive::<Decimal64Type>(), *s),
        A::Date32 => Col::Date(a.as_primitive::<Date32Type>()),
        A::Time64(TimeUnit::Microsecond) => Col::Time(a.as_primitive::<Time64MicrosecondType>()),
        A::Timestamp(TimeUnit::Microsecond, None) => {
            Col::Ts(a.as_primitive::<TimestampMicrosecondType>())
        }
        A::Timestamp(TimeUnit::Microsecond, Some(zone)) => Col::TsTz(
            a.as_primitive::<TimestampMicrosecondType>(),
            sluice::zone::Zone::of(Some(zone)),
        ),
        A::Utf8 => Col::Str(a.as_string::<i32>()),
        A::Interval(arrow_schema::IntervalUnit::MonthDayNano) => {
            Col::Interval(a.as_primitive::<arrow_array::types::IntervalMonthDayNanoType>())
        }
        A::List(_) => Col::List(a.as_list::<i32>()),
        _ => Col::Other(a.clone()),
    }
}

/// Dictionary columns as plain ones (results rarely hold them).
fn plain(a: &ArrayRef) -> ArrayRef {
    if let Some(d) = a.as_any_dictionary_opt() {
        let keys: Vec<Option<u32>> = (0..d.keys().len())
            .map(|i| (!d.keys().is_null(i)).then(|| d.normalized_keys()[i] as u32))
            .collect();
        let idx = arrow_array::UInt32Array::from(keys);
        // `take` lives in arrow-select; a dictionary's values are small,
        // so the rows are gathered one by one instead.
        return gather(d.values(), &idx);
    }
    a.clone()
}

fn gather(values: &ArrayRef, idx: &arrow_array::UInt32Array) -> ArrayRef {
    match values.data_type() {
        A::Utf8 => {
            let v = values.as_string::<i32>();
            Arc::new(
                idx.iter()
                    .map(|k| k.and_then(|k| (!v.is_null(k as usize)).then(|| v.value(k as usize))))
                    .collect::<arrow_array::StringArray>(),
            )
        }
        _ => {
            // Other value types are shown as text.
            let v: Vec<Option<String>> = idx
                .iter()
                .map(|k| {
                    k.and_then(|k| {
                        (!values.is_null(k as usize))
                            .then(|| format!("{:?}", values.slice(k as usize, 1)))
                    })
                })
                .collect();
            Arc::new(arrow_array::StringArray::from(v))
        }
    }
}

/// Encodes the rows of `batch` as DataRow messages; `binary(i)` says
/// whether column `i` goes in binary format.
pub fn rows(batch: &RecordBatch, binary: &[bool]) -> Vec<DataRow> {
    let plain_cols: Vec<ArrayRef> = batch.columns().iter().map(plain).collect();
    let cols: Vec<Col> = plain_cols.iter().map(col).collect();
    let n = batch.num_rows();
    let mut out = Vec::with_capacity(n);
    let mut buf = BytesMut::with_capacity(64 * cols.len().max(1));
    for r in 0..n {
        for (c, (col, arr)) in cols.iter().zip(&plain_cols).enumerate() {
            if arr.is_null(r) {
                buf.put_i32(-1);
                continue;
            }
            let at = buf.len();
            buf.put_i32(0);
            if binary.get(c).copied().unwrap_or(false) {
                put_binary(&mut buf, col, r);
            } else {
                put_text(&mut buf, col, r);
            }
            let len = (buf.len() - at - 4) as i32;
            buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
        }
        // The last row takes the buffer itself: one row (a point select)
        // costs no split (which makes the buffer shared, an allocation).
        let row = if r + 1 == n {
            std::mem::take(&mut buf)
        } else {
            buf.split()
        };
        out.push(DataRow::new(row, cols.len() as i16));
    }
    out
}

fn put_text(buf: &mut BytesMut, col: &Col, r: usize) {
    use std::fmt::Write;
    let mut w = Writer(buf);
    let _ = match col {
        Col::Bool(a) => w.write_str(if a.value(r) { "t" } else { "f" }),
        Col::I16(a) => w.write_str(itoa::Buffer::new().format(a.value(r))),
        Col::I32(a) => w.write_str(itoa::Buffer::new().format(a.value(r))),
        Col::I64(a) => w.write_str(itoa::Buffer::new().format(a.value(r))),
        Col::F32(a) => w.write_str(&float_text(a.value(r) as f64)),
        Col::F64(a) => w.write_str(&float_text(a.value(r))),
        Col::Dec(a, s) => w.write_str(&decimal_text(a.value(r), *s)),
        Col::Dec64(a, s) => w.write_str(&decimal_text(a.value(r) as i128, *s)),
        Col::Date(a) => w.write_str(&date_text(a.value(r))),
        Col::Ts(a) => w.write_str(&timestamp_text(a.value(r))),
        Col::Time(a) => w.write_str(&sluice::batch::format_time(a.value(r))),
        Col::TsTz(a, zone) => {
            let us = a.value(r);
            w.write_str(&sluice::batch::format_timestamptz(us, zone.utc_offset(us)))
        }
        Col::Str(a) => w.write_str(a.value(r)),
        Col::Interval(a) => w.write_str(&sluice::query::interval::format(
            sluice::query::interval::Interval::from_arrow(a.value(r)),
        )),
        Col::List(a) => {
            array_text(w.0, a, r);
            Ok(())
        }
        Col::Other(a) => w.write_str(&other_text(a, r)),
    };
}

/// An array as PostgreSQL writes it (`{a,b,NULL}`, see
/// [`sluice::batch::array_literal`]), each element in its own text form.
fn array_text(buf: &mut BytesMut, a: &arrow_array::ListArray, r: usize) {
    let values = plain(&a.value(r));
    let c = col(&values);
    let mut one = BytesMut::new();
    let items = (0..values.len()).map(|i| {
        values.is_valid(i).then(|| {
            one.clear();
            put_text(&mut one, &c, i);
            String::from_utf8_lossy(&one).into_owned()
        })
    });
    buf.put_slice(sluice::batch::array_literal(items).as_bytes());
}

/// An array in PostgreSQL's binary form: dimensions (none when empty),
/// whether any element is NULL, the element type, the length and lower
/// bound 1, then each element as its length and binary form (-1: NULL).
fn array_binary(buf: &mut BytesMut, a: &arrow_array::ListArray, r: usize) {
    let values = plain(&a.value(r));
    let c = col(&values);
    let element = match a.data_type() {
        A::List(f) => pg_type(f.data_type()),
        _ => Type::TEXT,
    };
    let n = values.len();
    buf.put_i32(if n == 0 { 0 } else { 1 });
    buf.put_i32(i32::from(values.null_count() > 0));
    buf.put_u32(element.oid());
    if n == 0 {
        return;
    }
    buf.put_i32(n as i32);
    buf.put_i32(1);
    for i in 0..n {
        if values.is_null(i) {
            buf.put_i32(-1);
            continue;
        }
        let at = buf.len();
        buf.put_i32(0);
        put_binary(buf, &c, i);
        let len = (buf.len() - at - 4) as i32;
        buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }
}

struct Writer<'a>(&'a mut BytesMut);

impl std::fmt::Write for Writer<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.put_slice(s.as_bytes());
        Ok(())
    }
}

fn put_binary(buf: &mut BytesMut, col: &Col, r: usize) {
    match col {
        Col::Bool(a) => buf.put_u8(a.value(r) as u8),
        Col::I16(a) => buf.put_i16(a.value(r)),
        Col::I32(a) => buf.put_i32(a.value(r)),
        Col::I64(a) => buf.put_i64(a.value(r)),
        Col::F32(a) => buf.put_f32(a.value(r)),
        Col::F64(a) => buf.put_f64(a.value(r)),
        Col::Dec(a, s) => numeric_binary(buf, a.value(r), *s),
        Col::Dec64(a, s) => numeric_binary(buf, a.value(r) as i128, *s),
        Col::Date(a) => buf.put_i32(a.value(r).saturating_sub(PG_EPOCH_DAYS)),
        Col::Ts(a) | Col::TsTz(a, _) => buf.put_i64(a.value(r).saturating_sub(PG_EPOCH_MICROS)),
        // time's binary form: microseconds since midnight.
        Col::Time(a) => buf.put_i64(a.value(r)),
        Col::Str(a) => buf.put_slice(a.value(r).as_bytes()),
        // PostgreSQL's binary interval: microseconds, days, months.
        Col::Interval(a) => {
            let v = sluice::query::interval::Interval::from_arrow(a.value(r));
            buf.put_i64(v.micros);
            buf.put_i32(v.days);
            buf.put_i32(v.months);
        }
        Col::List(a) => array_binary(buf, a, r),
        Col::Other(a) => buf.put_slice(other_text(a, r).as_bytes()),
    }
}

fn other_text(a: &ArrayRef, r: usize) -> String {
    // Only types sluice never produces in results reach here.
    format!("{:?}", a.slice(r, 1))
}

/// A double as PostgreSQL writes it (see [`sluice::batch::float_text`]).
pub use sluice::batch::float_text;

/// `unscaled * 10^-scale` with exactly `scale` digits after the point.
pub fn decimal_text(unscaled: i128, scale: i8) -> String {
    let digits = unscaled.unsigned_abs().to_string();
    let sign = if unscaled < 0 { "-" } else { "" };
    if scale <= 0 {
        let zeros = "0".repeat((-scale) as usize);
        return if unscaled == 0 {
            "0".into()
        } else {
            format!("{sign}{digits}{zeros}")
        };
    }
    let s = scale as usize;
    let padded = format!("{digits:0>width$}", width = s + 1);
    let (int, frac) = padded.split_at(padded.len() - s);
    format!("{sign}{int}.{frac}")
}

/// NUMERIC's binary form: base-10000 digit groups with a weight, a sign
/// and the display scale.
pub fn numeric_binary(buf: &mut BytesMut, unscaled: i128, scale: i8) {
    let dscale = scale.max(0) as usize;
    let digits = unscaled.unsigned_abs().to_string();
    // The decimal digits of the integer and fraction parts.
    let (int, frac) = if scale <= 0 {
        let mut i = digits.clone();
        if unscaled != 0 {
            i.push_str(&"0".repeat((-scale) as usize));
        }
        (i, String::new())
    } else {
        let padded = format!("{digits:0>width$}", width = dscale + 1);
        let (i, f) = padded.split_at(padded.len() - dscale);
        (i.to_string(), f.to_string())
    };
    // Pad to whole groups of 4: the integer part on the left, the
    // fraction on the right.
    let int = format!("{}{int}", "0".repeat((4 - int.len() % 4) % 4));
    let frac = format!("{frac}{}", "0".repeat((4 - frac.len() % 4) % 4));
    let group = |s: &str| -> Vec<i16> {
        s.as_bytes()
            .chunks(4)
            .map(|c| c.iter().fold(0i16, |n, d| n * 10 + (d - b'0') as i16))
            .collect()
    };
    let mut groups = group(&int);
    let mut weight = groups.len() as i16 - 1;
    groups.extend(group(&frac));
    // Leading zero groups move the weight; trailing ones are implied.
    let lead = groups.iter().take_while(|g| **g == 0).count();
    groups.drain(..lead);
    weight -= lead as i16;
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    buf.put_i16(groups.len() as i16);
    buf.put_i16(weight);
    buf.put_u16(if unscaled < 0 { 0x4000 } else { 0 });
    buf.put_u16(dscale as u16);
    for g in groups {
        buf.put_i16(g);
    }
}

/// Days since 1970-01-01 as `YYYY-MM-DD`.
pub fn date_text(days: i32) -> String {
    match chrono::NaiveDate::from_num_days_from_ce_opt(days.saturating_add(719_163)) {
        Some(d) => d.format("%Y-%m-%d").to_string(),
        None => days.to_string(),
    }
}

/// Microseconds since 1970-01-01 as `YYYY-MM-DD HH:MM:SS[.ffffff]`, the
/// fraction without trailing zeros (PostgreSQL's ISO style).
pub fn timestamp_text(micros: i64) -> String {
    match chrono::DateTime::from_timestamp_micros(micros) {
        Some(t) => {
            let t = t.naive_utc();
            let base = t.format("%Y-%m-%d %H:%M:%S").to_string();
            let frac = micros.rem_euclid(1_000_000);
            if frac == 0 {
                base
            } else {
                let f = format!("{frac:06}");
                format!("{base}.{}", f.trim_end_matches('0'))
            }
        }
        None => micros.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NUMERIC binary decoded back to text, as a client does.
    fn numeric_back(bytes: &[u8]) -> String {
        let n = i16::from_be_bytes([bytes[0], bytes[1]]) as usize;
        let weight = i16::from_be_bytes([bytes[2], bytes[3]]) as i32;
        let sign = u16::from_be_bytes([bytes[4], bytes[5]]);
        let dscale = u16::from_be_bytes([bytes[6], bytes[7]]) as usize;
        let groups: Vec<i64> = (0..n)
            .map(|i| i16::from_be_bytes([bytes[8 + 2 * i], bytes[9 + 2 * i]]) as i64)
            .collect();
        // Integer part: groups with weight >= 0.
        let mut int = String::new();
        for w in (0..=weight.max(0)).rev() {
            let idx = weight - w;
            let g = if idx >= 0 && (idx as usize) < n {
                groups[idx as usize]
            } else {
                0
            };
            if int.is_empty() {
                int = g.to_string();
            } else {
                int.push_str(&format!("{g:04}"));
            }
        }
        if weight < 0 {
            int = "0".into();
        }
        let mut frac = String::new();
        let mut w = -1;
        while frac.len() < dscale {
            let idx = weight - w;
            let g = if idx >= 0 && (idx as usize) < n {
                groups[idx as usize]
            } else {
                0
            };
            frac.push_str(&format!("{g:04}"));
            w -= 1;
        }
        frac.truncate(dscale);
        let sign = if sign == 0x4000 { "-" } else { "" };
        if dscale == 0 {
            format!("{sign}{int}")
        } else {
            format!("{sign}{int}.{frac}")
        }
    }

    #[test]
    fn numeric_binary_reads_back_as_its_text() {
        let cases: &[(i128, i8)] = &[
            (0, 0),
            (0, 2),
            (1, 0),
            (-1, 0),
            (12345, 2),
            (-12345, 2),
            (10000, 0),
            (100000000, 4),
            (1, 10),
            (-5, 1),
            (99999999, 4),
            (i128::MAX / 100, 0),
            (12345678901234567890123456789012345678, 38),
            (-12345678901234567890123456789012345678, 6),
            (7, -2),
        ];
        for &(v, s) in cases {
            let mut buf = BytesMut::new();
            numeric_binary(&mut buf, v, s);
            let text = decimal_text(v, s);
            let back = numeric_back(&buf);
            let expect = if v == 0 && s > 0 {
                format!("0.{}", "0".repeat(s as usize))
            } else {
                text.clone()
            };
            assert_eq!(back, expect, "{v} scale {s}");
        }
    }

    #[test]
    fn decimal_text_keeps_its_scale() {
        assert_eq!(decimal_text(1250, 2), "12.50");
        assert_eq!(decimal_text(-5, 2), "-0.05");
        assert_eq!(decimal_text(0, 3), "0.000");
        assert_eq!(decimal_text(42, 0), "42");
        assert_eq!(decimal_text(7, -2), "700");
    }

    #[test]
    fn dates_and_timestamps_as_postgresql_writes_them() {
        assert_eq!(date_text(0), "1970-01-01");
        assert_eq!(date_text(19_723), "2024-01-01");
        assert_eq!(date_text(-1), "1969-12-31");
        assert_eq!(timestamp_text(0), "1970-01-01 00:00:00");
        assert_eq!(timestamp_text(1_500_000), "1970-01-01 00:00:01.5");
        assert_eq!(timestamp_text(-1), "1969-12-31 23:59:59.999999");
    }

    #[test]
    fn floats_as_postgresql_writes_them() {
        assert_eq!(float_text(1.0), "1");
        assert_eq!(float_text(0.1), "0.1");
        assert_eq!(float_text(-2.5), "-2.5");
        assert_eq!(float_text(1e20), "1e+20");
        assert_eq!(float_text(1.5e-7), "1.5e-07");
        assert_eq!(float_text(f64::NAN), "NaN");
        assert_eq!(float_text(f64::NEG_INFINITY), "-Infinity");
        for v in [0.1 + 0.2, 1e300, 123456.789, 5e-324] {
            assert_eq!(float_text(v).parse::<f64>().unwrap(), v);
        }
    }
}
