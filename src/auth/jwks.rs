//! The JWKS cache: public signing keys by source (a file or an http(s) URL), fetched on first use
//! and refetched on an unknown `kid`, at most once per interval and one fetch at a time.
//!
//! Owns key-set fetching, parsing and key selection. Must not read anything from a token except
//! `kid` and `alg` (never `jku`, `x5u` or an embedded `jwk`: the only keys trusted are those of
//! the configured source), and must never hold a symmetric (`oct`) key: the set is public, so an
//! HMAC "verified" with it would be forgeable.
//!
//! Concurrency: the cache is shared by every request of every tenant (inside the long-lived
//! `Authenticator`). Each source has a read-mostly slot holding its last good set (swapped whole
//! after a successful fetch; a failed fetch leaves it as it was) and an async mutex that a fetch
//! holds while in flight, so concurrent requests that all miss wait for that one fetch and then
//! use its result instead of fetching again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, USER_AGENT};
use http::Request;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyOperations, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use parking_lot::{Mutex, RwLock};
use serde::Deserialize;
use tokio::time::Instant;

use super::AuthError;
use crate::config::JwtSettings;

/// Shortest time between two fetches of one source (for an unknown `kid` or a stale set). A
/// lookup that would need another fetch sooner uses the set it has.
pub(crate) const DEFAULT_REFETCH_INTERVAL: Duration = Duration::from_secs(60);

/// Age after which a set is refetched even without an unknown `kid`, so a key the issuer removed
/// (e.g. after a compromise) stops being trusted. A failed refetch keeps the old set.
pub(crate) const DEFAULT_MAX_AGE: Duration = Duration::from_secs(15 * 60);

/// How long one URL fetch may take (connect, headers and body) before it fails.
pub(crate) const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// Largest JWKS document read, in bytes; a larger one fails the fetch (the old set is kept).
pub(crate) const MAX_JWKS_BYTES: usize = 1024 * 1024;

/// Algorithms an RSA key verifies.
const RSA_ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
];

/// Where a tenant's key set comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum JwksSource {
    /// A JWKS file on disk.
    File(PathBuf),
    /// An http(s) URL.
    Url(String),
}

impl JwksSource {
    /// The source the settings name (`jwks_url` wins if both are set; validation refuses that).
    pub(crate) fn from_settings(settings: &JwtSettings) -> Option<Self> {
        match (&settings.jwks_url, &settings.jwks_file) {
            (Some(url), _) => Some(JwksSource::Url(url.clone())),
            (None, Some(path)) => Some(JwksSource::File(PathBuf::from(path))),
            (None, None) => None,
        }
    }
}

/// Why a fetch failed (logged; the request sees the old set or [`AuthError::JwksUnavailable`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    /// The file could not be read.
    #[error("reading the JWKS file failed: {0}")]
    Io(#[from] std::io::Error),
    /// The URL is not a valid URI.
    #[error("the JWKS URL is not a valid URI")]
    BadUrl,
    /// Connecting or reading the response failed.
    #[error("fetching the JWKS failed: {0}")]
    Http(String),
    /// The server answered something other than 2xx (redirects are not followed).
    #[error("the JWKS server answered {0}")]
    Status(http::StatusCode),
    /// The fetch took longer than [`FETCH_TIMEOUT`].
    #[error("fetching the JWKS timed out")]
    Timeout,
    /// The document exceeds [`MAX_JWKS_BYTES`].
    #[error("the JWKS document exceeds {MAX_JWKS_BYTES} bytes")]
    TooLarge,
    /// The document is not a JWKS.
    #[error("the JWKS document is not valid: {0}")]
    Parse(#[from] serde_json::Error),
}

/// One usable verification key.
#[derive(Debug)]
struct StoredKey {
    kid: Option<String>,
    /// The algorithms this key may verify: its declared `alg`, or every algorithm of its type.
    algorithms: Vec<Algorithm>,
    key: Arc<DecodingKey>,
}

/// A parsed key set, as fetched at one time.
#[derive(Debug)]
pub(crate) struct KeySet {
    keys: Vec<StoredKey>,
    fetched_at: Instant,
}

/// The outcome of looking for a key in a set.
enum Selection {
    Found(Arc<DecodingKey>),
    /// No key fits; a refetch may find one.
    NotFound,
    /// The set has keys for this token but none may verify it; refetching will not help.
    Refused(&'static str),
}

impl KeySet {
    /// Parses a JWKS document, keeping the keys that may verify signatures: `oct` keys,
    /// encryption keys, unknown key types and curves, and keys that do not parse are skipped
    /// (one odd key must not take the whole set down).
    pub(crate) fn parse(document: &[u8], fetched_at: Instant) -> Result<Self, FetchError> {
        #[derive(Deserialize)]
        struct RawSet {
            keys: Vec<serde_json::Value>,
        }
        let raw: RawSet = serde_json::from_slice(document)?;
        let keys = raw
            .keys
            .into_iter()
            .filter_map(|value| serde_json::from_value::<Jwk>(value).ok())
            .filter_map(|jwk| usable_key(&jwk))
            .collect();
        Ok(Self { keys, fetched_at })
    }

    /// How many usable keys the set holds.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    fn select(&self, kid: Option<&str>, alg: Algorithm) -> Selection {
        match kid {
            Some(kid) => {
                let mut same_kid = self.keys.iter().filter(|k| k.kid.as_deref() == Some(kid));
                let Some(first) = same_kid.next() else {
                    return Selection::NotFound;
                };
                std::iter::once(first)
                    .chain(same_kid)
                    .find(|k| k.algorithms.contains(&alg))
                    .map_or(
                        Selection::Refused("key does not match the token algorithm"),
                        |k| Selection::Found(k.key.clone()),
                    )
            }
            // No `kid`: acceptable only when exactly one key could have signed the token.
            None => {
                let mut fitting = self.keys.iter().filter(|k| k.algorithms.contains(&alg));
                match (fitting.next(), fitting.next()) {
                    (Some(key), None) => Selection::Found(key.key.clone()),
                    (None, _) => Selection::NotFound,
                    (Some(_), Some(_)) => Selection::Refused("token has no key id"),
                }
            }
        }
    }
}

fn usable_key(jwk: &Jwk) -> Option<StoredKey> {
    if matches!(
        jwk.common.public_key_use,
        Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
    ) {
        return None;
    }
    if let Some(ops) = &jwk.common.key_operations {
        if !ops.contains(&KeyOperations::Verify) {
            return None;
        }
    }
    let by_type: &[Algorithm] = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => RSA_ALGORITHMS,
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => &[Algorithm::ES256],
            EllipticCurve::P384 => &[Algorithm::ES384],
            _ => return None,
        },
        AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => {
            &[Algorithm::EdDSA]
        }
        // Symmetric keys never verify anything here (see the module doc).
        AlgorithmParameters::OctetKey(_) => return None,
        _ => return None,
    };
    let algorithms = match jwk.common.key_algorithm {
        Some(declared) => {
            let alg = Algorithm::try_from(declared).ok()?;
            if !by_type.contains(&alg) {
                return None;
            }
            vec![alg]
        }
        None => by_type.to_vec(),
    };
    let key = DecodingKey::from_jwk(jwk).ok()?;
    Some(StoredKey {
        kid: jwk.common.key_id.clone(),
        algorithms,
        key: Arc::new(key),
    })
}

