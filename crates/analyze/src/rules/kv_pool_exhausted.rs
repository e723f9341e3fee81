//! Rule `kv-pool-exhausted`: the engine's KV pool ran out while serving.

use super::RuleId;
use super::{Lang, Rule, RuleDoc, RuleText, SignalFinding};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::KvPoolExhausted,
        class: Class::Oom,
        title: "The engine's KV pool ran out while serving",
        detects: "SGLang's run-time pool errors: `Decode out of memory. Try to lower your batch size`, `Prefill out of memory`, `alloc_req_slots runs out of memory`, `Out of memory. Please set a smaller number for --max-running-requests`.",
        why: "SGLang admits requests against the KV pool it sized at start-up and retracts some when decoding outgrows it. When even retraction cannot free enough (long outputs, too many running requests) the scheduler raises and the server stops.",
        example: "`RuntimeError: Decode out of memory. Try to lower your batch size.`",
        fix: "Lower `--max-running-requests`, give the pool more memory (`--mem-fraction-static`), cap output lengths, and keep retraction enabled; restart the server.",
        zh: RuleText {
            title: "引擎的 KV 池在服务过程中耗尽",
            detects: "SGLang 运行时的池错误：`Decode out of memory. Try to lower your batch size`、`Prefill out of memory`、`alloc_req_slots runs out of memory`、`Out of memory. Please set a smaller number for --max-running-requests`。",
            why: "SGLang 按启动时确定的 KV 池大小接纳请求，解码超出时会撤回一部分请求。如果撤回也腾不出足够空间（输出很长、同时运行的请求太多），调度器就会抛错，服务停止。",
            example: "SGLang 调度器报错：`RuntimeError: Decode out of memory. Try to lower your batch size.`",
            fix: "调低 `--max-running-requests`，给 KV 池更多显存（`--mem-fraction-static`），限制输出长度，保持撤回机制开启；然后重启服务。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    RULE.doc.finding_from_signals(
        f,
        lang,
        SignalFinding {
            confidence: 0.85,
            summary: |n| {
                lang.pick(format!("The engine's KV pool ran out while serving ({n} line(s)): it could not hold the running requests and stopped."), format!("引擎的 KV 池在服务中耗尽（{n} 行）：放不下正在运行的请求，服务停止了。"))
            },
            remediation: &[
                (
                    "lower --max-running-requests so fewer sequences share the pool",
                    "调低 --max-running-requests，让更少的序列共享 KV 池",
                ),
                (
                    "raise --mem-fraction-static if the GPU has room, or cap max_tokens on the clients",
                    "如果 GPU 还有空间就调高 --mem-fraction-static，或者限制客户端的 max_tokens",
                ),
            ],
            next_checks: &[(
                "the decode batch lines before the failure: #running-req and token usage show how full the pool was",
                "失败前的 decode batch 日志：#running-req 和 token usage 显示池有多满",
            )],
        },
    )
}

#[cfg(test)]
mod tests {
    crate::rules::snapshots! {
        llama_kv_exhausted_decode: [("server.log", fixture!("incidents/llama-server/oom-kv-exhausted-decode-context-exceeded.log"))],
        sglang_decode_oom_crash: [("sglang.log", fixture!("incidents/sglang/oom-046-decode-oom-crash.log"))],
        quiet_on_healthy_slot_timings: [("server.log", fixture!("incidents/llama-server/healthy-slot-timings-gpu.log"))],
    }
}
