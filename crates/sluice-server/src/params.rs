//! `$1` parameters of prepared statements: their types, known at Parse
//! (clients ask for them with Describe before they bind any value), and
//! their values written into the SQL as literals at Execute.
//!
//! A parameter's type is, in order: the one the client declared in
//! Parse; the type of the column it is compared with, added to, or listed
//! in `IN (...)` against (`k = $1`, `$1 < price`, `k IN ($1, $2)`,
//! `d BETWEEN $1 AND $2`); the type of its cast (`$1::date`,
//! `CAST($1 AS BIGINT)`); BIGINT after LIMIT or OFFSET; else TEXT.

use pgwire::api::Type;
use sqlparser::dialect::GenericDialect;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::Failure;

/// The parameters of one statement.
#[derive(Debug, Clone, Default)]
pub struct Params {
    /// Byte ranges of each `$n` in the SQL, with `n - 1`.
    places: Vec<(usize, usize, usize)>,
    /// The type of each parameter, `$1` first.
    pub types: Vec<Type>,
}

/// Column types of the statement's table by name.
pub trait Columns {
    fn column_type(&self, table: Option<&str>, column: &str) -> Option<Type>;
}

impl Params {
    /// Finds and types the parameters of `sql`.
    pub fn of(
        sql: &str,
        declared: &[Option<Type>],
        columns: &dyn Columns,
    ) -> Result<Params, Failure> {
        let toks = Tokenizer::new(&GenericDialect {}, sql)
            .tokenize_with_location()
            .map_err(|e| Failure::syntax(e.to_string()))?;
        // Without whitespace, and without the SYMMETRIC or ASYMMETRIC of
        // `BETWEEN SYMMETRIC $1 AND $2` (its bounds are typed as BETWEEN's).
        let mut kept: Vec<TokenWithSpan> = Vec::with_capacity(toks.len());
        for t in toks {
            let after_between = kept.last().is_some_and(|p| is_keyword(&p.token, "BETWEEN"));
            if matches!(t.token, Token::Whitespace(_))
                || (after_between
                    && (is_keyword(&t.token, "SYMMETRIC") || is_keyword(&t.token, "ASYMMETRIC")))
            {
                continue;
            }
            kept.push(t);
        }
        let toks = kept;
        let offsets = LineStarts::new(sql);
        let table = table_of(&toks);
        let mut places = Vec::new();
        let mut inferred: Vec<Option<Type>> = Vec::new();
        for (i, t) in toks.iter().enumerate() {
            let Token::Placeholder(p) = &t.token else {
                continue;
            };
            let Some(n) = p.strip_prefix('$').and_then(|d| d.parse::<usize>().ok()) else {
                return Err(Failure::syntax(format!(
                    "parameter {p} is not supported; use $1, $2, ..."
                )));
            };
            if n == 0 || n > 65_535 {
                return Err(Failure::syntax(format!("there is no parameter {p}")));
            }
            let start = offsets.byte(sql, t.span.start.line, t.span.start.column);
            places.push((start, start + p.len(), n - 1));
            if inferred.len() < n {
                inferred.resize(n, None);
            }
            if inferred[n - 1].is_none() {
                inferred[n - 1] = context_type(&toks, i, table.as_deref(), columns);
            }
        }
        let count = inferred.len().max(declared.len());
        let types = (0..count)
            .map(|i| match declared.get(i).cloned().flatten() {
                Some(t) if t != Type::UNKNOWN => t,
                _ => inferred.get(i).cloned().flatten().unwrap_or(Type::TEXT),
            })
            .collect();
        Ok(Params { places, types })
    }

    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }

    /// How many `$n` the SQL holds (a parameter may appear twice).
    pub fn places(&self) -> usize {
        self.places.len()
    }

    /// `sql` with each `$n` replaced by `values[n - 1]` (SQL literals).
    pub fn substitute(&self, sql: &str, values: &[String]) -> String {
        let mut out =
            String::with_capacity(sql.len() + values.iter().map(String::len).sum::<usize>());
        let mut at = 0;
        for &(s, e, n) in &self.places {
            out.push_str(&sql[at..s]);
            out.push_str(&values[n]);
            at = e;
        }
        out.push_str(&sql[at..]);
        out
    }

    /// `sql` with each parameter a typed NULL (LIMIT/OFFSET ones 1): the
    /// statement planned for its result columns before values exist.
    pub fn placeholder_sql(&self, sql: &str) -> String {
        self.placeholders(sql, false)
    }

    /// [`Params::placeholder_sql`] with text parameters NULL too: for a
    /// statement that takes no empty string where a text parameter is
    /// (`$1::regclass`, a table name).
    pub fn null_placeholder_sql(&self, sql: &str) -> String {
        self.placeholders(sql, true)
    }

    fn placeholders(&self, sql: &str, text_null: bool) -> String {
        let values: Vec<String> = self
            .types
            .iter()
            .enumerate()
            .map(|(i, t)| {
                if self.after_limit(sql, i) {
                    "1".to_string()
                } else if sql_type_name(t) == "TEXT" && !text_null {
                    // A string literal: LIKE takes only literals.
                    "''".to_string()
                } else {
                    format!("CAST(NULL AS {})", sql_type_name(t))
                }
            })
            .collect();
        self.substitute(sql, &values)
    }

    fn after_limit(&self, sql: &str, n: usize) -> bool {
        self.places.iter().any(|&(s, _, i)| {
            i == n && {
                let before = sql[..s].trim_end().to_ascii_uppercase();
                before.ends_with("LIMIT") || before.ends_with("OFFSET")
            }
        })
    }
}

