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
pub mod bloom;
pub mod catalog;
pub mod exec;
pub mod expr;
pub mod filter;
pub mod func;
pub mod fused;
pub mod grouping;
pub mod hash_join;
pub mod interval;
pub mod intexpr;
pub mod intset;
pub mod join;
pub mod like;
pub mod memory;
pub mod optimize;
pub mod plan;
pub mod point;
pub mod profile;
pub mod range_mask;
pub mod regexp;
pub mod scan;
pub mod setop;
pub mod sort;
pub mod spill;
pub mod sql;
pub mod subquery;
pub mod to_char;
pub mod to_char_num;
pub mod window;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::batch::Schema;
use crate::error::{Error, Result};
use crate::store::Database;

pub use exec::ScanFacts;

/// The answer to a query.
pub struct QueryResult {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
    /// The answer's rows after `batches`, on disk: asked for with
    /// [`QueryOptions::answer_to_disk`], an answer past half the memory
    /// limit is written there as it is made, and read back here a frame
    /// (about a sixteenth of the limit) at a time, in order. Its spill
    /// files go when the last of these is dropped. Empty otherwise.
    pub later: Vec<scan::Later>,
    /// The plan as text when the query was an EXPLAIN.
    pub explain: Option<String>,
    pub facts: ScanFacts,
}

impl QueryResult {
    /// Rows in the answer, those on disk too.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum::<usize>()
            + self.later.iter().map(|l| l.rows).sum::<usize>()
    }

    /// Calls `f` with each batch of the answer in order: those in
    /// memory, then those on disk, read one at a time (checked).
    pub fn for_each_batch<E: From<Error>>(
        &self,
        mut f: impl FnMut(&RecordBatch) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        for b in &self.batches {
            f(b)?;
        }
        for l in &self.later {
            f(&(l.load)()?)?;
        }
        Ok(())
    }

    /// Every batch of the answer in memory: those on disk read back.
    pub fn into_batches(self) -> Result<Vec<RecordBatch>> {
        let mut out = self.batches;
        for l in &self.later {
            out.push((l.load)()?);
        }
        Ok(out)
    }
}

impl plan::Catalog for Database {
    fn table_schema(&self, name: &str) -> Option<Schema> {
        self.table(name).map(|t| t.schema.clone())
    }

