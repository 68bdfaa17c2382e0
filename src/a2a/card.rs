//! The agent card of a client application (A2A 1.0 §8, Agent Discovery): the public card at
//! `…/a2a/.well-known/agent-card.json` and the extended card of `GetExtendedAgentCard`.
//!
//! Everything comes from the catalog snapshot and the server's `public_url`, never from the
//! request's `Host`: the interface URL, the security schemes that describe the tenant's real
//! authentication (HTTP bearer for API keys and JWTs, `X-API-Key`, OAuth 2.0 authorization code
//! with PKCE when the tenant names an authorization server), and one skill per tool the client
//! sees (id = tool name, tags = its toolset, an example of the data part that runs it). The
//! extended card adds each skill's input schema, carried as the params of a sluice extension
//! (`TOOL_SCHEMAS_EXTENSION`) so that strict card parsers accept it.
//! Must not authenticate or route: `a2a/agent.rs` decides who may see which card.

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::catalog::{CatalogTool, ClientView};

/// The extension whose `params` carry each skill's input schema on the extended card.
pub(crate) const TOOL_SCHEMAS_EXTENSION: &str = "https://sluice.dev/a2a/extensions/tool-schemas/v1";

/// `Cache-Control` of the public card.
pub(crate) const CARD_CACHE_CONTROL: &str = "public, max-age=300";

/// What a card is built from besides the client's view.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CardContext<'a> {
    /// `public_url` without a trailing slash.
    pub public_base: &'a str,
    /// Whether push notifications are offered.
    pub push: bool,
}

/// The JSON-RPC endpoint URL of a client application's agent.
pub(crate) fn agent_url(public_base: &str, tenant: &str, client: &str) -> String {
    format!("{public_base}/runtime/{tenant}/{client}/a2a")
}

/// The public card (1.0 members; `agent.rs` adds the 0.3 members a 0.3 client reads).
pub(crate) fn public_card(view: &ClientView, ctx: CardContext<'_>) -> Value {
    card(view, ctx, false)
}

/// The extended card: the public card plus each skill's input schema.
pub(crate) fn extended_card(view: &ClientView, ctx: CardContext<'_>) -> Value {
    card(view, ctx, true)
}

fn card(view: &ClientView, ctx: CardContext<'_>, extended: bool) -> Value {
    let url = agent_url(ctx.public_base, view.tenant(), view.client());
    let app = view.app();
    let name = app
        .agent
        .name
        .clone()
        .unwrap_or_else(|| view.client().to_owned());
    let description = app.agent.description.clone().unwrap_or_else(|| {
        app.system_prompt
            .as_deref()
            .and_then(|prompt| prompt.lines().map(str::trim).find(|line| !line.is_empty()))
            .map(str::to_owned)
            .unwrap_or_else(|| {
                format!(
                    "The tools of client application {} of tenant {}: send a data part \
                     {{\"tool\": <skill id>, \"arguments\": {{…}}}} to run one.",
                    view.client(),
                    view.tenant()
                )
            })
    });
    let version = app
        .agent
        .version
        .clone()
        .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned());
    let (schemes, requirements) = security(view, ctx.public_base);
    let skills: Vec<Value> = view.tools().iter().map(|tool| skill(tool)).collect();
    let mut capabilities = json!({
        "streaming": true,
        "pushNotifications": ctx.push,
        "extendedAgentCard": true,
    });
    if extended {
        let schemas: Map<String, Value> = view
            .tools()
            .iter()
            .map(|tool| {
                let schema =
                    serde_json::from_slice(&tool.schemas.input_full).unwrap_or(Value::Null);
                (tool.name.to_string(), json!({ "inputSchema": schema }))
            })
            .collect();
        capabilities["extensions"] = json!([{
            "uri": TOOL_SCHEMAS_EXTENSION,
            "description": "Each skill's input schema (JSON Schema 2020-12), keyed by skill id.",
            "required": false,
            "params": schemas,
        }]);
    }
    json!({
        "name": name,
        "description": description,
        "version": version,
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ],
        "provider": {"organization": view.tenant(), "url": ctx.public_base},
        "capabilities": capabilities,
        "securitySchemes": schemes,
        "securityRequirements": requirements,
        "defaultInputModes": ["application/json", "text/plain"],
        "defaultOutputModes": ["application/json", "text/plain"],
        "skills": skills,
    })
}

/// One skill per visible tool.
fn skill(tool: &CatalogTool) -> Value {
    let schema: Value = serde_json::from_slice(&tool.schemas.input_full).unwrap_or(Value::Null);
    let example = json!({"tool": &*tool.name, "arguments": example_arguments(&schema)});
    json!({
        "id": &*tool.name,
        "name": &*tool.name,
        "description": tool.def.description,
        "tags": [&*tool.toolset],
        "examples": [example.to_string()],
        "inputModes": ["application/json", "text/plain"],
        "outputModes": ["application/json", "text/plain"],
    })
}

/// Arguments shaped like `schema` asks: each required property with its first example, its
/// default, or a value of its type.
pub(crate) fn example_arguments(schema: &Value) -> Value {
    let properties = schema.get("properties").and_then(Value::as_object);
    let required = schema.get("required").and_then(Value::as_array);
    let mut out = Map::new();
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        let property = properties.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
        out.insert(name.to_owned(), example_value(property));
    }
    Value::Object(out)
}

