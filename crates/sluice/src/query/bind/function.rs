//! Binding of scalar function calls: UPPER, LOWER, LENGTH and
//! CHAR_LENGTH of TEXT, ABS of a number, COALESCE of any one type.
//!
//! For: checking a call's arguments and types. Not for: aggregate calls
//! (the planner binds those, through `Grouping`) or evaluating functions
//! ([`crate::query::expr`]).

use arrow_schema::DataType as A;
use sqlparser::ast;

use super::types::literals_as_the_others;
use super::{Binder, Scope, coerce, common_type, function_name, is_aggregate_name, is_numeric};
use crate::error::Result;
use crate::query::expr::{Expr, type_name};
use crate::query::func::Func;
use crate::query::sql::{plan_err, unsupported};

impl Binder<'_> {
    /// A scalar function call: UPPER, LOWER, LENGTH, CHAR_LENGTH, ABS,
    /// COALESCE; an aggregate's name here is refused (`scope` is per row).
    pub(super) fn function(
        &self,
        f: &ast::Function,
        e: &ast::Expr,
        scope: &mut Scope,
    ) -> Result<Expr> {
        let name = function_name(f);
        if f.over.is_some() {
            return Err(unsupported("window functions (OVER)", e));
        }
        if f.filter.is_some() && !is_aggregate_name(&name) {
            return Err(plan_err(
                format!("FILTER specified, but {name} is not an aggregate function"),
                e,
            ));
        }
        if name == "grouping" {
            return Err(super::grouping_misplaced(e));
        }
        if is_aggregate_name(&name) {
            let Scope::Row { clause } = scope else {
                unreachable!("handled by bind")
            };
            return Err(plan_err(
                format!("aggregate functions are not allowed in {clause}"),
                e,
            ));
        }
        // The statement's time, as a constant: now() and its synonyms an
        // instant, CURRENT_DATE the session's local date of it.
        if let Some(x) = self.clock(&name) {
            if !self.plain_args(f, e)?.is_empty() {
                return Err(plan_err(
                    format!("{} takes no arguments", name.to_uppercase()),
                    e,
                ));
            }
            return Ok(x);
        }
        let args = self.plain_args(f, e)?;
        // substr(s, from [, count]): SUBSTRING(s FROM from [FOR count]).
        if name == "substr" {
            if !(2..=3).contains(&args.len()) {
                return Err(plan_err("SUBSTR takes 2 or 3 arguments".into(), e));
            }
            return self.substring(&args[0], Some(&args[1]), args.get(2), e, scope);
        }
        let mut bound = Vec::new();
        for a in &args {
            bound.push(self.bind(a, scope)?);
        }
        let types: Vec<A> = bound.iter().map(|b| self.ty(b, scope)).collect();
        let one = |what: &str| -> Result<()> {
            if bound.len() != 1 {
                return Err(plan_err(format!("{what} takes one argument"), e));
            }
            Ok(())
        };
        match name.as_str() {
            "upper" | "lower" | "length" | "char_length" => {
                one(&name.to_uppercase())?;
                if types[0] != A::Utf8 && types[0] != A::Null {
                    return Err(plan_err(
                        format!(
                            "{} needs TEXT, not {}",
                            name.to_uppercase(),
                            type_name(&types[0])
                        ),
                        e,
                    ));
                }
                let x = Box::new(coerce(bound.remove(0), &types[0], &A::Utf8));
                Ok(match name.as_str() {
                    "upper" => Expr::Upper(x),
                    "lower" => Expr::Lower(x),
                    _ => Expr::Length(x),
                })
            }
            // The type of its argument, by PostgreSQL's name for it (a
            // quoted literal has none yet: `unknown`, as there).
            "pg_typeof" => {
                one("PG_TYPEOF")?;
                let quoted = matches!(
                    &args[0],
                    ast::Expr::Value(v) if matches!(v.value, ast::Value::SingleQuotedString(_))
                );
                let name = if quoted {
                    "unknown"
                } else {
                    pg_type_name(&types[0])
                };
                Ok(Expr::Literal(std::sync::Arc::new(
                    arrow_array::StringArray::from(vec![name]),
                )))
            }
            "abs" => {
                one("ABS")?;
                if !is_numeric(&types[0]) && types[0] != A::Null {
                    return Err(plan_err(
                        format!("ABS needs a number, not {}", type_name(&types[0])),
                        e,
                    ));
                }
                let target = if types[0] == A::Null {
                    A::Int64
                } else {
                    types[0].clone()
                };
                Ok(Expr::Abs(Box::new(coerce(
                    bound.remove(0),
                    &types[0],
                    &target,
                ))))
            }
            "coalesce" => {
                if bound.is_empty() {
                    return Err(plan_err("COALESCE needs arguments".into(), e));
                }
                let mut types = types.clone();
                let written: Vec<Option<&ast::Expr>> = args.iter().map(Some).collect();
                literals_as_the_others(&mut bound, &mut types, &written, e)?;
                let target = common_type(&types).ok_or_else(|| {
                    plan_err("COALESCE arguments have incompatible types".into(), e)
                })?;
                Ok(Expr::Coalesce(
                    bound
                        .into_iter()
                        .zip(&types)
                        .map(|(b, t)| coerce(b, t, &target))
                        .collect(),
                ))
            }
            "age" => {
                use crate::query::interval::{Op, TYPE};
                if !(1..=2).contains(&bound.len()) {
                    return Err(plan_err("AGE takes 1 or 2 arguments".into(), e));
                }
                // age(x): from midnight of the current date.
                let (mut bound, mut types) = (bound, types);
                if bound.len() == 1 {
                    let today = self
                        .clock("current_date")
                        .ok_or_else(|| crate::Error::Internal("no session zone".into()))?;
                    bound.insert(0, today);
                    types.insert(0, A::Date32);
                }
                let stamp = |t: &A| match t {
                    A::Date32 | A::Null => {
                        Some(A::Timestamp(arrow_schema::TimeUnit::Microsecond, None))
                    }
                    A::Timestamp(..) => Some(t.clone()),
                    _ => None,
                };
                let to = match (stamp(&types[0]), stamp(&types[1])) {
                    (Some(a), Some(b)) => common_type(&[a, b]),
                    _ => None,
                }
                .ok_or_else(|| {
                    plan_err(
                        format!(
                            "AGE needs timestamps, not {} and {}",
                            type_name(&types[0]),
                            type_name(&types[1])
                        ),
                        e,
                    )
                })?;
                let args = bound
                    .into_iter()
                    .zip(&types)
                    .map(|(b, t)| coerce(b, t, &to))
                    .collect();
                Ok(Expr::Call {
                    func: Func::Interval(Op::Age),
                    args,
                    ty: TYPE,
                })
            }
            "to_char" => {
                if bound.len() != 2 {
                    return Err(plan_err("TO_CHAR takes 2 arguments".into(), e));
                }
                if !matches!(types[1], A::Utf8 | A::Null) {
                    return Err(plan_err(
                        format!("TO_CHAR needs a TEXT format, not {}", type_name(&types[1])),
                        e,
                    ));
                }
                // A constant format is read once here: a wrong one fails
                // the statement, not its first row.
                if let Expr::Literal(a) = &bound[1]
                    && a.data_type() == &A::Utf8
                    && a.is_valid(0)
                {
                    use arrow_array::cast::AsArray;
                    let text = a.as_string::<i32>().value(0);
                    if is_numeric(&types[0]) {
                        crate::query::to_char_num::NumFormat::parse(text)?;
                    } else {
                        crate::query::to_char::Template::parse(text).map_err(|er| match er {
                            crate::Error::Unsupported(m) => unsupported(&m, e),
                            other => other,
                        })?;
                    }
                }
                let to = match &types[0] {
                    A::Timestamp(..) => types[0].clone(),
                    A::Date32 | A::Null => A::Timestamp(arrow_schema::TimeUnit::Microsecond, None),
                    t if is_numeric(t) => t.clone(),
                    t => {
                        return Err(plan_err(
                            format!(
                                "TO_CHAR needs a DATE, TIMESTAMP or number, not {}",
                                type_name(t)
                            ),
                            e,
                        ));
                    }
                };
                let fmt = bound.pop().unwrap_or_else(|| unreachable!());
                let x = bound.pop().unwrap_or_else(|| unreachable!());
                Ok(Expr::Call {
                    func: Func::ToChar,
                    args: vec![coerce(x, &types[0], &to), coerce(fmt, &types[1], &A::Utf8)],
                    ty: A::Utf8,
                })
            }
            "justify_hours" | "justify_days" | "justify_interval" => {
                use crate::query::interval::{Op, TYPE};
                one(&name.to_uppercase())?;
                if types[0] != TYPE && types[0] != A::Null {
                    return Err(plan_err(
                        format!(
                            "{} needs an INTERVAL, not {}",
                            name.to_uppercase(),
                            type_name(&types[0])
                        ),
                        e,
                    ));
                }
                let op = match name.as_str() {
                    "justify_hours" => Op::JustifyHours,
                    "justify_days" => Op::JustifyDays,
                    _ => Op::Justify,
                };
                Ok(Expr::Call {
                    func: Func::Interval(op),
                    args: vec![coerce(bound.remove(0), &types[0], &TYPE)],
                    ty: TYPE,
                })
            }
            "nullif" => {
                if bound.len() != 2 {
                    return Err(plan_err("NULLIF takes two arguments".into(), e));
                }
                // CASE WHEN a = b THEN NULL ELSE a END (a NULL comparison
                // is not true: a).
                let b = bound.pop().unwrap_or_else(|| unreachable!());
                let a = bound.pop().unwrap_or_else(|| unreachable!());
                let eq = self.binary(crate::query::expr::BinOp::Eq, a.clone(), b, scope, e)?;
                Ok(Expr::Case {
                    whens: vec![(
                        eq,
                        Expr::Cast {
                            expr: Box::new(Expr::Literal(arrow_array::new_null_array(&A::Null, 1))),
                            to: types[0].clone(),
                            site: None,
                        },
                    )],
                    otherwise: Box::new(a),
                })
            }
            _ => match func_of(&name) {
                Some(func) => self.call(func, bound, types, e),
                None => Err(plan_err(
                    format!("unknown function {}", name.to_uppercase()),
                    e,
                )),
            },
        }
    }

    /// `now()`, `current_timestamp`, `localtimestamp`, `current_date`,
    /// `localtime` as
    /// literals of the time the statement is bound (in the session's zone);
    /// `None` for another name.
    fn clock(&self, name: &str) -> Option<Expr> {
        use std::sync::Arc;
        // One time for the whole statement (see `Text`).
        let now = self.text.1;
        let instant = || now;
        let A::Timestamp(_, zone) = &self.tz else {
            return None;
        };
        let local = |us: i64| crate::zone::Zone::of(zone.as_deref()).to_local(us);
        Some(Expr::Literal(match name {
            "now" | "current_timestamp" | "transaction_timestamp" | "statement_timestamp" => {
                Arc::new(
                    arrow_array::TimestampMicrosecondArray::from(vec![instant()])
                        .with_timezone_opt(zone.clone()),
                )
            }
            "localtimestamp" => {
                Arc::new(arrow_array::TimestampMicrosecondArray::from(vec![local(
                    instant(),
                )]))
            }
            "current_date" => Arc::new(arrow_array::Date32Array::from(vec![
                local(instant()).div_euclid(86_400_000_000) as i32,
            ])),
            // The session's time of day (`current_time` is PostgreSQL's
            // time with time zone, a type sluice has not).
            "localtime" => Arc::new(arrow_array::Time64MicrosecondArray::from(vec![
                local(instant()).rem_euclid(86_400_000_000),
            ])),
            _ => return None,
        }))
    }

    /// A call of `func` (see [`crate::query::func`]) with its arguments
    /// brought to the types it takes.
    pub(super) fn call(
        &self,
        func: Func,
        bound: Vec<Expr>,
        types: Vec<A>,
        e: &ast::Expr,
    ) -> Result<Expr> {
        let (bound, types) = unknown_literals(func, bound, types, e)?;
        let name = func.name();
        let count = |lo: usize, hi: usize| -> Result<()> {
            if bound.len() < lo || bound.len() > hi {
                let n = if lo == hi {
                    format!("{lo}")
                } else {
                    format!("{lo} to {hi}")
                };
                return Err(plan_err(format!("{name} takes {n} arguments"), e));
            }
            Ok(())
        };
        let text_arg = |i: usize, any: bool| -> Result<()> {
            let t = &types[i];
            if *t == A::Utf8 || *t == A::Null || any {
                Ok(())
            } else {
                Err(plan_err(
                    format!(
                        "{name} needs TEXT, not {} (argument {})",
                        type_name(t),
                        i + 1
                    ),
                    e,
                ))
            }
        };
        let int_arg = |i: usize| -> Result<()> {
            match &types[i] {
                A::Int32 | A::Int64 | A::Null => Ok(()),
                t => Err(plan_err(
                    format!(
                        "{name} needs an integer, not {} (argument {})",
                        type_name(t),
                        i + 1
                    ),
                    e,
                )),
            }
        };
        let num_arg = |i: usize| -> Result<()> {
            if is_numeric(&types[i]) || types[i] == A::Null {
                Ok(())
            } else {
                Err(plan_err(
                    format!(
                        "{name} needs a number, not {} (argument {})",
                        type_name(&types[i]),
                        i + 1
                    ),
                    e,
                ))
            }
        };
        // Each argument's target type, and the result's.
        let (targets, ty): (Vec<A>, A) = match func {
            Func::SortRow { .. } | Func::Interval(_) | Func::ToChar => {
                return Err(crate::Error::Internal(format!(
                    "{name} is not called by name"
                )));
            }
            Func::DateTrunc | Func::DatePart => {
                count(2, 2)?;
                // The unit: a constant, checked here.
                let unit = match &bound[0] {
                    Expr::Literal(a) if a.data_type() == &A::Utf8 => {
                        use arrow_array::cast::AsArray;
                        Some(a.as_string::<i32>().value(0).to_string())
                    }
                    Expr::Literal(a) if a.is_null(0) => None,
                    _ => {
                        return Err(plan_err(
                            format!("{name}'s unit must be a constant, such as 'month'"),
                            e,
                        ));
                    }
                };
                if let Some(u) = &unit {
                    let known = crate::query::func::Unit::of(u);
                    if known.is_none_or(|k| func == Func::DateTrunc && !k.truncates()) {
                        return Err(crate::error::Error::Argument {
                            state: "22023",
                            message: format!("{name}: unit \"{u}\" not recognized"),
                        });
                    }
                }
                let x = match &types[1] {
                    A::Date32 if func == Func::DateTrunc => self.tz.clone(),
                    t @ (A::Interval(_) | A::Time64(_)) if func == Func::DatePart => t.clone(),
                    t @ (A::Date32 | A::Timestamp(..)) => t.clone(),
                    A::Null => A::Timestamp(arrow_schema::TimeUnit::Microsecond, None),
                    t => {
                        return Err(plan_err(
                            format!("{name} needs a DATE or TIMESTAMP, not {}", type_name(t)),
                            e,
                        ));
                    }
                };
                // DATE_TRUNC of a DATE is a TIMESTAMPTZ (of the session's
                // zone), as in PostgreSQL.
                let ty = if func == Func::DatePart {
                    A::Float64
                } else {
                    x.clone()
                };
                (vec![A::Utf8, x], ty)
            }
            Func::DatePlusDays | Func::DateMinusDate => {
                // Built by the binder's arithmetic, its arguments typed.
                let second = if func == Func::DatePlusDays {
                    A::Int64
                } else {
                    A::Date32
                };
                let ty = if func == Func::DatePlusDays {
                    A::Date32
                } else {
                    A::Int64
                };
                (vec![A::Date32, second], ty)
            }
            Func::MakeDate => {
                count(3, 3)?;
                (0..3).try_for_each(int_arg)?;
                (vec![A::Int64; 3], A::Date32)
            }
            Func::MakeTime => {
                count(3, 3)?;
                (0..2).try_for_each(int_arg)?;
                num_arg(2)?;
                (
                    vec![A::Int64, A::Int64, A::Float64],
                    A::Time64(arrow_schema::TimeUnit::Microsecond),
                )
            }
            Func::MakeInterval => {
                count(7, 7)?;
                (0..6).try_for_each(int_arg)?;
                num_arg(6)?;
                let mut t = vec![A::Int64; 6];
                t.push(A::Float64);
                (t, crate::query::interval::TYPE)
            }
            Func::Concat => {
                count(2, 2)?;
                // text || anything: the other side as text.
                // (An untyped NULL is text here: `1 || NULL` is NULL.)
                if ![&types[0], &types[1]]
                    .iter()
                    .any(|t| matches!(t, A::Utf8 | A::Null))
                {
                    text_arg(0, false)?;
                    text_arg(1, false)?;
                }
                (vec![A::Utf8; 2], A::Utf8)
            }
            Func::ConcatAll => {
                count(1, usize::MAX)?;
                // A boolean as PostgreSQL's output writes it: t or f.
                let args = bound
                    .into_iter()
                    .zip(&types)
                    .map(|(b, t)| match t {
                        A::Boolean => {
                            let text = |v: &str| {
                                Expr::Literal(std::sync::Arc::new(arrow_array::StringArray::from(
                                    vec![v],
                                )))
                            };
                            Expr::Case {
                                whens: vec![
                                    (b.clone(), text("t")),
                                    (Expr::Not(Box::new(b)), text("f")),
                                ],
                                otherwise: Box::new(Expr::Literal(arrow_array::new_null_array(
                                    &A::Utf8,
                                    1,
                                ))),
                            }
                        }
                        t => coerce(b, t, &A::Utf8),
                    })
                    .collect();
                return Ok(Expr::Call {
                    func,
                    args,
                    ty: A::Utf8,
                });
            }
            Func::Left | Func::Right | Func::Repeat => {
                count(2, 2)?;
                text_arg(0, false)?;
                int_arg(1)?;
                (vec![A::Utf8, A::Int64], A::Utf8)
            }
            Func::Lpad | Func::Rpad => {
                count(2, 3)?;
                text_arg(0, false)?;
                int_arg(1)?;
                if bound.len() > 2 {
                    text_arg(2, false)?;
                }
                (
                    vec![A::Utf8, A::Int64, A::Utf8][..bound.len()].to_vec(),
                    A::Utf8,
                )
            }
            Func::RegexpLike => {
                count(2, 3)?;
                (0..bound.len()).try_for_each(|i| text_arg(i, false))?;
                (vec![A::Utf8; bound.len()], A::Boolean)
            }
            Func::RegexpReplace => {
                count(3, 4)?;
                (0..bound.len()).try_for_each(|i| text_arg(i, false))?;
                (vec![A::Utf8; bound.len()], A::Utf8)
            }
            Func::RegexpCount | Func::RegexpSubstr => {
                let most = if func == Func::RegexpCount { 4 } else { 6 };
                count(2, most)?;
                // (s, pattern [, start [, n]] [, flags [, subexpr]])
                let flags_at = if func == Func::RegexpCount { 3 } else { 4 };
                let targets: Vec<A> = (0..bound.len())
                    .map(|i| {
                        if i < 2 || i == flags_at {
                            A::Utf8
                        } else {
                            A::Int64
                        }
                    })
                    .collect();
                for (i, t) in targets.iter().enumerate() {
                    if *t == A::Utf8 {
                        text_arg(i, false)?;
                    } else {
                        int_arg(i)?;
                    }
                }
                let ty = if func == Func::RegexpCount {
                    A::Int64
                } else {
                    A::Utf8
                };
                (targets, ty)
            }
            Func::Replace => {
                count(3, 3)?;
                (0..3).try_for_each(|i| text_arg(i, false))?;
                (vec![A::Utf8; 3], A::Utf8)
            }
            Func::SplitPart => {
                count(3, 3)?;
                text_arg(0, false)?;
                text_arg(1, false)?;
                int_arg(2)?;
                (vec![A::Utf8, A::Utf8, A::Int64], A::Utf8)
            }
            Func::StartsWith | Func::Strpos => {
                count(2, 2)?;
                text_arg(0, false)?;
                text_arg(1, false)?;
                let ty = if func == Func::Strpos {
                    A::Int64
                } else {
                    A::Boolean
                };
                (vec![A::Utf8; 2], ty)
            }
            Func::SizePretty => {
                count(1, 1)?;
                int_arg(0)?;
                (vec![A::Int64], A::Utf8)
            }
            Func::Initcap | Func::Reverse => {
                count(1, 1)?;
                text_arg(0, false)?;
                (vec![A::Utf8], A::Utf8)
            }
            Func::Btrim | Func::Ltrim | Func::Rtrim => {
                count(1, 2)?;
                (0..bound.len()).try_for_each(|i| text_arg(i, false))?;
                (vec![A::Utf8; bound.len()], A::Utf8)
            }
            Func::SingleRow => {
                count(2, 3)?;
                let mut t = vec![A::Int64, types[1].clone()];
                t.extend(types.get(2).cloned());
                (t, types[1].clone())
            }
            Func::JsonBuildObject { .. } => {
                if bound.len() % 2 != 0 {
                    return Err(crate::Error::Argument {
                        state: "22023",
                        message: format!(
                            "argument list must have even number of elements{}",
                            crate::query::sql::at(ast::Spanned::span(e))
                        ),
                    });
                }
                // A value that is itself a json_build_object is JSON,
                // not text: written as it is.
                let mut raw = 0u64;
                for (i, b) in bound.iter().enumerate().skip(1).step_by(2).take(32) {
                    if matches!(
                        b,
                        Expr::Call {
                            func: Func::JsonBuildObject { .. },
                            ..
                        }
                    ) {
                        raw |= 1 << (i / 2);
                    }
                }
                let args = bound;
                return Ok(Expr::Call {
                    func: Func::JsonBuildObject { raw },
                    args,
                    ty: A::Utf8,
                });
            }
            Func::Greatest | Func::Least => {
                count(1, usize::MAX)?;
                let to = common_type(&types).ok_or_else(|| {
                    plan_err(format!("{name} arguments have incompatible types"), e)
                })?;
                // PostgreSQL's order of intervals (a month as 30 days) is
                // not their stored fields'.
                if to == crate::query::interval::TYPE {
                    return Err(unsupported(&format!("{name} of INTERVAL values"), e));
                }
                let to = match to {
                    A::Int32 => A::Int64,
                    A::Decimal128(_, s) => A::Decimal128(38, s),
                    t => t,
                };
                (vec![to.clone(); bound.len()], to)
            }
            Func::Bit(op) => {
                let n = if op == crate::query::func::BitOp::Not {
                    1
                } else {
                    2
                };
                count(n, n)?;
                if !types
                    .iter()
                    .all(|t| matches!(t, A::Int32 | A::Int64 | A::Null))
                {
                    let shown: Vec<String> = types.iter().map(type_name).collect();
                    return Err(crate::Error::Argument {
                        state: "42883",
                        message: format!(
                            "operator does not exist: {} {name} {} (bitwise operators take integers)",
                            if n == 2 { shown[0].as_str() } else { "" },
                            shown[n - 1]
                        ),
                    });
                }
                // INTEGER with INTEGER stays INTEGER (a shift's count
                // then modulo 32, as PostgreSQL's int4 operators do).
                let to = if types.iter().all(|t| matches!(t, A::Int32 | A::Null))
                    && types.contains(&A::Int32)
                {
                    A::Int32
                } else {
                    A::Int64
                };
                (vec![to.clone(); n], to)
            }
            Func::Mod => {
                count(2, 2)?;
                num_arg(0)?;
                num_arg(1)?;
                let to = match common_type(&types) {
                    Some(A::Int32 | A::Int64 | A::Null) => A::Int64,
                    Some(A::Decimal128(_, s)) => A::Decimal128(38, s),
                    _ => {
                        return Err(plan_err(
                            format!(
                                "MOD (%) of {} and {} does not exist (integers and decimals only)",
                                type_name(&types[0]),
                                type_name(&types[1])
                            ),
                            e,
                        ));
                    }
                };
                (vec![to.clone(); 2], to)
            }
            Func::Floor | Func::Ceil | Func::Round | Func::Trunc | Func::Sign => {
                count(
                    1,
                    if matches!(func, Func::Round | Func::Trunc) {
                        2
                    } else {
                        1
                    },
                )?;
                num_arg(0)?;
                if bound.len() == 2 {
                    // round(x, n) / trunc(x, n): a DECIMAL of n places (of
                    // a DOUBLE too, as PostgreSQL's round(numeric, int)
                    // after the double's cast); n a constant.
                    int_arg(1)?;
                    let n = match &bound[1] {
                        Expr::Literal(a) => literal_int(a),
                        Expr::Neg(x) => match &**x {
                            Expr::Literal(a) => literal_int(a).and_then(i64::checked_neg),
                            _ => None,
                        },
                        _ => None,
                    }
                    .ok_or_else(|| {
                        plan_err(format!("{name}'s number of places must be a constant"), e)
                    })?;
                    if !(-38..=38).contains(&n) {
                        return Err(plan_err(
                            format!("{name} to {n} places: at most 38 either side of the point"),
                            e,
                        ));
                    }
                    // A DOUBLE as it is: rounded from its 15 digits.
                    let from = match &types[0] {
                        A::Decimal128(_, s) => A::Decimal128(38, *s),
                        A::Float64 => A::Float64,
                        _ => A::Decimal128(38, 0),
                    };
                    let mut bound = bound;
                    bound.truncate(1);
                    let x = coerce(bound.remove(0), &types[0], &from);
                    // Negative places: round at tens, hundreds…, then
                    // scale 0 (round(1234.5, -2) is 1200).
                    let scale = n.clamp(0, 38) as i8;
                    let places = if n < 0 { n } else { scale as i64 };
                    return Ok(decimal_places(func, x, places, scale));
                }
                match &types[0] {
                    // Of a DECIMAL: a DECIMAL of scale 0.
                    A::Decimal128(_, s) => (vec![A::Decimal128(38, *s)], A::Decimal128(38, 0)),
                    _ => (vec![A::Float64], A::Float64),
                }
            }
            // log(b, x): to base b.
            Func::Log10 if bound.len() == 2 => {
                num_arg(0)?;
                num_arg(1)?;
                let args = bound
                    .into_iter()
                    .zip(&types)
                    .map(|(b, t)| coerce(b, t, &A::Float64))
                    .collect();
                return Ok(Expr::Call {
                    func: Func::LogBase,
                    args,
                    ty: A::Float64,
                });
            }
            Func::Sqrt | Func::Ln | Func::Log10 | Func::LogBase | Func::Exp => {
                count(1, 1)?;
                num_arg(0)?;
                (vec![A::Float64], A::Float64)
            }
            Func::Power => {
                count(2, 2)?;
                num_arg(0)?;
                num_arg(1)?;
                (vec![A::Float64; 2], A::Float64)
            }
        };
        // GREATEST and LEAST of INTs are INT, as in PostgreSQL (computed
        // as BIGINT: every value fits back).
        let narrow =
            matches!(func, Func::Greatest | Func::Least) && common_type(&types) == Some(A::Int32);
        let args = bound
            .into_iter()
            .zip(types.iter().zip(&targets))
            .map(|(b, (t, to))| coerce(b, t, to))
            .collect();
        let call = Expr::Call { func, args, ty };
        Ok(if narrow {
            coerce(call, &A::Int64, &A::Int32)
        } else {
            call
        })
    }

    /// The arguments of a call that takes plain expressions only.
    pub(crate) fn plain_args(&self, f: &ast::Function, node: &ast::Expr) -> Result<Vec<ast::Expr>> {
        match &f.args {
            ast::FunctionArguments::None => Ok(vec![]),
            ast::FunctionArguments::Subquery(_) => Err(unsupported("a subquery argument", node)),
            ast::FunctionArguments::List(list) => {
                if !list.clauses.is_empty() {
                    return Err(unsupported("function argument clauses", node));
                }
                if function_name(f).eq_ignore_ascii_case("make_interval") {
                    return make_interval_args(&list.args, node);
                }
                list.args
                    .iter()
                    .map(|a| match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => Ok(x.clone()),
                        _ => Err(unsupported("this function argument", node)),
                    })
                    .collect()
            }
        }
    }
}

