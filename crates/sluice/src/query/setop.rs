//! Running set operations: `UNION [ALL]`, `INTERSECT [ALL]`, `EXCEPT
//! [ALL]` and `SELECT DISTINCT`.
//!
//! For: each side's rows (a query of its own), cast to the output types,
//! then kept or dropped by their whole row compared as `arrow_row` bytes
//! — so two NULLs are the same value here, as SQL's set operations want,
//! and doubles are made canonical first (`-0.0` is `0.0`, one NaN). The
//! `ALL` forms count: INTERSECT ALL keeps a row as often as the fewer
//! side has it, EXCEPT ALL as often as the left has it more. Not for:
//! planning ([`super::plan::setop`]).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType as A, Field, Schema};

use super::QueryOptions;
use super::expr::{canonical_doubles, cast, exec_err};
use super::interval;
use super::plan::setop::{SetKind, SetOp};
use crate::error::Result;
use crate::store::Database;

/// One side's rows as a single batch of the output types.
fn side(
    db: &Database,
    p: &super::plan::Plan,
    types: &[A],
    opts: &QueryOptions,
) -> Result<RecordBatch> {
    let r = super::run_plan(db, p, opts)?;
    let fields: Vec<Field> = types
        .iter()
        .enumerate()
        .map(|(i, t)| Field::new(format!("c{i}"), t.clone(), true))
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let mut batches = Vec::new();
    for b in r.batches {
        let cols = b
            .columns()
            .iter()
            .zip(types)
            .map(|(c, t)| {
                let c = super::expr::widen(c);
                if c.data_type() == t {
                    Ok(c)
                } else {
                    cast(&c, t)
                }
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        batches.push(RecordBatch::try_new_with_options(
            schema.clone(),
            cols,
            &RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
        )?);
    }
    arrow_select::concat::concat_batches(&schema, &batches).map_err(exec_err)
}

/// Each row of `b` as bytes that are equal exactly when the rows are
/// the same values (NULL the same as NULL): an INTERVAL by PostgreSQL's
/// equality (`1 mon` = `30 days`: its [`key_type`] key), a DOUBLE's NaNs
/// and zeros as one.
fn row_keys(conv: &RowConverter, b: &RecordBatch) -> Result<arrow_row::Rows> {
    let cols: Vec<ArrayRef> = b
        .columns()
        .iter()
        .map(|c| {
            if *c.data_type() == interval::TYPE {
                interval::eval(
                    interval::Op::Key,
                    std::slice::from_ref(c),
                    &key_type(c.data_type()),
                )
            } else {
                Ok(canonical_doubles(c))
            }
        })
        .collect::<Result<_>>()?;
    conv.convert_columns(&cols).map_err(exec_err)
}

/// The type a column of type `t` is compared as: itself, or an
/// INTERVAL's key (its value with a month as 30 days, in microseconds).
fn key_type(t: &A) -> A {
    if *t == interval::TYPE {
        A::Decimal128(38, 0)
    } else {
        t.clone()
    }
}

/// Runs a set operation; its rows in one batch.
pub fn run(db: &Database, s: &SetOp, opts: &QueryOptions) -> Result<Vec<RecordBatch>> {
    let left = side(db, &s.left, &s.types, opts)?;
    let mut mem = opts.reserve("set operation", super::memory::batch_bytes(&left))?;
    let right = match &s.right {
        Some(r) => Some(side(db, r, &s.types, opts)?),
        None => None,
    };
    if let Some(r) = &right {
        mem.grow(super::memory::batch_bytes(r))?;
    }
    if s.kind == SetKind::Union && s.all {
        return Ok(match right {
            Some(r) => vec![left, r],
            None => vec![left],
        });
    }
    let conv = RowConverter::new(
        s.types
            .iter()
            .map(|t| SortField::new(key_type(t)))
            .collect(),
    )
    .map_err(exec_err)?;
    // Each row's key in the row format, and an entry a row in the
    // hash maps below (a key's slice and its count, and a control byte).
    let lk = row_keys(&conv, &left)?;
    mem.grow((lk.size() + left.num_rows() * 25) as u64)?;
    let rk = match &right {
        Some(r) => Some(row_keys(&conv, r)?),
        None => None,
    };
    if let (Some(rk), Some(r)) = (&rk, &right) {
        mem.grow((rk.size() + r.num_rows() * 25) as u64)?;
    }
    // Rows of the right side, counted.
    let mut theirs: HashMap<&[u8], usize> = HashMap::new();
    if let Some(rk) = &rk
        && s.kind != SetKind::Union
    {
        for r in 0..rk.num_rows() {
            *theirs.entry(rk.row(r).data()).or_insert(0) += 1;
        }
    }
    let mut seen: HashMap<&[u8], usize> = HashMap::new();
    let mut keep_left: Vec<u32> = Vec::new();
    let mut keep_right: Vec<u32> = Vec::new();
    for r in 0..lk.num_rows() {
        let k = lk.row(r).data();
        let n = seen.entry(k).or_insert(0);
        *n += 1;
        let keep = match (s.kind, s.all) {
            (SetKind::Union | SetKind::Distinct, _) => *n == 1,
            (SetKind::Intersect, false) => *n == 1 && theirs.contains_key(k),
            (SetKind::Intersect, true) => *n <= theirs.get(k).copied().unwrap_or(0),
            (SetKind::Except, false) => *n == 1 && !theirs.contains_key(k),
            (SetKind::Except, true) => *n > theirs.get(k).copied().unwrap_or(0),
        };
        if keep {
            keep_left.push(r as u32);
        }
    }
    if s.kind == SetKind::Union
        && let Some(rk) = &rk
    {
        for r in 0..rk.num_rows() {
            let n = seen.entry(rk.row(r).data()).or_insert(0);
            *n += 1;
            if *n == 1 {
                keep_right.push(r as u32);
            }
        }
    }
    let take = |b: &RecordBatch, rows: Vec<u32>| -> Result<RecordBatch> {
        let idx = UInt32Array::from(rows);
        let cols = b
            .columns()
            .iter()
            .map(|c| arrow_select::take::take(c, &idx, None).map_err(exec_err))
            .collect::<Result<Vec<_>>>()?;
        Ok(RecordBatch::try_new_with_options(
            b.schema(),
            cols,
            &RecordBatchOptions::new().with_row_count(Some(idx.len())),
        )?)
    };
    let mut out = vec![take(&left, keep_left)?];
    if let Some(r) = &right
        && !keep_right.is_empty()
    {
        out.push(take(r, keep_right)?);
    }
    Ok(out)
}
