//! Checks of the other capacity lines a startup log may hold: the logged `Maximum concurrency`
//! against the logged token count, V0's memory budget line, SGLang's pool sizes, and the fatal
//! lines vLLM stops with.

use super::formula::{Known, blocks_logging};
use super::{Explanation, Reconciliation, Verdict, Why};
use crate::dtype::KvDtype;
use crate::estimate::{KvBudget, KvEstimate, KvOptions, centi_as_vllm_prints, estimate};
use crate::layout::Layout;
use crate::model::ModelShape;
use crate::startup::{Fatal, Logged, StartupCapacity};
use crate::units::{Size, fmt_centi, fmt_gib, fmt_int};

/// Does the logged `Maximum concurrency` follow from the logged token count? vLLM prints
/// `num_blocks / blocks_per_request` with `%.2f`.
pub(super) fn concurrency(
    startup: &StartupCapacity,
    layout: &Layout,
    estimate: &KvEstimate,
) -> Option<Explanation> {
    let concurrency = startup.max_concurrency.as_ref()?;
    let logged_tokens = startup.kv_cache_tokens.as_ref().map(|tokens| tokens.value).or_else(|| {
        startup.gpu_blocks.as_ref().map(|blocks| blocks.value.saturating_mul(u64::from(layout.block_size)))
    })?;
    let len = concurrency.value.tokens_per_request.max(1);
    let printed = concurrency.value.times.times_round(100);
    let pp = u64::from(estimate.settings.pp);
    let batch_tokens = estimate.settings.max_num_batched_tokens;
    let configured = estimate.settings.in_flight_batches;
    let mut batch_counts = vec![configured];
    batch_counts.extend([pp + 1, pp].into_iter().filter(|batches| *batches != configured));
    let mut first: Option<(u64, u64, u64)> = None;
    for batches in batch_counts {
        let in_flight = batch_tokens.saturating_mul(batches);
        let blocks_per_request = layout.blocks_per_request(len, in_flight).max(1);
        for blocks in blocks_logging(layout, logged_tokens, len, in_flight) {
            let centi = centi_as_vllm_prints(layout.concurrency(blocks, len, in_flight));
            first.get_or_insert((blocks, blocks_per_request, centi));
            if centi == printed {
                let how = if batches == configured {
                    String::new()
                } else {
                    format!(
                        " with {batches} batch(es) of max_num_batched_tokens in flight, not {configured} — {}",
                        if batches < configured {
                            "async scheduling off, or an older release (sliding layers budgeted one batch)"
                        } else {
                            "async scheduling on"
                        }
                    )
                };
                return Some(Explanation {
                    why: if how.is_empty() { Why::Concurrency } else { Why::AsyncScheduling },
                    line: Some(concurrency.line),
                    message: format!(
                        "consistent: {} blocks / {} blocks per {}-token request = {}x, as logged{how}",
                        fmt_int(blocks),
                        fmt_int(blocks_per_request),
                        fmt_int(len),
                        fmt_centi(centi)
                    ),
                });
            }
        }
    }
    let message = match first {
        Some((blocks, blocks_per_request, centi)) => format!(
            "the logged {}x for {}-token requests differs from {} blocks / {} blocks per request = {}x: \
             max_num_batched_tokens or the window differs from what was assumed",
            concurrency.value.times,
            fmt_int(len),
            fmt_int(blocks),
            fmt_int(blocks_per_request),
            fmt_centi(centi)
        ),
        None => format!(
            "the logged {}x for {}-token requests matches no block count that logs {} tokens: the two figures \
             are not from one vLLM run of this model",
            concurrency.value.times,
            fmt_int(len),
            fmt_int(logged_tokens)
        ),
    };
    Some(Explanation { why: Why::Concurrency, message, line: Some(concurrency.line) })
}

/// V0's `total × utilization − weights − non-torch − activation` against its logged KV figure.
pub(super) fn v0_budget(startup: &StartupCapacity) -> Option<Explanation> {
    let (Some(total), Some(utilization), Some(weights), Some(non_torch), Some(activation), Some(kv)) = (
        &startup.total_gpu_memory,
        &startup.settings.gpu_memory_utilization,
        &startup.weights,
        &startup.non_torch,
        &startup.activation_peak,
        &startup.kv_reserved,
    ) else {
        return None;
    };
    let requested = u64::try_from(
        u128::from(total.value.bytes(false)) * u128::from(utilization.value.times_round(1_000_000))
            / 1_000_000,
    )
    .unwrap_or(u64::MAX);
    let computed = requested
        .saturating_sub(weights.value.bytes(false))
        .saturating_sub(non_torch.value.bytes(false))
        .saturating_sub(activation.value.bytes(false));
    let logged = kv.value.bytes(false);
    // Five rounded two-decimal GiB figures: allow 0.03 GiB.
    let matches = computed.abs_diff(logged) <= 32_212_255;
    Some(Explanation {
        why: Why::Budget,
        line: Some(kv.line),
        message: format!(
            "{} × {} − weights {} − non-torch {} − activation {} = {} {} the logged {} for KV",
            total.value,
            utilization.value,
            weights.value,
            non_torch.value,
            activation.value,
            fmt_gib(computed),
            if matches { "matches" } else { "does not match" },
            kv.value
        ),
    })
}

