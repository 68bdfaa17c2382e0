//! End-to-end tests of [`Authenticator::authenticate`]: credential dispatch, API keys on real
//! snapshots, the JWT validation matrix against JWKS files and a JWKS served by a real hyper
//! server on 127.0.0.1.

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

// === dispatch, anonymous, API keys ===

#[tokio::test]
async fn api_key_on_its_client() {
    let setup = standard_setup();
    let authn = authenticator();
    let caller = auth_c1(&authn, &setup, &format!("rtk_aaaaaaaaaaaa_{SECRET_A}"))
        .await
        .unwrap();
    assert_eq!(&*caller.tenant, "t1");
    assert_eq!(&*caller.client, "c1");
    assert_eq!(&*caller.caller_id, "apikey:aaaaaaaaaaaa");
    assert_eq!(caller.method, AuthMethod::ApiKey);
    assert_eq!(caller.scopes, Scopes::All);

    // A principal names the caller (namespaced); the key's scopes apply.
    let caller = auth_c1(&authn, &setup, &format!("rtk_cccccccccccc_{SECRET_C}"))
        .await
        .unwrap();
    assert_eq!(&*caller.caller_id, "apikey:svc-reporting");
    assert!(caller.scopes.has("mcp:tools"));
    assert!(!caller.scopes.has("mcp:prompts"));
}

#[tokio::test]
async fn api_key_of_another_client_is_unknown() {
    let setup = standard_setup();
    let authn = authenticator();
    let c2_key = format!("rtk_bbbbbbbbbbbb_{SECRET_B}");
    assert_eq!(
        auth_c1(&authn, &setup, &c2_key).await,
        Err(AuthError::invalid("unknown api key"))
    );
    // The same key works on its own client's path.
    let caller = authn
        .authenticate(&bearer(&c2_key), setup.view("c2"), C2_MCP)
        .await
        .unwrap();
    assert_eq!(&*caller.client, "c2");
    // A right id with a wrong secret reads the same.
    assert_eq!(
        auth_c1(&authn, &setup, &format!("rtk_aaaaaaaaaaaa_{SECRET_B}")).await,
        Err(AuthError::invalid("unknown api key"))
    );
}

#[tokio::test]
async fn api_key_from_x_api_key_header() {
    let setup = standard_setup();
    let authn = authenticator();
    let mut headers = HeaderMap::new();
    headers.insert(
        X_API_KEY,
        HeaderValue::from_str(&format!("rtk_aaaaaaaaaaaa_{SECRET_A}")).unwrap(),
    );
    let caller = authn
        .authenticate(&headers, setup.view("c1"), C1_MCP)
        .await
        .unwrap();
    assert_eq!(&*caller.caller_id, "apikey:aaaaaaaaaaaa");

    // The same key in Authorization too is one credential.
    headers.insert(
        http::header::AUTHORIZATION,
        HeaderValue::from_str(&format!("bearer  rtk_aaaaaaaaaaaa_{SECRET_A} ")).unwrap(),
    );
    let caller = authn
        .authenticate(&headers, setup.view("c1"), C1_MCP)
        .await
        .unwrap();
    assert_eq!(&*caller.caller_id, "apikey:aaaaaaaaaaaa");

    // Anything else in Authorization is ambiguous, not "Authorization wins".
    for other in [
        "Bearer nonsense".to_owned(),
        format!("Bearer rtk_aaaaaaaaaaaa_{SECRET_B}"),
        format!("Basic rtk_aaaaaaaaaaaa_{SECRET_A}"),
    ] {
        headers.insert(
            http::header::AUTHORIZATION,
            HeaderValue::from_str(&other).unwrap(),
        );
        let got = authn.authenticate(&headers, setup.view("c1"), C1_MCP).await;
        assert_eq!(got, Err(AuthError::Ambiguous), "{other}");
        assert!(AuthError::Ambiguous.is_bad_request());
    }
    // A second X-API-Key that differs is ambiguous too.
    let mut headers = HeaderMap::new();
    let key = format!("rtk_aaaaaaaaaaaa_{SECRET_A}");
    headers.insert(
        http::header::AUTHORIZATION,
        HeaderValue::from_str(&format!("Bearer {key}")).unwrap(),
    );
    headers.append(X_API_KEY, HeaderValue::from_str(&key).unwrap());
    headers.append(X_API_KEY, HeaderValue::from_static("rtk_other"));
    assert_eq!(
        crate::auth::check_unambiguous(&headers),
        Err(AuthError::Ambiguous)
    );

    // X-API-Key carries API keys only.
    let mut headers = HeaderMap::new();
    headers.insert(X_API_KEY, HeaderValue::from_static("a.b.c"));
    assert!(matches!(
        authn.authenticate(&headers, setup.view("c1"), C1_MCP).await,
        Err(AuthError::Invalid { .. })
    ));
}

