//! The probe's timing error against the scripted server, at concurrency 1, 64, 256 and 1,024.
//!
//! Error = |instant the probe stamped a token event − instant the server finished writing it|,
//! both on this process's monotonic clock. The probe runs twice per level, side by side: with
//! user-space stamps (`Stamps::User`, the time the body stream yields a chunk) and with kernel
//! receive stamps (`Stamps::Kernel`, Linux; elsewhere both columns are user stamps), and the
//! report gives their p99 ratio (user ÷ kernel). TTFT error, signed: the probe's TTFT − the
//! server's own (its first token written − the request fully received); with kernel stamps the
//! probe's TTFT counts from the request's last byte written, with user stamps from the dispatch.
//! Baseline in the same run: a bare TCP reader
//! with no HTTP stack and no parsing, which shows what this machine's scheduler and loopback
//! allow; the report gives each figure's ratio to it. Client CPU per streamed
//! token is measured on the probe's own thread (a current-thread runtime), the server runs on
//! another; so are the client thread's allocations per token and its peak heap per stream (a
//! counting global allocator), and, separately, the heap per stream with 1,024 streams in flight
//! at once. Targets (issue #30): kernel p99 ≤ 1 ms at c = 1, 64, 256, ≤ 2 ms at 1,024.
//!
//! Long prompts: 50,000-token prompts (≈ 0.3 MB bodies) at concurrency 64, user vs kernel.
//!
//! Then an open-loop run (Poisson arrivals, `--rate`), within capacity and over it (too few
//! `--concurrency` slots): the dispatch lag the probe measured beside the lag the server saw
//! (its arrival stamp − the scheduled instant), TTFT from the send and from the schedule, and the
//! token error, user vs kernel stamps. And a run whose chunks carry several tokens (with the
//! server's per-chunk usage): the error of ITL per chunk and per token against the server's write
//! gaps (per token: the gap over the chunk's tokens), user vs kernel stamps.
//!
//! Usage: `cargo bench -p triage-cli --bench probe -- [OUT.json]` (or `cargo xtask bench probe`).

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use triage_cli::demo::timing_errors_us;
use triage_cli::probe::{self, ProbeOptions, ProbeRun, Stamps};
use triage_core::arrival::Arrival;
use triage_core::endpoint::Api;
use triage_core::stats::Summary;
use triage_core::timing::TimerConfig;
use triage_sim::{Record, Script, ScriptedServer, ServerConfig};

const TOKENS: usize = 64;

/// Heap accounting of the client thread (the bench's main thread runs the probe on a
/// current-thread runtime; the server runs on its own worker thread and is not counted):
/// live bytes, their peak, and the number of allocations.
mod heap {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;
    use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

    pub struct Counting;
    static LIVE: AtomicI64 = AtomicI64::new(0);
    static PEAK: AtomicI64 = AtomicI64::new(0);
    static ALLOCS: AtomicU64 = AtomicU64::new(0);
    thread_local! { static CLIENT: Cell<bool> = const { Cell::new(false) }; }

    fn counted() -> bool {
        CLIENT.try_with(Cell::get).unwrap_or(false)
    }
    fn add(bytes: i64) {
        let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
        PEAK.fetch_max(live, Ordering::Relaxed);
    }

    // SAFETY: every call is forwarded to the system allocator unchanged; the counters are
    // atomics and a thread-local flag, none of which allocate.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, l: Layout) -> *mut u8 {
            if counted() {
                ALLOCS.fetch_add(1, Ordering::Relaxed);
                add(l.size() as i64);
            }
            // SAFETY: forwarded as is.
            unsafe { System.alloc(l) }
        }
        unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
            if counted() {
                LIVE.fetch_sub(l.size() as i64, Ordering::Relaxed);
            }
            // SAFETY: forwarded as is.
            unsafe { System.dealloc(p, l) }
        }
        unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
            if counted() {
                ALLOCS.fetch_add(1, Ordering::Relaxed);
                add(new as i64 - l.size() as i64);
            }
            // SAFETY: forwarded as is.
            unsafe { System.realloc(p, l, new) }
        }
    }

    /// Count this thread's allocations from now on.
    pub fn count_this_thread() {
        CLIENT.with(|c| c.set(true));
    }
    /// Live bytes now; the peak is reset to it.
    pub fn reset_peak() -> i64 {
        let live = LIVE.load(Ordering::Relaxed);
        PEAK.store(live, Ordering::Relaxed);
        live
    }
    pub fn peak() -> i64 {
        PEAK.load(Ordering::Relaxed)
    }
    pub fn allocs() -> u64 {
        ALLOCS.load(Ordering::Relaxed)
    }
}

