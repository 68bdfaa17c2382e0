//! The concentrator's GET routes: `GET /runtime/{t}/{c}/a2a/agents` (the agents client
//! application `c` may reach, authenticated) and
//! `GET /runtime/{t}/{c}/a2a/agents/{agentId}/.well-known/agent-card.json` (the synthesized
//! card, public like every card; 404 when the agent is not assigned to `c` or disabled, 503
//! while no card was ever fetched from the upstream).
//!
//! A synthesized card is built once per upstream card version and variant (the pure 1.0 card
//! for a client that sends `A2A-Version: 1.0`, both members' sets otherwise), with its `ETag`;
//! 304 on `If-None-Match`. URLs come from `public_url`, never from `Host`.
//! Must not proxy calls.

use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderValue, Response, StatusCode};
use serde_json::{json, Value};

use super::card;
use super::registry::RemoteAgent;
use crate::a2a::agent::{Agent, A2A_VERSION};
use crate::a2a::card as own_card;
use crate::a2a::v03::Version;
use crate::access::Admitted;
use crate::http::response::{self, Body};
use crate::http::{Error, Target};

/// The runtime URL of agent `id` of client application `client` of `tenant`.
pub(crate) fn agent_url(public_base: &str, tenant: &str, client: &str, id: &str) -> String {
    format!("{public_base}/runtime/{tenant}/{client}/a2a/agents/{id}")
}

/// `GET …/a2a/agents`: the agents the caller's client application may reach.
pub(crate) fn list(agent: &Agent, admitted: &Admitted) -> Response<Body> {
    let caller = &admitted.caller;
    let agents: Vec<Value> = agent
        .remote
        .remotes
        .assigned(&caller.tenant, &caller.client)
        .iter()
        .map(|remote| {
            let url = agent_url(
                &agent.public_base,
                &caller.tenant,
                &caller.client,
                &remote.id,
            );
            let fetched = remote.card();
            let member = |name: &str| {
                fetched
                    .as_ref()
                    .and_then(|f| f.card.card.get(name).cloned())
                    .unwrap_or(Value::Null)
            };
            json!({
                "agentId": &*remote.id,
                "name": member("name"),
                "description": member("description"),
                "url": url,
                "cardUrl": format!("{url}/.well-known/agent-card.json"),
                "available": fetched.is_some(),
            })
        })
        .collect();
    response::json(
        StatusCode::OK,
        Bytes::from(serde_json::to_vec(&agents).unwrap_or_else(|_| b"[]".to_vec())),
    )
}

/// `GET …/a2a/agents/{agentId}/.well-known/agent-card.json`.
pub(crate) fn card(
    agent: &Agent,
    parts: &Parts,
    target: &Target<'_>,
    agent_id: &str,
) -> Result<Response<Body>, Error> {
    if !agent.enabled() {
        return Err(Error::NotFound);
    }
    let snapshot = agent.catalog.current();
    let Some(view) = snapshot.client(&target.tenant, &target.client) else {
        return Err(Error::NotFound);
    };
    let Some(remote) = agent
        .remote
        .remotes
        .get(&target.tenant, &target.client, agent_id)
    else {
        return Err(Error::NotFound);
    };
    let v1_only = matches!(
        Version::from_header(parts.headers.get(A2A_VERSION)),
        Ok(Version::V1)
    );
    let Some((bytes, etag)) = synthesized(agent, &remote, view, v1_only) else {
        return Err(Error::Unavailable(
            "the remote agent's card has not been fetched yet".into(),
        ));
    };
    Ok(own_card::answer(&parts.headers, bytes, etag))
}

/// The synthesized card's bytes and `ETag`, built once per upstream card version, snapshot
/// and variant; `None` while no card was fetched.
fn synthesized(
    agent: &Agent,
    remote: &Arc<RemoteAgent>,
    view: &crate::catalog::ClientView,
    v1_only: bool,
) -> Option<(Bytes, HeaderValue)> {
    let fetched = remote.card()?;
    // The runtime's schemes may change on reload: the key holds the snapshot version too.
    let version = fetched.version ^ (agent.catalog.current().version() << 32);
    if let Some((v, bytes, etag)) = remote.synthesized.lock().get(&v1_only) {
        if *v == version {
            return Some((bytes.clone(), etag.clone()));
        }
    }
    let url = agent_url(&agent.public_base, view.tenant(), view.client(), &remote.id);
    let (schemes, requirements) = own_card::security(view, &agent.public_base);
    let value = card::synthesize(&fetched.card, &url, &schemes, &requirements, !v1_only);
    let bytes = Bytes::from(serde_json::to_vec(&value).unwrap_or_default());
    let etag = HeaderValue::from_str(&own_card::etag(&bytes))
        .unwrap_or_else(|_| HeaderValue::from_static("W/\"0\""));
    remote
        .synthesized
        .lock()
        .insert(v1_only, (version, bytes.clone(), etag.clone()));
    Some((bytes, etag))
}
