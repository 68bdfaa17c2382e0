//! The immutable, resolved view of one loaded configuration.
//!
//! Owns resolution: for each (tenant, client) the visible tools (published and assigned) in name
//! order with their toolset, the effective system prompt of each assigned toolset, each tool's
//! schemas and pre-serialized `tools/list` entry, its compiled plan, and a fingerprint of the
//! listing. Everything is computed once in [`Snapshot::build`]; requests only look things up
//! (hash maps) and copy bytes. Must not do IO or hold anything mutable: a snapshot is shared
//! behind an `Arc` and replaced whole on reload.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use http::HeaderName;
use sha2::{Digest, Sha256};

use super::compile::validate;
use super::plan::ToolPlan;
use super::prompt::effective_prompt;
use super::schema::{self, ToolSchemas};
use super::{agent_tool, meta_tool};
use crate::config::{
    Assignment, ClientApp, Config, Correlation, Loc, Problem, Report, SchemaMode, ServerSettings,
    TenantAuth, Tool,
};
use crate::shard::{FastHash, FastMap};

/// One tool as the snapshot holds it, shared by every client that sees it.
#[derive(Debug)]
pub struct CatalogTool {
    /// The tool name (unique among a client's visible tools).
    pub name: Arc<str>,
    /// The id of the toolset the tool belongs to.
    pub toolset: Arc<str>,
    /// The tool as configured.
    pub def: Tool,
    /// The compiled invocation plan (never recompiled per call).
    pub plan: Arc<ToolPlan>,
    /// The toolset's correlation settings.
    pub correlation: Correlation,
    /// `correlation.header`, parsed once here (validation checked it) instead of per call.
    pub correlation_header: HeaderName,
    /// The generated schemas.
    pub schemas: ToolSchemas,
    /// Version of the schemas: the snapshot version in which they last changed.
    pub schema_version: u64,
    /// The pre-serialized `tools/list` entry.
    pub list_entry: Bytes,
}

/// A toolset as one client sees it.
#[derive(Debug, Clone)]
pub struct ToolsetView {
    /// Toolset id.
    pub id: Arc<str>,
    /// The toolset's description.
    pub description: Option<Arc<str>>,
    /// The effective system prompt for this client (`None` when every part is absent or blank).
    pub prompt: Option<Arc<str>>,
    /// How many of its tools the client sees (published ones).
    pub n_visible_tools: usize,
}

/// What one client application of one tenant sees.
#[derive(Debug)]
pub struct ClientView {
    tenant: Arc<str>,
    client: Arc<str>,
    app: ClientApp,
    /// Visible tools in name order.
    tools: Vec<Arc<CatalogTool>>,
    by_name: FastMap<Arc<str>, usize>,
    /// Assigned toolsets in id order.
    toolsets: Vec<ToolsetView>,
    /// `tools/list` entries in name order, the meta-tool and the agent tools included.
    list_entries: Vec<Bytes>,
    /// The `ask_{id}` tools of registered agents exposed to this client: (tool name, agent id),
    /// in name order.
    agent_tools: Vec<(Arc<str>, Arc<str>)>,
    /// Bytes of the listing array `[e1,e2,…]`.
    list_len: usize,
    fingerprint: u64,
    /// Hash of the exposed toolset prompts (ids, descriptions, texts): what `prompts/list`,
    /// `resources/list` and their reads return.
    prompts_fingerprint: u64,
    needs_discovery: bool,
    log_list_payloads: bool,
    /// The tenant's authentication settings (shared by its clients).
    auth: Arc<TenantAuth>,
    /// The tenant's A2A settings (shared by its clients).
    a2a: Arc<crate::config::TenantA2a>,
    /// The tenant's rate limits that apply to this client.
    rate_limits: crate::ratelimit::Rules,
}

impl ClientView {
    /// The tenant's A2A settings (`[tenant.a2a]`; read by the A2A surface once it is routed).
    #[allow(dead_code)]
    pub(crate) fn a2a(&self) -> &crate::config::TenantA2a {
        &self.a2a
    }

