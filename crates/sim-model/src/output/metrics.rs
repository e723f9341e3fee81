//! vLLM's Prometheus `/metrics`: the V1 metric names, help texts, label sets and histogram
//! buckets, rendered as `prometheus_client` writes them (text format 0.0.4).
//!
//! The buckets are vLLM's, on purpose: its inter-token histogram has nothing under 10 ms and its
//! request-phase histograms nothing under 300 ms, and the analyzer must cope with exactly that.

use std::fmt::Write;

pub const TTFT_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
    80.0, 160.0, 640.0, 2560.0,
];
pub const ITL_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
];
pub const REQUEST_BUCKETS: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
    960.0, 1920.0, 7680.0,
];
pub const TOKEN_BUCKETS: &[f64] = &[
    1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0, 10000.0, 20000.0, 50000.0,
    100000.0, 200000.0,
];

/// A cumulative-on-render histogram.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    bounds: &'static [f64],
    /// Per bucket (not cumulative), the last one is +Inf.
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Histogram {
        Histogram { bounds, counts: vec![0; bounds.len() + 1], sum: 0.0, count: 0 }
    }

    pub fn observe(&mut self, v: f64) {
        let i = self.bounds.partition_point(|b| *b < v);
        self.counts[i] += 1;
        self.sum += v;
        self.count += 1;
    }

    pub fn count(&self) -> u64 {
        self.count
    }
}

/// Every figure the simulated engine exports.
#[derive(Clone, Debug, PartialEq)]
pub struct Metrics {
    pub running: u32,
    pub waiting: u32,
    /// 0..1.
    pub kv_usage: f64,
    pub preemptions: u64,
    pub prompt_tokens: u64,
    pub generation_tokens: u64,
    pub success_stop: u64,
    pub success_length: u64,
    pub success_abort: u64,
    pub ttft: Histogram,
    pub itl: Histogram,
    pub e2e: Histogram,
    pub queue: Histogram,
    pub inference: Histogram,
    pub prefill: Histogram,
    pub decode: Histogram,
    pub prompt_len: Histogram,
    pub generation_len: Histogram,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            running: 0,
            waiting: 0,
            kv_usage: 0.0,
            preemptions: 0,
            prompt_tokens: 0,
            generation_tokens: 0,
            success_stop: 0,
            success_length: 0,
            success_abort: 0,
            ttft: Histogram::new(TTFT_BUCKETS),
            itl: Histogram::new(ITL_BUCKETS),
            e2e: Histogram::new(REQUEST_BUCKETS),
            queue: Histogram::new(REQUEST_BUCKETS),
            inference: Histogram::new(REQUEST_BUCKETS),
            prefill: Histogram::new(REQUEST_BUCKETS),
            decode: Histogram::new(REQUEST_BUCKETS),
            prompt_len: Histogram::new(TOKEN_BUCKETS),
            generation_len: Histogram::new(TOKEN_BUCKETS),
        }
    }
}

/// A float as Python's `repr` writes it, which is what `prometheus_client` prints: `12.0`,
/// `0.25`, `1e-05`.
pub fn py_float(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    if v.fract() == 0.0 && v.abs() < 1e16 { format!("{v:.1}") } else { format!("{v}") }
}

/// What the `cache_config_info` gauge carries.
#[derive(Clone, Debug, PartialEq)]
pub struct CacheInfo {
    pub block_size: u32,
    pub num_gpu_blocks: u32,
    pub gpu_memory_utilization: f64,
}

