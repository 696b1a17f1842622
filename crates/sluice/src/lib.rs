//! sluice: a parallel bulk loader and embedded columnar store.
//!
//! The modules follow the data flow:
//! [`source`] (files, globs, stdin) → [`split`] (record boundaries) →
//! [`parse`] (CSV bytes → typed columns) → [`batch`] (schema, Arrow
//! builders) → [`store`] (segments, manifest, atomic commits). [`load`]
//! runs the pipeline and [`exec`] sizes the worker pool.
//!
//! ```
//! use sluice::{load::{load, LoadOptions}, source::Input, store::Database};
//! let dir = std::env::temp_dir().join(format!("sluice-doc-{}", std::process::id()));
//! let csv = dir.with_extension("csv");
//! std::fs::write(&csv, "id,name\n1,ada\n2,grace\n").unwrap();
//! let mut db = Database::open_writer(&dir).unwrap();
//! let mut opts = LoadOptions::default();
//! opts.schema = Some("id BIGINT, name TEXT".parse().unwrap());
//! let summary = load(&mut db, "people", &[Input::File(csv.clone())], &opts).unwrap();
//! assert_eq!(summary.rows, 2);
//! let rows: usize = db.scan("people").unwrap().map(|b| b.unwrap().num_rows()).sum();
//! assert_eq!(rows, 2);
//! # std::fs::remove_dir_all(&dir).unwrap(); std::fs::remove_file(&csv).unwrap();
//! ```

pub mod batch;
pub mod dataset;
pub mod error;
pub mod exec;
pub(crate) mod fault;
pub mod index;
pub mod infer;
pub mod load;
pub mod parse;
pub mod partition;
pub mod pgcopy;
pub mod query;
pub mod source;
pub mod split;
pub mod stages;
pub mod store;
pub mod zone;

pub use error::{Error, Result};
