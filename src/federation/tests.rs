//! Run-loop tests against real hyper providers on loopback.
