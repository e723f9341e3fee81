//! Rule `prefix-cache-miss-reprefill`: every turn re-processes the whole prompt: the prompt cache is not reused.

use super::RuleId;
use super::{Lang, Rule, RuleDoc, RuleText, SignalFinding};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::PrefixCacheMissReprefill,
        class: Class::TtftHigh,
        title: "Every turn re-processes the whole prompt: the prompt cache is not reused",
        detects: "llama-server's `forcing full prompt re-processing due to lack of cache data` (sliding-window or hybrid/recurrent models, printed at trace level).",
        why: "A chat resends the whole conversation each turn; normally the cached prefix is reused and only the new tokens are prefilled. When the cache cannot be reused (SWA or recurrent state without checkpoints), the whole history is prefilled again and TTFT grows with the conversation.",
        example: "`slot update_slots: id  0 | task 1234 | forcing full prompt re-processing due to lack of cache data (likely due to SWA or hybrid/recurrent memory, see …)`",
        fix: "Keep context checkpoints (`--ctx-checkpoints`, or `--swa-full` for SWA models) so prefixes are reused, or shorten the history the client resends.",
        zh: RuleText {
            title: "每一轮都重新处理整段提示：提示缓存没有被复用",
            detects: "llama-server 的 `forcing full prompt re-processing due to lack of cache data`（滑动窗口或混合/循环结构的模型，在 trace 级别打印）。",
            why: "聊天每一轮都会把整段对话重新发过来；正常情况下复用已缓存的前缀，只预填新 token。缓存不能复用时（SWA 或循环状态没有检查点），整段历史都要重新预填，TTFT 随对话变长而增长。",
            example: "日志里的一行：`slot update_slots: id  0 | task 1234 | forcing full prompt re-processing due to lack of cache data (likely due to SWA or hybrid/recurrent memory, see …)`",
            fix: "保留上下文检查点（`--ctx-checkpoints`，SWA 模型用 `--swa-full`）让前缀可以复用，或者缩短客户端每次重发的历史。",
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
                lang.pick(format!("{n} request(s) had their whole prompt processed again because the cached prefix could not be reused: TTFT grows with the conversation."), format!("有 {n} 个请求因为缓存的前缀不能复用而重新处理了整段提示：TTFT 随对话变长而增长。"))
            },
            remediation: &[
                (
                    "keep context checkpoints (`--ctx-checkpoints N`) or the full SWA cache (`--swa-full`) so prefixes are reused",
                    "保留上下文检查点（`--ctx-checkpoints N`）或完整的 SWA 缓存（`--swa-full`），让前缀可以复用",
                ),
                ("trim the conversation history the client resends each turn", "减少客户端每轮重发的对话历史"),
            ],
            next_checks: &[(
                "compare `prompt eval time` of consecutive turns of one conversation in the slot timings",
                "在 slot 的计时行里对比同一对话相邻几轮的 `prompt eval time`",
            )],
        },
    )
}

#[cfg(test)]
mod tests {
    crate::rules::snapshots! {
        swa_full_reprefill_each_turn: [("server.log", fixture!("incidents/llama-server/ttft-swa-full-reprefill-each-turn.log"))],
        quiet_on_swa_checkpoint_warnings: [("server.log", fixture!("incidents/llama-server/healthy-swa-checkpoint-warnings-ansi.log"))],
    }
}
