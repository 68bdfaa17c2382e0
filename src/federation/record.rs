//! The federated record model and its JSON text.
//!
//! Owns `FederatedRecord`, `Provenance`, `IdentityMatch`, `MatchRule`, the mapping of one
//! provider record into a single-source `FederatedRecord` (`SourceFields` dotted paths), and the
//! hand-written JSON writers whose key order follows the `bos/source-results/v1` contract
//! ("Each FederatedRecord contains record_ref, optional nullable display_name, email, phone,
//! lifecycle, identity_match, an attributes object, and a nonempty sources array"). Must not do
//! IO, merge records (that is `merge.rs`) or know the event or result envelopes.

use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use serde_json::{Map, Value};

use crate::config::Source;
use crate::json_text::put_str;

/// One record of a federated read: a single provider record, or several merged by identity.
#[derive(Debug, Clone, PartialEq)]
pub struct FederatedRecord {
    /// `bos:{record_type}:{source_identity}:{external_id}` for a single-source record; the
    /// smallest member ref for a merged one.
    pub record_ref: String,
    /// Mapped `display_name` (`Value::Null` when unmapped or absent).
    pub display_name: Value,
    /// Mapped `email` (identity key: compared trimmed and lowercased).
    pub email: Value,
    /// Mapped `phone` (identity key: compared as digits, a leading `+` kept).
    pub phone: Value,
    /// Mapped `lifecycle`.
    pub lifecycle: Value,
    /// Where the record was observed; never empty.
    pub sources: Vec<Provenance>,
    /// Why members were merged; `None` (`null`) for a record of one identity.
    pub identity_match: Option<IdentityMatch>,
    /// The `attributes` object, sorted by name (names are unique).
    pub attributes: Vec<(Arc<str>, Value)>,
}

/// One provenance entry of a record.
#[derive(Debug, Clone, PartialEq)]
pub struct Provenance {
    /// The source's kind, e.g. `crm`.
    pub source_type: Arc<str>,
    /// The source's identity.
    pub source_identity: Arc<str>,
    /// The provider's id of the record.
    pub external_id: String,
    /// The record type (the tool's).
    pub record_type: Arc<str>,
    /// When the provider observed the record (its text, as given).
    pub observed_at: String,
    /// Capabilities the source grants on the record.
    pub capabilities: Arc<[String]>,
    /// The provider's version: a string, a number, or `Value::Null`.
    pub version: Value,
}

impl Provenance {
    /// The stable order key of provenance entries: (source_type, source_identity, external_id).
    pub(crate) fn order_key(&self) -> (&str, &str, &str) {
        (&self.source_type, &self.source_identity, &self.external_id)
    }
}

/// An identity rule that joined members of a merged record. The derived order is the order
/// the rules are written in (alphabetical).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MatchRule {
    /// Same normalized email.
    Email,
    /// Same normalized phone.
    Phone,
    /// Same record ref.
    RecordRef,
}

impl MatchRule {
    /// The rule's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Email => "email",
            Self::Phone => "phone",
            Self::RecordRef => "record_ref",
        }
    }
}

/// `identity_match` of a merged record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityMatch {
    /// Rules that joined members, sorted, without duplicates.
    pub rules: Vec<MatchRule>,
    /// The member record refs, sorted, without duplicates.
    pub record_refs: Vec<String>,
}

// === impl FederatedRecord ===

impl FederatedRecord {
    /// The ref of a single-source record: `bos:{record_type}:{source_identity}:{external_id}`.
    pub fn single_source_ref(
        record_type: &str,
        source_identity: &str,
        external_id: &str,
    ) -> String {
        let mut out = String::with_capacity(
            6 + record_type.len() + source_identity.len() + external_id.len(),
        );
        out.push_str("bos:");
        out.push_str(record_type);
        out.push(':');
        out.push_str(source_identity);
        out.push(':');
        out.push_str(external_id);
        out
    }

