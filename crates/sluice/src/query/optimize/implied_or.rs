//! From `(a1 AND b1) OR (a2 AND b2)`, where `a1` and `a2` read one FROM
//! item alone, the condition `a1 OR a2` on that item: implied by the OR
//! (each branch holds only where its own part on the item does), so the
//! item's scan may apply it before any join. The OR itself stays.
//!
//! TPC-H Q7 names two nations in `(n1 = 'FRANCE' AND n2 = 'GERMANY') OR
//! (n1 = 'GERMANY' AND n2 = 'FRANCE')`: each nation item gets `n_name =
//! 'FRANCE' OR n_name = 'GERMANY'`, 2 rows of 25, and the joins through
//! them keep 2/25 of the rows early. Q19 gets its part and lineitem
//! conditions the same way.

use super::{join, split};
use crate::query::expr::{BinOp, Expr};

/// The conditions on one FROM item each that the OR `e` implies
/// (`items_of`: the items, a bit each, that an expression reads); none
/// when `e` is no OR.
pub fn implied_by_or(e: &Expr, items_of: &dyn Fn(&Expr) -> u64) -> Vec<Expr> {
    if !matches!(e, Expr::Binary { op: BinOp::Or, .. }) {
        return Vec::new();
    }
    let mut branches = Vec::new();
    split(e.clone(), BinOp::Or, &mut branches);
    let parts: Vec<Vec<Expr>> = branches
        .iter()
        .map(|b| {
            let mut v = Vec::new();
            split(b.clone(), BinOp::And, &mut v);
            v
        })
        .collect();
    // The items some conjunct of the first branch reads alone.
    let mut items: Vec<u64> = parts[0]
        .iter()
        .map(items_of)
        .filter(|m| m.count_ones() == 1)
        .collect();
    items.sort_unstable();
    items.dedup();
    let mut out = Vec::new();
    for item in items {
        let per_branch: Vec<Option<Expr>> = parts
            .iter()
            .map(|p| {
                join(
                    p.iter().filter(|c| items_of(c) == item).cloned().collect(),
                    BinOp::And,
                )
            })
            .collect();
        if per_branch.iter().all(|b| b.is_some()) {
            out.extend(join(per_branch.into_iter().flatten().collect(), BinOp::Or));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(i: usize) -> Expr {
        Expr::Column {
            index: i,
            name: format!("c{i}"),
        }
    }
    fn bin(op: BinOp, l: Expr, r: Expr) -> Expr {
        Expr::Binary {
            op,
            left: Box::new(l),
            right: Box::new(r),
        }
    }

    #[test]
    fn each_item_gets_the_or_of_its_parts() {
        // Columns 0 and 1 belong to item 0, column 2 to item 1.
        let items = |e: &Expr| {
            let mut used = vec![false; 3];
            e.mark_columns(&mut used);
            (used[0] || used[1]) as u64 | ((used[2] as u64) << 1)
        };
        let a1 = bin(BinOp::Gt, col(0), col(1));
        let a2 = bin(BinOp::Lt, col(0), col(1));
        let b1 = bin(BinOp::Eq, col(2), col(2));
        let e = bin(
            BinOp::Or,
            bin(BinOp::And, a1.clone(), b1.clone()),
            a2.clone(),
        );
        let got: Vec<String> = implied_by_or(&e, &items)
            .iter()
            .map(|x| x.to_string())
            .collect();
        // Item 0 in both branches; item 1 only in the first: nothing for it.
        assert_eq!(got, vec![bin(BinOp::Or, a1, a2).to_string()]);
        assert!(implied_by_or(&b1, &items).is_empty());
    }
}
