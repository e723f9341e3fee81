//! Rule `kv-leak`: KV cache stays full while nothing runs — requests were never released.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::report::{Class, EvidenceLine, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::KvLeak,
        class: Class::ThroughputZero,
        title: "KV leak: the cache stays full while nothing runs",
        detects: "KV cache usage stays high while the engine reports no running requests (vLLM stats or metrics), optionally with GPU memory full and utilisation 0.",
        why: "Requests that ended on the client side (timeouts, disconnects) but were never aborted keep their KV blocks. The cache fills with dead requests, new ones cannot be scheduled, and throughput falls to zero while the GPU idles.",
        example: "`Running: 0 reqs, Waiting: 35 reqs, GPU KV cache usage: 97.0%` for minutes; nvidia-smi shows 138 GB used at 0 % utilisation.",
        fix: "Abort requests on client timeout or disconnect (`engine.abort(request_id)`), enforce hard timeouts and max_tokens, add a watchdog on KV usage versus running requests, and restart the worker to recover now.",
        zh: RuleText {
            title: "KV 泄漏：没有请求在跑，缓存却一直是满的",
            detects: "引擎报告没有运行中的请求（vLLM 统计行或指标），KV 缓存使用率却一直很高；可能同时伴随 GPU 显存占满、利用率为 0。",
            why: "在客户端那边已经结束（超时、断开）却从未被 abort 的请求会一直占着它们的 KV 块。缓存被这些死请求填满，新请求调度不进来，GPU 空转，吞吐跌到零。",
            example: "连续几分钟都是 `Running: 0 reqs, Waiting: 35 reqs, GPU KV cache usage: 97.0%`；nvidia-smi 显示显存用了 138 GB、利用率 0%。",
            fix: "客户端超时或断开时 abort 请求（`engine.abort(request_id)`），强制硬超时和 max_tokens，加一个对比 KV 使用率与运行中请求数的 watchdog；现在先重启 worker 恢复服务。",
        },
    },
    check,
};

/// KV usage (a fraction) below this is an empty cache: an idle engine's.
const EMPTY_CACHE: f64 = 0.05;

/// What one sign of a leak found: its confidence, why (one sentence), and the lines.
type Judged = (f64, String, Vec<EvidenceLine>);

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let engine_signs =
        [vllm_idle_full(f, lang), sglang_idle_full(f, lang), leak_check(f, lang), scrape_idle_full(f, lang)];
    let mut confidence: f64 = 0.0;
    let mut reasons = Vec::new();
    let mut evidence = Vec::new();
    for (c, why, lines) in engine_signs.into_iter().flatten() {
        confidence = confidence.max(c);
        reasons.push(why);
        evidence.extend(lines);
    }
    // The GPU side confirms the engine's signs; on its own it is a hint.
    if let Some((why, line)) = gpu_idle_full(f, lang, confidence > 0.0) {
        confidence = if confidence > 0.0 { 0.9 } else { 0.3 };
        reasons.push(why);
        evidence.push(line);
    }
    // A weak finding says what else it could be.
    let hint = || {
        if confidence >= 0.5 {
            return String::new();
        }
        lang.pick(
            " On its own this is also what an idle vLLM looks like (it preallocates gpu_memory_utilization of the memory): confirm with the engine's running-request count and KV usage.",
            "单看这一点，空闲的 vLLM 也是这个样子（它会预先占用 gpu_memory_utilization 比例的显存）：要结合引擎的运行中请求数和 KV 使用率确认。",
        )
        .to_owned()
    };
    RULE.doc.finding_from_reasons_then(
        lang,
        ("Memory is held by requests that no longer run", "显存被已经不在运行的请求占着"),
        &reasons,
        hint,
        FindingBody {
            confidence,
            evidence,
            remediation: texts(lang, &[
                ("restart the worker to free the cache now", "现在先重启 worker 释放缓存"),
                (
                    "abort on client timeout or disconnect: engine.abort(request_id) in the serving layer (the article's guarded_generate)",
                    "客户端超时或断开时 abort：在服务层调用 engine.abort(request_id)（即文中的 guarded_generate）",
                ),
                ("enforce a hard per-request timeout and max_tokens", "强制每个请求的硬超时和 max_tokens"),
                (
                    "alert when KV usage stays above 50 % while running requests are 0 (a watchdog on memory versus active requests)",
                    "当运行中请求为 0 而 KV 使用率持续高于 50% 时告警（监控显存占用与活跃请求数偏离的 watchdog）",
                ),
            ]),
            next_checks: texts(lang, &[
                (
                    "compare vllm:kv_cache_usage_perc with vllm:num_requests_running over the last hour",
                    "对比过去一小时的 vllm:kv_cache_usage_perc 与 vllm:num_requests_running",
                ),
                (
                    "count client timeouts versus `Aborted request` lines in the engine log",
                    "对比客户端超时的次数和引擎日志里 `Aborted request` 的行数",
                ),
            ]),
        },
    )
}

