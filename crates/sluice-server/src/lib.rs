//! `sluice serve`: a read-only PostgreSQL-protocol (v3) server over a
//! sluice database directory.
//!
//! ```text
//!  accept ──► one async task per connection (pgwire: framing, startup,
//!             simple and extended protocol), on one of the connection
//!             threads (a single-threaded runtime a core, round robin)
//!               │ SET/SHOW/BEGIN/catalog ──► session.rs (answered at once)
//!               │ prepared point select ──► PointQuery (the key index)
//!               │ query ──► plan (on the connection's task)
//!               │   key lookup or no table ──► short lane: run right there
//!               │   scan ──► long lane: a bounded queue, then a blocking
//!               │            thread at nice 5 with the query's workers
//!               ▼
//!             rows encoded batch by batch (encode.rs)
//! ```
//!
//! Every query reads the last commit when it starts ([`Engine::snapshot`]):
//! the manifest's identity is checked per query and a new commit opens a
//! new handle. A query whose client goes away, is canceled or runs past
//! its time limit is stopped at its next morsel ([`sluice::query::Stop`]).
//! The protocol crate is pinned and used only in this crate.

pub mod auth;
pub mod cursor;
pub mod encode;
pub mod frames;
pub mod params;
pub mod place;
pub mod session;
pub mod spin;

use std::collections::HashMap;
use std::fmt::Debug;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use sluice::query::memory::Admission;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use async_trait::async_trait;
use futures::sink::{Sink, SinkExt};
use pgwire::api::auth::cleartext::CleartextPasswordAuth;
use pgwire::api::auth::mechanism::AuthMechanismFactory;
use pgwire::api::auth::sasl::scram::ScramAuth;
use pgwire::api::auth::{
    AuthDriver, AuthOutcome, DefaultServerParameterProvider, StartupHandler, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use pgwire::api::cancel::DefaultCancelHandler;
use pgwire::api::portal::{Format, Portal, PortalExecutionState};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{
    DescribePortalResponse, DescribeResponse, DescribeStatementResponse, FieldInfo, QueryResponse,
    Response, Tag,
};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{
    ClientInfo, ClientPortalStore, ConnectionHandle, ConnectionManager, DEFAULT_NAME,
    PgWireConnectionState, PgWireServerHandlers, Type,
};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::data::{NoData, ParameterDescription, RowDescription};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Close, CloseComplete, Describe, Execute, Parse, ParseComplete,
    PortalSuspended, TARGET_TYPE_BYTE_PORTAL, TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::startup::ParameterStatus;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use sluice::query::plan::Plan;
use sluice::query::point::PointQuery;
use sluice::query::{QueryOptions, Stop};
use sluice::store::Database;

use params::Params;
use session::Answer;

/// An error for the client: SQLSTATE and message.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct Failure {
    pub code: &'static str,
    pub message: String,
    /// FATAL closes the connection.
    pub fatal: bool,
}

impl Failure {
    pub fn new(code: &'static str, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
            fatal: false,
        }
    }

    pub fn syntax(message: impl Into<String>) -> Failure {
        Failure::new("42601", message)
    }

    pub fn internal(message: impl Into<String>) -> Failure {
        Failure::new("XX000", message)
    }
}

impl From<sluice::Error> for Failure {
    fn from(e: sluice::Error) -> Failure {
        Failure::new(e.sqlstate(), e.to_string())
    }
}

impl From<Failure> for PgWireError {
    fn from(f: Failure) -> PgWireError {
        let severity = if f.fatal { "FATAL" } else { "ERROR" };
        PgWireError::UserError(Box::new(ErrorInfo::new(
            severity.to_string(),
            f.code.to_string(),
            f.message,
        )))
    }
}

/// The most rows one Execute sends before PortalSuspended (a client
/// asking for more gets this many, then asks again).
pub const MAX_FETCH_ROWS: i32 = 1 << 16;

/// What a panic carried, as text.
fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

/// The failure a panic while serving a client becomes (SQLSTATE XX000):
/// the client is answered, the connection and the server go on. The panic
/// hook ([`log_panics_in_one_line`]) has logged it.
fn panic_failure(p: &(dyn std::any::Any + Send)) -> Failure {
    Failure::internal(format!("internal error: {}", panic_text(p)))
}

/// Runs one step of a connection (a protocol message's handling),
/// turning a panic in it into an error for the client (a [`Failure`] or
/// the protocol library's error made from one).
async fn guarded<T, E: From<Failure>>(
    f: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, E> {
    use futures::FutureExt;
    match std::panic::AssertUnwindSafe(f).catch_unwind().await {
        Ok(r) => r,
        Err(p) => Err(panic_failure(p.as_ref()).into()),
    }
}

/// Makes a panic on any thread of this process print one line to standard
/// error (`sluice serve: internal error on thread T at FILE:LINE: MESSAGE`)
/// instead of the default message and backtrace: a server that answers
/// the client and goes on logs one line for it. Installed once.
pub fn log_panics_in_one_line() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let thread = std::thread::current();
            let place = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            let line = format!(
                "sluice serve: internal error on thread {}{place}: {}",
                thread.name().unwrap_or("unnamed"),
                panic_text(info.payload()).replace('\n', " ")
            );
            eprintln!("{line}");
        }));
    });
}

/// An ErrorResponse message (SQLSTATE `code`), written straight to a
/// connection's socket when the protocol library itself gave up on it.
fn raw_error(code: &str, message: &str) -> Vec<u8> {
    let mut body = Vec::new();
    for (tag, v) in [
        (b'S', "ERROR"),
        (b'V', "ERROR"),
        (b'C', code),
        (b'M', message),
    ] {
        body.push(tag);
        body.extend_from_slice(v.replace('\0', " ").as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut out = vec![b'E'];
    out.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// How the server runs.
#[derive(Debug, Clone)]
pub struct Options {
    pub db: PathBuf,
    pub listen: SocketAddr,
    /// Connections beyond this are refused with SQLSTATE 53300.
    pub max_connections: usize,
    /// Scans run at once (the long lane); `None`: half the cores, at least 1.
    pub scans_at_once: Option<usize>,
    /// Scans waiting for the long lane beyond this are refused (53000).
    pub queue: usize,
    /// Workers of one scan (`None`: every core).
    pub threads: Option<usize>,
    /// A query's time limit unless the session sets `statement_timeout`.
    pub statement_timeout: Option<Duration>,
    /// The memory all queries running at once may hold together (hash
    /// tables, aggregates, sorts, results; see `sluice::query::memory`);
    /// a query that would pass it fails with SQLSTATE 53200 (after
    /// `memory_wait`, when other queries held memory). `None`: 80% of the
    /// machine's memory.
    pub memory_limit: Option<u64>,
    /// How long a query that ran out of the shared memory while others
    /// held some waits for room and runs again (admission; see
    /// `sluice::query::memory::Memory::admit`); zero: it fails at once.
    pub memory_wait: Duration,
    /// Where queries past the memory limit spill (see
    /// `sluice::query::spill`); `None`: `tmp` in the database directory.
    pub temp_dir: Option<PathBuf>,
    /// Fixed morsel size of scans (tests: many morsels, so a stop is seen
    /// soon); `None`: the engine's choice.
    pub morsel_rows: Option<usize>,
    /// How clients authenticate.
    pub auth: auth::Auth,
    /// The users `password` and `scram-sha-256` check.
    pub users: auth::Users,
    /// TLS (clients that ask for it; `None`: TLS refused).
    pub tls: Option<Tls>,
    /// Pin each connection thread to a CPU and give a connection to the
    /// thread of the CPU it came in on (see `place`); `false`: threads
    /// float, connections go round robin.
    pub pin_threads: bool,
    /// How long a connection thread polls its connections before it
    /// sleeps, after it has served what came (see `spin`); zero: it
    /// sleeps at once.
    pub spin: Duration,
}

/// A TLS configuration (certificate chain and key).
#[derive(Clone)]
pub struct Tls(pub pgwire::tokio::TlsAcceptor);

impl Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tls")
    }
}

impl Tls {
    /// Reads a PEM certificate chain and private key.
    pub fn from_pem(cert: &Path, key: &Path) -> Result<Tls, Failure> {
        use rustls_pki_types::pem::PemObject;
        use rustls_pki_types::{CertificateDer, PrivateKeyDer};
        let bad = |what: &Path, e: &dyn std::fmt::Display| {
            Failure::new("F0000", format!("--tls: {}: {e}", what.display()))
        };
        let certs = CertificateDer::pem_file_iter(cert)
            .map_err(|e| bad(cert, &e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(cert, &e))?;
        if certs.is_empty() {
            return Err(bad(cert, &"no certificate in the file"));
        }
        let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| bad(key, &e))?;
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let mut config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| bad(cert, &e))?
            .with_no_client_auth()
            .with_single_cert(certs, key_der)
            .map_err(|e| bad(key, &e))?;
        // What PostgreSQL 17's direct TLS negotiation asks for.
        config.alpn_protocols = vec![b"postgresql".to_vec()];
        Ok(Tls(tokio_rustls::TlsAcceptor::from(Arc::new(config))))
    }
}

impl Options {
    pub fn new(db: impl Into<PathBuf>, listen: SocketAddr) -> Options {
        Options {
            db: db.into(),
            listen,
            max_connections: 1000,
            scans_at_once: None,
            queue: 1024,
            threads: None,
            statement_timeout: None,
            memory_limit: None,
            memory_wait: Duration::from_secs(60),
            temp_dir: None,
            morsel_rows: None,
            auth: auth::Auth::Trust,
            users: auth::Users::default(),
            tls: None,
            pin_threads: true,
            spin: spin::DEFAULT,
        }
    }
}

thread_local! {
    /// A connection thread's own view of its engine's snapshots, by the
    /// engine's id (tests run several servers in one process).
    static LOCAL: std::cell::RefCell<Option<(u64, sluice::store::SnapshotView)>> =
        const { std::cell::RefCell::new(None) };
}

/// The database, its snapshots and the lanes queries run in; shared by
/// every connection.
pub struct Engine {
    /// Unique in the process.
    id: u64,
    opts: Options,
    snap: sluice::store::Snapshots,
    long: Arc<tokio::sync::Semaphore>,
    waiting: AtomicUsize,
    connections: AtomicUsize,
    /// Queries run since the start (for the log and tests).
    pub queries: AtomicUsize,
    /// Scans stopped before their end (canceled, timed out, client gone).
    pub stopped: Arc<AtomicUsize>,
    /// Queries run again after waiting for other queries' memory.
    pub memory_waits: Arc<AtomicUsize>,
    /// Scans running now.
    pub running: Arc<AtomicUsize>,
    /// The CPUs the last scan's thread (and so its workers) could run on:
    /// every CPU of the connection threads, never one of them alone.
    pub scan_cpus: Arc<std::sync::Mutex<Vec<usize>>>,
    /// Executions answered by binding a key into a prepared statement
    /// (its point query or its plan) instead of planning its SQL again.
    pub bound: AtomicUsize,
    /// Of those, the ones its point query answered from the key index
    /// alone ([`sluice::query::point::PointQuery`]).
    pub points: AtomicUsize,
    /// Connections handed to each connection thread since the start (by
    /// thread number).
    pub placed: Vec<AtomicUsize>,
    /// The CPU each connection thread is pinned to (thread `i` on the
    /// `i`-th; empty: not pinned; see [`place::plan`]).
    pub pinned: Vec<usize>,
    /// The users `--auth` checks.
    source: Arc<auth::Source>,
    /// The memory the queries reserve from, all together.
    pub memory: sluice::query::memory::Memory,
}

