//! The `triage.report/v1` contract: verdict, findings with their evidence, inputs, figures.
//!
//! Extend, never rename: the site, the runner's plugins and users' scripts read these names.

use super::kind::InputKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const SCHEMA: &str = "triage.report/v1";

/// The failure classes of the article's trees, plus configuration pitfalls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Class {
    #[serde(rename = "TTFT_HIGH")]
    TtftHigh,
    #[serde(rename = "TBT_TAIL")]
    TbtTail,
    #[serde(rename = "OOM")]
    Oom,
    #[serde(rename = "THROUGHPUT_ZERO")]
    ThroughputZero,
    #[serde(rename = "CONFIG")]
    Config,
    /// An error no rule explains (rule `unclaimed-error`): the evidence names no class yet.
    #[serde(rename = "INCONCLUSIVE")]
    Inconclusive,
}

impl Class {
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
    pub(crate) fn severity(self) -> u8 {
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
    #[serde(rename = "TTFT_HIGH")]
    TtftHigh,
    #[serde(rename = "TBT_TAIL")]
    TbtTail,
    #[serde(rename = "OOM")]
    Oom,
    #[serde(rename = "THROUGHPUT_ZERO")]
    ThroughputZero,
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
    /// The input's name (file name, or `paste`).
    pub input: String,
    /// 1-based line number in that input.
    pub line: usize,
    pub text: String,
}

impl EvidenceLine {
    /// Line `line` of `input`, quoted: redacted, then cut ([`super::text::quote_redacted`]).
    pub fn quoted(input: &str, line: usize, text: &str) -> EvidenceLine {
        EvidenceLine { input: input.to_owned(), line, text: super::text::quote_redacted(text) }
    }
}

/// A diagnosed cause.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub class: Class,
    /// Kebab-case rule id, e.g. `long-prompt-blocks-prefill`.
    pub rule: String,
    pub title: String,
    /// 0..=1: how sure the evidence makes us.
    pub confidence: f64,
    /// One or two sentences with the numbers that triggered the rule.
    pub summary: String,
    pub evidence: Vec<EvidenceLine>,
    /// Concrete changes: flags, settings, commands.
    pub remediation: Vec<String>,
    /// What to look at next when the evidence is not enough.
    pub next_checks: Vec<String>,
}

/// A problem reading an input, with its line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issue {
    pub line: usize,
    pub message: String,
}

/// One recognised section of one input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InputSection {
    pub name: String,
    pub kind: InputKind,
    /// First and last line (1-based, inclusive).
    pub lines: [usize; 2],
    pub issues: Vec<Issue>,
}

/// A figure the report shows, with its definition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    pub value: serde_json::Value,
    pub unit: String,
    pub definition: String,
}

/// The whole report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    pub verdict: Verdict,
    /// Ranked: most confident (then most severe) first.
    pub findings: Vec<Finding>,
    pub inputs: Vec<InputSection>,
    /// Named figures (e.g. `request_log.ttft_ms`), sorted by name.
    pub figures: BTreeMap<String, Figure>,
    /// Data for charts, by name: `[x, y]` points (a time series: x in seconds from the first
    /// point) or plain values (a sample: x is the index). Bounded: at most 2,000 points each.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub series: BTreeMap<String, Vec<[f64; 2]>>,
}
