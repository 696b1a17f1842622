//! `sluice query`: run SQL and print the result.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use sluice::store::Database;

use crate::output::{Format, pick_format, write_each};

/// The examples of `--help`.
pub const EXAMPLES: &str = "Examples:
  sluice query \"SELECT count(*) FROM sales\"
  sluice query --format json \"SELECT d, sum(price) AS total FROM sales GROUP BY d ORDER BY total DESC LIMIT 5\"
  sluice query \"EXPLAIN SELECT sum(price) FROM sales WHERE d >= DATE '2024-01-01'\"
  sluice query \"EXPLAIN ANALYZE SELECT d, count(*) FROM sales GROUP BY d\"   (runs it: each step's rows, time, memory)
  sluice query - < report.sql          (the SQL from standard input)
  sluice query --memory-limit 1GiB --temp-dir /scratch \\
    \"SELECT l_orderkey, sum(l_quantity) FROM lineitem GROUP BY l_orderkey HAVING sum(l_quantity) > 300\"
                                       (groups past 1 GiB are written to /scratch, then merged)

Supported: joins (JOIN ... ON/USING, several tables in FROM), subqueries (IN, EXISTS, scalar,
in FROM), WITH, UNION/INTERSECT/EXCEPT; WHERE, GROUP BY, HAVING, ORDER BY, LIMIT/OFFSET;
+ - * /, CASE, CAST, EXTRACT, SUBSTRING, LIKE, BETWEEN, IN, IS NULL, COALESCE,
DATE '...' +/- INTERVAL 'n' DAY|MONTH|YEAR; COUNT(*), COUNT([DISTINCT] x), SUM, AVG, MIN, MAX.";

