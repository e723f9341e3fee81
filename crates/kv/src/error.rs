//! Typed errors of the KV estimator: every message names the field at fault and what to do.

/// Why a model or a set of options cannot be estimated.
///
/// Messages are lowercase without a trailing period; they name the `config.json` field or the
/// option at fault, and, where a default exists, what would have been assumed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KvError {
    /// The config is not JSON: the parser's message.
    #[error("config.json is not valid JSON: {0}")]
    InvalidJson(String),
    /// The config is JSON but not an object: what it is instead (`an array`, …).
    #[error("config.json must be a JSON object (`{{\"num_hidden_layers\": …}}`), got {0}")]
    NotAnObject(&'static str),
    /// A field with no safe default is absent.
    #[error("config.json has no `{field}`{aliases}: {why}")]
    MissingField {
        /// The field's name.
        field: &'static str,
        /// The other names it may have, as printed after it (` (nor n_layer)`), or empty.
        aliases: String,
        /// What it is needed for.
        why: String,
    },
    /// A field with a conventional default is absent; the caller did not allow defaults.
    #[error(
        "config.json has no `{field}`; it would be assumed to be {assumed}: add the field, or pass \
         --assume-defaults to accept that"
    )]
    MissingWithDefault {
        /// The field's name.
        field: &'static str,
        /// The value that would be assumed.
        assumed: String,
    },
    /// A value is present but absurd or of the wrong type.
    #[error("`{field}` = {value}: {reason}")]
    InvalidValue {
        /// The field or option.
        field: String,
        /// Its value, as shown.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The tensor-parallel size does not divide the attention heads.
    #[error(
        "tensor parallel size {tp} does not divide the {heads} attention heads (vLLM requires \
         num_attention_heads % tp == 0): try tp = {suggest}"
    )]
    TpDoesNotDivideHeads {
        /// The tensor-parallel size given.
        tp: u32,
        /// The model's attention heads.
        heads: u32,
        /// Sizes up to 16 that divide them, comma-separated.
        suggest: String,
    },
    /// The tensor-parallel size neither divides nor is a multiple of the KV heads.
    #[error(
        "tensor parallel size {tp} does not fit the {kv_heads} kv heads: vLLM needs kv_heads % tp == 0 \
         (tp ≤ kv heads) or tp % kv_heads == 0 (tp > kv heads, heads replicated)"
    )]
    TpDoesNotFitKvHeads {
        /// The tensor-parallel size given.
        tp: u32,
        /// The model's KV heads.
        kv_heads: u32,
    },
    /// More pipeline stages than layers.
    #[error("pipeline parallel size {pp} is larger than the model's {layers} layers")]
    PpExceedsLayers {
        /// The pipeline-parallel size given.
        pp: u32,
        /// The model's decoder layers.
        layers: u32,
    },
    /// No model preset has this name.
    #[error("unknown model preset {0:?}: `triage kv --list-models` lists the built-in ones")]
    UnknownModel(String),
    /// No GPU preset has this name.
    #[error("unknown gpu {0:?}: `triage kv --list-gpus` lists the presets, or give --gpu-mem-gib")]
    UnknownGpu(String),
    /// Not a `--kv-cache-dtype` value.
    #[error(
        "unknown kv cache dtype {0:?}: expected auto, bf16, fp16, fp32, fp8, fp8_e4m3, fp8_e5m2 or fp8_ds_mla"
    )]
    UnknownKvDtype(String),
    /// Not a weight dtype.
    #[error("unknown dtype {0:?}: expected bf16, fp16, fp32, fp8, int8, int4 or mxfp4")]
    UnknownDtype(String),
    /// `fp8_ds_mla` asked for a model without MLA.
    #[error(
        "kv cache dtype fp8_ds_mla only exists for MLA models (DeepSeek V2/V3/R1); this model has no kv_lora_rank"
    )]
    DsMlaNeedsMla,
    /// A layer type the estimator does not model (linear attention, mamba).
    #[error(
        "layer {layer} has attention type {kind:?}, which is not supported: hybrid linear-attention / \
         mamba models keep a per-sequence state that this estimator does not model"
    )]
    UnsupportedLayer {
        /// The layer's index.
        layer: usize,
        /// Its attention type, as the config names it.
        kind: String,
    },
    /// A product overflowed 64 bits: what was being computed.
    #[error("{0}: the value is too large for 64-bit byte arithmetic")]
    Overflow(&'static str),
    /// Something needed for the memory budget is unknown.
    #[error("{0}")]
    BudgetUnknown(String),
}

impl KvError {
    /// An `InvalidValue` for a field whose value is shown with `Display`.
    pub fn invalid(
        field: impl Into<String>,
        value: impl std::fmt::Display,
        reason: impl Into<String>,
    ) -> Self {
        KvError::InvalidValue { field: field.into(), value: value.to_string(), reason: reason.into() }
    }