    /// The tenant id, shared (callers keep it without copying the string).
    pub(crate) fn tenant_id(&self) -> &Arc<str> {
        &self.tenant
    }

    /// The client application id, shared.
    pub(crate) fn client_id(&self) -> &Arc<str> {
        &self.client
    }

    /// The tenant's `[[tenant.rate_limit]]` rules that apply to this client.
    pub(crate) fn rate_limits(&self) -> &crate::ratelimit::Rules {
        &self.rate_limits
    }

    /// The tenant's authentication settings; the client's API keys are in [`Self::app`].
    pub fn auth(&self) -> &TenantAuth {
        &self.auth
    }

    /// The tenant id.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// The client application id.
    pub fn client(&self) -> &str {
        &self.client
    }

    /// The client application as configured (credentials, prompt).
    pub(crate) fn app(&self) -> &ClientApp {
        &self.app
    }

    /// Visible tools in name order.
    pub fn tools(&self) -> &[Arc<CatalogTool>] {
        &self.tools
    }

    /// A visible tool by name.
    pub fn tool(&self, name: &str) -> Option<&Arc<CatalogTool>> {
        self.by_name.get(name).and_then(|&i| self.tools.get(i))
    }

    /// Assigned toolsets in id order, with their effective prompts.
    pub fn toolsets(&self) -> &[ToolsetView] {
        &self.toolsets
    }

    /// An assigned toolset by id.
    pub fn toolset(&self, id: &str) -> Option<&ToolsetView> {
        self.toolsets.iter().find(|t| &*t.id == id)
    }

    /// Whether some visible tool uses Lazy or DataStructureOnly, so `discover_tool_schema` is
    /// listed and callable.
    pub fn needs_discovery(&self) -> bool {
        self.needs_discovery
    }

    /// Whether `tools/list` payloads are captured for audit: some tool of the tenant logs payloads.
    pub fn log_list_payloads(&self) -> bool {
        self.log_list_payloads
    }

    /// A hash of the listing bytes: it changes exactly when what `tools/list` returns changes.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// A hash of the exposed toolset prompts: it changes when `prompts/list`, `resources/list` or
    /// the prompt texts they expose change.
    pub(crate) fn prompts_fingerprint(&self) -> u64 {
        self.prompts_fingerprint
    }

    /// The pre-serialized `tools/list` entries in listing order (for paging).
    /// The registered agent that tool `name` asks (`expose_as_tool`), if it is one.
    pub(crate) fn agent_tool(&self, name: &str) -> Option<&Arc<str>> {
        self.agent_tools
            .binary_search_by(|(tool, _)| (**tool).cmp(name))
            .ok()
            .map(|i| &self.agent_tools[i].1)
    }

    pub fn list_entries(&self) -> &[Bytes] {
        &self.list_entries
    }

    /// Length in bytes of the JSON array [`write_tools_list`](Self::write_tools_list) writes.
    pub fn tools_list_len(&self) -> usize {
        self.list_len
    }

    /// Appends the `tools` array (`[{…},{…}]`) to `out`: one reserve, then copies.
    pub fn write_tools_list(&self, out: &mut BytesMut) {
        out.reserve(self.list_len);
        out.put_u8(b'[');
        for (i, entry) in self.list_entries.iter().enumerate() {
            if i > 0 {
                out.put_u8(b',');
            }
            out.extend_from_slice(entry);
        }
        out.put_u8(b']');
    }
}

#[derive(Debug)]
struct TenantView {
    clients: FastMap<Arc<str>, Arc<ClientView>>,
    /// The tenant's BOS platform contexts (empty when it configures none).
    bos: Arc<crate::bos::BosContexts>,
    /// Every tool of the tenant by `toolset/name` (schema versions carry over reloads by this key).
    tools: FastMap<String, Arc<CatalogTool>>,
}

