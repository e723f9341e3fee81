//! Browser I/O in one place: clock, storage, language, streaming fetch,
//! downloads, the clipboard. Pages call these; they never touch `web_sys` themselves.

use js_sys::{Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

fn window() -> Option<web_sys::Window> {
    web_sys::window()
}

/// `performance.now()` in milliseconds: monotonic, 0.1 ms resolution on a normal page.
pub fn now_ms() -> f64 {
    window().and_then(|w| w.performance()).map_or(0.0, |p| p.now())
}

/// `N` random bytes from `crypto.getRandomValues` (the browser's cryptographic generator);
/// `None` where the browser refuses.
pub fn random_bytes<const N: usize>() -> Option<[u8; N]> {
    let mut bytes = [0u8; N];
    window()?.crypto().ok()?.get_random_values_with_u8_array(&mut bytes).ok()?;
    Some(bytes)
}

fn storage() -> Option<web_sys::Storage> {
    window().and_then(|w| w.local_storage().ok().flatten())
}

pub fn storage_get(key: &str) -> Option<String> {
    storage()?.get_item(key).ok().flatten()
}

/// Store `value` under `key`; false when the browser refused (storage full, blocked or absent).
pub fn storage_set(key: &str, value: &str) -> bool {
    storage().is_some_and(|s| s.set_item(key, value).is_ok())
}

pub fn storage_remove(key: &str) {
    if let Some(s) = storage() {
        let _ = s.remove_item(key);
    }
}

/// `navigator.language`, e.g. `zh-CN` or `en-US`.
pub fn navigator_language() -> String {
    window().and_then(|w| w.navigator().language()).unwrap_or_default()
}

/// `navigator.onLine`: `false` when the browser knows it has no network (`true` when unsure).
pub fn on_line() -> bool {
    window().is_none_or(|w| w.navigator().on_line())
}

/// Whether `url` (with or without its scheme) names this machine: `localhost` (or a name under
/// it), `127.0.0.0/8` or `[::1]`, which a browser reaches without a network.
pub fn is_loopback(url: &str) -> bool {
    let url = url.trim();
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.split(':').next().unwrap_or(""),
    }
    .trim_end_matches('.')
    .to_ascii_lowercase();
    host == "localhost"
        || host.ends_with(".localhost")
        || host == "::1"
        || host.strip_prefix("127.").is_some_and(|r| {
            let parts: Vec<&str> = r.split('.').collect();
            parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && p.parse::<u8>().is_ok())
        })
}

/// Offer `text` as a file download of type `mime`.
pub fn download(filename: &str, text: &str, mime: &str) {
    let Some(doc) = window().and_then(|w| w.document()) else { return };
    let parts = js_sys::Array::of1(&JsValue::from_str(text));
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &opts) else { return };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else { return };
    if let Ok(a) = doc.create_element("a").map(|e| e.unchecked_into::<web_sys::HtmlAnchorElement>()) {
        a.set_href(&url);
        a.set_download(filename);
        a.click();
    }
    let _ = web_sys::Url::revoke_object_url(&url);
}

/// Put `text` on the clipboard (`navigator.clipboard.writeText`, which needs a secure context:
/// https or localhost); `Err` with the browser's reason when it refuses or has no clipboard.
pub async fn copy_text(text: &str) -> Result<(), String> {
    let nav = window().ok_or("no window")?.navigator();
    let clip = Reflect::get(&nav, &JsValue::from_str("clipboard")).map_err(|e| js_message(&e))?;
    if clip.is_undefined() || clip.is_null() {
        return Err("no clipboard (not a secure context?)".into());
    }
    let write: js_sys::Function = Reflect::get(&clip, &JsValue::from_str("writeText"))
        .map_err(|e| js_message(&e))?
        .dyn_into()
        .map_err(|e| js_message(&e))?;
    let promise: js_sys::Promise = write
        .call1(&clip, &JsValue::from_str(text))
        .map_err(|e| js_message(&e))?
        .dyn_into()
        .map_err(|e| js_message(&e))?;
    JsFuture::from(promise).await.map(|_| ()).map_err(|e| js_message(&e))
}

/// GET one of the site's own files (`./deck.json`) as text: a relative URL, so the request
/// stays on the page's origin.
pub async fn fetch_own(path: &str) -> Result<String, String> {
    let resp = gloo_net::http::Request::get(path).send().await.map_err(|e| e.to_string())?;
    if !resp.ok() {
        return Err(format!("{path}: HTTP {}", resp.status()));
    }
    resp.text().await.map_err(|e| e.to_string())
}

