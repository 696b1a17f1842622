//! TIMESTAMPTZ: instants kept as UTC, shown and read in the session's
//! zone (UTC unless the catalog says otherwise), as PostgreSQL's
//! `timestamptz`; TIMESTAMP ignores an offset in SQL and refuses one in a
//! loaded file (see regression_values).

use sluice::batch::Schema;
use sluice::query::plan::{Catalog, plan_sql};
use sluice::query::run_plan;
use sluice::store::Database;

use crate::common::{
    TempDir, load_bytes, one_and_many_workers, opts, same_on_every_run, tiny_layout,
};

const CSV: &str = "id,t,ts\n\
1,2024-01-31 23:30:00+00,2024-01-31 23:30:00\n\
2,2024-02-01T01:15:00+02:00,2024-02-01 01:15:00\n\
3,2024-02-01 10:00:00.25-05,2024-02-01 10:00:00.25\n\
4,,\n";

/// The table loaded twice: as one segment, and cut fine (many segments,
/// batches and zone maps: see `tiny_layout`).
fn table() -> [TempDir; 2] {
    let schema = "id BIGINT, t TIMESTAMPTZ, ts TIMESTAMP";
    [opts(schema), tiny_layout(opts(schema))].map(|o| {
        let dir = TempDir::new("tstz");
        load_bytes(&dir, "t", CSV.as_bytes(), &o).unwrap();
        dir
    })
}

/// The database as a session in a zone `secs` east of UTC sees it.
struct Session<'a>(&'a Database, i64);

impl Catalog for Session<'_> {
    fn table_schema(&self, name: &str) -> Option<Schema> {
        Catalog::table_schema(self.0, name)
    }
    fn time_zone(&self) -> String {
        sluice::batch::zone_label(self.1)
    }
}

/// The rows of `sql` in a session `zone` seconds east of UTC, NULL as
/// "NULL"; the same for both layouts, at 1 and 3 workers with 1-row
/// morsels.
fn rows(dirs: &[TempDir; 2], zone: i64, sql: &str) -> Vec<Vec<String>> {
    let runs = one_and_many_workers();
    let [one_segment, fine] = dirs.each_ref().map(|dir| {
        let db = Database::open(dir.path().join("db")).unwrap();
        let plan = plan_sql(sql, &Session(&db, zone)).unwrap_or_else(|e| panic!("{sql}: {e}"));
        same_on_every_run(sql, &runs, |o| run_plan(&db, &plan, o))
    });
    assert_eq!(one_segment, fine, "{sql}: one segment and many differ");
    one_segment
}

fn one(dirs: &[TempDir; 2], zone: i64, sql: &str) -> Vec<String> {
    rows(dirs, zone, sql)
        .into_iter()
        .map(|r| r.join("|"))
        .collect()
}

#[test]
fn instants_are_kept_as_utc_and_shown_with_their_offset() {
    let d = table();
    assert_eq!(
        one(&d, 0, "SELECT id, t FROM t ORDER BY id"),
        [
            "1|2024-01-31 23:30:00+00",
            "2|2024-01-31 23:15:00+00",
            "3|2024-02-01 15:00:00.25+00",
            "4|NULL"
        ]
    );
    // In a session at +05:30, the same instants with that zone's times.
    assert_eq!(
        one(&d, 5 * 3600 + 1800, "SELECT t FROM t WHERE id = 1"),
        ["2024-02-01 05:00:00+05:30"]
    );
    assert_eq!(
        one(&d, -8 * 3600, "SELECT t FROM t WHERE id = 3"),
        ["2024-02-01 07:00:00.25-08"]
    );
    // Order, min and max, grouping are of instants.
    assert_eq!(
        one(&d, 0, "SELECT id FROM t WHERE t IS NOT NULL ORDER BY t"),
        ["2", "1", "3"]
    );
    assert_eq!(
        one(&d, 0, "SELECT min(t), max(t), count(t) FROM t"),
        ["2024-01-31 23:15:00+00|2024-02-01 15:00:00.25+00|3"]
    );
}

