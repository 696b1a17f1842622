//! Object rows: (19-digit object id, chunkId, subChunkId), as the archive
//! the secondary-index benchmark stands for holds them. As JSON lines or
//! TSV (`sluice gen objects`), as many TSV files with unique ids (the
//! secondary-index, resume and shards benchmarks; the profile workload's
//! keyed files), and those files' rows as JSON lines.

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use anyhow::{Context, Result, bail};

use super::{Limit, Rng, push_u64};

/// Writes the JSON-benchmark rows (or their TSV); returns (rows, bytes
/// written). The size limit counts the JSON lines, so that the TSV of a
/// size holds the same rows.
pub fn write_objects(w: &mut dyn Write, limit: Limit, seed: u64, tsv: bool) -> Result<(u64, u64)> {
    let mut rng = Rng::new(seed);
    let mut buf = Vec::with_capacity(1 << 20);
    let (mut rows, mut json_bytes, mut bytes) = (0u64, 0u64, 0u64);
    loop {
        match limit {
            Limit::Rows(r) if rows >= r => break,
            Limit::Bytes(b) if json_bytes >= b => break,
            _ => {}
        }
        let id = 1_000_000_000_000_000_000 + rng.below(9_000_000_000_000_000_000);
        let (chunk, sub) = (rng.below(100_000), rng.below(1000));
        let start = buf.len();
        let row = |buf: &mut Vec<u8>, json: bool| {
            let (a, b, c, end) = if json {
                (
                    &b"{\"source_id\":\""[..],
                    &b"\",\"chunkId\":"[..],
                    &b",\"subChunkId\":"[..],
                    &b"}\n"[..],
                )
            } else {
                (&b""[..], &b"\t"[..], &b"\t"[..], &b"\n"[..])
            };
            buf.extend_from_slice(a);
            push_u64(buf, id);
            buf.extend_from_slice(b);
            push_u64(buf, chunk);
            buf.extend_from_slice(c);
            push_u64(buf, sub);
            buf.extend_from_slice(end);
        };
        row(&mut buf, true);
        json_bytes += (buf.len() - start) as u64;
        if tsv {
            buf.truncate(start);
            row(&mut buf, false);
        }
        rows += 1;
        if buf.len() >= (1 << 20) - 128 {
            w.write_all(&buf)?;
            bytes += buf.len() as u64;
            buf.clear();
        }
    }
    w.write_all(&buf)?;
    bytes += buf.len() as u64;
    Ok((rows, bytes))
}

/// The table of the object files, keyed by the id.
pub const SCHEMA: &str = "source_id TEXT PRIMARY KEY, chunkId INT, subChunkId INT";
/// The same columns without the key.
pub const UNKEYED_SCHEMA: &str = "source_id TEXT, chunkId INT, subChunkId INT";
/// The seed of the object files (file `f` draws from `FILES_SEED ^ f * k`).
pub const FILES_SEED: u64 = 28;

/// The `i`-th object id: 19 digits, unique for every `i` below 2^62
/// (a bijection of the 62-bit integers, offset by 10^18), unsorted.
pub fn object_id(i: u64) -> u64 {
    const MASK: u64 = (1 << 62) - 1;
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) & MASK;
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9) & MASK;
    x ^= x >> 29;
    1_000_000_000_000_000_000 + x
}

