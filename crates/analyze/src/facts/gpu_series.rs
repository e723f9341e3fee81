//! A GPU recording over time, judged by the GPU rules (written by `parsers/gpu_series.rs`,
//! `parsers/nvidia_smi/series.rs` and `parsers/dcgm.rs`).

use triage_gpu::recording::Finished;
use triage_gpu::series::Meta;

/// What a GPU recording was read from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SeriesSource {
    /// The runner's NVML JSON lines (`triage-runner record`).
    #[default]
    Nvml,
    /// `nvidia-smi --query-gpu … --format=csv -l N`.
    SmiCsv,
    /// `nvidia-smi dmon`.
    SmiDmon,
    /// dcgm-exporter scrapes, one after another.
    Dcgm,
}

impl SeriesSource {
    /// How a reader names it.
    pub fn describe(self) -> &'static str {
        match self {
            SeriesSource::Nvml => "NVML recording",
            SeriesSource::SmiCsv => "nvidia-smi --query-gpu series",
            SeriesSource::SmiDmon => "nvidia-smi dmon series",
            SeriesSource::Dcgm => "dcgm-exporter scrapes",
        }
    }
}

/// One recording read from an input.
#[derive(Clone, Debug)]
pub struct GpuSeriesFacts {
    /// The input it was read from.
    pub input: std::sync::Arc<str>,
    /// What it was read from.
    pub source: SeriesSource,
    /// Some ticks had no time of their own and were placed this many seconds after the one
    /// before ([`ASSUMED_INTERVAL_S`](crate::parsers::gpu_series::ASSUMED_INTERVAL_S)).
    pub assumed_interval_s: Option<f64>,
    /// The meta line, when there was one (driver, GPU names and UUIDs).
    pub meta: Option<Meta>,
    /// What the GPU rules found over it.
    pub finished: Finished,
    /// Samples read.
    pub samples: u64,
}
