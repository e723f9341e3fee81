//! Rule `retries-mask-failures`: client retries turn failed first attempts into "success", hiding
//! the failure rate the triage needs.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::parsers::client_config::Setting;
use crate::report::{Class, EvidenceLine, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::RetriesMaskFailures,
        class: Class::Config,
        title: "Client retries hide the real failure rate",
        detects: "A client that retries more than twice (max_retries, request_max_retries, *_MAX_RETRIES, Codex stream_max_retries); surer when the logs show failed attempts (5xx, 429, engine errors) that the client's success rate would not.",
        why: "Retries turn failures into latency: with 5 retries a request whose first four attempts fail still reports success, so the client sees 100 % success while the server fails most first attempts — exactly the failure rate needed when throughput collapses. Retries also multiply the load on a server that is already overloaded.",
        example: "max_retries = 5 on the client; the API server's access log answers 40 % of POSTs with 503, and the client reports no errors.",
        fix: "While triaging keep max_retries at 1–2 (the article: 2 instead of the default 5) and log every attempt, so first-attempt failures show; restore retries with backoff once the cause is fixed.",
        zh: RuleText {
            title: "客户端重试掩盖了真实失败率",
            detects: "客户端重试超过两次（max_retries、request_max_retries、*_MAX_RETRIES、Codex 的 stream_max_retries）；如果日志里能看到失败的尝试（5xx、429、引擎报错），而客户端的成功率却看不出来，就更确定。",
            why: "重试把失败变成了延迟：重试 5 次时，前四次都失败的请求最后仍算成功，于是客户端看到 100% 成功率，而服务端大部分首次尝试都失败了——这恰恰是吞吐崩掉时最需要的失败率。重试还会让本已过载的服务端负载成倍增加。",
            example: "客户端 max_retries = 5；API server 访问日志里 40% 的 POST 返回 503，客户端却报告没有错误。",
            fix: "排查期间把 max_retries 控制在 1–2（文中建议用 2 而不是默认的 5），并记录每一次尝试，让首次失败暴露出来；根因修好后再恢复带退避的重试。",
        },
    },
    check,
};

/// The article's ceiling while triaging.
const MAX_RETRIES: u32 = 2;

