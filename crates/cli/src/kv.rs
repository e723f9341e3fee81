//! `triage kv`: read a config or preset and a startup log, call the core's estimator, print.
//!
//! Files and stdin are read here; every number comes from `triage_core::kv`. Input errors
//! (bad config, absurd options) print `triage: error: …` and exit with status 2.

use crate::args::{Format, KvArgs};
use anyhow::Context;
use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;
use std::process::ExitCode;
use triage_core::kv::dtype::KvDtype;
use triage_core::kv::estimate::NeedRow;
use triage_core::kv::gpus::GPUS;
use triage_core::kv::missing::describe_in as describe_missing;
use triage_core::kv::model::ModelShape;
use triage_core::kv::presets::PRESETS;
use triage_core::kv::reconcile::{LoggedFormula, Reconciliation, Verdict};
use triage_core::kv::report::KvReport;
use triage_core::kv::request::KvRequest;
use triage_core::kv::units::{fmt_centi, fmt_gb, fmt_gib, fmt_int, fmt_size};
use triage_core::kv::{KvError, KvEstimate};
use triage_core::lang::Lang;

/// Largest config or startup log `triage kv` reads (a `config.json` is a few KiB; a startup
/// log's lines that matter come first).
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// Read a config or log (`-` is stdin). Every failure is a usage error (exit 2): a missing
/// file, a directory, binary content, more than [`MAX_INPUT_BYTES`].
fn read_input(path: &Path, what: &str) -> anyhow::Result<String> {
    let shown = path.display();
    let bytes = if path.as_os_str() == "-" {
        read_bounded(std::io::stdin().lock()).with_context(|| format!("reading the {what} from stdin"))?
    } else {
        crate::analyze::check_input(path)?;
        let f = std::fs::File::open(path).map_err(|e| crate::output::UsageError(format!("{shown}: {e}")))?;
        read_bounded(f).with_context(|| format!("reading the {what} {shown}"))?
    };
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return crate::output::usage(format!(
            "the {what} {shown} is larger than {} MiB",
            MAX_INPUT_BYTES >> 20
        ));
    }
    String::from_utf8(bytes).or_else(|e| {
        let valid = e.utf8_error().valid_up_to();
        crate::output::usage(format!(
            "the {what} {shown} is not UTF-8 text (a byte at offset {valid} is not); give the JSON config or the text log"
        ))
    })
}

/// Up to one byte more than [`MAX_INPUT_BYTES`], so "too large" can be told.
fn read_bounded(r: impl Read) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    r.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Run `triage kv`.
pub fn run(args: &KvArgs) -> anyhow::Result<ExitCode> {
    if args.list_models {
        return print(args.format, &list_models_json(), &list_models_text());
    }
    if args.list_gpus {
        return print(args.format, &list_gpus_json(), &list_gpus_text());
    }
    if args.config.as_deref().is_some_and(|c| c.as_os_str() == "-")
        && args.log.as_deref().is_some_and(|c| c.as_os_str() == "-")
    {
        return crate::output::usage("--config - and --log - cannot both read stdin");
    }
    let config = args.config.as_deref().map(|p| read_input(p, "config")).transpose()?;
    let log = args.log.as_deref().map(|p| read_input(p, "startup log")).transpose()?;
    match build_report(args, config.as_deref(), log.as_deref()) {
        Ok(report) => {
            let json = serde_json::to_string_pretty(&report)? + "\n";
            print(args.format, &json, &render_text(&report))
        }
        Err(e) => crate::output::usage(e.to_string()),
    }
}

