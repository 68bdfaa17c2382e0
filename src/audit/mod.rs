//! TEMPORARY STUB of the audit module's interface (replaced by the `audit` branch).
#![allow(missing_docs, unused_variables)]
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallType {
    ToolCall,
    ToolsList,
    ResourceRead,
    PromptGet,
    SchemaDiscovery,
    SourceResultStream,
    AuthFailure,
    SessionRejected,
}

#[derive(Debug, Clone, Default)]
pub struct Record {
    pub execution_id: Option<String>,
    pub external_correlation_id: Option<String>,
    pub tenant: Arc<str>,
    pub client: Arc<str>,
    pub caller: Arc<str>,
    pub session: Option<String>,
    pub surface: &'static str,
    pub call_type: Option<CallType>,
    pub tool: Option<String>,
    pub outcome: &'static str,
    pub error_code: Option<String>,
    pub duration_us: u64,
    pub detail: Option<String>,
    pub request: Option<bytes::Bytes>,
    pub response: Option<bytes::Bytes>,
    pub tools_list: Option<bytes::Bytes>,
}

#[derive(Debug, Clone, Default)]
pub struct Audit {
    dropped: Arc<AtomicU64>,
}

impl Audit {
    pub fn disabled() -> Self {
        Self::default()
    }
    pub fn is_enabled(&self) -> bool {
        false
    }
    pub async fn record(&self, record: Record) {}
    pub fn dropped_counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.dropped)
    }
}

pub struct AuditWriter;
impl AuditWriter {
    pub async fn shutdown(self) {}
}
impl Audit {
    pub fn start(settings: &crate::catalog::model::AuditSettings) -> std::io::Result<(Audit, AuditWriter)> {
        Ok((Audit::disabled(), AuditWriter))
    }
}