/// Failed attempts the server side shows, as reasons with an example line each.
fn failures(f: &Facts, lang: Lang) -> Vec<(String, Option<EvidenceLine>)> {
    let mut out = Vec::new();
    let r = &f.requests;
    if r.failed > 0 {
        let e =
            r.slowest.iter().chain(&r.sample).find(|row| row.failed()).and_then(|row| row.evidence.clone());
        let (failed, rows) = (r.failed, r.rows);
        out.push((
            lang.pick(
                format!("the request log has {failed} failed request(s) of {rows}"),
                format!("请求日志的 {rows} 个请求中有 {failed} 个失败"),
            ),
            e,
        ));
    }
    for (engine, access, examples) in [
        (lang.pick("API server", "API server"), &f.vllm.access, &f.vllm.access_examples),
        (
            lang.pick("SGLang's API server", "SGLang 的 API server"),
            &f.sglang.access,
            &f.sglang.access_examples,
        ),
    ] {
        let failed: Vec<(&u16, &u64)> =
            access.iter().filter(|(code, _)| **code >= 500 || **code == 429).collect();
        if let Some((code, _)) = failed.first() {
            let n: u64 = failed.iter().map(|(_, n)| **n).sum();
            let total: u64 = access.values().sum();
            out.push((
                lang.pick(
                    format!("the {engine} answered {n} of {total} requests with 5xx/429"),
                    format!("{engine} 对 {total} 个请求中的 {n} 个返回了 5xx/429"),
                ),
                examples.get(code).cloned(),
            ));
        }
    }
    let t = &f.tgi;
    if t.failures + t.overloaded > 0 {
        let (failures, overloaded) = (t.failures, t.overloaded);
        out.push((
            lang.pick(
                format!("TGI logged {failures} failed generation(s) and {overloaded} overload rejection(s)"),
                format!("TGI 记录了 {failures} 次生成失败和 {overloaded} 次过载拒绝"),
            ),
            t.errors.first().cloned(),
        ));
    }
    for b in &f.bench {
        if let Some(n) = b.figures.get("failed").filter(|n| **n > 0.0) {
            let tool = &b.tool;
            out.push((
                lang.pick(
                    format!("the {tool} benchmark counted {n:.0} failed request(s)"),
                    format!("{tool} 压测统计到 {n:.0} 个失败请求"),
                ),
                b.lines.get("failed").cloned(),
            ));
        }
    }
    if f.sglang.error_count > 0 {
        let n = f.sglang.error_count;
        out.push((
            lang.pick(format!("SGLang logged {n} error line(s)"), format!("SGLang 记录了 {n} 行错误")),
            f.sglang.errors.first().cloned(),
        ));
    }
    out
}

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    // The client that retries most.
    let (setting, what, base): (&Setting<u32>, &str, f64) = f
        .clients
        .iter()
        .flat_map(|c| {
            [
                c.max_retries.as_ref().map(|s| (s, "max_retries", 0.45_f64)),
                c.stream_max_retries.as_ref().map(|s| (s, "stream_max_retries", 0.35_f64)),
            ]
        })
        .flatten()
        .filter(|(s, _, _)| s.value > MAX_RETRIES)
        .max_by(|a, b| a.2.total_cmp(&b.2).then(a.0.value.cmp(&b.0.value)))?;
    let mut evidence = vec![setting.evidence.clone()];
    let visible = failures(f, lang);
    let times = setting.value;
    let mut summary = lang.pick(
        format!(
            "The client retries up to {times} times ({what}): a request whose first attempts fail still counts as a success, so the failure rate the client reports is too low"
        ),
        format!("客户端最多重试 {times} 次（{what}）：前几次尝试都失败的请求最后仍算成功，所以客户端报告的失败率偏低"),
    );
    let confidence = if visible.is_empty() {
        summary.push_str(lang.pick(".", "。"));
        base
    } else {
        let reasons: Vec<&str> = visible.iter().map(|(r, _)| r.as_str()).collect();
        summary.push_str(&lang.pick(
            format!(" — and failures are there: {}.", reasons.join("; ")),
            format!("——而失败确实存在：{}。", reasons.join("；")),
        ));
        evidence.extend(visible.into_iter().filter_map(|(_, e)| e).take(3));
        base + 0.25
    };
    Some(RULE.doc.finding(
        lang,
        summary,
        FindingBody {
            confidence,
            evidence,
            remediation: texts(lang, &[
                (
                    "while triaging set max_retries to 1 or 2 (config.toml: max_retries = 2 / request_max_retries = 2; OpenAI SDKs: max_retries=2)",
                    "排查期间把 max_retries 设为 1 或 2（config.toml：max_retries = 2 / request_max_retries = 2；OpenAI SDK：max_retries=2）",
                ),
                (
                    "log every attempt with its status, so first-attempt failures are counted",
                    "记录每一次尝试及其状态码，让首次失败被统计进来",
                ),
                (
                    "put retries back, with exponential backoff and jitter, once the cause is fixed",
                    "根因修好后再恢复重试，并加上指数退避和随机抖动",
                ),
            ]),
            next_checks: texts(lang, &[
                (
                    "count first-attempt failures in the gateway or API-server access log (5xx, 429) over the incident window",
                    "在网关或 API server 的访问日志里统计故障窗口内的首次失败（5xx、429）",
                ),
                (
                    "compare the client's success rate with the server's: the gap is what retries hide",
                    "对比客户端和服务端的成功率：两者的差距就是重试掩盖掉的部分",
                ),
            ]),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;
    use crate::testutil::fixture;

    const CODEX: &str = fixture!("configs/codex_config.toml");
    const ARTICLE_TOML: &str = fixture!("configs/codex_oneline.toml");
    const EXPORTS: &str = fixture!("configs/exports.sh");

    #[test]
    fn fires_on_many_retries() {
        let f = case(&[("config.toml", CODEX)])
            .snapshot(RuleId::RetriesMaskFailures, "fires_on_many_retries")
            .unwrap();
        assert!((0.4..0.5).contains(&f.confidence), "{}", f.confidence);
        assert!(f.summary.contains("up to 6 times (max_retries)"), "{}", f.summary);
        assert_eq!(f.evidence[0].line, 11);
        let f = case(&[("env", EXPORTS)])
            .snapshot(RuleId::RetriesMaskFailures, "fires_on_many_retries_2")
            .unwrap();
        assert!(f.summary.contains("up to 5 times"), "{}", f.summary);
    }

    #[test]
    fn surer_when_failures_are_visible() {
        let access = "INFO:     1.2.3.4:1 - \"POST /v1/chat/completions HTTP/1.1\" 503 Service Unavailable\n\
                      INFO:     1.2.3.4:1 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n";
        let f = case(&[("config.toml", CODEX), ("api.log", access)])
            .snapshot(RuleId::RetriesMaskFailures, "surer_when_failures_are_visible")
            .unwrap();
        assert!(f.confidence >= 0.7, "{}", f.confidence);
        assert!(f.summary.contains("1 of 2 requests"), "{}", f.summary);
        assert_eq!(f.evidence.len(), 2);
    }

    #[test]
    fn quiet_at_two_retries_or_without_a_setting() {
        assert!(
            case(&[("config.toml", ARTICLE_TOML)])
                .snapshot(RuleId::RetriesMaskFailures, "quiet_at_two_retries_or_without_a_setting")
                .is_none()
        );
        let access = "INFO:     1.2.3.4:1 - \"POST /v1/chat/completions HTTP/1.1\" 503 Service Unavailable\n";
        assert!(
            case(&[("api.log", access)])
                .snapshot(RuleId::RetriesMaskFailures, "quiet_at_two_retries_or_without_a_setting_2")
                .is_none()
        );
    }
}
