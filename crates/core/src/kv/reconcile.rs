//! Estimate versus what the server logged: recompute the capacity from the logged KV memory
//! and explain every difference (log rounding, block rounding, MLA replication across TP,
//! sliding-window groups, dtype, TP, the hybrid manager) — or say that it is unexplained.
//!
//! The comparison allows for the log's rounding: `Available KV cache memory: 54.62 GiB` is a
//! two-decimal figure, so the true memory is anywhere in [54.615, 54.625) GiB — ±5.4 MB, which
//! for Llama-3.1-8B is ±2.6 blocks of 2 MiB. The estimate is therefore a *band* of token counts
//! (one per end of that range), and "within one block" means the logged count lies within one
//! block (`block_size` tokens) of that band.
//!
//! `triage analyze` calls [`reconcile`] to explain KV-related startup failures.

use crate::kv::KvError;
use crate::kv::dtype::KvDtype;
use crate::kv::estimate::{KvBudget, KvEstimate, KvOptions, estimate};
use crate::kv::layout::{Layout, LayoutOptions};
use crate::kv::model::ModelShape;
use crate::kv::startup::{Engine, Fatal, Logged, StartupCapacity};
use crate::kv::units::{Size, fmt_centi, fmt_gib, fmt_int, fmt_size};
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The logged capacity is within one block of the estimate.
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
    Settings,
    LogRounding,
    BlockRounding,
    MlaReplication,
    KvHeadReplication,
    SlidingWindow,
    KvDtype,
    HybridManager,
    TensorParallel,
    BlockSize,
    Concurrency,
    Budget,
    Fatal,
    Sglang,
    Unexplained,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Explanation {
    pub why: Why,
    pub message: String,
    /// The log line this is about, when there is one.
    pub line: Option<usize>,
}

/// The comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reconciliation {
    pub engine: Option<Engine>,
    /// The KV memory figure used, as printed, and the byte range it stands for.
    pub available_kv_printed: Option<String>,
    pub available_kv_line: Option<usize>,
    pub available_kv_bytes_min: Option<u64>,
    pub available_kv_bytes_max: Option<u64>,
    /// The logged capacity in tokens (V1 `GPU KV cache size`, V0 blocks × block size, SGLang
    /// `#tokens`).
    pub logged_tokens: Option<u64>,
    pub logged_tokens_line: Option<usize>,
    /// The estimate for the two ends of the available range.
    pub expected_tokens_min: Option<u64>,
    pub expected_tokens_max: Option<u64>,
    /// Logged − nearest end of the expected band (0 inside it).
    pub difference_tokens: Option<i64>,
    /// The same in blocks, rounded away from zero.
    pub difference_blocks: Option<i64>,
    pub within_one_block: Option<bool>,
    /// The estimate's bytes per token on one GPU.
    pub bytes_per_token_per_rank: u64,
    /// What the log implies per logged token: available / tokens (with block rounding and the
    /// log's rounding, a range).
    pub implied_bytes_per_token_min: Option<u64>,
    pub implied_bytes_per_token_max: Option<u64>,
    pub verdict: Verdict,
    pub explanations: Vec<Explanation>,
}

fn ex(why: Why, line: Option<usize>, message: String) -> Explanation {
    Explanation { why, message, line }
}

/// Fill the options the user left at their defaults from what the log says, and say so.
/// Explicit `block_size`, `max_model_len`, `max_num_seqs` and `max_num_batched_tokens` win;
/// `tp`/`pp` at 1 and `kv_dtype` auto are taken as "not given".
pub fn merge_logged_settings(opts: &KvOptions, s: &StartupCapacity) -> (KvOptions, Vec<Explanation>) {
    let mut o = opts.clone();
    let mut notes = Vec::new();
    let st = &s.settings;
    let mut note = |what: String, line: usize| notes.push(ex(Why::Settings, Some(line), what));
    if o.max_model_len.is_none() {
        if let Some(v) = &st.max_model_len {
            o.max_model_len = Some(v.value);
            note(format!("max_model_len {} from the log", fmt_int(v.value)), v.line);
        } else if let Some(c) = &s.max_concurrency {
            o.max_model_len = Some(c.value.tokens_per_request);
            note(
                format!("max_model_len {} from the concurrency line", fmt_int(c.value.tokens_per_request)),
                c.line,
            );
        } else if let Some(c) = &s.sglang_context_len {
            o.max_model_len = Some(c.value);
            note(format!("max_model_len {} from SGLang's context_len", fmt_int(c.value)), c.line);
        }
    }
    if o.block_size.is_none() {
        let b = s.forced_block_size.as_ref().or(st.block_size.as_ref());
        if let Some(b) = b
            && let Ok(v) = u32::try_from(b.value)
        {
            o.block_size = Some(v);
            note(format!("block size {v} from the log"), b.line);
        }
    }
    if o.kv_dtype == KvDtype::Auto
        && let Some(d) = &st.kv_cache_dtype
        && let Ok(k) = KvDtype::parse(&d.value)
        && k != KvDtype::Auto
    {
        o.kv_dtype = k;
        note(format!("kv cache dtype {} from the log", k.as_str()), d.line);
    }
    if o.tp == 1
        && let Some(t) = &st.tensor_parallel_size
        && let Ok(v) = u32::try_from(t.value)
        && v > 1
    {
        o.tp = v;
        note(format!("tensor parallel size {v} from the log"), t.line);
    }
    if o.pp == 1
        && let Some(p) = &st.pipeline_parallel_size
        && let Ok(v) = u32::try_from(p.value)
        && v > 1
    {
        o.pp = v;
        note(format!("pipeline parallel size {v} from the log"), p.line);
    }
    if o.max_num_batched_tokens.is_none()
        && let Some(v) = &st.max_num_batched_tokens
    {
        o.max_num_batched_tokens = Some(v.value);
        note(format!("max_num_batched_tokens {} from the log", fmt_int(v.value)), v.line);
    }
    if o.max_num_seqs.is_none()
        && let Some(v) = &st.max_num_seqs
    {
        o.max_num_seqs = Some(v.value);
        note(format!("max_num_seqs {} from the log", fmt_int(v.value)), v.line);
    }
    (o, notes)
}