/// How a browser request failed before or while streaming.
#[derive(Clone, Debug, PartialEq)]
pub enum FetchError {
    /// `fetch` rejected: network error, or a response the same-origin policy hides (CORS).
    Rejected(String),
    /// Our own deadline aborted it.
    TimedOut,
    /// Reading the body failed after it started.
    BodyFailed(String),
}

/// The response head.
#[derive(Clone, Debug, PartialEq)]
pub struct Head {
    /// 0 for a redirect the browser hides (`opaqueredirect`).
    pub status: u16,
    /// The answer was a redirect, which is never followed (it would carry the key elsewhere).
    pub redirect: bool,
    pub content_type: String,
    pub retry_after: Option<String>,
    /// When the head arrived, on the page's clock ([`now_ms`]).
    pub at_ms: f64,
}

pub(crate) fn js_message(v: &JsValue) -> String {
    v.dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| v.as_string())
        .unwrap_or_else(|| format!("{v:?}"))
}

/// The request [`stream_post`] sends.
#[derive(Clone, Copy)]
pub struct Post<'a> {
    pub url: &'a str,
    pub headers: &'a [(String, String)],
    pub body: &'a str,
    /// The whole exchange is aborted after this.
    pub timeout_ms: i32,
}

/// POST `post.body` to `post.url` and stream the response: `on_send(at_ms, url)` as it is handed
/// to `fetch` (with the URL as the browser normalised it, the name of its Resource Timing
/// entry), `on_head` once, then `on_chunk(bytes, at_ms)` for every piece the stream yields,
/// stamped as it arrives. The whole exchange is aborted after `post.timeout_ms`. Returns how it
/// ended and when (the last read). The reading and stamping happen in the probe worker
/// (`probe-worker.js`) where the browser has workers, so that drawing on the page cannot delay
/// a stamp; its times are on the page's clock ([`now_ms`]). Without one, on the page's thread.
pub async fn stream_post(
    post: Post<'_>,
    on_send: impl FnOnce(f64, String),
    on_head: impl FnMut(&Head),
    on_chunk: impl FnMut(&[u8], f64),
) -> (Result<(), FetchError>, f64) {
    if let Some(pw) = probe_worker() {
        return pw.stream(post, on_send, on_head, on_chunk).await;
    }
    let result = stream_on_page(post, on_send, on_head, on_chunk).await;
    (result, now_ms())
}

/// [`stream_post`] on the page's thread: each chunk stamped with `performance.now()` when the
/// page gets to it (a redraw in between delays the stamp).
async fn stream_on_page(
    post: Post<'_>,
    on_send: impl FnOnce(f64, String),
    mut on_head: impl FnMut(&Head),
    mut on_chunk: impl FnMut(&[u8], f64),
) -> Result<(), FetchError> {
    let head = |resp: &web_sys::Response| {
        let header = |name: &str| resp.headers().get(name).ok().flatten();
        on_head(&Head {
            status: resp.status(),
            redirect: is_redirect(resp),
            content_type: header("content-type").unwrap_or_default(),
            retry_after: header("retry-after"),
            at_ms: now_ms(),
        });
        Ok(())
    };
    post_on_page(post, false, on_send, head, |bytes, at| {
        on_chunk(&bytes.to_vec(), at);
        Ok(())
    })
    .await
}

/// The answer is a redirect (never followed: it would carry the key or token elsewhere).
fn is_redirect(resp: &web_sys::Response) -> bool {
    resp.type_() == web_sys::ResponseType::Opaqueredirect || (300..400).contains(&resp.status())
}

