//! Estimate versus what the server logged: recompute the capacity from the logged KV memory
//! and explain every difference (log rounding, block rounding, MLA replication across TP,
//! sliding-window groups, dtype, TP, the hybrid manager) — or say that it is unexplained.
//!
//! The comparison allows for the log's rounding: `Available KV cache memory: 54.62 GiB` is a
//! two-decimal figure, so the true memory is anywhere in [54.615, 54.625] GiB — ±5.4 MB, which
//! for Llama-3.1-8B is ±2.6 blocks of 2 MiB. The estimate is therefore a *band* of token counts
//! (one per end of that range, each computed exactly as vLLM 0.33 computes its logged count
//! from exact bytes: [`crate::layout`]), and "within one block" means the logged count lies
//! within the tokens one pool block adds (`ceil(max_model_len / blocks_per_request)`: the block
//! size for dense and MLA models) of that band.
//!
//! Two formulas are tried, newest first: vLLM 0.33's `int(blocks / blocks_per_request ×
//! max_model_len)` and older V1 releases' `blocks // groups × block_size`. They agree for one
//! group of full/MLA layers when `max_model_len` is a multiple of the block size; for hybrid
//! models and other lengths the one that fits is named in the explanations.
//!
//! `triage analyze` calls [`reconcile`] to explain KV-related startup failures.

mod alternative;
mod cross_check;
mod explain;
mod formula;
#[cfg(test)]
mod tests;

use crate::KvError;
use crate::dtype::KvDtype;
use crate::estimate::{KvBudget, KvEstimate, KvOptions, estimate};
use crate::layout::Layout;
use crate::model::ModelShape;
use crate::startup::{Engine, Logged, StartupCapacity};
use crate::units::{Size, fmt_int};
use formula::{Band, Known, blocks_away, diff_to_band, layout_options};
use serde::Serialize;

/// How the logged capacity compares with the estimate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The logged capacity is within one block of the estimate (under vLLM 0.33's formula or
    /// older releases', see `formula`).
    Match,
    /// It is not, but one changed setting (dtype, TP, hybrid manager, block size) explains it.
    Explained,
    /// Unexplained difference: see the explanations for what is known.
    Mismatch,
    /// The log has no capacity figure to compare.
    NotEnoughData,
}

/// Why the numbers are what they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// The engine settings the log gave and the estimate used.
    Settings,
    /// The log's rounding of the KV memory (a printed figure stands for a range of bytes).
    LogRounding,
    /// Rounding to whole blocks.
    BlockRounding,
    /// MLA latents replicated on every tensor-parallel GPU.
    MlaReplication,
    /// KV heads replicated when the tensor-parallel size exceeds them.
    KvHeadReplication,
    /// Sliding-window layers, which keep only their window.
    SlidingWindow,
    /// The KV cache dtype.
    KvDtype,
    /// vLLM's hybrid KV-cache manager.
    HybridManager,
    /// The tensor-parallel size.
    TensorParallel,
    /// The block size.
    BlockSize,
    /// The concurrency the log printed.
    Concurrency,
    /// The memory budget (weights, activation, non-torch memory).
    Budget,
    /// A startup failure about memory.
    Fatal,
    /// SGLang's own capacity figures.
    Sglang,
    /// A difference nothing here explains.
    Unexplained,
    /// The log follows an older vLLM's capacity formula (`blocks // groups × block_size`).
    LegacyFormula,
    /// Async scheduling (batches in flight) changes what sliding-window layers budget.
    AsyncScheduling,
    /// `num_gpu_blocks_override` fixed the block count.
    BlocksOverride,
    /// Memory taken from the KV budget after it was printed (a frontend multimodal reservation).
    MemoryReserved,
}

/// Which vLLM formula the logged token count follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum LoggedFormula {
    /// vLLM 0.33: `int(num_blocks / blocks_per_request(max_model_len) × max_model_len)`.
    #[serde(rename = "vllm_0_33")]
    Vllm033,
    /// Older V1 releases: `num_blocks // groups × block_size` (V0: `# GPU blocks × block_size`).
    #[serde(rename = "legacy")]
    Legacy,
}

