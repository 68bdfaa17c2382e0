//! Stateless-era `_meta` validation, the `Mcp-Name` routing value, and request-local
//! experimental opt-ins.
//!
//! MCP 2026-07-28 (Basic § `_meta`): every request carries `params._meta` with
//! `io.modelcontextprotocol/protocolVersion` (required), `…/clientCapabilities` (required, may
//! be `{}`) and `…/clientInfo` (SHOULD). "If a required key is missing, the server MUST reply
//! -32602" (HTTP 400); a version the server does not implement is -32022 with
//! `data: {supported, requested}`. The transport calls [`stateless_meta`] first for every
//! stateless-era request. Must not decide HTTP statuses.

use bytes::{Bytes, BytesMut};
use simd_json::prelude::*;
use simd_json::tape::Value;

use super::names::{
    META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, PROMPTS_GET, RESOURCES_READ,
    TOOLS_CALL,
};
use super::{json, Era, McpError, ProtocolVersion, SOURCE_RESULTS_EXTENSION};
use crate::jsonrpc::{echo, Payload};

/// What a valid stateless-era `_meta` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaInfo {
    /// The protocol version (one of [`ProtocolVersion::STATELESS`]).
    pub version: ProtocolVersion,
    /// The client's `clientInfo` as JSON, when sent.
    pub client_info: Option<Bytes>,
    /// The client's `clientCapabilities` as JSON (an object).
    pub client_capabilities: Bytes,
    /// Whether `clientCapabilities.experimental["bos/source-results/v1"]` is an object: the
    /// request-local opt-in of the source-results extension (`src/federation/contract.md`; a `true`
    /// does not negotiate it).
    pub source_results: bool,
}

impl MetaInfo {
    /// Whether the client sent `clientInfo`.
    #[cfg(test)]
    pub(crate) fn has_client_info(&self) -> bool {
        self.client_info.is_some()
    }
}

/// The `_meta` object of a request, when params and `_meta` are objects.
fn meta<'p, 'a>(params: Option<&'p Payload<'a>>) -> Option<Value<'p, 'a>> {
    params?.value().get("_meta").filter(|m| m.is_object())
}

/// The protocol version a request's `_meta` names, if any (the body-first era classification
/// of `docs/eras.md`: a request carrying it is a stateless-era request).
pub(crate) fn meta_protocol_version<'a>(params: Option<&Payload<'a>>) -> Option<&'a str> {
    meta(params)?.get(META_PROTOCOL_VERSION)?.into_string()
}

/// Validates the stateless-era `_meta` of a request.
pub fn stateless_meta(params: Option<&Payload<'_>>) -> Result<MetaInfo, McpError> {
    let (version, meta, capabilities) = checked_meta(params)?;
    let member = |key: &str| meta.get(key).filter(|v| !v.is_null());
    Ok(MetaInfo {
        version,
        client_info: member(META_CLIENT_INFO).map(raw),
        client_capabilities: raw(capabilities),
        source_results: is_opted_in(capabilities, SOURCE_RESULTS_EXTENSION),
    })
}

/// Applies exactly the rules of [`stateless_meta`] and returns the version, without copying
/// `clientInfo` and `clientCapabilities` out of the request (the transport's per-request check
/// needs only the verdict).
pub(crate) fn validate_stateless_meta(
    params: Option<&Payload<'_>>,
) -> Result<ProtocolVersion, McpError> {
    checked_meta(params).map(|(version, _, _)| version)
}

