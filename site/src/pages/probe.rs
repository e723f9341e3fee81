//! Probe: stream requests from the browser at an OpenAI- or Anthropic-compatible endpoint,
//! stamp every chunk as it arrives (in the probe worker, on the page's clock: see
//! `browser::stream_post`), and judge the result with the
//! same core code as `triage probe` (timer, faults, report). Like the CLI, each request carries
//! a W3C `traceparent` with a fresh trace id (`crypto.getRandomValues`) unless switched off, and
//! its row and record show the trace id.

use crate::app::{
    click, effect, num_text, offline_notice, on_event, set_parsed, set_text, tx, use_lang, use_online,
};
use crate::browser::{self, FetchError, Head};
use crate::fixed::fixed;
use crate::i18n::{Lang, Msg, t, tf};
use leptos::prelude::*;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use triage_base::endpoint::{self, Api, ProbeRequest};
use triage_base::fault::{self, Fault, FaultKind};
use triage_base::probe::{ProbeSummary, Quantiles, RequestRecord};
use triage_base::timing::{StreamTimer, TimerConfig};
use triage_base::trace::{self, TraceParent};
use wasm_bindgen::JsCast;

const KEY_STORE: &str = "triage.probe.key";

fn ns(ms: f64) -> u64 {
    (ms.max(0.0) * 1e6) as u64
}

/// Everything one run needs.
#[derive(Clone)]
struct Opts {
    url: String,
    api: Api,
    headers: Vec<(String, String)>,
    body: String,
    timeout_ms: i32,
    key: String,
    /// The language of the run's record (`triage.probe/v1` keeps one message per failure).
    lang: Lang,
    /// Send each request with a fresh W3C `traceparent`.
    traceparent: bool,
    /// When each fetch of the run was called, in order (to tell Resource Timing entries apart).
    calls: RefCell<Vec<f64>>,
}

impl Opts {
    /// The run's secrets: the key (the page adds no other header a person chose).
    fn secrets(&self) -> triage_base::safe::Secrets {
        triage_base::safe::Secrets::new().with(&self.key)
    }
}

/// What a request in flight has shown so far, for the live charts (its record replaces it
/// when it ends).
#[derive(Clone, Debug, Default, PartialEq)]
struct Live {
    index: usize,
    ttft_ms: Option<f64>,
    gaps_ms: Vec<f64>,
    tokens: usize,
}

/// How often the live charts redraw at most: every chunk of every request in flight updates the
/// board, and each redraw takes the page's one thread from stamping the other requests'
/// chunks (a redraw at every first token delayed the next request's first token by several ms).
const LIVE_EVERY_MS: f64 = 250.0;

/// The requests in flight, shared by the run's tasks. Updated untracked; the page redraws when
/// `version` moves.
#[derive(Clone, Copy)]
struct LiveBoard {
    store: RwSignal<Vec<Live>>,
    version: RwSignal<u64>,
    drawn_at: RwSignal<f64>,
}

impl LiveBoard {
    fn new() -> LiveBoard {
        LiveBoard {
            store: RwSignal::new(Vec::new()),
            version: RwSignal::new(0),
            drawn_at: RwSignal::new(f64::NEG_INFINITY),
        }
    }

    /// Redraw now (`None`), or at `at_ms` if the last redraw is old enough.
    fn touch(&self, at_ms: Option<f64>) {
        let now = at_ms.unwrap_or_else(browser::now_ms);
        if at_ms.is_none() || now - self.drawn_at.get_untracked() >= LIVE_EVERY_MS {
            self.drawn_at.update_untracked(|t| *t = now);
            self.version.update(|v| *v += 1);
        }
    }

    fn reset(&self) {
        self.store.update_untracked(Vec::clear);
        self.touch(None);
    }

    /// Request `index` so far: its TTFT, its new gaps, its token count.
    fn update(&self, index: usize, ttft_ms: Option<f64>, gaps: Vec<f64>, tokens: usize, at_ms: f64) {
        self.store.update_untracked(|v| {
            let i = v.iter().position(|l| l.index == index).unwrap_or_else(|| {
                v.push(Live { index, ..Live::default() });
                v.len() - 1
            });
            v[i].ttft_ms = ttft_ms;
            v[i].gaps_ms.extend(gaps);
            v[i].tokens = tokens;
        });
        self.touch(Some(at_ms));
    }

    /// The request ended: its record takes over.
    fn remove(&self, index: usize) {
        self.store.update_untracked(|v| v.retain(|l| l.index != index));
        self.touch(None);
    }

