//! Building the downstream HTTP request from a plan and the caller's arguments.
//!
//! Owns the `_schema_discovery` rules, URL assembly (template literals, percent-encoded path
//! segments, encoded query pairs — one pair per element for array fields), header placement and the JSON body
//! (or, for a SOAP tool, the envelope `soap/write.rs` writes with its `Content-Type` and `SOAPAction`). Pure: no IO, so benches
//! and tests can build requests without a network. Must not send anything (`client` does).

use std::fmt::Write as _;

use bytes::{Bytes, BytesMut};
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Request, Uri};
use http_body_util::Full;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC};
use simd_json::{BorrowedValue as Value, StaticNode};

use super::correlation::{CallContext, CorrelationPolicy};
use super::error::{ArgumentProblem, InvokeError};
use super::soap::write_envelope;
use super::translate::{write_root, UnknownFields, Walk, SCHEMA_DISCOVERY_FIELD};
use crate::catalog::plan::{ToolPlan, UrlPart};
use crate::config::Location;

/// Bytes left as they are in path segments and query components: RFC 3986 `unreserved`
/// (`ALPHA / DIGIT / "-" / "." / "_" / "~"`). Everything else is percent-encoded, so a value
/// can never add a segment (`/`), start a query (`?`) or a fragment (`#`), or split a pair (`&`, `=`).
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Initial capacity of a request body buffer; it grows as needed.
const BODY_CAPACITY: usize = 512;

/// Initial capacity of a SOAP envelope buffer (the envelope's own markup is ~300 bytes).
const ENVELOPE_CAPACITY: usize = 1024;

static APPLICATION_JSON: HeaderValue = HeaderValue::from_static("application/json");

/// The SOAP 1.1 action header.
static SOAP_ACTION: http::HeaderName = http::HeaderName::from_static("soapaction");

/// Builds the downstream request for one call.
pub(crate) fn build_request(
    plan: &ToolPlan,
    policy: &CorrelationPolicy,
    ctx: &CallContext,
    args: &Value<'_>,
    unknown: UnknownFields,
) -> Result<Request<Full<Bytes>>, InvokeError> {
    let empty;
    let obj = match args {
        Value::Object(obj) => &**obj,
        Value::Static(StaticNode::Null) => {
            empty = simd_json::borrowed::Object::default();
            &empty
        }
        _ => return Err(InvokeError::argument("", ArgumentProblem::NotAnObject)),
    };
    // Spec: "if _schema_discovery is the only argument, the Runtime rejects the call and
    // instructs the caller to use discover_tool_schema first". Alongside real arguments it is
    // removed: the walk only reads members the plan names.
    if obj.len() == 1 && obj.contains_key(SCHEMA_DISCOVERY_FIELD) {
        return Err(InvokeError::SchemaDiscoveryRequired);
    }

    let mut walk = Walk::new(&plan.input, true, unknown);
    walk.run(obj)?;

    // URL: literals as written, parameters percent-encoded, then query fields.
    let mut url = String::with_capacity(plan.url.literal_len + 24 * walk.params.len());
    for part in &plan.url.parts {
        match part {
            UrlPart::Literal(text) => url.push_str(text),
            UrlPart::Param { name, leaf } => {
                let value = walk
                    .params
                    .iter()
                    .find(|(idx, _)| idx == leaf)
                    .map(|(_, v)| *v);
                let Some(value) = value else {
                    // Path fields are required, so the walk has already failed without one.
                    return Err(InvokeError::argument(name, ArgumentProblem::Missing));
                };
                // Errors name the exposed argument (the caller's contract), not the template's.
                let exposed = plan
                    .input
                    .leaves
                    .get(*leaf as usize)
                    .map_or(&**name, |leaf| &*leaf.from_path);
                check_path_value(exposed, value)?;
                push_encoded(&mut url, value);
            }
        }
    }
    let mut has_query = plan.url.has_query;
    let mut headers = HeaderMap::with_capacity(plan.static_headers.len() + 4);
    for (name, value) in &plan.static_headers {
        headers.append(name.clone(), value.clone());
    }
    for (idx, value) in &walk.params {
        let Some(leaf) = plan.input.leaves.get(*idx as usize) else {
            continue;
        };
        match leaf.location {
            Location::Query => match value {
                // An `array` field: one pair per element, in order; none for `[]`. (A `[*]`
                // field already arrives here once per element.)
                Value::Array(elements) => {
                    for element in elements.iter() {
                        push_pair(&mut url, &mut has_query, &leaf.name, element);
                    }
                }
                scalar => push_pair(&mut url, &mut has_query, &leaf.name, scalar),
            },
            Location::Header => {
                let Some(name) = &leaf.header else { continue };
                let mut text = String::new();
                push_text(&mut text, value);
                let header_value = HeaderValue::from_str(&text).map_err(|_| {
                    InvokeError::argument(&leaf.from_path, ArgumentProblem::InvalidHeaderValue)
                })?;
                headers.insert(name.clone(), header_value);
            }
            Location::Path | Location::Body => {}
        }
    }
    let uri = Uri::try_from(url)
        .map_err(|_| InvokeError::Request("URL does not parse after substitution".into()))?;

    if let Some(soap) = &plan.soap {
        headers.insert(CONTENT_TYPE, soap.content_type.clone());
        if let Some(action) = &soap.soap_action {
            headers.insert(SOAP_ACTION.clone(), action.clone());
        }
    } else if !headers.contains_key(ACCEPT) {
        headers.insert(ACCEPT, APPLICATION_JSON.clone());
    }
    let body = if let Some(soap) = &plan.soap {
        // The correlation id goes in the envelope's header slots even when no HTTP header
        // carries it.
        let correlation = policy
            .downstream_value(ctx)
            .unwrap_or_else(|| ctx.execution_id.header_value());
        let mut buf = BytesMut::with_capacity(ENVELOPE_CAPACITY);
        write_envelope(&mut buf, soap, &walk.root, correlation.as_bytes())?;
        buf.freeze()
    } else if plan.sends_body {
        headers.insert(CONTENT_TYPE, APPLICATION_JSON.clone());
        let mut buf = BytesMut::with_capacity(BODY_CAPACITY);
        write_root(&mut buf, &walk.root, &plan.input.to);
        buf.freeze()
    } else {
        Bytes::new()
    };
    if let Some(value) = policy.downstream_value(ctx) {
        headers.insert(policy.header.clone(), value);
    }

    let mut request = Request::new(Full::new(body));
    *request.method_mut() = plan.method.clone();
    *request.uri_mut() = uri;
    *request.headers_mut() = headers;
    Ok(request)
}

