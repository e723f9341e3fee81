//! End-to-end tests live in `tests/*/main.rs`; this library hosts the helpers shared with the
//! crates' own integration tests (`crates/cli/tests`, `crates/runner/tests`): running programs
//! and measuring them ([`process`]), and a real Prometheus ([`prometheus`]).

pub mod process;
pub mod prometheus;
