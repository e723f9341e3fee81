//! Core's Prometheus [`Exchange`], held in the worker while the page does the HTTP: the page
//! asks [`PromSession::start`] for the first request, POSTs it with its bounded fetch, hands
//! the answer to [`PromSession::answered`] for the next one, and finally asks
//! [`PromSession::report`] (again, in the other language, when the UI switches). Answers are
//! JSON: `{"ok": …}` or `{"err": {"kind", "detail"}}`, `kind` one of `selector`, `window`,
//! `not-prometheus`, `empty`, `server`, `state`.

use serde_json::{Value, json};
use triage_core::analyze::facts::Slo;
use triage_core::lang::Lang;
use triage_core::prometheus::exchange::{Exchange, Request};
use triage_core::prometheus::query::Window;
use triage_core::prometheus::replay::{self, Config};
use triage_core::prometheus::{Limits, PromError};
use triage_core::safe::Secrets;
use wasm_bindgen::prelude::*;

/// What kind of failure `e` is, as the page explains it.
pub fn kind(e: &PromError) -> &'static str {
    match e {
        PromError::BadSelector(_) => "selector",
        PromError::Rejected { error_type, .. } if error_type == "bad_data" => "selector",
        PromError::BadWindow(_) => "window",
        // No such path: not Prometheus's API here (or a path prefix is missing).
        PromError::NotPrometheus(_) | PromError::Server { status: 404, .. } => "not-prometheus",
        PromError::Empty(_) => "empty",
        _ => "server",
    }
}

fn err(e: &PromError) -> String {
    json!({"err": {"kind": kind(e), "detail": e.to_string()}}).to_string()
}

fn request(r: &Request) -> Value {
    json!({"path": r.path, "form": r.form, "max_body": r.max_body})
}

fn secrets(token: &str) -> Secrets {
    let mut s = Secrets::new();
    if !token.is_empty() {
        s.add(token);
    }
    s
}

/// One conversation with a Prometheus server (see the module's docs).
#[wasm_bindgen]
#[derive(Default)]
pub struct PromSession {
    exchange: Option<Exchange>,
}

#[wasm_bindgen]
impl PromSession {
    #[wasm_bindgen(constructor)]
    pub fn new() -> PromSession {
        PromSession::default()
    }

    /// Check the selector and window and give the first request (`{path, form, max_body}`).
    pub fn start(&mut self, base: &str, selector: &str, start_s: f64, end_s: f64, step_s: f64) -> String {
        let w = Window { start_s, end_s, step_s };
        let limits = Limits { max_series: MAX_SERIES, max_points: MAX_POINTS };
        match Exchange::start(base, selector, w, limits) {
            Ok((ex, first)) => {
                self.exchange = Some(ex);
                json!({"ok": request(&first)}).to_string()
            }
            Err(e) => err(&e),
        }
    }

    /// The answer to the last request: the next request, or `null` once the window is read.
    /// `token` is the bearer token sent (redacted from anything the server says).
    pub fn answered(&mut self, status: u16, body: &[u8], token: &str) -> String {
        let Some(ex) = self.exchange.as_mut() else { return not_started() };
        match ex.answered(status, body, &secrets(token)) {
            Ok(next) => json!({"ok": next.as_ref().map(request)}).to_string(),
            Err(e) => err(&e),
        }
    }

    /// The `triage.report/v1` report of the window read, written in `lang`.
    pub fn report(&self, lang: &str, token: &str) -> String {
        let Some(ex) = self.exchange.as_ref() else { return not_started() };
        let s = secrets(token);
        let cfg = Config { lang: Lang::parse(lang).unwrap_or_default(), slo: Slo::default(), secrets: &s };
        match replay::report(ex, &cfg, None) {
            // With its exports: the bytes `triage analyze --prometheus … --format json` and
            // `--format markdown` print (pages/export.rs).
            Ok(r) => {
                let pretty = serde_json::to_string_pretty(&r).unwrap_or_default() + "\n";
                let markdown = triage_core::analyze::markdown::report(&r, cfg.lang);
                json!({"ok": {
                    "report": r,
                    "json": triage_core::safe::escape_json_controls(&pretty),
                    "markdown": triage_core::safe::escape_controls(&markdown),
                }})
                .to_string()
            }
            Err(e) => err(&e),
        }
    }
}

/// The bounds on series and points: the CLI's, lighter (a page's memory is smaller).
pub const MAX_SERIES: usize = 2_000;
/// See [`MAX_SERIES`].
pub const MAX_POINTS: u64 = 1_000_000;

fn not_started() -> String {
    json!({"err": {"kind": "state", "detail": "no exchange started"}}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_selector_or_window_is_refused_before_anything_is_asked() {
        let mut s = PromSession::new();
        let bad = s.start("http://127.0.0.1:9090", "{job=", 0.0, 3600.0, 15.0);
        assert!(bad.contains("\"selector\""), "{bad}");
        let bad = s.start("http://127.0.0.1:9090", "", 3600.0, 0.0, 15.0);
        assert!(bad.contains("\"window\""), "{bad}");
        assert!(s.answered(200, b"{}", "").contains("\"state\""));
        let ok = s.start("http://127.0.0.1:9090", "", 0.0, 3600.0, 15.0);
        assert!(ok.contains("/api/v1/series"), "{ok}");
    }

    #[test]
    fn what_the_server_says_is_redacted_and_explained() {
        let mut s = PromSession::new();
        s.start("http://127.0.0.1:9090", "", 0.0, 3600.0, 15.0);
        let out = s.answered(
            502,
            b"<html>bad gateway sk-secret-token-123456789</html>",
            "sk-secret-token-123456789",
        );
        assert!(!out.contains("sk-secret-token-123456789"), "{out}");
        assert!(out.contains("\"err\""), "{out}");
    }
}
