//! `triage probe`: stream requests at an OpenAI- or Anthropic-compatible endpoint and time them.
//!
//! The network half of the probe. Every chunk is stamped and handed to the core's sans-I/O
//! [`StreamTimer`]. On Linux, plain `http://` without a proxy goes over the probe's own
//! transport ([`crate::stamped`]) and a chunk takes the kernel's receive time of the read that
//! completed it (`stamp_source: kernel`); elsewhere (TLS, a proxy, other systems) it takes the
//! monotonic clock's time when the body stream yields it (`user`), which includes however long
//! the task waited to be polled. All judgement
//! (statuses, HTML instead of SSE, incomplete streams) is the core's, so the site's probe says
//! the same things. Every request is bounded by `timeout`, whatever the server does.
//!
//! Hostile servers are expected: no redirect is followed (a 3xx is the `redirect` fault, with
//! its `Location`), so the key and `--header` values only ever go to the URL the user named;
//! every string the server sends is redacted (the key, every header value, credential shapes)
//! before it is cut or kept; a compressed body is reported, not guessed at; and a request's
//! memory is bounded (`timing::MAX_TOKEN_TIMES`, the SSE parser's limits, 4 KiB of an error body).
//!
//! Every request carries a W3C `traceparent` of its own (a fresh random trace id, sampled; the
//! randomness is the TLS stack's, from the operating system) and its record the trace id, so a
//! slow request can be looked up in the server's traces; a `--header traceparent:…` is sent as
//! given instead, its trace id recorded. Each request also gets the ids of the span
//! `--otlp` exports for it ([`SpanIds`]), and the run the wall-clock time of its origin, so the
//! export can give unix times.
//!
//! Open loop (`--rate`): the starts follow a schedule fixed before the first request
//! ([`triage_core::arrival`]); each request is sent at its scheduled instant, or as soon after
//! as the client can (a busy client, every `--concurrency` slot taken). Its record keeps the
//! scheduled instant, so the dispatch lag and the latencies from the schedule are measured, not
//! hidden (coordinated omission).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use tokio::sync::{Semaphore, TryAcquireError};
use triage_core::arrival::{self, Arrival};
use triage_core::endpoint::{self, Api, ProbeRequest, Resolved};
use triage_core::fault::{self, Fault, FaultKind};
use triage_core::probe::{ProbeReport, RequestRecord, RunConfig, StampSource};
use triage_core::safe::Secrets;
use triage_core::timing::{RequestTiming, StreamTimer, TimerConfig};
use triage_core::trace::{self, TraceId, TraceParent};

/// Everything a probe run needs.
#[derive(Clone, Debug)]
pub struct ProbeOptions {
    /// Base URL or full endpoint, as the user typed it.
    pub url: String,
    pub api: Api,
    pub model: String,
    pub prompt: String,
    pub max_tokens: u32,
    pub requests: usize,
    pub concurrency: usize,
    /// Requests started per second (open loop), limited by `concurrency`.
    pub rate: Option<f64>,
    /// How `rate` spaces the starts (ignored without `rate`).
    pub arrival: Arrival,
    /// Seed of a `poisson` schedule.
    pub seed: u64,
    /// Hard limit for one request, from sending to the end of the body.
    pub timeout: Duration,
    pub headers: Vec<(String, String)>,
    /// Never printed; redacted from every message.
    pub api_key: Option<String>,
    pub timer: TimerConfig,
    /// Send each request with a fresh W3C `traceparent` (unless `headers` holds one).
    pub traceparent: bool,
}

/// One request's outcome, with the raw timing kept for callers that compare instants
/// (benchmarks, tests against the scripted server's record).
#[derive(Clone, Debug)]
pub struct Observed {
    pub record: RequestRecord,
    pub timing: Option<RequestTiming>,
    /// The request's span for the OTLP export; `None` only when the system's randomness failed.
    pub span: Option<RequestSpan>,
}

/// The ids a request's span is exported under (`--otlp`). With the `traceparent` the probe
/// made, its trace id and its parent id: the span is the parent of the server's own span for
/// the request. With the user's own, its trace id, a fresh span id, and the user's parent id as
/// the span's parent. With none sent, fresh ids that join nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpanIds {
    pub trace_id: TraceId,
    pub span_id: [u8; 8],
    pub parent_span_id: Option<[u8; 8]>,
}

/// A request's span: its ids, and when it was sent and ended (ns since the run's origin).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestSpan {
    pub ids: SpanIds,
    pub sent_ns: u64,
    pub ended_ns: u64,
}

