//! Rule `kv-reservation-too-large`: the KV cache the server is configured to reserve does not
//! fit next to the weights — vLLM refuses to start, or runs out of memory while starting.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::parsers::vllm::FatalMemory;
use crate::report::{Class, EvidenceLine, Finding};
use crate::text::number_after;

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::KvReservationTooLarge,
        class: Class::Oom,
        title: "The static KV-cache reservation does not fit",
        detects: "vLLM's start-up memory errors (`No available memory for the cache blocks`, `… KV cache is needed, which is larger than the available KV cache memory`, `The model's max seq len (X) is larger than the maximum number of tokens that can be stored in KV cache (Y)`, `Free memory on device … is less than desired GPU memory utilization`), or an out-of-memory error while the server was still starting (start-up lines, no serving stats yet).",
        why: "vLLM reserves the KV cache up front: gpu_memory_utilization of the GPU, minus the weights and the profiled activation peak. If one request of max_model_len needs more than that, or the weights leave nothing, the engine refuses to start — and a restart loop with the same flags fails the same way.",
        example: "`ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (65536). Try increasing gpu_memory_utilization or decreasing max_model_len when initializing the engine.`",
        fix: "Lower --max-model-len (to the estimate vLLM prints) or --max-num-seqs; store the KV cache in fp8 (--kv-cache-dtype fp8); spread the model over more GPUs (--tensor-parallel-size); raise --gpu-memory-utilization only if nothing else uses the GPU.",
        zh: RuleText {
            title: "静态 KV 缓存预留放不下",
            detects: "vLLM 启动时的显存错误（`No available memory for the cache blocks`、`… KV cache is needed, which is larger than the available KV cache memory`、`The model's max seq len (X) is larger than the maximum number of tokens that can be stored in KV cache (Y)`、`Free memory on device … is less than desired GPU memory utilization`），或服务还在启动阶段就显存溢出（只有启动日志，还没有服务统计行）。",
            why: "vLLM 启动时一次性预留 KV 缓存：整卡显存 × gpu_memory_utilization，减去权重和 profile 出来的激活峰值。如果一条 max_model_len 长度的请求就需要比这更多的 KV，或者权重之后已经什么都不剩，引擎就拒绝启动——用同样参数反复重启也会一样失败。",
            example: "vLLM 启动失败，报错：`ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (65536). Try increasing gpu_memory_utilization or decreasing max_model_len when initializing the engine.`",
            fix: "调低 --max-model-len（调到 vLLM 报错里给出的估计值）或 --max-num-seqs；KV 缓存用 fp8 存（--kv-cache-dtype fp8）；把模型摊到更多 GPU 上（--tensor-parallel-size）；只有在没有其他进程用这张卡时才调高 --gpu-memory-utilization。",
        },
    },
    check,
};

/// The size in GiB just before `marker` (`(16.00 GiB KV cache is needed`).
fn gib_before(text: &str, marker: &str) -> Option<f64> {
    let end = text.find(marker)?;
    let head = text[..end].trim_end();
    let head = head.strip_suffix("GiB")?.trim_end();
    let digits: String = head.chars().rev().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    digits.chars().rev().collect::<String>().parse().ok()
}

