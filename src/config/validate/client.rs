//! Client-level checks: client applications and their API keys, and `[tenant.auth]` (anonymous
//! access, the pepper API keys need, authorization servers, JWT validation settings).
//!
//! Owns the API key id format (the `rtk_{id}_{secret}` id `auth/apikey.rs` parses) and the JWT
//! algorithm allow list. Must not verify credentials: that is `crate::auth`.

use std::collections::HashSet;

use super::tenant::check_id;
use super::{is_http_url, Loc, Report};
use crate::config::{ServerSettings, Tenant};

/// Length of an API key id (`rtk_{id}_{secret}`).
pub(crate) const API_KEY_ID_LEN: usize = 12;

/// Whether `id` is an API key id: [`API_KEY_ID_LEN`] characters of lowercase RFC 4648 base32.
pub(crate) fn is_valid_key_id(id: &str) -> bool {
    id.len() == API_KEY_ID_LEN && id.bytes().all(|b| matches!(b, b'a'..=b'z' | b'2'..=b'7'))
}

/// Client ids (valid, unique) and their API keys (id format, unique in the tenant, 64 hex
/// digits of hash, a usable expiry). Returns the tenant's client ids and API key ids.
pub(super) fn check_clients<'a>(
    report: &mut Report,
    tloc: &Loc,
    tenant: &'a Tenant,
) -> (HashSet<&'a str>, HashSet<&'a str>) {
    let mut client_ids = HashSet::new();
    let mut key_ids = HashSet::new();
    for client in &tenant.clients {
        let cloc = tloc.with("client", &client.id);
        check_id(report, &cloc, "client", &client.id);
        if !client_ids.insert(client.id.as_str()) {
            report.push(&cloc, "duplicate client id");
        }
        for key in &client.api_keys {
            let kloc = cloc.with("api_key", &key.id);
            if !is_valid_key_id(&key.id) {
                report.push(
                    &kloc,
                    format!("api key id must be {API_KEY_ID_LEN} characters from [a-z2-7]"),
                );
            }
            if !key_ids.insert(key.id.as_str()) {
                report.push(&kloc, "duplicate api key id in this tenant");
            }
            if key.hash.len() != 64 || !key.hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                report.push(&kloc, "api key hash must be 64 hex digits (HMAC-SHA256)");
            }
            if key.expires_at.is_some_and(|at| at.date.is_none()) {
                report.push(&kloc, "expires_at must be a date or a date-time");
            }
        }
        for (i, rule) in client.certificates.iter().enumerate() {
            let rloc = cloc.with("certificate", i.to_string());
            match (&rule.subject, &rule.san) {
                (Some(_), None) => {}
                (None, Some(san)) => {
                    let scheme = san.split_once(':').map(|(scheme, _)| scheme);
                    if !matches!(scheme, Some("dns" | "uri" | "email" | "ip")) {
                        report.push(&rloc, "san must start with dns:, uri:, email: or ip:");
                    }
                }
                _ => report.push(&rloc, "set exactly one of subject and san"),
            }
        }
    }
    (client_ids, key_ids)
}

/// Signature algorithms a JWT may be verified with. `none` and the HMAC family are absent on
/// purpose: a JWKS holds public keys, and an HMAC "verified" with a public key is forgeable.
pub(crate) const JWT_ALGORITHMS: [&str; 9] = [
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

/// Some credential can reach the tenant, API keys have a pepper, and the authorization servers
/// and JWT settings are usable.
pub(super) fn check_auth(
    report: &mut Report,
    tloc: &Loc,
    server: &ServerSettings,
    tenant: &Tenant,
    has_keys: bool,
) {
    let auth = &tenant.auth;
    let aloc = tloc.with("auth", "");
    let has_certificates = tenant.clients.iter().any(|c| !c.certificates.is_empty());
    if !auth.anonymous && !has_keys && auth.jwt.is_none() && !has_certificates {
        report.push(
            tloc,
            "no credential can reach this tenant: give a client an api_key or a certificate, \
             configure auth.jwt, or set auth.anonymous = true (development only)",
        );
    }
    let client_auth = server.tls.as_ref().map(|tls| tls.client_auth);
    if has_certificates && matches!(client_auth, None | Some(crate::config::ClientAuth::None)) {
        report.push(
            tloc,
            "client certificates need [server.tls] with client_auth = \"optional\" or \"required\"",
        );
    }
    if has_keys && server.api_key_pepper.is_none() {
        report.push(
            tloc,
            "api keys need a pepper: set server.api_key_pepper or SLUICE_API_KEY_PEPPER",
        );
    }
    for issuer in &auth.authorization_servers {
        if !is_http_url(issuer) {
            report.push(
                &aloc,
                format!("authorization server '{issuer}' is not an http(s) URL"),
            );
        }
    }
    if let Some(jwt) = &auth.jwt {
        let jloc = tloc.with("auth", "jwt");
        if jwt.issuer.is_empty() {
            report.push(&jloc, "issuer must not be empty");
        }
        match (&jwt.jwks_file, &jwt.jwks_url) {
            (None, None) => report.push(&jloc, "set jwks_file or jwks_url"),
            (Some(_), Some(_)) => report.push(&jloc, "set only one of jwks_file and jwks_url"),
            (None, Some(url)) if !is_http_url(url) => {
                report.push(&jloc, format!("jwks_url '{url}' is not an http(s) URL"));
            }
            _ => {}
        }
        if jwt.algorithms.is_empty() {
            report.push(&jloc, "algorithms must not be empty");
        }
        for alg in &jwt.algorithms {
            if !JWT_ALGORITHMS.contains(&alg.as_str()) {
                report.push(
                    &jloc,
                    format!(
                        "algorithm '{alg}' is not accepted (allowed: {}; never none or HS*)",
                        JWT_ALGORITHMS.join(", ")
                    ),
                );
            }
        }
    }
}
