//! Options in, capacity out: bytes per token, blocks, tokens, concurrency, the `max_model_len`
//! that fits, the `max_num_seqs` that keeps KV inside the budget, and the reverse question
//! (memory needed for `seqs × len`).
//!
//! Rounding, everywhere: bytes and blocks are integers rounded down (vLLM keeps whole blocks);
//! concurrency is `blocks / blocks_per_request` as an IEEE double, printed to two decimals as
//! vLLM's `%.2f` prints it, and its whole part rounded down; `tokens` is vLLM 0.33's
//! `int(concurrency × max_model_len)` (see [`crate::kv::layout`] for the sources).

use crate::kv::KvError;
use crate::kv::article::article_kv_bytes;
use crate::kv::budget::{self, Budget, BudgetContext, BudgetInputs};
use crate::kv::defaults;
use crate::kv::dtype::{KvDtype, ModelDtype};
use crate::kv::layout::{Layout, LayoutOptions};
use crate::kv::missing::{self, Missing};
use crate::kv::model::{Attention, ModelShape, ranges};
use crate::kv::units::{fmt_centi, fmt_gb, fmt_gib, fmt_int, fmt_size};
use crate::lang::Lang;
use serde::Serialize;

/// vLLM's default `--block-size` on CUDA ([`defaults::BLOCK_SIZE`]).
pub const DEFAULT_BLOCK_SIZE: u32 = defaults::BLOCK_SIZE;

/// "Memory for `seqs` sequences of `len` tokens each?"
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Need {
    pub seqs: u64,
    pub len: u64,
}

/// What to estimate for. `None` means "what vLLM would pick", and the report says what that was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KvOptions {
    pub kv_dtype: KvDtype,
    /// Serving dtype (`--dtype`); default the config's, with float32 served as bf16.
    pub dtype: Option<ModelDtype>,
    pub tp: u32,
    pub pp: u32,
    pub block_size: Option<u32>,
    pub max_model_len: Option<u64>,
    pub max_num_seqs: Option<u64>,
    pub max_num_batched_tokens: Option<u64>,
    /// vLLM's hybrid KV-cache manager (default on).
    pub hybrid: bool,
    /// vLLM's async scheduling (default on since it became vLLM's default; `--no-async-scheduling`
    /// turns it off). It sets how many batches may be in flight, which sliding-window layers
    /// budget for: `pp + 1` with it, `pp` without (`VllmConfig.max_concurrent_batches`).
    pub async_scheduling: bool,
    /// Length for the concurrency answer (default `max_model_len`).
    pub at_len: Option<u64>,
    pub need: Option<Need>,
    /// Whether vLLM's defaults for ≥ 70 GiB non-A100 GPUs apply (`None`: GPU unknown, assume
    /// yes, and say so).
    pub large_gpu: Option<bool>,
    /// The language of the assumptions, warnings and formula lines (numbers are the same).
    pub lang: Lang,
}

impl Default for KvOptions {
    fn default() -> Self {
        KvOptions {
            kv_dtype: defaults::KV_DTYPE,
            dtype: None,
            tp: defaults::TP,
            pp: defaults::PP,
            block_size: None,
            max_model_len: None,
            max_num_seqs: None,
            max_num_batched_tokens: None,
            hybrid: defaults::HYBRID,
            async_scheduling: defaults::ASYNC_SCHEDULING,
            at_len: None,
            need: None,
            large_gpu: None,
            lang: Lang::En,
        }
    }
}

/// Where the KV memory figure comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvBudget {
    /// Exactly this many bytes of KV memory on each GPU (`--available-kv-gib`, or a log).
    Available(u64),
    /// Compute it from the GPU and the non-KV memory.
    Gpu(BudgetInputs),
}

/// The settings actually used, defaults resolved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Settings {
    pub kv_cache_dtype: KvDtype,
    pub serving_dtype: ModelDtype,
    pub kv_element_bytes: u64,
    pub tp: u32,
    pub pp: u32,
    pub block_size: u32,
    /// `None` when neither `--max-model-len` nor the model gives it (see `missing`).
    pub max_model_len: Option<u64>,
    pub max_num_seqs: u64,
    pub max_num_batched_tokens: u64,
    pub hybrid_kv_cache_manager: bool,
    pub async_scheduling: bool,
    /// Batches that may be scheduled but not yet settled: `pp + 1` with async scheduling,
    /// else `pp` (vLLM 0.33 `VllmConfig.max_concurrent_batches`).
    pub in_flight_batches: u64,
    /// `in_flight_batches × max_num_batched_tokens`: what a sliding-window layer keeps beyond
    /// its window per request (vLLM 0.33 `VllmConfig.max_in_flight_tokens`).
    pub in_flight_tokens: u64,
}

/// One row of the per-layer breakdown: all layers of one attention kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LayerRow {
    /// `full`, `sliding` or `mla`.
    pub kind: &'static str,
    pub window: Option<u64>,
    pub count: u64,
    /// Layer indices, compact (`0-4,6-10`).
    pub layers: String,
    /// KV heads on one GPU (`None` for MLA: one latent per token).
    pub kv_heads_per_rank: Option<u32>,
    /// Cached width per token per layer: `head_dim_k + head_dim_v`, or the MLA latent.
    pub cached_dim: u64,
    pub bytes_per_token_per_layer: u64,
    /// `count × bytes_per_token_per_layer`, one GPU of each pipeline stage summed.
    pub bytes_per_token: u64,
    /// vLLM KV-cache groups of this kind.
    pub groups: u64,
    /// Tokens one request keeps in each of these layers at most, as vLLM 0.33 budgets it
    /// (`min(window − 1 + in_flight_tokens, max_model_len)`, `window − 1 + in_flight_tokens`
    /// when `max_model_len` is unknown); `None` = the whole sequence.
    pub max_tokens_per_request: Option<u64>,
}

/// The answer to "memory for `seqs × len`".
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NeedRow {
    pub seqs: u64,
    pub len: u64,
    pub blocks_per_request: u64,
    /// KV memory on the busiest GPU, whole blocks.
    pub kv_bytes_per_rank: u64,
    /// Summed over all `tp × pp` GPUs, replication included.
    pub kv_bytes_all_ranks: u64,
    /// The article's formula for the same question (plain attention only; no TP, no blocks).
    pub article_bytes: Option<u64>,
    /// KV + weights + activation + non-torch on the busiest GPU (GPU budget only).
    pub gpu_bytes_per_rank: Option<u64>,
    /// The `gpu_memory_utilization` that would be needed, in parts per million.
    pub gpu_memory_utilization_ppm: Option<u64>,
    /// Whether the KV part fits the available KV memory (`None` when that is unknown).
    pub fits: Option<bool>,
}

