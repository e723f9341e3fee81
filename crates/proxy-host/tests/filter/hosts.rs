//! Hosts that differ: no metrics at all (APISIX), metric calls that start failing, and
//! unexpected statuses from header, body and property calls. The filter never traps, passes
//! traffic, and says what it lost once.

use crate::{MS, assert_all_continue, metric, sse};
use triage_proxy_host::types::{LogLevel, Status};
use triage_proxy_host::{Filter, Finished, MetricsMode, Odd, Options};

fn with(opts: Options) -> Filter {
    Filter::load(opts).unwrap_or_else(|e| panic!("loading: {e}"))
}

fn chat(f: &mut Filter) -> Finished {
    let body = sse("openai_chat.sse");
    let t = f.clock().now();
    let (a, b) = body.split_at(700);
    f.exchange(
        "/v1/chat/completions",
        t + MS,
        200,
        "text/event-stream",
        t + 20 * MS,
        &[(t + 300 * MS, a.to_vec()), (t + 340 * MS, b.to_vec())],
    )
    .unwrap_or_else(|e| panic!("exchange: {e}"))
}

fn matching(f: &Filter, needle: &str) -> Vec<(LogLevel, String)> {
    f.logs().lines().into_iter().filter(|(_, l)| l.contains(needle)).collect()
}

#[test]
fn host_without_metrics_writes_logs_and_properties_only() {
    for status in [Status::Unimplemented, Status::NotFound, Status::InternalFailure] {
        let mut f = with(Options { metrics: MetricsMode::Refused(status), ..Options::default() });
        let runs: Vec<Finished> = (0..3).map(|_| chat(&mut f)).collect();
        assert!(!f.is_poisoned());
        assert!(f.metrics().names().is_empty());
        for fin in &runs {
            assert_all_continue(fin);
            assert_eq!(fin.prop("llm.ttft_us"), Some("299000"));
            assert_eq!(fin.prop("llm.outcome"), Some("complete"));
        }
        let said = matching(&f, "metrics unavailable on this host");
        assert_eq!(said.len(), 1, "said once: {:?}", f.logs().lines());
        assert!(
            said[0].1.contains(&format!("proxy_define_metric answered status {}", status as i32)),
            "{said:?}"
        );
        assert!(said[0].1.contains("logs and properties only"));
        assert_eq!(said[0].0, LogLevel::Warn);
        // Without metrics, each stream's summary goes to the log.
        let summaries = matching(&f, "llm_stream route=chat status=200 outcome=complete");
        assert_eq!(summaries.len(), 3);
        assert!(summaries[0].1.contains("ttft_us=299000"), "{summaries:?}");
        assert!(matching(&f, "configured: 4 route(s), metrics off").len() == 1);
    }
}

#[test]
fn metric_calls_that_start_failing_switch_metrics_off_once() {
    let mut f = with(Options {
        metrics: MetricsMode::FailAfter { ok_calls: 3, status: Status::InternalFailure },
        ..Options::default()
    });
    let first = chat(&mut f);
    let second = chat(&mut f);
    assert!(!f.is_poisoned());
    for fin in [&first, &second] {
        assert_all_continue(fin);
        assert_eq!(fin.prop("llm.output_tokens"), Some("6"));
    }
    let said = matching(&f, "metrics unavailable on this host");
    assert_eq!(said.len(), 1, "{:?}", f.logs().lines());
    assert!(said[0].1.contains("answered status 10"));
    // Three calls got through before the host started refusing; nothing after.
    let recorded: usize =
        f.metrics().snapshot().iter().map(|m| m.samples.len() + usize::from(m.value != 0)).sum();
    assert!(recorded <= 3, "{recorded}");
    assert_eq!(matching(&f, "llm_stream route=chat").len(), 2, "summaries logged once metrics are off");
}

#[test]
fn unexpected_statuses_are_data() {
    // Request headers unreadable: the request passes untouched, said once.
    let mut f = with(Options {
        odd: Odd { request_headers: Some(Status::ParseFailure), ..Odd::default() },
        ..Options::default()
    });
    for _ in 0..2 {
        let fin = chat(&mut f);
        assert_all_continue(&fin);
        assert!(fin.properties.is_empty());
    }
    assert_eq!(f.metrics().counter(&metric("requests_total", "chat", None)), 0);
    assert_eq!(matching(&f, "proxy_get_header_map_value(:path) answered status 4").len(), 1);

    // Response headers unreadable: status and content-type unknown, so not timed.
    let mut f = with(Options {
        odd: Odd { response_headers: Some(Status::Unimplemented), ..Odd::default() },
        ..Options::default()
    });
    let fin = chat(&mut f);
    assert_all_continue(&fin);
    assert!(fin.properties.is_empty());
    assert_eq!(matching(&f, "answered status 12: read as absent").len(), 1);

    // Body unreadable: timed from the headers, counted, no tokens, said once.
    let mut f = with(Options {
        odd: Odd { body: Some(Status::InternalFailure), ..Odd::default() },
        ..Options::default()
    });
    let fin = chat(&mut f);
    chat(&mut f);
    assert_all_continue(&fin);
    assert_eq!(fin.prop("llm.outcome"), Some("incomplete"));
    assert_eq!(fin.prop("llm.bytes"), Some("0"));
    assert_eq!(f.metrics().counter(&metric("errors_total", "chat", Some(("reason", "incomplete")))), 2);
    assert_eq!(matching(&f, "proxy_get_buffer_bytes(response body) answered status 10").len(), 1);

    // Properties refused: metrics still complete, said once.
    let mut f = with(Options {
        odd: Odd { set_property: Some(Status::CasMismatch), ..Odd::default() },
        ..Options::default()
    });
    let fin = chat(&mut f);
    chat(&mut f);
    assert_all_continue(&fin);
    assert!(fin.properties.is_empty());
    assert_eq!(f.metrics().samples(&metric("time_to_first_token_us", "chat", None)), vec![299_000, 299_000]);
    assert_eq!(matching(&f, "proxy_set_property answered status 8").len(), 1);

    // Everything odd at once.
    let odd = Odd {
        request_headers: None,
        response_headers: Some(Status::Empty),
        body: Some(Status::BadArgument),
        set_property: Some(Status::NotFound),
        reset: Some(Status::Unimplemented),
    };
    let mut f =
        with(Options { odd, metrics: MetricsMode::Refused(Status::Unimplemented), ..Options::default() });
    let fin = chat(&mut f);
    assert_all_continue(&fin);
    assert!(!f.is_poisoned());
}