fn example_value(property: &Value) -> Value {
    if let Some(first) = property
        .get("examples")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if let Some(default) = property.get("default") {
        return default.clone();
    }
    let kind = match property.get("type") {
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|k| *k != "null"),
        Some(kind) => kind.as_str(),
        None => None,
    };
    match kind {
        Some("integer") => json!(1),
        Some("number") => json!(1.5),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        Some("object") => example_arguments(property),
        _ => json!("…"),
    }
}

/// `securitySchemes` and `securityRequirements` describing how this tenant authenticates.
pub(crate) fn security(view: &ClientView, public_base: &str) -> (Value, Value) {
    let auth = view.auth();
    let scopes: Vec<&str> = auth.required_scopes.iter().map(String::as_str).collect();
    let mut schemes = Map::new();
    let mut requirements = Vec::new();
    let mut require = |name: &str| {
        requirements.push(json!({"schemes": {name: {"list": scopes}}}));
    };
    if !view.app().api_keys.is_empty() {
        schemes.insert(
            "apiKey".to_owned(),
            json!({"httpAuthSecurityScheme": {
                "scheme": "Bearer",
                "bearerFormat": "rtk_ API key",
                "description": "A client application API key as a bearer token.",
            }}),
        );
        require("apiKey");
        schemes.insert(
            "apiKeyHeader".to_owned(),
            json!({"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}}),
        );
        require("apiKeyHeader");
    }
    if auth.jwt.is_some() {
        schemes.insert(
            "bearer".to_owned(),
            json!({"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}}),
        );
        require("bearer");
        if let Some(server) = auth.authorization_servers.first() {
            let server = server.trim_end_matches('/');
            let all_scopes: Map<String, Value> = auth
                .scopes_supported
                .iter()
                .chain(&auth.required_scopes)
                .map(|scope| (scope.clone(), json!(scope)))
                .collect();
            schemes.insert(
                "oauth2".to_owned(),
                json!({"oauth2SecurityScheme": {
                    "flows": {"authorizationCode": {
                        "authorizationUrl": format!("{server}/authorize"),
                        "tokenUrl": format!("{server}/token"),
                        "scopes": all_scopes,
                        "pkceRequired": true,
                    }},
                    "oauth2MetadataUrl": format!("{server}/.well-known/oauth-authorization-server"),
                    "description": format!(
                        "Tokens for the resource {public_base}/runtime/{}/{}/a2a; the metadata \
                         URL names the real authorization and token endpoints.",
                        view.tenant(),
                        view.client()
                    ),
                }}),
            );
            require("oauth2");
        }
    }
    (Value::Object(schemes), Value::Array(requirements))
}

/// The card's bytes and their weak ETag (SHA-256 of the bytes, 16 bytes in hex).
pub(crate) fn etag(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    format!("W/\"{}\"", hex::encode(&digest[..16]))
}

/// Whether an `If-None-Match` value names `etag` (a list, `*`, weak or strong forms).
pub(crate) fn matches_if_none_match(header: &[u8], etag: &str) -> bool {
    let strong = etag.trim_start_matches("W/");
    std::str::from_utf8(header).is_ok_and(|text| {
        text.split(',')
            .map(str::trim)
            .any(|candidate| candidate == "*" || candidate.trim_start_matches("W/") == strong)
    })
}

/// A card answer (the own agent's or a synthesized one): `304` when the request's
/// `If-None-Match` names `etag`, else the bytes; with the `ETag`, `Cache-Control` and
/// `Vary: A2A-Version` (the 0.3 members depend on it) every card answer carries.
pub(crate) fn answer(
    headers: &http::HeaderMap,
    bytes: bytes::Bytes,
    etag: http::HeaderValue,
) -> http::Response<crate::http::response::Body> {
    use crate::http::response;
    use http::{header, HeaderValue, StatusCode};
    let matched = headers.get(header::IF_NONE_MATCH).is_some_and(|value| {
        matches_if_none_match(value.as_bytes(), etag.to_str().unwrap_or_default())
    });
    let mut answer = if matched {
        response::empty(StatusCode::NOT_MODIFIED)
    } else {
        response::json(StatusCode::OK, bytes)
    };
    let out = answer.headers_mut();
    out.insert(header::ETAG, etag);
    out.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(CARD_CACHE_CONTROL),
    );
    out.insert(header::VARY, HeaderValue::from_static("A2A-Version"));
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_arguments_follow_the_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "id": {"type": "integer"},
                "email": {"type": ["string", "null"], "examples": ["ada@example.com"]},
                "limit": {"type": "integer", "default": 10},
                "deep": {"type": "object", "properties": {"x": {"type": "boolean"}}, "required": ["x"]},
                "optional": {"type": "string"}
            },
            "required": ["id", "email", "limit", "deep"]
        });
        assert_eq!(
            example_arguments(&schema),
            json!({"id": 1, "email": "ada@example.com", "limit": 10, "deep": {"x": true}})
        );
        assert_eq!(example_arguments(&json!({})), json!({}));
    }

    #[test]
    fn if_none_match_reads_lists_and_weak_forms() {
        let tag = etag(b"card");
        assert!(tag.starts_with("W/\""));
        assert!(matches_if_none_match(tag.as_bytes(), &tag));
        assert!(matches_if_none_match(
            tag.trim_start_matches("W/").as_bytes(),
            &tag
        ));
        assert!(matches_if_none_match(
            format!("\"x\", {tag}").as_bytes(),
            &tag
        ));
        assert!(matches_if_none_match(b"*", &tag));
        assert!(!matches_if_none_match(b"\"other\"", &tag));
        assert!(!matches_if_none_match(&[0xff], &tag));
    }
}
