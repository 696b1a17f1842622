//! Time zones: the offset from UTC an instant (TIMESTAMPTZ) is shown and
//! read with. A zone is a fixed offset (`UTC`, `+05:30`: an Arrow time
//! zone such as a loaded table's) or a named zone with rules
//! (`Europe/Berlin`: a session's `TimeZone`), whose offset changes with
//! daylight saving time and history. Named zones come from the system's
//! tz database (the directory `TZDIR` names, else `/usr/share/zoneinfo`),
//! as PostgreSQL built with the system's tzdata reads them.
//!
//! For: the offset at an instant ([`Zone::utc_offset`]) and of a local
//! time ([`Zone::local_offset`]); checking a zone's name ([`named`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::parse::value::zone_seconds;

const SEC: i64 = 1_000_000;

/// A zone: a fixed offset, or a named zone's rules.
#[derive(Clone)]
pub enum Zone {
    /// Seconds east of UTC.
    Fixed(i64),
    Named(Arc<tz::TimeZone>),
}

impl Zone {
    /// The zone of an Arrow time zone (`None`: no zone, UTC). A fixed
    /// offset or UTC's names are read as such; another name is looked up
    /// in the tz database, and a name it lacks is UTC (such a zone is
    /// never given to a session: [`named`] refuses it).
    pub fn of(label: Option<&str>) -> Zone {
        match label {
            None => Zone::Fixed(0),
            Some(l) => match zone_seconds(l) {
                Some(s) => Zone::Fixed(s),
                None => named(l).map_or(Zone::Fixed(0), Zone::Named),
            },
        }
    }

    /// Whether every instant's offset is 0.
    pub fn is_utc(&self) -> bool {
        matches!(self, Zone::Fixed(0))
    }

    /// The offset, seconds east of UTC, at the instant `utc_us`
    /// (microseconds since 1970-01-01 00:00:00 UTC).
    pub fn utc_offset(&self, utc_us: i64) -> i64 {
        match self {
            Zone::Fixed(s) => *s,
            Zone::Named(tz) => offset_at(tz, utc_us.div_euclid(SEC)),
        }
    }

    /// The offset, seconds east of UTC, of the local time `local_us` (as
    /// written, microseconds since 1970-01-01 00:00:00) in this zone. A
    /// local time that a transition skips (spring forward) or repeats
    /// (fall back) is read as PostgreSQL reads it: with the offset that
    /// gives the later instant, that is the offset before a skip and the
    /// offset after a repeat.
    pub fn local_offset(&self, local_us: i64) -> i64 {
        let tz = match self {
            Zone::Fixed(s) => return *s,
            Zone::Named(tz) => tz,
        };
        let t = local_us.div_euclid(SEC);
        // The offsets a day either side: transitions are further apart.
        let before = offset_at(tz, t.saturating_sub(86_400));
        let after = offset_at(tz, t.saturating_add(86_400));
        let fits = |o: i64| offset_at(tz, t.saturating_sub(o)) == o;
        match (fits(before), fits(after)) {
            (true, true) | (false, false) => before.min(after),
            (true, false) => before,
            (false, true) => after,
        }
    }

    /// The local time of the instant `utc_us`.
    pub fn to_local(&self, utc_us: i64) -> i64 {
        utc_us.saturating_add(self.utc_offset(utc_us) * SEC)
    }

    /// The instant of the local time `local_us`.
    pub fn to_utc(&self, local_us: i64) -> i64 {
        local_us.saturating_sub(self.local_offset(local_us) * SEC)
    }
}

fn offset_at(tz: &tz::TimeZone, unix_secs: i64) -> i64 {
    tz.find_local_time_type(unix_secs)
        .map_or(0, |t| i64::from(t.ut_offset()))
}

/// The named zone `name` (`Europe/Berlin`, `America/New_York`, `EST5EDT`)
/// from the tz database, read once and then kept. Refused: a name that is
/// no path below the database's directory (`/etc/x`, `../x`), and one the
/// database lacks or cannot be read.
pub fn named(name: &str) -> Result<Arc<tz::TimeZone>, String> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<tz::TimeZone>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(z) = cache.lock().ok().and_then(|c| c.get(name).cloned()) {
        return Ok(z);
    }
    let path = path_of(name)?;
    let bytes = std::fs::read(&path)
        .map_err(|e| format!("time zone \"{name}\": {}: {e}", path.display()))?;
    let tz = tz::TimeZone::from_tz_data(&bytes).map_err(|e| {
        format!(
            "time zone \"{name}\": {} is unreadable: {e}",
            path.display()
        )
    })?;
    // As PostgreSQL: its times count no leap seconds (`right/...` do).
    if !tz.as_ref().leap_seconds().is_empty() {
        return Err(format!("time zone \"{name}\" appears to use leap seconds"));
    }
    let tz = Arc::new(tz);
    if let Ok(mut c) = cache.lock() {
        c.insert(name.to_string(), tz.clone());
    }
    Ok(tz)
}

/// A zone's name as the tz database spells it (`europe/berlin` is
/// `Europe/Berlin`: PostgreSQL reads names without regard to case).
pub fn canonical_name(name: &str) -> Result<String, String> {
    let path = path_of(name)?;
    let dir = database_dir();
    let rel = path
        .strip_prefix(&dir)
        .map_err(|_| format!("\"{name}\" is not the name of a time zone"))?;
    named(&rel.to_string_lossy())?;
    Ok(rel.to_string_lossy().into_owned())
}

