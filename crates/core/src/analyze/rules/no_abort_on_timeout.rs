//! Rule `no-abort-on-timeout`: clients time out but the engine never aborts their requests.

use super::{Rule, RuleDoc};
use crate::analyze::facts::Facts;
use crate::analyze::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: "no-abort-on-timeout",
        class: Class::Config,
        title: "Timed-out requests are not aborted",
        detects: "Request logs with client-side timeouts or cancellations (status 408/499/504, `timeout`, `cancelled`) while the engine log has no `Aborted request` lines.",
        why: "A request the client gave up on keeps generating and keeps its KV blocks unless the serving layer aborts it. Enough of them and the cache fills with work nobody will read: the slow road to a KV leak and an OOM.",
        example: "120 requests ended `status=504 timeout` in the gateway log; the vLLM log of the same hour has no `Aborted request` line.",
        fix: "On timeout or disconnect, call the engine's abort (`engine.abort(request_id)`) — the article's guarded_generate — and set a server-side max duration too.",
    },
    check,
};

fn check(f: &Facts) -> Option<Finding> {
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
    Some(RULE.doc.finding(
        if leak_too { 0.75 } else { 0.55 },
        format!(
            "{timeouts} request(s) timed out or were cancelled on the client side, and the engine log shows no `Aborted request` line{}.",
            if leak_too { "; the KV cache also stays full with nothing running" } else { "" }
        ),
        example.into_iter().collect(),
        &[
            "abort the engine request when the client times out or disconnects: engine.abort(request_id)",
            "set a server-side limit as well (max_tokens, and a request deadline in the serving layer)",
        ],
        &["count `Aborted request` lines in the engine log against client timeouts in the gateway log"],
    ))
}

#[cfg(test)]
mod tests {
    use super::super::fired;

    const VLLM: &str = "INFO 11-29 10:00:00 [loggers.py:1] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 10.0 tokens/s, Running: 8 reqs, Waiting: 0 reqs, GPU KV cache usage: 40.0%, Prefix cache hit rate: 0.0%\n";

    #[test]
    fn fires_on_timeouts_without_aborts() {
        let req = "{\"request_id\":\"a\",\"enqueue_time\":1,\"status\":\"timeout\"}\n{\"request_id\":\"b\",\"enqueue_time\":2,\"first_token_time\":2.1,\"status\":200}\n";
        let f = fired(&[("gw.jsonl", req), ("vllm.log", VLLM)], "no-abort-on-timeout").unwrap();
        assert!(f.summary.starts_with("1 request"));
    }

    #[test]
    fn quiet_when_the_engine_aborts() {
        let req = "{\"request_id\":\"a\",\"enqueue_time\":1,\"status\":\"timeout\"}\n";
        let log = format!("{VLLM}INFO 11-29 10:00:01 [async_llm.py:1] Aborted request a.\n");
        assert!(fired(&[("gw.jsonl", req), ("vllm.log", &log)], "no-abort-on-timeout").is_none());
    }
}
