//! A proxy-wasm test host: loads a filter into `proxy-wasm-host` 0.2 (ABI 0.2.1, wasmtime) and
//! drives the whole lifecycle the way Envoy does — `_initialize`, root context create,
//! `proxy_on_vm_start`, `proxy_on_configure`, then per request: context create, request headers
//! (lowercase names, pseudo-headers first, as Envoy sends them), request body, response headers,
//! response body chunks with `end_of_stream`, `proxy_on_done`, `proxy_on_log`, `proxy_on_delete`.
//!
//! What the crate leaves to the embedder is here: a mockable clock ([`FakeClock`], both the
//! ABI's wall clock and WASI's monotonic clock), a metric store that keeps every histogram
//! sample and can be read back ([`MetricStore`]; the crate's own store keeps none), a log that
//! can be read back, per-request properties, and switches for hosts that differ: no metrics
//! (every metric call answers `UNIMPLEMENTED`, as APISIX does), metric calls that start failing,
//! and unexpected statuses from header, body and property calls ([`Odd`]).
//!
//! Resets: the filter's guard calls `proxy_set_effective_context` + `proxy_close_stream` (or
//! `proxy_send_local_response`) from `proxy_on_tick`. [`Filter::tick`] records those and then
//! does what Envoy does to a reset stream: `proxy_on_done`, `proxy_on_log`, `proxy_on_delete`
//! without an `end_of_stream`.

use proxy_wasm_host::abi::v0_2_1::types::{
    Action, BufferType, LogLevel, MapType, MetricType, Status, StreamType,
};
use proxy_wasm_host::abi::v0_2_1::{
    Access, Clock, ContextId, Guest, Host, Invocation, LocalResponse, LogContext, LogSink, MetricId,
    PluginConfig, SharedServices, Started, StreamKind, StreamState, VmServices,
};
use proxy_wasm_host::{Buffer, Engine, HeaderMap, Limits, Module, VecHeaderMap};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

pub use proxy_wasm_host::abi::v0_2_1::types;

/// The fake wall clock's origin: 2025-11-30T00:00:00Z in Unix nanoseconds. The ABI's
/// `proxy_get_current_time_nanoseconds` and WASI's realtime clock answer `WALL_BASE_NS + now`.
pub const WALL_BASE_NS: u64 = 1_764_460_800_000_000_000;

/// The path of the built filter (built once per process with the `plugin` profile).
pub fn stream_timer_wasm() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        triage_plugin_build::ensure(&[triage_plugin_build::STREAM_TIMER])
            .into_iter()
            .next()
            .unwrap_or_default()
    })
    .clone()
}

/// A monotonic clock the test moves by hand. Starts at 1 s.
#[derive(Debug)]
pub struct FakeClock(AtomicU64);

impl Default for FakeClock {
    fn default() -> Self {
        FakeClock(AtomicU64::new(1_000_000_000))
    }
}

impl FakeClock {
    pub fn now(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
    /// Set the time; the clock never goes back (a smaller value is ignored).
    pub fn set(&self, ns: u64) {
        self.0.fetch_max(ns, Ordering::SeqCst);
    }
    pub fn advance(&self, ns: u64) {
        self.0.fetch_add(ns, Ordering::SeqCst);
    }
}

impl Clock for FakeClock {
    fn realtime_nanos(&self) -> u64 {
        WALL_BASE_NS + self.now()
    }
    fn monotonic_nanos(&self) -> u64 {
        self.now()
    }
}

/// How the host answers metric calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricsMode {
    /// Define, record and increment all work.
    Working,
    /// Every metric call answers this status (APISIX: `UNIMPLEMENTED`).
    Refused(Status),
    /// Definitions work; record/increment answer `status` after `ok_calls` successful ones.
    FailAfter { ok_calls: u64, status: Status },
}

/// One metric as the host saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metric {
    pub name: String,
    pub kind: MetricType,
    /// Counter / gauge value (sum of increments; a record sets it).
    pub value: i64,
    /// Every value recorded into a histogram, in order.
    pub samples: Vec<u64>,
}

#[derive(Debug, Default)]
struct MetricInner {
    by_name: HashMap<Vec<u8>, u32>,
    metrics: Vec<Metric>,
    calls: u64,
}

