//! The triage page's Prometheus source: the same questions as `triage analyze --prometheus`,
//! asked by the browser's `fetch`, answered by core's `Exchange` (no second implementation)
//! held in the analysis worker ([`PromSession`]), and the same report — each finding's replica
//! or GPU, the fleet view, the queries as links.
//!
//! A link `#/triage?prometheus=URL&from=…&to=…[&step=…&selector=…]` (Grafana's `${__from}` and
//! `${__to}` are unix ms; unix s and RFC 3339 work too) fills the source and waits for one click:
//! a link is anyone's to write, and running it on open would make this browser POST to whatever
//! URL it names (a form POST needs no CORS preflight) — the click shows the host first. The
//! token is never in a link, never logged, kept only when the user ticks the box, and then only
//! offered again for the same URL.

use super::export::Exports;
use crate::app::{click, offline_notice, on_event, set_text, tx, use_lang, use_online};
use crate::browser::{self, FetchError};
use crate::fixed::fixed;
use crate::i18n::{Lang, Msg, t, tf};
use crate::worker::{PromFailure, PromSession, PromStep};
use leptos::prelude::*;
use triage_prometheus::exchange;
use triage_prometheus::query::Window;
use triage_report::Report;
use triage_report::prometheus::PrometheusInput;

/// Deadline of one query (sending, waiting, reading the whole body), and of the whole run.
const QUERY_TIMEOUT_MS: f64 = 30_000.0;
const TOTAL_TIMEOUT_MS: f64 = 60_000.0;
/// A page global that can only shorten [`QUERY_TIMEOUT_MS`] (see [`query_timeout_ms`]).
const SHORTER_DEADLINE_GLOBAL: &str = "__triageTestDeadlineMs";
/// Largest answer read.
const MAX_BODY_BYTES: usize = 64 << 20;
/// `URL\ntoken`, only when the user ticked "remember".
const TOKEN_KEY: &str = "triage.prom.token";

/// Why a run failed; rendered in the current language (see [`explain`]).
#[derive(Clone, Debug)]
enum Failure {
    Url,
    Window(String),
    Fetch(String, FetchError),
    /// The server had not sent its whole answer when the deadline of one query (ms, the one
    /// the run used) or of the run passed: the page reads nothing before the body's last byte.
    Waiting(String, f64),
    Prom(PromFailure),
    /// The analysis worker could not answer.
    Worker(String),
    /// The answer arrived (its bytes) but the worker's reading of it outlasted the deadline
    /// (ms, the one the run used).
    Reading(String, usize, f64),
}

fn explain(l: Lang, f: &Failure) -> (&'static str, String) {
    let origin = web_sys::window().and_then(|w| w.location().origin().ok()).unwrap_or_default();
    let secs = |ms: f64| format!("{:.0}", ms / 1000.0);
    match f {
        Failure::Url => ("url", t(l, Msg::PromErrUrl).to_owned()),
        Failure::Window(d) => ("window", tf(l, Msg::PromErrWindow, &[("detail", d)])),
        Failure::Fetch(url, FetchError::Rejected(m)) if m == "redirect" => {
            ("redirect", tf(l, Msg::PromErrRedirect, &[("url", url)]))
        }
        Failure::Fetch(url, FetchError::Rejected(_)) => {
            ("cors", tf(l, Msg::PromErrCors, &[("url", url), ("origin", &origin)]))
        }
        Failure::Fetch(url, FetchError::TimedOut) => {
            explain(l, &Failure::Waiting(url.clone(), QUERY_TIMEOUT_MS))
        }
        Failure::Waiting(url, query_ms) => (
            "timeout",
            tf(
                l,
                Msg::PromErrTimeout,
                &[("url", url), ("s", &secs(*query_ms)), ("total", &secs(TOTAL_TIMEOUT_MS))],
            ),
        ),
        Failure::Fetch(url, FetchError::BodyFailed(d)) => {
            let d: String = d.chars().take(300).collect();
            ("body", tf(l, Msg::PromErrBody, &[("url", url), ("detail", &d)]))
        }
        Failure::Prom(e) => {
            let m = match e.kind.as_str() {
                "selector" => Msg::PromErrSelector,
                "window" => Msg::PromErrWindow,
                "not-prometheus" => Msg::PromErrNotProm,
                "empty" => Msg::PromErrEmpty,
                _ => Msg::PromErrServer,
            };
            let kind = match e.kind.as_str() {
                "selector" => "selector",
                "window" => "window",
                "not-prometheus" => "not-prometheus",
                "empty" => "empty",
                _ => "server",
            };
            (kind, tf(l, m, &[("detail", &e.detail)]))
        }
        Failure::Worker(e) => ("worker", tf(l, Msg::WorkerFailed, &[("error", e)])),
        Failure::Reading(url, bytes, query_ms) => (
            "timeout",
            tf(
                l,
                Msg::PromErrReading,
                &[
                    ("url", url),
                    ("mib", &format!("{:.1}", *bytes as f64 / f64::from(1 << 20))),
                    ("s", &secs(*query_ms)),
                    ("total", &secs(TOTAL_TIMEOUT_MS)),
                ],
            ),
        ),
    }
}

