//! `sluice gen`: benchmark data on standard output or into files, from the
//! same generators the benchmarks use (`crate::generate`).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Subcommand;

use crate::generate::{Limit, ints, objects, tpcds, tpch};

#[derive(Subcommand)]
pub enum GenCommand {
    /// TPC-H tables as CSV with a header (the tpchgen crate, a port of dbgen);
    /// prints the `sluice load` command for each table
    #[command(after_help = "Examples:
  sluice gen tpch --sf 0.1                       # eight CSV files in tpch/, and their load commands
  sluice gen tpch --sf 1 --table lineitem --output data
  sluice --db tpch.db gen tpch --sf 1 --load     # generate and load every table")]
    Tpch {
        /// Scale factor (1 = lineitem of 6 million rows, ~750 MB)
        #[arg(long, default_value_t = 1.0)]
        sf: f64,
        /// Only this table (default: all eight)
        #[arg(long)]
        table: Option<String>,
        /// Directory for the CSV files
        #[arg(long, short, default_value = "tpch")]
        output: PathBuf,
        /// Also load the tables into the database (--db)
        #[arg(long)]
        load: bool,
    },
    /// TPC-DS tables as CSV with a header (the tpcdsgen crate, a port of
    /// dsdgen); prints the `sluice load` command for each table
    #[command(after_help = "Examples:
  sluice gen tpcds --sf 0.01                     # 24 CSV files in tpcds/, and their load commands
  sluice gen tpcds --sf 1 --table store_sales --output data
  sluice --db tpcds.db gen tpcds --sf 1 --load   # generate and load every table")]
    Tpcds {
        /// Scale factor (1 = store_sales of 2.9 million rows, about 1 GB in all)
        #[arg(long, default_value_t = 1.0)]
        sf: f64,
        /// Only this table (default: all 24)
        #[arg(long)]
        table: Option<String>,
        /// Directory for the CSV files
        #[arg(long, short, default_value = "tpcds")]
        output: PathBuf,
        /// Also load the tables into the database (--db)
        #[arg(long)]
        load: bool,
    },
    /// The three-integer CSV of the ingest benchmark: `a,b,c` per line, no
    /// header, values uniform in 0..2^31, fixed seed
    #[command(after_help = "Examples:
  sluice gen ints --size 1.28GB --output ints.csv   # the file of sluice bench ingest
  sluice gen ints --rows 1000000 --output - | head
  sluice gen ints --size 100MB --seed 7 --output other.csv")]
    Ints {
        /// Approximate file size, e.g. 1.28GB (give --size or --rows)
        #[arg(long, conflicts_with = "rows", required_unless_present = "rows")]
        size: Option<String>,
        /// Exact number of rows
        #[arg(long)]
        rows: Option<u64>,
        /// Output file, or - for standard output
        #[arg(long, short)]
        output: PathBuf,
        #[arg(long, default_value_t = 42)]
        seed: u64,
    },
    /// The rows of the JSON input benchmark, one object per line:
    /// {"source_id":"<19 digits>","chunkId":0..100000,"subChunkId":0..1000}
    /// (table "source_id TEXT, chunkId INT, subChunkId INT"); with --tsv
    /// the same rows (same seed) as tab-separated values
    #[command(after_help = "Examples:
  sluice gen objects --size 220MB --output rows.jsonl        # the JSON input benchmark
  sluice gen objects --size 220MB --tsv --output rows.tsv    # the same rows as TSV
  sluice gen objects --rows 1000 --output - | head -3")]
    Objects {
        /// Approximate size of the JSON lines, e.g. 220MB (give --size or
        /// --rows; the TSV of the same rows is smaller)
        #[arg(long, conflicts_with = "rows", required_unless_present = "rows")]
        size: Option<String>,
        /// Exact number of rows
        #[arg(long)]
        rows: Option<u64>,
        /// Write TSV instead of JSON lines
        #[arg(long)]
        tsv: bool,
        /// Output file, or - for standard output
        #[arg(long, short)]
        output: PathBuf,
        #[arg(long, default_value_t = 42)]
        seed: u64,
    },
}