/// A finished run.
#[derive(Clone, Debug)]
pub struct ProbeRun {
    pub report: ProbeReport,
    /// Raw timings by request index; instants are nanoseconds since the run's `origin`.
    pub timings: Vec<Option<RequestTiming>>,
    /// Spans by request index, for the OTLP export.
    pub spans: Vec<Option<RequestSpan>>,
    /// The wall clock (unix ns) at the run's `origin`, sampled once at the run's end: a unix
    /// time is this plus an instant. A step of the wall clock during the run is not followed.
    pub origin_unix_ns: u64,
    /// When the run started, ns since the origin.
    pub started_ns: u64,
    /// When the run ended, ns since the origin.
    pub ended_ns: u64,
}

/// Which clock the probe may stamp chunks with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stamps {
    /// Kernel receive timestamps where the platform and the URL allow (Linux, plain `http://`,
    /// no proxy in the environment), else user-space stamps.
    Kernel,
    /// User-space stamps always (the time the body stream yields a chunk): for comparisons.
    User,
}

fn now_ns(origin: Instant) -> u64 {
    u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Build the HTTP client: rustls with the ring provider, no proxy discovery surprises, Nagle off,
/// and no redirects followed (see the module docs).
pub fn client(concurrency: usize) -> anyhow::Result<reqwest::Client> {
    // Installing twice is harmless (the second call reports the first provider).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .tcp_nodelay(true)
        .pool_max_idle_per_host(concurrency.max(1))
        .user_agent(concat!("llm-triage/", env!("CARGO_PKG_VERSION")))
        .build()
        .context("building the HTTP client")
}

/// Resolve the URL the way every surface does.
pub fn resolve(opts: &ProbeOptions) -> Result<Resolved, endpoint::EndpointError> {
    endpoint::resolve(&opts.url, opts.api)
}

/// Run the probe. `origin` is the clock origin of every instant in the result; `on_done` is
/// called as each request finishes (progress bars).
pub async fn run(
    opts: &ProbeOptions,
    origin: Instant,
    on_done: &(dyn Fn(&RequestRecord) + Sync),
) -> anyhow::Result<ProbeRun> {
    run_with(opts, origin, on_done, Stamps::Kernel).await
}

/// [`run`] with the choice of clock for the chunks' stamps.
pub async fn run_with(
    opts: &ProbeOptions,
    origin: Instant,
    on_done: &(dyn Fn(&RequestRecord) + Sync),
    stamps: Stamps,
) -> anyhow::Result<ProbeRun> {
    let Prepared { shared, resolved, secrets } = prepare_with(opts, origin, stamps)?;
    // The connections the run will use are opened before it starts, ramped, so that their
    // handshakes are in no request's timing and no schedule's lag.
    #[cfg(target_os = "linux")]
    if let Some(c) = &shared.stamped {
        c.warm(&shared.url, opts.concurrency.max(1).min(opts.requests)).await;
    }
    let run_start = now_ns(origin);
    let sem = Arc::new(Semaphore::new(opts.concurrency.max(1)));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, Observed)>();
    // Open loop: every start is fixed before the first is sent (ns from `run_start`).
    let schedule = opts
        .rate
        .filter(|r| *r > 0.0)
        .map(|r| arrival::schedule_ns(opts.arrival, r, opts.requests, opts.seed));
    let scheduler = {
        let shared = Arc::clone(&shared);
        let sem = Arc::clone(&sem);
        let n = opts.requests;
        tokio::spawn(async move {
            for i in 0..n {
                let due_ns = schedule.as_ref().and_then(|s| s.get(i)).map(|&s| run_start.saturating_add(s));
                let (permit, due) = match due_ns {
                    Some(at_ns) => {
                        tokio::time::sleep_until(instant_at(origin, at_ns)).await;
                        // A request due while every slot is taken waits for one; its lag says so.
                        let (permit, waited_for_slot) = match Arc::clone(&sem).try_acquire_owned() {
                            Ok(p) => (p, false),
                            Err(TryAcquireError::Closed) => return,
                            Err(TryAcquireError::NoPermits) => {
                                let Ok(p) = Arc::clone(&sem).acquire_owned().await else { return };
                                (p, true)
                            }
                        };
                        (permit, Some(Due { at_ns, waited_for_slot }))
                    }
                    None => {
                        let Ok(p) = Arc::clone(&sem).acquire_owned().await else { return };
                        (p, None)
                    }
                };
                let shared = Arc::clone(&shared);
                let tx = tx.clone();
                tokio::spawn(async move {
                    let observed = one_request(&shared, i, run_start, due).await;
                    drop(permit);
                    let _ = tx.send((i, observed));
                });
            }
        })
    };
    let mut records = Vec::with_capacity(opts.requests);
    let mut timings: Vec<Option<RequestTiming>> = vec![None; opts.requests];
    let mut spans: Vec<Option<RequestSpan>> = vec![None; opts.requests];
    while let Some((i, observed)) = rx.recv().await {
        on_done(&observed.record);
        records.push(observed.record);
        timings[i] = observed.timing;
        spans[i] = observed.span;
        if records.len() == opts.requests {
            break;
        }
    }
    scheduler.await.context("probe scheduler")?;
    let ended_ns = now_ns(origin);
    let wall_ms = (ended_ns - run_start) as f64 / 1e6;
    let origin_unix_ns = origin_unix_ns(origin);
    let mut warnings = resolved.warnings.clone();
    if opts.api_key.is_none() {
        warnings.push(format!(
            "no API key found (looked in {}); requests go out without one",
            opts.api.default_key_envs().join(", ")
        ));
    }
    let redact_all = |s: String| secrets.redact(&s).into_owned();
    let warnings = warnings.into_iter().map(redact_all).collect();
    let config = RunConfig {
        api: opts.api,
        model: opts.model.clone(),
        requests: opts.requests,
        concurrency: opts.concurrency,
        rate_per_s: opts.rate,
        timeout_ms: u64::try_from(opts.timeout.as_millis()).unwrap_or(u64::MAX),
        max_tokens: opts.max_tokens,
        prompt_chars: opts.prompt.chars().count(),
        arrival: opts.rate.map(|_| opts.arrival),
        seed: (opts.rate.is_some() && opts.arrival == Arrival::Poisson).then_some(opts.seed),
    };
    let mut report = ProbeReport::new(redact_all(resolved.url), config, warnings, wall_ms, records);
    let kernel = report.requests.iter().filter(|r| r.stamp_source == StampSource::Kernel).count();
    report.limits = vec![
        stamps_limit(kernel, report.requests.len()),
        "chunks can coalesce several SSE events (proxies, TCP); those events share one arrival time and their gaps read 0".to_owned(),
        "output tokens come from the server's usage when it sends one, otherwise they are counted events (token_source)".to_owned(),
    ];
    Ok(ProbeRun { report, timings, spans, origin_unix_ns, started_ns: run_start, ended_ns })
}

