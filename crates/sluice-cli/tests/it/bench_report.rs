//! `--json-out`, `sluice bench report` and `sluice bench all`: results
//! files as the scenarios write them, and the report drawn from the
//! recorded files in `tests/fixtures/bench` (a `sluice bench all --quick`
//! of this machine, and a `cargo xtask pgo --json-out`).

use std::path::{Path, PathBuf};

use super::{Tmp, fails, ok, sluice};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bench")
}

fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The SVG files of a report directory, sorted.
fn svg_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".svg"))
        .collect();
    v.sort();
    v
}

/// The texts of an SVG's `<text>` elements (plotters writes each on a
/// line of its own).
fn texts(svg: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = svg.lines();
    while let Some(l) = lines.next() {
        if l.starts_with("<text") {
            out.push(lines.next().unwrap_or("").to_string());
        }
    }
    out
}

/// Points drawn: the filled circles of radius 3 (an error bar rings its
/// median with one of radius 4).
fn points(svg: &str) -> usize {
    svg.matches("<circle").count() - svg.matches("r=\"4\"").count()
}

#[test]
fn json_out_records_every_run_with_the_machine() {
    let t = Tmp::new();
    ok(
        &t.0,
        &[
            "bench",
            "ingest",
            "--size",
            "200KB",
            "--runs",
            "2",
            "--threads-list",
            "1,2",
            "--no-peers",
            "--dir",
            "b",
            "--json-out",
            "r/ingest.json",
        ],
    );
    let doc = read_json(&t.0.join("r/ingest.json"));
    assert_eq!(doc["format"], "sluice-bench/1");
    assert_eq!(doc["scenario"], "ingest");
    assert_eq!(doc["command"][0], "sluice", "the binary's path is not kept");
    assert_eq!(doc["command"][1], "bench");
    assert!(doc["commit"].as_str().is_some_and(|c| !c.is_empty()));
    let build = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    assert_eq!(doc["build"], build);
    assert!(doc["machine"]["cores"].as_u64().unwrap() >= 1);
    assert!(doc["machine"]["memory_bytes"].as_u64().unwrap() > 0);
    assert!(doc["machine"]["disk"].as_str().is_some());
    let secs: Vec<&serde_json::Value> = doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["metric"] == "seconds")
        .collect();
    assert_eq!(secs.len(), 2, "{doc}");
    for (r, threads) in secs.iter().zip([1, 2]) {
        assert_eq!(r["series"], "sluice");
        assert_eq!(r["case"]["threads"], threads);
        let size = std::fs::metadata(t.0.join("b/ints-200000.csv"))
            .unwrap()
            .len();
        assert_eq!(r["case"]["bytes"], size);
        let runs = r["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2, "every run, not the median");
        assert!(runs.iter().all(|x| x.as_f64().unwrap() > 0.0));
    }

    // And the report of it.
    ok(
        &t.0,
        &["bench", "report", "--input", "r", "--output", "report"],
    );
    assert_eq!(
        svg_files(&t.0.join("report")),
        ["ingest-efficiency.svg", "ingest-threads.svg"]
    );
    let svg = std::fs::read_to_string(t.0.join("report/ingest-threads.svg")).unwrap();
    assert_eq!(points(&svg), 2);
}

/// `sluice bench report` of the results in `input` into `dir/output`.
fn report(dir: &Path, input: &Path, output: &str) {
    ok(
        dir,
        &[
            "bench",
            "report",
            "--input",
            input.to_str().unwrap(),
            "--output",
            output,
        ],
    );
}

