//! The driver: one loaded filter (one VM, one root context) taken through the lifecycle the way
//! Envoy does — start, configure, then per request context create, headers, bodies, done, log,
//! delete — and through `proxy_on_tick` and the resets it asks for.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use proxy_wasm_host::abi::v0_2_1::types::{Action, LogLevel};
use proxy_wasm_host::abi::v0_2_1::{ContextId, Guest, Host, PluginConfig, Started, StreamKind, VmServices};
use proxy_wasm_host::{Engine, HeaderMap, Limits, Module, VecHeaderMap};

use crate::clock::FakeClock;
use crate::log::LogStore;
use crate::metrics::{MetricStore, MetricsMode};
use crate::stream::{Exchange, Finished, Odd, ResetBy, TickState};
use crate::{lock, stream_timer_wasm};

/// A failure of the guest or the host library (a trap, a refused callback).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

fn e(x: impl fmt::Display) -> Error {
    Error(x.to_string())
}

/// How to build a [`Filter`].
#[derive(Clone, Debug)]
pub struct Options {
    /// The plugin configuration (JSON for the stream timer).
    pub configuration: Vec<u8>,
    pub metrics: MetricsMode,
    pub odd: Odd,
    pub log_level: LogLevel,
    /// The guest's linear memory limit.
    pub memory_bytes: usize,
    /// `plugin_name` / `root_id`.
    pub root_id: String,
    /// The `.wasm` to load; the stream timer when `None`.
    pub wasm: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            configuration: Vec::new(),
            metrics: MetricsMode::Working,
            odd: Odd::default(),
            log_level: LogLevel::Info,
            memory_bytes: 256 << 20,
            root_id: "triage_stream_timer".to_owned(),
            wasm: None,
        }
    }
}

impl Options {
    pub fn config(mut self, json: &str) -> Self {
        self.configuration = json.as_bytes().to_vec();
        self
    }
}

/// Engines and compiled modules, shared by every filter of the process (compiling is the slow
/// part).
fn compiled(path: &PathBuf) -> Result<(Host, Module), Error> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, (Host, Module)>>> = OnceLock::new();
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    let mut cache = lock(CACHE.get_or_init(Default::default));
    if let Some((h, m)) = cache.get(path) {
        return Ok((h.clone(), m.clone()));
    }
    let engine = match ENGINE.get() {
        Some(en) => en.clone(),
        None => {
            let en = Engine::new().map_err(e)?;
            ENGINE.get_or_init(|| en).clone()
        }
    };
    let bytes = std::fs::read(path).map_err(|x| Error(format!("reading {}: {x}", path.display())))?;
    let module = Module::new(&engine, &bytes).map_err(e)?;
    let host = Host::new(&engine).map_err(e)?;
    cache.insert(path.clone(), (host.clone(), module.clone()));
    Ok((host, module))
}

/// Open requests by context id, hashed with one multiplication: the map is looked up on every
/// callback, and SipHash was a visible share of the per-chunk figure the benchmark reports as
/// the filter's.
type Ids = std::hash::BuildHasherDefault<IdHasher>;

#[derive(Default)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// One loaded filter (one VM, one root context) and its open requests.
pub struct Filter {
    guest: Guest,
    root: ContextId,
    clock: Arc<FakeClock>,
    metrics: Arc<MetricStore>,
    logs: Arc<LogStore>,
    open: HashMap<ContextId, Exchange, Ids>,
    odd: Odd,
    reset_done: HashMap<ContextId, Finished>,
}

/// Memory figures the filter reports on a tick at debug level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuestStats {
    pub open_streams: u64,
    pub guarded: u64,
    /// Bytes the guest's allocator has handed out and not taken back.
    pub heap_bytes: u64,
    /// The guest's linear memory size.
    pub wasm_memory_bytes: u64,
    /// `size_of` the filter's per-request context (every request, matched or not).
    pub context_bytes: u64,
    /// `size_of` the state of a request on a matched route (boxed, parser included).
    pub stream_bytes: u64,
}

impl Filter {
    /// Load, start (`proxy_on_vm_start`) and configure (`proxy_on_configure`) the filter.
    pub fn load(opts: Options) -> Result<Filter, Error> {
        let path = opts.wasm.clone().unwrap_or_else(stream_timer_wasm);
        let (host, module) = compiled(&path)?;
        let clock = Arc::new(FakeClock::default());
        let metrics = Arc::new(MetricStore::new(opts.metrics));
        let logs = Arc::new(LogStore::default());
        let services = VmServices::new(logs.clone())
            .with_clock(clock.clone())
            .with_shared(metrics.clone())
            .with_log_level(opts.log_level)
            .with_vm_id("llm-triage");
        let limits = Limits::default().with_memory_bytes(opts.memory_bytes);
        let mut guest = Guest::new(&host, &module, services, &limits).map_err(e)?;
        let plugin = PluginConfig::new()
            .with_name(opts.root_id.clone())
            .with_root_id(opts.root_id.clone())
            .with_configuration(opts.configuration);
        let root = match guest.start(plugin).map_err(e)? {
            Started::Serving(root) => root,
            Started::Refused { callback, .. } => {
                return Err(Error(format!("the filter refused {callback:?}")));
            }
        };
        Ok(Filter {
            guest,
            root,
            clock,
            metrics,
            logs,
            open: HashMap::default(),
            odd: opts.odd,
            reset_done: HashMap::new(),
        })
    }

