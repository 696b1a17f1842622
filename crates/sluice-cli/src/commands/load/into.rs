//! `sluice load --into URL`: the same load, a PostgreSQL or MariaDB
//! server's table at the end (`sluice_remote`): the server's table read or created, the
//! files its journal records skipped, the rows loaded over parallel
//! connections, the primary key added after them, the summary printed.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use sluice::load::sink::Sink;
use sluice::load::{LoadSummary, Progress, load_planned, prepare_for, resume_inputs};
use sluice_remote::Target;

use super::{
    IndexArg, LoadArgs, OnDuplicateArg, chained, has_streams, load_error, print_summary, request,
    show_schema, stop_on_interrupt,
};
use crate::util;

/// Copy connections when `--connections` is not given: one a core of
/// this machine (each encodes its share), at most this many (see
/// BENCHMARKS.md, "into": past the server's cores more connections only
/// wait on each other).
const MAX_DEFAULT_CONNECTIONS: usize = 8;

pub(super) fn run(threads: Option<usize>, quiet: bool, a: &LoadArgs) -> Result<()> {
    let url = a.into.as_deref().unwrap_or_default();
    for (given, option) in [
        (a.shards.is_some(), "--shards"),
        (a.shard_by.is_some(), "--shard-by"),
        (!a.shard_paths.is_empty(), "--shard-paths"),
        (a.compression.is_some(), "--compression"),
        (
            a.on_duplicate == OnDuplicateArg::Skip,
            "--on-duplicate skip",
        ),
        (a.read.hive_partitioning, "--hive-partitioning"),
    ] {
        if given {
            bail!(
                "{option} is for sluice's own tables; it does not apply to a load --into a server"
            );
        }
    }
    if a.connections == Some(0) {
        bail!("--connections must be at least 1");
    }
    let target = Target::parse(url, a.password_file.as_deref()).map_err(chained)?;
    // Into PostgreSQL a table may name its schema (`public.t`, or a
    // name in double quotes); into MariaDB the URL's database is it.
    let table = match &target {
        Target::Postgres(_) => sluice_remote::pg::table_name(&a.table).map_err(chained)?,
        Target::MariaDb(_) => {
            sluice::batch::validate_identifier(&a.table, "table").map_err(chained)?;
            a.table.to_ascii_lowercase()
        }
    };
    let inputs = sluice::source::expand(&a.inputs)?;
    let given = request(a, threads).columnar;
    if sluice::load::columnar::detect(&inputs, given)
        .map_err(chained)?
        .is_some()
    {
        bail!(
            "--into loads text inputs (CSV, TSV, JSON); Parquet and Arrow files into a server are not built yet"
        );
    }
    let mut pg = target.connect(&table).map_err(chained)?;
    let (repaired_commits, repaired_rows) = pg.repaired();
    if repaired_commits > 0 && !quiet {
        let s = |n: u64| if n == 1 { "" } else { "s" };
        if let Target::Postgres(_) = target {
            eprintln!(
                "removed {repaired_rows} row{} of {repaired_commits} commit{} a crash interrupted (their files load again)",
                s(repaired_rows),
                s(repaired_commits)
            );
        } else {
            eprintln!(
                "settled {repaired_commits} prepared transaction{} of a commit a crash interrupted",
                s(repaired_commits)
            );
        }
    }
    let req = request(a, threads);
    let mut prepared =
        prepare_for(pg.existing_schema().cloned(), &inputs, &req).map_err(chained)?;
    if a.read.schema.is_some() {
        pg.check_schema(&prepared.schema).map_err(chained)?;
    }
    // The key the load asks for: --key on an existing table without one
    // adds it after the rows, as for a new table.
    let mut schema = prepared.schema.clone();
    if let (Some(k), None) = (&a.read.key, schema.key_column()) {
        schema.set_key(k).map_err(chained)?;
    }
    if show_schema(&a.read, &a.table, &prepared, quiet) {
        return Ok(());
    }
    let index = match (a.index, a.index_first) {
        (Some(i), _) => i,
        (None, true) => IndexArg::First,
        (None, false) => match target {
            Target::MariaDb(_) => IndexArg::Sorted,
            Target::Postgres(_) => IndexArg::After,
        },
    };
    let sort_bytes = match (&a.sort_memory, index) {
        (Some(_), IndexArg::After | IndexArg::First) => {
            bail!("--sort-memory is for --index sorted")
        }
        (Some(s), IndexArg::Sorted) => match util::parse_size(s, "--sort-memory")? {
            0 => bail!("--sort-memory must be more than 0"),
            n => Some(n),
        },
        (None, IndexArg::Sorted) => Some(sluice_remote::default_sort_memory()),
        (None, _) => None,
    };
    let sort_bytes = sort_bytes.map(|b| usize::try_from(b).unwrap_or(usize::MAX));
    let created = pg
        .create_table(&schema, index != IndexArg::After)
        .map_err(chained)?;
    let journaled = pg.journaled().map_err(chained)?;
    let plan = resume_inputs(&inputs, &journaled, &prepared.options).map_err(chained)?;
    let connections = a
        .connections
        .unwrap_or_else(|| sluice::exec::worker_count(threads).clamp(1, MAX_DEFAULT_CONNECTIONS));
    let mut sink = pg
        .sink(&prepared.schema, connections, sort_bytes)
        .map_err(chained)?;
    let stop = stop_on_interrupt(has_streams(&inputs));
    let progress = Arc::new(Progress::default());
    prepared.options.progress = Some(progress.clone());
    prepared.options.stop = Some(stop.clone());
    let total_bytes: Option<u64> = plan.todo.iter().map(|i| i.len()).sum();
    let show_bar = !quiet && std::io::stderr().is_terminal();
    let bar = show_bar
        .then(|| util::spawn_progress(progress.clone(), total_bytes, plan.todo.len() as u64));
    let result = load_planned(
        sink.as_mut() as &mut dyn Sink<'_>,
        &table,
        &plan.todo,
        &plan,
        &prepared.options,
    );
    if let Some((stop, handle)) = bar {
        stop.store(true, Ordering::Relaxed);
        let _ = handle.join();
    }
    let any_committed = sink.any_committed();
    let connections = sink.connections();
    let sorted_runs = sink.sorted_runs();
    drop(sink);
    let summary = match result {
        Ok(s) => s,
        Err(e) => {
            // A table this load created and nothing committed to: gone
            // again (after a commit, the next run settles it).
            if created && !any_committed {
                let _ = pg.drop_created();
            }
            return Err(load_error(
                e,
                &format!("loading table {table}"),
                &prepared,
                "nothing was committed",
            ));
        }
    };
    let stopped = summary.files_left > 0 || stop.load(Ordering::Relaxed);
    let mut key_seconds = None;
    if !stopped {
        let start = Instant::now();
        if pg
            .finish(&schema)
            .map_err(chained)
            .with_context(|| format!("loading into {table} on {}", target.shown()))?
        {
            key_seconds = Some(start.elapsed().as_secs_f64());
        }
    }
    print_into_summary(
        &summary,
        a,
        &IntoInfo {
            url: target.shown(),
            connections,
            key: schema.key_column().map(|k| schema.columns[k].name.as_str()),
            key_seconds,
            sorted_runs,
            repaired_rows,
            note: pg.note(),
        },
        quiet,
    )?;
    if stopped {
        std::io::stdout().flush()?;
        std::process::exit(130);
    }
    Ok(())
}

