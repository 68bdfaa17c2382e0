//! The SOAP codec against hand-written envelopes, and a round trip (arguments → envelope →
//! answer → result) for arbitrary values of every supported shape.

use bytes::BytesMut;
use proptest::prelude::*;
use serde_json::{json, Value as Json};

use super::props::{as_answer, round_trip_plan};
use super::read::{read_answer, Answer, ReadError};
use crate::catalog::plan::ToolPlan;
use crate::config::{CorrelationStrategy, Tool};
use crate::invoke::InvokeError;

/// The orders operation: wrapped document/literal, qualified, with every member kind.
const ORDERS: &str = r#"
name = "get_order"
[downstream]
kind = "soap"
url = "http://orders.example/soap"
action = "urn:orders#GetOrder"
operation = "{urn:orders}GetOrder"
fault_details = ["OrderFault"]

[[downstream.header]]
element = "Trace"
[[downstream.header.field]]
name = "Id"
correlation_id = true
[[downstream.header.field]]
name = "Client"
value = "sluice & co"

[[input]]
source = "OrderId"
exposed = "order_id"
type = "integer"
required = true
[[input]]
source = "Filter/@status"
exposed = "status"
[[input]]
source = "Filter/#text"
exposed = "filter"
[[input]]
source = "Note"
exposed = "note"
nillable = true
[[input]]
source = "Tags"
exposed = "tags"
type = "array"

[[output]]
source = "Order/@id"
exposed = "id"
type = "integer"
[[output]]
source = "Order/Total/#text"
exposed = "total"
type = "number"
[[output]]
source = "Order/Total/@currency"
exposed = "currency"
[[output]]
source = "Order/Paid"
exposed = "paid"
type = "boolean"
[[output]]
source = "Order/Note"
exposed = "note"
nillable = true
[[output]]
source = "Order/Lines/Line[*]/Sku"
exposed = "lines[*].sku"
[[output]]
source = "Order/Lines/Line[*]/Qty"
exposed = "lines[*].qty"
type = "integer"
[[output]]
source = "Order/Tags"
exposed = "tags"
type = "array"
"#;

fn plan(text: &str) -> ToolPlan {
    let tool: Tool = toml::from_str(text).expect("tool");
    match ToolPlan::compile(&tool) {
        Ok(plan) => plan,
        Err(problems) => panic!("{problems:?}"),
    }
}

fn problems(text: &str) -> Vec<String> {
    let tool: Tool = toml::from_str(text).expect("tool");
    match ToolPlan::compile(&tool) {
        Ok(_) => Vec::new(),
        Err(problems) => problems.into_iter().map(|p| p.message).collect(),
    }
}

/// The request `args` makes: its headers of interest and the envelope.
fn request(plan: &ToolPlan, args: &str) -> Result<(String, String, String), InvokeError> {
    super::props::request_parts(
        plan,
        args.as_bytes(),
        CorrelationStrategy::ExternalOrExecutionId,
    )
}

/// Reads `xml` as the answer and translates it with the plan's output rules.
fn result(plan: &ToolPlan, xml: &str) -> Result<Json, ReadError> {
    let soap = plan.soap.as_ref().expect("soap");
    match read_answer(xml.as_bytes(), soap, plan.output.as_ref(), 64)? {
        Answer::Result(source) => Ok(translate(plan, source)),
        Answer::Fault(fault) => Ok(json!({
            "fault": serde_json::from_slice::<Json>(&fault.json).expect("fault json"),
            "text": fault.text,
        })),
    }
}

fn translate(plan: &ToolPlan, source: BytesMut) -> Json {
    let mut source = source.to_vec();
    let value = simd_json::to_borrowed_value(&mut source).expect("source json");
    let mut out = BytesMut::new();
    let output = plan.output.as_ref().expect("output rules");
    crate::invoke::translate::translate_response(output, false, &value, &mut out)
        .expect("translate");
    serde_json::from_slice(&out).expect("result json")
}

fn envelope11(body: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="utf-8"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><s:Body>{body}</s:Body></s:Envelope>"#
    )
}

