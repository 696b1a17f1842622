//! A WHERE clause's comparisons of integer columns with constants, AND-ed,
//! tested in one pass a column.
//!
//! TPC-H Q6's `l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE
//! '1995-01-01' AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24`
//! was five comparison kernels and four ANDs over every batch, each
//! comparison reading its column again and writing a mask of its own.
//! Here each column's comparisons become one closed range `[lo, hi]`,
//! tested as `(v - lo) as unsigned <= hi - lo` (one comparison a value,
//! wrapping arithmetic), each column is read once, and its bits are AND-ed
//! into one mask. The loop is compiled twice, for baseline x86-64 and for
//! AVX2 (taken when the CPU has it): 64-bit comparisons are vectorised only
//! with AVX2.
//!
//! Useful for: the filter of a scan (`exec`), where most WHERE clauses of
//! analytic queries are ranges of dates, integers and decimals.
//! Not useful for: comparisons of two columns, TEXT, doubles (their SQL
//! order of NaN and -0 is not the bits'), `<>`: those stay expressions and
//! are evaluated as before, over the same batch.
//!
//! The answer is the expression's: a row is kept when every conjunct is
//! true; a NULL value fails its range as NULL fails a comparison. When a
//! conjunct left to the expression evaluator fails (`x > 0 AND ln(x) > 1`),
//! the whole condition is evaluated again the general way, which evaluates
//! the right side of AND only where the left leaves the answer open.

use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Decimal64Type, Int32Type, Int64Type};
use arrow_array::{Array, BooleanArray, RecordBatch};
use arrow_buffer::{BooleanBuffer, Buffer};
use arrow_schema::DataType as A;

use super::expr::{BinOp, Expr};
use crate::error::Result;

/// The rows of `batch` where `f` is true (NULL counts as false), with the
/// integer ranges of `f`'s top-level AND tested in one pass a column.
/// `general` evaluates a condition the ordinary way (the caller's, so the
/// answer is the same as without this module's fast path).
pub fn mask(
    f: &Expr,
    batch: &RecordBatch,
    general: &dyn Fn(&Expr, &RecordBatch) -> Result<BooleanArray>,
) -> Result<BooleanArray> {
    let mut conjuncts = Vec::new();
    flatten(f, &mut conjuncts);
    // Each column's range, in the order the columns first appear.
    let mut ranges: Vec<(usize, i64, i64)> = Vec::new();
    let mut rest: Vec<&Expr> = Vec::new();
    for c in conjuncts {
        match range_of(c, batch) {
            Some((col, lo, hi)) => match ranges.iter_mut().find(|r| r.0 == col) {
                Some(r) => {
                    r.1 = r.1.max(lo);
                    r.2 = r.2.min(hi);
                }
                None => ranges.push((col, lo, hi)),
            },
            None => rest.push(c),
        }
    }
    if ranges.is_empty() {
        return general(f, batch);
    }
    let n = batch.num_rows();
    let mut words = vec![u64::MAX; n.div_ceil(64)];
    let mut nulls = Vec::new();
    for &(col, lo, hi) in &ranges {
        let a = batch.column(col);
        match a.data_type() {
            A::Int32 => and_range_i32(a.as_primitive::<Int32Type>().values(), lo, hi, &mut words),
            A::Date32 => and_range_i32(a.as_primitive::<Date32Type>().values(), lo, hi, &mut words),
            A::Int64 => and_range_i64(a.as_primitive::<Int64Type>().values(), lo, hi, &mut words),
            A::Decimal64(..) => and_range_i64(
                a.as_primitive::<Decimal64Type>().values(),
                lo,
                hi,
                &mut words,
            ),
            // `range_of` takes no other type.
            _ => return general(f, batch),
        }
        if let Some(nb) = a.nulls()
            && nb.null_count() > 0
        {
            nulls.push(nb.inner().clone());
        }
    }
    let mut keep = BooleanBuffer::new(Buffer::from_vec(words), 0, n);
    for nb in &nulls {
        keep = &keep & nb;
    }
    for c in rest {
        match general(c, batch) {
            Ok(m) => keep = &keep & m.values(),
            // Evaluated again as a whole: AND's right side only where its
            // left side leaves the answer open.
            Err(_) => return general(f, batch),
        }
    }
    Ok(BooleanArray::new(keep, None))
}

/// The conjuncts of `f`'s top-level ANDs.
fn flatten<'a>(f: &'a Expr, out: &mut Vec<&'a Expr>) {
    match f {
        Expr::Binary {
            op: BinOp::And,
            left,
            right,
        } => {
            flatten(left, out);
            flatten(right, out);
        }
        f => out.push(f),
    }
}