#[tokio::test]
async fn api_keys_need_a_pepper() {
    let setup = standard_setup();
    let authn = Authenticator::new(None);
    assert!(matches!(
        auth_c1(&authn, &setup, &format!("rtk_aaaaaaaaaaaa_{SECRET_A}")).await,
        Err(AuthError::Invalid { .. })
    ));
}

#[tokio::test]
async fn malformed_authorization() {
    let setup = standard_setup();
    let authn = authenticator();
    let check = |value: &'static str| {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::AUTHORIZATION, HeaderValue::from_static(value));
        headers
    };
    for value in [
        "Basic dXNlcjpwYXNz",
        "Bearer",
        "Bearer ",
        "Bearer a.b",
        "Bearer a.b.c.d",
        "Bearer a..c",
        "Bearer a.b!.c",
        "Bearer abc def",
        "rtk_aaaaaaaaaaaa",
    ] {
        let got = authn
            .authenticate(&check(value), setup.view("c1"), C1_MCP)
            .await;
        assert!(
            matches!(got, Err(AuthError::Invalid { .. })),
            "{value}: {got:?}"
        );
    }
    // The scheme is case-insensitive.
    let caller = authn
        .authenticate(
            &check("bearer rtk_aaaaaaaaaaaa_A_cdefghijklmnopqrstuvwxyz0123456789-_ABCDE"),
            setup.view("c1"),
            C1_MCP,
        )
        .await
        .unwrap();
    assert_eq!(caller.method, AuthMethod::ApiKey);
    // Two Authorization headers are refused.
    let mut headers = bearer(&format!("rtk_aaaaaaaaaaaa_{SECRET_A}"));
    headers.append(
        http::header::AUTHORIZATION,
        HeaderValue::from_static("Bearer x"),
    );
    assert!(authn
        .authenticate(&headers, setup.view("c1"), C1_MCP)
        .await
        .is_err());
}

#[tokio::test]
async fn missing_and_anonymous() {
    let setup = standard_setup();
    let authn = authenticator();
    let empty = HeaderMap::new();
    assert_eq!(
        authn.authenticate(&empty, setup.view("c1"), C1_MCP).await,
        Err(AuthError::Missing)
    );
    let anon_view = setup.snap.client("t2", "c1").unwrap();
    let caller = authn
        .authenticate(
            &empty,
            anon_view,
            "https://rt.example.com/runtime/t2/c1/mcp",
        )
        .await
        .unwrap();
    assert_eq!(caller, Caller::anonymous("t2".into(), "c1".into()));
    assert_eq!(caller.method, AuthMethod::Anonymous);
    // A presented credential is checked even where anonymous callers are served.
    assert!(matches!(
        authn
            .authenticate(
                &bearer("rtk_nope"),
                anon_view,
                "https://rt.example.com/runtime/t2/c1/mcp"
            )
            .await,
        Err(AuthError::Invalid { .. })
    ));
    // An anonymous caller meeting a scope check is asked for a credential.
    assert_eq!(
        require(&caller, &["mcp:tools".to_owned()]),
        Err(AuthError::Missing)
    );
    assert_eq!(require(&caller, &[]), Ok(()));
}

