//! `triage analyze --prometheus URL`: the HTTP half. Core's `prometheus` module builds the
//! questions, reads the answers and turns them into findings; this file only sends the POSTs
//! (`/api/v1/series`, then `/api/v1/query_range` for the families and for the engines' `up` and
//! `process_start_time_seconds`: core's `exchange` says which) and brings back bounded bytes.
//!
//! Hostile or broken servers are expected: no redirect is followed (credentials go only to the
//! URL the user named), every request has a deadline and so does the whole run — the reading
//! of the answer included, and a deadline that passes says whose time ran out (the server's
//! sending or this tool's reading) —, a body larger than `--max-body-mib` is refused, and every
//! string the server chose is redacted with the run's secrets before it is cut (core does that
//! for answers, this file for transport errors). An answer is never held whole: its chunks go
//! to core's streaming reader on a blocking thread as they arrive, so memory follows
//! `--max-series` and `--max-points`, not the answer's size.

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use triage_core::analyze::facts::Slo;
use triage_core::analyze::report::Report;
use triage_core::lang::Lang;
use triage_core::prometheus::exchange::{self, Exchange};
use triage_core::prometheus::query::Window;
use triage_core::prometheus::replay::{self, Config};
use triage_core::prometheus::{Limits, PromError};
use triage_core::safe::Secrets;

use crate::output::UsageError;

/// Largest answer read by default (`--max-body-mib`): a range answer of the default bounds
/// fits well within it.
pub const MAX_BODY_BYTES: usize = 256 << 20;

/// How to authenticate, read from the environment by the caller; never printed.
#[derive(Clone, Debug, Default)]
pub enum Auth {
    #[default]
    None,
    Bearer(String),
    /// `user`, `password`.
    Basic(String, String),
}

/// Everything `--prometheus` needs.
#[derive(Clone, Debug)]
pub struct PromOptions {
    pub url: String,
    pub selector: String,
    pub window: Window,
    pub auth: Auth,
    /// Deadline of one request (sending, waiting, reading the whole body).
    pub query_timeout: Duration,
    /// Deadline of the whole exchange with Prometheus.
    pub total_timeout: Duration,
    pub limits: Limits,
    /// Largest answer read, in bytes.
    pub max_body_bytes: usize,
}

