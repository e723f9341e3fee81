//! Rule `engine-start-failed`: the engine never came up, so nothing is served.

use super::RuleId;
use super::{Lang, Rule, RuleDoc, RuleText, SignalFinding};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::EngineStartFailed,
        class: Class::ThroughputZero,
        title: "The engine failed to start",
        detects: "vLLM's `Engine core initialization failed` / `EngineCore failed to start`, TGI's `Shard N failed to start` / `Webserver Crashed`: the engine exited during start-up.",
        why: "An engine that dies during start-up serves nothing: every request fails or the pod restarts in a loop. The line that says so is a consequence; the cause is the first error printed before it (memory, a bad argument, a missing file, a distributed set-up failure).",
        example: "`RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_0': 1}`",
        fix: "Read the first error above the start-up failure. A memory cause has its own finding (KV budget, warm-up); otherwise fix the argument, file or environment it names and start again.",
        zh: RuleText {
            title: "引擎没能启动",
            detects: "vLLM 的 `Engine core initialization failed` / `EngineCore failed to start`，TGI 的 `Shard N failed to start` / `Webserver Crashed`：引擎在启动过程中退出了。",
            why: "启动时就挂掉的引擎什么也服务不了：每个请求都失败，或者 pod 反复重启。报这句话的行只是结果；原因是它之前打印的第一条错误（显存、错误的参数、缺失的文件、分布式初始化失败）。",
            example: "API server 的最后一行：`RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_0': 1}`",
            fix: "看启动失败之前的第一条错误。如果是显存原因，会有单独的发现（KV 预算、预热）；否则按它指出的参数、文件或环境问题修好后重新启动。",
        },
    },
    check,
};

/// Rules whose finding names a memory cause of a failed start.
const MEMORY: &[RuleId] = &[
    RuleId::KvReservationTooLarge,
    RuleId::WarmupOom,
    RuleId::InputTooLong,
    RuleId::ActivationPeak,
    RuleId::ColocatedProcess,
];

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let memory = MEMORY.iter().any(|&r| f.signals.count_for(r) > 0)
        || !f.ooms.is_empty()
        || !f.vllm.fatal_memory.is_empty();
    // NCCL failing while the engine starts is why it could not start, not a hang of a serving
    // group: this finding leads and names it.
    let other = super::CAUSES_OF_DEATH
        .iter()
        .any(|&r| !MEMORY.contains(&r) && r != RuleId::NcclHang && f.signals.count_for(r) > 0);
    // A client that hung up while the model loaded aborts the load: the start-up did not fail
    // of itself (Ollama's `context canceled` after `client connection closed …`).
    let client = f.signals.seen("ollama-client-closed-while-loading").is_some();
    // With its cause in the paste that finding leads; this one says what it did.
    // A worker that died (killed for host memory, a lost node) is why its load failed.
    let worker = f.signals.count_for(RuleId::WorkerDied) > 0;
    let confidence = if client || worker {
        0.45
    } else if memory || other {
        0.55
    } else {
        0.85
    };
    RULE.doc.finding_from_signals(
        f,
        lang,
        SignalFinding {
            confidence,
            summary: |n| {
                let cause = if memory {
                    lang.pick(
                        " A memory error is in the same paste: it is the cause.",
                        "同一份粘贴里有显存错误：它就是原因。",
                    )
                } else {
                    lang.pick(
                        " The cause is the first error printed before it.",
                        "原因是它之前打印的第一条错误。",
                    )
                };
                lang.pick(
                    format!("The engine exited during start-up ({n} line(s)): nothing is being served.{cause}"),
                    format!("引擎在启动过程中退出（{n} 行）：目前没有任何服务。{cause}"),
                )
            },
            remediation: &[
                (
                    "fix the first error printed before the start-up failure, then start again",
                    "修复启动失败之前打印的第一条错误，然后重新启动",
                ),
                (
                    "keep the orchestrator from hiding it: a crash loop with restarts looks like a slow service from outside",
                    "别让编排系统把它掩盖掉：从外面看，反复崩溃重启就像一个很慢的服务",
                ),
            ],
            next_checks: &[
                (
                    "paste the whole start-up log from the first line (the version and the arguments) to the failure",
                    "粘贴完整的启动日志：从第一行（版本和参数）一直到失败处",
                ),
                (
                    "for multi-GPU engines, the log of every rank or worker: the one that failed first names the cause",
                    "多卡引擎要贴每个 rank 或 worker 的日志：最先失败的那个指出了原因",
                ),
            ],
        },
    )
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    #[test]
    fn fires_on_a_failed_start() {
        let log = "(EngineCore_0 pid=7) ERROR 05-12 10:00:01 [core.py:390] EngineCore failed to start.\nRuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n";
        let f = case(&[("vllm.log", log)])
            .snapshot(RuleId::EngineStartFailed, "fires_on_a_failed_start")
            .unwrap();
        assert_eq!(f.evidence.len(), 2);
        assert!(f.confidence > 0.8);
    }

    #[test]
    fn a_memory_cause_leads() {
        let log = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\nRuntimeError: Engine core initialization failed. See root cause above.\n";
        let r = case(&[("vllm.log", log)]).en;
        assert_eq!(r.findings[0].rule, RuleId::KvReservationTooLarge);
        assert!(r.findings.iter().any(|f| f.rule == RuleId::EngineStartFailed));
    }

    crate::rules::snapshots! {
        corpus_zero_model_file_missing: [("zero-model-file-missing.log", fixture!("incidents/llama-server/zero-model-file-missing.log"))],
        corpus_zero_port_in_use_bind_failed: [("zero-port-in-use-bind-failed.log", fixture!("incidents/llama-server/zero-port-in-use-bind-failed.log"))],
        quiet_on_healthy_stats: [("healthy-v1-0101-stats.log", fixture!("incidents/vllm/healthy-v1-0101-stats.log"))],
    }
}
