//! The plugin host: every `*.wasm` component in a folder, each in its own sandbox.
//!
//! Sandbox per plugin: one [`Store`] (the instance keeps its rule state between ticks), a
//! memory limit ([`StoreLimits`]), fuel for each call (a bound on work that does not depend on
//! the machine's speed) and an epoch deadline (a bound on wall time: a ticker thread advances
//! the engine's epoch every [`EPOCH_TICK`] while a call runs). Answers larger than [`MAX_FINDINGS`] are cut.
//!
//! A call that traps, runs out of fuel or time, or hits the memory limit is a failure: the
//! instance is dropped (a trapped instance refuses re-entry) and made anew from its
//! [`InstancePre`] on the next call. After [`DISABLE_AFTER`] failures in a row the plugin is
//! disabled until its file changes. Files are re-read when their size or modification time
//! changes ([`PluginHost::reload`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

use triage_core::analyze::report::Class;
use triage_core::gpu::{EngineSample, GpuFinding, GpuSample};
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

pub mod gpu_rules {
    wasmtime::component::bindgen!({ world: "gpu-rules", path: "../../plugins/wit" });
}
pub mod text_analyzer {
    wasmtime::component::bindgen!({ world: "text-analyzer", path: "../../plugins/wit" });
}

use gpu_rules::triage::plugin::types as wit;

/// How often the epoch advances.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);
/// Failures in a row before a plugin is disabled.
pub const DISABLE_AFTER: u32 = 3;
/// Most findings taken from one answer.
pub const MAX_FINDINGS: usize = 256;

/// Limits of one plugin's sandbox.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Linear memory (and tables) per instance, bytes.
    pub memory_bytes: usize,
    /// Fuel per call (~ one unit per wasm instruction).
    pub fuel: u64,
    /// Wall time per call.
    pub deadline: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        // The GPU rules use ~1.5 M fuel and < 1 ms per tick of 8 GPUs; the text analyzer a
        // few hundred M for a megabyte of logs.
        Limits { memory_bytes: 64 << 20, fuel: 2_000_000_000, deadline: Duration::from_millis(250) }
    }
}

pub struct State {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: StoreLimits,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// Which world a component implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum World {
    GpuRules,
    TextAnalyzer,
}

/// Why a call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    Trap(String),
    OutOfFuel,
    Deadline,
    Memory,
    Instantiate(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Trap(m) => write!(f, "trapped: {m}"),
            Failure::OutOfFuel => write!(f, "ran out of fuel (too much work for one call)"),
            Failure::Deadline => write!(f, "ran past its deadline (interrupted)"),
            Failure::Memory => write!(f, "hit its memory limit"),
            Failure::Instantiate(m) => write!(f, "could not be instantiated: {m}"),
        }
    }
}

/// What happened to one plugin in one tick, for logs and metrics.
#[derive(Clone, Debug)]
pub struct CallReport {
    pub plugin: String,
    pub took: Duration,
    pub result: Result<usize, Failure>,
    /// The plugin was disabled by this failure.
    pub disabled: bool,
    /// The answer had more than [`MAX_FINDINGS`] findings (cut).
    pub truncated: bool,
}

struct Plugin {
    name: String,
    path: PathBuf,
    stamp: Stamp,
    world: World,
    pre: Option<gpu_rules::GpuRulesPre<State>>,
    /// The live instance with its store; `None` after a failure until the next call.
    live: Option<(Store<State>, gpu_rules::GpuRules)>,
    failures_in_row: u32,
    pub failures_total: u64,
    disabled: bool,
    /// The last answer; cleared when a call fails.
    findings: Vec<GpuFinding>,
    last_call: Duration,
}

impl Plugin {
    fn new(
        name: &str,
        path: PathBuf,
        stamp: Stamp,
        world: World,
        pre: Option<gpu_rules::GpuRulesPre<State>>,
    ) -> Plugin {
        Plugin {
            name: name.to_owned(),
            path,
            stamp,
            world,
            pre,
            live: None,
            failures_in_row: 0,
            failures_total: 0,
            disabled: false,
            findings: Vec::new(),
            last_call: Duration::ZERO,
        }
    }
}

