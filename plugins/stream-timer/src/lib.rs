//! proxy-wasm filter (ABI 0.2.1) that times every streamed LLM response at the gateway.
//!
//! Envoy, Istio, Higress, APISIX and Kong load it. Per request on a matched route it records the
//! gateway's enqueue (request headers), response headers, first byte, first token (TTFT), first
//! answer token (TTFO), every inter-token gap (into a host histogram as it happens), stalls,
//! last token, finish, usage, status and finish reason — with O(1) memory per stream — and
//! writes metrics, per-request properties for the access log, and optionally a log line. An
//! optional guard resets streams that run too long or go quiet. It never pauses or buffers: every
//! callback returns `Continue`, and no host answer can make it trap.
//!
//! The logic is pure and tested natively: [`config`] (JSON, validated), [`route`] (which
//! requests are LLM streams), [`timer`] (the per-stream state machine over `triage-core`'s SSE
//! parser and event classifier, with [`fast`] reading the hot token events without serde), [`metrics`] (names and the metric-id table), [`report`]
//! (properties and the summary line), [`guard`]. The wasm glue (`abi`, `filter`) is compiled for
//! `wasm32` only. Deployment and the reference: `docs/proxy-plugin.md`.

pub mod config;
pub mod fast;
pub mod guard;
pub mod metrics;
pub mod report;
pub mod route;
pub mod timer;

#[cfg(target_arch = "wasm32")]
mod abi;
#[cfg(target_arch = "wasm32")]
mod filter;

pub use config::{ROOT_ID, Settings, parse};
