//! TPC-DS data through the `tpcdsgen` crate (a port of dsdgen), written as
//! CSV with a header line, and the schema that `sluice load` needs for it.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use tpcdsgen::config::{Session, SessionBuilder, Table};
use tpcdsgen::csv::*;
use tpcdsgen::row::*;

/// The 24 TPC-DS tables (dimensions first, then the fact tables).
pub const TABLES: [&str; 24] = [
    "call_center",
    "catalog_page",
    "customer",
    "customer_address",
    "customer_demographics",
    "date_dim",
    "household_demographics",
    "income_band",
    "item",
    "promotion",
    "reason",
    "ship_mode",
    "store",
    "time_dim",
    "warehouse",
    "web_page",
    "web_site",
    "inventory",
    "store_sales",
    "store_returns",
    "catalog_sales",
    "catalog_returns",
    "web_sales",
    "web_returns",
];

fn table_of(name: &str) -> Option<Table> {
    Some(match name {
        "call_center" => Table::CallCenter,
        "catalog_page" => Table::CatalogPage,
        "catalog_returns" => Table::CatalogReturns,
        "catalog_sales" => Table::CatalogSales,
        "customer" => Table::Customer,
        "customer_address" => Table::CustomerAddress,
        "customer_demographics" => Table::CustomerDemographics,
        "date_dim" => Table::DateDim,
        "household_demographics" => Table::HouseholdDemographics,
        "income_band" => Table::IncomeBand,
        "inventory" => Table::Inventory,
        "item" => Table::Item,
        "promotion" => Table::Promotion,
        "reason" => Table::Reason,
        "ship_mode" => Table::ShipMode,
        "store" => Table::Store,
        "store_returns" => Table::StoreReturns,
        "store_sales" => Table::StoreSales,
        "time_dim" => Table::TimeDim,
        "warehouse" => Table::Warehouse,
        "web_page" => Table::WebPage,
        "web_returns" => Table::WebReturns,
        "web_sales" => Table::WebSales,
        "web_site" => Table::WebSite,
        _ => return None,
    })
}

/// The SQL type of each column of a table, in the order of its CSV
/// header (the specification's column order): integers INT, money
/// DECIMAL(7,2) (and the specification's other precisions), dates DATE,
/// CHAR and VARCHAR as TEXT.
fn types(table: &str) -> &'static str {
    match table {
        "call_center" => {
            "INT TEXT DATE DATE INT INT TEXT TEXT INT INT TEXT TEXT INT TEXT TEXT TEXT INT TEXT INT TEXT TEXT TEXT TEXT TEXT TEXT TEXT TEXT TEXT TEXT DECIMAL(5,2) DECIMAL(5,2)"
        }
        "catalog_page" => "INT TEXT INT INT TEXT INT INT TEXT TEXT",
        "catalog_returns" => {
            "INT INT INT INT INT INT INT INT INT INT INT INT INT INT INT INT INT INT DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2)"
        }
        "catalog_sales" => {
            "INT INT INT INT INT INT INT INT INT INT INT INT INT INT INT INT INT INT INT DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2)"
        }
        "customer" => {
            "INT TEXT INT INT INT INT INT TEXT TEXT TEXT TEXT INT INT INT TEXT TEXT TEXT INT"
        }
        "customer_address" => {
            "INT TEXT TEXT TEXT TEXT TEXT TEXT TEXT TEXT TEXT TEXT DECIMAL(5,2) TEXT"
        }
        "customer_demographics" => "INT TEXT TEXT TEXT INT TEXT INT INT INT",
        "date_dim" => {
            "INT TEXT DATE INT INT INT INT INT INT INT INT INT INT INT TEXT TEXT TEXT TEXT TEXT INT INT INT INT TEXT TEXT TEXT TEXT TEXT"
        }
        "household_demographics" => "INT INT TEXT INT INT",
        "income_band" => "INT INT INT",
        "inventory" => "INT INT INT INT",
        "item" => {
            "INT TEXT DATE DATE TEXT DECIMAL(7,2) DECIMAL(7,2) INT TEXT INT TEXT INT TEXT INT TEXT TEXT TEXT TEXT TEXT TEXT INT TEXT"
        }
        "promotion" => {
            "INT TEXT INT INT INT DECIMAL(15,2) INT TEXT TEXT TEXT TEXT TEXT TEXT TEXT TEXT TEXT TEXT TEXT TEXT"
        }
        "reason" => "INT TEXT TEXT",
        "ship_mode" => "INT TEXT TEXT TEXT TEXT TEXT",
        "store" => {
            "INT TEXT DATE DATE INT TEXT INT INT TEXT TEXT INT TEXT TEXT TEXT INT TEXT INT TEXT TEXT TEXT TEXT TEXT TEXT TEXT TEXT TEXT TEXT DECIMAL(5,2) DECIMAL(5,2)"
        }
        "store_returns" => {
            "INT INT INT INT INT INT INT INT INT INT INT DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2)"
        }
        "store_sales" => {
            "INT INT INT INT INT INT INT INT INT INT INT DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2)"
        }
        "time_dim" => "INT TEXT INT INT INT INT TEXT TEXT TEXT TEXT",
        "warehouse" => {
            "INT TEXT TEXT INT TEXT TEXT TEXT TEXT TEXT TEXT TEXT TEXT TEXT DECIMAL(5,2)"
        }
        "web_page" => "INT TEXT DATE DATE INT INT TEXT INT TEXT TEXT INT INT INT INT",
        "web_returns" => {
            "INT INT INT INT INT INT INT INT INT INT INT INT INT INT INT DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2)"
        }
        "web_sales" => {
            "INT INT INT INT INT INT INT INT INT INT INT INT INT INT INT INT INT INT INT DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2) DECIMAL(7,2)"
        }
        "web_site" => {
            "INT TEXT DATE DATE TEXT INT INT TEXT TEXT INT TEXT TEXT TEXT INT TEXT TEXT TEXT TEXT TEXT TEXT TEXT TEXT TEXT TEXT DECIMAL(5,2) DECIMAL(5,2)"
        }
        _ => "",
    }
}

