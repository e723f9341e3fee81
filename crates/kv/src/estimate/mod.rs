//! Options in, capacity out: bytes per token, blocks, tokens, concurrency, the `max_model_len`
//! that fits, the `max_num_seqs` that keeps KV inside the budget, and the reverse question
//! (memory needed for `seqs × len`).
//!
//! Rounding, everywhere: bytes and blocks are integers rounded down (vLLM keeps whole blocks);
//! concurrency is `blocks / blocks_per_request` as an IEEE double, printed to two decimals as
//! vLLM's `%.2f` prints it, and its whole part rounded down; `tokens` is vLLM 0.33's
//! `int(concurrency × max_model_len)` (see [`crate::layout`] for the sources).
//!
//! This file has the options, the answer's types and [`estimate`] itself; `settings.rs` fills in
//! vLLM's defaults for the options not given, `memory.rs` the KV memory (given, or the budget
//! planned from the GPU), `capacity.rs` what that memory holds and the warnings and notes it
//! calls for, `rows.rs` the per-layer breakdown and the `--need` answer,
//! `formula.rs` the formula lines the report prints, `unknown.rs` the `missing` list, `tests.rs`
//! the tests against vLLM's own figures.

mod capacity;
mod formula;
mod memory;
mod rows;
mod settings;
mod unknown;

use crate::KvError;
use crate::article::article_kv_bytes;
use crate::budget::{Budget, BudgetInputs};
use crate::defaults;
use crate::dtype::{KvDtype, ModelDtype};
use crate::layout::{Layout, LayoutOptions};
use crate::missing::Missing;
use crate::model::ModelShape;
use capacity::{Capacity, capacity, fit_warning, sliding_notes};
use formula::{FormulaFigures, formula_lines};
use memory::kv_memory;
use rows::{Sizing, layer_rows, need_row};
use serde::Serialize;
use settings::{Resolved, resolve};
use triage_base::lang::Lang;
use unknown::{Unknowns, missing_entries};

/// vLLM's default `--block-size` on CUDA ([`defaults::BLOCK_SIZE`]).
pub const DEFAULT_BLOCK_SIZE: u32 = defaults::BLOCK_SIZE;

/// "Memory for `seqs` sequences of `len` tokens each?"
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Need {
    /// Sequences at once.
    pub seqs: u64,
    /// Tokens in each.
    pub len: u64,
}

