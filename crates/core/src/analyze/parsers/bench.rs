//! Benchmark outputs: `vllm bench serve` (console and JSON), guidellm and aiperf reports,
//! normalised to BRIEF.md's definitions.
//! (Being written: see BenchFacts for the contract the rules read.)

use super::{Cx, SectionParser};
use crate::analyze::report::EvidenceLine;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct BenchFacts {
    /// `vllm`, `guidellm`, `aiperf`.
    pub tool: String,
    /// Canonical figure → value, e.g. `ttft_ms.mean`, `ttft_ms.p99`, `tpot_ms.median`,
    /// `itl_ms.p99`, `e2e_ms.mean`, `request_throughput`, `output_throughput`, `completed`,
    /// `failed` (names per BRIEF.md's definitions, whatever the tool called them).
    pub figures: BTreeMap<String, f64>,
    /// Where two figures are not comparable, and why.
    pub notes: Vec<String>,
    pub evidence: Vec<EvidenceLine>,
}

#[derive(Default)]
pub struct BenchParser;

impl SectionParser for BenchParser {
    fn line(&mut self, _cx: &mut Cx<'_>, _no: usize, _line: &str) {}
}