    fn table_stats(&self, table: &str, column: usize) -> Option<(u64, Option<(i64, i64)>)> {
        let t = self.table(table)?;
        let rows = t.segments.iter().map(|s| s.rows).sum();
        let mut range: Option<(i64, i64)> = None;
        for s in &t.segments {
            match s.stats.get(column).and_then(|c| c.range) {
                Some(crate::batch::StatRange::Int(lo, hi)) => {
                    range = Some(range.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
                }
                // A segment of only NULLs has no range; any other gap
                // leaves the range unknown.
                None if s.stats.get(column).is_some_and(|c| c.nulls == s.rows) => {}
                _ => return Some((rows, None)),
            }
        }
        Some((rows, range))
    }

    fn catalog_db(&self) -> Result<Option<std::sync::Arc<catalog::CatalogDb>>> {
        // A reader's manifest never changes: its catalog is made once.
        if !self.is_reader() {
            return catalog::CatalogDb::build(self).map(Some);
        }
        if let Some(c) = self.catalog.get() {
            return Ok(Some(c.clone()));
        }
        let c = catalog::CatalogDb::build(self)?;
        Ok(Some(self.catalog.get_or_init(|| c).clone()))
    }
}

/// Parses, plans and runs one SQL statement with up to `threads` workers.
pub fn query(db: &Database, sql: &str, threads: Option<usize>) -> Result<QueryResult> {
    query_with(
        db,
        sql,
        &QueryOptions {
            threads,
            ..Default::default()
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
    /// Set from another thread to stop the query at its next morsel: it
    /// then fails with [`crate::Error::QueryCanceled`].
    pub stop: Option<Stop>,
    /// Give the CPU up between morsels (`sched_yield`): a query run beside
    /// latency-bound work on the same cores (the server's key lookups)
    /// then holds a CPU one morsel at a time, not a whole time slice.
    /// Where nothing else wants the CPU the yield returns at once.
    pub yield_between_morsels: bool,
    /// The pool the query's operators reserve memory from (see
    /// [`memory`]); `None`: a pool of its own with the default limit.
    /// Give several queries one pool to bound them together (`sluice
    /// serve`).
    pub memory: Option<memory::Memory>,
    /// Where the operators record their steps and memory (EXPLAIN
    /// ANALYZE); `None`: not recorded.
    pub profile: Option<std::sync::Arc<profile::Profile>>,
    /// The results of CTEs the statement names more than once, kept for
    /// their next use; made by the query itself (leave it `None`).
    pub cte_results: Option<std::sync::Arc<CteResults>>,
    /// Where operators spill what outgrows the memory limit (see
    /// [`spill`]); `None`: under the database's `tmp` directory.
    pub spill: Option<spill::Spill>,
    /// Tests: every join's rows written to disk and every inner join by
    /// keys made by partitions on disk (the grace join), as when the
    /// memory limit is reached — so the disk paths answer every join
    /// test, whatever its size.
    pub join_rows_on_disk: bool,
    /// Tests: every ORDER BY's rows sorted to disk a morsel at a time and
    /// merged (see [`sort`]), as past the memory limit.
    pub sort_rows_on_disk: bool,
    /// Lets an answer past half the memory limit go to disk as it is
    /// made, to be read back from [`QueryResult::later`] (`sluice query`
    /// prints it a frame at a time; the server sends it so): an ORDER BY
    /// of a whole table answers under a limit far below its size. Off,
    /// such an answer fails at `query result` (callers that read only
    /// `batches`).
    pub answer_to_disk: bool,
    /// Where the rows of a join's FROM item go past the memory limit;
    /// made by the join for the item's plan (leave it `None`).
    pub result_spill: Option<std::sync::Arc<join::ResultSpill>>,
}

/// The rows of CTEs that a statement names more than once, by the CTE
/// and the plan it was run with (two uses whose pushed-down conditions
/// differ are two entries): a CTE is run once, as PostgreSQL does
/// (TPC-H Q15's `revenue`, an aggregate over lineitem, was run twice).
/// The rows are counted in the query's memory until it ends.
#[derive(Default)]
pub struct CteResults(std::sync::Mutex<std::collections::HashMap<CteKey, KeptRows>>);

/// A CTE (its definition's identity in the statement) and its plan.
type CteKey = (usize, String);

/// A CTE's rows, and the memory they are counted in.
type KeptRows = (SchemaRef, Vec<RecordBatch>, memory::Reservation);

impl std::fmt::Debug for CteResults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CteResults")
    }
}

impl CteResults {
    /// The rows kept for `key`, if any.
    pub(crate) fn get(&self, key: &CteKey) -> Option<(SchemaRef, Vec<RecordBatch>)> {
        let m = self.0.lock().ok()?;
        m.get(key).map(|(s, b, _)| (s.clone(), b.clone()))
    }

