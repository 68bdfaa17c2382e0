//! Fuzz properties of the SOAP answer reader (the `soap_answer` target; `cargo test` replays
//! its checked-in corpus through [`answer`]), and the round-trip tool the unit tests share.
//!
//! Must not do IO: each property is a pure function of its input.

use std::sync::OnceLock;

use bytes::BytesMut;
use http_body_util::BodyExt;

use super::read::{read_answer, Answer};
use crate::catalog::plan::ToolPlan;
use crate::config::{CorrelationStrategy, Tool};
use crate::invoke::request::build_request;
use crate::invoke::translate::{translate_response, UnknownFields};
use crate::invoke::{CallContext, CorrelationPolicy, InvokeError, CORRELATION_ID_HEADER};

/// Deepest nesting the property reads (the server's default is deeper; shallower finds the
/// limit's edge sooner).
const DEPTH: usize = 32;

/// A tool whose input and output rules are the same XML paths (every supported member kind:
/// text, integer, number, boolean, nillable, attribute, `#text`, an array of elements with an
/// attribute, a repeated leaf), so an argument object written as an envelope and read back as
/// an answer is the same object.
pub(crate) const ROUND_TRIP: &str = r#"
name = "echo"
[downstream]
kind = "soap"
url = "http://echo.example/"
operation = "{urn:echo}Echo"
[[input]]
source = "Text"
exposed = "text"
[[input]]
source = "Count"
exposed = "count"
type = "integer"
[[input]]
source = "Ratio"
exposed = "ratio"
type = "number"
[[input]]
source = "Flag"
exposed = "flag"
type = "boolean"
[[input]]
source = "Maybe"
exposed = "maybe"
nillable = true
[[input]]
source = "Item/@id"
exposed = "item.id"
type = "integer"
[[input]]
source = "Item/#text"
exposed = "item.label"
[[input]]
source = "Rows/Row[*]/Name"
exposed = "rows[*].name"
[[input]]
source = "Rows/Row[*]/@n"
exposed = "rows[*].n"
type = "integer"
[[input]]
source = "Words"
exposed = "words"
type = "array"
"#;

/// [`ROUND_TRIP`] compiled, once.
pub(crate) fn round_trip_plan() -> &'static ToolPlan {
    static PLAN: OnceLock<ToolPlan> = OnceLock::new();
    PLAN.get_or_init(|| {
        let outputs = ROUND_TRIP
            .split("[[input]]")
            .skip(1)
            .map(|rule| format!("[[output]]{rule}"))
            .collect::<String>();
        let text = format!("{ROUND_TRIP}{outputs}");
        let tool: Tool = toml::from_str(&text).expect("the round-trip tool parses");
        ToolPlan::compile(&tool).expect("the round-trip tool compiles")
    })
}

/// The envelope `plan` writes for the JSON arguments `args`.
pub(crate) fn envelope(plan: &ToolPlan, args: &[u8]) -> Result<String, InvokeError> {
    request_parts(plan, args, CorrelationStrategy::None).map(|(_, _, body)| body)
}

/// The request `plan` makes of the JSON arguments `args`: its `Content-Type`, its `SOAPAction`
/// (empty when absent) and its body.
pub(crate) fn request_parts(
    plan: &ToolPlan,
    args: &[u8],
    strategy: CorrelationStrategy,
) -> Result<(String, String, String), InvokeError> {
    let mut bytes = args.to_vec();
    let value = simd_json::to_borrowed_value(&mut bytes)
        .map_err(|_| InvokeError::Request("arguments are not JSON".into()))?;
    let policy = CorrelationPolicy {
        strategy,
        header: CORRELATION_ID_HEADER,
    };
    let request = build_request(
        plan,
        &policy,
        &CallContext::new(None),
        &value,
        UnknownFields::Ignore,
    )?;
    let header = |name: &str| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let (content_type, action) = (header("content-type"), header("soapaction"));
    let body = ready(request.into_body().collect())
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body =
        String::from_utf8(body.to_vec()).map_err(|_| InvokeError::Request("not UTF-8".into()))?;
    Ok((content_type, action, body))
}

