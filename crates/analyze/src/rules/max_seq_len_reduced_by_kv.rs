//! Rule `max-seq-len-reduced-by-kv`: the engine shrank the maximum sequence length to fit its KV cache.

use super::RuleId;
use super::{Lang, Rule, RuleDoc, RuleText, SignalFinding};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::MaxSeqLenReducedByKv,
        class: Class::Config,
        title: "The engine shrank the maximum sequence length to fit its KV cache",
        detects: "TensorRT-LLM's `Adjusted max_seq_len to N`, `Attention window size … exceeds upper bound … Reducing to N`, `maxAttentionWindow and maxSequenceLen are too large … reduced to N` and `maxInputLen is reduced to N`.",
        why: "When the KV-cache pool cannot hold one sequence of the built or configured length, TensorRT-LLM quietly lowers the limit instead of failing. The server starts, but long prompts are rejected or truncated later, far from the cause.",
        example: "`[TRT-LLM] [W] Adjusted max_seq_len to 41216`",
        fix: "Give the KV cache more memory (`free_gpu_memory_fraction`, fewer `max_num_tokens`, a smaller or quantised model, more GPUs), or set `max_seq_len` to what fits and tell clients the real limit.",
        zh: RuleText {
            title: "引擎为了放下 KV 缓存缩小了最大序列长度",
            detects: "TensorRT-LLM 的 `Adjusted max_seq_len to N`、`Attention window size … exceeds upper bound … Reducing to N`、`maxAttentionWindow and maxSequenceLen are too large … reduced to N` 和 `maxInputLen is reduced to N`。",
            why: "KV 缓存池放不下一条按构建或配置长度的序列时，TensorRT-LLM 不报错，而是悄悄降低上限。服务能启动，但长 prompt 之后会被拒绝或截断，离原因很远。",
            example: "日志里的一行：`[TRT-LLM] [W] Adjusted max_seq_len to 41216`",
            fix: "给 KV 缓存更多显存（`free_gpu_memory_fraction`、更小的 `max_num_tokens`、更小或量化的模型、更多 GPU），或者把 `max_seq_len` 设成放得下的值，并告诉客户端真实上限。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    RULE.doc.finding_from_signals(
        f,
        lang,
        SignalFinding {
            confidence: 0.8,
            summary: |n| {
                lang.pick(format!("{n} line(s) show the engine lowering its maximum sequence length to what the KV cache holds: longer requests will be refused or cut."), format!("有 {n} 行显示引擎把最大序列长度降到了 KV 缓存能放下的值：更长的请求会被拒绝或截断。"))
            },
            remediation: &[
                (
                    "give the KV cache more memory: raise `free_gpu_memory_fraction`, lower `max_num_tokens`, or add GPUs (TP)",
                    "给 KV 缓存更多显存：调高 `free_gpu_memory_fraction`、调低 `max_num_tokens`，或增加 GPU（TP）",
                ),
                (
                    "or set `max_seq_len` to what fits and publish that limit to clients",
                    "或者把 `max_seq_len` 设成放得下的值，并把这个上限告诉客户端",
                ),
            ],
            next_checks: &[(
                "compare the reduced length with the longest prompts clients send",
                "把缩小后的长度和客户端发送的最长 prompt 对比",
            )],
        },
    )
}

#[cfg(test)]
mod tests {
    crate::rules::snapshots! {
        trtllm_adjusted_max_seq_len: [("trtllm.log", fixture!("incidents/tensorrt-llm/config-max-seq-len-reduced-by-kv.log"))],
        quiet_on_the_configured_limits: [("trtllm.log", "[03/04/2025-10:00:01] [TRT-LLM] [I] max_seq_len=131072, max_num_tokens=8192\n")],
    }
}
