//! Tests of push notification checks: the address table, validation, resolution. Delivery is
//! tested in `delivery_tests.rs`.

use std::net::IpAddr;

use serde_json::json;

use super::*;

// === is_public ===

fn check_public(ip: &str, expected: bool) {
    let parsed: IpAddr = ip.parse().expect("test address parses");
    assert_eq!(is_public(parsed), expected, "{ip}");
}

#[test]
fn address_table() {
    let table = [
        // IPv4 non-public.
        ("0.0.0.0", false),
        ("0.1.2.3", false),
        ("10.0.0.1", false),
        ("10.255.255.255", false),
        ("100.64.0.1", false),
        ("100.127.255.255", false),
        ("127.0.0.1", false),
        ("127.255.0.1", false),
        ("169.254.169.254", false),
        ("172.16.0.1", false),
        ("172.31.255.255", false),
        ("192.0.0.1", false),
        ("192.0.0.9", false),
        ("192.0.2.1", false),
        ("192.88.99.1", false),
        ("192.168.1.1", false),
        ("198.18.0.1", false),
        ("198.19.255.255", false),
        ("198.51.100.7", false),
        ("203.0.113.9", false),
        ("224.0.0.1", false),
        ("239.255.255.250", false),
        ("240.0.0.1", false),
        ("255.255.255.255", false),
        // IPv4 public, including the neighbours of the blocks.
        ("8.8.8.8", true),
        ("1.1.1.1", true),
        ("9.255.255.255", true),
        ("11.0.0.1", true),
        ("100.63.255.255", true),
        ("100.128.0.1", true),
        ("172.15.255.255", true),
        ("172.32.0.1", true),
        ("192.0.1.1", true),
        ("192.167.255.255", true),
        ("192.169.0.1", true),
        ("198.17.255.255", true),
        ("198.20.0.1", true),
        ("223.255.255.255", true),
        // IPv6 non-public.
        ("::", false),
        ("::1", false),
        ("::ffff:127.0.0.1", false),
        ("::ffff:10.0.0.1", false),
        ("::ffff:169.254.169.254", false),
        ("::ffff:0.0.0.0", false),
        ("::127.0.0.1", false),
        ("::10.0.0.1", false),
        ("64:ff9b::7f00:1", false),
        ("64:ff9b::a9fe:a9fe", false),
        ("64:ff9b:1::1", false),
        ("100::1", false),
        ("2001::1", false),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", false),
        ("2001:2::1", false),
        ("2001:10::1", false),
        ("2001:db8::1", false),
        ("2002:7f00:1::1", false),
        ("2002:a00:1::1", false),
        ("2002:c0a8:101::1", false),
        ("3fff::1", false),
        ("5f00::1", false),
        ("fc00::1", false),
        ("fd12:3456::1", false),
        ("fe80::1", false),
        ("febf::1", false),
        ("fec0::1", false),
        ("ff02::1", false),
        ("ff0e::1", false),
        ("::ffff:0:7f00:1", false),
        ("1::1", false),
        ("4000::1", false),
        // IPv6 public.
        ("2606:4700::1111", true),
        ("2001:4860:4860::8888", true),
        ("2a00:1450:4001::1", true),
        ("::ffff:8.8.8.8", true),
        ("64:ff9b::808:808", true),
        ("2002:808:808::1", true),
        ("2001:1::1", true),
        ("2001:3::1", true),
        ("2001:4:112::1", true),
        ("2001:20::1", true),
        ("3fff:1000::1", true),
    ];
    for (ip, expected) in table {
        check_public(ip, expected);
    }
}

// === validate ===

pub(super) fn config(url: &str) -> PushConfig {
    PushConfig {
        id: "cfg-1".to_owned(),
        task_id: "task-1".to_owned(),
        url: url.to_owned(),
        token: None,
        authentication: None,
        extra: Map::new(),
    }
}

pub(super) fn strict() -> PushPolicy {
    PushPolicy::default()
}

pub(super) fn dev(allowed: &[&str]) -> PushPolicy {
    let hosts: Vec<String> = allowed.iter().map(|h| (*h).to_owned()).collect();
    PushPolicy::new(true, &hosts)
}

fn check_url(url: &str, policy: &PushPolicy, expected: Result<(), PushRefusal>) {
    assert_eq!(validate(&config(url), policy), expected, "{url}");
}

