//! The memory vLLM leaves for KV on one GPU: `total × gpu_memory_utilization − weights −
//! activation peak − non-torch memory` (vLLM V1 `gpu_worker.determine_available_memory`; V0
//! printed the same terms as "model weights take …; non_torch_memory takes …; PyTorch
//! activation peak memory takes …; the rest of the memory reserved for KV Cache is …").
//!
//! Weights and activation are estimates unless given. The activation estimate is a documented
//! heuristic of the profile run (one forward pass of `max_num_batched_tokens` tokens, then a
//! dummy sampler pass): the larger of the widest MLP intermediate, `T · (3·I/tp + 4·H) · 2 B`,
//! and the sampler's fp32 logits, `min(max_num_seqs, T) · vocab · 4 B · 3`. It is within a
//! factor of about two of what vLLM logs; give `--activation-gib` from the log when you have it.
//! CUDA-graph memory is outside vLLM's budget and not counted here either.

use crate::KvError;
use crate::dtype::{ModelDtype, WeightDtype};
use crate::model::{ModelShape, ParamSource};
use crate::params::count_needs;
use crate::units::{GIB, MIB, fmt_gib, fmt_int, fmt_ppm};
use serde::Serialize;

/// What is known about the GPU and the non-KV memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BudgetInputs {
    /// Memory CUDA reports as total on one GPU.
    pub gpu_total_bytes: u64,
    /// `gpu_memory_utilization` in parts per million (vLLM's default 0.9 = 900,000).
    pub utilization_ppm: u32,
    /// Whole-model weights, when given (`--weights-gib`); split over `tp × pp` GPUs.
    pub weights_bytes: Option<u64>,
    /// Parameter count, when given (`--params-b`); else the model's.
    pub params: Option<u64>,
    /// Weight storage, when given (`--weights-dtype`); else the config's quantization or dtype.
    pub weights_dtype: Option<WeightDtype>,
    /// Activation peak per GPU, when given (`--activation-gib`).
    pub activation_bytes: Option<u64>,
    /// Non-torch memory per GPU (NCCL, cuBLAS workspaces), when given (`--non-torch-gib`).
    pub non_torch_bytes: Option<u64>,
}

impl BudgetInputs {
    /// A GPU of `gpu_total_bytes` at the default utilization
    /// ([`defaults::GPU_MEMORY_UTILIZATION_PPM`](crate::defaults::GPU_MEMORY_UTILIZATION_PPM)),
    /// nothing else given.
    pub fn new(gpu_total_bytes: u64) -> BudgetInputs {
        BudgetInputs {
            gpu_total_bytes,
            utilization_ppm: crate::defaults::GPU_MEMORY_UTILIZATION_PPM,
            weights_bytes: None,
            params: None,
            weights_dtype: None,
            activation_bytes: None,
            non_torch_bytes: None,
        }
    }
}

/// Scheduler settings the activation estimate depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BudgetContext {
    /// Tensor-parallel size.
    pub tp: u32,
    /// Pipeline-parallel size.
    pub pp: u32,
    /// The dtype the weights are served in.
    pub serving_dtype: ModelDtype,
    /// Most tokens in one scheduler step (`max_num_batched_tokens`).
    pub max_num_batched_tokens: u64,
    /// Most sequences in one batch (`max_num_seqs`).
    pub max_num_seqs: u64,
    /// The language of the `*_how` explanations.
    pub lang: triage_base::lang::Lang,
}

/// The budget of one GPU, every term with how it was obtained.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Budget {
    /// GPU memory as CUDA reports it, bytes.
    pub gpu_total_bytes: u64,
    /// `gpu_memory_utilization` in parts per million.
    pub utilization_ppm: u32,
    /// `total × utilization`, rounded down.
    pub requested_bytes: u64,
    /// Weights on one GPU; `None` when they cannot be counted (see `weights_needs`).
    pub weights_bytes: Option<u64>,
    /// How `weights_bytes` was obtained, in words.
    pub weights_how: String,
    /// Activation peak on one GPU; `None` when it cannot be estimated (see `activation_needs`).
    pub activation_bytes: Option<u64>,
    /// How `activation_bytes` was obtained, in words.
    pub activation_how: String,
    /// Memory outside PyTorch's allocator (CUDA context, NCCL buffers, CUDA graphs), bytes.
    pub non_torch_bytes: u64,
    /// How `non_torch_bytes` was obtained, in words.
    pub non_torch_how: String,
    /// What is left for KV (0 when the rest does not fit); `None` when a term is unknown.
    pub available_kv_bytes: Option<u64>,
    /// How far weights + activation + non-torch exceed the requested memory (0 when they fit);
    /// `None` when a term is unknown.
    pub shortfall_bytes: Option<u64>,
    /// The `config.json` fields the parameter count lacks, when the weights are unknown.
    #[serde(skip)]
    pub weights_needs: Vec<&'static str>,
    /// The `config.json` fields the activation estimate lacks, when it is unknown.
    #[serde(skip)]
    pub activation_needs: Vec<&'static str>,
}

