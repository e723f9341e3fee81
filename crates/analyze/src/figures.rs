//! The figures a report shows, each with its unit and definition, derived from the facts.
//! Definitions (and units that are words) are written in the analysis's language; names and
//! values are the same in every language.

use super::facts::Facts;
use super::facts::request_log::{RequestFacts, Row};
use super::report::Figure;
use serde_json::json;
use std::collections::BTreeMap;
use triage_base::lang::Lang;
use triage_base::stats::{QuantileSketch, Summary};

fn round(v: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (v * f).round() / f
}

/// p50/p90/p99/max/mean/n of a sketch, rounded to 0.1 (values within the sketch's 1 % bound).
pub fn quantiles(s: &QuantileSketch) -> Option<serde_json::Value> {
    let q = |p: f64| s.quantile(p).map(|v| round(v, 1));
    Some(json!({
        "p50": q(0.5)?, "p90": q(0.9)?, "p99": q(0.99)?,
        "max": round(s.max()?, 1), "mean": round(s.mean()?, 1), "n": s.count(),
    }))
}

/// A unit in `lang`: symbols (ms, %, MHz, GiB, tokens) are kept, words are translated.
fn unit_in(lang: Lang, unit: &str) -> &str {
    if lang == Lang::En {
        return unit;
    }
    match unit {
        "requests" => "个请求",
        "lines" => "行",
        "events" => "次",
        "count" => "次",
        "scrapes" => "次抓取",
        "readings" => "条读数",
        "reasons" => "项原因",
        "messages" => "条",
        "fraction" => "比例",
        "bytes" => "字节",
        "ms / per s" => "ms / 每秒",
        other => other,
    }
}

/// The figures being written, their definitions (and units that are words) in `lang`.
struct Figures {
    out: BTreeMap<String, Figure>,
    lang: Lang,
}

impl Figures {
    /// The figure `name`: `value` in `unit`, meaning `definition`; nothing when there is no value.
    fn put(&mut self, name: &str, value: Option<serde_json::Value>, unit: &str, definition: &str) {
        if let Some(value) = value {
            self.out.insert(
                name.to_owned(),
                Figure {
                    value,
                    unit: unit_in(self.lang, unit).to_owned(),
                    definition: definition.to_owned(),
                },
            );
        }
    }
}

/// The report's figures, their definitions written in `lang`.
pub fn figures(f: &Facts, lang: Lang) -> BTreeMap<String, Figure> {
    let mut out = Figures { out: BTreeMap::new(), lang };
    request_log(&mut out, f);
    vllm_stats(&mut out, f);
    metrics(&mut out, f);
    gpus(&mut out, f);
    oom(&mut out, f);
    kv_startup(&mut out, f);
    bench(&mut out, f);
    tgi(&mut out, f);
    sglang(&mut out, f);
    out.out
}

/// The figures of the request log's rows: counts, latency quantiles and the slowest requests.
fn request_log(out: &mut Figures, f: &Facts) {
    let lang = out.lang;
    let tr = |en: &'static str, zh: &'static str| lang.pick(en, zh);
    let r = &f.requests;
    if r.is_empty() {
        return;
    }
    // Every row is in the reservoir until it overflows: then quantiles are exact.
    let exact = r.rows as usize <= r.sample.len();
    let note = if exact {
        tr(
            "; quantiles exact, interpolated linearly between closest ranks",
            "；分位数为精确值，在相邻秩之间线性插值",
        )
    } else {
        tr(
            "; quantiles from a sketch with ≤ 1 % relative error",
            "；分位数来自相对误差 ≤ 1% 的草图（sketch）",
        )
    };
    out.put(
        "request_log.requests",
        Some(json!(r.rows)),
        "requests",
        tr("rows read from request logs", "从请求日志读到的行数"),
    );
    request_distributions(out, r, exact, note);
    out.put(
        "request_log.failed",
        Some(json!(r.failed)),
        "requests",
        tr(
            "rows whose status is ≥ 400 or names an error, timeout or abort",
            "状态码 ≥ 400，或状态为错误、超时、中止的行",
        ),
    );
    slowest_requests(out, r);
}

