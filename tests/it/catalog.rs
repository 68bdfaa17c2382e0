//! Integration tests: catalog.
