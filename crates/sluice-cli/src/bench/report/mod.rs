//! `sluice bench report`: the results files of `--json-out` as charts,
//! one SVG file each and one self-contained HTML page with them all.
//!
//! Each scenario's newest results file is charted. Scenarios with a chart
//! of their own: ingest (MB/s and efficiency against threads), q1
//! (speed-up against threads, with the ideal line), secondary-index (load
//! rate per tenth of the files), shards (seconds against shards per
//! threads and routing), serve (TPS and p99 against clients), pgo (gain
//! per scenario) and cold (time per query); every other scenario gets a
//! bar chart of the medians of each metric. A point is the median of its
//! runs; its error bar spans the fastest to the slowest run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value};

mod draw;
mod html;

pub use draw::{Chart, Kind, Point, Series};

/// One results file.
pub struct Doc {
    pub path: PathBuf,
    pub scenario: String,
    pub date: String,
    pub commit: String,
    pub build: String,
    pub command: String,
    pub machine: Value,
    pub results: Vec<Res>,
}

/// One measurement and its runs.
pub struct Res {
    pub series: String,
    pub case: Map<String, Value>,
    pub metric: String,
    pub unit: String,
    pub runs: Vec<f64>,
}

impl Res {
    fn num(&self, key: &str) -> Option<f64> {
        self.case.get(key).and_then(Value::as_f64)
    }
    fn text(&self, key: &str) -> Option<String> {
        self.case.get(key).map(|v| match v {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        })
    }
}

impl Doc {
    /// Parses a results file; `path` names it in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Doc> {
        let v: Value =
            serde_json::from_str(text).with_context(|| format!("{}: not JSON", path.display()))?;
        if v["format"] != super::record::FORMAT {
            bail!(
                "{}: not a results file of sluice bench (its \"format\" is {}, not \"{}\")",
                path.display(),
                v["format"],
                super::record::FORMAT
            );
        }
        let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
        let mut results = Vec::new();
        for (i, r) in v["results"].as_array().into_iter().flatten().enumerate() {
            let bad = || format!("{}: results[{i}] is not a measurement", path.display());
            let runs = r["runs"]
                .as_array()
                .with_context(bad)?
                .iter()
                .map(|x| x.as_f64().with_context(bad))
                .collect::<Result<Vec<f64>>>()?;
            results.push(Res {
                series: r["series"].as_str().with_context(bad)?.to_string(),
                case: r["case"].as_object().cloned().unwrap_or_default(),
                metric: r["metric"].as_str().with_context(bad)?.to_string(),
                unit: r["unit"].as_str().unwrap_or("").to_string(),
                runs,
            });
        }
        let command = v["command"]
            .as_array()
            .map(|a| {
                let mut words: Vec<&str> = a.iter().filter_map(Value::as_str).collect();
                // A binary's path says nothing about the figures.
                if let Some(first) = words.first_mut() {
                    *first = first.rsplit('/').next().unwrap_or(first);
                }
                words.join(" ")
            })
            .unwrap_or_default();
        Ok(Doc {
            path: path.to_path_buf(),
            scenario: s("scenario"),
            date: s("date"),
            commit: s("commit"),
            build: s("build"),
            command,
            machine: v["machine"].clone(),
            results,
        })
    }

    fn cores(&self) -> f64 {
        self.machine["cores"].as_f64().unwrap_or(1.0).max(1.0)
    }

    /// What the figures are of, in a line.
    fn source(&self) -> String {
        let m = &self.machine;
        format!(
            "`{}` at commit {} ({} build), {}; {} cores, {}, {:.0} GiB, {}, {}",
            self.command,
            self.commit,
            self.build,
            self.date,
            m["cores"],
            m["model"].as_str().unwrap_or("?"),
            m["memory_bytes"].as_f64().unwrap_or(0.0) / (1u64 << 30) as f64,
            m["kernel"].as_str().unwrap_or("?"),
            m["disk"].as_str().unwrap_or("?"),
        )
    }
}

