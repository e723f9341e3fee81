//! The formula lines the report prints: each figure with the numbers it came from, and the
//! article's formula where it applies.

use crate::article::article_kv_bytes;
use crate::layout::Layout;
use crate::model::ModelShape;
use crate::units::{fmt_centi, fmt_gb, fmt_int, fmt_size};
use triage_base::lang::Lang;

/// The figures the formula lines show; a line whose figures are unknown is left out.
pub(super) struct FormulaFigures {
    pub(super) available: Option<u64>,
    pub(super) blocks: Option<u64>,
    pub(super) tokens: Option<u64>,
    pub(super) block_bytes: u64,
    pub(super) concurrency_len: Option<u64>,
    pub(super) bpr: Option<u64>,
    pub(super) centi: Option<u64>,
    pub(super) max_model_len: Option<u64>,
    pub(super) bpr_max_len: Option<u64>,
}

pub(super) fn formula_lines(
    lang: Lang,
    layout: &Layout,
    model: &ModelShape,
    f: FormulaFigures,
) -> Vec<String> {
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
        let gb = fmt_gb(crate::article::ARTICLE_7B_BYTES);
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
