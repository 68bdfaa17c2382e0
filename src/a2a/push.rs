//! A2A push notifications: webhook configurations, their SSRF-safe validation, and bounded
//! at-least-once delivery.
//!
//! - this file: [`PushConfig`] (`TaskPushNotificationConfig` in its 1.0 shape), [`PushPolicy`],
//!   [`PushRefusal`], the syntactic [`validate`], the resolving [`resolve_checked`], and the
//!   [`PushSender`] front (queues, [`PushStats`]).
//! - `address.rs`: [`is_public`], the address block list.
//! - `deliver.rs`: one worker's loop, one attempt (pinned resolver, TLS, POST), retries,
//!   the audit record of each attempt.
//!
//! The A2A specification's push security checklist, and where each item is enforced: the URL is
//! validated when a configuration is created or arrives inline on a send (the callers run
//! [`validate`] and [`resolve_checked`]) **and** again at every delivery attempt (`deliver.rs`);
//! the host is resolved and every address must be public unless the tenant allowlists the host
//! (`[tenant.a2a] push_allowed_hosts`); the connection goes only to the addresses that were
//! checked (no second DNS lookup, so no rebinding window); `https` only unless
//! `[server.a2a] allow_http_push`; redirects are never followed; CR, LF and other control
//! characters are refused in the token and the credentials; retries are bounded
//! (`push_attempts`), and so is the queue (`push_queue`).
//!
//! Must not store configurations (the task store does, opaque) or decide which events are pushed
//! (the task runner does). Never writes a token or credentials anywhere: not in audit records,
//! not in refusals, not in `Debug` output.

mod address;
mod deliver;

#[cfg(test)]
mod delivery_tests;
#[cfg(test)]
mod tests;

use std::fmt;
use std::hash::BuildHasher;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http::uri::Scheme;
use http::Uri;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::audit::Audit;
use crate::config::A2aSettings;
use crate::shard::FastHash;

pub(crate) use address::is_public;

/// Longest webhook URL, in bytes; a longer one is refused ([`PushRefusal::TooLong`]).
pub(crate) const MAX_URL_LEN: usize = 2048;
/// Longest notification token, in bytes; a longer one is refused.
pub(crate) const MAX_TOKEN_LEN: usize = 512;
/// Longest authentication credentials, in bytes; longer ones are refused.
pub(crate) const MAX_CREDENTIALS_LEN: usize = 4096;
/// Longest authentication scheme (`Bearer`, `Basic`), in bytes; a longer one is refused.
pub(crate) const MAX_SCHEME_LEN: usize = 64;
/// Longest DNS host name (RFC 1035), without a trailing dot; a longer one is refused.
const MAX_HOST_LEN: usize = 253;
/// Longest DNS label (RFC 1035); a longer one is refused.
const MAX_LABEL_LEN: usize = 63;
/// Addresses of one host kept from a lookup (all are checked; only these are dialled).
const MAX_ADDRESSES: usize = 16;

/// The header that carries a configuration's `token` (what the A2A SDKs send and expect).
pub(crate) const TOKEN_HEADER: &str = "x-a2a-notification-token";

// === Configurations ===

/// A push notification configuration in its 1.0 JSON shape (`TaskPushNotificationConfig`,
/// flat): `{id, taskId, url, token?, authentication?}`.
///
/// Lenient: `id` and `taskId` may be absent (an inline configuration on a send names neither;
/// the caller fills them in), and unknown members are kept in `extra` and written back. `Debug`
/// hides the token and the credentials.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
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
    pub authentication: Option<PushAuth>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `AuthenticationInfo`: how the agent authenticates to the webhook, sent as
/// `Authorization: <scheme> <credentials>`. `Debug` hides the credentials.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PushAuth {
    pub scheme: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Stands in for a secret in `Debug` output.
const REDACTED: &str = "<redacted>";

impl fmt::Debug for PushConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PushConfig")
            .field("id", &self.id)
            .field("task_id", &self.task_id)
            .field("url", &self.url)
            .field("token", &self.token.as_ref().map(|_| REDACTED))
            .field("authentication", &self.authentication)
            .field("extra", &self.extra)
            .finish()
    }
}

impl fmt::Debug for PushAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PushAuth")
            .field("scheme", &self.scheme)
            .field("credentials", &self.credentials.as_ref().map(|_| REDACTED))
            .field("extra", &self.extra)
            .finish()
    }
}

