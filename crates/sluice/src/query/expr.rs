//! Typed scalar expressions, evaluated a whole Arrow array at a time.
//!
//! The binder ([`super::bind`]) turns SQL into an [`Expr`] with every type
//! known and every implicit conversion made explicit as a [`Expr::Cast`],
//! so evaluation never guesses. Arithmetic is checked: an overflow is an
//! error, never a wrapped value. Decimals are evaluated as
//! `Decimal128(38, s)` so that products of DECIMAL(15,2) columns stay exact.

use std::fmt;
use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Int64Builder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, BooleanArray, Datum, RecordBatch, Scalar, new_null_array};
use arrow_schema::{DataType as A, TimeUnit};
use chrono::{Datelike, Months, NaiveDate};

pub use super::like::LikePattern;
use crate::error::{Error, Result};
use crate::parse::value;

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    And,
    Or,
}

impl BinOp {
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq
        )
    }

    pub fn is_arithmetic(self) -> bool {
        matches!(self, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div)
    }

    fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Eq => "=",
            BinOp::NotEq => "<>",
            BinOp::Lt => "<",
            BinOp::LtEq => "<=",
            BinOp::Gt => ">",
            BinOp::GtEq => ">=",
            BinOp::And => "AND",
            BinOp::Or => "OR",
        }
    }
}

/// Parts of a date that EXTRACT knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatePart {
    Year,
    Month,
    Day,
    /// Of a TIMESTAMP; 0 for a DATE, as in PostgreSQL.
    Hour,
    Minute,
}

/// A bound, typed expression.
#[derive(Debug, Clone)]
pub enum Expr {
    /// Column `index` of the input batch.
    Column {
        index: usize,
        name: String,
    },
    /// A constant: a one-row array (NULL is a one-row null array).
    Literal(ArrayRef),
    Binary {
        op: BinOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Not(Box<Expr>),
    Neg(Box<Expr>),
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
        /// The list's values as a set, built once at the first evaluation
        /// when every item is a literal (shared by the plan's clones).
        set: InSet,
    },
    /// `x [NOT] IN (v1, v2, …)` of a long list of literals, kept as one
    /// array of the list's type in the order written (see
    /// `Binder::literal_in_list`): a 100,000-value list is one array to
    /// clone, print and hash, not 100,000 expressions.
    InValues {
        expr: Box<Expr>,
        values: ArrayRef,
        negated: bool,
        set: InSet,
    },
    /// `x` may be among a runtime filter's keys: false where a Bloom
    /// filter of them says surely not (made under a memory limit that
    /// their exact set does not fit; see [`super::bloom`]). Only the
    /// join's runtime filters make it, at run time.
    Bloom {
        expr: Box<Expr>,
        filter: super::bloom::Shared,
    },
    /// A scalar function of [`super::func`], its arguments already of the
    /// types it takes; `ty`: its result's type.
    Call {
        func: super::func::Func,
        args: Vec<Expr>,
        ty: A,
    },
    Like {
        expr: Box<Expr>,
        pattern: String,
        negated: bool,
        case_insensitive: bool,
    },
    Case {
        whens: Vec<(Expr, Expr)>,
        otherwise: Box<Expr>,
    },
    Cast {
        expr: Box<Expr>,
        to: A,
        /// Where the query wrote this CAST (`None`: an implicit conversion).
        site: Option<Arc<CastSite>>,
    },
    Extract {
        part: DatePart,
        expr: Box<Expr>,
    },
    /// SUBSTRING(expr FROM start FOR len), 1-based, in characters.
    Substring {
        expr: Box<Expr>,
        start: Box<Expr>,
        len: Option<Box<Expr>>,
    },
    /// DATE ± a number of months (INTERVAL 'n' MONTH/YEAR).
    AddMonths {
        expr: Box<Expr>,
        months: i32,
    },
    /// DATE ± a number of days (INTERVAL 'n' DAY).
    AddDays {
        expr: Box<Expr>,
        days: i32,
    },
    Upper(Box<Expr>),
    Lower(Box<Expr>),
    Length(Box<Expr>),
    Abs(Box<Expr>),
    Coalesce(Vec<Expr>),
    /// A subquery that reads nothing of the outer query and gives one
    /// value: run once before the query that holds it (an "init plan"),
    /// which then reads it as a literal (see
    /// [`crate::query::subquery::resolve`]).
    Subquery(Arc<ScalarSubquery>),
    /// A window function call while its query is planned: the planner
    /// replaces it by the column of the window operator's output that
    /// holds its values (see [`crate::query::plan::window`]); never
    /// evaluated.
    Window(Arc<WindowRef>),
}

/// A window function call of a select list, by its place among the
/// query's window calls.
#[derive(Debug)]
pub struct WindowRef {
    pub index: usize,
    pub data_type: A,
    /// The call as written, for errors and EXPLAIN.
    pub text: String,
}

/// An uncorrelated scalar subquery of an expression.
#[derive(Debug)]
pub struct ScalarSubquery {
    pub plan: crate::query::plan::Plan,
    /// The subquery of `x [NOT] IN (SELECT …)` (the one item of an
    /// `Expr::InList`): all its rows are the list, not one value.
    pub list: bool,
    /// Its value's type (its one column's).
    pub data_type: A,
    /// The subquery as written, for EXPLAIN.
    pub text: String,
}

/// An explicit `CAST` as the query wrote it: its errors name the type as
/// written (`DECIMAL(10,2)`, evaluated as `DECIMAL(38,2)`) and where the
/// CAST is, and the written precision is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CastSite {
    /// The target type as written, e.g. `DECIMAL(10,2)`.
    pub type_text: String,
    /// Digits a DECIMAL(p,s) target allows in all (`None`: not a DECIMAL).
    pub precision: Option<u8>,
    /// ` at line L, column C`, or empty when unknown.
    pub at: String,
}

/// A value during evaluation: a whole column, or one value for every row.
pub enum Value {
    Array(ArrayRef),
    Scalar(ArrayRef),
}

impl Value {
    pub fn into_array(self, rows: usize) -> Result<ArrayRef> {
        match self {
            Value::Array(a) => Ok(a),
            Value::Scalar(s) => repeat(&s, rows),
        }
    }

    fn datum(&self) -> Box<dyn Datum + '_> {
        match self {
            Value::Array(a) => Box::new(a.as_ref()),
            Value::Scalar(s) => Box::new(Scalar::new(s.clone())),
        }
    }

    /// The value as an array of `rows` rows (a scalar repeated).
    fn as_rows(&self, rows: usize) -> Result<ArrayRef> {
        match self {
            Value::Array(a) => Ok(a.clone()),
            Value::Scalar(s) if rows == 1 => Ok(s.clone()),
            Value::Scalar(s) => repeat(s, rows),
        }
    }

    fn is_scalar(&self) -> bool {
        matches!(self, Value::Scalar(_))
    }
}

/// Repeats a one-row array `rows` times.
fn repeat(one: &ArrayRef, rows: usize) -> Result<ArrayRef> {
    if one.is_null(0) {
        return Ok(new_null_array(one.data_type(), rows));
    }
    let idx = arrow_array::UInt32Array::from(vec![0u32; rows]);
    Ok(arrow_select::take::take(one.as_ref(), &idx, None)?)
}