// === JwksCache ===

type HttpClient = Client<HttpsConnector<HttpConnector>, Empty<Bytes>>;

/// Key sets by source, shared across tenants and catalog reloads.
#[derive(Debug)]
pub(crate) struct JwksCache {
    /// One state per source, created on first use and kept for the life of the cache (a source
    /// dropped from the configuration costs one small entry).
    sources: Mutex<HashMap<JwksSource, Arc<SourceState>>>,
    refetch_interval: Duration,
    max_age: Duration,
    /// Built on the first URL fetch, so file-only deployments never load TLS roots.
    client: OnceLock<HttpClient>,
}

#[derive(Debug, Default)]
struct SourceState {
    /// The last good set; `None` until a fetch succeeds.
    current: RwLock<Option<Arc<KeySet>>>,
    /// Held for the whole of a fetch (one in flight per source). Guards when the last fetch
    /// was attempted, successful or not.
    fetch: tokio::sync::Mutex<Option<Instant>>,
}

impl SourceState {
    fn current(&self) -> Option<Arc<KeySet>> {
        self.current.read().clone()
    }

    fn store(&self, set: KeySet) {
        let set = Some(Arc::new(set));
        *self.current.write() = set;
    }
}

impl Default for JwksCache {
    fn default() -> Self {
        Self::new()
    }
}

impl JwksCache {
    /// A cache with [`DEFAULT_REFETCH_INTERVAL`] and [`DEFAULT_MAX_AGE`].
    pub(crate) fn new() -> Self {
        Self::with_intervals(DEFAULT_REFETCH_INTERVAL, DEFAULT_MAX_AGE)
    }

    /// A cache with the given shortest time between fetches of a source and largest age of a set.
    pub(crate) fn with_intervals(refetch_interval: Duration, max_age: Duration) -> Self {
        Self {
            sources: Mutex::new(HashMap::new()),
            refetch_interval,
            max_age,
            client: OnceLock::new(),
        }
    }

    fn state(&self, source: &JwksSource) -> Arc<SourceState> {
        let mut sources = self.sources.lock();
        if let Some(state) = sources.get(source) {
            return state.clone();
        }
        let state = Arc::new(SourceState::default());
        sources.insert(source.clone(), state.clone());
        state
    }

