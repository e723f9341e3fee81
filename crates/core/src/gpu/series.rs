//! The NVML JSON-lines series (`shared/data/h200/nvml_series.jsonl`): an optional first line
//! `{"meta": {"driver", "nvml", "gpus": [{index, name, uuid}]}}`, then one [`GpuSample`] per GPU
//! per tick. `triage-runner record` writes it, `triage-runner replay` reads it.
//!
//! Reading never fails as a whole: a line that is not a sample becomes an [`Issue`] with its
//! line number and the rest is read.

use super::sample::GpuSample;
use crate::analyze::report::Issue;
use serde::{Deserialize, Serialize};

/// The series' first line.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// NVIDIA driver version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// NVML library version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvml: Option<String>,
    /// The GPUs the series covers.
    #[serde(default)]
    pub gpus: Vec<MetaGpu>,
}

/// One GPU named in a series' first line.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MetaGpu {
    /// NVML device index.
    pub index: u32,
    /// Product name (`NVIDIA H200`).
    #[serde(default)]
    pub name: String,
    /// NVML device UUID.
    #[serde(default)]
    pub uuid: String,
}

#[derive(Serialize, Deserialize)]
struct MetaLine {
    meta: Meta,
}

/// A whole series, grouped into ticks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// The first line's metadata, when it has one.
    pub meta: Option<Meta>,
    /// Samples of one moment, one per GPU, in time order.
    pub ticks: Vec<Vec<GpuSample>>,
    /// Lines that could not be read, with their line numbers.
    pub issues: Vec<Issue>,
}

/// Most issues kept; past it they are counted in one last issue.
const MAX_ISSUES: usize = 100;

impl Series {
    /// Read a series. Samples are grouped into ticks: a tick ends when a GPU index repeats or
    /// the time moves on by more than `tick_gap_s` (default: half the smallest step seen is not
    /// known up front, so a fixed 50 ms, well below any NVML sampling period in use).
    pub fn parse(text: &str) -> Series {
        let mut out = Series::default();
        let mut current: Vec<GpuSample> = Vec::new();
        // The GPUs of the tick being read: a repeat starts the next tick. A set, not a search
        // of `current`, so reading a tick is linear in its GPUs (it was quadratic).
        let mut in_tick: std::collections::BTreeSet<u32> = std::collections::BTreeSet::new();
        let mut dropped = 0usize;
        for (i, line) in text.lines().enumerate() {
            let no = i + 1;
            let t = line.trim();
            if t.is_empty() {
                continue;
            }
            if t.starts_with("{\"meta\"")
                || (out.meta.is_none()
                    && out.ticks.is_empty()
                    && current.is_empty()
                    && t.contains("\"meta\""))
            {
                match serde_json::from_str::<MetaLine>(t) {
                    Ok(m) => out.meta = Some(m.meta),
                    Err(e) => push_issue(&mut out.issues, &mut dropped, no, format!("meta line: {e}")),
                }
                continue;
            }
            let sample = match serde_json::from_str::<GpuSample>(t) {
                Ok(s) if s.t.is_finite() => s,
                Ok(_) => {
                    push_issue(
                        &mut out.issues,
                        &mut dropped,
                        no,
                        "sample time `t` is not a finite number".into(),
                    );
                    continue;
                }
                Err(e) => {
                    push_issue(&mut out.issues, &mut dropped, no, format!("not an NVML sample: {e}"));
                    continue;
                }
            };
            let new_tick = in_tick.contains(&sample.gpu)
                || current.first().is_some_and(|first| (sample.t - first.t).abs() > TICK_GAP_S);
            if new_tick {
                out.ticks.push(std::mem::take(&mut current));
                in_tick.clear();
            }
            in_tick.insert(sample.gpu);
            current.push(sample);
        }
        if !current.is_empty() {
            out.ticks.push(current);
        }
        if dropped > 0 {
            out.issues.push(Issue { line: 0, message: format!("{dropped} more lines could not be read") });
        }
        out
    }

    /// Number of GPUs: the meta's, else the most seen in one tick.
    pub fn gpu_count(&self) -> usize {
        let seen = self.ticks.iter().map(Vec::len).max().unwrap_or(0);
        self.meta.as_ref().map_or(seen, |m| m.gpus.len().max(seen))
    }

    /// The UUID of GPU `index` from the meta line, when it has one.
    pub fn uuid(&self, index: u32) -> Option<&str> {
        self.meta.as_ref()?.gpus.iter().find(|g| g.index == index).map(|g| g.uuid.as_str())
    }
}

/// Samples this close in time belong to one tick.
pub const TICK_GAP_S: f64 = 0.05;

fn push_issue(issues: &mut Vec<Issue>, dropped: &mut usize, line: usize, message: String) {
    if issues.len() < MAX_ISSUES {
        issues.push(Issue { line, message });
    } else {
        *dropped += 1;
    }
}

/// The meta line as written by `triage-runner record`.
pub fn meta_line(meta: &Meta) -> String {
    serde_json::to_string(&MetaLine { meta: meta.clone() }).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_ticks_and_keeps_going_past_bad_lines() {
        let text = r#"{"meta": {"driver": "580", "gpus": [{"index": 0, "name": "H200", "uuid": "GPU-a"}, {"index": 1, "name": "H200", "uuid": "GPU-b"}]}}
{"t": 10.0, "gpu": 0, "sm_clock_mhz": 1980}
{"t": 10.001, "gpu": 1, "sm_clock_mhz": 1980}
not json
{"t": 10.1, "gpu": 0}
{"t": 10.1, "gpu": 1}
{"t": 10.2, "gpu": 0}
"#;
        let s = Series::parse(text);
        assert_eq!(s.ticks.len(), 3);
        assert_eq!(s.ticks[0].len(), 2);
        assert_eq!(s.ticks[2].len(), 1);
        assert_eq!(s.gpu_count(), 2);
        assert_eq!(s.uuid(1), Some("GPU-b"));
        assert_eq!(s.issues.len(), 1);
        assert_eq!(s.issues[0].line, 4);
        assert!(s.issues[0].message.starts_with("not an NVML sample"), "{:?}", s.issues);
    }

    #[test]
    fn meta_round_trips() {
        let m = Meta {
            driver: Some("580".into()),
            nvml: None,
            gpus: vec![MetaGpu { index: 0, name: "H200".into(), uuid: "GPU-x".into() }],
        };
        let s = Series::parse(&meta_line(&m));
        assert_eq!(s.meta, Some(m));
        assert!(s.ticks.is_empty());
    }

    #[test]
    fn garbage_never_panics_and_bounds_issues() {
        let text: String = (0..500).map(|i| format!("{{\"t\": \"x{i}\"}}\n\u{0}\u{ff}\n")).collect();
        let s = Series::parse(&text);
        assert!(s.ticks.is_empty());
        assert_eq!(s.issues.len(), MAX_ISSUES + 1);
    }
}
