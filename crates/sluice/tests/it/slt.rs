//! Golden SQL files (`tests/slt/*.slt`, sqllogictest format) run by the
//! `sqllogictest` crate against sluice.
//!
//! The harness understands two statements the engine itself does not have,
//! to set up tables: `CREATE TABLE t (col TYPE, ...)` creates an empty
//! table, and `INSERT INTO t VALUES (...), ...` loads the rows through the
//! CSV loader. Everything else goes to `sluice::query`.
//!
//! Every file runs twice: one worker with the default morsel size, and
//! several workers with 2-row morsels, so that partial aggregates are
//! merged across workers. `SLUICE_SLT_COMPLETE=1 cargo test slt` rewrites
//! the expected results of the first run instead of checking them.

use std::path::{Path, PathBuf};

use arrow_schema::DataType as A;
use sluice::batch::format_value;
use sluice::load::{Header, LoadOptions, load};
use sluice::query::{QueryOptions, query_with};
use sluice::source::Input;
use sluice::store::Database;
use sqllogictest::{DB, DBOutput, DefaultColumnType};

use crate::common::TempDir;

#[derive(Debug)]
struct SltError(String);

impl std::fmt::Display for SltError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SltError {}

struct SluiceDb {
    dir: TempDir,
    opts: QueryOptions,
    inserts: usize,
    /// Shards of every table created.
    shards: Option<u32>,
    /// Tables loaded in tiny segments and batches, every TEXT column
    /// dictionary-encoded (`common::tiny_layout`).
    tiny: bool,
}

impl SluiceDb {
    fn db_path(&self) -> PathBuf {
        self.dir.path().join("db")
    }

    fn load_csv(
        &mut self,
        table: &str,
        schema: Option<&str>,
        csv: String,
    ) -> Result<u64, SltError> {
        self.inserts += 1;
        let f = self
            .dir
            .write(&format!("insert-{}.csv", self.inserts), csv.as_bytes());
        let mut db = Database::open_writer(self.db_path()).map_err(|e| SltError(e.to_string()))?;
        let mut o = LoadOptions {
            schema: schema
                .map(|s| s.parse())
                .transpose()
                .map_err(|e: sluice::Error| SltError(e.to_string()))?,
            header: Header::Yes,
            shards: schema.and(self.shards),
            ..LoadOptions::default()
        };
        if self.tiny {
            o = crate::common::tiny_layout(o);
        }
        let s = load(&mut db, table, &[Input::File(f)], &o).map_err(|e| SltError(e.to_string()))?;
        Ok(s.rows)
    }

