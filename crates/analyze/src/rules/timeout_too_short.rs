//! Rule `timeout-too-short`: the client gives up before slow answers arrive, so a TBT tail shows
//! up as client timeouts instead of slow tokens.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, q, texts};
use crate::facts::Facts;
use crate::parsers::client_config::Setting;
use crate::report::{Class, EvidenceLine, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::TimeoutTooShort,
        class: Class::Config,
        title: "The client timeout is shorter than slow answers take",
        detects: "A client timeout under 60 s (API_TIMEOUT_MS, timeout_ms, request_timeout, Codex stream_idle_timeout_ms), or one below the p99 latency the logs show; surer when request logs record timeouts or requests slower than the timeout.",
        why: "A long generation or a TBT tail outlives a short client timeout: the client cuts the request off and reports a timeout, and the slow decode that caused it never shows up as slow tokens, so the search goes to the network. Unless the server aborts the abandoned request, its KV cache stays allocated too.",
        example: "API_TIMEOUT_MS=10000 while the request log's p99 E2E is 42 s: every long answer ends as a client timeout.",
        fix: "While triaging, set the client timeout to at least 60 s (API_TIMEOUT_MS=60000, timeout_ms = 60000) and above the p99 end-to-end latency you measure; make the server abort requests whose client went away.",
        zh: RuleText {
            title: "客户端超时比慢回答实际需要的时间还短",
            detects: "客户端超时低于 60 s（API_TIMEOUT_MS、timeout_ms、request_timeout、Codex 的 stream_idle_timeout_ms），或低于日志中的 p99 延迟；如果请求日志里记录了超时，或有请求比超时还慢，就更确定。",
            why: "长生成或 TBT 长尾会超过过短的客户端超时：客户端掐断请求并报超时，而造成它的慢 decode 从来不会以“token 慢”的面目出现，排查就被带到了网络上。除非服务端 abort 这些被放弃的请求，否则它们的 KV 缓存也会一直被占着。",
            example: "API_TIMEOUT_MS=10000，而请求日志的 E2E p99 是 42 s：每个长回答最后都变成了客户端超时。",
            fix: "排查期间把客户端超时设到至少 60 s（API_TIMEOUT_MS=60000、timeout_ms = 60000），并高于实测的端到端 p99 延迟；让服务端 abort 客户端已经离开的请求。",
        },
    },
    check,
};

/// The article's floor while triaging TBT tails.
const MIN_MS: f64 = 60_000.0;

/// The slowest tail the inputs show for whole requests (E2E) or for the first token (what an
/// idle timeout waits through), with the line that shows it.
fn observed(f: &Facts, first_token: bool, lang: Lang) -> Option<(f64, String, Option<EvidenceLine>)> {
    let mut best: Option<(f64, String, Option<EvidenceLine>)> = None;
    let mut offer = |ms: Option<f64>, what: &str, e: Option<EvidenceLine>| {
        if let Some(ms) = ms.filter(|m| m.is_finite() && *m > 0.0)
            && best.as_ref().is_none_or(|b| ms > b.0)
        {
            best = Some((ms, what.to_owned(), e));
        }
    };
    let r = &f.requests;
    let slowest = r.slowest.first().and_then(|row| row.evidence.clone());
    if first_token {
        offer(q(&r.ttft_ms, 0.99), lang.pick("the request log's p99 TTFT", "请求日志的 TTFT p99"), slowest);
    } else {
        offer(q(&r.e2e_ms, 0.99), lang.pick("the request log's p99 E2E", "请求日志的 E2E p99"), slowest);
        offer(
            q(&f.tgi.total_ms, 0.99),
            lang.pick("TGI's p99 total_time", "TGI 的 total_time p99"),
            f.tgi.slowest.clone(),
        );
    }
    let key = if first_token { "ttft_ms.p99" } else { "e2e_ms.p99" };
    for b in &f.bench {
        let tool = &b.tool;
        offer(
            b.figures.get(key).copied(),
            &lang.pick(format!("the {tool} benchmark's {key}"), format!("{tool} 压测的 {key}")),
            b.lines.get(key).cloned(),
        );
    }
    best
}