impl Engine {
    pub fn new(opts: Options) -> Result<Engine, Failure> {
        let snap = sluice::store::Snapshots::watched(&opts.db);
        // Opened now: a bad directory is an error at start, not at the
        // first query.
        snap.get()?;
        // What queries killed mid-spill left.
        sluice::query::spill::sweep(&opts.temp_dir.clone().unwrap_or_else(|| opts.db.join("tmp")));
        let lanes = opts
            .scans_at_once
            .unwrap_or_else(|| (sluice::exec::usable_cores() / 2).max(1));
        static IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        Ok(Engine {
            id: IDS.fetch_add(1, Ordering::Relaxed),
            snap,
            long: Arc::new(tokio::sync::Semaphore::new(lanes)),
            waiting: AtomicUsize::new(0),
            connections: AtomicUsize::new(0),
            queries: AtomicUsize::new(0),
            stopped: Arc::new(AtomicUsize::new(0)),
            memory_waits: Arc::new(AtomicUsize::new(0)),
            running: Arc::new(AtomicUsize::new(0)),
            scan_cpus: Arc::default(),
            bound: AtomicUsize::new(0),
            points: AtomicUsize::new(0),
            placed: (0..sluice::exec::usable_cores().max(1))
                .map(|_| AtomicUsize::new(0))
                .collect(),
            pinned: place::plan(
                sluice::exec::usable_cores(),
                opts.pin_threads,
                &place::allowed_cpus(),
            )
            .unwrap_or_default(),
            source: Arc::new(auth::Source::new(opts.users.clone())?),
            memory: sluice::query::memory::Memory::new(
                opts.memory_limit
                    .unwrap_or_else(sluice::query::memory::default_limit),
            ),
            opts,
        })
    }

    /// The database as of the last commit.
    pub fn snapshot(&self) -> Result<Arc<Database>, Failure> {
        let local = LOCAL.with(|l| match &mut *l.borrow_mut() {
            Some((id, view)) if *id == self.id => Some(view.get(&self.snap)),
            _ => None,
        });
        Ok(match local {
            Some(r) => r?,
            None => self.snap.get()?,
        })
    }

    /// The database a statement of a session with `settings` reads: the
    /// last commit, or, in a block at REPEATABLE READ or SERIALIZABLE, the
    /// one its first query read (kept in `held` when `pin`: the statement
    /// is a query), as PostgreSQL's transactions at those levels see one
    /// snapshot.
    fn snapshot_for(
        &self,
        settings: &std::collections::HashMap<String, String>,
        held: &Held,
        pin: bool,
    ) -> Result<Arc<Database>, Failure> {
        if pin && session::in_block(settings) {
            held.1.store(true, Ordering::Relaxed);
        }
        if !session::holds_snapshot(settings) {
            return self.snapshot();
        }
        let mut h = held.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(db) = h.as_ref() {
            return Ok(db.clone());
        }
        let db = self.snapshot()?;
        if pin {
            *h = Some(db.clone());
        }
        Ok(db)
    }

    /// `table` of `db` opened for key lookups: kept by this connection
    /// thread's view, else by the shared snapshots.
    fn keyed(
        &self,
        db: &Arc<Database>,
        table: &str,
    ) -> sluice::Result<Arc<sluice::store::KeyedTable<'static>>> {
        LOCAL.with(|l| match &mut *l.borrow_mut() {
            Some((id, view)) if *id == self.id => view.keyed(&self.snap, db, table),
            _ => self.snap.keyed(db, table),
        })
    }

    /// Makes the calling thread (a connection thread) keep its own view of
    /// this engine's snapshots ([`sluice::store::SnapshotView`]).
    fn keep_local_view(&self) {
        LOCAL.with(|l| *l.borrow_mut() = Some((self.id, self.snap.local())));
    }

    /// Connections open now.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::Relaxed)
    }

    /// A slot of the long lane (one of `--scans-at-once`), after a wait
    /// in its bounded queue (past `--queue`: 53000).
    async fn scan_slot(
        &self,
        long: &Arc<tokio::sync::Semaphore>,
    ) -> Result<tokio::sync::OwnedSemaphorePermit, Failure> {
        if self.waiting.fetch_add(1, Ordering::Relaxed) >= self.opts.queue {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            return Err(Failure::new(
                "53000",
                format!(
                    "too many queries waiting ({}); try again later",
                    self.opts.queue
                ),
            ));
        }
        // Counted out when the wait ends, or when this future is dropped
        // while it waits (a timeout, a cancel, a client gone): else its
        // place in the queue were lost for good.
        let in_queue = Waiting(&self.waiting);
        let permit = long.clone().acquire_owned().await;
        drop(in_queue);
        permit.map_err(|_| Failure::internal("the server is stopping"))
    }

    /// Plans and runs one query of the store on `db`.
    async fn run(
        &self,
        db: Arc<Database>,
        sql: &str,
        timeout: Option<Duration>,
        zone: String,
    ) -> Result<(SchemaRef, Rows), Failure> {
        let plan = sluice::query::plan::plan_sql_as_postgresql(sql, &Zoned(db.as_ref(), zone))?;
        self.run_plan(db, plan, timeout).await
    }

    /// Runs a planned query on `db`: a key lookup or a query without a
    /// table right here, a scan in the long lane.
    async fn run_plan(
        &self,
        db: Arc<Database>,
        plan: Plan,
        timeout: Option<Duration>,
    ) -> Result<(SchemaRef, Rows), Failure> {
        self.queries.fetch_add(1, Ordering::Relaxed);
        let schema = sluice::query::exec::result_schema(&plan);
        // A statement of constants (no table, join, set operation, window
        // or subquery), one of the catalog's small tables, or a lookup of
        // a few keys. Everything else — a join too — is a scan: threads,
        // a statement timeout, a cancel, and admission by memory; a join
        // of the catalog's tables (psql's `\d`) too, but without waiting
        // for a scan's slot, so a tool's questions never queue behind a
        // scan.
        let plain = plan.input.is_none() && !plan.init_plans;
        let constant = plan.table.is_none() && plain;
        let lookup = plan.key_lookup.as_ref().is_some_and(|k| k.len() <= 64) && plain;
        let catalog = plan.catalog.is_some();
        let short = constant || (catalog && plain) || lookup;
        if short && !plan.explain {
            // Key lookups, constants, a catalog table: microseconds, run
            // on this task (no hand-off), never behind a scan.
            let r = sluice::query::run_plan(
                &db,
                &plan,
                &QueryOptions {
                    threads: Some(1),
                    memory: Some(self.memory.clone()),
                    ..Default::default()
                },
            )?;
            return Ok((schema, Rows::of(r)));
        }
        let stop = Stop::default();
        // Dropped with this future: the client went away or canceled.
        let mut guard = CancelOnDrop(Some(stop.clone()));
        let threads = self.opts.threads;
        let morsel_rows = self.opts.morsel_rows;
        let memory = self.memory.clone();
        let spill_root = self
            .opts
            .temp_dir
            .clone()
            .unwrap_or_else(|| sluice::query::default_spill_root(&db));
        let work = {
            let stop = stop.clone();
            let long = self.long.clone();
            let stopped = self.stopped.clone();
            let memory_waits = self.memory_waits.clone();
            let memory_wait = self.opts.memory_wait;
            let running = self.running.clone();
            async move {
                let permit = if catalog {
                    None
                } else {
                    Some(self.scan_slot(&long).await?)
                };
                let cpus = self.pinned.clone();
                let scan_cpus = self.scan_cpus.clone();
                tokio::task::spawn_blocking(move || {
                    let _permit = permit;
                    let cpus = scan_thread(&cpus);
                    if let Ok(mut last) = scan_cpus.lock() {
                        *last = cpus;
                    }
                    let threads = if catalog { Some(1) } else { threads };
                    running.fetch_add(1, Ordering::Relaxed);
                    // The wait is counted from the first failure.
                    let mut deadline = None;
                    let mut waited = Duration::ZERO;
                    let mut mine = memory.for_query();
                    let r = loop {
                        let r = sluice::query::run_plan(
                            &db,
                            &plan,
                            &QueryOptions {
                                threads,
                                morsel_rows: Some(morsel_rows.unwrap_or(SCAN_MORSEL_ROWS)),
                                stop: Some(stop.clone()),
                                yield_between_morsels: true,
                                memory: Some(mine.clone()),
                                spill: Some(sluice::query::spill::Spill::new(spill_root.clone())),
                                // An answer past half the limit goes to
                                // disk, sent from there a frame at a time.
                                answer_to_disk: true,
                                ..Default::default()
                            },
                        );
                        // Out of the shared memory while other queries held
                        // some: wait for their room and run again (the query
                        // only reads; its snapshot is the same).
                        let Err(e @ sluice::Error::MemoryLimit { .. }) = r else {
                            break r;
                        };
                        if memory_wait.is_zero() {
                            break Err(e);
                        }
                        let now = std::time::Instant::now();
                        let until = *deadline.get_or_insert(now + memory_wait);
                        let is_stopped = || stop.is_set();
                        let admitted = memory.admit(mine, &e, until, &is_stopped);
                        waited += now.elapsed();
                        match admitted {
                            Admission::Retry(granted) => {
                                memory_waits.fetch_add(1, Ordering::Relaxed);
                                mine = granted;
                            }
                            Admission::Alone => break Err(e),
                            Admission::Stopped => {
                                break Err(stop.error().unwrap_or(e));
                            }
                            Admission::TimedOut => {
                                break Err(sluice::Error::MemoryWait {
                                    error: Box::new(e),
                                    waited,
                                });
                            }
                        }
                    };
                    // Counted as stopped before it stops counting as
                    // running: whoever sees it ended sees why.
                    if matches!(r, Err(sluice::Error::QueryCanceled(_))) {
                        stopped.fetch_add(1, Ordering::SeqCst);
                    }
                    running.fetch_sub(1, Ordering::SeqCst);
                    r
                })
                .await
                .map_err(|e| Failure::internal(format!("query worker: {e}")))?
                .map_err(Failure::from)
            }
        };
        let r = match timeout {
            Some(t) => match tokio::time::timeout(t, work).await {
                Ok(r) => r,
                Err(_) => {
                    stop.time_out();
                    guard.0 = None;
                    return Err(Failure::new(
                        "57014",
                        "canceling statement due to statement timeout",
                    ));
                }
            },
            None => work.await,
        };
        guard.0 = None;
        let r = r?;
        Ok((schema, Rows::of(r)))
    }
}

