//! Rule `kv-pressure-preemption`: the KV cache is full and the scheduler evicts requests.

use super::{Rule, RuleDoc};
use crate::analyze::facts::Facts;
use crate::analyze::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: "kv-pressure-preemption",
        class: Class::TbtTail,
        title: "KV cache pressure: requests are preempted and recomputed",
        detects: "vLLM preemption warnings (`preempted by PreemptionMode.RECOMPUTE … not enough KV cache space`), a rising `vllm:num_preemptions_total`, or KV usage pinned near 100 %.",
        why: "When the KV cache cannot hold every running sequence, the scheduler evicts some and recomputes them later: their tokens stop for the whole recompute, and the extra prefill slows everyone's steps.",
        example: "`GPU KV cache usage: 99.2%` with 40 preemption warnings in five minutes.",
        fix: "Lower --max-num-seqs, raise --gpu-memory-utilization if memory allows, enable prefix caching, store KV in fp8 (`--kv-cache-dtype fp8`), or add GPUs (TP) for a larger cache.",
    },
    check,
};

fn check(f: &Facts) -> Option<Finding> {
    let v = &f.vllm;
    let mut confidence: f64 = 0.0;
    let mut reasons = Vec::new();
    let mut evidence = Vec::new();
    if v.preemptions > 0 {
        confidence = 0.8;
        reasons.push(format!("{} preemption warning(s) in the vLLM log", v.preemptions));
        evidence.extend(v.preemption_lines.iter().take(2).cloned());
    }
    let logged_preemptions = v.stats.iter().filter_map(|s| s.preemptions).fold(0.0, f64::max);
    if logged_preemptions > 0.0 {
        confidence = confidence.max(0.75);
        reasons.push(format!("the stats lines count up to {logged_preemptions:.0} preemptions"));
        if let Some(s) = v.stats.iter().find(|s| s.preemptions.unwrap_or(0.0) > 0.0) {
            evidence.push(s.evidence.clone());
        }
    }
    let full: Vec<_> = v
        .stats
        .iter()
        .filter(|s| s.kv_usage_pct.unwrap_or(0.0) >= 95.0 && s.running.unwrap_or(0.0) > 0.0)
        .collect();
    // A full cache corroborates preemptions; on its own it is only a hint (a stalled engine also
    // holds a full cache, and then the stall, not the cache, is the incident).
    let preempted = |c: f64| c >= 0.75;
    if full.len() >= 2 {
        confidence = confidence.max(if preempted(confidence) { 0.85 } else { 0.55 });
        reasons.push(format!(
            "GPU KV cache usage was ≥ 95 % with requests running in {} stats lines",
            full.len()
        ));
        evidence.push(full[0].evidence.clone());
    }
    let delta = f.metrics.delta("vllm:num_preemptions_total");
    if let Some(d) = delta.filter(|d| *d > 0.0) {
        confidence = confidence.max(0.8);
        reasons.push(format!("vllm:num_preemptions_total rose by {d:.0} between scrapes"));
        if let Some((_, s)) = f.metrics.latest().and_then(|s| s.sum("vllm:num_preemptions_total")) {
            evidence.push(f.metrics.latest()?.evidence(s));
        }
    }
    if let Some(scrape) = f.metrics.latest() {
        let usage = scrape.max("vllm:kv_cache_usage_perc").or_else(|| scrape.max("sglang:token_usage"));
        let running = scrape
            .sum("vllm:num_requests_running")
            .or_else(|| scrape.sum("sglang:num_running_reqs"))
            .map_or(0.0, |x| x.0);
        if let Some((u, s)) = usage
            && u >= 0.95
            && running > 0.0
        {
            confidence = confidence.max(if preempted(confidence) { 0.85 } else { 0.55 });
            reasons.push(format!(
                "KV cache usage {:.0} % in the last scrape with {running:.0} running",
                u * 100.0
            ));
            evidence.push(scrape.evidence(s));
        }
    }
    let sgl_full: Vec<_> = f.sglang.batches.iter().filter(|b| b.token_usage.unwrap_or(0.0) >= 0.95).collect();
    if sgl_full.len() >= 2 {
        confidence = confidence.max(0.55);
        reasons.push(format!("SGLang token usage ≥ 0.95 in {} batches", sgl_full.len()));
        evidence.push(sgl_full[0].evidence.clone());
    }
    if reasons.is_empty() {
        return None;
    }
    Some(RULE.doc.finding(
        confidence,
        format!("The KV cache is the bottleneck: {}.", reasons.join("; ")),
        evidence,
        &[
            "lower --max-num-seqs so the running batch fits the cache",
            "raise --gpu-memory-utilization (e.g. 0.90 → 0.95) if nothing else shares the GPU",
            "--enable-prefix-caching to share common prefixes; --kv-cache-dtype fp8 to halve KV bytes per token",
            "add GPUs (tensor parallelism) to grow the cache, then re-check with `triage kv`",
        ],
        &["run `triage kv` for this model to see how many tokens the cache holds at your max_model_len"],
    ))
}

#[cfg(test)]
mod tests {
    use super::super::fired;

    #[test]
    fn fires_on_preemption_warnings() {
        let log = "WARNING 11-29 10:00:00 scheduler.py:1057] Sequence group cmpl-abc is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space.\n";
        let f = fired(&[("vllm.log", log)], "kv-pressure-preemption").unwrap();
        assert_eq!(f.confidence, 0.8);
    }

    #[test]
    fn fires_on_full_kv_in_metrics_and_quiet_when_not() {
        let m = "vllm:kv_cache_usage_perc{engine=\"0\"} 0.99\nvllm:num_requests_running{engine=\"0\"} 30\n";
        assert!(fired(&[("metrics", m)], "kv-pressure-preemption").is_some());
        let m = "vllm:kv_cache_usage_perc{engine=\"0\"} 0.40\nvllm:num_requests_running{engine=\"0\"} 30\n";
        assert!(fired(&[("metrics", m)], "kv-pressure-preemption").is_none());
    }

    #[test]
    fn a_full_cache_alone_is_a_hint_and_a_stall_outranks_it() {
        let stuck: String = (0..4)
            .map(|i| format!("INFO 11-29 10:00:{i:02} [loggers.py:1] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 48 reqs, Waiting: 30 reqs, GPU KV cache usage: 99.0%, Prefix cache hit rate: 0.0%\n"))
            .collect();
        let metrics = "vllm:kv_cache_usage_perc 0.99\nvllm:num_requests_running 48\n";
        let f = fired(&[("vllm.log", &stuck), ("metrics", metrics)], "kv-pressure-preemption").unwrap();
        assert_eq!(f.confidence, 0.55, "two views of one full cache are not a preemption");
        let r = crate::analyze::analyze(&[("vllm.log", &stuck), ("metrics", metrics)]);
        assert_eq!(r.findings[0].rule, "scheduler-stall");
    }
}