// === Policy and refusals ===

/// What validation needs to know: whether `http://` webhooks are allowed (the server's
/// `allow_http_push`) and the hosts the tenant allows on non-public addresses (its
/// `push_allowed_hosts`, lowercased, without a trailing dot, IPv6 literals without brackets).
#[derive(Debug, Clone, Default)]
pub(crate) struct PushPolicy {
    pub allow_http: bool,
    pub allowed_hosts: Arc<[Box<str>]>,
}

impl PushPolicy {
    /// The policy of a tenant: the server's `allow_http_push` and the tenant's
    /// `push_allowed_hosts`, normalized.
    pub(crate) fn new(allow_http: bool, allowed_hosts: &[String]) -> PushPolicy {
        PushPolicy {
            allow_http,
            allowed_hosts: allowed_hosts
                .iter()
                .map(|host| normalize_host(host).into_boxed_str())
                .collect(),
        }
    }

    /// Whether `host` (normalized; `ip` when it is an IP literal) is allowlisted. An IP literal
    /// matches an entry naming the same address in any spelling; a name matches
    /// case-insensitively, a trailing dot aside.
    fn is_allowed(&self, host: &str, ip: Option<IpAddr>) -> bool {
        self.allowed_hosts.iter().any(|entry| {
            let entry = strip_host(entry);
            match ip {
                Some(ip) => entry.parse::<IpAddr>().is_ok_and(|allowed| allowed == ip),
                None => entry.eq_ignore_ascii_case(host),
            }
        })
    }
}

/// Without surrounding whitespace, IPv6 brackets and one trailing dot.
fn strip_host(host: &str) -> &str {
    let host = host.trim();
    let host = host
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .unwrap_or(host);
    host.strip_suffix('.').unwrap_or(host)
}

/// Lowercased, without IPv6 brackets and without one trailing dot.
fn normalize_host(host: &str) -> String {
    strip_host(host).to_ascii_lowercase()
}

