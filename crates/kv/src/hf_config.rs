//! Hugging Face `config.json` → [`ModelShape`]: field aliases across families, layer kinds,
//! and errors that name the missing field and what would have been assumed.
//!
//! Families read: Llama 2/3, Qwen2/2.5/3 (dense and MoE), Mistral/Mixtral, Gemma 2/3
//! (sliding-window layers), gpt-oss (`layer_types`), DeepSeek V2/V3/R1 (MLA), Phi-3/4,
//! ChatGLM/GLM-4 (`num_layers`, `multi_query_group_num`, `kv_channels`), GPT-2/NeoX/Falcon
//! style names, and multimodal configs whose text model sits in `text_config`
//! (`llm_config`, `language_config`).
//!
//! Which layers slide follows the Hugging Face model code, which vLLM mirrors: `layer_types`
//! when present; Gemma 2 alternates starting with a sliding layer; Gemma 3 / Cohere 2 use
//! `sliding_window_pattern` (every Nth layer is global); Qwen2-style configs slide only when
//! `use_sliding_window` is true, from `max_window_layers` on; any other architecture with a
//! non-null `sliding_window` slides on every layer (Mistral 7B v0.1, Phi-3 mini).

use crate::KvError;
use crate::dtype::{ModelDtype, WeightDtype};
use crate::model::{Attention, MlaDims, ModelShape, MoeShape, ParamSource};
use crate::params::count_params;
use serde_json::{Map, Value};

/// How strict to be about missing fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConfigOptions {
    /// Accept conventional defaults (kv heads = attention heads, rope dim 64 …) and record them
    /// in [`ModelShape::notes`] instead of failing.
    pub assume_defaults: bool,
    /// The language of the notes.
    pub lang: triage_base::lang::Lang,
}

/// The notes a parse collects, each written in the options' language.
struct Notes {
    lang: triage_base::lang::Lang,
    list: Vec<String>,
}

impl Notes {
    fn push(&mut self, en: impl Into<String>, zh: impl Into<String>) {
        let s = match self.lang {
            triage_base::lang::Lang::En => en.into(),
            triage_base::lang::Lang::Zh => zh.into(),
        };
        self.list.push(s);
    }
}

const LAYERS: &[&str] = &["num_hidden_layers", "n_layer", "num_layers", "n_layers"];
const HEADS: &[&str] = &["num_attention_heads", "n_head", "num_heads", "n_heads"];
const KV_HEADS: &[&str] = &["num_key_value_heads", "num_kv_heads", "n_head_kv", "n_kv_heads"];
const HIDDEN: &[&str] = &["hidden_size", "n_embd", "d_model", "model_dim"];
const HEAD_DIM: &[&str] = &["head_dim", "kv_channels", "attention_head_dim"];
const INTERMEDIATE: &[&str] = &["intermediate_size", "ffn_hidden_size", "n_inner"];
const VOCAB: &[&str] = &["vocab_size", "padded_vocab_size"];
const MAX_LEN: &[&str] = &[
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
];

/// Parse `config.json` text.
pub fn parse_config(text: &str, opts: &ConfigOptions) -> Result<ModelShape, KvError> {
    let v: Value = serde_json::from_str(text).map_err(|e| KvError::InvalidJson(e.to_string()))?;
    from_value(&v, opts)
}

/// The fields of the text model, falling back to the top level (where multimodal configs keep
/// `torch_dtype`, `quantization_config` …).
struct Fields<'a> {
    text: &'a Map<String, Value>,
    root: &'a Map<String, Value>,
}

impl<'a> Fields<'a> {
    fn raw(&self, key: &str) -> Option<&'a Value> {
        self.text.get(key).filter(|v| !v.is_null()).or_else(|| self.root.get(key).filter(|v| !v.is_null()))
    }

    /// The first present alias: (name, value).
    fn first(&self, keys: &[&'static str]) -> Option<(&'static str, &'a Value)> {
        keys.iter().find_map(|k| self.raw(k).map(|v| (*k, v)))
    }

    /// A non-negative integer (an integral float such as `32.0` is accepted).
    fn uint(&self, keys: &[&'static str]) -> Result<Option<(&'static str, u64)>, KvError> {
        match self.first(keys) {
            None => Ok(None),
            Some((k, v)) => as_uint(k, v).map(|n| Some((k, n))),
        }
    }

    fn str(&self, key: &str) -> Option<&'a str> {
        self.raw(key).and_then(Value::as_str)
    }

    fn bool(&self, key: &str) -> Option<bool> {
        self.raw(key).and_then(Value::as_bool)
    }
}