#[test]
fn urls() {
    let ok = Ok(());
    let bad = |why| Err(PushRefusal::BadUrl(why));
    check_url("https://hooks.example.com/a2a?x=1", &strict(), ok.clone());
    check_url("https://hooks.example.com", &strict(), ok.clone());
    check_url("HTTPS://Hooks.Example.COM:8443/P", &strict(), ok.clone());
    check_url("https://8.8.8.8/", &strict(), ok.clone());
    check_url("https://[2606:4700::1111]:443/", &strict(), ok.clone());
    check_url("https://under_score.example.com/", &strict(), ok.clone());
    check_url(
        "http://hooks.example.com/",
        &strict(),
        Err(PushRefusal::NotHttps),
    );
    check_url("http://hooks.example.com/", &dev(&[]), ok.clone());
    check_url(
        "ftp://hooks.example.com/",
        &strict(),
        bad("must be an absolute http(s) URL"),
    );
    check_url(
        "/relative",
        &strict(),
        bad("must be an absolute http(s) URL"),
    );
    check_url(
        "hooks.example.com",
        &strict(),
        bad("must be an absolute http(s) URL"),
    );
    check_url("", &strict(), bad("is not a valid URI"));
    check_url(
        "https://user:pw@hooks.example.com/",
        &strict(),
        bad("must not carry user information"),
    );
    check_url(
        "https://hooks.example.com/#frag",
        &strict(),
        bad("has a fragment"),
    );
    check_url(
        "https://hooks.example.com/a b",
        &strict(),
        bad("contains a space, a control character or a non-ASCII character"),
    );
    check_url(
        "https://hooks.example.com/\r\nX-Evil: 1",
        &strict(),
        bad("contains a space, a control character or a non-ASCII character"),
    );
    check_url(
        "https://hööks.example.com/",
        &strict(),
        bad("contains a space, a control character or a non-ASCII character"),
    );
    check_url("https://hooks.example.com:0/", &strict(), bad("has port 0"));
    check_url(
        "https://exa%6dple.com/",
        &strict(),
        bad("is not a valid URI"),
    );
    check_url(
        "https://exa!mple.com/",
        &strict(),
        bad("has an invalid host name"),
    );
    check_url("https://a..b/", &strict(), bad("has an invalid host name"));
    check_url(
        "https://[fe80::1%25eth0]/",
        &strict(),
        bad("has a malformed IPv6 host"),
    );
    // Numeric hosts the system resolver would read as IPv4.
    for url in [
        "https://2130706433/",
        "https://127.1/",
        "https://0x7f.0.0.1/",
        "https://hooks.0x7f/",
        "https://1.2.3.4.5/",
    ] {
        check_url(
            url,
            &strict(),
            bad("has a numeric host that is not a dotted IPv4 address"),
        );
    }
    let long = format!("https://hooks.example.com/{}", "a".repeat(MAX_URL_LEN));
    check_url(&long, &strict(), Err(PushRefusal::TooLong("URL")));
    let long_label = format!("https://{}.example.com/", "a".repeat(64));
    check_url(&long_label, &strict(), bad("has an invalid host name"));
}

#[test]
fn ip_literal_hosts() {
    let refused = Err(PushRefusal::NonPublicAddress);
    for url in [
        "https://127.0.0.1/",
        "https://10.0.0.1:8443/",
        "https://169.254.169.254/latest/meta-data/",
        "https://0.0.0.0/",
        "https://[::1]/",
        "https://[::ffff:127.0.0.1]/",
        "https://[::ffff:10.0.0.1]/",
        "https://[fc00::1]/",
        "https://[fe80::1]/",
    ] {
        check_url(url, &strict(), refused.clone());
    }
    // Allowlisted in any spelling of the same address.
    check_url("http://127.0.0.1:9000/", &dev(&["127.0.0.1"]), Ok(()));
    check_url("https://[::1]/", &dev(&["[::1]"]), Ok(()));
    check_url("https://[0:0::1]/", &dev(&["::1"]), Ok(()));
    // An allowlisted name does not cover an address, nor another address.
    check_url("https://127.0.0.1/", &dev(&["localhost"]), refused.clone());
    check_url("https://127.0.0.2/", &dev(&["127.0.0.1"]), refused);
}

#[test]
fn headers() {
    let with_token = |token: &str| PushConfig {
        token: Some(token.to_owned()),
        ..config("https://hooks.example.com/")
    };
    let with_auth = |scheme: &str, credentials: Option<&str>| PushConfig {
        authentication: Some(PushAuth {
            scheme: scheme.to_owned(),
            credentials: credentials.map(str::to_owned),
            extra: Map::new(),
        }),
        ..config("https://hooks.example.com/")
    };
    let policy = strict();
    assert_eq!(validate(&with_token("tok-123"), &policy), Ok(()));
    assert_eq!(validate(&with_token(""), &policy), Ok(()));
    for token in [
        "a\rb",
        "a\nb",
        "tok\r\nX-Evil: 1",
        "a\0b",
        "a\tb",
        "a\u{7f}b",
    ] {
        assert_eq!(
            validate(&with_token(token), &policy),
            Err(PushRefusal::HeaderInjection("token")),
            "{token:?}"
        );
    }
    assert_eq!(
        validate(&with_token("tök"), &policy),
        Err(PushRefusal::NotAscii("token"))
    );
    assert_eq!(
        validate(&with_token(&"t".repeat(MAX_TOKEN_LEN + 1)), &policy),
        Err(PushRefusal::TooLong("token"))
    );
    assert_eq!(
        validate(&with_token(&"t".repeat(MAX_TOKEN_LEN)), &policy),
        Ok(())
    );

    assert_eq!(
        validate(&with_auth("Bearer", Some("secret-xyz")), &policy),
        Ok(())
    );
    assert_eq!(
        validate(&with_auth("Basic", Some("dXNlcjpwYXNz")), &policy),
        Ok(())
    );
    assert_eq!(validate(&with_auth("Bearer", None), &policy), Ok(()));
    assert_eq!(
        validate(
            &with_auth("Digest", Some("realm=\"x\", nonce=\"y\"")),
            &policy
        ),
        Ok(())
    );
    for credentials in ["a\rb", "a\nb", "secret\r\nX-Evil: 1"] {
        assert_eq!(
            validate(&with_auth("Bearer", Some(credentials)), &policy),
            Err(PushRefusal::HeaderInjection("credentials")),
            "{credentials:?}"
        );
    }
    assert_eq!(
        validate(
            &with_auth("Bearer", Some(&"c".repeat(MAX_CREDENTIALS_LEN + 1))),
            &policy
        ),
        Err(PushRefusal::TooLong("credentials"))
    );
    assert_eq!(
        validate(&with_auth("Bearer\r\nX-Evil:", Some("x")), &policy),
        Err(PushRefusal::HeaderInjection("authentication scheme"))
    );
    for scheme in ["", "Bear er", "Bearer:", "Bé", "(x)"] {
        assert_eq!(
            validate(&with_auth(scheme, Some("x")), &policy),
            Err(PushRefusal::BadScheme),
            "{scheme:?}"
        );
    }
    assert_eq!(
        validate(&with_auth(&"B".repeat(MAX_SCHEME_LEN + 1), None), &policy),
        Err(PushRefusal::TooLong("authentication scheme"))
    );
}

