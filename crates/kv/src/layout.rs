//! Where the KV cache lives: bytes per token per layer on one GPU, layers per pipeline stage,
//! and vLLM's KV-cache groups (the hybrid allocator's shared block pool).
//!
//! Checked against vLLM 0.33.0's source (the PyPI wheel): `vllm/v1/kv_cache_interface.py`
//! (`AttentionSpec.page_size_bytes`, `FullAttentionSpec` / `SlidingWindowSpec` /
//! `MLAAttentionSpec.max_memory_usage_bytes`), `vllm/v1/core/kv_cache_planning.py`
//! (`get_kv_cache_groups`, `_get_kv_cache_groups_uniform_page_size`,
//! `_get_kv_cache_bytes_per_block`, `get_kv_cache_configs`) and `vllm/v1/core/kv_cache_utils.py`
//! (`get_max_concurrency_for_kv_cache_config`, `get_kv_cache_capacity`):
//!
//! - Every attention layer gets a spec; a page (one block of one layer) is `block_size ·
//!   kv_heads · (head_size + head_size_v) · dtype_bytes` (MLA: one head, no V: `block_size ·
//!   576 · dtype_bytes`, or the 656-byte `fp8_ds_mla` row).
//! - One type (every dense model, every MLA model): one group holding all layers.
//! - Several types (Gemma 2/3, gpt-oss: sliding + full): `group_size` = the smallest type's
//!   layer count, or the largest when that is under 1.5× the smallest; each type is cut into
//!   `ceil(n / group_size)` groups, layers `i, i+g, i+2g …` in group `i`. Groups shorter than
//!   `group_size` leave padding (vLLM warns "Add N padding layers").
//! - Bytes per block = the largest group's page bytes (`_get_kv_cache_bytes_per_block`), and
//!   `num_blocks = available // bytes_per_block`, the minimum over pipeline stages. Every group
//!   draws its blocks from that one pool.
//! - A request of `len` tokens takes, per group, `ceil(len / block_size)` blocks (full, MLA)
//!   or `ceil(min(window − 1 + in_flight, len) / block_size) + 1` (sliding: the window plus
//!   the tokens scheduled but not yet settled, plus one block because the window need not start
//!   at a block boundary). `in_flight` is `VllmConfig.max_in_flight_tokens` =
//!   `max_concurrent_batches × max_num_batched_tokens` (2 batches with async scheduling on one
//!   pipeline stage, vLLM 0.33's default); releases before it budgeted one batch.
//! - The log's `GPU KV cache size` is `int(num_blocks / blocks_per_request(max_model_len) ×
//!   max_model_len)` — max concurrency times `max_model_len`, not blocks × block size. Older V1
//!   releases logged `num_blocks // groups × block_size` ([`Layout::legacy_logged_tokens`]).
//! - The startup check (`_check_enough_kv_cache_memory`) holds back one block (the block pool's
//!   null block) and needs `bytes_per_block × blocks_per_request(max_model_len)`.

use crate::KvError;
use crate::dtype::{KvDtype, ModelDtype};
use crate::model::{Attention, ModelShape};
use serde::Serialize;

/// Block sizes vLLM's CUDA backends accept (`--block-size`).
pub const VLLM_BLOCK_SIZES: &[u32] = &[1, 8, 16, 32, 64, 128];

/// The parallelism and cache settings that shape the layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayoutOptions {
    /// Tensor-parallel size.
    pub tp: u32,
    /// Pipeline-parallel size.
    pub pp: u32,
    /// Tokens per KV block (`--block-size`).
    pub block_size: u32,
    /// The KV cache dtype (`--kv-cache-dtype`).
    pub kv_dtype: KvDtype,
    /// The dtype the model is served in (what `auto` follows).
    pub serving_dtype: ModelDtype,
    /// vLLM's hybrid KV-cache manager (on by default). Off: sliding layers are allocated like
    /// full ones (`--disable-hybrid-kv-cache-manager`).
    pub hybrid: bool,
    /// The language of the layout's notes.
    pub lang: triage_base::lang::Lang,
}