/// Why a webhook configuration is refused. `Display` is safe to show the client: it names the
/// field, never its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PushRefusal {
    /// An `http://` URL while `allow_http_push` is off.
    #[error("push notification URL must use https")]
    NotHttps,
    /// The URL is not an absolute http(s) URL with a plain host (the reason says what).
    #[error("push notification URL {0}")]
    BadUrl(&'static str),
    /// CR, LF or another control character in the token, the scheme or the credentials.
    #[error("push notification {0} contains CR, LF or another control character")]
    HeaderInjection(&'static str),
    /// A character outside ASCII in the token or the credentials.
    #[error("push notification {0} must be ASCII")]
    NotAscii(&'static str),
    /// The URL, the token, the scheme or the credentials is longer than its limit.
    #[error("push notification {0} is too long")]
    TooLong(&'static str),
    /// The authentication scheme is empty or not an RFC 9110 token.
    #[error("push notification authentication scheme must be a token (e.g. Bearer)")]
    BadScheme,
    /// The host is (or resolves to) a loopback, private, link-local or other non-public
    /// address and the tenant does not allowlist it.
    #[error("push notification URL host is not a public address")]
    NonPublicAddress,
    /// The host name does not resolve.
    #[error("push notification URL host does not resolve")]
    Unresolvable,
}

impl PushRefusal {
    /// Whether the refusal may pass on its own (a name that did not resolve this time): a
    /// delivery retries it; every other refusal is final.
    pub(crate) fn is_transient(&self) -> bool {
        matches!(self, PushRefusal::Unresolvable)
    }
}

// === Validation ===

/// Syntactic checks, for a configuration being created or arriving inline on a send, and at
/// every delivery attempt: an absolute `http(s)` URL (`https` unless `allow_http`) with a host
/// and no user information or fragment, bounded lengths, no control characters in the token,
/// scheme and credentials, the scheme an RFC 9110 token. An IP-literal host that is not public
/// is refused here already unless allowlisted; a host name is checked by [`resolve_checked`].
#[cfg(test)]
pub(crate) fn validate(config: &PushConfig, policy: &PushPolicy) -> Result<(), PushRefusal> {
    check(config, policy).map(drop)
}

/// [`validate`], then the host resolved and checked as a delivery would (bounded by
/// `limit`): for a configuration being created or arriving inline, so a webhook on a refused
/// address is refused at once. A host that does not resolve now is accepted (a passing DNS
/// failure must not refuse a config; every delivery resolves and checks again).
pub(crate) async fn validate_resolved(
    config: &PushConfig,
    policy: &PushPolicy,
    limit: std::time::Duration,
) -> Result<(), PushRefusal> {
    let target = check(config, policy)?;
    match tokio::time::timeout(limit, resolve_target(&target)).await {
        Ok(Err(PushRefusal::Unresolvable)) | Err(_) | Ok(Ok(_)) => Ok(()),
        Ok(Err(refusal)) => Err(refusal),
    }
}

/// Where a validated configuration is delivered.
#[derive(Debug, Clone)]
struct Target {
    /// The URL with its authority lowercased (what is sent, and the TLS server name).
    uri: Uri,
    /// The host: lowercased, IPv6 without brackets.
    host: String,
    /// The host when it is an IP literal.
    ip: Option<IpAddr>,
    port: u16,
    https: bool,
    /// The tenant allowlists the host: its addresses need not be public.
    allowlisted: bool,
}

/// [`validate`], keeping the parsed URL for the delivery.
fn check(config: &PushConfig, policy: &PushPolicy) -> Result<Target, PushRefusal> {
    let target = parse_url(&config.url, policy)?;
    if let Some(token) = &config.token {
        check_header_text("token", token, MAX_TOKEN_LEN)?;
    }
    if let Some(auth) = &config.authentication {
        check_scheme(&auth.scheme)?;
        if let Some(credentials) = &auth.credentials {
            check_header_text("credentials", credentials, MAX_CREDENTIALS_LEN)?;
        }
    }
    Ok(target)
}

fn parse_url(url: &str, policy: &PushPolicy) -> Result<Target, PushRefusal> {
    if url.len() > MAX_URL_LEN {
        return Err(PushRefusal::TooLong("URL"));
    }
    // RFC 3986 URIs are printable ASCII; an IRI host must arrive in its punycode form.
    if !url.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(PushRefusal::BadUrl(
            "contains a space, a control character or a non-ASCII character",
        ));
    }
    // A fragment is never sent; refusing it keeps what is stored what is called.
    if url.contains('#') {
        return Err(PushRefusal::BadUrl("has a fragment"));
    }
    let uri: Uri = url
        .parse()
        .map_err(|_| PushRefusal::BadUrl("is not a valid URI"))?;
    let https = match uri.scheme() {
        Some(scheme) if *scheme == Scheme::HTTPS => true,
        Some(scheme) if *scheme == Scheme::HTTP => false,
        _ => return Err(PushRefusal::BadUrl("must be an absolute http(s) URL")),
    };
    if !https && !policy.allow_http {
        return Err(PushRefusal::NotHttps);
    }
    let authority = uri.authority().ok_or(PushRefusal::BadUrl("has no host"))?;
    if authority.as_str().contains('@') {
        return Err(PushRefusal::BadUrl("must not carry user information"));
    }
    let (host, ip) = parse_host(authority.host())?;
    let port = match authority.port_u16() {
        Some(0) => return Err(PushRefusal::BadUrl("has port 0")),
        Some(port) => port,
        None if https => 443,
        None => 80,
    };
    let allowlisted = policy.is_allowed(&host, ip);
    if let Some(ip) = ip {
        if !allowlisted && !is_public(ip) {
            return Err(PushRefusal::NonPublicAddress);
        }
    }
    // The authority lowercased (host names are case-insensitive; the path is not).
    let path = uri.path_and_query().map_or("/", |pq| pq.as_str());
    let path = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    };
    let scheme = if https { "https" } else { "http" };
    let authority = authority.as_str().to_ascii_lowercase();
    let uri: Uri = format!("{scheme}://{authority}{path}")
        .parse()
        .map_err(|_| PushRefusal::BadUrl("is not a valid URI"))?;
    Ok(Target {
        uri,
        host,
        ip,
        port,
        https,
        allowlisted,
    })
}

/// A URL host (or a bare host given to [`resolve_checked`]): an IP literal (IPv6 in brackets,
/// or bare) or a DNS name of letters, digits, `-` and `_`. Returns it normalized.
fn parse_host(raw: &str) -> Result<(String, Option<IpAddr>), PushRefusal> {
    if let Some(inner) = raw.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .ok_or(PushRefusal::BadUrl("has a malformed IPv6 host"))?;
        // Zone identifiers (`fe80::1%25eth0`) fail here too: they only name local links.
        let ip: Ipv6Addr = inner
            .parse()
            .map_err(|_| PushRefusal::BadUrl("has a malformed IPv6 host"))?;
        return Ok((ip.to_string(), Some(IpAddr::V6(ip))));
    }
    if let Ok(ip) = raw.parse::<IpAddr>() {
        return Ok((ip.to_string(), Some(ip)));
    }
    let host = raw.strip_suffix('.').unwrap_or(raw);
    if host.is_empty() {
        return Err(PushRefusal::BadUrl("has no host"));
    }
    if host.len() > MAX_HOST_LEN {
        return Err(PushRefusal::BadUrl("has a host name that is too long"));
    }
    for label in host.split('.') {
        let valid = !label.is_empty()
            && label.len() <= MAX_LABEL_LEN
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !valid {
            return Err(PushRefusal::BadUrl("has an invalid host name"));
        }
    }
    // The WHATWG URL standard reads a host whose last label is a number (`127.1`,
    // `2130706433`, `0x7f.0.0.1`) as an IPv4 address, and so does the system resolver; only
    // the canonical dotted form (parsed above) is accepted.
    let last = host.rsplit('.').next().unwrap_or(host);
    let hex = last
        .strip_prefix("0x")
        .or_else(|| last.strip_prefix("0X"))
        .is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_hexdigit()));
    if hex || last.bytes().all(|b| b.is_ascii_digit()) {
        return Err(PushRefusal::BadUrl(
            "has a numeric host that is not a dotted IPv4 address",
        ));
    }
    Ok((host.to_ascii_lowercase(), None))
}