/// Each per-request figure's quantiles: exact while every row is in the reservoir, else the
/// sketch's; `note` says which.
fn request_distributions(out: &mut Figures, r: &RequestFacts, exact: bool, note: &str) {
    let lang = out.lang;
    let tr = |en: &'static str, zh: &'static str| lang.pick(en, zh);
    type Get = fn(&Row) -> Option<f64>;
    let table: [(&str, &QuantileSketch, Get, &str, &str); 8] = [
        (
            "ttft_ms",
            &r.ttft_ms,
            |x| x.ttft_ms,
            "ms",
            tr(
                "server-side TTFT: first_token_time − enqueue_time (or a logged TTFT)",
                "服务端 TTFT（首 token 延迟）：first_token_time − enqueue_time（或日志里记录的 TTFT）",
            ),
        ),
        (
            "queue_ms",
            &r.queue_ms,
            |x| x.queue_ms,
            "ms",
            tr(
                "queue: scheduled − enqueue (or a logged queue time)",
                "排队：scheduled − enqueue（或日志里记录的排队时间）",
            ),
        ),
        (
            "prefill_ms",
            &r.prefill_ms,
            |x| x.prefill_ms,
            "ms",
            tr("prefill: first_token − scheduled", "预填充（prefill）：first_token − scheduled"),
        ),
        (
            "decode_ms",
            &r.decode_ms,
            |x| x.decode_ms,
            "ms",
            tr("decode: last_token − first_token", "解码（decode）：last_token − first_token"),
        ),
        (
            "e2e_ms",
            &r.e2e_ms,
            |x| x.e2e_ms,
            "ms",
            tr("E2E: finish (or last token) − enqueue", "端到端（E2E）：finish（或最后一个 token）− enqueue"),
        ),
        (
            "tpot_ms",
            &r.tpot_ms,
            |x| x.tpot_ms,
            "ms",
            tr(
                "TPOT: (last − first token) / (output tokens − 1), per request",
                "TPOT（每输出 token 时间）：每个请求的（最后 − 首个 token 时间）/（输出 token 数 − 1）",
            ),
        ),
        (
            "prompt_tokens",
            &r.prompt_tokens,
            |x| x.prompt_tokens,
            "tokens",
            tr("prompt length per request", "每个请求的 prompt 长度"),
        ),
        (
            "output_tokens",
            &r.output_tokens,
            |x| x.output_tokens,
            "tokens",
            tr("output length per request", "每个请求的输出长度"),
        ),
    ];
    for (name, sketch, get, unit, definition) in table {
        let value = if exact {
            let values: Vec<f64> = r.sample.iter().filter_map(get).collect();
            Summary::from_values(&values).map(|s| {
                json!({
                    "p50": round(s.p50, 1), "p90": round(s.p90, 1), "p99": round(s.p99, 1),
                    "max": round(s.max, 1), "mean": round(s.mean, 1), "n": s.count,
                })
            })
        } else {
            quantiles(sketch)
        };
        out.put(&format!("request_log.{name}"), value, unit, &format!("{definition}{note}"));
    }
}

/// The slowest requests by TTFT, each with its timeline.
fn slowest_requests(out: &mut Figures, r: &RequestFacts) {
    let lang = out.lang;
    let tr = |en: &'static str, zh: &'static str| lang.pick(en, zh);
    let slowest: Vec<serde_json::Value> = r
        .slowest
        .iter()
        .map(|row| {
            let ms = |v: Option<f64>| v.map(|v| round(v, 1));
            json!({
                "id": row.id, "input": row.evidence.as_ref().map(|e| e.input.clone()), "line": row.line,
                "ttft_ms": ms(row.ttft_ms), "queue_ms": ms(row.queue_ms), "prefill_ms": ms(row.prefill_ms),
                "decode_ms": ms(row.decode_ms), "e2e_ms": ms(row.e2e_ms),
                "prompt_tokens": row.prompt_tokens, "output_tokens": row.output_tokens, "status": row.status,
            })
        })
        .collect();
    if !slowest.is_empty() {
        out.put(
            "request_log.slowest",
            Some(json!(slowest)),
            "requests",
            tr(
                "the slowest requests by TTFT, with their timeline: queue = scheduled − enqueue, prefill = first token − scheduled, decode = last token − first token",
                "TTFT 最慢的请求及其时间线：排队 = scheduled − enqueue，prefill = 首 token − scheduled，decode = 最后 token − 首 token",
            ),
        );
    }
}

