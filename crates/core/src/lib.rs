//! triage-core: the pure heart of llm-triage, as one crate for the hosts (the CLI, the runner, the
//! plugins, the site's analysis worker).
//!
//! It re-exports the crates the core is made of, at the paths the hosts use: the foundation
//! (`triage-base`: sse, stream, timing, stats, probe, fault, endpoint, safe, …), the report
//! contract (`analyze::report`, `triage-report`), the analyzer and its Prometheus replay
//! (`triage-analyze`), the KV estimator (`triage-kv`), GPU monitoring (`triage-gpu`), the
//! canary's judgement (`triage-watch`) and the flashcards (`triage-cards`, `triage-deck`).
//! A host that needs less (the site's page) depends on those crates directly.
//!
//! Bytes and timestamps in, values out. Nothing here reads a clock, a file, the environment
//! or the network, so the same code runs natively, in the browser (wasm32-unknown-unknown),
//! in WASI plugins (wasm32-wasip1/-wasip2) and inside proxies. Hosts supply time as
//! monotonic nanoseconds (`at_ns`) — see [`sse::SseParser::feed`] and [`timing::StreamTimer`].
//!
//! # Examples
//!
//! Time a streamed answer. The host stamps each chunk with its own clock (here, nanoseconds
//! after the request was sent) and the timer gives the time to first token and the gaps:
//!
//! ```
//! use triage_core::timing::{StreamTimer, TimerConfig};
//!
//! let mut timer = StreamTimer::new(0, TimerConfig::default());
//! timer.on_headers(40_000_000);
//! // The first chunk names the role only: no token yet.
//! timer.feed(b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n", 41_000_000);
//! timer.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n", 250_000_000);
//! // One event split across two chunks is stamped when its blank line arrives.
//! timer.feed(b"data: {\"choices\":[{\"delta\":{\"content\":", 270_000_000);
//! timer.feed(b"\"lo\"}}]}\n\ndata: [DONE]\n\n", 280_000_000);
//! let t = timer.finish(281_000_000);
//! assert_eq!(t.ttft_ns(), Some(250_000_000));
//! assert_eq!(t.gaps_ns().collect::<Vec<_>>(), [30_000_000]);
//! assert!(t.completed());
//! ```
//!
//! Paste a log into the analyzer and read its verdict:
//!
//! ```
//! use triage_core::analyze::{analyze, report::Verdict};
//!
//! let log = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 200.00 GiB. \
//!            GPU 0 has a total capacity of 139.80 GiB of which 139.19 GiB is free.\n";
//! let report = analyze(&[("oom.txt", log)]);
//! assert_eq!(report.verdict, Verdict::Oom);
//! let top = &report.findings[0];
//! println!("{}: {} ({})", top.rule, top.summary, top.confidence);
//! assert_eq!(top.rule, "input-too-long");
//! assert_eq!((&*top.evidence[0].input, top.evidence[0].line), ("oom.txt", 1));
//! ```

#![deny(missing_docs)]

pub use triage_analyze as analyze;
pub use triage_analyze::prometheus;
pub use triage_gpu as gpu;
pub use triage_kv as kv;
pub use triage_watch as watch;

pub use triage_base::{
    arrival, defs, endpoint, expo, fault, lang, probe, safe, sort, sse, stats, stream, time, timing, trace,
    words,
};

/// Interview flashcards: the card and its contracts (`triage-cards`) and the deck built from the
/// rules, the estimator and the definitions (`triage-deck`).
pub mod cards {
    pub use triage_cards::*;
    pub use triage_deck::{anatomy, concept, deck, log, numeric};
}
