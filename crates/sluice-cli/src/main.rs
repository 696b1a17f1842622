//! The `sluice` command-line tool: the command line's definition, parsed
//! and dispatched to `commands/` (one module a subcommand) and `bench/`
//! (the benchmark scenarios).

mod bench;
mod commands;
mod generate;
mod output;
mod util;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Parser, Subcommand};

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
    #[command(after_help = commands::load::EXAMPLES)]
    Load(commands::load::LoadArgs),
    /// Convert CSV, TSV or JSON files straight to a Parquet dataset (no
    /// table), optionally in buckets by a key's hash, the key checked unique
    #[command(after_help = commands::load::convert::EXAMPLES)]
    Convert(commands::load::convert::ConvertArgs),
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
    #[command(after_help = commands::query::EXAMPLES)]
    Query {
        /// The SQL text; `-` reads it from standard input
        sql: String,
        /// Output format (default: table on a terminal, csv otherwise;
        /// EXPLAIN prints text, or with csv/json one row a plan line in a
        /// `plan` column)
        #[arg(long, value_enum)]
        format: Option<output::Format>,
        /// Print the run time and scan statistics to stderr
        #[arg(long)]
        timing: bool,
        /// Write the result to this file instead (Parquet, CSV or JSON
        /// lines, by its extension: .parquet, .csv, .jsonl), atomically
        #[arg(long, short)]
        output: Option<std::path::PathBuf>,
        /// The most memory the query's hash tables, aggregates, sorts and
        /// result may hold (e.g. 512MiB, 4GiB; default: 80% of the
        /// machine's memory); past it a GROUP BY writes its groups, a
        /// join by keys its rows and partitions, an ORDER BY sorted runs,
        /// a window by PARTITION BY its rows by partition, a window
        /// without it its sorted rows, a set operation its rows by hash
        /// and the answer its rows past half the limit (printed from
        /// there), to disk (--temp-dir) and finishes; other operators
        /// stop the query with an error naming the operator
        #[arg(long, value_name = "SIZE")]
        memory_limit: Option<String>,
        /// Where a query past --memory-limit writes what does not fit
        /// (default: tmp in the database directory); a directory of the
        /// query's own, removed when it ends, and holding at most nine
        /// tenths of the space free there when the query began to spill
        #[arg(long, value_name = "DIR")]
        temp_dir: Option<PathBuf>,
    },
    /// Write a table's rows: CSV on standard output, one file, or a
    /// Hive-partitioned dataset of Parquet, CSV or JSON-lines files
    Export(commands::export::ExportArgs),
    /// Print the rows of a keyed table with the given keys (missing keys
    /// print nothing). A key that is not a value of the key's type is
    /// reported on stderr and the others are printed; the exit status is
    /// then 2
    #[command(after_help = commands::get::EXAMPLES)]
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
        format: Option<output::Format>,
    },
    /// Serve the database over the PostgreSQL protocol (psql, psycopg,
    /// JDBC, BI tools), read-only
    #[command(after_help = commands::serve::EXAMPLES)]
    Serve(commands::serve::ServeArgs),
    /// Merge the key-index runs of a keyed table into one (loads merge runs of similar size as they go)
    #[command(after_help = "Examples:\n  sluice compact objects")]
    Compact { table: String },
    /// Generate benchmark data
    #[command(
        after_help = "Examples:\n  sluice gen ints --size 100MB --output ints.csv\n  sluice gen ints --rows 1000000 --output -\n  sluice gen objects --size 220MB --output rows.jsonl   # the JSON input benchmark\n  sluice gen objects --size 220MB --tsv --output rows.tsv  # the same rows as TSV"
    )]
    Gen {
        #[command(subcommand)]
        what: commands::r#gen::GenCommand,
    },
    /// Generate a sample CSV, load it, print the rates, read it back
    #[command(after_help = "Examples:\n  sluice demo\n  sluice demo --rows 200000 --threads 1")]
    Demo(commands::demo::DemoArgs),
    /// Run a benchmark scenario (peers too, when installed) and print a table
    #[command(
        after_help = "Examples:\n  sluice bench all --quick                # every scenario, small, then the report\n  sluice bench ingest --json-out results/ingest.json\n  sluice bench report --input results --output report\n  sluice bench ingest --size 128MB --runs 3 --threads-list 1,2,64\n  sluice bench secondary-index --files 200 --rows 100000\n  sluice bench resume --settings all,1GiB,64MiB --kill-at 0.5\n  sluice bench shards --shards 1,2,4,8 --threads-list 1,2\n  sluice bench serve --clients 1,8,128 --runs 1"
    )]
    Bench(bench::BenchArgs),
}

fn main() -> ExitCode {
    sluice::exec::tune_allocator();
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
        Command::Load(args) => commands::load::run(&cli.db, cli.threads, cli.quiet, args),
        Command::Convert(args) => commands::load::convert::run(cli.threads, cli.quiet, args),
        Command::Info { table, json, loads } => {
            commands::info::run(&cli.db, table.as_deref(), json, loads)
        }
        Command::Check { table, json } => commands::check::run(&cli.db, table.as_deref(), json),
        Command::Query {
            sql,
            format,
            timing,
            output,
            memory_limit,
            temp_dir,
        } => commands::query::run(
            &cli.db,
            &sql,
            cli.threads,
            format,
            timing,
            output.as_deref(),
            memory_limit.as_deref(),
            temp_dir.as_deref(),
        ),
        Command::Export(args) => commands::export::run(&cli.db, cli.threads, cli.quiet, args),
        Command::Get {
            table,
            keys,
            keys_file,
            format,
        } => commands::get::run(&cli.db, &table, keys, keys_file, format),
        Command::Serve(args) => commands::serve::run(&cli.db, cli.threads, cli.quiet, args),
        Command::Compact { table } => commands::compact::run(&cli.db, &table, cli.quiet),
        Command::Gen { what } => commands::r#gen::run(what, &cli.db, cli.threads),
        // Both make databases of their own (removed and made again):
        // a --db given would be ignored, or worse.
        Command::Demo(_) | Command::Bench(_) if db_given => bail!(
            "--db {}: {} makes a database of its own (demo: in a temporary directory, or under --keep DIR; bench: under --dir DIR) and never touches another; drop --db",
            cli.db.display(),
            if matches!(cli.command, Command::Demo(_)) {
                "demo"
            } else {
                "bench"
            }
        ),
        Command::Demo(args) => commands::demo::run(args, cli.threads),
        Command::Bench(args) => bench::run(args, cli.quiet),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_definition_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