/// One explanation of the comparison, in the report's language.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// What it is about.
    pub why: Why,
    /// The explanation, in words.
    pub message: String,
    /// The log line this is about, when there is one.
    pub line: Option<usize>,
}

/// The comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reconciliation {
    /// The engine that printed the log.
    pub engine: Option<Engine>,
    /// The KV memory figure used, as printed, and the byte range it stands for.
    pub available_kv_printed: Option<String>,
    /// The line of the KV memory figure.
    pub available_kv_line: Option<usize>,
    /// The fewest bytes the printed figure stands for.
    pub available_kv_bytes_min: Option<u64>,
    /// The most bytes the printed figure stands for.
    pub available_kv_bytes_max: Option<u64>,
    /// The logged capacity in tokens (V1 `GPU KV cache size`, V0 blocks × block size, SGLang
    /// `#tokens`).
    pub logged_tokens: Option<u64>,
    /// The line of the logged capacity.
    pub logged_tokens_line: Option<usize>,
    /// The estimate for the two ends of the available range (vLLM 0.33's formula).
    pub expected_tokens_min: Option<u64>,
    /// The estimate at the top of the available range.
    pub expected_tokens_max: Option<u64>,
    /// The same with older releases' `blocks // groups × block_size`.
    pub expected_tokens_legacy_min: Option<u64>,
    /// The same at the top of the range.
    pub expected_tokens_legacy_max: Option<u64>,
    /// Pool blocks the two ends of the available range hold.
    pub expected_blocks_min: Option<u64>,
    /// The same at the top of the range.
    pub expected_blocks_max: Option<u64>,
    /// The formula whose band the logged count fell in (none: neither).
    pub formula: Option<LoggedFormula>,
    /// Logged − nearest end of the expected band of `formula` (vLLM 0.33's when none fits; 0
    /// inside it).
    pub difference_tokens: Option<i64>,
    /// The same in blocks (tokens one pool block adds), rounded away from zero.
    pub difference_blocks: Option<i64>,
    /// Whether the difference is at most one block.
    pub within_one_block: Option<bool>,
    /// The estimate's bytes per token on one GPU.
    pub bytes_per_token_per_rank: u64,
    /// What the log implies per logged token: available / tokens (with block rounding and the
    /// log's rounding, a range).
    pub implied_bytes_per_token_min: Option<u64>,
    /// The same at the other end of the range.
    pub implied_bytes_per_token_max: Option<u64>,
    /// How the logged capacity compares with the estimate.
    pub verdict: Verdict,
    /// What explains the numbers, one entry per reason.
    pub explanations: Vec<Explanation>,
}

