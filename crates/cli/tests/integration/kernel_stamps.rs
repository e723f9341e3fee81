//! Kernel receive timestamps: against the scripted server on 127.0.0.1, which
//! records when it finished writing every token event, the probe's TTFT with kernel stamps
//! stays within a stated tolerance of the server's own write stamps even while the probe's
//! thread is kept busy — where user-space stamps, taken when the task gets to run, are late
//! by about as long as the thread was blocked. The records say `stamp_source: kernel`.
//!
//! The server runs on a runtime of its own thread, so its stamps do not wait on the probe's
//! thread; the probe runs on a current-thread runtime beside a task that blocks that thread
//! for 3 ms at a time (a stand-in for a client under load). Bounded: the server serves a fixed
//! number of requests and stops by itself after 60 s; every request has a 20 s timeout.
#![cfg(target_os = "linux")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use triage_cli::probe::{self, ProbeOptions, ProbeRun, Stamps};
use triage_core::arrival::Arrival;
use triage_core::endpoint::Api;
use triage_core::probe::StampSource;
use triage_core::stats::Summary;
use triage_core::timing::TimerConfig;
use triage_sim::{Record, Script, ScriptedServer, ServerConfig};

const REQUESTS: usize = 24;
/// How long the busy task holds the probe's thread each time.
const BLOCK: Duration = Duration::from_millis(3);
/// Kernel-stamped TTFT error bound (median and p90 over the requests). The stamp is the
/// segment's arrival on loopback, a few µs before the server's `write` returns; what is left is
/// the server thread's own scheduling between its write and its stamp, and the clock
/// conversion (≪ 0.1 ms).
const KERNEL_P50_US: f64 = 300.0;
const KERNEL_P90_US: f64 = 1_000.0;

fn script(_: usize) -> Script {
    Script {
        ttft: Duration::from_millis(20),
        gaps: vec![Duration::from_millis(4)],
        tokens: 12,
        ..Script::default()
    }
}

/// TTFT errors (µs): |probe's first-token instant − the server's write of that event|, and the
/// same over every token event.
fn errors(run: &ProbeRun, records: &[Record], origin: Instant) -> (Vec<f64>, Vec<f64>) {
    let mut ttft = Vec::new();
    for timing in run.timings.iter().flatten() {
        let Some(id) = &timing.response_id else { continue };
        let Some(rec) = records.iter().find(|r| &r.response_id == id) else { continue };
        if let (Some(t), Some(w)) = (timing.token_times_ns.first(), rec.token_written.first()) {
            let at = origin + Duration::from_nanos(*t);
            let e = at.checked_duration_since(*w).unwrap_or_else(|| w.duration_since(at));
            ttft.push(e.as_secs_f64() * 1e6);
        }
    }
    (ttft, triage_cli::demo::timing_errors_us(run, records, origin))
}

/// One probe run of `REQUESTS` requests at concurrency 8 with the probe's thread kept busy.
fn busy_run(stamps: Stamps) -> (ProbeRun, Vec<Record>, Instant) {
    let server_rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server = server_rt
        .block_on(ScriptedServer::start(
            script,
            ServerConfig { max_requests: REQUESTS, lifetime: Duration::from_secs(60) },
        ))
        .expect("scripted server");
    let opts = ProbeOptions {
        url: server.base_url(),
        api: Api::Openai,
        model: "stamps".into(),
        prompt: "stamps".into(),
        max_tokens: 12,
        requests: REQUESTS,
        concurrency: 8,
        rate: None,
        arrival: Arrival::Constant,
        seed: 0,
        timeout: Duration::from_secs(20),
        headers: vec![],
        api_key: None,
        timer: TimerConfig::default(),
        traceparent: true,
    };
    let client_rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let origin = Instant::now();
    let run = client_rt.block_on(async {
        let stop = Arc::new(AtomicBool::new(false));
        let busy = {
            let stop = Arc::clone(&stop);
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    // Blocks the runtime's only thread on purpose: a client with work to do.
                    std::thread::sleep(BLOCK);
                    tokio::time::sleep(Duration::from_micros(200)).await;
                }
            })
        };
        let run = probe::run_with(&opts, origin, &|_| {}, stamps).await;
        stop.store(true, Ordering::Relaxed);
        let _ = busy.await;
        run
    });
    let run = run.expect("probe run");
    let records = server.records();
    server.shutdown();
    (run, records, origin)
}

