//! triage-runner: the GPU-node side of llm-triage.
//!
//! Each tick it takes a sample of every GPU ([`nvml`], or a recorded series on replay), reads
//! the local engine's `/metrics` ([`scrape`]), hands both to every rule plugin in its sandbox
//! ([`host`]), and publishes what they found: a JSON-lines log of findings raised and cleared,
//! and a Prometheus exposition ([`export`]).
//!
//! [`Runner`] is that loop, independent of where samples come from and of the clock, so tests
//! and benchmarks drive it tick by tick.

pub mod export;
pub mod host;
pub mod nvml;
pub mod scrape;

use std::io::Write;
use std::time::{Duration, Instant};

use serde::Serialize;
use triage_core::gpu::engine::EngineSeries;
use triage_core::gpu::series::{Meta, Series};
use triage_core::gpu::{self, EngineSample, GpuFinding, GpuSample, GpuWatch, WatchConfig};

use export::Counters;
use host::{CallReport, PluginHost};

/// Where the rules run.
pub enum Rules {
    /// Every GPU-rules component of a folder, sandboxed (the normal case).
    Plugins(Box<PluginHost>),
    /// The core's rules compiled into the runner: no sandbox; a baseline for benchmarks and a
    /// fallback for nodes without plugins.
    Builtin(Box<GpuWatch>),
}

/// Where the engine's state comes from.
pub enum EngineSource {
    None,
    Url(scrape::EngineUrl),
    Recorded(EngineSeries),
}

/// One line of the findings log (and of `replay --format jsonl`, without `event`).
#[derive(Serialize)]
pub struct LogLine<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<&'a str>,
    pub t: f64,
    pub gpu: Option<u32>,
    pub class: &'a str,
    pub rule: &'a str,
    pub title: &'a str,
    pub confidence: f64,
    pub evidence: &'a [String],
    pub remediation: &'a str,
    pub plugin: &'a str,
}

impl<'a> LogLine<'a> {
    pub fn new(event: Option<&'a str>, plugin: &'a str, f: &'a GpuFinding) -> LogLine<'a> {
        LogLine {
            event,
            t: f.t,
            gpu: f.gpu,
            class: f.class.as_str(),
            rule: &f.rule,
            title: &f.title,
            confidence: f.confidence,
            evidence: &f.evidence,
            remediation: &f.remediation,
            plugin,
        }
    }
}

/// What one tick did.
#[derive(Default)]
pub struct Tick {
    pub raised: Vec<(String, GpuFinding)>,
    pub cleared: Vec<(String, GpuFinding)>,
    pub calls: Vec<CallReport>,
    pub engine_error: Option<String>,
}

pub struct Runner {
    pub rules: Rules,
    pub engine: EngineSource,
    pub meta: Option<Meta>,
    pub counters: Counters,
    active: Vec<(String, GpuFinding)>,
    last_samples: Vec<GpuSample>,
    pub scrape_timeout: Duration,
}

impl Runner {
    pub fn new(rules: Rules, engine: EngineSource, meta: Option<Meta>) -> Runner {
        Runner {
            rules,
            engine,
            meta,
            counters: Counters::default(),
            active: Vec::new(),
            last_samples: Vec::new(),
            scrape_timeout: Duration::from_millis(500),
        }
    }

    pub fn builtin() -> Rules {
        Rules::Builtin(Box::new(GpuWatch::new(WatchConfig::default())))
    }

    /// Run the rules on one tick's samples.
    pub fn tick(&mut self, samples: Vec<GpuSample>) -> Tick {
        let started = Instant::now();
        let mut out = Tick::default();
        let t = samples.iter().map(|s| s.t).fold(f64::NEG_INFINITY, f64::max);
        let engine: Option<EngineSample> = match &self.engine {
            EngineSource::None => None,
            EngineSource::Recorded(series) => series.sample_at(t),
            EngineSource::Url(url) => match url.fetch(self.scrape_timeout) {
                Ok(text) => {
                    self.counters.engine_up = Some(true);
                    EngineSample::from_metrics(&text, t)
                }
                Err(e) => {
                    self.counters.engine_up = Some(false);
                    out.engine_error = Some(e);
                    None
                }
            },
        };
        for s in &samples {
            if let Some(x) = s.xid.last() {
                self.counters.last_xid.insert(s.gpu, x.code);
            }
        }
        let now: Vec<(String, GpuFinding)> = match &mut self.rules {
            Rules::Builtin(w) => {
                w.observe(&samples, engine.as_ref()).into_iter().map(|f| ("builtin".to_owned(), f)).collect()
            }
            Rules::Plugins(host) => {
                out.calls = host.tick(&samples, engine.as_ref());
                for c in &out.calls {
                    *self.counters.plugin_calls.entry(c.plugin.clone()).or_default() += 1;
                    if let Err(f) = &c.result {
                        let reason = match f {
                            host::Failure::Trap(_) => "trap",
                            host::Failure::OutOfFuel => "fuel",
                            host::Failure::Deadline => "deadline",
                            host::Failure::Memory => "memory",
                            host::Failure::Instantiate(_) => "instantiate",
                        };
                        *self
                            .counters
                            .plugin_failures
                            .entry((c.plugin.clone(), reason.to_owned()))
                            .or_default() += 1;
                    }
                }
                host.findings()
            }
        };
        // Raised/cleared per plugin, by the finding's identity (core's `GpuFinding::same_as`).
        let same = |(p, f): &(String, GpuFinding), (q, g): &(String, GpuFinding)| p == q && f.same_as(g);
        for item in &now {
            if !self.active.iter().any(|a| same(a, item)) {
                *self.counters.raised.entry(item.1.rule.clone()).or_default() += 1;
                out.raised.push(item.clone());
            }
        }
        for item in &self.active {
            if !now.iter().any(|n| same(n, item)) {
                out.cleared.push(item.clone());
            }
        }
        self.active = now;
        self.counters.ticks += 1;
        self.counters.samples += samples.len() as u64;
        self.last_samples = samples;
        self.counters.last_tick_seconds = started.elapsed().as_secs_f64();
        out
    }

    pub fn active(&self) -> &[(String, GpuFinding)] {
        &self.active
    }

    /// The Prometheus exposition after the last tick.
    pub fn exposition(&self) -> String {
        let plugins = match &self.rules {
            Rules::Plugins(h) => h.status(),
            Rules::Builtin(_) => Vec::new(),
        };
        export::render(self.meta.as_ref(), &self.last_samples, &self.active, &plugins, &self.counters)
    }
}

/// Write findings as JSON lines (`event` = `raised` / `cleared`, or none).
pub fn write_lines(
    w: &mut dyn Write,
    event: Option<&str>,
    items: &[(String, GpuFinding)],
) -> std::io::Result<()> {
    for (plugin, f) in items {
        serde_json::to_writer(&mut *w, &LogLine::new(event, plugin, f))?;
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// Replay a series through `runner` as fast as possible; every finding raised, in order.
pub fn replay_all(runner: &mut Runner, series: &Series) -> Vec<(String, GpuFinding)> {
    let mut raised = Vec::new();
    for tick in &series.ticks {
        raised.extend(runner.tick(tick.clone()).raised);
    }
    raised
}

/// The core's own replay, for comparing the plugin's answers with the native rules.
pub fn native_replay(series: &Series, engine: Option<&EngineSeries>) -> Vec<GpuFinding> {
    gpu::replay(series, engine, WatchConfig::default())
}
