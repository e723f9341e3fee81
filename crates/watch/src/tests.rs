//! Tests of the watch's judgement: each fake engine's interval sequence, named right.

use super::*;
use triage_base::fault::Fault;

const S: u64 = 1_000_000_000;

fn cfg() -> WatchConfig {
    WatchConfig { ttft_bound_ns: 2 * S, timeout_ns: S / 2, every_ns: S }
}

fn ok(ttft_ms: f64) -> RequestRecord {
    let mut r = RequestRecord::new(0, 0, 0, Some(200), None, None);
    r.ok = true;
    r.headers_ms = Some(ttft_ms / 2.0);
    r.ttft_ms = Some(ttft_ms);
    r.output_tokens = Some(4);
    r
}

fn failed(kind: FaultKind, status: Option<u16>, headers_ms: Option<f64>) -> RequestRecord {
    let mut r = RequestRecord::new(0, 0, 0, status, None, Some(Fault::new(kind, "what happened")));
    r.headers_ms = headers_ms;
    r
}

fn vllm(at_ns: u64, running: u32, waiting: u32, generated: u64) -> EngineScrape {
    EngineScrape::parse(
        &format!(
            "vllm:num_requests_running{{model_name=\"m\"}} {running}\nvllm:num_requests_waiting{{model_name=\"m\"}} {waiting}\nvllm:generation_tokens_total{{model_name=\"m\"}} {generated}\n"
        ),
        at_ns,
    )
}

fn tick(at_ns: u64, canary: Option<&RequestRecord>, scrape: Option<EngineScrape>) -> Tick<'_> {
    Tick { at_ns, canary, metrics: scrape.map(Ok) }
}

#[test]
fn a_healthy_canary_is_serving() {
    let mut w = Watch::new(cfg());
    let o = w.observe(tick(0, Some(&ok(120.0)), None));
    assert_eq!((o.verdict, o.state, o.serving), (Verdict::Healthy, State::Serving, true));
    assert!(o.evidence[0].contains("120.0 ms, within the 2000 ms bound"), "{:?}", o.evidence);
    assert_eq!(w.ttft().count(), 1);
}

#[test]
fn a_slow_canary_is_ttft_high_with_its_bound() {
    let mut w = Watch::new(cfg());
    let o = w.observe(tick(0, Some(&ok(2500.0)), None));
    assert_eq!((o.verdict, o.state, o.serving), (Verdict::TtftHigh, State::Slow, false));
    assert!(o.evidence[0].contains("above the 2000 ms bound"));
}

#[test]
fn accepted_and_never_answered_is_stalled() {
    let mut w = Watch::new(cfg());
    let o = w.observe(tick(0, Some(&failed(FaultKind::TimeoutBeforeHeaders, None, None)), None));
    assert_eq!((o.verdict, o.state), (Verdict::ThroughputZero, State::Stalled));
    assert!(o.evidence[0].contains("no response headers within its 500 ms deadline"));
    assert_eq!(w.failures()["timeout_before_headers"], 1);
}

#[test]
fn headers_without_a_token_is_stalled() {
    let mut w = Watch::new(cfg());
    let r = failed(FaultKind::TimeoutBeforeFirstToken, Some(200), Some(1.5));
    let o = w.observe(tick(0, Some(&r), None));
    assert_eq!((o.verdict, o.state), (Verdict::ThroughputZero, State::Stalled));
    assert!(
        o.evidence[0].contains("headers after 1.5 ms but no token within its 500 ms deadline"),
        "{:?}",
        o.evidence
    );
    assert!(w.exposition().contains("triage_engine_stalled 1\n"));
}

