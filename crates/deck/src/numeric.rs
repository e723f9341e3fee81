//! Numeric cards: answered by typing a number, checked with a stated tolerance.
//!
//! Generated, not stored: a fixed parameter grid (model preset × GPU × TP × KV dtype ×
//! max_model_len, and a few histograms) goes through the same code `triage kv` runs
//! ([`build_report_in`]) and the histogram quantiles of [`triage_base::stats::buckets`]. The back is
//! the estimator's own formula lines. No randomness: the same deck every time.

use triage_base::lang::Lang;
use triage_base::stats::{BucketQuantile, CumulativeHistogram};
use triage_cards::{Card, CardKind, Tag, card};
use triage_kv::presets::preset;
use triage_kv::report::KvReport;
use triage_kv::request::{KvRequest, build_report_in};
use triage_kv::units::{fmt_gib, fmt_int, fmt_ppm};

/// What a KV card asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvAsk {
    /// KV bytes one token takes on each GPU (`bytes_per_token_per_rank`), in B.
    BytesPerToken,
    /// Tokens the KV cache holds (`tokens`, vLLM's "GPU KV cache size").
    Tokens,
    /// Requests of `max_model_len` tokens that fit at once (`max_concurrency`).
    Concurrency,
    /// KV memory for `--need SEQSxLEN` over all GPUs (`need.kv_bytes_all_ranks`), in GB.
    NeedGb,
}

/// One KV question: the `triage kv` request and what to read from its report.
#[derive(Clone, Debug, PartialEq)]
pub struct KvQuestion {
    /// The card id.
    pub id: String,
    /// What to read from the report.
    pub ask: KvAsk,
    /// The `triage kv` request the question is about.
    pub request: KvRequest,
}

/// (model, tp, kv dtype): bytes per token per GPU.
const BYTES: &[(&str, u32, &str)] = &[
    ("llama-3.1-8b", 1, "auto"),
    ("llama-3.1-8b", 1, "fp8"),
    ("llama-3.1-70b", 4, "auto"),
    ("llama-3.1-70b", 8, "fp8"),
    ("llama-3.1-405b", 8, "auto"),
    ("llama-2-7b", 1, "auto"),
    ("llama-2-7b", 2, "fp8"),
    ("qwen2.5-7b", 1, "auto"),
    ("qwen2.5-7b", 4, "auto"),
    ("qwen2.5-72b", 4, "auto"),
    ("qwen3-32b", 2, "auto"),
    ("mistral-nemo-12b", 1, "fp8"),
    ("glm-4-9b", 4, "auto"),
    ("deepseek-v3", 8, "auto"),
];

/// (model, GPU, tp, kv dtype, max_model_len): tokens that fit and concurrency.
const CAPACITY: &[(&str, &str, u32, &str, u64)] = &[
    ("llama-3.1-8b", "h100", 1, "auto", 8192),
    ("llama-3.1-8b", "l40s", 1, "fp8", 32768),
    ("llama-3.1-8b", "a10g", 1, "auto", 4096),
    ("llama-3.1-70b", "h100", 4, "auto", 32768),
    ("llama-3.1-70b", "h200", 2, "fp8", 131072),
    ("qwen2.5-7b", "rtx-4090", 1, "auto", 32768),
    ("qwen2.5-32b", "a100-80gb", 2, "auto", 16384),
    ("qwen3-8b", "l4", 1, "fp8", 8192),
    ("qwen3-32b", "h200", 1, "auto", 40960),
    ("mistral-7b-v0.3", "a100-40gb", 1, "auto", 32768),
    ("mixtral-8x7b", "h100", 2, "auto", 32768),
    ("phi-4", "l40s", 1, "auto", 16384),
];

/// (model, tp, kv dtype, sequences, length): KV memory for a workload.
const NEED: &[(&str, u32, &str, u64, u64)] = &[
    ("llama-2-7b", 1, "auto", 64, 4096),
    ("llama-3.1-8b", 1, "auto", 64, 4096),
    ("llama-3.1-8b", 1, "fp8", 128, 8192),
    ("llama-3.1-70b", 8, "auto", 32, 32768),
    ("qwen2.5-72b", 4, "fp8", 16, 131072),
    ("mistral-nemo-12b", 2, "auto", 8, 65536),
];

