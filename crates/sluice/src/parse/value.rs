//! Parsers for one field's bytes into a typed value.
//!
//! Each returns a short reason on failure; the caller adds file, line and
//! column. Nothing is rounded, truncated or wrapped: a value that does not
//! fit its type is an error.

use chrono::{NaiveDate, NaiveDateTime};

/// Days from 0001-01-01 (day 1 of the common era) to 1970-01-01.
const UNIX_EPOCH_DAYS_FROM_CE: i32 = 719_163;

/// Strips ASCII spaces and tabs around a non-text value.
#[inline]
pub fn trim(mut b: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = b {
        b = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = b {
        b = rest;
    }
    b
}

#[inline]
fn split_sign(b: &[u8]) -> (bool, &[u8]) {
    match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    }
}

/// Parses a signed 64-bit integer.
#[inline]
pub fn parse_i64(b: &[u8]) -> Result<i64, String> {
    let (neg, digits) = split_sign(trim(b));
    if digits.is_empty() {
        return Err("not an integer".into());
    }
    if digits.len() <= 18 {
        // 18 decimal digits always fit in an i64: no overflow checks needed.
        let mut acc: i64 = 0;
        for &c in digits {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                return Err("not an integer".into());
            }
            acc = acc * 10 + d as i64;
        }
        return Ok(if neg { -acc } else { acc });
    }
    let mut acc: u64 = 0;
    for &c in digits {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return Err("not an integer".into());
        }
        acc = acc
            .checked_mul(10)
            .and_then(|a| a.checked_add(d as u64))
            .ok_or_else(|| "out of range for BIGINT".to_string())?;
    }
    if neg {
        if acc <= i64::MAX as u64 + 1 {
            Ok((acc as i64).wrapping_neg())
        } else {
            Err("out of range for BIGINT".into())
        }
    } else {
        i64::try_from(acc).map_err(|_| "out of range for BIGINT".into())
    }
}

/// Parses a signed 32-bit integer.
#[inline]
pub fn parse_i32(b: &[u8]) -> Result<i32, String> {
    let v = parse_i64(b).map_err(|e| {
        if e.starts_with("out of range") {
            "out of range for INT".to_string()
        } else {
            e
        }
    })?;
    i32::try_from(v).map_err(|_| "out of range for INT (-2147483648..2147483647)".into())
}

/// Parses a double. Accepts what Rust's `f64::from_str` accepts (`1e10`,
/// `inf`, `NaN`).
pub fn parse_f64(b: &[u8]) -> Result<f64, String> {
    let s = std::str::from_utf8(trim(b)).map_err(|_| "not a number".to_string())?;
    s.parse::<f64>().map_err(|_| "not a number".into())
}

/// Parses a boolean: true/false, t/f, yes/no, y/n, on/off, 1/0 (any case).
pub fn parse_bool(b: &[u8]) -> Result<bool, String> {
    let t = trim(b);
    if t.len() > 5 {
        return Err("not a boolean (use true/false, t/f, yes/no, 1/0)".into());
    }
    let mut buf = [0u8; 5];
    for (o, &c) in buf.iter_mut().zip(t) {
        *o = c.to_ascii_lowercase();
    }
    match &buf[..t.len()] {
        b"true" | b"t" | b"yes" | b"y" | b"on" | b"1" => Ok(true),
        b"false" | b"f" | b"no" | b"n" | b"off" | b"0" => Ok(false),
        _ => Err("not a boolean (use true/false, t/f, yes/no, 1/0)".into()),
    }
}

/// Parses an exact decimal into an integer scaled by 10^scale.
///
/// More decimals than `scale` are an error unless they are all zeros (the
/// value is then exact); more integer digits than `precision - scale` are
/// out of range.
pub fn parse_decimal(b: &[u8], precision: u8, scale: u8) -> Result<i64, String> {
    let (neg, body) = split_sign(trim(b));
    let (int_part, frac_part) = match memchr::memchr(b'.', body) {
        Some(i) => (&body[..i], &body[i + 1..]),
        None => (body, &body[..0]),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return Err("not a decimal number".into());
    }
    if !int_part.iter().chain(frac_part).all(u8::is_ascii_digit) {
        return Err("not a decimal number".into());
    }
    let int_digits = {
        let first_nonzero = int_part
            .iter()
            .position(|&c| c != b'0')
            .unwrap_or(int_part.len());
        &int_part[first_nonzero..]
    };
    let max_int_digits = (precision - scale) as usize;
    if int_digits.len() > max_int_digits {
        return Err(format!(
            "out of range for DECIMAL({precision},{scale}) (at most {max_int_digits} digits before the point)"
        ));
    }
    let scale = scale as usize;
    let frac_digits = if frac_part.len() > scale {
        if frac_part[scale..].iter().any(|&c| c != b'0') {
            return Err(format!(
                "has {} decimal places, more than the scale {scale} (values are never rounded)",
                frac_part.len()
            ));
        }
        &frac_part[..scale]
    } else {
        frac_part
    };
    // At most 18 digits in all: fits an i64 without overflow.
    let mut acc: i64 = 0;
    for &c in int_digits.iter().chain(frac_digits) {
        acc = acc * 10 + (c - b'0') as i64;
    }
    for _ in frac_digits.len()..scale {
        acc *= 10;
    }
    Ok(if neg { -acc } else { acc })
}