/// How much a scan's threads yield to the connection threads: a nice
/// value. When both want the cores, each scan thread gets about a third
/// of a connection thread's share (the kernel's weights for nice 5 and
/// 0: 335 and 1024), so point selects wait less behind a scan and the
/// scan still goes on; a scan alone on the machine keeps every core.
/// Measured with TPC-H Q1 beside 32 clients of point selects on 2 cores
/// (BENCHMARKS.md, serve): nice 0, 5 and 10 gave point-select p99 of
/// 5.3, 4.3 and 4.0 ms and 8, 5 and 3 Q1 a second.
pub const SCAN_NICE: i32 = 5;

/// Morsel size of a scan in the server, in rows, unless
/// [`Options::morsel_rows`] says otherwise. A scan's workers give their
/// CPU up between morsels (`sched_yield`), so a connection thread that
/// shares a CPU with one waits at most about one morsel, not a whole time
/// slice of the kernel's. The engine's own choice for a large table (64 Ki
/// rows, ~3 ms of TPC-H Q1 on one core) was too long a wait; measured on
/// 2 cores, 32 clients of point selects with Q1 in a loop beside them
/// (BENCHMARKS.md, serve): p99 2.2–3.6 ms with no yield, 0.8–3.1 ms
/// yielding between 64 Ki-row morsels, 0.6–1.5 ms (median 0.62) between
/// 16 Ki-row ones, for ~5 % on Q1 alone (33.5 → 35.3 ms).
pub const SCAN_MORSEL_ROWS: usize = 16 << 10;

/// Readies this thread, a blocking thread of the long lane that is about
/// to run a scan: it may have been started by a pinned connection thread
/// and inherited that one CPU, so it takes back `cpus` (every CPU of the
/// connection threads; empty: not pinned, nothing to undo), else all the
/// scan's workers, which inherit this thread's CPUs, would share one CPU
/// (TPC-H Q1 SF 1 on 2 cores: 63 ms instead of 32). Then it lowers its
/// priority (see [`yield_to_connections`]). Returns the CPUs it may run
/// on now.
fn scan_thread(cpus: &[usize]) -> Vec<usize> {
    if !cpus.is_empty() {
        place::set_current_thread_cpus(cpus);
    }
    yield_to_connections();
    place::allowed_cpus()
}

/// Lowers this thread (a blocking thread of the long lane, which only
/// scans use) to [`SCAN_NICE`]; the query's workers, started from it,
/// inherit it. Once lowered it stays so (raising it back takes a
/// privilege), and it is only ever a scan's thread.
fn yield_to_connections() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid and setpriority on this thread with plain integers.
    unsafe {
        let tid = libc::gettid();
        let now = libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t);
        if now < SCAN_NICE {
            let _ = libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, SCAN_NICE);
        }
    }
}

/// A query's place in the queue of scans, given back when dropped.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

struct CancelOnDrop(Option<Stop>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(s) = self.0.take() {
            s.cancel();
        }
    }
}

/// One statement as prepared by Parse.
#[derive(Debug, Clone)]
pub struct Prepared {
    sql: String,
    params: Params,
    /// The result columns; `None` for a statement without rows (SET).
    schema: Option<SchemaRef>,
    /// A query of the store (not a session statement answered here).
    store: bool,
    /// For a lookup of one key by a parameter: its plan.
    template: Option<Arc<Template>>,
}

/// A prepared `... WHERE key = $1`: planned once at Parse; each Execute
/// binds its key into the plan ([`Plan::with_key`]) instead of parsing
/// and planning the SQL again.
#[derive(Debug)]
struct Template {
    plan: Plan,
    /// The table's columns when planned: after a commit that changed
    /// them, the statement is planned from its SQL again.
    columns: sluice::batch::Schema,
    /// The plan as a point query, when it is no more than a lookup of
    /// its key: run without the executor.
    point: Option<PointQuery>,
}

impl Template {
    /// The template of `sql` when its one parameter is the key of a
    /// lookup of one key and nothing else: the plan with a second key
    /// bound must be exactly the plan of the SQL written with that key.
    fn of(params: &Params, sql: &str, db: &Database, zone: &str) -> Option<Template> {
        // A session in another zone than UTC plans each execution (the
        // point path gives instants in UTC).
        if params.types.len() != 1 || params.places() != 1 || !utc(zone) {
            return None;
        }
        let (a, b, key): (&str, &str, ArrayRef) = match params.types[0] {
            Type::INT2 | Type::INT4 | Type::INT8 => {
                ("0", "1", Arc::new(arrow_array::Int64Array::from(vec![1])))
            }
            Type::TEXT | Type::VARCHAR => (
                "''",
                "'a'",
                Arc::new(arrow_array::StringArray::from(vec!["a"])),
            ),
            _ => return None,
        };
        let plan_with = |v: &str| {
            sluice::query::plan::plan_sql_as_postgresql(
                &params.substitute(sql, &[v.to_string()]),
                db,
            )
            .ok()
        };
        let plan = plan_with(a)?;
        let bound = plan.with_key(&key)?;
        if format!("{bound:?}") != format!("{:?}", plan_with(b)?) {
            return None;
        }
        let columns = db.table(plan.table.as_deref()?)?.schema.clone();
        Some(Template {
            point: PointQuery::of(&plan),
            plan,
            columns,
        })
    }

    /// The plan with `portal`'s key bound, on `db`; `None` when the value
    /// is not one the template takes (NULL, another type) or the table's
    /// columns changed: the SQL path answers those.
    fn bind(&self, portal: &Portal<Prepared>, db: &Database) -> Option<Plan> {
        let value = self.key(portal)?;
        self.current(db).then(|| self.plan.with_key(&value))?
    }

    /// Whether the table still has the columns it had when planned.
    fn current(&self, db: &Database) -> bool {
        self.plan
            .table
            .as_deref()
            .and_then(|t| db.table(t))
            .is_some_and(|t| t.schema == self.columns)
    }

    /// `portal`'s key as a one-row array of the literal's type (BIGINT or
    /// TEXT); `None` for NULL, another type or a value that does not
    /// parse.
    fn key(&self, portal: &Portal<Prepared>) -> Option<ArrayRef> {
        let stmt = &portal.statement;
        let declared = stmt.parameter_types.first().cloned().flatten();
        let wire = match declared {
            Some(d) if d != Type::UNKNOWN => d,
            _ => stmt.statement.params.types.first()?.clone(),
        };
        let binary = match &portal.parameter_format {
            Format::UnifiedText => false,
            Format::UnifiedBinary => true,
            Format::Individual(c) if c.len() == 1 => c[0] == 1,
            Format::Individual(_) => return None,
        };
        // Another count of values is the SQL path's error (08P01).
        if portal.parameters.len() != 1 {
            return None;
        }
        let raw = portal.parameters.first()?.as_deref()?;
        let value: ArrayRef = match (wire, binary) {
            (Type::INT8, true) => int_array(i64::from_be_bytes(raw.try_into().ok()?)),
            (Type::INT4, true) => int_array(i32::from_be_bytes(raw.try_into().ok()?).into()),
            (Type::INT2, true) => int_array(i16::from_be_bytes(raw.try_into().ok()?).into()),
            (Type::INT2 | Type::INT4 | Type::INT8, false) => {
                int_array(std::str::from_utf8(raw).ok()?.parse().ok()?)
            }
            (Type::TEXT | Type::VARCHAR, _) => Arc::new(arrow_array::StringArray::from(vec![
                std::str::from_utf8(raw).ok()?,
            ])),
            _ => return None,
        };
        Some(value)
    }
}

/// Whether two results have the same columns in PostgreSQL's terms.
fn same_wire_types(a: &SchemaRef, b: &SchemaRef) -> bool {
    a.fields().len() == b.fields().len()
        && a.fields()
            .iter()
            .zip(b.fields())
            .all(|(x, y)| encode::pg_type(x.data_type()) == encode::pg_type(y.data_type()))
}

fn int_array(v: i64) -> ArrayRef {
    Arc::new(arrow_array::Int64Array::from(vec![v]))
}

/// The handlers of one connection (its [`Backend`]) and those shared.
pub struct Handlers {
    backend: Arc<Backend>,
    startup: Arc<Startup>,
    cancel: Arc<DefaultCancelHandler>,
}

impl Handlers {
    /// The same shared parts, with a connection's own backend.
    fn for_connection(&self, watch: Option<std::net::TcpStream>) -> Handlers {
        Handlers {
            backend: Arc::new(Backend {
                engine: self.backend.engine.clone(),
                parser: self.backend.parser.clone(),
                watch,
            }),
            startup: self.startup.clone(),
            cancel: self.cancel.clone(),
        }
    }

    pub fn new(engine: Arc<Engine>) -> Handlers {
        let manager = Arc::new(ConnectionManager::new());
        let mut p = DefaultServerParameterProvider::default();
        p.server_version = session::SERVER_VERSION.to_string();
        p.default_transaction_read_only = true;
        p.date_style = "ISO, MDY".to_string();
        p.time_zone = "UTC".to_string();
        let driver = AuthDriver::new(Parameters(p)).with_connection_manager(manager.clone());
        Handlers {
            startup: Arc::new({
                let source = engine.source.clone();
                let mut scram = ScramAuth::new(source.clone());
                scram.set_iterations(auth::ITERATIONS as usize);
                Startup {
                    driver,
                    engine: engine.clone(),
                    cleartext: CleartextPasswordAuth::new(source),
                    scram,
                }
            }),
            cancel: Arc::new(DefaultCancelHandler::new(manager)),
            backend: Arc::new(Backend {
                parser: Arc::new(Parser {
                    engine: engine.clone(),
                }),
                engine,
                watch: None,
            }),
        }
    }
}

/// Startup: refuses connections past the limit with 53300, then
/// authenticates as `--auth` says and completes the handshake.
pub struct Startup {
    driver: AuthDriver<Parameters>,
    engine: Arc<Engine>,
    cleartext: CleartextPasswordAuth<auth::Source>,
    scram: ScramAuth,
}

/// Tells the client the values of those of the settings `names` it
/// tracks (TimeZone, application_name, ...), as they are now.
async fn report<C>(client: &mut C, names: Vec<String>)
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
{
    for n in names {
        if let (Some(r), Some(v)) = (
            session::reported(&n),
            session::setting(client.metadata(), &n),
        ) {
            let _ = client
                .feed(PgWireBackendMessage::ParameterStatus(ParameterStatus::new(
                    r.to_string(),
                    v,
                )))
                .await;
        }
    }
}

/// The parameters the server reports at startup: pgwire's, with the
/// session's `TimeZone` (UTC, or the one the client's startup message
/// gave, when sluice knows it).
struct Parameters(DefaultServerParameterProvider);