fn as_uint(key: &str, v: &Value) -> Result<u64, KvError> {
    if let Some(n) = v.as_u64() {
        return Ok(n);
    }
    if let Some(i) = v.as_i64() {
        return Err(KvError::invalid(key, i, "must not be negative"));
    }
    if let Some(f) = v.as_f64() {
        if f < 0.0 {
            return Err(KvError::invalid(key, f, "must not be negative"));
        }
        if f.fract() == 0.0 && f <= 1e15 {
            return Ok(f as u64);
        }
        return Err(KvError::invalid(key, f, "must be a whole number"));
    }
    Err(KvError::invalid(key, v, "expected a number"))
}

fn aliases(keys: &[&str]) -> String {
    if keys.len() <= 1 {
        return String::new();
    }
    format!(" (nor {})", keys[1..].join(", "))
}

/// Parse an already-decoded `config.json`.
pub fn from_value(v: &Value, opts: &ConfigOptions) -> Result<ModelShape, KvError> {
    let root = object(v)?;
    let mut notes = Notes { lang: opts.lang, list: Vec::new() };
    let f = text_fields(root, &mut notes);
    let model_type = f.text.get("model_type").and_then(Value::as_str).or_else(|| f.str("model_type"));
    let model_type = model_type.map(str::to_owned);
    let name = root
        .get("architectures")
        .and_then(|a| a.get(0))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| model_type.clone())
        .unwrap_or_else(|| "config.json".to_owned());
    let mt = model_type.as_deref().unwrap_or("");

    let layers = layer_count(&f)?;
    let heads = head_count(&f)?;

    let hidden = f.uint(HIDDEN)?.map(|(_, n)| n);
    if hidden == Some(0) {
        return Err(KvError::invalid(HIDDEN[0], 0, "must be positive"));
    }

    let mla = mla_dims(&f, opts, &mut notes)?;

    let kv_heads = kv_heads(&f, heads, mla.is_some(), opts, &mut notes)?;

    let head_dim = head_dim(&f, heads, hidden, mla.is_some(), &mut notes)?;

    let kinds = layer_kinds(&f, mt, layers as usize, mla.is_some(), &mut notes)?;

    // Context length, as vLLM derives its default max_model_len.
    let max_model_len = derive_max_len(&f, mt, &mut notes)?;

    let dtype = dtype(&f, &mut notes);
    let weight_dtype = quantization(&f, &mut notes);

    // MoE and MLP sizes (for the weights and activation estimates only).
    let intermediate = f.uint(INTERMEDIATE)?.map(|(_, n)| n);
    let vocab = vocab_size(&f, mt, &mut notes)?;
    let moe = moe_shape(&f, intermediate)?;
    let tie = f.bool("tie_word_embeddings").unwrap_or(true);
    let q_lora_rank = f.uint(&["q_lora_rank"])?.map(|(_, n)| n);
    let nope_v = match (f.uint(&["qk_nope_head_dim"])?, f.uint(&["v_head_dim"])?) {
        (Some((_, a)), Some((_, b))) => Some((a, b)),
        _ => None,
    };

    note_what_is_not_counted(&f, &mut notes)?;

    let mut shape = ModelShape {
        name,
        model_type,
        layers: kinds,
        num_attention_heads: heads,
        num_kv_heads: kv_heads,
        head_dim_k: head_dim as u32,
        head_dim_v: head_dim as u32,
        mla,
        hidden_size: hidden,
        intermediate_size: intermediate,
        vocab_size: vocab,
        tie_word_embeddings: tie,
        moe,
        q_lora_rank,
        mla_nope_v: nope_v,
        max_model_len,
        dtype,
        weight_dtype,
        params: None,
        notes: notes.list,
    };
    shape.params = count_params(&shape).map(|n| (n, ParamSource::Estimated));
    Ok(shape)
}

/// The text model's fields: a multimodal config keeps them under `text_config` (or `llm_config`,
/// `language_config`), which a note says.
fn text_fields<'a>(root: &'a Map<String, Value>, notes: &mut Notes) -> Fields<'a> {
    let text = ["text_config", "llm_config", "language_config"]
        .iter()
        .find_map(|k| root.get(*k).and_then(Value::as_object).map(|m| (*k, m)));
    match text {
        Some((k, m)) => {
            notes.push(
                format!("multimodal config: the text model is read from `{k}`"),
                format!("多模态 config：文本模型读自 `{k}`"),
            );
            Fields { text: m, root }
        }
        None => Fields { text: root, root },
    }
}

