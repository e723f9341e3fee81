//! The diagnosis rules: one file per rule, named after the problem it detects.
//!
//! Each file holds the rule's documentation (what it detects, why it matters, an example, what
//! to try), its `check` over [`Facts`], and its tests. [`RULES`] lists them all; the CLI, the
//! site's playbook and the flashcards all read the same [`RuleDoc`]s.

use super::facts::Facts;
use super::report::{Class, EvidenceLine, Finding};

mod activation_peak;
mod allocator_fragmentation;
mod base_url_wrong;
mod chunked_prefill_off;
mod cold_start;
mod colocated_process;
mod engine_dead;
mod input_too_long;
mod kv_leak;
mod kv_pressure_preemption;
mod kv_reservation_too_large;
mod long_prompt_blocks_prefill;
mod long_sequence_in_batch;
mod mean_not_p99;
mod missing_timestamps;
mod nccl_hang;
mod no_abort_on_timeout;
mod queueing_exceeds_capacity;
mod retries_mask_failures;
mod scheduler_stall;
mod slow_gpu;
mod timeout_too_short;
mod upstream_cut;

/// A rule's documentation, shown wherever the rule's findings are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleDoc {
    /// Kebab-case id, named after the problem.
    pub id: &'static str,
    pub class: Class,
    pub title: &'static str,
    pub detects: &'static str,
    pub why: &'static str,
    pub example: &'static str,
    pub fix: &'static str,
}

/// A rule: its docs and its check.
#[derive(Clone, Copy)]
pub struct Rule {
    pub doc: RuleDoc,
    pub check: fn(&Facts) -> Option<Finding>,
}

impl RuleDoc {
    /// A finding of this rule.
    pub(crate) fn finding(
        &self,
        confidence: f64,
        summary: String,
        evidence: Vec<EvidenceLine>,
        remediation: &[&str],
        next_checks: &[&str],
    ) -> Finding {
        Finding {
            class: self.class,
            rule: self.id.to_owned(),
            title: self.title.to_owned(),
            confidence: (confidence.clamp(0.0, 1.0) * 100.0).round() / 100.0,
            summary,
            evidence,
            remediation: remediation.iter().map(|s| (*s).to_owned()).collect(),
            next_checks: next_checks.iter().map(|s| (*s).to_owned()).collect(),
        }
    }
}

/// Every rule, in the order of the article's trees.
pub static RULES: &[Rule] = &[
    // TTFT high
    queueing_exceeds_capacity::RULE,
    long_prompt_blocks_prefill::RULE,
    chunked_prefill_off::RULE,
    cold_start::RULE,
    // TBT tail
    long_sequence_in_batch::RULE,
    kv_pressure_preemption::RULE,
    slow_gpu::RULE,
    // OOM
    kv_reservation_too_large::RULE,
    input_too_long::RULE,
    activation_peak::RULE,
    allocator_fragmentation::RULE,
    colocated_process::RULE,
    // Throughput zero
    scheduler_stall::RULE,
    kv_leak::RULE,
    upstream_cut::RULE,
    nccl_hang::RULE,
    engine_dead::RULE,
    // Config pitfalls
    base_url_wrong::RULE,
    timeout_too_short::RULE,
    retries_mask_failures::RULE,
    no_abort_on_timeout::RULE,
    missing_timestamps::RULE,
    mean_not_p99::RULE,
];

/// The docs of every rule (for the site's playbook and the flashcards).
pub fn docs() -> impl Iterator<Item = &'static RuleDoc> {
    RULES.iter().map(|r| &r.doc)
}

/// Quantile of a sketch, when it has data.
pub(crate) fn q(s: &crate::stats::QuantileSketch, p: f64) -> Option<f64> {
    s.quantile(p)
}

/// Test helper: the finding of `rule` for these inputs, if it fires.
#[cfg(test)]
pub(crate) fn fired(inputs: &[(&str, &str)], rule: &str) -> Option<Finding> {
    crate::analyze::analyze(inputs).findings.into_iter().find(|f| f.rule == rule)
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_unique_kebab_case_and_documented() {
        let mut ids: Vec<&str> = super::docs().map(|d| d.id).collect();
        for d in super::docs() {
            assert!(
                d.id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{}",
                d.id
            );
            for (name, text) in [
                ("title", d.title),
                ("detects", d.detects),
                ("why", d.why),
                ("example", d.example),
                ("fix", d.fix),
            ] {
                assert!(text.len() > 10, "{}: {name} is too short", d.id);
            }
        }
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n);
    }
}
