//! Diagnose straight from Prometheus: the conversation and the bounded reading of the answers
//! are `triage-prometheus`'s (re-exported here); [`replay`] turns the window read into the facts
//! pasted inputs give, per replica and per GPU node, so every rule works unchanged: each
//! replica's series become exposition scrapes (the window's first and last points and the recent
//! tail's start between, counters corrected for resets; the tail is also analysed on its own),
//! each node's DCGM gauges an `nvidia-smi --query-gpu` CSV series; each group runs its own
//! `Analyzer`, and the reports merge into one with the finding's
//! [`Subject`](crate::report::Subject), a fleet view and citations.

pub mod replay;

pub use triage_prometheus::*;