/// The whole estimate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KvEstimate {
    pub model: String,
    pub settings: Settings,
    /// Bytes one token costs, summed over all `tp × pp` GPUs (replication included).
    pub bytes_per_token: u64,
    /// Bytes one token costs on the busiest GPU.
    pub bytes_per_token_per_rank: u64,
    /// Bytes per token per GPU once a context is past every sliding window.
    pub bytes_per_token_past_windows_per_rank: u64,
    pub layers: Vec<LayerRow>,
    pub kv_cache_groups: u64,
    /// Tensors in the block pool of the busiest stage (layers per group, padding included).
    pub pool_tensors: u64,
    pub padding_layers: u64,
    /// One block of one layer (vLLM `page_size_bytes`).
    pub page_bytes: u64,
    /// One block of the pool: `page_bytes × pool_tensors`.
    pub block_bytes: u64,
    pub budget: Option<Budget>,
    /// `None` when the GPU budget has an unknown term (see `missing`); likewise every figure
    /// below that depends on it.
    pub available_kv_bytes: Option<u64>,
    /// Where `available_kv_bytes` comes from: `given`, `gpu budget`, or the log line.
    pub available_kv_source: String,
    pub blocks: Option<u64>,
    /// As vLLM 0.33 logs `GPU KV cache size`: `int(blocks / blocks_per_request(max_model_len) ×
    /// max_model_len)` — max concurrency times `max_model_len`.
    pub tokens: Option<u64>,
    /// As older vLLM V1 releases logged it: `blocks / groups × block_size` (the same as
    /// `tokens` for one group of full/MLA layers and a `max_model_len` that is a multiple of
    /// the block size).
    pub legacy_tokens: Option<u64>,
    /// `--at-len`, else `max_model_len`.
    pub concurrency_len: Option<u64>,
    pub blocks_per_request: Option<u64>,
    /// `blocks / blocks_per_request`, two decimals as vLLM prints it (`%.2f`).
    pub max_concurrency: Option<f64>,
    pub max_concurrency_whole: Option<u64>,
    /// Longest request the KV memory holds (vLLM 0.33's startup check: one block held back for
    /// the null block, group padding included); `None` when every layer slides, so any length
    /// fits — or when the KV memory is unknown (then `missing` says so).
    pub max_model_len_fit: Option<u64>,
    /// The `max_num_seqs` that keeps every sequence at `max_model_len` inside the KV memory.
    pub max_num_seqs: Option<u64>,
    pub need: Option<NeedRow>,
    /// `2 · layers · kv_heads · head_dim · dtype_bytes` (unsharded) when the article's formula
    /// applies to this model.
    pub article_bytes_per_token: Option<u64>,
    pub formula: Vec<String>,
    pub assumptions: Vec<String>,
    /// Things that would stop vLLM or surprise the operator.
    pub warnings: Vec<String>,
    /// What the inputs do not determine and what would settle it; present only when something
    /// is unknown (a full config gives the same JSON as before this field existed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<Missing>,
}