#[global_allocator]
static HEAP: heap::Counting = heap::Counting;

fn script(_: usize) -> Script {
    Script {
        ttft: Duration::from_millis(30),
        gaps: vec![Duration::from_millis(10)],
        tokens: TOKENS,
        ..Script::default()
    }
}

fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own; CLOCK_THREAD_CPUTIME_ID is valid.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

struct Figures {
    p50_us: f64,
    p99_us: f64,
    max_us: f64,
    events: u64,
    cpu_us_per_token: f64,
    /// Signed TTFT error, ms: the probe's TTFT − the server's (first token written − request
    /// fully received). `None` for the raw TCP baseline.
    ttft_err_ms: Option<(f64, f64)>,
    /// The first token's stamp error, µs, p50 / p99: the probe's part of the TTFT error.
    first_token_err_us: Option<(f64, f64)>,
    /// Client-thread allocations per token event, whole run.
    allocs_per_token: Option<f64>,
    /// Peak client heap over the run's start, per concurrent stream, KiB.
    heap_kib_per_stream: Option<f64>,
}

impl Figures {
    fn of(errors: &[f64], cpu: Duration) -> Figures {
        let s = Summary::from_values(errors).expect("matched events");
        Figures {
            p50_us: s.p50,
            p99_us: s.p99,
            max_us: s.max,
            events: s.count,
            cpu_us_per_token: cpu.as_secs_f64() * 1e6 / s.count as f64,
            ttft_err_ms: None,
            first_token_err_us: None,
            allocs_per_token: None,
            heap_kib_per_stream: None,
        }
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "p50_us": (self.p50_us * 10.0).round() / 10.0,
            "p99_us": (self.p99_us * 10.0).round() / 10.0,
            "max_us": (self.max_us * 10.0).round() / 10.0,
            "events": self.events,
            "cpu_us_per_token": (self.cpu_us_per_token * 100.0).round() / 100.0,
            "ttft_error_ms": self.ttft_err_ms.map(|(a, b)| serde_json::json!({"p50": r3(a), "p99": r3(b)})),
            "first_token_error_us": self.first_token_err_us.map(|(a, b)| serde_json::json!({"p50": r1(a), "p99": r1(b)})),
            "client_allocs_per_token": self.allocs_per_token.map(|a| (a * 100.0).round() / 100.0),
            "client_heap_kib_per_stream": self.heap_kib_per_stream.map(r1),
        })
    }
}

/// Signed TTFT errors, ms: the probe's TTFT − the server's own (first token written − request
/// fully received), matched by response id.
fn ttft_errors_ms(run: &ProbeRun, records: &[Record]) -> Vec<f64> {
    matched(run, records)
        .into_iter()
        .filter_map(|(_, t, rec)| {
            let client = t.ttft_ns()? as f64 / 1e6;
            let server = rec.token_written.first()?.checked_duration_since(rec.received)?.as_secs_f64() * 1e3;
            Some(client - server)
        })
        .collect()
}

