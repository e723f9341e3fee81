//! A whole GPU recording judged by the GPU rules, one sample at a time, in bounded memory.
//!
//! [`Recording`] takes the samples of a recording in the order they were written (the runner's
//! NVML JSON lines; any GPU time series turned into [`GpuSample`]s), groups them into ticks as
//! [`super::Series::parse`] does, runs [`GpuWatch`] over each tick as `triage-runner replay`
//! does, and keeps, for every finding raised, the span it held, the worst and typical readings
//! of its GPU while it held, the time and line of the sample that showed it, and the peers it
//! was compared with. Nothing else is kept: memory is the rules' window plus the findings, so a
//! 24-hour recording of eight GPUs at 1 Hz reads like a short one.

use std::collections::BTreeMap;

use super::sample::GpuSample;
use super::series::TICK_GAP_S;
use super::watch::{GpuFinding, GpuWatch, WatchConfig};

/// Most findings kept; later ones are counted in [`Finished::dropped`].
pub const MAX_HELD: usize = 1_000;
/// Most points of one GPU's curve ([`Curve`]): enough for a chart of any length of recording.
pub const MAX_CURVE_POINTS: usize = 400;
/// Most GPUs drawn.
const MAX_CURVES: usize = 64;

/// One quantity of one GPU over the whole recording, in bounded memory: the mean of each time
/// bucket; when the buckets outgrow [`MAX_CURVE_POINTS`], pairs are merged and the bucket width
/// doubles, so a day reads in as many points as a minute.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Curve {
    width_s: f64,
    /// (bucket index, sum of t, sum of values, count).
    buckets: Vec<(u64, f64, f64, u64)>,
}

impl Curve {
    fn add(&mut self, since_s: f64, v: f64) {
        if self.width_s == 0.0 {
            self.width_s = 1.0;
        }
        let k = (since_s.max(0.0) / self.width_s) as u64;
        match self.buckets.last_mut() {
            Some(b) if b.0 == k => {
                b.1 += since_s;
                b.2 += v;
                b.3 += 1;
            }
            _ => self.buckets.push((k, since_s, v, 1)),
        }
        if self.buckets.len() > MAX_CURVE_POINTS {
            self.width_s *= 2.0;
            let mut merged: Vec<(u64, f64, f64, u64)> = Vec::with_capacity(MAX_CURVE_POINTS / 2 + 1);
            for b in self.buckets.drain(..) {
                match merged.last_mut() {
                    Some(m) if m.0 == b.0 / 2 => {
                        m.1 += b.1;
                        m.2 += b.2;
                        m.3 += b.3;
                    }
                    _ => merged.push((b.0 / 2, b.1, b.2, b.3)),
                }
            }
            self.buckets = merged;
        }
    }

    /// `[seconds from the recording's first tick, mean value]` per bucket, in time order.
    pub fn points(&self) -> Vec<[f64; 2]> {
        self.buckets.iter().map(|b| [b.1 / b.3 as f64, b.2 / b.3 as f64]).collect()
    }
}

/// Readings of one quantity over a span: the worst, the sum and count for the typical (mean).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Span {
    /// Lowest value seen.
    pub min: f64,
    /// Highest value seen.
    pub max: f64,
    sum: f64,
    count: u64,
}

impl Span {
    fn add(&mut self, v: f64) {
        if self.count == 0 {
            self.min = v;
            self.max = v;
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.sum += v;
        self.count += 1;
    }

    /// The mean of what was seen; `None` before the first reading.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }

    /// Readings seen.
    pub fn count(&self) -> u64 {
        self.count
    }
}

/// One finding of the GPU rules over a recording.
#[derive(Clone, Debug, PartialEq)]
pub struct Held {
    /// The finding as the rules raised it (time, GPU, rule, title, evidence of the raising
    /// sample).
    pub finding: GpuFinding,
    /// Line (1-based) of the raising GPU's sample in the tick that raised it (the tick's first
    /// sample for node-wide findings).
    pub line: usize,
    /// Unix seconds of the first tick that held it and of the last (the span).
    pub from_t: f64,
    /// Unix seconds of the last tick it was active in.
    pub to_t: f64,
    /// Whether it was still active at the end of the recording.
    pub open: bool,
    /// The GPU's SM clock (MHz) over the ticks it held, while busy.
    pub sm_clock_mhz: Span,
    /// The GPU's power draw (W) over the ticks it held, while busy.
    pub power_w: Span,
    /// The median SM clock (MHz) of the other busy GPUs of the tick that raised it: the peers
    /// it was compared with (`None` without busy peers).
    pub peers_sm_clock_mhz: Option<f64>,
    /// The other GPUs of that tick.
    pub peers: Vec<u32>,
}

/// The GPU rules over a recording, fed one sample at a time.
#[derive(Debug)]
pub struct Recording {
    watch: GpuWatch,
    /// The tick being read: its samples and, beside them, each one's line.
    tick: Vec<GpuSample>,
    lines: Vec<usize>,
    in_tick: std::collections::BTreeSet<u32>,
    /// Active findings by identity (GPU, rule, raising time) → index in `held`.
    active: BTreeMap<(Option<u32>, String, u64), usize>,
    held: Vec<Held>,
    dropped: usize,
    ticks: u64,
    gpus: std::collections::BTreeSet<u32>,
    first_t: Option<f64>,
    last_t: Option<f64>,
    /// Per GPU: its SM clock (MHz) and power draw (W) over the recording.
    curves: BTreeMap<u32, (Curve, Curve)>,
}

impl Recording {
    /// An empty recording judged with `cfg`.
    pub fn new(cfg: WatchConfig) -> Recording {
        Recording {
            watch: GpuWatch::new(cfg),
            tick: Vec::new(),
            lines: Vec::new(),
            in_tick: Default::default(),
            active: BTreeMap::new(),
            held: Vec::new(),
            dropped: 0,
            ticks: 0,
            gpus: Default::default(),
            first_t: None,
            last_t: None,
            curves: BTreeMap::new(),
        }
    }

