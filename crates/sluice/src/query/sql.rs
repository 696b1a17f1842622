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

/// Parses one statement.
pub fn parse(sql: &str) -> Result<ast::Statement> {
    let mut stmts = Parser::parse_sql(&GenericDialect {}, sql)
        .map_err(|e| Error::Syntax(parser_message(&e.to_string())))?;
    match stmts.len() {
        0 => Err(Error::Syntax("empty query".into())),
        1 => Ok(stmts.remove(0)),
        n => Err(Error::Plan(format!(
            "expected one statement, got {n}{}",
            at(stmts[1].span())
        ))),
    }
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
/// that the syntax tree keeps no place for are (`INSERT`, `UNION`, `TOP`).
#[derive(Clone, Copy)]
pub(crate) struct Text<'a>(pub(crate) &'a str);

impl Text<'_> {
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
