use std::path::Path;

use serde_json::json;

use super::*;

fn doc(scenario: &str, results: Value) -> Doc {
    let v = json!({
        "format": super::super::record::FORMAT,
        "scenario": scenario,
        "command": ["/some/where/sluice", "bench", scenario],
        "commit": "abc123",
        "build": "release",
        "date": "2026-11-25T12:00:00Z",
        "machine": {"cores": 2, "model": "Test CPU", "memory_bytes": 1u64 << 34, "kernel": "linux 6", "disk": "ext4 on vda"},
        "results": results,
    });
    Doc::parse(Path::new("t.json"), &v.to_string()).unwrap()
}

fn r(series: &str, case: Value, metric: &str, runs: &[f64]) -> Value {
    json!({"series": series, "case": case, "metric": metric, "unit": "s", "runs": runs})
}

/// How many times `needle` occurs in `hay`.
fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// The fill colour plotters writes for `name`'s points.
fn fill(name: &str, i: usize) -> String {
    let c = draw::color(name, i);
    format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2)
}

#[test]
fn ingest_gives_rates_and_efficiency_against_threads() {
    let gb = 1_000_000_000u64;
    let d = doc(
        "ingest",
        json!([
            r(
                "sluice",
                json!({"threads": 1, "bytes": gb}),
                "seconds",
                &[10.0, 9.0, 11.0]
            ),
            r(
                "sluice",
                json!({"threads": 2, "bytes": gb}),
                "seconds",
                &[5.0, 5.5, 4.5]
            ),
            r(
                "sluice",
                json!({"threads": 64, "bytes": gb}),
                "seconds",
                &[5.0, 5.0, 5.0]
            ),
            r(
                "duckdb",
                json!({"threads": 1, "bytes": gb}),
                "seconds",
                &[20.0, 20.0, 20.0]
            ),
            r(
                "duckdb",
                json!({"threads": 2, "bytes": gb}),
                "seconds",
                &[12.5, 12.5, 12.5]
            ),
            r(
                "sluice",
                json!({"threads": 1, "bytes": gb}),
                "cpu_seconds",
                &[10.0]
            ),
        ]),
    );
    let c = charts(&d);
    assert_eq!(
        c.iter().map(|c| c.file.as_str()).collect::<Vec<_>>(),
        ["ingest-threads.svg", "ingest-efficiency.svg"]
    );
    let rates = &c[0];
    assert_eq!(rates.series.len(), 2);
    let s = &rates.series[0];
    assert_eq!(s.name, "sluice");
    assert_eq!(
        s.points.iter().map(|p| p.x).collect::<Vec<_>>(),
        [1.0, 2.0, 64.0]
    );
    // 1 GB in a median of 10 s: 100 MB/s, runs from 90.9 to 111.1.
    assert!((s.points[0].y - 100.0).abs() < 1e-9);
    assert!((s.points[0].lo - 1000.0 / 11.0).abs() < 1e-9);
    assert!((s.points[0].hi - 1000.0 / 9.0).abs() < 1e-9);
    assert!(matches!(
        rates.kind,
        Kind::Lines {
            log: true,
            log_y: false
        }
    ));
    // Efficiency: 2 threads twice as fast is 1.0; 64 threads on 2 cores
    // at the 2-thread rate is 1.0 too (min(threads, cores)).
    let eff = &c[1];
    let se = &eff.series[0];
    assert!((se.points[1].y - 1.0).abs() < 1e-9, "{:?}", se.points);
    assert!((se.points[2].y - 1.0).abs() < 1e-9);
    let de = &eff.series[1];
    assert!((de.points[1].y - 0.8).abs() < 1e-9, "{:?}", de.points);
    assert!(eff.series.last().unwrap().reference);

    let svg = draw::svg(rates).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
    // Axis labels, title, both series in the legend.
    for text in [
        "MB/s of CSV",
        "threads",
        "Ingest: load rate against threads",
        "\nsluice\n</",
        "\nduckdb\n</",
    ] {
        assert!(svg.contains(text), "{text} missing");
    }
    // A point per median: 3 for sluice, 2 for duckdb (error bars ring
    // theirs with a circle of radius 4).
    assert_eq!(count(&svg, "<circle cx") - count(&svg, "r=\"4\""), 5);
    assert_eq!(count(&svg, &fill("sluice", 0)), 3);
    // The log axis is labelled in powers of two up to 64.
    assert!(svg.contains("\n64\n</text>"), "no 64 tick");
    assert!(svg.contains("\n1\n</text>"));
}