/// The results files of `inputs` (files, or directories of `*.json`).
pub fn load(inputs: &[PathBuf]) -> Result<Vec<Doc>> {
    let mut files = Vec::new();
    for i in inputs {
        if i.is_dir() {
            let mut here: Vec<PathBuf> = std::fs::read_dir(i)
                .with_context(|| format!("reading {}", i.display()))?
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect();
            here.sort();
            files.extend(here);
        } else if i.exists() {
            files.push(i.clone());
        } else {
            bail!(
                "{}: no such file or directory (results come from `sluice bench SCENARIO --json-out FILE` or `sluice bench all`)",
                i.display()
            );
        }
    }
    files
        .iter()
        .map(|f| {
            let text =
                std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
            Doc::parse(f, &text)
        })
        .collect()
}

/// The median, fastest and slowest of `runs` as a point at `x`.
fn point(x: f64, runs: &[f64]) -> Option<Point> {
    let v: Vec<f64> = runs.iter().copied().filter(|v| v.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    Some(Point {
        x,
        y: super::common::median(&v),
        lo: v.iter().copied().fold(f64::INFINITY, f64::min),
        hi: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        runs: v.len(),
    })
}

/// Series names in the order they first appear.
fn series_names<'a>(rs: impl Iterator<Item = &'a Res>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in rs {
        if !names.contains(&r.series) {
            names.push(r.series.clone());
        }
    }
    names
}

/// Lines of `metric` against the numeric case key `x` per series, each
/// run mapped by `f(result, run)`.
fn lines_by(
    doc: &Doc,
    metric: &str,
    x: &str,
    f: impl Fn(&Res, f64) -> f64,
    name: impl Fn(&Res) -> String,
) -> Vec<Series> {
    let rs: Vec<&Res> = doc
        .results
        .iter()
        .filter(|r| r.metric == metric && r.num(x).is_some())
        .collect();
    let mut out: Vec<Series> = Vec::new();
    for r in &rs {
        let n = name(r);
        let runs: Vec<f64> = r.runs.iter().map(|&v| f(r, v)).collect();
        let Some(p) = point(r.num(x).unwrap_or(0.0), &runs) else {
            continue;
        };
        match out.iter_mut().find(|s| s.name == n) {
            Some(s) => s.points.push(p),
            None => out.push(Series {
                name: n,
                reference: false,
                points: vec![p],
            }),
        }
    }
    for s in &mut out {
        s.points.sort_by(|a, b| a.x.total_cmp(&b.x));
    }
    out
}

/// Whether an axis of `xs` reads better in powers of two.
fn wide(series: &[Series]) -> bool {
    let xs = series.iter().flat_map(|s| &s.points).map(|p| p.x);
    let (lo, hi) = xs.fold((f64::INFINITY, 0f64), |(l, h), x| (l.min(x), h.max(x)));
    lo > 0.0 && hi / lo >= 4.0
}

/// Leaves out points that are not finite (a run of 0 s makes a rate or
/// a speed-up infinite), which no axis can hold.
fn finite(mut series: Vec<Series>) -> Vec<Series> {
    for s in &mut series {
        s.points
            .retain(|p| p.y.is_finite() && p.lo.is_finite() && p.hi.is_finite());
    }
    series
}

fn chart(
    doc: &Doc,
    file: &str,
    title: &str,
    x: &str,
    y: &str,
    kind: Kind,
    series: Vec<Series>,
) -> Option<Chart> {
    let series = finite(series);
    series
        .iter()
        .any(|s| !s.points.is_empty() && !s.reference)
        .then(|| Chart {
            file: file.to_string(),
            title: title.to_string(),
            x_label: x.to_string(),
            y_label: y.to_string(),
            kind,
            series,
            source: doc.source(),
        })
}

/// Per series, the value of `f` at x = 1 (the one-thread baseline).
fn at_one(series: &[Series]) -> BTreeMap<String, f64> {
    series
        .iter()
        .filter_map(|s| {
            let p = s.points.iter().find(|p| p.x == 1.0)?;
            Some((s.name.clone(), p.y))
        })
        .collect()
}

