//! Everything the simulated service leaves behind, produced as strings from the one timeline:
//! the vLLM log, `/metrics` scrapes, the per-request four-timestamp log, GPU telemetry and the
//! client's configuration. Pure: the hosts decide where the strings go (files, HTTP, the page).

pub mod client;
pub mod clock;
pub mod gpu;
pub mod metrics;
pub mod openmetrics;
pub mod vllm_log;

use clock::unix_s;
use gpu::{GpuSetup, Tick};
use metrics::{CacheInfo, Metrics};
use serde::Serialize;
use std::fmt::Write;

/// One output file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Artifact {
    pub name: String,
    /// What it is, for listings (`vLLM server log`, …).
    pub what: String,
    /// Whether `triage analyze` reads this format (it does not read NVML series).
    pub analyzable: bool,
    pub content: String,
}

impl Artifact {
    fn new(name: &str, what: &str, content: String) -> Artifact {
        Artifact { name: name.into(), what: what.into(), analyzable: true, content }
    }

    /// What it is, in `lang` (`what` is the English).
    pub fn what_in(&self, lang: triage_core::lang::Lang) -> &str {
        if lang == triage_core::lang::Lang::En {
            return &self.what;
        }
        match self.what.as_str() {
            "vLLM server log (V1)" => "vLLM 服务日志（V1）",
            "two /metrics scrapes, 30 s apart, ending now" => "两次 /metrics 抓取，间隔 30 s，截至此刻",
            "per-request log: enqueue, scheduled, first token, last token, finish" => {
                "逐请求日志：入队、调度、首 token、末 token、结束"
            }
            "nvidia-smi --query-gpu … --format=csv -l 1" => {
                "nvidia-smi --query-gpu … --format=csv -l 1 的输出"
            }
            "NVML samples, one a second (the format triage-runner record writes)" => {
                "NVML 采样，每秒一次（格式同 triage-runner record 的输出）"
            }
            "the client's configuration" => "客户端的配置",
            other => other,
        }
    }
}

/// One row of the request log: the four timestamps the article asks every serving layer to
/// keep (enqueue, first token, last token, finish), plus when the engine first scheduled the
/// request, so queueing and prefill can be told apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RequestRow<'a> {
    pub id: &'a str,
    pub enqueue_ns: u64,
    pub scheduled_ns: Option<u64>,
    pub first_token_ns: Option<u64>,
    pub last_token_ns: Option<u64>,
    pub finish_ns: u64,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
    /// `200`, `400`, `429`, `500`, or `client_timeout` when the client gave up first.
    pub status: &'a str,
    pub finish_reason: &'a str,
    pub attempt: u32,
}

fn opt_time(out: &mut String, key: &str, t: Option<u64>) {
    match t {
        Some(t) => {
            let _ = write!(out, ",\"{key}\":{:.6}", unix_s(t));
        }
        None => {
            let _ = write!(out, ",\"{key}\":null");
        }
    }
}

impl RequestRow<'_> {
    /// One JSON line, unix seconds with µs precision.
    pub fn write(&self, out: &mut String) {
        let _ =
            write!(out, "{{\"request_id\":\"{}\",\"enqueue_time\":{:.6}", self.id, unix_s(self.enqueue_ns));
        opt_time(out, "scheduled_time", self.scheduled_ns);
        opt_time(out, "first_token_time", self.first_token_ns);
        opt_time(out, "last_token_time", self.last_token_ns);
        let _ = writeln!(
            out,
            ",\"finish_time\":{:.6},\"prompt_tokens\":{},\"output_tokens\":{},\"status\":\"{}\",\"finish_reason\":\"{}\",\"attempt\":{}}}",
            unix_s(self.finish_ns),
            self.prompt_tokens,
            self.output_tokens,
            self.status,
            self.finish_reason,
            self.attempt
        );
    }
}

/// Metrics snapshots are kept this often (a Prometheus scrape interval).
pub const SCRAPE_EVERY_NS: u64 = 15_000_000_000;
/// `metrics.txt` holds the scrape this long before the end and the one at the end.
pub const SCRAPE_WINDOW_NS: u64 = 30_000_000_000;
const KEEP_SCRAPES: usize = 8;

/// Collects the outputs as the simulation runs.
#[derive(Clone, Debug)]
pub struct Recorder {
    pub model: String,
    pub cache: CacheInfo,
    pub log: String,
    pub requests: String,
    pub metrics: Metrics,
    scrapes: Vec<(u64, Metrics)>,
    pub gpus: Option<GpuSetup>,
    pub ticks: Vec<Tick>,
    /// Busy nanoseconds per simulated second (only with GPUs).
    busy_ns: Vec<u64>,
    pub client: Option<client::ClientFile>,
}

impl Recorder {
    pub fn new(
        model: String,
        cache: CacheInfo,
        gpus: Option<GpuSetup>,
        client: Option<client::ClientFile>,
    ) -> Recorder {
        Recorder {
            model,
            cache,
            log: String::new(),
            requests: String::new(),
            metrics: Metrics::default(),
            scrapes: Vec::new(),
            gpus,
            ticks: Vec::new(),
            busy_ns: Vec::new(),
            client,
        }
    }

