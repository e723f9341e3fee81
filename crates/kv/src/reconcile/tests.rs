//! Tests of the comparison: logs whose figures come from vLLM 0.33.0's own planning functions,
//! older releases' formula, memory taken after printing, and the explanations of mismatches.

use super::*;
use crate::presets::preset;
use crate::startup::parse_startup;
use triage_base::fixture;

/// The three capacity lines of `tests/data/kv/vllm-v1-llama-3.1-8b.log` (`tests/data/README.md` says
/// where they come from).
const BRIEF_LINES: &str = "INFO [gpu_worker.py:227] Available KV cache memory: 54.62 GiB\n\
     INFO [kv_cache_utils.py:715] GPU KV cache size: 447,088 tokens\n\
     INFO [kv_cache_utils.py:719] Maximum concurrency for 32,768 tokens per request: 13.64x\n";

#[test]
fn llama_3_1_8b_brief_lines() {
    let m = preset("llama-3.1-8b").unwrap().shape().unwrap();
    let s = parse_startup(BRIEF_LINES);
    let r = reconcile(&m, &KvOptions::default(), &s).unwrap();
    assert_eq!(r.logged_tokens, Some(447_088));
    // 54.615–54.625 GiB buys 27,962–27,968 blocks of 2 MiB: 447,392–447,488 tokens.
    assert_eq!((r.expected_blocks_min, r.expected_blocks_max), (Some(27_962), Some(27_968)));
    assert_eq!((r.expected_tokens_min, r.expected_tokens_max), (Some(447_392), Some(447_488)));
    // FIXME(upstream data): the brief's pair is 19 blocks (304 tokens, 38–48 MiB) apart — more
    // than the log's rounding and block rounding allow, and no vLLM 0.33.0 code path
    // explains it: `gpu_worker.determine_available_memory` prints the very figure that
    // `kv_cache_planning.get_kv_cache_configs` divides by the 2 MiB block (the CUDA-graph
    // estimate is subtracted *before* printing; the null block is held back only for the
    // startup check; 447,088 = 27,943 × 16 and 13.64x = 27,943 / 2048 fit block size 16
    // only; no EAGLE layer, TP or PP setting fits). The only post-print reductions —
    // a frontend multimodal reservation ("KV cache memory reduced to …") and
    // num_gpu_blocks_override ("Overriding num_gpu_blocks=…") — print their own lines,
    // absent here. The two figures are therefore not from one run (or one was edited);
    // the estimator keeps reporting the pair as unexplained, with the model shape confirmed.
    assert_eq!(r.difference_tokens, Some(-304));
    assert_eq!(r.difference_blocks, Some(-19));
    assert_eq!(r.within_one_block, Some(false));
    assert_eq!(r.formula, None);
    assert_eq!(r.verdict, Verdict::Mismatch);
    let un = r.explanations.iter().find(|e| e.why == Why::Unexplained).unwrap();
    assert!(un.message.contains("within 0.5 %"), "{}", un.message);
    assert!(
        un.message.contains("null block") && un.message.contains("different runs or ranks"),
        "{}",
        un.message
    );
    assert!(r.explanations.iter().any(|e| e.why == Why::LogRounding && e.message.contains("±")));
    let c = r.explanations.iter().find(|e| e.why == Why::Concurrency).unwrap();
    assert!(c.message.starts_with("consistent") && c.message.contains("13.64x"), "{}", c.message);
}

/// Startup logs in vLLM 0.33.0's exact line formats, with figures from vLLM 0.33.0's own
/// planning functions (`tests/data/kv/README.md`): each reconciles exactly.
#[test]
fn vllm_0_33_constructed_logs_match_exactly() {
    let cases = [
        ("llama-3.1-8b", fixture!("kv/vllm-0.33-llama-3.1-8b.log"), 447_440),
        ("llama-2-7b", fixture!("kv/vllm-0.33-llama-2-7b-len-4095.log"), 43_749),
        ("deepseek-v3", fixture!("kv/vllm-0.33-deepseek-v3-tp8.log"), 877_504),
        ("gemma-3-27b", fixture!("kv/vllm-0.33-gemma-3-27b.log"), 333_438),
        ("gpt-oss-120b", fixture!("kv/vllm-0.33-gpt-oss-120b.log"), 1_825_843),
    ];
    for (id, log, tokens) in cases {
        let m = preset(id).unwrap().shape().unwrap();
        let r = reconcile(&m, &KvOptions::default(), &parse_startup(log)).unwrap();
        assert_eq!(r.logged_tokens, Some(tokens), "{id}");
        assert_eq!(
            (r.verdict, r.formula, r.within_one_block, r.difference_tokens),
            (Verdict::Match, Some(LoggedFormula::Vllm033), Some(true), Some(0)),
            "{id}: {:#?}",
            r.explanations
        );
        let c = r.explanations.iter().find(|e| e.why == Why::Concurrency).unwrap();
        assert!(c.message.starts_with("consistent"), "{id}: {}", c.message);
    }
}

