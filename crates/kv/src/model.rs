//! The shape of a model as far as memory is concerned: its attention layers and their kinds.
//!
//! A [`ModelShape`] is what both a `config.json` ([`crate::hf_config`]) and a preset
//! ([`crate::presets`]) turn into; everything downstream reads only this.

use crate::dtype::{ModelDtype, WeightDtype};
use serde::Serialize;

/// How one layer's attention keeps its KV cache, as vLLM's KV-cache spec sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Attention {
    /// Keeps every token of the sequence (vLLM `FullAttentionSpec`).
    Full,
    /// Keeps at most the last `window` tokens (vLLM `SlidingWindowSpec`).
    Sliding {
        /// Tokens kept.
        window: u64,
    },
    /// DeepSeek's multi-head latent attention: one compressed latent per token
    /// (vLLM `MLAAttentionSpec`), every token kept.
    Mla,
}

impl Attention {
    /// How reports name the layer kind: `full`, `sliding (window N)`, `mla`.
    pub fn label(&self) -> String {
        match self {
            Attention::Full => "full".to_owned(),
            Attention::Sliding { window } => format!("sliding (window {window})"),
            Attention::Mla => "mla".to_owned(),
        }
    }
}

/// MLA dimensions (DeepSeek V2/V3/R1, Kimi K2 …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct MlaDims {
    /// Width of the compressed KV latent (`kv_lora_rank`, 512 in DeepSeek V2/V3).
    pub kv_lora_rank: u32,
    /// The decoupled rope key that is cached beside the latent (`qk_rope_head_dim`, 64).
    pub qk_rope_head_dim: u32,
}

/// Mixture-of-experts sizes, used only for the parameter count and activation estimate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct MoeShape {
    /// Routed experts per MoE layer.
    pub experts: u64,
    /// Experts each token is routed to.
    pub experts_per_token: u64,
    /// Width of one expert's MLP.
    pub expert_intermediate: u64,
    /// Shared experts per MoE layer.
    pub shared_experts: u64,
    /// Width of the shared expert(s) MLP, when different (Qwen2-MoE).
    pub shared_intermediate: u64,
    /// Layers `0..dense_layers` have a dense MLP (DeepSeek `first_k_dense_replace`).
    pub dense_layers: u64,
}

/// Where a parameter count comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "source", content = "detail")]
pub enum ParamSource {
    /// Published by the model's authors (a preset cites where).
    Published(String),
    /// Counted from `config.json` by [`crate::params::count_params`].
    Estimated,
    /// Given on the command line.
    Given,
}

/// The memory-relevant shape of a decoder model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelShape {
    /// What to call it in reports (preset id, or `model_type` / architecture of a config).
    pub name: String,
    /// The config's `model_type`, when it has one.
    pub model_type: Option<String>,
    /// One entry per decoder layer that holds KV cache, in layer order.
    pub layers: Vec<Attention>,
    /// Query heads.
    pub num_attention_heads: u32,
    /// KV heads of the standard-attention layers (ignored for MLA layers).
    pub num_kv_heads: u32,
    /// Key head width (`head_dim`, else `hidden_size / num_attention_heads`).
    pub head_dim_k: u32,
    /// Value head width; equal to `head_dim_k` in every config seen so far.
    pub head_dim_v: u32,
    /// MLA widths, for models with MLA layers.
    pub mla: Option<MlaDims>,
    /// Hidden size (`hidden_size`), for the parameter count.
    pub hidden_size: Option<u64>,
    /// Dense MLP width.
    pub intermediate_size: Option<u64>,
    /// Vocabulary size, for the parameter count.
    pub vocab_size: Option<u64>,
    /// The output projection shares the embedding's weights.
    pub tie_word_embeddings: bool,
    /// MoE sizes, for MoE models.
    pub moe: Option<MoeShape>,
    /// DeepSeek's q compression (`q_lora_rank`), for the parameter count.
    pub q_lora_rank: Option<u64>,
    /// DeepSeek's `qk_nope_head_dim` and `v_head_dim`, for the parameter count.
    pub mla_nope_v: Option<(u64, u64)>,
    /// The longest context the config supports, as vLLM derives its default `max_model_len`.
    pub max_model_len: Option<u64>,
    /// The dtype the config declares (`torch_dtype` / `dtype`).
    pub dtype: Option<ModelDtype>,
    /// Weight storage when the checkpoint is quantized (`quantization_config`).
    pub weight_dtype: Option<WeightDtype>,
    /// Parameter count and where it comes from.
    pub params: Option<(u64, ParamSource)>,
    /// What reading the config assumed or ignored, in words.
    pub notes: Vec<String>,
}

impl ModelShape {
    /// Decoder layers that hold KV cache.
    pub fn num_layers(&self) -> usize {
        self.layers.len()
    }

    /// True when some layers are sliding-window and some are not (Gemma 2/3, gpt-oss).
    pub fn is_hybrid(&self) -> bool {
        let sliding = self.layers.iter().filter(|a| matches!(a, Attention::Sliding { .. })).count();
        sliding > 0 && sliding < self.layers.len()
    }

    /// True when the article's formula applies as is: every layer keeps every token, with
    /// separate K and V per head.
    pub fn is_plain_attention(&self) -> bool {
        self.mla.is_none() && self.layers.iter().all(|a| *a == Attention::Full)
    }

    /// A shape with `n` full-attention layers and nothing else known; for tests and the
    /// article's example.
    pub fn plain(name: &str, layers: u32, heads: u32, kv_heads: u32, head_dim: u32) -> ModelShape {
        ModelShape {
            name: name.to_owned(),
            model_type: None,
            layers: vec![Attention::Full; layers as usize],
            num_attention_heads: heads,
            num_kv_heads: kv_heads,
            head_dim_k: head_dim,
            head_dim_v: head_dim,
            mla: None,
            hidden_size: None,
            intermediate_size: None,
            vocab_size: None,
            tie_word_embeddings: false,
            moe: None,
            q_lora_rank: None,
            mla_nope_v: None,
            max_model_len: None,
            dtype: Some(ModelDtype::Bf16),
            weight_dtype: None,
            params: None,
            notes: Vec::new(),
        }
    }
}

/// Layer indices as compact ranges: `[0,1,2,4]` → `0-2,4`.
pub fn ranges(indices: &[u32]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < indices.len() {
        let start = indices[i];
        let mut end = start;
        while i + 1 < indices.len() && indices[i + 1] == end.saturating_add(1) {
            i += 1;
            end = indices[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}-{end}"));
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_ranges() {
        assert_eq!(ranges(&[0, 1, 2, 4, 6, 7]), "0-2,4,6-7");
        assert_eq!(ranges(&[]), "");
        assert_eq!(ranges(&[5]), "5");
    }

    #[test]
    fn kinds() {
        let mut m = ModelShape::plain("t", 4, 8, 8, 64);
        assert!(m.is_plain_attention() && !m.is_hybrid());
        m.layers[0] = Attention::Sliding { window: 128 };
        assert!(m.is_hybrid() && !m.is_plain_attention());
        assert_eq!(m.layers[0].label(), "sliding (window 128)");
    }
}
