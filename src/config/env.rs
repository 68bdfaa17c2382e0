//! Environment overrides: the settings a deployment keeps out of the file.
//!
//! `SLUICE_API_KEY_PEPPER` replaces `[server] api_key_pepper`, `SLUICE_BOS_HANDLE_SECRET`
//! replaces `[server] bos_handle_secret`, and a non-empty `SLUICE_REDIS_URL` replaces
//! `[cluster] redis_url`. Owns those names and the one place the process environment is read for
//! configuration ([`Overrides::from_env`]); [`super::load`] applies them to every file it loads,
//! so validation, the catalog and the server only ever see the resulting [`Config`]. Must not
//! read anything else (`RUST_LOG` is the log subscriber's, in `main.rs`) and never prints a
//! value: every one of them is a secret or may hold a password.

use std::fmt;
use std::io::Read;

use super::{Config, SecretRef};

/// Largest secret file read.
pub(crate) const MAX_SECRET_FILE_BYTES: u64 = 64 * 1024;

/// Why a secret could not be read (never holds the secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SecretError {
    #[error("name exactly one of secret_env and secret_file")]
    NotOne,
    #[error("environment variable {0} is not set (or not UTF-8)")]
    Unset(String),
    #[error("secret file {0}: {1}")]
    File(String, String),
    #[error("the secret is empty")]
    Empty,
}

/// Reads the secret `secret` names: an environment variable, or a file (at most
/// [`MAX_SECRET_FILE_BYTES`], surrounding whitespace trimmed). The one place besides
/// [`Overrides::from_env`] that reads the environment for configuration.
pub(crate) fn resolve_secret(secret: &SecretRef) -> Result<String, SecretError> {
    let value = match (&secret.secret_env, &secret.secret_file) {
        (Some(name), None) => std::env::var(name).map_err(|_| SecretError::Unset(name.clone()))?,
        (None, Some(path)) => {
            let file = std::fs::File::open(path)
                .map_err(|err| SecretError::File(path.clone(), err.kind().to_string()))?;
            let mut text = String::new();
            file.take(MAX_SECRET_FILE_BYTES + 1)
                .read_to_string(&mut text)
                .map_err(|err| SecretError::File(path.clone(), err.kind().to_string()))?;
            if text.len() as u64 > MAX_SECRET_FILE_BYTES {
                return Err(SecretError::File(path.clone(), "larger than 64 KiB".into()));
            }
            text
        }
        _ => return Err(SecretError::NotOne),
    };
    let value = value.trim();
    if value.is_empty() {
        return Err(SecretError::Empty);
    }
    Ok(value.to_owned())
}

/// Overrides `[server] api_key_pepper`.
pub(crate) const API_KEY_PEPPER_ENV: &str = "SLUICE_API_KEY_PEPPER";

/// Overrides `[server] bos_handle_secret`.
pub(crate) const BOS_HANDLE_SECRET_ENV: &str = "SLUICE_BOS_HANDLE_SECRET";

/// Overrides `[cluster] redis_url` when set and not empty.
pub(crate) const REDIS_URL_ENV: &str = "SLUICE_REDIS_URL";

/// The overrides found in the environment; `None` leaves the file's value.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `SLUICE_API_KEY_PEPPER` (an empty value is a value: an empty key).
    pub api_key_pepper: Option<String>,
    /// `SLUICE_BOS_HANDLE_SECRET` (an empty value is a value, and validation refuses it).
    pub bos_handle_secret: Option<String>,
    /// `SLUICE_REDIS_URL`, when not empty.
    pub redis_url: Option<String>,
}

impl Overrides {
    /// The overrides of this process's environment. A variable whose value is not UTF-8 counts
    /// as unset.
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The overrides `lookup` (variable name → value) gives.
    pub(crate) fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        Self {
            api_key_pepper: lookup(API_KEY_PEPPER_ENV),
            bos_handle_secret: lookup(BOS_HANDLE_SECRET_ENV),
            redis_url: lookup(REDIS_URL_ENV).filter(|url| !url.is_empty()),
        }
    }

    /// Replaces the file's values with the overrides that are set.
    pub fn apply(&self, config: &mut Config) {
        if let Some(pepper) = &self.api_key_pepper {
            config.server.api_key_pepper = Some(pepper.clone());
        }
        if let Some(secret) = &self.bos_handle_secret {
            config.server.bos_handle_secret = Some(secret.clone());
        }
        if let Some(url) = &self.redis_url {
            config.cluster.redis_url = Some(url.clone());
        }
    }
}

impl fmt::Debug for Overrides {
    /// Which overrides are set, never their values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Overrides")
            .field("api_key_pepper", &self.api_key_pepper.is_some())
            .field("bos_handle_secret", &self.bos_handle_secret.is_some())
            .field("redis_url", &self.redis_url.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overrides(vars: &[(&str, &str)]) -> Overrides {
        Overrides::from_lookup(|name| {
            vars.iter()
                .find(|(var, _)| *var == name)
                .map(|(_, value)| (*value).to_owned())
        })
    }

    #[test]
    fn set_variables_replace_the_file_values() {
        let mut config = crate::config::parse(
            "[server]\napi_key_pepper = \"file\"\n[cluster]\nredis_url = \"redis://file\"\n",
            "t",
        )
        .unwrap();
        overrides(&[]).apply(&mut config);
        assert_eq!(config.server.api_key_pepper.as_deref(), Some("file"));
        assert_eq!(config.cluster.redis_url.as_deref(), Some("redis://file"));

        overrides(&[
            (API_KEY_PEPPER_ENV, ""),
            (BOS_HANDLE_SECRET_ENV, "secret"),
            (REDIS_URL_ENV, ""),
        ])
        .apply(&mut config);
        assert_eq!(config.server.api_key_pepper.as_deref(), Some(""));
        assert_eq!(config.server.bos_handle_secret.as_deref(), Some("secret"));
        // An empty URL does not override.
        assert_eq!(config.cluster.redis_url.as_deref(), Some("redis://file"));

        overrides(&[(REDIS_URL_ENV, "redis://env")]).apply(&mut config);
        assert_eq!(config.cluster.redis_url.as_deref(), Some("redis://env"));
    }

    #[test]
    fn debug_never_prints_a_value() {
        let printed = format!("{:?}", overrides(&[(API_KEY_PEPPER_ENV, "s3cret")]));
        assert!(!printed.contains("s3cret"), "{printed}");
        assert!(printed.contains("api_key_pepper: true"), "{printed}");
    }
}