    /// Writes the record as JSON, keys in contract order.
    pub fn write_json(&self, out: &mut BytesMut) {
        out.put_slice(b"{\"record_ref\":");
        put_str(out, &self.record_ref);
        out.put_slice(b",\"display_name\":");
        write_value(out, &self.display_name);
        out.put_slice(b",\"email\":");
        write_value(out, &self.email);
        out.put_slice(b",\"phone\":");
        write_value(out, &self.phone);
        out.put_slice(b",\"lifecycle\":");
        write_value(out, &self.lifecycle);
        out.put_slice(b",\"sources\":[");
        for (idx, provenance) in self.sources.iter().enumerate() {
            if idx > 0 {
                out.put_u8(b',');
            }
            provenance.write_json(out);
        }
        out.put_slice(b"],\"identity_match\":");
        match &self.identity_match {
            None => out.put_slice(b"null"),
            Some(matched) => matched.write_json(out),
        }
        out.put_slice(b",\"attributes\":{");
        for (idx, (name, value)) in self.attributes.iter().enumerate() {
            if idx > 0 {
                out.put_u8(b',');
            }
            put_str(out, name);
            out.put_u8(b':');
            write_value(out, value);
        }
        out.put_slice(b"}}");
    }

    /// The record as JSON text (tests, debugging, canonical tie-breaks).
    pub fn to_json(&self) -> BytesMut {
        let mut out = BytesMut::with_capacity(256);
        self.write_json(&mut out);
        out
    }
}

/// Writes records as a JSON array.
pub(crate) fn write_records(out: &mut BytesMut, records: &[FederatedRecord]) {
    out.put_u8(b'[');
    for (idx, record) in records.iter().enumerate() {
        if idx > 0 {
            out.put_u8(b',');
        }
        record.write_json(out);
    }
    out.put_u8(b']');
}

impl Provenance {
    /// Writes the entry as JSON, keys in contract order.
    pub fn write_json(&self, out: &mut BytesMut) {
        out.put_slice(b"{\"source_type\":");
        put_str(out, &self.source_type);
        out.put_slice(b",\"source_identity\":");
        put_str(out, &self.source_identity);
        out.put_slice(b",\"external_id\":");
        put_str(out, &self.external_id);
        out.put_slice(b",\"record_type\":");
        put_str(out, &self.record_type);
        out.put_slice(b",\"observed_at\":");
        put_str(out, &self.observed_at);
        out.put_slice(b",\"capabilities\":[");
        for (idx, capability) in self.capabilities.iter().enumerate() {
            if idx > 0 {
                out.put_u8(b',');
            }
            put_str(out, capability);
        }
        out.put_slice(b"],\"version\":");
        write_value(out, &self.version);
        out.put_u8(b'}');
    }
}

impl IdentityMatch {
    /// Writes `{"rules":[…],"record_refs":[…]}`.
    pub fn write_json(&self, out: &mut BytesMut) {
        out.put_slice(b"{\"rules\":[");
        for (idx, rule) in self.rules.iter().enumerate() {
            if idx > 0 {
                out.put_u8(b',');
            }
            out.put_u8(b'"');
            out.put_slice(rule.as_str().as_bytes());
            out.put_u8(b'"');
        }
        out.put_slice(b"],\"record_refs\":[");
        for (idx, record_ref) in self.record_refs.iter().enumerate() {
            if idx > 0 {
                out.put_u8(b',');
            }
            put_str(out, record_ref);
        }
        out.put_slice(b"]}");
    }
}

/// Writes a JSON value. Writing into a `BytesMut` cannot fail.
pub(crate) fn write_value(out: &mut BytesMut, value: &Value) {
    let _ = serde_json::to_writer(out.writer(), value);
}

// === mapping provider records ===

/// A source's field mapping with its dotted paths split once per run, plus the shared strings
/// every provenance entry of the source carries.
#[derive(Debug)]
pub(crate) struct SourceMapping {
    pub(crate) source_type: Arc<str>,
    pub(crate) source_identity: Arc<str>,
    pub(crate) record_type: Arc<str>,
    pub(crate) capabilities: Arc<[String]>,
    display_name: Option<Vec<String>>,
    email: Option<Vec<String>>,
    phone: Option<Vec<String>>,
    lifecycle: Option<Vec<String>>,
    /// Sorted by name (the model's map is a `BTreeMap`).
    attributes: Vec<(Arc<str>, Vec<String>)>,
}

fn split_path(path: &str) -> Vec<String> {
    path.split('.').map(str::to_owned).collect()
}

impl SourceMapping {
    pub(crate) fn new(source: &Source, record_type: &Arc<str>) -> Self {
        let fields = &source.fields;
        Self {
            source_type: source.source_type.as_str().into(),
            source_identity: source.source_identity.as_str().into(),
            record_type: Arc::clone(record_type),
            capabilities: source.capabilities.clone().into(),
            display_name: fields.display_name.as_deref().map(split_path),
            email: fields.email.as_deref().map(split_path),
            phone: fields.phone.as_deref().map(split_path),
            lifecycle: fields.lifecycle.as_deref().map(split_path),
            attributes: fields
                .attributes
                .iter()
                .map(|(name, path)| (Arc::<str>::from(name.as_str()), split_path(path)))
                .collect(),
        }
    }

