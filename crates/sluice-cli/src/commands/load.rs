//! `sluice load`: the options of a load, given to the library as a
//! `LoadRequest` (which guesses the input format and chooses the schema:
//! `sluice::load::prepare`), the schema printed when inferred (`--dry-run`
//! stops there), the load run with a progress bar and Ctrl-C handling,
//! hints after its errors, and the summary printed.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use clap::Args;
use sluice::load::columnar::Columnar;
use sluice::load::{
    Header, InputFormat, LoadOptions, LoadRequest, LoadSummary, OnDuplicate, OnError, Prepared,
    Progress, Reload, load, prepare,
};
use sluice::parse::{BlankLines, Dialect, Format, JsonShape, Split};
use sluice::store::Database;

use crate::util;

pub mod convert;
mod into;

/// The examples of `--help`.
pub const EXAMPLES: &str = "Examples:
  sluice load --dry-run sales sales.csv     # print the inferred schema and delimiter
  sluice load --types \"zip=TEXT\" sales sales.csv   # infer, but keep zip codes as text
  sluice load --schema \"id BIGINT, name TEXT, price DECIMAL(15,2), d DATE\" sales sales.csv
  sluice load sales 'more/*.csv'            # append; the table keeps its schema
  sluice load --key id people people.csv    # a primary key: unique, indexed (see sluice get)
  sluice load --key id --shards 8 people people.csv   # 8 shards, a row's shard by hash of its key
  sluice load --shards 4 --shard-paths /disk1,/disk2 logs 'logs/*.csv'  # round-robin, two disks
  sluice load --commit-every 1000files objects 'chunks/*.tsv'  # rerun after a crash: loads the rest
  sluice load --match-by-name sales export-2024.csv   # header names pick the columns, any order
  sluice load --columns \"id,name,5\" sales raw.csv   # these fields, in column order; skip the rest
  sluice load --delimiter tab --no-header --schema \"k TEXT, v INT\" kv data/   # every file under data/
  sluice load --rejects bad.csv --max-errors 1000 sales 'in/*.csv'   # set malformed records aside
  sluice load logs 'archive/*.csv.gz'       # gzip and zstd, detected by content
  sluice load trips trips-parquet/ --hive-partitioning   # Parquet or Arrow; col=value directories as columns
  sluice load objects objects-parquet/      # a `sluice convert --buckets N` dataset: a shard a bucket, not re-hashed
  sluice load --schema \"id BIGINT, tags TEXT\" events events.jsonl   # JSON lines, fields by name
  sluice load --format json --columns \"id,name\" --schema \"id INT, name TEXT\" t rows.json   # [[1,\"a\"],...]
  zcat big.csv.gz | sluice load --schema \"a INT, b INT\" t -
  sluice load --into postgresql://app@db.example/shop --key id sales 'in/*.csv'   # into PostgreSQL
  PGPASSWORD=... sluice load --into postgresql://app@db/shop --connections 4 sales big.csv
  sluice load --into mariadb://app@db/shop --tsv --key id objects 'chunks/*.tsv'   # rows in key order";

#[derive(Args)]
pub struct LoadArgs {
    /// Table to load into (letters, digits, '_')
    table: String,
    /// Files, directories, glob patterns, or - for standard input
    #[arg(required = true)]
    inputs: Vec<String>,
    #[command(flatten)]
    read: ReadArgs,
    /// What a row whose key is already in the table (or earlier in the
    /// load) does: error (the default: the load fails, nothing is
    /// committed) or skip (the first row is kept, later ones counted)
    #[arg(long, value_enum, default_value = "error")]
    on_duplicate: OnDuplicateArg,
    /// Compression of a new table's segments: none (the default: fastest
    /// queries, files mapped without copying) or zstd (smaller files)
    #[arg(long, value_name = "none|zstd")]
    compression: Option<String>,
    /// Print where the load's CPU time went, by stage (read, input
    /// checksum, cut, parse, build, encode, checksum, write, sync,
    /// commit, and the rest), on standard error; --json holds the same
    /// as "stages"
    #[arg(long)]
    timing: bool,
    /// Shards of a new table (1 to 256): each holds its own segments and
    /// key index, loaded in one atomic commit; queries fan out over all,
    /// a lookup by key reads one
    #[arg(long, value_name = "N")]
    shards: Option<u32>,
    /// The column whose value's hash picks a row's shard (default: the
    /// primary key; without one, rows are dealt round-robin). A keyed
    /// table is sharded by its key
    #[arg(long, value_name = "COLUMN")]
    shard_by: Option<String>,
    /// Directories for the shards of a new table, comma-separated: shard i
    /// goes to DIR(i mod count), e.g. one per disk (default: inside the
    /// database directory)
    #[arg(long, value_name = "DIR1,DIR2,...", value_delimiter = ',')]
    shard_paths: Vec<PathBuf>,
    /// Commit in groups of whole files: after SIZE of input (1GiB),
    /// N files (1000files) or a time (10min); 'all' for one commit. Each
    /// commit records its files: run the same load again after a crash or
    /// Ctrl-C and it loads only the rest
    #[arg(long, value_name = "SIZE|Nfiles|TIME|all", default_value = "1GiB")]
    commit_every: String,
    /// Load again the input files that changed since an earlier commit
    /// loaded them (without it, a changed file is an error; the rows
    /// loaded from it before stay)
    #[arg(long, conflicts_with = "reload")]
    reload_changed: bool,
    /// Load every input file, also those an earlier commit loaded
    #[arg(long)]
    reload: bool,
    /// Load into a table of a PostgreSQL server instead of the sluice
    /// database: postgresql://user@host[:port]/database. The rows go as
    /// binary COPY over --connections connections; each commit group is
    /// published once, also across crashes (the journal is the server's
    /// table sluice_load_journal: the same command run again loads the
    /// rest). A new table is created from the schema (given or inferred),
    /// its primary key made as --index says. mariadb:// and mysql:// URLs
    /// load with LOAD DATA LOCAL INFILE. The password: --password-file,
    /// PGPASSWORD or MYSQL_PWD (in the URL it works, but stays visible
    /// to other users in `ps` for the whole load). Into PostgreSQL the
    /// table may name its schema (`public.sales`; a name with a dot in
    /// double quotes: '"my.table"')
    #[arg(long, value_name = "URL")]
    into: Option<String>,
    /// --into: a file whose first line is the password
    #[arg(long, value_name = "FILE", requires = "into")]
    password_file: Option<PathBuf>,
    /// --into: connections that load in parallel (default: the cores of
    /// this machine, at most 8)
    #[arg(long, value_name = "N", requires = "into")]
    connections: Option<usize>,
    /// --into: when a new table gets its primary key (--key). after: the
    /// rows go into a table without it, then ALTER TABLE ... ADD PRIMARY
    /// KEY (PostgreSQL's default). first: the table is made with it, rows
    /// in input order. sorted: the table is made with it and each
    /// connection sends its rows of a commit group in key order, sorted
    /// in memory (see --sort-memory; MariaDB's default: InnoDB appends to
    /// its index instead of splitting pages). An existing table with a
    /// one-column unique key gets its rows in key order with sorted
    #[arg(long, value_enum, value_name = "after|first|sorted", requires = "into")]
    index: Option<IndexArg>,
    /// --into: the same as --index first
    #[arg(long, requires = "into", conflicts_with = "index", hide = true)]
    index_first: bool,
    /// --into --index sorted: memory for the rows being sorted (1GiB,
    /// 512MB, ...), shared by the connections; a commit group larger than
    /// this goes as several sorted runs (default: a quarter of this
    /// machine's memory)
    #[arg(long, value_name = "SIZE", requires = "into")]
    sort_memory: Option<String>,
}