/// The top-level object, or what the JSON is instead.
fn object(v: &Value) -> Result<&Map<String, Value>, KvError> {
    match v {
        Value::Object(m) => Ok(m),
        Value::Array(_) => Err(KvError::NotAnObject("an array")),
        Value::String(_) => Err(KvError::NotAnObject("a string")),
        Value::Number(_) => Err(KvError::NotAnObject("a number")),
        Value::Bool(_) => Err(KvError::NotAnObject("a boolean")),
        Value::Null => Err(KvError::NotAnObject("null")),
    }
}

/// The number of layers: required, and plausible.
fn layer_count(f: &Fields<'_>) -> Result<u64, KvError> {
    let (_, layers) = f.uint(LAYERS)?.ok_or_else(|| KvError::MissingField {
        field: LAYERS[0],
        aliases: aliases(LAYERS),
        why: "the number of layers cannot be assumed".to_owned(),
    })?;
    if layers == 0 {
        return Err(KvError::invalid(LAYERS[0], 0, "a model needs at least one layer"));
    }
    if layers > 10_000 {
        return Err(KvError::invalid(LAYERS[0], layers, "more than 10,000 layers is not a real model"));
    }
    Ok(layers)
}

/// The number of attention heads: required, and plausible.
fn head_count(f: &Fields<'_>) -> Result<u32, KvError> {
    let (_, heads) = f.uint(HEADS)?.ok_or_else(|| KvError::MissingField {
        field: HEADS[0],
        aliases: aliases(HEADS),
        why: "needed for the kv heads and head_dim".to_owned(),
    })?;
    if heads == 0 || heads > 100_000 {
        return Err(KvError::invalid(HEADS[0], heads, "must be between 1 and 100,000"));
    }
    Ok(heads as u32)
}

/// Multi-head latent attention's dimensions (DeepSeek V2/V3), when the config has a
/// `kv_lora_rank`.
fn mla_dims(f: &Fields<'_>, opts: &ConfigOptions, notes: &mut Notes) -> Result<Option<MlaDims>, KvError> {
    Ok(match f.uint(&["kv_lora_rank"])? {
        Some((_, 0)) => return Err(KvError::invalid("kv_lora_rank", 0, "must be positive for an MLA model")),
        Some((_, rank)) => {
            let rope = match f.uint(&["qk_rope_head_dim"])? {
                Some((_, r)) => r,
                None if opts.assume_defaults => {
                    notes.push(
                        "no `qk_rope_head_dim`: assumed 64 (DeepSeek V2/V3)",
                        "缺少 `qk_rope_head_dim`：按 64 计（DeepSeek V2/V3）",
                    );
                    64
                }
                None => {
                    return Err(KvError::MissingWithDefault {
                        field: "qk_rope_head_dim",
                        assumed: "64 (DeepSeek V2/V3's rope key width)".to_owned(),
                    });
                }
            };
            if rank > 65_536 || rope > 65_536 {
                return Err(KvError::invalid("kv_lora_rank", rank, "implausibly large"));
            }
            Some(MlaDims { kv_lora_rank: rank as u32, qk_rope_head_dim: rope as u32 })
        }
        None => None,
    })
}

/// The width of a KV head: `head_dim`, else hidden_size / num_attention_heads (0 for MLA, whose
/// widths are its own).
fn head_dim(
    f: &Fields<'_>,
    heads: u32,
    hidden: Option<u64>,
    mla: bool,
    notes: &mut Notes,
) -> Result<u64, KvError> {
    let head_dim = match f.uint(HEAD_DIM)? {
        Some((k, 0)) => return Err(KvError::invalid(k, 0, "must be positive")),
        Some((_, d)) => d,
        None => match hidden {
            Some(h) if h % u64::from(heads) == 0 => {
                let d = h / u64::from(heads);
                if !mla {
                    notes.push(
                        format!("no `head_dim`: head_dim = hidden_size / num_attention_heads = {h} / {heads} = {d}"),
                        format!("缺少 `head_dim`：head_dim = hidden_size / num_attention_heads = {h} / {heads} = {d}"),
                    );
                }
                d
            }
            Some(h) => {
                return Err(KvError::invalid(
                    "hidden_size",
                    h,
                    format!("is not a multiple of num_attention_heads ({heads}) and there is no `head_dim`"),
                ));
            }
            None if mla => 0,
            None => {
                return Err(KvError::MissingField {
                    field: "head_dim",
                    aliases: " (nor hidden_size to derive it as hidden_size / num_attention_heads)"
                        .to_owned(),
                    why: "the width of a KV head cannot be assumed".to_owned(),
                });
            }
        },
    };
    if head_dim > 65_536 {
        return Err(KvError::invalid("head_dim", head_dim, "implausibly large"));
    }
    Ok(head_dim)
}