/// The KV memory the log states, with its line and the byte range it stands for.
pub fn logged_available(s: &StartupCapacity) -> Option<(&Logged<Size>, u64, u64)> {
    let a = s.available_kv.as_ref().or(s.kv_reserved.as_ref())?;
    let (lo, hi) = a.value.bytes_range(false);
    Some((a, lo, hi))
}

/// Band of logged-style token counts for the two ends of the available range.
fn band(model: &ModelShape, o: &KvOptions, lo: u64, hi: u64) -> Result<(KvEstimate, u64, u64), KvError> {
    let e_lo = estimate(model, o, &KvBudget::Available(lo))?;
    let e_hi = estimate(model, o, &KvBudget::Available(hi))?;
    let (a, b) = (e_lo.tokens, e_hi.tokens);
    Ok((e_lo, a, b))
}

fn diff_to_band(t: u64, lo: u64, hi: u64) -> i64 {
    let t = i128::from(t);
    let d = if t < i128::from(lo) {
        t - i128::from(lo)
    } else if t > i128::from(hi) {
        t - i128::from(hi)
    } else {
        0
    };
    i64::try_from(d).unwrap_or(if d < 0 { i64::MIN } else { i64::MAX })
}

fn blocks_away(diff: i64, bs: u32) -> i64 {
    let bs = i64::from(bs.max(1));
    let m = diff.unsigned_abs().div_ceil(bs as u64) as i64;
    if diff < 0 { -m } else { m }
}

