//! `sluice serve`: the database over the PostgreSQL protocol.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

/// The examples of `--help`.
pub const EXAMPLES: &str = "Examples:
  sluice serve                                  # 127.0.0.1:5433, the database sluice.db
  psql -h 127.0.0.1 -p 5433 -c \"SELECT count(*) FROM sales\"
  sluice serve --db /data/sales.db --listen 127.0.0.1:6000 --statement-timeout 30s


With passwords (SCRAM-SHA-256; the users file keeps verifiers, never passwords):
  echo 'a secret' | sluice serve --add-user ada     # writes sluice.db/serve.users
  sluice serve --auth scram-sha-256 --listen 0.0.0.0:5433 --tls-cert cert.pem --tls-key key.pem
  psql \"host=db.example port=5433 user=ada sslmode=require\"

Read-only: every query sees the last commit when it starts (a load in another
process shows up in the next query). Simple and extended protocol, text and
binary results, $1 parameters, SET/SHOW/BEGIN/COMMIT, psql's \\dt and \\d TABLE.
--auth trust (the default) listens on loopback addresses only.";

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Address to listen on, HOST:PORT (an IP address or a name such as
    /// localhost; port 0 picks a free port and prints it)
    #[arg(long, default_value = "127.0.0.1:5433", value_parser = listen_address)]
    pub listen: SocketAddr,
    /// Connections beyond this are refused (SQLSTATE 53300)
    #[arg(long, default_value_t = 1000)]
    pub max_connections: usize,
    /// A query's time limit (e.g. 500ms, 30s, 5min; 0: none); a session's
    /// SET statement_timeout overrides it
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    pub statement_timeout: Duration,
    /// The most memory all running queries may hold together (hash
    /// tables, aggregates, sorts, results; e.g. 8GiB; default: 80% of the
    /// machine's memory); a query that would pass it spills what it can,
    /// waits for the others' memory (--memory-wait), or fails with
    /// SQLSTATE 53200 and the server serves the next
    #[arg(long, value_name = "SIZE")]
    pub memory_limit: Option<String>,
    /// How long a query that ran out of memory while other queries held
    /// some waits for them to give it back, then runs again (e.g. 500ms,
    /// 30s; 0: it fails at once with SQLSTATE 53200)
    #[arg(long, default_value = "60s", value_parser = parse_wait)]
    pub memory_wait: Duration,
    /// Where queries past --memory-limit write what does not fit
    /// (default: tmp in the database directory); each query's own
    /// directory, removed when it ends
    #[arg(long, value_name = "DIR")]
    pub temp_dir: Option<PathBuf>,
    /// Scans run at once (key lookups never wait for them; default: half
    /// the cores, at least 1)
    #[arg(long)]
    pub scans_at_once: Option<usize>,
    /// Scans that may wait for their turn; more are refused (SQLSTATE 53000)
    #[arg(long, default_value_t = 1024)]
    pub queue: usize,
    /// How clients authenticate: trust (anyone; loopback addresses only),
    /// password (clear text: use TLS) or scram-sha-256, both against the
    /// users file
    #[arg(long, default_value = "trust")]
    pub auth: sluice_server::auth::Auth,
    /// The users file (default: serve.users in the database directory)
    #[arg(long)]
    pub users: Option<PathBuf>,
    /// Add (or change) user NAME in the users file, its password read from
    /// standard input, and exit
    #[arg(long, value_name = "NAME")]
    pub add_user: Option<String>,
    /// TLS certificate chain (PEM); with --tls-key, clients may use TLS
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM)
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Do not pin the connection threads to CPUs. By default each runs on
    /// one CPU and a connection is served by the thread of the CPU its
    /// packets arrive on (only when the process may use exactly as many
    /// CPUs as it has threads); pass this on a machine shared with other
    /// busy processes
    #[arg(long)]
    pub no_pin: bool,
    /// Microseconds a connection thread keeps polling its connections
    /// after it has answered, before it sleeps (0: sleep at once). A client
    /// that sends its next statement within it finds the thread awake:
    /// one client's point selects go about twice as fast, for up to this
    /// much CPU spent after each answer. Only while no scan runs and the
    /// thread has at most 4 connections. At most 1000: while it polls, a
    /// thread sees only its sockets (a new connection or a scan's result
    /// waits for the budget to end)
    #[arg(long, default_value_t = 50, value_name = "US",
          value_parser = clap::value_parser!(u64).range(0..=1000))]
    pub spin_us: u64,
}

/// `--memory-wait`: a duration as `--statement-timeout` takes them.
fn parse_wait(s: &str) -> Result<Duration, String> {
    parse_duration(s)
        .map_err(|_| format!("{s:?} is not a duration (e.g. 500ms, 30s, 5min; 0: no wait)"))
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    sluice_server::session::timeout_ms(s)
        .map(Duration::from_millis)
        .map_err(|e| e.message)
}

