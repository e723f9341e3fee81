//! `triage analyze --prometheus URL`: the HTTP half. Core's `prometheus` module builds the
//! questions, reads the answers and turns them into findings; this file only sends the POSTs
//! (`/api/v1/series`, then `/api/v1/query_range` for the families and for the engines' `up` and
//! `process_start_time_seconds`: core's `exchange` says which) and brings back bounded bytes.
//!
//! Hostile or broken servers are expected: no redirect is followed (credentials go only to the
//! URL the user named), every request has a deadline and so does the whole run, a body larger
//! than [`MAX_BODY_BYTES`] is refused, and every string the server chose is redacted with the
//! run's secrets before it is cut (core does that for answers, this file for transport errors).

use std::time::{Duration, Instant};

use anyhow::Context;
use triage_core::analyze::facts::Slo;
use triage_core::analyze::report::Report;
use triage_core::lang::Lang;
use triage_core::prometheus::exchange::{self, Exchange};
use triage_core::prometheus::query::Window;
use triage_core::prometheus::replay::Config;
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

impl Client<'_> {
    /// POST `path` with a form body; `(status, body)` within the deadlines and `max_body` bytes.
    async fn post(&self, path: &str, form: String, max_body: usize) -> anyhow::Result<(u16, Vec<u8>)> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        let limit = self.per_query.min(left);
        let what = format!("{}{path}", self.base);
        let fut = async {
            let mut req = self
                .http
                .post(&what)
                .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header(reqwest::header::ACCEPT, "application/json")
                .body(form);
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
            let mut body = Vec::new();
            while let Some(chunk) = resp.chunk().await.map_err(|e| self.transport(&what, &e))? {
                if body.len() + chunk.len() > max_body {
                    anyhow::bail!(
                        "{what}: the answer is larger than {} MiB (--max-body-mib); narrow --selector, shorten the window or lower --max-series",
                        max_body >> 20
                    );
                }
                body.extend_from_slice(&chunk);
            }
            Ok::<_, anyhow::Error>((status, body))
        };
        match tokio::time::timeout(limit, fut).await {
            Ok(r) => r,
            Err(_) if limit < self.per_query => anyhow::bail!(
                "{what}: no complete answer before the overall deadline ({} s, --prometheus-timeout)",
                secs(self.total)
            ),
            Err(_) => anyhow::bail!(
                "{what}: no complete answer within {} s (--prometheus-query-timeout); the server is slow or the window too large",
                secs(self.per_query)
            ),
        }
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
        let (status, body) = client.post(r.path, r.form, opts.max_body_bytes.min(r.max_body)).await?;
        request = ex.answered(status, &body, &secrets).map_err(prom_err)?;
    }
    ex.report(&Config { lang, slo, secrets: &secrets }, files).map_err(prom_err)
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