/// The figures of vLLM's periodic stats lines and preemption warnings.
fn vllm_stats(out: &mut Figures, f: &Facts) {
    let lang = out.lang;
    let tr = |en: &'static str, zh: &'static str| lang.pick(en, zh);
    let v = &f.vllm;
    if !v.stats.is_empty() {
        let max = |get: fn(&super::parsers::vllm::VllmStat) -> Option<f64>| {
            v.stats.iter().filter_map(get).fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
        };
        out.put(
            "vllm.stats_lines",
            Some(json!(v.stats.len() as u64 + v.stats_dropped)),
            "lines",
            tr("periodic stats lines read", "读到的周期性统计行"),
        );
        out.put(
            "vllm.max_waiting",
            max(|s| s.waiting).map(|x| json!(x)),
            "requests",
            tr(
                "largest `Waiting` (V1) / `Pending` (V0) in the stats lines",
                "统计行中 `Waiting`（V1）/ `Pending`（V0）的最大值",
            ),
        );
        out.put(
            "vllm.max_running",
            max(|s| s.running).map(|x| json!(x)),
            "requests",
            tr("largest `Running` in the stats lines", "统计行中 `Running` 的最大值"),
        );
        out.put(
            "vllm.max_kv_usage_pct",
            max(|s| s.kv_usage_pct).map(|x| json!(x)),
            "%",
            tr("largest `GPU KV cache usage` in the stats lines", "统计行中 `GPU KV cache usage` 的最大值"),
        );
    }
    if v.preemptions > 0 {
        out.put(
            "vllm.preemptions",
            Some(json!(v.preemptions)),
            "events",
            tr(
                "preemption warnings (requests evicted for lack of KV cache space)",
                "抢占告警次数（因 KV 缓存空间不足被踢出的请求）",
            ),
        );
    }
}

