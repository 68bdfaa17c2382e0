//! TLS termination: the rustls server configuration built from `[server.tls]`, swapped whole on
//! reload, the handshake of each accepted connection (bounded in time), and the verified client
//! certificate's identity ([`ClientCertificate`]) the gate maps to a caller.
//!
//! TLS 1.3 and 1.2 with the `ring` provider; ALPN offers `h2` then `http/1.1` (the connection
//! then serves whichever protocol the client speaks, as on plain TCP). Session tickets are on,
//! so a reconnecting client resumes instead of paying a full handshake.
//!
//! Owns reading the PEM files and the handshake. Must not know callers, tenants or MCP: the
//! identity it extracts is data the gate (`crate::auth`) interprets.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::config::{ClientAuth, TlsSettings};

/// Why the TLS configuration could not be built. The message names the file and the problem,
/// never key material.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read or holds no usable PEM item.
    #[error("{path}: {reason}")]
    File {
        /// The configured path.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// rustls refused the combination (e.g. the key does not match the certificate).
    #[error("TLS configuration refused: {0}")]
    Config(String),
}

// === Tls ===

/// The listener's TLS state: the current configuration (replaced whole on reload, so a
/// handshake uses one consistent certificate and verifier) and the handshake counters.
#[derive(Debug)]
pub struct Tls {
    current: ArcSwap<ServerConfig>,
    handshake_timeout: Duration,
    /// Handshakes completed.
    pub handshakes: Arc<AtomicU64>,
    /// Handshakes that failed or timed out (a missing required client certificate included).
    pub handshake_failures: Arc<AtomicU64>,
}

impl Tls {
    /// Reads the files of `settings` and builds the first configuration.
    pub fn load(settings: &TlsSettings) -> Result<Self, TlsError> {
        Ok(Self {
            current: ArcSwap::from_pointee(server_config(settings)?),
            handshake_timeout: Duration::from_millis(settings.handshake_timeout_ms.max(1)),
            handshakes: Arc::default(),
            handshake_failures: Arc::default(),
        })
    }

    /// Re-reads the files of `settings` and swaps the new configuration in; connections already
    /// open keep theirs. On error the current configuration stays.
    pub fn reload(&self, settings: &TlsSettings) -> Result<(), TlsError> {
        let config = server_config(settings)?;
        self.current.store(Arc::new(config));
        Ok(())
    }

    /// Runs the server handshake on `tcp` within the handshake timeout. Returns the stream and
    /// the identity of the client's verified certificate, if it presented one.
    pub(crate) async fn accept(
        &self,
        tcp: TcpStream,
    ) -> io::Result<(TlsStream<TcpStream>, Option<Arc<ClientCertificate>>)> {
        let acceptor = TlsAcceptor::from(self.current.load_full());
        let outcome = tokio::time::timeout(self.handshake_timeout, acceptor.accept(tcp)).await;
        let stream = match outcome {
            Ok(Ok(stream)) => stream,
            Ok(Err(err)) => {
                self.handshake_failures.fetch_add(1, Ordering::Relaxed);
                return Err(err);
            }
            Err(_) => {
                self.handshake_failures.fetch_add(1, Ordering::Relaxed);
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "TLS handshake timed out",
                ));
            }
        };
        self.handshakes.fetch_add(1, Ordering::Relaxed);
        let certificate = stream
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|chain| chain.first())
            .and_then(|leaf| ClientCertificate::from_der(leaf.as_ref()))
            .map(Arc::new);
        Ok((stream, certificate))
    }
}

