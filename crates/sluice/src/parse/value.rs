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
/// `inf`, `NaN`), but not a number beyond the range of a double: `1e400`
/// is an error, not infinity, and `1e-400` one, not zero (as in
/// PostgreSQL; subnormals such as `1e-310` are values).
pub fn parse_f64(b: &[u8]) -> Result<f64, String> {
    let t = trim(b);
    let s = std::str::from_utf8(t).map_err(|_| "not a number".to_string())?;
    let v = s.parse::<f64>().map_err(|_| "not a number".to_string())?;
    // Spelled-out infinities and NaN have no digits.
    let digits = || t.iter().take_while(|&&c| c != b'e' && c != b'E');
    if v.is_infinite() && digits().any(u8::is_ascii_digit) {
        return Err("out of range for DOUBLE (beyond ±1.8e308)".into());
    }
    if v == 0.0 && digits().any(|&c| (b'1'..=b'9').contains(&c)) {
        return Err("out of range for DOUBLE (too close to zero; below 4.9e-324)".into());
    }
    Ok(v)
}

/// A decimal number's text split into its parts: `-12.50e3` is sign
/// `-`, integer digits `12`, fraction digits `50` and exponent 3.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NumberText<'a> {
    pub sign: Option<u8>,
    pub int: &'a [u8],
    pub frac: &'a [u8],
    pub exp: i64,
}

impl<'a> NumberText<'a> {
    /// Splits `[+-]digits[.digits][(e|E)[+-]digits]` (digits on at least
    /// one side of the point); `None` for anything else.
    pub fn parse(t: &'a [u8]) -> Option<Self> {
        let (sign, body) = match t.first() {
            Some(&c @ (b'-' | b'+')) => (Some(c), &t[1..]),
            _ => (None, t),
        };
        let (mantissa, exp) = match body.iter().position(|&c| c == b'e' || c == b'E') {
            Some(i) => (&body[..i], Some(&body[i + 1..])),
            None => (body, None),
        };
        let (int, frac) = match memchr::memchr(b'.', mantissa) {
            Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
            None => (mantissa, &mantissa[..0]),
        };
        if (int.is_empty() && frac.is_empty()) || !int.iter().chain(frac).all(u8::is_ascii_digit) {
            return None;
        }
        let exp = match exp {
            None => 0,
            Some(e) => {
                let digits = e.strip_prefix(b"-").or(e.strip_prefix(b"+")).unwrap_or(e);
                if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                    return None;
                }
                // Saturates far beyond any double's exponent.
                let v = digits
                    .iter()
                    .fold(0i64, |a, &c| (a * 10 + (c - b'0') as i64).min(1 << 40));
                if e[0] == b'-' { -v } else { v }
            }
        };
        Some(NumberText {
            sign,
            int,
            frac,
            exp,
        })
    }

    /// Why sluice would not write this number back as it is written: a
    /// `+`, a zero before other integer digits, a negative zero (for
    /// integer and decimal types, which have none); `None` when nothing
    /// of it is lost that way.
    pub fn unkept_form(&self, type_name: &str, negative_zero: bool) -> Option<String> {
        if self.sign == Some(b'+') {
            return Some(format!(
                "has a \"+\" sign, which a {type_name} does not keep"
            ));
        }
        if self.int.len() > 1 && self.int[0] == b'0' {
            return Some(format!(
                "has a leading zero, which a {type_name} does not keep"
            ));
        }
        if !negative_zero && self.sign == Some(b'-') && self.significant().1 == 0 {
            return Some(format!(
                "is a negative zero, which a {type_name} stores as 0"
            ));
        }
        None
    }

    /// The significant digits (no leading or trailing zeros), how many
    /// there are, and the power of ten `p` such that the magnitude is
    /// `0.DIGITS × 10^p`.
    fn significant(&self) -> (impl Iterator<Item = &'a u8> + use<'a>, usize, i64) {
        let all = self.int.iter().chain(self.frac);
        let len = self.int.len() + self.frac.len();
        let lead = all.clone().take_while(|&&c| c == b'0').count();
        if lead == len {
            return (all.skip(len).take(0), 0, 0);
        }
        let trail = self
            .frac
            .iter()
            .rev()
            .chain(self.int.iter().rev())
            .take_while(|&&c| c == b'0')
            .count();
        let n = len - lead - trail;
        let p = self.int.len() as i64 - lead as i64 + self.exp;
        (all.skip(lead).take(n), n, p)
    }
}

