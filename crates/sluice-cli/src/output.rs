//! Result rows as `sluice query` and `sluice get` print them: an aligned
//! table, CSV or JSON.

use std::io::{IsTerminal, Write};

use anyhow::Result;
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType as A;
use sluice::batch::format_value;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns (the default on a terminal)
    Table,
    /// RFC 4180 CSV with a header (the default when piped)
    Csv,
    /// One JSON array of row objects (EXPLAIN: one object a plan line,
    /// `{"plan": "..."}`)
    Json,
}

/// The format asked for, or the default: a table on a terminal, CSV
/// otherwise.
pub fn pick_format(format: Option<Format>) -> Format {
    format.unwrap_or(if std::io::stdout().is_terminal() {
        Format::Table
    } else {
        Format::Csv
    })
}

/// Writes rows in `format`.
pub fn write_result(
    out: &mut dyn Write,
    schema: &arrow_schema::Schema,
    batches: &[RecordBatch],
    format: Format,
) -> Result<()> {
    let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    match format {
        Format::Table => write_table(out, &names, batches),
        Format::Csv => write_csv(out, &names, batches),
        Format::Json => write_json(out, &names, batches),
    }
}

fn cells(batches: &[RecordBatch]) -> impl Iterator<Item = Vec<Option<String>>> + '_ {
    batches.iter().flat_map(|b| {
        (0..b.num_rows()).map(move |r| {
            b.columns()
                .iter()
                .map(|c| format_value(c.as_ref(), r))
                .collect()
        })
    })
}

fn write_csv(out: &mut dyn Write, names: &[String], batches: &[RecordBatch]) -> Result<()> {
    let header: Vec<Option<String>> = names.iter().cloned().map(Some).collect();
    sluice::batch::write_csv_row(out, &header, b',')?;
    for row in cells(batches) {
        sluice::batch::write_csv_row(out, &row, b',')?;
    }
    Ok(())
}

fn is_number(t: &A) -> bool {
    matches!(
        t,
        A::Int32 | A::Int64 | A::Float64 | A::Decimal64(..) | A::Decimal128(..)
    )
}

fn write_table(out: &mut dyn Write, names: &[String], batches: &[RecordBatch]) -> Result<()> {
    let rows: Vec<Vec<String>> = cells(batches)
        .map(|r| {
            r.into_iter()
                .map(|c| c.unwrap_or_else(|| "NULL".into()))
                .collect()
        })
        .collect();
    let numeric: Vec<bool> = match batches.first() {
        Some(b) => b
            .columns()
            .iter()
            .map(|c| is_number(c.data_type()))
            .collect(),
        None => vec![false; names.len()],
    };
    let mut widths: Vec<usize> = names.iter().map(|n| n.chars().count()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |out: &mut dyn Write, cells: &[String], header: bool| -> std::io::Result<()> {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                s.push_str(" | ");
            }
            let pad = widths[i] - c.chars().count();
            if numeric[i] && !header {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            } else {
                s.push_str(c);
                s.push_str(&" ".repeat(pad));
            }
        }
        writeln!(out, "{}", s.trim_end())
    };
    line(out, names, true)?;
    let sep: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    writeln!(out, "{}", sep.join("-+-"))?;
    for r in &rows {
        line(out, r, false)?;
    }
    writeln!(
        out,
        "({} row{})",
        rows.len(),
        if rows.len() == 1 { "" } else { "s" }
    )?;
    Ok(())
}

fn write_json(out: &mut dyn Write, names: &[String], batches: &[RecordBatch]) -> Result<()> {
    writeln!(out, "[")?;
    let mut first = true;
    for b in batches {
        for r in 0..b.num_rows() {
            if !first {
                writeln!(out, ",")?;
            }
            first = false;
            write!(out, "  ")?;
            sluice::batch::write_json_object(out, names, b.columns(), r)?;
        }
    }
    if !first {
        writeln!(out)?;
    }
    writeln!(out, "]")?;
    Ok(())
}
