//! The figures a report shows, each with its unit and definition, derived from the facts.

use super::facts::Facts;
use super::parsers::request_log::Row;
use super::report::Figure;
use crate::stats::{QuantileSketch, Summary};
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
        // Every row is in the reservoir until it overflows: then quantiles are exact.
        let exact = r.rows as usize <= r.sample.len();
        let note = if exact {
            "; quantiles exact, interpolated linearly between closest ranks"
        } else {
            "; quantiles from a sketch with ≤ 1 % relative error"
        };
        put(&mut out, "request_log.requests", Some(json!(r.rows)), "requests", "rows read from request logs");
        type Get = fn(&Row) -> Option<f64>;
        let table: [(&str, &QuantileSketch, Get, &str, &str); 8] = [
            (
                "ttft_ms",
                &r.ttft_ms,
                |x| x.ttft_ms,
                "ms",
                "server-side TTFT: first_token_time − enqueue_time (or a logged TTFT)",
            ),
            (
                "queue_ms",
                &r.queue_ms,
                |x| x.queue_ms,
                "ms",
                "queue: scheduled − enqueue (or a logged queue time)",
            ),
            ("prefill_ms", &r.prefill_ms, |x| x.prefill_ms, "ms", "prefill: first_token − scheduled"),
            ("decode_ms", &r.decode_ms, |x| x.decode_ms, "ms", "decode: last_token − first_token"),
            ("e2e_ms", &r.e2e_ms, |x| x.e2e_ms, "ms", "E2E: finish (or last token) − enqueue"),
            (
                "tpot_ms",
                &r.tpot_ms,
                |x| x.tpot_ms,
                "ms",
                "TPOT: (last − first token) / (output tokens − 1), per request",
            ),
            ("prompt_tokens", &r.prompt_tokens, |x| x.prompt_tokens, "tokens", "prompt length per request"),
            ("output_tokens", &r.output_tokens, |x| x.output_tokens, "tokens", "output length per request"),
        ];
        for (name, sketch, get, unit, definition) in table {
            let value = if exact {
                let values: Vec<f64> = r.sample.iter().filter_map(get).collect();
                Summary::from_values(&values).map(|s| {
                    json!({
                        "p50": round(s.p50, 1), "p90": round(s.p90, 1), "p99": round(s.p99, 1),
                        "max": round(s.max, 1), "mean": round(s.mean, 1), "n": s.count,
                    })
                })
            } else {
                quantiles(sketch)
            };
            put(&mut out, &format!("request_log.{name}"), value, unit, &format!("{definition}{note}"));
        }
        put(
            &mut out,
            "request_log.failed",
            Some(json!(r.failed)),
            "requests",
            "rows whose status is ≥ 400 or names an error, timeout or abort",
        );
        let slowest: Vec<serde_json::Value> = r
            .slowest
            .iter()
            .map(|row| {
                let ms = |v: Option<f64>| v.map(|v| round(v, 1));
                json!({
                    "id": row.id, "input": row.evidence.as_ref().map(|e| e.input.clone()), "line": row.line,
                    "ttft_ms": ms(row.ttft_ms), "queue_ms": ms(row.queue_ms), "prefill_ms": ms(row.prefill_ms),
                    "decode_ms": ms(row.decode_ms), "e2e_ms": ms(row.e2e_ms),
                    "prompt_tokens": row.prompt_tokens, "output_tokens": row.output_tokens, "status": row.status,
                })
            })
            .collect();
        if !slowest.is_empty() {
            put(
                &mut out,
                "request_log.slowest",
                Some(json!(slowest)),
                "requests",
                "the slowest requests by TTFT, with their timeline: queue = scheduled − enqueue, prefill = first token − scheduled, decode = last token − first token",
            );
        }
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
    let m = &f.metrics;
    if m.window().is_some() {
        let counters = [
            ("generation_tokens", "vllm:generation_tokens_total"),
            ("prompt_tokens", "vllm:prompt_tokens_total"),
            ("requests_succeeded", "vllm:request_success_total"),
            ("preemptions", "vllm:num_preemptions_total"),
        ];
        let window = m.window_seconds();
        for (name, metric) in counters {
            if let Some(d) = m.delta(metric) {
                let v = match window {
                    Some(w) => json!({ "delta": d, "per_s": round(d / w, 2), "window_s": w }),
                    None => json!({ "delta": d }),
                };
                put(
                    &mut out,
                    &format!("metrics.{name}"),
                    Some(v),
                    "count",
                    &format!(
                        "change of `{metric}` between the first and the last scrape (per second when the samples carry timestamps)"
                    ),
                );
            }
        }
    }
    // Server-side latency histograms: quantiles only as good as the buckets — "below the first
    // bucket" is said as such, never interpolated from zero.
    let histograms = [
        ("ttft", "vllm:time_to_first_token_seconds", "server-side TTFT (from arrival; no network)"),
        ("itl", "vllm:inter_token_latency_seconds", "server-side inter-token latency per decode step"),
        ("e2e", "vllm:e2e_request_latency_seconds", "server-side end-to-end request latency"),
        ("queue", "vllm:request_queue_time_seconds", "time in the waiting queue"),
    ];
    for (name, metric, what) in histograms {
        let buckets = match m.window() {
            Some((a, b)) => crate::stats::delta(&a.histogram(metric), &b.histogram(metric)).ok(),
            None => m.latest().map(|s| s.histogram(metric)),
        };
        let Some(buckets) = buckets.filter(|b| !b.is_empty()) else { continue };
        let (p50, _) = crate::stats::histogram_quantile(0.5, &buckets);
        let (p99, _) = crate::stats::histogram_quantile(0.99, &buckets);
        if matches!(p50, crate::stats::BucketQuantile::Empty) {
            continue;
        }
        let scope = if m.window().is_some() {
            "between the first and the last scrape"
        } else {
            "since the server started"
        };
        put(
            &mut out,
            &format!("metrics.{name}_s"),
            Some(
                json!({ "p50": p50.to_string(), "p99": p99.to_string(), "p50_detail": p50, "p99_detail": p99 }),
            ),
            "s",
            &format!(
                "{what}, from `{metric}` buckets {scope}; Prometheus histogram_quantile, but a quantile in the first bucket is reported as ≤ its bound, not interpolated"
            ),
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
        // Per GPU: the median SM clock over its readings, and every clock-event reason seen.
        let mut by_gpu: BTreeMap<u32, (Vec<f64>, Vec<String>)> = BTreeMap::new();
        for r in &f.gpus.readings {
            let e = by_gpu.entry(r.index).or_default();
            e.0.extend(r.sm_clock_mhz);
            for reason in &r.reasons {
                if !e.1.contains(reason) {
                    e.1.push(reason.clone());
                }
            }
        }
        let clocks: serde_json::Map<String, serde_json::Value> = by_gpu
            .iter()
            .filter_map(|(i, (c, _))| {
                Summary::from_values(c).map(|s| (i.to_string(), json!(round(s.p50, 0))))
            })
            .collect();
        if !clocks.is_empty() {
            put(
                &mut out,
                "gpus.sm_clock_mhz",
                Some(json!(clocks)),
                "MHz",
                "median SM clock of each GPU over its readings, by GPU index",
            );
        }
        let reasons: serde_json::Map<String, serde_json::Value> = by_gpu
            .iter()
            .filter(|(_, (_, r))| !r.is_empty())
            .map(|(i, (_, r))| (i.to_string(), json!(r)))
            .collect();
        if !reasons.is_empty() {
            put(
                &mut out,
                "gpus.clock_event_reasons",
                Some(json!(reasons)),
                "reasons",
                "clock-event (throttle) reasons seen active, by GPU index (NVML names)",
            );
        }
    }
    if let Some(o) = f.ooms.first() {
        let v = json!({ "tried_gib": o.tried_gib, "total_gib": o.total_gib, "free_gib": o.free_gib,
            "allocated_by_pytorch_gib": o.allocated_by_pytorch_gib, "reserved_unallocated_gib": o.reserved_unallocated_gib });
        put(
            &mut out,
            "oom.first",
            Some(v),
            "GiB",
            "the first out-of-memory message: the failed allocation, the GPU's capacity and free memory, PyTorch's allocated and reserved-but-unallocated memory",
        );
        put(&mut out, "oom.count", Some(json!(f.ooms.len())), "messages", "out-of-memory messages read");
    }
    let lines: Vec<&str> = f.vllm.startup_lines.iter().map(|e| e.text.as_str()).collect();
    if !lines.is_empty() {
        let s = crate::kv::startup::parse_startup(&lines.join("\n"));
        if let Some(t) = &s.kv_cache_tokens {
            put(
                &mut out,
                "vllm.kv_cache_tokens",
                Some(json!(t.value)),
                "tokens",
                "`GPU KV cache size` logged at start-up: tokens the KV cache holds",
            );
        }
        if let Some(a) = &s.available_kv {
            put(
                &mut out,
                "vllm.available_kv",
                Some(json!(a.value.to_string())),
                "bytes",
                "`Available KV cache memory` logged at start-up, as printed",
            );
        }
        if let Some(c) = &s.max_concurrency {
            put(
                &mut out,
                "vllm.max_concurrency",
                Some(
                    json!({"tokens_per_request": c.value.tokens_per_request, "times": c.value.times.as_f64()}),
                ),
                "×",
                "`Maximum concurrency for N tokens per request` logged at start-up",
            );
        }
    }
    for (i, b) in f.bench.iter().enumerate() {
        let name = match &b.label {
            Some(l) => format!("bench.{}.{i}.{l}", b.tool),
            None => format!("bench.{}.{i}", b.tool),
        };
        let mut v = json!(b.figures);
        if !b.notes.is_empty() {
            v["notes"] = json!(b.notes);
        }
        put(
            &mut out,
            &name,
            Some(v),
            "ms / per s",
            "a benchmark's figures renamed to this tool's definitions (ttft_ms, tpot_ms, itl_ms, e2e_ms …; see notes where the tool's own names mean something else)",
        );
    }
    let t = &f.tgi;
    if t.requests > 0 {
        put(&mut out, "tgi.requests", Some(json!(t.requests)), "requests", "TGI request spans read");
        put(
            &mut out,
            "tgi.total_ms",
            quantiles(&t.total_ms),
            "ms",
            "TGI total_time per request (validation + queue + inference)",
        );
        put(&mut out, "tgi.queue_ms", quantiles(&t.queue_ms), "ms", "TGI queue_time per request");
        put(
            &mut out,
            "tgi.time_per_token_ms",
            quantiles(&t.time_per_token_ms),
            "ms",
            "TGI time_per_token = inference_time / tokens; includes prefill, so it is not TPOT",
        );
    }
    let b = &f.sglang.batches;
    if !b.is_empty() {
        let max = |get: fn(&super::parsers::sglang::SglangBatch) -> Option<f64>| {
            b.iter()
                .filter_map(get)
                .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
                .map(|x| json!(x))
        };
        put(
            &mut out,
            "sglang.batches",
            Some(json!(b.len() as u64 + f.sglang.batches_dropped)),
            "lines",
            "SGLang prefill/decode batch lines read",
        );
        put(
            &mut out,
            "sglang.max_queue",
            max(|x| x.queue),
            "requests",
            "largest `#queue-req` in the batch lines",
        );
        put(
            &mut out,
            "sglang.max_running",
            max(|x| x.running),
            "requests",
            "largest `#running-req` in the batch lines",
        );
        put(
            &mut out,
            "sglang.max_token_usage",
            max(|x| x.token_usage),
            "fraction",
            "largest `token usage` (KV pool occupancy, 0..1) in the batch lines",
        );
    }
    out
}

