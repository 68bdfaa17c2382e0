//! The part of a message a handler reads later: `params`, `result` or `error.data`, kept as the
//! simd-json tape of the whole message plus which member it is.
//!
//! A [`Payload`] owns the tape built by `parse` (one allocation, no copy of the JSON) and lends
//! out a view of its member ([`Payload::value`], walked with `value_trait` accessors) or hands
//! the tape to `simd_json::Deserializer` to fill a typed struct ([`Payload::deserialize`]) whose
//! `&str` fields borrow the body. It must not validate envelopes (that is `parse.rs`).

use std::fmt;
#[cfg(test)]
use std::marker::PhantomData;

use bytes::{BufMut, BytesMut};
#[cfg(test)]
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
#[cfg(test)]
use serde::Deserialize;
use simd_json::prelude::Writable;
use simd_json::tape::{Tape, Value};

/// Which member of the message a [`Payload`] stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    /// `params` of a request or notification.
    Params,
    /// `result` of a response.
    Result,
    /// `error.data` of an error response.
    ErrorData,
}

impl Slot {
    /// Member names from the top-level object down to the payload.
    fn path(self) -> &'static [&'static str] {
        match self {
            Slot::Params => &["params"],
            Slot::Result => &["result"],
            Slot::ErrorData => &["error", "data"],
        }
    }
}

/// A JSON value inside a parsed message, readable without re-parsing the body.
pub struct Payload<'a> {
    /// The tape of the whole message; the payload is the member at `slot`'s path.
    tape: Tape<'a>,
    slot: Slot,
}

/// A payload did not fit the type it was deserialized into (answer with -32602 for params).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
#[cfg(test)]
pub(crate) struct PayloadError(#[from] simd_json::Error);

impl<'a> Payload<'a> {
    /// Wraps a message tape that `parse` checked has a member at `slot`'s path.
    pub(crate) fn new(tape: Tape<'a>, slot: Slot) -> Self {
        Self { tape, slot }
    }

    /// A view of the value, with `value_trait` accessors (`get`, `as_str`, `as_object`…).
    pub fn value(&self) -> Value<'_, 'a> {
        let mut value = self.tape.as_value();
        for key in self.slot.path() {
            // `parse` only builds a Payload whose path exists, so the fallback is unreachable;
            // it keeps this function total instead of panicking.
            value = match value.get(*key) {
                Some(member) => member,
                None => return Value::null(),
            };
        }
        value
    }

    /// Deserializes the value into `T`; `&str` fields may borrow from the body.
    #[cfg(test)]
    pub(crate) fn deserialize<T: Deserialize<'a>>(self) -> Result<T, PayloadError> {
        let mut deserializer = simd_json::Deserializer::from_tape(self.tape);
        let seed = Select {
            path: self.slot.path(),
            marker: PhantomData,
        };
        Ok(seed.deserialize(&mut deserializer)?)
    }

    /// Appends the value as compact JSON to `buf`.
    pub fn write_json(&self, buf: &mut BytesMut) {
        // Writing into a BytesMut cannot fail.
        let _ = self.value().write(&mut buf.writer());
    }

    /// The value as compact JSON bytes.
    pub(crate) fn to_json_vec(&self) -> Vec<u8> {
        let mut buf = BytesMut::new();
        self.write_json(&mut buf);
        buf.to_vec()
    }
}

impl fmt::Debug for Payload<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let json = self.to_json_vec();
        write!(f, "Payload({})", String::from_utf8_lossy(&json))
    }
}

impl PartialEq for Payload<'_> {
    /// Same JSON value (compared through the canonical compact text).
    fn eq(&self, other: &Self) -> bool {
        self.to_json_vec() == other.to_json_vec()
    }
}

// === impl Select ===

/// Deserializes `T` from the member at `path`, skipping the other members.
#[cfg(test)]
struct Select<'p, T> {
    path: &'p [&'static str],
    marker: PhantomData<T>,
}

#[cfg(test)]
impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for Select<'_, T> {
    type Value = T;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        match self.path.split_first() {
            None => T::deserialize(deserializer),
            Some((key, rest)) => deserializer.deserialize_map(SelectVisitor {
                key,
                rest,
                marker: PhantomData,
            }),
        }
    }
}

#[cfg(test)]
struct SelectVisitor<'p, T> {
    key: &'static str,
    rest: &'p [&'static str],
    marker: PhantomData<T>,
}

#[cfg(test)]
impl<'de, T: Deserialize<'de>> Visitor<'de> for SelectVisitor<'_, T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an object with member {:?}", self.key)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let mut selected = None;
        // simd-json requires every member to be consumed, so keep skipping after the match.
        while let Some(is_key) = map.next_key_seed(KeyIs(self.key))? {
            if is_key && selected.is_none() {
                selected = Some(map.next_value_seed(Select {
                    path: self.rest,
                    marker: PhantomData,
                })?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        selected.ok_or_else(|| de::Error::missing_field(self.key))
    }
}

/// Deserializes a map key into "is it this key?".
#[cfg(test)]
struct KeyIs(&'static str);

#[cfg(test)]
impl<'de> DeserializeSeed<'de> for KeyIs {
    type Value = bool;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_str(self)
    }
}

#[cfg(test)]
impl<'de> Visitor<'de> for KeyIs {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<bool, E> {
        Ok(key == self.0)
    }
}
