//! A condition on a subquery's rows (a FROM subquery, a CTE, a view of
//! several branches) moved into the subquery, as deep as it may go:
//! through its select list (columns replaced by the expressions that make
//! them), below its GROUP BY when it reads only grouping keys, into every
//! branch of a UNION [ALL] or SELECT DISTINCT, and into the scan of the
//! one FROM item it reads, where zone maps test it. A condition on the
//! rows of `year_total` that says `sale_type = 's' AND dyear = 2001`
//! (TPC-DS Q4, Q11, Q74) leaves one branch of three and one year of the
//! sales to read, instead of all of them for each of the CTE's six reads.
//!
//! Where it cannot go further, it stays as a filter on the rows where it
//! stopped (never lost, never moved past what changes its answer):
//! - not below LIMIT/OFFSET (a filter after a LIMIT keeps fewer rows);
//! - not below GROUP BY when it reads an aggregate, or over grouping
//!   sets, or when there are no keys (`WHERE false` over `count(*)`
//!   still has its one row to remove), or when there is a HAVING (it
//!   may guard the condition: `HAVING i <> 0` before `10 / i`);
//! - not when the expression it becomes would nest deeper than
//!   [`crate::query::plan::INLINE_DEPTH`] levels (each move nests a
//!   select list into it; evaluation recurses as deep);
//! - not into INTERSECT or EXCEPT (rows equal to the set operation need
//!   not be equal to the filter: `-0.0` and `0.0`), nor into a branch
//!   whose column types differ from the union's;
//! - not when it or an expression it would take holds a scalar subquery
//!   (run once before the query that holds it) or a window function;
//! - into a FROM item only when no outer join fills that item with NULLs.
//!
//! A condition that reads no column after the move (`'w' = 's'`) is
//! folded; a false one is given to every FROM item below and goes
//! before their own filters, so a branch that cannot have rows keeps
//! none: its scan reads no segment (`exec::segment_may_match`).
//!
//! For: the planner, on the condition a query puts on a subquery's rows
//! ([`crate::query::plan::from`]). Not for: conditions on stored tables
//! (the planner puts those into the scans itself).

use std::sync::Arc;

use arrow_array::Array;
use arrow_schema::DataType as A;

use crate::query::expr::{BinOp, Expr};
use crate::query::plan::setop::SetKind;
use crate::query::plan::{Body, Input, Plan};

/// Moves each conjunct of `cond` (over `plan`'s output columns) into
/// `plan` where it may go; the conjuncts that could not, AND-ed, are
/// returned for the caller to apply to the plan's rows.
pub fn push_conjuncts(plan: &mut Plan, cond: Expr) -> Option<Expr> {
    let mut parts = Vec::new();
    super::split(cond, BinOp::And, &mut parts);
    let mut kept = Vec::new();
    for c in parts {
        if let Err(c) = push(plan, c) {
            kept.push(c);
        }
    }
    super::join(kept, BinOp::And)
}

/// Moves `cond` (over `plan`'s output columns) into `plan`; gives it back
/// untouched when it may not.
pub fn push(plan: &mut Plan, cond: Expr) -> Result<(), Expr> {
    if plan.limit.is_some() || plan.offset > 0 || plan.explain || !movable(&cond) {
        return Err(cond);
    }
    if plan.table.is_none() && plan.input.is_none() {
        // `SELECT 1 AS x`: one row made from nothing; nothing to gain.
        return Err(cond);
    }
    let outputs = crate::query::exec::result_types(plan);
    let mut reads = vec![false; outputs.len()];
    cond.mark_columns(&mut reads);
    // A bare NULL column is TEXT to the reader: its type differs below.
    if reads.iter().zip(&outputs).any(|(r, t)| *r && *t == A::Null) {
        return Err(cond);
    }
    // Each move nests the select list's expressions into the condition:
    // past what any thread plans and evaluates safely, it stays (checked
    // before the nested copy is made).
    let deepest = |list: &[Expr]| list.iter().map(|e| depth(Some(e))).max().unwrap_or(0);
    let nests = depth(Some(&cond))
        + match &plan.body {
            Body::Project(exprs) => deepest(exprs),
            Body::Aggregate { keys, post, .. } => deepest(post) + deepest(keys),
        };
    if nests > crate::query::plan::INLINE_DEPTH {
        return Err(cond);
    }
    let inner = match &plan.body {
        Body::Project(exprs) => substitute(&cond, &|i| exprs.get(i).cloned()),
        Body::Aggregate {
            keys,
            post,
            sets,
            having,
            ..
        } => {
            // A HAVING stays above the grouping: below it, the condition
            // would meet rows the HAVING removes (`HAVING i <> 0` guards
            // `10 / i`).
            if sets.is_some() || keys.is_empty() || having.is_some() {
                return Err(cond);
            }
            substitute(&cond, &|i| post.get(i).cloned())
                .and_then(|over_slots| substitute(&over_slots, &|s| keys.get(s).cloned()))
        }
    };
    let Some(inner) = inner.filter(movable) else {
        return Err(cond);
    };
    let d = push_input(plan, fold(inner));
    plan.depth = plan.depth.max(d);
    Ok(())
}