/// SGLang's pool sizes over its token count against the model's bytes per token; fills the
/// logged count, the implied bytes per token and the verdict when nothing else did.
pub(super) fn sglang(
    model: &ModelShape,
    options: &KvOptions,
    startup: &StartupCapacity,
    base: &KvEstimate,
    reconciliation: &mut Reconciliation,
) -> Option<Explanation> {
    let tokens = startup.sglang_tokens.as_ref().or(startup.sglang_max_total_num_tokens.as_ref())?;
    let token_count = tokens.value;
    if reconciliation.logged_tokens.is_none() {
        reconciliation.logged_tokens = Some(token_count);
        reconciliation.logged_tokens_line = Some(tokens.line);
    }
    let sizes: Vec<&Logged<Size>> = [&startup.sglang_k_size, &startup.sglang_v_size, &startup.sglang_kv_size]
        .into_iter()
        .filter_map(Option::as_ref)
        .collect();
    if sizes.is_empty() || token_count == 0 {
        return None;
    }
    let model_per_token = base.bytes_per_token_per_rank;
    // SGLang prints `GB` but divides by 2^30 (its pool's `GB = 1024 ** 3`, from memory of the
    // source); try that first and decimal GB second.
    for (binary, unit) in [(true, "GiB (SGLang's GB = 2^30)"), (false, "decimal GB")] {
        let (per_token_min, per_token_max) = pool_bytes_per_token(&sizes, token_count, binary);
        if (per_token_min..=per_token_max).contains(&model_per_token) {
            reconciliation.implied_bytes_per_token_min = Some(per_token_min);
            reconciliation.implied_bytes_per_token_max = Some(per_token_max);
            if reconciliation.verdict == Verdict::NotEnoughData {
                reconciliation.verdict = Verdict::Match;
            }
            return Some(Explanation {
                why: Why::Sglang,
                line: Some(tokens.line),
                message: format!(
                    "SGLang's pool: {} over {} tokens = {}–{} B per token (sizes read as {unit}); the model needs {} B \
                     per token per GPU — consistent (SGLang keeps no blocks and no window cap)",
                    sizes.iter().map(|size| size.value.to_string()).collect::<Vec<_>>().join(" + "),
                    fmt_int(token_count),
                    fmt_int(per_token_min),
                    fmt_int(per_token_max),
                    fmt_int(model_per_token)
                ),
            });
        }
    }
    let (per_token_min, per_token_max) = pool_bytes_per_token(&sizes, token_count, true);
    reconciliation.implied_bytes_per_token_min = Some(per_token_min);
    reconciliation.implied_bytes_per_token_max = Some(per_token_max);
    for dtype in [KvDtype::Fp8, KvDtype::Bf16, KvDtype::Fp32] {
        let alternative = KvOptions { kv_dtype: dtype, ..options.clone() };
        if let Ok(other) = estimate(model, &alternative, &KvBudget::Available(0))
            && (per_token_min..=per_token_max).contains(&other.bytes_per_token_per_rank)
        {
            if reconciliation.verdict == Verdict::NotEnoughData {
                reconciliation.verdict = Verdict::Explained;
            }
            return Some(Explanation {
                why: Why::KvDtype,
                line: Some(tokens.line),
                message: format!(
                    "SGLang's pool holds {}–{} B per token: a {} KV cache ({} B per token per GPU), not {} B",
                    fmt_int(per_token_min),
                    fmt_int(per_token_max),
                    dtype.as_str(),
                    fmt_int(other.bytes_per_token_per_rank),
                    fmt_int(model_per_token)
                ),
            });
        }
    }
    if reconciliation.verdict == Verdict::NotEnoughData {
        reconciliation.verdict = Verdict::Mismatch;
    }
    Some(Explanation {
        why: Why::Unexplained,
        line: Some(tokens.line),
        message: format!(
            "SGLang's pool holds {}–{} B per token but the model needs {} B per token per GPU: a different model, \
             TP size or dtype was served",
            fmt_int(per_token_min),
            fmt_int(per_token_max),
            fmt_int(model_per_token)
        ),
    })
}

