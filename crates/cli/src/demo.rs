//! `triage demo`: a self-contained run against the built-in scripted server on 127.0.0.1.
//!
//! It shows the whole probe path with no endpoint and no key, and checks the probe against the
//! server's own record of when it wrote each event — the demo prints that error too.

use std::time::{Duration, Instant};

use crate::probe::{self, ProbeOptions, ProbeRun};
use triage_core::arrival::Arrival;
use triage_core::endpoint::Api;
use triage_core::stats::Summary;
use triage_core::timing::TimerConfig;
use triage_sim::{Fault, Record, Script, ScriptedServer, ServerConfig};

/// The demo's workload: 12 requests, 4 at a time; TTFT around 250 ms, ~20 ms gaps, one request
/// that stalls for 400 ms mid-stream, one reasoning request, one rate-limited.
pub fn demo_script(i: usize) -> Script {
    let ms = Duration::from_millis;
    let mut s = Script {
        api: Api::Openai,
        ttft: ms(200 + (i as u64 * 37) % 120),
        gaps: (0..48).map(|k| ms(15 + (k * 7 + i as u64) % 11)).collect(),
        tokens: 48,
        ..Script::default()
    };
    match i {
        3 => s.fault = Fault::StallAfter { after_tokens: 20, stall: ms(400) },
        5 => s.reasoning_tokens = 12,
        7 => {
            s.fault = Fault::Status {
                code: 429,
                content_type: "application/json".into(),
                body: r#"{"error":{"message":"Rate limit reached for requests","type":"rate_limit_error"}}"#
                    .into(),
                retry_after: Some(20),
            }
        }
        _ => {}
    }
    s
}

/// |probe arrival − server write| for every token event the two can match, in microseconds.
/// Requests are matched by the response id the server put in its stream.
pub fn timing_errors_us(run: &ProbeRun, records: &[Record], origin: Instant) -> Vec<f64> {
    let mut errors = Vec::new();
    for timing in run.timings.iter().flatten() {
        let Some(id) = &timing.response_id else { continue };
        let Some(rec) = records.iter().find(|r| &r.response_id == id) else { continue };
        for (t, written) in timing.token_times_ns.iter().zip(&rec.token_written) {
            let arrival = origin + Duration::from_nanos(*t);
            let err = match arrival.checked_duration_since(*written) {
                Some(d) => d.as_secs_f64(),
                None => written.duration_since(arrival).as_secs_f64(),
            };
            errors.push(err * 1e6);
        }
    }
    errors
}

/// Run the demo: server up, probe, server down. Returns the run and the server's record.
pub async fn run() -> anyhow::Result<(ProbeRun, Vec<Record>, Instant)> {
    let server = ScriptedServer::start(
        demo_script,
        ServerConfig { max_requests: 64, lifetime: Duration::from_secs(60) },
    )
    .await?;
    let opts = ProbeOptions {
        url: server.base_url(),
        api: Api::Openai,
        model: "scripted-demo".into(),
        prompt: "Explain continuous batching in one paragraph.".into(),
        max_tokens: 48,
        requests: 12,
        concurrency: 4,
        rate: None,
        arrival: Arrival::Constant,
        seed: 0,
        timeout: Duration::from_secs(20),
        headers: Vec::new(),
        api_key: None,
        timer: TimerConfig::default(),
        traceparent: false,
    };
    let origin = Instant::now();
    let mut run = probe::run(&opts, origin, &|_| {}).await?;
    let records = server.records();
    server.shutdown();
    run.report.warnings.retain(|w| !w.starts_with("no API key"));
    Ok((run, records, origin))
}

/// The line the demo prints under the report.
pub fn accuracy_line(errors_us: &[f64]) -> String {
    match Summary::from_values(errors_us) {
        Some(s) => format!(
            "probe vs server record: {} token events matched; |arrival − write| p50 {:.0} µs, p99 {:.0} µs, max {:.0} µs",
            s.count, s.p50, s.p99, s.max
        ),
        None => "probe vs server record: no token events matched".to_owned(),
    }
}
