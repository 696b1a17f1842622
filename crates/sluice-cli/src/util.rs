//! Small helpers for the command line: option parsing, sizes, progress.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use anyhow::{Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use sluice::load::Progress;

/// Parses a one-byte option: `,`, `|`, `tab`, `\t`.
pub fn parse_char(s: &str, what: &str) -> Result<u8> {
    match s {
        "tab" | "\\t" | "\t" => Ok(b'\t'),
        _ if s.len() == 1 && s.is_ascii() => Ok(s.as_bytes()[0]),
        _ => bail!("{what} must be one ASCII character or 'tab', not {s:?}"),
    }
}

/// Parses `123`, `64KiB`, `512MB`, `2GiB`, `1.5G` into bytes.
pub fn parse_size(s: &str, what: &str) -> Result<u64> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let Ok(n) = num.parse::<f64>() else {
        bail!("{what}: {s:?} is not a size (examples: 512MiB, 2GiB, 1000000)");
    };
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "kb" => 1e3,
        "m" | "mib" => 1024.0 * 1024.0,
        "mb" => 1e6,
        "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "gb" => 1e9,
        "t" | "tib" => 1024f64.powi(4),
        "tb" => 1e12,
        u => bail!("{what}: unknown unit {u:?} in {s:?} (use KiB, MiB, GiB, KB, MB, GB)"),
    };
    Ok((n * mult) as u64)
}

/// Parses `--commit-every`: a size (`1GiB`, `256MB`), a number of files
/// (`1000files`), a time (`30s`, `10min`, `1h`), or `all` (one commit).
pub fn parse_commit_every(s: &str) -> Result<sluice::load::CommitEvery> {
    use sluice::load::CommitEvery;
    let t = s.trim().to_ascii_lowercase();
    let hint = "examples: 1GiB, 256MB, 1000files, 30s, 10min, all";
    if matches!(t.as_str(), "all" | "once" | "never") {
        return Ok(CommitEvery::ONCE);
    }
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n = || -> Result<u64> {
        match num.parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => bail!("--commit-every {s:?}: expected a positive number ({hint})"),
        }
    };
    let seconds = match unit.trim() {
        // "10m": minutes or mebibytes? Neither is guessed.
        "m" => bail!("--commit-every {s:?}: say 10min for minutes or 10MiB for bytes"),
        "file" | "files" => {
            return Ok(CommitEvery {
                files: Some(n()?),
                ..CommitEvery::ONCE
            });
        }
        "s" | "sec" | "secs" => Some(1),
        "min" | "mins" => Some(60),
        "h" | "hour" | "hours" => Some(3600),
        _ => None,
    };
    if let Some(m) = seconds {
        let secs = n()?
            .checked_mul(m)
            .ok_or_else(|| anyhow::anyhow!("--commit-every {s:?}: too long"))?;
        return Ok(CommitEvery {
            seconds: Some(secs),
            ..CommitEvery::ONCE
        });
    }
    let bytes = parse_size(&t, "--commit-every").map_err(|_| {
        anyhow::anyhow!("--commit-every {s:?}: not a size, a number of files or a time ({hint})")
    })?;
    if bytes == 0 {
        bail!("--commit-every {s:?}: expected more than 0 ({hint})");
    }
    Ok(CommitEvery {
        bytes: Some(bytes),
        ..CommitEvery::ONCE
    })
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
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", units[i])
    }
}

pub fn human_count(n: u64) -> String {
    match n {
        0..1_000_000 => n.to_string(),
        1_000_000..1_000_000_000 => format!("{:.2}M", n as f64 / 1e6),
        _ => format!("{:.2}G", n as f64 / 1e9),
    }
}

/// Writes one CSV row; NULL is an empty field, an empty string is `""`.
pub fn write_csv_row(out: &mut dyn Write, cells: &[Option<String>], d: u8) -> std::io::Result<()> {
    for (i, c) in cells.iter().enumerate() {
        if i > 0 {
            out.write_all(&[d])?;
        }
        let Some(v) = c else { continue };
        let needs = v.is_empty()
            || v.bytes()
                .any(|b| b == d || b == b'"' || b == b'\n' || b == b'\r');
        if needs {
            out.write_all(b"\"")?;
            out.write_all(v.replace('"', "\"\"").as_bytes())?;
            out.write_all(b"\"")?;
        } else {
            out.write_all(v.as_bytes())?;
        }
    }
    out.write_all(b"\n")
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

/// Bytes of input shown in a message, quoted, the rest cut to `...`.
pub fn snippet(v: &[u8]) -> String {
    const MAX: usize = 40;
    let s = String::from_utf8_lossy(&v[..v.len().min(MAX)]);
    if v.len() > MAX {
        format!("{s:?}...")
    } else {
        format!("{s:?}")
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

    #[test]
    fn commit_every_forms() {
        use sluice::load::CommitEvery;
        let c = |s: &str| parse_commit_every(s).unwrap();
        assert_eq!(c("1GiB").bytes, Some(1 << 30));
        assert_eq!(c("256MB").bytes, Some(256_000_000));
        assert_eq!(c("1000files").files, Some(1000));
        assert_eq!(c("1 file").files, Some(1));
        assert_eq!(c("30s").seconds, Some(30));
        assert_eq!(c("10min").seconds, Some(600));
        assert_eq!(c("2h").seconds, Some(7200));
        assert_eq!(c("all"), CommitEvery::ONCE);
        for bad in [
            "",
            "files",
            "0files",
            "0",
            "0s",
            "-1",
            "3 parsecs",
            "0B",
            "x",
            "10m",
            "99999999999999999h",
        ] {
            assert!(parse_commit_every(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_and_chars() {
        assert_eq!(parse_size("2GiB", "x").unwrap(), 2 << 30);
        assert_eq!(parse_size("512MB", "x").unwrap(), 512_000_000);
        assert_eq!(parse_size("1000", "x").unwrap(), 1000);
        assert_eq!(parse_size("1.5k", "x").unwrap(), 1536);
        assert!(
            parse_size("lots", "--memory-limit")
                .unwrap_err()
                .to_string()
                .contains("not a size")
        );
        assert_eq!(parse_char("tab", "d").unwrap(), b'\t');
        assert_eq!(parse_char("|", "d").unwrap(), b'|');
        assert!(parse_char("ab", "--delimiter").is_err());
    }
}