/// Compare `model` under `opts` with what `startup` logged.
pub fn reconcile(
    model: &ModelShape,
    opts: &KvOptions,
    s: &StartupCapacity,
) -> Result<Reconciliation, KvError> {
    let (o, mut explanations) = merge_logged_settings(opts, s);
    let mut r = Reconciliation {
        engine: s.engine,
        available_kv_printed: None,
        available_kv_line: None,
        available_kv_bytes_min: None,
        available_kv_bytes_max: None,
        logged_tokens: None,
        logged_tokens_line: None,
        expected_tokens_min: None,
        expected_tokens_max: None,
        difference_tokens: None,
        difference_blocks: None,
        within_one_block: None,
        bytes_per_token_per_rank: 0,
        implied_bytes_per_token_min: None,
        implied_bytes_per_token_max: None,
        verdict: Verdict::NotEnoughData,
        explanations: Vec::new(),
    };

    // The structural facts hold whatever the log says.
    let base = estimate(model, &o, &KvBudget::Available(0))?;
    r.bytes_per_token_per_rank = base.bytes_per_token_per_rank;
    let settings = &base.settings;
    let bs = settings.block_size;
    let layout = Layout::new(model, &layout_options(&base))?;
    structural(model, &base, &mut explanations);

    // Logged capacity: V1 tokens, else V0 blocks × block size.
    let logged_tokens = match (&s.kv_cache_tokens, &s.gpu_blocks) {
        (Some(t), _) => Some((t.value, t.line)),
        (None, Some(b)) => {
            explanations.push(ex(
                Why::Settings,
                Some(b.line),
                format!(
                    "vLLM V0 logs blocks: {} GPU blocks × block size {bs} = {} tokens",
                    fmt_int(b.value),
                    fmt_int(b.value.saturating_mul(u64::from(bs)))
                ),
            ));
            Some((b.value.saturating_mul(u64::from(bs)), b.line))
        }
        _ => None,
    };
    if let Some((t, line)) = logged_tokens {
        r.logged_tokens = Some(t);
        r.logged_tokens_line = Some(line);
    }

    // The options that explain the log, when one changed setting does.
    let mut effective: Option<KvOptions> = None;
    if let Some((a, lo, hi)) = logged_available(s) {
        r.available_kv_printed = Some(a.value.to_string());
        r.available_kv_line = Some(a.line);
        r.available_kv_bytes_min = Some(lo);
        r.available_kv_bytes_max = Some(hi);
        let (e_lo, t_lo, t_hi) = band(model, &o, lo, hi)?;
        r.expected_tokens_min = Some(t_lo);
        r.expected_tokens_max = Some(t_hi);
        let block = e_lo.block_bytes.max(1);
        explanations.push(ex(
            Why::LogRounding,
            Some(a.line),
            format!(
                "`{}` is printed with {} decimals: the true figure is {}–{} bytes (±{} B, ±{} blocks of {}), \
                 i.e. {}–{} tokens",
                a.value,
                a.value.value.scale,
                fmt_int(lo),
                fmt_int(hi),
                fmt_int(hi.saturating_sub(lo) / 2),
                fmt_centi((u128::from(hi.saturating_sub(lo)) * 50 / u128::from(block)) as u64),
                fmt_size(block),
                fmt_int(t_lo),
                fmt_int(t_hi)
            ),
        ));
        explanations.push(ex(
            Why::BlockRounding,
            None,
            format!(
                "vLLM keeps whole blocks: floor(available / {} per block) — up to one block ({bs} tokens{}, {}) of \
                 the memory stays unused",
                fmt_size(block),
                if base.kv_cache_groups > 1 { " per group" } else { "" },
                fmt_size(block)
            ),
        ));
        if let Some((t, line)) = logged_tokens {
            let diff = diff_to_band(t, t_lo, t_hi);
            let within = diff.unsigned_abs() <= u64::from(bs);
            r.difference_tokens = Some(diff);
            r.difference_blocks = Some(blocks_away(diff, bs));
            r.within_one_block = Some(within);
            // Pool bytes one logged token stands for, as the log implies and as the model says.
            let per_logged = e_lo.block_bytes.saturating_mul(e_lo.kv_cache_groups) / u64::from(bs).max(1);
            if t > 0 {
                let step = u64::from(bs).saturating_mul(e_lo.kv_cache_groups.max(1));
                r.implied_bytes_per_token_min = Some(lo / t.saturating_add(step));
                r.implied_bytes_per_token_max = Some(hi / t);
            }
            if within {
                r.verdict = Verdict::Match;
                explanations.push(ex(
                    Why::BlockRounding,
                    Some(line),
                    format!(
                        "logged {} tokens is within one block of the estimate ({}–{}): the model shape, dtype and \
                         settings match",
                        fmt_int(t),
                        fmt_int(t_lo),
                        fmt_int(t_hi)
                    ),
                ));
            } else if let Some((why, msg, alt)) = alternative(model, &o, lo, hi, t)? {
                r.verdict = Verdict::Explained;
                explanations.push(ex(why, Some(line), msg));
                effective = Some(alt);
            } else {
                r.verdict = Verdict::Mismatch;
                explanations.push(unexplained(t, t_lo, t_hi, diff, bs, lo, hi, per_logged, line));
            }
        }
    } else if let Some((t, line)) = logged_tokens {
        explanations.push(ex(
            Why::Settings,
            Some(line),
            format!(
                "the log gives {} tokens but no KV memory figure: at {} B per token per GPU that is {} of KV \
                 (whole blocks)",
                fmt_int(t),
                fmt_int(base.bytes_per_token_per_rank),
                fmt_gib(
                    t.saturating_mul(base.block_bytes.saturating_mul(base.kv_cache_groups))
                        / u64::from(bs).max(1)
                )
            ),
        ));
    }

    match &effective {
        Some(alt) => {
            let e = estimate(model, alt, &KvBudget::Available(0))?;
            let l = Layout::new(model, &layout_options(&e))?;
            concurrency(s, &l, &e, &mut explanations);
        }
        None => concurrency(s, &layout, &base, &mut explanations),
    }
    v0_budget(s, &mut explanations);
    sglang(model, &o, s, &base, &mut r, &mut explanations)?;
    if let Some(agrees) = fatal(s, &layout, &base, &mut explanations)
        && r.verdict == Verdict::NotEnoughData
    {
        r.verdict = if agrees { Verdict::Match } else { Verdict::Mismatch };
    }

    if r.verdict == Verdict::NotEnoughData && explanations.iter().all(|e| e.why == Why::Settings) {
        explanations.push(ex(
            Why::Unexplained,
            None,
            "no capacity lines found: paste the startup lines with `Available KV cache memory`, `GPU KV cache \
             size`, `# GPU blocks`, `model weights take …` or SGLang's `KV Cache is allocated`"
                .to_owned(),
        ));
    }
    r.explanations = explanations;
    Ok(r)
}

