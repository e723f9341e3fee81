//! Rule `worker-died`: a worker process of the engine died (Ray actor, killed process).

use super::RuleId;
use super::{Lang, Rule, RuleDoc, RuleText, SignalFinding};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::WorkerDied,
        class: Class::ThroughputZero,
        title: "A worker process died",
        detects: "Ray's `The actor died unexpectedly before finishing this task`, `ActorDiedError` / `RayActorError`, `A worker died or was killed while executing a task`, the node running low on memory; a process that exited with signal 9 (`exitcode  : -9`, `SIGKILL`).",
        why: "A multi-GPU engine needs every worker: when one dies (killed by the host's OOM killer, a crashed GPU, a lost node) the others block in their next collective and the engine serves nothing until the whole group restarts.",
        example: "`ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.`",
        fix: "Find why it died: host memory (`dmesg | grep -i kill`, Ray's memory monitor), a GPU fault (`dmesg | grep -i xid`), a lost node. Restart the whole engine; give the host headroom (fewer CPU-side buffers, less swap space per worker).",
        zh: RuleText {
            title: "有一个 worker 进程挂了",
            detects: "Ray 的 `The actor died unexpectedly before finishing this task`、`ActorDiedError` / `RayActorError`、`A worker died or was killed while executing a task`、节点内存不足；进程被信号 9 杀掉（`exitcode  : -9`、`SIGKILL`）。",
            why: "多卡引擎需要每一个 worker：只要有一个挂了（被主机的 OOM killer 杀掉、GPU 崩溃、节点丢失），其他 worker 就会卡在下一次集合通信里，整个组重启之前引擎什么也服务不了。",
            example: "vLLM 的 Ray 执行器日志：`ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.`",
            fix: "查清它为什么挂：主机内存（`dmesg | grep -i kill`、Ray 的内存监控）、GPU 故障（`dmesg | grep -i xid`）、节点丢失。重启整个引擎；给主机留出余量（更少的 CPU 侧缓冲区、每个 worker 更少的 swap space）。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    // A worker killed by an error the paste shows (an OOM, NCCL, a GPU fault): that error leads.
    let cause = !f.ooms.is_empty()
        || super::CAUSES_OF_DEATH.iter().any(|&r| r != RULE.doc.id && f.signals.count_for(r) > 0);
    RULE.doc.finding_from_signals(
        f,
        lang,
        SignalFinding {
            confidence: if cause { 0.5 } else { 0.85 },
            summary: |n| {
                lang.pick(
                    format!("A worker of the engine died ({n} line(s)): the rest of its group waits for it and nothing is served."),
                    format!("引擎的一个 worker 挂了（{n} 行）：组里其他进程都在等它，服务停摆。"),
                )
            },
            remediation: &[
                (
                    "restart the whole engine (a dead worker cannot rejoin its group)",
                    "重启整个引擎（挂掉的 worker 无法重新加入它的组）",
                ),
                (
                    "if the host killed it for memory: lower CPU-side memory (vLLM --swap-space, fewer workers per node) or give the pod more memory",
                    "如果是主机因内存不足杀掉了它：降低 CPU 侧内存占用（vLLM --swap-space、每个节点更少的 worker），或给 pod 更多内存",
                ),
            ],
            next_checks: &[
                (
                    "`dmesg -T | grep -iE 'killed process|xid'` on the node at that time: the host OOM killer or a GPU fault",
                    "在该节点上查看当时的 `dmesg -T | grep -iE 'killed process|xid'`：是主机 OOM killer 还是 GPU 故障",
                ),
                (
                    "the dead worker's own log (Ray: `/tmp/ray/session_latest/logs/worker-*.err`): its last lines say why",
                    "挂掉的 worker 自己的日志（Ray：`/tmp/ray/session_latest/logs/worker-*.err`）：最后几行会说明原因",
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
    fn fires_on_a_dead_actor() {
        let log = "ERROR 05-12 10:00:01 [worker_base.py:1] Error executing method 'execute_model'.\nray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n";
        let f = case(&[("vllm.log", log)]).snapshot(RuleId::WorkerDied, "fires_on_a_dead_actor").unwrap();
        assert_eq!(f.evidence.len(), 1);
    }

    crate::rules::snapshots! {
        corpus_oom_head_host_ram_oom_killer: [("oom-head-host-ram-oom-killer.log", fixture!("incidents/ollama/oom-head-host-ram-oom-killer.log"))],
        corpus_zero_v012_runner_crash_ggml_assert: [("zero-v012-runner-crash-ggml-assert.log", fixture!("incidents/ollama/zero-v012-runner-crash-ggml-assert.log"))],
        quiet_on_healthy_stats: [("healthy-v1-0101-stats.log", fixture!("incidents/vllm/healthy-v1-0101-stats.log"))],
    }
}
