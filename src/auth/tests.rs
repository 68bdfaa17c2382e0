//! End-to-end tests of [`Authenticator::authenticate`]: credential dispatch, API keys on real
//! snapshots, the JWT validation matrix against JWKS files and a JWKS served by a real hyper
//! server on 127.0.0.1.
//!
//! This file holds the shared helpers (signers, snapshots, JWKS files); the cases are in
//! `tests/apikey.rs`, `tests/jwt.rs` and `tests/jwks_http.rs`.

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response};
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use super::jwks::{FetchError, JwksSource, MAX_JWKS_BYTES};
use super::*;
use crate::catalog::Snapshot;

mod apikey;
mod jwks_http;
mod jwt;

const PEPPER: &str = "test-pepper";
const ISSUER: &str = "https://idp.example.com/t1";
const C1_MCP: &str = "https://rt.example.com/runtime/t1/c1/mcp";
const C2_MCP: &str = "https://rt.example.com/runtime/t1/c2/mcp";
const SECRET_A: &str = "A_cdefghijklmnopqrstuvwxyz0123456789-_ABCDE";
const SECRET_B: &str = "B_cdefghijklmnopqrstuvwxyz0123456789-_ABCDE";
const SECRET_C: &str = "C_cdefghijklmnopqrstuvwxyz0123456789-_ABCDE";

// === helpers ===

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/auth")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// A signing key of the fixtures.
#[derive(Clone, Copy)]
enum Signer {
    Rsa1,
    Rsa2,
    Ec1,
    Ed1,
}

impl Signer {
    fn alg(self) -> Algorithm {
        match self {
            Signer::Rsa1 | Signer::Rsa2 => Algorithm::RS256,
            Signer::Ec1 => Algorithm::ES256,
            Signer::Ed1 => Algorithm::EdDSA,
        }
    }

    fn encoding_key(self) -> EncodingKey {
        match self {
            Signer::Rsa1 => EncodingKey::from_rsa_pem(&fixture("rsa1.pem")).unwrap(),
            Signer::Rsa2 => EncodingKey::from_rsa_pem(&fixture("rsa2.pem")).unwrap(),
            Signer::Ec1 => EncodingKey::from_ec_pem(&fixture("ec1.pem")).unwrap(),
            Signer::Ed1 => EncodingKey::from_ed_pem(&fixture("ed1.pem")).unwrap(),
        }
    }

    /// The public JWK of this key with `kid`.
    fn jwk(self, kid: Option<&str>) -> Value {
        let mut jwk = Jwk::from_encoding_key(&self.encoding_key(), self.alg()).unwrap();
        jwk.common.key_id = kid.map(str::to_owned);
        serde_json::to_value(jwk).unwrap()
    }

    fn sign(self, kid: Option<&str>, claims: &Value) -> String {
        self.sign_as(self.alg(), kid, claims)
    }

    fn sign_as(self, alg: Algorithm, kid: Option<&str>, claims: &Value) -> String {
        let mut header = Header::new(alg);
        header.kid = kid.map(str::to_owned);
        jsonwebtoken::encode(&header, claims, &self.encoding_key()).unwrap()
    }
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .try_into()
        .unwrap()
}

/// Claims valid for c1's MCP endpoint for the next hour.
fn claims() -> Value {
    json!({
        "iss": ISSUER,
        "sub": "user-1",
        "aud": C1_MCP,
        "exp": now() + 3600,
        "iat": now(),
        "scope": "mcp:tools mcp:prompts",
    })
}

fn with(mut base: Value, patch: Value) -> Value {
    for (k, v) in patch.as_object().unwrap() {
        if v.is_null() {
            base.as_object_mut().unwrap().remove(k);
        } else {
            base[k] = v.clone();
        }
    }
    base
}

fn jwks(keys: &[Value]) -> Vec<u8> {
    serde_json::to_vec(&json!({ "keys": keys })).unwrap()
}

/// A fresh directory under the system temp dir.
fn temp_dir() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "sluice-auth-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn key_hash(secret: &str) -> String {
    hex::encode(hash_secret(PEPPER.as_bytes(), secret))
}

/// A snapshot with tenant t1 (clients c1, c2 with API keys; JWTs from `jwks_line`, extra
/// `[tenant.auth]` lines in `auth`, extra `[tenant.auth.jwt]` lines in `jwt`) and tenant t2
/// (anonymous).
fn snapshot(jwks_line: &str, auth: &str, jwt: &str) -> Snapshot {
    let text = format!(
        r#"
[server]
api_key_pepper = "{PEPPER}"
public_url = "https://rt.example.com"

[[tenant]]
id = "t1"
[tenant.auth]
{auth}
[tenant.auth.jwt]
issuer = "{ISSUER}"
{jwks_line}
{jwt}
[[tenant.client]]
id = "c1"
[[tenant.client.api_key]]
id = "aaaaaaaaaaaa"
hash = "{hash_a}"
[[tenant.client.api_key]]
id = "cccccccccccc"
hash = "{hash_c}"
principal = "svc-reporting"
scopes = ["mcp:tools"]
[[tenant.client]]
id = "c2"
[[tenant.client.api_key]]
id = "bbbbbbbbbbbb"
hash = "{hash_b}"

[[tenant]]
id = "t2"
auth = {{ anonymous = true, required_scopes = [] }}
[[tenant.client]]
id = "c1"
"#,
        hash_a = key_hash(SECRET_A),
        hash_b = key_hash(SECRET_B),
        hash_c = key_hash(SECRET_C),
    );
    let config = crate::config::parse(&text, "test").unwrap();
    Snapshot::build(&config, 1, None).unwrap_or_else(|r| panic!("{r:?}"))
}

fn bearer(token: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        http::header::AUTHORIZATION,
        HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
    );
    headers
}

/// A JWKS file plus a snapshot pointing at it.
struct FileSetup {
    path: PathBuf,
    snap: Snapshot,
}

impl FileSetup {
    fn new(keys: &[Value], auth: &str, jwt: &str) -> Self {
        let path = temp_dir().join("jwks.json");
        std::fs::write(&path, jwks(keys)).unwrap();
        let line = format!("jwks_file = {:?}", path.display().to_string());
        let snap = snapshot(&line, auth, jwt);
        Self { path, snap }
    }

    fn replace(&self, keys: &[Value]) {
        std::fs::write(&self.path, jwks(keys)).unwrap();
    }

    fn view(&self, client: &str) -> &ClientView {
        self.snap.client("t1", client).unwrap()
    }
}

fn authenticator() -> Authenticator {
    Authenticator::new(Some(PEPPER.as_bytes().to_vec()))
}

async fn auth_c1(
    authn: &Authenticator,
    setup: &FileSetup,
    token: &str,
) -> Result<Caller, AuthError> {
    authn
        .authenticate(&bearer(token), setup.view("c1"), C1_MCP)
        .await
}

fn standard_setup() -> FileSetup {
    FileSetup::new(
        &[
            Signer::Rsa1.jwk(Some("r1")),
            Signer::Ec1.jwk(Some("e1")),
            Signer::Ed1.jwk(Some("d1")),
        ],
        "",
        "",
    )
}