/// The shared rules: the version, the `_meta` object and its `clientCapabilities` object.
#[allow(clippy::type_complexity)]
fn checked_meta<'p, 'a>(
    params: Option<&'p Payload<'a>>,
) -> Result<(ProtocolVersion, Value<'p, 'a>, Value<'p, 'a>), McpError> {
    let meta = meta(params);
    let member = |key: &str| meta.and_then(|m| m.get(key)).filter(|v| !v.is_null());

    let version =
        member(META_PROTOCOL_VERSION).ok_or(McpError::MissingMeta(META_PROTOCOL_VERSION))?;
    let version = version.as_str().ok_or_else(|| {
        McpError::InvalidParams(format!("_meta {META_PROTOCOL_VERSION} must be a string").into())
    })?;
    let capabilities =
        member(META_CLIENT_CAPABILITIES).ok_or(McpError::MissingMeta(META_CLIENT_CAPABILITIES))?;
    if !capabilities.is_object() {
        return Err(McpError::InvalidParams(
            format!("_meta {META_CLIENT_CAPABILITIES} must be an object").into(),
        ));
    }
    let version =
        ProtocolVersion::parse_in(Era::Stateless, version.as_bytes()).ok_or_else(|| {
            McpError::UnsupportedVersion {
                requested: echo(version).into_owned(),
            }
        })?;
    match meta {
        Some(meta) => Ok((version, meta, capabilities)),
        // `capabilities` was found inside `meta`, so this cannot happen.
        None => Err(McpError::MissingMeta(META_PROTOCOL_VERSION)),
    }
}

/// Whether `_meta["io.modelcontextprotocol/clientCapabilities"].experimental[name]` is an
/// object. Works in both eras: 2025-era BOS clients put the request-local opt-in at the same
/// key (`docs/eras.md`, "The BOS extension against the spec").
pub(crate) fn experimental_opt_in(params: Option<&Payload<'_>>, name: &str) -> bool {
    meta(params)
        .and_then(|m| m.get(META_CLIENT_CAPABILITIES))
        .is_some_and(|capabilities| is_opted_in(capabilities, name))
}

fn is_opted_in(capabilities: Value<'_, '_>, name: &str) -> bool {
    capabilities
        .get("experimental")
        .and_then(|experimental| experimental.get(name))
        .is_some_and(|value| value.is_object())
}

/// The value the `Mcp-Name` header must equal: `params.name` for `tools/call` and
/// `prompts/get`, `params.uri` for `resources/read`; `None` for other methods or when absent.
pub(crate) fn routing_name<'a>(method: &str, params: Option<&Payload<'a>>) -> Option<&'a str> {
    let key = match method {
        TOOLS_CALL | PROMPTS_GET => "name",
        RESOURCES_READ => "uri",
        _ => return None,
    };
    params?.value().get(key)?.into_string()
}

