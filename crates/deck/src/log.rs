//! Log-reading cards: a short real-format excerpt → which failure class, which root cause.
//!
//! The excerpts are curated from the incident corpus (`tests/data/incidents/`, CR line ends and
//! ANSI colours removed) and embedded with `include_str!` (files in `cards/logs/`). Each names
//! the answer an expert gives; the back is written by the [`Analyzer`](triage_analyze::Analyzer)
//! when the deck is built — the rule's title, its summary, the evidence lines it cites and what
//! to check next — and a test holds the analyzer to the named answer.

use crate::concept::rule_tags;
use triage_analyze::analyze_in;
use triage_analyze::report::{Finding, Report, Verdict};
use triage_analyze::rules::{self, ADVISORIES, RuleId};
use triage_base::lang::Lang;
use triage_cards::{Card, CardKind, Tag, card};

/// One excerpt and the answer it must get.
#[derive(Clone, Copy, Debug)]
pub struct Excerpt {
    /// Card id after `log:`.
    pub id: &'static str,
    /// The input name the analyzer sees (its extension matters, as for a pasted file).
    pub name: &'static str,
    /// What the excerpt is, (English, Chinese).
    pub source: (&'static str, &'static str),
    /// The log lines, as pasted.
    pub text: &'static str,
    /// The verdict the analyzer must give.
    pub verdict: Verdict,
    /// The top rule (the first finding that is not an advisory); `None` when healthy.
    pub rule: Option<RuleId>,
}

