//! No per-event allocation on the probe's hot path: the SSE parser, the classifier and the
//! stream timer, fed one token event per chunk (as a stream at 1,024-way concurrency delivers
//! them), allocate only when a vector of per-token instants doubles — a handful per thousand
//! events, never one per event.
//!
//! A counting global allocator, per thread (the test harness runs tests on several threads).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use triage_base::stream::classify_with;
use triage_base::timing::{StreamTimer, TimerConfig};

struct Counting;

thread_local! { static ALLOCS: Cell<u64> = const { Cell::new(0) }; }

fn bump() {
    let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counter is a
// const-initialised thread-local that does not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        bump();
        // SAFETY: forwarded as is.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        bump();
        // SAFETY: forwarded as is.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static A: Counting = Counting;

fn allocs() -> u64 {
    ALLOCS.with(Cell::get)
}

/// Allocations made by `f` on this thread.
fn counted(f: impl FnOnce()) -> u64 {
    let before = allocs();
    f();
    allocs() - before
}

/// The chunks of one stream, one event each, built before counting.
fn chunks(events: usize, event: impl Fn(usize) -> String) -> Vec<Vec<u8>> {
    (0..events).map(|i| event(i).into_bytes()).collect()
}

/// Allocations while feeding `later` after `first` were fed: with per-token vectors that double,
/// going from N to 2N events costs one growth per vector, whatever N is.
fn growth(first: &[Vec<u8>], later: &[Vec<u8>]) -> u64 {
    let mut timer = StreamTimer::new(0, TimerConfig::default());
    for (i, c) in first.iter().enumerate() {
        timer.feed(c, i as u64 * 1_000);
    }
    let n = first.len();
    counted(|| {
        for (i, c) in later.iter().enumerate() {
            timer.feed(c, (n + i) as u64 * 1_000);
        }
    })
}

fn openai(i: usize) -> String {
    format!(
        "data: {{\"id\":\"chatcmpl-7\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"tok{i} \"}},\"finish_reason\":null}}]}}\n\n"
    )
}

#[test]
fn openai_token_events_do_not_allocate_each() {
    let all = chunks(4_096, openai);
    let (first, later) = all.split_at(2_048);
    // token_times_ns and token_kinds each double once from 2,048 to 4,096.
    let n = growth(first, later);
    assert!(n <= 2, "{n} allocations for 2,048 OpenAI token events (expected ≤ 2: one growth per vector)");
}

#[test]
fn openai_with_per_chunk_usage_does_not_allocate_each() {
    let all = chunks(4_096, |i| {
        format!(
            "data: {{\"id\":\"chatcmpl-7\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"t\"}},\"finish_reason\":null}}],\"usage\":{{\"prompt_tokens\":3,\"completion_tokens\":{},\"total_tokens\":{}}}}}\n\n",
            i + 1,
            i + 4
        )
    });
    let (first, later) = all.split_at(2_048);
    // … and chunk_tokens.
    let n = growth(first, later);
    assert!(n <= 3, "{n} allocations for 2,048 events with usage (expected ≤ 3)");
}

#[test]
fn anthropic_and_responses_deltas_do_not_allocate_each() {
    let anthropic = chunks(4_096, |i| {
        format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"tok{i}\"}}}}\n\n"
        )
    });
    let (first, later) = anthropic.split_at(2_048);
    let n = growth(first, later);
    assert!(n <= 2, "{n} allocations for 2,048 Anthropic deltas (expected ≤ 2)");

    let responses = chunks(4_096, |i| {
        format!(
            "event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"tok{i}\",\"sequence_number\":{i}}}\n\n"
        )
    });
    let (first, later) = responses.split_at(2_048);
    let n = growth(first, later);
    assert!(n <= 2, "{n} allocations for 2,048 Responses deltas (expected ≤ 2)");
}

#[test]
fn an_event_split_across_chunks_does_not_allocate_each() {
    // Each event arrives in two reads, cut mid-JSON: the parser's line buffer is reused.
    let halves: Vec<Vec<u8>> = chunks(4_096, openai)
        .into_iter()
        .flat_map(|c| {
            let (a, b) = c.split_at(c.len() / 2);
            [a.to_vec(), b.to_vec()]
        })
        .collect();
    let (first, later) = halves.split_at(4_096);
    let n = growth(first, later);
    assert!(n <= 2, "{n} allocations for 2,048 split events (expected ≤ 2)");
}

#[test]
fn classifying_a_token_event_allocates_nothing_once_the_id_is_known() {
    let data = openai(1);
    let data = data.trim_start_matches("data: ").trim_end();
    let n = counted(|| {
        for _ in 0..1_000 {
            let c = classify_with("message", data, false);
            assert!(c.token.is_some());
        }
    });
    assert_eq!(n, 0, "classifying 1,000 token events allocated");
    // Wanting the id copies it (once a stream, in the timer).
    let n = counted(|| {
        let c = classify_with("message", data, true);
        assert_eq!(c.response_id.as_deref(), Some("chatcmpl-7"));
    });
    assert_eq!(n, 1);
}
