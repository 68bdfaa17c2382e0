//! Integration tests: `sluice import wsdl` (issue 18) on the fixture contracts written in
//! `tests/fixtures/soap/`: the generated configuration and the MCP schemas it lists are
//! snapshots (`UPDATE_SNAPSHOTS=1` rewrites them), the output passes `sluice check`,
//! unsupported and remote constructs are refused with their file, line and column, and an
//! imported tool works against a SOAP stub answering what its contract says.

use std::path::{Path, PathBuf};

use bytes::BytesMut;
use serde_json::{json, Value};
use sluice::catalog::Catalog;
use sluice::contract::{import_wsdl, Binding, WsdlOptions};

use crate::support::{call_body, full, Answer, Downstream, TempDir, TestServer};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/soap")
        .join(name)
}

fn options() -> WsdlOptions {
    WsdlOptions {
        tenant: "imported".into(),
        ..WsdlOptions::default()
    }
}

/// Compares `got` with the snapshot file `name` of the SOAP fixtures.
fn snapshot(name: &str, got: &str) {
    snapshot_at(&fixture(name), got);
}

/// The tools/list of client `app` of the imported configuration, pretty-printed.
fn listing(text: &str) -> String {
    let config = sluice::config::parse(text, "imported").expect("the output parses");
    let catalog = Catalog::from_config(&config).expect("the output is valid");
    let snapshot = catalog.current();
    let view = snapshot.client("imported", "app").expect("client app");
    let mut out = BytesMut::new();
    view.write_tools_list(&mut out);
    let tools: Value = serde_json::from_slice(&out).expect("json");
    serde_json::to_string_pretty(&tools).expect("pretty") + "\n"
}

#[test]
fn every_fixture_imports_into_a_checked_configuration_and_its_schemas() {
    for (wsdl, binding) in [
        ("calculator.wsdl", Binding::Soap11),
        ("calculator.wsdl", Binding::Soap12),
        ("orders.wsdl", Binding::Soap11),
    ] {
        let options = WsdlOptions {
            binding,
            ..options()
        };
        let (text, _) = import_wsdl(&fixture(wsdl), &options)
            .unwrap_or_else(|problems| panic!("{wsdl}: {problems:?}"));
        let stem = wsdl.trim_end_matches(".wsdl");
        let suffix = if binding == Binding::Soap12 {
            ".soap12"
        } else {
            ""
        };
        snapshot(&format!("{stem}{suffix}.toml.snap"), &text);
        snapshot(&format!("{stem}{suffix}.tools.json.snap"), &listing(&text));

        let dir = TempDir::new("import-check");
        let path = dir.join("sluice.toml");
        std::fs::write(&path, &text).expect("write");
        let mut out = Vec::new();
        assert!(
            sluice::catalog::check(&path, &mut out),
            "{wsdl}: {}",
            String::from_utf8_lossy(&out)
        );
    }
}

#[test]
fn write_like_operations_stay_unpublished_unless_asked_and_operations_can_be_chosen() {
    let (text, _) = import_wsdl(&fixture("orders.wsdl"), &options()).expect("import");
    let listed = listing(&text);
    assert!(
        listed.contains("\"get_order\"") && !listed.contains("\"create_order\""),
        "{listed}"
    );
    let (text, _) = import_wsdl(
        &fixture("orders.wsdl"),
        &WsdlOptions {
            include_writes: true,
            operations: Some(vec!["CreateOrder".into(), "ping".into()]),
            ..options()
        },
    )
    .expect("import");
    let listed = listing(&text);
    assert!(
        listed.contains("\"create_order\"") && listed.contains("\"ping\""),
        "{listed}"
    );
    assert!(!listed.contains("\"get_order\""), "{listed}");
}

