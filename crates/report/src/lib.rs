//! The `triage.report/v1` contract: verdict, findings with their evidence, inputs, figures.
//!
//! Extend, never rename: the site, the runner's plugins and users' scripts read these names.
//!
//! The crate holds the contract's types and nothing that makes them: the analyzer
//! (`triage-analyze`) writes reports, the hosts and the site's page read them, and
//! [`markdown`] renders one for a ticket. [`kind`] names the input kinds, [`prometheus`] the
//! input kind read from a Prometheus server.

#![deny(missing_docs)]

pub mod kind;
pub mod markdown;
pub mod prometheus;
pub mod sections;

use kind::InputKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema id every report carries in `schema`.
pub const SCHEMA: &str = "triage.report/v1";

/// The failure classes of the article's trees, plus configuration pitfalls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Class {
    /// Time to first token is high: queueing, long prompts, cold starts.
    #[serde(rename = "TTFT_HIGH")]
    TtftHigh,
    /// The gaps between tokens have a long tail: preemption, long sequences, slow GPUs.
    #[serde(rename = "TBT_TAIL")]
    TbtTail,
    /// Out of GPU (or host) memory.
    #[serde(rename = "OOM")]
    Oom,
    /// Nothing is generated: the engine is dead, hung or stalled.
    #[serde(rename = "THROUGHPUT_ZERO")]
    ThroughputZero,
    /// A client or server setting is wrong (URL, timeout, retries, model name, limits).
    #[serde(rename = "CONFIG")]
    Config,
    /// An error no rule explains (rule `unclaimed-error`): the evidence names no class yet.
    #[serde(rename = "INCONCLUSIVE")]
    Inconclusive,
}

impl Class {
    /// The serialised name (`TTFT_HIGH`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Class::TtftHigh => "TTFT_HIGH",
            Class::TbtTail => "TBT_TAIL",
            Class::Oom => "OOM",
            Class::ThroughputZero => "THROUGHPUT_ZERO",
            Class::Config => "CONFIG",
            Class::Inconclusive => "INCONCLUSIVE",
        }
    }

    /// When two findings are equally confident, the more severe class names the incident.
    pub fn severity(self) -> u8 {
        match self {
            Class::ThroughputZero => 5,
            Class::Oom => 4,
            Class::TtftHigh => 3,
            Class::TbtTail => 2,
            Class::Config => 1,
            Class::Inconclusive => 0,
        }
    }
}

/// The overall answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    /// Time to first token is high ([`Class::TtftHigh`]).
    #[serde(rename = "TTFT_HIGH")]
    TtftHigh,
    /// The gaps between tokens have a long tail ([`Class::TbtTail`]).
    #[serde(rename = "TBT_TAIL")]
    TbtTail,
    /// Out of memory ([`Class::Oom`]).
    #[serde(rename = "OOM")]
    Oom,
    /// Nothing is generated ([`Class::ThroughputZero`]).
    #[serde(rename = "THROUGHPUT_ZERO")]
    ThroughputZero,
    /// A setting is wrong ([`Class::Config`]).
    #[serde(rename = "CONFIG")]
    Config,
    /// The inputs hold positive evidence of health (stats or metrics in range, completed
    /// requests, a GPU with only benign clock reasons) and no error that no rule explains.
    #[serde(rename = "HEALTHY")]
    Healthy,
    /// Nothing was recognised, nothing shows health, or an error no rule explains was found
    /// (then the `unclaimed-error` finding quotes it and says what to paste next).
    #[serde(rename = "INCONCLUSIVE")]
    Inconclusive,
}

impl Verdict {
    /// The serialised name (`HEALTHY`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::TtftHigh => "TTFT_HIGH",
            Verdict::TbtTail => "TBT_TAIL",
            Verdict::Oom => "OOM",
            Verdict::ThroughputZero => "THROUGHPUT_ZERO",
            Verdict::Config => "CONFIG",
            Verdict::Healthy => "HEALTHY",
            Verdict::Inconclusive => "INCONCLUSIVE",
        }
    }
}

impl From<Class> for Verdict {
    fn from(c: Class) -> Verdict {
        match c {
            Class::TtftHigh => Verdict::TtftHigh,
            Class::TbtTail => Verdict::TbtTail,
            Class::Oom => Verdict::Oom,
            Class::ThroughputZero => Verdict::ThroughputZero,
            Class::Config => Verdict::Config,
            Class::Inconclusive => Verdict::Inconclusive,
        }
    }
}