/// Line starts of a text, to turn the tokenizer's (line, column) places
/// into byte offsets.
struct LineStarts(Vec<usize>);

impl LineStarts {
    fn new(s: &str) -> LineStarts {
        let mut v = vec![0];
        v.extend(s.match_indices('\n').map(|(i, _)| i + 1));
        LineStarts(v)
    }

    /// Columns count characters, from 1.
    fn byte(&self, s: &str, line: u64, column: u64) -> usize {
        let start = self
            .0
            .get(line.saturating_sub(1) as usize)
            .copied()
            .unwrap_or(0);
        s[start..]
            .char_indices()
            .nth(column.saturating_sub(1) as usize)
            .map_or(s.len(), |(i, _)| start + i)
    }
}

/// The table after the first FROM.
fn table_of(toks: &[TokenWithSpan]) -> Option<String> {
    let i = toks.iter().position(|t| is_keyword(&t.token, "FROM"))?;
    let mut name = None;
    let mut j = i + 1;
    // A qualified name: its last part.
    while let Some(Token::Word(w)) = toks.get(j).map(|t| &t.token) {
        name = Some(w.value.clone());
        if toks.get(j + 1).map(|t| &t.token) == Some(&Token::Period) {
            j += 2;
        } else {
            break;
        }
    }
    name
}

fn is_keyword(t: &Token, k: &str) -> bool {
    matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(k))
}

fn is_operator(t: &Token) -> bool {
    matches!(
        t,
        Token::Eq
            | Token::DoubleEq
            | Token::Neq
            | Token::Lt
            | Token::Gt
            | Token::LtEq
            | Token::GtEq
            | Token::Plus
            | Token::Minus
            | Token::Mul
            | Token::Div
            | Token::Mod
    )
}

/// A column reference ending at `i` (`c`, `t.c`): its name.
fn column_before(toks: &[TokenWithSpan], i: usize) -> Option<String> {
    match &toks.get(i)?.token {
        Token::Word(w) if w.quote_style.is_some() || !is_reserved(&w.value) => {
            Some(w.value.clone())
        }
        _ => None,
    }
}

