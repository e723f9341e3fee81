//! Rule `kv-pressure-preemption`: the KV cache is full and the scheduler evicts requests.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::KvPressurePreemption,
        class: Class::TbtTail,
        title: "KV cache pressure: requests are preempted and recomputed",
        detects: "vLLM preemption warnings (`preempted by PreemptionMode.RECOMPUTE … not enough KV cache space`), a rising `vllm:num_preemptions_total`, or KV usage pinned near 100 %.",
        why: "When the KV cache cannot hold every running sequence, the scheduler evicts some and recomputes them later: their tokens stop for the whole recompute, and the extra prefill slows everyone's steps.",
        example: "`GPU KV cache usage: 99.2%` with 40 preemption warnings in five minutes.",
        fix: "Lower --max-num-seqs, raise --gpu-memory-utilization if memory allows, enable prefix caching, store KV in fp8 (`--kv-cache-dtype fp8`), or add GPUs (TP) for a larger cache.",
        zh: RuleText {
            title: "KV 缓存吃紧：请求被抢占后重算",
            detects: "vLLM 抢占告警（`preempted by PreemptionMode.RECOMPUTE … not enough KV cache space`）、持续上涨的 `vllm:num_preemptions_total`，或 KV 使用率长时间贴近 100%。",
            why: "KV 缓存装不下所有运行中的序列时，调度器会踢出一部分、稍后重算：被踢的请求在重算期间一个 token 都不出，多出来的 prefill 还会拖慢所有请求的每一步。",
            example: "`GPU KV cache usage: 99.2%`，五分钟内 40 条抢占告警。",
            fix: "调低 --max-num-seqs；显存允许时调高 --gpu-memory-utilization；开启 prefix caching；KV 用 fp8 存（`--kv-cache-dtype fp8`）；或加卡（TP）换更大的缓存。",
        },
    },
    check,
};

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let v = &f.vllm;
    let mut confidence: f64 = 0.0;
    let mut reasons = Vec::new();
    let mut evidence = Vec::new();
    if v.preemptions > 0 {
        confidence = 0.8;
        let n = v.preemptions;
        reasons.push(lang.pick(
            format!("{n} preemption warning(s) in the vLLM log"),
            format!("vLLM 日志中有 {n} 条抢占告警"),
        ));
        evidence.extend(v.preemption_lines.iter().take(2).cloned());
    }
    let logged_preemptions = v.stats.iter().filter_map(|s| s.preemptions).fold(0.0, f64::max);
    if logged_preemptions > 0.0 {
        confidence = confidence.max(0.75);
        reasons.push(lang.pick(
            format!("the stats lines count up to {logged_preemptions:.0} preemptions"),
            format!("统计行里的抢占计数最高达 {logged_preemptions:.0} 次"),
        ));
        if let Some(s) = v.stats.iter().find(|s| s.preemptions.unwrap_or(0.0) > 0.0) {
            evidence.push(s.evidence.clone());
        }
    }
    let full: Vec<_> = v
        .stats
        .iter()
        .filter(|s| s.kv_usage_pct.unwrap_or(0.0) >= 95.0 && s.running.unwrap_or(0.0) > 0.0)
        .collect();
    // A full cache corroborates preemptions; on its own it is only a hint (a stalled engine also
    // holds a full cache, and then the stall, not the cache, is the incident).
    let preempted = |c: f64| c >= 0.75;
    if full.len() >= 2 {
        confidence = confidence.max(if preempted(confidence) { 0.85 } else { 0.55 });
        let n = full.len();
        reasons.push(lang.pick(
            format!("GPU KV cache usage was ≥ 95 % with requests running in {n} stats lines"),
            format!("有 {n} 条统计行在有请求运行时 GPU KV 缓存使用率 ≥ 95%"),
        ));
        evidence.push(full[0].evidence.clone());
    }
    let delta = f.metrics.delta("vllm:num_preemptions_total");
    if let Some(d) = delta.filter(|d| *d > 0.0) {
        confidence = confidence.max(0.8);
        reasons.push(lang.pick(
            format!("vllm:num_preemptions_total rose by {d:.0} between scrapes"),
            format!("两次抓取之间 vllm:num_preemptions_total 增加了 {d:.0}"),
        ));
        if let Some((_, s)) = f.metrics.latest().and_then(|s| s.sum("vllm:num_preemptions_total")) {
            evidence.push(f.metrics.latest()?.evidence(s));
        }
    }
    if let Some(scrape) = f.metrics.latest() {
        let usage = scrape.max("vllm:kv_cache_usage_perc").or_else(|| scrape.max("sglang:token_usage"));
        let running = scrape
            .sum("vllm:num_requests_running")
            .or_else(|| scrape.sum("sglang:num_running_reqs"))
            .map_or(0.0, |x| x.0);
        if let Some((u, s)) = usage
            && u >= 0.95
            && running > 0.0
        {
            confidence = confidence.max(if preempted(confidence) { 0.85 } else { 0.55 });
            let pct = u * 100.0;
            reasons.push(lang.pick(
                format!("KV cache usage {pct:.0} % in the last scrape with {running:.0} running"),
                format!("最后一次抓取中 KV 缓存使用率 {pct:.0}%，{running:.0} 个请求在运行"),
            ));
            evidence.push(scrape.evidence(s));
        }
    }
    if f.sglang.retractions > 0 {
        confidence = confidence.max(0.8);
        let n = f.sglang.retractions;
        reasons.push(lang.pick(
            format!("SGLang retracted {n} running request(s) for lack of KV space"),
            format!("SGLang 因 KV 空间不足撤回了 {n} 个运行中的请求"),
        ));
        evidence.extend(f.sglang.retraction_lines.iter().take(2).cloned());
    }
    let sgl_full: Vec<_> = f.sglang.batches.iter().filter(|b| b.token_usage.unwrap_or(0.0) >= 0.95).collect();
    if sgl_full.len() >= 2 {
        confidence = confidence.max(0.55);
        let n = sgl_full.len();
        reasons.push(lang.pick(
            format!("SGLang token usage ≥ 0.95 in {n} batches"),
            format!("SGLang 有 {n} 个 batch 的 token usage ≥ 0.95"),
        ));
        evidence.push(sgl_full[0].evidence.clone());
    }
    RULE.doc.finding_from_reasons(
        lang,
        ("The KV cache is the bottleneck", "瓶颈在 KV 缓存"),
        &reasons,
        FindingBody {
            confidence,
            evidence,
            remediation: texts(lang, &[
                ("lower --max-num-seqs so the running batch fits the cache", "调低 --max-num-seqs，让运行中的批能放进缓存"),
                (
                    "raise --gpu-memory-utilization (e.g. 0.90 → 0.95) if nothing else shares the GPU",
                    "如果没有别的进程共用这张卡，调高 --gpu-memory-utilization（例如 0.90 → 0.95）",
                ),
                (
                    "--enable-prefix-caching to share common prefixes; --kv-cache-dtype fp8 to halve KV bytes per token",
                    "--enable-prefix-caching 复用公共前缀；--kv-cache-dtype fp8 让每 token 的 KV 字节数减半",
                ),
                (
                    "add GPUs (tensor parallelism) to grow the cache, then re-check with `triage kv`",
                    "加卡（张量并行）扩大缓存，然后用 `triage kv` 重新核算",
                ),
            ]),
            next_checks: texts(lang, &[(
                "run `triage kv` for this model to see how many tokens the cache holds at your max_model_len",
                "对这个模型跑 `triage kv`，看在你的 max_model_len 下缓存能容纳多少 token",
            )]),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    #[test]
    fn fires_on_preemption_warnings() {
        let log = "WARNING 11-29 10:00:00 scheduler.py:1057] Sequence group cmpl-abc is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space.\n";
        case(&[("vllm.log", log)]).snapshot(RuleId::KvPressurePreemption, "preemption_warning").unwrap();
    }

    #[test]
    fn fires_on_full_kv_in_metrics_and_quiet_when_not() {
        let m = "vllm:kv_cache_usage_perc{engine=\"0\"} 0.99\nvllm:num_requests_running{engine=\"0\"} 30\n";
        assert!(
            case(&[("metrics", m)]).snapshot(RuleId::KvPressurePreemption, "full_kv_in_metrics").is_some()
        );
        let m = "vllm:kv_cache_usage_perc{engine=\"0\"} 0.40\nvllm:num_requests_running{engine=\"0\"} 30\n";
        assert!(
            case(&[("metrics", m)])
                .snapshot(RuleId::KvPressurePreemption, "quiet_kv_at_40_percent")
                .is_none()
        );
    }

    #[test]
    fn a_full_cache_alone_is_a_hint_and_a_stall_outranks_it() {
        let stuck: String = (0..4)
            .map(|i| format!("INFO 11-29 10:00:{i:02} [loggers.py:1] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 48 reqs, Waiting: 30 reqs, GPU KV cache usage: 99.0%, Prefix cache hit rate: 0.0%\n"))
            .collect();
        let metrics = "vllm:kv_cache_usage_perc 0.99\nvllm:num_requests_running 48\n";
        let inputs = [("vllm.log", stuck.as_str()), ("metrics", metrics)];
        // Two views of one full cache are not a preemption: the snapshot holds the lower
        // confidence of a hint.
        case(&inputs).snapshot(RuleId::KvPressurePreemption, "full_cache_while_stalled").unwrap();
        let r = case(&inputs).en;
        assert_eq!(r.findings[0].rule, RuleId::SchedulerStall);
        let hint = r.findings.iter().find(|f| f.rule == RuleId::KvPressurePreemption).unwrap();
        assert!(hint.confidence < r.findings[0].confidence, "{:?}", r.findings);
    }

    crate::rules::snapshots! {
        corpus_mixed_sglang_vllm_sglang_retract: [("mixed-sglang-vllm-sglang-retract.log", fixture!("incidents/sglang/mixed-sglang-vllm-sglang-retract.log"))],
        corpus_tbt_046_decode_retract: [("tbt-046-decode-retract.log", fixture!("incidents/sglang/tbt-046-decode-retract.log"))],
    }
}