/// The options of a load that say how to read its inputs and what their
/// rows are: shared by `sluice load` and `sluice convert`.
#[derive(Args)]
pub struct ReadArgs {
    /// Columns of a new table (or of the files `convert` writes): "id
    /// BIGINT, name TEXT, price DECIMAL(15,2), d DATE" (default: inferred
    /// from samples of the files, and printed)
    #[arg(long)]
    schema: Option<String>,
    /// Override inferred column types: "price=DECIMAL(12,2),zip=TEXT"
    /// (repeatable)
    #[arg(long, value_name = "COL=TYPE,...")]
    types: Vec<String>,
    /// Print the schema and dialect the load would use, and load nothing.
    /// With --json, one JSON object: {"dry_run": true, "table" (convert:
    /// the output), "format"
    /// ("csv", "jsonl" or "json"), "delimiter" (null for JSON; one
    /// character, "whitespace" or "none"), "skip" (lines skipped at each
    /// file's start), "schema" (a --schema string), "inferred" (null when
    /// not inferred, else {"samples", "files_sampled", "records_sampled",
    /// "header", "notes" (lines of notes found above the table)})}
    #[arg(long)]
    dry_run: bool,
    /// The input fields that feed the table's columns, in column order, by
    /// header name or 1-based position: "id,name,5". Other fields are
    /// skipped; columns past the list get their DEFAULT or NULL. JSON: the
    /// column each position of an array row feeds, by name ("id,name"),
    /// instead of a header row
    #[arg(long, value_name = "FIELDS")]
    columns: Option<String>,
    /// Map fields to columns by each file's header names, in any order;
    /// columns a file lacks get their DEFAULT or NULL
    #[arg(long, conflicts_with = "columns")]
    match_by_name: bool,
    /// Input format: csv, tsv, jsonl (one JSON object or array per line) or
    /// json (a top-level array of rows, objects one after another, e.g.
    /// pretty-printed, or an object holding the array of rows). Default:
    /// from the first file's name (.jsonl, .ndjson: jsonl; .json: json;
    /// .csv: csv; .tsv, .tab: tsv; also under .gz/.zst), else from its
    /// first bytes (a first line '{': json; '{': jsonl; '[' then '{' or
    /// '[': json; a line '[...]': jsonl), else csv. JSON object fields feed
    /// the columns of the same name (exactly, else in any case when one
    /// column alone matches so); missing ones get their DEFAULT
    /// or NULL; nested objects and arrays load into TEXT as JSON text.
    /// Array rows take their field names from a first row of strings
    /// (["id","name"]) or from --columns. Parquet and Arrow IPC files
    /// (parquet, arrow) are known by their first bytes (PAR1, ARROW1):
    /// their columns are matched to the table's by name, their types
    /// taken for a new table; files named _* (_SUCCESS) are skipped
    #[arg(long, value_enum, value_name = "csv|tsv|jsonl|json|parquet|arrow")]
    format: Option<FormatArg>,
    /// Parquet and Arrow input: col=value directories in the files'
    /// paths (a Hive-partitioned dataset) are columns too
    #[arg(long)]
    hive_partitioning: bool,
    /// JSON: skip fields that name no column (object keys, or array
    /// positions the header does not name) instead of failing
    #[arg(long)]
    ignore_unknown: bool,
    /// JSON (--format json): the field of the top-level object that holds
    /// the array of rows ({"data": [...], ...}); without it, the first
    /// field holding an array of objects or arrays, before any field
    /// named like a column
    #[arg(long, value_name = "FIELD")]
    json_rows: Option<String>,
    /// Field delimiter: one character, 'tab', 'whitespace' (runs of
    /// spaces and tabs: columns aligned for reading) or 'none' (each line
    /// one field) (default: detected from the data among , tab | ; then a
    /// single space, then whitespace)
    #[arg(long, short)]
    delimiter: Option<String>,
    /// Shorthand for --delimiter tab
    #[arg(long, conflicts_with = "delimiter")]
    tsv: bool,
    /// Quote character; '' or 'none' for none (default: '"', or none, or
    /// '"' with spaces around quoted fields, whichever reads the data)
    #[arg(long)]
    quote: Option<String>,
    /// Escape character inside quotes (default: doubled quotes, as RFC 4180)
    #[arg(long)]
    escape: Option<String>,
    /// The first line of each file is a header (default: detected, when it equals the column names)
    #[arg(long, conflicts_with = "no_header")]
    header: bool,
    /// The first line is data
    #[arg(long)]
    no_header: bool,
    /// An unquoted field equal to this is NULL
    #[arg(long, default_value = "")]
    null: String,
    /// Lines to skip at the start of each file (before the header)
    /// (default: none, or, with the schema inferred, the lines of notes
    /// found above the table: a title, a description, a count of rows;
    /// --skip 0 skips none)
    #[arg(long)]
    skip: Option<u64>,
    /// Lines starting with this character are ignored
    #[arg(long)]
    comment: Option<String>,
    /// What a blank line is: skip (no record) or null (a record of one
    /// empty field: a NULL row in a one-column table). Default: null for a
    /// one-column table (without --columns or --match-by-name), skip
    /// otherwise. Blank lines before a header are always skipped
    #[arg(long, value_enum, value_name = "skip|null")]
    blank_lines: Option<BlankLinesArg>,
    /// How records end: auto (the default: a lone CR, as classic Mac OS
    /// wrote, when the first 64 KiB of a file hold no LF and a CR outside
    /// quotes; else
    /// LF or CR LF), lf (a lone CR is data) or cr (every CR outside quotes
    /// ends a line)
    #[arg(long, value_name = "auto|lf|cr", default_value = "auto")]
    line_end: String,
    /// Date format (strftime), e.g. %d/%m/%Y; default YYYY-MM-DD
    #[arg(long)]
    date_format: Option<String>,
    /// Timestamp format (strftime), e.g. "%d/%m/%Y %H:%M"; default ISO 8601
    #[arg(long)]
    timestamp_format: Option<String>,
    /// Memory the load may hold, e.g. 512MiB, 2GiB
    #[arg(long, default_value = "2GiB")]
    memory_limit: String,
    /// Longest record accepted, e.g. 16MiB
    #[arg(long, default_value = "16MiB")]
    max_line_size: String,
    /// Bytes per parse block (default: derived from --memory-limit)
    #[arg(long, hide = true)]
    block_size: Option<String>,
    /// Segments of at most N rows, each parsed block written as it comes
    /// (tests: many segments from a small file)
    #[arg(long, hide = true, value_name = "N")]
    segment_rows: Option<u64>,
    /// Every TEXT column of every block dictionary-encoded (tests: many
    /// dictionaries from a small file)
    #[arg(long, hide = true)]
    dictionary_always: bool,
    /// Write the segment files through the page cache. By default they
    /// go past it (O_DIRECT) where the file system allows, which costs
    /// less CPU; with this flag the table's bytes stay in memory for the
    /// queries that follow (a slow disk, a table queried at once)
    #[arg(long)]
    page_cache: bool,
    /// Read input files into buffers rather than mapping them into memory.
    /// By default a large plain file (not compressed, UTF-8) is mapped,
    /// which saves a copy of every byte; a file that another process
    /// truncates during the load then ends it with a message (nothing is
    /// committed)
    #[arg(long)]
    no_mmap: bool,
    /// What a malformed record does: abort (the default: the load fails,
    /// nothing is committed) or skip (it is rejected, counted, and the load
    /// goes on)
    #[arg(long, value_enum)]
    on_error: Option<OnErrorArg>,
    /// Write rejected records here (CSV: file, line, byte, column, reason,
    /// record); implies --on-error skip
    #[arg(long)]
    rejects: Option<PathBuf>,
    /// Fail (committing nothing) when more than N records are rejected;
    /// implies --on-error skip
    #[arg(long, value_name = "N")]
    max_errors: Option<u64>,
    /// A record with too few fields gets NULLs for the missing ones
    /// (default: it is an error)
    #[arg(long)]
    allow_missing_columns: bool,
    /// Encoding of the input: utf-8 (the default), latin1, windows-1252,
    /// utf-16le, utf-16be, shift_jis, … (WHATWG labels). A byte order mark
    /// wins; a UTF-8 one is skipped
    #[arg(long)]
    encoding: Option<String>,
    /// The primary key of a new table: its values must be unique and are
    /// indexed (`sluice get`, WHERE key = ...); `convert` checks them
    /// unique. Same as PRIMARY KEY in --schema
    #[arg(long, value_name = "COLUMN")]
    key: Option<String>,
    /// Print the summary as JSON
    #[arg(long)]
    json: bool,
}

