//! The `triage.probe/v1` report: what a probe run measured, as the CLI prints it as JSON and
//! the site renders it.
//!
//! Contract (extend, never rename): `{"schema":"triage.probe/v1","url",…,"requests":[{"ok",
//! "status","error":{"kind","message"},"ttft_ms","ttfo_ms","gaps_ms":[…],"tpot_ms","e2e_ms",
//! "output_tokens","token_source","finish_reason",…}],"summary":{"ttft_ms":{"p50","p90","p99",
//! "mean","max"},"ttfo_ms","itl_ms","tpot_ms","e2e_ms","ok","failed",…}}`. Times are
//! milliseconds rounded to the microsecond (3 decimals).

use crate::arrival::Arrival;
use crate::defs;
use crate::endpoint::Api;
use crate::fault::Fault;
use crate::stats::Summary;
use crate::stream::Usage;
use crate::timing::{ChunkTokenSource, RequestTiming, TokenSource};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema id every probe report carries in `schema`.
pub const SCHEMA: &str = "triage.probe/v1";

/// Milliseconds from nanoseconds, rounded to 3 decimals (1 µs).
pub fn ms(ns: f64) -> f64 {
    (ns / 1_000.0).round() / 1_000.0
}

fn ms_u(ns: u64) -> f64 {
    ms(ns as f64)
}

/// A stall as reported: which gap and how long.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StallRecord {
    /// Index of the gap in `gaps_ms` (between token events `i` and `i + 1`).
    pub gap_index: usize,
    /// The gap's length, ms.
    pub gap_ms: f64,
    /// The threshold it exceeded, ms.
    pub threshold_ms: f64,
}

/// One request of a probe run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Position of the request in the run, from 0.
    pub index: usize,
    /// The request completed without a fault.
    pub ok: bool,
    /// HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// Why it failed, when it did.
    pub error: Option<Fault>,
    /// Request sent → first token-carrying event, ms.
    pub ttft_ms: Option<f64>,
    /// Request sent → first answer (non-reasoning) token, ms.
    pub ttfo_ms: Option<f64>,
    /// Every gap between successive token-carrying events, in order.
    pub gaps_ms: Vec<f64>,
    /// Per-request (last token − first token) / (output tokens − 1), ms.
    pub tpot_ms: Option<f64>,
    /// Request sent → last token, ms.
    pub e2e_ms: Option<f64>,
    /// Output tokens: the server's usage report, else the token events counted.
    pub output_tokens: Option<u64>,
    /// Where `output_tokens` came from.
    pub token_source: Option<TokenSource>,
    /// The stream's finish reason (`stop`, `length`, `end_turn`, …).
    pub finish_reason: Option<String>,
    // Extensions beyond the contract's required fields.
    /// When the request was dispatched (handed to the transport, before any connect), relative
    /// to the start of the run.
    pub sent_at_ms: f64,
    /// Dispatch → the request's last byte handed to the kernel (connect, if one was needed,
    /// and the write), where the transport sees its writes (kernel-stamped runs). Then "sent",
    /// which every latency below counts from, is that last byte; without it, the dispatch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_ms: Option<f64>,
    /// Request sent → response headers.
    pub headers_ms: Option<f64>,
    /// Request sent → first body byte.
    pub first_byte_ms: Option<f64>,
    /// Request sent → first complete SSE event of any kind (a role-only chunk counts here).
    pub first_event_ms: Option<f64>,
    /// Request sent → end of stream (terminal event, or the body's end).
    pub done_ms: Option<f64>,
    /// Token counts the server reported.
    pub usage: Option<Usage>,
    /// The server's id (`chatcmpl-…`, `msg_…`): grep the server logs for it.
    pub response_id: Option<String>,
    /// Gaps that counted as stalls.
    pub stalls: Vec<StallRecord>,
    /// The response's `retry-after` header as sent, when it had one.
    pub retry_after: Option<String>,
    /// Token events after the first `timing::MAX_TOKEN_TIMES` (65,536): `gaps_ms` lists the
    /// gaps up to the cap, these events' gaps are summarised in `gaps_beyond_cap`. 0 for any
    /// ordinary response; present so a bounded record says what it left out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tokens_beyond_cap: u64,
    /// Quantiles (from a sketch, ≤ 1 % relative error) of the gaps after the cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gaps_beyond_cap: Option<Quantiles>,
    /// Stalls found but not listed in `stalls` (more than `timing::MAX_STALLS`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stalls_not_listed: u64,
    /// Events cut at the SSE parser's size limits (a line over 1 MiB, an event over 4 MiB):
    /// their data could not be read whole.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cut_events: u64,
    /// Which clock stamped this request's chunks: `kernel` (the socket's receive timestamps,
    /// the time the bytes reached the host) or `user` (the time the host's code got them).
    /// Absent in older reports, where it was always `user`.
    #[serde(default)]
    pub stamp_source: StampSource,
    /// The W3C trace id (32 lowercase hex digits) of the `traceparent` the request carried: the
    /// one the probe made, or the user's own. Absent when none was sent (or the user's was not
    /// a valid one): look the request up in the tracing backend by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// Tokens each token event carried, by the server's own cumulative usage on every event
    /// (present only then, up to the cap): `gaps_ms[i]` ended at an event of `chunk_tokens[i + 1]`
    /// tokens.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunk_tokens: Vec<u32>,
    /// Where the tokens per event behind the per-token ITL come from: `usage` (exact: the
    /// server's count on every event, or a total equal to the events), `estimated` (the usage
    /// total spread evenly), `counted` (no usage: one per event). Absent without a token event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_token_source: Option<ChunkTokenSource>,
    /// Open loop (`--rate`) only: when the schedule said to start the request, ms from the start
    /// of the run (the same origin as `sent_at_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_at_ms: Option<f64>,
    /// Open loop only: scheduled start → sent (`sent_at_ms − scheduled_at_ms`), the client's own
    /// delay, a wait for a free `--concurrency` slot included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch_lag_ms: Option<f64>,
    /// Open loop only: scheduled start → first token-carrying event (`ttft_ms + dispatch_lag_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_from_schedule_ms: Option<f64>,
    /// Open loop only: scheduled start → last token (`e2e_ms + dispatch_lag_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_from_schedule_ms: Option<f64>,
    /// Open loop only: at its scheduled start every `--concurrency` slot was taken, so the
    /// request waited for one (its `dispatch_lag_ms` includes the wait). Present when true.
    #[serde(default, skip_serializing_if = "is_false")]
    pub waited_for_slot: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Milliseconds between two instants of one clock (`to − from`, negative when `to` is earlier).
