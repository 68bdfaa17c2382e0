//! MCP methods over JSON-RPC: the dispatcher, every method family, `_meta` parsing, version
//! negotiation, and the era rules for result shapes.
//!
//! STUB API: the signatures below are the seam the transport codes against; the mcp work fills
//! the bodies (one file per method family: `lifecycle.rs`, `tools.rs`, `resources.rs`,
//! `prompts.rs`, `meta.rs`, `era.rs`, …) and may add items, keeping these names.
//! Must not touch sockets or HTTP types: it sees a method name, a params payload and a [`Scope`].

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;

use crate::catalog::Snapshot;
use crate::invoke::{CallContext, Invoker};
use crate::jsonrpc::{ErrorCode, Payload};

/// The handshake-era protocol versions this runtime implements, newest first.
pub const HANDSHAKE_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// The stateless-era protocol versions this runtime implements, newest first.
pub const STATELESS_VERSIONS: &[&str] = &["2026-07-28"];
/// The version assumed when a handshake-era request names none and has no session.
pub const DEFAULT_HANDSHAKE_VERSION: &str = "2025-03-26";

/// Which protocol era a request belongs to (protocol/mcp.md §6.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2024-11-05 … 2025-11-25: `initialize`, optional sessions.
    Handshake,
    /// 2026-07-28: per-request `_meta`, no sessions.
    Stateless,
}

/// Everything a method needs to know about the caller; built by the transport per request.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// Tenant id from the path.
    pub tenant: &'a str,
    /// Client application id from the path.
    pub client: &'a str,
    /// The catalog snapshot read at the start of the request.
    pub snapshot: &'a Snapshot,
    /// The request's era.
    pub era: Era,
    /// The protocol version in force: the session's negotiated one, the header's, or the
    /// stateless `_meta` version.
    pub version: &'a str,
    /// Correlation ids of this call.
    pub call: &'a CallContext,
}

/// Server identity and advertised extras, from configuration.
#[derive(Debug, Clone)]
pub struct DispatcherConfig {
    /// `serverInfo.name`.
    pub server_name: String,
    /// `serverInfo.version`.
    pub server_version: String,
    /// `instructions` in `initialize` / `server/discover`, when set.
    pub instructions: Option<String>,
    /// Page size of `tools/list`, `resources/list`, `prompts/list` (cursor pagination).
    pub page_size: usize,
    /// `ttlMs` on cacheable stateless-era results.
    pub ttl_ms: u64,
}

impl Default for DispatcherConfig {
    fn default() -> Self {
        Self {
            server_name: "sluice".to_owned(),
            server_version: env!("CARGO_PKG_VERSION").to_owned(),
            instructions: None,
            page_size: 100,
            ttl_ms: 0,
        }
    }
}

/// What a successful request produced.
#[derive(Debug)]
pub enum Reply {
    /// The `result` object as JSON bytes (no JSON-RPC envelope; the transport adds it).
    Result(Bytes),
    /// `initialize` succeeded: the result plus what the transport stores in the new session.
    Initialized {
        /// The `result` object as JSON bytes.
        result: Bytes,
        /// The negotiated version (one of [`HANDSHAKE_VERSIONS`]).
        version: &'static str,
        /// The client's `clientInfo` as JSON bytes.
        client_info: Bytes,
        /// The client's `capabilities` as JSON bytes.
        client_capabilities: Bytes,
    },
}

/// What a client notification asks the transport to do.
#[derive(Debug, PartialEq, Eq)]
pub enum NotificationEffect {
    /// Nothing beyond the 202.
    None,
    /// `notifications/initialized`: mark the session initialized.
    Initialized,
    /// `notifications/cancelled`: stop the in-flight request with this id (its JSON text).
    Cancel(Bytes),
}

/// A request-level MCP failure; the transport maps it to a status (era rules) and writes the
/// JSON-RPC error with [`McpError::code`], the message and [`McpError::data`].
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// -32601, unknown method (stateless era: HTTP 404; handshake era: HTTP 200).
    #[error("method not found: {0}")]
    MethodNotFound(String),
    /// -32602, invalid params (unknown tool, bad cursor, missing argument…).
    #[error("{0}")]
    InvalidParams(Cow<'static, str>),
    /// A required stateless-era `_meta` key is missing (-32602, HTTP 400).
    #[error("missing required _meta key {0}")]
    MissingMeta(&'static str),
    /// -32022, unsupported stateless-era version (HTTP 400), `data: {supported, requested}`.
    #[error("unsupported protocol version {requested}")]
    UnsupportedVersion {
        /// The version the request named.
        requested: String,
    },
    /// Resource not found: -32002 in the handshake era, -32602 with `data.uri` in 2026.
    #[error("resource not found: {uri}")]
    ResourceNotFound {
        /// The URI asked for.
        uri: String,
        /// The request's era (decides the code).
        era: Era,
    },
    /// -32603.
    #[error("internal error")]
    Internal,
}

impl McpError {
    /// The JSON-RPC code.
    pub fn code(&self) -> ErrorCode {
        match self {
            McpError::MethodNotFound(_) => ErrorCode::METHOD_NOT_FOUND,
            McpError::InvalidParams(_) | McpError::MissingMeta(_) => ErrorCode::INVALID_PARAMS,
            McpError::UnsupportedVersion { .. } => ErrorCode(-32022),
            McpError::ResourceNotFound {
                era: Era::Handshake,
                ..
            } => ErrorCode(-32002),
            McpError::ResourceNotFound { .. } => ErrorCode::INVALID_PARAMS,
            McpError::Internal => ErrorCode::INTERNAL_ERROR,
        }
    }

    /// The `data` member as JSON bytes, when the error has one.
    pub fn data(&self) -> Option<Bytes> {
        None
    }
}

/// The method table: one instance per server, shared by every transport.
#[derive(Debug)]
pub struct Dispatcher {
    #[allow(dead_code)]
    config: DispatcherConfig,
    #[allow(dead_code)]
    invoker: Arc<Invoker>,
}

impl Dispatcher {
    /// A dispatcher calling downstreams through `invoker`.
    pub fn new(config: DispatcherConfig, invoker: Arc<Invoker>) -> Self {
        Self { config, invoker }
    }

    /// Handles one request. `tools/call` awaits the downstream; dropping the future cancels it.
    pub async fn request(
        &self,
        _scope: &Scope<'_>,
        method: &str,
        _params: Option<&Payload<'_>>,
    ) -> Result<Reply, McpError> {
        match method {
            "ping" => Ok(Reply::Result(Bytes::from_static(b"{}"))),
            other => Err(McpError::MethodNotFound(other.to_owned())),
        }
    }

    /// Handles one client notification.
    pub fn notification(
        &self,
        _scope: &Scope<'_>,
        method: &str,
        _params: Option<&Payload<'_>>,
    ) -> NotificationEffect {
        match method {
            "notifications/initialized" => NotificationEffect::Initialized,
            _ => NotificationEffect::None,
        }
    }

    /// The JSON of a server→client notification `notifications/tools/list_changed` (a whole
    /// JSON-RPC message), for the given era (stateless-era listen streams add the subscription
    /// id in `_meta`).
    pub fn list_changed_message(&self, _era: Era, _subscription_id: Option<&[u8]>) -> Bytes {
        Bytes::from_static(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}")
    }
}