/// What one fatal line says, with its numbers, and how sure it makes us.
fn explain(kind: FatalMemory, text: &str, lang: Lang) -> (f64, String) {
    let zh = lang == Lang::Zh;
    match kind {
        FatalMemory::MaxSeqLenTooLarge => {
            let want = number_after(text, "max seq len (");
            let fits = number_after(text, "stored in KV cache (");
            let msg = match (want, fits, zh) {
                (Some(w), Some(k), false) => format!(
                    "the model's max seq len of {w:.0} tokens does not fit the {k:.0} tokens the KV cache can hold"
                ),
                (Some(w), Some(k), true) => {
                    format!("模型的最大序列长度 {w:.0} token 超过了 KV 缓存能容纳的 {k:.0} token")
                }
                (_, _, false) => "the model's max seq len is larger than the KV cache can hold".to_owned(),
                (_, _, true) => "模型的最大序列长度超过了 KV 缓存能容纳的量".to_owned(),
            };
            (0.9, msg)
        }
        FatalMemory::KvLargerThanAvailable => {
            let need = gib_before(text, "KV cache is needed");
            let have = number_after(text, "available KV cache memory (");
            let est = number_after(text, "maximum model length is ");
            let mut msg = match (need, have, zh) {
                (Some(n), Some(h), false) => format!(
                    "one request of max_model_len needs {n:.2} GiB of KV cache but only {h:.2} GiB is available"
                ),
                (Some(n), Some(h), true) => format!(
                    "一条 max_model_len 长度的请求需要 {n:.2} GiB KV 缓存，但可用的只有 {h:.2} GiB"
                ),
                (_, _, false) => "one request of max_model_len needs more KV cache than is available".to_owned(),
                (_, _, true) => "一条 max_model_len 长度的请求需要的 KV 缓存超过了可用量".to_owned(),
            };
            if let Some(e) = est {
                msg.push_str(&lang.pick(
                    format!(" (vLLM estimates a max_model_len of {e:.0} would fit)"),
                    format!("（vLLM 估计 max_model_len 为 {e:.0} 时能放下）"),
                ));
            }
            (0.9, msg)
        }
        FatalMemory::NoCacheBlocks => (
            0.85,
            lang.pick(
                "the weights and the profiled activation peak leave no memory for KV cache blocks at this gpu_memory_utilization",
                "在当前 gpu_memory_utilization 下，权重加上 profile 出的激活峰值之后，已没有显存留给 KV 缓存块",
            )
            .to_owned(),
        ),
        // Usually another tenant: the colocated-process rule ranks higher for this line.
        FatalMemory::FreeLessThanDesired => (
            0.5,
            lang.pick(
                "less memory is free at start-up than --gpu-memory-utilization asks to reserve",
                "启动时空闲显存少于 --gpu-memory-utilization 要求预留的量",
            )
            .to_owned(),
        ),
    }
}

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let v = &f.vllm;
    let mut confidence: f64 = 0.0;
    let mut reasons: Vec<String> = Vec::new();
    let mut evidence: Vec<EvidenceLine> = Vec::new();
    let mut seen: Vec<FatalMemory> = Vec::new();
    for (kind, e) in &v.fatal_memory {
        if seen.contains(kind) {
            continue; // a restart loop repeats the same line
        }
        seen.push(*kind);
        let (c, msg) = explain(*kind, &e.text, lang);
        confidence = confidence.max(c);
        reasons.push(msg);
        evidence.push(e.clone());
    }
    // An OOM before the server served anything: the reservation itself did not fit.
    let starting = !v.startup_lines.is_empty() || !v.startup_events.is_empty();
    let serving = !v.stats.is_empty() || !v.access.is_empty();
    if starting
        && !serving
        && let Some(o) = f.ooms.first()
    {
        confidence = confidence.max(0.55);
        let gpu = o.gpu_name();
        reasons.push(lang.pick(
            format!(
                "{gpu} ran out of memory while the server was starting (start-up lines, no serving stats yet)"
            ),
            format!("{gpu} 在服务启动阶段显存溢出（只有启动日志，还没有服务统计行）"),
        ));
        evidence.extend(o.evidence.first().cloned());
        evidence.extend(v.startup_lines.iter().chain(&v.startup_events).take(1).cloned());
    }
    // Known messages the parser does not read (other releases' wording, a KV budget at or
    // below zero after profiling) — vLLM lines only: SGLang's capacity is warmup-oom's.
    let others: Vec<EvidenceLine> = f
        .signals
        .lines_for(RULE.doc.id, 4)
        .into_iter()
        .filter(|l| !l.text.contains("max_total_num_tokens") && !l.text.contains("#tokens:"))
        .filter(|l| !evidence.iter().any(|e| e.input == l.input && e.line == l.line))
        .collect();
    if !others.is_empty() {
        confidence = confidence.max(0.85);
        if reasons.is_empty() {
            reasons.push(lang.pick(
                "after loading the weights and profiling a forward pass, nothing (or less than nothing) was left for the KV cache".to_owned(),
                "加载权重并完成一次前向的显存分析之后，留给 KV 缓存的显存为零甚至为负".to_owned(),
            ));
        }
        evidence.extend(others);
    }
    // After the reasons: the settings that decided the reservation, and the KV estimate.
    let configured = || {
        let args: Vec<String> = ["max_model_len", "max_num_seqs", "gpu_memory_utilization", "kv_cache_dtype"]
            .iter()
            .filter_map(|name| v.arg(name).map(|a| format!("{name}={}", a.value)))
            .collect();
        let configured = match (args.is_empty(), lang) {
            (true, _) => String::new(),
            (false, Lang::En) => format!(" Configured: {}.", args.join(", ")),
            (false, Lang::Zh) => format!("当前配置：{}。", args.join(", ")),
        };
        match kv_context(f, lang) {
            Some(kv) => lang.pick(format!("{configured} {kv}"), format!("{configured}{kv}")),
            None => configured,
        }
    };
    RULE.doc.finding_from_reasons_then(
        lang,
        ("The KV-cache reservation does not fit", "KV 缓存预留放不下"),
        &reasons,
        configured,
        FindingBody {
            confidence,
            evidence,
            remediation: texts(lang, &[
                (
                    "lower --max-model-len to what the cache holds (vLLM prints the estimate in its error)",
                    "把 --max-model-len 调低到缓存放得下的长度（vLLM 的报错里会给出估计值）",
                ),
                (
                    "lower --max-num-seqs so fewer sequences are reserved at once",
                    "调低 --max-num-seqs，减少同时预留的序列数",
                ),
                (
                    "store the KV cache in fp8: --kv-cache-dtype fp8 (half the bytes per token)",
                    "KV 缓存用 fp8 存：--kv-cache-dtype fp8（每 token 字节数减半）",
                ),
                (
                    "spread the model over more GPUs: raise --tensor-parallel-size so each holds fewer weights and KV heads",
                    "把模型摊到更多 GPU 上：调大 --tensor-parallel-size，每张卡上的权重和 KV 头都更少",
                ),
                (
                    "raise --gpu-memory-utilization (e.g. 0.90 → 0.95) only if nothing else uses the GPU",
                    "只有在没有其他进程用这张卡时，才调高 --gpu-memory-utilization（例如 0.90 → 0.95）",
                ),
            ]),
            next_checks: texts(lang, &[
                (
                    "run `triage kv` with the model's config.json to see the bytes per token and the max_model_len that fits",
                    "用模型的 config.json 跑 `triage kv`，看每 token 字节数和放得下的 max_model_len",
                ),
                (
                    "check nvidia-smi for other processes on the GPU before raising --gpu-memory-utilization",
                    "调高 --gpu-memory-utilization 之前，先用 nvidia-smi 看这张卡上有没有其他进程",
                ),
            ]),
        },
    )
}

