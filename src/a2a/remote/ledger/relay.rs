//! The push relay records of the ledger: per remote task with push configurations, the
//! relay the upstream calls (`POST /runtime/a2a/push/{relayId}` with its token and secret)
//! and the caller's configurations it fans out to. Found by relay id (the webhook) and by task
//! (the configuration methods); both shapes of the ledger hold them, so a relay registered
//! through one instance is answered by any.
//!
//! Must not deliver anything or talk to the upstream (`push.rs` does).

use serde::{Deserialize, Serialize};

/// How the upstream reaches the relay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RelayMode {
    /// A push configuration registered at the upstream points at the relay webhook.
    Push,
    /// The upstream has no push: a background `SubscribeToTask` feeds the relay.
    Subscribe,
}

/// One task's relay.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RelayRecord {
    pub relay_id: String,
    pub tenant: String,
    pub client: String,
    pub agent: String,
    pub caller: String,
    /// `None` until the answer to the send that registered it inline names the task.
    pub task_id: Option<String>,
    /// The `token` the upstream sends back (`X-A2A-Notification-Token`).
    pub token: String,
    /// The bearer credential the upstream authenticates with.
    pub secret: String,
    pub mode: RelayMode,
    /// The caller's configurations (1.0 `TaskPushNotificationConfig` JSON), validated.
    pub configs: Vec<serde_json::Value>,
    /// The task reached a terminal state: nothing more is relayed, and the record (with the
    /// caller's configurations, still listable) lives `terminal_ttl` instead of `active_ttl`.
    #[serde(default)]
    pub finished: bool,
}

impl std::fmt::Debug for RelayRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelayRecord")
            .field("relay_id", &self.relay_id)
            .field("agent", &self.agent)
            .field("task_id", &self.task_id)
            .field("mode", &self.mode)
            .field("configs", &self.configs.len())
            .finish_non_exhaustive()
    }
}