/// One quoted line that supports a finding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceLine {
    /// The input's name (file name, or `paste`): shared, not copied, by every evidence line of
    /// the input (a long log holds tens of thousands of stats lines, each keeping its line).
    pub input: std::sync::Arc<str>,
    /// 1-based line number in that input.
    pub line: usize,
    /// The line's text, redacted and cut.
    pub text: String,
}

impl EvidenceLine {
    /// Line `line` of `input`, quoted: redacted, then cut ([`triage_base::safe::quote_redacted`]).
    pub fn quoted(input: &str, line: usize, text: &str) -> EvidenceLine {
        EvidenceLine::quoted_shared(&input.into(), line, text)
    }

    /// As [`EvidenceLine::quoted`], sharing the input's name.
    pub fn quoted_shared(input: &std::sync::Arc<str>, line: usize, text: &str) -> EvidenceLine {
        EvidenceLine { input: input.clone(), line, text: triage_base::safe::quote_redacted(text) }
    }
}

/// A diagnosed cause.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The failure class the cause belongs to.
    pub class: Class,
    /// Kebab-case rule id, e.g. `long-prompt-blocks-prefill`.
    pub rule: String,
    /// The rule's title in the report's language.
    pub title: String,
    /// 0..=1: how sure the evidence makes us.
    pub confidence: f64,
    /// One or two sentences with the numbers that triggered the rule.
    pub summary: String,
    /// The lines that show it.
    pub evidence: Vec<EvidenceLine>,
    /// Concrete changes: flags, settings, commands.
    pub remediation: Vec<String>,
    /// What to look at next when the evidence is not enough.
    pub next_checks: Vec<String>,
    /// Which replica or GPU the finding is about, when the input says (`triage analyze
    /// --prometheus`: the series' `instance`, `pod`, `model_name`, `gpu`, `UUID`, `Hostname`).
    /// Absent for pasted inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
}

/// A replica or a GPU, named by the labels its series carry. Values came from outside: they
/// are redacted and cut ([`triage_base::safe::quote_redacted`]) before they are kept.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Subject {
    /// The scrape target (`instance` label).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// The Kubernetes pod (`pod` label).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    /// The served model (`model_name` label).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// The GPU index (DCGM's `gpu` label).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// The GPU's UUID (DCGM's `UUID` label).
    #[serde(rename = "UUID", default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// The GPU's node (DCGM's `Hostname` label).
    #[serde(rename = "Hostname", default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
}

impl Subject {
    /// `instance="10.0.0.7:8000", gpu="3"`: the labels that are set, in a fixed order.
    pub fn describe(&self) -> String {
        let pairs = [
            ("instance", &self.instance),
            ("pod", &self.pod),
            ("model_name", &self.model_name),
            ("Hostname", &self.hostname),
            ("gpu", &self.gpu),
            ("UUID", &self.uuid),
        ];
        let set: Vec<String> =
            pairs.iter().filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}=\"{v}\""))).collect();
        set.join(", ")
    }
}

/// A problem reading an input, with its line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issue {
    /// 1-based line number in the input.
    pub line: usize,
    /// What went wrong, in the report's language.
    pub message: String,
}

/// One recognised section of one input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InputSection {
    /// The input's name (file name, or `paste`).
    pub name: String,
    /// What the section was recognised as.
    pub kind: InputKind,
    /// First and last line (1-based, inclusive).
    pub lines: [usize; 2],
    /// Problems reading the section.
    pub issues: Vec<Issue>,
}

/// A figure the report shows, with its definition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// The number (or text) the figure holds.
    pub value: serde_json::Value,
    /// Its unit (`ms`, `%`, `tokens`, …; empty for a plain count).
    pub unit: String,
    /// What the figure means, in the report's language.
    pub definition: String,
}

impl Figure {
    /// The value as a person would write it, with its unit: `177.34× at 32,768 tokens`,
    /// `121.92 GiB`, `tried 200.00 GiB of 139.80 GiB; 139.19 GiB free`, `p50 310.2 · p90 … ms
    /// (n = 120)`. Text, Markdown and the site all show this; the JSON keeps `value` as it is.
    pub fn display(&self, lang: triage_base::lang::Lang) -> String {
        human::value(&self.value, &self.unit, lang)
    }
}

mod human {
    use serde_json::{Map, Value};
    use triage_base::lang::Lang;

    pub(super) fn value(v: &Value, unit: &str, lang: Lang) -> String {
        match v {
            Value::Null => "-".to_owned(),
            Value::Bool(b) => b.to_string(),
            Value::Number(_) => with_unit(&scalar(v), unit),
            // A string that carries its own unit ("121.92 GiB") is shown as it is.
            Value::String(s) if s.chars().any(char::is_alphabetic) => s.clone(),
            Value::String(s) => with_unit(s, unit),
            Value::Array(items) if items.iter().all(is_scalar) => {
                with_unit(&items.iter().map(scalar).collect::<Vec<_>>().join(", "), unit)
            }
            Value::Array(items) => {
                lang.pick(format!("{} entries", items.len()), format!("{} 项", items.len()))
            }
            Value::Object(m) => object(m, unit, lang),
        }
    }