/// Applies `cond`, over `plan`'s input columns, to its input: moved into
/// it where it may go, else a filter on the input's rows. Returns how
/// deep the expressions it added below `plan` nest (their evaluation
/// recurses as deep).
fn push_input(plan: &mut Plan, cond: Expr) -> usize {
    if is_true(&cond) {
        return 0;
    }
    let none = reads_nothing(&cond);
    match plan.input.as_mut() {
        None => {
            // A scan: the filter runs before everything else, and its
            // comparisons become zone-map tests.
            let mut prune = crate::query::plan::prune_for(&cond, &plan.table_types);
            for p in &mut prune {
                p.column = plan.scan_columns[p.column];
            }
            plan.prune.extend(prune);
        }
        Some(input) => match Arc::make_mut(input) {
            Input::Join(g) => {
                if none {
                    // False (or NULL, or failing) for every row: every
                    // FROM item may skip its rows; the filter below
                    // still removes the rows of an item that makes one
                    // from none (an aggregate without keys).
                    for leaf in &mut g.leaves {
                        let _ = push(&mut leaf.plan, cond.clone());
                    }
                } else {
                    let mut global = cond.clone();
                    global.remap_columns(&mut |j| g.output[j]);
                    let mut used = vec![false; g.types.len()];
                    global.mark_columns(&mut used);
                    let owners: Vec<usize> = (0..g.leaves.len())
                        .filter(|&l| g.leaves[l].columns.iter().any(|&c| used[c]))
                        .collect();
                    if let [l] = owners[..]
                        && g.nullable & (1u64 << l) == 0
                    {
                        let leaf = &mut g.leaves[l];
                        let mut local = global;
                        let cols = leaf.columns.clone();
                        local.remap_columns(&mut |c| {
                            cols.iter().position(|&x| x == c).unwrap_or(usize::MAX)
                        });
                        return match push(&mut leaf.plan, local) {
                            Ok(()) => leaf.plan.depth,
                            Err(back) => {
                                leaf.filter = Some(and(leaf.filter.take(), back));
                                depth(leaf.filter.as_ref())
                            }
                        };
                    }
                }
            }
            Input::Set(s) => {
                if matches!(s.kind, SetKind::Union | SetKind::Distinct)
                    && (none || sides_typed_as(s, &cond))
                {
                    let mut left = s.left.clone();
                    let mut right = s.right.clone();
                    let ok = push(&mut left, cond.clone()).is_ok()
                        && right.as_mut().is_none_or(|r| push(r, cond.clone()).is_ok());
                    if ok {
                        let d = left.depth.max(right.as_ref().map_or(0, |r| r.depth));
                        s.left = left;
                        s.right = right;
                        return d;
                    }
                }
            }
            Input::Window(_) => {}
        },
    }
    let mut d = 0;
    if none && let Some(Input::Join(g)) = plan.input.as_deref() {
        d = g.leaves.iter().map(|l| l.plan.depth).max().unwrap_or(0);
    }
    plan.filter = Some(if none {
        // A constant first: a false one spares the rest (which might
        // fail on rows it would never keep).
        match plan.filter.take() {
            None => cond,
            Some(f) => and(Some(cond), f),
        }
    } else {
        and(plan.filter.take(), cond)
    });
    d.max(depth(plan.filter.as_ref()))
}

/// Whether every branch of `s` has the union's type in each column
/// `cond` reads (a branch cast to the union's type reads differently).
fn sides_typed_as(s: &crate::query::plan::setop::SetOp, cond: &Expr) -> bool {
    let mut used = vec![false; s.types.len()];
    cond.mark_columns(&mut used);
    std::iter::once(&s.left)
        .chain(s.right.as_ref())
        .all(|side| {
            let t = crate::query::exec::result_types(side);
            t.len() == s.types.len()
                && used
                    .iter()
                    .enumerate()
                    .all(|(i, u)| !u || (t[i] == s.types[i] && t[i] != A::Null))
        })
}

