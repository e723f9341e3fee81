//! Rule `long-sequence-in-batch`: over-long sequences in the decode batch stretch everyone's gaps.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, q, texts};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::LongSequenceInBatch,
        class: Class::TbtTail,
        title: "Over-long sequences in the batch stretch decode steps",
        detects: "A TPOT tail (p99 ≫ p50) in request logs together with sequence lengths whose maximum is far above the mean.",
        why: "Each decode step reads the KV cache of every sequence in the batch; a few very long sequences make every step slower, so all requests in that batch see longer gaps between tokens.",
        example: "Mean sequence 1,200 tokens, max 60,000; TPOT p50 18 ms, p99 70 ms.",
        fix: "Group requests by length (separate pools or routes for long context), cap max_tokens and input length, or lower --max-num-seqs on the long-context pool.",
        zh: RuleText {
            title: "批内混入超长序列，拉长了每个 decode 步",
            detects: "请求日志中 TPOT 有长尾（p99 ≫ p50），同时序列长度的最大值远高于均值。",
            why: "每个 decode 步都要读取批内所有序列的 KV 缓存；少数超长序列会让每一步都变慢，同批所有请求的逐 token 间隔都被拉长。",
            example: "序列长度均值 1,200 token、最大 60,000；TPOT p50 18 ms、p99 70 ms。",
            fix: "按长度分组调度（长上下文走单独的实例池或路由），限制 max_tokens 和输入长度，或在长上下文实例池上调低 --max-num-seqs。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let r = &f.requests;
    let (t50, t99) = (q(&r.tpot_ms, 0.5)?, q(&r.tpot_ms, 0.99)?);
    if r.tpot_ms.count() < 10 || t99 < 2.0 * t50 {
        return None;
    }
    let len = |row: &crate::parsers::request_log::Row| match (row.prompt_tokens, row.output_tokens) {
        (None, None) => None,
        (p, o) => Some(p.unwrap_or(0.0) + o.unwrap_or(0.0)),
    };
    let lens: Vec<f64> = r.sample.iter().filter_map(len).collect();
    if lens.len() < 10 {
        return None;
    }
    let mean = lens.iter().sum::<f64>() / lens.len() as f64;
    let max = lens.iter().copied().fold(0.0, f64::max);
    if mean <= 0.0 || max < 8.0 * mean {
        return None;
    }
    let longest = r.sample.iter().max_by(|a, b| len(a).unwrap_or(0.0).total_cmp(&len(b).unwrap_or(0.0)))?;
    let evidence: Vec<_> = r
        .slowest
        .iter()
        .chain(std::iter::once(longest))
        .filter_map(|row| row.evidence.clone())
        .take(2)
        .collect();
    let ratio = max / mean;
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!(
                "TPOT p99 is {t99:.1} ms against p50 {t50:.1} ms, and sequence length (prompt + output) reaches {max:.0} tokens against a mean of {mean:.0} ({ratio:.0}×) in the sampled requests."
            ),
            format!(
                "TPOT p99 为 {t99:.1} ms，p50 为 {t50:.1} ms；抽样请求中序列长度（prompt + 输出）最长达 {max:.0} token，均值为 {mean:.0}（{ratio:.0}×）。"
            ),
        ),
        FindingBody {
            confidence: 0.6,
            evidence,
            remediation: texts(lang, &[
                (
                    "route long-context requests to a separate pool so short requests batch with short ones",
                    "把长上下文请求路由到单独的实例池，让短请求和短请求一起组批",
                ),
                ("cap max_tokens and the input length at the gateway", "在网关限制 max_tokens 和输入长度"),
                (
                    "on the long-context pool, lower --max-num-seqs so fewer long sequences share a step",
                    "在长上下文实例池上调低 --max-num-seqs，让同一步里的长序列少一些",
                ),
            ]),
            next_checks: texts(lang, &[
                ("compare ITL per request against its sequence length", "逐个请求对比 ITL 与它的序列长度"),
                (
                    "check one GPU's SM clock against its peers (slow-gpu) before blaming the batch",
                    "在归咎于批之前，先对比各卡的 SM 时钟（slow-gpu），排除单卡降频",
                ),
            ]),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    fn log(with_long: bool) -> String {
        (0..100)
            .map(|i| {
                let long = with_long && i % 25 == 0;
                let (prompt, out, decode) = if long { (60_000, 500, 40.0) } else { (800, 200, 3.6) };
                format!("{{\"enqueue_time\":{i},\"first_token_time\":{i}.2,\"last_token_time\":{},\"prompt_tokens\":{prompt},\"output_tokens\":{out}}}\n", i as f64 + 0.2 + decode)
            })
            .collect()
    }

    #[test]
    fn fires_with_long_sequences_and_a_tpot_tail() {
        let f = case(&[("req.jsonl", &log(true))])
            .snapshot(RuleId::LongSequenceInBatch, "fires_with_long_sequences_and_a_tpot_tail")
            .unwrap();
        assert!(f.summary.contains("60500"), "{}", f.summary);
    }

    #[test]
    fn quiet_without_them() {
        assert!(
            case(&[("req.jsonl", &log(false))])
                .snapshot(RuleId::LongSequenceInBatch, "quiet_without_them")
                .is_none()
        );
    }
}
