//! Rule `missing-timestamps`: request logs lack the four timestamps that split TTFT.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::MissingTimestamps,
        class: Class::Config,
        title: "Request logs lack enqueue / first-token / last-token / finish timestamps",
        detects: "Rows of a request log without one of the four timestamps (and no logged duration that stands in for it).",
        why: "Without enqueue and first-token times you cannot tell queueing from prefill; without last-token and finish you cannot tell decode from post-processing. Every TTFT incident then starts with guesswork.",
        example: "`{\"request_id\": \"a1\", \"latency_ms\": 3120}`: one number, no way to split it.",
        fix: "Log enqueue_time, first_token_time, last_token_time and finish_time (unix seconds with milliseconds) for every request, with its request_id and prompt/output token counts.",
        zh: RuleText {
            title: "请求日志缺少入队 / 首 token / 末 token / 完成时间戳",
            detects: "请求日志中有行缺少这四个时间戳之一（且没有可以替代它的时长字段）。",
            why: "没有入队时间和首 token 时间，就分不清是排队慢还是 prefill 慢；没有末 token 时间和完成时间，就分不清是 decode 慢还是后处理慢。于是每次 TTFT 故障都只能从猜开始。",
            example: "`{\"request_id\": \"a1\", \"latency_ms\": 3120}`：只有一个数，没法拆分。",
            fix: "每个请求都记录 enqueue_time、first_token_time、last_token_time 和 finish_time（unix 秒，精确到毫秒），以及 request_id 和 prompt/输出 token 数。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let r = &f.requests;
    if r.rows == 0 {
        return None;
    }
    let m = r.missing;
    let parts = [
        ("enqueue", m.enqueue),
        ("first_token", m.first_token),
        ("last_token", m.last_token),
        ("finish", m.finish),
    ];
    let lacking: Vec<String> = parts
        .iter()
        .filter(|(_, n)| *n * 5 > r.rows)
        .map(|(name, n)| {
            let pct = *n as f64 * 100.0 / r.rows as f64;
            lang.pick(format!("{name}_time in {pct:.0} % of rows"), format!("{pct:.0}% 的行缺少 {name}_time"))
        })
        .collect();
    if lacking.is_empty() {
        return None;
    }
    let splits_ttft = m.enqueue * 5 > r.rows || m.first_token * 5 > r.rows;
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!("The request log lacks {}.", lacking.join(", ")),
            format!("请求日志缺少时间戳：{}。", lacking.join("，")),
        ),
        FindingBody {
            confidence: if splits_ttft { 0.5 } else { 0.35 },
            evidence: r.missing_example.clone().into_iter().collect(),
            remediation: texts(lang, &[(
                "log enqueue_time, first_token_time, last_token_time and finish_time for every request (unix seconds, ms precision), plus request_id, prompt_tokens and output_tokens",
                "每个请求都记录 enqueue_time、first_token_time、last_token_time 和 finish_time（unix 秒，毫秒精度），外加 request_id、prompt_tokens 和 output_tokens",
            )]),
            next_checks: texts(lang, &[(
                "a request with finish but no first_token never reached prefill: look at the gateway or the queue",
                "有 finish 却没有 first_token 的请求根本没进 prefill：问题在网关或排队层",
            )]),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    #[test]
    fn fires_when_timestamps_are_missing() {
        let log = "{\"request_id\":\"a\",\"latency_ms\":3120}\n".repeat(3);
        let f = case(&[("req.jsonl", &log)])
            .snapshot(RuleId::MissingTimestamps, "fires_when_timestamps_are_missing")
            .unwrap();
        assert!(f.summary.contains("first_token_time in 100 %"), "{}", f.summary);
        assert_eq!(f.evidence[0].line, 1);
    }

    #[test]
    fn quiet_when_all_four_are_there() {
        let log =
            "{\"enqueue_time\":1,\"first_token_time\":1.2,\"last_token_time\":2,\"finish_time\":2.01}\n"
                .repeat(3);
        assert!(
            case(&[("req.jsonl", &log)])
                .snapshot(RuleId::MissingTimestamps, "quiet_when_all_four_are_there")
                .is_none()
        );
    }

    #[test]
    fn failed_requests_may_lack_tokens() {
        let ok = "{\"enqueue_time\":1,\"first_token_time\":1.2,\"last_token_time\":2,\"finish_time\":2.01,\"status\":200}\n";
        let timed_out = "{\"enqueue_time\":1,\"finish_time\":61,\"status\":\"timeout\"}\n";
        let log = format!("{}{}", ok.repeat(3), timed_out.repeat(3));
        assert!(
            case(&[("req.jsonl", &log)])
                .snapshot(RuleId::MissingTimestamps, "failed_requests_may_lack_tokens")
                .is_none()
        );
    }

    crate::rules::snapshots! {
        corpus_healthy_openai_client_debug: [("healthy-openai-client-debug.log", fixture!("incidents/clients/healthy-openai-client-debug.log"))],
    }
}
