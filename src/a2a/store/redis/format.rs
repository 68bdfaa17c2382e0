//! The formats of what the Redis task store writes in a field: the owner, push config
//! fields and values, and the index score of a status timestamp.

use bytes::Bytes;

use super::super::Owner;
use crate::session::redis_wire::component;

/// The `owner` field of a task: client and caller, escaped (so `\n` cannot occur in either).
pub(super) fn owner_field(owner: &Owner) -> String {
    format!("{}\n{}", component(&owner.client), component(&owner.caller))
}

/// The field of push configuration `config_id` (`n` is the insertion counter).
pub(super) fn push_field(config_id: &str) -> String {
    format!("c:{config_id}")
}

/// A stored push value `{n} {JSON}` as (insertion number, JSON).
pub(super) fn push_value(value: &[u8]) -> Option<(u64, Bytes)> {
    let space = memchr::memchr(b' ', value)?;
    let seq = std::str::from_utf8(value.get(..space)?)
        .ok()?
        .parse()
        .ok()?;
    Some((seq, Bytes::copy_from_slice(value.get(space + 1..)?)))
}

/// Milliseconds since the Unix epoch of an A2A timestamp (`2026-12-02T09:08:32.712Z`,
/// fraction optional, UTC only); 0 for anything else. Only the index's score: `list` orders
/// by the timestamp text itself, as the local store does.
pub(super) fn stamp_millis(stamp: &str) -> i64 {
    fn number(text: &str) -> Option<i64> {
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        text.parse().ok()
    }
    let parse = || -> Option<i64> {
        let body = stamp.strip_suffix('Z')?;
        let (date, time) = body.split_once('T')?;
        let mut date = date.splitn(3, '-');
        let (year, month, day) = (
            number(date.next()?)?,
            number(date.next()?)?,
            number(date.next()?)?,
        );
        let (clock, fraction) = time.split_once('.').unwrap_or((time, ""));
        let mut clock = clock.splitn(3, ':');
        let (hour, minute, second) = (
            number(clock.next()?)?,
            number(clock.next()?)?,
            number(clock.next()?)?,
        );
        let millis = match fraction.get(..fraction.len().min(3)) {
            Some("") | None => 0,
            Some(digits) => number(digits)? * 10_i64.pow(3 - digits.len() as u32),
        };
        if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
            return None;
        }
        // Days from the civil date (H. Hinnant's `days_from_civil`).
        let y = if month <= 2 { year - 1 } else { year };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let mp = (month + 9) % 12;
        let doy = (153 * mp + 2) / 5 + day - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis)
    };
    parse().unwrap_or(0)
}
