//! Hostile and unusual traffic: malformed, binary and huge bodies, other routes, error
//! statuses, odd lifecycles and bad configurations. The filter passes everything and never
//! traps.

use crate::{MS, Rng, assert_all_continue, load, metric, split, sse, times};
use triage_proxy_host::types::LogLevel;

/// A chat stream whose whole `body` arrives in one chunk, 1 ms after the response headers.
fn one_chunk_chat(f: &mut triage_proxy_host::Filter, body: Vec<u8>) -> triage_proxy_host::Finished {
    let t = f.clock().now() + MS;
    f.exchange("/v1/chat/completions", t, 200, "text/event-stream", t + MS, &[(t + 2 * MS, body)]).unwrap()
}

fn all_metric_values_zero(f: &triage_proxy_host::Filter) -> bool {
    f.metrics().snapshot().iter().all(|m| m.value == 0 && m.samples.is_empty())
}

#[test]
fn malformed_binary_and_huge_bodies_pass_without_a_trap() {
    let mut f = load("");
    let mut rng = Rng(42);
    let before = f.guest_stats().unwrap();
    let mut bodies: Vec<Vec<u8>> = vec![
        rng.bytes(200_000),
        b"<!doctype html><html><head><title>Welcome</title></head><body>nginx</body></html>".to_vec(),
        b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {not json}\n\ndata: \xff\xfe\xfd\n\n".to_vec(),
        b"\xEF\xBB\xBFdata: [DONE]\r\n\r\n".to_vec(),
        // One line of 3 MiB without an end, then one 2 MiB event: cut at the parser's bounds.
        vec![b'x'; 3 << 20],
        format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{}\"}}}}]}}\n\n", "y".repeat(2 << 20)).into_bytes(),
        // Many tiny events, and comments only.
        "data: {\"choices\":[{\"delta\":{\"content\":\"t\"}}]}\n\n".repeat(5_000).into_bytes(),
        ": keep-alive\n\n".repeat(10_000).into_bytes(),
        Vec::new(),
    ];
    // A recorded stream with random bytes spliced in.
    let mut spliced = sse("anthropic_thinking.sse");
    spliced.splice(400..400, rng.bytes(64));
    bodies.push(spliced);
    for (i, body) in bodies.iter().enumerate() {
        for seed in 0..4u64 {
            let mut rng = Rng(seed + 100 * i as u64);
            let pieces = if body.is_empty() { Vec::new() } else { split(body, &mut rng, 12) };
            let t = f.clock().now() + MS;
            let at = times(&mut rng, pieces.len(), t + 10 * MS);
            let chunks: Vec<(u64, Vec<u8>)> = at.into_iter().zip(pieces).collect();
            let fin = f
                .exchange("/v1/chat/completions", t, 200, "text/event-stream", t + 5 * MS, &chunks)
                .unwrap_or_else(|e| panic!("body {i} seed {seed}: {e}"));
            assert_all_continue(&fin);
            assert_eq!(fin.prop("llm.bytes"), Some(body.len().to_string().as_str()), "body {i}");
            assert!(fin.prop("llm.outcome").is_some());
        }
    }
    assert!(!f.is_poisoned());
    let s = f.guest_stats().unwrap();
    assert_eq!(s.open_streams, 0);
    // Nothing is kept once the streams are gone (the allocator may keep a few caches).
    assert!(s.heap_bytes <= before.heap_bytes + 4096, "{before:?} → {s:?}");
    // Bodies are read in 16 KiB windows and lines cut at 8 KiB: a 3 MiB chunk never becomes a
    // 3 MiB guest allocation.
    assert!(s.wasm_memory_bytes < 4 << 20, "{s:?}");
    let big = f.logs().lines();
    assert!(big.iter().all(|(l, _)| *l != LogLevel::Error && *l != LogLevel::Critical), "{big:?}");
}

#[test]
fn the_cut_event_is_flagged_and_the_terminal_still_counts() {
    let mut f = load("");
    let body = format!(
        "data: {{\"choices\":[{{\"delta\":{{\"content\":\"a\"}}}}]}}\n\ndata: {{\"choices\":[{{\"delta\":{{\"content\":\"{}\"}}}}]}}\n\ndata: [DONE]\n\n",
        "z".repeat(100_000)
    );
    let fin = one_chunk_chat(&mut f, body.into_bytes());
    assert_eq!(fin.prop("llm.truncated_events"), Some("1"));
    assert_eq!(fin.prop("llm.token_events"), Some("1"));
    assert_eq!(fin.prop("llm.outcome"), Some("complete"));
}

