//! Integration tests: TLS termination (`[server.tls]`) over real sockets — HTTP/1.1 and HTTP/2
//! chosen by ALPN, `public_url` defaulting to `https`, certificates reloaded by `POST
//! /admin/reload` and by SIGHUP to the real binary without dropping open connections (a bad new
//! certificate keeps the old one),
//! and client certificates: a required one missing fails the handshake, an optional one maps to
//! the caller its `[[tenant.client.certificate]]` rule names.
//!
//! The CA, the server certificates and the client certificates are made here with `rcgen`; the
//! clients are rustls (through `tokio-rustls`) under hyper's client connections, and `curl`.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::Value;
use sluice::catalog::Catalog;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::support::{TempDir, TestServer, GUARD};

const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
const ADMIN_TOKEN: &str = "tls-admin-token";

// === the test PKI ===

/// A CA and what it signs.
struct Pki {
    ca: rcgen::Certificate,
    ca_key: rcgen::KeyPair,
    ca_issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

/// A certificate and its key, in PEM and DER.
struct Leaf {
    cert_pem: String,
    key_pem: String,
    cert_der: CertificateDer<'static>,
    key_der: PrivateKeyDer<'static>,
}

impl Pki {
    fn new() -> Pki {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("ca params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "sluice test CA");
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let ca_key = rcgen::KeyPair::generate().expect("ca key");
        let ca = params.clone().self_signed(&ca_key).expect("ca cert");
        let issuer_key = rcgen::KeyPair::from_pem(&ca_key.serialize_pem()).expect("ca key copy");
        let ca_issuer = rcgen::Issuer::new(params, issuer_key);
        Pki {
            ca,
            ca_key,
            ca_issuer,
        }
    }

    fn ca_pem(&self) -> String {
        self.ca.pem()
    }

    fn ca_der(&self) -> CertificateDer<'static> {
        self.ca.der().clone()
    }

    /// A server certificate for `localhost` and 127.0.0.1 with common name `cn`.
    fn server(&self, cn: &str) -> Leaf {
        let mut params =
            rcgen::CertificateParams::new(vec!["localhost".to_owned()]).expect("server params");
        params
            .subject_alt_names
            .push(rcgen::SanType::IpAddress([127, 0, 0, 1].into()));
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        self.sign(params)
    }

    /// A client certificate with common name `cn`.
    fn client(&self, cn: &str) -> Leaf {
        let mut params =
            rcgen::CertificateParams::new(Vec::<String>::new()).expect("client params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        self.sign(params)
    }

    fn sign(&self, params: rcgen::CertificateParams) -> Leaf {
        let _ = &self.ca_key;
        let key = rcgen::KeyPair::generate().expect("leaf key");
        let cert = params.signed_by(&key, &self.ca_issuer).expect("leaf cert");
        Leaf {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            cert_der: cert.der().clone(),
            key_der: PrivateKeyDer::try_from(key.serialize_der()).expect("leaf key der"),
        }
    }
}

/// Writes `leaf` to `dir/{name}.crt` and `dir/{name}.key`.
fn write_leaf(dir: &Path, name: &str, leaf: &Leaf) {
    std::fs::write(dir.join(format!("{name}.crt")), &leaf.cert_pem).expect("cert file");
    std::fs::write(dir.join(format!("{name}.key")), &leaf.key_pem).expect("key file");
}

// === the server ===

/// A TLS server over the configuration `tls_table` completes, with the certificate files in
/// `dir` (`server.crt`, `server.key`, `ca.crt`), loaded from a file so `POST /admin/reload`
/// re-reads it. Tenant `acme`, client `app`: anonymous unless `anonymous` is false, when the
/// certificate `agent-7` is its only credential. The audit trail goes to `dir/audit.jsonl`.
async fn tls_server(dir: &TempDir, client_auth: &str, anonymous: bool) -> TestServer {
    let path = |name: &str| dir.join(name).display().to_string();
    let ca = if client_auth == "none" {
        String::new()
    } else {
        format!(
            "client_ca = {:?}\nclient_auth = {client_auth:?}\n",
            path("ca.crt")
        )
    };
    let certificate = if anonymous {
        ""
    } else {
        "[[tenant.client.certificate]]\nsubject = \"agent-7\"\nprincipal = \"robot-seven\"\nscopes = [\"mcp\"]\n"
    };
    let text = format!(
        r#"
[server]
admin_token = "{ADMIN_TOKEN}"
post_framing = "json"

[server.tls]
cert = {cert:?}
key = {key:?}
{ca}
[server.audit]
sink = "file"
path = {audit:?}

[[tenant]]
id = "acme"
[tenant.auth]
anonymous = {anonymous}

[[tenant.client]]
id = "app"
{certificate}
"#,
        cert = path("server.crt"),
        key = path("server.key"),
        audit = path("audit.jsonl"),
    );
    let file = dir.join("sluice.toml");
    std::fs::write(&file, text).expect("config file");
    let catalog = Catalog::load(&file).unwrap_or_else(|report| panic!("config: {report}"));
    TestServer::catalog(Arc::new(catalog)).start().await
}

// === the client ===

/// What a TLS exchange saw.
struct Seen {
    status: StatusCode,
    body: Value,
    /// The ALPN protocol the server picked.
    alpn: Option<Vec<u8>>,
}

/// A rustls client trusting `ca`, offering `alpn`, presenting `identity` when given.
fn connector(
    ca: &CertificateDer<'static>,
    alpn: &[&[u8]],
    identity: Option<&Leaf>,
) -> TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).expect("ca root");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots);
    let mut config = match identity {
        Some(leaf) => builder
            .with_client_auth_cert(vec![leaf.cert_der.clone()], leaf.key_der.clone_key())
            .expect("client auth"),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    TlsConnector::from(Arc::new(config))
}

