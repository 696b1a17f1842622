//! `to_char(number, format)` with PostgreSQL's numeric template patterns:
//! digits `9` (blank when not needed) and `0` (zero when not needed), the
//! decimal point `.`/`D`, group separators `,`/`G`, the signs `S`
//! (anchored to the number), `MI`, `PL`, `SG` and `PR` (angle brackets),
//! `L` (the currency symbol: a blank, as in the C locale), `V` (shift by
//! ten to the digits after it), `EEEE` (scientific notation), `RN` (roman
//! numerals), `TH` (ordinal suffix) and `FM` (no padding, no trailing
//! zeros); text in double quotes and other characters are copied.
//!
//! The rules are PostgreSQL's, quirks included, and are checked against
//! its output (`testdata/to_char_num.tsv`, 15,700 lines written by
//! PostgreSQL 15; the INT lines PostgreSQL wraps around are left out): a
//! number wider than the pattern is `#`s; a value below one prints no
//! leading zero (` .5` for `9.9`); `FM` keeps a bare decimal point (`12.`
//! for `FM99.9`); beside `RN` other patterns print blanks or nothing. INTEGER and DOUBLE in scientific notation
//! round as C's `printf` does (half to even on the binary value), BIGINT
//! and DECIMAL half away from zero; a DOUBLE keeps 15 significant digits.
//!
//! For: formatting numbers. Not for: times (see [`super::to_char`]).

use crate::error::{Error, Result};

fn syntax(message: &str) -> Error {
    Error::Argument {
        state: "42601",
        message: message.into(),
    }
}

