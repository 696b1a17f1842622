//! The `sluice` command-line tool.

mod bench;
mod bench_corpus;
mod bench_index;
mod bench_resume;
mod bench_shards;
mod demo;
mod generate;
mod profile;
mod query;
mod tpch;
mod util;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use sluice::load::{Header, LoadOptions, LoadSummary, OnError, Progress, load};
use sluice::parse::{BlankLines, Dialect, Format, JsonFormat, JsonShape};
use sluice::store::Database;

#[derive(Parser)]
#[command(
    name = "sluice",
    version,
    about = "Load big CSV/TSV/JSON files into an embedded columnar store, fast.",
    after_help = "Examples:\n  sluice demo\n  sluice load --schema \"id BIGINT, name TEXT\" people people.csv\n  sluice info people\n  sluice export people > people.csv"
)]
struct Cli {
    /// Database directory
    #[arg(long, global = true, env = "SLUICE_DB", default_value = "sluice.db")]
    db: PathBuf,
    /// Compute threads (default: every usable core; more than the cores never adds threads)
    #[arg(long, global = true)]
    threads: Option<usize>,
    /// Print nothing but errors and results asked for
    #[arg(long, short, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Load CSV, TSV or JSON files into a table (created by the first load)
    #[command(after_help = LOAD_EXAMPLES)]
    Load(LoadArgs),
    /// List tables with their schema, rows, bytes on disk and segments
    #[command(
        after_help = "Examples:\n  sluice info\n  sluice info trips --json\n  sluice info trips --loads     # each commit of a load and its input files"
    )]
    Info {
        /// Only this table
        table: Option<String>,
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
        /// List the commits of loads and the input files each held (the
        /// load journal)
        #[arg(long)]
        loads: bool,
    },
    /// Verify every file of a table (checksums, sizes, the key index)
    /// against the manifest; changes nothing. Exits 1 if anything is damaged
    #[command(after_help = "Examples:\n  sluice check\n  sluice check objects --json")]
    Check {
        /// Only this table
        table: Option<String>,
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
    },
    /// Run a SQL query (SELECT or EXPLAIN SELECT) and print the result
    #[command(after_help = QUERY_EXAMPLES)]
    Query {
        /// The SQL text
        sql: String,
        /// Output format (default: table on a terminal, csv otherwise;
        /// EXPLAIN prints text, or with csv/json one row a plan line in a
        /// `plan` column)
        #[arg(long, value_enum)]
        format: Option<query::Format>,
        /// Print the run time and scan statistics to stderr
        #[arg(long)]
        timing: bool,
    },
    /// Write a table's rows as CSV (NULL as an empty field, empty text as "")
    #[command(
        after_help = "Examples:\n  sluice export trips > trips.csv\n  sluice export trips --output trips.tsv --delimiter tab"
    )]
    Export {
        table: String,
        /// Write here instead of standard output
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Field delimiter
        #[arg(long, default_value = ",")]
        delimiter: String,
        /// Write a header line
        #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
        header: bool,
    },
    /// Print the rows of a keyed table with the given keys (missing keys
    /// print nothing). A key that is not a value of the key's type is
    /// reported on stderr and the others are printed; the exit status is
    /// then 2
    #[command(after_help = GET_EXAMPLES)]
    Get {
        table: String,
        /// Keys to look up (negative numbers such as -5 are keys, not options)
        #[arg(allow_negative_numbers = true)]
        keys: Vec<String>,
        /// Read keys from this file, one a line ('-': standard input)
        #[arg(long = "keys", value_name = "FILE")]
        keys_file: Option<PathBuf>,
        /// Output format (default: table on a terminal, csv otherwise)
        #[arg(long, value_enum)]
        format: Option<query::Format>,
    },
    /// Merge the key-index runs of a keyed table into one (loads merge runs of similar size as they go)
    #[command(after_help = "Examples:\n  sluice compact objects")]
    Compact { table: String },
    /// Generate benchmark data
    #[command(
        after_help = "Examples:\n  sluice gen ints --size 100MB --output ints.csv\n  sluice gen ints --rows 1000000 --output -\n  sluice gen objects --size 220MB --output rows.jsonl   # the JSON input benchmark\n  sluice gen objects --size 220MB --tsv --output rows.tsv  # the same rows as TSV"
    )]
    Gen {
        #[command(subcommand)]
        what: generate::GenCommand,
    },
    /// Generate a sample CSV, load it, print the rates, read it back
    #[command(after_help = "Examples:\n  sluice demo\n  sluice demo --rows 200000 --threads 1")]
    Demo(demo::DemoArgs),
    /// Run a benchmark scenario (peers too, when installed) and print a table
    #[command(
        after_help = "Examples:\n  sluice bench ingest\n  sluice bench ingest --size 128MB --runs 3 --threads-list 1,2,64\n  sluice bench secondary-index --files 200 --rows 100000\n  sluice bench resume --settings all,1GiB,64MiB --kill-at 0.5\n  sluice bench shards --shards 1,2,4,8 --threads-list 1,2"
    )]
    Bench {
        #[command(subcommand)]
        scenario: bench::Scenario,
    },
}

