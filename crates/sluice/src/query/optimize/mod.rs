//! Rewrites of bound expressions that keep their answer and make a
//! better plan possible, one rule a module.
//!
//! For: rules over [`super::expr::Expr`] that the planner applies to a
//! query's conditions before it splits them among the FROM items
//! ([`super::plan::from`]). Not for: choosing the join order (made at
//! run time from real row counts, [`super::join`]) or pruning by zone
//! maps ([`super::plan`]).

pub mod factor_or;
pub mod implied_or;
