//! Rule `decode-slower-at-same-load`: the same decode work runs at very different speeds in one
//! paste — before against after.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::parsers::sglang::SglangBatch;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::DecodeSlowerAtSameLoad,
        class: Class::TbtTail,
        title: "Decode slower for the same load",
        detects: "SGLang `Decode batch` lines with the same `#running-req` and a `#token` within 1.5× of each other, whose `gen throughput (token/s)` splits in two: the slower half at most 1/1.6 of the faster half (medians). Also across data-parallel ranks printing the same batch.",
        why: "A decode step's time depends on the batch (how many sequences, how much KV cache they read). When the same batch decodes at half the speed in one part of the paste — another configuration, another rank, a later hour — every stream's gap between tokens doubles, and the cause is what differs between the two: a flag (CUDA graphs, speculative decoding and its acceptance), a rank's GPU, a release.",
        example: "`#running-req: 8, #token: 35785, … gen throughput (token/s): 135.85` with one setting and `#running-req: 8, #token: 29915, … accept len: 1.55, gen throughput (token/s): 61.31` with another.",
        fix: "Find what differs between the fast and the slow lines and take the fast side: the setting that changed (CUDA graphs, speculative decoding — a low `accept len` means drafts are wasted), the rank or GPU that is slow (`nvidia-smi -q -d PERFORMANCE`), the release.",
        zh: RuleText {
            title: "同样的负载，decode 变慢了",
            detects: "SGLang 的 `Decode batch` 行，`#running-req` 相同、`#token` 相差不到 1.5 倍，而 `gen throughput (token/s)` 分成两组：较慢一半的中位数至多是较快一半的 1/1.6。数据并行的各个 rank 打印同一批次时也算。",
            why: "一次 decode 的耗时取决于批次（多少条序列、读多少 KV 缓存）。同样的批次在粘贴内容的某一部分只有一半速度——换了配置、换了 rank、过了一段时间——每条流的 token 间隔就会翻倍，原因就在两者的差异里：某个参数（CUDA graph、投机解码及其接受率）、某个 rank 的 GPU、某个版本。",
            example: "一种设置下 `#running-req: 8, #token: 35785, … gen throughput (token/s): 135.85`，另一种设置下 `#running-req: 8, #token: 29915, … accept len: 1.55, gen throughput (token/s): 61.31`。",
            fix: "找出快慢两组行之间的差异并采用快的一边：改变了的设置（CUDA graph、投机解码——`accept len` 低说明草稿被浪费）、慢的 rank 或 GPU（`nvidia-smi -q -d PERFORMANCE`）、版本。",
        },
    },
    check,
};