fn header(table: Table) -> &'static str {
    match table {
        Table::CallCenter => CallCenterCsv::header(),
        Table::CatalogPage => CatalogPageCsv::header(),
        Table::CatalogReturns => CatalogReturnsCsv::header(),
        Table::CatalogSales => CatalogSalesCsv::header(),
        Table::Customer => CustomerCsv::header(),
        Table::CustomerAddress => CustomerAddressCsv::header(),
        Table::CustomerDemographics => CustomerDemographicsCsv::header(),
        Table::DateDim => DateDimCsv::header(),
        Table::DbgenVersion => DbgenVersionCsv::header(),
        Table::HouseholdDemographics => HouseholdDemographicsCsv::header(),
        Table::IncomeBand => IncomeBandCsv::header(),
        Table::Inventory => InventoryCsv::header(),
        Table::Item => ItemCsv::header(),
        Table::Promotion => PromotionCsv::header(),
        Table::Reason => ReasonCsv::header(),
        Table::ShipMode => ShipModeCsv::header(),
        Table::Store => StoreCsv::header(),
        Table::StoreReturns => StoreReturnsCsv::header(),
        Table::StoreSales => StoreSalesCsv::header(),
        Table::TimeDim => TimeDimCsv::header(),
        Table::Warehouse => WarehouseCsv::header(),
        Table::WebPage => WebPageCsv::header(),
        Table::WebReturns => WebReturnsCsv::header(),
        Table::WebSales => WebSalesCsv::header(),
        Table::WebSite => WebSiteCsv::header(),
    }
}

/// `--schema` of a TPC-DS table: its CSV header's names with [`types`].
pub fn schema(table: &str) -> Option<String> {
    let t = table_of(table)?;
    let names: Vec<&str> = header(t).split(',').collect();
    let types: Vec<&str> = types(table).split(' ').map(|s| s.trim()).collect();
    if names.len() != types.len() {
        return None;
    }
    Some(
        names
            .iter()
            .zip(&types)
            .map(|(n, t)| format!("{n} {t}"))
            .collect::<Vec<_>>()
            .join(", "),
    )
}

fn session(sf: f64, part: i32, parts: i32) -> Result<Session> {
    SessionBuilder::new()
        .with_scale_factor(sf)
        .with_chunk_number(part)
        .with_total_chunks(parts)
        .build()
        .map_err(|e| anyhow!("TPC-DS generator: {e}"))
}