/// The dtype the model is served in (`torch_dtype`), `None` when the config does not say.
fn dtype(f: &Fields<'_>, notes: &mut Notes) -> Option<ModelDtype> {
    match f.str("torch_dtype").or_else(|| f.str("dtype")) {
        Some(s) => match ModelDtype::parse(s) {
            Some(d) => Some(d),
            None => {
                notes.push(
                    format!("torch_dtype {s:?} not recognised: treated as bf16"),
                    format!("无法识别 torch_dtype {s:?}：按 bf16 处理"),
                );
                Some(ModelDtype::Bf16)
            }
        },
        None => {
            notes.push(
                "no `torch_dtype`: the model is assumed to be served in bf16",
                "缺少 `torch_dtype`：假定模型以 bf16 提供服务",
            );
            None
        }
    }
}

/// The vocabulary size (for the weights estimate), with Gemma 3's default when absent.
fn vocab_size(f: &Fields<'_>, mt: &str, notes: &mut Notes) -> Result<Option<u64>, KvError> {
    Ok(f.uint(VOCAB)?.map(|(_, n)| n).or_else(|| {
        mt.starts_with("gemma3").then(|| {
            notes.push(
                "no `vocab_size`: 262208, transformers' Gemma3TextConfig default",
                "缺少 `vocab_size`：按 262208 计，即 transformers 中 Gemma3TextConfig 的默认值",
            );
            262_208
        })
    }))
}

/// Notes on what the config holds that the estimate leaves out (multi-token-prediction layers,
/// DeepSeek-V3.2's indexer cache).
fn note_what_is_not_counted(f: &Fields<'_>, notes: &mut Notes) -> Result<(), KvError> {
    if let Some((_, n)) = f.uint(&["num_nextn_predict_layers"])?
        && n > 0
    {
        notes.push(
            format!("{n} multi-token-prediction layer(s) not counted: vLLM loads them only for speculative decoding"),
            format!("未计入 {n} 个 multi-token-prediction 层：vLLM 只在投机解码时加载它们"),
        );
    }
    if f.raw("index_topk").is_some() {
        notes.push(
            "DeepSeek-V3.2 sparse attention: the lightning indexer's own small cache is not counted",
            "DeepSeek-V3.2 稀疏注意力：lightning indexer 自己的小缓存未计入",
        );
    }
    Ok(())
}

fn kv_heads(
    f: &Fields<'_>,
    heads: u32,
    is_mla: bool,
    opts: &ConfigOptions,
    notes: &mut Notes,
) -> Result<u32, KvError> {
    let explicit = match f.uint(KV_HEADS)? {
        Some(found) => Some(found),
        None if f.bool("multi_query_attention") == Some(true) => f.uint(&["multi_query_group_num"])?,
        None if f.bool("multi_query") == Some(true) => Some(("multi_query", 1)),
        None => None,
    };
    let kv = match explicit {
        Some((k, 0)) => return Err(KvError::invalid(k, 0, "a model needs at least one kv head")),
        Some((_, n)) => n,
        // MLA caches a latent, not per-head K/V: the field does not matter.
        None if is_mla => u64::from(heads),
        None if opts.assume_defaults => {
            notes.push(
                format!("no `num_key_value_heads`: assumed {heads} (= num_attention_heads, plain multi-head attention)"),
                format!("缺少 `num_key_value_heads`：按 {heads} 计（= num_attention_heads，普通多头注意力）"),
            );
            u64::from(heads)
        }
        None => {
            return Err(KvError::MissingWithDefault {
                field: "num_key_value_heads",
                assumed: format!("{heads} (= num_attention_heads: plain multi-head attention, no GQA)"),
            });
        }
    };
    if !is_mla {
        if kv > u64::from(heads) {
            return Err(KvError::invalid(
                "num_key_value_heads",
                kv,
                format!("cannot exceed num_attention_heads ({heads})"),
            ));
        }
        if u64::from(heads) % kv != 0 {
            return Err(KvError::invalid(
                "num_key_value_heads",
                kv,
                format!("must divide num_attention_heads ({heads}) for grouped-query attention"),
            ));
        }
    }
    Ok(u32::try_from(kv).unwrap_or(heads))
}

fn sliding_window(f: &Fields<'_>) -> Result<Option<u64>, KvError> {
    match f.uint(&["sliding_window"])? {
        Some((_, 0)) => Err(KvError::invalid("sliding_window", 0, "must be positive (or null for none)")),
        Some((_, w)) => Ok(Some(w)),
        None => Ok(None),
    }
}

