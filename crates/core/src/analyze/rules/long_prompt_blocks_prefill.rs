//! Rule `long-prompt-blocks-prefill`: a few very long prompts stall everyone's first token.

use super::{Rule, RuleDoc, q};
use crate::analyze::facts::Facts;
use crate::analyze::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: "long-prompt-blocks-prefill",
        class: Class::TtftHigh,
        title: "Long prompts block the prefill window",
        detects: "Prompt lengths with a heavy tail (p99 far above the mean) together with a TTFT tail, in per-request logs.",
        why: "Prefill is compute-bound and, without chunking, not preemptible: one 8k-token prompt occupies the step and every request that arrived with it waits. The mean barely moves; p99 TTFT explodes.",
        example: "Mean prompt 600 tokens, p99 9,000; p50 TTFT 280 ms, p99 TTFT 3.1 s; the slowest requests are the long prompts and their neighbours.",
        fix: "Enable chunked prefill (`--enable-chunked-prefill --max-num-batched-tokens 8192`), cap the input length, or send long prompts to their own pool (prefill/decode disaggregation).",
    },
    check,
};

fn check(f: &Facts) -> Option<Finding> {
    let r = &f.requests;
    let (mean, p99) = (r.prompt_tokens.mean()?, q(&r.prompt_tokens, 0.99)?);
    let (t50, t99) = (q(&r.ttft_ms, 0.5)?, q(&r.ttft_ms, 0.99)?);
    if r.prompt_tokens.count() < 10 || mean <= 0.0 || p99 < 4.0 * mean || p99 < 2000.0 || t99 < 3.0 * t50 {
        return None;
    }
    // Are the slowest requests the long ones?
    let long = r.prompt_tokens.quantile(0.9).unwrap_or(p99);
    let slow_and_long = r.slowest.iter().filter(|row| row.prompt_tokens.is_some_and(|p| p >= long)).count();
    let mut confidence = 0.6;
    if slow_and_long > 0 {
        confidence += 0.25;
    }
    let mut evidence: Vec<_> = r
        .slowest
        .iter()
        .filter(|row| row.prompt_tokens.is_some_and(|p| p >= long))
        .filter_map(|row| row.evidence.clone())
        .take(3)
        .collect();
    if evidence.is_empty() {
        evidence = r.slowest.iter().filter_map(|row| row.evidence.clone()).take(2).collect();
    }
    Some(RULE.doc.finding(
        confidence,
        format!(
            "Prompt length p99 is {p99:.0} tokens against a mean of {mean:.0} ({:.1}×), and TTFT p99 is {t99:.0} ms against p50 {t50:.0} ms; {slow_and_long} of the {} slowest requests carry prompts in the top 10 % (≥ {long:.0} tokens).",
            p99 / mean,
            r.slowest.len()
        ),
        evidence,
        &[
            "vLLM: --enable-chunked-prefill --max-num-batched-tokens 8192 (smaller budgets favour TTFT of short requests, larger favour throughput)",
            "cap the input length at the gateway (reject or truncate prompts above the agreed limit)",
            "route long-context traffic to a separate pool, or disaggregate prefill and decode",
        ],
        &["plot TTFT against prompt length per request: a rising band confirms it", "check whether chunked prefill is on (vLLM logs `non-default args` at start-up)"],
    ))
}

#[cfg(test)]
mod tests {
    use super::super::fired;

    fn log(long_every: usize) -> String {
        (0..200)
            .map(|i| {
                let long = long_every > 0 && i % long_every == 0;
                let prompt = if long { 12_000 } else { 400 };
                let ttft = if long { 2.5 } else if long_every > 0 && i % long_every == 1 { 2.0 } else { 0.2 };
                format!("{{\"request_id\":\"r{i}\",\"enqueue_time\":{i},\"first_token_time\":{},\"prompt_tokens\":{prompt}}}\n", i as f64 + ttft)
            })
            .collect()
    }

    #[test]
    fn fires_when_long_prompts_are_the_slow_ones() {
        let f = fired(&[("req.jsonl", &log(20))], "long-prompt-blocks-prefill").unwrap();
        assert!(f.confidence >= 0.8, "{f:?}");
        assert!(f.evidence[0].text.contains("12000"));
    }

    #[test]
    fn quiet_without_long_prompts() {
        assert!(fired(&[("req.jsonl", &log(0))], "long-prompt-blocks-prefill").is_none());
    }
}
