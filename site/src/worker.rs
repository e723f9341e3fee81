//! The analysis worker (`worker.js` with the `triage-site-analyzer` wasm module): everything
//! that judges runs there, and the page only draws. One worker per page, started the first time
//! something needs it (a first visit that never analyses never downloads the analyzer), shared
//! by the triage page (streamed analysis runs), the playbook (rule docs, the generator's lint),
//! the drill (the simulator and the check) and the Prometheus source (the exchange).
//!
//! Protocol (all messages carry an `id`; answers to one id go to its handler):
//! - `{run, lang, inputs}` → `{id, progress}`…, then `{id, report, excerpts, markdown}` |
//!   `{id, cancelled}` | `{id, error}`; `{cancel: id}` stops a run; a new run cancels the last.
//! - `{call, id, args}` → `{id, result}` (JSON `{"ok"|"err"}`, see `site/analyzer/src/calls.rs`)
//!   | `{id, error}`.
//! - `{prom, id, session, …}` → `{id, result}`: a step of a Prometheus exchange held in the
//!   worker (`site/analyzer/src/prom.rs`).
//!
//! When the worker itself fails (its script, the wasm, out of memory: `onerror`; its module
//! would not load: `{fatal}`) every pending answer ends with that error; the next request
//! starts a new worker.

use crate::browser::js_message;
use js_sys::{Reflect, Uint8Array};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// One input handed to the analysis worker.
pub enum WorkerInput<'a> {
    /// A chosen or dropped file: the worker reads it itself (`File.stream()`); only the handle
    /// crosses, not its bytes.
    File { name: &'a str, file: &'a web_sys::File },
    /// A paste: its UTF-8 bytes, copied once out of wasm memory and transferred (not cloned).
    Text { name: &'a str, text: &'a str },
}

/// How an analysis in the worker ended.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkerDone {
    /// The `triage.report/v1` JSON (the bytes `triage analyze --format json` prints), the
    /// source view's excerpts as JSON ([`crate::Excerpt`]s) and the report as Markdown (the
    /// bytes `--format markdown` prints).
    Report {
        report: String,
        excerpts: String,
        markdown: String,
    },
    Failed(String),
    Cancelled,
}

type Handler = Rc<dyn Fn(Answer)>;

/// What came back for one id.
enum Answer {
    /// A message of the worker's (`data`).
    Message(JsValue),
    /// The worker died.
    Died(String),
}

struct Hub {
    worker: web_sys::Worker,
    next: Cell<u32>,
    pending: RefCell<BTreeMap<u32, Handler>>,
    /// The id of the last analysis run (messages of earlier runs are ignored).
    last_run: Cell<u32>,
}

thread_local! {
    static HUB: RefCell<Option<Rc<Hub>>> = const { RefCell::new(None) };
}

fn get(data: &JsValue, k: &str) -> Option<JsValue> {
    Reflect::get(data, &k.into()).ok().filter(|v| !v.is_undefined())
}

fn start() -> Result<Rc<Hub>, String> {
    let opts = web_sys::WorkerOptions::new();
    opts.set_type(web_sys::WorkerType::Module);
    let worker = web_sys::Worker::new_with_options("./worker.js", &opts).map_err(|e| js_message(&e))?;
    let hub = Rc::new(Hub {
        worker,
        next: Cell::new(0),
        pending: RefCell::new(BTreeMap::new()),
        last_run: Cell::new(0),
    });
    let weak = Rc::downgrade(&hub);
    let on_message = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |ev: web_sys::MessageEvent| {
        let Some(hub) = weak.upgrade() else { return };
        let data = ev.data();
        if let Some(fatal) = get(&data, "fatal") {
            die(&hub, fatal.as_string().unwrap_or_default());
            return;
        }
        let Some(id) = get(&data, "id").and_then(|v| v.as_f64()) else { return };
        let handler = hub.pending.borrow().get(&(id as u32)).cloned();
        if let Some(h) = handler {
            h(Answer::Message(data));
        }
    });
    hub.worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    let weak = Rc::downgrade(&hub);
    let on_error = Closure::<dyn FnMut(web_sys::Event)>::new(move |ev: web_sys::Event| {
        let message = get(&ev, "message").and_then(|m| m.as_string()).unwrap_or_default();
        if let Some(hub) = weak.upgrade() {
            die(&hub, message);
        }
    });
    hub.worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    on_error.forget();
    Ok(hub)
}

