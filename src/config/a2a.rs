//! The A2A settings: `[server.a2a]` (the agent surface's limits: task store, blocking sends,
//! push delivery), `[tenant.a2a]` (the webhook hosts a tenant allows on private addresses) and
//! `[tenant.client.agent]` (the card's name, description and version).
//!
//! Owns the serde shapes and their defaults; `validate/server.rs` checks the ranges. Must not
//! build cards or tasks (that is `a2a/`).

use serde::Deserialize;

/// `[server.a2a]`: the A2A agent surface of every client application.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct A2aSettings {
    /// Serve `/runtime/{tenant}/{client}/a2a` and its card (404 when off).
    pub enabled: bool,
    /// Tasks a tenant may hold at once in the task store, terminal ones included (a send past
    /// it is refused with -32603 "task store full"; terminal tasks leave after
    /// `task_retain_secs`).
    pub max_tasks_per_tenant: usize,
    /// How long a terminal task stays readable (`GetTask`, `ListTasks`).
    pub task_retain_secs: u64,
    /// The safety lifetime of a task that never ends (a runner lost with its instance).
    pub task_active_secs: u64,
    /// Events logged per task (a task stream past it keeps the newest; subscribers that fall
    /// further behind are ended).
    pub max_events_per_task: usize,
    /// How long a blocking `SendMessage` waits for a terminal or interrupted state before it
    /// answers with the task as it is (still working; `GetTask` or `SubscribeToTask` follow it).
    pub blocking_timeout_secs: u64,
    /// Largest `pageSize` of `ListTasks` (a larger one is clamped; 0 is refused).
    pub list_max_page_size: usize,
    /// `pageSize` of `ListTasks` when the request names none.
    pub list_default_page_size: usize,
    /// Most history messages a task returns when the request names no `historyLength`.
    pub default_history_length: usize,
    /// Offer push notifications (`capabilities.pushNotifications`); off, every push config
    /// method answers -32003.
    pub push_notifications: bool,
    /// Push notification webhooks may use `http://` (development only).
    pub allow_http_push: bool,
    /// Push configurations per task (the next `Create…` is refused with -32602).
    pub max_push_configs_per_task: usize,
    /// Push deliveries queued at once; past it a delivery is dropped and counted.
    pub push_queue: usize,
    /// Concurrent push deliveries.
    pub push_workers: usize,
    /// Attempts per delivery (the first included), with exponential backoff.
    pub push_attempts: u32,
    /// Time limit of one delivery attempt, in milliseconds.
    pub push_timeout_ms: u64,
    /// The first retry's backoff, in milliseconds (doubled per attempt).
    pub push_backoff_ms: u64,
    /// How long the concentrator's ledger remembers who owns a remote task that is not
    /// terminal, from its last update, in seconds.
    pub remote_task_secs: u64,
    /// How long it remembers a terminal remote task (for `GetTask`, `ListTasks`), in seconds.
    pub remote_terminal_secs: u64,
    /// Remote tasks a tenant may own at once across its registered agents (a new task past
    /// it is refused before it reaches the upstream).
    pub remote_max_tasks_per_tenant: usize,
    /// How long a start waits for the registered agents' first cards, in milliseconds (a
    /// slower agent's card follows in the background).
    pub remote_start_wait_ms: u64,
}

impl A2aSettings {
    /// Whether push notifications are offered.
    pub(crate) fn push_enabled(&self) -> bool {
        self.push_notifications
    }
}

impl Default for A2aSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            max_tasks_per_tenant: 10_000,
            task_retain_secs: 3_600,
            task_active_secs: 24 * 3_600,
            max_events_per_task: 1_000,
            blocking_timeout_secs: 60,
            list_max_page_size: 100,
            list_default_page_size: 50,
            default_history_length: 100,
            push_notifications: true,
            allow_http_push: false,
            max_push_configs_per_task: 10,
            push_queue: 1_024,
            push_workers: 4,
            push_attempts: 3,
            push_timeout_ms: 10_000,
            push_backoff_ms: 500,
            remote_task_secs: 7 * 24 * 3_600,
            remote_terminal_secs: 24 * 3_600,
            remote_max_tasks_per_tenant: 100_000,
            remote_start_wait_ms: 5_000,
        }
    }
}

/// `[tenant.a2a]`: a tenant's A2A settings.
#[derive(Debug, Clone, Deserialize, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct TenantA2a {
    /// Webhook hosts allowed although they resolve to a loopback, private, link-local or other
    /// non-public address (exact host names or IP literals, compared case-insensitively).
    pub push_allowed_hosts: Vec<String>,
}

/// `[tenant.client.agent]`: how the client application presents itself as an A2A agent.
#[derive(Debug, Clone, Deserialize, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct AgentSettings {
    /// The card's `name` (default: the client application id).
    pub name: Option<String>,
    /// The card's `description` (default: the client's system prompt's first line, or a
    /// sentence naming the tenant).
    pub description: Option<String>,
    /// The card's `version` (default: this runtime's version).
    pub version: Option<String>,
}