    /// The next sample, read from line `line`. A tick ends where a GPU repeats or the time moves
    /// on by more than [`TICK_GAP_S`] ([`super::Series::parse`]'s rule).
    pub fn push(&mut self, sample: GpuSample, line: usize) {
        if !sample.t.is_finite() {
            return;
        }
        let new_tick = self.in_tick.contains(&sample.gpu)
            || self.tick.first().is_some_and(|first| (sample.t - first.t).abs() > TICK_GAP_S);
        if new_tick {
            self.flush();
        }
        if self.gpus.len() < 1024 {
            self.gpus.insert(sample.gpu);
        }
        let t0 = *self.first_t.get_or_insert(sample.t);
        if self.curves.len() < MAX_CURVES || self.curves.contains_key(&sample.gpu) {
            let (sm, power) = self.curves.entry(sample.gpu).or_default();
            if let Some(c) = sample.sm_clock_mhz {
                sm.add(sample.t - t0, f64::from(c));
            }
            if let Some(p) = sample.power_mw {
                power.add(sample.t - t0, f64::from(p) / 1000.0);
            }
        }
        self.in_tick.insert(sample.gpu);
        self.tick.push(sample);
        self.lines.push(line);
    }

    fn flush(&mut self) {
        if self.tick.is_empty() {
            return;
        }
        self.in_tick.clear();
        let (samples, lines) = (&self.tick, &self.lines);
        let now = samples.iter().map(|s| s.t).fold(f64::NEG_INFINITY, f64::max);
        self.last_t = Some(now);
        self.ticks += 1;
        let active_now = self.watch.observe(samples, None);
        let mut still = BTreeMap::new();
        for f in active_now {
            let key = (f.gpu, f.rule.clone(), f.t.to_bits());
            let idx = match self.active.remove(&key) {
                Some(i) => Some(i),
                None if self.held.len() < MAX_HELD => {
                    self.held.push(raised(f, samples, lines, now));
                    Some(self.held.len() - 1)
                }
                None => {
                    self.dropped += 1;
                    None
                }
            };
            if let Some(i) = idx {
                let h = &mut self.held[i];
                h.to_t = now;
                // Readings under load only: the rules compare busy GPUs, and a finding stays
                // active a little after the load ends (it clears once false for the sustain).
                if let Some(s) = samples.iter().find(|s| Some(s.gpu) == h.finding.gpu && s.busy()) {
                    if let Some(c) = s.sm_clock_mhz {
                        h.sm_clock_mhz.add(f64::from(c));
                    }
                    if let Some(p) = s.power_mw {
                        h.power_w.add(f64::from(p) / 1000.0);
                    }
                }
                still.insert(key, i);
            }
        }
        for (_, i) in std::mem::replace(&mut self.active, still) {
            self.held[i].open = false;
        }
        self.tick.clear();
        self.lines.clear();
    }

    /// The recording ended: every finding raised, in the order raised, with its span.
    pub fn finish(mut self) -> Finished {
        self.flush();
        Finished {
            held: self.held,
            dropped: self.dropped,
            ticks: self.ticks,
            gpus: self.gpus.into_iter().collect(),
            from_t: self.first_t,
            to_t: self.last_t,
            curves: self.curves.into_iter().map(|(g, (sm, power))| (g, sm, power)).collect(),
        }
    }
}

/// What a whole recording showed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Finished {
    /// Every finding raised, in the order raised.
    pub held: Vec<Held>,
    /// Findings past [`MAX_HELD`], counted.
    pub dropped: usize,
    /// Ticks read.
    pub ticks: u64,
    /// GPU indices seen.
    pub gpus: Vec<u32>,
    /// Unix seconds of the first tick.
    pub from_t: Option<f64>,
    /// Unix seconds of the last tick.
    pub to_t: Option<f64>,
    /// Per GPU (index order): its SM clock (MHz) and power draw (W) over the recording.
    pub curves: Vec<(u32, Curve, Curve)>,
}