/// Every log excerpt of the deck, with the answer each must get.
pub const EXCERPTS: &[Excerpt] = &[
    Excerpt {
        id: "vllm-ttft-queueing-v1-max-num-seqs",
        name: "vllm-ttft-queueing-v1-max-num-seqs.log",
        source: ("vLLM V1 log", "vLLM V1 日志"),
        text: include_str!("logs/vllm-ttft-queueing-v1-max-num-seqs.log"),
        verdict: Verdict::TtftHigh,
        rule: Some(RuleId::QueueingExceedsCapacity),
    },
    Excerpt {
        id: "vllm-ttft-cold-start-v0-graph-capture",
        name: "vllm-ttft-cold-start-v0-graph-capture.log",
        source: ("vLLM V0 log", "vLLM V0 日志"),
        text: include_str!("logs/vllm-ttft-cold-start-v0-graph-capture.log"),
        verdict: Verdict::TtftHigh,
        rule: Some(RuleId::ColdStart),
    },
    Excerpt {
        id: "llama-server-ttft-long-prompt-prefill-single-slot",
        name: "llama-server-ttft-long-prompt-prefill-single-slot.log",
        source: ("llama-server log", "llama-server 日志"),
        text: include_str!("logs/llama-server-ttft-long-prompt-prefill-single-slot.log"),
        verdict: Verdict::TtftHigh,
        rule: Some(RuleId::LongPromptBlocksPrefill),
    },
    Excerpt {
        id: "ollama-ttft-server-busy-max-queue",
        name: "ollama-ttft-server-busy-max-queue.log",
        source: ("Ollama log", "Ollama 日志"),
        text: include_str!("logs/ollama-ttft-server-busy-max-queue.log"),
        verdict: Verdict::TtftHigh,
        rule: Some(RuleId::QueueingExceedsCapacity),
    },
    Excerpt {
        id: "sglang-ttft-0523-queue-full-503",
        name: "sglang-ttft-0523-queue-full-503.log",
        source: ("SGLang log", "SGLang 日志"),
        text: include_str!("logs/sglang-ttft-0523-queue-full-503.log"),
        verdict: Verdict::TtftHigh,
        rule: Some(RuleId::QueueingExceedsCapacity),
    },
    Excerpt {
        id: "ollama-ttft-model-swapping-evictions",
        name: "ollama-ttft-model-swapping-evictions.log",
        source: ("Ollama log", "Ollama 日志"),
        text: include_str!("logs/ollama-ttft-model-swapping-evictions.log"),
        verdict: Verdict::TtftHigh,
        rule: Some(RuleId::ColdStart),
    },
    Excerpt {
        id: "vllm-tbt-kv-preemption-v033",
        name: "vllm-tbt-kv-preemption-v033.log",
        source: ("vLLM log", "vLLM 日志"),
        text: include_str!("logs/vllm-tbt-kv-preemption-v033.log"),
        verdict: Verdict::TbtTail,
        rule: Some(RuleId::KvPressurePreemption),
    },
    Excerpt {
        id: "sglang-tbt-0523-kv-pool-full-retract",
        name: "sglang-tbt-0523-kv-pool-full-retract.log",
        source: ("SGLang log", "SGLang 日志"),
        text: include_str!("logs/sglang-tbt-0523-kv-pool-full-retract.log"),
        verdict: Verdict::TbtTail,
        rule: Some(RuleId::KvPressurePreemption),
    },
    Excerpt {
        id: "llama-server-tbt-decode-slows-long-generation",
        name: "llama-server-tbt-decode-slows-long-generation.log",
        source: ("llama-server log", "llama-server 日志"),
        text: include_str!("logs/llama-server-tbt-decode-slows-long-generation.log"),
        verdict: Verdict::TbtTail,
        rule: Some(RuleId::DecodeSlowsWithContext),
    },
    Excerpt {
        id: "ollama-tbt-ps-cpu-gpu-split-slow-eval",
        name: "ollama-tbt-ps-cpu-gpu-split-slow-eval.txt",
        source: ("ollama ps and timings", "ollama ps 输出与耗时"),
        text: include_str!("logs/ollama-tbt-ps-cpu-gpu-split-slow-eval.txt"),
        verdict: Verdict::TbtTail,
        rule: Some(RuleId::CpuOffloadSplit),
    },
    Excerpt {
        id: "ollama-tbt-gpu-not-detected-driver-too-old",
        name: "ollama-tbt-gpu-not-detected-driver-too-old.log",
        source: ("Ollama log", "Ollama 日志"),
        text: include_str!("logs/ollama-tbt-gpu-not-detected-driver-too-old.log"),
        verdict: Verdict::TbtTail,
        rule: Some(RuleId::GpuNotDetected),
    },
    Excerpt {
        id: "bench-tbt-vllm-bench-result",
        name: "bench-tbt-vllm-bench-result.json",
        source: ("vllm bench serve result (JSON)", "vllm bench serve 结果（JSON）"),
        text: include_str!("logs/bench-tbt-vllm-bench-result.json"),
        verdict: Verdict::TbtTail,
        rule: Some(RuleId::BenchItlTail),
    },
    Excerpt {
        id: "gpu-tbt-smi-q-hw-thermal-slowdown",
        name: "gpu-tbt-smi-q-hw-thermal-slowdown.txt",
        source: ("nvidia-smi -q output", "nvidia-smi -q 输出"),
        text: include_str!("logs/gpu-tbt-smi-q-hw-thermal-slowdown.txt"),
        verdict: Verdict::TbtTail,
        rule: Some(RuleId::SlowGpu),
    },
    Excerpt {
        id: "torch-oom-fragmentation-torch113-a100-40g",
        name: "torch-oom-fragmentation-torch113-a100-40g.txt",
        source: ("PyTorch OOM", "PyTorch OOM"),
        text: include_str!("logs/torch-oom-fragmentation-torch113-a100-40g.txt"),
        verdict: Verdict::Oom,
        rule: Some(RuleId::AllocatorFragmentation),
    },
    Excerpt {
        id: "torch-oom-colocated-process-rank0",
        name: "torch-oom-colocated-process-rank0.log",
        source: ("PyTorch OOM", "PyTorch OOM"),
        text: include_str!("logs/torch-oom-colocated-process-rank0.log"),
        verdict: Verdict::Oom,
        rule: Some(RuleId::ColocatedProcess),
    },
    Excerpt {
        id: "torch-oom-activation-peak-v1-batched-tokens",
        name: "torch-oom-activation-peak-v1-batched-tokens.log",
        source: ("vLLM V1 OOM", "vLLM V1 OOM"),
        text: include_str!("logs/torch-oom-activation-peak-v1-batched-tokens.log"),
        verdict: Verdict::Oom,
        rule: Some(RuleId::ActivationPeak),
    },
    Excerpt {
        id: "torch-oom-input-too-long-1eb",
        name: "torch-oom-input-too-long-1eb.txt",
        source: ("PyTorch OOM", "PyTorch OOM"),
        text: include_str!("logs/torch-oom-input-too-long-1eb.txt"),
        verdict: Verdict::Oom,
        rule: Some(RuleId::InputTooLong),
    },
    Excerpt {
        id: "vllm-oom-v1-max-model-len-above-kv",
        name: "vllm-oom-v1-max-model-len-above-kv.log",
        source: ("vLLM V1 start-up log", "vLLM V1 启动日志"),
        text: include_str!("logs/vllm-oom-v1-max-model-len-above-kv.log"),
        verdict: Verdict::Oom,
        rule: Some(RuleId::KvReservationTooLarge),
    },
    Excerpt {
        id: "llama-server-oom-model-buffer-cudamalloc-70b",
        name: "llama-server-oom-model-buffer-cudamalloc-70b.log",
        source: ("llama-server start-up log", "llama-server 启动日志"),
        text: include_str!("logs/llama-server-oom-model-buffer-cudamalloc-70b.log"),
        verdict: Verdict::Oom,
        rule: Some(RuleId::WeightsExceedGpu),
    },
    Excerpt {
        id: "sglang-oom-0523-cuda-graph-capture-oom",
        name: "sglang-oom-0523-cuda-graph-capture-oom.log",
        source: ("SGLang start-up log", "SGLang 启动日志"),
        text: include_str!("logs/sglang-oom-0523-cuda-graph-capture-oom.log"),
        verdict: Verdict::Oom,
        rule: Some(RuleId::WarmupOom),
    },
    Excerpt {
        id: "llama-server-oom-kv-exhausted-decode-context-exceeded",
        name: "llama-server-oom-kv-exhausted-decode-context-exceeded.log",
        source: ("llama-server log", "llama-server 日志"),
        text: include_str!("logs/llama-server-oom-kv-exhausted-decode-context-exceeded.log"),
        verdict: Verdict::Oom,
        rule: Some(RuleId::KvPoolExhausted),
    },
    Excerpt {
        id: "vllm-zero-v0-kv-leak-idle",
        name: "vllm-zero-v0-kv-leak-idle.log",
        source: ("vLLM V0 log", "vLLM V0 日志"),
        text: include_str!("logs/vllm-zero-v0-kv-leak-idle.log"),
        verdict: Verdict::ThroughputZero,
        rule: Some(RuleId::KvLeak),
    },
    Excerpt {
        id: "torch-zero-nccl-heartbeat-watchdog-stuck",
        name: "torch-zero-nccl-heartbeat-watchdog-stuck.log",
        source: ("PyTorch NCCL log", "PyTorch NCCL 日志"),
        text: include_str!("logs/torch-zero-nccl-heartbeat-watchdog-stuck.log"),
        verdict: Verdict::ThroughputZero,
        rule: Some(RuleId::NcclHang),
    },
    Excerpt {
        id: "tensorrt-llm-zero-hang-detector-fires",
        name: "tensorrt-llm-zero-hang-detector-fires.log",
        source: ("TensorRT-LLM log", "TensorRT-LLM 日志"),
        text: include_str!("logs/tensorrt-llm-zero-hang-detector-fires.log"),
        verdict: Verdict::ThroughputZero,
        rule: Some(RuleId::SchedulerStall),
    },
    Excerpt {
        id: "sglang-throughput-0523-scheduler-watchdog",
        name: "sglang-throughput-0523-scheduler-watchdog.log",
        source: ("SGLang log", "SGLang 日志"),
        text: include_str!("logs/sglang-throughput-0523-scheduler-watchdog.log"),
        verdict: Verdict::ThroughputZero,
        rule: Some(RuleId::SchedulerStall),
    },
    Excerpt {
        id: "throughput-stall",
        name: "throughput_stall.log",
        source: ("vLLM V1 log", "vLLM V1 日志"),
        text: include_str!("logs/throughput_stall.log"),
        verdict: Verdict::ThroughputZero,
        rule: Some(RuleId::SchedulerStall),
    },
    Excerpt {
        id: "vllm-zero-engine-core-proc-died-v1",
        name: "vllm-zero-engine-core-proc-died-v1.log",
        source: ("vLLM V1 log", "vLLM V1 日志"),
        text: include_str!("logs/vllm-zero-engine-core-proc-died-v1.log"),
        verdict: Verdict::ThroughputZero,
        rule: Some(RuleId::WorkerDied),
    },
    Excerpt {
        id: "gpu-zero-xid79-fallen-off-bus",
        name: "gpu-zero-xid79-fallen-off-bus.txt",
        source: ("kernel log (dmesg)", "内核日志（dmesg）"),
        text: include_str!("logs/gpu-zero-xid79-fallen-off-bus.txt"),
        verdict: Verdict::ThroughputZero,
        rule: Some(RuleId::GpuHwError),
    },
    Excerpt {
        id: "llama-server-zero-port-in-use-bind-failed",
        name: "llama-server-zero-port-in-use-bind-failed.log",
        source: ("llama-server log", "llama-server 日志"),
        text: include_str!("logs/llama-server-zero-port-in-use-bind-failed.log"),
        verdict: Verdict::ThroughputZero,
        rule: Some(RuleId::EngineStartFailed),
    },
    Excerpt {
        id: "vllm-zero-engine-start-failed-bf16-t4",
        name: "vllm-zero-engine-start-failed-bf16-t4.log",
        source: ("vLLM start-up log", "vLLM 启动日志"),
        text: include_str!("logs/vllm-zero-engine-start-failed-bf16-t4.log"),
        verdict: Verdict::ThroughputZero,
        rule: Some(RuleId::EngineStartFailed),
    },
    Excerpt {
        id: "clients-config-base-url-homepage-404",
        name: "clients-config-base-url-homepage-404.log",
        source: ("client log", "客户端日志"),
        text: include_str!("logs/clients-config-base-url-homepage-404.log"),
        verdict: Verdict::Config,
        rule: Some(RuleId::BaseUrlWrong),
    },
    Excerpt {
        id: "llama-server-config-client-cancels-at-30s",
        name: "llama-server-config-client-cancels-at-30s.log",
        source: ("llama-server log", "llama-server 日志"),
        text: include_str!("logs/llama-server-config-client-cancels-at-30s.log"),
        verdict: Verdict::Config,
        rule: Some(RuleId::TimeoutTooShort),
    },
    Excerpt {
        id: "clients-config-litellm-timeout-15s",
        name: "clients-config-litellm-timeout-15s.log",
        source: ("LiteLLM log", "LiteLLM 日志"),
        text: include_str!("logs/clients-config-litellm-timeout-15s.log"),
        verdict: Verdict::Config,
        rule: Some(RuleId::TimeoutTooShort),
    },
    Excerpt {
        id: "ollama-config-model-not-found-404",
        name: "ollama-config-model-not-found-404.log",
        source: ("Ollama log", "Ollama 日志"),
        text: include_str!("logs/ollama-config-model-not-found-404.log"),
        verdict: Verdict::Config,
        rule: Some(RuleId::ModelNotFound),
    },
    Excerpt {
        id: "llama-server-config-invalid-api-key-401",
        name: "llama-server-config-invalid-api-key-401.log",
        source: ("llama-server log", "llama-server 日志"),
        text: include_str!("logs/llama-server-config-invalid-api-key-401.log"),
        verdict: Verdict::Config,
        rule: Some(RuleId::ApiKeyRejected),
    },
    Excerpt {
        id: "llama-server-config-request-exceeds-context-400",
        name: "llama-server-config-request-exceeds-context-400.log",
        source: ("llama-server log", "llama-server 日志"),
        text: include_str!("logs/llama-server-config-request-exceeds-context-400.log"),
        verdict: Verdict::Config,
        rule: Some(RuleId::ContextLengthExceeded),
    },
    Excerpt {
        id: "tensorrt-llm-config-max-seq-len-reduced-by-kv",
        name: "tensorrt-llm-config-max-seq-len-reduced-by-kv.log",
        source: ("TensorRT-LLM log", "TensorRT-LLM 日志"),
        text: include_str!("logs/tensorrt-llm-config-max-seq-len-reduced-by-kv.log"),
        verdict: Verdict::Config,
        rule: Some(RuleId::MaxSeqLenReducedByKv),
    },
    Excerpt {
        id: "torch-inconclusive-illegal-memory-access",
        name: "torch-inconclusive-illegal-memory-access.log",
        source: ("PyTorch log", "PyTorch 日志"),
        text: include_str!("logs/torch-inconclusive-illegal-memory-access.log"),
        // The id stays (saved progress names it); since the generic layer the fault's words
        // give the class: nothing is served, the exact cause is still unnamed.
        verdict: Verdict::ThroughputZero,
        rule: Some(RuleId::GenericGpuFault),
    },
    Excerpt {
        id: "llama-server-inconclusive-decode-compute-error",
        name: "llama-server-inconclusive-decode-compute-error.log",
        source: ("llama-server log", "llama-server 日志"),
        text: include_str!("logs/llama-server-inconclusive-decode-compute-error.log"),
        verdict: Verdict::Inconclusive,
        rule: Some(RuleId::UnclaimedError),
    },
    Excerpt {
        id: "healthy",
        name: "healthy.log",
        source: ("vLLM V1 log", "vLLM V1 日志"),
        text: include_str!("logs/healthy.log"),
        verdict: Verdict::Healthy,
        rule: None,
    },
];

