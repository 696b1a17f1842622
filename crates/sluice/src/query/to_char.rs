//! `to_char(timestamp | date | timestamptz, format)` with PostgreSQL's
//! template patterns: `YYYY`, `MM`, `DD`, `HH24`, `MI`, `SS`, `MS`, `US`,
//! month and day names in three cases (`Month`, `MONTH`, `month`, `Mon`,
//! `Day`, `Dy`, …), ISO years, weeks and days, `Q`, `WW`, `J`, `CC`,
//! `AM`/`PM`, `RM`, `AD`/`BC`, the `FM` prefix (no padding) and the
//! `TH` suffix (ordinals), text in double quotes; other characters are
//! copied. A TIMESTAMPTZ is written in its zone's local time.
//!
//! For: formatting one local time. Not for: numbers (`to_char(1.5,
//! '9.99')` is refused by the binder) or the zone patterns (`TZ`, `OF`,
//! refused here).

use chrono::{Datelike, NaiveDate};

use crate::error::{Error, Result};

const SEC: i64 = 1_000_000;
const DAY: i64 = 86_400 * SEC;

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const ROMAN: [&str; 12] = [
    "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII",
];

/// A pattern of the template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum P {
    YearComma,
    Year4,
    Year3,
    Year2,
    Year1,
    IsoYear4,
    IsoYear3,
    IsoYear2,
    IsoYear1,
    /// Month and day names: the case they are written in.
    MonthName(Case),
    MonthAbbr(Case),
    DayName(Case),
    DayAbbr(Case),
    Roman(Case),
    Mm,
    Ddd,
    Dd,
    D,
    Iddd,
    Id,
    Hh24,
    Hh12,
    Mi,
    Ss,
    Ms,
    Us,
    SecondsOfDay,
    /// `AM`/`PM` (`dots`: `A.M.`), in a case.
    Meridiem(Case, bool),
    Era(Case, bool),
    Ww,
    Iw,
    W,
    Q,
    Cc,
    J,
    Zone,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Upper,
    Title,
    Lower,
}

/// The patterns, longest first where one begins another (PostgreSQL's
/// `DCH_keywords`); `true`: the pattern is matched in any case (the
/// numeric ones), else as written.
const KEYWORDS: &[(&str, P, bool)] = &[
    ("A.D.", P::Era(Case::Upper, true), false),
    ("a.d.", P::Era(Case::Lower, true), false),
    ("A.M.", P::Meridiem(Case::Upper, true), false),
    ("a.m.", P::Meridiem(Case::Lower, true), false),
    ("AD", P::Era(Case::Upper, false), false),
    ("ad", P::Era(Case::Lower, false), false),
    ("AM", P::Meridiem(Case::Upper, false), false),
    ("am", P::Meridiem(Case::Lower, false), false),
    ("B.C.", P::Era(Case::Upper, true), false),
    ("b.c.", P::Era(Case::Lower, true), false),
    ("BC", P::Era(Case::Upper, false), false),
    ("bc", P::Era(Case::Lower, false), false),
    ("CC", P::Cc, true),
    ("DAY", P::DayName(Case::Upper), false),
    ("Day", P::DayName(Case::Title), false),
    ("day", P::DayName(Case::Lower), false),
    ("DDD", P::Ddd, true),
    ("DD", P::Dd, true),
    ("DY", P::DayAbbr(Case::Upper), false),
    ("Dy", P::DayAbbr(Case::Title), false),
    ("dy", P::DayAbbr(Case::Lower), false),
    ("D", P::D, true),
    ("HH24", P::Hh24, true),
    ("HH12", P::Hh12, true),
    ("HH", P::Hh12, true),
    ("IDDD", P::Iddd, true),
    ("ID", P::Id, true),
    ("IW", P::Iw, true),
    ("IYYY", P::IsoYear4, true),
    ("IYY", P::IsoYear3, true),
    ("IY", P::IsoYear2, true),
    ("I", P::IsoYear1, true),
    ("J", P::J, true),
    ("MI", P::Mi, true),
    ("MM", P::Mm, true),
    ("MONTH", P::MonthName(Case::Upper), false),
    ("Month", P::MonthName(Case::Title), false),
    ("month", P::MonthName(Case::Lower), false),
    ("MON", P::MonthAbbr(Case::Upper), false),
    ("Mon", P::MonthAbbr(Case::Title), false),
    ("mon", P::MonthAbbr(Case::Lower), false),
    ("MS", P::Ms, true),
    ("OF", P::Zone, false),
    ("P.M.", P::Meridiem(Case::Upper, true), false),
    ("p.m.", P::Meridiem(Case::Lower, true), false),
    ("PM", P::Meridiem(Case::Upper, false), false),
    ("pm", P::Meridiem(Case::Lower, false), false),
    ("Q", P::Q, true),
    ("RM", P::Roman(Case::Upper), false),
    ("rm", P::Roman(Case::Lower), false),
    ("SSSSS", P::SecondsOfDay, true),
    ("SSSS", P::SecondsOfDay, true),
    ("SS", P::Ss, true),
    ("TZH", P::Zone, false),
    ("TZM", P::Zone, false),
    ("TZ", P::Zone, false),
    ("tz", P::Zone, false),
    ("US", P::Us, true),
    ("WW", P::Ww, true),
    ("W", P::W, true),
    ("Y,YYY", P::YearComma, true),
    ("YYYY", P::Year4, true),
    ("YYY", P::Year3, true),
    ("YY", P::Year2, true),
    ("Y", P::Year1, true),
];

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Field { p: P, fill: bool, th: Option<Case> },
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template(Vec<Piece>);