/// Run the estimate.
pub fn estimate(model: &ModelShape, opts: &KvOptions, budget: &KvBudget) -> Result<KvEstimate, KvError> {
    let mut assumptions: Vec<String> = model.notes.clone();
    let mut warnings = Vec::new();
    let lang = opts.lang;

    let serving_dtype = match (opts.dtype, model.dtype) {
        (Some(d), _) => d,
        (None, Some(ModelDtype::Fp32)) => {
            assumptions.push(
                lang.pick(
                    "float32 checkpoint: vLLM serves it in 16 bits by default (bf16 assumed)",
                    "float32 权重：vLLM 默认以 16 位精度加载服务（按 bf16 计算）",
                )
                .to_owned(),
            );
            ModelDtype::Bf16
        }
        (None, Some(d)) => d,
        (None, None) => ModelDtype::Bf16,
    };
    let large = opts.large_gpu.unwrap_or(true);
    let block_size = match opts.block_size {
        Some(b) => b,
        None if model.mla.is_some() && opts.large_gpu == Some(true) => {
            assumptions.push(
                lang.pick(
                    "block size 64: vLLM forces it for the FlashMLA backend on Hopper (CUTLASS MLA on Blackwell \
                     uses 128)",
                    "block size 64：Hopper 上 vLLM 的 FlashMLA 后端强制使用该值（Blackwell 上的 CUTLASS MLA 用 128）",
                )
                .to_owned(),
            );
            64
        }
        None => {
            if model.mla.is_some() {
                assumptions.push(
                    lang.pick(
                        "block size 16 (vLLM's default); on Hopper vLLM forces 64 for FlashMLA — pass \
                         --block-size 64 to match (capacity moves by less than one block)",
                        "block size 16（vLLM 默认值）；Hopper 上 vLLM 会为 FlashMLA 强制使用 64——传 \
                         --block-size 64 与之对齐（容量变化不到一个 block）",
                    )
                    .to_owned(),
                );
            } else {
                assumptions.push(
                    lang.pick("block size 16 (vLLM's default)", "block size 16（vLLM 默认值）").to_owned(),
                );
            }
            DEFAULT_BLOCK_SIZE
        }
    };
    let max_model_len = match (opts.max_model_len, model.max_model_len) {
        (Some(0), _) => return Err(KvError::invalid("--max-model-len", 0, "must be at least 1 token")),
        (Some(l), Some(m)) => {
            if l > m {
                let (l, m) = (fmt_int(l), fmt_int(m));
                warnings.push(lang.pick(
                    format!(
                        "max_model_len {l} is above the model's {m} tokens: vLLM refuses it unless \
                         VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
                    ),
                    format!(
                        "max_model_len {l} 超过模型的 {m} token 上下文：除非设置 \
                         VLLM_ALLOW_LONG_MAX_MODEL_LEN=1，否则 vLLM 会拒绝启动"
                    ),
                ));
            }
            Some(l)
        }
        (Some(l), None) => Some(l),
        (None, Some(m)) => {
            let mm = fmt_int(m);
            assumptions.push(lang.pick(
                format!("max_model_len {mm} (the model's context, vLLM's default)"),
                format!("max_model_len {mm}（模型的上下文长度，vLLM 默认值）"),
            ));
            Some(m)
        }
        // Unknown: every figure that needs it is left out and `missing` says what settles it.
        (None, None) => None,
    };
    if let Some(max_model_len) = max_model_len
        && max_model_len > 1 << 40
    {
        return Err(KvError::invalid(
            "max_model_len",
            max_model_len,
            "more than 2^40 tokens is not plausible",
        ));
    }
    let gpu_words = match opts.large_gpu {
        Some(true) => lang.pick("on ≥ 70 GiB GPUs other than A100", "，适用于 A100 以外 ≥ 70 GiB 的 GPU"),
        Some(false) => lang.pick("on this GPU", "，适用于这张 GPU"),
        None => lang.pick("assuming a ≥ 70 GiB GPU", "，按 ≥ 70 GiB 的 GPU 计"),
    };
    let mnbt = match opts.max_num_batched_tokens {
        Some(0) => return Err(KvError::invalid("--max-num-batched-tokens", 0, "must be at least 1")),
        Some(n) => n,
        None => {
            let n = if large { 8192 } else { 2048 };
            assumptions.push(lang.pick(
                format!("max_num_batched_tokens {n} (vLLM `vllm serve` default {gpu_words})"),
                format!("max_num_batched_tokens {n}（vLLM `vllm serve` 默认值{gpu_words}）"),
            ));
            n
        }
    };
    let max_num_seqs = match opts.max_num_seqs {
        Some(0) => return Err(KvError::invalid("--max-num-seqs", 0, "must be at least 1")),
        Some(n) => n,
        None => {
            let n = if large { 1024 } else { 256 };
            assumptions.push(lang.pick(
                format!("max_num_seqs {n} (vLLM `vllm serve` default {gpu_words})"),
                format!("max_num_seqs {n}（vLLM `vllm serve` 默认值{gpu_words}）"),
            ));
            n
        }
    };
    if opts.kv_dtype == KvDtype::Auto {
        let d = serving_dtype.as_str();
        assumptions.push(lang.pick(
            format!("kv cache dtype auto = the model's dtype ({d})"),
            format!("kv cache dtype auto = 模型的 dtype（{d}）"),
        ));
    }
    let in_flight_batches = u64::from(opts.pp) + u64::from(opts.async_scheduling);
    let in_flight = mnbt.saturating_mul(in_flight_batches);

    let lo = LayoutOptions {
        tp: opts.tp,
        pp: opts.pp,
        block_size,
        kv_dtype: opts.kv_dtype,
        serving_dtype,
        hybrid: opts.hybrid,
        lang,
    };
    let layout = Layout::new(model, &lo)?;
    assumptions.extend(layout.notes.iter().cloned());

    let (budget_row, available) = match budget {
        KvBudget::Available(b) => {
            let (g, n) = (fmt_gib(*b), fmt_int(*b));
            assumptions.push(lang.pick(
                format!("KV memory given: {g} per GPU ({n} B)"),
                format!("给定的 KV 显存：每张 GPU {g}（{n} B）"),
            ));
            (None, Some(*b))
        }
        KvBudget::Gpu(inp) => {
            let ctx = BudgetContext {
                tp: opts.tp,
                pp: opts.pp,
                serving_dtype,
                max_num_batched_tokens: mnbt,
                max_num_seqs,
                lang,
            };
            let b = budget::plan(model, &ctx, inp)?;
            let d = budget::describe_in(&b, lang);
            assumptions.push(lang.pick(format!("budget per GPU: {d}"), format!("每张 GPU 的预算：{d}")));
            let w = &b.weights_how;
            assumptions.push(lang.pick(format!("weights: {w}"), format!("权重：{w}")));
            let a = &b.activation_how;
            assumptions.push(lang.pick(format!("activation peak: {a}"), format!("激活峰值：{a}")));
            let n = &b.non_torch_how;
            assumptions.push(lang.pick(format!("non-torch memory: {n}"), format!("非 torch 显存：{n}")));
            assumptions.push(
                lang.pick(
                    "CUDA graphs are captured outside vLLM's KV budget: keep 0.5–2 GiB of headroom beyond it",
                    "CUDA graph 在 vLLM 的 KV 预算之外捕获：预算之外再留 0.5–2 GiB 余量",
                )
                .to_owned(),
            );
            if let Some(short) = b.shortfall_bytes.filter(|s| *s > 0) {
                let (u, short) = (crate::kv::units::fmt_ppm(b.utilization_ppm), fmt_gib(short));
                warnings.push(lang.pick(
                    format!(
                        "no memory left for KV: weights + activation + non-torch exceed {u} of the GPU by {short} — \
                         vLLM fails with \"No available memory for the cache blocks\"; add GPUs (--tp), quantize, \
                         or raise gpu_memory_utilization"
                    ),
                    format!(
                        "没有显存留给 KV：权重 + 激活 + 非 torch 显存超出 GPU 的 {u} 达 {short}——\
                         vLLM 会报 \"No available memory for the cache blocks\" 启动失败；请增加 GPU（--tp）、量化，\
                         或调高 gpu_memory_utilization"
                    ),
                ));
            }
            let avail = b.available_kv_bytes;
            (Some(b), avail)
        }
    };

    let busiest = layout.ranks.iter().max_by_key(|r| layout.block_bytes(r)).cloned();
    let (pool_tensors, block_bytes) =
        busiest.as_ref().map_or((0, 0), |r| (r.pool_tensors, layout.block_bytes(r)));
    let blocks = available.map(|a| layout.num_blocks(a));
    let tokens = blocks.zip(max_model_len).map(|(b, l)| layout.capacity_tokens(b, l, in_flight));
    let legacy_tokens = blocks.map(|b| layout.legacy_logged_tokens(b));
    let groups = layout.groups.len() as u64;

    let concurrency_len = opts.at_len.or(max_model_len);
    if concurrency_len == Some(0) {
        return Err(KvError::invalid("--at-len", 0, "must be at least 1 token"));
    }
    let bpr = concurrency_len.map(|l| layout.blocks_per_request(l, in_flight).max(1));
    let centi =
        blocks.zip(concurrency_len).map(|(b, l)| centi_as_vllm_prints(layout.concurrency(b, l, in_flight)));
    let max_concurrency = centi.map(|c| c as f64 / 100.0);
    let max_concurrency_whole = blocks.zip(bpr).map(|(b, r)| b / r);
    let bpr_max_len = max_model_len.map(|l| layout.blocks_per_request(l, in_flight).max(1));
    let max_num_seqs_fit = blocks.zip(bpr_max_len).map(|(b, r)| b / r);
    let check = available.map(|a| layout.check_memory(a));
    let max_model_len_fit = check.and_then(|c| layout.max_len_fitting(c, in_flight));

    // Warnings vLLM would raise (only where the figures are known).
    let no_shortfall = budget_row.as_ref().is_none_or(|b| b.shortfall_bytes == Some(0));
    if let (Some(max_model_len), Some(check)) = (max_model_len, check) {
        let needed = layout.request_bytes(max_model_len, in_flight);
        let fit = max_num_seqs_fit.unwrap_or(0);
        if needed > check && no_shortfall {
            let est = max_model_len_fit.map_or(lang.pick("unlimited", "无上限").to_owned(), fmt_int);
            let (mml, need, avail) = (fmt_int(max_model_len), fmt_gib(needed), fmt_gib(check));
            warnings.push(lang.pick(
                format!(
                    "vLLM would refuse to start: one request of max_model_len {mml} needs {need} of KV per GPU, more \
                     than the {avail} available once one block is held back for the null block; the estimated \
                     maximum model length is {est} — lower --max-model-len, raise gpu_memory_utilization, add GPUs \
                     or use an fp8 KV cache"
                ),
                format!(
                    "vLLM 会拒绝启动：一个 max_model_len {mml} 的请求每张 GPU 需要 {need} KV，超过预留一个 null block \
                     后可用的 {avail}；估算的最大模型长度为 {est}——请调低 --max-model-len、调高 gpu_memory_utilization、\
                     增加 GPU 或改用 fp8 KV cache"
                ),
            ));
        } else if fit < max_num_seqs && fit > 0 {
            let (seqs, fit, mml) = (fmt_int(max_num_seqs), fmt_int(fit), fmt_int(max_model_len));
            warnings.push(lang.pick(
                format!(
                    "max_num_seqs {seqs} is above the {fit} sequences of {mml} tokens that fit: when they all grow long \
                     vLLM preempts (recomputes) the excess — set max_num_seqs ≤ {fit} to keep every admitted \
                     sequence's KV resident"
                ),
                format!(
                    "max_num_seqs {seqs} 超过能放下的 {fit} 条 {mml} token 序列：当它们都变长时，vLLM 会抢占（重算）\
                     超出的部分——设 max_num_seqs ≤ {fit}，让每条已接纳序列的 KV 都常驻显存"
                ),
            ));
        }
    }
    if layout.groups.iter().any(|g| matches!(g.attention, Attention::Sliding { .. })) {
        let (inf, mn) = (fmt_int(in_flight), fmt_int(mnbt));
        let why = match (opts.async_scheduling, lang) {
            (true, Lang::En) => "async scheduling, vLLM's default: pipeline stages + 1",
            (false, Lang::En) => "async scheduling off: one per pipeline stage",
            (true, Lang::Zh) => "async scheduling，vLLM 默认开启：流水线 stage 数 + 1",
            (false, Lang::Zh) => "async scheduling 关闭：每个流水线 stage 一个",
        };
        assumptions.push(lang.pick(
            format!(
                "sliding-window layers are budgeted as vLLM 0.33 budgets them: min(window − 1 + {inf} in-flight \
                 tokens, max_model_len) plus one block per request, in flight = max_num_batched_tokens {mn} × {in_flight_batches} \
                 batch(es) ({why}); older releases budgeted one batch. In steady decode they hold only about \
                 the window"
            ),
            format!(
                "滑动窗口层按 vLLM 0.33 的方式计预算：min(window − 1 + {inf} 个在途 token, max_model_len) \
                 再加每个请求一个 block，在途 = max_num_batched_tokens {mn} × {in_flight_batches} 个 batch\
                 （{why}）；旧版本只按一个 batch 计。稳定 decode 阶段它们只占大约一个窗口"
            ),
        ));
        if groups > 1
            && let (Some(blocks), Some(bpr_max_len), Some(tokens), Some(legacy_tokens)) =
                (blocks, bpr_max_len, tokens, legacy_tokens)
        {
            let (bl, bm, tk, lt) =
                (fmt_int(blocks), fmt_int(bpr_max_len), fmt_int(tokens), fmt_int(legacy_tokens));
            assumptions.push(lang.pick(
                format!(
                    "hybrid allocator: {groups} KV-cache groups share one pool of {bl} blocks; one request of \
                     max_model_len takes {bm} of them, and vLLM 0.33 logs \"GPU KV cache size\" as blocks / {bm} × \
                     max_model_len = {tk} tokens (older releases: blocks / {groups} groups × block size = {lt})"
                ),
                format!(
                    "hybrid allocator：{groups} 个 KV-cache group 共用一个 {bl} block 的池；一个 max_model_len \
                     的请求占其中 {bm} 个，vLLM 0.33 日志中的 \"GPU KV cache size\" = blocks / {bm} × \
                     max_model_len = {tk} token（旧版本：blocks / {groups} 个 group × block size = {lt}）"
                ),
            ));
        }
    }

    let layers = layer_rows(&layout, model, in_flight, max_model_len);
    let per_rank = layout.bytes_per_token_per_rank();
    let article = if model.is_plain_attention() {
        article_kv_bytes(
            model.num_layers() as u64,
            u64::from(model.num_kv_heads),
            u64::from(model.head_dim_k),
            layout.element_bytes,
            1,
            1,
        )
        .filter(|_| model.head_dim_k == model.head_dim_v)
    } else {
        None
    };

    let need = opts
        .need
        .map(|n| need_row(&layout, n, in_flight, block_bytes, available, budget_row.as_ref(), article))
        .transpose()?;

    let source = if budget_row.is_some() { "gpu budget" } else { "given" };
    let formula = formula_lines(
        lang,
        &layout,
        model,
        FormulaFigures {
            available,
            blocks,
            tokens,
            block_bytes,
            concurrency_len,
            bpr,
            centi,
            max_model_len,
            bpr_max_len,
        },
    );

    let missing = missing_entries(
        lang,
        Unknowns {
            max_model_len: max_model_len.is_none(),
            concurrency_len: concurrency_len.is_none(),
            budget: budget_row.as_ref(),
            need: need.is_some(),
        },
    );

    Ok(KvEstimate {
        model: model.name.clone(),
        settings: Settings {
            kv_cache_dtype: opts.kv_dtype,
            serving_dtype,
            kv_element_bytes: layout.element_bytes,
            tp: opts.tp,
            pp: opts.pp,
            block_size,
            max_model_len,
            max_num_seqs,
            max_num_batched_tokens: mnbt,
            hybrid_kv_cache_manager: opts.hybrid,
            async_scheduling: opts.async_scheduling,
            in_flight_batches,
            in_flight_tokens: in_flight,
        },
        bytes_per_token: layout.bytes_per_token_all_ranks(),
        bytes_per_token_per_rank: per_rank,
        bytes_per_token_past_windows_per_rank: layout.bytes_per_token_past_windows_per_rank(),
        layers,
        kv_cache_groups: groups,
        pool_tensors,
        padding_layers: layout.ranks.iter().map(|r| r.padding_layers).sum(),
        page_bytes: layout.page_bytes,
        block_bytes,
        budget: budget_row,
        available_kv_bytes: available,
        available_kv_source: source.to_owned(),
        blocks,
        tokens,
        legacy_tokens,
        concurrency_len,
        blocks_per_request: bpr,
        max_concurrency,
        max_concurrency_whole,
        max_model_len_fit,
        max_num_seqs: max_num_seqs_fit,
        need,
        article_bytes_per_token: article,
        formula,
        assumptions,
        warnings,
        missing,
    })
}

