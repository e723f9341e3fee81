//! The GPU rules, run one tick at a time.
//!
//! [`GpuWatch::observe`] takes every GPU's sample of one tick and the engine's latest sample
//! and returns the findings active after it. A condition must hold for
//! [`WatchConfig::sustain_s`] before it is raised (one odd sample is not an incident) and stay
//! false as long before it clears; event rules (XID, ECC) stay active for
//! [`WatchConfig::event_hold_s`] after the last event. A finding keeps the time, title and
//! evidence of the sample that raised it, so a host can tell "new" from "still active" by
//! `(gpu, rule, t)`.
//!
//! The rules (ids shared with the text analyzer where they mean the same):
//! - `slow-gpu`: a busy GPU whose median SM clock over the window is below
//!   [`WatchConfig::slow_ratio`] × its busy peers' median — the straggler every tensor-parallel
//!   step waits for — with its clock-event reasons decoded.
//! - `gpu-power-cap`: a busy GPU held below its maximum SM clock by the SW power cap (0x4).
//!   Expected at full load (that is how a GPU stays at its limit), so low confidence; it explains
//!   lower decode speed and matters when peers run faster or the limit was lowered.
//! - `gpu-hw-throttle`: HW slowdown, SW/HW thermal or HW power brake (0x8, 0x20, 0x40, 0x80).
//! - `kv-leak`: device memory full, utilisation 0, and the engine says nothing runs — blocks
//!   held by requests that ended without being released (or a stray process). Needs the engine
//!   sample: an idle vLLM holds its pre-allocated KV pool, so memory alone says nothing; with
//!   the engine's KV usage known and near 0 the pool is simply empty and nothing is raised.
//! - `throughput-zero`: the engine has requests running but its generation-token counter has
//!   not moved for [`WatchConfig::stall_s`].
//! - `gpu-xid`, `gpu-ecc`: an XID event; a rising uncorrected-ECC counter.

use super::engine::EngineSample;
use super::sample::{GIB, GpuSample, REASON_IDLE, REASON_SW_POWER_CAP, REASONS_HW, reason_names};
use super::xid::{self, Severity};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use triage_report::Class;

/// Thresholds of the rules. The defaults suit 1–10 Hz sampling.
#[derive(Clone, Debug, PartialEq)]
pub struct WatchConfig {
    /// A condition holds this long (seconds) before it is raised, and is false this long
    /// before it clears.
    pub sustain_s: f64,
    /// Window for each GPU's median SM clock (seconds).
    pub window_s: f64,
    /// A busy GPU below this share of its peers' median SM clock is a straggler.
    pub slow_ratio: f64,
    /// A GPU below this share of its maximum SM clock counts as held down by the power cap.
    pub cap_clock_share: f64,
    /// Device memory at or above this share counts as full.
    pub mem_full_share: f64,
    /// Engine KV usage below this (0–1) means its pool is empty.
    pub kv_empty: f64,
    /// Requests running with no new generated token for this long is throughput zero (seconds).
    pub stall_s: f64,
    /// XID and ECC findings stay active this long after the last event (seconds).
    pub event_hold_s: f64,
}

impl Default for WatchConfig {
    fn default() -> WatchConfig {
        WatchConfig {
            sustain_s: 2.0,
            window_s: 10.0,
            slow_ratio: crate::peers::SLOW_RATIO,
            cap_clock_share: 0.97,
            mem_full_share: 0.9,
            kv_empty: 0.05,
            stall_s: 5.0,
            event_hold_s: 60.0,
        }
    }
}

/// One finding of the GPU rules.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuFinding {
    /// Unix time of the sample that raised it, seconds.
    pub t: f64,
    /// The GPU; `None` for node-wide findings.
    pub gpu: Option<u32>,
    /// The finding's class.
    pub class: Class,
    /// The rule's id (kebab-case).
    pub rule: String,
    /// Short name of the problem.
    pub title: String,
    /// 0–1.
    pub confidence: f64,
    /// The readings that raised it, one per line.
    pub evidence: Vec<String>,
    /// What to do, in one sentence.
    pub remediation: String,
}

