//! Integration tests: invoke. Real downstream hyper servers on 127.0.0.1:0 record what they
//! received and answer scripted responses; the `Invoker` calls them over real sockets.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use sluice::catalog::plan::ToolPlan;
use sluice::config::{CorrelationStrategy, Tool};
use sluice::invoke::{
    CallContext, CorrelationPolicy, ErrorClass, InvokeError, Invoker, InvokerConfig,
    CORRELATION_ID_HEADER,
};

use tokio::net::TcpListener;

use crate::support::{Answer, Downstream, Received};

// === the downstream fake ===

/// What the downstream answers.
enum Script {
    Json(StatusCode, &'static str),
    /// A body sent in several chunks without a `Content-Length`.
    Chunked(Vec<Bytes>),
    /// Never answers.
    Hang,
}

/// A downstream that records what it received and answers what `respond` scripts.
async fn downstream(respond: impl Fn(&Received) -> Script + Send + Sync + 'static) -> Downstream {
    let respond = Arc::new(respond);
    Downstream::new()
        .fallback(Answer::with(move |got| {
            let script = respond(&got);
            async move {
                match script {
                    Script::Json(status, text) => http::Response::builder()
                        .status(status)
                        .header("content-type", "application/json")
                        .body(Full::new(Bytes::from_static(text.as_bytes())).boxed())
                        .unwrap(),
                    Script::Chunked(chunks) => http::Response::new(
                        StreamBody::new(futures::stream::iter(
                            chunks.into_iter().map(|c| Ok(Frame::data(c))),
                        ))
                        .boxed(),
                    ),
                    Script::Hang => std::future::pending().await,
                }
            }
        }))
        .start()
        .await
}

// === helpers ===

/// A tool from TOML, with `{addr}` replaced by the downstream address.
fn tool(toml_text: &str, addr: SocketAddr) -> ToolPlan {
    let text = toml_text.replace("{addr}", &addr.to_string());
    let tool: Tool = toml::from_str(&text).unwrap();
    ToolPlan::compile(&tool).unwrap()
}

fn invoker() -> Invoker {
    Invoker::new(InvokerConfig::default())
}

fn policy(strategy: CorrelationStrategy) -> CorrelationPolicy {
    CorrelationPolicy {
        strategy,
        header: CORRELATION_ID_HEADER,
    }
}

async fn call(
    invoker: &Invoker,
    plan: &ToolPlan,
    args: &str,
) -> Result<(String, bool), InvokeError> {
    let ctx = CallContext::new(None);
    invoker
        .call_bytes(
            "t",
            plan,
            &policy(CorrelationStrategy::ExecutionId),
            &ctx,
            args.as_bytes(),
        )
        .await
        .map(|out| (String::from_utf8(out.body.to_vec()).unwrap(), out.is_object))
}

fn json(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes).unwrap()
}

const CUSTOMER_TOOL: &str = r#"
name = "update_customer"
keep_unmapped_output = false
[downstream]
kind = "rest"
method = "PUT"
url = "http://{addr}/v1/clients/{clientId}"
headers = { "X-Api-Key" = "static-key" }
[[input]]
source = "clientId"
exposed = "customerId"
location = "path"
[[input]]
source = "client.name"
exposed = "customer.fullName"
required = true
[[input]]
source = "client.addresses[*].town"
exposed = "customer.addresses[*].city"
required = true
[[input]]
source = "client.addresses[*].zip"
exposed = "customer.addresses[*].postcode"
[[input]]
source = "grid[*][*]"
exposed = "matrix[*][*]"
type = "integer"
[[input]]
source = "tags"
exposed = "labels"
type = "array"
items = "string"
[[output]]
source = "data.client.name"
exposed = "customer.fullName"
[[output]]
source = "data.client.addresses[*].town"
exposed = "customer.addresses[*].city"
[[output]]
source = "data.scores[*][*]"
exposed = "scores[*][*]"
[[output]]
source = "data.id"
exposed = "id"
"#;

const RESPONSE: &str = r#"{"data":{"id":42,"client":{"name":"Ann","addresses":[{"town":"Oslo","zip":"0150"},{"town":"Bergen"}],"secret":"x"},"scores":[[1,2],[],[3]]},"debug":"internal"}"#;