fn ms_between(from_ns: u64, to_ns: u64) -> f64 {
    ms((i128::from(to_ns) - i128::from(from_ns)) as f64)
}

/// Which clock stamped a request's chunks (`stamp_source` in `triage.probe/v1`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StampSource {
    /// Every chunk carries the kernel's receive time of the read that completed it.
    Kernel,
    /// Chunks were stamped when the host's code received them (scheduling delay included).
    #[default]
    User,
}

impl StampSource {
    /// The contract's name: `kernel` or `user`.
    pub fn as_str(self) -> &'static str {
        match self {
            StampSource::Kernel => "kernel",
            StampSource::User => "user",
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl RequestRecord {
    /// Build from what the host observed. `run_start_ns` is the run's origin on the same clock.
    pub fn new(
        index: usize,
        run_start_ns: u64,
        sent_ns: u64,
        status: Option<u16>,
        timing: Option<&RequestTiming>,
        error: Option<Fault>,
    ) -> RequestRecord {
        let mut r = RequestRecord {
            index,
            ok: error.is_none() && timing.is_some(),
            status,
            error,
            ttft_ms: None,
            ttfo_ms: None,
            gaps_ms: Vec::new(),
            tpot_ms: None,
            e2e_ms: None,
            output_tokens: None,
            token_source: None,
            finish_reason: None,
            sent_at_ms: ms_u(sent_ns.saturating_sub(run_start_ns)),
            send_ms: None,
            headers_ms: None,
            first_byte_ms: None,
            first_event_ms: None,
            done_ms: None,
            usage: None,
            response_id: None,
            stalls: Vec::new(),
            retry_after: None,
            tokens_beyond_cap: 0,
            gaps_beyond_cap: None,
            stalls_not_listed: 0,
            cut_events: 0,
            stamp_source: StampSource::User,
            trace_id: None,
            chunk_tokens: Vec::new(),
            chunk_token_source: None,
            scheduled_at_ms: None,
            dispatch_lag_ms: None,
            ttft_from_schedule_ms: None,
            e2e_from_schedule_ms: None,
            waited_for_slot: false,
        };
        if let Some(t) = timing {
            r.ttft_ms = t.ttft_ns().map(ms_u);
            r.ttfo_ms = t.ttfo_ns().map(ms_u);
            r.gaps_ms = t.gaps_ns().map(ms_u).collect();
            r.tpot_ms = t.tpot_ns().map(ms);
            r.e2e_ms = t.e2e_ns().map(ms_u);
            let (n, src) = t.output_tokens();
            r.output_tokens = Some(n);
            r.token_source = Some(src);
            r.finish_reason.clone_from(&t.finish_reason);
            let since = |at: Option<u64>| at.map(|at| ms_u(at.saturating_sub(t.sent_ns)));
            r.headers_ms = since(t.headers_ns);
            r.first_byte_ms = since(t.first_byte_ns);
            r.first_event_ms = since(t.first_event_ns);
            r.done_ms = since(t.done_ns);
            r.usage = t.usage;
            r.response_id.clone_from(&t.response_id);
            r.stalls = t
                .stalls
                .iter()
                .map(|s| StallRecord {
                    gap_index: s.index,
                    gap_ms: ms_u(s.gap_ns),
                    threshold_ms: ms_u(s.threshold_ns),
                })
                .collect();
            r.tokens_beyond_cap = t.tokens_beyond_cap;
            r.gaps_beyond_cap = t.gaps_beyond_cap.as_ref().and_then(Quantiles::of_sketch_ns);
            r.stalls_not_listed = t.stalls_not_listed;
            r.cut_events = t.cut_events;
            if t.token_events() > 0 {
                let (_, source) = t.tokens_per_event();
                r.chunk_token_source = Some(source);
                if source == ChunkTokenSource::Usage && !t.chunk_tokens.is_empty() {
                    r.chunk_tokens.clone_from(&t.chunk_tokens);
                }
            }
        }
        r
    }

    /// Adds an open-loop request's schedule: it was due at `scheduled_ns` (the clock of
    /// `sent_ns` and `timing`), was sent at `sent_ns`, and `waited_for_slot` says whether it found
    /// every `--concurrency` slot taken at that instant.
    pub fn with_schedule(
        mut self,
        run_start_ns: u64,
        scheduled_ns: u64,
        sent_ns: u64,
        timing: Option<&RequestTiming>,
        waited_for_slot: bool,
    ) -> RequestRecord {
        self.scheduled_at_ms = Some(ms_between(run_start_ns, scheduled_ns));
        self.dispatch_lag_ms = Some(ms_between(scheduled_ns, sent_ns));
        if let Some(t) = timing {
            self.ttft_from_schedule_ms = t.token_times_ns.first().map(|&f| ms_between(scheduled_ns, f));
            self.e2e_from_schedule_ms = t.last_token().map(|l| ms_between(scheduled_ns, l));
        }
        self.waited_for_slot = waited_for_slot;
        self
    }

    /// Per-token inter-token latencies: each of `gaps_ms` divided by the tokens the later event
    /// carried (`chunk_tokens`, else the usage total over the events, else one), in ms.
    pub fn itl_per_token_ms(&self) -> Vec<f64> {
        let events = self.gaps_ms.len() as u64 + u64::from(!self.gaps_ms.is_empty()) + self.tokens_beyond_cap;
        let total = self.output_tokens.filter(|_| self.token_source == Some(TokenSource::Usage));
        let (k, _) = crate::timing::tokens_per_event(&self.chunk_tokens, events, total);
        self.gaps_ms.iter().enumerate().map(|(i, g)| (g / k.of(i + 1) * 1_000.0).round() / 1_000.0).collect()
    }
}

/// The quantiles the contract names, plus extras.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Quantiles {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Largest value.
    pub max: f64,
    /// Smallest value.
    pub min: f64,
    /// Number of values.
    pub n: u64,
}

impl Quantiles {
    /// The quantiles of `values` (rounded to 3 decimals); `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Quantiles> {
        let s = Summary::from_values(values)?;
        let r = |v: f64| (v * 1_000.0).round() / 1_000.0;
        Some(Quantiles {
            p50: r(s.p50),
            p90: r(s.p90),
            p99: r(s.p99),
            mean: r(s.mean),
            max: r(s.max),
            min: r(s.min),
            n: s.count,
        })
    }
}