/// The tz database's directory: `TZDIR`, else `/usr/share/zoneinfo`.
fn database_dir() -> std::path::PathBuf {
    std::env::var_os("TZDIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "/usr/share/zoneinfo".into())
}

/// The file of zone `name` below the database's directory, each part of
/// the name matched without regard to case when no file has it exactly.
fn path_of(name: &str) -> Result<std::path::PathBuf, String> {
    let plain = !name.is_empty()
        && name.len() <= 64
        && name
            .split('/')
            .all(|p| !p.is_empty() && p != "." && p != "..")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'_' | b'-' | b'+'));
    if !plain {
        return Err(format!("\"{name}\" is not the name of a time zone"));
    }
    let dir = database_dir();
    let mut path = dir.clone();
    for part in name.split('/') {
        let exact = path.join(part);
        path = if exact.exists() {
            exact
        } else {
            std::fs::read_dir(&path)
                .ok()
                .and_then(|entries| {
                    entries
                        .flatten()
                        .find(|e| e.file_name().to_string_lossy().eq_ignore_ascii_case(part))
                })
                .map(|e| e.path())
                .ok_or_else(|| {
                    format!(
                        "time zone \"{name}\" is not in the tz database ({}; set TZDIR to \
                         use another)",
                        dir.display()
                    )
                })?
        };
    }
    if !path.is_file() {
        return Err(format!("\"{name}\" is not the name of a time zone"));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Microseconds of a UTC or local time `YYYY-MM-DD HH:MM`.
    fn us(s: &str) -> i64 {
        crate::parse::value::parse_timestamp_sql(s.as_bytes()).unwrap()
    }

    fn zone(name: &str) -> Option<Zone> {
        match named(name) {
            Ok(z) => Some(Zone::Named(z)),
            Err(e) => {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "no tz database under CI: {e}"
                );
                eprintln!("skipped: {e}");
                None
            }
        }
    }

    #[test]
    fn offsets_follow_daylight_saving_time() {
        let Some(ny) = zone("America/New_York") else {
            return;
        };
        assert_eq!(ny.utc_offset(us("2024-01-15 12:00")), -5 * 3600);
        assert_eq!(ny.utc_offset(us("2024-07-15 12:00")), -4 * 3600);
        // Spring forward (2024-03-10 02:00 EST -> 03:00 EDT, 07:00 UTC).
        assert_eq!(ny.utc_offset(us("2024-03-10 06:59")), -5 * 3600);
        assert_eq!(ny.utc_offset(us("2024-03-10 07:00")), -4 * 3600);
        // A skipped local time takes the offset before: 02:30 is 07:30 UTC.
        assert_eq!(ny.to_utc(us("2024-03-10 02:30")), us("2024-03-10 07:30"));
        // A repeated one (fall back, 2024-11-03 01:00-02:00) the offset
        // after: 01:30 is 06:30 UTC, as PostgreSQL reads it.
        assert_eq!(ny.to_utc(us("2024-11-03 01:30")), us("2024-11-03 06:30"));
        // Ordinary times on either side.
        assert_eq!(ny.to_utc(us("2024-11-03 00:30")), us("2024-11-03 04:30"));
        assert_eq!(ny.to_utc(us("2024-11-03 02:30")), us("2024-11-03 07:30"));
        assert_eq!(ny.to_local(us("2024-07-01 16:00")), us("2024-07-01 12:00"));
        // Far past the last written transition: the zone's rule.
        assert_eq!(ny.utc_offset(us("2100-07-01 12:00")), -4 * 3600);
        let Some(kolkata) = zone("Asia/Kolkata") else {
            return;
        };
        assert_eq!(kolkata.utc_offset(us("2024-07-01 12:00")), 5 * 3600 + 1800);
    }

    #[test]
    fn every_local_time_maps_back_to_itself_unless_skipped() {
        let Some(berlin) = zone("Europe/Berlin") else {
            return;
        };
        // Every 20 minutes through 2024: an instant's local time reads
        // back as the same instant, except in the repeated hour, where
        // the later instant is taken.
        let mut t = us("2024-01-01 00:00");
        while t < us("2025-01-01 00:00") {
            let local = berlin.to_local(t);
            let back = berlin.to_utc(local);
            if back != t {
                assert_eq!(back, t + 3600 * SEC, "{t}");
                assert_eq!(berlin.utc_offset(t), 2 * 3600);
            }
            t += 20 * 60 * SEC;
        }
    }

    #[test]
    fn names_outside_the_database_are_refused() {
        for bad in [
            "",
            "/etc/passwd",
            "../etc/passwd",
            "Europe/../../x",
            "a b",
            "Europe//Berlin",
        ] {
            assert!(named(bad).is_err(), "{bad}");
        }
        assert!(named("Nowhere/Atlantis").is_err());
        assert!(Zone::of(None).is_utc());
        assert!(Zone::of(Some("+00:00")).is_utc());
        assert_eq!(Zone::of(Some("+05:30")).utc_offset(0), 5 * 3600 + 1800);
    }
}