/// The GPU rules' ids: what the built-in rules raise (a plugin may raise others; a finding's
/// `rule` is the string the runner exports, [`GpuRule::as_str`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GpuRule {
    /// `slow-gpu`: a GPU's SM clock well below its busy peers'.
    SlowGpu,
    /// `gpu-power-cap`: a busy GPU held at its power limit (context, not a fault).
    GpuPowerCap,
    /// `gpu-hw-throttle`: the hardware holds the clock down (thermal, power brake).
    GpuHwThrottle,
    /// `kv-leak`: the KV cache full while nothing runs.
    KvLeak,
    /// `throughput-zero`: requests running, no token generated.
    ThroughputZero,
    /// `gpu-xid`: the driver reported an XID error.
    GpuXid,
    /// `gpu-ecc`: uncorrected ECC errors.
    GpuEcc,
}

impl GpuRule {
    /// Every built-in GPU rule, for hosts that list what the rules can report.
    pub const ALL: [GpuRule; 7] = [
        GpuRule::SlowGpu,
        GpuRule::GpuPowerCap,
        GpuRule::GpuHwThrottle,
        GpuRule::KvLeak,
        GpuRule::ThroughputZero,
        GpuRule::GpuXid,
        GpuRule::GpuEcc,
    ];

    /// The id as findings and the exported metrics write it.
    pub const fn as_str(self) -> &'static str {
        match self {
            GpuRule::SlowGpu => "slow-gpu",
            GpuRule::GpuPowerCap => "gpu-power-cap",
            GpuRule::GpuHwThrottle => "gpu-hw-throttle",
            GpuRule::KvLeak => "kv-leak",
            GpuRule::ThroughputZero => "throughput-zero",
            GpuRule::GpuXid => "gpu-xid",
            GpuRule::GpuEcc => "gpu-ecc",
        }
    }

    /// The class of its findings.
    pub const fn class(self) -> Class {
        match self {
            GpuRule::SlowGpu | GpuRule::GpuPowerCap | GpuRule::GpuHwThrottle => Class::TbtTail,
            GpuRule::KvLeak | GpuRule::ThroughputZero | GpuRule::GpuXid | GpuRule::GpuEcc => {
                Class::ThroughputZero
            }
        }
    }

    /// Whether a finding's `rule` is this one.
    pub fn is(self, rule: &str) -> bool {
        self.as_str() == rule
    }
}

impl From<GpuRule> for String {
    fn from(r: GpuRule) -> String {
        r.as_str().to_owned()
    }
}

/// A finding's `rule` compares with a GPU rule: `finding.rule == GpuRule::GpuXid`.
impl PartialEq<GpuRule> for String {
    fn eq(&self, r: &GpuRule) -> bool {
        r.is(self)
    }
}

impl PartialEq<GpuRule> for &str {
    fn eq(&self, r: &GpuRule) -> bool {
        r.is(self)
    }
}

/// A sustained condition.
#[derive(Clone, Debug, Default)]
struct Cond {
    /// When it last became true.
    since: Option<f64>,
    /// When it last became false while raised.
    false_since: Option<f64>,
    raised: Option<GpuFinding>,
}

impl Cond {
    /// Feed whether the condition holds at `now`; `make` builds the finding when it is raised.
    fn update(&mut self, now: f64, holds: bool, cfg: &WatchConfig, make: impl FnOnce() -> GpuFinding) {
        if holds {
            self.false_since = None;
            let since = *self.since.get_or_insert(now);
            if self.raised.is_none() && now - since >= cfg.sustain_s {
                self.raised = Some(make());
            }
        } else {
            self.since = None;
            if self.raised.is_some() {
                let f = *self.false_since.get_or_insert(now);
                if now - f >= cfg.sustain_s {
                    self.raised = None;
                    self.false_since = None;
                }
            }
        }
    }
}

/// Most samples kept per GPU for the window (10 Hz × 10 s = 100; more is a faster source).
const MAX_WINDOW_SAMPLES: usize = 1024;
/// Most GPUs tracked; samples of further indices are ignored (no node has more).
const MAX_GPUS: usize = 64;
/// Most event findings held at once.
const MAX_EVENTS: usize = 256;