impl Quantiles {
    /// From a sketch of nanoseconds, in milliseconds.
    pub fn of_sketch_ns(s: &crate::stats::QuantileSketch) -> Option<Quantiles> {
        let q = |p: f64| s.quantile(p).map(ms);
        Some(Quantiles {
            p50: q(0.5)?,
            p90: q(0.9)?,
            p99: q(0.99)?,
            mean: ms(s.mean()?),
            max: ms(s.max()?),
            min: ms(s.min()?),
            n: s.count(),
        })
    }
}

/// Summary over the run. Timing quantiles use the requests that produced that figure, failed
/// ones included (a stream cut mid-way still had a real TTFT); `ok`/`failed` count requests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeSummary {
    /// TTFT over the requests that have one, ms.
    pub ttft_ms: Option<Quantiles>,
    /// TTFO over the requests that have one, ms.
    pub ttfo_ms: Option<Quantiles>,
    /// All gaps of all requests pooled.
    pub itl_ms: Option<Quantiles>,
    /// TPOT over the requests that have one, ms.
    pub tpot_ms: Option<Quantiles>,
    /// E2E over the requests that have one, ms.
    pub e2e_ms: Option<Quantiles>,
    /// Requests that completed without a fault.
    pub ok: usize,
    /// Requests that failed.
    pub failed: usize,
    /// Failed requests by fault kind (`timeout_mid_stream`, …).
    pub failures: BTreeMap<String, usize>,
    /// Stalls over all requests (listed or not).
    pub stalls: usize,
    /// Output tokens over all requests.
    pub output_tokens: u64,
    /// Output tokens per second of wall time over the run.
    pub throughput_tok_s: Option<f64>,
    /// Per-token gaps of all requests pooled ([`RequestRecord::itl_per_token_ms`]).
    #[serde(default)]
    pub itl_per_token_ms: Option<Quantiles>,
    /// Requests by where their tokens per event came from (`usage`, `estimated`, `counted`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub chunk_token_sources: BTreeMap<String, usize>,
    /// Open loop only: dispatch lag (scheduled start → sent) over the requests, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch_lag_ms: Option<Quantiles>,
    /// Open loop only: TTFT counted from the scheduled start, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_from_schedule_ms: Option<Quantiles>,
    /// Open loop only: E2E counted from the scheduled start, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_from_schedule_ms: Option<Quantiles>,
    /// Open loop only: whether the client kept to its schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleSummary>,
}

