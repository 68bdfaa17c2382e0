//! Integration tests: jsonrpc.
