//! `sluice demo`: the main job, end to end, on generated data.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use sluice::load::{LoadOptions, Progress, load};
use sluice::source::Input;
use sluice::store::Database;

use crate::generate::sales::{SCHEMA, write_sales};

#[derive(Args)]
pub struct DemoArgs {
    /// Rows to generate
    #[arg(long, default_value_t = 3_000_000)]
    rows: u64,
    /// Keep the generated CSV and database in this directory
    #[arg(long)]
    keep: Option<PathBuf>,
}

/// Generates the sales CSV, loads it, queries it and prints each step.
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
    let bytes = write_sales(&csv, args.rows, 7)?;
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
