//! The serving engines' state metrics: the names under which vLLM, SGLang and
//! text-generation-inference expose, on `/metrics`, the requests running and waiting, the share of
//! the KV cache in use and the work done. The one vocabulary both readers of an engine's state
//! use: the GPU rules' engine sample (`triage_gpu::engine`) and the watch's scrape
//! (`triage_watch::engine`), each taking the rows it reads.
//!
//! The names were checked against the engines' released source: vLLM 0.11.0
//! (`vllm/v1/metrics/loggers.py`), SGLang 0.5.23 (`srt/observability/metrics_collector.py`)
//! and text-generation-inference (`backends/v3/src/{backend,queue}.rs`, `router/src/server.rs`).
//! The analyzer's own table of names across tools (`triage_analyze::names`) groups the same
//! vLLM and SGLang names under the same quantities (a test there keeps the two in step).

use serde::{Deserialize, Serialize};

/// A serving engine whose `/metrics` names are known here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// vLLM (`vllm:*`).
    Vllm,
    /// SGLang (`sglang:*`).
    Sglang,
    /// Hugging Face text-generation-inference (`tgi_*`).
    Tgi,
}

impl Engine {
    /// The serialised name (`vllm`, `sglang`, `tgi`).
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm",
            Engine::Sglang => "sglang",
            Engine::Tgi => "tgi",
        }
    }
}

/// What an engine metric measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantity {
    /// Requests in the running batch now (a gauge).
    Running,
    /// Requests queued, not yet scheduled (a gauge).
    Waiting,
    /// The share of the KV cache in use now, 0–1 (a gauge, whatever its name says).
    KvUsage,
    /// Prompt tokens processed since the engine started (a counter).
    PromptTokens,
    /// Tokens generated since the engine started (a counter).
    GenerationTokens,
    /// Another counter that moves whenever the engine completes a step.
    Steps,
}

impl Quantity {
    /// A counter that moves whenever the engine does work: the watch's sign of progress.
    pub fn is_progress(self) -> bool {
        matches!(self, Quantity::PromptTokens | Quantity::GenerationTokens | Quantity::Steps)
    }
}

/// One metric name: whose it is and what it measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineMetric {
    /// The sample name as exposed (a histogram's `_count` or `_sum` named in full).
    pub name: &'static str,
    /// The engine that exposes it.
    pub engine: Engine,
    /// What it measures.
    pub quantity: Quantity,
}

const fn m(name: &'static str, engine: Engine, quantity: Quantity) -> EngineMetric {
    EngineMetric { name, engine, quantity }
}

/// Every engine metric read, by engine; within an engine and a quantity, the preferred name
/// first. vLLM renamed `gpu_cache_usage_perc` to `kv_cache_usage_perc` (both are 0–1 despite the
/// name); SGLang's `token_usage` is the share of the KV pool in use. Among the counters, vLLM's
/// token counters and its per-step histogram's count move every engine step; SGLang's
/// `realtime_tokens_total` every log interval (its token totals when a request ends); TGI's
/// `tgi_batch_inference_count` every prefill or decode step (the exporter writes it with or
/// without `_total`), its generated-tokens histogram's sum when a request ends.
pub const ENGINE_METRICS: &[EngineMetric] = {
    use Engine::{Sglang, Tgi, Vllm};
    use Quantity::*;
    &[
        m("vllm:num_requests_running", Vllm, Running),
        m("vllm:num_requests_waiting", Vllm, Waiting),
        m("vllm:kv_cache_usage_perc", Vllm, KvUsage),
        m("vllm:gpu_cache_usage_perc", Vllm, KvUsage),
        m("vllm:generation_tokens_total", Vllm, GenerationTokens),
        m("vllm:prompt_tokens_total", Vllm, PromptTokens),
        m("vllm:iteration_tokens_total_count", Vllm, Steps),
        m("sglang:num_running_reqs", Sglang, Running),
        m("sglang:num_queue_reqs", Sglang, Waiting),
        m("sglang:token_usage", Sglang, KvUsage),
        m("sglang:generation_tokens_total", Sglang, GenerationTokens),
        m("sglang:prompt_tokens_total", Sglang, PromptTokens),
        m("sglang:realtime_tokens_total", Sglang, Steps),
        m("tgi_batch_current_size", Tgi, Running),
        m("tgi_queue_size", Tgi, Waiting),
        m("tgi_batch_inference_count", Tgi, Steps),
        m("tgi_batch_inference_count_total", Tgi, Steps),
        m("tgi_request_generated_tokens_sum", Tgi, GenerationTokens),
    ]
};

/// The row of sample name `name`, with its index in [`ENGINE_METRICS`].
pub fn metric(name: &str) -> Option<(usize, &'static EngineMetric)> {
    ENGINE_METRICS.iter().enumerate().find(|(_, m)| m.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_once_and_found() {
        for (i, row) in ENGINE_METRICS.iter().enumerate() {
            assert_eq!(metric(row.name).map(|(j, _)| j), Some(i), "{} is listed twice", row.name);
        }
        assert_eq!(metric("node_load1"), None);
    }
}
