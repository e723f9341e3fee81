//! Rule `timeout-too-short`: the client gives up before slow answers arrive, so a TBT tail shows
//! up as client timeouts instead of slow tokens.

use super::{Rule, RuleDoc, q};
use crate::analyze::facts::Facts;
use crate::analyze::parsers::client_config::Setting;
use crate::analyze::report::{Class, EvidenceLine, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: "timeout-too-short",
        class: Class::Config,
        title: "The client timeout is shorter than slow answers take",
        detects: "A client timeout under 60 s (API_TIMEOUT_MS, timeout_ms, request_timeout, Codex stream_idle_timeout_ms), or one below the p99 latency the logs show; surer when request logs record timeouts or requests slower than the timeout.",
        why: "A long generation or a TBT tail outlives a short client timeout: the client cuts the request off and reports a timeout, and the slow decode that caused it never shows up as slow tokens, so the search goes to the network. Unless the server aborts the abandoned request, its KV cache stays allocated too.",
        example: "API_TIMEOUT_MS=10000 while the request log's p99 E2E is 42 s: every long answer ends as a client timeout.",
        fix: "While triaging, set the client timeout to at least 60 s (API_TIMEOUT_MS=60000, timeout_ms = 60000) and above the p99 end-to-end latency you measure; make the server abort requests whose client went away.",
    },
    check,
};

/// The article's floor while triaging TBT tails.
const MIN_MS: f64 = 60_000.0;

