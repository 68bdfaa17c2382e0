//! Placeholder until the bench is written.
fn main() {}
