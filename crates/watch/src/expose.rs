//! The watch's own metrics in the Prometheus text format (`triage watch --listen`), for an
//! alert rule (`deploy/watch/alerts.yml`) and a Grafana panel.
//!
//! Exported: `triage_canary_up`, `triage_canary_ttft_seconds` (histogram, fixed buckets),
//! `triage_canary_failures_total{kind}`, `triage_engine_stalled`, `triage_watch_verdict{verdict}`,
//! `triage_canary_runs_total`, `triage_canary_skipped_total`,
//! `triage_engine_scrape_failures_total`, `triage_engine_requests_running`,
//! `triage_engine_requests_waiting` and `triage_engine_frozen_seconds`. Fixed size whatever
//! the run's length: the label values are fault kinds and verdicts, both closed sets.

use std::fmt::Write;

use super::{State, Watch};
use triage_report::Verdict;

/// Upper bounds of the TTFT histogram's buckets, seconds (`+Inf` is implied).
pub const TTFT_BUCKETS_S: [f64; 12] = [0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 2.5, 5.0, 10.0, 30.0, 60.0];

/// A Prometheus histogram of canary TTFTs with fixed buckets ([`TTFT_BUCKETS_S`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TtftHistogram {
    /// Count per bucket (not cumulative); the last slot is above every bound.
    counts: [u64; TTFT_BUCKETS_S.len() + 1],
    sum_s: f64,
    count: u64,
}

impl TtftHistogram {
    /// Count one TTFT, seconds.
    pub fn observe(&mut self, s: f64) {
        if !s.is_finite() || s < 0.0 {
            return;
        }
        let i = TTFT_BUCKETS_S.iter().position(|b| s <= *b).unwrap_or(TTFT_BUCKETS_S.len());
        self.counts[i] += 1;
        self.sum_s += s;
        self.count += 1;
    }

    /// TTFTs counted.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Their sum, seconds.
    pub fn sum_s(&self) -> f64 {
        self.sum_s
    }

    /// Cumulative `(le, count)` pairs, `+Inf` last.
    pub fn cumulative(&self) -> Vec<(f64, u64)> {
        let mut acc = 0;
        TTFT_BUCKETS_S
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(self.counts)
            .map(|(le, c)| {
                acc += c;
                (le, acc)
            })
            .collect()
    }
}

/// The verdicts `triage_watch_verdict` lists (one of them 1, the others 0).
const VERDICTS: [Verdict; 5] =
    [Verdict::Healthy, Verdict::TtftHigh, Verdict::ThroughputZero, Verdict::Config, Verdict::Inconclusive];

/// A float as Prometheus writes it.
fn num(v: f64) -> String {
    if v == f64::INFINITY {
        "+Inf".to_owned()
    } else if v.is_nan() {
        "NaN".to_owned()
    } else {
        format!("{v}")
    }
}

impl Watch {
    /// The exposition (`text/plain; version=0.0.4`), every family with `# HELP` and `# TYPE`.
    pub fn exposition(&self) -> String {
        let mut o = String::with_capacity(4096);
        let last = self.last();
        let state = last.map_or(State::Unknown, |l| l.state);
        let up = last.and_then(|l| l.canary.as_ref()).is_some_and(|c| c.ttft_ms.is_some());
        let _ = writeln!(
            o,
            "# HELP triage_canary_up 1 when the last canary got a token before its deadline (serving or slow), else 0.\n# TYPE triage_canary_up gauge\ntriage_canary_up {}",
            u8::from(up)
        );
        let _ = writeln!(
            o,
            "# HELP triage_canary_ttft_seconds Canary TTFT: request sent to the first SSE event carrying a generated token.\n# TYPE triage_canary_ttft_seconds histogram"
        );
        for (le, c) in self.ttft().cumulative() {
            let _ = writeln!(o, "triage_canary_ttft_seconds_bucket{{le=\"{}\"}} {c}", num(le));
        }
        let _ = writeln!(o, "triage_canary_ttft_seconds_sum {}", num(self.ttft().sum_s()));
        let _ = writeln!(o, "triage_canary_ttft_seconds_count {}", self.ttft().count());
        let _ = writeln!(
            o,
            "# HELP triage_canary_failures_total Canaries that failed, by kind (the probe's fault kinds).\n# TYPE triage_canary_failures_total counter"
        );
        for (kind, c) in self.failures() {
            let _ = writeln!(o, "triage_canary_failures_total{{kind=\"{kind}\"}} {c}");
        }
        let simple: [(&str, &str, &str, String); 4] = [
            (
                "triage_engine_stalled",
                "gauge",
                "1 when the last interval found the engine stalled: the canary got no token (or no headers) before its deadline, or requests were held while the progress counters did not move between distinct scrapes.",
                u8::from(state == State::Stalled).to_string(),
            ),
            ("triage_canary_runs_total", "counter", "Canaries sent.", self.canaries().to_string()),
            (
                "triage_canary_skipped_total",
                "counter",
                "Intervals whose canary was not sent because the previous one was still in flight.",
                self.skipped().to_string(),
            ),
            (
                "triage_engine_scrape_failures_total",
                "counter",
                "Scrapes of the engine's /metrics that failed.",
                self.scrape_failures().to_string(),
            ),
        ];
        for (name, kind, help, value) in simple {
            let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
        }
        let verdict = last.map_or(Verdict::Inconclusive, |l| l.verdict);
        let _ = writeln!(
            o,
            "# HELP triage_watch_verdict The last interval's verdict: 1 for it, 0 for the others.\n# TYPE triage_watch_verdict gauge"
        );
        for v in VERDICTS {
            let _ =
                writeln!(o, "triage_watch_verdict{{verdict=\"{}\"}} {}", v.as_str(), u8::from(v == verdict));
        }
        let engine = last.and_then(|l| l.engine.as_ref());
        let gauges = [
            (
                "triage_engine_requests_running",
                "Requests running in the engine at the last scrape.",
                engine.and_then(|e| e.running),
            ),
            (
                "triage_engine_requests_waiting",
                "Requests waiting in the engine at the last scrape.",
                engine.and_then(|e| e.waiting),
            ),
            (
                "triage_engine_frozen_seconds",
                "How long the progress counters have not moved while requests were held (0 when they moved or nothing was held).",
                engine.map(|e| e.frozen_for_ms.unwrap_or(0.0) / 1e3),
            ),
        ];
        for (name, help, value) in gauges {
            if let Some(v) = value {
                let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {}", num(v));
            }
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_is_cumulative_and_bounded() {
        let mut h = TtftHistogram::default();
        for s in [0.01, 0.3, 0.3, 3.0, 100.0, f64::NAN, -1.0] {
            h.observe(s);
        }
        assert_eq!(h.count(), 5);
        let c = h.cumulative();
        assert_eq!(c.len(), TTFT_BUCKETS_S.len() + 1);
        assert_eq!(c[0], (0.025, 1));
        assert_eq!(c[4], (0.5, 3));
        assert_eq!(c.last(), Some(&(f64::INFINITY, 5)));
        assert!((h.sum_s() - 103.61).abs() < 1e-9);
    }
}