/// vLLM's stats lines: nothing running while the KV cache stays at least half used.
fn vllm_idle_full(f: &Facts, lang: Lang) -> Option<Judged> {
    let leaked: Vec<_> = f
        .vllm
        .stats
        .iter()
        .filter(|s| s.running == Some(0.0) && s.kv_usage_pct.unwrap_or(0.0) >= 50.0)
        .collect();
    if leaked.len() < 2 {
        return None;
    }
    let worst = leaked.iter().map(|s| s.kv_usage_pct.unwrap_or(0.0)).fold(0.0, f64::max);
    let n = leaked.len();
    let why = lang.pick(
        format!("{n} stats lines show 0 running requests with KV usage up to {worst:.1} %"),
        format!("{n} 条统计行显示运行中请求为 0，KV 使用率却高达 {worst:.1}%"),
    );
    Some((0.8, why, vec![leaked[0].evidence.clone()]))
}

/// SGLang: decode batches with nothing running and the pool still mostly used.
fn sglang_idle_full(f: &Facts, lang: Lang) -> Option<Judged> {
    let sgl: Vec<_> = f
        .sglang
        .batches
        .iter()
        .filter(|b| b.running == Some(0.0) && b.token_usage.unwrap_or(0.0) >= 0.5)
        .collect();
    let b = sgl.first()?;
    let pct = b.token_usage.unwrap_or(0.0) * 100.0;
    let why = lang.pick(
        format!("SGLang reports 0 running requests with token usage at {pct:.0} %"),
        format!("SGLang 显示运行中请求为 0，token usage 却为 {pct:.0}%"),
    );
    Some((0.7, why, vec![b.evidence.clone()]))
}

/// The engine's own leak check (SGLang's `token_to_kv_pool_allocator memory leak detected!`).
fn leak_check(f: &Facts, lang: Lang) -> Option<Judged> {
    let checks = f.signals.lines_for(RULE.doc.id, 2);
    if checks.is_empty() {
        return None;
    }
    let why = lang.pick(
        "the engine's own leak check reports KV-cache slots that no request holds".to_owned(),
        "引擎自己的泄漏检查报告有 KV 缓存槽位不属于任何请求".to_owned(),
    );
    Some((0.85, why, checks))
}

/// The last scrape: KV usage at least half with nothing running.
fn scrape_idle_full(f: &Facts, lang: Lang) -> Option<Judged> {
    if let Some(scrape) = f.metrics.latest()
        && let (Some((usage, s)), Some((running, _))) =
            (scrape.max("vllm:kv_cache_usage_perc"), scrape.sum("vllm:num_requests_running"))
        && running == 0.0
        && usage >= 0.5
    {
        let pct = usage * 100.0;
        let why = lang.pick(
            format!("the last scrape shows KV usage {pct:.0} % with 0 running requests"),
            format!("最后一次抓取显示 KV 使用率 {pct:.0}%，运行中请求为 0"),
        );
        return Some((0.75, why, vec![scrape.evidence(s)]));
    }
    None
}

