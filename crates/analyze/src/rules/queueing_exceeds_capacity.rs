//! Rule `queueing-exceeds-capacity`: requests wait in the queue longer than they compute.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, q, texts};
use crate::facts::Facts;
use crate::report::{Class, EvidenceLine, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::QueueingExceedsCapacity,
        class: Class::TtftHigh,
        title: "Requests queue because arrivals exceed capacity",
        detects: "Queue time makes up most of TTFT (request logs), or requests keep waiting while the batch is full (vLLM `Waiting`, `vllm:num_requests_waiting`, SGLang `#queue-req`).",
        why: "When more requests arrive than the engine can batch, the extra ones wait before prefill even starts; TTFT grows with the queue, not with the model.",
        example: "`Running: 64 reqs, Waiting: 37 reqs, GPU KV cache usage: 96%`: the batch is full and 37 requests wait their turn.",
        fix: "Add capacity (replicas, or TP/PP for a bigger KV cache), rate-limit at the gateway, or raise `--max-num-seqs` if KV usage leaves room; autoscale on the waiting-queue gauge.",
        zh: RuleText {
            title: "请求到达超过服务能力，在队列里排队",
            detects: "排队时间占了 TTFT 的大头（请求日志），或批已满时仍持续有请求在等待（vLLM `Waiting`、`vllm:num_requests_waiting`、SGLang `#queue-req`）。",
            why: "到达的请求多于引擎能组批处理的数量时，多出来的请求在 prefill 开始之前就得等待；TTFT 随队列增长，而不是随模型变慢。",
            example: "`Running: 64 reqs, Waiting: 37 reqs, GPU KV cache usage: 96%`：批已经满了，37 个请求在排队。",
            fix: "扩容（加副本，或用 TP/PP 换更大的 KV 缓存），在网关限流；如果 KV 使用率还有余量，调大 `--max-num-seqs`；按等待队列长度自动扩缩容。",
        },
    },
    check,
};

/// What one sign of a queue found: its confidence, why (one sentence), and the lines.
type Judged = (f64, String, Vec<EvidenceLine>);

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let signs = [
        queue_in_request_log(f, lang),
        vllm_waiting(f, lang),
        scrape_waiting(f, lang),
        sglang_queue(f, lang),
        tgi_queue(f, lang),
        rejected_when_full(f, lang),
        slots_busy(f, lang),
    ];
    let mut evidence: Vec<EvidenceLine> = Vec::new();
    let mut reasons = Vec::new();
    let mut confidence: f64 = 0.0;
    for (c, why, lines) in signs.into_iter().flatten() {
        confidence = confidence.max(c);
        reasons.push(why);
        evidence.extend(lines);
    }
    RULE.doc.finding_from_reasons(
        lang,
        ("Arrivals exceed what the engine can serve", "到达的请求超过了引擎的服务能力"),
        &reasons,
        FindingBody {
            confidence,
            evidence,
            remediation: texts(lang, &[
                (
                    "add capacity: more replicas behind the gateway, or TP/PP to grow the KV cache",
                    "扩容：在网关后面加副本，或用 TP/PP 扩大 KV 缓存",
                ),
                (
                    "rate-limit or shed load at the gateway while the queue drains",
                    "在队列消化完之前，在网关限流或丢弃部分负载",
                ),
                (
                    "if KV usage stays well below 90 %, raise --max-num-seqs (e.g. 256 → 384) so more requests batch together",
                    "如果 KV 使用率一直明显低于 90%，调大 --max-num-seqs（例如 256 → 384），让更多请求进同一批",
                ),
                (
                    "autoscale on vllm:num_requests_waiting (or sglang:num_queue_reqs) rather than on GPU utilisation",
                    "按 vllm:num_requests_waiting（或 sglang:num_queue_reqs）自动扩缩容，而不是按 GPU 利用率",
                ),
            ]),
            next_checks: texts(lang, &[
                (
                    "compare the arrival rate with the engine's generation throughput over the same window",
                    "在同一时间窗口内对比请求到达速率和引擎的生成吞吐",
                ),
                (
                    "check GPU KV cache usage: near 100 % means the batch cannot grow, so only more GPUs help",
                    "看 GPU KV 缓存使用率：接近 100% 说明批已无法再变大，只有加卡才有用",
                ),
            ]),
        },
    )
}

