//! Route matching for the paths of `docs/routes.md`: a hand-written split on `/`, no regex.
//!
//! Path segments are percent-decoded (borrowed when nothing is encoded, so the common path does
//! not allocate) and validated: tenant and client ids `[A-Za-z0-9._-]{1,64}`, tool names
//! `[A-Za-z0-9_.-]{1,128}`. A segment that fails validation (or is not UTF-8 after decoding) is
//! answered **404**: no tenant, client or tool can have such a name, so the resource does not
//! exist, and the answer reveals nothing about which part was wrong. A known path with the wrong
//! method is 405 with `Allow`; anything else is 404. Must not know what the routes do.

use std::borrow::Cow;

use http::Method;
use percent_encoding::percent_decode_str;

/// Longest tenant or client id, in bytes.
pub(crate) const MAX_ID_LEN: usize = 64;
/// Longest tool name, in bytes.
pub(crate) const MAX_TOOL_NAME_LEN: usize = 128;

/// The well-known prefix under which protected-resource metadata is served.
pub(crate) const PROTECTED_RESOURCE_PREFIX: &str = "/.well-known/oauth-protected-resource";

/// `Allow` values for each route family.
pub(crate) mod allow {
    /// The MCP endpoints.
    pub(crate) const MCP: &str = "POST, GET, DELETE";
    /// Read-only routes.
    pub(crate) const GET: &str = "GET";
    /// Write-only routes.
    pub(crate) const POST: &str = "POST";
}

/// The tenant and client a runtime route addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target<'a> {
    /// The tenant id, decoded and validated.
    pub tenant: Cow<'a, str>,
    /// The client application id, decoded and validated.
    pub client: Cow<'a, str>,
}