/// A probe run's figures: token error, TTFT error, CPU, allocations and heap per stream.
fn probe_figures(
    rts: (&tokio::runtime::Runtime, &tokio::runtime::Runtime),
    script: fn(usize) -> Script,
    requests: usize,
    concurrency: usize,
    stamps: Stamps,
    f: impl FnOnce(&mut ProbeOptions),
) -> (Figures, usize) {
    let base = heap::reset_peak();
    let allocs0 = heap::allocs();
    let (run, records, origin, cpu) = probe_run(rts, script, requests, concurrency, stamps, f);
    let allocs = heap::allocs() - allocs0;
    let peak = heap::peak() - base;
    let kernel = run.report.requests.iter().filter(|r| r.stamp_source.as_str() == "kernel").count();
    let mut fig = Figures::of(&timing_errors_us(&run, &records, origin), cpu);
    let t = Summary::from_values(&ttft_errors_ms(&run, &records)).expect("matched");
    fig.ttft_err_ms = Some((t.p50, t.p99));
    let first: Vec<f64> = matched(&run, &records)
        .into_iter()
        .filter_map(|(_, t, rec)| {
            let at = origin + Duration::from_nanos(*t.token_times_ns.first()?);
            let w = *rec.token_written.first()?;
            Some(at.checked_duration_since(w).unwrap_or_else(|| w.duration_since(at)).as_secs_f64() * 1e6)
        })
        .collect();
    let f = Summary::from_values(&first).expect("matched");
    fig.first_token_err_us = Some((f.p50, f.p99));
    fig.allocs_per_token = Some(allocs as f64 / fig.events as f64);
    fig.heap_kib_per_stream = Some(peak as f64 / 1024.0 / concurrency.min(requests) as f64);
    (fig, kernel)
}

/// A bare HTTP/1.1 client: write the request, stamp every read, count token events in it.
async fn raw_stream(addr: std::net::SocketAddr, body: &str, origin: Instant) -> (Option<usize>, Vec<u64>) {
    let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else { return (None, vec![]) };
    let _ = s.set_nodelay(true);
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    if s.write_all(req.as_bytes()).await.is_err() {
        return (None, vec![]);
    }
    let mut buf = vec![0u8; 64 * 1024];
    let mut seen = Vec::new();
    let mut times = Vec::new();
    let mut index = None;
    loop {
        let n = match s.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let at = origin.elapsed().as_nanos() as u64;
        seen.extend_from_slice(&buf[..n]);
        if index.is_none()
            && let Some(i) = find(&seen, b"x-scripted-request: ")
        {
            let digits: String =
                seen[i + 20..].iter().take_while(|b| b.is_ascii_digit()).map(|b| *b as char).collect();
            index = digits.parse().ok();
        }
        let count = count_all(&buf[..n], b"\"content\":\"tok");
        times.extend(std::iter::repeat_n(at, count));
        if find(&seen[seen.len().saturating_sub(n + 16)..], b"data: [DONE]").is_some() {
            break;
        }
    }
    (index, times)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn count_all(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

fn raw_errors(results: &[(Option<usize>, Vec<u64>)], records: &[Record], origin: Instant) -> Vec<f64> {
    let mut errors = Vec::new();
    for (index, times) in results {
        let Some(rec) = index.and_then(|i| records.iter().find(|r| r.index == i)) else { continue };
        for (t, w) in times.iter().zip(&rec.token_written) {
            let arrival = origin + Duration::from_nanos(*t);
            let e = arrival.checked_duration_since(*w).unwrap_or_else(|| w.duration_since(arrival));
            errors.push(e.as_secs_f64() * 1e6);
        }
    }
    errors
}

/// One probe run against a fresh scripted server: the run, the server's record, the origin and
/// the probe thread's CPU time.
fn probe_run(
    rts: (&tokio::runtime::Runtime, &tokio::runtime::Runtime),
    script: fn(usize) -> Script,
    requests: usize,
    concurrency: usize,
    stamps: Stamps,
    f: impl FnOnce(&mut ProbeOptions),
) -> (ProbeRun, Vec<Record>, Instant, Duration) {
    let (server_rt, client_rt) = rts;
    let server = server_rt
        .block_on(ScriptedServer::start(
            script,
            ServerConfig { max_requests: requests, lifetime: Duration::from_secs(120) },
        ))
        .expect("server");
    let mut opts = ProbeOptions {
        url: server.base_url(),
        api: Api::Openai,
        model: "bench".into(),
        prompt: "bench".into(),
        max_tokens: TOKENS as u32,
        requests,
        concurrency,
        rate: None,
        arrival: Arrival::Constant,
        seed: 0,
        timeout: Duration::from_secs(60),
        headers: vec![],
        api_key: None,
        timer: TimerConfig::default(),
        traceparent: true,
    };
    f(&mut opts);
    let origin = Instant::now();
    let cpu0 = thread_cpu();
    let run = client_rt.block_on(probe::run_with(&opts, origin, &|_| {}, stamps)).expect("probe");
    let cpu = thread_cpu() - cpu0;
    assert_eq!(run.report.summary.ok, requests, "every benchmark request must succeed");
    let records = server.records();
    (run, records, origin, cpu)
}

/// The server record of each probe request, matched by the response id in the stream.
fn matched<'a>(
    run: &'a ProbeRun,
    records: &'a [Record],
) -> Vec<(usize, &'a triage_core::timing::RequestTiming, &'a Record)> {
    run.timings
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let t = t.as_ref()?;
            let rec = records.iter().find(|r| Some(r.response_id.as_str()) == t.response_id.as_deref())?;
            Some((i, t, rec))
        })
        .collect()
}

