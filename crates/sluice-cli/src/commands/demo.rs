//! `sluice demo`: the main job, end to end, on generated data.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use sluice::load::{LoadOptions, Progress, load};
use sluice::source::Input;
use sluice::store::Database;

use crate::generate::{Rng, push_u64};

#[derive(Args)]
pub struct DemoArgs {
    /// Rows to generate
    #[arg(long, default_value_t = 3_000_000)]
    rows: u64,
    /// Keep the generated CSV and database in this directory
    #[arg(long)]
    keep: Option<PathBuf>,
}

pub(crate) const SCHEMA: &str = "id BIGINT, customer TEXT, price DECIMAL(12,2), qty INT, sold DATE, at TIMESTAMP, paid BOOLEAN, score DOUBLE";

/// Writes `rows` sales rows of every type (quoted text with commas and
/// quotes, NULLs) to `path`; returns the bytes written.
pub(crate) fn write_sample(path: &PathBuf, rows: u64, seed: u64) -> Result<u64> {
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

pub fn run(args: DemoArgs, threads: Option<usize>) -> Result<()> {
    let (dir, temporary) = match &args.keep {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("sluice-demo-{}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let csv = dir.join("sales.csv");
    let db_dir = dir.join("demo.db");
    let _ = std::fs::remove_dir_all(&db_dir);

    eprintln!("generating {} rows into {} ...", args.rows, csv.display());
    let bytes = write_sample(&csv, args.rows, 7)?;
    eprintln!("generated {}", crate::util::human_bytes(bytes));

    let mut db = Database::open_writer(&db_dir)?;
    let progress = Arc::new(Progress::default());
    let opts = LoadOptions {
        schema: Some(SCHEMA.parse()?),
        threads,
        progress: Some(progress.clone()),
        ..LoadOptions::default()
    };
    println!("$ sluice load --schema \"{SCHEMA}\" sales sales.csv");
    let s = load(&mut db, "sales", &[Input::File(csv.clone())], &opts)?;
    println!(
        "loaded {} rows ({}) in {:.2} s: {:.1} MB/s, {} rows/s, {} threads",
        s.rows,
        crate::util::human_bytes(s.bytes),
        s.seconds,
        s.mb_per_s(),
        crate::util::human_count(s.rows_per_s() as u64),
        s.threads
    );

    let sql = "SELECT paid, count(*) AS n, sum(price) AS revenue, avg(qty) AS avg_qty, min(sold) AS first, max(sold) AS last \
               FROM sales WHERE sold >= DATE '2020-01-01' GROUP BY paid ORDER BY paid";
    println!("\n$ sluice query \"{sql}\"");
    let t = std::time::Instant::now();
    let r = sluice::query::query(&db, sql, threads)?;
    let elapsed = t.elapsed().as_secs_f64();
    for b in &r.batches {
        let schema = b.schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        println!("{}", names.join(" | "));
        for row in 0..b.num_rows() {
            let cells: Vec<String> = b
                .columns()
                .iter()
                .map(|c| {
                    sluice::batch::format_value(c.as_ref(), row).unwrap_or_else(|| "NULL".into())
                })
                .collect();
            println!("{}", cells.join(" | "));
        }
    }
    println!(
        "({elapsed:.3} s over {} rows on {} workers)",
        r.facts.rows, r.facts.workers
    );
    if temporary {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    } else {
        println!("\nkept {} and {}", csv.display(), db_dir.display());
    }
    Ok(())
}