/// A header value the agent sends on the caller's behalf (token, credentials): bounded, no
/// control characters (a CR or LF would start a header of the caller's choosing), ASCII.
fn check_header_text(what: &'static str, value: &str, max: usize) -> Result<(), PushRefusal> {
    if value.len() > max {
        return Err(PushRefusal::TooLong(what));
    }
    if value.bytes().any(|b| b.is_ascii_control()) {
        return Err(PushRefusal::HeaderInjection(what));
    }
    if !value.is_ascii() {
        return Err(PushRefusal::NotAscii(what));
    }
    Ok(())
}

/// RFC 9110 §11.1: `auth-scheme = token`, and §5.6.2: `token = 1*tchar`.
fn check_scheme(scheme: &str) -> Result<(), PushRefusal> {
    const WHAT: &str = "authentication scheme";
    if scheme.len() > MAX_SCHEME_LEN {
        return Err(PushRefusal::TooLong(WHAT));
    }
    if scheme.bytes().any(|b| b.is_ascii_control()) {
        return Err(PushRefusal::HeaderInjection(WHAT));
    }
    if scheme.is_empty() || !scheme.bytes().all(is_tchar) {
        return Err(PushRefusal::BadScheme);
    }
    Ok(())
}

/// RFC 9110 §5.6.2: `tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." /
/// "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

// === Resolution ===

/// Resolves `host` (a URL host: a name, an IPv4 literal, an IPv6 literal with or without
/// brackets) and returns the addresses to connect to, with `port`. Every address must be
/// public unless the tenant allowlists the host: one non-public address refuses the host
/// ([`PushRefusal::NonPublicAddress`]), so a name cannot mix a public address with an internal
/// one. At most a few addresses are returned, each once, in the resolver's order.
#[cfg(test)]
pub(crate) async fn resolve_checked(
    host: &str,
    port: u16,
    policy: &PushPolicy,
) -> Result<Vec<SocketAddr>, PushRefusal> {
    let (host, ip) = match host.parse::<Ipv6Addr>() {
        Ok(v6) => (v6.to_string(), Some(IpAddr::V6(v6))),
        Err(_) => parse_host(host)?,
    };
    let allowlisted = policy.is_allowed(&host, ip);
    resolve(&host, ip, port, allowlisted).await
}

/// The addresses of a [`Target`] (its host, resolved and checked now).
async fn resolve_target(target: &Target) -> Result<Vec<SocketAddr>, PushRefusal> {
    resolve(&target.host, target.ip, target.port, target.allowlisted).await
}