/// What the KV estimator (`triage kv`) says for the served model, when the log names a model
/// with a built-in preset: bytes per token, and what the logged KV memory holds.
fn kv_context(f: &Facts, lang: Lang) -> Option<String> {
    use triage_kv::estimate::{KvBudget, KvOptions, estimate};
    let v = &f.vllm;
    let model = v.arg("model")?.value.clone();
    let preset = triage_kv::presets::preset_for_served_model(&model)?;
    let shape = preset.shape().ok()?;
    let lines: Vec<&str> = v.startup_lines.iter().map(|e| e.text.as_str()).collect();
    let startup = triage_kv::startup::parse_startup(&lines.join("\n"));
    let available = startup.available_kv.as_ref().map(|l| l.value.bytes(true));
    let opts = KvOptions {
        tp: v.arg_f64("tensor_parallel_size").map_or(1, |t| t.max(1.0) as u32),
        max_model_len: v.arg_f64("max_model_len").map(|l| l as u64),
        ..KvOptions::default()
    };
    let est = estimate(&shape, &opts, &KvBudget::Available(available.unwrap_or(0))).ok()?;
    let seq_len = est.concurrency_len?;
    let per_seq = est.bytes_per_token_per_rank.saturating_mul(seq_len);
    let (id, per_token, seq_gib) =
        (preset.id, est.bytes_per_token_per_rank, triage_kv::units::fmt_gib(per_seq));
    let mut s = lang.pick(
        format!("KV estimate for {id} ({model}): {per_token} B per token on each GPU, {seq_gib} for one {seq_len}-token sequence"),
        format!("{id}（{model}）的 KV 估算：每张 GPU 每 token {per_token} B，一条 {seq_len} token 的序列需要 {seq_gib}"),
    );
    if let (Some(avail), Some(tokens), Some(times)) = (available, est.tokens, est.max_concurrency) {
        let avail = triage_kv::units::fmt_gib(avail);
        s.push_str(&lang.pick(
            format!("; the logged {avail} of KV memory holds {tokens} tokens ({times:.2}× that sequence)"),
            format!("；日志记录的 {avail} KV 显存可容纳 {tokens} token（该序列的 {times:.2} 倍）"),
        ));
    }
    s.push_str(lang.pick(".", "。"));
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;
    use crate::testutil::fixture;

    #[test]
    fn explains_with_the_kv_estimator_when_the_model_is_known() {
        let log = concat!(
            "INFO 11-29 09:58:00 [utils.py:326] non-default args: {'model': 'meta-llama/Llama-3.1-8B-Instruct', 'max_model_len': 1048576}\n",
            "INFO 11-29 09:59:00 [gpu_worker.py:276] Available KV cache memory: 54.62 GiB\n",
            "ValueError: The model's max seq len (1048576) is larger than the maximum number of tokens that can be stored in KV cache (447088). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n",
        );
        let f = case(&[("vllm.log", log)])
            .snapshot(RuleId::KvReservationTooLarge, "explained_by_the_estimator")
            .unwrap();
        assert!(f.summary.contains("131072 B per token on each GPU"), "{}", f.summary);
        assert!(f.summary.contains("128.00 GiB for one 1048576-token sequence"), "{}", f.summary);
        assert!(f.summary.contains("holds 447440 tokens"), "{}", f.summary);
    }

    #[test]
    fn fires_on_max_seq_len_with_its_numbers() {
        let log = "INFO 11-29 09:58:00 [utils.py:326] non-default args: {'model': 'meta-llama/Llama-3.1-8B-Instruct', 'max_model_len': 131072, 'gpu_memory_utilization': 0.5}\nValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (65536). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n";
        let report = case(&[("vllm.log", log)]).en;
        assert_eq!(report.findings[0].rule, RuleId::KvReservationTooLarge, "{:?}", report.findings);
        let f = case(&[("vllm.log", log)]).snapshot(RuleId::KvReservationTooLarge, "max_seq_len").unwrap();
        assert!(
            f.summary.contains("max seq len of 131072 tokens does not fit the 65536 tokens"),
            "{}",
            f.summary
        );
        assert!(f.summary.contains("max_model_len=131072, gpu_memory_utilization=0.5"), "{}", f.summary);
        assert_eq!(f.evidence[0].line, 2);
    }

    #[test]
    fn fires_on_kv_larger_than_available() {
        let log = "ERROR 11-29 09:58:00 [core.py:700] ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (9.50 GiB). Based on the available memory, the estimated maximum model length is 77664. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n";
        let f = case(&[("vllm.log", log)])
            .snapshot(RuleId::KvReservationTooLarge, "kv_larger_than_available")
            .unwrap();
        assert!(f.summary.contains("needs 16.00 GiB of KV cache but only 9.50 GiB"), "{}", f.summary);
        assert!(f.summary.contains("max_model_len of 77664"), "{}", f.summary);
    }

    #[test]
    fn fires_on_an_oom_during_startup_but_not_while_serving() {
        let start = "INFO 11-29 09:58:10 [default_loader.py:262] Loading weights took 12.30 seconds\nINFO 11-29 09:58:11 [gpu_model_runner.py:2000] Model loading took 14.9888 GiB and 13.1 seconds\n";
        let oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 2.10 GiB is free. Including non-PyTorch memory, this process has 77.00 GiB memory in use. Of the allocated memory 75.50 GiB is allocated by PyTorch, and 600.00 MiB is reserved by PyTorch but unallocated.\n";
        case(&[("vllm.log", &format!("{start}{oom}"))])
            .snapshot(RuleId::KvReservationTooLarge, "oom_during_startup")
            .unwrap();
        let stats = "INFO 11-29 10:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 900.0 tokens/s, Avg generation throughput: 50.0 tokens/s, Running: 40 reqs, Waiting: 0 reqs, GPU KV cache usage: 60.0%, Prefix cache hit rate: 0.0%\n";
        assert!(
            case(&[("vllm.log", &format!("{start}{stats}{oom}"))])
                .snapshot(RuleId::KvReservationTooLarge, "quiet_on_an_oom_while_serving")
                .is_none()
        );
    }

    #[test]
    fn numbers_before_a_marker() {
        assert_eq!(super::gib_before("(16.00 GiB KV cache is needed", "KV cache is needed"), Some(16.0));
        assert_eq!(super::gib_before("é16 GiB KV cache is needed", "KV cache is needed"), Some(16.0));
        assert_eq!(super::gib_before("é GiB KV cache is needed", "KV cache is needed"), None);
        assert_eq!(super::gib_before("no marker", "KV cache is needed"), None);
    }

    #[test]
    fn quiet_without_vllm() {
        let h200 = fixture!("oom/h200_200gib.txt");
        assert!(
            case(&[("oom", h200)]).snapshot(RuleId::KvReservationTooLarge, "quiet_without_vllm").is_none()
        );
    }

    crate::rules::snapshots! {
        corpus_oom_kv_cache_alloc_131k_ctx: [("oom-kv-cache-alloc-131k-ctx.log", fixture!("incidents/llama-server/oom-kv-cache-alloc-131k-ctx.log"))],
        corpus_oom_head_load_oom_context_retry: [("oom-head-load-oom-context-retry.log", fixture!("incidents/ollama/oom-head-load-oom-context-retry.log"))],
    }
}
