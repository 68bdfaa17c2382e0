//! Bounded request-body collection into one contiguous `BytesMut` (simd-json parses it in place).
//!
//! Rejects early: a `Content-Length` over the limit is refused before a byte is read, and a body
//! without one (chunked, or h2 without the header) is refused as soon as it streams past the limit.
//! A body that stops arriving is refused once no frame came for the read timeout. Also owns
//! [`drain_refused`]: the small body of a request refused before it was read is read and dropped,
//! so the connection stays usable. Must not interpret the bytes.

use std::time::Duration;

use bytes::{Buf, BytesMut};
use futures_util::FutureExt as _;
use http::header::{HeaderMap, CONTENT_LENGTH};
use http_body::Body;
use http_body_util::BodyExt;

use super::error::Error;

/// Default for the largest request body accepted; a larger one is answered 413 Payload Too Large.
pub(crate) const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Default for how long a request body may pause between two chunks; past it the request is
/// answered 408 Request Timeout (with a JSON-RPC error) and, on HTTP/1, the connection closes.
pub(crate) const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest capacity reserved up front from a declared `Content-Length`: a peer's claim is not
/// trusted with more memory than this before the bytes actually arrive.
const MAX_PREALLOCATE: usize = 64 * 1024;

/// The declared `Content-Length`, when present and well-formed.
pub(crate) fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Largest body of a refused request (401, 403, 404 before the body was read) that is read and
/// dropped so its connection can serve the next request; a larger or undeclared one is not read,
/// and hyper closes the connection after the answer.
pub(crate) const DRAIN_REFUSED_MAX_BYTES: u64 = 64 * 1024;

/// How long reading a refused request's body may take before it is given up (the connection
/// then closes after the answer).
pub(crate) const DRAIN_REFUSED_TIMEOUT: Duration = Duration::from_secs(1);

