//! `sluice export`: a table's rows as CSV.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sluice::store::Database;

/// Writes the rows of `table` as CSV to `output` or standard output.
pub fn run(
    db_dir: &Path,
    table: &str,
    output: Option<PathBuf>,
    delimiter: &str,
    header: bool,
) -> Result<()> {
    let d = crate::util::parse_char(delimiter, "--delimiter")?;
    let db = Database::open(db_dir)?;
    let meta = db
        .table(table)
        .with_context(|| format!("no table named {table:?} in {}", db_dir.display()))?;
    let names: Vec<String> = meta.schema.columns.iter().map(|c| c.name.clone()).collect();
    let mut out: Box<dyn Write> = match &output {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    if header {
        let cells: Vec<Option<String>> = names.into_iter().map(Some).collect();
        crate::util::write_csv_row(&mut out, &cells, d)?;
    }
    for batch in db.scan(table)? {
        let batch = batch?;
        let mut cells = Vec::with_capacity(batch.num_columns());
        for r in 0..batch.num_rows() {
            cells.clear();
            cells.extend(
                batch
                    .columns()
                    .iter()
                    .map(|c| sluice::batch::format_value(c.as_ref(), r)),
            );
            crate::util::write_csv_row(&mut out, &cells, d)?;
        }
    }
    out.flush()?;
    Ok(())
}
