//! INTERVAL values with PostgreSQL's semantics: months, days and
//! microseconds kept apart (a month is not a fixed number of days, nor a
//! day a fixed number of hours across a zone's change), read and written
//! as PostgreSQL reads and writes them (`1 year 2 mons 3 days 04:05:06.5`),
//! added to dates and timestamps, multiplied and divided, compared by the
//! one number PostgreSQL compares (a month as 30 days, a day as 24 hours).
//!
//! For: the arithmetic and text of one value. Not for: binding the
//! operators (`bind`) or evaluating them over arrays (`func`). Stored as
//! Arrow's `Interval(MonthDayNano)`, the nanoseconds always whole
//! microseconds.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Float64Type, IntervalMonthDayNano, IntervalMonthDayNanoType, Time64MicrosecondType,
    TimestampMicrosecondType,
};
use arrow_array::{
    Array, ArrayRef, Decimal128Array, IntervalMonthDayNanoArray, Time64MicrosecondArray,
    TimestampMicrosecondArray,
};
use arrow_schema::{DataType as A, IntervalUnit, TimeUnit};
use chrono::{Datelike, NaiveDate};

use crate::error::{Error, Result};
use crate::query::func::Unit;

/// The Arrow type of an INTERVAL.
pub const TYPE: A = A::Interval(IntervalUnit::MonthDayNano);

const SEC: i64 = 1_000_000;
const MINUTE: i64 = 60 * SEC;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;

/// An interval: months, days and microseconds, each with its own sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

/// The errors of interval arithmetic, PostgreSQL's words.
pub fn out_of_range() -> String {
    "interval out of range".into()
}

impl Interval {
    pub fn from_arrow(v: IntervalMonthDayNano) -> Interval {
        Interval {
            months: v.months,
            days: v.days,
            micros: v.nanoseconds / 1_000,
        }
    }

    pub fn to_arrow(self) -> Option<IntervalMonthDayNano> {
        Some(IntervalMonthDayNano::new(
            self.months,
            self.days,
            self.micros.checked_mul(1_000)?,
        ))
    }

    /// The number PostgreSQL orders and compares intervals by: a month
    /// as 30 days, a day as 24 hours, in microseconds.
    pub fn key(self) -> i128 {
        (i128::from(self.months) * 30 + i128::from(self.days)) * i128::from(DAY)
            + i128::from(self.micros)
    }

    pub fn checked_add(self, o: Interval) -> Option<Interval> {
        Some(Interval {
            months: self.months.checked_add(o.months)?,
            days: self.days.checked_add(o.days)?,
            micros: self.micros.checked_add(o.micros)?,
        })
    }

    pub fn checked_neg(self) -> Option<Interval> {
        Some(Interval {
            months: self.months.checked_neg()?,
            days: self.days.checked_neg()?,
            micros: self.micros.checked_neg()?,
        })
    }

    /// `self * factor` (`self / factor` where `divide`), as PostgreSQL's
    /// `interval_mul` and `interval_div`: the fraction of a month carried
    /// into days (30 a month), the fraction of a day into time.
    pub fn scale(self, factor: f64, divide: bool) -> std::result::Result<Interval, String> {
        if divide && factor == 0.0 {
            return Err("division by zero".into());
        }
        let f = |x: f64| if divide { x / factor } else { x * factor };
        let fits = |x: f64| !x.is_nan() && x >= i32::MIN as f64 && x < i32::MAX as f64 + 1.0;
        let months = f(f64::from(self.months));
        let days = f(f64::from(self.days));
        if !fits(months) || !fits(days) {
            return Err(out_of_range());
        }
        let (m, mut d) = (months as i32, days as i32);
        let round = |x: f64| (x * 1e6).round_ties_even() / 1e6;
        let month_days = round((months - f64::from(m)) * 30.0);
        let mut sec = round((days - f64::from(d) + month_days - month_days.trunc()) * 86_400.0);
        if sec.abs() >= 86_400.0 {
            let whole = (sec / 86_400.0).trunc();
            d = d.checked_add(whole as i32).ok_or_else(out_of_range)?;
            sec -= whole * 86_400.0;
        }
        d = d
            .checked_add(month_days.trunc() as i32)
            .ok_or_else(out_of_range)?;
        let time = (f(self.micros as f64) + sec * 1e6).round_ties_even();
        if !time.is_finite() || time < i64::MIN as f64 || time >= i64::MAX as f64 {
            return Err(out_of_range());
        }
        Ok(Interval {
            months: m,
            days: d,
            micros: time as i64,
        })
    }

    /// `justify_hours`: whole days of the time into days, the signs of
    /// days and time made alike.
    pub fn justify_hours(self) -> Option<Interval> {
        let mut days = self
            .days
            .checked_add(i32::try_from(self.micros / DAY).ok()?)?;
        let mut micros = self.micros % DAY;
        if days > 0 && micros < 0 {
            micros += DAY;
            days -= 1;
        } else if days < 0 && micros > 0 {
            micros -= DAY;
            days += 1;
        }
        Some(Interval {
            months: self.months,
            days,
            micros,
        })
    }

    /// `justify_days`: 30 days into a month, the signs of months and days
    /// made alike.
    pub fn justify_days(self) -> Option<Interval> {
        let mut months = self.months.checked_add(self.days / 30)?;
        let mut days = self.days % 30;
        if months > 0 && days < 0 {
            days += 30;
            months -= 1;
        } else if months < 0 && days > 0 {
            days -= 30;
            months += 1;
        }
        Some(Interval {
            months,
            days,
            micros: self.micros,
        })
    }

    /// `justify_interval`: both, the signs of all three made alike.
    pub fn justify(self) -> Option<Interval> {
        let mut months = self.months;
        let mut days = self.days;
        let mut micros = self.micros;
        // As PostgreSQL 15's justify_interval: days from the time first,
        // then months from the days, then the signs.
        days = days.checked_add(i32::try_from(micros / DAY).ok()?)?;
        micros %= DAY;
        months = months.checked_add(days / 30)?;
        days %= 30;
        if months > 0 && (days < 0 || (days == 0 && micros < 0)) {
            days += 30;
            months -= 1;
        } else if months < 0 && (days > 0 || (days == 0 && micros > 0)) {
            days -= 30;
            months += 1;
        }
        if days > 0 && micros < 0 {
            micros += DAY;
            days -= 1;
        } else if days < 0 && micros > 0 {
            micros -= DAY;
            days += 1;
        }
        Some(Interval {
            months,
            days,
            micros,
        })
    }

