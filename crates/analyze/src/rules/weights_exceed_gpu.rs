//! Rule `weights-exceed-gpu`: the model's weights alone do not fit in GPU memory.

use super::RuleId;
use super::{Lang, Rule, RuleDoc, RuleText, SignalFinding};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::WeightsExceedGpu,
        class: Class::Oom,
        title: "The model's weights alone do not fit in GPU memory",
        detects: "llama.cpp's `unable to allocate CUDA0 buffer` while loading the model, `failed to fit params to free device memory`, and Ollama's `memory layout cannot be allocated with num_gpu`.",
        why: "Before any KV cache or activation, the weights of the layers asked for on the GPU must fit. A model too big for the card (or forced fully onto it with `-ngl 99` / `num_gpu`) fails at load time.",
        example: "`llama_model_load: error loading model: unable to allocate CUDA0 buffer`",
        fix: "Use a smaller quantisation or model, spread it over more GPUs (tensor split), or offload fewer layers to the GPU (`-ngl` / `num_gpu`) and accept the slower CPU layers.",
        zh: RuleText {
            title: "只是模型权重就放不进 GPU 显存",
            detects: "llama.cpp 加载模型时的 `unable to allocate CUDA0 buffer`、`failed to fit params to free device memory`，以及 Ollama 的 `memory layout cannot be allocated with num_gpu`。",
            why: "在 KV 缓存和激活之前，要放到 GPU 上的那些层的权重必须先放得下。模型比显卡大（或者用 `-ngl 99` / `num_gpu` 强行全部放上 GPU）时，加载阶段就会失败。",
            example: "日志里的一行：`llama_model_load: error loading model: unable to allocate CUDA0 buffer`",
            fix: "换更小的量化或模型，分到更多 GPU 上（tensor split），或者少放几层到 GPU（`-ngl` / `num_gpu`），接受 CPU 层更慢。",
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
                    format!("{n} line(s) show the model's weights not fitting in GPU memory at load time."),
                    format!("有 {n} 行显示加载时模型权重放不进 GPU 显存。"),
                )
            },
            remediation: &[
                (
                    "use a smaller quantisation (Q4_K_M instead of Q8_0) or a smaller model",
                    "换更小的量化（用 Q4_K_M 代替 Q8_0）或更小的模型",
                ),
                (
                    "split the model over more GPUs, or lower `-ngl` / `num_gpu` so some layers stay on the CPU",
                    "把模型分到更多 GPU 上，或者调低 `-ngl` / `num_gpu`，让部分层留在 CPU",
                ),
            ],
            next_checks: &[(
                "compare the model file's size with the free memory `nvidia-smi` shows before the load",
                "对比模型文件大小和加载前 `nvidia-smi` 显示的空闲显存",
            )],
        },
    )
}

#[cfg(test)]
mod tests {
    crate::rules::snapshots! {
        llama_model_buffer_cudamalloc: [("server.log", fixture!("incidents/llama-server/oom-model-buffer-cudamalloc-70b.log"))],
        trtllm_executor_model_weights: [("trtllm.log", fixture!("incidents/tensorrt-llm/oom-executor-creation-model-weights-70b.log"))],
        quiet_on_a_loaded_model_buffer: [("server.log", "load_tensors:        CUDA0 model buffer size =  4403.49 MiB\n")],
    }
}
