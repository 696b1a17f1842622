//! The report page: every chart inline, what it is drawn from under it,
//! and its numbers in a table; one file, nothing fetched.

use std::fmt::Write;
use std::path::PathBuf;

use super::{Chart, Doc, Kind, draw::short};

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// After loading, the page checks that every chart drew (a box of some
/// size with text in it), says so in `data-rendered` on the body, and
/// reports a chart that did not on the console.
const CHECK: &str = r#"<script>
window.addEventListener("load", function () {
  var figures = document.querySelectorAll("figure.chart");
  var ok = 0;
  figures.forEach(function (f) {
    var svg = f.querySelector("svg");
    var box = svg ? svg.getBBox() : null;
    if (box && box.width > 0 && box.height > 0 && svg.querySelectorAll("text").length > 0) {
      ok += 1;
    } else {
      console.error("chart " + f.id + " did not render");
    }
  });
  document.body.setAttribute("data-rendered", ok + "/" + figures.length);
});
</script>"#;

const STYLE: &str = "<style>
body { font-family: sans-serif; max-width: 800px; margin: 2em auto; color: #222; }
figure.chart { margin: 2.5em 0; }
figure.chart svg { max-width: 100%; height: auto; }
figcaption { font-size: 0.85em; color: #555; }
table { border-collapse: collapse; font-size: 0.85em; margin-top: 0.5em; }
td, th { padding: 2px 8px; text-align: right; border-bottom: 1px solid #eee; }
td:first-child, th:first-child, td:nth-child(2), th:nth-child(2) { text-align: left; }
code { font-size: 0.95em; }
</style>";

/// The page of `charts` (each with its scenario) and their `svgs`, from
/// the results files `docs`; `older`: files left out for a newer one.
pub fn page(
    charts: &[(String, Chart)],
    svgs: &[String],
    docs: &[&Doc],
    older: &[PathBuf],
) -> String {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<title>sluice benchmarks</title>\n");
    h.push_str(STYLE);
    h.push_str("\n</head>\n<body>\n<h1>sluice benchmarks</h1>\n");
    let _ = writeln!(
        h,
        "<p>{} charts from {} results files. A point is the median of its runs; its error bar spans the fastest to the slowest run.</p>",
        charts.len(),
        docs.len()
    );
    h.push_str("<ul>\n");
    for (_, c) in charts {
        let id = c.file.trim_end_matches(".svg");
        let _ = writeln!(h, "<li><a href=\"#{id}\">{}</a></li>", esc(&c.title));
    }
    h.push_str("</ul>\n");
    for ((scenario, c), svg) in charts.iter().zip(svgs) {
        let id = c.file.trim_end_matches(".svg");
        let _ = writeln!(
            h,
            "<figure class=\"chart\" id=\"{id}\" data-scenario=\"{}\">",
            esc(scenario)
        );
        // plotters writes a bare <svg> element: it goes in as it is.
        h.push_str(svg.trim());
        h.push('\n');
        let _ = writeln!(
            h,
            "<figcaption>From {} (<a href=\"{}\">SVG</a>)</figcaption>",
            esc(&c.source)
                .replacen("`", "<code>", 1)
                .replacen("`", "</code>", 1),
            esc(&c.file)
        );
        h.push_str(&table(c));
        h.push_str("</figure>\n");
    }
    if !older.is_empty() {
        h.push_str("<p>Older results files of the same scenarios, not charted:</p>\n<ul>\n");
        for o in older {
            let name = o
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let _ = writeln!(h, "<li>{}</li>", esc(&name));
        }
        h.push_str("</ul>\n");
    }
    h.push_str(CHECK);
    h.push_str("\n</body>\n</html>\n");
    h
}

/// The chart's points as a table: series, x, median, fastest, slowest, runs.
fn table(c: &Chart) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "<details><summary>numbers</summary><table><tr><th>series</th><th>{}</th><th>median {}</th><th>min</th><th>max</th><th>runs</th></tr>",
        if c.x_label.is_empty() {
            "case".to_string()
        } else {
            esc(&c.x_label)
        },
        esc(&c.y_label)
    );
    for s in c.series.iter().filter(|s| !s.reference) {
        for p in &s.points {
            let x = match &c.kind {
                Kind::Bars { categories } => {
                    categories.get(p.x as usize).cloned().unwrap_or_default()
                }
                Kind::Lines { .. } => short(p.x),
            };
            let _ = writeln!(
                t,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&s.name),
                esc(&x),
                short(p.y),
                short(p.lo),
                short(p.hi),
                p.runs
            );
        }
    }
    t.push_str("</table></details>\n");
    t
}
