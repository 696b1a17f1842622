//! Point queries: `SELECT columns FROM t WHERE key = v` answered from the
//! key index alone.
//!
//! For: a query planned once and run many times with another key (the
//! server's prepared `WHERE id = $1`): the key is encoded, looked up in
//! its shard's index and the row's columns taken from the stored batch —
//! no morsels, no filter over the row, no projection machinery, no
//! concatenation. Not for: any other plan, which [`super::exec`] runs (a
//! plan this module does not take gives `None` at [`PointQuery::of`]).
//!
//! The answer is the general executor's, row for row and type for type:
//! the filter `key = v` holds for the row the index gives (the index maps
//! a key's exact byte form to its row), and each column is widened and cast to
//! the result type as the executor's projection does it. A property test
//! (`tests/it/point.rs`) checks both against each other.

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType as A, SchemaRef};

use super::expr::{BinOp, Expr};
use super::plan::{Body, Plan};
use crate::error::Result;
use crate::store::KeyedTable;

/// A plan that is a lookup of one key and nothing more, ready to be run
/// with any key of the key column's type.
#[derive(Debug, Clone)]
pub struct PointQuery {
    table: String,
    /// The table column of each result column.
    columns: Vec<usize>,
    /// The key column's stored type.
    key_type: A,
    schema: SchemaRef,
}

impl PointQuery {
    /// The point query of `plan`, when `plan` is exactly: one table, a
    /// filter that is only `key = literal` (an INT, BIGINT or TEXT
    /// key column, an INT one perhaps widened to BIGINT), result columns that are stored columns,
    /// no ORDER BY, OFFSET or `LIMIT 0`, not EXPLAIN. `None` otherwise.
    pub fn of(plan: &Plan) -> Option<PointQuery> {
        if plan.explain
            || plan.analyze
            || !plan.order.is_empty()
            || plan.offset != 0
            || plan.limit == Some(0)
        {
            return None;
        }
        let table = plan.table.clone()?;
        if plan.key_lookup.as_ref()?.len() != 1 {
            return None;
        }
        let Some(Expr::Binary {
            op: BinOp::Eq,
            left,
            right,
        }) = &plan.filter
        else {
            return None;
        };
        let (col, _) = match (left.as_ref(), right.as_ref()) {
            (c, Expr::Literal(l)) | (Expr::Literal(l), c) => (c, l),
            _ => return None,
        };
        // The key column, or an INT key widened to BIGINT (exact).
        let (k, widened) = match col {
            Expr::Column { index, .. } => (*index, false),
            Expr::Cast {
                expr, to: A::Int64, ..
            } => match expr.as_ref() {
                Expr::Column { index, .. } => (*index, true),
                _ => return None,
            },
            _ => return None,
        };
        let key_type = plan.table_types.get(k)?.clone();
        match (&key_type, widened) {
            (A::Int32 | A::Int64, _) | (A::Utf8, false) => {}
            _ => return None,
        }
        let Body::Project(exprs) = &plan.body else {
            return None;
        };
        if plan.visible != exprs.len() {
            return None;
        }
        let columns = exprs
            .iter()
            .map(|e| match e {
                Expr::Column { index, .. } => plan.scan_columns.get(*index).copied(),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        Some(PointQuery {
            table,
            columns,
            key_type,
            schema: super::exec::result_schema(plan),
        })
    }

    /// The table looked up.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The result's columns.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The row whose key is `value` (a one-row array of the literal's
    /// type: BIGINT or TEXT), as a batch of zero or one row, from
    /// `keyed` (this query's table, as planned). `None` when `value` is
    /// not a key this query takes exactly (NULL, another type, a number
    /// past the column's range): run the plan with the key bound then.
    pub fn run(&self, keyed: &KeyedTable<'_>, value: &ArrayRef) -> Result<Option<RecordBatch>> {
        if value.len() != 1 {
            return Ok(None);
        }
        let Some(key) = super::plan::literal_key(value, &self.key_type) else {
            return Ok(None);
        };
        let Some(id) = keyed.locate(&key)? else {
            return Ok(Some(RecordBatch::new_empty(self.schema.clone())));
        };
        let row = keyed.row(id)?;
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(self.columns.len());
        for (&c, f) in self.columns.iter().zip(self.schema.fields()) {
            let Some(a) = row.columns().get(c) else {
                return Ok(None);
            };
            // As the projection evaluates a column: widened to its
            // evaluation type, then cast to the result's.
            let a = super::expr::widen(a);
            cols.push(if a.data_type() == f.data_type() {
                a
            } else {
                super::expr::cast(&a, f.data_type())?
            });
        }
        Ok(Some(RecordBatch::try_new(self.schema.clone(), cols)?))
    }
}