/// `--listen`: an address, or a host name and port resolved to one (an
/// IPv4 address first, as most clients try `localhost` that way).
fn listen_address(s: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    let Some((host, port)) = s.rsplit_once(':') else {
        return Err(format!(
            "{s:?} is not HOST:PORT (e.g. 127.0.0.1:5433 or localhost:5433)"
        ));
    };
    let port: u16 = port
        .parse()
        .map_err(|_| format!("{port:?} in {s:?} is not a port number (0-65535)"))?;
    let found: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host:?}: {e}"))?
        .collect();
    found
        .iter()
        .find(|a| a.is_ipv4())
        .or(found.first())
        .copied()
        .ok_or_else(|| format!("{host:?} resolves to no address"))
}

pub fn run(db: &Path, threads: Option<usize>, quiet: bool, args: ServeArgs) -> Result<()> {
    let users_file = args.users.clone().unwrap_or_else(|| db.join("serve.users"));
    if let Some(name) = &args.add_user {
        return add_user(&users_file, name, quiet);
    }
    // A panic while serving a client is answered (XX000) and logged in one
    // line; the server goes on.
    sluice_server::log_panics_in_one_line();
    let mut opts = sluice_server::Options::new(db, args.listen);
    opts.auth = args.auth;
    if args.auth != sluice_server::auth::Auth::Trust {
        opts.users = sluice_server::auth::Users::read(&users_file)
            .map_err(|f| anyhow::anyhow!("{}", f.message))?;
    }
    if let (Some(c), Some(k)) = (&args.tls_cert, &args.tls_key) {
        opts.tls =
            Some(sluice_server::Tls::from_pem(c, k).map_err(|f| anyhow::anyhow!("{}", f.message))?);
    }
    if args.auth == sluice_server::auth::Auth::Password && opts.tls.is_none() && !quiet {
        eprintln!(
            "sluice serve: warning: --auth password without --tls-cert sends passwords in clear text; prefer scram-sha-256"
        );
    }
    opts.max_connections = args.max_connections;
    opts.statement_timeout = (!args.statement_timeout.is_zero()).then_some(args.statement_timeout);
    opts.scans_at_once = args.scans_at_once;
    opts.memory_limit = args
        .memory_limit
        .as_deref()
        .map(|s| crate::util::parse_size(s, "--memory-limit"))
        .transpose()?;
    if let Some(limit) = opts.memory_limit {
        // The process's memory held to what its queries count.
        sluice::exec::tune_allocator_for_limit(limit);
    }
    opts.memory_wait = args.memory_wait;
    opts.queue = args.queue;
    opts.temp_dir = args.temp_dir.clone();
    opts.threads = threads;
    opts.pin_threads = !args.no_pin;
    opts.spin = std::time::Duration::from_micros(args.spin_us);
    let (engine_auth, tls) = (opts.auth, opts.tls.is_some());
    sluice_server::run(opts, |addr, engine| {
        if !quiet {
            let tables = engine
                .snapshot()
                .map(|d| d.manifest().tables.len())
                .unwrap_or(0);
            eprintln!(
                "sluice serve: listening on {addr} (database {}, {tables} table{}, auth {}{}); try: psql -h {} -p {} -c \"SELECT 1\"",
                db.display(),
                if tables == 1 { "" } else { "s" },
                match engine_auth {
                    sluice_server::auth::Auth::Trust => "trust",
                    sluice_server::auth::Auth::Password => "password",
                    sluice_server::auth::Auth::Scram => "scram-sha-256",
                },
                if tls { ", TLS" } else { "" },
                addr.ip(),
                addr.port()
            );
        }
    })
    .map_err(|f| anyhow::anyhow!("{}", f.message))
}

/// `--add-user NAME`: reads the password (one line of standard input) and
/// writes the user's verifier.
fn add_user(file: &Path, name: &str, quiet: bool) -> Result<()> {
    use std::io::{BufRead, IsTerminal};
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprint!("password for {name} (shown as typed; or pipe it in): ");
    }
    let mut line = String::new();
    stdin
        .lock()
        .read_line(&mut line)
        .context("reading the password from standard input")?;
    let password = line.trim_end_matches(['\n', '\r']);
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    sluice_server::auth::Users::add(file, name, password)
        .map_err(|f| anyhow::anyhow!("{}", f.message))?;
    if !quiet {
        eprintln!(
            "sluice serve: user {name} written to {} (a SCRAM-SHA-256 verifier, not the password); serve with --auth scram-sha-256",
            file.display()
        );
    }
    Ok(())
}
