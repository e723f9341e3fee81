//! The input kind `prometheus` of `triage.report/v1`: the questions asked, the groups analysed,
//! the fleet view, the citations and how the window was scraped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{Subject, Verdict};

/// One question asked, as the report cites it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueryRecord {
    /// `/api/v1/series` or `/api/v1/query_range`.
    pub api: String,
    /// The PromQL expression (a series matcher).
    pub expr: String,
    /// Opens the same expression over the same window in the Prometheus graph UI.
    pub graph_url: String,
    /// Series in the answer.
    pub series: usize,
}

/// One replica or GPU node of the window, analysed on its own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// The input name its findings' evidence lines cite.
    pub input: String,
    /// `replica` (an engine's series), `gpus` (a node's DCGM series) or `gateway` (the proxy
    /// filter's `llm_stream_*` series: listed in the fleet view, not analysed; its verdict is
    /// `INCONCLUSIVE`).
    pub role: String,
    /// The replica or GPU node it is (its labels).
    pub subject: Subject,
    /// Series of the window in it.
    pub series: usize,
    /// Its own verdict, as if it were analysed alone.
    pub verdict: Verdict,
    /// The rule of its first finding, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_rule: Option<String>,
}

/// A replica's symptoms over the window, for the fleet view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplicaRank {
    /// The replica (its labels).
    pub subject: Subject,
    /// The input name its evidence lines cite.
    pub input: String,
    /// Its own verdict.
    pub verdict: Verdict,
    /// TTFT p99 over the window from the histogram's bucket deltas, bucket-honest (`≤ 0.1`,
    /// `> 40`, `2.35 (between 2.5 and 5)`), and its upper bound in seconds for sorting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_p99: Option<String>,
    /// The TTFT p99's upper bound in seconds, for sorting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_p99_s: Option<f64>,
    /// Inter-token latency p99 over the window, bucket-honest as `ttft_p99`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl_p99: Option<String>,
    /// The inter-token p99's upper bound in seconds, for sorting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl_p99_s: Option<f64>,
    /// Largest waiting queue in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_max: Option<f64>,
    /// Largest KV-cache usage in the window (0–1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_usage_max: Option<f64>,
    /// Generated tokens per second over the window (counter increase, resets corrected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_tokens_per_s: Option<f64>,
}

/// A GPU against its node's peers, for the fleet view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuRank {
    /// The GPU (its labels).
    pub subject: Subject,
    /// Median SM clock over the window.
    pub sm_clock_mhz: f64,
    /// Median of the peers' medians: the other GPUs of the same node, or — a node with one GPU —
    /// the fleet's other GPUs of the same model ([`GpuRank::peers`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_median_mhz: Option<f64>,
    /// `node` or `fleet`: who the peers are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peers: Option<String>,
    /// `sm_clock_mhz / peer_median_mhz`: below 0.75 is a straggler (rule `slow-gpu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    /// Median temperature over the window (°C).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temp_c: Option<f64>,
    /// Median utilisation over the window (%).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub util_pct: Option<f64>,
}

/// A gateway (the proxy filter's `llm_stream_*` series of one `instance`): what clients saw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GatewayRank {
    /// The gateway (its labels).
    pub subject: Subject,
    /// The input name of its series.
    pub input: String,
    /// TTFT p99 as the gateway timed it (µs buckets, shown in seconds), bucket-honest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_p99: Option<String>,
    /// The TTFT p99's upper bound in seconds, for sorting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_p99_s: Option<f64>,
    /// Inter-token latency p99 as the gateway timed it, bucket-honest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl_p99: Option<String>,
    /// The inter-token p99's upper bound in seconds, for sorting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl_p99_s: Option<f64>,
    /// Streams ended per second over the window (`llm_stream_requests_total`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_s: Option<f64>,
    /// Failed streams per second, every `reason` (`llm_stream_errors_total`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors_per_s: Option<f64>,
}

/// Replicas ranked by the incident's symptom, GPUs by their clock against their peers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Fleet {
    /// `ttft_p99`, `itl_p99`, `waiting`, `kv_usage` or `generation_rate` (ascending: the
    /// replica that generates least first).
    pub ranked_by: String,
    /// Replicas, the most affected first.
    pub replicas: Vec<ReplicaRank>,
    /// GPUs, the slowest against its peers first.
    pub gpus: Vec<GpuRank>,
    /// Gateways ranked by their TTFT tail. No rule reads these series yet: they are shown,
    /// never counted as evidence of health.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gateways: Vec<GatewayRank>,
}

/// Where an evidence line came from: the series, the instant, the value and a link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Citation {
    /// The evidence line's input and line.
    pub input: String,
    /// The evidence line's line number in that input.
    pub line: usize,
    /// The series as a selector (`vllm:num_requests_waiting{instance="…",…}`).
    pub expr: String,
    /// The series' labels, redacted and cut.
    pub labels: BTreeMap<String, String>,
    /// The sample's time, RFC 3339 UTC, and as unix seconds.
    pub at: String,
    /// The sample's time in unix seconds.
    pub at_unix_s: f64,
    /// The sample's value as stored (a counter before reset correction).
    pub value: f64,
    /// Opens the series around that instant in the Prometheus graph UI.
    pub graph_url: String,
}

/// The input kind `prometheus` of `triage.report/v1` (additive: [`crate::Report::prometheus`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrometheusInput {
    /// Always `prometheus`.
    pub kind: String,
    /// The server's base URL, credentials removed.
    pub url: String,
    /// The user's selector as given (`{}` for none).
    pub selector: String,
    /// The window, RFC 3339 UTC and unix seconds, and the step actually used.
    pub start: String,
    /// The window's end, RFC 3339 UTC.
    pub end: String,
    /// The window's start in unix seconds.
    pub start_unix_s: f64,
    /// The window's end in unix seconds.
    pub end_unix_s: f64,
    /// The step used, in seconds (widened to fit the bounds; see `cut`).
    pub step_s: f64,
    /// Every question asked, with a graph link.
    pub queries: Vec<QueryRecord>,
    /// Series and points read (after the bounds).
    pub series: usize,
    /// Points read over all series.
    pub points: u64,
    /// What the bounds cut, what Prometheus warned about, what was changed to fit; empty when
    /// everything was read.
    pub cut: Vec<String>,
    /// Each replica and GPU node analysed on its own.
    pub groups: Vec<Group>,
    /// Replicas and GPUs ranked by the symptom.
    pub fleet: Fleet,
    /// One per evidence line that came from a series.
    pub citations: Vec<Citation>,
    /// The scrape interval learned from the series' own samples and what it limits (additive;
    /// absent when no series had two samples in the recent slice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scraping: Option<Scraping>,
}

/// What the samples say about how the window was scraped (the report's `prometheus.scraping`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scraping {
    /// The scrape interval in seconds: the median spacing of consecutive samples of a series,
    /// the median over series.
    pub interval_s: f64,
    /// Unix seconds from which the series' own samples were read (before it, points at steps).
    pub samples_from_unix_s: f64,
    /// Seconds of the recent tail judged on its own: at least three scrapes;
    /// `null` when the window is too short to hold one beside the rest.
    pub tail_s: Option<f64>,
    /// Series with no sample in the last 2.5 scrape intervals of the window:
    /// their target stopped answering (or went away), which is not a counter that stopped.
    pub stale_series: usize,
    /// What the interval limits, in words.
    pub limits: String,
}