#[tokio::test]
async fn tenant_required_scopes() {
    let setup = FileSetup::new(
        &[Signer::Rsa1.jwk(Some("r1"))],
        r#"required_scopes = ["mcp:tools", "mcp:admin"]"#,
        "",
    );
    let authn = authenticator();
    // Scopes = All passes.
    assert!(
        auth_c1(&authn, &setup, &format!("rtk_aaaaaaaaaaaa_{SECRET_A}"))
            .await
            .is_ok()
    );
    // The scoped key lacks mcp:admin.
    assert_eq!(
        auth_c1(&authn, &setup, &format!("rtk_cccccccccccc_{SECRET_C}")).await,
        Err(AuthError::InsufficientScope {
            required: vec!["mcp:admin".to_owned()]
        })
    );
    // So does the token (scope "mcp:tools mcp:prompts").
    let token = Signer::Rsa1.sign(Some("r1"), &claims());
    let err = auth_c1(&authn, &setup, &token).await.unwrap_err();
    assert!(err.is_forbidden());
    assert_eq!(err.oauth_error(), Some("insufficient_scope"));
    let token = Signer::Rsa1.sign(
        Some("r1"),
        &with(claims(), json!({"scope": "mcp:admin mcp:tools"})),
    );
    assert!(auth_c1(&authn, &setup, &token).await.is_ok());
}

#[test]
fn scopes_and_require() {
    let scopes = Scopes::from_names(["a", "b", "a"]);
    assert!(scopes.has("a") && scopes.has("b") && !scopes.has("c"));
    let req = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        scopes.missing(&req(&["a", "c", "d", "c"])),
        req(&["c", "d"])
    );
    assert!(Scopes::All.missing(&req(&["x"])).is_empty());
    let caller = Caller {
        scopes,
        method: AuthMethod::Jwt,
        ..Caller::anonymous("t".into(), "c".into())
    };
    assert_eq!(require(&caller, &req(&["a"])), Ok(()));
    assert_eq!(
        require(&caller, &req(&["a", "z"])),
        Err(AuthError::InsufficientScope {
            required: req(&["z"])
        })
    );
}

#[test]
fn error_predicates() {
    let invalid = AuthError::invalid("bad signature");
    assert_eq!(invalid.oauth_error(), Some("invalid_token"));
    assert_eq!(invalid.description(), "bad signature");
    assert!(!invalid.is_forbidden());
    assert_eq!(AuthError::Expired.oauth_error(), Some("invalid_token"));
    assert_eq!(AuthError::Missing.oauth_error(), None);
    assert!(AuthError::JwksUnavailable.is_unavailable());
    assert_eq!(AuthError::JwksUnavailable.oauth_error(), None);
}

// === JWT matrix ===

#[tokio::test]
async fn good_tokens() {
    let setup = standard_setup();
    let authn = authenticator();
    for (signer, kid) in [
        (Signer::Rsa1, "r1"),
        (Signer::Ec1, "e1"),
        (Signer::Ed1, "d1"),
    ] {
        let token = signer.sign(Some(kid), &claims());
        let caller = auth_c1(&authn, &setup, &token).await.unwrap();
        assert_eq!(&*caller.caller_id, "jwt:https://idp.example.com/t1|user-1");
        assert_eq!(caller.method, AuthMethod::Jwt);
        assert_eq!(
            caller.scopes,
            Scopes::from_names(["mcp:tools", "mcp:prompts"])
        );
    }
    // `aud` as an array containing this endpoint.
    let token = Signer::Rsa1.sign(
        Some("r1"),
        &with(claims(), json!({"aud": ["https://other.example", C1_MCP]})),
    );
    assert!(auth_c1(&authn, &setup, &token).await.is_ok());
    // A key that declares `alg` verifies only that algorithm.
    let token = Signer::Rsa1.sign_as(Algorithm::PS256, Some("r1"), &claims());
    assert_eq!(
        auth_c1(&authn, &setup, &token).await,
        Err(AuthError::invalid("key does not match the token algorithm"))
    );
    // An RSA key that declares none verifies any RSA algorithm on the allow list.
    let mut undeclared = Signer::Rsa1.jwk(Some("r1"));
    undeclared.as_object_mut().unwrap().remove("alg");
    let setup = FileSetup::new(&[undeclared], "", "");
    assert!(auth_c1(&authn, &setup, &token).await.is_ok());
    let token = Signer::Rsa1.sign_as(Algorithm::RS512, Some("r1"), &claims());
    assert_eq!(
        auth_c1(&authn, &setup, &token).await,
        Err(AuthError::invalid("token algorithm not allowed"))
    );
}

