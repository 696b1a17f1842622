//! The soak of `sluice bench serve --soak SECONDS`: one `sluice serve`
//! under pgbench's prepared point selects for SECONDS while other clients
//! misbehave beside them — garbage bytes, malformed protocol messages
//! (a Parse declaring -1 parameters, a Bind of a bad length), expressions
//! nested past the limit and 100,000-value `IN` lists, results dropped
//! mid-stream, idle connections held — and a checker compares answers
//! with the library's on the same database all along.
//!
//! The figures: the server's process never ends (zero restarts), zero
//! wrong answers, and the p99 of the point selects beside the noise
//! against a quiet run of the same clients (the goal: within 3×).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Result, bail};

use super::serve::{Served, psql_rows};

/// What the misbehaving clients did, counted.
#[derive(Default)]
struct Counts {
    garbage: AtomicU64,
    malformed: AtomicU64,
    deep: AtomicU64,
    dropped: AtomicU64,
    checks: AtomicU64,
    wrong: AtomicU64,
}

/// A small xorshift generator (the soak needs no statistical quality).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn frame(t: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![t];
    m.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    m.extend_from_slice(body);
    m
}

/// A raw connection past its startup (trust), or `None` when the server
/// refuses it (its connection limit) or is slow.
fn raw(port: u16) -> Option<TcpStream> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut body = 196_608u32.to_be_bytes().to_vec();
    body.extend_from_slice(b"user\0soak\0\0");
    let mut m = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    m.extend_from_slice(&body);
    s.write_all(&m).ok()?;
    // Up to ReadyForQuery.
    loop {
        let mut head = [0u8; 5];
        s.read_exact(&mut head).ok()?;
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut b = vec![0u8; len.saturating_sub(4)];
        s.read_exact(&mut b).ok()?;
        match head[0] {
            b'Z' => return Some(s),
            b'E' => return None,
            _ => {}
        }
    }
}