/// The figures of Prometheus scrapes: counters over the window, the latency histograms'
/// quantiles, the number of scrapes.
fn metrics(out: &mut Figures, f: &Facts) {
    let lang = out.lang;
    let tr = |en: &'static str, zh: &'static str| lang.pick(en, zh);
    let m = &f.metrics;
    if m.window().is_some() {
        let counters = [
            ("generation_tokens", "vllm:generation_tokens_total"),
            ("prompt_tokens", "vllm:prompt_tokens_total"),
            ("requests_succeeded", "vllm:request_success_total"),
            ("preemptions", "vllm:num_preemptions_total"),
        ];
        let window = m.window_seconds();
        for (name, metric) in counters {
            let Some(metric) = m.resolve_window(metric) else { continue };
            if let Some(d) = m.delta(metric) {
                let v = match window {
                    Some(w) => json!({ "delta": d, "per_s": round(d / w, 2), "window_s": w }),
                    None => json!({ "delta": d }),
                };
                out.put(
                    &format!("metrics.{name}"),
                    Some(v),
                    "count",
                    &lang.pick(
                        format!(
                            "change of `{metric}` between the first and the last scrape (per second when the samples carry timestamps)"
                        ),
                        format!("`{metric}` 在第一次与最后一次抓取之间的增量（样本带时间戳时另给每秒速率）"),
                    ),
                );
            }
        }
    }
    // Server-side latency histograms: quantiles only as good as the buckets — "below the first
    // bucket" is said as such, never interpolated from zero.
    let histograms = [
        (
            "ttft",
            "vllm:time_to_first_token_seconds",
            tr("server-side TTFT (from arrival; no network)", "服务端 TTFT（从请求到达算起，不含网络）"),
        ),
        (
            "itl",
            "vllm:inter_token_latency_seconds",
            tr("server-side inter-token latency per decode step", "服务端每个 decode 步的逐 token 间隔"),
        ),
        (
            "e2e",
            "vllm:e2e_request_latency_seconds",
            tr("server-side end-to-end request latency", "服务端请求端到端延迟"),
        ),
        (
            "queue",
            "vllm:request_queue_time_seconds",
            tr("time in the waiting queue", "在等待队列中的排队时间"),
        ),
        (
            "tpot",
            "vllm:request_time_per_output_token_seconds",
            tr(
                "server-side time per output token, one value per request",
                "服务端每输出 token 时间（每个请求一个值）",
            ),
        ),
        (
            "prefill",
            "vllm:request_prefill_time_seconds",
            tr("time in prefill, per request", "每个请求在 prefill 阶段的时间"),
        ),
        (
            "decode",
            "vllm:request_decode_time_seconds",
            tr("time in decode, per request", "每个请求在 decode 阶段的时间"),
        ),
    ];
    for (name, metric, what) in histograms {
        let Some((buckets, metric)) = m.window_histogram(metric) else { continue };
        let (p50, _) = triage_base::stats::histogram_quantile(0.5, &buckets);
        let (p99, _) = triage_base::stats::histogram_quantile(0.99, &buckets);
        if matches!(p50, triage_base::stats::BucketQuantile::Empty) {
            continue;
        }
        let scope = if m.window().is_some() {
            tr("between the first and the last scrape", "第一次与最后一次抓取之间")
        } else {
            tr("since the server started", "自服务启动以来")
        };
        out.put(
            &format!("metrics.{name}_s"),
            Some(
                json!({ "p50": p50.to_string(), "p99": p99.to_string(), "p50_detail": p50, "p99_detail": p99 }),
            ),
            "s",
            &lang.pick(
                format!(
                    "{what}, from `{metric}` buckets {scope}; Prometheus histogram_quantile, but a quantile in the first bucket is reported as ≤ its bound, not interpolated"
                ),
                format!(
                    "{what}，由 `{metric}` 的分桶计算（{scope}）；算法同 Prometheus histogram_quantile，但落在第一个桶里的分位数报为“≤ 桶上界”，不做插值"
                ),
            ),
        );
    }
    if !f.metrics.scrapes.is_empty() {
        out.put(
            "metrics.scrapes",
            Some(json!(f.metrics.scrapes.len())),
            "scrapes",
            tr(
                "Prometheus scrapes read (a repeated series starts a new scrape)",
                "读到的 Prometheus 抓取次数（同一序列再次出现即视为新一次抓取）",
            ),
        );
    }
}

/// The figures of nvidia-smi readings: how many, each GPU's median SM clock and its clock-event
/// reasons.
fn gpus(out: &mut Figures, f: &Facts) {
    let lang = out.lang;
    let tr = |en: &'static str, zh: &'static str| lang.pick(en, zh);
    if !f.gpus.readings.is_empty() {
        out.put(
            "gpus.readings",
            Some(json!(f.gpus.readings.len())),
            "readings",
            tr("per-GPU readings from nvidia-smi output", "nvidia-smi 输出中的逐卡读数"),
        );
        // Per GPU: the median SM clock over its readings, and every clock-event reason seen.
        let mut by_gpu: BTreeMap<u32, (Vec<f64>, Vec<&str>)> = BTreeMap::new();
        for r in &f.gpus.readings {
            let e = by_gpu.entry(r.index).or_default();
            e.0.extend(r.sm_clock_mhz);
            for reason in r.reason_names() {
                if !e.1.contains(&reason) {
                    e.1.push(reason);
                }
            }
        }
        let clocks: serde_json::Map<String, serde_json::Value> = by_gpu
            .iter()
            .filter_map(|(i, (c, _))| {
                Summary::from_values(c).map(|s| (i.to_string(), json!(round(s.p50, 0))))
            })
            .collect();
        if !clocks.is_empty() {
            out.put(
                "gpus.sm_clock_mhz",
                Some(json!(clocks)),
                "MHz",
                tr(
                    "median SM clock of each GPU over its readings, by GPU index",
                    "每张 GPU 各次读数的 SM 时钟中位数，按 GPU 编号",
                ),
            );
        }
        let reasons: serde_json::Map<String, serde_json::Value> = by_gpu
            .iter()
            .filter(|(_, (_, r))| !r.is_empty())
            .map(|(i, (_, r))| (i.to_string(), json!(r)))
            .collect();
        if !reasons.is_empty() {
            out.put(
                "gpus.clock_event_reasons",
                Some(json!(reasons)),
                "reasons",
                tr(
                    "clock-event (throttle) reasons seen active, by GPU index (NVML names)",
                    "出现过的时钟事件（降频）原因，按 GPU 编号（NVML 名称）",
                ),
            );
        }
    }
}

