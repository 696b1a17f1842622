//! SQL text: one statement parsed (`sqlparser`), and the places (line and
//! column) that binding and planning errors name.
//!
//! For: [`parse`], and saying where a construct is, including keywords the
//! syntax tree keeps no place for. Not for: what the syntax tree means;
//! that is [`super::bind`] (expressions) and [`super::plan`] (queries).

use sqlparser::ast::{self, Spanned};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;

use crate::error::{Error, Result};

/// ` at line L, column C` of a place; empty when the place is unknown.
pub(crate) fn at(span: sqlparser::tokenizer::Span) -> String {
    if span.start.line == 0 {
        String::new()
    } else {
        format!(" at line {}, column {}", span.start.line, span.start.column)
    }
}

/// The error that refuses a construct outside the supported SQL.
pub(crate) fn unsupported(what: &str, node: &impl Spanned) -> Error {
    Error::Unsupported(format!("{what} is not supported{}", at(node.span())))
}

/// A planning error about `node`, saying where it is (a construct "not
/// supported" is [`Error::Unsupported`]).
pub(crate) fn plan_err(msg: String, node: &impl Spanned) -> Error {
    let msg = format!("{msg}{}", at(node.span()));
    if msg.contains(" not supported") {
        Error::Unsupported(msg)
    } else {
        Error::Plan(msg)
    }
}

/// How deep the syntax tree of a statement may nest, as [`depth_bound`]
/// counts it. Deeper SQL is refused before it is parsed (SQLSTATE 54001,
/// as PostgreSQL refuses SQL that would exhaust its stack): the parser
/// builds a chain such as `1+1+…+1` or `a OR b OR …` as a tree as deep as
/// the chain is long, and dropping, cloning or walking such a tree
/// recurses once a level. A 5,000-term `OR` or `IN` list nests far less
/// than this (see [`depth_bound`]); the binder has a tighter limit of its
/// own for the forms it does not flatten.
pub const MAX_SQL_DEPTH: usize = 10_000;

/// Parses one statement.
pub fn parse(sql: &str) -> Result<ast::Statement> {
    let sql = &*escape_strings(sql)?;
    let tokens = tokenize(sql)?;
    let depth = depth_bound(tokens.iter().map(|t| &t.token));
    parse_tokens(sql, tokens, depth)
}

