//! What an SGLang server log says: batch lines, KV allocation, errors (written by
//! `parsers/sglang.rs`).

use crate::report::EvidenceLine;
use std::collections::BTreeMap;

/// One SGLang `Prefill batch` or `Decode batch` line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SglangBatch {
    /// `true` for `Prefill batch`, `false` for `Decode batch`.
    pub prefill: bool,
    /// Prefill: `#new-seq`.
    pub new_seq: Option<f64>,
    /// Prefill: `#new-token`.
    pub new_token: Option<f64>,
    /// Prefill: `#cached-token`.
    pub cached_token: Option<f64>,
    /// Decode: `#token` (tokens in the KV cache).
    pub tokens: Option<f64>,
    /// 0..1. Hybrid (sliding-window) models print `full token usage`; that one is read.
    pub token_usage: Option<f64>,
    /// `#running-req`.
    pub running: Option<f64>,
    /// `#queue-req`.
    pub queue: Option<f64>,
    /// Decode: `gen throughput (token/s)`.
    pub gen_tps: Option<f64>,
    /// The line, quoted.
    pub evidence: EvidenceLine,
    /// Unix seconds from the `[YYYY-MM-DD HH:MM:SS …]` prefix (taken as UTC; differences hold).
    pub t: Option<f64>,
    /// `cuda graph: True|False` (decode lines of newer versions).
    pub cuda_graph: Option<bool>,
    /// `DP<n>` in the prefix (data-parallel attention prints one line per rank).
    pub dp_rank: Option<u32>,
    /// `TP<n>` in the prefix.
    pub tp_rank: Option<u32>,
}

/// What an SGLang server log says.
#[derive(Debug, Default)]
pub struct SglangFacts {
    /// Batch lines, in order (at most 50,000).
    pub batches: Vec<SglangBatch>,
    /// `KV Cache is allocated. #tokens: N, K size: X GB, V size: Y GB`.
    pub kv_allocated: Option<EvidenceLine>,
    /// The first few error lines.
    pub errors: Vec<EvidenceLine>,
    /// Batch lines beyond the kept maximum (still counted).
    pub batches_dropped: u64,
    /// The KV cache's capacity in tokens: `#tokens` of the allocation line, else
    /// `max_total_num_tokens=`.
    pub kv_capacity_tokens: Option<f64>,
    /// Requests retracted for lack of KV space (`Decode out of memory happened` / `KV cache pool
    /// is full. Retract requests.`): SGLang's preemption.
    pub retractions: u64,
    /// The first few retraction lines.
    pub retraction_lines: Vec<EvidenceLine>,
    /// Error lines seen (the first few are in `errors`).
    pub error_count: u64,
    /// HTTP status → count, from the API server's access lines.
    pub access: BTreeMap<u16, u64>,
    /// The first access line of each status.
    pub access_examples: BTreeMap<u16, EvidenceLine>,
    /// Server arguments of interest from `server_args=ServerArgs(…)`, by name, quotes removed.
    pub args: BTreeMap<String, String>,
    /// The `server_args=ServerArgs(…)` line.
    pub args_line: Option<EvidenceLine>,
}
