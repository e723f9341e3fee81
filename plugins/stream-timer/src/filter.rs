//! The wasm entry glue: proxy-wasm root and HTTP contexts over the pure modules.
//!
//! Every HTTP callback returns `Continue`; nothing is paused or buffered. Host answers are
//! data: a refused header read is an absent header, a refused body read ends that chunk's
//! reading, a refused metric call switches metrics off, a refused property write skips the
//! rest of that stream's properties. Warnings of each kind are logged once per VM.

use crate::abi::{self, HostMetrics, LOG_DEBUG, LOG_ERROR, LOG_INFO, LOG_WARN, OK};
use crate::config::{self, LogSummary, Settings};
use crate::guard::Guard;
use crate::metrics::{Count, Hist, Metrics, TokenType};
use crate::report;
use crate::route;
use crate::timer::{End, Observation, Stream};
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action, ContextType};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use triage_core::sse::SseLimits;
use triage_core::trace::{self, TraceId, TraceParent};

const NAME: &str = "triage-stream-timer";
/// Bodies are read from the host in windows of at most this many bytes, so a huge chunk never
/// costs a huge guest allocation.
pub const BODY_WINDOW: usize = 16 << 10;

// ---------------------------------------------------------------------------------------------
// Clock: WASI monotonic where the host provides it, the host's wall clock otherwise. The choice
// is made once per VM (mixing clocks inside a stream would make nonsense), and readings never go
// backwards.

static CLOCK_SOURCE: AtomicU8 = AtomicU8::new(0); // 0 unknown, 1 WASI monotonic, 2 host time
static LAST_NS: AtomicU64 = AtomicU64::new(0);

fn now_ns() -> u64 {
    let read = match CLOCK_SOURCE.load(Ordering::Relaxed) {
        1 => abi::wasi_clock_ns(1),
        2 => abi::host_time_ns(),
        _ => match abi::wasi_clock_ns(1) {
            Some(t) => {
                CLOCK_SOURCE.store(1, Ordering::Relaxed);
                Some(t)
            }
            None => {
                CLOCK_SOURCE.store(2, Ordering::Relaxed);
                warn_once(
                    W_CLOCK,
                    "WASI clock_time_get(monotonic) refused: timing with the host's wall clock",
                );
                abi::host_time_ns()
            }
        },
    };
    let last = LAST_NS.load(Ordering::Relaxed);
    let t = read.unwrap_or(last).max(last);
    LAST_NS.store(t, Ordering::Relaxed);
    t
}