/// The base URL checked and cleaned: http(s), no credentials, no query, no trailing slash.
pub fn base_url(raw: &str) -> Result<String, UsageError> {
    let t = raw.trim();
    let url = reqwest::Url::parse(t).map_err(|e| UsageError(format!("--prometheus {t:?}: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(UsageError(format!(
            "--prometheus: expected an http:// or https:// URL, got {:?}",
            url.scheme()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(UsageError(
            "--prometheus: credentials in the URL would show in process lists and reports; put them in an environment variable and name it with --prometheus-basic-auth-env or --prometheus-token-env".into(),
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(UsageError(
            "--prometheus: give the server's base URL, without ?query or #fragment".into(),
        ));
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// The run's secrets: what `auth` holds.
pub fn secrets(auth: &Auth) -> Secrets {
    let mut s = Secrets::new();
    match auth {
        Auth::None => {}
        Auth::Bearer(t) => s.add(t),
        Auth::Basic(u, p) => s.add_basic(u, p),
    }
    s
}

struct Client<'a> {
    http: reqwest::Client,
    base: String,
    auth: &'a Auth,
    secrets: &'a Secrets,
    per_query: Duration,
    deadline: Instant,
    /// The overall deadline as given, for the message.
    total: Duration,
}

/// Where a request stands, for the message when its time runs out: whose time it was.
const WAITING_ON_SERVER: u8 = 0;
const WAITING_ON_PARSER: u8 = 1;
const BODY_COMPLETE: u8 = 2;

/// Chunks to hold between the network and the parser: the body is never held whole.
const CHUNKS_IN_FLIGHT: usize = 16;

/// Where one request's time went: waiting for the server (connecting, the head, each chunk) or
/// for this tool's reading of the answer (a full channel, then the rest once the body is in).
struct Progress {
    state: u8,
    since: Instant,
    server: Duration,
    parser: Duration,
    received: usize,
}

impl Progress {
    fn new() -> Arc<Mutex<Progress>> {
        Arc::new(Mutex::new(Progress {
            state: WAITING_ON_SERVER,
            since: Instant::now(),
            server: Duration::ZERO,
            parser: Duration::ZERO,
            received: 0,
        }))
    }

    /// The time since the last change booked to whoever was awaited; `state` from now on.
    fn enter(&mut self, state: u8) {
        let now = Instant::now();
        let spent = now - self.since;
        if self.state == WAITING_ON_SERVER {
            self.server += spent;
        } else {
            self.parser += spent;
        }
        (self.state, self.since) = (state, now);
    }
}

fn progress(p: &Mutex<Progress>) -> std::sync::MutexGuard<'_, Progress> {
    p.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The answer's chunks as a `Read` for core's streaming reader, on a blocking thread.
struct ChunkReader<T> {
    rx: tokio::sync::mpsc::Receiver<T>,
    cur: Option<T>,
    at: usize,
    progress: Arc<Mutex<Progress>>,
    cancel: Arc<AtomicBool>,
}

impl<T: AsRef<[u8]>> Read for ChunkReader<T> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if self.cancel.load(Ordering::Relaxed) {
                return Err(std::io::Error::other("stopped: the deadline passed"));
            }
            if let Some(c) = &self.cur
                && self.at < c.as_ref().len()
            {
                let rest = &c.as_ref()[self.at..];
                let n = rest.len().min(buf.len());
                buf[..n].copy_from_slice(&rest[..n]);
                self.at += n;
                return Ok(n);
            }
            match self.rx.blocking_recv() {
                Some(c) => (self.cur, self.at) = (Some(c), 0),
                None if progress(&self.progress).state == BODY_COMPLETE => return Ok(0),
                None => return Err(std::io::Error::other("the answer was cut off")),
            }
        }
    }
}

impl Client<'_> {
    /// POST `r` with its form body and hand the answer to `ex` as it arrives (core reads it on a
    /// blocking thread while the rest is still coming): the exchange back and its next request,
    /// within the deadlines — which cover the reading of the answer too — and `max_body` bytes.
    async fn ask(
        &self,
        ex: Exchange,
        r: exchange::Request,
        max_body: usize,
    ) -> anyhow::Result<(Exchange, Option<exchange::Request>)> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        let limit = self.per_query.min(left);
        let what = format!("{}{}", self.base, r.path);
        let shared = Progress::new();
        let cancel = Arc::new(AtomicBool::new(false));
        let fut = async {
            let mut req = self
                .http
                .post(&what)
                .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header(reqwest::header::ACCEPT, "application/json")
                .body(r.form);
            req = match self.auth {
                Auth::None => req,
                Auth::Bearer(t) => req.bearer_auth(t),
                Auth::Basic(u, p) => req.basic_auth(u, Some(p)),
            };
            let mut resp = req.send().await.map_err(|e| self.transport(&what, &e))?;
            let status = resp.status().as_u16();
            if resp.status().is_redirection() {
                let to =
                    resp.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok()).unwrap_or("");
                anyhow::bail!(
                    "{what}: the server redirects (HTTP {status} to {:?}); give the final URL (redirects are not followed, so credentials only go where you said)",
                    self.secrets.excerpt(to, 200)
                );
            }
            let (tx, rx) = tokio::sync::mpsc::channel(CHUNKS_IN_FLIGHT);
            let reader =
                ChunkReader { rx, cur: None, at: 0, progress: shared.clone(), cancel: cancel.clone() };
            let secrets = self.secrets.clone();
            let parse = tokio::task::spawn_blocking(move || {
                let mut ex = ex;
                let next = ex.answered_from(status, reader, &secrets);
                (ex, next)
            });
            // `feed` owns `tx`: when it ends — done, failed or cut short — the reader sees the
            // channel close and stops (an end before the body's end reads as "cut off").
            let (p, what) = (shared.clone(), &what);
            let feed = async move {
                let mut n = 0usize;
                loop {
                    progress(&p).enter(WAITING_ON_SERVER);
                    let Some(chunk) = resp.chunk().await.map_err(|e| self.transport(what, &e))? else {
                        progress(&p).enter(BODY_COMPLETE);
                        return Ok(());
                    };
                    n += chunk.len();
                    progress(&p).received = n;
                    if n > max_body {
                        anyhow::bail!(
                            "{what}: the answer is larger than {} (--max-body-mib); narrow --selector, shorten the window or lower --max-series",
                            mib(max_body)
                        );
                    }
                    progress(&p).enter(WAITING_ON_PARSER);
                    if tx.send(chunk).await.is_err() {
                        // The reader stopped early: its answer says why.
                        return Ok(());
                    }
                }
            };
            let (fed, parsed) = tokio::join!(feed, parse);
            fed?;
            let (ex, next) = parsed.map_err(|e| anyhow::anyhow!("{what}: reading the answer failed: {e}"))?;
            Ok::<_, anyhow::Error>((ex, next.map_err(prom_err)?))
        };
        let result = tokio::time::timeout(limit, fut).await;
        // Whatever happened, the reader stops at its next read.
        cancel.store(true, Ordering::Relaxed);
        if let Ok(r) = result {
            return r;
        }
        let mut p = progress(&shared);
        let state = p.state;
        p.enter(state);
        let (read, server, parser) = (mib(p.received), p.server.as_secs_f64(), p.parser.as_secs_f64());
        let (flag, within) = if limit < self.per_query {
            (
                "--prometheus-timeout",
                format!("before the overall deadline ({} s, --prometheus-timeout)", secs(self.total)),
            )
        } else {
            (
                "--prometheus-query-timeout",
                format!("within {} s (--prometheus-query-timeout)", secs(self.per_query)),
            )
        };
        // Whose time ran out: whoever was awaited longer (a full channel means the reading
        // lags; an empty one, the server).
        if state != BODY_COMPLETE && server >= parser {
            anyhow::bail!(
                "{what}: no complete answer {within}: the server was still sending ({read} received; {server:.1} s waiting for the server, {parser:.1} s reading); the server is slow or the window too large"
            )
        }
        anyhow::bail!(
            "{what}: the answer was not read {within}: the server had sent {read}{} and the time ran out in this tool's reading of it, not at the server ({parser:.1} s reading, {server:.1} s waiting for the server); narrow --selector, lower --max-series or --max-points, or raise {flag}",
            if state == BODY_COMPLETE { " (all of it)" } else { "" }
        )
    }

    fn transport(&self, what: &str, e: &reqwest::Error) -> anyhow::Error {
        let why = if e.is_connect() {
            "cannot connect (is Prometheus running there, and reachable from here?)"
        } else if e.is_timeout() {
            "timed out"
        } else {
            "the connection failed"
        };
        let detail = self.secrets.excerpt(&format!("{e:#}"), 300);
        anyhow::anyhow!("{what}: {why}: {detail}")
    }
}

