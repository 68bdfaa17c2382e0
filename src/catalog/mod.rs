//! The catalog: configuration model, validation, immutable per-tenant snapshots, schemas.
//!
//! Does no IO beyond loading the configuration file.

pub mod model;
pub mod path;
pub mod plan;
