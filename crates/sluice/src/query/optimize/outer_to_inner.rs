//! Outer-join simplification: a LEFT JOIN whose right item a WHERE
//! conjunct rejects when that item's columns are NULL keeps none of the
//! rows it fills with NULLs, so it is an inner join (PostgreSQL's
//! `reduce_outer_joins`, DuckDB's filter pushdown through a LEFT JOIN).
//! As an inner join its item can be read first, filter the other side at
//! run time, and be ordered with the others: TPC-DS q93's `store_sales
//! LEFT JOIN store_returns … WHERE sr_reason_sk = r_reason_sk`.
//!
//! For: deciding whether one conjunct rejects NULLs of an item. Not for:
//! rewriting the plan (the planner, `plan::from`, drops the outer join).

use crate::query::expr::Expr;

/// Whether `c`, a conjunct of WHERE, is never true when the columns
/// `of_item` picks are NULL: a comparison (`=`, `<>`, `<`, `<=`, `>`,
/// `>=`) with one such column (or a cast of one) as an operand, or `col
/// IS NOT NULL`. Conservative: any other shape (`COALESCE`, `CASE`,
/// `OR`, `IS NULL`, functions) is taken as keeping NULLs.
pub fn rejects_null(c: &Expr, of_item: &dyn Fn(usize) -> bool) -> bool {
    let column = |e: &Expr| {
        let mut e = e;
        loop {
            match e {
                Expr::Cast { expr, .. } => e = expr,
                Expr::Column { index, .. } => return of_item(*index),
                _ => return false,
            }
        }
    };
    match c {
        Expr::Binary { op, left, right } if op.is_comparison() => column(left) || column(right),
        Expr::IsNull {
            expr,
            negated: true,
        } => column(expr),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::expr::BinOp;
    use std::sync::Arc;

    fn col(i: usize) -> Expr {
        Expr::Column {
            index: i,
            name: format!("c{i}"),
        }
    }

    fn five() -> Expr {
        Expr::Literal(Arc::new(arrow_array::Int64Array::from(vec![5])))
    }

    #[test]
    fn comparisons_and_is_not_null_reject_nulls_others_do_not() {
        // Columns 2 and 3 are the item's.
        let item = |c: usize| c >= 2;
        let cmp = |op, l, r| Expr::Binary {
            op,
            left: Box::new(l),
            right: Box::new(r),
        };
        assert!(rejects_null(&cmp(BinOp::Eq, col(2), col(0)), &item));
        assert!(rejects_null(&cmp(BinOp::Gt, five(), col(3)), &item));
        assert!(rejects_null(
            &Expr::IsNull {
                expr: Box::new(col(3)),
                negated: true
            },
            &item
        ));
        // Not the item's column; IS NULL; OR; COALESCE.
        assert!(!rejects_null(&cmp(BinOp::Eq, col(0), col(1)), &item));
        assert!(!rejects_null(
            &Expr::IsNull {
                expr: Box::new(col(3)),
                negated: false
            },
            &item
        ));
        assert!(!rejects_null(
            &cmp(
                BinOp::Or,
                cmp(BinOp::Eq, col(2), five()),
                cmp(BinOp::Eq, col(0), five())
            ),
            &item
        ));
        assert!(!rejects_null(
            &cmp(BinOp::Eq, Expr::Coalesce(vec![col(2), five()]), five()),
            &item
        ));
    }
}
