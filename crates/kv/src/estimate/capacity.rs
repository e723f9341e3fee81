//! What the KV memory holds under the estimate's settings — blocks, tokens, concurrency, the
//! `max_model_len` and `max_num_seqs` that fit — and what that leads vLLM to do: refuse to
//! start, preempt, count sliding-window layers and hybrid groups as it does.

use super::settings::Resolved;
use super::{KvOptions, Notes, centi_as_vllm_prints};
use crate::KvError;
use crate::budget::Budget;
use crate::layout::Layout;
use crate::model::Attention;
use crate::units::{fmt_gib, fmt_int};
use triage_base::lang::Lang;

/// The capacity figures; `None` where the inputs do not determine them (no KV memory figure,
/// no `max_model_len`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Capacity {
    /// Batches in flight at once: pipeline stages, plus one with async scheduling.
    pub in_flight_batches: u64,
    /// Tokens in flight: `max_num_batched_tokens` × the batches.
    pub in_flight: u64,
    /// Tensors in the block pool of the busiest stage (layers per group, padding included).
    pub pool_tensors: u64,
    /// Bytes of one block on the busiest stage.
    pub block_bytes: u64,
    /// Blocks the KV memory holds.
    pub blocks: Option<u64>,
    /// The token count vLLM 0.33 logs.
    pub tokens: Option<u64>,
    /// The token count older releases log.
    pub legacy_tokens: Option<u64>,
    /// KV-cache groups.
    pub groups: u64,
    /// The request length concurrency is given at.
    pub concurrency_len: Option<u64>,
    /// Blocks one request of `concurrency_len` takes.
    pub bpr: Option<u64>,
    /// Concurrency in hundredths, as vLLM prints it.
    pub centi: Option<u64>,
    /// Concurrency as vLLM prints it.
    pub max_concurrency: Option<f64>,
    /// Whole requests of `concurrency_len` that fit.
    pub max_concurrency_whole: Option<u64>,
    /// Blocks one request of `max_model_len` takes.
    pub bpr_max_len: Option<u64>,
    /// Sequences of `max_model_len` that fit.
    pub max_num_seqs_fit: Option<u64>,
    /// The memory vLLM 0.33 checks requests against: the KV memory less the null block.
    pub check: Option<u64>,
    /// The longest `max_model_len` that passes that check.
    pub max_model_len_fit: Option<u64>,
}

/// What `available` bytes of KV memory hold on `layout` under `settings`.
pub(super) fn capacity(
    layout: &Layout,
    opts: &KvOptions,
    settings: &Resolved,
    available: Option<u64>,
) -> Result<Capacity, KvError> {
    let Resolved { max_model_len, max_num_batched_tokens: mnbt, .. } = *settings;
    let in_flight_batches = u64::from(opts.pp) + u64::from(opts.async_scheduling);
    let in_flight = mnbt.saturating_mul(in_flight_batches);
    let busiest = layout.ranks.iter().max_by_key(|r| layout.block_bytes(r)).cloned();
    let (pool_tensors, block_bytes) =
        busiest.as_ref().map_or((0, 0), |r| (r.pool_tensors, layout.block_bytes(r)));
    let blocks = available.map(|a| layout.num_blocks(a));
    let tokens = blocks.zip(max_model_len).map(|(b, l)| layout.capacity_tokens(b, l, in_flight));
    let legacy_tokens = blocks.map(|b| layout.legacy_logged_tokens(b));
    let groups = layout.groups.len() as u64;

    let concurrency_len = opts.at_len.or(max_model_len);
    if concurrency_len == Some(0) {
        return Err(KvError::invalid("--at-len", 0, "must be at least 1 token"));
    }
    let bpr = concurrency_len.map(|l| layout.blocks_per_request(l, in_flight).max(1));
    let centi =
        blocks.zip(concurrency_len).map(|(b, l)| centi_as_vllm_prints(layout.concurrency(b, l, in_flight)));
    let max_concurrency = centi.map(|c| c as f64 / 100.0);
    let max_concurrency_whole = blocks.zip(bpr).map(|(b, r)| b / r);
    let bpr_max_len = max_model_len.map(|l| layout.blocks_per_request(l, in_flight).max(1));
    let max_num_seqs_fit = blocks.zip(bpr_max_len).map(|(b, r)| b / r);
    let check = available.map(|a| layout.check_memory(a));
    let max_model_len_fit = check.and_then(|c| layout.max_len_fitting(c, in_flight));
    Ok(Capacity {
        in_flight_batches,
        in_flight,
        pool_tensors,
        block_bytes,
        blocks,
        tokens,
        legacy_tokens,
        groups,
        concurrency_len,
        bpr,
        centi,
        max_concurrency,
        max_concurrency_whole,
        bpr_max_len,
        max_num_seqs_fit,
        check,
        max_model_len_fit,
    })
}

