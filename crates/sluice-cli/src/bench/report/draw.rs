//! Charts drawn as SVG by plotters' SVG backend alone: no font library,
//! text left to the browser (`sans-serif`), so the same data gives the
//! same bytes on every machine.

use anyhow::{Result, anyhow};
use plotters::coord::CoordTranslate;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A chart, ready to draw.
pub struct Chart {
    /// File name of its SVG (`ingest-threads.svg`).
    pub file: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub kind: Kind,
    pub series: Vec<Series>,
    /// What it is drawn from, under the chart in the page.
    pub source: String,
}

pub enum Kind {
    /// Points joined by lines over a numeric x axis (log2 when `log`;
    /// the y axis log10 when `log_y`, for values that span decades).
    Lines { log: bool, log_y: bool },
    /// Horizontal bars, one group per category (the x of a point is the
    /// category's index).
    Bars { categories: Vec<String> },
}

pub struct Series {
    pub name: String,
    /// A reference line (the ideal), drawn dashed without points.
    pub reference: bool,
    pub points: Vec<Point>,
}

/// A median and the spread of the runs around it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub lo: f64,
    pub hi: f64,
    pub runs: usize,
}

/// The colour of a series: the same peer in the same colour on every
/// chart (the Okabe-Ito palette, readable with colour blindness).
pub fn color(name: &str, index: usize) -> RGBColor {
    let n = name.to_ascii_lowercase();
    // More series than this share colours (the shards chart has 8).
    const OTHERS: [RGBColor; 10] = [
        RGBColor(0x00, 0x72, 0xb2),
        RGBColor(0x56, 0xb4, 0xe9),
        RGBColor(0xcc, 0x79, 0xa7),
        RGBColor(0x88, 0x22, 0x55),
        RGBColor(0x00, 0x00, 0x00),
        RGBColor(0x99, 0x66, 0x33),
        RGBColor(0x33, 0x22, 0x88),
        RGBColor(0x44, 0xaa, 0x99),
        RGBColor(0x99, 0x99, 0x33),
        RGBColor(0xaa, 0x44, 0x99),
    ];
    if n.contains("duckdb") {
        RGBColor(0xe6, 0x9f, 0x00)
    } else if n.contains("mariadb") && !n.starts_with("sluice") {
        RGBColor(0xd5, 0x5e, 0x00)
    } else if (n.contains("postgres") || n.contains("psql")) && !n.starts_with("sluice") {
        RGBColor(0x00, 0x9e, 0x73)
    } else if n.contains("pgloader") {
        RGBColor(0xcc, 0x79, 0xa7)
    } else if n.starts_with("ideal") {
        RGBColor(0x88, 0x88, 0x88)
    } else if n == "sluice" || n == "pgo" {
        RGBColor(0x00, 0x72, 0xb2)
    } else {
        OTHERS[index % OTHERS.len()]
    }
}

/// `v` short: 1.5M, 230k, 12.5, 0.25.
pub fn short(v: f64) -> String {
    let a = v.abs();
    let (v, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let digits = if v.abs() >= 100.0 {
        0
    } else if v.abs() >= 1.0 {
        2
    } else {
        3
    };
    let mut s = format!("{v:.digits$}");
    if s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    if s == "-0" {
        s = "0".into();
    }
    s + suffix
}

fn plot_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("drawing a chart: {e}")
}

/// Draws the series' legend at `at`.
fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    at: SeriesLabelPosition,
) -> Result<()> {
    chart
        .configure_series_labels()
        .position(at)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(0xbb, 0xbb, 0xbb))
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(plot_err)
}

/// The chart as SVG text.
pub fn svg(c: &Chart) -> Result<String> {
    match &c.kind {
        Kind::Lines { log, log_y } => lines(c, *log, *log_y),
        Kind::Bars { categories } => bars(c, categories),
    }
}

/// The label of an axis at `v`: the value, or on a log axis of `base`
/// (where `v` is the exponent) the power at whole exponents and nothing
/// between them.
fn tick(v: f64, base: Option<f64>) -> String {
    match base {
        None => short(v),
        Some(b) if (v - v.round()).abs() < 1e-6 => short(b.powf(v.round())),
        Some(_) => String::new(),
    }
}

