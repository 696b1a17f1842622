//! `sluice convert`: the load's reading and parsing, a dataset of Parquet
//! (or CSV, JSON-lines) files at the end instead of a table
//! (`sluice::dataset::convert`).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Result, bail};
use clap::Args;
use sluice::dataset::convert::{ConvertOptions, ConvertSummary, check_options, convert};
use sluice::dataset::{Codec, ExportOptions, FileFormat};
use sluice::load::{Progress, prepare_for};

use super::{ReadArgs, chained, empty_files_line, load_error, read_request, show_schema};
use crate::util;

/// The examples of `--help`.
pub const EXAMPLES: &str = "Examples:
  sluice convert --output trips/ 'raw/*.csv'              # Parquet, the schema inferred and printed
  sluice convert --output objects/ --tsv --key id --buckets 16 'chunks/*.tsv'
                                 # bucket=00/ ... bucket=15/, rows by the hash of id; id checked unique
  sluice convert --output out/ --schema \"id BIGINT, name TEXT\" --rejects bad.csv in.csv
  sluice convert --output logs/ --output-format jsonl 'logs/*.csv.gz'
  sluice convert --dry-run --output x/ data.csv           # print the schema, write nothing

The dataset is written under a hidden name beside --output and renamed into place with
_SUCCESS last: a failed or interrupted conversion leaves nothing there. With --buckets N,
bucket b holds exactly the rows shard b of `sluice load --shards N` on the same column
holds, and `sluice load TABLE DIR` puts each file in its bucket's shard without hashing
its rows again. --threads N gives N parse workers and up to N file encoders, side by side.
Spark: spark.read.parquet(\"DIR\"); DuckDB: read_parquet('DIR/**/*.parquet').";

/// The options of `sluice convert`.
#[derive(Args)]
pub struct ConvertArgs {
    /// Files, directories, glob patterns, or - for standard input
    #[arg(required = true)]
    inputs: Vec<String>,
    /// The dataset directory to write (it must not exist, or be empty, or
    /// be a dataset with --overwrite)
    #[arg(long, short)]
    output: PathBuf,
    #[command(flatten)]
    read: ReadArgs,
    /// The files' format: parquet, csv or jsonl
    #[arg(long, default_value = "parquet", value_name = "parquet|csv|jsonl")]
    output_format: String,
    /// Rows go to N bucket=NN/ directories by the hash of --bucket-by
    /// (default: the key), the hash that picks a row's shard in `sluice
    /// load --shards N`
    #[arg(long, value_name = "N")]
    buckets: Option<u32>,
    /// The column whose hash picks a row's bucket (default: --key)
    #[arg(long, value_name = "COLUMN", requires = "buckets")]
    bucket_by: Option<String>,
    /// Parquet: rows per row group (a row group is also cut once its
    /// encoded columns pass a share of --memory-limit)
    #[arg(long, default_value = "1048576")]
    row_group_size: usize,
    /// Parquet: zstd, zstd:LEVEL, snappy or none
    #[arg(long, default_value = "zstd")]
    compression: String,
    /// Start a new file once one holds this much
    #[arg(long, default_value = "512MiB")]
    target_file_size: String,
    /// The files' names: PREFIX-NNNNN-NNN.parquet (one task of a
    /// distributed load gives its own, so that datasets merge)
    #[arg(long, default_value = "part")]
    file_prefix: String,
    /// Replace a dataset (a directory holding _SUCCESS) at --output
    #[arg(long)]
    overwrite: bool,
}

/// Runs `sluice convert`.
pub fn run(threads: Option<usize>, quiet: bool, a: ConvertArgs) -> Result<()> {
    let format: FileFormat = a.output_format.parse()?;
    if a.buckets == Some(0) {
        bail!("--buckets must be at least 1");
    }
    if a.file_prefix.is_empty()
        || a.file_prefix.starts_with(['.', '_'])
        || a.file_prefix.contains(['/', '\\'])
    {
        bail!(
            "--file-prefix {:?}: a file name's start, not empty, without '/' and not starting with '.' or '_' (readers skip such files)",
            a.file_prefix
        );
    }
    let inputs = sluice::source::expand(&a.inputs)?;
    let req = read_request(&a.read, threads);
    if sluice::load::columnar::detect(&inputs, req.columnar)
        .map_err(chained)?
        .is_some()
    {
        bail!(
            "convert reads text inputs (CSV, TSV, JSON); for Parquet and Arrow files, load them into a table and export it"
        );
    }
    let shown = a.output.display().to_string();
    let mut prepared = prepare_for(None, &inputs, &req).map_err(chained)?;
    // --key beside a --schema without PRIMARY KEY: the schema's key.
    if let Some(k) = &a.read.key {
        prepared.schema.set_key(k).map_err(chained)?;
        prepared.options.schema = Some(prepared.schema.clone());
    }
    let cancel = Arc::new(AtomicBool::new(false));
    let progress = Arc::new(Progress::default());
    prepared.options.cancel = Some(cancel.clone());
    prepared.options.progress = Some(progress.clone());
    let opts = ConvertOptions {
        files: ExportOptions {
            format,
            row_group_size: a.row_group_size,
            compression: a.compression.parse::<Codec>()?,
            target_file_size: util::parse_size(&a.target_file_size, "--target-file-size")?,
            threads,
            overwrite: a.overwrite,
            delimiter: b',',
            header: true,
            ..ExportOptions::default()
        },
        buckets: a.buckets.unwrap_or(0),
        bucket_by: a.bucket_by.clone(),
        prefix: a.file_prefix.clone(),
        check_key: true,
    };
    check_options(&prepared.schema, &opts).map_err(chained)?;
    if show_schema(&a.read, &shown, &prepared, quiet) {
        return Ok(());
    }
    util::stop_on_ctrl_c(cancel.clone());
    let total_bytes: Option<u64> = inputs.iter().map(|i| i.len()).sum();
    let bar = (!quiet && std::io::stderr().is_terminal())
        .then(|| util::spawn_progress(progress.clone(), total_bytes, inputs.len() as u64));
    let result = convert(&inputs, &a.output, &prepared.options, &opts);
    if let Some((stop, handle)) = bar {
        stop.store(true, Ordering::Relaxed);
        let _ = handle.join();
    }
    let summary = match result {
        Ok(s) => s,
        Err(sluice::Error::Cancelled) if cancel.load(Ordering::Relaxed) => {
            eprintln!("error: conversion stopped; nothing was written at {shown}");
            std::process::exit(130);
        }
        Err(e) => {
            return Err(load_error(
                e,
                &format!("converting into {shown}"),
                &prepared,
                "nothing was written",
            ));
        }
    };
    print_convert_summary(&summary, &a, format, quiet)
}

fn print_convert_summary(
    s: &ConvertSummary,
    a: &ConvertArgs,
    format: FileFormat,
    quiet: bool,
) -> Result<()> {
    let l = &s.load;
    let mut out = std::io::stdout().lock();
    if a.read.json {
        let mut v = serde_json::to_value(l)?;
        if let Some(m) = v.as_object_mut() {
            m.remove("table");
            m.remove("segments");
            m.remove("duplicates");
            m.remove("runs_merged");
            m.remove("merge_error");
            m.remove("already_loaded");
            m.remove("files_left");
            m.remove("files_by_bucket");
        }
        v["mb_per_s"] = serde_json::json!(l.mb_per_s());
        v["rows_per_s"] = serde_json::json!(l.rows_per_s());
        v["peak_rss_bytes"] = serde_json::json!(sluice::exec::peak_rss_bytes());
        v["cpu_seconds"] = serde_json::json!(sluice::exec::cpu_seconds());
        v["output"] = serde_json::json!({
            "path": a.output.display().to_string(),
            "format": format.extension(),
            "files": s.files,
            "bytes": s.bytes,
            "buckets": s.buckets,
            "bucket_by": s.bucket_by,
        });
        writeln!(out, "{v}")?;
        return Ok(());
    }
    if quiet {
        return Ok(());
    }
    writeln!(
        out,
        "converted {} rows ({}) from {} file{} in {:.2} s: {:.1} MB/s, {} rows/s, {} thread{}",
        l.rows,
        util::human_bytes(l.bytes),
        l.files,
        if l.files == 1 { "" } else { "s" },
        l.seconds,
        l.mb_per_s(),
        util::human_count(l.rows_per_s() as u64),
        l.threads,
        if l.threads == 1 { "" } else { "s" },
    )?;
    let buckets = match (&s.bucket_by, s.buckets) {
        (Some(c), n) if n > 1 => format!(" in {n} buckets by {c}"),
        _ => String::new(),
    };
    writeln!(
        out,
        "wrote {}: {} {} file{} ({}){buckets}",
        a.output.display(),
        s.files,
        format.extension(),
        if s.files == 1 { "" } else { "s" },
        util::human_bytes(s.bytes),
    )?;
    if !l.empty_files.is_empty() {
        writeln!(out, "{}", empty_files_line(&l.empty_files))?;
    }
    for w in &l.widened {
        writeln!(out, "{w}; the conversion started over")?;
    }
    for (file, why) in &l.unreadable {
        eprintln!("warning: skipped unreadable file {file}: {why}");
    }
    if l.rejected > 0 {
        writeln!(
            out,
            "rejected {} record{}{}",
            l.rejected,
            if l.rejected == 1 { "" } else { "s" },
            match &a.read.rejects {
                Some(p) => format!(" (written to {})", p.display()),
                None => " (--rejects FILE keeps them)".to_string(),
            }
        )?;
    }
    Ok(())
}