/// Whether an open-loop client kept to its schedule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScheduleSummary {
    /// A start later than this is late, ms: the mean gap between scheduled starts, held between
    /// 2 ms (twice the client timer's 1 ms granularity) and 5 ms.
    pub late_threshold_ms: f64,
    /// Requests whose dispatch lag exceeded `late_threshold_ms`.
    pub late: usize,
    /// Requests that found every `--concurrency` slot taken at their scheduled start.
    pub waited_for_slot: usize,
    /// Requests with a schedule.
    pub scheduled: usize,
    /// The dispatch lag's p99 exceeded `late_threshold_ms`: the client fell behind, and the
    /// latencies from the send understate what arrivals on schedule saw.
    pub fell_behind: bool,
}

impl ScheduleSummary {
    /// The verdict over `requests` of a run scheduled at `rate_per_s`; `None` when no request
    /// has a schedule.
    pub fn of(
        requests: &[RequestRecord],
        rate_per_s: f64,
        lag: Option<&Quantiles>,
    ) -> Option<ScheduleSummary> {
        let lag = lag?;
        let threshold = late_threshold_ms(rate_per_s);
        let scheduled: Vec<&RequestRecord> =
            requests.iter().filter(|r| r.scheduled_at_ms.is_some()).collect();
        Some(ScheduleSummary {
            late_threshold_ms: threshold,
            late: scheduled.iter().filter(|r| r.dispatch_lag_ms.is_some_and(|l| l > threshold)).count(),
            waited_for_slot: scheduled.iter().filter(|r| r.waited_for_slot).count(),
            scheduled: scheduled.len(),
            fell_behind: lag.p99 > threshold,
        })
    }
}