/// Requests that ended in a timeout according to the logs, with an example line.
fn timeouts(f: &Facts) -> (u64, Option<EvidenceLine>) {
    let from_statuses: u64 = f
        .requests
        .statuses
        .iter()
        .filter(|(s, _)| {
            let s = s.to_ascii_lowercase();
            s.contains("timeout")
                || s.contains("timed_out")
                || s.contains("timed out")
                || s == "408"
                || s == "504"
        })
        .map(|(_, n)| n)
        .sum();
    let engine = f.vllm.timeouts.len() as u64;
    (from_statuses + engine, f.vllm.timeouts.first().cloned())
}

/// What a way of seeing the timeout found: its confidence, why (one sentence), and the lines.
type Judged = (f64, String, Vec<EvidenceLine>);

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let (confidence, summary, evidence) = configured(f, lang)
        .or_else(|| abort_age(f, lang))
        .or_else(|| client_errors(f, lang))
        .or_else(|| gin_latency(f, lang))
        .or_else(|| closed_while_loading(f, lang))?;
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!(
                "Slow answers are cut off by the client: {summary}. A TBT tail then looks like client timeouts, not slow tokens."
            ),
            format!("慢回答被客户端掐断了：{summary}。这样 TBT 长尾看起来就成了客户端超时，而不是 token 慢。"),
        ),
        FindingBody {
            confidence,
            evidence,
            remediation: texts(lang, &[
                (
                    "while triaging set the client timeout to 60 s or more (settings.json: \"API_TIMEOUT_MS\": \"60000\"; config.toml: timeout_ms = 60000)",
                    "排查期间把客户端超时设到 60 s 以上（settings.json：\"API_TIMEOUT_MS\": \"60000\"；config.toml：timeout_ms = 60000）",
                ),
                (
                    "keep the timeout above the p99 end-to-end latency you measure, and cap max_tokens instead of cutting answers off by time",
                    "超时要高于实测的端到端 p99 延迟；用 max_tokens 限制长度，而不是按时间掐断回答",
                ),
                (
                    "make sure the server aborts requests whose client disconnected (vLLM does on disconnect; custom servers must call abort), or the KV cache leaks",
                    "确保服务端会 abort 客户端已断开的请求（vLLM 在断开时会做；自研服务必须调用 abort），否则 KV 缓存会泄漏",
                ),
            ]),
            next_checks: texts(lang, &[
                (
                    "compare the client's timeout errors with the server's per-request E2E: timeouts at exactly the configured value mean the client, not the server, ended them",
                    "对比客户端的超时错误和服务端每个请求的 E2E：如果超时恰好等于配置值，说明是客户端而不是服务端结束了请求",
                ),
                (
                    "look at TBT (ITL) p99 over the same window to find what made the answers slow",
                    "看同一时间窗口的 TBT（ITL）p99，找出回答变慢的原因",
                ),
            ]),
        },
    ))
}

