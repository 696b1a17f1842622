//! Loads that stop, crash or run out of disk, and are run again: real
//! `sluice load` processes killed with SIGKILL at random moments, a
//! Ctrl-C, an injected full disk, a second writer, readers during a load.
//! After each, the table is a committed state whose rows are exactly those
//! of the files its load journal names, and the same command finishes the
//! job with every row once.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::{Tmp, fails, ok, sluice};

const SCHEMA: &str = "id BIGINT PRIMARY KEY, v INT";

/// `files` CSV files `in/fNN.csv` of `rows` rows: id `f * 100000 + i`
/// (unique), v = f. Returns their names.
pub(crate) fn write_files(t: &Tmp, files: usize, rows: usize) -> Vec<String> {
    (0..files)
        .map(|f| {
            let name = format!("in/f{f:02}.csv");
            let text: String = (0..rows)
                .map(|i| format!("{},{f}\n", f * 100_000 + i))
                .collect();
            t.write(&name, text.as_bytes());
            name
        })
        .collect()
}

pub(crate) fn load_args<'a>(every: &'a str, files: &'a [String]) -> Vec<&'a str> {
    let mut a = vec![
        "--db",
        "db",
        "load",
        "--no-header",
        // Given, so that nothing reads the inputs before the load does.
        "--delimiter",
        ",",
        "--schema",
        SCHEMA,
        "--commit-every",
        every,
        "t",
    ];
    a.extend(files.iter().map(String::as_str));
    a
}

/// `sluice` in `t` with these arguments, not waited for; stderr piped.
pub(crate) fn command(t: &Tmp, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.current_dir(&t.0)
        .env_remove("SLUICE_DB")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// (rows, sum of v) of the table, or `None` when it does not exist yet.
pub(crate) fn count_and_sum(t: &Tmp) -> Option<(u64, u64)> {
    let o = sluice(
        &t.0,
        &[
            "--db",
            "db",
            "query",
            "--format",
            "csv",
            "SELECT count(*), coalesce(sum(v), 0) FROM t",
        ],
    );
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("no table") || err.contains("no database"),
            "query failed: {err}"
        );
        return None;
    }
    let out = String::from_utf8(o.stdout).unwrap();
    let line = out.lines().nth(1).expect("a result row");
    let (c, s) = line.split_once(',').expect("two columns");
    Some((c.parse().unwrap(), s.parse().unwrap()))
}

/// The files the load journal names (their `fNN` numbers), checked to be
/// named once each.
pub(crate) fn journaled(t: &Tmp) -> Vec<u64> {
    let v: serde_json::Value =
        serde_json::from_str(&ok(&t.0, &["--db", "db", "info", "--loads", "--json"])).unwrap();
    let mut files = Vec::new();
    for table in v.as_array().unwrap() {
        for load in table["loads"].as_array().unwrap() {
            for f in load["files"].as_array().unwrap() {
                let path = f["path"].as_str().unwrap();
                let name = path.rsplit('/').next().unwrap();
                files.push(name[1..3].parse::<u64>().unwrap());
            }
        }
    }
    let mut sorted = files.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(
        sorted.len(),
        files.len(),
        "a file journaled twice: {files:?}"
    );
    files
}

/// The table holds exactly the rows of the journaled files, and every
/// file of it checks out.
pub(crate) fn assert_consistent(t: &Tmp, rows: u64) {
    let Some((count, sum)) = count_and_sum(t) else {
        return;
    };
    let files = journaled(t);
    assert_eq!(count, rows * files.len() as u64, "files {files:?}");
    assert_eq!(sum, rows * files.iter().sum::<u64>(), "files {files:?}");
    let check = ok(&t.0, &["--db", "db", "check"]);
    assert!(check.lines().next().unwrap().ends_with(": ok"), "{check}");
}

/// A small deterministic generator for the kill times.
/// Runs `args` up to `rounds` times, each killed with SIGKILL after a
/// random 0–50 ms (seeded), until one finishes first; after every kill
/// the table must hold whole commits (`assert_consistent`). Returns how
/// many runs were killed.
pub(crate) fn kill_loop(t: &Tmp, args: &[&str], rounds: usize, seed: u64, rows: u64) -> usize {
    let mut seed = seed;
    let mut killed = 0;
    for round in 0..rounds {
        let mut child = command(t, args).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(next(&mut seed) % 50));
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        if out.status.success() {
            // It finished before the kill: nothing left to test this round.
            break;
        }
        killed += 1;
        // Ended by the kill, never by an error of its own.
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("error"), "round {round}: {err}");
        assert_consistent(t, rows);
    }
    killed
}

pub(crate) fn next(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    *seed >> 33
}