    /// A field of the interval, as `date_part` gives it (PostgreSQL:
    /// years and months from the months, hours and below from the time,
    /// each truncated towards zero; EPOCH counts a year as 365.25 days and
    /// a month as 30).
    pub fn field(self, unit: Unit) -> Option<f64> {
        let years = self.months / 12;
        let t = self.micros;
        Some(match unit {
            Unit::Microseconds => (t % MINUTE) as f64,
            Unit::Milliseconds => (t % MINUTE) as f64 / 1_000.0,
            Unit::Second => (t % MINUTE) as f64 / SEC as f64,
            Unit::Minute => (t / MINUTE % 60) as f64,
            Unit::Hour => (t / HOUR) as f64,
            Unit::Day => f64::from(self.days),
            Unit::Month => f64::from(self.months % 12),
            Unit::Quarter => f64::from(self.months % 12 / 3 + 1),
            Unit::Year => f64::from(years),
            Unit::Decade => f64::from(years / 10),
            Unit::Century => f64::from(years / 100),
            Unit::Millennium => f64::from(years / 1000),
            Unit::Epoch => {
                let secs = t as f64 / SEC as f64;
                let year_secs = 365.25 * 86_400.0;
                secs + year_secs * f64::from(years)
                    + 30.0 * 86_400.0 * f64::from(self.months % 12)
                    + 86_400.0 * f64::from(self.days)
            }
            Unit::Week | Unit::Dow | Unit::Isodow | Unit::Doy | Unit::Isoyear => return None,
        })
    }
}

/// PostgreSQL's text of an interval (its default `IntervalStyle`,
/// `postgres`): `1 year 2 mons -3 days +04:05:06.5`, `00:00:00` for none.
pub fn format(iv: Interval) -> String {
    let mut out = String::new();
    let mut zero = true;
    let mut before = false;
    let mut part = |value: i64, unit: &str, out: &mut String| {
        if value == 0 {
            return;
        }
        if !zero {
            out.push(' ');
        }
        if before && value > 0 {
            out.push('+');
        }
        let plural = if value != 1 { "s" } else { "" };
        out.push_str(&format!("{value} {unit}{plural}"));
        before = value < 0;
        zero = false;
    };
    let (years, months) = (iv.months / 12, iv.months % 12);
    part(i64::from(years), "year", &mut out);
    part(i64::from(months), "mon", &mut out);
    part(i64::from(iv.days), "day", &mut out);
    let t = iv.micros;
    if zero || t != 0 {
        if !zero {
            out.push(' ');
        }
        if t < 0 {
            out.push('-');
        } else if before {
            out.push('+');
        }
        let a = t.unsigned_abs();
        let (h, m, s, f) = (
            a / HOUR as u64,
            a / MINUTE as u64 % 60,
            a / SEC as u64 % 60,
            a % SEC as u64,
        );
        out.push_str(&format!("{h:02}:{m:02}:{s:02}"));
        if f != 0 {
            let frac = format!("{f:06}");
            out.push('.');
            out.push_str(frac.trim_end_matches('0'));
        }
    }
    out
}

/// Reads an interval as PostgreSQL does: `1 year 2 mons 3 days`,
/// `-1.5 hours`, `3 4:05:06` (days and a time), `1:30`, `@ 1 day ago`,
/// `10` (seconds, or the unit of `field`: `INTERVAL '10' DAY`), units in
/// any case, plural or short (`mon`, `min`, `h`, `ms`, …). Numbers are
/// read exactly (decimal digits, not a double); a fraction of a unit is
/// carried down (a month's as 30 days, a day's as 24 hours; a year's to
/// whole months, rounded) and cut to whole microseconds. A field given
/// twice, or a number without a unit anywhere but last (or before a
/// time, as days), is an error. `field` (SQL's `INTERVAL '…' DAY`) also
/// drops the fields below it, as PostgreSQL's typed interval does. Not
/// read (errors): the SQL standard's `1-2` and ISO 8601's `P1Y2M`.
pub fn parse(text: &str, field: Option<Unit>) -> std::result::Result<Interval, String> {
    if field.is_none()
        && let Some(iv) = parse_written(text.trim().as_bytes())
    {
        return Ok(iv);
    }
    let bad = || format!("invalid input syntax for type interval: \"{text}\"");
    let mut acc = Acc::default();
    let lower = text.trim().to_ascii_lowercase();
    if let Some(iso) = text.trim().strip_prefix('P') {
        let mut iv = iso_8601(iso).ok_or_else(bad)?;
        if let Some(f) = field {
            iv = restrict(iv, f);
        }
        return Ok(iv);
    }
    let mut words: Vec<&str> = lower.split_ascii_whitespace().collect();
    if words.first() == Some(&"@") {
        words.remove(0);
    } else if let Some(w) = words.first().and_then(|w| w.strip_prefix('@'))
        && !w.is_empty()
    {
        words[0] = w;
    }
    let ago = words.last() == Some(&"ago");
    if ago {
        words.pop();
    }
    if words.is_empty() {
        return Err(bad());
    }
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        if w.contains(':') {
            acc.time(w).ok_or_else(bad)?;
            i += 1;
            continue;
        }
        // A number, its unit joined (`10min`) or the next word.
        let split = w
            .find(|c: char| c.is_ascii_alphabetic())
            .filter(|&k| k > 0)
            .unwrap_or(w.len());
        let (num, joined) = w.split_at(split);
        let n = Decimal::of(num).ok_or_else(bad)?;
        let next = words.get(i + 1);
        let (unit, used) = if !joined.is_empty() {
            (Unit::of(joined).ok_or_else(bad)?, 1)
        } else if let Some(next) = next.filter(|n| n.starts_with(|c: char| c.is_ascii_alphabetic()))
        {
            (Unit::of(next).ok_or_else(bad)?, 2)
        } else if next.is_some_and(|n| n.contains(':')) {
            (Unit::Day, 1)
        } else if next.is_none() {
            (field.unwrap_or(Unit::Second), 1)
        } else {
            return Err(bad());
        };
        acc.add(n, unit).ok_or_else(bad)?;
        i += used;
    }
    let mut iv = acc.finish().ok_or_else(out_of_range)?;
    if ago {
        iv = iv.checked_neg().ok_or_else(out_of_range)?;
    }
    if let Some(f) = field {
        iv = restrict(iv, f);
    }
    Ok(iv)
}

