//! The stream-timer filter and W3C trace context, in the proxy-wasm test host: the trace id of
//! a request's own `traceparent` is reported in the `trace_id` property and the summary line;
//! with `add_traceparent` a request without one gets a fresh sampled one (WASI randomness),
//! whose trace id is reported; a request's own — valid or not — is never replaced.

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
