//! The three platform tools: their `tools/list` entries, argument parsing, and the results of
//! the two listing tools.
//!
//! - `bos_list_contexts {}`: the caller's contexts, each with its handle.
//! - `bos_list_tools {context_handle}`: the tools the context's client application sees.
//! - `bos_execute {context_handle, tool_name, arguments}`: one of those tools, answered inside
//!   the identity envelope (`envelope.rs`).
//!
//! Parsing works over a `serde_json::Value` or a simd-json tape value (the request body, not
//! copied) through [`ArgValue`]. Argument errors are [`ArgsError`], whose
//! [`code`](ArgsError::code) is -32602; whether the dispatcher answers them as JSON-RPC errors
//! or as `isError` tool results (2025-11-25 prefers the latter for input validation) is its
//! choice. Schemas declare `additionalProperties: false` and parsing enforces it, so a model
//! that misspells a member is told which one.
//!
//! Results are CallToolResults written straight into a `BytesMut`: `structuredContent` plus
//! its JSON text in `content[0].text`. The `write_*` functions leave the result object open so
//! the dispatcher can append era members (`resultType`, `_meta`) before closing it.
//!
//! Must not resolve handles or call tools.

#[cfg(test)]
use bytes::Bytes;
use bytes::{BufMut, BytesMut};

use super::context::BosContext;
use super::handle::MAX_HANDLE_LEN;
use crate::json_text::put_json_text_as_str;
#[cfg(test)]
use crate::json_text::put_str;
use crate::jsonrpc::echo;

// === Tool definitions ===

/// A platform tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BosTool {
    /// `bos_list_contexts`.
    ListContexts,
    /// `bos_list_tools`.
    ListTools,
    /// `bos_execute`.
    Execute,
}

impl BosTool {
    /// Every platform tool, in `tools/list` (name) order.
    pub(crate) const ALL: [BosTool; 3] =
        [BosTool::Execute, BosTool::ListContexts, BosTool::ListTools];

    /// The tool of `name`, if it is a platform tool.
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|tool| tool.name() == name)
    }

    /// The tool's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            BosTool::ListContexts => "bos_list_contexts",
            BosTool::ListTools => "bos_list_tools",
            BosTool::Execute => "bos_execute",
        }
    }

    /// The tool's `tools/list` entry: `{"name","title","description","inputSchema",
    /// "annotations"}` as JSON. Input schemas are JSON Schema 2020-12 (MCP's default dialect).
    pub(crate) fn definition(self) -> &'static str {
        match self {
            BosTool::ListContexts => LIST_CONTEXTS_ENTRY,
            BosTool::ListTools => LIST_TOOLS_ENTRY,
            BosTool::Execute => EXECUTE_ENTRY,
        }
    }
}

/// Every platform tool's `tools/list` entry, in name order.
pub(crate) fn definitions() -> [&'static str; 3] {
    BosTool::ALL.map(BosTool::definition)
}

const LIST_CONTEXTS_ENTRY: &str = concat!(
    r#"{"name":"bos_list_contexts","title":"List BOS contexts","#,
    r#""description":"Lists the contexts (organization, application, installation and role) you can act in. "#,
    r#"Each comes with an opaque context_handle: pass it to bos_list_tools and bos_execute. "#,
    r#"is_default marks the context to use when the user names none.","#,
    r#""inputSchema":{"type":"object","properties":{},"additionalProperties":false},"#,
    r#""annotations":{"readOnlyHint":true,"idempotentHint":true,"openWorldHint":false}}"#,
);

const LIST_TOOLS_ENTRY: &str = concat!(
    r#"{"name":"bos_list_tools","title":"List tools of a BOS context","#,
    r#""description":"Lists the tools available in one context, with their input schemas. "#,
    r#"Call one with bos_execute and the same context_handle.","#,
    r#""inputSchema":{"type":"object","properties":{"context_handle":{"type":"string","minLength":1,"maxLength":512,"#,
    r#""description":"A context_handle returned by bos_list_contexts."}},"#,
    r#""required":["context_handle"],"additionalProperties":false},"#,
    r#""annotations":{"readOnlyHint":true,"idempotentHint":true,"openWorldHint":false}}"#,
);

