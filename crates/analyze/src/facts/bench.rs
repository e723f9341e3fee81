//! A benchmark's results (written by `parsers/bench/`).

use crate::report::EvidenceLine;
use std::collections::BTreeMap;

/// One benchmark run's results: the tool, its figures and what it was asked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BenchFacts {
    /// `vllm`, `sglang`, `guidellm`, `aiperf`.
    pub tool: String,
    /// Canonical figure → value, e.g. `ttft_ms.mean`, `ttft_ms.p99`, `tpot_ms.median`,
    /// `itl_ms.p99`, `e2e_ms.mean`, `request_throughput`, `output_throughput`, `completed`,
    /// `failed` (names per `triage_base::defs`, whatever the tool called them).
    pub figures: BTreeMap<String, f64>,
    /// Where two figures are not comparable, and why.
    pub notes: Vec<String>,
    /// The lines that matter most first: p99 TTFT, mean TTFT, the result's header.
    pub evidence: Vec<EvidenceLine>,
    /// The line each figure was read from.
    pub lines: BTreeMap<String, EvidenceLine>,
    /// Which run of a sweep this is, when the tool says (guidellm's strategy: `synchronous`,
    /// `constant`, `throughput` …).
    pub label: Option<String>,
}

impl BenchFacts {
    /// The highest tail percentile read for `metric` (`ttft_ms`, `itl_ms` …): p99, else p95,
    /// else p90, with its name.
    pub fn tail(&self, metric: &str) -> Option<(f64, &'static str)> {
        ["p99", "p95", "p90"]
            .into_iter()
            .find_map(|p| self.figures.get(&format!("{metric}.{p}")).map(|v| (*v, p)))
    }

    /// The median of `metric`, else its mean, with its name.
    pub fn middle(&self, metric: &str) -> Option<(f64, &'static str)> {
        ["median", "p50", "mean"]
            .into_iter()
            .find_map(|p| self.figures.get(&format!("{metric}.{p}")).map(|v| (*v, p)))
    }

    /// The line a figure was read from, else the run's first evidence line.
    pub fn line(&self, figure: &str) -> Option<EvidenceLine> {
        self.lines.get(figure).or(self.evidence.first()).cloned()
    }

    /// The request rate the run asked for: its own figure, or guidellm's `constant@20.00` /
    /// `poisson@20.00` strategy label.
    pub fn requested_rate(&self) -> Option<f64> {
        self.figures.get("request_rate").copied().or_else(|| {
            let label = self.label.as_deref()?;
            let (_, rate) = label.split_once('@')?;
            rate.trim().parse().ok()
        })
    }
}
