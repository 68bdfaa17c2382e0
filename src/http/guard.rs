//! Request guards that are HTTP-level and surface-independent: the `Host` allowlist and the
//! `Origin` check, which together are the DNS-rebinding protection.
//!
//! MCP's Streamable HTTP transport (2025-11-25 §"Security Warning"): "Servers MUST validate the
//! `Origin` header on all incoming connections to prevent DNS rebinding attacks … If the `Origin`
//! header is present and invalid, servers MUST respond with HTTP 403 Forbidden." A rebinding page
//! names its own host in both `Host` and `Origin`, so neither may be trusted to say what the
//! server's own origin is: that comes from configuration only ([`Guard::new`]). A `Host` outside
//! the allowlist is answered 421 Misdirected Request (RFC 9110 §15.5.20), as the MCP Python SDK
//! does; a request without `Host`, or with two, is 400 (RFC 9112 §3.2). Must not know MCP methods.

use std::net::SocketAddr;

use http::header::{HeaderMap, HOST, ORIGIN};
use http::{Uri, Version};

use super::Error;

/// The loopback names a server bound to a loopback (or unspecified) address answers to.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// An `allowed_hosts` entry that is not `host`, `host:port` or `host:*`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("allowed_hosts entry '{0}' is not host, host:port or host:* (IPv6 in brackets)")]
pub(crate) struct BadHostPattern(pub String);

/// One `Host` the server answers: a name or IP literal (IPv6 in brackets), lowercase, with one
/// port or any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostPattern {
    name: Box<str>,
    /// `None`: any port, and no port.
    port: Option<u16>,
}

impl HostPattern {
    /// Parses `host`, `host:*` (both: any port), `host:port`, `[v6]`, `[v6]:port`.
    pub(crate) fn parse(entry: &str) -> Result<Self, BadHostPattern> {
        let bad = || BadHostPattern(entry.to_owned());
        let (name, port) = match entry.strip_suffix(":*") {
            Some(name) => (name.as_bytes(), None),
            None => split_authority(entry.as_bytes()).ok_or_else(bad)?,
        };
        let bracketed = name.len() > 2
            && name.starts_with(b"[")
            && name.ends_with(b"]")
            && name[1..name.len() - 1]
                .iter()
                .all(|b| b.is_ascii_hexdigit() || matches!(b, b':' | b'.'));
        let plain = !name.is_empty()
            && name
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
        if !(bracketed || plain) {
            return Err(bad());
        }
        let name = std::str::from_utf8(name).map_err(|_| bad())?;
        Ok(Self {
            name: name.to_ascii_lowercase().into(),
            port,
        })
    }

    /// A name with any port.
    fn any_port(name: &str) -> Self {
        Self {
            name: name.to_ascii_lowercase().into(),
            port: None,
        }
    }

    /// Whether a request's `host[:port]` is this one. A request without a port matches a pattern
    /// with port 80 or 443 (the request does not say its scheme).
    fn matches(&self, name: &[u8], port: Option<u16>) -> bool {
        self.name.as_bytes().eq_ignore_ascii_case(name)
            && match (self.port, port) {
                (None, _) => true,
                (Some(want), Some(got)) => want == got,
                (Some(want), None) => want == 80 || want == 443,
            }
    }
}

/// Splits `host[:port]` (`[v6][:port]`); `None` when the port is not a number or an IPv6
/// literal is not bracketed. An empty port (`host:`) is no port.
fn split_authority(value: &[u8]) -> Option<(&[u8], Option<u16>)> {
    let (name, port) = if value.starts_with(b"[") {
        let close = value.iter().position(|&b| b == b']')?;
        let (name, rest) = value.split_at(close + 1);
        match rest {
            [] => (name, None),
            [b':', port @ ..] => (name, Some(port)),
            _ => return None,
        }
    } else {
        match value.iter().position(|&b| b == b':') {
            None => (value, None),
            Some(colon) => (&value[..colon], Some(&value[colon + 1..])),
        }
    };
    let port = match port {
        None | Some([]) => None,
        Some(digits) if digits.len() <= 5 && digits.iter().all(u8::is_ascii_digit) => {
            Some(std::str::from_utf8(digits).ok()?.parse::<u16>().ok()?)
        }
        Some(_) => return None,
    };
    (!name.is_empty()).then_some((name, port))
}

