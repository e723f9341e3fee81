//! Rule `upstream-cut`: the process is alive but no requests arrive.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::UpstreamCut,
        class: Class::ThroughputZero,
        title: "Traffic stopped arriving: upstream cut or health check draining the node",
        detects: "The engine was busy, then its stats go flat: nothing running, nothing waiting, no prompt or generation throughput, while the process keeps logging. In metrics over a window (scrapes with timestamps, or `triage analyze --prometheus`): the request or generation-token counter rose, then stayed flat for the recent tail (30 s or more) with nothing running or waiting at the end, the KV cache not held, and `up` still 1.",
        why: "QPS at zero with a live, idle engine means requests are not reaching it: the gateway marked it unhealthy (a health check too strict during load), service discovery lost it, or a network path is cut.",
        example: "`Running: 32 reqs` at 10:00, then from 10:02 on every line reads `Running: 0 reqs, Waiting: 0 reqs` with 0.0 tokens/s.",
        fix: "Check the gateway's upstream health for this node, the health-check timeout (it must tolerate a loaded engine), service discovery and DNS; send one request straight to the node to prove it serves.",
        zh: RuleText {
            title: "流量断了：上游断流，或健康检查把节点摘掉了",
            detects: "引擎原本在忙，之后统计行全部归零：没有运行、没有等待、prompt 和生成吞吐都归零，而进程还在继续打日志。在一段时间窗的指标里（带时间戳的多次抓取，或 `triage analyze --prometheus`）：请求数或生成 token 计数先是在涨，之后最近一段（30 秒以上）一直不变，结束时没有运行、没有等待，KV 缓存没被占着，`up` 仍为 1。",
            why: "QPS 为零而引擎活着且空闲，说明请求根本没到它这里：网关把它标成了不健康（负载高时健康检查太严），服务发现丢了它，或者网络链路断了。",
            example: "10:00 还是 `Running: 32 reqs`，从 10:02 起每一行都是 `Running: 0 reqs, Waiting: 0 reqs`、0.0 tokens/s。",
            fix: "检查网关里这个节点的上游健康状态、健康检查超时（必须能容忍高负载的引擎）、服务发现和 DNS；直接向节点发一个请求，确认它能正常服务。",
        },
    },
    check,
};

/// The flat tail a metrics window needs, in seconds: as long as three of vLLM's 10 s stats
/// intervals (the log path's three idle lines), two of Prometheus's default 15 s scrapes.
const FLAT_TAIL_S: f64 = 30.0;

/// Counters that rise while the engine serves.
const SERVED: &[&str] = &["vllm:request_success_total", "vllm:generation_tokens_total"];

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    from_stats(f, lang).or_else(|| from_metrics(f, lang))
}

/// Metrics over a window: the first scrape, the one before the last (in a Prometheus replay, the
/// recent tail's start) and the last. Served before the tail (a counter rose), nothing since (the
/// counters flat for at least [`FLAT_TAIL_S`]), and at the end nothing running or waiting, the
/// KV cache not held (that is a leak, `kv-leak`), the target still up.
fn from_metrics(f: &Facts, lang: Lang) -> Option<Finding> {
    if !f.vllm.engine_dead.is_empty() {
        return None;
    }
    let m = &f.metrics;
    let (first, last) = m.window()?;
    let mid = m.before_last()?;
    let flat_s = (last.timestamp_ms? - mid.timestamp_ms?) as f64 / 1000.0;
    if flat_s < FLAT_TAIL_S {
        return None;
    }
    // The counter that rose before the tail, with its three readings.
    let mut rose = None;
    for name in SERVED {
        let (Some((b, sb)), Some((z, sz))) = (mid.sum(name), last.sum(name)) else { continue };
        if z != b {
            return None;
        }
        if rose.is_none()
            && let Some((a, sa)) = first.sum(name)
            && b > a
        {
            rose = Some((*name, b - a, sa, sb, sz));
        }
    }
    let (name, served, sa, sb, sz) = rose?;
    let (running, sr) = last.sum("vllm:num_requests_running")?;
    let waiting = last.sum("vllm:num_requests_waiting").map_or(0.0, |w| w.0);
    if running != 0.0 || waiting != 0.0 {
        return None;
    }
    if last.max("vllm:kv_cache_usage_perc").is_some_and(|(u, _)| u >= 0.5) {
        return None;
    }
    if last.series.iter().any(|s| s.name == "up" && s.value < 1.0) {
        return None;
    }
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!(
                "{name} rose by {served:.0} in the window, then stayed flat for the last {flat_s:.0} s with nothing running or waiting at the end: requests stopped arriving while the process stayed up."
            ),
            format!(
                "{name} 在时间窗内先涨了 {served:.0}，之后最近 {flat_s:.0} 秒一直不变，结束时没有运行、没有等待的请求：进程还在，请求却不再到达。"
            ),
        ),
        FindingBody {
            confidence: 0.6,
            evidence: vec![first.evidence(sa), mid.evidence(sb), last.evidence(sz), last.evidence(sr)],
            remediation: remediation(lang),
            next_checks: next_checks(lang),
        },
    ))
}