fn summary(v: &[f64]) -> Summary {
    Summary::from_values(v).expect("matched token events")
}

#[test]
fn kernel_stamps_hold_ttft_to_the_servers_write_stamps_under_load() {
    let (run, records, origin) = busy_run(Stamps::Kernel);
    assert_eq!(run.report.summary.ok, REQUESTS, "{:?}", run.report.summary.failures);
    for r in &run.report.requests {
        assert_eq!(r.stamp_source, StampSource::Kernel, "request #{}", r.index);
    }
    let json = serde_json::to_value(&run.report).unwrap();
    assert_eq!(json["requests"][0]["stamp_source"], "kernel");
    assert!(run.report.limits[0].contains("stamp_source kernel"), "{:?}", run.report.limits);
    let (ttft, all) = errors(&run, &records, origin);
    assert_eq!(ttft.len(), REQUESTS);
    let (k_ttft, k_all) = (summary(&ttft), summary(&all));

    let (run, records, origin) = busy_run(Stamps::User);
    assert!(run.report.requests.iter().all(|r| r.stamp_source == StampSource::User));
    let (ttft, all) = errors(&run, &records, origin);
    let (u_ttft, u_all) = (summary(&ttft), summary(&all));
    eprintln!(
        "TTFT error µs (p50 / p90 / max): kernel {:.0} / {:.0} / {:.0}, user {:.0} / {:.0} / {:.0}; \
         all events p50 / p99: kernel {:.0} / {:.0}, user {:.0} / {:.0}",
        k_ttft.p50,
        k_ttft.p90,
        k_ttft.max,
        u_ttft.p50,
        u_ttft.p90,
        u_ttft.max,
        k_all.p50,
        k_all.p99,
        u_all.p50,
        u_all.p99
    );
    assert!(
        k_ttft.p50 <= KERNEL_P50_US && k_ttft.p90 <= KERNEL_P90_US,
        "kernel-stamped TTFT error p50 {:.0} µs, p90 {:.0} µs (bounds {KERNEL_P50_US} / {KERNEL_P90_US})",
        k_ttft.p50,
        k_ttft.p90
    );
    // The comparison that shows what the kernel stamps buy: the same load, user-space stamps.
    assert!(
        u_all.p50 > 2.0 * k_all.p50 && u_all.p50 >= 300.0,
        "user-space stamps should be late while the thread is busy: user p50 {:.0} µs, kernel {:.0} µs",
        u_all.p50,
        k_all.p50
    );
}

/// Credentials written in the URL go as basic auth, which only reqwest sends: such a run keeps
/// reqwest and says `user` (the kernel-stamped transport would drop them silently).
#[test]
fn credentials_in_the_url_keep_the_transport_that_sends_them() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server = rt
        .block_on(ScriptedServer::start(
            script,
            ServerConfig { max_requests: 1, lifetime: Duration::from_secs(30) },
        ))
        .expect("scripted server");
    let url = server.base_url().replacen("http://", "http://user:pw@", 1);
    let opts = ProbeOptions {
        url,
        api: Api::Openai,
        model: "stamps".into(),
        prompt: "stamps".into(),
        max_tokens: 12,
        requests: 1,
        concurrency: 1,
        rate: None,
        arrival: Arrival::Constant,
        seed: 0,
        timeout: Duration::from_secs(20),
        headers: vec![],
        api_key: None,
        timer: TimerConfig::default(),
        traceparent: true,
    };
    let run =
        rt.block_on(probe::run_with(&opts, Instant::now(), &|_| {}, Stamps::Kernel)).expect("probe run");
    server.shutdown();
    assert_eq!(run.report.requests.len(), 1);
    assert_eq!(run.report.requests[0].stamp_source, StampSource::User);
    assert!(run.report.requests[0].ttft_ms.is_some(), "{:?}", run.report.requests[0]);
}

