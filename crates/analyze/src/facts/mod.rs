//! Everything the parsers learned, in one place, for the rules to read.
//!
//! Parsers write facts; rules only read them. Large inputs are summarised here (sketches,
//! top-k, reservoirs) so memory stays bounded however long the log is. Each source's fact types
//! are in a file of their own, named as its parser is (`facts/vllm.rs` for `parsers/vllm.rs`):
//! the parsers write them, the rules read them, and neither is needed to name them.

pub mod bench;
pub mod client_config;
pub mod gpu_series;
pub mod llama;
pub mod nvidia_smi;
pub mod oom;
pub mod prom;
pub mod request_log;
pub mod sglang;
pub mod sse;
pub mod table;
pub mod tgi;
pub mod vllm;

use super::kind::InputKind;
use super::report::EvidenceLine;
use super::signals::Signals;
use bench::BenchFacts;
use client_config::ClientFacts;
use llama::LlamaFacts;
use nvidia_smi::GpuFacts;
use oom::OomFacts;
use prom::MetricsFacts;
use request_log::RequestFacts;
use sglang::SglangFacts;
use sse::StreamFacts;
use std::collections::BTreeSet;
use table::TableFacts;
use tgi::TgiFacts;
use vllm::VllmFacts;

/// What the parsers read from every input, for the rules: summaries with bounded memory.
#[derive(Debug, Default)]
pub struct Facts {
    /// Request logs: per-request queue, TTFT and token figures.
    pub requests: RequestFacts,
    /// vLLM logs and their stats lines.
    pub vllm: VllmFacts,
    /// SGLang logs.
    pub sglang: SglangFacts,
    /// Text Generation Inference logs.
    pub tgi: TgiFacts,
    /// Prometheus scrapes.
    pub metrics: MetricsFacts,
    /// nvidia-smi readings and processes.
    pub gpus: GpuFacts,
    /// Each GPU recording over time, judged by the GPU rules ([`gpu_series`]).
    pub gpu_series: Vec<gpu_series::GpuSeriesFacts>,
    /// Each out-of-memory trace, in input order.
    pub ooms: Vec<OomFacts>,
    /// Each client configuration (base URLs, timeouts, retries).
    pub clients: Vec<ClientFacts>,
    /// Each benchmark's results.
    pub bench: Vec<BenchFacts>,
    /// Each captured SSE stream, timed.
    pub streams: Vec<StreamFacts>,
    /// llama.cpp's and Ollama's figures, read from any line ([`LlamaFacts`]).
    pub llama: LlamaFacts,
    /// Rows of tables and `key: value` figures no tool-specific reader knows ([`TableFacts`]).
    pub tables: TableFacts,
    /// Kinds of every recognised section (not `unknown`).
    pub kinds: BTreeSet<InputKind>,
    /// Alarm lines and known messages of every input, whatever section they were in.
    pub signals: Signals,
    /// The targets figures are judged against.
    pub slo: Slo,
}

/// Service-level targets the rules judge figures against (`triage analyze --slo-ttft-ms`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slo {
    /// A TTFT tail above this is a finding whatever its median. Default 2,000 ms.
    pub ttft_ms: f64,
    /// An inter-token gap tail above this is a finding. Default 200 ms.
    pub itl_ms: f64,
}

impl Default for Slo {
    fn default() -> Slo {
        Slo { ttft_ms: 2_000.0, itl_ms: 200.0 }
    }
}

impl Facts {
    /// Something was recognised.
    pub fn understood_anything(&self) -> bool {
        !self.kinds.is_empty()
    }

    /// Positive evidence that the service works: stats or metrics of an engine doing work,
    /// requests or streams that completed, benchmark figures, GPU readings, a client config that
    /// was read. HEALTHY needs this; an input without it is INCONCLUSIVE, however clean.
    pub fn health_evidence(&self) -> bool {
        let worked = |v: Option<f64>| v.is_some_and(|x| x > 0.0);
        let ok_access = |a: &std::collections::BTreeMap<u16, u64>| a.range(200..400).any(|(_, n)| *n > 0);
        let vllm =
            self.vllm.stats.iter().any(|s| worked(s.gen_tps) || worked(s.prompt_tps) || worked(s.running))
                || ok_access(&self.vllm.access);
        let sglang =
            self.sglang.batches.iter().any(|b| worked(b.gen_tps) || worked(b.new_token) || worked(b.running))
                || ok_access(&self.sglang.access);
        let tgi = self.tgi.requests > self.tgi.failures;
        let metrics = self.metrics.scrapes.iter().any(|s| !s.series.is_empty());
        let requests = self.requests.rows > self.requests.failed + self.requests.never_started;
        let streams = self.streams.iter().any(|s| s.fault.is_none() && !s.timing.token_times_ns.is_empty());
        let bench = self.bench.iter().any(|b| !b.figures.is_empty());
        let gpus = !self.gpus.readings.is_empty() || self.gpu_series.iter().any(|g| g.finished.ticks > 0);
        let llama = self.llama.trt_iterations.iter().any(|i| i.scheduled > 0.0);
        let clients = !self.clients.is_empty();
        let tables = self.tables.health_evidence();
        let answered = self.signals.ok_responses > 0 || self.signals.ok_access > 0;
        // A server (any engine, any framework) said it is up and listening.
        let started = self.signals.families.contains_key(&super::families::Family::Started);
        answered
            || started
            || llama
            || vllm
            || sglang
            || tgi
            || metrics
            || requests
            || streams
            || bench
            || gpus
            || clients
            || tables
    }
}

/// Keep at most `max` evidence lines (the first ones): enough to prove, bounded in memory.
pub(crate) fn push_bounded(v: &mut Vec<EvidenceLine>, e: EvidenceLine, max: usize) {
    if v.len() < max {
        v.push(e);
    }
}
