//! Rewrites of bound expressions that keep their answer and make a
//! better plan possible, one rule a module.
//!
//! For: rules over [`super::expr::Expr`] that the planner applies to a
//! query's conditions before it splits them among the FROM items
//! ([`super::plan::from`]). Not for: choosing the join order (made at
//! run time from real row counts, [`super::join`]) or pruning by zone
//! maps ([`super::plan`]).

pub mod eager_agg;
pub mod factor_or;
pub mod implied_or;
pub mod outer_to_inner;
pub mod push_filter;

use crate::query::expr::{BinOp, Expr};

/// `e`'s operands of a chain of `op` (`a AND b AND c` → a, b, c).
pub fn split(e: Expr, op: BinOp, out: &mut Vec<Expr>) {
    match e {
        Expr::Binary { op: o, left, right } if o == op => {
            split(*left, op, out);
            split(*right, op, out);
        }
        other => out.push(other),
    }
}

/// `list` joined by `op` (`None` when empty).
pub fn join(list: Vec<Expr>, op: BinOp) -> Option<Expr> {
    list.into_iter().reduce(|a, b| Expr::Binary {
        op,
        left: Box::new(a),
        right: Box::new(b),
    })
}