/// Which `Host` values and which `Origin`s a server accepts, built once from its configuration
/// (never from a request). Checks allocate nothing.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    /// The server's own origins, normalised: lowercase `scheme://host[:port]`, default port
    /// removed.
    own_origins: Vec<Box<str>>,
    /// Origins allowed besides the server's own (exact, case-insensitive).
    allowed_origins: Vec<String>,
    /// `None`: any `Host` (`allowed_hosts = ["*"]`).
    allowed_hosts: Option<Vec<HostPattern>>,
}

impl Guard {
    /// The guard of a server reached at `public_base` (`scheme://host[:port]`, the configured
    /// `public_url` or `http://{bound}`) and listening on `bound`.
    ///
    /// Own origins: `public_base`, `http://{bound}` unless bound to an unspecified address, and
    /// `http://localhost|127.0.0.1|[::1]:{bound port}` when bound to a loopback or unspecified
    /// address. `allowed_hosts` empty means the default: the host of `public_base` plus, bound
    /// to a loopback or unspecified address, the loopback names (any port); `["*"]` disables the
    /// `Host` check.
    pub(crate) fn new(
        public_base: &str,
        bound: SocketAddr,
        allowed_origins: Vec<String>,
        allowed_hosts: &[String],
    ) -> Result<Self, BadHostPattern> {
        let local = bound.ip().is_loopback() || bound.ip().is_unspecified();
        let mut own_origins = vec![normalise_origin(public_base)];
        if !bound.ip().is_unspecified() {
            own_origins.push(normalise_origin(&format!("http://{bound}")));
        }
        if local {
            for name in LOOPBACK_NAMES {
                own_origins.push(normalise_origin(&format!("http://{name}:{}", bound.port())));
            }
        }
        own_origins.dedup();
        let allowed_hosts = if allowed_hosts.iter().any(|entry| entry == "*") {
            None
        } else if allowed_hosts.is_empty() {
            let mut hosts = Vec::new();
            if let Some(host) = public_base.parse::<Uri>().ok().as_ref().and_then(Uri::host) {
                hosts.push(HostPattern::any_port(host));
            }
            if local {
                hosts.extend(LOOPBACK_NAMES.map(HostPattern::any_port));
            }
            Some(hosts)
        } else {
            Some(
                allowed_hosts
                    .iter()
                    .map(|entry| HostPattern::parse(entry))
                    .collect::<Result<_, _>>()?,
            )
        };
        Ok(Self {
            own_origins,
            allowed_origins,
            allowed_hosts,
        })
    }

    /// Accepts a request whose `Host` (and, on HTTP/2 or an absolute-form target, the URI's
    /// authority: both when both are present) is allowed. Two `Host` headers → 400; none and no
    /// authority → 400 (HTTP/1.0 without `Host` is accepted only when the check is off); a
    /// `Host` outside the allowlist → 421.
    pub(crate) fn check_host(
        &self,
        headers: &HeaderMap,
        uri: &Uri,
        version: Version,
    ) -> Result<(), Error> {
        let mut hosts = headers.get_all(HOST).iter();
        let host = hosts.next();
        if hosts.next().is_some() {
            return Err(Error::BadRequest("more than one Host header".into()));
        }
        let authority = uri.authority();
        if host.is_none() && authority.is_none() {
            if version == Version::HTTP_10 && self.allowed_hosts.is_none() {
                return Ok(());
            }
            return Err(Error::BadRequest("no Host header".into()));
        }
        let Some(patterns) = &self.allowed_hosts else {
            return Ok(());
        };
        let allowed = |name: &[u8], port: Option<u16>| {
            patterns.iter().any(|pattern| pattern.matches(name, port))
        };
        if let Some(host) = host {
            let ok =
                split_authority(host.as_bytes()).is_some_and(|(name, port)| allowed(name, port));
            if !ok {
                return Err(misdirected());
            }
        }
        if let Some(authority) = authority {
            if !allowed(authority.host().as_bytes(), authority.port_u16()) {
                return Err(misdirected());
            }
        }
        Ok(())
    }