/// The dispatch lag above which a start is late, ms, for starts scheduled `rate_per_s` a second:
/// the mean gap between starts (a start later than that is out of place in the arrival
/// process), never below 2 ms (the client's timer fires on a 1 ms tick) nor above 5 ms.
pub fn late_threshold_ms(rate_per_s: f64) -> f64 {
    let gap = if rate_per_s > 0.0 { 1_000.0 / rate_per_s } else { f64::INFINITY };
    gap.clamp(2.0, 5.0)
}

impl ProbeSummary {
    /// The summary of `requests` over a run of `wall_ms` milliseconds.
    pub fn of(requests: &[RequestRecord], wall_ms: f64) -> ProbeSummary {
        let collect =
            |f: fn(&RequestRecord) -> Option<f64>| requests.iter().filter_map(f).collect::<Vec<f64>>();
        let gaps: Vec<f64> = requests.iter().flat_map(|r| r.gaps_ms.iter().copied()).collect();
        let mut failures = BTreeMap::new();
        for r in requests {
            if let Some(e) = &r.error {
                *failures.entry(e.kind.as_str().to_owned()).or_insert(0) += 1;
            }
        }
        let output_tokens: u64 = requests.iter().filter_map(|r| r.output_tokens).sum();
        let per_token: Vec<f64> = requests.iter().flat_map(RequestRecord::itl_per_token_ms).collect();
        let mut chunk_token_sources = BTreeMap::new();
        for src in requests.iter().filter_map(|r| r.chunk_token_source) {
            *chunk_token_sources.entry(src.as_str().to_owned()).or_insert(0) += 1;
        }
        ProbeSummary {
            ttft_ms: Quantiles::of(&collect(|r| r.ttft_ms)),
            ttfo_ms: Quantiles::of(&collect(|r| r.ttfo_ms)),
            itl_ms: Quantiles::of(&gaps),
            tpot_ms: Quantiles::of(&collect(|r| r.tpot_ms)),
            e2e_ms: Quantiles::of(&collect(|r| r.e2e_ms)),
            ok: requests.iter().filter(|r| r.ok).count(),
            failed: requests.iter().filter(|r| !r.ok).count(),
            failures,
            stalls: requests.iter().map(|r| r.stalls.len() + r.stalls_not_listed as usize).sum(),
            output_tokens,
            throughput_tok_s: (wall_ms > 0.0)
                .then(|| (output_tokens as f64 * 1_000.0 / wall_ms * 10.0).round() / 10.0),
            itl_per_token_ms: Quantiles::of(&per_token),
            chunk_token_sources,
            dispatch_lag_ms: Quantiles::of(&collect(|r| r.dispatch_lag_ms)),
            ttft_from_schedule_ms: Quantiles::of(&collect(|r| r.ttft_from_schedule_ms)),
            e2e_from_schedule_ms: Quantiles::of(&collect(|r| r.e2e_from_schedule_ms)),
            schedule: None,
        }
    }
}

/// A definition as printed in reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DefinitionRecord {
    /// The figure's name (`TTFT`, …).
    pub name: String,
    /// What it measures.
    pub meaning: String,
    /// What other tools call it.
    pub others: String,
}

/// How the run was configured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// The wire API spoken.
    pub api: Api,
    /// The model name sent.
    pub model: String,
    /// Requests in the run.
    pub requests: usize,
    /// Requests in flight at once, at most.
    pub concurrency: usize,
    /// Request starts per second, when rate-limited.
    pub rate_per_s: Option<f64>,
    /// Per-request deadline, ms.
    pub timeout_ms: u64,
    /// The most tokens asked for per request.
    pub max_tokens: u32,
    /// Length of the prompt sent, characters.
    pub prompt_chars: usize,
    /// How scheduled starts are spaced (open loop: present with `rate_per_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival: Option<Arrival>,
    /// The seed of a `poisson` schedule (the same seed gives the same starts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// The whole report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeReport {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The exact URL requested.
    pub url: String,
    /// How the run was configured.
    pub config: RunConfig,
    /// What the host noticed about the run's setup, for the reader (redacted).
    pub warnings: Vec<String>,
    /// The run's wall time, ms.
    pub wall_ms: f64,
    /// Every request, in index order.
    pub requests: Vec<RequestRecord>,
    /// Figures over the run.
    pub summary: ProbeSummary,
    /// The definitions of the figures reported.
    pub definitions: Vec<DefinitionRecord>,
    /// How the quantiles are computed.
    pub quantile_method: String,
    /// What limits these measurements (timer resolution, chunk coalescing, …).
    pub limits: Vec<String>,
}

