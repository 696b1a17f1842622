//! A fast path for SUM and AVG arguments: arithmetic (`+ - *`, unary minus)
//! and `CASE WHEN … THEN … ELSE … END` (conditions of any kind, values of
//! these) over INT, BIGINT and DECIMAL columns and constants, evaluated straight
//! into 128-bit integers at a scale fixed at plan time, without the
//! intermediate Arrow arrays (and their allocations) of the general path.
//! Overflow is checked, as in the general path. Anything else (division,
//! functions, other types) returns `None` from [`IntProgram::compile`] and
//! takes the general path.

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, RecordBatch};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::DataType as A;

use super::expr::{BinOp, Expr};
use crate::error::{Error, Result};

#[derive(Debug, Clone)]
enum Node {
    Col(usize),
    Const(i128),
    Add(Box<Node>, Box<Node>),
    Sub(Box<Node>, Box<Node>),
    Mul(Box<Node>, Box<Node>),
    Neg(Box<Node>),
    /// `CASE WHEN c1 THEN v1 … ELSE e END`: each condition is a boolean
    /// expression evaluated by the general path (NULL counts as false);
    /// every branch is evaluated for every row, as the general path does,
    /// and each row takes the first branch whose condition holds.
    Case(Vec<(Expr, Node)>, Box<Node>),
}

/// A compiled integer/decimal expression and the scale of its result.
#[derive(Debug, Clone)]
pub struct IntProgram {
    root: Node,
    pub scale: i8,
    columns: Vec<usize>,
}

fn rescale(n: Node, from: i8, to: i8) -> Option<Node> {
    if from == to {
        return Some(n);
    }
    let f = 10i128.checked_pow((to - from) as u32)?;
    Some(Node::Mul(Box::new(n), Box::new(Node::Const(f))))
}

