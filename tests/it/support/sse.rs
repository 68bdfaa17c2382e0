//! [`SseReader`]: an SSE answer (a POST answered as a stream, a GET stream, a legacy `/sse`
//! stream) read as it arrives with `sluice::sse::Decoder`, every byte also kept raw. Owns only
//! reading the stream; what the events must say is the tests' business.

use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::Value;

use super::{open, GUARD};

/// An SSE response read event by event.
pub(crate) struct SseReader {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Incoming,
    /// Every byte received so far, comments included.
    pub raw: Vec<u8>,
    buf: BytesMut,
    decoder: sluice::sse::Decoder,
    /// Whether a body error ends the stream (an instance going away mid-stream) instead of
    /// failing the test.
    tolerant: bool,
}

impl SseReader {
    /// Sends `req` on a fresh connection and reads its answer.
    pub(crate) async fn open(addr: SocketAddr, req: Request<Full<Bytes>>) -> SseReader {
        Self::of(open(addr, req).await)
    }

    /// Reads this response.
    pub(crate) fn of(response: http::Response<Incoming>) -> SseReader {
        let (parts, body) = response.into_parts();
        SseReader {
            status: parts.status,
            headers: parts.headers,
            body,
            raw: Vec::new(),
            buf: BytesMut::new(),
            decoder: sluice::sse::Decoder::new(),
            tolerant: false,
        }
    }

    /// A body error (the server went away) reads as the end of the stream.
    pub(crate) fn tolerant(mut self) -> SseReader {
        self.tolerant = true;
        self
    }

    /// The data of a body frame: `None` for a non-data frame, and for an error when
    /// [`SseReader::tolerant`] (else the error fails the test).
    fn data(&self, frame: Result<hyper::body::Frame<Bytes>, hyper::Error>) -> Option<Bytes> {
        let frame = if self.tolerant {
            frame.ok()?
        } else {
            frame.expect("body frame")
        };
        frame.into_data().ok()
    }

    /// The last event id the decoder has seen.
    pub(crate) fn last_event_id(&self) -> Option<&[u8]> {
        self.decoder.last_event_id()
    }

    /// A header's value, or `""`.
    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// Reads one more body chunk; false when the body ended.
    pub(crate) async fn read_chunk(&mut self) -> bool {
        self.next_chunk().await.is_some()
    }

    /// The next raw body chunk (to see comments and priming frames, which are not events); it
    /// is also kept for the event readers. `None` when the body ended.
    pub(crate) async fn next_chunk(&mut self) -> Option<Bytes> {
        let frame = tokio::time::timeout(GUARD, self.body.frame())
            .await
            .expect("a chunk in time")?;
        let data = self.data(frame)?;
        self.raw.extend_from_slice(&data);
        self.buf.extend_from_slice(&data);
        Some(data)
    }

    /// The next dispatched event, or `None` when the stream ended. Comments and priming events
    /// (an id with empty data) are not events, and keep-alive comments do not extend the hang
    /// guard.
    pub(crate) async fn next(&mut self) -> Option<sluice::sse::Event> {
        let deadline = tokio::time::Instant::now() + GUARD;
        loop {
            if let Some(event) = self.decoder.decode(&mut self.buf).expect("valid SSE") {
                return Some(event);
            }
            let frame = tokio::time::timeout_at(deadline, self.body.frame())
                .await
                .expect("an event in time")?;
            let data = match frame {
                Ok(frame) => frame.into_data().unwrap_or_default(),
                Err(_) if self.tolerant => return None,
                Err(err) => panic!("body frame: {err}"),
            };
            self.raw.extend_from_slice(&data);
            self.buf.extend_from_slice(&data);
        }
    }

    /// The next message event's data as JSON (priming events, with empty data, are skipped).
    pub(crate) async fn next_message(&mut self) -> Value {
        loop {
            let event = self.next().await.expect("an event");
            if event.data.is_empty() {
                continue;
            }
            return serde_json::from_slice(&event.data).unwrap_or_else(|err| {
                panic!(
                    "not JSON ({err}): {:?}",
                    String::from_utf8_lossy(&event.data)
                )
            });
        }
    }

    /// Whether the body ends with no further message events (priming events and keep-alives
    /// aside).
    pub(crate) async fn ends(&mut self) -> bool {
        let deadline = tokio::time::Instant::now() + GUARD;
        loop {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the stream did not end in time"
            );
            match self.next().await {
                None => return true,
                Some(event) if event.data.is_empty() => continue,
                Some(_) => return false,
            }
        }
    }

    /// The next frame as (id in force, data), a priming event included (as empty data), or
    /// `None` when the body ended. Frames are cut at their blank line and fed one at a time,
    /// so a priming event arriving in the same chunk as the response is still seen on its own.
    pub(crate) async fn frame(&mut self) -> Option<(Option<String>, Bytes)> {
        loop {
            let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") else {
                if !self.read_chunk().await {
                    return None;
                }
                continue;
            };
            let mut frame = self.buf.split_to(end + 2);
            let has_id = frame.starts_with(b"id:") || frame.windows(4).any(|w| w == b"\nid:");
            let decoded = self.decoder.decode(&mut frame).expect("valid SSE");
            let id = self
                .decoder
                .last_event_id()
                .map(|id| String::from_utf8_lossy(id).into_owned());
            match decoded {
                Some(event) => return Some((id, event.data)),
                None if has_id => return Some((id, Bytes::new())),
                None => {}
            }
        }
    }

    /// The next frame carrying a message, as JSON, with its id.
    pub(crate) async fn message(&mut self) -> Option<(Option<String>, Value)> {
        loop {
            let (id, data) = self.frame().await?;
            if !data.is_empty() {
                return Some((id, serde_json::from_slice(&data).expect("JSON data")));
            }
        }
    }

    /// Every message until the body ends.
    pub(crate) async fn rest(&mut self) -> Vec<Value> {
        let mut messages = Vec::new();
        while let Some((_, message)) = self.message().await {
            messages.push(message);
        }
        messages
    }
}