/// Text as a DECIMAL(`precision`, `scale`) of up to 38 digits: sign,
/// digits, a point, an exponent (`1.5e-3`); exact at the scale (digits
/// beyond it must be zeros: never rounded) or an error saying why.
pub(crate) fn wide_decimal(
    text: &str,
    precision: u8,
    scale: i8,
) -> std::result::Result<i128, String> {
    let t = text.trim();
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (mantissa, exp) = match body.find(['e', 'E']) {
        Some(i) => match body[i + 1..].parse::<i32>() {
            Ok(x) if x.abs() <= 1000 => (&body[..i], x),
            _ => return Err("not a decimal number".into()),
        },
        None => (body, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if (int_part.is_empty() && frac_part.is_empty())
        || !int_part
            .bytes()
            .chain(frac_part.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return Err("not a decimal number".into());
    }
    // The digits and where the point goes among them.
    let digits: Vec<u8> = int_part
        .bytes()
        .chain(frac_part.bytes())
        .map(|b| b - b'0')
        .collect();
    let point = int_part.len() as i64 + i64::from(exp);
    let scale = i64::from(scale.max(0));
    // Digits past the scale must be zeros.
    let kept = (point + scale).clamp(0, digits.len() as i64) as usize;
    if digits[kept..].iter().any(|&d| d != 0) {
        let places = digits.len() as i64 - point;
        return Err(format!(
            "has {places} decimal places, more than the scale {scale} (values are never rounded)"
        ));
    }
    let int_digits = digits[..point.clamp(0, digits.len() as i64) as usize]
        .iter()
        .skip_while(|&&d| d == 0)
        .count() as i64
        + (point - digits.len() as i64).max(0) * i64::from(digits.iter().any(|&d| d != 0));
    let max_int = i64::from(precision) - scale;
    if int_digits > max_int.max(0) {
        return Err(format!(
            "out of range for DECIMAL({precision},{scale}) (at most {} digits before the point)",
            max_int.max(0)
        ));
    }
    let mut v: i128 = 0;
    for &d in &digits[..kept] {
        v = v * 10 + i128::from(d);
    }
    // Zeros the exponent or the scale adds after the digits.
    for _ in 0..(point + scale - kept as i64).max(0) {
        v *= 10;
    }
    Ok(if neg { -v } else { v })
}

pub(crate) fn exec_err(e: arrow_schema::ArrowError) -> Error {
    match e {
        arrow_schema::ArrowError::DivideByZero => Error::DivisionByZero,
        arrow_schema::ArrowError::ArithmeticOverflow(m) => {
            Error::OutOfRange(format!("numeric overflow: {m}"))
        }
        arrow_schema::ArrowError::ComputeError(m)
            if m.contains("Overflow") || m.contains("overflow") =>
        {
            Error::OutOfRange(format!("numeric overflow: {m}"))
        }
        other => Error::Exec(other.to_string()),
    }
}

impl Expr {
    /// Whether evaluating this expression can never fail on a row (no
    /// arithmetic, casts or functions that can overflow or divide by
    /// zero): comparisons of columns and literals, AND/OR/NOT, IS NULL,
    /// IN lists and LIKE. Conservative: `false` when unsure.
    pub fn cannot_fail(&self) -> bool {
        match self {
            Expr::Column { .. } | Expr::Literal(_) => true,
            Expr::Binary { op, left, right } => {
                (op.is_comparison() || matches!(op, BinOp::And | BinOp::Or))
                    && left.cannot_fail()
                    && right.cannot_fail()
            }
            Expr::Not(e) => e.cannot_fail(),
            Expr::IsNull { expr, .. } => expr.cannot_fail(),
            Expr::InList { expr, list, .. } => {
                expr.cannot_fail() && list.iter().all(Expr::cannot_fail)
            }
            Expr::InValues { expr, .. } | Expr::Bloom { expr, .. } => expr.cannot_fail(),
            Expr::Like { expr, .. } => expr.cannot_fail(),
            _ => false,
        }
    }

    /// Calls `f` on every direct child.
    pub(crate) fn children_mut(&mut self, f: &mut dyn FnMut(&mut Expr)) {
        match self {
            Expr::Column { .. } | Expr::Literal(_) | Expr::Subquery(_) | Expr::Window(_) => {}
            Expr::Binary { left, right, .. } => {
                f(left);
                f(right);
            }
            Expr::Not(e)
            | Expr::Neg(e)
            | Expr::Abs(e)
            | Expr::Upper(e)
            | Expr::Lower(e)
            | Expr::Length(e)
            | Expr::IsNull { expr: e, .. }
            | Expr::Like { expr: e, .. }
            | Expr::Cast { expr: e, .. }
            | Expr::Extract { expr: e, .. }
            | Expr::AddMonths { expr: e, .. }
            | Expr::AddDays { expr: e, .. }
            | Expr::InValues { expr: e, .. }
            | Expr::Bloom { expr: e, .. } => f(e),
            Expr::InList { expr, list, .. } => {
                f(expr);
                list.iter_mut().for_each(f);
            }
            Expr::Case { whens, otherwise } => {
                for (c, t) in whens {
                    f(c);
                    f(t);
                }
                f(otherwise);
            }
            Expr::Substring { expr, start, len } => {
                f(expr);
                f(start);
                if let Some(l) = len {
                    f(l);
                }
            }
            Expr::Coalesce(list) | Expr::Call { args: list, .. } => list.iter_mut().for_each(f),
        }
    }

    /// Marks the input columns this expression reads.
    pub fn mark_columns(&self, used: &mut [bool]) {
        let mut e = self.clone();
        e.remap_columns(&mut |i| {
            if let Some(u) = used.get_mut(i) {
                *u = true;
            }
            i
        });
    }

    /// Renumbers input columns (projection pushdown).
    pub fn remap_columns(&mut self, map: &mut dyn FnMut(usize) -> usize) {
        if let Expr::Column { index, .. } = self {
            *index = map(*index);
            return;
        }
        self.children_mut(&mut |c| c.remap_columns(map));
    }

    /// The Arrow type this expression produces over `input`.
    pub fn data_type(&self, input: &[A]) -> A {
        match self {
            Expr::Column { index, .. } => eval_type(&input[*index]),
            Expr::Literal(a) => a.data_type().clone(),
            Expr::Binary { op, left, right } => {
                if op.is_arithmetic() {
                    arith_type(*op, &left.data_type(input), &right.data_type(input))
                        .unwrap_or(A::Null)
                } else {
                    A::Boolean
                }
            }
            Expr::Not(_)
            | Expr::IsNull { .. }
            | Expr::InList { .. }
            | Expr::InValues { .. }
            | Expr::Bloom { .. }
            | Expr::Like { .. } => A::Boolean,
            Expr::Neg(e) | Expr::Abs(e) => e.data_type(input),
            Expr::Case { whens, otherwise } => {
                let t = otherwise.data_type(input);
                if t == A::Null {
                    whens.first().map_or(A::Null, |w| w.1.data_type(input))
                } else {
                    t
                }
            }
            Expr::Cast { to, .. } => to.clone(),
            Expr::Extract { .. } | Expr::Length(_) => A::Int64,
            Expr::Substring { .. } | Expr::Upper(_) | Expr::Lower(_) => A::Utf8,
            Expr::AddMonths { expr, .. } | Expr::AddDays { expr, .. } => expr.data_type(input),
            Expr::Coalesce(list) => list
                .iter()
                .map(|e| e.data_type(input))
                .find(|t| *t != A::Null)
                .unwrap_or(A::Null),
            Expr::Subquery(s) => s.data_type.clone(),
            Expr::Window(w) => w.data_type.clone(),
            Expr::Call { ty, .. } => ty.clone(),
        }
    }

    /// Evaluates over a batch.
    pub fn eval(&self, batch: &RecordBatch) -> Result<Value> {
        let rows = batch.num_rows();
        Ok(match self {
            Expr::Column { index, .. } => Value::Array(widen(batch.column(*index))),
            Expr::Literal(a) => Value::Scalar(a.clone()),
            Expr::Binary { op, left, right } => {
                if op.is_comparison()
                    && let Some(m) = compare_stored(*op, left, right, batch)?
                {
                    return Ok(Value::Array(m));
                }
                let l = left.eval(batch)?;
                let r = match right.eval(batch) {
                    Ok(r) => r,
                    // `x > 0 AND ln(x) > 1`: the right side failed on some
                    // row; again, only where the left leaves the answer
                    // open, as PostgreSQL stops at a false (AND) or true
                    // (OR) left side.
                    Err(_) if matches!(op, BinOp::And | BinOp::Or) && rows > 0 => {
                        return Ok(Value::Array(Arc::new(and_or_lazily(
                            *op == BinOp::Or,
                            left,
                            right,
                            batch,
                        )?)));
                    }
                    Err(e) => return Err(e),
                };
                let scalar = l.is_scalar() && r.is_scalar();
                // Doubles compare as SQL says, not by their bits.
                let (l, r) = if op.is_comparison() {
                    (canonical_value(l), canonical_value(r))
                } else {
                    (l, r)
                };
                let out: ArrayRef = match op {
                    BinOp::Add => checked_float(
                        arrow_arith::numeric::add(&*l.datum(), &*r.datum()).map_err(exec_err)?,
                        &l,
                        &r,
                    )?,
                    BinOp::Sub => checked_float(
                        arrow_arith::numeric::sub(&*l.datum(), &*r.datum()).map_err(exec_err)?,
                        &l,
                        &r,
                    )?,
                    BinOp::Mul => checked_float(
                        arrow_arith::numeric::mul(&*l.datum(), &*r.datum()).map_err(exec_err)?,
                        &l,
                        &r,
                    )?,
                    BinOp::Div => {
                        checked_float(divide(&l, &r, if scalar { 1 } else { rows })?, &l, &r)?
                    }
                    BinOp::Eq => {
                        Arc::new(arrow_ord::cmp::eq(&*l.datum(), &*r.datum()).map_err(exec_err)?)
                    }
                    BinOp::NotEq => {
                        Arc::new(arrow_ord::cmp::neq(&*l.datum(), &*r.datum()).map_err(exec_err)?)
                    }
                    BinOp::Lt => {
                        Arc::new(arrow_ord::cmp::lt(&*l.datum(), &*r.datum()).map_err(exec_err)?)
                    }
                    BinOp::LtEq => {
                        Arc::new(arrow_ord::cmp::lt_eq(&*l.datum(), &*r.datum()).map_err(exec_err)?)
                    }
                    BinOp::Gt => {
                        Arc::new(arrow_ord::cmp::gt(&*l.datum(), &*r.datum()).map_err(exec_err)?)
                    }
                    BinOp::GtEq => {
                        Arc::new(arrow_ord::cmp::gt_eq(&*l.datum(), &*r.datum()).map_err(exec_err)?)
                    }
                    BinOp::And | BinOp::Or => {
                        let n = if scalar { 1 } else { rows };
                        let la = bool_array(l, n)?;
                        let ra = bool_array(r, n)?;
                        let f = if *op == BinOp::And {
                            arrow_arith::boolean::and_kleene
                        } else {
                            arrow_arith::boolean::or_kleene
                        };
                        Arc::new(f(&la, &ra).map_err(exec_err)?)
                    }
                };
                if scalar {
                    Value::Scalar(out)
                } else {
                    Value::Array(out)
                }
            }
            Expr::Not(e) => map_value(e.eval(batch)?, |a| {
                Ok(Arc::new(
                    arrow_arith::boolean::not(a.as_boolean()).map_err(exec_err)?,
                ))
            })?,
            Expr::Neg(e) => map_value(e.eval(batch)?, |a| {
                arrow_arith::numeric::neg(a.as_ref()).map_err(exec_err)
            })?,
            Expr::Abs(e) => map_value(e.eval(batch)?, abs)?,
            Expr::IsNull { expr, negated } => {
                let negated = *negated;
                map_value(expr.eval(batch)?, move |a| {
                    let r = if negated {
                        arrow_arith::boolean::is_not_null(a.as_ref())
                    } else {
                        arrow_arith::boolean::is_null(a.as_ref())
                    };
                    Ok(Arc::new(r.map_err(exec_err)?))
                })?
            }
            Expr::InList {
                expr,
                list,
                negated,
                set,
            } => not_if(in_list(expr.eval(batch)?, list, set, batch)?, *negated)?,
            Expr::InValues {
                expr,
                values,
                negated,
                set,
            } => not_if(in_values(expr.eval(batch)?, values, set, batch)?, *negated)?,
            Expr::Bloom { expr, filter } => match expr.eval(batch)? {
                Value::Array(a) => Value::Array(Arc::new(filter.probe(a.as_ref()))),
                Value::Scalar(a) => Value::Scalar(Arc::new(filter.probe(a.as_ref()))),
            },
            Expr::Like {
                expr,
                pattern,
                negated,
                case_insensitive,
            } => {
                let matcher = LikePattern::new(pattern, *case_insensitive);
                let negated = *negated;
                map_value(expr.eval(batch)?, move |a| {
                    // A dictionary-encoded column: its values matched once
                    // each, the keys mapped to their answers.
                    if let Some(d) = text_dictionary(&a) {
                        let m = matcher.eval(d.values().as_string::<i32>(), negated);
                        return arrow_select::take::take(&m, d.keys(), None).map_err(exec_err);
                    }
                    Ok(Arc::new(matcher.eval(a.as_string::<i32>(), negated)))
                })?
            }
            Expr::Case { whens, otherwise } => {
                // Every branch on every row; if one fails (`CASE WHEN b = 0
                // THEN 0 ELSE 100 / b END` where b is 0), again with each
                // branch on the rows that reach it only, as in PostgreSQL.
                let eager = || -> Result<ArrayRef> {
                    let mut result = otherwise.eval(batch)?.into_array(rows)?;
                    for (cond, then) in whens.iter().rev() {
                        let c = bool_array(cond.eval(batch)?, rows)?;
                        let c = if c.null_count() > 0 {
                            arrow_select::filter::prep_null_mask_filter(&c)
                        } else {
                            c
                        };
                        let t = then.eval(batch)?.into_array(rows)?;
                        result = arrow_select::zip::zip(&c, &t.as_ref(), &result.as_ref())
                            .map_err(exec_err)?;
                    }
                    Ok(result)
                };
                match eager() {
                    Ok(r) => Value::Array(r),
                    Err(_) if rows > 0 && !whens.is_empty() => {
                        let types: Vec<A> = batch
                            .schema()
                            .fields()
                            .iter()
                            .map(|f| f.data_type().clone())
                            .collect();
                        let ty = self.data_type(&types);
                        Value::Array(case_lazily(whens, otherwise, batch, &ty)?)
                    }
                    Err(e) => return Err(e),
                }
            }
            Expr::Cast { expr, to, site } => {
                map_value(expr.eval(batch)?, |a| cast_at(&a, to, site.as_deref()))?
            }
            Expr::Extract { part, expr } => {
                let part = *part;
                map_value(expr.eval(batch)?, move |a| extract(&a, part))?
            }
            Expr::Substring { expr, start, len } => {
                let s = expr.eval(batch)?.into_array(rows)?;
                let st = start.eval(batch)?.into_array(rows)?;
                let ln = match len {
                    Some(l) => Some(l.eval(batch)?.into_array(rows)?),
                    None => None,
                };
                Value::Array(substring(&s, &st, ln.as_ref())?)
            }
            Expr::AddMonths { expr, months } => {
                let m = *months;
                map_value(expr.eval(batch)?, move |a| add_months(&a, m))?
            }
            Expr::AddDays { expr, days } => {
                let d = *days;
                map_value(expr.eval(batch)?, move |a| {
                    let dates = a.as_primitive::<Date32Type>();
                    let out: arrow_array::Date32Array = dates
                        .iter()
                        .map(|v| {
                            v.map(|v| {
                                v.checked_add(d)
                                    .ok_or_else(|| Error::OutOfRange("date out of range".into()))
                            })
                            .transpose()
                        })
                        .collect::<Result<_>>()?;
                    Ok(Arc::new(out))
                })?
            }
            Expr::Upper(e) => map_value(e.eval(batch)?, |a| {
                let out: arrow_array::StringArray = a
                    .as_string::<i32>()
                    .iter()
                    .map(|v| v.map(|v| v.chars().map(super::func::upper_char).collect::<String>()))
                    .collect();
                Ok(Arc::new(out))
            })?,
            Expr::Lower(e) => map_value(e.eval(batch)?, |a| {
                let out: arrow_array::StringArray = a
                    .as_string::<i32>()
                    .iter()
                    .map(|v| v.map(|v| v.chars().map(super::func::lower_char).collect::<String>()))
                    .collect();
                Ok(Arc::new(out))
            })?,
            Expr::Length(e) => map_value(e.eval(batch)?, |a| {
                let out: arrow_array::Int64Array = a
                    .as_string::<i32>()
                    .iter()
                    .map(|v| v.map(|v| v.chars().count() as i64))
                    .collect();
                Ok(Arc::new(out))
            })?,
            Expr::Subquery(s) => {
                return Err(Error::Internal(format!(
                    "the subquery {} was not run before its query",
                    s.text
                )));
            }
            Expr::Window(w) => {
                return Err(Error::Internal(format!(
                    "the window call {} was not planned",
                    w.text
                )));
            }
            Expr::Coalesce(list) => {
                let mut result: Option<ArrayRef> = None;
                for e in list.iter().rev() {
                    let v = e.eval(batch)?.into_array(rows)?;
                    result = Some(match result {
                        None => v,
                        Some(r) => {
                            let present =
                                arrow_arith::boolean::is_not_null(v.as_ref()).map_err(exec_err)?;
                            arrow_select::zip::zip(&present, &v.as_ref(), &r.as_ref())
                                .map_err(exec_err)?
                        }
                    });
                }
                Value::Array(result.ok_or_else(|| Error::Internal("empty COALESCE".into()))?)
            }
            Expr::Call { func, args, ty } => {
                // Doubles as they are: sqrt(-0.0) is -0.0 (GREATEST and
                // LEAST compare them as SQL does).
                let vals = args
                    .iter()
                    .map(|a| a.eval(batch))
                    .collect::<Result<Vec<_>>>()?;
                // Literals only: one row, a literal's answer.
                if vals.iter().all(Value::is_scalar) {
                    let arrays = vals
                        .into_iter()
                        .map(|v| v.into_array(1))
                        .collect::<Result<Vec<_>>>()?;
                    Value::Scalar(super::func::eval(*func, &arrays, 1, ty)?)
                } else {
                    let arrays = vals
                        .into_iter()
                        .map(|v| v.into_array(rows))
                        .collect::<Result<Vec<_>>>()?;
                    Value::Array(super::func::eval(*func, &arrays, rows, ty)?)
                }
            }
        })
    }
}

/// The rows `idx` of `batch` (a batch of no columns keeps its count).
fn rows_of(batch: &RecordBatch, idx: &[u32]) -> Result<RecordBatch> {
    let ix = arrow_array::UInt32Array::from(idx.to_vec());
    let cols = batch
        .columns()
        .iter()
        .map(|c| arrow_select::take::take(c, &ix, None))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(exec_err)?;
    RecordBatch::try_new_with_options(
        batch.schema(),
        cols,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(idx.len())),
    )
    .map_err(exec_err)
}

/// `e` over the rows `idx` of `batch` only, as `ty`.
fn eval_rows(e: &Expr, batch: &RecordBatch, idx: &[u32], ty: &A) -> Result<ArrayRef> {
    let v = e.eval(&rows_of(batch, idx)?)?.into_array(idx.len())?;
    if v.data_type() == ty {
        Ok(v)
    } else {
        arrow_cast::cast(&v, ty).map_err(exec_err)
    }
}

/// CASE with each branch evaluated on the rows that reach it only: the
/// conditions in turn on the rows no earlier one took, each result on the
/// rows its condition is true for, ELSE on the rest.
fn case_lazily(
    whens: &[(Expr, Expr)],
    otherwise: &Expr,
    batch: &RecordBatch,
    ty: &A,
) -> Result<ArrayRef> {
    let rows = batch.num_rows();
    let mut parts: Vec<ArrayRef> = Vec::new();
    // Each output row's (part, row in the part).
    let mut place = vec![(0usize, 0usize); rows];
    let mut open: Vec<u32> = (0..rows as u32).collect();
    let mut take = |idx: &[u32], e: &Expr, parts: &mut Vec<ArrayRef>| -> Result<()> {
        if idx.is_empty() {
            return Ok(());
        }
        let k = parts.len();
        parts.push(eval_rows(e, batch, idx, ty)?);
        for (j, &r) in idx.iter().enumerate() {
            place[r as usize] = (k, j);
        }
        Ok(())
    };
    for (cond, then) in whens {
        if open.is_empty() {
            break;
        }
        let c = eval_rows(cond, batch, &open, &A::Boolean)?;
        let c = c.as_boolean();
        let (mut hit, mut rest) = (Vec::new(), Vec::new());
        for (j, &r) in open.iter().enumerate() {
            if c.is_valid(j) && c.value(j) {
                hit.push(r);
            } else {
                rest.push(r);
            }
        }
        take(&hit, then, &mut parts)?;
        open = rest;
    }
    take(&open, otherwise, &mut parts)?;
    let refs: Vec<&dyn Array> = parts.iter().map(|p| p.as_ref()).collect();
    arrow_select::interleave::interleave(&refs, &place).map_err(exec_err)
}

/// `left AND right` (`or`: OR) with `right` evaluated only on the rows
/// whose answer `left` leaves open (not false for AND, not true for OR).
fn and_or_lazily(or: bool, left: &Expr, right: &Expr, batch: &RecordBatch) -> Result<BooleanArray> {
    let rows = batch.num_rows();
    let l = bool_array(left.eval(batch)?, rows)?;
    let decided = |i: usize| l.is_valid(i) && l.value(i) == or;
    let open: Vec<u32> = (0..rows)
        .filter(|&i| !decided(i))
        .map(|i| i as u32)
        .collect();
    let r = if open.is_empty() {
        BooleanArray::new_null(0)
    } else {
        eval_rows(right, batch, &open, &A::Boolean)?
            .as_boolean()
            .clone()
    };
    // The right side's answer where it ran; elsewhere the left's, which
    // decides the row.
    let mut j = 0;
    let full: BooleanArray = (0..rows)
        .map(|i| {
            if decided(i) {
                Some(or)
            } else {
                let v = r.is_valid(j).then(|| r.value(j));
                j += 1;
                v
            }
        })
        .collect();
    if or {
        arrow_arith::boolean::or_kleene(&l, &full)
    } else {
        arrow_arith::boolean::and_kleene(&l, &full)
    }
    .map_err(exec_err)
}

/// A double as SQL compares, groups and sorts it: `-0.0` is `0.0`, and
/// every NaN is the one positive NaN, equal to itself and greater than
/// every number (as in PostgreSQL). Arrow's kernels and row format order
/// doubles by their bits (IEEE total order), which tells `-0.0` from `0.0`
/// and NaNs of other signs and payloads apart.
#[inline]
pub fn canonical_f64(v: f64) -> f64 {
    if v == 0.0 {
        0.0
    } else if v.is_nan() {
        f64::NAN
    } else {
        v
    }
}

/// [`canonical_f64`] over an array of doubles; other arrays, and arrays
/// with nothing to change, are returned as they are (no copy).
pub fn canonical_doubles(a: &ArrayRef) -> ArrayRef {
    let Some(p) = a.as_primitive_opt::<Float64Type>() else {
        return a.clone();
    };
    let odd = |v: &f64| v.to_bits() != canonical_f64(*v).to_bits();
    if !p.values().iter().any(odd) {
        return a.clone();
    }
    Arc::new(p.unary::<_, Float64Type>(canonical_f64))
}

/// The values an ORDER BY sorts `a` by: doubles canonical (see
/// [`canonical_doubles`]), an INTERVAL by the number PostgreSQL compares
/// (a month as 30 days: `29 days` < `1 mon` < `31 days`).
pub fn ordering_values(a: &ArrayRef) -> Result<ArrayRef> {
    if a.data_type() == &super::interval::TYPE {
        return super::interval::eval(
            super::interval::Op::Key,
            std::slice::from_ref(a),
            &A::Decimal128(38, 0),
        );
    }
    Ok(canonical_doubles(a))
}

/// `column op literal` (or `literal op column`) over a DECIMAL column as
/// stored, 64-bit, without widening every value to 128 bits first: the
/// literal, at the column's scale, is narrowed instead. `None` when the
/// `a` as a dictionary of TEXT (how segments store repeating TEXT), when
/// it is one.
fn text_dictionary(a: &ArrayRef) -> Option<&arrow_array::DictionaryArray<UInt16Type>> {
    match a.data_type() {
        A::Dictionary(k, v) if **k == A::UInt16 && **v == A::Utf8 => {
            a.as_any()
                .downcast_ref::<arrow_array::DictionaryArray<UInt16Type>>()
        }
        _ => None,
    }
}

impl Expr {
    /// Whether column `c` may reach this expression dictionary-encoded:
    /// each use of it is compared with a non-NULL TEXT literal, tested by
    /// LIKE or IS NULL, or listed against literals by IN (the forms that
    /// evaluate on the dictionary's values, see [`compare_stored`]).
    pub fn takes_dictionary(&self, c: usize) -> bool {
        let is_c = |e: &Expr| matches!(e, Expr::Column { index, .. } if *index == c);
        let text_lit =
            |e: &Expr| matches!(e, Expr::Literal(l) if l.data_type() == &A::Utf8 && !l.is_null(0));
        match self {
            Expr::Column { index, .. } => *index != c,
            Expr::Literal(_) => true,
            Expr::Binary { op, left, right } if op.is_comparison() => {
                if (is_c(left) && text_lit(right)) || (text_lit(left) && is_c(right)) {
                    return true;
                }
                left.takes_dictionary(c) && right.takes_dictionary(c)
            }
            Expr::Like { expr, .. } if is_c(expr) => true,
            Expr::IsNull { expr, .. } if is_c(expr) => true,
            Expr::InList { expr, list, .. } if is_c(expr) => list.iter().all(text_lit),
            Expr::InValues { expr, values, .. } if is_c(expr) => values.data_type() == &A::Utf8,
            Expr::Bloom { expr, .. } if is_c(expr) => false,
            _ => {
                let mut ok = true;
                self.clone()
                    .children_mut(&mut |e| ok &= e.takes_dictionary(c));
                ok
            }
        }
    }
}

/// comparison is of another shape or the literal does not fit 64 bits.
fn compare_stored(
    op: BinOp,
    left: &Expr,
    right: &Expr,
    batch: &RecordBatch,
) -> Result<Option<ArrayRef>> {
    let (col, lit, op) = match (left, right) {
        (Expr::Column { index, .. }, Expr::Literal(l)) => (*index, l, op),
        (Expr::Literal(l), Expr::Column { index, .. }) => (
            *index,
            l,
            match op {
                BinOp::Lt => BinOp::Gt,
                BinOp::LtEq => BinOp::GtEq,
                BinOp::Gt => BinOp::Lt,
                BinOp::GtEq => BinOp::LtEq,
                other => other,
            },
        ),
        _ => return Ok(None),
    };
    let Some(a) = batch.columns().get(col) else {
        return Ok(None);
    };
    // A dictionary-encoded TEXT column against a TEXT literal: the
    // dictionary's values (a few thousand at most) compared once each,
    // the keys mapped to their answers.
    if let Some(d) = text_dictionary(a)
        && lit.data_type() == &A::Utf8
        && !lit.is_null(0)
    {
        let Some(m) = compare_scalar(op, d.values(), lit.clone())? else {
            return Ok(None);
        };
        return Ok(Some(
            arrow_select::take::take(&m, d.keys(), None).map_err(exec_err)?,
        ));
    }
    if !matches!(a.data_type(), A::Decimal64(..)) || lit.is_null(0) {
        return Ok(None);
    }
    let Some(scalar) = narrow_to_stored(lit, a.data_type())? else {
        return Ok(None);
    };
    Ok(compare_scalar(op, a, scalar)?.map(|m| Arc::new(m) as ArrayRef))
}

/// `a op scalar` (a one-value array of `a`'s type) for a comparison `op`;
/// `None` for other operators.
fn compare_scalar(op: BinOp, a: &ArrayRef, scalar: ArrayRef) -> Result<Option<BooleanArray>> {
    let scalar = Scalar::new(scalar);
    let a = a.as_ref();
    let out = match op {
        BinOp::Eq => arrow_ord::cmp::eq(&a, &scalar),
        BinOp::NotEq => arrow_ord::cmp::neq(&a, &scalar),
        BinOp::Lt => arrow_ord::cmp::lt(&a, &scalar),
        BinOp::LtEq => arrow_ord::cmp::lt_eq(&a, &scalar),
        BinOp::Gt => arrow_ord::cmp::gt(&a, &scalar),
        BinOp::GtEq => arrow_ord::cmp::gt_eq(&a, &scalar),
        _ => return Ok(None),
    }
    .map_err(exec_err)?;
    Ok(Some(out))
}

/// One value of a column's evaluation type (see [`eval_type`]) as the
/// column stores it, `stored`: a DECIMAL's 128-bit value narrowed to the
/// stored 64 bits, anything else as it is. `None` when the value is of
/// another type or does not fit.
pub(crate) fn narrow_to_stored(v: &ArrayRef, stored: &A) -> Result<Option<ArrayRef>> {
    match (stored, v.data_type()) {
        (A::Decimal64(p, s), A::Decimal128(_, vs)) if s == vs => {
            let mut narrowed: Vec<Option<i64>> = Vec::with_capacity(v.len());
            for x in v.as_primitive::<Decimal128Type>().iter() {
                match x.map(i64::try_from).transpose() {
                    Ok(x) => narrowed.push(x),
                    Err(_) => return Ok(None),
                }
            }
            let out = arrow_array::Decimal64Array::from(narrowed)
                .with_precision_and_scale(*p, *s)
                .map_err(exec_err)?;
            Ok(Some(Arc::new(out)))
        }
        (st, vt) if st == vt => Ok(Some(v.clone())),
        _ => Ok(None),
    }
}

fn canonical_value(v: Value) -> Value {
    match v {
        Value::Array(a) => Value::Array(canonical_doubles(&a)),
        Value::Scalar(s) => Value::Scalar(canonical_doubles(&s)),
    }
}

fn division_by_zero() -> Error {
    Error::DivisionByZero
}

/// `l / r` over `rows` rows. Division by zero is an error for every type
/// (as in PostgreSQL), doubles included; a row with a NULL side is NULL
/// and never an error. Decimals divide at [`arith_type`]'s scale (16
/// places, or the dividend's + 4 when more), rounded half away from zero.
fn divide(l: &Value, r: &Value, rows: usize) -> Result<ArrayRef> {
    let (lt, rt) = (value_type(l), value_type(r));
    match (&lt, &rt) {
        (A::Float64, A::Float64) => {
            let (la, ra) = (l.as_rows(rows)?, r.as_rows(rows)?);
            let (la, ra) = (
                la.as_primitive::<Float64Type>(),
                ra.as_primitive::<Float64Type>(),
            );
            let out: arrow_array::Float64Array = la
                .iter()
                .zip(ra.iter())
                .map(|(x, y)| match (x, y) {
                    // -0.0 matches too.
                    (Some(_), Some(0.0)) => Err(division_by_zero()),
                    (Some(x), Some(y)) => Ok(Some(x / y)),
                    _ => Ok(None),
                })
                .collect::<Result<_>>()?;
            Ok(Arc::new(out))
        }
        (A::Decimal128(_, s1), A::Decimal128(_, s2)) => {
            let Some(A::Decimal128(p, s)) = arith_type(BinOp::Div, &lt, &rt) else {
                return Err(Error::Internal("decimal division type".into()));
            };
            // The dividend is scaled so that the quotient has scale `s`.
            let up = (s as i32 - *s1 as i32 + *s2 as i32) as u32;
            let (la, ra) = (l.as_rows(rows)?, r.as_rows(rows)?);
            let (la, ra) = (
                la.as_primitive::<Decimal128Type>(),
                ra.as_primitive::<Decimal128Type>(),
            );
            let out: arrow_array::Decimal128Array = la
                .iter()
                .zip(ra.iter())
                .map(|(x, y)| match (x, y) {
                    (Some(x), Some(y)) => div_round(x, y, up).map(Some),
                    _ => Ok(None),
                })
                .collect::<Result<_>>()?;
            Ok(Arc::new(
                out.with_precision_and_scale(p, s).map_err(exec_err)?,
            ))
        }
        _ => arrow_arith::numeric::div(&*l.datum(), &*r.datum()).map_err(exec_err),
    }
}

/// `x * 10^up / y`, rounded half away from zero: in 64 bits when the
/// scaled dividend and the divisor fit them, in 128 when they fit those,
/// else in 256 (a 256-bit division is ten times a 64-bit one; TPC-DS
/// q04's `(…) / 2` over 3 million rows spent a third of its time there).
fn div_round(x: i128, y: i128, up: u32) -> Result<i128> {
    if y == 0 {
        return Err(division_by_zero());
    }
    if let Some(n) = 10i128.checked_pow(up).and_then(|p| x.checked_mul(p))
        && !(n == i128::MIN && y == -1)
    {
        // |rem| < |y|, so 2 |rem| fits the unsigned type; rounding away
        // from zero needs |y| >= 2, so |q| <= |n| / 2 and q ± 1 fits.
        let round = |q: i128, rem_abs: u128| {
            if rem_abs * 2 >= y.unsigned_abs() {
                if (n < 0) == (y < 0) { q + 1 } else { q - 1 }
            } else {
                q
            }
        };
        if let (Ok(n64), Ok(y64)) = (i64::try_from(n), i64::try_from(y))
            && !(n64 == i64::MIN && y64 == -1)
        {
            let (q, rem) = (n64 / y64, n64 % y64);
            return Ok(round(q as i128, rem.unsigned_abs() as u128));
        }
        return Ok(round(n / y, (n % y).unsigned_abs()));
    }
    div_round_wide(x, y, up)
}

/// [`div_round`] in 256 bits.
fn div_round_wide(x: i128, y: i128, up: u32) -> Result<i128> {
    use arrow_buffer::i256;
    let overflow = || Error::OutOfRange("numeric overflow in decimal division".into());
    let n = i256::from_i128(x)
        .checked_mul(i256::from_i128(10).checked_pow(up).ok_or_else(overflow)?)
        .ok_or_else(overflow)?;
    let d = i256::from_i128(y);
    let q = n.checked_div(d).ok_or_else(overflow)?;
    let rem = n.checked_rem(d).ok_or_else(overflow)?;
    // |rem| < |d| < 2^127: doubling it cannot overflow 256 bits.
    let q = if rem.wrapping_abs().wrapping_mul(i256::from_i128(2)) >= d.wrapping_abs() {
        if (n < i256::ZERO) == (d < i256::ZERO) {
            q.checked_add(i256::ONE)
        } else {
            q.checked_sub(i256::ONE)
        }
        .ok_or_else(overflow)?
    } else {
        q
    };
    q.to_i128().ok_or_else(overflow)
}

fn value_type(v: &Value) -> A {
    match v {
        Value::Array(a) | Value::Scalar(a) => a.data_type().clone(),
    }
}

/// Columns as stored → types the engine computes in: DECIMAL(p,s) stored as
/// Decimal64 is evaluated as Decimal128(38, s).
pub fn eval_type(stored: &A) -> A {
    match stored {
        A::Decimal64(_, s) => A::Decimal128(38, *s),
        other => other.clone(),
    }
}

/// Widens a stored column to its evaluation type (see [`eval_type`]).
pub fn widen(a: &ArrayRef) -> ArrayRef {
    match a.data_type() {
        A::Decimal64(_, s) => {
            let out = a
                .as_primitive::<Decimal64Type>()
                .unary::<_, Decimal128Type>(|v| v as i128)
                .with_precision_and_scale(38, *s)
                .expect("38 is a valid precision");
            Arc::new(out)
        }
        _ => a.clone(),
    }
}

/// A double that arithmetic made infinite from finite operands is an
/// overflow (SQLSTATE 22003), as in PostgreSQL; an operand that is
/// infinite already gives an infinite answer as it should.
fn checked_float(out: ArrayRef, l: &Value, r: &Value) -> Result<ArrayRef> {
    let Some(o) = out.as_primitive_opt::<Float64Type>() else {
        return Ok(out);
    };
    if !o.values().iter().any(|v| v.is_infinite()) {
        return Ok(out);
    }
    let finite = |v: &Value, i: usize| -> bool {
        let a = match v {
            Value::Array(a) => a.as_primitive_opt::<Float64Type>().map(|p| p.value(i)),
            Value::Scalar(a) => a.as_primitive_opt::<Float64Type>().map(|p| p.value(0)),
        };
        // An operand of another type (an integer) is finite.
        a.is_none_or(f64::is_finite)
    };
    for (i, v) in o.values().iter().enumerate() {
        if v.is_infinite() && !o.is_null(i) && finite(l, i) && finite(r, i) {
            return Err(Error::OutOfRange("value out of range: overflow".into()));
        }
    }
    Ok(out)
}

/// The values of an IN list of literals as a set: `x IN (…)` of a
/// 100,000-value list is a lookup a row, not 100,000 comparisons.
#[derive(Clone, Default)]
pub struct InSet(Arc<std::sync::OnceLock<Option<ValueSet>>>);

impl fmt::Debug for InSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("InSet")
    }
}