/// An interval in the form [`format`] writes (PostgreSQL's own output:
/// `1 year 2 mons -3 days +04:05:06.5`, `-01:30:00`), read without the
/// general reader's allocations (a column of them loads 5× faster);
/// `None` for any other text, which [`parse`] reads the general way. Each
/// number signed, the units in PostgreSQL's order, each once.
fn parse_written(t: &[u8]) -> Option<Interval> {
    let digits = |b: &[u8]| b.iter().take_while(|c| c.is_ascii_digit()).count();
    let number = |b: &[u8]| b.iter().fold(0i64, |v, &c| v * 10 + i64::from(c - b'0'));
    let two = |b: &[u8]| match b {
        [x @ b'0'..=b'5', y @ b'0'..=b'9', ..] => Some(i64::from((x - b'0') * 10 + (y - b'0'))),
        _ => None,
    };
    let (mut months, mut days, mut micros) = (0i64, 0i64, 0i64);
    // Year, month, day, time: each after the one before it.
    let mut rank = 0;
    let mut rest = t;
    loop {
        let (neg, body) = match rest {
            [b'-', b @ ..] => (true, b),
            [b'+', b @ ..] => (false, b),
            b => (false, b),
        };
        let n = digits(body);
        if n == 0 || n > 9 {
            return None;
        }
        let v = number(&body[..n]);
        let v = if neg { -v } else { v };
        let after = &body[n..];
        if let [b':', clock @ ..] = after {
            // H:MM:SS[.ffffff]
            if rank >= 4 {
                return None;
            }
            let (m, s) = (two(clock)?, two(clock.get(3..)?)?);
            if clock.get(2) != Some(&b':') {
                return None;
            }
            let mut tail = &clock[5..];
            let mut frac = 0;
            if let [b'.', f @ ..] = tail {
                let k = digits(f);
                if k == 0 || k > 6 {
                    return None;
                }
                frac = number(&f[..k]) * 10i64.pow(6 - k as u32);
                tail = &f[k..];
            }
            let us = ((v.abs() * 60 + m) * 60 + s) * 1_000_000 + frac;
            micros = if neg { -us } else { us };
            rank = 4;
            rest = tail;
        } else {
            let [b' ', w @ ..] = after else {
                return None;
            };
            let end = w.iter().position(|&c| c == b' ').unwrap_or(w.len());
            let r = match &w[..end] {
                b"year" | b"years" => {
                    months += v * 12;
                    1
                }
                b"mon" | b"mons" => {
                    months += v;
                    2
                }
                b"day" | b"days" => {
                    days = v;
                    3
                }
                _ => return None,
            };
            if r <= rank {
                return None;
            }
            rank = r;
            rest = &w[end..];
        }
        match rest {
            [] => break,
            [b' ', r @ ..] if !r.is_empty() => rest = r,
            _ => return None,
        }
    }
    Some(Interval {
        months: i32::try_from(months).ok()?,
        days: i32::try_from(days).ok()?,
        micros,
    })
}

/// ISO 8601's interval with designators, after its `P`: `1Y2M3DT4H5M6.5S`,
/// `2W`, `T1.5S`, `-1D`, upper case as PostgreSQL reads them: each number
/// signed and fractional (a fraction carried down), a unit given twice
/// added (`PT1M1M` is two minutes), `T` with nothing after it allowed.
fn iso_8601(body: &str) -> Option<Interval> {
    let mut total = Interval::default();
    let mut time = false;
    let mut rest = body;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('T') {
            if time {
                return None;
            }
            time = true;
            rest = r;
            continue;
        }
        let end = rest.find(|c: char| c.is_ascii_alphabetic())?;
        let n = Decimal::of(&rest[..end])?;
        let unit = match (time, rest.as_bytes()[end]) {
            (false, b'Y') => Unit::Year,
            (false, b'M') => Unit::Month,
            (false, b'W') => Unit::Week,
            (false, b'D') => Unit::Day,
            (true, b'H') => Unit::Hour,
            (true, b'M') => Unit::Minute,
            (true, b'S') => Unit::Second,
            _ => return None,
        };
        let mut one = Acc::default();
        one.add(n, unit)?;
        total = total.checked_add(one.finish()?)?;
        rest = &rest[end + 1..];
    }
    Some(total)
}

/// The fields below `unit` dropped (towards zero), as PostgreSQL's
/// `interval YEAR`, `interval DAY`, … do.
fn restrict(iv: Interval, unit: Unit) -> Interval {
    let cut = |t: i64, m: i64| t - t % m;
    match unit {
        Unit::Year | Unit::Decade | Unit::Century | Unit::Millennium => Interval {
            months: iv.months - iv.months % 12,
            ..Interval::default()
        },
        Unit::Month | Unit::Quarter => Interval {
            months: iv.months,
            ..Interval::default()
        },
        Unit::Day | Unit::Week => Interval { micros: 0, ..iv },
        Unit::Hour => Interval {
            micros: cut(iv.micros, HOUR),
            ..iv
        },
        Unit::Minute => Interval {
            micros: cut(iv.micros, MINUTE),
            ..iv
        },
        _ => iv,
    }
}

/// A number as PostgreSQL's interval reader takes it: its integer part
/// exactly, its fraction as a double (`strtod` of `.ddd`), both with the
/// number's sign.
#[derive(Clone, Copy)]
struct Decimal {
    int: i128,
    frac: f64,
}

impl Decimal {
    fn of(text: &str) -> Option<Decimal> {
        let (neg, body) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let (int, frac) = body.split_once('.').unwrap_or((body, ""));
        let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
        // A sign before the point (`-.5`) is not a number to PostgreSQL.
        let signed_point = int.is_empty() && body.len() < text.len();
        if int.is_empty() && frac.is_empty()
            || signed_point
            || !digits(int)
            || !digits(frac)
            || int.len() > 18
        {
            return None;
        }
        let int: i128 = if int.is_empty() { 0 } else { int.parse().ok()? };
        let frac: f64 = if frac.is_empty() {
            0.0
        } else {
            format!("0.{frac}").parse().ok()?
        };
        Some(if neg {
            Decimal {
                int: -int,
                frac: -frac,
            }
        } else {
            Decimal { int, frac }
        })
    }
}

/// `rint`: to the nearest integer, half to even.
fn rint(x: f64) -> f64 {
    x.round_ties_even()
}

/// Fields read so far; fractions carried down as PostgreSQL 15 carries
/// them (`AdjustFractMicroseconds`, `AdjustFractDays`).
#[derive(Default)]
struct Acc {
    months: i128,
    days: i128,
    micros: i128,
    /// The fields given (a bit a [`Unit`]; a time is hours, minutes and
    /// seconds): each at most once.
    seen: u32,
}

