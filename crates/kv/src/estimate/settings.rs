//! The settings an estimate runs with: each option as given, else what vLLM would pick for this
//! model and GPU, every such choice written down as an assumption (and what vLLM would warn
//! about, as a warning).

use super::{DEFAULT_BLOCK_SIZE, KvOptions, Notes};
use crate::KvError;
use crate::dtype::{KvDtype, ModelDtype};
use crate::model::ModelShape;
use crate::units::fmt_int;

/// The options with vLLM's defaults filled in.
#[derive(Clone, Copy, Debug)]
pub(super) struct Resolved {
    /// The dtype the model is served in (a float32 checkpoint is served as bf16).
    pub serving_dtype: ModelDtype,
    /// Tokens per KV block.
    pub block_size: u32,
    /// `max_model_len`; `None` when neither the options nor the model say.
    pub max_model_len: Option<u64>,
    /// `max_num_batched_tokens`.
    pub max_num_batched_tokens: u64,
    /// `max_num_seqs`.
    pub max_num_seqs: u64,
}

/// `opts` resolved for `model`; an option that cannot be (zero, an implausible length) is an
/// error.
pub(super) fn resolve(model: &ModelShape, opts: &KvOptions, notes: &mut Notes) -> Result<Resolved, KvError> {
    let lang = opts.lang;
    let serving_dtype = match (opts.dtype, model.dtype) {
        (Some(d), _) => d,
        (None, Some(ModelDtype::Fp32)) => {
            notes.assumptions.push(
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
            notes.assumptions.push(
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
                notes.assumptions.push(
                    lang.pick(
                        "block size 16 (vLLM's default); on Hopper vLLM forces 64 for FlashMLA — pass \
                         --block-size 64 to match (capacity moves by less than one block)",
                        "block size 16（vLLM 默认值）；Hopper 上 vLLM 会为 FlashMLA 强制使用 64——传 \
                         --block-size 64 与之对齐（容量变化不到一个 block）",
                    )
                    .to_owned(),
                );
            } else {
                notes.assumptions.push(
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
                notes.warnings.push(lang.pick(
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
            notes.assumptions.push(lang.pick(
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
            notes.assumptions.push(lang.pick(
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
            notes.assumptions.push(lang.pick(
                format!("max_num_seqs {n} (vLLM `vllm serve` default {gpu_words})"),
                format!("max_num_seqs {n}（vLLM `vllm serve` 默认值{gpu_words}）"),
            ));
            n
        }
    };
    if opts.kv_dtype == KvDtype::Auto {
        let d = serving_dtype.as_str();
        notes.assumptions.push(lang.pick(
            format!("kv cache dtype auto = the model's dtype ({d})"),
            format!("kv cache dtype auto = 模型的 dtype（{d}）"),
        ));
    }
    Ok(Resolved { serving_dtype, block_size, max_model_len, max_num_batched_tokens: mnbt, max_num_seqs })
}