/// Values of one type, hashed; `has_null`: the list holds a NULL (then a
/// value not in it is NULL, not false).
pub(crate) struct ValueSet {
    values: SetValues,
    has_null: bool,
    /// The type of the values.
    ty: A,
}

enum SetValues {
    /// Integers, dates, timestamps and decimals (of one scale) as i128:
    /// a bitmap while the values are dense, else a hash set.
    Ints(super::intset::IntSet),
    /// Doubles by the bits of their canonical value (-0.0 is 0.0, every
    /// NaN one NaN, as SQL compares them).
    Doubles(foldhash::HashSet<u64>),
    Text(foldhash::HashSet<Box<str>>),
    Bools([bool; 2]),
}

/// Whether values of types `a` and `b` compare as the same numbers (a
/// decimal's precision aside, its scale included).
fn same_values(a: &A, b: &A) -> bool {
    match (a, b) {
        (A::Decimal128(_, x) | A::Decimal64(_, x), A::Decimal128(_, y) | A::Decimal64(_, y)) => {
            x == y
        }
        _ => a == b,
    }
}

/// Each value of an integer-like array as i128 (`None` for other types).
pub(crate) fn ints_of(a: &dyn Array) -> Option<Vec<i128>> {
    macro_rules! prim {
        ($t:ty) => {
            a.as_primitive::<$t>()
                .values()
                .iter()
                .map(|&v| v as i128)
                .collect()
        };
    }
    Some(match a.data_type() {
        A::Int8 => prim!(Int8Type),
        A::Int16 => prim!(Int16Type),
        A::Int32 => prim!(Int32Type),
        A::Int64 => prim!(Int64Type),
        A::UInt8 => prim!(UInt8Type),
        A::UInt16 => prim!(UInt16Type),
        A::UInt32 => prim!(UInt32Type),
        A::UInt64 => prim!(UInt64Type),
        A::Date32 => prim!(Date32Type),
        A::Timestamp(TimeUnit::Microsecond, _) => prim!(TimestampMicrosecondType),
        A::Decimal64(..) => prim!(Decimal64Type),
        A::Decimal128(..) => prim!(Decimal128Type),
        _ => return None,
    })
}

