//! A `Stream` of SSE events over any `Stream` of byte chunks.
//!
//! Owns only the plumbing between chunks and the [`Decoder`]: each chunk is decoded in place (so
//! events are zero-copy slices of it), and only a frame cut by a chunk boundary is copied into a
//! small carry buffer, line by line, until its blank line arrives. Must not parse SSE itself; that is `decode.rs`.

use std::fmt;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use futures_core::Stream;

use super::decode::{DecodeError, Decoder, Event};

/// Why an [`EventStream`] ended with an error.
#[derive(Debug)]
pub enum StreamError<E> {
    /// The bytes were not a valid event stream (see [`DecodeError`]).
    Decode(DecodeError),
    /// The underlying byte stream failed.
    Transport(E),
}

impl<E: fmt::Display> fmt::Display for StreamError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::Decode(error) => write!(f, "{error}"),
            StreamError::Transport(error) => write!(f, "SSE transport failed: {error}"),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for StreamError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StreamError::Decode(error) => Some(error),
            StreamError::Transport(error) => Some(error),
        }
    }
}

pin_project_lite::pin_project! {
    /// Adapts any `Stream<Item = Result<Bytes, E>>` into a stream of events.
    ///
    /// The stream ends after the first error. An event still incomplete when the byte stream
    /// ends is discarded, as the standard requires.
    pub struct EventStream<S> {
        #[pin]
        inner: S,
        decoder: Decoder,
        // The rest of the current chunk, decoded in place.
        chunk: Bytes,
        // A frame cut by a chunk boundary, fed line by line from `chunk`.
        carry: BytesMut,
        done: bool,
    }
}

impl<S> EventStream<S> {
    /// Wraps `inner` with a default [`Decoder`].
    pub fn new(inner: S) -> Self {
        Self::with_decoder(inner, Decoder::new())
    }

    /// Wraps `inner` with a configured decoder (for example [`Decoder::with_max_frame`]).
    pub(crate) fn with_decoder(inner: S, decoder: Decoder) -> Self {
        EventStream {
            inner,
            decoder,
            chunk: Bytes::new(),
            carry: BytesMut::new(),
            done: false,
        }
    }

    /// The decoder, for `last_event_id` and `retry` when reconnecting.
    pub fn decoder(&self) -> &Decoder {
        &self.decoder
    }
}

impl<S, E> Stream for EventStream<S>
where
    S: Stream<Item = Result<Bytes, E>>,
{
    type Item = Result<Event, StreamError<E>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        if *this.done {
            return Poll::Ready(None);
        }
        loop {
            let decoded = if this.carry.is_empty() {
                let decoded = this.decoder.decode_input(this.chunk);
                if decoded == Ok(None) && !this.chunk.is_empty() {
                    // An incomplete frame: keep it until its end arrives.
                    this.carry.extend_from_slice(this.chunk);
                    *this.chunk = Bytes::new();
                }
                decoded
            } else {
                this.decoder.decode_input(this.carry)
            };
            match decoded {
                Ok(Some(event)) => return Poll::Ready(Some(Ok(event))),
                Ok(None) if !this.chunk.is_empty() => {
                    if !this.carry.is_empty() {
                        feed_line(this.carry, this.chunk);
                    }
                    continue;
                }
                Ok(None) => {}
                Err(error) => {
                    *this.done = true;
                    return Poll::Ready(Some(Err(StreamError::Decode(error))));
                }
            }
            match ready!(this.inner.as_mut().poll_next(cx)) {
                Some(Ok(bytes)) => {
                    *this.chunk = bytes;
                    if !this.carry.is_empty() {
                        feed_line(this.carry, this.chunk);
                    }
                }
                Some(Err(error)) => {
                    *this.done = true;
                    return Poll::Ready(Some(Err(StreamError::Transport(error))));
                }
                None => {
                    *this.done = true;
                    return Poll::Ready(None);
                }
            }
        }
    }
}

/// Moves the next line of `chunk` (up to and including its line end, or all of it) to the end of
/// the carried frame. Only the lines of a frame cut by a chunk boundary are copied; the decoder
/// resumes where it stopped, so nothing is parsed twice.
fn feed_line(carry: &mut BytesMut, chunk: &mut Bytes) {
    let line_len = memchr::memchr2(b'\n', b'\r', chunk).map_or(chunk.len(), |end| end + 1);
    carry.extend_from_slice(chunk.get(..line_len).unwrap_or_default());
    chunk.advance(line_len.min(chunk.len()));
}