/// A column reference starting at `i`: its name (the last part).
fn column_after(toks: &[TokenWithSpan], mut i: usize) -> Option<String> {
    let mut name = None;
    while let Some(Token::Word(w)) = toks.get(i).map(|t| &t.token) {
        if w.quote_style.is_none() && is_reserved(&w.value) {
            return None;
        }
        name = Some(w.value.clone());
        if toks.get(i + 1).map(|t| &t.token) == Some(&Token::Period) {
            i += 2;
        } else {
            break;
        }
    }
    name
}

fn is_reserved(w: &str) -> bool {
    const WORDS: &[&str] = &[
        "SELECT",
        "FROM",
        "WHERE",
        "AND",
        "OR",
        "NOT",
        "IN",
        "BETWEEN",
        "LIKE",
        "ILIKE",
        "IS",
        "NULL",
        "LIMIT",
        "OFFSET",
        "CAST",
        "AS",
        "CASE",
        "WHEN",
        "THEN",
        "ELSE",
        "END",
        "ORDER",
        "GROUP",
        "BY",
        "HAVING",
        "TRUE",
        "FALSE",
        "DATE",
        "TIMESTAMP",
        "TIMESTAMPTZ",
        "INTERVAL",
    ];
    WORDS.iter().any(|k| k.eq_ignore_ascii_case(w))
}

/// The type the tokens around the placeholder at `i` give it.
fn context_type(
    toks: &[TokenWithSpan],
    i: usize,
    table: Option<&str>,
    columns: &dyn Columns,
) -> Option<Type> {
    let tok = |j: usize| toks.get(j).map(|t| &t.token);
    let col = |name: Option<String>| name.and_then(|c| columns.column_type(table, &c));
    // $1::type
    if tok(i + 1) == Some(&Token::DoubleColon) {
        return type_words(toks, i + 2);
    }
    // CAST($1 AS type)
    if i >= 2
        && tok(i - 1) == Some(&Token::LParen)
        && tok(i - 2).is_some_and(|t| is_keyword(t, "CAST"))
        && tok(i + 1).is_some_and(|t| is_keyword(t, "AS"))
    {
        return type_words(toks, i + 2);
    }
    if i >= 1 {
        let prev = tok(i - 1)?;
        if is_keyword(prev, "LIMIT") || is_keyword(prev, "OFFSET") {
            return Some(Type::INT8);
        }
        if is_keyword(prev, "LIKE") || is_keyword(prev, "ILIKE") {
            return Some(Type::TEXT);
        }
        // col <op> $1
        if is_operator(prev)
            && let Some(t) = col(i.checked_sub(2).and_then(|j| column_before(toks, j)))
        {
            return Some(t);
        }
        // col [NOT] BETWEEN $1 [AND $2]
        let before_between = |b: usize| {
            let j = b.checked_sub(1)?;
            if tok(j).is_some_and(|t| is_keyword(t, "NOT")) {
                column_before(toks, j.checked_sub(1)?)
            } else {
                column_before(toks, j)
            }
        };
        if is_keyword(prev, "BETWEEN") {
            return col(before_between(i - 1));
        }
        if is_keyword(prev, "AND") && i >= 4 && tok(i - 3).is_some_and(|t| is_keyword(t, "BETWEEN"))
        {
            return col(before_between(i - 3));
        }
        // col IN (..., $1, ...)
        let mut j = i - 1;
        while j > 0
            && matches!(
                tok(j),
                Some(
                    Token::Comma
                        | Token::Placeholder(_)
                        | Token::Number(..)
                        | Token::SingleQuotedString(_)
                )
            )
        {
            j -= 1;
        }
        if tok(j) == Some(&Token::LParen)
            && j >= 2
            && tok(j - 1).is_some_and(|t| is_keyword(t, "IN"))
        {
            let k = if tok(j - 2).is_some_and(|t| is_keyword(t, "NOT")) {
                j.checked_sub(3)?
            } else {
                j - 2
            };
            return col(column_before(toks, k));
        }
    }
    // $1 <op> col
    if tok(i + 1).is_some_and(is_operator) {
        return col(column_after(toks, i + 2));
    }
    None
}