#[test]
fn q1_speedup_has_the_ideal_line_to_the_cores() {
    let d = doc(
        "q1",
        json!([
            r("sluice", json!({"threads": 1}), "seconds", &[2.0, 2.0]),
            r("sluice", json!({"threads": 2}), "seconds", &[1.0, 1.25]),
            r("sluice", json!({"threads": 4}), "seconds", &[1.0, 1.0]),
        ]),
    );
    let c = charts(&d);
    assert_eq!(c.len(), 1);
    let s = &c[0].series[0];
    // Median 1.125 s: 1.778x; the slowest run gives the lowest speed-up.
    assert!((s.points[1].y - 2.0 / 1.125).abs() < 1e-9);
    assert!((s.points[1].lo - 1.6).abs() < 1e-9);
    assert!((s.points[1].hi - 2.0).abs() < 1e-9);
    let ideal = &c[0].series[1];
    assert!(ideal.reference);
    assert_eq!(ideal.name, "ideal (linear to 2 cores)");
    assert_eq!(
        ideal.points.iter().map(|p| p.y).collect::<Vec<_>>(),
        [1.0, 2.0, 2.0]
    );
    let svg = draw::svg(&c[0]).unwrap();
    assert!(svg.contains("ideal (linear to 2 cores)"));
    assert!(svg.contains("speed-up over 1 thread"));
}

#[test]
fn bars_put_every_category_and_series_in() {
    let d = doc(
        "cold",
        json!([
            r(
                "sluice",
                json!({"query": "count"}),
                "seconds",
                &[0.01, 0.02, 0.03]
            ),
            r("duckdb", json!({"query": "count"}), "seconds", &[0.05]),
            r(
                "sluice",
                json!({"query": "group by text"}),
                "seconds",
                &[0.2]
            ),
            r(
                "duckdb",
                json!({"query": "group by text"}),
                "seconds",
                &[0.1]
            ),
            r(
                "sluice",
                json!({"query": "point <lookup>"}),
                "seconds",
                &[0.001]
            ),
        ]),
    );
    let c = charts(&d);
    let Kind::Bars { categories } = &c[0].kind else {
        panic!("not bars")
    };
    assert_eq!(categories, &["count", "group by text", "point <lookup>"]);
    assert_eq!(c[0].series[0].points.len(), 3);
    assert_eq!(c[0].series[1].points.len(), 2);
    assert!(
        (c[0].series[0].points[0].y - 20.0).abs() < 1e-9,
        "milliseconds"
    );
    let svg = draw::svg(&c[0]).unwrap();
    for text in [
        "count",
        "group by text",
        "point &lt;lookup&gt;",
        "milliseconds",
        "\nduckdb\n</",
    ] {
        assert!(svg.contains(text), "{text} missing");
    }
    // 5 bars and the 2 legend swatches, in the two colours.
    let bars = count(&svg, &fill("sluice", 0)) + count(&svg, &fill("duckdb", 1));
    assert_eq!(bars, 5 + 2, "{svg}");
}

#[test]
fn pgo_gain_is_per_interleaved_pair() {
    let d = doc(
        "pgo",
        json!([
            r(
                "release",
                json!({"scenario": "ingest"}),
                "seconds",
                &[10.0, 12.0, 11.0]
            ),
            r(
                "pgo",
                json!({"scenario": "ingest"}),
                "seconds",
                &[10.0, 8.0, 10.0]
            ),
            r("release", json!({"scenario": "q1"}), "seconds", &[1.0]),
            r("pgo", json!({"scenario": "q1"}), "seconds", &[1.25]),
        ]),
    );
    let c = charts(&d);
    let p = &c[0].series[0].points;
    // Pairs in the order they ran: +0 %, +50 %, +10 %: median 10 (the
    // sorted lists would pair 8 with 10 and give 20).
    assert!((p[0].y - 10.0).abs() < 1e-9, "{p:?}");
    assert!((p[0].lo - 0.0).abs() < 1e-9);
    assert!((p[0].hi - 50.0).abs() < 1e-9);
    assert!((p[1].y + 20.0).abs() < 1e-9, "a loss is negative");
    assert!(draw::svg(&c[0]).is_ok());
}

