//! `(a AND b) OR (a AND c)` → `a AND (b OR c)`: a condition that every
//! branch of an OR holds is taken out of it.
//!
//! TPC-H Q19 writes its join condition `p_partkey = l_partkey` inside
//! each of three OR-ed branches; taken out, it is an equality the join
//! can hash on instead of a cross product filtered afterwards. The
//! answer is the same for every row, NULLs included: for each branch
//! `a AND rest_i`, `OR_i (a AND rest_i)` equals `a AND OR_i rest_i` in
//! SQL's three-valued logic (AND distributes over OR there too).

use super::{join, split};
use crate::query::expr::{BinOp, Expr};

/// `e` with the conjuncts common to every branch of a top-level OR
/// taken out (`e` itself when it is no OR or they share none).
pub fn factor_or(e: Expr) -> Expr {
    if !matches!(e, Expr::Binary { op: BinOp::Or, .. }) {
        return e;
    }
    let mut branches = Vec::new();
    split(e, BinOp::Or, &mut branches);
    let parts: Vec<Vec<Expr>> = branches
        .into_iter()
        .map(|b| {
            let mut v = Vec::new();
            split(b, BinOp::And, &mut v);
            v
        })
        .collect();
    // Expressions are compared as shown; in a join every column is shown
    // with its FROM item's name, so equal text is the same expression.
    let shown: Vec<Vec<String>> = parts
        .iter()
        .map(|p| p.iter().map(|x| x.to_string()).collect())
        .collect();
    let mut common: Vec<usize> = Vec::new();
    for (i, s) in shown[0].iter().enumerate() {
        if !shown[0][..i].contains(s) && shown[1..].iter().all(|o| o.contains(s)) {
            common.push(i);
        }
    }
    if common.is_empty() {
        let rebuilt: Vec<Expr> = parts
            .into_iter()
            .filter_map(|p| join(p, BinOp::And))
            .collect();
        return join(rebuilt, BinOp::Or).expect("an OR has branches");
    }
    let common_text: Vec<String> = common.iter().map(|&i| shown[0][i].clone()).collect();
    let taken: Vec<Expr> = common.iter().map(|&i| parts[0][i].clone()).collect();
    let mut rests = Vec::new();
    let mut always = false;
    for (p, s) in parts.into_iter().zip(&shown) {
        let rest: Vec<Expr> = p
            .into_iter()
            .zip(s)
            .filter(|(_, t)| !common_text.contains(t))
            .map(|(x, _)| x)
            .collect();
        match join(rest, BinOp::And) {
            Some(r) => rests.push(r),
            // A branch that is only common conditions: the OR holds
            // whenever they do.
            None => always = true,
        }
    }
    let mut out = taken;
    if !always && let Some(r) = join(rests, BinOp::Or) {
        out.push(r);
    }
    join(out, BinOp::And).expect("at least one common condition")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(i: usize) -> Expr {
        Expr::Column {
            index: i,
            name: format!("t.c{i}"),
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
    fn takes_out_what_every_branch_holds() {
        let a = bin(BinOp::Eq, col(0), col(1));
        let b = bin(BinOp::Gt, col(2), col(3));
        let c = bin(BinOp::Lt, col(2), col(3));
        let e = bin(
            BinOp::Or,
            bin(BinOp::And, a.clone(), b.clone()),
            bin(BinOp::And, c.clone(), a.clone()),
        );
        let want = bin(BinOp::And, a.clone(), bin(BinOp::Or, b.clone(), c.clone()));
        assert_eq!(factor_or(e).to_string(), want.to_string());
        // Nothing in common: the OR as it was.
        let e = bin(BinOp::Or, b.clone(), c.clone());
        assert_eq!(factor_or(e.clone()).to_string(), e.to_string());
        // A branch of common conditions alone: the OR is implied.
        let e = bin(BinOp::Or, a.clone(), bin(BinOp::And, a.clone(), b));
        assert_eq!(factor_or(e).to_string(), a.to_string());
    }
}