/// A type written at `i` (`BIGINT`, `DOUBLE PRECISION`, `numeric(10,2)`).
fn type_words(toks: &[TokenWithSpan], i: usize) -> Option<Type> {
    let Token::Word(w) = &toks.get(i)?.token else {
        return None;
    };
    let t = match w.value.to_ascii_lowercase().as_str() {
        "int" | "integer" | "int4" => Type::INT4,
        "smallint" | "int2" => Type::INT2,
        "bigint" | "int8" => Type::INT8,
        "double" | "float8" | "float" | "real" | "float4" => Type::FLOAT8,
        "numeric" | "decimal" => Type::NUMERIC,
        "date" => Type::DATE,
        // `timestamp with time zone` is an instant; `without` is not.
        "timestamp" => {
            let word = |k: usize, w: &str| toks.get(i + k).is_some_and(|t| is_keyword(&t.token, w));
            let with = (1..6).find(|&k| word(k, "WITH") || word(k, "WITHOUT"));
            match with {
                Some(k) if word(k, "WITH") && word(k + 1, "TIME") && word(k + 2, "ZONE") => {
                    Type::TIMESTAMPTZ
                }
                _ => Type::TIMESTAMP,
            }
        }
        "timestamptz" => Type::TIMESTAMPTZ,
        // `time with time zone` is no type of sluice's.
        "time"
            if !toks
                .get(i + 1)
                .is_some_and(|t| is_keyword(&t.token, "WITH")) =>
        {
            Type::TIME
        }
        "interval" => Type::INTERVAL,
        "bool" | "boolean" => Type::BOOL,
        "text" | "varchar" | "char" | "character" | "string" => Type::TEXT,
        _ => return None,
    };
    Some(t)
}

/// The SQL name sluice's CAST takes for a PostgreSQL type.
fn sql_type_name(t: &Type) -> &'static str {
    match *t {
        Type::INT2 | Type::INT4 => "INT",
        Type::INT8 | Type::OID => "BIGINT",
        Type::FLOAT4 | Type::FLOAT8 => "DOUBLE",
        Type::NUMERIC => "DECIMAL(38, 10)",
        Type::DATE => "DATE",
        Type::TIMESTAMP => "TIMESTAMP",
        Type::TIMESTAMPTZ => "TIMESTAMPTZ",
        Type::TIME => "TIME",
        Type::BOOL => "BOOLEAN",
        Type::INTERVAL => "INTERVAL",
        _ => "TEXT",
    }
}