#[test]
fn refusals_never_name_the_secret() {
    let config = PushConfig {
        token: Some("tok-SECRET\r\n".to_owned()),
        authentication: Some(PushAuth {
            scheme: "Bearer".to_owned(),
            credentials: Some("cred-SECRET".to_owned()),
            extra: Map::new(),
        }),
        ..config("https://hooks.example.com/")
    };
    let refusal = validate(&config, &strict()).expect_err("CR LF in the token");
    assert!(!refusal.to_string().contains("SECRET"));
    let debug = format!("{config:?}");
    assert!(!debug.contains("SECRET"), "{debug}");
}

#[test]
fn config_json_shape() {
    let text = json!({
        "id": "cfg-1",
        "taskId": "task-1",
        "url": "https://hooks.example.com/a2a",
        "token": "tok-123",
        "authentication": {"scheme": "Bearer", "credentials": "secret-xyz", "future": 1},
        "tenant": "t1"
    });
    let config: PushConfig = serde_json::from_value(text.clone()).expect("parses");
    assert_eq!(config.task_id, "task-1");
    assert_eq!(config.extra.get("tenant"), Some(&json!("t1")));
    assert_eq!(serde_json::to_value(&config).expect("writes"), text);
    // An inline configuration names neither id nor task.
    let inline: PushConfig =
        serde_json::from_value(json!({"url": "https://hooks.example.com/"})).expect("parses");
    assert_eq!((inline.id.as_str(), inline.task_id.as_str()), ("", ""));
    assert_eq!(
        serde_json::to_value(&inline).expect("writes"),
        json!({"id": "", "taskId": "", "url": "https://hooks.example.com/"})
    );
}

// === resolve_checked ===

#[tokio::test]
async fn resolution() {
    let strict = strict();
    assert_eq!(
        resolve_checked("8.8.8.8", 443, &strict).await,
        Ok(vec!["8.8.8.8:443".parse().expect("addr")])
    );
    assert_eq!(
        resolve_checked("[2606:4700::1111]", 443, &strict).await,
        Ok(vec!["[2606:4700::1111]:443".parse().expect("addr")])
    );
    assert_eq!(
        resolve_checked("2606:4700::1111", 8443, &strict).await,
        Ok(vec!["[2606:4700::1111]:8443".parse().expect("addr")])
    );
    assert_eq!(
        resolve_checked("127.0.0.1", 80, &strict).await,
        Err(PushRefusal::NonPublicAddress)
    );
    assert_eq!(
        resolve_checked("::ffff:127.0.0.1", 80, &strict).await,
        Err(PushRefusal::NonPublicAddress)
    );
    // `localhost` resolves to loopback: refused, unless the tenant allowlists the name.
    assert_eq!(
        resolve_checked("localhost", 80, &strict).await,
        Err(PushRefusal::NonPublicAddress)
    );
    let allowed = resolve_checked("LocalHost", 80, &dev(&["localhost"]))
        .await
        .expect("allowlisted");
    assert!(!allowed.is_empty());
    assert!(allowed
        .iter()
        .all(|a| a.ip().is_loopback() && a.port() == 80));
    assert_eq!(
        resolve_checked("127.0.0.1", 80, &dev(&["127.0.0.1"])).await,
        Ok(vec!["127.0.0.1:80".parse().expect("addr")])
    );
    assert_eq!(
        resolve_checked("no-such-host.invalid", 443, &strict).await,
        Err(PushRefusal::Unresolvable)
    );
    assert!(matches!(
        resolve_checked("127.1", 80, &strict).await,
        Err(PushRefusal::BadUrl(_))
    ));
}
