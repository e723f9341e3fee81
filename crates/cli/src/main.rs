//! The `triage` binary.
fn main() {}