#[test]
fn the_report_of_the_recorded_results_has_every_chart() {
    let t = Tmp::new();
    let fx = fixtures();
    report(&t.0, &fx, "a");
    let out = t.0.join("a");
    let files = svg_files(&out);
    for want in [
        "ingest-threads.svg",
        "ingest-efficiency.svg",
        "q1-speedup.svg",
        "secondary-index-tenths.svg",
        "shards.svg",
        "serve-tps.svg",
        "serve-p99.svg",
        "pgo-gain.svg",
        "cold.svg",
        "rejects-seconds.svg",
    ] {
        assert!(files.iter().any(|f| f == want), "{want} missing: {files:?}");
    }
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert_eq!(
        page.matches("<figure class=\"chart\"").count(),
        files.len(),
        "every SVG file is on the page"
    );
    assert_eq!(page.matches("<svg").count(), files.len());

    // Each chart against its data: the series in the legend, the axis
    // labels, a point per median.
    let svg = |f: &str| std::fs::read_to_string(out.join(f)).unwrap();
    let ingest = read_json(&fx.join("ingest.json"));
    let n_seconds = ingest["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["metric"] == "seconds")
        .count();
    let s = svg("ingest-threads.svg");
    let tx = texts(&s);
    for label in ["threads", "MB/s of CSV", "sluice", "duckdb"] {
        assert!(tx.iter().any(|x| x == label), "{label} not in {tx:?}");
    }
    assert_eq!(points(&s), n_seconds);

    let q1 = svg("q1-speedup.svg");
    let tx = texts(&q1);
    assert!(
        tx.iter().any(|x| x.starts_with("ideal (linear to ")),
        "{tx:?}"
    );
    assert!(tx.iter().any(|x| x == "speed-up over 1 thread"));

    let serve = read_json(&fx.join("serve.json"));
    let sweep = |metric: &str| {
        serve["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["metric"] == metric && r["case"]["clients"].is_number())
            .count()
    };
    assert_eq!(points(&svg("serve-tps.svg")), sweep("tps"));
    assert_eq!(points(&svg("serve-p99.svg")), sweep("p99_ms"));
    assert!(
        texts(&svg("serve-tps.svg"))
            .iter()
            .any(|x| x == "postgresql")
    );

    // The cold chart: a label per query, in the order they ran.
    let cold = read_json(&fx.join("cold.json"));
    let mut queries: Vec<String> = Vec::new();
    for r in cold["results"].as_array().unwrap() {
        let q = r["case"]["query"].as_str().unwrap().to_string();
        if r["metric"] == "seconds" && !queries.contains(&q) {
            queries.push(q);
        }
    }
    let tx = texts(&svg("cold.svg"));
    let at: Vec<usize> = queries
        .iter()
        .map(|q| tx.iter().position(|x| x == q).expect(q))
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{queries:?} in {tx:?}");

    let pgo = texts(&svg("pgo-gain.svg"));
    assert!(pgo.iter().any(|x| x == "ingest"), "{pgo:?}");
    assert!(pgo.iter().any(|x| x.contains("release time / PGO time")));

    // The same data draws the same bytes.
    report(&t.0, &fx, "b");
    for f in &files {
        assert!(
            std::fs::read(out.join(f)).unwrap() == std::fs::read(t.0.join("b").join(f)).unwrap(),
            "{f} differs between two renderings"
        );
    }
}

#[test]
fn the_report_names_what_it_cannot_read() {
    let t = Tmp::new();
    let err = fails(&t.0, &["bench", "report", "--input", "nowhere"]);
    assert!(err.contains("nowhere: no such file or directory"), "{err}");
    t.write("r/x.json", b"{\"format\": \"something else\"}");
    let err = fails(&t.0, &["bench", "report", "--input", "r", "--output", "o"]);
    assert!(
        err.contains("x.json: not a results file of sluice bench"),
        "{err}"
    );
    std::fs::create_dir_all(t.0.join("empty")).unwrap();
    let err = fails(
        &t.0,
        &["bench", "report", "--input", "empty", "--output", "o"],
    );
    assert!(err.contains("no results files in empty"), "{err}");
    let err = fails(&t.0, &["bench", "all", "--json-out", "x.json"]);
    assert!(
        err.contains("bench all writes a results file per scenario"),
        "{err}"
    );
    let err = fails(&t.0, &["bench", "all", "--only", "ingest,nope"]);
    assert!(err.contains("--only: no scenario \"nope\""), "{err}");
}

#[test]
fn bench_all_runs_the_scenarios_and_renders_their_report() {
    let t = Tmp::new();
    let o = sluice(
        &t.0,
        &["bench", "all", "--quick", "--only", "rejects", "--dir", "d"],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("bench all: 1 ran"), "{err}");
    let doc = read_json(&t.0.join("d/results/rejects.json"));
    assert_eq!(doc["scenario"], "rejects");
    assert_eq!(doc["results"].as_array().unwrap().len(), 2);
    assert!(t.0.join("d/report/rejects-seconds.svg").exists());
    let page = std::fs::read_to_string(t.0.join("d/report/index.html")).unwrap();
    assert!(page.contains("data-scenario=\"rejects\""));
}

#[test]
fn bench_machine_describes_this_machine() {
    let t = Tmp::new();
    let out = ok(&t.0, &["bench", "machine"]);
    let m: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(m["cores"].as_u64().unwrap() >= 1);
    assert!(m["kernel"].as_str().unwrap().len() > 2);
}
