//! TEMPORARY STUB (replaced by the h16-v03 merge).
use super::A2aError;
use serde_json::Value;
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Version {
    V03,
    V1,
}
impl Version {
    pub(crate) fn from_header(value: Option<&http::HeaderValue>) -> Result<Version, A2aError> {
        match value.map(|v| v.as_bytes()) {
            None | Some(b"") => Ok(Version::V03),
            Some(v) if v.starts_with(b"0.3") => Ok(Version::V03),
            Some(v) if v.starts_with(b"1") => Ok(Version::V1),
            Some(v) => Err(A2aError::VersionNotSupported(
                String::from_utf8_lossy(v).into_owned(),
            )),
        }
    }
    pub(crate) fn is_v1(self) -> bool {
        self == Version::V1
    }
}
pub(crate) fn method_to_v1(method: &str) -> Option<&'static str> {
    match method {
        "message/send" => Some("SendMessage"),
        _ => None,
    }
}
pub(crate) fn params_to_v1(_method_v1: &str, params: Value) -> Result<Value, A2aError> {
    Ok(params)
}
pub(crate) fn result_to_v03(_method_v1: &str, result: Value) -> Value {
    result
}
pub(crate) fn event_to_v03(event: &Value, _last: bool) -> Value {
    event.clone()
}
pub(crate) fn card_v03_members(_card: &mut Value) {}
