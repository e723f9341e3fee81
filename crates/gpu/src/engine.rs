//! The local engine's state as the GPU rules need it, read from a Prometheus `/metrics` scrape
//! (vLLM's `vllm:*` or SGLang's `sglang:*` names of [`ENGINE_METRICS`], the vocabulary the watch
//! reads too), or from JSON lines of [`EngineSample`].

use serde::{Deserialize, Serialize};
use triage_base::engine_metrics::{ENGINE_METRICS, Engine, Quantity, metric};
use triage_base::expo::parse_sample;
use triage_report::Issue;

/// The engine at one moment. Counters are cumulative totals.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineSample {
    /// Unix time of the scrape, seconds.
    pub t: f64,
    /// Requests in the running batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<f64>,
    /// Requests queued, not yet scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<f64>,
    /// KV-cache blocks in use, 0–1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_usage: Option<f64>,
    /// Prompt tokens processed since the engine started (counter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_total: Option<f64>,
    /// Tokens generated since the engine started (counter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_tokens_total: Option<f64>,
}

/// The engines whose names the GPU rules read (TGI's names are the watch's only).
const ENGINES: [Engine; 2] = [Engine::Vllm, Engine::Sglang];

/// Where a quantity goes in [`EngineSample::from_metrics`]'s findings (the sample's fields in
/// order); `None`: not a field of the sample.
fn slot(q: Quantity) -> Option<usize> {
    match q {
        Quantity::Running => Some(0),
        Quantity::Waiting => Some(1),
        Quantity::KvUsage => Some(2),
        Quantity::PromptTokens => Some(3),
        Quantity::GenerationTokens => Some(4),
        Quantity::Steps => None,
    }
}

impl EngineSample {
    /// Read one `/metrics` scrape taken at `t`. Series of one family are summed over their
    /// labels (several engines or data-parallel ranks on one node), except KV usage: the fullest
    /// rank. `None` when the text holds none of the families above.
    pub fn from_metrics(text: &str, t: f64) -> Option<EngineSample> {
        // For each field: (preference rank of the name found, value).
        let mut found: [Option<(usize, f64)>; 5] = [None; 5];
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((name, _labels, value, _ts)) = parse_sample(line) else { continue };
            if !value.is_finite() {
                continue;
            }
            let Some((i, row)) = metric(&name) else { continue };
            let Some(at) = slot(row.quantity).filter(|_| ENGINES.contains(&row.engine)) else { continue };
            // The name's preference: its place among the names of its quantity
            // ([`ENGINE_METRICS`] lists the preferred first).
            let rank = ENGINE_METRICS[..i]
                .iter()
                .filter(|m| m.quantity == row.quantity && ENGINES.contains(&m.engine))
                .count();
            let entry = &mut found[at];
            *entry = match *entry {
                Some((r, _)) if r < rank => *entry,
                Some((r, v)) if r == rank => {
                    Some((r, if row.quantity == Quantity::KvUsage { v.max(value) } else { v + value }))
                }
                _ => Some((rank, value)),
            };
        }
        if found.iter().all(Option::is_none) {
            return None;
        }
        let get = |q: Quantity| slot(q).and_then(|i| found[i]).map(|(_, v)| v);
        Some(EngineSample {
            t,
            running: get(Quantity::Running),
            waiting: get(Quantity::Waiting),
            kv_usage: get(Quantity::KvUsage),
            prompt_tokens_total: get(Quantity::PromptTokens),
            generation_tokens_total: get(Quantity::GenerationTokens),
        })
    }
}

/// Engine samples over time, for replay: JSON lines of [`EngineSample`], or one `/metrics`
/// scrape (which then holds for the whole replay, `t` = 0).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EngineSeries {
    /// In time order.
    pub samples: Vec<EngineSample>,
    /// Lines that could not be read, with their line numbers.
    pub issues: Vec<Issue>,
}