    /// Accepts a request whose `Origin` is absent, is one of the server's own origins (from
    /// configuration: see [`Guard::new`]; default ports normalised, case-insensitive), or is
    /// listed in `allowed_origins` (exact, case-insensitive, e.g. `https://app.example.com`).
    /// Anything else, and a second `Origin` header → 403. The request's `Host` plays no part.
    pub(crate) fn check_origin(&self, headers: &HeaderMap) -> Result<(), Error> {
        let mut origins = headers.get_all(ORIGIN).iter();
        let Some(origin) = origins.next() else {
            return Ok(());
        };
        if origins.next().is_some() {
            return Err(Error::Forbidden("more than one Origin header".into()));
        }
        let origin = origin.as_bytes();
        if self
            .allowed_origins
            .iter()
            .any(|allowed| allowed.as_bytes().eq_ignore_ascii_case(origin))
        {
            return Ok(());
        }
        let origin = strip_default_port(origin);
        if self
            .own_origins
            .iter()
            .any(|own| own.as_bytes().eq_ignore_ascii_case(origin))
        {
            return Ok(());
        }
        Err(Error::Forbidden("origin not allowed".into()))
    }
}

fn misdirected() -> Error {
    Error::MisdirectedRequest("this server does not answer for the requested Host".into())
}

/// `origin` without its scheme's default port (`:80` for `http://`, `:443` for `https://`).
fn strip_default_port(origin: &[u8]) -> &[u8] {
    let default_port: &[u8] = if starts_with_ignore_case(origin, b"http://") {
        b":80"
    } else if starts_with_ignore_case(origin, b"https://") {
        b":443"
    } else {
        return origin;
    };
    origin.strip_suffix(default_port).unwrap_or(origin)
}

/// An origin from configuration in the form [`Guard::check_origin`] compares: lowercase, no
/// trailing slash, no default port.
fn normalise_origin(origin: &str) -> Box<str> {
    let lower = origin.trim_end_matches('/').to_ascii_lowercase();
    let stripped = strip_default_port(lower.as_bytes()).len();
    lower[..stripped].into()
}

