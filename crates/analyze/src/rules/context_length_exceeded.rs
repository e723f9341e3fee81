//! Rule `context-length-exceeded`: requests are longer than the model's context.

use super::RuleId;
use super::{Lang, Rule, RuleDoc, RuleText, SignalFinding};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::ContextLengthExceeded,
        class: Class::Config,
        title: "Requests are longer than the model's context",
        detects: "400 answers and engine messages saying a request does not fit the context: vLLM's `This model's maximum context length is N tokens. However, you requested M tokens`, SGLang's `The input (N tokens) is longer than the model's context length`, TGI's `inputs tokens + max_new_tokens must be <=`.",
        why: "The server refuses a request whose prompt plus requested output exceeds its `max_model_len`; the client sees a 400 for every such request. Either the client sends more than it should (whole histories, unbounded `max_tokens`), or the server was started with a shorter context than the workload needs.",
        example: "`This model's maximum context length is 8192 tokens. However, you requested 9216 tokens (8192 in the messages, 1024 in the completion).`",
        fix: "Trim the prompt or lower `max_tokens` on the client (count tokens with the model's tokenizer), or start the server with a larger `--max-model-len` if the GPU's KV cache can hold it (`triage kv` says).",
        zh: RuleText {
            title: "请求超出了模型的上下文长度",
            detects: "服务端返回 400、引擎打印请求放不进上下文：vLLM 的 `This model's maximum context length is N tokens. However, you requested M tokens`，SGLang 的 `The input (N tokens) is longer than the model's context length`，TGI 的 `inputs tokens + max_new_tokens must be <=`。",
            why: "prompt 加上请求的输出长度超过 `max_model_len` 时，服务端会拒绝请求；客户端对每个这样的请求都收到 400。要么客户端发得太多（整段历史、不设上限的 `max_tokens`），要么服务端启动时设的上下文比业务需要的短。",
            example: "vLLM 返回：`This model's maximum context length is 8192 tokens. However, you requested 9216 tokens (8192 in the messages, 1024 in the completion).`",
            fix: "在客户端裁剪 prompt 或调低 `max_tokens`（用模型自己的 tokenizer 计数），或者在 GPU 的 KV 缓存放得下的前提下（`triage kv` 可以算）用更大的 `--max-model-len` 启动服务。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    // One or two refusals are one client's mistake; many are how the service is used.
    let many = f.signals.count_for(RULE.doc.id) >= 3;
    RULE.doc.finding_from_signals(
        f,
        lang,
        SignalFinding {
            confidence: if many { 0.85 } else { 0.5 },
            summary: |n| {
                lang.pick(format!("{n} request(s) were refused because prompt plus output is longer than the model's context."), format!("有 {n} 个请求因为 prompt 加输出超过模型上下文长度而被拒绝。"))
            },
            remediation: &[
                (
                    "cap the client's prompt (drop old turns, summarise) and its max_tokens so prompt + max_tokens stays under the server's max_model_len",
                    "限制客户端的 prompt（丢弃旧的对话轮次或做摘要）和 max_tokens，使 prompt + max_tokens 始终小于服务端的 max_model_len",
                ),
                (
                    "or raise --max-model-len on the server if the KV cache can hold it (check with `triage kv`)",
                    "或者在 KV 缓存放得下的前提下调大服务端的 --max-model-len（用 `triage kv` 检查）",
                ),
            ],
            next_checks: &[(
                "the distribution of prompt lengths the client sends (a request log with prompt_tokens) against max_model_len",
                "客户端发送的 prompt 长度分布（带 prompt_tokens 的请求日志），与 max_model_len 对比",
            )],
        },
    )
}

#[cfg(test)]
mod tests {
    crate::rules::snapshots! {
        context_shift_per_slot: [("server.log", fixture!("incidents/llama-server/config-context-shift-per-slot-ctx.log"))],
        request_exceeds_context_400: [("server.log", fixture!("incidents/llama-server/config-request-exceeds-context-400.log"))],
        quiet_on_healthy_slot_timings: [("server.log", fixture!("incidents/llama-server/healthy-slot-timings-gpu.log"))],
    }
}