/// A client setting that is short (under [`MIN_MS`]) or below the tail the inputs show, the
/// surest of them: its confidence, why, and its lines.
fn configured(f: &Facts, lang: Lang) -> Option<Judged> {
    let (timed_out, timeout_line) = timeouts(f);
    let mut best: Option<Judged> = None;
    for c in &f.clients {
        let settings: [(&str, Option<&Setting<f64>>, bool); 2] = [
            (lang.pick("client timeout", "客户端超时"), c.timeout_ms.as_ref(), false),
            (lang.pick("stream idle timeout", "流式空闲超时"), c.stream_idle_timeout_ms.as_ref(), true),
        ];
        for (what, setting, idle) in settings {
            let Some(s) = setting.filter(|s| s.value > 0.0) else { continue };
            let ms = s.value;
            let short = ms < MIN_MS;
            let tail = observed(f, idle, lang).filter(|(p99, _, _)| *p99 > ms);
            if !short && tail.is_none() {
                continue;
            }
            let mut confidence: f64 = if short { 0.5 } else { 0.0 };
            let (secs, kind) = (ms / 1e3, &c.format);
            let mut reasons = vec![match lang {
                Lang::En => format!(
                    "the {what} is {secs:.0} s ({kind} config){}",
                    if short { ", under the 60 s the article asks for while triaging" } else { "" }
                ),
                Lang::Zh => format!(
                    "{what}为 {secs:.0} s（{kind} 配置）{}",
                    if short { "，低于排查期间建议的 60 s" } else { "" }
                ),
            }];
            let mut evidence = vec![s.evidence.clone()];
            if let Some((p99, source, e)) = tail {
                confidence = confidence.max(if short { 0.85 } else { 0.6 });
                let p99 = p99 / 1e3;
                reasons.push(lang.pick(
                    format!("{source} is {p99:.1} s, longer than the timeout"),
                    format!("{source}为 {p99:.1} s，比超时还长"),
                ));
                evidence.extend(e);
            }
            if timed_out > 0 {
                confidence = confidence.max(0.75);
                reasons.push(lang.pick(
                    format!("the logs record {timed_out} timed-out request(s)"),
                    format!("日志记录了 {timed_out} 个超时的请求"),
                ));
                evidence.extend(timeout_line.clone());
            } else if short && f.vllm.aborts > 0 {
                confidence = confidence.max(0.6);
                let n = f.vllm.aborts;
                reasons.push(lang.pick(
                    format!("vLLM aborted {n} request(s) whose client went away"),
                    format!("vLLM abort 了 {n} 个客户端已离开的请求"),
                ));
                evidence.extend(f.vllm.abort_lines.first().cloned());
            }
            if best.as_ref().is_none_or(|b| confidence > b.0) {
                best = Some((confidence, reasons.join(lang.pick("; ", "；")), evidence));
            }
        }
    }
    best
}

/// Without a client config: the engine aborted requests at the same age, the mark of a
/// client timeout (a person gives up at random times; a timer does not).
fn abort_age(f: &Facts, lang: Lang) -> Option<Judged> {
    let (age, evidence) = fixed_abort_age(f)?;
    let n = f.vllm.abort_after_s.len();
    Some((
        0.75,
        lang.pick(
            format!("the engine aborted {n} request(s) each about {age:.0} s after it arrived: a client timeout of ~{age:.0} s"),
            format!("引擎 abort 了 {n} 个请求，每个都在到达约 {age:.0} s 后：客户端超时约为 {age:.0} s"),
        ),
        evidence,
    ))
}

/// Without a config or abort ages: the client's own timeout errors while the server kept
/// working (it was generating, or it aborted what the client dropped).
fn client_errors(f: &Facts, lang: Lang) -> Option<Judged> {
    let (n, evidence, secs) = client_timeouts(f)?;
    let server_kept_working = f.health_evidence()
        || f.vllm.aborts > 0
        || f.signals.count_for(RULE.doc.id) > n
        || f.streams.iter().any(|s| !s.timing.token_times_ns.is_empty());
    if !server_kept_working {
        return None;
    }
    let setting = match (secs, lang) {
        (Some(s), Lang::En) => format!(" (timeout={s:.0} s)"),
        (Some(s), Lang::Zh) => format!("（timeout={s:.0} s）"),
        (None, _) => String::new(),
    };
    Some((
        0.7,
        lang.pick(
            format!("the client reports {n} timeout error(s){setting} while the server kept serving and dropped what the client abandoned"),
            format!("客户端报告了 {n} 个超时错误{setting}，而服务端仍在正常服务，并丢弃了客户端放弃的请求"),
        ),
        evidence,
    ))
}

