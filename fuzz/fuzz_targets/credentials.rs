#![no_main]
//! Fuzzes the credential parsers: API keys and BOS context handles never panic, forgeries never
//! verify, issued handles round-trip (see `sluice::auth::props`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sluice::auth::props::credentials(data);
});
