//! The primary-key index (in progress): immutable sorted runs of key →
//! row locator. This module has the run format; building runs at load
//! time, merges and lookups through the table come next (see FORMAT.md).

pub mod run;
