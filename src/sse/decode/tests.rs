//! Unit tests of `decode.rs`.
use super::parse::parse_retry;
use super::*;

/// Decodes `input` fed as the given chunks; returns each event as
/// `(event, data, id, retry)` with lossy strings, or `"error"` once decoding failed.
fn run(chunks: &[&[u8]], max_frame: usize) -> Vec<String> {
    let mut decoder = Decoder::with_max_frame(max_frame);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(event)) => out.push(show(&event)),
                Ok(None) => break,
                Err(_) => {
                    out.push("error".to_owned());
                    return out;
                }
            }
        }
    }
    out
}

fn show(event: &Event) -> String {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let mut s = format!("{}|{}", text(&event.event), text(&event.data));
    if let Some(id) = &event.id {
        s.push_str(&format!("|id={}", text(id)));
    }
    if let Some(retry) = event.retry {
        s.push_str(&format!("|retry={retry}"));
    }
    s
}

#[track_caller]
fn check(input: &[u8], expected: &[&str]) {
    assert_eq!(run(&[input], DEFAULT_MAX_FRAME), expected, "one piece");
    // Every two-way split gives the same answer.
    for cut in 0..=input.len() {
        let (a, b) = input.split_at(cut);
        assert_eq!(run(&[a, b], DEFAULT_MAX_FRAME), expected, "cut at {cut}");
    }
    // So does byte by byte.
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(run(&bytes, DEFAULT_MAX_FRAME), expected, "byte by byte");
}

#[test]
fn simple_message() {
    check(b"data: hello\n\n", &["|hello"]);
    check(
        b"event: message\ndata: {\"a\":1}\n\n",
        &["message|{\"a\":1}"],
    );
}

#[test]
fn bom_stripped_at_stream_start() {
    check(b"\xEF\xBB\xBFdata: a\n\n", &["|a"]);
}

