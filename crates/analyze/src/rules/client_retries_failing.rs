//! Rule `client-retries-failing`: an SDK keeps retrying requests that cannot succeed.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::ClientRetriesFailing,
        class: Class::Config,
        title: "The client retries requests that cannot reach the server",
        detects: "The OpenAI / Anthropic Python SDKs' `Retrying request to /chat/completions in 0.8 seconds` lines together with connection failures (`APIConnectionError`, `Connection error.`, connection refused, name resolution).",
        why: "The SDKs retry connection errors, 408, 409, 429 and 5xx twice by default with growing back-off. Against a wrong base URL, host or port every attempt fails the same way: the user sees seconds of delay and then an error, while the server never saw the request.",
        example: "`INFO:openai._base_client:Retrying request to /chat/completions in 0.432 seconds` followed by `openai.APIConnectionError: Connection error.`",
        fix: "Check the base URL the client really uses (scheme, host, port, the `/v1` suffix) with `curl $BASE/v1/models` from the same host; set `max_retries` low while diagnosing so failures show at once.",
        zh: RuleText {
            title: "客户端在重试根本连不上服务端的请求",
            detects: "OpenAI / Anthropic Python SDK 的 `Retrying request to /chat/completions in 0.8 seconds` 日志，伴随连接失败（`APIConnectionError`、`Connection error.`、连接被拒绝、域名解析失败）。",
            why: "SDK 默认对连接错误、408、409、429 和 5xx 重试两次，并逐渐拉长退避时间。如果 base URL、主机或端口写错了，每次尝试都会以同样方式失败：用户看到的是几秒钟的延迟然后报错，而服务端根本没收到请求。",
            example: "`INFO:openai._base_client:Retrying request to /chat/completions in 0.432 seconds`，随后是 `openai.APIConnectionError: Connection error.`",
            fix: "在同一台机器上用 `curl $BASE/v1/models` 检查客户端实际使用的 base URL（协议、主机、端口、`/v1` 后缀）；排查期间把 `max_retries` 调低，让失败立刻暴露出来。",
        },
    },
    check,
};

/// Words of a connection failure in an SDK's or HTTP library's messages.
const CONNECTION: &[&str] = &[
    "APIConnectionError",
    "Connection error",
    "Connection refused",
    "ConnectError",
    "Name or service not known",
    "nodename nor servname",
    "Temporary failure in name resolution",
    "getaddrinfo failed",
    "Failed to connect",
];

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    // Retries: the SDKs' `Retrying request to …` (openai 1.x, anthropic) / `Retrying request in
    // …` (openai 3.x) lines. Connection failures: the lines of this rule's messages that name one.
    let mut retry_lines = Vec::new();
    let mut n = 0;
    for (sig, hits) in f.signals.for_rule(RULE.doc.id) {
        if sig.needles.iter().any(|x| x.starts_with("Retrying request")) {
            n += hits.count;
            retry_lines.extend(hits.lines.iter().cloned());
        }
    }
    let connection: Vec<_> = f
        .signals
        .lines_for(RULE.doc.id, 16)
        .into_iter()
        .filter(|l| CONNECTION.iter().any(|w| l.text.contains(w)))
        .collect();
    // Without retry lines, repeated connection failures say the same (a proxy retrying quietly).
    if connection.is_empty() || n == 0 && connection.len() < 2 {
        return None;
    }
    let attempts = if n > 0 { n } else { connection.len() as u64 };
    let n = attempts;
    let mut evidence: Vec<_> = retry_lines.into_iter().take(2).collect();
    evidence.extend(connection.into_iter().take(2));
    triage_base::sort::sort_by_key(&mut evidence, |e| e.line);
    evidence.dedup();
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!("The client retried {n} time(s) and could not connect: the base URL, host or port it uses does not reach the server."),
            format!("客户端重试了 {n} 次仍然连不上：它使用的 base URL、主机或端口到不了服务端。"),
        ),
        FindingBody {
            confidence: 0.85,
            evidence,
            remediation: texts(lang, &[
                (
                    "fix the client's base URL (scheme, host, port, `/v1`) to the one `curl $BASE/v1/models` answers from the client's host",
                    "把客户端的 base URL（协议、主机、端口、`/v1`）改成在客户端所在机器上 `curl $BASE/v1/models` 能通的那个",
                ),
                (
                    "set max_retries=0 while diagnosing so the first failure shows at once",
                    "排查期间设置 max_retries=0，让第一次失败立刻显示出来",
                ),
            ]),
            next_checks: texts(lang, &[(
                "from the client's host: `curl -sv $BASE/v1/models` — refused (wrong port), no route (network policy), DNS error (wrong host)",
                "在客户端所在机器上执行 `curl -sv $BASE/v1/models`——连接被拒绝（端口错）、无路由（网络策略）、DNS 错误（主机名错）",
            )]),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    #[test]
    fn fires_on_retries_that_cannot_connect() {
        let log = "INFO:openai._base_client:Retrying request to /chat/completions in 0.432 seconds\nINFO:openai._base_client:Retrying request to /chat/completions in 0.891 seconds\nopenai.APIConnectionError: Connection error.\n";
        let f = case(&[("client.log", log)])
            .snapshot(RuleId::ClientRetriesFailing, "fires_on_retries_that_cannot_connect")
            .unwrap();
        assert_eq!(f.evidence.len(), 3);
    }

    #[test]
    fn retries_of_a_busy_server_are_not_its() {
        let log = "INFO:openai._base_client:Retrying request to /chat/completions in 0.432 seconds\nopenai.RateLimitError: Error code: 429\n";
        assert!(
            case(&[("client.log", log)])
                .snapshot(RuleId::ClientRetriesFailing, "retries_of_a_busy_server_are_not_its")
                .is_none()
        );
    }

    crate::rules::snapshots! {
        corpus_config_anthropic_retry_wrong_port: [("config-anthropic-retry-wrong-port.log", fixture!("incidents/clients/config-anthropic-retry-wrong-port.log"))],
        corpus_config_litellm_cooldown_conn_error: [("config-litellm-cooldown-conn-error.log", fixture!("incidents/clients/config-litellm-cooldown-conn-error.log"))],
    }
}
