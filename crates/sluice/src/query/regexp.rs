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
    /// The pattern reads the locale's classes (see [`translate`]).
    locale: bool,
}

impl Cache {
    /// The pattern compiled, and whether `g` was given; refused when it
    /// reads the locale's classes and `subject` is not ASCII.
    fn get(
        &mut self,
        f: Func,
        pattern: &str,
        flags: &str,
        subject: &str,
    ) -> Result<(&Regex, bool)> {
        let global = flags.contains('g');
        let hit = matches!(&self.key, Some((p, fl)) if p == pattern && fl == flags);
        if !hit {
            let (re, locale) = compile(f, pattern, flags)?;
            self.re = Some(re);
            self.locale = locale;
            self.key = Some((pattern.to_string(), flags.to_string()));
        }
        if self.locale && !subject.is_ascii() {
            return Err(refuse(
                "\\w, \\W, \\y, \\Y, \\m, \\M or [:alpha:], [:alnum:], [:upper:], [:lower:] (the database locale's letters and word boundaries) over text that is not ASCII",
            ));
        }
        let re = self
            .re
            .as_ref()
            .ok_or_else(|| Error::Internal("a regular expression not compiled".into()))?;
        Ok((re, global))
    }
}

/// Whether the regex crate reads `c` as special (escaped when it is a
/// literal; other punctuation is written as it is: `\<` is a word
/// boundary to the crate).
fn meta(c: char) -> bool {
    matches!(
        c,
        '\\' | '.'
            | '+'
            | '*'
            | '?'
            | '('
            | ')'
            | '|'
            | '['
            | ']'
            | '{'
            | '}'
            | '^'
            | '$'
            | '#'
            | '&'
            | '-'
            | '~'
    )
}

/// Refuses a pattern outside what sluice reads as PostgreSQL does.
fn refuse(what: impl Into<String>) -> Error {
    bad(
        "0A000",
        format!(
            "{} in a regular expression is not supported (sluice runs the part of PostgreSQL's regular expressions whose answers it gives exactly)",
            what.into()
        ),
    )
}

/// PostgreSQL's `\s` (glibc's `iswspace`: Unicode white space but the
/// no-break spaces and NEL).
const SPACE: &str = r"\s&&[^\x{A0}\x{85}\x{2007}\x{202F}]";

