//! Credential dispatch, anonymous callers, API keys on real snapshots, tenant scopes and the
//! error predicates. Helpers are the parent's (`auth/tests.rs`).

use super::*;

#[tokio::test]
async fn api_key_on_its_client() {
    let setup = standard_setup();
    let authn = authenticator();
    let caller = auth_c1(&authn, &setup, &format!("rtk_aaaaaaaaaaaa_{SECRET_A}"))
        .await
        .unwrap();
    assert_eq!(&*caller.tenant, "t1");
    assert_eq!(&*caller.client, "c1");
    assert_eq!(&*caller.caller_id, "apikey:aaaaaaaaaaaa");
    assert_eq!(caller.method, AuthMethod::ApiKey);
    assert_eq!(caller.scopes, Scopes::All);

    // A principal names the caller (namespaced); the key's scopes apply.
    let caller = auth_c1(&authn, &setup, &format!("rtk_cccccccccccc_{SECRET_C}"))
        .await
        .unwrap();
    assert_eq!(&*caller.caller_id, "apikey:svc-reporting");
    assert!(caller.scopes.has("mcp:tools"));
    assert!(!caller.scopes.has("mcp:prompts"));
}

#[tokio::test]
async fn api_key_of_another_client_is_unknown() {
    let setup = standard_setup();
    let authn = authenticator();
    let c2_key = format!("rtk_bbbbbbbbbbbb_{SECRET_B}");
    assert_eq!(
        auth_c1(&authn, &setup, &c2_key).await,
        Err(AuthError::invalid("unknown api key"))
    );
    // The same key works on its own client's path.
    let caller = authn
        .authenticate(&bearer(&c2_key), setup.view("c2"), C2_MCP)
        .await
        .unwrap();
    assert_eq!(&*caller.client, "c2");
    // A right id with a wrong secret reads the same.
    assert_eq!(
        auth_c1(&authn, &setup, &format!("rtk_aaaaaaaaaaaa_{SECRET_B}")).await,
        Err(AuthError::invalid("unknown api key"))
    );
}

#[tokio::test]
async fn api_key_from_x_api_key_header() {
    let setup = standard_setup();
    let authn = authenticator();
    let mut headers = HeaderMap::new();
    headers.insert(
        X_API_KEY,
        HeaderValue::from_str(&format!("rtk_aaaaaaaaaaaa_{SECRET_A}")).unwrap(),
    );
    let caller = authn
        .authenticate(&headers, setup.view("c1"), C1_MCP)
        .await
        .unwrap();
    assert_eq!(&*caller.caller_id, "apikey:aaaaaaaaaaaa");

    // The same key in Authorization too is one credential.
    headers.insert(
        http::header::AUTHORIZATION,
        HeaderValue::from_str(&format!("bearer  rtk_aaaaaaaaaaaa_{SECRET_A} ")).unwrap(),
    );
    let caller = authn
        .authenticate(&headers, setup.view("c1"), C1_MCP)
        .await
        .unwrap();
    assert_eq!(&*caller.caller_id, "apikey:aaaaaaaaaaaa");

    // Anything else in Authorization is ambiguous, not "Authorization wins".
    for other in [
        "Bearer nonsense".to_owned(),
        format!("Bearer rtk_aaaaaaaaaaaa_{SECRET_B}"),
        format!("Basic rtk_aaaaaaaaaaaa_{SECRET_A}"),
    ] {
        headers.insert(
            http::header::AUTHORIZATION,
            HeaderValue::from_str(&other).unwrap(),
        );
        let got = authn.authenticate(&headers, setup.view("c1"), C1_MCP).await;
        assert_eq!(got, Err(AuthError::Ambiguous), "{other}");
        assert!(AuthError::Ambiguous.is_bad_request());
    }
    // A second X-API-Key that differs is ambiguous too.
    let mut headers = HeaderMap::new();
    let key = format!("rtk_aaaaaaaaaaaa_{SECRET_A}");
    headers.insert(
        http::header::AUTHORIZATION,
        HeaderValue::from_str(&format!("Bearer {key}")).unwrap(),
    );
    headers.append(X_API_KEY, HeaderValue::from_str(&key).unwrap());
    headers.append(X_API_KEY, HeaderValue::from_static("rtk_other"));
    assert_eq!(
        crate::auth::check_unambiguous(&headers),
        Err(AuthError::Ambiguous)
    );

    // X-API-Key carries API keys only.
    let mut headers = HeaderMap::new();
    headers.insert(X_API_KEY, HeaderValue::from_static("a.b.c"));
    assert!(matches!(
        authn.authenticate(&headers, setup.view("c1"), C1_MCP).await,
        Err(AuthError::Invalid { .. })
    ));
}

#[tokio::test]
async fn api_keys_need_a_pepper() {
    let setup = standard_setup();
    let authn = Authenticator::new(None);
    assert!(matches!(
        auth_c1(&authn, &setup, &format!("rtk_aaaaaaaaaaaa_{SECRET_A}")).await,
        Err(AuthError::Invalid { .. })
    ));
}