/// The page's one POST: `fetch` with CORS, no redirect followed, cookies left out when
/// `omit_credentials`, and the whole exchange — body read included — aborted after
/// `post.timeout_ms`. `on_send(at_ms, url)` as it is handed to `fetch`, `on_head` once with the
/// response, then `on_chunk(bytes, at_ms)` for every piece of the body (as the stream gave it, in
/// JS memory), stamped as it arrives;
/// either ends the exchange early by returning an error (the request is then aborted).
async fn post_on_page(
    post: Post<'_>,
    omit_credentials: bool,
    on_send: impl FnOnce(f64, String),
    on_head: impl FnOnce(&web_sys::Response) -> Result<(), FetchError>,
    mut on_chunk: impl FnMut(&Uint8Array, f64) -> Result<(), FetchError>,
) -> Result<(), FetchError> {
    let Post { url, headers, body, timeout_ms } = post;
    let w = window().ok_or_else(|| FetchError::Rejected("no window".into()))?;
    let controller = web_sys::AbortController::new().map_err(|e| FetchError::Rejected(js_message(&e)))?;
    let abort = {
        let c = controller.clone();
        Closure::<dyn FnMut()>::new(move || c.abort())
    };
    let timer = w
        .set_timeout_with_callback_and_timeout_and_arguments_0(abort.as_ref().unchecked_ref(), timeout_ms)
        .unwrap_or(0);
    let signal = controller.signal();
    let failed = |e: String| if signal.aborted() { FetchError::TimedOut } else { FetchError::BodyFailed(e) };
    let result = async {
        let mut builder = gloo_net::http::Request::post(url)
            .mode(web_sys::RequestMode::Cors)
            .redirect(web_sys::RequestRedirect::Manual)
            .abort_signal(Some(&signal));
        if omit_credentials {
            builder = builder.credentials(web_sys::RequestCredentials::Omit);
        }
        for (k, v) in headers {
            builder = builder.header(k, v);
        }
        let req = builder.body(body).map_err(|e| FetchError::Rejected(e.to_string()))?;
        on_send(now_ms(), req.url());
        let resp = req.send().await.map_err(|e| {
            if signal.aborted() { FetchError::TimedOut } else { FetchError::Rejected(e.to_string()) }
        })?;
        let resp: web_sys::Response = resp.into();
        on_head(&resp)?;
        let Some(stream) = resp.body() else { return Ok(()) };
        let reader: web_sys::ReadableStreamDefaultReader =
            stream.get_reader().dyn_into().map_err(|e| failed(js_message(&e)))?;
        loop {
            let chunk = JsFuture::from(reader.read()).await.map_err(|e| failed(js_message(&e)))?;
            let at = now_ms();
            if Reflect::get(&chunk, &"done".into()).ok().and_then(|d| d.as_bool()).unwrap_or(true) {
                return Ok(());
            }
            if let Ok(value) = Reflect::get(&chunk, &"value".into()) {
                // A fetch body's chunks are Uint8Arrays: taken as they are, not copied.
                let part = value.dyn_into::<Uint8Array>().unwrap_or_else(|v| Uint8Array::new(&v));
                on_chunk(&part, at)?;
            }
        }
    }
    .await;
    if result.is_err() {
        controller.abort();
    }
    w.clear_timeout_with_handle(timer);
    drop(abort);
    result
}

/// Where the browser's network stack saw one fetch, from its Resource Timing entry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Wire {
    /// The browser began sending the request: `requestStart`, or `connectStart` when the
    /// fetch opened a new connection (the CLI's "sent" also comes before its connect).
    pub sent_ms: f64,
    /// The response's first byte (`responseStart`).
    pub head_ms: f64,
}

/// Start a run's Resource Timing afresh, with room for `requests` entries (the default buffer
/// holds 250, and a full buffer drops new entries).
pub fn resource_timing_reset(requests: usize) {
    if let Some(pw) = probe_worker() {
        let msg = js_sys::Object::new();
        let _ = Reflect::set(&msg, &"reset".into(), &JsValue::from(requests as f64));
        let _ = pw.worker.post_message(&msg);
    }
    if let Some(p) = window().and_then(|w| w.performance()) {
        p.clear_resource_timings();
        p.set_resource_timing_buffer_size(
            u32::try_from(requests.saturating_mul(2).max(250)).unwrap_or(u32::MAX),
        );
    }
}

/// Resolves after `ms` milliseconds.
pub async fn sleep_ms(ms: i32) {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        let timer = window().map(|w| w.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms));
        if !matches!(timer, Some(Ok(_))) {
            let _ = resolve.call0(&JsValue::NULL);
        }
    });
    let _ = JsFuture::from(p).await;
}

