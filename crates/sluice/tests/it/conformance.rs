//! csv-spectrum: CSV files with their expected parse, read from the shared
//! conformance folder beside the project when it is there (CI has it; a
//! user's clone does not, and the test then says so and passes).

use std::path::PathBuf;

use sluice::batch::{Column, DataType, Schema};
use sluice::load::Header;

use crate::common::{TempDir, load_bytes, table_rows};

fn suite() -> Option<PathBuf> {
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance/csv-spectrum");
    p.is_dir().then_some(p)
}

#[test]
fn csv_spectrum() {
    let Some(root) = suite() else {
        eprintln!("csv-spectrum not found beside the project; skipping");
        return;
    };
    let mut checked = 0;
    let mut entries: Vec<_> = std::fs::read_dir(root.join("csvs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for csv in entries {
        let stem = csv.file_stem().unwrap().to_str().unwrap().to_string();
        let data = std::fs::read(&csv).unwrap();
        if stem == "location_coordinates" {
            // Not RFC 4180: a quote inside an unquoted field, and a Latin-1
            // degree sign that is not UTF-8 (its JSON also disagrees with the
            // CSV's phone number). sluice refuses it by default, clearly.
            let dir = TempDir::new("spectrum");
            let o = sluice::load::LoadOptions {
                schema: Some(
                    "phone TEXT, coords TEXT, cities TEXT, counties TEXT"
                        .parse()
                        .unwrap(),
                ),
                header: Header::Yes,
                ..Default::default()
            };
            let e = load_bytes(&dir, "t", &data, &o).unwrap_err().to_string();
            assert!(
                e.contains(":2: column 2 (coords): unexpected quote inside an unquoted field"),
                "{e}"
            );
            checked += 1;
            continue;
        }
        let expected: Vec<serde_json::Map<String, serde_json::Value>> = serde_json::from_slice(
            &std::fs::read(root.join("json").join(format!("{stem}.json"))).unwrap(),
        )
        .unwrap();
        // Column names come from the file's header line, all TEXT.
        let header_line = data.split(|&b| b == b'\n').next().unwrap();
        let names: Vec<String> = String::from_utf8_lossy(header_line)
            .trim_end_matches('\r')
            .split(',')
            .map(|s| s.trim().to_string())
            .collect();
        let schema = Schema::new(
            names
                .iter()
                .map(|n| Column {
                    name: n.replace(' ', "_"),
                    data_type: DataType::Text,
                    default: None,
                    primary_key: false,
                })
                .collect(),
        )
        .unwrap();
        let dir = TempDir::new("spectrum");
        let o = sluice::load::LoadOptions {
            schema: Some(schema),
            header: Header::Yes,
            ..Default::default()
        };
        load_bytes(&dir, "t", &data, &o).unwrap_or_else(|e| panic!("{stem}: {e}"));
        let got = table_rows(&dir.path().join("db"), "t");
        assert_eq!(got.len(), expected.len(), "{stem}: row count");
        for (g, e) in got.iter().zip(&expected) {
            for (i, n) in names.iter().enumerate() {
                let mut want = e[n].as_str().unwrap().to_string();
                if !data.contains(&b'\r') {
                    // Some copies of the suite have their line endings
                    // converted to LF while the JSON still says CRLF.
                    want = want.replace("\r\n", "\n");
                }
                // csv-spectrum has no NULL: an empty field is the empty string.
                assert_eq!(g[i].as_deref().unwrap_or(""), want, "{stem}: column {n}");
            }
        }
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} csv-spectrum files checked");
}
