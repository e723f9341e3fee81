//! triage-base: the foundation every other llm-triage crate stands on.
//!
//! Bytes and timestamps in, values out. Nothing here reads a clock, a file, the environment or
//! the network, so the same code runs natively, in the browser (wasm32-unknown-unknown), in WASI
//! plugins and inside proxies. Hosts supply time as monotonic nanoseconds (`at_ns`) — see
//! [`sse::SseParser::feed`] and [`timing::StreamTimer`].
//!
//! - streams: [`sse`] (Server-Sent Events framing), [`stream`] (what a chunk carried: tokens,
//!   usage, errors, per API), [`timing`] (TTFT, gaps, completion from stamped chunks);
//! - numbers: [`stats`] (summaries, quantile sketch, buckets), [`sort`] (the one sort), [`defs`]
//!   (the definition of every figure the product prints);
//! - the probe's vocabulary: [`endpoint`] (APIs, URLs, requests), [`probe`] (records and
//!   summaries), [`fault`] (every network failure classified), [`trace`] (the W3C
//!   `traceparent` a probe sends), [`arrival`] (an open-loop run's schedule of starts);
//! - text from outside: [`safe`] (redaction, cutting, quoting, terminal-safe escaping),
//!   [`expo`] (a Prometheus exposition sample line), [`engine_metrics`] (the serving engines'
//!   state metrics), [`time`] (timestamps as logs write them),
//!   [`words`] (byte and substring searches), [`lang`] (English / Chinese).

#![deny(missing_docs)]

pub mod arrival;
pub mod defs;
pub mod endpoint;
pub mod engine_metrics;
pub mod expo;
pub mod fault;
mod fixture;
pub mod lang;
pub mod probe;
pub mod safe;
pub mod sort;
pub mod sse;
pub mod stats;
pub mod stream;
pub mod time;
pub mod timing;
pub mod trace;
pub mod words;