    /// Keeps `batches` for `key`, their bytes counted in `opts`' pool.
    pub(crate) fn keep(
        &self,
        key: CteKey,
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
        opts: &QueryOptions,
    ) -> Result<()> {
        let mem = opts.reserve(
            "CTE rows (kept for its next use)",
            memory::batches_bytes(&batches),
        )?;
        if let Ok(mut m) = self.0.lock() {
            m.insert(key, (schema, batches, mem));
        }
        Ok(())
    }
}

impl QueryOptions {
    /// The error to stop with when the query was canceled or ran past
    /// its time limit (checked between an operator's steps).
    pub(crate) fn check_stop(&self) -> Result<()> {
        match self.stop.as_ref().and_then(|s| s.error()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Reserves `bytes` for `operator` from the query's pool.
    pub(crate) fn reserve(
        &self,
        operator: &'static str,
        bytes: u64,
    ) -> Result<memory::Reservation> {
        match &self.memory {
            Some(m) => m.reserve_profiled(operator, bytes, self.profile.clone()),
            None => Err(Error::Internal(
                "a query ran without its memory pool".into(),
            )),
        }
    }
}

/// A flag that asks a running query to stop, and says why.
#[derive(Debug, Clone, Default)]
pub struct Stop(std::sync::Arc<std::sync::atomic::AtomicU8>);

impl Stop {
    /// Stops the query because its client asked to.
    pub fn cancel(&self) {
        self.set(1);
    }

    /// Stops the query because it ran past its time limit.
    pub fn time_out(&self) {
        self.set(2);
    }

    fn set(&self, why: u8) {
        use std::sync::atomic::Ordering;
        let _ = self
            .0
            .compare_exchange(0, why, Ordering::Relaxed, Ordering::Relaxed);
    }

    pub fn is_set(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed) != 0
    }

    /// The error of a stopped query (PostgreSQL's wording), if stopped.
    pub fn error(&self) -> Option<crate::Error> {
        match self.0.load(std::sync::atomic::Ordering::Relaxed) {
            0 => None,
            1 => Some(crate::Error::QueryCanceled("user request".into())),
            _ => Some(crate::Error::QueryCanceled("statement timeout".into())),
        }
    }
}

/// [`query`] with every option.
pub fn query_with(db: &Database, sql: &str, opts: &QueryOptions) -> Result<QueryResult> {
    let p = plan::plan_sql(sql, db)?;
    run_plan(db, &p, opts)
}

/// Runs `f` on a thread of its own with a `stack`-byte stack, waiting for
/// it: for a statement that nests deeper than the calling thread's stack
/// may hold (see [`plan::plan_sql`] and [`run_plan`]).
pub(crate) fn on_own_stack<T: Send>(
    name: &str,
    stack: usize,
    f: impl FnOnce() -> Result<T> + Send,
) -> Result<T> {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name(name.into())
            .stack_size(stack)
            .spawn_scoped(s, f)
            .map_err(|e| Error::Internal(format!("starting thread {name}: {e}")))?
            .join()
            .map_err(|_| Error::Internal(format!("thread {name} panicked")))?
    })
}

/// Where a query over `db` spills unless told otherwise: `tmp` in the
/// database's directory.
pub fn default_spill_root(db: &Database) -> std::path::PathBuf {
    db.dir().join("tmp")
}

