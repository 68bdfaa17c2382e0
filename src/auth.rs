//! Authentication: turns the credential on a request into a [`Caller`], or an [`AuthError`].
//!
//! Owns credential dispatch (`Authorization: Bearer …`, or `X-API-Key`, or the connection's
//! client certificate), static API keys ([`apikey`]), client certificates ([`mtls`]), JWT bearer validation ([`jwt`]) against a cached JWKS ([`jwks`]), the
//! `WWW-Authenticate` challenges of RFC 6750 / RFC 9728 ([`challenge`]) and the protected-resource
//! metadata document ([`prm`]). sluice is an OAuth 2.1 resource server in the sense of MCP
//! 2025-11-25, Authorization.
//!
//! Must not touch sessions, routing or HTTP responses: callers (the transports) authenticate
//! every request with [`Authenticator::authenticate`], bind sessions to [`Caller::caller_id`], and
//! map an [`AuthError`] to a status (401 unless [`AuthError::is_forbidden`] says 403, or
//! [`AuthError::is_unavailable`] says 503) plus [`challenge::www_authenticate`]. Token contents
//! never appear in an error, a log line or a header this module builds.
//!
//! The [`Authenticator`] is long-lived (one per process, across catalog reloads): it holds the
//! JWKS cache, which must outlive any one snapshot so a reload does not refetch every key set.

pub mod apikey;
pub(crate) mod challenge;
pub(crate) mod jwks;
pub(crate) mod jwt;
pub(crate) mod mtls;
pub(crate) mod prm;
#[cfg(any(test, feature = "test-util"))]
pub mod props;

#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::SystemTime;

use http::header::AUTHORIZATION;
use http::HeaderMap;

use crate::catalog::ClientView;

pub use apikey::{generate, hash_secret, GeneratedKey};
pub(crate) use jwks::JwksCache;

/// The header some clients that cannot set `Authorization` use for an API key. Read only when
/// the request has no `Authorization` header; both carrying different credentials is
/// [`AuthError::Ambiguous`].
pub(crate) const X_API_KEY: &str = "x-api-key";

/// The `caller_id` of requests served without a credential.
pub(crate) const ANONYMOUS_CALLER: &str = "anonymous";

// === Caller ===

/// Who is calling: the result of authenticating one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The tenant of the endpoint path.
    pub tenant: Arc<str>,
    /// The client application of the endpoint path.
    pub client: Arc<str>,
    /// A stable identity, the same across token refreshes and key rotations of one principal:
    /// `apikey:{keyId}` (`apikey:{principal}` when the key names a principal), `jwt:{iss}|{sub}`
    /// (`jwt:{iss}|client:{client_id}` for tokens without `sub`), or `anonymous`. The prefixes keep
    /// identities of different methods from ever being equal, so a session bound to one cannot be
    /// used with another.
    pub caller_id: Arc<str>,
    /// How the caller authenticated.
    pub method: AuthMethod,
    /// What the credential grants.
    pub scopes: Scopes,
}

/// The shared `anonymous` caller id (one allocation per process, not per request).
fn anonymous_id() -> Arc<str> {
    static ID: std::sync::OnceLock<Arc<str>> = std::sync::OnceLock::new();
    Arc::clone(ID.get_or_init(|| Arc::from(ANONYMOUS_CALLER)))
}

impl Caller {
    /// The caller of a request without a credential on a tenant that allows it. It holds no
    /// scope, so any scope check it meets asks for a credential ([`AuthError::Missing`]).
    pub fn anonymous(tenant: Arc<str>, client: Arc<str>) -> Self {
        Self {
            tenant,
            client,
            caller_id: anonymous_id(),
            method: AuthMethod::Anonymous,
            scopes: Scopes::none(),
        }
    }
}

/// How a caller authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthMethod {
    /// A static API key (`rtk_…`).
    ApiKey,
    /// A JWT bearer token from the tenant's authorization server.
    Jwt,
    /// A verified TLS client certificate a `[[tenant.client.certificate]]` rule names.
    Mtls,
    /// No credential, on a tenant with `anonymous = true`.
    Anonymous,
}

impl AuthMethod {
    /// The name audit records and session records use.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMethod::ApiKey => "apikey",
            AuthMethod::Jwt => "jwt",
            AuthMethod::Mtls => "mtls",
            AuthMethod::Anonymous => "anonymous",
        }
    }
}

