//! Rule `engine-dead`: the engine process died; the API server may still be up.

use super::{Rule, RuleDoc};
use crate::analyze::facts::Facts;
use crate::analyze::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: "engine-dead",
        class: Class::ThroughputZero,
        title: "The engine died",
        detects: "`EngineDeadError`, `EngineCore encountered an issue`, `Engine loop has died` in the vLLM log.",
        why: "vLLM runs the engine in its own process; when it dies the API server can keep accepting connections and fail every request, so throughput drops to zero while the pod still looks alive.",
        example: "`vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.`",
        fix: "Read the error just above the EngineDeadError (often an OOM or NCCL failure — see those findings), restart the server, and make the liveness probe fail when the engine is dead so the orchestrator restarts it.",
    },
    check,
};

fn check(f: &Facts) -> Option<Finding> {
    let lines = &f.vllm.engine_dead;
    if lines.is_empty() {
        return None;
    }
    let cause = if !f.ooms.is_empty() || f.vllm.fatal_memory.iter().any(|_| true) {
        " An out-of-memory error is in the same input: it is the likely root cause."
    } else if !f.vllm.nccl.is_empty() {
        " An NCCL failure is in the same input: it is the likely root cause."
    } else {
        ""
    };
    Some(RULE.doc.finding(
        0.9,
        format!("The engine process died ({} line(s)).{cause}", lines.len()),
        lines.iter().take(3).cloned().collect(),
        &[
            "restart the server now",
            "let the liveness probe check the engine (a tiny generation, or vLLM's /health which fails when the engine is dead) so the orchestrator restarts it",
            "fix the root cause printed above the EngineDeadError",
        ],
        &["scroll up from the first EngineDeadError to the first traceback: that error is the cause"],
    ))
}

#[cfg(test)]
mod tests {
    use super::super::fired;

    #[test]
    fn fires_on_engine_dead() {
        let log = "ERROR 11-29 10:01:00 [core.py:400] EngineCore encountered a fatal error.\nvllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n";
        let f = fired(&[("vllm.log", log)], "engine-dead").unwrap();
        assert_eq!(f.evidence.len(), 2);
    }

    #[test]
    fn quiet_on_normal_logs() {
        let log = "INFO 11-29 10:01:00 [core.py:400] EngineCore started.\n";
        assert!(fired(&[("vllm.log", log)], "engine-dead").is_none());
    }
}