#[test]
fn legacy_formula_and_one_batch_in_flight() {
    let m = preset("gemma-3-27b").unwrap().shape().unwrap();
    // Constructed with older releases' formulas: 16,384 blocks // 7 groups × 16, 2.97x.
    let r =
        reconcile(&m, &KvOptions::default(), &parse_startup(fixture!("kv/vllm-v1-gemma-3-27b.log"))).unwrap();
    assert_eq!(
        (r.verdict, r.formula, r.logged_tokens),
        (Verdict::Match, Some(LoggedFormula::Legacy), Some(37_440))
    );
    // "20.00 GiB" stands for 16,379–16,388 blocks; vLLM 0.33 would log 62,538–62,573 tokens.
    assert_eq!((r.expected_blocks_min, r.expected_blocks_max), (Some(16_379), Some(16_388)));
    assert_eq!((r.expected_tokens_min, r.expected_tokens_max), (Some(62_538), Some(62_573)));
    assert_eq!((r.expected_tokens_legacy_min, r.expected_tokens_legacy_max), (Some(37_424), Some(37_456)));
    assert!(
        r.explanations.iter().any(|e| e.why == Why::LegacyFormula && e.message.contains("62,538–62,573"))
    );
    let a = r.explanations.iter().find(|e| e.why == Why::AsyncScheduling).unwrap();
    assert!(a.message.contains("1 batch(es)") && a.message.contains("2.97x"), "{}", a.message);
    // vLLM 0.33 with --no-async-scheduling (not in the log): 97,435 tokens, 2.97x.
    let s = parse_startup(
        "Available KV cache memory: 20.0 GiB\nGPU KV cache size: 97,435 tokens, Maximum concurrency for 32,768 \
         tokens per request: 2.97x\n",
    );
    let r = reconcile(&m, &KvOptions::default(), &s).unwrap();
    assert_eq!(r.verdict, Verdict::Explained, "{:#?}", r.explanations);
    assert!(r.explanations.iter().any(|e| e.why == Why::AsyncScheduling && e.message.contains("97,435")));
    // Said in the log: a plain match.
    let s = parse_startup(&format!(
        "$ vllm serve google/gemma-3-27b-it --no-async-scheduling\n{}",
        "Available KV cache memory: 20.0 GiB\nGPU KV cache size: 97,435 tokens, Maximum concurrency for 32,768 tokens per request: 2.97x\n"
    ));
    let r = reconcile(&m, &KvOptions::default(), &s).unwrap();
    assert_eq!((r.verdict, r.formula), (Verdict::Match, Some(LoggedFormula::Vllm033)));
}

#[test]
fn memory_taken_after_printing_is_used_when_logged() {
    let m = preset("llama-3.1-8b").unwrap().shape().unwrap();
    // A multimodal reservation: the planner got 52.62 GiB → 26,941 blocks.
    let s = parse_startup(
        "Available KV cache memory: 54.62 GiB\n\
         Reserving 2.0 GiB of GPU memory for frontend multimodal decoding (2.0 GiB raw-frame semaphore budget, \
         0.0 GiB decoder+CUDA-context across 1 API server(s) @ 0.0 GiB/server); KV cache memory reduced to 52.62 GiB.\n\
         GPU KV cache size: 431,056 tokens, Maximum concurrency for 32,768 tokens per request: 13.15x\n",
    );
    let r = reconcile(&m, &KvOptions::default(), &s).unwrap();
    assert_eq!((r.verdict, r.available_kv_line), (Verdict::Match, Some(2)));
    assert!(r.explanations.iter().any(|e| e.why == Why::MemoryReserved));
    // num_gpu_blocks_override: exactly 512 blocks whatever the memory.
    let s = parse_startup(
        "Available KV cache memory: 54.62 GiB\n\
         Overriding num_gpu_blocks=27965 with num_gpu_blocks_override=512\n\
         GPU KV cache size: 8,192 tokens, Maximum concurrency for 32,768 tokens per request: 0.25x\n",
    );
    let r = reconcile(&m, &KvOptions::default(), &s).unwrap();
    assert_eq!(
        (r.verdict, r.expected_tokens_min, r.expected_tokens_max),
        (Verdict::Match, Some(8192), Some(8192))
    );
    let o = r.explanations.iter().find(|e| e.why == Why::BlocksOverride).unwrap();
    assert!(o.message.contains("27,965") && o.message.contains("27,962–27,968"), "{}", o.message);
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
