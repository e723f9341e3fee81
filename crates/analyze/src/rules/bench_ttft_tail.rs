//! Rule `bench-ttft-tail`: a benchmark's own figures show a TTFT tail.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::report::{Class, EvidenceLine, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::BenchTtftTail,
        class: Class::TtftHigh,
        title: "The benchmark's TTFT tail is far above its median",
        detects: "A benchmark result (`vllm bench serve`, SGLang `bench_serving`, guidellm, aiperf) whose TTFT p99 (else p95) is at least 5× its median and over 1 s, or above the TTFT target (2,000 ms by default; `--slo-ttft-ms`).",
        why: "The median says what a typical request sees; the tail says what the unlucky ones see, and users remember those. A tail far above the median means requests waited — in the queue behind a full batch, or behind long prefills — not that the model is slow for everyone.",
        example: "`Median TTFT (ms): 612.40` but `P99 TTFT (ms): 22481.93`.",
        fix: "Look at the engine during the run: a growing waiting queue means too much load for the replica (scale out, or cap concurrency at the gateway); long prompts blocking others means chunked prefill and a smaller `--max-num-batched-tokens`.",
        zh: RuleText {
            title: "压测结果里 TTFT 的长尾远高于中位数",
            detects: "压测结果（`vllm bench serve`、SGLang `bench_serving`、guidellm、aiperf）中 TTFT 的 p99（没有时用 p95）至少是中位数的 5 倍且超过 1 s，或者高于 TTFT 目标（默认 2,000 ms；可用 `--slo-ttft-ms` 修改）。",
            why: "中位数说明典型请求的体验；长尾说明倒霉的请求的体验，而用户记住的正是这些。长尾远高于中位数，说明请求在等待——排在满批次后面的队列里，或者排在长 prefill 后面——而不是模型对所有人都慢。",
            example: "`Median TTFT (ms): 612.40`，而 `P99 TTFT (ms): 22481.93`。",
            fix: "看压测期间的引擎：等待队列持续增长，说明这个副本负载过高（扩容，或在网关限制并发）；长 prompt 阻塞其他请求，就开启 chunked prefill 并调小 `--max-num-batched-tokens`。",
        },
    },
    check,
};

/// A tail at least this many times the median is a finding.
const RATIO: f64 = 5.0;
/// …when it is also above this (ms): a 5× tail of 40 ms is nobody's incident.
const FLOOR_MS: f64 = 1_000.0;

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let slo = f.slo.ttft_ms;
    let mut best: Option<(f64, String, Vec<EvidenceLine>)> = None;
    for b in &f.bench {
        let Some((tail, p)) = b.tail("ttft_ms") else { continue };
        let middle = b.middle("ttft_ms");
        let ratio = middle.filter(|(m, _)| *m > 0.0).map(|(m, _)| tail / m);
        let wide = ratio.is_some_and(|r| r >= RATIO) && tail >= FLOOR_MS;
        let over = tail > slo;
        if !wide && !over {
            continue;
        }
        let confidence = if wide && over { 0.8 } else { 0.7 };
        let mid = match (middle, lang) {
            (Some((m, name)), Lang::En) => {
                format!(" against a {name} of {m:.0} ms ({:.1}×)", tail / m.max(1e-9))
            }
            (Some((m, name)), Lang::Zh) => format!("，{name} 为 {m:.0} ms（{:.1}×）", tail / m.max(1e-9)),
            (None, _) => String::new(),
        };
        let target = if over {
            lang.pick(format!(", above the {slo:.0} ms target"), format!("，超过 {slo:.0} ms 的目标"))
        } else {
            String::new()
        };
        let summary = lang.pick(
            format!("The benchmark ({}) measured a TTFT {p} of {tail:.0} ms{mid}{target}: requests waited before their first token.", b.tool),
            format!("压测（{}）测得 TTFT {p} 为 {tail:.0} ms{mid}{target}：请求在拿到第一个 token 之前一直在等。", b.tool),
        );
        let mut evidence: Vec<EvidenceLine> = b.line(&format!("ttft_ms.{p}")).into_iter().collect();
        if let Some((_, name)) = middle {
            evidence.extend(b.lines.get(&format!("ttft_ms.{name}")).cloned());
        }
        evidence.dedup();
        if best.as_ref().is_none_or(|(c, _, _)| confidence > *c) {
            best = Some((confidence, summary, evidence));
        }
    }
    let (confidence, summary, evidence) = best?;
    Some(RULE.doc.finding(
        lang,
        summary,
        FindingBody {
            confidence,
            evidence,
            remediation: texts(lang, &[
                (
                    "if the engine's waiting queue grew during the run, the load is above what one replica serves: scale out or cap concurrency at the gateway",
                    "如果压测期间引擎的等待队列持续增长，说明负载超过了单个副本的能力：扩容，或在网关限制并发",
                ),
                (
                    "if long prompts were in the mix, enable chunked prefill and lower --max-num-batched-tokens so one prefill cannot hold the step",
                    "如果混有长 prompt，开启 chunked prefill 并调低 --max-num-batched-tokens，避免一个 prefill 独占整步",
                ),
            ]),
            next_checks: texts(lang, &[
                (
                    "paste the engine's log from the same minutes: its stats lines (Running / Waiting, KV usage) say which of the two it was",
                    "贴出同一时间段的引擎日志：它的统计行（Running / Waiting、KV 使用率）能说明是哪一种",
                ),
                (
                    "rerun at half the request rate: a tail that disappears is queueing",
                    "用一半的请求速率重跑一次：长尾消失了，就是排队造成的",
                ),
            ]),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    const TAIL: &str = "============ Serving Benchmark Result ============\nSuccessful requests:                     1000\nBenchmark duration (s):                  120.5\nRequest throughput (req/s):              8.30\n---------------Time to First Token----------------\nMean TTFT (ms):                          2930.11\nMedian TTFT (ms):                        612.40\nP99 TTFT (ms):                           22481.93\n==================================================\n";

    #[test]
    fn fires_on_a_tail_far_above_the_median() {
        let f = case(&[("bench.txt", TAIL)])
            .snapshot(RuleId::BenchTtftTail, "fires_on_a_tail_far_above_the_median")
            .unwrap();
        assert!(f.summary.contains("22482 ms"), "{}", f.summary);
        assert_eq!(f.evidence.len(), 2);
    }

    #[test]
    fn quiet_on_a_modest_tail() {
        let ok = TAIL.replace("22481.93", "1410.00").replace("2930.11", "700.0");
        assert!(
            case(&[("bench.txt", &ok)]).snapshot(RuleId::BenchTtftTail, "quiet_on_a_modest_tail").is_none()
        );
    }

    #[test]
    fn the_target_is_a_setting() {
        let ok = TAIL.replace("22481.93", "1410.00").replace("2930.11", "700.0");
        let mut a =
            crate::Analyzer::new().with_slo(crate::facts::Slo { ttft_ms: 1_000.0, ..Default::default() });
        a.add_text("bench.txt", &ok);
        assert_eq!(a.finish().findings[0].rule, RuleId::BenchTtftTail);
    }

    crate::rules::snapshots! {
        corpus_guidellm_benchmarks: [("guidellm_benchmarks.json", fixture!("bench/guidellm_benchmarks.json"))],
        corpus_guidellm_console: [("guidellm_console.txt", fixture!("bench/guidellm_console.txt"))],
    }
}