/// The deadline of one query for a run: [`QUERY_TIMEOUT_MS`], or a shorter one in milliseconds
/// when `window.__triageTestDeadlineMs` holds a positive number below it — so the browser tests
/// see a trickling server end in the deadline error in 2 s instead of 30. Only ever shorter, so
/// it cannot be used to make the page wait longer or to turn the deadline off; and only a script
/// already running in the page can set it (no link, field or stored setting reads into it), which
/// could as well replace the page.
pub fn query_timeout_ms() -> f64 {
    web_sys::window()
        .and_then(|w| js_sys::Reflect::get(&w, &SHORTER_DEADLINE_GLOBAL.into()).ok())
        .and_then(|v| v.as_f64())
        .filter(|ms| *ms > 0.0 && *ms < QUERY_TIMEOUT_MS)
        .unwrap_or(QUERY_TIMEOUT_MS)
}

/// `fut`'s output, or `None` when `ms` pass first.
async fn within<F: Future>(fut: F, ms: f64) -> Option<F::Output> {
    use std::task::Poll;
    let mut fut = std::pin::pin!(fut);
    let mut timer = std::pin::pin!(browser::sleep_ms(ms.max(0.0) as i32));
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = fut.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        timer.as_mut().poll(cx).map(|()| None)
    })
    .await
}

/// The server's base URL as the browser reads it: http(s), no credentials, query or fragment.
fn base_url(raw: &str) -> Option<String> {
    let u = web_sys::Url::new(raw.trim()).ok()?;
    let ok = matches!(u.protocol().as_str(), "http:" | "https:")
        && u.username().is_empty()
        && u.password().is_empty()
        && u.search().is_empty()
        && u.hash().is_empty();
    ok.then(|| u.href().trim_end_matches('/').to_owned())
}

/// The link's parameters: `#/triage?a=b&…`, percent-decoded.
fn link_params() -> Vec<(String, String)> {
    let hash = web_sys::window().and_then(|w| w.location().hash().ok()).unwrap_or_default();
    let Some((_, query)) = hash.split_once('?') else { return Vec::new() };
    let decode = |s: &str| {
        js_sys::decode_uri_component(&s.replace('+', " ")).ok().map(String::from).unwrap_or_default()
    };
    query.split('&').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (decode(k), decode(v))).collect()
}

/// The window the fields describe: from/to when given, else the last `minutes` up to now.
fn window(from: &str, to: &str, minutes: &str, step: &str) -> Result<Window, String> {
    let step_s = exchange::parse_step(step)?;
    let now_s = (js_sys::Date::now() / 1000.0).floor();
    let end_s = if to.trim().is_empty() { now_s } else { exchange::parse_time(to)? };
    let start_s = if from.trim().is_empty() {
        let m: f64 = minutes.trim().parse().map_err(|_| format!("{minutes:?}: minutes"))?;
        end_s - m * 60.0
    } else {
        exchange::parse_time(from)?
    };
    Ok(Window { start_s, end_s, step_s })
}

