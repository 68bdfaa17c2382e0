//! Validation of a parsed configuration: every problem, each with its location.
//!
//! Owns the meaning checks (ids, names, references, field rules, schema structure) and runs
//! `ToolPlan::compile` for every tool, keeping the compiled plans so the snapshot never compiles
//! twice. Must not build snapshots or do IO. Problems read
//! `tenant 'acme' / toolset 'crm' / tool 'get_customer' / field 'client.id': …`.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use super::load::LoadError;
use super::model::{Config, FieldRule, FieldType, Tool};
use super::path::FieldPath;
use super::plan::ToolPlan;
use super::schema::{self, Tree, DISCOVERY_PLACEHOLDER, DISCOVER_TOOL_NAME};

/// Most segments a field path may have. Deeper paths are refused (they would only make schemas
/// and translation recurse deeper).
pub const MAX_PATH_SEGMENTS: usize = 32;

/// Longest tenant, client or toolset id (path-segment rule `[A-Za-z0-9._-]{1,64}`).
pub const MAX_ID_LEN: usize = 64;

/// Longest tool name (MCP rule `[A-Za-z0-9_.-]{1,128}`).
pub const MAX_TOOL_NAME_LEN: usize = 128;

/// Where a problem is: a chain of `kind 'name'` steps from the file down.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Loc {
    steps: Vec<(&'static str, String)>,
}

impl Loc {
    /// The empty location (the whole file).
    pub fn root() -> Self {
        Self::default()
    }

    /// This location extended by one step, e.g. `.with("tenant", "acme")`.
    pub fn with(&self, kind: &'static str, name: impl Into<String>) -> Self {
        let mut steps = self.steps.clone();
        steps.push((kind, name.into()));
        Self { steps }
    }

    /// The steps, outermost first.
    pub fn steps(&self) -> &[(&'static str, String)] {
        &self.steps
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (kind, name)) in self.steps.iter().enumerate() {
            if i > 0 {
                f.write_str(" / ")?;
            }
            write!(f, "{kind} '{name}'")?;
        }
        Ok(())
    }
}

/// One problem of a configuration.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Problem {
    /// Where.
    pub loc: Loc,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.loc.steps.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.loc, self.message)
        }
    }
}

/// Every problem found in a configuration (never empty when returned as an error).
#[derive(Debug, Clone, Default, PartialEq, Eq, thiserror::Error)]
pub struct Report {
    /// The problems, in file order.
    pub problems: Vec<Problem>,
}

impl Report {
    fn push(&mut self, loc: &Loc, message: impl Into<String>) {
        self.problems.push(Problem {
            loc: loc.clone(),
            message: message.into(),
        });
    }

    /// Pushes a plan problem unless the catalog's own checks already reported the same message, or
    /// any problem for the same field, at index `since` or later: the plan compiler re-checks paths
    /// the catalog checks too, and one problem should be reported once, in the catalog's words.
    fn push_once(&mut self, since: usize, loc: &Loc, message: String) {
        let field = loc
            .steps()
            .last()
            .filter(|(kind, _)| kind.ends_with("field"));
        let seen = self.problems.get(since..).is_some_and(|recent| {
            recent.iter().any(|p| {
                (p.loc == *loc && p.message == message)
                    || field.is_some_and(|(_, name)| {
                        p.loc
                            .steps()
                            .last()
                            .is_some_and(|(kind, other)| kind.ends_with("field") && other == name)
                    })
            })
        });
        if !seen {
            self.push(loc, message);
        }
    }
}

impl fmt::Display for Report {
    /// One problem per line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl From<LoadError> for Report {
    fn from(err: LoadError) -> Self {
        Report {
            problems: vec![Problem {
                loc: Loc::root(),
                message: err.to_string(),
            }],
        }
    }
}

/// A configuration that passed validation, with every tool's compiled plan.
#[derive(Debug)]
pub struct Validated {
    /// `plans[tenant][toolset][tool]`, in file order.
    pub plans: Vec<Vec<Vec<Arc<ToolPlan>>>>,
}

