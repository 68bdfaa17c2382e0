//! SOAP faults as tool failures: the code, the service's own message and the declared detail.
//!
//! Owns the mapping of a SOAP 1.1 `Fault` (`faultcode`, `faultstring`, `detail`) and a SOAP 1.2
//! one (`Code/Value`, `Code/Subcode/Value`, `Reason/Text`, `Detail`) to the structured content
//! `{faultcode, [subcode,] faultstring, detail}` and a short text. The fault string is the
//! service's business message and is kept, but only its first line, at most
//! [`MAX_FAULT_TEXT`] bytes, with the endpoint URL and the tool's secrets replaced; a detail
//! element the tool does not declare is dropped (services put stack traces there). Must not
//! parse XML (`read.rs` does) or know MCP.

use bytes::{BufMut, BytesMut};

use super::read::Generic;
use crate::catalog::plan::SoapPlan;
use crate::json_text::put_str;

/// Longest fault string passed on, in bytes (cut at a character boundary).
pub(crate) const MAX_FAULT_TEXT: usize = 512;

/// A fault, ready for the surfaces.
#[derive(Debug)]
pub(crate) struct Fault {
    /// `{"faultcode":…,"faultstring":…,"detail":…}`.
    pub(crate) json: BytesMut,
    /// `SOAP fault <code>: <faultstring>`.
    pub(crate) text: String,
}

/// The parts of a `Fault` element, by version.
pub(crate) struct FaultParts<'g> {
    code: Option<&'g str>,
    subcode: Option<&'g str>,
    string: Option<&'g str>,
    detail: Option<&'g Generic>,
}

impl<'g> From<&'g Generic> for FaultParts<'g> {
    fn from(fault: &'g Generic) -> Self {
        let text = |g: Option<&'g Generic>| g.map(|g| g.text.as_str());
        if let Some(code) = fault.child("Code") {
            // SOAP 1.2.
            FaultParts {
                code: text(code.child("Value")),
                subcode: text(code.child("Subcode").and_then(|s| s.child("Value"))),
                string: text(fault.child("Reason").and_then(|r| r.child("Text"))),
                detail: fault.child("Detail"),
            }
        } else {
            FaultParts {
                code: text(fault.child("faultcode")),
                subcode: None,
                string: text(fault.child("faultstring")),
                detail: fault.child("detail"),
            }
        }
    }
}

impl Fault {
    /// Builds the fault of `soap`'s tool from its parts.
    pub(crate) fn from_parts(parts: &FaultParts<'_>, soap: &SoapPlan) -> Self {
        let code = parts.code.map(local_part).unwrap_or("Server");
        // The endpoint and every secret the envelope carried are never shown.
        let secrets = super::write::secret_values(soap).unwrap_or(&[]);
        let string = parts
            .string
            .map(|s| clean(s, soap.redact.iter().chain(secrets)))
            .unwrap_or_default();
        let mut json = BytesMut::with_capacity(96 + string.len());
        json.put_slice(b"{\"faultcode\":");
        put_str(&mut json, code);
        if let Some(subcode) = parts.subcode {
            json.put_slice(b",\"subcode\":");
            put_str(&mut json, local_part(subcode));
        }
        json.put_slice(b",\"faultstring\":");
        put_str(&mut json, &string);
        json.put_slice(b",\"detail\":");
        write_detail(&mut json, parts.detail, soap);
        json.put_u8(b'}');
        let text = if string.is_empty() {
            format!("SOAP fault {code}.")
        } else {
            format!("SOAP fault {code}: {string}")
        };
        Fault { json, text }
    }
}

/// `prefix:Client.Sub` → `Client.Sub`.
fn local_part(qname: &str) -> &str {
    let qname = qname.trim();
    qname.rsplit_once(':').map_or(qname, |(_, local)| local)
}

/// The first line, bounded, with the tool's endpoint and secrets replaced.
fn clean<'a>(text: &str, redact: impl Iterator<Item = &'a Box<str>>) -> String {
    let line = text.trim().lines().next().unwrap_or("").trim();
    let mut line = line.to_owned();
    for secret in redact.filter(|s| !s.is_empty()) {
        if line.contains(&**secret) {
            line = line.replace(&**secret, "[redacted]");
        }
    }
    if line.len() > MAX_FAULT_TEXT {
        let mut end = MAX_FAULT_TEXT;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        line.truncate(end);
        line.push('…');
    }
    line
}

/// The declared detail elements as `{"Name": …}`; `null` when none is declared.
fn write_detail(out: &mut BytesMut, detail: Option<&Generic>, soap: &SoapPlan) {
    let declared: Vec<&Generic> = detail
        .map(|d| {
            d.children
                .iter()
                .filter(|child| {
                    soap.fault_details.iter().any(|name| {
                        *name.local == child.local
                            && match (&name.ns, &child.ns) {
                                (Some(want), Some(got)) => **want == **got,
                                _ => true,
                            }
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    if declared.is_empty() {
        out.put_slice(b"null");
        return;
    }
    out.put_u8(b'{');
    for (i, child) in declared.iter().enumerate() {
        if i > 0 {
            out.put_u8(b',');
        }
        put_str(out, &child.local);
        out.put_u8(b':');
        child.write_json(out);
    }
    out.put_u8(b'}');
}