/// The [`Wire`] times of the fetch of `url` (as the browser normalised it) called at
/// `called_ms` and whose body the page finished reading at `ended_ms`, when the browser exposes
/// them: same origin, or a cross-origin server that sends `Timing-Allow-Origin` (without it the
/// entry's detailed times read 0). `calls` holds the call time of every fetch of the run.
///
/// Entries are named by URL only, and every request of a run fetches the same URL, so an entry
/// is taken for this fetch only when nothing else could have made it: its `startTime` lies
/// within [`ISOLATION_MS`] after this call (0.4–1 ms in headless Chromium on a loaded 2-core
/// VM), and no other fetch of the run was called within that distance of this one. Fetches
/// called together (the first wave of a concurrent run, say) keep the `fetch()` call as their
/// "sent". The browser adds an entry when the body is complete, possibly a turn after the page
/// read its end, so this polls a few times.
pub async fn wire_times(url: &str, called_ms: f64, ended_ms: f64, calls: &[f64]) -> Option<Wire> {
    let crowded = calls.iter().filter(|&&c| (c - called_ms).abs() < ISOLATION_MS).count() > 1;
    if crowded || ended_ms - called_ms < ISOLATION_MS {
        return None;
    }
    // The fetches ran in the probe worker: their entries are on its timeline.
    if let Some(pw) = probe_worker() {
        return pw.wire(url, called_ms, ended_ms).await;
    }
    let perf = window()?.performance()?;
    for _ in 0..6 {
        let mut mine = Vec::new();
        for e in perf.get_entries_by_name(url).iter() {
            let f = |k: &str| Reflect::get(&e, &k.into()).ok().and_then(|v| v.as_f64()).unwrap_or(0.0);
            let (start, end) = (f("startTime"), f("responseEnd"));
            if start >= called_ms - 0.05
                && start < called_ms + ISOLATION_MS
                && end > 0.0
                && end <= ended_ms + 1.0
            {
                let (request, connect, connected) = (f("requestStart"), f("connectStart"), f("connectEnd"));
                let sent_ms = if connect > 0.0 && connected > connect { connect } else { request };
                mine.push((request > 0.0).then_some(Wire { sent_ms, head_ms: f("responseStart") }));
            }
        }
        match mine.as_slice() {
            [] => sleep_ms(5).await,
            [one] => return *one,
            _ => return None,
        }
    }
    None
}

/// How far apart (ms) two fetches of one URL must be called for their Resource Timing entries
/// to be told apart by start time.
pub const ISOLATION_MS: f64 = 10.0;

/// POST `body` to `url` and read the whole answer, at most `max_bytes` of it: `(status, body)`.
/// No redirect is followed (a token would go where it points: [`FetchError::Rejected`] says
/// so), no cookie is sent; the request, body read included, is aborted after `timeout_ms`.
///
/// The body stays in JS memory, for the analysis worker to take whole: gathered in the page's
/// module instead, a 63 MiB answer grew the page's wasm memory by ~96 MiB (the buffer doubling
/// as it filled) for the rest of the tab's life, since wasm memory never shrinks.
pub async fn post_bounded(
    url: &str,
    headers: &[(String, String)],
    body: &str,
    timeout_ms: i32,
    max_bytes: usize,
) -> Result<(u16, Uint8Array), FetchError> {
    let mut status = 0;
    let (mut parts, mut len) = (Vec::new(), 0usize);
    let head = |resp: &web_sys::Response| {
        if is_redirect(resp) {
            return Err(FetchError::Rejected("redirect".into()));
        }
        status = resp.status();
        Ok(())
    };
    let chunk = |part: &Uint8Array, _at| {
        let n = part.length() as usize;
        if len + n > max_bytes {
            return Err(FetchError::BodyFailed(format!("larger than {} MiB", max_bytes >> 20)));
        }
        len += n;
        parts.push(part.clone());
        Ok(())
    };
    post_on_page(Post { url, headers, body, timeout_ms }, true, |_, _| {}, head, chunk).await?;
    let out = Uint8Array::new_with_length(len as u32);
    let mut at = 0;
    for p in parts {
        out.set(&p, at);
        at += p.length();
    }
    Ok((status, out))
}

/// Messages from the probe worker for one request (or one Resource Timing lookup), in order,
/// and the task waiting for the next.
#[derive(Default)]
struct Inbox {
    queue: std::collections::VecDeque<JsValue>,
    waker: Option<std::task::Waker>,
}

type SharedInbox = std::rc::Rc<std::cell::RefCell<Inbox>>;
/// The open inboxes by id: as many as requests in flight (the page's concurrency, ≤ 64).
type Inboxes = std::rc::Rc<std::cell::RefCell<Vec<(u32, SharedInbox)>>>;

fn deliver(inbox: &SharedInbox, msg: JsValue) {
    let mut b = inbox.borrow_mut();
    b.queue.push_back(msg);
    if let Some(w) = b.waker.take() {
        w.wake();
    }
}

/// The next message of an [`Inbox`].
struct Next(SharedInbox);

