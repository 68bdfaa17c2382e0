#![no_main]
//! Placeholder.
libfuzzer_sys::fuzz_target!(|_data: &[u8]| {});