impl Acc {
    fn mark(&mut self, bits: u32) -> Option<()> {
        if self.seen & bits != 0 {
            return None;
        }
        self.seen |= bits;
        Some(())
    }

    /// A fraction (|frac| < 1) of `scale` microseconds: whole ones, the
    /// rest rounded (`rint`, so a half rounds to 0).
    fn fract_micros(&mut self, frac: f64, scale: i64) -> Option<()> {
        if frac == 0.0 {
            return Some(());
        }
        let t = frac * scale as f64;
        let whole = t.trunc();
        if !whole.is_finite() || whole.abs() > 9.2e18 {
            return None;
        }
        self.micros += whole as i128 + rint(t - whole) as i128;
        Some(())
    }

    /// A fraction of `scale` days: whole days, the rest as time.
    fn fract_days(&mut self, frac: f64, scale: i64) -> Option<()> {
        if frac == 0.0 {
            return Some(());
        }
        let t = frac * scale as f64;
        let whole = t.trunc();
        self.days += whole as i128;
        self.fract_micros(t - whole, DAY)
    }

    fn add(&mut self, n: Decimal, unit: Unit) -> Option<()> {
        // Seconds with a fraction give milli- and microseconds too.
        let fraction = if unit == Unit::Second && n.frac != 0.0 {
            1 << Unit::Milliseconds as u32 | 1 << Unit::Microseconds as u32
        } else {
            0
        };
        self.mark(1 << unit as u32 | fraction)?;
        let micro = |acc: &mut Acc, us: i64| {
            acc.micros += n.int.checked_mul(i128::from(us))?;
            acc.fract_micros(n.frac, us)
        };
        let years = |acc: &mut Acc, k: i64| {
            acc.months += n.int.checked_mul(i128::from(12 * k))?;
            acc.months += rint(n.frac * (12 * k) as f64) as i128;
            Some(())
        };
        match unit {
            Unit::Microseconds => micro(self, 1)?,
            Unit::Milliseconds => micro(self, 1_000)?,
            Unit::Second => micro(self, SEC)?,
            Unit::Minute => micro(self, MINUTE)?,
            Unit::Hour => micro(self, HOUR)?,
            Unit::Day => {
                self.days += n.int;
                self.fract_micros(n.frac, DAY)?
            }
            Unit::Week => {
                self.days += n.int.checked_mul(7)?;
                self.fract_days(n.frac, 7)?
            }
            Unit::Month => {
                self.months += n.int;
                self.fract_days(n.frac, 30)?
            }
            Unit::Year => years(self, 1)?,
            Unit::Decade => years(self, 10)?,
            Unit::Century => years(self, 100)?,
            Unit::Millennium => years(self, 1000)?,
            _ => return None,
        }
        Some(())
    }

    /// `[-]h:m[:s[.f]]`, the fraction of a microsecond rounded half to
    /// even.
    fn time(&mut self, w: &str) -> Option<()> {
        // A time gives hours, minutes, seconds and their fractions.
        self.mark(
            1 << Unit::Hour as u32
                | 1 << Unit::Minute as u32
                | 1 << Unit::Second as u32
                | 1 << Unit::Milliseconds as u32
                | 1 << Unit::Microseconds as u32,
        )?;
        let (neg, body) = match w.strip_prefix('-') {
            Some(b) => (true, b),
            None => (false, w.strip_prefix('+').unwrap_or(w)),
        };
        let mut parts: Vec<&str> = body.split(':').collect();
        if !(2..=3).contains(&parts.len()) {
            return None;
        }
        // `m:s.f`: minutes and seconds, when the second has a fraction.
        if parts.len() == 2 && parts[1].contains('.') {
            parts.insert(0, "0");
        }
        let whole = |p: &str| -> Option<i128> {
            (!p.is_empty() && p.len() <= 18 && p.bytes().all(|b| b.is_ascii_digit()))
                .then(|| p.parse().ok())
                .flatten()
        };
        let h = whole(parts[0])?;
        let m = whole(parts[1])?;
        if m >= 60 {
            return None;
        }
        let s = match parts.get(2) {
            Some(p) => {
                let (i, f) = p.split_once('.').unwrap_or((p, ""));
                let s = whole(i)?;
                if s >= 60 || !f.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                let f = &f[..f.len().min(18)];
                let (num, scale) = if f.is_empty() {
                    (0, 1)
                } else {
                    (f.parse::<i128>().ok()?, 10i128.pow(f.len() as u32))
                };
                let us = num * i128::from(SEC);
                let (q, r) = (us / scale, us % scale);
                let up = 2 * r > scale || (2 * r == scale && q % 2 != 0);
                s * i128::from(SEC) + q + i128::from(up)
            }
            None => 0,
        };
        let t = h * i128::from(HOUR) + m * i128::from(MINUTE) + s;
        self.micros += if neg { -t } else { t };
        Some(())
    }

    fn finish(self) -> Option<Interval> {
        Some(Interval {
            months: i32::try_from(self.months).ok()?,
            days: i32::try_from(self.days).ok()?,
            micros: i64::try_from(self.micros).ok()?,
        })
    }
}

/// The local time `local` (µs since 1970-01-01 00:00, no zone) plus the
/// months and days of `iv` (months first, the day clamped to the month's
/// last, then days), as PostgreSQL adds them; `None` out of range. The
/// microseconds are the caller's (for an instant, added after its zone's
/// local time is turned back into an instant).
pub fn add_months_days(local: i64, iv: Interval) -> Option<i64> {
    if iv.months == 0 && iv.days == 0 {
        return Some(local);
    }
    let day = local.div_euclid(DAY);
    let time = local.rem_euclid(DAY);
    let mut date = crate::parse::value::date_from_days(i32::try_from(day).ok()?)?;
    if iv.months != 0 {
        let total = i64::from(date.year()) * 12 + i64::from(date.month0()) + i64::from(iv.months);
        let (y, m) = (
            i32::try_from(total.div_euclid(12)).ok()?,
            total.rem_euclid(12) as u32 + 1,
        );
        let last = last_day(y, m)?;
        date = NaiveDate::from_ymd_opt(y, m, date.day().min(last))?;
    }
    let days = i64::from(date.to_epoch_days()) + i64::from(iv.days);
    let days = i32::try_from(days).ok()?;
    crate::parse::value::date_from_days(days)?;
    i64::from(days).checked_mul(DAY)?.checked_add(time)
}