impl ValueSet {
    /// The set of `items`, when every one is a literal of type `ty`.
    fn of(items: &[Expr], ty: &A) -> Option<ValueSet> {
        let mut lits = Vec::with_capacity(items.len());
        for it in items {
            match it {
                Expr::Literal(a) if same_values(a.data_type(), ty) || a.data_type() == &A::Null => {
                    lits.push(a)
                }
                _ => return None,
            }
        }
        let has_null = lits.iter().any(|a| a.is_null(0));
        let live = lits.iter().filter(|a| !a.is_null(0));
        let values = match ty {
            A::Utf8 => SetValues::Text(
                live.map(|a| Box::from(a.as_string::<i32>().value(0)))
                    .collect(),
            ),
            A::Float64 => SetValues::Doubles(
                live.map(|a| canonical_f64(a.as_primitive::<Float64Type>().value(0)).to_bits())
                    .collect(),
            ),
            A::Boolean => {
                let mut b = [false; 2];
                for a in live {
                    b[a.as_boolean().value(0) as usize] = true;
                }
                SetValues::Bools(b)
            }
            _ => {
                let mut set = super::intset::IntSet::default();
                for a in live {
                    set.insert(*ints_of(a.as_ref())?.first()?);
                }
                set.for_probes();
                SetValues::Ints(set)
            }
        };
        Some(ValueSet {
            values,
            has_null,
            ty: ty.clone(),
        })
    }

