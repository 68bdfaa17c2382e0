//! `[[tenant]]` and what it nests besides tools: client applications and their API keys,
//! authentication (`[tenant.auth]`, JWT), toolsets with their prompt and correlation settings,
//! and assignments of toolsets to clients.
//!
//! Owns the serde shapes and their defaults. Must not resolve references (an assignment naming
//! an unknown client is `validate/tenant.rs`'s to report) or compute prompts (that is
//! `catalog/prompt.rs`).

use serde::Deserialize;

use super::Tool;

/// A tenant: its client applications, toolsets and assignments.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tenant {
    /// Tenant id, a path segment: `[A-Za-z0-9._-]{1,64}`.
    pub id: String,
    /// Client applications of this tenant.
    #[serde(default, rename = "client")]
    pub clients: Vec<ClientApp>,
    /// Toolsets of this tenant.
    #[serde(default, rename = "toolset")]
    pub toolsets: Vec<Toolset>,
    /// Which toolsets each client application sees.
    #[serde(default, rename = "assignment")]
    pub assignments: Vec<Assignment>,
    /// How callers of this tenant authenticate.
    #[serde(default)]
    pub auth: TenantAuth,
    /// Contexts callers may act in on the BOS platform endpoint (`/mcp/apps/bos/platform`).
    #[serde(default, rename = "bos_context")]
    pub bos_contexts: Vec<crate::bos::BosContextConfig>,
    /// How fast the tenant's tools may be called (`[[tenant.rate_limit]]`).
    #[serde(default, rename = "rate_limit")]
    pub rate_limits: Vec<super::RateLimitRule>,
    /// A2A settings (`[tenant.a2a]`).
    #[serde(default)]
    pub a2a: super::TenantA2a,
    /// Remote A2A agents registered for this tenant (`[[tenant.a2a_agent]]`).
    #[serde(default, rename = "a2a_agent")]
    pub a2a_agents: Vec<super::RemoteAgentConfig>,
}

/// A tenant's authentication settings. A tenant must either accept some credential (an API key
/// of one of its clients, or JWTs from `jwt`) or say `anonymous = true` explicitly.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct TenantAuth {
    /// Serve requests that carry no credential, as the caller `anonymous` (development only;
    /// a credential that is presented is still checked).
    pub anonymous: bool,
    /// Authorization server issuers published in protected-resource metadata
    /// (`authorization_servers`).
    pub authorization_servers: Vec<String>,
    /// Scopes published in protected-resource metadata (keep it minimal; privileged scopes are
    /// asked for through 403 challenges).
    pub scopes_supported: Vec<String>,
    /// Scopes every request to this tenant's endpoints needs (also named in 401 challenges).
    pub required_scopes: Vec<String>,
    /// JWT bearer tokens from an OAuth authorization server.
    pub jwt: Option<JwtSettings>,
}

/// How JWT bearer tokens are validated.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtSettings {
    /// The exact `iss` tokens must carry.
    pub issuer: String,
    /// Accepted `aud` values; empty (the default) means the exact public URLs of the endpoint
    /// the token is presented to (`…/runtime/{tenant}/{client}/mcp`, `…/sse`, `…/messages`,
    /// `…/tools`), so a token for one client application cannot be replayed on another's.
    #[serde(default)]
    pub audiences: Vec<String>,
    /// Accepted signature algorithms (`RS256`, `RS384`, `RS512`, `PS256`, `PS384`, `PS512`,
    /// `ES256`, `ES384`, `EdDSA`); `none` and `HS*` are refused at load.
    #[serde(default = "default_algorithms")]
    pub algorithms: Vec<String>,
    /// A JWKS file on disk.
    pub jwks_file: Option<String>,
    /// A JWKS URL (fetched at start, cached, refetched on an unknown `kid` at most once a
    /// minute; the last good set is kept when a fetch fails).
    pub jwks_url: Option<String>,
    /// Clock skew allowed on `exp` and `nbf`, in seconds.
    #[serde(default = "default_leeway")]
    pub leeway_secs: u64,
    /// When set, this claim must equal the client application id of the path (for issuers that
    /// cannot put the endpoint URL in `aud`), e.g. `azp` or `client_id`.
    pub client_claim: Option<String>,
}

fn default_algorithms() -> Vec<String> {
    ["RS256", "PS256", "ES256", "EdDSA"]
        .into_iter()
        .map(str::to_owned)
        .collect()
}

fn default_leeway() -> u64 {
    60
}