impl pgwire::api::auth::ServerParameterProvider for Parameters {
    fn server_parameters<C>(&self, client: &C) -> Option<HashMap<String, String>>
    where
        C: ClientInfo,
    {
        let mut p = self.0.server_parameters(client)?;
        if let Some(tz) = client.metadata().get("sluice.timezone") {
            p.insert("TimeZone".into(), tz.clone());
        }
        Some(p)
    }
}

/// A `TimeZone` in the startup message (JDBC sends its JVM's zone) is the
/// session's, as a SET of it would be; one sluice does not know leaves
/// the session in UTC (PostgreSQL refuses the connection), as the
/// server then reports.
fn startup_zone(metadata: &mut HashMap<String, String>) {
    let given = metadata
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("timezone"))
        .map(|(_, v)| v.clone());
    if let Some(tz) = given
        && session::zone_of(&tz).is_some()
    {
        let zone = session::zone_setting(&tz);
        // Also what RESET goes back to.
        metadata.insert("sluice-startup.timezone".into(), zone.clone());
        metadata.insert("sluice.timezone".into(), zone);
    }
}

#[async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let PgWireFrontendMessage::Startup(ref s) = message {
            if self.engine.connections() > self.engine.opts.max_connections {
                return Err(Failure {
                    code: "53300",
                    message: format!(
                        "sorry, too many clients already (--max-connections {})",
                        self.engine.opts.max_connections
                    ),
                    fatal: true,
                }
                .into());
            }
            if self.engine.opts.auth == auth::Auth::Password
                && self.engine.opts.tls.is_some()
                && !client.is_secure()
            {
                return Err(Failure {
                    code: "28000",
                    message: "this server takes passwords over TLS only (--auth password with --tls-cert): connect with sslmode=require".into(),
                    fatal: true,
                }
                .into());
            }
            protocol_negotiation(client, s).await?;
            save_startup_parameters_to_metadata(client, s);
            startup_zone(client.metadata_mut());
            match self.engine.opts.auth {
                auth::Auth::Trust => self.driver.complete_authentication(client, None).await?,
                auth::Auth::Password => {
                    let m = AuthMechanismFactory::<()>::create(&self.cleartext);
                    self.driver.begin_authentication(client, m).await?;
                }
                auth::Auth::Scram => {
                    let m = AuthMechanismFactory::<()>::create(&self.scram);
                    self.driver.begin_authentication(client, m).await?;
                }
            }
        } else if let PgWireFrontendMessage::PasswordMessageFamily(m) = message {
            let outcome = match self.driver.advance_authentication(client, m).await {
                Err(PgWireError::InvalidPassword(_) | PgWireError::InvalidScramMessage(_)) => {
                    let user = client.metadata().get("user").cloned().unwrap_or_default();
                    return Err(Failure {
                        code: "28P01",
                        message: format!("password authentication failed for user \"{user}\""),
                        fatal: true,
                    }
                    .into());
                }
                r => r?,
            };
            if let AuthOutcome::Authenticated { final_message, .. } = outcome {
                self.driver
                    .complete_authentication(client, final_message)
                    .await?;
            }
        }
        Ok(())
    }
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.backend.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.backend.clone()
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        self.startup.clone()
    }

    fn cancel_handler(&self) -> Arc<impl pgwire::api::cancel::CancelHandler> {
        self.cancel.clone()
    }
}

/// A session's time limit: its `statement_timeout`, else the server's.
/// The store seen from a session: its tables, and its `TimeZone` (the
/// zone instants are shown and read in).
struct Zoned<'a>(&'a Database, String);

impl sluice::query::plan::Catalog for Zoned<'_> {
    fn table_schema(&self, name: &str) -> Option<sluice::batch::Schema> {
        sluice::query::plan::Catalog::table_schema(self.0, name)
    }

    fn time_zone(&self) -> String {
        self.1.clone()
    }

    fn table_stats(&self, table: &str, column: usize) -> Option<(u64, Option<(i64, i64)>)> {
        sluice::query::plan::Catalog::table_stats(self.0, table, column)
    }

    fn catalog_db(&self) -> sluice::Result<Option<Arc<sluice::query::catalog::CatalogDb>>> {
        sluice::query::plan::Catalog::catalog_db(self.0)
    }
}

/// Whether a session's zone (an Arrow time zone) is UTC.
fn utc(zone: &str) -> bool {
    sluice::zone::Zone::of(Some(zone)).is_utc()
}

/// The session's `TimeZone` as an Arrow time zone. SET and the startup
/// message keep only zones sluice knows, a named one as the tz database
/// spells it, so this runs on every query without touching the
/// database's files: a fixed offset is turned into `+HH:MM`, a name is
/// taken as it is.
fn session_zone(settings: &HashMap<String, String>) -> String {
    match session::setting(settings, "timezone") {
        Some(z) => match session::fixed_zone_of(&z) {
            Some(secs) => sluice::batch::zone_label(secs),
            None => z,
        },
        None => "UTC".into(),
    }
}

fn session_timeout(engine: &Engine, settings: &HashMap<String, String>) -> Option<Duration> {
    match settings.get("sluice.statement_timeout") {
        Some(v) => match session::timeout_ms(v) {
            Ok(0) | Err(_) => None,
            Ok(ms) => Some(Duration::from_millis(ms)),
        },
        None => engine.opts.statement_timeout,
    }
}

/// An answer's rows: the batches in memory, then those the query wrote
/// to disk (an answer past half the memory limit), read back a frame at
/// a time as they are sent. The spill files go with it.
pub(crate) struct Rows {
    batches: Vec<RecordBatch>,
    later: Vec<sluice::query::scan::Later>,
}

impl Rows {
    fn new(batches: Vec<RecordBatch>) -> Rows {
        Rows {
            batches,
            later: Vec::new(),
        }
    }

    fn of(r: sluice::query::QueryResult) -> Rows {
        Rows {
            batches: r.batches,
            later: r.later,
        }
    }

    /// Every batch in order, those on disk read as they are reached.
    fn batches(self) -> impl Iterator<Item = Result<RecordBatch, Failure>> {
        let later = self
            .later
            .into_iter()
            .map(|l| (l.load)().map_err(Failure::from));
        self.batches.into_iter().map(Ok).chain(later)
    }

    /// Every batch in memory.
    fn collect(self) -> Result<Vec<RecordBatch>, Failure> {
        self.batches().collect()
    }
}

/// Rows of `batches` as a response, encoded batch by batch as they are sent.
fn rows_response(schema: &SchemaRef, batches: Rows, binary: Vec<bool>) -> Response {
    let fields = Arc::new(encode::fields(schema, |i| {
        binary.get(i).copied().unwrap_or(false)
    }));
    let rows = futures::stream::iter(batches.batches().flat_map(move |b| {
        match b {
            Ok(b) => encode::rows(&b, &binary)
                .into_iter()
                .map(Ok)
                .collect::<Vec<_>>(),
            Err(f) => vec![Err(f.into())],
        }
    }));
    Response::Query(QueryResponse::new(fields, rows))
}

/// Which result columns go in binary format; a Bind with a wrong number
/// of format codes is an error, not a panic.
fn binary_columns(format: &Format, n: usize) -> Result<Vec<bool>, Failure> {
    match format {
        Format::UnifiedText => Ok(vec![false; n]),
        Format::UnifiedBinary => Ok(vec![true; n]),
        Format::Individual(codes) if codes.len() == n => {
            Ok(codes.iter().map(|c| *c == 1).collect())
        }
        Format::Individual(codes) => Err(Failure::new(
            "08P01",
            format!(
                "bind message has {} result formats but query has {n} columns",
                codes.len()
            ),
        )),
    }
}

impl Engine {
    /// A prepared point select answered by its point query: the key
    /// looked up in the table kept open for this snapshot. `None` when
    /// the statement is not one, or this execution's value or the table
    /// is not one it takes (the plan answers those, with its errors).
    fn point(
        &self,
        t: &Template,
        portal: &Portal<Prepared>,
        db: &Arc<Database>,
    ) -> Result<Option<(SchemaRef, Rows)>, Failure> {
        let Some(p) = &t.point else { return Ok(None) };
        let Some(value) = t.key(portal) else {
            return Ok(None);
        };
        if !t.current(db) {
            return Ok(None);
        }
        let Ok(keyed) = self.keyed(db, p.table()) else {
            return Ok(None);
        };
        let Some(batch) = p.run(&keyed, &value)? else {
            return Ok(None);
        };
        self.queries.fetch_add(1, Ordering::Relaxed);
        self.bound.fetch_add(1, Ordering::Relaxed);
        self.points.fetch_add(1, Ordering::Relaxed);
        Ok(Some((p.schema().clone(), Rows::new(vec![batch]))))
    }

    /// Runs a portal of a prepared query of the store on `db`: its key
    /// bound into the statement's plan when it has one, else its values
    /// written into its SQL; stops if `gone` resolves first.
    async fn portal_query(
        &self,
        db: Arc<Database>,
        portal: &Portal<Prepared>,
        timeout: Option<Duration>,
        zone: String,
        gone: impl std::future::Future<Output = ()>,
    ) -> Result<(SchemaRef, Rows), Failure> {
        let run = async {
            if let Some(t) = &portal.statement.statement.template
                && utc(&zone)
            {
                if let Some(r) = self.point(t, portal, &db)? {
                    return Ok(r);
                }
                if let Some(plan) = t.bind(portal, &db) {
                    self.bound.fetch_add(1, Ordering::Relaxed);
                    return self.run_plan(db, plan, timeout).await;
                }
            }
            let sql = bound_sql(portal)?;
            let plan =
                sluice::query::plan::plan_sql_as_postgresql(&sql, &Zoned(db.as_ref(), zone))?;
            // The client decodes the rows by the types Describe gave. (A
            // table's columns are fixed at its first commit today; this
            // keeps a later change from sending rows under an old
            // description.)
            if let Some(want) = &portal.statement.statement.schema
                && !same_wire_types(want, &sluice::query::exec::result_schema(&plan))
            {
                return Err(Failure::new(
                    "0A000",
                    "cached plan must not change result type: the table's columns changed since the statement was prepared; prepare it again",
                ));
            }
            self.run_plan(db, plan, timeout).await
        };
        tokio::select! {
            // A key lookup is done at its first poll: no timer is set.
            biased;
            r = run => r,
            // Dropping the query's future stops it.
            _ = gone => Err(Failure::new("08006", "the client closed its connection")),
        }
    }