/// Fill the options the user left at their defaults from what the log says, and say so.
/// Explicit `block_size`, `max_model_len`, `max_num_seqs` and `max_num_batched_tokens` win;
/// `tp`/`pp` at 1 and `kv_dtype` auto are taken as "not given".
pub fn merge_logged_settings(opts: &KvOptions, startup: &StartupCapacity) -> (KvOptions, Vec<Explanation>) {
    let mut options = opts.clone();
    let mut notes = Vec::new();
    let logged = &startup.settings;
    let mut note = |message: String, line: usize| {
        notes.push(Explanation { why: Why::Settings, message, line: Some(line) })
    };
    if options.max_model_len.is_none() {
        if let Some(len) = &logged.max_model_len {
            options.max_model_len = Some(len.value);
            note(format!("max_model_len {} from the log", fmt_int(len.value)), len.line);
        } else if let Some(concurrency) = &startup.max_concurrency {
            options.max_model_len = Some(concurrency.value.tokens_per_request);
            note(
                format!(
                    "max_model_len {} from the concurrency line",
                    fmt_int(concurrency.value.tokens_per_request)
                ),
                concurrency.line,
            );
        } else if let Some(context_len) = &startup.sglang_context_len {
            options.max_model_len = Some(context_len.value);
            note(
                format!("max_model_len {} from SGLang's context_len", fmt_int(context_len.value)),
                context_len.line,
            );
        }
    }
    if options.block_size.is_none() {
        let block_size = startup.forced_block_size.as_ref().or(logged.block_size.as_ref());
        if let Some(block_size) = block_size
            && let Ok(value) = u32::try_from(block_size.value)
        {
            options.block_size = Some(value);
            note(format!("block size {value} from the log"), block_size.line);
        }
    }
    if options.kv_dtype == KvDtype::Auto
        && let Some(dtype) = &logged.kv_cache_dtype
        && let Ok(parsed) = KvDtype::parse(&dtype.value)
        && parsed != KvDtype::Auto
    {
        options.kv_dtype = parsed;
        note(format!("kv cache dtype {} from the log", parsed.as_str()), dtype.line);
    }
    if options.tp == 1
        && let Some(tp) = &logged.tensor_parallel_size
        && let Ok(value) = u32::try_from(tp.value)
        && value > 1
    {
        options.tp = value;
        note(format!("tensor parallel size {value} from the log"), tp.line);
    }
    if options.pp == 1
        && let Some(pp) = &logged.pipeline_parallel_size
        && let Ok(value) = u32::try_from(pp.value)
        && value > 1
    {
        options.pp = value;
        note(format!("pipeline parallel size {value} from the log"), pp.line);
    }
    if options.max_num_batched_tokens.is_none()
        && let Some(batched) = &logged.max_num_batched_tokens
    {
        options.max_num_batched_tokens = Some(batched.value);
        note(format!("max_num_batched_tokens {} from the log", fmt_int(batched.value)), batched.line);
    }
    if options.max_num_seqs.is_none()
        && let Some(seqs) = &logged.max_num_seqs
    {
        options.max_num_seqs = Some(seqs.value);
        note(format!("max_num_seqs {} from the log", fmt_int(seqs.value)), seqs.line);
    }
    if options.async_scheduling
        && let Some(async_scheduling) = &logged.async_scheduling
        && !async_scheduling.value
    {
        options.async_scheduling = false;
        note("async scheduling off, from the log".to_owned(), async_scheduling.line);
    }
    (options, notes)
}

/// The KV memory the planner was given, as the log states it, with its line and the byte
/// range it stands for: vLLM 0.33's `KV cache memory reduced to …` when a multimodal
/// reservation printed one, else `Available KV cache memory`, else V0's `reserved for KV Cache`.
pub fn logged_available(startup: &StartupCapacity) -> Option<(&Logged<Size>, u64, u64)> {
    let available =
        startup.kv_reduced_to.as_ref().or(startup.available_kv.as_ref()).or(startup.kv_reserved.as_ref())?;
    let (bytes_min, bytes_max) = available.value.bytes_range(false);
    Some((available, bytes_min, bytes_max))
}

/// The logged capacity in tokens and its line.
#[derive(Clone, Copy)]
struct LoggedCount {
    tokens: u64,
    line: usize,
}

/// The logged capacity: V1 tokens, else V0 blocks × block size.
fn logged_count(startup: &StartupCapacity, block_size: u32) -> Option<LoggedCount> {
    match (&startup.kv_cache_tokens, &startup.gpu_blocks) {
        (Some(tokens), _) => Some(LoggedCount { tokens: tokens.value, line: tokens.line }),
        (None, Some(blocks)) => Some(LoggedCount {
            tokens: blocks.value.saturating_mul(u64::from(block_size)),
            line: blocks.line,
        }),
        _ => None,
    }
}

/// What every step of the comparison reads.
struct Inputs<'a> {
    model: &'a ModelShape,
    options: &'a KvOptions,
    startup: &'a StartupCapacity,
    /// The estimate under `options` with no KV memory: the structural facts.
    base: &'a KvEstimate,
    layout: &'a Layout,
}