impl Template {
    /// Reads a template as PostgreSQL's `to_char` does.
    pub fn parse(fmt: &str) -> Result<Template> {
        let mut out = Vec::new();
        let mut text = String::new();
        let mut rest = fmt;
        while let Some(c) = rest.chars().next() {
            if c == '"' {
                // Quoted text; `\"` is a quote in it.
                let mut chars = rest[1..].char_indices();
                let mut end = rest.len();
                while let Some((i, ch)) = chars.next() {
                    if ch == '\\' {
                        if let Some((_, next)) = chars.next() {
                            text.push(next);
                        }
                        continue;
                    }
                    if ch == '"' {
                        end = i + 2;
                        break;
                    }
                    text.push(ch);
                }
                rest = &rest[end.min(rest.len())..];
                continue;
            }
            if c == '\\' && rest[1..].starts_with('"') {
                text.push('"');
                rest = &rest[2..];
                continue;
            }
            let fill = rest.starts_with("FM") || rest.starts_with("fm");
            let body = if fill { &rest[2..] } else { rest };
            let found = KEYWORDS.iter().find(|(k, _, any_case)| {
                body.get(..k.len()).is_some_and(|head| {
                    if *any_case {
                        head.eq_ignore_ascii_case(k)
                    } else {
                        head == *k
                    }
                })
            });
            match found {
                Some((k, p, _)) => {
                    if !text.is_empty() {
                        out.push(Piece::Text(std::mem::take(&mut text)));
                    }
                    let after = &body[k.len()..];
                    let th = if after.starts_with("TH") {
                        Some(Case::Upper)
                    } else if after.starts_with("th") {
                        Some(Case::Lower)
                    } else {
                        None
                    };
                    if *p == P::Zone {
                        return Err(Error::Unsupported(format!(
                            "the time zone pattern {k} of to_char"
                        )));
                    }
                    out.push(Piece::Field { p: *p, fill, th });
                    rest = &after[if th.is_some() { 2 } else { 0 }..];
                }
                None => {
                    // FM before no pattern is dropped, as PostgreSQL
                    // drops it.
                    let ch = body.chars().next().unwrap_or(c);
                    if !(fill && body.is_empty()) {
                        text.push(ch);
                    }
                    rest = &body[ch.len_utf8().min(body.len())..];
                }
            }
        }
        if !text.is_empty() {
            out.push(Piece::Text(text));
        }
        Ok(Template(out))
    }

    /// The local time `local` (µs since 1970-01-01 00:00) written by the
    /// template; `None` out of the calendar's range.
    pub fn format(&self, local: i64) -> Option<String> {
        let date = crate::parse::value::date_from_days(i32::try_from(local.div_euclid(DAY)).ok()?)?;
        let us = local.rem_euclid(DAY);
        let mut out = String::new();
        for piece in &self.0 {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Field { p, fill, th } => field(&mut out, *p, *fill, *th, date, us),
            }
        }
        Some(out)
    }
}