    /// The board, tracked.
    fn get(&self) -> Vec<Live> {
        self.version.track();
        self.store.get_untracked()
    }
}

/// One finished request.
struct Done {
    record: RequestRecord,
    /// "Sent" came from the browser's Resource Timing.
    wire: bool,
    /// The failure message in English and in Chinese, so a language switch rewrites it.
    message: Option<[String; 2]>,
}

async fn one(o: &Opts, index: usize, run_start_ms: f64, live: LiveBoard) -> Done {
    let sent = Cell::new(browser::now_ms());
    let timer = RefCell::new(StreamTimer::new(ns(sent.get()), TimerConfig::default()));
    let head: RefCell<Option<Head>> = RefCell::new(None);
    let error_body = RefCell::new(Vec::<u8>::new());
    let shown = Cell::new(0usize);
    let entry_name = RefCell::new(o.url.clone());
    // A fresh trace id per request; none when the browser has no randomness to give.
    let tp = o.traceparent.then(browser::random_bytes::<24>).flatten().map(TraceParent::from_random);
    let mut headers = o.headers.clone();
    headers.extend(tp.map(|tp| (trace::HEADER.to_owned(), tp.header_value())));
    let post = browser::Post { url: &o.url, headers: &headers, body: &o.body, timeout_ms: o.timeout_ms };
    let (result, end) = browser::stream_post(
        post,
        |at, url| {
            sent.set(at);
            o.calls.borrow_mut().push(at);
            *entry_name.borrow_mut() = url;
            *timer.borrow_mut() = StreamTimer::new(ns(at), TimerConfig::default());
        },
        |h| {
            timer.borrow_mut().on_headers(ns(h.at_ms));
            *head.borrow_mut() = Some(h.clone());
        },
        |bytes, at| {
            let ok = head.borrow().as_ref().is_some_and(|h| (200..300).contains(&h.status));
            if ok {
                let mut tm = timer.borrow_mut();
                tm.feed(bytes, ns(at));
                let times = tm.token_times_ns();
                let from = shown.get();
                if times.len() > from {
                    let ms = |t: u64| t as f64 / 1e6;
                    let ttft_ms = times.first().map(|&t| ms(t) - sent.get());
                    // The gaps that end at the new tokens (as `RequestTiming::gaps_ns` pairs them).
                    let gaps: Vec<f64> =
                        times[from.saturating_sub(1)..].windows(2).map(|w| ms(w[1]) - ms(w[0])).collect();
                    live.update(index, ttft_ms, gaps, times.len(), at);
                    shown.set(times.len());
                }
            } else if error_body.borrow().len() < 4096 {
                error_body.borrow_mut().extend_from_slice(bytes);
            }
        },
    )
    .await;
    let tokens = timer.borrow().tokens_so_far();
    let secrets = o.secrets();
    let mut timing = timer.into_inner().finish_redacted(ns(end), &secrets);
    let head = head.into_inner();
    // The browser's hand-over from fetch() to the socket (2–8 ms in headless Chromium) is not
    // the server's time: where Resource Timing shows when the request went out, measure from
    // there, as the CLI measures from its send.
    let mut wire = false;
    if result.is_ok()
        && head.is_some()
        && let Some(w) = {
            // Owned copies: other requests' tasks push to `calls` while this one waits.
            let (name, calls) = (entry_name.borrow().clone(), o.calls.borrow().clone());
            browser::wire_times(&name, sent.get(), end, &calls).await
        }
        && w.sent_ms >= sent.get() - 0.5
        && timing.first_byte_ns.is_none_or(|b| ns(w.sent_ms) <= b)
    {
        timing.sent_ns = ns(w.sent_ms);
        if timing.headers_ns.is_some() && w.head_ms >= w.sent_ms {
            timing.headers_ns = Some(ns(w.head_ms));
        }
        sent.set(w.sent_ms);
        wire = true;
    }
    let status = head.as_ref().map(|h| h.status);
    let (ms, n) = (o.timeout_ms.to_string(), tokens.to_string());
    let judge = |lang: Lang| -> Option<Fault> {
        let say = |m: Msg, args: &[(&str, &str)]| tf(lang, m, args);
        let fault = match (&result, &head) {
            (Err(FetchError::Rejected(msg)), None) => {
                Some(Fault::new(FaultKind::Cors, say(Msg::ProbeRejected, &[("error", msg), ("url", &o.url)])))
            }
            (Err(FetchError::TimedOut), None) => {
                Some(Fault::new(FaultKind::TimeoutBeforeHeaders, say(Msg::ProbeNoHeaders, &[("ms", &ms)])))
            }
            (Err(FetchError::TimedOut), Some(_)) if tokens == 0 => {
                Some(Fault::new(FaultKind::TimeoutBeforeFirstToken, say(Msg::ProbeNoToken, &[("ms", &ms)])))
            }
            (Err(FetchError::TimedOut), Some(_)) => Some(Fault::new(
                FaultKind::TimeoutMidStream,
                say(Msg::ProbeStalled, &[("tokens", &n), ("ms", &ms)]),
            )),
            (Err(FetchError::BodyFailed(msg) | FetchError::Rejected(msg)), Some(_)) => Some(Fault::new(
                FaultKind::ResetMidStream,
                say(Msg::ProbeBroke, &[("tokens", &n), ("error", msg)]),
            )),
            (Ok(()), Some(h)) if h.redirect => Some(fault::from_redirect(h.status, &o.url, None, lang)),
            (Ok(()), Some(h)) if !(200..300).contains(&h.status) => {
                // Redacted before `from_status` cuts it; so is the header the server chose.
                let body = secrets.redact(&String::from_utf8_lossy(&error_body.borrow())).into_owned();
                let retry = h.retry_after.as_deref().map(|r| triage_base::safe::cut(&secrets.redact(r), 100));
                Some(fault::from_status_in(h.status, &o.url, &body, retry.as_deref(), lang))
            }
            (Ok(()), Some(h)) => fault::judge_stream_in(&h.content_type, &o.url, &timing, lang),
            (Ok(()), None) => Some(Fault::new(FaultKind::Other, t(lang, Msg::ProbeNoResponse))),
            (Err(FetchError::BodyFailed(msg)), None) => Some(Fault::new(FaultKind::Other, msg.clone())),
        };
        fault.map(|f| Fault { kind: f.kind, message: secrets.redact(&f.message).into_owned() })
    };
    // Judged once per language; the record keeps the run's.
    let (en, zh) = (judge(Lang::En), judge(Lang::Zh));
    let message = en.as_ref().zip(zh.as_ref()).map(|(en, zh)| [en.message.clone(), zh.message.clone()]);
    let fault = if o.lang == Lang::Zh { zh } else { en };
    let mut record =
        RequestRecord::new(index, ns(run_start_ms), ns(sent.get()), status, Some(&timing), fault);
    record.trace_id = tp.map(|tp| tp.trace_id.to_string());
    Done { record, wire, message }
}