/// A `Full` body is ready at once: one poll collects it.
fn ready<F: std::future::Future>(future: F) -> F::Output {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

/// The request's operation element of [`ROUND_TRIP`], re-wrapped as an answer's body.
pub(crate) fn as_answer(envelope: &str) -> Option<String> {
    let start = envelope.find("<tns:Echo>")? + "<tns:Echo>".len();
    let end = envelope.find("</soapenv:Body>")?;
    let inner = envelope.get(start..end)?.replace("</tns:Echo>", "</wrap>");
    Some(format!(
        "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\" \
         xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"><s:Body>\
         <wrap xmlns:tns=\"urn:echo\">{inner}</s:Body></s:Envelope>"
    ))
}

/// The exposed result `plan`'s output rules make of the answer `xml`, or `None` when the answer
/// is refused or a fault.
pub(crate) fn exposed(plan: &ToolPlan, xml: &[u8]) -> Option<BytesMut> {
    let soap = plan.soap.as_ref()?;
    let Ok(Answer::Result(source)) = read_answer(xml, soap, plan.output.as_ref(), DEPTH) else {
        return None;
    };
    // Bounded: every input byte is written at most as a six-byte `\u00XX` escape.
    assert!(
        source.len() <= 6 * xml.len() + 64,
        "{} bytes of JSON from {} of XML",
        source.len(),
        xml.len()
    );
    let mut source = source.to_vec();
    let value = simd_json::to_borrowed_value(&mut source).expect("the reader writes JSON");
    let mut out = BytesMut::new();
    translate_response(plan.output.as_ref()?, false, &value, &mut out).ok()?;
    Some(out)
}

/// Any input:
/// - the reader never panics, and what it writes is JSON no more than six times the input;
/// - a fault's structured content is JSON;
/// - a result re-encodes: taken as the tool's arguments, written as an envelope and read back,
///   it is the same result (when the arguments are acceptable: a text typed integer is not).
pub fn answer(data: &[u8]) {
    let plan = round_trip_plan();
    let Some(soap) = plan.soap.as_ref() else {
        return;
    };
    if let Ok(Answer::Fault(fault)) = read_answer(data, soap, plan.output.as_ref(), DEPTH) {
        let mut json = fault.json.to_vec();
        assert!(
            simd_json::to_borrowed_value(&mut json).is_ok(),
            "fault JSON"
        );
        return;
    }
    let Some(first) = exposed(plan, data) else {
        return;
    };
    let Ok(envelope) = envelope(plan, &first) else {
        return;
    };
    let answer = as_answer(&envelope).expect("an envelope of the round-trip tool");
    let again = exposed(plan, answer.as_bytes()).expect("a written envelope reads back");
    let parse = |bytes: &BytesMut| {
        let mut bytes = bytes.to_vec();
        simd_json::to_owned_value(&mut bytes).expect("JSON")
    };
    let (first, again) = (parse(&first), parse(&again));
    assert!(same(&first, &again), "{first:?} != {again:?}: {answer}");
}

/// JSON equality: numbers by value (`1.0` is `1`: the writer writes an integral number as an
/// integer), the rest structurally.
fn same(a: &simd_json::OwnedValue, b: &simd_json::OwnedValue) -> bool {
    use simd_json::{OwnedValue as V, StaticNode as N};
    let number = |v: &V| match v {
        V::Static(N::I64(n)) => Some(*n as f64),
        V::Static(N::U64(n)) => Some(*n as f64),
        V::Static(N::F64(n)) => Some(*n),
        _ => None,
    };
    match (a, b) {
        (V::Array(x), V::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| same(p, q))
        }
        (V::Object(x), V::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k.as_str()).is_some_and(|w| same(v, w)))
        }
        _ => match (number(a), number(b)) {
            (Some(p), Some(q)) => p == q,
            _ => a == b,
        },
    }
}