/// The figures of out-of-memory messages: the first one's figures and how many.
fn oom(out: &mut Figures, f: &Facts) {
    let lang = out.lang;
    let tr = |en: &'static str, zh: &'static str| lang.pick(en, zh);
    if let Some(o) = f.ooms.first() {
        let v = json!({ "tried_gib": o.tried_gib, "total_gib": o.total_gib, "free_gib": o.free_gib,
            "allocated_by_pytorch_gib": o.allocated_by_pytorch_gib, "reserved_unallocated_gib": o.reserved_unallocated_gib });
        out.put(
            "oom.first",
            Some(v),
            "GiB",
            tr(
                "the first out-of-memory message: the failed allocation, the GPU's capacity and free memory, PyTorch's allocated and reserved-but-unallocated memory",
                "第一条显存溢出信息：申请失败的大小、GPU 总容量与空闲显存、PyTorch 已分配及已预留未分配的显存",
            ),
        );
        out.put(
            "oom.count",
            Some(json!(f.ooms.len())),
            "messages",
            tr("out-of-memory messages read", "读到的显存溢出信息条数"),
        );
    }
}

/// The figures of the KV-cache capacity vLLM logs at start-up.
fn kv_startup(out: &mut Figures, f: &Facts) {
    let lang = out.lang;
    let tr = |en: &'static str, zh: &'static str| lang.pick(en, zh);
    let lines: Vec<&str> = f.vllm.startup_lines.iter().map(|e| e.text.as_str()).collect();
    if !lines.is_empty() {
        let s = triage_kv::startup::parse_startup(&lines.join("\n"));
        if let Some(t) = &s.kv_cache_tokens {
            out.put(
                "vllm.kv_cache_tokens",
                Some(json!(t.value)),
                "tokens",
                tr(
                    "`GPU KV cache size` logged at start-up: tokens the KV cache holds",
                    "启动时记录的 `GPU KV cache size`：KV 缓存能容纳的 token 数",
                ),
            );
        }
        if let Some(a) = &s.available_kv {
            out.put(
                "vllm.available_kv",
                Some(json!(a.value.to_string())),
                "bytes",
                tr(
                    "`Available KV cache memory` logged at start-up, as printed",
                    "启动时记录的 `Available KV cache memory`，照原样给出",
                ),
            );
        }
        if let Some(c) = &s.max_concurrency {
            out.put(
                "vllm.max_concurrency",
                Some(
                    json!({"tokens_per_request": c.value.tokens_per_request, "times": c.value.times.as_f64()}),
                ),
                "×",
                tr(
                    "`Maximum concurrency for N tokens per request` logged at start-up",
                    "启动时记录的 `Maximum concurrency for N tokens per request`",
                ),
            );
        }
    }
}

/// Each benchmark run's figures, one entry per run.
fn bench(out: &mut Figures, f: &Facts) {
    let lang = out.lang;
    let tr = |en: &'static str, zh: &'static str| lang.pick(en, zh);
    for (i, b) in f.bench.iter().enumerate() {
        let name = match &b.label {
            Some(l) => format!("bench.{}.{i}.{l}", b.tool),
            None => format!("bench.{}.{i}", b.tool),
        };
        let mut v = json!(b.figures);
        if !b.notes.is_empty() {
            v["notes"] = json!(b.notes);
        }
        out.put(
            &name,
            Some(v),
            "ms / per s",
            tr(
                "a benchmark's figures renamed to this tool's definitions (ttft_ms, tpot_ms, itl_ms, e2e_ms …; see notes where the tool's own names mean something else)",
                "压测工具的指标，已按本工具的定义改名（ttft_ms、tpot_ms、itl_ms、e2e_ms …；工具自己的名称含义不同时见 notes）",
            ),
        );
    }
}

