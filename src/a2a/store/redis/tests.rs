//! Unit tests of the Redis task store's key and value formats (no Redis needed; the
//! store's behaviour against a real Redis is in `store/tests.rs`).

use super::*;

#[test]
fn stamps_read_as_epoch_millis() {
    assert_eq!(stamp_millis("1970-01-01T00:00:00.000Z"), 0);
    assert_eq!(stamp_millis("1970-01-01T00:00:01.5Z"), 1500);
    assert_eq!(stamp_millis("2000-03-01T00:00:00Z"), 951_868_800_000);
    assert_eq!(stamp_millis("2026-12-02T09:08:32.712Z"), 1_796_202_512_712);
    for bad in ["", "2026-12-02", "2026-13-02T00:00:00Z", "x-y-zT1:2:3Z"] {
        assert_eq!(stamp_millis(bad), 0, "{bad}");
    }
}

#[test]
fn push_values_keep_their_insertion_number() {
    assert_eq!(
        push_value(b"12 {\"id\":\"a b\"}"),
        Some((12, Bytes::from_static(b"{\"id\":\"a b\"}")))
    );
    assert_eq!(push_value(b"nospace"), None);
    assert_eq!(push_value(b"x {}"), None);
}

#[test]
fn owner_fields_and_keys_never_collide() {
    let owner = |client: &str, caller: &str| Owner {
        tenant: Arc::from("t"),
        client: Arc::from(client),
        caller: Arc::from(caller),
    };
    assert_ne!(
        owner_field(&owner("a\nb", "c")),
        owner_field(&owner("a", "b\nc"))
    );
    assert_eq!(owner_field(&owner("app", "apikey:k")), "app\napikey%3Ak");
    assert_eq!(component("a:b"), "a%3Ab");
}
