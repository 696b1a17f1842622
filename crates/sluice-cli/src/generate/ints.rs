//! Integer CSV: `a,b,c` lines, no header, values uniform in a range per
//! column (the ingest benchmark's file, the profile workload's).

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

use super::{Limit, Rng, push_u64};

/// The ranges of the ingest benchmark's columns (`sluice gen ints`):
/// three, each uniform in 0..2^31.
pub const INGEST: [u64; 3] = [1 << 31; 3];

/// Writes the rows of `write_ints` to a new file at `path`.
pub fn write_ints_file(path: &Path, limit: Limit, seed: u64, ranges: &[u64]) -> Result<(u64, u64)> {
    let f = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    let r = write_ints(&mut w, limit, seed, ranges)?;
    w.flush()?;
    Ok(r)
}

/// Writes rows of one value a column, each uniform in `0..ranges[column]`,
/// comma separated; returns (rows, bytes).
pub fn write_ints(
    w: &mut dyn Write,
    limit: Limit,
    seed: u64,
    ranges: &[u64],
) -> Result<(u64, u64)> {
    let mut rng = Rng::new(seed);
    let mut buf = Vec::with_capacity(1 << 20);
    let (mut rows, mut bytes) = (0u64, 0u64);
    loop {
        match limit {
            Limit::Rows(r) if rows >= r => break,
            Limit::Bytes(b) if bytes + buf.len() as u64 >= b => break,
            _ => {}
        }
        for (c, &range) in ranges.iter().enumerate() {
            if c > 0 {
                buf.push(b',');
            }
            push_u64(&mut buf, rng.below(range));
        }
        buf.push(b'\n');
        rows += 1;
        if buf.len() >= (1 << 20) - 64 {
            w.write_all(&buf)?;
            bytes += buf.len() as u64;
            buf.clear();
        }
    }
    w.write_all(&buf)?;
    bytes += buf.len() as u64;
    Ok((rows, bytes))
}
