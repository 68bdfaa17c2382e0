#![no_main]
//! Fuzzes the SSE decoder: same events and errors whatever the chunking, and equal to the naive reference.
libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice::sse::props::decode_chunked(data));