/// What is unknown, for [`missing_entries`].
struct Unknowns<'a> {
    max_model_len: bool,
    concurrency_len: bool,
    /// The GPU budget, when the KV memory is computed from one.
    budget: Option<&'a Budget>,
    /// Whether `need` was asked.
    need: bool,
}

/// The `missing` list: one entry per unknown quantity, with the report fields it leaves null.
fn missing_entries(lang: Lang, u: Unknowns<'_>) -> Vec<Missing> {
    let mut out = Vec::new();
    if u.max_model_len {
        out.push(missing::max_model_len(lang, vec!["settings.max_model_len", "tokens", "max_num_seqs"]));
    }
    if u.concurrency_len {
        out.push(missing::concurrency_len(
            lang,
            vec!["concurrency_len", "blocks_per_request", "max_concurrency", "max_concurrency_whole"],
        ));
    }
    let Some(b) = u.budget else { return out };
    let mut terms = Vec::new();
    let gpu_need: &[&'static str] =
        if u.need { &["need.gpu_bytes_per_rank", "need.gpu_memory_utilization_ppm"] } else { &[] };
    let term_fields = |own: &'static str| {
        let mut f = vec![own, "budget.available_kv_bytes", "budget.shortfall_bytes"];
        f.extend(gpu_need);
        f
    };
    if b.weights_bytes.is_none() {
        out.push(missing::weights(lang, &b.weights_needs, term_fields("budget.weights_bytes")));
        terms.push("budget.weights_bytes");
    }
    if b.activation_bytes.is_none() {
        out.push(missing::activation(lang, &b.activation_needs, term_fields("budget.activation_bytes")));
        terms.push("budget.activation_bytes");
    }
    if b.available_kv_bytes.is_none() {
        let mut fields = vec![
            "available_kv_bytes",
            "blocks",
            "tokens",
            "legacy_tokens",
            "max_concurrency",
            "max_concurrency_whole",
            "max_model_len_fit",
            "max_num_seqs",
        ];
        if u.need {
            fields.push("need.fits");
        }
        out.push(missing::available(lang, terms, fields));
    }
    out
}

