//! The estimator's tests: figures vLLM 0.33's own planning functions compute, older releases'
//! formula, budgets, the reverse question, and what stays unknown.

use super::*;
use crate::presets::preset;
use crate::units::{GIB, fmt_gb, parse_gib};

fn with_available(id: &str, opts: KvOptions, gib: &str) -> KvEstimate {
    let m = preset(id).unwrap().shape().unwrap();
    estimate(&m, &opts, &KvBudget::Available(parse_gib("x", gib).unwrap())).unwrap()
}

#[test]
fn llama_3_1_8b_matches_vllm_capacity_arithmetic() {
    let o = KvOptions { max_model_len: Some(32_768), ..KvOptions::default() };
    // 447,088 tokens × 131,072 B = the KV memory those tokens occupy exactly.
    let m = preset("llama-3.1-8b").unwrap().shape().unwrap();
    let e = estimate(&m, &o, &KvBudget::Available(447_088 * 131_072)).unwrap();
    assert_eq!((e.bytes_per_token, e.bytes_per_token_per_rank), (131_072, 131_072));
    assert_eq!((e.blocks, e.tokens), (Some(27_943), Some(447_088)));
    // vLLM: "Maximum concurrency for 32,768 tokens per request: 13.64x".
    assert_eq!(e.max_concurrency, Some(13.64));
    assert_eq!((e.max_concurrency_whole, e.max_num_seqs), (Some(13), Some(13)));
    // vLLM 0.33 checks against the memory less one block (the null block): 27,942 blocks.
    assert_eq!(e.max_model_len_fit, Some(447_072));
    // 54.62 GiB as printed buys 27,965 blocks.
    let e = with_available("llama-3.1-8b", o, "54.62");
    assert_eq!((e.blocks, e.tokens), (Some(27_965), Some(447_440)));
    assert!(e.formula.iter().any(|l| l.contains("article's formula")));
}

