//! The gate every tenant-scoped request passes before its surface sees it: `Host` and `Origin`,
//! tenant and client, credential → [`Caller`], per-tool scopes, and the protected-resource
//! metadata those challenges point at.
//!
//! Order (each step's failure is final): `Host` (400 when missing or doubled, 421 when not
//! allowed) → `Origin` (403) — together the DNS-rebinding guard ([`Guard`]) → tenant and
//! client known to the current snapshot (404) → credential (400 when `Authorization` and
//! `X-API-Key` disagree, 401 with `WWW-Authenticate: Bearer resource_metadata="…"`, or 403
//! `insufficient_scope`). A refused credential is audited as an `auth_failure`. URLs in challenges and metadata are built from the configured public base URL
//! (`[server] public_url`), never from `Host`, so they are right behind proxies.
//!
//! Owns the mapping of [`AuthError`] to HTTP errors; must not validate credentials itself (that is
//! [`crate::auth`]) nor know MCP methods beyond "which tool does this call name".

use std::sync::Arc;
use std::time::Instant;

use http::request::Parts;

use crate::audit::{Audit, CallType, Outcome, Record, Surface};
use crate::auth::{self, challenge, prm, AuthError, Authenticator, Caller};
use crate::catalog::{ClientView, Snapshot};
use crate::http::guard::Guard;
use crate::http::server::Peer;
use crate::http::{Error, Target};
use crate::invoke::correlation::{external_from_headers, ExternalCorrelationId};
use crate::ratelimit::{AuthThrottle, Call, Limiter, Verdict};

/// Which endpoint of a tenant's client application a request addresses; decides the resource
/// URL (the default JWT audience) and the metadata a challenge points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `/runtime/{t}/{c}/mcp`.
    Mcp,
    /// `/runtime/{t}/{c}/sse` and its `/messages` companion: one resource, so a token obtained
    /// for the legacy stream also posts its messages.
    LegacySse,
    /// `/runtime/{t}/{c}/tools` and `/tools/{name}` (REST).
    Rest,
    /// `/runtime/{t}/{c}/a2a`: the client application as an A2A agent (the route is wired
    /// with the A2A surface; until then nothing names it).
    #[allow(dead_code)]
    A2a,
}

impl Endpoint {
    /// The last path segment of the endpoint's resource URL.
    pub(crate) fn suffix(self) -> &'static str {
        match self {
            Endpoint::Mcp => "mcp",
            Endpoint::LegacySse => "sse",
            Endpoint::Rest => "tools",
            Endpoint::A2a => "a2a",
        }
    }

    /// The audit `surface` of requests to this endpoint.
    pub(crate) fn surface(self) -> Surface {
        match self {
            Endpoint::Mcp => Surface::Mcp,
            Endpoint::LegacySse => Surface::LegacySse,
            Endpoint::Rest => Surface::Rest,
            Endpoint::A2a => Surface::A2a,
        }
    }
}

/// The path of an endpoint's resource, e.g. `/runtime/acme/app/mcp`.
pub(crate) fn endpoint_path(tenant: &str, client: &str, endpoint: Endpoint) -> String {
    format!("/runtime/{tenant}/{client}/{}", endpoint.suffix())
}

/// What a request that passed the gate carries on.
#[derive(Debug)]
pub(crate) struct Admitted {
    /// The snapshot read at the start of the request (surfaces use this one, not a newer one).
    pub snapshot: Arc<Snapshot>,
    /// What the client sees in `snapshot`, found by the gate (transports and methods use this
    /// one instead of looking it up again).
    pub view: Arc<ClientView>,
    /// Who is calling.
    pub caller: Caller,
    /// Whether the request came through the BOS platform endpoint (its `tools/list` and
    /// `tools/call` are the platform tools).
    pub platform: bool,
    /// The accepted `X-Correlation-Id`, read once by the router (which also echoes it) and
    /// handed to the transport's `CallContext`.
    pub external: Option<ExternalCorrelationId>,
}