impl Future for Next {
    type Output = JsValue;
    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<JsValue> {
        let mut b = self.0.borrow_mut();
        match b.queue.pop_front() {
            Some(v) => std::task::Poll::Ready(v),
            None => {
                b.waker = Some(cx.waker().clone());
                std::task::Poll::Pending
            }
        }
    }
}

/// The probe's reader (`static/probe-worker.js`, plain JS): one per page, shared by every
/// request of a run, each with its id. Messages are listed at the top of the script.
struct ProbeWorker {
    worker: web_sys::Worker,
    next: std::cell::Cell<u32>,
    inboxes: Inboxes,
    /// The worker failed (its script did not load, say): the page reads from then on.
    broken: std::rc::Rc<std::cell::Cell<bool>>,
}

thread_local! {
    static PROBE_WORKER: std::cell::OnceCell<Option<std::rc::Rc<ProbeWorker>>> = const { std::cell::OnceCell::new() };
}

/// The probe worker, started on first use; `None` where the browser has no workers or it failed.
fn probe_worker() -> Option<std::rc::Rc<ProbeWorker>> {
    PROBE_WORKER
        .with(|c| c.get_or_init(|| ProbeWorker::start().map(std::rc::Rc::new)).clone())
        .filter(|pw| !pw.broken.get())
}

/// Whether the probe reads and stamps in a worker (else on the page's thread).
pub fn probe_in_worker() -> bool {
    probe_worker().is_some()
}

fn get(v: &JsValue, k: &str) -> Option<JsValue> {
    Reflect::get(v, &k.into()).ok().filter(|v| !v.is_undefined() && !v.is_null())
}

