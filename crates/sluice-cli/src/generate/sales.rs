//! Typed CSV tables: sales rows of every type (`sluice demo`, the profile
//! workload) and lineitem-shaped shipments (the profile workload).

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

use super::{Rng, push_u64};

/// The sales table of `write_sales`.
pub const SCHEMA: &str = "id BIGINT, customer TEXT, price DECIMAL(12,2), qty INT, sold DATE, at TIMESTAMP, paid BOOLEAN, score DOUBLE";

/// Writes `rows` sales rows of every type (quoted text with commas and
/// quotes, NULLs) to `path`; returns the bytes written.
pub fn write_sales(path: &Path, rows: u64, seed: u64) -> Result<u64> {
    let f = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    let mut rng = Rng::new(seed);
    let mut line = Vec::with_capacity(256);
    let mut bytes = 0u64;
    w.write_all(b"id,customer,price,qty,sold,at,paid,score\n")?;
    for id in 0..rows {
        line.clear();
        push_u64(&mut line, id);
        line.push(b',');
        match rng.below(50) {
            0 => line.extend_from_slice(b"\"Smith, Jones & \"\"Partners\"\"\""),
            1 => {} // NULL
            _ => {
                line.extend_from_slice(b"customer_");
                push_u64(&mut line, rng.below(100_000));
            }
        }
        line.push(b',');
        push_u64(&mut line, rng.below(100_000));
        line.push(b'.');
        let cents = rng.below(100);
        line.push(b'0' + (cents / 10) as u8);
        line.push(b'0' + (cents % 10) as u8);
        line.push(b',');
        push_u64(&mut line, 1 + rng.below(50));
        let day = rng.below(28) + 1;
        let month = rng.below(12) + 1;
        let year = 2015 + rng.below(10);
        let date = format!("{year}-{month:02}-{day:02}");
        line.push(b',');
        line.extend_from_slice(date.as_bytes());
        line.push(b',');
        line.extend_from_slice(date.as_bytes());
        line.extend_from_slice(
            format!(
                " {:02}:{:02}:{:02}",
                rng.below(24),
                rng.below(60),
                rng.below(60)
            )
            .as_bytes(),
        );
        line.push(b',');
        line.extend_from_slice(if rng.below(2) == 0 { b"true" } else { b"false" });
        line.push(b',');
        line.extend_from_slice(format!("{:.4}", rng.below(1_000_000) as f64 / 997.0).as_bytes());
        line.push(b'\n');
        w.write_all(&line)?;
        bytes += line.len() as u64;
    }
    w.flush()?;
    Ok(bytes)
}

/// A shipments table shaped like TPC-H lineitem (its own generator):
/// integers, DECIMAL(15,2) quantities, prices, discounts and taxes, one-
/// and few-letter TEXT codes, dates.
pub fn write_shipments(path: &Path, rows: u64, seed: u64) -> Result<()> {
    let mut rng = Rng::new(seed);
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    let modes = ["AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB", "REG AIR"];
    let mut line = Vec::new();
    for i in 0..rows {
        line.clear();
        push_u64(&mut line, i / 4 + 1);
        line.push(b',');
        push_u64(&mut line, rng.below(200_000));
        line.push(b',');
        push_u64(&mut line, 1 + rng.below(50));
        line.extend_from_slice(b".00,");
        push_u64(&mut line, 900 + rng.below(100_000));
        line.extend_from_slice(
            format!(
                ".{:02},0.{:02},0.{:02},",
                rng.below(100),
                rng.below(11),
                rng.below(9)
            )
            .as_bytes(),
        );
        line.push([b'A', b'N', b'R'][rng.below(3) as usize]);
        line.push(b',');
        line.push([b'O', b'F'][rng.below(2) as usize]);
        line.extend_from_slice(
            format!(
                ",{}-{:02}-{:02},{}\n",
                2019 + rng.below(6),
                1 + rng.below(12),
                1 + rng.below(28),
                modes[rng.below(7) as usize]
            )
            .as_bytes(),
        );
        w.write_all(&line)?;
    }
    w.flush()?;
    Ok(())
}