/// When a new server table gets its primary key (`--index`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
enum IndexArg {
    After,
    First,
    Sorted,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
enum FormatArg {
    Csv,
    Tsv,
    Jsonl,
    Json,
    Parquet,
    /// The Arrow IPC file format (Feather v2)
    Arrow,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum OnDuplicateArg {
    Error,
    Skip,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum BlankLinesArg {
    Skip,
    Null,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum OnErrorArg {
    Abort,
    Skip,
}

/// Loads the inputs into the table, in the steps below: what the inputs
/// are, the load worked out by the library (format, options, schema),
/// the schema printed (or only printed with `--dry-run`), the load run,
/// its summary printed.
pub fn run(db_dir: &Path, threads: Option<usize>, quiet: bool, a: LoadArgs) -> Result<()> {
    if a.into.is_some() {
        return into::run(threads, quiet, &a);
    }
    let inputs = sluice::source::expand(&a.inputs)?;
    let given = request(&a, threads).columnar;
    if let Some(kind) = sluice::load::columnar::detect(&inputs, given).map_err(chained)? {
        return run_columnar(db_dir, threads, quiet, &a, &inputs, kind);
    }
    if a.read.hive_partitioning {
        anyhow::bail!(
            "--hive-partitioning applies to Parquet and Arrow input (the first input is text)"
        );
    }
    let mut prepared =
        prepare(db_dir, &a.table, &inputs, &request(&a, threads)).map_err(chained)?;
    if show_schema(&a.read, &a.table, &prepared, quiet) {
        return Ok(());
    }
    if prepared.inferred.is_none() && prepared.notes > 0 && !quiet {
        eprintln!(
            "{} line{} of notes above the data skipped in each file (--skip N to give another number)",
            prepared.notes,
            if prepared.notes == 1 { "" } else { "s" }
        );
    }
    let total_bytes: Option<u64> = inputs.iter().map(|i| i.len()).sum();
    let stop = stop_on_interrupt(has_streams(&inputs));
    let progress = Arc::new(Progress::default());
    prepared.options.progress = Some(progress.clone());
    prepared.options.stop = Some(stop.clone());
    let mut db = Database::open_writer(db_dir)
        .with_context(|| format!("opening database {}", db_dir.display()))?;
    let show_bar = !quiet && std::io::stderr().is_terminal();
    let bar =
        show_bar.then(|| util::spawn_progress(progress.clone(), total_bytes, inputs.len() as u64));
    let result = load(&mut db, &a.table, &inputs, &prepared.options);
    if let Some((stop, handle)) = bar {
        stop.store(true, Ordering::Relaxed);
        let _ = handle.join();
    }
    let summary = match result {
        Ok(s) => s,
        Err(e) => {
            return Err(load_error(
                e,
                &format!("loading table {}", a.table),
                &prepared,
                "nothing was committed",
            ));
        }
    };
    print_summary(&summary, a.read.rejects.as_deref(), a.read.json, quiet)?;
    if a.timing {
        print_stages(&summary);
    }
    if summary.files_left > 0 || stop.load(Ordering::Relaxed) {
        // Stopped by Ctrl-C: what was read is committed, but the load may
        // not be complete; scripts must not go on as if it were.
        std::io::stdout().flush()?;
        std::process::exit(130);
    }
    Ok(())
}

/// A load of Parquet or Arrow IPC files: the columns worked out from the
/// files (printed when inferred; `--dry-run` stops there), the load run
/// with a progress bar and Ctrl-C handling, the summary printed.
fn run_columnar(
    db_dir: &Path,
    threads: Option<usize>,
    quiet: bool,
    a: &LoadArgs,
    inputs: &[sluice::source::Input],
    kind: Columnar,
) -> Result<()> {
    let req = request(a, threads);
    let plan = sluice::load::columnar::prepare_columnar(db_dir, &a.table, inputs, kind, &req)
        .map_err(chained)?;
    if a.read.dry_run {
        if a.read.json {
            let v = serde_json::json!({
                "dry_run": true,
                "table": a.table,
                "format": kind.name().to_ascii_lowercase().replace(' ', "_"),
                "schema": plan.schema.to_string(),
                "partition_columns": plan.partition_columns,
            });
            println!("{v}");
        } else {
            println!("--schema \"{}\"", plan.schema);
        }
        return Ok(());
    }
    if plan.inferred && !quiet && !a.read.json {
        eprintln!("--schema \"{}\"", plan.schema);
    }
    let mut options = plan.options(&req).map_err(chained)?;
    if let Some((n, column)) = plan.default_shards(&req)
        && !quiet
        && !a.read.json
    {
        eprintln!(
            "a dataset of {n} buckets by {column}: the new table gets {n} shards by {column}, a bucket a shard (--shards to choose otherwise)"
        );
    }
    let total_bytes: Option<u64> = inputs.iter().map(|i| i.len()).sum();
    let stop = stop_on_interrupt(false);
    let progress = Arc::new(Progress::default());
    options.progress = Some(progress.clone());
    options.stop = Some(stop.clone());
    let mut db = Database::open_writer(db_dir)
        .with_context(|| format!("opening database {}", db_dir.display()))?;
    let show_bar = !quiet && std::io::stderr().is_terminal();
    let bar =
        show_bar.then(|| util::spawn_progress(progress.clone(), total_bytes, inputs.len() as u64));
    let result = sluice::load::columnar::load_columnar(&mut db, &a.table, &plan, &options);
    if let Some((stop, handle)) = bar {
        stop.store(true, Ordering::Relaxed);
        let _ = handle.join();
    }
    let summary = result.map_err(|e| {
        let e = chained(e);
        e.context(format!("loading {} into {}", kind.name(), a.table))
    })?;
    if plan.skipped > 0 && !quiet && !a.read.json {
        println!(
            "skipped {} bookkeeping file{} (_SUCCESS and the like)",
            plan.skipped,
            if plan.skipped == 1 { "" } else { "s" }
        );
    }
    print_summary(&summary, None, a.read.json, quiet)?;
    if summary.files_left > 0 || stop.load(Ordering::Relaxed) {
        std::io::stdout().flush()?;
        std::process::exit(130);
    }
    Ok(())
}

/// Whether a stream (standard input, a pipe) is among the inputs: one
/// read when Ctrl-C comes may have been cut short, so its group is
/// dropped, which the message says.
fn has_streams(inputs: &[sluice::source::Input]) -> bool {
    inputs.iter().any(|i| match i {
        sluice::source::Input::Stdin => true,
        sluice::source::Input::File(p) => !std::fs::metadata(p).is_ok_and(|m| m.is_file()),
    })
}

/// What the options ask of the library's load.
fn request(a: &LoadArgs, threads: Option<usize>) -> LoadRequest {
    LoadRequest {
        on_duplicate: match a.on_duplicate {
            OnDuplicateArg::Error => OnDuplicate::Error,
            OnDuplicateArg::Skip => OnDuplicate::Skip,
        },
        compression: a.compression.clone(),
        shards: a.shards,
        shard_by: a.shard_by.clone(),
        shard_paths: a.shard_paths.clone(),
        commit_every: a.commit_every.clone(),
        reload: if a.reload {
            Reload::All
        } else if a.reload_changed {
            Reload::Changed
        } else {
            Reload::None
        },
        ..read_request(&a.read, threads)
    }
}

/// What the reading options ask of the library's load (the table's own
/// options at their defaults).
pub(crate) fn read_request(a: &ReadArgs, threads: Option<usize>) -> LoadRequest {
    LoadRequest {
        schema: a.schema.clone(),
        types: a.types.clone(),
        columns: a.columns.clone(),
        match_by_name: a.match_by_name,
        format: a.format.map(|f| match f {
            FormatArg::Csv => InputFormat::Csv,
            FormatArg::Tsv => InputFormat::Tsv,
            FormatArg::Jsonl => InputFormat::Jsonl,
            FormatArg::Json => InputFormat::Json,
            // Columnar inputs never reach the text planner.
            FormatArg::Parquet | FormatArg::Arrow => InputFormat::Csv,
        }),
        columnar: match a.format {
            Some(FormatArg::Parquet) => Some(Columnar::Parquet),
            Some(FormatArg::Arrow) => Some(Columnar::ArrowIpc),
            _ => None,
        },
        hive_partitioning: a.hive_partitioning,
        ignore_unknown: a.ignore_unknown,
        json_rows: a.json_rows.clone(),
        delimiter: a.delimiter.clone(),
        tsv: a.tsv,
        quote: a.quote.clone(),
        escape: a.escape.clone(),
        header: if a.header {
            Header::Yes
        } else if a.no_header {
            Header::No
        } else {
            Header::Auto
        },
        null: a.null.clone(),
        skip: a.skip,
        comment: a.comment.clone(),
        blank_lines: a.blank_lines.map(|b| match b {
            BlankLinesArg::Skip => BlankLines::Skip,
            BlankLinesArg::Null => BlankLines::Null,
        }),
        line_end: a.line_end.clone(),
        date_format: a.date_format.clone(),
        timestamp_format: a.timestamp_format.clone(),
        memory_limit: a.memory_limit.clone(),
        max_line_size: a.max_line_size.clone(),
        block_size: a.block_size.clone(),
        segment_rows: a.segment_rows,
        dictionary_always: a.dictionary_always,
        page_cache: a.page_cache,
        map_files: !a.no_mmap,
        on_error: a.on_error.map(|o| match o {
            OnErrorArg::Abort => OnError::Abort,
            OnErrorArg::Skip => OnError::Skip,
        }),
        rejects: a.rejects.clone(),
        max_errors: a.max_errors,
        allow_missing_columns: a.allow_missing_columns,
        encoding: a.encoding.clone(),
        key: a.key.clone(),
        on_duplicate: OnDuplicate::Error,
        compression: None,
        shards: None,
        shard_by: None,
        shard_paths: Vec::new(),
        commit_every: "all".into(),
        reload: Reload::None,
        threads,
    }
}

/// A library error as the chain it is printed as: each context of
/// `Error::Context` a link of its own, so that `{:#}` prints the inner
/// error once.
pub(crate) fn chained(e: sluice::Error) -> anyhow::Error {
    match e {
        sluice::Error::Context { context, source } => chained(*source).context(context),
        e => anyhow::Error::new(e),
    }
}

/// Prints the schema chosen (and how the inputs read): on stdout for
/// `--dry-run` (then true: the load stops here), else on stderr when it
/// was inferred.
fn show_schema(a: &ReadArgs, name: &str, p: &Prepared, quiet: bool) -> bool {
    let (schema, json, format) = (&p.schema, p.json, p.format);
    if a.dry_run && a.json {
        println!("{}", dry_run_json(name, p));
        return true;
    }
    if a.dry_run || (!quiet && p.inferred.is_some()) {
        let mut text = String::new();
        match &p.inferred {
            Some(inf) if json.is_some() => {
                text.push_str(&format!(
                    "inferred from {} file{} ({} JSON rows{})\n",
                    inf.files_sampled,
                    if inf.files_sampled == 1 { "" } else { "s" },
                    inf.records_sampled,
                    match &inf.json_rows {
                        Some(f) if a.json_rows.is_none() => format!(
                            " in the top-level object's field {f:?}; --json-rows names another"
                        ),
                        _ => String::new(),
                    },
                ))
            }
            Some(inf) => {
                let mut how = vec![
                    format!("delimiter {}", util::show_delimiter(&inf.dialect)),
                    if inf.header {
                        "header line".to_string()
                    } else {
                        "no header line".to_string()
                    },
                ];
                // The quoting inference chose, where it is not the given one.
                let words = sluice::infer::quoting_words(&inf.dialect);
                let given = sluice::infer::quoting_words(&Dialect {
                    quote: p.quote,
                    escape: p.escape,
                    trim_around_quotes: false,
                    ..inf.dialect.clone()
                });
                if inf.dialect.split != Split::Line {
                    how.extend(words.into_iter().filter(|w| !given.contains(w)));
                }
                if inf.line_end == sluice::source::LineEnd::Cr {
                    how.push("line ends a lone CR (classic Mac OS)".into());
                }
                if inf.notes > 0 {
                    how.push(format!(
                        "{} line{} of notes above the table skipped (--skip {} to give another number)",
                        inf.notes,
                        if inf.notes == 1 { "" } else { "s" },
                        inf.skip
                    ));
                }
                if inf.dialect.split == Split::Line {
                    how.push(
                        "no delimiter splits the lines alike: each line is one field (give --delimiter to split them)"
                            .into(),
                    );
                }
                if inf.fill_missing {
                    how.push(
                        "most records have fewer fields than the header: the missing ones are NULL"
                            .into(),
                    );
                }
                if let (Some(c), None) = (inf.dialect.comment, p.infer.dialect.comment) {
                    how.push(format!(
                        "lines starting with {} among the records skipped as comments",
                        util::show_char(c)
                    ));
                }
                if let Some(c) = inf.leading_comment {
                    how.push(format!(
                        "comment lines ({}) above the data skipped",
                        util::show_char(c)
                    ));
                }
                text.push_str(&format!(
                    "inferred from {} sample{} of {} file{} ({} records): {}\n",
                    inf.samples,
                    if inf.samples == 1 { "" } else { "s" },
                    inf.files_sampled,
                    if inf.files_sampled == 1 { "" } else { "s" },
                    inf.records_sampled,
                    how.join(", "),
                ));
            }
            None if json.is_some() => text.push_str(&format!("format {format:?}\n").to_lowercase()),
            None => text.push_str(&format!("delimiter {}\n", util::show_delimiter(&p.dialect))),
        }
        // Quoted for a shell: in single quotes when a name is in double
        // quotes.
        let shown = schema.to_string();
        if shown.contains('"') {
            let quoted = shown.replace('\'', "'\\''");
            text.push_str(&format!("--schema '{quoted}'\n"));
        } else {
            text.push_str(&format!("--schema \"{shown}\"\n"));
        }
        if a.dry_run {
            print!("{text}");
            return true;
        }
        eprint!("{text}");
    }
    false
}

/// The error a failed load ends with, and a hint that fits it when one
/// does; Ctrl-C while a stream was read exits 130 here.
fn load_error(e: sluice::Error, what: &str, p: &Prepared, nothing: &str) -> anyhow::Error {
    let (sniffed, opts) = (p.sniffed.as_deref(), &p.options);
    match e {
        // Ctrl-C while a stream was read: its group is dropped.
        sluice::Error::Cancelled => {
            eprintln!(
                "error: {}: stopped while reading a stream (standard input or a pipe), which may have been cut short: nothing of its group was committed",
                what
            );
            std::process::exit(130);
        }
        sluice::Error::PartlyLoaded {
            committed, cause, ..
        } if matches!(*cause, sluice::Error::Cancelled) => {
            eprintln!(
                "error: {}: stopped while reading a stream (standard input or a pipe), which may have been cut short: its group was not committed ({committed} files committed before it; run the same command again to load the rest)",
                what
            );
            std::process::exit(130);
        }
        // A malformed record: a hint that fits the error, if one does.
        e @ sluice::Error::Parse { .. } if sniffed.is_none() => {
            let hint = parse_hint(
                &e,
                &HintContext {
                    inferred: p.inferred.as_ref(),
                    types: &p.infer.types,
                    opts,
                    skip: opts.skip,
                },
            );
            anyhow::anyhow!("{}; {nothing}: {e}{}", what, hint_line(hint.as_deref()))
        }
        e @ (sluice::Error::NotDurable(_)
        | sluice::Error::PartlyLoaded { .. }
        | sluice::Error::NotWidened { .. }) => anyhow::Error::new(e).context(what.to_string()),
        e if sniffed.is_some() => {
            anyhow::anyhow!("{what}; {nothing}: {e}{}", hint_line(sniffed))
        }
        e => chained(e).context(format!("{what}; {nothing}")),
    }
}

/// What a hint after a load error may look at.
struct HintContext<'a> {
    inferred: Option<&'a sluice::infer::Inferred>,
    /// The types `--types` gave.
    types: &'a [(String, sluice::batch::DataType)],
    opts: &'a LoadOptions,
    /// Lines `--skip` skipped.
    skip: u64,
}

/// Whether a tokenizer message is about quotes.
fn is_quote_error(message: &str) -> bool {
    message.starts_with("unterminated quoted field")
        || message.starts_with("unexpected quote inside an unquoted field")
        || (message.starts_with("unexpected ") && message.contains(" after a closing quote"))
}

/// The one hint that fits a malformed record's error, if one does: a
/// comment line, a quote, a preamble above the data, or a value that
/// contradicts an inferred type, in that order.
fn parse_hint(e: &sluice::Error, cx: &HintContext<'_>) -> Option<String> {
    let sluice::Error::Parse {
        path,
        line,
        column,
        message,
        ..
    } = e
    else {
        return None;
    };
    if cx.opts.format != Format::Delimited {
        return None;
    }
    if message.ends_with(sluice::parse::COMMENT_NOTE) {
        return Some(
            "if lines starting with '#' are comments, load with --comment '#' to skip them".into(),
        );
    }
    if is_quote_error(message) {
        return Some(
            "a field that starts with a quote ends at the next lone quote, and a quote inside it is doubled (\"\"); if quotes in this file are data, load with --quote ''; if it escapes them with a backslash, with --escape '\\'".into(),
        );
    }
    if message.starts_with("found a record with ") {
        return skip_hint(path, *line, cx).or_else(|| Some(FIELD_COUNT_HINT.into()));
    }
    let (Some(col), Some(inf)) = (column, cx.inferred) else {
        return None;
    };
    let name = col
        .rsplit_once('(')
        .map(|(_, n)| n.trim_end_matches(')'))
        .unwrap_or(col);
    let ty = inf
        .schema
        .columns
        .iter()
        .find(|c| c.name == name)
        .map(|c| c.data_type)?;
    // TEXT takes any valid text: --types cannot help (bad UTF-8 says
    // --encoding itself).
    if !message.starts_with("invalid ") || ty == sluice::batch::DataType::Text {
        return None;
    }
    let from = if cx.types.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
        "given by --types".to_string()
    } else {
        format!(
            "inferred from samples of {} file{}",
            inf.files_sampled,
            if inf.files_sampled == 1 { "" } else { "s" }
        )
    };
    Some(format!(
        "{name} is {ty}, {from}; load it with --types {name}=TEXT (or another type), or give the whole --schema"
    ))
}

/// Widenings the summary lists one a line: a wide file may widen
/// thousands of columns (an R dataset of 6,832 did).
const WIDENINGS_SHOWN: usize = 10;

/// The hint of a record with the wrong field count among the data (not
/// above it, where `--skip` is named): the options that load the others.
const FIELD_COUNT_HINT: &str = "to set aside records with another number of fields and load the others, load with --rejects FILE (or --on-error skip); if the delimiter is another, give --delimiter";

/// Text of a file's start looked at for the `--skip` hint: as much as
/// inference samples for the delimiter.
const SKIP_HINT_SAMPLE: u64 = 64 << 10;

/// `--skip N` when a record with the wrong field count at `line` of
/// `path` lies above records that all have the table's: lines a tool
/// wrote above the data (a title, notes), none of which has the table's
/// field count. N counts the lines before the first of those records, so
/// that the header below them is read as one.
fn skip_hint(path: &str, line: u64, cx: &HintContext<'_>) -> Option<String> {
    let o = cx.opts;
    if o.columns.is_some() || o.match_by_name || path == "<stdin>" {
        return None;
    }
    let want = o.schema.as_ref()?.len();
    let input = sluice::source::Input::File(PathBuf::from(path));
    let (r, _, _) = input.open_lines(None, o.encoding, o.line_end).ok()?;
    let mut head = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(r, SKIP_HINT_SAMPLE), &mut head).ok()?;
    let whole = (head.len() as u64) < SKIP_HINT_SAMPLE;
    // Each record's first line (1-based) and field count.
    let mut records: Vec<(u64, usize)> = Vec::new();
    let mut data = &head[..];
    let mut at = 1u64;
    while !data.is_empty() {
        let blank = data[0] == b'\n' || data.starts_with(b"\r\n");
        if at <= cx.skip || blank || Some(data[0]) == o.dialect.comment {
            let Some(i) = memchr_newline(data) else { break };
            data = &data[i + 1..];
            at += 1;
            continue;
        }
        let Ok(Some((fields, used, newlines))) =
            sluice::parse::read_record(data, &o.dialect, whole)
        else {
            break;
        };
        records.push((at, fields.len()));
        data = &data[used..];
        at += newlines.max(1);
    }
    // The first record from which on every record has the table's count,
    // with two at least below the failing one.
    let k = (0..records.len())
        .rev()
        .take_while(|&k| records[k].1 == want)
        .last()?;
    // Lines above the data split otherwise than its records: a record of
    // the table's count above them is data (a bad line is among the data).
    if records.len() - k < 2 || records[k].0 <= line || records[..k].iter().any(|r| r.1 == want) {
        return None;
    }
    let n = records[k].0 - 1;
    Some(if n == 1 {
        format!(
            "line 1 does not split into {want} fields like the records below it; if it is a title or a note above the data, load with --skip 1"
        )
    } else {
        format!(
            "lines 1 to {n} do not split into {want} fields like the records below them; if they are a title or notes above the data, load with --skip {n}"
        )
    })
}

/// The offset of the first LF in `data`.
fn memchr_newline(data: &[u8]) -> Option<usize> {
    data.iter().position(|&b| b == b'\n')
}

/// A hint on a line of its own after an error, or nothing.
fn hint_line(hint: Option<&str>) -> String {
    hint.map(|h| format!("\nhint: {h}")).unwrap_or_default()
}

/// What `load --dry-run --json` prints (its shape is in `--help`).
fn dry_run_json(table: &str, p: &Prepared) -> serde_json::Value {
    let (dialect, inferred, json) = (&p.dialect, p.inferred.as_ref(), p.json);
    let delimiter = match dialect.split {
        Split::Delimiter => (dialect.delimiter as char).to_string(),
        Split::Whitespace => "whitespace".to_string(),
        Split::Line => "none".to_string(),
    };
    serde_json::json!({
        "dry_run": true,
        "table": table,
        "format": match json {
            None => "csv",
            Some(JsonShape::Lines) => "jsonl",
            Some(JsonShape::Array | JsonShape::Values) => "json",
        },
        "delimiter": json.is_none().then_some(delimiter),
        "skip": p.skip,
        "schema": p.schema.to_string(),
        "inferred": inferred.map(|inf| serde_json::json!({
            "samples": inf.samples,
            "files_sampled": inf.files_sampled,
            "records_sampled": inf.records_sampled,
            "header": inf.header,
            "notes": inf.notes,
        })),
    })
}

/// Ctrl-C (or SIGTERM) ends the load after the file being read: the
/// files read so far are committed, and the same command run again loads
/// the rest; with `streams` (standard input or a pipe among the inputs),
/// except a group holding one, which the signal may have cut short. A
/// second Ctrl-C exits at once; the last commit is intact and the next
/// writer removes the unfinished files.
fn stop_on_interrupt(streams: bool) -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Registered first, so it sees the flag before the second handler sets it.
        let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, flag.clone());
        let _ = signal_hook::flag::register(sig, flag.clone());
    }
    // Say so once (the handlers themselves cannot print).
    let watch = flag.clone();
    let _ = std::thread::Builder::new()
        .name("sluice-interrupt".into())
        .spawn(move || {
            while !watch.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            if streams {
                eprintln!(
                    "\nstopping after the current file: what was read is committed, except a group holding standard input or a pipe, which may have been cut short (Ctrl-C again stops at once; the last commit stays)"
                );
            } else {
                eprintln!(
                    "\nstopping after the current file: what was read is being committed (Ctrl-C again stops at once; the last commit stays)"
                );
            }
        });
    flag
}

