//! `triage analyze --prometheus URL`: the HTTP half. Core's `prometheus` module builds the
//! questions, reads the answers and turns them into findings; this file only sends the POSTs
//! (`/api/v1/series`, then `/api/v1/query_range` for the families and for the engines' `up` and
//! `process_start_time_seconds`) and brings back bounded bytes.
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
use triage_core::prometheus::answer::{self, Matrix};
use triage_core::prometheus::query::{self, Window};
use triage_core::prometheus::replay::{self, Asked, Config};
use triage_core::prometheus::{Limits, PromError, QueryRecord};
use triage_core::safe::Secrets;

use crate::output::UsageError;

/// Largest answer read by default (`--max-body-mib`): a range answer of the default bounds
/// fits well within it.
pub const MAX_BODY_BYTES: usize = 256 << 20;

/// Largest `/api/v1/series` answer read (about 200,000 label sets): more matching series than
/// that is a selector to narrow, not a fleet to count.
pub const MAX_SERIES_BODY_BYTES: usize = 64 << 20;

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
        Auth::Basic(u, p) => {
            s.add(p);
            s.add(&format!("{u}:{p}"));
        }
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

/// Ask Prometheus for the window and analyse it, with the report of the files given alongside.
pub async fn analyze(
    opts: &PromOptions,
    lang: Lang,
    slo: Slo,
    files: Option<Report>,
) -> anyhow::Result<Report> {
    let base = base_url(&opts.url)?;
    let user = query::parse_selector(&opts.selector).map_err(prom_err)?;
    // Check the window before anything is sent.
    opts.window.fitted(1, opts.limits.max_points).map_err(prom_err)?;
    let secrets = secrets(&opts.auth);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("llm-triage/", env!("CARGO_PKG_VERSION")))
        .build()
        .context("building the HTTP client")?;
    let client = Client {
        http,
        base: base.clone(),
        auth: &opts.auth,
        secrets: &secrets,
        per_query: opts.query_timeout,
        deadline: Instant::now() + opts.total_timeout,
        total: opts.total_timeout,
    };
    let matcher = query::series_matcher(&user);
    let w = opts.window;
    let mut cut = Vec::new();

    // 1. Which series exist: the count bounds the range query before it is asked.
    let form = series_form(&matcher, &w);
    // Label sets are parsed whole: their answer is held to less than a range answer's.
    let (status, body) =
        client.post("/api/v1/series", form, opts.max_body_bytes.min(MAX_SERIES_BODY_BYTES)).await?;
    let sets = answer::parse_series(status, &body, &secrets).map_err(prom_err)?;
    drop(body);
    if sets.is_empty() {
        return Err(prom_err(PromError::Empty(format!(
            "nothing matched {matcher} between {} and {} (check --selector, the window, and that Prometheus scrapes the engines and the DCGM exporter)",
            query::iso(w.start_s),
            query::iso(w.end_s)
        ))));
    }
    let mut expr = matcher.clone();
    let mut expected = sets.len();
    let mut kept_instances: Option<Vec<String>> = None;
    if sets.len() > opts.limits.max_series {
        // Keep whole instances, in name order, until the bound is reached.
        let mut per_instance: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
        for s in &sets {
            *per_instance.entry(s.get("instance").map_or("", String::as_str)).or_default() += 1;
        }
        let (mut kept, mut n) = (Vec::new(), 0);
        for (inst, count) in &per_instance {
            if n + count > opts.limits.max_series {
                break;
            }
            n += count;
            kept.push(*inst);
        }
        if kept.is_empty() {
            cut.push(format!(
                "{} series match; the first instance alone has more than --max-series {}: the range answer is cut",
                sets.len(),
                opts.limits.max_series
            ));
        } else {
            let alternatives: Vec<String> = kept.iter().map(|i| query::regex_literal(i)).collect();
            expr = format!(
                "{},instance=~\"{}\"}}",
                matcher.trim_end_matches('}'),
                query::escape_value(&alternatives.join("|"))
            );
            cut.push(format!(
                "{} series in {} instances match; {n} series of the first {} instances are read (--max-series {})",
                sets.len(),
                per_instance.len(),
                kept.len(),
                opts.limits.max_series
            ));
            expected = n;
            kept_instances = Some(kept.iter().map(|i| (*i).to_owned()).collect());
        }
    }
    // When each engine started and whether Prometheus reached it, for the engines read.
    let mut engines: Vec<&str> = sets
        .iter()
        .filter(|s| s.get("__name__").is_some_and(|n| query::is_engine_metric(n)))
        .filter_map(|s| s.get("instance").map(String::as_str))
        .filter(|i| kept_instances.as_ref().is_none_or(|k| k.iter().any(|x| x == i)))
        .collect();
    engines.sort_unstable();
    engines.dedup();
    // Asked apart, not with `or`: `or` drops a right-hand series whose labels (name aside) equal
    // a left-hand one's, and `up` carries exactly an engine gauge's target labels.
    let live = query::liveness_matcher(&user, &engines);
    if live.is_some() {
        expected += 2 * engines.len();
    }
    let (w, note) =
        w.fitted(expected.min(opts.limits.max_series), opts.limits.max_points).map_err(prom_err)?;
    cut.extend(note);
    let mut queries = vec![QueryRecord {
        api: "/api/v1/series".into(),
        expr: matcher.clone(),
        graph_url: query::graph_url(&base, &matcher, &w),
        series: sets.len(),
    }];
    drop(sets);

    // 2. The window itself.
    let (status, body) =
        client.post("/api/v1/query_range", range_form(&expr, &w), opts.max_body_bytes).await?;
    let mut m: Matrix =
        answer::parse_matrix(status, &body, &secrets, opts.limits.max_series, opts.limits.max_points)
            .map_err(prom_err)?;
    drop(body);
    queries.push(QueryRecord {
        api: "/api/v1/query_range".into(),
        expr: expr.clone(),
        graph_url: query::graph_url(&base, &expr, &w),
        series: m.series.len(),
    });
    // 3. When the engines started and whether Prometheus reached them, within what is left of
    // the bounds.
    if let Some(live) = live {
        let (status, body) =
            client.post("/api/v1/query_range", range_form(&live, &w), opts.max_body_bytes).await?;
        let series_left = opts.limits.max_series.saturating_sub(m.series.len());
        let points_left = opts.limits.max_points.saturating_sub(m.points);
        let more =
            answer::parse_matrix(status, &body, &secrets, series_left, points_left).map_err(prom_err)?;
        queries.push(QueryRecord {
            api: "/api/v1/query_range".into(),
            expr: live.clone(),
            graph_url: query::graph_url(&base, &live, &w),
            series: more.series.len(),
        });
        m.series.extend(more.series);
        m.points += more.points;
        m.cut.extend(more.cut);
    }
    let asked = Asked { url: base, selector: opts.selector.clone(), window: w, queries, cut };
    replay::analyze(&m, asked, &Config { lang, slo, secrets: &secrets }, files).map_err(prom_err)
}