/// One decoder layer's KV cost on one GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LayerCost {
    /// The layer's index in the model.
    pub index: u32,
    /// As the allocator treats it (sliding counts as full when the hybrid manager is off).
    pub attention: Attention,
    /// The pipeline stage that holds it.
    pub pp_rank: u32,
    /// Bytes one token costs in this layer on one GPU.
    pub bytes_per_token: u64,
}

/// One KV-cache group: layers of one type that share block tables.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KvGroup {
    /// The attention type the group's layers share.
    pub attention: Attention,
    /// Layer indices (all pipeline stages).
    pub layers: Vec<u32>,
}

/// What one pipeline stage (one GPU of each TP group) holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RankLayout {
    /// The pipeline stage.
    pub pp_rank: u32,
    /// Indices of the layers it holds.
    pub layers: Vec<u32>,
    /// Tensors in this stage's block pool: one page of each per block.
    pub pool_tensors: u64,
    /// Pool tensors × groups − layers: slots allocated for no layer.
    pub padding_layers: u64,
    /// Bytes one token costs on one GPU of this stage, all its layers.
    pub bytes_per_token: u64,
}

/// The whole placement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Layout {
    /// Tensor-parallel size.
    pub tp: u32,
    /// Pipeline-parallel size.
    pub pp: u32,
    /// Tokens per KV block.
    pub block_size: u32,
    /// KV heads on each GPU (replicated when TP exceeds the KV heads).
    pub kv_heads_per_rank: u32,
    /// Bytes per KV element (1 for the fp8 kinds).
    pub element_bytes: u64,
    /// The same for every layer of one model: every layer has the same head shape.
    pub bytes_per_token_per_layer: u64,
    /// `block_size × bytes_per_token_per_layer`: one block of one layer (vLLM's `page_size_bytes`).
    pub page_bytes: u64,
    /// Every KV-holding layer, in order.
    pub layers: Vec<LayerCost>,
    /// The KV-cache groups.
    pub groups: Vec<KvGroup>,
    /// Each pipeline stage's share.
    pub ranks: Vec<RankLayout>,
    /// What the layout decided, in words (replication, padding, block size).
    pub notes: Vec<String>,
}

fn divisors_up_to(n: u32, max: u32) -> String {
    let d: Vec<String> = (1..=max.min(n)).filter(|d| n.is_multiple_of(*d)).map(|d| d.to_string()).collect();
    d.join(", ")
}

/// Layers per pipeline stage as vLLM's `get_pp_indices` splits them: `layers / pp` each, the
/// remainder going one each to the stages just before the last (the last also holds lm_head).
pub fn pp_partition(layers: u32, pp: u32) -> Vec<u32> {
    if pp == 0 {
        return Vec::new();
    }
    let mut parts = vec![layers / pp; pp as usize];
    let rem = (layers % pp) as usize;
    for i in 2..rem + 2 {
        if let Some(p) = parts.len().checked_sub(i).and_then(|j| parts.get_mut(j)) {
            *p += 1;
        }
    }
    parts
}

