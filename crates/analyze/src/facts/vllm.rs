//! What a vLLM server log says: stats lines, start-up and fatal lines, engine arguments, access
//! statuses (written by `parsers/vllm.rs`).

use crate::report::EvidenceLine;
use std::collections::BTreeMap;

/// One periodic stats line.
#[derive(Clone, Debug, PartialEq)]
pub struct VllmStat {
    /// Seconds since the start of the year, from the `MM-DD HH:MM:SS` prefix (vLLM prints no
    /// year); good for ordering and gaps within one log.
    pub t: Option<f64>,
    /// `Avg prompt throughput`, tokens/s.
    pub prompt_tps: Option<f64>,
    /// `Avg generation throughput`, tokens/s.
    pub gen_tps: Option<f64>,
    /// `Running: N reqs`.
    pub running: Option<f64>,
    /// `Waiting: N reqs`.
    pub waiting: Option<f64>,
    /// V0: `Swapped`.
    pub swapped: Option<f64>,
    /// The `Preemptions` count the stats line prints, when it prints one.
    pub preemptions: Option<f64>,
    /// Percent.
    pub kv_usage_pct: Option<f64>,
    /// V0: `CPU KV cache usage`, percent.
    pub cpu_kv_usage_pct: Option<f64>,
    /// `Prefix cache hit rate`, percent.
    pub prefix_hit_pct: Option<f64>,
    /// The line, quoted.
    pub evidence: EvidenceLine,
}

/// The fatal memory errors vLLM raises at start-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FatalMemory {
    /// `No available memory for the cache blocks`.
    NoCacheBlocks,
    /// `… KV cache is needed, which is larger than the available KV cache memory …`.
    KvLargerThanAvailable,
    /// `Free memory on device … is less than desired GPU memory utilization`.
    FreeLessThanDesired,
    /// `The model's max seq len (X) is larger than the maximum number of tokens that can be
    /// stored in KV cache (Y)`.
    MaxSeqLenTooLarge,
}

/// An engine argument as logged (`non-default args: {…}`, `with config: …`, `Namespace(…)`).
#[derive(Clone, Debug, PartialEq)]
pub struct EngineArg {
    /// The value as logged (quotes kept).
    pub value: String,
    /// The line it was logged on.
    pub evidence: EvidenceLine,
}

/// What a vLLM server log says.
#[derive(Debug, Default)]
pub struct VllmFacts {
    /// Stats lines, in order (at most 50,000).
    pub stats: Vec<VllmStat>,
    /// Stats lines beyond the kept maximum (still counted).
    pub stats_dropped: u64,
    /// Preemption warnings seen.
    pub preemptions: u64,
    /// The first few preemption warnings.
    pub preemption_lines: Vec<EvidenceLine>,
    /// Startup capacity lines (`Available KV cache memory`, `GPU KV cache size`, …), for the KV
    /// estimator to reconcile.
    pub startup_lines: Vec<EvidenceLine>,
    /// Fatal memory errors at start-up, with their lines.
    pub fatal_memory: Vec<(FatalMemory, EvidenceLine)>,
    /// Lines saying the engine died (`EngineDeadError`, the engine core died or its loop did).
    pub engine_dead: Vec<EvidenceLine>,
    /// NCCL errors and process-group watchdog timeouts.
    pub nccl: Vec<EvidenceLine>,
    /// Error lines about a timeout (`TimeoutError`, `timed out` with an error).
    pub timeouts: Vec<EvidenceLine>,
    /// When each request still open was added (`Added request ID`, log time in seconds), to
    /// time its abort. Bounded (`MAX_OPEN`).
    pub added_at: std::collections::HashMap<String, f64>,
    /// Seconds from `Added request` to `Aborted request` for the same request id: a client
    /// that gives up after a fixed time aborts its requests at the same age.
    pub abort_after_s: Vec<(f64, EvidenceLine)>,
    /// `Aborted request …` lines: the engine freed a request's KV on a client's behalf.
    pub aborts: u64,
    /// The first few `Aborted request` lines.
    pub abort_lines: Vec<EvidenceLine>,
    /// Model loading / CUDA graph capture lines: the server was (re)starting.
    pub startup_events: Vec<EvidenceLine>,
    /// HTTP status → count, from the API server's access lines.
    pub access: BTreeMap<u16, u64>,
    /// The first access line of each status.
    pub access_examples: BTreeMap<u16, EvidenceLine>,
    /// Engine arguments of interest by canonical name (`enable_chunked_prefill`, …).
    pub args: BTreeMap<String, EngineArg>,
    /// `Chunked prefill is enabled with max_num_batched_tokens=…`.
    pub chunked_prefill_line: Option<EvidenceLine>,
}

impl VllmFacts {
    /// The engine argument `name` (canonical name), when logged.
    pub fn arg(&self, name: &str) -> Option<&EngineArg> {
        self.args.get(name)
    }

    /// Parse an argument as a boolean (`True`, `true`, `1`).
    pub fn arg_bool(&self, name: &str) -> Option<bool> {
        self.arg(name).and_then(|a| match a.value.trim_matches(['\'', '"']).to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => Some(true),
            "false" | "0" | "no" => Some(false),
            _ => None,
        })
    }

    /// The engine argument `name` read as a number.
    pub fn arg_f64(&self, name: &str) -> Option<f64> {
        self.arg(name).and_then(|a| a.value.trim_matches(['\'', '"']).parse().ok())
    }
}