/// Bytes in MiB as the flags give them (`256 MiB`), finer below one.
fn mib(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
    }
}

fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 { format!("{s:.0}") } else { format!("{s:.1}") }
}

/// A core error as the CLI reports it: usage errors exit 2.
fn prom_err(e: PromError) -> anyhow::Error {
    if e.is_usage() { UsageError(e.to_string()).into() } else { anyhow::Error::new(e) }
}

/// Ask Prometheus for the window and analyse it, with the report of files given alongside.
/// The questions and the reading of the answers are core's [`Exchange`] (the site drives the
/// same one through `fetch`); this sends them.
pub async fn analyze(
    opts: &PromOptions,
    lang: Lang,
    slo: Slo,
    files: Option<Report>,
) -> anyhow::Result<Report> {
    let base = base_url(&opts.url)?;
    // Selector and window are checked before anything is sent.
    let (mut ex, first) =
        Exchange::start(&base, &opts.selector, opts.window, opts.limits).map_err(prom_err)?;
    let secrets = secrets(&opts.auth);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("llm-triage/", env!("CARGO_PKG_VERSION")))
        .build()
        .context("building the HTTP client")?;
    let client = Client {
        http,
        base,
        auth: &opts.auth,
        secrets: &secrets,
        per_query: opts.query_timeout,
        deadline: Instant::now() + opts.total_timeout,
        total: opts.total_timeout,
    };
    // The series, the families' window, the engines' liveness: each answer says what is next.
    let mut request = Some(first);
    while let Some(r) = request.take() {
        let max_body = opts.max_body_bytes.min(r.max_body);
        (ex, request) = client.ask(ex, r, max_body).await?;
    }
    replay::report(&ex, &Config { lang, slo, secrets: &secrets }, files).map_err(prom_err)
}

/// `--from`/`--to`: unix seconds (or ms, µs, ns by magnitude) or RFC 3339.
pub fn parse_time(s: &str) -> Result<f64, String> {
    exchange::parse_time(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_are_checked() {
        assert_eq!(base_url("http://prom:9090/").unwrap(), "http://prom:9090");
        assert_eq!(
            base_url("https://thanos.example/prometheus").unwrap(),
            "https://thanos.example/prometheus"
        );
        assert!(base_url("http://u:p@prom:9090").unwrap_err().0.contains("environment variable"));
        assert!(base_url("ftp://prom").is_err());
        assert!(base_url("prom:9090/x?y=1").is_err());
        assert!(base_url("http://prom:9090/?x=1").is_err());
    }

    #[test]
    fn times_and_secrets() {
        assert_eq!(parse_time("1764460800").unwrap(), 1_764_460_800.0);
        assert_eq!(parse_time("1764460800000").unwrap(), 1_764_460_800.0);
        assert_eq!(parse_time("2025-11-30T00:00:00Z").unwrap(), 1_764_460_800.0);
        assert!(parse_time("yesterday").is_err());
        let s = secrets(&Auth::Basic("admin".into(), "correct-horse-battery".into()));
        assert!(!s.redact("x correct-horse-battery y").contains("horse"));
    }
}
