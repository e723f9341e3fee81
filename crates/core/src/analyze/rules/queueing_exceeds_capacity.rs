//! Rule `queueing-exceeds-capacity`: requests wait in the queue longer than they compute.

use super::{Rule, RuleDoc, q};
use crate::analyze::facts::Facts;
use crate::analyze::report::{Class, EvidenceLine, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: "queueing-exceeds-capacity",
        class: Class::TtftHigh,
        title: "Requests queue because arrivals exceed capacity",
        detects: "Queue time makes up most of TTFT (request logs), or requests keep waiting while the batch is full (vLLM `Waiting`, `vllm:num_requests_waiting`, SGLang `#queue-req`).",
        why: "When more requests arrive than the engine can batch, the extra ones wait before prefill even starts; TTFT grows with the queue, not with the model.",
        example: "`Running: 64 reqs, Waiting: 37 reqs, GPU KV cache usage: 96%`: the batch is full and 37 requests wait their turn.",
        fix: "Add capacity (replicas, or TP/PP for a bigger KV cache), rate-limit at the gateway, or raise `--max-num-seqs` if KV usage leaves room; autoscale on the waiting-queue gauge.",
    },
    check,
};

fn check(f: &Facts) -> Option<Finding> {
    let mut evidence: Vec<EvidenceLine> = Vec::new();
    let mut reasons = Vec::new();
    let mut confidence: f64 = 0.0;

    let r = &f.requests;
    if let (Some(share), Some(q90)) = (q(&r.queue_share, 0.5), q(&r.queue_ms, 0.9))
        && r.queue_share.count() >= 5
        && share >= 0.5
        && q90 >= 200.0
    {
        confidence = confidence.max(0.55 + 0.35 * share);
        reasons.push(format!(
            "queue time is {:.0} % of TTFT at the median (queue p90 {q90:.0} ms)",
            share * 100.0
        ));
        if let Some(e) =
            r.slowest.iter().find(|row| row.queue_ms.is_some()).and_then(|row| row.evidence.clone())
        {
            evidence.push(e);
        }
    }

    let stats = &f.vllm.stats;
    let busy: Vec<_> = stats.iter().filter(|s| s.running.unwrap_or(0.0) > 0.0).collect();
    let waiting: Vec<_> = busy.iter().filter(|s| s.waiting.unwrap_or(0.0) > 0.0).collect();
    if busy.len() >= 2 && waiting.len() * 2 >= busy.len() {
        let worst =
            waiting.iter().max_by(|a, b| a.waiting.unwrap_or(0.0).total_cmp(&b.waiting.unwrap_or(0.0)))?;
        let max_waiting = worst.waiting.unwrap_or(0.0);
        if max_waiting >= 5.0 || max_waiting >= worst.running.unwrap_or(0.0) {
            confidence = confidence.max(0.75);
            reasons.push(format!(
                "requests were waiting in {} of {} busy vLLM stats lines (up to {max_waiting:.0} waiting)",
                waiting.len(),
                busy.len()
            ));
            evidence.push(worst.evidence.clone());
        }
    }

    if let Some(scrape) = f.metrics.latest()
        && let Some((waiting, series)) = scrape
            .sum("vllm:num_requests_waiting")
            .or_else(|| scrape.sum("sglang:num_queue_reqs"))
            .or_else(|| scrape.sum("tgi_queue_size"))
    {
        let running = scrape
            .sum("vllm:num_requests_running")
            .or_else(|| scrape.sum("sglang:num_running_reqs"))
            .map_or(0.0, |x| x.0);
        if waiting >= 4.0_f64.max(running * 0.25) {
            confidence = confidence.max(0.7);
            reasons.push(format!(
                "the last scrape shows {waiting:.0} requests waiting with {running:.0} running"
            ));
            evidence.push(scrape.evidence(series));
        }
    }

    let queued: Vec<_> = f.sglang.batches.iter().filter(|b| b.queue.unwrap_or(0.0) > 0.0).collect();
    if queued.len() >= 2 && queued.len() * 2 >= f.sglang.batches.len() {
        confidence = confidence.max(0.7);
        let worst = queued.iter().max_by(|a, b| a.queue.unwrap_or(0.0).total_cmp(&b.queue.unwrap_or(0.0)))?;
        reasons.push(format!(
            "SGLang reported a waiting queue in {} of {} batches (up to {:.0})",
            queued.len(),
            f.sglang.batches.len(),
            worst.queue.unwrap_or(0.0)
        ));
        evidence.push(worst.evidence.clone());
    }

    if let (Some(share), Some(total)) = (q(&f.tgi.queue_ms, 0.5), q(&f.tgi.total_ms, 0.5))
        && total > 0.0
        && share / total >= 0.5
    {
        confidence = confidence.max(0.65);
        reasons.push(format!(
            "TGI spans spend {:.0} % of the median request in the queue",
            share / total * 100.0
        ));
        evidence.extend(f.tgi.slowest.clone());
    }

    if reasons.is_empty() {
        return None;
    }
    Some(RULE.doc.finding(
        confidence,
        format!("Arrivals exceed what the engine can serve: {}.", reasons.join("; ")),
        evidence,
        &[
            "add capacity: more replicas behind the gateway, or TP/PP to grow the KV cache",
            "rate-limit or shed load at the gateway while the queue drains",
            "if KV usage stays well below 90 %, raise --max-num-seqs (e.g. 256 → 384) so more requests batch together",
            "autoscale on vllm:num_requests_waiting (or sglang:num_queue_reqs) rather than on GPU utilisation",
        ],
        &[
            "compare the arrival rate with the engine's generation throughput over the same window",
            "check GPU KV cache usage: near 100 % means the batch cannot grow, so only more GPUs help",
        ],
    ))
}

