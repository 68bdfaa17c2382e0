//! `[[tenant]]` checks: ids, API key ids unique across tenants, BOS contexts and their secret,
//! assignments, and tool names two assigned toolsets would both publish to one client.
//!
//! Owns the tenant level and the id rule every tenant, client and toolset id follows; runs
//! `client.rs` for the client applications and authentication and `tool.rs` for the toolsets.
//! Must not check what those files check.

use std::collections::{BTreeSet, HashMap, HashSet};

use super::{a2a_agent, client, tool, Loc, Report, TenantPlans, ToolCompiler};
use crate::config::{Config, Tenant};

/// Longest tenant, client or toolset id (path-segment rule `[A-Za-z0-9._-]{1,64}`).
pub(crate) const MAX_ID_LEN: usize = 64;

/// Whether `id` is a valid tenant/client/toolset id: `[A-Za-z0-9._-]{1,64}`.
pub(crate) fn is_valid_id(id: &str) -> bool {
    (1..=MAX_ID_LEN).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Reports an id that breaks the id rule; `what` names it (`tenant`, `client`, `toolset`).
pub(super) fn check_id(report: &mut Report, loc: &Loc, what: &str, id: &str) {
    if !is_valid_id(id) {
        report.push(
            loc,
            format!("{what} id must be 1–{MAX_ID_LEN} characters from [A-Za-z0-9._-]"),
        );
    }
}

/// Every tenant in file order; the compiled plans as `[tenant][toolset][tool]` (`None` where a
/// tool did not compile).
pub(super) fn check_all<C: ToolCompiler>(
    report: &mut Report,
    config: &Config,
    compiler: &C,
) -> Vec<TenantPlans<C::Plan>> {
    let mut tenant_ids = HashSet::new();
    let mut global_key_ids = HashSet::new();
    let mut plans = Vec::with_capacity(config.tenants.len());
    for tenant in &config.tenants {
        let tloc = Loc::root().with("tenant", &tenant.id);
        check_id(report, &tloc, "tenant", &tenant.id);
        if !tenant_ids.insert(tenant.id.as_str()) {
            report.push(&tloc, "duplicate tenant id");
        }
        let (client_ids, key_ids) = client::check_clients(report, &tloc, tenant);
        client::check_auth(report, &tloc, &config.server, tenant, !key_ids.is_empty());
        for key in &key_ids {
            // The BOS platform endpoint names no tenant: a key id must find its tenant alone.
            if !global_key_ids.insert(*key) {
                report.push(
                    &tloc.with("api_key", *key),
                    "api key id is used by another tenant (ids must be unique across tenants)",
                );
            }
        }
        check_bos(report, &tloc, config, tenant);
        check_rate_limits(report, &tloc, tenant, &client_ids);
        a2a_agent::check_agents(report, &tloc, tenant, &client_ids);
        let (toolset_ids, tenant_plans) = tool::check_toolsets(report, &tloc, tenant, compiler);
        check_assignments(report, &tloc, tenant, &client_ids, &toolset_ids);
        check_name_clashes(report, &tloc, tenant);
        plans.push(tenant_plans);
    }
    plans
}

/// Rate limit rules: unique ids, a `rate` that parses, a burst of at least 1, a client that
/// exists.
fn check_rate_limits(report: &mut Report, tloc: &Loc, tenant: &Tenant, clients: &HashSet<&str>) {
    let mut ids = HashSet::new();
    for rule in &tenant.rate_limits {
        let rloc = tloc.with("rate_limit", &rule.id);
        check_id(report, &rloc, "rate limit", &rule.id);
        if !ids.insert(rule.id.as_str()) {
            report.push(&rloc, "duplicate rate limit id");
        }
        if crate::config::Rate::parse(&rule.rate).is_none() {
            report.push(
                &rloc,
                format!(
                    "rate '{}' must be count/unit with a count of at least 1 and a unit of s, \
                     min or h (e.g. \"600/min\")",
                    rule.rate
                ),
            );
        }
        if rule.burst == Some(0) {
            report.push(&rloc, "burst must be at least 1");
        }
        if let Some(client) = &rule.client {
            if !clients.contains(client.as_str()) {
                report.push(
                    &rloc,
                    format!("client '{client}' is not a client of this tenant"),
                );
            }
        }
    }
}

/// BOS contexts build (they name existing clients), and handles can be signed: the secret is
/// set and at least 32 bytes.
fn check_bos(report: &mut Report, tloc: &Loc, config: &Config, tenant: &Tenant) {
    if tenant.bos_contexts.is_empty() {
        return;
    }
    if let Err(err) = crate::bos::BosContexts::build(&tenant.id, &tenant.bos_contexts, |c| {
        tenant.clients.iter().any(|client| client.id == c)
    }) {
        report.push(&tloc.with("bos_context", ""), err.to_string());
    }
    let secret = config.server.bos_handle_secret.as_deref();
    if secret.is_none_or(|s| s.len() < 32) {
        report.push(
            tloc,
            "bos_context needs server.bos_handle_secret (or SLUICE_BOS_HANDLE_SECRET) of at \
             least 32 bytes",
        );
    }
}

/// Assignments name a client and a toolset of the tenant, each pair once.
fn check_assignments(
    report: &mut Report,
    tloc: &Loc,
    tenant: &Tenant,
    client_ids: &HashSet<&str>,
    toolset_ids: &HashSet<&str>,
) {
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
}
/// Published tools of two toolsets assigned to the same client must not share a name: the client
/// would see two tools called the same. (Unpublished tools are invisible, so they may.)
fn check_name_clashes(report: &mut Report, tloc: &Loc, tenant: &Tenant) {
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
