//! Benchmarks of the stream-timer filter inside the proxy-wasm test host.
//!
//! - cost per response-body chunk (one SSE token event per chunk, as vLLM sends them) of a
//!   timed stream, against same-run baselines: the same filter on a pass-through route (the
//!   host's own cost of a callback plus the filter's early return) and the filter's state
//!   machine natively on the same chunks;
//! - a whole stream through the lifecycle (create … delete);
//! - memory per stream with 10 000 streams open at once, and the worst case.
//!
//! `cargo bench -p triage-proxy-host --bench proxy_host` prints criterion's figures and then a
//! summary block to paste into notes.

use criterion::{Criterion, criterion_group};
use std::hint::black_box;
use std::time::{Duration, Instant};
use triage_core::sse::SseLimits;
use triage_proxy_host::{Filter, Options};
use triage_stream_timer::timer::{Stream, max_stream_bytes};

const MS: u64 = 1_000_000;

fn token_event(i: usize) -> Vec<u8> {
    event_created(i, 1741569952)
}

/// A token event whose `created` field is `created`: a stream whose events differ outside
/// their text (as OpenAI's `obfuscation` padding or Responses' `sequence_number` make them)
/// takes the full scan for every event.
fn event_created(i: usize, created: u64) -> Vec<u8> {
    format!(
        "data: {{\"id\":\"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG\",\"object\":\"chat.completion.chunk\",\"created\":{created},\"model\":\"gpt-4.1-2025-04-14\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" tok{}\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n",
        i % 10
    )
    .into_bytes()
}

fn recorded() -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/sse/openai_chat.sse");
    std::fs::read(path).expect("openai_chat.sse")
}

struct Open {
    filter: Filter,
    timed: proxy_wasm_host::abi::v0_2_1::ContextId,
    pass: proxy_wasm_host::abi::v0_2_1::ContextId,
}

fn open() -> Open {
    let mut filter = Filter::load(Options::default()).expect("load");
    let timed = filter.begin("/v1/chat/completions").expect("begin");
    filter.respond(timed, 200, &[("content-type", "text/event-stream")], false).expect("headers");
    let pass = filter.begin("/v1/models").expect("begin");
    filter.respond(pass, 200, &[("content-type", "text/event-stream")], false).expect("headers");
    Open { filter, timed, pass }
}

/// Time for `iters` chunks.
fn per_chunk(o: &mut Open, timed: bool, events: &[Vec<u8>], iters: u64) -> Duration {
    let id = if timed { o.timed } else { o.pass };
    let start = Instant::now();
    for i in 0..iters as usize {
        o.filter.clock().advance(20 * MS);
        o.filter.chunk(id, &events[i % events.len()], false).expect("chunk");
    }
    let el = start.elapsed();
    o.filter.metrics().clear_values();
    el
}

fn native(stream: &mut Stream, events: &[Vec<u8>], iters: u64, t: &mut u64) -> Duration {
    let start = Instant::now();
    for i in 0..iters as usize {
        *t += 20 * MS;
        stream.feed(black_box(&events[i % events.len()]), *t, &mut |o| {
            black_box(o);
        });
    }
    start.elapsed()
}

fn whole_stream(f: &mut Filter, body: &[u8]) {
    let id = f.begin("/v1/chat/completions").expect("begin");
    f.respond(id, 200, &[("content-type", "text/event-stream")], false).expect("headers");
    // One event per chunk, as a server flushes them.
    let mut chunks = body.split_inclusive(|&b| b == b'\n').peekable();
    let mut event = Vec::new();
    while let Some(line) = chunks.next() {
        event.extend_from_slice(line);
        if line == b"\n" {
            f.clock().advance(20 * MS);
            f.chunk(id, &event, chunks.peek().is_none()).expect("chunk");
            event.clear();
        }
    }
    f.end(id).expect("end");
}

fn benches(c: &mut Criterion) {
    let events: Vec<Vec<u8>> = (0..10).map(token_event).collect();
    let mut o = open();
    let mut g = c.benchmark_group("per_chunk");
    g.bench_function("filter_timed_stream", |b| b.iter_custom(|n| per_chunk(&mut o, true, &events, n)));
    g.bench_function("filter_pass_through_route", |b| {
        b.iter_custom(|n| per_chunk(&mut o, false, &events, n))
    });
    let mut stream = Stream::new(0, 100 * MS, SseLimits::default());
    let mut t = 0u64;
    g.bench_function("state_machine_native", |b| b.iter_custom(|n| native(&mut stream, &events, n, &mut t)));
    g.finish();
    let body = recorded();
    let mut f = Filter::load(Options::default()).expect("load");
    c.bench_function("whole_stream_openai_chat_8_chunks", |b| {
        b.iter(|| whole_stream(&mut f, &body));
        f.metrics().clear_values();
    });
}

criterion_group!(group, benches);

struct Memory {
    per_stream: u64,
    context_bytes: u64,
    stream_bytes: u64,
    linear_mib: u64,
    base_mib: u64,
    worst_per_stream: u64,
    after_bytes: i64,
}