#[derive(Debug, Default)]
struct GpuState {
    /// (t, SM clock) of busy samples within the window.
    busy_clocks: VecDeque<(f64, u32)>,
    /// The same clocks, ascending: the window's median without sorting it every tick (a long
    /// recording at 10 Hz took a seventh of its reading time sorting).
    busy_sorted: Vec<u32>,
    /// Non-idle reason bits seen in the window's busy samples.
    busy_reasons: VecDeque<(f64, u64)>,
    last: Option<GpuSample>,
    last_ecc: Option<u64>,
    slow: Cond,
    cap: Cond,
    hw: Cond,
    leak: Cond,
}

/// State of the GPU rules between ticks. Bounded: at most [`MAX_GPUS`] GPUs × the window.
#[derive(Debug, Default)]
pub struct GpuWatch {
    cfg: WatchConfig,
    gpus: BTreeMap<u32, GpuState>,
    /// Generation-token counter and when it last moved.
    gen_moved: Option<(f64, f64)>,
    stall: Cond,
    /// Event findings (XID, ECC) with the time they expire.
    events: Vec<(f64, GpuFinding)>,
}

/// `1440 of 1980 MHz`; `1440 MHz` when the source gives no maximum (nvidia-smi dmon).
fn of(v: Option<String>, max: Option<String>, unit: &str) -> String {
    match max {
        Some(max) => format!("{} of {max} {unit}", v.as_deref().unwrap_or("?")),
        None => format!("{} {unit}", v.as_deref().unwrap_or("?")),
    }
}

/// The median of ascending values, as [`triage_base::stats::median`] gives it (the middle one, or the mean of the
/// middle two computed as numpy's linear interpolation does).
fn sorted_median(sorted: &[u32]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(f64::from(sorted[n / 2])),
        _ => Some(triage_base::stats::quantile_sorted(
            &[f64::from(sorted[n / 2 - 1]), f64::from(sorted[n / 2])],
            0.5,
        )),
    }
}

fn describe_engine(e: &EngineSample) -> String {
    let mut parts = Vec::new();
    let n = |v: Option<f64>| v.map_or_else(|| "?".to_owned(), |v| format!("{v:.0}"));
    parts.push(format!("running {}", n(e.running)));
    parts.push(format!("waiting {}", n(e.waiting)));
    if let Some(k) = e.kv_usage {
        parts.push(format!("KV usage {:.1} %", k * 100.0));
    }
    if let Some(g) = e.generation_tokens_total {
        parts.push(format!("generation tokens {g:.0}"));
    }
    format!("engine t={:.1}: {}", e.t, parts.join(", "))
}

impl GpuWatch {
    /// A watch with no GPU tracked yet.
    pub fn new(cfg: WatchConfig) -> GpuWatch {
        GpuWatch { cfg, ..GpuWatch::default() }
    }

    /// GPUs tracked so far.
    pub fn gpu_count(&self) -> usize {
        self.gpus.len()
    }

    /// The thresholds it applies.
    pub fn config(&self) -> &WatchConfig {
        &self.cfg
    }