fn lines(c: &Chart, log: bool, log_y: bool) -> Result<String> {
    let tx = |x: f64| if log { x.max(1e-9).log2() } else { x };
    let ty = |y: f64| if log_y { y.max(1e-12).log10() } else { y };
    let pts = c.series.iter().flat_map(|s| &s.points);
    let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY);
    for p in pts {
        x0 = x0.min(tx(p.x));
        x1 = x1.max(tx(p.x));
        y0 = y0.min(ty(p.lo.min(p.y)));
        y1 = y1.max(ty(p.hi.max(p.y)));
    }
    if !x0.is_finite() {
        return Err(anyhow!("chart {} has no points", c.file));
    }
    if x1 - x0 < 1e-9 {
        x0 -= 1.0;
        x1 += 1.0;
    }
    let pad = (x1 - x0) * 0.04;
    // Headroom above the highest point for the legend (about 17 px a
    // series in a plot about 340 px high), so that it hides no point.
    let room = (c.series.len() * 17 + 34) as f64;
    let grow = 340.0 / (340.0 - room).max(120.0);
    let (y0, y1) = if log_y {
        // Whole decades, the legend's room on top.
        let (lo, hi) = (y0.floor(), y1.ceil().max(y0.floor() + 1.0));
        (lo, lo + (hi - lo) * grow)
    } else if y1 > 0.0 {
        (0.0, y1 * grow)
    } else {
        (0.0, 1.0)
    };
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (760, 440)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&c.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d((x0 - pad)..(x1 + pad), y0..y1)
            .map_err(plot_err)?;
        let x_fmt = |v: &f64| tick(*v, log.then_some(2.0));
        let y_fmt = |v: &f64| tick(*v, log_y.then_some(10.0));
        let y_labels = if log_y {
            ((y1 - y0).round() as usize + 1).clamp(2, 12)
        } else {
            10
        };
        let x_labels = if log {
            ((x1 - x0).round() as usize + 1).clamp(2, 12)
        } else {
            10
        };
        chart
            .configure_mesh()
            .x_desc(&c.x_label)
            .y_desc(&c.y_label)
            .x_labels(x_labels)
            .y_labels(y_labels)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .light_line_style(WHITE)
            .axis_desc_style(("sans-serif", 14))
            .draw()
            .map_err(plot_err)?;
        for (i, s) in c.series.iter().enumerate() {
            let col = color(&s.name, i);
            let xy: Vec<(f64, f64)> = s.points.iter().map(|p| (tx(p.x), ty(p.y))).collect();
            if s.reference {
                let style = col.stroke_width(2);
                chart
                    .draw_series(DashedLineSeries::new(xy, 6, 4, style))
                    .map_err(plot_err)?
                    .label(&s.name)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
                continue;
            }
            chart
                .draw_series(LineSeries::new(xy.clone(), col.stroke_width(2)))
                .map_err(plot_err)?
                .label(&s.name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2))
                });
            chart
                .draw_series(xy.iter().map(|&p| Circle::new(p, 3, col.filled())))
                .map_err(plot_err)?;
            chart
                .draw_series(
                    s.points.iter().filter(|p| p.hi > p.lo).map(|p| {
                        ErrorBar::new_vertical(tx(p.x), ty(p.lo), ty(p.y), ty(p.hi), col, 8)
                    }),
                )
                .map_err(plot_err)?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        root.present().map_err(plot_err)?;
    }
    Ok(out)
}

fn bars(c: &Chart, categories: &[String]) -> Result<String> {
    let n = categories.len().max(1);
    let per = c.series.len().max(1);
    let band = (per * 14 + 12) as u32;
    // Empty rows below the bars for the legend.
    let spare = ((per * 17 + 14) as f64 / band as f64).ceil();
    let height = 110 + band * (n as u32 + spare as u32);
    let longest = categories
        .iter()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(4);
    let label_area = (longest as u32 * 7 + 16).clamp(60, 330);
    let pts = || c.series.iter().flat_map(|s| &s.points);
    let x1 = pts().map(|p| p.hi.max(p.y)).fold(0f64, f64::max);
    let x0 = pts().map(|p| p.lo.min(p.y)).fold(0f64, f64::min);
    // Room for the legend at the lower right.
    let (x0, x1) = (x0 * 1.1, if x1 > 0.0 { x1 * 1.1 } else { 1.0 });
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (760, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&c.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(label_area)
            .build_cartesian_2d(x0..x1, (-0.5 - spare)..(n as f64 - 0.5))
            .map_err(plot_err)?;
        let x_fmt = |v: &f64| short(*v);
        let no_label = |_: &f64| String::new();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc(&c.y_label)
            .y_desc(&c.x_label)
            .x_label_formatter(&x_fmt)
            .y_labels(0)
            .y_label_formatter(&no_label)
            .light_line_style(WHITE)
            .axis_desc_style(("sans-serif", 14))
            .draw()
            .map_err(plot_err)?;
        // The first category at the top.
        let row = |i: f64| n as f64 - 1.0 - i;
        let h = 0.8 / per as f64;
        for (si, s) in c.series.iter().enumerate() {
            let col = color(&s.name, si);
            let off = 0.4 - h * (si as f64 + 0.5);
            chart
                .draw_series(s.points.iter().map(|p| {
                    let y = row(p.x) + off;
                    Rectangle::new([(0.0, y - h * 0.45), (p.y, y + h * 0.45)], col.filled())
                }))
                .map_err(plot_err)?
                .label(&s.name)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], col.filled()));
            chart
                .draw_series(
                    s.points.iter().filter(|p| p.hi > p.lo).map(|p| {
                        ErrorBar::new_horizontal(row(p.x) + off, p.lo, p.y, p.hi, BLACK, 6)
                    }),
                )
                .map_err(plot_err)?;
        }
        let style = TextStyle::from(("sans-serif", 13).into_font())
            .pos(Pos::new(HPos::Right, VPos::Center));
        for (i, name) in categories.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(x0, row(i as f64)));
            root.draw(&Text::new(name.as_str(), (px - 8, py), style.clone()))
                .map_err(plot_err)?;
        }
        legend(&mut chart, SeriesLabelPosition::LowerRight)?;
        root.present().map_err(plot_err)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_numbers() {
        assert_eq!(short(1_500_000.0), "1.5M");
        assert_eq!(short(2_000_000.0), "2M");
        assert_eq!(short(230_400.0), "230k");
        assert_eq!(short(512.0), "512");
        assert_eq!(short(12.5), "12.5");
        assert_eq!(short(0.25), "0.25");
        assert_eq!(short(0.8), "0.8");
        assert_eq!(short(-20.0), "-20");
        assert_eq!(short(0.0), "0");
        assert_eq!(short(64.0), "64");
    }

    #[test]
    fn peers_keep_their_colours() {
        assert_eq!(color("duckdb", 3), color("DuckDB", 0));
        assert_eq!(color("sluice", 1), color("sluice", 0));
        assert_ne!(color("sluice", 0), color("duckdb", 0));
        assert_ne!(color("postgresql", 0), color("mariadb", 0));
        // `sluice --into mariadb` is sluice, not the peer.
        assert_ne!(color("sluice --into mariadb", 2), color("mariadb", 0));
    }
}
