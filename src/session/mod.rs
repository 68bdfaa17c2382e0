//! Sessions: records, the `SessionStore` and `Backplane` seams, and their process-local
//! implementations.
//!
//! STUB: the session work fills this in. Must not hold sockets.
