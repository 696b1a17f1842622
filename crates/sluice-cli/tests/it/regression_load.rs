//! Loads that once stored wrong rows, or said less than they did: a header
//! loaded as data, a changed file skipped, a runaway quote read as one
//! record, a NUL byte loaded into TEXT.

use crate::{Tmp, fails, ok};

/// Rows of table `t` as CSV, without the header.
fn rows(t: &Tmp) -> String {
    ok(&t.0, &["export", "--header", "false", "t"])
}

#[test]
fn normalised_header_names_are_recognised_on_append() {
    let t = Tmp::new();
    t.write("q1.csv", b"First Name,City\nann,oslo\nbob,rome\n");
    t.write("q2.csv", b"First Name,City\ncat,Paris\n");
    ok(&t.0, &["load", "t", "q1.csv"]);
    let out = ok(&t.0, &["load", "t", "q2.csv"]);
    assert!(out.starts_with("loaded 1 rows ("), "{out}");
    assert_eq!(rows(&t), "ann,oslo\nbob,rome\ncat,Paris\n");
}

#[test]
fn normalised_header_names_are_recognised_with_the_printed_schema() {
    let t = Tmp::new();
    t.write("q.csv", b"First Name,Born On\nann,2024-01-31\n");
    ok(
        &t.0,
        &[
            "load",
            "--schema",
            "first_name TEXT, born_on DATE",
            "t",
            "q.csv",
        ],
    );
    assert_eq!(rows(&t), "ann,2024-01-31\n");
}

/// Rewrites `name` in `t` with `data` and gives it back its modification
/// time, as `touch -r` would.
fn rewrite_keeping_mtime(t: &Tmp, name: &str, data: &[u8]) {
    let path = t.0.join(name);
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    std::fs::write(&path, data).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), mtime);
}

#[test]
fn changed_file_with_restored_mtime_is_not_skipped() {
    let t = Tmp::new();
    t.write("f.csv", b"1,a\n2,b\n");
    let load = [
        "load",
        "--no-header",
        "--schema",
        "id INT, v TEXT",
        "t",
        "f.csv",
    ];
    ok(&t.0, &load);
    rewrite_keeping_mtime(&t, "f.csv", b"1,a\n2,c\n");
    let err = fails(&t.0, &load);
    assert_eq!(
        err,
        "error: loading table t; nothing was committed: f.csv was loaded before (commit 1) and has changed since: same size and modification time, different contents; --reload-changed loads it again (the rows loaded from it before stay)\n"
    );
    let mut again = load.to_vec();
    again.insert(1, "--reload-changed");
    let out = ok(&t.0, &again);
    assert!(out.starts_with("loaded 2 rows ("), "{out}");
    assert_eq!(rows(&t), "1,a\n2,b\n1,a\n2,c\n");
}

#[test]
fn unchanged_file_with_restored_mtime_is_still_skipped() {
    let t = Tmp::new();
    t.write("f.csv", b"1,a\n2,b\n");
    let load = [
        "load",
        "--no-header",
        "--schema",
        "id INT, v TEXT",
        "t",
        "f.csv",
    ];
    ok(&t.0, &load);
    rewrite_keeping_mtime(&t, "f.csv", b"1,a\n2,b\n");
    let out = ok(&t.0, &load);
    assert!(
        out.contains("skipped 1 file loaded by earlier commits"),
        "{out}"
    );
    assert_eq!(rows(&t), "1,a\n2,b\n");
}

/// Runs `sluice` in `t` with `input` on standard input.
fn with_stdin(t: &Tmp, args: &[&str], input: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .current_dir(&t.0)
        .env_remove("SLUICE_DB")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The load may fail before reading it all: a broken pipe is expected.
    let _ = stdin.write_all(input);
    drop(stdin);
    child.wait_with_output().unwrap()
}

#[test]
fn max_line_size_fires_on_one_long_line_from_stdin() {
    let t = Tmp::new();
    let mut input = b"1,a\n2,".to_vec();
    input.extend(std::iter::repeat_n(b'x', 100_000));
    input.extend_from_slice(b"\n3,c\n");
    let args = [
        "load",
        "--no-header",
        "--schema",
        "id INT, v TEXT",
        "--max-line-size",
        "4KiB",
        "t",
        "-",
    ];
    let o = with_stdin(&t, &args, &input);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "error: loading table t; nothing was committed: <stdin>:2: no end of record within --max-line-size (4096 bytes); an unterminated quote? (byte 4)\n"
    );
    // The same with the limit above the line loads it whole.
    let args = [
        "load",
        "--no-header",
        "--schema",
        "id INT, v TEXT",
        "--max-line-size",
        "200KiB",
        "t",
        "-",
    ];
    let o = with_stdin(&t, &args, &input);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(rows(&t).len(), "1,a\n2,\n3,c\n".len() + 100_000);
}

