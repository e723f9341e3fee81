//! Reading the logged token count: the estimates at the two ends of the printed memory's
//! range (a [`Band`]), which of vLLM's two capacity formulas a logged count fits, and how far
//! off it is in tokens and blocks.

use super::LoggedFormula;
use crate::KvError;
use crate::estimate::{KvBudget, KvEstimate, KvOptions, estimate};
use crate::layout::{Layout, LayoutOptions};
use crate::model::ModelShape;

/// The figures of an estimate made here. Every estimate in this module is given its KV memory
/// and a known `max_model_len` ([`super::reconcile`] refuses an unknown one before estimating),
/// so none of these is unknown; the fallbacks only keep the arithmetic total.
pub(super) trait Known {
    fn known_len(&self) -> u64;
    fn known_blocks(&self) -> u64;
    fn known_tokens(&self) -> u64;
    fn known_legacy(&self) -> u64;
}

impl Known for KvEstimate {
    fn known_len(&self) -> u64 {
        self.settings.max_model_len.unwrap_or(1)
    }
    fn known_blocks(&self) -> u64 {
        self.blocks.unwrap_or(0)
    }
    fn known_tokens(&self) -> u64 {
        self.tokens.unwrap_or(0)
    }
    fn known_legacy(&self) -> u64 {
        self.legacy_tokens.unwrap_or(0)
    }
}

/// The estimates at the two ends of the available range.
pub(super) struct Band {
    pub(super) at_min: KvEstimate,
    pub(super) at_max: KvEstimate,
    /// Blocks one request of `max_model_len` takes.
    pub(super) blocks_per_request: u64,
}

/// The formula a logged count fits, with the band of that formula it was compared with.
#[derive(Clone, Copy)]
pub(super) struct Fit {
    pub(super) formula: LoggedFormula,
    pub(super) tokens_min: u64,
    pub(super) tokens_max: u64,
}

impl Band {
    /// Estimate `model` under `options` for `bytes_min` and `bytes_max` of KV memory.
    pub(super) fn new(
        model: &ModelShape,
        options: &KvOptions,
        bytes_min: u64,
        bytes_max: u64,
    ) -> Result<Band, KvError> {
        let at_min = estimate(model, options, &KvBudget::Available(bytes_min))?;
        let at_max = estimate(model, options, &KvBudget::Available(bytes_max))?;
        let layout = Layout::new(model, &layout_options(&at_min))?;
        let blocks_per_request =
            layout.blocks_per_request(at_min.known_len(), at_min.settings.in_flight_tokens);
        Ok(Band { at_min, at_max, blocks_per_request })
    }

    /// Tokens one pool block adds to vLLM 0.33's count: `ceil(max_model_len / blocks per
    /// request)` — the block size for dense and MLA models, less for hybrid ones.
    pub(super) fn step(&self) -> u64 {
        self.at_min.known_len().div_ceil(self.blocks_per_request.max(1)).max(1)
    }

    /// The formula `logged_tokens` falls within one block of, and its band; vLLM 0.33's first
    /// unless `legacy_first` (a V0 log, which gives blocks: `# GPU blocks` × block size).
    pub(super) fn fit(&self, logged_tokens: u64, legacy_first: bool) -> Option<Fit> {
        let block_size = u64::from(self.at_min.settings.block_size);
        let newest =
            (LoggedFormula::Vllm033, self.at_min.known_tokens(), self.at_max.known_tokens(), self.step());
        let legacy =
            (LoggedFormula::Legacy, self.at_min.known_legacy(), self.at_max.known_legacy(), block_size);
        let order = if legacy_first { [legacy, newest] } else { [newest, legacy] };
        order
            .into_iter()
            .find(|(_, tokens_min, tokens_max, tolerance)| {
                diff_to_band(logged_tokens, *tokens_min, *tokens_max).unsigned_abs() <= *tolerance
            })
            .map(|(formula, tokens_min, tokens_max, _)| Fit { formula, tokens_min, tokens_max })
    }
}

/// `tokens` minus the nearest end of `[band_min, band_max]`; 0 inside it.
pub(super) fn diff_to_band(tokens: u64, band_min: u64, band_max: u64) -> i64 {
    let tokens = i128::from(tokens);
    let diff = if tokens < i128::from(band_min) {
        tokens - i128::from(band_min)
    } else if tokens > i128::from(band_max) {
        tokens - i128::from(band_max)
    } else {
        0
    };
    i64::try_from(diff).unwrap_or(if diff < 0 { i64::MIN } else { i64::MAX })
}

/// `diff` tokens in blocks of `step` tokens, rounded away from zero.
pub(super) fn blocks_away(diff: i64, step: u64) -> i64 {
    let magnitude = i64::try_from(diff.unsigned_abs().div_ceil(step.max(1))).unwrap_or(i64::MAX);
    if diff < 0 { -magnitude } else { magnitude }
}

/// The layout an estimate used.
pub(super) fn layout_options(estimate: &KvEstimate) -> LayoutOptions {
    let settings = &estimate.settings;
    LayoutOptions {
        tp: settings.tp,
        pp: settings.pp,
        block_size: settings.block_size,
        kv_dtype: settings.kv_cache_dtype,
        serving_dtype: settings.serving_dtype,
        hybrid: settings.hybrid_kv_cache_manager,
        lang: triage_base::lang::Lang::En,
    }
}

/// Block counts that log `tokens` tokens for `max_model_len`-token requests, under either
/// formula.
pub(super) fn blocks_logging(layout: &Layout, tokens: u64, max_model_len: u64, in_flight: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let blocks_per_request = layout.blocks_per_request(max_model_len, in_flight).max(1);
    let nearest =
        u64::try_from(u128::from(tokens) * u128::from(blocks_per_request) / u128::from(max_model_len.max(1)))
            .unwrap_or(u64::MAX);
    for blocks in nearest.saturating_sub(1)..=nearest.saturating_add(2) {
        if layout.capacity_tokens(blocks, max_model_len, in_flight) == tokens && !out.contains(&blocks) {
            out.push(blocks);
        }
    }
    let block_size = u64::from(layout.block_size.max(1));
    let groups = layout.groups.len().max(1) as u64;
    if tokens.is_multiple_of(block_size) {
        let first = (tokens / block_size).saturating_mul(groups);
        for blocks in first..first.saturating_add(groups) {
            if !out.contains(&blocks) {
                out.push(blocks);
            }
        }
    }
    out
}
