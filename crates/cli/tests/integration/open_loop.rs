//! Open-loop load (`--rate`, `--arrival`, `--seed`) and several tokens per chunk, against the
//! scripted server on 127.0.0.1, whose record of when each request arrived and when each token
//! event was written is the truth.
//!
//! What is asserted is correctness, not speed (this machine is shared): the starts follow the
//! schedule computed up front, the dispatch lag is the probe's own stamps' difference and no
//! request reached the server before its scheduled instant, the client says it fell behind when
//! it is forced to (a rate far above what `--concurrency 1` and a slow server allow), and the
//! per-chunk and per-token ITL follow the server's chunks. Bounded: each server serves a fixed
//! number of requests and stops by itself; every request has a timeout.

use std::time::{Duration, Instant};

use triage_cli::probe::{self, ProbeOptions, ProbeRun};
use triage_core::arrival::{self, Arrival};
use triage_core::endpoint::Api;
use triage_core::probe::ms;
use triage_core::timing::{ChunkTokenSource, TimerConfig};
use triage_sim::{Record, Script, ScriptedServer, ServerConfig};

use crate::util::{json, text, triage};

fn server_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

fn options(url: String, requests: usize, concurrency: usize) -> ProbeOptions {
    ProbeOptions {
        url,
        api: Api::Openai,
        model: "open-loop".into(),
        prompt: "open loop".into(),
        max_tokens: 16,
        requests,
        concurrency,
        rate: None,
        arrival: Arrival::Constant,
        seed: 0,
        timeout: Duration::from_secs(20),
        headers: vec![],
        api_key: None,
        timer: TimerConfig::default(),
        traceparent: false,
    }
}

/// Run the probe in this process against `script`, returning the run, the server's record and
/// the clock origin of the run's instants.
fn run(
    script: fn(usize) -> Script,
    requests: usize,
    f: impl FnOnce(&mut ProbeOptions),
) -> (ProbeRun, Vec<Record>, Instant) {
    let rt = server_rt();
    let server = rt
        .block_on(ScriptedServer::start(
            script,
            ServerConfig { max_requests: requests, lifetime: Duration::from_secs(60) },
        ))
        .expect("scripted server");
    let mut opts = options(server.base_url(), requests, requests);
    f(&mut opts);
    let client = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let origin = Instant::now();
    let run = client.block_on(probe::run(&opts, origin, &|_| {})).expect("probe run");
    let records = server.records();
    server.shutdown();
    (run, records, origin)
}

fn quick(_: usize) -> Script {
    Script {
        ttft: Duration::from_millis(5),
        gaps: vec![Duration::from_millis(2)],
        tokens: 4,
        ..Script::default()
    }
}