fn two(b: &[u8]) -> Option<u32> {
    let (a, c) = (b[0].wrapping_sub(b'0'), b[1].wrapping_sub(b'0'));
    (a <= 9 && c <= 9).then(|| (a * 10 + c) as u32)
}

/// `YYYY-MM-DD` without chrono's format machinery: the common case.
fn fast_ymd(t: &[u8]) -> Option<Result<NaiveDate, String>> {
    if t.len() != 10 || t[4] != b'-' || t[7] != b'-' {
        return None;
    }
    let y = two(&t[0..2])? * 100 + two(&t[2..4])?;
    let m = two(&t[5..7])?;
    let d = two(&t[8..10])?;
    Some(NaiveDate::from_ymd_opt(y as i32, m, d).ok_or_else(|| "is not a valid date".to_string()))
}

/// Parses a date into days since 1970-01-01. Without a format: `YYYY-MM-DD`.
/// With one: a chrono/strftime format such as `%d/%m/%Y`.
pub fn parse_date(b: &[u8], format: Option<&str>) -> Result<i32, String> {
    let t = trim(b);
    let date = match format {
        None => match fast_ymd(t) {
            Some(r) => r?,
            None => {
                let s = std::str::from_utf8(t).map_err(|_| "not a date".to_string())?;
                NaiveDate::parse_from_str(s, "%Y-%m-%d").map_err(|e| {
                    format!("not a date in the form YYYY-MM-DD ({e}); use --date-format")
                })?
            }
        },
        Some(f) => {
            let s = std::str::from_utf8(t).map_err(|_| "not a date".to_string())?;
            NaiveDate::parse_from_str(s, f)
                .map_err(|e| format!("does not match --date-format {f:?} ({e})"))?
        }
    };
    Ok(date.to_epoch_days())
}

/// Parses a timestamp into microseconds since 1970-01-01 00:00:00.
///
/// Without a format: `YYYY-MM-DD[ T]HH:MM:SS[.fraction]` or a bare date.
/// Fractions finer than a microsecond must be zeros (never rounded).
pub fn parse_timestamp(b: &[u8], format: Option<&str>) -> Result<i64, String> {
    let t = trim(b);
    let dt = match format {
        Some(f) => {
            let s = std::str::from_utf8(t).map_err(|_| "not a timestamp".to_string())?;
            NaiveDateTime::parse_from_str(s, f)
                .map_err(|e| format!("does not match --timestamp-format {f:?} ({e})"))?
        }
        None => return parse_timestamp_default(t),
    };
    Ok(dt.and_utc().timestamp_micros())
}

fn parse_timestamp_default(t: &[u8]) -> Result<i64, String> {
    const FORM: &str =
        "not a timestamp in the form YYYY-MM-DD HH:MM:SS[.ffffff]; use --timestamp-format";
    if t.len() < 10 {
        return Err(FORM.into());
    }
    let date = match fast_ymd(&t[..10]) {
        Some(r) => r?,
        None => return Err(FORM.into()),
    };
    let days = date.to_epoch_days() as i64;
    let rest = &t[10..];
    if rest.is_empty() {
        return Ok(days * 86_400_000_000);
    }
    if rest.len() < 9 || !(rest[0] == b' ' || rest[0] == b'T') || rest[3] != b':' || rest[6] != b':'
    {
        return Err(FORM.into());
    }
    let (h, m, s) = match (two(&rest[1..3]), two(&rest[4..6]), two(&rest[7..9])) {
        (Some(h), Some(m), Some(s)) if h < 24 && m < 60 && s < 60 => (h, m, s),
        _ => return Err("has an invalid time of day".into()),
    };
    let mut micros: i64 = 0;
    let frac = &rest[9..];
    if !frac.is_empty() {
        let Some(digits) = frac.strip_prefix(b".") else {
            return Err(FORM.into());
        };
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return Err(FORM.into());
        }
        if digits.len() > 6 && digits[6..].iter().any(|&c| c != b'0') {
            return Err(
                "has a fraction finer than a microsecond (values are never rounded)".into(),
            );
        }
        for i in 0..6 {
            micros = micros * 10 + digits.get(i).map_or(0, |&c| (c - b'0') as i64);
        }
    }
    let secs = days * 86_400 + (h * 3600 + m * 60 + s) as i64;
    Ok(secs * 1_000_000 + micros)
}

