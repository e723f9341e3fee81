//! Typed errors of the KV estimator: every message names the field at fault and what to do.

/// Why a model or a set of options cannot be estimated.
///
/// Messages are lowercase without a trailing period; they name the `config.json` field or the
/// option at fault, and, where a default exists, what would have been assumed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KvError {
    #[error("config.json is not valid JSON: {0}")]
    InvalidJson(String),
    #[error("config.json must be a JSON object (`{{\"num_hidden_layers\": …}}`), got {0}")]
    NotAnObject(&'static str),
    /// A field with no safe default is absent.
    #[error("config.json has no `{field}`{aliases}: {why}")]
    MissingField { field: &'static str, aliases: String, why: String },
    /// A field with a conventional default is absent; the caller did not allow defaults.
    #[error(
        "config.json has no `{field}`; it would be assumed to be {assumed}: add the field, or pass \
         --assume-defaults to accept that"
    )]
    MissingWithDefault { field: &'static str, assumed: String },
    /// A value is present but absurd or of the wrong type.
    #[error("`{field}` = {value}: {reason}")]
    InvalidValue { field: String, value: String, reason: String },
    #[error(
        "tensor parallel size {tp} does not divide the {heads} attention heads (vLLM requires \
         num_attention_heads % tp == 0): try tp = {suggest}"
    )]
    TpDoesNotDivideHeads { tp: u32, heads: u32, suggest: String },
    #[error(
        "tensor parallel size {tp} does not fit the {kv_heads} kv heads: vLLM needs kv_heads % tp == 0 \
         (tp ≤ kv heads) or tp % kv_heads == 0 (tp > kv heads, heads replicated)"
    )]
    TpDoesNotFitKvHeads { tp: u32, kv_heads: u32 },
    #[error("pipeline parallel size {pp} is larger than the model's {layers} layers")]
    PpExceedsLayers { pp: u32, layers: u32 },
    #[error("unknown model preset {0:?}: `triage kv --list-models` lists the built-in ones")]
    UnknownModel(String),
    #[error("unknown gpu {0:?}: `triage kv --list-gpus` lists the presets, or give --gpu-mem-gib")]
    UnknownGpu(String),
    #[error(
        "unknown kv cache dtype {0:?}: expected auto, bf16, fp16, fp32, fp8, fp8_e4m3, fp8_e5m2 or fp8_ds_mla"
    )]
    UnknownKvDtype(String),
    #[error("unknown dtype {0:?}: expected bf16, fp16, fp32, fp8, int8, int4 or mxfp4")]
    UnknownDtype(String),
    #[error(
        "kv cache dtype fp8_ds_mla only exists for MLA models (DeepSeek V2/V3/R1); this model has no kv_lora_rank"
    )]
    DsMlaNeedsMla,
    #[error(
        "layer {layer} has attention type {kind:?}, which is not supported: hybrid linear-attention / \
         mamba models keep a per-sequence state that this estimator does not model"
    )]
    UnsupportedLayer { layer: usize, kind: String },
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
}