/// The wall clock (unix ns) at `origin`: the clock read now, less the time since the origin.
pub fn origin_unix_ns(origin: Instant) -> u64 {
    let since = now_ns(origin);
    let unix = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    u64::try_from(unix.saturating_sub(u128::from(since))).unwrap_or(u64::MAX)
}

/// The report's one line on which clock stamped the chunks, for `kernel` of `n` requests.
fn stamps_limit(kernel: usize, n: usize) -> String {
    let user = "each chunk is stamped when the HTTP stack hands it over (monotonic clock, ~µs resolution, plus however long the task waited to run: this grows with load)";
    let kern = "each chunk is stamped with the kernel's receive time of the read that completed it (SO_TIMESTAMPNS, converted from CLOCK_REALTIME to the monotonic clock: ±µs), so a busy client does not delay it";
    let rest = "loopback adds ~0.05 ms, real networks add their RTT to TTFT";
    if kernel == n && n > 0 {
        format!("client-side timing, stamp_source kernel: {kern}; {rest}")
    } else if kernel == 0 {
        format!("client-side timing, stamp_source user: {user}; {rest}")
    } else {
        format!(
            "client-side timing: {kernel} of {n} requests stamp_source kernel ({kern}), the others user ({user}); {rest}"
        )
    }
}

/// A request made ready to be sent again and again: the client, the endpoint, the body and the
/// headers (the key's marked sensitive). `triage watch` sends its canary with it.
pub struct Prepared {
    shared: Arc<Shared>,
    /// The endpoint as resolved, with its warnings.
    pub resolved: Resolved,
    /// The run's secrets ([`secrets_of`]).
    pub secrets: Secrets,
}

impl Prepared {
    /// Send the request once, bounded by the options' timeout; `run_start` is the origin that
    /// `sent_at_ms` counts from.
    pub async fn send(&self, index: usize, run_start: u64) -> Observed {
        one_request(&self.shared, index, run_start, None).await
    }

