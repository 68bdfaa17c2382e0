//! The REST surface (`GET …/tools`, `POST …/tools/{name}`) over the catalog and invoke code.
//!
//! Must not duplicate MCP logic.