    pub fn clock(&self) -> &FakeClock {
        &self.clock
    }
    pub fn metrics(&self) -> &MetricStore {
        &self.metrics
    }
    pub fn logs(&self) -> &LogStore {
        &self.logs
    }
    pub fn root(&self) -> ContextId {
        self.root
    }
    /// Open requests (contexts created and not deleted).
    pub fn open_requests(&self) -> usize {
        self.open.len()
    }
    /// The tick period the root asked for.
    pub fn tick_period(&self) -> Option<std::time::Duration> {
        self.guest.tick_period(self.root)
    }
    /// The guest trapped (every later call fails).
    pub fn is_poisoned(&self) -> bool {
        self.guest.is_poisoned()
    }
    pub fn set_log_level(&mut self, level: LogLevel) {
        self.guest.services_mut().set_log_level(level);
    }

    fn call<R>(
        &mut self,
        id: ContextId,
        f: impl FnOnce(
            &mut proxy_wasm_host::abi::v0_2_1::CallScope<'_, Exchange>,
        ) -> Result<R, proxy_wasm_host::abi::v0_2_1::GuestError>,
    ) -> Result<R, Error> {
        let ex = self.open.remove(&id).ok_or_else(|| Error(format!("no open request {id:?}")))?;
        let (answer, ex) = self.guest.with(ex, f);
        self.open.insert(id, ex);
        answer.map_err(e)
    }

    fn act(&mut self, id: ContextId, a: Result<Action, Error>) -> Result<Action, Error> {
        let a = a?;
        if let Some(ex) = self.open.get_mut(&id) {
            ex.actions.push(a);
        }
        Ok(a)
    }

    /// A new request: context create, request headers (`:method POST`, `:path`, …), and a
    /// small JSON body with `end_of_stream`. At the clock's current time.
    pub fn begin(&mut self, path: &str) -> Result<ContextId, Error> {
        self.begin_with(path, &[])
    }

    /// [`Filter::begin`] with extra request headers (names are lowercased).
    pub fn begin_with(&mut self, path: &str, extra: &[(&str, &str)]) -> Result<ContextId, Error> {
        let mut headers: Vec<(Vec<u8>, Vec<u8>)> = vec![
            (b":authority".to_vec(), b"llm.example.internal".to_vec()),
            (b":path".to_vec(), path.as_bytes().to_vec()),
            (b":method".to_vec(), b"POST".to_vec()),
            (b":scheme".to_vec(), b"http".to_vec()),
            (b"content-type".to_vec(), b"application/json".to_vec()),
            (b"accept".to_vec(), b"text/event-stream".to_vec()),
        ];
        headers
            .extend(extra.iter().map(|(k, v)| (k.to_ascii_lowercase().into_bytes(), v.as_bytes().to_vec())));
        let n = u32::try_from(headers.len()).unwrap_or(u32::MAX);
        let body = br#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#.to_vec();
        let ex = Exchange {
            request_headers: VecHeaderMap::from(headers),
            request_body: body.clone(),
            odd: self.odd,
            ..Exchange::default()
        };
        let root = self.root;
        let (answer, ex) = self.guest.with(ex, |scope| {
            let id = scope.on_context_create(Some(root))?;
            scope.expect_stream_kind(id, StreamKind::Http)?;
            let a = scope.on_request_headers(id, n, false)?;
            let b = scope.on_request_body(id, u32::try_from(body.len()).unwrap_or(0), true)?;
            Ok::<_, proxy_wasm_host::abi::v0_2_1::GuestError>((id, a, b))
        });
        let (id, a, b) = answer.map_err(e)?;
        let mut ex = ex;
        ex.actions.extend([a, b]);
        self.open.insert(id, ex);
        Ok(id)
    }

    /// The request headers of an open request as the host holds them now, in order: after
    /// [`Filter::begin_with`], what Envoy would send upstream (the filter may have added some in
    /// `proxy_on_request_headers`). Values read as UTF-8, lossily.
    pub fn request_headers(&self, id: ContextId) -> Option<Vec<(String, String)>> {
        let ex = self.open.get(&id)?;
        let mut pairs = Vec::new();
        let _ = ex.request_headers.for_each_pair(&mut |k, v| {
            pairs.push((String::from_utf8_lossy(k).into_owned(), String::from_utf8_lossy(v).into_owned()));
            std::ops::ControlFlow::Continue(())
        });
        Some(pairs)
    }

