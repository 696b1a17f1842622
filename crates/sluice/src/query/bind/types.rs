//! The type rules of binding: SQL type names, literals, the type values
//! meet in, and the implicit conversions made explicit as casts.
//!
//! For: [`common_type`], coercion, which CASTs are allowed, `DECIMAL(p,s)`
//! and other SQL type names, literal values. Not for: walking expressions
//! (the parent module) or evaluating casts ([`crate::query::expr`]).

use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray, new_null_array};
use arrow_schema::{DataType as A, TimeUnit};
use sqlparser::ast;

use crate::error::Result;
use crate::parse::value;
use crate::query::expr::{Expr, cast, type_name};
use crate::query::sql::{plan_err, unsupported};

/// A literal expression.
pub(crate) fn lit(a: ArrayRef) -> Expr {
    Expr::Literal(a)
}

/// INT, BIGINT, DOUBLE or DECIMAL.
pub(crate) fn is_numeric(t: &A) -> bool {
    matches!(t, A::Int32 | A::Int64 | A::Float64 | A::Decimal128(..))
}

/// The `Decimal128(38, s)` a DECIMAL (or an integer, at scale 0) is
/// evaluated as.
pub(crate) fn decimal_of(t: &A) -> A {
    match t {
        A::Decimal128(_, s) => A::Decimal128(38, *s),
        _ => A::Decimal128(38, 0),
    }
}

/// The type two values meet in: numbers widen (INT → BIGINT → DECIMAL →
/// DOUBLE; decimals to the larger scale), NULL takes the other side's type.
pub fn common_type(types: &[A]) -> Option<A> {
    let mut acc = A::Null;
    for t in types {
        acc = match (&acc, t) {
            (a, A::Null) => a.clone(),
            (A::Null, b) => b.clone(),
            (a, b) if a == b => a.clone(),
            (A::Float64, b) | (b, A::Float64) if is_numeric(b) => A::Float64,
            (A::Decimal128(_, s1), A::Decimal128(_, s2)) => A::Decimal128(38, (*s1).max(*s2)),
            (A::Decimal128(_, s), A::Int32 | A::Int64)
            | (A::Int32 | A::Int64, A::Decimal128(_, s)) => A::Decimal128(38, *s),
            (A::Int32 | A::Int64, A::Int32 | A::Int64) => A::Int64,
            // A TIMESTAMP (or DATE) meets an instant as a local time of
            // the instant's zone (the session's: see `Binder::zone`).
            (A::Timestamp(_, Some(z)), A::Timestamp(_, None) | A::Date32)
            | (A::Timestamp(_, None) | A::Date32, A::Timestamp(_, Some(z))) => {
                A::Timestamp(TimeUnit::Microsecond, Some(z.clone()))
            }
            (A::Date32, A::Timestamp(..)) | (A::Timestamp(..), A::Date32) => {
                A::Timestamp(TimeUnit::Microsecond, None)
            }
            _ => return None,
        };
    }
    Some(acc)
}

/// Values that meet in one type (CASE's results, COALESCE's, GREATEST's
/// and LEAST's arguments): a quoted literal among values of one other
/// type is read as that type, as PostgreSQL reads an unknown-typed
/// literal (`CASE … THEN TIME '12:00' ELSE '13:00' END`, `COALESCE(d,
/// '2024-01-01')`). `types` are updated; a literal that is not a value
/// of the type is an error. `written` are the expressions as written:
/// only a quoted string is unknown-typed (`CAST('7' AS TEXT)` is text).
pub(crate) fn literals_as_the_others(
    exprs: &mut [Expr],
    types: &mut [A],
    written: &[Option<&ast::Expr>],
    node: &ast::Expr,
) -> Result<()> {
    let unknown: Vec<bool> = exprs
        .iter()
        .enumerate()
        .map(|(i, e)| {
            matches!(e, Expr::Literal(a) if a.data_type() == &A::Utf8)
                && written.get(i).copied().flatten().is_some_and(quoted_string)
        })
        .collect();
    let others: Vec<A> = types
        .iter()
        .zip(&unknown)
        .filter(|(_, u)| !**u)
        .map(|(t, _)| t.clone())
        .collect();
    int4_literals(exprs, types, written);
    let Some(to) = common_type(&others).filter(|t| !matches!(t, A::Null | A::Utf8)) else {
        return Ok(());
    };
    for ((e, t), u) in exprs.iter_mut().zip(types.iter_mut()).zip(unknown) {
        if let (Expr::Literal(a), true) = (&*e, u) {
            // A decimal keeps the literal's places (`'7.555'` among
            // DECIMAL(10,2)s is 7.555, the result's scale 3).
            let want = super::unknown_as(a, &to);
            let read = cast(a, &want).map_err(|er| plan_err(er.to_string(), node))?;
            *e = lit(read);
            *t = want;
        }
    }
    Ok(())
}

