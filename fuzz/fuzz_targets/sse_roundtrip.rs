#![no_main]
//! Fuzzes SSE encode→decode: events derived from the input come back unchanged (line breaks as LF).
libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice::sse::props::roundtrip(data));
