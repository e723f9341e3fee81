//! One KV question as plain data (`KvRequest`), answered the same way by every surface: the
//! CLI fills it from flags, the site from its form, so both print the same numbers.

use crate::budget::BudgetInputs;
use crate::defaults;
use crate::dtype::{KvDtype, ModelDtype, WeightDtype};
use crate::estimate::{KvBudget, KvOptions, Need};
use crate::gpus::gpu;
use crate::hf_config::{ConfigOptions, parse_config};
use crate::model::ModelShape;
use crate::presets::preset;
use crate::reconcile::{merge_logged_settings, reconcile};
use crate::report::KvReport;
use crate::startup::parse_startup;
use crate::units::{Decimal, GIB, fmt_gib, parse_fraction_ppm, parse_gib};
use crate::{KvError, estimate};
use serde::{Deserialize, Serialize};
use triage_base::lang::Lang;

/// The GPU assumed when none is named and no KV figure is given.
pub const DEFAULT_GPU: &str = "h100";

/// Everything `triage kv` takes, as values (sizes as the user typed them: `54.62`, `0.9`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KvRequest {
    /// A preset name (used when no config text is given).
    pub model: Option<String>,
    /// `--kv-cache-dtype`: auto, bf16, fp16, fp32, fp8, fp8_e4m3, fp8_e5m2, fp8_ds_mla.
    pub kv_dtype: String,
    /// Serving dtype (bf16, fp16, fp32); `None`: the config's.
    pub dtype: Option<String>,
    /// Tensor-parallel size.
    pub tp: u32,
    /// Pipeline-parallel size.
    pub pp: u32,
    /// Tokens per KV block; `None`: vLLM's default for the model.
    pub block_size: Option<u32>,
    /// `--max-model-len`; `None`: the config's longest context.
    pub max_model_len: Option<u64>,
    /// `--max-num-seqs`; `None`: vLLM's default for the GPU.
    pub max_num_seqs: Option<u64>,
    /// `--max-num-batched-tokens`; `None`: vLLM's default for the GPU.
    pub max_num_batched_tokens: Option<u64>,
    /// GPU preset name (`h200`, `a100-80gb`, …).
    pub gpu: Option<String>,
    /// Total GPU memory in GiB as CUDA reports it, as typed.
    pub gpu_mem_gib: Option<String>,
    /// `--gpu-memory-utilization`, as typed (`0.9`).
    pub gpu_memory_utilization: String,
    /// Parameters in billions, as typed.
    pub params_b: Option<String>,
    /// Weights of the whole model in GiB, as typed (split over TP × PP).
    pub weights_gib: Option<String>,
    /// Weight storage (bf16, fp8, int4, mxfp4, …); `None`: the config's quantization or dtype.
    pub weights_dtype: Option<String>,
    /// Activation peak per GPU in GiB, as typed.
    pub activation_gib: Option<String>,
    /// Memory outside PyTorch per GPU in GiB (NCCL, cuBLAS), as typed.
    pub non_torch_gib: Option<String>,
    /// KV memory per GPU in GiB, as typed: skips the budget.
    pub available_kv_gib: Option<String>,
    /// The request length concurrency is given at; `None`: max_model_len.
    pub at_len: Option<u64>,
    /// The reverse question, `SEQSxLEN` (`64x4096`): memory for that many sequences of that length.
    pub need: Option<String>,
    /// Model vLLM's hybrid KV-cache manager as disabled (sliding layers allocated as full).
    pub no_hybrid: bool,
    /// Accept conventional defaults for fields missing from config.json (listed as assumptions).
    pub assume_defaults: bool,
    /// vLLM's `--no-async-scheduling` (one batch in flight per pipeline stage instead of
    /// stages + 1). Missing in older serialized requests: off.
    #[serde(default)]
    pub no_async_scheduling: bool,
}