/// Counters and state of one plugin, for the exposition.
#[derive(Clone, Debug, PartialEq)]
pub struct PluginStatus {
    pub name: String,
    pub world: World,
    pub disabled: bool,
    pub failures_total: u64,
    pub last_call: Duration,
}

pub struct PluginHost {
    engine: Engine,
    linker: Linker<State>,
    limits: Limits,
    dir: Option<PathBuf>,
    plugins: BTreeMap<String, Plugin>,
    ticker: Arc<Ticker>,
    /// Files that failed to load, with their stamp (retried when it changes) and why.
    failed: BTreeMap<String, (Stamp, String)>,
    /// Core wasm modules (not components: a proxy-wasm filter), skipped until they change.
    skipped: BTreeMap<String, Stamp>,
    /// Could the folder be read at the last scan.
    dir_readable: bool,
    /// What changed that a person should hear about once ([`PluginHost::take_notices`]).
    notices: Vec<String>,
}

/// The epoch ticker's switch. It advances the epoch only while a call runs and sleeps on the
/// condition variable otherwise: an always-on 5 ms ticker alone cost ~2 % of a core.
#[derive(Default)]
struct Ticker {
    /// (calls running, host dropped)
    state: Mutex<(bool, bool)>,
    wake: Condvar,
}

impl Ticker {
    fn set(&self, running: Option<bool>, stop: Option<bool>) {
        if let Ok(mut s) = self.state.lock() {
            if let Some(r) = running {
                s.0 = r;
            }
            if let Some(x) = stop {
                s.1 = x;
            }
        }
        self.wake.notify_all();
    }

    fn run(&self, engine: &Engine) {
        let Ok(mut s) = self.state.lock() else { return };
        loop {
            while !s.0 && !s.1 {
                s = match self.wake.wait(s) {
                    Ok(s) => s,
                    Err(_) => return,
                };
            }
            if s.1 {
                return;
            }
            drop(s);
            std::thread::sleep(EPOCH_TICK);
            engine.increment_epoch();
            s = match self.state.lock() {
                Ok(s) => s,
                Err(_) => return,
            };
        }
    }
}

/// Runs the ticker while it lives.
struct Calling<'a>(&'a Ticker);

impl<'a> Calling<'a> {
    fn start(t: &'a Ticker) -> Calling<'a> {
        t.set(Some(true), None);
        Calling(t)
    }
}

impl Drop for Calling<'_> {
    fn drop(&mut self) {
        self.0.set(Some(false), None);
    }
}

impl Drop for PluginHost {
    fn drop(&mut self) {
        self.ticker.set(None, Some(true));
    }
}

fn engine() -> anyhow::Result<Engine> {
    let mut config = Config::new();
    config.epoch_interruption(true).consume_fuel(true).max_wasm_stack(1 << 20);
    Engine::new(&config).map_err(|e| anyhow::anyhow!("starting wasmtime: {e}"))
}

/// A file's size and modification time: a change means "load it again".
type Stamp = (u64, Option<SystemTime>);

fn stamp(path: &Path) -> Stamp {
    std::fs::metadata(path).map(|m| (m.len(), m.modified().ok())).unwrap_or((0, None))
}

/// Classify a wasmtime error from a call.
fn failure(e: &wasmtime::Error) -> Failure {
    if let Some(trap) = e.downcast_ref::<wasmtime::Trap>() {
        return match trap {
            wasmtime::Trap::OutOfFuel => Failure::OutOfFuel,
            wasmtime::Trap::Interrupt => Failure::Deadline,
            other => Failure::Trap(other.to_string()),
        };
    }
    let text = format!("{e:#}");
    if text.contains("forcing trap when growing memory") || text.contains("memory") && text.contains("limit")
    {
        Failure::Memory
    } else {
        Failure::Trap(one_line(e))
    }
}

/// Most characters of a plugin's or wasmtime's message quoted in one of ours.
const MAX_MESSAGE: usize = 300;

