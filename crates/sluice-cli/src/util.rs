//! Small helpers for the command line: option parsing, sizes, progress.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use sluice::load::Progress;

/// Parses a one-byte option: `,`, `|`, `tab`, `\t` (`sluice::load::parse_char`).
pub fn parse_char(s: &str, what: &str) -> Result<u8> {
    Ok(sluice::load::parse_char(s, what)?)
}

/// Parses `123`, `64KiB`, `512MB`, `2GiB`, `1.5G` into bytes
/// (`sluice::load::parse_size`).
pub fn parse_size(s: &str, what: &str) -> Result<u64> {
    Ok(sluice::load::parse_size(s, what)?)
}

/// `2026-11-22 18:40:12 UTC` for seconds since the Unix epoch.
pub fn utc_time(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

pub fn human_bytes(b: u64) -> String {
    sluice::query::memory::human_bytes(b)
}

pub fn human_count(n: u64) -> String {
    match n {
        0..1_000_000 => n.to_string(),
        1_000_000..1_000_000_000 => format!("{:.2}M", n as f64 / 1e6),
        _ => format!("{:.2}G", n as f64 / 1e9),
    }
}

/// How often the progress bar redraws.
const PROGRESS_TICK: std::time::Duration = std::time::Duration::from_millis(100);

/// Shows a progress bar on stderr until the returned flag is set.
pub fn spawn_progress(
    p: Arc<Progress>,
    total: Option<u64>,
    files: u64,
) -> (Arc<AtomicBool>, JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let handle = std::thread::spawn(move || {
        let bar = match total {
            Some(t) => ProgressBar::new(t).with_style(
                ProgressStyle::with_template(
                    "{bar:30} {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta} {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            ),
            None => ProgressBar::new_spinner().with_style(
                ProgressStyle::with_template("{spinner} {bytes} {binary_bytes_per_sec} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            ),
        };
        while !s.load(Ordering::Relaxed) {
            bar.set_position(p.bytes_read.load(Ordering::Relaxed));
            let rows = p.rows.load(Ordering::Relaxed);
            let done = p.files_done.load(Ordering::Relaxed);
            if files > 1 {
                bar.set_message(format!("{} rows, file {done}/{files}", human_count(rows)));
            } else {
                bar.set_message(format!("{} rows", human_count(rows)));
            }
            std::thread::sleep(PROGRESS_TICK);
        }
        bar.finish_and_clear();
    });
    (stop, handle)
}

/// A delimiter as the user would type it: `,`, `tab`, `|`.
pub fn show_char(c: u8) -> String {
    match c {
        b'\t' => "tab".to_string(),
        b' ' => "space".to_string(),
        c => format!("'{}'", c as char),
    }
}

/// A dialect's delimiter, as the load summary says it.
pub fn show_delimiter(d: &sluice::parse::Dialect) -> String {
    match d.split {
        sluice::parse::Split::Delimiter => show_char(d.delimiter),
        sluice::parse::Split::Whitespace => "whitespace (runs of spaces and tabs)".to_string(),
        sluice::parse::Split::Line => "none (each line one field)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_times() {
        assert_eq!(utc_time(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_time(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc_time(1_795_372_812), "2026-11-22 18:40:12 UTC");
    }
}

/// Ctrl-C (or SIGTERM) sets `flag`, for work that stops cleanly at its
/// next step; a second one exits at once (status 130).
pub fn stop_on_ctrl_c(flag: Arc<AtomicBool>) {
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Registered first, so it sees the flag before the second handler sets it.
        let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, flag.clone());
        let _ = signal_hook::flag::register(sig, flag.clone());
    }
}
