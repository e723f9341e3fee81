//! The per-layer breakdown (one row per attention kind) and the answer to "memory for
//! `seqs × len`" (`--need`).

use super::{LayerRow, Need, NeedRow};
use crate::KvError;
use crate::budget::Budget;
use crate::layout::Layout;
use crate::model::{Attention, ModelShape, ranges};

pub(super) fn layer_rows(
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

/// What every `--need` question is answered against: one estimate's layout and memory.
#[derive(Clone, Copy)]
pub(super) struct Sizing<'a> {
    pub(super) layout: &'a Layout,
    /// Tokens a sliding-window layer keeps beyond its window per request.
    pub(super) in_flight: u64,
    /// One block of the pool on the busiest GPU.
    pub(super) block_bytes: u64,
    /// KV memory on one GPU, when known.
    pub(super) available: Option<u64>,
    /// The GPU budget, when the KV memory is computed from one.
    pub(super) budget: Option<&'a Budget>,
    /// The article's bytes per token (plain attention only).
    pub(super) article_per_token: Option<u64>,
}

pub(super) fn need_row(at: &Sizing<'_>, n: Need) -> Result<NeedRow, KvError> {
    let Sizing { layout, in_flight, block_bytes, available, budget, article_per_token } = *at;
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