#[test]
fn refused_and_5xx_are_down_and_4xx_is_config() {
    let mut w = Watch::new(cfg());
    for (kind, status, verdict) in [
        (FaultKind::ConnectionRefused, None, Verdict::ThroughputZero),
        (FaultKind::ServerError, Some(503), Verdict::ThroughputZero),
        (FaultKind::Unauthorized, Some(401), Verdict::Config),
    ] {
        let o = w.observe(tick(0, Some(&failed(kind, status, None)), None));
        assert_eq!((o.verdict, o.state, o.serving), (verdict, State::Down, false), "{kind:?}");
    }
    let o = w.observe(tick(0, Some(&failed(FaultKind::RateLimited, Some(429), None)), None));
    assert_eq!((o.verdict, o.state), (Verdict::TtftHigh, State::Slow));
}

/// Fake engine (c): the canary is answered, `/health` would say 200, but three requests are
/// running and the generation counter is frozen — named at the second interval.
#[test]
fn frozen_counters_with_requests_running_are_throughput_zero_at_the_second_scrape() {
    let mut w = Watch::new(cfg());
    let c = ok(300.0);
    let first = w.observe(tick(0, Some(&c), Some(vllm(0, 3, 0, 500))));
    assert_eq!(first.verdict, Verdict::Healthy, "one scrape judges nothing: {:?}", first.evidence);
    assert!(first.evidence[1].contains("first scrape"));
    let second = w.observe(tick(S, Some(&c), Some(vllm(S, 3, 0, 500))));
    assert_eq!((second.verdict, second.state), (Verdict::ThroughputZero, State::Stalled));
    let e = second.engine.as_ref().unwrap();
    assert!(e.stalled);
    assert_eq!(e.frozen_for_ms, Some(1000.0));
    assert_eq!(e.moved["vllm:generation_tokens_total"], 0.0);
    assert!(
        second.evidence[1].contains("3 running, 0 waiting in two scrapes 1.0 s apart"),
        "{:?}",
        second.evidence
    );
    assert!(second.evidence[1].contains("byte-identical"));
    // Still frozen: the time grows from the first frozen scrape.
    let third = w.observe(tick(2 * S, Some(&c), Some(vllm(2 * S, 3, 0, 500))));
    assert_eq!(third.engine.unwrap().frozen_for_ms, Some(2000.0));
    let x = w.exposition();
    assert!(x.contains("triage_engine_stalled 1\n") && x.contains("triage_engine_frozen_seconds 2\n"), "{x}");
    assert!(x.contains("triage_canary_up 1\n"));
}

/// Fake engine (d): stalled, then it recovers and the next interval says so.
#[test]
fn recovery_is_seen_at_the_next_interval() {
    let mut w = Watch::new(cfg());
    let stuck = failed(FaultKind::TimeoutBeforeFirstToken, Some(200), Some(1.0));
    let a = w.observe(tick(0, Some(&stuck), Some(vllm(0, 2, 1, 10))));
    let b = w.observe(tick(S, Some(&stuck), Some(vllm(S, 3, 1, 10))));
    assert_eq!((a.verdict, b.verdict), (Verdict::ThroughputZero, Verdict::ThroughputZero));
    assert!(b.engine.as_ref().unwrap().stalled);
    let c = w.observe(tick(2 * S, Some(&ok(80.0)), Some(vllm(2 * S, 1, 0, 60))));
    assert_eq!((c.verdict, c.state), (Verdict::Healthy, State::Serving));
    assert!(c.evidence[1].contains("vllm:generation_tokens_total +50"), "{:?}", c.evidence);
    assert!(w.exposition().contains("triage_engine_stalled 0\n"));
}

/// Fake engine (e): nothing running or waiting, counters flat: idle, never stalled.
#[test]
fn an_idle_engine_is_never_stalled() {
    let mut w = Watch::new(cfg());
    for i in 0..5 {
        let o = w.observe(tick(i * S, Some(&ok(50.0)), Some(vllm(i * S, 0, 0, 1234))));
        assert_eq!(o.verdict, Verdict::Healthy, "{:?}", o.evidence);
        assert!(!o.engine.unwrap().stalled);
        if i > 0 {
            assert!(o.evidence[1].contains("idle, not stalled"));
        }
    }
    // Work in one scrape only is not enough either.
    let o = w.observe(tick(5 * S, Some(&ok(50.0)), Some(vllm(5 * S, 2, 0, 1234))));
    assert_eq!(o.verdict, Verdict::Healthy);
}