/// Refuses a path value that would change which downstream path is called.
///
/// RFC 3986 §5.2.4 removes the dot segments `.` and `..` from a path, and so do most servers
/// and proxies in front of a downstream, so `/items/{id}/detail` with `id = ".."` would reach
/// `/detail`. Percent-encoding them (`%2E%2E`) is not enough: several servers decode that back
/// before routing. An empty value would turn `/items/{id}/detail` into `/items//detail`, which
/// many routers collapse into another path. All three are refused (invalid params, naming the
/// argument); every other byte that could add a segment, a query or a fragment (`/`, `?`,
/// `#`, `%`) is percent-encoded by [`push_encoded`].
fn check_path_value(name: &str, value: &Value<'_>) -> Result<(), InvokeError> {
    match value {
        Value::String(text) if text.is_empty() => Err(InvokeError::argument(
            name,
            ArgumentProblem::EmptyPathSegment,
        )),
        Value::String(text) if *text == "." || *text == ".." => {
            Err(InvokeError::argument(name, ArgumentProblem::DotPathSegment))
        }
        _ => Ok(()),
    }
}

/// Appends `?name=value` or `&name=value`, both percent-encoded.
fn push_pair(url: &mut String, has_query: &mut bool, name: &str, value: &Value<'_>) {
    url.push(if *has_query { '&' } else { '?' });
    *has_query = true;
    url.extend(percent_encoding::utf8_percent_encode(name, COMPONENT));
    url.push('=');
    push_encoded(url, value);
}

/// Appends a scalar's text form, percent-encoded as a URL component.
fn push_encoded(url: &mut String, value: &Value<'_>) {
    match value {
        Value::String(s) => url.extend(percent_encoding::utf8_percent_encode(s, COMPONENT)),
        // Numbers and booleans are unreserved characters already (digits, `-`, `.`, `+`
        // after `e` is encoded below), so route them through the encoder too.
        other => {
            let mut text = String::new();
            push_text(&mut text, other);
            url.extend(percent_encoding::utf8_percent_encode(&text, COMPONENT));
        }
    }
}