#[test]
fn starts_follow_the_poisson_schedule_and_the_lag_is_measured() {
    const N: usize = 24;
    let (run, records, origin) = run(quick, N, |o| {
        o.rate = Some(80.0);
        o.arrival = Arrival::Poisson;
        o.seed = 11;
    });
    let r = &run.report;
    assert_eq!(r.summary.ok, N, "{:?}", r.summary.failures);
    let schedule = arrival::schedule_ns(Arrival::Poisson, 80.0, N, 11);
    // The run's start: request 0 is scheduled at offset 0.
    let run_start_ms = r.requests[0].scheduled_at_ms.unwrap();
    assert_eq!(run_start_ms, 0.0);
    let mut sent_order: Vec<(f64, usize)> = Vec::new();
    for (q, &offset) in r.requests.iter().zip(&schedule) {
        let at = q.scheduled_at_ms.expect("every open-loop record has its schedule");
        assert_eq!(at, ms(offset as f64), "request #{} follows the schedule fixed up front", q.index);
        let lag = q.dispatch_lag_ms.unwrap();
        assert!(lag >= 0.0, "request #{} sent before its scheduled start ({lag} ms)", q.index);
        assert!((lag - (q.sent_at_ms - at)).abs() <= 0.0015, "lag = sent − scheduled, #{}", q.index);
        let (ttft, sched) = (q.ttft_ms.unwrap(), q.ttft_from_schedule_ms.unwrap());
        // TTFT counts from the last byte written, `send_ms` after the dispatch (kernel-stamped
        // transport; 0 otherwise).
        let send = q.send_ms.unwrap_or(0.0);
        assert!(
            (sched - (ttft + lag + send)).abs() <= 0.0025,
            "TTFT from schedule = TTFT + lag + send, #{}",
            q.index
        );
        assert!((q.e2e_from_schedule_ms.unwrap() - (q.e2e_ms.unwrap() + lag + send)).abs() <= 0.0025);
        assert!(!q.waited_for_slot, "concurrency {N} leaves a slot for every request");
        sent_order.push((q.sent_at_ms, q.index));
    }
    // The truth: no request reached the server before the instant it was scheduled for.
    let timings = &run.timings;
    for rec in &records {
        let q = r
            .requests
            .iter()
            .zip(timings)
            .find(|(_, t)| {
                t.as_ref().and_then(|t| t.response_id.as_deref()) == Some(rec.response_id.as_str())
            })
            .map(|(q, _)| q)
            .expect("every server record matches a probe record");
        let scheduled = Duration::from_secs_f64(q.scheduled_at_ms.unwrap() / 1e3);
        // `sent_ns` is the request's last byte (`send_ms` after the dispatch, `sent_at_ms`).
        let run_origin = origin + Duration::from_nanos(timings[q.index].as_ref().unwrap().sent_ns)
            - Duration::from_secs_f64((q.sent_at_ms + q.send_ms.unwrap_or(0.0)) / 1e3);
        assert!(
            rec.request_started + Duration::from_micros(2) >= run_origin + scheduled,
            "request #{} reached the server before its scheduled start",
            q.index
        );
    }
    // Sent in the schedule's order.
    sent_order.sort_by(|a, b| a.0.total_cmp(&b.0));
    let order: Vec<usize> = sent_order.iter().map(|s| s.1).collect();
    assert_eq!(order, (0..N).collect::<Vec<_>>());
    let s = &r.summary;
    assert_eq!(s.dispatch_lag_ms.as_ref().unwrap().n, N as u64);
    assert_eq!(s.ttft_from_schedule_ms.as_ref().unwrap().n, N as u64);
    assert_eq!(s.schedule.as_ref().unwrap().scheduled, N);
    assert_eq!(r.config.arrival, Some(Arrival::Poisson));
    assert_eq!(r.config.seed, Some(11));
    let names: Vec<&str> = r.definitions.iter().map(|d| d.name.as_str()).collect();
    for d in ["dispatch lag", "TTFT from schedule", "E2E from schedule", "ITL/tok"] {
        assert!(names.contains(&d), "{d} is defined in the report: {names:?}");
    }
}

#[test]
fn closed_loop_records_have_no_schedule() {
    let (run, _, _) = run(quick, 3, |_| {});
    let v = serde_json::to_value(&run.report).unwrap();
    assert!(v["summary"].get("schedule").is_none() && v["summary"].get("dispatch_lag_ms").is_none());
    assert!(v["requests"][0].get("scheduled_at_ms").is_none());
    assert!(v["config"].get("arrival").is_none());
}

fn slow(_: usize) -> Script {
    Script {
        ttft: Duration::from_millis(120),
        gaps: vec![Duration::from_millis(5)],
        tokens: 3,
        ..Script::default()
    }
}

/// 100 starts a second with one slot and 130 ms requests: the schedule cannot be kept. The JSON
/// says it (`fell_behind`, requests that waited for a slot), the text says it in words, and the
/// latencies from the schedule grow with the backlog while those from the send do not.
#[test]
fn the_client_says_it_fell_behind_when_concurrency_runs_out() {
    const N: usize = 6;
    let rt = server_rt();
    let server = rt
        .block_on(ScriptedServer::start(
            slow,
            ServerConfig { max_requests: 2 * N, lifetime: Duration::from_secs(60) },
        ))
        .expect("scripted server");
    let url = server.base_url();
    let args = |format: &str| {
        let n = N.to_string();
        let out = triage()
            .args(["probe", &url, "--model", "m", "--timeout", "10s", "-n", &n, "-c", "1"])
            .args(["--rate", "100", "--arrival", "poisson", "--seed", "5", "--format", format])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        out
    };
    let v = json(&args("json"));
    let s = &v["summary"];
    assert_eq!(s["ok"], N);
    assert_eq!(s["schedule"]["fell_behind"], true, "{s}");
    assert!(s["schedule"]["waited_for_slot"].as_u64().unwrap() >= (N - 2) as u64, "{s}");
    assert_eq!(v["config"]["arrival"], "poisson");
    assert_eq!(v["config"]["seed"], 5);
    let reqs = v["requests"].as_array().unwrap();
    let last = &reqs[N - 1];
    // Request 5 waited behind the four before it: its TTFT from the schedule includes that.
    let (ttft, sched) = (last["ttft_ms"].as_f64().unwrap(), last["ttft_from_schedule_ms"].as_f64().unwrap());
    assert!(sched > ttft + 4.0 * 120.0 - 60.0, "TTFT {ttft} ms, from schedule {sched} ms");
    assert!(
        s["ttft_from_schedule_ms"]["max"].as_f64().unwrap() > s["ttft_ms"]["max"].as_f64().unwrap(),
        "{s}"
    );
    let t = text(&args("text"));
    assert!(t.contains("THE CLIENT FELL BEHIND ITS SCHEDULE"), "{t}");
    assert!(t.contains("--concurrency slot(s) taken at their start and waited"), "{t}");
    assert!(t.contains("open loop: poisson arrivals at 100/s, seed 5"), "{t}");
    for row in ["dispatch lag", "TTFT from schedule", "E2E from schedule"] {
        assert!(t.lines().any(|l| l.trim_start().starts_with(row)), "{row} row and definition:\n{t}");
    }
    server.shutdown();
}

