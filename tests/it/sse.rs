//! Integration tests: sse.
//!
//! Owns the codec's checks that span modules: the fuzz corpus replayed as regression tests, the
//! property tests of the decoder against the naive reference (arbitrary streams cut at
//! arbitrary chunk boundaries) and of encode→decode, and an end-to-end run of encoder frames
//! through a real hyper server and client on 127.0.0.1 into an `EventStream`.

use std::convert::Infallible;
use std::path::PathBuf;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use http_body_util::{BodyDataStream, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::TokioIo;
use proptest::prelude::*;
use sluice::sse::{props, Encoder, Event, EventStream};

// === corpus replay ===

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect();
    files.sort();
    assert!(files.len() >= 10, "the {target} corpus lost its seeds");
    files
}

fn replay(target: &str, property: fn(&[u8])) {
    for (path, bytes) in corpus(target) {
        let outcome = std::panic::catch_unwind(|| property(&bytes));
        assert!(outcome.is_ok(), "{} fails the property", path.display());
    }
}

#[test]
fn sse_decode_corpus_replays() {
    replay("sse_decode", props::decode_chunked);
}

#[test]
fn sse_roundtrip_corpus_replays() {
    replay("sse_roundtrip", props::roundtrip);
}

#[test]
fn corpus_seeds_produce_events() {
    // The seeds are meant to exercise the decoder, not to be rejected up front.
    let mut n_events = 0;
    for (_, bytes) in corpus("sse_decode") {
        let (max_frame, lengths, stream) = props::split_input(&bytes);
        let pieces = props::chunks(stream, &lengths);
        n_events += props::decode_buffered(&pieces, max_frame).0.len();
    }
    assert!(n_events >= 15, "only {n_events} events from the corpus");
}

// === property tests ===

/// Streams built mostly from the tokens the parser cares about, so cases hit its branches.
fn sse_like_stream() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        Just(b"data".to_vec()),
        Just(b"data:".to_vec()),
        Just(b"data: ".to_vec()),
        Just(b"event: ".to_vec()),
        Just(b"event:message".to_vec()),
        Just(b"id: ".to_vec()),
        Just(b"id".to_vec()),
        Just(b"retry: ".to_vec()),
        Just(b"retry:".to_vec()),
        Just(b":".to_vec()),
        Just(b" ".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\n\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\0".to_vec()),
        Just(b"\xEF\xBB\xBF".to_vec()),
        Just(b"\xEF\xBB".to_vec()),
        Just(b"12".to_vec()),
        Just(b"message".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..8),
        "[a-z{}\":,]{0,40}".prop_map(String::into_bytes),
    ];
    proptest::collection::vec(token, 0..60).prop_map(|tokens| tokens.concat())
}

fn max_frame() -> impl Strategy<Value = usize> {
    prop_oneof![Just(sluice::sse::DEFAULT_MAX_FRAME), 3usize..200]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn decoder_matches_reference_on_sse_like_streams(
        stream in sse_like_stream(),
        lengths in proptest::collection::vec(0usize..40, 0..12),
        max_frame in max_frame(),
    ) {
        props::check_stream(&stream, &lengths, max_frame);
    }

    #[test]
    fn decoder_matches_reference_on_arbitrary_bytes(
        stream in proptest::collection::vec(any::<u8>(), 0..400),
        lengths in proptest::collection::vec(0usize..64, 0..12),
        max_frame in max_frame(),
    ) {
        props::check_stream(&stream, &lengths, max_frame);
    }

    #[test]
    fn decode_chunked_never_panics_otherwise(data in proptest::collection::vec(any::<u8>(), 0..400)) {
        props::decode_chunked(&data);
    }

    #[test]
    fn encoded_events_round_trip(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        props::roundtrip(&data);
    }
}

// === end to end over a socket ===

/// Frames the server sends: a priming frame, then messages whose payloads need every feature
/// (multi-line data, CRLF, JSON), with comments between them.
/// An event as the test compares it: data and id.
type DataAndId = (Vec<u8>, Option<Vec<u8>>);

fn server_frames() -> (Vec<Bytes>, Vec<DataAndId>) {
    let mut encoder = Encoder::new();
    let mut frames = vec![encoder.priming(b"i1.s1.0", Some(2500))];
    let mut expected = vec![(Vec::new(), Some(b"i1.s1.0".to_vec()))];
    for n in 1..=200u32 {
        let id = format!("i1.s1.{n}");
        let payload = match n % 3 {
            0 => format!("plain {n}").into_bytes(),
            1 => format!("two\r\nlines {n}").into_bytes(),
            _ => serde_json::to_vec(&serde_json::json!({"jsonrpc": "2.0", "id": n})).unwrap(),
        };
        frames.push(encoder.message(Some(id.as_bytes()), &payload));
        if n % 10 == 0 {
            frames.push(encoder.comment(b"keepalive"));
        }
        expected.push((
            props::normalize_line_breaks(&payload),
            Some(id.into_bytes()),
        ));
    }
    (frames, expected)
}

#[tokio::test]
async fn encoder_frames_decode_through_hyper_over_tcp() {
    let (frames, expected) = server_frames();
    // Re-cut the byte stream at odd places, so frames and CRLF pairs straddle body chunks.
    let wire: Vec<u8> = frames.iter().flat_map(|frame| frame.to_vec()).collect();
    let chunks: Vec<Bytes> = wire.chunks(37).map(Bytes::copy_from_slice).collect();

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        let service = hyper::service::service_fn(move |_request| {
            let chunks = chunks.clone();
            async move {
                let body = StreamBody::new(futures::stream::iter(
                    chunks
                        .into_iter()
                        .map(|chunk| Ok::<_, Infallible>(Frame::data(chunk))),
                ));
                let response = hyper::Response::builder()
                    .header("content-type", "text/event-stream")
                    .body(body)
                    .unwrap();
                Ok::<_, Infallible>(response)
            }
        });
        hyper::server::conn::http1::Builder::new()
            .serve_connection(TokioIo::new(socket), service)
            .await
            .unwrap();
    });

    let socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(socket))
        .await
        .unwrap();
    tokio::spawn(connection);
    let request = hyper::Request::get("/stream")
        .body(http_body_util::Empty::<Bytes>::new())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");

    let events = EventStream::new(BodyDataStream::new(response.into_body()));
    let events: Vec<Event> = events.try_collect().await.unwrap();
    let got: Vec<DataAndId> = events
        .iter()
        .map(|event| (event.data.to_vec(), event.id.as_ref().map(|id| id.to_vec())))
        .collect();
    assert_eq!(got, expected);
    assert!(events.iter().all(|event| event.retry == Some(2500)));
    assert_eq!(events[0].event, "");
    assert!(events[1..].iter().all(|event| event.event == "message"));
    // Closing the client connection ends the server's keep-alive wait.
    drop(sender);
    server.await.unwrap();
}

#[tokio::test]
async fn event_stream_ends_with_the_transport_error() {
    let chunks = vec![
        Ok(Bytes::from_static(b"data: a\n\ndata: b")),
        Err("connection reset"),
    ];
    let mut events = EventStream::new(futures::stream::iter(chunks));
    assert_eq!(events.next().await.unwrap().unwrap().data, "a");
    assert!(matches!(
        events.next().await,
        Some(Err(sluice::sse::StreamError::Transport("connection reset")))
    ));
    assert!(events.next().await.is_none());
}