/// Whether `id` is a valid tenant/client/toolset id: `[A-Za-z0-9._-]{1,64}`.
pub fn is_valid_id(id: &str) -> bool {
    (1..=MAX_ID_LEN).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// `[cluster]`: a Redis URL the client can use, and limits that make sense.
fn check_cluster(report: &mut Report, cluster: &super::model::ClusterSettings) {
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
}

/// `[server]` federated read limits: 0 would end every read before its first page.
fn check_federated_limits(report: &mut Report, server: &super::model::ServerSettings) {
    if server.federated_max_pages == 0 {
        report.push(
            &Loc::root().with("server", "federated_max_pages"),
            "federated_max_pages must be at least 1",
        );
    }
    if server.federated_max_records == 0 {
        report.push(
            &Loc::root().with("server", "federated_max_records"),
            "federated_max_records must be at least 1",
        );
    }
}

/// A zero connection timeout would close every connection at once.
fn check_connection_timeouts(report: &mut Report, server: &super::model::ServerSettings) {
    for (name, secs) in [
        ("header_read_timeout_secs", server.header_read_timeout_secs),
        ("idle_connection_secs", server.idle_connection_secs),
        ("body_read_timeout_secs", server.body_read_timeout_secs),
    ] {
        if secs == 0 {
            report.push(
                &Loc::root().with("server", name),
                "must be at least 1 (0 would close every connection at once)",
            );
        }
    }
}

/// Whether `name` is a valid tool name: `[A-Za-z0-9_.-]{1,128}`.
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Checks a configuration and compiles every tool's plan; on failure, reports every problem.
pub fn validate(config: &Config) -> Result<Validated, Report> {
    let mut report = Report::default();
    let mut plans = Vec::with_capacity(config.tenants.len());

    if let Some(url) = &config.server.public_url {
        let ok = url.parse::<http::Uri>().is_ok_and(|uri| {
            matches!(uri.scheme_str(), Some("http" | "https"))
                && uri.host().is_some()
                && matches!(uri.path(), "" | "/")
                && uri.query().is_none()
        });
        if !ok {
            report.push(
                &Loc::root().with("server", "public_url"),
                format!("public_url '{url}' must be scheme://host[:port] with no path"),
            );
        }
    }
    let hosts = &config.server.allowed_hosts;
    if hosts.iter().any(|entry| entry == "*") && hosts.len() > 1 {
        report.push(
            &Loc::root().with("server", "allowed_hosts"),
            "allowed_hosts = [\"*\"] serves any Host: list nothing else with it".to_owned(),
        );
    }
    for entry in hosts.iter().filter(|entry| *entry != "*") {
        if let Err(err) = crate::http::guard::HostPattern::parse(entry) {
            report.push(
                &Loc::root().with("server", "allowed_hosts"),
                err.to_string(),
            );
        }
    }
    if config.server.audit.sink == super::model::AuditSink::File
        && config.server.audit.path.is_none()
    {
        report.push(
            &Loc::root().with("server", "audit"),
            "sink = \"file\" needs a path",
        );
    }
    if config.server.stream_queue_messages == 0 || config.server.stream_queue_bytes == 0 {
        report.push(
            &Loc::root().with("server", "stream_queue"),
            "stream_queue_messages and stream_queue_bytes must be at least 1",
        );
    }
    if config.server.audit.queue == 0 {
        report.push(
            &Loc::root().with("server", "audit"),
            "queue must be at least 1",
        );
    }
    if let Some(per_caller) = config.server.max_sessions_per_caller {
        if per_caller > config.server.max_sessions_per_tenant {
            report.push(
                &Loc::root().with("server", "max_sessions_per_caller"),
                format!(
                    "max_sessions_per_caller ({per_caller}) must not exceed \
                     max_sessions_per_tenant ({})",
                    config.server.max_sessions_per_tenant
                ),
            );
        }
    }
    check_cluster(&mut report, &config.cluster);
    check_federated_limits(&mut report, &config.server);
    check_connection_timeouts(&mut report, &config.server);

    let mut tenant_ids = HashSet::new();
    let mut global_key_ids = HashSet::new();
    for tenant in &config.tenants {
        let tloc = Loc::root().with("tenant", &tenant.id);
        check_id(&mut report, &tloc, "tenant", &tenant.id);
        if !tenant_ids.insert(tenant.id.as_str()) {
            report.push(&tloc, "duplicate tenant id");
        }

        let mut client_ids = HashSet::new();
        let mut key_ids = HashSet::new();
        for client in &tenant.clients {
            let cloc = tloc.with("client", &client.id);
            check_id(&mut report, &cloc, "client", &client.id);
            if !client_ids.insert(client.id.as_str()) {
                report.push(&cloc, "duplicate client id");
            }
            for key in &client.api_keys {
                let kloc = cloc.with("api_key", &key.id);
                if !is_valid_key_id(&key.id) {
                    report.push(
                        &kloc,
                        format!("api key id must be {API_KEY_ID_LEN} characters from [a-z2-7]"),
                    );
                }
                if !key_ids.insert(key.id.as_str()) {
                    report.push(&kloc, "duplicate api key id in this tenant");
                }
                if key.hash.len() != 64 || !key.hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                    report.push(&kloc, "api key hash must be 64 hex digits (HMAC-SHA256)");
                }
                if key.expires_at.is_some_and(|at| at.date.is_none()) {
                    report.push(&kloc, "expires_at must be a date or a date-time");
                }
            }
        }
        check_auth(&mut report, &tloc, config, tenant, !key_ids.is_empty());
        for key in &key_ids {
            // The BOS platform endpoint names no tenant: a key id must find its tenant alone.
            if !global_key_ids.insert(*key) {
                report.push(
                    &tloc.with("api_key", *key),
                    "api key id is used by another tenant (ids must be unique across tenants)",
                );
            }
        }
        if !tenant.bos_contexts.is_empty() {
            if let Err(err) =
                crate::bos::BosContexts::build(&tenant.id, &tenant.bos_contexts, |c| {
                    tenant.clients.iter().any(|client| client.id == c)
                })
            {
                report.push(&tloc.with("bos_context", ""), err.to_string());
            }
            let secret = std::env::var("SLUICE_BOS_HANDLE_SECRET")
                .ok()
                .or_else(|| config.server.bos_handle_secret.clone());
            if secret.is_none_or(|s| s.len() < 32) {
                report.push(
                    &tloc,
                    "bos_context needs server.bos_handle_secret (or SLUICE_BOS_HANDLE_SECRET) of at \
                     least 32 bytes",
                );
            }
        }

        let mut toolset_ids = HashSet::new();
        let mut tenant_plans = Vec::with_capacity(tenant.toolsets.len());
        for toolset in &tenant.toolsets {
            let sloc = tloc.with("toolset", &toolset.id);
            check_id(&mut report, &sloc, "toolset", &toolset.id);
            if !toolset_ids.insert(toolset.id.as_str()) {
                report.push(&sloc, "duplicate toolset id");
            }
            if toolset.correlation.header.is_empty()
                || http::HeaderName::from_bytes(toolset.correlation.header.as_bytes()).is_err()
            {
                report.push(
                    &sloc,
                    format!(
                        "correlation header '{}' is not a valid header name",
                        toolset.correlation.header
                    ),
                );
            }
            let mut tool_names = HashSet::new();
            let mut toolset_plans = Vec::with_capacity(toolset.tools.len());
            for tool in &toolset.tools {
                let loc = sloc.with("tool", &tool.name);
                if !tool_names.insert(tool.name.as_str()) {
                    report.push(&loc, "duplicate tool name in this toolset");
                }
                toolset_plans.push(check_tool(&mut report, &loc, tool));
            }
            tenant_plans.push(toolset_plans);
        }

        let mut pairs = HashSet::new();
        for (n, assignment) in tenant.assignments.iter().enumerate() {
            let aloc = tloc.with(
                "assignment",
                format!(
                    "#{} ({} → {})",
                    n + 1,
                    assignment.client,
                    assignment.toolset
                ),
            );
            if !client_ids.contains(assignment.client.as_str()) {
                report.push(&aloc, format!("unknown client '{}'", assignment.client));
            }
            if !toolset_ids.contains(assignment.toolset.as_str()) {
                report.push(&aloc, format!("unknown toolset '{}'", assignment.toolset));
            }
            if !pairs.insert((assignment.client.as_str(), assignment.toolset.as_str())) {
                report.push(
                    &aloc,
                    "the toolset is assigned to this client more than once",
                );
            }
        }

        check_name_clashes(&mut report, &tloc, tenant);
        plans.push(tenant_plans);
    }

    if report.problems.is_empty() {
        // Every plan compiled: a failed compile always leaves a problem in the report.
        let plans = plans
            .into_iter()
            .map(|toolsets: Vec<Vec<Option<Arc<ToolPlan>>>>| {
                toolsets
                    .into_iter()
                    .map(|tools| tools.into_iter().flatten().collect())
                    .collect()
            })
            .collect();
        Ok(Validated { plans })
    } else {
        Err(report)
    }
}

