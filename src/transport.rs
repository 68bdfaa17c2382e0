//! MCP over HTTP: Streamable HTTP in both protocol eras ([`streamable`], which classifies each
//! request and hands it to [`handshake`] or [`stateless`]) and the deprecated 2024-11-05
//! HTTP+SSE transport ([`legacy_sse`]).
//!
//! Owns the HTTP side of MCP: routing headers, sessions as seen on the wire (`Mcp-Session-Id`),
//! JSON-or-SSE answers, in-flight cancellation, and the wiring of streams to the live stream
//! registry ([`stream`], owned by the session work). Must not implement MCP methods: every
//! message goes to [`crate::mcp::Dispatcher`].
//!
//! The hot path answers a request whose reply is ready at once **inline**: the dispatch future runs
//! in the connection's own task and the reply is one JSON body or a few known SSE frames
//! (`Body::frames`), with no spawned task and no channel (`docs/hot-path.md`). Only streams that
//! stay open (GET, `subscriptions/listen`, the legacy `/sse`, a session's SSE-answered `tools/call`
//! that has to wait) are fed through a channel, bounded in frames and bytes
//! (`stream_queue_messages`, `stream_queue_bytes`).

pub(crate) mod handshake;
pub(crate) mod headers;
pub(crate) mod inflight;
pub(crate) mod legacy_sse;
pub(crate) mod owned;
pub(crate) mod progress;
pub(crate) mod reply;
pub(crate) mod source_results;
pub(crate) mod stateless;
pub mod stream;
pub(crate) mod streamable;

use std::sync::Arc;
use std::time::Duration;

use http::HeaderName;

use crate::access::Access;
use crate::audit::{Audit, CallType, Outcome, Record, Surface};
use crate::catalog::Catalog;
pub use crate::config::PostFraming;
use crate::http::Drain;
use crate::log_limit::{warn_limited, Kind};
use crate::mcp::Dispatcher;
use crate::metrics::Metrics;
use crate::session::{Bus, Owner, SessionError, SessionId, Sessions};
use stream::StreamRegistry;

/// Default interval between `: keepalive` comments on an idle SSE stream; a stream idle this
/// long gets one so proxies and clients do not time it out.
pub(crate) const DEFAULT_SSE_KEEPALIVE: Duration = Duration::from_secs(15);

/// The `MCP-Protocol-Version` request header.
pub(crate) const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// The `Mcp-Session-Id` header (request and `initialize` response).
pub(crate) const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// The stateless-era `Mcp-Method` request header.
pub(crate) const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// The stateless-era `Mcp-Name` request header.
pub(crate) const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
/// The `Last-Event-ID` request header of a resuming GET.
pub(crate) const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// The `_meta` key naming a stateless-era request's protocol version.
pub(crate) const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// What the MCP endpoints need from the server configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Origins allowed besides the server's own (exact, case-insensitive).
    pub allowed_origins: Vec<String>,
    /// How handshake-era requests are answered on `/runtime/{tenant}/{client}/mcp` when the
    /// client accepts both media types: SSE (default) or JSON. The stateless era and the BOS
    /// platform endpoint answer JSON unless the reply streams, whatever this says.
    pub post_framing: PostFraming,
    /// Largest request body; larger → 413.
    pub max_body_bytes: usize,
    /// Longest pause between two chunks of a request body; longer → 408.
    pub body_read_timeout: Duration,
    /// Limits of message parsing (nesting depth; deeper → 400, -32700).
    pub json_limits: crate::jsonrpc::Limits,
    /// Mint sessions on `initialize`.
    pub sessions_enabled: bool,
    /// A handshake-era request other than `initialize` without `Mcp-Session-Id` → 400.
    pub require_session: bool,
    /// Serve the standalone GET stream and the legacy `/sse` transport (405 otherwise).
    pub sse_enabled: bool,
    /// Interval between `: keepalive` comments on idle streams.
    pub keepalive: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            allowed_origins: Vec::new(),
            post_framing: PostFraming::Sse,
            max_body_bytes: crate::http::body::DEFAULT_MAX_BODY_BYTES,
            body_read_timeout: crate::http::body::DEFAULT_BODY_READ_TIMEOUT,
            json_limits: crate::jsonrpc::Limits::DEFAULT,
            sessions_enabled: true,
            require_session: false,
            sse_enabled: true,
            keepalive: DEFAULT_SSE_KEEPALIVE,
        }
    }
}