const EXECUTE_ENTRY: &str = concat!(
    r#"{"name":"bos_execute","title":"Run a tool in a BOS context","#,
    r#""description":"Runs one tool listed by bos_list_tools in the given context. "#,
    r#"The result is wrapped with the context it ran in: structuredContent.context names it, "#,
    r#"structuredContent.result is the tool's own result.","#,
    r#""inputSchema":{"type":"object","properties":{"#,
    r#""context_handle":{"type":"string","minLength":1,"maxLength":512,"#,
    r#""description":"A context_handle returned by bos_list_contexts."},"#,
    r#""tool_name":{"type":"string","minLength":1,"description":"The name of a tool listed by bos_list_tools for this context."},"#,
    r#""arguments":{"type":"object","description":"The tool's arguments, as its inputSchema from bos_list_tools describes."}},"#,
    r#""required":["context_handle","tool_name","arguments"],"additionalProperties":false},"#,
    r#""annotations":{"readOnlyHint":false,"destructiveHint":true,"openWorldHint":true}}"#,
);

// The schemas above spell the handle bound out; keep them in step with the verifier.
const _: () = assert!(MAX_HANDLE_LEN == 512);

// === Argument parsing ===

/// A JSON value the arguments can be read from: `&serde_json::Value`, or a simd-json tape
/// value borrowed from the request body. Strings borrow from the input (`'a`).
pub(crate) trait ArgValue<'a>: Copy {
    /// The member `key` of an object (`None` when absent or when `self` is not an object).
    fn member(self, key: &str) -> Option<Self>;
    /// `true` for JSON `null`.
    fn is_null(self) -> bool;
    /// `true` for a JSON object.
    fn is_object(self) -> bool;
    /// The string, when `self` is a JSON string.
    fn as_str(self) -> Option<&'a str>;
    /// The first member of an object whose name is not in `known`.
    fn unknown_member(self, known: &[&str]) -> Option<String>;
}

impl<'a> ArgValue<'a> for &'a serde_json::Value {
    fn member(self, key: &str) -> Option<Self> {
        self.as_object()?.get(key)
    }
    fn is_null(self) -> bool {
        serde_json::Value::is_null(self)
    }
    fn is_object(self) -> bool {
        serde_json::Value::is_object(self)
    }
    fn as_str(self) -> Option<&'a str> {
        serde_json::Value::as_str(self)
    }
    fn unknown_member(self, known: &[&str]) -> Option<String> {
        self.as_object()?
            .keys()
            .find(|k| !known.contains(&k.as_str()))
            .cloned()
    }
}

impl<'t, 'a: 't> ArgValue<'a> for simd_json::tape::Value<'t, 'a> {
    fn member(self, key: &str) -> Option<Self> {
        self.get(key)
    }
    fn is_null(self) -> bool {
        use simd_json::prelude::ValueAsScalar as _;
        self.as_null().is_some()
    }
    fn is_object(self) -> bool {
        simd_json::tape::Value::is_object(&self)
    }
    fn as_str(self) -> Option<&'a str> {
        use simd_json::prelude::ValueIntoString as _;
        self.into_string()
    }
    fn unknown_member(self, known: &[&str]) -> Option<String> {
        use simd_json::prelude::ValueIntoObject as _;
        let object = self.into_object()?;
        let unknown = object
            .keys()
            .find(|k| !known.contains(k))
            .map(str::to_owned);
        unknown
    }
}

