//! The probe against the scripted server: figures match what the server recorded, and every
//! fault is classified, bounded in time, and never crashes the run.

use std::time::{Duration, Instant};

use triage_cli::demo::timing_errors_us;
use triage_cli::probe::{self, ProbeOptions, ProbeRun};
use triage_core::arrival::Arrival;
use triage_core::endpoint::Api;
use triage_core::fault::FaultKind;
use triage_core::timing::{TimerConfig, TokenSource};
use triage_sim::{Fault, Record, Script, ScriptedServer, ServerConfig};

const MS: Duration = Duration::from_millis(1);

fn opts(url: String, api: Api) -> ProbeOptions {
    ProbeOptions {
        url,
        api,
        model: "test-model".into(),
        prompt: "hi".into(),
        max_tokens: 16,
        requests: 1,
        concurrency: 1,
        rate: None,
        arrival: Arrival::Constant,
        seed: 0,
        timeout: Duration::from_secs(10),
        headers: vec![("x-extra".into(), "yes".into())],
        api_key: Some("sk-test-secret-123456".into()),
        timer: TimerConfig::default(),
        traceparent: true,
    }
}

async fn serve(script: impl Fn(usize) -> Script + Send + Sync + 'static) -> ScriptedServer {
    ScriptedServer::start(script, ServerConfig { max_requests: 500, lifetime: Duration::from_secs(60) })
        .await
        .expect("bind 127.0.0.1")
}

async fn probe_once(
    server: &ScriptedServer,
    api: Api,
    timeout: Duration,
) -> (ProbeRun, Vec<Record>, Instant) {
    let mut o = opts(server.base_url(), api);
    o.timeout = timeout;
    let origin = Instant::now();
    let run = probe::run(&o, origin, &|_| {}).await.expect("probe runs");
    (run, server.records(), origin)
}

