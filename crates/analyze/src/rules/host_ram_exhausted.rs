//! Rule `host-ram-exhausted`: system memory, not GPU memory, ran out.

use super::RuleId;
use super::{Lang, Rule, RuleDoc, RuleText, SignalFinding};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::HostRamExhausted,
        class: Class::Oom,
        title: "System memory, not GPU memory, ran out",
        detects: "Ollama's `model requires more system memory … than is available`, llama.cpp's `failed to allocate buffer of size` on the CPU backend and `was unable to fit model into system memory`.",
        why: "Layers kept on the CPU, memory-mapped weights and the host copy made while loading all live in system RAM. A container memory limit or a small host fails the load (or the kernel kills the server) even when the GPU has room.",
        example: "`Error: 500 Internal Server Error: model requires more system memory (41.2 GiB) than is available (27.5 GiB)`",
        fix: "Raise the container's memory limit or use a bigger host, offload more layers to the GPU, or pick a smaller model or quantisation.",
        zh: RuleText {
            title: "耗尽的是系统内存，不是显存",
            detects: "Ollama 的 `model requires more system memory … than is available`、llama.cpp 在 CPU 后端上的 `failed to allocate buffer of size` 和 `was unable to fit model into system memory`。",
            why: "留在 CPU 上的层、内存映射的权重、加载时的主机副本都占系统内存。容器内存限制或者主机太小，即使 GPU 还有空间，加载也会失败（或者内核杀掉服务）。",
            example: "日志里的一行：`Error: 500 Internal Server Error: model requires more system memory (41.2 GiB) than is available (27.5 GiB)`",
            fix: "提高容器的内存限制或换更大的主机，把更多层放到 GPU 上，或者换更小的模型或量化。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    RULE.doc.finding_from_signals(
        f,
        lang,
        SignalFinding {
            confidence: 0.85,
            summary: |n| {
                lang.pick(
                    format!("{n} line(s) show system memory (RAM), not GPU memory, running out."),
                    format!("有 {n} 行显示耗尽的是系统内存（RAM），不是显存。"),
                )
            },
            remediation: &[
                (
                    "raise the container's memory limit (`docker --memory`, the pod's `resources.limits.memory`) or use a bigger host",
                    "提高容器内存限制（`docker --memory`、pod 的 `resources.limits.memory`）或换更大的主机",
                ),
                (
                    "offload more layers to the GPU, or choose a smaller model or quantisation",
                    "把更多层放到 GPU 上，或者换更小的模型或量化",
                ),
            ],
            next_checks: &[(
                "check `free -g` and the container's memory limit, and `dmesg` for the kernel's OOM killer",
                "查看 `free -g` 和容器内存限制，并在 `dmesg` 里找内核 OOM killer 的记录",
            )],
        },
    )
}

#[cfg(test)]
mod tests {
    crate::rules::snapshots! {
        quiet_on_an_oom_killed_runner: [("ollama.log", fixture!("incidents/ollama/oom-head-host-ram-oom-killer.log"))],
        more_system_memory_than_available: [("ollama.log", "Error: 500 Internal Server Error: model requires more system memory (41.2 GiB) than is available (27.5 GiB)\n")],
        quiet_on_a_system_memory_line: [("ollama.log", "time=2025-09-22T14:10:41.521Z level=INFO source=server.go:1289 msg=\"system memory\" total=\"62.7 GiB\" free=\"58.1 GiB\"\n")],
    }
}
