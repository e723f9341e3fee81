//! Rule `activation-peak`: a prefill batch's working buffers overflow the headroom left next
//! to a full KV reservation.
//!
//! This is also the rule of last resort for an OOM that no more specific rule explains (an
//! over-long input, fragmentation, another process): in an engine that preallocates its KV
//! cache, what grows at run time is the activations. Such findings carry a low confidence and
//! say that the figures did not pin the cause, so an OOM paste never comes out HEALTHY.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::parsers::oom::{OomFacts, fmt_gib};
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::ActivationPeak,
        class: Class::Oom,
        title: "Activation peak of a large prefill batch",
        detects: "A run-time OOM where the failed allocation is moderate (under 25 % of the GPU), PyTorch already holds most of the GPU (≥ 70 % allocated), and neither reserved-but-unallocated memory nor other processes explain it. With lower confidence, any OOM the other OOM rules do not explain.",
        why: "vLLM reserves the KV cache up front and keeps only the activation peak it profiled at start-up as headroom. A prefill step bigger than that profile — many long prompts at once, chunked prefill off, a large max_num_batched_tokens — needs more activation memory than is left, and the step fails even though the cache has room.",
        example: "`Tried to allocate 3.50 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.10 GiB is free. … Of the allocated memory 75.20 GiB is allocated by PyTorch, and 420.00 MiB is reserved by PyTorch but unallocated.`",
        fix: "Lower --max-num-batched-tokens (e.g. 8192), enable chunked prefill (--enable-chunked-prefill) so long prompts are split across steps, and lower --gpu-memory-utilization a little (0.90 → 0.85) to leave activation headroom.",
        zh: RuleText {
            title: "大 prefill 批的激活峰值",
            detects: "运行期的显存溢出：申请失败的大小适中（不到 GPU 的 25%），PyTorch 已占用了大部分显存（已分配 ≥ 70%），且既不是已预留未分配的显存、也不是其他进程能解释的。置信度较低的情况：其他 OOM 规则都解释不了的任何显存溢出。",
            why: "vLLM 预先预留 KV 缓存，只把启动时 profile 出的激活峰值作为余量。prefill 步比那次 profile 更大时——同时来了很多长 prompt、没开 chunked prefill、max_num_batched_tokens 设得很大——需要的激活显存就超过了剩余量，即使缓存还有空间，这一步也会失败。",
            example: "一次运行期 OOM，申请不大，PyTorch 已分配了几乎整张卡：`Tried to allocate 3.50 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.10 GiB is free. … Of the allocated memory 75.20 GiB is allocated by PyTorch, and 420.00 MiB is reserved by PyTorch but unallocated.`",
            fix: "调低 --max-num-batched-tokens（例如 8192），开启 chunked prefill（--enable-chunked-prefill）把长 prompt 拆到多个步里，并把 --gpu-memory-utilization 稍微调低（0.90 → 0.85）给激活留出余量。",
        },
    },
    check,
};

/// Below this share of the GPU, the failed allocation is a working buffer, not one huge input.
const MODERATE_SHARE: f64 = 0.25;
/// PyTorch holding at least this share of the GPU means the reservation is full.
const FULL_SHARE: f64 = 0.7;
/// Batched tokens at or above this make a large prefill step.
const BIG_BATCH_TOKENS: f64 = 16_384.0;

/// How strongly one OOM points at the activation peak, and why.
fn judge(o: &OomFacts, total: Option<f64>, lang: Lang) -> Option<(f64, String)> {
    let gpu = o.gpu_name();
    let (Some(tried), Some(total)) = (o.tried_gib, total) else {
        return Some((
            0.3,
            lang.pick(
                format!("an out-of-memory error on {gpu} without the figures that would pin its cause"),
                format!("{gpu} 上的一次显存溢出，缺少能确定原因的数据"),
            ),
        ));
    };
    if total <= 0.0 {
        return None;
    }
    let fragmented = o.reserved_unallocated_gib.is_some_and(|r| r >= tried && r >= 0.05 * total);
    if tried >= MODERATE_SHARE * total || fragmented || o.others_gib() >= 0.1 * total {
        return None; // input-too-long, allocator-fragmentation or colocated-process explains it
    }
    let (tried, cap) = (fmt_gib(tried), fmt_gib(total));
    match OomFacts::share(o.allocated_by_pytorch_gib, Some(total)) {
        Some(held) if held >= FULL_SHARE => {
            let pct = held * 100.0;
            Some((
                0.65,
                lang.pick(
                    format!(
                        "{gpu} failed to allocate {tried} with {pct:.0} % of its {cap} already allocated by PyTorch and little else to reclaim"
                    ),
                    format!(
                        "{gpu} 申请 {tried} 失败，此时其 {cap} 中已有 {pct:.0}% 被 PyTorch 分配，几乎没有可回收的显存"
                    ),
                ),
            ))
        }
        _ => Some((
            0.4,
            lang.pick(
                format!(
                    "{gpu} failed to allocate {tried} of {cap}, and neither the request's size, fragmentation nor another process explains it"
                ),
                format!("{gpu}（共 {cap}）申请 {tried} 失败，请求大小、碎片化和其他进程都解释不了"),
            ),
        )),
    }
}