/// The scopes a credential grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scopes {
    /// Every scope (an API key without a `scopes` list).
    All,
    /// Exactly these.
    Set(Arc<BTreeSet<String>>),
}

impl Scopes {
    /// No scope at all.
    pub(crate) fn none() -> Self {
        // Shared: every anonymous request holds it, and an empty set is an allocation.
        static NONE: std::sync::OnceLock<Arc<BTreeSet<String>>> = std::sync::OnceLock::new();
        Scopes::Set(Arc::clone(NONE.get_or_init(Arc::default)))
    }

    /// Exactly the given scopes (duplicates collapse).
    pub(crate) fn from_names<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Scopes::Set(Arc::new(names.into_iter().map(Into::into).collect()))
    }

    /// Whether `scope` is granted.
    pub(crate) fn has(&self, scope: &str) -> bool {
        match self {
            Scopes::All => true,
            Scopes::Set(set) => set.contains(scope),
        }
    }

    /// The scopes of `required` that are not granted, in `required` order, without duplicates.
    pub(crate) fn missing(&self, required: &[String]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for scope in required {
            if !self.has(scope) && !out.contains(scope) {
                out.push(scope.clone());
            }
        }
        out
    }
}

// === AuthError ===

/// Why a request was not authenticated or not authorized. Descriptions are short, fixed texts
/// that are safe to send to the client: they never quote the credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// The request carries no credential and the tenant does not serve anonymous callers (401).
    #[error("no credential")]
    Missing,
    /// A credential was presented and rejected: malformed, unknown key, bad secret, bad
    /// signature, wrong issuer or audience, unknown `kid`… (401).
    #[error("invalid credential: {reason}")]
    Invalid {
        /// A short, safe description.
        reason: &'static str,
    },
    /// The credential was valid once and has expired (401).
    #[error("credential expired")]
    Expired,
    /// The credential is valid but lacks scopes (403).
    #[error("insufficient scope: requires {}", required.join(" "))]
    InsufficientScope {
        /// The scopes the operation needs and the caller lacks.
        required: Vec<String>,
    },
    /// The tenant's signing keys could not be loaded and none were loaded before (503): the
    /// token may well be fine, so this is not the client's fault.
    #[error("token signing keys unavailable")]
    JwksUnavailable,
    /// `Authorization` and `X-API-Key` carry different credentials (400): picking one would let
    /// a component that reads the other act for someone else. The same key in both is fine.
    #[error("ambiguous credentials: Authorization and X-API-Key differ")]
    Ambiguous,
}

impl AuthError {
    /// A rejected credential, with a safe reason.
    pub const fn invalid(reason: &'static str) -> Self {
        AuthError::Invalid { reason }
    }

    /// Whether the answer is 403 (authenticated, not allowed) rather than 401.
    pub(crate) fn is_forbidden(&self) -> bool {
        matches!(self, AuthError::InsufficientScope { .. })
    }

    /// Whether the answer is 400: the request is malformed, not its credential wrong.
    pub(crate) fn is_bad_request(&self) -> bool {
        matches!(self, AuthError::Ambiguous)
    }

    /// Whether the answer is 503: the server could not check the credential.
    pub(crate) fn is_unavailable(&self) -> bool {
        matches!(self, AuthError::JwksUnavailable)
    }

    /// The RFC 6750 `error` code for `WWW-Authenticate`: `invalid_token` when a token was
    /// presented and rejected, `insufficient_scope` on 403, none when no token was presented.
    pub(crate) fn oauth_error(&self) -> Option<&'static str> {
        match self {
            AuthError::Invalid { .. } | AuthError::Expired => Some("invalid_token"),
            AuthError::InsufficientScope { .. } => Some("insufficient_scope"),
            // RFC 6750 §3.1: "uses more than one method for including an access token".
            AuthError::Ambiguous => Some("invalid_request"),
            AuthError::Missing | AuthError::JwksUnavailable => None,
        }
    }

    /// A short description safe to show the client (`error_description`, JSON-RPC message).
    pub fn description(&self) -> Cow<'static, str> {
        match self {
            AuthError::Missing => Cow::Borrowed("authentication required"),
            AuthError::Invalid { reason } => Cow::Borrowed(reason),
            AuthError::Expired => Cow::Borrowed("credential expired"),
            AuthError::InsufficientScope { required } => {
                Cow::Owned(format!("requires scope {}", required.join(" ")))
            }
            AuthError::JwksUnavailable => Cow::Borrowed("token signing keys unavailable"),
            AuthError::Ambiguous => {
                Cow::Borrowed("Authorization and X-API-Key carry different credentials")
            }
        }
    }
}