/// A term that cannot be computed: the fields it lacks and the words for the `*_how` line.
fn unknown_term(
    lang: triage_base::lang::Lang,
    needs: &[&'static str],
    what: (&str, &str),
    flags: &str,
) -> String {
    let fields = needs.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ");
    let (en, zh) = what;
    match (needs.is_empty(), lang) {
        (false, triage_base::lang::Lang::En) => {
            format!("unknown: {en}, config.json has no {fields}; pass {flags}")
        }
        (false, triage_base::lang::Lang::Zh) => {
            format!("未知：{zh}，config.json 中没有 {fields}；请传 {flags}")
        }
        (true, triage_base::lang::Lang::En) => format!("unknown: {en}; pass {flags}"),
        (true, triage_base::lang::Lang::Zh) => format!("未知：{zh}；请传 {flags}"),
    }
}

/// Compute the budget. A term the model cannot give (no parameter count, no MLP or vocabulary
/// size) is `None` with the fields it lacks, and so is what is left for KV; errors are only
/// for absurd inputs and overflow.
pub fn plan(model: &ModelShape, ctx: &BudgetContext, inp: &BudgetInputs) -> Result<Budget, KvError> {
    if inp.gpu_total_bytes == 0 {
        return Err(KvError::invalid("--gpu-mem-gib", 0, "a GPU needs some memory"));
    }
    let gpus = u64::from(ctx.tp.max(1)) * u64::from(ctx.pp.max(1));
    let requested =
        u64::try_from(u128::from(inp.gpu_total_bytes) * u128::from(inp.utilization_ppm) / 1_000_000)
            .unwrap_or(u64::MAX);

    let lang = ctx.lang;
    let given = || lang.pick("given", "给定").to_owned();
    let mut weights_needs = Vec::new();
    let (weights, weights_how) = match inp.weights_bytes {
        Some(w) => {
            let g = fmt_gib(w);
            (
                Some(w.div_ceil(gpus)),
                lang.pick(
                    format!("given: {g} over {gpus} GPU(s)"),
                    format!("给定 {g}，分布在 {gpus} 张 GPU 上"),
                ),
            )
        }
        None => {
            let known = match (inp.params, &model.params) {
                (Some(p), _) => Some((p, given())),
                (None, Some((p, ParamSource::Published(s)))) => {
                    Some((*p, lang.pick(format!("published: {s}"), format!("公开数据：{s}"))))
                }
                (None, Some((p, _))) => {
                    Some((*p, lang.pick("counted from config.json", "按 config.json 统计").to_owned()))
                }
                (None, None) => None,
            };
            match known {
                Some((params, psrc)) => {
                    let d = inp
                        .weights_dtype
                        .or(model.weight_dtype)
                        .unwrap_or_else(|| WeightDtype::from_model(ctx.serving_dtype));
                    let total = u128::from(params) * u128::from(d.millibytes()) / 1000;
                    let total = u64::try_from(total).map_err(|_| KvError::Overflow("weights size"))?;
                    let approx = if matches!(d, WeightDtype::Int4 | WeightDtype::Mxfp4) {
                        lang.pick("about ", "约 ")
                    } else {
                        ""
                    };
                    let (n, whole, frac, ds, tg) = (
                        fmt_int(params),
                        d.millibytes() / 1000,
                        d.millibytes() % 1000,
                        d.as_str(),
                        fmt_gib(total),
                    );
                    (
                        Some(total.div_ceil(gpus)),
                        lang.pick(
                            format!(
                                "estimated: {n} parameters ({psrc}) × {approx}{whole}.{frac:03} B ({ds}) = {tg}, over {gpus} GPU(s)"
                            ),
                            format!(
                                "估算 {n} 个参数（{psrc}）× {approx}{whole}.{frac:03} B（{ds}）= {tg}，分布在 {gpus} 张 GPU 上"
                            ),
                        ),
                    )
                }
                None => {
                    weights_needs = count_needs(model);
                    let how = unknown_term(
                        lang,
                        &weights_needs,
                        ("the parameters cannot be counted", "无法统计参数量"),
                        "--weights-gib or --params-b",
                    );
                    (None, how)
                }
            }
        }
    };

    let mut activation_needs = Vec::new();
    let (activation, activation_how) = match inp.activation_bytes {
        Some(a) => (Some(a), given()),
        None => {
            activation_needs = activation_lacks(model);
            if activation_needs.is_empty() {
                let (a, how) = activation_estimate(model, ctx)?;
                (Some(a), how)
            } else {
                let how = unknown_term(
                    lang,
                    &activation_needs,
                    ("the activation peak cannot be estimated", "无法估算激活峰值"),
                    "--activation-gib (vLLM logs it as \"PyTorch activation peak memory takes …\" / \"torch peak \
                     memory increase\")",
                );
                (None, how)
            }
        }
    };
    let (non_torch, non_torch_how) = match inp.non_torch_bytes {
        Some(n) => (n, given()),
        None if gpus > 1 => (
            GIB,
            lang.pick(
                "estimated: 1 GiB with NCCL buffers on a multi-GPU deployment",
                "估算 1 GiB（多 GPU 部署，含 NCCL 缓冲区）",
            )
            .to_owned(),
        ),
        None => (
            256 * MIB,
            lang.pick(
                "estimated: 0.25 GiB (CUDA/cuBLAS workspaces) on one GPU",
                "估算 0.25 GiB（单 GPU，CUDA/cuBLAS 工作区）",
            )
            .to_owned(),
        ),
    };
    let used = weights.zip(activation).map(|(w, a)| w.saturating_add(a).saturating_add(non_torch));
    Ok(Budget {
        gpu_total_bytes: inp.gpu_total_bytes,
        utilization_ppm: inp.utilization_ppm,
        requested_bytes: requested,
        weights_bytes: weights,
        weights_how,
        activation_bytes: activation,
        activation_how,
        non_torch_bytes: non_torch,
        non_torch_how,
        available_kv_bytes: used.map(|u| requested.saturating_sub(u)),
        shortfall_bytes: used.map(|u| u.saturating_sub(requested)),
        weights_needs,
        activation_needs,
    })
}

/// The `config.json` fields the activation estimate lacks (empty when it can be made).
pub fn activation_lacks(model: &ModelShape) -> Vec<&'static str> {
    let mut out = Vec::new();
    if model.hidden_size.is_none() {
        out.push("hidden_size");
    }
    if model.vocab_size.is_none() {
        out.push("vocab_size");
    }
    if model.moe.is_none() && model.intermediate_size.is_none() {
        out.push("intermediate_size");
    }
    out
}