    /// Feed one tick: every GPU's sample (any order) and the engine's latest sample. Returns
    /// the findings active after it, ordered by time raised, GPU, rule.
    pub fn observe(&mut self, samples: &[GpuSample], engine: Option<&EngineSample>) -> Vec<GpuFinding> {
        let cfg = self.cfg.clone();
        let now = samples.iter().map(|s| s.t).filter(|t| t.is_finite()).fold(f64::NAN, f64::max);
        let now = if now.is_nan() { engine.map_or(0.0, |e| e.t) } else { now };

        for s in samples.iter().filter(|s| s.t.is_finite()) {
            if !self.gpus.contains_key(&s.gpu) && self.gpus.len() >= MAX_GPUS {
                continue;
            }
            let st = self.gpus.entry(s.gpu).or_default();
            if s.busy() {
                if let Some(c) = s.sm_clock_mhz {
                    st.busy_clocks.push_back((s.t, c));
                    let at = st.busy_sorted.partition_point(|x| *x < c);
                    st.busy_sorted.insert(at, c);
                }
                st.busy_reasons.push_back((s.t, s.reasons() & !REASON_IDLE));
            }
            while st.busy_clocks.front().is_some_and(|(t, _)| s.t - t > cfg.window_s)
                || st.busy_clocks.len() > MAX_WINDOW_SAMPLES
            {
                if let Some((_, c)) = st.busy_clocks.pop_front()
                    && let Ok(at) = st.busy_sorted.binary_search(&c)
                {
                    st.busy_sorted.remove(at);
                }
            }
            while st.busy_reasons.front().is_some_and(|(t, _)| s.t - t > cfg.window_s)
                || st.busy_reasons.len() > MAX_WINDOW_SAMPLES
            {
                st.busy_reasons.pop_front();
            }
            self.events_of(s);
            if let Some(st) = self.gpus.get_mut(&s.gpu) {
                st.last = Some(s.clone());
            }
        }

        self.straggler(now, samples, &cfg);
        for s in samples {
            let Some(st) = self.gpus.get_mut(&s.gpu) else { continue };
            let r = s.reasons();
            let below_max = match (s.sm_clock_mhz, s.max_sm_clock_mhz) {
                (Some(c), Some(m)) if m > 0 => f64::from(c) < cfg.cap_clock_share * f64::from(m),
                _ => true,
            };
            st.cap.update(now, s.busy() && r & REASON_SW_POWER_CAP != 0 && below_max, &cfg, || power_cap(s));
            st.hw.update(now, r & REASONS_HW != 0, &cfg, || hw_throttle(s));
            let leak = leak_holds(s, engine, &cfg);
            st.leak.update(now, leak.is_some(), &cfg, || kv_leak(s, engine, leak.unwrap_or(0.0)));
        }
        self.throughput(now, engine, &cfg);

        self.events.retain(|(until, _)| *until >= now);
        let mut out: Vec<GpuFinding> = Vec::new();
        for st in self.gpus.values() {
            for c in [&st.slow, &st.cap, &st.hw, &st.leak] {
                out.extend(c.raised.iter().cloned());
            }
        }
        out.extend(self.stall.raised.iter().cloned());
        out.extend(self.events.iter().map(|(_, f)| f.clone()));
        triage_base::sort::sort_by(&mut out, |a, b| {
            a.t.total_cmp(&b.t).then(a.gpu.cmp(&b.gpu)).then(a.rule.cmp(&b.rule))
        });
        out
    }

    fn events_of(&mut self, s: &GpuSample) {
        let hold = self.cfg.event_hold_s;
        for x in s.xid.iter().take(16) {
            let (meaning, sev) = xid::describe(x.code);
            let t = if x.t.is_finite() { x.t } else { s.t };
            let key = format!("XID {}", x.code);
            // The same code again extends the one finding.
            if let Some((until, _)) = self
                .events
                .iter_mut()
                .find(|(_, f)| f.gpu == Some(s.gpu) && f.rule == GpuRule::GpuXid && f.title.contains(&key))
            {
                *until = t + hold;
                continue;
            }
            let (confidence, remediation) = match sev {
                Severity::Fatal => (
                    0.9,
                    "Drain the node now: the GPU needs a reset (`nvidia-smi -r -i N` with no process on it) or the machine a reboot; if the XID repeats, replace the GPU. Check `dmesg | grep -i xid` for the full record.",
                ),
                Severity::App => (
                    0.6,
                    "The process on this GPU hit a fault: check the engine's log at this time; restart the worker if it stopped serving. Repeated on one GPU only, suspect the hardware.",
                ),
                Severity::Watch => (
                    0.4,
                    "Record it and watch for repeats (`dmesg | grep -i xid`); a rising count on one GPU is the early sign of a failing board.",
                ),
            };
            self.push_event(
                t + hold,
                GpuFinding {
                    t,
                    gpu: Some(s.gpu),
                    class: Class::ThroughputZero,
                    rule: GpuRule::GpuXid.into(),
                    title: format!("GPU {} reported {key}: {meaning}", s.gpu),
                    confidence,
                    evidence: vec![format!("t={t:.1} GPU {} {key}", s.gpu), s.describe()],
                    remediation: remediation.into(),
                },
            );
        }
        let st = self.gpus.entry(s.gpu).or_default();
        if let Some(now) = s.ecc_uncorrected {
            let before = st.last_ecc.replace(now);
            if let Some(before) = before.filter(|b| now > *b) {
                let finding = GpuFinding {
                    t: s.t,
                    gpu: Some(s.gpu),
                    class: Class::ThroughputZero,
                    rule: GpuRule::GpuEcc.into(),
                    title: format!("GPU {} uncorrected ECC errors rose from {before} to {now}", s.gpu),
                    confidence: 0.8,
                    evidence: vec![s.describe(), format!("ecc_uncorrected {before} → {now}")],
                    remediation: "Drain the node: uncorrectable memory errors corrupt results and end in XID 48/94/95. Reset the GPU so rows are remapped (`nvidia-smi -q -d ROW_REMAPPER` shows pending remaps); replace it if errors keep coming.".into(),
                };
                self.events.retain(|(_, f)| !(f.gpu == Some(s.gpu) && f.rule == GpuRule::GpuEcc));
                self.push_event(s.t + hold, finding);
            }
        }
    }

