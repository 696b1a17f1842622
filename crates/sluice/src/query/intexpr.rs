//! A fast path for SUM and AVG arguments: arithmetic (`+ - *`, unary minus)
//! over INT, BIGINT and DECIMAL columns and constants, evaluated straight
//! into 128-bit integers at a scale fixed at plan time, without the
//! intermediate Arrow arrays (and their allocations) of the general path.
//! Overflow is checked, as in the general path. Anything else (division,
//! functions, other types) returns `None` from [`IntProgram::compile`] and
//! takes the general path.

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, RecordBatch};
use arrow_buffer::NullBuffer;
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
        Expr::Cast { expr, to } => {
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
    Error::Exec("numeric overflow in an aggregate argument".into())
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

    /// The NULL rows of a batch: a row is NULL when any input column is.
    pub fn nulls(&self, batch: &RecordBatch) -> Option<NullBuffer> {
        let mut nulls: Option<NullBuffer> = None;
        for &c in &self.columns {
            nulls = NullBuffer::union(nulls.as_ref(), batch.column(c).logical_nulls().as_ref());
        }
        nulls
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
        let n = batch.num_rows();
        let mut nulls: Option<NullBuffer> = None;
        for &c in &self.columns {
            nulls = NullBuffer::union(nulls.as_ref(), batch.column(c).logical_nulls().as_ref());
        }
        out.resize(n, 0);
        eval_node(&self.root, batch, out, pool)?;
        Ok(nulls)
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