fn out_of_range(what: &str) -> Error {
    Error::Argument {
        state: "22003",
        message: format!("{what} out of range"),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    /// `9` (`zero: false`) or `0`.
    Digit {
        zero: bool,
    },
    Point,
    Group,
    /// `S`: written where the number starts or ends, not here.
    Sign,
    Minus,
    Plus,
    SignBoth,
    Currency,
    Ordinal {
        upper: bool,
    },
    Roman {
        upper: bool,
    },
    Text(String),
    /// `V`, `PR`, `FM`, `EEEE`, `B`, `C`, `SP`: nothing at their place.
    Nothing,
}

/// The keywords, longest first where one begins another, in both cases
/// (`Fm` is text, as in PostgreSQL).
const KEYWORDS: [&str; 18] = [
    "EEEE", "FM", "MI", "PL", "PR", "RN", "SG", "SP", "TH", "S", "B", "C", "D", "G", "L", "V", "9",
    "0",
];

/// A parsed numeric template.
#[derive(Debug, Clone)]
pub struct NumFormat {
    toks: Vec<Tok>,
    fm: bool,
    /// Digits before the decimal point (those after `V` included), after.
    pre: usize,
    post: usize,
    /// Digits after `V`: the number is multiplied by ten to this.
    multi: u32,
    /// Index among the digit tokens of the first `0` before the point;
    /// the fraction digits up to the last `0` after it.
    zero_start: Option<usize>,
    zero_end: usize,
    eeee: bool,
    roman: bool,
    /// `S`, and whether it stands after every digit before the point.
    lsign: Option<bool>,
    bracket: bool,
    plus: bool,
    minus: bool,
    has_point: bool,
    v_seen: bool,
    /// The digits before the point when `S` was read.
    sign_pre: Option<usize>,
}

/// A number to format.
#[derive(Debug, Clone, Copy)]
pub enum Num {
    /// An INTEGER (formatted as C formats a double where that differs).
    Int32(i32),
    Int64(i64),
    /// A DECIMAL: the unscaled value and its scale.
    Decimal(i128, i8),
    Double(f64),
}

impl NumFormat {
    /// Reads a template as PostgreSQL's `to_char` of a number does.
    pub fn parse(fmt: &str) -> Result<NumFormat> {
        let mut f = NumFormat {
            toks: Vec::new(),
            fm: false,
            pre: 0,
            post: 0,
            multi: 0,
            zero_start: None,
            zero_end: 0,
            eeee: false,
            roman: false,
            lsign: None,
            bracket: false,
            plus: false,
            minus: false,
            has_point: false,
            v_seen: false,
            sign_pre: None,
        };
        let mut other_than_digits = false;
        let b = fmt.as_bytes();
        let mut i = 0;
        let last = || syntax("\"EEEE\" must be the last pattern used");
        while i < b.len() {
            let rest = &fmt[i..];
            let kw = KEYWORDS.iter().find(|k| {
                rest.starts_with(**k)
                    || (k.bytes().any(|c| c.is_ascii_alphabetic())
                        && rest.starts_with(&k.to_ascii_lowercase()))
            });
            if let Some(k) = kw {
                // After EEEE only text may come.
                if f.eeee {
                    return Err(if *k == "EEEE" {
                        syntax("cannot use \"EEEE\" twice")
                    } else {
                        last()
                    });
                }
                let upper = rest.starts_with(*k);
                i += k.len();
                if !matches!(*k, "9" | "0" | "D" | "EEEE") {
                    other_than_digits = true;
                }
                let tok = match *k {
                    "9" | "0" => {
                        if f.bracket {
                            return Err(syntax(&format!("\"{k}\" must be ahead of \"PR\"")));
                        }
                        let zero = *k == "0";
                        if zero && !f.has_point {
                            f.zero_start.get_or_insert(f.pre);
                        }
                        // A `9` after `V` is a digit of the shift (laid
                        // out after the others before the point); a `0`
                        // after it is an ordinary digit, as in PostgreSQL.
                        if f.v_seen && !zero {
                            f.multi += 1;
                        } else if f.has_point {
                            f.post += 1;
                        } else {
                            f.pre += 1;
                        }
                        if zero && f.has_point {
                            f.zero_end = f.post;
                        }
                        Tok::Digit { zero }
                    }
                    "D" => {
                        f.point()?;
                        Tok::Point
                    }
                    "G" => Tok::Group,
                    "S" => {
                        if f.lsign.is_some() {
                            return Err(syntax("cannot use \"S\" twice"));
                        }
                        if f.plus || f.minus || f.bracket {
                            return Err(syntax(
                                "cannot use \"S\" and \"PL\"/\"MI\"/\"SG\"/\"PR\" together",
                            ));
                        }
                        f.lsign = Some(false);
                        f.sign_pre = Some(f.pre);
                        Tok::Sign
                    }
                    "MI" | "PL" | "SG" => {
                        if f.lsign.is_some() {
                            return Err(syntax(
                                "cannot use \"S\" and \"PL\"/\"MI\"/\"SG\"/\"PR\" together",
                            ));
                        }
                        match *k {
                            "MI" => {
                                f.minus = true;
                                Tok::Minus
                            }
                            "PL" => {
                                f.plus = true;
                                Tok::Plus
                            }
                            _ => {
                                f.plus = true;
                                f.minus = true;
                                Tok::SignBoth
                            }
                        }
                    }
                    "PR" => {
                        if f.lsign.is_some() || f.plus || f.minus {
                            return Err(syntax(
                                "cannot use \"PR\" and \"S\"/\"PL\"/\"MI\"/\"SG\" together",
                            ));
                        }
                        f.bracket = true;
                        Tok::Nothing
                    }
                    "L" => Tok::Currency,
                    "TH" => Tok::Ordinal { upper },
                    "RN" => {
                        f.roman = true;
                        Tok::Roman { upper }
                    }
                    "FM" => {
                        f.fm = true;
                        Tok::Nothing
                    }
                    "V" => {
                        if f.has_point {
                            return Err(syntax("cannot use \"V\" and decimal point together"));
                        }
                        f.v_seen = true;
                        Tok::Nothing
                    }
                    "EEEE" => {
                        f.eeee = true;
                        Tok::Nothing
                    }
                    _ => Tok::Nothing,
                };
                f.toks.push(tok);
                continue;
            }
            // Not a keyword: `.` and `,`, quoted text, or one character.
            let c = rest.chars().next().unwrap_or(' ');
            if f.eeee && matches!(c, '.' | ',') {
                return Err(last());
            }
            match c {
                '.' => {
                    f.point()?;
                    f.toks.push(Tok::Point);
                    i += 1;
                }
                ',' => {
                    other_than_digits = true;
                    f.toks.push(Tok::Group);
                    i += 1;
                }
                '"' => {
                    let mut text = String::new();
                    let mut chars = rest[1..].char_indices();
                    let mut end = rest.len();
                    while let Some((j, ch)) = chars.next() {
                        match ch {
                            '"' => {
                                end = j + 2;
                                break;
                            }
                            '\\' => match chars.next() {
                                Some((_, '"')) => text.push('"'),
                                Some((_, other)) => {
                                    text.push('\\');
                                    text.push(other);
                                }
                                None => text.push('\\'),
                            },
                            other => text.push(other),
                        }
                    }
                    f.toks.push(Tok::Text(text));
                    i += end;
                }
                '\\' if rest[1..].starts_with('"') => {
                    f.toks.push(Tok::Text("\"".into()));
                    i += 2;
                }
                c => {
                    f.toks.push(Tok::Text(c.to_string()));
                    i += c.len_utf8();
                }
            }
        }
        if f.eeee && (other_than_digits || f.roman) {
            return Err(syntax("\"EEEE\" is incompatible with other formats"));
        }
        // `S` after every digit before the point is written after the
        // number, else before it.
        if let Some(at) = f.sign_pre {
            f.lsign = Some(at == f.pre + f.multi as usize);
        }
        Ok(f)
    }
}

/// A number as PostgreSQL's `to_char` reads it: its sign and its digits
/// as text (`12.50`, `0.5`, `NaN`, or `#`s where it does not fit).
struct Text {
    neg: bool,
    digits: Vec<u8>,
    /// The digits after the point it was written with (a DOUBLE keeps 15
    /// significant digits).
    post: usize,
}

/// Decimal digits of an unsigned value with a scale, as (integer part,
/// fraction); the integer part is at least "0".
fn split(abs: u128, scale: usize) -> (String, String) {
    let s = abs.to_string();
    if s.len() > scale {
        let (i, f) = s.split_at(s.len() - scale);
        (i.to_string(), f.to_string())
    } else {
        ("0".to_string(), format!("{s:0>scale$}"))
    }
}

/// Adds one to the last digit of `int` followed by `frac`, carrying.
fn increment(int: &mut String, frac: &mut String) {
    let mut all: Vec<u8> = int.bytes().chain(frac.bytes()).collect();
    let mut i = all.len();
    loop {
        if i == 0 {
            all.insert(0, b'1');
            break;
        }
        i -= 1;
        if all[i] == b'9' {
            all[i] = b'0';
        } else {
            all[i] += 1;
            break;
        }
    }
    let cut = all.len() - frac.len();
    *frac = String::from_utf8_lossy(&all[cut..]).into_owned();
    *int = String::from_utf8_lossy(&all[..cut]).into_owned();
}

/// An exact value shifted `multi` places left and rounded half away from
/// zero to `post` places: (integer part, fraction of `post` digits).
fn exact(abs: u128, scale: usize, multi: usize, post: usize) -> (String, String) {
    let (mut int, mut frac) = split(abs, scale);
    // Shift: move `multi` fraction digits into the integer part.
    for _ in 0..multi {
        if frac.is_empty() {
            int.push('0');
        } else {
            int.push(frac.remove(0));
        }
    }
    let int = int.trim_start_matches('0');
    let mut int = if int.is_empty() {
        "0".to_string()
    } else {
        int.to_string()
    };
    if frac.len() > post {
        let up = frac.as_bytes()[post] >= b'5';
        frac.truncate(post);
        if up {
            increment(&mut int, &mut frac);
        }
    }
    while frac.len() < post {
        frac.push('0');
    }
    (int, frac)
}

/// `v` in C's `%.{post}e` (`1.23e+03`).
fn c_exp(v: f64, post: usize) -> String {
    let s = format!("{:.*e}", post, v.abs());
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i64 = e.parse().unwrap_or(0);
    format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

/// An exact value in `%.{post}e` form, rounded half away from zero.
fn exact_exp(abs: u128, scale: usize, post: usize) -> String {
    let s = abs.to_string();
    let Some(first) = s.bytes().position(|c| c != b'0') else {
        let zeros = "0".repeat(post);
        return if post > 0 {
            format!("0.{zeros}e+00")
        } else {
            "0e+00".into()
        };
    };
    let exp = (s.len() - first) as i64 - 1 - scale as i64;
    let mut sig = s[first..].to_string();
    let mut empty = String::new();
    if sig.len() > post + 1 {
        let up = sig.as_bytes()[post + 1] >= b'5';
        sig.truncate(post + 1);
        if up {
            // A carry past the first digit gives `10.00e+01`, as
            // PostgreSQL writes it (the exponent is the unrounded
            // value's).
            increment(&mut sig, &mut empty);
        }
    }
    while sig.len() < post + 1 {
        sig.push('0');
    }
    let (d, rest) = sig.split_at(sig.len() - post);
    let point = if post > 0 { "." } else { "" };
    format!(
        "{d}{point}{rest}e{}{:02}",
        if exp < 0 { '-' } else { '+' },
        exp.abs()
    )
}

const ROMAN: [(u32, &str); 13] = [
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
];

fn roman(mut n: u32) -> String {
    let mut s = String::new();
    for (v, r) in ROMAN {
        while n >= v {
            s.push_str(r);
            n -= v;
        }
    }
    s
}

impl NumFormat {
    /// The number as text, `Err` where PostgreSQL fails (a shift by `V`
    /// or a roman numeral past the type's range).
    pub fn format(&self, n: Num) -> Result<String> {
        if self.roman {
            return self.roman_numeral(n);
        }
        if self.eeee {
            return Ok(self.scientific(n));
        }
        let t = self.text(n)?;
        self.emit(&t)
    }

    fn roman_numeral(&self, n: Num) -> Result<String> {
        let v: Option<i64> = match n {
            Num::Int32(i) => Some(i as i64),
            Num::Int64(i) => {
                if i32::try_from(i).is_err() {
                    return Err(out_of_range("integer"));
                }
                Some(i)
            }
            Num::Decimal(v, s) => {
                let (int, _) = exact(v.unsigned_abs(), s.max(0) as usize, 0, 0);
                let i = int
                    .parse::<i64>()
                    .ok()
                    .map(|i| if v < 0 { -i } else { i })
                    .filter(|i| i32::try_from(*i).is_ok())
                    .ok_or_else(|| out_of_range("integer"))?;
                Some(i)
            }
            // A DOUBLE past INTEGER (or not a number) is `#`s.
            Num::Double(d) => {
                let r = d.round_ties_even();
                (r >= i32::MIN as f64 && r <= i32::MAX as f64).then_some(r as i64)
            }
        };
        // The other patterns print as PostgreSQL prints them beside RN:
        // text as written, separators and signs as blanks (nothing with
        // FM), digits nothing.
        let mut out = String::new();
        for t in &self.toks {
            match t {
                Tok::Roman { upper } => {
                    let r = match v {
                        Some(v @ 1..=3999) => roman(v as u32),
                        _ => "#".repeat(15),
                    };
                    let r = if *upper { r } else { r.to_lowercase() };
                    if self.fm {
                        out.push_str(&r);
                    } else {
                        out.push_str(&format!("{r:>15}"));
                    }
                }
                Tok::Text(s) => out.push_str(s),
                Tok::Group | Tok::Minus | Tok::Plus if !self.fm => out.push(' '),
                Tok::Currency => out.push(' '),
                _ => {}
            }
        }
        Ok(out)
    }

    fn scientific(&self, n: Num) -> String {
        let post = self.post;
        let (neg, body) = match n {
            Num::Double(d) if d.is_nan() || d.is_infinite() => {
                let mut s = "#".repeat(self.pre + post + 5);
                s.insert(self.pre, '.');
                s.truncate(self.pre + post + 5);
                return format!(" {s}");
            }
            Num::Double(d) => (d.is_sign_negative(), c_exp(d, post)),
            Num::Int32(i) => (i < 0, c_exp(i as f64, post)),
            Num::Int64(i) => (i < 0, exact_exp(i.unsigned_abs() as u128, 0, post)),
            Num::Decimal(v, s) => (v < 0, exact_exp(v.unsigned_abs(), s.max(0) as usize, post)),
        };
        format!("{}{body}", if neg { '-' } else { ' ' })
    }

    /// The number as PostgreSQL writes it before laying it out.
    fn text(&self, n: Num) -> Result<Text> {
        let (multi, pre, mut post) = (self.multi as usize, self.pre_total(), self.post);
        let (neg, int, frac, with_point) = match n {
            Num::Int32(i) => self.shifted(i.into(), i32::MIN.into(), i32::MAX.into(), "integer")?,
            Num::Int64(i) => self.shifted(i.into(), i64::MIN.into(), i64::MAX.into(), "bigint")?,
            Num::Decimal(v, s) => {
                let (int, frac) = exact(v.unsigned_abs(), s.max(0) as usize, multi, post);
                let zero = int == "0" && frac.bytes().all(|c| c == b'0');
                (v < 0 && !zero, int, frac, post > 0)
            }
            Num::Double(d) => {
                let d = if multi > 0 {
                    d * 10f64.powi(multi as i32)
                } else {
                    d
                };
                // Not a number and infinities (a shift's overflow too) are
                // their names, in place of the digits (`#`s where the
                // name does not fit, with the fraction digits a DOUBLE
                // keeps beside a name that long).
                if !d.is_finite() {
                    let name = if d.is_nan() { "NaN" } else { "Infinity" };
                    post = post.min(15usize.saturating_sub(name.len()));
                    (d < 0.0, name.to_string(), String::new(), false)
                } else {
                    let pre_len = format!("{:.0}", d.abs()).len();
                    if pre_len >= 15 {
                        post = 0;
                    } else if pre_len + post > 15 {
                        post = 15 - pre_len;
                    }
                    let s = format!("{:.*}", post, d);
                    let (neg, s) = match s.strip_prefix('-') {
                        Some(s) => (true, s.to_string()),
                        None => (false, s),
                    };
                    let (int, frac) = match s.split_once('.') {
                        Some((i, f)) => (i.to_string(), f.to_string()),
                        None => (s, String::new()),
                    };
                    (neg, int, frac, post > 0)
                }
            }
        };
        if int.len() > pre {
            let mut hashes = "#".repeat(pre);
            hashes.push('.');
            hashes.push_str(&"#".repeat(post));
            return Ok(Text {
                neg,
                digits: hashes.into_bytes(),
                post,
            });
        }
        let mut digits = int.into_bytes();
        if with_point {
            digits.push(b'.');
            digits.extend_from_slice(frac.as_bytes());
        }
        Ok(Text { neg, digits, post })
    }

    /// An integer shifted by `V` (an error past its type's range), as
    /// (sign, digits, zero fraction, whether it has a point).
    fn shifted(
        &self,
        v: i128,
        min: i128,
        max: i128,
        ty: &str,
    ) -> Result<(bool, String, String, bool)> {
        let v = 10i128
            .checked_pow(self.multi)
            .and_then(|m| v.checked_mul(m))
            .filter(|v| (min..=max).contains(v))
            .ok_or_else(|| out_of_range(ty))?;
        let post = self.post;
        Ok((
            v < 0,
            v.unsigned_abs().to_string(),
            "0".repeat(post),
            post > 0,
        ))
    }

    /// A decimal point (`.` or `D`) read: one, and not beside `V`.
    fn point(&mut self) -> Result<()> {
        if self.has_point {
            return Err(syntax("multiple decimal points"));
        }
        if self.v_seen {
            return Err(syntax("cannot use \"V\" and decimal point together"));
        }
        self.has_point = true;
        Ok(())
    }

    /// The digits before the point: those of the pattern and those of
    /// the shift by `V`.
    fn pre_total(&self) -> usize {
        self.pre + self.multi as usize
    }

    /// Lays the number's text out by the template.
    fn emit(&self, t: &Text) -> Result<String> {
        let num = &t.digits;
        let int_len = num.iter().position(|c| *c == b'.').unwrap_or(num.len());
        let spaces = self.pre_total().saturating_sub(int_len);
        let point_at = num.iter().position(|c| *c == b'.');
        // With FM: the last fraction digit worth writing (the point when
        // none is).
        let last_relevant = if self.fm {
            point_at.map(|p| {
                let nonzero = (p + 1..num.len()).rev().find(|j| num[*j] != b'0');
                // A fraction digit up to the pattern's last `0` is always
                // written.
                nonzero.unwrap_or(p).max(p + self.zero_end)
            })
        } else {
            None
        };
        let bare_point = last_relevant.is_some() && last_relevant == point_at;
        let zero = self.zero_start.is_some();
        let mut bracket = self.bracket;
        let mut sign_wrote = if self.plus || self.minus {
            !self.plus || self.minus
        } else {
            if !t.neg && self.fm {
                bracket = false;
            }
            !t.neg && self.fm && self.lsign.is_none()
        };
        // The closing sign or bracket follows the last digit the number
        // has (a DOUBLE's may be fewer than the pattern's).
        let last_digit = (self.pre_total() + t.post + usize::from(self.has_point)).checked_sub(1);
        let mut out = String::new();
        let mut p = 0usize;
        let mut k = 0usize;
        let mut num_in = false;
        for tok in &self.toks {
            match tok {
                Tok::Digit { .. } | Tok::Point => {
                    // A separator right after a token that wrote no digit
                    // (the point, a blank) is a blank, as in PostgreSQL.
                    num_in = false;
                    let is_zero_tok = matches!(tok, Tok::Digit { zero: true });
                    let predec = !zero && p == 0 && num.first() == Some(&b'0') && t.post != 0;
                    let zero_here = self.zero_start.is_some_and(|z| z <= k);
                    if !sign_wrote
                        && (k >= spaces || self.zero_start == Some(k))
                        && (!predec || bare_point)
                    {
                        if self.lsign == Some(false) {
                            out.push(if t.neg { '-' } else { '+' });
                            sign_wrote = true;
                        } else if self.lsign.is_none() {
                            if bracket {
                                out.push(if t.neg { '<' } else { ' ' });
                            } else if t.neg {
                                out.push('-');
                            } else if !self.fm {
                                out.push(' ');
                            }
                            sign_wrote = true;
                        }
                    }
                    if k < spaces && !zero_here {
                        if !self.fm {
                            out.push(' ');
                        }
                    } else if k < spaces {
                        out.push('0');
                        num_in = true;
                    } else {
                        match num.get(p) {
                            Some(b'.') => out.push('.'),
                            _ if last_relevant.is_some_and(|l| p > l) && !is_zero_tok => {}
                            _ if predec => {
                                if !self.fm {
                                    out.push(' ');
                                } else if bare_point {
                                    out.push('0');
                                }
                            }
                            // The number's text ran out: PostgreSQL's
                            // output ends here.
                            None => return Ok(out),
                            Some(c) => {
                                out.push(*c as char);
                                num_in = true;
                            }
                        }
                        if p < num.len() {
                            p += 1;
                        }
                    }
                    if Some(k) == last_digit {
                        if sign_wrote && bracket {
                            out.push(if t.neg { '>' } else { ' ' });
                        } else if self.lsign == Some(true) {
                            out.push(if t.neg { '-' } else { '+' });
                        }
                    }
                    k += 1;
                }
                Tok::Group => {
                    if num_in {
                        out.push(',');
                    } else if !self.fm {
                        out.push(' ');
                    }
                }
                Tok::Minus => {
                    if t.neg {
                        out.push('-');
                    } else if !self.fm {
                        out.push(' ');
                    }
                }
                Tok::Plus => {
                    if !t.neg {
                        out.push('+');
                    } else if !self.fm {
                        out.push(' ');
                    }
                }
                Tok::SignBoth => out.push(if t.neg { '-' } else { '+' }),
                Tok::Currency => out.push(' '),
                Tok::Ordinal { upper } => {
                    let int = &num[..int_len];
                    if t.neg || self.has_point || int.first() == Some(&b'#') {
                        continue;
                    }
                    if !int.last().is_some_and(u8::is_ascii_digit) {
                        return Err(Error::Argument {
                            state: "22P02",
                            message: format!(
                                "\"{}\" is not a number",
                                String::from_utf8_lossy(int)
                            ),
                        });
                    }
                    let last = int.last().copied().unwrap_or(b'0');
                    let tens = int.len() >= 2 && int[int.len() - 2] == b'1';
                    let suffix = match (tens, last) {
                        (false, b'1') => "st",
                        (false, b'2') => "nd",
                        (false, b'3') => "rd",
                        _ => "th",
                    };
                    if *upper {
                        out.push_str(&suffix.to_uppercase());
                    } else {
                        out.push_str(suffix);
                    }
                }
                Tok::Text(s) => out.push_str(s),
                Tok::Sign | Tok::Roman { .. } | Tok::Nothing => {}
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(ty: &str, v: &str) -> Num {
        match ty {
            "int4" => Num::Int32(v.parse().expect("int4")),
            "int8" => Num::Int64(v.parse().expect("int8")),
            "float8" => Num::Double(match v {
                "NaN" => f64::NAN,
                "Infinity" => f64::INFINITY,
                "-Infinity" => f64::NEG_INFINITY,
                v => v.parse().expect("float8"),
            }),
            _ => {
                let (i, f) = v.split_once('.').unwrap_or((v, ""));
                let digits: i128 = format!("{i}{f}").parse().expect("numeric");
                Num::Decimal(digits, f.len() as i8)
            }
        }
    }

    /// Every line PostgreSQL 15 wrote for a grid of values and templates
    /// (type, value, template, its answer or its error) is answered the
    /// same.
    #[test]
    fn answers_as_postgresql_does() {
        let grid = include_str!("testdata/to_char_num.tsv");
        let mut wrong = Vec::new();
        let mut lines = 0;
        for line in grid.lines() {
            let cols: Vec<&str> = line.split('\t').collect();
            let [ty, v, fmt, want] = cols[..] else {
                panic!("a line of 4 columns: {line:?}");
            };
            lines += 1;
            let got = NumFormat::parse(fmt).and_then(|f| f.format(num(ty, v)));
            let ok = match (want.strip_prefix("ERROR: "), &got) {
                (Some(_), Err(_)) => true,
                (None, Ok(g)) => g == want,
                _ => false,
            };
            if !ok {
                wrong.push(format!("{ty} {v} {fmt:?}: want {want:?}, got {got:?}"));
            }
        }
        assert!(lines > 9000, "the grid has {lines} lines");
        assert!(
            wrong.is_empty(),
            "{} of {lines} differ:\n{}",
            wrong.len(),
            wrong[..wrong.len().min(40)].join("\n")
        );
    }

    /// PostgreSQL lets an INTEGER shifted by `V` wrap around (C's
    /// overflow, lines left out of the grid); sluice refuses it.
    #[test]
    fn a_shift_past_the_type_is_refused() {
        let f = NumFormat::parse("99V9").expect("template");
        assert!(matches!(
            f.format(Num::Int32(i32::MIN)),
            Err(Error::Argument { state: "22003", .. })
        ));
        assert!(matches!(
            f.format(Num::Int64(i64::MAX)),
            Err(Error::Argument { state: "22003", .. })
        ));
        assert_eq!(f.format(Num::Int32(12)).expect("fits"), " 120");
    }

    #[test]
    fn templates_postgresql_refuses_are_refused() {
        for (fmt, msg) in [
            ("9.9.9", "multiple decimal points"),
            ("9V9.9", "cannot use \"V\" and decimal point together"),
            ("S9S", "cannot use \"S\" twice"),
            (
                "9PRS",
                "cannot use \"S\" and \"PL\"/\"MI\"/\"SG\"/\"PR\" together",
            ),
            ("9PR9", "\"9\" must be ahead of \"PR\""),
            ("9.99EEEE9", "\"EEEE\" must be the last pattern used"),
            ("FM9.99EEEE", "\"EEEE\" is incompatible with other formats"),
            ("S9EEEE", "\"EEEE\" is incompatible with other formats"),
        ] {
            match NumFormat::parse(fmt) {
                Err(Error::Argument { state, message }) => {
                    assert_eq!((state, message.as_str()), ("42601", msg), "{fmt}")
                }
                other => panic!("{fmt}: {other:?}"),
            }
        }
    }
}