    /// The set of the values of `values` (NULLs included), as a set of
    /// type `ty`; `None` when `values` is of another type or `ty` is one
    /// no set holds.
    fn of_array(values: &ArrayRef, ty: &A) -> Option<ValueSet> {
        let values = match values.data_type() {
            A::Null => arrow_array::new_null_array(ty, values.len()),
            t if same_values(t, ty) => values.clone(),
            _ => return None,
        };
        let has_null = values.logical_null_count() > 0;
        let live = |i: &usize| values.is_valid(*i);
        let n = values.len();
        let values = match ty {
            A::Utf8 => {
                let s = values.as_string_opt::<i32>()?;
                SetValues::Text((0..n).filter(live).map(|i| Box::from(s.value(i))).collect())
            }
            A::Float64 => {
                let v = values.as_primitive_opt::<Float64Type>()?;
                SetValues::Doubles(
                    (0..n)
                        .filter(live)
                        .map(|i| canonical_f64(v.value(i)).to_bits())
                        .collect(),
                )
            }
            A::Boolean => {
                let v = values.as_boolean_opt()?;
                let mut b = [false; 2];
                for i in (0..n).filter(live) {
                    b[v.value(i) as usize] = true;
                }
                SetValues::Bools(b)
            }
            _ => {
                let ints = ints_of(values.as_ref())?;
                let mut set = super::intset::IntSet::default();
                for i in (0..n).filter(live) {
                    set.insert(ints[i]);
                }
                set.for_probes();
                SetValues::Ints(set)
            }
        };
        Some(ValueSet {
            values,
            has_null,
            ty: ty.clone(),
        })
    }

    /// `x IN (the set)` for each value of `x` (of the set's type), with
    /// SQL's NULLs: NULL for a NULL `x`, and for a value not found when
    /// the list holds a NULL.
    fn probe(&self, x: &dyn Array) -> Option<BooleanArray> {
        // INT and BIGINT keys against a bitmap: bits made 64 at a time.
        let bits = match (&self.values, x.data_type()) {
            (SetValues::Ints(set), A::Int64) if same_values(x.data_type(), &self.ty) => {
                set.contains_each(x.as_primitive::<Int64Type>().values())
            }
            (SetValues::Ints(set), A::Int32) if same_values(x.data_type(), &self.ty) => {
                set.contains_each(x.as_primitive::<Int32Type>().values())
            }
            _ => None,
        };
        if let Some(values) = bits {
            return Some(self.with_nulls(x, values));
        }
        let found: Vec<bool> = match &self.values {
            SetValues::Text(set) => {
                let s = x.as_string_opt::<i32>()?;
                (0..s.len()).map(|r| set.contains(s.value(r))).collect()
            }
            SetValues::Doubles(set) => x
                .as_primitive_opt::<Float64Type>()?
                .values()
                .iter()
                .map(|&v| set.contains(&canonical_f64(v).to_bits()))
                .collect(),
            SetValues::Bools(b) => {
                let v = x.as_boolean_opt()?;
                (0..v.len()).map(|r| b[v.value(r) as usize]).collect()
            }
            SetValues::Ints(set) => {
                if !same_values(x.data_type(), &self.ty) {
                    return None;
                }
                // The common key types without a vector of i128 between.
                match x.data_type() {
                    A::Int64 => x
                        .as_primitive::<Int64Type>()
                        .values()
                        .iter()
                        .map(|&v| set.contains(v as i128))
                        .collect(),
                    A::Int32 => x
                        .as_primitive::<Int32Type>()
                        .values()
                        .iter()
                        .map(|&v| set.contains(v as i128))
                        .collect(),
                    _ => ints_of(x)?.iter().map(|&v| set.contains(v)).collect(),
                }
            }
        };
        Some(self.with_nulls(x, arrow_buffer::BooleanBuffer::from(found)))
    }

    /// The answers `values` of the set test over `x` with SQL's NULLs.
    fn with_nulls(&self, x: &dyn Array, values: arrow_buffer::BooleanBuffer) -> BooleanArray {
        let nulls = match (x.logical_nulls(), self.has_null) {
            (n, false) => n,
            // Not found: NULL; found: true; NULL x: NULL.
            (n, true) => {
                let valid = match &n {
                    Some(n) => &values & n.inner(),
                    None => values.clone(),
                };
                Some(arrow_buffer::NullBuffer::new(valid))
            }
        };
        BooleanArray::new(values, nulls)
    }
}

/// `m` (booleans), negated when `negated` (`NOT IN`).
fn not_if(m: Value, negated: bool) -> Result<Value> {
    if !negated {
        return Ok(m);
    }
    map_value(m, |a| {
        Ok(Arc::new(
            arrow_arith::boolean::not(a.as_boolean()).map_err(exec_err)?,
        ))
    })
}

/// `x IN (values)`, as [`in_list`] answers it of the same values as
/// literals: a set lookup a row ([`ValueSet`], built once), or, for a
/// type no set holds, the values compared one at a time.
fn in_values(x: Value, values: &ArrayRef, set: &InSet, batch: &RecordBatch) -> Result<Value> {
    let (a, scalar) = match x {
        Value::Array(a) => (a, false),
        Value::Scalar(a) => (a, true),
    };
    let wrap = |m: ArrayRef| {
        if scalar {
            Value::Scalar(m)
        } else {
            Value::Array(m)
        }
    };
    if let Some(d) = text_dictionary(&a) {
        let m = in_values(Value::Array(d.values().clone()), values, set, batch)?
            .into_array(d.values().len())?;
        return Ok(wrap(
            arrow_select::take::take(&m, d.keys(), None).map_err(exec_err)?,
        ));
    }
    let ty = a.data_type().clone();
    if let Some(vs) = set.0.get_or_init(|| ValueSet::of_array(values, &ty))
        && let Some(m) = vs.probe(a.as_ref())
    {
        return Ok(wrap(Arc::new(m)));
    }
    let list: Vec<Expr> = (0..values.len())
        .map(|i| Expr::Literal(values.slice(i, 1)))
        .collect();
    in_list(wrap(a), &list, &InSet::default(), batch)
}