/// The figures of TGI request spans.
fn tgi(out: &mut Figures, f: &Facts) {
    let lang = out.lang;
    let tr = |en: &'static str, zh: &'static str| lang.pick(en, zh);
    let t = &f.tgi;
    if t.requests > 0 {
        out.put(
            "tgi.requests",
            Some(json!(t.requests)),
            "requests",
            tr("TGI request spans read", "读到的 TGI 请求 span 数"),
        );
        out.put(
            "tgi.total_ms",
            quantiles(&t.total_ms),
            "ms",
            tr(
                "TGI total_time per request (validation + queue + inference)",
                "TGI 每个请求的 total_time（校验 + 排队 + 推理）",
            ),
        );
        out.put(
            "tgi.queue_ms",
            quantiles(&t.queue_ms),
            "ms",
            tr("TGI queue_time per request", "TGI 每个请求的 queue_time"),
        );
        out.put(
            "tgi.time_per_token_ms",
            quantiles(&t.time_per_token_ms),
            "ms",
            tr(
                "TGI time_per_token = inference_time / tokens; includes prefill, so it is not TPOT",
                "TGI time_per_token = inference_time / token 数；包含 prefill，所以不是 TPOT",
            ),
        );
    }
}

/// The figures of SGLang batch lines.
fn sglang(out: &mut Figures, f: &Facts) {
    let lang = out.lang;
    let tr = |en: &'static str, zh: &'static str| lang.pick(en, zh);
    let b = &f.sglang.batches;
    if !b.is_empty() {
        let max = |get: fn(&super::parsers::sglang::SglangBatch) -> Option<f64>| {
            b.iter()
                .filter_map(get)
                .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
                .map(|x| json!(x))
        };
        out.put(
            "sglang.batches",
            Some(json!(b.len() as u64 + f.sglang.batches_dropped)),
            "lines",
            tr("SGLang prefill/decode batch lines read", "读到的 SGLang prefill/decode batch 行数"),
        );
        out.put(
            "sglang.max_queue",
            max(|x| x.queue),
            "requests",
            tr("largest `#queue-req` in the batch lines", "batch 行中 `#queue-req` 的最大值"),
        );
        out.put(
            "sglang.max_running",
            max(|x| x.running),
            "requests",
            tr("largest `#running-req` in the batch lines", "batch 行中 `#running-req` 的最大值"),
        );
        out.put(
            "sglang.max_token_usage",
            max(|x| x.token_usage),
            "fraction",
            tr(
                "largest `token usage` (KV pool occupancy, 0..1) in the batch lines",
                "batch 行中 `token usage`（KV 池占用率，0..1）的最大值",
            ),
        );
    }
}

/// Most points in one chart series.
const MAX_POINTS: usize = 2_000;

/// Keep at most [`MAX_POINTS`], evenly spaced, first and last included.
fn thin(points: Vec<[f64; 2]>) -> Vec<[f64; 2]> {
    if points.len() <= MAX_POINTS {
        return points;
    }
    let step = (points.len() - 1) as f64 / (MAX_POINTS - 1) as f64;
    (0..MAX_POINTS).map(|i| points[((i as f64 * step).round() as usize).min(points.len() - 1)]).collect()
}

