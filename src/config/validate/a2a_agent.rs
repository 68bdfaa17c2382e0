//! `[[tenant.a2a_agent]]` checks: the id rule and uniqueness, the card URL, the assigned
//! clients, the `ask_{id}` tool name of an exposed agent (no configured tool may have it), the timeouts, the upstream credential (its header, its token URL, and that its
//! secret resolves now, so `sluice check` finds a missing variable before a start does).
//!
//! Must not fetch anything over the network.

use std::collections::HashSet;

use super::{Loc, Report};
use crate::config::{resolve_secret, RemoteAgentConfig, Tenant, UpstreamAuth};

/// Whether `id` is an agent id: `^[a-z0-9][a-z0-9-]{0,62}$`.
pub(crate) fn is_agent_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    (1..=63).contains(&bytes.len())
        && bytes[0].is_ascii_lowercase() | bytes[0].is_ascii_digit()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

/// Every registered agent of `tenant`; `client_ids` are the tenant's client ids.
pub(super) fn check_agents(
    report: &mut Report,
    tloc: &Loc,
    tenant: &Tenant,
    client_ids: &HashSet<&str>,
) {
    let mut ids = HashSet::new();
    for agent in &tenant.a2a_agents {
        let loc = tloc.with("a2a_agent", &agent.id);
        if !is_agent_id(&agent.id) {
            report.push(&loc, "agent id must match ^[a-z0-9][a-z0-9-]{0,62}$");
        }
        if !ids.insert(agent.id.as_str()) {
            report.push(&loc, "duplicate a2a_agent id");
        }
        check_agent(report, &loc, agent, client_ids);
        if agent.expose_as_tool {
            // The MCP tool's name must not be a configured tool's (ids have no `_`, so two
            // agents never share one).
            let name = crate::catalog::agent_tool::name(&agent.id);
            let clash = tenant
                .toolsets
                .iter()
                .flat_map(|toolset| toolset.tools.iter())
                .any(|tool| tool.name == name);
            if clash {
                report.push(
                    &loc.with("field", "expose_as_tool"),
                    format!("a tool of this tenant is already named {name:?}"),
                );
            }
        }
    }
}

fn check_agent(
    report: &mut Report,
    loc: &Loc,
    agent: &RemoteAgentConfig,
    client_ids: &HashSet<&str>,
) {
    if !is_http_url(&agent.card_url) {
        report.push(
            &loc.with("field", "card_url"),
            "card_url must be an absolute http(s) URL",
        );
    }
    for client in &agent.clients {
        if !client_ids.contains(client.as_str()) {
            report.push(
                &loc.with("field", "clients"),
                format!("unknown client {client:?}"),
            );
        }
    }
    for (field, value) in [
        ("connect_ms", agent.connect_ms),
        ("request_ms", agent.request_ms),
        ("stream_idle_ms", agent.stream_idle_ms),
    ] {
        if value == 0 {
            report.push(
                &loc.with("field", field),
                format!("{field} must be at least 1"),
            );
        }
    }
    if agent.card_refresh_secs < 10 {
        report.push(
            &loc.with("field", "card_refresh_secs"),
            "card_refresh_secs must be at least 10",
        );
    }
    if agent.max_response_bytes < 1024 {
        report.push(
            &loc.with("field", "max_response_bytes"),
            "max_response_bytes must be at least 1024",
        );
    }
    if http::HeaderName::from_bytes(agent.correlation_header.as_bytes()).is_err() {
        report.push(
            &loc.with("field", "correlation_header"),
            "correlation_header is not a valid header name",
        );
    }
    let auth_loc = loc.with("field", "upstream_auth");
    match &agent.upstream_auth {
        UpstreamAuth::ApiKey { header, .. } => {
            let lower = header.to_ascii_lowercase();
            if http::HeaderName::from_bytes(header.as_bytes()).is_err() {
                report.push(&auth_loc, "header is not a valid header name");
            } else if matches!(
                lower.as_str(),
                "authorization" | "host" | "content-type" | "content-length"
            ) {
                report.push(&auth_loc, format!("header may not be {header}"));
            }
        }
        UpstreamAuth::Oauth2ClientCredentials {
            token_url,
            client_id,
            ..
        } => {
            if !is_http_url(token_url) {
                report.push(&auth_loc, "token_url must be an absolute http(s) URL");
            }
            if client_id.is_empty() {
                report.push(&auth_loc, "client_id must not be empty");
            }
        }
        UpstreamAuth::None | UpstreamAuth::Bearer { .. } => {}
    }
    if let Some(secret) = agent.upstream_auth.secret() {
        if let Err(err) = resolve_secret(&secret) {
            report.push(&auth_loc, err.to_string());
        }
    }
}

fn is_http_url(text: &str) -> bool {
    text.parse::<http::Uri>().is_ok_and(|uri| {
        matches!(uri.scheme_str(), Some("http" | "https")) && uri.authority().is_some()
    })
}