    /// Runs one statement of a session: a SET/SHOW/catalog answer or a
    /// query of the store; a query stops if `gone` resolves first.
    async fn statement<C>(
        &self,
        client: &mut C,
        sql: &str,
        binary: &Format,
        gone: impl std::future::Future<Output = ()>,
    ) -> Result<Response, Failure>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let held = held(client);
        if held.failed() && !session::ends_block(sql) {
            // A statement written wrong says so first, as PostgreSQL's
            // parser does before it looks at the block.
            if let Some(Err(f)) = session::answer(sql, client.metadata())
                && f.code == "42601"
            {
                return Err(f);
            }
            return Err(aborted());
        }
        if let Some(cmd) = cursor::command(sql) {
            return self
                .cursor_statement(client, cmd?, &held, binary, gone)
                .await;
        }
        let query = session::is_query(sql);
        let db = self.snapshot_for(client.metadata(), &held, query)?;
        if let Some(a) = session::answer(sql, client.metadata()) {
            return Ok(match a? {
                Answer::Begin(level) => {
                    if !session::in_block(client.metadata()) {
                        held.clear();
                    }
                    session::begin(client.metadata_mut(), level);
                    Response::TransactionStart(Tag::new("BEGIN"))
                }
                Answer::Set { name, .. }
                | Answer::Reset {
                    name: Some(name), ..
                } if name == "transaction_isolation" && held.queried() => {
                    return Err(Failure::new(
                        "25001",
                        "SET TRANSACTION ISOLATION LEVEL must be called before any query",
                    ));
                }
                Answer::End { rollback, chain } => {
                    // COMMIT of a failed block rolls it back.
                    let rollback = rollback || held.failed();
                    let tag = if rollback { "ROLLBACK" } else { "COMMIT" };
                    // AND CHAIN: a new block at the level of the one ended.
                    let level = session::setting(client.metadata(), "transaction_isolation");
                    held.clear();
                    cursors(client).end_block(rollback);
                    let changed = session::end_block(client.metadata_mut(), rollback);
                    report(client, changed).await;
                    if chain {
                        session::begin(client.metadata_mut(), level.as_deref());
                        Response::TransactionStart(Tag::new(tag))
                    } else {
                        Response::TransactionEnd(Tag::new(tag))
                    }
                }
                Answer::Savepoint(what, name) => {
                    let changed = session::savepoint(client.metadata_mut(), what, &name)?;
                    if what == session::Savepoint::RollbackTo {
                        held.2.store(false, Ordering::Relaxed);
                    }
                    report(client, changed).await;
                    Response::Execution(Tag::new(what.tag()))
                }
                Answer::Tag(t) => Response::Execution(Tag::new(t)),
                Answer::Set { name, value, local } => {
                    // SET LOCAL outside a block changes nothing.
                    if !local || session::in_block(client.metadata()) {
                        session::apply_set(client.metadata_mut(), &name, value, local);
                        report(client, vec![name]).await;
                    }
                    Response::Execution(Tag::new("SET"))
                }
                Answer::Reset { name, tag } => {
                    if tag == "DISCARD ALL" {
                        if session::in_block(client.metadata()) {
                            return Err(Failure::new(
                                "25001",
                                "DISCARD ALL cannot run inside a transaction block",
                            ));
                        }
                        cursors(client).close(None)?;
                    }
                    let changed = session::reset(client.metadata_mut(), name.as_deref());
                    // The client keeps what it tracks (TimeZone, ...) as
                    // the server last said: say the defaults.
                    report(client, changed).await;
                    Response::Execution(Tag::new(tag))
                }
                Answer::Rows(b) => {
                    let schema = b.schema();
                    let bin = binary_columns(binary, schema.fields().len())?;
                    rows_response(&schema, Rows::new(vec![b]), bin)
                }
            });
        }
        let (schema, batches) = self.run_unless_gone(client, db, sql, gone).await?;
        let bin = binary_columns(binary, schema.fields().len())?;
        Ok(rows_response(&schema, batches, bin))
    }

    /// Runs `sql` on `db` with the session's timeout and zone, stopped if
    /// the client goes first.
    async fn run_unless_gone<C: ClientInfo>(
        &self,
        client: &C,
        db: Arc<Database>,
        sql: &str,
        gone: impl std::future::Future<Output = ()>,
    ) -> Result<(SchemaRef, Rows), Failure> {
        let timeout = session_timeout(self, client.metadata());
        let zone = session_zone(client.metadata());
        tokio::select! {
            biased;
            r = self.run(db, sql, timeout, zone) => r,
            // Dropping the query's future stops it.
            _ = gone => Err(Failure::new("08006", "the client closed its connection")),
        }
    }

    /// DECLARE, FETCH, MOVE or CLOSE of a cursor (see [`cursor`]).
    async fn cursor_statement<C>(
        &self,
        client: &mut C,
        cmd: cursor::Command,
        held: &Held,
        binary: &Format,
        gone: impl std::future::Future<Output = ()>,
    ) -> Result<Response, Failure>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let cursors = cursors(client);
        match cmd {
            cursor::Command::Declare {
                name,
                hold,
                no_scroll,
                binary: bin,
                query,
            } => {
                let in_block =
                    session::in_block(client.metadata()) || held.3.load(Ordering::Relaxed);
                if !hold && !in_block {
                    return Err(Failure::new(
                        "25P01",
                        "DECLARE CURSOR can only be used in transaction blocks",
                    ));
                }
                cursors.check_new(&name)?;
                let db = self.snapshot_for(client.metadata(), held, true)?;
                let (schema, batches) = match session::answer(&query, client.metadata()) {
                    Some(a) => match a? {
                        Answer::Rows(b) => (b.schema(), Rows::new(vec![b])),
                        _ => {
                            return Err(Failure::syntax(
                                "a cursor is declared FOR a SELECT or VALUES query",
                            ));
                        }
                    },
                    None => self.run_unless_gone(client, db, &query, gone).await?,
                };
                let rows = arrow_select::concat::concat_batches(&schema, &batches.collect()?)
                    .map_err(|e| Failure::internal(e.to_string()))?;
                cursors.declare(name, rows, hold, no_scroll, bin, in_block);
                Ok(Response::Execution(Tag::new("DECLARE CURSOR")))
            }
            cursor::Command::Fetch { name, dir, moving } => {
                let (rows, bin) = cursors.fetch(&name, dir)?;
                if moving {
                    return Ok(Response::Execution(
                        Tag::new("MOVE").with_rows(rows.num_rows()),
                    ));
                }
                let schema = rows.schema();
                let cols = if bin {
                    vec![true; schema.fields().len()]
                } else {
                    binary_columns(binary, schema.fields().len())?
                };
                let mut r = rows_response(&schema, Rows::new(vec![rows]), cols);
                if let Response::Query(q) = &mut r {
                    q.set_command_tag("FETCH");
                }
                Ok(r)
            }
            cursor::Command::Close(name) => {
                cursors.close(name.as_deref())?;
                let tag = if name.is_some() {
                    "CLOSE CURSOR"
                } else {
                    "CLOSE CURSOR ALL"
                };
                Ok(Response::Execution(Tag::new(tag)))
            }
        }
    }
}

/// The longest statement accepted: SQL for sluice's one-table queries is
/// short; a bigger one is a mistake or an attack.
pub const MAX_STATEMENT_BYTES: usize = 16 << 20;

fn check_length(sql: &str) -> Result<(), Failure> {
    if sql.len() > MAX_STATEMENT_BYTES {
        return Err(Failure::new(
            "54000",
            format!(
                "statement of {} bytes is too long (the limit is {} MiB)",
                sql.len(),
                MAX_STATEMENT_BYTES >> 20
            ),
        ));
    }
    // The protocol library reads a statement's bytes lossily: bytes that
    // are not UTF-8 arrive as U+FFFD. PostgreSQL refuses them (22021);
    // so does this, rather than run a query other than the one sent.
    if let Some(at) = sql.find('\u{FFFD}') {
        return Err(Failure::new(
            "22021",
            format!(
                "invalid byte sequence for encoding \"UTF8\" at byte {at} of the statement (or the character U+FFFD, which sluice serve cannot tell from one)"
            ),
        ));
    }
    Ok(())
}

/// Splits a simple-protocol string into statements at the semicolons
/// outside quotes and comments.
pub fn split_statements(sql: &str) -> Vec<&str> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut start) = (0, 0);
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"') => {
                i += 1;
                while i < b.len() {
                    if b[i] == q {
                        if b.get(i + 1) == Some(&q) {
                            i += 1;
                        } else {
                            break;
                        }
                    }
                    i += 1;
                }
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b';' => {
                out.push(&sql[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(&sql[start.min(sql.len())..]);
    out.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

#[async_trait]
impl SimpleQueryHandler for Backend {
    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: pgwire::api::store::PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        check_length(query)?;
        let mut out = Vec::new();
        let query = &*sluice::query::sql::escape_strings(query).map_err(Failure::from)?;
        let stmts = split_statements(query);
        // Several statements outside a block are one implicit block, as in
        // PostgreSQL: its cursors close at its end.
        let implicit = stmts.len() > 1 && !session::in_block(client.metadata());
        held(client).3.store(implicit, Ordering::Relaxed);
        for sql in stmts {
            match guarded(
                self.engine
                    .statement(client, sql, &Format::UnifiedText, self.gone()),
            )
            .await
            {
                Ok(r) => out.push(r),
                Err(f) => {
                    note_failure(client);
                    // The first error ends the string, as in PostgreSQL.
                    out.push(Response::Error(Box::new(ErrorInfo::new(
                        "ERROR".into(),
                        f.code.into(),
                        f.message,
                    ))));
                    break;
                }
            }
        }
        if implicit {
            held(client).3.store(false, Ordering::Relaxed);
            if !session::in_block(client.metadata()) {
                let failed = matches!(out.last(), Some(Response::Error(_)));
                cursors(client).end_block(failed);
            }
        }
        if out.is_empty() {
            out.push(Response::EmptyQuery);
        }
        Ok(out)
    }
}

/// Parses and types statements for the extended protocol.
pub struct Parser {
    engine: Arc<Engine>,
}

struct Cols<'a>(&'a Database);

impl params::Columns for Cols<'_> {
    fn column_type(&self, table: Option<&str>, column: &str) -> Option<Type> {
        let t = self.0.table(table?)?;
        let c = t
            .schema
            .columns
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(column))?;
        Some(encode::pg_type(&c.data_type.arrow_type()))
    }
}

impl Parser {
    /// A cursor statement: a DECLARE's query keeps its parameters; a
    /// FETCH has the columns of its cursor, if it is declared yet.
    fn prepare_cursor<C: ClientInfo>(
        &self,
        client: &C,
        cmd: cursor::Command,
        sql: &str,
        types: &[Option<Type>],
    ) -> Result<Prepared, Failure> {
        let (params, schema) = match cmd {
            cursor::Command::Declare { .. } => {
                let db = self.engine.snapshot()?;
                (Params::of(sql, types, &Cols(&db))?, None)
            }
            cursor::Command::Fetch {
                name,
                moving: false,
                ..
            } => (
                Params::default(),
                cursors(client).describe(&name).map(|(s, _)| s),
            ),
            _ => (Params::default(), None),
        };
        Ok(Prepared {
            sql: sql.to_string(),
            params,
            schema,
            store: false,
            template: None,
        })
    }