fn compile(e: &Expr, stored: &[A], cols: &mut Vec<usize>) -> Option<(Node, i8)> {
    match e {
        Expr::Column { index, .. } => {
            let scale = match stored.get(*index)? {
                A::Int32 | A::Int64 => 0,
                A::Decimal64(_, s) => *s,
                _ => return None,
            };
            cols.push(*index);
            Some((Node::Col(*index), scale))
        }
        Expr::Literal(a) => {
            if a.is_null(0) {
                return None;
            }
            match a.data_type() {
                A::Int64 => Some((
                    Node::Const(a.as_primitive::<Int64Type>().value(0) as i128),
                    0,
                )),
                A::Decimal128(_, s) => {
                    Some((Node::Const(a.as_primitive::<Decimal128Type>().value(0)), *s))
                }
                _ => None,
            }
        }
        // A CAST the query wrote with a DECIMAL precision checks it: the
        // general path does.
        Expr::Cast { expr, to, site } if site.as_ref().is_none_or(|s| s.precision.is_none()) => {
            let (n, s) = compile(expr, stored, cols)?;
            match to {
                A::Int64 if s == 0 => Some((n, 0)),
                A::Decimal128(_, ts) if *ts >= s => Some((rescale(n, s, *ts)?, *ts)),
                _ => None,
            }
        }
        Expr::Neg(x) => {
            let (n, s) = compile(x, stored, cols)?;
            Some((Node::Neg(Box::new(n)), s))
        }
        Expr::Case { whens, otherwise } => {
            let mut branches = Vec::with_capacity(whens.len());
            for (c, v) in whens {
                branches.push((c.clone(), compile(v, stored, cols)?));
            }
            let (e, es) = compile(otherwise, stored, cols)?;
            let s = branches.iter().map(|b| b.1.1).fold(es, i8::max);
            let mut out = Vec::with_capacity(branches.len());
            for (c, (n, ns)) in branches {
                out.push((c, rescale(n, ns, s)?));
            }
            Some((Node::Case(out, Box::new(rescale(e, es, s)?)), s))
        }
        Expr::Binary { op, left, right } => {
            let (l, ls) = compile(left, stored, cols)?;
            let (r, rs) = compile(right, stored, cols)?;
            match op {
                BinOp::Add | BinOp::Sub => {
                    let s = ls.max(rs);
                    let (l, r) = (rescale(l, ls, s)?, rescale(r, rs, s)?);
                    let n = if *op == BinOp::Add {
                        Node::Add(Box::new(l), Box::new(r))
                    } else {
                        Node::Sub(Box::new(l), Box::new(r))
                    };
                    Some((n, s))
                }
                BinOp::Mul => {
                    let s = ls.checked_add(rs)?;
                    (s <= 38).then(|| (Node::Mul(Box::new(l), Box::new(r)), s))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

fn overflow() -> Error {
    Error::OutOfRange("numeric overflow in an aggregate argument".into())
}

impl IntProgram {
    /// Compiles `e` over columns of the stored types `stored`, or `None`.
    pub fn compile(e: &Expr, stored: &[A]) -> Option<IntProgram> {
        let mut columns = Vec::new();
        let (root, scale) = compile(e, stored, &mut columns)?;
        columns.sort_unstable();
        columns.dedup();
        Some(IntProgram {
            root,
            scale,
            columns,
        })
    }

    /// Evaluates in 64-bit integers, the common case: `Ok(false)` if any
    /// step overflowed (the caller then uses [`Self::eval_into`]). Wrapping
    /// operations with an overflow flag keep the loops branch-free.
    pub fn eval_i64(
        &self,
        batch: &RecordBatch,
        out: &mut Vec<i64>,
        pool: &mut Vec<Vec<i64>>,
    ) -> Result<bool> {
        out.resize(batch.num_rows(), 0);
        eval_node_i64(&self.root, batch, out, pool)
    }

    /// The NULL rows of a batch: a row is NULL when an input column of
    /// the value it takes is (a CASE row only by its chosen branch).
    pub fn nulls(&self, batch: &RecordBatch) -> Result<Option<NullBuffer>> {
        node_nulls(&self.root, batch)
    }

    /// Evaluates every row of `batch` into `out` (resized to the row
    /// count; `pool` lends scratch buffers, reused across calls) and returns
    /// the NULL rows.
    pub fn eval_into(
        &self,
        batch: &RecordBatch,
        out: &mut Vec<i128>,
        pool: &mut Vec<Vec<i128>>,
    ) -> Result<Option<NullBuffer>> {
        let nulls = self.nulls(batch)?;
        out.resize(batch.num_rows(), 0);
        eval_node(&self.root, batch, out, pool)?;
        Ok(nulls)
    }
}

/// The NULL rows of a node's values over `batch`.
fn node_nulls(node: &Node, batch: &RecordBatch) -> Result<Option<NullBuffer>> {
    Ok(match node {
        Node::Col(c) => batch.column(*c).logical_nulls(),
        Node::Const(_) => None,
        Node::Neg(x) => node_nulls(x, batch)?,
        Node::Add(l, r) | Node::Sub(l, r) | Node::Mul(l, r) => NullBuffer::union(
            node_nulls(l, batch)?.as_ref(),
            node_nulls(r, batch)?.as_ref(),
        ),
        Node::Case(whens, otherwise) => {
            let n = batch.num_rows();
            let all = |v: Option<NullBuffer>| {
                v.map_or_else(|| BooleanBuffer::new_set(n), |b| b.inner().clone())
            };
            let mut some = false;
            let mut valid = {
                let e = node_nulls(otherwise, batch)?;
                some |= e.is_some();
                all(e)
            };
            for (c, v) in whens.iter().rev() {
                let t = node_nulls(v, batch)?;
                if t.is_none() && !some {
                    continue;
                }
                some = true;
                let m = condition(c, batch)?;
                valid = &(&m & &all(t)) | &(&!&m & &valid);
            }
            some.then(|| NullBuffer::new(valid))
                .filter(|b| b.null_count() > 0)
        }
    })
}

/// Rows where a CASE condition holds (NULL: it does not).
pub(crate) fn condition(c: &Expr, batch: &RecordBatch) -> Result<BooleanBuffer> {
    let a = c.eval(batch)?.into_array(batch.num_rows())?;
    match a.data_type() {
        A::Boolean => {
            let b = a.as_boolean();
            Ok(match b.nulls() {
                Some(n) => b.values() & n.inner(),
                None => b.values().clone(),
            })
        }
        A::Null => Ok(BooleanBuffer::new_unset(batch.num_rows())),
        other => Err(Error::Internal(format!("CASE condition of type {other}"))),
    }
}

/// Writes the node's values into `out` (one per row).
fn eval_node(
    node: &Node,
    batch: &RecordBatch,
    out: &mut [i128],
    pool: &mut Vec<Vec<i128>>,
) -> Result<()> {
    match node {
        Node::Col(c) => {
            let a = batch.column(*c);
            match a.data_type() {
                A::Int32 => a
                    .as_primitive::<Int32Type>()
                    .values()
                    .iter()
                    .zip(out.iter_mut())
                    .for_each(|(v, o)| *o = *v as i128),
                A::Int64 => a
                    .as_primitive::<Int64Type>()
                    .values()
                    .iter()
                    .zip(out.iter_mut())
                    .for_each(|(v, o)| *o = *v as i128),
                A::Decimal64(..) => a
                    .as_primitive::<Decimal64Type>()
                    .values()
                    .iter()
                    .zip(out.iter_mut())
                    .for_each(|(v, o)| *o = *v as i128),
                other => return Err(Error::Internal(format!("integer program over {other}"))),
            }
            // NULL slots may hold anything: zero them so that they cannot
            // overflow the arithmetic above them.
            if let Some(nulls) = a.logical_nulls() {
                for i in (0..out.len()).filter(|&i| nulls.is_null(i)) {
                    out[i] = 0;
                }
            }
        }
        Node::Const(v) => out.fill(*v),
        Node::Case(whens, otherwise) => {
            eval_node(otherwise, batch, out, pool)?;
            let mut val = pool.pop().unwrap_or_default();
            val.resize(out.len(), 0);
            for (c, v) in whens.iter().rev() {
                let m = condition(c, batch)?;
                eval_node(v, batch, &mut val, pool)?;
                for i in m.set_indices() {
                    out[i] = val[i];
                }
            }
            pool.push(val);
        }
        Node::Neg(x) => {
            eval_node(x, batch, out, pool)?;
            for o in out.iter_mut() {
                *o = o.checked_neg().ok_or_else(overflow)?;
            }
        }
        Node::Add(l, r) | Node::Sub(l, r) | Node::Mul(l, r) => {
            eval_node(l, batch, out, pool)?;
            // A constant right side needs no buffer.
            if let Node::Const(k) = r.as_ref() {
                let k = *k;
                let ok = match node {
                    Node::Add(..) => out
                        .iter_mut()
                        .try_for_each(|o| o.checked_add(k).map(|v| *o = v)),
                    Node::Sub(..) => out
                        .iter_mut()
                        .try_for_each(|o| o.checked_sub(k).map(|v| *o = v)),
                    _ => out
                        .iter_mut()
                        .try_for_each(|o| o.checked_mul(k).map(|v| *o = v)),
                };
                return ok.ok_or_else(overflow);
            }
            let mut rhs = pool.pop().unwrap_or_default();
            rhs.resize(out.len(), 0);
            eval_node(r, batch, &mut rhs, pool)?;
            let ok = match node {
                Node::Add(..) => out
                    .iter_mut()
                    .zip(&rhs)
                    .try_for_each(|(o, b)| o.checked_add(*b).map(|v| *o = v)),
                Node::Sub(..) => out
                    .iter_mut()
                    .zip(&rhs)
                    .try_for_each(|(o, b)| o.checked_sub(*b).map(|v| *o = v)),
                _ => out
                    .iter_mut()
                    .zip(&rhs)
                    .try_for_each(|(o, b)| o.checked_mul(*b).map(|v| *o = v)),
            };
            pool.push(rhs);
            ok.ok_or_else(overflow)?;
        }
    }
    Ok(())
}

fn eval_node_i64(
    node: &Node,
    batch: &RecordBatch,
    out: &mut [i64],
    pool: &mut Vec<Vec<i64>>,
) -> Result<bool> {
    match node {
        Node::Col(c) => {
            let a = batch.column(*c);
            match a.data_type() {
                A::Int32 => a
                    .as_primitive::<Int32Type>()
                    .values()
                    .iter()
                    .zip(out.iter_mut())
                    .for_each(|(v, o)| *o = *v as i64),
                A::Int64 => out.copy_from_slice(a.as_primitive::<Int64Type>().values()),
                A::Decimal64(..) => out.copy_from_slice(a.as_primitive::<Decimal64Type>().values()),
                other => return Err(Error::Internal(format!("integer program over {other}"))),
            }
            if let Some(nulls) = a.logical_nulls() {
                for i in (0..out.len()).filter(|&i| nulls.is_null(i)) {
                    out[i] = 0;
                }
            }
            Ok(true)
        }
        Node::Const(v) => match i64::try_from(*v) {
            Ok(v) => {
                out.fill(v);
                Ok(true)
            }
            Err(_) => Ok(false),
        },
        Node::Case(whens, otherwise) => {
            if !eval_node_i64(otherwise, batch, out, pool)? {
                return Ok(false);
            }
            let mut val = pool.pop().unwrap_or_default();
            val.resize(out.len(), 0);
            let mut ok = true;
            for (c, v) in whens.iter().rev() {
                let m = condition(c, batch)?;
                if !eval_node_i64(v, batch, &mut val, pool)? {
                    ok = false;
                    break;
                }
                select(&m, &val, out);
            }
            pool.push(val);
            Ok(ok)
        }
        Node::Neg(x) => {
            if !eval_node_i64(x, batch, out, pool)? {
                return Ok(false);
            }
            let mut ovf = false;
            for o in out.iter_mut() {
                let (v, f) = o.overflowing_neg();
                *o = v;
                ovf |= f;
            }
            Ok(!ovf)
        }
        Node::Add(l, r) | Node::Sub(l, r) | Node::Mul(l, r) => {
            if !eval_node_i64(l, batch, out, pool)? {
                return Ok(false);
            }
            let op = |a: i64, b: i64| -> (i64, bool) {
                match node {
                    Node::Add(..) => a.overflowing_add(b),
                    Node::Sub(..) => a.overflowing_sub(b),
                    _ => a.overflowing_mul(b),
                }
            };
            let mut ovf = false;
            if let Node::Const(k) = r.as_ref() {
                let Ok(k) = i64::try_from(*k) else {
                    return Ok(false);
                };
                for o in out.iter_mut() {
                    let (v, f) = op(*o, k);
                    *o = v;
                    ovf |= f;
                }
                return Ok(!ovf);
            }
            let mut rhs = pool.pop().unwrap_or_default();
            rhs.resize(out.len(), 0);
            let ok = eval_node_i64(r, batch, &mut rhs, pool)?;
            if ok {
                for (o, b) in out.iter_mut().zip(&rhs) {
                    let (v, f) = op(*o, *b);
                    *o = v;
                    ovf |= f;
                }
            }
            pool.push(rhs);
            Ok(ok && !ovf)
        }
    }
}

/// A value vector of one chunk: borrowed from a column, a constant, or
/// computed into a buffer lent by the caller's pool.
pub enum Operand<'a> {
    Slice(&'a [i64]),
    Const(i64),
    Buf(Vec<i64>),
}

impl Operand<'_> {
    /// The values, `len` of them (a constant is expanded into `scratch`).
    pub fn values<'s>(&'s self, len: usize, scratch: &'s mut Vec<i64>) -> &'s [i64] {
        match self {
            Operand::Slice(s) => s,
            Operand::Buf(b) => b,
            Operand::Const(k) => {
                scratch.clear();
                scratch.resize(len, *k);
                scratch
            }
        }
    }

    /// Gives a computed buffer back to the pool.
    pub fn recycle(self, pool: &mut Vec<Vec<i64>>) {
        if let Operand::Buf(b) = self {
            pool.push(b);
        }
    }
}

#[derive(Clone, Copy)]
enum Op {
    Add,
    Sub,
    Mul,
}

/// `out[i] = op(l[i], r[i])` for every combination of operand kinds, in
/// place where one side is a computed buffer; returns the result and
/// whether any step overflowed.
fn binary<'a>(
    op: Op,
    checked: bool,
    l: Operand<'a>,
    r: Operand<'a>,
    pool: &mut Vec<Vec<i64>>,
) -> (Operand<'a>, bool) {
    // One copy of the loops per operation, with or without overflow
    // flags (without: the caller has bounded the result, and the loops
    // are free to vectorise).
    match (op, checked) {
        (Op::Add, true) => binary_with(|a, b| a.overflowing_add(b), l, r, pool),
        (Op::Sub, true) => binary_with(|a, b| a.overflowing_sub(b), l, r, pool),
        (Op::Mul, true) => binary_with(|a, b| a.overflowing_mul(b), l, r, pool),
        (Op::Add, false) => binary_with(|a, b| (a.wrapping_add(b), false), l, r, pool),
        (Op::Sub, false) => binary_with(|a, b| (a.wrapping_sub(b), false), l, r, pool),
        (Op::Mul, false) => binary_with(|a, b| (a.wrapping_mul(b), false), l, r, pool),
    }
}

#[inline(always)]
fn binary_with<'a>(
    apply: impl Fn(i64, i64) -> (i64, bool) + Copy,
    l: Operand<'a>,
    r: Operand<'a>,
    pool: &mut Vec<Vec<i64>>,
) -> (Operand<'a>, bool) {
    use Operand::*;
    let mut ovf = false;
    // One loop per operand shape, each simple enough to compile tightly.
    let result = match (l, r) {
        (Const(a), Const(b)) => {
            let (v, f) = apply(a, b);
            ovf = f;
            Const(v)
        }
        (Buf(mut a), Buf(b)) => {
            for (x, y) in a.iter_mut().zip(&b) {
                let (v, f) = apply(*x, *y);
                *x = v;
                ovf |= f;
            }
            pool.push(b);
            Buf(a)
        }
        (Buf(mut a), Slice(b)) => {
            for (x, y) in a.iter_mut().zip(b) {
                let (v, f) = apply(*x, *y);
                *x = v;
                ovf |= f;
            }
            Buf(a)
        }
        (Buf(mut a), Const(k)) => {
            for x in a.iter_mut() {
                let (v, f) = apply(*x, k);
                *x = v;
                ovf |= f;
            }
            Buf(a)
        }
        (Slice(a), Buf(mut b)) => {
            for (y, x) in b.iter_mut().zip(a) {
                let (v, f) = apply(*x, *y);
                *y = v;
                ovf |= f;
            }
            Buf(b)
        }
        (Const(k), Buf(mut b)) => {
            for y in b.iter_mut() {
                let (v, f) = apply(k, *y);
                *y = v;
                ovf |= f;
            }
            Buf(b)
        }
        (Slice(a), Slice(b)) => {
            let mut out = pool.pop().unwrap_or_default();
            out.clear();
            out.extend(a.iter().zip(b).map(|(x, y)| {
                let (v, f) = apply(*x, *y);
                ovf |= f;
                v
            }));
            Buf(out)
        }
        (Slice(a), Const(k)) => {
            let mut out = pool.pop().unwrap_or_default();
            out.clear();
            out.extend(a.iter().map(|x| {
                let (v, f) = apply(*x, k);
                ovf |= f;
                v
            }));
            Buf(out)
        }
        (Const(k), Slice(b)) => {
            let mut out = pool.pop().unwrap_or_default();
            out.clear();
            out.extend(b.iter().map(|y| {
                let (v, f) = apply(k, *y);
                ovf |= f;
                v
            }));
            Buf(out)
        }
    };
    (result, ovf)
}

/// Bounds of |value| over rows `off..off + len`: of `node`'s result, and
/// the largest of any step inside it. Column bounds are cached in `cols`.
fn bounds(
    node: &Node,
    batch: &RecordBatch,
    known: &[Option<u128>],
    off: usize,
    len: usize,
    cols: &mut Vec<(usize, u128)>,
) -> (u128, u128) {
    let (b, inner) = match node {
        Node::Col(c) => {
            if let Some(&Some(b)) = known.get(*c) {
                return (b, b);
            }
            if let Some(&(_, b)) = cols.iter().find(|x| x.0 == *c) {
                return (b, b);
            }
            let a = batch.column(*c);
            let m = match a.data_type() {
                A::Int64 => fold_abs(&a.as_primitive::<Int64Type>().values()[off..off + len]),
                A::Decimal64(..) => {
                    fold_abs(&a.as_primitive::<Decimal64Type>().values()[off..off + len])
                }
                A::Int32 => a.as_primitive::<Int32Type>().values()[off..off + len]
                    .iter()
                    .fold(0u64, |m, x| m | x.unsigned_abs() as u64),
                _ => u64::MAX,
            };
            // Every |v| has no bit above m's highest.
            let b = if m == 0 {
                0
            } else {
                (1u128 << (64 - m.leading_zeros())) - 1
            };
            cols.push((*c, b));
            (b, 0)
        }
        Node::Const(v) => (v.unsigned_abs(), 0),
        Node::Neg(x) => bounds(x, batch, known, off, len, cols),
        Node::Case(whens, otherwise) => {
            let mut r = bounds(otherwise, batch, known, off, len, cols);
            for (_, v) in whens {
                let (b, i) = bounds(v, batch, known, off, len, cols);
                r = (r.0.max(b), r.1.max(i));
            }
            r
        }
        Node::Add(l, r) | Node::Sub(l, r) | Node::Mul(l, r) => {
            let (lb, li) = bounds(l, batch, known, off, len, cols);
            let (rb, ri) = bounds(r, batch, known, off, len, cols);
            let b = match node {
                Node::Mul(..) => lb.saturating_mul(rb),
                _ => lb.saturating_add(rb),
            };
            (b, li.max(ri).max(lb).max(rb))
        }
    };
    (b, inner.max(b))
}

/// `out[i] = val[i]` where `m` is set: branch-free, so that it vectorises.
fn select(m: &BooleanBuffer, val: &[i64], out: &mut [i64]) {
    let mut i = 0;
    for word in m.bit_chunks().iter_padded() {
        let end = (i + 64).min(out.len());
        for (j, o) in out[i..end].iter_mut().enumerate() {
            let take = ((word >> j) & 1).wrapping_neg() as i64;
            *o = (val[i + j] & take) | (*o & !take);
        }
        i = end;
    }
}

fn fold_abs(v: &[i64]) -> u64 {
    v.iter().fold(0u64, |m, x| m | x.unsigned_abs())
}

fn eval_operand<'a>(
    node: &Node,
    batch: &'a RecordBatch,
    off: usize,
    len: usize,
    pool: &mut Vec<Vec<i64>>,
    checked: bool,
    ovf: &mut bool,
) -> Result<Option<Operand<'a>>> {
    Ok(Some(match node {
        Node::Col(c) => {
            let a = batch.column(*c);
            match a.data_type() {
                A::Int64 => Operand::Slice(&a.as_primitive::<Int64Type>().values()[off..off + len]),
                A::Decimal64(..) => {
                    Operand::Slice(&a.as_primitive::<Decimal64Type>().values()[off..off + len])
                }
                A::Int32 => {
                    let mut b = pool.pop().unwrap_or_default();
                    b.clear();
                    b.extend(
                        a.as_primitive::<Int32Type>().values()[off..off + len]
                            .iter()
                            .map(|&v| v as i64),
                    );
                    Operand::Buf(b)
                }
                other => return Err(Error::Internal(format!("integer program over {other}"))),
            }
        }
        Node::Const(v) => match i64::try_from(*v) {
            Ok(v) => Operand::Const(v),
            Err(_) => return Ok(None),
        },
        Node::Case(whens, otherwise) => {
            let Some(e) = eval_operand(otherwise, batch, off, len, pool, checked, ovf)? else {
                return Ok(None);
            };
            let mut out = pool.pop().unwrap_or_default();
            out.clear();
            match &e {
                Operand::Const(k) => out.resize(len, *k),
                Operand::Slice(v) => out.extend_from_slice(v),
                Operand::Buf(v) => out.extend_from_slice(v),
            }
            e.recycle(pool);
            let rows = batch.slice(off, len);
            for (c, v) in whens.iter().rev() {
                let m = condition(c, &rows)?;
                let Some(v) = eval_operand(v, batch, off, len, pool, checked, ovf)? else {
                    pool.push(out);
                    return Ok(None);
                };
                match &v {
                    Operand::Const(k) => m.set_indices().for_each(|i| out[i] = *k),
                    Operand::Slice(v) => select(&m, v, &mut out),
                    Operand::Buf(v) => select(&m, v, &mut out),
                }
                v.recycle(pool);
            }
            Operand::Buf(out)
        }
        Node::Neg(x) => {
            let Some(x) = eval_operand(x, batch, off, len, pool, checked, ovf)? else {
                return Ok(None);
            };
            let (v, f) = binary(Op::Sub, checked, Operand::Const(0), x, pool);
            *ovf |= f;
            v
        }
        Node::Add(l, r) | Node::Sub(l, r) | Node::Mul(l, r) => {
            let op = match node {
                Node::Add(..) => Op::Add,
                Node::Sub(..) => Op::Sub,
                _ => Op::Mul,
            };
            let Some(l) = eval_operand(l, batch, off, len, pool, checked, ovf)? else {
                return Ok(None);
            };
            let Some(r) = eval_operand(r, batch, off, len, pool, checked, ovf)? else {
                l.recycle(pool);
                return Ok(None);
            };
            let (v, f) = binary(op, checked, l, r, pool);
            *ovf |= f;
            v
        }
    }))
}

