//! `[[tenant.rate_limit]]` and `[server.auth_failures]`: how fast a tenant's tools may be
//! called, and how many failed authentication attempts a source address or a key id gets.
//!
//! Owns the serde shapes, their defaults and the `rate` syntax ([`Rate::parse`]). Must not check
//! meaning beyond that syntax (that is `validate/tenant.rs`) or count anything (that is
//! `crate::ratelimit`).

use std::time::Duration;

use serde::Deserialize;

/// One rate limit of a tenant. It applies to the tool calls it matches (MCP `tools/call`, REST
/// tool calls, A2A messages that run a tool): those of `client`, of `tool` and of `caller`,
/// each unset meaning any. The calls it matches share one bucket, or one per distinct value of
/// each dimension listed in `per` (`per = ["caller"]`: every caller its own). A call must pass
/// every rule it matches; one over a limit is answered 429 with `Retry-After`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RateLimitRule {
    /// The rule's name, unique in the tenant (metrics, audit records and error data name it).
    pub id: String,
    /// Only calls through this client application.
    #[serde(default)]
    pub client: Option<String>,
    /// Only calls of this tool.
    #[serde(default)]
    pub tool: Option<String>,
    /// Only calls by this caller id (`apikey:…`, `jwt:…`, `mtls:…`, `anonymous`).
    #[serde(default)]
    pub caller: Option<String>,
    /// Dimensions that get a bucket each: any of `"client"`, `"tool"`, `"caller"`.
    #[serde(default)]
    pub per: Vec<RateDimension>,
    /// The sustained rate: `"{count}/{unit}"`, unit `s`, `min` or `h` (e.g. `"600/min"`).
    pub rate: String,
    /// How many calls may come at once after a quiet period; the rate's count when unset.
    #[serde(default)]
    pub burst: Option<u32>,
    /// What a call this rule matches gets while the shared store (Redis, with `[cluster]`)
    /// cannot be reached: `"fail_open"` (default: it runs, unlimited) or `"fail_closed"` (503).
    #[serde(default)]
    pub on_store_error: FailPolicy,
}

/// A dimension of [`RateLimitRule::per`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateDimension {
    /// The client application.
    Client,
    /// The tool.
    Tool,
    /// The caller id.
    Caller,
}

/// [`RateLimitRule::on_store_error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum FailPolicy {
    /// Unlimited while the store is unreachable.
    #[default]
    FailOpen,
    /// Refused (503) while the store is unreachable.
    FailClosed,
}

/// A parsed `rate`: `count` calls per `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rate {
    /// Calls per period, at least 1.
    pub count: u32,
    /// The period.
    pub period: Duration,
}

impl Rate {
    /// Reads `"{count}/{unit}"` (`s`, `sec`, `min`, `h`); `None` when it is not that.
    pub(crate) fn parse(text: &str) -> Option<Rate> {
        let (count, unit) = text.trim().split_once('/')?;
        let count: u32 = count.trim().parse().ok().filter(|&n| n > 0)?;
        let period = match unit.trim() {
            "s" | "sec" | "second" => Duration::from_secs(1),
            "min" | "minute" => Duration::from_secs(60),
            "h" | "hour" => Duration::from_secs(3600),
            _ => return None,
        };
        Some(Rate { count, period })
    }
}

/// `[server.auth_failures]`: failed authentication attempts (a wrong API key, a bad token, a
/// certificate no rule names) allowed per source address and per claimed API key id, within a
/// sliding window; past either, requests from that address or for that key id are answered 429
/// with `Retry-After` before their credential is checked. Process-local.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct AuthFailureSettings {
    /// Failures allowed per source address per window (0: no limit).
    pub per_address: u32,
    /// Failures allowed per claimed API key id per window (0: no limit).
    pub per_key: u32,
    /// The window, in seconds.
    pub window_secs: u64,
    /// Most addresses and key ids tracked at once; past it the oldest are forgotten first.
    pub max_tracked: usize,
}

impl Default for AuthFailureSettings {
    fn default() -> Self {
        Self {
            per_address: 30,
            per_key: 10,
            window_secs: 60,
            max_tracked: 100_000,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_count_and_unit() {
        assert_eq!(
            Rate::parse("600/min"),
            Some(Rate {
                count: 600,
                period: Duration::from_secs(60)
            })
        );
        assert_eq!(Rate::parse(" 5 / s ").map(|r| r.count), Some(5));
        assert_eq!(Rate::parse("1/h").map(|r| r.period.as_secs()), Some(3600));
        for bad in ["", "0/s", "5", "5/day", "-1/s", "x/s", "5/"] {
            assert_eq!(Rate::parse(bad), None, "{bad}");
        }
    }
}
