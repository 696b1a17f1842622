//! GROUP BY with grouping sets: `ROLLUP (…)`, `CUBE (…)`,
//! `GROUPING SETS (…)` and `()`, and the `grouping(…)` function.
//!
//! A GROUP BY list is a cross product: each item gives a list of sets
//! (a plain expression one set of itself, `ROLLUP (a, b)` the sets
//! `(a, b)`, `(a)`, `()`, `CUBE (a, b)` all four subsets, `GROUPING SETS`
//! the sets it names, `()` the empty set), and the query's sets are every
//! concatenation of one set from each item, as in PostgreSQL.
//!
//! The plan keeps one list of distinct keys and, per set, which keys it
//! groups by; the aggregate adds a last key, the set's number, so that a
//! key NULL because its set does not group by it is a different group
//! from a key NULL in the data ([`super::super::grouping`] runs it: each
//! input row is folded once per set). `grouping(a, b)` is a function of
//! that number: bit 1 for each argument its set does not group by, the
//! first argument the most significant.

use std::sync::Arc;

use arrow_array::{Int32Array, Int64Array};
use sqlparser::ast;

use super::{Text, plan_err, unsupported};
use crate::error::{Error, Result};
use crate::query::bind::Binder;
use crate::query::expr::{BinOp, Expr};

/// PostgreSQL's limit on the number of grouping sets of one query.
pub(super) const MAX_SETS: usize = 4096;

/// The name the set-number key goes by: no expression a query writes
/// prints as it, so no select item is taken for it.
pub(super) const SET_KEY: &str = "\u{1}grouping set";

/// A GROUP BY clause as written.
pub(super) struct GroupBy {
    /// Every key expression written, in order (positions and aliases
    /// unresolved); the same expression may come more than once.
    pub exprs: Vec<ast::Expr>,
    /// The grouping sets as indexes into `exprs`, when the clause has
    /// ROLLUP, CUBE or GROUPING SETS (`None`: one set of every key).
    pub sets: Option<Vec<Vec<usize>>>,
    /// Whether there is a GROUP BY clause at all (`GROUP BY ()` has no
    /// keys and still groups: one row over no rows).
    pub present: bool,
}

/// The GROUP BY clause of `select`, its grouping sets expanded.
pub(super) fn group_by_list(select: &ast::Select, text: Text) -> Result<GroupBy> {
    let (written, mods) = match &select.group_by {
        ast::GroupByExpr::Expressions(exprs, mods) => (exprs, mods),
        ast::GroupByExpr::All(_) => {
            return Err(Error::Unsupported(format!(
                "GROUP BY ALL is not supported{}",
                text.first(&["GROUP"])
            )));
        }
    };
    if !mods.is_empty() {
        return Err(Error::Unsupported(format!(
            "GROUP BY modifiers (WITH ROLLUP, WITH CUBE, WITH TOTALS) are not supported; write GROUP BY ROLLUP (...){}",
            text.first(&["WITH"])
        )));
    }
    let mut exprs: Vec<ast::Expr> = Vec::new();
    let mut sets: Vec<Vec<usize>> = vec![Vec::new()];
    let mut expanded = false;
    for item in written {
        let mut push = |list: &[ast::Expr]| -> Result<Vec<usize>> {
            list.iter()
                .map(|e| {
                    refuse_nested(e)?;
                    exprs.push(e.clone());
                    Ok(exprs.len() - 1)
                })
                .collect()
        };
        let item_sets: Vec<Vec<usize>> = match item {
            ast::Expr::Rollup(lists) => {
                expanded = true;
                let parts = lists.iter().map(|l| push(l)).collect::<Result<Vec<_>>>()?;
                (0..=parts.len())
                    .rev()
                    .map(|n| parts[..n].concat())
                    .collect()
            }
            ast::Expr::Cube(lists) => {
                expanded = true;
                // 2^12 = 4096 sets: PostgreSQL's limit too.
                if lists.len() > 12 {
                    return Err(plan_err(
                        format!(
                            "CUBE is limited to 12 elements, not {} (4096 grouping sets)",
                            lists.len()
                        ),
                        item,
                    ));
                }
                let parts = lists.iter().map(|l| push(l)).collect::<Result<Vec<_>>>()?;
                let n = parts.len();
                // Largest sets first, as ROLLUP.
                (0..1usize << n)
                    .rev()
                    .map(|mask| {
                        (0..n)
                            .filter(|i| mask & (1 << (n - 1 - i)) != 0)
                            .flat_map(|i| parts[i].iter().copied())
                            .collect()
                    })
                    .collect()
            }
            ast::Expr::GroupingSets(lists) => {
                expanded = true;
                lists.iter().map(|l| push(l)).collect::<Result<Vec<_>>>()?
            }
            ast::Expr::Tuple(list) if list.is_empty() => vec![Vec::new()],
            other => vec![push(std::slice::from_ref(other))?],
        };
        let mut next = Vec::with_capacity(sets.len() * item_sets.len());
        for s in &sets {
            for t in &item_sets {
                if next.len() == MAX_SETS {
                    return Err(plan_err(
                        format!("too many grouping sets (more than {MAX_SETS})"),
                        item,
                    ));
                }
                next.push([s.as_slice(), t.as_slice()].concat());
            }
        }
        sets = next;
    }
    Ok(GroupBy {
        exprs,
        sets: expanded.then_some(sets),
        present: !written.is_empty(),
    })
}