/// Arguments that do not fit a platform tool's input schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ArgsError {
    /// The tool name is not a platform tool.
    #[error("Unknown tool: {0}")]
    UnknownTool(String),
    /// `arguments` is present but not an object.
    #[error("arguments must be an object")]
    NotAnObject,
    /// A required member is absent or `null`.
    #[error("'{member}' ({expected}) is required")]
    Missing {
        /// The member.
        member: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// A member has the wrong type.
    #[error("'{member}' must be {expected}")]
    WrongType {
        /// The member.
        member: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// A string member is empty.
    #[error("'{member}' must not be empty")]
    Empty {
        /// The member.
        member: &'static str,
    },
    /// A member the schema does not declare.
    #[error("unknown argument '{0}'")]
    UnknownMember(String),
}

impl ArgsError {
    /// The JSON-RPC code: invalid params.
    #[cfg(test)]
    pub(crate) fn code(&self) -> crate::jsonrpc::ErrorCode {
        crate::jsonrpc::ErrorCode::INVALID_PARAMS
    }
}

/// A parsed platform tool call. Strings and the inner arguments borrow from the input.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum BosCall<'a, V> {
    /// `bos_list_contexts {}`.
    ListContexts,
    /// `bos_list_tools {context_handle}`.
    ListTools {
        /// The handle, not yet verified.
        context_handle: &'a str,
    },
    /// `bos_execute {context_handle, tool_name, arguments}`.
    Execute {
        /// The handle, not yet verified.
        context_handle: &'a str,
        /// The tool to run in the context.
        tool_name: &'a str,
        /// The tool's arguments, an object.
        arguments: V,
    },
}

impl<V> BosCall<'_, V> {
    /// Which tool was called.
    #[cfg(test)]
    pub(crate) fn tool(&self) -> BosTool {
        match self {
            BosCall::ListContexts => BosTool::ListContexts,
            BosCall::ListTools { .. } => BosTool::ListTools,
            BosCall::Execute { .. } => BosTool::Execute,
        }
    }

    /// The context handle, for the tools that take one.
    #[cfg(test)]
    pub(crate) fn context_handle(&self) -> Option<&str> {
        match self {
            BosCall::ListContexts => None,
            BosCall::ListTools { context_handle } | BosCall::Execute { context_handle, .. } => {
                Some(context_handle)
            }
        }
    }
}

const HANDLE: &str = "context_handle";
const TOOL_NAME: &str = "tool_name";
const ARGUMENTS: &str = "arguments";

/// Parses the `arguments` of a `tools/call` for the platform tool `name`. `None` (absent or
/// `null` arguments) reads as `{}`.
pub(crate) fn parse_call<'a, V: ArgValue<'a>>(
    name: &str,
    arguments: Option<V>,
) -> Result<BosCall<'a, V>, ArgsError> {
    let tool =
        BosTool::from_name(name).ok_or_else(|| ArgsError::UnknownTool(echo(name).into_owned()))?;
    let arguments = arguments.filter(|v| !v.is_null());
    if let Some(arguments) = arguments {
        if !arguments.is_object() {
            return Err(ArgsError::NotAnObject);
        }
    }
    let known: &[&str] = match tool {
        BosTool::ListContexts => &[],
        BosTool::ListTools => &[HANDLE],
        BosTool::Execute => &[HANDLE, TOOL_NAME, ARGUMENTS],
    };
    if let Some(unknown) = arguments.and_then(|v| v.unknown_member(known)) {
        return Err(ArgsError::UnknownMember(echo(&unknown).into_owned()));
    }
    let member = |key: &str| {
        arguments
            .and_then(|v| v.member(key))
            .filter(|v| !v.is_null())
    };
    let string = |key: &'static str| -> Result<&'a str, ArgsError> {
        let value = member(key).ok_or(ArgsError::Missing {
            member: key,
            expected: "a string",
        })?;
        let s = value.as_str().ok_or(ArgsError::WrongType {
            member: key,
            expected: "a string",
        })?;
        if s.is_empty() {
            return Err(ArgsError::Empty { member: key });
        }
        Ok(s)
    };
    match tool {
        BosTool::ListContexts => Ok(BosCall::ListContexts),
        BosTool::ListTools => Ok(BosCall::ListTools {
            context_handle: string(HANDLE)?,
        }),
        BosTool::Execute => {
            let context_handle = string(HANDLE)?;
            let tool_name = string(TOOL_NAME)?;
            let inner = member(ARGUMENTS).ok_or(ArgsError::Missing {
                member: ARGUMENTS,
                expected: "an object",
            })?;
            if !inner.is_object() {
                return Err(ArgsError::WrongType {
                    member: ARGUMENTS,
                    expected: "an object",
                });
            }
            Ok(BosCall::Execute {
                context_handle,
                tool_name,
                arguments: inner,
            })
        }
    }
}

