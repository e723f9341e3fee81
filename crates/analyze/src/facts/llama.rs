//! llama.cpp's, Ollama's, LMCache's and TensorRT-LLM's figures, read from any line (written by
//! `parsers/llama.rs`).

use crate::report::EvidenceLine;
use std::collections::BTreeMap;

/// One prefill: a prompt's tokens and how long they took.
#[derive(Clone, Debug, PartialEq)]
pub struct Prefill {
    /// How long it took, seconds.
    pub seconds: f64,
    /// Prompt tokens processed.
    pub tokens: f64,
    /// Which slot and task (`0/1041`).
    pub task: String,
    /// Still running: the latest `prompt processing … t = …` progress, not `prompt eval time`.
    pub running: bool,
    /// The line, quoted.
    pub evidence: EvidenceLine,
}

/// One decode-rate line of a generation.
#[derive(Clone, Debug, PartialEq)]
pub struct DecodeRate {
    /// `id N | task M`: which generation.
    pub task: String,
    /// Tokens generated so far (`n_gen`).
    pub n_gen: f64,
    /// Tokens per second over the last 3 s (`tg_3s`), else since the start (`tg`).
    pub tokens_per_s: f64,
    /// The line, quoted.
    pub evidence: EvidenceLine,
}

/// LMCache's per-request lines, added up.
#[derive(Debug, Default)]
pub struct LmcacheHits {
    /// Request lines read.
    pub requests: u64,
    /// Tokens of those requests.
    pub total_tokens: f64,
    /// Of them, tokens LMCache had.
    pub hit_tokens: f64,
    /// The first lines.
    pub examples: Vec<EvidenceLine>,
}

/// A model load and how long it took.
#[derive(Clone, Debug, PartialEq)]
pub struct Load {
    /// How long it took, seconds.
    pub seconds: f64,
    /// Timed inside a request (`ollama run --verbose`'s `load duration`), not by the server's
    /// start-up (`llama-server started in …`).
    pub in_request: bool,
    /// The line, quoted.
    pub evidence: EvidenceLine,
}

/// A figure with the line that stated it.
#[derive(Clone, Debug, PartialEq)]
pub struct Stated {
    /// The figure.
    pub value: f64,
    /// The line that stated it.
    pub evidence: EvidenceLine,
}

/// One TensorRT-LLM executor iteration.
#[derive(Clone, Debug, PartialEq)]
pub struct TrtIteration {
    /// Iteration number (`iter`).
    pub iter: f64,
    /// Requests scheduled in the iteration.
    pub scheduled: f64,
    /// `kv_cache_util`, as printed.
    pub kv_util: Option<f64>,
    /// `currank_total_requests = fetched/total`: the total, which grows with every arrival.
    pub total_requests: Option<f64>,
    /// Device time of the iteration, ms.
    pub device_ms: Option<f64>,
    /// Host time of the iteration, ms.
    pub host_ms: Option<f64>,
    /// The line, quoted.
    pub evidence: EvidenceLine,
}

/// Figures llama.cpp, Ollama, TensorRT-LLM and LMCache print, read from any line.
#[derive(Debug, Default)]
pub struct LlamaFacts {
    /// LMCache: `Reqid: …, Total tokens N, …, LMCache hit tokens: M, …` per request.
    pub lmcache: LmcacheHits,
    /// TensorRT-LLM's per-iteration lines (kept: the first `MAX`; then every line replaces the
    /// last kept, so the series ends where the log ends).
    pub trt_iterations: Vec<TrtIteration>,
    /// Finished prefills (`prompt eval time`), and prefills still running (the last
    /// `prompt processing … t = …` of a task), in input order.
    pub prefills: Vec<Prefill>,
    /// Decode-rate lines, in input order.
    pub decode: Vec<DecodeRate>,
    /// Model loads: `started in N seconds`, `load duration`.
    pub loads: Vec<Load>,
    /// The first few model-eviction lines.
    pub evictions: Vec<EvidenceLine>,
    /// Ollama's scheduler starting a model load (`new model will fit in available VRAM …,
    /// loading` before v0.6, `loading first model`, `new model fits with existing models,
    /// loading`): the first few, with how many Gin requests had been answered before each.
    pub load_starts: Vec<(EvidenceLine, u64)>,
    /// Model evictions seen.
    pub eviction_count: u64,
    /// Gin: status → count, a few lines of each, and (status, seconds) of each request.
    pub gin: BTreeMap<u16, u64>,
    /// A few lines of each status.
    pub gin_examples: BTreeMap<u16, Vec<EvidenceLine>>,
    /// (status, seconds, line) of each request.
    pub gin_latency: Vec<(u16, f64, EvidenceLine)>,
    /// The most `llamacpp:requests_deferred` seen, and `requests_processing` beside it.
    pub deferred: Option<Stated>,
    /// `llamacpp:requests_processing` beside the most deferred.
    pub processing: Option<f64>,
    /// GPU memory free before the model loaded, and the GPU's total (GiB): Ollama's `inference
    /// compute … total="23.6 GiB" available="3.4 GiB"`, TensorRT-LLM's `Total GPU memory (GiB)`
    /// and `model: <free before> / <free after>`. The least free seen.
    pub free_before_load: Option<(f64, f64, EvidenceLine)>,
    pub(crate) trt_total_gib: Option<f64>,
}