#[test]
fn encoded_bodies_and_remote_imports_are_refused_with_their_place() {
    let dir = TempDir::new("import-refused");
    let calculator = std::fs::read_to_string(fixture("calculator.wsdl")).expect("fixture");
    let encoded = calculator.replacen(
        r#"<wsdl:operation name="Add"><soap:operation soapAction="urn:sluice:calculator#Add"/><wsdl:input><soap:body use="literal"/>"#,
        r#"<wsdl:operation name="Add"><soap:operation soapAction="urn:sluice:calculator#Add"/><wsdl:input><soap:body use="encoded"/>"#,
        1,
    );
    assert_ne!(encoded, calculator);
    let path = dir.join("encoded.wsdl");
    std::fs::write(&path, &encoded).expect("write");
    let problems = import_wsdl(&path, &options()).expect_err("encoded is refused");
    let shown: Vec<String> = problems.iter().map(ToString::to_string).collect();
    let line = encoded
        .lines()
        .position(|l| l.contains("use=\"encoded\""))
        .expect("the line")
        + 1;
    assert!(
        shown
            .iter()
            .any(|p| p.contains(&format!("encoded.wsdl:{line}:"))
                && p.contains("operation Add: document/encoded is not supported")),
        "{shown:?}"
    );

    let remote = calculator.replacen(
        "<wsdl:types>",
        r#"<wsdl:import namespace="urn:x" location="http://example.com/x.wsdl"/><wsdl:types>"#,
        1,
    );
    let path = dir.join("remote.wsdl");
    std::fs::write(&path, &remote).expect("write");
    let problems = import_wsdl(&path, &options()).expect_err("remote is refused");
    let shown: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert!(
        shown
            .iter()
            .any(|p| p.contains("remote.wsdl:") && p.contains("local files only")),
        "{shown:?}"
    );

    let dtd = format!("<!DOCTYPE x [<!ENTITY e \"e\">]>{calculator}");
    let path = dir.join("dtd.wsdl");
    std::fs::write(
        &path,
        dtd.replacen("<?xml version=\"1.0\" encoding=\"UTF-8\"?>", "", 1),
    )
    .expect("write");
    assert!(import_wsdl(&path, &options()).is_err(), "a DTD is refused");
}

#[tokio::test]
async fn an_imported_tool_calls_the_service_its_contract_describes() {
    // The stub answers GetOrder as orders.wsdl says: one line (an array of one), a nil note.
    let stub = Downstream::new()
        .fallback(Answer::with(|_| async {
            full(
                200,
                r#"<?xml version="1.0"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soap:Body><o:GetOrderResponse xmlns:o="urn:sluice:orders" xmlns:t="urn:sluice:orders:types"><o:Order id="9"><t:Status>open</t:Status><t:Placed>2026-12-03T10:00:00Z</t:Placed><t:Note xsi:nil="true"/><t:Line><t:Sku>AB-123</t:Sku><t:Qty>2</t:Qty><t:Price currency="EUR">4.50</t:Price></t:Line><t:Total currency="EUR">9.00</t:Total><t:PickupStore>Lisbon</t:PickupStore></o:Order></o:GetOrderResponse></soap:Body></soap:Envelope>"#,
            )
        }))
        .start()
        .await;
    let (text, _) = import_wsdl(
        &fixture("orders.wsdl"),
        &WsdlOptions {
            operations: Some(vec!["GetOrder".into()]),
            ..options()
        },
    )
    .expect("import");
    let text = text.replace("http://127.0.0.1:8700", &format!("http://{}", stub.addr));
    let server = TestServer::toml(&text).json_posts().start().await;
    let reply = server
        .post(
            "/runtime/imported/app/mcp",
            &[],
            &call_body(1, "get_order", json!({"order_id": 9})),
        )
        .await;
    let result = reply.json()["result"].clone();
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(
        result["structuredContent"],
        json!({"order": {
            "id": 9, "status": "open", "placed": "2026-12-03T10:00:00Z", "note": null,
            "line": [{"sku": "AB-123", "qty": 2, "price": {"value": 4.5, "currency": "EUR"}}],
            "total": {"value": 9.0, "currency": "EUR"}, "pickup_store": "Lisbon",
        }})
    );
    let sent = String::from_utf8_lossy(&stub.only().body).into_owned();
    assert!(
        sent.contains("<tns:GetOrder><tns:OrderId>9</tns:OrderId></tns:GetOrder>"),
        "{sent}"
    );
}

// === OpenAPI ===

fn openapi_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/openapi/petstore.yaml")
}

