//! A WHERE predicate applied to a table's batches outside a query: what
//! `sluice export --where` keeps.
//!
//! Useful for: a consumer that walks a table's segments itself (export)
//! and wants the query engine's semantics for a predicate (types, NULL is
//! false, errors such as division by zero).
//! Not useful for: queries (the executor filters morsels itself).

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType as A;

use super::plan::{Body, Plan, plan_sql};
use crate::error::{Error, Result};
use crate::store::{Database, SegmentMeta};

/// A predicate over one table, planned once.
pub struct RowFilter {
    plan: Plan,
}

impl RowFilter {
    /// Plans `predicate` (SQL, as after WHERE) over `table`.
    pub fn new(db: &Database, table: &str, predicate: &str) -> Result<RowFilter> {
        let sql = format!("SELECT * FROM \"{table}\" WHERE {predicate}");
        let plan = plan_sql(&sql, db).map_err(|e| e.context(format!("--where {predicate:?}")))?;
        let plain = matches!(plan.body, Body::Project(_))
            && plan.order.is_empty()
            && plan.limit.is_none()
            && plan.offset == 0
            && !plan.explain
            && plan.filter.is_some();
        if !plain {
            return Err(Error::Config(format!(
                "--where {predicate:?}: expected a condition on the rows, such as \"d >= DATE '2024-01-01' AND qty > 0\""
            )));
        }
        Ok(RowFilter { plan })
    }

    /// Whether a segment may hold a matching row (its zone map).
    pub fn may_match(&self, seg: &SegmentMeta) -> bool {
        super::exec::segment_may_match(&seg.stats, &self.plan)
    }

    /// The rows of `batch` (all of the table's columns, in order, TEXT
    /// plain or dictionary-encoded) that the predicate keeps.
    pub fn apply(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let Some(f) = &self.plan.filter else {
            return Ok(batch.clone());
        };
        let input = batch.project(&self.plan.scan_columns)?;
        let input = crate::batch::dict::decode_batch(&input, &[])?;
        let mask = f.eval(&input)?.into_array(batch.num_rows())?;
        let mask = match mask.data_type() {
            A::Boolean => mask.as_boolean().clone(),
            A::Null => arrow_array::BooleanArray::from(vec![false; batch.num_rows()]),
            other => return Err(Error::Internal(format!("filter of type {other}"))),
        };
        let mask = if mask.null_count() > 0 {
            arrow_select::filter::prep_null_mask_filter(&mask)
        } else {
            mask
        };
        if mask.true_count() == batch.num_rows() {
            return Ok(batch.clone());
        }
        Ok(arrow_select::filter::filter_record_batch(batch, &mask)?)
    }
}