/// `x IN (list)` with SQL's NULL rules (true when a value equals `x`;
/// else NULL when `x` or a value is NULL; else false). A list of
/// literals is a set ([`ValueSet`], built once); otherwise each value is
/// compared in turn, the answers OR-ed one after another.
fn in_list(x: Value, list: &[Expr], set: &InSet, batch: &RecordBatch) -> Result<Value> {
    let (a, scalar) = match x {
        Value::Array(a) => (a, false),
        Value::Scalar(a) => (a, true),
    };
    let wrap = |m: ArrayRef| {
        if scalar {
            Value::Scalar(m)
        } else {
            Value::Array(m)
        }
    };
    // A dictionary-encoded column: its values tested once each, the keys
    // mapped to their answers.
    if let Some(d) = text_dictionary(&a) {
        let values = Value::Array(d.values().clone());
        let m = in_list(values, list, set, batch)?.into_array(d.values().len())?;
        return Ok(wrap(
            arrow_select::take::take(&m, d.keys(), None).map_err(exec_err)?,
        ));
    }
    let ty = a.data_type().clone();
    if let Some(vs) = set.0.get_or_init(|| ValueSet::of(list, &ty))
        && let Some(m) = vs.probe(a.as_ref())
    {
        return Ok(wrap(Arc::new(m)));
    }
    // Items that are not all literals: x = item, one at a time. Every
    // answer is an array of the batch's rows unless x and every item are
    // scalars.
    let rows = batch.num_rows();
    let x = canonical_value(wrap(a));
    let mut acc: Option<BooleanArray> = None;
    let mut all_scalar = x.is_scalar();
    for item in list {
        let v = canonical_value(item.eval(batch)?);
        all_scalar &= v.is_scalar();
        let eq = arrow_ord::cmp::eq(&*x.datum(), &*v.datum()).map_err(exec_err)?;
        acc = Some(match acc {
            None => eq,
            Some(prev) if prev.len() == eq.len() => {
                arrow_arith::boolean::or_kleene(&prev, &eq).map_err(exec_err)?
            }
            Some(prev) => {
                let (p, e) = (
                    bool_array(Value::Scalar(Arc::new(prev.clone())), rows),
                    bool_array(Value::Scalar(Arc::new(eq.clone())), rows),
                );
                let p = if prev.len() == rows { prev } else { p? };
                let e = if eq.len() == rows { eq } else { e? };
                arrow_arith::boolean::or_kleene(&p, &e).map_err(exec_err)?
            }
        });
    }
    if !all_scalar
        && let Some(m) = &acc
        && m.len() != rows
    {
        acc = Some(bool_array(Value::Scalar(Arc::new(m.clone())), rows)?);
    }
    let m = acc.ok_or_else(|| Error::Internal("empty IN list".into()))?;
    Ok(if all_scalar {
        Value::Scalar(Arc::new(m))
    } else {
        Value::Array(Arc::new(m))
    })
}

fn bool_array(v: Value, rows: usize) -> Result<BooleanArray> {
    let a = v.into_array(rows)?;
    match a.data_type() {
        A::Boolean => Ok(a.as_boolean().clone()),
        A::Null => Ok(BooleanArray::new_null(a.len())),
        other => Err(Error::Internal(format!("boolean expected, got {other}"))),
    }
}

fn map_value(v: Value, f: impl Fn(ArrayRef) -> Result<ArrayRef>) -> Result<Value> {
    Ok(match v {
        Value::Array(a) => Value::Array(f(a)?),
        Value::Scalar(s) => Value::Scalar(f(s)?),
    })
}

/// The result type of `l op r` for arithmetic, by asking the kernel itself
/// on empty arrays; `None` when the kernel refuses the types.
pub fn arith_type(op: BinOp, l: &A, r: &A) -> Option<A> {
    // A decimal quotient keeps 16 decimal places, or the dividend's
    // scale + 4 or the divisor's when more (at most 38): PostgreSQL
    // gives a quotient at least 16 significant digits.
    if let (BinOp::Div, A::Decimal128(_, s1), A::Decimal128(_, s2)) = (op, l, r) {
        let s = (i16::from(*s1) + 4).max(i16::from(*s2)).clamp(16, 38);
        return Some(A::Decimal128(38, s as i8));
    }
    let le = arrow_array::new_empty_array(l);
    let re = arrow_array::new_empty_array(r);
    let out = match op {
        BinOp::Add => arrow_arith::numeric::add(&le, &re),
        BinOp::Sub => arrow_arith::numeric::sub(&le, &re),
        BinOp::Mul => arrow_arith::numeric::mul(&le, &re),
        BinOp::Div => arrow_arith::numeric::div(&le, &re),
        _ => return None,
    };
    out.ok().map(|a| a.data_type().clone())
}

fn abs(a: ArrayRef) -> Result<ArrayRef> {
    Ok(match a.data_type() {
        A::Int32 => Arc::new(
            a.as_primitive::<Int32Type>()
                .try_unary::<_, Int32Type, _>(|v| {
                    v.checked_abs()
                        .ok_or(arrow_schema::ArrowError::ComputeError(
                            "Overflow in ABS".into(),
                        ))
                })
                .map_err(exec_err)?,
        ),
        A::Int64 => Arc::new(
            a.as_primitive::<Int64Type>()
                .try_unary::<_, Int64Type, _>(|v| {
                    v.checked_abs()
                        .ok_or(arrow_schema::ArrowError::ComputeError(
                            "Overflow in ABS".into(),
                        ))
                })
                .map_err(exec_err)?,
        ),
        A::Float64 => Arc::new(
            a.as_primitive::<Float64Type>()
                .unary::<_, Float64Type>(f64::abs),
        ),
        A::Decimal128(p, s) => Arc::new(
            a.as_primitive::<Decimal128Type>()
                .unary::<_, Decimal128Type>(|v| v.abs())
                .with_precision_and_scale(*p, *s)
                .map_err(exec_err)?,
        ),
        other => return Err(Error::Exec(format!("ABS of {other}"))),
    })
}

fn extract(a: &ArrayRef, part: DatePart) -> Result<ArrayRef> {
    let get = |d: NaiveDate, us_of_day: i64| -> i64 {
        match part {
            DatePart::Year => d.year() as i64,
            DatePart::Month => d.month() as i64,
            DatePart::Day => d.day() as i64,
            DatePart::Hour => us_of_day / 3_600_000_000,
            DatePart::Minute => us_of_day / 60_000_000 % 60,
        }
    };
    let mut out = Int64Builder::with_capacity(a.len());
    match a.data_type() {
        A::Date32 => {
            for v in a.as_primitive::<Date32Type>().iter() {
                out.append_option(v.and_then(value::date_from_days).map(|d| get(d, 0)));
            }
        }
        A::Timestamp(TimeUnit::Microsecond, zone) => {
            const DAY: i64 = 86_400_000_000;
            // An instant's fields are those of its local time in its zone.
            let z = crate::zone::Zone::of(zone.as_deref());
            for v in a.as_primitive::<TimestampMicrosecondType>().iter() {
                let d = v.and_then(|us| {
                    let us = us.checked_add(z.utc_offset(us) * 1_000_000)?;
                    let day = i32::try_from(us.div_euclid(DAY)).ok()?;
                    Some((value::date_from_days(day)?, us.rem_euclid(DAY)))
                });
                out.append_option(d.map(|(d, us)| get(d, us)));
            }
        }
        A::Null => return Ok(new_null_array(&A::Int64, a.len())),
        other => return Err(Error::Exec(format!("EXTRACT from {other}"))),
    }
    Ok(Arc::new(out.finish()))
}

fn add_months(a: &ArrayRef, months: i32) -> Result<ArrayRef> {
    let dates = a.as_primitive::<Date32Type>();
    let out: arrow_array::Date32Array = dates
        .iter()
        .map(|v| {
            v.map(|v| {
                let d = value::date_from_days(v)
                    .ok_or_else(|| Error::OutOfRange("date out of range".into()))?;
                let r = if months >= 0 {
                    d.checked_add_months(Months::new(months as u32))
                } else {
                    d.checked_sub_months(Months::new(months.unsigned_abs()))
                };
                r.map(|d| d.to_epoch_days())
                    .ok_or_else(|| Error::OutOfRange("date out of range".into()))
            })
            .transpose()
        })
        .collect::<Result<_>>()?;
    Ok(Arc::new(out))
}

fn substring(s: &ArrayRef, start: &ArrayRef, len: Option<&ArrayRef>) -> Result<ArrayRef> {
    let strs = s.as_string::<i32>();
    let starts = start.as_primitive::<Int64Type>();
    let lens = len.map(|l| l.as_primitive::<Int64Type>());
    let mut out = StringBuilder::with_capacity(strs.len(), strs.values().len());
    for i in 0..strs.len() {
        if strs.is_null(i) || starts.is_null(i) || lens.is_some_and(|l| l.is_null(i)) {
            out.append_null();
            continue;
        }
        // SQL: characters from position `start` (1-based), `len` of them;
        // positions before 1 still count towards the length.
        let from = starts.value(i);
        let to = match lens {
            Some(l) => {
                let n = l.value(i);
                if n < 0 {
                    return Err(Error::Exec("negative substring length not allowed".into()));
                }
                from.saturating_add(n)
            }
            None => i64::MAX,
        };
        let from = from.max(1);
        out.append_value(char_slice(
            strs.value(i),
            (from - 1) as usize,
            to.saturating_sub(from).max(0) as usize,
        ));
    }
    Ok(Arc::new(out.finish()))
}

/// The `take` characters of `v` after its first `skip`, as a slice of it
/// (no copy): by bytes when the bytes up to there are ASCII, else by
/// walking its characters.
fn char_slice(v: &str, skip: usize, take: usize) -> &str {
    let end = skip.saturating_add(take).min(v.len());
    if v.as_bytes()[..end].is_ascii() {
        // Every character before `end` is one byte, so `end` starts one.
        return &v[skip.min(end)..end];
    }
    let start = v.char_indices().nth(skip).map_or(v.len(), |(b, _)| b);
    let rest = &v[start..];
    let end = rest.char_indices().nth(take).map_or(rest.len(), |(b, _)| b);
    &rest[..end]
}

/// Microseconds east of UTC of an Arrow time zone of a fixed offset
/// (`None`: no zone, 0; a named zone: see [`crate::zone::Zone`]).
/// The engine's zones are fixed offsets (see [`crate::batch::UTC_ZONE`]).
pub fn zone_micros(zone: Option<&str>) -> i64 {
    zone.and_then(value::zone_seconds).unwrap_or(0) * 1_000_000
}

/// Casts between the engine's types; text to a typed value uses the same
/// parsers as the loader (so `CAST('1.005' AS DECIMAL(5,2))` is an error).
pub fn cast(a: &ArrayRef, to: &A) -> Result<ArrayRef> {
    cast_named(a, to, &type_name(to))
}

/// An explicit CAST (see [`CastSite`]): errors name the type as written and
/// where the CAST is; a DECIMAL(p,s) target checks its precision.
pub fn cast_at(a: &ArrayRef, to: &A, site: Option<&CastSite>) -> Result<ArrayRef> {
    let Some(site) = site else {
        return cast(a, to);
    };
    let located = |e: Error| match e {
        Error::Exec(m) => Error::Exec(format!("{m}{}", site.at)),
        other => other,
    };
    let out = cast_named(a, to, &site.type_text).map_err(located)?;
    if let (Some(p), A::Decimal128(..)) = (site.precision, to) {
        let limit = 10i128.pow(p as u32);
        if out
            .as_primitive::<Decimal128Type>()
            .iter()
            .any(|v| v.is_some_and(|v| v.unsigned_abs() >= limit as u128))
        {
            return Err(located(Error::Exec(format!(
                "value out of range for {}",
                site.type_text
            ))));
        }
    }
    Ok(out)
}