fn starts_with_ignore_case(bytes: &[u8], prefix: &[u8]) -> bool {
    bytes
        .get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn addr(s: &str) -> SocketAddr {
        s.parse().expect("socket address")
    }

    fn headers(pairs: &[(http::header::HeaderName, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(name.clone(), HeaderValue::from_static(value));
        }
        headers
    }

    /// A guard on loopback port 8080 with `public_url = https://rt.example.com`.
    fn loopback(allowed_origins: &[&str], allowed_hosts: &[&str]) -> Guard {
        let guard = Guard::new(
            "https://rt.example.com",
            addr("127.0.0.1:8080"),
            allowed_origins.iter().map(|s| s.to_string()).collect(),
            &allowed_hosts
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>(),
        );
        guard.expect("valid guard")
    }

    fn origin(guard: &Guard, origin: &'static str, ok: bool) {
        let got = guard.check_origin(&headers(&[(ORIGIN, origin)]));
        assert_eq!(got.is_ok(), ok, "origin {origin:?}");
        if let Err(err) = got {
            assert_eq!(err.status(), http::StatusCode::FORBIDDEN);
        }
    }

    fn host(guard: &Guard, host: &'static str, status: Option<u16>) {
        let got = guard.check_host(
            &headers(&[(HOST, host)]),
            &Uri::from_static("/x"),
            Version::HTTP_11,
        );
        assert_eq!(
            got.err().map(|err| err.status().as_u16()),
            status,
            "host {host:?}"
        );
    }

    #[test]
    fn origin_table() {
        let guard = loopback(&["https://app.example.com", "null"], &[]);
        assert!(guard.check_origin(&HeaderMap::new()).is_ok());
        // The loopback names with the bound port, and the public URL (default port normalised).
        origin(&guard, "http://localhost:8080", true);
        origin(&guard, "HTTP://LocalHost:8080", true);
        origin(&guard, "http://127.0.0.1:8080", true);
        origin(&guard, "http://[::1]:8080", true);
        origin(&guard, "https://rt.example.com", true);
        origin(&guard, "https://rt.example.com:443", true);
        origin(&guard, "https://RT.example.com", true);
        // Another port, another scheme, another host: not ours.
        origin(&guard, "http://localhost:8081", false);
        origin(&guard, "https://localhost:8080", false);
        origin(&guard, "http://rt.example.com", false);
        origin(&guard, "https://rt.example.com:8443", false);
        origin(&guard, "https://rt.example.com/", false);
        origin(&guard, "http://evil.com", false);
        origin(&guard, "http://", false);
        // Configured ones, exact and case-insensitive ("null" only when listed).
        origin(&guard, "https://app.example.com", true);
        origin(&guard, "https://APP.example.com", true);
        origin(&guard, "https://other.example.com", false);
        origin(&guard, "null", true);
        origin(&loopback(&[], &[]), "null", false);
    }

    #[test]
    fn the_request_host_never_makes_an_origin_own() {
        // The rebinding pair: Host and Origin both name the attacker. Even with the Host check
        // off, the Origin is not the server's.
        let guard = loopback(&[], &["*"]);
        let pair = headers(&[
            (HOST, "attacker.test:8080"),
            (ORIGIN, "http://attacker.test:8080"),
        ]);
        assert!(guard
            .check_host(&pair, &Uri::from_static("/"), Version::HTTP_11)
            .is_ok());
        let err = guard.check_origin(&pair).expect_err("refused");
        assert_eq!(err.status(), http::StatusCode::FORBIDDEN);
        // h2: the :authority (in the URI) is no more trusted than Host.
        let h2 = headers(&[(ORIGIN, "http://attacker.test:8080")]);
        assert!(guard.check_origin(&h2).is_err());
    }

    #[test]
    fn host_table_default() {
        let guard = loopback(&[], &[]);
        for ok in [
            "127.0.0.1:8080",
            "127.0.0.1",
            "localhost:8080",
            "LOCALHOST:9",
            "[::1]:8080",
            "[::1]",
            "rt.example.com",
            "rt.example.com:443",
            "localhost:",
        ] {
            host(&guard, ok, None);
        }
        for refused in [
            "attacker.test:8080",
            "evil.example.com",
            "127.0.0.2:8080",
            "rt.example.com.evil",
            "localhost.:8080",
            "localhost:80a",
            "::1",
            "[::1",
            "",
            "a b",
        ] {
            host(&guard, refused, Some(421));
        }
    }

    #[test]
    fn default_hosts_follow_the_bound_address() {
        let public = Guard::new("https://rt.example.com", addr("10.0.0.5:8080"), vec![], &[]);
        let public = public.expect("guard");
        host(&public, "rt.example.com", None);
        host(&public, "localhost:8080", Some(421));
        // Own origins: the public URL and the listen address; no loopback names.
        origin(&public, "http://10.0.0.5:8080", true);
        origin(&public, "http://localhost:8080", false);
        let any = Guard::new("http://0.0.0.0:8080", addr("0.0.0.0:8080"), vec![], &[]);
        let any = any.expect("guard");
        host(&any, "localhost:8080", None);
        origin(&any, "http://127.0.0.1:8080", true);
        let v6 = Guard::new("http://[::1]:9", addr("[::1]:9"), vec![], &[]).expect("guard");
        host(&v6, "[::1]:9", None);
        origin(&v6, "http://[::1]:9", true);
        origin(&v6, "http://localhost:9", true);
    }

    #[test]
    fn configured_hosts_replace_the_default() {
        let guard = loopback(&[], &["mcp.example.com:8443", "Internal", "[fd00::1]:*"]);
        host(&guard, "mcp.example.com:8443", None);
        host(&guard, "mcp.example.com:443", Some(421));
        host(&guard, "mcp.example.com", Some(421));
        host(&guard, "internal:1", None);
        host(&guard, "internal", None);
        host(&guard, "[FD00::1]:5", None);
        host(&guard, "localhost:8080", Some(421));
        host(&guard, "rt.example.com", Some(421));
        let https = loopback(&[], &["a.example:443"]);
        host(&https, "a.example", None);
        for bad in [
            "", "a b", "a:b", "a:99999", "http://a", "a/b", "[::1", "[zz]", ":80",
        ] {
            let got = Guard::new("http://x", addr("127.0.0.1:1"), vec![], &[bad.to_owned()]);
            assert_eq!(got.err(), Some(BadHostPattern(bad.to_owned())), "{bad:?}");
        }
    }

    #[test]
    fn star_disables_the_host_check() {
        let guard = loopback(&[], &["*"]);
        host(&guard, "attacker.test:8080", None);
        host(&guard, "anything", None);
    }

    #[test]
    fn no_host_or_two_hosts_are_bad_requests() {
        for guard in [loopback(&[], &[]), loopback(&[], &["*"])] {
            let uri = Uri::from_static("/x");
            let none = guard.check_host(&HeaderMap::new(), &uri, Version::HTTP_11);
            assert_eq!(none.err().map(|e| e.status().as_u16()), Some(400));
            let two = headers(&[(HOST, "127.0.0.1:8080"), (HOST, "127.0.0.1:8080")]);
            let two = guard.check_host(&two, &uri, Version::HTTP_11);
            assert_eq!(two.err().map(|e| e.status().as_u16()), Some(400));
        }
        // HTTP/1.0 may omit Host, but then it cannot be checked.
        let uri = Uri::from_static("/x");
        let off = loopback(&[], &["*"]).check_host(&HeaderMap::new(), &uri, Version::HTTP_10);
        assert!(off.is_ok());
        let on = loopback(&[], &[]).check_host(&HeaderMap::new(), &uri, Version::HTTP_10);
        assert!(on.is_err());
    }

    #[test]
    fn h2_authority_counts_as_host() {
        let guard = loopback(&[], &[]);
        let ok = Uri::from_static("http://127.0.0.1:9/runtime/a/b/mcp");
        assert!(guard
            .check_host(&HeaderMap::new(), &ok, Version::HTTP_2)
            .is_ok());
        let v6 = Uri::from_static("http://[::1]:9/runtime/a/b/mcp");
        assert!(guard
            .check_host(&HeaderMap::new(), &v6, Version::HTTP_2)
            .is_ok());
        let evil = Uri::from_static("http://evil.example:9/runtime/a/b/mcp");
        let err = guard.check_host(&HeaderMap::new(), &evil, Version::HTTP_2);
        assert_eq!(err.err().map(|e| e.status().as_u16()), Some(421));
        // Both present: both must be allowed.
        let mixed = headers(&[(HOST, "127.0.0.1:9")]);
        assert!(guard.check_host(&mixed, &evil, Version::HTTP_2).is_err());
    }

    #[test]
    fn two_origins_are_refused() {
        let guard = loopback(&[], &[]);
        let two = headers(&[
            (ORIGIN, "http://localhost:8080"),
            (ORIGIN, "http://localhost:8080"),
        ]);
        assert!(guard.check_origin(&two).is_err());
    }
}
