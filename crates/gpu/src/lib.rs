//! GPU-node monitoring: NVML samples, the local engine's state, and the rules that watch them
//! over time.
//!
//! The text analyzer (`triage-analyze`) reads what a person pastes once; this crate reads a
//! stream of samples, one tick at a time, as `triage-runner` (and its WASI rule plugin) does on
//! a GPU node. [`GpuWatch`] keeps the little state the rules need (how long a condition has
//! held, the last counters) and answers, after each tick, the findings active now.
//!
//! Formats: [`series`] reads and writes the NVML JSON-lines series of
//! `tests/data/nvml/h200_series.jsonl` (one `{"meta": …}` line, then one object per GPU per
//! tick); [`engine`] reads vLLM / SGLang `/metrics` into an [`EngineSample`]; [`recording`]
//! judges a whole recording one sample at a time (the analyzer reads recordings with it).

#![deny(missing_docs)]

pub mod engine;
pub mod line;
pub mod peers;
pub mod recording;
pub mod sample;
pub mod series;
pub mod watch;
pub mod xid;

pub use engine::EngineSample;
pub use sample::{GpuSample, XidEvent, reason_names};
pub use series::Series;
pub use watch::{GpuFinding, GpuRule, GpuWatch, WatchConfig};

/// What changed between two answers of the rules: findings raised, findings cleared.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Changes {
    /// Findings in the new answer that were not in the old one.
    pub raised: Vec<GpuFinding>,
    /// Findings in the old answer that are gone from the new one.
    pub cleared: Vec<GpuFinding>,
}

impl GpuFinding {
    /// A finding's identity across ticks: the same GPU, rule and raising sample.
    pub fn same_as(&self, other: &GpuFinding) -> bool {
        self.gpu == other.gpu
            && self.rule == other.rule
            && self.t.to_bits() == other.t.to_bits()
            && self.title == other.title
    }
}

/// Compare the findings active before a tick with those active after it.
pub fn diff(before: &[GpuFinding], after: &[GpuFinding]) -> Changes {
    Changes {
        raised: after.iter().filter(|f| !before.iter().any(|b| b.same_as(f))).cloned().collect(),
        cleared: before.iter().filter(|b| !after.iter().any(|f| b.same_as(f))).cloned().collect(),
    }
}

/// Run the rules natively over a whole series and return every finding raised, in order.
/// Engine samples are taken at or before each tick's time ([`engine::EngineSeries::at`]).
pub fn replay(series: &Series, engine: Option<&engine::EngineSeries>, cfg: WatchConfig) -> Vec<GpuFinding> {
    let mut watch = GpuWatch::new(cfg);
    let mut active = Vec::new();
    let mut raised = Vec::new();
    for tick in &series.ticks {
        let t = tick.iter().map(|s| s.t).fold(f64::NEG_INFINITY, f64::max);
        let e = engine.and_then(|e| e.sample_at(t));
        let now = watch.observe(tick, e.as_ref());
        raised.extend(diff(&active, &now).raised);
        active = now;
    }
    raised
}

#[cfg(test)]
mod tests {
    use super::engine::EngineSeries;
    use super::series::Series;
    use super::*;
    use triage_base::fixture;

    const H200: &str = fixture!("nvml/h200_series.jsonl");
    const H200X8: &str = fixture!("nvml/h200x8_one_slow.jsonl");
    const PHASES: &str = fixture!("nvml/h200_phases.json");
    const ENGINE_IDLE: &str = fixture!("nvml/engine_nothing_running.prom");

    /// (phase name, start) from the capture's marks.
    fn phase_of(t: f64) -> String {
        let marks: serde_json::Value = serde_json::from_str(PHASES).unwrap();
        let mut phase = "before".to_owned();
        for m in marks["marks"].as_array().unwrap() {
            if m["t"].as_f64().unwrap() <= t {
                phase = m["phase"].as_str().unwrap().to_owned();
            }
        }
        phase
    }