fn layer_kinds(
    f: &Fields<'_>,
    mt: &str,
    n: usize,
    is_mla: bool,
    notes: &mut Notes,
) -> Result<Vec<Attention>, KvError> {
    if is_mla {
        return Ok(vec![Attention::Mla; n]);
    }
    let window = sliding_window(f)?;
    if let Some(types) = f.raw("layer_types") {
        let arr = types
            .as_array()
            .ok_or_else(|| KvError::invalid("layer_types", types, "expected a list of strings"))?;
        if arr.len() != n {
            return Err(KvError::invalid(
                "layer_types",
                format!("a list of {}", arr.len()),
                format!("must have one entry per layer ({n})"),
            ));
        }
        let mut out = Vec::with_capacity(n);
        let mut chunked = false;
        for (i, t) in arr.iter().enumerate() {
            let s = t.as_str().unwrap_or("");
            out.push(match s {
                "full_attention" | "attention" | "global" | "global_attention" => Attention::Full,
                "sliding_attention" | "sliding_window" | "local" | "local_attention" => {
                    let w = window.ok_or_else(|| KvError::MissingField {
                        field: "sliding_window",
                        aliases: String::new(),
                        why: format!("layer {i} is a sliding-window layer but the window is not given"),
                    })?;
                    Attention::Sliding { window: w }
                }
                "chunked_attention" => {
                    chunked = true;
                    Attention::Full
                }
                other => return Err(KvError::UnsupportedLayer { layer: i, kind: other.to_owned() }),
            });
        }
        if chunked {
            notes.push(
                "chunked local attention layers are counted as full attention (vLLM disables its hybrid \
                 allocator for them by default)",
                "chunked local attention 层按 full attention 计算（vLLM 默认对它们关闭 hybrid allocator）",
            );
        }
        return Ok(out);
    }
    if let Some(bt) = f.raw("layers_block_type").and_then(Value::as_array)
        && let Some((i, t)) = bt.iter().enumerate().find(|(_, t)| t.as_str() != Some("attention"))
    {
        return Err(KvError::UnsupportedLayer { layer: i, kind: t.as_str().unwrap_or("?").to_owned() });
    }
    let Some(w) = window else {
        return Ok(vec![Attention::Full; n]);
    };
    if f.bool("use_sliding_window") == Some(false) {
        notes.push(
            format!("sliding_window {w} ignored: use_sliding_window is false"),
            format!("忽略 sliding_window {w}：use_sliding_window 为 false"),
        );
        return Ok(vec![Attention::Full; n]);
    }
    let pattern = f.uint(&["sliding_window_pattern", "_sliding_window_pattern"])?.map(|(_, p)| p);
    let sliding = Attention::Sliding { window: w };
    let kinds: Vec<Attention> = if mt.starts_with("gemma2") {
        notes.push(
            format!("gemma2: layers alternate sliding (window {w}) and full, starting with sliding"),
            format!("gemma2：各层在滑动窗口（window {w}）与 full 之间交替，从滑动窗口层开始"),
        );
        (0..n).map(|i| if i % 2 == 0 { sliding } else { Attention::Full }).collect()
    } else if pattern.is_some() || mt.starts_with("gemma3") {
        let p = pattern.unwrap_or(6).max(1) as usize;
        if pattern.is_none() {
            notes.push(
                "gemma3 without sliding_window_pattern: assumed 6 (five sliding, one global)",
                "gemma3 缺少 sliding_window_pattern：按 6 计（五层滑动窗口，一层全局）",
            );
        }
        notes.push(
            format!("every {p}th layer is global; the others slide (window {w})"),
            format!("每 {p} 层中有一层全局注意力，其余为滑动窗口（window {w}）"),
        );
        (0..n).map(|i| if (i + 1) % p == 0 { Attention::Full } else { sliding }).collect()
    } else if f.bool("use_sliding_window") == Some(true) && f.raw("max_window_layers").is_some() {
        let from = f.uint(&["max_window_layers"])?.map_or(0, |(_, m)| m as usize);
        notes.push(
            format!("use_sliding_window: layers {from} and up slide (window {w})"),
            format!("use_sliding_window：第 {from} 层及以上为滑动窗口（window {w}）"),
        );
        (0..n).map(|i| if i >= from { sliding } else { Attention::Full }).collect()
    } else {
        notes.push(
            format!("sliding_window {w} applies to every layer (no per-layer pattern in the config)"),
            format!("sliding_window {w} 作用于所有层（config 中没有逐层模式）"),
        );
        vec![sliding; n]
    };
    Ok(kinds)
}