/// The layout an estimate used.
fn layout_options(e: &KvEstimate) -> LayoutOptions {
    let s = &e.settings;
    LayoutOptions {
        tp: s.tp,
        pp: s.pp,
        block_size: s.block_size,
        kv_dtype: s.kv_cache_dtype,
        serving_dtype: s.serving_dtype,
        hybrid: s.hybrid_kv_cache_manager,
    }
}

fn structural(model: &ModelShape, e: &KvEstimate, out: &mut Vec<Explanation>) {
    let tp = e.settings.tp;
    if let Some(m) = model.mla
        && tp > 1
    {
        out.push(ex(
            Why::MlaReplication,
            None,
            format!(
                "MLA keeps the whole {}-wide latent on every one of the {tp} TP ranks ({} B per token per GPU); a \
                 calculator that divides by TP would promise {tp}× the tokens",
                u64::from(m.kv_lora_rank) + u64::from(m.qk_rope_head_dim),
                fmt_int(e.bytes_per_token_per_rank)
            ),
        ));
    }
    if model.mla.is_none() && tp > model.num_kv_heads {
        out.push(ex(
            Why::KvHeadReplication,
            None,
            format!(
                "TP {tp} > {} kv heads: every GPU keeps one whole kv head, so the cache per GPU stops shrinking \
                 beyond TP {}",
                model.num_kv_heads, model.num_kv_heads
            ),
        ));
    }
    if e.kv_cache_groups > 1 {
        out.push(ex(
            Why::SlidingWindow,
            None,
            format!(
                "hybrid model: {} KV-cache groups share one pool; vLLM logs blocks / {} × block size as the token \
                 capacity, and budgets each sliding layer at window − 1 + max_num_batched_tokens tokens per request",
                e.kv_cache_groups, e.kv_cache_groups
            ),
        ));
    } else if e.layers.iter().any(|l| l.kind == "sliding") {
        out.push(ex(
            Why::SlidingWindow,
            None,
            "every layer slides: capacity per token is as for full attention, but each request holds at most \
             window − 1 + max_num_batched_tokens tokens per layer"
                .to_owned(),
        ));
    }
}

/// Try one changed setting at a time; the first that puts the logged count within one block wins.
fn alternative(
    model: &ModelShape,
    o: &KvOptions,
    lo: u64,
    hi: u64,
    t: u64,
) -> Result<Option<(Why, String, KvOptions)>, KvError> {
    let fits = |alt: &KvOptions| -> Option<(u64, u64)> {
        let (e, a, b) = band(model, alt, lo, hi).ok()?;
        (diff_to_band(t, a, b).unsigned_abs() <= u64::from(e.settings.block_size)).then_some((a, b))
    };
    let current = estimate(model, o, &KvBudget::Available(lo))?;
    for d in [KvDtype::Fp8, KvDtype::Bf16, KvDtype::Fp32, KvDtype::Fp8DsMla] {
        if d == o.kv_dtype {
            continue;
        }
        let alt = KvOptions { kv_dtype: d, ..o.clone() };
        let Ok(e) = estimate(model, &alt, &KvBudget::Available(lo)) else { continue };
        if e.settings.kv_element_bytes == current.settings.kv_element_bytes && d != KvDtype::Fp8DsMla {
            continue;
        }
        if let Some((a, b)) = fits(&alt) {
            return Ok(Some((
                Why::KvDtype,
                format!(
                    "the logged {} tokens match a {} KV cache ({}–{} expected), not {}: the server ran with \
                     --kv-cache-dtype {} ({} B per token per GPU instead of {})",
                    fmt_int(t),
                    d.as_str(),
                    fmt_int(a),
                    fmt_int(b),
                    current.settings.kv_cache_dtype.as_str(),
                    d.as_str(),
                    fmt_int(e.bytes_per_token_per_rank),
                    fmt_int(current.bytes_per_token_per_rank)
                ),
                alt.clone(),
            )));
        }
    }
    if model.is_hybrid() {
        let alt = KvOptions { hybrid: !o.hybrid, ..o.clone() };
        if let Some((a, b)) = fits(&alt) {
            return Ok(Some((
                Why::HybridManager,
                format!(
                    "the logged {} tokens match the hybrid KV-cache manager {} ({}–{} expected): sliding layers were \
                     {}",
                    fmt_int(t),
                    if o.hybrid { "off" } else { "on" },
                    fmt_int(a),
                    fmt_int(b),
                    if o.hybrid { "allocated like full attention" } else { "capped at their window" }
                ),
                alt.clone(),
            )));
        }
    }
    for tp in [1u32, 2, 4, 8, 16] {
        if tp == o.tp {
            continue;
        }
        let alt = KvOptions { tp, ..o.clone() };
        if estimate(model, &alt, &KvBudget::Available(lo)).is_err() {
            continue;
        }
        if let Some((a, b)) = fits(&alt) {
            return Ok(Some((
                Why::TensorParallel,
                format!(
                    "the logged {} tokens match tensor parallel size {tp} ({}–{} expected), not {}: pass --tp {tp}",
                    fmt_int(t),
                    fmt_int(a),
                    fmt_int(b),
                    o.tp
                ),
                alt.clone(),
            )));
        }
    }
    for b in [16u32, 32, 64, 128] {
        if Some(b) == o.block_size || (o.block_size.is_none() && b == current.settings.block_size) {
            continue;
        }
        let alt = KvOptions { block_size: Some(b), ..o.clone() };
        if let Some((x, y)) = fits(&alt) {
            return Ok(Some((
                Why::BlockSize,
                format!(
                    "the logged {} tokens match block size {b} ({}–{} expected)",
                    fmt_int(t),
                    fmt_int(x),
                    fmt_int(y)
                ),
                alt.clone(),
            )));
        }
    }
    Ok(None)
}