/// Stop the worker now (it is busy past a deadline): whatever waits on it fails with
/// `message`, and the next request starts another.
pub fn abandon(message: &str) {
    if let Some(h) = HUB.with(|h| h.borrow().clone()) {
        die(&h, message.to_owned());
    }
}

/// The worker is gone: forget it (the next request starts another) and fail what waited on it.
fn die(hub: &Rc<Hub>, message: String) {
    let message = if message.is_empty() { "the analysis worker failed".to_owned() } else { message };
    HUB.with(|h| {
        let mut slot = h.borrow_mut();
        if slot.as_ref().is_some_and(|s| Rc::ptr_eq(s, hub)) {
            *slot = None;
        }
    });
    hub.worker.terminate();
    let pending = std::mem::take(&mut *hub.pending.borrow_mut());
    for h in pending.into_values() {
        h(Answer::Died(message.clone()));
    }
}

fn hub() -> Result<Rc<Hub>, String> {
    if let Some(h) = HUB.with(|h| h.borrow().clone()) {
        return Ok(h);
    }
    let h = start()?;
    HUB.with(|slot| *slot.borrow_mut() = Some(h.clone()));
    Ok(h)
}

impl Hub {
    fn id(&self) -> u32 {
        let id = self.next.get().wrapping_add(1);
        self.next.set(id);
        id
    }

    fn done(&self, id: u32) {
        self.pending.borrow_mut().remove(&id);
    }
}

/// Start the worker now if it is not running, so that its module is downloaded and compiled
/// before it is needed (the triage page calls this when the user starts giving it input).
pub fn warm() {
    let _ = hub();
}

