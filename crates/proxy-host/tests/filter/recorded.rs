//! Real recorded streams, split at random chunk boundaries with random arrival times, through
//! the filter in the host: every histogram sample, counter and property equals what core's
//! offline `StreamTimer` computes for the same chunks on the same clock.

use crate::{MS, Rng, STREAMS, assert_all_continue, load, metric, split, sse, times};
use triage_core::sse::SseLimits;
use triage_core::timing::{RequestTiming, StallConfig, StreamTimer, TimerConfig};
use triage_proxy_host::{Filter, Finished, WALL_BASE_NS};

const SEEDS: u64 = 60;

fn expected(chunks: &[(u64, Vec<u8>)], sent: u64, headers: u64) -> RequestTiming {
    // The filter's stalls are gaps above a fixed threshold: core's rule with factor 0.
    let cfg = TimerConfig {
        stall: StallConfig { factor: 0.0, threshold_ns: 100 * MS },
        limits: SseLimits::default(),
    };
    let mut t = StreamTimer::new(sent, cfg);
    t.on_headers(headers);
    for (at, c) in chunks {
        t.feed(c, *at);
    }
    t.finish(chunks.last().map_or(headers, |c| c.0))
}

fn us(v: Option<u64>) -> Vec<u64> {
    v.map(|v| v / 1_000).into_iter().collect()
}

fn check(f: &Filter, fin: &Finished, route: &str, exp: &RequestTiming, body_len: usize, what: &str) {
    let m = f.metrics();
    let h = |base: &str| m.samples(&metric(base, route, None));
    let c = |base: &str, extra: Option<(&str, &str)>| m.counter(&metric(base, route, extra));
    assert_eq!(h("time_to_first_token_us"), us(exp.ttft_ns()), "{what}: ttft");
    assert_eq!(h("time_to_first_answer_token_us"), us(exp.ttfo_ns()), "{what}: ttfo");
    assert_eq!(h("e2e_request_latency_us"), us(exp.e2e_ns()), "{what}: e2e");
    let gaps: Vec<u64> = exp.gaps_ns().map(|g| g / 1_000).collect();
    assert_eq!(h("inter_token_latency_us"), gaps, "{what}: gaps");
    let (out, _) = exp.output_tokens();
    // The one TPOT rule: ≥ 2 output tokens; a zero span gives 0.
    let tpot = match (exp.token_times_ns.first(), exp.token_times_ns.last()) {
        (Some(a), Some(b)) if out >= 2 => Some(b.saturating_sub(*a) / (out - 1)),
        _ => None,
    };
    assert_eq!(h("time_per_output_token_us"), us(tpot), "{what}: tpot");
    assert_eq!(c("requests_total", None), 1, "{what}");
    assert_eq!(c("stalls_total", None), exp.stalls.len() as i64, "{what}: stalls");
    let usage = exp.usage.unwrap_or_default();
    assert_eq!(c("tokens_total", Some(("type", "output"))), out as i64, "{what}");
    assert_eq!(c("tokens_total", Some(("type", "input"))), usage.input_tokens.unwrap_or(0) as i64, "{what}");
    assert_eq!(
        c("tokens_total", Some(("type", "reasoning"))),
        usage.reasoning_tokens.unwrap_or(0) as i64,
        "{what}"
    );
    let reason = if exp.stream_error.is_some() {
        Some("stream_error")
    } else if exp.completed() {
        None
    } else {
        Some("incomplete")
    };
    for r in ["http_status", "stream_error", "incomplete", "reset", "guard"] {
        assert_eq!(
            c("errors_total", Some(("reason", r))),
            i64::from(reason == Some(r)),
            "{what}: errors {r}"
        );
    }
    assert_eq!(m.value(&metric("active_streams", route, None)), Some(0), "{what}");
    assert_all_continue(fin);

    let wall = |t: u64| ((WALL_BASE_NS + t) / 1_000).to_string();
    let p = |k: &str| fin.prop(&format!("llm.{k}")).map(str::to_owned);
    let s = |v: Option<u64>| v.map(|v| (v / 1_000).to_string());
    assert_eq!(p("route").as_deref(), Some(route));
    assert_eq!(p("status").as_deref(), Some("200"));
    assert_eq!(p("t_enqueue_us"), Some(wall(exp.sent_ns)), "{what}");
    assert_eq!(p("t_response_headers_us"), exp.headers_ns.map(wall), "{what}");
    assert_eq!(p("t_first_byte_us"), exp.first_byte_ns.map(wall), "{what}");
    assert_eq!(p("t_first_token_us"), exp.token_times_ns.first().copied().map(wall), "{what}");
    assert_eq!(p("t_first_answer_us"), exp.first_answer_ns.map(wall), "{what}");
    assert_eq!(p("t_last_token_us"), exp.token_times_ns.last().copied().map(wall), "{what}");
    assert_eq!(p("t_finish_us"), exp.done_ns.map(wall), "{what}");
    assert_eq!(p("ttft_us"), s(exp.ttft_ns()), "{what}");
    assert_eq!(p("ttfo_us"), s(exp.ttfo_ns()), "{what}");
    assert_eq!(p("e2e_us"), s(exp.e2e_ns()), "{what}");
    assert_eq!(p("tpot_us"), s(tpot), "{what}");
    assert_eq!(p("max_gap_us"), exp.gaps_ns().max().map(|g| (g / 1_000).to_string()), "{what}");
    assert_eq!(p("stalls"), Some(exp.stalls.len().to_string()), "{what}");
    assert_eq!(p("token_events"), Some(exp.token_times_ns.len().to_string()), "{what}");
    assert_eq!(p("output_tokens"), Some(out.to_string()), "{what}");
    assert_eq!(p("input_tokens"), usage.input_tokens.map(|v| v.to_string()), "{what}");
    assert_eq!(p("reasoning_tokens"), usage.reasoning_tokens.map(|v| v.to_string()), "{what}");
    assert_eq!(p("finish_reason"), exp.finish_reason.clone(), "{what}");
    assert_eq!(p("response_id"), exp.response_id.clone(), "{what}");
    assert_eq!(p("error"), exp.stream_error.clone(), "{what}");
    let dialect = exp.dialect.map(|d| serde_json::to_value(d).unwrap().as_str().unwrap().to_owned());
    assert_eq!(p("dialect"), dialect, "{what}");
    assert_eq!(p("events"), Some(exp.events.to_string()), "{what}");
    assert_eq!(p("bytes"), Some(body_len.to_string()), "{what}");
    let outcome = match reason {
        Some("stream_error") => "stream_error",
        Some(_) => "incomplete",
        None => "complete",
    };
    assert_eq!(p("outcome").as_deref(), Some(outcome), "{what}");
    let summary = p("summary").unwrap_or_default();
    assert!(
        summary.starts_with(&format!("route={route} status=200 outcome={outcome} ")),
        "{what}: {summary}"
    );
}