/// Appends a scalar's text form: strings as they are (no quotes), numbers and booleans as JSON
/// writes them (`1.5`, `1e300`, `true`).
fn push_text(out: &mut String, value: &Value<'_>) {
    match value {
        Value::String(s) => out.push_str(s),
        Value::Static(StaticNode::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
        Value::Static(StaticNode::I64(n)) => {
            let _ = write!(out, "{n}");
        }
        Value::Static(StaticNode::U64(n)) => {
            let _ = write!(out, "{n}");
        }
        // An integral double (`300.0`, accepted for an integer field) is written as the integer
        // it is: `/orders/300`, not `/orders/300.0`.
        Value::Static(StaticNode::F64(f)) if super::translate::integral(*f).is_some() => {
            let _ = write!(
                out,
                "{}",
                super::translate::integral(*f).unwrap_or_default()
            );
        }
        // Floats (and anything else; types are checked before this point) as JSON.
        other => {
            let mut buf = BytesMut::new();
            super::translate::write_value(&mut buf, other);
            out.push_str(&String::from_utf8_lossy(&buf));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{
        CorrelationStrategy, Downstream, FieldRule, FieldType, RestDownstream, Tool,
    };

    fn rule(source: &str, exposed: &str, ty: FieldType, location: Location) -> FieldRule {
        FieldRule::plain(source, exposed, ty, location)
    }

    fn plan(method: &str, url: &str, inputs: Vec<FieldRule>) -> ToolPlan {
        let tool = Tool {
            name: "t".into(),
            description: String::new(),
            published: true,
            schema_mode: Default::default(),
            log_payloads: false,
            scope: None,
            keep_unmapped_output: false,
            max_result_bytes: None,
            on_oversize: None,
            downstream: Downstream::Rest(RestDownstream {
                method: method.into(),
                url: url.into(),
                headers: [("X-Api".to_owned(), "k1".to_owned())].into(),
                timeout_ms: None,
            }),
            inputs,
            outputs: vec![],
        };
        ToolPlan::compile(&tool).unwrap()
    }

    /// Builds a request and renders it as `METHOD uri | header=value,… | body`.
    fn check(plan: &ToolPlan, args: &str, expected: &str) {
        let mut bytes = args.as_bytes().to_vec();
        let value = simd_json::to_borrowed_value(&mut bytes).unwrap();
        let policy = CorrelationPolicy {
            strategy: CorrelationStrategy::None,
            header: super::super::CORRELATION_ID_HEADER,
        };
        let got = match build_request(
            plan,
            &policy,
            &CallContext::new(None),
            &value,
            UnknownFields::Ignore,
        ) {
            Ok(req) => {
                let head = format!("{} {}", req.method(), req.uri());
                let headers: Vec<String> = req
                    .headers()
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.to_str().unwrap()))
                    .collect();
                let body =
                    futures::executor::block_on(http_body_util::BodyExt::collect(req.into_body()))
                        .unwrap()
                        .to_bytes();
                format!(
                    "{head} | {} | {}",
                    headers.join(","),
                    String::from_utf8_lossy(&body)
                )
            }
            Err(e) => format!("error: {}", e.safe_message()),
        };
        assert_eq!(got, expected, "{args}");
    }

    use FieldType::{Array as A, Boolean as B, Integer as I, Number as N, String as S};
    use Location::{Body, Header, Path, Query};

    #[test]
    fn places_fields_by_location() {
        let p = plan(
            "GET",
            "https://api.example/v1/customers/{id}/orders?limit=5",
            vec![
                rule("id", "customerId", S, Path),
                rule("status", "state", S, Query),
                rule("active", "active", B, Query),
                rule("X-Trace-Tag", "tag", S, Header),
                rule("page", "page", I, Query),
            ],
        );
        check(
            &p,
            r#"{"customerId":"a/b c?d#e%","state":"open&x=1","active":true,"tag":"t1","page":2}"#,
            "GET https://api.example/v1/customers/a%2Fb%20c%3Fd%23e%25/orders?limit=5&status=open%26x%3D1&active=true&page=2 | x-api=k1,x-trace-tag=t1,accept=application/json | ",
        );
        check(&p, r#"{"customerId":"é"}"#, "GET https://api.example/v1/customers/%C3%A9/orders?limit=5 | x-api=k1,accept=application/json | ");
        check(
            &p,
            r#"{"state":"x"}"#,
            "error: Invalid argument 'customerId': required field is missing.",
        );
        check(
            &p,
            r#"{"customerId":"1","tag":"a\nb"}"#,
            "error: Invalid argument 'tag': value cannot be sent as a header.",
        );
        check(
            &p,
            r#"{"customerId":".."}"#,
            "error: Invalid argument 'customerId': a path value cannot be \".\" or \"..\".",
        );
        check(
            &p,
            r#"{"customerId":"."}"#,
            "error: Invalid argument 'customerId': a path value cannot be \".\" or \"..\".",
        );
        check(
            &p,
            r#"{"customerId":""}"#,
            "error: Invalid argument 'customerId': a path value cannot be empty.",
        );
        check(&p, r#"{"customerId":"..."}"#, "GET https://api.example/v1/customers/.../orders?limit=5 | x-api=k1,accept=application/json | ");
        check(&p, r#"{"customerId":"%2E%2E"}"#, "GET https://api.example/v1/customers/%252E%252E/orders?limit=5 | x-api=k1,accept=application/json | ");
        check(&p, r#"{"_schema_discovery":true}"#, "error: This tool's input schema has not been discovered. Call discover_tool_schema for this tool first, then call it again with real arguments.");
        check(&p, r#"{"_schema_discovery":true,"customerId":"7"}"#, "GET https://api.example/v1/customers/7/orders?limit=5 | x-api=k1,accept=application/json | ");
    }

    #[test]
    fn nested_parameters_and_query_arrays() {
        let mut from = rule("from", "period.from", S, Query);
        from.required = true;
        let mut ids = rule("id", "ids", A, Query);
        ids.items = Some(I);
        let mut nums = rule("n[*]", "filter.nums[*]", N, Query);
        nums.items = Some(N);
        let p = plan(
            "GET",
            "http://h/r/{c}",
            vec![
                rule("c", "customer.id", I, Path),
                from,
                rule("to", "period.to", S, Query),
                rule("expand", "include", A, Query),
                rule("region[*]", "regions[*]", S, Query),
                ids,
                nums,
                rule("flag[*]", "flags[*]", B, Query),
                rule("X-Lang", "prefs.lang", S, Header),
            ],
        );
        check(
            &p,
            r#"{"customer":{"id":7},"period":{"from":"2024-01-01","to":"2024 Q1"},"include":["orders","a&b=c"],"regions":["north","süd"],"ids":[1,-2],"filter":{"nums":[1.5,2,1e300]},"flags":[true,false],"prefs":{"lang":"de"}}"#,
            "GET http://h/r/7?from=2024-01-01&to=2024%20Q1&expand=orders&expand=a%26b%3Dc&region=north&region=s%C3%BCd&id=1&id=-2&n=1.5&n=2&n=1e300&flag=true&flag=false | x-api=k1,x-lang=de,accept=application/json | ",
        );
        // Empty arrays send nothing.
        check(
            &p,
            r#"{"customer":{"id":7},"period":{"from":"x"},"include":[],"regions":[],"ids":[]}"#,
            "GET http://h/r/7?from=x | x-api=k1,accept=application/json | ",
        );
        // Required-ness through the parent object, and types of nested and array members.
        let missing = "error: Invalid argument 'period.from': required field is missing.";
        check(&p, r#"{"customer":{"id":7}}"#, missing);
        check(&p, r#"{"customer":{"id":7},"period":null}"#, missing);
        check(&p, r#"{"customer":{"id":7},"period":{"to":"y"}}"#, missing);
        check(
            &p,
            r#"{"period":{"from":"x"}}"#,
            "error: Invalid argument 'customer.id': required field is missing.",
        );
        check(
            &p,
            r#"{"customer":{"id":7},"period":"2024"}"#,
            "error: Invalid argument 'period': expected an object.",
        );
        check(
            &p,
            r#"{"customer":{"id":7},"period":{"from":"x"},"include":"orders"}"#,
            "error: Invalid argument 'include': expected an array.",
        );
        check(
            &p,
            r#"{"customer":{"id":7},"period":{"from":"x"},"ids":[1,"2"]}"#,
            "error: Invalid argument 'ids': element 1 must be an integer.",
        );
        check(
            &p,
            r#"{"customer":{"id":7},"period":{"from":"x"},"regions":["n",1]}"#,
            "error: Invalid argument 'regions[*]': expected a string.",
        );
    }

    #[test]
    fn integral_doubles_are_written_as_integers_in_the_url() {
        let p = plan(
            "GET",
            "http://h/orders/{id}",
            vec![rule("id", "id", I, Path), rule("page", "page", I, Query)],
        );
        check(
            &p,
            r#"{"id":300.0,"page":2.0}"#,
            r#"GET http://h/orders/300?page=2 | x-api=k1,accept=application/json | "#,
        );
    }

    #[test]
    fn body_only_when_needed() {
        let p = plan(
            "POST",
            "http://h/x",
            vec![rule("a.b", "x", S, Body), rule("q", "q", I, Query)],
        );
        check(
            &p,
            r#"{"x":"v","q":1}"#,
            r#"POST http://h/x?q=1 | x-api=k1,accept=application/json,content-type=application/json | {"a":{"b":"v"}}"#,
        );
        check(
            &p,
            r#"{}"#,
            r#"POST http://h/x | x-api=k1,accept=application/json,content-type=application/json | {}"#,
        );
        let p = plan("DELETE", "http://h/x", vec![rule("q", "q", I, Query)]);
        check(
            &p,
            r#"{"q":1}"#,
            "DELETE http://h/x?q=1 | x-api=k1,accept=application/json | ",
        );
        check(
            &p,
            r#"[1]"#,
            "error: Invalid arguments: arguments must be a JSON object.",
        );
    }
}
