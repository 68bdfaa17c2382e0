//! Fuzz properties of the credential parsers (the `credentials` target; `cargo test` replays its
//! checked-in corpus through [`credentials`]).
//!
//! Must not do IO: each property is a pure function of its input.

use crate::bos::handle::HandleKey;

use super::apikey;

/// Any input:
/// - `apikey::parse` never panics, and what it accepts is exactly `rtk_{id}_{secret}`;
/// - a context handle verifier never panics and never accepts arbitrary input (a forgery would
///   need the HMAC key);
/// - a handle issued for short ids taken from the input verifies for its caller, returns the same
///   ids, and is refused for any other caller.
pub fn credentials(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(parsed) = apikey::parse(text) {
        assert_eq!(format!("rtk_{}_{}", parsed.id, parsed.secret), text);
    }
    let key = HandleKey::new(b"fuzz-secret-of-thirty-two-bytes!");
    assert!(
        key.verify(text, "caller").is_err(),
        "forged handle {text:?}"
    );

    let mut middle = text.len() / 2;
    while !text.is_char_boundary(middle) {
        middle -= 1;
    }
    let (tenant, context) = text.split_at(middle);
    if tenant.len() <= 64 && context.len() <= 64 {
        let handle = key.issue(tenant, context, "caller");
        assert_eq!(
            key.verify(&handle, "caller").ok(),
            Some((tenant.to_owned(), context.to_owned()))
        );
        assert!(key.verify(&handle, "other").is_err());
    }
}
