//! Everything the parsers learned, in one place, for the rules to read.
//!
//! Parsers write facts; rules only read them. Large inputs are summarised here (sketches,
//! top-k, reservoirs) so memory stays bounded however long the log is.

use super::kind::InputKind;
use super::parsers::{
    bench::BenchFacts, client_config::ClientFacts, nvidia_smi::GpuFacts, oom::OomFacts, prom::MetricsFacts,
    request_log::RequestFacts, sglang::SglangFacts, sse::StreamFacts, tgi::TgiFacts, vllm::VllmFacts,
};
use super::report::EvidenceLine;
use std::collections::BTreeSet;

#[derive(Debug, Default)]
pub struct Facts {
    pub requests: RequestFacts,
    pub vllm: VllmFacts,
    pub sglang: SglangFacts,
    pub tgi: TgiFacts,
    pub metrics: MetricsFacts,
    pub gpus: GpuFacts,
    pub ooms: Vec<OomFacts>,
    pub clients: Vec<ClientFacts>,
    pub bench: Vec<BenchFacts>,
    pub streams: Vec<StreamFacts>,
    /// Kinds of every recognised section (not `unknown`).
    pub kinds: BTreeSet<InputKind>,
}

impl Facts {
    /// Something was recognised.
    pub fn understood_anything(&self) -> bool {
        !self.kinds.is_empty()
    }
}

/// Keep at most `max` evidence lines (the first ones): enough to prove, bounded in memory.
pub(crate) fn push_bounded(v: &mut Vec<EvidenceLine>, e: EvidenceLine, max: usize) {
    if v.len() < max {
        v.push(e);
    }
}
