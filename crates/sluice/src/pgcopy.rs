//! PostgreSQL's binary COPY format, encoded straight from Arrow batches
//! of the store's types: the wire format of a load into a PostgreSQL
//! server (`COPY t FROM STDIN (FORMAT binary)`), with no text in between.
//!
//! Useful for: a sink that streams a load's batches to PostgreSQL. The
//! bytes go to a copy-in stream in large buffers; the server parses
//! nothing but lengths.
//! Not useful for: talking to the server (the connection, COPY, errors
//! are the sink's), or other databases.
//!
//! The layout (PostgreSQL's `COPY` documentation, "Binary Format"):
//! the header `PGCOPY\n\xff\r\n\0`, flags (i32 0) and header extension
//! length (i32 0); each row a field count (i16) and each field its length
//! (i32; -1 for NULL, then no bytes) and its bytes; the trailer i16 -1.
//! Integers are big-endian. Values as `*_send` writes them: int4, int8,
//! float8 (IEEE bits), bool (one byte), text (UTF-8 bytes), date (i32 days
//! since 2000-01-01), timestamp (i64 microseconds since 2000-01-01), and
//! numeric (see [`put_numeric`]).

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal64Type, Float64Type, Int32Type, Int64Type, IntervalMonthDayNanoType,
    Time64MicrosecondType, TimestampMicrosecondType, UInt16Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType as A, TimeUnit};

use crate::error::{Error, Result};

/// The 11-byte signature, then flags and the header extension's length.
pub const HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";

/// The end of the data: a field count of -1.
pub const TRAILER: &[u8] = &[0xff, 0xff];

/// Days from 1970-01-01 (Arrow's epoch) to 2000-01-01 (PostgreSQL's).
const PG_EPOCH_DAYS: i32 = 10_957;

/// Microseconds from 1970-01-01 to 2000-01-01.
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;