fn from_stats(f: &Facts, lang: Lang) -> Option<Finding> {
    let stats = &f.vllm.stats;
    let idle = |s: &crate::parsers::vllm::VllmStat| {
        s.running == Some(0.0)
            && s.waiting.unwrap_or(0.0) == 0.0
            && s.gen_tps.unwrap_or(0.0) == 0.0
            && s.prompt_tps.unwrap_or(0.0) == 0.0
    };
    let last_busy =
        stats.iter().rposition(|s| s.running.unwrap_or(0.0) > 0.0 || s.gen_tps.unwrap_or(0.0) > 0.0)?;
    let tail = &stats[last_busy + 1..];
    if tail.len() < 3 || !tail.iter().all(idle) || !f.vllm.engine_dead.is_empty() {
        return None;
    }
    let n = tail.len();
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!(
                "The engine served traffic, then logged {n} idle stats lines in a row (nothing running or waiting, 0 tokens/s): requests stopped arriving while the process stayed up."
            ),
            format!(
                "引擎先是在正常服务，随后连续 {n} 条统计行都是空闲（没有运行、没有等待，0 tokens/s）：进程还在，请求却不再到达。"
            ),
        ),
        FindingBody {
            confidence: 0.65,
            evidence: vec![stats[last_busy].evidence.clone(), tail[0].evidence.clone()],
            remediation: remediation(lang),
            next_checks: next_checks(lang),
        },
    ))
}

fn remediation(lang: Lang) -> Vec<String> {
    texts(
        lang,
        &[
            (
                "check the gateway / load balancer: is this node marked unhealthy or drained?",
                "检查网关 / 负载均衡：这个节点是不是被标成不健康或被摘流了？",
            ),
            (
                "relax the health check during load (a longer timeout; check the process, not a generation)",
                "放宽负载时的健康检查（超时设长一些；检查进程存活，而不是跑一次生成）",
            ),
            (
                "send one request straight to the node (triage probe http://NODE:8000/v1 --model M) to prove it serves",
                "直接向节点发一个请求（triage probe http://NODE:8000/v1 --model M），确认它能正常服务",
            ),
        ],
    )
}

