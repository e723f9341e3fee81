//! The engine's state for the watch, read from one `/metrics` scrape with the analyzer's
//! exposition parser ([`triage_base::expo`]): how many requests run and wait, and
//! the counters that move whenever the engine does work.
//!
//! The names are the serving engines' vocabulary ([`ENGINE_METRICS`], shared with the GPU rules'
//! engine reader): the running and waiting gauges, and the progress counters. Every series of a
//! name is summed over its labels (several engines or data-parallel ranks behind one `/metrics`).

use triage_base::engine_metrics::{ENGINE_METRICS, EngineMetric, Quantity, metric};
use triage_base::expo::parse_sample;

/// Which engine's names a scrape holds (`vllm`, `sglang`, `tgi`).
pub use triage_base::engine_metrics::Engine as Family;

/// Progress counters: each moves whenever the engine completes a step or a request (their
/// rows of [`ENGINE_METRICS`], in its order).
pub fn progress() -> impl Iterator<Item = &'static EngineMetric> {
    ENGINE_METRICS.iter().filter(|m| m.quantity.is_progress())
}

/// The engine as one scrape showed it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EngineScrape {
    /// When the scrape's body was read, on the host's monotonic clock (ns).
    pub at_ns: u64,
    /// The family whose names were found first (`None`: none of the names above).
    pub family: Option<Family>,
    /// Requests in the running batch, summed over series.
    pub running: Option<f64>,
    /// Requests waiting to be scheduled, summed over series.
    pub waiting: Option<f64>,
    /// Each progress counter present ([`progress`] order), summed over series.
    pub counters: Vec<(&'static str, f64)>,
    /// The largest sample timestamp the exposition itself carries (ms), when it has any.
    pub exposition_ms: Option<i64>,
    /// FNV-1a of the body: an identical body is said so in the evidence.
    pub digest: u64,
    /// Sample lines read.
    pub samples: usize,
    /// Lines that are neither comments nor samples.
    pub unreadable: usize,
}

impl EngineScrape {
    /// Read one scrape's body, taken at `at_ns`. Total: any text gives a value; lines that are
    /// not samples are counted in `unreadable`, non-finite values are skipped.
    pub fn parse(text: &str, at_ns: u64) -> EngineScrape {
        let mut s = EngineScrape { at_ns, digest: fnv1a(text.as_bytes()), ..EngineScrape::default() };
        // By row of ENGINE_METRICS; the progress counters' are kept.
        let mut counters: [Option<f64>; ENGINE_METRICS.len()] = [None; ENGINE_METRICS.len()];
        let add = |slot: &mut Option<f64>, v: f64| *slot = Some(slot.unwrap_or(0.0) + v);
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((name, _labels, value, ts)) = parse_sample(line) else {
                s.unreadable += 1;
                continue;
            };
            s.samples += 1;
            if !value.is_finite() {
                continue;
            }
            if let Some(ts) = ts {
                s.exposition_ms = Some(s.exposition_ms.map_or(ts, |m| m.max(ts)));
            }
            let Some((i, row)) = metric(&name) else { continue };
            let slot = match row.quantity {
                Quantity::Running => &mut s.running,
                Quantity::Waiting => &mut s.waiting,
                q if q.is_progress() => &mut counters[i],
                _ => continue,
            };
            add(slot, value);
            if s.family.is_none() {
                s.family = Some(row.engine);
            }
        }
        s.counters = ENGINE_METRICS
            .iter()
            .zip(counters)
            .filter(|(m, _)| m.quantity.is_progress())
            .filter_map(|(m, v)| v.map(|v| (m.name, v)))
            .collect();
        s
    }

    /// Requests running plus waiting, when either gauge is present.
    pub fn pending(&self) -> Option<f64> {
        match (self.running, self.waiting) {
            (None, None) => None,
            (r, w) => Some(r.unwrap_or(0.0) + w.unwrap_or(0.0)),
        }
    }

    /// The value of progress counter `name`, when this scrape has it.
    pub fn counter(&self, name: &str) -> Option<f64> {
        self.counters.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }
}

/// 64-bit FNV-1a.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_scrape_sums_engines_and_reads_the_histogram_count() {
        let text = "# TYPE vllm:num_requests_running gauge\n\
            vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 2.0\n\
            vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 1.0\n\
            vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 4.0\n\
            vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} 100.0\n\
            vllm:iteration_tokens_total_count{engine=\"0\",model_name=\"m\"} 7.0\n\
            vllm:iteration_tokens_total_bucket{engine=\"0\",le=\"1.0\",model_name=\"m\"} 7.0\n\
            garbage line\n";
        let s = EngineScrape::parse(text, 5);
        assert_eq!(s.family, Some(Family::Vllm));
        assert_eq!((s.running, s.waiting, s.pending()), (Some(3.0), Some(4.0), Some(7.0)));
        assert_eq!(
            s.counters,
            vec![("vllm:generation_tokens_total", 100.0), ("vllm:iteration_tokens_total_count", 7.0)]
        );
        assert_eq!((s.samples, s.unreadable, s.at_ns), (6, 1, 5));
        assert_eq!(s.digest, EngineScrape::parse(text, 9).digest);
    }

    #[test]
    fn sglang_and_tgi_names() {
        let s = EngineScrape::parse(
            "sglang:num_running_reqs{tp_rank=\"0\"} 1\nsglang:num_queue_reqs 0\nsglang:realtime_tokens_total{mode=\"decode\"} 9\nsglang:realtime_tokens_total{mode=\"prefill_compute\"} 1\n",
            0,
        );
        assert_eq!(
            (s.family, s.running, s.counter("sglang:realtime_tokens_total")),
            (Some(Family::Sglang), Some(1.0), Some(10.0))
        );
        let t = EngineScrape::parse(
            "tgi_batch_current_size 4\ntgi_queue_size 2\ntgi_batch_inference_count{method=\"decode\"} 50\ntgi_batch_inference_count{method=\"prefill\"} 3\n",
            0,
        );
        assert_eq!(
            (t.family, t.pending(), t.counter("tgi_batch_inference_count")),
            (Some(Family::Tgi), Some(6.0), Some(53.0))
        );
    }

    #[test]
    fn unknown_text_and_timestamps() {
        let s = EngineScrape::parse("<html>nope</html>\n", 0);
        assert_eq!((s.family, s.pending(), s.counters.len(), s.unreadable), (None, None, 0, 1));
        let s = EngineScrape::parse(
            "vllm:num_requests_running 1 1700000000000\nvllm:num_requests_waiting NaN 1700000005000\n",
            0,
        );
        assert_eq!((s.running, s.waiting, s.exposition_ms), (Some(1.0), None, Some(1_700_000_000_000)));
    }
}