/// Ollama: requests answered with an error after the same time each (Gin's latency) while the
/// log says the client closed the connection.
fn gin_latency(f: &Facts, lang: Lang) -> Option<Judged> {
    if f.signals.count_for(RULE.doc.id) == 0 {
        return None;
    }
    let (secs, n, evidence) = fixed_gin_latency(f)?;
    Some((
        0.75,
        lang.pick(
            format!("{n} request(s) ended in an error after {secs:.1} s each while the server logged the client closing the connection: a client timeout of ~{secs:.0} s"),
            format!("有 {n} 个请求都在 {secs:.1} s 后以错误结束，同时服务端记录了客户端关闭连接：客户端超时约为 {secs:.0} s"),
        ),
        evidence,
    ))
}

/// Ollama: the client hung up while the model was still loading (Ollama says so and aborts the
/// load); Gin logs the request closed by the client (499) after the client's timeout.
fn closed_while_loading(f: &Facts, lang: Lang) -> Option<Judged> {
    let hits = f.signals.seen("ollama-client-closed-while-loading")?;
    let mut evidence: Vec<EvidenceLine> = hits.lines.iter().take(1).cloned().collect();
    let closed = f.llama.gin_latency.iter().find(|(status, _, _)| *status == 499);
    let after = match (closed, lang) {
        (Some((_, s, _)), Lang::En) => format!(" after {s:.1} s"),
        (Some((_, s, _)), Lang::Zh) => format!("（{s:.1} s 后）"),
        (None, _) => String::new(),
    };
    evidence.extend(closed.map(|(_, _, e)| e.clone()));
    Some((
        0.8,
        lang.pick(
            format!("the client closed the connection{after} while the model was still loading, and the load was aborted: the client's timeout is shorter than a model load"),
            format!("模型还在加载时客户端就关闭了连接{after}，加载随之被中止：客户端超时比一次模型加载还短"),
        ),
        evidence,
    ))
}

/// The client's timeout errors (SDK and proxy messages this rule explains that say so): how
/// many, two lines, and the timeout they name (`timeout=30.0`, `timeout: 15`).
fn client_timeouts(f: &Facts) -> Option<(u64, Vec<EvidenceLine>, Option<f64>)> {
    let is_timeout = |s: &crate::signals::Signal| {
        s.needles.iter().any(|n| n.contains("Timeout") || n.contains("timeout") || n.contains("timed out"))
    };
    let (mut n, mut lines) = (0, Vec::new());
    for (sig, hits) in f.signals.for_rule(RULE.doc.id) {
        if is_timeout(sig) {
            n += hits.count;
            lines.extend(hits.lines.iter().cloned());
        }
    }
    if n == 0 {
        return None;
    }
    triage_base::sort::sort_by_key(&mut lines, |e| e.line);
    let secs = lines.iter().find_map(|l| {
        ["timeout=", "timeout: ", "timeout "]
            .iter()
            .find_map(|k| crate::text::number_after(&l.text, k))
            .or_else(|| crate::text::number_after(&l.text, "timed out after ").map(|ms| ms / 1e3))
    });
    lines.truncate(2);
    Some((n, lines, secs))
}

/// At least three aborts whose ages agree within 10 % (or 2 s): their median age and two lines.
fn fixed_abort_age(f: &Facts) -> Option<(f64, Vec<EvidenceLine>)> {
    let ages = &f.vllm.abort_after_s;
    if ages.len() < 3 {
        return None;
    }
    let mut sorted: Vec<f64> = ages.iter().map(|(a, _)| *a).filter(|a| *a > 0.0).collect();
    triage_base::sort::sort_f64(&mut sorted);
    let (lo, hi) = (*sorted.first()?, *sorted.last()?);
    let median = sorted[sorted.len() / 2];
    if sorted.len() < 3 || hi - lo > (0.1 * median).max(2.0) {
        return None;
    }
    Some((median, ages.iter().take(2).map(|(_, e)| e.clone()).collect()))
}

