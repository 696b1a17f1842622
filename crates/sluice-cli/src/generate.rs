//! Seeded data generators for benchmarks and the demo.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

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

/// A small, fast, seeded generator (SplitMix64).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

#[derive(Clone, Copy)]
pub enum Limit {
    Rows(u64),
    Bytes(u64),
}

/// Appends the decimal digits of `v` to `out`.
pub fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&tmp[i..]);
}

pub fn write_ints_file(path: &Path, limit: Limit, seed: u64) -> Result<(u64, u64)> {
    let f = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    let r = write_ints(&mut w, limit, seed)?;
    w.flush()?;
    Ok(r)
}

/// Writes `a,b,c\n` rows; returns (rows, bytes).
pub fn write_ints(w: &mut dyn Write, limit: Limit, seed: u64) -> Result<(u64, u64)> {
    let mut rng = Rng::new(seed);
    let mut buf = Vec::with_capacity(1 << 20);
    let (mut rows, mut bytes) = (0u64, 0u64);
    loop {
        match limit {
            Limit::Rows(r) if rows >= r => break,
            Limit::Bytes(b) if bytes + buf.len() as u64 >= b => break,
            _ => {}
        }
        for c in 0..3 {
            if c > 0 {
                buf.push(b',');
            }
            push_u64(&mut buf, rng.below(1 << 31));
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
