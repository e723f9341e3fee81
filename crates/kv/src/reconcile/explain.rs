//! One function per explanation of the capacity comparison: the model's structure (MLA and kv
//! head replication, sliding windows), the logged figures (V0 blocks, memory taken after
//! printing, a block-count override, the log's rounding, block rounding), the verdict's own
//! explanation (a match under either formula, or an unexplained difference), and what is said
//! when there is nothing to compare.

use super::formula::{Band, Fit, Known};
use super::{Explanation, LoggedCount, LoggedFormula, Verdict, Why};
use crate::estimate::KvEstimate;
use crate::layout::Layout;
use crate::model::ModelShape;
use crate::startup::{Logged, StartupCapacity};
use crate::units::{Size, fmt_centi, fmt_gib, fmt_int, fmt_size};

/// MLA keeps its whole latent on every TP rank.
pub(super) fn mla_replication(model: &ModelShape, base: &KvEstimate) -> Option<Explanation> {
    let tp = base.settings.tp;
    let mla = model.mla.filter(|_| tp > 1)?;
    Some(Explanation {
        why: Why::MlaReplication,
        line: None,
        message: format!(
            "MLA keeps the whole {}-wide latent on every one of the {tp} TP ranks ({} B per token per GPU); a \
             calculator that divides by TP would promise {tp}× the tokens",
            u64::from(mla.kv_lora_rank) + u64::from(mla.qk_rope_head_dim),
            fmt_int(base.bytes_per_token_per_rank)
        ),
    })
}

/// More TP ranks than kv heads: each rank keeps a whole head.
pub(super) fn kv_head_replication(model: &ModelShape, base: &KvEstimate) -> Option<Explanation> {
    let tp = base.settings.tp;
    if model.mla.is_some() || tp <= model.num_kv_heads {
        return None;
    }
    Some(Explanation {
        why: Why::KvHeadReplication,
        line: None,
        message: format!(
            "TP {tp} > {} kv heads: every GPU keeps one whole kv head, so the cache per GPU stops shrinking \
             beyond TP {}",
            model.num_kv_heads, model.num_kv_heads
        ),
    })
}

/// Sliding-window layers: several KV-cache groups in one pool, or every layer capped.
pub(super) fn sliding_window(base: &KvEstimate) -> Option<Explanation> {
    let in_flight = fmt_int(base.settings.in_flight_tokens);
    let message = if base.kv_cache_groups > 1 {
        format!(
            "hybrid model: {} KV-cache groups share one pool; vLLM 0.33 logs int(blocks / blocks per request × \
             max_model_len) as the token capacity (older releases: blocks / {} × block size), and budgets each \
             sliding layer at min(window − 1 + {in_flight} in-flight tokens, max_model_len) per request",
            base.kv_cache_groups, base.kv_cache_groups,
        )
    } else if base.layers.iter().any(|layer| layer.kind == "sliding") {
        format!(
            "every layer slides: capacity per token is as for full attention, but each request holds at most \
             min(window − 1 + {in_flight} in-flight tokens, max_model_len) tokens per layer, so vLLM 0.33 logs more \
             tokens than blocks × block size"
        )
    } else {
        return None;
    };
    Some(Explanation { why: Why::SlidingWindow, message, line: None })
}

/// A V0 log gives blocks, not tokens: say how they were turned into tokens.
pub(super) fn v0_blocks(startup: &StartupCapacity, block_size: u32) -> Option<Explanation> {
    if startup.kv_cache_tokens.is_some() {
        return None;
    }
    let blocks = startup.gpu_blocks.as_ref()?;
    Some(Explanation {
        why: Why::Settings,
        line: Some(blocks.line),
        message: format!(
            "vLLM V0 logs blocks: {} GPU blocks × block size {block_size} = {} tokens",
            fmt_int(blocks.value),
            fmt_int(blocks.value.saturating_mul(u64::from(block_size)))
        ),
    })
}

/// A frontend multimodal reservation lowered the KV memory after it was printed.
pub(super) fn memory_reserved(startup: &StartupCapacity) -> Option<Explanation> {
    let (Some(reduced), Some(available)) = (&startup.kv_reduced_to, &startup.available_kv) else {
        return None;
    };
    Some(Explanation {
        why: Why::MemoryReserved,
        line: Some(reduced.line),
        message: format!(
            "vLLM reserved GPU memory for frontend multimodal decoding after printing `{}` (line {}): the \
             planner got {} (vLLM 0.33 `reserve_mm_ipc_gpu_memory`), which is what is compared",
            available.value, available.line, reduced.value
        ),
    })
}

