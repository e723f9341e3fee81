//! Rule `no-abort-on-timeout`: clients time out but the engine never aborts their requests.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::NoAbortOnTimeout,
        class: Class::Config,
        title: "Timed-out requests are not aborted",
        detects: "Request logs with client-side timeouts or cancellations (status 408/499/504, `timeout`, `cancelled`) while the engine log has no `Aborted request` lines.",
        why: "A request the client gave up on keeps generating and keeps its KV blocks unless the serving layer aborts it. Enough of them and the cache fills with work nobody will read: the slow road to a KV leak and an OOM.",
        example: "120 requests ended `status=504 timeout` in the gateway log; the vLLM log of the same hour has no `Aborted request` line.",
        fix: "On timeout or disconnect, call the engine's abort (`engine.abort(request_id)`) — the article's guarded_generate — and set a server-side max duration too.",
        zh: RuleText {
            title: "超时的请求没有被 abort",
            detects: "请求日志里有客户端侧的超时或取消（状态码 408/499/504、`timeout`、`cancelled`），而引擎日志里没有任何 `Aborted request` 行。",
            why: "客户端已经放弃的请求，除非服务层 abort 它，否则会继续生成并一直占着它的 KV 块。这样的请求一多，缓存就被没人会看的工作填满：这是通往 KV 泄漏和 OOM 的慢性路径。",
            example: "网关日志里有 120 个请求以 `status=504 timeout` 结束；同一小时的 vLLM 日志里一行 `Aborted request` 都没有。",
            fix: "超时或断开时调用引擎的 abort（`engine.abort(request_id)`）——即文中的 guarded_generate——同时在服务端也设置最长处理时间。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let timeouts: u64 = f
        .requests
        .statuses
        .iter()
        .filter(|(s, _)| {
            let l = s.to_ascii_lowercase();
            matches!(l.as_str(), "408" | "499" | "504")
                || l.contains("timeout")
                || l.contains("timed_out")
                || l.contains("cancel")
        })
        .map(|(_, n)| n)
        .sum();
    if timeouts == 0 || f.vllm.stats.is_empty() && f.vllm.startup_lines.is_empty() || f.vllm.aborts > 0 {
        return None;
    }
    let example = f
        .requests
        .slowest
        .iter()
        .chain(&f.requests.sample)
        .find(|r| r.failed())
        .and_then(|r| r.evidence.clone());
    let leak_too =
        f.vllm.stats.iter().any(|s| s.running == Some(0.0) && s.kv_usage_pct.unwrap_or(0.0) >= 50.0);
    let summary = match lang {
        Lang::En => format!(
            "{timeouts} request(s) timed out or were cancelled on the client side, and the engine log shows no `Aborted request` line{}.",
            if leak_too { "; the KV cache also stays full with nothing running" } else { "" }
        ),
        Lang::Zh => format!(
            "有 {timeouts} 个请求在客户端侧超时或被取消，而引擎日志里没有任何 `Aborted request` 行{}。",
            if leak_too { "；同时没有请求在运行，KV 缓存却一直是满的" } else { "" }
        ),
    };
    Some(RULE.doc.finding(
        lang,
        summary,
        FindingBody {
            confidence: if leak_too { 0.75 } else { 0.55 },
            evidence: example.into_iter().collect(),
            remediation: texts(lang, &[
                (
                    "abort the engine request when the client times out or disconnects: engine.abort(request_id)",
                    "客户端超时或断开时 abort 引擎里的请求：engine.abort(request_id)",
                ),
                (
                    "set a server-side limit as well (max_tokens, and a request deadline in the serving layer)",
                    "服务端也要设上限（max_tokens，以及服务层的请求截止时间）",
                ),
            ]),
            next_checks: texts(lang, &[(
                "count `Aborted request` lines in the engine log against client timeouts in the gateway log",
                "对比引擎日志里 `Aborted request` 的行数和网关日志里客户端超时的次数",
            )]),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    const VLLM: &str = "INFO 11-29 10:00:00 [loggers.py:1] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 10.0 tokens/s, Running: 8 reqs, Waiting: 0 reqs, GPU KV cache usage: 40.0%, Prefix cache hit rate: 0.0%\n";

    #[test]
    fn fires_on_timeouts_without_aborts() {
        let req = "{\"request_id\":\"a\",\"enqueue_time\":1,\"status\":\"timeout\"}\n{\"request_id\":\"b\",\"enqueue_time\":2,\"first_token_time\":2.1,\"status\":200}\n";
        let f = case(&[("gw.jsonl", req), ("vllm.log", VLLM)])
            .snapshot(RuleId::NoAbortOnTimeout, "fires_on_timeouts_without_aborts")
            .unwrap();
        assert!(f.summary.starts_with("1 request"));
    }

    #[test]
    fn quiet_when_the_engine_aborts() {
        let req = "{\"request_id\":\"a\",\"enqueue_time\":1,\"status\":\"timeout\"}\n";
        let log = format!("{VLLM}INFO 11-29 10:00:01 [async_llm.py:1] Aborted request a.\n");
        assert!(
            case(&[("gw.jsonl", req), ("vllm.log", &log)])
                .snapshot(RuleId::NoAbortOnTimeout, "quiet_when_the_engine_aborts")
                .is_none()
        );
    }
}