/// One loaded configuration, resolved. Immutable; shared as `Arc<Snapshot>`.
#[derive(Debug)]
pub struct Snapshot {
    version: u64,
    settings: ServerSettings,
    tenants: FastMap<Arc<str>, TenantView>,
    n_tools: usize,
    /// API key id → (tenant, client): the BOS platform endpoint names no tenant, so a key finds
    /// its own (key ids are unique across tenants).
    key_owners: HashMap<String, ClientKey>,
    /// Every tenant's registered remote A2A agents, in file order.
    remote_agents: Vec<(Arc<str>, Arc<crate::config::RemoteAgentConfig>)>,
}

/// A (tenant, client) pair.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClientKey {
    /// Tenant id.
    pub tenant: Arc<str>,
    /// Client application id.
    pub client: Arc<str>,
}

impl Snapshot {
    /// Validates `config` and resolves it. `previous` (the snapshot being replaced) lets
    /// unchanged tools keep their schema version.
    pub fn build(
        config: &Config,
        version: u64,
        previous: Option<&Snapshot>,
    ) -> Result<Snapshot, Report> {
        let validated = validate(config)?;
        let mut report = Report::default();
        let mut tenants =
            FastMap::with_capacity_and_hasher(config.tenants.len(), FastHash::default());
        let mut n_tools = 0;
        let mut key_owners = HashMap::new();

        for (tenant, tenant_plans) in config.tenants.iter().zip(&validated.plans) {
            let tenant_id: Arc<str> = tenant.id.as_str().into();
            let previous_tenant = previous.and_then(|p| p.tenants.get(&*tenant_id));
            let log_list_payloads = tenant
                .toolsets
                .iter()
                .flat_map(|t| &t.tools)
                .any(|t| t.log_payloads);

            // Each tool once, shared by every client that sees it.
            let mut tools: FastMap<String, Arc<CatalogTool>> = FastMap::default();
            let mut toolset_tools: Vec<Vec<Arc<CatalogTool>>> =
                Vec::with_capacity(tenant.toolsets.len());
            for (toolset, plans) in tenant.toolsets.iter().zip(tenant_plans) {
                let toolset_id: Arc<str> = toolset.id.as_str().into();
                let mut built = Vec::with_capacity(toolset.tools.len());
                for (tool, plan) in toolset.tools.iter().zip(plans) {
                    n_tools += 1;
                    let key = format!("{}/{}", toolset.id, tool.name);
                    let schemas = match schema::generate(tool) {
                        Ok(schemas) => schemas,
                        Err(err) => {
                            // Validation checks the same structure first; this stays a report.
                            report.problems.push(Problem {
                                loc: Loc::root()
                                    .with("tenant", &tenant.id)
                                    .with("toolset", &toolset.id)
                                    .with("tool", &tool.name),
                                message: err.to_string(),
                            });
                            continue;
                        }
                    };
                    let schema_version = previous_tenant
                        .and_then(|t| t.tools.get(&key))
                        .filter(|old| {
                            old.schemas.input_full == schemas.input_full
                                && old.schemas.output_full == schemas.output_full
                                && old.schemas.input_listed == schemas.input_listed
                        })
                        .map_or(version, |old| old.schema_version);
                    let list_entry = schema::list_entry(
                        &tool.name,
                        &tool.description,
                        &schemas.input_listed,
                        schemas.output_listed.as_deref(),
                    );
                    let correlation_header =
                        match HeaderName::from_bytes(toolset.correlation.header.as_bytes()) {
                            Ok(header) => header,
                            Err(err) => {
                                // Validation rejects the same name first; this stays a report.
                                report.problems.push(Problem {
                                    loc: Loc::root()
                                        .with("tenant", &tenant.id)
                                        .with("toolset", &toolset.id),
                                    message: err.to_string(),
                                });
                                continue;
                            }
                        };
                    let mut def = tool.clone();
                    // The toolset's result size defaults, where the tool sets none.
                    def.max_result_bytes = def.max_result_bytes.or(toolset.max_result_bytes);
                    def.on_oversize = def.on_oversize.or(toolset.on_oversize);
                    let built_tool = Arc::new(CatalogTool {
                        name: tool.name.as_str().into(),
                        toolset: toolset_id.clone(),
                        def,
                        plan: plan.clone(),
                        correlation: toolset.correlation.clone(),
                        correlation_header,
                        schemas,
                        schema_version,
                        list_entry,
                    });
                    tools.insert(key, built_tool.clone());
                    built.push(built_tool);
                }
                toolset_tools.push(built);
            }

            let auth = Arc::new(tenant.auth.clone());
            let a2a = Arc::new(tenant.a2a.clone());
            let mut clients =
                FastMap::with_capacity_and_hasher(tenant.clients.len(), FastHash::default());
            for app in &tenant.clients {
                let mut assigned: Vec<(usize, &Assignment)> = tenant
                    .assignments
                    .iter()
                    .filter(|a| a.client == app.id)
                    .filter_map(|a| {
                        tenant
                            .toolsets
                            .iter()
                            .position(|t| t.id == a.toolset)
                            .map(|i| (i, a))
                    })
                    .collect();
                assigned.sort_by(|a, b| {
                    let id = |i: usize| tenant.toolsets.get(i).map(|t| t.id.as_str());
                    id(a.0).cmp(&id(b.0))
                });
                let mut visible = Vec::new();
                let mut toolsets = Vec::with_capacity(assigned.len());
                for (ts_idx, assignment) in assigned {
                    let (Some(toolset), Some(built)) =
                        (tenant.toolsets.get(ts_idx), toolset_tools.get(ts_idx))
                    else {
                        continue;
                    };
                    let before = visible.len();
                    visible.extend(built.iter().filter(|t| t.def.published).cloned());
                    toolsets.push(ToolsetView {
                        id: toolset.id.as_str().into(),
                        description: toolset.description.as_deref().map(Into::into),
                        prompt: effective_prompt(
                            toolset.system_prompt.as_deref(),
                            app.system_prompt.as_deref(),
                            assignment.include_client_prompt,
                            assignment.custom_prompt.as_deref(),
                            assignment.custom_prompt_mode,
                        )
                        .map(Into::into),
                        n_visible_tools: visible.len() - before,
                    });
                }
                let agents = tenant
                    .a2a_agents
                    .iter()
                    .filter(|a| a.enabled && a.expose_as_tool && a.clients.contains(&app.id))
                    .map(|a| {
                        let (name, entry) = agent_tool::entry(a);
                        (name, entry, Arc::from(a.id.as_str()))
                    })
                    .collect();
                let mut view = client_view(
                    &tenant_id,
                    app,
                    (visible, agents),
                    toolsets,
                    log_list_payloads,
                    Arc::clone(&auth),
                );
                view.a2a = Arc::clone(&a2a);
                view.rate_limits =
                    crate::ratelimit::Rules::for_client(&tenant.rate_limits, &app.id);
                clients.insert(view.client.clone(), Arc::new(view));
            }
            let bos = match crate::bos::BosContexts::build(&tenant.id, &tenant.bos_contexts, |c| {
                tenant.clients.iter().any(|client| client.id == c)
            }) {
                Ok(contexts) => Arc::new(contexts),
                Err(err) => {
                    // Validation checks the same rules first; this stays a report.
                    report.problems.push(Problem {
                        loc: Loc::root().with("tenant", &tenant.id),
                        message: err.to_string(),
                    });
                    continue;
                }
            };
            for app in &tenant.clients {
                for key in &app.api_keys {
                    key_owners.insert(
                        key.id.clone(),
                        ClientKey {
                            tenant: tenant_id.clone(),
                            client: app.id.as_str().into(),
                        },
                    );
                }
            }
            tenants.insert(
                tenant_id,
                TenantView {
                    clients,
                    tools,
                    bos,
                },
            );
        }

        if !report.problems.is_empty() {
            return Err(report);
        }
        Ok(Snapshot {
            version,
            settings: config.server.clone(),
            tenants,
            n_tools,
            key_owners,
            remote_agents: config
                .tenants
                .iter()
                .flat_map(|t| {
                    let tenant: Arc<str> = t.id.as_str().into();
                    t.a2a_agents
                        .iter()
                        .map(move |a| (Arc::clone(&tenant), Arc::new(a.clone())))
                })
                .collect(),
        })
    }

