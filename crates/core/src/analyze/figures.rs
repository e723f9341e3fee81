//! The figures a report shows, each with its unit and definition, derived from the facts.

use super::facts::Facts;
use super::report::Figure;
use crate::stats::QuantileSketch;
use serde_json::json;
use std::collections::BTreeMap;

fn round(v: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (v * f).round() / f
}

/// p50/p90/p99/max/mean/n of a sketch, rounded to 0.1 (values within the sketch's 1 % bound).
pub fn quantiles(s: &QuantileSketch) -> Option<serde_json::Value> {
    let q = |p: f64| s.quantile(p).map(|v| round(v, 1));
    Some(json!({
        "p50": q(0.5)?, "p90": q(0.9)?, "p99": q(0.99)?,
        "max": round(s.max()?, 1), "mean": round(s.mean()?, 1), "n": s.count(),
    }))
}

fn put(
    out: &mut BTreeMap<String, Figure>,
    name: &str,
    value: Option<serde_json::Value>,
    unit: &str,
    definition: &str,
) {
    if let Some(value) = value {
        out.insert(
            name.to_owned(),
            Figure { value, unit: unit.to_owned(), definition: definition.to_owned() },
        );
    }
}

pub fn figures(f: &Facts) -> BTreeMap<String, Figure> {
    let mut out = BTreeMap::new();
    let r = &f.requests;
    if !r.is_empty() {
        let sketch_note = "; quantiles from a sketch with ≤ 1 % relative error";
        put(&mut out, "request_log.requests", Some(json!(r.rows)), "requests", "rows read from request logs");
        put(
            &mut out,
            "request_log.ttft_ms",
            quantiles(&r.ttft_ms),
            "ms",
            &format!("server-side TTFT: first_token_time − enqueue_time (or a logged TTFT){sketch_note}"),
        );
        put(
            &mut out,
            "request_log.queue_ms",
            quantiles(&r.queue_ms),
            "ms",
            &format!("queue: scheduled − enqueue (or a logged queue time){sketch_note}"),
        );
        put(
            &mut out,
            "request_log.prefill_ms",
            quantiles(&r.prefill_ms),
            "ms",
            &format!("prefill: first_token − scheduled{sketch_note}"),
        );
        put(
            &mut out,
            "request_log.decode_ms",
            quantiles(&r.decode_ms),
            "ms",
            &format!("decode: last_token − first_token{sketch_note}"),
        );
        put(
            &mut out,
            "request_log.e2e_ms",
            quantiles(&r.e2e_ms),
            "ms",
            &format!("E2E: finish (or last token) − enqueue{sketch_note}"),
        );
        put(
            &mut out,
            "request_log.tpot_ms",
            quantiles(&r.tpot_ms),
            "ms",
            &format!("TPOT: (last − first token) / (output tokens − 1), per request{sketch_note}"),
        );
        put(
            &mut out,
            "request_log.prompt_tokens",
            quantiles(&r.prompt_tokens),
            "tokens",
            "prompt length per request",
        );
        put(
            &mut out,
            "request_log.output_tokens",
            quantiles(&r.output_tokens),
            "tokens",
            "output length per request",
        );
        put(
            &mut out,
            "request_log.failed",
            Some(json!(r.failed)),
            "requests",
            "rows whose status is ≥ 400 or names an error, timeout or abort",
        );
    }
    let v = &f.vllm;
    if !v.stats.is_empty() {
        let max = |get: fn(&super::parsers::vllm::VllmStat) -> Option<f64>| {
            v.stats.iter().filter_map(get).fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
        };
        put(
            &mut out,
            "vllm.stats_lines",
            Some(json!(v.stats.len() as u64 + v.stats_dropped)),
            "lines",
            "periodic stats lines read",
        );
        put(
            &mut out,
            "vllm.max_waiting",
            max(|s| s.waiting).map(|x| json!(x)),
            "requests",
            "largest `Waiting` (V1) / `Pending` (V0) in the stats lines",
        );
        put(
            &mut out,
            "vllm.max_running",
            max(|s| s.running).map(|x| json!(x)),
            "requests",
            "largest `Running` in the stats lines",
        );
        put(
            &mut out,
            "vllm.max_kv_usage_pct",
            max(|s| s.kv_usage_pct).map(|x| json!(x)),
            "%",
            "largest `GPU KV cache usage` in the stats lines",
        );
    }
    if v.preemptions > 0 {
        put(
            &mut out,
            "vllm.preemptions",
            Some(json!(v.preemptions)),
            "events",
            "preemption warnings (requests evicted for lack of KV cache space)",
        );
    }
    if !f.metrics.scrapes.is_empty() {
        put(
            &mut out,
            "metrics.scrapes",
            Some(json!(f.metrics.scrapes.len())),
            "scrapes",
            "Prometheus scrapes read (a repeated series starts a new scrape)",
        );
    }
    if !f.gpus.readings.is_empty() {
        put(
            &mut out,
            "gpus.readings",
            Some(json!(f.gpus.readings.len())),
            "readings",
            "per-GPU readings from nvidia-smi output",
        );
    }
    out
}
