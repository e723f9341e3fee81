//! `triage watch`: a canary for engines that hang while `/health` says 200.
//!
//! The network half. Every interval it reads the engine's `/metrics` (with `--metrics-url`),
//! then sends one tiny streamed request with the probe's own machinery
//! ([`probe::Prepared::send`]: no redirect followed, the key redacted, every read under the
//! deadline), and hands both to the core's [`Watch`], which judges. At most one interval's work
//! is in flight: an interval that comes while it runs is skipped and counted. With `--listen`
//! a small HTTP server answers `GET /metrics` with the watch's exposition (at most
//! [`MAX_CONNECTIONS`] at once, each bounded in time and request size).
//!
//! The scrape gets min(`--timeout`, `--every` − `--timeout`) and the canary `--timeout`, so an
//! interval's work fits in the interval. The scrape goes first, so the engine's running count
//! never includes the watch's own canary.

use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use triage_core::arrival::Arrival;
use triage_core::safe::Secrets;
use triage_core::timing::TimerConfig;
use triage_core::watch::report::definitions;
use triage_core::watch::{EngineScrape, Tick, Watch, WatchConfig, WatchReport};

use crate::args::{Format, WatchArgs};
use crate::output::{self, UsageError, usage};
use crate::probe::{self, Observed, Prepared, ProbeOptions};

/// The canary's prompt: a few tokens in, a few out.
pub const PROMPT: &str = "Reply with one word: ok";
/// Largest `/metrics` body read (vLLM's with many LoRA adapters is a few hundred KiB).
pub const MAX_METRICS_BYTES: usize = 16 << 20;
/// Connections to `--listen` served at once; more are closed unanswered.
pub const MAX_CONNECTIONS: usize = 16;
/// A `--listen` connection is closed after this long, answered or not.
pub const CONNECTION_DEADLINE: Duration = Duration::from_secs(10);
/// Largest request head read on `--listen`.
const MAX_HEAD: usize = 8 << 10;

