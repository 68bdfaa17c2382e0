//! A registered agent's card: the upstream's card read (A2A 1.0 or 0.3 shape, normalized to
//! the 1.0 member names), the JSON-RPC interface the runtime talks to (1.0 preferred, 0.3
//! through `v03.rs`), and the card the runtime serves in its place.
//!
//! The synthesized card keeps what describes the agent (name, description, version,
//! provider, documentation and icon URLs, input/output modes, skills without their security
//! requirements, capability extensions) and replaces what describes how to reach it: the
//! interfaces are the runtime's URL (1.0 and 0.3 entries), the security schemes are the
//! runtime's, `signatures` are dropped (they would no longer verify), push is offered when the
//! upstream pushes or streams (the runtime relays either way), no extended card. Nothing of
//! the upstream's address survives.
//!
//! Must not fetch anything (`registry.rs` does) nor know HTTP.

use http::Uri;
use serde_json::{json, Map, Value};

use crate::a2a::v03::{self, Version};

/// Largest card read.
pub(crate) const MAX_CARD_BYTES: usize = 1024 * 1024;

/// Most skills a card may list.
pub(crate) const MAX_SKILLS: usize = 1000;

/// An upstream card, read.
#[derive(Debug, Clone)]
pub(crate) struct RemoteCard {
    /// The card in the 1.0 shape.
    pub card: Value,
    /// Where and how the runtime talks to the agent.
    pub interface: Interface,
    pub streaming: bool,
    pub push: bool,
}

/// The upstream's JSON-RPC interface.
#[derive(Debug, Clone)]
pub(crate) struct Interface {
    pub url: Uri,
    pub version: Version,
}

/// Why a card cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CardError {
    #[error("the card is larger than 1 MiB")]
    TooLarge,
    #[error("the card is not a JSON object")]
    NotAnObject,
    #[error("the card lists more than {MAX_SKILLS} skills")]
    TooManySkills,
    #[error("the card names no JSON-RPC interface of protocol 1.x or 0.3 on an http(s) URL")]
    NoInterface,
}

/// Reads an upstream card.
pub(crate) fn parse(body: &[u8]) -> Result<RemoteCard, CardError> {
    if body.len() > MAX_CARD_BYTES {
        return Err(CardError::TooLarge);
    }
    let value: Value = serde_json::from_slice(body).map_err(|_| CardError::NotAnObject)?;
    let Value::Object(mut card) = value else {
        return Err(CardError::NotAnObject);
    };
    if card
        .get("skills")
        .and_then(Value::as_array)
        .is_some_and(|skills| skills.len() > MAX_SKILLS)
    {
        return Err(CardError::TooManySkills);
    }
    if !card.contains_key("supportedInterfaces") {
        normalize_v03(&mut card);
    }
    let interface = pick_interface(&card).ok_or(CardError::NoInterface)?;
    let capability = |name: &str| {
        card.get("capabilities")
            .and_then(|c| c.get(name))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    Ok(RemoteCard {
        streaming: capability("streaming"),
        push: capability("pushNotifications"),
        interface,
        card: Value::Object(card),
    })
}

/// A 0.3 card's interfaces as 1.0 `supportedInterfaces` (the top-level `url` with its
/// `preferredTransport`, then `additionalInterfaces`), all of the card's `protocolVersion`.
fn normalize_v03(card: &mut Map<String, Value>) {
    let version = card
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or("0.3")
        .to_owned();
    let mut interfaces = Vec::new();
    if let Some(url) = card.get("url").and_then(Value::as_str) {
        let binding = card
            .get("preferredTransport")
            .and_then(Value::as_str)
            .unwrap_or("JSONRPC");
        interfaces
            .push(json!({"url": url, "protocolBinding": binding, "protocolVersion": version}));
    }
    if let Some(Value::Array(more)) = card.get("additionalInterfaces") {
        for interface in more {
            let (Some(url), Some(binding)) = (
                interface.get("url").and_then(Value::as_str),
                interface.get("transport").and_then(Value::as_str),
            ) else {
                continue;
            };
            let entry = json!({"url": url, "protocolBinding": binding, "protocolVersion": version});
            if !interfaces.contains(&entry) {
                interfaces.push(entry);
            }
        }
    }
    card.insert("supportedInterfaces".to_owned(), Value::Array(interfaces));
}

/// The JSON-RPC interface to use: 1.x first, else 0.3.
fn pick_interface(card: &Map<String, Value>) -> Option<Interface> {
    let interfaces = card.get("supportedInterfaces")?.as_array()?;
    let candidates = interfaces.iter().filter_map(|interface| {
        let binding = interface.get("protocolBinding").and_then(Value::as_str)?;
        if !binding.eq_ignore_ascii_case("JSONRPC") {
            return None;
        }
        let version = interface
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("1.0");
        let version = match version.split('.').next()? {
            "1" => Version::V1,
            "0" if version.starts_with("0.3") => Version::V03,
            _ => return None,
        };
        let url: Uri = interface.get("url")?.as_str()?.parse().ok()?;
        matches!(url.scheme_str(), Some("http" | "https"))
            .then_some(())
            .and(url.authority().map(|_| ()))?;
        Some(Interface { url, version })
    });
    let mut fallback = None;
    for candidate in candidates {
        if candidate.version.is_v1() {
            return Some(candidate);
        }
        fallback.get_or_insert(candidate);
    }
    fallback
}

/// The card the runtime serves for `remote` at `agent_url`, with the runtime's security
/// `schemes` and `requirements`; the 0.3 members too when `v03_members`.
pub(crate) fn synthesize(
    remote: &RemoteCard,
    agent_url: &str,
    schemes: &Value,
    requirements: &Value,
    v03_members: bool,
) -> Value {
    let upstream = remote.card.as_object();
    let mut card = Map::new();
    for member in [
        "name",
        "description",
        "version",
        "provider",
        "documentationUrl",
        "iconUrl",
        "defaultInputModes",
        "defaultOutputModes",
    ] {
        if let Some(value) = upstream.and_then(|c| c.get(member)) {
            card.insert(member.to_owned(), value.clone());
        }
    }
    let skills: Vec<Value> = upstream
        .and_then(|c| c.get("skills"))
        .and_then(Value::as_array)
        .map(|skills| {
            skills
                .iter()
                .map(|skill| {
                    let mut skill = skill.clone();
                    if let Some(object) = skill.as_object_mut() {
                        object.remove("securityRequirements");
                        object.remove("security");
                    }
                    skill
                })
                .collect()
        })
        .unwrap_or_default();
    card.insert("skills".to_owned(), Value::Array(skills));
    card.insert(
        "supportedInterfaces".to_owned(),
        json!([
            {"url": agent_url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": agent_url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ]),
    );
    let mut capabilities = Map::new();
    capabilities.insert("streaming".to_owned(), remote.streaming.into());
    capabilities.insert(
        "pushNotifications".to_owned(),
        (remote.push || remote.streaming).into(),
    );
    capabilities.insert("extendedAgentCard".to_owned(), false.into());
    if let Some(extensions) = upstream
        .and_then(|c| c.get("capabilities"))
        .and_then(|c| c.get("extensions"))
    {
        capabilities.insert("extensions".to_owned(), extensions.clone());
    }
    card.insert("capabilities".to_owned(), Value::Object(capabilities));
    card.insert("securitySchemes".to_owned(), schemes.clone());
    card.insert("securityRequirements".to_owned(), requirements.clone());
    let mut card = Value::Object(card);
    if v03_members {
        v03::card_v03_members(&mut card);
    }
    card
}

#[cfg(test)]
mod tests;
