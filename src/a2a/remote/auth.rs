//! The runtime's own credential to one remote agent: what `[tenant.a2a_agent.upstream_auth]`
//! names, turned into the one header every upstream request carries.
//!
//! Owns [`UpstreamCredential`]: none, a static bearer token, a static API key in a named header,
//! or an OAuth 2.0 client-credentials grant (RFC 6749 §4.4) whose access token is fetched from
//! `token_url` (client authentication by HTTP Basic, §2.3.1, which every authorization server
//! must support), cached until 30 s before `expires_in` runs out, fetched by one caller at a
//! time while the others wait for it, and dropped when the upstream answers 401 so that the
//! next request fetches a new one. Secrets are read once, when the agent's configuration is
//! loaded (`config/env.rs`); they are never logged: `Debug` prints the scheme only.
//! Must not know A2A, callers or their credentials (those never leave the edge).

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, USER_AGENT};
use http::{HeaderName, HeaderValue, Method, Request, Uri};
use http_body_util::Full;
use parking_lot::Mutex;
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde::Deserialize;

use super::upstream::{exchange, UpstreamError, AGENT};
use crate::config::{resolve_secret, SecretRef, UpstreamAuth};
use crate::invoke::pool::Pool;

/// Largest token endpoint answer read.
const MAX_TOKEN_RESPONSE: usize = 64 * 1024;
/// A cached token is renewed this long before the endpoint said it expires.
const EXPIRY_MARGIN: Duration = Duration::from_secs(30);
/// How long a token without `expires_in` is used.
const DEFAULT_LIFETIME: Duration = Duration::from_secs(300);

/// The credential one upstream agent receives.
pub(crate) enum UpstreamCredential {
    /// Nothing is sent.
    None,
    /// A fixed header: `Authorization: Bearer …` or an API key header.
    Static(HeaderName, HeaderValue),
    /// A client-credentials grant and its cached token.
    OAuth(Box<ClientCredentials>),
}

impl std::fmt::Debug for UpstreamCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UpstreamCredential::None => "None",
            UpstreamCredential::Static(..) => "Static(<redacted>)",
            UpstreamCredential::OAuth(_) => "OAuth(<redacted>)",
        })
    }
}

/// An OAuth 2.0 client-credentials grant.
pub(crate) struct ClientCredentials {
    token_url: Uri,
    /// `Basic base64(urlencode(id):urlencode(secret))`.
    basic: HeaderValue,
    /// The `application/x-www-form-urlencoded` request body.
    form: Bytes,
    /// The current token as an `Authorization` value, and when to stop using it.
    cached: Mutex<Option<(HeaderValue, Instant)>>,
    /// Held by the caller fetching a token, so that concurrent callers wait for its answer
    /// instead of asking too.
    fetching: tokio::sync::Mutex<()>,
}

/// The token endpoint's success answer (RFC 6749 §5.1).
#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    token_type: String,
    expires_in: Option<u64>,
}

