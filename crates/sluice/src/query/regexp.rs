//! PostgreSQL's regular-expression functions and operators: `~`, `~*`,
//! `!~`, `!~*`, `regexp_like`, `regexp_count`, `regexp_substr` and
//! `regexp_replace`, through the `regex` crate.
//!
//! PostgreSQL's regular expressions (Tcl's "advanced" ones) and Rust's
//! share their common syntax; as in PostgreSQL, `.` and a bracket
//! expression match a newline and `^`/`$` match only at the ends unless
//! the `n` flag is given. What Rust's lacks (back references, lookahead)
//! is refused with the regex crate's own message, never run otherwise.
//! Flags: `i` (case-insensitive), `c` (case-sensitive), `n` (newline-
//! sensitive), `s` (the default), `x` (expanded: whitespace and `#`
//! comments ignored), and for `regexp_replace` `g` (every match, not the
//! first). A pattern is compiled once per run of rows that share it.

use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Int64Builder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef};
use regex::{Regex, RegexBuilder};

use super::func::Func;
use crate::error::{Error, Result};

fn bad(state: &'static str, message: String) -> Error {
    Error::Argument { state, message }
}

/// A pattern compiled with its flags, kept while the next rows repeat
/// them.
#[derive(Default)]
struct Cache {
    key: Option<(String, String)>,
    re: Option<Regex>,
}

impl Cache {
    fn get(&mut self, f: Func, pattern: &str, flags: &str) -> Result<(&Regex, bool)> {
        let global = flags.contains('g');
        let hit = matches!(&self.key, Some((p, fl)) if p == pattern && fl == flags);
        if !hit {
            self.re = Some(compile(f, pattern, flags)?);
            self.key = Some((pattern.to_string(), flags.to_string()));
        }
        let re = self
            .re
            .as_ref()
            .ok_or_else(|| Error::Internal("a regular expression not compiled".into()))?;
        Ok((re, global))
    }
}

/// A pattern's escapes that PostgreSQL reads otherwise than Rust's regex
/// crate, written as the crate reads them: `\y`/`\Y` (word boundary or
/// not), `\m`/`\M` (the start or end of a word), `\Z` (the very end),
/// `\b` (a backspace, not a word boundary), `\B` (a backslash), `\e`
/// (escape), `\xhhh` (any number of hex digits). `\c` (control
/// characters) is refused rather than read otherwise.
fn translate(pattern: &str) -> Result<String> {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        match e {
            'y' => out.push_str("\\b"),
            'Y' => out.push_str("\\B"),
            'm' => out.push_str("\\b{start}"),
            'M' => out.push_str("\\b{end}"),
            'Z' => out.push_str("\\z"),
            'b' => out.push_str("\\x08"),
            'B' => out.push_str("\\\\"),
            'e' => out.push_str("\\x1B"),
            'x' => {
                let mut hex = String::new();
                while let Some(h) = chars.peek().copied().filter(char::is_ascii_hexdigit) {
                    hex.push(h);
                    chars.next();
                }
                if hex.is_empty() {
                    return Err(bad(
                        "2201B",
                        "invalid regular expression: invalid escape \\ sequence".into(),
                    ));
                }
                out.push_str(&format!("\\x{{{hex}}}"));
            }
            'c' => {
                return Err(bad(
                    "2201B",
                    "invalid regular expression: \\c (a control character) is not supported; write \\x and its code".into(),
                ));
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    Ok(out)
}

/// `pattern` as PostgreSQL reads it under `flags`.
fn compile(f: Func, pattern: &str, flags: &str) -> Result<Regex> {
    let pattern = translate(pattern)?;
    let mut b = RegexBuilder::new(&pattern);
    b.dot_matches_new_line(true);
    for c in flags.chars() {
        match c {
            'i' => {
                b.case_insensitive(true);
            }
            'c' => {
                b.case_insensitive(false);
            }
            'n' | 'm' => {
                b.dot_matches_new_line(false).multi_line(true);
            }
            's' => {
                b.dot_matches_new_line(true).multi_line(false);
            }
            'x' => {
                b.ignore_whitespace(true);
            }
            'g' if f == Func::RegexpReplace => {}
            'g' => {
                return Err(bad(
                    "22023",
                    format!(
                        "{}() does not support the \"global\" option",
                        f.name().to_lowercase()
                    ),
                ));
            }
            other => {
                return Err(bad(
                    "22023",
                    format!("invalid regular expression option: \"{other}\""),
                ));
            }
        }
    }
    b.build().map_err(|e| {
        let why = match e {
            regex::Error::Syntax(s) => s.lines().last().unwrap_or("").trim().to_string(),
            regex::Error::CompiledTooBig(n) => format!("the compiled pattern exceeds {n} bytes"),
            other => other.to_string(),
        };
        bad("2201B", format!("invalid regular expression: {why}"))
    })
}

/// PostgreSQL's replacement text as the regex crate's: `\1`–`\9` a
/// group, `\&` the whole match, `\\` a backslash; `$` itself.
fn replacement(r: &str) -> String {
    let mut out = String::with_capacity(r.len());
    let mut chars = r.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '$' => out.push_str("$$"),
            '\\' => match chars.peek().copied() {
                Some(d @ '1'..='9') => {
                    chars.next();
                    out.push_str(&format!("${{{d}}}"));
                }
                Some('&') => {
                    chars.next();
                    out.push_str("${0}");
                }
                Some('\\') => {
                    chars.next();
                    out.push('\\');
                }
                _ => out.push('\\'),
            },
            c => out.push(c),
        }
    }
    out
}

