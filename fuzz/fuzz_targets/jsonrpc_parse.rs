#![no_main]
//! Fuzzes `jsonrpc::parse`: never panics, rejections are well-formed, and accepted messages
//! survive a write and a re-parse (`sluice::jsonrpc::props::parse_roundtrip`).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sluice::jsonrpc::props::parse_roundtrip(data);
});