/// What to estimate for. `None` means "what vLLM would pick", and the report says what that was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KvOptions {
    /// `--kv-cache-dtype`.
    pub kv_dtype: KvDtype,
    /// Serving dtype (`--dtype`); default the config's, with float32 served as bf16.
    pub dtype: Option<ModelDtype>,
    /// Tensor-parallel size.
    pub tp: u32,
    /// Pipeline-parallel size.
    pub pp: u32,
    /// Tokens per KV block; `None`: vLLM's default for the model.
    pub block_size: Option<u32>,
    /// `--max-model-len`; `None`: the model's.
    pub max_model_len: Option<u64>,
    /// `--max-num-seqs`; `None`: vLLM's default for the GPU.
    pub max_num_seqs: Option<u64>,
    /// `--max-num-batched-tokens`; `None`: vLLM's default for the GPU.
    pub max_num_batched_tokens: Option<u64>,
    /// vLLM's hybrid KV-cache manager (default on).
    pub hybrid: bool,
    /// vLLM's async scheduling (default on since it became vLLM's default; `--no-async-scheduling`
    /// turns it off). It sets how many batches may be in flight, which sliding-window layers
    /// budget for: `pp + 1` with it, `pp` without (`VllmConfig.max_concurrent_batches`).
    pub async_scheduling: bool,
    /// Length for the concurrency answer (default `max_model_len`).
    pub at_len: Option<u64>,
    /// The reverse question, when asked.
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
    /// The KV cache dtype asked for.
    pub kv_cache_dtype: KvDtype,
    /// The dtype the model is served in.
    pub serving_dtype: ModelDtype,
    /// Bytes per KV element.
    pub kv_element_bytes: u64,
    /// Tensor-parallel size.
    pub tp: u32,
    /// Pipeline-parallel size.
    pub pp: u32,
    /// Tokens per KV block.
    pub block_size: u32,
    /// `None` when neither `--max-model-len` nor the model gives it (see `missing`).
    pub max_model_len: Option<u64>,
    /// Most sequences in one batch.
    pub max_num_seqs: u64,
    /// Most tokens in one scheduler step.
    pub max_num_batched_tokens: u64,
    /// vLLM's hybrid KV-cache manager is on.
    pub hybrid_kv_cache_manager: bool,
    /// vLLM's async scheduling is on.
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
    /// The window of sliding layers, tokens; `None` for the others.
    pub window: Option<u64>,
    /// Layers of this kind.
    pub count: u64,
    /// Layer indices, compact (`0-4,6-10`).
    pub layers: String,
    /// KV heads on one GPU (`None` for MLA: one latent per token).
    pub kv_heads_per_rank: Option<u32>,
    /// Cached width per token per layer: `head_dim_k + head_dim_v`, or the MLA latent.
    pub cached_dim: u64,
    /// Bytes one token costs in one such layer on one GPU.
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
    /// Sequences asked for.
    pub seqs: u64,
    /// Tokens in each.
    pub len: u64,
    /// KV blocks one sequence takes.
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
    /// The model's name, as the report calls it.
    pub model: String,
    /// The settings used, defaults resolved.
    pub settings: Settings,
    /// Bytes one token costs, summed over all `tp × pp` GPUs (replication included).
    pub bytes_per_token: u64,
    /// Bytes one token costs on the busiest GPU.
    pub bytes_per_token_per_rank: u64,
    /// Bytes per token per GPU once a context is past every sliding window.
    pub bytes_per_token_past_windows_per_rank: u64,
    /// The per-layer breakdown, one row per attention kind.
    pub layers: Vec<LayerRow>,
    /// vLLM KV-cache groups.
    pub kv_cache_groups: u64,
    /// Tensors in the block pool of the busiest stage (layers per group, padding included).
    pub pool_tensors: u64,
    /// Layers added to even out the groups' sizes (slots allocated for no layer).
    pub padding_layers: u64,
    /// One block of one layer (vLLM `page_size_bytes`).
    pub page_bytes: u64,
    /// One block of the pool: `page_bytes × pool_tensors`.
    pub block_bytes: u64,
    /// The per-GPU memory budget, when KV memory was computed from the GPU.
    pub budget: Option<Budget>,
    /// `None` when the GPU budget has an unknown term (see `missing`); likewise every figure
    /// below that depends on it.
    pub available_kv_bytes: Option<u64>,
    /// Where `available_kv_bytes` comes from: `given`, `gpu budget`, or the log line.
    pub available_kv_source: String,
    /// KV blocks the available memory holds (vLLM's `num_gpu_blocks`).
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
    /// Blocks one request of `concurrency_len` tokens takes.
    pub blocks_per_request: Option<u64>,
    /// `blocks / blocks_per_request`, two decimals as vLLM prints it (`%.2f`).
    pub max_concurrency: Option<f64>,
    /// `max_concurrency` rounded down: requests of `concurrency_len` that fit at once.
    pub max_concurrency_whole: Option<u64>,
    /// Longest request the KV memory holds (vLLM 0.33's startup check: one block held back for
    /// the null block, group padding included); `None` when every layer slides, so any length
    /// fits — or when the KV memory is unknown (then `missing` says so).
    pub max_model_len_fit: Option<u64>,
    /// The `max_num_seqs` that keeps every sequence at `max_model_len` inside the KV memory.
    pub max_num_seqs: Option<u64>,
    /// The answer to the reverse question, when asked.
    pub need: Option<NeedRow>,
    /// `2 · layers · kv_heads · head_dim · dtype_bytes` (unsharded) when the article's formula
    /// applies to this model.
    pub article_bytes_per_token: Option<u64>,
    /// The formula, one line per step, with this model's numbers.
    pub formula: Vec<String>,
    /// What was assumed where the inputs were silent.
    pub assumptions: Vec<String>,
    /// Things that would stop vLLM or surprise the operator.
    pub warnings: Vec<String>,
    /// What the inputs do not determine and what would settle it; present only when something
    /// is unknown (a full config gives the same JSON as before this field existed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<Missing>,
}

/// What an estimate writes down besides its figures: what it assumed where the inputs were
/// silent, and what would stop vLLM or surprise the operator.
struct Notes {
    /// The language they are written in.
    lang: Lang,
    assumptions: Vec<String>,
    warnings: Vec<String>,
}

/// Run the estimate.
pub fn estimate(model: &ModelShape, opts: &KvOptions, budget: &KvBudget) -> Result<KvEstimate, KvError> {
    let lang = opts.lang;
    let mut notes = Notes { lang, assumptions: model.notes.clone(), warnings: Vec::new() };
    let settings = resolve(model, opts, &mut notes)?;
    let Resolved { serving_dtype, block_size, max_model_len, max_num_batched_tokens: mnbt, max_num_seqs } =
        settings;
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
    notes.assumptions.extend(layout.notes.iter().cloned());

    let (budget_row, available) = kv_memory(model, opts, &settings, budget, &mut notes)?;
    let cap = capacity(&layout, opts, &settings, available)?;
    fit_warning(&layout, &settings, &cap, budget_row.as_ref(), &mut notes);
    sliding_notes(&layout, opts, &settings, &cap, &mut notes);
    let Notes { assumptions, warnings, .. } = notes;
    let Capacity {
        in_flight_batches,
        in_flight,
        pool_tensors,
        block_bytes,
        blocks,
        tokens,
        legacy_tokens,
        groups,
        concurrency_len,
        bpr,
        centi,
        max_concurrency,
        max_concurrency_whole,
        bpr_max_len,
        max_num_seqs_fit,
        max_model_len_fit,
        ..
    } = cap;

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
        .map(|n| {
            let at = Sizing {
                layout: &layout,
                in_flight,
                block_bytes,
                available,
                budget: budget_row.as_ref(),
                article_per_token: article,
            };
            need_row(&at, n)
        })
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

/// `q` to hundredths as Python's `%.2f` prints it (vLLM's concurrency figure): the exact binary
/// value rounded to nearest, ties to even — what Rust's `{:.2}` does too.
pub fn centi_as_vllm_prints(q: f64) -> u64 {
    if !q.is_finite() || q <= 0.0 {
        return 0;
    }
    let s = format!("{q:.2}");
    s.replace('.', "").parse().unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests;