fn cell(q: &Option<Quantiles>, f: fn(&Quantiles) -> f64) -> String {
    q.as_ref().map_or_else(|| "-".to_owned(), |q| format!("{:.1}", f(q)))
}

#[component]
pub fn ProbePage() -> impl IntoView {
    let lang = use_lang();
    let tr = move |m: Msg| t(lang.get(), m);
    let stored = browser::storage_get(KEY_STORE);
    let url = RwSignal::new("http://127.0.0.1:8000/v1".to_owned());
    let api = RwSignal::new(Api::Openai);
    let model = RwSignal::new(String::new());
    let key = RwSignal::new(stored.clone().unwrap_or_default());
    let remember = RwSignal::new(stored.is_some());
    let traceparent = RwSignal::new(true);
    let prompt = RwSignal::new("Explain continuous batching in one paragraph.".to_owned());
    let max_tokens = RwSignal::new(64u32);
    let n = RwSignal::new(4usize);
    let conc = RwSignal::new(1usize);
    let records = RwSignal::new(Vec::<RequestRecord>::new());
    let running = RwSignal::new(false);
    let resolved = Memo::new(move |_| endpoint::resolve_in(&url.get(), api.get(), lang.get()));
    // Offline, a run can reach only an endpoint on this machine: for any other the button says
    // so instead of starting requests that cannot leave.
    let online = use_online();
    let blocked = move || !online() && !browser::is_loopback(&url.get());
    let wall = RwSignal::new(0.0f64);
    let wire = RwSignal::new(0usize);
    // Failure messages by request index, in both languages.
    let messages = RwSignal::new(Vec::<(usize, [String; 2])>::new());
    let live = LiveBoard::new();
    // The run as asked, for the exports (Markdown, `triage.probe/v1`).
    let run = RwSignal::new(None::<super::export::ProbeRun>);

    Effect::new(effect(move |_| {
        if remember.get() {
            browser::storage_set(KEY_STORE, &key.get());
        } else {
            browser::storage_remove(KEY_STORE);
        }
    }));

    let start = move |_| {
        let Ok(r) = resolved.get_untracked() else { return };
        let a = api.get_untracked();
        let k = key.get_untracked();
        let mut headers: Vec<(String, String)> =
            endpoint::base_headers(a).into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
        if !k.is_empty() {
            let (name, value) = endpoint::auth_header(a, &k);
            headers.push((name.to_owned(), value));
        }
        if a == Api::Anthropic {
            // Anthropic answers browsers only with this explicit opt-in.
            headers.push(("anthropic-dangerous-direct-browser-access".into(), "true".into()));
        }
        let p = prompt.get_untracked();
        let m = model.get_untracked();
        let body = endpoint::request_body(&ProbeRequest {
            api: a,
            model: &m,
            prompt: &p,
            max_tokens: max_tokens.get_untracked(),
        });
        run.set(Some(super::export::ProbeRun {
            url: url.get_untracked(),
            api: a,
            model: m.clone(),
            requests: n.get_untracked().max(1),
            concurrency: conc.get_untracked().clamp(1, n.get_untracked().max(1)),
            timeout_ms: 60_000,
            max_tokens: max_tokens.get_untracked(),
            prompt_chars: p.chars().count(),
            key: k.clone(),
            in_worker: browser::probe_in_worker(),
        }));
        let opts = Rc::new(Opts {
            url: r.url,
            api: a,
            headers,
            body,
            timeout_ms: 60_000,
            key: k,
            lang: lang.get_untracked(),
            traceparent: traceparent.get_untracked(),
            calls: RefCell::new(Vec::new()),
        });
        let total = n.get_untracked().max(1);
        records.set(Vec::new());
        wire.set(0);
        messages.set(Vec::new());
        live.reset();
        browser::resource_timing_reset(total);
        running.set(true);
        let next = Rc::new(Cell::new(0usize));
        let finished = Rc::new(Cell::new(0usize));
        let run_start = browser::now_ms();
        for _ in 0..conc.get_untracked().clamp(1, total) {
            let (opts, next, finished) = (Rc::clone(&opts), Rc::clone(&next), Rc::clone(&finished));
            leptos::task::spawn_local(async move {
                loop {
                    let i = next.get();
                    if i >= total {
                        break;
                    }
                    next.set(i + 1);
                    let Done { record: rec, wire: on_wire, message } = one(&opts, i, run_start, live).await;
                    live.remove(i);
                    if on_wire {
                        wire.update(|w| *w += 1);
                    }
                    if let Some(m) = message {
                        messages.update(|v| v.push((i, m)));
                    }
                    records.update(|v| {
                        v.push(rec);
                        triage_base::sort::sort_by_key(v, |r| r.index);
                    });
                    finished.set(finished.get() + 1);
                    if finished.get() == total {
                        wall.set(browser::now_ms() - run_start);
                        running.set(false);
                    }
                }
            });
        }
        let _ = opts.api;
    };

    let summary = Memo::new(move |_| ProbeSummary::of(&records.get(), wall.get()));
    let exports = Memo::new(move |_| {
        let (recs, r) = (records.get(), run.get()?);
        (!running.get() && !recs.is_empty())
            .then(|| messages.with(|m| super::export::probe(&r, &recs, wall.get(), m, lang.get())))
    });
    let ttft_canvas = NodeRef::<leptos::html::Canvas>::new();
    let itl_canvas = NodeRef::<leptos::html::Canvas>::new();
    // Finished requests and, live, the ones still streaming.
    Effect::new(effect(move |_| {
        let recs = records.get();
        let flying = live.get();
        let ttft: Vec<f64> =
            recs.iter().filter_map(|r| r.ttft_ms).chain(flying.iter().filter_map(|l| l.ttft_ms)).collect();
        let gaps: Vec<f64> = recs
            .iter()
            .flat_map(|r| r.gaps_ms.iter().copied())
            .chain(flying.iter().flat_map(|l| l.gaps_ms.iter().copied()))
            .collect();
        for (canvas, values, bins, label) in
            [(ttft_canvas, &ttft, 20, Msg::ChartTtft), (itl_canvas, &gaps, 30, Msg::ChartItl)]
        {
            if let Some(c) = canvas.get() {
                let _ = c.set_attribute("data-points", &values.len().to_string());
                super::chart::histogram(&c.unchecked_into(), values, bins, t(lang.get(), label));
            }
        }
    }));

    fixed(view! {
        <section class="probe form">
            <label class="wide">{tx(lang, Msg::ProbeUrl)}
                <input type="url" data-testid="probe-url" prop:value=url on:input=set_text(url)/>
            </label>
            <p class="resolved">{move || match resolved.get() {
                Ok(r) => fixed(view! { <span>"→ " <code>{r.url}</code> {r.warnings.into_iter().map(|w| fixed(view! { <span class="warn">" ⚠ " {w}</span> })).collect_view()}</span> }),
                Err(e) => fixed(view! { <span class="error">{e.message_in(lang.get())}</span> }),
            }}</p>
            <label>{tx(lang, Msg::ProbeApi)}
                <select data-testid="probe-api" on:change=on_event(move |ev| api.set(Api::parse(&event_target_value(&ev)).unwrap_or(Api::Openai)))>
                    <option value="openai">"OpenAI (chat completions)"</option>
                    <option value="anthropic">"Anthropic (messages)"</option>
                </select>
            </label>
            <label>{tx(lang, Msg::ProbeModel)}
                <input type="text" data-testid="probe-model" prop:value=model on:input=set_text(model)/>
            </label>
            <label>{tx(lang, Msg::ProbeKey)}
                <input type="password" autocomplete="off" data-testid="probe-key" prop:value=key on:input=set_text(key)/>
            </label>
            <label class="check">
                <input type="checkbox" data-testid="probe-remember" prop:checked=remember on:change=on_event(move |ev| remember.set(event_target_checked(&ev)))/>
                {tx(lang, Msg::ProbeRemember)}
            </label>
            {move || remember.get().then(|| fixed(view! { <p class="warn">{tx(lang, Msg::ProbeRememberWarning)}</p> }))}
            <label class="check wide">
                <input type="checkbox" data-testid="probe-traceparent" prop:checked=traceparent on:change=on_event(move |ev| traceparent.set(event_target_checked(&ev)))/>
                {tx(lang, Msg::ProbeTraceparent)}
            </label>
            <label class="wide">{tx(lang, Msg::ProbePrompt)}
                <textarea rows="2" data-testid="probe-prompt" prop:value=prompt on:input=set_text(prompt)></textarea>
            </label>
            <label>{tx(lang, Msg::ProbeMaxTokens)}
                <input type="number" min="1" data-testid="probe-max-tokens" prop:value=num_text(max_tokens) on:input=set_parsed(max_tokens, 64)/>
            </label>
            <label>{tx(lang, Msg::ProbeRequests)}
                <input type="number" min="1" max="1000" data-testid="probe-n" prop:value=num_text(n) on:input=set_parsed(n, 1)/>
            </label>
            <label>{tx(lang, Msg::ProbeConcurrency)}
                <input type="number" min="1" max="64" data-testid="probe-concurrency" prop:value=num_text(conc) on:input=set_parsed(conc, 1)/>
            </label>
            {offline_notice(lang, Msg::ProbeOffline)}
            <button class="primary" data-testid="probe-start" prop:disabled=move || running.get() || blocked() on:click=click(start)>
                {move || if running.get() { tr(Msg::ProbeRunning) } else if blocked() { tr(Msg::NeedsNetwork) } else { tr(Msg::ProbeStart) }}
            </button>
            {move || (conc.get() > 6).then(|| fixed(view! { <p class="warn">{tx(lang, Msg::ProbeConnLimit)}</p> }))}
        </section>
        <section class="probe-result">
            <p>{move || {
                let s = summary.get();
                let (ok, failed, stalls) = (s.ok.to_string(), s.failed.to_string(), s.stalls.to_string());
                tf(lang.get(), Msg::ProbeSummaryLine, &[("ok", &ok), ("failed", &failed), ("stalls", &stalls)])
            }}</p>
            {move || exports.get().map(|exports| fixed(view! { <super::export::ExportButtons exports probe=true/> }))}
            {move || {
                let flying = live.get();
                (running.get() && !flying.is_empty()).then(|| {
                    let (r, n) = (flying.len().to_string(), flying.iter().map(|l| l.tokens).sum::<usize>().to_string());
                    fixed(view! { <p data-testid="probe-live">{tf(lang.get(), Msg::ProbeLive, &[("requests", &r), ("tokens", &n)])}</p> })
                })
            }}
            <table class="quantiles">
                <thead><tr><th>"ms"</th><th>"p50"</th><th>"p90"</th><th>"p99"</th><th>{tx(lang, Msg::ProbeMax)}</th><th>{tx(lang, Msg::ProbeMean)}</th></tr></thead>
                <tbody>
                    {move || {
                        let s = summary.get();
                        [("TTFT", s.ttft_ms), ("TTFO", s.ttfo_ms), ("ITL", s.itl_ms), ("ITL/tok", s.itl_per_token_ms), ("TPOT", s.tpot_ms), ("E2E", s.e2e_ms)]
                            .into_iter()
                            .map(|(name, q)| {
                                let id = format!("probe-{}-p50", name.to_ascii_lowercase().replace('/', "-"));
                                fixed(view! {
                                    <tr>
                                        <td>{name}</td>
                                        <td data-testid=id>{cell(&q, |q| q.p50)}</td>
                                        <td>{cell(&q, |q| q.p90)}</td>
                                        <td>{cell(&q, |q| q.p99)}</td>
                                        <td>{cell(&q, |q| q.max)}</td>
                                        <td>{cell(&q, |q| q.mean)}</td>
                                    </tr>
                                })
                            })
                            .collect_view()
                    }}
                </tbody>
            </table>
            <div class="charts">
                <canvas node_ref=ttft_canvas width="370" height="200" data-testid="probe-ttft-chart"></canvas>
                <canvas node_ref=itl_canvas width="370" height="200" data-testid="probe-itl-chart"></canvas>
            </div>
            <table class="requests">
                <thead><tr><th>"#"</th><th>{tx(lang, Msg::ProbeStatus)}</th><th>"TTFT"</th><th>"TTFO"</th><th>"E2E"</th><th>{tx(lang, Msg::ProbeTokens)}</th><th>"id"</th><th>"trace id"</th></tr></thead>
                <tbody>
                    {move || records.get().into_iter().map(|r| {
                        let ms = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"));
                        // Patched in place, not replaced: this list grows one row at a time, up to 1000.
                        view! {
                            <tr data-testid="probe-request" data-ttft=r.ttft_ms.map(|v| v.to_string()).unwrap_or_default() data-response-id=r.response_id.clone().unwrap_or_default() data-trace-id=r.trace_id.clone().unwrap_or_default()>
                                <td>{r.index}</td>
                                <td>{r.status.map(|s| s.to_string()).unwrap_or_default()}</td>
                                <td>{ms(r.ttft_ms)}</td>
                                <td>{ms(r.ttfo_ms)}</td>
                                <td>{ms(r.e2e_ms)}</td>
                                <td>{r.output_tokens.map(|n| n.to_string()).unwrap_or_default()}</td>
                                <td><code>{r.response_id.clone().unwrap_or_default()}</code></td>
                                <td><code>{r.trace_id.clone().unwrap_or_default()}</code></td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
            <h3>{tx(lang, Msg::Failures)}</h3>
            <ul class="failures">
                {move || records.get().into_iter().filter_map(|r| r.error.map(|e| (r.index, r.status, e))).map(|(i, s, e)| view! {
                    // Patched in place like the rows above.
                    <li data-testid="probe-failure" data-kind=e.kind.as_str()>
                        "#" {i} {s.map(|s| format!(" [HTTP {s}]"))} " " <code>{e.kind.as_str()}</code> ": "
                        {move || {
                            let pick = usize::from(lang.get() == Lang::Zh);
                            messages.with(|m| m.iter().find(|(j, _)| *j == i).map(|(_, both)| both[pick].clone()))
                                .unwrap_or_else(|| e.message.clone())
                        }}
                    </li>
                }).collect_view()}
            </ul>
            <ul class="defs">
                {triage_base::defs::PROBE_FIGURES.iter().map(|d| fixed(view! {
                    <li><strong>{d.name}</strong> ": " {move || d.meaning_in(lang.get())} " (" {move || d.others_in(lang.get())} ")"</li>
                })).collect_view()}
            </ul>
            {move || {
                let total = records.get().len();
                (total > 0).then(|| {
                    let (w, n) = (wire.get().to_string(), total.to_string());
                    fixed(view! { <p class="note" data-testid="probe-sent-note">{tf(lang.get(), Msg::ProbeSentWire, &[("wire", &w), ("total", &n)])}</p> })
                })
            }}
            <p class="note" data-testid="probe-timing-note">{tx(lang, if browser::probe_in_worker() { Msg::ProbeLimits } else { Msg::ProbeLimitsPage })}</p>
            <p class="note">{tx(lang, Msg::ProbeCorsHelp)}</p>
            <p class="note">{tx(lang, Msg::ProbeConnLimit)}</p>
        </section>
    })
}