/// `make_interval`'s arguments in its order (years, months, weeks, days,
/// hours, mins, secs): given by position, then by name
/// (`make_interval(days => 10)`), the rest 0, as PostgreSQL's defaults.
fn make_interval_args(args: &[ast::FunctionArg], node: &ast::Expr) -> Result<Vec<ast::Expr>> {
    const NAMES: [&str; 7] = ["years", "months", "weeks", "days", "hours", "mins", "secs"];
    let mut slots: [Option<ast::Expr>; 7] = Default::default();
    let mut named = false;
    for (i, a) in args.iter().enumerate() {
        let (slot, x) = match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) if !named => (i, x),
            ast::FunctionArg::Named {
                name,
                arg: ast::FunctionArgExpr::Expr(x),
                ..
            } => {
                named = true;
                let at = NAMES
                    .iter()
                    .position(|n| n.eq_ignore_ascii_case(&name.value))
                    .ok_or_else(|| {
                        plan_err(
                            format!(
                                "make_interval has no argument {} (its arguments: {})",
                                name.value,
                                NAMES.join(", ")
                            ),
                            node,
                        )
                    })?;
                (at, x)
            }
            ast::FunctionArg::Unnamed(_) => {
                return Err(plan_err(
                    "a positional argument cannot follow a named one".into(),
                    node,
                ));
            }
            _ => return Err(unsupported("this function argument", node)),
        };
        let Some(s) = slots.get_mut(slot) else {
            return Err(plan_err(
                "make_interval takes at most 7 arguments".into(),
                node,
            ));
        };
        if s.replace(x.clone()).is_some() {
            return Err(plan_err(
                format!("make_interval's argument {} is given twice", NAMES[slot]),
                node,
            ));
        }
    }
    Ok(slots
        .into_iter()
        .map(|s| {
            s.unwrap_or_else(|| {
                ast::Expr::Value(ast::Value::Number("0".into(), false).with_empty_span())
            })
        })
        .collect())
}