/// Everything the MCP transports share; one per server, read-only after start apart from the
/// concurrent maps inside.
#[derive(Debug)]
pub struct Transport {
    /// Endpoint settings.
    pub settings: Settings,
    /// The live catalog; each request reads the current snapshot once, at its start.
    pub catalog: Arc<Catalog>,
    /// The MCP method table.
    pub dispatcher: Arc<Dispatcher>,
    /// The server's drain signal: channel-fed streams end at a frame boundary when it fires.
    pub drain: Drain,
    /// Session records (validation on every handshake-era request).
    pub sessions: Sessions,
    /// The live streams of this instance (GET, POST answers, listen, legacy).
    pub streams: StreamRegistry,
    /// How messages reach streams held by other instances (process-local without a cluster).
    pub bus: Bus,
    /// Handshake-era requests in flight per session, for `notifications/cancelled`.
    pub inflight: inflight::InFlight<SessionId>,
    /// The request gate: challenges, per-tool scopes, metadata URLs.
    pub access: Arc<Access>,
    /// The audit trail (session rejections are security events).
    pub audit: Audit,
    /// Process metrics (active sessions and streams per tenant).
    pub metrics: Arc<Metrics>,
}

impl Transport {
    /// The HTTP error of a failed session lookup. A session owned by another tenant, client or
    /// caller ([`SessionError::Foreign`]) is answered exactly like an unknown one (404) and
    /// recorded as a `session_rejected` security event: someone presented a live session id
    /// that is not theirs.
    pub(crate) async fn session_failure(
        &self,
        err: SessionError,
        owner: Owner<'_>,
        session: &SessionId,
        surface: Surface,
    ) -> crate::http::Error {
        if err == SessionError::Foreign {
            // Rate-limited per tenant (the audit record, when enabled, is not).
            warn_limited!(
                owner.tenant,
                Kind::ForeignSession,
                client = owner.client,
                caller = owner.caller,
                surface = surface.as_str(),
                "request named a session owned by another caller"
            );
            if self.audit.is_enabled() {
                let record = Record::new(
                    surface,
                    CallType::SessionRejected,
                    owner.tenant.into(),
                    owner.client.into(),
                    owner.caller.into(),
                )
                .with_session(session.encode().as_str())
                .with_outcome(Outcome::Rejected, Some("404".to_owned()))
                .with_detail("session owned by another tenant, client or caller");
                self.audit.record(record).await;
            }
        }
        handshake::session_error(err)
    }
}

/// The call context of one MCP message: its external correlation id and, with telemetry on,
/// its trace (the HTTP and `params._meta` trace contexts, the JSON-RPC id for the server span).
pub(crate) fn call_context(
    transport: &Transport,
    parts: &http::request::Parts,
    external: Option<crate::invoke::correlation::ExternalCorrelationId>,
    message: &crate::jsonrpc::Message<'_>,
) -> crate::invoke::CallContext {
    use crate::jsonrpc::Message;
    let (id, params) = match message {
        Message::Request { id, params, .. } => (Some(id as &dyn std::fmt::Display), params),
        Message::Notification { params, .. } => (None, params),
        _ => (None, &None),
    };
    let meta = crate::mcp::trace_context(params.as_ref());
    crate::invoke::CallContext::new(external).traced(transport.access.trace_message(
        &parts.headers,
        meta,
        id,
    ))
}