#[test]
fn commit_every_zero_is_refused_like_zero_files() {
    let t = Tmp::new();
    t.write("a.csv", b"1\n");
    let load = |every: &'static str| {
        fails(
            &t.0,
            &[
                "load",
                "--schema",
                "x INT",
                "--commit-every",
                every,
                "t",
                "a.csv",
            ],
        )
    };
    assert_eq!(
        load("0"),
        "error: --commit-every \"0\": expected more than 0 (examples: 1GiB, 256MB, 1000files, 30s, 10min, all)\n"
    );
    assert_eq!(
        load("0files"),
        "error: --commit-every \"0files\": expected a positive number (examples: 1GiB, 256MB, 1000files, 30s, 10min, all)\n"
    );
}

#[test]
fn dry_run_json_prints_json() {
    let t = Tmp::new();
    t.write("q.csv", b"First Name,n\nann,1\nbob,2\n");
    let out = ok(&t.0, &["load", "--dry-run", "--json", "t", "q.csv"]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        v,
        serde_json::json!({
            "dry_run": true,
            "table": "t",
            "format": "csv",
            "delimiter": ",",
            "skip": 0,
            "schema": "first_name TEXT, n BIGINT",
            "inferred": {"samples": 1, "files_sampled": 1, "records_sampled": 2, "header": true, "notes": 0},
        })
    );
    // Notes above columns aligned by spaces.
    t.write(
        "n.txt",
        b"Run 7\nwritten by hand\n\n  a    b\n  1    2\n  3    4\n",
    );
    let out = ok(&t.0, &["load", "--dry-run", "--json", "u", "n.txt"]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        (
            &v["delimiter"],
            &v["skip"],
            &v["inferred"]["notes"],
            &v["schema"]
        ),
        (
            &serde_json::json!("whitespace"),
            &serde_json::json!(3),
            &serde_json::json!(3),
            &serde_json::json!("a BIGINT, b BIGINT")
        )
    );
    assert_eq!(out.lines().count(), 1, "{out}");
    // Nothing was loaded.
    assert!(
        !t.0.join("sluice.db").join("tables").join("t").exists(),
        "{out}"
    );
}

#[cfg(unix)]
#[test]
fn ctrl_c_on_stdin_says_only_that_nothing_was_committed() {
    use std::io::{BufRead, Read, Write};
    let t = Tmp::new();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .current_dir(&t.0)
        .env_remove("SLUICE_DB")
        .args([
            "load",
            "--no-header",
            "--delimiter",
            ",",
            "--schema",
            "id INT, v TEXT",
            "t",
            "-",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"1,a\n2,b\n").unwrap();
    // The table's directory exists once the load runs (the handlers are
    // in place by then).
    let dir = t.0.join("sluice.db/tables/t");
    for _ in 0..1_000_000 {
        if dir.exists() {
            break;
        }
        std::thread::yield_now();
    }
    assert!(dir.exists());
    // The shell's kill (no procps needed).
    let int = std::process::Command::new("sh")
        .args(["-c", &format!("kill -INT {}", child.id())])
        .status()
        .unwrap();
    assert!(int.success());
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("stopping after the current file") {
        let mut line = String::new();
        let n = stderr.read_line(&mut line).unwrap();
        assert!(n > 0, "the load ended without stopping: {said}");
        said.push_str(&line);
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    stderr.read_to_string(&mut said).unwrap();
    assert_eq!(out.status.code(), Some(130), "{said}");
    assert_eq!(
        said,
        "\nstopping after the current file: what was read is committed, except a group holding standard input or a pipe, which may have been cut short (Ctrl-C again stops at once; the last commit stays)\nerror: loading table t: stopped while reading a stream (standard input or a pipe), which may have been cut short: nothing of its group was committed\n"
    );
    assert!(!said.contains("being committed"), "{said}");
    // Nothing committed: no table t.
    let info = fails(&t.0, &["info", "t"]);
    assert!(info.starts_with("error: no "), "{info}");
    assert!(!dir.exists());
}

/// Writes `data` into the FIFO `path` from a thread (the open blocks
/// until the load opens it for reading; a failed load never opens it,
/// which the reader end opened and closed here unblocks).
fn feed_fifo(path: std::path::PathBuf, data: Vec<u8>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&path) {
            let _ = f.write_all(&data);
        }
    })
}