/// Writes the object files of the secondary-index, resume and shards
/// benchmarks, `files` TSV files of `rows` rows in `dir`, in parallel,
/// unless they exist; returns the paths and their total size.
pub fn object_files(
    dir: &Path,
    files: usize,
    rows: u64,
    quiet: bool,
) -> Result<(Vec<PathBuf>, u64)> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let paths: Vec<PathBuf> = (0..files)
        .map(|f| dir.join(format!("chunk-{f:05}.tsv")))
        .collect();
    let missing: Vec<usize> = (0..files).filter(|&f| !paths[f].exists()).collect();
    if !missing.is_empty() && !quiet {
        eprintln!(
            "generating {} files of {rows} rows in {} ...",
            missing.len(),
            dir.display()
        );
    }
    let cores = sluice::exec::usable_cores();
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| -> Result<()> {
        let mut hs = Vec::new();
        for _ in 0..cores {
            hs.push(s.spawn(|| -> Result<()> {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&f) = missing.get(k) else {
                        return Ok(());
                    };
                    let mut rng =
                        Rng::new(FILES_SEED ^ (f as u64).wrapping_mul(0x1234_5678_9abc_def1));
                    let mut out = Vec::with_capacity(rows as usize * 32);
                    for r in 0..rows {
                        push_object_row(&mut out, object_id(f as u64 * rows + r), &mut rng);
                    }
                    let tmp = paths[f].with_extension("tmp");
                    std::fs::write(&tmp, &out)
                        .with_context(|| format!("writing {}", tmp.display()))?;
                    std::fs::rename(&tmp, &paths[f])?;
                }
            }));
        }
        for h in hs {
            h.join()
                .map_err(|_| anyhow::anyhow!("a generator thread panicked"))??;
        }
        Ok(())
    })?;
    let mut bytes = 0;
    for p in &paths {
        bytes += std::fs::metadata(p)?.len();
    }
    Ok((paths, bytes))
}

/// Appends one row of an object file: the id, then a chunk and a sub-chunk
/// drawn from `rng`, tab separated.
fn push_object_row(out: &mut Vec<u8>, id: u64, rng: &mut Rng) {
    push_u64(out, id);
    out.push(b'\t');
    push_u64(out, rng.below(150_000));
    out.push(b'\t');
    push_u64(out, rng.below(1000));
    out.push(b'\n');
}

/// Writes `files` object files of `rows` rows into `dir`, one generator
/// for all (seeded `seed`), the ids those of the row numbers xor `seed`
/// (the profile workload's keyed files: other ids than the benchmarks').
pub fn keyed_files(dir: &Path, files: usize, rows: u64, seed: u64) -> Result<Vec<PathBuf>> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    for f in 0..files {
        let p = dir.join(format!("objects-{f:03}.tsv"));
        let mut w = std::io::BufWriter::new(std::fs::File::create(&p)?);
        let mut line = Vec::new();
        for i in 0..rows {
            line.clear();
            let n = f as u64 * rows + i;
            push_object_row(&mut line, object_id(n ^ seed), &mut rng);
            w.write_all(&line)?;
        }
        w.flush()?;
        out.push(p);
    }
    Ok(out)
}

/// Appends the rows of an object file's text to `out` as JSON lines, the
/// fields named `names`: `{"source_id":"...","chunkId":...,"subChunkId":...}`.
pub fn rows_as_json(tsv: &str, names: [&str; 3], out: &mut String) -> Result<()> {
    let [id_name, chunk_name, sub_name] = names;
    for line in tsv.lines() {
        let mut f = line.split('\t');
        let (Some(id), Some(c), Some(sc)) = (f.next(), f.next(), f.next()) else {
            bail!("a line without three fields");
        };
        let _ = writeln!(
            out,
            "{{\"{id_name}\":\"{id}\",\"{chunk_name}\":{c},\"{sub_name}\":{sc}}}"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_file_rows_as_json_lines() {
        let mut out = String::new();
        rows_as_json("1000000000000000001\t7\t9\n", ["id", "c", "s"], &mut out).unwrap();
        assert_eq!(out, "{\"id\":\"1000000000000000001\",\"c\":7,\"s\":9}\n");
        assert!(rows_as_json("1\t2\n", ["id", "c", "s"], &mut out).is_err());
    }

    #[test]
    fn object_ids_have_19_digits_and_differ() {
        let ids: Vec<u64> = (0..1000).map(object_id).collect();
        assert!(ids.iter().all(|id| id.to_string().len() == 19));
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len());
    }
}