impl Metrics {
    /// One scrape, as `GET /metrics` returns it.
    pub fn render(&self, model: &str, cache: &CacheInfo) -> String {
        let labels = format!("engine=\"0\",model_name=\"{model}\"");
        let mut s = String::with_capacity(16 * 1024);
        let head = |s: &mut String, name: &str, kind: &str, help: &str| {
            let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} {kind}");
        };
        head(&mut s, "vllm:num_requests_running", "gauge", "Number of requests in model execution batches.");
        let _ = writeln!(s, "vllm:num_requests_running{{{labels}}} {}", py_float(f64::from(self.running)));
        head(&mut s, "vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.");
        let _ = writeln!(s, "vllm:num_requests_waiting{{{labels}}} {}", py_float(f64::from(self.waiting)));
        head(&mut s, "vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.");
        let usage = (self.kv_usage * 1e6).round() / 1e6;
        let _ = writeln!(s, "vllm:kv_cache_usage_perc{{{labels}}} {}", py_float(usage));
        head(
            &mut s,
            "vllm:num_preemptions_total",
            "counter",
            "Cumulative number of preemption from the engine.",
        );
        let _ = writeln!(s, "vllm:num_preemptions_total{{{labels}}} {}", py_float(self.preemptions as f64));
        head(&mut s, "vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.");
        let _ = writeln!(s, "vllm:prompt_tokens_total{{{labels}}} {}", py_float(self.prompt_tokens as f64));
        head(&mut s, "vllm:generation_tokens_total", "counter", "Number of generation tokens processed.");
        let _ = writeln!(
            s,
            "vllm:generation_tokens_total{{{labels}}} {}",
            py_float(self.generation_tokens as f64)
        );
        head(&mut s, "vllm:request_success_total", "counter", "Count of successfully processed requests.");
        for (reason, n) in
            [("abort", self.success_abort), ("length", self.success_length), ("stop", self.success_stop)]
        {
            let _ = writeln!(
                s,
                "vllm:request_success_total{{engine=\"0\",finished_reason=\"{reason}\",model_name=\"{model}\"}} {}",
                py_float(n as f64)
            );
        }
        let hists: [(&str, &str, &Histogram); 9] = [
            ("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", &self.ttft),
            ("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", &self.itl),
            ("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", &self.e2e),
            (
                "vllm:request_queue_time_seconds",
                "Histogram of time spent in WAITING phase for request.",
                &self.queue,
            ),
            (
                "vllm:request_inference_time_seconds",
                "Histogram of time spent in RUNNING phase for request.",
                &self.inference,
            ),
            (
                "vllm:request_prefill_time_seconds",
                "Histogram of time spent in PREFILL phase for request.",
                &self.prefill,
            ),
            (
                "vllm:request_decode_time_seconds",
                "Histogram of time spent in DECODE phase for request.",
                &self.decode,
            ),
            ("vllm:request_prompt_tokens", "Number of prefill tokens processed.", &self.prompt_len),
            (
                "vllm:request_generation_tokens",
                "Number of generation tokens processed.",
                &self.generation_len,
            ),
        ];
        for (name, help, h) in hists {
            head(&mut s, name, "histogram", help);
            let mut cumulative = 0;
            for (i, n) in h.counts.iter().enumerate() {
                cumulative += n;
                let le = h.bounds.get(i).map_or_else(|| "+Inf".to_owned(), |b| py_float(*b));
                let _ = writeln!(s, "{name}_bucket{{{labels},le=\"{le}\"}} {}", py_float(cumulative as f64));
            }
            let _ = writeln!(s, "{name}_count{{{labels}}} {}", py_float(h.count as f64));
            let _ = writeln!(s, "{name}_sum{{{labels}}} {}", py_float((h.sum * 1e6).round() / 1e6));
        }
        head(&mut s, "vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig");
        let _ = writeln!(
            s,
            "vllm:cache_config_info{{block_size=\"{}\",cache_dtype=\"auto\",enable_prefix_caching=\"False\",engine=\"0\",gpu_memory_utilization=\"{}\",num_gpu_blocks=\"{}\"}} 1.0",
            cache.block_size,
            py_float(cache.gpu_memory_utilization),
            cache.num_gpu_blocks
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_python() {
        assert_eq!(py_float(12.0), "12.0");
        assert_eq!(py_float(0.25), "0.25");
        assert_eq!(py_float(0.001), "0.001");
        assert_eq!(py_float(f64::INFINITY), "+Inf");
    }

    #[test]
    fn buckets_are_cumulative_and_parse() {
        let mut m = Metrics::default();
        for v in [0.004, 0.05, 0.3, 700.0] {
            m.ttft.observe(v);
        }
        m.running = 3;
        let text =
            m.render("m", &CacheInfo { block_size: 16, num_gpu_blocks: 100, gpu_memory_utilization: 0.9 });
        assert!(text.contains(
            "vllm:time_to_first_token_seconds_bucket{engine=\"0\",model_name=\"m\",le=\"0.005\"} 1.0"
        ));
        assert!(text.contains("le=\"0.5\"} 3.0"));
        assert!(text.contains("le=\"+Inf\"} 4.0"));
        assert!(text.contains("vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"m\"} 4.0"));
        let report = triage_core::analyze::analyze(&[("metrics.txt", &text)]);
        assert_eq!(report.inputs[0].kind.as_str(), "prom_metrics");
        assert!(report.inputs[0].issues.is_empty(), "{:?}", report.inputs[0].issues);
    }
}
