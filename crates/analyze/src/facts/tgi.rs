//! What Text Generation Inference's router logs say about the requests it served (written by
//! `parsers/tgi.rs`).

use crate::report::EvidenceLine;
use triage_base::stats::QuantileSketch;

/// What TGI's router logs say about the requests it served.
#[derive(Debug, Default)]
pub struct TgiFacts {
    /// Successful requests (lines with `total_time`).
    pub requests: u64,
    /// `total_time` per request, ms.
    pub total_ms: QuantileSketch,
    /// `queue_time` per request, ms.
    pub queue_ms: QuantileSketch,
    /// `inference_time` per request, ms.
    pub inference_ms: QuantileSketch,
    /// TGI's `time_per_token` includes prefill: not TPOT (`triage_base::defs::TPOT`).
    pub time_per_token_ms: QuantileSketch,
    /// Error lines, quoted (each message once).
    pub errors: Vec<EvidenceLine>,
    /// The slowest request's line.
    pub slowest: Option<EvidenceLine>,
    /// Tokenisation and parameter checks before queueing.
    pub validation_ms: QuantileSketch,
    /// `total_time` of the slowest request (the one `slowest` quotes).
    pub slowest_total_ms: Option<f64>,
    /// `Request failed during generation` / `Incomplete generation`.
    pub failures: u64,
    /// `Model is overloaded` (HTTP 429: more than `--max-concurrent-requests` in flight).
    pub overloaded: u64,
    /// `Input validation error` (HTTP 422: prompt + max_new_tokens too long, bad parameters).
    pub validation_errors: u64,
    /// All ERROR/WARN lines and known error messages (the first few are in `errors`).
    pub error_lines: u64,
}