impl ProbeReport {
    /// A report of `requests` (sorted by index) with its summary and the definitions.
    pub fn new(
        url: String,
        config: RunConfig,
        warnings: Vec<String>,
        wall_ms: f64,
        mut requests: Vec<RequestRecord>,
    ) -> Self {
        crate::sort::sort_by_key(&mut requests, |r| r.index);
        let mut summary = ProbeSummary::of(&requests, wall_ms);
        if let Some(rate) = config.rate_per_s {
            summary.schedule = ScheduleSummary::of(&requests, rate, summary.dispatch_lag_ms.as_ref());
        }
        let open_loop = summary.schedule.is_some();
        let figures =
            defs::PROBE_FIGURES.iter().chain(defs::PROBE_OPEN_LOOP_FIGURES.iter().filter(|_| open_loop));
        ProbeReport {
            schema: SCHEMA.to_owned(),
            url,
            config,
            warnings,
            wall_ms: (wall_ms * 1_000.0).round() / 1_000.0,
            requests,
            summary,
            definitions: figures
                .map(|d| DefinitionRecord {
                    name: d.name.into(),
                    meaning: d.meaning.into(),
                    others: d.others.into(),
                })
                .collect(),
            quantile_method: defs::QUANTILE_METHOD.to_owned(),
            limits: Vec::new(),
        }
    }