#[test]
fn the_petstore_imports_into_a_checked_configuration_and_reports_what_it_cannot_map() {
    let options = sluice::contract::OpenApiOptions {
        tenant: "imported".into(),
        ..Default::default()
    };
    let (text, notes) = sluice::contract::import_openapi(&openapi_fixture(), &options)
        .unwrap_or_else(|problems| panic!("{problems:?}"));
    snapshot_at(&openapi_fixture().with_extension("toml.snap"), &text);
    snapshot_at(
        &openapi_fixture().with_extension("tools.json.snap"),
        &listing(&text),
    );
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("upload_photo:") && n.contains("multipart/form-data")),
        "{notes:?}"
    );
    assert!(
        notes.iter().any(|n| n.contains("\"X-API-Key\"")),
        "the credential to fill in is named: {notes:?}"
    );
    let dir = TempDir::new("openapi-check");
    let path = dir.join("sluice.toml");
    std::fs::write(&path, &text).expect("write");
    let mut out = Vec::new();
    assert!(
        sluice::catalog::check(&path, &mut out),
        "{}",
        String::from_utf8_lossy(&out)
    );

    let swagger = dir.join("swagger.json");
    std::fs::write(&swagger, r#"{"swagger":"2.0","paths":{}}"#).expect("write");
    let problems = sluice::contract::import_openapi(&swagger, &options).expect_err("refused");
    assert!(
        problems[0].to_string().contains("only OpenAPI 3.0 and 3.1"),
        "{problems:?}"
    );
}

/// Compares `got` with the snapshot file at `path`, or rewrites it under `UPDATE_SNAPSHOTS=1`.
fn snapshot_at(path: &Path, got: &str) {
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(path, got).expect("write snapshot");
        return;
    }
    let want = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        want == got,
        "{} differs (UPDATE_SNAPSHOTS=1 rewrites it):\n--- want\n{want}\n--- got\n{got}",
        path.display()
    );
}

#[tokio::test]
async fn imported_openapi_tools_call_a_server_implementing_the_spec() {
    let pet = r#"{"id":7,"name":"Rex","status":"available","tags":["dog"],"born":null,"owner":{"email":"ann@example.com"},"chip":"x-internal"}"#;
    let page: &'static str = Box::leak(format!(r#"{{"total":1,"pets":[{pet}]}}"#).into_boxed_str());
    let api = Downstream::new()
        .route(
            "/v1/pets",
            Answer::with(move |request| async move {
                if request.method == http::Method::POST {
                    full(201, r#"{"id":8,"name":"Tom","status":"pending","tags":[]}"#)
                } else {
                    full(200, page)
                }
            }),
        )
        .route("/v1/pets/7", Answer::Plain(200, pet))
        .start()
        .await;
    let (text, _) = sluice::contract::import_openapi(
        &openapi_fixture(),
        &sluice::contract::OpenApiOptions {
            tenant: "imported".into(),
            ..Default::default()
        },
    )
    .expect("import");
    let text = text.replace("http://127.0.0.1:8701", &format!("http://{}", api.addr));
    let server = TestServer::toml(&text).json_posts().start().await;
    let call = |id: u64, tool: &'static str, args: Value| {
        let server = &server;
        async move {
            let reply = server
                .post("/runtime/imported/app/mcp", &[], &call_body(id, tool, args))
                .await;
            reply.json()["result"].clone()
        }
    };

    let listed = call(
        1,
        "list_pets",
        json!({"limit": 2, "status": "available", "tags": ["a", "b"]}),
    )
    .await;
    assert_eq!(listed["isError"], false, "{listed}");
    assert_eq!(
        listed["structuredContent"],
        json!({"total": 1, "pets": [{"id": 7, "name": "Rex", "status": "available", "tags": ["dog"], "born": null, "owner": {"email": "ann@example.com"}}]}),
        "mapped fields only (no `chip`); a null `born` is kept as the nullable it is"
    );
    let seen = api.seen();
    assert_eq!(
        seen.last().map(String::as_str),
        Some("/v1/pets?limit=2&status=available&tags=a&tags=b")
    );

    let created = call(2, "create_pet", json!({"name": "Tom", "status": "pending", "x_request_source": "mcp", "owner": {"email": "t@example.com"}})).await;
    assert_eq!(created["isError"], false, "{created}");
    assert_eq!(created["structuredContent"]["id"], 8);
    let request = api
        .requests()
        .into_iter()
        .find(|r| r.method == http::Method::POST)
        .expect("the POST");
    assert_eq!(request.headers["x-request-source"], "mcp");
    let body: Value = serde_json::from_slice(&request.body).expect("a JSON body");
    assert_eq!(
        body,
        json!({"name": "Tom", "status": "pending", "owner": {"email": "t@example.com"}})
    );

    let one = call(3, "get_pet", json!({"pet_id": 7})).await;
    assert_eq!(one["structuredContent"]["name"], "Rex", "{one}");
    let missing = call(4, "create_pet", json!({"status": "sold"})).await;
    assert_eq!(missing["isError"], true, "name is required: {missing}");
}