fn now_ns(origin: Instant) -> u64 {
    u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// What an interval's work brought back.
struct Work {
    at_ns: u64,
    metrics: Option<Result<EngineScrape, String>>,
    canary: Observed,
}

/// Everything an interval needs, shared with its task.
struct Target {
    prepared: Prepared,
    metrics_url: Option<String>,
    scrape_deadline: Duration,
    origin: Instant,
}

impl Target {
    fn secrets(&self) -> &Secrets {
        &self.prepared.secrets
    }

    async fn scrape(&self) -> Option<Result<EngineScrape, String>> {
        let url = self.metrics_url.as_deref()?;
        Some(scrape(self.prepared.client(), url, self.scrape_deadline, self.origin, self.secrets()).await)
    }

    async fn interval(&self, index: usize) -> Work {
        let at_ns = now_ns(self.origin);
        let metrics = self.scrape().await;
        let canary = self.prepared.send(index, 0).await;
        Work { at_ns, metrics, canary }
    }
}

/// Read the engine's `/metrics` within `deadline`: status 200, at most [`MAX_METRICS_BYTES`].
/// Errors are redacted.
async fn scrape(
    client: &reqwest::Client,
    url: &str,
    deadline: Duration,
    origin: Instant,
    secrets: &Secrets,
) -> Result<EngineScrape, String> {
    let until = tokio::time::Instant::now() + deadline;
    let shown = secrets.redact(url).into_owned();
    let request = client.get(url).header("accept-encoding", "identity").send();
    let mut resp = match tokio::time::timeout_at(until, request).await {
        Err(_) => return Err(format!("{shown}: no answer within {deadline:?}")),
        Ok(Err(e)) => {
            return Err(secrets.redact(&probe::classify_send_error(&e, &shown).message).into_owned());
        }
        Ok(Ok(r)) => r,
    };
    let status = resp.status();
    if status.is_redirection() {
        return Err(format!("{shown}: HTTP {} (a redirect, not followed)", status.as_u16()));
    }
    if status != reqwest::StatusCode::OK {
        return Err(format!("{shown}: HTTP {}", status.as_u16()));
    }
    let mut body = Vec::new();
    loop {
        match tokio::time::timeout_at(until, resp.chunk()).await {
            Err(_) => return Err(format!("{shown}: the body did not end within {deadline:?}")),
            Ok(Err(e)) => {
                return Err(secrets.redact(&format!("{shown}: reading the body: {e}")).into_owned());
            }
            Ok(Ok(None)) => break,
            Ok(Ok(Some(b))) => {
                if body.len() + b.len() > MAX_METRICS_BYTES {
                    return Err(format!("{shown}: the body is larger than {} MiB", MAX_METRICS_BYTES >> 20));
                }
                body.extend_from_slice(&b);
            }
        }
    }
    Ok(EngineScrape::parse(&String::from_utf8_lossy(&body), now_ns(origin)))
}

/// Check the flags, then watch: until interrupted, or one interval with `--once`.
pub async fn run(args: WatchArgs) -> anyhow::Result<ExitCode> {
    check_flags(&args)?;
    let opts = probe_options(&args)?;
    if let Err(e) = probe::resolve(&opts) {
        return usage(e.to_string());
    }
    let listener = match &args.listen {
        Some(addr) => Some(
            TcpListener::bind(addr.as_str())
                .await
                .map_err(|e| UsageError(format!("--listen {addr}: {e}")))?,
        ),
        None => None,
    };
    let origin = Instant::now();
    let prepared = probe::prepare(&opts, origin)?;
    let secrets = prepared.secrets.clone();
    for w in &prepared.resolved.warnings {
        output::note(format_args!("triage watch: {}", secrets.redact(w)));
    }
    if opts.api_key.is_none() {
        output::note(format_args!(
            "triage watch: no API key found (looked in {}); the canary goes out without one",
            opts.api.default_key_envs().join(", ")
        ));
    }
    let shown_url = secrets.redact(&prepared.resolved.url).into_owned();
    let shown_metrics = args.metrics_url.as_deref().map(|m| secrets.redact(m).into_owned());
    let config = WatchConfig {
        ttft_bound_ns: ns(Duration::from_secs_f64(args.slo_ttft_ms / 1e3)),
        timeout_ns: ns(args.timeout),
        every_ns: ns(args.every),
    };
    let mut watch = Watch::new(config);
    let page = Arc::new(Mutex::new(watch.exposition()));
    if let Some(listener) = listener {
        let addr = listener.local_addr().context("reading the --listen address")?;
        output::note(format_args!("triage watch: metrics on http://{addr}/metrics"));
        tokio::spawn(serve(listener, Arc::clone(&page)));
    }
    let target = Arc::new(Target {
        prepared,
        metrics_url: args.metrics_url.clone(),
        scrape_deadline: args.timeout.min(args.every - args.timeout),
        origin,
    });
    let print = |report: &WatchReport| -> anyhow::Result<()> {
        match args.format {
            Format::Json => output::json(&(serde_json::to_string(report)? + "\n"))?,
            Format::Text => output::text(&format!(
                "+{:.1}s #{} {}\n",
                report.at_ms / 1e3,
                report.tick,
                report.observation.line()
            ))?,
        }
        Ok(())
    };
    if args.format == Format::Text {
        output::text(&head_text(&args, &shown_url, shown_metrics.as_deref(), config))?;
    }
    let publish = |watch: &Watch| {
        if let Ok(mut p) = page.lock() {
            *p = watch.exposition();
        }
    };
    let report = |watch: &Watch, at_ns: u64, obs| {
        WatchReport::new(&shown_url, shown_metrics.as_deref(), &args.model, at_ns as f64 / 1e6, obs, watch)
    };
    if args.once {
        let start = tokio::time::Instant::now();
        let at_ns = now_ns(origin);
        let first = target.scrape().await;
        let canary = target.prepared.send(0, 0).await;
        let metrics = match first {
            Some(Ok(first)) => {
                watch.baseline(first);
                tokio::time::sleep_until(start + args.every).await;
                target.scrape().await
            }
            other => other,
        };
        let obs = watch.observe(Tick { at_ns, canary: Some(&canary.record), metrics });
        publish(&watch);
        let serving = obs.serving;
        print(&report(&watch, at_ns, obs))?;
        return Ok(if serving { ExitCode::SUCCESS } else { ExitCode::FAILURE });
    }
    let mut interval = tokio::time::interval(args.every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut in_flight: Option<tokio::task::JoinHandle<Work>> = None;
    let mut index = 0usize;
    loop {
        tokio::select! {
            // A finished interval is collected before the next one is started or skipped.
            biased;
            done = async { in_flight.as_mut().expect("guarded").await }, if in_flight.is_some() => {
                in_flight = None;
                let work = done.context("the interval's task")?;
                let tick = Tick { at_ns: work.at_ns, canary: Some(&work.canary.record), metrics: work.metrics };
                let obs = watch.observe(tick);
                publish(&watch);
                print(&report(&watch, work.at_ns, obs))?;
            }
            _ = interval.tick() => {
                if in_flight.is_some() {
                    // One canary per target: this interval is skipped, and counted.
                    watch.skip();
                    publish(&watch);
                    continue;
                }
                let t = Arc::clone(&target);
                let i = index;
                index = index.wrapping_add(1);
                in_flight = Some(tokio::spawn(async move { t.interval(i).await }));
            }
        }
    }
}

/// The flags `clap` cannot check alone: the deadline below the interval, an http(s) metrics URL.
fn check_flags(args: &WatchArgs) -> anyhow::Result<()> {
    if args.timeout >= args.every {
        return usage(format!(
            "--timeout ({:?}) must be below --every ({:?}): one canary per interval, never two at once",
            args.timeout, args.every
        ));
    }
    if let Some(m) = &args.metrics_url {
        match reqwest::Url::parse(m) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => {}
            _ => {
                return usage(format!(
                    "--metrics-url {m:?}: expected an http(s) URL, e.g. http://host:8000/metrics"
                ));
            }
        }
    }
    Ok(())
}

/// The canary: one request of the probe, under the watch's deadline.
fn probe_options(args: &WatchArgs) -> anyhow::Result<ProbeOptions> {
    Ok(ProbeOptions {
        url: args.url.clone(),
        api: args.api,
        model: args.model.clone(),
        prompt: PROMPT.to_owned(),
        max_tokens: args.max_tokens,
        requests: 1,
        concurrency: 1,
        rate: None,
        arrival: Arrival::Constant,
        seed: 0,
        timeout: args.timeout,
        headers: args.headers.clone(),
        api_key: probe::api_key(args.api, args.api_key_env.as_deref())?,
        timer: TimerConfig::default(),
        traceparent: false,
    })
}

/// The text format's first lines: what is watched, how, and what each figure means.
fn head_text(args: &WatchArgs, shown_url: &str, shown_metrics: Option<&str>, config: WatchConfig) -> String {
    let mut head = format!(
        "triage watch {shown_url} (model {}): a canary every {:?}, deadline {:?}, TTFT bound {} ms{}\n",
        args.model,
        args.every,
        args.timeout,
        args.slo_ttft_ms,
        shown_metrics.map(|m| format!(", metrics {m}")).unwrap_or_default()
    );
    for d in definitions(config) {
        head.push_str(&format!("  {}: {}\n", d.name, d.meaning));
    }
    head
}

/// Answer `GET /metrics` on `listener` with the latest exposition until the process ends.
async fn serve(listener: TcpListener, page: Arc<Mutex<String>>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(_) => {
                // Out of descriptors, or a connection reset before it was taken: breathe.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = Arc::clone(&slots).try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let page = Arc::clone(&page);
        tokio::spawn(async move {
            let _ = tokio::time::timeout(CONNECTION_DEADLINE, answer(stream, &page)).await;
            drop(permit);
        });
    }
}

/// One request, one answer, then the connection closes.
async fn answer(mut stream: TcpStream, page: &Mutex<String>) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
        if head.len() > MAX_HEAD {
            return respond(&mut stream, "431 Request Header Fields Too Large", "", b"", false).await;
        }
    }
    let line = String::from_utf8_lossy(head.split(|b| *b == b'\n').next().unwrap_or_default()).into_owned();
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let head_only = method == "HEAD";
    match (method, path) {
        ("GET" | "HEAD", "/metrics") => {
            let body = page.lock().map(|p| p.clone()).unwrap_or_default();
            let kind = "text/plain; version=0.0.4; charset=utf-8";
            respond(&mut stream, "200 OK", kind, body.as_bytes(), head_only).await
        }
        ("GET" | "HEAD", _) => {
            respond(&mut stream, "404 Not Found", "text/plain", b"see /metrics\n", head_only).await
        }
        _ => respond(&mut stream, "405 Method Not Allowed", "text/plain", b"GET /metrics\n", false).await,
    }
}

/// Write the answer and close; `head_only` (a HEAD request) sends the length but not the body.
async fn respond(
    stream: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
    head_only: bool,
) -> std::io::Result<()> {
    let mut out = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
    if !content_type.is_empty() {
        out.push_str(&format!("Content-Type: {content_type}\r\n"));
    }
    out.push_str("\r\n");
    stream.write_all(out.as_bytes()).await?;
    if !head_only {
        stream.write_all(body).await?;
    }
    stream.shutdown().await
}