/// A wasmtime error as one line: its top message and, when different, its root cause (the
/// middle of the chain and any backtrace left out), redacted, then cut.
pub fn one_line(e: &wasmtime::Error) -> String {
    let top = e.to_string();
    let root = e.root_cause().to_string();
    let first = |s: &str| s.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("").to_owned();
    let (top, root) = (first(&top), first(&root));
    let text = if root.is_empty() || top.contains(&root) { top } else { format!("{top}: {root}") };
    crate::out::quote(&text, MAX_MESSAGE)
}

/// Largest plugin file read: the analyzer component is about 1 MB; a larger file is refused
/// before it is read.
pub const MAX_PLUGIN_BYTES: u64 = 64 << 20;

/// Load failures said one by one in one scan; the rest in one line.
const SAID_FAILURES: usize = 3;

/// Why a file was not loaded.
enum NotLoaded {
    /// A core WebAssembly module, not a component (the proxy-wasm filter): not a plugin.
    CoreModule,
    Failed(String),
}

/// The bytes of a plugin file, after its size and header were checked: never more than
/// [`MAX_PLUGIN_BYTES`] read, nothing but the header read of a file that is no component.
fn read_plugin(path: &Path) -> Result<Vec<u8>, NotLoaded> {
    use std::io::Read;
    let failed = |e: std::io::Error| NotLoaded::Failed(format!("reading {}: {e}", path.display()));
    let f = std::fs::File::open(path).map_err(failed)?;
    let len = f.metadata().map_err(failed)?.len();
    if len > MAX_PLUGIN_BYTES {
        return Err(NotLoaded::Failed(format!(
            "{} MiB, larger than the {} MiB a plugin may be: not read",
            len >> 20,
            MAX_PLUGIN_BYTES >> 20
        )));
    }
    let mut bytes = Vec::new();
    let mut f = f.take(MAX_PLUGIN_BYTES + 1);
    (&mut f).take(8).read_to_end(&mut bytes).map_err(failed)?;
    if !bytes.starts_with(b"\0asm") {
        return Err(NotLoaded::Failed("not a WebAssembly file (bad magic number)".into()));
    }
    // A core module's version is 1; a component's is 0x0d with layer 1.
    if bytes[4..] == [1, 0, 0, 0] {
        return Err(NotLoaded::CoreModule);
    }
    f.read_to_end(&mut bytes).map_err(failed)?;
    if bytes.len() as u64 > MAX_PLUGIN_BYTES {
        return Err(NotLoaded::Failed(format!(
            "larger than the {} MiB a plugin may be",
            MAX_PLUGIN_BYTES >> 20
        )));
    }
    Ok(bytes)
}

/// A component's bytes from `path`, its size and header checked first (see [`MAX_PLUGIN_BYTES`]).
pub fn read_component(path: &Path) -> Result<Vec<u8>, String> {
    read_plugin(path).map_err(|e| match e {
        NotLoaded::CoreModule => "a core WebAssembly module, not a component".to_owned(),
        NotLoaded::Failed(e) => e,
    })
}

/// Why `bytes` could not be compiled, in one line.
fn compile_error(bytes: &[u8], e: &wasmtime::Error) -> String {
    if !bytes.starts_with(b"\0asm") {
        return "not a WebAssembly file (bad magic number)".to_owned();
    }
    format!("not a valid component: {}", one_line(e))
}

impl PluginHost {
    /// A host with no plugins; the epoch ticker thread starts here and stops with the host.
    pub fn new(limits: Limits) -> anyhow::Result<PluginHost> {
        let engine = engine()?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
            .map_err(|e| anyhow::anyhow!("linking WASI: {e}"))?;
        let ticker = Arc::new(Ticker::default());
        let (ticker_engine, t) = (engine.clone(), ticker.clone());
        std::thread::Builder::new().name("epoch".into()).spawn(move || t.run(&ticker_engine))?;
        Ok(PluginHost {
            engine,
            linker,
            limits,
            dir: None,
            plugins: BTreeMap::new(),
            ticker,
            failed: BTreeMap::new(),
            skipped: BTreeMap::new(),
            dir_readable: true,
            notices: Vec::new(),
        })
    }

