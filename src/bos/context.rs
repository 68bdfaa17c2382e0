//! BOS contexts: the `[[tenant.bos_context]]` configuration, its validation, and the resolved
//! context with the public JSON the platform tools show.
//!
//! A context belongs to one caller (`apikey:…`, `jwt:iss|sub`) of one tenant and exposes the
//! tools visible to one client application of that tenant. Its public JSON names the
//! organization (the tenant id), application, installation and role, plus the handle the caller
//! uses to select it; the context id and the caller id never appear in it.
//!
//! Must not look up clients or tools (the caller passes a predicate for client existence) and
//! must not sign or parse handles (`handle.rs` does).

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use serde::Deserialize;

use super::handle::HandleKey;
use crate::json_text::put_str;

/// Longest context id accepted.
pub(crate) const MAX_CONTEXT_ID_LEN: usize = 64;

// === BosContextConfig ===

/// One `[[tenant.bos_context]]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BosContextConfig {
    /// Context id, unique within the tenant: `[A-Za-z0-9._-]{1,64}`. Bound into handles, so
    /// renaming it invalidates the handles issued for it.
    pub id: String,
    /// The caller id the context belongs to, exactly as authentication produces it
    /// (`apikey:demo`, `jwt:https://idp.example.com|user-1`).
    pub caller: String,
    /// The client application of this tenant whose visible tools the context exposes.
    pub client: String,
    /// Shown as `application_name`.
    pub application_name: String,
    /// Shown as `installation_name`.
    pub installation_name: String,
    /// Shown as `role_label`.
    pub role_label: String,
    /// Whether this is the caller's default context (at most one per caller).
    #[serde(default)]
    pub is_default: bool,
}

/// A `bos_context` table that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ContextError {
    /// The id is empty, too long, or has characters outside `[A-Za-z0-9._-]`.
    #[error("tenant {tenant}: bos_context id {id:?} must match [A-Za-z0-9._-]{{1,64}}")]
    InvalidId {
        /// The tenant.
        tenant: String,
        /// The offending id.
        id: String,
    },
    /// Two contexts of one tenant share an id.
    #[error("tenant {tenant}: bos_context id {id:?} is defined twice")]
    DuplicateId {
        /// The tenant.
        tenant: String,
        /// The repeated id.
        id: String,
    },
    /// A required text field is empty.
    #[error("tenant {tenant}: bos_context {id:?} has an empty {field}")]
    EmptyField {
        /// The tenant.
        tenant: String,
        /// The context id.
        id: String,
        /// The empty field.
        field: &'static str,
    },
    /// The context names a client application the tenant does not have.
    #[error("tenant {tenant}: bos_context {id:?} names unknown client {client:?}")]
    UnknownClient {
        /// The tenant.
        tenant: String,
        /// The context id.
        id: String,
        /// The unknown client.
        client: String,
    },
    /// One caller has more than one default context.
    #[error("tenant {tenant}: caller {caller:?} has more than one default bos_context")]
    SeveralDefaults {
        /// The tenant.
        tenant: String,
        /// The caller.
        caller: String,
    },
}

// === BosContext ===

/// A validated context of one tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BosContext {
    /// The tenant (shown as `organization_name`).
    pub tenant: Arc<str>,
    /// The context id, unique within the tenant.
    pub id: String,
    /// The caller id the context belongs to.
    pub caller: String,
    /// The client application whose visible tools the context exposes.
    pub client: String,
    /// Shown as `organization_name`: the tenant id.
    pub organization_name: Arc<str>,
    /// Shown as `application_name`.
    pub application_name: String,
    /// Shown as `installation_name`.
    pub installation_name: String,
    /// Shown as `role_label`.
    pub role_label: String,
    /// Whether this is the caller's default context.
    pub is_default: bool,
}

impl BosContext {
    /// The resolved context of `config` in `tenant` (no validation; see [`BosContexts::build`]).
    pub(crate) fn from_config(tenant: Arc<str>, config: &BosContextConfig) -> Self {
        Self {
            organization_name: Arc::clone(&tenant),
            tenant,
            id: config.id.clone(),
            caller: config.caller.clone(),
            client: config.client.clone(),
            application_name: config.application_name.clone(),
            installation_name: config.installation_name.clone(),
            role_label: config.role_label.clone(),
            is_default: config.is_default,
        }
    }

    /// A handle for this context, valid only for its caller.
    pub(crate) fn issue_handle(&self, key: &HandleKey) -> String {
        key.issue(&self.tenant, &self.id, &self.caller)
    }