// === Authenticator ===

/// Authenticates requests. Long-lived and shared (`Arc<Authenticator>`) across catalog reloads;
/// per-tenant settings come from the [`ClientView`] of each request.
#[derive(Debug)]
pub(crate) struct Authenticator {
    /// HMAC-SHA256 keyed with the server pepper, cloned per API-key check (cloning skips the
    /// key schedule). `None` when no pepper is configured: every API key is then unknown.
    pepper: Option<apikey::Pepper>,
    /// Key sets by source, shared by every tenant and kept across reloads.
    jwks: JwksCache,
}

impl Authenticator {
    /// An authenticator with the given API-key pepper (see [`apikey::pepper_from_settings`]) and
    /// a JWKS cache with the default limits.
    pub(crate) fn new(pepper: Option<Vec<u8>>) -> Self {
        Self::with_jwks(pepper, JwksCache::new())
    }

    /// An authenticator with a JWKS cache built by the caller (tests shorten its intervals).
    pub(crate) fn with_jwks(pepper: Option<Vec<u8>>, jwks: JwksCache) -> Self {
        Self {
            pepper: pepper.as_deref().map(apikey::Pepper::new),
            jwks,
        }
    }

    /// Authenticates a request to an endpoint of `view`'s client. `resource_url` is the public
    /// URL of that endpoint (see [`prm::resource_url`]): the audience JWTs must carry when the
    /// tenant configures none.
    ///
    /// A presented credential is always checked, even on a tenant that serves anonymous callers;
    /// then the tenant's `required_scopes` apply.
    #[cfg(test)]
    pub(crate) async fn authenticate(
        &self,
        headers: &HeaderMap,
        view: &ClientView,
        resource_url: &str,
    ) -> Result<Caller, AuthError> {
        self.authenticate_with(headers, None, view, || resource_url.to_owned())
            .await
    }

    /// [`Authenticator::authenticate`] with the resource URL built only when a JWT needs it
    /// (API keys and anonymous callers never do, so the hot path formats nothing), and the
    /// connection's verified client certificate, if any: without a credential header it
    /// authenticates when the client application registers it ([`mtls`]).
    pub(crate) async fn authenticate_with(
        &self,
        headers: &HeaderMap,
        certificate: Option<&crate::http::tls::ClientCertificate>,
        view: &ClientView,
        resource_url: impl FnOnce() -> String,
    ) -> Result<Caller, AuthError> {
        let caller = match credential(headers)? {
            Some(Credential::ApiKey(token)) => self.api_key(token, view)?,
            Some(Credential::Jwt(token)) => {
                let Some(settings) = &view.auth().jwt else {
                    return Err(AuthError::invalid("bearer tokens are not accepted here"));
                };
                let resource_url = resource_url();
                jwt::validate(&self.jwks, token, settings, view, &resource_url).await?
            }
            None => match certificate
                .map(|cert| mtls::caller(cert, view))
                .transpose()?
            {
                Some(Some(caller)) => caller,
                _ if view.auth().anonymous => {
                    Caller::anonymous(Arc::clone(view.tenant_id()), Arc::clone(view.client_id()))
                }
                _ => return Err(AuthError::Missing),
            },
        };
        require(&caller, &view.auth().required_scopes)?;
        Ok(caller)
    }

    fn api_key(&self, token: &str, view: &ClientView) -> Result<Caller, AuthError> {
        let parsed = apikey::parse(token)?;
        let Some(pepper) = &self.pepper else {
            return Err(AuthError::invalid("unknown api key"));
        };
        let key = apikey::verify(pepper, &parsed, &view.app().api_keys, SystemTime::now())?;
        Ok(apikey::caller(key, view))
    }
}