    fn prepare(
        &self,
        settings: &HashMap<String, String>,
        sql: &str,
        types: &[Option<Type>],
    ) -> Result<Prepared, Failure> {
        let db = self.engine.snapshot()?;
        if let Some(a) = session::answer(sql, settings) {
            return Ok(Prepared {
                sql: sql.to_string(),
                params: Params::default(),
                schema: a?.schema(),
                store: false,
                template: None,
            });
        }
        let params = Params::of(sql, types, &Cols(&db))?;
        let planned = if params.is_empty() {
            sql.to_string()
        } else {
            params.placeholder_sql(sql)
        };
        let zone = session_zone(settings);
        let zoned = Zoned(db.as_ref(), zone.clone());
        let plan = match sluice::query::plan::plan_sql_as_postgresql(&planned, &zoned) {
            // Text parameters as NULLs, where an empty string is no value
            // (`$1::regclass`).
            Err(_) if !params.is_empty() => sluice::query::plan::plan_sql_as_postgresql(
                &params.null_placeholder_sql(sql),
                &zoned,
            )?,
            r => r?,
        };
        Ok(Prepared {
            sql: sql.to_string(),
            schema: Some(sluice::query::exec::result_schema(&plan)),
            store: true,
            template: Template::of(&params, sql, &db, &zone).map(Arc::new),
            params,
        })
    }
}

#[async_trait]
impl QueryParser for Parser {
    type Statement = Prepared;

    async fn parse_sql<C>(
        &self,
        client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Prepared>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        check_length(sql)?;
        // E'…' strings of bytes, read before the parameters are found.
        let sql = &*sluice::query::sql::escape_strings(sql).map_err(Failure::from)?;
        let stmts = split_statements(sql);
        if stmts.len() > 1 {
            return Err(Failure::syntax(
                "cannot insert multiple commands into a prepared statement",
            )
            .into());
        }
        if let Some(cmd) = cursor::command(sql) {
            return Ok(Some(self.prepare_cursor(client, cmd?, sql, types)?));
        }
        Ok(Some(self.prepare(client.metadata(), sql, types)?))
    }

    fn get_parameter_types(&self, stmt: &Prepared) -> PgWireResult<Vec<Type>> {
        Ok(stmt.params.types.clone())
    }

    fn get_result_schema(
        &self,
        stmt: &Prepared,
        format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        Ok(match &stmt.schema {
            None => Vec::new(),
            Some(s) => {
                let bin = binary_columns(format.unwrap_or(&Format::UnifiedText), s.fields().len())?;
                encode::fields(s, |i| bin[i])
            }
        })
    }
}

/// Binds a portal's values into its statement's SQL.
fn bound_sql(portal: &Portal<Prepared>) -> Result<String, Failure> {
    let stmt = &portal.statement.statement;
    let types = &stmt.params.types;
    if portal.parameters.len() != types.len() {
        return Err(Failure::new(
            "08P01",
            format!(
                "bind message supplies {} parameters, but prepared statement requires {}",
                portal.parameters.len(),
                types.len()
            ),
        ));
    }
    if types.is_empty() {
        return Ok(stmt.sql.clone());
    }
    let binary = match &portal.parameter_format {
        Format::UnifiedText => vec![false; types.len()],
        Format::UnifiedBinary => vec![true; types.len()],
        Format::Individual(c) if c.len() == types.len() => c.iter().map(|c| *c == 1).collect(),
        Format::Individual(c) => {
            return Err(Failure::new(
                "08P01",
                format!(
                    "bind message has {} parameter formats but {} parameters",
                    c.len(),
                    types.len()
                ),
            ));
        }
    };
    // A binary value is in the type the client declared (or was told).
    let declared = &portal.statement.parameter_types;
    let values = types
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let wire = match declared.get(i).cloned().flatten() {
                Some(d) if d != Type::UNKNOWN => d,
                _ => t.clone(),
            };
            params::literal(&wire, portal.parameters[i].as_deref(), binary[i], i)
        })
        .collect::<Result<Vec<String>, Failure>>()?;
    Ok(stmt.params.substitute(&stmt.sql, &values))
}

/// The query handlers of one connection.
pub struct Backend {
    engine: Arc<Engine>,
    parser: Arc<Parser>,
    /// A second handle on the connection's socket, to see the client go
    /// away while its query runs (the protocol loop reads nothing then).
    watch: Option<std::net::TcpStream>,
}

impl Backend {
    /// Execute of the portal a DECLAREd cursor is: its next `max_rows`
    /// rows (0: all), PortalSuspended while rows remain, as in PostgreSQL.
    async fn execute_cursor<C>(&self, client: &mut C, name: &str, max_rows: i32) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let Err(f) = check_not_failed(client) {
            return Err(f.into());
        }
        let cursors = cursors(client);
        let want = u64::try_from(max_rows).ok().filter(|n| *n > 0);
        let (rows, bin) = cursors.fetch(name, cursor::Direction::Forward(want))?;
        let binary = vec![bin; rows.num_columns()];
        let n = rows.num_rows();
        for row in encode::rows(&rows, &binary) {
            client.feed(PgWireBackendMessage::DataRow(row)).await?;
        }
        if want.is_some_and(|w| n as u64 == w) && !cursors.at_end(name) {
            client
                .feed(PgWireBackendMessage::PortalSuspended(PortalSuspended::new()))
                .await?;
        } else {
            client
                .feed(PgWireBackendMessage::CommandComplete(
                    Tag::new("SELECT").with_rows(n).into(),
                ))
                .await?;
        }
        Ok(())
    }

    /// Resolves when the client has closed its connection; never when it
    /// has sent more (a pipelined message is not a goodbye). Looks every
    /// 50 ms while a scan runs: the connection's own loop reads nothing
    /// until the query's answer is out.
    async fn gone(&self) {
        let Some(w) = &self.watch else {
            return std::future::pending().await;
        };
        let mut b = [0u8; 1];
        loop {
            tokio::time::sleep(Duration::from_millis(50)).await;
            // The socket is non-blocking (it is also the runtime's).
            match w.peek(&mut b) {
                Ok(0) => return,
                Ok(_) => return std::future::pending().await,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => return,
            }
        }
    }
}

#[async_trait]
impl ExtendedQueryHandler for Backend {
    type Statement = Prepared;
    type QueryParser = Parser;

    fn query_parser(&self) -> Arc<Parser> {
        self.parser.clone()
    }

    // Parse, Bind and Execute queue their answers; Sync (or Flush) sends
    // them: one write per round trip, not one per message.

    async fn on_parse<C>(&self, client: &mut C, message: Parse) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        guarded(async move {
            let name = message.name.as_deref().unwrap_or(DEFAULT_NAME).to_string();
            match StoredStatement::parse(client, &message, self.query_parser()).await? {
                Some(stmt) => client.portal_store().put_statement(Arc::new(stmt)),
                None => client.portal_store().put_empty_statement(&name),
            }
            client
                .feed(PgWireBackendMessage::ParseComplete(ParseComplete::new()))
                .await?;
            Ok(())
        })
        .await
    }

    async fn on_bind<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        guarded(async move {
            let stmt_name = message.statement_name.as_deref().unwrap_or(DEFAULT_NAME);
            let portal_name = message.portal_name.as_deref().unwrap_or(DEFAULT_NAME);
            match client.portal_store().get_statement(stmt_name) {
                Some(Entry::Value(stmt)) => {
                    let portal = Portal::try_new(&message, stmt)?;
                    client.portal_store().put_portal(Arc::new(portal));
                }
                Some(Entry::Empty) if message.parameters.is_empty() => {
                    client.portal_store().put_empty_portal(portal_name)
                }
                Some(Entry::Empty) => {
                    return Err(Failure::new(
                    "08P01",
                    format!(
                        "bind message supplies {} parameters, but the prepared statement is empty",
                        message.parameters.len()
                    ),
                )
                .into());
                }
                None => return Err(PgWireError::StatementNotFound(stmt_name.to_string())),
            }
            client
                .feed(PgWireBackendMessage::BindComplete(BindComplete::new()))
                .await?;
            Ok(())
        })
        .await
    }

    /// Describe's answer queued like the others (the protocol crate's
    /// own sends it at once: one more write a round trip, and a client
    /// woken twice for one result).
    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        guarded(async move {
            let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
            match message.target_type {
                TARGET_TYPE_BYTE_STATEMENT => match client.portal_store().get_statement(name) {
                    Some(Entry::Value(stmt)) => {
                        let r = self.do_describe_statement(client, &stmt).await?;
                        queue_describe(client, &r).await
                    }
                    Some(Entry::Empty) => {
                        queue_describe(client, &DescribeStatementResponse::no_data()).await
                    }
                    None => Err(PgWireError::StatementNotFound(name.to_owned())),
                },
                TARGET_TYPE_BYTE_PORTAL => match client.portal_store().get_portal(name) {
                    Some(Entry::Value(portal)) => {
                        let r = self.do_describe_portal(client, &portal).await?;
                        queue_describe(client, &r).await
                    }
                    Some(Entry::Empty) => {
                        queue_describe(client, &DescribePortalResponse::no_data()).await
                    }
                    // A cursor DECLAREd in SQL is a portal of its name too
                    // (psycopg describes a named cursor so).
                    None => match cursors(client).describe(name) {
                        Some((schema, bin)) => {
                            let r = DescribePortalResponse::new(encode::fields(&schema, |_| bin));
                            queue_describe(client, &r).await
                        }
                        None => Err(PgWireError::PortalNotFound(name.to_owned())),
                    },
                },
                other => Err(PgWireError::InvalidTargetType(other)),
            }
        })
        .await
    }

    /// A query of the store run to its end (no row limit) is answered
    /// here: rows and CommandComplete queued, no flush. Anything else
    /// (row limits, suspended portals, session statements) goes the
    /// protocol crate's way.
    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        guarded(async move {
            // A negative row limit means all rows, as in PostgreSQL; a huge
            // one is held to MAX_FETCH_ROWS (the client is sent PortalSuspended
            // and asks again): the protocol library reserves room for the
            // limit's rows up front, and 2^31 of them would abort the process.
            let mut message = message;
            message.max_rows = message.max_rows.clamp(0, MAX_FETCH_ROWS);
            let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
            if client.portal_store().get_portal(name).is_none()
                && cursors(client).describe(name).is_some()
            {
                return self.execute_cursor(client, name, message.max_rows).await;
            }
            let portal = match client.portal_store().get_portal(name) {
                Some(Entry::Value(p))
                    if message.max_rows == 0
                        && p.statement.statement.store
                        && matches!(client.state(), PgWireConnectionState::ReadyForQuery) =>
                {
                    p
                }
                _ => return self._on_execute(client, message).await,
            };
            let state = portal.state();
            let mut st = state.lock().await;
            if !matches!(*st, PortalExecutionState::Initial) {
                drop(st);
                return self._on_execute(client, message).await;
            }
            if let Err(f) = check_not_failed(client) {
                drop(st);
                return Err(f.into());
            }
            client.set_state(PgWireConnectionState::QueryInProgress);
            let timeout = session_timeout(&self.engine, client.metadata());
            let cancel = match client.session_extensions().get::<Arc<ConnectionHandle>>() {
                Some(h) => Some(h.start_query().await),
                None => None,
            };
            let zone = session_zone(client.metadata());
            let db = self
                .engine
                .snapshot_for(client.metadata(), &held(client), true)?;
            let query = self
                .engine
                .portal_query(db, &portal, timeout, zone, self.gone());
            let answer = match cancel {
                Some(rx) => tokio::select! {
                    biased;
                    r = query => r,
                    _ = rx => {
                        note_failure(client);
                        return Err(PgWireError::QueryCanceled);
                    }
                },
                None => query.await,
            };
            let (schema, batches) = match answer {
                Ok(a) => a,
                Err(f) => {
                    note_failure(client);
                    return Err(f.into());
                }
            };
            let binary = binary_columns(&portal.result_column_format, schema.fields().len())?;
            let mut n = 0;
            for b in batches.batches() {
                let b = match b {
                    Ok(b) => b,
                    Err(f) => {
                        note_failure(client);
                        return Err(f.into());
                    }
                };
                for row in encode::rows(&b, &binary) {
                    client.feed(PgWireBackendMessage::DataRow(row)).await?;
                    n += 1;
                }
            }
            client
                .feed(PgWireBackendMessage::CommandComplete(
                    Tag::new("SELECT").with_rows(n).into(),
                ))
                .await?;
            *st = PortalExecutionState::Finished;
            client.set_state(PgWireConnectionState::ReadyForQuery);
            Ok(())
        })
        .await
    }

    /// Close of a portal closes the cursor of its name too.
    async fn on_close<C>(&self, client: &mut C, message: Close) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        guarded(async move {
            let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
            match message.target_type {
                TARGET_TYPE_BYTE_STATEMENT => client.portal_store().rm_statement(name),
                TARGET_TYPE_BYTE_PORTAL => {
                    client.portal_store().rm_portal(name);
                    // Closing a cursor that is not there is no error.
                    let _ = cursors(client).close(Some(name));
                }
                _ => {}
            }
            client
                .feed(PgWireBackendMessage::CloseComplete(CloseComplete::new()))
                .await?;
            Ok(())
        })
        .await
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Prepared>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: pgwire::api::store::PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let r = async {
            if portal.statement.statement.store {
                check_not_failed(client)?;
                let timeout = session_timeout(&self.engine, client.metadata());
                let zone = session_zone(client.metadata());
                let db = self
                    .engine
                    .snapshot_for(client.metadata(), &held(client), true)?;
                let (schema, batches) = self
                    .engine
                    .portal_query(db, portal, timeout, zone, self.gone())
                    .await?;
                let bin = binary_columns(&portal.result_column_format, schema.fields().len())?;
                return Ok(rows_response(&schema, batches, bin));
            }
            let sql = bound_sql(portal)?;
            self.engine
                .statement(client, &sql, &portal.result_column_format, self.gone())
                .await
        }
        .await;
        if r.is_err() {
            note_failure(client);
        }
        Ok(r?)
    }

    async fn do_describe_statement<C>(
        &self,
        _client: &mut C,
        stmt: &StoredStatement<Prepared>,
    ) -> PgWireResult<DescribeStatementResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: pgwire::api::store::PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let p = &stmt.statement;
        let fields = match &p.schema {
            None => {
                return Ok(DescribeStatementResponse::new(
                    p.params.types.clone(),
                    Vec::new(),
                ));
            }
            Some(s) => encode::fields(s, |_| false),
        };
        Ok(DescribeStatementResponse::new(
            p.params.types.clone(),
            fields,
        ))
    }

    async fn do_describe_portal<C>(
        &self,
        _client: &mut C,
        portal: &Portal<Prepared>,
    ) -> PgWireResult<DescribePortalResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: pgwire::api::store::PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match &portal.statement.statement.schema {
            None => Ok(DescribePortalResponse::no_data()),
            Some(s) => {
                let bin = binary_columns(&portal.result_column_format, s.fields().len())?;
                Ok(DescribePortalResponse::new(encode::fields(s, |i| bin[i])))
            }
        }
    }
}

