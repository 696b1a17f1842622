//! Small text files: many small TSV files with a header (the profile
//! workload's readings) and CSV with malformed records (the rejects
//! benchmark's, the profile workload's prices).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::Rng;

/// Writes `files` TSV files of 20 readings each into `dir` (which must
/// exist): `station\treading\tday` with a header line; returns the paths.
pub fn write_readings(dir: &Path, files: u64, seed: u64) -> Result<Vec<PathBuf>> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    for f in 0..files {
        let p = dir.join(format!("part-{f:05}.tsv"));
        let mut text = String::from("station\treading\tday\n");
        for _ in 0..20 {
            text.push_str(&format!(
                "st{}\t{}.{}\t2024-{:02}-{:02}\n",
                rng.below(500),
                rng.below(1000),
                rng.below(10),
                1 + rng.below(12),
                1 + rng.below(28)
            ));
        }
        std::fs::write(&p, text)?;
        out.push(p);
    }
    Ok(out)
}

/// Writes `rows` lines of `id,price,k` (table "id BIGINT, price
/// DECIMAL(10,2), k INT"), every 97th with a price that is not a number.
pub fn write_prices(path: &Path, rows: u64) -> Result<()> {
    let mut text = String::new();
    for i in 0..rows {
        if i % 97 == 0 {
            text.push_str(&format!("{i},oops,{i}\n"));
        } else {
            text.push_str(&format!("{i},{}.{:02},{}\n", i % 1000, i % 100, i % 7));
        }
    }
    std::fs::write(path, text)?;
    Ok(())
}

/// Writes `records` lines of `<prefix><n>,name<n mod 1000>` (table "a INT,
/// b TEXT"): every record good with an empty `prefix`, every one
/// malformed with a letter.
pub fn write_records(path: &Path, records: u64, prefix: &str) -> Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    for i in 0..records {
        writeln!(w, "{prefix}{i},name{}", i % 1000)?;
    }
    w.flush()?;
    Ok(())
}