fn r1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

fn r3(v: f64) -> f64 {
    (v * 1_000.0).round() / 1_000.0
}

/// An open-loop run: Poisson arrivals at `rate`/s, `concurrency` slots, `requests` requests.
fn open_loop(
    rts: (&tokio::runtime::Runtime, &tokio::runtime::Runtime),
    rate: f64,
    concurrency: usize,
    requests: usize,
) -> serde_json::Value {
    println!(
        "\nopen loop: poisson arrivals at {rate}/s (seed 0), {requests} requests, at most {concurrency} in flight; each request ~{} ms",
        30 + 10 * (TOKENS - 1)
    );
    println!(
        "  {:<7} | {:>17} | {:>17} | {:>17} | {:>17} | {:>19} | {:>11}",
        "stamps",
        "lag p50/p99 ms",
        "server lag ms",
        "TTFT send ms",
        "TTFT sched ms",
        "token err µs",
        "fell behind"
    );
    let mut out = serde_json::Map::new();
    let mut token_p99 = Vec::new();
    let mut ttft_p99 = (0.0, 0.0);
    for (name, stamps) in [("user", Stamps::User), ("kernel", Stamps::Kernel)] {
        let (run, records, origin, _) = probe_run(rts, script, requests, concurrency, stamps, |o| {
            o.rate = Some(rate);
            o.arrival = Arrival::Poisson;
        });
        let r = &run.report;
        // The lag the server saw: its arrival stamp of the request's first byte − the instant the
        // request was scheduled for (same clock). It includes the request's way over loopback.
        let mut server_lag = Vec::new();
        for (i, t, rec) in matched(&run, &records) {
            let q = &r.requests[i];
            let (Some(at), sent) = (q.scheduled_at_ms, q.sent_at_ms) else { continue };
            let _ = (t, sent);
            let run_start = origin + Duration::from_nanos(run.started_ns);
            let due = run_start + Duration::from_secs_f64(at / 1e3);
            let lag = rec.request_started.checked_duration_since(due).map_or_else(
                || -(due.duration_since(rec.request_started).as_secs_f64()),
                |d| d.as_secs_f64(),
            );
            server_lag.push(lag * 1e3);
        }
        let lag = r.summary.dispatch_lag_ms.clone().expect("open loop");
        let (send, sched) =
            (r.summary.ttft_ms.clone().unwrap(), r.summary.ttft_from_schedule_ms.clone().unwrap());
        let errors = Summary::from_values(&timing_errors_us(&run, &records, origin)).expect("matched");
        let srv = Summary::from_values(&server_lag).expect("matched");
        let schedule = r.summary.schedule.clone().expect("open loop");
        println!(
            "  {name:<7} | {:>8.2} {:>8.2} | {:>8.2} {:>8.2} | {:>8.1} {:>8.1} | {:>8.1} {:>8.1} | {:>9.0} {:>9.0} | {:>11}",
            lag.p50,
            lag.p99,
            srv.p50,
            srv.p99,
            send.p50,
            send.p99,
            sched.p50,
            sched.p99,
            errors.p50,
            errors.p99,
            if schedule.fell_behind {
                format!("yes ({} waited)", schedule.waited_for_slot)
            } else {
                "no".to_owned()
            }
        );
        token_p99.push(errors.p99);
        if stamps == Stamps::Kernel {
            ttft_p99 = (send.p99, sched.p99);
        }
        out.insert(
            name.to_owned(),
            serde_json::json!({
                "dispatch_lag_ms": {"p50": lag.p50, "p99": lag.p99, "max": lag.max},
                "server_seen_lag_ms": {"p50": r3(srv.p50), "p99": r3(srv.p99), "max": r3(srv.max)},
                "ttft_from_send_ms": {"p50": send.p50, "p99": send.p99},
                "ttft_from_schedule_ms": {"p50": sched.p50, "p99": sched.p99},
                "token_error_us": {"p50": r1(errors.p50), "p99": r1(errors.p99), "max": r1(errors.max)},
                "late": schedule.late,
                "waited_for_slot": schedule.waited_for_slot,
                "fell_behind": schedule.fell_behind,
            }),
        );
    }
    let user_vs_kernel = token_p99[0] / token_p99[1].max(1.0);
    let sched_vs_send = ttft_p99.1 / ttft_p99.0.max(0.001);
    println!(
        "  ratios: token error p99 user/kernel {user_vs_kernel:.2}; kernel TTFT p99 from the schedule / from the send {sched_vs_send:.2}"
    );
    out.insert("rate_per_s".into(), rate.into());
    out.insert("concurrency".into(), concurrency.into());
    out.insert("requests".into(), requests.into());
    out.insert("p99_token_error_ratio_user_vs_kernel".into(), r3(user_vs_kernel).into());
    out.insert("ttft_p99_ratio_schedule_vs_send".into(), r3(sched_vs_send).into());
    serde_json::Value::Object(out)
}