fn next_checks(lang: Lang) -> Vec<String> {
    texts(
        lang,
        &[
            (
                "compare with the gateway's upstream error and retry counters for the same minutes",
                "对照同一时段网关的上游错误和重试计数",
            ),
            (
                "look for a deployment, DNS or service-discovery change at the moment traffic stopped",
                "查找流量中断那一刻有没有发布、DNS 或服务发现的变更",
            ),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    /// One engine at one instant: its served counters (requests, generated tokens), its gauges
    /// (running, waiting, KV usage) and `up`.
    #[derive(Clone, Copy)]
    struct Engine {
        success: f64,
        tokens: f64,
        running: f64,
        waiting: f64,
        kv: f64,
        up: f64,
    }

    /// Serving at the window's start: requests running and waiting, the cache in use.
    const SERVING: Engine =
        Engine { success: 100.0, tokens: 20_000.0, running: 12.0, waiting: 3.0, kv: 0.4, up: 1.0 };

    /// Later: the counters have risen, and nothing runs or waits, the cache nearly empty.
    const STOPPED: Engine =
        Engine { success: 480.0, tokens: 95_000.0, running: 0.0, waiting: 0.0, kv: 0.01, up: 1.0 };

    /// The engine's scrape at `t` (unix s), as `triage analyze --prometheus` writes a replica's
    /// series.
    fn scrape(t: u64, engine: Engine) -> String {
        let Engine { success, tokens, running, waiting, kv, up } = engine;
        let ms = t * 1000;
        format!(
            "vllm:request_success_total{{finished_reason=\"stop\",model_name=\"m\"}} {success} {ms}\n\
             vllm:generation_tokens_total{{model_name=\"m\"}} {tokens} {ms}\n\
             vllm:num_requests_running{{model_name=\"m\"}} {running} {ms}\n\
             vllm:num_requests_waiting{{model_name=\"m\"}} {waiting} {ms}\n\
             vllm:kv_cache_usage_perc{{model_name=\"m\"}} {kv} {ms}\n\
             up{{instance=\"10.0.0.12:8000\"}} {up} {ms}\n"
        )
    }

    const T0: u64 = 1_796_394_000;

    /// The window's start, the recent tail's start (165 s in) and its end (225 s in).
    fn window(mid: String, end: String) -> String {
        format!("{}{mid}{end}", scrape(T0, SERVING))
    }

    #[test]
    fn fires_on_metrics_when_the_counters_stop() {
        let text = window(scrape(T0 + 165, STOPPED), scrape(T0 + 225, STOPPED));
        let f = case(&[("metrics", &text)])
            .snapshot(RuleId::UpstreamCut, "fires_on_metrics_when_the_counters_stop")
            .unwrap();
        // The counter at the window's start, the tail's start and the end; nothing running.
        let lines: Vec<usize> = f.evidence.iter().map(|e| e.line).collect();
        assert_eq!(lines, vec![1, 7, 13, 15], "{:?}", f.evidence);
        assert!(f.evidence[0].text.starts_with("vllm:request_success_total"), "{:?}", f.evidence);
    }

    #[test]
    fn quiet_on_metrics_unless_served_then_flat_and_idle() {
        let idle = |t: u64, n: f64| scrape(T0 + t, Engine { success: n, tokens: 20_000.0, ..STOPPED });
        // Never served in the window: a healthy idle replica.
        let never = format!("{}{}{}", idle(0, 100.0), idle(165, 100.0), idle(225, 100.0));
        // Still busy at the end: the counters keep rising, requests run.
        let busy = window(
            scrape(T0 + 165, Engine { running: 10.0, kv: 0.4, ..STOPPED }),
            scrape(
                T0 + 225,
                Engine { success: 600.0, tokens: 120_000.0, running: 11.0, waiting: 2.0, ..SERVING },
            ),
        );
        // Flat, but requests are still waiting at the end (stuck, not cut off).
        let waiting = window(
            scrape(T0 + 165, Engine { waiting: 5.0, ..STOPPED }),
            scrape(T0 + 225, Engine { waiting: 5.0, ..STOPPED }),
        );
        // Flat for one 15 s scrape only: too short to tell.
        let short = window(scrape(T0 + 210, STOPPED), scrape(T0 + 225, STOPPED));
        // The target is down at the end: not a cut upstream.
        let down = window(scrape(T0 + 165, STOPPED), scrape(T0 + 225, Engine { up: 0.0, ..STOPPED }));
        // Only two scrapes: a rise over the window, nothing about the tail.
        let two = format!("{}{}", scrape(T0, SERVING), scrape(T0 + 225, STOPPED));
        for (name, text) in [
            ("quiet_on_metrics_never_served", never),
            ("quiet_on_metrics_still_busy", busy),
            ("quiet_on_metrics_still_waiting", waiting),
            ("quiet_on_metrics_flat_too_short", short),
            ("quiet_on_metrics_target_down", down),
            ("quiet_on_metrics_two_scrapes", two),
        ] {
            assert!(case(&[("metrics", &text)]).snapshot(RuleId::UpstreamCut, name).is_none(), "{name}");
        }
    }

    fn line(running: u32, gen_tps: f64) -> String {
        format!(
            "INFO 11-29 10:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: {gen_tps:.1} tokens/s, Running: {running} reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%\n"
        )
    }

    #[test]
    fn fires_when_traffic_stops() {
        let log = [line(32, 1800.0), line(0, 0.0), line(0, 0.0), line(0, 0.0)].concat();
        let f =
            case(&[("vllm.log", &log)]).snapshot(RuleId::UpstreamCut, "fires_when_traffic_stops").unwrap();
        assert_eq!(f.evidence[0].line, 1);
        assert_eq!(f.evidence[1].line, 2);
    }

    #[test]
    fn quiet_when_traffic_continues_or_never_started() {
        let log = [line(32, 1800.0), line(0, 0.0), line(30, 1700.0)].concat();
        assert!(
            case(&[("vllm.log", &log)])
                .snapshot(RuleId::UpstreamCut, "quiet_when_traffic_continues_or_never_started")
                .is_none()
        );
        let log = line(0, 0.0).repeat(5);
        assert!(
            case(&[("vllm.log", &log)])
                .snapshot(RuleId::UpstreamCut, "quiet_when_traffic_continues_or_never_started_2")
                .is_none()
        );
    }
}