impl Default for KvRequest {
    fn default() -> Self {
        KvRequest {
            model: None,
            kv_dtype: defaults::KV_DTYPE.as_str().to_owned(),
            dtype: None,
            tp: defaults::TP,
            pp: defaults::PP,
            block_size: None,
            max_model_len: None,
            max_num_seqs: None,
            max_num_batched_tokens: None,
            gpu: None,
            gpu_mem_gib: None,
            gpu_memory_utilization: defaults::gpu_memory_utilization(),
            params_b: None,
            weights_gib: None,
            weights_dtype: None,
            activation_gib: None,
            non_torch_gib: None,
            available_kv_gib: None,
            at_len: None,
            need: None,
            no_hybrid: !defaults::HYBRID,
            assume_defaults: false,
            no_async_scheduling: !defaults::ASYNC_SCHEDULING,
        }
    }
}

/// `64x4096` → 64 sequences of 4096 tokens.
pub fn parse_need(s: &str) -> Result<Need, KvError> {
    let bad = || KvError::invalid("--need", format!("{s:?}"), "expected SEQSxLEN, e.g. 64x4096");
    let (a, b) = s.split_once(['x', 'X', '*', '×']).ok_or_else(bad)?;
    let seqs: u64 = a.trim().replace([',', '_'], "").parse().map_err(|_| bad())?;
    let len: u64 = b.trim().replace([',', '_'], "").parse().map_err(|_| bad())?;
    if seqs == 0 || len == 0 {
        return Err(KvError::invalid("--need", s, "sequences and length must both be at least 1"));
    }
    Ok(Need { seqs, len })
}

/// A parameter count typed in billions (`8`, `70.6`), as parameters; `field` names the option in errors.
pub fn parse_billions(field: &str, s: &str) -> Result<u64, KvError> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(KvError::invalid(field, t, "a parameter count cannot be negative"));
    }
    let d = Decimal::parse(t)
        .ok_or_else(|| KvError::invalid(field, format!("{t:?}"), "expected billions, e.g. 8.03"))?;
    let n = d.times_round(1_000_000_000);
    if n == 0 || n > 100_000_000_000_000 {
        return Err(KvError::invalid(field, t, "must be between 0 and 100,000 billion parameters"));
    }
    Ok(n)
}

fn model_shape(req: &KvRequest, config: Option<&str>, lang: Lang) -> Result<ModelShape, KvError> {
    match (config, &req.model) {
        (Some(text), _) => parse_config(text, &ConfigOptions { assume_defaults: req.assume_defaults, lang }),
        (None, Some(name)) => preset(name)?.shape_in(lang),
        (None, None) => Err(KvError::invalid(
            "model",
            "none",
            "pass --config config.json (or - for stdin) or --model PRESET (see --list-models)",
        )),
    }
}

/// Everything `triage kv` computes, from already-read inputs (text in English).
pub fn build_report(req: &KvRequest, config: Option<&str>, log: Option<&str>) -> Result<KvReport, KvError> {
    build_report_in(req, config, log, Lang::En)
}