/// Reads and drops the body of a request refused before its body was needed, when it declares at
/// most [`DRAIN_REFUSED_MAX_BYTES`] and arrives within [`DRAIN_REFUSED_TIMEOUT`].
///
/// Why: hyper reuses an HTTP/1.1 connection after a response only if the request's body was read
/// to its end; when the body is dropped unread, hyper discards what has already arrived and
/// closes the connection if more is due. A client that wrote the head and the body in two
/// segments (httpx does) and sends its next request on the same connection (an MCP SDK
/// following a 401 challenge to the resource metadata) then sees the connection closed under
/// that next request.
pub(crate) async fn drain_refused<B>(body: B, declared: Option<u64>)
where
    B: Body + Unpin,
{
    if declared.is_none_or(|len| len > DRAIN_REFUSED_MAX_BYTES) {
        return;
    }
    let mut body = body;
    let mut read = 0u64;
    let drain = async {
        while let Some(Ok(frame)) = body.frame().await {
            if let Some(data) = frame.data_ref() {
                read += data.remaining() as u64;
                if read > DRAIN_REFUSED_MAX_BYTES {
                    return;
                }
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_REFUSED_TIMEOUT, drain).await;
}

/// Collects `body` into one buffer of at most `limit` bytes, each chunk arriving within
/// `read_timeout` of the previous one (or of the start).
///
/// `declared` is the request's `Content-Length` (see [`content_length`]).
pub(crate) async fn collect_limited<B>(
    body: B,
    declared: Option<u64>,
    limit: usize,
    read_timeout: Duration,
) -> Result<BytesMut, Error>
where
    B: Body,
    B::Error: std::fmt::Display,
{
    if let Some(len) = declared {
        if len > limit as u64 {
            return Err(Error::PayloadTooLarge { limit });
        }
    }
    let declared = declared.map(|len| len as usize);
    let reserve = declared.map_or(0, |len| len.min(MAX_PREALLOCATE));
    // A `Vec`, not a `BytesMut`, while it grows: its growth is ours to size (see [`grow`]).
    let mut buf = Vec::with_capacity(reserve);
    let mut body = std::pin::pin!(body);
    loop {
        // A frame already there costs no timer.
        let next = match body.frame().now_or_never() {
            Some(next) => next,
            None => tokio::time::timeout(read_timeout, body.frame())
                .await
                .map_err(|_| Error::BodyTimeout { read_timeout })?,
        };
        let Some(frame) = next else { break };
        let frame = frame.map_err(|err| Error::BodyRead(err.to_string()))?;
        if let Ok(mut data) = frame.into_data() {
            if buf.len() + data.remaining() > limit {
                return Err(Error::PayloadTooLarge { limit });
            }
            grow(&mut buf, data.remaining(), declared);
            while data.has_remaining() {
                let chunk = data.chunk();
                buf.extend_from_slice(chunk);
                let n = chunk.len();
                data.advance(n);
            }
        }
    }
    // Zero-copy both ways: `Bytes` takes the vector's allocation and, being its only owner,
    // hands it to the `BytesMut`.
    Ok(BytesMut::from(bytes::Bytes::from(buf)))
}

/// Makes room in `buf` for `incoming` more bytes. Capacity at least doubles, as a vector's
/// does, so a body costs O(log n) copies; but with a declared length it never passes that
/// length, so a body that keeps its word ends in a buffer of exactly its size (a doubling
/// `BytesMut` would end at up to twice it), and one that sends more is still grown.
fn grow(buf: &mut Vec<u8>, incoming: usize, declared: Option<usize>) {
    let needed = buf.len() + incoming;
    if needed <= buf.capacity() {
        return;
    }
    let doubled = needed.max(buf.capacity().saturating_mul(2));
    let target = match declared {
        Some(declared) => doubled.min(declared).max(needed),
        None => doubled,
    };
    buf.reserve_exact(target - buf.len());
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http_body_util::{Full, StreamBody};

    fn run<B>(body: B, declared: Option<u64>, limit: usize) -> Result<BytesMut, Error>
    where
        B: Body,
        B::Error: std::fmt::Display,
    {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .map_err(|err| Error::BodyRead(err.to_string()))?
            .block_on(collect_limited(
                body,
                declared,
                limit,
                DEFAULT_BODY_READ_TIMEOUT,
            ))
    }

    fn chunks(parts: &[&'static str]) -> impl Body<Data = Bytes, Error = std::convert::Infallible> {
        let frames: Vec<Result<http_body::Frame<Bytes>, std::convert::Infallible>> = parts
            .iter()
            .map(|part| Ok(http_body::Frame::data(Bytes::from_static(part.as_bytes()))))
            .collect();
        StreamBody::new(futures_util::stream::iter(frames))
    }

    fn check(parts: &[&'static str], declared: Option<u64>, limit: usize, expected: Option<&str>) {
        let got = run(chunks(parts), declared, limit);
        match (got, expected) {
            (Ok(buf), Some(want)) => assert_eq!(&buf[..], want.as_bytes()),
            (Err(Error::PayloadTooLarge { limit: l }), None) => assert_eq!(l, limit),
            (got, want) => panic!("{parts:?} limit {limit}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn limits() {
        check(&["abc"], Some(3), 3, Some("abc"));
        check(&["abc"], None, 3, Some("abc"));
        check(&["ab", "c"], None, 3, Some("abc"));
        check(&["ab", "cd"], None, 3, None);
        check(&["abcd"], None, 3, None);
        check(&[], Some(4), 3, None);
        check(&[], None, 0, Some(""));
        check(&["a", "b", "c", "d", "e"], None, 5, Some("abcde"));
        check(&["a", "b", "c", "d", "e", "f"], None, 5, None);
    }

    type Frames = Result<http_body::Frame<Bytes>, std::convert::Infallible>;

    /// A body sending `n` one-byte chunks `gap` apart, then ending, or stalling with `stall`.
    fn paced(
        n: usize,
        gap: Duration,
        stall: bool,
    ) -> impl Body<Data = Bytes, Error = std::convert::Infallible> {
        use futures_util::StreamExt as _;
        let chunks = futures_util::stream::unfold(0, move |sent| async move {
            if sent == n {
                return None;
            }
            tokio::time::sleep(gap).await;
            let frame: Frames = Ok(http_body::Frame::data(Bytes::from_static(b"x")));
            Some((frame, sent + 1))
        });
        let tail = futures_util::stream::iter(stall.then_some(()))
            .flat_map(|()| futures_util::stream::pending::<Frames>());
        StreamBody::new(chunks.chain(tail))
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_may_pause_up_to_the_read_timeout_between_chunks() {
        let timeout = Duration::from_secs(1);
        let slow = paced(5, Duration::from_millis(900), false);
        let got = collect_limited(slow, None, 10, timeout).await;
        assert!(matches!(got, Ok(buf) if &buf[..] == b"xxxxx"));

        let stalled = paced(2, Duration::from_millis(10), true);
        let got = collect_limited(stalled, None, 10, timeout).await;
        assert!(
            matches!(got, Err(Error::BodyTimeout { read_timeout }) if read_timeout == timeout),
            "{got:?}"
        );

        let late = paced(1, Duration::from_millis(1_100), false);
        let got = collect_limited(late, None, 10, timeout).await;
        assert!(matches!(got, Err(Error::BodyTimeout { .. })), "{got:?}");
    }

    #[test]
    fn a_body_that_keeps_its_declared_length_ends_in_a_buffer_of_that_size() {
        let part: &'static str = Box::leak("x".repeat(100_000).into_boxed_str());
        let parts = [part; 10];
        let got = run(chunks(&parts), Some(1_000_000), 2_000_000).expect("collected");
        assert_eq!(got.len(), 1_000_000);
        assert_eq!(got.capacity(), 1_000_000);
        // Without a declared length the buffer doubles, bounded by twice the body.
        let got = run(chunks(&parts), None, 2_000_000).expect("collected");
        assert_eq!(got.len(), 1_000_000);
        assert!(got.capacity() < 2_000_000, "{}", got.capacity());
        // A body longer than declared is still read whole (hyper refuses it on HTTP/1; here the
        // collector must not lose it).
        let got = run(chunks(&parts), Some(500_000), 2_000_000).expect("collected");
        assert_eq!(got.len(), 1_000_000);
    }

    #[test]
    fn grow_never_passes_the_declared_length_while_the_body_keeps_to_it() {
        let mut buf = Vec::with_capacity(10);
        grow(&mut buf, 10, Some(35));
        assert_eq!(buf.capacity(), 10);
        buf.resize(10, 0);
        grow(&mut buf, 1, Some(35));
        assert_eq!(buf.capacity(), 20);
        buf.resize(20, 0);
        grow(&mut buf, 1, Some(35));
        assert_eq!(buf.capacity(), 35);
        buf.resize(35, 0);
        grow(&mut buf, 5, Some(35));
        assert_eq!(buf.capacity(), 40, "past its word: room for what came");
    }

    #[test]
    fn full_body() {
        let got = run(Full::new(Bytes::from_static(b"{}")), Some(2), 10);
        assert!(matches!(got, Ok(buf) if &buf[..] == b"{}"));
    }

    #[test]
    fn content_length_header() {
        let mut headers = HeaderMap::new();
        assert_eq!(content_length(&headers), None);
        headers.insert(CONTENT_LENGTH, http::HeaderValue::from_static("12"));
        assert_eq!(content_length(&headers), Some(12));
        headers.insert(CONTENT_LENGTH, http::HeaderValue::from_static("x"));
        assert_eq!(content_length(&headers), None);
    }
}