    /// The public JSON of the context as `handle` selects it:
    /// `{"context_handle":"…","organization_name":"…","application_name":"…",
    /// "installation_name":"…","role_label":"…","is_default":true}`.
    pub(crate) fn public_json(&self, handle: &str) -> Bytes {
        let mut out = BytesMut::with_capacity(self.public_json_len_hint(handle));
        self.put_public_json(&mut out, handle);
        out.freeze()
    }

    /// Appends [`public_json`](Self::public_json) to `out`.
    pub(crate) fn put_public_json(&self, out: &mut BytesMut, handle: &str) {
        out.put_slice(b"{\"context_handle\":");
        put_str(out, handle);
        out.put_slice(b",\"organization_name\":");
        put_str(out, &self.organization_name);
        out.put_slice(b",\"application_name\":");
        put_str(out, &self.application_name);
        out.put_slice(b",\"installation_name\":");
        put_str(out, &self.installation_name);
        out.put_slice(b",\"role_label\":");
        put_str(out, &self.role_label);
        out.put_slice(if self.is_default {
            b",\"is_default\":true}"
        } else {
            b",\"is_default\":false}"
        });
    }

    /// A capacity that fits the public JSON unless many characters need escaping.
    fn public_json_len_hint(&self, handle: &str) -> usize {
        128 + handle.len()
            + self.organization_name.len()
            + self.application_name.len()
            + self.installation_name.len()
            + self.role_label.len()
    }
}

// === BosContexts ===

/// The validated contexts of one tenant, in configuration order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BosContexts {
    tenant: Arc<str>,
    contexts: Vec<BosContext>,
}

impl BosContexts {
    /// Validates the `bos_context` tables of `tenant`: ids well-formed and unique, text fields
    /// non-empty, clients known to `client_exists`, at most one default per caller.
    pub(crate) fn build(
        tenant: &str,
        configs: &[BosContextConfig],
        client_exists: impl Fn(&str) -> bool,
    ) -> Result<Self, ContextError> {
        let tenant_arc: Arc<str> = Arc::from(tenant);
        let mut contexts: Vec<BosContext> = Vec::with_capacity(configs.len());
        for config in configs {
            if !is_valid_context_id(&config.id) {
                return Err(ContextError::InvalidId {
                    tenant: tenant.to_owned(),
                    id: config.id.clone(),
                });
            }
            let empty = [
                ("caller", &config.caller),
                ("client", &config.client),
                ("application_name", &config.application_name),
                ("installation_name", &config.installation_name),
                ("role_label", &config.role_label),
            ]
            .into_iter()
            .find(|(_, value)| value.is_empty());
            if let Some((field, _)) = empty {
                return Err(ContextError::EmptyField {
                    tenant: tenant.to_owned(),
                    id: config.id.clone(),
                    field,
                });
            }
            if !client_exists(&config.client) {
                return Err(ContextError::UnknownClient {
                    tenant: tenant.to_owned(),
                    id: config.id.clone(),
                    client: config.client.clone(),
                });
            }
            if contexts.iter().any(|c| c.id == config.id) {
                return Err(ContextError::DuplicateId {
                    tenant: tenant.to_owned(),
                    id: config.id.clone(),
                });
            }
            let second_default = config.is_default
                && contexts
                    .iter()
                    .any(|c| c.is_default && c.caller == config.caller);
            if second_default {
                return Err(ContextError::SeveralDefaults {
                    tenant: tenant.to_owned(),
                    caller: config.caller.clone(),
                });
            }
            contexts.push(BosContext::from_config(Arc::clone(&tenant_arc), config));
        }
        Ok(Self {
            tenant: tenant_arc,
            contexts,
        })
    }

    /// The tenant these contexts belong to.
    pub(crate) fn tenant(&self) -> &str {
        &self.tenant
    }

    /// Every context, in configuration order.
    #[cfg(test)]
    pub(crate) fn all(&self) -> &[BosContext] {
        &self.contexts
    }

    /// The contexts of `caller`, in configuration order.
    pub(crate) fn for_caller<'s>(
        &'s self,
        caller: &'s str,
    ) -> impl Iterator<Item = &'s BosContext> + 's {
        self.contexts.iter().filter(move |c| c.caller == caller)
    }

    /// The context `id` if it belongs to `caller`; `None` otherwise (whether it does not exist
    /// or belongs to someone else).
    pub(crate) fn get(&self, id: &str, caller: &str) -> Option<&BosContext> {
        self.contexts
            .iter()
            .find(|c| c.id == id && c.caller == caller)
    }

    /// The default context of `caller`, if it has one.
    #[cfg(test)]
    pub(crate) fn default_for(&self, caller: &str) -> Option<&BosContext> {
        self.contexts
            .iter()
            .find(|c| c.is_default && c.caller == caller)
    }
}

/// `[A-Za-z0-9._-]{1,64}`.
pub(crate) fn is_valid_context_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_CONTEXT_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}