/// The slowest tail the inputs show for whole requests (E2E) or for the first token (what an
/// idle timeout waits through), with the line that shows it.
fn observed(f: &Facts, first_token: bool) -> Option<(f64, String, Option<EvidenceLine>)> {
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
        offer(q(&r.ttft_ms, 0.99), "the request log's p99 TTFT", slowest);
    } else {
        offer(q(&r.e2e_ms, 0.99), "the request log's p99 E2E", slowest);
        offer(q(&f.tgi.total_ms, 0.99), "TGI's p99 total_time", f.tgi.slowest.clone());
    }
    let key = if first_token { "ttft_ms.p99" } else { "e2e_ms.p99" };
    for b in &f.bench {
        offer(
            b.figures.get(key).copied(),
            &format!("the {} benchmark's {key}", b.tool),
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

fn check(f: &Facts) -> Option<Finding> {
    let (timed_out, timeout_line) = timeouts(f);
    let mut best: Option<(f64, String, Vec<EvidenceLine>)> = None;
    for c in &f.clients {
        let settings: [(&str, Option<&Setting<f64>>, bool); 2] = [
            ("client timeout", c.timeout_ms.as_ref(), false),
            ("stream idle timeout", c.stream_idle_timeout_ms.as_ref(), true),
        ];
        for (what, setting, idle) in settings {
            let Some(s) = setting.filter(|s| s.value > 0.0) else { continue };
            let ms = s.value;
            let short = ms < MIN_MS;
            let tail = observed(f, idle).filter(|(p99, _, _)| *p99 > ms);
            if !short && tail.is_none() {
                continue;
            }
            let mut confidence: f64 = if short { 0.5 } else { 0.0 };
            let mut reasons = vec![format!(
                "the {what} is {:.0} s ({} config){}",
                ms / 1e3,
                c.format,
                if short { ", under the 60 s the article asks for while triaging" } else { "" }
            )];
            let mut evidence = vec![s.evidence.clone()];
            if let Some((p99, source, e)) = tail {
                confidence = confidence.max(if short { 0.85 } else { 0.6 });
                reasons.push(format!("{source} is {:.1} s, longer than the timeout", p99 / 1e3));
                evidence.extend(e);
            }
            if timed_out > 0 {
                confidence = confidence.max(0.75);
                reasons.push(format!("the logs record {timed_out} timed-out request(s)"));
                evidence.extend(timeout_line.clone());
            } else if short && f.vllm.aborts > 0 {
                confidence = confidence.max(0.6);
                reasons.push(format!("vLLM aborted {} request(s) whose client went away", f.vllm.aborts));
                evidence.extend(f.vllm.abort_lines.first().cloned());
            }
            if best.as_ref().is_none_or(|b| confidence > b.0) {
                best = Some((confidence, reasons.join("; "), evidence));
            }
        }
    }
    let (confidence, summary, evidence) = best?;
    Some(RULE.doc.finding(
        confidence,
        format!(
            "Slow answers are cut off by the client: {summary}. A TBT tail then looks like client timeouts, not slow tokens."
        ),
        evidence,
        &[
            "while triaging set the client timeout to 60 s or more (settings.json: \"API_TIMEOUT_MS\": \"60000\"; config.toml: timeout_ms = 60000)",
            "keep the timeout above the p99 end-to-end latency you measure, and cap max_tokens instead of cutting answers off by time",
            "make sure the server aborts requests whose client disconnected (vLLM does on disconnect; custom servers must call abort), or the KV cache leaks",
        ],
        &[
            "compare the client's timeout errors with the server's per-request E2E: timeouts at exactly the configured value mean the client, not the server, ended them",
            "look at TBT (ITL) p99 over the same window to find what made the answers slow",
        ],
    ))
}

#[cfg(test)]
mod tests {
    use super::super::fired;

    const SETTINGS_10S: &str = include_str!("../../../../../tests/data/configs/claude_settings.json");
    const ARTICLE_SETTINGS: &str =
        include_str!("../../../../../tests/data/configs/claude_settings_oneline.json");

    #[test]
    fn fires_on_a_ten_second_timeout() {
        let f = fired(&[("settings.json", SETTINGS_10S)], "timeout-too-short").unwrap();
        assert!((0.45..0.6).contains(&f.confidence), "{}", f.confidence);
        assert!(f.summary.contains("10 s"), "{}", f.summary);
        assert_eq!(f.evidence[0].line, 6);
    }

    #[test]
    fn surer_when_requests_outlast_or_time_out() {
        let log: String = (0..50)
            .map(|i| format!("{{\"ttft_ms\": 300, \"e2e_ms\": {}, \"status\": 200}}\n", 2_000 + i * 1_000))
            .collect();
        let f = fired(&[("settings.json", SETTINGS_10S), ("req.jsonl", &log)], "timeout-too-short").unwrap();
        assert!(f.confidence >= 0.85, "{}", f.confidence);
        assert!(f.summary.contains("p99 E2E"), "{}", f.summary);
        let log = "{\"ttft_ms\": 300, \"status\": \"timeout\"}\n".repeat(5);
        let f = fired(&[("settings.json", SETTINGS_10S), ("req.jsonl", &log)], "timeout-too-short").unwrap();
        assert!(f.confidence >= 0.75, "{}", f.confidence);
    }

    #[test]
    fn fires_when_a_long_timeout_is_still_below_the_tail() {
        let bench = "============ Serving Benchmark Result ============\nMean E2EL (ms): 50000.0\nP99 E2EL (ms): 95000.0\n==================================================\n";
        let f =
            fired(&[("settings.json", ARTICLE_SETTINGS), ("bench.txt", bench)], "timeout-too-short").unwrap();
        assert!((0.55..0.7).contains(&f.confidence), "{}", f.confidence);
        assert!(f.summary.contains("95.0 s"), "{}", f.summary);
    }

    #[test]
    fn quiet_at_sixty_seconds_or_without_a_timeout() {
        assert!(fired(&[("settings.json", ARTICLE_SETTINGS)], "timeout-too-short").is_none());
        assert!(
            fired(&[("env", "export OPENAI_BASE_URL=http://127.0.0.1:8000/v1\n")], "timeout-too-short")
                .is_none()
        );
        assert!(fired(&[("env", "export API_TIMEOUT_MS=0\n")], "timeout-too-short").is_none());
    }
}
