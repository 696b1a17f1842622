//! `sluice serve`: the database over the PostgreSQL protocol.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;

/// The examples of `--help`.
pub const EXAMPLES: &str = "Examples:
  sluice serve                                  # 127.0.0.1:5433, the database sluice.db
  psql -h 127.0.0.1 -p 5433 -c \"SELECT count(*) FROM sales\"
  sluice serve --db /data/sales.db --listen 127.0.0.1:6000 --statement-timeout 30s

Read-only: every query sees the last commit when it starts (a load in another
process shows up in the next query). Simple and extended protocol, text and
binary results, $1 parameters, SET/SHOW/BEGIN/COMMIT, psql's \\dt and \\d TABLE.
Not yet: passwords, TLS; so it listens on loopback addresses only.";

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port and prints it)
    #[arg(long, default_value = "127.0.0.1:5433")]
    pub listen: SocketAddr,
    /// Connections beyond this are refused (SQLSTATE 53300)
    #[arg(long, default_value_t = 1000)]
    pub max_connections: usize,
    /// A query's time limit (e.g. 500ms, 30s, 5min; 0: none); a session's
    /// SET statement_timeout overrides it
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    pub statement_timeout: Duration,
    /// Scans run at once (key lookups never wait for them; default: half
    /// the cores, at least 1)
    #[arg(long)]
    pub scans_at_once: Option<usize>,
    /// Scans that may wait for their turn; more are refused (SQLSTATE 53000)
    #[arg(long, default_value_t = 1024)]
    pub queue: usize,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    sluice_server::session::timeout_ms(s)
        .map(Duration::from_millis)
        .map_err(|e| e.message)
}

pub fn run(db: &Path, threads: Option<usize>, quiet: bool, args: ServeArgs) -> Result<()> {
    let mut opts = sluice_server::Options::new(db, args.listen);
    opts.max_connections = args.max_connections;
    opts.statement_timeout = (!args.statement_timeout.is_zero()).then_some(args.statement_timeout);
    opts.scans_at_once = args.scans_at_once;
    opts.queue = args.queue;
    opts.threads = threads;
    sluice_server::run(opts, |addr, engine| {
        if !quiet {
            let tables = engine
                .snapshot()
                .map(|d| d.manifest().tables.len())
                .unwrap_or(0);
            eprintln!(
                "sluice serve: listening on {addr} (database {}, {tables} table{}); try: psql -h {} -p {} -c \"SELECT 1\"",
                db.display(),
                if tables == 1 { "" } else { "s" },
                addr.ip(),
                addr.port()
            );
        }
    })
    .map_err(|f| anyhow::anyhow!("{}", f.message))
}