    /// The HTTP client (no redirects followed), for the host's other requests.
    pub fn client(&self) -> &reqwest::Client {
        &self.shared.client
    }
}

/// Resolve the URL, build the client, the body and the headers.
pub fn prepare(opts: &ProbeOptions, origin: Instant) -> anyhow::Result<Prepared> {
    prepare_with(opts, origin, Stamps::Kernel)
}

/// A proxy named in the environment (reqwest would use it; the kernel-stamped transport does
/// not speak to proxies, so such runs keep reqwest and user-space stamps).
fn proxy_in_env() -> bool {
    ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()))
}

/// Credentials written in the URL (`http://user:pw@host/…`): reqwest sends them as basic auth,
/// the kernel-stamped transport does not, so such runs keep reqwest and user-space stamps.
fn has_userinfo(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    authority.contains('@')
}

/// [`prepare`] with the choice of clock for the chunks' stamps.
pub fn prepare_with(opts: &ProbeOptions, origin: Instant, stamps: Stamps) -> anyhow::Result<Prepared> {
    let mut resolved = resolve(opts)?;
    let client = client(opts.concurrency)?;
    let kernel = stamps == Stamps::Kernel
        && cfg!(target_os = "linux")
        && resolved.url.get(..7).is_some_and(|s| s.eq_ignore_ascii_case("http://"))
        && !has_userinfo(&resolved.url)
        && !proxy_in_env();
    #[cfg(target_os = "linux")]
    let stamped = kernel.then(|| crate::stamped::client(opts.concurrency.max(1), opts.timeout));
    #[cfg(not(target_os = "linux"))]
    let _ = kernel;
    let body = endpoint::request_body(&ProbeRequest {
        api: opts.api,
        model: &opts.model,
        prompt: &opts.prompt,
        max_tokens: opts.max_tokens,
    });
    let mut headers = reqwest::header::HeaderMap::new();
    let mut add = |k: &str, v: &str| -> anyhow::Result<()> {
        let name = reqwest::header::HeaderName::from_bytes(k.trim().as_bytes())
            .with_context(|| format!("invalid header name {k:?}"))?;
        let mut value = reqwest::header::HeaderValue::from_str(v.trim())
            .with_context(|| format!("invalid value for header {k:?}"))?;
        value.set_sensitive(true);
        headers.insert(name, value);
        Ok(())
    };
    for (k, v) in endpoint::base_headers(opts.api) {
        add(k, v)?;
    }
    // Timing a compressed stream would time the compressor; ask for none.
    add("accept-encoding", "identity")?;
    #[cfg(target_os = "linux")]
    if stamped.is_some() {
        // What reqwest adds by itself, so both transports send the same request.
        add("user-agent", concat!("llm-triage/", env!("CARGO_PKG_VERSION")))?;
        add("accept", "*/*")?;
    }
    if let Some(key) = &opts.api_key {
        let (k, v) = endpoint::auth_header(opts.api, key);
        add(k, &v)?;
    }
    for (k, v) in &opts.headers {
        add(k, v)?;
    }
    let trace = trace_mode(opts);
    if trace == Trace::Given(None) {
        resolved.warnings.push(format!(
            "--header {}: not a valid W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>, lowercase); sent as given, no trace id recorded",
            trace::HEADER
        ));
    }
    let secrets = secrets_of(opts);
    let shared = Arc::new(Shared {
        client,
        #[cfg(target_os = "linux")]
        stamped,
        url: resolved.url.clone(),
        shown_url: secrets.redact(&resolved.url).into_owned(),
        body: bytes::Bytes::from(body),
        headers,
        timeout: opts.timeout,
        timer: opts.timer,
        secrets: secrets.clone(),
        origin,
        trace,
        random: rustls::crypto::ring::default_provider().secure_random,
    });
    Ok(Prepared { shared, resolved, secrets })
}

/// The API key: from the variable `--api-key-env` names (a usage error when it is unset or
/// empty), else from the API's usual variables (`OPENAI_API_KEY` / `ANTHROPIC_API_KEY`, then
/// `TAOTOKEN_API_KEY`).
pub fn api_key(api: Api, api_key_env: Option<&str>) -> anyhow::Result<Option<String>> {
    if let Some(var) = api_key_env {
        let key = std::env::var(var).ok().filter(|k| !k.is_empty());
        if key.is_none() {
            return crate::output::usage(format!(
                "--api-key-env {var}: that environment variable is not set (or empty)"
            ));
        }
        return Ok(key);
    }
    Ok(api.default_key_envs().iter().find_map(|v| std::env::var(v).ok().filter(|k| !k.is_empty())))
}