/// Analyse `inputs` in the worker into a report written in `lang`; `on_progress(0..1)` (by
/// bytes) while it runs, then `on_done` once. Starting a run cancels the one before. Returns
/// the run's id (for [`cancel`]).
pub fn run(
    inputs: &[WorkerInput<'_>],
    lang: crate::i18n::Lang,
    on_progress: impl Fn(f64) + 'static,
    on_done: impl Fn(WorkerDone) + 'static,
) -> Result<u32, String> {
    let hub = hub()?;
    let id = hub.id();
    let before = hub.last_run.replace(id);
    hub.done(before);
    let weak = Rc::downgrade(&hub);
    let handler: Handler = Rc::new(move |answer| {
        let end = |done: WorkerDone| {
            if let Some(h) = weak.upgrade() {
                h.done(id);
            }
            on_done(done);
        };
        match answer {
            Answer::Died(e) => end(WorkerDone::Failed(e)),
            Answer::Message(data) => {
                if let Some(p) = get(&data, "progress").and_then(|p| p.as_f64()) {
                    on_progress(p);
                } else if let Some(report) = get(&data, "report").and_then(|r| r.as_string()) {
                    let excerpts =
                        get(&data, "excerpts").and_then(|e| e.as_string()).unwrap_or_else(|| "[]".into());
                    let markdown = get(&data, "markdown").and_then(|m| m.as_string()).unwrap_or_default();
                    end(WorkerDone::Report { report, excerpts, markdown });
                } else if get(&data, "cancelled").is_some() {
                    end(WorkerDone::Cancelled);
                } else {
                    end(WorkerDone::Failed(
                        get(&data, "error").and_then(|e| e.as_string()).unwrap_or_default(),
                    ));
                }
            }
        }
    });
    hub.pending.borrow_mut().insert(id, handler);
    let list = js_sys::Array::new();
    let transfer = js_sys::Array::new();
    for input in inputs {
        let item = js_sys::Object::new();
        let name = match input {
            WorkerInput::File { name, file } => {
                let _ = Reflect::set(&item, &"file".into(), file);
                name
            }
            WorkerInput::Text { name, text } => {
                let bytes = Uint8Array::from(text.as_bytes());
                transfer.push(&bytes.buffer());
                let _ = Reflect::set(&item, &"bytes".into(), &bytes);
                name
            }
        };
        let _ = Reflect::set(&item, &"name".into(), &JsValue::from_str(name));
        list.push(&item);
    }
    let msg = js_sys::Object::new();
    let _ = Reflect::set(&msg, &"run".into(), &JsValue::from(id));
    let _ = Reflect::set(&msg, &"lang".into(), &JsValue::from_str(lang.as_str()));
    let _ = Reflect::set(&msg, &"inputs".into(), &list);
    if let Err(e) = hub.worker.post_message_with_transfer(&msg, &transfer) {
        hub.done(id);
        return Err(js_message(&e));
    }
    Ok(id)
}

/// Stop run `id`: the worker stops between two chunks and answers `Cancelled`.
pub fn cancel(id: u32) {
    if let Some(h) = HUB.with(|h| h.borrow().clone()) {
        let msg = js_sys::Object::new();
        let _ = Reflect::set(&msg, &"cancel".into(), &JsValue::from(id));
        let _ = h.worker.post_message(&msg);
    }
}

/// Post `msg` (its `id` set here) and wait for the answer's `result`, a JSON string.
async fn ask(msg: js_sys::Object, transfer: &js_sys::Array) -> Result<String, String> {
    let hub = hub()?;
    let id = hub.id();
    let _ = Reflect::set(&msg, &"id".into(), &JsValue::from(id));
    let slot: Rc<RefCell<Option<Handler>>> = Rc::default();
    let promise = js_sys::Promise::new(&mut |resolve, reject| {
        let weak = Rc::downgrade(&hub);
        let h: Handler = Rc::new(move |answer| {
            if let Some(hub) = weak.upgrade() {
                hub.done(id);
            }
            let _ = match answer {
                Answer::Died(e) => reject.call1(&JsValue::NULL, &JsValue::from_str(&e)),
                Answer::Message(data) => match get(&data, "result") {
                    Some(r) => resolve.call1(&JsValue::NULL, &r),
                    None => reject.call1(&JsValue::NULL, &get(&data, "error").unwrap_or(JsValue::NULL)),
                },
            };
        });
        *slot.borrow_mut() = Some(h);
    });
    if let Some(h) = slot.borrow_mut().take() {
        hub.pending.borrow_mut().insert(id, h);
    }
    if let Err(e) = hub.worker.post_message_with_transfer(&msg, transfer) {
        hub.done(id);
        return Err(js_message(&e));
    }
    let got = JsFuture::from(promise).await.map_err(|e| js_message(&e))?;
    got.as_string().ok_or_else(|| "the worker's answer is not text".to_owned())
}

/// What the worker's JSON answers hold: `{"ok": T}` or `{"err": E}`.
#[derive(serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum Reply<T, E> {
    Ok(T),
    Err(E),
}

fn read<T: serde::de::DeserializeOwned, E: serde::de::DeserializeOwned>(
    json: &str,
) -> Result<Result<T, E>, String> {
    match serde_json::from_str::<Reply<T, E>>(json) {
        Ok(Reply::Ok(t)) => Ok(Ok(t)),
        Ok(Reply::Err(e)) => Ok(Err(e)),
        Err(e) => Err(format!("the worker's answer could not be read: {e}")),
    }
}

/// Ask the worker question `kind` (`docs`, `analyze`, `drill`, `drill-check`) with `args`.
pub async fn call<T: serde::de::DeserializeOwned>(kind: &str, args: &serde_json::Value) -> Result<T, String> {
    let msg = js_sys::Object::new();
    let _ = Reflect::set(&msg, &"call".into(), &JsValue::from_str(kind));
    let _ = Reflect::set(&msg, &"args".into(), &JsValue::from_str(&args.to_string()));
    let json = ask(msg, &js_sys::Array::new()).await?;
    read::<T, String>(&json)?
}

