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
        A::Float64 => float_text(a.as_primitive::<Float64Type>().value(i)),
        A::Decimal64(_, scale) => {
            format_decimal(a.as_primitive::<Decimal64Type>().value(i), *scale as u32)
        }
        A::Decimal128(_, scale) => {
            format_decimal128(a.as_primitive::<Decimal128Type>().value(i), *scale as u32)
        }
        A::Date32 => format_date(a.as_primitive::<Date32Type>().value(i)),
        A::Time64(_) => format_time(a.as_primitive::<Time64MicrosecondType>().value(i)),
        A::Timestamp(_, None) => {
            format_timestamp(a.as_primitive::<TimestampMicrosecondType>().value(i))
        }
        A::Timestamp(_, Some(zone)) => {
            let us = a.as_primitive::<TimestampMicrosecondType>().value(i);
            format_timestamptz(us, crate::zone::Zone::of(Some(zone)).utc_offset(us))
        }
        A::Utf8 => a.as_string::<i32>().value(i).to_string(),
        A::Interval(arrow_schema::IntervalUnit::MonthDayNano) => {
            crate::query::interval::format(crate::query::interval::Interval::from_arrow(
                a.as_primitive::<IntervalMonthDayNanoType>().value(i),
            ))
        }
        A::List(_) => {
            let values = a.as_list::<i32>().value(i);
            let items = (0..values.len()).map(|j| match values.data_type() {
                A::Boolean if values.is_valid(j) => Some(
                    (if values.as_boolean().value(j) {
                        "t"
                    } else {
                        "f"
                    })
                    .to_string(),
                ),
                _ => format_value(&values, j),
            });
            array_literal(items)
        }
        A::Dictionary(_, v) => {
            let plain = arrow_cast::cast(a, v).ok()?;
            return format_value(&plain, i);
        }
        other => format!("<{other}>"),
    })
}

/// An array as PostgreSQL writes it: `{a,b,NULL}`, an element in double
/// quotes (`"` and `\` escaped) when it is empty, is `NULL` in any case,
/// or holds a brace, comma, quote, backslash or white space.
pub fn array_literal(items: impl Iterator<Item = Option<String>>) -> String {
    let mut out = String::from("{");
    for (j, item) in items.enumerate() {
        if j > 0 {
            out.push(',');
        }
        let Some(v) = item else {
            out.push_str("NULL");
            continue;
        };
        let quote = v.is_empty()
            || v.eq_ignore_ascii_case("null")
            || v.chars()
                .any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_ascii_whitespace());
        if quote {
            out.push('"');
            for c in v.chars() {
                if c == '"' || c == '\\' {
                    out.push('\\');
                }
                out.push(c);
            }
            out.push('"');
        } else {
            out.push_str(&v);
        }
    }
    out.push('}');
    out
}

