//! `[[tenant.a2a_agent]]`: a remote A2A agent an administrator registered for a tenant, which
//! the concentrator republishes and proxies (`a2a/remote.rs`).
//!
//! Owns the serde shapes and their defaults; `validate/a2a_agent.rs` checks them (and that
//! every secret resolves). Secrets are named here (an environment variable or a file), never
//! written in the file; `env.rs` reads them. Must not fetch cards or talk to agents.

use serde::Deserialize;

use super::CorrelationStrategy;

/// One registered remote agent.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RemoteAgentConfig {
    /// The agent id: `^[a-z0-9][a-z0-9-]{0,62}$`, unique per tenant, part of its URLs.
    pub id: String,
    /// The absolute `http`/`https` URL of the upstream agent card.
    pub card_url: String,
    /// Served (off: every URL of the agent answers 404).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The client applications of this tenant that may reach the agent (others get 404).
    #[serde(default)]
    pub clients: Vec<String>,
    /// How the runtime authenticates to the upstream (the caller's credential never leaves).
    #[serde(default)]
    pub upstream_auth: UpstreamAuth,
    /// Connect timeout, in milliseconds.
    #[serde(default = "default_connect_ms")]
    pub connect_ms: u64,
    /// Time limit of one upstream request/response exchange, in milliseconds (a stream's
    /// head only: streams are bounded by `stream_idle_ms`).
    #[serde(default = "default_request_ms")]
    pub request_ms: u64,
    /// Longest quiet time of an upstream event stream, in milliseconds.
    #[serde(default = "default_stream_idle_ms")]
    pub stream_idle_ms: u64,
    /// How often the card is fetched again (`If-None-Match`), in seconds (at least 10).
    #[serde(default = "default_card_refresh_secs")]
    pub card_refresh_secs: u64,
    /// Also publish the agent to MCP clients of the assigned clients as the tool `ask_{id}`
    /// (its `-` as `_`): `message` in, the task's final state and artifacts out
    /// (`a2a/remote/ask.rs`).
    #[serde(default)]
    pub expose_as_tool: bool,
    /// `A2A-Extensions` URIs a caller may ask the upstream for (others are not forwarded).
    #[serde(default)]
    pub allowed_extensions: Vec<String>,
    /// Largest upstream answer (a card, a JSON response, one stream event), in bytes.
    #[serde(default = "default_max_response_bytes")]
    pub max_response_bytes: usize,
    /// What the upstream receives as correlation id.
    #[serde(default)]
    pub correlation: CorrelationStrategy,
    /// The header it is sent in.
    #[serde(default = "default_correlation_header")]
    pub correlation_header: String,
}

/// Where a secret comes from: exactly one of an environment variable or a file.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct SecretRef {
    /// The environment variable holding the secret.
    pub secret_env: Option<String>,
    /// A file holding the secret (read at start and on reload, at most 64 KiB, trimmed).
    pub secret_file: Option<String>,
}

/// How the runtime authenticates to an upstream agent.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq, Default)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum UpstreamAuth {
    /// No credential.
    #[default]
    None,
    /// `Authorization: Bearer <secret>`.
    Bearer {
        secret_env: Option<String>,
        secret_file: Option<String>,
    },
    /// `<header>: <secret>`.
    ApiKey {
        header: String,
        secret_env: Option<String>,
        secret_file: Option<String>,
    },
    /// OAuth 2.0 client credentials (RFC 6749 §4.4): the token is fetched from `token_url`
    /// and cached until it expires.
    Oauth2ClientCredentials {
        token_url: String,
        client_id: String,
        /// The client secret (`secret_env` or `secret_file`).
        secret_env: Option<String>,
        secret_file: Option<String>,
        #[serde(default)]
        scopes: Vec<String>,
        audience: Option<String>,
    },
}

impl UpstreamAuth {
    /// The secret this scheme needs, if any.
    pub fn secret(&self) -> Option<SecretRef> {
        match self {
            UpstreamAuth::None => None,
            UpstreamAuth::Bearer {
                secret_env,
                secret_file,
            }
            | UpstreamAuth::ApiKey {
                secret_env,
                secret_file,
                ..
            }
            | UpstreamAuth::Oauth2ClientCredentials {
                secret_env,
                secret_file,
                ..
            } => Some(SecretRef {
                secret_env: secret_env.clone(),
                secret_file: secret_file.clone(),
            }),
        }
    }
}

fn yes() -> bool {
    true
}
fn default_connect_ms() -> u64 {
    3_000
}
fn default_request_ms() -> u64 {
    120_000
}
fn default_stream_idle_ms() -> u64 {
    300_000
}
fn default_card_refresh_secs() -> u64 {
    300
}
fn default_max_response_bytes() -> usize {
    4 * 1024 * 1024
}
fn default_correlation_header() -> String {
    "X-Correlation-Id".to_owned()
}