/// The model's layer count, when vLLM would accept these settings for it; settings it would
/// reject are errors, a block size its CUDA backends do not take is a note.
fn check_settings(model: &ModelShape, o: &LayoutOptions, notes: &mut Vec<String>) -> Result<u32, KvError> {
    let n_layers = u32::try_from(model.num_layers()).map_err(|_| KvError::Overflow("layer count"))?;
    if n_layers == 0 {
        return Err(KvError::invalid("num_hidden_layers", 0, "a model needs at least one layer"));
    }
    if o.tp == 0 || o.tp > 4096 {
        return Err(KvError::invalid("--tp", o.tp, "tensor parallel size must be between 1 and 4096"));
    }
    if o.pp == 0 || o.pp > 4096 {
        return Err(KvError::invalid("--pp", o.pp, "pipeline parallel size must be between 1 and 4096"));
    }
    if o.pp > n_layers {
        return Err(KvError::PpExceedsLayers { pp: o.pp, layers: n_layers });
    }
    if o.block_size == 0 || o.block_size > 1024 {
        return Err(KvError::invalid("--block-size", o.block_size, "must be between 1 and 1024 tokens"));
    }
    if !VLLM_BLOCK_SIZES.contains(&o.block_size) {
        let bs = o.block_size;
        notes.push(o.lang.pick(
            format!("block size {bs} is not one vLLM's CUDA backends accept ({VLLM_BLOCK_SIZES:?})"),
            format!("block size {bs} 不是 vLLM 的 CUDA 后端接受的取值（{VLLM_BLOCK_SIZES:?}）"),
        ));
    }
    let heads = model.num_attention_heads;
    if heads == 0 || !heads.is_multiple_of(o.tp) {
        return Err(KvError::TpDoesNotDivideHeads { tp: o.tp, heads, suggest: divisors_up_to(heads, 16) });
    }
    if o.kv_dtype == KvDtype::Fp8DsMla && model.mla.is_none() {
        return Err(KvError::DsMlaNeedsMla);
    }
    Ok(n_layers)
}

/// KV heads on each TP rank, and the KV bytes one token costs in one layer on one rank: MLA's
/// latent (whole on every rank), else K and V of the rank's heads (a head replicated when TP
/// exceeds the KV heads).
fn kv_per_rank(
    model: &ModelShape,
    o: &LayoutOptions,
    element_bytes: u64,
    notes: &mut Vec<String>,
) -> Result<(u32, u64), KvError> {
    Ok(match model.mla {
        Some(mla) => {
            let (lora, rope) = (u64::from(mla.kv_lora_rank), u64::from(mla.qk_rope_head_dim));
            let b = if o.kv_dtype == KvDtype::Fp8DsMla {
                // 512 fp8 latent values, one fp32 scale per 128 of them, rope kept in bf16.
                lora + lora.div_ceil(128) * 4 + rope * 2
            } else {
                (lora + rope) * element_bytes
            };
            if o.tp > 1 {
                let tp = o.tp;
                notes.push(o.lang.pick(
                    format!(
                        "MLA: every one of the {tp} TP ranks holds the whole latent cache ({b} B per token per \
                         layer); it is not divided by TP"
                    ),
                    format!("MLA：{tp} 个 TP rank 每个都存完整的 latent cache（每 token 每层 {b} B），不会按 TP 切分"),
                ));
            }
            (1, b)
        }
        None => {
            let kv = model.num_kv_heads;
            if kv == 0 {
                return Err(KvError::invalid("num_key_value_heads", 0, "a model needs at least one kv head"));
            }
            let fits = if o.tp <= kv { kv.is_multiple_of(o.tp) } else { o.tp.is_multiple_of(kv) };
            if !fits {
                return Err(KvError::TpDoesNotFitKvHeads { tp: o.tp, kv_heads: kv });
            }
            let per_rank = (kv / o.tp).max(1);
            if o.tp > kv {
                let (tp, rep) = (o.tp, o.tp / kv);
                notes.push(o.lang.pick(
                    format!(
                        "TP {tp} > {kv} kv heads: each kv head is replicated on {rep} ranks, so every rank holds \
                         1 kv head"
                    ),
                    format!("TP {tp} > {kv} 个 kv head：每个 kv head 复制到 {rep} 个 rank 上，每个 rank 持有 1 个 kv head"),
                ));
            }
            let b = u64::from(per_rank)
                * (u64::from(model.head_dim_k) + u64::from(model.head_dim_v))
                * element_bytes;
            (per_rank, b)
        }
    })
}

