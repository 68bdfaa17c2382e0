//! `sluice check --config FILE`: load, validate and resolve a configuration and print the verdict.
//!
//! Owns the report format of the command (and of a refused start or reload): either
//! `ok: N tenants, M tools` or one problem per line. Must not exit the process: the caller maps
//! the returned verdict to the exit status.

use std::io::Write;
use std::path::Path;

use super::snapshot::Snapshot;
use crate::config::{load, Report};

/// Checks the configuration at `path`, writes the report to `out`, returns whether it is valid.
pub fn check(path: &Path, out: &mut impl Write) -> bool {
    let result = load(path)
        .map_err(Report::from)
        .and_then(|config| Snapshot::build(&config, 1, None));
    // A failed write to the report sink leaves the verdict unchanged.
    match result {
        Ok(snapshot) => {
            let _ = writeln!(
                out,
                "ok: {} tenants, {} tools",
                snapshot.n_tenants(),
                snapshot.n_tools()
            );
            true
        }
        Err(report) => {
            let _ = writeln!(out, "{report}");
            false
        }
    }
}