/// The warning vLLM's figures call for (only where they are known): it would refuse to start
/// (one request of `max_model_len` does not fit), or preempt (`max_num_seqs` above what fits).
pub(super) fn fit_warning(
    layout: &Layout,
    settings: &Resolved,
    cap: &Capacity,
    budget: Option<&Budget>,
    notes: &mut Notes,
) {
    let lang = notes.lang;
    let Resolved { max_model_len, max_num_seqs, .. } = *settings;
    let Capacity { in_flight, max_num_seqs_fit, check, max_model_len_fit, .. } = *cap;
    let no_shortfall = budget.is_none_or(|b| b.shortfall_bytes == Some(0));
    if let (Some(max_model_len), Some(check)) = (max_model_len, check) {
        let needed = layout.request_bytes(max_model_len, in_flight);
        let fit = max_num_seqs_fit.unwrap_or(0);
        if needed > check && no_shortfall {
            let est = max_model_len_fit.map_or(lang.pick("unlimited", "无上限").to_owned(), fmt_int);
            let (mml, need, avail) = (fmt_int(max_model_len), fmt_gib(needed), fmt_gib(check));
            notes.warnings.push(lang.pick(
                format!(
                    "vLLM would refuse to start: one request of max_model_len {mml} needs {need} of KV per GPU, more \
                     than the {avail} available once one block is held back for the null block; the estimated \
                     maximum model length is {est} — lower --max-model-len, raise gpu_memory_utilization, add GPUs \
                     or use an fp8 KV cache"
                ),
                format!(
                    "vLLM 会拒绝启动：一个 max_model_len {mml} 的请求每张 GPU 需要 {need} KV，超过预留一个 null block \
                     后可用的 {avail}；估算的最大模型长度为 {est}——请调低 --max-model-len、调高 gpu_memory_utilization、\
                     增加 GPU 或改用 fp8 KV cache"
                ),
            ));
        } else if fit < max_num_seqs && fit > 0 {
            let (seqs, fit, mml) = (fmt_int(max_num_seqs), fmt_int(fit), fmt_int(max_model_len));
            notes.warnings.push(lang.pick(
                format!(
                    "max_num_seqs {seqs} is above the {fit} sequences of {mml} tokens that fit: when they all grow long \
                     vLLM preempts (recomputes) the excess — set max_num_seqs ≤ {fit} to keep every admitted \
                     sequence's KV resident"
                ),
                format!(
                    "max_num_seqs {seqs} 超过能放下的 {fit} 条 {mml} token 序列：当它们都变长时，vLLM 会抢占（重算）\
                     超出的部分——设 max_num_seqs ≤ {fit}，让每条已接纳序列的 KV 都常驻显存"
                ),
            ));
        }
    }
}

/// How sliding-window layers were budgeted and, with several KV-cache groups, how the hybrid
/// allocator shares its pool (assumptions; nothing when no layer slides).
pub(super) fn sliding_notes(
    layout: &Layout,
    opts: &KvOptions,
    settings: &Resolved,
    cap: &Capacity,
    notes: &mut Notes,
) {
    let lang = notes.lang;
    let mnbt = settings.max_num_batched_tokens;
    let Capacity { in_flight_batches, in_flight, blocks, tokens, legacy_tokens, groups, bpr_max_len, .. } =
        *cap;
    if layout.groups.iter().any(|g| matches!(g.attention, Attention::Sliding { .. })) {
        let (inf, mn) = (fmt_int(in_flight), fmt_int(mnbt));
        let why = match (opts.async_scheduling, lang) {
            (true, Lang::En) => "async scheduling, vLLM's default: pipeline stages + 1",
            (false, Lang::En) => "async scheduling off: one per pipeline stage",
            (true, Lang::Zh) => "async scheduling，vLLM 默认开启：流水线 stage 数 + 1",
            (false, Lang::Zh) => "async scheduling 关闭：每个流水线 stage 一个",
        };
        notes.assumptions.push(lang.pick(
            format!(
                "sliding-window layers are budgeted as vLLM 0.33 budgets them: min(window − 1 + {inf} in-flight \
                 tokens, max_model_len) plus one block per request, in flight = max_num_batched_tokens {mn} × {in_flight_batches} \
                 batch(es) ({why}); older releases budgeted one batch. In steady decode they hold only about \
                 the window"
            ),
            format!(
                "滑动窗口层按 vLLM 0.33 的方式计预算：min(window − 1 + {inf} 个在途 token, max_model_len) \
                 再加每个请求一个 block，在途 = max_num_batched_tokens {mn} × {in_flight_batches} 个 batch\
                 （{why}）；旧版本只按一个 batch 计。稳定 decode 阶段它们只占大约一个窗口"
            ),
        ));
        if groups > 1
            && let (Some(blocks), Some(bpr_max_len), Some(tokens), Some(legacy_tokens)) =
                (blocks, bpr_max_len, tokens, legacy_tokens)
        {
            let (bl, bm, tk, lt) =
                (fmt_int(blocks), fmt_int(bpr_max_len), fmt_int(tokens), fmt_int(legacy_tokens));
            notes.assumptions.push(lang.pick(
                format!(
                    "hybrid allocator: {groups} KV-cache groups share one pool of {bl} blocks; one request of \
                     max_model_len takes {bm} of them, and vLLM 0.33 logs \"GPU KV cache size\" as blocks / {bm} × \
                     max_model_len = {tk} tokens (older releases: blocks / {groups} groups × block size = {lt})"
                ),
                format!(
                    "hybrid allocator：{groups} 个 KV-cache group 共用一个 {bl} block 的池；一个 max_model_len \
                     的请求占其中 {bm} 个，vLLM 0.33 日志中的 \"GPU KV cache size\" = blocks / {bm} × \
                     max_model_len = {tk} token（旧版本：blocks / {groups} 个 group × block size = {lt}）"
                ),
            ));
        }
    }
}
