//! The optional guard: a stream over the maximum duration or idle gap is reset from the root's
//! tick (close before headers went out becomes a local 504), counted, and logged in its
//! properties; streams within the limits are left alone; off by default.

use crate::{MS, assert_all_continue, load, metric, sse};
use triage_proxy_host::ResetBy;

const GUARD: &str = r#"{"guard":{"max_duration_ms":1000,"max_idle_ms":200,"tick_ms":50}}"#;

#[test]
fn guard_is_off_by_default() {
    let mut f = load("");
    assert_eq!(f.tick_period(), None);
    let id = f.begin("/v1/chat/completions").unwrap();
    f.respond(id, 200, &[("content-type", "text/event-stream")], false).unwrap();
    f.clock().advance(3_600_000 * MS);
    assert!(f.tick().unwrap().is_empty());
    let fin = f.end(id).unwrap();
    assert_eq!(fin.reset, None);
}

#[test]
fn guard_resets_on_idle_gap_and_max_duration() {
    let mut f = load(GUARD);
    assert_eq!(f.tick_period(), Some(std::time::Duration::from_millis(50)));
    let body = sse("openai_chat.sse");
    let (head, tail) = body.split_at(600);

    // A: streams a few tokens, then goes quiet.
    let a = f.begin("/v1/chat/completions").unwrap();
    // B: never gets response headers (stuck in the queue).
    let b = f.begin("/v1/messages").unwrap();
    // C: a healthy stream that finishes within the limits.
    let c = f.begin("/v1/chat/completions").unwrap();
    f.clock().advance(100 * MS);
    f.respond(a, 200, &[("content-type", "text/event-stream")], false).unwrap();
    f.respond(c, 200, &[("content-type", "text/event-stream")], false).unwrap();
    f.clock().advance(50 * MS);
    f.chunk(a, head, false).unwrap();
    f.chunk(c, head, false).unwrap();
    f.clock().advance(150 * MS);
    assert!(f.tick().unwrap().is_empty(), "150 ms idle < 200 ms");
    f.chunk(c, tail, true).unwrap();
    let fin_c = f.end(c).unwrap();
    assert_eq!(fin_c.reset, None);
    assert_eq!(fin_c.prop("llm.outcome"), Some("complete"));
    f.clock().advance(60 * MS);
    assert_eq!(f.tick().unwrap(), vec![a], "210 ms idle");
    let fin_a = f.take_reset(a).unwrap();
    assert_eq!(fin_a.reset, Some(ResetBy::CloseStream));
    assert_eq!(fin_a.prop("llm.outcome"), Some("guard_max_idle"));
    assert_all_continue(&fin_a);
    assert!(fin_a.prop("llm.ttft_us").is_some());
    f.clock().advance(700 * MS);
    assert_eq!(f.tick().unwrap(), vec![b], "1010 ms since the request");
    let fin_b = f.take_reset(b).unwrap();
    assert_eq!(fin_b.reset, Some(ResetBy::LocalResponse(504, "llm_stream_guard".to_owned())));
    assert!(f.tick().unwrap().is_empty());

    let m = f.metrics();
    assert_eq!(m.counter(&metric("guard_resets_total", "chat", Some(("reason", "max_idle")))), 1);
    assert_eq!(m.counter(&metric("guard_resets_total", "messages", Some(("reason", "max_duration")))), 1);
    assert_eq!(m.counter(&metric("errors_total", "chat", Some(("reason", "guard")))), 1);
    assert_eq!(m.counter(&metric("requests_total", "chat", None)), 2);
    assert_eq!(m.value(&metric("active_streams", "chat", None)), Some(0));
    assert_eq!(f.open_requests(), 0);
    assert!(!f.is_poisoned());
}

#[test]
fn a_breach_seen_on_a_chunk_is_reset_on_the_next_tick() {
    let mut f = load(r#"{"guard":{"max_idle_ms":200,"tick_ms":1000}}"#);
    let body = sse("anthropic_messages.sse");
    let a = f.begin("/v1/messages").unwrap();
    f.respond(a, 200, &[("content-type", "text/event-stream")], false).unwrap();
    f.chunk(a, &body[..300], false).unwrap();
    f.chunk(a, &body[300..500], false).unwrap();
    // 500 ms of silence that no tick saw, then a chunk: the gap is a breach.
    f.clock().advance(500 * MS);
    f.chunk(a, &body[500..700], false).unwrap();
    f.clock().advance(MS);
    f.chunk(a, &body[700..800], false).unwrap();
    assert_eq!(f.tick().unwrap(), vec![a]);
    let fin = f.take_reset(a).unwrap();
    assert_eq!(fin.prop("llm.outcome"), Some("guard_max_idle"));
    assert_all_continue(&fin);
    // A stream that breached but ended before the tick was never reset: not a guard outcome.
    let b = f.begin("/v1/messages").unwrap();
    f.respond(b, 200, &[("content-type", "text/event-stream")], false).unwrap();
    f.chunk(b, &body[..300], false).unwrap();
    f.clock().advance(500 * MS);
    f.chunk(b, &body[300..], true).unwrap();
    let fin = f.end(b).unwrap();
    assert_eq!(fin.reset, None);
    assert_eq!(fin.prop("llm.outcome"), Some("complete"));
    assert!(f.tick().unwrap().is_empty());
}

#[test]
fn a_host_that_refuses_resets_is_said_once_and_nothing_traps() {
    let mut f = triage_proxy_host::Filter::load(triage_proxy_host::Options {
        configuration: GUARD.as_bytes().to_vec(),
        odd: triage_proxy_host::Odd {
            reset: Some(triage_proxy_host::types::Status::Unimplemented),
            ..Default::default()
        },
        ..Default::default()
    })
    .unwrap();
    let a = f.begin("/v1/chat/completions").unwrap();
    let b = f.begin("/v1/chat/completions").unwrap();
    f.clock().advance(2_000 * MS);
    assert!(f.tick().unwrap().is_empty(), "the host reset nothing");
    let refused: Vec<_> = f
        .logs()
        .lines()
        .into_iter()
        .filter(|(_, l)| l.contains("refused to reset a stream (status 12)"))
        .collect();
    assert_eq!(refused.len(), 1);
    // Not counted as resets, not retried; the streams end as the host ends them.
    assert_eq!(
        f.metrics().counter(&metric("guard_resets_total", "chat", Some(("reason", "max_duration")))),
        0
    );
    f.clock().advance(2_000 * MS);
    assert!(f.tick().unwrap().is_empty());
    assert_eq!(f.logs().lines().iter().filter(|(_, l)| l.contains("refused to reset")).count(), 1);
    f.respond(a, 200, &[("content-type", "text/event-stream")], false).unwrap();
    let fin = f.end(a).unwrap();
    assert_eq!(fin.prop("llm.outcome"), Some("reset"));
    f.end(b).unwrap();
    assert!(!f.is_poisoned());
}
