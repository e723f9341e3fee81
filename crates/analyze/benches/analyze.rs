//! Analyzer throughput on request logs and vLLM logs (target ≥ 300 MB/s native).
//!
//! Baseline in the same run: counting the lines with `memchr`, the least any line-based reader
//! does. Inputs are generated deterministically in the shapes real tools print.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use triage_analyze::Analyzer;

fn request_log(rows: usize) -> Vec<u8> {
    let mut s = String::with_capacity(rows * 260);
    for i in 0..rows {
        let t = 1_764_460_800.0 + i as f64 * 0.05;
        let prompt = 200 + (i * 7919) % 6000;
        s.push_str(&format!(
            "{{\"request_id\":\"chatcmpl-{i:08x}\",\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"enqueue_time\":{t:.3},\"scheduled_time\":{:.3},\"first_token_time\":{:.3},\"last_token_time\":{:.3},\"finish_time\":{:.3},\"prompt_tokens\":{prompt},\"output_tokens\":{},\"status\":200}}\n",
            t + 0.01 + (i % 13) as f64 * 0.01,
            t + 0.2 + prompt as f64 * 0.00005,
            t + 2.5,
            t + 2.51,
            50 + i % 400
        ));
    }
    s.into_bytes()
}

fn vllm_log(lines: usize) -> Vec<u8> {
    let mut s = String::with_capacity(lines * 200);
    for i in 0..lines {
        let (mm, ss) = ((i / 60) % 60, i % 60);
        match i % 4 {
            0 => s.push_str(&format!("INFO 11-29 10:{mm:02}:{ss:02} [loggers.py:123] Engine 000: Avg prompt throughput: {}.0 tokens/s, Avg generation throughput: {}.5 tokens/s, Running: {} reqs, Waiting: {} reqs, GPU KV cache usage: {}.5%, Prefix cache hit rate: 41.2%\n", 900 + i % 300, 1400 + i % 200, 20 + i % 44, i % 9, 40 + i % 50)),
            1 => s.push_str(&format!("INFO:     10.0.{}.{}:5{:04} - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n", i % 7, i % 250, i % 9999)),
            2 => s.push_str(&format!("INFO 11-29 10:{mm:02}:{ss:02} [async_llm.py:261] Added request chatcmpl-{i:08x}.\n")),
            _ => s.push_str(&format!("DEBUG 11-29 10:{mm:02}:{ss:02} [core.py:380] EngineCore loop iteration {i} scheduled 32 requests\n")),
        }
    }
    s.into_bytes()
}

fn analyze(bytes: &[u8]) -> usize {
    let mut a = Analyzer::new();
    a.begin("bench");
    for chunk in bytes.chunks(64 * 1024) {
        a.feed(chunk);
    }
    a.finish().inputs.len()
}

fn bench(c: &mut Criterion) {
    for (name, data) in [("request_log_jsonl", request_log(40_000)), ("vllm_log", vllm_log(60_000))] {
        let mut g = c.benchmark_group(format!("analyze/{name}"));
        g.throughput(Throughput::Bytes(data.len() as u64));
        g.sample_size(10);
        g.bench_function("baseline_memchr_lines", |b| {
            b.iter(|| black_box(memchr::memchr_iter(b'\n', black_box(&data)).count()))
        });
        g.bench_function("analyzer", |b| b.iter(|| black_box(analyze(black_box(&data)))));
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
