//! triage-sim: streaming servers that behave like LLM engines, for tests, benchmarks and demos.
//!
//! Today: [`scripted`], a server whose every timing and fault is scripted and recorded. The
//! incident simulator (a continuous-batching engine model) will live here too.

pub mod scripted;

pub use scripted::{Fault, Record, Script, ScriptedServer, ServerConfig};
