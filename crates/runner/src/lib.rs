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
pub mod input;
pub mod nvml;
pub mod out;
pub mod scrape;

use std::collections::HashMap;
use std::hash::Hash;
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
    pub engine_error: Option<scrape::ScrapeError>,
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
                    *self.counters.engine_failures.entry(e.kind.as_str().to_owned()).or_default() += 1;
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
        // Raised/cleared per plugin, by the finding's identity (core's `GpuFinding::same_as`),
        // in time linear in the findings.
        let (raised, cleared) = changes(
            &self.active,
            &now,
            |(p, f)| (p.clone(), f.gpu, f.rule.clone()),
            |(p, f), (q, g)| p == q && f.same_as(g),
        );
        for item in raised {
            *self.counters.raised.entry(item.1.rule.clone()).or_default() += 1;
            out.raised.push(item.clone());
        }
        out.cleared = cleared.into_iter().cloned().collect();
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
        let (plugins, loaded) = match &self.rules {
            Rules::Plugins(h) => (h.status(), Some(h.loaded(host::World::GpuRules))),
            Rules::Builtin(_) => (Vec::new(), None),
        };
        let c = Counters { plugins_loaded: loaded, ..self.counters.clone() };
        export::render(self.meta.as_ref(), &self.last_samples, &self.active, &plugins, &c)
    }
}

/// Write findings as JSON lines (`event` = `raised` / `cleared`, or none).
pub fn write_lines(
    w: &mut dyn Write,
    event: Option<&str>,
    items: &[(String, GpuFinding)],
) -> std::io::Result<()> {
    for (plugin, f) in items {
        let line = out::json_line(&LogLine::new(event, plugin, f))?;
        w.write_all(line.as_bytes())?;
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// A finding as text (`replay --format text`): a head line and one indented line per piece of
/// evidence, each made safe for a terminal.
pub fn finding_text(plugin: &str, f: &GpuFinding) -> String {
    let mut s = out::line(&format!(
        "t={:.1} {} [{}] {} (confidence {:.2}, {plugin})",
        f.t,
        f.class.as_str(),
        f.rule,
        f.title,
        f.confidence
    ))
    .into_owned();
    s.push('\n');
    for e in &f.evidence {
        s.push_str("    ");
        s.push_str(&out::line(e));
        s.push('\n');
    }
    s
}

/// The items of `now` not in `before` (raised) and of `before` not in `now` (cleared), in
/// their order, where `same` tells identity. Linear: items are grouped by `bucket` (which two
/// items that are the same must share) and `same` is asked only within a group.
pub fn changes<'a, T, K: Hash + Eq>(
    before: &'a [T],
    now: &'a [T],
    bucket: impl Fn(&T) -> K,
    same: impl Fn(&T, &T) -> bool,
) -> (Vec<&'a T>, Vec<&'a T>) {
    let group = |items: &'a [T]| {
        let mut m: HashMap<K, Vec<&'a T>> = HashMap::with_capacity(items.len());
        for it in items {
            m.entry(bucket(it)).or_default().push(it);
        }
        m
    };
    let (b, n) = (group(before), group(now));
    let missing = |item: &T, other: &HashMap<K, Vec<&'a T>>| {
        other.get(&bucket(item)).is_none_or(|peers| !peers.iter().any(|p| same(p, item)))
    };
    let raised = now.iter().filter(|it| missing(it, &b)).collect();
    let cleared = before.iter().filter(|it| missing(it, &n)).collect();
    (raised, cleared)
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

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    /// How many identity checks telling raised from cleared takes for `n` findings before and
    /// after (half of them the same): the tick's work must grow linearly with the GPUs.
    fn identity_checks(n: u32) -> usize {
        let finding = |gpu: u32, t: f64| GpuFinding {
            t,
            gpu: Some(gpu),
            class: triage_core::analyze::report::Class::TbtTail,
            rule: gpu::GpuRule::SlowGpu.into(),
            title: format!("GPU {gpu} slow"),
            confidence: 0.5,
            evidence: Vec::new(),
            remediation: String::new(),
        };
        let before: Vec<(String, GpuFinding)> = (0..n).map(|g| ("p".to_owned(), finding(g, 1.0))).collect();
        let now: Vec<(String, GpuFinding)> =
            (0..n).map(|g| ("p".to_owned(), finding(g, if g % 2 == 0 { 1.0 } else { 2.0 }))).collect();
        let checks = Cell::new(0usize);
        let (raised, cleared) = changes(
            &before,
            &now,
            |(p, f)| (p.clone(), f.gpu, f.rule.clone()),
            |(p, f), (q, g)| {
                checks.set(checks.get() + 1);
                p == q && f.same_as(g)
            },
        );
        assert_eq!((raised.len(), cleared.len()), ((n / 2) as usize, (n / 2) as usize));
        assert!(raised.iter().all(|(_, f)| f.t == 2.0) && cleared.iter().all(|(_, f)| f.t == 1.0));
        checks.get()
    }

    #[test]
    fn telling_raised_from_cleared_is_linear_in_the_findings() {
        let (small, large) = (identity_checks(2_000), identity_checks(8_000));
        assert_eq!(small, 2 * 2_000, "one check per finding on each side");
        assert_eq!(large, 4 * small, "4× the findings, 4× the work (was n²: 16×)");
    }

    #[test]
    fn text_findings_are_safe_for_a_terminal() {
        let f = GpuFinding {
            t: 1.0,
            gpu: Some(0),
            class: triage_core::analyze::report::Class::TbtTail,
            rule: "r".into(),
            title: "title \x1b]0;pwned\x07 \u{9b}2J".into(),
            confidence: 0.5,
            evidence: vec!["ev\nforged".into()],
            remediation: String::new(),
        };
        let text = finding_text("plug\x1b[31m", &f);
        assert!(!text.contains('\x1b') && !text.contains('\u{9b}') && !text.contains('\x07'), "{text}");
        assert!(text.contains("\\x1b]0;pwned\\x07 \\u009b2J"), "{text}");
        assert_eq!(text.lines().count(), 2, "{text}");
        let mut json = Vec::new();
        write_lines(&mut json, None, &[("p".into(), f)]).unwrap();
        let json = String::from_utf8(json).unwrap();
        assert!(!json.contains('\x1b') && !json.contains('\u{9b}'), "{json}");
    }
}