/// Length of an API key id (`rtk_{id}_{secret}`).
pub const API_KEY_ID_LEN: usize = 12;

/// Whether `id` is an API key id: [`API_KEY_ID_LEN`] characters of lowercase RFC 4648 base32.
pub fn is_valid_key_id(id: &str) -> bool {
    id.len() == API_KEY_ID_LEN && id.bytes().all(|b| matches!(b, b'a'..=b'z' | b'2'..=b'7'))
}

/// Signature algorithms a JWT may be verified with. `none` and the HMAC family are absent on
/// purpose: a JWKS holds public keys, and an HMAC "verified" with a public key is forgeable.
pub const JWT_ALGORITHMS: [&str; 9] = [
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

fn check_auth(
    report: &mut Report,
    tloc: &Loc,
    config: &Config,
    tenant: &super::model::Tenant,
    has_keys: bool,
) {
    let auth = &tenant.auth;
    let aloc = tloc.with("auth", "");
    if !auth.anonymous && !has_keys && auth.jwt.is_none() {
        report.push(
            tloc,
            "no credential can reach this tenant: give a client an api_key, configure auth.jwt, \
             or set auth.anonymous = true (development only)",
        );
    }
    if has_keys
        && config.server.api_key_pepper.is_none()
        && std::env::var_os("SLUICE_API_KEY_PEPPER").is_none()
    {
        report.push(
            tloc,
            "api keys need a pepper: set server.api_key_pepper or SLUICE_API_KEY_PEPPER",
        );
    }
    for server in &auth.authorization_servers {
        if !is_http_url(server) {
            report.push(
                &aloc,
                format!("authorization server '{server}' is not an http(s) URL"),
            );
        }
    }
    if let Some(jwt) = &auth.jwt {
        let jloc = tloc.with("auth", "jwt");
        if jwt.issuer.is_empty() {
            report.push(&jloc, "issuer must not be empty");
        }
        match (&jwt.jwks_file, &jwt.jwks_url) {
            (None, None) => report.push(&jloc, "set jwks_file or jwks_url"),
            (Some(_), Some(_)) => report.push(&jloc, "set only one of jwks_file and jwks_url"),
            (None, Some(url)) if !is_http_url(url) => {
                report.push(&jloc, format!("jwks_url '{url}' is not an http(s) URL"));
            }
            _ => {}
        }
        if jwt.algorithms.is_empty() {
            report.push(&jloc, "algorithms must not be empty");
        }
        for alg in &jwt.algorithms {
            if !JWT_ALGORITHMS.contains(&alg.as_str()) {
                report.push(
                    &jloc,
                    format!(
                        "algorithm '{alg}' is not accepted (allowed: {}; never none or HS*)",
                        JWT_ALGORITHMS.join(", ")
                    ),
                );
            }
        }
    }
}

fn is_http_url(text: &str) -> bool {
    text.parse::<http::Uri>()
        .is_ok_and(|uri| matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some())
}

fn check_id(report: &mut Report, loc: &Loc, what: &str, id: &str) {
    if !is_valid_id(id) {
        report.push(
            loc,
            format!("{what} id must be 1–{MAX_ID_LEN} characters from [A-Za-z0-9._-]"),
        );
    }
}

/// Published tools of two toolsets assigned to the same client must not share a name: the client
/// would see two tools called the same. (Unpublished tools are invisible, so they may.)
fn check_name_clashes(report: &mut Report, tloc: &Loc, tenant: &super::model::Tenant) {
    let mut by_client: HashMap<&str, Vec<usize>> = HashMap::new();
    for assignment in &tenant.assignments {
        if let Some(idx) = tenant
            .toolsets
            .iter()
            .position(|t| t.id == assignment.toolset)
        {
            let list = by_client.entry(assignment.client.as_str()).or_default();
            if !list.contains(&idx) {
                list.push(idx);
            }
        }
    }
    let mut clients: Vec<&&str> = by_client.keys().collect();
    clients.sort();
    let mut reported = BTreeSet::new();
    for client in clients {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        let Some(toolsets) = by_client.get(*client) else {
            continue;
        };
        for &ts_idx in toolsets {
            let Some(toolset) = tenant.toolsets.get(ts_idx) else {
                continue;
            };
            for tool in toolset.tools.iter().filter(|t| t.published) {
                match seen.get(tool.name.as_str()) {
                    Some(&other) if other != ts_idx => {
                        let (a, b) = (other.min(ts_idx), other.max(ts_idx));
                        if reported.insert((tool.name.as_str(), a, b)) {
                            let other_id =
                                tenant.toolsets.get(other).map_or("?", |t| t.id.as_str());
                            report.push(
                                &tloc.with("toolset", &toolset.id).with("tool", &tool.name),
                                format!(
                                    "tool name is also published by toolset '{other_id}'; both are assigned to client '{client}'"
                                ),
                            );
                        }
                    }
                    Some(_) => {}
                    None => {
                        seen.insert(tool.name.as_str(), ts_idx);
                    }
                }
            }
        }
    }
}

/// Checks one tool; its compiled plan, or `None` when compiling it reported problems.
fn check_tool(report: &mut Report, loc: &Loc, tool: &Tool) -> Option<Arc<ToolPlan>> {
    let since = report.problems.len();
    if !is_valid_tool_name(&tool.name) {
        report.push(
            loc,
            format!("tool name must be 1–{MAX_TOOL_NAME_LEN} characters from [A-Za-z0-9_.-]"),
        );
    }
    if tool.name == DISCOVER_TOOL_NAME {
        report.push(
            loc,
            format!("'{DISCOVER_TOOL_NAME}' is reserved for the schema discovery meta-tool"),
        );
    }
    check_rules(report, loc, "field", &tool.inputs, true);
    check_rules(report, loc, "output field", &tool.outputs, false);
    if let super::model::Downstream::Federated(federated) = &tool.downstream {
        check_federated(report, loc, tool, federated);
    }
    match ToolPlan::compile(tool) {
        Ok(plan) => Some(Arc::new(plan)),
        Err(problems) => {
            for problem in problems {
                let at = match &problem.field {
                    Some(field) => loc.with("field", field),
                    None => loc.clone(),
                };
                report.push_once(since, &at, problem.message);
            }
            None
        }
    }
}

/// A federated read: a record type, at least one source, distinct source identities, usable
/// URLs, timeouts and credentials, and no output rules (its result shape is the contract's).
fn check_federated(
    report: &mut Report,
    loc: &Loc,
    tool: &Tool,
    federated: &super::model::FederatedDownstream,
) {
    if federated.record_type.trim().is_empty() {
        report.push(loc, "record_type must not be empty");
    }
    if federated.deadline_ms == Some(0) {
        report.push(loc, "deadline_ms must be greater than zero");
    }
    if federated.max_records == Some(0) {
        report.push(loc, "max_records must be greater than zero");
    }
    if federated.sources.is_empty() {
        report.push(loc, "a federated tool needs at least one source");
    }
    if !tool.outputs.is_empty() {
        report.push(
            loc,
            "a federated tool has no output rules: its records use the federated record shape",
        );
    }
    let mut identities = HashSet::new();
    for source in &federated.sources {
        let sloc = loc.with("source", &source.source_identity);
        if source.source_type.trim().is_empty() || source.source_identity.trim().is_empty() {
            report.push(&sloc, "source_type and source_identity must not be empty");
        }
        if !identities.insert((source.source_type.as_str(), source.source_identity.as_str())) {
            report.push(&sloc, "duplicate source in this tool");
        }
        if !is_http_url(&source.url) {
            report.push(&sloc, format!("url '{}' is not an http(s) URL", source.url));
        }
        if source.timeout_ms == Some(0) {
            report.push(&sloc, "timeout_ms must be greater than zero");
        }
        if source.page_limit == Some(0) {
            report.push(&sloc, "page_limit must be greater than zero");
        }
        if source.max_pages == Some(0) {
            report.push(&sloc, "max_pages must be greater than zero");
        }
        if let Some(credential) = &source.credential {
            if http::HeaderName::from_bytes(credential.header.as_bytes()).is_err()
                || http::HeaderValue::from_str(&credential.value).is_err()
            {
                report.push(&sloc, "credential must be a valid header name and value");
            }
        }
        let fields = &source.fields;
        let paths = [
            &fields.display_name,
            &fields.email,
            &fields.phone,
            &fields.lifecycle,
        ];
        let empty_path = paths
            .iter()
            .any(|p| p.as_deref().is_some_and(str::is_empty))
            || fields
                .attributes
                .iter()
                .any(|(k, v)| k.is_empty() || v.is_empty());
        if empty_path {
            report.push(&sloc, "field paths and attribute names must not be empty");
        }
    }
}

fn check_rules(
    report: &mut Report,
    loc: &Loc,
    kind: &'static str,
    rules: &[FieldRule],
    is_input: bool,
) {
    let mut exposed_paths = Vec::with_capacity(rules.len());
    for rule in rules {
        let floc = loc.with(kind, &rule.exposed);
        let exposed = check_path(report, &floc, "exposed", &rule.exposed);
        check_path(report, &floc, "source", &rule.source);
        if let Some(path) = &exposed {
            if is_input
                && path.segments().first().is_some_and(
                    |s| matches!(s, super::path::Segment::Key(k) if &**k == DISCOVERY_PLACEHOLDER),
                )
            {
                report.push(
                    &floc,
                    format!("'{DISCOVERY_PLACEHOLDER}' is reserved for lazy schema discovery"),
                );
            }
            check_types(report, &floc, rule, path);
        }
        exposed_paths.push(exposed);
    }
    let (_, conflicts) = Tree::build(rules, &exposed_paths);
    for conflict in conflicts {
        if let Some(rule) = rules.get(conflict.rule()) {
            report.push(&loc.with(kind, &rule.exposed), conflict.message(rules));
        }
    }
}

fn check_path(report: &mut Report, loc: &Loc, which: &str, text: &str) -> Option<FieldPath> {
    match FieldPath::parse(text) {
        Ok(path) if path.segments().len() > MAX_PATH_SEGMENTS => {
            report.push(
                loc,
                format!("{which} path has more than {MAX_PATH_SEGMENTS} segments"),
            );
            None
        }
        Ok(path) => Some(path),
        Err(err) => {
            report.push(
                loc,
                format!("{which} path '{text}' is not a valid field path: {err}"),
            );
            None
        }
    }
}

fn check_types(report: &mut Report, loc: &Loc, rule: &FieldRule, path: &FieldPath) {
    if let Some(items) = rule.items {
        if rule.ty != FieldType::Array {
            report.push(
                loc,
                format!(
                    "'items' is set but the type is '{}', not 'array'",
                    schema::type_name(rule.ty)
                ),
            );
        } else if items == FieldType::Array {
            report.push(
                loc,
                "'items' cannot be 'array'; write nested arrays as 'path[*][*]'",
            );
        }
    }
    let value_type = schema::value_type(rule, path);
    if let Some(extra) = &rule.additional_properties {
        if value_type != FieldType::Object {
            report.push(
                loc,
                format!(
                    "'additional_properties' needs an object field, but the value type is '{}'",
                    schema::type_name(value_type)
                ),
            );
        }
        if !matches!(extra, toml::Value::Boolean(_) | toml::Value::Table(_)) {
            report.push(
                loc,
                "'additional_properties' must be a boolean or a table (a JSON Schema)",
            );
        } else if has_non_finite(extra) {
            report.push(loc, "'additional_properties' contains a non-finite number");
        }
    }
    if let Some(values) = &rule.enum_values {
        if matches!(value_type, FieldType::Object | FieldType::Array) {
            report.push(
                loc,
                format!(
                    "'enum' is not supported on '{}' values",
                    schema::type_name(value_type)
                ),
            );
        } else {
            if values.is_empty() {
                report.push(loc, "'enum' is empty: no value could ever be accepted");
            }
            for value in values {
                if !enum_value_fits(value, value_type) {
                    report.push(
                        loc,
                        format!(
                            "enum value {value} is not of type '{}'",
                            schema::type_name(value_type)
                        ),
                    );
                }
            }
        }
    }
}

fn enum_value_fits(value: &toml::Value, ty: FieldType) -> bool {
    match (ty, value) {
        (FieldType::String, toml::Value::String(_)) => true,
        (FieldType::Integer, toml::Value::Integer(_)) => true,
        (FieldType::Number, toml::Value::Integer(_)) => true,
        (FieldType::Number, toml::Value::Float(f)) => f.is_finite(),
        (FieldType::Boolean, toml::Value::Boolean(_)) => true,
        _ => false,
    }
}

fn has_non_finite(value: &toml::Value) -> bool {
    match value {
        toml::Value::Float(f) => !f.is_finite(),
        toml::Value::Array(items) => items.iter().any(has_non_finite),
        toml::Value::Table(table) => table.values().any(has_non_finite),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
[[tenant]]
id = "acme"
auth = { anonymous = true }
[[tenant.client]]
id = "bot"
[[tenant.toolset]]
id = "crm"
"#;

    /// Validates BASE + `extra` and compares the report lines.
    fn check(extra: &str, expected: &[&str]) {
        let config = super::super::load::parse(&format!("{BASE}{extra}"), "t").unwrap();
        let got = match validate(&config) {
            Ok(_) => Vec::new(),
            Err(report) => report.problems.iter().map(ToString::to_string).collect(),
        };
        assert_eq!(got, expected);
    }

    const TOOL: &str = "[[tenant.toolset.tool]]\nname = \"t\"\ndownstream = { kind = \"rest\", method = \"GET\", url = \"http://h/x\" }\n";

    #[test]
    fn ids_and_names() {
        assert!(is_valid_id("a.b_c-9"));
        assert!(!is_valid_id(""));
        assert!(!is_valid_id("a/b"));
        assert!(!is_valid_id(&"a".repeat(65)));
        assert!(is_valid_tool_name(&"a".repeat(128)));
        assert!(!is_valid_tool_name(&"a".repeat(129)));
        assert!(!is_valid_tool_name("a b"));
    }

    #[test]
    fn cluster_settings() {
        check(
            "[cluster]\nredis_url = \"redis://127.0.0.1:6379/0\"\nexpected_instances = 3\n",
            &[],
        );
        check(
            "[cluster]\nredis_url = \"http://user:secret@h\"\nkey_prefix = \"\"\n\
             expected_instances = 0\ncommand_timeout_ms = 0\nholder_ttl_secs = 2\n",
            &[
                "section 'cluster': redis_url must start with redis://, rediss://, redis+unix:// or unix://",
                "section 'cluster': key_prefix must not be empty",
                "section 'cluster': expected_instances must be at least 1",
                "section 'cluster': command_timeout_ms must be at least 1",
                "section 'cluster': holder_ttl_secs must be at least 3 (registrations are refreshed every third of it)",
            ],
        );
    }

    #[test]
    fn allowed_hosts() {
        check(
            "[server]\nallowed_hosts = [\"mcp.example.com\", \"localhost:*\", \"[::1]:8080\"]\n",
            &[],
        );
        check("[server]\nallowed_hosts = [\"*\"]\n", &[]);
        check(
            "[server]\nallowed_hosts = [\"*\", \"a\", \"http://b\"]\n",
            &[
                "server 'allowed_hosts': allowed_hosts = [\"*\"] serves any Host: list nothing else with it",
                "server 'allowed_hosts': allowed_hosts entry 'http://b' is not host, host:port or host:* (IPv6 in brackets)",
            ],
        );
    }

    #[test]
    fn connection_timeouts_must_not_be_zero() {
        check(
            "[server]\nheader_read_timeout_secs = 1\nidle_connection_secs = 1\nbody_read_timeout_secs = 1\n",
            &[],
        );
        check(
            "[server]\nidle_connection_secs = 0\nbody_read_timeout_secs = 0\n",
            &[
                "server 'idle_connection_secs': must be at least 1 (0 would close every connection at once)",
                "server 'body_read_timeout_secs': must be at least 1 (0 would close every connection at once)",
            ],
        );
    }

    #[test]
    fn the_caller_session_cap_fits_in_the_tenant_cap() {
        let server = |text: &str| format!("[server]\n{text}\n");
        check(&server("max_sessions_per_tenant = 5"), &[]);
        check(
            &server("max_sessions_per_tenant = 5\nmax_sessions_per_caller = 5"),
            &[],
        );
        check(
            &server("max_sessions_per_caller = 10001"),
            &["server 'max_sessions_per_caller': max_sessions_per_caller (10001) must not exceed max_sessions_per_tenant (10000)"],
        );
    }

    #[test]
    fn valid_minimal() {
        check("", &[]);
        check(TOOL, &[]);
    }

    #[test]
    fn field_rule_problems() {
        check(
            &format!("{TOOL}[[tenant.toolset.tool.input]]\nsource = \"a\"\nexposed = \"a\"\ntype = \"string\"\nitems = \"integer\"\n"),
            &["tenant 'acme' / toolset 'crm' / tool 't' / field 'a': 'items' is set but the type is 'string', not 'array'"],
        );
        check(
            &format!("{TOOL}[[tenant.toolset.tool.input]]\nsource = \"a\"\nexposed = \"a\"\ntype = \"integer\"\nenum = [1, \"x\", 2.5]\n"),
            &[
                "tenant 'acme' / toolset 'crm' / tool 't' / field 'a': enum value \"x\" is not of type 'integer'",
                "tenant 'acme' / toolset 'crm' / tool 't' / field 'a': enum value 2.5 is not of type 'integer'",
            ],
        );
        check(
            &format!("{TOOL}[[tenant.toolset.tool.output]]\nsource = \"a\"\nexposed = \"a..b\"\n"),
            &["tenant 'acme' / toolset 'crm' / tool 't' / output field 'a..b': exposed path 'a..b' is not a valid field path: empty segment at byte 2"],
        );
        check(
            &format!("{TOOL}[[tenant.toolset.tool.input]]\nsource = \"a\"\nexposed = \"_schema_discovery\"\n"),
            &["tenant 'acme' / toolset 'crm' / tool 't' / field '_schema_discovery': '_schema_discovery' is reserved for lazy schema discovery"],
        );
        check(
            &format!("{TOOL}[[tenant.toolset.tool.input]]\nsource = \"a\"\nexposed = \"a\"\nadditional_properties = 3\n"),
            &[
                "tenant 'acme' / toolset 'crm' / tool 't' / field 'a': 'additional_properties' needs an object field, but the value type is 'string'",
                "tenant 'acme' / toolset 'crm' / tool 't' / field 'a': 'additional_properties' must be a boolean or a table (a JSON Schema)",
            ],
        );
        check(
            &format!("{TOOL}[[tenant.toolset.tool.input]]\nsource = \"a\"\nexposed = \"{}\"\n", vec!["a"; 33].join(".")),
            &[&format!("tenant 'acme' / toolset 'crm' / tool 't' / field '{}': exposed path has more than 32 segments", vec!["a"; 33].join("."))],
        );
    }

    #[test]
    fn reserved_meta_tool_name() {
        check(
            &TOOL.replace("\"t\"", "\"discover_tool_schema\""),
            &["tenant 'acme' / toolset 'crm' / tool 'discover_tool_schema': 'discover_tool_schema' is reserved for the schema discovery meta-tool"],
        );
    }

    const FEDERATED: &str = "[[tenant.toolset.tool]]\nname = \"people\"\n\
        [tenant.toolset.tool.downstream]\nkind = \"federated\"\nrecord_type = \"person\"\n";

    fn source(identity: &str, extra: &str) -> String {
        format!(
            "[[tenant.toolset.tool.downstream.source]]\nsource_type = \"crm\"\n\
             source_identity = \"{identity}\"\nurl = \"http://p/{identity}\"\n{extra}"
        )
    }

    #[test]
    fn federated_tools() {
        let good = format!(
            "{FEDERATED}{}{}[[tenant.toolset.tool.input]]\nsource = \"q\"\nexposed = \"q\"\n",
            source("eu", "timeout_ms = 500\n[tenant.toolset.tool.downstream.source.fields]\nemail = \"mail\"\n"),
            source("us", ""),
        );
        check(&good, &[]);
        let at = "tenant 'acme' / toolset 'crm' / tool 'people'";
        check(
            FEDERATED,
            &[&format!("{at}: a federated tool needs at least one source")],
        );
        check(
            &format!(
                "{FEDERATED}{}{}{}",
                source("eu", "timeout_ms = 0\n"),
                source(
                    "eu",
                    "credential = { header = \"bad header\", value = \"x\" }\n"
                ),
                source("xx", "").replace("http://p/xx", "ftp://p"),
            ),
            &[
                &format!("{at} / source 'eu': timeout_ms must be greater than zero"),
                &format!("{at} / source 'eu': duplicate source in this tool"),
                &format!("{at} / source 'eu': credential must be a valid header name and value"),
                &format!("{at} / source 'xx': url 'ftp://p' is not an http(s) URL"),
            ],
        );
        check(
            &format!(
                "{FEDERATED}{}[[tenant.toolset.tool.input]]\nsource = \"id\"\nexposed = \"id\"\nlocation = \"path\"\n",
                source("eu", "")
            ),
            &[&format!("{at} / field 'id': a federated tool has no URL template; use location = \"query\" or \"header\"")],
        );
    }
}