const PER_CHUNK: usize = 4;

fn multi_token_script(_: usize) -> Script {
    Script { tokens_per_chunk: PER_CHUNK, usage_per_chunk: true, ..script(0) }
}

/// Chunks of `PER_CHUNK` tokens with the server's per-chunk usage: ITL per chunk and per token
/// against the server's write gaps (per token: the gap over the chunk's tokens).
fn multi_token(
    rts: (&tokio::runtime::Runtime, &tokio::runtime::Runtime),
    concurrency: usize,
    requests: usize,
) -> serde_json::Value {
    println!(
        "\nseveral tokens per chunk: {PER_CHUNK} tokens in each of {TOKENS} chunks (per-chunk usage), c={concurrency}, {requests} requests"
    );
    println!(
        "  {:<7} | {:>24} | {:>24} | {:>9} | {:>12}",
        "stamps", "ITL/chunk err p50/p99/max µs", "ITL/tok err p50/p99/max µs", "tok/chunk", "source"
    );
    let mut out = serde_json::Map::new();
    let mut chunk_p99 = Vec::new();
    for (name, stamps) in [("user", Stamps::User), ("kernel", Stamps::Kernel)] {
        let (run, records, _, _) = probe_run(rts, multi_token_script, requests, concurrency, stamps, |_| {});
        let (mut per_chunk, mut per_token) = (Vec::new(), Vec::new());
        for (_, t, rec) in matched(&run, &records) {
            let truth: Vec<f64> =
                rec.token_written.windows(2).map(|w| (w[1] - w[0]).as_secs_f64() * 1e9).collect();
            for ((g, pt), tr) in t.gaps_ns().zip(t.gaps_per_token_ns()).zip(&truth) {
                per_chunk.push((g as f64 - tr).abs() / 1e3);
                per_token.push((pt - tr / PER_CHUNK as f64).abs() / 1e3);
            }
        }
        let (c, k) = (
            Summary::from_values(&per_chunk).expect("gaps"),
            Summary::from_values(&per_token).expect("gaps"),
        );
        let r = &run.report;
        let tokens_per_chunk = r.requests[0].chunk_tokens.first().copied().unwrap_or(0);
        let source = r.summary.chunk_token_sources.keys().cloned().collect::<Vec<_>>().join(",");
        println!(
            "  {name:<7} | {:>7.0} {:>7.0} {:>8.0} | {:>7.0} {:>7.0} {:>8.0} | {tokens_per_chunk:>9} | {source:>12}",
            c.p50, c.p99, c.max, k.p50, k.p99, k.max
        );
        chunk_p99.push((c.p99, k.p99));
        out.insert(
            name.to_owned(),
            serde_json::json!({
                "itl_per_chunk_error_us": {"p50": r1(c.p50), "p99": r1(c.p99), "max": r1(c.max), "n": c.count},
                "itl_per_token_error_us": {"p50": r1(k.p50), "p99": r1(k.p99), "max": r1(k.max), "n": k.count},
                "itl_ms": r.summary.itl_ms,
                "itl_per_token_ms": r.summary.itl_per_token_ms,
                "chunk_token_source": source,
            }),
        );
    }
    let user_vs_kernel = chunk_p99[0].0 / chunk_p99[1].0.max(1.0);
    let token_vs_chunk = chunk_p99[1].1 / chunk_p99[1].0.max(1.0);
    println!(
        "  ratios: ITL/chunk error p99 user/kernel {user_vs_kernel:.2}; kernel ITL/tok error p99 / ITL/chunk error p99 {token_vs_chunk:.2} (1/{PER_CHUNK} expected)"
    );
    out.insert("tokens_per_chunk".into(), PER_CHUNK.into());
    out.insert("concurrency".into(), concurrency.into());
    out.insert("requests".into(), requests.into());
    out.insert("p99_chunk_error_ratio_user_vs_kernel".into(), r3(user_vs_kernel).into());
    out.insert("kernel_p99_ratio_token_vs_chunk".into(), r3(token_vs_chunk).into());
    serde_json::Value::Object(out)
}