#[tokio::test]
async fn rejected_tokens() {
    let setup = standard_setup();
    let authn = authenticator();
    let check = |patch: Value, expected: AuthError| {
        let token = Signer::Rsa1.sign(Some("r1"), &with(claims(), patch));
        let authn = &authn;
        let setup = &setup;
        async move {
            assert_eq!(auth_c1(authn, setup, &token).await, Err(expected));
        }
    };
    check(
        json!({"aud": "https://other.example/mcp"}),
        AuthError::invalid("wrong audience"),
    )
    .await;
    // A token for c2's endpoint cannot be replayed on c1's.
    check(json!({"aud": C2_MCP}), AuthError::invalid("wrong audience")).await;
    check(
        json!({"aud": null}),
        AuthError::invalid("token lacks a required claim"),
    )
    .await;
    check(json!({"exp": now() - 3600}), AuthError::Expired).await;
    check(
        json!({"exp": null}),
        AuthError::invalid("token lacks a required claim"),
    )
    .await;
    check(
        json!({"nbf": now() + 3600}),
        AuthError::invalid("token not yet valid"),
    )
    .await;
    check(
        json!({"iss": "https://evil.example/t1"}),
        AuthError::invalid("wrong issuer"),
    )
    .await;
    check(
        json!({"sub": null}),
        AuthError::invalid("token has no subject"),
    )
    .await;
    // Within the leeway (60 s) an expired token still passes.
    let token = Signer::Rsa1.sign(Some("r1"), &with(claims(), json!({"exp": now() - 10})));
    assert!(auth_c1(&authn, &setup, &token).await.is_ok());
    // Signed by a key that is not in the set but claims a kid that is.
    let token = Signer::Rsa2.sign(Some("r1"), &claims());
    assert_eq!(
        auth_c1(&authn, &setup, &token).await,
        Err(AuthError::invalid("bad signature"))
    );
    // A kid whose key type does not fit the algorithm.
    let token = Signer::Rsa1.sign(Some("e1"), &claims());
    assert!(matches!(
        auth_c1(&authn, &setup, &token).await,
        Err(AuthError::Invalid { .. })
    ));
}

#[tokio::test]
async fn configured_audiences_replace_the_endpoint_url() {
    let setup = FileSetup::new(
        &[Signer::Rsa1.jwk(Some("r1"))],
        "",
        r#"audiences = ["api://sluice"]"#,
    );
    let authn = authenticator();
    let token = Signer::Rsa1.sign(Some("r1"), &with(claims(), json!({"aud": "api://sluice"})));
    assert!(auth_c1(&authn, &setup, &token).await.is_ok());
    let token = Signer::Rsa1.sign(Some("r1"), &claims());
    assert_eq!(
        auth_c1(&authn, &setup, &token).await,
        Err(AuthError::invalid("wrong audience"))
    );
}

#[tokio::test]
async fn client_credentials_token_without_sub() {
    let setup = standard_setup();
    let authn = authenticator();
    let token = Signer::Rsa1.sign(
        Some("r1"),
        &with(claims(), json!({"sub": null, "client_id": "svc-7"})),
    );
    let caller = auth_c1(&authn, &setup, &token).await.unwrap();
    assert_eq!(
        &*caller.caller_id,
        "jwt:https://idp.example.com/t1|client:svc-7"
    );
    let token = Signer::Rsa1.sign(
        Some("r1"),
        &with(claims(), json!({"sub": null, "azp": "svc-8"})),
    );
    let caller = auth_c1(&authn, &setup, &token).await.unwrap();
    assert_eq!(
        &*caller.caller_id,
        "jwt:https://idp.example.com/t1|client:svc-8"
    );
}

#[tokio::test]
async fn alg_none_is_rejected() {
    let setup = standard_setup();
    let authn = authenticator();
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims()).unwrap());
    for token in [
        format!("{header}.{payload}."),
        format!("{header}.{payload}.c2ln"),
    ] {
        assert!(matches!(
            auth_c1(&authn, &setup, &token).await,
            Err(AuthError::Invalid { .. })
        ));
    }
}

