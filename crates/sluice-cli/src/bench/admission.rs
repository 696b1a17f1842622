//! `sluice bench admission`: several clients of one `sluice serve` under
//! one `--memory-limit`, each running TPC-H queries in turn, with
//! `--memory-wait 0` (a query short of memory beside the others fails with
//! 53200, as before admission) and with admission (it waits for their
//! memory and runs again). Every answer is compared with the query's
//! answer from the server alone before anything is counted.
//!
//! Useful for: how many queries a loaded server answers under a memory
//! limit, and what the waits cost in wall time.
//! Not useful for: one query's speed (`bench tpch`), or queries past the
//! limit alone (`bench spill`).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::pgwire::{Answer, Client, TextRows};
use super::serve::Served;

pub struct Opts<'a> {
    pub sf: f64,
    pub clients: usize,
    pub rounds: usize,
    pub queries: &'a str,
    pub memory_limit: &'a str,
    pub memory_wait: &'a str,
    pub runs: usize,
    pub dir: &'a Path,
}

/// One run of every client: queries answered as alone, refused for
/// memory (53200), and the wall time.
struct Outcome {
    answered: usize,
    refused: usize,
    wall: f64,
}

pub fn run(o: Opts, quiet: bool) -> Result<()> {
    let queries: Vec<usize> = o
        .queries
        .split(',')
        .map(|q| {
            let n: usize = q
                .trim()
                .trim_start_matches(['q', 'Q'])
                .parse()
                .with_context(|| format!("--queries: {q:?} is not a TPC-H query number"))?;
            if !(1..=22).contains(&n) {
                bail!("--queries: {n} is not a TPC-H query (1 to 22)");
            }
            Ok(n)
        })
        .collect::<Result<_>>()?;
    if o.clients == 0 || o.rounds == 0 {
        bail!("--clients and --rounds must be at least 1");
    }
    let (_, db) = super::tpch::tables(&super::tpch::TPCH_DATA, o.sf, o.dir, quiet)?;
    let exe = super::common::sluice_exe()?;
    // Each query's answer from the server alone, no limit.
    let alone = {
        let served = Served::sluice(&exe, &db)?;
        let mut c = Client::connect(served.port, "bench")?;
        let mut alone = Vec::new();
        for &q in &queries {
            match c.rows(super::tpch::QUERIES[q - 1])? {
                Ok(rows) => alone.push(rows),
                Err((code, m)) => bail!("Q{q} alone: {code} {m}"),
            }
        }
        alone
    };
    let scans = o.clients.to_string();
    let waits = ["0", o.memory_wait];
    let mut out: Vec<Vec<Outcome>> = vec![Vec::new(), Vec::new()];
    for run in 0..o.runs.max(1) {
        for (w, wait) in waits.iter().enumerate() {
            let served = Served::sluice_with(
                &exe,
                &db,
                &[
                    "--memory-limit",
                    o.memory_limit,
                    "--scans-at-once",
                    &scans,
                    "--memory-wait",
                    wait,
                ],
            )?;
            let r = clients(served.port, &o, &queries, &alone)
                .with_context(|| format!("run {} with --memory-wait {wait}", run + 1))?;
            drop(served);
            if !quiet {
                eprintln!(
                    "run {}, --memory-wait {wait}: {} answered, {} refused, {:.3} s",
                    run + 1,
                    r.answered,
                    r.refused,
                    r.wall
                );
            }
            out[w].push(r);
        }
    }
    println!(
        "{} clients x {} rounds of TPC-H {} at SF {}, --memory-limit {}, --scans-at-once {}; medians of {} runs",
        o.clients,
        o.rounds,
        queries
            .iter()
            .map(|q| format!("Q{q}"))
            .collect::<Vec<_>>()
            .join(","),
        o.sf,
        o.memory_limit,
        o.clients,
        o.runs.max(1)
    );
    println!(
        "{:<14} {:>8} {:>9} {:>8} {:>9}",
        "memory_wait", "queries", "answered", "refused", "median_s"
    );
    let total = o.clients * o.rounds * queries.len();
    for (w, wait) in waits.iter().enumerate() {
        let med = |f: fn(&Outcome) -> f64| {
            super::common::median(&out[w].iter().map(f).collect::<Vec<_>>())
        };
        let (answered, refused, wall) = (
            med(|r| r.answered as f64),
            med(|r| r.refused as f64),
            med(|r| r.wall),
        );
        println!("{wait:<14} {total:>8} {answered:>9} {refused:>8} {wall:>9.3}");
        let case = serde_json::json!({ "memory_wait": wait, "memory_limit": o.memory_limit,
            "clients": o.clients, "sf": o.sf });
        let of = |f: fn(&Outcome) -> f64| out[w].iter().map(f).collect::<Vec<_>>();
        super::record::runs("sluice", case.clone(), "wall_s", "s", &of(|r| r.wall));
        super::record::runs(
            "sluice",
            case,
            "answered",
            "queries",
            &of(|r| r.answered as f64),
        );
    }
    Ok(())
}

/// Every client's rounds at once; fails on an answer unlike the one
/// alone, or an error other than 53200.
fn clients(port: u16, o: &Opts, queries: &[usize], alone: &[TextRows]) -> Result<Outcome> {
    let start = Instant::now();
    let answers: Vec<Result<Vec<(usize, Answer)>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..o.clients)
            .map(|_| {
                s.spawn(move || -> Result<Vec<(usize, Answer)>> {
                    let mut c = Client::connect(port, "bench")?;
                    c.read_timeout(Duration::from_secs(3600))?;
                    let mut got = Vec::new();
                    for _ in 0..o.rounds {
                        for (i, &q) in queries.iter().enumerate() {
                            got.push((i, c.rows(super::tpch::QUERIES[q - 1])?));
                        }
                    }
                    Ok(got)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a client thread panicked")))
            })
            .collect()
    });
    let wall = start.elapsed().as_secs_f64();
    let (mut answered, mut refused) = (0, 0);
    for a in answers {
        for (i, got) in a? {
            match got {
                Ok(rows) if rows == alone[i] => answered += 1,
                Ok(_) => bail!(
                    "Q{} answered unlike the query alone (under the memory limit)",
                    queries[i]
                ),
                Err((code, _)) if code == "53200" => refused += 1,
                Err((code, m)) => bail!("Q{}: {code} {m}", queries[i]),
            }
        }
    }
    Ok(Outcome {
        answered,
        refused,
        wall,
    })
}
