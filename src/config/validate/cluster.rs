//! `[cluster]` checks: a Redis URL the client can use, and limits that make sense.
//!
//! Owns those checks. Must not connect to Redis (an unreachable Redis is refused at start by
//! `server/cluster.rs`) and never echoes the URL: it may hold a password.

use super::{Loc, Report};
use crate::config::ClusterSettings;

/// The URL's scheme, the key prefix, the instance count, the command timeout, the holder TTL,
/// the session refresh share and cache age.
pub(super) fn check(report: &mut Report, cluster: &ClusterSettings) {
    let loc = Loc::root().with("section", "cluster");
    if let Some(url) = &cluster.redis_url {
        let scheme_ok = url.starts_with("redis://")
            || url.starts_with("rediss://")
            || url.starts_with("redis+unix://")
            || url.starts_with("unix://");
        if !scheme_ok {
            // The URL may hold a password: never echo it.
            report.push(
                &loc,
                "redis_url must start with redis://, rediss://, redis+unix:// or unix://",
            );
        }
    }
    if cluster.key_prefix.is_empty() {
        report.push(&loc, "key_prefix must not be empty");
    }
    if cluster.expected_instances == 0 {
        report.push(&loc, "expected_instances must be at least 1");
    }
    if cluster.command_timeout_ms == 0 {
        report.push(&loc, "command_timeout_ms must be at least 1");
    }
    if cluster.holder_ttl_secs < 3 {
        report.push(
            &loc,
            "holder_ttl_secs must be at least 3 (registrations are refreshed every third of it)",
        );
    }
    if cluster.session_refresh_after_percent > 50 {
        report.push(
            &loc,
            "session_refresh_after_percent must be at most 50 (an idle session may expire that \
             share of session_idle_secs early)",
        );
    }
    if cluster.session_cache_ms > 10_000 {
        report.push(
            &loc,
            "session_cache_ms must be at most 10000 (it bounds how long a lost delete notice goes \
             unseen)",
        );
    }
}