/// What a finished run keeps so a language switch can read the same window again: the
/// exchange in the worker, and the token sent (for redaction, never shown or stored).
#[derive(Clone)]
struct Done {
    session: PromSession,
    token: String,
}

fn step<T>(got: PromStep<T>) -> Result<T, Failure> {
    got.map_err(Failure::Worker)?.map_err(Failure::Prom)
}

async fn analyse(d: &Done, lang: Lang) -> Result<(Report, Exports), Failure> {
    let r = step(d.session.report(lang, &d.token).await)?;
    Ok((r.report, Exports { json: r.json, markdown: r.markdown }))
}

/// Ask the questions core's exchange gives, one after the other, within the deadlines.
async fn ask(base: String, selector: String, w: Window, token: String) -> Result<Done, Failure> {
    let (session, first) = step(PromSession::start(&base, &selector, &w).await)?;
    let mut headers: Vec<(String, String)> =
        [("content-type", "application/x-www-form-urlencoded"), ("accept", "application/json")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .to_vec();
    if !token.is_empty() {
        headers.push(("authorization".to_owned(), format!("Bearer {token}")));
    }
    let query_ms = query_timeout_ms();
    let started = browser::now_ms();
    let mut request = Some(first);
    while let Some(r) = request.take() {
        let url = format!("{base}{}", r.path);
        let left = (TOTAL_TIMEOUT_MS - (browser::now_ms() - started)).min(query_ms);
        if left <= 0.0 {
            return Err(Failure::Waiting(url, query_ms));
        }
        let max = MAX_BODY_BYTES.min(r.max_body);
        let asked = browser::now_ms();
        let (status, body) =
            browser::post_bounded(&url, &headers, &r.form, left as i32, max).await.map_err(|e| match e {
                FetchError::TimedOut => Failure::Waiting(url.clone(), query_ms),
                e => Failure::Fetch(url.clone(), e),
            })?;
        // The deadlines cover the worker's reading of the answer too: past them the worker is
        // stopped (the next run starts another) and the failure says whose time ran out.
        let now = browser::now_ms();
        let left = (TOTAL_TIMEOUT_MS - (now - started)).min(query_ms - (now - asked));
        let bytes = body.length() as usize;
        let Some(got) = within(session.answered(status, &body, &token), left).await else {
            crate::worker::abandon("stopped: its reading of a Prometheus answer outlasted the deadline");
            return Err(Failure::Reading(url, bytes, query_ms));
        };
        request = step(got)?;
    }
    Ok(Done { session, token })
}

/// The Prometheus source, its report and its fleet view.
#[component]
pub fn PromSource() -> impl IntoView {
    let lang = use_lang();
    let params = link_params();
    let param = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let from_link = param("prometheus");
    let url = RwSignal::new(from_link.clone().unwrap_or_default());
    let from = RwSignal::new(param("from").unwrap_or_default());
    let to = RwSignal::new(param("to").unwrap_or_default());
    let minutes = RwSignal::new("60".to_owned());
    let step = RwSignal::new(param("step").unwrap_or_else(|| "15s".into()));
    let selector = RwSignal::new(param("selector").unwrap_or_default());
    // A token is offered again only for the URL it was remembered with.
    let stored = browser::storage_get(TOKEN_KEY)
        .and_then(|s| s.split_once('\n').map(|(u, t)| (u.to_owned(), t.to_owned())));
    let token = RwSignal::new(String::new());
    let remember = RwSignal::new(stored.is_some());
    if let Some((u, tok)) = &stored
        && base_url(&url.get_untracked()).as_deref() == Some(u.as_str())
    {
        token.set(tok.clone());
    }
    let busy = RwSignal::new(false);
    // Offline, only a server on this machine can answer: for any other the button says so
    // instead of failing as if the server were down.
    let online = use_online();
    let blocked = move || !online() && !browser::is_loopback(&url.get());
    let error = RwSignal::new(None::<Failure>);
    let report = RwSignal::new(None::<(Report, Exports)>);
    let done = StoredValue::new_local(None::<Done>);
    on_cleanup(move || {
        if let Some(d) = done.try_get_value().flatten() {
            d.session.close();
        }
    });

    let run = move || {
        if busy.get_untracked() {
            return;
        }
        error.set(None);
        report.set(None);
        let Some(base) = base_url(&url.get_untracked()) else {
            error.set(Some(Failure::Url));
            return;
        };
        let w = match window(
            &from.get_untracked(),
            &to.get_untracked(),
            &minutes.get_untracked(),
            &step.get_untracked(),
        ) {
            Ok(w) => w,
            Err(e) => return error.set(Some(Failure::Window(e))),
        };
        let tok = token.get_untracked().trim().to_owned();
        // Unticked: forgotten. Ticked: this URL's token kept (a run without one keeps the last).
        if !remember.get_untracked() {
            browser::storage_remove(TOKEN_KEY);
        } else if !tok.is_empty() {
            browser::storage_set(TOKEN_KEY, &format!("{base}\n{tok}"));
        }
        busy.set(true);
        let sel = selector.get_untracked();
        leptos::task::spawn_local(async move {
            let result = match ask(base, sel, w, tok).await {
                Ok(d) => {
                    let r = analyse(&d, lang.get_untracked()).await;
                    if let Some(old) = done.get_value() {
                        old.session.close();
                    }
                    done.set_value(Some(d));
                    r
                }
                Err(e) => Err(e),
            };
            busy.set(false);
            match result {
                Ok(r) => report.set(Some(r)),
                Err(f) => error.set(Some(f)),
            }
        });
    };
    // A report on screen follows the language: the same answer, read again.
    Effect::new(move |prev: Option<Lang>| {
        let l = lang.get();
        if prev.is_some_and(|p| p != l)
            && report.get_untracked().is_some()
            && let Some(d) = done.get_value()
        {
            leptos::task::spawn_local(async move {
                if let Ok(r) = analyse(&d, l).await {
                    report.set(Some(r));
                }
            });
        }
        l
    });

    let field = move |label: Msg, sig: RwSignal<String>, id: &'static str, kind: &'static str| {
        fixed(view! {
            <label>
                {tx(lang, label)} " "
                <input type=kind data-testid=id autocomplete="off" spellcheck="false" prop:value=move || sig.get() on:input=set_text(sig)/>
            </label>
        })
    };
    fixed(view! {
        <details class="prom" data-testid="prom-source" open=from_link.is_some()>
            <summary>{tx(lang, Msg::PromTitle)}</summary>
            <p class="legend">{tx(lang, Msg::PromIntro)}</p>
            {offline_notice(lang, Msg::PromOffline)}
            {from_link.is_some().then(|| fixed(view! { <p data-testid="prom-from-link">{tx(lang, Msg::PromFromLink)}</p> }))}
            <div class="row">
                {field(Msg::PromUrl, url, "prom-url", "url")}
                {field(Msg::PromLast, minutes, "prom-minutes", "number")}
                {field(Msg::PromFrom, from, "prom-from", "text")}
                {field(Msg::PromTo, to, "prom-to", "text")}
                {field(Msg::PromStep, step, "prom-step", "text")}
                {field(Msg::PromSelector, selector, "prom-selector", "text")}
                {field(Msg::PromToken, token, "prom-token", "password")}
                <label>
                    <input
                        type="checkbox"
                        data-testid="prom-remember"
                        prop:checked=move || remember.get()
                        on:change=on_event(move |ev| remember.set(event_target_checked(&ev)))
                    />
                    " " {tx(lang, Msg::PromRemember)}
                </label>
                <button data-testid="prom-run" class="primary" prop:disabled=blocked on:click=click(move |_| run())>
                    {move || tx(lang, if busy.get() { Msg::PromRunning } else if blocked() { Msg::NeedsNetwork } else { Msg::PromRun })()}
                </button>
            </div>
            {move || error.get().map(|f| {
                let kind = explain(Lang::En, &f).0;
                fixed(view! { <p class="error" data-testid="prom-error" data-kind=kind>{move || explain(lang.get(), &f).1}</p> })
            })}
        </details>
        {move || report.get().map(|(r, exports)| {
            let p = r.prometheus.clone();
            fixed(view! {
                <div data-testid="prom-report">
                    {p.map(|p| fixed(view! { <FleetView p/> }))}
                    <super::triage::ReportView report=r exports/>
                </div>
            })
        })}
    })
}

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".into(), |x| format!("{x:.digits$}"))
}

