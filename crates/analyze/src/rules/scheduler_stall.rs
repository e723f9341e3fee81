//! Rule `scheduler-stall`: requests sit in the batch but nothing is generated.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::report::{Class, EvidenceLine, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::SchedulerStall,
        class: Class::ThroughputZero,
        title: "Scheduler stall: running requests, zero tokens",
        detects: "Consecutive vLLM stats lines (or two scrapes) with requests running and generation throughput at zero.",
        why: "Running requests that produce nothing mean the engine loop is stuck: a scheduler deadlock, a request that hogs the batch, or a hung collective. Everything behind it waits; throughput is zero although the process is alive.",
        example: "Three stats lines in a row: `Avg generation throughput: 0.0 tokens/s, Running: 48 reqs, Waiting: 210 reqs`.",
        fix: "Give every request a hard timeout and a max_tokens cap, abort stuck requests, restart the worker to recover, and capture a stack dump (py-spy dump) before restarting to find the culprit.",
        zh: RuleText {
            title: "调度卡死：有请求在运行，却不出 token",
            detects: "连续多条 vLLM 统计行（或两次抓取）显示有请求在运行，但生成吞吐为零。",
            why: "有运行中的请求却什么都不产出，说明引擎主循环卡住了：调度死锁、某个请求霸占了批，或集合通信挂起。后面的请求全在等；进程还活着，吞吐却是零。",
            example: "连续三条统计行：`Avg generation throughput: 0.0 tokens/s, Running: 48 reqs, Waiting: 210 reqs`。",
            fix: "给每个请求设硬超时和 max_tokens 上限，abort 卡住的请求，重启 worker 恢复服务；重启前先抓一份调用栈（py-spy dump）找出元凶。",
        },
    },
    check,
};

/// What one sign of a stall found: its confidence, why (one sentence), and the lines.
type Judged = (f64, String, Vec<EvidenceLine>);

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let stuck = stuck_stats(f, lang);
    // A queue that only grows says the same as stuck lines, less surely: read when they are not.
    let piling = if stuck.is_none() { queue_piles_up(f, lang) } else { None };
    let signs = [stuck, scrape_stalled(f, lang), piling, watchdog(f, lang)];
    let mut confidence: f64 = 0.0;
    let mut reasons = Vec::new();
    let mut evidence = Vec::new();
    for (c, why, lines) in signs.into_iter().flatten() {
        confidence = confidence.max(c);
        reasons.push(why);
        evidence.extend(lines);
    }
    RULE.doc.finding_from_reasons(
        lang,
        ("The engine holds requests but generates nothing", "引擎占着请求却什么都不生成"),
        &reasons,
        FindingBody {
            confidence,
            evidence,
            remediation: texts(lang, &[
                (
                    "capture a stack dump of the engine (py-spy dump --pid PID) before restarting, then restart the worker",
                    "重启前先抓引擎的调用栈（py-spy dump --pid PID），然后重启 worker",
                ),
                (
                    "give every request a hard timeout and a max_tokens cap, and abort it on timeout so its KV is freed",
                    "给每个请求设硬超时和 max_tokens 上限，超时即 abort，释放它的 KV",
                ),
                (
                    "watch for the pattern with an alert: running > 0 and generation throughput = 0 for 60 s",
                    "为这种模式加告警：running > 0 且生成吞吐 = 0 持续 60 s",
                ),
            ]),
            next_checks: texts(lang, &[
                (
                    "look for NCCL watchdog timeouts or an engine error just before the stall",
                    "查看卡死前是否有 NCCL watchdog 超时或引擎报错",
                ),
                (
                    "find the oldest running request: one abnormal request can hog the batch",
                    "找出运行时间最长的请求：一个异常请求就可能霸占整个批",
                ),
            ]),
        },
    )
}

/// vLLM's stats lines: the longest run of lines with requests running and nothing generated,
/// three or more.
fn stuck_stats(f: &Facts, lang: Lang) -> Option<Judged> {
    let mut run = Vec::new();
    let mut best: Vec<&crate::parsers::vllm::VllmStat> = Vec::new();
    for s in &f.vllm.stats {
        let stuck =
            s.running.unwrap_or(0.0) > 0.0 && s.gen_tps == Some(0.0) && s.prompt_tps.unwrap_or(0.0) == 0.0;
        if stuck {
            run.push(s);
            if run.len() > best.len() {
                best.clone_from(&run);
            }
        } else {
            run.clear();
        }
    }
    if best.len() < 3 {
        return None;
    }
    let (n, running) = (best.len(), best[0].running.unwrap_or(0.0));
    let why = lang.pick(
        format!("{n} consecutive stats lines show {running:.0} requests running and 0 tokens/s generated"),
        format!("连续 {n} 条统计行显示 {running:.0} 个请求在运行，生成速度 0 tokens/s"),
    );
    Some((0.8, why, vec![best[0].evidence.clone(), best[best.len() - 1].evidence.clone()]))
}

