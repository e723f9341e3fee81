//! Rule `upstream-cut`: the process is alive but no requests arrive.

use super::{Rule, RuleDoc};
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
    },
    check,
};

fn check(f: &Facts) -> Option<Finding> {
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
    Some(RULE.doc.finding(
        0.65,
        format!(
            "The engine served traffic, then logged {} idle stats lines in a row (nothing running or waiting, 0 tokens/s): requests stopped arriving while the process stayed up.",
            tail.len()
        ),
        vec![stats[last_busy].evidence.clone(), tail[0].evidence.clone()],
        &[
            "check the gateway / load balancer: is this node marked unhealthy or drained?",
            "relax the health check during load (a longer timeout; check the process, not a generation)",
            "send one request straight to the node (triage probe http://NODE:8000/v1 --model M) to prove it serves",
        ],
        &["compare with the gateway's upstream error and retry counters for the same minutes", "look for a deployment, DNS or service-discovery change at the moment traffic stopped"],
    ))
}

#[cfg(test)]
mod tests {
    use super::super::fired;

    fn line(running: u32, gen_tps: f64) -> String {
        format!(
            "INFO 11-29 10:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: {gen_tps:.1} tokens/s, Running: {running} reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%\n"
        )
    }

    #[test]
    fn fires_when_traffic_stops() {
        let log = [line(32, 1800.0), line(0, 0.0), line(0, 0.0), line(0, 0.0)].concat();
        let f = fired(&[("vllm.log", &log)], "upstream-cut").unwrap();
        assert_eq!(f.evidence[0].line, 1);
        assert_eq!(f.evidence[1].line, 2);
    }

    #[test]
    fn quiet_when_traffic_continues_or_never_started() {
        let log = [line(32, 1800.0), line(0, 0.0), line(30, 1700.0)].concat();
        assert!(fired(&[("vllm.log", &log)], "upstream-cut").is_none());
        let log = line(0, 0.0).repeat(5);
        assert!(fired(&[("vllm.log", &log)], "upstream-cut").is_none());
    }
}