const QUERY_EXAMPLES: &str = "Examples:
  sluice query \"SELECT count(*) FROM sales\"
  sluice query --format json \"SELECT d, sum(price) AS total FROM sales GROUP BY d ORDER BY total DESC LIMIT 5\"
  sluice query \"EXPLAIN SELECT sum(price) FROM sales WHERE d >= DATE '2024-01-01'\"

Supported: one table; WHERE, GROUP BY, HAVING, ORDER BY, LIMIT/OFFSET; + - * /, CASE, CAST,
EXTRACT, SUBSTRING, LIKE, BETWEEN, IN, IS NULL, DATE '...' +/- INTERVAL 'n' DAY|MONTH|YEAR;
COUNT(*), COUNT([DISTINCT] x), SUM, AVG, MIN, MAX. Joins and subqueries are refused.";

const GET_EXAMPLES: &str = "Examples:
  sluice load --key source_id --tsv --schema \"source_id TEXT, chunk INT, sub INT\" objects 'chunks/*.tsv'
  sluice get objects 4295806720 4295806721
  sluice get objects --keys wanted.txt --format json";

const LOAD_EXAMPLES: &str = "Examples:
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
  sluice load --schema \"id BIGINT, tags TEXT\" events events.jsonl   # JSON lines, fields by name
  sluice load --format json --columns \"id,name\" --schema \"id INT, name TEXT\" t rows.json   # [[1,\"a\"],...]
  zcat big.csv.gz | sluice load --schema \"a INT, b INT\" t -";