fn ingest(doc: &Doc) -> Vec<Chart> {
    let mbs = |r: &Res, s: f64| r.num("bytes").unwrap_or(0.0) / 1e6 / s;
    let rates = lines_by(doc, "seconds", "threads", mbs, |r| r.series.clone());
    let log = wide(&rates);
    let cores = doc.cores();
    let base = at_one(&rates);
    // Efficiency: speed-up over one thread, per thread that has a core.
    let mut eff: Vec<Series> = lines_by(doc, "seconds", "threads", mbs, |r| r.series.clone())
        .into_iter()
        .filter_map(|mut s| {
            let b = *base.get(&s.name)?;
            for p in &mut s.points {
                let k = b * p.x.min(cores);
                (p.y, p.lo, p.hi) = (p.y / k, p.lo / k, p.hi / k);
            }
            Some(s)
        })
        .collect();
    let xs: Vec<f64> = eff
        .first()
        .map(|s| s.points.iter().map(|p| p.x).collect())
        .unwrap_or_default();
    if !xs.is_empty() {
        eff.push(Series {
            name: "ideal".into(),
            reference: true,
            points: xs
                .iter()
                .map(|&x| Point {
                    x,
                    y: 1.0,
                    lo: 1.0,
                    hi: 1.0,
                    runs: 0,
                })
                .collect(),
        });
    }
    let mut out = Vec::new();
    out.extend(chart(
        doc,
        "ingest-threads.svg",
        "Ingest: load rate against threads",
        "threads",
        "MB/s of CSV",
        Kind::Lines { log, log_y: false },
        rates,
    ));
    out.extend(chart(
        doc,
        "ingest-efficiency.svg",
        &format!("Ingest: parallel efficiency ({cores} cores)"),
        "threads",
        "speed-up / min(threads, cores)",
        Kind::Lines { log, log_y: false },
        eff,
    ));
    out
}

fn q1(doc: &Doc) -> Vec<Chart> {
    let secs = lines_by(doc, "seconds", "threads", |_, s| s, |r| r.series.clone());
    let base = at_one(&secs);
    let cores = doc.cores();
    let mut series: Vec<Series> = secs
        .into_iter()
        .filter_map(|mut s| {
            let b = *base.get(&s.name)?;
            for p in &mut s.points {
                // Speed-up: the slowest run gives the lowest.
                (p.y, p.lo, p.hi) = (b / p.y, b / p.hi, b / p.lo);
            }
            Some(s)
        })
        .collect();
    let mut xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.x))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let log = wide(&series);
    if !xs.is_empty() {
        series.push(Series {
            name: format!("ideal (linear to {cores} cores)"),
            reference: true,
            points: xs
                .iter()
                .map(|&x| {
                    let y = x.min(cores);
                    Point {
                        x,
                        y,
                        lo: y,
                        hi: y,
                        runs: 0,
                    }
                })
                .collect(),
        });
    }
    chart(
        doc,
        "q1-speedup.svg",
        "TPC-H Q1: speed-up against threads",
        "threads",
        "speed-up over 1 thread",
        Kind::Lines { log, log_y: false },
        series,
    )
    .into_iter()
    .collect()
}

fn tenths(doc: &Doc) -> Vec<Chart> {
    let rate = |r: &Res, s: f64| r.num("rows").unwrap_or(0.0) / s;
    // The one load's marks come from a progress watcher, too coarse for
    // a rate per tenth: the separate loads of each tenth are charted.
    let mut series = lines_by(doc, "seconds", "tenth", rate, |r| r.series.clone());
    series.retain(|s| s.name != "sluice, one load");
    chart(
        doc,
        "secondary-index-tenths.svg",
        "Keyed load: rate per tenth of the files",
        "tenth of the files",
        "rows/s",
        Kind::Lines {
            log: false,
            log_y: true,
        },
        series,
    )
    .into_iter()
    .collect()
}

/// The values of `key` among `rs`, when there are several.
fn varying(rs: &[&Res], key: &str) -> bool {
    // A result without the key differs from those with it.
    let mut seen: Vec<String> = rs
        .iter()
        .map(|r| r.text(key).unwrap_or_else(|| "\u{0}".into()))
        .collect();
    seen.sort();
    seen.dedup();
    seen.len() > 1
}