/// A parameter value, decoded from its Bind format, as a SQL literal of
/// its type.
pub fn literal(ty: &Type, value: Option<&[u8]>, binary: bool, n: usize) -> Result<String, Failure> {
    let Some(v) = value else {
        return Ok(format!("CAST(NULL AS {})", sql_type_name(ty)));
    };
    let bad = |what: &str| {
        Failure::new(
            if binary { "22P03" } else { "22P02" },
            format!(
                "invalid {what} for parameter ${} of type {}",
                n + 1,
                ty.name()
            ),
        )
    };
    // Text holds no NUL (PostgreSQL's text cannot; and an error message
    // quoting one would be cut short on the wire).
    let text = |v: &[u8]| {
        if v.contains(&0) {
            return Err(bad("UTF-8 (a NUL byte)"));
        }
        std::str::from_utf8(v)
            .map(str::to_string)
            .map_err(|_| bad("UTF-8"))
    };
    let int = |s: &str| -> Result<String, Failure> {
        let i: i64 = s
            .trim()
            .parse()
            .map_err(|_| bad(&format!("input syntax {s:?}")))?;
        Ok(if i < 0 {
            format!("({i})")
        } else {
            i.to_string()
        })
    };
    let fixed = |len: usize| -> Result<&[u8], Failure> {
        if v.len() == len {
            Ok(v)
        } else {
            Err(bad("binary data length"))
        }
    };
    match *ty {
        Type::INT2 | Type::INT4 | Type::INT8 | Type::OID => {
            if binary {
                // Exactly the type's width, as PostgreSQL's int2recv,
                // int4recv and int8recv take them.
                let i = match (ty, v.len()) {
                    (&Type::INT2, 2) => i16::from_be_bytes([v[0], v[1]]) as i64,
                    (&Type::INT4 | &Type::OID, 4) => {
                        i32::from_be_bytes(v.try_into().map_err(|_| bad("binary data"))?) as i64
                    }
                    (&Type::INT8, 8) => {
                        i64::from_be_bytes(v.try_into().map_err(|_| bad("binary data"))?)
                    }
                    _ => return Err(bad("binary data length")),
                };
                int(&i.to_string())
            } else {
                int(&text(v)?)
            }
            // An INT2/INT4 parameter is an INT, as Describe said it was
            // (a bare integer literal is a BIGINT): `SELECT $1` answers
            // with the type its description promised.
            .map(|lit| {
                if matches!(*ty, Type::INT2 | Type::INT4) {
                    format!("CAST({lit} AS INT)")
                } else {
                    lit
                }
            })
        }
        Type::FLOAT4 | Type::FLOAT8 => {
            let f = if binary {
                if *ty == Type::FLOAT4 {
                    f32::from_be_bytes(fixed(4)?.try_into().map_err(|_| bad("binary data"))?) as f64
                } else {
                    f64::from_be_bytes(fixed(8)?.try_into().map_err(|_| bad("binary data"))?)
                }
            } else {
                let s = text(v)?;
                match s.trim().to_ascii_lowercase().as_str() {
                    "nan" => f64::NAN,
                    "infinity" | "inf" => f64::INFINITY,
                    "-infinity" | "-inf" => f64::NEG_INFINITY,
                    t => t.parse().map_err(|_| bad(&format!("input syntax {s:?}")))?,
                }
            };
            Ok(format!(
                "CAST('{}' AS DOUBLE)",
                crate::encode::float_text(f)
            ))
        }
        Type::NUMERIC => {
            let s = if binary {
                numeric_from_binary(v).ok_or_else(|| bad("binary numeric"))?
            } else {
                let t = text(v)?.trim().to_string();
                // An exponent (`1E-7`, how psycopg sends
                // Decimal('0.0000001')) written out as plain digits.
                plain_decimal(&t).ok_or_else(|| bad(&format!("input syntax {t:?}")))?
            };
            let digits = s.strip_prefix('-').unwrap_or(&s);
            let ok = !digits.is_empty()
                && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
                && digits.matches('.').count() <= 1
                && digits != ".";
            if !ok {
                return Err(bad(&format!("input syntax {s:?}")));
            }
            Ok(if s.starts_with('-') {
                format!("({s})")
            } else {
                s
            })
        }
        Type::BOOL => {
            let b = if binary {
                fixed(1)?[0] != 0
            } else {
                match text(v)?.trim().to_ascii_lowercase().as_str() {
                    "t" | "true" | "1" | "yes" | "y" | "on" => true,
                    "f" | "false" | "0" | "no" | "n" | "off" => false,
                    s => return Err(bad(&format!("input syntax {s:?}"))),
                }
            };
            Ok(if b { "TRUE" } else { "FALSE" }.into())
        }
        Type::DATE => {
            let s = if binary {
                let d = i32::from_be_bytes(fixed(4)?.try_into().map_err(|_| bad("binary data"))?);
                crate::encode::date_text(d.saturating_add(10_957))
            } else {
                text(v)?
            };
            Ok(format!("DATE {}", quote(&s)))
        }
        Type::TIMESTAMP => {
            let s = if binary {
                let t = i64::from_be_bytes(fixed(8)?.try_into().map_err(|_| bad("binary data"))?);
                crate::encode::timestamp_text(t.saturating_add(946_684_800_000_000))
            } else {
                text(v)?
            };
            Ok(format!("TIMESTAMP {}", quote(&s)))
        }
        // Binary: microseconds since midnight.
        Type::TIME => {
            let s = if binary {
                let t = i64::from_be_bytes(fixed(8)?.try_into().map_err(|_| bad("binary data"))?);
                if !(0..=86_400_000_000).contains(&t) {
                    return Err(bad("binary time out of range"));
                }
                sluice::batch::format_time(t)
            } else {
                text(v)?
            };
            Ok(format!("TIME {}", quote(&s)))
        }
        // An instant: binary is UTC (written with its offset); text keeps
        // the offset it has, or is read in the session's zone.
        Type::TIMESTAMPTZ => {
            let s = if binary {
                let t = i64::from_be_bytes(fixed(8)?.try_into().map_err(|_| bad("binary data"))?);
                sluice::batch::format_timestamptz(t.saturating_add(946_684_800_000_000), 0)
            } else {
                text(v)?
            };
            Ok(format!("TIMESTAMPTZ {}", quote(&s)))
        }
        // Binary: microseconds, days, months.
        Type::INTERVAL => {
            let s = if binary {
                let b = fixed(16)?;
                let num = |r: std::ops::Range<usize>| b[r].to_vec();
                let micros =
                    i64::from_be_bytes(num(0..8).try_into().map_err(|_| bad("binary data"))?);
                let days =
                    i32::from_be_bytes(num(8..12).try_into().map_err(|_| bad("binary data"))?);
                let months =
                    i32::from_be_bytes(num(12..16).try_into().map_err(|_| bad("binary data"))?);
                sluice::query::interval::format(sluice::query::interval::Interval {
                    months,
                    days,
                    micros,
                })
            } else {
                text(v)?
            };
            Ok(format!("INTERVAL {}", quote(&s)))
        }
        _ => Ok(quote(&text(v)?)),
    }
}

