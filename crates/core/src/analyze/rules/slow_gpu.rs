//! Rule `slow-gpu`: one GPU's SM clock is far below its peers' while all are busy — the
//! straggler every tensor-parallel step waits for — or a lone GPU held down by a hardware
//! throttle reason.
//!
//! SW power cap on its own is deliberately *not* a finding: a GPU at full load that reaches its
//! power limit lowers its clock to stay there. The real H200 capture does exactly that (700 W,
//! SM 1440–1515 of 1980 MHz, `SW Power Cap: Active`) and is healthy. It matters only when peers
//! under the same load run faster, which the peer comparison catches.

use super::{Rule, RuleDoc};
use crate::analyze::facts::Facts;
use crate::analyze::parsers::nvidia_smi::GpuReading;
use crate::analyze::report::{Class, EvidenceLine, Finding};
use std::collections::BTreeMap;

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: "slow-gpu",
        class: Class::TbtTail,
        title: "One GPU runs slower than its peers",
        detects: "Among two or more busy GPUs in the same input (one moment, or each GPU's median over a series), one whose SM clock is below 0.75× its peers' median, with its throttle reasons decoded; with lower confidence, a lone busy GPU throttled by HW Slowdown, thermal or power-brake reasons. SW Power Cap alone is how a fully loaded GPU holds its power limit and is not reported.",
        why: "With tensor or pipeline parallelism every step waits for the slowest GPU, so one throttled GPU stretches every decode step of every request on the replica: TBT tails grow while the healthy GPUs sit in NCCL waits.",
        example: "`nvidia-smi --query-gpu` shows GPU 5 at 800 MHz with `clocks_event_reasons.active` 0x…08 (HW Slowdown) and 86 °C, while GPUs 0–4, 6 and 7 run at 1800 MHz, all at 100 % utilisation.",
        fix: "Drain the node (or the replica) first. Then decode the reason: thermal → cooling (fans, inlet air, heatsink); HW slowdown / power brake → power delivery (PSU, cables, BMC log); a power limit below its peers' → restore it with `nvidia-smi -i N -pl W`. If it persists, reseat or replace the GPU.",
    },
    check,
};

/// Busier than this is "under load".
const BUSY_UTIL_PCT: f64 = 30.0;
/// Drawing at least this share of the power limit is also "under load" (dmon without `sm`).
const BUSY_POWER_SHARE: f64 = 0.5;
/// Below this share of the peers' median SM clock, a GPU is a straggler.
const SLOW_RATIO: f64 = 0.75;
/// Reasons that mean the hardware, not the workload, holds the clock down.
const HW_REASONS: [&str; 4] = ["hw_slowdown", "hw_thermal", "sw_thermal", "hw_power_brake"];

fn busy(r: &GpuReading) -> bool {
    r.util_pct.is_some_and(|u| u > BUSY_UTIL_PCT)
        || matches!((r.power_w, r.power_limit_w), (Some(p), Some(l)) if l > 0.0 && p >= BUSY_POWER_SHARE * l)
}

fn hw_throttled(r: &GpuReading) -> bool {
    HW_REASONS.iter().any(|h| r.has_reason(h)) || r.thermal_violation == Some(true)
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

/// One GPU of one input, over its busy readings that carry an SM clock.
struct Gpu<'a> {
    index: u32,
    readings: Vec<&'a GpuReading>,
    clock: f64,
}

impl Gpu<'_> {
    /// The reading whose clock is closest to this GPU's median: the one to quote.
    fn typical(&self) -> Option<&GpuReading> {
        self.readings.iter().copied().min_by(|a, b| {
            let d = |r: &GpuReading| (r.sm_clock_mhz.unwrap_or(0.0) - self.clock).abs();
            d(a).total_cmp(&d(b))
        })
    }

    fn reasons(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for r in &self.readings {
            for reason in &r.reasons {
                if reason != "idle" && !out.contains(&reason.as_str()) {
                    out.push(reason);
                }
            }
        }
        out
    }

    fn median_of(&self, f: impl Fn(&GpuReading) -> Option<f64>) -> Option<f64> {
        median(&mut self.readings.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
    }
}

