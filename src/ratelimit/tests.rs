//! Rules compiled per client (matching by tool and caller, `per` buckets, key layout) and the
//! failed-authentication throttle, on the process-local store.

use super::*;

fn rules(text: &str, client: &str) -> Rules {
    #[derive(serde::Deserialize)]
    struct File {
        rate_limit: Vec<RateLimitRule>,
    }
    let file: File = toml::from_str(text).expect("rules parse");
    Rules::for_client(&file.rate_limit, client)
}

fn call<'a>(client: &'a str, caller: &'a str, tool: &'a str) -> Call<'a> {
    Call {
        tenant: "acme",
        client,
        caller,
        tool,
    }
}

async fn passes(limiter: &Limiter, rules: &Rules, call: Call<'_>, n: usize) -> usize {
    let mut passed = 0;
    for _ in 0..n {
        if limiter.check(rules, call).await == Verdict::Allowed {
            passed += 1;
        }
    }
    passed
}

#[tokio::test]
async fn a_rule_matches_its_client_tool_and_caller_and_shares_one_bucket_unless_per_splits_it() {
    let text = r#"
[[rate_limit]]
id = "shared"
tool = "search"
rate = "3/min"

[[rate_limit]]
id = "each-caller"
tool = "export"
per = ["caller"]
rate = "2/min"

[[rate_limit]]
id = "other-client"
client = "batch"
rate = "1/min"
"#;
    let app = rules(text, "app");
    assert_eq!(
        app.0.len(),
        2,
        "the batch client's rule does not apply to app"
    );
    let limiter = Limiter::local(1_000);
    // `search` is one bucket for every caller: three calls in total.
    assert_eq!(
        passes(&limiter, &app, call("app", "apikey:a", "search"), 2).await,
        2
    );
    assert_eq!(
        passes(&limiter, &app, call("app", "apikey:b", "search"), 5).await,
        1
    );
    // `export` is a bucket per caller: two each.
    assert_eq!(
        passes(&limiter, &app, call("app", "apikey:a", "export"), 5).await,
        2
    );
    assert_eq!(
        passes(&limiter, &app, call("app", "apikey:b", "export"), 5).await,
        2
    );
    // A tool no rule names is never limited.
    assert_eq!(
        passes(&limiter, &app, call("app", "apikey:a", "other"), 50).await,
        50
    );

    let Verdict::Limited { rule, retry_after } =
        limiter.check(&app, call("app", "apikey:c", "search")).await
    else {
        panic!("the shared bucket is empty");
    };
    assert_eq!(&*rule, "shared");
    assert!(
        retry_after > Duration::from_secs(15) && retry_after <= Duration::from_secs(20),
        "{retry_after:?}"
    );
    assert_eq!(limiter.counters.limited.load(Ordering::Relaxed), 11);
}

#[test]
fn bucket_keys_hold_only_the_per_dimensions() {
    let app = rules(
        r#"
[[rate_limit]]
id = "r"
per = ["client", "caller"]
rate = "1/s"
"#,
        "app",
    );
    let key = app.0[0].key(&call("app", "jwt:x", "search"));
    assert_eq!(key.as_slice(), b"acme\x1fr\x1fapp\x1f\x1fjwt:x");
}

#[test]
fn failed_authentication_is_throttled_per_address_and_per_key_id() {
    let settings = AuthFailureSettings {
        per_address: 3,
        per_key: 2,
        window_secs: 60,
        max_tracked: 100,
    };
    let throttle = AuthThrottle::new(&settings, Arc::default());
    let attacker: IpAddr = [10, 0, 0, 1].into();
    let bystander: IpAddr = [10, 0, 0, 2].into();
    assert_eq!(throttle.refuses(attacker, None), None);
    for _ in 0..3 {
        throttle.failed(attacker, None);
    }
    let wait = throttle
        .refuses(attacker, None)
        .expect("the address is throttled");
    assert!(wait > Duration::from_secs(15), "{wait:?}");
    assert_eq!(throttle.refuses(bystander, None), None);
    // Two failures on one key id from different addresses throttle the key everywhere.
    throttle.failed(bystander, Some("keyid0000001"));
    throttle.failed([10, 0, 0, 3].into(), Some("keyid0000001"));
    assert!(throttle
        .refuses([10, 0, 0, 4].into(), Some("keyid0000001"))
        .is_some());
    assert_eq!(
        throttle.refuses([10, 0, 0, 4].into(), Some("keyid0000002")),
        None
    );
    // An IPv4-mapped IPv6 address is the same address.
    assert!(throttle
        .refuses("::ffff:10.0.0.1".parse().expect("ip"), None)
        .is_some());
}
