//! Rule `ubatch-too-small`: the physical batch is smaller than one input.

use super::RuleId;
use super::{Lang, Rule, RuleDoc, RuleText, SignalFinding};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::UbatchTooSmall,
        class: Class::Config,
        title: "The physical batch is smaller than one input",
        detects: "llama-server's `input (N tokens) is too large to process. increase the physical batch size`.",
        why: "Embedding and reranking inputs (non-causal models) must fit in one physical batch (`--ubatch-size`, default 512). A longer input is refused however much context is free.",
        example: "`input (2048 tokens) is too large to process. increase the physical batch size (current batch size: 512)`",
        fix: "Start llama-server with `--batch-size` and `--ubatch-size` at least the longest input, or cut inputs on the client.",
        zh: RuleText {
            title: "物理批大小比单个输入还小",
            detects: "llama-server 的 `input (N tokens) is too large to process. increase the physical batch size`。",
            why: "embedding 和 rerank 的输入（非因果模型）必须一次放进一个物理批（`--ubatch-size`，默认 512）。输入更长就会被拒绝，不管空闲上下文有多少。",
            example: "日志里的一行：`input (2048 tokens) is too large to process. increase the physical batch size (current batch size: 512)`",
            fix: "启动 llama-server 时把 `--batch-size` 和 `--ubatch-size` 设成至少最长输入的长度，或者在客户端截断输入。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    RULE.doc.finding_from_signals(
        f,
        lang,
        SignalFinding {
            confidence: 0.9,
            summary: |n| {
                lang.pick(
                    format!("{n} input(s) were refused because they do not fit in one physical batch."),
                    format!("有 {n} 个输入因为放不进一个物理批而被拒绝。"),
                )
            },
            remediation: &[
                (
                    "raise `--ubatch-size` and `--batch-size` to at least the longest input",
                    "把 `--ubatch-size` 和 `--batch-size` 调到至少最长输入的长度",
                ),
                ("or split or truncate long inputs on the client", "或者在客户端拆分或截断长输入"),
            ],
            next_checks: &[(
                "look up the longest input the clients send, in tokens",
                "查出客户端发送的最长输入有多少 token",
            )],
        },
    )
}

#[cfg(test)]
mod tests {
    crate::rules::snapshots! {
        input_larger_than_ubatch: [("server.log", fixture!("incidents/llama-server/config-input-larger-than-ubatch.log"))],
        quiet_on_healthy_slot_timings: [("server.log", fixture!("incidents/llama-server/healthy-slot-timings-gpu.log"))],
    }
}
