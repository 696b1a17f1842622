//! Integration tests of the library: one binary, one module per concern.

mod agg_paths;
mod common;
mod conformance;
mod differential;
mod json;
mod keyed;
mod keys;
mod load;
mod load_fuzz;
mod parallel;
mod regression_corpus;
mod regression_cr_quoted;
mod regression_dialects;
mod regression_json;
mod regression_load;
mod regression_query;
mod regression_store;
mod regression_values;
mod regression_widen;
mod rejects;
mod resume;
mod shards;
mod sink;
mod slt;
mod sql_fuzz;
mod store;