/// A pattern in the part of PostgreSQL's regular expressions (Tcl's
/// "advanced" ones) that sluice runs, written for the regex crate; any
/// other pattern is refused, never read otherwise. Both read literals,
/// `.`, `^`, `$`, groups, greedy quantifiers and bracket expressions
/// alike once PostgreSQL's escapes (`\y`, `\m`, `\M`, `\Z`, `\b` a
/// backspace, `\B` a backslash, `\xhhh`), classes (`\d` ASCII, `\s`
/// without no-break spaces, `[:alpha:]` Unicode) and literal bracket
/// characters (`&`, `~`, `[`, a `-` at an end) are spelled out. Which
/// match PostgreSQL picks (the longest at the leftmost start) and which
/// Rust picks (the first alternative that matches) differ only with
/// alternation, non-greedy and quantified groups: allowed where only
/// whether a match exists counts (`extent` false: `~`, regexp_like).
/// `newline`: the `n` flag (a negated bracket does not match a newline).
/// `locale`: set when the pattern uses what depends on the database's
/// locale for text that is not ASCII (`\w`, word boundaries, the letter
/// classes): such a pattern is refused on text that is not ASCII.
/// `fold`: case-insensitive, as PostgreSQL is: each letter of the pattern
/// matches itself, its lower and its upper case (one character each:
/// `ß` is not `SS`, `ſ` is not `s`), not Unicode's case folding.
fn translate(
    pattern: &str,
    extent: bool,
    newline: bool,
    fold: bool,
    locale: &mut bool,
) -> Result<String> {
    let cs: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut i = 0;
    // Whether the last item can take a quantifier, and whether it is a
    // group (a quantified group's submatches differ).
    let mut atom = false;
    let mut group_end = false;
    let mut depth = 0usize;
    while i < cs.len() {
        let c = cs[i];
        i += 1;
        match c {
            '\\' => {
                let Some(&e) = cs.get(i) else {
                    return Err(bad(
                        "2201B",
                        "invalid regular expression: invalid escape \\ sequence".into(),
                    ));
                };
                i += 1;
                match e {
                    'd' => out.push_str("[0-9]"),
                    'D' => out.push_str("[^0-9]"),
                    's' => out.push_str(&format!("[{SPACE}]")),
                    'S' => out.push_str(&format!("[^{SPACE}]")),
                    'w' => out.push_str(r"[A-Za-z0-9_]"),
                    'W' => out.push_str(r"[^A-Za-z0-9_]"),
                    'y' => out.push_str(r"\b"),
                    'Y' => out.push_str(r"\B"),
                    'm' => out.push_str(r"\b{start}"),
                    'M' => out.push_str(r"\b{end}"),
                    'A' => out.push_str(r"\A"),
                    'Z' => out.push_str(r"\z"),
                    'b' => out.push_str(r"\x08"),
                    'B' => out.push_str(r"\\"),
                    'e' => out.push_str(r"\x1B"),
                    'a' => out.push_str(r"\x07"),
                    't' => out.push_str(r"\t"),
                    'n' => out.push_str(r"\n"),
                    'r' => out.push_str(r"\r"),
                    'f' => out.push_str(r"\x0C"),
                    'v' => out.push_str(r"\x0B"),
                    'x' => {
                        let mut hex = String::new();
                        while let Some(&h) = cs.get(i).filter(|h| h.is_ascii_hexdigit()) {
                            hex.push(h);
                            i += 1;
                        }
                        match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                            Some(ch) if hex.len() <= 8 => {
                                if fold {
                                    out.push('[');
                                    for x in cases(ch) {
                                        out.push_str(&format!(r"\x{{{:X}}}", x as u32));
                                    }
                                    out.push(']');
                                } else {
                                    out.push_str(&format!(r"\x{{{hex}}}"));
                                }
                            }
                            _ => return Err(refuse(format!("\\x{hex}"))),
                        }
                    }
                    e if e.is_ascii_punctuation() && e != '<' && e != '>' => {
                        if meta(e) {
                            out.push('\\');
                        }
                        out.push(e);
                    }
                    e => return Err(refuse(format!("the escape \\{e}"))),
                }
                if matches!(e, 'w' | 'W' | 'y' | 'Y' | 'm' | 'M') {
                    *locale = true;
                }
                // Anchors and word boundaries take no quantifier.
                atom = !matches!(e, 'y' | 'Y' | 'm' | 'M' | 'A' | 'Z');
                group_end = false;
            }
            '[' => {
                out.push_str(&bracket(&cs, &mut i, newline, fold, locale)?);
                atom = true;
                group_end = false;
            }
            '(' => {
                if cs.get(i) == Some(&'?') {
                    if cs.get(i + 1) == Some(&':') {
                        i += 2;
                        out.push_str("(?:");
                    } else {
                        return Err(refuse("an embedded option or (?…) group"));
                    }
                } else {
                    out.push('(');
                }
                depth += 1;
                atom = false;
                group_end = false;
            }
            ')' => {
                if depth == 0 {
                    return Err(bad(
                        "2201B",
                        "invalid regular expression: parentheses () not balanced".into(),
                    ));
                }
                depth -= 1;
                out.push(')');
                atom = true;
                group_end = true;
            }
            '|' => {
                if extent {
                    return Err(refuse("alternation (|) where the match's extent counts"));
                }
                out.push('|');
                atom = false;
                group_end = false;
            }
            '*' | '+' | '?' | '{' => {
                if !atom {
                    return Err(bad(
                        "2201B",
                        "invalid regular expression: quantifier operand invalid".into(),
                    ));
                }
                if c == '{' {
                    let mut bound = String::new();
                    while let Some(&d) = cs.get(i).filter(|d| d.is_ascii_digit() || **d == ',') {
                        bound.push(d);
                        i += 1;
                    }
                    if cs.get(i) != Some(&'}') {
                        return Err(refuse("a { that is not a bound {m}, {m,} or {m,n}"));
                    }
                    i += 1;
                    let parts: Vec<&str> = bound.split(',').collect();
                    let num = |p: &str| p.parse::<u32>().ok().filter(|n| *n <= 255);
                    let ok = match parts.as_slice() {
                        [m] => num(m).is_some(),
                        [m, n] => {
                            num(m).is_some()
                                && (n.is_empty() || num(n).is_some_and(|n| Some(n) >= num(m)))
                        }
                        _ => false,
                    };
                    if !ok {
                        return Err(bad(
                            "2201B",
                            format!(
                                "invalid regular expression: invalid repetition count(s) {{{bound}}}"
                            ),
                        ));
                    }
                    out.push_str(&format!("{{{bound}}}"));
                } else {
                    out.push(c);
                }
                if group_end && extent {
                    return Err(refuse("a quantified group where the match's extent counts"));
                }
                if cs.get(i) == Some(&'?') {
                    if extent {
                        return Err(refuse(
                            "a non-greedy quantifier where the match's extent counts",
                        ));
                    }
                    i += 1;
                    out.push('?');
                }
                if matches!(cs.get(i), Some('*' | '+' | '?' | '{')) {
                    return Err(bad(
                        "2201B",
                        "invalid regular expression: quantifier operand invalid".into(),
                    ));
                }
                atom = false;
                group_end = false;
            }
            '.' => {
                out.push_str(if newline { r"[^\n]" } else { r"(?s:.)" });
                atom = true;
                group_end = false;
            }
            '^' | '$' => {
                out.push(c);
                atom = false;
                group_end = false;
            }
            '}' | ']' => {
                out.push('\\');
                out.push(c);
                atom = true;
                group_end = false;
            }
            c => {
                if fold && cases(c) != [c] {
                    out.push('[');
                    cases(c).into_iter().for_each(|x| out.push(x));
                    out.push(']');
                } else {
                    if meta(c) {
                        out.push('\\');
                    }
                    out.push(c);
                }
                atom = true;
                group_end = false;
            }
        }
    }
    if depth != 0 {
        return Err(bad(
            "2201B",
            "invalid regular expression: parentheses () not balanced".into(),
        ));
    }
    Ok(out)
}