/// Runs `sql` and prints its rows (or its plan); with `timing`, the run
/// time and scan statistics to stderr.
#[allow(clippy::too_many_arguments)]
pub fn run(
    db_dir: &Path,
    sql: &str,
    threads: Option<usize>,
    format: Option<Format>,
    timing: bool,
    output: Option<&Path>,
    memory_limit: Option<&str>,
    temp_dir: Option<&Path>,
) -> Result<()> {
    let memory = sluice::query::memory::Memory::new(match memory_limit {
        Some(s) => {
            let limit = crate::util::parse_size(s, "--memory-limit")?;
            // The process's memory held to what the query counts.
            sluice::exec::tune_allocator_for_limit(limit);
            limit
        }
        None => sluice::query::memory::default_limit(),
    });
    // The file's format by its extension; .tsv is CSV split at tabs.
    let tsv = output
        .and_then(|p| p.extension())
        .is_some_and(|e| e.eq_ignore_ascii_case("tsv"));
    let file_format = match output {
        Some(_) if tsv => Some(sluice::dataset::FileFormat::Csv),
        Some(p) => Some(sluice::dataset::FileFormat::from_path(p).with_context(|| {
            format!(
                "--output {}: name the file .parquet, .csv, .tsv or .jsonl (the extension picks the format)",
                p.display()
            )
        })?),
        None => None,
    };
    if output.is_some() && format.is_some() {
        anyhow::bail!(
            "--format is for printed results; --output takes its format from the file name"
        );
    }
    // `-`: the SQL from standard input (a statement too long for a
    // command line, or one kept in a file).
    let stdin_sql;
    let sql = if sql == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .context("reading the SQL from standard input (it must be UTF-8)")?;
        stdin_sql = text;
        stdin_sql.as_str()
    } else {
        sql
    };
    let mut db = Database::open(db_dir)?;
    // One query: each segment is let go (unmapped) once it is read.
    db.set_keep_segments(false);
    let spill_root = match temp_dir {
        Some(d) => d.to_path_buf(),
        None => sluice::query::default_spill_root(&db),
    };
    // What a query killed mid-spill left.
    sluice::query::spill::sweep(&spill_root);
    let spill = sluice::query::spill::Spill::new(spill_root);
    // Ctrl-C stops the query at its next morsel: it unwinds and its spill
    // files go with it (a second Ctrl-C exits at once; the next query
    // removes what that left).
    let stop = sluice::query::Stop::default();
    let interrupted = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    crate::util::stop_on_ctrl_c(interrupted.clone());
    let finished = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let (stop, interrupted, finished) = (stop.clone(), interrupted.clone(), finished.clone());
        std::thread::spawn(move || {
            use std::sync::atomic::Ordering::Relaxed;
            while !finished.load(Relaxed) {
                if interrupted.load(Relaxed) {
                    stop.cancel();
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
    }
    let start = Instant::now();
    let result = sluice::query::query_with(
        &db,
        sql,
        &sluice::query::QueryOptions {
            threads,
            memory: Some(memory.clone()),
            stop: Some(stop),
            spill: Some(spill.clone()),
            // An answer past half the limit goes to disk and is printed
            // from there a frame at a time.
            answer_to_disk: true,
            ..Default::default()
        },
    );
    finished.store(true, std::sync::atomic::Ordering::Relaxed);
    let result = result.map_err(super::load::chained)?;
    let elapsed = start.elapsed();
    if let (Some(path), Some(format)) = (output, file_format) {
        if result.explain.is_some() {
            anyhow::bail!("EXPLAIN prints a plan; run it without --output");
        }
        let opts = sluice::dataset::ExportOptions {
            format,
            delimiter: if tsv { b'\t' } else { b',' },
            ..Default::default()
        };
        let batches = result
            .batches
            .iter()
            .cloned()
            .map(Ok)
            .chain(result.later.iter().map(|l| (l.load)()));
        let (rows, bytes) = sluice::dataset::write_file(path, &result.schema, batches, None, &opts)
            .with_context(|| format!("writing the result to {}", path.display()))?;
        eprintln!(
            "wrote {rows} rows to {} ({}) in {:.3} s{}",
            path.display(),
            crate::util::human_bytes(bytes),
            start.elapsed().as_secs_f64(),
            if timing {
                format!(" (the query {:.3} s)", elapsed.as_secs_f64())
            } else {
                String::new()
            }
        );
        if timing {
            print_spilled(&spill);
        }
        return Ok(());
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match (&result.explain, format) {
        // A plan is text, unless a format for programs is asked for: then
        // it is rows of one `plan` column, one row a line.
        (Some(plan), None | Some(Format::Table)) => out.write_all(plan.as_bytes())?,
        _ => write_each(
            &mut out,
            &result.schema,
            &|f| result.for_each_batch(|b| f(b)),
            pick_format(format),
        )?,
    }
    out.flush().context("writing the result")?;
    if timing {
        let rows = result.num_rows();
        let f = &result.facts;
        let rss = sluice::exec::peak_rss_bytes()
            .map(|b| format!(", peak RSS {:.1} MiB", b as f64 / (1u64 << 20) as f64))
            .unwrap_or_default();
        eprintln!(
            "time: {:.3} s, {} result rows, scanned {} rows in {} morsels of {} rows on {} workers, {}/{} segments{}{}, peak query memory {}{rss}",
            elapsed.as_secs_f64(),
            rows,
            f.rows,
            f.morsels,
            f.morsel_rows,
            f.workers,
            f.segments_scanned,
            f.segments_total,
            if f.batches_pruned > 0 {
                format!(
                    ", {}/{} record batches pruned",
                    f.batches_pruned, f.batches_total
                )
            } else {
                String::new()
            },
            if f.morsels_skipped > 0 {
                format!(", {} morsels skipped by the limit", f.morsels_skipped)
            } else {
                String::new()
            },
            crate::util::human_bytes(memory.peak())
        );
        print_spilled(&spill);
    }
    Ok(())
}

/// What the query wrote to disk (`--timing`), if anything.
fn print_spilled(spill: &sluice::query::spill::Spill) {
    if spill.bytes_written() > 0 {
        eprintln!(
            "spilled: {} in {} run{} under {} (removed)",
            crate::util::human_bytes(spill.bytes_written()),
            spill.files_written(),
            if spill.files_written() == 1 { "" } else { "s" },
            spill.root().display()
        );
    }
}