fn activation_estimate(model: &ModelShape, ctx: &BudgetContext) -> Result<(u64, String), KvError> {
    let missing = |what: &str| {
        KvError::BudgetUnknown(format!(
            "the activation peak cannot be estimated: config.json has no `{what}`; pass --activation-gib \
             (vLLM logs it as \"PyTorch activation peak memory takes …\" / \"torch peak memory increase\")"
        ))
    };
    let h = u128::from(model.hidden_size.ok_or_else(|| missing("hidden_size"))?);
    let vocab = u128::from(model.vocab_size.ok_or_else(|| missing("vocab_size"))?);
    let tp = u128::from(ctx.tp.max(1));
    let t = u128::from(ctx.max_num_batched_tokens);
    let act = u128::from(ctx.serving_dtype.bytes().min(2));
    let (inter, moe_out) = match model.moe {
        Some(m) => (
            (u128::from(m.experts_per_token) * u128::from(m.expert_intermediate)
                + u128::from(m.shared_experts) * u128::from(m.shared_intermediate))
                / tp,
            u128::from(m.experts_per_token) * h,
        ),
        None => (u128::from(model.intermediate_size.ok_or_else(|| missing("intermediate_size"))?) / tp, 0),
    };
    let layer = t * (3 * inter + 4 * h + moe_out) * act;
    let seqs = u128::from(ctx.max_num_seqs).min(t).max(1);
    let sampler = seqs * vocab * 4 * 3;
    let peak = u64::try_from(layer.max(sampler)).map_err(|_| KvError::Overflow("activation estimate"))?;
    let lang = ctx.lang;
    let mnbt = ctx.max_num_batched_tokens;
    let which = if layer >= sampler {
        lang.pick(format!("the MLP of {mnbt} batched tokens"), format!("{mnbt} 个批内 token 的 MLP"))
    } else {
        lang.pick(
            format!("the sampler's logits for {seqs} sequences"),
            format!("{seqs} 条序列的采样器 logits"),
        )
    };
    let pg = fmt_gib(peak);
    Ok((
        peak,
        lang.pick(
            format!("estimated: {pg} ({which}; heuristic, ±2×)"),
            format!("估算 {pg}（{which}；经验值，±2×）"),
        ),
    ))
}

/// A person-readable line for the budget.
pub fn describe(b: &Budget) -> String {
    describe_in(b, triage_base::lang::Lang::En)
}

