//! The NVML JSON-lines series (`tests/data/nvml/h200_series.jsonl`): an optional first line
//! `{"meta": {"driver", "nvml", "gpus": [{index, name, uuid}]}}`, then one [`GpuSample`] per GPU
//! per tick. `triage-runner record` writes it, `triage-runner replay` reads it.
//!
//! Reading never fails as a whole: a line that is not a sample becomes an [`Issue`] with its
//! line number and the rest is read.

use super::sample::GpuSample;
use serde::{Deserialize, Serialize};
use triage_report::Issue;

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
    /// [`SeriesReader`] reads the same a line at a time, holding one tick.
    pub fn parse(text: &str) -> Series {
        let mut r = SeriesReader::default();
        let mut ticks = Vec::new();
        for (i, line) in text.lines().enumerate() {
            ticks.extend(r.line(i + 1, line));
        }
        ticks.extend(r.finish());
        let (meta, issues) = (r.meta.take(), r.take_issues());
        Series { meta, ticks, issues }
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

/// A series read a line at a time (`triage-runner replay` of a file of any size): each tick is
/// handed back when the line that starts the next one is read, so only one tick is held.
#[derive(Clone, Debug, Default)]
pub struct SeriesReader {
    /// The meta line, once read.
    pub meta: Option<Meta>,
    current: Vec<GpuSample>,
    /// The GPUs of the tick being read: a repeat starts the next tick. A set, not a search
    /// of `current`, so reading a tick is linear in its GPUs (it was quadratic).
    in_tick: std::collections::BTreeSet<u32>,
    ticks: u64,
    issues: Vec<Issue>,
    dropped: usize,
}

impl SeriesReader {
    /// Line `no` (1-based); the tick it ended, when it starts the next one.
    pub fn line(&mut self, no: usize, line: &str) -> Option<Vec<GpuSample>> {
        let t = line.trim();
        if t.is_empty() {
            return None;
        }
        if t.starts_with("{\"meta\"")
            || (self.meta.is_none() && self.ticks == 0 && self.current.is_empty() && t.contains("\"meta\""))
        {
            match serde_json::from_str::<MetaLine>(t) {
                Ok(m) => self.meta = Some(m.meta),
                Err(e) => self.issue(no, format!("meta line: {e}")),
            }
            return None;
        }
        let sample = match crate::line::parse_sample(t) {
            Ok(s) if s.t.is_finite() => s,
            Ok(_) => {
                self.issue(no, "sample time `t` is not a finite number".into());
                return None;
            }
            Err(e) => {
                self.issue(no, format!("not an NVML sample: {e}"));
                return None;
            }
        };
        let new_tick = self.in_tick.contains(&sample.gpu)
            || self.current.first().is_some_and(|first| (sample.t - first.t).abs() > TICK_GAP_S);
        let done = if new_tick {
            self.in_tick.clear();
            self.ticks += 1;
            Some(std::mem::take(&mut self.current))
        } else {
            None
        };
        self.in_tick.insert(sample.gpu);
        self.current.push(sample);
        done
    }

    /// The input ended: the last tick, if any.
    pub fn finish(&mut self) -> Option<Vec<GpuSample>> {
        self.in_tick.clear();
        (!self.current.is_empty()).then(|| {
            self.ticks += 1;
            std::mem::take(&mut self.current)
        })
    }

    /// An issue of line `no` (the host's too: a line not UTF-8, or too long); past a bound they
    /// are counted.
    pub fn issue(&mut self, line: usize, message: String) {
        push_issue(&mut self.issues, &mut self.dropped, line, message);
    }

    /// Issues so far (at most 100 listed, then one that counts the rest).
    pub fn issues(&self) -> &[Issue] {
        &self.issues
    }

    /// Issues so far, listed or counted.
    pub fn issue_count(&self) -> usize {
        self.issues.len() + self.dropped
    }

    /// The issues, with the count of those not listed as a last one (line 0).
    pub fn take_issues(&mut self) -> Vec<Issue> {
        let mut issues = std::mem::take(&mut self.issues);
        if self.dropped > 0 {
            issues.push(Issue { line: 0, message: format!("{} more lines could not be read", self.dropped) });
            self.dropped = 0;
        }
        issues
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