fn memory() -> Memory {
    const N: usize = 10_000;
    let mut f =
        Filter::load(Options::default().config(r#"{"guard":{"max_duration_ms":600000}}"#)).expect("load");
    let body = recorded();
    let (head, tail) = body.split_at(body.len() / 2 + 17);
    let base = f.guest_stats().expect("stats");
    let mut ids = Vec::with_capacity(N);
    for _ in 0..N {
        let id = f.begin("/v1/chat/completions").expect("begin");
        f.respond(id, 200, &[("content-type", "text/event-stream")], false).expect("headers");
        f.chunk(id, head, false).expect("chunk");
        ids.push(id);
    }
    let open = f.guest_stats().expect("stats");
    for id in ids {
        f.chunk(id, tail, true).expect("chunk");
        f.end(id).expect("end");
    }
    let after = f.guest_stats().expect("stats");

    let mut w = Filter::load(Options::default()).expect("load");
    let mut fill = Vec::new();
    fill.extend_from_slice(format!("event: {}\nid: {}\n", "e".repeat(9000), "i".repeat(9000)).as_bytes());
    for _ in 0..5 {
        fill.extend_from_slice(format!("data: {}\n", "d".repeat(8100)).as_bytes());
    }
    fill.extend_from_slice("p".repeat(9000).as_bytes());
    let wb = w.guest_stats().expect("stats");
    for _ in 0..200 {
        let id = w.begin("/v1/messages").expect("begin");
        w.respond(id, 200, &[("content-type", "text/event-stream")], false).expect("headers");
        w.chunk(id, &fill, false).expect("chunk");
    }
    let wo = w.guest_stats().expect("stats");
    Memory {
        per_stream: (open.heap_bytes - base.heap_bytes) / N as u64,
        context_bytes: open.context_bytes,
        stream_bytes: open.stream_bytes,
        linear_mib: open.wasm_memory_bytes >> 20,
        base_mib: base.wasm_memory_bytes >> 20,
        worst_per_stream: (wo.heap_bytes - wb.heap_bytes) / 200,
        after_bytes: after.heap_bytes as i64 - base.heap_bytes as i64,
    }
}

fn main() {
    group();
    Criterion::default().configure_from_args().final_summary();

    // The summary block: own timing loops in the same run, the variants interleaved round by
    // round (this machine is shared; interleaving keeps drift out of the ratios), medians of 21.
    let events: Vec<Vec<u8>> = (0..10).map(token_event).collect();
    let varied: Vec<Vec<u8>> = (0..10).map(|i| event_created(i, 1741569952 + i as u64)).collect();
    let one_byte = vec![b"x".to_vec()];
    let mut o = open();
    // Its own stream: a stream whose events miss the kept shape eight times running stops
    // keeping one.
    let mut ov = open();
    let mut stream = Stream::new(0, 100 * MS, SseLimits::default());
    let mut t = 0u64;
    let body = recorded();
    let mut f = Filter::load(Options::default()).expect("load");
    let iters = 20_000u64;
    let mut runs: [Vec<f64>; 6] = Default::default();
    for _ in 0..21 {
        let per = |d: Duration, n: u64| d.as_secs_f64() * 1e9 / n as f64;
        runs[0].push(per(per_chunk(&mut o, true, &events, iters), iters));
        runs[1].push(per(per_chunk(&mut o, false, &events, iters), iters));
        runs[2].push(per(per_chunk(&mut o, true, &one_byte, iters), iters));
        runs[3].push(per(native(&mut stream, &events, iters, &mut t), iters));
        let s = Instant::now();
        for _ in 0..100 {
            whole_stream(&mut f, &body);
        }
        f.metrics().clear_values();
        runs[4].push(per(s.elapsed(), 100));
        runs[5].push(per(per_chunk(&mut ov, true, &varied, iters), iters));
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2] / 1e3
    };
    let [timed, pass, floor, nat, whole, full] = runs.each_mut().map(med);
    let m = memory();
    let bound = max_stream_bytes(SseLimits { max_line_bytes: 8 << 10, max_event_bytes: 32 << 10 });
    println!();
    println!(
        "stream-timer filter in the proxy-wasm test host (wasmtime 49, release host, `plugin`-profile wasm)"
    );
    println!("  per response-body chunk, medians of 21 interleaved runs of {iters}:");
    println!("    timed stream, one {}-byte token event   {timed:>6.2} µs", events[0].len());
    println!(
        "    timed, events differing outside the text {full:>6.2} µs   every event scanned in full (no kept shape)"
    );
    println!(
        "    pass-through route (same filter)        {pass:>6.2} µs   timed / pass-through = {:.1}×",
        timed / pass
    );
    println!(
        "    timed stream, 1-byte chunk (body read)  {floor:>6.2} µs   the host's floor for reading a body"
    );
    println!(
        "    the filter's own work per token chunk   {:>6.2} µs   (timed − 1-byte chunk)",
        timed - floor
    );
    println!(
        "    same state machine natively             {nat:>6.2} µs   in-host / native = {:.1}×",
        timed / nat
    );
    println!("  whole openai_chat stream (8 chunks, create … delete)  {whole:>6.2} µs");
    // The issue's target, stated against this run's own speed: the pass-through callback is
    // ~0.24 µs when this VM runs at its usual speed and ~0.45 µs in its slow phases.
    println!(
        "  target ≤ 2 µs per timed token chunk: {} ({timed:.2} µs; pass-through {pass:.2} µs is this run's machine speed)",
        if timed <= 2.0 { "met" } else { "not met" }
    );
    println!("  memory, 10 000 streams open at once:");
    println!(
        "    guest heap per open stream    {:>8} bytes (context {} + stream state {} + parser buffers, guard entry, maps)",
        m.per_stream, m.context_bytes, m.stream_bytes
    );
    println!("    guest linear memory           {:>8} MiB (idle filter: {} MiB)", m.linear_mib, m.base_mib);
    println!("    heap left after all ended     {:>8} bytes (the SDK's context map capacity)", m.after_bytes);
    println!("  worst case per stream (every parser buffer at its bound, defaults):");
    println!("    measured {} bytes, documented bound {} bytes", m.worst_per_stream, bound);
}