/// The function of [`crate::query::func`] a name calls.
fn func_of(name: &str) -> Option<Func> {
    Some(match name {
        "concat" => Func::ConcatAll,
        "left" => Func::Left,
        "right" => Func::Right,
        "lpad" => Func::Lpad,
        "rpad" => Func::Rpad,
        "replace" => Func::Replace,
        "regexp_like" => Func::RegexpLike,
        "regexp_count" => Func::RegexpCount,
        "regexp_substr" => Func::RegexpSubstr,
        "regexp_replace" => Func::RegexpReplace,
        "split_part" => Func::SplitPart,
        "starts_with" => Func::StartsWith,
        "strpos" => Func::Strpos,
        "initcap" => Func::Initcap,
        "repeat" => Func::Repeat,
        "reverse" => Func::Reverse,
        "pg_size_pretty" => Func::SizePretty,
        "btrim" => Func::Btrim,
        "ltrim" => Func::Ltrim,
        "rtrim" => Func::Rtrim,
        "greatest" => Func::Greatest,
        "json_build_object" => Func::JsonBuildObject { raw: 0 },
        crate::query::plan::SINGLE_ROW => Func::SingleRow,
        "least" => Func::Least,
        "mod" => Func::Mod,
        "floor" => Func::Floor,
        "ceil" | "ceiling" => Func::Ceil,
        "round" => Func::Round,
        "trunc" => Func::Trunc,
        "sqrt" => Func::Sqrt,
        "power" | "pow" => Func::Power,
        "ln" => Func::Ln,
        "log" | "log10" => Func::Log10,
        "exp" => Func::Exp,
        "sign" => Func::Sign,
        "date_trunc" => Func::DateTrunc,
        "date_part" => Func::DatePart,
        "make_date" => Func::MakeDate,
        "make_time" => Func::MakeTime,
        "make_interval" => Func::MakeInterval,
        _ => return None,
    })
}