/// One TLS connection that can carry several requests (HTTP/1.1 keep-alive or HTTP/2).
enum Conn {
    H1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    H2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

/// Connects, handshakes and starts the HTTP protocol ALPN picked. The error is the handshake's.
async fn connect(
    addr: SocketAddr,
    connector: &TlsConnector,
) -> std::io::Result<(Conn, Option<Vec<u8>>, CertificateDer<'static>)> {
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from("localhost").expect("server name");
    let stream = connector.connect(name, tcp).await?;
    let (_, session) = stream.get_ref();
    let alpn = session.alpn_protocol().map(<[u8]>::to_vec);
    let server_cert = session
        .peer_certificates()
        .and_then(|chain| chain.first())
        .expect("server certificate")
        .clone()
        .into_owned();
    let io = hyper_util::rt::TokioIo::new(stream);
    let conn = if alpn.as_deref() == Some(b"h2") {
        let (send, conn) =
            hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), io)
                .await
                .map_err(std::io::Error::other)?;
        tokio::spawn(conn);
        Conn::H2(send)
    } else {
        let (send, conn) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(std::io::Error::other)?;
        tokio::spawn(conn);
        Conn::H1(send)
    };
    Ok((conn, alpn, server_cert))
}

impl Conn {
    /// Sends `request` and reads the whole answer; an error means no HTTP answer came.
    async fn send(&mut self, request: Request<Full<Bytes>>) -> Result<(StatusCode, Value), String> {
        let response = match self {
            Conn::H1(send) => send.send_request(request).await,
            Conn::H2(send) => send.send_request(request).await,
        }
        .map_err(|err| err.to_string())?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|err| err.to_string())?
            .to_bytes();
        let body = serde_json::from_slice(&body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
        Ok((status, body))
    }
}

