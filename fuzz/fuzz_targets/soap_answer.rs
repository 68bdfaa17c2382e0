#![no_main]
//! Fuzzes the SOAP answer reader: it never panics, its JSON stays bounded, a fault's content is
//! JSON, and a result re-encodes and re-reads to the same JSON (see `sluice::invoke::soap::props`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sluice::invoke::soap::props::answer(data);
});