fn derive_max_len(f: &Fields<'_>, mt: &str, notes: &mut Notes) -> Result<Option<u64>, KvError> {
    let mut best: Option<(&str, u64)> = None;
    for k in MAX_LEN {
        if let Some(v) = f.raw(k) {
            let n = as_uint(k, v)?;
            if n > 0 && best.is_none_or(|(_, b)| n < b) {
                best = Some((k, n));
            }
        }
    }
    let Some((_, mut len)) = best.or_else(|| {
        // Gemma 3's published configs leave the context to the transformers class default.
        mt.starts_with("gemma3").then(|| {
            notes.push(
                "no `max_position_embeddings`: 131072, transformers' Gemma3TextConfig default",
                "缺少 `max_position_embeddings`：按 131072 计，即 transformers 中 Gemma3TextConfig 的默认值",
            );
            ("max_position_embeddings", 131_072)
        })
    }) else {
        return Ok(None);
    };
    // vLLM multiplies by the rope scaling factor unless the rope type already describes the
    // extended length (su, longrope, llama3); yarn starts from the original length.
    let rope = f.raw("rope_scaling").and_then(Value::as_object);
    if let Some(r) = rope
        && !mt.starts_with("gemma3")
    {
        let kind = r.get("rope_type").or_else(|| r.get("type")).and_then(Value::as_str).unwrap_or("");
        let factor = r.get("factor").and_then(Value::as_f64);
        if let Some(factor) = factor
            && !matches!(kind, "su" | "longrope" | "llama3" | "default" | "mrope")
            && factor.is_finite()
            && factor > 0.0
        {
            let base = match (kind, r.get("original_max_position_embeddings").and_then(Value::as_u64)) {
                ("yarn", Some(orig)) => orig,
                _ => len,
            };
            let scaled = (base as f64 * factor).floor();
            if (1.0..=1e12).contains(&scaled) {
                let scaled = scaled as u64;
                if scaled != len {
                    notes.push(
                        format!(
                            "default max_model_len {scaled}: {kind} rope scaling ×{factor} of {base}, as vLLM derives it"
                        ),
                        format!("默认 max_model_len {scaled}：{kind} rope scaling，{base} ×{factor}，与 vLLM 的推导一致"),
                    );
                }
                len = scaled;
            }
        }
    }
    Ok(Some(len))
}

fn quantization(f: &Fields<'_>, notes: &mut Notes) -> Option<WeightDtype> {
    let q = f.raw("quantization_config")?.as_object()?;
    let method = q.get("quant_method").and_then(Value::as_str).unwrap_or("").to_ascii_lowercase();
    let bits = q.get("bits").or_else(|| q.get("w_bit")).and_then(Value::as_u64);
    let d = match method.as_str() {
        "fp8" | "fbgemm_fp8" => WeightDtype::Fp8,
        "mxfp4" => WeightDtype::Mxfp4,
        "awq" | "gptq" | "awq_marlin" | "gptq_marlin" if bits == Some(8) => WeightDtype::Int8,
        "awq" | "gptq" | "awq_marlin" | "gptq_marlin" => WeightDtype::Int4,
        "bitsandbytes" if q.get("load_in_4bit").and_then(Value::as_bool) == Some(true) => WeightDtype::Int4,
        "bitsandbytes" => WeightDtype::Int8,
        _ => {
            notes.push(
                format!("quantization_config method {method:?} not recognised: weights estimated at the model dtype"),
                format!("无法识别 quantization_config method {method:?}：权重按模型 dtype 估算"),
            );
            return None;
        }
    };
    let ds = d.as_str();
    notes.push(
        format!("quantized checkpoint ({method}): weights estimated at {ds} per parameter"),
        format!("量化权重（{method}）：每个参数按 {ds} 估算"),
    );
    Some(d)
}