/// `q` to hundredths as Python's `%.2f` prints it (vLLM's concurrency figure): the exact binary
/// value rounded to nearest, ties to even — what Rust's `{:.2}` does too.
pub fn centi_as_vllm_prints(q: f64) -> u64 {
    if !q.is_finite() || q <= 0.0 {
        return 0;
    }
    let s = format!("{q:.2}");
    s.replace('.', "").parse().unwrap_or(u64::MAX)
}

fn layer_rows(
    layout: &Layout,
    model: &ModelShape,
    in_flight: u64,
    max_model_len: Option<u64>,
) -> Vec<LayerRow> {
    let mut kinds: Vec<Attention> = Vec::new();
    for l in &layout.layers {
        if !kinds.contains(&l.attention) {
            kinds.push(l.attention);
        }
    }
    kinds
        .into_iter()
        .map(|a| {
            let idx: Vec<u32> = layout.layers.iter().filter(|l| l.attention == a).map(|l| l.index).collect();
            let count = idx.len() as u64;
            let (kind, window, cap) = match a {
                Attention::Full => ("full", None, None),
                Attention::Mla => ("mla", None, None),
                Attention::Sliding { window } => (
                    "sliding",
                    Some(window),
                    Some(
                        window
                            .saturating_sub(1)
                            .saturating_add(in_flight)
                            .min(max_model_len.unwrap_or(u64::MAX)),
                    ),
                ),
            };
            let cached_dim = match model.mla {
                Some(m) => u64::from(m.kv_lora_rank) + u64::from(m.qk_rope_head_dim),
                None => u64::from(model.head_dim_k) + u64::from(model.head_dim_v),
            };
            LayerRow {
                kind,
                window,
                count,
                layers: ranges(&idx),
                kv_heads_per_rank: model.mla.is_none().then_some(layout.kv_heads_per_rank),
                cached_dim,
                bytes_per_token_per_layer: layout.bytes_per_token_per_layer,
                bytes_per_token: layout.bytes_per_token_per_layer.saturating_mul(count),
                groups: layout.groups.iter().filter(|g| g.attention == a).count() as u64,
                max_tokens_per_request: cap,
            }
        })
        .collect()
}

fn need_row(
    layout: &Layout,
    n: Need,
    in_flight: u64,
    block_bytes: u64,
    available: Option<u64>,
    budget: Option<&Budget>,
    article_per_token: Option<u64>,
) -> Result<NeedRow, KvError> {
    if n.seqs == 0 || n.len == 0 {
        return Err(KvError::invalid(
            "--need",
            format!("{}x{}", n.seqs, n.len),
            "sequences and length must be ≥ 1",
        ));
    }
    let bpr = layout.blocks_per_request(n.len, in_flight);
    let per_rank = u128::from(n.seqs) * u128::from(bpr) * u128::from(block_bytes);
    let per_rank = u64::try_from(per_rank).map_err(|_| KvError::Overflow("--need memory"))?;
    let all: u128 = layout
        .ranks
        .iter()
        .map(|r| u128::from(n.seqs) * u128::from(bpr) * u128::from(layout.block_bytes(r)))
        .sum::<u128>()
        * u128::from(layout.tp);
    let all = u64::try_from(all).map_err(|_| KvError::Overflow("--need memory"))?;
    let article_bytes =
        article_per_token.and_then(|p| p.checked_mul(n.len)).and_then(|b| b.checked_mul(n.seqs));
    let gpu = budget.and_then(|b| {
        Some(
            per_rank
                .saturating_add(b.weights_bytes?)
                .saturating_add(b.activation_bytes?)
                .saturating_add(b.non_torch_bytes),
        )
    });
    let util = match (gpu, budget) {
        (Some(g), Some(b)) if b.gpu_total_bytes > 0 => {
            Some(u64::try_from(u128::from(g) * 1_000_000 / u128::from(b.gpu_total_bytes)).unwrap_or(u64::MAX))
        }
        _ => None,
    };
    Ok(NeedRow {
        seqs: n.seqs,
        len: n.len,
        blocks_per_request: bpr,
        kv_bytes_per_rank: per_rank,
        kv_bytes_all_ranks: all,
        article_bytes,
        gpu_bytes_per_rank: gpu,
        gpu_memory_utilization_ppm: util,
        fits: available.map(|a| per_rank <= a),
    })
}