/// Why a Prometheus step failed, as the worker classified it (`site/analyzer/src/prom.rs`).
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
pub struct PromFailure {
    /// `selector`, `window`, `not-prometheus`, `empty`, `server` or `state`.
    pub kind: String,
    /// What went wrong, redacted and cut by core.
    pub detail: String,
}

/// One POST core's exchange asks for.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
pub struct PromRequest {
    pub path: String,
    pub form: String,
    pub max_body: usize,
}

/// A Prometheus exchange held in the worker (one per run; a language switch asks the same one
/// for its report again).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PromSession(u32);

/// A Prometheus window's report and its exports (the CLI's `--format json` and `--format
/// markdown` bytes, made in the worker).
#[derive(serde::Deserialize)]
pub struct PromReport {
    /// The report, to show.
    pub report: triage_report::Report,
    /// `triage.report/v1`, pretty, as the CLI prints it.
    pub json: String,
    /// The report as Markdown, as the CLI prints it.
    pub markdown: String,
}

/// A step of a Prometheus exchange: what went wrong is a [`PromFailure`]; the outer error is
/// the worker's own failure.
pub type PromStep<T> = Result<Result<T, PromFailure>, String>;

async fn prom(
    step: &str,
    session: u32,
    set: &[(&str, JsValue)],
    transfer: &js_sys::Array,
) -> Result<String, String> {
    let msg = js_sys::Object::new();
    let _ = Reflect::set(&msg, &"prom".into(), &JsValue::from_str(step));
    let _ = Reflect::set(&msg, &"session".into(), &JsValue::from(session));
    for (k, v) in set {
        let _ = Reflect::set(&msg, &(*k).into(), v);
    }
    ask(msg, transfer).await
}

thread_local! {
    static SESSIONS: Cell<u32> = const { Cell::new(0) };
}

impl PromSession {
    /// Check the selector and window (in core, in the worker) and get the first request.
    pub async fn start(
        base: &str,
        selector: &str,
        w: &triage_prometheus::query::Window,
    ) -> PromStep<(PromSession, PromRequest)> {
        let n = SESSIONS.with(|s| {
            s.set(s.get() + 1);
            s.get()
        });
        let set = [
            ("base", JsValue::from_str(base)),
            ("selector", JsValue::from_str(selector)),
            ("start_s", JsValue::from(w.start_s)),
            ("end_s", JsValue::from(w.end_s)),
            ("step_s", JsValue::from(w.step_s)),
        ];
        let json = prom("start", n, &set, &js_sys::Array::new()).await?;
        Ok(read::<PromRequest, PromFailure>(&json)?.map(|r| (PromSession(n), r)))
    }

    /// The answer to the last request; the next request, or `None` when the window is read.
    /// `body` is handed over (transferred): it is empty on the page afterwards.
    pub async fn answered(
        &self,
        status: u16,
        body: &Uint8Array,
        token: &str,
    ) -> PromStep<Option<PromRequest>> {
        let transfer = js_sys::Array::of1(&body.buffer());
        let set = [
            ("status", JsValue::from(status)),
            ("body", body.clone().into()),
            ("token", JsValue::from_str(token)),
        ];
        let json = prom("answered", self.0, &set, &transfer).await?;
        read(&json)
    }

    /// The report of the window, in `lang`, with its exports.
    pub async fn report(&self, lang: crate::i18n::Lang, token: &str) -> PromStep<PromReport> {
        let set = [("lang", JsValue::from_str(lang.as_str())), ("token", JsValue::from_str(token))];
        let json = prom("report", self.0, &set, &js_sys::Array::new()).await?;
        read(&json)
    }

    /// Forget the exchange in the worker.
    pub fn close(&self) {
        if let Some(h) = HUB.with(|h| h.borrow().clone()) {
            let msg = js_sys::Object::new();
            let _ = Reflect::set(&msg, &"prom".into(), &JsValue::from_str("close"));
            let _ = Reflect::set(&msg, &"session".into(), &JsValue::from(self.0));
            let _ = h.worker.post_message(&msg);
        }
    }
}