/// The report the analyzer writes for `e` in `lang`.
pub fn report(e: &Excerpt, lang: Lang) -> Report {
    analyze_in(lang, &[(e.name, e.text)])
}

/// The first finding that decides (not an advisory), as the corpus scores it.
pub fn top(report: &Report) -> Option<&Finding> {
    report.findings.iter().find(|f| !rules::listed(ADVISORIES, &f.rule))
}

fn back(e: &Excerpt, lang: Lang) -> String {
    let report = report(e, lang);
    let verdict = report.verdict.as_str();
    let Some(f) = top(&report) else {
        return lang.pick(
            format!("{verdict}: no rule fires. The lines show a working service (figures in range, requests completing) and no error."),
            format!("{verdict}：没有规则命中。这些行显示服务运转正常（数值在合理范围、请求正常完成），也没有报错。"),
        );
    };
    let mut s = format!("{verdict} · `{}` — {}\n{}\n", f.rule, f.title, f.summary);
    s.push_str(lang.pick("Evidence (line: text):", "证据（行号：内容）："));
    for ev in &f.evidence {
        s.push_str(&format!("\n{}: {}", ev.line, ev.text));
    }
    if let Some(next) = f.next_checks.first() {
        s.push_str(&format!("\n{}{next}", lang.pick("Check next: ", "下一步查：")));
    }
    s
}