/// Queues the answer to a Describe: ParameterDescription (of a
/// statement), then RowDescription or NoData; sent with the rest at Sync.
async fn queue_describe<C>(client: &mut C, r: &impl DescribeResponse) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    if let Some(p) = r.parameters() {
        client
            .feed(PgWireBackendMessage::ParameterDescription(
                ParameterDescription::new(p.iter().map(|t| t.oid()).collect()),
            ))
            .await?;
    }
    let last = if r.is_no_data() {
        PgWireBackendMessage::NoData(NoData::new())
    } else {
        PgWireBackendMessage::RowDescription(RowDescription::new(
            r.fields().iter().map(Into::into).collect(),
        ))
    };
    client.feed(last).await?;
    Ok(())
}

/// The snapshot a connection's transaction holds (see
/// [`Engine::snapshot_for`]), and whether a query ran in the block (its
/// isolation level is fixed then); dropped with the connection.
#[derive(Default)]
struct Held(
    std::sync::Mutex<Option<Arc<Database>>>,
    std::sync::atomic::AtomicBool,
    /// A statement of the block failed: until ROLLBACK (or ROLLBACK TO a
    /// savepoint) every other statement is 25P02, as in PostgreSQL.
    std::sync::atomic::AtomicBool,
    /// A simple query of several statements outside a block runs them as
    /// one implicit block (a cursor may be declared in it).
    std::sync::atomic::AtomicBool,
);

/// The connection's cursors.
fn cursors<C: ClientInfo>(client: &C) -> Arc<cursor::Cursors> {
    client
        .session_extensions()
        .get_or_insert_with(cursor::Cursors::default)
}

/// A statement failed: in a transaction block, the block is failed.
fn note_failure<C: ClientInfo>(client: &C) {
    if session::in_block(client.metadata()) {
        held(client).2.store(true, Ordering::Relaxed);
    }
}

/// 25P02 in a failed block (for a query of the store; other statements
/// are checked in [`Engine::statement`]).
fn check_not_failed<C: ClientInfo>(client: &C) -> Result<(), Failure> {
    if held(client).failed() {
        return Err(aborted());
    }
    Ok(())
}

