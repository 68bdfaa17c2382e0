//! Static API keys: the `rtk_{id}_{secret}` token format, peppered hashes, verification against
//! the path's client's keys, and generation for `sluice key new`.
//!
//! Owns the token format and the hash. Must not look outside the client application of the
//! request path: a key of another client is simply unknown (401), so the answer never reveals
//! that a key exists elsewhere. Runs on every request, so verification parses in place, hashes
//! on the stack and compares in constant time; the only allocations are the [`Caller`]'s.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use rand::Rng as _;
use sha2::Sha256;
use subtle::ConstantTimeEq;

use super::{AuthError, AuthMethod, Caller, Scopes};
use crate::catalog::ClientView;
use crate::config::{is_valid_key_id, ApiKey, API_KEY_ID_LEN};

/// Every API key token starts with this.
pub(crate) const PREFIX: &str = "rtk_";

/// Length of the secret part: 32 random bytes in unpadded base64url.
pub(crate) const SECRET_LEN: usize = 43;

/// Random bytes in a secret.
const SECRET_BYTES: usize = 32;

/// The lowercase RFC 4648 base32 alphabet key ids are drawn from.
const ID_ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

type HmacSha256 = Hmac<Sha256>;

/// The server pepper as a keyed HMAC, ready to be cloned for each hash.
#[derive(Clone)]
pub(crate) struct Pepper(HmacSha256);

impl Pepper {
    /// Keys HMAC-SHA256 with `pepper` (any length is a valid HMAC key).
    pub(crate) fn new(pepper: &[u8]) -> Self {
        // HMAC accepts keys of any length (RFC 2104 §2), so this cannot fail; the fallback keeps
        // that promise without a panic path.
        let mac = HmacSha256::new_from_slice(pepper)
            .unwrap_or_else(|_| <HmacSha256 as hmac::digest::KeyInit>::new(&Default::default()));
        Self(mac)
    }

    fn hash(&self, secret: &str) -> [u8; 32] {
        let mut mac = self.0.clone();
        mac.update(secret.as_bytes());
        mac.finalize().into_bytes().into()
    }
}

impl std::fmt::Debug for Pepper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material.
        f.write_str("Pepper(..)")
    }
}

/// HMAC-SHA256 of `secret` under `pepper`: what the configuration stores (as hex) in
/// `api_key.hash`.
pub fn hash_secret(pepper: &[u8], secret: &str) -> [u8; 32] {
    Pepper::new(pepper).hash(secret)
}

/// An API key token split into its parts, borrowed from the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedKey<'a> {
    /// The public key id.
    pub id: &'a str,
    /// The secret.
    pub secret: &'a str,
}

/// Splits `rtk_{id}_{secret}`. The id has a fixed length, so the split happens right after it:
/// the secret is base64url and may itself contain `_`.
pub fn parse(token: &str) -> Result<ParsedKey<'_>, AuthError> {
    const MALFORMED: AuthError = AuthError::invalid("malformed api key");
    let rest = token.strip_prefix(PREFIX).ok_or(MALFORMED)?;
    let id = rest.get(..API_KEY_ID_LEN).ok_or(MALFORMED)?;
    if !is_valid_key_id(id) {
        return Err(MALFORMED);
    }
    let secret = rest
        .get(API_KEY_ID_LEN..)
        .and_then(|s| s.strip_prefix('_'))
        .ok_or(MALFORMED)?;
    let is_base64url = secret
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if secret.len() != SECRET_LEN || !is_base64url {
        return Err(MALFORMED);
    }
    Ok(ParsedKey { id, secret })
}