/// The run's secrets: the API key and the value of every header the user added.
pub fn secrets_of(opts: &ProbeOptions) -> Secrets {
    let mut s = Secrets::new();
    if let Some(k) = &opts.api_key {
        s.add(k);
    }
    for (_, v) in &opts.headers {
        s.add(v);
    }
    s
}

/// Where a request's `traceparent` comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Trace {
    /// None is sent.
    Off,
    /// A fresh one per request.
    Fresh,
    /// The user's `--header traceparent:`, sent as given: parsed, when it is valid.
    Given(Option<TraceParent>),
}

fn trace_mode(opts: &ProbeOptions) -> Trace {
    match opts.headers.iter().find(|(k, _)| k.trim().eq_ignore_ascii_case(trace::HEADER)) {
        Some((_, v)) => Trace::Given(TraceParent::parse(v)),
        None if opts.traceparent => Trace::Fresh,
        None => Trace::Off,
    }
}

struct Shared {
    client: reqwest::Client,
    /// The kernel-stamped transport, when this run uses it.
    #[cfg(target_os = "linux")]
    stamped: Option<crate::stamped::StampedClient>,
    url: String,
    /// `url` redacted, for messages.
    shown_url: String,
    /// The request body, shared by every request (a long prompt is not copied per request).
    body: bytes::Bytes,
    headers: reqwest::header::HeaderMap,
    timeout: Duration,
    timer: TimerConfig,
    secrets: Secrets,
    origin: Instant,
    trace: Trace,
    /// The operating system's randomness (through the TLS stack), for trace ids.
    random: &'static dyn rustls::crypto::SecureRandom,
}

impl Shared {
    fn redact(&self, s: &str) -> String {
        self.secrets.redact(s).into_owned()
    }

    /// The `traceparent` this request adds (a fresh one, or none), the trace id it records and
    /// the ids of its exported span ([`SpanIds`]).
    fn traceparent(&self) -> (Option<TraceParent>, Option<TraceId>, Option<SpanIds>) {
        let mut bytes = [0u8; 24];
        // Without randomness the request goes out without one rather than with a guess.
        let fresh = self.random.fill(&mut bytes).ok().map(|()| TraceParent::from_random(bytes));
        let own = fresh.map(|f| SpanIds { trace_id: f.trace_id, span_id: f.parent_id, parent_span_id: None });
        match self.trace {
            Trace::Off | Trace::Given(None) => (None, None, own),
            Trace::Given(Some(tp)) => {
                let span = fresh.map(|f| SpanIds {
                    trace_id: tp.trace_id,
                    span_id: f.parent_id,
                    parent_span_id: Some(tp.parent_id),
                });
                (None, Some(tp.trace_id), span)
            }
            Trace::Fresh => (fresh, fresh.map(|t| t.trace_id), own),
        }
    }

    /// The run's headers, with this request's `traceparent` when it adds one.
    fn headers(&self, tp: Option<TraceParent>) -> reqwest::header::HeaderMap {
        let mut h = self.headers.clone();
        if let Some(v) = tp.and_then(|tp| reqwest::header::HeaderValue::from_str(&tp.header_value()).ok()) {
            h.insert(reqwest::header::HeaderName::from_static(trace::HEADER), v);
        }
        h
    }
}

/// Errors as text with their whole source chain, for classification and messages.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = String::new();
    for layer in layers(e) {
        let t = layer.to_string();
        if !s.contains(&t) {
            if !s.is_empty() {
                s.push_str(": ");
            }
            s.push_str(&t);
        }
    }
    s
}

/// Every error in the chain. `io::Error::source` skips the error it wraps, so descend into
/// `get_ref` ourselves (hyper wraps rustls errors in two layers of `io::Error`).
fn layers<'a>(
    e: &'a (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(e), |inner| match inner.downcast_ref::<std::io::Error>() {
        Some(io) => io.get_ref().map(|i| i as &(dyn std::error::Error + 'static)),
        None => inner.source(),
    })
}