fn shards(doc: &Doc) -> Vec<Chart> {
    let rs: Vec<&Res> = doc
        .results
        .iter()
        .filter(|r| r.metric == "seconds")
        .collect();
    let keys: Vec<&str> = ["threads", "routing", "format"]
        .into_iter()
        .filter(|k| varying(&rs, k))
        .collect();
    let name = |r: &Res| {
        let parts: Vec<String> = keys
            .iter()
            .filter_map(|k| {
                let v = r.text(k)?;
                Some(match (*k, v.as_str()) {
                    ("threads", "1") => "1 thread".to_string(),
                    ("threads", _) => format!("{v} threads"),
                    _ => v,
                })
            })
            .collect();
        if parts.is_empty() {
            r.series.clone()
        } else {
            parts.join(", ")
        }
    };
    let series = lines_by(doc, "seconds", "shards", |_, s| s, name);
    let log = wide(&series);
    chart(
        doc,
        "shards.svg",
        "Shards x threads: load time",
        "shards",
        "seconds",
        Kind::Lines { log, log_y: false },
        series,
    )
    .into_iter()
    .collect()
}

fn serve(doc: &Doc) -> Vec<Chart> {
    let tps = lines_by(doc, "tps", "clients", |_, v| v, |r| r.series.clone());
    let p99 = lines_by(doc, "p99_ms", "clients", |_, v| v, |r| r.series.clone());
    let (lt, lp) = (wide(&tps), wide(&p99));
    let mut out = Vec::new();
    out.extend(chart(
        doc,
        "serve-tps.svg",
        "Server: point selects against clients",
        "clients",
        "transactions/s",
        Kind::Lines {
            log: lt,
            log_y: false,
        },
        tps,
    ));
    out.extend(chart(
        doc,
        "serve-p99.svg",
        "Server: p99 latency against clients",
        "clients",
        "p99 latency (ms)",
        Kind::Lines {
            log: lp,
            log_y: true,
        },
        p99,
    ));
    out
}

/// Horizontal bars of `metric` per category (the `category` of each
/// result) and series, each run mapped by `f`.
fn bars_by(
    doc: &Doc,
    metric: &str,
    category: impl Fn(&Res) -> Option<String>,
    f: impl Fn(&Res, f64) -> f64,
) -> (Vec<String>, Vec<Series>) {
    let rs: Vec<&Res> = doc.results.iter().filter(|r| r.metric == metric).collect();
    let mut cats: Vec<String> = Vec::new();
    let mut series: Vec<Series> = series_names(rs.iter().copied())
        .into_iter()
        .map(|name| Series {
            name,
            reference: false,
            points: Vec::new(),
        })
        .collect();
    for r in rs {
        let Some(c) = category(r) else { continue };
        let i = cats.iter().position(|x| *x == c).unwrap_or_else(|| {
            cats.push(c);
            cats.len() - 1
        });
        let runs: Vec<f64> = r.runs.iter().map(|&v| f(r, v)).collect();
        if let (Some(s), Some(p)) = (
            series.iter_mut().find(|s| s.name == r.series),
            point(i as f64, &runs),
        ) {
            s.points.push(p);
        }
    }
    series.retain(|s| !s.points.is_empty());
    (cats, series)
}

fn cold(doc: &Doc) -> Vec<Chart> {
    let (categories, series) = bars_by(doc, "seconds", |r| r.text("query"), |_, s| s * 1e3);
    chart(
        doc,
        "cold.svg",
        "Cold queries: a fresh process per query",
        "query",
        "milliseconds",
        Kind::Bars { categories },
        series,
    )
    .into_iter()
    .collect()
}

fn pgo(doc: &Doc) -> Vec<Chart> {
    // Runs are interleaved pairs: the gain of each pair.
    let mut categories = Vec::new();
    let mut points = Vec::new();
    let of = |series: &str, name: &str| {
        doc.results.iter().find(|r| {
            r.series == series
                && r.metric == "seconds"
                && r.text("scenario").as_deref() == Some(name)
        })
    };
    for r in doc
        .results
        .iter()
        .filter(|r| r.series == "release" && r.metric == "seconds")
    {
        let Some(name) = r.text("scenario") else {
            continue;
        };
        let Some(p) = of("pgo", &name) else { continue };
        let gains: Vec<f64> = r
            .runs
            .iter()
            .zip(&p.runs)
            .map(|(a, b)| (a / b - 1.0) * 100.0)
            .collect();
        if let Some(pt) = point(categories.len() as f64, &gains) {
            categories.push(name);
            points.push(pt);
        }
    }
    let series = vec![Series {
        name: "pgo".into(),
        reference: false,
        points,
    }];
    chart(
        doc,
        "pgo-gain.svg",
        "Profile-guided build: gain per scenario",
        "scenario",
        "release time / PGO time - 1 (%)",
        Kind::Bars { categories },
        series,
    )
    .into_iter()
    .collect()
}