/// Long prompts: `LONG_PROMPT_TOKENS`-token prompts (≈ 6 bytes a token) at concurrency 64,
/// user vs kernel stamps: token error and the TTFT error against the server's own TTFT.
const LONG_PROMPT_TOKENS: usize = 50_000;

fn long_prompt(
    rts: (&tokio::runtime::Runtime, &tokio::runtime::Runtime),
    concurrency: usize,
    requests: usize,
) -> serde_json::Value {
    let prompt = triage_core::endpoint::synthetic_prompt(LONG_PROMPT_TOKENS);
    println!(
        "\nlong prompts: {LONG_PROMPT_TOKENS} tokens ({} KB bodies), c={concurrency}, {requests} requests",
        prompt.len() / 1000
    );
    println!(
        "  {:<7} | {:>24} | {:>19} | {:>9}",
        "stamps", "token err p50/p99/max µs", "TTFT err p50/p99 ms", "allocs/tok"
    );
    let mut out = serde_json::Map::new();
    let mut p99 = Vec::new();
    for (name, stamps) in [("user", Stamps::User), ("kernel", Stamps::Kernel)] {
        let (fig, _) =
            probe_figures(rts, script, requests, concurrency, stamps, |o| o.prompt = prompt.clone());
        let (t50, t99) = fig.ttft_err_ms.unwrap_or_default();
        let (f50, f99) = fig.first_token_err_us.unwrap_or_default();
        println!(
            "  {name:<7} | {:>7.0} {:>7.0} {:>8.0} | {t50:>+9.3} {t99:>+9.3} | {:>9.2}   first-token stamp error p50/p99 {f50:.0}/{f99:.0} µs",
            fig.p50_us,
            fig.p99_us,
            fig.max_us,
            fig.allocs_per_token.unwrap_or_default()
        );
        p99.push((fig.p99_us, t99.abs()));
        out.insert(name.to_owned(), fig.json());
    }
    let token = p99[0].0 / p99[1].0.max(1.0);
    let ttft = p99[0].1 / p99[1].1.max(0.001);
    println!("  ratios user/kernel: token error p99 {token:.2}; |TTFT error| p99 {ttft:.2}");
    out.insert("prompt_tokens".into(), LONG_PROMPT_TOKENS.into());
    out.insert("body_bytes".into(), prompt.len().into());
    out.insert("concurrency".into(), concurrency.into());
    out.insert("requests".into(), requests.into());
    out.insert("p99_token_error_ratio_user_vs_kernel".into(), r3(token).into());
    out.insert("p99_ttft_error_ratio_user_vs_kernel".into(), r3(ttft).into());
    serde_json::Value::Object(out)
}

