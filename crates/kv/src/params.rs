//! Parameter count from a config's shape, for the weights term of the memory budget.
//!
//! Counts the matrices of a gated-MLP decoder (Llama, Qwen, Mistral, Gemma, DeepSeek, gpt-oss):
//! embeddings (twice unless tied), attention projections (MLA's low-rank ones for DeepSeek),
//! gated MLPs or experts plus router, and norms. Biases and small extras (attention sinks,
//! vision towers) are left out, so the count is a lower bound within about 1 % for the models
//! checked in the tests; presets carry the published count instead.

use crate::model::ModelShape;

/// Estimated parameters, or `None` when the config lacks `hidden_size`, `vocab_size` or the
/// MLP width.
pub fn count_params(m: &ModelShape) -> Option<u64> {
    let h = u128::from(m.hidden_size?);
    let vocab = u128::from(m.vocab_size?);
    let layers = m.num_layers() as u128;
    let heads = u128::from(m.num_attention_heads);
    let embed = vocab * h * if m.tie_word_embeddings { 1 } else { 2 };

    let attn = match m.mla {
        Some(mla) => {
            let (nope, v) = m.mla_nope_v?;
            let (nope, v) = (u128::from(nope), u128::from(v));
            let rope = u128::from(mla.qk_rope_head_dim);
            let lora = u128::from(mla.kv_lora_rank);
            let q = match m.q_lora_rank {
                Some(r) => {
                    let r = u128::from(r);
                    h * r + r + r * heads * (nope + rope)
                }
                None => h * heads * (nope + rope),
            };
            q + h * (lora + rope) + lora + lora * heads * (nope + v) + heads * v * h
        }
        None => {
            let kd = u128::from(m.head_dim_k);
            let vd = u128::from(m.head_dim_v);
            let kv = u128::from(m.num_kv_heads);
            h * heads * kd + h * kv * (kd + vd) + heads * vd * h
        }
    };

    let mlp = match m.moe {
        Some(moe) => {
            let experts = u128::from(moe.experts);
            let per_expert = 3 * h * u128::from(moe.expert_intermediate);
            let shared = u128::from(moe.shared_experts) * 3 * h * u128::from(moe.shared_intermediate);
            let sparse_layer = experts * per_expert + shared + h * experts;
            let dense = u128::from(moe.dense_layers).min(layers);
            let dense_layer = match m.intermediate_size {
                Some(i) => 3 * h * u128::from(i),
                None if dense == 0 => 0,
                None => return None,
            };
            dense * dense_layer + (layers - dense) * sparse_layer
        }
        None => layers * 3 * h * u128::from(m.intermediate_size?),
    };

    let total = embed + layers * (attn + 2 * h) + mlp + h;
    u64::try_from(total).ok()
}

/// The `config.json` fields [`count_params`] lacks, by their usual names (empty when it can
/// count, or when only the 64-bit range stops it).
pub fn count_needs(m: &ModelShape) -> Vec<&'static str> {
    let mut out = Vec::new();
    if m.hidden_size.is_none() {
        out.push("hidden_size");
    }
    if m.vocab_size.is_none() {
        out.push("vocab_size");
    }
    if m.mla.is_some() && m.mla_nope_v.is_none() {
        out.extend(["qk_nope_head_dim", "v_head_dim"]);
    }
    let dense_mlp = match m.moe {
        Some(moe) => moe.dense_layers.min(m.num_layers() as u64) > 0,
        None => true,
    };
    if dense_mlp && m.intermediate_size.is_none() {
        out.push("intermediate_size");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hf_config::{ConfigOptions, parse_config};

    #[test]
    fn llama_3_1_8b_is_exact() {
        let m = parse_config(
            r#"{"hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,"num_attention_heads":32,
            "num_key_value_heads":8,"vocab_size":128256,"tie_word_embeddings":false}"#,
            &ConfigOptions::default(),
        )
        .unwrap();
        // Meta publishes 8.03B; the safetensors hold 8,030,261,248 parameters.
        assert_eq!(count_params(&m), Some(8_030_261_248));
    }

    #[test]
    fn deepseek_v3_is_671b() {
        let m = parse_config(
            r#"{"hidden_size":7168,"intermediate_size":18432,"moe_intermediate_size":2048,"num_hidden_layers":61,
            "num_attention_heads":128,"num_key_value_heads":128,"q_lora_rank":1536,"kv_lora_rank":512,
            "qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,"n_routed_experts":256,
            "n_shared_experts":1,"num_experts_per_tok":8,"first_k_dense_replace":3,"vocab_size":129280,
            "tie_word_embeddings":false}"#,
            &ConfigOptions::default(),
        )
        .unwrap();
        let n = count_params(&m).unwrap();
        // DeepSeek publishes 671B for the main model (685B with the MTP module).
        assert!((670_000_000_000..672_000_000_000).contains(&n), "{n}");
    }

    #[test]
    fn unknown_without_sizes() {
        let m = ModelShape::plain("x", 2, 8, 8, 64);
        assert_eq!(count_params(&m), None);
        assert_eq!(count_needs(&m), ["hidden_size", "vocab_size", "intermediate_size"]);
        let m = ModelShape { hidden_size: Some(512), vocab_size: Some(1000), ..m };
        assert_eq!(count_needs(&m), ["intermediate_size"]);
        let m = ModelShape { intermediate_size: Some(1024), ..m };
        assert!(count_needs(&m).is_empty() && count_params(&m).is_some());
    }
}