/// A pattern that is alternatives of plain text (`Mr|Mrs|Ms`): the
/// alternatives, longest first.
fn literal_alternatives(pattern: &str) -> Option<Vec<&str>> {
    const META: &[char] = &[
        '\\', '.', '[', ']', '(', ')', '*', '+', '?', '{', '}', '^', '$',
    ];
    if !pattern.contains('|') || pattern.contains(META) {
        return None;
    }
    let mut words: Vec<&str> = pattern.split('|').collect();
    words.sort_by_key(|w| std::cmp::Reverse(w.chars().count()));
    Some(words)
}

/// What a letter matches case-insensitively in PostgreSQL (`allcases`):
/// its lower and its upper case as glibc's `towlower`/`towupper` give
/// them, one character each (`ß` is not `SS`, `ſ` is not `s`; a
/// titlecase letter such as `ǅ` is not even itself).
fn cases(c: char) -> Vec<char> {
    let single = |v: Vec<char>| if v.len() == 1 { Some(v[0]) } else { None };
    let lower = match c {
        '\u{130}' => 'i',
        _ => single(c.to_lowercase().collect()).unwrap_or(c),
    };
    let upper = match c as u32 {
        // Greek with iota subscript: Unicode's simple uppercase (the
        // titlecase letter), where the full mapping is two letters.
        0x1F80..=0x1F87 | 0x1F90..=0x1F97 | 0x1FA0..=0x1FA7 => {
            char::from_u32(c as u32 + 8).unwrap_or(c)
        }
        0x1FB3 => '\u{1FBC}',
        0x1FC3 => '\u{1FCC}',
        0x1FF3 => '\u{1FFC}',
        _ => single(c.to_uppercase().collect()).unwrap_or(c),
    };
    if lower == upper {
        vec![lower]
    } else {
        vec![lower, upper]
    }
}