/// The gate. One per server; cheap to share.
#[derive(Debug)]
pub struct Access {
    authenticator: Authenticator,
    /// `scheme://host[:port]` without a trailing slash.
    public_base: Arc<str>,
    /// The `Host` allowlist and the server's own origins.
    guard: Guard,
    audit: Audit,
    /// The tenants' rate limits on tool calls.
    limiter: Limiter,
    /// Failed authentication attempts per source address and key id.
    throttle: AuthThrottle,
    /// OpenTelemetry (`[telemetry]`); `None`: off, and no request is traced.
    telemetry: Option<Arc<crate::telemetry::Telemetry>>,
}

impl Access {
    /// A gate validating API keys with `pepper`, building URLs on `public_base`, checking `Host`
    /// and `Origin` with `guard`.
    pub(crate) fn new(
        authenticator: Authenticator,
        public_base: &str,
        guard: Guard,
        audit: Audit,
        (limiter, throttle): (Limiter, AuthThrottle),
    ) -> Self {
        Self {
            authenticator,
            public_base: public_base.trim_end_matches('/').into(),
            guard,
            audit,
            limiter,
            throttle,
            telemetry: None,
        }
    }

    /// This gate, tracing every request with `telemetry`.
    pub(crate) fn with_telemetry(
        mut self,
        telemetry: Option<Arc<crate::telemetry::Telemetry>>,
    ) -> Self {
        self.telemetry = telemetry;
        self
    }

    /// The trace of a request with these headers (their `traceparent` is its HTTP parent);
    /// `None` while telemetry is off.
    pub(crate) fn trace(
        &self,
        headers: &http::HeaderMap,
    ) -> Option<Arc<crate::telemetry::RequestTrace>> {
        self.telemetry
            .as_ref()
            .and_then(|telemetry| telemetry.request(headers))
    }

    /// [`Access::trace`] of one MCP message: its `params._meta` trace context and its
    /// JSON-RPC id join the HTTP one.
    pub(crate) fn trace_message(
        &self,
        headers: &http::HeaderMap,
        meta: Option<crate::telemetry::MetaContext<'_>>,
        id: Option<&dyn std::fmt::Display>,
    ) -> Option<Arc<crate::telemetry::RequestTrace>> {
        self.telemetry
            .as_ref()
            .and_then(|telemetry| telemetry.message(headers, meta, id))
    }

    /// The `Host` and `Origin` guard (preflights and CORS decoration use it too).
    pub(crate) fn guard(&self) -> &Guard {
        &self.guard
    }

    /// Runs the gate for a request to `endpoint` of `target`. `origin` is the verdict of
    /// [`Guard::check_origin`] on the request, which the router has already reached (it also
    /// decides the CORS headers), so it is not checked twice.
    pub(crate) async fn admit(
        &self,
        peer: &Peer,
        parts: &Parts,
        target: &Target<'_>,
        endpoint: Endpoint,
        snapshot: Arc<Snapshot>,
        origin: Result<(), Error>,
    ) -> Result<Admitted, Error> {
        self.guard
            .check_host(&parts.headers, &parts.uri, parts.version)?;
        origin?;
        let Some(view) = snapshot.client(&target.tenant, &target.client) else {
            return Err(unknown_client());
        };
        let key_id = platform_key_id(&parts.headers);
        self.check_throttle(peer, key_id)?;
        // The auth duration is only audited, so the clock is read only when auditing.
        let started = self.audit.is_enabled().then(Instant::now);
        let resource = || self.resource_url(&target.tenant, &target.client, endpoint);
        match self
            .authenticator
            .authenticate_with(&parts.headers, peer.certificate.as_deref(), view, resource)
            .await
        {
            Ok(caller) => Ok(Admitted {
                view: Arc::clone(view),
                snapshot,
                caller,
                platform: false,
                external: None,
            }),
            Err(err) => {
                self.record_failure(peer, key_id, &err);
                self.audit_failure(parts, view, endpoint, &err, started)
                    .await;
                Err(self.challenge(&err, view, endpoint))
            }
        }
    }

