//! `sluice get`: the rows of a keyed table with the given keys.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use sluice::store::Database;

/// The examples of `--help`.
pub const EXAMPLES: &str = "Examples:
  sluice load --key source_id --tsv --schema \"source_id TEXT, chunk INT, sub INT\" objects 'chunks/*.tsv'
  sluice get objects 4295806720 4295806721
  sluice get objects --keys wanted.txt --format json";

/// Prints the rows with the given keys (arguments and `--keys FILE`).
pub fn run(
    db_dir: &Path,
    table: &str,
    mut keys: Vec<String>,
    keys_file: Option<PathBuf>,
    format: Option<crate::output::Format>,
) -> Result<()> {
    if let Some(p) = &keys_file {
        let text = if p.as_os_str() == "-" {
            std::io::read_to_string(std::io::stdin()).context("reading keys from standard input")?
        } else {
            std::fs::read_to_string(p)
                .with_context(|| format!("reading keys from {}", p.display()))?
        };
        keys.extend(
            text.lines()
                .map(|l| l.trim_end_matches('\r'))
                .filter(|l| !l.is_empty())
                .map(str::to_string),
        );
    }
    if keys.is_empty() {
        bail!("no keys given (pass them as arguments or with --keys FILE)");
    }
    let db = Database::open(db_dir)?;
    let t = db.keyed(table)?;
    // A key that is not a value of the key's type is reported, and the
    // others are still looked up.
    let mut bad = 0usize;
    keys.retain(|k| match t.encode_key(k) {
        Ok(_) => true,
        Err(e) => {
            eprintln!("error: {e}");
            bad += 1;
            false
        }
    });
    let rows = t.get_many(&keys)?;
    let format = crate::output::pick_format(format);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    crate::output::write_result(&mut out, &rows.schema(), &[rows], format)?;
    out.flush().context("writing the result")?;
    if bad > 0 {
        // Each bad key had its error line; the rows of the others are out.
        drop(out);
        std::process::exit(2);
    }
    Ok(())
}
