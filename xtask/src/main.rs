//! cargo xtask.
fn main() {}