    fn object(m: &Map<String, Value>, unit: &str, lang: Lang) -> String {
        let n = |k: &str| m.get(k).and_then(Value::as_f64);
        if m.contains_key("p50") && (m.contains_key("p90") || m.contains_key("p99")) {
            let parts: Vec<String> = ["p50", "p90", "p99", "max", "mean"]
                .into_iter()
                .filter_map(|k| m.get(k).map(|v| format!("{k} {}", scalar(v))))
                .collect();
            let count = m.get("n").map(|c| format!(" (n = {})", scalar(c))).unwrap_or_default();
            return format!("{}{count}", with_unit(&parts.join(" · "), unit));
        }
        if let (Some(times), Some(tokens)) = (n("times"), n("tokens_per_request")) {
            return lang.pick(
                format!("{}× at {} tokens", number(times), number(tokens)),
                format!("{}×（每个请求 {} token）", number(times), number(tokens)),
            );
        }
        if let Some(tried) = n("tried_gib") {
            let gib = |k: &str| n(k).map(|v| format!("{v:.2} GiB"));
            let mut s = match (gib("total_gib"), gib("free_gib")) {
                (Some(t), Some(f)) => lang.pick(
                    format!("tried {tried:.2} GiB of {t}; {f} free"),
                    format!("申请 {tried:.2} GiB，总量 {t}，空闲 {f}"),
                ),
                (Some(t), None) => lang
                    .pick(format!("tried {tried:.2} GiB of {t}"), format!("申请 {tried:.2} GiB，总量 {t}")),
                _ => lang.pick(format!("tried {tried:.2} GiB"), format!("申请 {tried:.2} GiB")),
            };
            if let Some(a) = gib("allocated_by_pytorch_gib") {
                s.push_str(&lang.pick(format!("; PyTorch allocated {a}"), format!("；PyTorch 已分配 {a}")));
            }
            if let Some(r) = gib("reserved_unallocated_gib") {
                s.push_str(
                    &lang.pick(format!(", reserved but unallocated {r}"), format!("，已预留未分配 {r}")),
                );
            }
            return s;
        }
        if let Some(delta) = n("delta") {
            let base = number(delta);
            return match (n("per_s"), n("window_s")) {
                (Some(r), Some(w)) => lang.pick(
                    format!("{base} ({}/s over {} s)", number(r), number(w)),
                    format!("{base}（{} 秒内，每秒 {}）", number(w), number(r)),
                ),
                _ => base,
            };
        }
        // Anything else (per-GPU maps, a benchmark's figures): `key value` pairs, the unit once.
        let parts: Vec<String> = m
            .iter()
            .filter(|(k, _)| !k.ends_with("_detail"))
            .map(|(k, v)| format!("{k}: {}", value(v, "", lang)))
            .collect();
        with_unit(&parts.join(" · "), unit)
    }

    fn is_scalar(v: &Value) -> bool {
        !matches!(v, Value::Array(_) | Value::Object(_))
    }

    fn scalar(v: &Value) -> String {
        match v {
            Value::Number(x) => x.as_f64().map_or_else(|| x.to_string(), number),
            Value::String(s) => s.clone(),
            Value::Null => "-".to_owned(),
            other => other.to_string(),
        }
    }

    /// `32768` → `32,768`; `177.339` → `177.34`; `0.0314159` → `0.0314`.
    pub(super) fn number(x: f64) -> String {
        if !x.is_finite() {
            return x.to_string();
        }
        let s = if x.fract() == 0.0 && x.abs() < 1e15 {
            format!("{x:.0}")
        } else if x.abs() >= 1.0 {
            let t = format!("{x:.2}");
            t.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            let t = format!("{x:.4}");
            t.trim_end_matches('0').trim_end_matches('.').to_owned()
        };
        group_thousands(&s)
    }