/// The figures the formula lines show; a line whose figures are unknown is left out.
struct FormulaFigures {
    available: Option<u64>,
    blocks: Option<u64>,
    tokens: Option<u64>,
    block_bytes: u64,
    concurrency_len: Option<u64>,
    bpr: Option<u64>,
    centi: Option<u64>,
    max_model_len: Option<u64>,
    bpr_max_len: Option<u64>,
}

fn formula_lines(lang: Lang, layout: &Layout, model: &ModelShape, f: FormulaFigures) -> Vec<String> {
    let mut out = Vec::new();
    let e = layout.element_bytes;
    let per_layer = layout.bytes_per_token_per_layer;
    match model.mla {
        Some(m) if per_layer != (u64::from(m.kv_lora_rank) + u64::from(m.qk_rope_head_dim)) * e => {
            let (r, sc, q) =
                (m.kv_lora_rank, u64::from(m.kv_lora_rank).div_ceil(128) * 4, m.qk_rope_head_dim);
            out.push(lang.pick(
                format!(
                    "per token per layer (MLA, fp8_ds_mla): {r} fp8 latent + {sc} B of fp32 scales + {q} bf16 rope values \
                     = {per_layer} B, whole on every TP rank"
                ),
                format!(
                    "每 token 每层（MLA，fp8_ds_mla）：{r} 个 fp8 latent + {sc} B fp32 scale + {q} 个 bf16 rope 值 \
                     = {per_layer} B，每个 TP rank 都存完整一份"
                ),
            ))
        }
        Some(m) => {
            let (r, q, pl) = (m.kv_lora_rank, m.qk_rope_head_dim, fmt_int(per_layer));
            out.push(lang.pick(
                format!(
                    "per token per layer (MLA): (kv_lora_rank {r} + qk_rope_head_dim {q}) × {e} B = {pl} B — one \
                     latent, no ×2 for K and V, whole on every TP rank"
                ),
                format!(
                    "每 token 每层（MLA）：(kv_lora_rank {r} + qk_rope_head_dim {q}) × {e} B = {pl} B——只有一个 \
                     latent，K 和 V 不用 ×2，每个 TP rank 都存完整一份"
                ),
            ))
        }
        None => {
            let (h, dk, dv, pl, kvh, tp) = (
                layout.kv_heads_per_rank,
                model.head_dim_k,
                model.head_dim_v,
                fmt_int(per_layer),
                model.num_kv_heads,
                layout.tp,
            );
            out.push(lang.pick(
                format!(
                    "per token per layer: kv_heads_per_rank {h} × (head_dim_k {dk} + head_dim_v {dv}) × {e} B = {pl} B \
                     (kv_heads_per_rank = max(1, {kvh} / tp {tp}))"
                ),
                format!(
                    "每 token 每层：kv_heads_per_rank {h} × (head_dim_k {dk} + head_dim_v {dv}) × {e} B = {pl} B\
                     （kv_heads_per_rank = max(1, {kvh} / tp {tp})）"
                ),
            ))
        }
    }
    let busiest_layers = layout.ranks.iter().map(|r| r.layers.len()).max().unwrap_or(0);
    let (pl, pr) = (fmt_int(per_layer), fmt_int(layout.bytes_per_token_per_rank()));
    let stage = if layout.pp > 1 {
        lang.pick(" (the pipeline stage with the most layers)", "（层数最多的流水线 stage）")
    } else {
        ""
    };
    out.push(lang.pick(
        format!("per token per GPU: {pl} B × {busiest_layers} layers = {pr} B{stage}"),
        format!("每 token 每张 GPU：{pl} B × {busiest_layers} 层 = {pr} B{stage}"),
    ));
    let pool = f.block_bytes / layout.page_bytes.max(1);
    let Some((available, blocks)) = f.available.zip(f.blocks) else {
        return article_line(lang, layout, model, out);
    };
    out.push(format!(
        "num_blocks = floor(available {} / (page {} B × {pool} {})) = {}",
        fmt_size(available),
        fmt_int(layout.page_bytes),
        if layout.groups.len() > 1 {
            lang.pick("pool tensors", "个池张量")
        } else {
            lang.pick("layers", "层")
        },
        fmt_int(blocks)
    ));
    let bl = fmt_int(blocks);
    if let (Some(bpr_max_len), Some(max_model_len), Some(tokens)) = (f.bpr_max_len, f.max_model_len, f.tokens)
    {
        let (bm, mml, tk) = (fmt_int(bpr_max_len), fmt_int(max_model_len), fmt_int(tokens));
        let legacy = if layout.groups.len() > 1 {
            let (g, bs, lt) =
                (layout.groups.len(), layout.block_size, fmt_int(layout.legacy_logged_tokens(blocks)));
            lang.pick(
                format!("; older releases logged floor({bl} blocks / {g} groups) × block_size {bs} = {lt}"),
                format!("；旧版本日志为 floor({bl} blocks / {g} 个 group) × block_size {bs} = {lt}"),
            )
        } else {
            String::new()
        };
        out.push(lang.pick(
            format!(
                "tokens (vLLM 0.33's \"GPU KV cache size\") = int({bl} blocks / {bm} blocks per {mml}-token request × {mml}) = {tk}{legacy}"
            ),
            format!(
                "token 数（vLLM 0.33 的 \"GPU KV cache size\"）= int({bl} blocks / 每个 {mml} token 请求 {bm} blocks × {mml}) = {tk}{legacy}"
            ),
        ));
    }
    if let (Some(cl), Some(bpr), Some(c)) = (f.concurrency_len, f.bpr, f.centi) {
        let (cl, bpr, c) = (fmt_int(cl), fmt_int(bpr), fmt_centi(c));
        out.push(lang.pick(
            format!("max concurrency at {cl} tokens = {bl} blocks / {bpr} blocks per request = {c}x"),
            format!("{cl} token 时的最大并发 = {bl} blocks / 每请求 {bpr} blocks = {c}x"),
        ));
    }
    article_line(lang, layout, model, out)
}