#[test]
fn the_same_sample_twice_is_not_compared() {
    let mut w = Watch::new(cfg());
    let c = ok(50.0);
    w.observe(tick(S, Some(&c), Some(vllm(S, 3, 0, 7))));
    // Read at the same instant: the same sample.
    let o = w.observe(tick(S, Some(&c), Some(vllm(S, 3, 0, 7))));
    assert_eq!(o.verdict, Verdict::Healthy);
    assert!(o.evidence[1].contains("not compared"));
    // The exposition's own timestamp did not change: a cached page.
    let stamped = |at| {
        EngineScrape::parse(
            "vllm:num_requests_running 3 1700000000000\nvllm:generation_tokens_total 7 1700000000000\n",
            at,
        )
    };
    let mut w = Watch::new(cfg());
    w.observe(tick(0, Some(&c), Some(stamped(0))));
    let o = w.observe(tick(S, Some(&c), Some(stamped(S))));
    assert_eq!(o.verdict, Verdict::Healthy, "{:?}", o.evidence);
}

#[test]
fn a_down_canary_stays_down_and_metrics_stall_overrides_a_config_refusal() {
    let mut w = Watch::new(cfg());
    let refused = failed(FaultKind::ConnectionRefused, None, None);
    w.observe(tick(0, Some(&refused), Some(vllm(0, 3, 0, 5))));
    let o = w.observe(tick(S, Some(&refused), Some(vllm(S, 3, 0, 5))));
    assert_eq!((o.verdict, o.state), (Verdict::ThroughputZero, State::Down));
    let unauthorized = failed(FaultKind::Unauthorized, Some(401), None);
    let o = w.observe(tick(2 * S, Some(&unauthorized), Some(vllm(2 * S, 3, 0, 5))));
    assert_eq!((o.verdict, o.state), (Verdict::ThroughputZero, State::Stalled));
}

#[test]
fn metrics_problems_are_evidence_not_verdicts() {
    let mut w = Watch::new(cfg());
    let o = w.observe(Tick { at_ns: 0, canary: Some(&ok(10.0)), metrics: Some(Err("HTTP 404".into())) });
    assert_eq!((o.verdict, o.metrics_error.as_deref()), (Verdict::Healthy, Some("HTTP 404")));
    assert_eq!(w.scrape_failures(), 1);
    let o = w.observe(tick(S, Some(&ok(10.0)), Some(EngineScrape::parse("up 1\n", S))));
    assert!(o.evidence[1].contains("none of the engine names"), "{:?}", o.evidence);
    // Gauges without any progress counter cannot show a stall.
    let gauges = |at| EngineScrape::parse("vllm:num_requests_running 4\n", at);
    w.observe(tick(2 * S, Some(&ok(10.0)), Some(gauges(2 * S))));
    let o = w.observe(tick(3 * S, Some(&ok(10.0)), Some(gauges(3 * S))));
    assert_eq!(o.verdict, Verdict::Healthy);
    assert!(o.evidence[1].contains("cannot be read from metrics"));
}

#[test]
fn a_skipped_interval_is_counted_and_inconclusive_alone() {
    let mut w = Watch::new(cfg());
    w.skip();
    let o = w.observe(Tick { at_ns: 0, canary: None, metrics: None });
    assert_eq!((o.verdict, o.state), (Verdict::Inconclusive, State::Unknown));
    assert_eq!(w.skipped(), 1);
    assert!(w.exposition().contains("triage_canary_skipped_total 1\n"));
}

