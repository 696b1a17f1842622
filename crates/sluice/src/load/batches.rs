//! A load of Arrow record batches already in memory (a Python caller's
//! table or DataFrame): the table sink, key checks, shards and commit of
//! a load of files, without reading or parsing.
//!
//! Useful for: data that is Arrow already. The batches must have the
//! table's Arrow types (the caller casts); the load is one commit group,
//! all or nothing.
//! Not useful for: files (`load`), or types other than the table's.

use std::sync::atomic::Ordering;
use std::time::Instant;

use arrow_array::RecordBatch;

use crate::batch::{column_stats, validate_identifier};
use crate::error::{Error, Result};
use crate::exec::worker_count;
use crate::source::Input;
use crate::store::Database;

use super::options::checked_options;
use super::sink::{GroupFiles, Rows, Sink};
use super::workers::{Cut, route_batch};
use super::{LoadOptions, LoadSummary, TableSink};

/// Loads `batches` into `table` (created from `opts.schema` when new) in
/// one commit. Each batch must have the table's columns, in order, with
/// their Arrow types ([`crate::batch::Schema::arrow_schema`]); a NULL in a
/// NOT NULL column or a duplicate key fails the load, and nothing is
/// committed. `opts.cancel` stops it (nothing committed); the options
/// about reading files are ignored.
pub fn load_batches(
    db: &mut Database,
    table: &str,
    batches: impl IntoIterator<Item = RecordBatch>,
    opts: &LoadOptions,
) -> Result<LoadSummary> {
    let start = Instant::now();
    validate_identifier(table, "table")?;
    let table = table.to_ascii_lowercase();
    checked_options(db, &table, opts)?;
    let mut sink = TableSink::new(db, &table);
    let inputs: &[Input] = &[];
    let layout = sink.begin(opts, inputs)?;
    let arrow = layout.schema.arrow_schema();
    let written = (|| {
        let mut rows = 0u64;
        for (i, b) in batches.into_iter().enumerate() {
            if opts
                .cancel
                .as_ref()
                .is_some_and(|c| c.load(Ordering::Relaxed))
            {
                return Err(Error::Cancelled);
            }
            if b.num_columns() != arrow.fields().len() {
                return Err(Error::Schema(format!(
                    "batch {} has {} columns; table {table} has {}",
                    i + 1,
                    b.num_columns(),
                    arrow.fields().len()
                )));
            }
            for (f, c) in arrow.fields().iter().zip(b.columns()) {
                if f.data_type() != c.data_type() {
                    return Err(Error::Schema(format!(
                        "column {} of batch {} is {}; table {table} stores it as {}",
                        f.name(),
                        i + 1,
                        c.data_type(),
                        f.data_type()
                    )));
                }
                if !f.is_nullable() && c.null_count() > 0 {
                    return Err(Error::Schema(format!(
                        "column {} is NOT NULL, and batch {} has {} NULLs in it",
                        f.name(),
                        i + 1,
                        c.null_count()
                    )));
                }
            }
            if b.num_rows() == 0 {
                continue;
            }
            let b = RecordBatch::try_new(arrow.clone(), b.columns().to_vec())?;
            let stats = b
                .columns()
                .iter()
                .map(|a| column_stats(a.as_ref()))
                .collect();
            let pieces = route_batch(&Cut::layout(&layout), b, stats)?;
            rows += sink.write(Rows {
                pieces,
                first_row: rows,
                provenance: &[],
            })?;
            if let Some(p) = &opts.progress {
                p.rows.store(rows, Ordering::Relaxed);
            }
        }
        sink.finish()?;
        Ok(rows)
    })();
    let rows = match written {
        Ok(rows) => rows,
        Err(e) => {
            sink.abort();
            return Err(e);
        }
    };
    let committed = sink.commit(&GroupFiles { files: &[], rows })?;
    let mut summary = LoadSummary::empty(&table, worker_count(opts.threads));
    summary.created = committed.created;
    summary.rows = rows;
    summary.segments = committed.segments;
    summary.duplicates = committed.duplicates;
    summary.runs_merged = committed.runs_merged;
    summary.merge_error = committed.merge_error;
    summary.commits = 1;
    summary.seconds = start.elapsed().as_secs_f64();
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, StringArray};

    use super::*;

    fn batch(ids: &[Option<i64>], names: &[&str]) -> RecordBatch {
        let schema: crate::batch::Schema = "id BIGINT PRIMARY KEY, name TEXT".parse().unwrap();
        RecordBatch::try_new(
            schema.arrow_schema(),
            vec![
                Arc::new(Int64Array::from(ids.to_vec())) as ArrayRef,
                Arc::new(StringArray::from(names.to_vec())) as ArrayRef,
            ],
        )
        .unwrap()
    }

    fn rows(db: &Database, table: &str) -> usize {
        db.scan(table).unwrap().map(|b| b.unwrap().num_rows()).sum()
    }

    #[test]
    fn batches_load_keyed_and_sharded_and_a_bad_batch_commits_nothing() {
        let dir = std::env::temp_dir().join(format!("sluice-batches-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut db = Database::open_writer(&dir).unwrap();
        let opts = LoadOptions {
            schema: Some("id BIGINT PRIMARY KEY, name TEXT".parse().unwrap()),
            shards: Some(3),
            ..Default::default()
        };
        let s = load_batches(
            &mut db,
            "t",
            vec![
                batch(&[Some(1), Some(2)], &["a", "b"]),
                batch(&[Some(3)], &["c"]),
            ],
            &opts,
        )
        .unwrap();
        assert_eq!((s.rows, s.created, s.commits), (3, true, 1));
        assert_eq!(rows(&db, "t"), 3);
        let row = db.keyed("t").unwrap().get("3").unwrap().unwrap();
        assert_eq!(row.num_rows(), 1);

        // A key already in the table: nothing of the load is committed.
        let e = load_batches(
            &mut db,
            "t",
            vec![batch(&[Some(4), Some(1)], &["d", "x"])],
            &opts,
        )
        .unwrap_err();
        assert!(matches!(e, Error::DuplicateKey { .. }), "{e}");
        assert_eq!(rows(&db, "t"), 3);

        // A column of another type, and a NULL key.
        let other = RecordBatch::try_new(
            Arc::new(arrow_schema::Schema::new(vec![
                arrow_schema::Field::new("id", arrow_schema::DataType::Int32, true),
                arrow_schema::Field::new("name", arrow_schema::DataType::Utf8, true),
            ])),
            vec![
                Arc::new(arrow_array::Int32Array::from(vec![9])) as ArrayRef,
                Arc::new(StringArray::from(vec!["z"])) as ArrayRef,
            ],
        )
        .unwrap();
        let e = load_batches(&mut db, "t", vec![other], &opts).unwrap_err();
        assert_eq!(
            e.to_string(),
            "column id of batch 1 is Int32; table t stores it as Int64"
        );
        let nullable = RecordBatch::try_new(
            Arc::new(arrow_schema::Schema::new(vec![
                arrow_schema::Field::new("id", arrow_schema::DataType::Int64, true),
                arrow_schema::Field::new("name", arrow_schema::DataType::Utf8, true),
            ])),
            vec![
                Arc::new(Int64Array::from(vec![None, Some(7)])) as ArrayRef,
                Arc::new(StringArray::from(vec!["n", "m"])) as ArrayRef,
            ],
        )
        .unwrap();
        let e = load_batches(&mut db, "t", vec![nullable], &opts).unwrap_err();
        assert!(e.to_string().contains("the key column id is NULL"), "{e}");
        assert_eq!(rows(&db, "t"), 3);
        drop(db);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
