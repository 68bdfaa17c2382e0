//! Client certificates as credentials: a verified certificate (the TLS layer verified it
//! against `[server.tls] client_ca`) whose subject common name or a subject alternative name
//! one of the client application's `[[tenant.client.certificate]]` rules names authenticates as
//! the caller `mtls:{principal}`.
//!
//! Owns only the matching. Must not verify certificates (rustls did, in `http/tls.rs`) or read
//! headers.

use std::sync::Arc;

use super::{AuthError, AuthMethod, Caller, Scopes};
use crate::catalog::ClientView;
use crate::config::ClientCertificateRule;
use crate::http::tls::ClientCertificate;

/// The caller `certificate` authenticates as on `view`'s client application: `Ok(None)` when
/// the application registers no certificate (the certificate is then no credential here), an
/// error when it registers some and none matches.
pub(crate) fn caller(
    certificate: &ClientCertificate,
    view: &ClientView,
) -> Result<Option<Caller>, AuthError> {
    let rules = &view.app().certificates;
    if rules.is_empty() {
        return Ok(None);
    }
    let Some((rule, matched)) = rules
        .iter()
        .find_map(|rule| matches(rule, certificate).map(|name| (rule, name)))
    else {
        return Err(AuthError::invalid(
            "the client certificate is not registered for this client application",
        ));
    };
    let name = rule.principal.as_deref().unwrap_or(matched);
    Ok(Some(Caller {
        tenant: Arc::clone(view.tenant_id()),
        client: Arc::clone(view.client_id()),
        caller_id: Arc::from(format!("mtls:{name}")),
        method: AuthMethod::Mtls,
        scopes: match &rule.scopes {
            None => Scopes::All,
            Some(list) => Scopes::from_names(list.iter().cloned()),
        },
    }))
}

/// The certificate name `rule` matches, if any.
fn matches<'c>(
    rule: &ClientCertificateRule,
    certificate: &'c ClientCertificate,
) -> Option<&'c str> {
    if let Some(subject) = &rule.subject {
        return certificate
            .common_name
            .as_deref()
            .filter(|cn| *cn == subject.as_str());
    }
    let san = rule.san.as_deref()?;
    certificate
        .sans
        .iter()
        .map(AsRef::as_ref)
        .find(|name: &&str| name.eq_ignore_ascii_case(san) && same_case_where_it_matters(name, san))
}

/// SAN schemes compare case-insensitively; DNS names and e-mail domains too, but URIs keep their
/// case after the scheme (a SPIFFE id is case-sensitive).
fn same_case_where_it_matters(name: &str, rule: &str) -> bool {
    match name.split_once(':') {
        Some(("uri", rest)) => rule.split_once(':').is_some_and(|(_, want)| want == rest),
        _ => true,
    }
}
