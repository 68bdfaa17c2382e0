//! Integration tests: authentication, challenges, protected-resource metadata, session binding,
//! CORS and audit records, over real sockets on 127.0.0.1 with a real downstream.
//!
//! One tenant (`acme`) accepts API keys of its clients and RS256 JWTs from a JWKS file; it has no
//! anonymous access. Public URLs are `https://rt.example.com/…` (`[server] public_url`), so the
//! challenges and metadata must name that, never the test's loopback address.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use sluice::auth::apikey::{self, GeneratedKey};
use sluice::sse::Decoder;

use crate::support::{
    auth_fixture, open, request_to_host, rsa1, send, Answer, Downstream, DownstreamBuilder,
    Fixture, Reply, Stack, TempDir, Tools, BOTH, GUARD, MCP,
};

const PEPPER: &[u8] = b"integration-pepper";
const PUBLIC: &str = "https://rt.example.com";
const ISSUER: &str = "https://login.example.com/acme";

// === fixtures ===

fn now() -> i64 {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    i64::try_from(secs).expect("seconds fit")
}

fn sign(key: &EncodingKey, alg: Algorithm, kid: Option<&str>, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, key).expect("sign")
}

/// Claims valid for acme/app's MCP endpoint for an hour.
fn claims() -> Value {
    json!({
        "iss": ISSUER,
        "sub": "user-1",
        "aud": format!("{PUBLIC}{MCP}"),
        "exp": now() + 3600,
        "iat": now(),
        "scope": "mcp:tools",
    })
}

/// The keys of the test tenant: `full` (every scope) and `limited` (`mcp:tools` only) of
/// client `app`, `spare` (a second key of `app`, for rotation), `expired`, and `other` of client
/// `other`.
struct Keys {
    full: GeneratedKey,
    limited: GeneratedKey,
    spare: GeneratedKey,
    expired: GeneratedKey,
    other: GeneratedKey,
}

impl Keys {
    fn new() -> Self {
        Self {
            full: apikey::generate(PEPPER),
            limited: apikey::generate(PEPPER),
            spare: apikey::generate(PEPPER),
            expired: apikey::generate(PEPPER),
            other: apikey::generate(PEPPER),
        }
    }
}

fn key_entry(key: &GeneratedKey, extra: &str) -> String {
    format!(
        "[[tenant.client.api_key]]\nid = \"{}\"\nhash = \"{}\"\n{extra}\n",
        key.id, key.hash_hex
    )
}

fn config_text(
    downstream: SocketAddr,
    dir: &std::path::Path,
    keys: &Keys,
    with_full: bool,
) -> String {
    let jwks = dir.join("jwks.json");
    let audit = dir.join("audit.jsonl");
    let mut app_keys = String::new();
    if with_full {
        app_keys += &key_entry(&keys.full, "");
    }
    app_keys += &key_entry(&keys.limited, "scopes = [\"mcp:tools\"]");
    app_keys += &key_entry(&keys.spare, "principal = \"spare-bot\"");
    app_keys += &key_entry(&keys.expired, "expires_at = 2020-01-01T00:00:00Z");
    format!(
        r#"
[server]
public_url = "{PUBLIC}"
api_key_pepper = "{pepper}"
allowed_origins = ["https://app.example"]

[server.audit]
sink = "file"
path = "{audit}"
when_full = "block"

[[tenant]]
id = "acme"

[tenant.auth]
authorization_servers = ["{ISSUER}"]
scopes_supported = ["mcp:tools"]
required_scopes = ["mcp:tools"]

[tenant.auth.jwt]
issuer = "{ISSUER}"
jwks_file = "{jwks}"
algorithms = ["RS256"]

[[tenant.client]]
id = "app"
{app_keys}
[[tenant.client]]
id = "other"
{other_key}
[[tenant.toolset]]
id = "crm"
description = "CRM"
system_prompt = "Be brief."

[[tenant.toolset.tool]]
name = "echo"
description = "Echo."
log_payloads = true
downstream = {{ kind = "rest", method = "POST", url = "http://{downstream}/echo" }}

[[tenant.toolset.tool.input]]
source = "text"
exposed = "text"

[[tenant.toolset.tool]]
name = "write"
description = "Needs crm:write."
scope = "crm:write"
downstream = {{ kind = "rest", method = "POST", url = "http://{downstream}/echo" }}

[[tenant.toolset.tool]]
name = "lazy"
description = "Schema on demand."
schema_mode = "lazy"
downstream = {{ kind = "rest", method = "POST", url = "http://{downstream}/echo" }}

[[tenant.toolset.tool.input]]
source = "q"
exposed = "q"

[[tenant.toolset.tool]]
name = "broken"
description = "Its API is down."
downstream = {{ kind = "rest", method = "GET", url = "http://127.0.0.1:1/down", timeout_ms = 2000 }}

[[tenant.toolset.tool]]
name = "hold"
description = "Its API never answers."
downstream = {{ kind = "rest", method = "GET", url = "http://{downstream}/hold", timeout_ms = 60000 }}

[[tenant.toolset.tool]]
name = "quick"
description = "Gives up after 300 ms."
downstream = {{ kind = "rest", method = "GET", url = "http://{downstream}/echo", timeout_ms = 300 }}

[[tenant.assignment]]
client = "app"
toolset = "crm"

[[tenant.assignment]]
client = "other"
toolset = "crm"
"#,
        pepper = String::from_utf8_lossy(PEPPER),
        audit = audit.display(),
        jwks = jwks.display(),
        other_key = key_entry(&keys.other, ""),
    )
}

