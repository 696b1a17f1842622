//! `sluice query`: every format asked for is the format printed.

use super::*;

#[test]
fn explain_prints_json_when_json_is_asked_for() {
    let t = Tmp::new();
    t.write("p.csv", b"id,price\n1,1.50\n2,2.25\n");
    ok(
        &t.0,
        &[
            "load",
            "--schema",
            "id INT, price DECIMAL(6,2)",
            "p",
            "p.csv",
        ],
    );
    let sql = "EXPLAIN SELECT sum(price) FROM p WHERE id >= 10";
    let text = ok(&t.0, &["query", sql]);
    let json = ok(&t.0, &["query", "--format", "json", sql]);
    let rows: Vec<serde_json::Map<String, serde_json::Value>> =
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("not JSON ({e}): {json}"));
    // One object a plan line, in order: the same plan as the text.
    let lines: Vec<String> = rows
        .iter()
        .map(|r| {
            assert_eq!(r.len(), 1, "{json}");
            r["plan"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(lines, text.lines().collect::<Vec<_>>());
    assert!(
        lines
            .iter()
            .any(|l| l.contains("Scan p: 0 of 1 segments (1 pruned by zone maps)")),
        "{json}"
    );
    let csv = ok(&t.0, &["query", "--format", "csv", sql]);
    assert_eq!(csv.lines().next(), Some("plan"));
    assert_eq!(csv.lines().count(), lines.len() + 1);
    // A table stays text.
    assert_eq!(ok(&t.0, &["query", "--format", "table", sql]), text);
}

/// `--memory-limit`: a query that would pass it fails with a message
/// naming the operator, the limit and the option (no panic); the same
/// query answers under the default; a bad size is refused by name.
#[test]
fn memory_limit_refuses_with_the_operator_and_the_limit() {
    let t = Tmp::new();
    let mut csv = String::from("k,v\n");
    for i in 0..100_000 {
        csv.push_str(&format!("{i},{}\n", i % 3));
    }
    t.write("t.csv", csv.as_bytes());
    ok(&t.0, &["load", "--schema", "k BIGINT, v INT", "t", "t.csv"]);
    // A mark join's build side (EXISTS under OR) does not spill (yet):
    // past the limit it stops. (A join by keys spills: see `spill`.)
    let sql =
        "SELECT count(*) FROM t a WHERE EXISTS (SELECT 1 FROM t b WHERE b.k = a.k) OR a.v = 7";
    let err = fails(&t.0, &["query", "--memory-limit", "512KiB", sql]);
    assert!(err.contains("out of memory: "), "{err}");
    assert!(err.contains("memory limit of 512.0 KiB"), "{err}");
    assert!(err.contains("--memory-limit"), "{err}");
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
    assert_eq!(
        ok(&t.0, &["query", "--format", "csv", sql]),
        "count(*)\n100000\n"
    );
    // Enough, given: the peak is reported with --timing.
    let out = sluice(
        &t.0,
        &[
            "query",
            "--memory-limit",
            "1GiB",
            "--timing",
            "--format",
            "csv",
            sql,
        ],
    );
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("peak query memory"), "{stderr}");
    let err = fails(&t.0, &["query", "--memory-limit", "lots", sql]);
    assert!(err.contains("--memory-limit"), "{err}");
}