/// Replicas ranked by the symptom, GPUs against their peers, the queries as graph links.
#[component]
fn FleetView(p: PrometheusInput) -> impl IntoView {
    let lang = use_lang();
    let by = p.fleet.ranked_by.clone();
    fixed(view! {
        <section class="fleet" data-testid="fleet-view">
            <h2>{tx(lang, Msg::FleetTitle)}</h2>
            <p>{move || tf(lang.get(), Msg::FleetRankedBy, &[("by", &by)])}</p>
            <table class="figures">
                <thead><tr><th></th><th></th><th>"TTFT p99 s"</th><th>"ITL p99 s"</th><th>"waiting"</th><th>"KV"</th><th>"tok/s"</th></tr></thead>
                <tbody>
                    {p.fleet.replicas.iter().map(|r| fixed(view! {
                        <tr data-testid="fleet-replica" data-verdict=r.verdict.as_str()>
                            <td><code>{r.subject.describe()}</code></td>
                            <td>{r.verdict.as_str()}</td>
                            <td>{r.ttft_p99.clone().unwrap_or_else(|| "–".into())}</td>
                            <td>{r.itl_p99.clone().unwrap_or_else(|| "–".into())}</td>
                            <td>{num(r.waiting_max, 0)}</td>
                            <td>{num(r.kv_usage_max, 2)}</td>
                            <td>{num(r.generation_tokens_per_s, 1)}</td>
                        </tr>
                    })).collect_view()}
                </tbody>
            </table>
            {(!p.fleet.gpus.is_empty()).then(|| fixed(view! {
                <h3>{tx(lang, Msg::FleetGpus)}</h3>
                <table class="figures">
                    <thead><tr><th></th><th>"SM MHz"</th><th>"peers MHz"</th><th>"ratio"</th><th>"°C"</th><th>"util %"</th></tr></thead>
                    <tbody>
                        {p.fleet.gpus.iter().map(|g| fixed(view! {
                            <tr data-testid="fleet-gpu">
                                <td><code>{g.subject.describe()}</code></td>
                                <td>{num(Some(g.sm_clock_mhz), 0)}</td>
                                <td>{num(g.peer_median_mhz, 0)} " " {g.peers.clone().unwrap_or_default()}</td>
                                <td>{num(g.ratio, 2)}</td>
                                <td>{num(g.temp_c, 0)}</td>
                                <td>{num(g.util_pct, 0)}</td>
                            </tr>
                        })).collect_view()}
                    </tbody>
                </table>
            }))}
            <h3>{tx(lang, Msg::FleetQueries)}</h3>
            <ul>
                {p.queries.iter().map(|q| fixed(view! {
                    <li><a href=q.graph_url.clone() target="_blank" rel="noopener noreferrer">{q.api.clone()}</a> " · " {q.series} " · " <code>{q.expr.clone()}</code></li>
                })).collect_view()}
            </ul>
            {(!p.cut.is_empty()).then(|| fixed(view! {
                <h3>{tx(lang, Msg::FleetCut)}</h3>
                <ul>{p.cut.iter().map(|c| fixed(view! { <li>{c.clone()}</li> })).collect_view()}</ul>
            }))}
        </section>
    })
}
