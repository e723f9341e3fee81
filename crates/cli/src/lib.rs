//! The `triage` command as a library, so tests and benches drive exactly what users run.
//!
//! `main.rs` only parses arguments and prints; each command lives in its own module.

pub mod analyze;
pub mod args;
pub mod cards;
pub mod demo;
pub mod kv;
pub mod otlp;
pub mod otlp_http;
pub mod output;
pub mod probe;
pub mod prometheus;
pub mod render;
#[cfg(target_os = "linux")]
mod rxstamp;
pub mod scripted_serve;
pub mod sim;
pub mod slowest;
#[cfg(target_os = "linux")]
pub mod stamped;
pub mod watch;
