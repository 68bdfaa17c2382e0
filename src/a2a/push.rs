//! TEMPORARY STUB (replaced by the h16-push merge).
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PushConfig {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub task_id: String,
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
#[derive(Debug, Clone, Default)]
pub(crate) struct PushPolicy {
    pub allow_http: bool,
    pub allowed_hosts: Arc<[Box<str>]>,
}
#[derive(Debug, thiserror::Error)]
pub(crate) enum PushRefusal {
    #[error("https only")]
    NotHttps,
}
pub(crate) fn validate(config: &PushConfig, policy: &PushPolicy) -> Result<(), PushRefusal> {
    if !policy.allow_http && !config.url.starts_with("https://") {
        return Err(PushRefusal::NotHttps);
    }
    Ok(())
}
pub(crate) struct Delivery {
    pub tenant: Arc<str>,
    pub client: Arc<str>,
    pub caller: Arc<str>,
    pub task_id: String,
    pub config: PushConfig,
    pub policy: PushPolicy,
    pub body: Bytes,
}
#[derive(Debug)]
pub(crate) struct PushSender;
impl PushSender {
    pub(crate) fn start(_s: &crate::config::A2aSettings, _a: crate::audit::Audit) -> PushSender {
        PushSender
    }
    pub(crate) fn enqueue(&self, _d: Delivery) -> bool {
        true
    }
}
impl PushSender {
    pub(crate) fn register_metrics(&self, _m: &crate::metrics::Metrics) {}
}
