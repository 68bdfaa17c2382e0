//! `downstream = { kind = "soap", … }`: a SOAP 1.1 or 1.2 operation behind a tool.
//!
//! Owns the serde shapes of a SOAP downstream: endpoint, version, action, the operation element
//! and its namespaces, the style, SOAP header elements filled from configuration (constants,
//! the correlation id, secrets, a WS-Security UsernameToken) and the declared fault details.
//! The tool's field rules are the usual ones, with XML source paths (`config/path.rs`). Must not
//! compile anything: the envelope and the XML trees are `catalog/plan/soap.rs`'s.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::SecretRef;

/// A SOAP downstream: one operation of one port.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SoapDownstream {
    /// The endpoint the envelope is posted to (`http` or `https`); it overrides the WSDL's
    /// `soap:address`, which is often wrong for the deployment.
    pub url: String,
    /// `"1.1"` (default) or `"1.2"`.
    #[serde(default)]
    pub version: SoapVersion,
    /// The operation's action URI (`soapAction` / `soap12:operation/@soapAction`); may be empty.
    #[serde(default)]
    pub action: String,
    /// The operation element: `{namespace}Name` or `prefix:Name` with the prefix in
    /// `namespaces`. For `document` style it only names the operation (the body holds the
    /// input rules' top-level elements).
    pub operation: String,
    /// How the body is laid out.
    #[serde(default)]
    pub style: SoapStyle,
    /// Namespace prefixes source paths and header elements may use (`o:Line`); declared once
    /// on the envelope.
    #[serde(default)]
    pub namespaces: BTreeMap<String, String>,
    /// Whether unprefixed child elements are in the operation's namespace
    /// (`elementFormDefault="qualified"`, default) or in none. The parts of an `rpc` operation
    /// are always unqualified.
    #[serde(default = "yes")]
    pub qualified: bool,
    /// SOAP header elements sent with every call, in order.
    #[serde(default, rename = "header")]
    pub headers: Vec<SoapHeader>,
    /// A WS-Security UsernameToken (`PasswordText`) header.
    pub ws_security: Option<WsSecurity>,
    /// Static HTTP headers sent on every call.
    #[serde(default)]
    pub http_headers: BTreeMap<String, String>,
    /// Declared fault detail elements (`{ns}Name` or `prefix:Name`): a fault whose detail holds
    /// one of them carries it as JSON; any other detail is dropped (it may be a stack trace).
    #[serde(default)]
    pub fault_details: Vec<String>,
    /// Per-call timeout in milliseconds (server default when unset).
    pub timeout_ms: Option<u64>,
}

fn yes() -> bool {
    true
}

/// The SOAP version a call is made in (the answer may be in either).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
pub enum SoapVersion {
    /// SOAP 1.1: `text/xml` and a `SOAPAction` header.
    #[default]
    #[serde(rename = "1.1")]
    V11,
    /// SOAP 1.2: `application/soap+xml` with the action as a media-type parameter.
    #[serde(rename = "1.2")]
    V12,
}

/// How an operation's body is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SoapStyle {
    /// document/literal wrapped: one element named like the operation holds the arguments; the
    /// answer's element holds the result. Source paths start inside those elements.
    #[default]
    DocumentWrapped,
    /// document/literal with several parts: the body holds one element per part; source paths
    /// start at the body (their first segment is a part element).
    Document,
    /// rpc/literal: a wrapper named after the operation in its namespace, the parts its
    /// unqualified children.
    Rpc,
}

/// A SOAP header element built from configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SoapHeader {
    /// The element: `{namespace}Name` or `prefix:Name`.
    pub element: String,
    /// Whether the element carries `mustUnderstand`.
    #[serde(default)]
    pub must_understand: bool,
    /// Its child elements, in order.
    #[serde(default, rename = "field")]
    pub fields: Vec<SoapHeaderField>,
}

/// One child element of a SOAP header: a constant, the call's correlation id, or a secret.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SoapHeaderField {
    /// The child element's name (unprefixed: in the header element's namespace).
    pub name: String,
    /// A constant text.
    pub value: Option<String>,
    /// The call's correlation id (the id sent to REST downstreams in the correlation header).
    #[serde(default)]
    pub correlation_id: bool,
    /// A secret: the environment variable holding it (read when the catalog is built).
    pub secret_env: Option<String>,
    /// A secret: the file holding it (at most 64 KiB, trimmed).
    pub secret_file: Option<String>,
}

/// A WS-Security 1.0 UsernameToken with a `PasswordText` password.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WsSecurity {
    /// The user name.
    pub username: String,
    /// The environment variable holding the password.
    pub secret_env: Option<String>,
    /// The file holding the password.
    pub secret_file: Option<String>,
}

impl WsSecurity {
    /// Where the password is.
    pub(crate) fn password(&self) -> SecretRef {
        SecretRef {
            secret_env: self.secret_env.clone(),
            secret_file: self.secret_file.clone(),
        }
    }
}

impl SoapHeaderField {
    /// How many of `value`, `correlation_id` and a secret are set (exactly one must be).
    pub(crate) fn sources(&self) -> usize {
        usize::from(self.value.is_some())
            + usize::from(self.correlation_id)
            + usize::from(self.secret_env.is_some() || self.secret_file.is_some())
    }

    /// The secret it names, if it names one.
    pub(crate) fn secret(&self) -> Option<SecretRef> {
        (self.secret_env.is_some() || self.secret_file.is_some()).then(|| SecretRef {
            secret_env: self.secret_env.clone(),
            secret_file: self.secret_file.clone(),
        })
    }
}