    /// Every tenant's registered remote A2A agents (tenant id, configuration).
    pub(crate) fn remote_agents(&self) -> &[(Arc<str>, Arc<crate::config::RemoteAgentConfig>)] {
        &self.remote_agents
    }

    /// The snapshot version (1 for the first load, +1 per successful reload).
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The BOS platform contexts of `tenant`.
    pub(crate) fn bos_contexts(&self, tenant: &str) -> Option<&Arc<crate::bos::BosContexts>> {
        self.tenants.get(tenant).map(|t| &t.bos)
    }

    /// The client application a JWT from `issuer` names with its tenant's `client_claim`
    /// (`client_of` reads the claim from the token): how the BOS platform endpoint, whose path
    /// names no tenant, finds one for a bearer token.
    pub(crate) fn jwt_client<'c>(
        &self,
        issuer: &str,
        client_of: impl Fn(&str) -> Option<&'c str>,
    ) -> Option<&Arc<ClientView>> {
        self.tenants.values().find_map(|tenant| {
            let any = tenant.clients.values().next()?;
            let jwt = any.auth().jwt.as_ref().filter(|jwt| jwt.issuer == issuer)?;
            let client = client_of(jwt.client_claim.as_deref()?)?;
            tenant.clients.get(client)
        })
    }

    /// The tenant and client application an API key id belongs to.
    pub(crate) fn key_owner(&self, key_id: &str) -> Option<&ClientKey> {
        self.key_owners.get(key_id)
    }

    /// Server settings of this configuration.
    pub fn settings(&self) -> &ServerSettings {
        &self.settings
    }

    /// Number of tenants.
    pub(crate) fn n_tenants(&self) -> usize {
        self.tenants.len()
    }

    /// Number of configured tools (all tenants and toolsets, published or not).
    pub fn n_tools(&self) -> usize {
        self.n_tools
    }

    /// What a client of a tenant sees; `None` when either is unknown.
    pub fn client(&self, tenant: &str, client: &str) -> Option<&Arc<ClientView>> {
        self.tenants.get(tenant)?.clients.get(client)
    }

    /// A tool visible to a client.
    pub fn tool(&self, tenant: &str, client: &str, name: &str) -> Option<&Arc<CatalogTool>> {
        self.client(tenant, client)?.tool(name)
    }

    /// Whether `discover_tool_schema` is offered to this client: true only when some visible tool
    /// uses Lazy or DataStructureOnly.
    pub fn needs_discovery(&self, tenant: &str, client: &str) -> bool {
        self.client(tenant, client)
            .is_some_and(|c| c.needs_discovery())
    }

    /// The listing fingerprint of a client.
    pub fn fingerprint(&self, tenant: &str, client: &str) -> Option<u64> {
        self.client(tenant, client).map(|c| c.fingerprint())
    }

    /// Every (tenant, client) with its listing fingerprint, in no particular order.
    pub(crate) fn fingerprints(&self) -> impl Iterator<Item = (&ClientView, u64)> {
        self.tenants
            .values()
            .flat_map(|t| t.clients.values())
            .map(|c| (&**c, c.fingerprint))
    }

    /// The (tenant, client) pairs whose tool listing differs between `self` and `newer`,
    /// including clients that appear or disappear; sorted.
    pub(crate) fn changed_clients(&self, newer: &Snapshot) -> Vec<ClientKey> {
        self.changed_by(newer, ClientView::fingerprint)
    }

    /// The (tenant, client) pairs whose exposed prompts (and so prompt resources) differ between
    /// `self` and `newer`, including clients that appear or disappear; sorted.
    pub(crate) fn changed_prompt_clients(&self, newer: &Snapshot) -> Vec<ClientKey> {
        self.changed_by(newer, ClientView::prompts_fingerprint)
    }

    fn changed_by(&self, newer: &Snapshot, fingerprint: fn(&ClientView) -> u64) -> Vec<ClientKey> {
        let key = |c: &ClientView| ClientKey {
            tenant: c.tenant.clone(),
            client: c.client.clone(),
        };
        let clients = |snapshot: &Snapshot| -> Vec<Arc<ClientView>> {
            snapshot
                .tenants
                .values()
                .flat_map(|t| t.clients.values().cloned())
                .collect()
        };
        let mut changed: Vec<ClientKey> = clients(newer)
            .iter()
            .filter(|c| {
                self.client(&c.tenant, &c.client)
                    .map(|old| fingerprint(old))
                    != Some(fingerprint(c))
            })
            .map(|c| key(c))
            .collect();
        changed.extend(
            clients(self)
                .iter()
                .filter(|c| newer.client(&c.tenant, &c.client).is_none())
                .map(|c| key(c)),
        );
        changed.sort();
        changed
    }
}