    /// The engine executed a step over `[start, end)`.
    pub fn busy(&mut self, start: u64, end: u64) {
        if self.gpus.is_none() {
            return;
        }
        let mut t = start;
        while t < end {
            let sec = (t / 1_000_000_000) as usize;
            let sec_end = (sec as u64 + 1) * 1_000_000_000;
            let upto = end.min(sec_end);
            if self.busy_ns.len() <= sec {
                self.busy_ns.resize(sec + 1, 0);
            }
            self.busy_ns[sec] += upto - t;
            t = upto;
        }
    }

    /// Close the second that ends at `t_ns` into a GPU sample.
    pub fn gpu_tick(&mut self, t_ns: u64) {
        let sec = (t_ns / 1_000_000_000).saturating_sub(1) as usize;
        let busy = self.busy_ns.get(sec).copied().unwrap_or(0) as f64 / 1e9;
        self.ticks.push(Tick { t_ns, busy: busy.min(1.0) });
    }

    pub fn snapshot(&mut self, t_ns: u64) {
        self.scrapes.push((t_ns, self.metrics.clone()));
        if self.scrapes.len() > KEEP_SCRAPES {
            self.scrapes.remove(0);
        }
    }

    /// The files as of `now_ns`; `current` is the metrics state at that moment.
    pub fn artifacts(&self, now_ns: u64, current: &Metrics) -> Vec<Artifact> {
        let mut out = vec![
            Artifact::new("vllm.log", "vLLM server log (V1)", self.log.clone()),
            Artifact::new(
                "metrics.txt",
                "two /metrics scrapes, 30 s apart, ending now",
                self.metrics_window(now_ns, current),
            ),
            Artifact::new(
                "requests.jsonl",
                "per-request log: enqueue, scheduled, first token, last token, finish",
                self.requests.clone(),
            ),
        ];
        if let Some(g) = &self.gpus {
            out.push(Artifact::new(
                "nvidia-smi.csv",
                "nvidia-smi --query-gpu … --format=csv -l 1",
                g.smi_csv(&self.ticks),
            ));
            out.push(Artifact {
                analyzable: false,
                ..Artifact::new(
                    "nvml.jsonl",
                    "NVML samples, one a second (the format triage-runner record writes)",
                    g.nvml_jsonl(&self.ticks),
                )
            });
        }
        if let Some(c) = &self.client {
            out.push(Artifact::new(c.file_name(), "the client's configuration", c.render()));
        }
        out
    }

    /// The scrape `SCRAPE_WINDOW_NS` before `now` (or the oldest kept), then the current one.
    fn metrics_window(&self, now_ns: u64, current: &Metrics) -> String {
        let want = now_ns.saturating_sub(SCRAPE_WINDOW_NS);
        let earlier = self
            .scrapes
            .iter()
            .rev()
            .find(|(t, _)| *t <= want)
            .or_else(|| self.scrapes.first())
            .filter(|(t, _)| *t < now_ns);
        let mut s = String::new();
        if let Some((_, m)) = earlier {
            s.push_str(&m.render(&self.model, &self.cache));
        }
        s.push_str(&current.render(&self.model, &self.cache));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_rows_parse_as_a_request_log() {
        let mut s = String::new();
        for i in 0..20u64 {
            RequestRow {
                id: &format!("chatcmpl-{i}"),
                enqueue_ns: i * 1_000_000_000,
                scheduled_ns: Some(i * 1_000_000_000 + 10_000_000),
                first_token_ns: Some(i * 1_000_000_000 + 90_000_000),
                last_token_ns: Some(i * 1_000_000_000 + 900_000_000),
                finish_ns: i * 1_000_000_000 + 900_000_000,
                prompt_tokens: 100,
                output_tokens: 12,
                status: "200",
                finish_reason: "stop",
                attempt: 1,
            }
            .write(&mut s);
        }
        let report = triage_core::analyze::analyze(&[("requests.jsonl", &s)]);
        assert_eq!(report.inputs[0].kind.as_str(), "request_log");
        let ttft = &report.figures["request_log.ttft_ms"].value;
        assert!((ttft["p50"].as_f64().unwrap() - 90.0).abs() < 1.0, "{ttft}");
        assert_eq!(report.verdict.as_str(), "HEALTHY", "{:#?}", report.findings);
    }

    #[test]
    fn busy_time_is_split_across_seconds() {
        let g = GpuSetup { count: 1, slow: None, mem_total_mib: 1, mem_used_mib: 1 };
        let mut r = Recorder::new(
            "m".into(),
            CacheInfo { block_size: 16, num_gpu_blocks: 1, gpu_memory_utilization: 0.9 },
            Some(g),
            None,
        );
        r.busy(500_000_000, 1_250_000_000);
        r.gpu_tick(1_000_000_000);
        r.gpu_tick(2_000_000_000);
        assert_eq!(r.ticks[0].busy, 0.5);
        assert_eq!(r.ticks[1].busy, 0.25);
    }
}