/// A long prompt (50,000 tokens, ≈ 0.3 MB): on the kernel-stamped transport "sent" is the
/// request's last byte written, after the dispatch (`send_ms`, the connect and the write), and
/// every latency counts from it; the server gets the whole body. Over reqwest there is no
/// `send_ms` and "sent" is the dispatch.
#[test]
fn a_long_prompt_is_timed_from_its_last_byte_written() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let prompt = triage_core::endpoint::synthetic_prompt(50_000);
    for stamps in [Stamps::Kernel, Stamps::User] {
        let server = rt
            .block_on(ScriptedServer::start(
                script,
                ServerConfig { max_requests: 4, lifetime: Duration::from_secs(60) },
            ))
            .expect("scripted server");
        let opts = ProbeOptions {
            url: server.base_url(),
            api: Api::Openai,
            model: "stamps".into(),
            prompt: prompt.clone(),
            max_tokens: 12,
            requests: 4,
            concurrency: 2,
            rate: None,
            arrival: Arrival::Constant,
            seed: 0,
            timeout: Duration::from_secs(20),
            headers: vec![],
            api_key: None,
            timer: TimerConfig::default(),
            traceparent: true,
        };
        let origin = Instant::now();
        let run = rt.block_on(probe::run_with(&opts, origin, &|_| {}, stamps)).expect("probe run");
        let records = server.records();
        server.shutdown();
        assert_eq!(run.report.summary.ok, 4, "{:?}", run.report.summary.failures);
        assert!(records.iter().all(|r| r.body.contains(prompt.as_str())), "the whole prompt arrived");
        for (r, t) in run.report.requests.iter().zip(&run.timings) {
            let t = t.as_ref().expect("timing");
            let dispatch = run.started_ns + (r.sent_at_ms * 1e6).round() as u64;
            match stamps {
                Stamps::Kernel => {
                    let send = r.send_ms.expect("send_ms on the kernel-stamped transport");
                    assert!(send > 0.0, "#{}: send_ms {send}", r.index);
                    assert!(t.sent_ns + 1_000 >= dispatch, "#{}: sent before the dispatch", r.index);
                    assert!(t.sent_ns <= t.headers_ns.unwrap(), "#{}: sent after the headers", r.index);
                    let json = serde_json::to_value(r).unwrap();
                    assert!(json["send_ms"].is_number());
                }
                Stamps::User => {
                    assert_eq!(r.send_ms, None);
                    assert!(serde_json::to_value(r).unwrap().get("send_ms").is_none());
                }
            }
            assert!(r.ttft_ms.is_some());
        }
    }
}

/// The connections a kernel-stamped run opens ahead are checked before use: a server that closes
/// a connection left idle (here after 50 ms; real servers after their keep-alive timeout) does
/// not cost a request. The second request of this open-loop run is due 500 ms after the start,
/// long after the server closed its spare connection; it goes out on a fresh one and succeeds.
#[test]
fn a_spare_connection_the_server_closed_is_not_used() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    let served = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server = {
        let served = Arc::clone(&served);
        rt.spawn(async move {
            loop {
                let Ok((mut s, _)) = listener.accept().await else { return };
                let served = Arc::clone(&served);
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    let mut got = Vec::new();
                    // Idle for 50 ms: closed, as a keep-alive timeout would.
                    match tokio::time::timeout(Duration::from_millis(50), s.read(&mut buf)).await {
                        Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
                        _ => return,
                    }
                    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
                    while !got.windows(4).any(|w| w == b"\r\n\r\n") || !got.ends_with(b"}") {
                        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
                            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
                            _ => return,
                        }
                    }
                    let body = "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    // Counted before the answer, so the count is in before the probe can finish.
                    served.fetch_add(1, Ordering::Relaxed);
                    let _ = s.write_all(head.as_bytes()).await;
                    let _ = s.write_all(body.as_bytes()).await;
                });
            }
        })
    };
    let opts = ProbeOptions {
        url: format!("http://{addr}"),
        api: Api::Openai,
        model: "spare".into(),
        prompt: "spare".into(),
        max_tokens: 4,
        requests: 2,
        concurrency: 2,
        rate: Some(2.0),
        arrival: Arrival::Constant,
        seed: 0,
        timeout: Duration::from_secs(10),
        headers: vec![],
        api_key: None,
        timer: TimerConfig::default(),
        traceparent: false,
    };
    let client_rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let run = client_rt
        .block_on(probe::run_with(&opts, Instant::now(), &|_| {}, Stamps::Kernel))
        .expect("probe run");
    server.abort();
    assert_eq!(
        run.report.summary.ok,
        2,
        "{:#?}",
        run.report.requests.iter().map(|r| (&r.error, r.sent_at_ms, r.send_ms)).collect::<Vec<_>>()
    );
    assert_eq!(served.load(Ordering::Relaxed), 2);
    assert!(run.report.requests.iter().all(|r| r.stamp_source == StampSource::Kernel));
}