/// A POST of `body` to `path` with `bearer` as the admin token when given.
fn post(addr: SocketAddr, path: &str, body: &str, bearer: Option<&str>) -> Request<Full<Bytes>> {
    let mut request = Request::post(format!("https://localhost:{}{path}", addr.port()))
        .header("host", format!("localhost:{}", addr.port()))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(token) = bearer {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    request
        .body(Full::new(Bytes::copy_from_slice(body.as_bytes())))
        .expect("request")
}

/// One MCP ping over a fresh connection.
async fn ping(addr: SocketAddr, connector: &TlsConnector) -> Result<Seen, String> {
    let (mut conn, alpn, _) = connect(addr, connector)
        .await
        .map_err(|err| format!("handshake: {err}"))?;
    let (status, body) = conn
        .send(post(addr, "/runtime/acme/app/mcp", PING, None))
        .await?;
    Ok(Seen { status, body, alpn })
}

fn with_guard<F: std::future::Future>(future: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(GUARD, future)
}

// === tests ===

#[tokio::test]
async fn http1_and_http2_are_served_over_tls_as_alpn_chooses() {
    let dir = TempDir::new("tls-alpn");
    let pki = Pki::new();
    write_leaf(dir.path(), "server", &pki.server("server-one"));
    let server = tls_server(&dir, "none", true).await;

    for (offer, picked) in [
        (&[&b"h2"[..], b"http/1.1"][..], &b"h2"[..]),
        (&[&b"http/1.1"[..]][..], &b"http/1.1"[..]),
    ] {
        let seen = with_guard(ping(server.addr, &connector(&pki.ca_der(), offer, None)))
            .await
            .expect("no hang")
            .expect("ping over TLS");
        assert_eq!(seen.alpn.as_deref(), Some(picked));
        assert_eq!(seen.status, StatusCode::OK, "{}", seen.body);
        assert_eq!(seen.body["result"], serde_json::json!({}), "{}", seen.body);
    }
    // A client offering no ALPN at all speaks HTTP/1.1.
    let seen = with_guard(ping(server.addr, &connector(&pki.ca_der(), &[], None)))
        .await
        .expect("no hang")
        .expect("ping without ALPN");
    assert_eq!(seen.alpn, None);
    assert_eq!(seen.status, StatusCode::OK);

    // Plain HTTP on the TLS port gets no HTTP answer.
    let plain = crate::support::raw(
        server.addr,
        b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n",
    )
    .await;
    assert!(!plain.starts_with("HTTP/1.1 200"), "{plain}");
}

#[tokio::test]
async fn curl_reaches_the_server_over_tls_with_http1_and_http2() {
    let dir = TempDir::new("tls-curl");
    let pki = Pki::new();
    write_leaf(dir.path(), "server", &pki.server("server-one"));
    std::fs::write(dir.join("ca.crt"), pki.ca_pem()).expect("ca file");
    let server = tls_server(&dir, "none", true).await;
    for (flag, version) in [("--http1.1", "1.1"), ("--http2", "2")] {
        let out = tokio::process::Command::new("curl")
            .args(["-sS", "--max-time", "10", flag, "--cacert"])
            .arg(dir.join("ca.crt"))
            .args([
                "-w",
                "\n%{http_code} %{http_version}",
                "-H",
                "content-type: application/json",
                "-H",
                "accept: application/json, text/event-stream",
                "-d",
                PING,
            ])
            .arg(format!(
                "https://localhost:{}/runtime/acme/app/mcp",
                server.addr.port()
            ))
            .output()
            .await
            .expect("curl runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{flag}: {stdout} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (body, tail) = stdout.rsplit_once('\n').expect("status line");
        assert_eq!(tail, format!("200 {version}"), "{flag}: {stdout}");
        let body: Value = serde_json::from_str(body).expect("JSON body");
        assert_eq!(body["id"], 1);
    }
}

#[tokio::test]
async fn public_url_defaults_to_https_when_tls_is_on() {
    let dir = TempDir::new("tls-public");
    let pki = Pki::new();
    write_leaf(dir.path(), "server", &pki.server("server-one"));
    std::fs::write(dir.join("ca.crt"), pki.ca_pem()).expect("ca file");
    let server = tls_server(&dir, "optional", false).await;
    // No credential on a tenant without anonymous access: the challenge names an https URL.
    let (mut conn, _, _) = connect(server.addr, &connector(&pki.ca_der(), &[b"h2"], None))
        .await
        .expect("handshake without a client certificate (optional)");
    let response = match &mut conn {
        Conn::H2(send) => send
            .send_request(post(server.addr, "/runtime/acme/app/mcp", PING, None))
            .await
            .expect("answer"),
        Conn::H1(_) => panic!("h2 was offered"),
    };
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let challenge = response.headers()["www-authenticate"]
        .to_str()
        .expect("ascii");
    let expected = format!(
        "resource_metadata=\"https://127.0.0.1:{}/.well-known/oauth-protected-resource/runtime/acme/app/mcp\"",
        server.addr.port()
    );
    assert!(challenge.contains(&expected), "{challenge}");
}

#[tokio::test]
async fn admin_reload_swaps_the_certificate_and_keeps_open_connections() {
    let dir = TempDir::new("tls-reload");
    let pki = Pki::new();
    write_leaf(dir.path(), "server", &pki.server("server-one"));
    let server = tls_server(&dir, "none", true).await;
    let tls = connector(&pki.ca_der(), &[b"http/1.1"], None);
    let common_name = |der: &CertificateDer<'static>| {
        sluice::http::tls::ClientCertificate::from_der(der.as_ref())
            .and_then(|names| names.common_name)
            .map(String::from)
    };

    let (mut open, _, first) = connect(server.addr, &tls).await.expect("handshake");
    assert_eq!(common_name(&first).as_deref(), Some("server-one"));

    // A new certificate in the same files, then a reload.
    write_leaf(dir.path(), "server", &pki.server("server-two"));
    let (status, body) = open
        .send(post(server.addr, "/admin/reload", "", Some(ADMIN_TOKEN)))
        .await
        .expect("reload answered");
    assert_eq!(status, StatusCode::OK, "{body}");
    let served = poll_common_name(server.addr, &tls, "server-two").await;
    assert_eq!(
        served.as_deref(),
        Some("server-two"),
        "new connections get the new certificate"
    );
    // The connection opened before the reload still serves.
    let (status, _) = open
        .send(post(server.addr, "/runtime/acme/app/mcp", PING, None))
        .await
        .expect("the old connection still answers");
    assert_eq!(status, StatusCode::OK);

    // A broken certificate file: the reload of the catalog goes through, TLS keeps the last good
    // certificate.
    std::fs::write(
        dir.join("server.crt"),
        "-----BEGIN CERTIFICATE-----\nnot base64\n",
    )
    .expect("broken cert");
    let (status, body) = open
        .send(post(server.addr, "/admin/reload", "", Some(ADMIN_TOKEN)))
        .await
        .expect("reload answered");
    assert_eq!(status, StatusCode::OK, "{body}");
    // Give the reload task its turn, then check several fresh connections.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    for _ in 0..3 {
        let (_, _, cert) = connect(server.addr, &tls)
            .await
            .expect("handshake after a bad reload");
        assert_eq!(common_name(&cert).as_deref(), Some("server-two"));
    }
}