impl Layout {
    /// Place `model` on `tp × pp` GPUs; rejects settings vLLM would reject.
    pub fn new(model: &ModelShape, o: &LayoutOptions) -> Result<Layout, KvError> {
        let mut notes = Vec::new();
        let n_layers = check_settings(model, o, &mut notes)?;
        let element_bytes = o.kv_dtype.element_bytes(o.serving_dtype);

        let (kv_heads_per_rank, per_layer) = kv_per_rank(model, o, element_bytes, &mut notes)?;
        if per_layer == 0 {
            return Err(KvError::invalid("head_dim", 0, "a layer with no KV bytes cannot be sized"));
        }
        let page_bytes =
            per_layer.checked_mul(u64::from(o.block_size)).ok_or(KvError::Overflow("page size"))?;

        let parts = pp_partition(n_layers, o.pp);
        let mut layers = Vec::with_capacity(model.num_layers());
        let mut stage_of = Vec::with_capacity(model.num_layers());
        for (rank, count) in parts.iter().enumerate() {
            stage_of.extend(std::iter::repeat_n(rank as u32, *count as usize));
        }
        let mut converted = 0;
        for (i, a) in model.layers.iter().enumerate() {
            let attention = match a {
                Attention::Sliding { .. } if !o.hybrid => {
                    converted += 1;
                    Attention::Full
                }
                other => *other,
            };
            layers.push(LayerCost {
                index: i as u32,
                attention,
                pp_rank: stage_of.get(i).copied().unwrap_or(0),
                bytes_per_token: per_layer,
            });
        }
        if converted > 0 {
            notes.push(o.lang.pick(
                format!(
                    "hybrid KV-cache manager off: the {converted} sliding-window layers are allocated like full \
                     attention (every token kept)"
                ),
                format!("hybrid KV-cache manager 已关闭：{converted} 个滑动窗口层按 full attention 分配（保留全部 token）"),
            ));
        }
        let groups = group_layers(&layers);
        let mut ranks = Vec::with_capacity(parts.len());
        for rank in 0..o.pp {
            let on_rank: Vec<u32> = layers.iter().filter(|l| l.pp_rank == rank).map(|l| l.index).collect();
            let here = |i: &&u32| stage_of.get(**i as usize) == Some(&rank);
            let pool_tensors =
                groups.iter().map(|g| g.layers.iter().filter(here).count() as u64).max().unwrap_or(0);
            let slots = pool_tensors * groups.len() as u64;
            ranks.push(RankLayout {
                pp_rank: rank,
                bytes_per_token: per_layer * on_rank.len() as u64,
                padding_layers: slots.saturating_sub(on_rank.len() as u64),
                layers: on_rank,
                pool_tensors,
            });
        }
        let padding: u64 = ranks.iter().map(|r| r.padding_layers).sum();
        if padding > 0 {
            let (g, most) = (groups.len(), ranks.iter().map(|r| r.pool_tensors).max().unwrap_or(0));
            notes.push(o.lang.pick(
                format!(
                    "{g} KV-cache groups of up to {most} layers: {padding} padding layer slot(s) hold no layer, as in \
                     vLLM's \"Add N padding layers\" warning"
                ),
                format!(
                    "{g} 个 KV-cache group，每组最多 {most} 层：{padding} 个 padding 层槽位不放任何层，\
                     即 vLLM 的 \"Add N padding layers\" 警告"
                ),
            ));
        }
        Ok(Layout {
            tp: o.tp,
            pp: o.pp,
            block_size: o.block_size,
            kv_heads_per_rank,
            element_bytes,
            bytes_per_token_per_layer: per_layer,
            page_bytes,
            layers,
            groups,
            ranks,
            notes,
        })
    }

    /// Bytes per token on the busiest GPU (the stage with the most layers).
    pub fn bytes_per_token_per_rank(&self) -> u64 {
        self.ranks.iter().map(|r| r.bytes_per_token).max().unwrap_or(0)
    }