/// The byte offset of character `start` (1-based) of `s`, or its end.
fn offset(s: &str, start: i64, name: &str) -> Result<usize> {
    if start < 1 {
        return Err(bad(
            "22023",
            format!("invalid value for parameter \"start\": {start} (in {name})"),
        ));
    }
    Ok(s.char_indices()
        .nth((start - 1) as usize)
        .map(|(i, _)| i)
        .unwrap_or(s.len()))
}

/// `f` (one of the regexp functions) over `args`, each `rows` long and
/// of the types the binder gave: TEXT, and BIGINT for positions.
pub fn eval(f: Func, args: &[ArrayRef], rows: usize) -> Result<ArrayRef> {
    let text = |i: usize, r: usize| args[i].as_string::<i32>().value(r);
    let int = |i: usize, r: usize| args[i].as_primitive::<Int64Type>().value(r);
    let null_at = |r: usize| args.iter().any(|a| a.is_null(r));
    let name = f.name().to_lowercase();
    let mut cache = Cache::default();
    Ok(match f {
        Func::RegexpLike => {
            // (s, pattern [, flags])
            let mut b = BooleanBuilder::with_capacity(rows);
            for r in 0..rows {
                if null_at(r) {
                    b.append_null();
                    continue;
                }
                let flags = if args.len() > 2 { text(2, r) } else { "" };
                let (re, _) = cache.get(f, text(1, r), flags)?;
                b.append_value(re.is_match(text(0, r)));
            }
            Arc::new(b.finish())
        }
        Func::RegexpCount => {
            // (s, pattern [, start [, flags]])
            let mut b = Int64Builder::with_capacity(rows);
            for r in 0..rows {
                if null_at(r) {
                    b.append_null();
                    continue;
                }
                let s = text(0, r);
                let at = if args.len() > 2 {
                    offset(s, int(2, r), &name)?
                } else {
                    0
                };
                let flags = if args.len() > 3 { text(3, r) } else { "" };
                let (re, _) = cache.get(f, text(1, r), flags)?;
                b.append_value(re.find_iter(&s[at..]).count() as i64);
            }
            Arc::new(b.finish())
        }
        Func::RegexpSubstr => {
            // (s, pattern [, start [, n [, flags [, subexpr]]]])
            let mut b = StringBuilder::new();
            for r in 0..rows {
                if null_at(r) {
                    b.append_null();
                    continue;
                }
                let s = text(0, r);
                let at = if args.len() > 2 {
                    offset(s, int(2, r), &name)?
                } else {
                    0
                };
                let n = if args.len() > 3 { int(3, r) } else { 1 };
                if n < 1 {
                    return Err(bad(
                        "22023",
                        format!("invalid value for parameter \"n\": {n}"),
                    ));
                }
                let flags = if args.len() > 4 { text(4, r) } else { "" };
                let group = if args.len() > 5 { int(5, r) } else { 0 };
                if group < 0 {
                    return Err(bad(
                        "22023",
                        format!("invalid value for parameter \"subexpr\": {group}"),
                    ));
                }
                let (re, _) = cache.get(f, text(1, r), flags)?;
                let found = re
                    .captures_iter(&s[at..])
                    .nth((n - 1) as usize)
                    .and_then(|c| c.get(group as usize).map(|m| m.as_str().to_string()));
                b.append_option(found);
            }
            Arc::new(b.finish())
        }
        Func::RegexpReplace => {
            // (s, pattern, replacement [, flags])
            let mut b = StringBuilder::new();
            let mut last: Option<(String, String)> = None;
            for r in 0..rows {
                if null_at(r) {
                    b.append_null();
                    continue;
                }
                let flags = if args.len() > 3 { text(3, r) } else { "" };
                let (re, global) = cache.get(f, text(1, r), flags)?;
                let raw = text(2, r);
                let rep = match &last {
                    Some((from, to)) if from == raw => to.clone(),
                    _ => {
                        let to = replacement(raw);
                        last = Some((raw.to_string(), to.clone()));
                        to
                    }
                };
                let s = text(0, r);
                let out = if global {
                    re.replace_all(s, rep.as_str())
                } else {
                    re.replace(s, rep.as_str())
                };
                b.append_value(out);
            }
            Arc::new(b.finish())
        }
        other => return Err(Error::Internal(format!("{other} is not a regexp function"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replacements_read_as_postgresql_writes_them() {
        assert_eq!(replacement(r"\1-\2"), "${1}-${2}");
        assert_eq!(replacement(r"[\&]"), "[${0}]");
        assert_eq!(replacement(r"a\\b$1"), r"a\b$$1");
        assert_eq!(replacement(r"x\"), r"x\");
        let re = compile(Func::RegexpReplace, "(a)(b)", "g").unwrap();
        assert_eq!(
            re.replace_all("abab", replacement(r"\2\1$").as_str()),
            "ba$ba$"
        );
    }

    #[test]
    fn flags_and_newlines_as_postgresql() {
        let m = |p: &str, fl: &str, s: &str| compile(Func::RegexpLike, p, fl).unwrap().is_match(s);
        assert!(m("a.b", "", "a\nb"));
        assert!(!m("a.b", "n", "a\nb"));
        assert!(!m("^b", "", "a\nb"));
        assert!(m("^b", "n", "a\nb"));
        assert!(m("ABC", "i", "xabcx"));
        assert!(!m("ABC", "ic", "abc"));
        assert!(m("a b # comment", "x", "ab"));
        assert!(compile(Func::RegexpLike, "a", "g").is_err());
        assert!(compile(Func::RegexpLike, "a", "z").is_err());
        assert!(compile(Func::RegexpLike, "(a", "").is_err());
        assert!(compile(Func::RegexpLike, r"(a)\1", "").is_err());
        // PostgreSQL's escapes.
        assert!(m(r"\yfoo\y", "", "a foo b"));
        assert!(!m(r"\yfoo\y", "", "afoob"));
        assert!(m(r"\mfoo", "", "x foo"));
        assert!(!m(r"foo\M", "", "foox"));
        assert!(m(r"a\bb", "", "a\x08b"));
        assert!(!m(r"a\bb", "", "a b"));
        assert!(m(r"a\Bb", "", "a\\b"));
        assert!(m(r"\x41\x000042", "", "AB"));
        assert!(m(r"end\Z", "", "the end"));
        assert!(compile(Func::RegexpLike, r"\cA", "").is_err());
    }
}