/// [`build_report`] with the assumptions, warnings and formula lines written in `lang` (the
/// numbers are the same; input errors stay English, as the CLI prints them).
pub fn build_report_in(
    req: &KvRequest,
    config: Option<&str>,
    log: Option<&str>,
    lang: Lang,
) -> Result<KvReport, KvError> {
    let model = model_shape(req, config, lang)?;
    let startup = log.map(parse_startup);

    let mut opts = KvOptions {
        kv_dtype: KvDtype::parse(&req.kv_dtype)?,
        dtype: req
            .dtype
            .as_deref()
            .map(|d| ModelDtype::parse(d).ok_or_else(|| KvError::UnknownDtype(d.to_owned())))
            .transpose()?,
        tp: req.tp,
        pp: req.pp,
        block_size: req.block_size,
        max_model_len: req.max_model_len,
        max_num_seqs: req.max_num_seqs,
        max_num_batched_tokens: req.max_num_batched_tokens,
        hybrid: !req.no_hybrid,
        async_scheduling: !req.no_async_scheduling,
        at_len: req.at_len,
        need: req.need.as_deref().map(parse_need).transpose()?,
        large_gpu: None,
        lang,
    };
    let mut log_notes = Vec::new();
    if let Some(s) = &startup {
        let (merged, notes) = merge_logged_settings(&opts, s);
        opts = merged;
        log_notes =
            notes.into_iter().map(|n| format!("{} (line {})", n.message, n.line.unwrap_or(0))).collect();
    }

    let utilization_ppm = parse_fraction_ppm("--gpu-memory-utilization", &req.gpu_memory_utilization)?;
    let gib = |field: &str, v: &Option<String>| v.as_deref().map(|s| parse_gib(field, s)).transpose();
    let available = gib("--available-kv-gib", &req.available_kv_gib)?;
    let gpu_mem = gib("--gpu-mem-gib", &req.gpu_mem_gib)?;
    let weights = gib("--weights-gib", &req.weights_gib)?;
    let activation = gib("--activation-gib", &req.activation_gib)?;
    let non_torch = gib("--non-torch-gib", &req.non_torch_gib)?;
    let params = req.params_b.as_deref().map(|p| parse_billions("--params-b", p)).transpose()?;
    let weights_dtype = req.weights_dtype.as_deref().map(WeightDtype::parse).transpose()?;
    let preset_gpu = req.gpu.as_deref().map(gpu).transpose()?;
    let mut extra = Vec::new();

    let logged_available = startup.as_ref().and_then(|s| {
        crate::reconcile::logged_available(s)
            .map(|(a, _, _)| (a.value.bytes(false), a.value.to_string(), a.line))
    });
    let budget = if let Some(b) = available {
        KvBudget::Available(b)
    } else if preset_gpu.is_none() && gpu_mem.is_none() && logged_available.is_some() {
        let (bytes, printed, line) = logged_available.clone().unwrap_or_default();
        extra.push(lang.pick(
            format!("KV memory from the log: {printed} (line {line})"),
            format!("KV 显存取自日志：{printed}（第 {line} 行）"),
        ));
        KvBudget::Available(bytes)
    } else {
        let (total, large) = match (gpu_mem, preset_gpu) {
            (Some(t), _) => (t, t >= 70 * GIB && !preset_gpu.is_some_and(|g| g.id.starts_with("a100"))),
            (None, Some(g)) => (g.total_bytes(), g.large_defaults),
            (None, None) => {
                let g = gpu(DEFAULT_GPU)?;
                let (name, total) = (g.name, fmt_gib(g.total_bytes()));
                extra.push(lang.pick(
                    format!(
                        "no --gpu, --gpu-mem-gib or --available-kv-gib: one {name} assumed ({total} as CUDA reports it)"
                    ),
                    format!("未指定 --gpu、--gpu-mem-gib 或 --available-kv-gib：按一张 {name} 计算（CUDA 报告的 {total}）"),
                ));
                (g.total_bytes(), g.large_defaults)
            }
        };
        if let Some(g) = preset_gpu {
            let (id, total, src) = (g.id, fmt_gib(g.total_bytes()), g.source_in(lang));
            extra.push(
                lang.pick(
                    format!("gpu {id}: {total} total ({src})"),
                    format!("gpu {id}：共 {total}（{src}）"),
                ),
            );
        }
        opts.large_gpu = Some(large);
        KvBudget::Gpu(BudgetInputs {
            gpu_total_bytes: total,
            utilization_ppm,
            weights_bytes: weights,
            params,
            weights_dtype,
            activation_bytes: activation,
            non_torch_bytes: non_torch,
        })
    };

    let from_log = matches!(budget, KvBudget::Available(_)) && available.is_none();
    let mut est = estimate(&model, &opts, &budget)?;
    if from_log && let Some((_, _, line)) = &logged_available {
        est.available_kv_source = format!("log line {line}");
    }
    est.assumptions.extend(log_notes);
    est.assumptions.extend(extra);
    // The logged count depends on max_model_len: without it there is nothing to compare, and
    // `missing` says so.
    let rec = match &startup {
        Some(_) if est.settings.max_model_len.is_none() => {
            if let Some(m) = est.missing.iter_mut().find(|m| m.figure == "max_model_len") {
                m.fields.push("reconcile");
            }
            None
        }
        Some(s) => Some(reconcile(&model, &opts, s)?),
        None => None,
    };
    Ok(KvReport::new(est, rec))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn need_parses() {
        assert_eq!(parse_need("64x4096").unwrap(), Need { seqs: 64, len: 4096 });
        assert_eq!(parse_need("8 × 32,768").unwrap(), Need { seqs: 8, len: 32_768 });
        assert!(parse_need("64").is_err());
        assert!(parse_need("0x10").is_err());
    }

    #[test]
    fn billions_parse() {
        assert_eq!(parse_billions("p", "8.03").unwrap(), 8_030_000_000);
        assert!(parse_billions("p", "-1").unwrap_err().to_string().contains("negative"));
    }

    #[test]
    fn the_default_request_needs_a_model() {
        let e = build_report(&KvRequest::default(), None, None).unwrap_err();
        assert!(e.to_string().contains("--model"), "{e}");
        let r = build_report(
            &KvRequest {
                model: Some("llama-3.1-8b".into()),
                available_kv_gib: Some("54.62".into()),
                ..KvRequest::default()
            },
            None,
            None,
        )
        .unwrap();
        assert_eq!((r.estimate.bytes_per_token, r.estimate.tokens), (131_072, Some(447_440)));
    }

    /// Llama-3.1-8B's shape with `drop` removed from its config.
    fn llama_without(drop: &[&str]) -> String {
        let mut v = serde_json::json!({
            "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
            "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
            "tie_word_embeddings": false, "torch_dtype": "bfloat16"
        });
        for k in drop {
            v.as_object_mut().unwrap().remove(*k);
        }
        v.to_string()
    }

    fn report(cfg: &str, req: KvRequest) -> KvReport {
        build_report(&req, Some(cfg), None).unwrap()
    }

    fn figures(r: &KvReport) -> Vec<(&'static str, &'static [&'static str])> {
        r.estimate.missing.iter().map(|m| (m.figure, Vec::leak(m.fields.clone()) as &[_])).collect()
    }

    /// The JSON fields that are null, of those a partial config may leave unknown.
    fn nulls(r: &KvReport) -> Vec<&'static str> {
        let v = serde_json::to_value(r).unwrap();
        [
            "settings.max_model_len",
            "budget.weights_bytes",
            "budget.activation_bytes",
            "budget.available_kv_bytes",
            "budget.shortfall_bytes",
            "available_kv_bytes",
            "blocks",
            "tokens",
            "legacy_tokens",
            "concurrency_len",
            "blocks_per_request",
            "max_concurrency",
            "max_concurrency_whole",
            "max_model_len_fit",
            "max_num_seqs",
            "need.fits",
            "need.gpu_bytes_per_rank",
        ]
        .into_iter()
        .filter(|path| {
            let mut at = &v;
            for k in path.split('.') {
                at = &at[k];
            }
            at.is_null() && (!path.contains('.') || !v[path.split('.').next().unwrap()].is_null())
        })
        .collect()
    }

    #[test]
    fn no_context_length_answers_everything_but_what_needs_max_model_len() {
        let cfg = llama_without(&["max_position_embeddings"]);
        let given = KvRequest { available_kv_gib: Some("54.62".into()), ..KvRequest::default() };
        let r = report(&cfg, given.clone());
        let e = &r.estimate;
        assert_eq!((e.bytes_per_token, e.bytes_per_token_per_rank), (131_072, 131_072));
        assert_eq!(e.layers[0].bytes_per_token_per_layer, 4096);
        assert_eq!((e.blocks, e.legacy_tokens), (Some(27_965), Some(27_965 * 16)));
        assert_eq!(
            e.max_model_len_fit,
            Some(447_424),
            "the longest request that fits needs no max_model_len"
        );
        assert_eq!(
            nulls(&r),
            [
                "settings.max_model_len",
                "tokens",
                "concurrency_len",
                "blocks_per_request",
                "max_concurrency",
                "max_concurrency_whole",
                "max_num_seqs"
            ]
        );
        assert_eq!(
            figures(&r),
            [
                ("max_model_len", &["settings.max_model_len", "tokens", "max_num_seqs"][..]),
                (
                    "concurrency_len",
                    &["concurrency_len", "blocks_per_request", "max_concurrency", "max_concurrency_whole"]
                ),
            ]
        );
        assert_eq!(e.missing[0].settle_with, ["--max-model-len", "config.max_position_embeddings"]);
        assert!(e.missing[1].settle_with.contains(&"--at-len".to_owned()));
        // The formula shows the lines it can: bytes and blocks, not tokens.
        assert!(e.formula.iter().any(|l| l.starts_with("num_blocks = floor")));
        assert!(!e.formula.iter().any(|l| l.starts_with("tokens") || l.starts_with("max concurrency")));
        let v = serde_json::to_value(&r).unwrap();
        assert!(v["tokens"].is_null() && v["settings"]["max_model_len"].is_null());
        assert_eq!(v["missing"][0]["figure"], "max_model_len");

        // --at-len answers the concurrency; --max-model-len answers everything, as the full config does.
        let r = report(&cfg, KvRequest { at_len: Some(32_768), ..given.clone() });
        assert_eq!((r.estimate.max_concurrency, r.estimate.blocks_per_request), (Some(13.65), Some(2048)));
        assert_eq!(figures(&r).iter().map(|f| f.0).collect::<Vec<_>>(), ["max_model_len"]);
        let with_len = KvRequest { max_model_len: Some(32_768), ..given };
        let r = report(&cfg, with_len.clone());
        let full = report(&llama_without(&[]), with_len);
        assert!(r.estimate.missing.is_empty() && nulls(&r).is_empty());
        assert_eq!(r.estimate.tokens, Some(447_440));
        assert_eq!(
            (r.estimate.blocks, r.estimate.tokens, r.estimate.max_num_seqs),
            (full.estimate.blocks, full.estimate.tokens, full.estimate.max_num_seqs)
        );
        assert!(!serde_json::to_string(&full).unwrap().contains("\"missing\""), "absent when nothing is");

        // With a GPU budget (the weights and activation are counted from the config).
        let r = report(&cfg, KvRequest { gpu: Some("h100".into()), ..KvRequest::default() });
        assert!(r.estimate.blocks.is_some() && r.estimate.budget.as_ref().unwrap().weights_bytes.is_some());
        assert_eq!(figures(&r).iter().map(|f| f.0).collect::<Vec<_>>(), ["max_model_len", "concurrency_len"]);
    }

    #[test]
    fn no_vocab_or_mlp_size_leaves_the_gpu_budget_open_not_the_bytes() {
        for (drop, fields) in [
            (&["vocab_size"][..], "config.vocab_size"),
            (&["intermediate_size"][..], "config.intermediate_size"),
            (&["vocab_size", "intermediate_size"][..], "config.vocab_size + config.intermediate_size"),
        ] {
            let cfg = llama_without(drop);
            let gpu = KvRequest {
                gpu: Some("h100".into()),
                max_model_len: Some(32_768),
                need: Some("8x4096".into()),
                ..KvRequest::default()
            };
            let r = report(&cfg, gpu.clone());
            let e = &r.estimate;
            assert_eq!(e.bytes_per_token, 131_072, "{drop:?}");
            assert_eq!(
                e.blocks_per_request,
                Some(2048),
                "{drop:?}: a request's blocks need no memory figure"
            );
            assert_eq!(e.need.as_ref().unwrap().kv_bytes_per_rank, 8 * 256 * 2 * 1024 * 1024);
            let b = e.budget.as_ref().unwrap();
            assert_eq!(b.requested_bytes, crate::gpus::gpu("h100").unwrap().total_bytes() * 9 / 10);
            assert_eq!(
                nulls(&r),
                [
                    "budget.weights_bytes",
                    "budget.activation_bytes",
                    "budget.available_kv_bytes",
                    "budget.shortfall_bytes",
                    "available_kv_bytes",
                    "blocks",
                    "tokens",
                    "legacy_tokens",
                    "max_concurrency",
                    "max_concurrency_whole",
                    "max_model_len_fit",
                    "max_num_seqs",
                    "need.fits",
                    "need.gpu_bytes_per_rank",
                ],
                "{drop:?}"
            );
            let m = &e.missing;
            assert_eq!(
                m.iter().map(|m| m.figure).collect::<Vec<_>>(),
                ["budget.weights_bytes", "budget.activation_bytes", "available_kv_bytes"]
            );
            assert_eq!(m[0].settle_with, ["--weights-gib", "--params-b", fields], "{drop:?}");
            assert_eq!(m[1].settle_with, ["--activation-gib", fields], "{drop:?}");
            assert_eq!(m[2].settle_with, ["--available-kv-gib"]);
            assert_eq!(m[2].follows_from, ["budget.weights_bytes", "budget.activation_bytes"]);
            assert!(m[2].fields.contains(&"need.fits") && m[0].fields.contains(&"need.gpu_bytes_per_rank"));
            assert!(e.assumptions.iter().any(|a| a.contains("weights unknown")), "{:?}", e.assumptions);
            assert!(!e.formula.iter().any(|l| l.starts_with("num_blocks")));

            // --params-b settles the weights; the activation peak is still open.
            let r = report(&cfg, KvRequest { params_b: Some("8.03".into()), ..gpu.clone() });
            assert_eq!(
                r.estimate.missing.iter().map(|m| m.figure).collect::<Vec<_>>(),
                ["budget.activation_bytes", "available_kv_bytes"]
            );
            assert_eq!(r.estimate.missing[1].follows_from, ["budget.activation_bytes"]);
            // Both terms given: everything is known.
            let both = KvRequest {
                weights_gib: Some("14.96".into()),
                activation_gib: Some("1.24".into()),
                ..gpu.clone()
            };
            assert!(report(&cfg, both).estimate.missing.is_empty());
            // --available-kv-gib makes the weights irrelevant: the full config's figures.
            let given = KvRequest { available_kv_gib: Some("54.62".into()), ..gpu };
            let (r, full) = (report(&cfg, given.clone()), report(&llama_without(&[]), given));
            assert!(r.estimate.missing.is_empty(), "{drop:?}");
            // Null as with a full config: no GPU budget to add the KV to.
            assert_eq!(nulls(&r), ["need.gpu_bytes_per_rank"], "{drop:?}");
            assert_eq!(
                serde_json::to_value(&r).unwrap()["tokens"],
                serde_json::to_value(&full).unwrap()["tokens"]
            );
            assert_eq!(r.estimate.tokens, Some(447_440));
        }
    }

    #[test]
    fn nothing_but_the_attention_shape_still_answers_bytes_per_token() {
        let cfg = llama_without(&["vocab_size", "intermediate_size", "max_position_embeddings"]);
        let r = report(&cfg, KvRequest::default());
        assert_eq!(r.estimate.bytes_per_token, 131_072);
        assert_eq!(
            r.estimate.missing.iter().map(|m| m.figure).collect::<Vec<_>>(),
            [
                "max_model_len",
                "concurrency_len",
                "budget.weights_bytes",
                "budget.activation_bytes",
                "available_kv_bytes"
            ]
        );
        // A startup log without max_model_len: the KV memory comes from it, the comparison is open.
        let log = "Available KV cache memory: 54.62 GiB\nGPU KV cache size: 447,088 tokens\n";
        let r = build_report(&KvRequest::default(), Some(&cfg), Some(log)).unwrap();
        assert!(r.reconcile.is_none());
        assert_eq!(r.estimate.blocks, Some(27_965));
        assert_eq!(r.estimate.missing[0].fields.last(), Some(&"reconcile"));
        assert_eq!(r.estimate.missing.len(), 2, "the log's KV memory settles the budget");
        // With max_model_len the log is compared as before.
        let req = KvRequest { max_model_len: Some(32_768), ..KvRequest::default() };
        let r = build_report(&req, Some(&cfg), Some(log)).unwrap();
        assert!(r.reconcile.is_some() && r.estimate.missing.is_empty());

        // What every figure needs is still an error that names the field (exit 2 in the CLI).
        for (drop, field) in [
            ("num_hidden_layers", "num_hidden_layers"),
            ("num_attention_heads", "num_attention_heads"),
            ("num_key_value_heads", "num_key_value_heads"),
        ] {
            let e = build_report(&KvRequest::default(), Some(&llama_without(&[drop])), None).unwrap_err();
            assert!(e.to_string().contains(field), "{e}");
        }
        let e =
            build_report(&KvRequest::default(), Some(&llama_without(&["hidden_size"])), None).unwrap_err();
        assert!(e.to_string().contains("head_dim"), "{e}");
    }

    #[test]
    fn missing_reads_in_chinese_with_the_same_figures_and_flags() {
        let cfg = llama_without(&["vocab_size", "max_position_embeddings"]);
        let req = KvRequest { need: Some("4x1024".into()), ..KvRequest::default() };
        let en = build_report(&req, Some(&cfg), None).unwrap();
        let zh = build_report_in(&req, Some(&cfg), None, Lang::Zh).unwrap();
        assert_eq!(en.estimate.missing.len(), 5);
        for (e, z) in en.estimate.missing.iter().zip(&zh.estimate.missing) {
            assert_eq!(
                (e.figure, &e.settle_with, &e.follows_from, &e.fields),
                (z.figure, &z.settle_with, &z.follows_from, &z.fields)
            );
            assert!(triage_base::lang::has_cjk(&z.why) && !triage_base::lang::has_cjk(&e.why), "{}", z.why);
            assert_eq!(numbers(&e.why), numbers(&z.why), "\n{}\n{}", e.why, z.why);
        }
        let strip = |r: &KvReport| {
            let mut v = serde_json::to_value(r).unwrap();
            for k in ["assumptions", "warnings", "formula"] {
                v[k] = serde_json::Value::Null;
            }
            for m in v["missing"].as_array_mut().unwrap() {
                m["why"] = serde_json::Value::Null;
            }
            for k in ["weights_how", "activation_how", "non_torch_how"] {
                v["budget"][k] = serde_json::Value::Null;
            }
            v
        };
        assert_eq!(strip(&en), strip(&zh));
        for (a, b) in en.estimate.assumptions.iter().zip(&zh.estimate.assumptions) {
            assert_eq!(numbers(a), numbers(b), "\n{a}\n{b}");
        }
    }

    /// The runs of digits in `s`, sorted (the numbers a text carries, whatever its word order).
    fn numbers(s: &str) -> Vec<String> {
        let mut v: Vec<String> =
            s.split(|c: char| !c.is_ascii_digit()).filter(|t| !t.is_empty()).map(str::to_owned).collect();
        v.sort();
        v
    }

    #[test]
    fn every_kv_text_has_a_chinese_form_with_the_same_numbers() {
        use crate::presets::PRESETS;
        use triage_base::lang::has_cjk;
        let mut seen = 0;
        let mut kinds = std::collections::BTreeSet::new();
        for p in PRESETS {
            for (tp, gpu, available, mml, extra) in [
                (1, Some("h100"), None, Some(32_768), false),
                (8, Some("a100-40gb"), None, Some(1_000_000), false),
                (2, None, None, None, true),
                (1, None, Some("0.5"), Some(131_072), false),
            ] {
                let req = KvRequest {
                    model: Some(p.id.to_owned()),
                    tp,
                    gpu: gpu.map(str::to_owned),
                    available_kv_gib: available.map(str::to_owned),
                    max_model_len: mml,
                    no_hybrid: extra,
                    block_size: extra.then_some(32),
                    no_async_scheduling: extra,
                    ..KvRequest::default()
                };
                let (Ok(en), Ok(zh)) =
                    (build_report(&req, None, None), build_report_in(&req, None, None, Lang::Zh))
                else {
                    continue;
                };
                let (e, z) = (&en.estimate, &zh.estimate);
                let strip = |r: &KvReport| {
                    let mut v = serde_json::to_value(r).unwrap();
                    for k in ["assumptions", "warnings", "formula"] {
                        v[k] = serde_json::Value::Null;
                    }
                    if let Some(b) = v.get_mut("budget").and_then(|b| b.as_object_mut()) {
                        for k in ["weights_how", "activation_how", "non_torch_how"] {
                            b.insert(k.to_owned(), serde_json::Value::Null);
                        }
                    }
                    v
                };
                assert_eq!(strip(&en), strip(&zh), "{}: the figures do not depend on the language", p.id);
                for (a, b) in
                    [(&e.assumptions, &z.assumptions), (&e.warnings, &z.warnings), (&e.formula, &z.formula)]
                {
                    assert_eq!(a.len(), b.len(), "{}", p.id);
                    for (en, zh) in a.iter().zip(b) {
                        assert!(has_cjk(zh), "not Chinese: {zh}");
                        assert!(!has_cjk(en), "not English: {en}");
                        assert_ne!(en, zh);
                        assert_eq!(numbers(en), numbers(zh), "\n{en}\n{zh}");
                        kinds.insert(en.split([':', '(', ' ']).next().unwrap_or("").to_owned());
                        seen += 1;
                    }
                }
            }
        }
        assert!(seen > 500 && kinds.len() > 20, "{seen} texts, {} kinds", kinds.len());
    }
}