#[test]
fn loads_killed_at_random_moments_resume_to_every_row_exactly_once() {
    let t = Tmp::new();
    let (n, rows) = (24usize, 400u64);
    let files = write_files(&t, n, rows as usize);
    // Groups of two files: many commits, and a merge of the key index
    // every four of them, for the kills to land in.
    let args = load_args("2files", &files);
    let killed = kill_loop(&t, &args, 25, 7, rows);
    eprintln!("{killed} loads killed");
    assert!(killed > 0, "no load was killed");
    // The same command finishes the job.
    let out = ok(&t.0, &args);
    assert!(out.contains("into t"), "{out}");
    assert_eq!(
        count_and_sum(&t),
        Some((n as u64 * rows, rows * (0..n as u64).sum::<u64>()))
    );
    assert_eq!(journaled(&t).len(), n);
    assert_consistent(&t, rows);
    // And once more: nothing left to do.
    let out = ok(&t.0, &args);
    assert!(
        out.starts_with(&format!("skipped {n} files loaded by earlier commits")),
        "{out}"
    );
    let get = ok(&t.0, &["--db", "db", "get", "t", "0", "2300399", "99999"]);
    assert_eq!(get, "id,v\n0,0\n2300399,23\n");
}

#[test]
fn readers_see_whole_commits_while_a_load_runs() {
    let t = Tmp::new();
    let (n, rows) = (30usize, 200u64);
    let files = write_files(&t, n, rows as usize);
    let args = load_args("1file", &files);
    let mut child = command(&t, &args).spawn().unwrap();
    let mut seen = Vec::new();
    loop {
        let done = child.try_wait().unwrap().is_some();
        if let Some((count, sum)) = count_and_sum(&t) {
            // Whole files, in order: files 0..k.
            assert_eq!(count % rows, 0, "a partial file: {count} rows");
            let k = count / rows;
            assert_eq!(sum, rows * (0..k).sum::<u64>(), "{count} rows");
            seen.push(k);
        }
        if done {
            break;
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(seen.last(), Some(&(n as u64)));
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
}

#[test]
fn a_second_writer_is_refused_with_the_pid_and_a_dead_writers_lock_is_recovered() {
    let t = Tmp::new();
    let files = write_files(&t, 2, 10);
    ok(&t.0, &load_args("all", &files[..1]));
    // A writer that holds the lock while it waits for standard input.
    let mut holder = command(&t, &["--db", "db", "load", "--no-header", "t", "-"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = holder.id();
    // Wait (up to 30 s on a loaded machine) until it holds the lock: it
    // writes its pid there.
    let lock = t.0.join("db/LOCK");
    for _ in 0..3000 {
        if std::fs::read_to_string(&lock).is_ok_and(|s| s.trim() == pid.to_string()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let e = fails(&t.0, &load_args("all", &files[1..]));
    assert!(
        e.contains(&format!("is locked by another writer (pid {pid})")),
        "{e}"
    );
    // Readers are not blocked.
    assert_eq!(count_and_sum(&t), Some((10, 0)));
    // The holder dies without cleaning up: its lock goes with it.
    holder.kill().unwrap();
    holder.wait().unwrap();
    let out = ok(&t.0, &load_args("all", &files[1..]));
    assert!(out.starts_with("loaded 10 rows"), "{out}");
    assert_eq!(count_and_sum(&t), Some((20, 10)));
}

#[cfg(unix)]
#[test]
fn ctrl_c_keeps_the_commits_before_it_drops_a_cut_stream_and_the_rerun_loads_the_rest() {
    let t = Tmp::new();
    let files = write_files(&t, 8, 50);
    // The fourth input is a named pipe: the load commits files 0-2 (one
    // a group), then waits in it, which is when Ctrl-C comes. A stream
    // read when Ctrl-C comes may have been cut short (the shell stops the
    // whole pipeline): its group is not committed.
    let fifo = t.0.join("in/pipe.csv");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let mut inputs: Vec<String> = files[..3].to_vec();
    inputs.push("in/pipe.csv".into());
    inputs.extend_from_slice(&files[3..]);
    let args = load_args("1file", &inputs);
    let mut child = command(&t, &args).stdout(Stdio::piped()).spawn().unwrap();
    // Opening the pipe for writing waits until the load opens it.
    let mut pipe = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    // The shell's kill (no procps needed).
    let int = Command::new("sh")
        .args(["-c", &format!("kill -INT {}", child.id())])
        .status()
        .unwrap();
    assert!(int.success());
    // The signal is handled asynchronously: wait until the load says it
    // will stop, so that it has before the pipe's data comes.
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("stopping after the current file") {
        let mut line = String::new();
        let n = std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
        assert!(n > 0, "the load ended without stopping: {said}");
        said.push_str(&line);
    }
    pipe.write_all(b"999000,99\n999001,").unwrap();
    drop(pipe);
    let out = child.wait_with_output().unwrap();
    std::io::Read::read_to_string(&mut stderr, &mut said).unwrap();
    assert_eq!(out.status.code(), Some(130), "{said}");
    assert!(
        said.contains("stopped while reading a stream (standard input or a pipe), which may have been cut short: its group was not committed (3 files committed before it;"),
        "{said}"
    );
    assert_eq!(count_and_sum(&t), Some((150, 50 * 3)));
    assert_eq!(journaled(&t), [0, 1, 2]);
    // The same files again (without the pipe): the three committed are
    // skipped, the other five loaded.
    let out = ok(&t.0, &load_args("all", &files));
    assert!(
        out.starts_with("skipped 3 files loaded by earlier commits")
            && out.contains("loaded 250 rows"),
        "{out}"
    );
    assert_eq!(count_and_sum(&t), Some((400, 50 * (0..8).sum::<u64>())));
}

#[test]
fn a_full_disk_fails_the_load_keeps_the_last_commit_and_a_rerun_finishes() {
    let t = Tmp::new();
    let (n, rows) = (8usize, 300u64);
    let files = write_files(&t, n, rows as usize);
    let args = load_args("1file", &files);
    // Room for a few commits, not all.
    let o = command(&t, &args)
        .env("SLUICE_FAULT", "disk-full-after=40000")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("No space left on device"), "{err}");
    assert!(err.contains("files were committed before this"), "{err}");
    let committed = journaled(&t).len();
    assert!(
        committed > 0 && committed < n,
        "{committed} files committed"
    );
    assert_consistent(&t, rows);
    let out = ok(&t.0, &args);
    assert!(
        out.starts_with(&format!("skipped {committed} file")),
        "{out}"
    );
    assert_eq!(
        count_and_sum(&t),
        Some((n as u64 * rows, rows * (0..n as u64).sum::<u64>()))
    );
    assert_consistent(&t, rows);
}

#[test]
fn check_reports_damage_and_files_left_by_a_crash_and_changes_nothing() {
    let t = Tmp::new();
    let files = write_files(&t, 3, 100);
    ok(&t.0, &load_args("1file", &files));
    let out = ok(&t.0, &["--db", "db", "check", "t"]);
    assert_eq!(
        out.lines().next().unwrap().split(" (").next().unwrap(),
        "t: 3 segments, 3 key-index runs, 3 load journals"
    );
    assert!(out.trim_end().ends_with(": ok"), "{out}");
    // A file a crashed load left, and a flipped byte in a segment.
    t.write("db/tables/t/999999-00000.arrow", b"half a segment");
    let seg = t.0.join("db/tables/t/000002-00000.arrow");
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes[64] ^= 1;
    std::fs::write(&seg, &bytes).unwrap();
    let o = sluice(&t.0, &["--db", "db", "check", "t"]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("1 problem"), "{out}");
    assert!(
        out.contains("damaged: db/tables/t/000002-00000.arrow: corrupt: checksum mismatch"),
        "{out}"
    );
    assert!(out.contains("999999-00000.arrow"), "{out}");
    // Nothing was changed: the stray file is still there.
    assert!(t.0.join("db/tables/t/999999-00000.arrow").exists());
    assert_eq!(std::fs::read(&seg).unwrap(), bytes);
}

#[test]
fn info_loads_lists_each_commit_and_its_files() {
    let t = Tmp::new();
    let files = write_files(&t, 3, 10);
    let out = ok(&t.0, &load_args("2files", &files));
    assert!(out.contains("committed in 2 groups of files"), "{out}");
    let out = ok(&t.0, &["--db", "db", "info", "t", "--loads"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    assert!(lines[0].starts_with("t: commit 1 at ") && lines[0].ends_with(": 2 files, 20 rows"));
    assert!(lines[1].trim_start().starts_with('/') && lines[1].contains("in/f00.csv  "));
    assert!(lines[1].contains(", 10 rows, crc32 "), "{}", lines[1]);
    assert!(lines[3].ends_with(": 1 file, 10 rows"), "{}", lines[3]);
    assert!(lines[4].contains("in/f02.csv  "), "{}", lines[4]);
    // A changed file is refused, and --reload-changed loads it again.
    std::fs::write(t.0.join(&files[1]), "777777,1\n").unwrap();
    let e = fails(&t.0, &load_args("all", &files));
    assert!(
        e.contains("in/f01.csv was loaded before (commit 1) and has changed since: 90 bytes then, 9 now; --reload-changed"),
        "{e}"
    );
    let mut args = load_args("all", &files);
    args.insert(3, "--reload-changed");
    let out = ok(&t.0, &args);
    assert!(
        out.starts_with("skipped 2 files") && out.contains("loaded 1 rows"),
        "{out}"
    );
}