    /// Load every `*.wasm` of `dir` (see [`PluginHost::reload`]).
    pub fn open(dir: &Path, limits: Limits) -> anyhow::Result<PluginHost> {
        let mut host = PluginHost::new(limits)?;
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => anyhow::bail!("plugin folder {} is not a folder", dir.display()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                anyhow::bail!("plugin folder {} does not exist", dir.display())
            }
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => anyhow::bail!(
                "plugin folder {} cannot be resolved: it is a symlink loop (a link that leads back to itself)",
                dir.display()
            ),
            Err(e) => anyhow::bail!("plugin folder {} cannot be read: {e}", dir.display()),
        }
        host.dir = Some(dir.to_path_buf());
        host.scan(false);
        Ok(host)
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Compile a component and tell which world it implements.
    pub fn compile(&self, bytes: &[u8]) -> Result<(Component, World), String> {
        let component = Component::new(&self.engine, bytes).map_err(|e| compile_error(bytes, &e))?;
        let ty = component.component_type();
        let exports: Vec<String> = ty.exports(&self.engine).map(|(name, _)| name.to_owned()).collect();
        let world = if exports.iter().any(|e| e == "analyze") {
            World::GpuRules
        } else if exports.iter().any(|e| e == "analyze-text") {
            World::TextAnalyzer
        } else {
            return Err(format!(
                "exports neither `analyze` (world gpu-rules) nor `analyze-text` (world text-analyzer); it exports: {}",
                exports.join(", ")
            ));
        };
        Ok((component, world))
    }

    /// Scan the folder: load new files, re-load changed ones, forget removed ones. Returns the
    /// names of plugins (re)loaded. Cheap when nothing changed (one `stat` per file).
    pub fn reload(&mut self) -> Vec<String> {
        self.scan(true)
    }

    /// [`PluginHost::reload`]; `announce`: note each plugin (re)loaded (not at start-up).
    fn scan(&mut self, announce: bool) -> Vec<String> {
        let Some(dir) = self.dir.clone() else { return Vec::new() };
        let mut seen = std::collections::BTreeSet::new();
        let mut loaded = Vec::new();
        let before = self.loaded(World::GpuRules);
        let mut entries: Vec<PathBuf> = match std::fs::read_dir(&dir) {
            Ok(rd) => {
                if !self.dir_readable {
                    self.notices.push(format!("plugin folder {} is back", dir.display()));
                }
                self.dir_readable = true;
                rd.filter_map(|e| e.ok().map(|e| e.path())).collect()
            }
            Err(e) => {
                if self.dir_readable {
                    self.notices.push(format!(
                        "plugin folder {} cannot be read ({e}); its plugins are unloaded until it is back",
                        dir.display()
                    ));
                }
                self.dir_readable = false;
                Vec::new()
            }
        };
        entries.sort();
        let (mut failures, mut modules) = (0usize, Vec::new());
        for path in entries.into_iter().filter(|p| p.extension().is_some_and(|e| e == "wasm") && p.is_file())
        {
            let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            seen.insert(name.clone());
            let st = stamp(&path);
            if self.plugins.get(&name).is_some_and(|p| p.stamp == st)
                || self.failed.get(&name).is_some_and(|(s, _)| *s == st)
                || self.skipped.get(&name).is_some_and(|s| *s == st)
            {
                continue;
            }
            let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            match self.load(&name, &path, st) {
                Ok(p) => {
                    self.failed.remove(&name);
                    self.skipped.remove(&name);
                    self.plugins.insert(name.clone(), p);
                    loaded.push(name);
                }
                Err(NotLoaded::CoreModule) => {
                    self.plugins.remove(&name);
                    self.failed.remove(&name);
                    self.skipped.insert(name, st);
                    modules.push(file);
                }
                Err(NotLoaded::Failed(e)) => {
                    self.plugins.remove(&name);
                    self.skipped.remove(&name);
                    // The first few said one by one, the rest in one line: a folder of junk
                    // once printed a line per file.
                    failures += 1;
                    if failures <= SAID_FAILURES {
                        self.notices.push(format!("plugin {file}: {e}"));
                    }
                    self.failed.insert(name, (st, e));
                }
            }
        }
        if failures > SAID_FAILURES {
            self.notices.push(format!(
                "{} more plugin files failed to load (each is tried again when it changes)",
                failures - SAID_FAILURES
            ));
        }
        if !modules.is_empty() {
            let more =
                if modules.len() > 3 { format!(" and {} more", modules.len() - 3) } else { String::new() };
            let what = if modules.len() == 1 {
                "a core WebAssembly module, not a component"
            } else {
                "core WebAssembly modules, not components"
            };
            self.notices.push(format!(
                "skipped {}{more}: {what} (a proxy-wasm filter is no runner plugin)",
                modules.iter().take(3).map(String::as_str).collect::<Vec<_>>().join(", ")
            ));
        }
        self.plugins.retain(|name, _| seen.contains(name));
        self.failed.retain(|name, _| seen.contains(name));
        self.skipped.retain(|name, _| seen.contains(name));
        if announce {
            for name in &loaded {
                self.notices.push(format!("plugin {name} (re)loaded"));
            }
        }
        let after = self.loaded(World::GpuRules);
        if after == 0 && before > 0 && self.dir_readable {
            self.notices.push(format!(
                "no GPU-rules plugin left in {}: no rules run until one is back",
                dir.display()
            ));
        }
        loaded
    }

