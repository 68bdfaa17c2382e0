//! `sluice bench`: a load generator for MCP over Streamable HTTP that can be pointed at any MCP
//! server (sluice, rmcp, the official SDKs), and `sluice bench idle`, a hold mode for memory
//! measurement.
//!
//! A load run ([`run`]) drives N virtual clients over M HTTP/1.1 or h2c connections, in the
//! handshake era (a session per client) or the stateless era (the 2026-07-28 envelope), calling
//! `ping`, `tools/list` or `tools/call`, for a time window or a request count. Every answer is
//! read as it arrives (JSON, or SSE through [`crate::sse::decode::Decoder`]) and counts as OK
//! only when the final JSON-RPC message for its id carries `result`. The [`Report`] gives
//! requests/s, events/s, bytes/s, HDR latency percentiles and errors by kind.
//!
//! Layout: `settings` (validated flags), `wire` (request bytes, answer scan), `conn`
//! (connections and session steps), `run` (the load loop), `report` (histogram, summary, JSON,
//! progress), `idle` (hold mode).
//!
//! This module is a client: it must not reach into the server side of the crate (only the SSE
//! decoder is shared), so it measures sluice exactly as it measures any other server.

mod conn;
pub mod idle;
pub(crate) mod report;
mod run;
pub(crate) mod settings;
pub(crate) mod wire;

pub use idle::{idle, Held};
pub use report::Report;
pub use run::{run, run_until};
pub use settings::{Flags, IdleFlags, IdleSettings, Settings, SettingsError};

/// Why a bench could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error("cannot connect to {0}: {1}")]
    Unreachable(String, String),
    #[error("a client task failed: {0}")]
    Client(String),
    #[error("{0}")]
    Idle(String),
    #[error("writing {0}: {1}")]
    Write(String, std::io::Error),
}

/// Writes the report's JSON to `path` (`-` = stdout).
pub fn write_json(report: &Report, path: &std::path::Path) -> Result<(), BenchError> {
    let mut text = report.to_json();
    text.push('\n');
    if path.as_os_str() == "-" {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| BenchError::Write("stdout".into(), e))
    } else {
        std::fs::write(path, text).map_err(|e| BenchError::Write(path.display().to_string(), e))
    }
}
