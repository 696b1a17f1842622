//! Binding of scalar function calls: UPPER, LOWER, LENGTH and
//! CHAR_LENGTH of TEXT, ABS of a number, COALESCE of any one type.
//!
//! For: checking a call's arguments and types. Not for: aggregate calls
//! (the planner binds those, through `Grouping`) or evaluating functions
//! ([`crate::query::expr`]).

use arrow_schema::DataType as A;
use sqlparser::ast;

use super::{Binder, Scope, coerce, common_type, function_name, is_aggregate_name, is_numeric};
use crate::error::Result;
use crate::query::expr::{Expr, type_name};
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
        if is_aggregate_name(&name) {
            let Scope::Row { clause } = scope else {
                unreachable!("handled by bind")
            };
            return Err(plan_err(
                format!("aggregate functions are not allowed in {clause}"),
                e,
            ));
        }
        let args = self.plain_args(f, e)?;
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
            _ => Err(plan_err(
                format!("unknown function {}", name.to_uppercase()),
                e,
            )),
        }
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