    /// Response headers (`:status`, then `headers`, lowercased).
    pub fn respond(
        &mut self,
        id: ContextId,
        status: u16,
        headers: &[(&str, &str)],
        end_of_stream: bool,
    ) -> Result<Action, Error> {
        let mut h: Vec<(Vec<u8>, Vec<u8>)> = vec![(b":status".to_vec(), status.to_string().into_bytes())];
        h.extend(headers.iter().map(|(k, v)| (k.to_ascii_lowercase().into_bytes(), v.as_bytes().to_vec())));
        let n = u32::try_from(h.len()).unwrap_or(u32::MAX);
        if let Some(ex) = self.open.get_mut(&id) {
            ex.response_headers = VecHeaderMap::from(h);
        }
        let a = self.call(id, |s| s.on_response_headers(id, n, end_of_stream));
        self.act(id, a)
    }

    /// One response body chunk, exactly as given.
    pub fn chunk(&mut self, id: ContextId, bytes: &[u8], end_of_stream: bool) -> Result<Action, Error> {
        let n = u32::try_from(bytes.len()).map_err(e)?;
        // One lookup out and one back in: this runs once per chunk in the benchmark.
        let mut ex = self.open.remove(&id).ok_or_else(|| Error(format!("no open request {id:?}")))?;
        ex.body.clear();
        ex.body.extend_from_slice(bytes);
        let (answer, mut ex) = self.guest.with(ex, |s| s.on_response_body(id, n, end_of_stream));
        let answer = answer.map_err(e);
        if let Ok(a) = answer {
            ex.actions.push(a);
        }
        self.open.insert(id, ex);
        answer
    }

    /// The stream is over: `proxy_on_done`, `proxy_on_log`, `proxy_on_delete`.
    pub fn end(&mut self, id: ContextId) -> Result<Finished, Error> {
        let ex = self.open.remove(&id).ok_or_else(|| Error(format!("no open request {id:?}")))?;
        let (answer, ex) = self.guest.with(ex, |s| {
            s.on_done(id)?;
            s.on_log(id)?;
            s.on_delete(id)?;
            Ok::<_, proxy_wasm_host::abi::v0_2_1::GuestError>(())
        });
        answer.map_err(e)?;
        Ok(Finished { properties: ex.properties, actions: ex.actions, reset: ex.reset })
    }

    /// `proxy_on_tick` on the root. Streams the filter reset (close or local response) are then
    /// ended as Envoy ends a reset stream (done, log, delete; no `end_of_stream`); their
    /// [`Finished`] is kept for [`Filter::take_reset`]. Returns the ids reset on this tick.
    pub fn tick(&mut self) -> Result<Vec<ContextId>, Error> {
        let root = self.root;
        let state = TickState { resets: Vec::new(), odd: self.odd };
        let (answer, state) = self.guest.with(state, |s| s.on_tick(root));
        answer.map_err(e)?;
        let mut ids = Vec::new();
        for (id, by) in state.resets {
            if let Some(ex) = self.open.get_mut(&id) {
                ex.reset.get_or_insert(by);
                let mut f = self.end(id)?;
                if f.reset.is_none() {
                    f.reset = Some(ResetBy::CloseStream);
                }
                self.reset_done.insert(id, f);
                ids.push(id);
            }
        }
        Ok(ids)
    }

    /// What a stream reset by the filter left behind.
    pub fn take_reset(&mut self, id: ContextId) -> Option<Finished> {
        self.reset_done.remove(&id)
    }

    /// The filter's own memory figures: a tick at debug level, its `stats:` line parsed.
    /// (With a guard configured, that tick also checks the guard.)
    pub fn guest_stats(&mut self) -> Result<GuestStats, Error> {
        let level = self.guest.services().log_level();
        self.set_log_level(LogLevel::Debug);
        let before = self.logs.lines().len();
        let ticked = self.tick();
        self.set_log_level(level);
        ticked?;
        let lines = self.logs.lines();
        let line = lines[before..]
            .iter()
            .rev()
            .find(|(_, l)| l.contains("stats:"))
            .map(|(_, l)| l.clone())
            .ok_or_else(|| Error("the filter logged no stats line".into()))?;
        let field = |k: &str| -> u64 {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        Ok(GuestStats {
            open_streams: field("open_streams"),
            guarded: field("guarded"),
            heap_bytes: field("heap_bytes"),
            wasm_memory_bytes: field("wasm_memory_bytes"),
            context_bytes: field("context_bytes"),
            stream_bytes: field("stream_bytes"),
        })
    }

    /// A whole streamed exchange: request at `request_ns`, response headers at `headers_ns`
    /// (`status`, `content-type`), then each `(at_ns, bytes)` chunk (the last with
    /// `end_of_stream`), then done/log/delete.
    pub fn exchange(
        &mut self,
        path: &str,
        request_ns: u64,
        status: u16,
        content_type: &str,
        headers_ns: u64,
        chunks: &[(u64, Vec<u8>)],
    ) -> Result<Finished, Error> {
        self.clock.set(request_ns);
        let id = self.begin(path)?;
        self.clock.set(headers_ns);
        self.respond(id, status, &[("content-type", content_type), ("server", "test")], chunks.is_empty())?;
        for (i, (at, bytes)) in chunks.iter().enumerate() {
            self.clock.set(*at);
            self.chunk(id, bytes, i + 1 == chunks.len())?;
        }
        self.end(id)
    }
}