/// Chart data: request-log samples (TTFT, TPOT; from the reservoir, so bounded), the vLLM stats
/// time series, and SGLang's decode batches.
pub fn series(f: &Facts) -> BTreeMap<String, Vec<[f64; 2]>> {
    let mut out = BTreeMap::new();
    let sample = |get: fn(&Row) -> Option<f64>| -> Vec<[f64; 2]> {
        f.requests.sample.iter().filter_map(get).enumerate().map(|(i, v)| [i as f64, round(v, 3)]).collect()
    };
    for (name, get) in [
        ("request_log.ttft_ms", (|r: &Row| r.ttft_ms) as fn(&Row) -> Option<f64>),
        ("request_log.tpot_ms", |r: &Row| r.tpot_ms),
    ] {
        let s = thin(sample(get));
        if !s.is_empty() {
            out.insert(name.to_owned(), s);
        }
    }
    let stats = &f.vllm.stats;
    let t0 = stats.iter().find_map(|s| s.t);
    if let Some(t0) = t0 {
        type Get = fn(&super::parsers::vllm::VllmStat) -> Option<f64>;
        let fields: [(&str, Get); 4] = [
            ("vllm.running", |s| s.running),
            ("vllm.waiting", |s| s.waiting),
            ("vllm.kv_usage_pct", |s| s.kv_usage_pct),
            ("vllm.gen_tps", |s| s.gen_tps),
        ];
        for (name, get) in fields {
            let points: Vec<[f64; 2]> = stats.iter().filter_map(|s| Some([s.t? - t0, get(s)?])).collect();
            if !points.is_empty() {
                out.insert(name.to_owned(), thin(points));
            }
        }
    }
    // SGLang's batch lines: rank 0 only (with data-parallel attention every rank prints its own
    // line; one rank's view is the chart, the rules read them all). Decode lines carry the
    // throughput; both kinds carry running, queue and token usage.
    let batches: Vec<&super::parsers::sglang::SglangBatch> = f
        .sglang
        .batches
        .iter()
        .filter(|b| b.dp_rank.unwrap_or(0) == 0 && b.tp_rank.unwrap_or(0) == 0)
        .collect();
    if let Some(t0) = batches.iter().find_map(|b| b.t) {
        type Get = fn(&super::parsers::sglang::SglangBatch) -> Option<f64>;
        let fields: [(&str, Get); 4] = [
            ("sglang.running", |b| b.running),
            ("sglang.queue", |b| b.queue),
            ("sglang.token_usage_pct", |b| b.token_usage.map(|u| round(u * 100.0, 3))),
            ("sglang.gen_tps", |b| if b.prefill { None } else { b.gen_tps }),
        ];
        for (name, get) in fields {
            let points: Vec<[f64; 2]> = batches.iter().filter_map(|b| Some([b.t? - t0, get(b)?])).collect();
            if !points.is_empty() {
                out.insert(name.to_owned(), thin(points));
            }
        }
    }
    // GPU recordings: each GPU's SM clock and power over the recording (the first recording's,
    // when several were given).
    if let Some(g) = f.gpu_series.first() {
        for (gpu, sm, power) in &g.finished.curves {
            for (name, curve) in [("gpu.sm_clock_mhz", sm), ("gpu.power_w", power)] {
                let points: Vec<[f64; 2]> =
                    curve.points().iter().map(|p| [round(p[0], 3), round(p[1], 1)]).collect();
                if !points.is_empty() {
                    out.insert(format!("{name}.{gpu}"), points);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::Lang;
    use crate::testutil::{fixture_bytes, run_inputs};

    #[test]
    fn sglang_batch_lines_become_time_series() {
        let r = run_inputs(Lang::En, &[("server.log", fixture_bytes!("sglang/server.log"))]).report;
        for name in ["sglang.running", "sglang.queue", "sglang.token_usage_pct", "sglang.gen_tps"] {
            let s = r.series.get(name).unwrap_or_else(|| panic!("no {name} in {:?}", r.series.keys()));
            assert!(s.len() >= 2, "{name}: {s:?}");
            assert!(s[0][0] >= 0.0, "{name}: x counts from the first batch line");
            assert!(s.windows(2).all(|w| w[0][0] <= w[1][0]), "{name} in time order");
        }
        assert_eq!(r.series["sglang.running"][0][0], 0.0);
        let usage = &r.series["sglang.token_usage_pct"];
        assert!(usage.iter().all(|p| (0.0..=100.0).contains(&p[1])), "{usage:?}");
        assert!(!r.series.contains_key("vllm.running"));
    }
}