    /// The gate of the BOS platform endpoint (`/mcp/apps/bos/platform`), whose path names no
    /// tenant: the caller's API key names it (key ids are unique across tenants). The key is
    /// then checked exactly as on the key's own client endpoint (secret, expiry, the tenant's
    /// required scopes). Returns the tenant and client application the key belongs to.
    /// No API key (including a JWT, which cannot name a tenant here) → 401.
    pub(crate) async fn admit_platform(
        &self,
        peer: &Peer,
        parts: &Parts,
        snapshot: Arc<Snapshot>,
        origin: Result<(), Error>,
    ) -> Result<(Admitted, crate::catalog::ClientKey), Error> {
        self.guard
            .check_host(&parts.headers, &parts.uri, parts.version)?;
        origin?;
        // Before the key names a tenant: two different credentials name no one.
        auth::check_unambiguous(&parts.headers).map_err(|err| bad_credentials(&err))?;
        let metadata = prm::metadata_url(&self.public_base, crate::bos::PLATFORM_PATH);
        let refuse = |err: &AuthError| Error::Unauthorized {
            challenge: Some(challenge::www_authenticate(err, &metadata, &[])),
            message: err.to_string().into(),
        };
        let key_id = platform_key_id(&parts.headers);
        self.check_throttle(peer, key_id)?;
        let owner = key_id
            .and_then(|id| snapshot.key_owner(id))
            .cloned()
            .or_else(|| jwt_owner(&parts.headers, &snapshot));
        let Some(owner) = owner else {
            let presented = key_id.is_some() || has_credential(&parts.headers);
            if presented {
                self.throttle.failed(peer.addr.ip(), key_id);
            }
            let err = if presented {
                AuthError::Invalid {
                    reason: "the platform endpoint takes an API key, or a JWT whose issuer's \
                             client_claim names a client application",
                }
            } else {
                AuthError::Missing
            };
            return Err(refuse(&err));
        };
        let Some(view) = snapshot.client(&owner.tenant, &owner.client) else {
            return Err(refuse(&AuthError::Invalid {
                reason: "unknown api key",
            }));
        };
        // The auth duration is only audited, so the clock is read only when auditing.
        let started = self.audit.is_enabled().then(Instant::now);
        let resource = || prm::resource_url(&self.public_base, crate::bos::PLATFORM_PATH);
        match self
            .authenticator
            .authenticate_with(&parts.headers, peer.certificate.as_deref(), view, resource)
            .await
        {
            Ok(caller) => Ok((
                Admitted {
                    view: Arc::clone(view),
                    snapshot,
                    caller,
                    platform: true,
                    external: None,
                },
                owner,
            )),
            Err(err) => {
                self.record_failure(peer, key_id, &err);
                self.audit_failure(parts, view, Endpoint::Mcp, &err, started)
                    .await;
                Err(match &err {
                    AuthError::InsufficientScope { .. } => {
                        self.challenge(&err, view, Endpoint::Mcp)
                    }
                    _ => refuse(&err),
                })
            }
        }
    }

    /// 429 when the request's source address or claimed key id has failed authentication too
    /// often (`[server.auth_failures]`), before its credential is looked at.
    fn check_throttle(&self, peer: &Peer, key_id: Option<&str>) -> Result<(), Error> {
        match self.throttle.refuses(peer.addr.ip(), key_id) {
            None => Ok(()),
            Some(retry_after) => Err(Error::RateLimited {
                message: "too many failed authentication attempts".into(),
                retry_after,
                rule: None,
                id: None,
            }),
        }
    }

    /// Counts a refused credential against its address and key id: a presented credential
    /// that is wrong (not a missing one, nor a missing scope, nor unreachable signing keys).
    fn record_failure(&self, peer: &Peer, key_id: Option<&str>, err: &AuthError) {
        if matches!(err, AuthError::Invalid { .. } | AuthError::Expired) {
            self.throttle.failed(peer.addr.ip(), key_id);
        }
    }