/// The request log: queue time is most of TTFT at the median, and the queue's p90 long.
fn queue_in_request_log(f: &Facts, lang: Lang) -> Option<Judged> {
    let mut lines: Vec<EvidenceLine> = Vec::new();
    let r = &f.requests;
    if let (Some(share), Some(q90)) = (q(&r.queue_share, 0.5), q(&r.queue_ms, 0.9))
        && r.queue_share.count() >= 5
        && share >= 0.5
        && q90 >= 200.0
    {
        let pct = share * 100.0;
        let why = lang.pick(
            format!("queue time is {pct:.0} % of TTFT at the median (queue p90 {q90:.0} ms)"),
            format!("按中位数，排队时间占 TTFT 的 {pct:.0}%（排队 p90 {q90:.0} ms）"),
        );
        if let Some(e) =
            r.slowest.iter().find(|row| row.queue_ms.is_some()).and_then(|row| row.evidence.clone())
        {
            lines.push(e);
        }
        return Some((0.55 + 0.35 * share, why, lines));
    }
    None
}

/// vLLM's stats lines: requests waiting in most of the busy intervals, many of them.
fn vllm_waiting(f: &Facts, lang: Lang) -> Option<Judged> {
    let stats = &f.vllm.stats;
    let busy: Vec<_> = stats.iter().filter(|s| s.running.unwrap_or(0.0) > 0.0).collect();
    let waiting: Vec<_> = busy.iter().filter(|s| s.waiting.unwrap_or(0.0) > 0.0).collect();
    if busy.len() >= 2 && waiting.len() * 2 >= busy.len() {
        let worst =
            waiting.iter().max_by(|a, b| a.waiting.unwrap_or(0.0).total_cmp(&b.waiting.unwrap_or(0.0)))?;
        let max_waiting = worst.waiting.unwrap_or(0.0);
        if max_waiting >= 5.0 || max_waiting >= worst.running.unwrap_or(0.0) {
            let (w, b) = (waiting.len(), busy.len());
            let why = lang.pick(
                format!("requests were waiting in {w} of {b} busy vLLM stats lines (up to {max_waiting:.0} waiting)"),
                format!("{b} 条有请求在跑的 vLLM 统计行中，有 {w} 条存在等待请求（最多 {max_waiting:.0} 个在等待）"),
            );
            return Some((0.75, why, vec![worst.evidence.clone()]));
        }
    }
    None
}

/// The last scrape: many requests waiting beside those running.
fn scrape_waiting(f: &Facts, lang: Lang) -> Option<Judged> {
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
            let why = lang.pick(
                format!("the last scrape shows {waiting:.0} requests waiting with {running:.0} running"),
                format!("最后一次抓取显示 {waiting:.0} 个请求在等待、{running:.0} 个在运行"),
            );
            return Some((0.7, why, vec![scrape.evidence(series)]));
        }
    }
    None
}

/// SGLang's batch lines: a waiting queue in most of them.
fn sglang_queue(f: &Facts, lang: Lang) -> Option<Judged> {
    let queued: Vec<_> = f.sglang.batches.iter().filter(|b| b.queue.unwrap_or(0.0) > 0.0).collect();
    if queued.len() >= 2 && queued.len() * 2 >= f.sglang.batches.len() {
        let worst = queued.iter().max_by(|a, b| a.queue.unwrap_or(0.0).total_cmp(&b.queue.unwrap_or(0.0)))?;
        let (n, all, most) = (queued.len(), f.sglang.batches.len(), worst.queue.unwrap_or(0.0));
        let why = lang.pick(
            format!("SGLang reported a waiting queue in {n} of {all} batches (up to {most:.0})"),
            format!("SGLang 的 {all} 个 batch 中有 {n} 个报告了等待队列（最多 {most:.0} 个）"),
        );
        return Some((0.7, why, vec![worst.evidence.clone()]));
    }
    None
}

/// TGI's spans: the median request spends most of its time in the queue.
fn tgi_queue(f: &Facts, lang: Lang) -> Option<Judged> {
    if let (Some(share), Some(total)) = (q(&f.tgi.queue_ms, 0.5), q(&f.tgi.total_ms, 0.5))
        && total > 0.0
        && share / total >= 0.5
    {
        let pct = share / total * 100.0;
        let why = lang.pick(
            format!("TGI spans spend {pct:.0} % of the median request in the queue"),
            format!("TGI span 显示，中位数请求有 {pct:.0}% 的时间花在排队上"),
        );
        return Some((0.65, why, f.tgi.slowest.clone().into_iter().collect()));
    }
    None
}