    /// The message in `lang` (`to_string()` is the English one). Field names, flags and values
    /// are the same; free-text details carried inside a variant (a reason, a JSON parser's
    /// message) stay as they were written.
    pub fn message_in(&self, lang: triage_base::lang::Lang) -> String {
        use KvError::*;
        if lang == triage_base::lang::Lang::En {
            return self.to_string();
        }
        match self {
            InvalidJson(e) => format!("config.json 不是合法的 JSON：{e}"),
            NotAnObject(got) => {
                format!("config.json 必须是一个 JSON 对象（`{{\"num_hidden_layers\": …}}`），实际是 {got}")
            }
            MissingField { field, aliases, why } => format!("config.json 中缺少 `{field}`{aliases}：{why}"),
            MissingWithDefault { field, assumed } => format!(
                "config.json 中缺少 `{field}`；默认会按 {assumed} 计：请补上该字段，或传 --assume-defaults 接受这个默认值"
            ),
            InvalidValue { field, value, reason } => format!("`{field}` 的取值 {value} 无效：{reason}"),
            TpDoesNotDivideHeads { tp, heads, suggest } => format!(
                "tensor parallel size {tp} 不能整除 {heads} 个 attention head（vLLM 要求 num_attention_heads % tp == 0）：\
                 可以试 tp = {suggest}"
            ),
            TpDoesNotFitKvHeads { tp, kv_heads } => format!(
                "tensor parallel size {tp} 与 {kv_heads} 个 kv head 不匹配：vLLM 要求 kv_heads % tp == 0\
                 （tp ≤ kv head 数）或 tp % kv_heads == 0（tp > kv head 数，head 会被复制）"
            ),
            PpExceedsLayers { pp, layers } => format!("pipeline parallel size {pp} 大于模型的层数 {layers}"),
            UnknownModel(m) => format!("未知的模型预设 {m:?}：`triage kv --list-models` 列出内置预设"),
            UnknownGpu(g) => {
                format!("未知的 gpu {g:?}：`triage kv --list-gpus` 列出预设，或者传 --gpu-mem-gib")
            }
            UnknownKvDtype(d) => format!(
                "未知的 kv cache dtype {d:?}：可选 auto、bf16、fp16、fp32、fp8、fp8_e4m3、fp8_e5m2 或 fp8_ds_mla"
            ),
            UnknownDtype(d) => format!("未知的 dtype {d:?}：可选 bf16、fp16、fp32、fp8、int8、int4 或 mxfp4"),
            DsMlaNeedsMla => {
                "kv cache dtype fp8_ds_mla 只适用于 MLA 模型（DeepSeek V2/V3/R1）；这个模型没有 kv_lora_rank"
                    .to_owned()
            }
            UnsupportedLayer { layer, kind } => format!(
                "第 {layer} 层的 attention 类型为 {kind:?}，暂不支持：hybrid linear-attention / mamba 模型为每条序列\
                 保存状态，本估算器没有对其建模"
            ),
            Overflow(what) => format!("{what}：数值过大，超出 64 位字节运算的范围"),
            BudgetUnknown(why) => format!("无法计算显存预算：{why}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use triage_base::lang::{Lang, has_cjk};

    #[test]
    fn every_error_has_a_chinese_message_with_the_same_numbers() {
        let numbers = |s: &str| {
            let mut v: Vec<String> =
                s.split(|c: char| !c.is_ascii_digit()).filter(|t| !t.is_empty()).map(str::to_owned).collect();
            v.sort();
            v
        };
        let all = [
            KvError::InvalidJson("expected value at line 1 column 2".into()),
            KvError::NotAnObject("an array"),
            KvError::MissingField {
                field: "num_hidden_layers",
                aliases: " (nor n_layer)".into(),
                why: "x".into(),
            },
            KvError::MissingWithDefault { field: "qk_rope_head_dim", assumed: "64".into() },
            KvError::invalid("--tp", 0, "must be at least 1"),
            KvError::TpDoesNotDivideHeads { tp: 8, heads: 28, suggest: "1, 2, 4, 7, 14".into() },
            KvError::TpDoesNotFitKvHeads { tp: 8, kv_heads: 10 },
            KvError::PpExceedsLayers { pp: 64, layers: 32 },
            KvError::UnknownModel("llama-9".into()),
            KvError::UnknownGpu("h900".into()),
            KvError::UnknownKvDtype("fp4".into()),
            KvError::UnknownDtype("fp4".into()),
            KvError::DsMlaNeedsMla,
            KvError::UnsupportedLayer { layer: 3, kind: "mamba".into() },
            KvError::Overflow("page size"),
            KvError::BudgetUnknown("pass --weights-gib".into()),
        ];
        for e in all {
            let (en, zh) = (e.to_string(), e.message_in(Lang::Zh));
            assert_eq!(e.message_in(Lang::En), en);
            assert!(has_cjk(&zh) && zh != en, "{zh}");
            assert_eq!(numbers(&en), numbers(&zh), "\n{en}\n{zh}");
        }
    }
}