#[derive(Args)]
struct LoadArgs {
    /// Table to load into (letters, digits, '_')
    table: String,
    /// Files, directories, glob patterns, or - for standard input
    #[arg(required = true)]
    inputs: Vec<String>,
    /// Columns of a new table: "id BIGINT, name TEXT, price DECIMAL(15,2), d DATE"
    /// (default: inferred from samples of the files, and printed)
    #[arg(long)]
    schema: Option<String>,
    /// Override inferred column types: "price=DECIMAL(12,2),zip=TEXT"
    /// (repeatable)
    #[arg(long, value_name = "COL=TYPE,...")]
    types: Vec<String>,
    /// Print the schema and dialect the load would use, and load nothing.
    /// With --json, one JSON object: {"dry_run": true, "table", "format"
    /// ("csv", "jsonl" or "json"), "delimiter" (null for JSON), "schema"
    /// (a --schema string), "inferred" (null when not inferred, else
    /// {"samples", "files_sampled", "records_sampled", "header"})}
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
    /// (["id","name"]) or from --columns
    #[arg(long, value_enum, value_name = "csv|tsv|jsonl|json")]
    format: Option<FormatArg>,
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
    /// Field delimiter: one character, or 'tab' (default: detected from the
    /// data among , tab | ; then a single space)
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
    #[arg(long, default_value_t = 0)]
    skip: u64,
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
    /// indexed (`sluice get`, WHERE key = ...). Same as PRIMARY KEY in
    /// --schema
    #[arg(long, value_name = "COLUMN")]
    key: Option<String>,
    /// What a row whose key is already in the table (or earlier in the
    /// load) does: error (the default: the load fails, nothing is
    /// committed) or skip (the first row is kept, later ones counted)
    #[arg(long, value_enum, default_value = "error")]
    on_duplicate: OnDuplicateArg,
    /// Compression of a new table's segments: none (the default: fastest
    /// queries, files mapped without copying) or zstd (smaller files)
    #[arg(long, value_name = "none|zstd")]
    compression: Option<String>,
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
    /// Print the summary as JSON
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
enum FormatArg {
    Csv,
    Tsv,
    Jsonl,
    Json,
}

/// The input format from the first file's name, else its first bytes
/// (standard input is not sniffed: it cannot be read twice), and when
/// the bytes chose JSON, a note that says so for messages.
/// A known name wins: a `.csv` whose lines start with `[` is CSV.
fn guess_format(
    inputs: &[sluice::source::Input],
    head_of: impl FnOnce(&sluice::source::Input) -> Vec<u8>,
) -> (FormatArg, Option<String>) {
    let Some(first) = inputs.iter().find_map(|i| match i {
        sluice::source::Input::File(p) => Some((i, p)),
        sluice::source::Input::Stdin => None,
    }) else {
        return (FormatArg::Csv, None);
    };
    let name = first.1.to_string_lossy().to_ascii_lowercase();
    let name = [".gz", ".zst", ".zstd"]
        .iter()
        .find_map(|e| name.strip_suffix(e))
        .unwrap_or(&name);
    if name.ends_with(".jsonl") || name.ends_with(".ndjson") {
        return (FormatArg::Jsonl, None);
    }
    if name.ends_with(".json") {
        return (FormatArg::Json, None);
    }
    if name.ends_with(".tsv") || name.ends_with(".tab") {
        return (FormatArg::Tsv, None);
    }
    if name.ends_with(".csv") {
        return (FormatArg::Csv, None);
    }
    let head = head_of(first.0);
    let mut bytes = head.iter().copied().filter(|b| !b.is_ascii_whitespace());
    let first_line = head
        .split(|&b| b == b'\n')
        .find(|l| !l.trim_ascii().is_empty())
        .unwrap_or_default();
    let format = match (bytes.next(), bytes.next()) {
        // An object spread over lines: not JSON lines.
        (Some(b'{'), _) if first_line.trim_ascii() == b"{" => FormatArg::Json,
        (Some(b'{'), _) => FormatArg::Jsonl,
        (Some(b'['), Some(b'{' | b'[')) => FormatArg::Json,
        (Some(b'['), Some(b'"' | b'-' | b'0'..=b'9' | b']')) => {
            let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
            if line.trim_ascii_end().ends_with(b"]") {
                FormatArg::Jsonl
            } else {
                FormatArg::Csv
            }
        }
        _ => FormatArg::Csv,
    };
    let note = (format != FormatArg::Csv).then(|| {
        let line = head
            .split(|&b| b == b'\n')
            .find(|l| !l.trim_ascii().is_empty())
            .unwrap_or_default();
        format!(
            "{} was read as {}: its name does not say its format (.csv, .tsv, .json, .jsonl) and its text starts like JSON ({}); if it is CSV, give --format csv",
            first.1.display(),
            if format == FormatArg::Json {
                "JSON (--format json)"
            } else {
                "JSON lines"
            },
            util::snippet(line.trim_ascii())
        )
    });
    (format, note)
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

fn main() -> ExitCode {
    let matches = <Cli as clap::CommandFactory>::command().get_matches();
    let db_given = matches.value_source("db") == Some(clap::parser::ValueSource::CommandLine);
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match run(cli, db_given) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Runs the subcommand; `db_given`: `--db` was on the command line (not
/// from `$SLUICE_DB` or the default).
fn run(cli: Cli, db_given: bool) -> Result<()> {
    match cli.command {
        Command::Load(args) => cmd_load(&cli.db, cli.threads, cli.quiet, args),
        Command::Info { table, json, loads } => {
            if loads {
                cmd_loads(&cli.db, table.as_deref(), json)
            } else {
                cmd_info(&cli.db, table.as_deref(), json)
            }
        }
        Command::Check { table, json } => cmd_check(&cli.db, table.as_deref(), json),
        Command::Query {
            sql,
            format,
            timing,
        } => query::run(&cli.db, &sql, cli.threads, format, timing),
        Command::Export {
            table,
            output,
            delimiter,
            header,
        } => cmd_export(&cli.db, &table, output, &delimiter, header),
        Command::Get {
            table,
            keys,
            keys_file,
            format,
        } => cmd_get(&cli.db, &table, keys, keys_file, format),
        Command::Compact { table } => cmd_compact(&cli.db, &table, cli.quiet),
        Command::Gen { what } => generate::run(what, &cli.db, cli.threads),
        // Both make databases of their own (removed and made again):
        // a --db given would be ignored, or worse.
        Command::Demo(_) | Command::Bench { .. } if db_given => bail!(
            "--db {}: {} makes a database of its own (demo: in a temporary directory, or under --keep DIR; bench: under --dir DIR) and never touches another; drop --db",
            cli.db.display(),
            if matches!(cli.command, Command::Demo(_)) {
                "demo"
            } else {
                "bench"
            }
        ),
        Command::Demo(args) => demo::run(args, cli.threads),
        Command::Bench { scenario } => bench::run(scenario, cli.quiet),
    }
}

/// Merges each shard's key-index runs into one and says what it did.
fn cmd_compact(db_dir: &std::path::Path, table: &str, quiet: bool) -> Result<()> {
    let mut db = Database::open_writer(db_dir)
        .with_context(|| format!("opening database {}", db_dir.display()))?;
    // Shards with more than one run: each ends with one.
    let (shards, merging) = match db.table(table) {
        Some(t) => {
            let stats = t.shard_stats();
            (stats.len(), stats.iter().filter(|s| s.runs >= 2).count())
        }
        None => (0, 0),
    };
    let n = db.compact(table)?;
    if quiet {
        return Ok(());
    }
    match (n, shards) {
        (0, 1) => println!("{table}: nothing to merge (at most one run)"),
        (0, _) => println!("{table}: nothing to merge (at most one run per shard)"),
        (n, 1) => println!("{table}: merged {n} runs into one"),
        (n, _) if merging == shards => {
            println!("{table}: merged {n} runs into {merging}, one per shard")
        }
        (n, _) => println!(
            "{table}: merged {n} runs into {merging}, one per shard that had more than one ({} of {shards} shards had at most one)",
            shards - merging
        ),
    }
    Ok(())
}

fn cmd_load(db_dir: &PathBuf, threads: Option<usize>, quiet: bool, a: LoadArgs) -> Result<()> {
    let inputs = sluice::source::expand(&a.inputs)?;
    let encoding = a
        .encoding
        .as_deref()
        .map(sluice::source::encoding_for)
        .transpose()?;
    let (format, sniffed) = match a.format {
        Some(f) => (f, None),
        None if a.tsv || a.delimiter.is_some() => (FormatArg::Csv, None),
        None => guess_format(&inputs, |input| {
            // The first 64 KiB of text (decompressed, decoded).
            let mut head = Vec::new();
            if let Ok((r, _)) = input.open_text(None, encoding) {
                let _ =
                    std::io::Read::read_to_end(&mut std::io::Read::take(r, 64 << 10), &mut head);
            }
            head
        }),
    };
    let json = match format {
        FormatArg::Jsonl => Some(JsonShape::Lines),
        FormatArg::Json => Some(JsonShape::Array),
        FormatArg::Csv | FormatArg::Tsv => None,
    };
    if json.is_some() {
        for (given, flag) in [
            (a.tsv || a.delimiter.is_some(), "--delimiter"),
            (a.escape.is_some(), "--escape"),
            (a.comment.is_some(), "--comment"),
            (a.blank_lines.is_some(), "--blank-lines"),
            (a.match_by_name, "--match-by-name"),
        ] {
            if given {
                bail!(
                    "{flag} is for CSV and TSV input, and this load reads JSON (--format {}); JSON fields always match columns by name{}",
                    if json == Some(JsonShape::Lines) {
                        "jsonl"
                    } else {
                        "json"
                    },
                    hint_line(sniffed.as_deref())
                );
            }
        }
    } else if a.ignore_unknown {
        bail!(
            "--ignore-unknown is for JSON input, and this load reads {} (give --format jsonl or json; standard input is not sniffed)",
            if format == FormatArg::Tsv {
                "TSV"
            } else {
                "CSV"
            }
        );
    }
    let delimiter = if format == FormatArg::Tsv || a.tsv {
        Some(b'\t')
    } else {
        a.delimiter
            .as_deref()
            .map(|d| util::parse_char(d, "--delimiter"))
            .transpose()?
    };
    let quote = match a.quote.as_deref() {
        None => Some(b'"'),
        Some(q) if q.is_empty() || q.eq_ignore_ascii_case("none") => None,
        Some(q) => Some(util::parse_char(q, "--quote")?),
    };
    let escape = a
        .escape
        .as_deref()
        .map(|e| util::parse_char(e, "--escape"))
        .transpose()?;
    let comment = a
        .comment
        .as_deref()
        .map(|c| util::parse_char(c, "--comment"))
        .transpose()?;
    let line_end: sluice::source::LineEnd = a.line_end.parse()?;
    let blank_lines = match a.blank_lines {
        None => BlankLines::Auto,
        Some(BlankLinesArg::Skip) => BlankLines::Skip,
        Some(BlankLinesArg::Null) => BlankLines::Null,
    };
    let given: Option<sluice::batch::Schema> = a.schema.as_deref().map(str::parse).transpose()?;
    let wants_skip = a.rejects.is_some() || a.max_errors.is_some();
    let on_error = match (a.on_error, wants_skip) {
        (Some(OnErrorArg::Skip), _) | (None, true) => OnError::Skip,
        (Some(OnErrorArg::Abort), true) => {
            bail!("--rejects and --max-errors go with --on-error skip, not abort")
        }
        (_, false) => OnError::Abort,
    };
    let header = if a.header {
        Header::Yes
    } else if a.no_header {
        Header::No
    } else {
        Header::Auto
    };
    let column_refs: Option<Vec<sluice::load::ColumnRef>> = a
        .columns
        .as_deref()
        .map(|c| c.split(',').map(str::parse).collect::<Result<Vec<_>, _>>())
        .transpose()?;
    // The table's schema: given, the existing table's, or inferred.
    let existing = Database::open(db_dir)
        .ok()
        .and_then(|db| db.table(&a.table).map(|t| t.schema.clone()));
    let infer_opts = sluice::infer::InferOptions {
        delimiter,
        dialect: Dialect {
            delimiter: delimiter.unwrap_or(b','),
            quote,
            escape,
            comment,
            blank_lines,
            trim_around_quotes: false,
        },
        detect_quoting: a.quote.is_none() && a.escape.is_none(),
        header,
        skip: a.skip,
        null: a.null.clone().into_bytes(),
        date_format: a.date_format.clone(),
        timestamp_format: a.timestamp_format.clone(),
        encoding,
        line_end,
        types: parse_types(&a.types)?,
        ..Default::default()
    };
    let mut inferred = None;
    let mut leading_comment = None;
    let mut dialect = infer_opts.dialect.clone();
    let (schema, delimiter, header) = match (given, existing) {
        (Some(s), _) | (None, Some(s)) if json.is_some() => {
            if !a.types.is_empty() {
                bail!(
                    "--types adjusts an inferred schema; JSON loads take their columns from --schema"
                );
            }
            (s, b',', header)
        }
        (None, None) if json.is_some() => {
            let mut inf = sluice::infer::infer_json(&inputs, &infer_opts, a.json_rows.as_deref())
                .context("inferring the schema from JSON")?;
            if let Some(k) = &a.key {
                inf.schema.set_key(k)?;
            }
            let s = inf.schema.clone();
            inferred = Some(inf);
            (s, b',', header)
        }
        (Some(s), _) | (None, Some(s)) => {
            if !a.types.is_empty() {
                bail!(
                    "--types adjusts an inferred schema; with --schema or an existing table, the types are already fixed"
                );
            }
            // Mapped inputs may have any number of fields.
            let fields = (column_refs.is_none() && !a.match_by_name).then_some(s.len());
            let (d, notes) = sluice::infer::sniff_delimiter(&inputs, &infer_opts, fields)?;
            leading_comment = notes;
            dialect = d;
            (s, dialect.delimiter, header)
        }
        (None, None) => {
            let mut inf =
                sluice::infer::infer(&inputs, &infer_opts).context("inferring the schema")?;
            let d = inf.delimiter;
            dialect = inf.dialect.clone();
            let h = if inf.header { Header::Yes } else { Header::No };
            leading_comment = inf.leading_comment;
            // With --columns, the table is the chosen fields, in that order.
            if let Some(refs) = &column_refs {
                let all = &inf.schema.columns;
                let mut chosen = Vec::new();
                for r in refs {
                    let c = match r {
                        sluice::load::ColumnRef::Position(p) => all.get(p - 1),
                        sluice::load::ColumnRef::Name(n) => {
                            let n = sluice::load::normalize_name(n.as_bytes());
                            all.iter().find(|c| c.name.eq_ignore_ascii_case(&n))
                        }
                    };
                    chosen.push(c.cloned().with_context(|| {
                        format!(
                            "--columns: no input field {r} (the fields: {})",
                            all.iter()
                                .map(|c| c.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    })?);
                }
                inf.schema = sluice::batch::Schema::new(chosen)?;
            }
            // The key is part of the schema printed for reuse.
            if let Some(k) = &a.key {
                inf.schema.set_key(k)?;
            }
            let s = inf.schema.clone();
            inferred = Some(inf);
            (s, d, h)
        }
    };
    if a.dry_run && a.json {
        println!(
            "{}",
            dry_run_json(&a.table, &schema, delimiter, json, inferred.as_ref())
        );
        return Ok(());
    }
    if a.dry_run || (!quiet && inferred.is_some()) {
        let mut text = String::new();
        match &inferred {
            Some(inf) if json.is_some() => text.push_str(&format!(
                "inferred from {} file{} ({} JSON rows)\n",
                inf.files_sampled,
                if inf.files_sampled == 1 { "" } else { "s" },
                inf.records_sampled,
            )),
            Some(inf) => {
                let mut how = vec![
                    format!("delimiter {}", util::show_char(delimiter)),
                    if inf.header {
                        "header line".to_string()
                    } else {
                        "no header line".to_string()
                    },
                ];
                // The quoting inference chose, where it is not the given one.
                let words = sluice::infer::quoting_words(&inf.dialect);
                let given = sluice::infer::quoting_words(&Dialect {
                    quote,
                    escape,
                    trim_around_quotes: false,
                    ..inf.dialect.clone()
                });
                how.extend(words.into_iter().filter(|w| !given.contains(w)));
                if inf.line_end == sluice::source::LineEnd::Cr {
                    how.push("line ends a lone CR (classic Mac OS)".into());
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
            None => text.push_str(&format!("delimiter {}\n", util::show_char(delimiter))),
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
            return Ok(());
        }
        eprint!("{text}");
    }
    let schema = Some(schema);
    let total_bytes: Option<u64> = inputs.iter().map(|i| i.len()).sum();
    // A stream (standard input, a pipe) read when Ctrl-C comes may have
    // been cut short: its group is dropped, which the message says.
    let streams = inputs.iter().any(|i| match i {
        sluice::source::Input::Stdin => true,
        sluice::source::Input::File(p) => !std::fs::metadata(p).is_ok_and(|m| m.is_file()),
    });
    let stop = stop_on_interrupt(streams);
    let progress = Arc::new(Progress::default());
    let opts = LoadOptions {
        schema,
        dialect: Dialect {
            delimiter,
            ..dialect
        },
        format: match json {
            Some(shape) => Format::Json(JsonFormat {
                shape,
                ignore_unknown: a.ignore_unknown,
            }),
            None => Format::Delimited,
        },
        header,
        skip: a.skip,
        values: sluice::batch::ValueOptions {
            null: a.null.into_bytes(),
            date_format: a.date_format,
            timestamp_format: a.timestamp_format,
            // Values the samples did not see must fit as written.
            exact: inferred
                .as_ref()
                .map(|i| i.exact.clone())
                .unwrap_or_default(),
        },
        threads,
        memory_limit: util::parse_size(&a.memory_limit, "--memory-limit")?,
        block_size: a
            .block_size
            .as_deref()
            .map(|b| util::parse_size(b, "--block-size").map(|v| v as usize))
            .transpose()?,
        max_line_size: util::parse_size(&a.max_line_size, "--max-line-size")? as usize,
        progress: Some(progress.clone()),
        cancel: None,
        stop: Some(stop.clone()),
        commit_every: util::parse_commit_every(&a.commit_every)?,
        reload: if a.reload {
            sluice::load::Reload::All
        } else if a.reload_changed {
            sluice::load::Reload::Changed
        } else {
            sluice::load::Reload::None
        },
        on_error,
        rejects: a.rejects.clone(),
        max_errors: a.max_errors,
        allow_missing_columns: a.allow_missing_columns,
        encoding,
        line_end,
        leading_comment,
        columns: column_refs,
        match_by_name: a.match_by_name,
        json_rows: a.json_rows,
        key: a.key.clone(),
        compression: a.compression.as_deref().map(str::parse).transpose()?,
        key_budget: None,
        shards: a.shards,
        shard_by: a.shard_by.clone(),
        shard_paths: a.shard_paths.clone(),
        // Types the samples chose widen when a later value contradicts
        // them, until the load's first commit.
        widen: inferred
            .as_ref()
            .map(|i| i.widen.clone())
            .unwrap_or_default(),
        on_duplicate: match a.on_duplicate {
            OnDuplicateArg::Error => sluice::load::OnDuplicate::Error,
            OnDuplicateArg::Skip => sluice::load::OnDuplicate::Skip,
        },
    };
    let mut db = Database::open_writer(db_dir)
        .with_context(|| format!("opening database {}", db_dir.display()))?;
    let show_bar = !quiet && std::io::stderr().is_terminal();
    let bar =
        show_bar.then(|| util::spawn_progress(progress.clone(), total_bytes, inputs.len() as u64));
    let result = load(&mut db, &a.table, &inputs, &opts);
    if let Some((stop, handle)) = bar {
        stop.store(true, Ordering::Relaxed);
        let _ = handle.join();
    }
    let summary = match (result, &inferred) {
        (Ok(s), _) => s,
        // Ctrl-C while a stream was read: its group is dropped.
        (Err(sluice::Error::Cancelled), _) => {
            eprintln!(
                "error: loading table {}: stopped while reading a stream (standard input or a pipe), which may have been cut short: nothing of its group was committed",
                a.table
            );
            std::process::exit(130);
        }
        (
            Err(sluice::Error::PartlyLoaded {
                committed, cause, ..
            }),
            _,
        ) if matches!(*cause, sluice::Error::Cancelled) => {
            eprintln!(
                "error: loading table {}: stopped while reading a stream (standard input or a pipe), which may have been cut short: its group was not committed ({committed} files committed before it; run the same command again to load the rest)",
                a.table
            );
            std::process::exit(130);
        }
        // A malformed record: a hint that fits the error, if one does.
        (Err(e @ sluice::Error::Parse { .. }), _) if sniffed.is_none() => {
            let hint = parse_hint(
                &e,
                &HintContext {
                    inferred: inferred.as_ref(),
                    types: &parse_types(&a.types)?,
                    opts: &opts,
                    skip: a.skip,
                },
            );
            bail!(
                "loading table {}; nothing was committed: {e}{}",
                a.table,
                hint_line(hint.as_deref())
            )
        }
        (
            Err(
                e @ (sluice::Error::NotDurable(_)
                | sluice::Error::PartlyLoaded { .. }
                | sluice::Error::NotWidened { .. }),
            ),
            _,
        ) => {
            return Err(anyhow::Error::new(e).context(format!("loading table {}", a.table)));
        }
        (Err(e), _) if sniffed.is_some() => bail!(
            "loading table {}; nothing was committed: {e}{}",
            a.table,
            hint_line(sniffed.as_deref())
        ),
        (Err(e), _) => {
            return Err(anyhow::Error::new(e)
                .context(format!("loading table {}; nothing was committed", a.table)));
        }
    };
    print_summary(&summary, a.rejects.as_deref(), a.json, quiet)?;
    if summary.files_left > 0 || stop.load(Ordering::Relaxed) {
        // Stopped by Ctrl-C: what was read is committed, but the load may
        // not be complete; scripts must not go on as if it were.
        std::io::stdout().flush()?;
        std::process::exit(130);
    }
    Ok(())
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

/// Parses `--types` values: "a=INT,b=DECIMAL(12,2)" (commas inside
/// parentheses belong to the type).
/// What `load --dry-run --json` prints (its shape is in `--help`).
fn dry_run_json(
    table: &str,
    schema: &sluice::batch::Schema,
    delimiter: u8,
    json: Option<JsonShape>,
    inferred: Option<&sluice::infer::Inferred>,
) -> serde_json::Value {
    serde_json::json!({
        "dry_run": true,
        "table": table,
        "format": match json {
            None => "csv",
            Some(JsonShape::Lines) => "jsonl",
            Some(JsonShape::Array | JsonShape::Values) => "json",
        },
        "delimiter": json.is_none().then(|| (delimiter as char).to_string()),
        "schema": schema.to_string(),
        "inferred": inferred.map(|inf| serde_json::json!({
            "samples": inf.samples,
            "files_sampled": inf.files_sampled,
            "records_sampled": inf.records_sampled,
            "header": inf.header,
        })),
    })
}

fn parse_types(args: &[String]) -> Result<Vec<(String, sluice::batch::DataType)>> {
    let mut out = Vec::new();
    for arg in args {
        let parts = sluice::batch::split_top_level(arg);
        for p in parts.into_iter().filter(|p| !p.trim().is_empty()) {
            let Some((name, ty)) = p.split_once('=') else {
                bail!("--types {p:?}: expected COLUMN=TYPE, e.g. price=DECIMAL(12,2)");
            };
            let ty = ty
                .trim()
                .parse()
                .with_context(|| format!("--types {p:?}"))?;
            out.push((name.trim().to_string(), ty));
        }
    }
    Ok(out)
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
        if !s.empty_files.is_empty() {
            writeln!(out, "{}", empty_files_line(&s.empty_files))?;
        }
        for w in &s.widened {
            writeln!(out, "{w}; the load started over")?;
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

/// The tables named (one, or all).
fn tables_of<'a>(
    db: &'a Database,
    db_dir: &std::path::Path,
    table: Option<&str>,
) -> Result<Vec<(&'a String, &'a sluice::store::TableMeta)>> {
    let m = db.manifest();
    Ok(match table {
        Some(t) => match m.tables.get_key_value(&t.to_ascii_lowercase()) {
            Some(kv) => vec![kv],
            None => bail!("no table named {t:?} in {}", db_dir.display()),
        },
        None => m.tables.iter().collect(),
    })
}

fn cmd_loads(db_dir: &PathBuf, table: Option<&str>, json: bool) -> Result<()> {
    let db = Database::open(db_dir)?;
    let mut out = std::io::stdout().lock();
    let mut all = Vec::new();
    for (name, t) in tables_of(&db, db_dir, table)? {
        let mut journals = Vec::new();
        for l in &t.loads {
            journals.push(sluice::store::LoadJournal::read(db.dir(), l)?);
        }
        if json {
            all.push(serde_json::json!({ "table": name, "loads": journals }));
            continue;
        }
        if journals.is_empty() {
            writeln!(out, "{name}: no loads recorded")?;
        }
        for (j, l) in journals.iter().zip(&t.loads) {
            writeln!(
                out,
                "{name}: commit {} at {}: {} file{}, {} rows",
                j.version,
                util::utc_time(j.committed_at),
                j.files.len(),
                if j.files.len() == 1 { "" } else { "s" },
                l.rows
            )?;
            for f in &j.files {
                writeln!(
                    out,
                    "  {}  {}, {} rows{}, crc32 {:08x}",
                    f.path,
                    util::human_bytes(f.size),
                    f.rows,
                    if f.rejected > 0 {
                        format!(", {} rejected", f.rejected)
                    } else {
                        String::new()
                    },
                    f.crc32
                )?;
            }
        }
    }
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&all)?)?;
    }
    Ok(())
}

/// Prints what `check` found; exits 1 when anything is damaged (the
/// manifest itself included), 2 when it cannot check at all.
fn cmd_check(db_dir: &PathBuf, table: Option<&str>, json: bool) -> Result<()> {
    // A manifest that fails its own checks is damage that check reports,
    // not a failure to run.
    let mut damaged_db: Vec<String> = Vec::new();
    let mut reports = Vec::new();
    let mut leftovers = Vec::new();
    let mut writer = None;
    match Database::open(db_dir) {
        Err(e @ sluice::Error::Corrupt { .. }) => damaged_db.push(e.to_string()),
        Err(e) => return Err(e.into()),
        Ok(db) => {
            let exists = table.is_none_or(|t| db.table(t).is_some());
            leftovers = match db.leftovers(table) {
                Err(e @ sluice::Error::Corrupt { .. }) => {
                    damaged_db.push(e.to_string());
                    Vec::new()
                }
                other => other?,
            };
            writer = db.live_writer();
            // A table whose first load never committed has only leftovers.
            if exists || leftovers.is_empty() {
                for (name, _) in tables_of(&db, db_dir, table)? {
                    match db.check(name) {
                        Err(e @ sluice::Error::Corrupt { .. }) => damaged_db.push(e.to_string()),
                        other => reports.push(other?),
                    }
                }
            }
        }
    }
    // Why files no manifest names are there.
    let why = match writer {
        Some(w) => format!(
            "a writer{} holds the database: files of its load or merge in progress",
            w.pid.map(|p| format!(", pid {p},")).unwrap_or_default()
        ),
        None => "left by an interrupted load or merge; the next load removes them".to_string(),
    };
    let mut out = std::io::stdout().lock();
    if json {
        let v = serde_json::json!({
            "tables": reports,
            "problems": damaged_db,
            "leftovers": leftovers,
            "writer": writer,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        for p in &damaged_db {
            writeln!(out, "damaged: {p}")?;
        }
        for r in &reports {
            writeln!(
                out,
                "{}: {} segment{}, {} key-index run{}, {} load journal{} ({}): {}",
                r.table,
                r.segments,
                if r.segments == 1 { "" } else { "s" },
                r.runs,
                if r.runs == 1 { "" } else { "s" },
                r.journals,
                if r.journals == 1 { "" } else { "s" },
                util::human_bytes(r.bytes),
                if r.problems.is_empty() {
                    "ok".to_string()
                } else {
                    format!(
                        "{} problem{}",
                        r.problems.len(),
                        if r.problems.len() == 1 { "" } else { "s" }
                    )
                }
            )?;
            for p in &r.problems {
                writeln!(out, "  damaged: {p}")?;
            }
            if !r.unnamed.is_empty() {
                writeln!(
                    out,
                    "  {} file{} not named by the manifest ({why}): {}",
                    r.unnamed.len(),
                    if r.unnamed.len() == 1 { "" } else { "s" },
                    r.unnamed.join(", ")
                )?;
            }
        }
        if !leftovers.is_empty() {
            writeln!(
                out,
                "{} file{} of no committed table ({why}): {}",
                leftovers.len(),
                if leftovers.len() == 1 { "" } else { "s" },
                leftovers.join(", ")
            )?;
        }
    }
    let damaged = damaged_db.len() + reports.iter().map(|r| r.problems.len()).sum::<usize>();
    if damaged > 0 {
        out.flush()?;
        drop(out);
        std::process::exit(1);
    }
    Ok(())
}

fn cmd_info(db_dir: &PathBuf, table: Option<&str>, json: bool) -> Result<()> {
    let db = Database::open(db_dir)?;
    let m = db.manifest();
    let tables: Vec<(&String, &sluice::store::TableMeta)> = match table {
        Some(t) => {
            let key = t.to_ascii_lowercase();
            match m.tables.get_key_value(&key) {
                Some(kv) => vec![kv],
                None => bail!("no table named {t:?} in {}", db_dir.display()),
            }
        }
        None => m.tables.iter().collect(),
    };
    // A shard on a disk that is not mounted: say so, not its row counts.
    for (name, _) in &tables {
        db.check_shard_dirs(name)?;
    }
    let mut out = std::io::stdout().lock();
    if json {
        let v: Vec<_> = tables
            .iter()
            .map(|(name, t)| {
                serde_json::json!({
                    "table": name,
                    "schema": t.schema.to_string(),
                    "columns": t.schema.columns,
                    "rows": t.rows(),
                    "bytes": t.bytes(),
                    "segments": t.segments.len(),
                    "key": t.schema.key_column().map(|k| t.schema.columns[k].name.clone()),
                    "index_runs": t.runs.len(),
                    "sharding": t.sharding,
                    "shards": t.shard_stats().iter().enumerate().map(|(i, s)| serde_json::json!({
                        "shard": i, "rows": s.rows, "bytes": s.bytes,
                        "segments": s.segments, "index_runs": s.runs,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(());
    }
    if tables.is_empty() {
        writeln!(out, "no tables in {}", db_dir.display())?;
    }
    for (name, t) in tables {
        let runs = match t.runs.len() {
            0 => String::new(),
            1 => ", 1 key-index run".to_string(),
            n => format!(", {n} key-index runs"),
        };
        writeln!(
            out,
            "{name}: {} rows, {} on disk, {} segment{}{runs}",
            t.rows(),
            util::human_bytes(t.bytes()),
            t.segments.len(),
            if t.segments.len() == 1 { "" } else { "s" }
        )?;
        for c in &t.schema.columns {
            let key = if c.primary_key { " PRIMARY KEY" } else { "" };
            writeln!(out, "  {:<24} {}{key}", c.name, c.data_type)?;
        }
        if let Some(sh) = &t.sharding {
            let how = match &sh.by {
                Some(c) => format!("by hash of {c}"),
                None => "round-robin".to_string(),
            };
            let place = if sh.paths.is_empty() {
                String::new()
            } else {
                format!(", on {}", sh.paths.join(", "))
            };
            writeln!(out, "  {} shards, {how}{place}:", sh.count)?;
            for (i, s) in t.shard_stats().iter().enumerate() {
                writeln!(
                    out,
                    "    shard {i:<3} {:>12} rows {:>10} {:>4} segment{}",
                    s.rows,
                    util::human_bytes(s.bytes),
                    s.segments,
                    if s.segments == 1 { "" } else { "s" }
                )?;
            }
        }
    }
    Ok(())
}

fn cmd_get(
    db_dir: &std::path::Path,
    table: &str,
    mut keys: Vec<String>,
    keys_file: Option<PathBuf>,
    format: Option<query::Format>,
) -> Result<()> {
    if let Some(p) = &keys_file {
        let text = if p.as_os_str() == "-" {
            std::io::read_to_string(std::io::stdin()).context("reading keys from standard input")?
        } else {
            std::fs::read_to_string(p)
                .with_context(|| format!("reading keys from {}", p.display()))?
        };
        keys.extend(
            text.lines()
                .map(|l| l.trim_end_matches('\r'))
                .filter(|l| !l.is_empty())
                .map(str::to_string),
        );
    }
    if keys.is_empty() {
        bail!("no keys given (pass them as arguments or with --keys FILE)");
    }
    let db = Database::open(db_dir)?;
    let t = db.keyed(table)?;
    // A key that is not a value of the key's type is reported, and the
    // others are still looked up.
    let mut bad = 0usize;
    keys.retain(|k| match t.encode_key(k) {
        Ok(_) => true,
        Err(e) => {
            eprintln!("error: {e}");
            bad += 1;
            false
        }
    });
    let rows = t.get_many(&keys)?;
    let format = query::pick_format(format);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    query::write_result(&mut out, &rows.schema(), &[rows], format)?;
    out.flush().context("writing the result")?;
    if bad > 0 {
        // Each bad key had its error line; the rows of the others are out.
        drop(out);
        std::process::exit(2);
    }
    Ok(())
}

fn cmd_export(
    db_dir: &PathBuf,
    table: &str,
    output: Option<PathBuf>,
    delimiter: &str,
    header: bool,
) -> Result<()> {
    let d = util::parse_char(delimiter, "--delimiter")?;
    let db = Database::open(db_dir)?;
    let meta = db
        .table(table)
        .with_context(|| format!("no table named {table:?} in {}", db_dir.display()))?;
    let names: Vec<String> = meta.schema.columns.iter().map(|c| c.name.clone()).collect();
    let mut out: Box<dyn Write> = match &output {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    if header {
        let cells: Vec<Option<String>> = names.into_iter().map(Some).collect();
        util::write_csv_row(&mut out, &cells, d)?;
    }
    for batch in db.scan(table)? {
        let batch = batch?;
        let mut cells = Vec::with_capacity(batch.num_columns());
        for r in 0..batch.num_rows() {
            cells.clear();
            cells.extend(
                batch
                    .columns()
                    .iter()
                    .map(|c| sluice::batch::format_value(c.as_ref(), r)),
            );
            util::write_csv_row(&mut out, &cells, d)?;
        }
    }
    out.flush()?;
    Ok(())
}

/// How often the progress bar redraws.
const PROGRESS_TICK: Duration = Duration::from_millis(100);

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_definition_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