/// A bracket expression from just past its `[`: the crate's class.
fn bracket(
    cs: &[char],
    i: &mut usize,
    newline: bool,
    fold: bool,
    locale: &mut bool,
) -> Result<String> {
    let mut out = String::from("[");
    if cs.get(*i) == Some(&'^') {
        *i += 1;
        out.push('^');
        if newline {
            out.push_str(r"\n");
        }
    }
    let start = *i;
    // The last item, when a plain character (a range's first end), and
    // where its spelling begins in `out`.
    let mut last: Option<char> = None;
    let mut last_at = out.len();
    loop {
        let Some(&c) = cs.get(*i) else {
            return Err(bad(
                "2201B",
                "invalid regular expression: brackets [] not balanced".into(),
            ));
        };
        *i += 1;
        // A ] first is a literal.
        if c == ']' && *i - 1 > start {
            break;
        }
        match c {
            '[' => match cs.get(*i) {
                Some(':') => {
                    let end = (*i + 1..cs.len().saturating_sub(1))
                        .find(|&k| cs[k] == ':' && cs[k + 1] == ']')
                        .ok_or_else(|| refuse("an unterminated [: class"))?;
                    let name: String = cs[*i + 1..end].iter().collect();
                    *i = end + 2;
                    if fold && matches!(name.as_str(), "upper" | "lower") {
                        return Err(refuse(format!("[:{name}:] with case-insensitive matching")));
                    }
                    // The letter classes as on ASCII text (beyond it they
                    // are the locale's: refused there, see `locale`).
                    if matches!(name.as_str(), "alpha" | "alnum" | "upper" | "lower") {
                        *locale = true;
                    }
                    out.push_str(match name.as_str() {
                        "alpha" => "A-Za-z",
                        "digit" => "0-9",
                        "alnum" => "A-Za-z0-9",
                        "upper" => "A-Z",
                        "lower" => "a-z",
                        "space" => r"[\s&&[^\x{A0}\x{85}\x{2007}\x{202F}]]",
                        "xdigit" => "0-9A-Fa-f",
                        "blank" => r" \t",
                        "cntrl" => r"\p{Cc}",
                        other => return Err(refuse(format!("the class [:{other}:]"))),
                    });
                    last = None;
                    continue;
                }
                Some('.' | '=') => return Err(refuse("a collating element [. .] or class [= =]")),
                _ => {
                    out.push_str(r"\[");
                    last = Some('[');
                    continue;
                }
            },
            '\\' => {
                let Some(&e) = cs.get(*i) else {
                    return Err(bad(
                        "2201B",
                        "invalid regular expression: brackets [] not balanced".into(),
                    ));
                };
                *i += 1;
                match e {
                    'd' => out.push_str("0-9"),
                    'w' => {
                        *locale = true;
                        out.push_str("A-Za-z0-9_");
                    }
                    't' => out.push_str(r"\t"),
                    'n' => out.push_str(r"\n"),
                    'r' => out.push_str(r"\r"),
                    'b' => out.push_str(r"\x08"),
                    e if e.is_ascii_punctuation() && e != '<' && e != '>' => {
                        if meta(e) {
                            out.push('\\');
                        }
                        out.push(e);
                    }
                    e => return Err(refuse(format!("the escape \\{e} in a bracket"))),
                }
                last = None;
                continue;
            }
            '-' => {
                // A range: between two letters or two digits of one kind.
                let prev = last;
                let next = cs.get(*i).copied();
                let first = *i - 1 == start;
                let end = next == Some(']');
                if first || end {
                    out.push_str(r"\-");
                    last = Some('-');
                } else {
                    let same = match (prev, next) {
                        (Some(a), Some(b)) => {
                            (a.is_ascii_lowercase() && b.is_ascii_lowercase())
                                || (a.is_ascii_uppercase() && b.is_ascii_uppercase())
                                || (a.is_ascii_digit() && b.is_ascii_digit())
                        }
                        _ => false,
                    };
                    if !same || cs.get(*i + 1) == Some(&'-') {
                        return Err(refuse(
                            "a range in a bracket other than between two letters or two digits",
                        ));
                    }
                    let (Some(a), Some(b)) = (prev, next) else {
                        return Err(refuse("a range without ends"));
                    };
                    if a > b {
                        return Err(bad(
                            "2201B",
                            "invalid regular expression: invalid character range".into(),
                        ));
                    }
                    *i += 1;
                    // The first end was written as a character (with its
                    // cases): written again as the range's.
                    out.truncate(last_at);
                    out.push(a);
                    out.push('-');
                    out.push(b);
                    if fold && a.is_ascii_alphabetic() {
                        let other = |x: char| {
                            if x.is_ascii_lowercase() {
                                x.to_ascii_uppercase()
                            } else {
                                x.to_ascii_lowercase()
                            }
                        };
                        out.push(other(a));
                        out.push('-');
                        out.push(other(b));
                    }
                    last = None;
                }
            }
            c => {
                last_at = out.len();
                if fold && cases(c) != [c] {
                    cases(c).into_iter().for_each(|x| out.push(x));
                } else {
                    if meta(c) {
                        out.push('\\');
                    }
                    out.push(c);
                }
                last = Some(c);
            }
        }
    }
    out.push(']');
    Ok(out)
}

