//! Rule `retries-mask-failures`: client retries turn failed first attempts into "success", hiding
//! the failure rate the triage needs.

use super::{Rule, RuleDoc};
use crate::analyze::facts::Facts;
use crate::analyze::parsers::client_config::Setting;
use crate::analyze::report::{Class, EvidenceLine, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: "retries-mask-failures",
        class: Class::Config,
        title: "Client retries hide the real failure rate",
        detects: "A client that retries more than twice (max_retries, request_max_retries, *_MAX_RETRIES, Codex stream_max_retries); surer when the logs show failed attempts (5xx, 429, engine errors) that the client's success rate would not.",
        why: "Retries turn failures into latency: with 5 retries a request whose first four attempts fail still reports success, so the client sees 100 % success while the server fails most first attempts — exactly the failure rate needed when throughput collapses. Retries also multiply the load on a server that is already overloaded.",
        example: "max_retries = 5 on the client; the API server's access log answers 40 % of POSTs with 503, and the client reports no errors.",
        fix: "While triaging keep max_retries at 1–2 (the article: 2 instead of the default 5) and log every attempt, so first-attempt failures show; restore retries with backoff once the cause is fixed.",
    },
    check,
};

/// The article's ceiling while triaging.
const MAX_RETRIES: u32 = 2;

/// Failed attempts the server side shows, as reasons with an example line each.
fn failures(f: &Facts) -> Vec<(String, Option<EvidenceLine>)> {
    let mut out = Vec::new();
    let r = &f.requests;
    if r.failed > 0 {
        let e =
            r.slowest.iter().chain(&r.sample).find(|row| row.failed()).and_then(|row| row.evidence.clone());
        out.push((format!("the request log has {} failed request(s) of {}", r.failed, r.rows), e));
    }
    for (engine, access, examples) in [
        ("API server", &f.vllm.access, &f.vllm.access_examples),
        ("SGLang's API server", &f.sglang.access, &f.sglang.access_examples),
    ] {
        let failed: Vec<(&u16, &u64)> =
            access.iter().filter(|(code, _)| **code >= 500 || **code == 429).collect();
        if let Some((code, _)) = failed.first() {
            let n: u64 = failed.iter().map(|(_, n)| **n).sum();
            let total: u64 = access.values().sum();
            out.push((
                format!("the {engine} answered {n} of {total} requests with 5xx/429"),
                examples.get(code).cloned(),
            ));
        }
    }
    let t = &f.tgi;
    if t.failures + t.overloaded > 0 {
        out.push((
            format!(
                "TGI logged {} failed generation(s) and {} overload rejection(s)",
                t.failures, t.overloaded
            ),
            t.errors.first().cloned(),
        ));
    }
    for b in &f.bench {
        if let Some(n) = b.figures.get("failed").filter(|n| **n > 0.0) {
            out.push((
                format!("the {} benchmark counted {n:.0} failed request(s)", b.tool),
                b.lines.get("failed").cloned(),
            ));
        }
    }
    if f.sglang.error_count > 0 {
        out.push((
            format!("SGLang logged {} error line(s)", f.sglang.error_count),
            f.sglang.errors.first().cloned(),
        ));
    }
    out
}

fn check(f: &Facts) -> Option<Finding> {
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
    let visible = failures(f);
    let mut summary = format!(
        "The client retries up to {} times ({what}): a request whose first attempts fail still counts as a success, so the failure rate the client reports is too low",
        setting.value
    );
    let confidence = if visible.is_empty() {
        summary.push('.');
        base
    } else {
        let reasons: Vec<&str> = visible.iter().map(|(r, _)| r.as_str()).collect();
        summary.push_str(&format!(" — and failures are there: {}.", reasons.join("; ")));
        evidence.extend(visible.into_iter().filter_map(|(_, e)| e).take(3));
        base + 0.25
    };
    Some(RULE.doc.finding(
        confidence,
        summary,
        evidence,
        &[
            "while triaging set max_retries to 1 or 2 (config.toml: max_retries = 2 / request_max_retries = 2; OpenAI SDKs: max_retries=2)",
            "log every attempt with its status, so first-attempt failures are counted",
            "put retries back, with exponential backoff and jitter, once the cause is fixed",
        ],
        &[
            "count first-attempt failures in the gateway or API-server access log (5xx, 429) over the incident window",
            "compare the client's success rate with the server's: the gap is what retries hide",
        ],
    ))
}

#[cfg(test)]
mod tests {
    use super::super::fired;

    const CODEX: &str = include_str!("../../../../../tests/data/configs/codex_config.toml");
    const ARTICLE_TOML: &str = include_str!("../../../../../tests/data/configs/codex_oneline.toml");
    const EXPORTS: &str = include_str!("../../../../../tests/data/configs/exports.sh");

    #[test]
    fn fires_on_many_retries() {
        let f = fired(&[("config.toml", CODEX)], "retries-mask-failures").unwrap();
        assert!((0.4..0.5).contains(&f.confidence), "{}", f.confidence);
        assert!(f.summary.contains("up to 6 times (max_retries)"), "{}", f.summary);
        assert_eq!(f.evidence[0].line, 11);
        let f = fired(&[("env", EXPORTS)], "retries-mask-failures").unwrap();
        assert!(f.summary.contains("up to 5 times"), "{}", f.summary);
    }

    #[test]
    fn surer_when_failures_are_visible() {
        let access = "INFO:     1.2.3.4:1 - \"POST /v1/chat/completions HTTP/1.1\" 503 Service Unavailable\n\
                      INFO:     1.2.3.4:1 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n";
        let f = fired(&[("config.toml", CODEX), ("api.log", access)], "retries-mask-failures").unwrap();
        assert!(f.confidence >= 0.7, "{}", f.confidence);
        assert!(f.summary.contains("1 of 2 requests"), "{}", f.summary);
        assert_eq!(f.evidence.len(), 2);
    }

    #[test]
    fn quiet_at_two_retries_or_without_a_setting() {
        assert!(fired(&[("config.toml", ARTICLE_TOML)], "retries-mask-failures").is_none());
        let access = "INFO:     1.2.3.4:1 - \"POST /v1/chat/completions HTTP/1.1\" 503 Service Unavailable\n";
        assert!(fired(&[("api.log", access)], "retries-mask-failures").is_none());
    }
}