    /// Bytes per token summed over all `tp × pp` GPUs, replication included.
    pub fn bytes_per_token_all_ranks(&self) -> u64 {
        let one_tp_group: u64 = self.ranks.iter().map(|r| r.bytes_per_token).sum();
        one_tp_group.saturating_mul(u64::from(self.tp))
    }

    /// Bytes per token once a context is past every sliding window: full and MLA layers only,
    /// on the busiest GPU.
    pub fn bytes_per_token_past_windows_per_rank(&self) -> u64 {
        self.ranks
            .iter()
            .map(|r| {
                r.layers
                    .iter()
                    .filter_map(|i| self.layers.get(*i as usize))
                    .filter(|l| !matches!(l.attention, Attention::Sliding { .. }))
                    .map(|l| l.bytes_per_token)
                    .sum::<u64>()
            })
            .max()
            .unwrap_or(0)
    }

    /// Bytes one pool block costs on `rank`: one page in each pool tensor.
    pub fn block_bytes(&self, rank: &RankLayout) -> u64 {
        self.page_bytes.saturating_mul(rank.pool_tensors)
    }

    /// The largest pool block over the pipeline stages (the one vLLM's checks bind on).
    pub fn block_bytes_max(&self) -> u64 {
        self.ranks.iter().map(|r| self.block_bytes(r)).max().unwrap_or(0)
    }

    /// Whole blocks `available` bytes on one GPU hold: the minimum over stages (vLLM gives
    /// every stage the smallest stage's count). `available // bytes_per_block`, as
    /// `get_kv_cache_configs` in vLLM 0.33's `v1/core/kv_cache_planning.py` computes it: the
    /// null block is *not* taken from this count.
    pub fn num_blocks(&self, available: u64) -> u64 {
        self.ranks
            .iter()
            .map(|r| match self.block_bytes(r) {
                0 => 0,
                b => available / b,
            })
            .min()
            .unwrap_or(0)
    }

    /// vLLM's maximum concurrency for requests of `len` tokens: `blocks / blocks_per_request`
    /// as a float (`get_max_concurrency_for_kv_cache_config`, vLLM 0.33
    /// `v1/core/kv_cache_utils.py`). Python and Rust divide IEEE doubles alike.
    pub fn concurrency(&self, blocks: u64, len: u64, in_flight_tokens: u64) -> f64 {
        let bpr = self.blocks_per_request(len, in_flight_tokens).max(1);
        blocks as f64 / bpr as f64
    }

    /// Tokens as vLLM 0.33 logs them (`GPU KV cache size: N tokens`): `int(max_concurrency ×
    /// max_model_len)` (`get_kv_cache_capacity`, `v1/core/kv_cache_utils.py`), the float
    /// product truncated. Equal to `blocks × block_size` only for one group of full/MLA layers
    /// and a `max_model_len` that is a multiple of the block size.
    pub fn capacity_tokens(&self, blocks: u64, max_model_len: u64, in_flight_tokens: u64) -> u64 {
        let c = self.concurrency(blocks, max_model_len, in_flight_tokens);
        // `as` truncates toward zero like Python's `int()` and saturates instead of overflowing.
        (c * max_model_len as f64) as u64
    }

    /// Tokens as older vLLM V1 releases logged them on their own `GPU KV cache size` line:
    /// `num_blocks // groups × block_size` (before the group-aware capacity of
    /// `get_kv_cache_capacity`; V0 logged `# GPU blocks` and callers multiply by the block size).
    pub fn legacy_logged_tokens(&self, blocks: u64) -> u64 {
        let groups = self.groups.len().max(1) as u64;
        (blocks / groups).saturating_mul(u64::from(self.block_size))
    }

