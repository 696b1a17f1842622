//! SQL queries over the store: parse ([`sql::parse`], the `sqlparser`
//! crate), plan ([`plan::plan`]) with each expression bound and typed
//! ([`bind`]), and run morsel-driven in parallel ([`exec::execute`]).
//!
//! ```
//! # use sluice::{load::{load, LoadOptions}, source::Input, store::Database};
//! # let dir = std::env::temp_dir().join(format!("sluice-qdoc-{}", std::process::id()));
//! # let csv = dir.with_extension("csv");
//! # std::fs::write(&csv, "k,v\na,1\nb,2\na,3\n").unwrap();
//! # let mut db = Database::open_writer(&dir).unwrap();
//! # let opts = LoadOptions { schema: Some("k TEXT, v INT".parse().unwrap()), ..Default::default() };
//! # load(&mut db, "t", &[Input::File(csv.clone())], &opts).unwrap();
//! let result = sluice::query::query(&db, "SELECT k, sum(v) FROM t GROUP BY k ORDER BY k", None).unwrap();
//! assert_eq!(result.batches[0].num_rows(), 2);
//! # std::fs::remove_dir_all(&dir).unwrap(); std::fs::remove_file(&csv).unwrap();
//! ```

pub mod agg;
pub mod bind;
pub mod exec;
pub mod expr;
pub mod fused;
pub mod intexpr;
pub mod intset;
pub mod like;
pub mod plan;
pub mod scan;
pub mod sql;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::batch::Schema;
use crate::error::Result;
use crate::store::Database;

pub use exec::ScanFacts;

/// The answer to a query.
pub struct QueryResult {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
    /// The plan as text when the query was an EXPLAIN.
    pub explain: Option<String>,
    pub facts: ScanFacts,
}

impl plan::Catalog for Database {
    fn table_schema(&self, name: &str) -> Option<Schema> {
        self.table(name).map(|t| t.schema.clone())
    }
}

/// Parses, plans and runs one SQL statement with up to `threads` workers.
pub fn query(db: &Database, sql: &str, threads: Option<usize>) -> Result<QueryResult> {
    query_with(
        db,
        sql,
        &QueryOptions {
            threads,
            morsel_rows: None,
        },
    )
}

/// Knobs of a query run.
#[derive(Debug, Clone, Default)]
pub struct QueryOptions {
    /// Workers (`None` = every usable core; never more than the cores).
    pub threads: Option<usize>,
    /// Fixed morsel size; `None` grows it with the table. Tests use tiny
    /// morsels so that every query crosses morsel and worker boundaries.
    pub morsel_rows: Option<usize>,
}

/// [`query`] with every option.
pub fn query_with(db: &Database, sql: &str, opts: &QueryOptions) -> Result<QueryResult> {
    let p = plan::plan_sql(sql, db)?;
    let (batches, facts) = exec::execute(db, &p, opts)?;
    if p.explain {
        let text = p.describe(&facts);
        let schema =
            std::sync::Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
                "plan",
                arrow_schema::DataType::Utf8,
                false,
            )]));
        let lines: Vec<&str> = text.lines().collect();
        let col = std::sync::Arc::new(arrow_array::StringArray::from(lines));
        let batch = RecordBatch::try_new(schema.clone(), vec![col])?;
        return Ok(QueryResult {
            schema,
            batches: vec![batch],
            explain: Some(text),
            facts,
        });
    }
    let schema = batches
        .first()
        .map(|b| b.schema())
        .unwrap_or_else(|| std::sync::Arc::new(arrow_schema::Schema::empty()));
    Ok(QueryResult {
        schema,
        batches,
        explain: None,
        facts,
    })
}