#[tokio::test]
async fn malformed_authorization() {
    let setup = standard_setup();
    let authn = authenticator();
    let check = |value: &'static str| {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::AUTHORIZATION, HeaderValue::from_static(value));
        headers
    };
    for value in [
        "Basic dXNlcjpwYXNz",
        "Bearer",
        "Bearer ",
        "Bearer a.b",
        "Bearer a.b.c.d",
        "Bearer a..c",
        "Bearer a.b!.c",
        "Bearer abc def",
        "rtk_aaaaaaaaaaaa",
    ] {
        let got = authn
            .authenticate(&check(value), setup.view("c1"), C1_MCP)
            .await;
        assert!(
            matches!(got, Err(AuthError::Invalid { .. })),
            "{value}: {got:?}"
        );
    }
    // The scheme is case-insensitive.
    let caller = authn
        .authenticate(
            &check("bearer rtk_aaaaaaaaaaaa_A_cdefghijklmnopqrstuvwxyz0123456789-_ABCDE"),
            setup.view("c1"),
            C1_MCP,
        )
        .await
        .unwrap();
    assert_eq!(caller.method, AuthMethod::ApiKey);
    // Two Authorization headers are refused.
    let mut headers = bearer(&format!("rtk_aaaaaaaaaaaa_{SECRET_A}"));
    headers.append(
        http::header::AUTHORIZATION,
        HeaderValue::from_static("Bearer x"),
    );
    assert!(authn
        .authenticate(&headers, setup.view("c1"), C1_MCP)
        .await
        .is_err());
}

#[tokio::test]
async fn missing_and_anonymous() {
    let setup = standard_setup();
    let authn = authenticator();
    let empty = HeaderMap::new();
    assert_eq!(
        authn.authenticate(&empty, setup.view("c1"), C1_MCP).await,
        Err(AuthError::Missing)
    );
    let anon_view = setup.snap.client("t2", "c1").unwrap();
    let caller = authn
        .authenticate(
            &empty,
            anon_view,
            "https://rt.example.com/runtime/t2/c1/mcp",
        )
        .await
        .unwrap();
    assert_eq!(caller, Caller::anonymous("t2".into(), "c1".into()));
    assert_eq!(caller.method, AuthMethod::Anonymous);
    // A presented credential is checked even where anonymous callers are served.
    assert!(matches!(
        authn
            .authenticate(
                &bearer("rtk_nope"),
                anon_view,
                "https://rt.example.com/runtime/t2/c1/mcp"
            )
            .await,
        Err(AuthError::Invalid { .. })
    ));
    // An anonymous caller meeting a scope check is asked for a credential.
    assert_eq!(
        require(&caller, &["mcp:tools".to_owned()]),
        Err(AuthError::Missing)
    );
    assert_eq!(require(&caller, &[]), Ok(()));
}

#[tokio::test]
async fn tenant_required_scopes() {
    let setup = FileSetup::new(
        &[Signer::Rsa1.jwk(Some("r1"))],
        r#"required_scopes = ["mcp:tools", "mcp:admin"]"#,
        "",
    );
    let authn = authenticator();
    // Scopes = All passes.
    assert!(
        auth_c1(&authn, &setup, &format!("rtk_aaaaaaaaaaaa_{SECRET_A}"))
            .await
            .is_ok()
    );
    // The scoped key lacks mcp:admin.
    assert_eq!(
        auth_c1(&authn, &setup, &format!("rtk_cccccccccccc_{SECRET_C}")).await,
        Err(AuthError::InsufficientScope {
            required: vec!["mcp:admin".to_owned()]
        })
    );
    // So does the token (scope "mcp:tools mcp:prompts").
    let token = Signer::Rsa1.sign(Some("r1"), &claims());
    let err = auth_c1(&authn, &setup, &token).await.unwrap_err();
    assert!(err.is_forbidden());
    assert_eq!(err.oauth_error(), Some("insufficient_scope"));
    let token = Signer::Rsa1.sign(
        Some("r1"),
        &with(claims(), json!({"scope": "mcp:admin mcp:tools"})),
    );
    assert!(auth_c1(&authn, &setup, &token).await.is_ok());
}

#[test]
fn scopes_and_require() {
    let scopes = Scopes::from_names(["a", "b", "a"]);
    assert!(scopes.has("a") && scopes.has("b") && !scopes.has("c"));
    let req = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        scopes.missing(&req(&["a", "c", "d", "c"])),
        req(&["c", "d"])
    );
    assert!(Scopes::All.missing(&req(&["x"])).is_empty());
    let caller = Caller {
        scopes,
        method: AuthMethod::Jwt,
        ..Caller::anonymous("t".into(), "c".into())
    };
    assert_eq!(require(&caller, &req(&["a"])), Ok(()));
    assert_eq!(
        require(&caller, &req(&["a", "z"])),
        Err(AuthError::InsufficientScope {
            required: req(&["z"])
        })
    );
}

#[test]
fn error_predicates() {
    let invalid = AuthError::invalid("bad signature");
    assert_eq!(invalid.oauth_error(), Some("invalid_token"));
    assert_eq!(invalid.description(), "bad signature");
    assert!(!invalid.is_forbidden());
    assert_eq!(AuthError::Expired.oauth_error(), Some("invalid_token"));
    assert_eq!(AuthError::Missing.oauth_error(), None);
    assert!(AuthError::JwksUnavailable.is_unavailable());
    assert_eq!(AuthError::JwksUnavailable.oauth_error(), None);
}