/// Opens fresh connections until one is served the certificate named `want` (the reload task
/// runs after the reload answer), or the guard runs out; returns the last name seen.
async fn poll_common_name(addr: SocketAddr, tls: &TlsConnector, want: &str) -> Option<String> {
    let deadline = tokio::time::Instant::now() + GUARD;
    loop {
        let (_, _, cert) = connect(addr, tls).await.expect("handshake");
        let name = sluice::http::tls::ClientCertificate::from_der(cert.as_ref())
            .and_then(|names| names.common_name)
            .map(String::from);
        if name.as_deref() == Some(want) || tokio::time::Instant::now() > deadline {
            return name;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_required_client_certificate_missing_fails_the_handshake() {
    let dir = TempDir::new("tls-required");
    let pki = Pki::new();
    write_leaf(dir.path(), "server", &pki.server("server-one"));
    std::fs::write(dir.join("ca.crt"), pki.ca_pem()).expect("ca file");
    let server = tls_server(&dir, "required", false).await;

    // Without a certificate: under TLS 1.3 the client's handshake may complete before the
    // server's alert arrives, so the refusal shows on the first exchange at the latest.
    let refused = with_guard(ping(server.addr, &connector(&pki.ca_der(), &[b"h2"], None)))
        .await
        .expect("no hang");
    assert!(refused.is_err(), "served without a client certificate");

    // A certificate from another CA is refused the same way.
    let other = Pki::new();
    let stranger = other.client("agent-7");
    let refused = with_guard(ping(
        server.addr,
        &connector(&pki.ca_der(), &[b"h2"], Some(&stranger)),
    ))
    .await
    .expect("no hang");
    assert!(
        refused.is_err(),
        "served with a certificate from an unknown CA"
    );

    // With a certificate of the CA, named by the client's rule: served.
    let agent = pki.client("agent-7");
    let seen = with_guard(ping(
        server.addr,
        &connector(&pki.ca_der(), &[b"h2"], Some(&agent)),
    ))
    .await
    .expect("no hang")
    .expect("served with the client certificate");
    assert_eq!(seen.status, StatusCode::OK, "{}", seen.body);
}

#[tokio::test]
async fn an_optional_client_certificate_authenticates_as_the_caller_its_rule_names() {
    let dir = TempDir::new("tls-optional");
    let pki = Pki::new();
    write_leaf(dir.path(), "server", &pki.server("server-one"));
    std::fs::write(dir.join("ca.crt"), pki.ca_pem()).expect("ca file");
    let server = tls_server(&dir, "optional", false).await;

    // No certificate: the handshake completes and the request has no credential (401).
    let seen = with_guard(ping(server.addr, &connector(&pki.ca_der(), &[b"h2"], None)))
        .await
        .expect("no hang")
        .expect("handshake without a certificate");
    assert_eq!(seen.status, StatusCode::UNAUTHORIZED);

    // A certificate of the CA that no rule names: refused as an invalid credential.
    let intruder = pki.client("intruder");
    let seen = with_guard(ping(
        server.addr,
        &connector(&pki.ca_der(), &[b"h2"], Some(&intruder)),
    ))
    .await
    .expect("no hang")
    .expect("handshake with a verified certificate");
    assert_eq!(seen.status, StatusCode::UNAUTHORIZED, "{}", seen.body);

    // The registered certificate: served, as `mtls:robot-seven`.
    let agent = pki.client("agent-7");
    let tls = connector(&pki.ca_der(), &[b"h2"], Some(&agent));
    let (mut conn, _, _) = connect(server.addr, &tls).await.expect("handshake");
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let mut request = post(server.addr, "/runtime/acme/app/mcp", list, None);
    request.headers_mut().insert(
        "mcp-protocol-version",
        http::HeaderValue::from_static("2026-07-28"),
    );
    request
        .headers_mut()
        .insert("mcp-method", http::HeaderValue::from_static("tools/list"));
    let (status, body) = conn.send(request).await.expect("answer");
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["result"]["tools"].is_array(), "{body}");

    let audit = dir.join("audit.jsonl");
    let deadline = tokio::time::Instant::now() + GUARD;
    let record = loop {
        let text = std::fs::read_to_string(&audit).unwrap_or_default();
        let found = text
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|record| record["call_type"] == "tools_list");
        if let Some(record) = found {
            break record;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no tools_list record: {text}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(record["caller"], "mtls:robot-seven", "{record}");
    let failures = std::fs::read_to_string(&audit).unwrap_or_default();
    assert!(
        failures.contains("not registered for this client application"),
        "the intruder's refusal is audited: {failures}"
    );
}

#[tokio::test]
async fn sighup_reloads_the_certificate_of_the_real_binary_and_keeps_open_connections() {
    let dir = TempDir::new("tls-sighup");
    let pki = Pki::new();
    write_leaf(dir.path(), "server", &pki.server("hup-one"));
    let path = |name: &str| dir.join(name).display().to_string();
    let binary = crate::support::Binary::start(
        "tls-sighup-config",
        &format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[server.log]\nformat = \"json\"\n\
             [server.tls]\ncert = {:?}\nkey = {:?}\n\
             [[tenant]]\nid = \"acme\"\nauth = {{ anonymous = true }}\n[[tenant.client]]\nid = \"app\"\n",
            path("server.crt"),
            path("server.key"),
        ),
    );
    let addr: SocketAddr = binary.addr().parse().expect("listening address");
    let tls = connector(&pki.ca_der(), &[b"h2"], None);
    let common_name = |der: &CertificateDer<'static>| {
        sluice::http::tls::ClientCertificate::from_der(der.as_ref())
            .and_then(|names| names.common_name)
            .map(String::from)
    };
    let (mut open, alpn, first) = connect(addr, &tls).await.expect("handshake");
    assert_eq!(alpn.as_deref(), Some(&b"h2"[..]));
    assert_eq!(common_name(&first).as_deref(), Some("hup-one"));

    write_leaf(dir.path(), "server", &pki.server("hup-two"));
    binary.signal("HUP");
    binary.until("TLS certificate reloaded");
    let (_, _, fresh) = connect(addr, &tls).await.expect("handshake after SIGHUP");
    assert_eq!(common_name(&fresh).as_deref(), Some("hup-two"));
    let (status, body) = open
        .send(post(addr, "/runtime/acme/app/mcp", PING, None))
        .await
        .expect("the connection opened before SIGHUP still answers");
    assert_eq!(status, StatusCode::OK, "{body}");

    // A key that does not match the new certificate: the reload is refused and logged, the
    // certificate in use stays.
    write_leaf(dir.path(), "other", &pki.server("hup-three"));
    std::fs::copy(dir.join("other.crt"), dir.join("server.crt")).expect("mismatched cert");
    binary.signal("HUP");
    let refused = binary.until("TLS certificate not reloaded; keeping the one in use");
    assert_eq!(refused["level"], "WARN", "{refused}");
    let (_, _, kept) = connect(addr, &tls)
        .await
        .expect("handshake after a bad SIGHUP");
    assert_eq!(common_name(&kept).as_deref(), Some("hup-two"));
}