/// One column, read for encoding.
enum Col<'a> {
    Int(&'a arrow_array::Int32Array),
    BigInt(&'a arrow_array::Int64Array),
    Double(&'a arrow_array::Float64Array),
    Bool(&'a arrow_array::BooleanArray),
    Text(&'a arrow_array::StringArray),
    Dict(
        &'a arrow_array::DictionaryArray<UInt16Type>,
        &'a arrow_array::StringArray,
    ),
    Date(&'a arrow_array::Date32Array),
    Timestamp(&'a arrow_array::TimestampMicrosecondArray),
    Time(&'a arrow_array::Time64MicrosecondArray),
    Interval(&'a arrow_array::IntervalMonthDayNanoArray),
    Decimal(&'a arrow_array::Decimal64Array, u16),
}

fn column(a: &ArrayRef) -> Result<Col<'_>> {
    Ok(match a.data_type() {
        A::Int32 => Col::Int(a.as_primitive::<Int32Type>()),
        A::Int64 => Col::BigInt(a.as_primitive::<Int64Type>()),
        A::Float64 => Col::Double(a.as_primitive::<Float64Type>()),
        A::Boolean => Col::Bool(a.as_boolean()),
        A::Utf8 => Col::Text(a.as_string::<i32>()),
        A::Dictionary(k, v) if **k == A::UInt16 && **v == A::Utf8 => {
            let d = a.as_dictionary::<UInt16Type>();
            Col::Dict(d, d.values().as_string::<i32>())
        }
        A::Date32 => Col::Date(a.as_primitive::<Date32Type>()),
        // timestamptz's binary form is the same: microseconds since
        // 2000-01-01 00:00:00 UTC.
        A::Timestamp(TimeUnit::Microsecond, _) => {
            Col::Timestamp(a.as_primitive::<TimestampMicrosecondType>())
        }
        // time's binary form: microseconds since midnight.
        A::Time64(TimeUnit::Microsecond) => Col::Time(a.as_primitive::<Time64MicrosecondType>()),
        A::Interval(arrow_schema::IntervalUnit::MonthDayNano) => {
            Col::Interval(a.as_primitive::<IntervalMonthDayNanoType>())
        }
        A::Decimal64(_, s) if *s >= 0 => Col::Decimal(a.as_primitive::<Decimal64Type>(), *s as u16),
        other => {
            return Err(Error::Internal(format!(
                "binary COPY of a column of type {other}"
            )));
        }
    })
}

/// Appends the rows of `batch` (columns of the store's Arrow types; TEXT
/// plain or dictionary-encoded) to `out`, each row a tuple of binary COPY.
/// Write [`HEADER`] before the first batch and [`TRAILER`] after the last.
pub fn encode_batch(batch: &RecordBatch, out: &mut Vec<u8>) -> Result<()> {
    let cols: Vec<Col<'_>> = batch.columns().iter().map(column).collect::<Result<_>>()?;
    let fields = i16::try_from(cols.len()).map_err(|_| {
        Error::Config(format!(
            "{} columns: binary COPY takes at most 32767",
            cols.len()
        ))
    })?;
    for r in 0..batch.num_rows() {
        out.extend_from_slice(&fields.to_be_bytes());
        for (c, a) in cols.iter().zip(batch.columns()) {
            if a.is_null(r) {
                out.extend_from_slice(&(-1i32).to_be_bytes());
                continue;
            }
            match c {
                Col::Int(x) => put(out, &x.value(r).to_be_bytes()),
                Col::BigInt(x) => put(out, &x.value(r).to_be_bytes()),
                Col::Double(x) => put(out, &x.value(r).to_bits().to_be_bytes()),
                Col::Bool(x) => put(out, &[x.value(r) as u8]),
                Col::Text(x) => put(out, x.value(r).as_bytes()),
                Col::Dict(d, v) => put(out, v.value(d.keys().value(r) as usize).as_bytes()),
                Col::Date(x) => put(out, &(x.value(r) - PG_EPOCH_DAYS).to_be_bytes()),
                Col::Timestamp(x) => put(out, &(x.value(r) - PG_EPOCH_MICROS).to_be_bytes()),
                Col::Time(x) => put(out, &x.value(r).to_be_bytes()),
                // interval's binary form: microseconds, days, months.
                Col::Interval(x) => {
                    let v = x.value(r);
                    let mut b = [0u8; 16];
                    b[..8].copy_from_slice(&(v.nanoseconds / 1_000).to_be_bytes());
                    b[8..12].copy_from_slice(&v.days.to_be_bytes());
                    b[12..].copy_from_slice(&v.months.to_be_bytes());
                    put(out, &b)
                }
                Col::Decimal(x, scale) => put_numeric(x.value(r), *scale, out),
            }
        }
    }
    Ok(())
}

/// One field: its length, then its bytes.
fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// One numeric field for `v` scaled by 10^`scale` (a sluice DECIMAL):
/// its length, then ndigits, weight, sign (0 or 0x4000) and dscale (i16
/// each) and the base-10000 digits, most significant first, without
/// trailing zero digits (as `numeric_send` writes them). The digits are
/// grouped from the decimal point: the value is first padded to a
/// multiple of four fraction digits.
pub fn put_numeric(v: i64, scale: u16, out: &mut Vec<u8>) {
    let pad = (4 - scale % 4) % 4;
    let mut m = v.unsigned_abs() as u128 * 10u128.pow(pad as u32);
    let frac_groups = ((scale + pad) / 4) as i16;
    // Base-10000 digits, least significant first: at most 28 decimal
    // digits here (19 of an i64 and 3 of padding, 6 spare).
    let mut g = [0i16; 8];
    let mut n = 0;
    while m > 0 {
        g[n] = (m % 10_000) as i16;
        m /= 10_000;
        n += 1;
    }
    let low_zeros = g[..n].iter().take_while(|&&d| d == 0).count();
    let nd = n - low_zeros;
    let weight = if nd == 0 {
        0
    } else {
        n as i16 - 1 - frac_groups
    };
    out.extend_from_slice(&(8 + 2 * nd as i32).to_be_bytes());
    out.extend_from_slice(&(nd as i16).to_be_bytes());
    out.extend_from_slice(&weight.to_be_bytes());
    out.extend_from_slice(&(if v < 0 { 0x4000u16 } else { 0 }).to_be_bytes());
    out.extend_from_slice(&scale.to_be_bytes());
    for d in g[low_zeros..n].iter().rev() {
        out.extend_from_slice(&d.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proptest::prelude::*;

    use super::*;

    fn numeric(v: i64, scale: u16) -> Vec<u8> {
        let mut out = Vec::new();
        put_numeric(v, scale, &mut out);
        out
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02X}")).collect()
    }

    /// The bytes PostgreSQL 15's `COPY ... TO STDOUT (FORMAT binary)`
    /// writes for these numerics (after the 4-byte length).
    #[test]
    fn numerics_are_the_bytes_postgresql_sends() {
        assert_eq!(
            hex(&numeric(1250, 2)[4..]),
            "000200000000000200".to_owned() + "0C1388"
        );
        assert_eq!(hex(&numeric(-5, 2)[4..]), "0001FFFF4000000201F4");
        assert_eq!(hex(&numeric(0, 2)[4..]), "0000000000000002");
        // 123456789.01: weight 2, digits 1 2345 6789 0100.
        assert_eq!(
            hex(&numeric(12_345_678_901, 2)[4..]),
            "0004000200000002000109291A850064"
        );
        // 10000: weight 1, one digit.
        assert_eq!(hex(&numeric(10_000, 0)[4..]), "00010001000000000001");
        // The length counts the header and the digits.
        assert_eq!(&numeric(1250, 2)[..4], &12i32.to_be_bytes());
    }

    /// Decodes a numeric field (the inverse of `numeric_recv`, for tests).
    fn decode(b: &[u8]) -> (i128, u16) {
        let i = |k: usize| i16::from_be_bytes([b[k], b[k + 1]]);
        let len = i32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
        assert_eq!(len, b.len() - 4);
        let (nd, weight, sign, dscale) = (i(4), i(6), i(8) as u16, i(10) as u16);
        // value = sum(d_k * 10000^(weight - k)); scaled by 10^dscale.
        let mut v: i128 = 0;
        let mut exp = 0i32; // power of 10000 of the last digit read
        for k in 0..nd as usize {
            v = v * 10_000 + i(12 + 2 * k) as i128;
            exp = weight as i32 - k as i32;
        }
        // Scale to 10^dscale: v * 10000^exp * 10^dscale.
        let pow10 = 4 * exp + dscale as i32;
        let scaled = if nd == 0 {
            0
        } else if pow10 >= 0 {
            v * 10i128.pow(pow10 as u32)
        } else {
            let d = 10i128.pow((-pow10) as u32);
            assert_eq!(v % d, 0, "digits below the scale");
            v / d
        };
        (if sign == 0x4000 { -scaled } else { scaled }, dscale)
    }

    proptest! {
        #[test]
        fn numerics_decode_to_their_value(v in any::<i64>(), scale in 0u16..=18) {
            let b = numeric(v, scale);
            prop_assert_eq!(decode(&b), (v as i128, scale));
            // No trailing zero digits, and each digit below 10000.
            let nd = i16::from_be_bytes([b[4], b[5]]) as usize;
            if nd > 0 {
                prop_assert_ne!(&b[12 + 2 * (nd - 1)..14 + 2 * (nd - 1)], &[0u8, 0][..]);
            }
            for k in 0..nd {
                prop_assert!(i16::from_be_bytes([b[12 + 2 * k], b[13 + 2 * k]]) < 10_000);
            }
        }
    }

    #[test]
    fn a_batch_of_every_type_and_nulls() {
        let schema: crate::batch::Schema =
            "i INT, b BIGINT, x DOUBLE, f BOOLEAN, t TEXT, d DATE, ts TIMESTAMP, p DECIMAL(15,2)"
                .parse()
                .unwrap();
        let cols: Vec<ArrayRef> = vec![
            Arc::new(arrow_array::Int32Array::from(vec![Some(7), None])),
            Arc::new(arrow_array::Int64Array::from(vec![Some(-2), None])),
            Arc::new(arrow_array::Float64Array::from(vec![Some(1.5), None])),
            Arc::new(arrow_array::BooleanArray::from(vec![Some(true), None])),
            Arc::new(arrow_array::StringArray::from(vec![Some("hé"), None])),
            // 2024-03-01 is day 19783 of 1970, day 8826 of 2000.
            Arc::new(arrow_array::Date32Array::from(vec![Some(19_783), None])),
            Arc::new(arrow_array::TimestampMicrosecondArray::from(vec![
                Some(PG_EPOCH_MICROS + 1),
                None,
            ])),
            Arc::new(
                arrow_array::Decimal64Array::from(vec![Some(1250), None])
                    .with_precision_and_scale(15, 2)
                    .unwrap(),
            ),
        ];
        let batch = RecordBatch::try_new(schema.arrow_schema(), cols).unwrap();
        let mut out = HEADER.to_vec();
        encode_batch(&batch, &mut out).unwrap();
        out.extend_from_slice(TRAILER);
        let row1 = "0008".to_string()
            + "00000004"
            + "00000007"
            + "00000008"
            + "FFFFFFFFFFFFFFFE"
            + "00000008"
            + "3FF8000000000000"
            + "00000001"
            + "01"
            + "00000003"
            + "68C3A9"
            + "00000004"
            + "0000227A"
            + "00000008"
            + "0000000000000001"
            + "0000000C"
            + "000200000000000200"
            + "0C1388";
        let row2 = "0008".to_string() + &"FFFFFFFF".repeat(8);
        assert_eq!(hex(&out), hex(HEADER) + &row1 + &row2 + "FFFF");
        assert_eq!(HEADER.len(), 19);

        // Dictionary-encoded TEXT writes the same bytes as plain.
        let dict = crate::batch::dict::encode_batch(
            RecordBatch::try_new(
                std::sync::Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
                    "t",
                    A::Utf8,
                    true,
                )])),
                vec![Arc::new(arrow_array::StringArray::from(vec![
                    "a", "a", "b", "a",
                ]))],
            )
            .unwrap(),
        )
        .unwrap();
        let mut plain = Vec::new();
        encode_batch(
            &crate::batch::dict::decode_batch(&dict, &[]).unwrap(),
            &mut plain,
        )
        .unwrap();
        let mut encoded = Vec::new();
        encode_batch(&dict, &mut encoded).unwrap();
        assert_eq!(plain, encoded);

        // A type the store does not have is an internal error, not a panic.
        let odd = RecordBatch::try_new(
            std::sync::Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
                "u",
                A::UInt8,
                true,
            )])),
            vec![Arc::new(arrow_array::UInt8Array::from(vec![1u8]))],
        )
        .unwrap();
        assert!(encode_batch(&odd, &mut Vec::new()).is_err());
    }
}