/// Runs a planned query (see [`plan::plan_sql`]).
pub fn run_plan(db: &Database, p: &plan::Plan, opts: &QueryOptions) -> Result<QueryResult> {
    // Every operator counts its memory in one pool: the caller's, or one
    // of the default limit for this query. The statement's CTE results
    // are kept in one place for all its parts, made here at the top.
    let own;
    let opts = if opts.memory.is_none() || opts.cte_results.is_none() || opts.spill.is_none() {
        own = QueryOptions {
            memory: Some(
                opts.memory
                    .clone()
                    .unwrap_or_else(memory::Memory::with_default_limit),
            ),
            cte_results: Some(opts.cte_results.clone().unwrap_or_default()),
            spill: Some(
                opts.spill
                    .clone()
                    .unwrap_or_else(|| spill::Spill::new(default_spill_root(db))),
            ),
            ..opts.clone()
        };
        &own
    } else {
        opts
    };
    // EXPLAIN ANALYZE: the run records its steps in a profile of its own.
    let profiled;
    let opts = if p.analyze && opts.profile.is_none() {
        profiled = QueryOptions {
            profile: Some(std::sync::Arc::new(profile::Profile::new())),
            ..opts.clone()
        };
        &profiled
    } else {
        opts
    };
    let started = std::time::Instant::now();
    // A plan of the catalog's tables reads the catalog's database.
    let db = p.catalog.as_ref().map_or(db, |c| c.db());
    // A plan whose expressions nest deep runs on a thread with room for
    // their evaluation (and its workers too, see `exec::spawn_worker`).
    // An answer that may go to disk: past half the limit its rows are
    // written as they are made, for the caller to read back in order
    // (under EXPLAIN ANALYZE, only counted: the plan is the answer).
    let answer = (opts.answer_to_disk && !p.explain && opts.spill.is_some())
        .then(|| std::sync::Arc::new(join::ResultSpill::answer(p)));
    // (The plans run under it, a subquery's, keep their rows.)
    let answered;
    let opts = match opts.answer_to_disk {
        true => {
            answered = QueryOptions {
                result_spill: answer.clone().or_else(|| opts.result_spill.clone()),
                answer_to_disk: false,
                ..opts.clone()
            };
            &answered
        }
        false => opts,
    };
    let (batches, facts) = if p.depth > exec::INLINE_EVAL_DEPTH {
        on_own_stack("sluice-query", exec::DEEP_EVAL_STACK, || {
            exec::execute(db, p, opts)
        })?
    } else {
        exec::execute(db, p, opts)?
    };
    if p.explain || p.analyze {
        let mut text = p.describe(&facts);
        if let (true, Some(profile)) = (p.analyze, &opts.profile) {
            // (With the rows of an answer that went to disk.)
            let rows = batches.iter().map(|b| b.num_rows() as u64).sum::<u64>()
                + answer.as_ref().map_or(0, |a| a.rows());
            let mem = profile.peak();
            text.push_str(&format!(
                "Result: {rows} rows in {:.3} ms; peak query memory {}\n",
                started.elapsed().as_secs_f64() * 1e3,
                memory::human_bytes(mem)
            ));
            text.push_str(&profile.report());
        }
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
            later: Vec::new(),
            explain: Some(text),
            facts,
        });
    }
    let schema = batches
        .first()
        .map(|b| b.schema())
        .unwrap_or_else(|| exec::result_schema(p));
    let later = match &answer {
        Some(a) => {
            // OFFSET and LIMIT not yet applied: applied to the frames.
            let (mut skip, mut take) = a.cut_asked().unwrap_or((0, None));
            let mut later = Vec::new();
            for piece in a.finish()? {
                let rows = piece.rows();
                if skip >= rows {
                    skip -= rows;
                    continue;
                }
                if take == Some(0) {
                    break;
                }
                let len = take.map_or(rows - skip, |t| t.min(rows - skip));
                let (start, schema) = (skip, schema.clone());
                let mut l = piece.later(Some(std::sync::Arc::new(move |b: &RecordBatch| {
                    answer_batch(
                        &b.slice(start, len.min(b.num_rows().saturating_sub(start))),
                        &schema,
                    )
                })));
                l.rows = len;
                later.push(l);
                skip = 0;
                take = take.map(|t| t - len);
            }
            later
        }
        None => Vec::new(),
    };
    Ok(QueryResult {
        schema,
        batches,
        later,
        explain: None,
        facts,
    })
}

/// A frame of an answer read back from disk, as the answer's schema
/// says (its names; a type the frame holds otherwise, cast).
fn answer_batch(b: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    if b.num_columns() != schema.fields().len() {
        return Err(Error::Internal(format!(
            "an answer's frame of {} columns, the answer {}",
            b.num_columns(),
            schema.fields().len()
        )));
    }
    let columns = b
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| match c.data_type() == f.data_type() {
            true => Ok(c.clone()),
            false => arrow_cast::cast(c, f.data_type())
                .map_err(|e| Error::Internal(format!("an answer's frame: {e}"))),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
    )?)
}