/// A finding just raised in `tick` (each sample's line in `lines`), with the line of its GPU's
/// sample and its peers.
fn raised(f: GpuFinding, tick: &[GpuSample], lines: &[usize], now: f64) -> Held {
    let own = tick.iter().position(|s| Some(s.gpu) == f.gpu);
    let line = lines.get(own.unwrap_or(0)).copied().unwrap_or(0);
    let others: Vec<&GpuSample> = tick.iter().filter(|s| Some(s.gpu) != f.gpu).collect();
    let mut busy: Vec<f64> =
        others.iter().filter(|s| s.busy()).filter_map(|s| s.sm_clock_mhz.map(f64::from)).collect();
    let peers_sm_clock_mhz = triage_base::stats::median(&mut busy);
    Held {
        line,
        from_t: now,
        to_t: now,
        open: true,
        sm_clock_mhz: Span::default(),
        power_w: Span::default(),
        peers_sm_clock_mhz,
        peers: others.iter().map(|s| s.gpu).collect(),
        finding: f,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{GpuRule, Series};
    use triage_base::fixture;

    const H200: &str = fixture!("nvml/h200_series.jsonl");
    const H200X8: &str = fixture!("nvml/h200x8_one_slow.jsonl");

    fn record(text: &str) -> Finished {
        let mut r = Recording::new(WatchConfig::default());
        for (i, line) in text.lines().enumerate() {
            if let Ok(s) = serde_json::from_str::<GpuSample>(line) {
                r.push(s, i + 1);
            }
        }
        r.finish()
    }

    /// What `triage-runner replay` raises, as (rule, GPU, time) — the same, one sample at a time.
    #[test]
    fn the_same_findings_as_the_runners_replay() {
        for text in [H200, H200X8] {
            let replayed = crate::replay(&Series::parse(text), None, WatchConfig::default());
            let recorded = record(text);
            let a: Vec<(&str, Option<u32>, u64)> =
                replayed.iter().map(|f| (f.rule.as_str(), f.gpu, f.t.to_bits())).collect();
            let b: Vec<(&str, Option<u32>, u64)> = recorded
                .held
                .iter()
                .map(|h| (h.finding.rule.as_str(), h.finding.gpu, h.finding.t.to_bits()))
                .collect();
            assert_eq!(a, b);
        }
    }

    #[test]
    fn the_straggler_with_its_span_worst_and_peers() {
        let r = record(H200X8);
        assert_eq!(r.gpus, (0..8).collect::<Vec<u32>>());
        let slow: Vec<&Held> = r.held.iter().filter(|h| h.finding.rule == GpuRule::SlowGpu).collect();
        assert_eq!(slow.len(), 1, "{:#?}", r.held);
        let h = slow[0];
        assert_eq!(h.finding.gpu, Some(5));
        assert!(h.to_t > h.from_t, "{h:?}");
        assert_eq!(h.sm_clock_mhz.min, 800.0, "{h:?}");
        assert!(h.sm_clock_mhz.mean().is_some_and(|m| m < 1000.0), "{h:?}");
        assert!(h.peers_sm_clock_mhz.is_some_and(|p| p >= 1700.0), "{h:?}");
        assert_eq!(h.peers.len(), 7);
        assert!(H200X8.lines().nth(h.line - 1).unwrap().contains("\"gpu\": 5"), "line {}", h.line);
        // Each GPU's curves: GPU 5 dips to 800 MHz, its peers stay at 1800 and above.
        assert_eq!(r.curves.len(), 8);
        let t0 = r.from_t.unwrap();
        let (a, b) = (h.from_t - t0 + 1.0, h.to_t - t0 - 3.0);
        let mean_in_span = |g: u32| {
            let v: Vec<f64> = r.curves[g as usize]
                .1
                .points()
                .iter()
                .filter(|p| p[0] >= a && p[0] <= b)
                .map(|p| p[1])
                .collect();
            v.iter().sum::<f64>() / v.len().max(1) as f64
        };
        assert!(mean_in_span(5) < 1000.0, "{}", mean_in_span(5));
        assert!((0..8).filter(|g| *g != 5).all(|g| mean_in_span(g) >= 1700.0));
    }

    #[test]
    fn a_curve_of_any_length_stays_bounded_and_in_order() {
        let mut c = Curve::default();
        for s in 0..86_400u32 {
            c.add(f64::from(s), f64::from(s % 100));
        }
        let p = c.points();
        assert!(p.len() <= MAX_CURVE_POINTS && p.len() > MAX_CURVE_POINTS / 4, "{}", p.len());
        assert!(p.windows(2).all(|w| w[0][0] < w[1][0]));
        assert!(p.iter().all(|x| (0.0..100.0).contains(&x[1])));
    }
}
