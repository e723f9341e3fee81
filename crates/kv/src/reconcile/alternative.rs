//! When the logged count fits no formula: try one changed setting at a time (KV dtype, the
//! hybrid manager, async scheduling, TP, block size); the first that puts the logged count
//! within one block, under either formula, explains it.

use super::formula::Band;
use super::{Explanation, LoggedCount, LoggedFormula, Why};
use crate::KvError;
use crate::dtype::KvDtype;
use crate::estimate::{KvBudget, KvEstimate, KvOptions, estimate};
use crate::model::{Attention, ModelShape};
use crate::units::fmt_int;

/// A changed setting that explains the logged count, and the options with it.
pub(super) struct Alternative {
    pub(super) explanation: Explanation,
    pub(super) options: KvOptions,
}

/// The first changed setting that explains `logged`, for `bytes_min`–`bytes_max` of KV memory.
pub(super) fn alternative(
    model: &ModelShape,
    options: &KvOptions,
    bytes_min: u64,
    bytes_max: u64,
    logged: LoggedCount,
) -> Result<Option<Alternative>, KvError> {
    let current = estimate(model, options, &KvBudget::Available(bytes_min))?;
    let search = Search { model, options, bytes_min, bytes_max, logged, current };
    Ok(search
        .kv_dtype()
        .or_else(|| search.hybrid_manager())
        .or_else(|| search.async_scheduling())
        .or_else(|| search.tensor_parallel())
        .or_else(|| search.block_size()))
}

/// What every try compares with.
struct Search<'a> {
    model: &'a ModelShape,
    options: &'a KvOptions,
    bytes_min: u64,
    bytes_max: u64,
    logged: LoggedCount,
    /// The estimate under the current options, at `bytes_min`.
    current: KvEstimate,
}

/// The band a fitting alternative expects, and how it was counted.
struct Expected {
    tokens_min: u64,
    tokens_max: u64,
    /// Empty for vLLM 0.33's formula, else names the older one.
    how: &'static str,
}