fn last_day(y: i32, m: u32) -> Option<u32> {
    let next = if m == 12 {
        NaiveDate::from_ymd_opt(y + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(y, m + 1, 1)
    }?;
    Some(next.pred_opt()?.day())
}

/// `age(a, b)` of two local times, as PostgreSQL's `timestamp_age`: the
/// fields subtracted one by one, borrowing from the next larger (a
/// month's days from `a`'s month where `a` is earlier, else `b`'s), so
/// `age('2024-03-01', '2023-01-31')` is `1 year 1 mon 1 day`.
pub fn age(a: i64, b: i64) -> Option<Interval> {
    let fields = |t: i64| -> Option<[i64; 7]> {
        let date = crate::parse::value::date_from_days(i32::try_from(t.div_euclid(DAY)).ok()?)?;
        let us = t.rem_euclid(DAY);
        Some([
            i64::from(date.year()),
            i64::from(date.month()),
            i64::from(date.day()),
            us / HOUR,
            us / MINUTE % 60,
            us / SEC % 60,
            us % SEC,
        ])
    };
    let (fa, fb) = (fields(a)?, fields(b)?);
    let mut f = [0i64; 7];
    for k in 0..7 {
        f[k] = fa[k] - fb[k];
    }
    let flip = a < b;
    if flip {
        f.iter_mut().for_each(|v| *v = -*v);
    }
    let [year, mon, mday, hour, min, sec, usec] = &mut f;
    while *usec < 0 {
        *usec += SEC;
        *sec -= 1;
    }
    while *sec < 0 {
        *sec += 60;
        *min -= 1;
    }
    while *min < 0 {
        *min += 60;
        *hour -= 1;
    }
    while *hour < 0 {
        *hour += 24;
        *mday -= 1;
    }
    while *mday < 0 {
        let (y, m) = if flip { (fa[0], fa[1]) } else { (fb[0], fb[1]) };
        *mday += i64::from(last_day(i32::try_from(y).ok()?, u32::try_from(m).ok()?)?);
        *mon -= 1;
    }
    while *mon < 0 {
        *mon += 12;
        *year -= 1;
    }
    if flip {
        f.iter_mut().for_each(|v| *v = -*v);
    }
    let [year, mon, mday, hour, min, sec, usec] = f;
    Some(Interval {
        months: i32::try_from(year * 12 + mon).ok()?,
        days: i32::try_from(mday).ok()?,
        micros: ((hour * 60 + min) * 60 + sec) * SEC + usec,
    })
}

/// `a - b` of two timestamps (local times, or two instants): the
/// microseconds between, whole days of them as days (PostgreSQL's
/// `timestamp_mi`, which justifies the hours).
pub fn between(a: i64, b: i64) -> Option<Interval> {
    Interval {
        months: 0,
        days: 0,
        micros: a.checked_sub(b)?,
    }
    .justify_hours()
}

/// The interval operations [`crate::query::func::Func::Interval`] runs
/// over arrays (the binder brings the arguments to the types named).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `(timestamp, interval)`: `ts + iv` (`ts - iv` where `sub`), a
    /// TIMESTAMPTZ's months and days added in its zone's local time.
    PlusTimestamp {
        sub: bool,
    },
    /// `(timestamp, timestamp)` of one type: `a - b`.
    TimestampDiff,
    /// `(time, interval)`: `t + iv` (`t - iv` where `sub`): the
    /// interval's time part, around the clock (PostgreSQL's: months and
    /// days are ignored, `23:00 + 2 hours` is `01:00`).
    PlusTime {
        sub: bool,
    },
    /// `(time, time)`: `a - b`, an interval of microseconds.
    TimeDiff,
    /// `(date, time)`: the timestamp of that time on that day.
    DatePlusTime,
    /// `(interval, interval)`.
    Add {
        sub: bool,
    },
    /// `(interval, double)`: `iv * f` (`iv / f` where `divide`).
    Scale {
        divide: bool,
    },
    Neg,
    /// `(interval)`: the DECIMAL(38,0) PostgreSQL compares it by
    /// ([`Interval::key`]).
    Key,
    /// `(interval)`: one of its fields as a BIGINT (0: months, 1: days,
    /// 2: microseconds), which `sum` adds up.
    Field(u8),
    /// `(months, days, microseconds)`, each a sum of the field over a
    /// group: the interval of those fields, as PostgreSQL's `sum` adds
    /// intervals field by field (out of range where a field does not fit).
    OfSums,
    /// `age(a, b)` of two timestamps of one type.
    Age,
    JustifyHours,
    JustifyDays,
    Justify,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::PlusTimestamp { sub: false }
            | Op::Add { sub: false }
            | Op::PlusTime { sub: false }
            | Op::DatePlusTime => "+",
            Op::PlusTimestamp { sub: true }
            | Op::TimestampDiff
            | Op::Add { sub: true }
            | Op::PlusTime { sub: true }
            | Op::TimeDiff => "-",
            Op::Scale { divide: false } => "*",
            Op::Scale { divide: true } => "/",
            Op::Neg => "-",
            Op::Key => "INTERVAL_KEY",
            Op::Field(0) => "INTERVAL_MONTHS",
            Op::Field(1) => "INTERVAL_DAYS",
            Op::Field(_) => "INTERVAL_MICROS",
            Op::OfSums => "INTERVAL_OF_SUMS",
            Op::Age => "AGE",
            Op::JustifyHours => "JUSTIFY_HOURS",
            Op::JustifyDays => "JUSTIFY_DAYS",
            Op::Justify => "JUSTIFY_INTERVAL",
        }
    }
}

fn interval_error() -> Error {
    Error::Argument {
        state: "22008",
        message: out_of_range(),
    }
}

fn timestamp_error() -> Error {
    Error::Argument {
        state: "22008",
        message: "timestamp out of range".into(),
    }
}

/// The intervals of an INTERVAL (or NULL) array.
pub fn values(a: &ArrayRef) -> Vec<Option<Interval>> {
    match a.data_type() {
        A::Interval(IntervalUnit::MonthDayNano) => a
            .as_primitive::<IntervalMonthDayNanoType>()
            .iter()
            .map(|v| v.map(Interval::from_arrow))
            .collect(),
        _ => vec![None; a.len()],
    }
}

/// An INTERVAL array of `values`.
pub fn array(values: impl IntoIterator<Item = Option<Interval>>) -> Result<ArrayRef> {
    let out: IntervalMonthDayNanoArray = values
        .into_iter()
        .map(|v| {
            v.map(|v| v.to_arrow().ok_or_else(interval_error))
                .transpose()
        })
        .collect::<Result<_>>()?;
    Ok(Arc::new(out))
}