/// [`cast`], naming the target `name` in errors.
fn cast_named(a: &ArrayRef, to: &A, name: &str) -> Result<ArrayRef> {
    let from = a.data_type();
    if from == to {
        return Ok(a.clone());
    }
    if *from == A::Null {
        return Ok(new_null_array(to, a.len()));
    }
    let n = a.len();
    let overflow = || Error::OutOfRange(format!("value out of range for {}", name));
    Ok(match (from, to) {
        (A::Int32, A::Int64) => Arc::new(
            a.as_primitive::<Int32Type>()
                .unary::<_, Int64Type>(|v| v as i64),
        ),
        (A::Int64, A::Int32) => Arc::new(
            a.as_primitive::<Int64Type>()
                .try_unary::<_, Int32Type, _>(|v| {
                    i32::try_from(v).map_err(|_| arrow_schema::ArrowError::ComputeError("x".into()))
                })
                .map_err(|_| overflow())?,
        ),
        (A::Int32 | A::Int64, A::Float64) => {
            let a64 = cast(a, &A::Int64)?;
            Arc::new(
                a64.as_primitive::<Int64Type>()
                    .unary::<_, Float64Type>(|v| v as f64),
            )
        }
        (A::Int32 | A::Int64, A::Decimal128(p, s)) => {
            let a64 = cast(a, &A::Int64)?;
            let mul = 10i128.pow(*s as u32);
            Arc::new(
                a64.as_primitive::<Int64Type>()
                    .try_unary::<_, Decimal128Type, _>(|v| {
                        (v as i128)
                            .checked_mul(mul)
                            .ok_or(arrow_schema::ArrowError::ComputeError("Overflow".into()))
                    })
                    .map_err(|_| overflow())?
                    .with_precision_and_scale(*p, *s)
                    .map_err(exec_err)?,
            )
        }
        (A::Decimal128(_, s1), A::Decimal128(p, s2)) => {
            let d = a.as_primitive::<Decimal128Type>();
            let out = if s2 >= s1 {
                let mul = 10i128.pow((*s2 - *s1) as u32);
                d.try_unary::<_, Decimal128Type, _>(|v| {
                    v.checked_mul(mul)
                        .ok_or(arrow_schema::ArrowError::ComputeError("Overflow".into()))
                })
                .map_err(|_| overflow())?
            } else {
                // A smaller scale rounds half away from zero, as PostgreSQL does.
                let div = 10i128.pow((*s1 - *s2) as u32);
                d.unary::<_, Decimal128Type>(|v| round_div(v, div))
            };
            Arc::new(out.with_precision_and_scale(*p, *s2).map_err(exec_err)?)
        }
        (A::Float64, A::Decimal128(p, s)) => {
            // Through the double's shortest text (what it prints as), so
            // that 1.005 is 1.005 and rounds to 1.01 at scale 2.
            let d: arrow_array::Decimal128Array = a
                .as_primitive::<Float64Type>()
                .iter()
                .map(|v| v.map(|v| f64_to_decimal(v, *s, name)).transpose())
                .collect::<Result<_>>()?;
            Arc::new(d.with_precision_and_scale(*p, *s).map_err(exec_err)?)
        }
        (A::Decimal128(_, s), A::Float64) => {
            let div = 10f64.powi(*s as i32);
            Arc::new(
                a.as_primitive::<Decimal128Type>()
                    .unary::<_, Float64Type>(|v| v as f64 / div),
            )
        }
        (A::Decimal128(_, s), A::Int64 | A::Int32) => {
            // Rounds half away from zero, as PostgreSQL does.
            let div = 10i128.pow(*s as u32);
            let round = |v: i128| {
                let q = v / div;
                let r = (v % div).abs();
                if *s > 0 && r * 2 >= div {
                    q + v.signum()
                } else {
                    q
                }
            };
            let ints: arrow_array::Int64Array = a
                .as_primitive::<Decimal128Type>()
                .iter()
                .map(|v| {
                    v.map(|v| i64::try_from(round(v)).map_err(|_| overflow()))
                        .transpose()
                })
                .collect::<Result<_>>()?;
            cast_named(&(Arc::new(ints) as ArrayRef), to, name)?
        }
        (A::Float64, A::Int64 | A::Int32) => {
            let ints: arrow_array::Int64Array = a
                .as_primitive::<Float64Type>()
                .iter()
                .map(|v| {
                    v.map(|v| {
                        let r = v.round();
                        if r.is_finite() && r >= i64::MIN as f64 && r < i64::MAX as f64 {
                            Ok(r as i64)
                        } else {
                            Err(overflow())
                        }
                    })
                    .transpose()
                })
                .collect::<Result<_>>()?;
            cast_named(&(Arc::new(ints) as ArrayRef), to, name)?
        }
        // An instant's zone (its Arrow time zone, the session's) gives
        // its local time: TIMESTAMPTZ to TIMESTAMP or DATE adds the
        // zone's offset; TIMESTAMP or DATE to TIMESTAMPTZ takes the local
        // time as the zone's; between two zones the instant is kept.
        (A::Date32, A::Timestamp(TimeUnit::Microsecond, zone)) => {
            let z = crate::zone::Zone::of(zone.as_deref());
            Arc::new(
                a.as_primitive::<Date32Type>()
                    // Saturating: the slots under NULLs hold any value.
                    .unary::<_, TimestampMicrosecondType>(|d| {
                        z.to_utc((d as i64).saturating_mul(86_400_000_000))
                    })
                    .with_timezone_opt(zone.clone()),
            )
        }
        (A::Timestamp(TimeUnit::Microsecond, zone), A::Date32) => {
            let z = crate::zone::Zone::of(zone.as_deref());
            Arc::new(
                a.as_primitive::<TimestampMicrosecondType>()
                    .unary::<_, Date32Type>(|us| z.to_local(us).div_euclid(86_400_000_000) as i32),
            )
        }
        (A::Timestamp(TimeUnit::Microsecond, from), A::Timestamp(TimeUnit::Microsecond, zone)) => {
            let ts = a.as_primitive::<TimestampMicrosecondType>();
            let out = match (from, zone) {
                // An instant in another zone: the same instant.
                (Some(_), Some(_)) | (None, None) => ts.clone(),
                // A local time as an instant of the zone.
                (None, Some(z)) => {
                    let z = crate::zone::Zone::of(Some(z));
                    ts.unary::<_, TimestampMicrosecondType>(|us| z.to_utc(us))
                }
                // An instant as its local time.
                (Some(f), None) => {
                    let z = crate::zone::Zone::of(Some(f));
                    ts.unary::<_, TimestampMicrosecondType>(|us| z.to_local(us))
                }
            };
            Arc::new(out.with_timezone_opt(zone.clone()))
        }
        // A timestamp's time of day (an instant's in its zone).
        (A::Timestamp(TimeUnit::Microsecond, zone), A::Time64(TimeUnit::Microsecond)) => {
            let z = crate::zone::Zone::of(zone.as_deref());
            Arc::new(
                a.as_primitive::<TimestampMicrosecondType>()
                    .unary::<_, Time64MicrosecondType>(|us| {
                        z.to_local(us).rem_euclid(value::DAY_MICROS)
                    }),
            )
        }
        // A time as the interval since midnight, and back (PostgreSQL's
        // interval to time takes the interval's time part modulo a day).
        (A::Time64(TimeUnit::Microsecond), A::Interval(_)) => super::interval::array(
            a.as_primitive::<Time64MicrosecondType>()
                .iter()
                .map(|v| {
                    v.map(|us| super::interval::Interval {
                        months: 0,
                        days: 0,
                        micros: us,
                    })
                })
                .collect::<Vec<_>>(),
        )?,
        (A::Interval(_), A::Time64(TimeUnit::Microsecond)) => {
            let out: arrow_array::Time64MicrosecondArray = a
                .as_primitive::<IntervalMonthDayNanoType>()
                .iter()
                .map(|v| {
                    v.map(|v| {
                        (super::interval::Interval::from_arrow(v).micros)
                            .rem_euclid(value::DAY_MICROS)
                    })
                })
                .collect();
            Arc::new(out)
        }
        (_, A::Utf8) => {
            let mut out = StringBuilder::with_capacity(n, n * 8);
            for i in 0..n {
                out.append_option(crate::batch::format_value(a.as_ref(), i));
            }
            Arc::new(out.finish())
        }
        (A::Utf8, _) => cast_from_text(a, to, name)?,
        // 0 is false, any other INT true.
        (A::Int32, A::Boolean) => Arc::new(
            a.as_primitive::<arrow_array::types::Int32Type>()
                .iter()
                .map(|v| v.map(|v| v != 0))
                .collect::<arrow_array::BooleanArray>(),
        ),
        (A::Boolean, A::Int64 | A::Int32) => {
            let ints: arrow_array::Int64Array =
                a.as_boolean().iter().map(|v| v.map(i64::from)).collect();
            cast_named(&(Arc::new(ints) as ArrayRef), to, name)?
        }
        _ => {
            return Err(Error::Exec(format!(
                "cannot cast {} to {}",
                type_name(from),
                name
            )));
        }
    })
}

fn cast_from_text(a: &ArrayRef, to: &A, name: &str) -> Result<ArrayRef> {
    let s = a.as_string::<i32>();
    let bad = |v: &str, m: String| Error::Exec(format!("cannot cast {v:?} to {}: {m}", name));
    Ok(match to {
        A::Int64 | A::Int32 => {
            let ints: arrow_array::Int64Array = s
                .iter()
                .map(|v| {
                    v.map(|v| value::parse_i64(v.as_bytes()).map_err(|m| bad(v, m)))
                        .transpose()
                })
                .collect::<Result<_>>()?;
            cast_named(&(Arc::new(ints) as ArrayRef), to, name)?
        }
        A::Float64 => {
            let f: arrow_array::Float64Array = s
                .iter()
                .map(|v| {
                    v.map(|v| value::parse_f64(v.as_bytes()).map_err(|m| bad(v, m)))
                        .transpose()
                })
                .collect::<Result<_>>()?;
            Arc::new(f)
        }
        A::Decimal128(p, sc) => {
            let d: arrow_array::Decimal128Array = s
                .iter()
                .map(|v| {
                    v.map(|v| wide_decimal(v, *p, *sc).map_err(|m| bad(v, m)))
                        .transpose()
                })
                .collect::<Result<_>>()?;
            Arc::new(d.with_precision_and_scale(*p, *sc).map_err(exec_err)?)
        }
        A::Interval(_) => super::interval::array(
            s.iter()
                .map(|v| {
                    v.map(|v| super::interval::parse(v, None).map_err(|m| bad(v, m)))
                        .transpose()
                })
                .collect::<Result<Vec<_>>>()?,
        )?,
        A::Date32 => {
            let d: arrow_array::Date32Array = s
                .iter()
                .map(|v| {
                    v.map(|v| value::parse_date(v.as_bytes(), None).map_err(|m| bad(v, m)))
                        .transpose()
                })
                .collect::<Result<_>>()?;
            Arc::new(d)
        }
        A::Timestamp(TimeUnit::Microsecond, None) => {
            let d: arrow_array::TimestampMicrosecondArray = s
                .iter()
                .map(|v| {
                    v.map(|v| value::parse_timestamp_sql(v.as_bytes()).map_err(|m| bad(v, m)))
                        .transpose()
                })
                .collect::<Result<_>>()?;
            Arc::new(d)
        }
        A::Time64(TimeUnit::Microsecond) => {
            let d: arrow_array::Time64MicrosecondArray = s
                .iter()
                .map(|v| {
                    v.map(|v| value::parse_time_sql(v.as_bytes()).map_err(|m| bad(v, m)))
                        .transpose()
                })
                .collect::<Result<_>>()?;
            Arc::new(d)
        }
        A::Timestamp(TimeUnit::Microsecond, Some(zone)) => {
            let z = crate::zone::Zone::of(Some(zone));
            let d: arrow_array::TimestampMicrosecondArray = s
                .iter()
                .map(|v| {
                    v.map(|v| value::parse_timestamptz_in(v.as_bytes(), &z).map_err(|m| bad(v, m)))
                        .transpose()
                })
                .collect::<Result<_>>()?;
            Arc::new(d.with_timezone(zone.clone()))
        }
        A::Boolean => {
            let mut b = BooleanBuilder::with_capacity(s.len());
            for v in s.iter() {
                b.append_option(
                    v.map(|v| value::parse_bool(v.as_bytes()).map_err(|m| bad(v, m)))
                        .transpose()?,
                );
            }
            Arc::new(b.finish())
        }
        _ => {
            return Err(Error::Exec(format!("cannot cast TEXT to {}", name)));
        }
    })
}