fn cased(s: &str, case: Case) -> String {
    match case {
        Case::Upper => s.to_uppercase(),
        Case::Title => s.to_string(),
        Case::Lower => s.to_lowercase(),
    }
}

/// `n` at least `width` digits (a sign before), or as it is with `fill`.
fn number(n: i64, width: usize, fill: bool) -> String {
    if fill {
        return n.to_string();
    }
    if n < 0 {
        format!("-{:0width$}", -n, width = width)
    } else {
        format!("{n:0width$}")
    }
}

/// The English ordinal suffix of `n`.
fn ordinal(n: i64) -> &'static str {
    let n = n.abs();
    if (11..=13).contains(&(n % 100)) {
        return "th";
    }
    match n % 10 {
        1 => "st",
        2 => "nd",
        3 => "rd",
        _ => "th",
    }
}

fn field(out: &mut String, p: P, fill: bool, th: Option<Case>, date: NaiveDate, us: i64) {
    // PostgreSQL writes years before 1 as their BC number.
    let year = i64::from(date.year());
    let shown_year = if year <= 0 { 1 - year } else { year };
    let iso = date.iso_week();
    let iso_year = i64::from(iso.year());
    let hour = us / (3_600 * SEC);
    let hour12 = if hour % 12 == 0 { 12 } else { hour % 12 };
    let dow0 = i64::from(date.weekday().num_days_from_sunday());
    let doy = i64::from(date.ordinal());
    let month = i64::from(date.month());
    let pad_name = |s: String| {
        if fill { s } else { format!("{s:<9}") }
    };
    let (text, value): (String, Option<i64>) = match p {
        P::YearComma => (
            format!("{},{:03}", shown_year / 1000, shown_year % 1000),
            Some(shown_year),
        ),
        P::Year4 => (number(shown_year, 4, fill), Some(shown_year)),
        P::Year3 => (number(shown_year % 1000, 3, fill), Some(shown_year % 1000)),
        P::Year2 => (number(shown_year % 100, 2, fill), Some(shown_year % 100)),
        P::Year1 => (number(shown_year % 10, 1, fill), Some(shown_year % 10)),
        P::IsoYear4 => (number(iso_year, 4, fill), Some(iso_year)),
        P::IsoYear3 => (number(iso_year % 1000, 3, fill), Some(iso_year % 1000)),
        P::IsoYear2 => (number(iso_year % 100, 2, fill), Some(iso_year % 100)),
        P::IsoYear1 => (number(iso_year % 10, 1, fill), Some(iso_year % 10)),
        P::MonthName(c) => (pad_name(cased(MONTHS[month as usize - 1], c)), None),
        P::MonthAbbr(c) => (cased(&MONTHS[month as usize - 1][..3], c), None),
        P::DayName(c) => (pad_name(cased(DAYS[dow0 as usize], c)), None),
        P::DayAbbr(c) => (cased(&DAYS[dow0 as usize][..3], c), None),
        P::Roman(c) => {
            let r = cased(ROMAN[month as usize - 1], c);
            (if fill { r } else { format!("{r:<4}") }, None)
        }
        P::Mm => (number(month, 2, fill), Some(month)),
        P::Ddd => (number(doy, 3, fill), Some(doy)),
        P::Dd => {
            let d = i64::from(date.day());
            (number(d, 2, fill), Some(d))
        }
        P::D => (number(dow0 + 1, 1, fill), Some(dow0 + 1)),
        P::Iddd => {
            let n = i64::from(iso.week0()) * 7 + i64::from(date.weekday().number_from_monday());
            (number(n, 3, fill), Some(n))
        }
        P::Id => {
            let n = i64::from(date.weekday().number_from_monday());
            (number(n, 1, fill), Some(n))
        }
        P::Hh24 => (number(hour, 2, fill), Some(hour)),
        P::Hh12 => (number(hour12, 2, fill), Some(hour12)),
        P::Mi => {
            let m = us / (60 * SEC) % 60;
            (number(m, 2, fill), Some(m))
        }
        P::Ss => {
            let s = us / SEC % 60;
            (number(s, 2, fill), Some(s))
        }
        P::Ms => {
            let ms = us % SEC / 1_000;
            (number(ms, 3, fill), Some(ms))
        }
        P::Us => {
            let u = us % SEC;
            (number(u, 6, fill), Some(u))
        }
        P::SecondsOfDay => {
            let s = us / SEC;
            (s.to_string(), Some(s))
        }
        P::Meridiem(c, dots) => {
            let am = hour < 12;
            let t = match (am, dots) {
                (true, false) => "AM",
                (false, false) => "PM",
                (true, true) => "A.M.",
                (false, true) => "P.M.",
            };
            (cased(t, c), None)
        }
        P::Era(c, dots) => {
            let ad = year > 0;
            let t = match (ad, dots) {
                (true, false) => "AD",
                (false, false) => "BC",
                (true, true) => "A.D.",
                (false, true) => "B.C.",
            };
            (cased(t, c), None)
        }
        P::Ww => {
            let w = (doy - 1) / 7 + 1;
            (number(w, 2, fill), Some(w))
        }
        P::Iw => {
            let w = i64::from(iso.week());
            (number(w, 2, fill), Some(w))
        }
        P::W => {
            let w = (i64::from(date.day()) - 1) / 7 + 1;
            (number(w, 1, fill), Some(w))
        }
        P::Q => {
            let q = (month - 1) / 3 + 1;
            (number(q, 1, fill), Some(q))
        }
        P::Cc => {
            let c = if year > 0 {
                (year + 99) / 100
            } else {
                -((99 - (year - 1)) / 100)
            };
            (number(c, 2, fill), Some(c))
        }
        P::J => {
            let j = i64::from(date.to_epoch_days()) + 2_440_588;
            (j.to_string(), Some(j))
        }
        P::Zone => (String::new(), None),
    };
    out.push_str(&text);
    if let (Some(c), Some(v)) = (th, value) {
        out.push_str(&cased(ordinal(v), c));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32, micro: u32) -> i64 {
        NaiveDate::from_ymd_opt(y, mo, d)
            .unwrap()
            .and_hms_micro_opt(h, mi, s, micro)
            .unwrap()
            .and_utc()
            .timestamp_micros()
    }

    fn fmt(t: i64, f: &str) -> String {
        Template::parse(f).unwrap().format(t).unwrap()
    }

    #[test]
    fn writes_as_postgresql() {
        // Each checked with PostgreSQL 15.
        let t = at(2024, 3, 5, 14, 7, 9, 123_456);
        assert_eq!(
            fmt(t, "YYYY-MM-DD HH24:MI:SS.MS US"),
            "2024-03-05 14:07:09.123 123456"
        );
        let t = at(2024, 3, 5, 14, 7, 9, 0);
        assert_eq!(fmt(t, "Day, DD Month YYYY"), "Tuesday  , 05 March     2024");
        assert_eq!(
            fmt(t, "FMDay, FMDD FMMonth YYYY HH12:MI AM"),
            "Tuesday, 5 March 2024 02:07 PM"
        );
        assert_eq!(
            fmt(
                at(2024, 3, 5, 0, 0, 0, 0),
                "Mon dy DY Q WW IW IYYY DDD D ID J"
            ),
            "Mar tue TUE 1 10 10 2024 065 3 2 2460375"
        );
        assert_eq!(
            fmt(at(2024, 3, 5, 0, 7, 9, 0), "HH HH12 am pm A.M. p.m."),
            "12 12 am am A.M. a.m."
        );
        assert_eq!(
            fmt(t, "\"Year\" YYYY \"is\" YY, Y YYY"),
            "Year 2024 is 24, 4 024"
        );
        assert_eq!(
            fmt(t, "yyyy mm dd hh24 mi ss month MON"),
            "2024 03 05 14 07 09 march     MAR"
        );
        assert_eq!(fmt(t, "FMMM/FMDD/YYYY"), "3/5/2024");
        assert_eq!(fmt(t, "YYYYMMDD\\HH24"), "20240305\\14");
        assert_eq!(fmt(t, "SSSS CC"), "50829 21");
        assert_eq!(fmt(at(2024, 12, 30, 0, 0, 0, 0), "IYYY-IW-ID"), "2025-01-1");
        assert_eq!(fmt(t, "DDth FMDDth Mon"), "05th 5th Mar");
        assert_eq!(fmt(at(2024, 3, 22, 0, 0, 0, 0), "DDTH"), "22ND");
        assert_eq!(fmt(t, "RM FMrm Y,YYY"), "III  iii 2,024");
        assert!(Template::parse("YYYY TZ").is_err());
    }
}
