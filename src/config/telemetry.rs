//! `[telemetry]`: OpenTelemetry traces exported over OTLP.
//!
//! Owns the serde shape and its defaults. Must not start anything (that is `crate::telemetry`,
//! once, at start: a reload does not move the exporter) or check meaning (that is
//! `validate/server.rs`).

use serde::Deserialize;

/// `[telemetry]`. Off by default; off costs nothing (no span is ever built).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetrySettings {
    /// Export traces.
    pub enabled: bool,
    /// The OTLP endpoint: for `http/protobuf` the traces URL (e.g.
    /// `http://collector:4318/v1/traces`), for `grpc` the collector's address (e.g.
    /// `http://collector:4317`).
    pub endpoint: String,
    /// `"http/protobuf"` (default) or `"grpc"`.
    pub protocol: OtlpProtocol,
    /// The share of traces started here that are recorded, 0.0 to 1.0; a request that carries
    /// a sampled parent is recorded whatever this says (parent-based sampling).
    pub sampling_ratio: f64,
    /// `service.name` of the exported resource.
    pub service_name: String,
    /// Bound on one export, in milliseconds.
    pub export_timeout_ms: u64,
    /// Most finished spans queued for export; past it new spans are dropped (and counted).
    pub max_queue_spans: usize,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        Self {
            enabled: false,
            endpoint: "http://127.0.0.1:4318/v1/traces".to_owned(),
            protocol: OtlpProtocol::HttpProtobuf,
            sampling_ratio: 1.0,
            service_name: "sluice".to_owned(),
            export_timeout_ms: 10_000,
            max_queue_spans: 2_048,
        }
    }
}

/// `[telemetry] protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
pub enum OtlpProtocol {
    /// OTLP over HTTP with protobuf bodies.
    #[default]
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    /// OTLP over gRPC.
    #[serde(rename = "grpc")]
    Grpc,
}