// === Results ===

/// Writes the `bos_list_contexts` result, leaving the object open:
/// `{"content":[{"type":"text","text":"<JSON>"}],"structuredContent":{"contexts":[…]},
/// "isError":false`. Each context's public JSON carries its handle.
pub(crate) fn write_list_contexts<'c, H: AsRef<str>>(
    out: &mut BytesMut,
    contexts: impl IntoIterator<Item = (&'c BosContext, H)>,
) {
    let mut structured = BytesMut::with_capacity(256);
    structured.put_slice(b"{\"contexts\":[");
    for (i, (context, handle)) in contexts.into_iter().enumerate() {
        if i > 0 {
            structured.put_u8(b',');
        }
        context.put_public_json(&mut structured, handle.as_ref());
    }
    structured.put_slice(b"]}");
    write_structured(out, &structured);
}

/// The whole `bos_list_contexts` result ([`write_list_contexts`], closed).
#[cfg(test)]
pub(crate) fn list_contexts_result<'c, H: AsRef<str>>(
    contexts: impl IntoIterator<Item = (&'c BosContext, H)>,
) -> Bytes {
    let mut out = BytesMut::new();
    write_list_contexts(&mut out, contexts);
    out.put_u8(b'}');
    out.freeze()
}

/// Writes the `bos_list_tools` result, leaving the object open:
/// `{"content":[…],"structuredContent":{"context":<context_json>,"tools":[<entry>,…]},
/// "isError":false`. `entries` are complete tool JSON objects (e.g. the catalog's
/// pre-serialized `tools/list` entries), copied as they are.
pub(crate) fn write_list_tools_entries<'e>(
    out: &mut BytesMut,
    context_json: &[u8],
    entries: impl IntoIterator<Item = &'e [u8]>,
) {
    let mut structured = BytesMut::with_capacity(256 + context_json.len());
    structured.put_slice(b"{\"context\":");
    structured.put_slice(context_json);
    structured.put_slice(b",\"tools\":[");
    for (i, entry) in entries.into_iter().enumerate() {
        if i > 0 {
            structured.put_u8(b',');
        }
        structured.put_slice(entry);
    }
    structured.put_slice(b"]}");
    write_structured(out, &structured);
}

/// The whole `bos_list_tools` result from `(name, description, input_schema_json)` triples:
/// each tool is written as `{"name":…,"description":…,"inputSchema":<schema>}`.
#[cfg(test)]
pub(crate) fn list_tools_result<'t>(
    context_json: &[u8],
    tools: impl IntoIterator<Item = (&'t str, &'t str, &'t [u8])>,
) -> Bytes {
    let entries: Vec<BytesMut> = tools
        .into_iter()
        .map(|(name, description, schema)| {
            let mut entry =
                BytesMut::with_capacity(48 + name.len() + description.len() + schema.len());
            entry.put_slice(b"{\"name\":");
            put_str(&mut entry, name);
            entry.put_slice(b",\"description\":");
            put_str(&mut entry, description);
            entry.put_slice(b",\"inputSchema\":");
            entry.put_slice(schema);
            entry.put_u8(b'}');
            entry
        })
        .collect();
    let mut out = BytesMut::new();
    write_list_tools_entries(&mut out, context_json, entries.iter().map(|e| &e[..]));
    out.put_u8(b'}');
    out.freeze()
}

/// `{"content":[{"type":"text","text":<structured as text>}],"structuredContent":<structured>,
/// "isError":false` (left open).
fn write_structured(out: &mut BytesMut, structured: &[u8]) {
    out.reserve(2 * structured.len() + 96);
    out.put_slice(b"{\"content\":[{\"type\":\"text\",\"text\":");
    put_json_text_as_str(out, structured);
    out.put_slice(b"}],\"structuredContent\":");
    out.put_slice(structured);
    out.put_slice(b",\"isError\":false");
}