fn main() {
    heap::count_this_thread();
    let out = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .unwrap_or_else(|| "bench-results/probe.json".into());
    let server_rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
    let client_rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let rts = (&server_rt, &client_rt);
    let mut levels = Vec::new();
    println!(
        "token error = |probe stamp − server write|; TTFT error = probe TTFT − server TTFT (token written − request received), signed"
    );
    println!(
        "{:>5} {:>5} | {:>22} | {:>22} | {:>22} | {:>6} | {:>17} | {:>17} | {:>11} | {:>13}",
        "c",
        "reqs",
        "user p50/p99/max µs",
        "kernel p50/p99/max µs",
        "raw TCP p50/p99/max µs",
        "u/k",
        "TTFT err user ms",
        "TTFT err kern ms",
        "allocs/tok",
        "heap KiB/strm"
    );
    for (concurrency, requests, target_us) in
        [(1usize, 16usize, 1_000.0), (64, 128, 1_000.0), (256, 512, 1_000.0), (1_024, 2_048, 2_000.0)]
    {
        // The probe, with each clock.
        let (probe_fig, _) = probe_figures(rts, script, requests, concurrency, Stamps::User, |_| {});
        let (kernel_fig, kernel_records) =
            probe_figures(rts, script, requests, concurrency, Stamps::Kernel, |_| {});

        // The baseline: bare TCP reads, same server, same concurrency.
        let server = server_rt
            .block_on(ScriptedServer::start(
                script,
                ServerConfig { max_requests: requests, lifetime: Duration::from_secs(120) },
            ))
            .expect("server");
        let addr = server.addr();
        let body = triage_core::endpoint::request_body(&triage_core::endpoint::ProbeRequest {
            api: Api::Openai,
            model: "bench",
            prompt: "bench",
            max_tokens: TOKENS as u32,
        });
        let origin = Instant::now();
        let cpu0 = thread_cpu();
        let results = client_rt.block_on(async {
            let sem = std::sync::Arc::new(tokio::sync::Semaphore::new(concurrency));
            let mut set = tokio::task::JoinSet::new();
            for _ in 0..requests {
                let permit = std::sync::Arc::clone(&sem).acquire_owned().await.expect("semaphore");
                let body = body.clone();
                set.spawn(async move {
                    let r = raw_stream(addr, &body, origin).await;
                    drop(permit);
                    r
                });
            }
            set.join_all().await
        });
        let cpu = thread_cpu() - cpu0;
        let raw_fig = Figures::of(&raw_errors(&results, &server.records(), origin), cpu);
        drop(server);

        let ratio = probe_fig.p99_us / raw_fig.p99_us.max(1.0);
        let user_vs_kernel = probe_fig.p99_us / kernel_fig.p99_us.max(1.0);
        let (u50, u99) = probe_fig.ttft_err_ms.unwrap_or_default();
        let (k50, k99) = kernel_fig.ttft_err_ms.unwrap_or_default();
        println!(
            "{concurrency:>5} {requests:>5} | {:>6.0} {:>6.0} {:>8.0} | {:>6.0} {:>6.0} {:>8.0} | {:>6.0} {:>6.0} {:>8.0} | {user_vs_kernel:>6.2} | {u50:>+8.3} {u99:>+8.3} | {k50:>+8.3} {k99:>+8.3} | {:>5.2} {:>5.2} | {:>6.1} {:>6.1}",
            probe_fig.p50_us,
            probe_fig.p99_us,
            probe_fig.max_us,
            kernel_fig.p50_us,
            kernel_fig.p99_us,
            kernel_fig.max_us,
            raw_fig.p50_us,
            raw_fig.p99_us,
            raw_fig.max_us,
            probe_fig.allocs_per_token.unwrap_or_default(),
            kernel_fig.allocs_per_token.unwrap_or_default(),
            probe_fig.heap_kib_per_stream.unwrap_or_default(),
            kernel_fig.heap_kib_per_stream.unwrap_or_default(),
        );
        println!(
            "{:>13} first-token stamp error p50/p99 µs: user {:.0}/{:.0}, kernel {:.0}/{:.0}; cpu/token: user {:.1} µs, kernel {:.1} µs, raw {:.1} µs; {kernel_records}/{requests} records kernel-stamped; user/raw p99 {ratio:.2}",
            "",
            probe_fig.first_token_err_us.unwrap_or_default().0,
            probe_fig.first_token_err_us.unwrap_or_default().1,
            kernel_fig.first_token_err_us.unwrap_or_default().0,
            kernel_fig.first_token_err_us.unwrap_or_default().1,
            probe_fig.cpu_us_per_token,
            kernel_fig.cpu_us_per_token,
            raw_fig.cpu_us_per_token
        );
        levels.push(serde_json::json!({
            "concurrency": concurrency,
            "requests": requests,
            "tokens_per_request": TOKENS,
            "probe": probe_fig.json(),
            "probe_kernel_stamps": kernel_fig.json(),
            "kernel_stamped_records": kernel_records,
            "p99_ratio_user_vs_kernel": (user_vs_kernel * 100.0).round() / 100.0,
            "kernel_p99_ratio_vs_baseline": ((kernel_fig.p99_us / raw_fig.p99_us.max(1.0)) * 100.0).round() / 100.0,
            "baseline_raw_tcp": raw_fig.json(),
            "p99_ratio_vs_baseline": (ratio * 100.0).round() / 100.0,
            "cpu_ratio_vs_baseline": ((probe_fig.cpu_us_per_token / raw_fig.cpu_us_per_token.max(0.01)) * 100.0).round() / 100.0,
            "target_p99_us": target_us,
            "meets_target": probe_fig.p99_us <= target_us,
            "kernel_meets_target": kernel_fig.p99_us <= target_us,
        }));
    }
    // Memory per stream: every stream in flight at once (requests = concurrency = 1,024).
    let (mem_user, _) = probe_figures(rts, script, 1_024, 1_024, Stamps::User, |_| {});
    let (mem_kernel, _) = probe_figures(rts, script, 1_024, 1_024, Stamps::Kernel, |_| {});
    println!(
        "\nmemory: peak client heap per stream, 1,024 streams in flight at once: user (reqwest) {:.1} KiB, kernel (own transport) {:.1} KiB (heap only; socket buffers are the kernel's)",
        mem_user.heap_kib_per_stream.unwrap_or_default(),
        mem_kernel.heap_kib_per_stream.unwrap_or_default()
    );
    let long = long_prompt(rts, 64, 128);
    let open = vec![open_loop(rts, 50.0, 64, 128), open_loop(rts, 50.0, 8, 64)];
    let multi = multi_token(rts, 16, 32);
    let report = serde_json::json!({
        "schema": "triage.bench.probe/v1",
        "open_loop": open,
        "multi_token": multi,
        "long_prompt": long,
        "memory_1024_streams": {
            "user_heap_kib_per_stream": mem_user.heap_kib_per_stream.map(r1),
            "kernel_heap_kib_per_stream": mem_kernel.heap_kib_per_stream.map(r1),
        },
        "definition": "error = |probe stamp of a token event - server's write completion of that event|, same monotonic clock; ttft_error_ms = probe TTFT - server TTFT (first token written - request fully received), signed; probe = user-space stamps, probe_kernel_stamps = kernel receive stamps",
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "levels": levels,
    });
    if let Some(dir) = std::path::Path::new(&out).parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    std::fs::write(&out, serde_json::to_string_pretty(&report).expect("json") + "\n")
        .expect("writing the bench report");
    println!("written to {out}");
}