/// One part (1-based, of `parts`) of a table as CSV lines.
fn part_text(table: Table, sf: f64, part: i32, parts: i32) -> Result<String> {
    let s = session(sf, part, parts)?;
    let mut out = String::new();
    macro_rules! rows {
        ($gen:ident, $csv:ident, $source:expr) => {{
            let range = s.get_source_row_range($source);
            if range.is_empty() {
                return Ok(out);
            }
            let (first, last) = (*range.start(), *range.end());
            let mut g = $gen::new(s.clone(), last);
            g.skip_rows_until_starting_row_number(first);
            for r in g {
                use std::fmt::Write as _;
                let _ = writeln!(out, "{}", $csv::new(&r));
            }
        }};
    }
    match table {
        Table::CallCenter => rows!(CallCenterRowGenerator, CallCenterCsv, table),
        Table::CatalogPage => rows!(CatalogPageRowGenerator, CatalogPageCsv, table),
        // Returns replay their sales' rows: the sales table's range.
        Table::CatalogReturns => {
            rows!(
                CatalogReturnsRowGenerator,
                CatalogReturnsCsv,
                Table::CatalogSales
            )
        }
        Table::CatalogSales => rows!(CatalogSalesRowGenerator, CatalogSalesCsv, table),
        Table::Customer => rows!(CustomerRowGenerator, CustomerCsv, table),
        Table::CustomerAddress => rows!(CustomerAddressRowGenerator, CustomerAddressCsv, table),
        Table::CustomerDemographics => {
            rows!(
                CustomerDemographicsRowGenerator,
                CustomerDemographicsCsv,
                table
            )
        }
        Table::DateDim => rows!(DateDimRowGenerator, DateDimCsv, table),
        Table::HouseholdDemographics => {
            rows!(
                HouseholdDemographicsRowGenerator,
                HouseholdDemographicsCsv,
                table
            )
        }
        Table::IncomeBand => rows!(IncomeBandRowGenerator, IncomeBandCsv, table),
        Table::Inventory => rows!(InventoryRowGenerator, InventoryCsv, table),
        Table::Item => rows!(ItemRowGenerator, ItemCsv, table),
        Table::Promotion => rows!(PromotionRowGenerator, PromotionCsv, table),
        Table::Reason => rows!(ReasonRowGenerator, ReasonCsv, table),
        Table::ShipMode => rows!(ShipModeRowGenerator, ShipModeCsv, table),
        Table::Store => rows!(StoreRowGenerator, StoreCsv, table),
        Table::StoreReturns => rows!(StoreReturnsRowGenerator, StoreReturnsCsv, Table::StoreSales),
        Table::StoreSales => rows!(StoreSalesRowGenerator, StoreSalesCsv, table),
        Table::TimeDim => rows!(TimeDimRowGenerator, TimeDimCsv, table),
        Table::Warehouse => rows!(WarehouseRowGenerator, WarehouseCsv, table),
        Table::WebPage => rows!(WebPageRowGenerator, WebPageCsv, table),
        Table::WebReturns => rows!(WebReturnsRowGenerator, WebReturnsCsv, Table::WebSales),
        Table::WebSales => rows!(WebSalesRowGenerator, WebSalesCsv, table),
        Table::WebSite => rows!(WebSiteRowGenerator, WebSiteCsv, table),
        Table::DbgenVersion => {}
    }
    Ok(out)
}

/// Writes `dir/<table>.csv` for scale factor `sf`, generating parts on
/// `workers` threads and writing them in order. Returns the path and bytes.
pub fn write_table(dir: &Path, table: &str, sf: f64, workers: usize) -> Result<(PathBuf, u64)> {
    let Some(t) = table_of(table) else {
        bail!(
            "unknown TPC-DS table {table:?}; tables: {}",
            TABLES.join(", ")
        );
    };
    if !(sf > 0.0) || !sf.is_finite() {
        bail!("--sf must be a positive number");
    }
    let path = dir.join(format!("{table}.csv"));
    let tmp = dir.join(format!("{table}.csv.tmp"));
    let f = std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    writeln!(w, "{}", header(t))?;
    // A part for about every million source rows (the generator keeps
    // tables under a million rows in one part).
    let source = match t {
        Table::StoreReturns => Table::StoreSales,
        Table::CatalogReturns => Table::CatalogSales,
        Table::WebReturns => Table::WebSales,
        other => other,
    };
    let rows = session(sf, 1, 1)?.get_scaling().get_row_count(source);
    let parts = (rows / 1_000_000).clamp(1, 4096) as i32;
    let workers = workers.max(1) as i32;
    let mut bytes = 0u64;
    let mut next = 1;
    while next <= parts {
        let last = (next + workers - 1).min(parts);
        let texts: Vec<Result<String>> = std::thread::scope(|s| {
            let handles: Vec<_> = (next..=last)
                .map(|p| s.spawn(move || part_text(t, sf, p, parts)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow!("the TPC-DS generator failed on {table}")))
                })
                .collect()
        });
        for text in texts {
            let text = text?;
            bytes += text.len() as u64;
            w.write_all(text.as_bytes())?;
        }
        next = last + 1;
    }
    w.flush()?;
    drop(w);
    std::fs::rename(&tmp, &path)?;
    Ok((path, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_has_a_type_for_each_column() {
        for t in TABLES {
            let s = schema(t).unwrap_or_else(|| panic!("{t}: names and types differ in number"));
            assert!(s.parse::<sluice::batch::Schema>().is_ok(), "{t}: {s}");
        }
    }
}
