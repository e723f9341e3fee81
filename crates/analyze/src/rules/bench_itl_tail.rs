//! Rule `bench-itl-tail`: a benchmark's own figures show a tail of gaps between tokens.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::report::{Class, EvidenceLine, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::BenchItlTail,
        class: Class::TbtTail,
        title: "The benchmark's gaps between tokens have a long tail",
        detects: "A benchmark result whose ITL p99 (else TPOT p99; p95 when that is all it prints) is at least 3× its median and over 100 ms, or above the inter-token target (200 ms by default; `--slo-itl-ms`), while the median itself is small.",
        why: "A small median gap with a long tail means decoding is fast most of the time and stalls now and then: a long prefill sharing the step (no chunked prefill), preemption when the KV cache fills, or one slow GPU of a tensor-parallel group. Users see the stream freeze mid-answer.",
        example: "`Median ITL (ms): 21.30` but `P99 ITL (ms): 412.77`.",
        fix: "Enable chunked prefill with a modest `--max-num-batched-tokens`; check the engine log for preemptions (KV cache full) and `nvidia-smi` for a throttled GPU.",
        zh: RuleText {
            title: "压测结果里 token 间隔有长尾",
            detects: "压测结果中 ITL 的 p99（没有时用 TPOT 的 p99；只打印 p95 时用 p95）至少是中位数的 3 倍且超过 100 ms，或者高于 token 间隔目标（默认 200 ms；可用 `--slo-itl-ms` 修改），而中位数本身很小。",
            why: "间隔中位数小、长尾长，说明解码大部分时间很快，偶尔停顿：一个长 prefill 和解码挤在同一步里（没开 chunked prefill）、KV cache 满了导致抢占，或者张量并行组里有一张 GPU 变慢。用户看到的是回答到一半卡住。",
            example: "`Median ITL (ms): 21.30`，而 `P99 ITL (ms): 412.77`。",
            fix: "开启 chunked prefill 并设置适中的 `--max-num-batched-tokens`；在引擎日志里查抢占（KV cache 满），用 `nvidia-smi` 查是否有 GPU 降频。",
        },
    },
    check,
};

const RATIO: f64 = 3.0;
const FLOOR_MS: f64 = 100.0;

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let slo = f.slo.itl_ms;
    let mut best: Option<(f64, String, Vec<EvidenceLine>)> = None;
    for b in &f.bench {
        for metric in ["itl_ms", "tpot_ms"] {
            let Some((tail, p)) = b.tail(metric) else { continue };
            let Some((mid, mid_name)) = b.middle(metric).filter(|(m, _)| *m > 0.0) else { continue };
            let wide = tail / mid >= RATIO && tail >= FLOOR_MS;
            let over = tail > slo && mid < slo / 2.0;
            if !wide && !over {
                continue;
            }
            let confidence = if wide && over { 0.8 } else { 0.7 };
            let name = metric.trim_end_matches("_ms").to_ascii_uppercase();
            let summary = lang.pick(
                format!("The benchmark ({}) measured {} {name} {p} of {tail:.0} ms against a {mid_name} of {mid:.1} ms ({:.1}×): decoding stalls now and then.", b.tool, if name == "ITL" { "an" } else { "a" }, tail / mid),
                format!("压测（{}）测得 {name} {p} 为 {tail:.0} ms，{mid_name} 为 {mid:.1} ms（{:.1}×）：解码时不时停顿。", b.tool, tail / mid),
            );
            let mut evidence: Vec<EvidenceLine> = b.line(&format!("{metric}.{p}")).into_iter().collect();
            evidence.extend(b.lines.get(&format!("{metric}.{mid_name}")).cloned());
            evidence.dedup();
            if best.as_ref().is_none_or(|(c, _, _)| confidence > *c) {
                best = Some((confidence, summary, evidence));
            }
            break;
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
                    "enable chunked prefill (--enable-chunked-prefill, a modest --max-num-batched-tokens such as 2048) so prefills stop stalling decodes",
                    "开启 chunked prefill（--enable-chunked-prefill，配合适中的 --max-num-batched-tokens，例如 2048），让 prefill 不再卡住解码",
                ),
                (
                    "if the engine preempts (KV cache full), lower --max-num-seqs or give the cache more memory",
                    "如果引擎在抢占（KV cache 满），调低 --max-num-seqs 或给缓存更多显存",
                ),
            ]),
            next_checks: texts(lang, &[
                (
                    "paste the engine log from the run (preemption warnings, KV usage) and `nvidia-smi -q -d PERFORMANCE` from under load",
                    "贴出压测期间的引擎日志（抢占警告、KV 使用率），以及负载下的 `nvidia-smi -q -d PERFORMANCE`",
                ),
            ]),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    const RUN: &str = "============ Serving Benchmark Result ============\nSuccessful requests:                     1000\nRequest throughput (req/s):              8.30\n---------------Inter-token Latency----------------\nMean ITL (ms):                           31.02\nMedian ITL (ms):                         21.30\nP99 ITL (ms):                            412.77\n==================================================\n";

    #[test]
    fn fires_on_a_gap_tail() {
        let f = case(&[("bench.txt", RUN)]).snapshot(RuleId::BenchItlTail, "fires_on_a_gap_tail").unwrap();
        assert!(f.summary.contains("413 ms"), "{}", f.summary);
    }

    #[test]
    fn quiet_on_steady_decoding() {
        let ok = RUN.replace("412.77", "48.10");
        assert!(
            case(&[("bench.txt", &ok)]).snapshot(RuleId::BenchItlTail, "quiet_on_steady_decoding").is_none()
        );
    }

    crate::rules::snapshots! {
        corpus_sglang_bench_serving: [("sglang_bench_serving.txt", fixture!("bench/sglang_bench_serving.txt"))],
        corpus_vllm_bench_serve: [("vllm_bench_serve.json", fixture!("bench/vllm_bench_serve.json"))],
    }
}
