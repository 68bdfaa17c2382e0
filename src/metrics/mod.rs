//! TEMPORARY STUB of the metrics module's interface (replaced by the `metrics` branch).
#![allow(missing_docs, unused_variables)]
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteLabel {
    Mcp,
    LegacySse,
    LegacyMessages,
    RestTools,
    RestCall,
    BosPlatform,
    ProtectedResource,
    Metrics,
    Healthz,
    Readyz,
    AdminReload,
    NotFound,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodLabel {
    Get,
    Post,
    Delete,
    Options,
    Other,
}

impl From<&http::Method> for MethodLabel {
    fn from(method: &http::Method) -> Self {
        MethodLabel::Other
    }
}

pub struct GaugeGuard;

#[derive(Default)]
pub struct Metrics {}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    pub fn new() -> Self {
        Self {}
    }
    pub fn observe_request(
        &self,
        route: RouteLabel,
        method: MethodLabel,
        status: u16,
        elapsed: Duration,
    ) {
    }
    pub fn session_opened(&self, tenant: &str) {}
    pub fn session_closed(&self, tenant: &str) {}
    pub fn stream_guard(self: &Arc<Self>, tenant: &str) -> GaugeGuard {
        GaugeGuard
    }
    pub fn add_sse(&self, frames: u64, bytes: u64) {}
    pub fn downstream_error(&self, code: &'static str) {}
    pub fn source_error(&self, code: &'static str) {}
    pub fn register_counter(&self, name: &'static str, help: &'static str, value: Arc<AtomicU64>) {}
    pub fn render(&self) -> String {
        String::new()
    }
}
