//! Rule `mean-not-p99`: the mean looks fine, the tail does not.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, q, texts};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::MeanNotP99,
        class: Class::Config,
        title: "The mean hides the tail: watch p99",
        detects: "Request-log TTFT whose p99 is at least 3× its mean: a dashboard of means shows a healthy service while the slowest 1 % suffer.",
        why: "One 8k-token prefill barely moves the mean TTFT but multiplies the p99; users complain about the tail. Alerts and SLOs on means miss exactly the incidents this tool is for.",
        example: "Mean TTFT 400 ms looks healthy; p99 is 3 s.",
        fix: "Alert and set SLOs on p99 (and p99.9) of TTFT and ITL, from histograms with buckets fine enough to resolve them.",
        zh: RuleText {
            title: "均值掩盖了长尾：要看 p99",
            detects: "请求日志中 TTFT 的 p99 至少是均值的 3 倍：只看均值的看板显示服务健康，最慢的 1% 请求却在受罪。",
            why: "一个 8k token 的 prefill 几乎不影响 TTFT 均值，却能让 p99 翻好几倍；用户投诉的正是长尾。基于均值的告警和 SLO 恰好会漏掉这个工具要查的那些故障。",
            example: "TTFT 均值 400 ms，看起来很健康；p99 却是 3 s。",
            fix: "告警和 SLO 用 TTFT 与 ITL 的 p99（以及 p99.9），数据来自分桶足够细、能分辨出这些分位数的直方图。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let mut pairs = Vec::new();
    let r = &f.requests;
    if r.ttft_ms.count() >= 20
        && let (Some(mean), Some(p99)) = (r.ttft_ms.mean(), q(&r.ttft_ms, 0.99))
    {
        let what = lang.pick("request-log TTFT", "请求日志的 TTFT");
        pairs.push((what, mean, p99, r.slowest.first().and_then(|row| row.evidence.clone())));
    }
    // Benchmarks report their tails themselves (the bench-* rules judge them): the pitfall is
    // a dashboard of means, which a benchmark's output is not.
    let (what, mean, p99, ev) =
        pairs.into_iter().find(|(_, mean, p99, _)| *mean > 0.0 && *p99 >= 3.0 * mean)?;
    let ratio = p99 / mean;
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!("{what}: mean {mean:.0} ms but p99 {p99:.0} ms ({ratio:.1}×) — a mean-based dashboard would call this healthy."),
            format!("{what}：均值 {mean:.0} ms，p99 却是 {p99:.0} ms（{ratio:.1}×）——只看均值的看板会认为一切正常。"),
        ),
        FindingBody {
            confidence: 0.35,
            evidence: ev.into_iter().collect(),
            remediation: texts(lang, &[
                ("alert on p99 TTFT and p99 ITL, not on means", "按 TTFT p99 和 ITL p99 告警，而不是按均值"),
                (
                    "keep histogram buckets fine enough near your SLO to resolve p99 honestly",
                    "在 SLO 附近把直方图分桶划得足够细，才能如实算出 p99",
                ),
            ]),
            next_checks: texts(lang, &[(
                "see which requests make the tail: the slowest rows in this report",
                "看看长尾是由哪些请求构成的：即本报告中最慢的那些行",
            )]),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    #[test]
    fn fires_on_a_heavy_tail() {
        let log: String = (0..100)
            .map(|i| format!("{{\"ttft_ms\": {}}}\n", if i % 50 == 0 { 9000 } else { 200 }))
            .collect();
        assert!(case(&[("req.jsonl", &log)]).snapshot(RuleId::MeanNotP99, "fires_on_a_heavy_tail").is_some());
    }

    #[test]
    fn quiet_on_a_tight_distribution() {
        let log: String = (0..100).map(|i| format!("{{\"ttft_ms\": {}}}\n", 200 + i)).collect();
        assert!(
            case(&[("req.jsonl", &log)])
                .snapshot(RuleId::MeanNotP99, "quiet_on_a_tight_distribution")
                .is_none()
        );
    }
}
