//! Rule `engine-dead`: the engine process died; the API server may still be up.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts, with_signal_lines};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::EngineDead,
        class: Class::ThroughputZero,
        title: "The engine died",
        detects: "`EngineDeadError`, `EngineCore encountered an issue`, `Engine loop has died` in the vLLM log.",
        why: "vLLM runs the engine in its own process; when it dies the API server can keep accepting connections and fail every request, so throughput drops to zero while the pod still looks alive.",
        example: "`vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.`",
        fix: "Read the error just above the EngineDeadError (often an OOM or NCCL failure — see those findings), restart the server, and make the liveness probe fail when the engine is dead so the orchestrator restarts it.",
        zh: RuleText {
            title: "引擎进程挂了",
            detects: "vLLM 日志中出现 `EngineDeadError`、`EngineCore encountered an issue`、`Engine loop has died`。",
            why: "vLLM 的引擎跑在单独的进程里；它挂掉之后 API server 还能继续接受连接，但每个请求都会失败，于是吞吐跌到零，而 pod 看起来还活着。",
            example: "API server 日志里出现：`vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.`",
            fix: "看 EngineDeadError 正上方的报错（常见的是 OOM 或 NCCL 故障——参见对应的发现），重启服务，并让 liveness 探针在引擎挂掉时失败，好让编排系统自动重启它。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    // The vLLM parser's lines, and the known messages of any other section (a bare paste of
    // PyTorch's or another engine's lines).
    let lines = with_signal_lines(f.vllm.engine_dead.clone(), f, RULE.doc.id, 8);
    if lines.is_empty() {
        return None;
    }
    // The death is a consequence: with its cause in the paste, the cause's finding leads.
    let cause_rule = super::CAUSES_OF_DEATH.iter().find(|&&r| f.signals.count_for(r) > 0).copied();
    let memory = !f.ooms.is_empty() || !f.vllm.fatal_memory.is_empty();
    let nccl = !f.vllm.nccl.is_empty() || cause_rule == Some(RuleId::NcclHang);
    let cause = if memory {
        lang.pick(
            " An out-of-memory error is in the same input: it is the likely root cause.",
            "同一份输入里有显存溢出错误：它很可能就是根因。",
        )
    } else if nccl {
        lang.pick(
            " An NCCL failure is in the same input: it is the likely root cause.",
            "同一份输入里有 NCCL 故障：它很可能就是根因。",
        )
    } else if cause_rule.is_some() {
        lang.pick(
            " Its cause is in the same input (see the other findings).",
            "同一份输入里有它的原因（见其他发现）。",
        )
    } else {
        ""
    };
    let confidence = if memory || nccl || cause_rule.is_some() { 0.5 } else { 0.85 };
    let n = lines.len();
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!("The engine process died ({n} line(s)).{cause}"),
            format!("引擎进程已经挂了（{n} 行）。{cause}"),
        ),
        FindingBody {
            confidence,
            evidence: lines.iter().take(3).cloned().collect(),
            remediation: texts(lang, &[
                ("restart the server now", "立即重启服务"),
                (
                    "let the liveness probe check the engine (a tiny generation, or vLLM's /health which fails when the engine is dead) so the orchestrator restarts it",
                    "让 liveness 探针检查引擎本身（跑一次极小的生成，或用 vLLM 的 /health——引擎挂了它会失败），好让编排系统重启它",
                ),
                ("fix the root cause printed above the EngineDeadError", "修复 EngineDeadError 上方打印出的根因"),
            ]),
            next_checks: texts(lang, &[(
                "scroll up from the first EngineDeadError to the first traceback: that error is the cause",
                "从第一个 EngineDeadError 往上翻到第一个 traceback：那个错误才是原因",
            )]),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    #[test]
    fn fires_on_engine_dead() {
        let log = "ERROR 11-29 10:01:00 [core.py:400] EngineCore encountered a fatal error.\nvllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n";
        let f = case(&[("vllm.log", log)]).snapshot(RuleId::EngineDead, "fires_on_engine_dead").unwrap();
        assert_eq!(f.evidence.len(), 2);
    }

    #[test]
    fn quiet_on_normal_logs() {
        let log = "INFO 11-29 10:01:00 [core.py:400] EngineCore started.\n";
        assert!(case(&[("vllm.log", log)]).snapshot(RuleId::EngineDead, "quiet_on_normal_logs").is_none());
    }

    crate::rules::snapshots! {
        corpus_throughput_vllm_stream_engine_dead: [("throughput-vllm-stream-engine-dead.sse", fixture!("incidents/sse/throughput-vllm-stream-engine-dead.sse"))],
        corpus_zero_ray_serve_health_check_timeouts: [("zero-ray-serve-health-check-timeouts.log", fixture!("incidents/torch/zero-ray-serve-health-check-timeouts.log"))],
    }
}
