//! Rendering one stored value as text (CSV export, the demo, tests).

use arrow_array::Array;
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_schema::DataType as A;

use crate::parse::value::date_from_days;

/// Formats row `i` of `a` the way sluice reads it back; `None` for NULL.
pub fn format_value(a: &dyn Array, i: usize) -> Option<String> {
    if a.is_null(i) {
        return None;
    }
    Some(match a.data_type() {
        A::Boolean => a.as_boolean().value(i).to_string(),
        A::Int32 => a.as_primitive::<Int32Type>().value(i).to_string(),
        A::Int64 => a.as_primitive::<Int64Type>().value(i).to_string(),
        A::Float64 => a.as_primitive::<Float64Type>().value(i).to_string(),
        A::Decimal64(_, scale) => {
            format_decimal(a.as_primitive::<Decimal64Type>().value(i), *scale as u32)
        }
        A::Decimal128(_, scale) => {
            format_decimal128(a.as_primitive::<Decimal128Type>().value(i), *scale as u32)
        }
        A::Date32 => format_date(a.as_primitive::<Date32Type>().value(i)),
        A::Timestamp(..) => format_timestamp(a.as_primitive::<TimestampMicrosecondType>().value(i)),
        A::Utf8 => a.as_string::<i32>().value(i).to_string(),
        other => format!("<{other}>"),
    })
}

/// Formats a scaled integer: `format_decimal(-1234, 2) == "-12.34"`.
pub fn format_decimal(v: i64, scale: u32) -> String {
    format_decimal128(v as i128, scale)
}

/// Formats a 128-bit scaled integer (query results: sums, products).
pub fn format_decimal128(v: i128, scale: u32) -> String {
    if scale == 0 {
        return v.to_string();
    }
    let abs = v.unsigned_abs();
    let div = 10u128.pow(scale);
    let sign = if v < 0 { "-" } else { "" };
    format!(
        "{sign}{}.{:0width$}",
        abs / div,
        abs % div,
        width = scale as usize
    )
}

fn format_date(days: i32) -> String {
    date_from_days(days).map_or_else(|| format!("<date {days}>"), |d| d.to_string())
}

fn format_timestamp(micros: i64) -> String {
    let days = micros.div_euclid(86_400_000_000);
    let rem = micros.rem_euclid(86_400_000_000);
    let Some(date) = i32::try_from(days).ok().and_then(date_from_days) else {
        return format!("<timestamp {micros}>");
    };
    let secs = rem / 1_000_000;
    let frac = rem % 1_000_000;
    let base = format!(
        "{date} {:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    if frac == 0 {
        base
    } else {
        let f = format!("{frac:06}");
        format!("{base}.{}", f.trim_end_matches('0'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_and_times_format_back() {
        assert_eq!(format_decimal(-1234, 2), "-12.34");
        assert_eq!(format_decimal(5, 2), "0.05");
        assert_eq!(format_decimal(-5, 3), "-0.005");
        assert_eq!(format_decimal(i64::MIN, 2), "-92233720368547758.08");
        assert_eq!(format_timestamp(1_500_000), "1970-01-01 00:00:01.5");
        assert_eq!(format_timestamp(-1), "1969-12-31 23:59:59.999999");
        assert_eq!(format_date(-1), "1969-12-31");
    }
}