#[test]
fn text_without_an_offset_is_read_in_the_session_zone() {
    let d = table();
    // 23:30 and 23:15 UTC are 00:30 and 00:15 at +01: `> '2024-02-01
    // 00:00'` holds for them at +01, not at UTC.
    assert_eq!(
        one(
            &d,
            0,
            "SELECT id FROM t WHERE t > '2024-02-01 00:00' ORDER BY id"
        ),
        ["3"]
    );
    assert_eq!(
        one(
            &d,
            3600,
            "SELECT id FROM t WHERE t > '2024-02-01 00:00' ORDER BY id"
        ),
        ["1", "2", "3"]
    );
    // An offset written is applied, whatever the session's zone.
    for zone in [0, 3600, -7 * 3600] {
        assert_eq!(
            one(
                &d,
                zone,
                "SELECT id FROM t WHERE t = '2024-02-01 01:15:00+02' ORDER BY id"
            ),
            ["2"],
            "zone {zone}"
        );
        assert_eq!(
            one(
                &d,
                zone,
                "SELECT id FROM t WHERE t = TIMESTAMPTZ '2024-02-01 10:00:00.25-05'"
            ),
            ["3"],
            "zone {zone}"
        );
    }
}

#[test]
fn local_times_dates_and_fields_are_the_session_zones() {
    let d = table();
    let sql = "SELECT CAST(t AS TIMESTAMP), CAST(t AS DATE), EXTRACT(HOUR FROM t), EXTRACT(DAY FROM t), CAST(t AS TEXT) FROM t WHERE id = 1";
    assert_eq!(
        one(&d, 0, sql),
        ["2024-01-31 23:30:00|2024-01-31|23|31|2024-01-31 23:30:00+00"]
    );
    assert_eq!(
        one(&d, 3600, sql),
        ["2024-02-01 00:30:00|2024-02-01|0|1|2024-02-01 00:30:00+01"]
    );
    // A TIMESTAMP meets an instant as a local time of the session.
    assert_eq!(
        one(
            &d,
            0,
            "SELECT count(*) FROM t WHERE CAST(ts AS TIMESTAMPTZ) = t"
        ),
        ["1"]
    );
    assert_eq!(
        one(&d, 0, "SELECT id FROM t WHERE ts = t ORDER BY id"),
        ["1"]
    );
    assert_eq!(
        one(&d, -5 * 3600, "SELECT id FROM t WHERE ts = t ORDER BY id"),
        ["3"]
    );
    // A TIMESTAMP compared with an instant moves by the session's offset:
    // its zone map is not the instant's (10:00 at -10 is 20:00 UTC, past
    // the stored maximum of 10:00).
    assert_eq!(
        one(
            &d,
            -10 * 3600,
            "SELECT id FROM t WHERE ts >= TIMESTAMPTZ '2024-02-01 19:00:00+00'"
        ),
        ["3"]
    );
    // GROUP BY a day of the session.
    assert_eq!(
        one(
            &d,
            0,
            "SELECT CAST(t AS DATE), count(*) FROM t WHERE t IS NOT NULL GROUP BY 1 ORDER BY 1"
        ),
        ["2024-01-31|2", "2024-02-01|1"]
    );
    assert_eq!(
        one(
            &d,
            3600,
            "SELECT CAST(t AS DATE), count(*) FROM t WHERE t IS NOT NULL GROUP BY 1 ORDER BY 1"
        ),
        ["2024-02-01|3"]
    );
}

#[test]
fn sql_timestamp_ignores_an_offset_and_timestamptz_applies_it() {
    let d = table();
    assert_eq!(
        one(
            &d,
            0,
            "SELECT TIMESTAMP '2024-01-31 12:34:56-05', TIMESTAMPTZ '2024-01-31 12:34:56-05', CAST('2024-01-31 12:34:56-05' AS TIMESTAMP WITH TIME ZONE)"
        ),
        ["2024-01-31 12:34:56|2024-01-31 17:34:56+00|2024-01-31 17:34:56+00"]
    );
}