/// A metric store for the guest that can be read back, with failure modes.
#[derive(Debug)]
pub struct MetricStore {
    inner: Mutex<MetricInner>,
    mode: MetricsMode,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MetricStore {
    pub fn new(mode: MetricsMode) -> MetricStore {
        MetricStore { inner: Mutex::new(MetricInner::default()), mode }
    }

    fn metric<T>(&self, name: &str, f: impl FnOnce(&Metric) -> T) -> Option<T> {
        let inner = lock(&self.inner);
        let id = *inner.by_name.get(name.as_bytes())?;
        inner.metrics.get(id as usize - 1).map(f)
    }

    /// A counter's or gauge's value; `None` when never defined.
    pub fn value(&self, name: &str) -> Option<i64> {
        self.metric(name, |m| m.value)
    }

    /// A counter's value, 0 when never defined or never incremented.
    pub fn counter(&self, name: &str) -> i64 {
        self.value(name).unwrap_or(0)
    }

    /// Every sample of a histogram (empty when never defined).
    pub fn samples(&self, name: &str) -> Vec<u64> {
        self.metric(name, |m| m.samples.clone()).unwrap_or_default()
    }

    pub fn names(&self) -> Vec<String> {
        lock(&self.inner).metrics.iter().map(|m| m.name.clone()).collect()
    }

    pub fn snapshot(&self) -> Vec<Metric> {
        lock(&self.inner).metrics.clone()
    }

    /// Drop every sample and zero every value (definitions stay).
    pub fn clear_values(&self) {
        for m in &mut lock(&self.inner).metrics {
            m.value = 0;
            m.samples = Vec::new();
        }
    }

    fn use_call(&self, inner: &mut MetricInner) -> Result<(), Status> {
        match self.mode {
            MetricsMode::Working => Ok(()),
            MetricsMode::Refused(s) => Err(s),
            MetricsMode::FailAfter { ok_calls, status } => {
                inner.calls += 1;
                if inner.calls > ok_calls { Err(status) } else { Ok(()) }
            }
        }
    }

    fn get_mut(inner: &mut MetricInner, metric: MetricId) -> Result<&mut Metric, Status> {
        inner.metrics.get_mut(metric.get() as usize - 1).ok_or(Status::NotFound)
    }
}

impl SharedServices for MetricStore {
    fn define_metric(
        &self,
        _: Invocation,
        _vm: &[u8],
        kind: MetricType,
        name: &[u8],
    ) -> Result<MetricId, Status> {
        if let MetricsMode::Refused(s) = self.mode {
            return Err(s);
        }
        let mut inner = lock(&self.inner);
        let id = match inner.by_name.get(name) {
            Some(&id) => id,
            None => {
                inner.metrics.push(Metric {
                    name: String::from_utf8_lossy(name).into_owned(),
                    kind,
                    value: 0,
                    samples: Vec::new(),
                });
                let id = u32::try_from(inner.metrics.len()).map_err(|_| Status::InternalFailure)?;
                inner.by_name.insert(name.to_vec(), id);
                id
            }
        };
        MetricId::try_from(id).map_err(|_| Status::InternalFailure)
    }

    fn record_metric(&self, _: Invocation, metric: MetricId, value: u64) -> Result<(), Status> {
        let mut inner = lock(&self.inner);
        self.use_call(&mut inner)?;
        let m = Self::get_mut(&mut inner, metric)?;
        match m.kind {
            MetricType::Histogram => m.samples.push(value),
            _ => m.value = i64::try_from(value).unwrap_or(i64::MAX),
        }
        Ok(())
    }

    fn increment_metric(&self, _: Invocation, metric: MetricId, delta: i64) -> Result<(), Status> {
        let mut inner = lock(&self.inner);
        self.use_call(&mut inner)?;
        let m = Self::get_mut(&mut inner, metric)?;
        match m.kind {
            MetricType::Counter if delta < 0 => Err(Status::BadArgument),
            MetricType::Histogram => Err(Status::BadArgument),
            _ => {
                m.value = m.value.saturating_add(delta);
                Ok(())
            }
        }
    }

    fn get_metric(&self, _: Invocation, metric: MetricId) -> Result<u64, Status> {
        let mut inner = lock(&self.inner);
        let m = Self::get_mut(&mut inner, metric)?;
        Ok(m.value.max(0).cast_unsigned())
    }
}

/// Every line the guest logged.
#[derive(Debug, Default)]
pub struct LogStore(Mutex<Vec<(LogLevel, String)>>);

impl LogSink for LogStore {
    fn log(&self, _: LogContext<'_>, level: LogLevel, message: &[u8]) {
        lock(&self.0).push((level, String::from_utf8_lossy(message).into_owned()));
    }
}

impl LogStore {
    pub fn lines(&self) -> Vec<(LogLevel, String)> {
        lock(&self.0).clone()
    }
    pub fn clear(&self) {
        lock(&self.0).clear();
    }
}

/// Unexpected statuses the host answers instead of serving a call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Odd {
    /// `proxy_get_header_map_value` on request headers.
    pub request_headers: Option<Status>,
    /// `proxy_get_header_map_value` on response headers.
    pub response_headers: Option<Status>,
    /// `proxy_get_buffer_bytes` on the response body.
    pub body: Option<Status>,
    /// `proxy_set_property`.
    pub set_property: Option<Status>,
    /// `proxy_close_stream` / `proxy_send_local_response`.
    pub reset: Option<Status>,
}