fn wall_ns() -> u64 {
    abi::host_time_ns().or_else(|| abi::wasi_clock_ns(0)).unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// Heap accounting, for the memory figures (`stats` debug line on tick).

struct CountingAlloc;
static HEAP_IN_USE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { std::alloc::System.alloc(layout) };
        if !p.is_null() {
            HEAP_IN_USE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        HEAP_IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { std::alloc::System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            HEAP_IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
            HEAP_IN_USE.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

// ---------------------------------------------------------------------------------------------
// Warnings said once per VM.

const W_CLOCK: u32 = 1;
const W_HEADER: u32 = 2;
const W_BODY: u32 = 4;
const W_PROPERTY: u32 = 8;
const W_RESET: u32 = 16;
const W_TRACE: u32 = 32;
static WARNED: AtomicU64 = AtomicU64::new(0);

fn warn_once(bit: u32, message: &str) {
    if WARNED.fetch_or(u64::from(bit), Ordering::Relaxed) & u64::from(bit) == 0 {
        abi::log(LOG_WARN, &format!("{NAME}: {message}"));
    }
}

// ---------------------------------------------------------------------------------------------

/// What the root shares with its HTTP contexts.
struct Shared {
    /// `None`: not configured, or a bad configuration — every request passes untouched.
    settings: Option<Rc<Settings>>,
    metrics: Metrics,
    guard: Option<Guard>,
    /// Timed streams open now (for the stats line).
    open_streams: usize,
}

type SharedRef = Rc<RefCell<Shared>>;

impl Shared {
    fn metric_note(note: Option<String>) {
        if let Some(line) = note {
            abi::log(LOG_WARN, &format!("{NAME}: {line}"));
        }
    }
}

pub struct Root {
    id: u32,
    shared: SharedRef,
}

impl Root {
    pub fn new(id: u32) -> Root {
        Root {
            id,
            shared: Rc::new(RefCell::new(Shared {
                settings: None,
                metrics: Metrics::disabled(),
                guard: None,
                open_streams: 0,
            })),
        }
    }
}

impl Context for Root {}

impl RootContext for Root {
    fn on_vm_start(&mut self, _vm_configuration_size: usize) -> bool {
        true
    }

    /// Always accepts (a refusal would stop the proxy from loading the filter or route traffic
    /// through it); a bad configuration leaves the filter passing everything through.
    fn on_configure(&mut self, plugin_configuration_size: usize) -> bool {
        let bytes = match abi::buffer(abi::BUFFER_PLUGIN_CONFIGURATION, 0, plugin_configuration_size) {
            Ok(b) => b,
            Err(status) => {
                abi::log(
                    LOG_ERROR,
                    &format!(
                        "{NAME}: could not read the plugin configuration (status {status}); \
                         passing all traffic through untouched"
                    ),
                );
                self.shared.borrow_mut().settings = None;
                return true;
            }
        };
        match config::parse(&bytes) {
            Ok(settings) => {
                let (metrics, note) = Metrics::define(&mut HostMetrics, &settings);
                let mut guard = settings.guard.map(Guard::new);
                if let Some(g) = &guard {
                    let status = abi::set_tick_period_ms(g.settings().tick_ms);
                    if status != OK {
                        abi::log(
                            LOG_ERROR,
                            &format!(
                                "{NAME}: the guard needs a tick, and proxy_set_tick_period_milliseconds \
                                 answered status {status}: guard off"
                            ),
                        );
                        guard = None;
                    }
                }
                abi::log(
                    LOG_INFO,
                    &format!(
                        "{NAME}: configured: {} route(s), metrics {}, guard {}, properties {}",
                        settings.routes.len(),
                        if metrics.enabled() { "on" } else { "off" },
                        match &guard {
                            Some(g) => format!(
                                "on (max_duration_ms {}, max_idle_ms {}, tick {} ms)",
                                g.settings()
                                    .max_duration_ns
                                    .map_or("-".into(), |v| (v / 1_000_000).to_string()),
                                g.settings().max_idle_ns.map_or("-".into(), |v| (v / 1_000_000).to_string()),
                                g.settings().tick_ms
                            ),
                            None => "off".to_owned(),
                        },
                        if settings.properties { "on" } else { "off" },
                    ),
                );
                Shared::metric_note(note);
                let mut sh = self.shared.borrow_mut();
                sh.settings = Some(Rc::new(settings));
                sh.metrics = metrics;
                sh.guard = guard;
            }
            Err(e) => {
                abi::log(
                    LOG_ERROR,
                    &format!(
                        "{NAME}: invalid plugin configuration: {e}; passing all traffic through untouched"
                    ),
                );
                let mut sh = self.shared.borrow_mut();
                sh.settings = None;
                sh.metrics = Metrics::disabled();
                sh.guard = None;
            }
        }
        true
    }

    fn on_tick(&mut self) {
        let now = now_ns();
        // Never hold the borrow across a host call that may re-enter the filter.
        let due = self.shared.borrow_mut().guard.as_mut().map(|g| g.due(now)).unwrap_or_default();
        for d in &due {
            let status = match abi::set_effective_context(d.context_id) {
                OK if d.before_headers => match abi::send_local_response(
                    504,
                    "llm_stream_guard",
                    format!("llm stream guard: {} exceeded\n", d.breach.as_str()).as_bytes(),
                ) {
                    OK => OK,
                    _ => abi::close_response(),
                },
                OK => abi::close_response(),
                other => other,
            };
            let mut sh = self.shared.borrow_mut();
            if status != OK {
                if let Some(g) = sh.guard.as_mut() {
                    g.reset_refused(d.context_id);
                }
                drop(sh);
                warn_once(W_RESET, &format!("the host refused to reset a stream (status {status})"));
                continue;
            }
            let note = sh.metrics.add(&mut HostMetrics, d.route, Count::GuardResets(d.breach), 1);
            drop(sh);
            Shared::metric_note(note);
        }
        if !due.is_empty() {
            let _ = abi::set_effective_context(self.id);
        }
        if abi::log_level() <= LOG_DEBUG {
            let sh = self.shared.borrow();
            let line = format!(
                "{NAME}: stats: open_streams={} guarded={} heap_bytes={} wasm_memory_bytes={} \
                 context_bytes={} stream_bytes={}",
                sh.open_streams,
                sh.guard.as_ref().map_or(0, Guard::open),
                HEAP_IN_USE.load(Ordering::Relaxed),
                core::arch::wasm32::memory_size(0) * 65536,
                size_of::<Http>(),
                size_of::<Live>(),
            );
            drop(sh);
            abi::log(LOG_DEBUG, &line);
        }
    }

    fn create_http_context(&self, context_id: u32) -> Option<Box<dyn HttpContext>> {
        Some(Box::new(Http { id: context_id, shared: self.shared.clone(), state: State::Pass }))
    }

    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }
}

/// A request on a matched route.
struct Live {
    route: usize,
    settings: Rc<Settings>,
    enqueue_unix_ns: u64,
    /// The W3C trace id of the request's `traceparent`: its own, or the one the filter added.
    trace_id: Option<TraceId>,
    stream: Stream,
    /// The response is an SSE stream being timed (counted in `active_streams`).
    timed: bool,
    guarded: bool,
}

enum State {
    /// Not an LLM stream, or already finished: every callback returns at once.
    Pass,
    Live(Box<Live>),
}

pub struct Http {
    id: u32,
    shared: SharedRef,
    state: State,
}

impl Http {
    fn finalize(&mut self, end: End) {
        let State::Live(live) = std::mem::replace(&mut self.state, State::Pass) else {
            return;
        };
        let live = *live;
        let now = now_ns();
        let mut sh = self.shared.borrow_mut();
        let end =
            match sh.guard.as_ref().and_then(|g| if live.guarded { g.reset_issued(self.id) } else { None }) {
                Some(b) => End::Guard(b),
                None => end,
            };
        if live.guarded
            && let Some(g) = sh.guard.as_mut()
        {
            g.remove(self.id);
        }
        let summary = live.stream.finish(now, end);
        let counted = live.timed || summary.outcome == crate::timer::Outcome::HttpError;
        if !counted {
            return;
        }
        if live.timed {
            sh.open_streams = sh.open_streams.saturating_sub(1);
        }
        let r = live.route;
        let host = &mut HostMetrics;
        let mut notes = Vec::new();
        let m = &mut sh.metrics;
        if let Some(v) = summary.e2e_ns() {
            notes.push(m.record(host, r, Hist::E2e, v / 1_000));
        }
        if let Some(v) = summary.tpot_ns() {
            notes.push(m.record(host, r, Hist::Tpot, v / 1_000));
        }
        notes.push(m.add(host, r, Count::Requests, 1));
        if let Some(reason) = summary.outcome.error_reason() {
            notes.push(m.add(host, r, Count::Errors(reason), 1));
        }
        let as_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        if let Some(v) = summary.input_tokens {
            notes.push(m.add(host, r, Count::Tokens(TokenType::Input), as_i64(v)));
        }
        notes.push(m.add(host, r, Count::Tokens(TokenType::Output), as_i64(summary.output_tokens)));
        if let Some(v) = summary.reasoning_tokens {
            notes.push(m.add(host, r, Count::Tokens(TokenType::Reasoning), as_i64(v)));
        }
        if live.timed {
            notes.push(m.add(host, r, Count::Active, -1));
        }
        let metrics_on = m.enabled();
        drop(sh);
        notes.into_iter().for_each(Shared::metric_note);

        let s = &live.settings;
        let log = match s.log_summary {
            LogSummary::Always => true,
            LogSummary::WithoutMetrics => !metrics_on,
            LogSummary::Never => false,
        };
        if !s.properties && !log {
            return;
        }
        let route_name = s.routes.get(r).map_or("", |x| x.name.as_str());
        let props = report::properties(route_name, live.enqueue_unix_ns, live.trace_id, &summary);
        if s.properties {
            let mut name = String::with_capacity(s.property_prefix.len() + 24);
            for (k, v) in &props {
                name.clear();
                name.push_str(&s.property_prefix);
                name.push_str(k);
                let status = abi::set_property(&name, v.as_bytes());
                if status != OK {
                    warn_once(
                        W_PROPERTY,
                        &format!(
                            "proxy_set_property answered status {status}: per-request properties skipped"
                        ),
                    );
                    break;
                }
            }
        }
        if log && let Some((_, line)) = props.last() {
            abi::log(LOG_INFO, &format!("llm_stream {line}"));
        }
    }

    /// The trace id of the request's own `traceparent` (none when it is not a valid one, which
    /// is left as it is); without one, and with `add_traceparent`, a fresh sampled one is added
    /// to the request and its trace id returned.
    fn trace(settings: &Settings) -> Option<TraceId> {
        if let Some(v) = Self::header(abi::MAP_REQUEST_HEADERS, trace::HEADER) {
            return TraceParent::parse(std::str::from_utf8(&v).ok()?).map(|t| t.trace_id);
        }
        if !settings.add_traceparent {
            return None;
        }
        let Some(tp) = abi::random_bytes::<24>().map(TraceParent::from_random) else {
            warn_once(W_TRACE, "WASI random_get refused: no traceparent added");
            return None;
        };
        match abi::add_header(abi::MAP_REQUEST_HEADERS, trace::HEADER, &tp.header_value()) {
            OK => Some(tp.trace_id),
            status => {
                warn_once(
                    W_TRACE,
                    &format!("proxy_add_header_map_value(traceparent) answered status {status}: none added"),
                );
                None
            }
        }
    }

    fn header(map: u32, key: &str) -> Option<Vec<u8>> {
        match abi::header(map, key) {
            Ok(v) => v,
            Err(status) => {
                warn_once(
                    W_HEADER,
                    &format!("proxy_get_header_map_value({key}) answered status {status}: read as absent"),
                );
                None
            }
        }
    }
}

impl Context for Http {
    fn on_done(&mut self) -> bool {
        self.finalize(End::Reset);
        true
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        if let State::Live(live) = &self.state
            && live.guarded
            && let Ok(mut sh) = self.shared.try_borrow_mut()
            && let Some(g) = sh.guard.as_mut()
        {
            g.remove(self.id);
        }
    }
}

impl HttpContext for Http {
    fn on_http_request_headers(&mut self, _num_headers: usize, _end_of_stream: bool) -> Action {
        let Some(settings) = self.shared.borrow().settings.clone() else {
            return Action::Continue;
        };
        let Some(path) = Self::header(abi::MAP_REQUEST_HEADERS, ":path") else {
            return Action::Continue;
        };
        let Some(route) = route::match_route(&settings.routes, &path) else {
            return Action::Continue;
        };
        let now = now_ns();
        let trace_id = Self::trace(&settings);
        let limits =
            SseLimits { max_line_bytes: settings.max_line_bytes, max_event_bytes: settings.max_event_bytes };
        let stream = Stream::new(now, settings.stall_threshold_ns, limits);
        let guarded = match self.shared.borrow_mut().guard.as_mut() {
            Some(g) => {
                g.register(self.id, route, now);
                true
            }
            None => false,
        };
        self.state = State::Live(Box::new(Live {
            route,
            settings,
            enqueue_unix_ns: wall_ns(),
            trace_id,
            stream,
            timed: false,
            guarded,
        }));
        Action::Continue
    }

    fn on_http_response_headers(&mut self, _num_headers: usize, end_of_stream: bool) -> Action {
        let State::Live(live) = &mut self.state else {
            return Action::Continue;
        };
        let now = now_ns();
        let status = Self::header(abi::MAP_RESPONSE_HEADERS, ":status").and_then(|v| route::parse_status(&v));
        live.stream.on_response_headers(now, status);
        if live.guarded
            && let Some(g) = self.shared.borrow_mut().guard.as_mut()
        {
            g.headers_sent(self.id);
        }
        let sse = !live.settings.require_event_stream
            || Self::header(abi::MAP_RESPONSE_HEADERS, "content-type")
                .is_some_and(|v| route::is_event_stream(&v));
        let (route, guarded) = (live.route, live.guarded);
        if status.is_some_and(|s| s >= 400) {
            // Counted as an HTTP error now; the body (if any) is not timed.
            self.finalize(End::EndOfStream);
            return Action::Continue;
        }
        if sse {
            live.timed = true;
            let mut sh = self.shared.borrow_mut();
            sh.open_streams += 1;
            let note = sh.metrics.add(&mut HostMetrics, route, Count::Active, 1);
            drop(sh);
            Shared::metric_note(note);
        } else if !guarded {
            // Not a stream and nothing to guard: drop out at near-zero cost.
            self.state = State::Pass;
            return Action::Continue;
        }
        if end_of_stream {
            self.finalize(End::EndOfStream);
        }
        Action::Continue
    }

    fn on_http_response_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        let State::Live(live) = &mut self.state else {
            return Action::Continue;
        };
        let now = now_ns();
        if live.timed && body_size > 0 {
            let mut sh = self.shared.borrow_mut();
            let route = live.route;
            let mut notes: Vec<Option<String>> = Vec::new();
            let mut start = 0usize;
            while start < body_size {
                let want = (body_size - start).min(BODY_WINDOW);
                let bytes = match abi::buffer(abi::BUFFER_RESPONSE_BODY, start, want) {
                    Ok(b) if !b.is_empty() => b,
                    Ok(_) => break,
                    Err(status) => {
                        warn_once(
                            W_BODY,
                            &format!(
                                "proxy_get_buffer_bytes(response body) answered status {status}: chunk skipped"
                            ),
                        );
                        break;
                    }
                };
                start += bytes.len();
                let m = &mut sh.metrics;
                live.stream.feed(&bytes, now, &mut |o| {
                    let note = match o {
                        Observation::FirstToken { ttft_ns } => {
                            m.record(&mut HostMetrics, route, Hist::Ttft, ttft_ns / 1_000)
                        }
                        Observation::FirstAnswer { ttfo_ns } => {
                            m.record(&mut HostMetrics, route, Hist::Ttfo, ttfo_ns / 1_000)
                        }
                        Observation::Gap { gap_ns, stall } => {
                            let a = m.record(&mut HostMetrics, route, Hist::Itl, gap_ns / 1_000);
                            if stall { m.add(&mut HostMetrics, route, Count::Stalls, 1).or(a) } else { a }
                        }
                    };
                    if note.is_some() {
                        notes.push(note);
                    }
                });
            }
            if live.guarded
                && let Some(g) = sh.guard.as_mut()
            {
                // The gap that just ended is measured from the activity before this chunk.
                let _ = g.check(self.id, now);
                g.activity(self.id, live.stream.last_activity_ns());
            }
            drop(sh);
            notes.into_iter().for_each(Shared::metric_note);
        } else if live.guarded
            && let Some(g) = self.shared.borrow_mut().guard.as_mut()
        {
            let _ = g.check(self.id, now);
        }
        if end_of_stream {
            self.finalize(End::EndOfStream);
        }
        Action::Continue
    }

    fn on_log(&mut self) {
        self.finalize(End::Reset);
    }
}

/// Log a panic's message before the trap, through a call that cannot itself panic.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| abi::log(5, &format!("{NAME}: panic: {info}"))));
}

// The SDK's entry point (`_initialize`): the root context factory and the panic hook.
proxy_wasm::main! {{
    install_panic_hook();
    proxy_wasm::set_root_context(|context_id| -> Box<dyn RootContext> { Box::new(Root::new(context_id)) });
}}