/// `sql` with each `E'…'` string whose escapes make bytes past ASCII
/// (`E'\xC3\xA9'`, `E'\303\251'`: PostgreSQL's bytes of the database's
/// encoding, UTF-8) written as a plain `'…'` string of its characters;
/// the parser reads such an escape as one character of its own, and
/// refuses those past 127. Bytes that are not UTF-8, or a NUL, are
/// PostgreSQL's error 22021. Every other string, identifier, comment
/// and all text outside them is left as it is (so places in it stay).
pub fn escape_strings(sql: &str) -> Result<std::borrow::Cow<'_, str>> {
    let b = sql.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80;
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'-' if b.get(i + 1) == Some(&b'-') => {
                i = memchr::memchr(b'\n', &b[i..]).map_or(b.len(), |n| i + n);
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                // Comments nest, as in PostgreSQL.
                let mut depth = 0;
                while i < b.len() {
                    if b[i..].starts_with(b"/*") {
                        depth += 1;
                        i += 2;
                    } else if b[i..].starts_with(b"*/") {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            q @ (b'\'' | b'"') => {
                let escaped = q == b'\''
                    && i > 0
                    && matches!(b[i - 1], b'e' | b'E')
                    && (i < 2 || !ident(b[i - 2]));
                if !escaped {
                    // A plain string or a quoted name: to its closing
                    // quote (a doubled one is in it).
                    i += 1;
                    while i < b.len() {
                        if b[i] == q {
                            if b.get(i + 1) == Some(&q) {
                                i += 2;
                                continue;
                            }
                            break;
                        }
                        i += 1;
                    }
                    i += 1;
                    continue;
                }
                let start = i - 1;
                let Some((bytes, end, wide)) = unescape(b, i + 1)? else {
                    // Unterminated: the parser reports it.
                    break;
                };
                i = end;
                if let Some(at) = bytes.iter().position(|&c| c == 0) {
                    return Err(bad_bytes(&bytes[at..at + 1]));
                }
                if !wide {
                    continue;
                }
                let text = match String::from_utf8(bytes) {
                    Ok(t) => t,
                    Err(e) => {
                        let at = e.utf8_error().valid_up_to();
                        let bytes = e.as_bytes();
                        // The character its first byte begins, as
                        // PostgreSQL names it.
                        let len = match bytes[at] {
                            0xC0..=0xDF => 2,
                            0xE0..=0xEF => 3,
                            0xF0..=0xF7 => 4,
                            _ => 1,
                        };
                        return Err(bad_bytes(&bytes[at..(at + len).min(bytes.len())]));
                    }
                };
                let o = out.get_or_insert_with(|| String::with_capacity(sql.len()));
                o.push_str(&sql[copied..start]);
                o.push('\'');
                o.push_str(&text.replace('\'', "''"));
                o.push('\'');
                copied = end;
            }
            b'$' if i == 0 || !ident(b[i - 1]) => {
                // $tag$ … $tag$ (not $1, a parameter).
                let tag_end = b[i + 1..]
                    .iter()
                    .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80))
                    .map(|n| i + 1 + n);
                match tag_end {
                    Some(e) if b[e] == b'$' && !b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                        let tag = &b[i..=e];
                        i = memchr::memmem::find(&b[e + 1..], tag)
                            .map_or(b.len(), |n| e + 1 + n + tag.len());
                    }
                    _ => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    Ok(match out {
        Some(mut o) => {
            o.push_str(&sql[copied..]);
            std::borrow::Cow::Owned(o)
        }
        None => std::borrow::Cow::Borrowed(sql),
    })
}

/// PostgreSQL's error for bytes that are not UTF-8 (or a NUL) in a string.
fn bad_bytes(bytes: &[u8]) -> Error {
    let shown: Vec<String> = bytes.iter().map(|c| format!("0x{c:02x}")).collect();
    Error::Argument {
        state: "22021",
        message: format!(
            "invalid byte sequence for encoding \"UTF8\": {}",
            shown.join(" ")
        ),
    }
}

/// PostgreSQL's error for a `\u` escape of no character (`\u0000`).
fn bad_escape() -> Error {
    Error::Argument {
        state: "42601",
        message: "invalid Unicode escape value".into(),
    }
}

/// PostgreSQL's error for a `\u` escape of half a surrogate pair alone.
fn bad_surrogate() -> Error {
    Error::Argument {
        state: "42601",
        message: "invalid Unicode surrogate pair".into(),
    }
}

/// The bytes of an `E'…'` string's body from `b[i]` (after the quote),
/// where it ends (after its closing quote), and whether an escape made a
/// byte past ASCII. `None`: no closing quote, or an escape of a
/// character that is none; an error: half a surrogate pair.
fn unescape(b: &[u8], i: usize) -> Result<Option<(Vec<u8>, usize, bool)>> {
    let mut bad = Bad::None;
    let r = unescape_body(b, i, &mut bad);
    match bad {
        Bad::None => Ok(r),
        Bad::Pair => Err(bad_surrogate()),
        Bad::Value => Err(bad_escape()),
    }
}

/// An escape [`unescape_body`] found wrong.
enum Bad {
    None,
    Pair,
    Value,
}

fn unescape_body(b: &[u8], mut i: usize, bad: &mut Bad) -> Option<(Vec<u8>, usize, bool)> {
    let mut out = Vec::new();
    let mut wide = false;
    let digits = |b: &[u8], i: usize, max: usize, radix: u32| -> (u32, usize) {
        let mut v = 0u32;
        let mut n = 0;
        while n < max
            && let Some(d) = b.get(i + n).and_then(|&c| (c as char).to_digit(radix))
        {
            v = v * radix + d;
            n += 1;
        }
        (v, n)
    };
    while i < b.len() {
        match b[i] {
            b'\'' if b.get(i + 1) == Some(&b'\'') => {
                out.push(b'\'');
                i += 2;
            }
            b'\'' => return Some((out, i + 1, wide)),
            b'\\' => {
                let c = *b.get(i + 1)?;
                i += 2;
                match c {
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    b't' => out.push(b'\t'),
                    b'x' => {
                        let (v, n) = digits(b, i, 2, 16);
                        if n == 0 {
                            out.push(b'x');
                        } else {
                            out.push(v as u8);
                            wide |= v >= 0x80;
                            i += n;
                        }
                    }
                    b'0'..=b'7' => {
                        let (v, n) = digits(b, i - 1, 3, 8);
                        out.push((v & 0xff) as u8);
                        wide |= (v & 0xff) >= 0x80;
                        i += n - 1;
                    }
                    b'u' | b'U' => {
                        let len = if c == b'u' { 4 } else { 8 };
                        let (v, n) = digits(b, i, len, 16);
                        if n != len {
                            return None;
                        }
                        i += n;
                        if v == 0 || v > 0x10FFFF {
                            *bad = Bad::Value;
                            return None;
                        }
                        // A surrogate pair written as two escapes.
                        if (0xDC00..0xE000).contains(&v) {
                            *bad = Bad::Pair;
                            return None;
                        }
                        let v = if (0xD800..0xDC00).contains(&v) {
                            let (lo, m) = digits(b, i + 2, 4, 16);
                            if b.get(i) != Some(&b'\\')
                                || b.get(i + 1) != Some(&b'u')
                                || m != 4
                                || !(0xDC00..0xE000).contains(&lo)
                            {
                                *bad = Bad::Pair;
                                return None;
                            }
                            i += 6;
                            // (The parser takes each escape alone.)
                            wide = true;
                            0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00)
                        } else {
                            v
                        };
                        let ch = char::from_u32(v)?;
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                    }
                    other => {
                        // Any other character stands for itself (a UTF-8
                        // sequence whole).
                        out.push(other);
                    }
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    None
}

/// The tokens of `sql`, with their places.
pub(crate) fn tokenize(sql: &str) -> Result<Vec<sqlparser::tokenizer::TokenWithSpan>> {
    use sqlparser::tokenizer::Tokenizer;
    Tokenizer::new(&GenericDialect {}, sql)
        .tokenize_with_location()
        .map_err(|e| Error::Syntax(parser_message(&format!("sql parser error: {e}"))))
}

/// Parses one statement from its tokens (of the text `sql`), whose
/// [`depth_bound`] is `depth` (refused past [`MAX_SQL_DEPTH`]).
pub(crate) fn parse_tokens(
    sql: &str,
    tokens: Vec<sqlparser::tokenizer::TokenWithSpan>,
    depth: usize,
) -> Result<ast::Statement> {
    if depth > MAX_SQL_DEPTH {
        return Err(too_deep(format!(
            "expressions nest about {depth} levels deep; at most {MAX_SQL_DEPTH} are allowed \
             (a long chain of operators, such as a+b+c+…, nests once an operator; \
             write long lists of values as IN (…))"
        )));
    }
    let tokens = xor_as_postgresql(tokens)?;
    let (tokens, symmetric) = take_symmetric(tokens);
    let mut stmt = parse_lists(sql, tokens)?;
    if !symmetric.is_empty() {
        put_symmetric(&mut stmt, symmetric)?;
    }
    postgresql_spellings(&mut stmt)?;
    Ok(stmt)
}

/// `OPERATOR(…)` whose left operand the parser made a comparison or a
/// BETWEEN (not in parentheses): the operator applies to that
/// comparison's right operand, as in PostgreSQL.
fn operator_precedence(e: &mut ast::Expr) {
    use ast::BinaryOperator as B;
    let ast::Expr::BinaryOp {
        left,
        op: B::PGCustomBinaryOperator(_),
        ..
    } = e
    else {
        return;
    };
    let comparison = matches!(
        left.as_ref(),
        ast::Expr::BinaryOp {
            op: B::Eq | B::NotEq | B::Lt | B::LtEq | B::Gt | B::GtEq,
            ..
        } | ast::Expr::Between { .. }
    );
    if !comparison {
        return;
    }
    let ast::Expr::BinaryOp { left, op, right } =
        std::mem::replace(e, ast::Expr::value(ast::Value::Null))
    else {
        return;
    };
    let attach = |operand: Box<ast::Expr>| {
        let mut inner = ast::Expr::BinaryOp {
            left: operand,
            op,
            right,
        };
        operator_precedence(&mut inner);
        Box::new(inner)
    };
    *e = match *left {
        ast::Expr::BinaryOp {
            left: a,
            op: cmp,
            right: b,
        } => ast::Expr::BinaryOp {
            left: a,
            op: cmp,
            right: attach(b),
        },
        ast::Expr::Between {
            expr,
            negated,
            low,
            high,
        } => ast::Expr::Between {
            expr,
            negated,
            low,
            high: attach(high),
        },
        // (Not reached: `comparison` is one of the two.)
        other => other,
    };
}

/// PostgreSQL's other spellings of what the engine reads, as the engine
/// reads them: `OPERATOR(pg_catalog.~)` (psql writes every operator so)
/// is `~`; `E'a\nb'` is a string (the parser has read its escapes);
/// `x COLLATE "C"` (or `"POSIX"`, `ucs_basic`, `"default"`,
/// `pg_catalog.default`: sluice compares text byte by byte, and its
/// database's collation is C) is `x`. Another collation is refused.
fn postgresql_spellings(stmt: &mut ast::Statement) -> Result<()> {
    use ast::BinaryOperator as B;
    use std::ops::ControlFlow;
    let mut failure = None;
    // First, PostgreSQL's precedence of OPERATOR(…): below + and -, above
    // comparisons and BETWEEN, where the parser puts it level with them
    // (`a = b OPERATOR(+) c` is `a = (b + c)`, not `(a = b) + c`).
    let _ = ast::visit_expressions_mut(stmt, |e| {
        operator_precedence(e);
        ControlFlow::<()>::Continue(())
    });
    let _ = ast::visit_expressions_mut(stmt, |e| {
        match e {
            // `x::pg_catalog.text` is `x::text` (psql qualifies types).
            ast::Expr::Cast { data_type, .. } => {
                if let ast::DataType::Custom(n, a) = data_type
                    && a.is_empty()
                    && let [schema, name] = n.0.as_slice()
                    && schema
                        .as_ident()
                        .is_some_and(|i| i.value.eq_ignore_ascii_case("pg_catalog"))
                    && let Some(name) = name.as_ident()
                    && let Ok(ast::Expr::Cast { data_type: t, .. }) =
                        Parser::new(&GenericDialect {})
                            .try_with_sql(&format!("CAST(NULL AS {name})"))
                            .and_then(|mut p| p.parse_expr())
                {
                    *data_type = t;
                }
            }
            ast::Expr::BinaryOp { left, op, right } => {
                if let B::PGCustomBinaryOperator(parts) = op {
                    // Its operands as it binds them, in their text too.
                    for x in [left, right] {
                        if matches!(x.as_ref(), ast::Expr::BinaryOp { .. }) {
                            let inner =
                                std::mem::replace(x.as_mut(), ast::Expr::value(ast::Value::Null));
                            **x = ast::Expr::Nested(Box::new(inner));
                        }
                    }
                    let sym = match parts.as_slice() {
                        [s] => Some(s.as_str()),
                        [schema, s] if schema.eq_ignore_ascii_case("pg_catalog") => {
                            Some(s.as_str())
                        }
                        _ => None,
                    };
                    let known = match sym {
                        Some("~") => Some(B::PGRegexMatch),
                        Some("~*") => Some(B::PGRegexIMatch),
                        Some("!~") => Some(B::PGRegexNotMatch),
                        Some("!~*") => Some(B::PGRegexNotIMatch),
                        Some("=") => Some(B::Eq),
                        Some("<>") | Some("!=") => Some(B::NotEq),
                        Some("<") => Some(B::Lt),
                        Some("<=") => Some(B::LtEq),
                        Some(">") => Some(B::Gt),
                        Some(">=") => Some(B::GtEq),
                        Some("+") => Some(B::Plus),
                        Some("-") => Some(B::Minus),
                        Some("*") => Some(B::Multiply),
                        Some("/") => Some(B::Divide),
                        Some("%") => Some(B::Modulo),
                        Some("||") => Some(B::StringConcat),
                        _ => None,
                    };
                    if let Some(k) = known {
                        *op = k;
                        // Kept apart, so that its text reads as it is bound.
                        let inner = std::mem::replace(e, ast::Expr::value(ast::Value::Null));
                        *e = ast::Expr::Nested(Box::new(inner));
                    }
                }
            }
            // E'…' (the parser has read its backslash escapes) is a
            // string as any other.
            ast::Expr::Value(v) => {
                if let ast::Value::EscapedStringLiteral(t) = &mut v.value {
                    v.value = ast::Value::SingleQuotedString(std::mem::take(t));
                }
            }
            ast::Expr::Collate { expr, collation } => {
                let name: Vec<String> = collation
                    .0
                    .iter()
                    .filter_map(|p| p.as_ident())
                    .map(|i| {
                        if i.quote_style.is_some() {
                            i.value.clone()
                        } else {
                            i.value.to_ascii_lowercase()
                        }
                    })
                    .collect();
                let last = match name.as_slice() {
                    [n] => Some(n.as_str()),
                    [schema, n] if schema == "pg_catalog" => Some(n.as_str()),
                    _ => None,
                };
                if matches!(last, Some("C" | "POSIX" | "ucs_basic" | "default")) {
                    let inner =
                        std::mem::replace(expr.as_mut(), ast::Expr::value(ast::Value::Null));
                    *e = ast::Expr::Nested(Box::new(inner));
                } else {
                    failure = Some(Error::Argument {
                        state: "0A000",
                        message: format!(
                            "the collation {collation} is not supported: sluice compares text \
                             byte by byte, as the collation \"C\" does{}",
                            at(collation.span())
                        ),
                    });
                    return ControlFlow::Break(());
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    });
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// PostgreSQL's `#` (bitwise XOR) as the token the parser reads as XOR
/// (`^`); PostgreSQL's `^` is exponentiation, which is refused rather
/// than read as XOR.
fn xor_as_postgresql(
    mut tokens: Vec<sqlparser::tokenizer::TokenWithSpan>,
) -> Result<Vec<sqlparser::tokenizer::TokenWithSpan>> {
    use sqlparser::tokenizer::Token;
    for t in &mut tokens {
        match t.token {
            Token::Caret => {
                return Err(Error::Unsupported(format!(
                    "the operator ^ (exponentiation; write power(a, b)) is not supported at line {}, column {}",
                    t.span.start.line, t.span.start.column
                )));
            }
            Token::Sharp => t.token = Token::Caret,
            _ => {}
        }
    }
    Ok(tokens)
}

/// Parses one statement from its tokens, long literal lists built apart
/// (see [`take_literal_lists`]).
fn parse_lists(
    sql: &str,
    tokens: Vec<sqlparser::tokenizer::TokenWithSpan>,
) -> Result<ast::Statement> {
    let (tokens, lists) = take_literal_lists(tokens);
    if lists.is_empty() {
        return one(parse_all(tokens)?);
    }
    // An error, or a list the parser did not make an IN list of
    // (`POSITION(1 IN (…))`): as the parser alone reads the text, so that
    // its message names the text as written.
    match parse_all(tokens) {
        Ok(mut stmts) => {
            if put_literal_lists(&mut stmts, lists) {
                one(stmts)
            } else {
                one(parse_all(tokenize(sql)?)?)
            }
        }
        Err(_) => one(parse_all(tokenize(sql)?)?),
    }
}

/// Takes `SYMMETRIC` and `ASYMMETRIC` out of `BETWEEN SYMMETRIC` and
/// `BETWEEN ASYMMETRIC` (the parser knows neither), and returns where
/// each `SYMMETRIC` stood. (`ASYMMETRIC` is what `BETWEEN` means alone.)
fn take_symmetric(
    tokens: Vec<sqlparser::tokenizer::TokenWithSpan>,
) -> (
    Vec<sqlparser::tokenizer::TokenWithSpan>,
    Vec<sqlparser::tokenizer::Location>,
) {
    use sqlparser::keywords::Keyword as K;
    use sqlparser::tokenizer::Token as T;
    let word = |t: &T, k: K| matches!(t, T::Word(w) if w.keyword == k && w.quote_style.is_none());
    if !tokens
        .iter()
        .any(|t| word(&t.token, K::SYMMETRIC) || word(&t.token, K::ASYMMETRIC))
    {
        return (tokens, Vec::new());
    }
    let mut out: Vec<sqlparser::tokenizer::TokenWithSpan> = Vec::with_capacity(tokens.len());
    let mut places = Vec::new();
    for t in tokens {
        let after_between = out
            .iter()
            .rev()
            .find(|p| !matches!(p.token, T::Whitespace(_)))
            .is_some_and(|p| word(&p.token, K::BETWEEN));
        if after_between && word(&t.token, K::SYMMETRIC) {
            places.push(t.span.start);
            continue;
        }
        if after_between && word(&t.token, K::ASYMMETRIC) {
            continue;
        }
        out.push(t);
    }
    (out, places)
}

/// Makes each `x BETWEEN a AND b` whose `SYMMETRIC` stood at one of
/// `places` (between `x` and `a`) what PostgreSQL makes of `x BETWEEN
/// SYMMETRIC a AND b`: `x BETWEEN a AND b OR x BETWEEN b AND a` (and `x
/// NOT BETWEEN a AND b AND x NOT BETWEEN b AND a` for `NOT BETWEEN
/// SYMMETRIC`), so that NULLs give what they give there. A `SYMMETRIC`
/// that no such expression claims is refused, never dropped.
fn put_symmetric(
    stmt: &mut ast::Statement,
    mut places: Vec<sqlparser::tokenizer::Location>,
) -> Result<()> {
    use std::ops::ControlFlow;
    let _ = ast::visit_expressions_mut(stmt, |e| {
        if let ast::Expr::Between {
            expr,
            negated,
            low,
            high,
        } = e
        {
            let (after, before) = (expr.span().end, low.span().start);
            let claimed = places
                .iter()
                .position(|&p| after.line > 0 && before.line > 0 && after <= p && p <= before);
            if let Some(i) = claimed {
                places.swap_remove(i);
                let swapped = ast::Expr::Between {
                    expr: expr.clone(),
                    negated: *negated,
                    low: high.clone(),
                    high: low.clone(),
                };
                let op = if *negated {
                    ast::BinaryOperator::And
                } else {
                    ast::BinaryOperator::Or
                };
                let one = std::mem::replace(e, ast::Expr::Value(ast::Value::Null.into()));
                *e = ast::Expr::Nested(Box::new(ast::Expr::BinaryOp {
                    left: Box::new(one),
                    op,
                    right: Box::new(swapped),
                }));
            }
        }
        ControlFlow::<()>::Continue(())
    });
    match places.first() {
        None => Ok(()),
        Some(p) => Err(Error::Unsupported(format!(
            "BETWEEN SYMMETRIC is not supported here at line {}, column {}",
            p.line, p.column
        ))),
    }
}

/// The statements the parser makes of `tokens`.
fn parse_all(tokens: Vec<sqlparser::tokenizer::TokenWithSpan>) -> Result<Vec<ast::Statement>> {
    Parser::new(&GenericDialect {})
        .with_tokens_with_locations(tokens)
        .parse_statements()
        .map_err(|e| match e {
            sqlparser::parser::ParserError::RecursionLimitExceeded => too_deep(
                "expressions or subqueries nest deeper than the parser allows (50 levels of \
                 parentheses, subqueries or prefix operators)"
                    .into(),
            ),
            e => Error::Syntax(parser_message(&e.to_string())),
        })
}

/// The one statement of `stmts`.
fn one(mut stmts: Vec<ast::Statement>) -> Result<ast::Statement> {
    match stmts.len() {
        0 => Err(Error::Syntax("empty query".into())),
        1 => Ok(stmts.remove(0)),
        n => Err(Error::Plan(format!(
            "expected one statement, got {n}{}",
            at(stmts[1].span())
        ))),
    }
}

/// Lists of at least this many literals after `IN (` are built straight
/// from their tokens (see [`take_literal_lists`]).
const LITERAL_LIST_MIN: usize = 8;

/// The name of the placeholder that stands for the `i`th literal list
/// taken out of a statement's tokens: it starts with a character no SQL
/// text can put in a placeholder's name.
fn list_mark(i: usize) -> String {
    format!("\u{1}in{i}")
}

/// Takes out of `tokens` every list of [`LITERAL_LIST_MIN`] or more plain
/// literals (numbers, optionally signed, single-quoted strings, `NULL`)
/// that follows `IN (`, leaving one placeholder in its place, and returns
/// each list as the expressions the parser would have built for it. The
/// parser spends about a microsecond on each item of a list (it tries
/// every item as a typed literal such as `DATE '…'` first, and formats
/// the error of that try); built here, an item costs what its syntax
/// tree node (some 300 bytes) costs to write. A list holding anything
/// else is left to the parser.
fn take_literal_lists(
    mut tokens: Vec<sqlparser::tokenizer::TokenWithSpan>,
) -> (
    Vec<sqlparser::tokenizer::TokenWithSpan>,
    Vec<Vec<ast::Expr>>,
) {
    use sqlparser::keywords::Keyword as K;
    use sqlparser::tokenizer::{Token as T, TokenWithSpan};
    let significant = |t: &TokenWithSpan| !matches!(t.token, T::Whitespace(_));
    // Fast exit: no IN list long enough to matter.
    let commas = tokens
        .iter()
        .filter(|t| matches!(t.token, T::Comma))
        .count();
    if commas + 1 < LITERAL_LIST_MIN {
        return (tokens, Vec::new());
    }
    let mut out = Vec::with_capacity(tokens.len());
    let mut lists = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let is_in = matches!(&tokens[i].token, T::Word(w) if w.keyword == K::IN);
        out.push(tokens[i].clone());
        i += 1;
        if !is_in {
            continue;
        }
        // `IN`, then `(`.
        let Some(open) = (i..tokens.len()).find(|&j| significant(&tokens[j])) else {
            continue;
        };
        if !matches!(tokens[open].token, T::LParen) {
            continue;
        }
        // Items: [sign] literal, then `,` or `)`; room for as many as
        // there are commas before the next `)`.
        let room = tokens[open..]
            .iter()
            .take_while(|t| !matches!(t.token, T::RParen))
            .filter(|t| matches!(t.token, T::Comma))
            .count();
        if room + 1 < LITERAL_LIST_MIN {
            continue;
        }
        // First the items' places (sign, literal), the tokens untouched...
        let mut places: Vec<(Option<ast::UnaryOperator>, usize)> = Vec::with_capacity(room + 1);
        let mut j = open + 1;
        let next = |j: usize| (j..tokens.len()).find(|&k| significant(&tokens[k]));
        let close = loop {
            let Some(mut k) = next(j) else { break None };
            let sign = match tokens[k].token {
                T::Minus => Some(ast::UnaryOperator::Minus),
                T::Plus => Some(ast::UnaryOperator::Plus),
                _ => None,
            };
            if sign.is_some() {
                match next(k + 1) {
                    Some(n) => k = n,
                    None => break None,
                }
            }
            let literal = match &tokens[k].token {
                T::Number(..) => true,
                T::SingleQuotedString(_) => sign.is_none(),
                T::Word(w) => w.keyword == K::NULL && w.quote_style.is_none() && sign.is_none(),
                _ => false,
            };
            if !literal {
                break None;
            }
            places.push((sign, k));
            let Some(after) = next(k + 1) else { break None };
            match tokens[after].token {
                T::Comma => j = after + 1,
                T::RParen => break Some(after),
                _ => break None,
            }
        };
        let Some(close) = close.filter(|_| places.len() >= LITERAL_LIST_MIN) else {
            continue;
        };
        // ...then the expressions, the literals' text moved out of tokens
        // that are dropped.
        let items = places
            .into_iter()
            .map(|(sign, k)| {
                let value = match &mut tokens[k].token {
                    T::Number(n, long) => ast::Value::Number(std::mem::take(n), *long),
                    T::SingleQuotedString(s) => ast::Value::SingleQuotedString(std::mem::take(s)),
                    _ => ast::Value::Null,
                };
                let v = ast::Expr::Value(value.with_span(tokens[k].span));
                match sign {
                    Some(op) => ast::Expr::UnaryOp {
                        op,
                        expr: Box::new(v),
                    },
                    None => v,
                }
            })
            .collect();
        out.extend(tokens[i..=open].iter().cloned());
        out.push(TokenWithSpan::new(
            T::Placeholder(list_mark(lists.len())),
            tokens[open + 1].span,
        ));
        out.push(tokens[close].clone());
        lists.push(items);
        i = close + 1;
    }
    (out, lists)
}

/// Puts back the lists [`take_literal_lists`] took out, each in place of
/// the `IN` list that holds only its placeholder; false when one was left
/// out (its placeholder stands elsewhere).
fn put_literal_lists(stmts: &mut [ast::Statement], lists: Vec<Vec<ast::Expr>>) -> bool {
    use std::ops::ControlFlow;
    let mut lists: Vec<Option<Vec<ast::Expr>>> = lists.into_iter().map(Some).collect();
    for stmt in stmts {
        let _ = ast::visit_expressions_mut(stmt, |e| {
            if let ast::Expr::InList { list, .. } = e
                && let [ast::Expr::Value(v)] = list.as_slice()
                && let ast::Value::Placeholder(name) = &v.value
                && let Some(i) = name
                    .strip_prefix('\u{1}')
                    .and_then(|n| n.strip_prefix("in"))
                && let Ok(i) = i.parse::<usize>()
                && let Some(items) = lists.get_mut(i).and_then(Option::take)
            {
                *list = items;
            }
            ControlFlow::<()>::Continue(())
        });
    }
    lists.iter().all(Option::is_none)
}

/// The error for SQL nested too deeply (SQLSTATE 54001).
pub(crate) fn too_deep(detail: String) -> Error {
    Error::TooDeep(format!("stack depth limit exceeded: {detail}"))
}

/// An upper bound of how deep the syntax tree of the SQL made of `tokens`
/// nests, counted without building it. Within one pair of parentheses
/// (or brackets, or `CASE … END`), the items between commas (and between
/// the keywords that start a clause or a `CASE` branch) are counted
/// apart: each operator or keyword in an item may add a level (a chain
/// of N operators parses as a tree N deep), and so may each pair of
/// parentheses around the next item. Identifiers, literals, commas and
/// parentheses themselves count nothing, so a list of any length
/// (`IN (1, 2, …)`, a select list) counts little.
pub fn depth_bound<'t>(tokens: impl Iterator<Item = &'t sqlparser::tokenizer::Token>) -> usize {
    use sqlparser::keywords::Keyword as K;
    use sqlparser::tokenizer::Token as T;
    /// One open pair of parentheses: operators in the current item, the
    /// deepest pair opened in it, the deepest item so far.
    #[derive(Default)]
    struct Frame {
        ops: usize,
        child: usize,
        best: usize,
        case: bool,
    }
    impl Frame {
        fn end_item(&mut self) {
            self.best = self.best.max(self.ops + self.child);
            self.ops = 0;
            self.child = 0;
        }
    }
    let mut stack = vec![Frame::default()];
    let close = |stack: &mut Vec<Frame>| {
        if stack.len() > 1
            && let Some(mut f) = stack.pop()
        {
            f.end_item();
            if let Some(p) = stack.last_mut() {
                p.child = p.child.max(f.best + 1);
            }
        }
    };
    for t in tokens {
        match t {
            T::LParen | T::LBracket | T::LBrace => stack.push(Frame::default()),
            T::RParen | T::RBracket | T::RBrace => {
                if stack.last().is_some_and(|f| !f.case) {
                    close(&mut stack);
                }
            }
            T::Comma | T::SemiColon => {
                if let Some(f) = stack.last_mut() {
                    f.end_item();
                }
            }
            T::Whitespace(_) | T::EOF | T::Number(..) => {}
            T::SingleQuotedString(_)
            | T::DoubleQuotedString(_)
            | T::NationalStringLiteral(_)
            | T::EscapedStringLiteral(_)
            | T::HexStringLiteral(_)
            | T::DollarQuotedString(_) => {}
            T::Word(w) => match w.keyword {
                K::NoKeyword => {}
                K::CASE => stack.push(Frame {
                    case: true,
                    ..Frame::default()
                }),
                K::END if stack.last().is_some_and(|f| f.case) => close(&mut stack),
                K::SELECT
                | K::FROM
                | K::WHERE
                | K::GROUP
                | K::HAVING
                | K::ORDER
                | K::LIMIT
                | K::OFFSET
                | K::UNION
                | K::INTERSECT
                | K::EXCEPT
                | K::JOIN
                | K::ON
                | K::WITH
                | K::WHEN
                | K::THEN
                | K::ELSE => {
                    if let Some(f) = stack.last_mut() {
                        f.end_item();
                    }
                }
                _ => {
                    if let Some(f) = stack.last_mut() {
                        f.ops += 1;
                    }
                }
            },
            _ => {
                if let Some(f) = stack.last_mut() {
                    f.ops += 1;
                }
            }
        }
    }
    while stack.len() > 1 {
        close(&mut stack);
    }
    stack.pop().map_or(0, |mut f| {
        f.end_item();
        f.best
    })
}

/// The parser's message with its place written as ours: `... at line 1,
/// column 8` for `... at Line: 1, Column: 8`.
fn parser_message(m: &str) -> String {
    match m.rsplit_once(" at Line: ") {
        Some((head, place)) => match place.split_once(", Column: ") {
            Some((line, col)) => format!("{head} at line {line}, column {col}"),
            None => m.to_string(),
        },
        None => m.to_string(),
    }
}

/// The SQL text a statement was parsed from, to find where the keywords
/// that the syntax tree keeps no place for are (`INSERT`, `UNION`, `TOP`),
/// and the statement's time: microseconds since 1970-01-01 UTC when it
/// was planned, what `now()`, `localtime`, `current_date`, … all give
/// (PostgreSQL's statement time: `now() = current_timestamp` is true).
#[derive(Clone, Copy)]
pub(crate) struct Text<'a>(pub(crate) &'a str, pub(crate) i64);

impl<'a> Text<'a> {
    /// `sql`, its statement's time the clock's now.
    pub(crate) fn new(sql: &'a str) -> Text<'a> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        Text(sql, now)
    }

    /// ` at line L, column C` of the first word among `words` (any word when
    /// empty) at or after `from`; empty when there is none.
    pub(crate) fn word_at(self, from: sqlparser::tokenizer::Location, words: &[&str]) -> String {
        use sqlparser::tokenizer::{Token, Tokenizer};
        let Ok(tokens) = Tokenizer::new(&GenericDialect {}, self.0).tokenize_with_location() else {
            return String::new();
        };
        tokens
            .iter()
            .find(|t| {
                t.span.start >= from
                    && matches!(&t.token, Token::Word(w)
                        if words.is_empty() || words.iter().any(|k| w.value.eq_ignore_ascii_case(k)))
            })
            .map_or_else(String::new, |t| at(t.span))
    }

    /// ` at line L, column C` of the `CAST` keyword of `CAST(expr AS ...)`
    /// (the syntax tree places a CAST where its argument starts); empty
    /// when it cannot be told.
    pub(crate) fn cast_keyword(self, expr: &ast::Expr) -> String {
        use sqlparser::tokenizer::{Token, Tokenizer};
        // CASTs that start where this one's argument starts: `CAST(CAST(x`.
        let mut inner = 0;
        let mut e = expr;
        loop {
            e = match e {
                ast::Expr::Cast {
                    kind: ast::CastKind::Cast,
                    expr,
                    ..
                } => {
                    inner += 1;
                    expr
                }
                ast::Expr::Cast { expr, .. } | ast::Expr::Nested(expr) => expr,
                ast::Expr::BinaryOp { left, .. } => left,
                _ => break,
            };
        }
        let from = expr.span().start;
        let Ok(tokens) = Tokenizer::new(&GenericDialect {}, self.0).tokenize_with_location() else {
            return String::new();
        };
        let mut seen = 0;
        for t in tokens.iter().rev().filter(|t| t.span.start < from) {
            match &t.token {
                Token::Whitespace(_) | Token::LParen => {}
                Token::Word(w) if w.value.eq_ignore_ascii_case("CAST") => {
                    if seen == inner {
                        return at(t.span);
                    }
                    seen += 1;
                }
                _ => break,
            }
        }
        String::new()
    }

    /// ` at line L, column C` of the first word among `words`.
    pub(crate) fn first(self, words: &[&str]) -> String {
        self.word_at(sqlparser::tokenizer::Location::new(1, 1), words)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_strings_of_bytes_past_ascii_become_plain_strings() {
        let e = |sql: &str| escape_strings(sql).unwrap().into_owned();
        assert_eq!(e(r"SELECT E'\xC3\xA9'"), "SELECT 'é'");
        assert_eq!(
            e(r"SELECT e'\303\251x', E'it''s \xe2\x82\xac'"),
            "SELECT 'éx', 'it''s €'"
        );
        assert_eq!(e(r"SELECT E'\uD83D\uDE00\xC3\xA9\n'"), "SELECT '😀é\n'");
        // Left alone: escapes the parser reads itself, plain strings,
        // names, comments, dollar quotes, parameters, a letter E ending
        // a name.
        for same in [
            r"SELECT E'\x41\n\u00e9'",
            r"SELECT '\xC3' AS x",
            r#"SELECT "E'\xC3" FROM t"#,
            "SELECT 1 -- E'\\xC3'\n",
            "SELECT /* /* E'\\xC3' */ */ 1",
            r"SELECT $q$ E'\xC3' $q$",
            r"SELECT $1, col_e'x'",
        ] {
            assert_eq!(e(same), same);
        }
        // A comment's end and a quote's doubling end where they should:
        // the string after them is still read.
        assert_eq!(e("SELECT /* x */ E'\\xC3\\xA9'"), "SELECT /* x */ 'é'");
        assert_eq!(e(r"SELECT 'a''b', E'\xC3\xA9'"), "SELECT 'a''b', 'é'");
        for (bad, byte) in [
            (r"SELECT E'\xC3'", "0xc3"),
            (r"SELECT E'\xC3\x28'", "0xc3 0x28"),
            (r"SELECT E'\xED\xA0\x80'", "0xed 0xa0 0x80"),
            (r"SELECT E'\xC3\xA9\0'", "0x00"),
            (r"SELECT E'\x00'", "0x00"),
            (r"SELECT E'a\400'", "0x00"),
        ] {
            let err = escape_strings(bad).unwrap_err();
            assert!(
                matches!(&err, Error::Argument { state: "22021", message } if message.ends_with(byte)),
                "{bad}: {err}"
            );
        }
        let err = escape_strings(r"SELECT E'\u0000'").unwrap_err();
        assert!(
            matches!(&err, Error::Argument { state: "42601", message } if message == "invalid Unicode escape value"),
            "{err}"
        );
        for lone in [
            r"SELECT E'\uD83D'",
            r"SELECT E'\uDE00\uD83D'",
            r"SELECT E'\uD83Dx'",
        ] {
            let err = escape_strings(lone).unwrap_err();
            assert!(
                matches!(&err, Error::Argument { state: "42601", message } if message == "invalid Unicode surrogate pair"),
                "{lone}: {err}"
            );
        }
    }

    fn bound(sql: &str) -> usize {
        use sqlparser::tokenizer::Tokenizer;
        let tokens = Tokenizer::new(&GenericDialect {}, sql).tokenize().unwrap();
        depth_bound(tokens.iter())
    }

    /// How deep the parsed tree of `sql` really nests (expressions only).
    fn real_depth(sql: &str) -> usize {
        fn d(e: &ast::Expr) -> usize {
            use ast::Expr as E;
            1 + match e {
                E::BinaryOp { left, right, .. } => d(left).max(d(right)),
                E::Nested(x) | E::UnaryOp { expr: x, .. } | E::IsNull(x) => d(x),
                E::InList { expr, list, .. } => d(expr).max(list.iter().map(d).max().unwrap_or(0)),
                E::Case {
                    conditions,
                    else_result,
                    ..
                } => conditions
                    .iter()
                    .map(|c| d(&c.condition).max(d(&c.result)))
                    .chain(else_result.iter().map(|e| d(e)))
                    .max()
                    .unwrap_or(0),
                _ => 0,
            }
        }
        let ast::Statement::Query(q) = parse(sql).unwrap() else {
            panic!()
        };
        let ast::SetExpr::Select(s) = *q.body else {
            panic!()
        };
        let mut m = s.selection.as_ref().map_or(0, d);
        for item in &s.projection {
            if let ast::SelectItem::UnnamedExpr(e) = item {
                m = m.max(d(e));
            }
        }
        m
    }

    #[test]
    fn the_bound_is_never_below_the_real_depth() {
        let chain =
            |op: &str, n: usize| (0..n).map(|i| format!("a{i}")).collect::<Vec<_>>().join(op);
        let cases = [
            format!("SELECT {}", chain(" + ", 300)),
            format!("SELECT 1 FROM t WHERE {}", chain(" OR ", 300)),
            format!(
                "SELECT 1 FROM t WHERE x = 1 AND ({}) OR y",
                chain(" * ", 200)
            ),
            "SELECT ((((a)))) + (b * (c - (d / e)))".to_string(),
            "SELECT CASE WHEN a = 1 THEN b + c ELSE d * e * f END".to_string(),
            "SELECT a IS NULL, NOT NOT NOT b, -(-(-c))".to_string(),
            format!("SELECT x IN ({})", chain(", ", 1000)),
            format!("SELECT ({}) + ({})", chain(" - ", 50), chain(" || ", 80)),
        ];
        for sql in &cases {
            let (b, r) = (bound(sql), real_depth(sql));
            assert!(b + 1 >= r, "{sql}: bound {b} below depth {r}");
        }
    }

    #[test]
    fn lists_and_case_branches_count_little() {
        let list: Vec<String> = (0..100_000).map(|i| i.to_string()).collect();
        assert!(
            bound(&format!(
                "SELECT count(*) FROM t WHERE id IN ({})",
                list.join(", ")
            )) < 10
        );
        let whens: String = (0..5_000)
            .map(|i| format!(" WHEN a = {i} THEN 'v{i}'"))
            .collect();
        assert!(bound(&format!("SELECT CASE{whens} ELSE 'x' END FROM t")) < 10);
        let items: Vec<String> = (0..5_000).map(|i| format!("a + {i}")).collect();
        assert!(bound(&format!("SELECT {} FROM t", items.join(", "))) < 10);
    }

    #[test]
    fn deep_sql_is_refused_before_it_is_parsed() {
        let n = MAX_SQL_DEPTH + 10;
        for sql in [
            format!("SELECT {}", vec!["1"; n].join("+")),
            format!("SELECT 1 WHERE {}", vec!["true"; n].join(" OR ")),
            format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n)),
            format!("SELECT 1{}", "::int".repeat(n)),
        ] {
            let e = parse(&sql).unwrap_err();
            assert_eq!(e.sqlstate(), "54001", "{e}");
            assert!(
                e.to_string().starts_with("stack depth limit exceeded"),
                "{e}"
            );
        }
        // Parentheses deeper than the parser's own limit: 54001 too.
        let e = parse(&format!("SELECT {}1{}", "(".repeat(60), ")".repeat(60))).unwrap_err();
        assert_eq!(e.sqlstate(), "54001", "{e}");
        // Errors of the tokenizer read as before.
        let e = parse("SELECT 'open").unwrap_err();
        assert_eq!(e.sqlstate(), "42601", "{e}");
        assert!(e.to_string().contains("line 1"), "{e}");
    }

    /// The statement as the parser alone builds it (no list taken out).
    fn parsed_plainly(sql: &str) -> std::result::Result<ast::Statement, String> {
        Parser::new(&GenericDialect {})
            .try_with_sql(sql)
            .and_then(|mut p| p.parse_statement())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn literal_lists_parse_as_the_parser_parses_them() {
        let items = |n: usize| {
            (0..n)
                .map(|i| format!("{i}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        for sql in [
            format!("SELECT * FROM t WHERE a IN ({})", items(8)),
            format!(
                "SELECT * FROM t WHERE a NOT IN ({}) AND b IN ({})",
                items(9),
                items(20)
            ),
            "SELECT a IN ( -1, +2, 3.5, 1e3, 'x''y', NULL, -0, 7 ) FROM t".to_string(),
            format!("SELECT * FROM t WHERE a IN (/* c */ {} -- d\n)", items(10)),
            // Not all literals, or too short: left to the parser.
            format!("SELECT * FROM t WHERE a IN ({}, b)", items(10)),
            format!("SELECT * FROM t WHERE a IN ({}, 1::int)", items(10)),
            format!(
                "SELECT * FROM t WHERE a IN ({}, DATE '2020-01-01')",
                items(10)
            ),
            format!("SELECT * FROM t WHERE a IN ({})", items(3)),
            format!(
                "SELECT * FROM t WHERE a IN (SELECT b FROM u WHERE c IN ({}))",
                items(12)
            ),
            format!(
                "SELECT * FROM t WHERE a IN ({}) OR a IN ({})",
                items(8),
                items(8)
            ),
        ] {
            let fast = parse(&sql).map_err(|e| e.to_string());
            assert_eq!(fast.is_ok(), parsed_plainly(&sql).is_ok(), "{sql}");
            if let (Ok(f), Ok(p)) = (&fast, parsed_plainly(&sql)) {
                assert_eq!(f, &p, "{sql}");
                assert_eq!(f.to_string(), p.to_string(), "{sql}");
            }
        }
        // A list the fast path takes: no placeholder is left behind.
        let sql = format!("SELECT * FROM t WHERE a IN ({})", items(100));
        assert!(!parse(&sql).unwrap().to_string().contains('\u{1}'));
        // A list the parser makes no IN list of: read as the parser reads
        // it, no placeholder in what is said of it.
        let sql = format!("SELECT POSITION(1 IN ({})) FROM t", items(10));
        if let Ok(st) = parse(&sql) {
            assert_eq!(Ok(st), parsed_plainly(&sql));
        }
        let e = parse(&format!("SELECT POSITION(1 IN ({})) FROM", items(10))).unwrap_err();
        assert!(!e.to_string().contains('\u{1}'), "{e}");
        // Broken lists fail as before.
        for sql in [
            format!("SELECT * FROM t WHERE a IN ({},)", items(10)),
            format!("SELECT * FROM t WHERE a IN ({}", items(10)),
            format!("SELECT * FROM t WHERE a IN ({} 4)", items(10)),
        ] {
            assert!(parse(&sql).is_err(), "{sql}");
            assert!(parsed_plainly(&sql).is_err(), "{sql}");
        }
    }

    proptest::proptest! {
        /// Any list of literals, signs, comments and spaces after `IN (`:
        /// the same tree as the parser's own.
        #[test]
        fn any_literal_list_parses_as_the_parser_parses_it(
            items in proptest::collection::vec(
                proptest::prop_oneof![
                    // Mostly literals, so that most lists are taken.
                    8 => proptest::strategy::Strategy::boxed("-?[0-9]{1,5}(\\.[0-9]{0,3})?(e-?[0-9])?"),
                    2 => proptest::strategy::Strategy::boxed("\\+[0-9]{1,3}"),
                    4 => proptest::strategy::Strategy::boxed("'[a-z' ]{0,4}'"),
                    2 => proptest::strategy::Strategy::boxed(proptest::strategy::Just("NULL".to_string())),
                    1 => proptest::strategy::Strategy::boxed(proptest::strategy::Just("- 5".to_string())),
                    1 => proptest::strategy::Strategy::boxed(proptest::strategy::Just("/* x */ 1".to_string())),
                    1 => proptest::strategy::Strategy::boxed(proptest::strategy::Just("1 + 1".to_string())),
                    1 => proptest::strategy::Strategy::boxed(proptest::strategy::Just("x".to_string())),
                ],
                0..30,
            ),
            negated in proptest::bool::ANY,
        ) {
            let sql = format!(
                "SELECT * FROM t WHERE a {}IN ({})",
                if negated { "NOT " } else { "" },
                items.join(" ,\n ")
            );
            let fast = parse(&sql).map_err(|e| e.to_string());
            let plain = parsed_plainly(&sql);
            proptest::prop_assert_eq!(fast.is_ok(), plain.is_ok(), "{}", sql);
            if let (Ok(f), Ok(p)) = (fast, plain) {
                proptest::prop_assert_eq!(&f, &p, "{}", sql);
                proptest::prop_assert_eq!(f.to_string(), p.to_string(), "{}", sql);
            }
        }
    }
}
