//! What one finished stream leaves for the access log: properties (Envoy filter state
//! `wasm.<prefix><name>`) and a one-line logfmt summary.
//!
//! Timestamps (`t_*_us`) are Unix microseconds: the filter's monotonic instants shifted by the
//! host's wall clock read at the request headers, so the four article timestamps (enqueue,
//! first token, last token, finish) line up with server logs. Durations (`*_us`) are
//! microseconds on the monotonic clock. A figure that does not exist (no token, no usage) is
//! left out, and Envoy prints `-` for it.

use crate::timer::Summary;
use triage_core::stream::Dialect;
use triage_core::timing::TokenSource;
use triage_core::trace::TraceId;

pub fn dialect_str(d: Dialect) -> &'static str {
    match d {
        Dialect::OpenaiChat => "openai_chat",
        Dialect::OpenaiCompletions => "openai_completions",
        Dialect::OpenaiResponses => "openai_responses",
        Dialect::Anthropic => "anthropic",
        Dialect::Unknown => "unknown",
    }
}

/// The property names, in the order they are written (after the configured prefix).
pub const PROPERTY_NAMES: [&str; 30] = [
    "route",
    "status",
    "outcome",
    "dialect",
    "finish_reason",
    "response_id",
    "trace_id",
    "error",
    "t_enqueue_us",
    "t_response_headers_us",
    "t_first_byte_us",
    "t_first_token_us",
    "t_first_answer_us",
    "t_last_token_us",
    "t_finish_us",
    "ttft_us",
    "ttfo_us",
    "e2e_us",
    "tpot_us",
    "max_gap_us",
    "stalls",
    "token_events",
    "output_tokens",
    "output_tokens_source",
    "input_tokens",
    "reasoning_tokens",
    "events",
    "bytes",
    "truncated_events",
    "summary",
];

/// `(name, value)` of every figure this stream has, `summary` (logfmt of the others) last.
/// `trace_id` is the W3C trace id the request carried (its own, or the one the filter added).
pub fn properties(
    route: &str,
    enqueue_unix_ns: u64,
    trace_id: Option<TraceId>,
    s: &Summary,
) -> Vec<(&'static str, String)> {
    let unix_us =
        |t: Option<u64>| t.map(|t| (enqueue_unix_ns.saturating_add(t.saturating_sub(s.enqueue_ns))) / 1_000);
    let us = |t: Option<u64>| t.map(|t| t / 1_000);
    let num = |v: Option<u64>| v.map(|v| v.to_string());
    let mut out: Vec<(&'static str, Option<String>)> = vec![
        ("route", Some(route.to_owned())),
        ("status", s.status.map(|v| v.to_string())),
        ("outcome", Some(s.outcome.as_str().to_owned())),
        ("dialect", s.dialect.map(|d| dialect_str(d).to_owned())),
        ("finish_reason", s.finish_reason.as_deref().map(str::to_owned)),
        ("response_id", s.response_id.as_deref().map(str::to_owned)),
        ("trace_id", trace_id.map(|t| t.to_string())),
        ("error", s.error.as_deref().map(str::to_owned)),
        ("t_enqueue_us", num(unix_us(Some(s.enqueue_ns)))),
        ("t_response_headers_us", num(unix_us(s.headers_ns))),
        ("t_first_byte_us", num(unix_us(s.first_byte_ns))),
        ("t_first_token_us", num(unix_us(s.first_token_ns))),
        ("t_first_answer_us", num(unix_us(s.first_answer_ns))),
        ("t_last_token_us", num(unix_us(s.last_token_ns))),
        ("t_finish_us", num(unix_us(s.finish_ns))),
        ("ttft_us", num(us(s.ttft_ns()))),
        ("ttfo_us", num(us(s.ttfo_ns()))),
        ("e2e_us", num(us(s.e2e_ns()))),
        ("tpot_us", num(us(s.tpot_ns()))),
        ("max_gap_us", num((s.token_events >= 2).then_some(s.max_gap_ns / 1_000))),
        ("stalls", Some(s.stalls.to_string())),
        ("token_events", Some(s.token_events.to_string())),
        ("output_tokens", Some(s.output_tokens.to_string())),
        (
            "output_tokens_source",
            Some(
                match s.output_source {
                    TokenSource::Usage => "usage",
                    TokenSource::Counted => "counted",
                }
                .to_owned(),
            ),
        ),
        ("input_tokens", num(s.input_tokens)),
        ("reasoning_tokens", num(s.reasoning_tokens)),
        ("events", Some(s.events.to_string())),
        ("bytes", Some(s.bytes.to_string())),
        ("truncated_events", Some(s.truncated_events.to_string())),
    ];
    let summary = logfmt(out.iter().filter_map(|(k, v)| v.as_deref().map(|v| (*k, v))));
    out.push(("summary", Some(summary)));
    out.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect()
}

/// `key=value` pairs separated by spaces; values with spaces, quotes, `=` or controls quoted.
pub fn logfmt<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    let mut s = String::new();
    for (k, v) in pairs {
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(k);
        s.push('=');
        if !v.is_empty() && v.bytes().all(|b| b.is_ascii_graphic() && b != b'"' && b != b'=' && b != b'\\') {
            s.push_str(v);
        } else {
            s.push('"');
            for c in v.chars() {
                match c {
                    '"' => s.push_str("\\\""),
                    '\\' => s.push_str("\\\\"),
                    '\n' => s.push_str("\\n"),
                    c if c.is_control() => s.push(' '),
                    c => s.push(c),
                }
            }
            s.push('"');
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timer::{End, Stream};
    use triage_core::sse::SseLimits;

    #[test]
    fn properties_of_a_short_stream() {
        let mut st = Stream::new(1_000_000, 100_000_000, SseLimits::default());
        st.on_response_headers(2_000_000, Some(200));
        st.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"a b\"}}]}\n\n", 5_000_000, &mut |_| {});
        st.feed(
            b"event: error\ndata: {\"error\":{\"message\":\"bad \\\"x\\\"\"}}\n\n",
            7_500_000,
            &mut |_| {},
        );
        let s = st.finish(8_000_000, End::EndOfStream);
        let trace = TraceId([0xab; 16]);
        let p = properties("chat", 1_700_000_000_000_000_000, Some(trace), &s);
        let get = |k: &str| p.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("t_enqueue_us"), Some("1700000000000000"));
        assert_eq!(get("t_first_token_us"), Some("1700000000004000"));
        assert_eq!(get("t_finish_us"), Some("1700000000007000"));
        assert_eq!(get("ttft_us"), Some("4000"));
        assert_eq!(get("outcome"), Some("stream_error"));
        assert_eq!(get("error"), Some("bad \"x\""));
        assert_eq!(get("tpot_us"), None);
        assert_eq!(get("max_gap_us"), None);
        assert_eq!(get("trace_id"), Some("abababababababababababababababab"));
        let summary = get("summary").unwrap();
        assert!(summary.starts_with("route=chat status=200 outcome=stream_error dialect="), "{summary}");
        assert!(summary.contains(r#"error="bad \"x\"""#), "{summary}");
        assert_eq!(p.last().map(|(k, _)| *k), Some("summary"));
        for (k, _) in &p {
            assert!(PROPERTY_NAMES.contains(k), "{k}");
        }
    }

    #[test]
    fn logfmt_quoting() {
        assert_eq!(
            logfmt([("a", "1"), ("b", ""), ("c", "x=y"), ("d", "é")].into_iter()),
            r#"a=1 b="" c="x=y" d="é""#
        );
    }
}
