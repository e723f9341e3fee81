//! vLLM's `vllm bench serve` (and `benchmark_serving.py`), SGLang's `bench_serving` and
//! trtllm-bench: the console result block (`Mean TTFT (ms):     23.77`, `[TTFT] P99 : …`) and
//! the flat keys of vLLM's saved JSON (`mean_ttft_ms`, `p99_e2el_ms`).

use super::{stat_name, unit_ms};

/// `label:   value` with a number as the whole value.
pub(super) fn console_pair(t: &str) -> Option<(&str, f64)> {
    let colon = t.rfind(':')?;
    let (label, value) = (t[..colon].trim(), t[colon + 1..].trim());
    if label.is_empty() {
        return None;
    }
    let v: f64 = value.replace(',', "").parse().ok()?;
    Some((label, v))
}

/// `Label (unit):   value` where the value is a word or two (`Backend: sglang`, `Max request
/// concurrency: not set`): the shape of every line inside a result block.
pub(super) fn console_label(t: &str) -> bool {
    let Some(colon) = t.find(':') else { return false };
    let (label, value) = (&t[..colon], t[colon + 1..].trim());
    !label.is_empty()
        && label.len() <= 60
        && label.starts_with(|c: char| c.is_ascii_alphabetic())
        && label.chars().all(|c| c.is_ascii_alphanumeric() || " ()/.-_".contains(c))
        && !value.is_empty()
        && value.split_whitespace().count() <= 2
}

/// The canonical figure for a console label, and the factor to its unit.
pub(super) fn console_figure(label: &str) -> Option<(String, f64)> {
    let l = label.to_ascii_lowercase();
    let plain = match l.as_str() {
        "successful requests" => "completed",
        "failed requests" => "failed",
        "benchmark duration (s)" => "duration_s",
        "total input tokens" => "total_input_tokens",
        "total generated tokens" => "total_output_tokens",
        "request throughput (req/s)" | "request throughput (req/sec)" => "request_throughput",
        "request goodput (req/s)" => "request_goodput",
        "output token throughput (tok/s)" => "output_throughput",
        "input token throughput (tok/s)" => "input_throughput",
        "total token throughput (tok/s)" => "total_token_throughput",
        "peak output token throughput (tok/s)" => "peak_output_throughput",
        "peak concurrent requests" => "peak_concurrency",
        "maximum request concurrency" | "max request concurrency" => "max_concurrency",
        "concurrency" => "concurrency.mean",
        "request rate configured (rps)" | "traffic request rate" | "request rate" => "request_rate",
        _ => "",
    };
    if !plain.is_empty() {
        return Some((plain.to_owned(), 1.0));
    }
    // trtllm-bench's breakdowns: `[TTFT] P99    : 6120.4410`, in milliseconds.
    if let Some(rest) = l.strip_prefix('[')
        && let Some((metric, stat)) = rest.split_once(']')
    {
        let metric = match metric {
            "ttft" => "ttft_ms",
            "tpot" => "tpot_ms",
            "latency" => "e2e_ms",
            _ => return None,
        };
        return Some((format!("{metric}.{}", stat_name(stat)?), 1.0));
    }
    // `<stat> <metric> (<unit>)`
    let (head, unit) = match l.rfind('(') {
        Some(i) => (l[..i].trim(), l[i + 1..].trim_end_matches(')')),
        None => (l.as_str(), "ms"),
    };
    let scale = unit_ms(unit)?;
    let (stat, metric) = head.split_once(' ')?;
    let metric = match metric.trim() {
        "ttft" => "ttft_ms",
        "tpot" => "tpot_ms",
        "itl" => "itl_ms",
        "e2el" | "e2e latency" | "e2e" => "e2e_ms",
        _ => return None,
    };
    Some((format!("{metric}.{}", stat_name(stat)?), scale))
}

/// `mean_ttft_ms`, `p99_e2el_ms`, `median_e2e_latency_ms` → `ttft_ms.mean` …
pub(super) fn vllm_json_key(k: &str) -> Option<String> {
    let body = k.strip_suffix("_ms")?;
    let (stat, metric) = body.split_once('_')?;
    let metric = match metric {
        "ttft" => "ttft_ms",
        "tpot" => "tpot_ms",
        "itl" => "itl_ms",
        "e2el" | "e2e_latency" => "e2e_ms",
        _ => return None,
    };
    Some(format!("{metric}.{}", stat_name(stat)?))
}