fn io_kind(e: &(dyn std::error::Error + 'static)) -> Option<std::io::ErrorKind> {
    layers(e)
        .filter_map(|l| l.downcast_ref::<std::io::Error>())
        .map(std::io::Error::kind)
        .find(|k| *k != std::io::ErrorKind::Other)
}

/// A rustls error anywhere in the chain.
fn is_tls_error(e: &(dyn std::error::Error + 'static)) -> bool {
    layers(e).any(|l| l.downcast_ref::<rustls::Error>().is_some())
}

/// Map a failure to send the request (or to get its headers) onto a fault kind.
pub fn classify_send_error(e: &reqwest::Error, url: &str) -> Fault {
    classify(e, e.is_builder(), e.is_connect(), url)
}

/// [`classify_send_error`] for any transport: `builder` when the request could not be built,
/// `connect` when the connection could not be made.
fn classify(e: &(dyn std::error::Error + 'static), builder: bool, connect: bool, url: &str) -> Fault {
    let text = chain(e);
    let lower = text.to_ascii_lowercase();
    let kind = if builder {
        FaultKind::InvalidUrl
    } else if io_kind(e) == Some(std::io::ErrorKind::ConnectionRefused)
        || lower.contains("connection refused")
    {
        FaultKind::ConnectionRefused
    } else if lower.contains("dns error")
        || lower.contains("failed to lookup address")
        || lower.contains("name or service not known")
    {
        FaultKind::Dns
    } else if is_tls_error(e)
        || lower.contains("certificate")
        || lower.contains("tls")
        || lower.contains("handshake")
    {
        FaultKind::Tls
    } else if lower.contains("connection closed before message completed")
        || lower.contains("incomplete message")
        || matches!(io_kind(e), Some(std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::UnexpectedEof))
    {
        FaultKind::ConnectionClosed
    } else if connect {
        FaultKind::Connect
    } else {
        FaultKind::Other
    };
    let hint = match kind {
        FaultKind::ConnectionRefused => " — nothing listens there: wrong port, or the server is down",
        FaultKind::Dns => " — the host name does not resolve",
        FaultKind::Tls => " — TLS failed: http vs https mix-up, or an untrusted certificate",
        FaultKind::ConnectionClosed => {
            " — the server closed the connection without answering (crash, or a proxy dropping it)"
        }
        _ => "",
    };
    Fault::new(kind, format!("{url}: {text}{hint}"))
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A response body from either transport.
enum Body {
    Reqwest(reqwest::Response),
    #[cfg(target_os = "linux")]
    Stamped(crate::stamped::Body),
}

impl Body {
    /// When the request's last byte was handed to the kernel, where the transport knows it.
    fn request_written(&self) -> Option<Instant> {
        match self {
            Body::Reqwest(_) => None,
            #[cfg(target_os = "linux")]
            Body::Stamped(b) => b.last_write(),
        }
    }

    /// The next chunk, with the kernel's receive time (`CLOCK_REALTIME` ns) when there is one.
    async fn chunk(&mut self) -> Result<Option<(bytes::Bytes, Option<i64>)>, BoxError> {
        match self {
            Body::Reqwest(r) => Ok(r.chunk().await?.map(|b| (b, None))),
            #[cfg(target_os = "linux")]
            Body::Stamped(b) => Ok(b.chunk().await?),
        }
    }
}

/// Send the request on the run's transport: the status, the headers and the body, or the
/// failure as a fault.
async fn send(s: &Shared, tp: Option<TraceParent>) -> Result<(u16, reqwest::header::HeaderMap, Body), Fault> {
    let headers = s.headers(tp);
    #[cfg(target_os = "linux")]
    if let Some(client) = &s.stamped {
        let mut req = hyper::Request::post(s.url.as_str());
        if let Some(h) = req.headers_mut() {
            *h = headers;
        }
        let req = req
            .body(http_body_util::Full::new(s.body.clone()))
            .map_err(|e| classify(&e, true, false, &s.shown_url))?;
        return match client.request(req).await {
            Ok(resp) => {
                let (parts, body) = crate::stamped::Body::of(resp);
                Ok((parts.status.as_u16(), parts.headers, Body::Stamped(body)))
            }
            Err(e) => Err(classify(&e, false, e.is_connect(), &s.shown_url)),
        };
    }
    match s.client.post(&s.url).headers(headers).body(s.body.clone()).send().await {
        Ok(r) => Ok((r.status().as_u16(), r.headers().clone(), Body::Reqwest(r))),
        Err(e) => Err(classify_send_error(&e, &s.shown_url)),
    }
}

/// Converts kernel receive stamps (`CLOCK_REALTIME`) to the probe's monotonic clock.
///
/// The offset between the two clocks is sampled once per request, when it is sent: a
/// `CLOCK_REALTIME` read between two monotonic reads, taken as their midpoint. That adds at most
/// half the bracket (tens of ns) plus any slewing of `CLOCK_REALTIME` during the request (NTP
/// slews at most 500 ppm: ≤ 0.5 ms per second of stream, typically µs). A step of the wall
/// clock mid-request would move stamps by the step: a converted stamp outside [sent, now] is
/// not trusted, and the chunk takes its user-space stamp instead.
struct KernelClock {
    /// `CLOCK_REALTIME` ns − monotonic ns since the origin.
    offset_ns: i128,
    /// Whether every chunk so far took a kernel stamp.
    all_kernel: bool,
    chunks: u64,
}

impl KernelClock {
    fn sample(origin: Instant) -> KernelClock {
        let before = now_ns(origin);
        let real =
            SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i128);
        let after = now_ns(origin);
        KernelClock {
            offset_ns: real - (i128::from(before) + i128::from(after)) / 2,
            all_kernel: true,
            chunks: 0,
        }
    }

    /// The chunk's instant: its kernel stamp converted, else `user_ns`.
    fn stamp(&mut self, kernel: Option<i64>, sent_ns: u64, user_ns: u64) -> u64 {
        self.chunks += 1;
        let converted = kernel
            .map(|k| i128::from(k) - self.offset_ns)
            .filter(|&m| m >= i128::from(sent_ns) && m <= i128::from(user_ns));
        match converted {
            Some(m) => m as u64,
            None => {
                self.all_kernel = false;
                user_ns
            }
        }
    }

    fn source(&self) -> StampSource {
        if self.all_kernel && self.chunks > 0 { StampSource::Kernel } else { StampSource::User }
    }
}

async fn read_bounded(resp: &mut Body, deadline: tokio::time::Instant, max: usize) -> String {
    let mut body = Vec::new();
    while body.len() < max {
        match tokio::time::timeout_at(deadline, resp.chunk()).await {
            Ok(Ok(Some((b, _)))) => body.extend_from_slice(&b[..b.len().min(max - body.len())]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// The instant `at_ns` after `origin` (far in the future when it does not fit).
fn instant_at(origin: Instant, at_ns: u64) -> tokio::time::Instant {
    let far = Duration::from_secs(100 * 365 * 86_400);
    let at = origin.checked_add(Duration::from_nanos(at_ns)).or_else(|| origin.checked_add(far));
    at.map_or_else(|| tokio::time::Instant::now() + far, tokio::time::Instant::from_std)
}

/// An open-loop request's place in the schedule.
#[derive(Clone, Copy)]
struct Due {
    /// Its scheduled start, ns since the origin.
    at_ns: u64,
    /// Every `--concurrency` slot was taken at that instant.
    waited_for_slot: bool,
}

async fn one_request(s: &Shared, index: usize, run_start: u64, due: Option<Due>) -> Observed {
    let deadline = tokio::time::Instant::now() + s.timeout;
    let (tp, trace_id, span) = s.traceparent();
    let sent = now_ns(s.origin);
    let at = Attempt { index, run_start, sent, trace_id, span, due };
    let mut clock = KernelClock::sample(s.origin);
    let mut timer = StreamTimer::new(sent, s.timer);
    let (status, headers, mut resp) = match tokio::time::timeout_at(deadline, send(s, tp)).await {
        Err(_) => {
            let f = Fault::new(
                FaultKind::TimeoutBeforeHeaders,
                format!(
                    "no response headers within {:?} (overloaded server, or a queue in front of it)",
                    s.timeout
                ),
            );
            return finish(s, at, None, None, Some(f));
        }
        Ok(Err(f)) => return finish(s, at, None, None, Some(f)),
        Ok(Ok(r)) => r,
    };
    let headers_at = now_ns(s.origin);
    // TTFT counts from the request's last byte, where the transport saw it leave.
    if let Some(w) = resp.request_written() {
        let w = u64::try_from(w.saturating_duration_since(s.origin).as_nanos()).unwrap_or(u64::MAX);
        if (sent..=headers_at).contains(&w) {
            timer.set_sent(w);
        }
    }
    timer.on_headers(headers_at);
    let code = reqwest::StatusCode::from_u16(status).unwrap_or(reqwest::StatusCode::OK);
    // Every header value the server chose is redacted before it is kept or cut.
    let header = |name: &str| headers.get(name).map(|v| s.redact(&String::from_utf8_lossy(v.as_bytes())));
    let content_type = header("content-type").unwrap_or_default();
    let retry_after = header("retry-after").map(|r| triage_core::safe::cut(&r, 100));
    // An answer that is refused or unusable ends the request here, its timing kept.
    let end_with = |timer: StreamTimer, f: Fault| {
        let timing = timer.finish_redacted(now_ns(s.origin), &s.secrets);
        finish(s, at, Some(status), Some(timing), Some(f))
    };
    if code.is_redirection() {
        let location = header("location");
        let f = fault::from_redirect(status, &s.shown_url, location.as_deref(), triage_core::lang::Lang::En);
        return end_with(timer, f);
    }
    if !code.is_success() {
        let body = s.redact(&read_bounded(&mut resp, deadline, 4096).await);
        let f = fault::from_status(status, &s.shown_url, &body, retry_after.as_deref());
        let mut obs = end_with(timer, f);
        obs.record.retry_after = retry_after;
        return obs;
    }
    if let Some(enc) = header("content-encoding").filter(|e| !e.trim().eq_ignore_ascii_case("identity")) {
        let f = fault::compressed(&enc, &s.shown_url, triage_core::lang::Lang::En);
        return end_with(timer, f);
    }
    let mut error = None;
    // One timer for the whole body, not one per chunk (a timer entry made and dropped per read
    // is work at every token of every stream).
    let expired = tokio::time::sleep_until(deadline);
    tokio::pin!(expired);
    loop {
        // A server that always has the next chunk ready never lets a timeout fire on its own:
        // the deadline is checked before every read.
        let next = if tokio::time::Instant::now() >= deadline {
            Err(())
        } else {
            tokio::select! {
                biased;
                c = resp.chunk() => Ok(c),
                () = &mut expired => Err(()),
            }
        };
        match next {
            Ok(Ok(Some((bytes, kernel)))) => {
                let at_ns = clock.stamp(kernel, sent, now_ns(s.origin));
                timer.feed(&bytes, at_ns);
            }
            Ok(Ok(None)) => break,
            Ok(Err(e)) => {
                error = Some(Fault::new(
                    FaultKind::ResetMidStream,
                    format!(
                        "the connection broke after {} token events: {} — a crash, an OOM-killed worker, or a proxy timeout cutting the stream",
                        timer.tokens_so_far(),
                        chain(&*e)
                    ),
                ));
                break;
            }
            Err(_) => {
                let tokens = timer.tokens_so_far();
                error = Some(if tokens == 0 {
                    Fault::new(
                        FaultKind::TimeoutBeforeFirstToken,
                        format!(
                            "headers arrived but no token within {:?}: prefill or queueing is stuck",
                            s.timeout
                        ),
                    )
                } else {
                    Fault::new(
                        FaultKind::TimeoutMidStream,
                        format!(
                            "the stream stalled after {tokens} token events and the {:?} deadline passed",
                            s.timeout
                        ),
                    )
                });
                break;
            }
        }
    }
    let timing = timer.finish_redacted(now_ns(s.origin), &s.secrets);
    let error = error.or_else(|| fault::judge_stream(&content_type, &s.shown_url, &timing));
    let mut observed = finish(s, at, Some(status), Some(timing), error);
    observed.record.stamp_source = clock.source();
    observed
}

/// Which request of the run this is, and when it was sent.
#[derive(Clone, Copy)]
struct Attempt {
    index: usize,
    run_start: u64,
    sent: u64,
    trace_id: Option<TraceId>,
    span: Option<SpanIds>,
    due: Option<Due>,
}

fn finish(
    s: &Shared,
    at: Attempt,
    status: Option<u16>,
    timing: Option<RequestTiming>,
    error: Option<Fault>,
) -> Observed {
    let error = error.map(|f| Fault { kind: f.kind, message: s.redact(&f.message) });
    let mut record = RequestRecord::new(at.index, at.run_start, at.sent, status, timing.as_ref(), error);
    // The transport saw the request's last byte leave after the dispatch: connect and write.
    record.send_ms = timing
        .as_ref()
        .filter(|t| t.sent_ns > at.sent)
        .map(|t| ((t.sent_ns - at.sent) as f64 / 1e3).round() / 1e3);
    if let Some(d) = at.due {
        record = record.with_schedule(at.run_start, d.at_ns, at.sent, timing.as_ref(), d.waited_for_slot);
    }
    record.trace_id = at.trace_id.map(|t| t.to_string());
    let span = at.span.map(|ids| RequestSpan { ids, sent_ns: at.sent, ended_ns: now_ns(s.origin) });
    Observed { record, timing, span }
}
