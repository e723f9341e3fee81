//! `triage kv` end to end: the binary on the fixtures in `tests/data/kv`, JSON and text.
//!
//! The accuracy checks: Llama-3.1-8B (131,072 B/token; the brief's 54.62 GiB / 447,088-token
//! pair), DeepSeek-V3 MLA on TP 8, Gemma 3 sliding-window groups, gpt-oss, startup logs in vLLM
//! 0.33.0's formats with figures from vLLM 0.33.0's own planning functions, the H200-measured
//! 22,528 B/token, and the article's 137.4 GB example.

use serde_json::Value;
use std::process::Output;

use crate::util::{repo, triage};

fn data(name: &str) -> String {
    repo().join("tests/data/kv").join(name).to_string_lossy().into_owned()
}

/// `triage kv ARGS`.
fn kv(args: &[&str]) -> Output {
    triage().arg("kv").args(args).output().expect("run triage")
}

fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let out = kv(&all);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

fn text(args: &[&str]) -> String {
    let out = kv(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Runs, fails with status 2, and the error names `needle`.
fn rejected(args: &[&str], needle: &str) {
    let out = kv(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: expected {needle:?} in {err}");
}

#[test]
fn llama_3_1_8b_config_file() {
    let cfg = data("llama-3.1-8b-instruct.config.json");
    let v = json(&["--config", &cfg, "--available-kv-gib", "54.62", "--max-model-len", "32768"]);
    assert_eq!(v["schema"], "triage.kv/v1");
    assert_eq!(v["bytes_per_token"], 131_072);
    assert_eq!(v["bytes_per_token_per_rank"], 131_072);
    // Whole blocks that fit in exactly 54.62 GiB: floor(58,647,778,426 / 2 MiB) = 27,965.
    assert_eq!(v["blocks"], 27_965);
    assert_eq!(v["tokens"], 447_440);
    assert_eq!(v["max_concurrency"], 13.65);
    assert_eq!(v["max_num_seqs"], 13);
    // vLLM 0.33's startup check holds one block back (the null block): 27,964 blocks.
    assert_eq!(v["max_model_len_fit"], 447_424);
    assert_eq!(v["layers"][0]["kind"], "full");
    assert_eq!(v["layers"][0]["count"], 32);
    assert!(
        v["assumptions"].as_array().unwrap().iter().any(|a| a.as_str().unwrap().contains("block size 16"))
    );
}

#[test]
fn llama_3_1_8b_reconciles_the_brief_log_lines() {
    let cfg = data("llama-3.1-8b-instruct.config.json");
    let v = json(&["--config", &cfg, "--log", &data("vllm-v1-llama-3.1-8b.log")]);
    let r = &v["reconcile"];
    assert_eq!(r["logged_tokens"], 447_088);
    assert_eq!(r["logged_tokens_line"], 3);
    // 54.62 GiB as printed stands for 54.615–54.625 GiB: 447,392–447,488 tokens.
    assert_eq!(r["expected_tokens_min"], 447_392);
    assert_eq!(r["expected_tokens_max"], 447_488);
    // FIXME(data): the brief's pair of lines is 19 blocks (304 tokens, 38–48 MiB) apart, beyond the
    // log's rounding and block rounding, and no vLLM 0.33.0 code path explains it (see the
    // FIXME in crates/kv/src/reconcile/tests.rs): the two figures are not from one run. The
    // reconciler reports it as unexplained and confirms the model shape (131,072 B/token is
    // within 0.5 % of what the log implies).
    assert_eq!(r["within_one_block"], false);
    assert_eq!(r["difference_blocks"], -19);
    assert_eq!(r["verdict"], "mismatch");
    let ex = r["explanations"].as_array().unwrap();
    assert!(
        ex.iter()
            .any(|e| e["why"] == "unexplained" && e["message"].as_str().unwrap().contains("within 0.5 %"))
    );
    // The logged 13.64x follows from the logged tokens exactly.
    assert!(
        ex.iter()
            .any(|e| e["why"] == "concurrency" && e["message"].as_str().unwrap().starts_with("consistent"))
    );
    // The settings came from the log.
    assert_eq!(v["settings"]["max_model_len"], 32_768);
}

#[test]
fn exact_memory_matches_vllm_within_one_block() {
    // The KV memory 447,088 tokens occupy is 58,601,078,784 B = 54.576 GiB, printed "54.58 GiB".
    let v =
        json(&["--model", "llama-3.1-8b", "--available-kv-gib", "54.576171875", "--max-model-len", "32768"]);
    assert_eq!(v["tokens"], 447_088);
    assert_eq!(v["max_concurrency"], 13.64);
    let log = std::env::temp_dir().join(format!("triage-kv-test-{}.log", std::process::id()));
    std::fs::write(&log, "Available KV cache memory: 54.58 GiB\nGPU KV cache size: 447,088 tokens\n")
        .unwrap();
    let v = json(&["--model", "llama-3.1-8b", "--log", log.to_str().unwrap()]);
    let _ = std::fs::remove_file(&log);
    assert_eq!(v["reconcile"]["verdict"], "match");
    assert_eq!(v["reconcile"]["within_one_block"], true);
}

#[test]
fn deepseek_v3_mla_is_replicated_across_tp() {
    let cfg = data("deepseek-v3.config.json");
    let v = json(&[
        "--config",
        &cfg,
        "--tp",
        "8",
        "--available-kv-gib",
        "40",
        "--block-size",
        "64",
        "--max-model-len",
        "65536",
    ]);
    assert_eq!(v["bytes_per_token_per_rank"], 70_272);
    assert_eq!(v["bytes_per_token"], 8 * 70_272);
    assert_eq!(v["blocks"], 9_549);
    assert_eq!(v["tokens"], 611_136);
    assert_eq!(v["layers"][0]["kind"], "mla");
    assert_eq!(v["layers"][0]["cached_dim"], 576);
    let ds = json(&["--config", &cfg, "--tp", "8", "--available-kv-gib", "40", "--kv-dtype", "fp8_ds_mla"]);
    assert_eq!(ds["bytes_per_token_per_rank"], 61 * 656);
    // The constructed TP-8 log (figures from vLLM's formulas) reconciles within one block.
    let v = json(&["--config", &cfg, "--log", &data("vllm-v1-deepseek-v3-tp8.log")]);
    assert_eq!(v["settings"]["tp"], 8);
    assert_eq!(v["settings"]["block_size"], 64);
    assert_eq!(v["reconcile"]["verdict"], "match");
    let ex = v["reconcile"]["explanations"].as_array().unwrap();
    assert!(ex.iter().any(|e| e["why"] == "mla_replication"));
}

#[test]
fn gemma_3_sliding_window_groups() {
    let cfg = data("gemma-3-27b-it.config.json");
    let args = [
        "--config",
        &cfg,
        "--available-kv-gib",
        "20",
        "--max-model-len",
        "32768",
        "--max-num-batched-tokens",
        "8192",
    ];
    let v = json(&args);
    assert_eq!(v["bytes_per_token_per_rank"], 62 * 8192);
    assert_eq!(v["bytes_per_token_past_windows_per_rank"], 10 * 8192);
    assert_eq!(v["kv_cache_groups"], 7);
    assert_eq!(v["padding_layers"], 8);
    assert_eq!(v["blocks"], 16_384);
    // vLLM 0.33 logs int(16,384 / 8582 × 32,768) (two batches of 8192 in flight); older
    // releases logged 16,384 / 7 groups × 16.
    assert_eq!(v["tokens"], 62_557);
    assert_eq!(v["legacy_tokens"], 37_440);
    assert_eq!(v["max_concurrency"], 1.91);
    assert_eq!(v["settings"]["in_flight_tokens"], 16_384);
    let sliding = v["layers"].as_array().unwrap().iter().find(|l| l["kind"] == "sliding").unwrap().clone();
    assert_eq!(sliding["count"], 52);
    assert_eq!(sliding["window"], 1024);
    // --no-async-scheduling: one batch in flight, 2.97x and 97,435 tokens.
    let v = json(&[&args[..], &["--no-async-scheduling"]].concat());
    assert_eq!((v["tokens"].as_u64(), v["max_concurrency"].as_f64()), (Some(97_435), Some(2.97)));
    // The older constructed log (older releases' formulas) still matches, and says which formula.
    let v = json(&["--config", &cfg, "--log", &data("vllm-v1-gemma-3-27b.log")]);
    assert_eq!(v["reconcile"]["verdict"], "match");
    assert_eq!(v["reconcile"]["formula"], "legacy");
    // With the hybrid manager off vLLM logs 42,272 tokens; the reconciler says why.
    let v = json(&["--config", &cfg, "--log", &data("vllm-v1-gemma-3-27b-no-hybrid.log")]);
    assert_eq!(v["reconcile"]["verdict"], "explained");
    let ex = v["reconcile"]["explanations"].as_array().unwrap();
    assert!(ex.iter().any(|e| e["why"] == "hybrid_manager"));
}

#[test]
fn gpt_oss_alternating_layers() {
    let v = json(&[
        "--config",
        &data("gpt-oss-20b.config.json"),
        "--available-kv-gib",
        "10",
        "--max-model-len",
        "131072",
    ]);
    assert_eq!(v["bytes_per_token_per_rank"], 24 * 2048);
    assert_eq!(v["kv_cache_groups"], 2);
    assert_eq!(v["padding_layers"], 0);
    // floor(10 GiB / (32,768 B × 12)) = 27,306 blocks; a 131,072-token request takes 8192 +
    // 1033 of them, so vLLM 0.33 logs int(27,306 / 9225 × 131,072); older releases 27,306 / 2 × 16.
    assert_eq!(v["blocks"], 27_306);
    assert_eq!(v["tokens"], 387_973);
    assert_eq!(v["legacy_tokens"], 218_448);
    assert_eq!(v["max_concurrency"], 2.96);
}

/// Startup logs in vLLM 0.33.0's exact formats (one capacity line), figures from vLLM 0.33.0's
/// own `get_kv_cache_configs` / `get_kv_cache_capacity` (tests/data/kv/README.md).
#[test]
fn vllm_0_33_startup_logs_reconcile_exactly() {
    for (model, log, tokens, conc) in [
        ("llama-3.1-8b", "vllm-0.33-llama-3.1-8b.log", 447_440, 13.65),
        ("llama-2-7b", "vllm-0.33-llama-2-7b-len-4095.log", 43_749, 10.68),
        ("deepseek-v3", "vllm-0.33-deepseek-v3-tp8.log", 877_504, 5.36),
        ("gemma-3-27b", "vllm-0.33-gemma-3-27b.log", 333_438, 2.54),
        ("gpt-oss-120b", "vllm-0.33-gpt-oss-120b.log", 1_825_843, 13.93),
    ] {
        let v = json(&["--model", model, "--log", &data(log)]);
        let r = &v["reconcile"];
        assert_eq!(r["logged_tokens"], tokens, "{log}");
        assert_eq!(r["verdict"], "match", "{log}: {r}");
        assert_eq!(r["formula"], "vllm_0_33", "{log}");
        assert_eq!(r["within_one_block"], true, "{log}");
        assert_eq!(r["difference_tokens"], 0, "{log}");
        // The estimate from the printed (rounded) memory lands within one block too.
        let t = v["tokens"].as_u64().unwrap();
        let step = v["settings"]["block_size"].as_u64().unwrap();
        assert!(t.abs_diff(tokens) <= step, "{log}: {t} vs {tokens}");
        assert!((v["max_concurrency"].as_f64().unwrap() - conc).abs() <= 0.011, "{log}");
    }
    let v = json(&["--model", "deepseek-v3", "--log", &data("vllm-0.33-deepseek-v3-tp8.log")]);
    assert_eq!((v["settings"]["tp"].as_u64(), v["settings"]["block_size"].as_u64()), (Some(8), Some(64)));
    assert_eq!(v["bytes_per_token_per_rank"], 61 * 1152);
}

#[test]
fn h200_measured_bytes_per_token() {
    // tests/data/kv/h200-decode-kv-bytes.json: HF generate on an H200 measured 22,528 B per cached token.
    let v = json(&["--config", &data("h200-decode-llama22.config.json"), "--available-kv-gib", "1"]);
    assert_eq!(v["bytes_per_token"], 22_528);
    let runs: Value =
        serde_json::from_str(&std::fs::read_to_string(data("h200-decode-kv-bytes.json")).unwrap()).unwrap();
    let runs = runs["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 7);
    for r in runs {
        // HF's cache holds prompt + new − 1 tokens per sequence when generation ends.
        let tokens = r["batch"].as_u64().unwrap()
            * (r["prompt_len"].as_u64().unwrap() + r["new_tokens"].as_u64().unwrap() - 1);
        assert_eq!(r["kv_cache_bytes"].as_u64().unwrap(), 22_528 * tokens, "{r}");
    }
}

#[test]
fn the_articles_7b_example() {
    let out = text(&["--model", "llama-2-7b", "--need", "64x4096", "--available-kv-gib", "200"]);
    assert!(out.contains("137.4 GB"), "{out}");
    assert!(out.contains("article's formula"), "{out}");
    let v = json(&["--model", "llama-2-7b", "--need", "64x4096", "--available-kv-gib", "200"]);
    assert_eq!(v["need"]["kv_bytes_per_rank"], 137_438_953_472u64);
    assert_eq!(v["need"]["article_bytes"], 137_438_953_472u64);
    assert_eq!(v["article_bytes_per_token"], 524_288);
}

#[test]
fn v0_profile_sglang_and_fatal_logs() {
    let cfg = data("llama-3.1-8b-instruct.config.json");
    let v = json(&["--config", &cfg, "--log", &data("vllm-v0-llama-3.1-8b-profile.log")]);
    assert_eq!(v["reconcile"]["verdict"], "match");
    assert_eq!(v["reconcile"]["logged_tokens"], 28_088 * 16);
    // V0 logs blocks: the older formula is named (0.33's gives the same here).
    assert_eq!(v["reconcile"]["formula"], "legacy");
    let ex = v["reconcile"]["explanations"].as_array().unwrap();
    assert!(ex.iter().any(|e| e["why"] == "budget" && e["message"].as_str().unwrap().contains("matches")));

    let v = json(&["--config", &cfg, "--log", &data("sglang-llama-3.1-8b.log")]);
    assert_eq!(v["reconcile"]["engine"], "sglang");
    assert_eq!(v["reconcile"]["verdict"], "match");

    let out = text(&["--config", &cfg, "--log", &data("vllm-v1-oom-max-model-len.log")]);
    assert!(out.contains("vLLM refused to start") && out.contains("80,112"), "{out}");
    assert!(out.contains("--kv-cache-dtype fp8"), "{out}");
}

#[test]
fn gpu_budget_text_states_formula_and_assumptions() {
    let out = text(&["--model", "qwen3-32b", "--gpu", "h200", "--max-model-len", "32768", "--tp", "2"]);
    for needle in ["budget/GPU", "139.80 GiB", "formula", "num_blocks = floor", "assumptions", "weights:"] {
        assert!(out.contains(needle), "{needle:?} in {out}");
    }
    let v = json(&["--model", "qwen3-32b", "--gpu", "h200", "--tp", "2"]);
    assert_eq!(v["bytes_per_token_per_rank"], 2 * 64 * 4 * 128 * 2);
    assert!(v["budget"]["available_kv_bytes"].as_u64().unwrap() > 90 * (1u64 << 30));
}

#[test]
fn lists() {
    let out = text(&["--list-models"]);
    assert!(out.lines().filter(|l| l.contains("huggingface.co")).count() >= 20, "{out}");
    let v = json(&["--list-gpus"]);
    assert!(v.as_array().unwrap().iter().any(|g| g["id"] == "h200"));
}

#[test]
fn bad_input_is_rejected_with_the_field_named() {
    let missing = std::env::temp_dir().join(format!("triage-kv-missing-{}.json", std::process::id()));
    std::fs::write(&missing, r#"{"hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32}"#)
        .unwrap();
    let path = missing.to_str().unwrap().to_owned();
    rejected(&["--config", &path, "--available-kv-gib", "10"], "num_key_value_heads");
    rejected(&["--config", &path, "--available-kv-gib", "10"], "assumed to be 32");
    // Accepting the defaults turns the error into an assumption.
    let v = json(&[
        "--config",
        &path,
        "--assume-defaults",
        "--available-kv-gib",
        "10",
        "--max-model-len",
        "4096",
    ]);
    assert_eq!(v["bytes_per_token"], 2 * 32 * 32 * 128 * 2);
    std::fs::write(
        &missing,
        r#"{"num_hidden_layers":0,"num_attention_heads":8,"num_key_value_heads":8,"head_dim":64}"#,
    )
    .unwrap();
    rejected(&["--config", &path], "at least one layer");
    let _ = std::fs::remove_file(&missing);

    rejected(&["--model", "llama-3.1-8b", "--available-kv-gib", "-3"], "negative");
    rejected(&["--model", "llama-3.1-8b", "--gpu-mem-gib", "-80"], "negative");
    rejected(&["--model", "llama-3.1-8b", "--tp", "3"], "does not divide the 32 attention heads");
    rejected(&["--model", "llama-3.1-8b", "--tp", "0"], "--tp");
    rejected(&["--model", "llama-3.1-8b", "--kv-dtype", "fp8_ds_mla"], "MLA");
    rejected(&["--model", "gpt-9"], "--list-models");
    rejected(&["--model", "llama-3.1-8b", "--gpu", "tpu-v5"], "--list-gpus");
    rejected(&["--model", "llama-3.1-8b", "--gpu-memory-utilization", "1.5"], "(0, 1]");
    rejected(&["--model", "llama-3.1-8b", "--need", "lots"], "SEQSxLEN");
    rejected(&[], "--config");
}

/// A config that lacks fields only some figures need is answered (exit 0): what it determines,
/// the rest `null` with a `missing` list in JSON and an "unknown" section in text.
#[test]
fn a_partial_config_answers_what_it_can() {
    let mut cfg: Value =
        serde_json::from_str(&std::fs::read_to_string(data("llama-3.1-8b-instruct.config.json")).unwrap())
            .unwrap();
    for k in ["max_position_embeddings", "vocab_size", "intermediate_size"] {
        cfg.as_object_mut().unwrap().remove(k);
    }
    let path = std::env::temp_dir().join(format!("triage-kv-partial-{}.json", std::process::id()));
    std::fs::write(&path, cfg.to_string()).unwrap();
    let p = path.to_str().unwrap().to_owned();

    let v = json(&["--config", &p, "--gpu", "h100"]);
    assert_eq!(v["bytes_per_token"], 131_072);
    assert_eq!(v["layers"][0]["bytes_per_token_per_layer"], 4096);
    for k in ["tokens", "blocks", "max_concurrency", "max_num_seqs", "available_kv_bytes"] {
        assert!(v[k].is_null(), "{k}: {}", v[k]);
    }
    assert!(v["settings"]["max_model_len"].is_null() && v["budget"]["weights_bytes"].is_null());
    assert!(v["budget"]["requested_bytes"].as_u64().unwrap() > 0, "the known terms of the budget are given");
    let missing = v["missing"].as_array().unwrap();
    let figures: Vec<&str> = missing.iter().map(|m| m["figure"].as_str().unwrap()).collect();
    assert_eq!(
        figures,
        [
            "max_model_len",
            "concurrency_len",
            "budget.weights_bytes",
            "budget.activation_bytes",
            "available_kv_bytes"
        ]
    );
    assert_eq!(
        missing[0]["settle_with"],
        serde_json::json!(["--max-model-len", "config.max_position_embeddings"])
    );
    assert!(missing[4]["fields"].as_array().unwrap().iter().any(|f| f == "tokens"));
    assert_eq!(missing[4]["settle_with"], serde_json::json!(["--available-kv-gib"]));

    let out = text(&["--config", &p, "--gpu", "h100"]);
    assert!(out.contains("max_model_len unknown"), "{out}");
    assert!(out.contains("\nunknown (") && out.contains("settle with --max-model-len"), "{out}");
    assert!(
        out.contains("--available-kv-gib") && out.contains("config.vocab_size + config.intermediate_size"),
        "{out}"
    );

    // --available-kv-gib and --max-model-len settle every figure: the full config's numbers.
    let v = json(&["--config", &p, "--available-kv-gib", "54.62", "--max-model-len", "32768"]);
    assert!(v.get("missing").is_none(), "{}", v["missing"]);
    assert_eq!((v["blocks"].as_u64(), v["tokens"].as_u64()), (Some(27_965), Some(447_440)));
    let _ = std::fs::remove_file(&path);
}
