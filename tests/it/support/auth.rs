//! The signing material of `tests/fixtures/auth` (test keys, never used outside the tests).
//! Owns only reading those files; what sluice accepts is the tests' business.

use std::path::PathBuf;

use jsonwebtoken::EncodingKey;

/// The bytes of `tests/fixtures/auth/{name}`.
pub(crate) fn auth_fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/auth")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The RSA signing key `rsa1.pem` (its public half is the JWKS key `k1` of the tests).
pub(crate) fn rsa1() -> EncodingKey {
    EncodingKey::from_rsa_pem(&auth_fixture("rsa1.pem")).expect("rsa1")
}