#[test]
fn shards_name_lines_by_what_varies_and_other_scenarios_get_bars() {
    let d = doc(
        "shards",
        json!([
            r(
                "sluice",
                json!({"shards": 1, "threads": 1, "routing": "key", "format": "tsv"}),
                "seconds",
                &[4.0]
            ),
            r(
                "sluice",
                json!({"shards": 2, "threads": 1, "routing": "key", "format": "tsv"}),
                "seconds",
                &[3.0]
            ),
            r(
                "sluice",
                json!({"shards": 1, "threads": 2, "routing": "key", "format": "tsv"}),
                "seconds",
                &[2.0]
            ),
            r(
                "sluice",
                json!({"shards": 2, "threads": 2, "routing": "key", "format": "tsv"}),
                "seconds",
                &[1.5]
            ),
        ]),
    );
    let c = charts(&d);
    let names: Vec<&str> = c[0].series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["1 thread", "2 threads"]);

    let d = doc(
        "rejects",
        json!([
            r("sluice", json!({"file": "good"}), "seconds", &[1.0, 1.1]),
            r("sluice", json!({"file": "bad"}), "seconds", &[1.2, 1.3]),
        ]),
    );
    let c = charts(&d);
    assert_eq!(c[0].file, "rejects-seconds.svg");
    let Kind::Bars { categories } = &c[0].kind else {
        panic!("not bars")
    };
    assert_eq!(categories, &["file good", "file bad"]);
}

#[test]
fn the_page_holds_every_chart_and_its_source() {
    let d = doc(
        "q1",
        json!([
            r("sluice", json!({"threads": 1}), "seconds", &[2.0]),
            r("sluice", json!({"threads": 2}), "seconds", &[1.0]),
        ]),
    );
    let c: Vec<(String, Chart)> = charts(&d)
        .into_iter()
        .map(|c| ("q1".to_string(), c))
        .collect();
    let svgs: Vec<String> = c.iter().map(|(_, c)| draw::svg(c).unwrap()).collect();
    let page = html::page(&c, &svgs, &[&d], &[]);
    assert_eq!(count(&page, "<figure class=\"chart\""), 1);
    assert_eq!(count(&page, "<svg"), 1);
    assert!(page.contains("<code>sluice bench q1</code> at commit abc123 (release build)"));
    assert!(
        !page.contains("/some/where"),
        "the binary's path is left out"
    );
    assert!(page.contains("Test CPU"));
    assert!(
        !page.contains("src=") && !page.contains("<link"),
        "nothing is fetched"
    );
}

#[test]
fn a_run_of_no_time_is_left_out_not_drawn_at_infinity() {
    let d = doc(
        "q1",
        json!([
            r("sluice", json!({"threads": 1}), "seconds", &[2.0]),
            r("sluice", json!({"threads": 2}), "seconds", &[0.0]),
            r("sluice", json!({"threads": 4}), "seconds", &[1.0]),
        ]),
    );
    let c = charts(&d);
    let xs: Vec<f64> = c[0].series[0].points.iter().map(|p| p.x).collect();
    assert_eq!(xs, [1.0, 4.0]);
    assert!(draw::svg(&c[0]).is_ok());
}

#[test]
fn the_rate_per_tenth_is_on_a_log_axis_and_leaves_the_coarse_marks_out() {
    let case = |t: u32| json!({"tenth": t, "rows": 2_000_000});
    let d = doc(
        "secondary-index",
        json!([
            r("sluice, one load", case(1), "seconds", &[0.001]),
            r("sluice, 10 loads", case(1), "seconds", &[0.5, 0.55]),
            r("sluice, 10 loads", case(2), "seconds", &[0.52]),
            r("mariadb", case(1), "seconds", &[10.0]),
            r("mariadb", case(2), "seconds", &[80.0]),
        ]),
    );
    let c = charts(&d);
    assert!(matches!(
        c[0].kind,
        Kind::Lines {
            log: false,
            log_y: true
        }
    ));
    let names: Vec<&str> = c[0].series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["sluice, 10 loads", "mariadb"]);
    // The median of the runs' rates (4M and 3.64M rows/s), against 200k
    // and 25k.
    assert!((c[0].series[0].points[0].y - (2e6 / 0.5 + 2e6 / 0.55) / 2.0).abs() < 1e-6);
    assert!((c[0].series[1].points[1].y - 25_000.0).abs() < 1e-9);
    let svg = draw::svg(&c[0]).unwrap();
    // Decades from 10k to 10M label the axis.
    for tick in ["10k", "100k", "1M", "10M"] {
        assert!(
            svg.contains(&format!("\n{tick}\n</text>")),
            "no {tick} tick"
        );
    }
}

#[test]
fn bad_files_are_named() {
    let e = Doc::parse(Path::new("x.json"), "{\"format\": \"other\"}")
        .err()
        .unwrap();
    assert!(e.to_string().contains("x.json: not a results file"), "{e}");
    let e = Doc::parse(Path::new("y.json"), "nope").err().unwrap();
    assert!(e.to_string().contains("y.json: not JSON"), "{e}");
    let bad = json!({"format": super::super::record::FORMAT, "results": [{"series": "s", "metric": "m", "runs": ["x"]}]});
    let e = Doc::parse(Path::new("z.json"), &bad.to_string())
        .err()
        .unwrap();
    assert!(e.to_string().contains("z.json: results[0]"), "{e}");
}
