//! `sluice bench profile-workload`: the workload a profile-guided build
//! trains on. It runs the hot paths on data of its own (other seeds and
//! shapes than the benchmarks that measure the gain): CSV of every type,
//! large and small blocks, many small TSV files with an inferred schema,
//! rejected records, a keyed load checked against earlier runs, merged and
//! looked up one key and many at a time, aggregate queries, and JSON lines
//! loaded into a sharded table. It is not
//! a benchmark: it prints how long each part took, nothing to compare.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use sluice::load::{LoadOptions, OnError, load};
use sluice::parse::Dialect;
use sluice::source::Input;
use sluice::store::Database;

use crate::generate::ints::write_ints_file;
use crate::generate::objects::{keyed_files, object_id, rows_as_json};
use crate::generate::sales::{self, write_sales};
use crate::generate::text::{write_prices, write_readings};
use crate::generate::{Limit, Rng};

/// Queries over the sales table: grouped aggregates on decimals and
/// dates (Q1-like), distinct counts, filters, LIKE, ORDER BY with LIMIT.
const QUERIES: &[&str] = &[
    "SELECT paid, count(*), sum(price), avg(price), sum(price * qty), avg(qty), min(sold), max(sold) FROM sales WHERE sold <= DATE '2024-12-01' - INTERVAL '90' DAY GROUP BY paid ORDER BY paid",
    "SELECT qty, count(*), sum(score), min(price), max(price) FROM sales GROUP BY qty ORDER BY qty",
    "SELECT count(DISTINCT customer), count(customer), count(*) FROM sales",
    "SELECT EXTRACT(YEAR FROM sold) AS y, sum(price) FROM sales WHERE paid AND qty BETWEEN 5 AND 20 GROUP BY y ORDER BY y",
    "SELECT customer, sum(qty) AS q FROM sales WHERE customer LIKE 'customer_1%' GROUP BY customer ORDER BY q DESC LIMIT 10",
    "SELECT id, price, at FROM sales WHERE at >= TIMESTAMP '2023-06-01 00:00:00' AND price > 99000 ORDER BY price DESC, id LIMIT 20",
    "SELECT count(*) FROM sales WHERE customer IS NULL OR score < 10",
];

/// Q1-shaped queries over the shipments table: low-cardinality TEXT
/// group keys, DECIMAL arithmetic, a date filter.
const SHIPMENT_QUERIES: &[&str] = &[
    "SELECT flag, status, sum(qty), sum(price), sum(price * (1 - disc)), sum(price * (1 - disc) * (1 + tax)), avg(qty), avg(price), avg(disc), count(*) FROM shipments WHERE shipped <= DATE '2024-12-01' - INTERVAL '90' DAY GROUP BY flag, status ORDER BY flag, status",
    "SELECT sum(price * disc) FROM shipments WHERE shipped >= DATE '2021-01-01' AND shipped < DATE '2022-01-01' AND disc BETWEEN 0.05 AND 0.07 AND qty < 24",
    "SELECT mode, count(*), min(shipped), max(shipped) FROM shipments GROUP BY mode ORDER BY mode",
];

/// Writes a result as `sluice query` and `sluice get` print it, in every
/// format, to nowhere.
fn print_all(r: &arrow_array::RecordBatch) -> Result<()> {
    for f in [
        crate::output::Format::Csv,
        crate::output::Format::Json,
        crate::output::Format::Table,
    ] {
        crate::output::write_result(
            &mut std::io::sink(),
            &r.schema(),
            std::slice::from_ref(r),
            f,
        )?;
    }
    Ok(())
}

fn time<T>(what: &str, quiet: bool, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let start = Instant::now();
    let v = f().with_context(|| what.to_string())?;
    if !quiet {
        eprintln!("{what}: {:.2} s", start.elapsed().as_secs_f64());
    }
    Ok(v)
}

