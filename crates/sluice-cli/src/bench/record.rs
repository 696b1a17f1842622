//! The measurements of a benchmark run as JSON (`--json-out FILE`), for
//! `sluice bench report` to chart: every run's raw value, not only the
//! medians the tables print, with the machine, the commit, the build and
//! the date. FORMAT.md ("Benchmark results") describes the file.
//!
//! Scenarios call [`runs`] as they measure; the values collect in this
//! process and [`write`] puts them in a file at the end (or `bench all`
//! takes them per scenario with [`take`]).

use std::path::Path;
use std::sync::Mutex;

use anyhow::{Context, Result};
use serde_json::{Value, json};

/// The format name and version every results file carries.
pub const FORMAT: &str = "sluice-bench/1";

static RESULTS: Mutex<Vec<Value>> = Mutex::new(Vec::new());

/// Records the runs of one measurement: `series` is who ran it (`sluice`,
/// `duckdb`, `postgresql`, ...), `case` the parameters that tell it apart
/// within the scenario (a JSON object: `{"threads": 2}`), `metric` what
/// was measured (`seconds`, `tps`, `p99_ms`, ...) in `unit`. NaN runs (a
/// run that failed) are left out.
pub fn runs(series: &str, case: Value, metric: &str, unit: &str, runs: &[f64]) {
    let runs: Vec<f64> = runs.iter().copied().filter(|v| v.is_finite()).collect();
    if runs.is_empty() {
        return;
    }
    let r = json!({
        "series": series,
        "case": case,
        "metric": metric,
        "unit": unit,
        "runs": runs,
    });
    RESULTS.lock().unwrap_or_else(|p| p.into_inner()).push(r);
}

/// Records one value (a size, a count, a ratio measured once).
pub fn value(series: &str, case: Value, metric: &str, unit: &str, v: f64) {
    runs(series, case, metric, unit, &[v]);
}

/// The results recorded so far, leaving none.
pub fn take() -> Vec<Value> {
    std::mem::take(&mut *RESULTS.lock().unwrap_or_else(|p| p.into_inner()))
}

/// The build of this binary: `debug`, `release`, or what `SLUICE_BUILD`
/// said at compile time (`cargo xtask pgo` builds with `pgo`).
pub fn build() -> &'static str {
    match option_env!("SLUICE_BUILD") {
        Some(b) => b,
        None if cfg!(debug_assertions) => "debug",
        None => "release",
    }
}

/// The machine the figures are of: cores, CPU model, memory, kernel and
/// the disk under `dir`.
pub fn machine(dir: &Path) -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "model name").then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        })
        .unwrap_or(0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| format!("{} {}", std::env::consts::OS, s.trim()))
        .unwrap_or_else(|_| std::env::consts::OS.to_string());
    json!({
        "cores": sluice::exec::usable_cores(),
        "model": model,
        "memory_bytes": memory,
        "kernel": kernel,
        "disk": disk(dir),
    })
}

/// The file system and block device that hold `dir` (`ext4 on vda`), from
/// /proc/self/mountinfo: the mount with the longest prefix of the path.
fn disk(dir: &Path) -> String {
    let path = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return "unknown".into();
    };
    let mut best: Option<(usize, String)> = None;
    for line in info.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let Some(dash) = f.iter().position(|x| *x == "-") else {
            continue;
        };
        let (Some(mount), Some(fs), Some(source)) = (f.get(4), f.get(dash + 1), f.get(dash + 2))
        else {
            continue;
        };
        // Octal escapes of the kernel (a space is \040); of mounts on the
        // same point the last one is the one seen.
        let mount = mount.replace("\\040", " ").replace("\\011", "\t");
        if path.starts_with(&mount) && best.as_ref().is_none_or(|(n, _)| mount.len() >= *n) {
            let dev = source.rsplit('/').next().unwrap_or(source);
            best = Some((mount.len(), format!("{fs} on {dev}")));
        }
    }
    best.map_or_else(|| "unknown".into(), |(_, d)| d)
}

/// The results file of one scenario's run: `results` with everything that
/// says what they are of.
pub fn document(scenario: &str, dir: &Path, results: Vec<Value>) -> Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let date = chrono::DateTime::from_timestamp(now as i64, 0)
        .map(|d| d.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    // The binary as `sluice`: where it lies says nothing about the figures;
    // nor do the machine's directories (the files are published).
    let cwd = std::env::current_dir().unwrap_or_default();
    let command: Vec<String> = std::iter::once("sluice".to_string())
        .chain(std::env::args().skip(1).map(|a| shown_arg(&a, &cwd)))
        .collect();
    json!({
        "format": FORMAT,
        "scenario": scenario,
        "command": command,
        "sluice_version": env!("CARGO_PKG_VERSION"),
        "commit": option_env!("SLUICE_COMMIT").unwrap_or("unknown"),
        "build": build(),
        "date": date,
        "machine": machine(dir),
        "results": results,
    })
}

/// An argument as a results file shows it: an absolute path relative to
/// `cwd` when under it, else its last two components (`/srv/x/bench-data`
/// → `x/bench-data`): enough to tell runs apart, nothing of the machine.
fn shown_arg(arg: &str, cwd: &Path) -> String {
    let (prefix, path) = match arg.split_once('=') {
        Some((k, v)) if k.starts_with("--") => (format!("{k}="), v),
        _ => (String::new(), arg),
    };
    let p = Path::new(path);
    if !p.is_absolute() {
        return arg.to_string();
    }
    if let Ok(rel) = p.strip_prefix(cwd)
        && !cwd.as_os_str().is_empty()
    {
        let rel = rel.display().to_string();
        return format!("{prefix}{}", if rel.is_empty() { "." } else { &rel });
    }
    let tail: Vec<_> = p.components().rev().take(2).collect();
    let tail: std::path::PathBuf = tail.into_iter().rev().collect();
    format!("{prefix}{}", tail.display())
}

/// Writes `doc` to `path` (its directory made when missing), atomically.
pub fn write(path: &Path, doc: &Value) -> Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(doc)? + "\n";
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn recorded_commands_show_no_directories_of_the_machine() {
        let cwd = Path::new("/home/ann/sluice");
        assert_eq!(shown_arg("--runs", cwd), "--runs");
        assert_eq!(shown_arg("bench-data", cwd), "bench-data");
        assert_eq!(shown_arg("/home/ann/sluice/out/a.json", cwd), "out/a.json");
        assert_eq!(shown_arg("/srv/data/bench-data", cwd), "data/bench-data");
        assert_eq!(
            shown_arg("--dir=/srv/data/bench-data", cwd),
            "--dir=data/bench-data"
        );
        assert_eq!(shown_arg("/home/ann/sluice", cwd), ".");
    }

    use super::*;

    #[test]
    fn a_document_carries_what_the_results_are_of() {
        let doc = document(
            "ingest",
            Path::new("."),
            vec![
                json!({"series": "sluice", "case": {"threads": 1}, "metric": "seconds", "unit": "s", "runs": [1.5, 1.25]}),
            ],
        );
        assert_eq!(doc["format"], FORMAT);
        assert_eq!(doc["scenario"], "ingest");
        assert!(doc["machine"]["cores"].as_u64().unwrap() >= 1);
        assert!(!doc["machine"]["model"].as_str().unwrap().is_empty());
        let date = doc["date"].as_str().unwrap();
        assert_eq!(date.len(), 20, "{date}");
        assert!(date.ends_with('Z'));
        assert_eq!(doc["results"][0]["runs"][1], 1.25);
    }
}
