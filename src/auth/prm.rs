//! Protected-resource metadata (RFC 9728): the document clients read to find the authorization
//! server, and the URLs it and the endpoint are published at.
//!
//! Owns URL construction from the configured public base and the document's JSON shape (RFC 9728
//! §3; MCP 2025-11-25, Authorization § Protected Resource Metadata Discovery Requirements: the
//! path-inserted well-known URL, `resource` equal to the endpoint URL). Must not build URLs from
//! request headers (`Host`, `X-Forwarded-*`): the public base comes from configuration, so it is
//! right behind proxies and cannot be steered by a client. Serving (status, CORS, caching) belongs
//! to the router.

use bytes::Bytes;
use serde::Serialize;

use crate::config::TenantAuth;

/// The well-known path segment inserted between the host and the resource path (RFC 9728 §3).
pub(crate) const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The public URL of an endpoint: `{base}{endpoint_path}`, e.g.
/// `https://rt.example.com/runtime/t1/c1/mcp`. This exact string is the PRM `resource` and, when
/// a tenant configures no audiences, the audience JWTs must carry.
pub(crate) fn resource_url(public_base: &str, endpoint_path: &str) -> String {
    let base = public_base.trim_end_matches('/');
    let mut out = String::with_capacity(base.len() + endpoint_path.len() + 1);
    out.push_str(base);
    if !endpoint_path.starts_with('/') {
        out.push('/');
    }
    out.push_str(endpoint_path);
    out
}

/// The path-inserted metadata URL of an endpoint:
/// `{base}/.well-known/oauth-protected-resource{endpoint_path}`.
pub(crate) fn metadata_url(public_base: &str, endpoint_path: &str) -> String {
    let base = public_base.trim_end_matches('/');
    let mut out = String::with_capacity(base.len() + WELL_KNOWN.len() + endpoint_path.len() + 1);
    out.push_str(base);
    out.push_str(WELL_KNOWN);
    if !endpoint_path.starts_with('/') {
        out.push('/');
    }
    out.push_str(endpoint_path);
    out
}

#[derive(Serialize)]
struct Document<'a> {
    resource: &'a str,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    authorization_servers: &'a [String],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    scopes_supported: &'a [String],
    bearer_methods_supported: [&'static str; 1],
    resource_name: &'a str,
}

/// The RFC 9728 document for `resource` (the endpoint's exact public URL, see [`resource_url`]).
///
/// `authorization_servers` is the tenant's list or, when that is empty and JWTs are configured,
/// the JWT issuer (the server that mints the tokens this resource accepts); it is omitted when
/// there is none (API-key-only tenants). `scopes_supported` is omitted when empty. Tokens are
/// accepted in the `Authorization` header only.
pub(crate) fn document(resource: &str, auth: &TenantAuth, resource_name: &str) -> Bytes {
    let issuer;
    let authorization_servers: &[String] = match (&auth.jwt, auth.authorization_servers.is_empty())
    {
        (Some(jwt), true) => {
            issuer = [jwt.issuer.clone()];
            &issuer
        }
        _ => &auth.authorization_servers,
    };
    let doc = Document {
        resource,
        authorization_servers,
        scopes_supported: &auth.scopes_supported,
        bearer_methods_supported: ["header"],
        resource_name,
    };
    // Serializing strings and string slices cannot fail; an empty object is the safe fallback.
    serde_json::to_vec(&doc).map_or_else(|_| Bytes::from_static(b"{}"), Bytes::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn urls_insert_the_well_known_segment() {
        let check = |base: &str, path: &str, resource: &str, metadata: &str| {
            assert_eq!(resource_url(base, path), resource);
            assert_eq!(metadata_url(base, path), metadata);
        };
        check(
            "https://rt.example.com",
            "/runtime/t1/c1/mcp",
            "https://rt.example.com/runtime/t1/c1/mcp",
            "https://rt.example.com/.well-known/oauth-protected-resource/runtime/t1/c1/mcp",
        );
        check(
            "http://127.0.0.1:8080/",
            "/runtime/t1/c1/sse",
            "http://127.0.0.1:8080/runtime/t1/c1/sse",
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource/runtime/t1/c1/sse",
        );
    }

    fn parse(bytes: &Bytes) -> serde_json::Value {
        serde_json::from_slice(bytes).unwrap()
    }

    #[test]
    fn document_shape() {
        let auth = TenantAuth {
            authorization_servers: vec!["https://rt.example.com/oauth/t1".to_owned()],
            scopes_supported: vec!["mcp:tools".to_owned(), "mcp:resources".to_owned()],
            ..TenantAuth::default()
        };
        let resource = "https://rt.example.com/runtime/t1/c1/mcp";
        let doc = document(resource, &auth, "Runtime t1/c1");
        assert_eq!(
            parse(&doc),
            json!({
                "resource": resource,
                "authorization_servers": ["https://rt.example.com/oauth/t1"],
                "scopes_supported": ["mcp:tools", "mcp:resources"],
                "bearer_methods_supported": ["header"],
                "resource_name": "Runtime t1/c1",
            })
        );
        // Field order follows RFC 9728's listing.
        let text = std::str::from_utf8(&doc).unwrap();
        assert!(text.starts_with(r#"{"resource":"#), "{text}");
    }

    #[test]
    fn document_omits_empty_lists_and_falls_back_to_the_issuer() {
        let resource = "https://rt.example.com/runtime/t1/c1/mcp";
        let doc = document(resource, &TenantAuth::default(), "n");
        assert_eq!(
            parse(&doc),
            json!({"resource": resource, "bearer_methods_supported": ["header"], "resource_name": "n"})
        );
        let config = crate::config::parse(
            r#"
[[tenant]]
id = "t1"
[tenant.auth.jwt]
issuer = "https://idp.example.com/t1"
jwks_file = "x.json"
"#,
            "t",
        )
        .unwrap();
        let auth = &config.tenants[0].auth;
        assert_eq!(
            parse(&document(resource, auth, "n"))["authorization_servers"],
            json!(["https://idp.example.com/t1"])
        );
    }
}