/// Converts days since 1970-01-01 to a date (for display).
pub fn date_from_days(days: i32) -> Option<NaiveDate> {
    NaiveDate::from_num_days_from_ce_opt(days.checked_add(UNIX_EPOCH_DAYS_FROM_CE)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_exact_and_range_checked() {
        assert_eq!(parse_i64(b"42"), Ok(42));
        assert_eq!(parse_i64(b" -7 "), Ok(-7));
        assert_eq!(parse_i64(b"+9223372036854775807"), Ok(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(parse_i64(b"000000000000000000000012"), Ok(12));
        assert_eq!(
            parse_i64(b"9223372036854775808").unwrap_err(),
            "out of range for BIGINT"
        );
        assert_eq!(parse_i64(b"12a").unwrap_err(), "not an integer");
        assert_eq!(parse_i64(b"-").unwrap_err(), "not an integer");
        assert_eq!(parse_i64(b"1.0").unwrap_err(), "not an integer");
        assert_eq!(parse_i32(b"2147483647"), Ok(i32::MAX));
        assert!(
            parse_i32(b"2147483648")
                .unwrap_err()
                .starts_with("out of range for INT")
        );
        assert!(
            parse_i32(b"99999999999999999999")
                .unwrap_err()
                .starts_with("out of range for INT")
        );
    }

    #[test]
    fn decimals_are_never_rounded() {
        assert_eq!(parse_decimal(b"12.34", 15, 2), Ok(1234));
        assert_eq!(parse_decimal(b"-0.5", 15, 2), Ok(-50));
        assert_eq!(parse_decimal(b"7", 15, 2), Ok(700));
        assert_eq!(parse_decimal(b".25", 4, 2), Ok(25));
        assert_eq!(parse_decimal(b"3.", 4, 2), Ok(300));
        assert_eq!(parse_decimal(b"1.2300", 15, 2), Ok(123));
        assert_eq!(parse_decimal(b"99.99", 4, 2), Ok(9999));
        assert_eq!(parse_decimal(b"0099.99", 4, 2), Ok(9999));
        assert_eq!(
            parse_decimal(b"999999999999999999", 18, 0),
            Ok(999_999_999_999_999_999)
        );
        assert_eq!(
            parse_decimal(b"12.345", 15, 2).unwrap_err(),
            "has 3 decimal places, more than the scale 2 (values are never rounded)"
        );
        assert!(
            parse_decimal(b"100.00", 4, 2)
                .unwrap_err()
                .starts_with("out of range for DECIMAL(4,2)")
        );
        assert_eq!(
            parse_decimal(b"1e5", 15, 2).unwrap_err(),
            "not a decimal number"
        );
        assert_eq!(
            parse_decimal(b".", 15, 2).unwrap_err(),
            "not a decimal number"
        );
        assert_eq!(
            parse_decimal(b"1.2.3", 15, 2).unwrap_err(),
            "not a decimal number"
        );
    }

    #[test]
    fn dates_and_timestamps() {
        assert_eq!(parse_date(b"1970-01-01", None), Ok(0));
        assert_eq!(parse_date(b"1998-12-01", None), Ok(10561));
        assert_eq!(parse_date(b"1969-12-31", None), Ok(-1));
        assert_eq!(
            parse_date(b"2024-02-30", None).unwrap_err(),
            "is not a valid date"
        );
        assert_eq!(parse_date(b"01/02/2024", Some("%d/%m/%Y")), Ok(19754));
        assert!(
            parse_date(b"2024/01/02", Some("%d/%m/%Y"))
                .unwrap_err()
                .contains("--date-format")
        );
        assert_eq!(parse_timestamp(b"1970-01-01 00:00:01", None), Ok(1_000_000));
        assert_eq!(
            parse_timestamp(b"1970-01-01T00:00:01.5", None),
            Ok(1_500_000)
        );
        assert_eq!(parse_timestamp(b"1970-01-02", None), Ok(86_400_000_000));
        assert_eq!(
            parse_timestamp(b"1970-01-01 00:00:00.000001000", None),
            Ok(1)
        );
        assert!(
            parse_timestamp(b"1970-01-01 00:00:00.0000001", None)
                .unwrap_err()
                .contains("never rounded")
        );
        assert!(parse_timestamp(b"1970-01-01 25:00:00", None).is_err());
        assert_eq!(
            parse_timestamp(b"02.01.1970 00:00", Some("%d.%m.%Y %H:%M")),
            Ok(86_400_000_000)
        );
        assert_eq!(date_from_days(10561).unwrap().to_string(), "1998-12-01");
    }

    #[test]
    fn booleans_and_doubles() {
        assert_eq!(parse_bool(b"TRUE"), Ok(true));
        assert_eq!(parse_bool(b"f"), Ok(false));
        assert_eq!(parse_bool(b" 1 "), Ok(true));
        assert!(parse_bool(b"maybe").is_err());
        assert_eq!(parse_f64(b"1.5e3"), Ok(1500.0));
        assert_eq!(parse_f64(b"-0.25"), Ok(-0.25));
        assert!(parse_f64(b"1,5").is_err());
    }
}
