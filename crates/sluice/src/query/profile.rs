//! What a query's operators did, for EXPLAIN ANALYZE: each step's rows
//! in and out and its time, and each operator's peak memory.
//!
//! A step is a pipeline run to its breaker (a scan through its filter
//! and projection into an aggregate, a sort, or the rows a join reads),
//! a hash table built, or a join probed. Steps are numbered in the order
//! they start; a step that runs inside another (a join's inputs inside
//! the query that reads the join) is indented under it. Peak memory is
//! per operator kind as the memory pool counts it ([`super::memory`]):
//! the most bytes its reservations held at once.
//!
//! Profiling is off unless the query is an `EXPLAIN ANALYZE`: then the
//! run carries a [`Profile`] in its options ([`super::QueryOptions`]).
//!
//! For: EXPLAIN ANALYZE's report. Not for: EXPLAIN's plan (that is
//! [`super::plan::Plan::describe`]).

use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The steps and memory of one query's run.
#[derive(Debug, Default)]
pub struct Profile {
    steps: Mutex<Vec<Step>>,
    depth: AtomicUsize,
    memory: Mutex<MemoryState>,
}

#[derive(Debug, Default)]
struct MemoryState {
    operators: Vec<OperatorMemory>,
    now: u64,
    peak: u64,
    /// Bytes and spill files (runs) written, per operator.
    spilled: Vec<(&'static str, u64, u64)>,
}

#[derive(Debug, Clone)]
struct Step {
    depth: usize,
    name: String,
    rows_in: Option<u64>,
    rows_out: Option<u64>,
    time: Option<Duration>,
}

#[derive(Debug, Clone)]
struct OperatorMemory {
    operator: &'static str,
    now: u64,
    peak: u64,
}

/// A step begun ([`Profile::start`]), to be finished.
#[must_use]
pub struct Started {
    index: usize,
    at: Instant,
}

impl Profile {
    pub fn new() -> Profile {
        Profile::default()
    }

    /// Begins a step: steps begun before it finishes are its children.
    pub fn start(&self) -> Started {
        let depth = self.depth.fetch_add(1, Ordering::Relaxed);
        let mut steps = self.steps.lock().unwrap_or_else(|e| e.into_inner());
        steps.push(Step {
            depth,
            name: String::new(),
            rows_in: None,
            rows_out: None,
            time: None,
        });
        Started {
            index: steps.len() - 1,
            at: Instant::now(),
        }
    }

    /// Ends the step with its name and rows (`rows_in` where it has an
    /// input of its own to count).
    pub fn finish(&self, s: Started, name: String, rows_in: Option<u64>, rows_out: u64) {
        let time = s.at.elapsed();
        self.depth.fetch_sub(1, Ordering::Relaxed);
        let mut steps = self.steps.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(st) = steps.get_mut(s.index) {
            st.name = name;
            st.rows_in = rows_in;
            st.rows_out = Some(rows_out);
            st.time = Some(time);
        }
    }

    /// A step that runs inside the next one (a join probe pipelined into
    /// the aggregate that reads its rows): listed now, as a child of the
    /// step running, filled in by [`Profile::fill`] once its rows are
    /// counted.
    pub fn placeholder(&self, name: String, rows_in: Option<u64>) -> usize {
        let depth = self.depth.load(Ordering::Relaxed);
        let mut steps = self.steps.lock().unwrap_or_else(|e| e.into_inner());
        steps.push(Step {
            depth,
            name,
            rows_in,
            rows_out: None,
            time: None,
        });
        steps.len() - 1
    }

    /// Completes step `index` of [`Profile::placeholder`]: its rows and
    /// its time (a pipelined step's: summed over the workers).
    /// A placeholder's rows read and made, and its time.
    pub fn fill_in(&self, index: usize, rows_in: u64, rows_out: u64, time: Duration) {
        let mut steps = self.steps.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(st) = steps.get_mut(index) {
            st.rows_in = Some(rows_in);
            st.rows_out = Some(rows_out);
            st.time = Some(time);
        }
    }

    pub fn fill(&self, index: usize, rows_out: u64, time: Duration) {
        let mut steps = self.steps.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(st) = steps.get_mut(index) {
            st.rows_out = Some(rows_out);
            st.time = Some(time);
        }
    }

    /// Ends a step that failed: it keeps its place, shown unfinished.
    pub fn abandon(&self, s: Started, name: String) {
        self.depth.fetch_sub(1, Ordering::Relaxed);
        let mut steps = self.steps.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(st) = steps.get_mut(s.index) {
            st.name = name;
        }
    }

    /// Runs `f` as a step named `name`, counting the rows it returns.
    pub fn step<T>(
        &self,
        name: impl FnOnce() -> String,
        rows_in: Option<u64>,
        f: impl FnOnce() -> crate::Result<T>,
        rows_out: impl FnOnce(&T) -> u64,
    ) -> crate::Result<T> {
        let s = self.start();
        match f() {
            Ok(t) => {
                let n = rows_out(&t);
                self.finish(s, name(), rows_in, n);
                Ok(t)
            }
            Err(e) => {
                self.abandon(s, name());
                Err(e)
            }
        }
    }