#[test]
fn bom_only_at_stream_start() {
    // A second BOM is part of a field name, so the line is an unknown field.
    check(b"\xEF\xBB\xBFdata: a\n\n\xEF\xBB\xBFdata: b\n\n", &["|a"]);
    check(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\n", &[]);
}

#[test]
fn partial_bom_is_not_a_bom() {
    check(b"\xEF\xBBdata: a\n\n", &[]);
    check(b"\xEFdata: a\n\ndata: b\n\n", &["|b"]);
}

#[test]
fn crlf_line_ends() {
    check(b"data: a\r\ndata: b\r\n\r\n", &["|a\nb"]);
}

#[test]
fn cr_line_ends() {
    check(b"data: a\rdata: b\r\r", &["|a\nb"]);
}

#[test]
fn mixed_line_ends() {
    check(b"data: a\r\ndata: b\rdata: c\n\r\n", &["|a\nb\nc"]);
}

#[test]
fn cr_at_chunk_end_then_lf() {
    // The LF at the start of the second chunk completes the CRLF; no extra blank line.
    assert_eq!(run(&[b"data: a\r", b"\ndata: b\r\n\r\n"], 64), ["|a\nb"]);
    assert_eq!(run(&[b"data: a\r\n\r", b"\ndata: b\n\n"], 64), ["|a", "|b"]);
    assert_eq!(run(&[b"data: a\r", b"", b"\n\r", b"\n"], 64), ["|a"]);
}

#[test]
fn cr_cr_is_a_blank_line() {
    check(b"data: a\r\rdata: b\n\n", &["|a", "|b"]);
}

#[test]
fn comments_ignored() {
    check(b": keepalive\n\n", &[]);
    check(b":\ndata: a\n: between\ndata: b\n\n", &["|a\nb"]);
}

#[test]
fn field_without_colon() {
    // "data" alone appends an empty line.
    check(b"data\n\n", &["|"]);
    check(b"data\ndata\n\n", &["|\n"]);
    check(b"data: a\ndata\n\n", &["|a\n"]);
    check(b"event\ndata: x\n\n", &["|x"]);
}

#[test]
fn one_leading_space_stripped() {
    check(b"data:a\n\n", &["|a"]);
    check(b"data: a\n\n", &["|a"]);
    check(b"data:  a\n\n", &["| a"]);
    check(b"data: a \n\n", &["|a "]);
    check(b"data:\n\n", &["|"]);
    check(b"data: \n\n", &["|"]);
}

#[test]
fn multi_line_data_joined_with_lf() {
    check(b"data: a\ndata: b\ndata: c\n\n", &["|a\nb\nc"]);
    check(b"data: a\ndata:\ndata: c\n\n", &["|a\n\nc"]);
}

#[test]
fn id_sets_last_event_id() {
    check(
        b"id: 1\ndata: a\n\ndata: b\n\nid: 2\ndata: c\n\n",
        &["|a|id=1", "|b|id=1", "|c|id=2"],
    );
}

#[test]
fn empty_id_resets_last_event_id() {
    check(b"id: 1\ndata: a\n\nid\ndata: b\n\n", &["|a|id=1", "|b"]);
    check(b"id: 1\ndata: a\n\nid:\ndata: b\n\n", &["|a|id=1", "|b"]);
}

#[test]
fn id_with_nul_ignored() {
    check(
        b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n",
        &["|a|id=1", "|b|id=1"],
    );
}

#[test]
fn retry_only_ascii_digits() {
    check(b"retry: 3000\ndata: a\n\n", &["|a|retry=3000"]);
    check(b"retry: 30x\ndata: a\n\n", &["|a"]);
    check(b"retry: -1\ndata: a\n\n", &["|a"]);
    check(b"retry: \ndata: a\n\n", &["|a"]);
    check(b"retry:  10\ndata: a\n\n", &["|a"]);
    check(b"retry: 99999999999999999999999\ndata: a\n\n", &["|a"]);
    // The reconnection time persists.
    check(
        b"retry: 10\ndata: a\n\nretry: x\ndata: b\n\n",
        &["|a|retry=10", "|b|retry=10"],
    );
}

#[test]
fn empty_data_dispatches_nothing_but_sets_id() {
    check(b"id: 7\n\ndata: a\n\n", &["|a|id=7"]);
    check(b"event: x\nid: 7\n\ndata: a\n\n", &["|a|id=7"]);
}

#[test]
fn unknown_fields_ignored() {
    check(b"foo: bar\ndata: a\nDATA: b\n\n", &["|a"]);
}

#[test]
fn event_type_reset_after_dispatch() {
    check(b"event: x\ndata: a\n\ndata: b\n\n", &["x|a", "|b"]);
    check(b"event: x\nevent:\ndata: a\n\n", &["|a"]);
}

#[test]
fn end_of_stream_discards_pending_event() {
    check(b"data: a\n\ndata: b\n", &["|a"]);
    check(b"data: a\n\ndata: b", &["|a"]);
}

#[test]
fn priming_event_is_dispatched_with_empty_data() {
    check(
        b"retry: 500\nid: s.1.0\ndata: \n\n",
        &["||id=s.1.0|retry=500"],
    );
}

#[test]
fn single_data_line_is_zero_copy() {
    let mut buf = BytesMut::from(&b"event: message\nid: 1\ndata: {\"x\":1}\n\ndata: y\n\n"[..]);
    let range = buf.as_ptr() as usize..buf.as_ptr() as usize + buf.len();
    let mut decoder = Decoder::new();
    for (n, expected) in [&b"{\"x\":1}"[..], b"y"].into_iter().enumerate() {
        let event = decoder.decode(&mut buf).unwrap().unwrap();
        assert_eq!(event.data, expected);
        let id = event.id.unwrap();
        // The frame's own id is a slice of the input too; the inherited one is a copy.
        assert_eq!(range.contains(&(id.as_ptr() as usize)), n == 0);
        let start = event.data.as_ptr() as usize;
        assert!(range.contains(&start), "data was copied");
        assert!(range.contains(&(start + event.data.len() - 1)));
    }
    assert_eq!(decoder.last_event_id(), Some(&b"1"[..]));
}

#[test]
fn frame_split_across_chunks_is_not_copied_either() {
    let mut decoder = Decoder::new();
    // The caller's buffer has room for the rest, so appending does not move it.
    let mut buf = BytesMut::with_capacity(64);
    buf.extend_from_slice(b"data: abc\n");
    let range = buf.as_ptr() as usize..buf.as_ptr() as usize + buf.capacity();
    assert_eq!(decoder.decode(&mut buf), Ok(None));
    buf.extend_from_slice(b"\n");
    let event = decoder.decode(&mut buf).unwrap().unwrap();
    assert_eq!(event.data, "abc");
    assert!(range.contains(&(event.data.as_ptr() as usize)));
}

#[test]
fn frame_too_large() {
    let max = 16;
    // 15 + 1 bytes fits exactly.
    assert_eq!(run(&[b"data: 123456789\n\n"], max), ["|123456789"]);
    assert_eq!(run(&[b"data: 1234567890\n\n"], max), ["error"]);
    // Every line of the frame counts, comments too.
    assert_eq!(run(&[b": 12345\ndata: 12\n\n"], max), ["error"]);
    // Frames are counted separately.
    assert_eq!(
        run(&[b"data: 1\n\ndata: 2\n\ndata: 3\n\n"], max),
        ["|1", "|2", "|3"]
    );
    // Once failed, always failed.
    assert_eq!(
        run(&[b"data: 1234567890\n\n", b"data: 1\n\n"], max),
        ["error"]
    );
}

#[test]
fn frame_too_large_without_line_end() {
    let max = 1024;
    let mut decoder = Decoder::with_max_frame(max);
    let mut buf = BytesMut::new();
    let mut result = Ok(None);
    for _ in 0..100 {
        buf.extend_from_slice(&[b'x'; 100]);
        result = decoder.decode(&mut buf);
        if result.is_err() {
            break;
        }
    }
    assert_eq!(result, Err(DecodeError::FrameTooLarge));
    assert!(buf.len() <= max + 100);
}

#[test]
fn long_line_in_small_pieces() {
    let line = vec![b'a'; 10_000];
    let mut input = b"data: ".to_vec();
    input.extend_from_slice(&line);
    input.extend_from_slice(b"\n\n");
    let chunks: Vec<&[u8]> = input.chunks(7).collect();
    let out = run(&chunks, DEFAULT_MAX_FRAME);
    assert_eq!(out, [format!("|{}", String::from_utf8_lossy(&line))]);
}

#[test]
fn fast_path_shapes_match_the_line_parser() {
    // Each is the common frame shape or one byte away from it; `check` also feeds every
    // split, so the same bytes go through the line-by-line parser too.
    check(b"event: message\nid: 1\ndata: {}\n\n", &["message|{}|id=1"]);
    check(b"id: 1\ndata: a\n\ndata: b\n\n", &["|a|id=1", "|b|id=1"]);
    check(b"id: 1\ndata: a\n\nid: \ndata: b\n\n", &["|a|id=1", "|b"]);
    check(b"id: 1\x002\ndata: a\n\n", &["|a"]);
    check(b"data: a\rb\n\n", &["|a"]);
    check(b"data: a\rdata: b\n\n", &["|a\nb"]);
    check(b"data: a\n\r\n", &["|a"]);
    check(b"id: 1\r\ndata: a\n\n", &["|a|id=1"]);
    check(b"event: messages\ndata: a\n\n", &["messages|a"]);
    check(b"data:  a\n\n", &["| a"]);
    check(b"data: \n\n", &["|"]);
}

#[test]
fn fast_path_respects_the_frame_limit() {
    // "data: 12345678\n" is 15 bytes: fits in 15, not in 14.
    assert_eq!(run(&[b"data: 12345678\n\n"], 15), ["|12345678"]);
    assert_eq!(run(&[b"data: 12345678\n\n"], 14), ["error"]);
    let frame: &[u8] = b"event: message\nid: 1\ndata: 1\n\n";
    assert_eq!(run(&[frame], 29), ["message|1|id=1"]);
    assert_eq!(run(&[frame], 28), ["error"]);
}

#[test]
fn retry_parser() {
    assert_eq!(parse_retry(b"0"), Some(0));
    assert_eq!(parse_retry(b"18446744073709551615"), Some(u64::MAX));
    assert_eq!(parse_retry(b"18446744073709551616"), None);
    assert_eq!(parse_retry(b""), None);
    assert_eq!(parse_retry(b"1 "), None);
}
