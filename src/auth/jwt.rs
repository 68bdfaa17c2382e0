//! JWT bearer validation: signature by a key of the tenant's JWKS, algorithm allow list, exact
//! issuer, audience bound to the endpoint, `exp`/`nbf` with leeway, optional client binding, and
//! the scopes the token grants.
//!
//! Owns the validation rules (MCP 2025-11-25, Authorization § Token Handling and § Access Token
//! Privilege Restriction: audience bound to this server; RFC 8725 for the algorithm allow list).
//! Must not fetch keys itself (that is [`super::jwks`]) nor trust anything in the token header
//! beyond `alg` and `kid`.

use std::str::FromStr as _;
use std::sync::Arc;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};

use super::jwks::{JwksCache, JwksSource};
use super::{AuthError, AuthMethod, Caller, Scopes};
use crate::catalog::ClientView;
use crate::config::JwtSettings;

/// Largest leeway honoured, in seconds, whatever the configuration says: clock skew is seconds,
/// not days, and a huge leeway would quietly disable expiry.
pub(crate) const MAX_LEEWAY_SECS: u64 = 600;

/// Validates `token` for `view`'s endpoint at `resource_url` and returns its caller.
pub(crate) async fn validate(
    jwks: &JwksCache,
    token: &str,
    settings: &JwtSettings,
    view: &ClientView,
    resource_url: &str,
) -> Result<Caller, AuthError> {
    // An `alg` outside the `Algorithm` enum (`none` among them) fails here.
    let header =
        jsonwebtoken::decode_header(token).map_err(|_| AuthError::invalid("malformed token"))?;
    if !is_allowed(header.alg, &settings.algorithms) {
        return Err(AuthError::invalid("token algorithm not allowed"));
    }
    let source = JwksSource::from_settings(settings).ok_or(AuthError::JwksUnavailable)?;
    let key = jwks.key(&source, header.kid.as_deref(), header.alg).await?;

    let mut validation = Validation::new(header.alg);
    validation.set_issuer(&[settings.issuer.as_str()]);
    if settings.audiences.is_empty() {
        validation.set_audience(&[resource_url]);
    } else {
        validation.set_audience(&settings.audiences);
    }
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    validation.validate_exp = true;
    validation.validate_nbf = true;
    validation.leeway = settings.leeway_secs.min(MAX_LEEWAY_SECS);

    let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
        .map_err(|err| map_error(err.kind()))?;
    let claims = data.claims;

    if let Some(claim) = &settings.client_claim {
        // Issuers that cannot put the endpoint URL in `aud` bind the token to a client this way.
        if claims.get(claim).and_then(Value::as_str) != Some(view.client()) {
            return Err(AuthError::invalid("token not issued for this client"));
        }
    }
    let caller_id = caller_id(&settings.issuer, &claims)?;
    Ok(Caller {
        tenant: Arc::clone(view.tenant_id()),
        client: Arc::clone(view.client_id()),
        caller_id: Arc::from(caller_id),
        method: AuthMethod::Jwt,
        scopes: scopes(&claims),
    })
}

/// Whether `alg` is on the tenant's list. The symmetric family never is, whatever the list says:
/// a JWKS holds public keys, and an HMAC keyed with public bytes is forgeable.
fn is_allowed(alg: Algorithm, allowed: &[String]) -> bool {
    !matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512)
        && allowed
            .iter()
            .any(|name| Algorithm::from_str(name).is_ok_and(|a| a == alg))
}

fn map_error(kind: &ErrorKind) -> AuthError {
    let reason = match kind {
        ErrorKind::ExpiredSignature => return AuthError::Expired,
        ErrorKind::ImmatureSignature => "token not yet valid",
        ErrorKind::InvalidIssuer => "wrong issuer",
        ErrorKind::InvalidAudience => "wrong audience",
        ErrorKind::MissingRequiredClaim(_) => "token lacks a required claim",
        ErrorKind::InvalidClaimFormat(_) => "malformed claim",
        ErrorKind::InvalidSignature => "bad signature",
        ErrorKind::InvalidAlgorithm => "token algorithm not allowed",
        _ => "malformed token",
    };
    AuthError::invalid(reason)
}

/// `jwt:{iss}|{sub}`, or `jwt:{iss}|client:{client_id or azp}` for tokens without a subject
/// (client-credentials grants).
fn caller_id(issuer: &str, claims: &Map<String, Value>) -> Result<String, AuthError> {
    let text = |name: &str| {
        claims
            .get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    if let Some(sub) = text("sub") {
        return Ok(format!("jwt:{issuer}|{sub}"));
    }
    match text("client_id").or_else(|| text("azp")) {
        Some(client) => Ok(format!("jwt:{issuer}|client:{client}")),
        None => Err(AuthError::invalid("token has no subject")),
    }
}

/// Scopes from `scope` (RFC 9068 / RFC 8693: a space-delimited string) or `scp` (an array, or a
/// string, as some issuers send it). No claim grants no scope.
pub(crate) fn scopes(claims: &Map<String, Value>) -> Scopes {
    let words = |s: &str| {
        s.split_ascii_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let names = match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(s)), _) => words(s),
        (_, Some(Value::String(s))) => words(s),
        (_, Some(Value::Array(items))) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    Scopes::from_names(names)
}