    fn group_thousands(s: &str) -> String {
        let (sign, rest) = s.strip_prefix('-').map_or(("", s), |r| ("-", r));
        let (int, frac) = rest.split_once('.').map_or((rest, None), |(i, f)| (i, Some(f)));
        if int.len() <= 3 {
            return s.to_owned();
        }
        let mut out = String::new();
        for (i, c) in int.chars().enumerate() {
            if i > 0 && (int.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        match frac {
            Some(f) => format!("{sign}{out}.{f}"),
            None => format!("{sign}{out}"),
        }
    }

    fn with_unit(s: &str, unit: &str) -> String {
        match unit {
            "" => s.to_owned(),
            "×" | "%" => format!("{s}{unit}"),
            u => format!("{s} {u}"),
        }
    }

    #[cfg(test)]
    mod tests {
        use crate::Figure;
        use serde_json::json;
        use triage_base::lang::Lang;

        fn show(value: serde_json::Value, unit: &str) -> String {
            Figure { value, unit: unit.to_owned(), definition: String::new() }.display(Lang::En)
        }

        #[test]
        fn figures_read_as_a_person_writes_them() {
            assert_eq!(
                show(json!({"times": 177.34, "tokens_per_request": 32768}), "×"),
                "177.34× at 32,768 tokens"
            );
            assert_eq!(show(json!("121.92 GiB"), "bytes"), "121.92 GiB");
            assert_eq!(
                show(
                    json!({"tried_gib": 200.0, "total_gib": 139.8, "free_gib": 139.19, "allocated_by_pytorch_gib": null}),
                    "GiB"
                ),
                "tried 200.00 GiB of 139.80 GiB; 139.19 GiB free"
            );
            assert_eq!(
                show(
                    json!({"p50": 310.2, "p90": 500.0, "p99": 812.5, "max": 900.0, "mean": 350.1, "n": 120}),
                    "ms"
                ),
                "p50 310.2 · p90 500 · p99 812.5 · max 900 · mean 350.1 ms (n = 120)"
            );
            assert_eq!(
                show(json!({"p50": "≤ 0.5", "p99": "1.2", "p50_detail": {"x": 1}, "p99_detail": {}}), "s"),
                "p50 ≤ 0.5 · p99 1.2 s"
            );
            assert_eq!(
                show(json!({"delta": 1234.0, "per_s": 5.14, "window_s": 240.0}), "count"),
                "1,234 (5.14/s over 240 s)"
            );
            assert_eq!(show(json!({"0": 1980.0, "1": 1410.0}), "MHz"), "0: 1,980 · 1: 1,410 MHz");
            assert_eq!(show(json!(37), "requests"), "37 requests");
            assert_eq!(show(json!(12.5), "%"), "12.5%");
            assert_eq!(show(json!(0.0314159), "GiB"), "0.0314 GiB");
            assert_eq!(show(json!(1234567.891), "tokens"), "1,234,567.89 tokens");
            assert_eq!(show(json!(null), "ms"), "-");
            // No raw JSON braces or quotes in any of them.
            for v in [json!({"a": {"b": 1}}), json!([{"x": 1}]), json!(["a", "b"])] {
                let s = show(v, "u");
                assert!(!s.contains('{') && !s.contains('"'), "{s}");
            }
            let zh = Figure {
                value: json!({"times": 2.5, "tokens_per_request": 4096}),
                unit: "×".into(),
                definition: String::new(),
            };
            assert!(triage_base::lang::has_cjk(&zh.display(Lang::Zh)));
        }
    }
}

/// The whole report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The overall answer.
    pub verdict: Verdict,
    /// Ranked: most confident (then most severe) first.
    pub findings: Vec<Finding>,
    /// Every input section, in the order read.
    pub inputs: Vec<InputSection>,
    /// Named figures (e.g. `request_log.ttft_ms`), sorted by name.
    pub figures: BTreeMap<String, Figure>,
    /// Data for charts, by name: `[x, y]` points (a time series: x in seconds from the first
    /// point) or plain values (a sample: x is the index). Bounded: at most 2,000 points each.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub series: BTreeMap<String, Vec<[f64; 2]>>,
    /// The Prometheus window read by `triage analyze --prometheus` (input kind `prometheus`):
    /// server, window, queries, counts, what was cut, the fleet view and the citations behind
    /// the evidence. Absent for pasted inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus: Option<prometheus::PrometheusInput>,
}

impl Report {
    /// The citation behind an evidence line, when it came from a Prometheus series.
    pub fn citation(&self, e: &EvidenceLine) -> Option<&prometheus::Citation> {
        self.prometheus.as_ref()?.citations.iter().find(|c| *c.input == *e.input && c.line == e.line)
    }
}

/// A figure as the text and Markdown reports print it: at most three decimals, trailing zeros
/// dropped; `-` when absent.
pub fn short_number(v: Option<f64>) -> String {
    v.map_or("-".to_owned(), |x| {
        let t = format!("{x:.3}");
        t.trim_end_matches('0').trim_end_matches('.').to_owned()
    })
}