    fn push_event(&mut self, until: f64, f: GpuFinding) {
        if self.events.len() >= MAX_EVENTS {
            self.events.remove(0);
        }
        self.events.push((until, f));
    }

    fn straggler(&mut self, now: f64, samples: &[GpuSample], cfg: &WatchConfig) {
        let medians: Vec<(u32, f64)> = self
            .gpus
            .iter()
            .filter(|(_, st)| st.last.as_ref().is_some_and(GpuSample::busy))
            .filter_map(|(g, st)| sorted_median(&st.busy_sorted).map(|m| (*g, m)))
            .collect();
        let indices: Vec<u32> = self.gpus.keys().copied().collect();
        for g in indices {
            let mine = medians.iter().find(|(i, _)| *i == g).map(|(_, m)| *m);
            let (peer_median, peer_count) = crate::peers::peers_of(&medians, g);
            let holds = matches!((mine, peer_median), (Some(m), Some(p)) if crate::peers::straggles(m, p, cfg.slow_ratio));
            let Some(st) = self.gpus.get_mut(&g) else { continue };
            let sample = samples.iter().find(|s| s.gpu == g).or(st.last.as_ref()).cloned();
            let reasons = st.busy_reasons.iter().fold(0, |acc, (_, r)| acc | r);
            st.slow.update(now, holds, cfg, || {
                let m = mine.unwrap_or(0.0);
                let p = peer_median.unwrap_or(0.0);
                straggler(
                    sample.as_ref(),
                    Straggler { gpu: g, clock_mhz: m, peers_mhz: p, peer_count, reasons },
                )
            });
        }
    }

    fn throughput(&mut self, now: f64, engine: Option<&EngineSample>, cfg: &WatchConfig) {
        let Some(e) = engine else {
            self.stall.update(now, false, cfg, unreachable_finding);
            return;
        };
        if let Some(g) = e.generation_tokens_total {
            match self.gen_moved {
                Some((v, _)) if v == g => {}
                _ => self.gen_moved = Some((g, e.t)),
            }
        }
        let running = e.running.unwrap_or(0.0);
        let stalled_for = self.gen_moved.map(|(_, since)| e.t - since);
        let holds = running > 0.0 && stalled_for.is_some_and(|s| s >= cfg.stall_s);
        let utils: Vec<String> = self
            .gpus
            .iter()
            .filter_map(|(g, st)| {
                st.last.as_ref().and_then(|s| s.util_gpu_pct).map(|u| format!("GPU {g} util {u} %"))
            })
            .collect();
        let all_idle = !utils.is_empty()
            && self
                .gpus
                .values()
                .all(|st| st.last.as_ref().and_then(|s| s.util_gpu_pct).is_some_and(|u| u == 0));
        self.stall.update(now, holds, cfg, || {
            let secs = stalled_for.unwrap_or(0.0);
            let mut evidence = vec![describe_engine(e)];
            if !utils.is_empty() {
                evidence.push(utils.join(", "));
            }
            GpuFinding {
                t: now,
                gpu: None,
                class: Class::ThroughputZero,
                rule: GpuRule::ThroughputZero.into(),
                title: format!("Throughput zero: {running:.0} requests running, no token generated for {secs:.0} s"),
                confidence: if all_idle { 0.8 } else { 0.65 },
                evidence,
                remediation: if all_idle {
                    "The engine holds requests but the GPUs do nothing: the scheduler or a worker is stuck. Take a stack dump (`py-spy dump --pid <engine pid>`), check the engine log for the last step, then restart the worker.".into()
                } else {
                    "The GPUs are busy but no token comes out: a collective may be hung (NCCL spins at 100 % utilisation). Set NCCL_DEBUG=INFO and TORCH_NCCL_ASYNC_ERROR_HANDLING=1 and check every rank's log for the last collective; restart the replica.".into()
                },
            }
        });
    }
}

