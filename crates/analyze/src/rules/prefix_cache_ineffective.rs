//! Rule `prefix-cache-ineffective`: a KV-cache offload tier that is up but saves almost no
//! prefill. Advice, not a fault: it never decides the verdict.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::PrefixCacheIneffective,
        class: Class::TtftHigh,
        title: "The prefix cache is up but hits almost nothing",
        detects: "LMCache's per-request lines (`Total tokens N, …, LMCache hit tokens: M`) adding up to a hit share under 5 % over ten or more requests.",
        why: "A KV-cache offload tier (LMCache's CPU, disk or remote store) only shortens TTFT when requests share prefixes it has stored. Prompts that differ from the first token (a timestamp or a user id at the top of the system prompt), a store too small for the working set, or a chunk size longer than the shared part leave every prompt to be prefilled in full.",
        example: "`LMCache INFO: Reqid: chatcmpl-1, Total tokens 2061, Inference Engine computed tokens: 0, LMCache hit tokens: 0, need to load: 0` on every request.",
        fix: "Put what requests share first in the prompt (system prompt, tools, documents) and what varies last; size the store for the working set; check that the chunk size (`chunk_size`, default 256 tokens) is shorter than the shared prefix.",
        zh: RuleText {
            title: "前缀缓存在运行，但几乎没有命中",
            detects: "LMCache 的逐请求日志（`Total tokens N, …, LMCache hit tokens: M`）累计起来，十个以上请求的命中比例不到 5%。",
            why: "KV 缓存卸载层（LMCache 的 CPU、磁盘或远端存储）只有在请求共享它存过的前缀时才能缩短 TTFT。提示从第一个 token 起就不同（系统提示开头放了时间戳或用户 id）、存储装不下工作集，或者分块比共享部分还长，都会让每个提示完整地重新预填。",
            example: "每个请求都打印 `LMCache INFO: Reqid: chatcmpl-1, Total tokens 2061, Inference Engine computed tokens: 0, LMCache hit tokens: 0, need to load: 0`。",
            fix: "把请求共享的内容（系统提示、工具、文档）放在提示最前面，变化的内容放在最后；按工作集大小给足存储；确认分块大小（`chunk_size`，默认 256 token）比共享前缀短。",
        },
    },
    check,
};

/// Requests it takes to judge a hit share.
const MIN_REQUESTS: u64 = 10;

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let c = &f.llama.lmcache;
    if c.requests < MIN_REQUESTS || c.total_tokens <= 0.0 {
        return None;
    }
    let share = c.hit_tokens / c.total_tokens * 100.0;
    if share >= 5.0 {
        return None;
    }
    let (n, hit, total) = (c.requests, c.hit_tokens, c.total_tokens);
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!("LMCache served {hit:.0} of {total:.0} prompt tokens ({share:.1} %) over {n} requests: the offload tier saves almost no prefill, so it cannot be what keeps TTFT down."),
            format!("LMCache 在 {n} 个请求中只提供了 {total:.0} 个提示 token 里的 {hit:.0} 个（{share:.1}%）：卸载层几乎没有省下预填，TTFT 不会因它降低。"),
        ),
        FindingBody {
            confidence: 0.6,
            evidence: c.examples.clone(),
            remediation: texts(lang, &[
                (
                    "put what requests share (system prompt, tools, documents) first in the prompt and what varies last",
                    "把请求共享的内容（系统提示、工具、文档）放在提示最前面，变化的内容放在最后",
                ),
                (
                    "size the store for the working set, and keep `chunk_size` shorter than the shared prefix",
                    "按工作集大小给足存储，并让 `chunk_size` 比共享前缀短",
                ),
            ]),
            next_checks: texts(lang, &[(
                "compare TTFT with the cache on and off for the same traffic; a real gain shows as hit tokens on repeated prefixes",
                "对同样的流量比较开启和关闭缓存时的 TTFT；真正起作用时，重复前缀的请求会有命中 token",
            )]),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    fn lines(hit: u32) -> String {
        (0..12)
            .map(|i| format!("[2025-12-01 10:14:03,518] LMCache INFO: Reqid: chatcmpl-{i}, Total tokens 2061, Inference Engine computed tokens: 0, LMCache hit tokens: {hit}, need to load: 0 (vllm_v1_adapter.py:1477)\n"))
            .collect()
    }

    #[test]
    fn fires_when_nothing_hits() {
        let f = case(&[("lmcache.log", &lines(0))])
            .snapshot(RuleId::PrefixCacheIneffective, "fires_when_nothing_hits")
            .expect("no hits");
        assert!(f.summary.contains("0 of 24732"), "{}", f.summary);
    }

    #[test]
    fn quiet_when_prefixes_are_reused_or_too_few_requests() {
        assert!(
            case(&[("lmcache.log", &lines(2048))])
                .snapshot(
                    RuleId::PrefixCacheIneffective,
                    "quiet_when_prefixes_are_reused_or_too_few_requests"
                )
                .is_none()
        );
        let few: String = lines(0).lines().take(3).map(|l| format!("{l}\n")).collect();
        assert!(
            case(&[("lmcache.log", &few)])
                .snapshot(
                    RuleId::PrefixCacheIneffective,
                    "quiet_when_prefixes_are_reused_or_too_few_requests_2"
                )
                .is_none()
        );
    }

    crate::rules::snapshots! {
        corpus_healthy_lmcache_stores_but_never_hits: [("healthy-lmcache-stores-but-never-hits.log", fixture!("incidents/torch/healthy-lmcache-stores-but-never-hits.log"))],
    }
}
