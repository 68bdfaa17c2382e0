//! The integration test binary: one module per topic, all over real sockets on 127.0.0.1.

mod auth;
mod bench;
mod bos;
mod catalog;
mod cli;
mod cluster;
mod federation;
mod hardening_cluster;
mod http;
mod invoke;
mod jsonrpc;
mod mcp;
mod mcp_http;
mod rest;
mod session;
mod sse;
mod support;