fn check(f: &Facts) -> Option<Finding> {
    // Busy readings with a clock, per input and GPU index (indices of different inputs may be
    // different machines).
    let mut by_input: BTreeMap<&str, BTreeMap<u32, Vec<&GpuReading>>> = BTreeMap::new();
    for r in f.gpus.readings.iter().filter(|r| r.sm_clock_mhz.is_some() && busy(r)) {
        by_input.entry(r.evidence.input.as_str()).or_default().entry(r.index).or_default().push(r);
    }
    let mut best: Option<Finding> = None;
    for gpus in by_input.values() {
        let gpus: Vec<Gpu<'_>> = gpus
            .iter()
            .filter_map(|(index, readings)| {
                let mut clocks: Vec<f64> = readings.iter().filter_map(|r| r.sm_clock_mhz).collect();
                Some(Gpu { index: *index, readings: readings.clone(), clock: median(&mut clocks)? })
            })
            .collect();
        let found = if gpus.len() >= 2 { straggler(&gpus) } else { None };
        if let Some(finding) = found
            && best.as_ref().is_none_or(|b| finding.confidence > b.confidence)
        {
            best = Some(finding);
        }
    }
    best.or_else(|| lone_throttled(f))
}

/// The peer comparison.
fn straggler(gpus: &[Gpu<'_>]) -> Option<Finding> {
    let mut slow: Vec<(&Gpu<'_>, f64, f64)> = Vec::new(); // (gpu, peers' median clock, ratio)
    for g in gpus {
        let mut peers: Vec<f64> = gpus.iter().filter(|p| p.index != g.index).map(|p| p.clock).collect();
        let peer = median(&mut peers)?;
        if peer > 0.0 && g.clock < SLOW_RATIO * peer {
            slow.push((g, peer, g.clock / peer));
        }
    }
    // More than half "slow" means the peers are the odd ones; nothing to single out.
    if slow.is_empty() || slow.len() * 2 > gpus.len() {
        return None;
    }
    slow.sort_by(|a, b| a.2.total_cmp(&b.2));
    let (g, peer_clock, ratio) = slow[0];
    let peers: Vec<&Gpu<'_>> = gpus.iter().filter(|p| slow.iter().all(|s| s.0.index != p.index)).collect();
    let peer_med = |f: &dyn Fn(&GpuReading) -> Option<f64>| {
        median(&mut peers.iter().filter_map(|p| p.median_of(f)).collect::<Vec<_>>())
    };
    let reasons = g.reasons();
    let hw = g.readings.iter().any(|r| hw_throttled(r));

    let mut why: Vec<String> = Vec::new();
    let mut remediation: Vec<String> = vec![format!(
        "drain the node (or take GPU {} out of the replica) now: with tensor parallelism every step runs at the slowest GPU's pace",
        g.index
    )];
    let temp = g.median_of(|r| r.temp_c);
    let peer_temp = peer_med(&|r| r.temp_c);
    let temp_note = match (temp, peer_temp) {
        (Some(t), Some(p)) => format!(" at {t:.0} °C (peers {p:.0} °C)"),
        (Some(t), None) => format!(" at {t:.0} °C"),
        _ => String::new(),
    };
    if reasons.contains(&"hw_thermal")
        || reasons.contains(&"sw_thermal")
        || g.readings.iter().any(|r| r.thermal_violation == Some(true))
    {
        why.push(format!("thermal slowdown is active{temp_note}: the GPU is too hot"));
        remediation.push("check cooling: fans, inlet temperature, blocked airflow, heatsink contact (`nvidia-smi -q -d TEMPERATURE`, the BMC's sensor log)".to_owned());
    }
    if reasons.contains(&"hw_power_brake") {
        why.push("HW Power Brake Slowdown is active: an external power-brake signal from the power supply or chassis".to_owned());
    }
    if reasons.contains(&"hw_slowdown")
        && !reasons.contains(&"hw_thermal")
        && !reasons.contains(&"hw_power_brake")
    {
        why.push(format!("HW Slowdown is active{temp_note}: the board pulled its own clock down (over-temperature or a power-brake signal)"));
    }
    if reasons.iter().any(|r| matches!(*r, "hw_slowdown" | "hw_power_brake")) {
        let power = "check power delivery: PSU health, power cables, the BMC event log (`ipmitool sel list`)"
            .to_owned();
        // HW Slowdown fires on over-temperature as well as on a power brake: a GPU clearly hotter
        // than its peers points at cooling first.
        let hot = matches!((temp, peer_temp), (Some(t), Some(p)) if t >= p + 10.0);
        if reasons.contains(&"hw_thermal") || reasons.contains(&"sw_thermal") {
            remediation.push(power);
        } else if hot {
            remediation.push("check cooling first: it runs much hotter than its peers, and HW Slowdown fires on over-temperature (fans, inlet air, heatsink contact)".to_owned());
            remediation.push(power);
        } else {
            remediation.push(power);
            remediation.push("check cooling too: HW Slowdown also fires on over-temperature".to_owned());
        }
    }
    if reasons.contains(&"sw_power_cap") {
        let (limit, peer_limit) = (g.median_of(|r| r.power_limit_w), peer_med(&|r| r.power_limit_w));
        match (limit, peer_limit) {
            (Some(l), Some(p)) if l < 0.95 * p => {
                why.push(format!(
                    "SW Power Cap is active under a power limit of {l:.0} W while its peers run at {p:.0} W"
                ));
                remediation.push(format!(
                    "restore its power limit: `sudo nvidia-smi -i {} -pl {p:.0}` (and find what lowered it)",
                    g.index
                ));
            }
            _ => {
                let draw = g.median_of(|r| r.power_w).map_or(String::new(), |w| format!(" at {w:.0} W"));
                why.push(format!("SW Power Cap is active{draw}: it reaches its power limit at a lower clock than its peers, which points at a hot or failing part"));
                remediation.push(format!("compare power limits and draw across GPUs (`nvidia-smi -q -d POWER`); check `nvidia-smi -i {} -pl` matches the peers", g.index));
            }
        }
    }
    if reasons.contains(&"applications_clocks") {
        why.push("its application clocks are set lower (Applications Clocks Setting is active)".to_owned());
        remediation.push(format!("reset clocks: `sudo nvidia-smi -i {} -rac` and `-rgc`", g.index));
    }
    if why.is_empty() {
        why.push(if g.readings.iter().any(|r| r.reasons_known) {
            "no throttle reason is reported: check for locked clocks (`nvidia-smi -q -d CLOCK`), XID errors (`dmesg | grep -i xid`) and its PCIe link".to_owned()
        } else {
            "this output does not show throttle reasons: run `nvidia-smi -q -d PERFORMANCE` on the node to see them".to_owned()
        });
    }
    remediation.push("if it persists after the fix, reseat or replace the GPU".to_owned());

    let others = if slow.len() > 1 {
        let rest: Vec<String> =
            slow[1..].iter().map(|(s, _, _)| format!("GPU {} ({:.0} MHz)", s.index, s.clock)).collect();
        format!(" Also slow: {}.", rest.join(", "))
    } else {
        String::new()
    };
    let summary = format!(
        "GPU {} runs its SM clock at {:.0} MHz under load while its {} peers run at a median {peer_clock:.0} MHz ({ratio:.2}×): {}.{others}",
        g.index,
        g.clock,
        gpus.len() - 1,
        why.join("; ")
    );

    let mut evidence: Vec<EvidenceLine> = Vec::new();
    if let Some(r) = g.typical() {
        evidence.push(r.evidence.clone());
        evidence.extend(r.detail.iter().filter(|d| d.line != r.evidence.line).take(2).cloned());
    }
    let peer =
        peers.iter().min_by(|a, b| (a.clock - peer_clock).abs().total_cmp(&(b.clock - peer_clock).abs()));
    if let Some(r) = peer.and_then(|p| p.typical()) {
        evidence.push(r.evidence.clone());
    }

    let mut confidence: f64 = if gpus.len() >= 3 { 0.7 } else { 0.6 };
    if hw {
        confidence += 0.1;
    }
    if ratio < 0.6 {
        confidence += 0.05;
    }
    let remediation: Vec<&str> = remediation.iter().map(String::as_str).collect();
    Some(RULE.doc.finding(
        confidence.min(0.85),
        summary,
        evidence,
        &remediation,
        &[
            "watch `nvidia-smi dmon -s pucvmet` for a minute: pclk, pviol and tviol per GPU",
            "read `nvidia-smi -q -d PERFORMANCE` on the node: the Clocks Event Reasons counters say how long each reason has been active",
            "compare ITL on this node with other replicas of the same model",
        ],
    ))
}

/// No peers to compare with: a busy GPU held down by a hardware reason is still a lead.
fn lone_throttled(f: &Facts) -> Option<Finding> {
    let r = f.gpus.readings.iter().find(|r| busy(r) && hw_throttled(r))?;
    let reasons: Vec<&str> =
        r.reasons.iter().map(String::as_str).filter(|x| HW_REASONS.contains(x)).collect();
    let mut what = if reasons.is_empty() { "a thermal violation".to_owned() } else { reasons.join(", ") };
    if let Some(t) = r.temp_c {
        what.push_str(&format!(" at {t:.0} °C"));
    }
    let clock = match (r.sm_clock_mhz, r.max_sm_clock_mhz) {
        (Some(c), Some(m)) => format!(" (SM clock {c:.0} of {m:.0} MHz)"),
        (Some(c), None) => format!(" (SM clock {c:.0} MHz)"),
        _ => String::new(),
    };
    let deep = matches!((r.sm_clock_mhz, r.max_sm_clock_mhz), (Some(c), Some(m)) if c < SLOW_RATIO * m);
    let mut evidence = vec![r.evidence.clone()];
    evidence.extend(r.detail.iter().filter(|d| d.line != r.evidence.line).take(2).cloned());
    Some(RULE.doc.finding(
        if deep { 0.5 } else { 0.45 },
        format!(
            "GPU {} is throttled under load by {what}{clock}. There are no peer readings to compare with, so this is a lead rather than a verdict: a hardware-throttled GPU slows every step of the replica it serves.",
            r.index
        ),
        evidence,
        &[
            "check cooling (fans, inlet temperature, airflow) and power delivery (PSU, cables, BMC event log)",
            "drain the node if decode latency on it is worse than on its peers",
            "reseat or replace the GPU if the reason stays active",
        ],
        &[
            "run `nvidia-smi --query-gpu=index,clocks.sm,clocks_event_reasons.active,temperature.gpu,power.draw --format=csv` on all GPUs of the node to compare peers",
            "read the Clocks Event Reasons counters in `nvidia-smi -q -d PERFORMANCE`",
        ],
    ))
}

#[cfg(test)]
mod tests {
    use super::super::fired;

    const EIGHT: &str = include_str!("../../../../../tests/data/smi/synthetic_8gpu_one_slow.txt");
    const CAPPED: &str = include_str!("../../../../../tests/data/smi/smi_power_capped.txt");
    const Q_CAPPED: &str = include_str!("../../../../../tests/data/smi/smi_q_power_capped.txt");
    const SERIES: &str = include_str!("../../../../../tests/data/smi/smi_query_series_load.csv");
    const DMON: &str = include_str!("../../../../../tests/data/smi/smi_dmon_load.txt");
    const IDLE: &str = include_str!("../../../../../tests/data/smi/smi_idle.txt");

    const HEADER: &str = "index, clocks.sm [MHz], clocks.max.sm [MHz], power.draw [W], power.limit [W], temperature.gpu, utilization.gpu [%], clocks_event_reasons.active\n";

    fn csv(rows: &[(u32, u32, f64, f64, u32, u32, &str)]) -> String {
        let mut s = HEADER.to_owned();
        for (i, sm, w, limit, temp, util, mask) in rows {
            s.push_str(&format!(
                "{i}, {sm} MHz, 1980 MHz, {w:.2} W, {limit:.2} W, {temp}, {util} %, {mask}\n"
            ));
        }
        s
    }

    #[test]
    fn fires_on_the_articles_800_vs_1800() {
        let f = fired(&[("smi", EIGHT)], "slow-gpu").unwrap();
        assert!(f.summary.starts_with("GPU 5 runs its SM clock at 800 MHz"), "{}", f.summary);
        assert!(f.summary.contains("7 peers run at a median 1800 MHz"), "{}", f.summary);
        assert!(f.summary.contains("HW Slowdown") && f.summary.contains("86 °C"), "{}", f.summary);
        assert_eq!(f.confidence, 0.85);
        assert!(f.evidence[0].text.starts_with("5, NVIDIA H200"), "{:?}", f.evidence);
        assert!(f.remediation[1].starts_with("check cooling first"), "{:?}", f.remediation);
        assert!(f.remediation.iter().any(|r| r.contains("power delivery")));
        assert!(f.remediation.iter().any(|r| r.contains("reseat or replace")));
    }

    #[test]
    fn fires_on_per_gpu_medians_of_a_series() {
        let mut text = String::new();
        for tick in 0..5 {
            for i in 0..4u32 {
                let sm = if i == 2 { 900 + tick * 10 } else { 1755 + tick * 5 };
                text.push_str(&format!(
                    "{i}, {sm} MHz, 1980 MHz, 600.00 W, 700.00 W, 60, 99 %, 0x0000000000000000\n"
                ));
            }
        }
        let f = fired(&[("series.csv", &format!("{HEADER}{text}"))], "slow-gpu").unwrap();
        assert!(f.summary.starts_with("GPU 2 runs its SM clock at 920 MHz"), "{}", f.summary);
        assert!(f.summary.contains("no throttle reason is reported"), "{}", f.summary);
        // Four GPUs, no hardware reason, a deep drop (0.52×).
        assert_eq!(f.confidence, 0.75);
    }

    #[test]
    fn lower_power_limit_than_peers() {
        let text = csv(&[
            (0, 1800, 620.0, 700.0, 60, 100, "0x0000000000000000"),
            (1, 1790, 615.0, 700.0, 61, 100, "0x0000000000000000"),
            (2, 1150, 398.0, 400.0, 58, 100, "0x0000000000000004"),
            (3, 1805, 625.0, 700.0, 60, 100, "0x0000000000000000"),
        ]);
        let f = fired(&[("smi", &text)], "slow-gpu").unwrap();
        assert!(f.summary.contains("power limit of 400 W while its peers run at 700 W"), "{}", f.summary);
        assert!(f.remediation.iter().any(|r| r.contains("nvidia-smi -i 2 -pl 700")), "{:?}", f.remediation);
    }

    #[test]
    fn lone_gpu_with_hw_thermal_is_a_lead() {
        let text = csv(&[(0, 990, 450.0, 700.0, 91, 100, "0x0000000000000048")]);
        let f = fired(&[("smi", &text)], "slow-gpu").unwrap();
        assert_eq!(f.confidence, 0.5);
        assert!(f.summary.contains("hw_slowdown, hw_thermal at 91 °C"), "{}", f.summary);
    }

    #[test]
    fn quiet_on_the_real_h200_captures() {
        // Idle with only `Idle` active; and a lone GPU at its 700 W power limit, SW-capped.
        for text in [IDLE, CAPPED, Q_CAPPED, SERIES, DMON] {
            assert!(fired(&[("smi", text)], "slow-gpu").is_none());
        }
    }

    #[test]
    fn quiet_when_peers_are_equally_capped_or_the_slow_one_is_idle() {
        let capped: Vec<_> =
            (0..8).map(|i| (i, 1440 + i * 5, 695.0, 700.0, 59, 99, "0x0000000000000004")).collect();
        assert!(fired(&[("smi", &csv(&capped))], "slow-gpu").is_none());
        let mut idle_one = capped.clone();
        idle_one[3] = (3, 345, 78.0, 700.0, 38, 0, "0x0000000000000001");
        assert!(fired(&[("smi", &csv(&idle_one))], "slow-gpu").is_none());
        // Two different machines in two inputs are not peers.
        let a = csv(&[(0, 1800, 620.0, 700.0, 60, 100, "0x0000000000000000")]);
        let b = csv(&[(0, 1000, 620.0, 700.0, 60, 100, "0x0000000000000000")]);
        assert!(fired(&[("a", &a), ("b", &b)], "slow-gpu").is_none());
    }
}
