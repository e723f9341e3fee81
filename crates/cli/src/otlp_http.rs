//! `--otlp-endpoint URL`: POST the run's OTLP/JSON ([`crate::otlp`]) to an OTLP/HTTP receiver —
//! `URL/v1/metrics` once, then `URL/v1/traces` per line of spans — with `content-type:
//! application/json`.
//!
//! Key-free: a client of its own, so neither the API key nor a `--header` value goes with it;
//! only `--otlp-header` values do (a collector's own token). No redirect is followed. One
//! deadline (`--otlp-timeout`) covers every request and the reading of every answer; an answer
//! is read up to [`MAX_ANSWER_BYTES`]. Bodies are bounded by the encoder (a metrics request is
//! small, a trace request about [`crate::otlp::MAX_REQUEST_BYTES`]). Failures are faults like
//! the probe's (`connection_refused`, `dns`, `tls`, `timeout_before_headers`, `server_error`, …)
//! with the receiver's words redacted and cut. Nothing is retried: the file (`--otlp`) is the
//! way to keep an export a receiver refused.

use std::time::Duration;

use tokio::time::Instant;
use triage_core::fault::{Fault, FaultKind};
use triage_core::safe::Secrets;

use crate::output::UsageError;

/// Most bytes of a receiver's answer read (its `partialSuccess`, or why it refused).
pub const MAX_ANSWER_BYTES: usize = 64 << 10;

/// Where and how to post.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// The receiver's base URL, checked ([`base_url`]).
    pub base: String,
    /// `--otlp-header` pairs.
    pub headers: Vec<(String, String)>,
    /// The deadline of the whole export.
    pub timeout: Duration,
}

/// What the receiver took.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Posted {
    /// Requests it answered with a 2xx.
    pub requests: usize,
    /// What its `partialSuccess` answers said (rejected points or spans, its message), redacted.
    pub warnings: Vec<String>,
}