#[tokio::test]
async fn hmac_with_the_public_key_is_rejected() {
    let setup = standard_setup();
    let authn = authenticator();
    // Algorithm confusion: an HS256 token whose HMAC key is the RSA public key's bytes.
    let public_pem = fixture("rsa1.pub.pem");
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("r1".to_owned());
    let key = EncodingKey::from_secret(&public_pem).unwrap();
    let token = jsonwebtoken::encode(&header, &claims(), &key).unwrap();
    assert_eq!(
        auth_c1(&authn, &setup, &token).await,
        Err(AuthError::invalid("token algorithm not allowed"))
    );
}

#[tokio::test]
async fn oct_keys_in_the_jwks_are_ignored() {
    let secret = URL_SAFE_NO_PAD.encode(b"shared-secret-shared-secret-1234");
    let oct = json!({"kty": "oct", "kid": "h1", "k": secret, "alg": "HS256"});
    let set = super::jwks::KeySet::parse(
        &jwks(&[oct.clone(), Signer::Rsa1.jwk(Some("r1"))]),
        tokio::time::Instant::now(),
    )
    .unwrap();
    assert_eq!(set.len(), 1);

    let setup = FileSetup::new(&[oct, Signer::Rsa1.jwk(Some("r1"))], "", "");
    let authn = authenticator();
    // HS256 with the oct key's secret: refused.
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("h1".to_owned());
    let key = EncodingKey::from_secret(b"shared-secret-shared-secret-1234").unwrap();
    let token = jsonwebtoken::encode(&header, &claims(), &key).unwrap();
    assert!(matches!(
        auth_c1(&authn, &setup, &token).await,
        Err(AuthError::Invalid { .. })
    ));
    // An RS256 token naming the oct key's kid finds no key.
    let token = Signer::Rsa1.sign(Some("h1"), &claims());
    assert_eq!(
        auth_c1(&authn, &setup, &token).await,
        Err(AuthError::invalid("unknown key id"))
    );
}

#[tokio::test]
async fn jwks_skips_odd_keys_and_rejects_non_sets() {
    let set = super::jwks::KeySet::parse(
        &jwks(&[
            json!({"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"}),
            json!({"kty": "EC", "crv": "P-521", "x": "AA", "y": "AA"}),
            json!({"kty": "weird"}),
            json!(42),
            Signer::Ec1.jwk(Some("e1")),
        ]),
        tokio::time::Instant::now(),
    )
    .unwrap();
    assert_eq!(set.len(), 1);
    assert!(super::jwks::KeySet::parse(b"{\"nokeys\":[]}", tokio::time::Instant::now()).is_err());
    assert!(super::jwks::KeySet::parse(b"not json", tokio::time::Instant::now()).is_err());
}

#[tokio::test]
async fn client_claim_binds_the_token_to_the_client() {
    let setup = FileSetup::new(
        &[Signer::Rsa1.jwk(Some("r1"))],
        "",
        r#"client_claim = "azp""#,
    );
    let authn = authenticator();
    let token = Signer::Rsa1.sign(Some("r1"), &with(claims(), json!({"azp": "c1"})));
    assert!(auth_c1(&authn, &setup, &token).await.is_ok());
    for azp in [json!("c2"), json!(null), json!(7)] {
        let token = Signer::Rsa1.sign(Some("r1"), &with(claims(), json!({"azp": azp})));
        assert_eq!(
            auth_c1(&authn, &setup, &token).await,
            Err(AuthError::invalid("token not issued for this client")),
            "{azp}"
        );
    }
}

#[tokio::test]
async fn scope_claims() {
    let setup = standard_setup();
    let authn = authenticator();
    let check = |patch: Value, expected: &[&str]| {
        let token = Signer::Rsa1.sign(Some("r1"), &with(claims(), patch));
        let authn = &authn;
        let setup = &setup;
        let expected = Scopes::from_names(expected.iter().copied());
        async move {
            let caller = auth_c1(authn, setup, &token).await.unwrap();
            assert_eq!(caller.scopes, expected);
        }
    };
    check(json!({"scope": "a  b\tc"}), &["a", "b", "c"]).await;
    check(json!({"scope": null, "scp": ["x", "y"]}), &["x", "y"]).await;
    check(json!({"scope": null, "scp": "x y"}), &["x", "y"]).await;
    check(json!({"scope": null}), &[]).await;
}

