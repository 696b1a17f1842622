//! Sharded tables through the binary: loads of a 4-shard table killed
//! with SIGKILL at random moments leave every shard at a committed state
//! and the rerun finishes the job; `info` shows each shard; EXPLAIN shows
//! the fan-out; `--shard-paths` puts the shards' files elsewhere.

use crate::resume::{
    assert_consistent, count_and_sum, journaled, kill_loop, load_args, write_files,
};
use crate::{Tmp, fails, ok};

fn sharded<'a>(mut args: Vec<&'a str>, extra: &[&'a str]) -> Vec<&'a str> {
    // Before the table name.
    let at = args.iter().position(|a| *a == "t").unwrap();
    for (i, e) in extra.iter().enumerate() {
        args.insert(at + i, e);
    }
    args
}

#[test]
fn sharded_loads_killed_at_random_moments_resume_to_every_row_exactly_once() {
    let t = Tmp::new();
    let (n, rows) = (20usize, 400u64);
    let files = write_files(&t, n, rows as usize);
    let args = sharded(load_args("2files", &files), &["--shards", "4"]);
    // After each kill: rows of the journaled files only, every shard's
    // files whole.
    let killed = kill_loop(&t, &args, 20, 11, rows);
    eprintln!("{killed} sharded loads killed");
    assert!(killed > 0, "no load was killed");
    ok(&t.0, &args);
    assert_eq!(
        count_and_sum(&t),
        Some((n as u64 * rows, rows * (0..n as u64).sum::<u64>()))
    );
    assert_eq!(journaled(&t).len(), n);
    assert_consistent(&t, rows);
    let get = ok(&t.0, &["--db", "db", "get", "t", "0", "1900399", "99999"]);
    assert_eq!(get, "id,v\n0,0\n1900399,19\n");

    // info: the shards and their rows, which add up to the table's.
    let info = ok(&t.0, &["--db", "db", "info", "t"]);
    assert!(info.contains("4 shards, by hash of id"), "{info}");
    let v: serde_json::Value =
        serde_json::from_str(&ok(&t.0, &["--db", "db", "info", "--json", "t"])).unwrap();
    let shards = v[0]["shards"].as_array().unwrap();
    assert_eq!(shards.len(), 4);
    let sum: u64 = shards.iter().map(|s| s["rows"].as_u64().unwrap()).sum();
    assert_eq!(sum, n as u64 * rows);
    assert!(
        shards.iter().all(|s| s["rows"].as_u64().unwrap() > 1000),
        "{shards:?}"
    );

    let plan = ok(
        &t.0,
        &[
            "--db",
            "db",
            "query",
            "EXPLAIN SELECT v, count(*) FROM t GROUP BY v",
        ],
    );
    assert!(plan.contains("Fan-out over 4 of 4 shards"), "{plan}");
    let plan = ok(
        &t.0,
        &[
            "--db",
            "db",
            "query",
            "EXPLAIN SELECT * FROM t WHERE id = 7",
        ],
    );
    assert!(plan.contains("Fan-out over 1 of 4 shards"), "{plan}");
}

#[test]
fn shard_paths_place_the_files_and_bad_options_are_one_line_errors() {
    let t = Tmp::new();
    t.write("a.csv", b"1,x\n2,y\n3,z\n4,w\n");
    let base = [
        "--db",
        "db",
        "load",
        "--no-header",
        "--schema",
        "k INT, s TEXT",
    ];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        a.extend_from_slice(&["t", "a.csv"]);
        a
    };
    let err = fails(&t.0, &with(&["--shards", "0"]));
    assert!(err.contains("--shards 0: expected 1 to 256"), "{err}");
    let err = fails(&t.0, &with(&["--shard-by", "s"]));
    assert!(err.contains("--shards 2 or more"), "{err}");
    ok(
        &t.0,
        &with(&["--shards", "2", "--shard-by", "s", "--shard-paths", "d1,d2"]),
    );
    for d in ["d1", "d2"] {
        let entries: Vec<_> = std::fs::read_dir(t.0.join(d)).unwrap().collect();
        assert_eq!(entries.len(), 1, "{d}: one shard directory");
    }
    let info = ok(&t.0, &["--db", "db", "info", "t"]);
    assert!(info.contains("2 shards, by hash of s, on "), "{info}");
    let out = ok(
        &t.0,
        &[
            "--db",
            "db",
            "query",
            "--format",
            "csv",
            "SELECT count(*), sum(k) FROM t",
        ],
    );
    assert_eq!(out, "count(*),sum(k)\n4,10\n");
    let check = ok(&t.0, &["--db", "db", "check"]);
    assert!(check.lines().next().unwrap().ends_with(": ok"), "{check}");
}