/// `column op constant` (either side) on an INT, DATE, BIGINT or DECIMAL
/// column, as the closed range of stored values it keeps: (column, lo,
/// hi), empty when lo > hi. `None` for any other shape, type, a NULL
/// constant or one the column's stored type cannot hold.
fn range_of(e: &Expr, batch: &RecordBatch) -> Option<(usize, i64, i64)> {
    let Expr::Binary { op, left, right } = e else {
        return None;
    };
    let (col, lit, op) = match (left.as_ref(), right.as_ref()) {
        (c, Expr::Literal(l)) => (column_of(c, batch)?, l, *op),
        (Expr::Literal(l), c) => (column_of(c, batch)?, l, flip(*op)?),
        _ => return None,
    };
    let a = batch.columns().get(col)?;
    if lit.len() != 1 || lit.is_null(0) {
        return None;
    }
    let v: i64 = match (a.data_type(), lit.data_type()) {
        (A::Int32, A::Int32) => lit.as_primitive::<Int32Type>().value(0).into(),
        // `CAST(a AS BIGINT) op 5`, as the binder writes `a op 5` for an
        // INT column (a plain integer constant is a BIGINT): the 32-bit
        // values against 64-bit bounds (see `and_range_i32`).
        (A::Int32, A::Int64) => lit.as_primitive::<Int64Type>().value(0),
        (A::Date32, A::Date32) => lit.as_primitive::<Date32Type>().value(0).into(),
        (A::Int64, A::Int64) => lit.as_primitive::<Int64Type>().value(0),
        (A::Decimal64(..), _) => {
            let s = super::expr::narrow_to_stored(lit, a.data_type()).ok()??;
            let s = s.as_primitive_opt::<Decimal64Type>()?;
            if s.is_null(0) {
                return None;
            }
            s.value(0)
        }
        _ => return None,
    };
    // An empty range: lo > hi.
    const NONE: (i64, i64) = (1, 0);
    let (lo, hi) = match op {
        BinOp::Eq => (v, v),
        BinOp::Lt => v.checked_sub(1).map_or(NONE, |h| (i64::MIN, h)),
        BinOp::LtEq => (i64::MIN, v),
        BinOp::Gt => v.checked_add(1).map_or(NONE, |l| (l, i64::MAX)),
        BinOp::GtEq => (v, i64::MAX),
        _ => return None,
    };
    Some((col, lo, hi))
}

/// The column an operand of a comparison reads: a bare column, or an
/// INT column widened to BIGINT (a conversion that cannot fail).
fn column_of(e: &Expr, batch: &RecordBatch) -> Option<usize> {
    match e {
        Expr::Column { index, .. } => Some(*index),
        Expr::Cast {
            expr, to: A::Int64, ..
        } => match expr.as_ref() {
            Expr::Column { index, .. } if batch.columns().get(*index)?.data_type() == &A::Int32 => {
                Some(*index)
            }
            _ => None,
        },
        _ => None,
    }
}

/// `c op x` as `x op' c`.
fn flip(op: BinOp) -> Option<BinOp> {
    Some(match op {
        BinOp::Eq => BinOp::Eq,
        BinOp::Lt => BinOp::Gt,
        BinOp::LtEq => BinOp::GtEq,
        BinOp::Gt => BinOp::Lt,
        BinOp::GtEq => BinOp::LtEq,
        _ => return None,
    })
}

/// ANDs into `words` (bit i of word i / 64: row i) whether each value lies
/// in `[lo, hi]`.
#[inline(always)]
fn and_bits<T: Copy>(v: &[T], words: &mut [u64], inside: impl Fn(T) -> bool) {
    let chunks = v.chunks_exact(64);
    let tail = chunks.remainder();
    for (c, w) in chunks.zip(words.iter_mut()) {
        let mut m = 0u64;
        for (j, &x) in c.iter().enumerate() {
            m |= u64::from(inside(x)) << j;
        }
        *w &= m;
    }
    if !tail.is_empty()
        && let Some(w) = words.get_mut(v.len() / 64)
    {
        let mut m = 0u64;
        for (j, &x) in tail.iter().enumerate() {
            m |= u64::from(inside(x)) << j;
        }
        *w &= m;
    }
}

#[inline(always)]
fn range_i64_body(v: &[i64], lo: i64, hi: i64, words: &mut [u64]) {
    let span = hi.wrapping_sub(lo) as u64;
    and_bits(v, words, |x| (x.wrapping_sub(lo) as u64) <= span)
}

