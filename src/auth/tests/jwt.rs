//! The JWT validation matrix against JWKS files: good and rejected tokens, audiences, `alg`
//! tricks, `kid` selection, claims, refetch of a file on an unknown `kid` (paused time).
//! Helpers are the parent's (`auth/tests.rs`).

use super::*;

#[tokio::test]
async fn good_tokens() {
    let setup = standard_setup();
    let authn = authenticator();
    for (signer, kid) in [
        (Signer::Rsa1, "r1"),
        (Signer::Ec1, "e1"),
        (Signer::Ed1, "d1"),
    ] {
        let token = signer.sign(Some(kid), &claims());
        let caller = auth_c1(&authn, &setup, &token).await.unwrap();
        assert_eq!(&*caller.caller_id, "jwt:https://idp.example.com/t1|user-1");
        assert_eq!(caller.method, AuthMethod::Jwt);
        assert_eq!(
            caller.scopes,
            Scopes::from_names(["mcp:tools", "mcp:prompts"])
        );
    }
    // `aud` as an array containing this endpoint.
    let token = Signer::Rsa1.sign(
        Some("r1"),
        &with(claims(), json!({"aud": ["https://other.example", C1_MCP]})),
    );
    assert!(auth_c1(&authn, &setup, &token).await.is_ok());
    // A key that declares `alg` verifies only that algorithm.
    let token = Signer::Rsa1.sign_as(Algorithm::PS256, Some("r1"), &claims());
    assert_eq!(
        auth_c1(&authn, &setup, &token).await,
        Err(AuthError::invalid("key does not match the token algorithm"))
    );
    // An RSA key that declares none verifies any RSA algorithm on the allow list.
    let mut undeclared = Signer::Rsa1.jwk(Some("r1"));
    undeclared.as_object_mut().unwrap().remove("alg");
    let setup = FileSetup::new(&[undeclared], "", "");
    assert!(auth_c1(&authn, &setup, &token).await.is_ok());
    let token = Signer::Rsa1.sign_as(Algorithm::RS512, Some("r1"), &claims());
    assert_eq!(
        auth_c1(&authn, &setup, &token).await,
        Err(AuthError::invalid("token algorithm not allowed"))
    );
}

#[tokio::test]
async fn rejected_tokens() {
    let setup = standard_setup();
    let authn = authenticator();
    let check = |patch: Value, expected: AuthError| {
        let token = Signer::Rsa1.sign(Some("r1"), &with(claims(), patch));
        let authn = &authn;
        let setup = &setup;
        async move {
            assert_eq!(auth_c1(authn, setup, &token).await, Err(expected));
        }
    };
    check(
        json!({"aud": "https://other.example/mcp"}),
        AuthError::invalid("wrong audience"),
    )
    .await;
    // A token for c2's endpoint cannot be replayed on c1's.
    check(json!({"aud": C2_MCP}), AuthError::invalid("wrong audience")).await;
    check(
        json!({"aud": null}),
        AuthError::invalid("token lacks a required claim"),
    )
    .await;
    check(json!({"exp": now() - 3600}), AuthError::Expired).await;
    check(
        json!({"exp": null}),
        AuthError::invalid("token lacks a required claim"),
    )
    .await;
    check(
        json!({"nbf": now() + 3600}),
        AuthError::invalid("token not yet valid"),
    )
    .await;
    check(
        json!({"iss": "https://evil.example/t1"}),
        AuthError::invalid("wrong issuer"),
    )
    .await;
    check(
        json!({"sub": null}),
        AuthError::invalid("token has no subject"),
    )
    .await;
    // Within the leeway (60 s) an expired token still passes.
    let token = Signer::Rsa1.sign(Some("r1"), &with(claims(), json!({"exp": now() - 10})));
    assert!(auth_c1(&authn, &setup, &token).await.is_ok());
    // Signed by a key that is not in the set but claims a kid that is.
    let token = Signer::Rsa2.sign(Some("r1"), &claims());
    assert_eq!(
        auth_c1(&authn, &setup, &token).await,
        Err(AuthError::invalid("bad signature"))
    );
    // A kid whose key type does not fit the algorithm.
    let token = Signer::Rsa1.sign(Some("e1"), &claims());
    assert!(matches!(
        auth_c1(&authn, &setup, &token).await,
        Err(AuthError::Invalid { .. })
    ));
}

#[tokio::test]
async fn configured_audiences_replace_the_endpoint_url() {
    let setup = FileSetup::new(
        &[Signer::Rsa1.jwk(Some("r1"))],
        "",
        r#"audiences = ["api://sluice"]"#,
    );
    let authn = authenticator();
    let token = Signer::Rsa1.sign(Some("r1"), &with(claims(), json!({"aud": "api://sluice"})));
    assert!(auth_c1(&authn, &setup, &token).await.is_ok());
    let token = Signer::Rsa1.sign(Some("r1"), &claims());
    assert_eq!(
        auth_c1(&authn, &setup, &token).await,
        Err(AuthError::invalid("wrong audience"))
    );
}

