//! Rule `gpu-not-detected`: inference runs on the CPU: no usable GPU was found.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::GpuNotDetected,
        class: Class::TbtTail,
        title: "Inference runs on the CPU: no usable GPU was found",
        detects: "Ollama's `inference compute` line with `library=cpu`, `NVIDIA driver too old`, and `ollama ps` showing `100% CPU`.",
        why: "When the runtime cannot use the GPU (no device passed to the container, a driver older than the CUDA runtime needs, a missing library), llama.cpp-based servers fall back to the CPU without failing: every token takes tens of times longer.",
        example: "`msg=\"inference compute\" id=cpu library=cpu` at Ollama start-up; `ollama ps` prints `100% CPU`.",
        fix: "Give the container the GPU (`--gpus all`, the NVIDIA device plugin), update the driver to what the bundled CUDA runtime requires, and check `nvidia-smi` inside the container.",
        zh: RuleText {
            title: "推理跑在 CPU 上：没有找到可用的 GPU",
            detects: "Ollama 的 `inference compute` 行带 `library=cpu`、`NVIDIA driver too old`，以及 `ollama ps` 显示 `100% CPU`。",
            why: "运行时用不了 GPU（容器没有挂上设备、驱动比 CUDA 运行时要求的旧、缺少库）时，基于 llama.cpp 的服务不会报错，而是退回 CPU：每个 token 慢几十倍。",
            example: "Ollama 启动时打印 `msg=\"inference compute\" id=cpu library=cpu`；`ollama ps` 显示 `100% CPU`。",
            fix: "把 GPU 交给容器（`--gpus all`、NVIDIA device plugin），把驱动升级到自带 CUDA 运行时要求的版本，并在容器里运行 `nvidia-smi` 确认。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    // An `ollama ps` row counts when all of it is on the CPU (a split is cpu-offload-split's).
    let lines: Vec<_> = f
        .signals
        .lines_for(RULE.doc.id, 16)
        .into_iter()
        .filter(|e| !e.text.contains("% CPU ") || e.text.contains("100% CPU "))
        .collect();
    if lines.is_empty() {
        return None;
    }
    let n = lines.len();
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!("{n} line(s) show inference falling back to the CPU: tokens come tens of times slower than on a GPU."),
            format!("有 {n} 行显示推理退回到了 CPU：token 比在 GPU 上慢几十倍。"),
        ),
        FindingBody {
            confidence: 0.85,
            evidence: lines.into_iter().take(4).collect(),
            remediation: texts(lang, &[
                (
                    "make the GPU visible to the server (`--gpus all`, the NVIDIA device plugin, `CUDA_VISIBLE_DEVICES`)",
                    "让服务看得到 GPU（`--gpus all`、NVIDIA device plugin、`CUDA_VISIBLE_DEVICES`）",
                ),
                (
                    "update the NVIDIA driver when the log says it is too old for the bundled CUDA runtime",
                    "日志说驱动太旧时，把 NVIDIA 驱动升级到自带 CUDA 运行时要求的版本",
                ),
            ]),
            next_checks: texts(lang, &[
                (
                    "run `nvidia-smi` inside the container, and look for the GPU discovery lines at the server's start-up",
                    "在容器里运行 `nvidia-smi`，并查看服务启动时发现 GPU 的日志行",
                ),
            ]),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    #[test]
    fn an_ollama_ps_row_all_on_the_cpu() {
        let all = "qwen2.5:14b    7cdf5a0187d5    10 GB    100% CPU     4096       4 minutes from now\n";
        assert!(
            case(&[("ps.txt", all)])
                .snapshot(RuleId::GpuNotDetected, "an_ollama_ps_row_all_on_the_cpu")
                .is_some()
        );
        let split =
            "llama3.3:70b    a6eb4748fd29    49 GB    52%/48% CPU/GPU    4096       4 minutes from now\n";
        assert!(
            case(&[("ps.txt", split)])
                .snapshot(RuleId::GpuNotDetected, "quiet_on_a_cpu_gpu_split_row")
                .is_none()
        );
    }

    crate::rules::snapshots! {
        corpus_tbt_gpu_not_detected_driver_too_old: [("tbt-gpu-not-detected-driver-too-old.log", fixture!("incidents/ollama/tbt-gpu-not-detected-driver-too-old.log"))],
    }
}
