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

/// What kind of metric a family is, as both exposition formats name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    /// Samples end in `_total`; text format 0.0.4 names the family with the suffix, OpenMetrics
    /// without it.
    Counter,
    /// Samples end in `_bucket` (cumulative, `le` last), `_count` and `_sum`.
    Histogram,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
            Kind::Histogram => "histogram",
        }
    }
}

/// One sample of a family: the suffix after the family name (`_total`, `_bucket`, `""`), its
/// labels in the order they are printed, and its value.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub suffix: &'static str,
    pub labels: Vec<(&'static str, String)>,
    pub value: f64,
}

/// A metric family of one scrape: what both the `/metrics` page and the OpenMetrics time series
/// (`openmetrics.rs`) are written from, so the two cannot disagree on a name or a label.
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    /// Without the counter's `_total`.
    pub name: &'static str,
    pub kind: Kind,
    pub help: &'static str,
    pub points: Vec<Point>,
}

impl Family {
    fn new(name: &'static str, kind: Kind, help: &'static str) -> Family {
        Family { name, kind, help, points: Vec::new() }
    }

    fn one(mut self, suffix: &'static str, labels: Vec<(&'static str, String)>, value: f64) -> Family {
        self.points.push(Point { suffix, labels, value });
        self
    }
}

impl Metrics {
    /// Every family of one scrape, in the order `GET /metrics` prints them.
    pub fn families(&self, model: &str, cache: &CacheInfo) -> Vec<Family> {
        let labels = || vec![("engine", "0".to_owned()), ("model_name", model.to_owned())];
        let mut out = vec![
            Family::new(
                "vllm:num_requests_running",
                Kind::Gauge,
                "Number of requests in model execution batches.",
            )
            .one("", labels(), f64::from(self.running)),
            Family::new(
                "vllm:num_requests_waiting",
                Kind::Gauge,
                "Number of requests waiting to be processed.",
            )
            .one("", labels(), f64::from(self.waiting)),
            Family::new(
                "vllm:kv_cache_usage_perc",
                Kind::Gauge,
                "KV-cache usage. 1 means 100 percent usage.",
            )
            .one("", labels(), (self.kv_usage * 1e6).round() / 1e6),
            Family::new(
                "vllm:num_preemptions",
                Kind::Counter,
                "Cumulative number of preemption from the engine.",
            )
            .one("_total", labels(), self.preemptions as f64),
            Family::new("vllm:prompt_tokens", Kind::Counter, "Number of prefill tokens processed.").one(
                "_total",
                labels(),
                self.prompt_tokens as f64,
            ),
            Family::new("vllm:generation_tokens", Kind::Counter, "Number of generation tokens processed.")
                .one("_total", labels(), self.generation_tokens as f64),
        ];
        let mut success =
            Family::new("vllm:request_success", Kind::Counter, "Count of successfully processed requests.");
        for (reason, n) in
            [("abort", self.success_abort), ("length", self.success_length), ("stop", self.success_stop)]
        {
            let l = vec![
                ("engine", "0".to_owned()),
                ("finished_reason", reason.to_owned()),
                ("model_name", model.to_owned()),
            ];
            success = success.one("_total", l, n as f64);
        }
        out.push(success);
        let hists: [(&'static str, &'static str, &Histogram); 9] = [
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
            let mut f = Family::new(name, Kind::Histogram, help);
            let mut cumulative = 0;
            for (i, n) in h.counts.iter().enumerate() {
                cumulative += n;
                let le = h.bounds.get(i).map_or_else(|| "+Inf".to_owned(), |b| py_float(*b));
                let mut l = labels();
                l.push(("le", le));
                f = f.one("_bucket", l, cumulative as f64);
            }
            f = f.one("_count", labels(), h.count as f64);
            out.push(f.one("_sum", labels(), (h.sum * 1e6).round() / 1e6));
        }
        out.push(
            Family::new("vllm:cache_config_info", Kind::Gauge, "Information of the LLMEngine CacheConfig")
                .one(
                    "",
                    vec![
                        ("block_size", cache.block_size.to_string()),
                        ("cache_dtype", "auto".to_owned()),
                        ("enable_prefix_caching", "False".to_owned()),
                        ("engine", "0".to_owned()),
                        ("gpu_memory_utilization", py_float(cache.gpu_memory_utilization)),
                        ("num_gpu_blocks", cache.num_gpu_blocks.to_string()),
                    ],
                    1.0,
                ),
        );
        out
    }

    /// One scrape, as `GET /metrics` returns it.
    pub fn render(&self, model: &str, cache: &CacheInfo) -> String {
        let mut s = String::with_capacity(16 * 1024);
        for f in self.families(model, cache) {
            let head = if f.kind == Kind::Counter { format!("{}_total", f.name) } else { f.name.to_owned() };
            let _ = writeln!(s, "# HELP {head} {}\n# TYPE {head} {}", f.help, f.kind.as_str());
            for p in &f.points {
                let _ =
                    writeln!(s, "{}{}{{{}}} {}", f.name, p.suffix, label_text(&p.labels), py_float(p.value));
            }
        }
        s
    }
}

/// `a="x",b="y"`, values escaped as the exposition formats escape them.
pub fn label_text(labels: &[(&str, String)]) -> String {
    let mut s = String::new();
    for (i, (k, v)) in labels.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let v = v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
        let _ = write!(s, "{k}=\"{v}\"");
    }
    s
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
