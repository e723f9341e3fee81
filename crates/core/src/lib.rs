//! triage-core: the pure heart of llm-triage.
//!
//! Bytes and timestamps in, values out. Nothing here reads a clock, a file, the environment
//! or the network, so the same code runs natively, in the browser (wasm32-unknown-unknown),
//! in WASI plugins (wasm32-wasip1/-wasip2) and inside proxies. Hosts supply time as
//! monotonic nanoseconds (`at_ns`) — see [`sse::SseParser::feed`] and [`timing::StreamTimer`].

pub mod analyze;
pub mod cards;
pub mod defs;
pub mod endpoint;
pub mod fault;
pub mod gpu;
pub mod kv;
pub mod lang;
pub mod probe;
pub mod prometheus;
pub mod safe;
pub mod sse;
pub mod stats;
pub mod stream;
pub mod timing;
pub mod words;