    /// Blocks one group of this kind needs for a request of `len` tokens (vLLM's
    /// `max_memory_usage_bytes` / `page_size_bytes`): `ceil(len / block_size)` for full and MLA
    /// layers; for sliding layers `ceil(min(window − 1 + in_flight_tokens, len) / block_size) + 1`
    /// (`SlidingWindowSpec.max_admission_blocks_per_request`, vLLM 0.33).
    pub fn blocks_for(&self, attention: Attention, len: u64, in_flight_tokens: u64) -> u64 {
        let bs = u64::from(self.block_size);
        match attention {
            Attention::Full | Attention::Mla => len.div_ceil(bs),
            Attention::Sliding { window } => {
                let held = window.saturating_sub(1).saturating_add(in_flight_tokens).min(len);
                held.div_ceil(bs) + 1
            }
        }
    }

    /// Pool blocks one request of `len` tokens takes, summed over groups (all groups draw on
    /// the same pool).
    pub fn blocks_per_request(&self, len: u64, in_flight_tokens: u64) -> u64 {
        self.groups
            .iter()
            .map(|g| self.blocks_for(g.attention, len, in_flight_tokens))
            .fold(0u64, u64::saturating_add)
    }

    /// The KV memory vLLM 0.33's startup check says one request of `len` needs on the busiest
    /// stage: `bytes_per_block × blocks_per_request` (`_max_memory_usage_bytes_from_groups`,
    /// group padding included). Older releases summed the layers' own needs instead.
    pub fn request_bytes(&self, len: u64, in_flight_tokens: u64) -> u64 {
        self.block_bytes_max().saturating_mul(self.blocks_per_request(len, in_flight_tokens))
    }

    /// The memory vLLM 0.33 checks requests against: `available` minus one block, the null
    /// block the block pool holds back (`get_kv_cache_configs`: "reserved for checks only";
    /// the allocation itself still uses all of `available`).
    pub fn check_memory(&self, available: u64) -> u64 {
        available.saturating_sub(self.block_bytes_max())
    }