impl UpstreamCredential {
    /// The credential `auth` describes, its secret read now.
    pub(crate) fn new(auth: &UpstreamAuth) -> Result<UpstreamCredential, UpstreamError> {
        let secret = |reference: SecretRef| {
            resolve_secret(&reference)
                .map_err(|err| UpstreamError::Config(format!("upstream_auth secret: {err}")))
        };
        let value = |text: String| {
            HeaderValue::try_from(text)
                .map(|mut value| {
                    value.set_sensitive(true);
                    value
                })
                .map_err(|_| UpstreamError::Config("the secret is not a valid header value".into()))
        };
        match auth {
            UpstreamAuth::None => Ok(UpstreamCredential::None),
            UpstreamAuth::Bearer { .. } => {
                let token = secret(auth.secret().unwrap_or_default())?;
                Ok(UpstreamCredential::Static(
                    AUTHORIZATION,
                    value(format!("Bearer {token}"))?,
                ))
            }
            UpstreamAuth::ApiKey { header, .. } => {
                let name = HeaderName::try_from(header.as_str())
                    .map_err(|_| UpstreamError::Config(format!("invalid header name {header}")))?;
                Ok(UpstreamCredential::Static(
                    name,
                    value(secret(auth.secret().unwrap_or_default())?)?,
                ))
            }
            UpstreamAuth::Oauth2ClientCredentials {
                token_url,
                client_id,
                scopes,
                audience,
                ..
            } => {
                let client_secret = secret(auth.secret().unwrap_or_default())?;
                let token_url = token_url
                    .parse::<Uri>()
                    .map_err(|_| UpstreamError::Config(format!("invalid token_url {token_url}")))?;
                let encode = |text: &str| utf8_percent_encode(text, NON_ALPHANUMERIC).to_string();
                let pair = format!("{}:{}", encode(client_id), encode(&client_secret));
                let basic = value(format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(pair)
                ))?;
                let mut form = String::from("grant_type=client_credentials");
                if !scopes.is_empty() {
                    form.push_str("&scope=");
                    form.push_str(&encode(&scopes.join(" ")));
                }
                if let Some(audience) = audience {
                    form.push_str("&audience=");
                    form.push_str(&encode(audience));
                }
                Ok(UpstreamCredential::OAuth(Box::new(ClientCredentials {
                    token_url,
                    basic,
                    form: Bytes::from(form),
                    cached: Mutex::new(None),
                    fetching: tokio::sync::Mutex::new(()),
                })))
            }
        }
    }

    /// The header to send now: for OAuth the cached token, or a new one fetched with `pool`
    /// (within `limit`).
    pub(crate) async fn header(
        &self,
        pool: &Arc<Pool>,
        limit: Duration,
    ) -> Result<Option<(HeaderName, HeaderValue)>, UpstreamError> {
        match self {
            UpstreamCredential::None => Ok(None),
            UpstreamCredential::Static(name, value) => Ok(Some((name.clone(), value.clone()))),
            UpstreamCredential::OAuth(grant) => {
                Ok(Some((AUTHORIZATION, grant.token(pool, limit).await?)))
            }
        }
    }

    /// Whether a 401 to a request that carried `used` may be cured by asking for a new token.
    /// The cached token is dropped only when it is the one refused: a caller whose 401 arrives
    /// after another caller renewed the token keeps the new one.
    pub(crate) fn rejected(&self, used: Option<&HeaderValue>) -> bool {
        match self {
            UpstreamCredential::OAuth(grant) => {
                let mut cached = grant.cached.lock();
                if cached.as_ref().map(|(value, _)| Some(value)) == Some(used) {
                    *cached = None;
                }
                true
            }
            _ => false,
        }
    }
}

impl ClientCredentials {
    fn fresh(&self) -> Option<HeaderValue> {
        let cached = self.cached.lock();
        match &*cached {
            Some((value, until)) if Instant::now() < *until => Some(value.clone()),
            _ => None,
        }
    }

    async fn token(&self, pool: &Arc<Pool>, limit: Duration) -> Result<HeaderValue, UpstreamError> {
        if let Some(value) = self.fresh() {
            return Ok(value);
        }
        let _turn = tokio::time::timeout(limit, self.fetching.lock())
            .await
            .map_err(|_| UpstreamError::Timeout)?;
        // Whoever held the turn may have fetched one meanwhile.
        if let Some(value) = self.fresh() {
            return Ok(value);
        }
        let request = Request::builder()
            .method(Method::POST)
            .uri(self.token_url.clone())
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(ACCEPT, "application/json")
            .header(USER_AGENT, AGENT)
            .header(AUTHORIZATION, self.basic.clone())
            .body(Full::new(self.form.clone()))
            .map_err(|_| UpstreamError::Config("invalid token request".into()))?;
        let (status, body) = exchange(pool, request, MAX_TOKEN_RESPONSE, limit).await?;
        if status == http::StatusCode::BAD_REQUEST || status == http::StatusCode::UNAUTHORIZED {
            // RFC 6749 §5.2: invalid_client, invalid_grant, unauthorized_client…
            return Err(UpstreamError::AuthFailed(status.as_u16()));
        }
        if !status.is_success() {
            return Err(UpstreamError::Unavailable(format!(
                "token endpoint answered HTTP {}",
                status.as_u16()
            )));
        }
        let answer: TokenAnswer = serde_json::from_slice(&body).map_err(|_| {
            UpstreamError::Unavailable("the token endpoint answer is not a token".into())
        })?;
        if !answer.token_type.eq_ignore_ascii_case("bearer") {
            return Err(UpstreamError::Unavailable(format!(
                "unsupported token type {}",
                crate::jsonrpc::echo(&answer.token_type)
            )));
        }
        let mut value =
            HeaderValue::try_from(format!("Bearer {}", answer.access_token)).map_err(|_| {
                UpstreamError::Unavailable("the access token is not header-safe".into())
            })?;
        value.set_sensitive(true);
        let lifetime = answer
            .expires_in
            .map_or(DEFAULT_LIFETIME, Duration::from_secs)
            .saturating_sub(EXPIRY_MARGIN)
            .max(Duration::from_secs(1));
        *self.cached.lock() = Some((value.clone(), Instant::now() + lifetime));
        Ok(value)
    }
}