/// The server turned requests away because its queue was full (TGI's `Model is overloaded`
/// 429, SGLang's `The request queue is full`, Ray Serve dropping for backpressure).
fn rejected_when_full(f: &Facts, lang: Lang) -> Option<Judged> {
    let mut lines: Vec<EvidenceLine> = Vec::new();
    const REJECTIONS: &[&str] = &[
        "tgi-model-overloaded",
        "sglang-the-request-queue-is-full",
        "ray-request-dropped-due-to-backpressure-num",
        "ollama-server-busy",
    ];
    let hits: Vec<_> = REJECTIONS.iter().filter_map(|id| f.signals.seen(id)).collect();
    let mut rejected: Vec<EvidenceLine> = hits.iter().flat_map(|h| h.lines.iter().cloned()).take(2).collect();
    triage_base::sort::sort_by_key(&mut rejected, |e| e.line);
    let n_rejected = f.tgi.overloaded.max(hits.iter().map(|h| h.count).sum());
    if !rejected.is_empty() || f.tgi.overloaded > 0 {
        let why = lang.pick(
            format!("the server rejected {n_rejected} request(s) because its queue was full"),
            format!("服务端因为队列已满拒绝了 {n_rejected} 个请求"),
        );
        lines.extend(rejected);
        // The access lines of the rejected requests (Ollama answers them 503 through Gin).
        lines.extend(f.llama.gin_examples.get(&503).into_iter().flatten().take(2).cloned());
        return Some((0.7, why, lines));
    }
    None
}

/// llama-server: every slot busy, requests deferred until one frees.
fn slots_busy(f: &Facts, lang: Lang) -> Option<Judged> {
    if let Some(d) = f.llama.deferred.as_ref().filter(|d| d.value > 0.0) {
        let busy = f.llama.processing.map(|p| format!(" ({p:.0} processing)")).unwrap_or_default();
        let why = lang.pick(
            format!("llama-server holds {:.0} request(s) deferred until a slot frees{busy}", d.value),
            format!("llama-server 有 {:.0} 个请求被推迟，等待空闲的 slot{busy}", d.value),
        );
        return Some((0.6, why, vec![d.evidence.clone()]));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    #[test]
    fn fires_on_waiting_requests_in_vllm_stats() {
        let log = (0..4)
            .map(|i| format!("INFO 11-29 10:00:{i:02} [loggers.py:123] Engine 000: Avg prompt throughput: 900.0 tokens/s, Avg generation throughput: 1500.0 tokens/s, Running: 64 reqs, Waiting: {} reqs, GPU KV cache usage: 96.0%, Prefix cache hit rate: 10.0%\n", 20 + i))
            .collect::<String>();
        let f = case(&[("vllm.log", &log)])
            .snapshot(RuleId::QueueingExceedsCapacity, "fires_on_waiting_requests_in_vllm_stats")
            .unwrap();
        assert!(f.confidence >= 0.75);
        assert_eq!(f.evidence[0].line, 4);
    }

    #[test]
    fn fires_on_queue_share_in_request_logs() {
        let log: String = (0..20)
            .map(|i| format!("{{\"id\":\"r{i}\",\"enqueue_time\":{t},\"scheduled_time\":{s},\"first_token_time\":{f}}}\n", t = 1000 + i, s = 1000.0 + i as f64 + 1.5, f = 1000.0 + i as f64 + 1.8))
            .collect();
        let f = case(&[("req.jsonl", &log)])
            .snapshot(RuleId::QueueingExceedsCapacity, "fires_on_queue_share_in_request_logs")
            .unwrap();
        assert!(f.summary.contains("83 %"), "{}", f.summary);
        // The same number in the Chinese summary.
        let zh = case(&[("req.jsonl", &log)])
            .fired_in(super::super::Lang::Zh, RuleId::QueueingExceedsCapacity)
            .unwrap();
        assert!(zh.summary.contains("排队时间占 TTFT 的 83%"), "{}", zh.summary);
    }

    #[test]
    fn quiet_on_a_healthy_server() {
        let log = "INFO 11-29 10:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 150.0 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.0%, Prefix cache hit rate: 0.0%\n".repeat(5);
        assert!(
            case(&[("vllm.log", &log)])
                .snapshot(RuleId::QueueingExceedsCapacity, "quiet_on_a_healthy_server")
                .is_none()
        );
        let log: String = (0..20)
            .map(|i| {
                format!("{{\"enqueue_time\":{i},\"scheduled_time\":{i}.01,\"first_token_time\":{i}.3}}\n")
            })
            .collect();
        assert!(
            case(&[("req.jsonl", &log)])
                .snapshot(RuleId::QueueingExceedsCapacity, "quiet_on_a_healthy_server_2")
                .is_none()
        );
    }

    crate::rules::snapshots! {
        corpus_ttft_requests_deferred_metrics: [("ttft-requests-deferred-metrics.prom", fixture!("incidents/llama-server/ttft-requests-deferred-metrics.prom"))],
        corpus_ttft_server_busy_max_queue: [("ttft-server-busy-max-queue.log", fixture!("incidents/ollama/ttft-server-busy-max-queue.log"))],
    }
}