/// A client application (an AI client or agent registered with the tenant).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientApp {
    /// Client id, a path segment: `[A-Za-z0-9._-]{1,64}`.
    pub id: String,
    /// Static API keys of this client application (several for rotation).
    #[serde(default, rename = "api_key")]
    pub api_keys: Vec<ApiKey>,
    /// Client certificates (mTLS, `[server.tls] client_auth`) that authenticate as callers of
    /// this client application.
    #[serde(default, rename = "certificate")]
    pub certificates: Vec<ClientCertificateRule>,
    /// The client application's system prompt.
    pub system_prompt: Option<String>,
    /// How the client application presents itself as an A2A agent (`[tenant.client.agent]`).
    #[serde(default)]
    pub agent: super::AgentSettings,
}

/// One static API key. Clients present `rtk_{id}_{secret}`; the configuration keeps only
/// `hash` = hex HMAC-SHA256(pepper, secret) (`sluice key new` prints both).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKey {
    /// The public key id (12 characters of lowercase base32), unique within the tenant.
    pub id: String,
    /// Hex HMAC-SHA256 of the secret under the server's pepper (64 hex digits).
    pub hash: String,
    /// The caller name audit records and sessions show (`apikey:{id}` when unset).
    pub principal: Option<String>,
    /// Scopes this key grants; unset grants every scope.
    pub scopes: Option<Vec<String>>,
    /// When the key stops working (a TOML date-time, e.g. `2027-01-01T00:00:00Z`).
    pub expires_at: Option<toml::value::Datetime>,
}

/// One client certificate identity (`[[tenant.client.certificate]]`): a verified client
/// certificate whose subject common name is `subject`, or which carries the subject alternative
/// name `san` (written `dns:…`, `uri:…`, `email:…` or `ip:…`), authenticates as the caller
/// `mtls:{principal}`. Exactly one of `subject` and `san`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientCertificateRule {
    /// The subject common name (`CN`) to match.
    pub subject: Option<String>,
    /// A subject alternative name to match, e.g. `uri:spiffe://acme/agent-7`.
    pub san: Option<String>,
    /// The caller name (`mtls:{principal}`); the matched name when unset.
    pub principal: Option<String>,
    /// Scopes the certificate grants; unset grants every scope.
    pub scopes: Option<Vec<String>>,
}

/// A toolset: tools plus the prompt and correlation strategy they share.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Toolset {
    /// Toolset id, unique within the tenant.
    pub id: String,
    /// Human-readable description (used for the resource and prompt descriptions).
    pub description: Option<String>,
    /// The toolset's default system prompt.
    pub system_prompt: Option<String>,
    /// What correlation id reaches the downstream.
    #[serde(default)]
    pub correlation: Correlation,
    /// The default `max_result_bytes` of its tools (a tool's own wins).
    #[serde(default)]
    pub max_result_bytes: Option<usize>,
    /// The default `on_oversize` of its tools (a tool's own wins).
    #[serde(default)]
    pub on_oversize: Option<super::OversizePolicy>,
    /// The tools.
    #[serde(default, rename = "tool")]
    pub tools: Vec<Tool>,
}

/// Correlation propagation settings of a toolset.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Correlation {
    /// The strategy.
    pub strategy: CorrelationStrategy,
    /// The header the downstream receives it in.
    pub header: String,
}

impl Default for Correlation {
    fn default() -> Self {
        Self {
            strategy: CorrelationStrategy::ExecutionId,
            header: "X-Correlation-Id".to_owned(),
        }
    }
}

/// What, if anything, is forwarded to the downstream as a correlation id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum CorrelationStrategy {
    /// Nothing is forwarded.
    None,
    /// The execution id the runtime generated for the call.
    #[default]
    ExecutionId,
    /// The accepted external id when the client sent one, else the execution id.
    ExternalOrExecutionId,
}

/// A toolset assigned to a client application.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Assignment {
    /// The client application id.
    pub client: String,
    /// The toolset id.
    pub toolset: String,
    /// Whether the client application's system prompt joins the effective prompt.
    #[serde(default)]
    pub include_client_prompt: bool,
    /// An assignment-specific prompt.
    pub custom_prompt: Option<String>,
    /// How the custom prompt combines with the default chain.
    #[serde(default)]
    pub custom_prompt_mode: PromptMode,
}

/// How an assignment's custom prompt combines with the default chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum PromptMode {
    /// After the default chain.
    #[default]
    Append,
    /// Instead of the default chain.
    Override,
}
