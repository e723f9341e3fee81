//! Rule `upstream-cut`: the process is alive but no requests arrive.

use super::{Lang, Rule, RuleDoc, RuleText, texts};
use crate::analyze::facts::Facts;
use crate::analyze::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: "upstream-cut",
        class: Class::ThroughputZero,
        title: "Traffic stopped arriving: upstream cut or health check draining the node",
        detects: "The engine was busy, then its stats go flat: nothing running, nothing waiting, no prompt or generation throughput, while the process keeps logging.",
        why: "QPS at zero with a live, idle engine means requests are not reaching it: the gateway marked it unhealthy (a health check too strict during load), service discovery lost it, or a network path is cut.",
        example: "`Running: 32 reqs` at 10:00, then from 10:02 on every line reads `Running: 0 reqs, Waiting: 0 reqs` with 0.0 tokens/s.",
        fix: "Check the gateway's upstream health for this node, the health-check timeout (it must tolerate a loaded engine), service discovery and DNS; send one request straight to the node to prove it serves.",
        zh: RuleText {
            title: "流量断了：上游断流，或健康检查把节点摘掉了",
            detects: "引擎原本在忙，之后统计行全部归零：没有运行、没有等待、prompt 和生成吞吐都归零，而进程还在继续打日志。",
            why: "QPS 为零而引擎活着且空闲，说明请求根本没到它这里：网关把它标成了不健康（负载高时健康检查太严），服务发现丢了它，或者网络链路断了。",
            example: "10:00 还是 `Running: 32 reqs`，从 10:02 起每一行都是 `Running: 0 reqs, Waiting: 0 reqs`、0.0 tokens/s。",
            fix: "检查网关里这个节点的上游健康状态、健康检查超时（必须能容忍高负载的引擎）、服务发现和 DNS；直接向节点发一个请求，确认它能正常服务。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let stats = &f.vllm.stats;
    let idle = |s: &crate::analyze::parsers::vllm::VllmStat| {
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
        0.65,
        lang.pick(
            format!(
                "The engine served traffic, then logged {n} idle stats lines in a row (nothing running or waiting, 0 tokens/s): requests stopped arriving while the process stayed up."
            ),
            format!(
                "引擎先是在正常服务，随后连续 {n} 条统计行都是空闲（没有运行、没有等待，0 tokens/s）：进程还在，请求却不再到达。"
            ),
        ),
        vec![stats[last_busy].evidence.clone(), tail[0].evidence.clone()],
        texts(lang, &[
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
        ]),
        texts(lang, &[
            (
                "compare with the gateway's upstream error and retry counters for the same minutes",
                "对照同一时段网关的上游错误和重试计数",
            ),
            (
                "look for a deployment, DNS or service-discovery change at the moment traffic stopped",
                "查找流量中断那一刻有没有发布、DNS 或服务发现的变更",
            ),
        ]),
    ))
}

#[cfg(test)]
mod tests {
    use super::super::snapshot;

    fn line(running: u32, gen_tps: f64) -> String {
        format!(
            "INFO 11-29 10:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: {gen_tps:.1} tokens/s, Running: {running} reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%\n"
        )
    }

    #[test]
    fn fires_when_traffic_stops() {
        let log = [line(32, 1800.0), line(0, 0.0), line(0, 0.0), line(0, 0.0)].concat();
        let f = snapshot(&[("vllm.log", &log)], "upstream-cut", "fires_when_traffic_stops").unwrap();
        assert_eq!(f.evidence[0].line, 1);
        assert_eq!(f.evidence[1].line, 2);
    }

    #[test]
    fn quiet_when_traffic_continues_or_never_started() {
        let log = [line(32, 1800.0), line(0, 0.0), line(30, 1700.0)].concat();
        assert!(
            snapshot(&[("vllm.log", &log)], "upstream-cut", "quiet_when_traffic_continues_or_never_started")
                .is_none()
        );
        let log = line(0, 0.0).repeat(5);
        assert!(
            snapshot(
                &[("vllm.log", &log)],
                "upstream-cut",
                "quiet_when_traffic_continues_or_never_started_2"
            )
            .is_none()
        );
    }
}