/// A double as PostgreSQL writes it: the shortest text that reads back
/// as the same value, in exponent form (`1e+300`, `1.5e-07`) when it is
/// very large or small; `NaN`, `Infinity`, `-Infinity`. A CSV export, a
/// `CAST(… AS TEXT)`, a file name of `export --partition-by` and the
/// server's text results all write doubles so.
pub fn float_text(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else if v != 0.0 && (v.abs() >= 1e15 || v.abs() < 1e-4) {
        let s = format!("{v:e}");
        match s.split_once('e') {
            Some((m, e)) => {
                let (sign, digits) = match e.strip_prefix('-') {
                    Some(d) => ('-', d),
                    None => ('+', e),
                };
                format!("{m}e{sign}{digits:0>2}")
            }
            None => s,
        }
    } else {
        format!("{v}")
    }
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

/// An instant as PostgreSQL shows a `timestamptz`: its local time in the
/// zone `zone_secs` east of UTC and the zone's offset (`+00`, `+05:30`,
/// `-08`).
pub fn format_timestamptz(micros: i64, zone_secs: i64) -> String {
    let local = format_timestamp(micros.saturating_add(zone_secs * 1_000_000));
    format!("{local}{}", zone_text(zone_secs))
}

/// A fixed zone as an Arrow time zone: `+HH:MM` (seconds dropped).
pub fn zone_label(zone_secs: i64) -> String {
    let sign = if zone_secs < 0 { '-' } else { '+' };
    let a = zone_secs.unsigned_abs();
    format!("{sign}{:02}:{:02}", a / 3600, a / 60 % 60)
}

/// An offset as PostgreSQL writes it after a time: `+HH`, `+HH:MM`.
pub fn zone_text(zone_secs: i64) -> String {
    let sign = if zone_secs < 0 { '-' } else { '+' };
    let a = zone_secs.unsigned_abs();
    let (h, m, s) = (a / 3600, a / 60 % 60, a % 60);
    match (m, s) {
        (0, 0) => format!("{sign}{h:02}"),
        (_, 0) => format!("{sign}{h:02}:{m:02}"),
        _ => format!("{sign}{h:02}:{m:02}:{s:02}"),
    }
}

fn format_timestamp(micros: i64) -> String {
    let days = micros.div_euclid(86_400_000_000);
    let rem = micros.rem_euclid(86_400_000_000);
    let Some(date) = i32::try_from(days).ok().and_then(date_from_days) else {
        return format!("<timestamp {micros}>");
    };
    format!("{date} {}", format_time(rem))
}

/// A time of day (microseconds since midnight, up to `24:00:00`) as
/// PostgreSQL writes it: `HH:MM:SS`, a fraction without trailing zeros.
pub fn format_time(micros: i64) -> String {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let base = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
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

    #[test]
    fn doubles_switch_to_exponents_where_postgresql_does() {
        // PostgreSQL 15's float8out for each.
        for (v, text) in [
            (999_999_999_999_999.0, "999999999999999"),
            (1e15, "1e+15"),
            (-1.5e15, "-1.5e+15"),
            (1e16, "1e+16"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-0.0, "-0"),
            (2.5, "2.5"),
        ] {
            assert_eq!(float_text(v), text, "{v}");
        }
    }

    #[test]
    fn arrays_are_written_as_postgresql_writes_them() {
        let items = ["a", "", "b c", "NULL", "x\"y", "p\\q", "{", ","]
            .iter()
            .map(|s| Some(s.to_string()))
            .chain([None]);
        assert_eq!(
            array_literal(items),
            r#"{a,"","b c","NULL","x\"y","p\\q","{",",",NULL}"#
        );
    }
}

/// Writes one CSV record (RFC 4180) and its line end: `None` is an empty
/// field, the empty string `""`; a field holding the delimiter, a quote
/// or a line end is quoted.
pub fn write_csv_row(
    out: &mut dyn std::io::Write,
    cells: &[Option<String>],
    d: u8,
) -> std::io::Result<()> {
    for (i, c) in cells.iter().enumerate() {
        if i > 0 {
            out.write_all(&[d])?;
        }
        let Some(v) = c else { continue };
        let needs = v.is_empty()
            || v.bytes()
                .any(|b| b == d || b == b'"' || b == b'\n' || b == b'\r');
        if needs {
            out.write_all(b"\"")?;
            out.write_all(v.replace('"', "\"\"").as_bytes())?;
            out.write_all(b"\"")?;
        } else {
            out.write_all(v.as_bytes())?;
        }
    }
    out.write_all(b"\n")
}

/// Whether values of this type are JSON numbers (written exactly, as
/// they print).
fn json_number(t: &A) -> bool {
    matches!(
        t,
        A::Int32 | A::Int64 | A::Float64 | A::Decimal64(..) | A::Decimal128(..)
    )
}

/// Writes row `r` of `columns` as one JSON object (no line end): numbers
/// exact (a decimal as written, not through a float), a float that is not
/// finite as a string, booleans, NULL as `null`, other values as strings.
pub fn write_json_object(
    out: &mut dyn std::io::Write,
    names: &[String],
    columns: &[arrow_array::ArrayRef],
    r: usize,
) -> std::io::Result<()> {
    out.write_all(b"{")?;
    for (i, c) in columns.iter().enumerate() {
        if i > 0 {
            out.write_all(b", ")?;
        }
        serde_json::to_writer(&mut *out, &names[i])?;
        out.write_all(b": ")?;
        match format_value(c.as_ref(), r) {
            None => out.write_all(b"null")?,
            Some(v)
                if matches!(c.data_type(), A::Float64)
                    && !v.parse::<f64>().is_ok_and(f64::is_finite) =>
            {
                serde_json::to_writer(&mut *out, &v)?
            }
            Some(v) if json_number(c.data_type()) || matches!(c.data_type(), A::Boolean) => {
                out.write_all(v.as_bytes())?
            }
            Some(v) => serde_json::to_writer(&mut *out, &v)?,
        }
    }
    out.write_all(b"}")
}