/// Two scrapes: requests running at both, and the generated-tokens counter did not move.
fn scrape_stalled(f: &Facts, lang: Lang) -> Option<Judged> {
    let (first, last) = f.metrics.window()?;
    let running = |s: &crate::parsers::prom::Scrape| s.sum("vllm:num_requests_running").map_or(0.0, |x| x.0);
    if running(first) > 0.0
        && running(last) > 0.0
        && let Some(d) = f.metrics.delta("vllm:generation_tokens_total")
        && d == 0.0
    {
        let n = running(last);
        let why = lang.pick(
            format!("between two scrapes {n:.0} requests stayed running while vllm:generation_tokens_total did not move"),
            format!("两次抓取之间有 {n:.0} 个请求一直在运行，而 vllm:generation_tokens_total 纹丝不动"),
        );
        let lines = last.sum("vllm:generation_tokens_total").map(|(_, s)| last.evidence(s));
        return Some((0.8, why, lines.into_iter().collect()));
    }
    None
}

/// Requests pile up in the queue while nothing is admitted or generated (V0 multi-step
/// scheduling stuck; `Pending` / `Waiting` growing, every throughput at zero).
fn queue_piles_up(f: &Facts, lang: Lang) -> Option<Judged> {
    let mut piling: Vec<&crate::parsers::vllm::VllmStat> = Vec::new();
    let mut longest: Vec<&crate::parsers::vllm::VllmStat> = Vec::new();
    for s in &f.vllm.stats {
        let idle = s.gen_tps.unwrap_or(0.0) == 0.0 && s.prompt_tps.unwrap_or(0.0) == 0.0;
        let grows = piling.last().is_none_or(|p| s.waiting.unwrap_or(0.0) >= p.waiting.unwrap_or(0.0));
        if idle && s.waiting.unwrap_or(0.0) > 0.0 && grows {
            piling.push(s);
            if piling.len() > longest.len() {
                longest.clone_from(&piling);
            }
        } else {
            piling.clear();
        }
    }
    let grew = longest.len() >= 3 && longest[longest.len() - 1].waiting > longest[0].waiting;
    if !grew {
        return None;
    }
    let (a, b) = (longest[0].waiting.unwrap_or(0.0), longest[longest.len() - 1].waiting.unwrap_or(0.0));
    let why = lang.pick(
        format!("{} consecutive stats lines show the queue at {a:.0} → {b:.0} requests while nothing is prefilled or generated", longest.len()),
        format!("连续 {} 条统计行显示排队请求 {a:.0} → {b:.0}，却没有任何 prefill 或生成", longest.len()),
    );
    Some((0.75, why, vec![longest[0].evidence.clone(), longest[longest.len() - 1].evidence.clone()]))
}

/// The engine's own watchdog says the scheduler stopped (SGLang's watchdog timeout, a
/// detokenizer that stopped answering the health check).
fn watchdog(f: &Facts, lang: Lang) -> Option<Judged> {
    let watchdog = f.signals.lines_for(RULE.doc.id, 3);
    if watchdog.is_empty() {
        return None;
    }
    let why = lang.pick(
        "the engine's watchdog reports that the scheduler stopped making progress".to_owned(),
        "引擎自己的 watchdog 报告调度器不再推进".to_owned(),
    );
    Some((0.8, why, watchdog))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    fn line(i: usize, gen_tps: f64, running: u32) -> String {
        format!(
            "INFO 11-29 10:00:{i:02} [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: {gen_tps:.1} tokens/s, Running: {running} reqs, Waiting: 210 reqs, GPU KV cache usage: 88.0%, Prefix cache hit rate: 0.0%\n"
        )
    }

    #[test]
    fn fires_on_stuck_stats() {
        let log: String =
            [line(0, 900.0, 48), line(10, 0.0, 48), line(20, 0.0, 48), line(30, 0.0, 48)].concat();
        let f = case(&[("vllm.log", &log)]).snapshot(RuleId::SchedulerStall, "fires_on_stuck_stats").unwrap();
        assert_eq!(f.evidence[0].line, 2);
        assert_eq!(f.evidence[1].line, 4);
    }

    #[test]
    fn quiet_when_idle_or_busy() {
        let log: String = [line(0, 0.0, 0), line(10, 0.0, 0), line(20, 0.0, 0), line(30, 500.0, 8)].concat();
        assert!(
            case(&[("vllm.log", &log)]).snapshot(RuleId::SchedulerStall, "quiet_when_idle_or_busy").is_none()
        );
    }

    #[test]
    fn fires_on_two_scrapes() {
        let m = "vllm:num_requests_running 12\nvllm:generation_tokens_total 5000\nvllm:num_requests_running 12\nvllm:generation_tokens_total 5000\n";
        assert!(case(&[("metrics", m)]).snapshot(RuleId::SchedulerStall, "fires_on_two_scrapes").is_some());
    }

    crate::rules::snapshots! {
        corpus_throughput_046_watchdog_timeout: [("throughput-046-watchdog-timeout.log", fixture!("incidents/sglang/throughput-046-watchdog-timeout.log"))],
        corpus_throughput_0523_no_batches_requests_pending: [("throughput-0523-no-batches-requests-pending.log", fixture!("incidents/sglang/throughput-0523-no-batches-requests-pending.log"))],
    }
}