impl EngineSeries {
    /// Reads a replay of engine scrapes (JSON lines, or one Prometheus scrape that holds for the whole replay); never fails: what it cannot read becomes an issue.
    pub fn parse(text: &str) -> EngineSeries {
        let mut out = EngineSeries::default();
        let first = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
        if !first.starts_with('{') {
            match EngineSample::from_metrics(text, 0.0) {
                Some(s) => out.samples.push(s),
                None => out.issues.push(Issue {
                    line: 1,
                    message: "no engine metrics found (expected vllm:num_requests_running, sglang:num_running_reqs, … or JSON lines)".into(),
                }),
            }
            return out;
        }
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.is_empty() {
                continue;
            }
            match serde_json::from_str::<EngineSample>(t) {
                Ok(s) if s.t.is_finite() => out.samples.push(s),
                Ok(_) => out.issues.push(Issue { line: i + 1, message: "`t` is not a finite number".into() }),
                Err(e) if out.issues.len() < 100 => {
                    out.issues.push(Issue { line: i + 1, message: format!("not an engine sample: {e}") })
                }
                Err(_) => {}
            }
        }
        triage_base::sort::sort_by(&mut out.samples, |a, b| a.t.total_cmp(&b.t));
        out
    }

    /// [`EngineSeries::at`], stamped `t` when the sample carries no time of its own (a single
    /// scrape read as the engine's state for the whole series).
    pub fn sample_at(&self, t: f64) -> Option<EngineSample> {
        self.at(t).map(|s| {
            let mut s = s.clone();
            if s.t == 0.0 {
                s.t = t;
            }
            s
        })
    }

    /// The latest sample at or before `t` (the first one when all are later: a single scrape
    /// describes the whole replay).
    pub fn at(&self, t: f64) -> Option<&EngineSample> {
        let n = self.samples.partition_point(|s| s.t <= t);
        if n == 0 { self.samples.first() } else { self.samples.get(n - 1) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_vllm_metrics_summing_ranks() {
        let text = "# HELP vllm:num_requests_running x\nvllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\nvllm:num_requests_running{engine=\"1\",model_name=\"m\"} 2.0\nvllm:num_requests_waiting{engine=\"0\"} 0.0\nvllm:gpu_cache_usage_perc{engine=\"0\"} 0.5\nvllm:gpu_cache_usage_perc{engine=\"1\"} 0.75\nvllm:generation_tokens_total{engine=\"0\"} 1000\n";
        let s = EngineSample::from_metrics(text, 5.0).unwrap();
        assert_eq!(s.running, Some(5.0));
        assert_eq!(s.waiting, Some(0.0));
        assert_eq!(s.kv_usage, Some(0.75));
        assert_eq!(s.generation_tokens_total, Some(1000.0));
        assert_eq!(s.prompt_tokens_total, None);
    }

    #[test]
    fn prefers_the_new_vllm_name_and_reads_sglang() {
        let text = "vllm:gpu_cache_usage_perc 0.9\nvllm:kv_cache_usage_perc 0.2\n";
        assert_eq!(EngineSample::from_metrics(text, 0.0).unwrap().kv_usage, Some(0.2));
        let sg = "sglang:num_running_reqs{tp_rank=\"0\"} 4\nsglang:num_queue_reqs{tp_rank=\"0\"} 7\nsglang:token_usage{tp_rank=\"0\"} 0.31\n";
        let s = EngineSample::from_metrics(sg, 0.0).unwrap();
        assert_eq!((s.running, s.waiting, s.kv_usage), (Some(4.0), Some(7.0), Some(0.31)));
        assert_eq!(EngineSample::from_metrics("node_load1 3\n", 0.0), None);
    }

    #[test]
    fn series_from_jsonl_or_one_scrape() {
        let s = EngineSeries::parse("{\"t\": 2, \"running\": 1}\nbad\n{\"t\": 1, \"running\": 0}\n");
        assert_eq!(s.samples.len(), 2);
        assert_eq!(s.issues[0].line, 2);
        assert_eq!(s.at(0.5).unwrap().t, 1.0);
        assert_eq!(s.at(1.5).unwrap().running, Some(0.0));
        assert_eq!(s.at(9.0).unwrap().running, Some(1.0));
        let one = EngineSeries::parse("vllm:num_requests_running 0\n");
        assert_eq!(one.at(123.0).unwrap().running, Some(0.0));
        assert_eq!(EngineSeries::parse("hello\n").issues.len(), 1);
    }
}