#[test]
fn other_routes_and_content_types_pass_untouched() {
    let mut f = load("");
    let body = sse("openai_chat.sse");
    let t = f.clock().now() + MS;
    let chunks = vec![(t + 50 * MS, body.clone())];
    for (path, ct) in [
        ("/healthz", "text/event-stream"),
        ("/v1/models", "text/event-stream"),
        ("/v1/embeddings", "application/json"),
        ("/v1/chat/completions", "application/json"),
        ("/v1/chat/completions", "text/plain"),
        ("/v1/chat/completions/extra", "text/event-stream"),
    ] {
        let fin = f.exchange(path, t, 200, ct, t + MS, &chunks).unwrap();
        assert_all_continue(&fin);
        assert!(fin.properties.is_empty(), "{path} {ct}: {:?}", fin.properties);
    }
    assert!(all_metric_values_zero(&f));

    // An error status on an LLM route is counted whatever the body.
    let err = br#"{"error":{"message":"Rate limit","type":"rate_limit_error"}}"#.to_vec();
    let fin =
        f.exchange("/v1/messages", t, 429, "application/json", t + 3 * MS, &[(t + 4 * MS, err)]).unwrap();
    assert_all_continue(&fin);
    assert_eq!(fin.prop("llm.outcome"), Some("http_error"));
    assert_eq!(fin.prop("llm.status"), Some("429"));
    assert_eq!(fin.prop("llm.t_finish_us"), fin.prop("llm.t_response_headers_us"));
    assert_eq!(f.metrics().counter(&metric("errors_total", "messages", Some(("reason", "http_status")))), 1);
    assert_eq!(f.metrics().counter(&metric("requests_total", "messages", None)), 1);
    assert_eq!(f.metrics().value(&metric("active_streams", "messages", None)), Some(0));
    // `require_event_stream: false` times any response on a matched route.
    let mut g = load(r#"{"require_event_stream":false}"#);
    let fin =
        g.exchange("/v1/chat/completions", t, 200, "application/octet-stream", t + MS, &chunks).unwrap();
    assert_eq!(fin.prop("llm.outcome"), Some("complete"));
}

#[test]
fn odd_lifecycles() {
    let mut f = load("");
    // Done before any response (client went away while queued).
    f.clock().advance(MS);
    let id = f.begin("/v1/chat/completions").unwrap();
    f.clock().advance(5 * MS);
    let fin = f.end(id).unwrap();
    assert!(fin.properties.is_empty(), "not a stream yet: {:?}", fin.properties);
    // Headers with end_of_stream (no body).
    let id = f.begin("/v1/chat/completions").unwrap();
    f.respond(id, 200, &[("content-type", "text/event-stream")], true).unwrap();
    let fin = f.end(id).unwrap();
    assert_eq!(fin.prop("llm.outcome"), Some("incomplete"));
    // Reset mid-stream (no end_of_stream): done/log/delete only.
    let id = f.begin("/v1/messages").unwrap();
    f.respond(id, 200, &[("content-type", "text/event-stream")], false).unwrap();
    let body = sse("anthropic_messages.sse");
    f.clock().advance(30 * MS);
    f.chunk(id, &body[..500], false).unwrap();
    f.clock().advance(30 * MS);
    let fin = f.end(id).unwrap();
    assert_eq!(fin.prop("llm.outcome"), Some("reset"));
    assert_eq!(f.metrics().counter(&metric("errors_total", "messages", Some(("reason", "reset")))), 1);
    // Completed, then reset: still complete.
    let id = f.begin("/v1/messages").unwrap();
    f.respond(id, 200, &[("content-type", "text/event-stream")], false).unwrap();
    f.chunk(id, &body, false).unwrap();
    let fin = f.end(id).unwrap();
    assert_eq!(fin.prop("llm.outcome"), Some("complete"));
    assert_eq!(f.metrics().value(&metric("active_streams", "messages", None)), Some(0));
    assert!(!f.is_poisoned());
}

#[test]
fn bad_configurations_pass_traffic_and_say_why() {
    let cases = [
        (r#"{"stall_treshold_ms": 5}"#, "unknown field `stall_treshold_ms`"),
        (
            r#"{"routes":[{"name":"chat","paths":["v1/chat"]}]}"#,
            "routes[0].paths[0]: a path pattern must start with '/' or '*'",
        ),
        (r#"{"guard":{}}"#, "guard: set max_duration_ms and/or max_idle_ms"),
        ("{\"label_style\": ", "configuration JSON: EOF"),
        ("\u{1F980}", "configuration JSON: expected value"),
    ];
    for (config, why) in cases {
        let mut f = load(config);
        let lines = f.logs().lines();
        let err: Vec<_> = lines.iter().filter(|(l, _)| *l == LogLevel::Error).collect();
        assert_eq!(err.len(), 1, "{config}: {lines:?}");
        assert!(err[0].1.contains("invalid plugin configuration"), "{err:?}");
        assert!(err[0].1.contains(why), "{config}: {err:?}");
        assert!(err[0].1.ends_with("passing all traffic through untouched"), "{err:?}");
        let fin = one_chunk_chat(&mut f, sse("openai_chat.sse"));
        assert_all_continue(&fin);
        assert!(fin.properties.is_empty());
        assert!(f.metrics().names().is_empty());
        assert_eq!(f.tick_period(), None);
    }
    // Binary configuration bytes.
    let mut f = triage_proxy_host::Filter::load(triage_proxy_host::Options {
        configuration: vec![0xff, 0x00, 0x80],
        ..Default::default()
    })
    .unwrap();
    assert!(f.logs().lines().iter().any(|(_, l)| l.contains("configuration is not UTF-8")));
    assert!(f.tick().unwrap().is_empty());
}