fn tags(e: &Excerpt) -> Vec<Tag> {
    let mut tags =
        e.rule.and_then(|id| rules::docs().find(|d| d.id == id)).map(rule_tags).unwrap_or_default();
    tags.push(Tag::Engines);
    tags
}

/// One card per excerpt.
pub fn cards() -> Vec<Card> {
    EXCERPTS
        .iter()
        .map(|e| {
            let (src_en, src_zh) = e.source;
            card(
                format!("log:{}", e.id),
                CardKind::Log,
                &tags(e),
                (
                    format!(
                        "Read this {src_en} excerpt. Which failure class, and which root cause?\n\n{}",
                        e.text.trim_end()
                    ),
                    format!("读这段{src_zh}：属于哪类故障？根因是什么？\n\n{}", e.text.trim_end()),
                ),
                (back(e, Lang::En), back(e, Lang::Zh)),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each card's answer is what the analyzer says of its excerpt, and the back quotes the
    /// evidence lines the analyzer cites.
    #[test]
    fn every_excerpt_gets_its_answer_and_the_back_shows_the_evidence() {
        let cards = cards();
        for (e, c) in EXCERPTS.iter().zip(&cards) {
            assert!(e.text.len() <= 4096, "{}: keep excerpts short", e.id);
            assert!(!e.text.contains('\r') && !e.text.contains('\x1b'), "{}", e.id);
            let r = report(e, Lang::En);
            assert_eq!(r.verdict, e.verdict, "{}", e.id);
            let f = top(&r);
            assert_eq!(f.map(|f| f.rule.as_str()), e.rule.map(RuleId::as_str), "{}", e.id);
            for lang in Lang::ALL {
                assert!(c.back(lang).starts_with(e.verdict.as_str()), "{}", e.id);
            }
            if let Some(f) = f {
                assert!(!f.evidence.is_empty(), "{}: no evidence", e.id);
                for ev in &f.evidence {
                    let quoted = format!("\n{}: {}", ev.line, ev.text);
                    assert!(c.back_en.contains(&quoted) && c.back_zh.contains(&quoted), "{}: {quoted}", e.id);
                    // The quoted line is the excerpt's line (redacted and cut at most).
                    let line = e.text.lines().nth(ev.line - 1).unwrap_or_default();
                    let head: String = ev.text.chars().take(40).collect();
                    assert!(line.contains(head.trim_end_matches('…')), "{}: line {}", e.id, ev.line);
                }
                assert!(c.back_en.contains(&format!("`{}`", f.rule)));
            }
        }
        let mut ids: Vec<_> = EXCERPTS.iter().map(|e| e.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), EXCERPTS.len());
    }

    #[test]
    fn excerpts_cover_every_class_and_several_engines() {
        for v in [
            Verdict::TtftHigh,
            Verdict::TbtTail,
            Verdict::Oom,
            Verdict::ThroughputZero,
            Verdict::Config,
            Verdict::Healthy,
            Verdict::Inconclusive,
        ] {
            assert!(EXCERPTS.iter().any(|e| e.verdict == v), "{v:?}");
        }
        for engine in ["vllm", "sglang", "llama-server", "ollama", "tensorrt-llm", "torch", "gpu", "clients"]
        {
            assert!(EXCERPTS.iter().any(|e| e.id.starts_with(engine)), "{engine}");
        }
    }
}
