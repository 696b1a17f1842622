//! `sluice export`: a table's rows as CSV on standard output, as one
//! file, or as a (Hive-partitioned) dataset of Parquet, CSV or JSON-lines
//! files.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result, bail};
use sluice::dataset::{Codec, ExportOptions, FileFormat};
use sluice::store::Database;

use crate::util::{human_bytes, human_count};

/// The examples of `--help`.
pub const EXAMPLES: &str = "Examples:
  sluice export trips > trips.csv
  sluice export trips --output trips.tsv --delimiter tab
  sluice export trips --output trips.parquet
  sluice export trips --format parquet --output /data/trips --partition-by pickup_date
  sluice export trips --format parquet --output /data/trips --partition-by shard
  sluice export trips --format jsonl --output /data/trips-2024 --where \"pickup_date >= DATE '2024-01-01'\"

--output DIR writes a dataset: DIR/part-00000.parquet ..., or with --partition-by
DIR/col=value/part-NNNNN.parquet (NULL as __HIVE_DEFAULT_PARTITION__), every core writing,
and DIR/_SUCCESS last. It is written under a hidden name beside DIR and renamed into place,
so an interrupted export leaves nothing at DIR. Spark: spark.read.parquet(\"DIR\");
DuckDB: read_parquet('DIR/**/*.parquet', hive_partitioning=true).
--output FILE.parquet|.csv|.tsv|.jsonl (no --partition-by) writes one file.";

/// The options of `sluice export`.
#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct ExportArgs {
    pub table: String,
    /// Write here: a file (by its extension), or a dataset directory
    /// (default: CSV on standard output)
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// parquet, csv or jsonl (default: the output's extension, else
    /// parquet for a directory, csv for standard output)
    #[arg(long)]
    pub format: Option<String>,
    /// One directory per value of this column (not stored in the files),
    /// or `shard`: one per shard of a sharded table (`shard=03/`)
    #[arg(long, value_name = "COLUMN|shard")]
    pub partition_by: Option<String>,
    /// Only the rows for which this SQL condition holds
    #[arg(long = "where", value_name = "SQL")]
    pub filter: Option<String>,
    /// Parquet: rows per row group
    #[arg(long, default_value = "1048576")]
    pub row_group_size: usize,
    /// Parquet: zstd, zstd:LEVEL, snappy or none
    #[arg(long, default_value = "zstd")]
    pub compression: String,
    /// Start a new file once one holds this much (a dataset)
    #[arg(long, default_value = "512MiB")]
    pub target_file_size: String,
    /// Replace the file, or the dataset (a directory holding _SUCCESS),
    /// at --output
    #[arg(long)]
    pub overwrite: bool,
    /// CSV: field delimiter (default: a tab for a .tsv file, else a comma)
    #[arg(long)]
    pub delimiter: Option<String>,
    /// CSV: write a header line
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub header: bool,
}