    /// What changed since the last call that a person should hear about once: files that
    /// failed to load (each time a file fails anew), plugins (re)loaded, the folder gone or
    /// back, no GPU-rules plugin left.
    pub fn take_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }

    /// How many plugins implementing `world` are loaded.
    pub fn loaded(&self, world: World) -> usize {
        self.plugins.values().filter(|p| p.world == world).count()
    }

    /// Files that could not be loaded, with why; each is retried when it changes.
    pub fn errors(&self) -> Vec<(String, String)> {
        self.failed.iter().map(|(k, (_, e))| (k.clone(), e.clone())).collect()
    }

    fn load(&self, name: &str, path: &Path, st: Stamp) -> Result<Plugin, NotLoaded> {
        let bytes = read_plugin(path)?;
        let (component, world) = self.compile(&bytes).map_err(NotLoaded::Failed)?;
        let pre = match world {
            World::GpuRules => {
                let ip = self
                    .linker
                    .instantiate_pre(&component)
                    .map_err(|e| NotLoaded::Failed(format!("cannot link: {e:#}")))?;
                Some(
                    gpu_rules::GpuRulesPre::new(ip)
                        .map_err(|e| NotLoaded::Failed(format!("does not match world gpu-rules: {e:#}")))?,
                )
            }
            World::TextAnalyzer => None,
        };
        Ok(Plugin::new(name, path.to_path_buf(), st, world, pre))
    }

    /// Add one GPU-rules component from bytes (tests, benchmarks).
    pub fn add(&mut self, name: &str, bytes: &[u8]) -> Result<World, String> {
        let dir = std::env::temp_dir();
        let (component, world) = self.compile(bytes)?;
        let pre = match world {
            World::GpuRules => Some(
                gpu_rules::GpuRulesPre::new(
                    self.linker.instantiate_pre(&component).map_err(|e| format!("{e:#}"))?,
                )
                .map_err(|e| format!("{e:#}"))?,
            ),
            World::TextAnalyzer => None,
        };
        self.plugins.insert(name.to_owned(), Plugin::new(name, dir, (0, None), world, pre));
        Ok(world)
    }

    fn store(&self) -> Store<State> {
        let limits = StoreLimitsBuilder::new()
            .memory_size(self.limits.memory_bytes)
            .table_elements(1 << 16)
            .instances(16)
            .trap_on_grow_failure(true)
            .build();
        let wasi = wasmtime_wasi::WasiCtxBuilder::new().build();
        let mut store = Store::new(&self.engine, State { wasi, table: ResourceTable::new(), limits });
        store.limiter(|s| &mut s.limits);
        store.epoch_deadline_trap();
        store
    }

    /// Arm the per-call bounds on a store.
    fn arm(&self, store: &mut Store<State>) {
        let _ = store.set_fuel(self.limits.fuel);
        let ticks = (self.limits.deadline.as_micros() / EPOCH_TICK.as_micros()).max(1) as u64;
        store.set_epoch_deadline(ticks);
    }

    /// Run every enabled GPU-rules plugin on one tick. Returns what each call did; the findings
    /// are in [`PluginHost::findings`].
    pub fn tick(&mut self, samples: &[GpuSample], engine: Option<&EngineSample>) -> Vec<CallReport> {
        let wit_samples: Vec<wit::GpuSample> = samples.iter().map(to_wit).collect();
        let wit_engine = engine.map(|e| wit::EngineSample {
            t: e.t,
            running: e.running,
            waiting: e.waiting,
            kv_usage: e.kv_usage,
            prompt_tokens_total: e.prompt_tokens_total,
            generation_tokens_total: e.generation_tokens_total,
        });
        let names: Vec<String> = self.plugins.keys().cloned().collect();
        let mut reports = Vec::new();
        for name in names {
            let Some(mut p) = self.plugins.remove(&name) else { continue };
            if p.world == World::GpuRules && !p.disabled {
                reports.push(self.call(&mut p, &wit_samples, wit_engine.as_ref()));
            }
            self.plugins.insert(name, p);
        }
        reports
    }

    fn call(
        &self,
        p: &mut Plugin,
        samples: &[wit::GpuSample],
        engine: Option<&wit::EngineSample>,
    ) -> CallReport {
        let started = Instant::now();
        let calling = Calling::start(&self.ticker);
        let result = (|| {
            if p.live.is_none() {
                let pre =
                    p.pre.as_ref().ok_or_else(|| Failure::Instantiate("no instance template".into()))?;
                let mut store = self.store();
                self.arm(&mut store);
                let inst = pre.instantiate(&mut store).map_err(|e| match failure(&e) {
                    Failure::Trap(m) => Failure::Instantiate(m),
                    other => other,
                })?;
                p.live = Some((store, inst));
            }
            let (store, inst) = p.live.as_mut().ok_or_else(|| Failure::Instantiate("lost".into()))?;
            self.arm(store);
            inst.call_analyze(&mut *store, samples, engine.cloned()).map_err(|e| failure(&e))
        })();
        drop(calling);
        let took = started.elapsed();
        p.last_call = took;
        match result {
            Ok(found) => {
                p.failures_in_row = 0;
                let truncated = found.len() > MAX_FINDINGS;
                p.findings = found.into_iter().take(MAX_FINDINGS).map(from_wit).collect();
                CallReport {
                    plugin: p.name.clone(),
                    took,
                    result: Ok(p.findings.len()),
                    disabled: false,
                    truncated,
                }
            }
            Err(f) => {
                p.live = None;
                p.findings.clear();
                p.failures_in_row += 1;
                p.failures_total += 1;
                p.disabled = p.failures_in_row >= DISABLE_AFTER;
                CallReport {
                    plugin: p.name.clone(),
                    took,
                    result: Err(f),
                    disabled: p.disabled,
                    truncated: false,
                }
            }
        }
    }

    /// Findings of every plugin's last successful answer, with the plugin's name.
    pub fn findings(&self) -> Vec<(String, GpuFinding)> {
        self.plugins.values().flat_map(|p| p.findings.iter().map(|f| (p.name.clone(), f.clone()))).collect()
    }

    pub fn status(&self) -> Vec<PluginStatus> {
        self.plugins
            .values()
            .map(|p| PluginStatus {
                name: p.name.clone(),
                world: p.world,
                disabled: p.disabled,
                failures_total: p.failures_total,
                last_call: p.last_call,
            })
            .collect()
    }

    /// Paths of the loaded plugins implementing `world`.
    pub fn paths(&self, world: World) -> Vec<PathBuf> {
        self.plugins.values().filter(|p| p.world == world).map(|p| p.path.clone()).collect()
    }

    /// Run a text-analyzer component once on `inputs`; returns the `triage.report/v1` JSON.
    pub fn analyze_text(&self, bytes: &[u8], inputs: &[(String, String)]) -> Result<String, String> {
        self.text_analyzer(bytes)?.run(inputs.to_vec())
    }

    /// Compile a text-analyzer component once, to run it on several inputs.
    pub fn text_analyzer(&self, bytes: &[u8]) -> Result<TextAnalyzer<'_>, String> {
        let (component, world) = self.compile(bytes)?;
        if world != World::TextAnalyzer {
            return Err("this component does not implement the text-analyzer world".into());
        }
        Ok(TextAnalyzer { host: self, component })
    }
}