/// KV memory per GPU assumed by the questions that do not depend on it (`--available-kv-gib`).
pub const FIXED_KV_GIB: &str = "40";

/// Every KV question of the deck, in order.
pub fn kv_questions() -> Vec<KvQuestion> {
    let mut out = Vec::new();
    let base = |model: &str, tp: u32, kv: &str| KvRequest {
        model: Some(model.to_owned()),
        kv_dtype: kv.to_owned(),
        tp,
        ..KvRequest::default()
    };
    // Bytes do not depend on the GPU: a fixed KV memory keeps the back free of a GPU budget.
    let fixed = |model: &str, tp: u32, kv: &str| KvRequest {
        available_kv_gib: Some(FIXED_KV_GIB.to_owned()),
        ..base(model, tp, kv)
    };
    for &(model, tp, kv) in BYTES {
        out.push(KvQuestion {
            id: format!("numeric:kv-bytes:{model}:tp{tp}:{kv}"),
            ask: KvAsk::BytesPerToken,
            request: fixed(model, tp, kv),
        });
    }
    for &(model, gpu, tp, kv, len) in CAPACITY {
        let request =
            KvRequest { gpu: Some(gpu.to_owned()), max_model_len: Some(len), ..base(model, tp, kv) };
        for (ask, name) in [(KvAsk::Tokens, "tokens"), (KvAsk::Concurrency, "concurrency")] {
            out.push(KvQuestion {
                id: format!("numeric:kv-{name}:{model}:{gpu}:tp{tp}:{kv}:{len}"),
                ask,
                request: request.clone(),
            });
        }
    }
    for &(model, tp, kv, seqs, len) in NEED {
        out.push(KvQuestion {
            id: format!("numeric:kv-need:{model}:tp{tp}:{kv}:{seqs}x{len}"),
            ask: KvAsk::NeedGb,
            request: KvRequest { need: Some(format!("{seqs}x{len}")), ..fixed(model, tp, kv) },
        });
    }
    out
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

impl KvQuestion {
    /// The `triage kv` arguments that ask the same question (`--format json` not included).
    pub fn flags(&self) -> Vec<String> {
        let r = &self.request;
        let mut f = vec!["--model".to_owned(), r.model.clone().unwrap_or_default()];
        f.extend(["--tp".to_owned(), r.tp.to_string(), "--kv-dtype".to_owned(), r.kv_dtype.clone()]);
        if let Some(g) = &r.gpu {
            f.extend(["--gpu".to_owned(), g.clone()]);
        }
        if let Some(l) = r.max_model_len {
            f.extend(["--max-model-len".to_owned(), l.to_string()]);
        }
        if let Some(n) = &r.need {
            f.extend(["--need".to_owned(), n.clone()]);
        }
        if let Some(a) = &r.available_kv_gib {
            f.extend(["--available-kv-gib".to_owned(), a.clone()]);
        }
        f
    }

    /// The answer, read from a `triage.kv/v1` report (as `triage kv --format json` prints it).
    pub fn answer(&self, report: &serde_json::Value) -> Option<f64> {
        match self.ask {
            KvAsk::BytesPerToken => report["bytes_per_token_per_rank"].as_f64(),
            KvAsk::Tokens => report["tokens"].as_f64(),
            KvAsk::Concurrency => report["max_concurrency"].as_f64().map(round2),
            KvAsk::NeedGb => report["need"]["kv_bytes_all_ranks"].as_f64().map(|b| round2(b / 1e9)),
        }
    }

    /// How far a typed answer may be from the right one: the formula is exact for bytes (1 %
    /// for slips); tokens and concurrency depend on the budget, stated on the front (2 %).
    pub fn tolerance(&self, answer: f64) -> f64 {
        match self.ask {
            KvAsk::BytesPerToken => (answer * 0.01).round(),
            KvAsk::Tokens => (answer * 0.02).round(),
            KvAsk::Concurrency => round2((answer * 0.02).max(0.05)),
            KvAsk::NeedGb => round2((answer * 0.01).max(0.01)),
        }
    }

    fn tags(&self) -> Vec<Tag> {
        let mut tags = vec![Tag::Kv];
        if self.request.tp > 1 || self.request.gpu.is_some() {
            tags.push(Tag::Gpu);
        }
        if matches!(self.ask, KvAsk::Concurrency | KvAsk::NeedGb) {
            tags.push(Tag::Oom);
        }
        tags
    }
}

/// The model's shape as the front states it: layers, KV heads, head width.
fn shape(model: &str, lang: Lang) -> String {
    let Ok(m) = preset(model).and_then(|p| p.shape()) else { return String::new() };
    let layers = m.num_layers();
    match m.mla {
        Some(x) => lang.pick(
            format!(
                "{layers} MLA layers caching kv_lora_rank {} + rope {} values",
                x.kv_lora_rank, x.qk_rope_head_dim
            ),
            format!(
                "{layers} 层 MLA，每层缓存 kv_lora_rank {} + rope {} 个值",
                x.kv_lora_rank, x.qk_rope_head_dim
            ),
        ),
        None => lang.pick(
            format!("{layers} layers, {} KV heads, head_dim {}", m.num_kv_heads, m.head_dim_k),
            format!("{layers} 层、{} 个 KV 头、head_dim {}", m.num_kv_heads, m.head_dim_k),
        ),
    }
}

fn front(q: &KvQuestion, report: &KvReport, lang: Lang) -> String {
    let r = &q.request;
    let model = r.model.as_deref().unwrap_or_default();
    let (tp, kv) = (r.tp, r.kv_dtype.as_str());
    let shape = shape(model, lang);
    let e = &report.estimate;
    let dtype = e.settings.serving_dtype.as_str();
    match q.ask {
        KvAsk::BytesPerToken => lang.pick(
            format!("{model} ({shape}; serving dtype {dtype}), --kv-cache-dtype {kv}, TP {tp}: how many bytes of KV cache does one token take on each GPU? (B)"),
            format!("{model}（{shape}；服务 dtype {dtype}），--kv-cache-dtype {kv}，TP {tp}：每个 token 在每张 GPU 上占多少字节 KV 缓存？（B）"),
        ),
        KvAsk::NeedGb => {
            let (seqs, len) = e.need.as_ref().map_or((0, 0), |n| (n.seqs, n.len));
            lang.pick(
                format!("{model} ({shape}; serving dtype {dtype}), --kv-cache-dtype {kv}, TP {tp}: how much KV cache do {seqs} sequences of {len} tokens need over all GPUs? (GB, 10^9 B)"),
                format!("{model}（{shape}；服务 dtype {dtype}），--kv-cache-dtype {kv}，TP {tp}：{seqs} 条 {len} token 的序列在所有 GPU 上共需多少 KV 缓存？（GB，10^9 B）"),
            )
        }
        KvAsk::Tokens | KvAsk::Concurrency => {
            let gpu = r.gpu.as_deref().unwrap_or_default();
            let len = r.max_model_len.unwrap_or_default();
            let b = e.budget.as_ref();
            let total = b.map_or(String::new(), |b| fmt_gib(b.gpu_total_bytes));
            let util = b.map_or(String::new(), |b| fmt_ppm(b.utilization_ppm));
            let weights = b.and_then(|b| b.weights_bytes).map_or(String::new(), fmt_gib);
            let other = b.map_or(String::new(), |b| fmt_gib(b.activation_bytes.unwrap_or(0) + b.non_torch_bytes));
            let setting = lang.pick(
                format!("{model} ({shape}; {dtype}), --kv-cache-dtype {kv}, TP {tp} on {gpu} ({total} per GPU, gpu_memory_utilization {util}; per GPU: weights {weights}, activation peak + non-torch {other}), max_model_len {len}, block size {}", e.settings.block_size),
                format!("{model}（{shape}；{dtype}），--kv-cache-dtype {kv}，TP {tp}，{gpu}（每卡 {total}，gpu_memory_utilization {util}；每卡：权重 {weights}，激活峰值 + 非 torch 显存 {other}），max_model_len {len}，block size {}", e.settings.block_size),
            );
            if q.ask == KvAsk::Tokens {
                lang.pick(
                    format!("{setting}: how many tokens does vLLM's KV cache hold (\"GPU KV cache size\")?"),
                    format!("{setting}：vLLM 的 KV 缓存能放多少个 token（\"GPU KV cache size\"）？"),
                )
            } else {
                lang.pick(
                    format!("{setting}: how many requests of max_model_len tokens fit at once (\"Maximum concurrency\", ×)?"),
                    format!("{setting}：同时能放下多少个 max_model_len 长度的请求（\"Maximum concurrency\"，×）？"),
                )
            }
        }
    }
}

/// The worked line of a `--need` question: sequences × blocks × block size × bytes per token.
fn need_line(report: &KvReport, lang: Lang) -> Option<String> {
    let e = &report.estimate;
    let n = e.need.as_ref()?;
    let block = u64::from(e.settings.block_size);
    let all = n.seqs * n.blocks_per_request * block * e.bytes_per_token;
    (all == n.kv_bytes_all_ranks).then(|| {
        let gb = format!("{:.2}", n.kv_bytes_all_ranks as f64 / 1e9);
        let (seqs, blocks, bpt, total) =
            (fmt_int(n.seqs), fmt_int(n.blocks_per_request), fmt_int(e.bytes_per_token), fmt_int(all));
        lang.pick(
            format!("{seqs} sequences × {blocks} blocks × {block} tokens × {bpt} B per token over all GPUs = {total} B = {gb} GB"),
            format!("{seqs} 条序列 × {blocks} 块 × {block} token × 所有 GPU 合计每 token {bpt} B = {total} B = {gb} GB"),
        )
    })
}

fn kv_back(report: &KvReport, answer: &str, lang: Lang) -> String {
    let e = &report.estimate;
    let mut s = format!("{answer}\n");
    if let Some(line) = need_line(report, lang) {
        s.push_str(&line);
        s.push('\n');
    }
    if let Some(b) = &e.budget
        && let Some(avail) = b.available_kv_bytes
    {
        s.push_str(&lang.pick(
            format!("KV budget per GPU: {} → {}\n", fmt_gib(b.requested_bytes), fmt_gib(avail)),
            format!("每卡 KV 预算：{} → {}\n", fmt_gib(b.requested_bytes), fmt_gib(avail)),
        ));
    }
    s.push_str(&e.formula.join("\n"));
    s
}

fn kv_card(q: &KvQuestion) -> Option<Card> {
    let en = build_report_in(&q.request, None, None, Lang::En).ok()?;
    let zh = build_report_in(&q.request, None, None, Lang::Zh).ok()?;
    let answer = q.answer(&serde_json::to_value(&en).ok()?)?;
    let shown = match q.ask {
        KvAsk::BytesPerToken | KvAsk::Tokens => fmt_int(answer as u64),
        KvAsk::Concurrency | KvAsk::NeedGb => format!("{answer:.2}"),
    };
    let unit = match q.ask {
        KvAsk::BytesPerToken => " B",
        KvAsk::Tokens => " tokens",
        KvAsk::Concurrency => "x",
        KvAsk::NeedGb => " GB",
    };
    let unit_zh = if q.ask == KvAsk::Tokens { " 个 token" } else { unit };
    let mut c = card(
        q.id.clone(),
        CardKind::Numeric,
        &q.tags(),
        (front(q, &en, Lang::En), front(q, &zh, Lang::Zh)),
        (
            kv_back(&en, &format!("{shown}{unit}"), Lang::En),
            kv_back(&zh, &format!("{shown}{unit_zh}"), Lang::Zh),
        ),
    );
    c.answer = Some(answer);
    c.tolerance = Some(q.tolerance(answer));
    Some(c)
}

/// Histograms: (id, metric, unit, bounds, cumulative counts with the `+Inf` count last).
type Histogram = (&'static str, &'static str, &'static str, &'static [f64], &'static [f64]);

/// The article's buckets (TTFT 100…5000 ms, TBT 10…500 ms) and vLLM's TTFT buckets (s).
const HISTOGRAMS: &[Histogram] = &[
    (
        "ttft-ms-a",
        "llm_ttft_ms",
        "ms",
        &[100.0, 300.0, 500.0, 1000.0, 2000.0, 5000.0],
        &[120.0, 610.0, 850.0, 940.0, 985.0, 998.0, 1000.0],
    ),
    (
        "ttft-ms-b",
        "llm_ttft_ms",
        "ms",
        &[100.0, 300.0, 500.0, 1000.0, 2000.0, 5000.0],
        &[30.0, 200.0, 520.0, 800.0, 930.0, 1990.0, 2000.0],
    ),
    (
        "tbt-ms-a",
        "llm_tbt_ms",
        "ms",
        &[10.0, 30.0, 50.0, 100.0, 200.0, 500.0],
        &[400.0, 7600.0, 9300.0, 9820.0, 9950.0, 9990.0, 10000.0],
    ),
    (
        "tbt-ms-b",
        "llm_tbt_ms",
        "ms",
        &[10.0, 30.0, 50.0, 100.0, 200.0, 500.0],
        &[0.0, 1200.0, 2600.0, 3500.0, 3880.0, 3996.0, 4000.0],
    ),
    (
        "vllm-ttft-s",
        "vllm:time_to_first_token_seconds",
        "s",
        &[0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0],
        &[40.0, 210.0, 390.0, 450.0, 480.0, 492.0, 498.0, 499.0, 500.0, 500.0],
    ),
];

const QUANTILES: &[f64] = &[0.5, 0.9, 0.99];

/// `x` printed with at most 3 decimals, trailing zeros dropped.
fn num(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn histogram_cards(out: &mut Vec<Card>) {
    for &(id, metric, unit, bounds, counts) in HISTOGRAMS {
        let mut pairs: Vec<(f64, f64)> = bounds.iter().copied().zip(counts.iter().copied()).collect();
        let total = counts.last().copied().unwrap_or(0.0);
        pairs.push((f64::INFINITY, total));
        let (h, _) = CumulativeHistogram::from_buckets(&pairs);
        let listing: Vec<String> = pairs
            .iter()
            .map(|(le, c)| {
                format!("le=\"{}\" {}", if le.is_finite() { num(*le) } else { "+Inf".to_owned() }, num(*c))
            })
            .collect();
        let listing = listing.join("\n");
        for &q in QUANTILES {
            let BucketQuantile::Within { value, lower, upper } = h.quantile(q) else { continue };
            let p = num(q * 100.0);
            let rank = q * total;
            let below = pairs.iter().filter(|(le, _)| *le <= lower).map(|(_, c)| *c).fold(0.0, f64::max);
            let at = pairs.iter().find(|(le, _)| *le == upper).map_or(total, |(_, c)| *c);
            let answer = (value * 1000.0).round() / 1000.0;
            let tolerance = ((upper - lower) * 0.02).max(answer * 0.01);
            let tolerance = (tolerance * 1000.0).round() / 1000.0;
            let (v, lo, hi) = (num(answer), num(lower), num(upper));
            let (rank_s, below_s, at_s, total_s) = (num(rank), num(below), num(at), num(total));
            let work = format!(
                "rank = {} × {total_s} = {rank_s}\n({lo}, {hi}]: {below_s} → {at_s}\n{lo} + ({hi} − {lo}) × ({rank_s} − {below_s}) / ({at_s} − {below_s}) = {v} {unit}",
                num(q)
            );
            let mut c = card(
                format!("numeric:p{p}:{id}"),
                CardKind::Numeric,
                &[Tag::Metrics, if metric.contains("tbt") { Tag::Tbt } else { Tag::Ttft }],
                (
                    format!(
                        "Cumulative buckets of {metric}:\n{listing}\nEstimate p{p} as histogram_quantile does ({unit})."
                    ),
                    format!(
                        "{metric} 的累计桶：\n{listing}\n按 histogram_quantile 的方法估算 p{p}（{unit}）。"
                    ),
                ),
                (
                    format!(
                        "{v} {unit}\n{work}\nLinear interpolation inside the bucket that holds the rank: the true value is only known to lie in ({lo}, {hi}]."
                    ),
                    format!(
                        "{v} {unit}\n{work}\n在 rank 所在的桶内线性插值：真实值只能确定落在 ({lo}, {hi}] 之内。"
                    ),
                ),
            );
            c.answer = Some(answer);
            c.tolerance = Some(tolerance);
            out.push(c);
        }
    }
}

/// Every numeric card, in a stable order.
pub fn cards() -> Vec<Card> {
    let mut out: Vec<Card> = kv_questions().iter().filter_map(kv_card).collect();
    histogram_cards(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use triage_kv::request::build_report;
    use triage_kv::units::GIB;

    /// Every KV card's answer is what `triage kv --format json` reports for the same request
    /// (the CLI calls [`build_report`]), and the back is the estimator's formula.
    #[test]
    fn kv_answers_equal_the_estimators() {
        let cards = cards();
        let questions = kv_questions();
        assert_eq!(questions.len(), BYTES.len() + 2 * CAPACITY.len() + NEED.len());
        for q in &questions {
            let report = build_report(&q.request, None, None).unwrap_or_else(|e| panic!("{}: {e}", q.id));
            let json = serde_json::to_value(&report).unwrap();
            let c = cards.iter().find(|c| c.id == q.id).unwrap_or_else(|| panic!("{}: no card", q.id));
            let want = q.answer(&json).unwrap_or_else(|| panic!("{}: no answer", q.id));
            assert_eq!(c.answer, Some(want), "{}", q.id);
            let e = &report.estimate;
            let direct = match q.ask {
                KvAsk::BytesPerToken => e.bytes_per_token_per_rank as f64,
                KvAsk::Tokens => e.tokens.unwrap() as f64,
                KvAsk::Concurrency => round2(e.max_concurrency.unwrap()),
                KvAsk::NeedGb => round2(e.need.as_ref().unwrap().kv_bytes_all_ranks as f64 / 1e9),
            };
            assert_eq!(want, direct, "{}", q.id);
            assert!(want > 0.0, "{}", q.id);
            assert_eq!(c.check(want), Some(true));
            for line in &e.formula {
                assert!(c.back_en.contains(line.as_str()), "{}: {line}", q.id);
            }
            assert!(c.tolerance.unwrap() < want * 0.05 + 0.06, "{}", q.id);
            if q.ask == KvAsk::NeedGb {
                assert!(need_line(&report, Lang::En).is_some(), "{}: the worked line", q.id);
            }
        }
    }

    #[test]
    fn histogram_answers_are_the_bucket_quantiles() {
        let cards = cards();
        let mut n = 0;
        for &(id, _, _, bounds, counts) in HISTOGRAMS {
            let mut pairs: Vec<(f64, f64)> = bounds.iter().copied().zip(counts.iter().copied()).collect();
            pairs.push((f64::INFINITY, *counts.last().unwrap()));
            for &q in QUANTILES {
                let (r, issues) = triage_base::stats::histogram_quantile(q, &pairs);
                assert!(issues.is_empty(), "{id}");
                let card = cards.iter().find(|c| c.id == format!("numeric:p{}:{id}", num(q * 100.0)));
                match r {
                    BucketQuantile::Within { value, .. } => {
                        let c = card.unwrap_or_else(|| panic!("{id} p{q}"));
                        assert!((c.answer.unwrap() - value).abs() < 5e-4, "{id} p{q}");
                        n += 1;
                    }
                    _ => assert!(card.is_none(), "{id} p{q}: not a number, no card"),
                }
            }
        }
        assert!(n >= 10, "{n}");
        // The worked example of the first card: rank 500 in (100, 300] holding 120 → 610.
        let c = cards.iter().find(|c| c.id == "numeric:p50:ttft-ms-a").unwrap();
        let want = 100.0 + 200.0 * (500.0 - 120.0) / (610.0 - 120.0);
        assert!((c.answer.unwrap() - want).abs() < 5e-4);
        assert!(c.back_en.contains("(100, 300]: 120 → 610"), "{}", c.back_en);
    }

    #[test]
    fn numbers_read_as_the_gib_they_state() {
        assert_eq!(fmt_gib(GIB), "1.00 GiB");
        assert_eq!(num(0.99), "0.99");
        assert_eq!(num(1000.0), "1000");
    }
}