/// `Cond::update` with `holds = false` never calls `make`.
fn unreachable_finding() -> GpuFinding {
    GpuFinding {
        t: 0.0,
        gpu: None,
        class: Class::ThroughputZero,
        rule: String::new(),
        title: String::new(),
        confidence: 0.0,
        evidence: Vec::new(),
        remediation: String::new(),
    }
}

/// A GPU whose clock stays below its busy peers': which, both medians (MHz), how many peers
/// the peers' median is of, and the clock-event reason bits seen while it was busy.
struct Straggler {
    gpu: u32,
    clock_mhz: f64,
    peers_mhz: f64,
    peer_count: usize,
    reasons: u64,
}

fn straggler(s: Option<&GpuSample>, straggler: Straggler) -> GpuFinding {
    let Straggler { gpu: g, clock_mhz: mine, peers_mhz: peers, peer_count, reasons } = straggler;
    let names = reason_names(reasons);
    let why = if names.is_empty() { "no clock-event reason reported".to_owned() } else { names.join(", ") };
    let hw = reasons & REASONS_HW != 0;
    let mut evidence = Vec::new();
    if let Some(s) = s {
        evidence.push(s.describe());
    }
    evidence.push(format!(
        "GPU {g} median SM clock {mine:.0} MHz vs {peers:.0} MHz, the median of {peer_count} busy peers"
    ));
    GpuFinding {
        t: s.map_or(0.0, |s| s.t),
        gpu: Some(g),
        class: Class::TbtTail,
        rule: GpuRule::SlowGpu.into(),
        title: format!("GPU {g} is a straggler: SM {mine:.0} MHz vs its peers' {peers:.0} MHz ({why})"),
        confidence: if names.is_empty() { 0.7 } else { 0.8 },
        evidence,
        remediation: if hw {
            "Drain the node or replica: every tensor-parallel step waits for this GPU. Thermal reasons → cooling (fans, inlet air); HW slowdown / power brake → power delivery (PSU, cables, BMC log). Reseat or replace the GPU if it persists.".into()
        } else if reasons & REASON_SW_POWER_CAP != 0 {
            "Compare power limits: `nvidia-smi -q -d POWER` on every GPU; a lower enforced limit on this one holds its clock down. Restore it with `nvidia-smi -i N -pl W`; if the limits match, check cooling and power delivery.".into()
        } else {
            "Check the GPU's clocks and limits (`nvidia-smi -q -d CLOCK,POWER,PERFORMANCE`), application clocks (`nvidia-smi -rac`) and whether another process shares it; drain the replica if it persists.".into()
        },
    }
}

fn power_cap(s: &GpuSample) -> GpuFinding {
    let watts = |mw: Option<u32>| mw.map(|v| format!("{:.0}", f64::from(v) / 1e3));
    let clock = |c: Option<u32>| c.map(|c| c.to_string());
    GpuFinding {
        t: s.t,
        gpu: Some(s.gpu),
        class: Class::TbtTail,
        rule: GpuRule::GpuPowerCap.into(),
        title: format!(
            "GPU {} held at its power limit (SW power cap): SM {} at {}",
            s.gpu,
            of(clock(s.sm_clock_mhz), clock(s.max_sm_clock_mhz), "MHz"),
            of(watts(s.power_mw), watts(s.power_limit_mw), "W"),
        ),
        confidence: 0.3,
        evidence: vec![s.describe()],
        remediation: "Expected under full load: a GPU at its power limit lowers its clock to stay there, and decode steps slow with it. Act when peers run faster (slow-gpu) or the enforced limit is below the board's default (`nvidia-smi -q -d POWER`: restore with `nvidia-smi -i N -pl W`).".into(),
    }
}