/// Names shown of the empty files of a load; the rest are counted.
const EMPTY_FILES_SHOWN: usize = 5;

/// The summary line naming the empty input files, each loaded as 0 rows.
fn empty_files_line(files: &[String]) -> String {
    let mut names = files
        .iter()
        .take(EMPTY_FILES_SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if files.len() > EMPTY_FILES_SHOWN {
        names.push_str(&format!(" and {} more", files.len() - EMPTY_FILES_SHOWN));
    }
    match files.len() {
        1 => format!("1 file was empty (0 rows): {names}"),
        n => format!("{n} files were empty (0 rows each): {names}"),
    }
}

/// `--timing`: CPU seconds by stage and their shares of the process's
/// CPU time, on standard error.
fn print_stages(s: &LoadSummary) {
    let total = sluice::exec::cpu_seconds().unwrap_or(0.0);
    let staged: f64 = s.stages.iter().map(|t| t.cpu_seconds).sum();
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{:<16} {:>8} {:>7}", "stage", "cpu_s", "share");
    let share = |v: f64| {
        if total > 0.0 {
            format!("{:.1}%", 100.0 * v / total)
        } else {
            "-".into()
        }
    };
    for t in &s.stages {
        let _ = writeln!(
            err,
            "{:<16} {:>8.3} {:>7}",
            t.stage,
            t.cpu_seconds,
            share(t.cpu_seconds)
        );
    }
    let rest = (total - staged).max(0.0);
    let _ = writeln!(err, "{:<16} {:>8.3} {:>7}", "other", rest, share(rest));
    let _ = writeln!(
        err,
        "{:<16} {:>8.3} {:>7}  ({:.3} GB per CPU-second, {:.2} s wall)",
        "total",
        total,
        share(total),
        s.bytes as f64 / 1e9 / total.max(1e-9),
        s.seconds
    );
}

/// Prints what the load did (as JSON with `--json`; nothing with
/// `--quiet`).
fn print_summary(
    s: &LoadSummary,
    rejects: Option<&std::path::Path>,
    json: bool,
    quiet: bool,
) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        let mut v = serde_json::to_value(s)?;
        v["mb_per_s"] = serde_json::json!(s.mb_per_s());
        v["rows_per_s"] = serde_json::json!(s.rows_per_s());
        v["peak_rss_bytes"] = serde_json::json!(sluice::exec::peak_rss_bytes());
        v["cpu_seconds"] = serde_json::json!(sluice::exec::cpu_seconds());
        writeln!(out, "{v}")?;
    } else if !quiet {
        if s.already_loaded > 0 {
            writeln!(
                out,
                "skipped {} file{} loaded by earlier commits (--reload loads them again)",
                s.already_loaded,
                if s.already_loaded == 1 { "" } else { "s" }
            )?;
        }
        if s.listed_twice > 0 {
            if s.listed_twice == 1 {
                writeln!(out, "1 input was named more than once; it was read once")?;
            } else {
                writeln!(
                    out,
                    "{} inputs were named more than once; each was read once",
                    s.listed_twice
                )?;
            }
        }
        if s.files == 0 && s.unreadable.is_empty() {
            writeln!(out, "nothing to load into {}", s.table)?;
            return Ok(());
        }
        writeln!(
            out,
            "loaded {} rows ({}) from {} file{} into {} in {:.2} s: {:.1} MB/s, {} rows/s, {} thread{}",
            s.rows,
            util::human_bytes(s.bytes),
            s.files,
            if s.files == 1 { "" } else { "s" },
            s.table,
            s.seconds,
            s.mb_per_s(),
            util::human_count(s.rows_per_s() as u64),
            s.threads,
            if s.threads == 1 { "" } else { "s" },
        )?;
        if s.commits > 1 {
            writeln!(out, "committed in {} groups of files", s.commits)?;
        }
        if s.files_by_bucket > 0 {
            writeln!(
                out,
                "{} file{} of a bucketed dataset went to {} bucket's shard whole (rows not re-hashed)",
                s.files_by_bucket,
                if s.files_by_bucket == 1 { "" } else { "s" },
                if s.files_by_bucket == 1 {
                    "its"
                } else {
                    "their"
                },
            )?;
        }
        if !s.empty_files.is_empty() {
            writeln!(out, "{}", empty_files_line(&s.empty_files))?;
        }
        for w in s.widened.iter().take(WIDENINGS_SHOWN) {
            writeln!(out, "{w}; the load started over")?;
        }
        if s.widened.len() > WIDENINGS_SHOWN {
            let columns: std::collections::HashSet<&str> =
                s.widened.iter().map(|w| w.column.as_str()).collect();
            writeln!(
                out,
                "and {} more widenings; {} columns widened in all (--json lists every one)",
                s.widened.len() - WIDENINGS_SHOWN,
                columns.len()
            )?;
        }
        if s.files_left > 0 {
            writeln!(
                out,
                "stopped: {} file{} not loaded; run the same command again to load {}",
                s.files_left,
                if s.files_left == 1 { "" } else { "s" },
                if s.files_left == 1 { "it" } else { "them" }
            )?;
        }
        for (file, why) in &s.unreadable {
            eprintln!("warning: skipped unreadable file {file}: {why}");
        }
        if s.duplicates > 0 {
            writeln!(
                out,
                "skipped {} row{} whose key was already loaded",
                s.duplicates,
                if s.duplicates == 1 { "" } else { "s" }
            )?;
        }
        if let Some(e) = &s.merge_error {
            eprintln!(
                "warning: the load is committed, but merging the key-index runs failed: {e} (sluice compact {} retries)",
                s.table
            );
        }
        if s.runs_merged > 0 {
            writeln!(
                out,
                "merged {} key-index runs (by size tier)",
                s.runs_merged
            )?;
        }
        if s.rejected > 0 {
            writeln!(
                out,
                "rejected {} record{}{}",
                s.rejected,
                if s.rejected == 1 { "" } else { "s" },
                match rejects {
                    Some(p) => format!(" (written to {})", p.display()),
                    None => " (--rejects FILE keeps them)".to_string(),
                }
            )?;
        }
    }
    Ok(())
}
