//! OpenMetrics text with timestamps: many scrapes of many targets as one file, the input of
//! `promtool tsdb create-blocks-from openmetrics` (Prometheus' backfill).
//!
//! What the format (and promtool 2.42's parser) asks, and how this writer keeps it:
//! - every family once, all its samples together: samples are collected per family first and
//!   written at the end, in the order the families first appeared;
//! - `# HELP` / `# TYPE` name the family; a counter's family name has no `_total`, its samples
//!   do; a histogram's samples are `_bucket{…,le="…"}` (cumulative, `+Inf` last), `_count`,
//!   `_sum`, one metric point per timestamp;
//! - within a family, one metric (a label set; for histograms, without `le`) after the other,
//!   each metric's points in ascending time: [`Series::add`] refuses a point older than the last;
//! - every sample carries its timestamp, in seconds; the file ends with one `# EOF`.
//!
//! Names may hold colons (vLLM's `vllm:`), label values are escaped as the format says.

use super::metrics::{Family, Kind, label_text, py_float};
use std::fmt::Write;

/// How a family's values are printed: `py_float` for vLLM (`prometheus_client`), Rust's
/// shortest form for the Go exporters (`1980`, `123.45`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    Python,
    Go,
}

/// One metric point: its lines (suffix, labels, value) at one time.
#[derive(Clone, Debug)]
struct MetricPoint {
    t_ms: u64,
    lines: Vec<(&'static str, String, f64)>,
}

/// One metric: a label set and its points in time order.
#[derive(Clone, Debug)]
struct Metric {
    key: String,
    points: Vec<MetricPoint>,
}

#[derive(Clone, Debug)]
struct FamilySeries {
    name: &'static str,
    kind: Kind,
    help: &'static str,
    style: Style,
    metrics: Vec<Metric>,
}

/// A point older than the metric's last one (the format wants each metric's points ascending).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutOfOrder {
    pub family: &'static str,
    pub labels: String,
}

/// Time series of many families, written as one OpenMetrics text.
#[derive(Clone, Debug, Default)]
pub struct Series {
    families: Vec<FamilySeries>,
}

