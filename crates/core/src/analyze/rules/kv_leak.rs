//! Rule `kv-leak`: KV cache stays full while nothing runs — requests were never released.

use super::{Rule, RuleDoc};
use crate::analyze::facts::Facts;
use crate::analyze::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: "kv-leak",
        class: Class::ThroughputZero,
        title: "KV leak: the cache stays full while nothing runs",
        detects: "KV cache usage stays high while the engine reports no running requests (vLLM stats or metrics), optionally with GPU memory full and utilisation 0.",
        why: "Requests that ended on the client side (timeouts, disconnects) but were never aborted keep their KV blocks. The cache fills with dead requests, new ones cannot be scheduled, and throughput falls to zero while the GPU idles.",
        example: "`Running: 0 reqs, Waiting: 35 reqs, GPU KV cache usage: 97.0%` for minutes; nvidia-smi shows 138 GB used at 0 % utilisation.",
        fix: "Abort requests on client timeout or disconnect (`engine.abort(request_id)`), enforce hard timeouts and max_tokens, add a watchdog on KV usage versus running requests, and restart the worker to recover now.",
    },
    check,
};

fn check(f: &Facts) -> Option<Finding> {
    let mut confidence: f64 = 0.0;
    let mut reasons = Vec::new();
    let mut evidence = Vec::new();
    let leaked: Vec<_> = f
        .vllm
        .stats
        .iter()
        .filter(|s| s.running == Some(0.0) && s.kv_usage_pct.unwrap_or(0.0) >= 50.0)
        .collect();
    if leaked.len() >= 2 {
        confidence = 0.8;
        let worst = leaked.iter().map(|s| s.kv_usage_pct.unwrap_or(0.0)).fold(0.0, f64::max);
        reasons.push(format!(
            "{} stats lines show 0 running requests with KV usage up to {worst:.1} %",
            leaked.len()
        ));
        evidence.push(leaked[0].evidence.clone());
    }
    if let Some(scrape) = f.metrics.latest()
        && let (Some((usage, s)), Some((running, _))) =
            (scrape.max("vllm:kv_cache_usage_perc"), scrape.sum("vllm:num_requests_running"))
        && running == 0.0
        && usage >= 0.5
    {
        confidence = confidence.max(0.75);
        reasons
            .push(format!("the last scrape shows KV usage {:.0} % with 0 running requests", usage * 100.0));
        evidence.push(scrape.evidence(s));
    }
    // GPU side: memory held, no compute. Normal for an idle vLLM (it preallocates), so on its own
    // this is only a hint; with the engine's view it confirms.
    let idle_full: Vec<_> = f
        .gpus
        .readings
        .iter()
        .filter(|g| {
            g.util_pct == Some(0.0)
                && matches!((g.mem_used_mib, g.mem_total_mib), (Some(u), Some(t)) if t > 0.0 && u / t >= 0.85)
        })
        .collect();
    if !idle_full.is_empty() {
        if confidence > 0.0 {
            confidence = 0.9;
        } else {
            confidence = 0.3;
        }
        let g = idle_full[0];
        reasons.push(format!(
            "GPU {} has {:.0} of {:.0} MiB in use at 0 % utilisation",
            g.index,
            g.mem_used_mib.unwrap_or(0.0),
            g.mem_total_mib.unwrap_or(0.0)
        ));
        evidence.push(g.evidence.clone());
    }
    if reasons.is_empty() {
        return None;
    }
    let hint = if confidence < 0.5 {
        " On its own this is also what an idle vLLM looks like (it preallocates gpu_memory_utilization of the memory): confirm with the engine's running-request count and KV usage."
    } else {
        ""
    };
    Some(RULE.doc.finding(
        confidence,
        format!("Memory is held by requests that no longer run: {}.{hint}", reasons.join("; ")),
        evidence,
        &[
            "restart the worker to free the cache now",
            "abort on client timeout or disconnect: engine.abort(request_id) in the serving layer (the article's guarded_generate)",
            "enforce a hard per-request timeout and max_tokens",
            "alert when KV usage stays above 50 % while running requests are 0 (a watchdog on memory versus active requests)",
        ],
        &["compare vllm:kv_cache_usage_perc with vllm:num_requests_running over the last hour", "count client timeouts versus `Aborted request` lines in the engine log"],
    ))
}

#[cfg(test)]
mod tests {
    use super::super::fired;

    #[test]
    fn fires_on_full_cache_with_nothing_running() {
        let log = "INFO 11-29 10:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 35 reqs, GPU KV cache usage: 97.0%, Prefix cache hit rate: 0.0%\n".repeat(3);
        let f = fired(&[("vllm.log", &log)], "kv-leak").unwrap();
        assert_eq!(f.confidence, 0.8);
    }

    #[test]
    fn quiet_on_an_idle_empty_cache() {
        let log = "INFO 11-29 10:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%\n".repeat(3);
        assert!(fired(&[("vllm.log", &log)], "kv-leak").is_none());
    }
}