/// `v / div` (`div` > 0) rounded half away from zero.
fn round_div(v: i128, div: i128) -> i128 {
    let q = v / div;
    if (v % div).unsigned_abs() * 2 >= div as u128 {
        q + v.signum()
    } else {
        q
    }
}

/// A double as an unscaled decimal of scale `scale`, rounded half away from
/// zero; NaN and infinities have no decimal value.
fn f64_to_decimal(v: f64, scale: i8, name: &str) -> Result<i128> {
    let out_of_range = || Error::OutOfRange(format!("value out of range for {name}"));
    if !v.is_finite() {
        return Err(Error::Exec(format!("cannot cast {v} to {name}")));
    }
    // `{:e}` is the shortest text that reads back as `v`: digits and a
    // power of ten, e.g. 1.005e0.
    let text = format!("{v:e}");
    let (mantissa, exp) = text.split_once('e').ok_or_else(out_of_range)?;
    let exp: i32 = exp.parse().map_err(|_| out_of_range())?;
    let neg = mantissa.starts_with('-');
    let mantissa = mantissa.trim_start_matches('-');
    let frac_digits = mantissa.split_once('.').map_or(0, |(_, f)| f.len()) as i32;
    let digits: i128 = mantissa
        .chars()
        .filter(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .map_err(|_| out_of_range())?;
    // v = digits * 10^(exp - frac_digits); wanted: v * 10^scale.
    let shift = exp - frac_digits + scale as i32;
    let unscaled = if shift >= 0 {
        10i128
            .checked_pow(shift as u32)
            .and_then(|m| digits.checked_mul(m))
            .ok_or_else(out_of_range)?
    } else if -shift > 38 {
        0
    } else {
        round_div(digits, 10i128.pow((-shift) as u32))
    };
    Ok(if neg { -unscaled } else { unscaled })
}

/// SQL name of an engine type, for messages and EXPLAIN.
pub fn type_name(t: &A) -> String {
    match t {
        A::Boolean => "BOOLEAN".into(),
        A::Int32 => "INT".into(),
        A::Int64 => "BIGINT".into(),
        A::Float64 => "DOUBLE".into(),
        A::Decimal64(p, s) => format!("DECIMAL({p},{s})"),
        A::Decimal128(p, s) => format!("DECIMAL({p},{s})"),
        A::Date32 => "DATE".into(),
        A::Time64(_) => "TIME".into(),
        A::Timestamp(_, Some(_)) => "TIMESTAMPTZ".into(),
        A::Timestamp(..) => "TIMESTAMP".into(),
        A::Utf8 => "TEXT".into(),
        A::Null => "NULL".into(),
        A::Interval(_) => "INTERVAL".into(),
        other => other.to_string(),
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Column { name, .. } => f.write_str(name),
            Expr::Literal(a) => match crate::batch::format_value(a.as_ref(), 0) {
                None => f.write_str("NULL"),
                Some(v) => match a.data_type() {
                    A::Utf8 => write!(f, "'{}'", v.replace('\'', "''")),
                    A::Date32 => write!(f, "DATE '{v}'"),
                    A::Time64(_) => write!(f, "TIME '{v}'"),
                    A::Interval(_) => write!(f, "INTERVAL '{v}'"),
                    A::Timestamp(_, Some(_)) => write!(f, "TIMESTAMPTZ '{v}'"),
                    A::Timestamp(..) => write!(f, "TIMESTAMP '{v}'"),
                    _ => f.write_str(&v),
                },
            },
            Expr::Binary { op, left, right } => write!(f, "({left} {} {right})", op.symbol()),
            Expr::Not(e) => write!(f, "NOT {e}"),
            Expr::Neg(e) => write!(f, "-{e}"),
            Expr::IsNull { expr, negated } => {
                write!(f, "{expr} IS {}NULL", if *negated { "NOT " } else { "" })
            }
            Expr::InList {
                expr,
                list,
                negated,
                ..
            } => {
                write!(f, "{expr} {}IN (", if *negated { "NOT " } else { "" })?;
                for (i, e) in list.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{e}")?;
                }
                f.write_str(")")
            }
            Expr::InValues {
                expr,
                values,
                negated,
                ..
            } => {
                write!(f, "{expr} {}IN (", if *negated { "NOT " } else { "" })?;
                for i in 0..values.len() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}", Expr::Literal(values.slice(i, 1)))?;
                }
                f.write_str(")")
            }
            Expr::Bloom { expr, filter } => write!(
                f,
                "{expr} IN (a Bloom filter of {} keys, {} bytes)",
                filter.keys(),
                filter.bytes()
            ),
            Expr::Like {
                expr,
                pattern,
                negated,
                case_insensitive,
            } => write!(
                f,
                "{expr} {}{} '{}'",
                if *negated { "NOT " } else { "" },
                if *case_insensitive { "ILIKE" } else { "LIKE" },
                pattern.replace('\'', "''")
            ),
            Expr::Case { whens, otherwise } => {
                f.write_str("CASE")?;
                for (c, t) in whens {
                    write!(f, " WHEN {c} THEN {t}")?;
                }
                write!(f, " ELSE {otherwise} END")
            }
            Expr::Cast { expr, to, site } => match site {
                Some(site) => write!(f, "CAST({expr} AS {})", site.type_text),
                None => write!(f, "CAST({expr} AS {})", type_name(to)),
            },
            Expr::Extract { part, expr } => write!(f, "EXTRACT({part:?} FROM {expr})"),
            Expr::Substring { expr, start, len } => match len {
                Some(l) => write!(f, "SUBSTRING({expr} FROM {start} FOR {l})"),
                None => write!(f, "SUBSTRING({expr} FROM {start})"),
            },
            Expr::AddMonths { expr, months } => write!(f, "({expr} + INTERVAL '{months}' MONTH)"),
            Expr::AddDays { expr, days } => write!(f, "({expr} + INTERVAL '{days}' DAY)"),
            Expr::Upper(e) => write!(f, "UPPER({e})"),
            Expr::Lower(e) => write!(f, "LOWER({e})"),
            Expr::Length(e) => write!(f, "LENGTH({e})"),
            Expr::Abs(e) => write!(f, "ABS({e})"),
            Expr::Subquery(s) => write!(f, "({})", s.text),
            Expr::Window(w) => write!(f, "{}", w.text),
            Expr::Call { func, args, .. } if *func == super::func::Func::Concat => {
                write!(f, "({} || {})", args[0], args[1])
            }
            Expr::Call { func, args, .. } => {
                write!(f, "{func}(")?;
                for (i, e) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{e}")?;
                }
                f.write_str(")")
            }
            Expr::Coalesce(list) => {
                f.write_str("COALESCE(")?;
                for (i, e) in list.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{e}")?;
                }
                f.write_str(")")
            }
        }
    }
}

#[cfg(test)]
mod char_slice_tests {
    use super::char_slice;

    /// By bytes or by characters, the slice is the characters': ASCII,
    /// multi-byte characters before, inside and after the range, ranges
    /// past the end.
    #[test]
    fn slices_by_characters() {
        for v in [
            "",
            "a",
            "hello world",
            "héllo wörld",
            "日本語テキスト",
            "ab日c",
            "abcdé",
        ] {
            for skip in 0..12 {
                for take in 0..12 {
                    let want: String = v.chars().skip(skip).take(take).collect();
                    assert_eq!(char_slice(v, skip, take), want, "{v:?} {skip} {take}");
                }
            }
            assert_eq!(char_slice(v, 0, usize::MAX), v);
            assert_eq!(char_slice(v, usize::MAX, 3), "");
        }
    }
}

#[cfg(test)]
mod div_round_tests {
    use super::{div_round, div_round_wide};

    /// The 64- and 128-bit paths round as the 256-bit one: half away
    /// from zero, at the ends of each width and across signs.
    #[test]
    fn every_width_rounds_alike() {
        let mut xs: Vec<i128> = vec![0, 1, -1, 5, -5, 15, -15, 25, -25, 99, -99, 12345, -12345];
        for b in [31, 62, 63, 64, 100, 120, 126] {
            let e = 1i128 << b;
            xs.extend([e, -e, e - 1, -(e - 1), e + 1, -(e + 1)]);
        }
        xs.extend([i64::MAX as i128, i64::MIN as i128, i128::MAX, i128::MIN + 1]);
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let v = (state as i64) >> (state % 60);
            xs.push(v as i128);
        }
        let ys: Vec<i128> = vec![
            1,
            -1,
            2,
            -2,
            3,
            -3,
            4,
            7,
            -7,
            10,
            100,
            -1000,
            1 << 40,
            i64::MAX as i128,
            -(1i128 << 70),
        ];
        for &x in &xs {
            for &y in &ys {
                for up in [0, 1, 2, 4, 6, 20] {
                    let (a, b) = (div_round(x, y, up), div_round_wide(x, y, up));
                    assert_eq!(a.ok(), b.ok(), "{x} * 10^{up} / {y}");
                }
            }
        }
        assert_eq!(div_round(5, 2, 0).unwrap(), 3);
        assert_eq!(div_round(-5, 2, 0).unwrap(), -3);
        assert_eq!(div_round(5, -2, 0).unwrap(), -3);
        assert_eq!(div_round(4, 3, 0).unwrap(), 1);
        assert_eq!(div_round(1, 3, 2).unwrap(), 33);
        assert!(div_round(1, 0, 0).is_err());
    }
}