    /// The gate of one tool call, after the request's own: the tool's own scope (403
    /// `insufficient_scope`), then the tenant's rate limits the call matches (429 with
    /// `Retry-After`, or 503 while the shared store is unreachable and a matched rule fails
    /// closed; either is audited). Every surface calls it before the tool runs, so a refusal
    /// is an HTTP status; `id` is the JSON-RPC id the refusal echoes.
    pub(crate) async fn admit_call(
        &self,
        caller: &Caller,
        view: &ClientView,
        endpoint: Endpoint,
        tool: &str,
        id: Option<crate::jsonrpc::OwnedId>,
    ) -> Result<(), Error> {
        let scope = view.tool(tool).and_then(|t| t.def.scope.as_deref());
        self.require_scope(caller, view, endpoint, scope)?;
        let rules = view.rate_limits();
        if rules.is_empty() {
            return Ok(());
        }
        let call = Call {
            tenant: view.tenant(),
            client: view.client(),
            caller: &caller.caller_id,
            tool,
        };
        let (refusal, code) = match self.limiter.check(rules, call).await {
            Verdict::Allowed => return Ok(()),
            Verdict::Limited { rule, retry_after } => (
                Error::RateLimited {
                    message: format!("rate limit '{rule}' is exhausted").into(),
                    retry_after,
                    rule: Some(rule),
                    id,
                },
                "429",
            ),
            Verdict::Unavailable { rule } => (
                Error::Unavailable(
                    format!("rate limit '{rule}' cannot be checked now (its store is unreachable)")
                        .into(),
                ),
                "503",
            ),
        };
        if self.audit.is_enabled() {
            let record = Record::new(
                endpoint.surface(),
                CallType::ToolCall,
                Arc::clone(view.tenant_id()),
                Arc::clone(view.client_id()),
                Arc::clone(&caller.caller_id),
            )
            .with_tool(tool)
            .with_outcome(Outcome::Rejected, Some(code.to_owned()))
            .with_detail(refusal.to_string());
            self.audit.record(record).await;
        }
        Err(refusal)
    }

    /// 403 `insufficient_scope` unless `caller` holds `scope` (a tool's own scope).
    pub(crate) fn require_scope(
        &self,
        caller: &Caller,
        view: &ClientView,
        endpoint: Endpoint,
        scope: Option<&str>,
    ) -> Result<(), Error> {
        let Some(scope) = scope else {
            return Ok(());
        };
        let required = [scope.to_owned()];
        auth::require(caller, &required).map_err(|err| self.challenge(&err, view, endpoint))
    }

    /// The resource URL of an endpoint: what a JWT's `aud` must name by default and what its
    /// protected-resource metadata calls `resource`.
    pub(crate) fn resource_url(&self, tenant: &str, client: &str, endpoint: Endpoint) -> String {
        prm::resource_url(&self.public_base, &endpoint_path(tenant, client, endpoint))
    }

    /// The URL of an endpoint's protected-resource metadata (RFC 9728 path insertion).
    pub(crate) fn metadata_url(&self, tenant: &str, client: &str, endpoint: Endpoint) -> String {
        prm::metadata_url(&self.public_base, &endpoint_path(tenant, client, endpoint))
    }

    /// The HTTP error of a refused credential: 401 with the challenge (and the tenant's required
    /// scopes), or 403 `insufficient_scope` naming what is missing.
    pub(crate) fn challenge(
        &self,
        err: &AuthError,
        view: &ClientView,
        endpoint: Endpoint,
    ) -> Error {
        let metadata = self.metadata_url(view.tenant(), view.client(), endpoint);
        match err {
            AuthError::InsufficientScope { required } => {
                // Ask for the tenant's baseline too, so a step-up does not lose it.
                let mut scopes = view.auth().required_scopes.clone();
                for scope in required {
                    if !scopes.contains(scope) {
                        scopes.push(scope.clone());
                    }
                }
                Error::InsufficientScope {
                    challenge: challenge::www_authenticate(err, &metadata, &scopes),
                    message: format!("this operation needs scope {}", required.join(" ")).into(),
                }
            }
            AuthError::Ambiguous => bad_credentials(err),
            // The token may be fine: the issuer's keys could not be fetched.
            err if err.is_unavailable() => {
                Error::Unavailable("the token issuer's keys cannot be fetched now".into())
            }
            _ => Error::Unauthorized {
                challenge: Some(challenge::www_authenticate(
                    err,
                    &metadata,
                    &view.auth().required_scopes,
                )),
                message: err.to_string().into(),
            },
        }
    }