/// A one-row integer literal's value.
/// PostgreSQL's name of the type a value of `t` has (`pg_typeof`,
/// `format_type` without a modifier).
fn pg_type_name(t: &A) -> &'static str {
    match t {
        A::Null => "unknown",
        A::Boolean => "boolean",
        A::Int16 => "smallint",
        A::Int32 => "integer",
        A::Int64 => "bigint",
        A::Float32 => "real",
        A::Float64 => "double precision",
        A::Decimal32(..) | A::Decimal64(..) | A::Decimal128(..) | A::Decimal256(..) => "numeric",
        A::Utf8 | A::LargeUtf8 | A::Utf8View => "text",
        A::Date32 | A::Date64 => "date",
        A::Time32(_) | A::Time64(_) => "time without time zone",
        A::Timestamp(_, None) => "timestamp without time zone",
        A::Timestamp(_, Some(_)) => "timestamp with time zone",
        A::Interval(_) => "interval",
        A::Binary | A::LargeBinary | A::BinaryView => "bytea",
        A::List(f) | A::LargeList(f) => match f.data_type() {
            A::Int32 => "integer[]",
            A::Int64 => "bigint[]",
            A::Float64 => "double precision[]",
            A::Utf8 => "text[]",
            A::Boolean => "boolean[]",
            A::Date32 => "date[]",
            A::Decimal128(..) => "numeric[]",
            _ => "anyarray",
        },
        A::Dictionary(_, v) => pg_type_name(v),
        _ => "unknown",
    }
}