/// llama.cpp's compute buffers (the activations of one batch) that could not be allocated, and
/// Ollama's out-of-memory while running a request.
const COMPUTE_SIGNALS: &[&str] =
    &["llama-cpp-alloc-compute", "llama-cpp-alloc-device-buffer", "ollama-runtime-oom"];

fn compute_buffer(f: &Facts, lang: Lang) -> Option<Finding> {
    let hits: Vec<_> = COMPUTE_SIGNALS.iter().filter_map(|id| f.signals.seen(id)).collect();
    if hits.is_empty() {
        return None;
    }
    let mut evidence: Vec<_> = hits.iter().flat_map(|h| h.lines.iter().cloned()).collect();
    triage_base::sort::sort_by_key(&mut evidence, |e| (e.input.clone(), e.line));
    evidence.truncate(3);
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            "The compute buffer for one batch's activations could not be allocated: the weights and the KV cache fit, the batch does not.",
            "一个批的激活所需的计算缓冲区分配失败：权重和 KV 缓存放得下，这个批放不下。",
        )
        .to_owned(),
        FindingBody {
            confidence: 0.75,
            evidence,
            remediation: texts(lang, &[
                (
                    "lower the batch sizes (llama.cpp `-b` / `-ub`, Ollama `num_batch`): the compute buffer grows with them",
                    "调小批大小（llama.cpp 的 `-b` / `-ub`、Ollama 的 `num_batch`）：计算缓冲区随之增长",
                ),
                (
                    "shorten the context (`-c`, `num_ctx`) or enable flash attention (`-fa`), which shrinks the attention buffers",
                    "缩短上下文（`-c`、`num_ctx`），或开启 flash attention（`-fa`），减小注意力缓冲区",
                ),
            ]),
            next_checks: texts(lang, &[(
                "read the `compute buffer size` lines at start-up against the free memory `nvidia-smi` shows",
                "对照启动时的 `compute buffer size` 行和 `nvidia-smi` 显示的空闲显存",
            )]),
        },
    ))
}

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let Some((o, mut confidence, mut why)) = f
        .ooms
        .iter()
        .filter_map(|o| judge(o, o.total_or_smi(&f.gpus), lang).map(|(c, w)| (o, c, w)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
    else {
        return compute_buffer(f, lang);
    };
    if confidence < 0.5
        && let Some(found) = compute_buffer(f, lang)
    {
        return Some(found);
    }
    // The engine's settings that make prefill steps big.
    let v = &f.vllm;
    let mut settings = Vec::new();
    if v.arg_bool("enable_chunked_prefill") == Some(false) {
        settings.push(lang.pick("chunked prefill is off", "chunked prefill 未开启").to_owned());
    }
    if let Some(n) = v.arg_f64("max_num_batched_tokens")
        && n >= BIG_BATCH_TOKENS
    {
        settings.push(
            lang.pick(
                format!("max_num_batched_tokens is {n:.0}"),
                format!("max_num_batched_tokens 为 {n:.0}"),
            ),
        );
    }
    if !settings.is_empty() && confidence >= 0.4 {
        confidence += 0.1;
        why.push_str(&lang.pick(
            format!("; {}, so prefill steps are large", settings.join(" and ")),
            format!("；{}，所以 prefill 步很大", settings.join("，且")),
        ));
    }
    let mut evidence: Vec<_> = o.evidence.iter().take(2).cloned().collect();
    for name in ["enable_chunked_prefill", "max_num_batched_tokens"] {
        if let Some(a) = v.arg(name)
            && !evidence.contains(&a.evidence)
            && !settings.is_empty()
        {
            evidence.push(a.evidence.clone());
        }
    }
    Some(RULE.doc.finding(
        lang,
        lang.pick(
            format!("Likely the activation peak of a large prefill batch: {why}."),
            format!("很可能是大 prefill 批的激活峰值：{why}。"),
        ),
        FindingBody {
            confidence,
            evidence,
            remediation: texts(lang, &[
                (
                    "lower --max-num-batched-tokens (e.g. 8192) so each step's activations stay inside the profiled headroom",
                    "调低 --max-num-batched-tokens（例如 8192），让每一步的激活都在 profile 出的余量之内",
                ),
                (
                    "enable chunked prefill (--enable-chunked-prefill) so long prompts are split across steps",
                    "开启 chunked prefill（--enable-chunked-prefill），把长 prompt 拆到多个步里",
                ),
                (
                    "lower --gpu-memory-utilization a little (0.90 → 0.85) to leave more activation headroom",
                    "把 --gpu-memory-utilization 稍微调低（0.90 → 0.85），给激活留出更多余量",
                ),
                (
                    "cap concurrent long prompts at the gateway if one burst of them triggers it",
                    "如果是一波长 prompt 集中到达触发的，就在网关限制长 prompt 的并发",
                ),
            ]),
            next_checks: texts(lang, &[
                (
                    "look at the prompt lengths in flight at the time of the OOM (a burst of long prompts?)",
                    "看 OOM 发生时正在处理的请求的 prompt 长度（是不是一波长 prompt？）",
                ),
                (
                    "compare the engine's profiled activation peak (`PyTorch activation peak memory takes …` at start-up) with the failed allocation",
                    "把引擎启动时 profile 出的激活峰值（`PyTorch activation peak memory takes …`）与申请失败的大小对比",
                ),
            ]),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;
    use crate::testutil::fixture;

    const PEAK: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.10 GiB is free. Including non-PyTorch memory, this process has 78.05 GiB memory in use. Of the allocated memory 75.20 GiB is allocated by PyTorch, and 420.00 MiB is reserved by PyTorch but unallocated.\n";

    #[test]
    fn fires_on_a_full_reservation_and_a_moderate_request() {
        let report = case(&[("oom", PEAK)]).en;
        assert_eq!(report.findings[0].rule, RuleId::ActivationPeak, "{:?}", report.findings);
        let f = case(&[("oom", PEAK)]).snapshot(RuleId::ActivationPeak, "full_reservation").unwrap();
        assert!(f.summary.contains("95 % of its 79.15 GiB"), "{}", f.summary);
    }

    #[test]
    fn engine_settings_raise_it() {
        let args = "INFO 11-29 09:58:00 [utils.py:326] non-default args: {'enable_chunked_prefill': False, 'max_num_batched_tokens': 32768}\n";
        let f = case(&[("vllm.log", args), ("oom", PEAK)])
            .snapshot(RuleId::ActivationPeak, "with_engine_settings")
            .unwrap();
        assert!(
            f.summary.contains("chunked prefill is off and max_num_batched_tokens is 32768"),
            "{}",
            f.summary
        );
        assert_eq!(f.evidence.len(), 2);
    }

    #[test]
    fn an_oom_without_figures_is_never_healthy() {
        let bare = [("oom", "RuntimeError: CUDA error: out of memory\n")];
        let report = case(&bare).en;
        assert_eq!(report.verdict, crate::report::Verdict::Oom);
        assert_eq!(report.findings[0].rule, RuleId::ActivationPeak);
        case(&bare).snapshot(RuleId::ActivationPeak, "oom_without_figures").unwrap();
    }

    #[test]
    fn quiet_when_a_more_specific_cause_explains_it() {
        let h200 = fixture!("oom/h200_200gib.txt");
        assert!(case(&[("oom", h200)]).snapshot(RuleId::ActivationPeak, "quiet_input_too_long").is_none());
        let fragmented = PEAK.replace("420.00 MiB is reserved", "8.40 GiB is reserved");
        assert!(case(&[("oom", &fragmented)]).snapshot(RuleId::ActivationPeak, "quiet_fragmented").is_none());
    }

    crate::rules::snapshots! {
        corpus_oom_compute_pp_buffer_large_ubatch: [("oom-compute-pp-buffer-large-ubatch.log", fixture!("incidents/llama-server/oom-compute-pp-buffer-large-ubatch.log"))],
        corpus_oom_head_runtime_oom_expire: [("oom-head-runtime-oom-expire.log", fixture!("incidents/ollama/oom-head-runtime-oom-expire.log"))],
    }
}