/// [`describe`] in `lang`.
pub fn describe_in(b: &Budget, lang: triage_base::lang::Lang) -> String {
    let size = |v: Option<u64>| v.map_or_else(|| lang.pick("unknown", "未知").to_owned(), fmt_gib);
    format!(
        "{} × {} = {} − {} {} − {} {} − {} {} = {}",
        fmt_gib(b.gpu_total_bytes),
        fmt_ppm(b.utilization_ppm),
        fmt_gib(b.requested_bytes),
        lang.pick("weights", "权重"),
        size(b.weights_bytes),
        lang.pick("activation", "激活"),
        size(b.activation_bytes),
        lang.pick("non-torch", "非 torch"),
        fmt_gib(b.non_torch_bytes),
        lang.pick(
            format!("{} for KV", size(b.available_kv_bytes)),
            format!("{} 留给 KV", size(b.available_kv_bytes))
        )
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::preset;

    fn ctx(tp: u32) -> BudgetContext {
        BudgetContext {
            tp,
            pp: 1,
            serving_dtype: ModelDtype::Bf16,
            max_num_batched_tokens: 8192,
            max_num_seqs: 1024,
            lang: triage_base::lang::Lang::En,
        }
    }

    fn inputs(total: u64) -> BudgetInputs {
        BudgetInputs::new(total)
    }

    #[test]
    fn given_terms_are_used_exactly() {
        let m = preset("llama-3.1-8b").unwrap().shape().unwrap();
        // The V0 log's terms: 79.19 × 0.9 = 71.27; weights 14.99, non-torch 0.18, activation 1.24.
        let mut i = inputs(85_031_714_816);
        i.weights_bytes = Some(16_095_180_472);
        i.activation_bytes = Some(1_331_439_861);
        i.non_torch_bytes = Some(193_273_528);
        let b = plan(&m, &ctx(1), &i).unwrap();
        assert_eq!(b.requested_bytes, 76_528_543_334);
        assert_eq!(b.available_kv_bytes.map(fmt_gib).as_deref(), Some("54.86 GiB"));
        assert!(describe(&b).contains("for KV"));
    }

    #[test]
    fn estimates_name_their_source() {
        let m = preset("llama-3.1-8b").unwrap().shape().unwrap();
        let b = plan(&m, &ctx(1), &inputs(150_108_651_520)).unwrap();
        assert_eq!(b.weights_bytes, Some(16_060_522_496));
        assert!(b.weights_how.contains("published"));
        assert!(b.activation_how.starts_with("estimated"));
        assert_eq!(b.shortfall_bytes, Some(0));
        // 405B in bf16 does not fit one H200.
        let big = preset("llama-3.1-405b").unwrap().shape().unwrap();
        let b = plan(&big, &ctx(1), &inputs(150_108_651_520)).unwrap();
        assert_eq!(b.available_kv_bytes, Some(0));
        assert!(b.shortfall_bytes > Some(600 * GIB));
    }

    #[test]
    fn unknown_sizes_say_what_to_pass() {
        let m = ModelShape::plain("bare", 2, 8, 8, 64);
        let b = plan(&m, &ctx(1), &inputs(GIB)).unwrap();
        assert_eq!((b.weights_bytes, b.activation_bytes, b.available_kv_bytes), (None, None, None));
        assert_eq!(b.shortfall_bytes, None);
        assert_eq!(b.weights_needs, ["hidden_size", "vocab_size", "intermediate_size"]);
        assert!(b.weights_how.contains("--weights-gib") && b.weights_how.contains("`vocab_size`"));
        assert!(b.activation_how.contains("--activation-gib"), "{}", b.activation_how);
        assert!(describe(&b).contains("weights unknown") && describe(&b).ends_with("unknown for KV"));
        // The terms that are known are still computed.
        assert_eq!((b.requested_bytes, b.non_torch_bytes), (GIB * 9 / 10, 256 * MIB));
        let mut i = inputs(GIB);
        i.weights_bytes = Some(1);
        let b = plan(&m, &ctx(1), &i).unwrap();
        assert_eq!((b.weights_bytes, b.activation_bytes), (Some(1), None));
        assert!(b.weights_needs.is_empty());
        assert_eq!(b.activation_needs, ["hidden_size", "vocab_size", "intermediate_size"]);
        i.activation_bytes = Some(2);
        let b = plan(&m, &ctx(1), &i).unwrap();
        assert_eq!(b.available_kv_bytes, Some(GIB * 9 / 10 - 3 - 256 * MIB));
        let zh =
            plan(&m, &BudgetContext { lang: triage_base::lang::Lang::Zh, ..ctx(1) }, &inputs(GIB)).unwrap();
        assert!(triage_base::lang::has_cjk(&zh.weights_how) && zh.weights_how.contains("--params-b"));
        assert!(describe_in(&zh, triage_base::lang::Lang::Zh).contains("权重 未知"));
    }
}