fn literal_int(a: &arrow_array::ArrayRef) -> Option<i64> {
    use arrow_array::cast::AsArray;
    if a.is_null(0) {
        return None;
    }
    match a.data_type() {
        A::Int64 => Some(a.as_primitive::<arrow_array::types::Int64Type>().value(0)),
        A::Int32 => Some(a.as_primitive::<arrow_array::types::Int32Type>().value(0) as i64),
        _ => None,
    }
}

/// ROUND or TRUNC (`func`) of the DECIMAL `x` to `places` places
/// (negative: tens, hundreds…), as a DECIMAL of `scale`.
fn decimal_places(func: Func, x: Expr, places: i64, scale: i8) -> Expr {
    Expr::Call {
        func,
        args: vec![
            x,
            Expr::Literal(std::sync::Arc::new(arrow_array::Int64Array::from(vec![
                places,
            ]))),
        ],
        ty: A::Decimal128(38, scale),
    }
}

/// Quoted literals among a call's arguments where the function takes no
/// text, read as PostgreSQL reads an unknown-typed literal: as the type
/// the function takes there (`sqrt('4')`, `left(s, '2')`), or for
/// GREATEST, LEAST and MOD as the other arguments' type
/// (`greatest(d, '2000-01-01')` of a DATE `d`).
fn unknown_literals(
    func: Func,
    mut bound: Vec<Expr>,
    mut types: Vec<A>,
    e: &ast::Expr,
) -> Result<(Vec<Expr>, Vec<A>)> {
    if matches!(func, Func::Greatest | Func::Least) {
        let written: Vec<Option<&ast::Expr>> = match e {
            ast::Expr::Function(f) => match &f.args {
                ast::FunctionArguments::List(l) => l
                    .args
                    .iter()
                    .map(|a| match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => Some(x),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        literals_as_the_others(&mut bound, &mut types, &written, e)?;
        return Ok((bound, types));
    }
    let quoted = |x: &Expr| matches!(x, Expr::Literal(a) if a.data_type() == &A::Utf8);
    let others: Vec<A> = types
        .iter()
        .zip(&bound)
        .filter(|(t, b)| !(quoted(b) && **t == A::Utf8))
        .map(|(t, _)| t.clone())
        .collect();
    let n = bound.len();
    for i in 0..n {
        if types[i] != A::Utf8 || !quoted(&bound[i]) {
            continue;
        }
        let want = match func {
            Func::Mod => match common_type(&others) {
                Some(t) if t != A::Null && t != A::Utf8 => t,
                // Every argument a quoted literal: MOD of numbers, as
                // PostgreSQL resolves it.
                _ => A::Int64,
            },
            Func::Round | Func::Trunc if n == 2 => {
                if i == 0 {
                    let Expr::Literal(a) = &bound[i] else {
                        continue;
                    };
                    super::unknown_as(a, &A::Decimal128(38, 0))
                } else {
                    A::Int64
                }
            }
            Func::Floor
            | Func::Ceil
            | Func::Round
            | Func::Trunc
            | Func::Sign
            | Func::Sqrt
            | Func::Ln
            | Func::Log10
            | Func::LogBase
            | Func::Exp
            | Func::Power => A::Float64,
            Func::Left | Func::Right | Func::Repeat | Func::Lpad | Func::Rpad if i == 1 => A::Int64,
            Func::SplitPart if i == 2 => A::Int64,
            Func::MakeDate => A::Int64,
            Func::MakeTime if i == 2 => A::Float64,
            Func::MakeInterval if i == 6 => A::Float64,
            Func::MakeTime | Func::MakeInterval => A::Int64,
            _ => continue,
        };
        let Expr::Literal(a) = &bound[i] else {
            continue;
        };
        let c = crate::query::expr::cast(a, &want).map_err(|er| plan_err(er.to_string(), e))?;
        bound[i] = Expr::Literal(c);
        types[i] = want;
    }
    Ok((bound, types))
}