/// The base URL checked and cleaned: http(s), no credentials, no query, no trailing slash. A
/// URL ending in `/v1/metrics` or `/v1/traces` is taken as meaning its base.
pub fn base_url(raw: &str) -> Result<String, UsageError> {
    let t = raw.trim();
    let url = reqwest::Url::parse(t).map_err(|e| UsageError(format!("--otlp-endpoint {t:?}: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(UsageError(format!(
            "--otlp-endpoint: expected an http:// or https:// URL (OTLP/HTTP, e.g. http://collector:4318), got {:?}",
            url.scheme()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(UsageError(
            "--otlp-endpoint: credentials in the URL would show in process lists; give the receiver's token with --otlp-header".into(),
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(UsageError(
            "--otlp-endpoint: give the receiver's base URL, without ?query or #fragment".into(),
        ));
    }
    let s = url.as_str().trim_end_matches('/');
    let s = s.strip_suffix("/v1/metrics").or_else(|| s.strip_suffix("/v1/traces")).unwrap_or(s);
    Ok(s.to_owned())
}

/// `--otlp-header` pairs checked as HTTP allows them, before anything is sent.
pub fn check_headers(headers: &[(String, String)]) -> Result<(), UsageError> {
    for (k, v) in headers {
        if reqwest::header::HeaderName::from_bytes(k.trim().as_bytes()).is_err() {
            return Err(UsageError(format!("--otlp-header: invalid header name {k:?}")));
        }
        if reqwest::header::HeaderValue::from_str(v.trim()).is_err() {
            return Err(UsageError(format!("--otlp-header: invalid value for header {k:?}")));
        }
    }
    Ok(())
}

/// The fault kind of a receiver's HTTP status.
fn status_kind(status: u16) -> FaultKind {
    match status {
        300..=399 => FaultKind::Redirect,
        401 => FaultKind::Unauthorized,
        403 => FaultKind::Forbidden,
        404 => FaultKind::NotFound,
        429 => FaultKind::RateLimited,
        400..=499 => FaultKind::ClientError,
        500..=599 => FaultKind::ServerError,
        _ => FaultKind::Other,
    }
}

/// POST the metrics line and every trace line, in order, stopping at the first failure. The
/// fault's message says what had been taken by then.
pub async fn post(
    ep: &Endpoint,
    metrics: String,
    traces: impl Iterator<Item = String>,
    secrets: &Secrets,
) -> Result<Posted, Fault> {
    let deadline = Instant::now() + ep.timeout;
    let client = crate::probe::client(1).map_err(|e| Fault::new(FaultKind::Other, format!("{e:#}")))?;
    let mut headers = reqwest::header::HeaderMap::new();
    headers
        .insert(reqwest::header::CONTENT_TYPE, reqwest::header::HeaderValue::from_static("application/json"));
    for (k, v) in &ep.headers {
        let name = reqwest::header::HeaderName::from_bytes(k.trim().as_bytes()).map_err(|_| {
            Fault::new(FaultKind::InvalidUrl, format!("--otlp-header: invalid header name {k:?}"))
        })?;
        let mut value = reqwest::header::HeaderValue::from_str(v.trim()).map_err(|_| {
            Fault::new(FaultKind::InvalidUrl, format!("--otlp-header: invalid value for {k:?}"))
        })?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    let mut posted = Posted::default();
    let bodies = std::iter::once(("metrics", metrics)).chain(traces.map(|t| ("traces", t)));
    for (signal, body) in bodies {
        let url = format!("{}/v1/{signal}", ep.base);
        let answer = one(&client, &url, headers.clone(), body, deadline, ep.timeout, secrets).await;
        match answer {
            Ok(warning) => {
                posted.requests += 1;
                posted.warnings.extend(warning);
            }
            Err(f) => {
                let done = match posted.requests {
                    0 => "nothing was exported".to_owned(),
                    n => format!("{n} request(s) before it were taken"),
                };
                return Err(Fault::new(f.kind, format!("{} ({done})", secrets.redact(&f.message))));
            }
        }
    }
    Ok(posted)
}

/// One POST within `deadline`: `Ok` with the receiver's partial-success note when it has one.
async fn one(
    client: &reqwest::Client,
    url: &str,
    headers: reqwest::header::HeaderMap,
    body: String,
    deadline: Instant,
    timeout: Duration,
    secrets: &Secrets,
) -> Result<Option<String>, Fault> {
    let late = || {
        Fault::new(
            FaultKind::TimeoutBeforeHeaders,
            format!(
                "{url}: no complete answer within {timeout:?} (--otlp-timeout): the receiver is slow or hangs"
            ),
        )
    };
    let send = client.post(url).headers(headers).body(body).send();
    let mut resp = match tokio::time::timeout_at(deadline, send).await {
        Err(_) => return Err(late()),
        Ok(Err(e)) => return Err(crate::probe::classify_send_error(&e, url)),
        Ok(Ok(r)) => r,
    };
    let status = resp.status().as_u16();
    let mut answer = Vec::new();
    while answer.len() < MAX_ANSWER_BYTES {
        match tokio::time::timeout_at(deadline, resp.chunk()).await {
            Err(_) => return Err(late()),
            Ok(Ok(Some(b))) => answer.extend_from_slice(&b[..b.len().min(MAX_ANSWER_BYTES - answer.len())]),
            Ok(Ok(None)) => break,
            Ok(Err(e)) => {
                return Err(Fault::new(
                    FaultKind::ConnectionClosed,
                    format!("{url}: the answer broke off: {}", secrets.excerpt(&format!("{e:#}"), 300)),
                ));
            }
        }
    }
    let text = String::from_utf8_lossy(&answer);
    if !(200..300).contains(&status) {
        let why = if (300..400).contains(&status) {
            let to =
                resp.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok()).unwrap_or("");
            format!("redirects to {:?} (not followed); give the final URL", secrets.excerpt(to, 200))
        } else {
            format!("{:?}", secrets.excerpt(text.trim(), 300))
        };
        return Err(Fault::new(
            status_kind(status),
            format!("{url}: the receiver answered HTTP {status}: {why}"),
        ));
    }
    Ok(partial(&text).map(|p| format!("{url}: {}", secrets.excerpt(&p, 300))))
}

/// What a 2xx answer's `partialSuccess` says, when it rejected anything or said something.
fn partial(answer: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(answer).ok()?;
    let p = v.get("partialSuccess")?;
    let count = |k: &str| -> u64 {
        match p.get(k) {
            Some(serde_json::Value::String(s)) => s.parse().unwrap_or(0),
            Some(n) => n.as_u64().unwrap_or(0),
            None => 0,
        }
    };
    let rejected = count("rejectedDataPoints") + count("rejectedSpans");
    let message = p.get("errorMessage").and_then(|m| m.as_str()).unwrap_or("");
    (rejected > 0 || !message.is_empty()).then(|| format!("the receiver rejected {rejected}: {message}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls() {
        assert_eq!(base_url("http://collector:4318/").unwrap(), "http://collector:4318");
        assert_eq!(base_url("https://otlp.example.com/otlp").unwrap(), "https://otlp.example.com/otlp");
        assert_eq!(base_url("http://c:4318/v1/traces").unwrap(), "http://c:4318");
        assert_eq!(base_url("http://c:4318/v1/metrics/").unwrap(), "http://c:4318");
        for bad in ["c:4318", "grpc://c:4317", "http://u:p@c:4318", "http://c:4318/?x=1", "not a url"] {
            assert!(base_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn header_names_and_values_are_checked() {
        assert!(check_headers(&[("x-token".into(), "abc".into())]).is_ok());
        assert!(check_headers(&[("bad name".into(), "abc".into())]).is_err());
        assert!(check_headers(&[("x-token".into(), "caf\u{e9}\u{7f}".into())]).is_err());
    }

    #[test]
    fn statuses_are_faults_like_the_probes() {
        assert_eq!(status_kind(500), FaultKind::ServerError);
        assert_eq!(status_kind(503), FaultKind::ServerError);
        assert_eq!(status_kind(401), FaultKind::Unauthorized);
        assert_eq!(status_kind(413), FaultKind::ClientError);
        assert_eq!(status_kind(429), FaultKind::RateLimited);
        assert_eq!(status_kind(307), FaultKind::Redirect);
    }

    #[test]
    fn partial_success_is_reported_only_when_it_says_something() {
        assert_eq!(partial("{}"), None);
        assert_eq!(partial(r#"{"partialSuccess":{}}"#), None);
        assert_eq!(partial("not json"), None);
        let p = partial(r#"{"partialSuccess":{"rejectedSpans":"2","errorMessage":"too old"}}"#).unwrap();
        assert!(p.contains("rejected 2") && p.contains("too old"), "{p}");
    }
}