/// The bytes per token SGLang's printed pool sizes stand for, read as GiB (`binary`) or GB.
/// SGLang allocates one page more than #tokens (a padding slot): negligible, ignored.
fn pool_bytes_per_token(sizes: &[&Logged<Size>], token_count: u64, binary: bool) -> (u64, u64) {
    let bytes_min: u64 = sizes.iter().map(|size| size.value.bytes_range(binary).0).sum();
    let bytes_max: u64 = sizes.iter().map(|size| size.value.bytes_range(binary).1).sum();
    (bytes_min / token_count, bytes_max.div_ceil(token_count))
}

/// Explain the fatal lines; the flag is `Some(agrees)` when vLLM printed an estimated maximum
/// length to compare (the last such line decides).
pub(super) fn fatal(
    startup: &StartupCapacity,
    layout: &Layout,
    estimate: &KvEstimate,
) -> (Vec<Explanation>, Option<bool>) {
    let mut agreement = None;
    let mut explanations = Vec::new();
    for fatal in &startup.fatal {
        let (message, agrees) = fatal_message(&fatal.value, layout, estimate);
        if agrees.is_some() {
            agreement = agrees;
        }
        explanations.push(Explanation { why: Why::Fatal, message, line: Some(fatal.line) });
    }
    (explanations, agreement)
}

/// What one fatal line means, and whether vLLM's estimated maximum length agrees with ours.
fn fatal_message(fatal: &Fatal, layout: &Layout, estimate: &KvEstimate) -> (String, Option<bool>) {
    let in_flight = estimate.settings.in_flight_tokens;
    match fatal {
        Fatal::KvNeededExceedsAvailable { max_seq_len, needed, available, estimated_max_len } => {
            let len = max_seq_len.unwrap_or(estimate.known_len());
            let ours = layout.request_bytes(len, in_flight);
            let mut agreement = None;
            let mut message = format!(
                "vLLM refused to start: one request of {} tokens needs {} of KV per GPU{}, more than the {} \
                 available",
                fmt_int(len),
                needed.map_or_else(|| fmt_gib(ours), |need| need.to_string()),
                needed.map_or(String::new(), |_| format!(" (this estimate: {})", fmt_gib(ours))),
                available.map_or("(unknown)".to_owned(), |size| size.to_string())
            );
            if let Some(available) = available {
                // The printed figure is rounded: the longest fitting length is a range too.
                let (bytes_min, bytes_max) = available.bytes_range(false);
                let fit_min = layout.max_len_fitting(bytes_min, in_flight);
                let fit_max = layout.max_len_fitting(bytes_max, in_flight);
                let ours = match (fit_min, fit_max) {
                    (Some(shortest), Some(longest)) if shortest == longest => fmt_int(shortest),
                    (Some(shortest), Some(longest)) => format!("{}–{}", fmt_int(shortest), fmt_int(longest)),
                    _ => "any length".to_owned(),
                };
                let agrees = match (estimated_max_len, fit_min, fit_max) {
                    (Some(vllm), Some(shortest), Some(longest)) if (shortest..=longest).contains(vllm) => {
                        agreement = Some(true);
                        " — the same"
                    }
                    (Some(_), _, _) => {
                        agreement = Some(false);
                        " — differs: check the model, dtype and TP"
                    }
                    _ => "",
                };
                let vllm_estimate = estimated_max_len
                    .map_or(String::new(), |vllm| format!("vLLM estimates {}; ", fmt_int(vllm)));
                message.push_str(&format!(
                    "; longest that fits: {vllm_estimate}this estimate {ours}{agrees}. Fix: --max-model-len at \
                     most that, or raise gpu_memory_utilization, add GPUs (--tp), or halve the cache with \
                     --kv-cache-dtype fp8"
                ));
            }
            (message, agreement)
        }
        Fatal::MaxSeqLenExceedsKv { max_seq_len, kv_tokens } => (
            format!(
                "vLLM (V0) refused to start: max seq len {} is more than the {} tokens the KV cache holds; lower \
                 --max-model-len to at most {} or free memory for KV",
                max_seq_len.map_or("?".to_owned(), fmt_int),
                kv_tokens.map_or("?".to_owned(), fmt_int),
                kv_tokens.map_or("?".to_owned(), fmt_int)
            ),
            None,
        ),
        Fatal::NoMemoryForCacheBlocks => (
            "vLLM found no memory for KV at all: weights + activation peak + \
             non-torch memory exceed total × gpu_memory_utilization — quantize, add GPUs (--tp), lower \
             max_num_batched_tokens, or raise gpu_memory_utilization"
                .to_owned(),
            None,
        ),
        Fatal::FreeMemoryBelowUtilization => (
            "another process holds GPU memory that gpu_memory_utilization \
             counted on: free the GPU (nvidia-smi shows who) or lower gpu_memory_utilization"
                .to_owned(),
            None,
        ),
    }
}
