//! Init plans: the uncorrelated scalar subqueries of a query's
//! expressions, each run once before the query and read as a literal.
//!
//! For: [`resolve`] — run every [`Expr::Subquery`] of a plan (each one
//! once however often it appears), check it returned at most one row
//! (more is SQLSTATE 21000, as in PostgreSQL; none is NULL) and put its
//! value in its place. Not for: subqueries that read the outer query
//! (unnested into joins when planned, [`super::plan`]).

use std::sync::Arc;

use arrow_array::{Array, ArrayRef};

use super::QueryOptions;
use super::expr::{Expr, ScalarSubquery};
use super::plan::{Body, Plan};
use crate::error::{Error, Result};
use crate::store::Database;

type Memo = Vec<(*const ScalarSubquery, ArrayRef)>;

/// `p` with each scalar subquery replaced by its value.
pub fn resolve(db: &Database, p: &Plan, opts: &QueryOptions) -> Result<Plan> {
    let mut p = p.clone();
    let mut memo: Memo = Vec::new();
    let mut f = |e: &mut Expr| substitute(db, e, opts, &mut memo);
    if let Some(x) = p.filter.as_mut() {
        f(x)?;
    }
    match &mut p.body {
        Body::Project(list) => {
            for e in list {
                f(e)?;
            }
        }
        Body::Aggregate {
            keys,
            aggs,
            having,
            post,
            ..
        } => {
            for e in keys
                .iter_mut()
                .chain(post.iter_mut())
                .chain(having.iter_mut())
            {
                f(e)?;
            }
            for c in Arc::make_mut(aggs).iter_mut() {
                if let Some(a) = c.arg.as_mut() {
                    f(a)?;
                }
            }
        }
    }
    if let Some(input) = p.input.as_mut()
        && let super::plan::Input::Join(g) = Arc::make_mut(input)
    {
        let conjuncts = g
            .conjuncts
            .iter_mut()
            .chain(g.outer.iter_mut().flat_map(|s| s.on.iter_mut()));
        for c in conjuncts {
            f(&mut c.expr)?;
            if let Some((l, _, r, _)) = c.equi.as_mut() {
                f(l)?;
                f(r)?;
            }
        }
        for leaf in &mut g.leaves {
            if let Some(x) = leaf.filter.as_mut() {
                f(x)?;
            }
        }
    }
    p.init_plans = false;
    Ok(p)
}

fn substitute(db: &Database, e: &mut Expr, opts: &QueryOptions, memo: &mut Memo) -> Result<()> {
    // `x IN (SELECT …)`: the subquery's rows become the list.
    if let Expr::InList {
        expr,
        list,
        negated,
        ..
    } = e
        && let [Expr::Subquery(s)] = list.as_slice()
        && s.list
    {
        let values = list_values(db, s, opts)?;
        let mut x = std::mem::replace(expr.as_mut(), Expr::Literal(values.clone()));
        substitute(db, &mut x, opts, memo)?;
        *e = if values.is_empty() {
            // Nothing to be in: false (true for NOT IN), NULL `x` too.
            Expr::Literal(Arc::new(arrow_array::BooleanArray::from(vec![*negated])))
        } else {
            Expr::InValues {
                expr: Box::new(x),
                values,
                negated: *negated,
                set: Default::default(),
            }
        };
        return Ok(());
    }
    if let Expr::Subquery(s) = e {
        let key = Arc::as_ptr(s);
        let v = match memo.iter().find(|m| m.0 == key) {
            Some(m) => m.1.clone(),
            None => {
                let v = value(db, s, opts)?;
                memo.push((key, v.clone()));
                v
            }
        };
        *e = Expr::Literal(v);
        return Ok(());
    }
    let mut r = Ok(());
    e.children_mut(&mut |c| {
        if r.is_ok() {
            r = substitute(db, c, opts, memo);
        }
    });
    r
}

/// Every value an `IN` subquery gives, as one array of the list's type.
fn list_values(db: &Database, s: &ScalarSubquery, opts: &QueryOptions) -> Result<ArrayRef> {
    let r = super::run_plan(db, &s.plan, opts)?;
    let cols: Vec<ArrayRef> = r.batches.iter().map(|b| b.column(0).clone()).collect();
    let all = match cols.as_slice() {
        [] => return Ok(arrow_array::new_empty_array(&s.data_type)),
        [one] => one.clone(),
        many => {
            let refs: Vec<&dyn arrow_array::Array> = many.iter().map(|a| a.as_ref()).collect();
            arrow_select::concat::concat(&refs).map_err(super::expr::exec_err)?
        }
    };
    let all = crate::batch::dict::decode(&all)?;
    if all.data_type() == &s.data_type {
        Ok(all)
    } else {
        super::expr::cast(&all, &s.data_type)
    }
}

/// The one value a scalar subquery gives: NULL for no row.
fn value(db: &Database, s: &ScalarSubquery, opts: &QueryOptions) -> Result<ArrayRef> {
    let r = super::run_plan(db, &s.plan, opts)?;
    let rows: usize = r.batches.iter().map(|b| b.num_rows()).sum();
    if rows > 1 {
        return Err(Error::Cardinality(format!(
            "more than one row returned by a subquery used as an expression: ({})",
            s.text
        )));
    }
    Ok(match r.batches.iter().find(|b| b.num_rows() == 1) {
        Some(b) => b.column(0).slice(0, 1),
        None => arrow_array::new_null_array(&s.data_type, 1),
    })
}