/// `--arrival` and `--seed` need `--rate`: a usage error, exit 2, nothing sent.
#[test]
fn arrival_without_rate_is_a_usage_error() {
    for extra in [&["--arrival", "poisson"][..], &["--seed", "3"], &["--rate", "5", "--arrival", "bursty"]] {
        let out =
            triage().args(["probe", "http://127.0.0.1:9/v1", "--model", "m"]).args(extra).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

const PER_CHUNK: usize = 3;

fn chunks_with_usage(_: usize) -> Script {
    Script {
        ttft: Duration::from_millis(10),
        gaps: vec![Duration::from_millis(24)],
        tokens: 8,
        tokens_per_chunk: PER_CHUNK,
        usage_per_chunk: true,
        ..Script::default()
    }
}

fn chunks_with_usage_total(i: usize) -> Script {
    Script { usage_per_chunk: false, ..chunks_with_usage(i) }
}

/// Per-chunk gaps (ms) the server wrote, pooled over its requests: the truth.
fn truth_gaps_ms(records: &[Record]) -> Vec<f64> {
    records
        .iter()
        .flat_map(|r| r.token_written.windows(2).map(|w| (w[1] - w[0]).as_secs_f64() * 1e3))
        .collect()
}

fn median(v: &[f64]) -> f64 {
    triage_core::stats::Summary::from_values(v).unwrap().p50
}

/// Several tokens per chunk: ITL per chunk follows the server's write gaps, ITL per token is
/// each gap over the chunk's tokens — exact from the server's per-chunk usage, an estimate
/// (here exact, the chunks being equal) from its usage total.
#[test]
fn itl_per_chunk_and_per_token_follow_the_servers_chunks() {
    for (script, source) in [
        (chunks_with_usage as fn(usize) -> Script, ChunkTokenSource::Usage),
        (chunks_with_usage_total, ChunkTokenSource::Estimated),
    ] {
        let (run, records, _) = run(script, 4, |_| {});
        let r = &run.report;
        assert_eq!(r.summary.ok, 4, "{:?}", r.summary.failures);
        for q in &r.requests {
            assert_eq!(q.chunk_token_source, Some(source), "request #{}", q.index);
            assert_eq!(q.output_tokens, Some((8 * PER_CHUNK) as u64));
            assert_eq!(q.gaps_ms.len(), 7);
            if source == ChunkTokenSource::Usage {
                assert_eq!(q.chunk_tokens, vec![PER_CHUNK as u32; 8], "the server's per-chunk counts");
            } else {
                assert!(q.chunk_tokens.is_empty());
            }
            // Per token = each gap over the tokens the later chunk carried (3).
            for (per_token, gap) in q.itl_per_token_ms().iter().zip(&q.gaps_ms) {
                assert!((per_token - gap / PER_CHUNK as f64).abs() <= 0.0005, "{per_token} vs {gap}");
            }
        }
        let s = &r.summary;
        let (itl, per_token) = (s.itl_ms.as_ref().unwrap(), s.itl_per_token_ms.as_ref().unwrap());
        assert_eq!((itl.n, per_token.n), (28, 28));
        // Against the truth: the server wrote chunks 24 ms apart. A tolerance that only a wrong
        // figure (off by the 3×, or per-token read as per-chunk) could exceed on a busy machine.
        let truth = median(&truth_gaps_ms(&records));
        assert!((itl.p50 - truth).abs() < 6.0, "ITL per chunk p50 {} ms, truth {truth} ms", itl.p50);
        let truth_per_token = truth / PER_CHUNK as f64;
        assert!(
            (per_token.p50 - truth_per_token).abs() < 2.0,
            "ITL per token p50 {} ms, truth {truth_per_token} ms",
            per_token.p50
        );
        assert_eq!(s.chunk_token_sources.get(source.as_str()), Some(&4));
    }
}