/// Runs `sluice export`.
pub fn run(db_dir: &Path, threads: Option<usize>, quiet: bool, a: ExportArgs) -> Result<()> {
    let db = Database::open(db_dir)?;
    let table = a.table.to_ascii_lowercase();
    let meta = db
        .table(&table)
        .with_context(|| format!("no table named {:?} in {}", a.table, db_dir.display()))?
        .clone();
    let given = a
        .format
        .as_deref()
        .map(str::parse::<FileFormat>)
        .transpose()?;
    let by_ext = a.output.as_deref().and_then(FileFormat::from_path);
    let tsv = a
        .output
        .as_deref()
        .and_then(|p| p.extension())
        .is_some_and(|e| e.eq_ignore_ascii_case("tsv"));
    // One file: a name with an extension and no partitions.
    let one_file = a.partition_by.is_none() && (by_ext.is_some() || tsv);
    let format = match (given, &a.output) {
        (Some(f), _) => f,
        (None, None) => FileFormat::Csv,
        (None, Some(_)) if tsv => FileFormat::Csv,
        (None, Some(_)) => by_ext.unwrap_or(FileFormat::Parquet),
    };
    if let (Some(g), Some(e), true) = (given, by_ext.or(tsv.then_some(FileFormat::Csv)), one_file)
        && g != e
    {
        bail!(
            "--format {} and the file name {} say different formats; give one",
            g.extension(),
            a.output.as_deref().unwrap_or(Path::new("")).display()
        );
    }
    let delimiter = match &a.delimiter {
        Some(d) => crate::util::parse_char(d, "--delimiter")?,
        None if tsv => b'\t',
        None => b',',
    };
    let cancel = Arc::new(AtomicBool::new(false));
    let progress = Arc::new(sluice::load::Progress::default());
    let opts = ExportOptions {
        format,
        partition_by: a.partition_by.as_deref().map(str::parse).transpose()?,
        row_group_size: a.row_group_size,
        compression: a.compression.parse::<Codec>()?,
        target_file_size: crate::util::parse_size(&a.target_file_size, "--target-file-size")?,
        filter: a.filter.clone(),
        threads,
        overwrite: a.overwrite,
        delimiter,
        header: a.header,
        cancel: Some(cancel.clone()),
        progress: Some(progress.clone()),
    };
    let Some(output) = &a.output else {
        if format == FileFormat::Parquet {
            bail!("--format parquet needs --output (a file or a directory)");
        }
        if opts.partition_by.is_some() {
            bail!("--partition-by needs --output DIR");
        }
        return to_stdout(&db, &table, &opts);
    };
    crate::util::stop_on_ctrl_c(cancel);
    let total: u64 = meta.segments.iter().map(|s| s.bytes).sum();
    let bar = (!quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .then(|| crate::util::spawn_progress(progress.clone(), Some(total), 0));
    let done = if one_file {
        if output.exists() && !a.overwrite {
            bail!(
                "{} already exists; remove it, choose another --output, or give --overwrite",
                output.display()
            );
        }
        let filter = match &a.filter {
            Some(p) => Some(sluice::query::filter::RowFilter::new(&db, &table, p)?),
            None => None,
        };
        let batches = db.scan(&table)?.map(|b| match (&filter, b) {
            (Some(f), Ok(b)) => f.apply(&b),
            (_, b) => b,
        });
        let schema = meta.schema.arrow_schema();
        let start = std::time::Instant::now();
        sluice::dataset::write_file(output, &schema, batches, Some(&meta.schema), &opts)
            .map(|(rows, bytes)| (rows, 1, bytes, 0, start.elapsed().as_secs_f64()))
    } else {
        sluice::dataset::export_table(&db, &table, output, &opts)
            .map(|s| (s.rows, s.files, s.bytes, s.partitions, s.seconds))
    };
    if let Some((stop, handle)) = bar {
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = handle.join();
    }
    let (rows, files, bytes, partitions, secs) = match done {
        Err(sluice::Error::Cancelled) => {
            bail!(
                "export of {table} stopped; nothing was written at {}",
                output.display()
            )
        }
        r => r.with_context(|| format!("exporting {table} to {}", output.display()))?,
    };
    if !quiet {
        let parts = if partitions > 0 {
            format!(" in {partitions} partitions")
        } else {
            String::new()
        };
        eprintln!(
            "exported {} rows of {table} to {} ({} {}, {} file{}{parts}) in {secs:.2} s",
            human_count(rows),
            output.display(),
            human_bytes(bytes),
            format.extension(),
            files,
            if files == 1 { "" } else { "s" },
        );
    }
    Ok(())
}

/// CSV (or JSON lines) on standard output, in load order.
fn to_stdout(db: &Database, table: &str, opts: &ExportOptions) -> Result<()> {
    let meta = db.table(table).context("table vanished")?;
    let names: Vec<String> = meta.schema.columns.iter().map(|c| c.name.clone()).collect();
    let filter = match &opts.filter {
        Some(p) => Some(sluice::query::filter::RowFilter::new(db, table, p)?),
        None => None,
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if opts.header && opts.format == FileFormat::Csv {
        let cells: Vec<Option<String>> = names.iter().cloned().map(Some).collect();
        sluice::batch::write_csv_row(&mut out, &cells, opts.delimiter)?;
    }
    let mut cells = Vec::with_capacity(names.len());
    for batch in db.scan(table)? {
        let mut batch = batch?;
        if let Some(f) = &filter {
            batch = f.apply(&batch)?;
        }
        for r in 0..batch.num_rows() {
            if opts.format == FileFormat::Jsonl {
                sluice::batch::write_json_object(&mut out, &names, batch.columns(), r)?;
                out.write_all(b"\n")?;
                continue;
            }
            cells.clear();
            cells.extend(
                batch
                    .columns()
                    .iter()
                    .map(|c| sluice::batch::format_value(c.as_ref(), r)),
            );
            sluice::batch::write_csv_row(&mut out, &cells, opts.delimiter)?;
        }
    }
    out.flush()?;
    Ok(())
}