fn print(format: Format, json: &str, text: &str) -> anyhow::Result<ExitCode> {
    match format {
        Format::Json => crate::output::json(json)?,
        Format::Text => crate::output::text(text)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The flags as the core's plain request.
pub fn request(args: &KvArgs) -> KvRequest {
    KvRequest {
        model: args.model.clone(),
        kv_dtype: args.kv_dtype.clone(),
        dtype: args.dtype.clone(),
        tp: args.tp,
        pp: args.pp,
        block_size: args.block_size,
        max_model_len: args.max_model_len,
        max_num_seqs: args.max_num_seqs,
        max_num_batched_tokens: args.max_num_batched_tokens,
        gpu: args.gpu.clone(),
        gpu_mem_gib: args.gpu_mem_gib.clone(),
        gpu_memory_utilization: args.gpu_memory_utilization.clone(),
        params_b: args.params_b.clone(),
        weights_gib: args.weights_gib.clone(),
        weights_dtype: args.weights_dtype.clone(),
        activation_gib: args.activation_gib.clone(),
        non_torch_gib: args.non_torch_gib.clone(),
        available_kv_gib: args.available_kv_gib.clone(),
        at_len: args.at_len,
        need: args.need.clone(),
        no_hybrid: args.no_hybrid,
        assume_defaults: args.assume_defaults,
        no_async_scheduling: args.no_async_scheduling,
    }
}

/// Everything `triage kv` computes, from already-read inputs.
pub fn build_report(args: &KvArgs, config: Option<&str>, log: Option<&str>) -> Result<KvReport, KvError> {
    triage_core::kv::request::build_report(&request(args), config, log)
}

/// A figure, or `unknown` (the report's `missing` section says what settles it).
fn known(v: Option<u64>) -> String {
    v.map_or_else(|| "unknown".to_owned(), fmt_int)
}

/// The report as text for a person at a terminal.
pub fn render_text(r: &KvReport) -> String {
    let e = &r.estimate;
    let s = &e.settings;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "triage kv · {} · KV {} ({} B/value) · TP {} × PP {} · block {} · max_model_len {}",
        e.model,
        match s.kv_cache_dtype {
            KvDtype::Auto => format!("auto = {}", s.serving_dtype.as_str()),
            d => d.as_str().to_owned(),
        },
        s.kv_element_bytes,
        s.tp,
        s.pp,
        s.block_size,
        known(s.max_model_len)
    );
    let _ = writeln!(out);
    let gpus = u64::from(s.tp) * u64::from(s.pp);
    let _ = writeln!(
        out,
        "  KV per token   {} B on each GPU · {} B over all {gpus} GPU(s){}",
        fmt_int(e.bytes_per_token_per_rank),
        fmt_int(e.bytes_per_token),
        if e.bytes_per_token_past_windows_per_rank != e.bytes_per_token_per_rank {
            format!(
                " · {} B per GPU once past the sliding windows",
                fmt_int(e.bytes_per_token_past_windows_per_rank)
            )
        } else {
            String::new()
        }
    );
    for l in &e.layers {
        let what = match l.kind {
            "sliding" => format!("sliding (window {})", fmt_int(l.window.unwrap_or(0))),
            k => k.to_owned(),
        };
        let heads = l.kv_heads_per_rank.map_or("latent".to_owned(), |h| format!("{h} kv heads/GPU"));
        let _ = writeln!(
            out,
            "  layers         {what} ×{} [{}]: {heads} × {} values × {} B = {} B/token each{}",
            l.count,
            l.layers,
            l.cached_dim,
            s.kv_element_bytes,
            fmt_int(l.bytes_per_token_per_layer),
            l.max_tokens_per_request
                .map_or(String::new(), |c| format!("; ≤ {} tokens per request", fmt_int(c)))
        );
    }
    capacity_text(&mut out, e);
    if let Some(n) = &e.need {
        need_text(&mut out, n);
    }
    section(
        &mut out,
        "unknown (each is settled by any one of the ways listed; config fields joined by + go together)",
        e.missing
            .iter()
            .map(|m| format!("? {}\n    null: {}", describe_missing(m, Lang::En), m.fields.join(", "))),
    );
    section(&mut out, "warnings", e.warnings.iter().map(|w| format!("! {w}")));
    section(&mut out, "formula", e.formula.iter().cloned());
    section(&mut out, "assumptions", e.assumptions.iter().map(|a| format!("- {a}")));
    if let Some(rc) = &r.reconcile {
        reconcile_text(&mut out, rc);
    }
    out
}

/// KV groups, the memory budget, the capacity in blocks and tokens, concurrency and what fits.
fn capacity_text(out: &mut String, e: &KvEstimate) {
    let s = &e.settings;
    if e.kv_cache_groups > 1 {
        let _ = writeln!(
            out,
            "  kv groups      {} groups sharing one pool of {} tensors ({} padding slot(s))",
            e.kv_cache_groups, e.pool_tensors, e.padding_layers
        );
    }
    match &e.budget {
        Some(b) => {
            let _ = writeln!(out, "  budget/GPU     {}", triage_core::kv::budget::describe(b));
        }
        None => {
            let _ = writeln!(
                out,
                "  KV memory/GPU  {} ({})",
                e.available_kv_bytes.map_or_else(|| "unknown".to_owned(), fmt_gib),
                e.available_kv_source
            );
        }
    }
    let _ = writeln!(
        out,
        "  capacity       {} blocks of {} tokens ({} each) · vLLM 0.33 logs \"GPU KV cache size: {} tokens\"{}",
        known(e.blocks),
        s.block_size,
        fmt_size(e.block_bytes),
        known(e.tokens),
        match e.legacy_tokens {
            Some(l) if Some(l) != e.tokens => format!(" (older releases: {})", fmt_int(l)),
            _ => String::new(),
        }
    );
    let _ = match (e.max_concurrency, e.concurrency_len, e.blocks_per_request, e.max_concurrency_whole) {
        (Some(c), Some(len), _, Some(whole)) => writeln!(
            out,
            "  concurrency    {c}x at {} tokens per request ({} full-length sequences at once)",
            fmt_int(len),
            fmt_int(whole)
        ),
        (_, Some(len), Some(bpr), _) => writeln!(
            out,
            "  concurrency    unknown · one {}-token request takes {} blocks ({})",
            fmt_int(len),
            fmt_int(bpr),
            fmt_size(bpr.saturating_mul(e.block_bytes))
        ),
        _ => writeln!(out, "  concurrency    unknown (no request length: pass --at-len or --max-model-len)"),
    };
    let fit = match (e.max_model_len_fit, e.available_kv_bytes) {
        (Some(f), _) => fmt_int(f),
        (None, Some(_)) => "any length (every layer slides)".to_owned(),
        (None, None) => "unknown".to_owned(),
    };
    let _ = writeln!(
        out,
        "  fits max_model_len ≤ {fit} · max_num_seqs ≤ {} keeps every {}-token sequence resident",
        known(e.max_num_seqs),
        known(s.max_model_len)
    );
}

/// What `--need` asked for: the KV memory it takes and whether it fits.
fn need_text(out: &mut String, n: &NeedRow) {
    let _ = writeln!(
        out,
        "  need {}×{}   {} of KV per GPU ({}; {} over all GPUs){}{} — {}",
        fmt_int(n.seqs),
        fmt_int(n.len),
        fmt_gib(n.kv_bytes_per_rank),
        fmt_gb(n.kv_bytes_per_rank),
        fmt_gib(n.kv_bytes_all_ranks),
        n.article_bytes.map_or(String::new(), |a| format!("; article's formula: {}", fmt_gb(a))),
        match (n.gpu_bytes_per_rank, n.gpu_memory_utilization_ppm) {
            (Some(g), Some(u)) => format!(
                "; with weights etc. {} per GPU = gpu_memory_utilization {}",
                fmt_gib(g),
                fmt_centi(u / 10_000)
            ),
            _ => String::new(),
        },
        match n.fits {
            Some(true) => "fits",
            Some(false) => "does NOT fit the KV memory",
            None => "whether it fits is unknown",
        }
    );
}

/// The estimate against the startup log's logged capacity.
fn reconcile_text(out: &mut String, rc: &Reconciliation) {
    let verdict = match rc.verdict {
        Verdict::Match if rc.within_one_block == Some(true) => "MATCH — within one block",
        Verdict::Match => "MATCH",
        Verdict::Explained => "EXPLAINED — one setting differs",
        Verdict::Mismatch => "MISMATCH — see below",
        Verdict::NotEnoughData => "nothing to compare",
    };
    let _ = writeln!(out, "\nreconcile with the startup log: {verdict}");
    if let (Some(t), Some(lo), Some(hi)) = (rc.logged_tokens, rc.expected_tokens_min, rc.expected_tokens_max)
    {
        let _ = writeln!(
            out,
            "  logged {} tokens (line {}) · estimate {}–{} from {} · difference {} tokens ({} blocks){}",
            fmt_int(t),
            rc.logged_tokens_line.unwrap_or(0),
            fmt_int(lo),
            fmt_int(hi),
            rc.available_kv_printed.as_deref().unwrap_or("?"),
            rc.difference_tokens.unwrap_or(0),
            rc.difference_blocks.unwrap_or(0),
            match rc.formula {
                Some(LoggedFormula::Legacy) => " · older vLLM's formula",
                _ => "",
            }
        );
    }
    for x in &rc.explanations {
        let line = x.line.map_or(String::new(), |l| format!("line {l}: "));
        let why =
            serde_json::to_value(x.why).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        let _ = writeln!(out, "  - [{why}] {line}{}", x.message);
    }
}

fn section(out: &mut String, title: &str, lines: impl Iterator<Item = String>) {
    let lines: Vec<String> = lines.collect();
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{title}");
    for l in lines {
        let _ = writeln!(out, "  {l}");
    }
}

fn preset_row(p: &triage_core::kv::presets::Preset) -> Option<(ModelShape, u64)> {
    let m = p.shape().ok()?;
    let bpt = p.bf16_bytes_per_token(&m).ok()?;
    Some((m, bpt))
}

fn kinds(m: &ModelShape) -> String {
    if m.mla.is_some() {
        return "mla".to_owned();
    }
    let sliding = m.layers.iter().filter(|a| matches!(a, triage_core::kv::Attention::Sliding { .. })).count();
    match sliding {
        0 => "full".to_owned(),
        n if n == m.layers.len() => "sliding".to_owned(),
        n => format!("{n} sliding + {} full", m.layers.len() - n),
    }
}

pub fn list_models_text() -> String {
    let mut out = String::from("model presets (bytes per token at bf16, one GPU)\n\n");
    let _ = writeln!(
        out,
        "  {:<18} {:>6} {:>5} {:>5} {:<20} {:>9}  source",
        "id", "layers", "kv", "dim", "attention", "B/token"
    );
    for p in PRESETS {
        if let Some((m, bpt)) = preset_row(p) {
            let _ = writeln!(
                out,
                "  {:<18} {:>6} {:>5} {:>5} {:<20} {:>9}  {}",
                p.id,
                m.num_layers(),
                if m.mla.is_some() { "-".to_owned() } else { m.num_kv_heads.to_string() },
                m.mla.map_or(m.head_dim_k, |x| x.kv_lora_rank + x.qk_rope_head_dim),
                kinds(&m),
                fmt_int(bpt),
                p.source_url()
            );
        }
    }
    out
}

fn list_models_json() -> String {
    let rows: Vec<serde_json::Value> = PRESETS
        .iter()
        .filter_map(|p| {
            let (m, bpt) = preset_row(p)?;
            Some(serde_json::json!({
                "id": p.id, "aliases": p.aliases, "source": p.source_url(), "params": p.params,
                "params_source": p.params_source, "layers": m.num_layers(), "attention": kinds(&m),
                "bytes_per_token_bf16": bpt, "max_model_len": m.max_model_len,
            }))
        })
        .collect();
    serde_json::to_string_pretty(&rows).unwrap_or_default() + "\n"
}

pub fn list_gpus_text() -> String {
    let mut out = String::from(
        "gpu presets (total memory as CUDA reports it; vLLM multiplies it by gpu_memory_utilization)\n\n",
    );
    for g in GPUS {
        let _ = writeln!(out, "  {:<10} {:<32} {:>11}  {}", g.id, g.name, fmt_gib(g.total_bytes()), g.source);
    }
    out
}

fn list_gpus_json() -> String {
    serde_json::to_string_pretty(GPUS).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listings_cover_every_preset() {
        assert_eq!(
            list_models_text().lines().filter(|l| l.contains("huggingface.co")).count(),
            PRESETS.len()
        );
        assert!(list_gpus_text().contains("139.80 GiB"));
    }
}