#[allow(clippy::too_many_arguments)]
fn unexplained(
    t: u64,
    t_lo: u64,
    t_hi: u64,
    diff: i64,
    bs: u32,
    lo: u64,
    hi: u64,
    per_logged: u64,
    line: usize,
) -> Explanation {
    let direction = if diff < 0 { "below" } else { "above" };
    let blocks = diff.unsigned_abs().div_ceil(u64::from(bs.max(1)));
    let bytes = diff.unsigned_abs().saturating_mul(per_logged);
    let implied_max = hi.checked_div(t).unwrap_or(0);
    let implied_min = lo / t.saturating_add(u64::from(bs)).max(1);
    // Shape check: does the model's cost per logged token fall near the implied one (0.5 %)?
    let near = per_logged > 0 && (implied_max.abs_diff(per_logged) * 200 <= per_logged);
    let shape = if near {
        format!(
            "the model's {} B per logged token is within 0.5 % of what the log implies ({}–{} B), so the model \
             shape and dtype are right: about {} of the printed KV memory was not turned into blocks — memory \
             vLLM reserved after printing the figure, or lines from different runs or ranks",
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
    ex(
        Why::Unexplained,
        Some(line),
        format!(
            "logged {} tokens is {} tokens ({blocks} blocks) {direction} the estimate's {}–{} — more than the log's \
             rounding and block rounding allow; {shape}",
            fmt_int(t),
            fmt_int(diff.unsigned_abs()),
            fmt_int(t_lo),
            fmt_int(t_hi)
        ),
    )
}

fn concurrency(s: &StartupCapacity, layout: &Layout, e: &KvEstimate, out: &mut Vec<Explanation>) {
    let Some(c) = &s.max_concurrency else { return };
    let Some(t) = s.kv_cache_tokens.as_ref().map(|t| t.value) else { return };
    let bs = u64::from(layout.block_size.max(1));
    let blocks = t / bs * e.kv_cache_groups.max(1);
    let bpr = layout.blocks_per_request(c.value.tokens_per_request, e.settings.max_num_batched_tokens).max(1);
    let centi = ((u128::from(blocks) * 200 + u128::from(bpr)) / (2 * u128::from(bpr))) as u64;
    let printed = c.value.times.times_round(100);
    let msg = if centi.abs_diff(printed) <= 1 {
        format!(
            "consistent: {} blocks / {} blocks per {}-token request = {}x, as logged",
            fmt_int(blocks),
            fmt_int(bpr),
            fmt_int(c.value.tokens_per_request),
            fmt_centi(centi)
        )
    } else {
        format!(
            "the logged {}x for {}-token requests differs from {} blocks / {} blocks per request = {}x: \
             max_num_batched_tokens or the window differs from what was assumed",
            c.value.times,
            fmt_int(c.value.tokens_per_request),
            fmt_int(blocks),
            fmt_int(bpr),
            fmt_centi(centi)
        )
    };
    out.push(ex(Why::Concurrency, Some(c.line), msg));
}

fn v0_budget(s: &StartupCapacity, out: &mut Vec<Explanation>) {
    let (Some(total), Some(util), Some(w), Some(nt), Some(act), Some(kv)) = (
        &s.total_gpu_memory,
        &s.settings.gpu_memory_utilization,
        &s.weights,
        &s.non_torch,
        &s.activation_peak,
        &s.kv_reserved,
    ) else {
        return;
    };
    let requested = u64::try_from(
        u128::from(total.value.bytes(false)) * u128::from(util.value.times_round(1_000_000)) / 1_000_000,
    )
    .unwrap_or(u64::MAX);
    let computed = requested
        .saturating_sub(w.value.bytes(false))
        .saturating_sub(nt.value.bytes(false))
        .saturating_sub(act.value.bytes(false));
    let logged = kv.value.bytes(false);
    // Five rounded two-decimal GiB figures: allow 0.03 GiB.
    let ok = computed.abs_diff(logged) <= 32_212_255;
    out.push(ex(
        Why::Budget,
        Some(kv.line),
        format!(
            "{} × {} − weights {} − non-torch {} − activation {} = {} {} the logged {} for KV",
            total.value,
            util.value,
            w.value,
            nt.value,
            act.value,
            fmt_gib(computed),
            if ok { "matches" } else { "does not match" },
            kv.value
        ),
    ));
}

fn sglang(
    model: &ModelShape,
    o: &KvOptions,
    s: &StartupCapacity,
    base: &KvEstimate,
    r: &mut Reconciliation,
    out: &mut Vec<Explanation>,
) -> Result<(), KvError> {
    let tokens = s.sglang_tokens.as_ref().or(s.sglang_max_total_num_tokens.as_ref());
    let Some(tokens) = tokens else { return Ok(()) };
    let t = tokens.value;
    if r.logged_tokens.is_none() {
        r.logged_tokens = Some(t);
        r.logged_tokens_line = Some(tokens.line);
    }
    let sizes: Vec<&Logged<Size>> = [&s.sglang_k_size, &s.sglang_v_size, &s.sglang_kv_size]
        .into_iter()
        .filter_map(Option::as_ref)
        .collect();
    if sizes.is_empty() || t == 0 {
        return Ok(());
    }
    // SGLang prints `GB` but divides by 2^30 (its pool's `GB = 1024 ** 3`, from memory of the
    // source); try that first and decimal GB second.
    for (binary, unit) in [(true, "GiB (SGLang's GB = 2^30)"), (false, "decimal GB")] {
        let lo: u64 = sizes.iter().map(|z| z.value.bytes_range(binary).0).sum();
        let hi: u64 = sizes.iter().map(|z| z.value.bytes_range(binary).1).sum();
        // SGLang allocates one page more than #tokens (a padding slot): negligible, ignored.
        let (pmin, pmax) = (lo / t, hi.div_ceil(t));
        let model_bpt = base.bytes_per_token_per_rank;
        if (pmin..=pmax).contains(&model_bpt) {
            r.implied_bytes_per_token_min = Some(pmin);
            r.implied_bytes_per_token_max = Some(pmax);
            if r.verdict == Verdict::NotEnoughData {
                r.verdict = Verdict::Match;
            }
            out.push(ex(
                Why::Sglang,
                Some(tokens.line),
                format!(
                    "SGLang's pool: {} over {} tokens = {}–{} B per token (sizes read as {unit}); the model needs {} B \
                     per token per GPU — consistent (SGLang keeps no blocks and no window cap)",
                    sizes.iter().map(|z| z.value.to_string()).collect::<Vec<_>>().join(" + "),
                    fmt_int(t),
                    fmt_int(pmin),
                    fmt_int(pmax),
                    fmt_int(model_bpt)
                ),
            ));
            return Ok(());
        }
    }
    let lo: u64 = sizes.iter().map(|z| z.value.bytes_range(true).0).sum();
    let hi: u64 = sizes.iter().map(|z| z.value.bytes_range(true).1).sum();
    let (pmin, pmax) = (lo / t, hi.div_ceil(t));
    r.implied_bytes_per_token_min = Some(pmin);
    r.implied_bytes_per_token_max = Some(pmax);
    for d in [KvDtype::Fp8, KvDtype::Bf16, KvDtype::Fp32] {
        let alt = KvOptions { kv_dtype: d, ..o.clone() };
        if let Ok(e) = estimate(model, &alt, &KvBudget::Available(0))
            && (pmin..=pmax).contains(&e.bytes_per_token_per_rank)
        {
            if r.verdict == Verdict::NotEnoughData {
                r.verdict = Verdict::Explained;
            }
            out.push(ex(
                Why::KvDtype,
                Some(tokens.line),
                format!(
                    "SGLang's pool holds {}–{} B per token: a {} KV cache ({} B per token per GPU), not {} B",
                    fmt_int(pmin),
                    fmt_int(pmax),
                    d.as_str(),
                    fmt_int(e.bytes_per_token_per_rank),
                    fmt_int(base.bytes_per_token_per_rank)
                ),
            ));
            return Ok(());
        }
    }
    if r.verdict == Verdict::NotEnoughData {
        r.verdict = Verdict::Mismatch;
    }
    out.push(ex(
        Why::Unexplained,
        Some(tokens.line),
        format!(
            "SGLang's pool holds {}–{} B per token but the model needs {} B per token per GPU: a different model, \
             TP size or dtype was served",
            fmt_int(pmin),
            fmt_int(pmax),
            fmt_int(base.bytes_per_token_per_rank)
        ),
    ));
    Ok(())
}

/// Explain fatal lines; `Some(agrees)` when vLLM printed an estimated maximum length to compare.
fn fatal(s: &StartupCapacity, layout: &Layout, e: &KvEstimate, out: &mut Vec<Explanation>) -> Option<bool> {
    let mnbt = e.settings.max_num_batched_tokens;
    let mut agreement = None;
    for f in &s.fatal {
        let msg = match &f.value {
            Fatal::KvNeededExceedsAvailable { max_seq_len, needed, available, estimated_max_len } => {
                let len = max_seq_len.unwrap_or(e.settings.max_model_len);
                let ours = layout.request_bytes(len, mnbt);
                let mut m = format!(
                    "vLLM refused to start: one request of {} tokens needs {} of KV per GPU{}, more than the {} \
                     available",
                    fmt_int(len),
                    needed.map_or_else(|| fmt_gib(ours), |n| n.to_string()),
                    needed.map_or(String::new(), |_| format!(" (this estimate: {})", fmt_gib(ours))),
                    available.map_or("(unknown)".to_owned(), |a| a.to_string())
                );
                if let Some(a) = available {
                    // The printed figure is rounded: the longest fitting length is a range too.
                    let (lo, hi) = a.bytes_range(false);
                    let fit_lo = layout.max_len_fitting(lo, mnbt);
                    let fit_hi = layout.max_len_fitting(hi, mnbt);
                    let ours = match (fit_lo, fit_hi) {
                        (Some(x), Some(y)) if x == y => fmt_int(x),
                        (Some(x), Some(y)) => format!("{}–{}", fmt_int(x), fmt_int(y)),
                        _ => "any length".to_owned(),
                    };
                    let agrees = match (estimated_max_len, fit_lo, fit_hi) {
                        (Some(v), Some(x), Some(y)) if (x..=y).contains(v) => {
                            agreement = Some(true);
                            " — the same"
                        }
                        (Some(_), _, _) => {
                            agreement = Some(false);
                            " — differs: check the model, dtype and TP"
                        }
                        _ => "",
                    };
                    let est = estimated_max_len
                        .map_or(String::new(), |x| format!("vLLM estimates {}; ", fmt_int(x)));
                    m.push_str(&format!(
                        "; longest that fits: {est}this estimate {ours}{agrees}. Fix: --max-model-len at most \
                         that, or raise gpu_memory_utilization, add GPUs (--tp), or halve the cache with \
                         --kv-cache-dtype fp8"
                    ));
                }
                m
            }
            Fatal::MaxSeqLenExceedsKv { max_seq_len, kv_tokens } => format!(
                "vLLM (V0) refused to start: max seq len {} is more than the {} tokens the KV cache holds; lower \
                 --max-model-len to at most {} or free memory for KV",
                max_seq_len.map_or("?".to_owned(), fmt_int),
                kv_tokens.map_or("?".to_owned(), fmt_int),
                kv_tokens.map_or("?".to_owned(), fmt_int)
            ),
            Fatal::NoMemoryForCacheBlocks => {
                "vLLM found no memory for KV at all: weights + activation peak + \
                 non-torch memory exceed total × gpu_memory_utilization — quantize, add GPUs (--tp), lower \
                 max_num_batched_tokens, or raise gpu_memory_utilization"
                    .to_owned()
            }
            Fatal::FreeMemoryBelowUtilization => {
                "another process holds GPU memory that gpu_memory_utilization \
                 counted on: free the GPU (nvidia-smi shows who) or lower gpu_memory_utilization"
                    .to_owned()
            }
        };
        out.push(ex(Why::Fatal, Some(f.line), msg));
    }
    agreement
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::presets::preset;
    use crate::kv::startup::parse_startup;

    const BRIEF_LINES: &str = "INFO [gpu_worker.py:227] Available KV cache memory: 54.62 GiB\n\
         INFO [kv_cache_utils.py:715] GPU KV cache size: 447,088 tokens\n\
         INFO [kv_cache_utils.py:719] Maximum concurrency for 32,768 tokens per request: 13.64x\n";

    #[test]
    fn llama_3_1_8b_brief_lines() {
        let m = preset("llama-3.1-8b").unwrap().shape().unwrap();
        let s = parse_startup(BRIEF_LINES);
        let r = reconcile(&m, &KvOptions::default(), &s).unwrap();
        assert_eq!(r.logged_tokens, Some(447_088));
        // 54.615–54.625 GiB buys 447,392–447,488 tokens.
        assert_eq!((r.expected_tokens_min, r.expected_tokens_max), (Some(447_392), Some(447_488)));
        // FIXME(upstream data): the brief's pair is 19 blocks apart — more than rounding allows.
        // The estimator reports it as unexplained, with the model shape confirmed.
        assert_eq!(r.difference_tokens, Some(-304));
        assert_eq!(r.difference_blocks, Some(-19));
        assert_eq!(r.within_one_block, Some(false));
        assert_eq!(r.verdict, Verdict::Mismatch);
        let un = r.explanations.iter().find(|e| e.why == Why::Unexplained).unwrap();
        assert!(un.message.contains("within 0.5 %"), "{}", un.message);
        assert!(r.explanations.iter().any(|e| e.why == Why::LogRounding && e.message.contains("±")));
        let c = r.explanations.iter().find(|e| e.why == Why::Concurrency).unwrap();
        assert!(c.message.starts_with("consistent") && c.message.contains("13.64x"), "{}", c.message);
    }

    #[test]
    fn exact_available_memory_matches() {
        let m = preset("llama-3.1-8b").unwrap().shape().unwrap();
        // The memory 447,088 tokens occupy, printed the way vLLM prints it (54.58 GiB).
        let s = parse_startup("Available KV cache memory: 54.58 GiB\nGPU KV cache size: 447,088 tokens\n");
        let r = reconcile(&m, &KvOptions::default(), &s).unwrap();
        assert_eq!(r.verdict, Verdict::Match);
        assert_eq!(r.within_one_block, Some(true));
    }

    #[test]
    fn fp8_cache_is_recognised() {
        let m = preset("llama-3.1-8b").unwrap().shape().unwrap();
        let s = parse_startup("Available KV cache memory: 54.58 GiB\nGPU KV cache size: 894,176 tokens\n");
        let r = reconcile(&m, &KvOptions::default(), &s).unwrap();
        assert_eq!(r.verdict, Verdict::Explained);
        assert!(r.explanations.iter().any(|e| e.why == Why::KvDtype && e.message.contains("fp8")));
    }

    #[test]
    fn mla_replication_is_explained() {
        let m = preset("deepseek-v3").unwrap().shape().unwrap();
        // 40.00 GiB on each of 8 ranks, FlashMLA block size 64: floor(40 GiB / (64 × 1152 × 61)) blocks.
        let blocks = 40 * (1u64 << 30) / (64 * 1152 * 61);
        let text = format!(
            "--tensor-parallel-size 8\nForcing kv cache block size to 64 for FlashMLA backend.\n\
             Available KV cache memory: 40.00 GiB\nGPU KV cache size: {} tokens\n",
            fmt_int(blocks * 64)
        );
        let r = reconcile(&m, &KvOptions::default(), &parse_startup(&text)).unwrap();
        assert_eq!(r.verdict, Verdict::Match, "{:?}", r.explanations);
        assert!(r.explanations.iter().any(|e| e.why == Why::MlaReplication));
        assert_eq!(r.bytes_per_token_per_rank, 70_272);
    }

    #[test]
    fn v0_budget_and_fatal_lines() {
        let m = preset("llama-3.1-8b").unwrap().shape().unwrap();
        let s = parse_startup(
            "total_gpu_memory (79.19GiB) x gpu_memory_utilization (0.90) = 71.27GiB\n\
             model weights take 14.99GiB; non_torch_memory takes 0.18GiB; PyTorch activation peak memory takes 1.24GiB; the rest of the memory reserved for KV Cache is 54.86GiB.\n\
             ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (9.78 GiB). Based on the available memory, the estimated maximum model length is 80112.\n",
        );
        let r = reconcile(&m, &KvOptions::default(), &s).unwrap();
        let b = r.explanations.iter().find(|e| e.why == Why::Budget).unwrap();
        assert!(b.message.contains("matches"), "{}", b.message);
        let f = r.explanations.iter().find(|e| e.why == Why::Fatal).unwrap();
        assert!(
            f.message.contains("16.00 GiB") && f.message.contains("80,112") && f.message.contains("the same"),
            "{}",
            f.message
        );
        assert_eq!(f.line, Some(3));
    }

    #[test]
    fn nothing_to_compare() {
        let m = preset("llama-3.1-8b").unwrap().shape().unwrap();
        let r = reconcile(&m, &KvOptions::default(), &parse_startup("hello\nworld")).unwrap();
        assert_eq!(r.verdict, Verdict::NotEnoughData);
        assert!(r.explanations.iter().any(|e| e.message.contains("no capacity lines")));
    }
}
