//! `[server.audit]`: where audit records go and what happens when the writer falls behind.
//!
//! Owns the serde shapes and their defaults. Must not open files or write records: that is
//! `crate::audit`.

use serde::Deserialize;

/// Where audit records go and what happens when the writer falls behind.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct AuditSettings {
    /// `stdout`, `file` (then `path` is required) or `off`.
    pub sink: AuditSink,
    /// The file records are appended to when `sink = "file"`.
    pub path: Option<String>,
    /// Records queued for the background writer at most.
    pub queue: usize,
    /// What a call does when the queue is full: wait for room (`block`) or drop the record and
    /// count it (`drop`, the `sluice_audit_dropped_total` metric).
    pub when_full: AuditWhenFull,
}

impl Default for AuditSettings {
    fn default() -> Self {
        Self {
            sink: AuditSink::Off,
            path: None,
            queue: 8192,
            when_full: AuditWhenFull::Drop,
        }
    }
}

/// Audit destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AuditSink {
    /// No audit trail.
    #[default]
    Off,
    /// JSON lines on standard output.
    Stdout,
    /// JSON lines appended to `path`.
    File,
}

/// Full-queue policy of the audit writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AuditWhenFull {
    /// The call waits until the writer has room (no record is ever lost).
    Block,
    /// The record is dropped and counted.
    #[default]
    Drop,
}