fn series_form(matcher: &str, w: &Window) -> String {
    format!(
        "match%5B%5D={}&start={}&end={}",
        query::encode(matcher),
        query::secs(w.start_s),
        query::secs(w.end_s)
    )
}

fn range_form(expr: &str, w: &Window) -> String {
    format!(
        "query={}&start={}&end={}&step={}",
        query::encode(expr),
        query::secs(w.start_s),
        query::secs(w.end_s),
        query::secs(w.step_s)
    )
}

/// `--from`/`--to`: unix seconds (or ms, µs, ns by magnitude) or RFC 3339.
pub fn parse_time(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let parsed = match t.parse::<f64>() {
        Ok(x) => triage_core::analyze::time::from_number(x),
        Err(_) => triage_core::analyze::time::parse_iso(t),
    };
    parsed
        .ok_or_else(|| format!("expected unix seconds or an RFC 3339 time (2026-12-04T10:00:00Z), got {t:?}"))
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
    fn times_and_regexes() {
        assert_eq!(parse_time("1764460800").unwrap(), 1_764_460_800.0);
        assert_eq!(parse_time("1764460800000").unwrap(), 1_764_460_800.0);
        assert_eq!(parse_time("2025-11-30T00:00:00Z").unwrap(), 1_764_460_800.0);
        assert!(parse_time("yesterday").is_err());
        let s = secrets(&Auth::Basic("admin".into(), "correct-horse-battery".into()));
        assert!(!s.redact("x correct-horse-battery y").contains("horse"));
    }
}
