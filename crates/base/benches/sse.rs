//! SSE parser throughput on realistic OpenAI chat-completions chunks (target ≥ 1 GB/s native).
//!
//! Baseline in the same run: `memchr` counting line ends over the same bytes, the least any
//! line-based parser must do. The ratio parser/baseline is the figure to watch; absolute GB/s
//! depend on the machine.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use triage_base::sse::{SseItem, SseParser};
use triage_base::timing::{StreamTimer, TimerConfig};

/// One vLLM-style chunk per token, as a network read usually delivers them.
fn transcript(tokens: usize) -> Vec<Vec<u8>> {
    let words = ["Hello", " world", ",", " the", " quick", " brown", " fox", " jumps", "\n", " over"];
    let mut chunks = vec![
        b"data: {\"id\":\"chatcmpl-b1c2\",\"object\":\"chat.completion.chunk\",\"created\":1764460800,\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n".to_vec(),
    ];
    for i in 0..tokens {
        let w = serde_json::to_string(words[i % words.len()]).unwrap();
        chunks.push(format!("data: {{\"id\":\"chatcmpl-b1c2\",\"object\":\"chat.completion.chunk\",\"created\":1764460800,\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{w}}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n").into_bytes());
    }
    chunks.push(b"data: {\"id\":\"chatcmpl-b1c2\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":1000,\"total_tokens\":1012}}\n\ndata: [DONE]\n\n".to_vec());
    chunks
}

fn bench_sse(c: &mut Criterion) {
    let chunks = transcript(1000);
    let bytes: usize = chunks.iter().map(Vec::len).sum();
    let whole: Vec<u8> = chunks.concat();
    let mut g = c.benchmark_group("sse");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("baseline_memchr_line_ends", |b| {
        b.iter(|| black_box(memchr::memchr2_iter(b'\n', b'\r', black_box(&whole)).count()))
    });
    g.bench_function("parse_per_event_chunks", |b| {
        b.iter(|| {
            let mut p = SseParser::new();
            let mut n = 0usize;
            for (i, ch) in chunks.iter().enumerate() {
                p.feed(black_box(ch), i as u64, &mut |item| {
                    if let SseItem::Event(e) = item {
                        n += e.data.len();
                    }
                });
            }
            black_box(n)
        })
    });
    g.bench_function("parse_64k_reads", |b| {
        b.iter(|| {
            let mut p = SseParser::new();
            let mut n = 0usize;
            for (i, ch) in whole.chunks(64 * 1024).enumerate() {
                p.feed(black_box(ch), i as u64, &mut |item| {
                    if let SseItem::Event(e) = item {
                        n += e.data.len();
                    }
                });
            }
            black_box(n)
        })
    });
    // The full timer (framing + JSON classification of every event): what a probe pays.
    g.bench_function("timer_per_event_chunks", |b| {
        b.iter(|| {
            let mut t = StreamTimer::new(0, TimerConfig::default());
            for (i, ch) in chunks.iter().enumerate() {
                t.feed(black_box(ch), i as u64);
            }
            black_box(t.finish(chunks.len() as u64).token_times_ns.len())
        })
    });
    g.finish();
}

criterion_group!(benches, bench_sse);
criterion_main!(benches);