/// Reads whatever comes back for a while (a reply or the close).
fn drain(s: &mut TcpStream) {
    let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
    let mut buf = [0u8; 8192];
    for _ in 0..8 {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
}

/// Runs the soak against a fresh server on `db` (its keyed table
/// `objects` of `rows` rows); pgbench drives `script` with `clients`.
#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    exe: &Path,
    db: &Path,
    rows: u64,
    seconds: u64,
    clients: usize,
    hold: usize,
    bench: &dyn Fn(u16, usize, u64) -> Result<super::serve::Run>,
    quiet: bool,
) -> Result<()> {
    let srv = Served::sluice(exe, db)?;
    let port = srv.port;
    let pid = srv.child.id();
    // The answers the checker expects: the library's on the same files.
    let mut checks: Vec<String> = [1, rows / 2 + 1, rows, rows + 1]
        .iter()
        .map(|id| format!("SELECT id, a, b FROM objects WHERE id = {id}"))
        .collect();
    checks.push("SELECT count(*), sum(a), sum(b), min(id), max(id) FROM objects".into());
    checks.push("SELECT count(*) FROM objects WHERE id IN (1, 2, 3, 5, 8, 13, 21, 34)".into());
    let expected: Vec<super::answers::Rows> = checks
        .iter()
        .map(|q| super::answers::sluice_answer(db, q))
        .collect::<Result<_>>()?;
    let quiet_secs = (seconds / 10).clamp(5, 60);
    if !quiet {
        eprintln!("soak: a quiet run of {clients} clients, {quiet_secs} s ...");
    }
    let calm = bench(port, clients, quiet_secs)?;

    let stop = Arc::new(AtomicBool::new(false));
    let n = Arc::new(Counts::default());
    let mut threads = Vec::new();
    // Garbage: random bytes before any startup, or after one.
    {
        let (stop, n) = (stop.clone(), n.clone());
        threads.push(std::thread::spawn(move || {
            let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
            while !stop.load(Ordering::Relaxed) {
                let len = 1 + (rng.next() % 4096) as usize;
                let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                let s = if rng.next().is_multiple_of(2) {
                    TcpStream::connect(("127.0.0.1", port)).ok()
                } else {
                    raw(port)
                };
                if let Some(mut s) = s {
                    let _ = s.write_all(&bytes);
                    drain(&mut s);
                    n.garbage.fetch_add(1, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }));
    }
    // Malformed messages: a Parse declaring -1 parameters, a Bind whose
    // parameter is longer than its message, an unknown message type.
    {
        let (stop, n) = (stop.clone(), n.clone());
        threads.push(std::thread::spawn(move || {
            let mut parse = b"\0SELECT 1\0".to_vec();
            parse.extend_from_slice(&(-1i16).to_be_bytes());
            let mut bind = b"\0\0".to_vec();
            bind.extend_from_slice(&0u16.to_be_bytes());
            bind.extend_from_slice(&1u16.to_be_bytes());
            bind.extend_from_slice(&1_000_000i32.to_be_bytes());
            let bad = [
                frame(b'P', &parse),
                frame(b'B', &bind),
                frame(b'!', b"what"),
            ];
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                if let Some(mut s) = raw(port) {
                    let mut m = bad[i % bad.len()].clone();
                    m.extend_from_slice(&frame(b'S', b""));
                    let _ = s.write_all(&m);
                    drain(&mut s);
                    n.malformed.fetch_add(1, Ordering::Relaxed);
                }
                i += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
        }));
    }
    // Deep and wide: past the depth limit, and a 100,000-value IN list.
    {
        let (stop, n) = (stop.clone(), n.clone());
        threads.push(std::thread::spawn(move || {
            let deep = format!("SELECT 1{}", "+1".repeat(20_000));
            let wide = format!(
                "SELECT count(*) FROM objects WHERE id IN ({})",
                (0..100_000)
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            );
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if let Ok(mut c) = super::pgwire::Client::connect(port, "soak") {
                    // An error answer (54001) is the right one for `deep`.
                    let _ = c.simple(if i.is_multiple_of(2) { &deep } else { &wide });
                    n.deep.fetch_add(1, Ordering::Relaxed);
                }
                i += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
        }));
    }
    // Results dropped mid-stream: a whole-table query, a few bytes read.
    {
        let (stop, n) = (stop.clone(), n.clone());
        threads.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Some(mut s) = raw(port) {
                    let _ = s.write_all(&frame(b'Q', b"SELECT * FROM objects\0"));
                    let mut buf = [0u8; 4096];
                    let _ = s.read(&mut buf);
                    drop(s);
                    n.dropped.fetch_add(1, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }));
    }
    // The checker: every answer against the library's.
    {
        let (stop, n) = (stop.clone(), n.clone());
        let (checks, expected) = (checks.clone(), expected.clone());
        threads.push(std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let k = i % checks.len();
                if let Ok(got) = psql_rows(port, &checks[k]) {
                    n.checks.fetch_add(1, Ordering::Relaxed);
                    if super::answers::check_between(
                        &checks[k],
                        ("sluice serve", &got),
                        ("the library", &expected[k]),
                        false,
                    )
                    .is_err()
                    {
                        n.wrong.fetch_add(1, Ordering::Relaxed);
                    }
                }
                i += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
        }));
    }
    // Idle connections held for the whole soak.
    let held: Vec<super::pgwire::Client> = (0..hold)
        .filter_map(|_| super::pgwire::Client::connect(port, "soak").ok())
        .collect();
    if !quiet {
        eprintln!(
            "soak: {seconds} s of {clients} point-select clients beside garbage, malformed messages, deep and wide queries, dropped results, {} idle connections and a checker ...",
            held.len()
        );
    }
    let noisy = bench(port, clients, seconds);
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    drop(held);
    let mut srv = srv;
    let alive = srv.child.try_wait().map(|s| s.is_none()).unwrap_or(false);
    let last = psql_rows(port, &checks[4]);
    let noisy = noisy?;
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let ratio = noisy.p99_ms / calm.p99_ms;
    for (what, v) in [
        ("quiet p99 ms", calm.p99_ms),
        ("soak p99 ms", noisy.p99_ms),
        ("soak tps", noisy.tps),
        ("wrong answers", get(&n.wrong) as f64),
        ("restarts", if alive { 0.0 } else { 1.0 }),
    ] {
        let case = serde_json::json!({"soak": what, "seconds": seconds, "clients": clients});
        super::record::value("sluice", case, "value", "", v);
    }
    println!(
        "\nsoak, sluice serve (pid {pid}): {seconds} s; {clients} pgbench clients: p99 {:.2} ms quiet, {:.2} ms beside the noise ({ratio:.2}x; goal within 3x), {:.0} -> {:.0} tps, {} failed",
        calm.p99_ms, noisy.p99_ms, calm.tps, noisy.tps, noisy.failed
    );
    println!(
        "  beside them: {} garbage connections, {} malformed messages, {} deep or 100,000-value IN queries, {} results dropped mid-stream, {hold} idle connections held; {} answers checked against the library's, {} wrong; server {}",
        get(&n.garbage),
        get(&n.malformed),
        get(&n.deep),
        get(&n.dropped),
        get(&n.checks),
        get(&n.wrong),
        if alive {
            "up all along (0 restarts)"
        } else {
            "DOWN"
        }
    );
    if !alive || last.is_err() {
        bail!("soak: the server process ended during the soak");
    }
    if get(&n.wrong) > 0 {
        bail!("soak: {} wrong answers", get(&n.wrong));
    }
    if get(&n.checks) == 0 {
        bail!("soak: the checker got no answer at all");
    }
    Ok(())
}