#[tokio::test]
async fn kid_selection() {
    // Without `kid`, exactly one key fitting the algorithm is used.
    let setup = FileSetup::new(&[Signer::Rsa1.jwk(None), Signer::Ec1.jwk(None)], "", "");
    let authn = authenticator();
    let token = Signer::Rsa1.sign(None, &claims());
    assert!(auth_c1(&authn, &setup, &token).await.is_ok());
    let token = Signer::Ec1.sign(None, &claims());
    assert!(auth_c1(&authn, &setup, &token).await.is_ok());
    // Two RSA keys: a token without `kid` is ambiguous.
    let setup = FileSetup::new(&[Signer::Rsa1.jwk(None), Signer::Rsa2.jwk(None)], "", "");
    let token = Signer::Rsa1.sign(None, &claims());
    assert_eq!(
        auth_c1(&authn, &setup, &token).await,
        Err(AuthError::invalid("token has no key id"))
    );
}

#[tokio::test]
async fn jwt_on_a_tenant_without_jwt_settings() {
    let setup = standard_setup();
    let authn = authenticator();
    let view = setup.snap.client("t2", "c1").unwrap();
    let token = Signer::Rsa1.sign(Some("r1"), &claims());
    assert_eq!(
        authn.authenticate(&bearer(&token), view, C1_MCP).await,
        Err(AuthError::invalid("bearer tokens are not accepted here"))
    );
}