/// The article's formula, last, when it applies (plain attention).
fn article_line(lang: Lang, layout: &Layout, model: &ModelShape, mut out: Vec<String>) -> Vec<String> {
    let e = layout.element_bytes;
    if model.is_plain_attention() {
        let (nl, kvh, hd) = (model.num_layers(), model.num_kv_heads, model.head_dim_k);
        let per = fmt_int(article_kv_bytes(nl as u64, u64::from(kvh), u64::from(hd), e, 1, 1).unwrap_or(0));
        let gb = fmt_gb(crate::kv::article::ARTICLE_7B_BYTES);
        out.push(lang.pick(
            format!(
                "article's formula (plain attention, one GPU): 2 × {nl} layers × {kvh} kv_heads × {hd} head_dim × {e} B = {per} \
                 B per token; e.g. 7B, 4096 tokens × 64 sequences: {gb}"
            ),
            format!(
                "文章公式（普通 attention，单 GPU）：2 × {nl} 层 × {kvh} kv_heads × {hd} head_dim × {e} B = 每 token {per} \
                 B；例如 7B、4096 token × 64 条序列：{gb}"
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::presets::preset;
    use crate::kv::units::{GIB, parse_gib};

    fn with_available(id: &str, opts: KvOptions, gib: &str) -> KvEstimate {
        let m = preset(id).unwrap().shape().unwrap();
        estimate(&m, &opts, &KvBudget::Available(parse_gib("x", gib).unwrap())).unwrap()
    }

    #[test]
    fn llama_3_1_8b_matches_vllm_capacity_arithmetic() {
        let o = KvOptions { max_model_len: Some(32_768), ..KvOptions::default() };
        // 447,088 tokens × 131,072 B = the KV memory those tokens occupy exactly.
        let m = preset("llama-3.1-8b").unwrap().shape().unwrap();
        let e = estimate(&m, &o, &KvBudget::Available(447_088 * 131_072)).unwrap();
        assert_eq!((e.bytes_per_token, e.bytes_per_token_per_rank), (131_072, 131_072));
        assert_eq!((e.blocks, e.tokens), (Some(27_943), Some(447_088)));
        // vLLM: "Maximum concurrency for 32,768 tokens per request: 13.64x".
        assert_eq!(e.max_concurrency, Some(13.64));
        assert_eq!((e.max_concurrency_whole, e.max_num_seqs), (Some(13), Some(13)));
        // vLLM 0.33 checks against the memory less one block (the null block): 27,942 blocks.
        assert_eq!(e.max_model_len_fit, Some(447_072));
        // 54.62 GiB as printed buys 27,965 blocks.
        let e = with_available("llama-3.1-8b", o, "54.62");
        assert_eq!((e.blocks, e.tokens), (Some(27_965), Some(447_440)));
        assert!(e.formula.iter().any(|l| l.contains("article's formula")));
    }

    /// vLLM 0.33.0's own arithmetic: every expected figure below was produced by running
    /// `get_kv_cache_configs` (`v1/core/kv_cache_planning.py`) and `get_kv_cache_capacity`
    /// (`v1/core/kv_cache_utils.py`) from the vLLM 0.33.0 wheel on these layer shapes and exact
    /// byte counts (`tests/data/kv/vllm_oracle.py`; see `tests/data/kv/README.md`). Given the
    /// exact bytes, blocks, the logged tokens and the printed concurrency must be equal.
    /// Preset, options, exact bytes → blocks, logged tokens, printed concurrency, longest fit.
    type Oracle = (&'static str, KvOptions, u64, u64, u64, f64, Option<u64>);

    #[test]
    fn matches_vllm_0_33_exactly_given_exact_bytes() {
        let o = |mml: u64| KvOptions { max_model_len: Some(mml), ..KvOptions::default() };
        let ds = |kv_dtype: KvDtype| KvOptions {
            tp: 8,
            block_size: Some(64),
            kv_dtype,
            max_model_len: Some(163_840),
            ..KvOptions::default()
        };
        let g20 = 20 * GIB;
        #[rustfmt::skip]
        let cases: Vec<Oracle> = vec![
            // preset, options, exact bytes → blocks, logged tokens, printed concurrency, and the
            // longest request the startup check admits (`_estimate_max_model_len_from_groups`
            // on the memory less the null block; `None`: every layer slides).
            ("llama-3.1-8b", o(32_768), 58_647_778_426, 27_965, 447_440, 13.65, Some(447_424)),
            ("llama-3.1-8b", o(131_072), 66_432_406_650, 31_677, 506_832, 3.87, Some(506_816)),
            // Dense MHA with max_model_len not a multiple of the block size: 256 blocks per
            // request, int(2735 / 256 × 4095) = 43,749 — not 2735 × 16 = 43,760.
            ("llama-2-7b", o(4095), 22_945_862_778, 2_735, 43_749, 10.68, Some(43_744)),
            ("llama-2-7b", o(4095), 22_944_940_032, 2_735, 43_749, 10.68, Some(43_744)),
            // MLA, TP 8, FlashMLA's block size 64: 61 layers × 64 × 576 values on every rank.
            ("deepseek-v3", ds(KvDtype::Auto), 61_664_992_952, 13_711, 877_504, 5.36, Some(877_440)),
            ("deepseek-v3", ds(KvDtype::Fp8), 61_664_992_952, 27_422, 1_755_008, 10.71, Some(1_754_944)),
            ("deepseek-v3", ds(KvDtype::Fp8DsMla), 61_664_992_952, 24_078, 1_540_992, 9.41, Some(1_540_928)),
            // Hybrid: 7 groups (10 full; 52 sliding in 6), pool block = 10 pages; 2 × 8192 in flight.
            ("gemma-3-27b", o(131_072), 49_102_213_611, 37_462, 333_438, 2.54, Some(494_832)),
            ("gemma-3-27b", o(32_768), g20, 16_384, 62_557, 1.91, Some(157_584)),
            ("gemma-3-27b", KvOptions { async_scheduling: false, ..o(32_768) }, g20, 16_384, 97_435, 2.97, Some(206_736)),
            ("gemma-3-27b", KvOptions { hybrid: false, ..o(32_768) }, g20, 2_642, 42_272, 1.29, Some(42_256)),
            // gpt-oss: 18 sliding (window 128) + 18 full → 2 groups of 18.
            ("gpt-oss-120b", o(131_072), 75_795_435_356, 128_505, 1_825_843, 13.93, Some(2_039_536)),
            ("gpt-oss-20b", o(131_072), 10 * GIB, 27_306, 387_973, 2.96, Some(420_352)),
            // Every layer sliding (window 4096): one group, 1281 blocks per 32k request.
            ("mistral-7b-v0.1", o(32_768), 10 * GIB, 5_120, 130_969, 4.0, None),
        ];
        for (id, opts, bytes, blocks, tokens, conc, fit) in cases {
            let m = preset(id).unwrap().shape().unwrap();
            let e = estimate(&m, &opts, &KvBudget::Available(bytes)).unwrap();
            assert_eq!(
                (e.blocks, e.tokens, e.max_concurrency, e.max_model_len_fit),
                (Some(blocks), Some(tokens), Some(conc), fit),
                "{id} {opts:?}"
            );
        }
    }

    #[test]
    fn h200_measured_bytes_per_token() {
        // shared/data/h200/phases.json: Llama-shaped, 22 layers, 4 kv heads, head_dim 64, bf16.
        let m = ModelShape::plain("h200-decode", 22, 32, 4, 64);
        let mut m = m;
        m.max_model_len = Some(32_768);
        let e = estimate(&m, &KvOptions::default(), &KvBudget::Available(GIB)).unwrap();
        assert_eq!(e.bytes_per_token, 22_528);
    }

    #[test]
    fn deepseek_v3_mla_on_eight_gpus() {
        let o = KvOptions { tp: 8, max_model_len: Some(163_840), ..KvOptions::default() };
        let e = with_available("deepseek-v3", o.clone(), "40");
        assert_eq!(e.bytes_per_token_per_rank, 70_272);
        assert_eq!(e.bytes_per_token, 8 * 70_272);
        assert_eq!(e.page_bytes, 16 * 1_152);
        // floor(40 GiB / (18,432 B × 61)) = 38,199 blocks → 611,184 tokens.
        assert_eq!((e.blocks, e.tokens), (Some(38_199), Some(611_184)));
        assert!(e.layers[0].kv_heads_per_rank.is_none());
        let ds = with_available(
            "deepseek-v3",
            KvOptions { kv_dtype: KvDtype::Fp8DsMla, block_size: Some(64), ..o },
            "40",
        );
        assert_eq!(ds.bytes_per_token_per_rank, 61 * 656);
        assert_eq!(ds.blocks, Some(40 * GIB / (64 * 656 * 61)));
    }

    #[test]
    fn gemma3_sliding_capacity_and_concurrency() {
        let o = KvOptions {
            max_model_len: Some(32_768),
            max_num_batched_tokens: Some(8192),
            ..KvOptions::default()
        };
        let e = with_available("gemma-3-27b", o, "20");
        assert_eq!(e.bytes_per_token_per_rank, 62 * 8192);
        assert_eq!(e.bytes_per_token_past_windows_per_rank, 10 * 8192);
        assert_eq!((e.kv_cache_groups, e.pool_tensors, e.padding_layers), (7, 10, 8));
        // floor(20 GiB / (131,072 B × 10)) = 16,384 blocks.
        assert_eq!(e.blocks, Some(16_384));
        // A 32k request, two batches of 8192 in flight (async scheduling): 2048 + 6 ×
        // (ceil((1023 + 16,384) / 16) + 1) = 2048 + 6 × 1089 = 8582 blocks → 1.91x, and vLLM 0.33
        // logs int(16,384 / 8582 × 32,768) = 62,557 tokens (vLLM's own functions give the same:
        // tests/data/kv/README.md). Older releases logged 16,384 / 7 × 16 = 37,440.
        assert_eq!((e.blocks_per_request, e.max_concurrency), (Some(8_582), Some(1.91)));
        assert_eq!((e.tokens, e.legacy_tokens), (Some(62_557), Some(37_440)));
        assert_eq!((e.settings.in_flight_batches, e.settings.in_flight_tokens), (2, 16_384));
        let sliding = e.layers.iter().find(|r| r.kind == "sliding").unwrap();
        assert_eq!((sliding.count, sliding.window, sliding.groups), (52, Some(1024), 6));
        assert_eq!(sliding.max_tokens_per_request, Some(17_407));
        // One batch in flight (no async scheduling; also what older releases budgeted):
        // 2048 + 6 × 577 = 5510 blocks → 2.97x, 97,435 tokens.
        let one = KvOptions {
            max_model_len: Some(32_768),
            max_num_batched_tokens: Some(8192),
            async_scheduling: false,
            ..KvOptions::default()
        };
        let e = with_available("gemma-3-27b", one, "20");
        assert_eq!(
            (e.blocks_per_request, e.max_concurrency, e.tokens),
            (Some(5_510), Some(2.97), Some(97_435))
        );
    }

    #[test]
    fn all_sliding_fits_any_length() {
        let o = KvOptions { max_model_len: Some(32_768), ..KvOptions::default() };
        let e = with_available("mistral-7b-v0.1", o, "10");
        assert_eq!(e.max_model_len_fit, None);
        assert_eq!(e.kv_cache_groups, 1);
    }

    #[test]
    fn reverse_question_reproduces_the_article() {
        let o = KvOptions { need: Some(Need { seqs: 64, len: 4096 }), ..KvOptions::default() };
        let e = with_available("llama-2-7b", o, "200");
        let n = e.need.unwrap();
        assert_eq!(n.kv_bytes_per_rank, 137_438_953_472);
        assert_eq!(n.article_bytes, Some(137_438_953_472));
        assert_eq!(n.fits, Some(true));
        assert_eq!(fmt_gb(n.kv_bytes_per_rank), "137.4 GB");
    }

    #[test]
    fn not_fitting_is_a_warning_not_an_error() {
        let o = KvOptions { max_model_len: Some(131_072), ..KvOptions::default() };
        let e = with_available("llama-3.1-8b", o, "5");
        assert_eq!(e.max_num_seqs, Some(0));
        assert!(e.warnings.iter().any(|w| w.contains("refuse to start")), "{:?}", e.warnings);
        let e = with_available("llama-3.1-8b", KvOptions::default(), "0");
        assert_eq!((e.blocks, e.tokens, e.max_model_len_fit), (Some(0), Some(0), Some(0)));
    }

    #[test]
    fn gpu_budget_path() {
        let m = preset("llama-3.1-8b").unwrap().shape().unwrap();
        let inp = BudgetInputs::new(crate::kv::gpus::gpu("h200").unwrap().total_bytes());
        let o = KvOptions { large_gpu: Some(true), ..KvOptions::default() };
        let e = estimate(&m, &o, &KvBudget::Gpu(inp)).unwrap();
        let b = e.budget.as_ref().unwrap();
        assert_eq!(e.available_kv_bytes, b.available_kv_bytes);
        let tokens = e.tokens.unwrap();
        assert!(tokens > 700_000 && tokens < 900_000, "{tokens}");
        assert!(e.missing.is_empty());
        assert!(e.assumptions.iter().any(|a| a.contains("CUDA graphs")));
    }
}