    /// The key that verifies a token signed with `alg` and carrying `kid`.
    ///
    /// Fetches the set on first use; on an unknown `kid` (or a set older than the maximum age)
    /// refetches, at most once per refetch interval. Errors: [`AuthError::JwksUnavailable`] when
    /// no set was ever loaded, [`AuthError::Invalid`] when the set has no fitting key.
    pub(crate) async fn key(
        &self,
        source: &JwksSource,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Arc<DecodingKey>, AuthError> {
        let state = self.state(source);
        let seen = state.current();
        if let Some(set) = &seen {
            match set.select(kid, alg) {
                Selection::Found(key) => {
                    if set.fetched_at.elapsed() >= self.max_age {
                        // Refresh a stale set only when nobody else is; meanwhile its keys serve.
                        if let Ok(guard) = state.fetch.try_lock() {
                            self.refetch(&state, guard, source, seen.as_ref()).await;
                            return select_final(state.current(), kid, alg);
                        }
                    }
                    return Ok(key);
                }
                Selection::Refused(reason) => return Err(AuthError::invalid(reason)),
                Selection::NotFound => {}
            }
        }
        let guard = state.fetch.lock().await;
        self.refetch(&state, guard, source, seen.as_ref()).await;
        select_final(state.current(), kid, alg)
    }

    /// Fetches `source` unless another task replaced the set since `seen` was read (then its
    /// result serves) or the last attempt is more recent than the refetch interval.
    async fn refetch(
        &self,
        state: &SourceState,
        mut last_attempt: tokio::sync::MutexGuard<'_, Option<Instant>>,
        source: &JwksSource,
        seen: Option<&Arc<KeySet>>,
    ) {
        let now_current = state.current();
        let replaced = match (&now_current, seen) {
            (Some(now), Some(seen)) => !Arc::ptr_eq(now, seen),
            (Some(_), None) => true,
            (None, _) => false,
        };
        if replaced {
            return;
        }
        if last_attempt.is_some_and(|at| at.elapsed() < self.refetch_interval) {
            return;
        }
        *last_attempt = Some(Instant::now());
        match self.fetch(source).await {
            Ok(set) => {
                tracing::debug!(source = ?source, n_keys = set.len(), "JWKS loaded");
                state.store(set);
            }
            Err(err) => {
                tracing::warn!(source = ?source, error = %err, "JWKS fetch failed; keeping the last good set");
            }
        }
    }

    /// Reads and parses the set of `source` (no caching).
    pub(crate) async fn fetch(&self, source: &JwksSource) -> Result<KeySet, FetchError> {
        let document = match source {
            JwksSource::File(path) => read_file(path.clone()).await?,
            JwksSource::Url(url) => tokio::time::timeout(FETCH_TIMEOUT, self.fetch_url(url))
                .await
                .map_err(|_| FetchError::Timeout)??,
        };
        KeySet::parse(&document, Instant::now())
    }

    async fn fetch_url(&self, url: &str) -> Result<Bytes, FetchError> {
        let uri: http::Uri = url.parse().map_err(|_| FetchError::BadUrl)?;
        let request = Request::get(uri)
            .header(ACCEPT, "application/json")
            .header(USER_AGENT, concat!("sluice/", env!("CARGO_PKG_VERSION")))
            .body(Empty::new())
            .map_err(|_| FetchError::BadUrl)?;
        let response = self
            .client()
            .request(request)
            .await
            .map_err(|err| FetchError::Http(err.to_string()))?;
        if !response.status().is_success() {
            return Err(FetchError::Status(response.status()));
        }
        let body = Limited::new(response.into_body(), MAX_JWKS_BYTES)
            .collect()
            .await
            .map_err(|err| {
                if err.is::<http_body_util::LengthLimitError>() {
                    FetchError::TooLarge
                } else {
                    FetchError::Http(err.to_string())
                }
            })?;
        Ok(body.to_bytes())
    }

    fn client(&self) -> &HttpClient {
        self.client.get_or_init(|| {
            let mut http = HttpConnector::new();
            // The TLS wrapper needs `https` URIs to reach it.
            http.enforce_http(false);
            http.set_connect_timeout(Some(FETCH_TIMEOUT));
            let connector = HttpsConnectorBuilder::new()
                .with_webpki_roots()
                .https_or_http()
                .enable_http1()
                .wrap_connector(http);
            Client::builder(TokioExecutor::new()).build(connector)
        })
    }
}

fn select_final(
    set: Option<Arc<KeySet>>,
    kid: Option<&str>,
    alg: Algorithm,
) -> Result<Arc<DecodingKey>, AuthError> {
    let Some(set) = set else {
        return Err(AuthError::JwksUnavailable);
    };
    match set.select(kid, alg) {
        Selection::Found(key) => Ok(key),
        Selection::NotFound if kid.is_some() => Err(AuthError::invalid("unknown key id")),
        Selection::NotFound => Err(AuthError::invalid("no key for the token algorithm")),
        Selection::Refused(reason) => Err(AuthError::invalid(reason)),
    }
}

async fn read_file(path: PathBuf) -> Result<Bytes, FetchError> {
    let read = tokio::task::spawn_blocking(move || read_bounded(&path))
        .await
        .map_err(|err| FetchError::Io(std::io::Error::other(err)))?;
    read
}

fn read_bounded(path: &Path) -> Result<Bytes, FetchError> {
    use std::io::Read as _;
    let file = std::fs::File::open(path)?;
    let mut buf = Vec::new();
    file.take(MAX_JWKS_BYTES as u64 + 1).read_to_end(&mut buf)?;
    if buf.len() > MAX_JWKS_BYTES {
        return Err(FetchError::TooLarge);
    }
    Ok(Bytes::from(buf))
}