#[cfg(test)]
mod tests {
    use super::super::fired;

    #[test]
    fn fires_on_waiting_requests_in_vllm_stats() {
        let log = (0..4)
            .map(|i| format!("INFO 11-29 10:00:{i:02} [loggers.py:123] Engine 000: Avg prompt throughput: 900.0 tokens/s, Avg generation throughput: 1500.0 tokens/s, Running: 64 reqs, Waiting: {} reqs, GPU KV cache usage: 96.0%, Prefix cache hit rate: 10.0%\n", 20 + i))
            .collect::<String>();
        let f = fired(&[("vllm.log", &log)], "queueing-exceeds-capacity").unwrap();
        assert!(f.confidence >= 0.75);
        assert_eq!(f.evidence[0].line, 4);
    }

    #[test]
    fn fires_on_queue_share_in_request_logs() {
        let log: String = (0..20)
            .map(|i| format!("{{\"id\":\"r{i}\",\"enqueue_time\":{t},\"scheduled_time\":{s},\"first_token_time\":{f}}}\n", t = 1000 + i, s = 1000.0 + i as f64 + 1.5, f = 1000.0 + i as f64 + 1.8))
            .collect();
        let f = fired(&[("req.jsonl", &log)], "queueing-exceeds-capacity").unwrap();
        assert!(f.summary.contains("83 %"), "{}", f.summary);
    }

    #[test]
    fn quiet_on_a_healthy_server() {
        let log = "INFO 11-29 10:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 150.0 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.0%, Prefix cache hit rate: 0.0%\n".repeat(5);
        assert!(fired(&[("vllm.log", &log)], "queueing-exceeds-capacity").is_none());
        let log: String = (0..20)
            .map(|i| {
                format!("{{\"enqueue_time\":{i},\"scheduled_time\":{i}.01,\"first_token_time\":{i}.3}}\n")
            })
            .collect();
        assert!(fired(&[("req.jsonl", &log)], "queueing-exceeds-capacity").is_none());
    }
}
