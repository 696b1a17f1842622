//! One module per subcommand: each turns its parsed arguments into calls
//! of the library and prints what the command prints. Parsing the command
//! line and dispatching is `main.rs`'s; benchmarks are under `bench/`, data
//! generators under `generate/`.

use std::path::Path;

use anyhow::{Result, bail};
use sluice::store::{Database, TableMeta};

pub mod check;
pub mod compact;
pub mod demo;
pub mod export;
pub mod r#gen;
pub mod get;
pub mod info;
pub mod load;
pub mod query;
pub mod serve;

/// The tables named (one, or all).
fn tables_of<'a>(
    db: &'a Database,
    db_dir: &Path,
    table: Option<&str>,
) -> Result<Vec<(&'a String, &'a TableMeta)>> {
    let m = db.manifest();
    Ok(match table {
        Some(t) => match m.tables.get_key_value(&t.to_ascii_lowercase()) {
            Some(kv) => vec![kv],
            None => bail!("no table named {t:?} in {}", db_dir.display()),
        },
        None => m.tables.iter().collect(),
    })
}
