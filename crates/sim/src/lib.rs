//! triage-sim: streaming servers that behave like LLM engines, for tests, benchmarks and demos.
//!
//! [`scripted`]: a server whose every timing and fault is scripted and recorded (tests, the probe
//! benchmark, the no-argument demo). [`live`]: the incident simulator — the pure engine model of
//! `triage-sim-model` — served live over HTTP with its `/metrics` and logs.

mod http;
pub mod live;
pub mod scripted;

pub use http::Limits;
pub use live::{LiveConfig, SimServer};
pub use scripted::{Fault, Record, Script, ScriptedServer, ServerConfig};
pub use triage_sim_model as model;
