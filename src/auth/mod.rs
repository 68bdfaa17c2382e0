//! TEMPORARY STUB of the auth module's interface (replaced by the `auth` branch).
#![allow(missing_docs, unused_variables)]
use std::sync::Arc;

use crate::catalog::ClientView;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    Anonymous,
    ApiKey,
    Jwt,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scopes {
    All,
    Set(Vec<String>),
}

impl Scopes {
    pub fn has(&self, scope: &str) -> bool {
        match self {
            Scopes::All => true,
            Scopes::Set(set) => set.iter().any(|s| s == scope),
        }
    }
    pub fn missing(&self, required: &[String]) -> Vec<String> {
        required.iter().filter(|s| !self.has(s)).cloned().collect()
    }
}

#[derive(Debug, Clone)]
pub struct Caller {
    pub tenant: Arc<str>,
    pub client: Arc<str>,
    pub caller_id: Arc<str>,
    pub method: AuthMethod,
    pub scopes: Scopes,
}

impl Caller {
    pub fn anonymous(tenant: &str, client: &str) -> Self {
        Self {
            tenant: tenant.into(),
            client: client.into(),
            caller_id: "anonymous".into(),
            method: AuthMethod::Anonymous,
            scopes: Scopes::All,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("missing credential")]
    Missing,
    #[error("invalid credential: {reason}")]
    Invalid { reason: &'static str },
    #[error("expired credential")]
    Expired,
    #[error("insufficient scope")]
    InsufficientScope { required: Vec<String> },
    #[error("jwks unavailable")]
    JwksUnavailable,
}

impl AuthError {
    pub fn is_forbidden(&self) -> bool {
        matches!(self, AuthError::InsufficientScope { .. })
    }
}

#[derive(Debug, Default)]
pub struct Authenticator {}

impl Authenticator {
    pub fn new(pepper: Option<Vec<u8>>) -> Self {
        Self {}
    }
    pub async fn authenticate(
        &self,
        headers: &http::HeaderMap,
        view: &ClientView,
        resource_url: &str,
    ) -> Result<Caller, AuthError> {
        if headers.contains_key(http::header::AUTHORIZATION) {
            return Err(AuthError::Invalid { reason: "stub" });
        }
        if view.auth().anonymous {
            Ok(Caller::anonymous(view.tenant(), view.client()))
        } else {
            Err(AuthError::Missing)
        }
    }
}

pub fn require(caller: &Caller, scopes: &[String]) -> Result<(), AuthError> {
    let missing = caller.scopes.missing(scopes);
    if missing.is_empty() {
        Ok(())
    } else {
        Err(AuthError::InsufficientScope {
            required: scopes.to_vec(),
        })
    }
}

pub mod challenge {
    use super::AuthError;
    pub fn www_authenticate(
        err: &AuthError,
        resource_metadata_url: &str,
        scope: &[String],
    ) -> http::HeaderValue {
        http::HeaderValue::from_str(&format!(
            "Bearer resource_metadata=\"{resource_metadata_url}\""
        ))
        .unwrap_or(http::HeaderValue::from_static("Bearer"))
    }
}

pub mod prm {
    use crate::catalog::model::TenantAuth;
    pub fn metadata_url(public_base: &str, endpoint_path: &str) -> String {
        format!("{public_base}/.well-known/oauth-protected-resource{endpoint_path}")
    }
    pub fn resource_url(public_base: &str, endpoint_path: &str) -> String {
        format!("{public_base}{endpoint_path}")
    }
    pub fn document(resource: &str, auth: &TenantAuth, resource_name: &str) -> bytes::Bytes {
        bytes::Bytes::from(format!("{{\"resource\":\"{resource}\"}}"))
    }
}

pub mod apikey {
    pub struct GeneratedKey {
        pub token: String,
        pub id: String,
        pub hash_hex: String,
    }
    pub fn generate(pepper: &[u8]) -> GeneratedKey {
        GeneratedKey {
            token: String::new(),
            id: String::new(),
            hash_hex: String::new(),
        }
    }
}
