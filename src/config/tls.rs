//! `[server.tls]`: terminating TLS on the listener — the certificate chain and key, and the
//! optional client certificates (mTLS).
//!
//! Owns the serde shape and its defaults. Must not read the files (that is `http/tls.rs`, at
//! start and on every reload) or check meaning (that is `validate/server.rs`).

use serde::Deserialize;

/// `[server.tls]`. Absent: the listener speaks plain HTTP. Present: every connection is TLS
/// 1.2 or 1.3, with ALPN `h2` and `http/1.1` (HTTP/2 over TLS), and the certificate files are
/// re-read on every configuration reload (SIGHUP, `POST /admin/reload`); a reload whose files
/// do not load keeps the certificate in use and logs why.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TlsSettings {
    /// PEM file with the certificate chain, leaf first.
    pub cert: String,
    /// PEM file with the private key (PKCS#8, PKCS#1 or SEC1).
    pub key: String,
    /// PEM file with the CA certificates client certificates are verified against. Needed by
    /// `client_auth`.
    #[serde(default)]
    pub client_ca: Option<String>,
    /// Whether clients present a certificate: `"none"` (default: none is asked for),
    /// `"optional"` (one is asked for; a client without one is served as without TLS client
    /// authentication, one that does not verify is refused at the handshake) or `"required"`
    /// (a client without a verified certificate is refused at the handshake).
    #[serde(default)]
    pub client_auth: ClientAuth,
    /// Longest TLS handshake, in milliseconds, from accept; a slower client is disconnected.
    #[serde(default = "default_handshake_timeout_ms")]
    pub handshake_timeout_ms: u64,
}

fn default_handshake_timeout_ms() -> u64 {
    10_000
}

/// `[server.tls] client_auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ClientAuth {
    /// No client certificate is asked for.
    #[default]
    None,
    /// A client certificate is asked for and verified when presented.
    Optional,
    /// A verified client certificate is required to complete the handshake.
    Required,
}