/// A TIME array's values (NULL arrays: all None).
fn times(a: &ArrayRef) -> Vec<Option<i64>> {
    match a.data_type() {
        A::Time64(TimeUnit::Microsecond) => {
            a.as_primitive::<Time64MicrosecondType>().iter().collect()
        }
        _ => vec![None; a.len()],
    }
}

/// A timestamp array's values (NULL arrays: all None) and its zone.
fn stamps(a: &ArrayRef) -> (Vec<Option<i64>>, Option<crate::zone::Zone>) {
    match a.data_type() {
        A::Timestamp(TimeUnit::Microsecond, zone) => (
            a.as_primitive::<TimestampMicrosecondType>()
                .iter()
                .collect(),
            zone.as_deref().map(|z| crate::zone::Zone::of(Some(z))),
        ),
        _ => (vec![None; a.len()], None),
    }
}

/// `op` over `args`, as an array of type `ty`.
pub fn eval(op: Op, args: &[ArrayRef], ty: &A) -> Result<ArrayRef> {
    match op {
        Op::PlusTimestamp { sub } => {
            let (ts, zone) = stamps(&args[0]);
            let ivs = values(&args[1]);
            let out: TimestampMicrosecondArray = ts
                .iter()
                .zip(ivs)
                .map(|(t, iv)| {
                    let (Some(t), Some(iv)) = (*t, iv) else {
                        return Ok(None);
                    };
                    let iv = if sub {
                        iv.checked_neg().ok_or_else(interval_error)?
                    } else {
                        iv
                    };
                    plus(t, iv, zone.as_ref())
                        .map(Some)
                        .ok_or_else(timestamp_error)
                })
                .collect::<Result<_>>()?;
            let zone = match ty {
                A::Timestamp(_, z) => z.clone(),
                _ => None,
            };
            Ok(Arc::new(out.with_timezone_opt(zone)))
        }
        Op::PlusTime { sub } => {
            let ivs = values(&args[1]);
            let out: Time64MicrosecondArray = times(&args[0])
                .into_iter()
                .zip(ivs)
                .map(|(t, iv)| {
                    let (t, iv) = (t?, iv?);
                    let d = if sub {
                        iv.micros.wrapping_neg()
                    } else {
                        iv.micros
                    };
                    Some((t + d.rem_euclid(DAY)).rem_euclid(DAY))
                })
                .collect();
            Ok(Arc::new(out))
        }
        Op::TimeDiff => {
            let (a, b) = (times(&args[0]), times(&args[1]));
            array(a.into_iter().zip(b).map(|(x, y)| {
                Some(Interval {
                    months: 0,
                    days: 0,
                    micros: x? - y?,
                })
            }))
        }
        Op::DatePlusTime => {
            let days: Vec<Option<i32>> = match args[0].data_type() {
                A::Date32 => args[0].as_primitive::<Date32Type>().iter().collect(),
                _ => vec![None; args[0].len()],
            };
            let out: TimestampMicrosecondArray = days
                .into_iter()
                .zip(times(&args[1]))
                .map(|(d, t)| Some(i64::from(d?) * DAY + t?))
                .collect();
            Ok(Arc::new(out))
        }
        Op::TimestampDiff | Op::Age => {
            let (a, za) = stamps(&args[0]);
            let (b, zb) = stamps(&args[1]);
            let local = |t: i64, z: &Option<crate::zone::Zone>| match z {
                Some(z) if op == Op::Age => z.to_local(t),
                _ => t,
            };
            array(
                a.iter()
                    .zip(&b)
                    .map(|(x, y)| {
                        let (Some(x), Some(y)) = (*x, *y) else {
                            return Ok(None);
                        };
                        let (x, y) = (local(x, &za), local(y, &zb));
                        let r = if op == Op::Age {
                            age(x, y)
                        } else {
                            between(x, y)
                        };
                        r.map(Some).ok_or_else(interval_error)
                    })
                    .collect::<Result<Vec<_>>>()?,
            )
        }
        Op::Add { sub } => {
            let (a, b) = (values(&args[0]), values(&args[1]));
            array(
                a.into_iter()
                    .zip(b)
                    .map(|(x, y)| {
                        let (Some(x), Some(y)) = (x, y) else {
                            return Ok(None);
                        };
                        let y = if sub { y.checked_neg() } else { Some(y) };
                        y.and_then(|y| x.checked_add(y))
                            .map(Some)
                            .ok_or_else(interval_error)
                    })
                    .collect::<Result<Vec<_>>>()?,
            )
        }
        Op::Scale { divide } => {
            let a = values(&args[0]);
            let f: Vec<Option<f64>> = match args[1].data_type() {
                A::Float64 => args[1].as_primitive::<Float64Type>().iter().collect(),
                _ => vec![None; args[1].len()],
            };
            array(
                a.into_iter()
                    .zip(f)
                    .map(|(x, f)| {
                        let (Some(x), Some(f)) = (x, f) else {
                            return Ok(None);
                        };
                        x.scale(f, divide).map(Some).map_err(|m| {
                            if m == "division by zero" {
                                Error::Argument {
                                    state: "22012",
                                    message: m,
                                }
                            } else {
                                interval_error()
                            }
                        })
                    })
                    .collect::<Result<Vec<_>>>()?,
            )
        }
        Op::Neg | Op::JustifyHours | Op::JustifyDays | Op::Justify => {
            let one = |x: Interval| match op {
                Op::Neg => x.checked_neg(),
                Op::JustifyHours => x.justify_hours(),
                Op::JustifyDays => x.justify_days(),
                _ => x.justify(),
            };
            array(
                values(&args[0])
                    .into_iter()
                    .map(|x| x.map(|x| one(x).ok_or_else(interval_error)).transpose())
                    .collect::<Result<Vec<_>>>()?,
            )
        }
        Op::Field(k) => {
            let out: arrow_array::Int64Array = values(&args[0])
                .into_iter()
                .map(|x| {
                    x.map(|x| match k {
                        0 => i64::from(x.months),
                        1 => i64::from(x.days),
                        _ => x.micros,
                    })
                })
                .collect();
            Ok(Arc::new(out))
        }
        Op::OfSums => {
            let field = |a: &ArrayRef| -> Vec<Option<i128>> {
                match a.data_type() {
                    A::Decimal128(..) => a
                        .as_primitive::<arrow_array::types::Decimal128Type>()
                        .iter()
                        .collect(),
                    A::Int64 => a
                        .as_primitive::<arrow_array::types::Int64Type>()
                        .iter()
                        .map(|v| v.map(i128::from))
                        .collect(),
                    _ => vec![None; a.len()],
                }
            };
            let (m, d, us) = (field(&args[0]), field(&args[1]), field(&args[2]));
            array(
                m.into_iter()
                    .zip(d)
                    .zip(us)
                    .map(|((m, d), us)| {
                        let (Some(m), Some(d), Some(us)) = (m, d, us) else {
                            return Ok(None);
                        };
                        Ok(Some(Interval {
                            months: i32::try_from(m).map_err(|_| interval_error())?,
                            days: i32::try_from(d).map_err(|_| interval_error())?,
                            micros: i64::try_from(us).map_err(|_| interval_error())?,
                        }))
                    })
                    .collect::<Result<Vec<_>>>()?,
            )
        }
        Op::Key => {
            let out: Decimal128Array = values(&args[0])
                .into_iter()
                .map(|x| x.map(Interval::key))
                .collect();
            Ok(Arc::new(
                out.with_precision_and_scale(38, 0)
                    .map_err(|e| Error::Internal(e.to_string()))?,
            ))
        }
    }
}