/// An integer literal that fits INT is PostgreSQL's `int4`, where sluice
/// reads every integer literal as BIGINT: among INTs and such literals
/// only (CASE's results, COALESCE's, GREATEST's and LEAST's arguments),
/// they are INT, so `CASE WHEN x THEN 1 ELSE 0 END` and `COALESCE(i, 0)`
/// of an INT `i` are INT as there (and their sum a BIGINT). `types` are
/// updated.
fn int4_literals(exprs: &mut [Expr], types: &mut [A], written: &[Option<&ast::Expr>]) {
    fn written_int4(x: &ast::Expr) -> bool {
        match x {
            ast::Expr::Nested(inner) => written_int4(inner),
            ast::Expr::UnaryOp {
                op: ast::UnaryOperator::Minus | ast::UnaryOperator::Plus,
                expr,
            } => written_int4(expr),
            ast::Expr::Value(v) => {
                matches!(&v.value, ast::Value::Number(n, _) if n.parse::<i32>().is_ok())
            }
            _ => false,
        }
    }
    // -2147483648: the minus of a number one past INT's largest.
    fn written_int4_min(x: &ast::Expr) -> bool {
        match x {
            ast::Expr::Nested(inner) => written_int4_min(inner),
            ast::Expr::UnaryOp {
                op: ast::UnaryOperator::Minus,
                expr,
            } => {
                matches!(expr.as_ref(), ast::Expr::Value(v) if matches!(&v.value, ast::Value::Number(n, _) if n == "2147483648"))
            }
            _ => false,
        }
    }
    let small: Vec<bool> = exprs
        .iter()
        .enumerate()
        .map(|(i, e)| {
            matches!(e, Expr::Literal(a) if a.data_type() == &A::Int64 && a.len() == 1)
                && written
                    .get(i)
                    .copied()
                    .flatten()
                    .is_some_and(|w| written_int4(w) || written_int4_min(w))
        })
        .collect();
    let all_int = types
        .iter()
        .zip(&small)
        .all(|(t, s)| *s || matches!(t, A::Int32 | A::Null));
    if !all_int || !small.contains(&true) {
        return;
    }
    for ((e, t), s) in exprs.iter_mut().zip(types.iter_mut()).zip(small) {
        if let (Expr::Literal(a), true) = (&*e, s)
            && let Ok(c) = cast(a, &A::Int32)
        {
            *e = lit(c);
            *t = A::Int32;
        }
    }
}

/// Whether `x` is a quoted string as written (in parentheses too): a
/// literal of PostgreSQL's unknown type.
pub(crate) fn quoted_string(x: &ast::Expr) -> bool {
    match x {
        ast::Expr::Nested(inner) => quoted_string(inner),
        ast::Expr::Value(v) => matches!(
            v.value,
            ast::Value::SingleQuotedString(_)
                | ast::Value::EscapedStringLiteral(_)
                | ast::Value::DollarQuotedString(_)
        ),
        _ => false,
    }
}

/// Wraps `e` (of type `from`) in a cast to `to` when they differ; literals
/// are cast at once.
pub(crate) fn coerce(e: Expr, from: &A, to: &A) -> Expr {
    if from == to {
        return e;
    }
    if let Expr::Literal(a) = &e
        && let Ok(c) = cast(a, to)
    {
        return lit(c);
    }
    Expr::Cast {
        expr: Box::new(e),
        to: to.clone(),
        site: None,
    }
}

/// The precision a DECIMAL type was written with.
pub(crate) fn decimal_precision(t: &ast::DataType) -> Option<u8> {
    match t {
        ast::DataType::Decimal(info) | ast::DataType::Numeric(info) => match info {
            ast::ExactNumberInfo::Precision(p) | ast::ExactNumberInfo::PrecisionAndScale(p, _) => {
                u8::try_from(*p).ok()
            }
            ast::ExactNumberInfo::None => None,
        },
        _ => None,
    }
}

/// Whether an explicit CAST from `from` to `to` (written `to_text`) is
/// allowed; the error message when not.
pub(crate) fn check_cast(from: &A, to: &A, to_text: &str) -> std::result::Result<(), String> {
    let ok = from == to
        || *from == A::Null
        || *from == A::Utf8
        || *to == A::Utf8
        || (is_numeric(from) && is_numeric(to))
        || matches!(
            (from, to),
            (A::Date32, A::Timestamp(..))
                | (A::Timestamp(..), A::Date32)
                | (A::Timestamp(..), A::Timestamp(..))
                | (A::Timestamp(..), A::Time64(_))
                | (A::Time64(_), A::Interval(_))
                | (A::Interval(_), A::Time64(_))
                // PostgreSQL casts a boolean to and from INT only.
                | (A::Boolean, A::Int32)
                | (A::Int32, A::Boolean)
        );
    if ok {
        Ok(())
    } else {
        Err(format!("cannot cast {} to {to_text}", type_name(from)))
    }
}