/// Checks that the double `v`, read from the text `t`, is the number `t`
/// says to its last digit, so that it reads back as the same number (not
/// rounded to the nearest double). Spelled-out infinities and NaN are
/// what they say.
pub fn check_f64_exact(t: &[u8], v: f64) -> Result<(), String> {
    let t = trim(t);
    let Some(text) = NumberText::parse(t) else {
        return Ok(());
    };
    if let Some(why) = text.unkept_form("DOUBLE", true) {
        return Err(why);
    }
    let (digits, n, p) = text.significant();
    // Any decimal of at most 15 significant digits survives the trip
    // through a normal double (f64 has 15.95 decimal digits of precision).
    if n <= 15 && (v == 0.0 || v.abs() >= f64::MIN_POSITIVE) {
        return Ok(());
    }
    // The shortest text that reads back as `v`: at most 17 digits, an
    // exponent of at most 3, signs and a point.
    let mut buf = [0u8; 32];
    let len = {
        use std::io::Write;
        let mut w = &mut buf[..];
        write!(w, "{:e}", v.abs()).expect("a double's shortest form fits 32 bytes");
        32 - w.len()
    };
    let back = NumberText::parse(&buf[..len]).expect("a double's shortest form is a number");
    let (back_digits, back_n, back_p) = back.significant();
    if n == back_n && p == back_p && digits.eq(back_digits) {
        Ok(())
    } else {
        let shown = if (1e-6..1e21).contains(&v.abs()) {
            format!("{v}")
        } else {
            format!("{v:e}")
        };
        Err(format!(
            "has {n} significant digits; a DOUBLE would round it to {shown}"
        ))
    }
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

/// Parses an exact decimal (`12.50`, or with an exponent: `1.25e1`) into
/// an integer scaled by 10^scale.
///
/// More decimals than `scale` are an error unless they are all zeros (the
/// value is then exact); more integer digits than `precision - scale` are
/// out of range.
pub fn parse_decimal(b: &[u8], precision: u8, scale: u8) -> Result<i64, String> {
    let (neg, body) = split_sign(trim(b));
    if body.iter().any(|&c| c == b'e' || c == b'E') {
        return parse_decimal_exponent(neg, body, precision, scale);
    }
    let (int_part, frac_part) = match memchr::memchr(b'.', body) {
        Some(i) => (&body[..i], &body[i + 1..]),
        None => (body, &body[..0]),
    };
    decimal_of_parts(neg, int_part, frac_part, precision, scale)
}

/// [`parse_decimal`] of a number with an exponent (`1.5e2`, `25E-2`): the
/// same value written out, so it is exact at the scale or an error.
fn parse_decimal_exponent(neg: bool, body: &[u8], precision: u8, scale: u8) -> Result<i64, String> {
    // Beyond any DECIMAL's 38 digits on either side of the point.
    const FAR: i64 = 64;
    let Some(text) = NumberText::parse(body).filter(|t| t.sign.is_none()) else {
        return Err("not a decimal number".into());
    };
    let digits: Vec<u8> = text.int.iter().chain(text.frac).copied().collect();
    if digits.iter().all(|&c| c == b'0') {
        return Ok(0);
    }
    // Where the point goes in `digits`.
    let point = text.int.len() as i64 + text.exp;
    let (int_part, frac_part): (Vec<u8>, Vec<u8>) = if point > FAR {
        let max_int_digits = precision - scale;
        return Err(format!(
            "out of range for DECIMAL({precision},{scale}) (at most {max_int_digits} digits before the point)"
        ));
    } else if point < -FAR {
        return Err(format!(
            "has more than {FAR} decimal places, more than the scale {scale} (values are never rounded)"
        ));
    } else if point <= 0 {
        let mut frac = vec![b'0'; (-point) as usize];
        frac.extend_from_slice(&digits);
        (Vec::new(), frac)
    } else if point as usize >= digits.len() {
        let mut int = digits.clone();
        int.resize(point as usize, b'0');
        (int, Vec::new())
    } else {
        let (i, f) = digits.split_at(point as usize);
        (i.to_vec(), f.to_vec())
    };
    decimal_of_parts(neg, &int_part, &frac_part, precision, scale)
}

/// A DECIMAL(precision, scale) from the digits before and after the point.
fn decimal_of_parts(
    neg: bool,
    int_part: &[u8],
    frac_part: &[u8],
    precision: u8,
    scale: u8,
) -> Result<i64, String> {
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

/// `YYYY-MM-DD` without chrono's format machinery: the common case, as
/// days since 1970-01-01.
#[inline]
fn fast_ymd(t: &[u8]) -> Option<Result<i32, String>> {
    if t.len() != 10 || t[4] != b'-' || t[7] != b'-' {
        return None;
    }
    let y = two(&t[0..2])? * 100 + two(&t[2..4])?;
    let m = two(&t[5..7])?;
    let d = two(&t[8..10])?;
    Some(ymd_days(y, m, d).ok_or_else(|| "is not a valid date".to_string()))
}

/// Days since 1970-01-01 of the proleptic Gregorian date `y-m-d`, or
/// `None` when there is no such day (month 13, February 30, February 29
/// of a common year). The civil-calendar arithmetic of eras of 400 years
/// (146,097 days each) with the year starting in March, so that the leap
/// day is the year's last; equal to chrono's `from_ymd_opt` and
/// `to_epoch_days` for every year chrono takes (a property test says so).
/// Years from 0 to 9999 (what four digits write).
#[inline(always)]
pub(crate) fn ymd_days(y: u32, m: u32, d: u32) -> Option<i32> {
    if y > 9999 || !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return None;
    }
    // Counted from 400 years before year 0, so that every division is of
    // a positive number (and by a constant: a multiplication).
    let y = y + 400 - (m <= 2) as u32;
    let era = y / 400;
    let year_of_era = y % 400;
    let march_month = if m > 2 { m - 3 } else { m + 9 };
    let day_of_year = (153 * march_month + 2) / 5 + d - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    // 719,468 days from 0000-03-01 to 1970-01-01, and one era more.
    Some((era * 146_097 + day_of_era) as i32 - 719_468 - 146_097)
}

#[inline(always)]
pub(crate) fn days_in_month(y: u32, m: u32) -> u32 {
    match m {
        2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Parses a date into days since 1970-01-01. Without a format:
/// `YYYY-MM-DD`, the year of four digits (`24-01-31` is no date: its
/// century is unknown); the month and day may have one digit.
/// With one: a chrono/strftime format such as `%d/%m/%Y`.
pub fn parse_date(b: &[u8], format: Option<&str>) -> Result<i32, String> {
    let t = trim(b);
    let date = match format {
        None => match fast_ymd(t) {
            Some(r) => return r,
            None => {
                if t.len() < 5 || t[4] != b'-' || !t[..4].iter().all(u8::is_ascii_digit) {
                    return Err(
                        "not a date in the form YYYY-MM-DD (a four-digit year); use --date-format"
                            .into(),
                    );
                }
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

/// Parses a timestamp into microseconds since 1970-01-01 00:00:00, for
/// a `TIMESTAMP` column (no time zone).
///
/// Without a format, ISO 8601: `YYYY-MM-DD[( |T)HH:MM[:SS[.fraction]]]`;
/// a bare date is midnight. A zone after the time (`Z`, `+HH:MM`, `+HHMM`,
/// `+HH`, or `-`) is an error that names `TIMESTAMPTZ`: a `TIMESTAMP`
/// keeps no offset, and neither dropping nor applying it would load what
/// the file says. Fractions finer than a microsecond must be zeros (never
/// rounded). With a format: a chrono/strftime format, no zone.
pub fn parse_timestamp(b: &[u8], format: Option<&str>) -> Result<i64, String> {
    let t = trim(b);
    let dt = match format {
        Some(f) => {
            let s = std::str::from_utf8(t).map_err(|_| "not a timestamp".to_string())?;
            // chrono's naive parse passes over a `%z` offset: refused.
            if chrono::DateTime::parse_from_str(s, f).is_ok() {
                return Err(format!(
                    "has a UTC offset (read by --timestamp-format {f:?}), and a TIMESTAMP keeps none: load it into a TIMESTAMPTZ column (the instant kept, shown in UTC)"
                ));
            }
            NaiveDateTime::parse_from_str(s, f)
                .map_err(|e| format!("does not match --timestamp-format {f:?} ({e})"))?
        }
        None => {
            let (local, zone) = parse_timestamp_parts(t)?;
            if zone.is_some() {
                return Err(format!(
                    "has a UTC offset ({:?}), and a TIMESTAMP keeps none: load it into a TIMESTAMPTZ column (the instant kept, shown in UTC), or write the times without one",
                    String::from_utf8_lossy(zone_suffix(t))
                ));
            }
            return Ok(local);
        }
    };
    Ok(dt.and_utc().timestamp_micros())
}

/// Parses a timestamp with a time zone (`TIMESTAMPTZ`) into microseconds
/// since 1970-01-01 00:00:00 UTC: the form of [`parse_timestamp`], an
/// offset or `Z` applied; a time without one is UTC (as PostgreSQL reads
/// it with `TimeZone` UTC). With a format: chrono/strftime, with `%z` or
/// `%:z` for the offset, or none (UTC).
pub fn parse_timestamptz(b: &[u8], format: Option<&str>) -> Result<i64, String> {
    let t = trim(b);
    match format {
        Some(f) => {
            let s = std::str::from_utf8(t).map_err(|_| "not a timestamp".to_string())?;
            match chrono::DateTime::parse_from_str(s, f) {
                Ok(dt) => Ok(dt.timestamp_micros()),
                Err(_) => NaiveDateTime::parse_from_str(s, f)
                    .map(|dt| dt.and_utc().timestamp_micros())
                    .map_err(|e| format!("does not match --timestamp-format {f:?} ({e})")),
            }
        }
        None => parse_timestamptz_sql(t, 0),
    }
}

/// Parses a timestamp as SQL's `TIMESTAMP` (PostgreSQL's `timestamp
/// without time zone`) reads text: the form of [`parse_timestamp`], and
/// a zone or offset written after the time is ignored, not applied:
/// `TIMESTAMP '2024-01-31 12:34:56-05'` is 12:34:56 (as a JDBC driver's
/// `setTimestamp` sends it, the offset of its own zone appended).
pub fn parse_timestamp_sql(b: &[u8]) -> Result<i64, String> {
    parse_timestamp_parts(trim(b)).map(|(local, _)| local)
}

/// Parses a timestamp as SQL's `TIMESTAMPTZ` reads text: an offset
/// written after the time is applied; a time without one is in the
/// session's zone, `zone_secs` east of UTC.
pub fn parse_timestamptz_sql(b: &[u8], zone_secs: i64) -> Result<i64, String> {
    parse_timestamptz_in(b, &crate::zone::Zone::Fixed(zone_secs))
}

/// [`parse_timestamptz_sql`] in a zone that may have rules: a time
/// without an offset is read as the zone's local time.
pub fn parse_timestamptz_in(b: &[u8], zone: &crate::zone::Zone) -> Result<i64, String> {
    let (local, off) = parse_timestamp_parts(trim(b))?;
    Ok(match off {
        Some(s) => local - s * 1_000_000,
        None => zone.to_utc(local),
    })
}

/// Whether a timestamp's text carries a UTC offset or `Z` (`None`: not a
/// timestamp). With a strftime format: whether it parses with its
/// offset (`%z`).
pub fn timestamp_has_zone(b: &[u8], format: Option<&str>) -> Option<bool> {
    let t = trim(b);
    match format {
        Some(f) => {
            let s = std::str::from_utf8(t).ok()?;
            if chrono::DateTime::parse_from_str(s, f).is_ok() {
                Some(true)
            } else {
                NaiveDateTime::parse_from_str(s, f).ok().map(|_| false)
            }
        }
        None => parse_timestamp_parts(t).ok().map(|(_, z)| z.is_some()),
    }
}

/// The zone suffix of a timestamp's text (for messages): what follows
/// the time of day.
fn zone_suffix(t: &[u8]) -> &[u8] {
    let i = t
        .iter()
        .rposition(|c| matches!(c, b'Z' | b'z' | b'+'))
        .or_else(|| t.iter().rposition(|&c| c == b'-').filter(|&i| i > 10))
        .unwrap_or(t.len());
    &t[i..]
}

/// A timestamp's text as its local time (microseconds since 1970-01-01
/// 00:00:00, as written) and its zone's offset in seconds east of UTC,
/// if it has one (`Z`: 0).
fn parse_timestamp_parts(t: &[u8]) -> Result<(i64, Option<i64>), String> {
    const FORM: &str = "not a timestamp in the form YYYY-MM-DD HH:MM[:SS[.ffffff]][Z|+HH:MM]; use --timestamp-format";
    if t.len() < 10 {
        return Err(FORM.into());
    }
    let days = match fast_ymd(&t[..10]) {
        Some(r) => r? as i64,
        None => return Err(FORM.into()),
    };
    let rest = &t[10..];
    if rest.is_empty() {
        return Ok((days * 86_400_000_000, None));
    }
    if rest.len() < 6 || !(rest[0] == b' ' || rest[0] == b'T') || rest[3] != b':' {
        return Err(FORM.into());
    }
    let (time, rest) = match time_of_day(&rest[1..], false, false) {
        Ok(r) => r,
        Err(e) if e.starts_with("not a time") => return Err(FORM.into()),
        Err(e) => return Err(e),
    };
    let zone = if rest.is_empty() {
        None
    } else {
        Some(zone_offset(rest).ok_or_else(|| FORM.to_string())?)
    };
    Ok((days * DAY_MICROS + time, zone))
}

/// Microseconds in a day: the largest TIME (`24:00:00`).
pub const DAY_MICROS: i64 = 86_400_000_000;

/// `HH:MM[:SS[.fraction]]` at the start of `t` (a one-digit hour taken
/// when `short_hour`): microseconds since midnight and the text after
/// it. `24:00[:00]` is the end of the day when `end_of_day` (TIME takes
/// it, as PostgreSQL's does; a timestamp's day does not). Fractions
/// finer than a microsecond must be zeros (never rounded).
fn time_of_day(t: &[u8], short_hour: bool, end_of_day: bool) -> Result<(i64, &[u8]), String> {
    const FORM: &str = "not a time in the form HH:MM[:SS[.ffffff]]";
    let t = match t {
        [d, b':', ..] if short_hour && d.is_ascii_digit() => {
            // `9:30` as `09:30`.
            return time_of_day_digits(b'0', *d, &t[1..], end_of_day);
        }
        _ => t,
    };
    match t {
        [a, b, rest @ ..] => time_of_day_digits(*a, *b, rest, end_of_day),
        _ => Err(FORM.into()),
    }
}

fn time_of_day_digits(a: u8, b: u8, rest: &[u8], end_of_day: bool) -> Result<(i64, &[u8]), String> {
    const FORM: &str = "not a time in the form HH:MM[:SS[.ffffff]]";
    let invalid = || "has an invalid time of day".to_string();
    let h = two(&[a, b]).ok_or_else(|| FORM.to_string())?;
    let [b':', m1, m2, rest @ ..] = rest else {
        return Err(FORM.into());
    };
    let m = two(&[*m1, *m2]).ok_or_else(|| FORM.to_string())?;
    if h > 24 || m > 59 {
        return Err(invalid());
    }
    let mut rest = rest;
    let mut s = 0;
    let mut micros: i64 = 0;
    if let [b':', a, b, tail @ ..] = rest {
        s = match two(&[*a, *b]) {
            Some(s) if s < 60 => s,
            Some(_) => return Err(invalid()),
            None => return Err(FORM.into()),
        };
        rest = tail;
        if let Some(frac) = rest.strip_prefix(b".") {
            let n = frac.iter().take_while(|c| c.is_ascii_digit()).count();
            let digits = &frac[..n];
            if digits.is_empty() {
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
            rest = &frac[n..];
        }
    }
    let v = (h * 3600 + m * 60 + s) as i64 * 1_000_000 + micros;
    if h == 24 && (v != DAY_MICROS || !end_of_day) {
        return Err(invalid());
    }
    Ok((v, rest))
}

/// Parses a time of day (`TIME`) as the loader reads it:
/// `HH:MM[:SS[.fraction]]`, the hour of one or two digits, up to
/// `24:00:00`; microseconds since midnight. An offset after the time is
/// an error (a TIME keeps none, and dropping it would load another
/// time than the file's).
pub fn parse_time(b: &[u8]) -> Result<i64, String> {
    let t = trim(b);
    let (v, rest) = time_of_day(t, true, true)?;
    if rest.is_empty() {
        Ok(v)
    } else if zone_offset(rest).is_some() {
        Err(format!(
            "has a UTC offset ({:?}), and a TIME keeps none: write the times without one, or load the column as TEXT",
            String::from_utf8_lossy(rest)
        ))
    } else {
        Err("not a time in the form HH:MM[:SS[.ffffff]]".into())
    }
}

/// Whether `t` is a time in the one form the loader infers TIME from:
/// `HH:MM:SS[.fraction]`, two digits each (`12:30` may be minutes and
/// seconds, and `9:30:00` reads back as `09:30:00`).
pub fn is_strict_time(t: &[u8]) -> bool {
    t.len() >= 8
        && t[2] == b':'
        && t[5] == b':'
        && matches!(time_of_day(t, false, true), Ok((_, rest)) if rest.is_empty())
}

/// Parses a time as SQL's `TIME` reads text, as PostgreSQL does: the
/// form of [`parse_time`], an offset after it ignored (`'12:00+05'` is
/// 12:00), or a timestamp's text, whose time of day is taken.
pub fn parse_time_sql(b: &[u8]) -> Result<i64, String> {
    let t = trim(b);
    if t.len() >= 10 && fast_ymd(&t[..10]).is_some() {
        let (local, _) = parse_timestamp_parts(t)?;
        return Ok(local.rem_euclid(DAY_MICROS));
    }
    // PostgreSQL's fields of one digit (`1:2:3`), written as two.
    let mut padded = Vec::with_capacity(t.len() + 3);
    let mut field = 0;
    let mut i = 0;
    while field < 3 {
        let n = t[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 1 {
            padded.push(b'0');
        }
        padded.extend_from_slice(&t[i..i + n]);
        i += n;
        field += 1;
        if field < 3 && t.get(i) == Some(&b':') {
            padded.push(b':');
            i += 1;
        } else {
            break;
        }
    }
    padded.extend_from_slice(&t[i..]);
    let (v, rest) = time_of_day(&padded, false, true)?;
    if rest.is_empty() || zone_offset(rest).is_some() {
        Ok(v)
    } else {
        Err("not a time in the form HH:MM[:SS[.ffffff]]".into())
    }
}

/// Parses an interval (`INTERVAL`) as PostgreSQL reads one (`1 year 2
/// mons 3 days 04:05:06.5`, `-1.5 hours`, `@ 1 day ago`):
/// months, days and microseconds kept apart.
pub fn parse_interval(b: &[u8]) -> Result<arrow_buffer::IntervalMonthDayNano, String> {
    let s = std::str::from_utf8(trim(b)).map_err(|_| "not an interval".to_string())?;
    crate::query::interval::parse(s, None)?
        .to_arrow()
        .ok_or_else(crate::query::interval::out_of_range)
}

/// Seconds east of UTC of a fixed zone by name or offset: `UTC`, `GMT`,
/// `Etc/UTC`, `Z`, `+HH:MM`, `-HH`, ... (an Arrow time zone or a session's
/// `TimeZone`); `None` for a zone with rules (`Europe/Berlin`).
pub fn zone_seconds(zone: &str) -> Option<i64> {
    let z = zone.trim();
    match z.to_ascii_uppercase().as_str() {
        "UTC" | "GMT" | "Z" | "ZULU" | "UCT" | "UNIVERSAL" | "ETC/UTC" | "ETC/GMT" | "ETC/UCT"
        | "ETC/UNIVERSAL" | "ETC/ZULU" | "GMT0" | "ETC/GMT0" | "GREENWICH" => Some(0),
        _ => zone_offset(z.as_bytes()),
    }
}

/// Seconds east of UTC of a zone suffix: `Z` (0), `+HH:MM`, `+HHMM`,
/// `+HH`, or the same with `-`; `None` for anything else.
pub fn zone_offset(z: &[u8]) -> Option<i64> {
    let (sign, hm) = match z {
        [b'Z' | b'z'] => return Some(0),
        [b'+', hm @ ..] => (1, hm),
        [b'-', hm @ ..] => (-1, hm),
        _ => return None,
    };
    let (h, m) = match hm {
        [a, b] => (two(&[*a, *b])?, 0),
        [a, b, c, d] | [a, b, b':', c, d] => (two(&[*a, *b])?, two(&[*c, *d])?),
        _ => return None,
    };
    (h < 24 && m < 60).then_some(sign * (h as i64 * 3600 + m as i64 * 60))
}

/// Converts days since 1970-01-01 to a date (for display).
pub fn date_from_days(days: i32) -> Option<NaiveDate> {
    NaiveDate::from_num_days_from_ce_opt(days.checked_add(UNIX_EPOCH_DAYS_FROM_CE)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 20_000, ..ProptestConfig::default() })]

        /// The calendar arithmetic against chrono, valid days and not:
        /// every year four digits write, months and days past their ends.
        #[test]
        fn day_numbers_are_chronos(y in 0u32..10_000, m in 0u32..14, d in 0u32..33) {
            let want = NaiveDate::from_ymd_opt(y as i32, m, d).map(|t| t.to_epoch_days());
            prop_assert_eq!(ymd_days(y, m, d), want);
        }
    }

    #[test]
    fn day_numbers_at_the_edges() {
        assert_eq!(ymd_days(1970, 1, 1), Some(0));
        assert_eq!(ymd_days(1969, 12, 31), Some(-1));
        assert_eq!(ymd_days(2000, 2, 29), Some(11_016));
        assert_eq!(ymd_days(1900, 2, 29), None);
        assert_eq!(ymd_days(2024, 2, 29), Some(19_782));
        assert_eq!(ymd_days(2023, 2, 29), None);
        assert_eq!(ymd_days(0, 1, 1), Some(-719_528));
        assert_eq!(ymd_days(9999, 12, 31), Some(2_932_896));
        assert_eq!(ymd_days(10_000, 1, 1), None);
        assert_eq!(ymd_days(2024, 4, 31), None);
        assert_eq!(ymd_days(2024, 13, 1), None);
    }

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
        // Exponents: the same value written out, exact at the scale.
        assert_eq!(parse_decimal(b"1e3", 15, 2), Ok(100_000));
        assert_eq!(parse_decimal(b"1.5E2", 15, 2), Ok(15_000));
        assert_eq!(parse_decimal(b"-25e-2", 15, 2), Ok(-25));
        assert_eq!(parse_decimal(b"0e999999", 15, 2), Ok(0));
        assert_eq!(
            parse_decimal(b"1.2345e1", 15, 2),
            Err("has 3 decimal places, more than the scale 2 (values are never rounded)".into())
        );
        assert_eq!(
            parse_decimal(b"1e20", 18, 2),
            Err("out of range for DECIMAL(18,2) (at most 16 digits before the point)".into())
        );
        assert_eq!(
            parse_decimal(b"1e-99", 18, 2),
            Err(
                "has more than 64 decimal places, more than the scale 2 (values are never rounded)"
                    .into()
            )
        );
        assert_eq!(
            parse_decimal(b"1e", 15, 2),
            Err("not a decimal number".into())
        );
        assert_eq!(
            parse_decimal(b"1e+-2", 15, 2),
            Err("not a decimal number".into())
        );
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
        assert_eq!(parse_decimal(b"1e5", 15, 2), Ok(10_000_000));
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

    #[test]
    fn doubles_out_of_range_are_errors() {
        assert_eq!(
            parse_f64(b"1e400").unwrap_err(),
            "out of range for DOUBLE (beyond ±1.8e308)"
        );
        assert_eq!(
            parse_f64(b"-1e400").unwrap_err(),
            "out of range for DOUBLE (beyond ±1.8e308)"
        );
        assert_eq!(
            parse_f64(b"1e-400").unwrap_err(),
            "out of range for DOUBLE (too close to zero; below 4.9e-324)"
        );
        assert_eq!(parse_f64(b"1e-310"), Ok(1e-310));
        assert_eq!(parse_f64(b"0e999"), Ok(0.0));
        assert_eq!(parse_f64(b"inf"), Ok(f64::INFINITY));
        assert_eq!(parse_f64(b"-Infinity"), Ok(f64::NEG_INFINITY));
        assert!(parse_f64(b"NaN").unwrap().is_nan());
        assert_eq!(parse_f64(b"1.7976931348623157e308"), Ok(f64::MAX));
    }

    #[test]
    fn exact_doubles_read_back_as_written() {
        let exact = |t: &str| check_f64_exact(t.as_bytes(), parse_f64(t.as_bytes()).unwrap());
        for ok in [
            "0.1",
            "123456789012345",
            "0.30000000000000004",
            "1.7976931348623157e308",
            "2.5E-3",
            "1e21",
            "100000000000000000000",
            "-0",
            "1.50",
            ".5",
            "5e-324",
            "NaN",
        ] {
            assert_eq!(exact(ok), Ok(()), "{ok}");
        }
        assert_eq!(
            exact("18446744073709551615").unwrap_err(),
            "has 20 significant digits; a DOUBLE would round it to 18446744073709552000"
        );
        assert_eq!(
            exact("0.1234567890123456789").unwrap_err(),
            "has 19 significant digits; a DOUBLE would round it to 0.12345678901234568"
        );
        assert_eq!(
            exact("1.2345678901234567e-320").unwrap_err(),
            "has 17 significant digits; a DOUBLE would round it to 1.2347e-320"
        );
        assert_eq!(
            exact("+1.5").unwrap_err(),
            "has a \"+\" sign, which a DOUBLE does not keep"
        );
        assert_eq!(
            exact("01.5").unwrap_err(),
            "has a leading zero, which a DOUBLE does not keep"
        );
    }

    #[test]
    fn number_texts_say_what_a_type_does_not_keep() {
        let unkept = |t: &str| {
            NumberText::parse(t.as_bytes())
                .unwrap()
                .unkept_form("BIGINT", false)
        };
        assert_eq!(unkept("0"), None);
        assert_eq!(unkept("-12"), None);
        assert_eq!(unkept("0.5"), None);
        assert_eq!(
            unkept("007").unwrap(),
            "has a leading zero, which a BIGINT does not keep"
        );
        assert_eq!(
            unkept("-0").unwrap(),
            "is a negative zero, which a BIGINT stores as 0"
        );
        assert_eq!(
            unkept("-0.00").unwrap(),
            "is a negative zero, which a BIGINT stores as 0"
        );
        assert_eq!(
            unkept("+1").unwrap(),
            "has a \"+\" sign, which a BIGINT does not keep"
        );
        for bad in ["", ".", "e5", "1e", "1.2.3", "0x10", "inf", "1e+"] {
            assert_eq!(NumberText::parse(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn two_digit_years_are_not_dates() {
        for t in ["24-01-31", "99-12-31", "024-01-31", "2024-01-31 "] {
            let r = parse_date(t.as_bytes(), None);
            if t.ends_with(' ') {
                assert_eq!(r, Ok(19753));
            } else {
                assert_eq!(
                    r.unwrap_err(),
                    "not a date in the form YYYY-MM-DD (a four-digit year); use --date-format",
                    "{t}"
                );
            }
        }
        assert_eq!(parse_date(b"2024-1-5", None), Ok(19727));
        assert_eq!(parse_date(b"05/01/24", Some("%d/%m/%y")), Ok(19727));
        assert!(parse_timestamp(b"24-01-31 10:00:00", None).is_err());
    }

    #[test]
    fn sql_timestamps_ignore_the_offset_as_postgresql_does() {
        let plain = parse_timestamp(b"2024-01-31 12:34:56", None).unwrap();
        for t in [
            &b"2024-01-31 12:34:56-05"[..],
            b"2024-01-31 12:34:56+05:30",
            b"2024-01-31T12:34:56Z",
            b" 2024-01-31 12:34:56 ",
        ] {
            assert_eq!(parse_timestamp_sql(t).unwrap(), plain, "{t:?}");
        }
        // A TIMESTAMPTZ applies it; a loaded TIMESTAMP refuses it.
        assert_eq!(
            parse_timestamptz(b"2024-01-31 12:34:56-05", None).unwrap(),
            plain + 5 * 3_600_000_000
        );
        let e = parse_timestamp(b"2024-01-31 12:34:56-05", None).unwrap_err();
        assert!(e.contains("\"-05\"") && e.contains("TIMESTAMPTZ"), "{e}");
        let e = parse_timestamp(b"2024-01-31T12:34:56Z", None).unwrap_err();
        assert!(e.contains("\"Z\""), "{e}");
        // With a format, `%z` reads an offset: a TIMESTAMPTZ applies it,
        // a TIMESTAMP refuses it.
        let f = Some("%Y-%m-%d %H:%M:%S%z");
        assert_eq!(
            parse_timestamptz(b"2024-01-31 12:34:56-0500", f).unwrap(),
            plain + 5 * 3_600_000_000
        );
        assert!(
            parse_timestamp(b"2024-01-31 12:34:56-0500", f)
                .unwrap_err()
                .contains("TIMESTAMPTZ")
        );
        assert_eq!(
            parse_timestamp(b"2024-01-31 12:34:56", Some("%Y-%m-%d %H:%M:%S")).unwrap(),
            plain
        );
        // In SQL, a TIMESTAMPTZ without an offset is in the session's zone.
        assert_eq!(
            parse_timestamptz_sql(b"2024-01-31 12:34:56", 3600).unwrap(),
            plain - 3_600_000_000
        );
        assert_eq!(
            parse_timestamptz_sql(b"2024-01-31 12:34:56+00", 3600).unwrap(),
            plain
        );
        assert!(parse_timestamp_sql(b"2024-01-31 12:34:56 EST").is_err());
    }

    #[test]
    fn timestamps_accept_minutes_and_offsets() {
        let base = 19753 * 86_400_000_000i64; // 2024-01-31
        let at = |h: i64, m: i64| base + (h * 3600 + m * 60) * 1_000_000;
        assert_eq!(parse_timestamp(b"2024-01-31 13:45", None), Ok(at(13, 45)));
        assert_eq!(parse_timestamp(b"2024-01-31T13:45", None), Ok(at(13, 45)));
        assert_eq!(
            parse_timestamptz(b"2024-01-31T13:45:00Z", None),
            Ok(at(13, 45))
        );
        assert_eq!(
            parse_timestamptz(b"2024-01-31T13:45Z", None),
            Ok(at(13, 45))
        );
        assert_eq!(
            parse_timestamptz(b"2024-01-31T13:45:00.25Z", None),
            Ok(at(13, 45) + 250_000)
        );
        assert_eq!(
            parse_timestamptz(b"2024-01-31T13:45:00+01:00", None),
            Ok(at(12, 45))
        );
        assert_eq!(
            parse_timestamptz(b"2024-01-31T13:45:00+0130", None),
            Ok(at(12, 15))
        );
        assert_eq!(
            parse_timestamptz(b"2024-01-31 13:45-05", None),
            Ok(at(18, 45))
        );
        assert_eq!(
            parse_timestamptz(b"2024-01-31 00:30:00+01:00", None),
            Ok(base - 30 * 60 * 1_000_000)
        );
        for bad in [
            "2024-01-31 13",
            "2024-01-31 13:4",
            "2024-01-31 13:45:0",
            "2024-01-31 13:45:00.",
            "2024-01-31 13:45:00+1",
            "2024-01-31 13:45:00+01:0",
            "2024-01-31 13:45:00 +01:00",
            "2024-01-31 13:45:00X",
            "2024-01-31Z",
        ] {
            assert!(
                parse_timestamptz(bad.as_bytes(), None)
                    .unwrap_err()
                    .starts_with(
                        "not a timestamp in the form YYYY-MM-DD HH:MM[:SS[.ffffff]][Z|+HH:MM]"
                    ),
                "{bad}"
            );
        }
        assert_eq!(
            parse_timestamptz(b"2024-01-31 13:45:00+24:00", None).unwrap_err(),
            "not a timestamp in the form YYYY-MM-DD HH:MM[:SS[.ffffff]][Z|+HH:MM]; use --timestamp-format"
        );
        assert_eq!(
            parse_timestamp(b"2024-01-31 13:60", None).unwrap_err(),
            "has an invalid time of day"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 5_000, ..ProptestConfig::default() })]

        /// Every time of day, 24:00:00 included, reads back as written
        /// (the loader's form and SQL's), and the text is PostgreSQL's
        /// (two digits each, a fraction without trailing zeros).
        #[test]
        fn times_read_back_as_written(us in 0i64..=DAY_MICROS) {
            let text = crate::batch::format_time(us);
            prop_assert_eq!(parse_time(text.as_bytes()), Ok(us));
            prop_assert_eq!(parse_time_sql(text.as_bytes()), Ok(us));
            prop_assert!(is_strict_time(text.as_bytes()));
            prop_assert!(!text.ends_with('0') || !text.contains('.'));
        }

        /// No text the loader takes is a time out of the day.
        #[test]
        fn no_text_is_a_time_out_of_the_day(t in "[0-9:. +Z-]{0,16}") {
            if let Ok(v) = parse_time(t.as_bytes()) {
                prop_assert!((0..=DAY_MICROS).contains(&v), "{t:?} read as {v}");
            }
            if let Ok(v) = parse_time_sql(t.as_bytes()) {
                prop_assert!((0..=DAY_MICROS).contains(&v), "{t:?} read as {v}");
            }
        }
    }

    #[test]
    fn times_of_day_as_postgresql_reads_them() {
        let us = |h: i64, m: i64, s: i64, f: i64| ((h * 60 + m) * 60 + s) * 1_000_000 + f;
        assert_eq!(parse_time(b"09:30"), Ok(us(9, 30, 0, 0)));
        assert_eq!(parse_time(b"9:30:05"), Ok(us(9, 30, 5, 0)));
        assert_eq!(
            parse_time(b" 23:59:59.999999 "),
            Ok(us(23, 59, 59, 999_999))
        );
        assert_eq!(parse_time(b"12:00:00.5000000"), Ok(us(12, 0, 0, 500_000)));
        assert_eq!(parse_time(b"24:00:00"), Ok(DAY_MICROS));
        assert_eq!(parse_time(b"24:00"), Ok(DAY_MICROS));
        for bad in [
            &b"24:00:01"[..],
            b"24:00:00.000001",
            b"25:00",
            b"12:60",
            b"12:30:60",
            b"12",
            b"12:3",
            b"12:30:",
            b"12:30:00.",
            b"12:30:00.0000001",
            b"noon",
            b"12:30 PM",
            b"",
        ] {
            assert!(
                parse_time(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        // The loader keeps no offset and drops none.
        assert!(
            parse_time(b"12:00:00+05")
                .unwrap_err()
                .contains("UTC offset")
        );
        assert!(parse_time(b"12:00Z").unwrap_err().contains("UTC offset"));
        // SQL reads as PostgreSQL: an offset ignored, fields of one
        // digit, a timestamp's time of day.
        assert_eq!(parse_time_sql(b"12:00+05"), Ok(us(12, 0, 0, 0)));
        assert_eq!(parse_time_sql(b"1:2:3"), Ok(us(1, 2, 3, 0)));
        assert_eq!(parse_time_sql(b"1:2:3.25"), Ok(us(1, 2, 3, 250_000)));
        assert_eq!(
            parse_time_sql(b"2024-01-31 10:20:30.5"),
            Ok(us(10, 20, 30, 500_000))
        );
        assert!(parse_time_sql(b"1:2:3:4").is_err());
        assert!(parse_time_sql(b"123:00").is_err());
        // What inference takes: two digits each, seconds written.
        assert!(is_strict_time(b"09:30:00"));
        assert!(is_strict_time(b"09:30:00.25"));
        assert!(!is_strict_time(b"9:30:00"));
        assert!(!is_strict_time(b"09:30"));
        assert!(!is_strict_time(b"09:30:00Z"));
        // Timestamps take no 24:00.
        assert!(parse_timestamp(b"2024-01-31 24:00:00", None).is_err());
    }
}