/// `t + iv`: months and days in local time (a TIMESTAMPTZ's in its
/// zone's), then the microseconds.
fn plus(t: i64, iv: Interval, zone: Option<&crate::zone::Zone>) -> Option<i64> {
    let moved = if iv.months == 0 && iv.days == 0 {
        t
    } else {
        match zone {
            Some(z) => z.to_utc(add_months_days(z.to_local(t), iv)?),
            None => add_months_days(t, iv)?,
        }
    };
    let out = moved.checked_add(iv.micros)?;
    // Within the years a TIMESTAMP reads (as a date).
    crate::parse::value::date_from_days(i32::try_from(out.div_euclid(DAY)).ok()?)?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(text: &str) -> Interval {
        parse(text, None).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn show(text: &str) -> String {
        format(iv(text))
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 5_000, ..Default::default() })]

        /// Every interval's text reads back as it, by the short path and
        /// the general one.
        #[test]
        fn written_intervals_read_back(
            months in -200_000i32..200_000,
            days in -1_000_000i32..1_000_000,
            micros in -100_000_000_000_000i64..100_000_000_000_000,
        ) {
            let iv = Interval { months, days, micros };
            let text = format(iv);
            proptest::prop_assert_eq!(parse_written(text.as_bytes()), Some(iv), "{}", text);
            proptest::prop_assert_eq!(parse(&text, None), Ok(iv), "{}", text);
        }

        /// Whatever the short path reads, the general reader reads the same.
        #[test]
        fn the_short_path_agrees_with_the_general_reader(
            t in "[-+]?[0-9]{1,3}( (year|years|mon|mons|day|days|yr|d)| [-+]?[0-9]{1,2}:[0-9]{2}(:[0-9]{2}(\\.[0-9]{1,7})?)?){0,4}"
        ) {
            if let Some(iv) = parse_written(t.as_bytes()) {
                proptest::prop_assert_eq!(parse_general(&t), Ok(iv), "{}", t);
            }
        }
    }

    /// [`parse`] without its short path.
    fn parse_general(t: &str) -> std::result::Result<Interval, String> {
        // PostgreSQL's `@` before the text changes nothing for the
        // general reader, and keeps the text off the short path.
        parse(&format!("@ {t}"), None)
    }

    #[test]
    fn iso_8601_designators_read_as_postgresql() {
        // Each answer PostgreSQL 15's.
        for (input, out) in [
            ("P1Y2M3DT4H5M6S", "1 year 2 mons 3 days 04:05:06"),
            ("P1D", "1 day"),
            ("P0.5M", "15 days"),
            ("PT1.5S", "00:00:01.5"),
            ("P2W", "14 days"),
            ("P-1DT-2H", "-1 days -02:00:00"),
            ("P1Y-2M", "10 mons"),
            ("PT36H", "36:00:00"),
            ("P1.5Y", "1 year 6 mons"),
            ("PT", "00:00:00"),
            ("P1DT", "1 day"),
            ("P1YT", "1 year"),
            ("PT1M1M", "00:02:00"),
        ] {
            assert_eq!(show(input), out, "{input}");
        }
        for bad in [
            "P", "pt1m", "p1d2d", "P1H", "PT1D", "P1d", "P1DT1h", "P1DT2H3", "P1DTT1H",
        ] {
            assert!(parse(bad, None).is_err(), "{bad}");
        }
    }

    #[test]
    fn reads_and_writes_as_postgresql() {
        // Each pair checked with PostgreSQL 15.
        for (input, out) in [
            (
                "1 year 2 mons 3 days 04:05:06.5",
                "1 year 2 mons 3 days 04:05:06.5",
            ),
            ("-1 day +2 hours", "-1 days +02:00:00"),
            ("10", "00:00:10"),
            ("1.5 years", "1 year 6 mons"),
            ("1.5 days", "1 day 12:00:00"),
            ("-1.5 hours", "-01:30:00"),
            ("3 4:05:06", "3 days 04:05:06"),
            ("@ 1 day ago", "-1 days"),
            ("1 day -1 hour", "1 day -01:00:00"),
            ("-14 mons", "-1 years -2 mons"),
            ("1 week 2 days", "9 days"),
            ("100 hours", "100:00:00"),
            ("0", "00:00:00"),
            ("1:30", "01:30:00"),
            ("-1:30:15.25", "-01:30:15.25"),
            ("2 hours 30 minutes 15.123456789 seconds", "02:30:15.123457"),
            ("1 millisecond", "00:00:00.001"),
            ("1 year -1 mons", "11 mons"),
            ("1 Month", "1 mon"),
            ("90 Minutes", "01:30:00"),
            ("10min", "00:10:00"),
            ("1 day 2", "1 day 00:00:02"),
            ("1 h 2 m", "01:02:00"),
            ("0.5 mon", "15 days"),
            (".5 days", "12:00:00"),
            ("5 decades", "50 years"),
            ("+1 day", "1 day"),
            ("1 week -1 day", "6 days"),
            ("59.9999995 sec", "00:00:59.999999"),
            ("3.5 microseconds", "00:00:00.000003"),
            ("0.5 microseconds", "00:00:00"),
            ("1.0000005 sec", "00:00:01"),
            ("00:00:00.0000005", "00:00:00"),
            ("00:00:00.0000015", "00:00:00.000002"),
            ("0.3 sec", "00:00:00.3"),
            ("2.5 microseconds", "00:00:00.000002"),
            ("1.0005 ms", "00:00:00.001"),
            ("1.0015 ms", "00:00:00.001001"),
            ("14 decade -6:19.487707", "140 years -00:06:19.487707"),
            ("5 ms 1 second", "00:00:01.005"),
            ("2.5 ms 3 us", "00:00:00.002503"),
            ("0.0000025 sec", "00:00:00.000002"),
            ("0.0000035 sec", "00:00:00.000003"),
            ("0.0000000416667 min", "00:00:00.000003"),
            ("1.00000002 hours", "01:00:00.000072"),
            ("0.000000005 days", "00:00:00.000432"),
            ("1.5 weeks", "10 days 12:00:00"),
            ("1.04 years", "1 year"),
            ("-1.5 years", "-1 years -6 mons"),
            ("1.7 mons", "1 mon 21 days"),
        ] {
            assert_eq!(show(input), out, "{input}");
        }
        assert_eq!(
            format(parse("1.5", Some(Unit::Day)).unwrap()),
            "1 day",
            "typed DAY drops the time"
        );
        assert_eq!(format(parse("2", Some(Unit::Hour)).unwrap()), "02:00:00");
        for wrong in [
            "",
            "day",
            "1 fortnight",
            "1:60",
            "abc",
            "@",
            "1.2.3 days",
            "1e2 days",
            "1 quarter",
            "1 2",
            "5 6",
            "1 2 3",
            "1 day 1 day",
            "1 hour 1 hour",
            "1 day 01:00 02:00",
            "1 hour 01:00",
            "1-2",
            // PostgreSQL reads ISO 8601's alternative form; sluice not yet.
            "P0001-02-03T04:05:06",
            "-.75 year",
            "5 ms 9:05:08",
            "18 us 7:10:49",
            "1.5 second 5 ms",
            "1.5 sec 3 us",
        ] {
            assert!(parse(wrong, None).is_err(), "{wrong:?} was read");
        }
    }

    #[test]
    fn multiplies_and_divides_as_postgresql() {
        let s = |t: &str, f: f64, div: bool| format(iv(t).scale(f, div).unwrap());
        assert_eq!(s("1 day", 2.5, false), "2 days 12:00:00");
        assert_eq!(s("1 mon", 3.0, true), "10 days");
        assert_eq!(s("1 year", 7.0, true), "1 mon 21 days 10:17:08.5344");
        assert_eq!(s("25 hours", 0.3, false), "07:30:00");
        assert_eq!(s("1.5 months", 1.5, false), "1 mon 37 days 12:00:00");
        assert!(iv("1 day").scale(0.0, true).is_err());
        assert!(iv("1 mon").scale(1e12, false).is_err());
    }

    #[test]
    fn compares_a_month_as_30_days() {
        assert_eq!(iv("1 mon").key(), iv("30 days").key());
        assert!(iv("1 mon").key() < iv("31 days").key());
        assert!(iv("1 day").key() == iv("24 hours").key());
        assert!(iv("-1 day").key() < iv("0").key());
    }

    #[test]
    fn fields_and_epoch() {
        let f = |t: &str, u: Unit| iv(t).field(u).unwrap();
        assert_eq!(f("1 year 1 mon 1 day 1 hour", Unit::Epoch), 34_239_600.0);
        assert_eq!(f("25:30", Unit::Hour), 25.0);
        assert_eq!(f("1:2:3.5", Unit::Second), 3.5);
        assert_eq!(f("14 mons", Unit::Month), 2.0);
        assert_eq!(f("-14 mons", Unit::Year), -1.0);
        assert_eq!(f("5 mons", Unit::Quarter), 2.0);
        assert_eq!(f("40 days", Unit::Day), 40.0);
        assert!(iv("1 day").field(Unit::Dow).is_none());
    }

    fn at(y: i32, m: u32, d: u32, h: u32) -> i64 {
        NaiveDate::from_ymd_opt(y, m, d)
            .unwrap()
            .and_hms_opt(h, 0, 0)
            .unwrap()
            .and_utc()
            .timestamp_micros()
    }

    #[test]
    fn ages_and_differences_as_postgresql() {
        let age_of = |a: i64, b: i64| format(age(a, b).unwrap());
        assert_eq!(
            age_of(at(2024, 3, 1, 0), at(2023, 1, 31, 0)),
            "1 year 1 mon 1 day"
        );
        assert_eq!(
            age_of(at(2023, 1, 31, 0), at(2024, 3, 1, 0)),
            "-1 years -1 mons -1 days"
        );
        assert_eq!(
            age_of(at(2024, 3, 1, 5), at(2024, 2, 28, 10)),
            "1 day 19:00:00"
        );
        assert_eq!(age_of(at(2024, 1, 1, 0), at(2024, 1, 1, 0)), "00:00:00");
        assert_eq!(
            format(between(at(2024, 1, 2, 10), at(2024, 1, 1, 9)).unwrap()),
            "1 day 01:00:00"
        );
        assert_eq!(
            format(between(at(2024, 1, 1, 9), at(2024, 1, 2, 10)).unwrap()),
            "-1 days -01:00:00"
        );
        // Months first, the day clamped, then days.
        let plus = |t: i64, s: &str| add_months_days(t, iv(s)).unwrap();
        assert_eq!(plus(at(2024, 1, 31, 7), "1 mon"), at(2024, 2, 29, 7));
        assert_eq!(plus(at(2024, 1, 31, 7), "1 mon 1 day"), at(2024, 3, 1, 7));
        assert_eq!(plus(at(2024, 3, 31, 0), "-1 mon"), at(2024, 2, 29, 0));
        assert_eq!(
            plus(at(2023, 12, 15, 0), "1 year 1 mon"),
            at(2025, 1, 15, 0)
        );
    }

    #[test]
    fn justifies_as_postgresql() {
        let j = |t: &str| format(iv(t).justify().unwrap());
        assert_eq!(j("1 mon -1 hour"), "29 days 23:00:00");
        assert_eq!(j("35 days 25 hours"), "1 mon 6 days 01:00:00");
        assert_eq!(
            format(iv("27 hours").justify_hours().unwrap()),
            "1 day 03:00:00"
        );
        assert_eq!(
            format(iv("65 days").justify_days().unwrap()),
            "2 mons 5 days"
        );
    }
}