#[inline(always)]
fn range_i32_body(v: &[i32], lo: i32, hi: i32, words: &mut [u64]) {
    let span = hi.wrapping_sub(lo) as u32;
    and_bits(v, words, |x| (x.wrapping_sub(lo) as u32) <= span)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn range_i64_avx2(v: &[i64], lo: i64, hi: i64, words: &mut [u64]) {
    range_i64_body(v, lo, hi, words)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn range_i32_avx2(v: &[i32], lo: i32, hi: i32, words: &mut [u64]) {
    range_i32_body(v, lo, hi, words)
}

fn and_range_i64(v: &[i64], lo: i64, hi: i64, words: &mut [u64]) {
    if lo > hi {
        words.iter_mut().for_each(|w| *w = 0);
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked on the line above).
        unsafe { range_i64_avx2(v, lo, hi, words) };
        return;
    }
    range_i64_body(v, lo, hi, words)
}

fn and_range_i32(v: &[i32], lo: i64, hi: i64, words: &mut [u64]) {
    // Bounds past the 32-bit values: every value is on that side.
    let lo = lo.max(i32::MIN.into());
    let hi = hi.min(i32::MAX.into());
    let (Ok(lo), Ok(hi)) = (i32::try_from(lo), i32::try_from(hi)) else {
        words.iter_mut().for_each(|w| *w = 0);
        return;
    };
    if lo > hi {
        words.iter_mut().for_each(|w| *w = 0);
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked on the line above).
        unsafe { range_i32_avx2(v, lo, hi, words) };
        return;
    }
    range_i32_body(v, lo, hi, words)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Date32Array, Decimal64Array, Int32Array, Int64Array};
    use arrow_schema::{Field, Schema};
    use proptest::prelude::*;

    use super::*;

    fn general(f: &Expr, b: &RecordBatch) -> Result<BooleanArray> {
        let m = f.eval(b)?.into_array(b.num_rows())?;
        super::super::hash_join::truth(&m)
    }

    fn col(i: usize) -> Box<Expr> {
        Box::new(Expr::Column {
            index: i,
            name: format!("c{i}"),
        })
    }

    fn lit(a: ArrayRef) -> Box<Expr> {
        Box::new(Expr::Literal(a))
    }

    fn cmp(op: BinOp, left: Box<Expr>, right: Box<Expr>) -> Expr {
        Expr::Binary { op, left, right }
    }

    fn and(l: Expr, r: Expr) -> Expr {
        cmp(BinOp::And, Box::new(l), Box::new(r))
    }

    const OPS: [BinOp; 6] = [
        BinOp::Eq,
        BinOp::NotEq,
        BinOp::Lt,
        BinOp::LtEq,
        BinOp::Gt,
        BinOp::GtEq,
    ];

    fn batch(a: Vec<Option<i32>>, b: Vec<Option<i64>>, d: Vec<Option<i64>>) -> RecordBatch {
        let dates: Date32Array = a.iter().map(|v| v.map(|x| x / 2)).collect();
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", A::Int32, true),
            Field::new("b", A::Int64, true),
            Field::new("d", A::Decimal64(15, 2), true),
            Field::new("t", A::Date32, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int32Array::from(a)),
                Arc::new(Int64Array::from(b)),
                Arc::new(
                    Decimal64Array::from(d)
                        .with_precision_and_scale(15, 2)
                        .expect("valid"),
                ),
                Arc::new(dates),
            ],
        )
        .expect("batch")
    }

    /// A constant of column `c`'s comparison type: INT, BIGINT, the
    /// DECIMAL evaluated as DECIMAL(38, 2), DATE.
    fn constant(c: usize, v: i64) -> ArrayRef {
        match c {
            0 => Arc::new(Int32Array::from(vec![
                v.clamp(i32::MIN.into(), i32::MAX.into()) as i32,
            ])),
            1 => Arc::new(Int64Array::from(vec![v])),
            2 => Arc::new(
                arrow_array::Decimal128Array::from(vec![i128::from(v)])
                    .with_precision_and_scale(38, 2)
                    .expect("valid"),
            ),
            _ => Arc::new(Date32Array::from(vec![
                v.clamp(i32::MIN.into(), i32::MAX.into()) as i32,
            ])),
        }
    }

    fn values() -> impl Strategy<Value = i64> {
        prop_oneof![
            -20i64..20,
            Just(i64::MIN),
            Just(i64::MAX),
            Just(i64::from(i32::MIN)),
            Just(i64::from(i32::MAX)),
            any::<i64>(),
        ]
    }

    proptest! {
        /// Every conjunction of comparisons (some the fast path's, some
        /// not: `<>`, a column on both sides, constants on the left)
        /// keeps exactly the rows that the expression evaluator keeps,
        /// NULLs, offsets and both ends of the types included.
        #[test]
        fn the_mask_is_the_expressions(
            rows in proptest::collection::vec(
                (proptest::option::weighted(0.9, -20i32..20),
                 proptest::option::weighted(0.9, prop_oneof![-20i64..20, Just(i64::MIN), Just(i64::MAX)]),
                 proptest::option::weighted(0.9, -20i64..20)),
                0..300),
            conds in proptest::collection::vec((0usize..4, 0usize..6, values(), any::<bool>(), 0u8..8), 1..6),
            offset in 0usize..70,
        ) {
            let a = rows.iter().map(|r| r.0).collect();
            let b = rows.iter().map(|r| r.1).collect();
            let d = rows.iter().map(|r| r.2).collect();
            let full = batch(a, b, d);
            let offset = offset.min(full.num_rows());
            let batch = full.slice(offset, full.num_rows() - offset);
            let mut f: Option<Expr> = None;
            for (c, op, v, swap, other) in conds {
                let e = if other == 0 {
                    // Not a range: two columns.
                    cmp(OPS[op], col(0), col(0))
                } else if other == 1 {
                    // The INT column widened, against a BIGINT constant
                    // (as the binder writes `a > 5`).
                    let c = Box::new(Expr::Cast { expr: col(0), to: A::Int64, site: None });
                    let l = lit(Arc::new(Int64Array::from(vec![v])));
                    if swap { cmp(OPS[op], l, c) } else { cmp(OPS[op], c, l) }
                } else if swap {
                    cmp(OPS[op], lit(constant(c, v)), col(c))
                } else {
                    cmp(OPS[op], col(c), lit(constant(c, v)))
                };
                f = Some(match f {
                    None => e,
                    Some(f) => and(f, e),
                });
            }
            let f = f.expect("at least one condition");
            let want = general(&f, &batch).expect("evaluates");
            let got = mask(&f, &batch, &general).expect("evaluates");
            prop_assert_eq!(got.len(), batch.num_rows());
            prop_assert_eq!(got.null_count(), 0);
            let want: Vec<bool> = want.iter().map(|v| v == Some(true)).collect();
            let got: Vec<bool> = got.iter().map(|v| v == Some(true)).collect();
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn ranges_of_one_column_are_one_range() {
        let b = batch(
            (0..200).map(Some).collect(),
            (0..200).map(|v| Some(v * 3)).collect(),
            (0..200)
                .map(|v| if v % 7 == 0 { None } else { Some(v) })
                .collect(),
        );
        // 10 <= a < 150 AND a <= 100 AND d >= 50
        let f = and(
            and(
                cmp(BinOp::GtEq, col(0), lit(constant(0, 10))),
                cmp(BinOp::Lt, col(0), lit(constant(0, 150))),
            ),
            and(
                cmp(BinOp::GtEq, lit(constant(0, 100)), col(0)),
                cmp(BinOp::GtEq, col(2), lit(constant(2, 50))),
            ),
        );
        let got = mask(&f, &b, &general).expect("evaluates");
        let want: Vec<usize> = (50..=100).filter(|v| v % 7 != 0).collect();
        let kept: Vec<usize> = got.values().set_indices().collect();
        assert_eq!(kept, want);
        // A range that no value can be in keeps nothing.
        let f = and(
            cmp(BinOp::Gt, col(1), lit(constant(1, 100))),
            cmp(BinOp::Lt, col(1), lit(constant(1, 50))),
        );
        assert_eq!(mask(&f, &b, &general).expect("evaluates").true_count(), 0);
        let f = cmp(BinOp::Gt, col(1), lit(constant(1, i64::MAX)));
        assert_eq!(mask(&f, &b, &general).expect("evaluates").true_count(), 0);
    }

    #[test]
    fn a_failing_conjunct_is_evaluated_where_the_ranges_leave_it_open() {
        // a > 0 AND 100 / a > 1: the division fails at a = 0, a row the
        // range excludes, as the expression evaluator's AND does.
        let b = batch(
            (0..10).map(Some).collect(),
            (0..10).map(Some).collect(),
            (0..10).map(Some).collect(),
        );
        let div = cmp(
            BinOp::Div,
            lit(Arc::new(Int32Array::from(vec![100]))),
            col(0),
        );
        let f = and(
            cmp(BinOp::Gt, col(0), lit(constant(0, 0))),
            cmp(BinOp::Gt, Box::new(div), lit(constant(0, 11))),
        );
        let got = mask(&f, &b, &general).expect("evaluates");
        let want = general(&f, &b).expect("evaluates");
        assert_eq!(got.values(), want.values());
        assert_eq!(
            got.values().set_indices().collect::<Vec<_>>(),
            vec![1, 2, 3, 4, 5, 6, 7, 8]
        );
    }
}
