//! Rule `mean-not-p99`: the mean looks fine, the tail does not.

use super::{Rule, RuleDoc, q};
use crate::analyze::facts::Facts;
use crate::analyze::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: "mean-not-p99",
        class: Class::Config,
        title: "The mean hides the tail: watch p99",
        detects: "TTFT (or a benchmark's TTFT) whose p99 is at least 3× its mean: a dashboard of means shows a healthy service while the slowest 1 % suffer.",
        why: "One 8k-token prefill barely moves the mean TTFT but multiplies the p99; users complain about the tail. Alerts and SLOs on means miss exactly the incidents this tool is for.",
        example: "Mean TTFT 400 ms looks healthy; p99 is 3 s.",
        fix: "Alert and set SLOs on p99 (and p99.9) of TTFT and ITL, from histograms with buckets fine enough to resolve them.",
    },
    check,
};

fn check(f: &Facts) -> Option<Finding> {
    let mut pairs = Vec::new();
    let r = &f.requests;
    if r.ttft_ms.count() >= 20
        && let (Some(mean), Some(p99)) = (r.ttft_ms.mean(), q(&r.ttft_ms, 0.99))
    {
        pairs.push(("request-log TTFT", mean, p99, r.slowest.first().and_then(|row| row.evidence.clone())));
    }
    for b in &f.bench {
        if let (Some(mean), Some(p99)) = (b.figures.get("ttft_ms.mean"), b.figures.get("ttft_ms.p99")) {
            pairs.push(("benchmark TTFT", *mean, *p99, b.evidence.first().cloned()));
        }
    }
    let (what, mean, p99, ev) =
        pairs.into_iter().find(|(_, mean, p99, _)| *mean > 0.0 && *p99 >= 3.0 * mean)?;
    Some(RULE.doc.finding(
        0.35,
        format!("{what}: mean {mean:.0} ms but p99 {p99:.0} ms ({:.1}×) — a mean-based dashboard would call this healthy.", p99 / mean),
        ev.into_iter().collect(),
        &["alert on p99 TTFT and p99 ITL, not on means", "keep histogram buckets fine enough near your SLO to resolve p99 honestly"],
        &["see which requests make the tail: the slowest rows in this report"],
    ))
}

#[cfg(test)]
mod tests {
    use super::super::fired;

    #[test]
    fn fires_on_a_heavy_tail() {
        let log: String = (0..100)
            .map(|i| format!("{{\"ttft_ms\": {}}}\n", if i % 50 == 0 { 9000 } else { 200 }))
            .collect();
        assert!(fired(&[("req.jsonl", &log)], "mean-not-p99").is_some());
    }

    #[test]
    fn quiet_on_a_tight_distribution() {
        let log: String = (0..100).map(|i| format!("{{\"ttft_ms\": {}}}\n", 200 + i)).collect();
        assert!(fired(&[("req.jsonl", &log)], "mean-not-p99").is_none());
    }
}
