//! The operator surface: `POST /admin/reload` re-reads the configuration file and swaps the
//! catalog snapshot, behind a bearer token from the configuration.
//!
//! Owns only the endpoint's access check and answer shape; reloading itself is
//! [`Catalog::reload`]. The endpoint is off (404) when no admin token is configured.

use std::sync::Arc;

use http::header::AUTHORIZATION;
use http::request::Parts;
use http::{Response, StatusCode};
use sha2::{Digest, Sha256};

use crate::catalog::{Catalog, ReloadOutcome};
use crate::http::response::{self, Body};
use crate::http::Error;

/// `POST /admin/reload`: 200 `{"version":N,"changed":[{"tenant":…,"client":…}]}` on success; 422
/// with the report (one problem per line) when the new file is invalid, the old snapshot staying
/// in force; 401 without the right token; 404 when the endpoint is off.
pub(crate) async fn reload(
    catalog: &Arc<Catalog>,
    token: Option<&str>,
    parts: &Parts,
) -> Result<Response<Body>, Error> {
    let Some(token) = token else {
        return Err(Error::NotFound);
    };
    let presented = parts
        .headers
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .unwrap_or("");
    if !same_secret(presented, token) {
        return Err(Error::Unauthorized {
            challenge: Some(http::HeaderValue::from_static(
                "Bearer realm=\"sluice-admin\"",
            )),
            message: "admin token required".into(),
        });
    }
    let catalog = Arc::clone(catalog);
    // Reading and validating the file is blocking work.
    let outcome = tokio::task::spawn_blocking(move || catalog.reload())
        .await
        .map_err(|_| Error::Internal)?;
    match outcome {
        Ok(outcome) => {
            tracing::info!(
                version = outcome.version,
                changed = outcome.changed.len(),
                "catalog reloaded"
            );
            Ok(response::json(StatusCode::OK, outcome_json(&outcome)))
        }
        Err(report) => {
            tracing::warn!(%report, "reload refused; keeping the current catalog");
            Err(Error::ReloadRefused(report.to_string()))
        }
    }
}

fn outcome_json(outcome: &ReloadOutcome) -> Vec<u8> {
    let changed: Vec<_> = outcome
        .changed
        .iter()
        .map(|key| serde_json::json!({"tenant": &*key.tenant, "client": &*key.client}))
        .collect();
    serde_json::to_vec(&serde_json::json!({"version": outcome.version, "changed": changed}))
        .unwrap_or_default()
}

/// Compares two secrets in time independent of where they differ: both are hashed to a fixed
/// length first, then compared without early exit.
fn same_secret(presented: &str, expected: &str) -> bool {
    let a = Sha256::digest(presented.as_bytes());
    let b = Sha256::digest(expected.as_bytes());
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

#[cfg(test)]
mod tests {
    #[test]
    fn secrets_compare_by_value() {
        assert!(super::same_secret("s3cret", "s3cret"));
        assert!(!super::same_secret("s3cret", "s3creT"));
        assert!(!super::same_secret("", "s3cret"));
    }
}