/// Checks that `caller` holds every scope in `scopes` (per-tool or per-method scopes).
/// An anonymous caller holds none and is asked for a credential ([`AuthError::Missing`]);
/// anyone else gets [`AuthError::InsufficientScope`] naming what is missing.
pub(crate) fn require(caller: &Caller, scopes: &[String]) -> Result<(), AuthError> {
    if scopes.is_empty() {
        return Ok(());
    }
    let missing = caller.scopes.missing(scopes);
    if missing.is_empty() {
        Ok(())
    } else if caller.method == AuthMethod::Anonymous {
        Err(AuthError::Missing)
    } else {
        Err(AuthError::InsufficientScope { required: missing })
    }
}

// === Credential dispatch ===

/// A credential found on a request, borrowed from its headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Credential<'a> {
    ApiKey(&'a str),
    Jwt(&'a str),
}

/// Refuses a request whose `Authorization` and `X-API-Key` carry different credentials: both
/// present and not `Authorization: Bearer {the X-API-Key value}` → [`AuthError::Ambiguous`].
/// Allocates nothing.
pub(crate) fn check_unambiguous(headers: &HeaderMap) -> Result<(), AuthError> {
    let Some(authorization) = headers.get(AUTHORIZATION) else {
        return Ok(());
    };
    let mut api_keys = headers.get_all(X_API_KEY).iter().peekable();
    if api_keys.peek().is_none() {
        return Ok(());
    }
    let token = authorization
        .to_str()
        .ok()
        .and_then(|value| bearer_token(value).ok());
    let same = |key: &http::HeaderValue| {
        key.to_str()
            .ok()
            .is_some_and(|key| Some(key.trim()) == token)
    };
    if token.is_some() && api_keys.all(same) {
        Ok(())
    } else {
        Err(AuthError::Ambiguous)
    }
}

/// Finds the request's credential. `Authorization` wins; `X-API-Key` is read only without it,
/// or when it carries the same key ([`check_unambiguous`]).
fn credential(headers: &HeaderMap) -> Result<Option<Credential<'_>>, AuthError> {
    check_unambiguous(headers)?;
    let mut authorization = headers.get_all(AUTHORIZATION).iter();
    if let Some(value) = authorization.next() {
        // Two Authorization headers are ambiguous; refuse rather than pick one.
        if authorization.next().is_some() {
            return Err(AuthError::invalid("more than one Authorization header"));
        }
        let value = value
            .to_str()
            .map_err(|_| AuthError::invalid("malformed Authorization header"))?;
        let token = bearer_token(value)?;
        return classify(token).map(Some);
    }
    let mut api_key = headers.get_all(X_API_KEY).iter();
    let Some(value) = api_key.next() else {
        return Ok(None);
    };
    if api_key.next().is_some() {
        return Err(AuthError::invalid("more than one X-API-Key header"));
    }
    let token = value
        .to_str()
        .map_err(|_| AuthError::invalid("malformed X-API-Key header"))?
        .trim();
    if token.starts_with(apikey::PREFIX) {
        Ok(Some(Credential::ApiKey(token)))
    } else {
        Err(AuthError::invalid("malformed api key"))
    }
}

/// The token of `Bearer <token>`.
fn bearer_token(value: &str) -> Result<&str, AuthError> {
    // RFC 7235 §2.1: "It uses a case-insensitive token as a means to identify the
    // authentication scheme, followed by additional information".
    let value = value.trim();
    let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::invalid("unsupported authorization scheme"));
    }
    let token = rest.trim_start();
    if token.is_empty() {
        return Err(AuthError::invalid("empty bearer token"));
    }
    // RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
    if token.contains(|c: char| c.is_ascii_whitespace()) {
        return Err(AuthError::invalid("malformed bearer token"));
    }
    Ok(token)
}

/// API key by prefix, JWT by shape (three non-empty base64url segments), anything else refused.
fn classify(token: &str) -> Result<Credential<'_>, AuthError> {
    if token.starts_with(apikey::PREFIX) {
        return Ok(Credential::ApiKey(token));
    }
    let mut n_segments = 0;
    for segment in token.split('.') {
        n_segments += 1;
        let ok = !segment.is_empty()
            && segment
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !ok {
            return Err(AuthError::invalid("malformed bearer token"));
        }
    }
    if n_segments == 3 {
        Ok(Credential::Jwt(token))
    } else {
        Err(AuthError::invalid("malformed bearer token"))
    }
}
