//! `[server.log]`: the process log format, level and repeat interval.
//!
//! Owns the serde shapes and their defaults. Must not install a subscriber: that is `main.rs`
//! (where `RUST_LOG` overrides `level`).

use serde::Deserialize;

/// Process log settings (`RUST_LOG` overrides `level`).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct LogSettings {
    /// `text` (human-readable) or `json` (one object per line).
    pub format: LogFormat,
    /// A `tracing` filter, e.g. `info` or `sluice=debug,hyper=warn`.
    pub level: String,
    /// A warning a request can repeat (downstream failure, foreign session, store
    /// unreachable…) is printed at most once per tenant and kind in this many milliseconds; the
    /// next printed one carries `suppressed`, how many were dropped. 0 prints every one.
    pub repeat_interval_ms: u64,
}

impl Default for LogSettings {
    fn default() -> Self {
        Self {
            format: LogFormat::Text,
            level: "info".to_owned(),
            repeat_interval_ms: 1_000,
        }
    }
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}