    /// Largest `len` whose single request fits `check_memory` (vLLM's
    /// `_estimate_max_model_len_from_groups`, which is given the memory after the null block —
    /// [`Layout::check_memory`]); `None` when every layer slides, so any length fits.
    pub fn max_len_fitting(&self, check_memory: u64, in_flight_tokens: u64) -> Option<u64> {
        let bs = u64::from(self.block_size);
        let has_unbounded = self.layers.iter().any(|l| !matches!(l.attention, Attention::Sliding { .. }));
        let hi = if has_unbounded {
            (check_memory / self.block_bytes_max().max(1)).saturating_add(1).saturating_mul(bs)
        } else {
            let w = self
                .layers
                .iter()
                .filter_map(|l| match l.attention {
                    Attention::Sliding { window } => Some(window),
                    _ => None,
                })
                .max()
                .unwrap_or(0);
            w.saturating_add(in_flight_tokens).saturating_add(bs)
        };
        if self.request_bytes(hi, in_flight_tokens) <= check_memory {
            return None;
        }
        let (mut lo, mut hi) = (0u64, hi);
        // Invariant: request_bytes(lo) ≤ check_memory or lo = 0; request_bytes(hi) > check_memory.
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.request_bytes(mid, in_flight_tokens) <= check_memory {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(lo)
    }
}

/// vLLM's grouping of layers by spec (see the module docs).
fn group_layers(layers: &[LayerCost]) -> Vec<KvGroup> {
    // Types in order of first appearance, as vLLM's dict of same-type layers iterates.
    let mut types: Vec<(Attention, Vec<u32>)> = Vec::new();
    for l in layers {
        match types.iter_mut().find(|(a, _)| *a == l.attention) {
            Some((_, v)) => v.push(l.index),
            None => types.push((l.attention, vec![l.index])),
        }
    }
    if types.len() <= 1 {
        return types.into_iter().map(|(attention, layers)| KvGroup { attention, layers }).collect();
    }
    let min = types.iter().map(|(_, v)| v.len()).min().unwrap_or(1).max(1);
    let max = types.iter().map(|(_, v)| v.len()).max().unwrap_or(1);
    // vLLM 0.33: `max_num_layers < min_num_layers * 1.5` (gpt-oss-20b + EAGLE: 12 sliding + 13
    // full → groups of 13), in integers.
    let group_size = if 2 * max < 3 * min { max } else { min };
    let mut groups = Vec::new();
    for (attention, v) in types {
        let n_groups = v.len().div_ceil(group_size).max(1);
        for i in 0..n_groups {
            let layers = v.iter().skip(i).step_by(n_groups).copied().collect();
            groups.push(KvGroup { attention, layers });
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::MlaDims;

    fn opts(tp: u32, pp: u32) -> LayoutOptions {
        LayoutOptions {
            tp,
            pp,
            block_size: 16,
            kv_dtype: KvDtype::Auto,
            serving_dtype: ModelDtype::Bf16,
            hybrid: true,
            lang: triage_base::lang::Lang::En,
        }
    }

    #[test]
    fn llama_3_1_8b_bytes_per_token() {
        let m = ModelShape::plain("llama-3.1-8b", 32, 32, 8, 128);
        let l = Layout::new(&m, &opts(1, 1)).unwrap();
        assert_eq!(l.bytes_per_token_per_rank(), 131_072);
        assert_eq!(l.page_bytes, 65_536);
        assert_eq!(l.block_bytes(&l.ranks[0]), 2_097_152);
        let l = Layout::new(&m, &opts(2, 1)).unwrap();
        assert_eq!((l.bytes_per_token_per_rank(), l.bytes_per_token_all_ranks()), (65_536, 131_072));
        // TP 16 > 8 kv heads: one head per rank, replicated.
        let l = Layout::new(&m, &opts(16, 1)).unwrap();
        assert_eq!(l.bytes_per_token_per_rank(), 16_384);
        assert_eq!(l.bytes_per_token_all_ranks(), 262_144);
    }

    #[test]
    fn mla_is_replicated_not_divided() {
        let mut m = ModelShape::plain("deepseek-v3", 61, 128, 128, 192);
        m.mla = Some(MlaDims { kv_lora_rank: 512, qk_rope_head_dim: 64 });
        m.layers = vec![Attention::Mla; 61];
        let l = Layout::new(&m, &opts(8, 1)).unwrap();
        assert_eq!(l.bytes_per_token_per_layer, 1_152);
        assert_eq!(l.bytes_per_token_per_rank(), 70_272);
        assert_eq!(l.bytes_per_token_all_ranks(), 8 * 70_272);
        let ds = LayoutOptions { kv_dtype: KvDtype::Fp8DsMla, ..opts(8, 1) };
        assert_eq!(Layout::new(&m, &ds).unwrap().bytes_per_token_per_layer, 656);
        let fp8 = LayoutOptions { kv_dtype: KvDtype::Fp8, ..opts(8, 1) };
        assert_eq!(Layout::new(&m, &fp8).unwrap().bytes_per_token_per_layer, 576);
    }

    #[test]
    fn tp_and_pp_are_validated() {
        let m = ModelShape::plain("m", 32, 32, 8, 128);
        assert!(matches!(Layout::new(&m, &opts(3, 1)), Err(KvError::TpDoesNotDivideHeads { .. })));
        let m2 = ModelShape::plain("m", 32, 48, 6, 128);
        // 48 heads divide by 4, but 4 does not divide 6 kv heads.
        assert!(matches!(Layout::new(&m2, &opts(4, 1)), Err(KvError::TpDoesNotFitKvHeads { .. })));
        assert!(matches!(Layout::new(&m, &opts(1, 33)), Err(KvError::PpExceedsLayers { .. })));
        assert!(Layout::new(&m, &opts(0, 1)).is_err());
        let ds = LayoutOptions { kv_dtype: KvDtype::Fp8DsMla, ..opts(1, 1) };
        assert_eq!(Layout::new(&m, &ds), Err(KvError::DsMlaNeedsMla));
        let bad = LayoutOptions { block_size: 0, ..opts(1, 1) };
        assert!(Layout::new(&m, &bad).is_err());
    }

    #[test]
    fn pipeline_stages_follow_vllm() {
        assert_eq!(pp_partition(61, 2), vec![31, 30]);
        assert_eq!(pp_partition(32, 4), vec![8, 8, 8, 8]);
        // The remainder goes to the stages just before the last one.
        assert_eq!(pp_partition(10, 4), vec![2, 3, 3, 2]);
        let m = ModelShape::plain("m", 61, 8, 8, 64);
        let l = Layout::new(&m, &opts(1, 2)).unwrap();
        assert_eq!(l.ranks[0].layers.len(), 31);
        assert_eq!(l.bytes_per_token_per_rank(), 31 * 2 * 8 * 64 * 2);
    }

    #[test]
    fn gemma3_groups_with_padding() {
        let mut m = ModelShape::plain("gemma-3-27b", 62, 32, 16, 128);
        for (i, a) in m.layers.iter_mut().enumerate() {
            if (i + 1) % 6 != 0 {
                *a = Attention::Sliding { window: 1024 };
            }
        }
        let l = Layout::new(&m, &opts(1, 1)).unwrap();
        // 52 sliding layers in 6 groups (9,9,9,9,8,8), 10 full layers in 1 group.
        assert_eq!(l.groups.len(), 7);
        assert_eq!(l.groups.iter().map(|g| g.layers.len()).collect::<Vec<_>>(), vec![9, 9, 9, 9, 8, 8, 10]);
        assert_eq!(l.ranks[0].pool_tensors, 10);
        assert_eq!(l.ranks[0].padding_layers, 8);
        // A 32k request: 2048 blocks for the full group, 6 × (ceil((1023 + 8192) / 16) + 1).
        assert_eq!(l.blocks_per_request(32_768, 8192), 2048 + 6 * 577);
    }

    #[test]
    fn gpt_oss_two_groups_and_hybrid_off() {
        let mut m = ModelShape::plain("gpt-oss-20b", 24, 64, 8, 64);
        for (i, a) in m.layers.iter_mut().enumerate() {
            if i % 2 == 0 {
                *a = Attention::Sliding { window: 128 };
            }
        }
        let l = Layout::new(&m, &opts(1, 1)).unwrap();
        assert_eq!((l.groups.len(), l.ranks[0].pool_tensors, l.ranks[0].padding_layers), (2, 12, 0));
        assert_eq!(l.legacy_logged_tokens(1000), 500 * 16);
        // vLLM 0.33: int(1000 / (8192 + ceil((127 + 16,384) / 16) + 1) × 131,072) — the full
        // group needs 8192 blocks at 131,072 tokens, the sliding one 1,033.
        assert_eq!(l.blocks_per_request(131_072, 16_384), 8192 + 1033);
        assert_eq!(l.capacity_tokens(1000, 131_072, 16_384), 14_208);
        // 10 full + 14 sliding layers: 14 < 1.5 × 10, so vLLM 0.33 makes 2 groups of up to 14
        // (4 padding slots), not 3 groups of up to 10.
        let mut m24 = ModelShape::plain("ten-full-fourteen-sliding", 24, 64, 8, 64);
        for a in m24.layers.iter_mut().skip(10) {
            *a = Attention::Sliding { window: 128 };
        }
        let l24 = Layout::new(&m24, &opts(1, 1)).unwrap();
        assert_eq!((l24.groups.len(), l24.ranks[0].pool_tensors, l24.ranks[0].padding_layers), (2, 14, 4));
        let off = Layout::new(&m, &LayoutOptions { hybrid: false, ..opts(1, 1) }).unwrap();
        assert_eq!((off.groups.len(), off.ranks[0].pool_tensors), (1, 24));
    }
}