/// A registered agent's `ask_{id}` tool: its name, `tools/list` entry and the agent id.
type AgentToolEntry = (String, Bytes, Arc<str>);

fn client_view(
    tenant: &Arc<str>,
    app: &ClientApp,
    (mut tools, mut agents): (Vec<Arc<CatalogTool>>, Vec<AgentToolEntry>),
    toolsets: Vec<ToolsetView>,
    log_list_payloads: bool,
    auth: Arc<TenantAuth>,
) -> ClientView {
    // Names are unique per client (validation), so this order is total.
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    let by_name = tools
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.clone(), i))
        .collect();
    let needs_discovery = tools.iter().any(|t| t.def.schema_mode != SchemaMode::Full);

    // Tools, the meta-tool when needed and the agent tools, in name order (names are unique:
    // validation refuses a tool named like an agent tool).
    agents.sort_by(|a, b| a.0.cmp(&b.0));
    let mut named: Vec<(&str, Bytes)> = Vec::with_capacity(tools.len() + agents.len() + 1);
    named.extend(tools.iter().map(|t| (&*t.name, t.list_entry.clone())));
    if needs_discovery {
        named.push((schema::DISCOVER_TOOL_NAME, meta_tool::entry()));
    }
    named.extend(
        agents
            .iter()
            .map(|(name, entry, _)| (name.as_str(), entry.clone())),
    );
    named.sort_by(|a, b| a.0.cmp(b.0));
    let list_entries: Vec<Bytes> = named.into_iter().map(|(_, entry)| entry).collect();
    let agent_tools = agents
        .into_iter()
        .map(|(name, _, id)| (Arc::from(name), id))
        .collect();
    let list_len = 2
        + list_entries.iter().map(Bytes::len).sum::<usize>()
        + list_entries.len().saturating_sub(1);

    let mut hasher = Sha256::new();
    for entry in &list_entries {
        hasher.update(entry);
        hasher.update(b",");
    }
    let digest = hasher.finalize();
    let mut first8 = [0u8; 8];
    first8.copy_from_slice(&digest[..8]);

    let mut hasher = Sha256::new();
    for toolset in toolsets.iter().filter(|t| t.n_visible_tools > 0) {
        if let Some(prompt) = &toolset.prompt {
            for part in [
                &*toolset.id,
                toolset.description.as_deref().unwrap_or(""),
                prompt,
            ] {
                hasher.update((part.len() as u64).to_be_bytes());
                hasher.update(part.as_bytes());
            }
        }
    }
    let mut prompts8 = [0u8; 8];
    prompts8.copy_from_slice(&hasher.finalize()[..8]);

    ClientView {
        tenant: tenant.clone(),
        client: app.id.as_str().into(),
        app: app.clone(),
        tools,
        by_name,
        toolsets,
        list_entries,
        agent_tools,
        list_len,
        fingerprint: u64::from_be_bytes(first8),
        prompts_fingerprint: u64::from_be_bytes(prompts8),
        needs_discovery,
        log_list_payloads,
        auth,
        a2a: Arc::default(),
        rate_limits: crate::ratelimit::Rules::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(text: &str) -> Snapshot {
        let config = crate::config::parse(text, "t").unwrap();
        Snapshot::build(&config, 1, None).unwrap()
    }

    /// Checks the visible tool names of (tenant, client) in `text`.
    fn check(text: &str, tenant: &str, client: &str, expected: &[&str]) {
        let snap = snapshot(text);
        let names: Vec<&str> = snap
            .client(tenant, client)
            .map(|c| c.tools().iter().map(|t| &*t.name).collect())
            .unwrap_or_default();
        assert_eq!(names, expected);
    }

    const TEXT: &str = r#"
[[tenant]]
id = "a"
auth = { anonymous = true }
[[tenant.client]]
id = "c1"
[[tenant.client]]
id = "c2"
[[tenant.toolset]]
id = "s"
[[tenant.toolset.tool]]
name = "zeta"
downstream = { kind = "rest", method = "GET", url = "http://h/" }
[[tenant.toolset.tool]]
name = "alpha"
schema_mode = "lazy"
downstream = { kind = "rest", method = "GET", url = "http://h/" }
[[tenant.toolset.tool]]
name = "hidden"
published = false
downstream = { kind = "rest", method = "GET", url = "http://h/" }
[[tenant.assignment]]
client = "c1"
toolset = "s"
"#;

    #[test]
    fn visibility_and_order() {
        check(TEXT, "a", "c1", &["alpha", "zeta"]);
        check(TEXT, "a", "c2", &[]);
        check(TEXT, "a", "nobody", &[]);
        check(TEXT, "b", "c1", &[]);
    }

    #[test]
    fn listing_places_meta_tool_in_name_order() {
        let snap = snapshot(TEXT);
        let client = snap.client("a", "c1").unwrap();
        let mut out = BytesMut::new();
        client.write_tools_list(&mut out);
        assert_eq!(out.len(), client.tools_list_len());
        let list: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let names: Vec<&str> = list
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["alpha", "discover_tool_schema", "zeta"]);
        assert!(snap.needs_discovery("a", "c1"));
        assert!(!snap.needs_discovery("a", "c2"));
        let empty = snap.client("a", "c2").unwrap();
        let mut out = BytesMut::new();
        empty.write_tools_list(&mut out);
        assert_eq!(&out[..], b"[]");
        assert_eq!(empty.tools_list_len(), 2);
    }

    #[test]
    fn schema_versions_carry_over_unchanged_tools() {
        let config = crate::config::parse(TEXT, "t").unwrap();
        let first = Snapshot::build(&config, 1, None).unwrap();
        let changed = TEXT.replacen(
            "name = \"zeta\"",
            "name = \"zeta\"\ndescription = \"new\"",
            1,
        );
        let alpha = "schema_mode = \"lazy\"\ndownstream = { kind = \"rest\", method = \"GET\", url = \"http://h/\" }";
        let changed = changed.replacen(
            alpha,
            &format!("{alpha}\n[[tenant.toolset.tool.input]]\nsource = \"q\"\nexposed = \"q\""),
            1,
        );
        let config = crate::config::parse(&changed, "t").unwrap();
        let second = Snapshot::build(&config, 2, Some(&first)).unwrap();
        assert_eq!(second.tool("a", "c1", "zeta").unwrap().schema_version, 1);
        assert_eq!(second.tool("a", "c1", "alpha").unwrap().schema_version, 2);
        assert_eq!(
            first.changed_clients(&second),
            vec![ClientKey {
                tenant: "a".into(),
                client: "c1".into()
            }]
        );
    }
}
