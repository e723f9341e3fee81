//! Rule `warmup-oom`: the engine's start-up memory check failed (SGLang, TGI).

use super::RuleId;
use super::{Lang, Rule, RuleDoc, RuleText, SignalFinding};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::WarmupOom,
        class: Class::Oom,
        title: "Not enough memory at start-up for the configured batch",
        detects: "SGLang's `Not enough memory. Please try to increase --mem-fraction-static` or a token capacity at or below zero after profiling; TGI's warm-up failures (`Not enough memory to handle N prefill tokens`, `Method Warmup encountered an error`, `WarmupError`).",
        why: "At start-up the engine loads the weights, runs its largest batch once and gives what is left to the KV cache. When the weights plus that warm-up batch do not fit in the share of the GPU it may use, there is no room for the cache and the engine refuses to start.",
        example: "`RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.` (SGLang) or `Not enough memory to handle 16384 prefill tokens. You need to decrease --max-batch-prefill-tokens` (TGI).",
        fix: "Give the engine more of the GPU (SGLang `--mem-fraction-static`), lower the warm-up batch (TGI `--max-batch-prefill-tokens`, `--max-total-tokens`; SGLang `--chunked-prefill-size`, `--max-running-requests`), shard over more GPUs or quantise the weights.",
        zh: RuleText {
            title: "启动时显存不够容纳配置的批次",
            detects: "SGLang 的 `Not enough memory. Please try to increase --mem-fraction-static`，或者显存分析之后的 token 容量小于等于零；TGI 的预热失败（`Not enough memory to handle N prefill tokens`、`Method Warmup encountered an error`、`WarmupError`）。",
            why: "启动时引擎先加载权重，再把最大的批次跑一遍，剩下的显存才给 KV cache。如果权重加上这次预热批次在它能用的那部分显存里放不下，就没有空间留给 cache，引擎拒绝启动。",
            example: "`RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.`（SGLang）或 `Not enough memory to handle 16384 prefill tokens. You need to decrease --max-batch-prefill-tokens`（TGI）。",
            fix: "让引擎用更多的显存（SGLang `--mem-fraction-static`），调小预热批次（TGI `--max-batch-prefill-tokens`、`--max-total-tokens`；SGLang `--chunked-prefill-size`、`--max-running-requests`），用更多 GPU 切分或对权重做量化。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    // A capacity at or below zero in a vLLM line is kv-reservation-too-large's.
    let sglang_capacity = f.signals.seen("capacity-not-positive").is_some_and(|h| {
        h.lines.iter().any(|l| l.text.contains("max_total_num_tokens") || l.text.contains("#tokens:"))
    });
    let own = f.signals.for_rule(RULE.doc.id).any(|(s, _)| s.id != "capacity-not-positive");
    if !own && !sglang_capacity {
        return None;
    }
    // TensorRT-LLM's executor report names the component that did not fit (the KV cache, the
    // weights, the activations): the rule of that component leads.
    const STAGES: &[&str] =
        &["trtllm-suggest-fraction-short", "trtllm-suggest-shard", "trtllm-suggest-max-num-tokens"];
    let staged = STAGES.iter().any(|id| f.signals.seen(id).is_some());
    RULE.doc.finding_from_signals(
        f,
        lang,
        SignalFinding {
            confidence: if staged { 0.6 } else { 0.9 },
            summary: |n| {
                lang.pick(
                    format!("The engine's start-up memory check failed ({n} line(s)): the weights plus the warm-up batch leave no room for the KV cache."),
                    format!("引擎启动时的显存检查失败（{n} 行）：权重加上预热批次之后，已经没有空间留给 KV cache。"),
                )
            },
            remediation: &[
                (
                    "SGLang: raise --mem-fraction-static (e.g. 0.85 → 0.9) or lower --chunked-prefill-size / --max-running-requests",
                    "SGLang：调高 --mem-fraction-static（例如 0.85 → 0.9），或调小 --chunked-prefill-size / --max-running-requests",
                ),
                (
                    "TGI: lower --max-batch-prefill-tokens and --max-total-tokens, or raise --cuda-memory-fraction if other processes do not need the GPU",
                    "TGI：调小 --max-batch-prefill-tokens 和 --max-total-tokens；如果没有其他进程需要这块 GPU，可以调高 --cuda-memory-fraction",
                ),
                (
                    "or make the weights smaller per GPU: more tensor parallelism, a quantised checkpoint",
                    "或者减小每张 GPU 上的权重：加大张量并行度，或使用量化权重",
                ),
            ],
            next_checks: &[(
                "paste the memory lines of the start-up (weights loaded, memory available before the KV cache) and `nvidia-smi` to see whether another process holds the GPU",
                "贴出启动日志中的显存相关行（权重加载后、分配 KV cache 之前的可用显存），以及 `nvidia-smi`，确认是否有其他进程占着 GPU",
            )],
        },
    )
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    #[test]
    fn fires_on_sglang_and_tgi() {
        let sglang = "[2025-03-04 10:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):\nRuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n";
        assert!(
            case(&[("sglang.log", sglang)]).snapshot(RuleId::WarmupOom, "fires_on_sglang_and_tgi").is_some()
        );
        let tgi = "2024-05-01T10:00:00.000000Z ERROR warmup{max_input_length=4095 max_prefill_tokens=16384}:warmup: text_generation_router_v3::client: router/src/client/mod.rs:45: Server error: Not enough memory to handle 16384 prefill tokens. You need to decrease `--max-batch-prefill-tokens`\n";
        assert!(case(&[("tgi.log", tgi)]).snapshot(RuleId::WarmupOom, "fires_on_sglang_and_tgi_2").is_some());
    }

    #[test]
    fn a_vllm_capacity_line_is_not_its() {
        let log = "INFO 05-12 10:00:01 [gpu_worker.py:1] Available KV cache memory: -2.31 GiB\n";
        assert!(
            case(&[("vllm.log", log)])
                .snapshot(RuleId::WarmupOom, "a_vllm_capacity_line_is_not_its")
                .is_none()
        );
    }

    crate::rules::snapshots! {
        corpus_oom_036_negative_capacity_70b_tp2: [("oom-036-negative-capacity-70b-tp2.log", fixture!("incidents/sglang/oom-036-negative-capacity-70b-tp2.log"))],
        corpus_oom_046_kv_capacity_too_small: [("oom-046-kv-capacity-too-small.log", fixture!("incidents/sglang/oom-046-kv-capacity-too-small.log"))],
    }
}