/// A decimal number's text without an exponent: `1E-7` → `0.0000001`,
/// `-1.5e3` → `-1500`, `+2` → `2`; text without an exponent as it is
/// (checked by the caller). `None` for an exponent that is not a number
/// or would write more than 1,000 digits.
fn plain_decimal(s: &str) -> Option<String> {
    let s = s.strip_prefix('+').unwrap_or(s);
    let Some(at) = s.find(['e', 'E']) else {
        return Some(s.to_string());
    };
    let (mant, exp) = (&s[..at], &s[at + 1..]);
    let exp: i64 = exp.strip_prefix('+').unwrap_or(exp).parse().ok()?;
    if exp.abs() > 1000 {
        return None;
    }
    let (sign, mant) = match mant.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mant.strip_prefix('+').unwrap_or(mant)),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.is_empty() && frac.is_empty()
        || !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let digits = format!("{int}{frac}");
    // The decimal point's place in `digits` after the exponent.
    let point = int.len() as i64 + exp;
    let (whole, fraction) = if point <= 0 {
        (
            "0".to_string(),
            format!("{}{digits}", "0".repeat((-point) as usize)),
        )
    } else if point as usize >= digits.len() {
        (
            format!("{digits}{}", "0".repeat(point as usize - digits.len())),
            String::new(),
        )
    } else {
        (
            digits[..point as usize].to_string(),
            digits[point as usize..].to_string(),
        )
    };
    let whole = whole.trim_start_matches('0');
    let whole = if whole.is_empty() { "0" } else { whole };
    Some(if fraction.is_empty() {
        format!("{sign}{whole}")
    } else {
        format!("{sign}{whole}.{fraction}")
    })
}