fn hw_throttle(s: &GpuSample) -> GpuFinding {
    let names = reason_names(s.reasons() & REASONS_HW);
    GpuFinding {
        t: s.t,
        gpu: Some(s.gpu),
        class: Class::TbtTail,
        rule: GpuRule::GpuHwThrottle.into(),
        title: format!(
            "GPU {} throttled by {}: SM {}",
            s.gpu,
            names.join(", "),
            of(s.sm_clock_mhz.map(|c| c.to_string()), s.max_sm_clock_mhz.map(|c| c.to_string()), "MHz")
        ),
        confidence: 0.6,
        evidence: vec![s.describe()],
        remediation: "The hardware, not the workload, holds the clock down. Thermal → cooling (fans, inlet air, heatsink; `nvidia-smi -q -d TEMPERATURE`); HW slowdown / power brake → power delivery (PSU, cables, BMC event log). Drain the GPU if it persists.".into(),
    }
}

/// The confidence of a KV leak when its condition holds on `s`.
fn leak_holds(s: &GpuSample, engine: Option<&EngineSample>, cfg: &WatchConfig) -> Option<f64> {
    let e = engine?;
    let full = s.mem_share()? >= cfg.mem_full_share;
    let idle = s.util_gpu_pct? == 0;
    let nothing_runs = e.running? == 0.0;
    if !(full && idle && nothing_runs) {
        return None;
    }
    match e.kv_usage {
        Some(k) if k < cfg.kv_empty => None,
        Some(k) if k >= 0.5 => Some(if e.waiting.unwrap_or(0.0) > 0.0 { 0.85 } else { 0.75 }),
        _ => Some(if e.waiting.unwrap_or(0.0) > 0.0 { 0.6 } else { 0.5 }),
    }
}

fn kv_leak(s: &GpuSample, engine: Option<&EngineSample>, confidence: f64) -> GpuFinding {
    let used = s.mem_used_bytes.unwrap_or(0) as f64 / GIB;
    let total = s.mem_total_bytes.unwrap_or(0) as f64 / GIB;
    let mut evidence = vec![s.describe()];
    if let Some(e) = engine {
        evidence.push(describe_engine(e));
    }
    GpuFinding {
        t: s.t,
        gpu: Some(s.gpu),
        class: Class::ThroughputZero,
        rule: GpuRule::KvLeak.into(),
        title: format!(
            "GPU {} memory full ({used:.1} of {total:.1} GiB) at utilisation 0 while the engine runs nothing",
            s.gpu
        ),
        confidence,
        evidence,
        remediation: "Requests that ended on the client side were never aborted and keep their KV blocks (or another process holds the memory: `nvidia-smi --query-compute-apps=pid,used_memory --format=csv`). Abort on client timeout or disconnect, cap max_tokens, alert on KV usage with zero running requests, and restart the worker to recover now.".into(),
    }
}

#[cfg(test)]
mod median_tests {
    /// The kept-sorted window gives the median sorting the window gave, bit for bit.
    #[test]
    fn the_sorted_window_median_is_the_median() {
        let mut x: u64 = 7;
        for n in 0..40usize {
            let mut v: Vec<u32> = (0..n)
                .map(|_| {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    (x >> 33) as u32 % 2_000
                })
                .collect();
            let mut f: Vec<f64> = v.iter().map(|c| f64::from(*c)).collect();
            let want = triage_base::stats::median(&mut f);
            triage_base::sort::sort_by(&mut v, |a, b| a.cmp(b));
            assert_eq!(super::sorted_median(&v).map(f64::to_bits), want.map(f64::to_bits), "{v:?}");
        }
    }
}