#[tokio::test]
async fn client_credentials_token_without_sub() {
    let setup = standard_setup();
    let authn = authenticator();
    let token = Signer::Rsa1.sign(
        Some("r1"),
        &with(claims(), json!({"sub": null, "client_id": "svc-7"})),
    );
    let caller = auth_c1(&authn, &setup, &token).await.unwrap();
    assert_eq!(
        &*caller.caller_id,
        "jwt:https://idp.example.com/t1|client:svc-7"
    );
    let token = Signer::Rsa1.sign(
        Some("r1"),
        &with(claims(), json!({"sub": null, "azp": "svc-8"})),
    );
    let caller = auth_c1(&authn, &setup, &token).await.unwrap();
    assert_eq!(
        &*caller.caller_id,
        "jwt:https://idp.example.com/t1|client:svc-8"
    );
}

#[tokio::test]
async fn alg_none_is_rejected() {
    let setup = standard_setup();
    let authn = authenticator();
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims()).unwrap());
    for token in [
        format!("{header}.{payload}."),
        format!("{header}.{payload}.c2ln"),
    ] {
        assert!(matches!(
            auth_c1(&authn, &setup, &token).await,
            Err(AuthError::Invalid { .. })
        ));
    }
}

#[tokio::test]
async fn hmac_with_the_public_key_is_rejected() {
    let setup = standard_setup();
    let authn = authenticator();
    // Algorithm confusion: an HS256 token whose HMAC key is the RSA public key's bytes.
    let public_pem = fixture("rsa1.pub.pem");
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("r1".to_owned());
    let key = EncodingKey::from_secret(&public_pem).unwrap();
    let token = jsonwebtoken::encode(&header, &claims(), &key).unwrap();
    assert_eq!(
        auth_c1(&authn, &setup, &token).await,
        Err(AuthError::invalid("token algorithm not allowed"))
    );
}

#[tokio::test]
async fn oct_keys_in_the_jwks_are_ignored() {
    let secret = URL_SAFE_NO_PAD.encode(b"shared-secret-shared-secret-1234");
    let oct = json!({"kty": "oct", "kid": "h1", "k": secret, "alg": "HS256"});
    let set = super::jwks::KeySet::parse(
        &jwks(&[oct.clone(), Signer::Rsa1.jwk(Some("r1"))]),
        tokio::time::Instant::now(),
    )
    .unwrap();
    assert_eq!(set.len(), 1);

    let setup = FileSetup::new(&[oct, Signer::Rsa1.jwk(Some("r1"))], "", "");
    let authn = authenticator();
    // HS256 with the oct key's secret: refused.
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("h1".to_owned());
    let key = EncodingKey::from_secret(b"shared-secret-shared-secret-1234").unwrap();
    let token = jsonwebtoken::encode(&header, &claims(), &key).unwrap();
    assert!(matches!(
        auth_c1(&authn, &setup, &token).await,
        Err(AuthError::Invalid { .. })
    ));
    // An RS256 token naming the oct key's kid finds no key.
    let token = Signer::Rsa1.sign(Some("h1"), &claims());
    assert_eq!(
        auth_c1(&authn, &setup, &token).await,
        Err(AuthError::invalid("unknown key id"))
    );
}

#[tokio::test]
async fn jwks_skips_odd_keys_and_rejects_non_sets() {
    let set = super::jwks::KeySet::parse(
        &jwks(&[
            json!({"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"}),
            json!({"kty": "EC", "crv": "P-521", "x": "AA", "y": "AA"}),
            json!({"kty": "weird"}),
            json!(42),
            Signer::Ec1.jwk(Some("e1")),
        ]),
        tokio::time::Instant::now(),
    )
    .unwrap();
    assert_eq!(set.len(), 1);
    assert!(super::jwks::KeySet::parse(b"{\"nokeys\":[]}", tokio::time::Instant::now()).is_err());
    assert!(super::jwks::KeySet::parse(b"not json", tokio::time::Instant::now()).is_err());
}

#[tokio::test]
async fn client_claim_binds_the_token_to_the_client() {
    let setup = FileSetup::new(
        &[Signer::Rsa1.jwk(Some("r1"))],
        "",
        r#"client_claim = "azp""#,
    );
    let authn = authenticator();
    let token = Signer::Rsa1.sign(Some("r1"), &with(claims(), json!({"azp": "c1"})));
    assert!(auth_c1(&authn, &setup, &token).await.is_ok());
    for azp in [json!("c2"), json!(null), json!(7)] {
        let token = Signer::Rsa1.sign(Some("r1"), &with(claims(), json!({"azp": azp})));
        assert_eq!(
            auth_c1(&authn, &setup, &token).await,
            Err(AuthError::invalid("token not issued for this client")),
            "{azp}"
        );
    }
}