/// A SQL string literal.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// NUMERIC's binary form as decimal text.
fn numeric_from_binary(v: &[u8]) -> Option<String> {
    let u16_at = |i: usize| Some(u16::from_be_bytes([*v.get(i)?, *v.get(i + 1)?]));
    let n = u16_at(0)? as usize;
    let weight = u16_at(2)? as i16 as i64;
    let sign = u16_at(4)?;
    let dscale = u16_at(6)? as usize;
    if sign == 0xC000 {
        return None; // NaN
    }
    let groups: Vec<u16> = (0..n).map(|i| u16_at(8 + 2 * i)).collect::<Option<_>>()?;
    if groups.iter().any(|g| *g > 9999) || dscale > 1000 {
        return None;
    }
    let mut int = String::new();
    for w in (0..=weight.max(-1)).rev() {
        if w < 0 {
            break;
        }
        let idx = weight - w;
        let g = groups.get(idx as usize).copied().unwrap_or(0);
        if int.is_empty() {
            int = g.to_string();
        } else {
            int.push_str(&format!("{g:04}"));
        }
    }
    if int.is_empty() {
        int.push('0');
    }
    let mut frac = String::new();
    let mut w = -1i64;
    while frac.len() < dscale {
        let idx = weight - w;
        let g = if idx >= 0 {
            groups.get(idx as usize).copied().unwrap_or(0)
        } else {
            0
        };
        frac.push_str(&format!("{g:04}"));
        w -= 1;
    }
    frac.truncate(dscale);
    let sign = if sign == 0x4000 { "-" } else { "" };
    Some(if dscale == 0 {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct T;
    impl Columns for T {
        fn column_type(&self, table: Option<&str>, column: &str) -> Option<Type> {
            assert_eq!(table, Some("t"));
            match column {
                "k" => Some(Type::INT8),
                "d" => Some(Type::DATE),
                "p" => Some(Type::NUMERIC),
                "s" => Some(Type::TEXT),
                _ => None,
            }
        }
    }

    fn types(sql: &str) -> Vec<Type> {
        Params::of(sql, &[], &T).unwrap().types
    }

    #[test]
    fn types_come_from_the_context() {
        assert_eq!(types("SELECT * FROM t WHERE k = $1"), [Type::INT8]);
        assert_eq!(types("SELECT * FROM t WHERE $1 < t.k"), [Type::INT8]);
        assert_eq!(
            types("SELECT * FROM t WHERE k IN ($1, $2, 3)"),
            [Type::INT8, Type::INT8]
        );
        assert_eq!(
            types("SELECT * FROM t WHERE d BETWEEN $1 AND $2"),
            [Type::DATE, Type::DATE]
        );
        assert_eq!(
            types(
                "SELECT * FROM t WHERE d NOT BETWEEN SYMMETRIC $1 AND $2 OR k BETWEEN asymmetric $3 AND 9"
            ),
            [Type::DATE, Type::DATE, Type::INT8]
        );
        assert_eq!(
            types("SELECT * FROM t WHERE s LIKE $1 LIMIT $2"),
            [Type::TEXT, Type::INT8]
        );
        assert_eq!(
            types("SELECT $1::date, CAST($2 AS numeric) FROM t"),
            [Type::DATE, Type::NUMERIC]
        );
        assert_eq!(types("SELECT p * $1 FROM t"), [Type::NUMERIC]);
        assert_eq!(types("SELECT $1 FROM t"), [Type::TEXT]);
        // Declared types win; a parameter used twice keeps its first type.
        let p = Params::of(
            "SELECT * FROM t WHERE k = $1 OR s = $1",
            &[Some(Type::INT4)],
            &T,
        )
        .unwrap();
        assert_eq!(p.types, [Type::INT4]);
    }

    #[test]
    fn values_are_substituted_where_the_placeholders_are() {
        let sql = "SELECT '$1', s FROM t -- $1\nWHERE k = $1 AND s = $2";
        let p = Params::of(sql, &[], &T).unwrap();
        assert_eq!(p.types, [Type::INT8, Type::TEXT]);
        let v = [
            literal(&Type::INT8, Some(b"-42"), false, 0).unwrap(),
            literal(&Type::TEXT, Some(b"it's"), false, 1).unwrap(),
        ];
        assert_eq!(
            p.substitute(sql, &v),
            "SELECT '$1', s FROM t -- $1\nWHERE k = (-42) AND s = 'it''s'"
        );
        // Multi-byte characters before a placeholder.
        let sql = "SELECT 'żółw' FROM t WHERE k = $1";
        let p = Params::of(sql, &[], &T).unwrap();
        assert_eq!(
            p.substitute(sql, &["7".into()]),
            "SELECT 'żółw' FROM t WHERE k = 7"
        );
    }

    #[test]
    fn numeric_text_with_an_exponent_is_written_out() {
        for (given, want) in [
            ("1E-7", "0.0000001"),
            ("1e-7", "0.0000001"),
            ("-1.5e3", "-1500"),
            ("2.5E+2", "250"),
            ("12.345e1", "123.45"),
            ("0.00", "0.00"),
            ("+7", "7"),
            ("123", "123"),
        ] {
            assert_eq!(plain_decimal(given).as_deref(), Some(want), "{given}");
        }
        assert_eq!(plain_decimal("1e"), None);
        assert_eq!(plain_decimal("1e99999"), None);
        assert_eq!(plain_decimal("xe3"), None);
        assert_eq!(
            literal(&Type::NUMERIC, Some(b"1E-7"), false, 0).unwrap(),
            "0.0000001"
        );
        assert!(literal(&Type::NUMERIC, Some(b"1E-7x"), false, 0).is_err());
    }

    #[test]
    fn binary_integers_take_exactly_their_width() {
        assert_eq!(
            literal(&Type::INT4, Some(&7i32.to_be_bytes()), true, 0).unwrap(),
            "CAST(7 AS INT)"
        );
        assert_eq!(
            literal(&Type::INT2, Some(&(-7i16).to_be_bytes()), true, 0).unwrap(),
            "CAST((-7) AS INT)"
        );
        assert_eq!(
            literal(&Type::INT8, Some(&7i64.to_be_bytes()), true, 0).unwrap(),
            "7"
        );
        for (ty, bytes) in [
            (Type::INT4, &7i16.to_be_bytes()[..]),
            (Type::INT4, &7i64.to_be_bytes()[..]),
            (Type::INT8, &7i32.to_be_bytes()[..]),
            (Type::INT2, &7i32.to_be_bytes()[..]),
            (Type::FLOAT8, &1f32.to_be_bytes()[..]),
        ] {
            let e = literal(&ty, Some(bytes), true, 0).unwrap_err();
            assert_eq!(e.code, "22P03", "{ty}: {}", e.message);
        }
    }

    #[test]
    fn binary_values_decode() {
        assert_eq!(
            literal(&Type::INT8, Some(&(-5i64).to_be_bytes()), true, 0).unwrap(),
            "(-5)"
        );
        assert_eq!(
            literal(&Type::INT4, Some(&7i32.to_be_bytes()), true, 0).unwrap(),
            "CAST(7 AS INT)"
        );
        assert_eq!(
            literal(&Type::DATE, Some(&0i32.to_be_bytes()), true, 0).unwrap(),
            "DATE '2000-01-01'"
        );
        assert_eq!(literal(&Type::BOOL, Some(&[1]), true, 0).unwrap(), "TRUE");
        assert_eq!(
            literal(&Type::TEXT, None, true, 0).unwrap(),
            "CAST(NULL AS TEXT)"
        );
        let e = literal(&Type::INT8, Some(&[1, 2, 3]), true, 2).unwrap_err();
        assert_eq!(e.code, "22P03");
        assert!(e.message.contains("$3"), "{}", e.message);
        let e = literal(&Type::INT8, Some(b"12x"), false, 0).unwrap_err();
        assert_eq!(e.code, "22P02");
        let mut b = bytes::BytesMut::new();
        crate::encode::numeric_binary(&mut b, -123456, 3);
        assert_eq!(
            literal(&Type::NUMERIC, Some(&b), true, 0).unwrap(),
            "(-123.456)"
        );
        assert!(literal(&Type::NUMERIC, Some(b"1; DROP"), false, 0).is_err());
    }
}