fn raw(value: Value<'_, '_>) -> Bytes {
    let mut out = BytesMut::new();
    json::put_value(&mut out, value);
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::{parse, Message};

    fn with_params<T>(params: &str, f: impl FnOnce(Option<&Payload<'_>>) -> T) -> T {
        let mut body = if params.is_empty() {
            br#"{"jsonrpc":"2.0","id":1,"method":"m"}"#.to_vec()
        } else {
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{params}}}"#).into_bytes()
        };
        let Ok(Message::Request { params, .. }) = parse(&mut body) else {
            panic!("not a request: {params}");
        };
        f(params.as_ref())
    }

    /// Checks `stateless_meta` of `params`: `Ok(version, source_results)` or the error code.
    fn check(params: &str, expected: Result<(&str, bool), i32>) {
        let verdict = with_params(params, |p| {
            validate_stateless_meta(p)
                .map(ProtocolVersion::as_str)
                .map_err(|e| e.code().0)
        });
        assert_eq!(verdict, expected.map(|(v, _)| v), "{params}");
        let got = with_params(params, |p| {
            stateless_meta(p)
                .map(|m| (m.version.as_str(), m.source_results))
                .map_err(|e| e.code().0)
        });
        assert_eq!(got, expected, "{params}");
    }

    const V: &str = r#""io.modelcontextprotocol/protocolVersion""#;
    const C: &str = r#""io.modelcontextprotocol/clientCapabilities""#;

    #[test]
    fn stateless_meta_rules() {
        check(
            &format!(r#"{{"_meta":{{{V}:"2026-07-28",{C}:{{}}}}}}"#),
            Ok(("2026-07-28", false)),
        );
        check("", Err(-32602));
        check("{}", Err(-32602));
        check(r#"{"_meta":[]}"#, Err(-32602));
        check(&format!(r#"{{"_meta":{{{C}:{{}}}}}}"#), Err(-32602));
        check(&format!(r#"{{"_meta":{{{V}:"2026-07-28"}}}}"#), Err(-32602));
        check(
            &format!(r#"{{"_meta":{{{V}:"2026-07-28",{C}:[]}}}}"#),
            Err(-32602),
        );
        check(&format!(r#"{{"_meta":{{{V}:7,{C}:{{}}}}}}"#), Err(-32602));
        check(
            &format!(r#"{{"_meta":{{{V}:"2025-11-25",{C}:{{}}}}}}"#),
            Err(-32022),
        );
        check(
            &format!(r#"{{"_meta":{{{V}:"2099-01-01",{C}:{{}}}}}}"#),
            Err(-32022),
        );
        check(
            &format!(
                r#"{{"_meta":{{{V}:"2026-07-28",{C}:{{"experimental":{{"bos/source-results/v1":{{}}}}}}}}}}"#
            ),
            Ok(("2026-07-28", true)),
        );
        check(
            &format!(
                r#"{{"_meta":{{{V}:"2026-07-28",{C}:{{"experimental":{{"bos/source-results/v1":true}}}}}}}}"#
            ),
            Ok(("2026-07-28", false)),
        );
    }

    #[test]
    fn missing_meta_names_the_key_and_unsupported_version_carries_data() {
        let err = with_params(&format!(r#"{{"_meta":{{{V}:"2026-07-28"}}}}"#), |p| {
            stateless_meta(p).unwrap_err()
        });
        assert!(matches!(err, McpError::MissingMeta(k) if k == META_CLIENT_CAPABILITIES));
        let err = with_params(&format!(r#"{{"_meta":{{{V}:"1999",{C}:{{}}}}}}"#), |p| {
            stateless_meta(p).unwrap_err()
        });
        let data: serde_json::Value = serde_json::from_slice(&err.data().unwrap()).unwrap();
        assert_eq!(data["requested"], "1999");
        assert_eq!(data["supported"][0], "2026-07-28");
        assert!(data["supported"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("2025-11-25")));
    }

    #[test]
    fn client_info_and_capabilities_are_kept_raw() {
        let info = with_params(
            &format!(
                r#"{{"_meta":{{{V}:"2026-07-28",{C}:{{"a":1}},"io.modelcontextprotocol/clientInfo":{{"name":"x","version":"1"}}}}}}"#
            ),
            |p| stateless_meta(p).unwrap(),
        );
        assert!(info.has_client_info());
        assert_eq!(&info.client_capabilities[..], br#"{"a":1}"#);
        assert_eq!(
            &info.client_info.unwrap()[..],
            br#"{"name":"x","version":"1"}"#
        );
    }

    fn check_routing(method: &str, params: &str, expected: Option<&str>) {
        let got = with_params(params, |p| routing_name(method, p).map(str::to_owned));
        assert_eq!(got.as_deref(), expected, "{method} {params}");
    }

    #[test]
    fn routing_names() {
        check_routing("tools/call", r#"{"name":"echo"}"#, Some("echo"));
        check_routing("prompts/get", r#"{"name":"p\u00e9"}"#, Some("pé"));
        check_routing(
            "resources/read",
            r#"{"uri":"sluice://prompts/a"}"#,
            Some("sluice://prompts/a"),
        );
        check_routing("resources/read", r#"{"name":"x"}"#, None);
        check_routing("tools/list", r#"{"name":"x"}"#, None);
        check_routing("tools/call", "", None);
        check_routing("tools/call", r#"{"name":3}"#, None);
    }

    #[test]
    fn experimental_opt_in_in_either_era() {
        let opted =
            format!(r#"{{"_meta":{{{C}:{{"experimental":{{"bos/source-results/v1":{{}}}}}}}}}}"#);
        assert!(with_params(&opted, |p| experimental_opt_in(
            p,
            SOURCE_RESULTS_EXTENSION
        )));
        assert!(!with_params(&opted, |p| experimental_opt_in(p, "other")));
        assert!(!with_params("{}", |p| experimental_opt_in(
            p,
            SOURCE_RESULTS_EXTENSION
        )));
        assert_eq!(
            with_params(&format!(r#"{{"_meta":{{{V}:"2026-07-28"}}}}"#), |p| {
                meta_protocol_version(p).map(str::to_owned)
            }),
            Some("2026-07-28".to_owned())
        );
    }
}