#[tokio::test]
async fn scope_claims() {
    let setup = standard_setup();
    let authn = authenticator();
    let check = |patch: Value, expected: &[&str]| {
        let token = Signer::Rsa1.sign(Some("r1"), &with(claims(), patch));
        let authn = &authn;
        let setup = &setup;
        let expected = Scopes::from_names(expected.iter().copied());
        async move {
            let caller = auth_c1(authn, setup, &token).await.unwrap();
            assert_eq!(caller.scopes, expected);
        }
    };
    check(json!({"scope": "a  b\tc"}), &["a", "b", "c"]).await;
    check(json!({"scope": null, "scp": ["x", "y"]}), &["x", "y"]).await;
    check(json!({"scope": null, "scp": "x y"}), &["x", "y"]).await;
    check(json!({"scope": null}), &[]).await;
}

#[tokio::test]
async fn kid_selection() {
    // Without `kid`, exactly one key fitting the algorithm is used.
    let setup = FileSetup::new(&[Signer::Rsa1.jwk(None), Signer::Ec1.jwk(None)], "", "");
    let authn = authenticator();
    let token = Signer::Rsa1.sign(None, &claims());
    assert!(auth_c1(&authn, &setup, &token).await.is_ok());
    let token = Signer::Ec1.sign(None, &claims());
    assert!(auth_c1(&authn, &setup, &token).await.is_ok());
    // Two RSA keys: a token without `kid` is ambiguous.
    let setup = FileSetup::new(&[Signer::Rsa1.jwk(None), Signer::Rsa2.jwk(None)], "", "");
    let token = Signer::Rsa1.sign(None, &claims());
    assert_eq!(
        auth_c1(&authn, &setup, &token).await,
        Err(AuthError::invalid("token has no key id"))
    );
}

#[tokio::test]
async fn jwt_on_a_tenant_without_jwt_settings() {
    let setup = standard_setup();
    let authn = authenticator();
    let view = setup.snap.client("t2", "c1").unwrap();
    let token = Signer::Rsa1.sign(Some("r1"), &claims());
    assert_eq!(
        authn.authenticate(&bearer(&token), view, C1_MCP).await,
        Err(AuthError::invalid("bearer tokens are not accepted here"))
    );
}

#[tokio::test(start_paused = true)]
async fn unknown_kid_refetches_the_file_once_per_interval() {
    let setup = FileSetup::new(&[Signer::Rsa1.jwk(Some("r1"))], "", "");
    let authn = authenticator();
    let t1 = Signer::Rsa1.sign(Some("r1"), &claims());
    let t2 = Signer::Rsa2.sign(Some("r2"), &claims());
    assert!(auth_c1(&authn, &setup, &t1).await.is_ok());

    // Rotation: the issuer publishes r2. The set was read moments ago, so no refetch yet.
    setup.replace(&[Signer::Rsa1.jwk(Some("r1")), Signer::Rsa2.jwk(Some("r2"))]);
    assert_eq!(
        auth_c1(&authn, &setup, &t2).await,
        Err(AuthError::invalid("unknown key id"))
    );
    tokio::time::advance(Duration::from_secs(61)).await;
    assert!(auth_c1(&authn, &setup, &t2).await.is_ok());
    assert!(auth_c1(&authn, &setup, &t1).await.is_ok());

    // An unknown kid now costs one refetch, and the next one inside the interval none.
    let t3 = Signer::Ec1.sign(Some("e3"), &claims());
    assert!(auth_c1(&authn, &setup, &t3).await.is_err());
    setup.replace(&[Signer::Ec1.jwk(Some("e3"))]);
    assert!(auth_c1(&authn, &setup, &t3).await.is_err());
    tokio::time::advance(Duration::from_secs(61)).await;
    assert!(auth_c1(&authn, &setup, &t3).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn stale_sets_are_refreshed_and_kept_on_failure() {
    let setup = FileSetup::new(&[Signer::Rsa1.jwk(Some("r1"))], "", "");
    let authn = Authenticator::with_jwks(
        Some(PEPPER.as_bytes().to_vec()),
        JwksCache::with_intervals(Duration::from_secs(60), Duration::from_secs(600)),
    );
    let t1 = Signer::Rsa1.sign(Some("r1"), &claims());
    assert!(auth_c1(&authn, &setup, &t1).await.is_ok());
    // A broken file: the last good set keeps serving.
    std::fs::write(&setup.path, b"garbage").unwrap();
    tokio::time::advance(Duration::from_secs(601)).await;
    assert!(auth_c1(&authn, &setup, &t1).await.is_ok());
    // The issuer drops r1: once the set is stale again, r1 stops working.
    setup.replace(&[Signer::Rsa2.jwk(Some("r2"))]);
    tokio::time::advance(Duration::from_secs(601)).await;
    assert_eq!(
        auth_c1(&authn, &setup, &t1).await,
        Err(AuthError::invalid("unknown key id"))
    );
}

#[tokio::test]
async fn unreadable_jwks_file_is_unavailable() {
    let setup = standard_setup();
    std::fs::remove_file(&setup.path).unwrap();
    let authn = authenticator();
    let token = Signer::Rsa1.sign(Some("r1"), &claims());
    let err = auth_c1(&authn, &setup, &token).await.unwrap_err();
    assert_eq!(err, AuthError::JwksUnavailable);
    assert!(err.is_unavailable());
}
