//! Integration tests: sse.