/// A compiled text-analyzer component ([`PluginHost::text_analyzer`]).
pub struct TextAnalyzer<'h> {
    host: &'h PluginHost,
    component: Component,
}

impl TextAnalyzer<'_> {
    /// One call on `inputs` (name, text), in a fresh sandbox dropped afterwards (its memory
    /// with it); returns the `triage.report/v1` JSON. The texts are moved, not copied, into
    /// the call.
    pub fn run(&self, inputs: Vec<(String, String)>) -> Result<String, String> {
        let host = self.host;
        let mut store = host.store();
        let _calling = Calling::start(&host.ticker);
        host.arm(&mut store);
        let inst = text_analyzer::TextAnalyzer::instantiate(&mut store, &self.component, &host.linker)
            .map_err(|e| format!("instantiating: {}", failure(&e)))?;
        let inputs: Vec<text_analyzer::triage::plugin::types::TextInput> = inputs
            .into_iter()
            .map(|(name, text)| text_analyzer::triage::plugin::types::TextInput { name, text })
            .collect();
        host.arm(&mut store);
        let report = inst
            .call_analyze_text(&mut store, &inputs)
            .map_err(|e| format!("the analyzer {}", failure(&e)))?;
        Ok(report.json)
    }
}

pub fn to_wit(s: &GpuSample) -> wit::GpuSample {
    wit::GpuSample {
        t: s.t,
        index: s.gpu,
        uuid: s.uuid.clone().unwrap_or_default(),
        sm_clock_mhz: s.sm_clock_mhz,
        mem_clock_mhz: s.mem_clock_mhz,
        max_sm_clock_mhz: s.max_sm_clock_mhz,
        power_mw: s.power_mw,
        power_limit_mw: s.power_limit_mw,
        util_gpu_pct: s.util_gpu_pct,
        util_mem_pct: s.util_mem_pct,
        mem_used_bytes: s.mem_used_bytes,
        mem_total_bytes: s.mem_total_bytes,
        temp_c: s.temp_c,
        clock_event_reasons: s.clock_event_reasons,
        violation_power_ns: s.violation_power_ns,
        violation_thermal_ns: s.violation_thermal_ns,
        ecc_uncorrected: s.ecc_uncorrected,
        xid_events: s.xid.iter().map(|x| wit::XidEvent { t: x.t, code: x.code }).collect(),
    }
}

/// A plugin's class name read by `Class`'s own serde names; one the contract does not know is
/// taken as TBT_TAIL (the GPU rules' usual class) rather than dropping the finding.
fn class_of(name: &str) -> Class {
    serde_json::from_value(serde_json::Value::String(name.to_owned())).unwrap_or(Class::TbtTail)
}

fn from_wit(f: wit::Finding) -> GpuFinding {
    // A plugin's strings are bounded here: its memory is bounded, but not what it says.
    // Redacted first (a plugin may quote a credential it saw), then cut.
    let cut = |s: String, n: usize| {
        let r = triage_core::safe::redact(&s);
        if r.chars().nth(n).is_some() { triage_core::safe::cut(&r, n) } else { r.into_owned() }
    };
    GpuFinding {
        t: f.t,
        gpu: f.gpu,
        class: class_of(&f.class),
        rule: cut(f.rule, 64),
        title: cut(f.title, 512),
        confidence: if f.confidence.is_finite() { f.confidence.clamp(0.0, 1.0) } else { 0.0 },
        evidence: f.evidence.into_iter().take(16).map(|e| cut(e, 512)).collect(),
        remediation: cut(f.remediation, 2048),
    }
}
