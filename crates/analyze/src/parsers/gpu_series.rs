//! GPU recordings: the runner's NVML JSON lines (`triage-runner record`; one `{"meta": …}`
//! line, then one object per GPU per tick), read one line at a time into
//! [`triage_gpu::recording::Recording`] — the same GPU rules `triage-runner replay` runs, over
//! the whole recording, in bounded memory.

use super::{Cx, SectionParser};
pub use crate::facts::gpu_series::{GpuSeriesFacts, SeriesSource};
use crate::kind::is_recording_line;
use triage_gpu::WatchConfig;
use triage_gpu::recording::Recording;
use triage_gpu::series::Meta;

/// The fewest ticks of an nvidia-smi or DCGM series judged as a recording: the GPU rules need a
/// condition to hold over [`triage_gpu::WatchConfig::sustain_s`] (2 s), three ticks at 1 Hz.
pub const MIN_SERIES_TICKS: u64 = 3;

/// Seconds between ticks assumed when a series carries no timestamps: `nvidia-smi -l 1` and
/// dmon's default interval, and how people paste repeated scrapes.
pub const ASSUMED_INTERVAL_S: f64 = 1.0;

/// The time of each tick of a series whose ticks may lack one: its own when it has one and it
/// moved on, else [`ASSUMED_INTERVAL_S`] after the tick before (and the series says so).
#[derive(Debug, Default)]
pub(crate) struct TickClock {
    last: Option<f64>,
    /// Whether any tick's time was assumed.
    pub(crate) assumed: bool,
}

impl TickClock {
    /// The next tick's time, given its own when it has one.
    pub(crate) fn next(&mut self, own: Option<f64>) -> f64 {
        let t = match (own.filter(|t| t.is_finite()), self.last) {
            (Some(t), None) => t,
            (Some(t), Some(last)) if t > last => t,
            (_, last) => {
                self.assumed = true;
                last.map_or(0.0, |l| l + ASSUMED_INTERVAL_S)
            }
        };
        self.last = Some(t);
        t
    }

    /// The interval assumed, when one was.
    pub(crate) fn assumed_interval_s(&self) -> Option<f64> {
        self.assumed.then_some(ASSUMED_INTERVAL_S)
    }
}

/// Reads one section of NVML JSON lines.
pub struct GpuSeriesParser {
    recording: Recording,
    meta: Option<Meta>,
    samples: u64,
}

impl Default for GpuSeriesParser {
    fn default() -> GpuSeriesParser {
        GpuSeriesParser { recording: Recording::new(WatchConfig::default()), meta: None, samples: 0 }
    }
}

#[derive(serde::Deserialize)]
struct MetaLine {
    meta: Meta,
}

/// A sample line as the runner writes it: an object whose first field is `t`, with a `gpu`
/// (what [`crate::Analyzer`] hands an open recording without the signal scan).
pub(crate) fn is_sample_line(t: &str) -> bool {
    // `gpu` is the second field, within the first 64 bytes (a `t` is at most ~25 of them).
    let head = t.as_bytes().get(..64).unwrap_or(t.as_bytes());
    t.starts_with("{\"t\": ") && t.ends_with('}') && head.windows(7).any(|w| w == b"\"gpu\": ")
}

impl SectionParser for GpuSeriesParser {
    fn continues(&self, line: &str, _bare: &str, _vllm_needles: u64) -> bool {
        is_recording_line(line.trim())
    }

    fn line(&mut self, cx: &mut Cx<'_>, no: usize, line: &str) {
        let t = line.trim();
        if t.is_empty() {
            return;
        }
        // serde's message can quote the line's own values: redacted, then cut, like any quote.
        let why = |e: serde_json::Error| crate::text::quote_redacted(&e.to_string());
        if t.starts_with("{\"meta\"") {
            match serde_json::from_str::<MetaLine>(t) {
                Ok(m) => self.meta = Some(m.meta),
                Err(e) => {
                    let e = why(e);
                    cx.issue_in(
                        no,
                        format!("a recording's meta line that could not be read: {e}"),
                        format!("无法读取的录制元数据行：{e}"),
                    )
                }
            }
            return;
        }
        match triage_gpu::line::parse_sample(t) {
            Ok(s) if s.t.is_finite() => {
                self.samples += 1;
                self.recording.push(s, no);
            }
            Ok(_) => cx.issue_in(no, "sample time `t` is not a finite number", "样本时间 `t` 不是有限数"),
            Err(e) => {
                let e = why(e);
                cx.issue_in(no, format!("not an NVML sample: {e}"), format!("不是 NVML 样本：{e}"))
            }
        }
    }

    fn finish(self: Box<Self>, cx: &mut Cx<'_>) {
        let GpuSeriesParser { recording, meta, samples } = *self;
        if samples == 0 {
            return;
        }
        cx.facts.gpu_series.push(GpuSeriesFacts {
            input: cx.input.clone(),
            source: SeriesSource::Nvml,
            assumed_interval_s: None,
            meta,
            finished: recording.finish(),
            samples,
        });
    }
}