/// `pattern` as PostgreSQL reads it under `flags` (see [`translate`]).
fn compile(f: Func, pattern: &str, flags: &str) -> Result<(Regex, bool)> {
    // The last of n and s decides, as in PostgreSQL.
    let newline = flags
        .chars()
        .rev()
        .find(|c| matches!(c, 'n' | 'm' | 's'))
        .is_some_and(|c| c != 's');
    // The last of i and c decides.
    let fold = flags
        .chars()
        .rev()
        .find(|c| matches!(c, 'i' | 'c'))
        .is_some_and(|c| c == 'i');
    let extent = f != Func::RegexpLike;
    let mut locale = false;
    let translated = match literal_alternatives(pattern) {
        // Plain words, longest first: the first that matches is then the
        // longest, PostgreSQL's pick.
        Some(words) if extent => translate(&words.join("|"), false, newline, fold, &mut locale)?,
        _ => translate(pattern, extent, newline, fold, &mut locale)?,
    };
    let mut b = RegexBuilder::new(&translated);
    b.multi_line(newline);
    for c in flags.chars() {
        match c {
            'i' | 'c' | 'n' | 'm' | 's' => {}
            'x' => return Err(refuse("the x flag (expanded syntax)")),
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
    let re = b.build().map_err(|e| {
        let why = match e {
            regex::Error::Syntax(s) => s.lines().last().unwrap_or("").trim().to_string(),
            regex::Error::CompiledTooBig(n) => format!("the compiled pattern exceeds {n} bytes"),
            other => other.to_string(),
        };
        bad("2201B", format!("invalid regular expression: {why}"))
    })?;
    Ok((re, locale))
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

/// PostgreSQL's successive matches of `re` in `s` from byte `at` (what
/// comes before `at` still counts for `^` and word boundaries): after an
/// empty match the search goes on a character later, after another at
/// its end, where an empty match may follow.
fn each_match<'a>(
    re: &'a Regex,
    s: &'a str,
    at: usize,
) -> impl Iterator<Item = regex::Captures<'a>> {
    let mut pos = Some(at);
    std::iter::from_fn(move || {
        let p = pos?;
        let c = re.captures_at(s, p)?;
        let m = c.get(0)?;
        pos = if m.end() > m.start() {
            Some(m.end())
        } else {
            s[m.end()..]
                .chars()
                .next()
                .map(|ch| m.end() + ch.len_utf8())
        };
        Some(c)
    })
}

/// The byte offset of character `start` (1-based) of `s`; `None` past
/// its end (one past the last character is its end).
fn offset(s: &str, start: i64, name: &str) -> Result<Option<usize>> {
    if start < 1 {
        return Err(bad(
            "22023",
            format!("invalid value for parameter \"start\": {start} (in {name})"),
        ));
    }
    let k = (start - 1) as usize;
    Ok(match s.char_indices().nth(k) {
        Some((i, _)) => Some(i),
        None if k == s.chars().count() => Some(s.len()),
        None => None,
    })
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
                let (re, _) = cache.get(f, text(1, r), flags, text(0, r))?;
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
                    Some(0)
                };
                let flags = if args.len() > 3 { text(3, r) } else { "" };
                let (re, _) = cache.get(f, text(1, r), flags, s)?;
                // A start past the end finds nothing, not an empty match.
                let n = at.map_or(0, |at| each_match(re, s, at).count());
                b.append_value(n as i64);
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
                    Some(0)
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
                let (re, _) = cache.get(f, text(1, r), flags, s)?;
                // Without groups, group 1 is the whole match
                // (PostgreSQL's); past the groups, none.
                let group = if re.captures_len() == 1 && group == 1 {
                    0
                } else {
                    group as usize
                };
                let found = at.and_then(|at| {
                    each_match(re, s, at)
                        .nth((n - 1) as usize)
                        .and_then(|c| c.get(group).map(|m| m.as_str().to_string()))
                });
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
                let (re, global) = cache.get(f, text(1, r), flags, text(0, r))?;
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
                let mut out = String::with_capacity(s.len());
                let mut copied = 0;
                for c in each_match(re, s, 0).take(if global { usize::MAX } else { 1 }) {
                    let Some(m) = c.get(0) else { continue };
                    out.push_str(&s[copied..m.start()]);
                    c.expand(&rep, &mut out);
                    copied = m.end();
                }
                out.push_str(&s[copied..]);
                b.append_value(&out);
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
        let re = compile(Func::RegexpReplace, "(a)(b)", "g").unwrap().0;
        assert_eq!(
            re.replace_all("abab", replacement(r"\2\1$").as_str()),
            "ba$ba$"
        );
    }

    #[test]
    fn flags_and_newlines_as_postgresql() {
        let m =
            |p: &str, fl: &str, s: &str| compile(Func::RegexpLike, p, fl).unwrap().0.is_match(s);
        assert!(m("a.b", "", "a\nb"));
        assert!(!m("a.b", "n", "a\nb"));
        assert!(!m("^b", "", "a\nb"));
        assert!(m("^b", "n", "a\nb"));
        assert!(m("ABC", "i", "xabcx"));
        assert!(!m("ABC", "ic", "abc"));
        assert!(compile(Func::RegexpLike, "a b", "x").is_err());
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

    #[test]
    fn what_postgresql_reads_otherwise_is_refused_or_spelled_out() {
        let t = |p: &str, extent: bool| translate(p, extent, false, false, &mut false);
        // Where the extent counts: alternation, non-greedy and quantified
        // groups pick other matches than PostgreSQL's.
        assert!(t("a|ab", true).is_err());
        assert!(t("a|ab", false).is_ok());
        assert!(t("a*?", true).is_err());
        assert!(t("(ab)*", true).is_err());
        assert!(t("(ab)c*", true).is_ok());
        // Rust's set operations and escapes are PostgreSQL's literals.
        let re = |p: &str| Regex::new(&t(p, true).unwrap()).unwrap();
        assert!(re("[a&&b]").is_match("&"));
        assert!(re("[a~~b]").is_match("~"));
        assert!(re("[a-]").is_match("-"));
        assert!(!re(r"\d").is_match("\u{663}"));
        assert!(!re(r"\s").is_match("\u{A0}"));
        // Letters beyond ASCII are the locale's: see `Cache::get`.
        let mut locale = false;
        assert!(translate("[[:alpha:]]", true, false, false, &mut locale).is_ok() && locale);
        assert!(re("a<b").is_match("a<b"));
        assert!(!re("<").is_match("ab"));
        // Refused: what the crate reads otherwise or lacks.
        for p in [
            r"a\<b",
            r"\p{L}",
            "(?i)a",
            "a**",
            "a{ 2}",
            "[[.a.]]",
            "[]-a]",
            r"[\d-z]",
            r"\z",
            "[[:punct:]]",
        ] {
            assert!(t(p, false).is_err(), "{p}");
        }
        // Case-insensitive as PostgreSQL: a letter, its lower and upper.
        let ci = |p: &str, s: &str| {
            Regex::new(&translate(p, true, false, true, &mut false).unwrap())
                .unwrap()
                .is_match(s)
        };
        assert!(ci("abc", "ABC"));
        assert!(ci("[a-c]", "B"));
        assert!(!ci("s", "\u{17F}"));
        assert!(ci("\u{130}", "i"));
        assert!(!ci("i", "\u{130}"));
        assert!(!ci("ss", "\u{DF}"));
        // A titlecase letter matches its lower and upper case only, as
        // PostgreSQL; Greek with iota subscript its simple uppercase.
        assert!(!ci("\u{1C5}", "\u{1C5}"));
        assert!(ci("\u{1C5}", "\u{1C4}"));
        assert!(ci("\u{1F80}", "\u{1F88}"));
        assert!(ci(r"\x41", "a"));
    }
}