/// `num_gpu_blocks_override` fixed the block count whatever the printed memory
/// (`printed_min`–`printed_max` bytes).
pub(super) fn blocks_override(
    startup: &StartupCapacity,
    layout: &Layout,
    printed_min: u64,
    printed_max: u64,
) -> Option<Explanation> {
    let blocks_override = startup.num_gpu_blocks_override.as_ref()?;
    let mut message = format!(
        "num_gpu_blocks_override: vLLM allocated exactly {} blocks (of {} each){}",
        fmt_int(blocks_override.value),
        fmt_size(layout.block_bytes_max()),
        startup.blocks_before_override.as_ref().map_or(String::new(), |before| format!(
            " instead of the {} the memory held; this estimate's blocks for the printed memory: {}–{}",
            fmt_int(before.value),
            fmt_int(layout.num_blocks(printed_min)),
            fmt_int(layout.num_blocks(printed_max))
        ))
    );
    message.push_str(" — compared at that block count");
    Some(Explanation { why: Why::BlocksOverride, message, line: Some(blocks_override.line) })
}

/// The printed memory is rounded: the range of bytes, blocks and tokens it stands for. None
/// under a block-count override, which makes the memory irrelevant.
pub(super) fn log_rounding(
    startup: &StartupCapacity,
    printed: &Logged<Size>,
    band: &Band,
    bytes_min: u64,
    bytes_max: u64,
) -> Option<Explanation> {
    if startup.num_gpu_blocks_override.is_some() {
        return None;
    }
    let block = band.at_min.block_bytes.max(1);
    let spread = bytes_max.saturating_sub(bytes_min);
    Some(Explanation {
        why: Why::LogRounding,
        line: Some(printed.line),
        message: format!(
            "`{}` is a figure rounded to {} decimals: the true figure is {}–{} bytes (±{} B, ±{} blocks of {}), \
             i.e. {}–{} blocks and {}–{} tokens",
            printed.value,
            printed.value.value.scale,
            fmt_int(bytes_min),
            fmt_int(bytes_max),
            fmt_int(spread / 2),
            fmt_centi((u128::from(spread) * 50 / u128::from(block)) as u64),
            fmt_size(block),
            fmt_int(band.at_min.known_blocks()),
            fmt_int(band.at_max.known_blocks()),
            fmt_int(band.at_min.known_tokens()),
            fmt_int(band.at_max.known_tokens())
        ),
    })
}

/// vLLM keeps whole blocks, and how vLLM 0.33 turns them into the logged count.
pub(super) fn block_rounding(base: &KvEstimate, band: &Band) -> Explanation {
    let block = band.at_min.block_bytes.max(1);
    Explanation {
        why: Why::BlockRounding,
        line: None,
        message: format!(
            "vLLM keeps whole blocks: num_blocks = available // {} per block{} — up to one block of the memory \
             stays unused; vLLM 0.33 logs int(num_blocks / {} blocks per {}-token request × {}) tokens",
            fmt_size(block),
            if base.kv_cache_groups > 1 {
                format!(
                    " ({} pool tensors, shared by {} groups)",
                    band.at_min.pool_tensors, base.kv_cache_groups
                )
            } else {
                String::new()
            },
            fmt_int(band.blocks_per_request),
            fmt_int(base.known_len()),
            fmt_int(base.known_len())
        ),
    }
}

/// The logged count is within one block of the estimate under `fit`'s formula.
pub(super) fn within_one_block(base: &KvEstimate, band: &Band, fit: Fit, logged: LoggedCount) -> Explanation {
    match fit.formula {
        LoggedFormula::Vllm033 => Explanation {
            why: Why::BlockRounding,
            line: Some(logged.line),
            message: format!(
                "logged {} tokens is within one block of the estimate ({}–{}, vLLM 0.33's int(blocks / blocks per \
                 request × max_model_len)): the model shape, dtype and settings match",
                fmt_int(logged.tokens),
                fmt_int(fit.tokens_min),
                fmt_int(fit.tokens_max)
            ),
        },
        LoggedFormula::Legacy => Explanation {
            why: Why::LegacyFormula,
            line: Some(logged.line),
            message: format!(
                "logged {} tokens is within one block of blocks // {} group(s) × block size {} ({}–{}): the formula \
                 of older vLLM releases, before the group-aware capacity (vLLM 0.33 would log {}–{} for the same \
                 memory); the model shape, dtype and settings match",
                fmt_int(logged.tokens),
                base.kv_cache_groups,
                base.settings.block_size,
                fmt_int(fit.tokens_min),
                fmt_int(fit.tokens_max),
                fmt_int(band.at_min.known_tokens()),
                fmt_int(band.at_max.known_tokens())
            ),
        },
    }
}

/// How far the logged count is from the estimate, in tokens, blocks and bytes.
pub(super) struct Shortfall {
    /// Logged − nearest end of vLLM 0.33's band.
    pub(super) diff: i64,
    /// Tokens one pool block adds.
    pub(super) step: u64,
    /// The estimate's band of token counts.
    pub(super) tokens_min: u64,
    pub(super) tokens_max: u64,
    /// The KV memory compared.
    pub(super) bytes_min: u64,
    pub(super) bytes_max: u64,
    /// Bytes of the pool one logged token stands for, as the model says.
    pub(super) per_logged: u64,
}