/// How a stream was reset by the filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResetBy {
    /// `proxy_close_stream(HTTP_RESPONSE)`: the downstream stream is reset and Envoy cancels
    /// the upstream request.
    CloseStream,
    /// `proxy_send_local_response` (status, details) before any response headers went out.
    LocalResponse(u32, String),
}

/// One request as the host holds it while the guest runs.
#[derive(Debug, Default)]
pub struct Exchange {
    request_headers: VecHeaderMap,
    response_headers: VecHeaderMap,
    request_body: Vec<u8>,
    body: Vec<u8>,
    /// Properties the guest set, by path (segments joined with `.`).
    pub properties: BTreeMap<String, String>,
    /// Every action the guest answered, in order.
    pub actions: Vec<Action>,
    pub reset: Option<ResetBy>,
    odd: Odd,
}

impl StreamState for Exchange {
    fn header_map(
        &mut self,
        _: Invocation,
        access: Access,
        map: MapType,
    ) -> Result<&mut dyn HeaderMap, Status> {
        match map {
            MapType::HttpRequestHeaders => match self.odd.request_headers {
                Some(s) if access == Access::Read => Err(s),
                _ => Ok(&mut self.request_headers),
            },
            MapType::HttpResponseHeaders => match self.odd.response_headers {
                Some(s) if access == Access::Read => Err(s),
                _ => Ok(&mut self.response_headers),
            },
            _ => Err(Status::NotFound),
        }
    }

    fn buffer(&mut self, _: Invocation, _: Access, buffer: BufferType) -> Result<&mut dyn Buffer, Status> {
        match buffer {
            BufferType::HttpResponseBody => match self.odd.body {
                Some(s) => Err(s),
                None => Ok(&mut self.body),
            },
            BufferType::HttpRequestBody => Ok(&mut self.request_body),
            _ => Err(Status::NotFound),
        }
    }

    fn property(&mut self, _: Invocation, path: &[&[u8]], out: &mut Vec<u8>) -> Result<(), Status> {
        let key = join(path);
        let v = self.properties.get(&key).ok_or(Status::NotFound)?;
        out.extend_from_slice(v.as_bytes());
        Ok(())
    }

    fn set_property(&mut self, _: Invocation, path: &[&[u8]], value: &[u8]) -> Result<(), Status> {
        if let Some(s) = self.odd.set_property {
            return Err(s);
        }
        self.properties.insert(join(path), String::from_utf8_lossy(value).into_owned());
        Ok(())
    }

    fn close_stream(&mut self, _: Invocation, stream: StreamType) -> Result<(), Status> {
        if let Some(s) = self.odd.reset {
            return Err(s);
        }
        if stream != StreamType::HttpResponse && stream != StreamType::HttpRequest {
            return Err(Status::BadArgument);
        }
        self.reset.get_or_insert(ResetBy::CloseStream);
        Ok(())
    }

    fn send_local_response(&mut self, _: Invocation, r: LocalResponse<'_>) -> Result<(), Status> {
        if let Some(s) = self.odd.reset {
            return Err(s);
        }
        self.reset.get_or_insert(ResetBy::LocalResponse(
            r.status_code,
            String::from_utf8_lossy(&r.status_code_details).into_owned(),
        ));
        Ok(())
    }
}

fn join(path: &[&[u8]]) -> String {
    path.iter().map(|s| String::from_utf8_lossy(s)).collect::<Vec<_>>().join(".")
}

/// The stream state lent for `proxy_on_tick`: it records resets by effective context.
#[derive(Debug, Default)]
struct TickState {
    resets: Vec<(ContextId, ResetBy)>,
    odd: Odd,
}

impl StreamState for TickState {
    fn close_stream(&mut self, call: Invocation, _: StreamType) -> Result<(), Status> {
        if let Some(s) = self.odd.reset {
            return Err(s);
        }
        self.resets.push((call.context, ResetBy::CloseStream));
        Ok(())
    }
    fn send_local_response(&mut self, call: Invocation, r: LocalResponse<'_>) -> Result<(), Status> {
        if let Some(s) = self.odd.reset {
            return Err(s);
        }
        let details = String::from_utf8_lossy(&r.status_code_details).into_owned();
        self.resets.push((call.context, ResetBy::LocalResponse(r.status_code, details)));
        Ok(())
    }
}

/// What a request left behind when its context was deleted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Finished {
    pub properties: BTreeMap<String, String>,
    pub actions: Vec<Action>,
    pub reset: Option<ResetBy>,
}

impl Finished {
    /// A property by its full path (e.g. `llm.ttft_us`).
    pub fn prop(&self, name: &str) -> Option<&str> {
        self.properties.get(name).map(String::as_str)
    }
}

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