/// vLLM 0.33.0's own arithmetic: every expected figure below was produced by running
/// `get_kv_cache_configs` (`v1/core/kv_cache_planning.py`) and `get_kv_cache_capacity`
/// (`v1/core/kv_cache_utils.py`) from the vLLM 0.33.0 wheel on these layer shapes and exact
/// byte counts (`tests/data/kv/vllm_oracle.py`; see `tests/data/kv/README.md`). Given the
/// exact bytes, blocks, the logged tokens and the printed concurrency must be equal.
/// Preset, options, exact bytes → blocks, logged tokens, printed concurrency, longest fit.
type Oracle = (&'static str, KvOptions, u64, u64, u64, f64, Option<u64>);

#[test]
fn matches_vllm_0_33_exactly_given_exact_bytes() {
    let o = |mml: u64| KvOptions { max_model_len: Some(mml), ..KvOptions::default() };
    let ds = |kv_dtype: KvDtype| KvOptions {
        tp: 8,
        block_size: Some(64),
        kv_dtype,
        max_model_len: Some(163_840),
        ..KvOptions::default()
    };
    let g20 = 20 * GIB;
    #[rustfmt::skip]
    let cases: Vec<Oracle> = vec![
        // preset, options, exact bytes → blocks, logged tokens, printed concurrency, and the
        // longest request the startup check admits (`_estimate_max_model_len_from_groups`
        // on the memory less the null block; `None`: every layer slides).
        ("llama-3.1-8b", o(32_768), 58_647_778_426, 27_965, 447_440, 13.65, Some(447_424)),
        ("llama-3.1-8b", o(131_072), 66_432_406_650, 31_677, 506_832, 3.87, Some(506_816)),
        // Dense MHA with max_model_len not a multiple of the block size: 256 blocks per
        // request, int(2735 / 256 × 4095) = 43,749 — not 2735 × 16 = 43,760.
        ("llama-2-7b", o(4095), 22_945_862_778, 2_735, 43_749, 10.68, Some(43_744)),
        ("llama-2-7b", o(4095), 22_944_940_032, 2_735, 43_749, 10.68, Some(43_744)),
        // MLA, TP 8, FlashMLA's block size 64: 61 layers × 64 × 576 values on every rank.
        ("deepseek-v3", ds(KvDtype::Auto), 61_664_992_952, 13_711, 877_504, 5.36, Some(877_440)),
        ("deepseek-v3", ds(KvDtype::Fp8), 61_664_992_952, 27_422, 1_755_008, 10.71, Some(1_754_944)),
        ("deepseek-v3", ds(KvDtype::Fp8DsMla), 61_664_992_952, 24_078, 1_540_992, 9.41, Some(1_540_928)),
        // Hybrid: 7 groups (10 full; 52 sliding in 6), pool block = 10 pages; 2 × 8192 in flight.
        ("gemma-3-27b", o(131_072), 49_102_213_611, 37_462, 333_438, 2.54, Some(494_832)),
        ("gemma-3-27b", o(32_768), g20, 16_384, 62_557, 1.91, Some(157_584)),
        ("gemma-3-27b", KvOptions { async_scheduling: false, ..o(32_768) }, g20, 16_384, 97_435, 2.97, Some(206_736)),
        ("gemma-3-27b", KvOptions { hybrid: false, ..o(32_768) }, g20, 2_642, 42_272, 1.29, Some(42_256)),
        // gpt-oss: 18 sliding (window 128) + 18 full → 2 groups of 18.
        ("gpt-oss-120b", o(131_072), 75_795_435_356, 128_505, 1_825_843, 13.93, Some(2_039_536)),
        ("gpt-oss-20b", o(131_072), 10 * GIB, 27_306, 387_973, 2.96, Some(420_352)),
        // Every layer sliding (window 4096): one group, 1281 blocks per 32k request.
        ("mistral-7b-v0.1", o(32_768), 10 * GIB, 5_120, 130_969, 4.0, None),
    ];
    for (id, opts, bytes, blocks, tokens, conc, fit) in cases {
        let m = preset(id).unwrap().shape().unwrap();
        let e = estimate(&m, &opts, &KvBudget::Available(bytes)).unwrap();
        assert_eq!(
            (e.blocks, e.tokens, e.max_concurrency, e.max_model_len_fit),
            (Some(blocks), Some(tokens), Some(conc), fit),
            "{id} {opts:?}"
        );
    }
}

#[test]
fn h200_measured_bytes_per_token() {
    // tests/data/kv/h200-decode-llama22.config.json: Llama-shaped, 22 layers, 4 kv heads, head_dim 64, bf16.
    let m = ModelShape::plain("h200-decode", 22, 32, 4, 64);
    let mut m = m;
    m.max_model_len = Some(32_768);
    let e = estimate(&m, &KvOptions::default(), &KvBudget::Available(GIB)).unwrap();
    assert_eq!(e.bytes_per_token, 22_528);
}

#[test]
fn deepseek_v3_mla_on_eight_gpus() {
    let o = KvOptions { tp: 8, max_model_len: Some(163_840), ..KvOptions::default() };
    let e = with_available("deepseek-v3", o.clone(), "40");
    assert_eq!(e.bytes_per_token_per_rank, 70_272);
    assert_eq!(e.bytes_per_token, 8 * 70_272);
    assert_eq!(e.page_bytes, 16 * 1_152);
    // floor(40 GiB / (18,432 B × 61)) = 38,199 blocks → 611,184 tokens.
    assert_eq!((e.blocks, e.tokens), (Some(38_199), Some(611_184)));
    assert!(e.layers[0].kv_heads_per_rank.is_none());
    let ds = with_available(
        "deepseek-v3",
        KvOptions { kv_dtype: KvDtype::Fp8DsMla, block_size: Some(64), ..o },
        "40",
    );
    assert_eq!(ds.bytes_per_token_per_rank, 61 * 656);
    assert_eq!(ds.blocks, Some(40 * GIB / (64 * 656 * 61)));
}

#[test]
fn gemma3_sliding_capacity_and_concurrency() {
    let o =
        KvOptions { max_model_len: Some(32_768), max_num_batched_tokens: Some(8192), ..KvOptions::default() };
    let e = with_available("gemma-3-27b", o, "20");
    assert_eq!(e.bytes_per_token_per_rank, 62 * 8192);
    assert_eq!(e.bytes_per_token_past_windows_per_rank, 10 * 8192);
    assert_eq!((e.kv_cache_groups, e.pool_tensors, e.padding_layers), (7, 10, 8));
    // floor(20 GiB / (131,072 B × 10)) = 16,384 blocks.
    assert_eq!(e.blocks, Some(16_384));
    // A 32k request, two batches of 8192 in flight (async scheduling): 2048 + 6 ×
    // (ceil((1023 + 16,384) / 16) + 1) = 2048 + 6 × 1089 = 8582 blocks → 1.91x, and vLLM 0.33
    // logs int(16,384 / 8582 × 32,768) = 62,557 tokens (vLLM's own functions give the same:
    // tests/data/kv/README.md). Older releases logged 16,384 / 7 × 16 = 37,440.
    assert_eq!((e.blocks_per_request, e.max_concurrency), (Some(8_582), Some(1.91)));
    assert_eq!((e.tokens, e.legacy_tokens), (Some(62_557), Some(37_440)));
    assert_eq!((e.settings.in_flight_batches, e.settings.in_flight_tokens), (2, 16_384));
    let sliding = e.layers.iter().find(|r| r.kind == "sliding").unwrap();
    assert_eq!((sliding.count, sliding.window, sliding.groups), (52, Some(1024), 6));
    assert_eq!(sliding.max_tokens_per_request, Some(17_407));
    // One batch in flight (no async scheduling; also what older releases budgeted):
    // 2048 + 6 × 577 = 5510 blocks → 2.97x, 97,435 tokens.
    let one = KvOptions {
        max_model_len: Some(32_768),
        max_num_batched_tokens: Some(8192),
        async_scheduling: false,
        ..KvOptions::default()
    };
    let e = with_available("gemma-3-27b", one, "20");
    assert_eq!((e.blocks_per_request, e.max_concurrency, e.tokens), (Some(5_510), Some(2.97), Some(97_435)));
}

#[test]
fn all_sliding_fits_any_length() {
    let o = KvOptions { max_model_len: Some(32_768), ..KvOptions::default() };
    let e = with_available("mistral-7b-v0.1", o, "10");
    assert_eq!(e.max_model_len_fit, None);
    assert_eq!(e.kv_cache_groups, 1);
}

#[test]
fn reverse_question_reproduces_the_article() {
    let o = KvOptions { need: Some(Need { seqs: 64, len: 4096 }), ..KvOptions::default() };
    let e = with_available("llama-2-7b", o, "200");
    let n = e.need.unwrap();
    assert_eq!(n.kv_bytes_per_rank, 137_438_953_472);
    assert_eq!(n.article_bytes, Some(137_438_953_472));
    assert_eq!(n.fits, Some(true));
    assert_eq!(fmt_gb(n.kv_bytes_per_rank), "137.4 GB");
}

#[test]
fn not_fitting_is_a_warning_not_an_error() {
    let o = KvOptions { max_model_len: Some(131_072), ..KvOptions::default() };
    let e = with_available("llama-3.1-8b", o, "5");
    assert_eq!(e.max_num_seqs, Some(0));
    assert!(e.warnings.iter().any(|w| w.contains("refuse to start")), "{:?}", e.warnings);
    let e = with_available("llama-3.1-8b", KvOptions::default(), "0");
    assert_eq!((e.blocks, e.tokens, e.max_model_len_fit), (Some(0), Some(0), Some(0)));
}

#[test]
fn gpu_budget_path() {
    let m = preset("llama-3.1-8b").unwrap().shape().unwrap();
    let inp = BudgetInputs::new(crate::gpus::gpu("h200").unwrap().total_bytes());
    let o = KvOptions { large_gpu: Some(true), ..KvOptions::default() };
    let e = estimate(&m, &o, &KvBudget::Gpu(inp)).unwrap();
    let b = e.budget.as_ref().unwrap();
    assert_eq!(e.available_kv_bytes, b.available_kv_bytes);
    let tokens = e.tokens.unwrap();
    assert!(tokens > 700_000 && tokens < 900_000, "{tokens}");
    assert!(e.missing.is_empty());
    assert!(e.assumptions.iter().any(|a| a.contains("CUDA graphs")));
}