// === translation ===

#[tokio::test]
async fn translates_both_ways_through_nested_arrays() {
    let down = downstream(|_| Script::Json(StatusCode::OK, RESPONSE)).await;
    let plan = tool(CUSTOMER_TOOL, down.addr);
    let args = r#"{"customerId":"c-1","customer":{"fullName":"Ann","addresses":[{"city":"Oslo","postcode":"0150"},{"city":"Bergen"}]},"matrix":[[1,2],[],[3]],"labels":["a","b"],"_schema_discovery":true,"unknown":1}"#;
    let (body, is_object) = call(&invoker(), &plan, args).await.unwrap();

    let got = down.only();
    assert_eq!(got.method, Method::PUT);
    assert_eq!(got.uri, "/v1/clients/c-1");
    assert_eq!(
        json(&got.body),
        json(br#"{"client":{"name":"Ann","addresses":[{"town":"Oslo","zip":"0150"},{"town":"Bergen"}]},"grid":[[1,2],[],[3]],"tags":["a","b"]}"#)
    );
    assert_eq!(got.headers["content-type"], "application/json");
    assert_eq!(got.headers["accept"], "application/json");
    assert_eq!(got.headers["x-api-key"], "static-key");

    assert!(is_object);
    assert_eq!(
        json(body.as_bytes()),
        json(br#"{"customer":{"fullName":"Ann","addresses":[{"city":"Oslo"},{"city":"Bergen"}]},"scores":[[1,2],[],[3]],"id":42}"#)
    );
}

#[tokio::test]
async fn keeps_top_level_unmapped_output_when_configured() {
    let down = downstream(|_| Script::Json(StatusCode::OK, RESPONSE)).await;
    let plan = tool(
        &CUSTOMER_TOOL.replace(
            "keep_unmapped_output = false",
            "keep_unmapped_output = true",
        ),
        down.addr,
    );
    let args = r#"{"customerId":"c","customer":{"fullName":"A","addresses":[]}}"#;
    let (body, _) = call(&invoker(), &plan, args).await.unwrap();
    let value = json(body.as_bytes());
    assert_eq!(value["debug"], "internal");
    assert_eq!(value["id"], 42);
    assert!(value.get("data").is_none(), "{value}");
}

#[tokio::test]
async fn passes_responses_through_unchanged_without_output_rules() {
    const RAW: &str = "{ \"a\" : [1, 2],\n \"b\": {\"c\": null} }";
    let down = downstream(|_| Script::Json(StatusCode::OK, RAW)).await;
    let plan = tool(
        r#"
name = "raw"
[downstream]
kind = "rest"
method = "GET"
url = "http://{addr}/raw"
"#,
        down.addr,
    );
    let (body, is_object) = call(&invoker(), &plan, "{}").await.unwrap();
    assert_eq!(body, RAW);
    assert!(is_object);
    let got = down.only();
    assert!(got.body.is_empty());
    assert!(got.headers.get("content-type").is_none());
}

/// Output rules that map top-level members to themselves, with unmapped members kept: the
/// answer is passed on as the downstream wrote it (checked to be a JSON object), and one
/// nested rule (`a.b`) or one unkept member makes it a real translation again.
#[tokio::test]
async fn identity_output_rules_pass_the_answer_on_unchanged() {
    const RAW: &str = "{ \"id\" : 7,\n \"b\": {\"c\": true, \"d\": 1}, \"z\": [1] }";
    const IDENTITY: &str = r#"
name = "same"
keep_unmapped_output = true
[downstream]
kind = "rest"
method = "GET"
url = "http://{addr}/raw"
[[output]]
source = "id"
exposed = "id"
type = "integer"
[[output]]
source = "b"
exposed = "b"
type = "object"
"#;
    let down = downstream(|got| match got.uri.as_str() {
        "/array" => Script::Json(StatusCode::OK, "[1]"),
        "/broken" => Script::Json(StatusCode::OK, "{\"id\":"),
        _ => Script::Json(StatusCode::OK, RAW),
    })
    .await;
    let plan = tool(IDENTITY, down.addr);
    assert!(plan.output_is_identity);
    let (body, is_object) = call(&invoker(), &plan, "{}").await.unwrap();
    assert_eq!((body.as_str(), is_object), (RAW, true));

    let array = tool(&IDENTITY.replace("/raw", "/array"), down.addr);
    assert!(matches!(
        call(&invoker(), &array, "{}").await,
        Err(InvokeError::InvalidResponse(
            sluice::invoke::ResponseProblem::NotAnObject
        ))
    ));
    let broken = tool(&IDENTITY.replace("/raw", "/broken"), down.addr);
    assert!(matches!(
        call(&invoker(), &broken, "{}").await,
        Err(InvokeError::InvalidResponse(
            sluice::invoke::ResponseProblem::NotJson
        ))
    ));

    // Not the identity: a nested rule drops the unmapped `b.d`; unkept members drop `z`.
    let nested = tool(
        &IDENTITY.replace(
            "source = \"b\"\nexposed = \"b\"\ntype = \"object\"",
            "source = \"b.c\"\nexposed = \"b.c\"",
        ),
        down.addr,
    );
    assert!(!nested.output_is_identity);
    let (body, _) = call(&invoker(), &nested, "{}").await.unwrap();
    assert_eq!(
        json(body.as_bytes()),
        json(br#"{"id":7,"b":{"c":true},"z":[1]}"#)
    );
    let unkept = tool(
        &IDENTITY.replace(
            "keep_unmapped_output = true",
            "keep_unmapped_output = false",
        ),
        down.addr,
    );
    assert!(!unkept.output_is_identity);
    let (body, _) = call(&invoker(), &unkept, "{}").await.unwrap();
    assert_eq!(
        json(body.as_bytes()),
        json(br#"{"id":7,"b":{"c":true,"d":1}}"#)
    );
}

// === locations ===

const LOCATIONS_TOOL: &str = r#"
name = "search"
[downstream]
kind = "rest"
method = "GET"
url = "http://{addr}/v1/items/{itemId}/search?fixed=1"
[[input]]
source = "itemId"
exposed = "item"
location = "path"
[[input]]
source = "q"
exposed = "query"
location = "query"
[[input]]
source = "limit"
exposed = "max"
type = "integer"
location = "query"
[[input]]
source = "X-Tenant-Tag"
exposed = "tenantTag"
location = "header"
[[input]]
source = "filter.kind"
exposed = "kind"
"#;

#[tokio::test]
async fn places_every_location() {
    let down = downstream(|_| Script::Json(StatusCode::OK, "{}")).await;
    let plan = tool(LOCATIONS_TOOL, down.addr);
    let args =
        r#"{"item":"a/b c?#%é","query":"x&y=z +","max":10,"tenantTag":"blue","kind":"book"}"#;
    call(&invoker(), &plan, args).await.unwrap();
    let got = down.only();
    assert_eq!(got.method, Method::GET);
    assert_eq!(
        got.uri,
        "/v1/items/a%2Fb%20c%3F%23%25%C3%A9/search?fixed=1&q=x%26y%3Dz%20%2B&limit=10"
    );
    assert_eq!(got.headers["x-tenant-tag"], "blue");
    // A GET with body fields sends them.
    assert_eq!(json(&got.body), json(br#"{"filter":{"kind":"book"}}"#));
}

/// Nested exposed paths and both forms of array query parameters, as in the catalog fixture's
/// `sales_report` and `get_customer`.
const REPORT_TOOL: &str = r#"
name = "sales_report"
[downstream]
kind = "rest"
method = "GET"
url = "http://{addr}/reports/{kind}?v=2"
[[input]]
source = "kind"
exposed = "report.kind"
location = "path"
[[input]]
source = "from"
exposed = "period.from"
format = "date"
required = true
location = "query"
[[input]]
source = "to"
exposed = "period.to"
location = "query"
[[input]]
source = "region[*]"
exposed = "regions[*]"
location = "query"
[[input]]
source = "expand"
exposed = "include"
type = "array"
items = "string"
location = "query"
[[input]]
source = "year"
exposed = "filter.years"
type = "array"
items = "integer"
location = "query"
[[input]]
source = "min[*]"
exposed = "filter.minimums[*]"
type = "number"
location = "query"
[[input]]
source = "open[*]"
exposed = "filter.open[*]"
type = "boolean"
location = "query"
[[input]]
source = "Accept-Language"
exposed = "prefs.language"
location = "header"
"#;

#[tokio::test]
async fn sends_nested_and_array_query_parameters() {
    let down = downstream(|_| Script::Json(StatusCode::OK, "{}")).await;
    let plan = tool(REPORT_TOOL, down.addr);
    let invoker = invoker();
    let cases: &[(&str, &str)] = &[
        (
            r#"{"report":{"kind":"sales/eu"},"period":{"from":"2024-01-01","to":"2024-03-31"}}"#,
            "/reports/sales%2Feu?v=2&from=2024-01-01&to=2024-03-31",
        ),
        // Only the required member of `period`.
        (
            r#"{"report":{"kind":"s"},"period":{"from":"2024-01-01"}}"#,
            "/reports/s?v=2&from=2024-01-01",
        ),
        // `[*]` leaves and `array` fields: one pair per element, in order, each encoded.
        (
            r#"{"report":{"kind":"s"},"period":{"from":"a"},"regions":["north","south & west"],"include":["orders","addresses"]}"#,
            "/reports/s?v=2&from=a&region=north&region=south%20%26%20west&expand=orders&expand=addresses",
        ),
        // Every scalar item type as JSON writes it, without quotes.
        (
            r#"{"report":{"kind":"s"},"period":{"from":"a"},"filter":{"years":[2023,-1],"minimums":[0.5,10,1e21],"open":[true,false]}}"#,
            "/reports/s?v=2&from=a&year=2023&year=-1&min=0.5&min=10&min=1e21&open=true&open=false",
        ),
        // Empty arrays send nothing; null counts as absent.
        (
            r#"{"report":{"kind":"s"},"period":{"from":"a","to":null},"regions":[],"include":[],"filter":{"years":[]}}"#,
            "/reports/s?v=2&from=a",
        ),
    ];
    for (args, _) in cases {
        call(&invoker, &plan, args).await.unwrap();
    }
    let got: Vec<String> = down.requests().into_iter().map(|r| r.uri).collect();
    let expected: Vec<&str> = cases.iter().map(|(_, uri)| *uri).collect();
    assert_eq!(got, expected);

    call(
        &invoker,
        &plan,
        r#"{"report":{"kind":"s"},"period":{"from":"a"},"prefs":{"language":"de-CH"}}"#,
    )
    .await
    .unwrap();
    let last = down.requests().pop().unwrap();
    assert_eq!(last.headers["accept-language"], "de-CH");
    assert!(last.body.is_empty());
}

#[tokio::test]
async fn nested_query_fields_are_validated() {
    let down = downstream(|_| Script::Json(StatusCode::OK, "{}")).await;
    let plan = tool(REPORT_TOOL, down.addr);
    let invoker = invoker();
    let cases: &[(&str, &str, &str)] = &[
        // Required-ness of `period.from`: missing parent, null parent, missing member.
        (
            r#"{"report":{"kind":"s"}}"#,
            "period.from",
            "required field is missing",
        ),
        (
            r#"{"report":{"kind":"s"},"period":null}"#,
            "period.from",
            "required field is missing",
        ),
        (
            r#"{"report":{"kind":"s"},"period":{"to":"b"}}"#,
            "period.from",
            "required field is missing",
        ),
        (
            r#"{"report":{"kind":"s"},"period":{"from":null}}"#,
            "period.from",
            "required field is missing",
        ),
        // The path parameter is required through its parent too.
        (
            r#"{"period":{"from":"a"}}"#,
            "report.kind",
            "required field is missing",
        ),
        (
            r#"{"report":{"kind":"s"},"period":"2024"}"#,
            "period",
            "expected an object",
        ),
        (
            r#"{"report":{"kind":"s"},"period":{"from":1}}"#,
            "period.from",
            "expected a string",
        ),
        (
            r#"{"report":{"kind":"s"},"period":{"from":"a"},"include":"orders"}"#,
            "include",
            "expected an array",
        ),
        (
            r#"{"report":{"kind":"s"},"period":{"from":"a"},"filter":{"years":[1,2.5]}}"#,
            "filter.years",
            "element 1 must be an integer",
        ),
        (
            r#"{"report":{"kind":"s"},"period":{"from":"a"},"regions":["n",{}]}"#,
            "regions[*]",
            "expected a string",
        ),
        (
            r#"{"report":{"kind":"s"},"period":{"from":"a"},"regions":"n"}"#,
            "regions",
            "expected an array",
        ),
    ];
    for (args, field, problem) in cases {
        let err = call(&invoker, &plan, args).await.unwrap_err();
        assert!(err.is_invalid_arguments(), "{args}: {err}");
        assert_eq!(err.field(), Some(*field), "{args}: {err}");
        assert_eq!(
            err.safe_message(),
            format!("Invalid argument '{field}': {problem}."),
            "{args}"
        );
    }
    assert!(down.requests().is_empty());
}

// === argument errors ===

#[tokio::test]
async fn rejects_bad_arguments_without_calling_the_downstream() {
    let down = downstream(|_| Script::Json(StatusCode::OK, "{}")).await;
    let plan = tool(CUSTOMER_TOOL, down.addr);
    let invoker = invoker();
    let cases: &[(&str, &str)] = &[
        (r#"{"customer":{"fullName":"A"}}"#, "customerId"),
        // A missing required object is reported as its required member.
        (r#"{"customerId":"c"}"#, "customer.fullName"),
        (
            r#"{"customerId":"c","customer":{"addresses":[]}}"#,
            "customer.fullName",
        ),
        (
            r#"{"customerId":"c","customer":{"fullName":"A","addresses":[{}]}}"#,
            "customer.addresses[*].city",
        ),
        (
            r#"{"customerId":"c","customer":{"fullName":"A","addresses":[{"city":7}]}}"#,
            "customer.addresses[*].city",
        ),
        (
            r#"{"customerId":"c","customer":{"fullName":"A"},"matrix":[[1,"2"]]}"#,
            "matrix[*][*]",
        ),
        (
            r#"{"customerId":"c","customer":{"fullName":"A"},"matrix":[1]}"#,
            "matrix[*]",
        ),
        (
            r#"{"customerId":"c","customer":{"fullName":"A"},"labels":"a"}"#,
            "labels",
        ),
        (
            r#"{"customerId":"c","customer":{"fullName":"A"},"labels":[1]}"#,
            "labels",
        ),
        (r#"[]"#, ""),
        (r#"{"customerId":"#, ""),
    ];
    for (args, field) in cases {
        let err = call(&invoker, &plan, args).await.unwrap_err();
        assert!(err.is_invalid_arguments(), "{args}: {err}");
        assert_eq!(err.class(), ErrorClass::InvalidArguments);
        assert_eq!(err.field(), Some(*field), "{args}: {err}");
        assert!(
            err.safe_message().contains(field),
            "{args}: {}",
            err.safe_message()
        );
    }
    assert!(down.requests().is_empty());
}

#[tokio::test]
async fn schema_discovery_marker_alone_is_rejected_and_alongside_is_stripped() {
    let down = downstream(|_| Script::Json(StatusCode::OK, "{}")).await;
    let plan = tool(CUSTOMER_TOOL, down.addr);
    let invoker = invoker();
    let err = call(&invoker, &plan, r#"{"_schema_discovery":true}"#)
        .await
        .unwrap_err();
    assert!(matches!(err, InvokeError::SchemaDiscoveryRequired));
    assert!(err.is_invalid_arguments());
    assert!(err.safe_message().contains("discover_tool_schema"));
    assert!(down.requests().is_empty());

    let args = r#"{"_schema_discovery":{"x":1},"customerId":"c","customer":{"fullName":"A"}}"#;
    call(&invoker, &plan, args).await.unwrap();
    let got = down.only();
    assert!(!String::from_utf8_lossy(&got.body).contains("_schema_discovery"));
    assert!(!got.uri.contains("_schema_discovery"));
}

// === downstream failures ===

const SIMPLE_TOOL: &str = r#"
name = "simple"
[downstream]
kind = "rest"
method = "POST"
url = "http://{addr}/internal/op"
timeout_ms = 150
[[input]]
source = "a"
exposed = "b"
[[output]]
source = "r"
exposed = "result"
"#;

#[tokio::test]
async fn times_out_a_downstream_that_never_answers() {
    let down = downstream(|_| Script::Hang).await;
    let plan = tool(SIMPLE_TOOL, down.addr);
    let err = call(&invoker(), &plan, r#"{"b":"x"}"#).await.unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert_eq!(err.class(), ErrorClass::Timeout);
    assert_eq!(
        err.safe_message(),
        "The downstream service did not answer within 150 ms."
    );
    assert_eq!(down.requests().len(), 1);
}

#[tokio::test]
async fn reports_connect_failure_on_a_closed_port() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let plan = tool(SIMPLE_TOOL, addr);
    let err = call(&invoker(), &plan, r#"{"b":"x"}"#).await.unwrap_err();
    assert!(err.is_connect(), "{err}");
    assert_eq!(err.class(), ErrorClass::Downstream);
    assert!(err.status().is_none());
}

#[tokio::test]
async fn reports_5xx_status_without_the_body() {
    let down = downstream(|_| {
        Script::Json(
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"error":"db-7.internal.corp password=hunter2"}"#,
        )
    })
    .await;
    let plan = tool(SIMPLE_TOOL, down.addr);
    let err = call(&invoker(), &plan, r#"{"b":"x"}"#).await.unwrap_err();
    assert_eq!(err.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
    assert_eq!(err.class(), ErrorClass::Downstream);
    assert_eq!(
        err.safe_message(),
        "The downstream service answered with status 503."
    );
}

#[tokio::test]
async fn rejects_invalid_json_bodies() {
    for body in ["<html>oops</html>", "{\"r\":", "[1,2]", ""] {
        let down = downstream(move |_| Script::Json(StatusCode::OK, body)).await;
        let plan = tool(SIMPLE_TOOL, down.addr);
        let err = call(&invoker(), &plan, r#"{"b":"x"}"#).await.unwrap_err();
        assert!(err.is_invalid_response(), "{body}: {err}");
        assert_eq!(err.class(), ErrorClass::Downstream);
    }
    // Without output rules, invalid JSON is caught too.
    let down = downstream(|_| Script::Json(StatusCode::OK, "not json")).await;
    let plan = tool(
        &SIMPLE_TOOL.replace("[[output]]\nsource = \"r\"\nexposed = \"result\"\n", ""),
        down.addr,
    );
    assert!(plan.output.is_none());
    let err = call(&invoker(), &plan, r#"{"b":"x"}"#).await.unwrap_err();
    assert!(err.is_invalid_response(), "{err}");
}

#[tokio::test]
async fn bounds_the_response_size() {
    let big: &'static str =
        Box::leak(format!("{{\"r\":\"{}\"}}", "x".repeat(4096)).into_boxed_str());
    let limited = Invoker::new(InvokerConfig {
        max_response_bytes: 1024,
        ..InvokerConfig::default()
    });

    // Declared by Content-Length.
    let down = downstream(move |_| Script::Json(StatusCode::OK, big)).await;
    let plan = tool(SIMPLE_TOOL, down.addr);
    let err = call(&limited, &plan, r#"{"b":"x"}"#).await.unwrap_err();
    assert!(err.is_invalid_response(), "{err}");
    assert_eq!(
        err.safe_message(),
        "The downstream service's response was too large."
    );

    // Streamed in chunks without a length.
    let down =
        downstream(|_| Script::Chunked((0..8).map(|_| Bytes::from(vec![b' '; 200])).collect()))
            .await;
    let plan = tool(SIMPLE_TOOL, down.addr);
    let err = call(&limited, &plan, r#"{"b":"x"}"#).await.unwrap_err();
    assert!(err.is_invalid_response(), "{err}");

    // The same chunks under the limit are joined and translated.
    let down = downstream(|_| {
        Script::Chunked(vec![
            Bytes::from_static(b"{\"r\":"),
            Bytes::from_static(b"[1,"),
            Bytes::from_static(b"2]}"),
        ])
    })
    .await;
    let plan = tool(SIMPLE_TOOL, down.addr);
    let (body, _) = call(&limited, &plan, r#"{"b":"x"}"#).await.unwrap();
    assert_eq!(body, r#"{"result":[1,2]}"#);
}

#[tokio::test]
async fn safe_messages_carry_no_downstream_internals() {
    let down = downstream(|_| {
        Script::Json(
            StatusCode::INTERNAL_SERVER_ERROR,
            r#"{"trace":"at db-7.internal.corp:5432"}"#,
        )
    })
    .await;
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap()
    };
    let hang = downstream(|_| Script::Hang).await;
    let bad = downstream(|_| Script::Json(StatusCode::OK, "<secret-html internal.corp>")).await;
    let with_credentials = SIMPLE_TOOL.replace("http://{addr}", "http://admin:s3cr3t@{addr}");
    let invoker = invoker();
    let mut errors = Vec::new();
    for addr in [down.addr, closed, hang.addr, bad.addr] {
        let plan = tool(&with_credentials, addr);
        errors.push((
            addr,
            call(&invoker, &plan, r#"{"b":"x"}"#).await.unwrap_err(),
        ));
    }
    assert!(errors[0].1.status().is_some() && errors[1].1.is_connect());
    assert!(errors[2].1.is_timeout() && errors[3].1.is_invalid_response());
    for (addr, err) in &errors {
        let msg = err.safe_message();
        for secret in [
            "internal",
            "corp",
            "5432",
            "admin",
            "s3cr3t",
            "127.0.0.1",
            "/internal/op",
            "http",
            "x-api",
        ] {
            assert!(
                !msg.to_lowercase().contains(secret),
                "{msg:?} contains {secret:?}"
            );
        }
        assert!(!msg.contains(&addr.port().to_string()), "{msg:?}");
    }
}

// === pooling ===

#[tokio::test]
async fn reuses_pooled_connections() {
    let down = downstream(|_| Script::Json(StatusCode::OK, r#"{"r":1}"#)).await;
    let plan = tool(SIMPLE_TOOL, down.addr);
    let invoker = Arc::new(invoker());
    for _ in 0..5 {
        call(&invoker, &plan, r#"{"b":"x"}"#).await.unwrap();
    }
    assert_eq!(down.requests().len(), 5);
    assert_eq!(down.connections(), 1);
}

// === correlation ===

#[test]
fn correlation_acceptance_table() {
    let long_ok = "a".repeat(128);
    let too_long = "a".repeat(129);
    let cases: &[(&[u8], bool)] = &[
        (b"abc", true),
        (b"0f8fad5b-d9cb-469f-a165-70867728950e", true),
        (b"req_1.2~x|y", true),
        (long_ok.as_bytes(), true),
        (too_long.as_bytes(), false),
        (b"", false),
        (b"has space", false),
        (b"a,b", false),
        (b"trace:1", false),
        (b"a/b", false),
        (b"{x}", false),
        (b"\xc3\xa9t\xc3\xa9", false),
    ];
    for (value, accepted) in cases {
        let mut headers = HeaderMap::new();
        headers.insert("x-correlation-id", HeaderValue::from_bytes(value).unwrap());
        let ctx = CallContext::from_headers(&headers);
        assert_eq!(
            ctx.external_correlation_id.is_some(),
            *accepted,
            "{:?}",
            String::from_utf8_lossy(value)
        );
        if let Some(id) = &ctx.external_correlation_id {
            assert_eq!(id.as_str().as_bytes(), *value);
        }
        // The execution id is never the client's value.
        assert_ne!(ctx.execution_id.as_str().as_bytes(), *value);
    }
    assert!(CallContext::from_headers(&HeaderMap::new())
        .external_correlation_id
        .is_none());
}

#[tokio::test]
async fn propagates_correlation_per_strategy() {
    let down = downstream(|_| Script::Json(StatusCode::OK, r#"{"r":1}"#)).await;
    let plan = tool(SIMPLE_TOOL, down.addr);
    let invoker = invoker();
    let mut accepted = HeaderMap::new();
    accepted.insert("x-correlation-id", HeaderValue::from_static("client-77"));
    let mut rejected = HeaderMap::new();
    rejected.insert("x-correlation-id", HeaderValue::from_static("bad value"));

    let cases = [
        (CorrelationStrategy::None, &accepted, None),
        (CorrelationStrategy::ExecutionId, &accepted, Some("exec")),
        (
            CorrelationStrategy::ExternalOrExecutionId,
            &accepted,
            Some("client-77"),
        ),
        (
            CorrelationStrategy::ExternalOrExecutionId,
            &rejected,
            Some("exec"),
        ),
    ];
    for (strategy, headers, expected) in cases {
        let ctx = CallContext::from_headers(headers);
        let policy = CorrelationPolicy {
            strategy,
            header: http::HeaderName::from_static("x-request-ref"),
        };
        invoker
            .call_bytes("t", &plan, &policy, &ctx, br#"{"b":"x"}"#)
            .await
            .unwrap();
        let got = down.requests().pop().unwrap();
        let seen = got
            .headers
            .get("x-request-ref")
            .map(|v| v.to_str().unwrap().to_owned());
        let expected = expected.map(|e| {
            if e == "exec" {
                ctx.execution_id.as_str().to_owned()
            } else {
                e.to_owned()
            }
        });
        assert_eq!(seen, expected, "{strategy:?}");
        // The client's own header is never forwarded as such.
        assert!(got.headers.get("x-correlation-id").is_none());
    }
}

// === plan compilation ===

#[test]
fn plan_problems_name_each_class() {
    let compile = |text: &str| -> Vec<String> {
        let tool: Tool = toml::from_str(text).unwrap();
        match ToolPlan::compile(&tool) {
            Ok(_) => vec![],
            Err(problems) => problems
                .into_iter()
                .map(|p| format!("{}: {}", p.field.unwrap_or_default(), p.message))
                .collect(),
        }
    };
    let base = |method: &str, url: &str, inputs: &str| {
        format!("name = \"t\"\n{inputs}\n[downstream]\nkind = \"rest\"\nmethod = \"{method}\"\nurl = \"{url}\"\n")
    };
    let input = |source: &str, exposed: &str, extra: &str| {
        format!("[[input]]\nsource = \"{source}\"\nexposed = \"{exposed}\"\n{extra}\n")
    };
    // One input field on `GET` or `POST http://h/x`.
    let get = |source, exposed, extra| base("GET", "http://h/x", &input(source, exposed, extra));
    let post = |source, exposed, extra| base("POST", "http://h/x", &input(source, exposed, extra));
    let check = |text: String, expected: &str| {
        let problems = compile(&text);
        assert_eq!(problems.len(), 1, "{text}\n{problems:#?}");
        assert!(
            problems[0].contains(expected),
            "{:?} lacks {expected:?}",
            problems[0]
        );
    };
    check(base("GET", "http://h/{id", ""), "unbalanced braces");
    check(base("GET", "ftp://h/x", ""), "http:// or https://");
    check(base("GET", "http://h h/x", ""), "not a valid absolute URL");
    check(
        base("GET", "http://h/{id}", ""),
        "no input field with location \"path\"",
    );
    check(
        get("id", "id", "location = \"path\""),
        "id: path field names parameter {id}",
    );
    check(post("a..b", "a", ""), "a: source path");
    check(
        post("a[*].b", "a.b", ""),
        "a.b: source path \"a[*].b\" and exposed path do not have the same [*] structure",
    );
    check(
        get("a", "a", "location = \"query\"\ntype = \"object\""),
        "a: a query field must be a scalar or an array of scalars",
    );
    check(
        get("a.b", "a", "location = \"header\""),
        "a: the source of a header field must be one header name",
    );
    check(
        get("X@Y", "a", "location = \"header\""),
        "a: \"X@Y\" is not a valid header name",
    );
    check(get("a[*]", "a[*]", "location = \"header\""), "a[*]: a header field must be a single scalar value, not an array (a list could be sent comma-joined");
    check(
        get("r", "regions[*]", "location = \"query\""),
        "regions[*]: source path \"r\" and exposed path do not have the same [*] structure",
    );
    check(
        get("r[*]", "r[*]", "location = \"query\"\ntype = \"object\""),
        "r[*]: a query field must be a scalar or an array of scalars",
    );
    check(base("GE T", "http://h/x", ""), "invalid HTTP method");
    // Every problem is reported, not just the first.
    let all = compile(&base(
        "GE T",
        "ftp://h/{p}",
        &format!(
            "{}{}",
            input("a..b", "a", ""),
            input(
                "x",
                "x",
                "location = \"query\"\ntype = \"array\"\nitems = \"object\""
            )
        ),
    ));
    assert_eq!(all.len(), 5, "{all:#?}");
}