    /// The `n` requests with the longest TTFT, longest first (ties: lower index first); requests
    /// without a TTFT are not listed.
    pub fn slowest_by_ttft(&self, n: usize) -> Vec<&RequestRecord> {
        let mut v: Vec<&RequestRecord> = self.requests.iter().filter(|r| r.ttft_ms.is_some()).collect();
        crate::sort::sort_by(&mut v, |a, b| {
            let t = |r: &RequestRecord| r.ttft_ms.unwrap_or(0.0);
            t(b).total_cmp(&t(a)).then(a.index.cmp(&b.index))
        });
        v.truncate(n);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::FaultKind;
    use crate::timing::{StreamTimer, TimerConfig};

    #[test]
    fn record_and_summary_shapes() {
        let mut t = StreamTimer::new(2_000_000, TimerConfig::default());
        t.on_headers(3_000_000);
        t.feed(b"data: {\"id\":\"x\",\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n", 10_000_000);
        t.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"b\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", 12_500_500);
        let timing = t.finish(13_000_000);
        let ok = RequestRecord::new(0, 1_000_000, 2_000_000, Some(200), Some(&timing), None);
        assert!(ok.ok);
        assert_eq!(ok.ttft_ms, Some(8.0));
        assert_eq!(ok.gaps_ms, vec![2.501]);
        assert_eq!(ok.sent_at_ms, 1.0);
        assert_eq!(ok.output_tokens, Some(2));
        assert_eq!(ok.token_source, Some(TokenSource::Counted));
        let bad =
            RequestRecord::new(1, 0, 0, Some(429), None, Some(Fault::new(FaultKind::RateLimited, "slow")));
        let report = ProbeReport::new(
            "http://h/v1/chat/completions".into(),
            RunConfig {
                api: Api::Openai,
                model: "m".into(),
                requests: 2,
                concurrency: 1,
                rate_per_s: None,
                timeout_ms: 60_000,
                max_tokens: 16,
                prompt_chars: 5,
                arrival: None,
                seed: None,
            },
            vec![],
            100.0,
            vec![bad, ok],
        );
        let v = serde_json::to_value(&report).unwrap();
        assert_eq!(v["schema"], "triage.probe/v1");
        assert_eq!(v["requests"][0]["index"], 0);
        assert_eq!(v["requests"][1]["error"]["kind"], "rate_limited");
        assert_eq!(v["summary"]["ttft_ms"]["p50"], 8.0);
        assert_eq!(v["summary"]["ok"], 1);
        assert_eq!(v["summary"]["failed"], 1);
        assert_eq!(v["summary"]["failures"]["rate_limited"], 1);
        assert!(v["summary"]["ttfo_ms"]["p99"].is_number());
        assert!(v["summary"]["tpot_ms"]["max"].is_number());
        assert_eq!(v["requests"][0]["token_source"], "counted");
        assert!(v["requests"][0].get("trace_id").is_none(), "absent when none was sent");
        let slowest: Vec<usize> = report.slowest_by_ttft(5).iter().map(|r| r.index).collect();
        assert_eq!(slowest, [0], "a request without a TTFT is not listed");
        assert!(v.get("schedule").is_none() && v["config"].get("arrival").is_none(), "closed loop");
        assert!(v["summary"].get("dispatch_lag_ms").is_none());
        assert_eq!(v["summary"]["itl_per_token_ms"]["p50"], 2.501);
        assert_eq!(v["summary"]["chunk_token_sources"]["counted"], 1);
        assert_eq!(v["requests"][0]["chunk_token_source"], "counted");
        assert!(!report.definitions.iter().any(|d| d.name == "dispatch lag"));
        let mut traced = report.requests[0].clone();
        traced.trace_id = Some("4bf92f3577b34da6a3ce929d0e0e4736".into());
        let v = serde_json::to_value(&traced).unwrap();
        assert_eq!(v["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(serde_json::from_value::<RequestRecord>(v).unwrap(), traced);
    }

    /// An open-loop record: scheduled at 10 ms, sent at 14 ms, first token at 20 ms, last at
    /// 22.5 ms — lag 4 ms, TTFT 6 ms from the send and 10 ms from the schedule.
    #[test]
    fn open_loop_records_and_the_fell_behind_verdict() {
        let mut t = StreamTimer::new(14_000_000, TimerConfig::default());
        t.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n", 20_000_000);
        t.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\ndata: [DONE]\n\n", 22_500_000);
        let timing = t.finish(23_000_000);
        let rec = |index: usize, waited: bool| {
            RequestRecord::new(index, 0, 14_000_000, Some(200), Some(&timing), None).with_schedule(
                0,
                10_000_000,
                14_000_000,
                Some(&timing),
                waited,
            )
        };
        let r = rec(0, true);
        assert_eq!(r.scheduled_at_ms, Some(10.0));
        assert_eq!(r.dispatch_lag_ms, Some(4.0));
        assert_eq!(r.ttft_ms, Some(6.0));
        assert_eq!(r.ttft_from_schedule_ms, Some(10.0));
        assert_eq!(r.e2e_from_schedule_ms, Some(12.5));
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["waited_for_slot"], true);
        assert_eq!(serde_json::from_value::<RequestRecord>(v).unwrap(), r);
        assert!(serde_json::to_value(rec(1, false)).unwrap().get("waited_for_slot").is_none());
        let config = |rate: f64| RunConfig {
            api: Api::Openai,
            model: "m".into(),
            requests: 2,
            concurrency: 1,
            rate_per_s: Some(rate),
            timeout_ms: 1_000,
            max_tokens: 2,
            prompt_chars: 1,
            arrival: Some(Arrival::Poisson),
            seed: Some(3),
        };
        // 4 ms late against a 2 ms bound (100/s: a 10 ms gap, held at 5 ms; 1000/s: 1 ms, held at 2 ms).
        let report =
            ProbeReport::new("u".into(), config(1_000.0), vec![], 30.0, vec![rec(0, true), rec(1, false)]);
        let s = report.summary.schedule.as_ref().unwrap();
        assert_eq!(
            (s.late_threshold_ms, s.late, s.waited_for_slot, s.scheduled, s.fell_behind),
            (2.0, 2, 1, 2, true)
        );
        assert_eq!(report.summary.dispatch_lag_ms.as_ref().unwrap().p99, 4.0);
        assert_eq!(report.summary.ttft_from_schedule_ms.as_ref().unwrap().p50, 10.0);
        assert!(report.definitions.iter().any(|d| d.name == "dispatch lag"));
        let v = serde_json::to_value(&report).unwrap();
        assert_eq!(v["config"]["arrival"], "poisson");
        assert_eq!(v["config"]["seed"], 3);
        assert_eq!(v["summary"]["schedule"]["fell_behind"], true);
        let report = ProbeReport::new("u".into(), config(100.0), vec![], 30.0, vec![rec(0, false)]);
        let s = report.summary.schedule.unwrap();
        assert_eq!((s.late_threshold_ms, s.late, s.fell_behind), (5.0, 0, false));
        assert_eq!(late_threshold_ms(400.0), 2.5);
    }
}