/// Finds the key of `parsed.id` among `keys` (the path's client's keys) and checks the secret
/// and the expiry at `now`.
pub(crate) fn verify<'k>(
    pepper: &Pepper,
    parsed: &ParsedKey<'_>,
    keys: &'k [ApiKey],
    now: SystemTime,
) -> Result<&'k ApiKey, AuthError> {
    const UNKNOWN: AuthError = AuthError::invalid("unknown api key");
    // Hash before the lookup so an unknown id costs the same as a wrong secret.
    let presented = pepper.hash(parsed.secret);
    let key = keys.iter().find(|k| k.id == parsed.id).ok_or(UNKNOWN)?;
    let mut stored = [0u8; 32];
    // Validation guarantees 64 hex digits; a bad value still only means "no match".
    hex::decode_to_slice(&key.hash, &mut stored).map_err(|_| UNKNOWN)?;
    if !hashes_match(&presented, &stored) {
        return Err(AuthError::invalid("unknown api key"));
    }
    if let Some(expires_at) = &key.expires_at {
        let expiry = unix_seconds(expires_at).ok_or(AuthError::Expired)?;
        let now = now
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        if now >= expiry {
            return Err(AuthError::Expired);
        }
    }
    Ok(key)
}

/// Compares two hashes in constant time (`subtle`), so the time taken says nothing about how
/// many leading bytes of a guess were right.
pub(crate) fn hashes_match(presented: &[u8; 32], stored: &[u8; 32]) -> bool {
    presented.ct_eq(stored).into()
}

/// The caller a verified key stands for on `view`'s endpoint.
pub(crate) fn caller(key: &ApiKey, view: &ClientView) -> Caller {
    // The principal is namespaced like the id, so it can never equal a JWT identity or
    // `anonymous` (sessions are bound to this string).
    let name = key.principal.as_deref().unwrap_or(&key.id);
    let mut caller_id = String::with_capacity("apikey:".len() + name.len());
    caller_id.push_str("apikey:");
    caller_id.push_str(name);
    Caller {
        tenant: Arc::clone(view.tenant_id()),
        client: Arc::clone(view.client_id()),
        caller_id: Arc::from(caller_id),
        method: AuthMethod::ApiKey,
        scopes: match &key.scopes {
            None => Scopes::All,
            Some(list) => Scopes::from_names(list.iter().cloned()),
        },
    }
}

/// The instant a TOML date-time stands for, in Unix seconds. A date without a time is the start
/// of that day; a date-time without an offset is read as UTC. `None` for a time without a date
/// (validation refuses those) or an impossible date.
pub(crate) fn unix_seconds(at: &toml::value::Datetime) -> Option<i64> {
    let date = at.date?;
    if !(1..=12).contains(&date.month) || !(1..=31).contains(&date.day) {
        return None;
    }
    let days = days_from_civil(i64::from(date.year), date.month.into(), date.day.into());
    let mut seconds = days * 86_400;
    if let Some(time) = at.time {
        seconds += i64::from(time.hour) * 3600
            + i64::from(time.minute) * 60
            + i64::from(time.second.unwrap_or(0));
    }
    if let Some(toml::value::Offset::Custom { minutes }) = at.offset {
        // `12:00+02:00` is 10:00 UTC.
        seconds -= i64::from(minutes) * 60;
    }
    Some(seconds)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// A freshly generated key: the token is shown once, the configuration keeps `id` and
/// `hash_hex`.
#[derive(Clone, PartialEq, Eq)]
pub struct GeneratedKey {
    /// `rtk_{id}_{secret}`, handed to the client.
    pub token: String,
    /// The public key id (`api_key.id`).
    pub id: String,
    /// Hex HMAC-SHA256 of the secret (`api_key.hash`).
    pub hash_hex: String,
}

impl std::fmt::Debug for GeneratedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeneratedKey")
            .field("id", &self.id)
            .field("hash_hex", &self.hash_hex)
            .finish_non_exhaustive()
    }
}