#[test]
fn recorded_streams_at_random_boundaries_match_core() {
    let mut f = load("");
    let mut checked = 0;
    for (i, (file, path, route)) in STREAMS.iter().enumerate() {
        let original = sse(file);
        for seed in 0..SEEDS {
            let mut rng = Rng(seed * 7919 + i as u64);
            // Half the runs with CRLF line ends: the parser frames both.
            let body = if seed % 2 == 1 {
                String::from_utf8(original.clone()).unwrap().replace('\n', "\r\n").into_bytes()
            } else {
                original.clone()
            };
            let pieces = split(&body, &mut rng, 40);
            let sent = f.clock().now() + MS;
            let headers = sent + rng.below(50 * MS);
            let first = headers + rng.below(500 * MS);
            let at = times(&mut rng, pieces.len(), first);
            let chunks: Vec<(u64, Vec<u8>)> = at.into_iter().zip(pieces).collect();
            f.metrics().clear_values();
            let fin = f
                .exchange(path, sent, 200, "text/event-stream; charset=utf-8", headers, &chunks)
                .unwrap_or_else(|e| panic!("{file} seed {seed}: {e}"));
            let exp = expected(&chunks, sent, headers);
            check(
                &f,
                &fin,
                route,
                &exp,
                body.len(),
                &format!("{file} seed {seed} ({} chunks)", chunks.len()),
            );
            checked += 1;
        }
    }
    assert_eq!(checked, STREAMS.len() as u64 * SEEDS);
    assert!(!f.is_poisoned());
    // Nothing but the configuration line was logged (metrics work, summaries off by default).
    let lines = f.logs().lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
}

#[test]
fn one_byte_chunks_and_one_whole_chunk_agree() {
    let mut f = load("");
    for (file, path, route) in STREAMS {
        let body = sse(file);
        for bytewise in [false, true] {
            let chunks: Vec<(u64, Vec<u8>)> = if bytewise {
                body.iter().enumerate().map(|(i, b)| (10 * MS + i as u64 * 1_000, vec![*b])).collect()
            } else {
                vec![(10 * MS, body.clone())]
            };
            let base = f.clock().now();
            let chunks: Vec<(u64, Vec<u8>)> = chunks.into_iter().map(|(t, c)| (base + t, c)).collect();
            f.metrics().clear_values();
            let fin = f.exchange(path, base + MS, 200, "text/event-stream", base + 2 * MS, &chunks).unwrap();
            let exp = expected(&chunks, base + MS, base + 2 * MS);
            check(&f, &fin, route, &exp, body.len(), &format!("{file} bytewise={bytewise}"));
        }
    }
}