impl ProbeWorker {
    fn start() -> Option<ProbeWorker> {
        let opts = web_sys::WorkerOptions::new();
        opts.set_type(web_sys::WorkerType::Module);
        let worker = web_sys::Worker::new_with_options("./probe-worker.js", &opts).ok()?;
        let inboxes = Inboxes::default();
        let broken = std::rc::Rc::new(std::cell::Cell::new(false));
        let on_message = {
            let inboxes = inboxes.clone();
            Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |ev: web_sys::MessageEvent| {
                let data = ev.data();
                let id = get(&data, "id").and_then(|v| v.as_f64()).unwrap_or(-1.0) as u32;
                let inbox = inboxes.borrow().iter().find(|(i, _)| *i == id).map(|(_, b)| b.clone());
                if let Some(inbox) = inbox {
                    deliver(&inbox, data);
                }
            })
        };
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        on_message.forget();
        // A failed worker ends what waits on it, as a network error would.
        let on_error = {
            let (inboxes, broken) = (inboxes.clone(), broken.clone());
            Closure::<dyn FnMut(web_sys::Event)>::new(move |ev: web_sys::Event| {
                broken.set(true);
                let text = get(&ev, "message")
                    .and_then(|m| m.as_string())
                    .unwrap_or_else(|| "probe worker failed".into());
                for (_, inbox) in inboxes.borrow().iter() {
                    deliver(inbox, failure("rejected", &text));
                }
            })
        };
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        on_error.forget();
        Some(ProbeWorker { worker, next: Default::default(), inboxes, broken })
    }

    fn open(&self) -> (u32, SharedInbox) {
        let id = self.next.get().wrapping_add(1);
        self.next.set(id);
        let inbox = SharedInbox::default();
        self.inboxes.borrow_mut().push((id, inbox.clone()));
        (id, inbox)
    }

    /// Wait for the messages of `inbox` until `done` says the last came, or `deadline_ms`.
    fn deadline(inbox: &SharedInbox, deadline_ms: i32) -> Option<(Closure<dyn FnMut()>, i32)> {
        let inbox = inbox.clone();
        let late = Closure::<dyn FnMut()>::new(move || deliver(&inbox, failure("timeout", "")));
        let timer = window()?
            .set_timeout_with_callback_and_timeout_and_arguments_0(late.as_ref().unchecked_ref(), deadline_ms)
            .ok()?;
        Some((late, timer))
    }

    fn close(&self, id: u32, deadline: Option<(Closure<dyn FnMut()>, i32)>) {
        self.inboxes.borrow_mut().retain(|(i, _)| *i != id);
        if let (Some(w), Some((_, timer))) = (window(), &deadline) {
            w.clear_timeout_with_handle(*timer);
        }
    }

    async fn stream(
        &self,
        post: Post<'_>,
        on_send: impl FnOnce(f64, String),
        mut on_head: impl FnMut(&Head),
        mut on_chunk: impl FnMut(&[u8], f64),
    ) -> (Result<(), FetchError>, f64) {
        let (id, inbox) = self.open();
        let headers = js_sys::Array::new();
        for (k, v) in post.headers {
            headers.push(&js_sys::Array::of2(&JsValue::from_str(k), &JsValue::from_str(v)));
        }
        let msg = js_sys::Object::new();
        let origin = window().and_then(|w| w.performance()).map_or(0.0, |p| p.time_origin());
        for (k, v) in [
            ("go", JsValue::from(id)),
            ("url", JsValue::from_str(post.url)),
            ("headers", headers.into()),
            ("body", JsValue::from_str(post.body)),
            ("timeout_ms", JsValue::from(post.timeout_ms)),
            ("origin", JsValue::from(origin)),
        ] {
            let _ = Reflect::set(&msg, &k.into(), &v);
        }
        if let Err(e) = self.worker.post_message(&msg) {
            self.close(id, None);
            return (Err(FetchError::Rejected(js_message(&e))), now_ms());
        }
        // The worker aborts at the timeout; this is the page's own bound on waiting for it.
        let deadline = Self::deadline(&inbox, post.timeout_ms.saturating_add(5_000));
        let mut on_send = Some(on_send);
        let f = |m: &JsValue, k: &str| get(m, k).and_then(|v| v.as_f64());
        let end = loop {
            let m = Next(inbox.clone()).await;
            if let Some(at) = f(&m, "at")
                && let Some(chunk) = get(&m, "chunk")
            {
                on_chunk(&Uint8Array::new(&chunk).to_vec(), at);
            } else if let Some(at) = f(&m, "sent") {
                if let Some(send) = on_send.take() {
                    send(at, get(&m, "url").and_then(|u| u.as_string()).unwrap_or_default());
                }
            } else if let Some(h) = get(&m, "head") {
                on_head(&Head {
                    status: f(&h, "status").unwrap_or(0.0) as u16,
                    redirect: get(&h, "redirect").and_then(|r| r.as_bool()).unwrap_or(false),
                    content_type: get(&h, "content_type").and_then(|c| c.as_string()).unwrap_or_default(),
                    retry_after: get(&h, "retry_after").and_then(|c| c.as_string()),
                    at_ms: f(&h, "at").unwrap_or_else(now_ms),
                });
            } else {
                let end = f(&m, "end").unwrap_or_else(now_ms);
                let result = match get(&m, "error") {
                    None => Ok(()),
                    Some(e) => {
                        let text = get(&e, "message").and_then(|t| t.as_string()).unwrap_or_default();
                        Err(match get(&e, "kind").and_then(|k| k.as_string()).as_deref() {
                            Some("timeout") => FetchError::TimedOut,
                            Some("body") => FetchError::BodyFailed(text),
                            _ => FetchError::Rejected(text),
                        })
                    }
                };
                break (result, end);
            }
        };
        self.close(id, deadline);
        end
    }

    /// The worker's Resource Timing lookup (see [`wire_times`]), page times in and out.
    async fn wire(&self, url: &str, called_ms: f64, ended_ms: f64) -> Option<Wire> {
        let (id, inbox) = self.open();
        let msg = js_sys::Object::new();
        for (k, v) in [
            ("wire", JsValue::from(id)),
            ("url", JsValue::from_str(url)),
            ("called", JsValue::from(called_ms)),
            ("ended", JsValue::from(ended_ms)),
        ] {
            let _ = Reflect::set(&msg, &k.into(), &v);
        }
        let deadline =
            if self.worker.post_message(&msg).is_ok() { Self::deadline(&inbox, 2_000) } else { None };
        let m = if deadline.is_some() { Some(Next(inbox.clone()).await) } else { None };
        self.close(id, deadline);
        let w = get(&m?, "wire")?;
        let f = |k: &str| get(&w, k).and_then(|v| v.as_f64());
        Some(Wire { sent_ms: f("sent")?, head_ms: f("head")? })
    }
}

/// A worker message saying the request failed (`kind` as `probe-worker.js` names it).
fn failure(kind: &str, message: &str) -> JsValue {
    let error = js_sys::Object::new();
    let _ = Reflect::set(&error, &"kind".into(), &JsValue::from_str(kind));
    let _ = Reflect::set(&error, &"message".into(), &JsValue::from_str(message));
    let msg = js_sys::Object::new();
    let _ = Reflect::set(&msg, &"end".into(), &JsValue::from(now_ms()));
    let _ = Reflect::set(&msg, &"error".into(), &error);
    msg.into()
}