/// SQL type names in CAST and typed literals.
pub(crate) fn sql_type(t: &ast::DataType, node: &ast::Expr) -> Result<A> {
    use ast::DataType as D;
    Ok(match t {
        D::Boolean | D::Bool => A::Boolean,
        D::Int(_) | D::Integer(_) | D::Int4(_) => A::Int32,
        D::BigInt(_) | D::Int8(_) => A::Int64,
        D::Double(_) | D::DoublePrecision | D::Float(_) | D::Float8 | D::Real => A::Float64,
        D::Decimal(info) | D::Numeric(info) => match info {
            ast::ExactNumberInfo::None => A::Decimal128(38, 0),
            ast::ExactNumberInfo::Precision(p) => {
                if *p == 0 || *p > 38 {
                    return Err(plan_err(
                        format!("DECIMAL precision {p} is out of range"),
                        node,
                    ));
                }
                A::Decimal128(38, 0)
            }
            ast::ExactNumberInfo::PrecisionAndScale(p, s) => {
                if *p == 0 || *p > 38 || *s < 0 || *s as u64 > *p {
                    return Err(plan_err(format!("DECIMAL({p},{s}) is out of range"), node));
                }
                A::Decimal128(38, *s as i8)
            }
        },
        D::Date => A::Date32,
        D::Interval {
            fields: None,
            precision: None,
        } => crate::query::interval::TYPE,
        D::Interval { .. } => {
            return Err(unsupported(
                "an INTERVAL type with fields or a precision (INTERVAL HOUR, INTERVAL(2))",
                node,
            ));
        }
        // An instant's type; the binder gives it the session's zone.
        D::Timestamp(_, ast::TimezoneInfo::WithTimeZone | ast::TimezoneInfo::Tz) => {
            A::Timestamp(TimeUnit::Microsecond, Some(crate::batch::UTC_ZONE.into()))
        }
        D::Timestamp(_, _) | D::Datetime(_) => A::Timestamp(TimeUnit::Microsecond, None),
        D::Time(_, ast::TimezoneInfo::None | ast::TimezoneInfo::WithoutTimeZone) => {
            A::Time64(TimeUnit::Microsecond)
        }
        D::Text
        | D::Varchar(_)
        | D::Char(_)
        | D::String(_)
        | D::CharVarying(_)
        | D::Character(_)
        | D::CharacterVarying(_) => A::Utf8,
        other => return Err(unsupported(&format!("the type {other}"), node)),
    })
}

/// A SQL literal as a one-row Arrow literal: integers as BIGINT, other
/// numbers written without an exponent as exact DECIMALs, the rest as
/// DOUBLE.
pub(crate) fn literal(v: &ast::Value, node: &ast::Expr) -> Result<Expr> {
    Ok(lit(match v {
        ast::Value::Number(n, _) => {
            if let Ok(i) = n.parse::<i64>() {
                Arc::new(Int64Array::from(vec![i]))
            } else if !n.contains(['e', 'E']) {
                let scale = n.split_once('.').map_or(0, |(_, f)| f.len());
                if scale > 38 {
                    return Err(plan_err(
                        format!("numeric literal {n} has too many decimals"),
                        node,
                    ));
                }
                let digits: String = n.chars().filter(|c| c.is_ascii_digit()).collect();
                let v: i128 = digits
                    .parse()
                    .map_err(|_| plan_err(format!("numeric literal {n} is out of range"), node))?;
                Arc::new(
                    arrow_array::Decimal128Array::from(vec![v])
                        .with_precision_and_scale(38, scale as i8)
                        .map_err(|e| plan_err(e.to_string(), node))?,
                )
            } else {
                let f = value::parse_f64(n.as_bytes())
                    .map_err(|m| plan_err(format!("{n}: {m}"), node))?;
                Arc::new(Float64Array::from(vec![f]))
            }
        }
        ast::Value::SingleQuotedString(s) => Arc::new(StringArray::from(vec![s.clone()])),
        ast::Value::Boolean(b) => Arc::new(BooleanArray::from(vec![*b])),
        ast::Value::Null => new_null_array(&A::Null, 1),
        other => return Err(unsupported(&format!("the literal {other}"), node)),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_types_widen_numbers_and_take_nulls() {
        let ct = |t: &[A]| common_type(t);
        assert_eq!(ct(&[A::Int32, A::Int64]), Some(A::Int64));
        assert_eq!(ct(&[A::Null, A::Utf8]), Some(A::Utf8));
        assert_eq!(
            ct(&[A::Decimal128(38, 2), A::Decimal128(38, 4), A::Int32]),
            Some(A::Decimal128(38, 4))
        );
        assert_eq!(ct(&[A::Decimal128(38, 2), A::Float64]), Some(A::Float64));
        assert_eq!(
            ct(&[A::Date32, A::Timestamp(TimeUnit::Microsecond, None)]),
            Some(A::Timestamp(TimeUnit::Microsecond, None))
        );
        assert_eq!(ct(&[A::Utf8, A::Int64]), None);
        assert_eq!(ct(&[]), Some(A::Null));
    }

    #[test]
    fn casts_allowed_between_numbers_and_from_text() {
        assert!(check_cast(&A::Utf8, &A::Date32, "DATE").is_ok());
        assert!(check_cast(&A::Int32, &A::Decimal128(38, 2), "DECIMAL(10,2)").is_ok());
        assert_eq!(
            check_cast(&A::Date32, &A::Int64, "BIGINT").unwrap_err(),
            "cannot cast DATE to BIGINT"
        );
    }
}
