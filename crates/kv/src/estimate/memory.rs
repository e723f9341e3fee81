//! The KV memory an estimate sizes for: the figure given, or vLLM's budget planned from the
//! GPU (`total × utilization − weights − activation − non-torch`), described as assumptions.

use super::settings::Resolved;
use super::{KvBudget, KvOptions, Notes};
use crate::KvError;
use crate::budget::{self, Budget, BudgetContext};
use crate::model::ModelShape;
use crate::units::{fmt_gib, fmt_int};

/// The budget row (when planned from the GPU) and the KV bytes available on each GPU (`None`
/// when a term of the budget is unknown).
pub(super) fn kv_memory(
    model: &ModelShape,
    opts: &KvOptions,
    settings: &Resolved,
    budget: &KvBudget,
    notes: &mut Notes,
) -> Result<(Option<Budget>, Option<u64>), KvError> {
    let lang = opts.lang;
    let Resolved { serving_dtype, max_num_batched_tokens: mnbt, max_num_seqs, .. } = *settings;
    Ok(match budget {
        KvBudget::Available(b) => {
            let (g, n) = (fmt_gib(*b), fmt_int(*b));
            notes.assumptions.push(lang.pick(
                format!("KV memory given: {g} per GPU ({n} B)"),
                format!("给定的 KV 显存：每张 GPU {g}（{n} B）"),
            ));
            (None, Some(*b))
        }
        KvBudget::Gpu(inp) => {
            let ctx = BudgetContext {
                tp: opts.tp,
                pp: opts.pp,
                serving_dtype,
                max_num_batched_tokens: mnbt,
                max_num_seqs,
                lang,
            };
            let b = budget::plan(model, &ctx, inp)?;
            let d = budget::describe_in(&b, lang);
            notes
                .assumptions
                .push(lang.pick(format!("budget per GPU: {d}"), format!("每张 GPU 的预算：{d}")));
            let w = &b.weights_how;
            notes.assumptions.push(lang.pick(format!("weights: {w}"), format!("权重：{w}")));
            let a = &b.activation_how;
            notes.assumptions.push(lang.pick(format!("activation peak: {a}"), format!("激活峰值：{a}")));
            let n = &b.non_torch_how;
            notes
                .assumptions
                .push(lang.pick(format!("non-torch memory: {n}"), format!("非 torch 显存：{n}")));
            notes.assumptions.push(
                lang.pick(
                    "CUDA graphs are captured outside vLLM's KV budget: keep 0.5–2 GiB of headroom beyond it",
                    "CUDA graph 在 vLLM 的 KV 预算之外捕获：预算之外再留 0.5–2 GiB 余量",
                )
                .to_owned(),
            );
            if let Some(short) = b.shortfall_bytes.filter(|s| *s > 0) {
                let (u, short) = (crate::units::fmt_ppm(b.utilization_ppm), fmt_gib(short));
                notes.warnings.push(lang.pick(
                    format!(
                        "no memory left for KV: weights + activation + non-torch exceed {u} of the GPU by {short} — \
                         vLLM fails with \"No available memory for the cache blocks\"; add GPUs (--tp), quantize, \
                         or raise gpu_memory_utilization"
                    ),
                    format!(
                        "没有显存留给 KV：权重 + 激活 + 非 torch 显存超出 GPU 的 {u} 达 {short}——\
                         vLLM 会报 \"No available memory for the cache blocks\" 启动失败；请增加 GPU（--tp）、量化，\
                         或调高 gpu_memory_utilization"
                    ),
                ));
            }
            let avail = b.available_kv_bytes;
            (Some(b), avail)
        }
    })
}
