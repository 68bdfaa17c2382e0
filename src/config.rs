//! The configuration: what `sluice.toml` says, with the environment's overrides, and whether it
//! means something.
//!
//! [`load`] reads the file (`load.rs`: bounded, syntax errors with line and column), applies
//! the environment's overrides (`env.rs`: the one place configuration is read from the
//! environment) and returns the [`Config`]; [`parse`] does the same for text, without the
//! environment. [`validate()`] reports every problem of a configuration, located
//! `tenant 'acme' / toolset 'crm' / tool 'get' / field 'id'`, one function per level of the
//! file (`validate/{server,cluster,tenant,client,tool,field}.rs`); what only the catalog's
//! compilers can tell (schema structure, invocation plans) it asks of a [`ToolCompiler`].
//!
//! The model is one file per level: `server.rs` (`[server]`), `audit.rs` and `logging.rs` (its
//! `audit` and `log` tables), `cluster.rs` (`[cluster]`), `tenant.rs` (`[[tenant]]`: clients,
//! keys, auth, toolsets, assignments), `tool.rs` (tools, downstreams, field rules), `soap.rs` (SOAP downstreams), `tls.rs` (`[server.tls]`),
//! `rate_limit.rs` (`[[tenant.rate_limit]]`, `[server.auth_failures]`), `telemetry.rs`
//! (`[telemetry]`), `path.rs`
//! (field paths as rules write them). Every type is re-exported here: callers name
//! `crate::config::ServerSettings`, never the file it lives in.
//!
//! Must not resolve a configuration into what requests read (that is `crate::catalog`), start
//! anything, or read the environment outside `env.rs`.

mod a2a;
mod a2a_agent;
mod audit;
mod cluster;
mod env;
mod load;
mod logging;
mod path;
mod rate_limit;
mod server;
mod soap;
mod telemetry;
mod tenant;
mod tls;
mod tool;
mod validate;

use std::path::Path;

use serde::Deserialize;

pub use a2a::{A2aSettings, AgentSettings, TenantA2a};
pub use a2a_agent::{RemoteAgentConfig, SecretRef, UpstreamAuth};
pub use audit::{AuditSettings, AuditSink, AuditWhenFull};
pub use env::Overrides;
pub use load::{parse, LoadError, SyntaxError};
pub use logging::{LogFormat, LogSettings};
pub use path::{FieldPath, PathError, Segment};
pub use rate_limit::{AuthFailureSettings, FailPolicy, RateDimension, RateLimitRule};
pub use server::{PostFraming, ServerSettings, SourceResultsSettings};
pub use soap::{SoapDownstream, SoapHeader, SoapHeaderField, SoapStyle, SoapVersion, WsSecurity};
pub use telemetry::{OtlpProtocol, TelemetrySettings};
pub use tenant::{
    ApiKey, Assignment, ClientApp, ClientCertificateRule, Correlation, CorrelationStrategy,
    JwtSettings, PromptMode, Tenant, TenantAuth, Toolset,
};
pub use tls::{ClientAuth, TlsSettings};
pub use tool::{
    Downstream, FederatedDownstream, FieldRule, FieldType, Location, OversizePolicy,
    RestDownstream, SchemaMode, Source, SourceCredential, SourceFields, Tool,
};
pub use validate::{validate, CompileProblem, Loc, Problem, Report, ToolCompiler, Validated};

pub(crate) use cluster::ClusterSettings;
pub(crate) use env::resolve_secret;
pub(crate) use rate_limit::Rate;
pub(crate) use tool::{DISCOVERY_PLACEHOLDER, DISCOVER_TOOL_NAME};
pub(crate) use validate::{is_valid_key_id, API_KEY_ID_LEN};

/// The whole configuration file.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Server settings (listen address, limits, admin token).
    #[serde(default)]
    pub server: ServerSettings,
    /// Several instances sharing sessions and stream routing through Redis.
    #[serde(default)]
    pub cluster: ClusterSettings,
    /// OpenTelemetry traces (read once, at start).
    #[serde(default)]
    pub telemetry: TelemetrySettings,
    /// Tenants, in file order.
    #[serde(default, rename = "tenant")]
    pub tenants: Vec<Tenant>,
}

/// The configuration this process runs with: the file at `path`, read and parsed, with the
/// environment's [`Overrides`] applied. Not validated yet.
pub fn load(path: &Path) -> Result<Config, LoadError> {
    let mut config = load::read(path)?;
    Overrides::from_env().apply(&mut config);
    Ok(config)
}