/// A matched route. The method has been checked against the route's allowed set; routes that
/// allow several methods leave the dispatch on method to their handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route<'a> {
    /// `POST|GET|DELETE /runtime/{tenant}/{client}/mcp`: Streamable HTTP.
    Mcp(Target<'a>),
    /// `GET /runtime/{tenant}/{client}/sse`: legacy HTTP+SSE stream.
    LegacySse(Target<'a>),
    /// `POST /runtime/{tenant}/{client}/messages`: legacy HTTP+SSE messages.
    LegacyMessages(Target<'a>),
    /// `GET /runtime/{tenant}/{client}/tools`: REST tool list.
    RestTools(Target<'a>),
    /// `POST /runtime/{tenant}/{client}/tools/{name}`: REST tool call.
    RestCall(Target<'a>, Cow<'a, str>),
    /// `POST /runtime/{tenant}/{client}/a2a`: the client application's A2A agent (JSON-RPC).
    A2a(Target<'a>),
    /// `GET /runtime/{tenant}/{client}/a2a/.well-known/agent-card.json`: its public card.
    A2aCard(Target<'a>),
    /// `GET /runtime/{tenant}/{client}/a2a/agents`: the registered remote agents the client
    /// application may reach.
    A2aAgents(Target<'a>),
    /// `POST /runtime/{tenant}/{client}/a2a/agents/{agentId}`: a remote agent, proxied.
    A2aRemote(Target<'a>, Cow<'a, str>),
    /// `GET /runtime/{tenant}/{client}/a2a/agents/{agentId}/.well-known/agent-card.json`: its
    /// synthesized card.
    A2aRemoteCard(Target<'a>, Cow<'a, str>),
    /// `POST /runtime/a2a/push/{relayId}`: the push relay webhook upstream agents call.
    A2aPushRelay(&'a str),
    /// `POST|GET|DELETE /mcp/apps/bos/platform`: the BOS platform app.
    BosPlatform,
    /// `GET /.well-known/oauth-protected-resource{rest}`: `rest` is the endpoint path (`""` or
    /// starting with `/`), still percent-encoded.
    ProtectedResource(&'a str),
    /// `GET /healthz`.
    Healthz,
    /// `GET /readyz`.
    Readyz,
    /// `GET /metrics`.
    Metrics,
    /// `POST /admin/reload`.
    AdminReload,
    /// `OPTIONS` on a route that browsers may call: a CORS preflight. `allow` lists the route's
    /// methods; `public` is set for the protected-resource metadata (open to any origin).
    Preflight {
        /// The route's methods.
        allow: &'static str,
        /// Whether the route is public metadata.
        public: bool,
    },
}

/// Why no route answers a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RouteError {
    /// No such path (or an invalid segment).
    NotFound,
    /// The path exists; `allow` lists its methods.
    MethodNotAllowed {
        /// The `Allow` header value.
        allow: &'static str,
    },
}

impl From<RouteError> for super::Error {
    fn from(err: RouteError) -> Self {
        match err {
            RouteError::NotFound => super::Error::NotFound,
            RouteError::MethodNotAllowed { allow } => super::Error::MethodNotAllowed { allow },
        }
    }
}

/// Most segments any route has
/// (`runtime/{t}/{c}/a2a/agents/{agentId}/.well-known/agent-card.json`).
const MAX_SEGMENTS: usize = 8;

/// The prefix of every push relay id (so `/runtime/a2a/push/{relayId}` never shadows a tenant
/// `a2a`'s client `push`).
pub(crate) const RELAY_ID_PREFIX: &str = "rl_";

/// Longest push relay id.
const MAX_RELAY_ID_LEN: usize = 64;

/// Matches `path` (without the query) and `method` to a route.
pub(crate) fn route<'a>(method: &Method, path: &'a str) -> Result<Route<'a>, RouteError> {
    if let Some(rest) = path.strip_prefix(PROTECTED_RESOURCE_PREFIX) {
        if rest.is_empty() || rest.starts_with('/') {
            if method == Method::OPTIONS {
                return Ok(Route::Preflight {
                    allow: allow::GET,
                    public: true,
                });
            }
            return only(
                method,
                &Method::GET,
                allow::GET,
                Route::ProtectedResource(rest),
            );
        }
        return Err(RouteError::NotFound);
    }

    let Some(rest) = path.strip_prefix('/') else {
        return Err(RouteError::NotFound);
    };
    let mut segments = [""; MAX_SEGMENTS];
    let mut n_segments = 0;
    for segment in rest.split('/') {
        let Some(slot) = segments.get_mut(n_segments) else {
            return Err(RouteError::NotFound);
        };
        *slot = segment;
        n_segments += 1;
    }

    match &segments[..n_segments] {
        ["healthz"] => only(method, &Method::GET, allow::GET, Route::Healthz),
        ["readyz"] => only(method, &Method::GET, allow::GET, Route::Readyz),
        ["metrics"] => only(method, &Method::GET, allow::GET, Route::Metrics),
        ["admin", "reload"] => only(method, &Method::POST, allow::POST, Route::AdminReload),
        ["mcp", "apps", "bos", "platform"] if method == Method::OPTIONS => Ok(Route::Preflight {
            allow: allow::MCP,
            public: false,
        }),
        ["mcp", "apps", "bos", "platform"] => mcp_methods(method, Route::BosPlatform),
        ["runtime", "a2a", "push", relay]
            if relay.starts_with(RELAY_ID_PREFIX)
                && relay.len() <= MAX_RELAY_ID_LEN
                && relay
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-')) =>
        {
            only(
                method,
                &Method::POST,
                allow::POST,
                Route::A2aPushRelay(relay),
            )
        }
        ["runtime", tenant, client, tail @ ..] => {
            let target = Target {
                tenant: decode_id(tenant, MAX_ID_LEN)?,
                client: decode_id(client, MAX_ID_LEN)?,
            };
            match tail {
                ["a2a", ".well-known", "agent-card.json"] if method == Method::OPTIONS => {
                    Ok(Route::Preflight {
                        allow: allow::GET,
                        public: true,
                    })
                }
                ["a2a", ".well-known", "agent-card.json"] => {
                    only(method, &Method::GET, allow::GET, Route::A2aCard(target))
                }
                ["a2a", "agents", _, ".well-known", "agent-card.json"]
                    if method == Method::OPTIONS =>
                {
                    Ok(Route::Preflight {
                        allow: allow::GET,
                        public: true,
                    })
                }
                ["a2a", "agents", id, ".well-known", "agent-card.json"] => {
                    let id = decode_id(id, MAX_ID_LEN)?;
                    only(
                        method,
                        &Method::GET,
                        allow::GET,
                        Route::A2aRemoteCard(target, id),
                    )
                }
                ["a2a", "agents"] | ["a2a", "agents", _] if method == Method::OPTIONS => {
                    Ok(Route::Preflight {
                        allow: if tail.len() == 2 {
                            allow::GET
                        } else {
                            allow::POST
                        },
                        public: false,
                    })
                }
                ["a2a", "agents"] => {
                    only(method, &Method::GET, allow::GET, Route::A2aAgents(target))
                }
                ["a2a", "agents", id] => {
                    let id = decode_id(id, MAX_ID_LEN)?;
                    only(
                        method,
                        &Method::POST,
                        allow::POST,
                        Route::A2aRemote(target, id),
                    )
                }
                ["mcp"] | ["sse"] | ["messages"] | ["tools"] | ["tools", _] | ["a2a"]
                    if method == Method::OPTIONS =>
                {
                    let allow = match tail {
                        ["mcp"] => allow::MCP,
                        ["sse"] | ["tools"] => allow::GET,
                        _ => allow::POST,
                    };
                    Ok(Route::Preflight {
                        allow,
                        public: false,
                    })
                }
                ["mcp"] => mcp_methods(method, Route::Mcp(target)),
                ["a2a"] => only(method, &Method::POST, allow::POST, Route::A2a(target)),
                ["sse"] => only(method, &Method::GET, allow::GET, Route::LegacySse(target)),
                ["messages"] => only(
                    method,
                    &Method::POST,
                    allow::POST,
                    Route::LegacyMessages(target),
                ),
                ["tools"] => only(method, &Method::GET, allow::GET, Route::RestTools(target)),
                ["tools", name] => {
                    let name = decode_id(name, MAX_TOOL_NAME_LEN)?;
                    only(
                        method,
                        &Method::POST,
                        allow::POST,
                        Route::RestCall(target, name),
                    )
                }
                _ => Err(RouteError::NotFound),
            }
        }
        _ => Err(RouteError::NotFound),
    }
}

fn only<'a>(
    method: &Method,
    wanted: &Method,
    allow: &'static str,
    route: Route<'a>,
) -> Result<Route<'a>, RouteError> {
    if method == wanted {
        Ok(route)
    } else {
        Err(RouteError::MethodNotAllowed { allow })
    }
}

fn mcp_methods<'a>(method: &Method, route: Route<'a>) -> Result<Route<'a>, RouteError> {
    if method == Method::POST || method == Method::GET || method == Method::DELETE {
        Ok(route)
    } else {
        Err(RouteError::MethodNotAllowed { allow: allow::MCP })
    }
}

/// Percent-decodes one segment and checks it against `[A-Za-z0-9._-]{1,max_len}`.
fn decode_id(segment: &str, max_len: usize) -> Result<Cow<'_, str>, RouteError> {
    // The common case, no escape at all: validate the segment as it is.
    let decoded = if memchr::memchr(b'%', segment.as_bytes()).is_none() {
        Cow::Borrowed(segment)
    } else {
        percent_decode_str(segment)
            .decode_utf8()
            .map_err(|_| RouteError::NotFound)?
    };
    let valid = !decoded.is_empty()
        && decoded.len() <= max_len
        && decoded
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if valid {
        Ok(decoded)
    } else {
        Err(RouteError::NotFound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t<'a>(tenant: &'a str, client: &'a str) -> Target<'a> {
        Target {
            tenant: tenant.into(),
            client: client.into(),
        }
    }

    fn check(method: &str, path: &str, expected: Result<Route<'_>, RouteError>) {
        let method = Method::from_bytes(method.as_bytes()).unwrap_or(Method::OPTIONS);
        assert_eq!(route(&method, path), expected, "{method} {path}");
    }

    const NF: Result<Route<'static>, RouteError> = Err(RouteError::NotFound);
    fn na(allow: &'static str) -> Result<Route<'static>, RouteError> {
        Err(RouteError::MethodNotAllowed { allow })
    }

    #[test]
    fn table() {
        check(
            "POST",
            "/runtime/acme/app/mcp",
            Ok(Route::Mcp(t("acme", "app"))),
        );
        check(
            "GET",
            "/runtime/acme/app/mcp",
            Ok(Route::Mcp(t("acme", "app"))),
        );
        check(
            "DELETE",
            "/runtime/acme/app/mcp",
            Ok(Route::Mcp(t("acme", "app"))),
        );
        check("PUT", "/runtime/acme/app/mcp", na(allow::MCP));
        let preflight = |allow, public| Ok(Route::Preflight { allow, public });
        check(
            "OPTIONS",
            "/runtime/acme/app/mcp",
            preflight(allow::MCP, false),
        );
        check(
            "OPTIONS",
            "/runtime/acme/app/sse",
            preflight(allow::GET, false),
        );
        check(
            "OPTIONS",
            "/runtime/acme/app/messages",
            preflight(allow::POST, false),
        );
        check(
            "OPTIONS",
            "/runtime/acme/app/tools/x",
            preflight(allow::POST, false),
        );
        check(
            "OPTIONS",
            "/.well-known/oauth-protected-resource/runtime/acme/app/mcp",
            preflight(allow::GET, true),
        );
        check(
            "OPTIONS",
            "/runtime/bad%20id/app/mcp",
            Err(RouteError::NotFound),
        );
        check(
            "GET",
            "/runtime/a.b_c-D9/x/sse",
            Ok(Route::LegacySse(t("a.b_c-D9", "x"))),
        );
        check("POST", "/runtime/a/b/sse", na(allow::GET));
        check(
            "POST",
            "/runtime/a/b/messages",
            Ok(Route::LegacyMessages(t("a", "b"))),
        );
        check("GET", "/runtime/a/b/messages", na(allow::POST));
        check(
            "GET",
            "/runtime/a/b/tools",
            Ok(Route::RestTools(t("a", "b"))),
        );
        check(
            "POST",
            "/runtime/a/b/tools/get_user",
            Ok(Route::RestCall(t("a", "b"), "get_user".into())),
        );
        check("GET", "/runtime/a/b/tools/get_user", na(allow::POST));
        check("POST", "/mcp/apps/bos/platform", Ok(Route::BosPlatform));
        check("PATCH", "/mcp/apps/bos/platform", na(allow::MCP));
        check(
            "GET",
            "/.well-known/oauth-protected-resource",
            Ok(Route::ProtectedResource("")),
        );
        check(
            "GET",
            "/.well-known/oauth-protected-resource/runtime/a/b/mcp",
            Ok(Route::ProtectedResource("/runtime/a/b/mcp")),
        );
        check(
            "POST",
            "/.well-known/oauth-protected-resource/x",
            na(allow::GET),
        );
        check("GET", "/.well-known/oauth-protected-resourcex", NF);
        check("GET", "/healthz", Ok(Route::Healthz));
        check("HEAD", "/healthz", na(allow::GET));
        check("GET", "/readyz", Ok(Route::Readyz));
        check("GET", "/metrics", Ok(Route::Metrics));
        check("POST", "/admin/reload", Ok(Route::AdminReload));
        check("GET", "/admin/reload", na(allow::POST));
    }

    #[test]
    fn not_found() {
        check("GET", "", NF);
        check("GET", "/", NF);
        check("GET", "healthz", NF);
        check("GET", "/healthz/", NF);
        check("GET", "//healthz", NF);
        check("POST", "/runtime/a/b", NF);
        check("POST", "/runtime/a/b/", NF);
        check("POST", "/runtime/a/b/mcp/", NF);
        check("POST", "/runtime/a/b/mcp/x/y/z", NF);
        check("POST", "/runtime//b/mcp", NF);
        check("POST", "/runtime/a//mcp", NF);
        check("POST", "/runtime/a/b/other", NF);
        check("POST", "/runtime/a/b/tools/", NF);
        check("POST", "/Runtime/a/b/mcp", NF);
        check("GET", "/mcp/apps/bos", NF);
    }

    #[test]
    fn segments_are_decoded_and_validated() {
        check(
            "POST",
            "/runtime/ac%6De/app/mcp",
            Ok(Route::Mcp(t("acme", "app"))),
        );
        check(
            "POST",
            "/runtime/a%2Db/c/mcp",
            Ok(Route::Mcp(t("a-b", "c"))),
        );
        check("POST", "/runtime/a%2Fb/c/mcp", NF);
        check("POST", "/runtime/a%20b/c/mcp", NF);
        check("POST", "/runtime/a b/c/mcp", NF);
        check("POST", "/runtime/%FF/c/mcp", NF);
        check("POST", "/runtime/caf%C3%A9/c/mcp", NF);
        check(
            "POST",
            "/runtime/a/b/tools/x%2Ey",
            Ok(Route::RestCall(t("a", "b"), "x.y".into())),
        );
        check("POST", "/runtime/a/b/tools/x$y", NF);
        let id64 = "a".repeat(64);
        let id65 = "a".repeat(65);
        check(
            "POST",
            &format!("/runtime/{id64}/c/mcp"),
            Ok(Route::Mcp(t(&id64, "c"))),
        );
        check("POST", &format!("/runtime/{id65}/c/mcp"), NF);
        let tool128 = "t".repeat(128);
        let tool129 = "t".repeat(129);
        check(
            "POST",
            &format!("/runtime/a/b/tools/{tool128}"),
            Ok(Route::RestCall(t("a", "b"), tool128.as_str().into())),
        );
        check("POST", &format!("/runtime/a/b/tools/{tool129}"), NF);
        // An invalid segment is 404 even with the wrong method: the resource does not exist.
        check("PUT", "/runtime/a%20b/c/mcp", NF);
    }

    #[test]
    fn plain_segments_borrow() {
        let Ok(Route::Mcp(target)) = route(&Method::POST, "/runtime/acme/app/mcp") else {
            panic!("no route");
        };
        assert!(matches!(target.tenant, Cow::Borrowed(_)));
        assert!(matches!(target.client, Cow::Borrowed(_)));
        let Ok(Route::Mcp(target)) = route(&Method::POST, "/runtime/ac%6De/app/mcp") else {
            panic!("no route");
        };
        assert!(matches!(target.tenant, Cow::Owned(_)));
    }
}