/// Generates a key: a random id, 32 random bytes of secret (from `rand::rng()`, a CSPRNG seeded
/// by the OS) and its hash under `pepper`.
pub fn generate(pepper: &[u8]) -> GeneratedKey {
    let mut rng = rand::rng();
    let id: String = (0..API_KEY_ID_LEN)
        .map(|_| char::from(ID_ALPHABET[rng.random_range(0..ID_ALPHABET.len())]))
        .collect();
    let mut bytes = [0u8; SECRET_BYTES];
    rng.fill(&mut bytes[..]);
    let secret = URL_SAFE_NO_PAD.encode(bytes);
    let hash_hex = hex::encode(hash_secret(pepper, &secret));
    let token = format!("{PREFIX}{id}_{secret}");
    GeneratedKey {
        token,
        id,
        hash_hex,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const PEPPER: &[u8] = b"test-pepper";
    const ID: &str = "abcdefgh2345";
    /// 43 base64url characters with `_` inside.
    const SECRET: &str = "A_cdefghijklmnopqrstuvwxyz0123456789-_ABCDE";

    fn key(id: &str, secret: &str, expires_at: Option<&str>) -> ApiKey {
        ApiKey {
            id: id.to_owned(),
            hash: hex::encode(hash_secret(PEPPER, secret)),
            principal: None,
            scopes: None,
            expires_at: expires_at.map(|s| s.parse().unwrap()),
        }
    }

    fn token(id: &str, secret: &str) -> String {
        format!("rtk_{id}_{secret}")
    }

    fn check_parse(input: &str, expected: Option<(&str, &str)>) {
        let got = parse(input).ok().map(|p| (p.id, p.secret));
        assert_eq!(got, expected, "{input}");
    }

    #[test]
    fn parses_tokens() {
        assert_eq!(SECRET.len(), SECRET_LEN);
        check_parse(&token(ID, SECRET), Some((ID, SECRET)));
        // A secret that starts with `_` still splits right after the fixed-length id.
        let underscore_first = format!("_{}", &SECRET[1..]);
        check_parse(
            &token(ID, &underscore_first),
            Some((ID, underscore_first.as_str())),
        );
        check_parse(&format!("rtx_{ID}_{SECRET}"), None);
        check_parse(&format!("RTK_{ID}_{SECRET}"), None);
        check_parse(&token("abcdefgh234", SECRET), None); // short id
        check_parse(&token("abcdefgh2341", SECRET), None); // '1' is not base32
        check_parse(&token("ABCDEFGH2345", SECRET), None); // upper case
        check_parse(&token(ID, ""), None); // empty secret
        check_parse(&format!("rtk_{ID}"), None);
        check_parse(&format!("rtk_{ID}{SECRET}"), None); // no separator
        check_parse(&token(ID, &SECRET[1..]), None); // short secret
        check_parse(&token(ID, &format!("{SECRET}A")), None); // long secret
        check_parse(&token(ID, &format!("{}+", &SECRET[1..])), None); // not base64url
        check_parse("rtk_", None);
        check_parse("rtk_é", None);
        check_parse("", None);
    }

    #[test]
    fn hash_is_hmac_sha256() {
        // RFC 4231 test case 2.
        let got = hash_secret(b"Jefe", "what do ya want for nothing?");
        assert_eq!(
            hex::encode(got),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_ne!(hash_secret(b"other", SECRET), hash_secret(PEPPER, SECRET));
    }

    #[test]
    fn verifies_secret_and_rotation() {
        let pepper = Pepper::new(PEPPER);
        let other_secret = format!("Z{}", &SECRET[1..]);
        let keys = vec![
            key(ID, SECRET, None),
            key("zzzzzzzzzzzz", &other_secret, None),
        ];
        let now = SystemTime::now();
        let t1 = token(ID, SECRET);
        let t2 = token("zzzzzzzzzzzz", &other_secret);
        assert_eq!(
            verify(&pepper, &parse(&t1).unwrap(), &keys, now)
                .unwrap()
                .id,
            ID
        );
        assert_eq!(
            verify(&pepper, &parse(&t2).unwrap(), &keys, now)
                .unwrap()
                .id,
            "zzzzzzzzzzzz"
        );
        // Wrong secret for a known id.
        let wrong = token(ID, &other_secret);
        assert_eq!(
            verify(&pepper, &parse(&wrong).unwrap(), &keys, now).unwrap_err(),
            AuthError::invalid("unknown api key")
        );
        // The key removed from the configuration no longer works; the other one still does.
        let rotated = vec![keys[1].clone()];
        assert!(verify(&pepper, &parse(&t1).unwrap(), &rotated, now).is_err());
        assert!(verify(&pepper, &parse(&t2).unwrap(), &rotated, now).is_ok());
        // A different pepper makes every stored hash unknown.
        assert!(verify(&Pepper::new(b"x"), &parse(&t1).unwrap(), &keys, now).is_err());
    }

    #[test]
    fn checks_expiry() {
        let pepper = Pepper::new(PEPPER);
        let parsed_token = token(ID, SECRET);
        let parsed = parse(&parsed_token).unwrap();
        let at = |s: &str| UNIX_EPOCH + Duration::from_secs(s.parse::<u64>().unwrap());
        // 2030-01-01T00:00:00Z = 1893456000.
        let check = |expires: &str, now: &str, ok: bool| {
            let keys = vec![key(ID, SECRET, Some(expires))];
            let got = verify(&pepper, &parsed, &keys, at(now));
            assert_eq!(got.is_ok(), ok, "{expires} at {now}");
            if !ok {
                assert_eq!(got.unwrap_err(), AuthError::Expired);
            }
        };
        check("2030-01-01T00:00:00Z", "1893455999", true);
        check("2030-01-01T00:00:00Z", "1893456000", false);
        // Date only: the start of that day, UTC.
        check("2030-01-01", "1893455999", true);
        check("2030-01-01", "1893456000", false);
        // An offset: 02:00+02:00 is midnight UTC.
        check("2030-01-01T02:00:00+02:00", "1893455999", true);
        check("2030-01-01T02:00:00+02:00", "1893456000", false);
        check("2029-12-31T19:00:00-05:00", "1893456000", false);
        // No offset: read as UTC.
        check("2030-01-01T00:00:00", "1893456000", false);
        // Past and future relative to the real clock.
        let keys = vec![key(ID, SECRET, Some("2001-01-01"))];
        assert_eq!(
            verify(&pepper, &parsed, &keys, SystemTime::now()).unwrap_err(),
            AuthError::Expired
        );
        let keys = vec![key(ID, SECRET, Some("9999-01-01"))];
        assert!(verify(&pepper, &parsed, &keys, SystemTime::now()).is_ok());
    }

    #[test]
    fn unix_seconds_of_known_dates() {
        let check = |s: &str, expected: Option<i64>| {
            let at: toml::value::Datetime = s.parse().unwrap();
            assert_eq!(unix_seconds(&at), expected, "{s}");
        };
        check("1970-01-01", Some(0));
        check("2000-03-01", Some(951_868_800));
        check("2024-02-29T12:34:56Z", Some(1_709_210_096));
        check("1969-12-31T23:59:59Z", Some(-1));
        check("12:00:00", None);
    }

    #[test]
    fn constant_time_compare() {
        let a = hash_secret(PEPPER, SECRET);
        assert!(hashes_match(&a, &a));
        for idx in [0, 15, 31] {
            let mut b = a;
            b[idx] ^= 1;
            assert!(!hashes_match(&a, &b), "byte {idx}");
        }
    }

    #[test]
    fn generated_keys_verify() {
        let generated = generate(PEPPER);
        let parsed = parse(&generated.token).unwrap();
        assert_eq!(parsed.id, generated.id);
        assert_eq!(parsed.secret.len(), SECRET_LEN);
        assert!(is_valid_key_id(&generated.id));
        let keys = vec![ApiKey {
            id: generated.id.clone(),
            hash: generated.hash_hex.clone(),
            principal: None,
            scopes: None,
            expires_at: None,
        }];
        let pepper = Pepper::new(PEPPER);
        assert!(verify(&pepper, &parsed, &keys, SystemTime::now()).is_ok());
        assert_ne!(generate(PEPPER).token, generated.token);
        // Debug output never shows the token.
        assert!(!format!("{generated:?}").contains(parsed.secret));
    }
}
