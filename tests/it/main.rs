//! The integration test binary: one module per topic, all over real sockets on 127.0.0.1.

mod a2a;
mod a2a_ask;
mod a2a_remote;
mod auth;
#[cfg(feature = "load-generator")]
mod bench;
mod bos;
mod catalog;
mod cli;
mod cluster;
mod contract;
mod demo;
mod federation;
mod hardening_cluster;
mod hardening_conn;
mod hardening_fed;
mod hardening_gate;
mod hardening_input;
mod hardening_streams;
mod http;
mod invoke;
mod jsonrpc;
mod limits;
mod mcp;
mod mcp_http;
mod ratelimit;
mod rest;
mod result_cap;
mod session;
mod soap;
mod sse;
mod support;
mod telemetry;
mod tls;
