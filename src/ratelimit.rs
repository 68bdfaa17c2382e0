//! Rate limits: the tenant's `[[tenant.rate_limit]]` rules compiled per client application
//! ([`Rules`]), the [`Limiter`] that takes each tool call from the buckets of the rules it
//! matches, and the [`AuthThrottle`] on failed authentication attempts.
//!
//! Buckets follow GCRA ([`gcra`]). Without `[cluster]` they live in this process
//! ([`local`]); with it, in Redis ([`redis`]: one script call per limited call, so a limit holds
//! across every instance). A bucket key is tenant + rule + the values of the rule's `per`
//! dimensions (client, tool, caller id) — never a session, which a client renews at will. When
//! Redis cannot answer, each rule's `on_store_error` decides. A call no rule matches costs one
//! pass over the client's rules and nothing else.
//!
//! Owns counting. Must not build HTTP answers (the gate, `crate::access`, turns a [`Verdict`]
//! into 429 or 503) or know which surface a call came through.

pub(crate) mod gcra;
pub(crate) mod local;
pub(crate) mod redis;

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use smallvec::SmallVec;

use crate::config::{AuthFailureSettings, FailPolicy, Rate, RateDimension, RateLimitRule};
use gcra::Shape;
use local::LocalStore;
use redis::RedisStore;

/// Default most buckets one process tracks (`LocalStore`'s bound).
pub(crate) const DEFAULT_MAX_BUCKETS: usize = 100_000;

/// Separates the parts of a bucket key (never in an id: ids are path-segment safe).
const SEP: u8 = 0x1f;

// === Rules ===

/// One compiled rule.
#[derive(Debug)]
pub(crate) struct Rule {
    id: Arc<str>,
    tool: Option<Box<str>>,
    caller: Option<Box<str>>,
    per_client: bool,
    per_tool: bool,
    per_caller: bool,
    shape: Shape,
    fail_closed: bool,
}

/// The rules of a tenant that apply to one client application, in file order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rules(Arc<[Rule]>);

impl Rules {
    /// The rules of `rules` (a tenant's, validated) that apply to client `client`.
    pub(crate) fn for_client(rules: &[RateLimitRule], client: &str) -> Rules {
        let compiled: Vec<Rule> = rules
            .iter()
            .filter(|rule| rule.client.as_deref().is_none_or(|c| c == client))
            .filter_map(|rule| {
                let rate = Rate::parse(&rule.rate)?;
                let period_us = u64::try_from(rate.period.as_micros()).unwrap_or(u64::MAX);
                let burst = rule.burst.unwrap_or(rate.count);
                Some(Rule {
                    id: rule.id.as_str().into(),
                    tool: rule.tool.as_deref().map(Box::from),
                    caller: rule.caller.as_deref().map(Box::from),
                    per_client: rule.per.contains(&RateDimension::Client),
                    per_tool: rule.per.contains(&RateDimension::Tool),
                    per_caller: rule.per.contains(&RateDimension::Caller),
                    shape: Shape::new(rate.count, period_us, burst),
                    fail_closed: rule.on_store_error == FailPolicy::FailClosed,
                })
            })
            .collect();
        Rules(compiled.into())
    }

    /// Whether no rule applies (the gate skips the limiter).
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Who is calling what: the parts a rule matches and a bucket key is made of.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call<'a> {
    pub tenant: &'a str,
    pub client: &'a str,
    pub caller: &'a str,
    pub tool: &'a str,
}

/// A bucket key, built on the stack for the common sizes.
type Key = SmallVec<[u8; 128]>;

impl Rule {
    fn matches(&self, call: &Call<'_>) -> bool {
        self.tool.as_deref().is_none_or(|tool| tool == call.tool)
            && self
                .caller
                .as_deref()
                .is_none_or(|caller| caller == call.caller)
    }

    /// `{tenant}␟{rule}␟{client?}␟{tool?}␟{caller?}`: the dimensions not in `per` stay empty,
    /// so every call the rule matches shares their bucket.
    fn key(&self, call: &Call<'_>) -> Key {
        let mut key = Key::new();
        let parts = [
            (true, call.tenant),
            (true, &*self.id),
            (self.per_client, call.client),
            (self.per_tool, call.tool),
            (self.per_caller, call.caller),
        ];
        for (i, (used, part)) in parts.into_iter().enumerate() {
            if i > 0 {
                key.push(SEP);
            }
            if used {
                key.extend_from_slice(part.as_bytes());
            }
        }
        key
    }
}

// === Limiter ===

/// What the limiter says about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The call may run.
    Allowed,
    /// Rule `rule` is over its limit; a call would pass in `retry_after`.
    Limited {
        /// The rule's id.
        rule: Arc<str>,
        /// How long until a call would pass.
        retry_after: Duration,
    },
    /// The shared store cannot be reached and rule `rule` fails closed.
    Unavailable {
        /// The rule's id.
        rule: Arc<str>,
    },
}

/// The counters `/metrics` shows.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Calls refused by a rate limit.
    pub limited: Arc<AtomicU64>,
    /// Shared-store failures (each call that met one).
    pub store_errors: Arc<AtomicU64>,
    /// Requests refused because their address or key id failed authentication too often.
    pub auth_throttled: Arc<AtomicU64>,
}

/// Takes tool calls from their rules' buckets.
#[derive(Debug)]
pub(crate) struct Limiter {
    local: LocalStore,
    shared: Option<RedisStore>,
    pub(crate) counters: Arc<Counters>,
}