#[test]
fn memory_is_bounded_over_a_long_run() {
    let mut w = Watch::new(cfg());
    for i in 0..10_000u64 {
        w.observe(tick(i * S, Some(&ok(10.0)), Some(vllm(i * S, 1, 0, i))));
    }
    assert_eq!(w.recent.len(), RECENT);
    assert_eq!(w.ticks(), 10_000);
    assert!(w.exposition().len() < 8192);
}

#[test]
fn the_exposition_names_every_family_with_help_and_type() {
    let mut w = Watch::new(cfg());
    let before = w.exposition();
    assert!(before.contains("triage_canary_up 0\n"));
    assert!(before.contains("triage_watch_verdict{verdict=\"INCONCLUSIVE\"} 1\n"));
    w.observe(tick(0, Some(&ok(300.0)), Some(vllm(0, 1, 2, 3))));
    let x = w.exposition();
    for name in [
        "triage_canary_up",
        "triage_canary_ttft_seconds",
        "triage_canary_failures_total",
        "triage_engine_stalled",
        "triage_watch_verdict",
        "triage_canary_runs_total",
        "triage_canary_skipped_total",
        "triage_engine_scrape_failures_total",
        "triage_engine_requests_running",
        "triage_engine_requests_waiting",
        "triage_engine_frozen_seconds",
    ] {
        assert!(x.contains(&format!("# HELP {name} ")), "{name}");
        assert!(x.contains(&format!("# TYPE {name} ")), "{name}");
    }
    assert!(x.contains("triage_canary_ttft_seconds_bucket{le=\"0.5\"} 1\n"), "{x}");
    assert!(x.contains("triage_canary_ttft_seconds_bucket{le=\"+Inf\"} 1\n"));
    assert!(x.contains("triage_canary_failures_total{kind=\"timeout_before_first_token\"} 0\n"));
    assert!(x.contains("triage_watch_verdict{verdict=\"HEALTHY\"} 1\n"));
    assert!(x.contains("triage_engine_requests_waiting 2\n"));
    // Every sample line parses with the analyzer's own exposition reader.
    for l in x.lines().filter(|l| !l.starts_with('#')) {
        assert!(triage_base::expo::parse_sample(l).is_some(), "{l}");
    }
}

#[test]
fn the_report_follows_the_contract() {
    let mut w = Watch::new(cfg());
    let o = w.observe(tick(0, Some(&ok(42.0)), Some(vllm(0, 0, 0, 1))));
    let r = WatchReport::new("http://h/v1/chat/completions", Some("http://h/metrics"), "m", 0.0, o, &w);
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["schema"], "triage.watch/v1");
    assert_eq!(v["verdict"], "HEALTHY");
    assert_eq!(v["state"], "serving");
    assert_eq!(v["serving"], true);
    assert_eq!(v["tick"], 1);
    assert_eq!(v["canary"]["ttft_ms"], 42.0);
    assert_eq!(v["engine"]["family"], "vllm");
    assert_eq!(v["engine"]["counters"]["vllm:generation_tokens_total"], 1.0);
    assert_eq!(v["bounds"]["ttft_ms"], 2000.0);
    assert_eq!(v["counts"]["canaries"], 1);
    assert!(v["definitions"].as_array().unwrap().iter().any(|d| d["name"] == "TTFT"));
    let back: WatchReport = serde_json::from_value(v).unwrap();
    assert_eq!(back, r);
    assert!(r.observation.line().starts_with("HEALTHY serving — canary TTFT 42.0 ms"));
}

#[test]
fn a_baseline_scrape_lets_one_interval_judge_the_counters() {
    let mut w = Watch::new(cfg());
    w.baseline(vllm(0, 3, 0, 9));
    let o = w.observe(tick(S, Some(&ok(30.0)), Some(vllm(S, 3, 0, 9))));
    assert_eq!((o.verdict, w.ticks()), (Verdict::ThroughputZero, 1));
}