#[tokio::test(start_paused = true)]
async fn unknown_kid_refetches_the_file_once_per_interval() {
    let setup = FileSetup::new(&[Signer::Rsa1.jwk(Some("r1"))], "", "");
    let authn = authenticator();
    let t1 = Signer::Rsa1.sign(Some("r1"), &claims());
    let t2 = Signer::Rsa2.sign(Some("r2"), &claims());
    assert!(auth_c1(&authn, &setup, &t1).await.is_ok());

    // Rotation: the issuer publishes r2. The set was read moments ago, so no refetch yet.
    setup.replace(&[Signer::Rsa1.jwk(Some("r1")), Signer::Rsa2.jwk(Some("r2"))]);
    assert_eq!(
        auth_c1(&authn, &setup, &t2).await,
        Err(AuthError::invalid("unknown key id"))
    );
    tokio::time::advance(Duration::from_secs(61)).await;
    assert!(auth_c1(&authn, &setup, &t2).await.is_ok());
    assert!(auth_c1(&authn, &setup, &t1).await.is_ok());

    // An unknown kid now costs one refetch, and the next one inside the interval none.
    let t3 = Signer::Ec1.sign(Some("e3"), &claims());
    assert!(auth_c1(&authn, &setup, &t3).await.is_err());
    setup.replace(&[Signer::Ec1.jwk(Some("e3"))]);
    assert!(auth_c1(&authn, &setup, &t3).await.is_err());
    tokio::time::advance(Duration::from_secs(61)).await;
    assert!(auth_c1(&authn, &setup, &t3).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn stale_sets_are_refreshed_and_kept_on_failure() {
    let setup = FileSetup::new(&[Signer::Rsa1.jwk(Some("r1"))], "", "");
    let authn = Authenticator::with_jwks(
        Some(PEPPER.as_bytes().to_vec()),
        JwksCache::with_intervals(Duration::from_secs(60), Duration::from_secs(600)),
    );
    let t1 = Signer::Rsa1.sign(Some("r1"), &claims());
    assert!(auth_c1(&authn, &setup, &t1).await.is_ok());
    // A broken file: the last good set keeps serving.
    std::fs::write(&setup.path, b"garbage").unwrap();
    tokio::time::advance(Duration::from_secs(601)).await;
    assert!(auth_c1(&authn, &setup, &t1).await.is_ok());
    // The issuer drops r1: once the set is stale again, r1 stops working.
    setup.replace(&[Signer::Rsa2.jwk(Some("r2"))]);
    tokio::time::advance(Duration::from_secs(601)).await;
    assert_eq!(
        auth_c1(&authn, &setup, &t1).await,
        Err(AuthError::invalid("unknown key id"))
    );
}

#[tokio::test]
async fn unreadable_jwks_file_is_unavailable() {
    let setup = standard_setup();
    std::fs::remove_file(&setup.path).unwrap();
    let authn = authenticator();
    let token = Signer::Rsa1.sign(Some("r1"), &claims());
    let err = auth_c1(&authn, &setup, &token).await.unwrap_err();
    assert_eq!(err, AuthError::JwksUnavailable);
    assert!(err.is_unavailable());
}

// === JWKS over HTTP ===

/// A JWKS server on 127.0.0.1 that counts requests; dropping it (or [`Self::stop`]) closes the
/// listener and every connection.
struct JwksServer {
    url: String,
    body: Arc<Mutex<Bytes>>,
    status: Arc<AtomicU16>,
    hits: Arc<AtomicUsize>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl JwksServer {
    async fn start(keys: &[Value]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
        let body = Arc::new(Mutex::new(Bytes::from(jwks(keys))));
        let hits = Arc::new(AtomicUsize::new(0));
        let status = Arc::new(AtomicU16::new(200));
        let (b, h, st) = (body.clone(), hits.clone(), status.clone());
        let task = tokio::spawn(async move {
            // Connections live in this set, so aborting the accept task closes them too.
            let mut connections = JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (b, h, st) = (b.clone(), h.clone(), st.clone());
                let service = service_fn(move |_req| {
                    h.fetch_add(1, Ordering::SeqCst);
                    let body = b.lock().unwrap().clone();
                    let status = st.load(Ordering::SeqCst);
                    async move {
                        Ok::<_, Infallible>(
                            Response::builder()
                                .status(status)
                                .header("location", "http://127.0.0.1:1/elsewhere")
                                .header("content-type", "application/json")
                                .body(Full::new(body))
                                .unwrap(),
                        )
                    }
                });
                connections.spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self {
            url,
            body,
            status,
            hits,
            task: Some(task),
        }
    }

    fn replace(&self, keys: &[Value]) {
        *self.body.lock().unwrap() = Bytes::from(jwks(keys));
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    async fn stop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }
}

impl Drop for JwksServer {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

fn url_snapshot(url: &str) -> Snapshot {
    snapshot(&format!("jwks_url = {url:?}"), "", "")
}

#[tokio::test]
async fn jwks_url_fetch_cache_refetch_and_outage() {
    let mut server = JwksServer::start(&[Signer::Rsa1.jwk(Some("r1"))]).await;
    let snap = url_snapshot(&server.url);
    let view = snap.client("t1", "c1").unwrap();
    // Refetches allowed at once, so only caching and the outage are under test here.
    let authn = Authenticator::with_jwks(
        None,
        JwksCache::with_intervals(Duration::ZERO, Duration::from_secs(3600)),
    );
    let t1 = Signer::Rsa1.sign(Some("r1"), &claims());
    let t2 = Signer::Rsa2.sign(Some("r2"), &claims());

    // Fetched on first use, then served from the cache.
    assert!(authn.authenticate(&bearer(&t1), view, C1_MCP).await.is_ok());
    assert!(authn.authenticate(&bearer(&t1), view, C1_MCP).await.is_ok());
    assert_eq!(server.hits(), 1);

    // An unknown kid refetches and finds the rotated key.
    server.replace(&[Signer::Rsa1.jwk(Some("r1")), Signer::Rsa2.jwk(Some("r2"))]);
    assert!(authn.authenticate(&bearer(&t2), view, C1_MCP).await.is_ok());
    assert_eq!(server.hits(), 2);

    // The server goes down: known keys keep working from the last good set, an unknown kid is
    // simply unknown.
    server.stop().await;
    assert!(authn.authenticate(&bearer(&t1), view, C1_MCP).await.is_ok());
    assert!(authn.authenticate(&bearer(&t2), view, C1_MCP).await.is_ok());
    let t3 = Signer::Ec1.sign(Some("e3"), &claims());
    assert_eq!(
        authn.authenticate(&bearer(&t3), view, C1_MCP).await,
        Err(AuthError::invalid("unknown key id"))
    );
    assert!(authn.authenticate(&bearer(&t1), view, C1_MCP).await.is_ok());
}

#[tokio::test]
async fn jwks_url_refetch_is_limited_and_not_stampeded() {
    let server = JwksServer::start(&[Signer::Rsa1.jwk(Some("r1"))]).await;
    let snap = Arc::new(url_snapshot(&server.url));
    let authn = Arc::new(Authenticator::with_jwks(
        None,
        JwksCache::with_intervals(Duration::from_secs(3600), Duration::from_secs(3600)),
    ));

    // Many requests with an unknown kid at once, before any set is loaded: one fetch.
    let unknown = Signer::Rsa2.sign(Some("r2"), &claims());
    let mut tasks = JoinSet::new();
    for _ in 0..16 {
        let (authn, snap, token) = (authn.clone(), snap.clone(), unknown.clone());
        tasks.spawn(async move {
            let view = snap.client("t1", "c1").unwrap();
            authn.authenticate(&bearer(&token), view, C1_MCP).await
        });
    }
    while let Some(result) = tasks.join_next().await {
        assert_eq!(result.unwrap(), Err(AuthError::invalid("unknown key id")));
    }
    assert_eq!(server.hits(), 1);

    // Inside the interval, even a rotated set is not fetched again.
    server.replace(&[Signer::Rsa2.jwk(Some("r2"))]);
    let view = snap.client("t1", "c1").unwrap();
    assert!(authn
        .authenticate(&bearer(&unknown), view, C1_MCP)
        .await
        .is_err());
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn jwks_url_unreachable_is_unavailable() {
    // Bind then drop a listener to get a port nothing listens on.
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap().port()
    };
    let snap = url_snapshot(&format!("http://127.0.0.1:{port}/jwks.json"));
    let view = snap.client("t1", "c1").unwrap();
    let authn = authenticator();
    let token = Signer::Rsa1.sign(Some("r1"), &claims());
    assert_eq!(
        authn.authenticate(&bearer(&token), view, C1_MCP).await,
        Err(AuthError::JwksUnavailable)
    );
}

#[tokio::test]
async fn jwks_cache_is_shared_across_snapshots() {
    let server = JwksServer::start(&[Signer::Rsa1.jwk(Some("r1"))]).await;
    let authn = authenticator();
    let token = Signer::Rsa1.sign(Some("r1"), &claims());
    // A reload builds a new snapshot; the long-lived authenticator keeps the set.
    for _ in 0..3 {
        let snap = url_snapshot(&server.url);
        let view = snap.client("t1", "c1").unwrap();
        assert!(authn
            .authenticate(&bearer(&token), view, C1_MCP)
            .await
            .is_ok());
    }
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn jwks_url_limits() {
    let server = JwksServer::start(&[Signer::Rsa1.jwk(Some("r1"))]).await;
    let cache = JwksCache::new();
    let source = JwksSource::Url(server.url.clone());
    assert_eq!(cache.fetch(&source).await.unwrap().len(), 1);
    // Redirects are not followed; other statuses fail the fetch.
    for status in [302, 404, 500] {
        server.status.store(status, Ordering::SeqCst);
        assert!(
            matches!(cache.fetch(&source).await, Err(FetchError::Status(s)) if s == status),
            "{status}"
        );
    }
    server.status.store(200, Ordering::SeqCst);
    // A document past the cap is refused, however it is sent.
    *server.body.lock().unwrap() = Bytes::from(vec![b' '; MAX_JWKS_BYTES + 1]);
    assert!(matches!(
        cache.fetch(&source).await,
        Err(FetchError::TooLarge)
    ));
    let dir = temp_dir();
    let path = dir.join("big.json");
    std::fs::write(&path, vec![b' '; MAX_JWKS_BYTES + 1]).unwrap();
    assert!(matches!(
        cache.fetch(&JwksSource::File(path)).await,
        Err(FetchError::TooLarge)
    ));
}
