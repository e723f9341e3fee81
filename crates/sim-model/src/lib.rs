//! triage-sim-model: the incident simulator's pure model — a deterministic discrete-event
//! continuous-batching engine with a paged KV cache, its workloads and faults, and every file
//! such an engine leaves behind, as strings.
//!
//! No clock, no I/O, no threads: it builds for `wasm32-unknown-unknown`, so the site's drill
//! page runs the very model the CLI and the tests run ([`drill::Drill`]: a random incident, the
//! causes to pick from, the check). `crates/sim` serves it live over HTTP;
//! `triage sim` writes its files; `triage demo SCENARIO` probes and analyses it.
//!
//! ```
//! use triage_sim_model::{Sim, scenario};
//! let s = scenario::find("kv-deadlock").unwrap();
//! let mut sim = Sim::new(s.config(scenario::DEFAULT_SEED));
//! sim.run(s.duration_ns());
//! let files = sim.artifacts();
//! assert!(files.iter().any(|f| f.name == "vllm.log"));
//! ```
//!
//! Default timings are calibrated from a real H200 decode trace (see [`calibration`]).

pub mod calibration;
pub mod drill;
pub mod engine;
pub mod fleet;
pub mod output;
pub mod rng;
pub mod scenario;
pub mod workload;

pub use engine::{
    EngineConfig, ExternalEvent, GatewayConfig, OnDisconnect, Outcome, Rejection, Sim, SimConfig,
};
pub use output::Artifact;
pub use scenario::Scenario;