impl Search<'_> {
    /// Does the logged count fit `alternative`'s band?
    fn fits(&self, alternative: &KvOptions) -> Option<Expected> {
        let band = Band::new(self.model, alternative, self.bytes_min, self.bytes_max).ok()?;
        band.fit(self.logged.tokens, false).map(|fit| Expected {
            tokens_min: fit.tokens_min,
            tokens_max: fit.tokens_max,
            how: if fit.formula == LoggedFormula::Legacy {
                ", with older releases' blocks // groups × block size"
            } else {
                ""
            },
        })
    }

    fn found(&self, why: Why, message: String, options: KvOptions) -> Alternative {
        Alternative { explanation: Explanation { why, message, line: Some(self.logged.line) }, options }
    }

    /// Another KV cache dtype (one with another element size, or DeepSeek's fp8 MLA format).
    fn kv_dtype(&self) -> Option<Alternative> {
        for dtype in [KvDtype::Fp8, KvDtype::Bf16, KvDtype::Fp32, KvDtype::Fp8DsMla] {
            if dtype == self.options.kv_dtype {
                continue;
            }
            let options = KvOptions { kv_dtype: dtype, ..self.options.clone() };
            let Ok(other) = estimate(self.model, &options, &KvBudget::Available(self.bytes_min)) else {
                continue;
            };
            if other.settings.kv_element_bytes == self.current.settings.kv_element_bytes
                && dtype != KvDtype::Fp8DsMla
            {
                continue;
            }
            if let Some(Expected { tokens_min, tokens_max, how }) = self.fits(&options) {
                let message = format!(
                    "the logged {} tokens match a {} KV cache ({}–{} expected{how}), not {}: the server ran with \
                     --kv-cache-dtype {} ({} B per token per GPU instead of {})",
                    fmt_int(self.logged.tokens),
                    dtype.as_str(),
                    fmt_int(tokens_min),
                    fmt_int(tokens_max),
                    self.current.settings.kv_cache_dtype.as_str(),
                    dtype.as_str(),
                    fmt_int(other.bytes_per_token_per_rank),
                    fmt_int(self.current.bytes_per_token_per_rank)
                );
                return Some(self.found(Why::KvDtype, message, options));
            }
        }
        None
    }

    /// The hybrid KV-cache manager the other way round.
    fn hybrid_manager(&self) -> Option<Alternative> {
        if !self.model.is_hybrid() {
            return None;
        }
        let hybrid = self.options.hybrid;
        let options = KvOptions { hybrid: !hybrid, ..self.options.clone() };
        let Expected { tokens_min, tokens_max, how } = self.fits(&options)?;
        let message = format!(
            "the logged {} tokens match the hybrid KV-cache manager {} ({}–{} expected{how}): sliding layers were {}",
            fmt_int(self.logged.tokens),
            if hybrid { "off" } else { "on" },
            fmt_int(tokens_min),
            fmt_int(tokens_max),
            if hybrid { "allocated like full attention" } else { "capped at their window" }
        );
        Some(self.found(Why::HybridManager, message, options))
    }

    /// Async scheduling the other way round (a batch more or less in flight for sliding layers).
    fn async_scheduling(&self) -> Option<Alternative> {
        if !self.model.layers.iter().any(|layer| matches!(layer, Attention::Sliding { .. })) {
            return None;
        }
        let async_on = self.options.async_scheduling;
        let options = KvOptions { async_scheduling: !async_on, ..self.options.clone() };
        let Expected { tokens_min, tokens_max, how } = self.fits(&options)?;
        let batches = u64::from(self.options.pp) + u64::from(!async_on);
        let message = format!(
            "the logged {} tokens match {batches} batch(es) in flight ({}–{} expected{how}): sliding layers \
             budgeted window − 1 + {batches} × max_num_batched_tokens — {}",
            fmt_int(self.logged.tokens),
            fmt_int(tokens_min),
            fmt_int(tokens_max),
            if async_on {
                "async scheduling was off (--no-async-scheduling), or an older release that budgeted one batch"
            } else {
                "async scheduling was on"
            }
        );
        Some(self.found(Why::AsyncScheduling, message, options))
    }

    /// Another tensor parallel size.
    fn tensor_parallel(&self) -> Option<Alternative> {
        for tp in [1u32, 2, 4, 8, 16] {
            if tp == self.options.tp {
                continue;
            }
            let options = KvOptions { tp, ..self.options.clone() };
            if estimate(self.model, &options, &KvBudget::Available(self.bytes_min)).is_err() {
                continue;
            }
            if let Some(Expected { tokens_min, tokens_max, how }) = self.fits(&options) {
                let message = format!(
                    "the logged {} tokens match tensor parallel size {tp} ({}–{} expected{how}), not {}: pass --tp \
                     {tp}",
                    fmt_int(self.logged.tokens),
                    fmt_int(tokens_min),
                    fmt_int(tokens_max),
                    self.options.tp
                );
                return Some(self.found(Why::TensorParallel, message, options));
            }
        }
        None
    }

    /// Another block size.
    fn block_size(&self) -> Option<Alternative> {
        for block_size in [16u32, 32, 64, 128] {
            if Some(block_size) == self.options.block_size
                || (self.options.block_size.is_none() && block_size == self.current.settings.block_size)
            {
                continue;
            }
            let options = KvOptions { block_size: Some(block_size), ..self.options.clone() };
            if let Some(Expected { tokens_min, tokens_max, how }) = self.fits(&options) {
                let message = format!(
                    "the logged {} tokens match block size {block_size} ({}–{} expected{how})",
                    fmt_int(self.logged.tokens),
                    fmt_int(tokens_min),
                    fmt_int(tokens_max)
                );
                return Some(self.found(Why::BlockSize, message, options));
            }
        }
        None
    }
}
