//! The deprecated HTTP+SSE transport (2024-11-05): `GET /runtime/{t}/{c}/sse` and
//! `POST /runtime/{t}/{c}/messages?sessionId=…`.
//!
//! Must not implement MCP methods.