    #[test]
    fn real_h200_power_cap_in_the_matmul_phase_only() {
        let series = Series::parse(H200);
        assert!(series.issues.is_empty(), "{:?}", series.issues);
        assert_eq!(series.ticks.len(), 449);
        let found = replay(&series, None, WatchConfig::default());
        let rules: Vec<(&str, String)> = found.iter().map(|f| (f.rule.as_str(), phase_of(f.t))).collect();
        assert_eq!(rules, [(GpuRule::GpuPowerCap.as_str(), "matmul_load".to_owned())], "{found:#?}");
        let cap = &found[0];
        assert_eq!(cap.gpu, Some(0));
        assert!(cap.title.contains("SW power cap"), "{}", cap.title);
        let sm: u32 = cap.title.split("SM ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
        assert!((1440..=1530).contains(&sm), "{}", cap.title);
        assert!(cap.title.contains("of 1980 MHz") && cap.title.contains("of 700 W"), "{}", cap.title);
        assert!(cap.evidence[0].contains("reasons 0x4 (sw_power_cap)"), "{:?}", cap.evidence);
    }

    #[test]
    fn real_h200_memory_held_with_nothing_running_is_a_kv_leak() {
        let series = Series::parse(H200);
        let engine = EngineSeries::parse(ENGINE_IDLE);
        let found = replay(&series, Some(&engine), WatchConfig::default());
        let leaks: Vec<&GpuFinding> = found.iter().filter(|f| f.rule == GpuRule::KvLeak).collect();
        assert_eq!(leaks.len(), 1, "{found:#?}");
        assert_eq!(phase_of(leaks[0].t), "memory_full_no_compute");
        assert!(
            leaks[0].title.contains("memory full") && leaks[0].title.contains("utilisation 0"),
            "{}",
            leaks[0].title
        );
        assert!(leaks[0].confidence >= 0.75);
        // Nothing else but the power cap; the idle phases stay quiet.
        let others: Vec<&str> =
            found.iter().map(|f| f.rule.as_str()).filter(|r| *r != GpuRule::KvLeak).collect();
        assert_eq!(others, [GpuRule::GpuPowerCap]);
    }

    #[test]
    fn memory_full_needs_the_engine_to_say_so() {
        let series = Series::parse(H200);
        // No engine: an idle vLLM holds its pre-allocated pool, memory alone says nothing.
        assert!(!replay(&series, None, WatchConfig::default()).iter().any(|f| f.rule == GpuRule::KvLeak));
        // The engine's pool is empty: the memory is the pre-allocation, not a leak.
        let empty = EngineSeries::parse("vllm:num_requests_running 0\nvllm:kv_cache_usage_perc 0.0\n");
        assert!(
            !replay(&series, Some(&empty), WatchConfig::default()).iter().any(|f| f.rule == GpuRule::KvLeak)
        );
        // Something runs: not a leak either.
        let busy = EngineSeries::parse("vllm:num_requests_running 3\nvllm:kv_cache_usage_perc 0.9\n");
        assert!(
            !replay(&series, Some(&busy), WatchConfig::default()).iter().any(|f| f.rule == GpuRule::KvLeak)
        );
        // Usage unknown: raised, with less confidence.
        let unknown = EngineSeries::parse("vllm:num_requests_running 0\n");
        let f = replay(&series, Some(&unknown), WatchConfig::default());
        let leak = f.iter().find(|f| f.rule == GpuRule::KvLeak).unwrap();
        assert!(leak.confidence < 0.75);
    }

    #[test]
    fn eight_gpus_one_at_800_mhz_is_the_straggler() {
        let series = Series::parse(H200X8);
        assert_eq!(series.gpu_count(), 8);
        let found = replay(&series, None, WatchConfig::default());
        let slow: Vec<&GpuFinding> = found.iter().filter(|f| f.rule == GpuRule::SlowGpu).collect();
        assert_eq!(slow.len(), 1, "{found:#?}");
        assert_eq!(slow[0].gpu, Some(5));
        assert!(slow[0].title.contains("800 MHz") && slow[0].title.contains("1800 MHz"), "{}", slow[0].title);
        assert!(slow[0].title.contains("hw_slowdown"), "{}", slow[0].title);
        assert_eq!(phase_of(slow[0].t), "matmul_load");
        // GPU 5 is also HW-throttled; its peers are at their power cap; nobody else is slow.
        assert!(found.iter().any(|f| f.rule == GpuRule::GpuHwThrottle && f.gpu == Some(5)));
        assert!(!found.iter().any(|f| f.rule == GpuRule::GpuHwThrottle && f.gpu != Some(5)));
    }

    fn tick(t: f64, gpus: &[(u32, u32, u32)]) -> Vec<GpuSample> {
        gpus.iter()
            .map(|&(gpu, clock, util)| GpuSample {
                t,
                gpu,
                sm_clock_mhz: Some(clock),
                max_sm_clock_mhz: Some(1980),
                util_gpu_pct: Some(util),
                mem_used_bytes: Some(10 << 30),
                mem_total_bytes: Some(140 << 30),
                clock_event_reasons: Some(0),
                ..GpuSample::default()
            })
            .collect()
    }

    #[test]
    fn one_odd_sample_is_not_raised_and_findings_clear() {
        let mut w = GpuWatch::new(WatchConfig::default());
        // One slow tick among normal ones: never sustained.
        for i in 0..10 {
            let clock = if i == 5 { 700 } else { 1800 };
            assert!(w.observe(&tick(f64::from(i), &[(0, clock, 90), (1, 1800, 90)]), None).is_empty());
        }
        // Slow for good: raised after sustain_s, cleared sustain_s after it recovers.
        let mut raised_at = None;
        let mut cleared_at = None;
        for i in 10..60 {
            let clock = if i < 30 { 700 } else { 1800 };
            let now = w.observe(&tick(f64::from(i), &[(0, clock, 90), (1, 1800, 90), (2, 1800, 90)]), None);
            let slow = now.iter().any(|f| f.rule == GpuRule::SlowGpu);
            if slow && raised_at.is_none() {
                raised_at = Some(i);
            }
            if !slow && raised_at.is_some() && cleared_at.is_none() {
                cleared_at = Some(i);
            }
        }
        // The window median needs more than half its samples slow, then sustain_s.
        let raised_at = raised_at.unwrap();
        assert!((12..=20).contains(&raised_at), "raised at {raised_at}");
        assert!(cleared_at.unwrap() > 30, "{cleared_at:?}");
    }

    #[test]
    fn throughput_zero_when_tokens_stop_with_requests_running() {
        let mut w = GpuWatch::new(WatchConfig::default());
        let mut first = None;
        for i in 0..20 {
            let t = f64::from(i);
            let tokens = if i < 5 { f64::from(i) * 100.0 } else { 400.0 };
            let e = EngineSample {
                t,
                running: Some(8.0),
                waiting: Some(2.0),
                generation_tokens_total: Some(tokens),
                ..EngineSample::default()
            };
            let now = w.observe(&tick(t, &[(0, 1980, 0)]), Some(&e));
            if first.is_none() && now.iter().any(|f| f.rule == GpuRule::ThroughputZero) {
                first = Some((i, now));
            }
        }
        let (i, now) = first.unwrap();
        assert_eq!(i, 11, "4 s last move + 5 s stall + 2 s sustain");
        let f = now.iter().find(|f| f.rule == GpuRule::ThroughputZero).unwrap();
        assert_eq!(f.gpu, None);
        assert!(f.confidence >= 0.8, "GPUs idle: a stuck scheduler");
    }

    #[test]
    fn xid_and_ecc_events_hold_then_expire() {
        let mut w = GpuWatch::new(WatchConfig::default());
        let mut s = tick(100.0, &[(3, 1980, 50)]);
        s[0].xid.push(XidEvent { t: 100.0, code: 79 });
        s[0].ecc_uncorrected = Some(0);
        let now = w.observe(&s, None);
        assert_eq!(now.len(), 1);
        assert_eq!(now[0].rule, GpuRule::GpuXid);
        assert!(now[0].title.contains("XID 79") && now[0].confidence >= 0.9, "{:?}", now[0]);
        let mut s = tick(101.0, &[(3, 1980, 50)]);
        s[0].ecc_uncorrected = Some(2);
        let now = w.observe(&s, None);
        assert_eq!(
            now.iter().map(|f| f.rule.as_str()).collect::<Vec<_>>(),
            [GpuRule::GpuXid, GpuRule::GpuEcc]
        );
        assert!(w.observe(&tick(159.0, &[(3, 1980, 50)]), None).len() == 2);
        assert!(w.observe(&tick(161.5, &[(3, 1980, 50)]), None).is_empty());
    }

    #[test]
    fn hostile_ticks_stay_bounded() {
        let mut w = GpuWatch::new(WatchConfig::default());
        let mut samples: Vec<GpuSample> =
            (0..1000).map(|g| GpuSample { t: 1.0, gpu: g, ..GpuSample::default() }).collect();
        samples.push(GpuSample { t: f64::NAN, gpu: 1, ..GpuSample::default() });
        samples[0].xid = (0..10_000).map(|c| XidEvent { t: f64::INFINITY, code: c }).collect();
        let now = w.observe(&samples, None);
        assert!(now.len() <= 16);
        assert!(w.gpu_count() <= 64);
    }

    #[test]
    fn diff_tells_raised_from_still_active() {
        let f = |rule: &str, t: f64| GpuFinding {
            t,
            gpu: Some(0),
            class: triage_report::Class::TbtTail,
            rule: rule.into(),
            title: rule.into(),
            confidence: 0.5,
            evidence: vec![],
            remediation: String::new(),
        };
        let c = diff(&[f("a", 1.0), f("b", 1.0)], &[f("b", 1.0), f("c", 2.0)]);
        assert_eq!(c.raised, [f("c", 2.0)]);
        assert_eq!(c.cleared, [f("a", 1.0)]);
    }
}