    /// Serves `GET /.well-known/oauth-protected-resource{path}`: the RFC 9728 document of the
    /// endpoint at `path` (`/runtime/{t}/{c}/mcp`, `…/sse`, `…/messages`, `…/tools`), or 404
    /// for anything else, including unknown tenants and client applications.
    pub(crate) fn protected_resource(
        &self,
        snapshot: &Snapshot,
        path: &str,
    ) -> Result<bytes::Bytes, Error> {
        if path == crate::bos::PLATFORM_PATH {
            // The platform endpoint serves every tenant: no one tenant's authorization servers.
            let resource = prm::resource_url(&self.public_base, path);
            let auth = crate::config::TenantAuth::default();
            return Ok(prm::document(&resource, &auth, "sluice BOS platform"));
        }
        let mut segments = path.strip_prefix('/').unwrap_or("").split('/');
        let (Some("runtime"), Some(tenant), Some(client), Some(last), None) = (
            segments.next(),
            segments.next(),
            segments.next(),
            segments.next(),
            segments.next(),
        ) else {
            return Err(Error::NotFound);
        };
        let endpoint = match last {
            "mcp" => Endpoint::Mcp,
            "sse" | "messages" => Endpoint::LegacySse,
            "tools" => Endpoint::Rest,
            _ => return Err(Error::NotFound),
        };
        let view = snapshot.client(tenant, client).ok_or(Error::NotFound)?;
        let resource = prm::resource_url(&self.public_base, path);
        let name = format!("sluice {tenant}/{client} ({})", endpoint.surface().as_str());
        Ok(prm::document(&resource, view.auth(), &name))
    }

    async fn audit_failure(
        &self,
        parts: &Parts,
        view: &ClientView,
        endpoint: Endpoint,
        err: &AuthError,
        started: Option<Instant>,
    ) {
        let Some(started) = started else {
            return;
        };
        let mut record = Record::new(
            endpoint.surface(),
            CallType::AuthFailure,
            view.tenant().into(),
            view.client().into(),
            "".into(),
        )
        .with_outcome(
            Outcome::Denied,
            Some(
                if err.is_forbidden() {
                    "403"
                } else if err.is_bad_request() {
                    "400"
                } else {
                    "401"
                }
                .to_owned(),
            ),
        )
        .with_duration(started.elapsed())
        .with_detail(err.to_string());
        record.external_correlation_id =
            external_from_headers(&parts.headers).map(|id| id.as_str().to_owned());
        self.audit.record(record).await;
    }
}

/// The key id of the request's API key (`Authorization: Bearer rtk_…` or `X-API-Key`), if any.
fn platform_key_id(headers: &http::HeaderMap) -> Option<&str> {
    let token = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .or_else(|| headers.get(auth::X_API_KEY).and_then(|v| v.to_str().ok()))?;
    auth::apikey::parse(token.trim()).ok().map(|key| key.id)
}

/// The tenant and client application a bearer JWT names, read from its (not yet verified)
/// payload: the issuer picks the tenant, the tenant's `client_claim` the client application.
/// Only routing: the token is then verified in full against that client (signature, issuer,
/// audience = the platform endpoint's URL, `client_claim`), so a forged payload routes nowhere
/// useful.
fn jwt_owner(headers: &http::HeaderMap, snapshot: &Snapshot) -> Option<crate::catalog::ClientKey> {
    use base64::Engine as _;
    let token = headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")?;
    let mut segments = token.trim().split('.');
    let (Some(_), Some(payload), Some(_), None) = (
        segments.next(),
        segments.next(),
        segments.next(),
        segments.next(),
    ) else {
        return None;
    };
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&payload).ok()?;
    let issuer = claims.get("iss")?.as_str()?;
    let view = snapshot.jwt_client(issuer, |claim| claims.get(claim)?.as_str())?;
    Some(crate::catalog::ClientKey {
        tenant: Arc::clone(view.tenant_id()),
        client: Arc::clone(view.client_id()),
    })
}

fn has_credential(headers: &http::HeaderMap) -> bool {
    headers.contains_key(http::header::AUTHORIZATION) || headers.contains_key(auth::X_API_KEY)
}

/// 400: the request's credentials contradict each other (no challenge: no credential would fix
/// a request that carries two).
fn bad_credentials(err: &AuthError) -> Error {
    Error::BadRequest(err.description())
}

/// 404 with a JSON-RPC body: no such tenant or client application.
pub(crate) fn unknown_client() -> Error {
    Error::UnknownClient
}