fn aborted() -> Failure {
    Failure::new(
        "25P02",
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

/// The connection's [`Held`].
fn held<C: ClientInfo>(client: &C) -> Arc<Held> {
    client
        .session_extensions()
        .get_or_insert_with(Held::default)
}

impl Held {
    /// A block ended or began.
    fn clear(&self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.1.store(false, Ordering::Relaxed);
        self.2.store(false, Ordering::Relaxed);
    }

    fn failed(&self) -> bool {
        self.2.load(Ordering::Relaxed)
    }

    fn queried(&self) -> bool {
        self.1.load(Ordering::Relaxed)
    }
}

/// A connection counted while it lives.
struct Counted(Arc<Engine>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A connection handed to a connection thread: the socket, its watch
/// handle, its count.
struct Handoff {
    sock: std::net::TcpStream,
    watch: Option<std::net::TcpStream>,
    counted: Counted,
    /// Counted open on its thread while it lives (set by `hand`).
    live: Option<Live>,
}

/// A connection counted open on connection thread `.1`.
struct Live(Arc<[AtomicUsize]>, usize);

impl Drop for Live {
    fn drop(&mut self) {
        self.0[self.1].fetch_sub(1, Ordering::Relaxed);
    }
}

/// The connection threads: one single-threaded runtime a core, each
/// serving the connections handed to it for their whole life. A
/// connection's messages, its key lookups and its socket's readiness stay
/// on one thread: no task moves between workers, no worker wakes another
/// to run it (on a runtime whose workers share the connections, those
/// hand-offs cost more CPU than a point select). Where it is safe, each
/// thread is pinned to a CPU and a connection goes to the thread of the
/// CPU it came in on, else round robin (see `place`). Scans still run on
/// blocking threads, in the long lane.
struct ConnThreads {
    queues: Vec<tokio::sync::mpsc::UnboundedSender<Handoff>>,
    steer: place::Steer,
    /// Connections open on each thread.
    live: Arc<[AtomicUsize]>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl ConnThreads {
    /// `n` threads; thread `i` pinned to `pinned[i]` (empty: none). Returns
    /// once every thread is running where it should.
    fn start(n: usize, pinned: &[usize], handlers: &Handlers) -> std::io::Result<ConnThreads> {
        let n = n.max(1);
        let (up, running) = std::sync::mpsc::channel::<()>();
        let live: Arc<[AtomicUsize]> = (0..n).map(|_| AtomicUsize::new(0)).collect();
        let mut queues = Vec::with_capacity(n);
        let mut threads = Vec::with_capacity(n);
        for i in 0..n {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .on_thread_park(spin::before_park)
                .build()?;
            let spin_for = handlers.startup.engine.opts.spin;
            let when = spin::When {
                scans: handlers.startup.engine.running.clone(),
                open: live.clone(),
                thread: i,
            };
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Handoff>();
            let h = handlers.for_connection(None);
            let cpu = pinned.get(i).copied();
            let up = up.clone();
            let t = std::thread::Builder::new()
                .name(format!("sluice-conn-{i}"))
                .spawn(move || {
                    // Not pinned (it cannot fail but for a CPU gone
                    // offline): the thread floats, its connections are
                    // still served.
                    if let Some(cpu) = cpu {
                        place::pin_current_thread(cpu);
                    }
                    h.startup.engine.keep_local_view();
                    spin::install(spin_for, when);
                    let _ = up.send(());
                    rt.block_on(async move {
                        while let Some(c) = rx.recv().await {
                            spin::watch(&c.sock);
                            let Ok(sock) = tokio::net::TcpStream::from_std(c.sock) else {
                                continue;
                            };
                            let h = h.for_connection(c.watch);
                            let counted = (c.counted, c.live);
                            // The connection's second handle (its watch): if
                            // the protocol library panics on what the client
                            // sent (a malformed message), the client is told
                            // so through it and the connection closes; the
                            // thread and its other connections go on.
                            let tls = h.startup.engine.opts.tls.is_some();
                            let backend = (!tls).then(|| h.backend.clone());
                            tokio::spawn(async move {
                                use futures::FutureExt;
                                let _counted = counted;
                                let tls = h.startup.engine.opts.tls.as_ref().map(|t| t.0.clone());
                                let served =
                                    std::panic::AssertUnwindSafe(frames::serve(sock, tls, h))
                                        .catch_unwind()
                                        .await;
                                if let (Err(p), Some(b)) = (served, backend)
                                    && let Some(w) = b.watch.as_ref()
                                {
                                    use std::io::Write;
                                    let mut s = w;
                                    let msg = raw_error(
                                        "XX000",
                                        &format!(
                                            "internal error: {}; the connection is closed",
                                            panic_text(p.as_ref())
                                        ),
                                    );
                                    let _ = s.write_all(&msg);
                                    let _ = s.shutdown(std::net::Shutdown::Both);
                                }
                            });
                        }
                    });
                    // The server is stopping: scans still running are
                    // stopped by their dropped futures; wait a little.
                    rt.shutdown_timeout(Duration::from_secs(5));
                })?;
            queues.push(tx);
            threads.push(t);
        }
        drop(up);
        for _ in 0..n {
            // A thread that died before its signal: the others serve.
            if running.recv().is_err() {
                break;
            }
        }
        Ok(ConnThreads {
            queues,
            live,
            steer: place::Steer::new(n, pinned),
            threads,
        })
    }

    fn hand(&mut self, mut c: Handoff, engine: &Engine) {
        let live: Vec<usize> = self
            .live
            .iter()
            .map(|n| n.load(Ordering::Relaxed))
            .collect();
        let i = self.steer.pick(place::incoming_cpu(&c.sock), &live);
        self.live[i].fetch_add(1, Ordering::Relaxed);
        c.live = Some(Live(self.live.clone(), i));
        if let Some(n) = engine.placed.get(i) {
            n.fetch_add(1, Ordering::Relaxed);
        }
        // A thread gone (it cannot be, short of a panic): the connection
        // is dropped, closed.
        let _ = self.queues[i].send(c);
    }
}

impl Drop for ConnThreads {
    fn drop(&mut self) {
        self.queues.clear();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Serves connections from `listener` until `shutdown` resolves: accepts
/// here, serves on the connection threads.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    engine: Arc<Engine>,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    let handlers = Handlers::new(engine.clone());
    let mut threads = ConnThreads::start(sluice::exec::usable_cores(), &engine.pinned, &handlers)?;
    tokio::pin!(shutdown);
    loop {
        let (sock, _) = tokio::select! {
            r = listener.accept() => match r {
                Ok(s) => s,
                // Out of file descriptors and the like: wait, go on.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            _ = &mut shutdown => return Ok(()),
        };
        let n = engine.connections.fetch_add(1, Ordering::Relaxed) + 1;
        let counted = Counted(engine.clone());
        // Far past the limit: closed at once, without reading a byte.
        if n > engine.opts.max_connections + REFUSED_GRACE {
            drop(sock);
            drop(counted);
            continue;
        }
        let _ = sock.set_nodelay(true);
        let (sock, watch) = match watched(sock) {
            Ok(p) => p,
            Err(_) => continue,
        };
        threads.hand(
            Handoff {
                sock,
                watch,
                counted,
                live: None,
            },
            &engine,
        );
    }
}

/// The socket, out of the accepting runtime, and a second handle on it
/// (`None` if it cannot be had).
fn watched(
    sock: tokio::net::TcpStream,
) -> std::io::Result<(std::net::TcpStream, Option<std::net::TcpStream>)> {
    let std = sock.into_std()?;
    let watch = std.try_clone().ok();
    Ok((std, watch))
}

/// Whether `addr` is reachable only from this machine.
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// Runs the server until Ctrl-C (or SIGTERM): binds, calls `ready` with
/// the address bound (port 0 picks one), and serves.
pub fn run(mut opts: Options, ready: impl FnOnce(SocketAddr, &Engine)) -> Result<(), Failure> {
    if !is_loopback(&opts.listen) && opts.auth == auth::Auth::Trust {
        return Err(Failure::new(
            "28000",
            format!(
                "refusing to listen on {} with --auth trust (anyone who reaches it could connect): use --auth scram-sha-256 with users added by --add-user, or a loopback address (127.0.0.1, ::1)",
                opts.listen
            ),
        ));
    }
    if opts.auth != auth::Auth::Trust && opts.users.is_empty() {
        return Err(Failure::new(
            "28000",
            "--auth needs users: add one with sluice serve --add-user NAME (the password is read from standard input)",
        ));
    }
    // Each connection takes descriptors: past the open-file limit, a new
    // connection could not be accepted and its client would wait without
    // an answer. The limit is raised as far as it goes, and connections
    // are held to what it allows, those past it refused with 53300.
    if let Some(limit) = raise_fd_limit() {
        let most = connections_for_fd_limit(limit);
        if opts.max_connections > most {
            eprintln!(
                "sluice serve: the open-file limit ({limit}) allows {most} connections; --max-connections {} lowered to {most} (raise the limit with ulimit -n to allow more)",
                opts.max_connections
            );
            opts.max_connections = most;
        }
    }
    // Accepts and signals only: connections are served on threads of
    // their own (see `ConnThreads`).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::internal(format!("starting the runtime: {e}")))?;
    let engine = Arc::new(Engine::new(opts.clone())?);
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(opts.listen)
            .await
            .map_err(|e| Failure::new("08000", format!("cannot listen on {}: {e}", opts.listen)))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Failure::internal(e.to_string()))?;
        ready(addr, &engine);
        let stop = async {
            let ctrl_c = tokio::signal::ctrl_c();
            #[cfg(unix)]
            {
                let mut term =
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
                match term.as_mut() {
                    Ok(t) => {
                        tokio::select! { _ = ctrl_c => {}, _ = t.recv() => {} }
                    }
                    Err(_) => {
                        let _ = ctrl_c.await;
                    }
                }
            }
            #[cfg(not(unix))]
            let _ = ctrl_c.await;
        };
        serve_on(listener, engine, stop)
            .await
            .map_err(|e| Failure::internal(e.to_string()))
    })
}

/// Raises the limit of open files to its hard maximum: each connection
/// holds two descriptors, and the usual soft limit (1024) is below
/// `--max-connections`' default.
/// Raises the open-file soft limit to the hard limit; returns the soft
/// limit then in force (`None`: unknown or unlimited).
fn raise_fd_limit() -> Option<u64> {
    #[cfg(unix)]
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local struct.
    unsafe {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return None;
        }
        if r.rlim_cur < r.rlim_max {
            let want = libc::rlimit {
                rlim_cur: r.rlim_max,
                rlim_max: r.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 {
                r.rlim_cur = r.rlim_max;
            }
        }
        if r.rlim_cur == libc::RLIM_INFINITY {
            return None;
        }
        Some(r.rlim_cur as u64)
    }
    #[cfg(not(unix))]
    None
}

/// Descriptors a connection holds: its socket and a second handle on it
/// (the watch that sees a client gone).
pub const FDS_PER_CONNECTION: u64 = 2;
/// Descriptors kept for everything else: the database's files, the
/// connection threads' epoll and inotify sets, the runtime's.
pub const FDS_RESERVED: u64 = 128;
/// Connections past `--max-connections` that are still read, to be told
/// SQLSTATE 53300 (beyond, a connection is closed unread).
const REFUSED_GRACE: usize = 64;

/// The most connections an open-file limit of `limit` descriptors lets
/// the server honour, with room to refuse those past it with 53300.
pub fn connections_for_fd_limit(limit: u64) -> usize {
    let usable = limit.saturating_sub(FDS_RESERVED) / FDS_PER_CONNECTION;
    (usable as usize).saturating_sub(REFUSED_GRACE).max(1)
}

/// A server on a thread of its own (listen on port 0 to have one picked),
/// stopped and joined when dropped: for workloads that drive a server
/// from the same process.
pub struct Background {
    pub addr: SocketAddr,
    pub engine: Arc<Engine>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    pub fn start(opts: Options) -> Result<Background, Failure> {
        let engine = Arc::new(Engine::new(opts)?);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Failure::internal(format!("starting the runtime: {e}")))?;
        let listen = engine.opts.listen;
        // Bound here (a caller may be inside a runtime of its own, where
        // blocking on this one is not allowed), served on the thread.
        let listener = std::net::TcpListener::bind(listen)
            .and_then(|l| l.set_nonblocking(true).map(|_| l))
            .map_err(|e| Failure::new("08000", format!("cannot listen on {listen}: {e}")))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Failure::internal(e.to_string()))?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let e = engine.clone();
        let thread = std::thread::spawn(move || {
            rt.block_on(async move {
                if let Ok(l) = tokio::net::TcpListener::from_std(listener) {
                    let _ = serve_on(l, e, async {
                        let _ = rx.await;
                    })
                    .await;
                }
            });
            rt.shutdown_timeout(Duration::from_secs(5));
        });
        Ok(Background {
            addr,
            engine,
            stop: Some(tx),
            thread: Some(thread),
        })
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{DataType, Field, Schema};

    fn schema(types: &[DataType]) -> SchemaRef {
        Arc::new(Schema::new(
            types
                .iter()
                .enumerate()
                .map(|(i, t)| Field::new(format!("c{i}"), t.clone(), true))
                .collect::<Vec<_>>(),
        ))
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_scan_thread_and_the_workers_it_starts_yield_to_connections() {
        let nice =
            || unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) };
        let before = nice();
        let (scan, worker) = std::thread::spawn(move || {
            yield_to_connections();
            (nice(), std::thread::spawn(nice).join().unwrap())
        })
        .join()
        .unwrap();
        assert_eq!(
            (scan, worker),
            (SCAN_NICE.max(before), SCAN_NICE.max(before))
        );
        assert_eq!(nice(), before, "the caller's thread is left as it was");
    }

    /// A scan's thread started by a thread pinned to one CPU takes back
    /// every CPU it is given, and the workers it starts have them too.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_scan_thread_started_on_one_cpu_takes_back_every_cpu() {
        let all = place::allowed_cpus();
        if all.len() < 2 {
            eprintln!("skipped: {} CPU allowed", all.len());
            return;
        }
        let given = all.clone();
        let (scan, worker) = std::thread::spawn(move || {
            assert!(place::pin_current_thread(given[0]));
            std::thread::spawn(move || {
                let scan = scan_thread(&given);
                (
                    scan,
                    std::thread::spawn(place::allowed_cpus).join().unwrap(),
                )
            })
            .join()
            .unwrap()
        })
        .join()
        .unwrap();
        assert_eq!((&scan, &worker), (&all, &all));
        // Not pinned (nothing given): the thread keeps what it had.
        let first = all[0];
        let kept = std::thread::spawn(move || {
            assert!(place::pin_current_thread(first));
            std::thread::spawn(|| scan_thread(&[])).join().unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(kept, vec![first]);
    }

    #[test]
    fn wire_types_compare_as_postgresql_sees_them() {
        use DataType::*;
        let a = schema(&[Int64, Decimal128(10, 2), Utf8]);
        // A numeric of another scale is still numeric.
        assert!(same_wire_types(
            &a,
            &schema(&[Int64, Decimal128(38, 4), Utf8])
        ));
        assert!(!same_wire_types(
            &a,
            &schema(&[Int32, Decimal128(10, 2), Utf8])
        ));
        assert!(!same_wire_types(&a, &schema(&[Int64, Decimal128(10, 2)])));
        assert!(!same_wire_types(&a, &schema(&[Int64, Float64, Utf8])));
    }
}