/// Gin's failed requests (status 4xx/5xx) that lasted the same time, ±3 %, 5 s or more: the
/// median, how many, and their lines (all of them: each may be an alarm of its own).
fn fixed_gin_latency(f: &Facts) -> Option<(f64, usize, Vec<EvidenceLine>)> {
    let failed: Vec<_> =
        f.llama.gin_latency.iter().filter(|(status, s, _)| *status >= 400 && *s >= 5.0).collect();
    if failed.len() < 2 {
        return None;
    }
    let mut secs: Vec<f64> = failed.iter().map(|(_, s, _)| *s).collect();
    let median = triage_base::stats::median(&mut secs)?;
    if !secs.iter().all(|s| (s - median).abs() <= 0.03 * median) {
        return None;
    }
    Some((median, failed.len(), failed.iter().map(|(_, _, e)| e.clone()).take(16).collect()))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;
    use crate::testutil::fixture;

    const SETTINGS_10S: &str = fixture!("configs/claude_settings.json");
    const ARTICLE_SETTINGS: &str = fixture!("configs/claude_settings_oneline.json");

    #[test]
    fn fires_on_a_ten_second_timeout() {
        let f = case(&[("settings.json", SETTINGS_10S)])
            .snapshot(RuleId::TimeoutTooShort, "fires_on_a_ten_second_timeout")
            .unwrap();
        assert!((0.45..0.6).contains(&f.confidence), "{}", f.confidence);
        assert!(f.summary.contains("10 s"), "{}", f.summary);
        assert_eq!(f.evidence[0].line, 6);
    }

    #[test]
    fn surer_when_requests_outlast_or_time_out() {
        let log: String = (0..50)
            .map(|i| format!("{{\"ttft_ms\": 300, \"e2e_ms\": {}, \"status\": 200}}\n", 2_000 + i * 1_000))
            .collect();
        let f = case(&[("settings.json", SETTINGS_10S), ("req.jsonl", &log)])
            .snapshot(RuleId::TimeoutTooShort, "surer_when_requests_outlast_or_time_out")
            .unwrap();
        assert!(f.confidence >= 0.85, "{}", f.confidence);
        assert!(f.summary.contains("p99 E2E"), "{}", f.summary);
        let log = "{\"ttft_ms\": 300, \"status\": \"timeout\"}\n".repeat(5);
        let f = case(&[("settings.json", SETTINGS_10S), ("req.jsonl", &log)])
            .snapshot(RuleId::TimeoutTooShort, "surer_when_requests_outlast_or_time_out_2")
            .unwrap();
        assert!(f.confidence >= 0.75, "{}", f.confidence);
    }

    #[test]
    fn fires_when_a_long_timeout_is_still_below_the_tail() {
        let bench = "============ Serving Benchmark Result ============\nMean E2EL (ms): 50000.0\nP99 E2EL (ms): 95000.0\n==================================================\n";
        let f = case(&[("settings.json", ARTICLE_SETTINGS), ("bench.txt", bench)])
            .snapshot(RuleId::TimeoutTooShort, "fires_when_a_long_timeout_is_still_below_the_tail")
            .unwrap();
        assert!((0.55..0.7).contains(&f.confidence), "{}", f.confidence);
        assert!(f.summary.contains("95.0 s"), "{}", f.summary);
    }

    #[test]
    fn quiet_at_sixty_seconds_or_without_a_timeout() {
        assert!(
            case(&[("settings.json", ARTICLE_SETTINGS)])
                .snapshot(RuleId::TimeoutTooShort, "quiet_at_sixty_seconds_or_without_a_timeout")
                .is_none()
        );
        assert!(
            case(&[("env", "export OPENAI_BASE_URL=http://127.0.0.1:8000/v1\n")])
                .snapshot(RuleId::TimeoutTooShort, "quiet_at_sixty_seconds_or_without_a_timeout_2")
                .is_none()
        );
        assert!(
            case(&[("env", "export API_TIMEOUT_MS=0\n")])
                .snapshot(RuleId::TimeoutTooShort, "quiet_at_sixty_seconds_or_without_a_timeout_3")
                .is_none()
        );
    }

    crate::rules::snapshots! {
        corpus_codex_config: [("codex_config.toml", fixture!("configs/codex_config.toml"))],
        corpus_exports: [("exports.sh", fixture!("configs/exports.sh"))],
    }
}