/// No setting explains the difference: say how far off it is, whether the model shape is
/// right, and what vLLM 0.33's source rules out.
pub(super) fn unexplained(
    startup: &StartupCapacity,
    logged: LoggedCount,
    shortfall: &Shortfall,
) -> Explanation {
    let Shortfall { diff, step, tokens_min, tokens_max, bytes_min, bytes_max, per_logged } = *shortfall;
    let direction = if diff < 0 { "below" } else { "above" };
    let blocks = diff.unsigned_abs().div_ceil(step.max(1));
    let bytes = diff.unsigned_abs().saturating_mul(per_logged);
    let implied_max = bytes_max.checked_div(logged.tokens).unwrap_or(0);
    let implied_min = bytes_min / logged.tokens.saturating_add(step).max(1);
    // Shape check: does the model's cost per logged token fall near the implied one (0.5 %)?
    let near = per_logged > 0 && (implied_max.abs_diff(per_logged) * 200 <= per_logged);
    let shape = if near {
        let ruled_out = if diff < 0
            && startup.kv_reduced_to.is_none()
            && startup.num_gpu_blocks_override.is_none()
        {
            " In vLLM 0.33 the printed figure is the very number the planner divides \
                 (gpu_worker.determine_available_memory → kv_cache_planning.get_kv_cache_configs: num_blocks = \
                 available // bytes_per_block); the null block is held back only in the startup check, and the \
                 CUDA-graph estimate is subtracted before the figure is printed. Only a frontend multimodal \
                 reservation (\"… KV cache memory reduced to X GiB\") or num_gpu_blocks_override (\"Overriding \
                 num_gpu_blocks=…\") lowers it afterwards, and each prints its own line — none here. So the two \
                 lines most likely come from different runs or ranks, or one figure was edited."
        } else {
            ""
        };
        format!(
            "the model's {} B per logged token is within 0.5 % of what the log implies ({}–{} B), so the model \
             shape and dtype are right: about {} of the printed KV memory was not turned into blocks.{ruled_out}",
            fmt_int(per_logged),
            fmt_int(implied_min),
            fmt_int(implied_max),
            fmt_size(bytes)
        )
    } else {
        format!(
            "the log implies {}–{} B per logged token against the model's {}: the config, dtype or parallelism \
             differs from what the server ran (check --config/--model, --kv-cache-dtype, --tp, --pp)",
            fmt_int(implied_min),
            fmt_int(implied_max),
            fmt_int(per_logged)
        )
    };
    Explanation {
        why: Why::Unexplained,
        line: Some(logged.line),
        message: format!(
            "logged {} tokens is {} tokens ({blocks} blocks) {direction} the estimate's {}–{} — more than the log's \
             rounding and block rounding allow; {shape}",
            fmt_int(logged.tokens),
            fmt_int(diff.unsigned_abs()),
            fmt_int(tokens_min),
            fmt_int(tokens_max)
        ),
    }
}

/// A token count but no memory figure: the memory that count implies.
pub(super) fn no_memory_figure(layout: &Layout, base: &KvEstimate, logged: LoggedCount) -> Explanation {
    let blocks_per_request =
        layout.blocks_per_request(base.known_len(), base.settings.in_flight_tokens).max(1);
    // Invert vLLM 0.33's count: the fewest blocks that log at least `logged.tokens` tokens.
    let blocks = u64::try_from(
        (u128::from(logged.tokens) * u128::from(blocks_per_request)).div_ceil(u128::from(base.known_len())),
    )
    .unwrap_or(u64::MAX);
    Explanation {
        why: Why::Settings,
        line: Some(logged.line),
        message: format!(
            "the log gives {} tokens but no KV memory figure: that is about {} blocks of {} ({} of KV per GPU, at \
             {} B per token per GPU)",
            fmt_int(logged.tokens),
            fmt_int(blocks),
            fmt_size(base.block_bytes),
            fmt_gib(blocks.saturating_mul(base.block_bytes)),
            fmt_int(base.bytes_per_token_per_rank)
        ),
    }
}

/// Nothing but settings was found: say which lines to paste.
pub(super) fn no_capacity_lines(verdict: Verdict, explanations: &[Explanation]) -> Option<Explanation> {
    if verdict != Verdict::NotEnoughData
        || !explanations.iter().all(|explanation| explanation.why == Why::Settings)
    {
        return None;
    }
    Some(Explanation {
        why: Why::Unexplained,
        line: None,
        message: "no capacity lines found: paste the startup lines with `Available KV cache memory`, `GPU KV cache \
                  size`, `# GPU blocks`, `model weights take …` or SGLang's `KV Cache is allocated`"
            .to_owned(),
    })
}