pub fn run(dir: Option<PathBuf>, scale: f64, quiet: bool) -> Result<()> {
    let (dir, temporary) = match dir {
        Some(d) => (d, false),
        None => (
            std::env::temp_dir().join(format!("sluice-profile-{}", std::process::id())),
            true,
        ),
    };
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let rows = |n: f64| ((n * scale) as u64).max(100);
    let start = Instant::now();

    // CSV of every type: big blocks on every core, then small blocks on
    // one (small batches).
    let csv = dir.join("sales.csv");
    write_sales(&csv, rows(1_500_000.0), 1_234)?;
    let db_dir = dir.join("db");
    let mut db = Database::open_writer(&db_dir)?;
    let sales = LoadOptions {
        schema: Some(sales::SCHEMA.parse()?),
        ..LoadOptions::default()
    };
    time("load sales.csv", quiet, || {
        Ok(load(&mut db, "sales", &[Input::File(csv.clone())], &sales)?)
    })?;
    let small = LoadOptions {
        threads: Some(1),
        block_size: Some(64 << 10),
        reload: sluice::load::Reload::All,
        ..sales.clone()
    };
    time("load sales.csv in 64 KiB blocks, one thread", quiet, || {
        Ok(load(&mut db, "sales", &[Input::File(csv.clone())], &small)?)
    })?;
    for round in 0..5 {
        time(&format!("queries, round {}", round + 1), quiet, || {
            for q in QUERIES {
                sluice::query::query(&db, q, None).with_context(|| q.to_string())?;
            }
            Ok(())
        })?;
    }

    // Integers only, no header (the integer fast path on every column).
    let ints = dir.join("ints.csv");
    write_ints_file(
        &ints,
        Limit::Rows(rows(2_000_000.0)),
        4_242,
        &[1 << 40, 1 << 31, 100_000],
    )?;
    let int_opts = LoadOptions {
        schema: Some("x BIGINT, y BIGINT, z INT".parse()?),
        header: sluice::load::Header::No,
        ..LoadOptions::default()
    };
    time("load integers", quiet, || {
        Ok(load(
            &mut db,
            "ints",
            &[Input::File(ints.clone())],
            &int_opts,
        )?)
    })?;
    time("aggregate integers", quiet, || {
        let r = sluice::query::query(
            &db,
            "SELECT z / 10000 AS k, sum(x), sum(y), count(*), min(z), max(z) FROM ints GROUP BY k ORDER BY k",
            None,
        )?;
        for b in &r.batches {
            print_all(b)?;
        }
        Ok(())
    })?;

    // Lineitem-shaped rows and Q1-shaped queries.
    let ship = dir.join("shipments.csv");
    sales::write_shipments(&ship, rows(1_000_000.0), 77)?;
    let ship_opts = LoadOptions {
        schema: Some("id BIGINT, part BIGINT, qty DECIMAL(15,2), price DECIMAL(15,2), disc DECIMAL(15,2), tax DECIMAL(15,2), flag TEXT, status TEXT, shipped DATE, mode TEXT".parse()?),
        header: sluice::load::Header::No,
        ..LoadOptions::default()
    };
    time("load shipments", quiet, || {
        Ok(load(
            &mut db,
            "shipments",
            &[Input::File(ship.clone())],
            &ship_opts,
        )?)
    })?;
    for round in 0..10 {
        time(
            &format!("shipment queries, round {}", round + 1),
            quiet,
            || {
                for q in SHIPMENT_QUERIES {
                    let r = sluice::query::query(&db, q, None).with_context(|| q.to_string())?;
                    if round == 0 {
                        for b in &r.batches {
                            print_all(b)?;
                        }
                    }
                }
                Ok(())
            },
        )?;
    }

    // Many small TSV files, schema inferred as `sluice load` does.
    let small_dir = dir.join("small");
    std::fs::create_dir_all(&small_dir)?;
    let inputs: Vec<Input> = write_readings(&small_dir, rows(2_000.0), 99)?
        .into_iter()
        .map(Input::File)
        .collect();
    let inferred = time("infer a schema", quiet, || {
        Ok(sluice::infer::infer(
            &inputs,
            &sluice::infer::InferOptions::default(),
        )?)
    })?;
    let readings = LoadOptions {
        schema: Some(inferred.schema.clone()),
        dialect: inferred.dialect.clone(),
        header: sluice::load::Header::Yes,
        ..LoadOptions::default()
    };
    time("load many small files", quiet, || {
        Ok(load(&mut db, "readings", &inputs, &readings)?)
    })?;
    time("query them", quiet, || {
        Ok(sluice::query::query(
            &db,
            "SELECT station, count(*), avg(reading), max(day) FROM readings GROUP BY station ORDER BY 3 DESC LIMIT 5",
            None,
        )?)
    })?;

    // Malformed records, rejected.
    let bad = dir.join("bad.csv");
    write_prices(&bad, rows(20_000.0))?;
    let rejecting = LoadOptions {
        schema: Some("id BIGINT, price DECIMAL(10,2), k INT".parse()?),
        on_error: OnError::Skip,
        rejects: Some(dir.join("rejects.csv")),
        ..LoadOptions::default()
    };
    time("load with rejects", quiet, || {
        Ok(load(
            &mut db,
            "prices",
            &[Input::File(bad.clone())],
            &rejecting,
        )?)
    })?;

    // A keyed table: two loads (the second checked against the first's
    // runs), a merge, lookups one at a time and in batches, and SQL.
    let files = keyed_files(&dir, 8, rows(250_000.0), 0x5eed)?;
    let keyed = LoadOptions {
        schema: Some("source_id TEXT PRIMARY KEY, chunk INT, sub INT".parse()?),
        dialect: Dialect {
            delimiter: b'\t',
            ..Dialect::default()
        },
        header: sluice::load::Header::No,
        ..LoadOptions::default()
    };
    let inputs: Vec<Input> = files.iter().cloned().map(Input::File).collect();
    for (i, part) in inputs.chunks(1).enumerate() {
        time(&format!("keyed load {}", i + 1), quiet, || {
            Ok(load(&mut db, "objects", part, &keyed)?)
        })?;
    }
    time("merge the key index", quiet, || Ok(db.compact("objects")?))?;
    let mut keys = Vec::new();
    let per_file = rows(250_000.0);
    let mut rng = Rng::new(3);
    for _ in 0..rows(300_000.0) {
        let n = rng.below(8 * per_file);
        keys.push(object_id(n ^ 0x5eed).to_string());
    }
    time("lookups, one at a time and in batches", quiet, || {
        let t = db.keyed("objects")?;
        let mut found = 0usize;
        for k in &keys {
            found += t.get(k)?.is_some() as usize;
        }
        for batch in keys.chunks(1000) {
            let rows = t.get_many(batch)?;
            found += rows.num_rows();
            crate::output::write_result(
                &mut std::io::sink(),
                &rows.schema(),
                std::slice::from_ref(&rows),
                crate::output::Format::Csv,
            )?;
        }
        anyhow::ensure!(
            found >= keys.len(),
            "lookups found {found} of {}",
            2 * keys.len()
        );
        Ok(())
    })?;
    time("lookups in SQL", quiet, || {
        for batch in keys.chunks(50).take(20) {
            let list: Vec<String> = batch.iter().map(|k| format!("'{k}'")).collect();
            let sql = format!(
                "SELECT sum(chunk), count(*) FROM objects WHERE source_id IN ({})",
                list.join(", ")
            );
            sluice::query::query(&db, &sql, None)?;
        }
        Ok(())
    })?;
    // The server: prepared key lookups from one client and from 32 at
    // once (text and binary results), and aggregates over the protocol.
    time(
        "serve: key lookups and queries over the protocol",
        quiet,
        || serve_workload(&dir.join("db"), &keys, quiet),
    )?;
    // The same rows as JSON lines, into a keyed table of 4 shards: the
    // JSON scanner, and batches cut by shard.
    let jsonl = dir.join("objects.jsonl");
    {
        let mut out = std::io::BufWriter::new(
            std::fs::File::create(&jsonl)
                .with_context(|| format!("creating {}", jsonl.display()))?,
        );
        for f in &files[..files.len() / 2] {
            let text = std::fs::read_to_string(f)?;
            let mut json = String::with_capacity(text.len() * 2);
            rows_as_json(&text, ["source_id", "chunk", "sub"], &mut json)
                .with_context(|| f.display().to_string())?;
            out.write_all(json.as_bytes())?;
        }
        out.flush()?;
    }
    let json = LoadOptions {
        format: sluice::parse::Format::Json(sluice::parse::JsonFormat::default()),
        shards: Some(4),
        ..keyed.clone()
    };
    time("JSON lines into 4 shards", quiet, || {
        Ok(load(
            &mut db,
            "objects_json",
            &[Input::File(jsonl.clone())],
            &json,
        )?)
    })?;
    drop(db);
    if temporary {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    println!(
        "profile workload done in {:.1} s (scale {scale})",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Drives an in-process `sluice serve` over `db` with `keys` of its
/// objects table.
fn serve_workload(db: &std::path::Path, keys: &[String], quiet: bool) -> Result<()> {
    use super::pgwire::Client;
    let opts = sluice_server::Options::new(db, "127.0.0.1:0".parse()?);
    let srv =
        sluice_server::Background::start(opts).map_err(|f| anyhow::anyhow!("{}", f.message))?;
    let port = srv.addr.port();
    let lookup = "SELECT source_id, chunk, sub FROM objects WHERE source_id = $1";
    let one = move |keys: &[String], binary: bool| -> Result<usize> {
        let mut c = Client::connect(port, "profile")?;
        c.prepare("k", lookup)?;
        let mut found = 0;
        for k in keys {
            found += c.execute("k", &[k], binary)?;
        }
        Ok(found)
    };
    let n = keys.len().min(20_000);
    let mut found = one(&keys[..n], false)?;
    let per = (n / 32).max(1);
    let handles: Vec<_> = keys[..n]
        .chunks(per)
        .enumerate()
        .map(|(i, part)| {
            let part = part.to_vec();
            std::thread::spawn(move || one(&part, i % 2 == 0))
        })
        .collect();
    for h in handles {
        found += h
            .join()
            .map_err(|_| anyhow::anyhow!("a client thread panicked"))??;
    }
    let mut c = Client::connect(port, "profile")?;
    for q in QUERIES.iter().take(3) {
        c.simple(q)?;
    }
    c.simple("SELECT count(*) FROM objects WHERE chunk < 100")?;
    anyhow::ensure!(found >= n, "the server found {found} of {} keys", 2 * n);
    if !quiet {
        eprintln!(
            "  {} queries served",
            srv.engine
                .queries
                .load(std::sync::atomic::Ordering::Relaxed)
        );
    }
    Ok(())
}