/// A pipe given by its path (a FIFO, `<(zcat f.gz)`) was looked at
/// first — its format, its dialect and its notes above the table — and
/// the look consumed its first 64 KiB: a load of 40,000 rows stored
/// 34,612 with a guessed "line of notes" skipped (38,846 with `--schema`),
/// and a FIFO hung. Now nothing looks ahead at a pipe: without
/// `--schema` the load refuses and names it, with it every row loads.
#[test]
fn a_pipe_given_by_its_path_loses_no_rows() {
    let t = Tmp::new();
    let mut csv = String::from("id,name,amount\n");
    for i in 0..40_000 {
        csv.push_str(&format!(
            "{i},\"name {}\",{}.{:02}\n",
            i % 97,
            i % 1000,
            i % 100
        ));
    }
    let fifo = t.0.join("in.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        assert!(
            std::env::var_os("CI").is_none(),
            "mkfifo is missing under CI"
        );
        eprintln!("skipped: no mkfifo here");
        return;
    }
    // Without a schema: refused, naming the pipe and the option.
    let feeder = feed_fifo(fifo.clone(), csv.clone().into_bytes());
    let err = fails(&t.0, &["load", "t", "in.fifo"]);
    assert!(err.contains("in.fifo, a pipe or device"), "{err}");
    assert!(err.contains("pass --schema"), "{err}");
    // (The feeder waits for a reader: open and close one.)
    drop(std::fs::File::open(&fifo));
    feeder.join().unwrap();
    // With it: every row.
    let feeder = feed_fifo(fifo.clone(), csv.clone().into_bytes());
    let out = ok(
        &t.0,
        &[
            "load",
            "--schema",
            "id INT, name TEXT, amount DECIMAL(10,2)",
            "t",
            "in.fifo",
        ],
    );
    feeder.join().unwrap();
    assert!(out.starts_with("loaded 40000 rows ("), "{out}");
    let got = ok(
        &t.0,
        &[
            "query",
            "--format",
            "csv",
            "SELECT count(*), sum(id), min(name) FROM t",
        ],
    );
    assert_eq!(got, "count(*),sum(id),min(name)\n40000,799980000,name 0\n");
}

/// A file larger than two blocks is mapped by default; `--no-mmap` reads
/// it into buffers. Both give the same table, segment for segment, and the
/// same journal (size and checksum of the file), also with a byte order
/// mark, CR LF line ends and quoted line ends that the cuts must respect.
#[test]
fn a_mapped_file_and_a_read_one_give_the_same_table() {
    let t = Tmp::new();
    let mut csv = String::from("\u{feff}id,name\r\n");
    for i in 0..20_000u32 {
        csv.push_str(&format!("{i},\"name {i}\r\nand \"\"{}\"\"\"\r\n", i % 13));
    }
    t.write("in.csv", csv.as_bytes());
    let files = |db: &str| -> Vec<(String, Vec<u8>)> {
        let dir = t.0.join(db).join("tables/t");
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "arrow"))
            .map(|p| {
                (
                    p.file_name().unwrap().to_string_lossy().into(),
                    std::fs::read(&p).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let journal = |db: &str| -> String {
        let j = std::fs::read_to_string(t.0.join(db).join("tables/t/000001.load")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        v["files"][0]["crc32"].to_string() + "/" + &v["files"][0]["size"].to_string()
    };
    for db in ["mapped", "read"] {
        let mut args = vec![
            "--db",
            db,
            "load",
            "-q",
            "--block-size",
            "16KiB",
            "--segment-rows",
            "1000000",
            "--schema",
            "id INT, name TEXT",
            "t",
            "in.csv",
        ];
        if db == "read" {
            args.insert(3, "--no-mmap");
        }
        ok(&t.0, &args);
    }
    assert!(files("mapped").len() == 1 && files("mapped") == files("read"));
    assert_eq!(journal("mapped"), journal("read"));
    assert!(journal("read").ends_with(&format!("/{}", csv.len())));
    let got = ok(
        &t.0,
        &[
            "--db",
            "mapped",
            "query",
            "--format",
            "csv",
            "SELECT count(*), sum(id), max(name) FROM t",
        ],
    );
    assert_eq!(
        got,
        "count(*),sum(id),max(name)\n20000,199990000,\"name 9999\r\nand \"\"2\"\"\"\n"
    );
}