/// The rustls configuration `settings` describe.
fn server_config(settings: &TlsSettings) -> Result<ServerConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = read_certs(&settings.cert)?;
    let key =
        PrivateKeyDer::from_pem_file(Path::new(&settings.key)).map_err(|err| TlsError::File {
            path: settings.key.clone(),
            reason: format!("no usable private key ({err})"),
        })?;
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|err| TlsError::Config(err.to_string()))?;
    let builder = match (settings.client_auth, &settings.client_ca) {
        (ClientAuth::None, _) => builder.with_no_client_auth(),
        (_, None) => {
            return Err(TlsError::Config(
                "client_auth needs client_ca (the CAs client certificates are verified against)"
                    .to_owned(),
            ))
        }
        (mode, Some(ca)) => {
            let mut roots = RootCertStore::empty();
            for cert in read_certs(ca)? {
                roots.add(cert).map_err(|err| TlsError::File {
                    path: ca.clone(),
                    reason: format!("not a usable CA certificate ({err})"),
                })?;
            }
            let verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider));
            let verifier = match mode {
                ClientAuth::Optional => verifier.allow_unauthenticated(),
                _ => verifier,
            };
            let verifier = verifier
                .build()
                .map_err(|err| TlsError::Config(err.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|err| TlsError::Config(err.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    config.ticketer =
        rustls::crypto::ring::Ticketer::new().map_err(|err| TlsError::Config(err.to_string()))?;
    Ok(config)
}

/// Every certificate of a PEM file; none is an error.
fn read_certs(path: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let fail = |reason: String| TlsError::File {
        path: path.to_owned(),
        reason,
    };
    let certs = CertificateDer::pem_file_iter(Path::new(path))
        .map_err(|err| fail(format!("cannot be read ({err})")))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| fail(format!("malformed PEM ({err})")))?;
    if certs.is_empty() {
        return Err(fail("holds no certificate".to_owned()));
    }
    Ok(certs)
}

// === ClientCertificate ===

/// Who a verified client certificate names: its subject's common name and its subject
/// alternative names, each SAN written `dns:…`, `uri:…`, `email:…` or `ip:…`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCertificate {
    /// The subject's first common name (`CN`), when it has one.
    pub common_name: Option<Box<str>>,
    /// The subject alternative names.
    pub sans: Vec<Box<str>>,
}

impl ClientCertificate {
    /// Reads the names of a DER certificate rustls has verified; `None` when it does not parse
    /// (then it names no one).
    pub fn from_der(der: &[u8]) -> Option<Self> {
        use x509_parser::extensions::GeneralName;
        let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
        let common_name = cert
            .subject()
            .iter_common_name()
            .next()
            .and_then(|cn| cn.as_str().ok())
            .map(Box::from);
        let mut sans = Vec::new();
        if let Ok(Some(extension)) = cert.subject_alternative_name() {
            for name in &extension.value.general_names {
                let written = match name {
                    GeneralName::DNSName(dns) => format!("dns:{dns}"),
                    GeneralName::URI(uri) => format!("uri:{uri}"),
                    GeneralName::RFC822Name(email) => format!("email:{email}"),
                    GeneralName::IPAddress(bytes) => match ip_text(bytes) {
                        Some(ip) => format!("ip:{ip}"),
                        None => continue,
                    },
                    _ => continue,
                };
                sans.push(written.into_boxed_str());
            }
        }
        Some(Self { common_name, sans })
    }
}

fn ip_text(bytes: &[u8]) -> Option<std::net::IpAddr> {
    match bytes.len() {
        4 => <[u8; 4]>::try_from(bytes).ok().map(std::net::IpAddr::from),
        16 => <[u8; 16]>::try_from(bytes).ok().map(std::net::IpAddr::from),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_names_its_common_name_and_alternative_names() {
        let mut params =
            rcgen::CertificateParams::new(vec!["agent.example.com".to_owned()]).expect("params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "agent-7");
        params.subject_alt_names.push(rcgen::SanType::URI(
            "spiffe://acme/agent-7".try_into().expect("uri"),
        ));
        params
            .subject_alt_names
            .push(rcgen::SanType::IpAddress([10, 0, 0, 7].into()));
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = params.self_signed(&key).expect("cert");
        let names = ClientCertificate::from_der(cert.der()).expect("parses");
        assert_eq!(names.common_name.as_deref(), Some("agent-7"));
        let sans: Vec<&str> = names.sans.iter().map(AsRef::as_ref).collect();
        assert_eq!(
            sans,
            [
                "dns:agent.example.com",
                "uri:spiffe://acme/agent-7",
                "ip:10.0.0.7"
            ]
        );
        assert_eq!(ClientCertificate::from_der(b"not der"), None);
    }
}