impl IntProgram {
    /// Evaluates rows `off..off + len` of `batch` in 64-bit integers,
    /// borrowing column values where the program reads a column as is, and
    /// returns them with a bound of their absolute values. When the bounds
    /// of the inputs show that no step can overflow, the steps run without
    /// overflow checks. `None` when a value does not fit 64 bits (the
    /// caller then takes the 128-bit path). NULL slots are not zeroed:
    /// callers use this only on batches whose input columns have no NULLs.
    /// `known[c]`, where present, bounds |value| of column c over the whole
    /// batch (from the zone map); other columns' bounds are computed and
    /// cached in `cols`: clear it for each new row range.
    pub fn eval_chunk<'a>(
        &self,
        batch: &'a RecordBatch,
        known: &[Option<u128>],
        off: usize,
        len: usize,
        pool: &mut Vec<Vec<i64>>,
        cols: &mut Vec<(usize, u128)>,
    ) -> Result<Option<(Operand<'a>, u128)>> {
        let (bound, inner) = bounds(&self.root, batch, known, off, len, cols);
        let checked = inner > i64::MAX as u128;
        let mut ovf = false;
        let r = eval_operand(&self.root, batch, off, len, pool, checked, &mut ovf)?;
        match r {
            Some(v) if ovf => {
                v.recycle(pool);
                Ok(None)
            }
            Some(v) => Ok(Some((v, bound))),
            None => Ok(None),
        }
    }

    /// Whether any input column of the program has a NULL in `batch`.
    pub fn has_nulls(&self, batch: &RecordBatch) -> bool {
        self.columns
            .iter()
            .any(|&c| batch.column(c).logical_null_count() > 0)
    }

    /// A key identifying the computation, equal for equal programs.
    pub fn identity(&self) -> String {
        format!("{:?}/{}", self.root, self.scale)
    }
}
