//! Integration tests: invoke.