/// Compare `model` under `opts` with what `startup` logged. Fails when `max_model_len` is unknown
/// (neither the options, the log nor the model give it): the logged count depends on it.
pub fn reconcile(
    model: &ModelShape,
    opts: &KvOptions,
    startup: &StartupCapacity,
) -> Result<Reconciliation, KvError> {
    let (options, mut explanations) = merge_logged_settings(opts, startup);
    if options.max_model_len.is_none() && model.max_model_len.is_none() {
        return Err(KvError::MissingField {
            field: "max_position_embeddings",
            aliases: " (nor n_positions, max_seq_len, seq_length)".to_owned(),
            why: "the logged capacity depends on max_model_len, which neither the log nor the model gives; pass \
                  --max-model-len"
                .to_owned(),
        });
    }
    // The structural facts hold whatever the log says.
    let base = estimate(model, &options, &KvBudget::Available(0))?;
    let layout = Layout::new(model, &layout_options(&base))?;
    let inputs = Inputs { model, options: &options, startup, base: &base, layout: &layout };
    let mut reconciliation = Reconciliation::empty(startup.engine, base.bytes_per_token_per_rank);
    explanations.extend(explain::mla_replication(model, &base));
    explanations.extend(explain::kv_head_replication(model, &base));
    explanations.extend(explain::sliding_window(&base));
    explanations.extend(explain::v0_blocks(startup, base.settings.block_size));

    let logged = logged_count(startup, base.settings.block_size);
    if let Some(logged) = logged {
        reconciliation.logged_tokens = Some(logged.tokens);
        reconciliation.logged_tokens_line = Some(logged.line);
    }
    // The options that explain the log, when one changed setting does.
    let effective = match logged_available(startup) {
        Some(available) => compare(&inputs, available, logged, &mut reconciliation, &mut explanations)?,
        None => {
            explanations.extend(logged.map(|logged| explain::no_memory_figure(&layout, &base, logged)));
            None
        }
    };

    explanations.extend(match &effective {
        Some(alternative) => {
            let changed = estimate(model, alternative, &KvBudget::Available(0))?;
            let changed_layout = Layout::new(model, &layout_options(&changed))?;
            cross_check::concurrency(startup, &changed_layout, &changed)
        }
        None => cross_check::concurrency(startup, &layout, &base),
    });
    explanations.extend(cross_check::v0_budget(startup));
    explanations.extend(cross_check::sglang(model, &options, startup, &base, &mut reconciliation));
    let (fatal, agreement) = cross_check::fatal(startup, &layout, &base);
    explanations.extend(fatal);
    if let Some(agrees) = agreement
        && reconciliation.verdict == Verdict::NotEnoughData
    {
        reconciliation.verdict = if agrees { Verdict::Match } else { Verdict::Mismatch };
    }
    explanations.extend(explain::no_capacity_lines(reconciliation.verdict, &explanations));
    reconciliation.explanations = explanations;
    Ok(reconciliation)
}