/// How much to generate: `--rows`, else `--size` (`example` shows one
/// in the message when neither is given).
fn limit(rows: Option<u64>, size: Option<String>, example: &str) -> Result<Limit> {
    Ok(match (rows, size) {
        (Some(r), _) => Limit::Rows(r),
        (None, Some(s)) => Limit::Bytes(crate::util::parse_size(&s, "--size")?),
        (None, None) => bail!("give --size (e.g. {example}) or --rows"),
    })
}

/// Writes the data asked for (and with `gen tpch --load`, loads it).
pub fn run(cmd: GenCommand, db: &Path, threads: Option<usize>) -> Result<()> {
    match cmd {
        GenCommand::Tpch {
            sf,
            table,
            output,
            load,
        } => {
            let tables: Vec<String> = match table {
                Some(t) => vec![t.to_ascii_lowercase()],
                None => tpch::TABLES.iter().map(|t| t.to_string()).collect(),
            };
            generate(&tables, &output, db, threads, load, |dir, t, workers| {
                let (path, bytes) = tpch::write_table(dir, t, sf, workers)?;
                Ok((path, bytes, tpch::schema(t).unwrap_or_default().to_string()))
            })
        }
        GenCommand::Tpcds {
            sf,
            table,
            output,
            load,
        } => {
            let tables: Vec<String> = match table {
                Some(t) => vec![t.to_ascii_lowercase()],
                None => tpcds::TABLES.iter().map(|t| t.to_string()).collect(),
            };
            generate(&tables, &output, db, threads, load, |dir, t, workers| {
                let (path, bytes) = tpcds::write_table(dir, t, sf, workers)?;
                Ok((path, bytes, tpcds::schema(t).unwrap_or_default()))
            })
        }
        GenCommand::Ints {
            size,
            rows,
            output,
            seed,
        } => {
            let limit = limit(rows, size, "1.28GB")?;
            let (rows, bytes) = if output.as_os_str() == "-" {
                ints::write_ints(&mut std::io::stdout().lock(), limit, seed, &ints::INGEST)?
            } else {
                ints::write_ints_file(&output, limit, seed, &ints::INGEST)?
            };
            eprintln!("wrote {rows} rows, {bytes} bytes");
            Ok(())
        }
        GenCommand::Objects {
            size,
            rows,
            tsv,
            output,
            seed,
        } => {
            let limit = limit(rows, size, "220MB")?;
            let (rows, bytes) = if output.as_os_str() == "-" {
                objects::write_objects(&mut std::io::stdout().lock(), limit, seed, tsv)?
            } else {
                let f = std::fs::File::create(&output)
                    .with_context(|| format!("creating {}", output.display()))?;
                let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
                let r = objects::write_objects(&mut w, limit, seed, tsv)?;
                w.flush()?;
                r
            };
            eprintln!("wrote {rows} rows, {bytes} bytes");
            Ok(())
        }
    }
}

/// Writes each table with `write` (its file, bytes and schema) into
/// `output`, and loads it into `db` with `load`, else prints the command
/// that would.
fn generate(
    tables: &[String],
    output: &Path,
    db: &Path,
    threads: Option<usize>,
    load: bool,
    write: impl Fn(&Path, &str, usize) -> Result<(PathBuf, u64, String)>,
) -> Result<()> {
    std::fs::create_dir_all(output).with_context(|| format!("creating {}", output.display()))?;
    let workers = sluice::exec::worker_count(threads);
    for t in tables {
        let (path, bytes, schema) = write(output, t, workers)?;
        eprintln!(
            "wrote {} ({})",
            path.display(),
            crate::util::human_bytes(bytes)
        );
        if load {
            let mut database = sluice::store::Database::open_writer(db)?;
            let opts = sluice::load::LoadOptions {
                schema: Some(schema.parse()?),
                header: sluice::load::Header::Yes,
                threads,
                ..Default::default()
            };
            let s = sluice::load::load(
                &mut database,
                t,
                &[sluice::source::Input::File(path.clone())],
                &opts,
            )
            .with_context(|| format!("loading {t}"))?;
            eprintln!("loaded {} rows into {t} in {:.2} s", s.rows, s.seconds);
        } else {
            println!(
                "sluice load --header --schema \"{schema}\" {t} {}",
                path.display()
            );
        }
    }
    Ok(())
}