#[test]
fn the_envelope_declares_namespaces_once_and_writes_children_in_rule_order() {
    let plan = plan(ORDERS);
    let (content_type, action, body) = request(
        &plan,
        r#"{"tags":["a","b<c"],"note":null,"filter":"x & y","status":"open","order_id":42}"#,
    )
    .expect("request");
    assert_eq!(content_type, "text/xml; charset=utf-8");
    assert_eq!(action, "\"urn:orders#GetOrder\"");
    // The correlation id is the execution id (no external id was given).
    let start = body.find("<tns:Id>").expect("id") + "<tns:Id>".len();
    let end = body.find("</tns:Id>").expect("id end");
    let id = &body[start..end];
    assert!(
        !id.is_empty() && id.bytes().all(|b| b.is_ascii_graphic()),
        "{id}"
    );
    let expected = format!(
        "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\" \
         xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xmlns:tns=\"urn:orders\">\
         <soapenv:Header><tns:Trace><tns:Id>{id}</tns:Id><tns:Client>sluice &amp; co</tns:Client>\
         </tns:Trace></soapenv:Header><soapenv:Body><tns:GetOrder><tns:OrderId>42</tns:OrderId>\
         <tns:Filter status=\"open\">x &amp; y</tns:Filter><tns:Note xsi:nil=\"true\"/>\
         <tns:Tags>a</tns:Tags><tns:Tags>b&lt;c</tns:Tags></tns:GetOrder></soapenv:Body>\
         </soapenv:Envelope>"
    );
    assert_eq!(body, expected);
}