impl Series {
    /// Add one scrape's family at `t_ms` (unix milliseconds), its every point with `target`'s
    /// labels added (after the family's own, before `le`).
    pub fn add(
        &mut self,
        family: &Family,
        target: &[(&'static str, String)],
        t_ms: u64,
        style: Style,
    ) -> Result<(), OutOfOrder> {
        let at = match self.families.iter().position(|f| f.name == family.name) {
            Some(i) => i,
            None => {
                self.families.push(FamilySeries {
                    name: family.name,
                    kind: family.kind,
                    help: family.help,
                    style,
                    metrics: Vec::new(),
                });
                self.families.len() - 1
            }
        };
        let fam = &mut self.families[at];
        for p in &family.points {
            let (mut own, le): (Vec<_>, Vec<_>) = p.labels.iter().cloned().partition(|(k, _)| *k != "le");
            own.extend(target.iter().cloned());
            let key = label_text(&own);
            own.extend(le);
            let labels = label_text(&own);
            let m = match fam.metrics.iter().position(|m| m.key == key) {
                Some(i) => &mut fam.metrics[i],
                None => {
                    fam.metrics.push(Metric { key, points: Vec::new() });
                    fam.metrics.last_mut().expect("just pushed")
                }
            };
            match m.points.last_mut() {
                Some(last) if last.t_ms == t_ms => last.lines.push((p.suffix, labels, p.value)),
                Some(last) if last.t_ms > t_ms => {
                    return Err(OutOfOrder { family: family.name, labels: m.key.clone() });
                }
                _ => m.points.push(MetricPoint { t_ms, lines: vec![(p.suffix, labels, p.value)] }),
            }
        }
        Ok(())
    }

    /// The OpenMetrics text, ending in `# EOF`.
    pub fn render(&self) -> String {
        let lines: usize = self
            .families
            .iter()
            .flat_map(|f| &f.metrics)
            .flat_map(|m| &m.points)
            .map(|p| p.lines.len())
            .sum();
        let mut s = String::with_capacity(lines * 120 + 64);
        for f in &self.families {
            let _ = writeln!(s, "# HELP {} {}\n# TYPE {} {}", f.name, f.help, f.name, f.kind.as_str());
            for m in &f.metrics {
                for p in &m.points {
                    let ts = timestamp(p.t_ms);
                    for (suffix, labels, value) in &p.lines {
                        let v = match f.style {
                            Style::Python => py_float(*value),
                            Style::Go => format!("{value}"),
                        };
                        let _ = writeln!(s, "{}{suffix}{{{labels}}} {v} {ts}", f.name);
                    }
                }
            }
        }
        s.push_str("# EOF\n");
        s
    }
}

/// Unix milliseconds as OpenMetrics seconds: `1795917615`, `1795917615.5`.
fn timestamp(t_ms: u64) -> String {
    if t_ms.is_multiple_of(1000) {
        (t_ms / 1000).to_string()
    } else {
        let frac = format!("{:03}", t_ms % 1000);
        format!("{}.{}", t_ms / 1000, frac.trim_end_matches('0'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::metrics::{CacheInfo, Metrics, Point};

    fn gauge(v: f64) -> Family {
        Family {
            name: "DCGM_FI_DEV_SM_CLOCK",
            kind: Kind::Gauge,
            help: "SM clock frequency (in MHz).",
            points: vec![Point { suffix: "", labels: vec![("gpu", "0".into())], value: v }],
        }
    }

    #[test]
    fn families_are_contiguous_and_points_ascend() {
        let cache = CacheInfo { block_size: 16, num_gpu_blocks: 100, gpu_memory_utilization: 0.9 };
        let mut m = Metrics::default();
        let mut s = Series::default();
        let a = [("pod", "vllm-0".to_owned())];
        let b = [("pod", "vllm-1".to_owned())];
        for t in [1_000, 16_000] {
            m.preemptions += 1;
            m.ttft.observe(0.2);
            for f in m.families("m", &cache) {
                s.add(&f, &a, t, Style::Python).unwrap();
                s.add(&f, &b, t, Style::Python).unwrap();
            }
            s.add(&gauge(1980.0), &a, t + 500, Style::Go).unwrap();
        }
        let text = s.render();
        assert!(text.ends_with("\n# EOF\n"));
        assert_eq!(text.matches("# TYPE vllm:num_preemptions counter").count(), 1, "{text}");
        assert!(text.contains(
            "vllm:num_preemptions_total{engine=\"0\",model_name=\"m\",pod=\"vllm-0\"} 1.0 1\nvllm:num_preemptions_total{engine=\"0\",model_name=\"m\",pod=\"vllm-0\"} 2.0 16\nvllm:num_preemptions_total{engine=\"0\",model_name=\"m\",pod=\"vllm-1\"} 1.0 1\n"
        ), "{text}");
        // A histogram's point: buckets (le last), count, sum, at one time.
        assert!(text.contains("vllm:time_to_first_token_seconds_bucket{engine=\"0\",model_name=\"m\",pod=\"vllm-1\",le=\"+Inf\"} 2.0 16\nvllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"m\",pod=\"vllm-1\"} 2.0 16\nvllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"m\",pod=\"vllm-1\"} 0.4 16\n"), "{text}");
        assert!(text.contains("DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",pod=\"vllm-0\"} 1980 1.5\n"), "{text}");
        assert_eq!(
            s.add(&gauge(1.0), &a, 2_000, Style::Go),
            Err(OutOfOrder { family: "DCGM_FI_DEV_SM_CLOCK", labels: "gpu=\"0\",pod=\"vllm-0\"".into() })
        );
    }

    #[test]
    fn timestamps_are_seconds() {
        assert_eq!(timestamp(1_795_917_615_000), "1795917615");
        assert_eq!(timestamp(1_795_917_615_500), "1795917615.5");
        assert_eq!(timestamp(1_795_917_615_025), "1795917615.025");
    }
}