impl Limiter {
    /// A process-local limiter tracking at most `max_buckets` buckets.
    pub(crate) fn local(max_buckets: usize) -> Self {
        Self {
            local: LocalStore::new(max_buckets),
            shared: None,
            counters: Arc::default(),
        }
    }

    /// A limiter whose buckets live in Redis.
    pub(crate) fn shared(
        connection: ::redis::aio::ConnectionManager,
        namespace: String,
        timeout: Duration,
    ) -> Self {
        Self {
            shared: Some(RedisStore::new(connection, namespace, timeout)),
            ..Self::local(1)
        }
    }

    /// Takes `call` from the bucket of every rule of `rules` it matches, or from none.
    pub(crate) async fn check(&self, rules: &Rules, call: Call<'_>) -> Verdict {
        let matched: SmallVec<[(&Rule, Key); 4]> = rules
            .0
            .iter()
            .filter(|rule| rule.matches(&call))
            .map(|rule| (rule, rule.key(&call)))
            .collect();
        if matched.is_empty() {
            return Verdict::Allowed;
        }
        let items: SmallVec<[(&[u8], Shape); 4]> = matched
            .iter()
            .map(|(rule, key)| (key.as_slice(), rule.shape))
            .collect();
        let taken = match &self.shared {
            None => self.local.take_all(&items),
            Some(store) => match store.take_all(call.tenant, &items).await {
                Ok(taken) => taken,
                Err(err) => {
                    self.counters.store_errors.fetch_add(1, Ordering::Relaxed);
                    crate::log_limit::warn_limited!(
                        call.tenant,
                        crate::log_limit::Kind::RateLimitStore,
                        error = %err,
                        "rate limit store unreachable; rules follow on_store_error"
                    );
                    return match matched.iter().find(|(rule, _)| rule.fail_closed) {
                        Some((rule, _)) => Verdict::Unavailable {
                            rule: Arc::clone(&rule.id),
                        },
                        None => Verdict::Allowed,
                    };
                }
            },
        };
        match taken {
            Ok(()) => Verdict::Allowed,
            Err((index, retry_after_us)) => {
                self.counters.limited.fetch_add(1, Ordering::Relaxed);
                let rule = matched
                    .get(index)
                    .map_or_else(|| Arc::from("unknown"), |(rule, _)| Arc::clone(&rule.id));
                Verdict::Limited {
                    rule,
                    retry_after: Duration::from_micros(retry_after_us),
                }
            }
        }
    }
}

// === AuthThrottle ===

/// Failed authentication attempts per source address and per claimed key id, process-local.
#[derive(Debug)]
pub(crate) struct AuthThrottle {
    store: LocalStore,
    per_address: Option<Shape>,
    per_key: Option<Shape>,
    /// Whether any failure was ever recorded: until then a check touches no lock.
    armed: std::sync::atomic::AtomicBool,
    counters: Arc<Counters>,
}

impl AuthThrottle {
    /// A throttle with `settings`, counting refusals in `counters`.
    pub(crate) fn new(settings: &AuthFailureSettings, counters: Arc<Counters>) -> Self {
        let window_us = settings.window_secs.max(1).saturating_mul(1_000_000);
        let shape = |count: u32| (count > 0).then(|| Shape::new(count, window_us, count));
        Self {
            store: LocalStore::new(settings.max_tracked.max(1)),
            per_address: shape(settings.per_address),
            per_key: shape(settings.per_key),
            armed: Default::default(),
            counters,
        }
    }

    /// How long the request from `address` (claiming key id `key_id`) must wait, when either
    /// has failed too often. Takes nothing.
    pub(crate) fn refuses(&self, address: IpAddr, key_id: Option<&str>) -> Option<Duration> {
        if !self.armed.load(Ordering::Relaxed) {
            return None;
        }
        let by_address = self
            .per_address
            .and_then(|shape| self.store.refuses(&address_key(address), shape));
        let by_key = self
            .per_key
            .zip(key_id)
            .and_then(|(shape, id)| self.store.refuses(&id_key(id), shape));
        let wait = by_address.max(by_key)?;
        self.counters.auth_throttled.fetch_add(1, Ordering::Relaxed);
        Some(Duration::from_micros(wait))
    }

    /// Records one failed attempt from `address` claiming `key_id`.
    pub(crate) fn failed(&self, address: IpAddr, key_id: Option<&str>) {
        self.armed.store(true, Ordering::Relaxed);
        if let Some(shape) = self.per_address {
            let _ = self.store.take_all(&[(&address_key(address), shape)]);
        }
        if let Some((shape, id)) = self.per_key.zip(key_id) {
            let _ = self.store.take_all(&[(&id_key(id), shape)]);
        }
    }
}

fn address_key(address: IpAddr) -> SmallVec<[u8; 17]> {
    let mut key = SmallVec::new();
    match address.to_canonical() {
        IpAddr::V4(v4) => {
            key.push(b'4');
            key.extend_from_slice(&v4.octets());
        }
        IpAddr::V6(v6) => {
            key.push(b'6');
            key.extend_from_slice(&v6.octets());
        }
    }
    key
}

fn id_key(id: &str) -> SmallVec<[u8; 32]> {
    let mut key = SmallVec::new();
    key.push(b'k');
    key.extend_from_slice(id.as_bytes());
    key
}

#[cfg(test)]
mod tests;
