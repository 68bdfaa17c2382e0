//! `[cluster]`: how instances share sessions and stream routing through Redis.
//!
//! Owns the serde shape and its defaults. Must not check meaning (that is
//! `validate/cluster.rs`) or read `SLUICE_REDIS_URL` (that is `env.rs`).

use serde::Deserialize;

/// `[cluster]`: running several instances behind one ingress without sticky sessions.
///
/// With `redis_url` set, session state lives in Redis (any instance validates, refreshes, caps
/// and terminates a session), messages for a stream held by another instance are routed to it
/// over Redis pub/sub, and a configuration reload on one instance makes every instance re-read
/// its configuration file. Without it everything is process-local. This instance's name on the
/// backplane is `[server] instance_id` (random per process when unset; must be unique).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterSettings {
    /// `redis://[user:password@]host:port[/db]`. `SLUICE_REDIS_URL` overrides it (keep
    /// passwords out of the file). Unreachable at start → the server refuses to start.
    pub redis_url: Option<String>,
    /// Namespace of every key and channel, so several deployments can share one Redis.
    pub key_prefix: String,
    /// How many instances the deployment runs. More than one without `redis_url` logs a
    /// warning at start: sessions and streams would not be shared.
    pub expected_instances: u32,
    /// Bound on each Redis command, connecting included, in milliseconds; past it the request
    /// that needed it is answered 503 instead of waiting.
    pub command_timeout_ms: u64,
    /// Lifetime of a stream-holder registration its instance stopped refreshing (it died), in
    /// seconds; the holder refreshes every registration every third of it.
    pub holder_ttl_secs: u64,
    /// A request naming a session writes its refreshed expiry to Redis only when the last
    /// refresh is at least this percent of `[server] session_idle_secs` old (0: every request
    /// writes; at most 50). An idle session then expires between (100 − this)% and 100% of the
    /// idle timeout after its last request.
    pub session_refresh_after_percent: u32,
    /// How long, in milliseconds, an instance answers for a session it validated in Redis
    /// without asking again (0: always ask; at most 10,000). A DELETE on any instance empties
    /// every instance's entry at once over pub/sub; this bounds how long a lost notice can keep
    /// a deleted session usable on another instance.
    pub session_cache_ms: u64,
}

impl Default for ClusterSettings {
    fn default() -> Self {
        Self {
            redis_url: None,
            key_prefix: "default".to_owned(),
            expected_instances: 1,
            command_timeout_ms: 500,
            holder_ttl_secs: 30,
            session_refresh_after_percent: 25,
            session_cache_ms: 1_000,
        }
    }
}