/// Most points in one chart series.
const MAX_POINTS: usize = 2_000;

/// Keep at most [`MAX_POINTS`], evenly spaced, first and last included.
fn thin(points: Vec<[f64; 2]>) -> Vec<[f64; 2]> {
    if points.len() <= MAX_POINTS {
        return points;
    }
    let step = (points.len() - 1) as f64 / (MAX_POINTS - 1) as f64;
    (0..MAX_POINTS).map(|i| points[((i as f64 * step).round() as usize).min(points.len() - 1)]).collect()
}

/// Chart data: request-log samples (TTFT, TPOT; from the reservoir, so bounded), the vLLM stats
/// time series, and SGLang's decode batches.
pub fn series(f: &Facts) -> BTreeMap<String, Vec<[f64; 2]>> {
    let mut out = BTreeMap::new();
    let sample = |get: fn(&Row) -> Option<f64>| -> Vec<[f64; 2]> {
        f.requests.sample.iter().filter_map(get).enumerate().map(|(i, v)| [i as f64, round(v, 3)]).collect()
    };
    for (name, get) in [
        ("request_log.ttft_ms", (|r: &Row| r.ttft_ms) as fn(&Row) -> Option<f64>),
        ("request_log.tpot_ms", |r: &Row| r.tpot_ms),
    ] {
        let s = thin(sample(get));
        if !s.is_empty() {
            out.insert(name.to_owned(), s);
        }
    }
    let stats = &f.vllm.stats;
    let t0 = stats.iter().find_map(|s| s.t);
    if let Some(t0) = t0 {
        type Get = fn(&super::parsers::vllm::VllmStat) -> Option<f64>;
        let fields: [(&str, Get); 4] = [
            ("vllm.running", |s| s.running),
            ("vllm.waiting", |s| s.waiting),
            ("vllm.kv_usage_pct", |s| s.kv_usage_pct),
            ("vllm.gen_tps", |s| s.gen_tps),
        ];
        for (name, get) in fields {
            let points: Vec<[f64; 2]> = stats.iter().filter_map(|s| Some([s.t? - t0, get(s)?])).collect();
            if !points.is_empty() {
                out.insert(name.to_owned(), thin(points));
            }
        }
    }
    // SGLang's batch lines: rank 0 only (with data-parallel attention every rank prints its own
    // line; one rank's view is the chart, the rules read them all). Decode lines carry the
    // throughput; both kinds carry running, queue and token usage.
    let batches: Vec<&super::parsers::sglang::SglangBatch> = f
        .sglang
        .batches
        .iter()
        .filter(|b| b.dp_rank.unwrap_or(0) == 0 && b.tp_rank.unwrap_or(0) == 0)
        .collect();
    if let Some(t0) = batches.iter().find_map(|b| b.t) {
        type Get = fn(&super::parsers::sglang::SglangBatch) -> Option<f64>;
        let fields: [(&str, Get); 4] = [
            ("sglang.running", |b| b.running),
            ("sglang.queue", |b| b.queue),
            ("sglang.token_usage_pct", |b| b.token_usage.map(|u| round(u * 100.0, 3))),
            ("sglang.gen_tps", |b| if b.prefill { None } else { b.gen_tps }),
        ];
        for (name, get) in fields {
            let points: Vec<[f64; 2]> = batches.iter().filter_map(|b| Some([b.t? - t0, get(b)?])).collect();
            if !points.is_empty() {
                out.insert(name.to_owned(), thin(points));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::analyze::Analyzer;

    #[test]
    fn sglang_batch_lines_become_time_series() {
        let mut a = Analyzer::new();
        a.begin("server.log");
        a.feed(include_bytes!("../../../../tests/data/sglang/server.log"));
        a.end();
        let r = a.finish();
        for name in ["sglang.running", "sglang.queue", "sglang.token_usage_pct", "sglang.gen_tps"] {
            let s = r.series.get(name).unwrap_or_else(|| panic!("no {name} in {:?}", r.series.keys()));
            assert!(s.len() >= 2, "{name}: {s:?}");
            assert!(s[0][0] >= 0.0, "{name}: x counts from the first batch line");
            assert!(s.windows(2).all(|w| w[0][0] <= w[1][0]), "{name} in time order");
        }
        assert_eq!(r.series["sglang.running"][0][0], 0.0);
        let usage = &r.series["sglang.token_usage_pct"];
        assert!(usage.iter().all(|p| (0.0..=100.0).contains(&p[1])), "{usage:?}");
        assert!(!r.series.contains_key("vllm.running"));
    }
}
