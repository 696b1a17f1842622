//! TPC-H data through the `tpchgen` crate (a port of dbgen), written as CSV
//! with a header line, and the schema that `sluice load` needs for it.

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use tpchgen::csv::*;
use tpchgen::generators::*;

/// The eight TPC-H tables, in dependency order.
pub const TABLES: [&str; 8] = [
    "region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem",
];

/// `--schema` of each TPC-H table: DECIMAL(15,2) money, DATE dates, CHAR and
/// VARCHAR columns as TEXT.
pub fn schema(table: &str) -> Option<&'static str> {
    Some(match table {
        "region" => "r_regionkey BIGINT, r_name TEXT, r_comment TEXT",
        "nation" => "n_nationkey BIGINT, n_name TEXT, n_regionkey BIGINT, n_comment TEXT",
        "supplier" => {
            "s_suppkey BIGINT, s_name TEXT, s_address TEXT, s_nationkey BIGINT, s_phone TEXT, s_acctbal DECIMAL(15,2), s_comment TEXT"
        }
        "customer" => {
            "c_custkey BIGINT, c_name TEXT, c_address TEXT, c_nationkey BIGINT, c_phone TEXT, c_acctbal DECIMAL(15,2), c_mktsegment TEXT, c_comment TEXT"
        }
        "part" => {
            "p_partkey BIGINT, p_name TEXT, p_mfgr TEXT, p_brand TEXT, p_type TEXT, p_size INT, p_container TEXT, p_retailprice DECIMAL(15,2), p_comment TEXT"
        }
        "partsupp" => {
            "ps_partkey BIGINT, ps_suppkey BIGINT, ps_availqty INT, ps_supplycost DECIMAL(15,2), ps_comment TEXT"
        }
        "orders" => {
            "o_orderkey BIGINT, o_custkey BIGINT, o_orderstatus TEXT, o_totalprice DECIMAL(15,2), o_orderdate DATE, o_orderpriority TEXT, o_clerk TEXT, o_shippriority INT, o_comment TEXT"
        }
        "lineitem" => {
            "l_orderkey BIGINT, l_partkey BIGINT, l_suppkey BIGINT, l_linenumber INT, l_quantity DECIMAL(15,2), l_extendedprice DECIMAL(15,2), l_discount DECIMAL(15,2), l_tax DECIMAL(15,2), l_returnflag TEXT, l_linestatus TEXT, l_shipdate DATE, l_commitdate DATE, l_receiptdate DATE, l_shipinstruct TEXT, l_shipmode TEXT, l_comment TEXT"
        }
        _ => return None,
    })
}

/// Generates one part (1-based, of `parts`) of a table as CSV lines.
fn part_text(table: &str, sf: f64, part: i32, parts: i32) -> String {
    let mut s = String::new();
    macro_rules! rows {
        ($gen:ident, $csv:ident) => {
            for r in $gen::new(sf, part, parts).iter() {
                let _ = writeln!(s, "{}", $csv::new(r));
            }
        };
    }
    match table {
        // These two do not scale and ignore parts: only part 1 writes them.
        "region" if part == 1 => rows!(RegionGenerator, RegionCsv),
        "nation" if part == 1 => rows!(NationGenerator, NationCsv),
        "supplier" => rows!(SupplierGenerator, SupplierCsv),
        "customer" => rows!(CustomerGenerator, CustomerCsv),
        "part" => rows!(PartGenerator, PartCsv),
        "partsupp" => rows!(PartSuppGenerator, PartSuppCsv),
        "orders" => rows!(OrderGenerator, OrderCsv),
        "lineitem" => rows!(LineItemGenerator, LineItemCsv),
        _ => {}
    }
    s
}

fn header(table: &str) -> &'static str {
    match table {
        "region" => RegionCsv::header(),
        "nation" => NationCsv::header(),
        "supplier" => SupplierCsv::header(),
        "customer" => CustomerCsv::header(),
        "part" => PartCsv::header(),
        "partsupp" => PartSuppCsv::header(),
        "orders" => OrderCsv::header(),
        _ => LineItemCsv::header(),
    }
}

/// Writes `dir/<table>.csv` for scale factor `sf`, generating parts on
/// `workers` threads and writing them in order. Returns the path and bytes.
pub fn write_table(dir: &Path, table: &str, sf: f64, workers: usize) -> Result<(PathBuf, u64)> {
    if schema(table).is_none() {
        bail!(
            "unknown TPC-H table {table:?}; tables: {}",
            TABLES.join(", ")
        );
    }
    if !(sf > 0.0) {
        bail!("--sf must be positive");
    }
    let path = dir.join(format!("{table}.csv"));
    let tmp = dir.join(format!("{table}.csv.tmp"));
    let f = std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    writeln!(w, "{}", header(table))?;
    // About 16 parts per GB of output keeps each part's buffer small.
    let parts: i32 = match table {
        "lineitem" => (sf * 12.0).ceil() as i32,
        "orders" | "partsupp" => (sf * 3.0).ceil() as i32,
        _ => 1,
    }
    .max(1);
    let workers = workers.max(1) as i32;
    let mut bytes = 0u64;
    let mut next = 1;
    while next <= parts {
        let last = (next + workers - 1).min(parts);
        let texts: Vec<String> = std::thread::scope(|s| {
            let handles: Vec<_> = (next..=last)
                .map(|p| s.spawn(move || part_text(table, sf, p, parts)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        });
        for t in texts {
            bytes += t.len() as u64;
            w.write_all(t.as_bytes())?;
        }
        next = last + 1;
    }
    w.flush()?;
    drop(w);
    std::fs::rename(&tmp, &path)?;
    Ok((path, bytes))
}