    /// Maps one validated provider record into a single-source record.
    pub(crate) fn map(
        &self,
        external_id: String,
        observed_at: String,
        version: Value,
        fields: &Map<String, Value>,
    ) -> FederatedRecord {
        let pick = |path: &Option<Vec<String>>| match path {
            Some(path) => lookup(fields, path).cloned().unwrap_or(Value::Null),
            None => Value::Null,
        };
        let record_ref = FederatedRecord::single_source_ref(
            &self.record_type,
            &self.source_identity,
            &external_id,
        );
        FederatedRecord {
            record_ref,
            display_name: pick(&self.display_name),
            email: pick(&self.email),
            phone: pick(&self.phone),
            lifecycle: pick(&self.lifecycle),
            sources: vec![Provenance {
                source_type: Arc::clone(&self.source_type),
                source_identity: Arc::clone(&self.source_identity),
                external_id,
                record_type: Arc::clone(&self.record_type),
                observed_at,
                capabilities: Arc::clone(&self.capabilities),
                version,
            }],
            identity_match: None,
            attributes: self
                .attributes
                .iter()
                .map(|(name, path)| {
                    let value = lookup(fields, path).cloned().unwrap_or(Value::Null);
                    (Arc::clone(name), value)
                })
                .collect(),
        }
    }
}

/// Follows a dotted path into `fields`: object members by name, array elements by index.
fn lookup<'v>(fields: &'v Map<String, Value>, path: &[String]) -> Option<&'v Value> {
    let (first, rest) = path.split_first()?;
    let mut current = fields.get(first.as_str())?;
    for segment in rest {
        current = match current {
            Value::Object(map) => map.get(segment.as_str())?,
            Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SourceFields;
    use serde_json::json;

    fn source(fields: SourceFields) -> Source {
        Source {
            source_type: "crm".into(),
            source_identity: "crm-eu".into(),
            url: "http://127.0.0.1:1/".into(),
            timeout_ms: None,
            credential: None,
            page_limit: None,
            max_pages: None,
            capabilities: vec!["read".into()],
            fields,
        }
    }

    #[test]
    fn maps_dotted_paths_and_writes_contract_order() {
        let mut attributes = std::collections::BTreeMap::new();
        attributes.insert("tier".to_owned(), "account.tier".to_owned());
        attributes.insert("missing".to_owned(), "nope".to_owned());
        attributes.insert("first_tag".to_owned(), "tags.0".to_owned());
        let mapping = SourceMapping::new(
            &source(SourceFields {
                display_name: Some("name".into()),
                email: Some("contact.email".into()),
                phone: None,
                lifecycle: Some("contact.absent".into()),
                attributes,
            }),
            &Arc::from("person"),
        );
        let fields = json!({"name": "Ada \"L\"", "contact": {"email": "ADA@x.org"},
            "account": {"tier": 3}, "tags": ["a", "b"]});
        let Value::Object(fields) = fields else {
            unreachable!()
        };
        let record = mapping.map(
            "42".into(),
            "2026-10-08T12:00:00Z".into(),
            json!(7),
            &fields,
        );
        let text = String::from_utf8(record.to_json().to_vec()).unwrap();
        assert_eq!(
            text,
            r#"{"record_ref":"bos:person:crm-eu:42","display_name":"Ada \"L\"","email":"ADA@x.org","phone":null,"lifecycle":null,"sources":[{"source_type":"crm","source_identity":"crm-eu","external_id":"42","record_type":"person","observed_at":"2026-10-08T12:00:00Z","capabilities":["read"],"version":7}],"identity_match":null,"attributes":{"first_tag":"a","missing":null,"tier":3}}"#
        );
    }

    #[test]
    fn identity_match_writes_rules_and_refs() {
        let matched = IdentityMatch {
            rules: vec![MatchRule::Email, MatchRule::RecordRef],
            record_refs: vec!["a".into(), "b".into()],
        };
        let mut out = BytesMut::new();
        matched.write_json(&mut out);
        assert_eq!(
            &out[..],
            br#"{"rules":["email","record_ref"],"record_refs":["a","b"]}"#
        );
    }
}
