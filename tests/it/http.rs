//! Integration tests: http.