/// Faster half's median over the slower half's that makes a finding.
const SPLIT: f64 = 1.6;

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let decode: Vec<&SglangBatch> = f
        .sglang
        .batches
        .iter()
        .filter(|b| !b.prefill && b.gen_tps.is_some_and(|g| g > 0.0) && b.running.is_some_and(|r| r > 0.0))
        .collect();
    // The group (same running count) whose halves differ most.
    let mut best: Option<(f64, &SglangBatch, &SglangBatch, f64)> = None;
    let mut runs: Vec<f64> = decode.iter().filter_map(|b| b.running).collect();
    triage_base::sort::sort_by(&mut runs, f64::total_cmp);
    runs.dedup();
    for running in runs {
        let mut group: Vec<&SglangBatch> =
            decode.iter().copied().filter(|b| b.running == Some(running)).collect();
        if group.len() < 4 {
            continue;
        }
        // The same work: the KV cache the batch reads within 1.5× across the group.
        let tokens: Vec<f64> = group.iter().filter_map(|b| b.tokens).collect();
        let (lo, hi) = tokens.iter().fold((f64::INFINITY, 0.0f64), |(l, h), t| (l.min(*t), h.max(*t)));
        if tokens.len() != group.len() || lo <= 0.0 || hi > 1.5 * lo {
            continue;
        }
        triage_base::sort::sort_by(&mut group, |a, b| {
            a.gen_tps.unwrap_or(0.0).total_cmp(&b.gen_tps.unwrap_or(0.0))
        });
        let half = group.len() / 2;
        let median = |g: &[&SglangBatch]| g[(g.len() - 1) / 2].gen_tps.unwrap_or(0.0);
        let (slow, fast) = (median(&group[..half]), median(&group[group.len() - half..]));
        let ratio = fast / slow;
        if ratio >= SPLIT && best.as_ref().is_none_or(|b| ratio > b.0) {
            best = Some((ratio, group[0], group[group.len() - 1], running));
        }
    }
    let (ratio, slow, fast, running) = best?;
    let (s, q) = (slow.gen_tps.unwrap_or(0.0), fast.gen_tps.unwrap_or(0.0));
    let summary = lang.pick(
        format!(
            "With the same {running:.0} running requests and about the same KV cache, decode runs at {q:.0} tok/s in some batches and {s:.0} tok/s in others ({ratio:.1}× between the halves): each stream's gap between tokens grows by as much where it is slow."
        ),
        format!(
            "同样是 {running:.0} 个运行中的请求、差不多的 KV 缓存，有的批次 decode 速度 {q:.0} tok/s，有的只有 {s:.0} tok/s（两组相差 {ratio:.1} 倍）：慢的时候每条流的 token 间隔也按这个比例变长。"
        ),
    );
    Some(RULE.doc.finding(
        lang,
        summary,
        FindingBody {
            confidence: 0.6,
            evidence: vec![fast.evidence.clone(), slow.evidence.clone()],
            remediation: texts(
                lang,
                &[(
                    "take the fast side: find the setting, rank or release that differs between the fast and the slow lines (CUDA graphs, speculative decoding with a low acceptance length, a slow GPU)",
                    "采用快的一边：找出快慢两组行之间不同的设置、rank 或版本（CUDA graph、接受率低的投机解码、慢的 GPU）",
                )],
            ),
            next_checks: texts(
                lang,
                &[(
                    "paste the start-up arguments of both runs and `nvidia-smi -q -d PERFORMANCE` of every GPU",
                    "贴出两次运行的启动参数，以及每块 GPU 的 `nvidia-smi -q -d PERFORMANCE`",
                )],
            ),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    fn batch(rank: u32, running: u32, tokens: u32, tps: f64) -> String {
        format!(
            "[2025-05-13 02:32:12 DP{rank} TP{rank}] Decode batch. #running-req: {running}, #token: {tokens}, token usage: 0.27, gen throughput (token/s): {tps:.2}, #queue-req: 0\n"
        )
    }

    #[test]
    fn fires_when_the_same_batch_halves() {
        let log: String = [
            batch(0, 16, 40000, 210.5),
            batch(1, 16, 41000, 214.0),
            batch(2, 16, 40500, 208.9),
            batch(3, 16, 36000, 98.2),
            batch(4, 16, 37000, 101.7),
            batch(5, 16, 36500, 99.0),
        ]
        .concat();
        let f = case(&[("sglang.log", &log)]).snapshot(RuleId::DecodeSlowerAtSameLoad, "halves").unwrap();
        assert_eq!(f.evidence.len(), 2);
    }

    #[test]
    fn quiet_on_noise_or_growing_context() {
        // ±10 % noise.
        let noise: String =
            (0..8).map(|i| batch(i, 16, 40000 + i * 100, 200.0 + f64::from(i % 3) * 10.0)).collect();
        assert!(case(&[("sglang.log", &noise)]).snapshot(RuleId::DecodeSlowerAtSameLoad, "noise").is_none());
        // Slower because the context grew (another rule's finding): not the same work.
        let grows: String = (0..8).map(|i| batch(0, 16, 20000 * (i + 1), 300.0 / f64::from(i + 1))).collect();
        assert!(
            case(&[("sglang.log", &grows)])
                .snapshot(RuleId::DecodeSlowerAtSameLoad, "context_grows")
                .is_none()
        );
    }
}