// === servers ===

/// Tenant `acme` (API keys and JWTs from a JWKS file in `dir`, audit to a file there) over a
/// downstream that answers every request with `{"echoed":true}`, except `/hold`, which never
/// answers (it holds one of the tenant's downstream slots).
struct Acme {
    dir: TempDir,
    keys: Keys,
}

impl Fixture for Acme {
    fn new() -> Self {
        let dir = TempDir::new("auth");
        let mut jwk = Jwk::from_encoding_key(&rsa1(), Algorithm::RS256).expect("jwk");
        jwk.common.key_id = Some("k1".to_owned());
        let jwks = json!({ "keys": [jwk] });
        std::fs::write(dir.join("jwks.json"), jwks.to_string()).expect("jwks");
        Acme {
            dir,
            keys: Keys::new(),
        }
    }

    fn downstream() -> DownstreamBuilder {
        Downstream::new()
            .route("/hold", Answer::Stall)
            .fallback(Answer::Json(r#"{"echoed":true}"#))
    }

    fn text(&self, downstream: SocketAddr, _: Tools) -> String {
        config_text(downstream, self.dir.path(), &self.keys, true)
    }
}

/// sluice over [`Acme`] on 127.0.0.1:0; shuts down when dropped.
type Sluice = Stack<Acme>;

impl Sluice {
    /// The audit records written so far (waits until at least `at_least` are there).
    async fn audit(&self, at_least: usize) -> Vec<Value> {
        let path = self.fixture.dir.join("audit.jsonl");
        let deadline = tokio::time::Instant::now() + GUARD;
        loop {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let records: Vec<Value> = text
                .lines()
                .map(|line| serde_json::from_str(line).expect("audit line is JSON"))
                .collect();
            if records.len() >= at_least || tokio::time::Instant::now() > deadline {
                return records;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

// === HTTP client ===

impl Reply {
    /// The JSON-RPC message of a JSON or single-event SSE answer.
    fn message(&self) -> Value {
        if self.header("content-type").starts_with("text/event-stream") {
            let mut decoder = Decoder::new();
            let mut buf = bytes::BytesMut::from(&self.body[..]);
            while let Ok(Some(event)) = decoder.decode(&mut buf) {
                if !event.data.is_empty() {
                    return serde_json::from_slice(&event.data).expect("event is JSON");
                }
            }
            panic!("no message event in {:?}", self.body);
        }
        self.json()
    }

    /// Asserts a 401 whose challenge points at `endpoint`'s metadata.
    fn assert_unauthorized(&self, endpoint: &str, invalid_token: bool) {
        assert_eq!(self.status, StatusCode::UNAUTHORIZED, "{:?}", self.body);
        let challenge = self.header("www-authenticate");
        let metadata = format!(
            "resource_metadata=\"{PUBLIC}/.well-known/oauth-protected-resource/runtime/acme/app/{endpoint}\""
        );
        assert!(challenge.starts_with("Bearer "), "{challenge}");
        assert!(challenge.contains(&metadata), "{challenge}");
        assert!(challenge.contains("scope=\"mcp:tools\""), "{challenge}");
        assert_eq!(
            challenge.contains("error=\"invalid_token\""),
            invalid_token,
            "{challenge}"
        );
        let body = self.json();
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(body["id"], Value::Null);
        assert_eq!(body["error"]["code"], -32000);
        assert_eq!(body["error"]["data"]["oauth_error"], "invalid_token");
    }
}

/// A request with `Host: rt.example.com` (the public URL's host).
fn request(
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Request<Full<Bytes>> {
    request_to_host("rt.example.com", method, path, headers, body)
}

/// Opens a streaming GET and returns its status, headers and the first event's data.
async fn open_stream(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, HeaderMap, Option<Incoming>) {
    let response = open(addr, request(Method::GET, path, headers, "")).await;
    let (parts, body) = response.into_parts();
    let ok = parts.status == StatusCode::OK;
    (parts.status, parts.headers, ok.then_some(body))
}

/// Reads SSE events from `body` until one named `name` (or a message when `None`) arrives.
async fn next_event(body: &mut Incoming, name: Option<&str>) -> Bytes {
    let mut decoder = Decoder::new();
    let mut buf = bytes::BytesMut::new();
    loop {
        while let Ok(Some(event)) = decoder.decode(&mut buf) {
            let matches = match name {
                Some(name) => &event.event[..] == name.as_bytes(),
                None => !event.data.is_empty(),
            };
            if matches {
                return event.data;
            }
        }
        let frame = tokio::time::timeout(GUARD, body.frame())
            .await
            .expect("event in time")
            .expect("stream open")
            .expect("frame");
        if let Ok(data) = frame.into_data() {
            buf.extend_from_slice(&data);
        }
    }
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// POSTs one JSON-RPC message to `path` with `auth` (an Authorization value) and extra headers.
async fn post(
    addr: SocketAddr,
    path: &str,
    auth: Option<&str>,
    extra: &[(&str, &str)],
    body: &Value,
) -> Reply {
    let mut headers = vec![("accept", BOTH), ("content-type", "application/json")];
    if let Some(auth) = auth {
        headers.push(("authorization", auth));
    }
    headers.extend_from_slice(extra);
    send(
        addr,
        request(Method::POST, path, &headers, &body.to_string()),
    )
    .await
}

fn initialize() -> Value {
    json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},
        "clientInfo":{"name":"it","version":"1"}}})
}

fn call(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":method,"params":params})
}

/// Initializes a session as `auth` and returns its id.
async fn session(addr: SocketAddr, auth: &str) -> String {
    let reply = post(addr, MCP, Some(auth), &[], &initialize()).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    let id = reply.header("mcp-session-id").to_owned();
    assert!(!id.is_empty());
    let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    let reply = post(
        addr,
        MCP,
        Some(auth),
        &[("mcp-session-id", &id)],
        &initialized,
    )
    .await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);
    id
}

// === 401 ===

#[tokio::test]
async fn a_missing_credential_is_401_on_every_surface() {
    let s = Sluice::start().await;
    let addr = s.addr;
    post(addr, MCP, None, &[], &initialize())
        .await
        .assert_unauthorized("mcp", false);
    let get = |path: &'static str, accept: &'static str| {
        send(addr, request(Method::GET, path, &[("accept", accept)], ""))
    };
    get(MCP, "text/event-stream")
        .await
        .assert_unauthorized("mcp", false);
    send(
        addr,
        request(Method::DELETE, MCP, &[("mcp-session-id", "x")], ""),
    )
    .await
    .assert_unauthorized("mcp", false);
    get("/runtime/acme/app/sse", "text/event-stream")
        .await
        .assert_unauthorized("sse", false);
    post(
        addr,
        "/runtime/acme/app/messages?sessionId=x",
        None,
        &[],
        &initialize(),
    )
    .await
    .assert_unauthorized("sse", false);
    get("/runtime/acme/app/tools", "application/json")
        .await
        .assert_unauthorized("tools", false);
    post(addr, "/runtime/acme/app/tools/echo", None, &[], &json!({}))
        .await
        .assert_unauthorized("tools", false);

    // Each refusal is an auth_failure audit record; no credential, no caller.
    let records = s.audit(7).await;
    let failures: Vec<&Value> = records
        .iter()
        .filter(|r| r["call_type"] == "auth_failure")
        .collect();
    assert_eq!(failures.len(), 7, "{records:?}");
    for record in failures {
        assert_eq!(record["tenant"], "acme");
        assert_eq!(record["client"], "app");
        assert_eq!(record["outcome"], "denied");
        assert_eq!(record["error_code"], "401");
    }
}

/// A client that writes a POST's head and body in two segments and then sends its next
/// request on the same connection (httpx does both; the MCP Python SDK follows a 401 challenge
/// to the resource metadata that way) gets both answers: the refused request's small body is
/// read before the 401, so hyper keeps the connection.
#[tokio::test]
async fn a_401_keeps_the_connection_for_the_next_request() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let s = Sluice::start().await;
    let mut conn = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    let body = initialize().to_string();
    let head = format!(
        "POST {MCP} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n",
        s.addr,
        body.len()
    );
    conn.write_all(head.as_bytes()).await.unwrap();
    // The body arrives after the server has read the head (and refused the request).
    tokio::time::sleep(Duration::from_millis(100)).await;
    conn.write_all(body.as_bytes()).await.unwrap();
    let next = format!(
        "GET /.well-known/oauth-protected-resource{MCP} HTTP/1.1\r\nhost: {}\r\n\r\n",
        s.addr
    );
    conn.write_all(next.as_bytes()).await.unwrap();

    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while tokio::time::Instant::now() < deadline {
        let text = String::from_utf8_lossy(&got);
        if text.matches("HTTP/1.1 ").count() >= 2 && text.contains("authorization_servers") {
            break;
        }
        match tokio::time::timeout(Duration::from_secs(5), conn.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
            Ok(Ok(n)) => got.extend_from_slice(&chunk[..n]),
        }
    }
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 401 "), "{text}");
    let second = text
        .match_indices("HTTP/1.1 ")
        .nth(1)
        .map(|(i, _)| &text[i..]);
    assert!(
        second.is_some_and(|answer| answer.starts_with("HTTP/1.1 200 ")
            && answer.contains("authorization_servers")),
        "the connection closed or the metadata did not come: {text}"
    );
}

#[tokio::test]
async fn bad_api_keys_are_401_invalid_token() {
    let s = Sluice::start().await;
    let wrong_secret = format!("rtk_{}_{}", s.fixture.keys.full.id, "A".repeat(43));
    for token in [
        "rtk_garbage".to_owned(),
        wrong_secret,
        s.fixture.keys.other.token.clone(), // a key of client `other`, on `app`'s path
        s.fixture.keys.expired.token.clone(), // expired in 2020
        "not-a-known-credential".to_owned(),
    ] {
        let reply = post(s.addr, MCP, Some(&bearer(&token)), &[], &initialize()).await;
        reply.assert_unauthorized("mcp", true);
        // Nothing about the credential is echoed.
        assert!(!String::from_utf8_lossy(&reply.body).contains(&token));
    }
    // The same key works on its own client's path.
    let reply = post(
        s.addr,
        "/runtime/acme/other/mcp",
        Some(&bearer(&s.fixture.keys.other.token)),
        &[],
        &initialize(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    // X-API-Key works where Authorization cannot be set.
    let reply = post(
        s.addr,
        MCP,
        None,
        &[("x-api-key", &s.fixture.keys.full.token)],
        &initialize(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test]
async fn api_keys_rotate_by_reload() {
    let s = Sluice::start().await;
    for key in [&s.fixture.keys.full, &s.fixture.keys.spare] {
        let reply = post(s.addr, MCP, Some(&bearer(&key.token)), &[], &initialize()).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    }
    // The operator removes the old key and reloads: it stops working at once, the new one goes on.
    let fixture = &s.fixture;
    s.reload_text(&config_text(
        s.downstream.addr,
        fixture.dir.path(),
        &fixture.keys,
        false,
    ));
    post(
        s.addr,
        MCP,
        Some(&bearer(&s.fixture.keys.full.token)),
        &[],
        &initialize(),
    )
    .await
    .assert_unauthorized("mcp", true);
    let reply = post(
        s.addr,
        MCP,
        Some(&bearer(&s.fixture.keys.spare.token)),
        &[],
        &initialize(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
}

// === JWT ===

#[tokio::test]
async fn jwt_bearer_tokens_over_http() {
    let s = Sluice::start().await;
    let key = rsa1();
    let good = sign(&key, Algorithm::RS256, Some("k1"), &claims());
    let reply = post(s.addr, MCP, Some(&bearer(&good)), &[], &initialize()).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);

    let patched = |patch: Value| {
        let mut claims = claims();
        for (k, v) in patch.as_object().expect("object") {
            claims[k] = v.clone();
        }
        claims
    };
    let rejected = [
        // A token for another client application's endpoint.
        sign(
            &key,
            Algorithm::RS256,
            Some("k1"),
            &patched(json!({"aud": format!("{PUBLIC}/runtime/acme/other/mcp")})),
        ),
        sign(
            &key,
            Algorithm::RS256,
            Some("k1"),
            &patched(json!({"exp": now() - 3600})),
        ),
        sign(
            &key,
            Algorithm::RS256,
            Some("k1"),
            &patched(json!({"iss": "https://evil.example"})),
        ),
        sign(&key, Algorithm::RS256, Some("unknown-kid"), &claims()),
        // alg: none, signature stripped.
        {
            let header = base64_url(br#"{"alg":"none","typ":"JWT"}"#);
            let body = base64_url(claims().to_string().as_bytes());
            format!("{header}.{body}.")
        },
        // HS256 "signed" with the RSA public key as the HMAC secret (algorithm confusion).
        sign(
            &EncodingKey::from_secret(&auth_fixture("rsa1.pub.pem")).expect("hmac key"),
            Algorithm::HS256,
            Some("k1"),
            &claims(),
        ),
    ];
    for token in rejected {
        post(s.addr, MCP, Some(&bearer(&token)), &[], &initialize())
            .await
            .assert_unauthorized("mcp", true);
    }
}

fn base64_url(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

// === 403 ===

#[tokio::test]
async fn a_missing_tool_scope_is_403_with_a_step_up_challenge() {
    let s = Sluice::start().await;
    let limited = bearer(&s.fixture.keys.limited.token);
    let sid = session(s.addr, &limited).await;
    let write = call(2, "tools/call", json!({"name":"write","arguments":{}}));
    let reply = post(
        s.addr,
        MCP,
        Some(&limited),
        &[("mcp-session-id", &sid)],
        &write,
    )
    .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{:?}", reply.body);
    let challenge = reply.header("www-authenticate");
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    // The baseline is kept, so the step-up does not lose it.
    assert!(
        challenge.contains("scope=\"mcp:tools crm:write\""),
        "{challenge}"
    );
    assert!(challenge.contains(&format!(
        "resource_metadata=\"{PUBLIC}/.well-known/oauth-protected-resource{MCP}\""
    )));
    assert_eq!(
        reply.json()["error"]["data"]["oauth_error"],
        "insufficient_scope"
    );
    // A tool without its own scope is fine for the same key.
    let echo = call(
        3,
        "tools/call",
        json!({"name":"echo","arguments":{"text":"hi"}}),
    );
    let reply = post(
        s.addr,
        MCP,
        Some(&limited),
        &[("mcp-session-id", &sid)],
        &echo,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.message()["result"]["isError"], false);
    // The REST surface applies the same rule.
    let reply = post(
        s.addr,
        "/runtime/acme/app/tools/write",
        Some(&limited),
        &[],
        &json!({}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    // A key with every scope may call it.
    let full = bearer(&s.fixture.keys.full.token);
    let sid = session(s.addr, &full).await;
    let reply = post(
        s.addr,
        MCP,
        Some(&full),
        &[("mcp-session-id", &sid)],
        &write,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    // A JWT without the tenant's required scope is refused with 403 before anything else.
    let token = {
        let mut claims = claims();
        claims["scope"] = json!("profile");
        sign(&rsa1(), Algorithm::RS256, Some("k1"), &claims)
    };
    let reply = post(s.addr, MCP, Some(&bearer(&token)), &[], &initialize()).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    assert!(reply
        .header("www-authenticate")
        .contains("insufficient_scope"));
}

// === protected-resource metadata ===

#[tokio::test]
async fn protected_resource_metadata_per_endpoint() {
    let s = Sluice::start().await;
    for endpoint in ["mcp", "sse", "tools"] {
        let path = format!("/.well-known/oauth-protected-resource/runtime/acme/app/{endpoint}");
        let reply = send(
            s.addr,
            request(
                Method::GET,
                &path,
                &[("origin", "https://anyone.example")],
                "",
            ),
        )
        .await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        let doc = reply.json();
        assert_eq!(
            doc["resource"],
            format!("{PUBLIC}/runtime/acme/app/{endpoint}")
        );
        assert_eq!(doc["authorization_servers"], json!([ISSUER]));
        assert_eq!(doc["scopes_supported"], json!(["mcp:tools"]));
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
        assert!(reply.header("cache-control").contains("max-age"));
        assert_eq!(reply.header("access-control-allow-origin"), "*");
    }
    for path in [
        "/.well-known/oauth-protected-resource/runtime/acme/nobody/mcp",
        "/.well-known/oauth-protected-resource/runtime/nobody/app/mcp",
        "/.well-known/oauth-protected-resource/runtime/acme/app/other",
        "/.well-known/oauth-protected-resource",
    ] {
        let reply = send(s.addr, request(Method::GET, path, &[], "")).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{path}");
    }
}

// === session binding ===

#[tokio::test]
async fn another_callers_session_is_unknown_on_every_path() {
    let s = Sluice::start().await;
    let alice = bearer(&s.fixture.keys.full.token);
    let mallory = bearer(&s.fixture.keys.spare.token);
    let sid = session(s.addr, &alice).await;
    let ping = call(9, "ping", json!({}));

    let reply = post(
        s.addr,
        MCP,
        Some(&mallory),
        &[("mcp-session-id", &sid)],
        &ping,
    )
    .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    let sse = [
        ("accept", "text/event-stream"),
        ("authorization", mallory.as_str()),
        ("mcp-session-id", sid.as_str()),
    ];
    let (status, _, _) = open_stream(s.addr, MCP, &sse).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let resume = [
        ("accept", "text/event-stream"),
        ("authorization", mallory.as_str()),
        ("mcp-session-id", sid.as_str()),
        ("last-event-id", "abc.1.1"),
    ];
    let (status, _, _) = open_stream(s.addr, MCP, &resume).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let delete = request(
        Method::DELETE,
        MCP,
        &[("authorization", &mallory), ("mcp-session-id", &sid)],
        "",
    );
    assert_eq!(send(s.addr, delete).await.status, StatusCode::NOT_FOUND);
    // The same session on another client's path, with that client's key: also unknown.
    let other = bearer(&s.fixture.keys.other.token);
    let reply = post(
        s.addr,
        "/runtime/acme/other/mcp",
        Some(&other),
        &[("mcp-session-id", &sid)],
        &ping,
    )
    .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);

    // The owner's session is untouched.
    let reply = post(
        s.addr,
        MCP,
        Some(&alice),
        &[("mcp-session-id", &sid)],
        &ping,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);

    // Legacy transport: Alice's /sse session, Mallory's /messages post.
    let (status, _, body) = open_stream(
        s.addr,
        "/runtime/acme/app/sse",
        &[("accept", "text/event-stream"), ("authorization", &alice)],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let mut body = body.expect("stream");
    let endpoint = next_event(&mut body, Some("endpoint")).await;
    let endpoint = String::from_utf8(endpoint.to_vec()).expect("utf-8");
    let reply = post(s.addr, &endpoint, Some(&mallory), &[], &ping).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    let reply = post(s.addr, &endpoint, Some(&alice), &[], &ping).await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);
    let answer: Value = serde_json::from_slice(&next_event(&mut body, None).await).expect("JSON");
    assert_eq!(answer["id"], 9);

    // Each attempt is a security event naming the intruder.
    let records = s.audit(6).await;
    let rejected: Vec<&Value> = records
        .iter()
        .filter(|r| r["call_type"] == "session_rejected")
        .collect();
    assert!(rejected.len() >= 6, "{rejected:?}");
    assert!(rejected
        .iter()
        .any(|r| r["caller"] == "apikey:spare-bot" && r["outcome"] == "rejected"));
}

// === CORS ===

#[tokio::test]
async fn cors_for_browser_clients() {
    let s = Sluice::start().await;
    let preflight = request(
        Method::OPTIONS,
        MCP,
        &[
            ("origin", "https://app.example"),
            ("access-control-request-method", "POST"),
            (
                "access-control-request-headers",
                "authorization, content-type, mcp-session-id, mcp-param-region",
            ),
        ],
        "",
    );
    let reply = send(s.addr, preflight).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    assert_eq!(
        reply.header("access-control-allow-origin"),
        "https://app.example"
    );
    assert!(reply
        .header("access-control-allow-headers")
        .contains("mcp-param-region"));
    assert!(reply
        .header("access-control-allow-methods")
        .contains("DELETE"));
    assert_eq!(reply.header("access-control-allow-credentials"), "");

    let evil = request(
        Method::OPTIONS,
        MCP,
        &[
            ("origin", "https://evil.example"),
            ("access-control-request-method", "POST"),
        ],
        "",
    );
    let reply = send(s.addr, evil).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    assert_eq!(reply.header("access-control-allow-origin"), "");

    // A browser reading a 401 needs the challenge exposed.
    let reply = post(
        s.addr,
        MCP,
        None,
        &[("origin", "https://app.example")],
        &initialize(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        reply.header("access-control-allow-origin"),
        "https://app.example"
    );
    let exposed = reply.header("access-control-expose-headers");
    for name in [
        "Mcp-Session-Id",
        "WWW-Authenticate",
        "X-External-Correlation-Id",
    ] {
        assert!(exposed.contains(name), "{exposed}");
    }
    // A disallowed origin is refused before authentication.
    let reply = post(
        s.addr,
        MCP,
        None,
        &[("origin", "https://evil.example")],
        &initialize(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
}

// === audit ===

#[tokio::test]
async fn one_audit_record_per_call_with_its_dimensions() {
    let s = Sluice::start().await;
    let auth = bearer(&s.fixture.keys.full.token);
    let sid = session(s.addr, &auth).await;
    let headers = [
        ("mcp-session-id", sid.as_str()),
        ("x-correlation-id", "ext-42"),
    ];
    let send_call = |id: u64, method: &'static str, params: Value| {
        let auth = auth.clone();
        let addr = s.addr;
        async move { post(addr, MCP, Some(&auth), &headers, &call(id, method, params)).await }
    };
    assert_eq!(
        send_call(2, "tools/list", json!({})).await.status,
        StatusCode::OK
    );
    let reply = send_call(
        3,
        "tools/call",
        json!({"name":"echo","arguments":{"text":"hi"}}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.header("x-external-correlation-id"), "ext-42");
    let listed = send_call(4, "resources/list", json!({})).await.message();
    let uri = listed["result"]["resources"][0]["uri"]
        .as_str()
        .expect("a prompt resource")
        .to_owned();
    assert_eq!(
        send_call(5, "resources/read", json!({"uri": uri}))
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        send_call(6, "prompts/get", json!({"name":"crm"}))
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        send_call(
            7,
            "tools/call",
            json!({"name":"discover_tool_schema","arguments":{"tool_id":"lazy"}})
        )
        .await
        .status,
        StatusCode::OK
    );

    let records = s.audit(5).await;
    let by_type = |call_type: &str| -> Vec<&Value> {
        records
            .iter()
            .filter(|r| r["call_type"] == call_type)
            .collect()
    };
    for call_type in [
        "tools_list",
        "tool_call",
        "resource_read",
        "prompt_get",
        "schema_discovery",
    ] {
        let found = by_type(call_type);
        assert_eq!(found.len(), 1, "{call_type}: {records:?}");
        let record = found[0];
        assert_eq!(record["tenant"], "acme");
        assert_eq!(record["client"], "app");
        assert_eq!(
            record["caller"],
            format!("apikey:{}", s.fixture.keys.full.id)
        );
        assert_eq!(record["session"], sid.as_str());
        assert_eq!(record["surface"], "mcp");
        assert_eq!(record["external_correlation_id"], "ext-42");
        assert_eq!(record["outcome"], "ok", "{record}");
        assert!(record["execution_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty()));
        assert!(record["duration_us"].is_u64());
    }
    // A tool logs payloads, so the tools/list payload is captured as an audit dimension.
    let listing = &by_type("tools_list")[0]["tools_list"]["tools"];
    assert!(
        listing.as_array().is_some_and(|tools| tools.len() == 7),
        "{listing}"
    );
    // The logging tool's arguments and result are recorded as JSON values.
    let tool_call = by_type("tool_call")[0];
    assert_eq!(tool_call["tool"], "echo");
    assert_eq!(tool_call["request"], json!({"text":"hi"}));
    assert_eq!(tool_call["response"]["structuredContent"]["echoed"], true);
    // Lifecycle traffic is not audited.
    assert!(records.iter().all(|r| r["call_type"] != "initialize"));
}

// === limits ===

#[tokio::test]
async fn streams_per_session_are_limited() {
    let s = Sluice::with(|config| config.streams.max_per_session = 1).await;
    let auth = bearer(&s.fixture.keys.full.token);
    let sid = session(s.addr, &auth).await;
    let headers = [
        ("accept", "text/event-stream"),
        ("authorization", auth.as_str()),
        ("mcp-session-id", sid.as_str()),
    ];
    let (status, _, _first) = open_stream(s.addr, MCP, &headers).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = open_stream(s.addr, MCP, &headers).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
}

// === metrics ===

#[tokio::test]
async fn metrics_exposition_parses_and_counts() {
    let s = Sluice::start().await;
    let auth = bearer(&s.fixture.keys.full.token);
    let sid = session(s.addr, &auth).await;
    let sse = [
        ("accept", "text/event-stream"),
        ("authorization", auth.as_str()),
        ("mcp-session-id", sid.as_str()),
    ];
    let (status, _, _stream) = open_stream(s.addr, MCP, &sse).await;
    assert_eq!(status, StatusCode::OK);
    post(s.addr, MCP, None, &[], &initialize())
        .await
        .assert_unauthorized("mcp", false);
    let broken = call(5, "tools/call", json!({"name":"broken","arguments":{}}));
    let reply = post(
        s.addr,
        MCP,
        Some(&auth),
        &[("mcp-session-id", &sid)],
        &broken,
    )
    .await;
    assert_eq!(reply.message()["result"]["isError"], true);

    let reply = send(s.addr, request(Method::GET, "/metrics", &[], "")).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(reply
        .header("content-type")
        .starts_with("text/plain; version=0.0.4"));
    let text = String::from_utf8(reply.body.to_vec()).expect("utf-8");
    let lines = text.lines().map(|line| Ok(line.to_owned()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("exposition parses");
    let value = |name: &str, labels: &[(&str, &str)]| -> Option<f64> {
        scrape
            .samples
            .iter()
            .find(|sample| {
                sample.metric == name
                    && labels.iter().all(|(k, v)| sample.labels.get(k) == Some(*v))
            })
            .map(|sample| match sample.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => f64::NAN,
            })
    };
    assert_eq!(
        value(
            "sluice_http_requests_total",
            &[("route", "mcp"), ("method", "POST"), ("status", "401")]
        ),
        Some(1.0),
        "{text}"
    );
    assert!(value(
        "sluice_http_requests_total",
        &[("route", "mcp"), ("method", "POST"), ("status", "200")]
    )
    .is_some_and(|n| n >= 2.0));
    assert!(scrape.samples.iter().any(|sample| {
        sample.metric == "sluice_http_request_duration_seconds"
            && matches!(sample.value, prometheus_parse::Value::Histogram(_))
    }));
    assert_eq!(
        value("sluice_active_sessions", &[("tenant", "acme")]),
        Some(1.0)
    );
    assert_eq!(
        value("sluice_active_streams", &[("tenant", "acme")]),
        Some(1.0)
    );
    assert!(value("sluice_sse_frames_total", &[]).is_some());
    assert_eq!(
        value("sluice_downstream_errors_total", &[("code", "connect")]),
        Some(1.0),
        "{text}"
    );
    assert_eq!(value("sluice_audit_dropped_total", &[]), Some(0.0));
}

#[tokio::test]
async fn downstream_calls_per_tenant_are_limited() {
    let s = Sluice::with(|config| config.invoker.max_per_tenant = 1).await;
    let auth = bearer(&s.fixture.keys.full.token);
    let addr = s.addr;
    let quick = |auth: String| async move {
        post(
            addr,
            "/runtime/acme/app/tools/quick",
            Some(&auth),
            &[],
            &json!({}),
        )
        .await
    };
    assert_eq!(quick(auth.clone()).await.status, StatusCode::OK);
    // `hold` takes the tenant's only slot and keeps it.
    let addr = s.addr;
    let held_auth = auth.clone();
    let held = tokio::spawn(async move {
        post(
            addr,
            "/runtime/acme/app/tools/hold",
            Some(&held_auth),
            &[],
            &json!({}),
        )
        .await
    });
    // Until it is released, `quick` waits for a slot within its own 300 ms timeout: 504.
    let deadline = tokio::time::Instant::now() + GUARD;
    loop {
        let reply = quick(auth.clone()).await;
        if reply.status == StatusCode::GATEWAY_TIMEOUT {
            break;
        }
        // The held call may not have reached the downstream yet.
        assert_eq!(reply.status, StatusCode::OK);
        assert!(
            tokio::time::Instant::now() < deadline,
            "the slot was never taken"
        );
    }
    // The client gives up on `hold`: its slot comes back and `quick` answers again.
    held.abort();
    let deadline = tokio::time::Instant::now() + GUARD;
    while quick(auth.clone()).await.status != StatusCode::OK {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the slot was not released"
        );
    }
}

// === credentials fuzz corpus ===

#[test]
fn credentials_corpus_replays() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/credentials");
    let mut n_files = 0;
    for entry in std::fs::read_dir(&dir).expect("corpus dir") {
        let data = std::fs::read(entry.expect("entry").path()).expect("read corpus file");
        sluice::auth::props::credentials(&data);
        n_files += 1;
    }
    assert!(n_files >= 5, "corpus has only {n_files} files");
}