    /// `operator`'s reservations changed by `grown` bytes (or shrank by
    /// `shrunk`).
    pub(crate) fn account(&self, operator: &'static str, grown: u64, shrunk: u64) {
        let mut st = self.memory.lock().unwrap_or_else(|e| e.into_inner());
        st.now = st.now.saturating_add(grown).saturating_sub(shrunk);
        st.peak = st.peak.max(st.now);
        let m = &mut st.operators;
        let i = match m.iter().position(|o| o.operator == operator) {
            Some(i) => i,
            None => {
                m.push(OperatorMemory {
                    operator,
                    now: 0,
                    peak: 0,
                });
                m.len() - 1
            }
        };
        let o = &mut m[i];
        o.now = o.now.saturating_add(grown).saturating_sub(shrunk);
        o.peak = o.peak.max(o.now);
    }

    /// `operator` wrote `bytes` more to spill files, in `files` more runs.
    pub(crate) fn spilled(&self, operator: &'static str, bytes: u64, files: u64) {
        let mut st = self.memory.lock().unwrap_or_else(|e| e.into_inner());
        match st.spilled.iter_mut().find(|s| s.0 == operator) {
            Some(s) => {
                s.1 += bytes;
                s.2 += files;
            }
            None => st.spilled.push((operator, bytes, files)),
        }
    }

    /// Bytes `operator` wrote to spill files (0 if it never spilled).
    pub fn spilled_by(&self, operator: &str) -> u64 {
        let m = self.memory.lock().unwrap_or_else(|e| e.into_inner());
        m.spilled
            .iter()
            .find(|s| s.0 == operator)
            .map_or(0, |s| s.1)
    }

    /// The most bytes `operator` held at once (0 if it never reserved).
    pub fn peak_of(&self, operator: &str) -> u64 {
        let m = self.memory.lock().unwrap_or_else(|e| e.into_inner());
        m.operators
            .iter()
            .find(|o| o.operator == operator)
            .map_or(0, |o| o.peak)
    }

    /// The most bytes the query's operators held at once, all together.
    pub fn peak(&self) -> u64 {
        self.memory.lock().unwrap_or_else(|e| e.into_inner()).peak
    }

    /// The report: one line a step, then one line an operator that held
    /// memory.
    pub fn report(&self) -> String {
        let mut s = String::new();
        let steps = self.steps.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(s, "Steps (as run; a step's inputs indented under it):");
        for st in steps.iter() {
            let rows = match (st.rows_in, st.rows_out) {
                (Some(i), Some(o)) => format!("{i} -> {o} rows"),
                (None, Some(o)) => format!("{o} rows"),
                _ => "did not finish".to_string(),
            };
            let time = st.time.map_or(String::new(), |t| {
                format!(", {:.3} ms", t.as_secs_f64() * 1e3)
            });
            let _ = writeln!(s, "{}{}: {rows}{time}", "  ".repeat(st.depth + 1), st.name);
        }
        let m = self.memory.lock().unwrap_or_else(|e| e.into_inner());
        if m.operators.iter().any(|o| o.peak > 0) {
            let _ = writeln!(s, "Peak memory by operator:");
            for o in m.operators.iter().filter(|o| o.peak > 0) {
                let _ = writeln!(
                    s,
                    "  {}: {}",
                    o.operator,
                    super::memory::human_bytes(o.peak)
                );
            }
        }
        if !m.spilled.is_empty() {
            let _ = writeln!(s, "Spilled to disk by operator:");
            for (op, bytes, files) in &m.spilled {
                let _ = writeln!(
                    s,
                    "  {op}: {} in {files} run{}",
                    super::memory::human_bytes(*bytes),
                    if *files == 1 { "" } else { "s" }
                );
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_nest_in_start_order_and_memory_keeps_its_peak() {
        let p = Profile::new();
        let outer = p.start();
        let inner = p.start();
        p.finish(inner, "Scan t".into(), Some(10), 4);
        p.finish(outer, "Aggregate".into(), None, 1);
        let failed = p.start();
        p.abandon(failed, "Sort".into());
        p.account("sort", 100, 0);
        p.account("sort", 50, 0);
        p.account("sort", 0, 150);
        p.account("sort", 20, 0);
        assert_eq!(p.peak_of("sort"), 150);
        assert_eq!(p.peak_of("window"), 0);
        // All together: 150 at most so far, then 20 + 200.
        assert_eq!(p.peak(), 150);
        p.account("window", 200, 0);
        assert_eq!(p.peak(), 220);
        let r = p.report();
        let lines: Vec<&str> = r.lines().collect();
        assert!(lines[1].starts_with("  Aggregate: 1 rows, "), "{r}");
        assert!(lines[2].starts_with("    Scan t: 10 -> 4 rows, "), "{r}");
        assert_eq!(lines[3], "  Sort: did not finish", "{r}");
        assert_eq!(lines[5], "  sort: 150 B", "{r}");
        assert_eq!(lines[6], "  window: 200 B", "{r}");
        assert_eq!(lines.len(), 7, "nothing spilled, no spill lines: {r}");
        p.spilled("hash aggregate", 0, 1);
        p.spilled("hash aggregate", 2048, 0);
        p.spilled("hash aggregate", 1024, 1);
        assert_eq!(p.spilled_by("hash aggregate"), 3072);
        assert_eq!(p.spilled_by("sort"), 0);
        let r = p.report();
        let lines: Vec<&str> = r.lines().collect();
        assert_eq!(lines[7], "Spilled to disk by operator:", "{r}");
        assert_eq!(lines[8], "  hash aggregate: 3.0 KiB in 2 runs", "{r}");
    }
}