fn fault_of(run: &ProbeRun) -> FaultKind {
    run.report.requests[0].error.as_ref().map(|e| e.kind).expect("a classified failure")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_figures_match_the_server_record() {
    let _cpu = crate::heavy();
    let server = serve(|_| Script {
        ttft: 120 * MS,
        gaps: vec![15 * MS, 25 * MS, 35 * MS],
        tokens: 10,
        reasoning_tokens: 3,
        ..Script::default()
    })
    .await;
    let (run, records, origin) = probe_once(&server, Api::Openai, Duration::from_secs(10)).await;
    let r = &run.report.requests[0];
    assert!(r.ok, "{r:?}");
    assert_eq!(r.status, Some(200));
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert_eq!((r.output_tokens, r.token_source), (Some(10), Some(TokenSource::Usage)));
    assert_eq!(r.gaps_ms.len(), 9);
    assert_eq!(r.response_id.as_deref(), Some("chatcmpl-scripted-0"));

    // TTFT equals the server's own record within 2 ms: request received → first token written,
    // plus loopback.
    let rec = &records[0];
    let server_ttft = rec.token_written[0].duration_since(rec.received).as_secs_f64() * 1e3;
    let ttft = r.ttft_ms.unwrap();
    assert!((ttft - server_ttft).abs() < 2.0, "probe {ttft} ms vs server {server_ttft} ms");
    // TTFO is the first answer token, after the three reasoning tokens.
    let server_ttfo = rec.token_written[3].duration_since(rec.received).as_secs_f64() * 1e3;
    assert!((r.ttfo_ms.unwrap() - server_ttfo).abs() < 2.0);
    // Every token's arrival is within 2 ms of its write.
    let errors = timing_errors_us(&run, &records, origin);
    assert_eq!(errors.len(), 10);
    assert!(errors.iter().all(|e| *e < 2_000.0), "{errors:?}");
    // The request the server saw.
    assert_eq!(rec.path, "/v1/chat/completions");
    assert_eq!(rec.header("authorization"), Some("Bearer sk-test-secret-123456"));
    assert_eq!(rec.header("x-extra"), Some("yes"));
    let body: serde_json::Value = serde_json::from_str(&rec.body).unwrap();
    assert_eq!(body["stream"], true);
    assert_eq!(body["model"], "test-model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_stream_with_thinking() {
    let _cpu = crate::heavy();
    let server = serve(|_| Script {
        api: Api::Anthropic,
        ttft: 60 * MS,
        tokens: 6,
        reasoning_tokens: 2,
        ..Script::default()
    })
    .await;
    let mut o = opts(server.base_url().trim_end_matches("/v1").to_owned(), Api::Anthropic);
    o.requests = 2;
    let run = probe::run(&o, Instant::now(), &|_| {}).await.unwrap();
    assert_eq!(run.report.requests.len(), 2, "the checks below run on each request");
    let rec = server.records();
    assert_eq!(rec[0].path, "/v1/messages");
    assert_eq!(rec[0].header("x-api-key"), Some("sk-test-secret-123456"));
    assert_eq!(rec[0].header("anthropic-version"), Some("2023-06-01"));
    for r in &run.report.requests {
        assert!(r.ok, "{r:?}");
        assert_eq!(r.finish_reason.as_deref(), Some("end_turn"));
        assert_eq!(r.output_tokens, Some(6));
        assert!(r.ttfo_ms.unwrap() > r.ttft_ms.unwrap());
        assert!(r.response_id.as_deref().unwrap().starts_with("msg_scripted_"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_and_stalls() {
    let _cpu = crate::heavy();
    let server = serve(|i| Script {
        ttft: 20 * MS,
        gaps: vec![15 * MS],
        tokens: 12,
        fault: if i == 2 { Fault::StallAfter { after_tokens: 6, stall: 300 * MS } } else { Fault::None },
        ..Script::default()
    })
    .await;
    let mut o = opts(server.base_url(), Api::Openai);
    o.requests = 12;
    o.concurrency = 4;
    let started = Instant::now();
    let run = probe::run(&o, started, &|_| {}).await.unwrap();
    let s = &run.report.summary;
    assert_eq!((s.ok, s.failed), (12, 0));
    assert_eq!(s.stalls, 1);
    assert_eq!(s.itl_ms.as_ref().unwrap().n, 12 * 11);
    assert!(s.itl_ms.as_ref().unwrap().max >= 300.0);
    // Concurrency read from the server's own record, not from the wall clock (a loaded machine
    // stretches that): a request is in flight from its arrival to its last token written, inside
    // the time the probe has it open. At most 4 at once, the limit; more than one, so they did
    // overlap (each lasts at least 185 ms of scripted time, and the first 4 are sent at once).
    let rec = server.records();
    assert_eq!(rec.len(), 12);
    let spans: Vec<(Instant, Instant)> =
        rec.iter().map(|r| (r.received, *r.token_written.last().unwrap())).collect();
    let most =
        spans.iter().map(|&(start, _)| spans.iter().filter(|&&(a, b)| a <= start && start < b).count()).max();
    assert!(matches!(most, Some(2..=4)), "at most {most:?} requests in flight at once: {spans:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_spaces_request_starts() {
    let _cpu = crate::heavy();
    let server = serve(|_| Script { ttft: 5 * MS, tokens: 2, ..Script::default() }).await;
    let mut o = opts(server.base_url(), Api::Openai);
    o.requests = 4;
    o.concurrency = 4;
    o.rate = Some(20.0);
    let run = probe::run(&o, Instant::now(), &|_| {}).await.unwrap();
    let sent: Vec<f64> = run.report.requests.iter().map(|r| r.sent_at_ms).collect();
    // 20/s: one start every 50 ms.
    assert!(sent[3] >= 145.0 && sent[3] < 250.0, "{sent:?}");
}

async fn status_fault(code: u16, body: &str, retry_after: Option<u32>) -> ProbeRun {
    let body = body.to_owned();
    let server = serve(move |_| Script {
        fault: Fault::Status {
            code,
            content_type: "application/json".into(),
            body: body.clone(),
            retry_after,
        },
        ..Script::default()
    })
    .await;
    probe_once(&server, Api::Openai, Duration::from_secs(5)).await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_statuses_are_classified_and_keys_redacted() {
    let _cpu = crate::heavy();
    let run = status_fault(
        401,
        r#"{"error":{"message":"Incorrect API key provided: sk-test-secret-123456"}}"#,
        None,
    )
    .await;
    assert_eq!(fault_of(&run), FaultKind::Unauthorized);
    let msg = &run.report.requests[0].error.as_ref().unwrap().message;
    assert!(!msg.contains("sk-test-secret-123456") && msg.contains("***"), "{msg}");
    assert!(!serde_json::to_string(&run.report).unwrap().contains("sk-test-secret"));

    assert_eq!(fault_of(&status_fault(403, "{}", None).await), FaultKind::Forbidden);
    let run = status_fault(404, r#"{"detail":"Not Found"}"#, None).await;
    assert_eq!(fault_of(&run), FaultKind::NotFound);
    assert!(run.report.requests[0].error.as_ref().unwrap().message.contains("base URL"));
    let run = status_fault(429, r#"{"error":"rate"}"#, Some(7)).await;
    assert_eq!(fault_of(&run), FaultKind::RateLimited);
    assert_eq!(run.report.requests[0].retry_after.as_deref(), Some("7"));
    assert!(run.report.requests[0].error.as_ref().unwrap().message.contains("retry-after: 7 s"));
    assert_eq!(fault_of(&status_fault(500, "boom", None).await), FaultKind::ServerError);
    assert_eq!(fault_of(&status_fault(503, "", None).await), FaultKind::ServerError);
    assert_eq!(fault_of(&status_fault(400, "bad", None).await), FaultKind::ClientError);
}

async fn script_fault(fault: Fault, timeout: Duration) -> (ProbeRun, Duration) {
    let server =
        serve(move |_| Script { ttft: 10 * MS, tokens: 8, fault: fault.clone(), ..Script::default() }).await;
    let started = Instant::now();
    let (run, _, _) = probe_once(&server, Api::Openai, timeout).await;
    (run, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_faults() {
    let _cpu = crate::heavy();
    let (run, _) = script_fault(Fault::Html, Duration::from_secs(5)).await;
    assert_eq!(fault_of(&run), FaultKind::HtmlInsteadOfSse);
    assert!(run.report.requests[0].error.as_ref().unwrap().message.contains("Welcome to Example AI"));
    let (run, _) = script_fault(Fault::JsonNotSse, Duration::from_secs(5)).await;
    assert_eq!(fault_of(&run), FaultKind::NotSse);
    let (run, _) = script_fault(Fault::ErrorEvent { after_tokens: 3 }, Duration::from_secs(5)).await;
    assert_eq!(fault_of(&run), FaultKind::StreamErrorEvent);
    assert!(run.report.requests[0].error.as_ref().unwrap().message.contains("engine died"));
    // The tokens before the error still count.
    assert!(run.report.requests[0].ttft_ms.is_some());
    let (run, _) = script_fault(Fault::EndWithoutDone { after_tokens: 4 }, Duration::from_secs(5)).await;
    assert_eq!(fault_of(&run), FaultKind::IncompleteStream);
    assert_eq!(run.report.requests[0].gaps_ms.len(), 3);
    let (run, _) = script_fault(Fault::ResetAfter { after_tokens: 3 }, Duration::from_secs(5)).await;
    assert_eq!(fault_of(&run), FaultKind::ResetMidStream);
    let (run, _) = script_fault(Fault::CloseBeforeHeaders, Duration::from_secs(5)).await;
    assert_eq!(fault_of(&run), FaultKind::ConnectionClosed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_never_hang_past_the_deadline() {
    let _cpu = crate::heavy();
    let limit = Duration::from_millis(400);
    // Real deadlines on real sockets: the faults hang forever (or 30 s), so a generous slack for
    // a loaded 2-core machine still fails a probe that missed its deadline.
    let slack = Duration::from_secs(2);
    let (run, took) = script_fault(Fault::HangBeforeHeaders, limit).await;
    assert_eq!(fault_of(&run), FaultKind::TimeoutBeforeHeaders);
    assert!(took < limit + slack, "{took:?}");
    let (run, took) = script_fault(Fault::HangAfter { after_tokens: 3 }, limit).await;
    assert_eq!(fault_of(&run), FaultKind::TimeoutMidStream);
    assert_eq!(run.report.requests[0].gaps_ms.len(), 2);
    assert!(took < limit + slack, "{took:?}");
    let server = serve(|_| Script { ttft: Duration::from_secs(30), ..Script::default() }).await;
    let started = Instant::now();
    let (run, _, _) = probe_once(&server, Api::Openai, limit).await;
    assert_eq!(fault_of(&run), FaultKind::TimeoutBeforeFirstToken);
    assert!(started.elapsed() < limit + slack, "{:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_level_faults() {
    let _cpu = crate::heavy();
    // A port that was just free: nothing listens.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let origin = Instant::now();
    let run =
        probe::run(&opts(format!("http://127.0.0.1:{port}/v1"), Api::Openai), origin, &|_| {}).await.unwrap();
    assert_eq!(fault_of(&run), FaultKind::ConnectionRefused);
    // RFC 2606 reserves .invalid: it never resolves.
    let run = probe::run(&opts("http://llm-triage-test.invalid/v1".into(), Api::Openai), origin, &|_| {})
        .await
        .unwrap();
    assert_eq!(fault_of(&run), FaultKind::Dns);
    // TLS spoken to a plain-HTTP server.
    let server = serve(|_| Script::default()).await;
    let url = server.base_url().replace("http://", "https://");
    let run = probe::run(&opts(url, Api::Openai), origin, &|_| {}).await.unwrap();
    assert_eq!(fault_of(&run), FaultKind::Tls);
}