    fn create(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SltError> {
        let open = sql
            .find('(')
            .ok_or_else(|| SltError("CREATE TABLE needs (columns)".into()))?;
        let close = sql
            .rfind(')')
            .ok_or_else(|| SltError("CREATE TABLE needs (columns)".into()))?;
        let name = sql[..open]
            .split_whitespace()
            .nth(2)
            .ok_or_else(|| SltError("CREATE TABLE needs a name".into()))?;
        let schema = &sql[open + 1..close];
        let parsed: sluice::batch::Schema = schema
            .parse()
            .map_err(|e: sluice::Error| SltError(e.to_string()))?;
        let header: Vec<String> = parsed.columns.iter().map(|c| c.name.clone()).collect();
        self.load_csv(name, Some(schema), format!("{}\n", header.join(",")))?;
        Ok(DBOutput::StatementComplete(0))
    }

    fn insert(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SltError> {
        use sqlparser::ast;
        let stmt = sluice::query::plan::parse(sql).map_err(|e| SltError(e.to_string()))?;
        let name = sql
            .split_whitespace()
            .nth(2)
            .ok_or_else(|| SltError("INSERT INTO needs a table".into()))?;
        let ast::Statement::Insert(ins) = stmt else {
            return Err(SltError("not an INSERT".into()));
        };
        let Some(src) = ins.source else {
            return Err(SltError("INSERT needs VALUES".into()));
        };
        let ast::SetExpr::Values(values) = *src.body else {
            return Err(SltError("INSERT needs VALUES".into()));
        };
        let db = Database::open(self.db_path()).map_err(|e| SltError(e.to_string()))?;
        let meta = db
            .table(name)
            .ok_or_else(|| SltError(format!("no table {name}")))?;
        let mut csv = meta
            .schema
            .columns
            .iter()
            .map(|c| c.name.clone())
            .collect::<Vec<_>>()
            .join(",");
        csv.push('\n');
        for row in &values.rows {
            let cells: Vec<String> = row.iter().map(cell).collect::<Result<_, _>>()?;
            csv.push_str(&cells.join(","));
            csv.push('\n');
        }
        let n = self.load_csv(name, None, csv)?;
        Ok(DBOutput::StatementComplete(n))
    }
}

/// One INSERT value as a CSV field: NULL is an empty unquoted field, text is
/// always quoted (so '' stays an empty string).
fn cell(e: &sqlparser::ast::Expr) -> Result<String, SltError> {
    use sqlparser::ast::{Expr, UnaryOperator, Value};
    Ok(match e {
        Expr::Value(v) => match &v.value {
            Value::Null => String::new(),
            Value::Number(n, _) => n.clone(),
            Value::Boolean(b) => b.to_string(),
            Value::SingleQuotedString(s) => format!("\"{}\"", s.replace('"', "\"\"")),
            other => return Err(SltError(format!("unsupported INSERT value {other}"))),
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => format!("-{}", cell(expr)?),
        Expr::TypedString(ts) => format!(
            "\"{}\"",
            ts.value.value.clone().into_string().unwrap_or_default()
        ),
        other => return Err(SltError(format!("unsupported INSERT value {other}"))),
    })
}

impl DB for SluiceDb {
    type Error = SltError;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SltError> {
        let head = sql.trim_start().to_ascii_uppercase();
        if head.starts_with("CREATE TABLE") {
            return self.create(sql);
        }
        if head.starts_with("INSERT") {
            return self.insert(sql);
        }
        std::fs::create_dir_all(self.db_path()).map_err(|e| SltError(e.to_string()))?;
        let db = Database::open(self.db_path()).map_err(|e| SltError(e.to_string()))?;
        let r = query_with(&db, sql, &self.opts).map_err(|e| SltError(e.to_string()))?;
        let types = r
            .schema
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                A::Int32 | A::Int64 => DefaultColumnType::Integer,
                A::Float64 | A::Decimal128(..) | A::Decimal64(..) => {
                    DefaultColumnType::FloatingPoint
                }
                _ => DefaultColumnType::Text,
            })
            .collect();
        let mut rows = Vec::new();
        for b in &r.batches {
            for i in 0..b.num_rows() {
                rows.push(
                    b.columns()
                        .iter()
                        .map(|c| match format_value(c.as_ref(), i) {
                            None => "NULL".to_string(),
                            Some(v) if v.is_empty() => "(empty)".to_string(),
                            Some(v) => v,
                        })
                        .collect(),
                );
            }
        }
        Ok(DBOutput::Rows { types, rows })
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    // The database is synchronous: the futures never wait.
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

fn slt_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .collect();
    v.sort();
    v
}

#[test]
fn golden_sql_files() {
    let complete = std::env::var_os("SLUICE_SLT_COMPLETE").is_some();
    let mut failures = Vec::new();
    let files = slt_files();
    assert!(!files.is_empty(), "no .slt files found");
    for file in &files {
        // The third run puts every table in 16 shards, the fourth loads
        // it in segments of a few rows with every TEXT column of every
        // batch dictionary-encoded (many dictionaries, as a big table
        // has), the fifth both: the answers must not change. The fourth
        // also writes every join's rows to disk and makes every inner
        // join by keys by partitions on disk (the grace join), as a
        // query past its memory limit does, and sorts every ORDER BY's
        // rows to disk a morsel at a time and merges them.
        for (threads, morsel_rows, shards, tiny, on_disk) in [
            (1, None, None, false, false),
            (4, Some(2), None, false, false),
            (4, Some(2), Some(16), false, false),
            (3, Some(3), None, true, true),
            (2, None, Some(4), true, false),
        ] {
            let make = move || {
                std::future::ready(Ok::<_, SltError>(SluiceDb {
                    dir: TempDir::new("slt"),
                    opts: QueryOptions {
                        threads: Some(threads),
                        morsel_rows,
                        join_rows_on_disk: on_disk,
                        sort_rows_on_disk: on_disk,
                        ..Default::default()
                    },
                    inserts: 0,
                    shards,
                    tiny,
                }))
            };
            let mut runner = sqllogictest::Runner::new(make);
            if complete && threads == 1 {
                let r = block_on(runner.update_test_file(
                    file,
                    " ",
                    sqllogictest::default_validator,
                    sqllogictest::default_normalizer,
                    sqllogictest::default_column_validator::<DefaultColumnType>,
                ));
                if let Err(e) = r {
                    failures.push(format!("{}: {e}", file.display()));
                }
                continue;
            }
            if let Err(e) = runner.run_file(file) {
                failures.push(format!(
                    "{} (threads {threads}, morsels {morsel_rows:?}, shards {shards:?}, tiny layout {tiny}, joins on disk {on_disk}):\n{e}",
                    file.display()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
