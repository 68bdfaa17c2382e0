//! Upstream cards of both shapes, the interface choice, and what the synthesized card keeps
//! and drops.

use super::*;

/// A 1.0 card as a2a-sdk 1.3.0 serves one (with a signature and skill security).
fn v1_card() -> Value {
    json!({
        "name": "Billing",
        "description": "Invoices and payments.",
        "version": "2.1.0",
        "provider": {"organization": "Acme", "url": "https://acme.example"},
        "documentationUrl": "https://docs.acme.example/billing",
        "supportedInterfaces": [
            {"url": "http://billing.internal:9000/", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
            {"url": "http://billing.internal:9000/v03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
            {"url": "http://billing.internal:9000/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": true, "pushNotifications": false,
                         "extensions": [{"uri": "https://x.example/ext/v1", "required": false}]},
        "securitySchemes": {"internal": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
        "securityRequirements": [{"schemes": {"internal": {"list": []}}}],
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": [{"id": "invoice", "name": "Invoice", "description": "Make an invoice.",
                    "tags": ["billing"], "securityRequirements": [{"schemes": {"internal": {"list": []}}}]}],
        "signatures": [{"protected": "eyJ...", "signature": "abc"}]
    })
}

/// A 0.3-only card (the shape a 0.3 server publishes).
fn v03_card() -> Value {
    json!({
        "name": "Legacy",
        "description": "Speaks 0.3 only.",
        "version": "1.0.0",
        "url": "http://legacy.internal:8000/",
        "preferredTransport": "JSONRPC",
        "protocolVersion": "0.3.0",
        "capabilities": {"streaming": false, "pushNotifications": true},
        "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"],
        "skills": [{"id": "s", "name": "S", "description": "d", "tags": [], "security": [{"k": []}]}]
    })
}

fn bytes(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap()
}

#[test]
fn a_1_0_card_picks_its_1_0_json_rpc_interface() {
    let card = parse(&bytes(&v1_card())).unwrap();
    assert_eq!(card.interface.version, Version::V1);
    assert_eq!(card.interface.url, "http://billing.internal:9000/");
    assert!(card.streaming);
    assert!(!card.push);
}

#[test]
fn a_0_3_card_is_normalized_and_talked_to_in_0_3() {
    let card = parse(&bytes(&v03_card())).unwrap();
    assert_eq!(card.interface.version, Version::V03);
    assert_eq!(card.interface.url, "http://legacy.internal:8000/");
    assert!(card.push);
    assert_eq!(
        card.card["supportedInterfaces"][0]["protocolBinding"],
        "JSONRPC"
    );
    // A 1.0 interface listed among additionalInterfaces is not made up: only what the card says.
    let mut grpc_only = v03_card();
    grpc_only["preferredTransport"] = "GRPC".into();
    assert_eq!(
        parse(&bytes(&grpc_only)).unwrap_err(),
        CardError::NoInterface
    );
}

#[test]
fn unusable_cards_are_refused() {
    assert_eq!(parse(b"[1]").unwrap_err(), CardError::NotAnObject);
    assert_eq!(parse(b"not json").unwrap_err(), CardError::NotAnObject);
    let mut ftp = v1_card();
    ftp["supportedInterfaces"] =
        json!([{"url": "ftp://x/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]);
    assert_eq!(parse(&bytes(&ftp)).unwrap_err(), CardError::NoInterface);
    let mut v2 = v1_card();
    v2["supportedInterfaces"] =
        json!([{"url": "http://x/", "protocolBinding": "JSONRPC", "protocolVersion": "2.0"}]);
    assert_eq!(parse(&bytes(&v2)).unwrap_err(), CardError::NoInterface);
    let mut many = v1_card();
    many["skills"] = Value::Array(vec![json!({"id": "s"}); MAX_SKILLS + 1]);
    assert_eq!(parse(&bytes(&many)).unwrap_err(), CardError::TooManySkills);
    assert_eq!(
        parse(&vec![b' '; MAX_CARD_BYTES + 1]).unwrap_err(),
        CardError::TooLarge
    );
}

#[test]
fn the_synthesized_card_is_the_runtimes_door_to_the_agent() {
    let card = parse(&bytes(&v1_card())).unwrap();
    let schemes = json!({"apiKey": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}});
    let requirements = json!([{"schemes": {"apiKey": {"list": []}}}]);
    let url = "https://edge.example/runtime/t/c/a2a/agents/billing";
    let served = synthesize(&card, url, &schemes, &requirements, false);
    assert_eq!(served["name"], "Billing");
    assert_eq!(served["provider"]["organization"], "Acme");
    assert_eq!(served["supportedInterfaces"][0]["url"], url);
    assert_eq!(served["supportedInterfaces"][1]["protocolVersion"], "0.3");
    assert_eq!(served["securitySchemes"], schemes);
    assert_eq!(served["securityRequirements"], requirements);
    assert!(served.get("signatures").is_none());
    assert!(served["skills"][0].get("securityRequirements").is_none());
    assert_eq!(served["skills"][0]["id"], "invoice");
    // Streams, so the runtime relays pushes itself.
    assert_eq!(served["capabilities"]["pushNotifications"], true);
    assert_eq!(served["capabilities"]["extendedAgentCard"], false);
    assert_eq!(
        served["capabilities"]["extensions"][0]["uri"],
        "https://x.example/ext/v1"
    );
    let text = served.to_string();
    assert!(!text.contains("billing.internal"), "{text}");
    assert!(served.get("url").is_none(), "no 0.3 members unless asked");

    let both = synthesize(&card, url, &schemes, &requirements, true);
    assert_eq!(both["url"], url);
    assert_eq!(both["preferredTransport"], "JSONRPC");
    assert!(both["skills"][0].get("security").is_none());

    let legacy = parse(&bytes(&v03_card())).unwrap();
    let served = synthesize(&legacy, url, &schemes, &requirements, false);
    assert!(served["skills"][0].get("security").is_none());
    assert_eq!(served["capabilities"]["streaming"], false);
    assert_eq!(served["capabilities"]["pushNotifications"], true);
}