/// What the summary of a load into a server adds.
struct IntoInfo<'a> {
    url: &'a str,
    connections: usize,
    key: Option<&'a str>,
    /// Seconds the primary key took to add after the rows.
    key_seconds: Option<f64>,
    /// The rows went in key order: the most sorted runs a connection sent
    /// in one commit group.
    sorted_runs: Option<u64>,
    repaired_rows: u64,
    /// How the rows were sent, when it is not the usual way.
    note: Option<String>,
}

fn print_into_summary(
    s: &LoadSummary,
    a: &LoadArgs,
    info: &IntoInfo<'_>,
    quiet: bool,
) -> Result<()> {
    if a.read.json {
        let mut v = serde_json::to_value(s)?;
        v["mb_per_s"] = serde_json::json!(s.mb_per_s());
        v["rows_per_s"] = serde_json::json!(s.rows_per_s());
        v["into"] = serde_json::json!({
            "url": info.url,
            "connections": info.connections,
            "primary_key_added": info.key_seconds.map(|_| info.key),
            "primary_key_seconds": info.key_seconds,
            "key_order_runs": info.sorted_runs,
            "repaired_rows": info.repaired_rows,
            "note": info.note,
        });
        println!("{v}");
        return Ok(());
    }
    print_summary(s, a.read.rejects.as_deref(), false, quiet)?;
    if quiet || (s.files == 0 && info.key_seconds.is_none()) {
        return Ok(());
    }
    println!(
        "into {} over {} connection{}",
        info.url,
        info.connections,
        if info.connections == 1 { "" } else { "s" }
    );
    if let (Some(k), Some(t)) = (info.key, info.key_seconds) {
        println!("primary key ({k}) added after the rows in {t:.2} s");
    }
    match info.sorted_runs {
        Some(0 | 1) => println!("rows sent in key order"),
        Some(n) => println!(
            "rows sent in key order, in up to {n} sorted runs a connection and commit (a larger --sort-memory sends fewer)"
        ),
        None => {}
    }
    if let Some(n) = &info.note {
        println!("{n}");
    }
    Ok(())
}