/// A bar chart of each metric's medians, for scenarios without a chart of
/// their own: one bar per case (the case keys that vary) and series.
fn generic(doc: &Doc) -> Vec<Chart> {
    let mut metrics: Vec<(String, String)> = Vec::new();
    for r in &doc.results {
        if !metrics.iter().any(|(m, _)| *m == r.metric) {
            metrics.push((r.metric.clone(), r.unit.clone()));
        }
    }
    let mut out = Vec::new();
    for (metric, unit) in metrics {
        let rs: Vec<&Res> = doc.results.iter().filter(|r| r.metric == metric).collect();
        let mut keys: Vec<&String> = rs.iter().flat_map(|r| r.case.keys()).collect();
        keys.sort();
        keys.dedup();
        let keys: Vec<String> = keys
            .into_iter()
            .filter(|k| varying(&rs, k))
            .cloned()
            .collect();
        let category = |r: &Res| {
            let parts: Vec<String> = keys
                .iter()
                .filter_map(|k| Some(format!("{k} {}", r.text(k)?)))
                .collect();
            Some(if parts.is_empty() {
                "all".into()
            } else {
                parts.join(", ")
            })
        };
        let (categories, series) = bars_by(doc, &metric, category, |_, v| v);
        let file = format!("{}-{}.svg", doc.scenario, metric.replace('_', "-"));
        let y = if unit.is_empty() {
            metric.clone()
        } else {
            format!("{metric} ({unit})")
        };
        out.extend(chart(
            doc,
            &file,
            &format!("{}: {metric}", doc.scenario),
            "",
            &y,
            Kind::Bars { categories },
            series,
        ));
    }
    out
}

/// The charts of one scenario's results.
pub fn charts(doc: &Doc) -> Vec<Chart> {
    match doc.scenario.as_str() {
        "ingest" => ingest(doc),
        "q1" => q1(doc),
        "secondary-index" => tenths(doc),
        "shards" => shards(doc),
        "serve" => serve(doc),
        "cold" => cold(doc),
        "pgo" => pgo(doc),
        _ => generic(doc),
    }
}

/// The order scenarios appear in on the page.
const ORDER: [&str; 7] = [
    "ingest",
    "q1",
    "secondary-index",
    "shards",
    "serve",
    "pgo",
    "cold",
];

pub fn run(inputs: &[PathBuf], output: &Path, quiet: bool) -> Result<()> {
    let docs = load(inputs)?;
    if docs.is_empty() {
        bail!(
            "no results files in {} (make them with `sluice bench SCENARIO --json-out FILE` or `sluice bench all`)",
            inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    // The newest file of each scenario.
    let mut newest: BTreeMap<String, Doc> = BTreeMap::new();
    let mut older = Vec::new();
    for d in docs {
        match newest.get(&d.scenario) {
            Some(n) if n.date >= d.date => older.push(d.path.clone()),
            _ => {
                if let Some(old) = newest.insert(d.scenario.clone(), d) {
                    older.push(old.path);
                }
            }
        }
    }
    let mut order: Vec<&Doc> = newest.values().collect();
    order.sort_by_key(|d| {
        ORDER
            .iter()
            .position(|o| *o == d.scenario)
            .unwrap_or(ORDER.len())
    });
    let charts: Vec<(String, Chart)> = order
        .iter()
        .flat_map(|d| charts(d).into_iter().map(|c| (d.scenario.clone(), c)))
        .collect();
    std::fs::create_dir_all(output).with_context(|| format!("creating {}", output.display()))?;
    let mut svgs = Vec::new();
    for (_, c) in &charts {
        let svg = draw::svg(c)?;
        let path = output.join(&c.file);
        std::fs::write(&path, &svg).with_context(|| format!("writing {}", path.display()))?;
        svgs.push(svg);
    }
    let page = html::page(&charts, &svgs, &order, &older);
    let index = output.join("index.html");
    std::fs::write(&index, page).with_context(|| format!("writing {}", index.display()))?;
    if !quiet {
        eprintln!(
            "{} charts from {} results files: {}",
            charts.len(),
            order.len(),
            index.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests;
