//! Hive-style partition directories: `col=value/`, as Spark, Trino, Hive,
//! DuckDB and Polars write and read them.
//!
//! Useful for: naming a partition's directory from a value, and reading
//! the partition values back out of a file's path.
//! Not useful for: the files inside a partition (see [`super`]).

/// The directory name of a NULL partition value (Hive's).
pub const NULL_PARTITION: &str = "__HIVE_DEFAULT_PARTITION__";

/// Whether byte `b` of a partition value is percent-escaped in a
/// directory name: the characters Hive escapes (path separators, `=`,
/// `%`, quotes, wildcards, control bytes), and the space. Other bytes,
/// UTF-8 included, are written as they are: Hive and Spark unescape each
/// `%XX` to one character, so an escaped multi-byte character would come
/// back garbled.
fn needs_escape(b: u8) -> bool {
    b < 0x20
        || b == 0x7f
        || matches!(
            b,
            b'"' | b'#'
                | b'%'
                | b'\''
                | b'*'
                | b'/'
                | b':'
                | b'='
                | b'?'
                | b'\\'
                | b'{'
                | b'['
                | b']'
                | b'^'
                | b' '
        )
}

/// `value` escaped for a directory name; `None` (NULL) and the empty
/// string are [`NULL_PARTITION`], as in Hive and Spark (a directory named
/// `col=` is read back as NULL by them).
pub fn escape_value(value: Option<&str>) -> String {
    let Some(v) = value.filter(|v| !v.is_empty()) else {
        return NULL_PARTITION.to_string();
    };
    let mut out = String::with_capacity(v.len());
    for ch in v.chars() {
        if ch.is_ascii() && needs_escape(ch as u8) {
            out.push_str(&format!("%{:02X}", ch as u8));
        } else {
            out.push(ch);
        }
    }
    out
}

/// The value a directory name's part after `=` stands for: `None` for
/// NULL, else the text with every `%XX` decoded (bytes that do not form
/// UTF-8 are replaced).
pub fn unescape_value(s: &str) -> Option<String> {
    if s == NULL_PARTITION {
        return None;
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Some(v) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// The `col=value` directories right above a file, outermost first:
/// `data/run/a=1/b=x/part-0.parquet` gives `[("a", Some("1")), ("b",
/// Some("x"))]`. Only the unbroken run of such directories next to the
/// file counts (as Spark reads a dataset from its base path): a `k=v`
/// directory above a plain one is not the dataset's. Names and values
/// are unescaped.
pub fn partition_values(path: &std::path::Path) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut dirs = path.parent();
    while let Some(d) = dirs {
        let Some((k, v)) = d
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.split_once('='))
        else {
            break;
        };
        if k.is_empty() {
            break;
        }
        let key = unescape_value(k).unwrap_or_default();
        out.push((key, unescape_value(v)));
        dirs = d.parent();
    }
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn escapes_what_hive_escapes_and_spaces() {
        assert_eq!(escape_value(Some("a/b=c d")), "a%2Fb%3Dc%20d");
        assert_eq!(
            escape_value(Some("2024-01-31 12:00:00")),
            "2024-01-31%2012%3A00%3A00"
        );
        assert_eq!(escape_value(Some("100%")), "100%25");
        assert_eq!(escape_value(Some("café")), "café");
        assert_eq!(escape_value(Some("-12.50")), "-12.50");
        assert_eq!(escape_value(None), NULL_PARTITION);
        assert_eq!(escape_value(Some("")), NULL_PARTITION);
        assert_eq!(escape_value(Some("\n")), "%0A");
    }

    #[test]
    fn reads_values_from_paths() {
        let p = std::path::Path::new("/data/run=7/ds/shard=03/d=2024-01-31/part-00001.parquet");
        assert_eq!(
            partition_values(p),
            vec![
                ("shard".to_string(), Some("03".to_string())),
                ("d".to_string(), Some("2024-01-31".to_string()))
            ]
        );
        // A plain directory between the file and `k=v` ones: not partitions.
        let p = std::path::Path::new("shard=03/x/part-00001.parquet");
        assert!(partition_values(p).is_empty());
        // Escaped names and values.
        let p = std::path::Path::new("a%3Db=x%2Fy/part-0.parquet");
        assert_eq!(
            partition_values(p),
            vec![("a=b".to_string(), Some("x/y".to_string()))]
        );
        let p = std::path::Path::new("k=__HIVE_DEFAULT_PARTITION__/part-0.parquet");
        assert_eq!(partition_values(p), vec![("k".to_string(), None)]);
        // A file name with `=` is not a partition.
        assert!(partition_values(std::path::Path::new("a=1.parquet")).is_empty());
        // A broken escape is kept as written.
        assert_eq!(unescape_value("50%"), Some("50%".into()));
        assert_eq!(unescape_value("5%zz"), Some("5%zz".into()));
    }

    proptest! {
        #[test]
        fn escaping_round_trips(v in "\\PC{1,12}|[ /=%:a-c\\x01]{1,8}") {
            let e = escape_value(Some(&v));
            prop_assert!(!e.contains('/') && !e.contains('=') && !e.contains(' '));
            prop_assert_eq!(unescape_value(&e), Some(v));
        }
    }
}
