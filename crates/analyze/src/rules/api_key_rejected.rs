//! Rule `api-key-rejected`: the server rejects the client's API key.

use super::RuleId;
use super::{Lang, Rule, RuleDoc, RuleText, SignalFinding};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::ApiKeyRejected,
        class: Class::Config,
        title: "The server rejects the client's API key",
        detects: "llama-server's `unauthorized: Invalid API Key` (started with `--api-key`).",
        why: "A server started with an API key answers 401 to every request without the same key: throughput is zero while the engine is idle and healthy.",
        example: "`srv    operator(): unauthorized: Invalid API Key`",
        fix: "Send the key the server was started with (`Authorization: Bearer …`), or check which of several keys the client reads from its environment.",
        zh: RuleText {
            title: "服务端拒绝了客户端的 API key",
            detects: "llama-server 的 `unauthorized: Invalid API Key`（用 `--api-key` 启动时）。",
            why: "设置了 API key 的服务，对没有带同一个 key 的请求一律返回 401：吞吐为零，而引擎空闲、运行正常。",
            example: "日志里的一行：`srv    operator(): unauthorized: Invalid API Key`",
            fix: "发送服务启动时用的 key（`Authorization: Bearer …`），或者检查客户端从环境变量里读到的是哪一个 key。",
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
                    format!("{n} request(s) were refused: the API key the client sends is not the server's."),
                    format!("有 {n} 个请求被拒绝：客户端发送的 API key 不是服务端的。"),
                )
            },
            remediation: &[(
                "send the key the server was started with (`--api-key`) in `Authorization: Bearer`",
                "在 `Authorization: Bearer` 里发送服务启动时用的 key（`--api-key`）",
            )],
            next_checks: &[(
                "print which key variable the client reads (`OPENAI_API_KEY`, a config file) without printing the key",
                "打印客户端读取的是哪个 key 变量（`OPENAI_API_KEY`、配置文件），不要打印 key 本身",
            )],
        },
    )
}

#[cfg(test)]
mod tests {
    crate::rules::snapshots! {
        invalid_api_key_401: [("server.log", fixture!("incidents/llama-server/config-invalid-api-key-401.log"))],
        unauthorized_line: [("server.log", "srv    operator(): unauthorized: Invalid API Key\n")],
        quiet_on_a_served_request: [("server.log", "srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 200\n")],
        quiet_on_healthy_slot_timings: [("server.log", fixture!("incidents/llama-server/healthy-slot-timings-gpu.log"))],
    }
}