async fn resolve(
    host: &str,
    ip: Option<IpAddr>,
    port: u16,
    allowlisted: bool,
) -> Result<Vec<SocketAddr>, PushRefusal> {
    if let Some(ip) = ip {
        if !allowlisted && !is_public(ip) {
            return Err(PushRefusal::NonPublicAddress);
        }
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let found = tokio::net::lookup_host((host, port))
        .await
        .map_err(|_| PushRefusal::Unresolvable)?;
    let mut addrs: Vec<SocketAddr> = Vec::new();
    for addr in found {
        if !allowlisted && !is_public(addr.ip()) {
            return Err(PushRefusal::NonPublicAddress);
        }
        if addrs.len() < MAX_ADDRESSES && !addrs.contains(&addr) {
            addrs.push(addr);
        }
    }
    if addrs.is_empty() {
        return Err(PushRefusal::Unresolvable);
    }
    Ok(addrs)
}

// === Delivery front ===

/// One event to deliver to one configuration.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    pub tenant: Arc<str>,
    pub client: Arc<str>,
    pub caller: Arc<str>,
    pub task_id: String,
    pub config: PushConfig,
    pub policy: PushPolicy,
    /// The `StreamResponse` JSON (`{"task":..}`, `{"statusUpdate":..}`, …), no JSON-RPC
    /// envelope.
    pub body: Bytes,
}

/// Push counters for `/metrics`; every worker adds to them.
#[derive(Debug, Default)]
pub(crate) struct PushStats {
    /// Deliveries a webhook answered with a 2xx.
    pub delivered: Arc<AtomicU64>,
    /// Deliveries given up on: attempts exhausted, or a final answer (3xx, most 4xx).
    pub failed: Arc<AtomicU64>,
    /// Attempts that failed and were tried again.
    pub retried: Arc<AtomicU64>,
    /// Deliveries not queued because their worker's queue was full.
    pub dropped: Arc<AtomicU64>,
    /// Deliveries refused by the validation at delivery time (never sent).
    pub refused: Arc<AtomicU64>,
}

/// The sender: `push_workers` tasks, each with its own bounded queue (together `push_queue`
/// deliveries). A delivery goes to the worker picked by hashing its (tenant, task id), and a
/// worker delivers one at a time, retries included, so one task's events reach each webhook in
/// order. The price: a webhook that is slow or down delays the other tasks on its worker, by
/// at most `push_attempts` × `push_timeout_ms` plus the backoff per delivery.
///
/// Dropping the sender closes the queues: each worker finishes what is queued and ends.
pub(crate) struct PushSender {
    /// One queue per worker; the worker holds the receiving side.
    queues: Box<[mpsc::Sender<Delivery>]>,
    /// Picks a delivery's worker (seeded once per sender, so fixed for its life).
    hasher: FastHash,
    stats: Arc<PushStats>,
}

impl fmt::Debug for PushSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PushSender")
            .field("workers", &self.queues.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl PushSender {
    /// Spawns the workers on the current tokio runtime (panics outside one, like
    /// `tokio::spawn`). `push_queue` is split evenly over the workers; with fewer queue slots
    /// than workers, there are as many workers as slots.
    pub(crate) fn start(settings: &A2aSettings, audit: Audit) -> PushSender {
        let capacity = settings.push_queue.max(1);
        let workers = settings.push_workers.clamp(1, capacity);
        let stats = Arc::new(PushStats::default());
        let plan = deliver::Plan::from_settings(settings);
        let queues = (0..workers)
            .map(|worker_idx| {
                let slots = capacity / workers + usize::from(worker_idx < capacity % workers);
                let (tx, rx) = mpsc::channel(slots);
                let worker = deliver::Worker::new(plan, audit.clone(), Arc::clone(&stats));
                tokio::spawn(worker.run(rx));
                tx
            })
            .collect();
        PushSender {
            queues,
            hasher: FastHash::default(),
            stats,
        }
    }

    /// Queues `delivery` for its worker without waiting; false (and counted as dropped) when
    /// that worker's queue is full.
    pub(crate) fn enqueue(&self, delivery: Delivery) -> bool {
        let hash = self
            .hasher
            .hash_one((&*delivery.tenant, delivery.task_id.as_str()));
        // The modulo of a u64 by a usize length fits a usize.
        let worker_idx = (hash % self.queues.len() as u64) as usize;
        match self.queues[worker_idx].try_send(delivery) {
            Ok(()) => true,
            Err(_) => {
                self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }

    /// The counters, shared with the workers.
    pub(crate) fn stats(&self) -> &Arc<PushStats> {
        &self.stats
    }
}
