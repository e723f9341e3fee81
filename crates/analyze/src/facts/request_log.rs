//! What per-request logs say: sketches of each figure, the slowest and earliest rows, a sample
//! (written by `parsers/request_log.rs`).

use crate::report::EvidenceLine;
use std::collections::BTreeMap;
use triage_base::stats::QuantileSketch;

/// One request as read from one line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    /// 1-based line number in the input.
    pub line: usize,
    /// The request id, when the row has one.
    pub id: Option<String>,
    /// Unix seconds (or seconds on the log's own clock).
    pub enqueue: Option<f64>,
    /// When it was scheduled, same clock as `enqueue`.
    pub scheduled: Option<f64>,
    /// When its first token came, same clock.
    pub first_token: Option<f64>,
    /// When its last token came, same clock.
    pub last_token: Option<f64>,
    /// When it finished, same clock.
    pub finish: Option<f64>,
    /// Logged TTFT, ms.
    pub ttft_ms: Option<f64>,
    /// Logged queue time, ms.
    pub queue_ms: Option<f64>,
    /// Logged prefill time, ms.
    pub prefill_ms: Option<f64>,
    /// Logged decode time, ms.
    pub decode_ms: Option<f64>,
    /// Logged end-to-end latency, ms.
    pub e2e_ms: Option<f64>,
    /// Logged TPOT, ms.
    pub tpot_ms: Option<f64>,
    /// Prompt tokens.
    pub prompt_tokens: Option<f64>,
    /// Output tokens.
    pub output_tokens: Option<f64>,
    /// Status as logged (an HTTP code or a word).
    pub status: Option<String>,
    /// The line itself, kept only for the rows worth quoting (slowest, earliest).
    pub evidence: Option<EvidenceLine>,
}

impl Row {
    /// A failed request by its status: HTTP ≥ 400, or a word like error/timeout/aborted.
    pub fn failed(&self) -> bool {
        match &self.status {
            None => false,
            Some(s) => match s.parse::<u32>() {
                Ok(code) => code >= 400,
                Err(_) => {
                    let s = s.to_ascii_lowercase();
                    ["error", "fail", "timeout", "timed_out", "abort", "cancel", "reject"]
                        .iter()
                        .any(|w| s.contains(w))
                }
            },
        }
    }
}

/// How many rows lack each of the four timestamps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Missing {
    /// Rows without an enqueue time.
    pub enqueue: u64,
    /// Rows without a first-token time.
    pub first_token: u64,
    /// Rows without a last-token time.
    pub last_token: u64,
    /// Rows without a finish time.
    pub finish: u64,
}

/// What all request-log sections told, together.
#[derive(Debug, Default)]
pub struct RequestFacts {
    /// Records read.
    pub rows: u64,
    /// Lines in request-log sections that could not be read as a record.
    pub unreadable: u64,
    /// first token − enqueue (or a logged TTFT), ms.
    pub ttft_ms: QuantileSketch,
    /// scheduled − enqueue (or a logged queue time), ms.
    pub queue_ms: QuantileSketch,
    /// first token − scheduled, ms.
    pub prefill_ms: QuantileSketch,
    /// last token − first token, ms.
    pub decode_ms: QuantileSketch,
    /// finish (or last token) − enqueue, ms.
    pub e2e_ms: QuantileSketch,
    /// decode / (output tokens − 1), or a logged TPOT, ms.
    pub tpot_ms: QuantileSketch,
    /// Prompt tokens per request.
    pub prompt_tokens: QuantileSketch,
    /// Output tokens per request.
    pub output_tokens: QuantileSketch,
    /// queue / TTFT per request, 0..1.
    pub queue_share: QuantileSketch,
    /// How many rows lack each timestamp.
    pub missing: Missing,
    /// Rows with a finish (or a failed status) but no first token: they never reached prefill.
    pub never_started: u64,
    /// Rows whose status says they failed ([`Row::failed`]).
    pub failed: u64,
    /// Rows by status as logged.
    pub statuses: BTreeMap<String, u64>,
    /// The slowest requests by TTFT (at most 10), slowest first.
    pub slowest: Vec<Row>,
    /// The earliest requests by enqueue time (at most 10), earliest first.
    pub earliest: Vec<Row>,
    /// A uniform sample of rows (reservoir, at most 4096, deterministic).
    pub sample: Vec<Row>,
    /// The earliest enqueue time seen, same clock as the rows.
    pub first_enqueue: Option<f64>,
    /// The latest enqueue time seen.
    pub last_enqueue: Option<f64>,
    /// A unitless duration was read as seconds or milliseconds by its size.
    pub assumed_units: u64,
    /// The first row that lacks one of the four timestamps.
    pub missing_example: Option<EvidenceLine>,
    pub(crate) rng: u64,
}