/// `f AND c` (`c` alone when there is no `f`): `f` first, so that `c`
/// sees only the rows `f` keeps when it fails on others.
fn and(f: Option<Expr>, c: Expr) -> Expr {
    match f {
        None => c,
        Some(f) => Expr::Binary {
            op: BinOp::And,
            left: Box::new(f),
            right: Box::new(c),
        },
    }
}

/// `e` with each column `i` replaced by `by(i)`; `None` when some column
/// has no replacement.
fn substitute(e: &Expr, by: &dyn Fn(usize) -> Option<Expr>) -> Option<Expr> {
    if let Expr::Column { index, .. } = e {
        return by(*index);
    }
    let mut out = e.clone();
    let mut ok = true;
    out.children_mut(&mut |c| {
        if ok {
            match substitute(c, by) {
                Some(n) => *c = n,
                None => ok = false,
            }
        }
    });
    ok.then_some(out)
}

/// Whether `e` may be evaluated somewhere else than where it was bound:
/// no scalar subquery (its value is filled in where it was planned) and
/// no window function.
fn movable(e: &Expr) -> bool {
    match e {
        Expr::Subquery(_) | Expr::Window(_) => false,
        _ => {
            let mut ok = true;
            e.clone().children_mut(&mut |c| ok &= movable(c));
            ok
        }
    }
}

fn reads_nothing(e: &Expr) -> bool {
    let mut any = false;
    e.clone().remap_columns(&mut |i| {
        any = true;
        i
    });
    !any
}

/// A condition that reads no column, evaluated once (`'w' = 's'` →
/// false); unchanged when it reads columns or fails (the failure then
/// comes when it runs, as it would have).
fn fold(e: Expr) -> Expr {
    if !reads_nothing(&e) || matches!(e, Expr::Literal(_)) {
        return e;
    }
    let Ok(one) = crate::query::exec::empty_input(1) else {
        return e;
    };
    match e.eval(&one) {
        Ok(crate::query::expr::Value::Scalar(a)) if a.len() == 1 => Expr::Literal(a),
        _ => e,
    }
}

fn is_true(e: &Expr) -> bool {
    use arrow_array::cast::AsArray;
    matches!(e, Expr::Literal(a) if a.data_type() == &A::Boolean
        && a.is_valid(0) && a.as_boolean().value(0))
}

/// How deep `e` nests (0 for none).
fn depth(e: Option<&Expr>) -> usize {
    let Some(e) = e else { return 0 };
    let mut d = 0;
    e.clone().children_mut(&mut |c| d = d.max(depth(Some(c))));
    d + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{BooleanArray, Int64Array, StringArray};

    fn col(i: usize) -> Expr {
        Expr::Column {
            index: i,
            name: format!("c{i}"),
        }
    }

    fn lit_i(v: i64) -> Expr {
        Expr::Literal(Arc::new(Int64Array::from(vec![v])))
    }

    fn lit_s(v: &str) -> Expr {
        Expr::Literal(Arc::new(StringArray::from(vec![v])))
    }

    fn eq(l: Expr, r: Expr) -> Expr {
        Expr::Binary {
            op: BinOp::Eq,
            left: Box::new(l),
            right: Box::new(r),
        }
    }

    #[test]
    fn substitution_replaces_every_column_or_fails() {
        let e = eq(col(1), col(0));
        let s = substitute(&e, &|i| Some(lit_i(i as i64 + 10))).expect("all known");
        assert_eq!(s.to_string(), eq(lit_i(11), lit_i(10)).to_string());
        assert!(substitute(&e, &|i| (i == 0).then(|| lit_i(1))).is_none());
    }

    #[test]
    fn constants_fold_to_their_value_and_true_is_recognised() {
        let f = fold(eq(lit_s("w"), lit_s("s")));
        let Expr::Literal(a) = &f else {
            panic!("not folded: {f}")
        };
        assert_eq!(a.as_ref(), &BooleanArray::from(vec![false]) as &dyn Array);
        assert!(!is_true(&f));
        assert!(is_true(&fold(eq(lit_s("s"), lit_s("s")))));
        // A condition on a column stays as it is.
        let c = eq(col(0), lit_s("s"));
        assert_eq!(fold(c.clone()).to_string(), c.to_string());
    }

    #[test]
    fn depth_counts_nesting() {
        assert_eq!(depth(None), 0);
        assert_eq!(depth(Some(&col(0))), 1);
        assert_eq!(depth(Some(&eq(col(0), eq(col(1), lit_i(1))))), 3);
    }
}