fn moe_shape(f: &Fields<'_>, intermediate: Option<u64>) -> Result<Option<MoeShape>, KvError> {
    let experts = f.uint(&["n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts"])?;
    let Some((_, experts)) = experts.filter(|(_, e)| *e > 1) else { return Ok(None) };
    let top = f
        .uint(&["num_experts_per_tok", "num_experts_per_token", "experts_per_token", "moe_top_k"])?
        .map_or(1, |(_, n)| n);
    let expert_inter = f.uint(&["moe_intermediate_size"])?.map(|(_, n)| n).or(intermediate).unwrap_or(0);
    let shared_inter = f.uint(&["shared_expert_intermediate_size"])?.map(|(_, n)| n);
    let shared = match f.uint(&["n_shared_experts", "num_shared_experts"])? {
        Some((_, n)) => n,
        None if shared_inter.is_some_and(|n| n > 0) => 1,
        None => 0,
    };
    let dense_layers = f.uint(&["first_k_dense_replace"])?.map_or(0, |(_, n)| n);
    Ok(Some(MoeShape {
        experts,
        experts_per_token: top,
        expert_intermediate: expert_inter,
        shared_experts: shared,
        shared_intermediate: shared_inter.unwrap_or(expert_inter),
        dense_layers,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict(text: &str) -> Result<ModelShape, KvError> {
        parse_config(text, &ConfigOptions::default())
    }

    #[test]
    fn llama_gqa_and_derived_head_dim() {
        let m = strict(
            r#"{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":4096,
            "num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,
            "max_position_embeddings":131072,"torch_dtype":"bfloat16",
            "rope_scaling":{"factor":8.0,"original_max_position_embeddings":8192,"rope_type":"llama3"}}"#,
        )
        .unwrap();
        assert_eq!((m.num_layers(), m.num_kv_heads, m.head_dim_k), (32, 8, 128));
        assert_eq!(m.name, "LlamaForCausalLM");
        assert_eq!(m.max_model_len, Some(131_072));
        assert!(m.notes.iter().any(|n| n.contains("4096 / 32 = 128")));
    }

    #[test]
    fn explicit_head_dim_wins() {
        // Mistral NeMo: 5120 / 32 would be 160; the config says 128.
        let m = strict(
            r#"{"hidden_size":5120,"num_hidden_layers":40,"num_attention_heads":32,
            "num_key_value_heads":8,"head_dim":128}"#,
        )
        .unwrap();
        assert_eq!(m.head_dim_k, 128);
    }

    #[test]
    fn missing_fields_name_the_field_and_the_assumption() {
        let e =
            strict(r#"{"hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32}"#).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("num_key_value_heads") && msg.contains("assumed to be 32"), "{msg}");
        let m = parse_config(
            r#"{"hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32}"#,
            &ConfigOptions { assume_defaults: true, ..ConfigOptions::default() },
        )
        .unwrap();
        assert_eq!(m.num_kv_heads, 32);
        assert!(m.notes.iter().any(|n| n.contains("num_key_value_heads")));

        let msg = strict(r#"{"num_attention_heads":32,"num_key_value_heads":8}"#).unwrap_err().to_string();
        assert!(msg.contains("num_hidden_layers") && msg.contains("n_layer"), "{msg}");
        let msg = strict(r#"{"num_hidden_layers":2,"num_attention_heads":32,"num_key_value_heads":8}"#)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("head_dim") && msg.contains("hidden_size"), "{msg}");
    }

    #[test]
    fn fields_only_some_figures_need_may_be_absent() {
        // No context length, vocabulary or MLP width: the shape is read, they stay unknown
        // (the estimate leaves what needs them null, with a `missing` entry).
        let m = strict(
            r#"{"hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8}"#,
        )
        .unwrap();
        assert_eq!((m.num_layers(), m.num_kv_heads, m.head_dim_k), (32, 8, 128));
        assert_eq!((m.max_model_len, m.vocab_size, m.intermediate_size, m.params), (None, None, None, None));
    }

    #[test]
    fn absurd_values_are_rejected() {
        for (text, needle) in [
            (
                r#"{"num_hidden_layers":0,"num_attention_heads":8,"num_key_value_heads":8,"head_dim":64}"#,
                "at least one layer",
            ),
            (
                r#"{"num_hidden_layers":-2,"num_attention_heads":8,"num_key_value_heads":8,"head_dim":64}"#,
                "negative",
            ),
            (
                r#"{"num_hidden_layers":2.5,"num_attention_heads":8,"num_key_value_heads":8,"head_dim":64}"#,
                "whole number",
            ),
            (
                r#"{"num_hidden_layers":"2","num_attention_heads":8,"num_key_value_heads":8,"head_dim":64}"#,
                "expected a number",
            ),
            (
                r#"{"num_hidden_layers":2,"num_attention_heads":8,"num_key_value_heads":3,"head_dim":64}"#,
                "must divide",
            ),
            (
                r#"{"num_hidden_layers":2,"num_attention_heads":8,"num_key_value_heads":16,"head_dim":64}"#,
                "cannot exceed",
            ),
            (
                r#"{"num_hidden_layers":2,"num_attention_heads":8,"num_key_value_heads":0,"head_dim":64}"#,
                "at least one kv head",
            ),
            (
                r#"{"num_hidden_layers":2,"num_attention_heads":8,"num_key_value_heads":8,"head_dim":0}"#,
                "positive",
            ),
            (
                r#"{"num_hidden_layers":2,"num_attention_heads":8,"num_key_value_heads":8,"head_dim":64,"sliding_window":0}"#,
                "sliding_window",
            ),
            (r#"[1,2]"#, "JSON object"),
            (r#"{"#, "not valid JSON"),
        ] {
            let msg = strict(text).unwrap_err().to_string();
            assert!(msg.contains(needle), "{text}: {msg}");
        }
    }

    #[test]
    fn gemma3_text_config_and_pattern() {
        let m = strict(
            r#"{"architectures":["Gemma3ForConditionalGeneration"],"model_type":"gemma3","torch_dtype":"bfloat16",
            "text_config":{"model_type":"gemma3_text","hidden_size":5376,"num_hidden_layers":62,
            "num_attention_heads":32,"num_key_value_heads":16,"head_dim":128,"sliding_window":1024,
            "sliding_window_pattern":6,"max_position_embeddings":131072,
            "rope_scaling":{"factor":8.0,"rope_type":"linear"}}}"#,
        )
        .unwrap();
        let full = m.layers.iter().filter(|a| **a == Attention::Full).count();
        assert_eq!((m.num_layers(), full), (62, 10));
        assert_eq!(m.layers[5], Attention::Full);
        assert_eq!(m.layers[0], Attention::Sliding { window: 1024 });
        assert_eq!(m.dtype, Some(ModelDtype::Bf16));
        // Gemma 3's linear rope factor does not stretch vLLM's default length.
        assert_eq!(m.max_model_len, Some(131_072));
    }

    #[test]
    fn gemma2_alternates_and_qwen_ignores_disabled_window() {
        let m = strict(
            r#"{"model_type":"gemma2","num_hidden_layers":4,"num_attention_heads":16,"num_key_value_heads":8,
            "head_dim":256,"sliding_window":4096}"#,
        )
        .unwrap();
        assert_eq!(m.layers[0], Attention::Sliding { window: 4096 });
        assert_eq!(m.layers[1], Attention::Full);
        let m = strict(
            r#"{"model_type":"qwen2","hidden_size":3584,"num_hidden_layers":28,"num_attention_heads":28,
            "num_key_value_heads":4,"sliding_window":131072,"use_sliding_window":false,"max_window_layers":28}"#,
        )
        .unwrap();
        assert!(m.is_plain_attention());
    }

    #[test]
    fn gpt_oss_layer_types_and_deepseek_mla() {
        let m = strict(
            r#"{"model_type":"gpt_oss","num_hidden_layers":4,"num_attention_heads":64,"num_key_value_heads":8,
            "head_dim":64,"sliding_window":128,
            "layer_types":["sliding_attention","full_attention","sliding_attention","full_attention"]}"#,
        )
        .unwrap();
        assert_eq!(m.layers[0], Attention::Sliding { window: 128 });
        assert!(m.is_hybrid());
        let m = strict(
            r#"{"model_type":"deepseek_v3","hidden_size":7168,"num_hidden_layers":61,"num_attention_heads":128,
            "num_key_value_heads":128,"kv_lora_rank":512,"qk_rope_head_dim":64,"qk_nope_head_dim":128,
            "v_head_dim":128,"num_nextn_predict_layers":1}"#,
        )
        .unwrap();
        assert_eq!(m.mla, Some(MlaDims { kv_lora_rank: 512, qk_rope_head_dim: 64 }));
        assert!(m.layers.iter().all(|a| *a == Attention::Mla));
        assert!(m.notes.iter().any(|n| n.contains("multi-token-prediction")));
    }

    #[test]
    fn every_prefix_and_odd_value_is_an_error_or_a_shape() {
        let text = r#"{"model_type":"gemma3","text_config":{"num_hidden_layers":6,"num_attention_heads":8,
            "num_key_value_heads":4,"head_dim":64,"sliding_window":512,"max_position_embeddings":8192}}"#;
        for (i, _) in text.char_indices() {
            let _ = strict(&text[..i]);
        }
        for odd in ["null", "true", "\"x\"", "[]", "{}", "-1", "1e300", "0.5", "18446744073709551616"] {
            let t = text.replace("8192", odd).replace("512", odd);
            let _ = strict(&t);
            let t = format!(r#"{{"num_hidden_layers":{odd},"num_attention_heads":{odd},"head_dim":{odd}}}"#);
            let _ = strict(&t);
        }
    }

    #[test]
    fn chatglm_names_and_unsupported_layers() {
        let m = strict(
            r#"{"model_type":"chatglm","num_layers":40,"hidden_size":4096,"num_attention_heads":32,
            "multi_query_attention":true,"multi_query_group_num":2,"kv_channels":128,"seq_length":131072}"#,
        )
        .unwrap();
        assert_eq!((m.num_layers(), m.num_kv_heads, m.head_dim_k), (40, 2, 128));
        assert_eq!(m.max_model_len, Some(131_072));
        let e = strict(
            r#"{"num_hidden_layers":2,"num_attention_heads":8,"num_key_value_heads":8,"head_dim":64,
            "layer_types":["linear_attention","full_attention"]}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("linear_attention"));
    }
}
