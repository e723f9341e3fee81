//! The kind of an input section, as `triage.report/v1` names it (the analyzer's recogniser
//! decides which kind a line is).

use serde::{Deserialize, Serialize};

/// The kind of an input section. Serialised names are part of `triage.report/v1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputKind {
    /// Per-request records (JSON lines or CSV with enqueue, scheduled and first-token times).
    RequestLog,
    /// A vLLM server log.
    VllmLog,
    /// An SGLang server log.
    SglangLog,
    /// A Text Generation Inference (router or launcher) log.
    TgiLog,
    /// Prometheus text exposition (`/metrics` scrapes).
    PromMetrics,
    /// nvidia-smi output, in any of its forms.
    NvidiaSmi,
    /// A GPU recording over time: the runner's NVML JSON lines (`triage-runner record`).
    GpuSeries,
    /// A CUDA or PyTorch out-of-memory trace.
    OomTrace,
    /// A client's settings (JSON, TOML or shell exports).
    ClientConfig,
    /// A benchmark's output (vllm bench, aiperf, guidellm, …).
    BenchOutput,
    /// A captured SSE response body.
    SseStream,
    /// Nothing recognised as a whole (engine lines in it are still read one by one).
    Unknown,
}

impl InputKind {
    /// The serialised name (`vllm_log`, …), as in `triage.report/v1`.
    pub fn as_str(self) -> &'static str {
        match self {
            InputKind::RequestLog => "request_log",
            InputKind::VllmLog => "vllm_log",
            InputKind::SglangLog => "sglang_log",
            InputKind::TgiLog => "tgi_log",
            InputKind::PromMetrics => "prom_metrics",
            InputKind::NvidiaSmi => "nvidia_smi",
            InputKind::GpuSeries => "gpu_series",
            InputKind::OomTrace => "oom_trace",
            InputKind::ClientConfig => "client_config",
            InputKind::BenchOutput => "bench_output",
            InputKind::SseStream => "sse_stream",
            InputKind::Unknown => "unknown",
        }
    }
}
