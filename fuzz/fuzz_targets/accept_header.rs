#![no_main]
//! Fuzzes the `Accept` parser: never panics, deterministic, case-insensitive, and one header
//! with commas means the same as several headers (see `sluice::http::negotiate::props`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sluice::http::negotiate::props::accept_header(data);
});