#[test]
fn absent_optional_arguments_write_nothing_and_missing_required_ones_are_refused() {
    let plan = plan(ORDERS);
    let (_, _, body) = request(&plan, r#"{"order_id":7}"#).expect("request");
    assert!(
        body.contains("<tns:GetOrder><tns:OrderId>7</tns:OrderId></tns:GetOrder>"),
        "{body}"
    );
    let err = request(&plan, r#"{"status":"open"}"#).expect_err("order_id is required");
    assert_eq!(
        err.safe_message(),
        "Invalid argument 'order_id': required field is missing."
    );
    // A control character cannot be carried by XML 1.0.
    let err = request(&plan, r#"{"order_id":1,"filter":"a\u0001b"}"#).expect_err("control");
    assert!(err.is_invalid_arguments(), "{err}");
}

#[test]
fn soap12_puts_the_action_in_the_content_type() {
    let text = ORDERS.replace("kind = \"soap\"", "kind = \"soap\"\nversion = \"1.2\"");
    let (content_type, action, body) = request(&plan(&text), r#"{"order_id":1}"#).expect("request");
    assert_eq!(
        content_type,
        "application/soap+xml; charset=utf-8; action=\"urn:orders#GetOrder\""
    );
    assert_eq!(action, "");
    assert!(body.starts_with(
        "<soapenv:Envelope xmlns:soapenv=\"http://www.w3.org/2003/05/soap-envelope\""
    ));
}

#[test]
fn rpc_parts_are_unqualified_and_document_parts_sit_in_the_body() {
    let rpc = r#"
name = "add"
[downstream]
kind = "soap"
url = "http://calc.example/"
operation = "c:Add"
style = "rpc"
namespaces = { c = "urn:calc" }
[[input]]
source = "a"
exposed = "a"
type = "integer"
[[input]]
source = "b/c:Inner"
exposed = "inner"
"#;
    let (_, _, body) = request(&plan(rpc), r#"{"a":1,"inner":"x"}"#).expect("request");
    assert!(
        body.contains("<soapenv:Body><c:Add><a>1</a><b><c:Inner>x</c:Inner></b></c:Add>"),
        "{body}"
    );
    let document = rpc.replace("style = \"rpc\"", "style = \"document\"");
    let (_, _, body) = request(&plan(&document), r#"{"a":1}"#).expect("request");
    assert!(
        body.contains("<soapenv:Body><c:a>1</c:a></soapenv:Body></soapenv:Envelope>"),
        "{body}"
    );
}

#[test]
fn an_answer_becomes_typed_json_with_arrays_of_one_and_nil() {
    let plan = plan(ORDERS);
    let xml = envelope11(
        r#"<r:GetOrderResponse xmlns:r="urn:orders"><r:Order id="7">
             <r:Total currency="EUR"> 12.50 </r:Total><r:Paid>1</r:Paid>
             <r:Note xsi:nil="true"/><r:Ignored><deep/></r:Ignored>
             <r:Lines><r:Line><r:Sku>A&amp;1</r:Sku><r:Qty>+003</r:Qty></r:Line></r:Lines>
             <r:Tags>only</r:Tags>
           </r:Order></r:GetOrderResponse>"#,
    );
    assert_eq!(
        result(&plan, &xml),
        Ok(json!({
            "id": 7, "total": 12.5, "currency": "EUR", "paid": true, "note": null,
            "lines": [{"sku": "A&1", "qty": 3}], "tags": ["only"],
        }))
    );
    // Many lines, the SOAP 1.2 envelope, unqualified children, CDATA and character references.
    let xml = r#"<env:Envelope xmlns:env="http://www.w3.org/2003/05/soap-envelope"><env:Header><h/></env:Header><env:Body><GetOrderResponse><Order><Lines><Line><Sku><![CDATA[<x>]]></Sku></Line><Line><Sku>&#65;&#x42;</Sku><Qty>-0</Qty></Line></Lines><Tags>a</Tags><Tags>b</Tags></Order></GetOrderResponse></env:Body></env:Envelope>"#;
    assert_eq!(
        result(&plan, xml),
        Ok(json!({"lines": [{"sku": "<x>"}, {"sku": "AB", "qty": 0}], "tags": ["a", "b"]}))
    );
    // An element in another namespace is not the one the rules name.
    let xml = envelope11(
        r#"<GetOrderResponse><Order xmlns:o="urn:other"><o:Paid>true</o:Paid></Order></GetOrderResponse>"#,
    );
    assert_eq!(result(&plan, &xml), Ok(json!({})));
}

#[test]
fn a_value_that_is_not_of_its_type_is_kept_as_text() {
    let plan = plan(ORDERS);
    let xml = envelope11(
        "<GetOrderResponse><Order id=\"x1\"><Paid>maybe</Paid><Total>INF</Total></Order></GetOrderResponse>",
    );
    assert_eq!(
        result(&plan, &xml),
        Ok(json!({"id": "x1", "paid": "maybe", "total": "INF"}))
    );
}

#[test]
fn faults_of_both_versions_carry_code_message_and_declared_detail_only() {
    let plan = plan(ORDERS);
    let xml = envelope11(
        r#"<s:Fault><faultcode>s:Client</faultcode><faultstring>order 9 not found
    at com.example.Orders.get(Orders.java:12)</faultstring><detail><o:OrderFault xmlns:o="urn:orders"><o:Code>404</o:Code></o:OrderFault><Trace>secret stack</Trace></detail></s:Fault>"#,
    );
    assert_eq!(
        result(&plan, &xml),
        Ok(json!({
            "fault": {"faultcode": "Client", "faultstring": "order 9 not found",
                      "detail": {"OrderFault": {"Code": "404"}}},
            "text": "SOAP fault Client: order 9 not found",
        }))
    );
    let xml = r#"<e:Envelope xmlns:e="http://www.w3.org/2003/05/soap-envelope"><e:Body><e:Fault><e:Code><e:Value>e:Sender</e:Value><e:Subcode><e:Value>x:Invalid</e:Value></e:Subcode></e:Code><e:Reason><e:Text xml:lang="en">bad input at http://orders.example/soap</e:Text></e:Reason><e:Detail><Trace>x</Trace></e:Detail></e:Fault></e:Body></e:Envelope>"#;
    assert_eq!(
        result(&plan, xml),
        Ok(json!({
            "fault": {"faultcode": "Sender", "subcode": "Invalid",
                      "faultstring": "bad input at [redacted]", "detail": null},
            "text": "SOAP fault Sender: bad input at [redacted]",
        }))
    );
}

#[test]
fn unsafe_or_broken_answers_are_refused() {
    let plan = plan(ORDERS);
    let bomb = r#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body>&lol2;</s:Body></s:Envelope>"#;
    assert_eq!(
        result(&plan, bomb),
        Err(ReadError::Refused("a document type declaration (DTD)"))
    );
    let entity =
        envelope11("<GetOrderResponse><Order><Paid>&ext;</Paid></Order></GetOrderResponse>");
    assert_eq!(
        result(&plan, &entity),
        Err(ReadError::Refused("an entity reference"))
    );
    assert_eq!(result(&plan, "{\"json\":1}"), Err(ReadError::NotSoap));
    assert_eq!(result(&plan, ""), Err(ReadError::NotSoap));
    assert_eq!(result(&plan, "<a><b></a>"), Err(ReadError::NotSoap));
    assert_eq!(
        result(&plan, &envelope11("<a><b></a>")),
        Err(ReadError::NotXml)
    );
    assert_eq!(
        result(&plan, &envelope11("<GetOrderResponse><Order>")),
        Err(ReadError::NotXml)
    );
    assert_eq!(
        result(&plan, "<Envelope><Body/></Envelope>"),
        Err(ReadError::NotSoap)
    );
    let deep = envelope11(&format!("{}{}", "<a>".repeat(100), "</a>".repeat(100)));
    assert_eq!(result(&plan, &deep), Err(ReadError::TooDeep(64)));
}

#[test]
fn soap_plans_refuse_what_xml_cannot_carry() {
    let base = r#"
name = "t"
[downstream]
kind = "soap"
url = "http://x/"
operation = "{urn:x}Op"
"#;
    let with = |rules: &str| problems(&format!("{base}{rules}"));
    assert!(
        with("[[input]]\nsource = \"a[*][*]\"\nexposed = \"a[*][*]\"\n")
            .iter()
            .any(|p| p.contains("[*][*]"))
    );
    assert!(with("[[input]]\nsource = \"@a/b\"\nexposed = \"a.b\"\n")
        .iter()
        .any(|p| p.contains("attribute")));
    assert!(with("[[input]]\nsource = \"q:a\"\nexposed = \"a\"\n")
        .iter()
        .any(|p| p.contains("not declared")));
    assert!(with("[[input]]\nsource = \"1a\"\nexposed = \"a\"\n")
        .iter()
        .any(|p| p.contains("cannot start")));
    assert!(
        with("[[input]]\nsource = \"a\"\nexposed = \"a\"\nlocation = \"query\"\n")
            .iter()
            .any(|p| p.contains("envelope"))
    );
    assert!(problems(&base.replace("{urn:x}Op", "Op"))
        .iter()
        .any(|p| p.contains("no namespace")));
    assert!(problems(&format!("keep_unmapped_output = true\n{base}"))
        .iter()
        .any(|p| p.contains("keep_unmapped_output")));
}

// === round trip ===

/// Text that XML 1.0 carries (no C0 controls but tab and line feed; CR is written as `&#13;`).
fn xml_text() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[ -~\t\n\r\u{e9}\u{4e2d}\u{1f600}<>&\"']{0,12}").expect("regex")
}

/// Non-blank text (a `#text` member is only read back when it is not blank).
fn label() -> impl Strategy<Value = String> {
    xml_text().prop_filter("not blank", |s| !s.trim().is_empty())
}

fn arguments() -> impl Strategy<Value = Json> {
    (
        proptest::option::of(xml_text()),
        proptest::option::of(any::<i64>()),
        proptest::option::of(-1e6f64..1e6),
        proptest::option::of(any::<bool>()),
        proptest::option::of(proptest::option::of(xml_text())),
        proptest::option::of((any::<i32>(), label())),
        proptest::option::of(proptest::collection::vec((label(), any::<u16>()), 1..4)),
        proptest::option::of(proptest::collection::vec(xml_text(), 1..4)),
    )
        .prop_map(|(text, count, ratio, flag, maybe, item, rows, words)| {
            let mut args = serde_json::Map::new();
            if let Some(text) = text {
                args.insert("text".into(), text.into());
            }
            if let Some(count) = count {
                args.insert("count".into(), count.into());
            }
            if let Some(ratio) = ratio {
                args.insert("ratio".into(), ratio.into());
            }
            if let Some(flag) = flag {
                args.insert("flag".into(), flag.into());
            }
            if let Some(maybe) = maybe {
                args.insert("maybe".into(), maybe.map_or(Json::Null, Json::from));
            }
            if let Some((id, label)) = item {
                args.insert("item".into(), json!({"id": id, "label": label}));
            }
            if let Some(rows) = rows {
                let rows: Vec<Json> = rows
                    .into_iter()
                    .map(|(name, n)| json!({"name": name, "n": n}))
                    .collect();
                args.insert("rows".into(), rows.into());
            }
            if let Some(words) = words {
                args.insert("words".into(), words.into());
            }
            Json::Object(args)
        })
}

/// Takes the `ratio` member out.
fn ratio(value: &mut Json) -> Option<f64> {
    value.as_object_mut()?.remove("ratio")?.as_f64()
}

proptest! {
    #[test]
    fn arguments_survive_the_envelope_and_the_answer_reader(args in arguments()) {
        let plan = round_trip_plan();
        let (_, _, envelope) = request(plan, &args.to_string()).expect("request");
        let xml = as_answer(&envelope).expect("the operation element");
        let got = result(plan, &xml).expect("read back");
        // serde_json's float parsing (which reads `got` here) may be one unit in the last
        // place off: the ratio is compared within that, the rest exactly.
        let (mut got, mut expected) = (got, args);
        let ratios = (ratio(&mut got), ratio(&mut expected));
        if let (Some(a), Some(b)) = ratios {
            prop_assert!((a - b).abs() <= b.abs() * 4.0 * f64::EPSILON, "{} vs {}", a, b);
        } else {
            prop_assert_eq!(ratios.0, ratios.1);
        }
        prop_assert_eq!(got, expected, "{}", xml);
    }
}

#[test]
fn the_fuzz_corpus_replays() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/soap_answer");
    let mut n_files = 0;
    for entry in std::fs::read_dir(&dir).expect("corpus dir") {
        let data = std::fs::read(entry.expect("entry").path()).expect("read corpus file");
        super::props::answer(&data);
        n_files += 1;
    }
    assert!(n_files >= 8, "corpus has only {n_files} files");
}

#[test]
fn ws_security_reads_its_password_at_the_first_call_and_faults_never_show_it() {
    let dir = std::env::temp_dir().join(format!("sluice-soap-secret-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("password");
    std::fs::write(&file, "s3cr&t\n").expect("write");
    let text = ORDERS.replace(
        "fault_details = [\"OrderFault\"]",
        &format!(
            "fault_details = [\"OrderFault\"]\nws_security = {{ username = \"svc\", secret_file = {:?} }}",
            file.display().to_string()
        ),
    );
    let plan = plan(&text);
    // Nothing was read while compiling: the plan holds a slot.
    assert!(plan
        .soap
        .as_ref()
        .is_some_and(|s| s.secret_values.0.get().is_none()));
    let (_, _, body) = request(&plan, r#"{"order_id":1}"#).expect("request");
    assert!(
        body.contains("<wsse:Username>svc</wsse:Username><wsse:Password Type=\"http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordText\">s3cr&amp;t</wsse:Password>"),
        "{body}"
    );
    assert!(
        !format!("{plan:?}").contains("s3cr&t"),
        "Debug shows no secret"
    );
    let xml = envelope11(
        "<s:Fault><faultcode>s:Server</faultcode><faultstring>login s3cr&amp;t refused</faultstring></s:Fault>",
    );
    assert_eq!(
        result(&plan, &xml).map(|v| v["fault"]["faultstring"].clone()),
        Ok(json!("login [redacted] refused"))
    );
    // A secret that cannot be read fails the call as a request that cannot be built.
    let missing = text.replace(&file.display().to_string(), "/nonexistent/sluice/secret");
    let err = request(&self::plan(&missing), r#"{"order_id":1}"#).expect_err("no secret");
    assert_eq!(
        err.safe_message(),
        "The downstream request could not be built."
    );
    let _ = std::fs::remove_dir_all(&dir);
}
