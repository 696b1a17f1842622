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
        literal_key(l, stored)
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
                ..
            } if column_of(expr, types) == Some(k) => {
                // A key listed twice is looked up once (the row must not
                // come back twice).
                let mut keys = list.iter().map(key_bytes).collect::<Option<Vec<_>>>()?;
                keys.sort_unstable();
                keys.dedup();
                return Some(keys);
            }
            Expr::InValues {
                expr,
                values,
                negated: false,
                ..
            } if column_of(expr, types) == Some(k) => {
                let mut keys = (0..values.len())
                    .map(|i| literal_key(&values.slice(i, 1), stored))
                    .collect::<Option<Vec<_>>>()?;
                keys.sort_unstable();
                keys.dedup();
                return Some(keys);
            }
            _ => {}
        }
    }
    None
}

/// A one-row literal as a key of a column stored as `stored`, in index
/// byte form; `None` for NULL or a value that does not convert exactly.
pub(crate) fn literal_key(l: &ArrayRef, stored: &A) -> Option<Vec<u8>> {
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
}

impl super::Plan {
    /// For a lookup of one key whose whole filter is `key = literal`: this
    /// plan with `value` (a one-row array of the literal's type) in place
    /// of the literal — the plan of the same query written with `value`,
    /// without parsing or planning it again (a prepared statement's
    /// `WHERE id = $1`). `None` when the plan is not of that shape, or
    /// `value` is NULL, of another type, or no valid key of the column.
    pub fn with_key(&self, value: &ArrayRef) -> Option<super::Plan> {
        if self.key_lookup.as_ref()?.len() != 1 || value.len() != 1 || value.is_null(0) {
            return None;
        }
        let Some(Expr::Binary {
            op: BinOp::Eq,
            left,
            right,
        }) = &self.filter
        else {
            return None;
        };
        // The filter's columns are the scanned ones (after pushdown), as
        // are `table_types`.
        let (col, lit_left, old) = match (left.as_ref(), right.as_ref()) {
            (e, Expr::Literal(l)) => (column_of(e, &self.table_types)?, false, l),
            (Expr::Literal(l), e) => (column_of(e, &self.table_types)?, true, l),
            _ => return None,
        };
        if old.data_type() != value.data_type() {
            return None;
        }
        let stored = self.table_types.get(col)?;
        let key = literal_key(value, stored)?;
        let table_col = *self.scan_columns.get(col)?;
        let mut p = self.clone();
        let lit = Box::new(Expr::Literal(value.clone()));
        p.filter = Some(if lit_left {
            Expr::Binary {
                op: BinOp::Eq,
                left: lit,
                right: right.clone(),
            }
        } else {
            Expr::Binary {
                op: BinOp::Eq,
                left: left.clone(),
                right: lit,
            }
        });
        p.key_lookup = Some(vec![key]);
        p.prune.retain(|x| x.column != table_col);
        if let Some(v) = stat_value(value, stored) {
            p.prune.push(Prune {
                column: table_col,
                lo: Some(v),
                hi: Some(v),
            });
        }
        Some(p)
    }
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
    let utc = |z: &Option<std::sync::Arc<str>>| crate::zone::Zone::of(z.as_deref()).is_utc();
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
                // Between zones an instant keeps its value; between a
                // local time and an instant it moves by the zone's offset.
                (A::Date32, A::Timestamp(_, z)) => utc(z),
                (A::Timestamp(_, Some(_)), A::Timestamp(_, Some(_))) => true,
                (A::Timestamp(_, a), A::Timestamp(_, b)) => utc(a) && utc(b),
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
        (A::Time64(_), A::Time64(_)) => {
            Some(l.as_primitive::<Time64MicrosecondType>().value(0) as i128)
        }
        (A::Timestamp(..), A::Timestamp(..)) => {
            Some(l.as_primitive::<TimestampMicrosecondType>().value(0) as i128)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, StringArray};
    use proptest::prelude::*;

    use crate::batch::Schema;
    use crate::query::plan::{Catalog, Plan, plan_sql};

    struct One(Schema);

    impl Catalog for One {
        fn table_schema(&self, name: &str) -> Option<Schema> {
            (name == "t").then(|| self.0.clone())
        }
    }

    fn cat(schema: &str) -> One {
        One(schema.parse().expect("schema"))
    }

    /// The parts of a plan a key changes, as text.
    fn shape(p: &Plan) -> String {
        format!("{:?} {:?} {:?}", p.filter, p.key_lookup, p.prune)
    }

    fn int(v: i64) -> ArrayRef {
        Arc::new(Int64Array::from(vec![v]))
    }

    proptest! {
        // The plan bound with a key is the plan of the query written with
        // it, for keys of either side and of either column type.
        #[test]
        fn a_bound_key_plans_as_the_written_one(v in 0i64..i64::MAX, flip in any::<bool>(), int32 in any::<bool>()) {
            let c = cat(if int32 { "id INT PRIMARY KEY, a TEXT" } else { "id BIGINT PRIMARY KEY, a TEXT" });
            let sql = |k: String| if flip {
                format!("SELECT a, id FROM t WHERE {k} = id")
            } else {
                format!("SELECT a, id FROM t WHERE id = {k}")
            };
            let template = plan_sql(&sql("0".into()), &c).unwrap();
            let written = plan_sql(&sql(v.to_string()), &c).unwrap();
            match template.with_key(&int(v)) {
                Some(bound) => prop_assert_eq!(shape(&bound), shape(&written)),
                // An INT column has no key past its range: the written
                // query looks nothing up either.
                None => prop_assert!(written.key_lookup.is_none()),
            }
        }

        #[test]
        fn a_bound_text_key_plans_as_the_written_one(v in "[a-z']{0,12}") {
            let c = cat("code TEXT PRIMARY KEY, n BIGINT");
            let template = plan_sql("SELECT n FROM t WHERE code = ''", &c).unwrap();
            let written = plan_sql(&format!("SELECT n FROM t WHERE code = '{}'", v.replace('\'', "''")), &c).unwrap();
            let bound = template.with_key(&(Arc::new(StringArray::from(vec![v.clone()])) as ArrayRef)).unwrap();
            prop_assert_eq!(shape(&bound), shape(&written));
        }
    }

    #[test]
    fn only_a_lookup_of_one_key_alone_takes_a_key() {
        let c = cat("id BIGINT PRIMARY KEY, a BIGINT");
        for sql in [
            "SELECT a FROM t WHERE id = 1 AND a > 2",
            "SELECT a FROM t WHERE id IN (1, 2)",
            "SELECT a FROM t WHERE a = 1",
            "SELECT a FROM t",
        ] {
            let p = plan_sql(sql, &c).unwrap();
            assert!(p.with_key(&int(5)).is_none(), "{sql}");
        }
        let p = plan_sql("SELECT a FROM t WHERE id = 1", &c).unwrap();
        let text: ArrayRef = Arc::new(StringArray::from(vec!["5"]));
        assert!(p.with_key(&text).is_none(), "a key of another type");
        let null: ArrayRef = Arc::new(Int64Array::from(vec![None::<i64>]));
        assert!(p.with_key(&null).is_none(), "NULL is no key");
        assert!(p.with_key(&int(5)).is_some());
    }
}