/// Compare with the logged KV memory figure: fill the expected band, the difference and the
/// verdict, and return the options that explain the log when one changed setting does.
fn compare(
    inputs: &Inputs,
    (printed, printed_min, printed_max): (&Logged<Size>, u64, u64),
    logged: Option<LoggedCount>,
    reconciliation: &mut Reconciliation,
    explanations: &mut Vec<Explanation>,
) -> Result<Option<KvOptions>, KvError> {
    let Inputs { model, options, startup, base, layout } = *inputs;
    reconciliation.available_kv_printed = Some(printed.value.to_string());
    reconciliation.available_kv_line = Some(printed.line);
    reconciliation.available_kv_bytes_min = Some(printed_min);
    reconciliation.available_kv_bytes_max = Some(printed_max);
    explanations.extend(explain::memory_reserved(startup));
    explanations.extend(explain::blocks_override(startup, layout, printed_min, printed_max));
    // `num_gpu_blocks_override` fixes the block count whatever the memory.
    let (bytes_min, bytes_max) = match &startup.num_gpu_blocks_override {
        Some(blocks_override) => {
            let exact = blocks_override.value.saturating_mul(layout.block_bytes_max());
            (exact, exact)
        }
        None => (printed_min, printed_max),
    };
    let band = Band::new(model, options, bytes_min, bytes_max)?;
    let (tokens_min, tokens_max) = (band.at_min.known_tokens(), band.at_max.known_tokens());
    reconciliation.expected_tokens_min = Some(tokens_min);
    reconciliation.expected_tokens_max = Some(tokens_max);
    reconciliation.expected_tokens_legacy_min = Some(band.at_min.known_legacy());
    reconciliation.expected_tokens_legacy_max = Some(band.at_max.known_legacy());
    reconciliation.expected_blocks_min = Some(band.at_min.known_blocks());
    reconciliation.expected_blocks_max = Some(band.at_max.known_blocks());
    explanations.extend(explain::log_rounding(startup, printed, &band, bytes_min, bytes_max));
    explanations.push(explain::block_rounding(base, &band));
    let Some(logged) = logged else { return Ok(None) };

    let step = band.step();
    let v0 = startup.kv_cache_tokens.is_none() && startup.gpu_blocks.is_some();
    let fit = band.fit(logged.tokens, v0);
    let (band_min, band_max, step_in_band) = match fit {
        Some(fit) if fit.formula == LoggedFormula::Legacy => {
            (fit.tokens_min, fit.tokens_max, u64::from(base.settings.block_size))
        }
        Some(fit) => (fit.tokens_min, fit.tokens_max, step),
        None => (tokens_min, tokens_max, step),
    };
    let diff = diff_to_band(logged.tokens, band_min, band_max);
    reconciliation.formula = fit.map(|fit| fit.formula);
    reconciliation.difference_tokens = Some(diff);
    reconciliation.difference_blocks = Some(blocks_away(diff, step_in_band));
    reconciliation.within_one_block = Some(fit.is_some());
    // Bytes of the pool one logged token stands for, as the model says: one block per
    // `max_model_len / blocks_per_request` tokens.
    let per_logged = u64::try_from(
        u128::from(band.at_min.block_bytes) * u128::from(band.blocks_per_request)
            / u128::from(base.known_len()),
    )
    .unwrap_or(u64::MAX);
    if logged.tokens > 0 {
        reconciliation.implied_bytes_per_token_min = Some(bytes_min / logged.tokens.saturating_add(step));
        reconciliation.implied_bytes_per_token_max = Some(bytes_max / logged.tokens);
    }
    if let Some(fit) = fit {
        reconciliation.verdict = Verdict::Match;
        explanations.push(explain::within_one_block(base, &band, fit, logged));
        return Ok(None);
    }
    if let Some(found) = alternative::alternative(model, options, bytes_min, bytes_max, logged)? {
        reconciliation.verdict = Verdict::Explained;
        explanations.push(found.explanation);
        return Ok(Some(found.options));
    }
    reconciliation.verdict = Verdict::Mismatch;
    let shortfall =
        explain::Shortfall { diff, step, tokens_min, tokens_max, bytes_min, bytes_max, per_logged };
    explanations.push(explain::unexplained(startup, logged, &shortfall));
    Ok(None)
}

impl Reconciliation {
    /// Nothing compared yet.
    fn empty(engine: Option<Engine>, bytes_per_token_per_rank: u64) -> Reconciliation {
        Reconciliation {
            engine,
            available_kv_printed: None,
            available_kv_line: None,
            available_kv_bytes_min: None,
            available_kv_bytes_max: None,
            logged_tokens: None,
            logged_tokens_line: None,
            expected_tokens_min: None,
            expected_tokens_max: None,
            expected_tokens_legacy_min: None,
            expected_tokens_legacy_max: None,
            expected_blocks_min: None,
            expected_blocks_max: None,
            formula: None,
            difference_tokens: None,
            difference_blocks: None,
            within_one_block: None,
            bytes_per_token_per_rank,
            implied_bytes_per_token_min: None,
            implied_bytes_per_token_max: None,
            verdict: Verdict::NotEnoughData,
            explanations: Vec::new(),
        }
    }
}