/// ROLLUP, CUBE and GROUPING SETS nested in a set's list parse as
/// function calls: refused, never taken for a function.
fn refuse_nested(e: &ast::Expr) -> Result<()> {
    match e {
        ast::Expr::Rollup(_) | ast::Expr::Cube(_) | ast::Expr::GroupingSets(_) => Err(unsupported(
            "ROLLUP, CUBE or GROUPING SETS nested in another",
            e,
        )),
        ast::Expr::Function(f)
            if matches!(
                crate::query::bind::function_name(f).as_str(),
                "rollup" | "cube" | "grouping sets"
            ) =>
        {
            Err(unsupported(
                "ROLLUP, CUBE or GROUPING SETS nested in another",
                e,
            ))
        }
        _ => Ok(()),
    }
}

/// The keys of grouping sets made distinct: `keys` bound from the
/// written expressions (their printed forms in `shown`) and `sets` over
/// their indexes become the distinct keys, their printed forms and, per
/// set, which of them it groups by. `None` for the sets when there is one
/// set of every key (a plain GROUP BY).
pub(super) fn distinct_keys(
    keys: Vec<Expr>,
    shown: Vec<String>,
    sets: &[Vec<usize>],
) -> (Vec<Expr>, Vec<String>, Option<Vec<Vec<bool>>>) {
    let mut unique: Vec<Expr> = Vec::new();
    let mut unique_shown: Vec<String> = Vec::new();
    let mut of = Vec::with_capacity(keys.len());
    for (k, s) in keys.into_iter().zip(shown) {
        match unique_shown.iter().position(|u| *u == s) {
            Some(i) => of.push(i),
            None => {
                of.push(unique.len());
                unique.push(k);
                unique_shown.push(s);
            }
        }
    }
    let masks: Vec<Vec<bool>> = sets
        .iter()
        .map(|set| {
            let mut m = vec![false; unique.len()];
            for &i in set {
                m[of[i]] = true;
            }
            m
        })
        .collect();
    if let [only] = masks.as_slice()
        && only.iter().all(|&b| b)
    {
        return (unique, unique_shown, None);
    }
    (unique, unique_shown, Some(masks))
}

/// The set-number key: a placeholder the aggregate replaces by each
/// set's number.
pub(super) fn set_key() -> Expr {
    Expr::Literal(Arc::new(Int64Array::from(vec![0i64])))
}

/// `grouping(args)` (the call `node`): the bits of the arguments'
/// keys that each set does not group by. `keys` are the printed forms of
/// the grouping keys, the set-number key (when `sets`) at `keys.len()`.
pub(super) fn grouping_call(
    binder: &Binder,
    f: &ast::Function,
    node: &ast::Expr,
    keys: &[String],
    sets: Option<&[Vec<bool>]>,
) -> Result<Expr> {
    let ast::FunctionArguments::List(list) = &f.args else {
        return Err(plan_err(
            "grouping() takes the grouping keys it tests".into(),
            node,
        ));
    };
    if list.args.is_empty() || f.filter.is_some() || f.over.is_some() {
        return Err(plan_err(
            "grouping() takes the grouping keys it tests, with no FILTER or OVER".into(),
            node,
        ));
    }
    if list.args.len() > 31 {
        return Err(plan_err(
            "grouping() takes at most 31 arguments".into(),
            node,
        ));
    }
    let mut positions = Vec::new();
    for a in &list.args {
        let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = a else {
            return Err(plan_err(format!("bad grouping() argument {a}"), node));
        };
        let row = binder.bind(
            e,
            &mut crate::query::bind::Scope::Row {
                clause: "grouping()",
            },
        )?;
        let shown = row.to_string();
        match keys.iter().position(|k| *k == shown) {
            Some(p) => positions.push(p),
            None => {
                return Err(plan_err(
                    format!(
                        "arguments to grouping() must be grouping keys of the query; {e} is not"
                    ),
                    e,
                ));
            }
        }
    }
    let int = |v: i32| Expr::Literal(Arc::new(Int32Array::from(vec![v])));
    let Some(sets) = sets else {
        return Ok(int(0));
    };
    let value = |set: &[bool]| -> i32 {
        positions
            .iter()
            .fold(0, |acc, &p| (acc << 1) | i32::from(!set[p]))
    };
    let set_column = Expr::Column {
        index: keys.len(),
        name: "grouping set".into(),
    };
    let whens: Vec<(Expr, Expr)> = sets
        .iter()
        .enumerate()
        .filter(|(_, set)| value(set) != 0)
        .map(|(s, set)| {
            (
                Expr::Binary {
                    op: BinOp::Eq,
                    left: Box::new(set_column.clone()),
                    right: Box::new(Expr::Literal(Arc::new(Int64Array::from(vec![s as i64])))),
                },
                int(value(set)),
            )
        })
        .collect();
    if whens.is_empty() {
        return Ok(int(0));
    }
    Ok(Expr::Case {
        whens,
        otherwise: Box::new(int(0)),
    })
}

/// The sets as EXPLAIN shows them, over the keys' printed forms.
pub(super) fn describe(sets: &[Vec<bool>], keys: &[Expr]) -> String {
    sets.iter()
        .map(|set| {
            let in_set: Vec<String> = keys
                .iter()
                .zip(set)
                .filter(|(_, b)| **b)
                .map(|(k, _)| k.to_string())
                .collect();
            format!("({})", in_set.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}
