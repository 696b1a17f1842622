//! Filter conjuncts the storage answers before the scan: zone-map tests
//! ([`Prune`]) and key lookups through the primary-key index.
//!
//! For: finding, in a bound filter, the top-level AND-ed comparisons of a
//! column with a literal, and the literal in the stored column's integer
//! domain. Not for: skipping segments or reading keys (that is
//! [`crate::query::exec`]); the filter still runs over every row read.

use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType as A;

use super::Prune;
use crate::query::expr::{BinOp, Expr};

/// The keys of a top-level AND-ed `key = literal` or `key IN (literals)`
/// on the key column `k` stored as `stored`, in index byte form; `None`
/// when there is no such conjunct or a literal does not convert exactly.
pub(super) fn key_lookup_of(filter: &Expr, k: usize, types: &[A]) -> Option<Vec<Vec<u8>>> {
    let stored = types.get(k)?;
    let key_bytes = |e: &Expr| -> Option<Vec<u8>> {
        let Expr::Literal(l) = e else { return None };
        if l.is_null(0) {
            return None;
        }
        match (stored, l.data_type()) {
            (A::Utf8, A::Utf8) => {
                use arrow_array::cast::AsArray;
                Some(l.as_string::<i32>().value(0).as_bytes().to_vec())
            }
            (A::Utf8, _) | (_, A::Utf8) => None,
            _ => {
                let v = i64::try_from(stat_value(l, stored)?).ok()?;
                Some(crate::index::encode_i64(v).to_vec())
            }
        }
    };
    let mut stack = vec![filter];
    while let Some(e) = stack.pop() {
        match e {
            Expr::Binary {
                op: BinOp::And,
                left,
                right,
            } => {
                stack.push(left);
                stack.push(right);
            }
            Expr::Binary {
                op: BinOp::Eq,
                left,
                right,
            } => match (column_of(left, types), column_of(right, types)) {
                (Some(c), _) if c == k => return key_bytes(right).map(|b| vec![b]),
                (_, Some(c)) if c == k => return key_bytes(left).map(|b| vec![b]),
                _ => {}
            },
            Expr::InList {
                expr,
                list,
                negated: false,
            } if column_of(expr, types) == Some(k) => {
                // A key listed twice is looked up once (the row must not
                // come back twice).
                let mut keys = list.iter().map(key_bytes).collect::<Option<Vec<_>>>()?;
                keys.sort_unstable();
                keys.dedup();
                return Some(keys);
            }
            _ => {}
        }
    }
    None
}

/// Zone-map tests from the top-level AND-ed comparisons of a filter.
pub(super) fn prune_of(filter: &Expr, table_types: &[A]) -> Vec<Prune> {
    let mut out = Vec::new();
    let mut stack = vec![filter];
    while let Some(e) = stack.pop() {
        let Expr::Binary { op, left, right } = e else {
            continue;
        };
        if *op == BinOp::And {
            stack.push(left);
            stack.push(right);
            continue;
        }
        if !op.is_comparison() || *op == BinOp::NotEq {
            continue;
        }
        let (col, litv, op) = match (
            column_of(left, table_types),
            right.as_ref(),
            column_of(right, table_types),
            left.as_ref(),
        ) {
            (Some(c), Expr::Literal(l), _, _) => (c, l, *op),
            (_, _, Some(c), Expr::Literal(l)) => (c, l, flip(*op)),
            _ => continue,
        };
        let Some(v) = stat_value(litv, &table_types[col]) else {
            continue;
        };
        let (lo, hi) = match op {
            BinOp::Eq => (Some(v), Some(v)),
            BinOp::Lt => (None, Some(v - 1)),
            BinOp::LtEq => (None, Some(v)),
            BinOp::Gt => (Some(v + 1), None),
            BinOp::GtEq => (Some(v), None),
            _ => continue,
        };
        out.push(Prune {
            column: col,
            lo,
            hi,
        });
    }
    out
}

fn flip(op: BinOp) -> BinOp {
    match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::LtEq => BinOp::GtEq,
        BinOp::Gt => BinOp::Lt,
        BinOp::GtEq => BinOp::LtEq,
        o => o,
    }
}

/// The column under an expression that only widens it (no value change):
/// the column itself, or a cast that keeps every value exactly (INT to
/// BIGINT, a DECIMAL to a DECIMAL of at least its scale, DATE to
/// TIMESTAMP) — not a cast a query wrote that truncates
/// (`CAST(price AS BIGINT)`), which zone maps and the key index cannot
/// answer.
fn column_of(e: &Expr, types: &[A]) -> Option<usize> {
    match e {
        Expr::Column { index, .. } => Some(*index),
        // A CAST written with a DECIMAL precision may fail: not a widening.
        Expr::Cast { expr, to, site } if site.as_ref().is_none_or(|s| s.precision.is_none()) => {
            let Expr::Column { index, .. } = expr.as_ref() else {
                return None;
            };
            let exact = match (types.get(*index)?, to) {
                (A::Int32 | A::Int64, A::Int64) => true,
                (A::Int32 | A::Int64, A::Decimal128(p, s)) => {
                    *s >= 0 && (*p as i32 - *s as i32) >= 19
                }
                (A::Decimal64(p, s), A::Decimal128(tp, ts)) => {
                    ts >= s && (*tp as i32 - *ts as i32) >= (*p as i32 - *s as i32)
                }
                (A::Date32, A::Timestamp(..)) => true,
                (A::Timestamp(..), A::Timestamp(..)) => true,
                _ => false,
            };
            exact.then_some(*index)
        }
        _ => None,
    }
}

/// A literal in the zone map's integer domain of a stored column type, when
/// it converts exactly.
fn stat_value(l: &ArrayRef, stored: &A) -> Option<i128> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    if l.is_null(0) {
        return None;
    }
    let lt = l.data_type();
    match (stored, lt) {
        (A::Int32 | A::Int64, A::Int64) => Some(l.as_primitive::<Int64Type>().value(0) as i128),
        (A::Int32 | A::Int64, A::Decimal128(_, s)) => {
            let v = l.as_primitive::<Decimal128Type>().value(0);
            let d = 10i128.pow(*s as u32);
            (v % d == 0).then_some(v / d)
        }
        (A::Decimal64(_, cs), A::Decimal128(_, s)) => {
            let v = l.as_primitive::<Decimal128Type>().value(0);
            if s <= cs {
                v.checked_mul(10i128.pow((*cs - *s) as u32))
            } else {
                let d = 10i128.pow((*s - *cs) as u32);
                (v % d == 0).then_some(v / d)
            }
        }
        (A::Decimal64(_, cs), A::Int64) => {
            Some(l.as_primitive::<Int64Type>().value(0) as i128 * 10i128.pow(*cs as u32))
        }
        (A::Date32, A::Date32) => Some(l.as_primitive::<Date32Type>().value(0) as i128),
        (A::Timestamp(..), A::Timestamp(..)) => {
            Some(l.as_primitive::<TimestampMicrosecondType>().value(0) as i128)
        }
        _ => None,
    }
}
