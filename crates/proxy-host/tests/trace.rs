//! The stream-timer filter and W3C trace context, in the proxy-wasm test host: the trace id of
//! a request's own `traceparent` is reported in the `trace_id` property and the summary line;
//! with `add_traceparent` a request without one gets a fresh sampled one (WASI randomness),
//! whose trace id is reported; a request's own — valid or not — is never replaced. The
//! upstream-bound request headers (as the host holds them after `proxy_on_request_headers`)
//! are checked too: the added header is there when on, none is there when off, and a request's
//! own is the only one, unchanged.

use triage_proxy_host::types::Action;
use triage_proxy_host::{Filter, Finished, Options};

const MS: u64 = 1_000_000;
const OWN: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const STREAM: &[u8] = b"data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"content\":\"b\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

fn load(config: &str) -> Filter {
    Filter::load(Options::default().config(config)).unwrap_or_else(|e| panic!("loading the filter: {e}"))
}

/// One streamed chat exchange with `extra` request headers; what it left.
fn chat(f: &mut Filter, extra: &[(&str, &str)]) -> Finished {
    let t = f.clock().now();
    let id = f.begin_with("/v1/chat/completions", extra).unwrap();
    f.clock().set(t + 10 * MS);
    f.respond(id, 200, &[("content-type", "text/event-stream")], false).unwrap();
    f.clock().set(t + 50 * MS);
    assert_eq!(f.chunk(id, STREAM, true).unwrap(), Action::Continue);
    let fin = f.end(id).unwrap();
    assert!(fin.actions.iter().all(|a| *a == Action::Continue), "{:?}", fin.actions);
    assert_eq!(fin.prop("llm.outcome"), Some("complete"), "{fin:?}");
    fin
}

fn is_trace_id(s: &str) -> bool {
    s.len() == 32
        && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && s.bytes().any(|b| b != b'0')
}

#[test]
fn by_default_the_request_is_left_alone_and_its_own_trace_id_reported() {
    let mut f = load("{}");
    let fin = chat(&mut f, &[]);
    assert_eq!(fin.prop("llm.trace_id"), None, "none sent, none added: {fin:?}");
    let fin = chat(&mut f, &[("traceparent", OWN)]);
    assert_eq!(fin.prop("llm.trace_id"), Some(&OWN[3..35]));
    let summary = fin.prop("llm.summary").unwrap();
    assert!(summary.contains(&format!("trace_id={}", &OWN[3..35])), "{summary}");
    let fin = chat(&mut f, &[("traceparent", "not-a-traceparent")]);
    assert_eq!(fin.prop("llm.trace_id"), None);
    assert!(!f.is_poisoned());
}

#[test]
fn add_traceparent_gives_a_request_without_one_a_fresh_trace_id() {
    let mut f = load(r#"{"add_traceparent":true}"#);
    let ids: Vec<String> = (0..3)
        .map(|_| chat(&mut f, &[]).prop("llm.trace_id").expect("an added trace id").to_owned())
        .collect();
    assert!(ids.iter().all(|t| is_trace_id(t)), "{ids:?}");
    assert!(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2], "fresh each time: {ids:?}");
    // A request's own is kept: its trace id is reported, a broken one is not replaced.
    assert_eq!(chat(&mut f, &[("traceparent", OWN)]).prop("llm.trace_id"), Some(&OWN[3..35]));
    assert_eq!(chat(&mut f, &[("traceparent", "00-broken")]).prop("llm.trace_id"), None);
    assert!(!f.is_poisoned());
    assert!(f.logs().lines().iter().all(|(_, l)| !l.contains("traceparent")), "{:?}", f.logs().lines());
}

/// Start a chat request with `extra` headers; every `traceparent` value the upstream would get.
fn upstream_traceparents(f: &mut Filter, extra: &[(&str, &str)]) -> Vec<String> {
    let id = f.begin_with("/v1/chat/completions", extra).unwrap();
    let sent = f.request_headers(id).expect("an open request");
    let all = sent.into_iter().filter(|(k, _)| k == "traceparent").map(|(_, v)| v).collect();
    f.respond(id, 200, &[("content-type", "text/event-stream")], false).unwrap();
    assert_eq!(f.chunk(id, STREAM, true).unwrap(), Action::Continue);
    f.end(id).unwrap();
    all
}

#[test]
fn the_upstream_request_carries_the_added_header_only_when_on_and_never_a_replaced_one() {
    let mut off = load("{}");
    assert_eq!(upstream_traceparents(&mut off, &[]), Vec::<String>::new(), "off: none added");
    assert_eq!(upstream_traceparents(&mut off, &[("traceparent", OWN)]), [OWN]);
    let mut on = load(r#"{"add_traceparent":true}"#);
    let id = on.begin_with("/v1/chat/completions", &[]).unwrap();
    let added: Vec<_> =
        on.request_headers(id).unwrap().into_iter().filter(|(k, _)| k == "traceparent").collect();
    assert_eq!(added.len(), 1, "exactly one added: {added:?}");
    let v = &added[0].1;
    let parts: Vec<&str> = v.split('-').collect();
    assert!(parts.len() == 4 && parts[0] == "00" && parts[3] == "01", "well-formed and sampled: {v}");
    assert!(is_trace_id(parts[1]) && parts[2].len() == 16, "{v}");
    on.respond(id, 200, &[("content-type", "text/event-stream")], false).unwrap();
    on.chunk(id, STREAM, true).unwrap();
    let fin = on.end(id).unwrap();
    assert_eq!(fin.prop("llm.trace_id"), Some(parts[1]), "the reported id is the one sent upstream");
    // A request's own, valid or not, goes upstream as it came, alone.
    assert_eq!(upstream_traceparents(&mut on, &[("traceparent", OWN)]), [OWN]);
    assert_eq!(upstream_traceparents(&mut on, &[("traceparent", "00-broken")]), ["00-broken"]);
    assert!(!on.is_poisoned() && !off.is_poisoned());
}
