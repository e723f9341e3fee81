//! 10 000 streams open at once: memory per stream is small and bounded, all of it comes back,
//! and every stream still gets exact figures. The worst case (every buffer at its bound) stays
//! under the documented bound.

use crate::{MS, load, metric, sse};
use triage_core::sse::SseLimits;
use triage_stream_timer::timer::max_stream_bytes;

#[test]
fn ten_thousand_concurrent_streams_in_bounded_memory() {
    const N: usize = 10_000;
    let mut f = load(r#"{"guard":{"max_duration_ms":600000}}"#);
    let body = sse("openai_chat.sse");
    // Cut inside the third event: every open stream holds a partial line.
    let (head, tail) = body.split_at(body.len() / 2 + 17);
    let base = f.guest_stats().unwrap();
    let mut ids = Vec::with_capacity(N);
    for _ in 0..N {
        let id = f.begin("/v1/chat/completions").unwrap();
        f.respond(id, 200, &[("content-type", "text/event-stream")], false).unwrap();
        ids.push(id);
    }
    f.clock().advance(200 * MS);
    for &id in &ids {
        f.chunk(id, head, false).unwrap();
    }
    let open = f.guest_stats().unwrap();
    assert_eq!((open.open_streams, open.guarded), (N as u64, N as u64));
    let per_stream = (open.heap_bytes - base.heap_bytes) / N as u64;
    eprintln!(
        "{N} open streams: {per_stream} heap bytes per stream (guest), linear memory {} MiB (was {} MiB)",
        open.wasm_memory_bytes >> 20,
        base.wasm_memory_bytes >> 20
    );
    assert!(per_stream < 2048, "{per_stream} bytes per stream");
    assert!(open.context_bytes > 0 && open.stream_bytes > open.context_bytes, "{open:?}");
    eprintln!("per request context {} bytes, stream state {} bytes", open.context_bytes, open.stream_bytes);
    assert!(open.wasm_memory_bytes < 64 << 20, "{open:?}");
    f.clock().advance(20 * MS);
    for &id in &ids {
        f.chunk(id, tail, true).unwrap();
        let fin = f.end(id).unwrap();
        assert_eq!(fin.prop("llm.outcome"), Some("complete"));
    }
    let m = f.metrics();
    assert_eq!(m.counter(&metric("requests_total", "chat", None)), N as i64);
    assert_eq!(m.samples(&metric("time_to_first_token_us", "chat", None)).len(), N);
    assert_eq!(m.value(&metric("active_streams", "chat", None)), Some(0));
    let after = f.guest_stats().unwrap();
    assert_eq!((after.open_streams, after.guarded), (0, 0));
    // What stays is the dispatcher's context map capacity (~16 bytes per peak stream).
    assert!(after.heap_bytes < base.heap_bytes + 24 * N as u64, "{base:?} → {after:?}");
}

#[test]
fn worst_case_per_stream_stays_under_the_bound() {
    const N: usize = 300;
    let mut f = load("");
    let limits = SseLimits { max_line_bytes: 8 << 10, max_event_bytes: 32 << 10 };
    // A long event name and id, four data lines that fill the event buffer, and a partial
    // line at the bound: every buffer at its limit.
    let mut fill = Vec::new();
    fill.extend_from_slice(format!("event: {}\nid: {}\n", "e".repeat(9000), "i".repeat(9000)).as_bytes());
    for _ in 0..5 {
        fill.extend_from_slice(format!("data: {}\n", "d".repeat(8100)).as_bytes());
    }
    fill.extend_from_slice("p".repeat(9000).as_bytes());
    let base = f.guest_stats().unwrap();
    let mut ids = Vec::new();
    for _ in 0..N {
        let id = f.begin("/v1/messages").unwrap();
        f.respond(id, 200, &[("content-type", "text/event-stream")], false).unwrap();
        f.chunk(id, &fill, false).unwrap();
        ids.push(id);
    }
    let open = f.guest_stats().unwrap();
    let per_stream = (open.heap_bytes - base.heap_bytes) / N as u64;
    let bound = max_stream_bytes(limits) as u64;
    eprintln!("worst case: {per_stream} heap bytes per stream (bound {bound})");
    assert!(per_stream <= bound, "{per_stream} > {bound}");
    assert!(per_stream > 40_000, "the buffers really were full: {per_stream}");
    for id in ids {
        f.end(id).unwrap();
    }
    assert!(f.guest_stats().unwrap().heap_bytes < base.heap_bytes + 16 * 1024);
}