/// GPU side: memory held, no compute. Normal for an idle vLLM (it preallocates), so on its own
/// this is only a hint; with the engine's view it confirms. In a series (CSV `-l`, dmon, a
/// Prometheus window) only each GPU's last reading counts: a GPU idle for one sample of a
/// busy series — the first scrape after start-up — has released nothing.
/// `engine_says_leak`: an engine sign above fired.
fn gpu_idle_full(f: &Facts, lang: Lang, engine_says_leak: bool) -> Option<(String, EvidenceLine)> {
    let mut last: std::collections::BTreeMap<(&str, u32), u64> = std::collections::BTreeMap::new();
    for g in &f.gpus.readings {
        let e = last.entry((&*g.evidence.input, g.index)).or_insert(g.snapshot);
        *e = (*e).max(g.snapshot);
    }
    let idle_full: Vec<_> = f
        .gpus
        .readings
        .iter()
        .filter(|g| last.get(&(&*g.evidence.input, g.index)) == Some(&g.snapshot))
        .filter(|g| {
            g.util_pct == Some(0.0)
                && matches!((g.mem_used_mib, g.mem_total_mib), (Some(u), Some(t)) if t > 0.0 && u / t >= 0.85)
        })
        .collect();
    // The engine's own view, in the same analysis, says idle with the cache empty: the memory
    // the GPU holds is vLLM's preallocated KV cache, not a leak, and the hint yields.
    let empty_cache = |running: Option<f64>, usage: Option<f64>| {
        running == Some(0.0) && usage.is_some_and(|u| u < EMPTY_CACHE)
    };
    let engine_idle_empty =
        f.metrics.latest().is_some_and(|s| {
            empty_cache(
                s.sum("vllm:num_requests_running").map(|x| x.0),
                s.max("vllm:kv_cache_usage_perc").map(|x| x.0),
            )
        }) || f.vllm.stats.last().is_some_and(|s| empty_cache(s.running, s.kv_usage_pct.map(|p| p / 100.0)));
    let g = *idle_full.first()?;
    if !engine_says_leak && engine_idle_empty {
        return None;
    }
    let (idx, used, total) = (g.index, g.mem_used_mib.unwrap_or(0.0), g.mem_total_mib.unwrap_or(0.0));
    let why = lang.pick(
        format!("GPU {idx} has {used:.0} of {total:.0} MiB in use at 0 % utilisation"),
        format!("GPU {idx} 显存已用 {used:.0} / {total:.0} MiB，利用率却是 0%"),
    );
    Some((why, g.evidence.clone()))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;

    #[test]
    fn fires_on_full_cache_with_nothing_running() {
        let log = "INFO 11-29 10:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 35 reqs, GPU KV cache usage: 97.0%, Prefix cache hit rate: 0.0%\n".repeat(3);
        case(&[("vllm.log", &log)]).snapshot(RuleId::KvLeak, "full_cache_nothing_running").unwrap();
    }

    /// A GPU series: idle at its first sample (just started), busy after — no leak; idle with
    /// its memory full at the last sample — the hint.
    #[test]
    fn only_the_last_reading_of_a_gpu_series_counts() {
        let head = "index, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n";
        let busy_after_idle =
            format!("{head}0, 0, 130000, 143771\n0, 97, 130000, 143771\n0, 95, 130000, 143771\n");
        assert!(
            case(&[("smi.csv", &busy_after_idle)])
                .snapshot(RuleId::KvLeak, "quiet_gpu_idle_only_at_start")
                .is_none()
        );
        let idle_at_the_end = format!("{head}0, 97, 130000, 143771\n0, 0, 130000, 143771\n");
        let f = case(&[("smi.csv", &idle_at_the_end)])
            .snapshot(RuleId::KvLeak, "gpu_idle_at_the_last_reading")
            .unwrap();
        assert_eq!(f.evidence[0].line, 3, "the last reading is cited: {:?}", f.evidence);
    }

    /// An idle GPU with its memory reserved beside the engine's own view: idle with an empty
    /// cache — vLLM's preallocation, the hint yields; nothing running with the cache full — a
    /// leak, confirmed.
    #[test]
    fn the_gpu_hint_yields_to_an_idle_engine_with_an_empty_cache() {
        let smi = "index, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n0, 97, 130000, 143771\n0, 0, 130000, 143771\n";
        let metrics = |kv: f64| {
            format!(
                "vllm:num_requests_running{{model_name=\"m\"}} 0\nvllm:num_requests_waiting{{model_name=\"m\"}} 0\nvllm:kv_cache_usage_perc{{model_name=\"m\"}} {kv}\n"
            )
        };
        let empty = metrics(0.01);
        assert!(
            case(&[("smi.csv", smi), ("metrics", &empty)])
                .snapshot(RuleId::KvLeak, "quiet_gpu_hint_engine_idle_empty")
                .is_none()
        );
        let log = "INFO 11-29 10:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.2%, Prefix cache hit rate: 0.0%\n";
        assert!(
            case(&[("smi.csv", smi), ("vllm.log", log)])
                .snapshot(RuleId::KvLeak, "quiet_gpu_hint_engine_log_idle_empty")
                .is_none()
        );
        let full = metrics(0.97);
        let f = case(&[("smi.csv", smi), ("metrics", &full)])
            .snapshot(RuleId::KvLeak, "gpu_hint_with_a_full_cache")
            .unwrap();
        // The engine's full cache confirms the hint: surer than the GPU reading alone.
        let alone = case(&[("smi.csv", smi)]).fired(RuleId::KvLeak).unwrap();
        assert!(f.confidence > alone.confidence, "{} vs {}", f.confidence, alone.confidence);
    }

    #[test]
    fn quiet_on_an_idle_empty_cache() {
        let log = "INFO 11-29 10:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%\n".repeat(3);
        assert!(case(&[("vllm.log", &log)]).snapshot(RuleId::KvLeak, "quiet_idle_empty_cache").is_none());
    }

    crate::rules::snapshots! {
        corpus_throughput_046_kv_leak_idle: [("throughput-046-kv-leak-idle.log", fixture!("incidents/sglang/throughput-046-kv-leak-idle.log"))],
        corpus_throughput_kv_leak: [("throughput_kv_leak.prom", fixture!("incidents/throughput_kv_leak.prom"))],
    }
}
