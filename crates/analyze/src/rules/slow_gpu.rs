//! Rule `slow-gpu`: one GPU's SM clock is far below its peers' while all are busy — the
//! straggler every tensor-parallel step waits for — or a lone GPU held down by a hardware
//! throttle reason.
//!
//! SW power cap on its own is deliberately *not* a finding: a GPU at full load that reaches its
//! power limit lowers its clock to stay there. The real H200 capture does exactly that (700 W,
//! SM 1440–1515 of 1980 MHz, `SW Power Cap: Active`) and is healthy. It matters only when peers
//! under the same load run faster, which the peer comparison catches.

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::parsers::nvidia_smi::GpuReading;
use crate::report::{Class, EvidenceLine, Finding, Subject};
use std::collections::BTreeMap;
use triage_base::stats::median;
use triage_gpu::peers;
use triage_gpu::sample::{
    REASON_APPLICATIONS_CLOCKS, REASON_HW_POWER_BRAKE, REASON_HW_SLOWDOWN, REASON_HW_THERMAL, REASON_IDLE,
    REASON_SW_POWER_CAP, REASON_SW_THERMAL, REASONS_HW, reason_names,
};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::SlowGpu,
        class: Class::TbtTail,
        title: "One GPU runs slower than its peers",
        detects: "Among two or more busy GPUs in the same input (one moment, or each GPU's median over a series), one whose SM clock is below 0.75× its peers' median, with its throttle reasons decoded; with lower confidence, a lone busy GPU throttled by HW Slowdown, thermal or power-brake reasons. SW Power Cap alone is how a fully loaded GPU holds its power limit and is not reported.",
        why: "With tensor or pipeline parallelism every step waits for the slowest GPU, so one throttled GPU stretches every decode step of every request on the replica: TBT tails grow while the healthy GPUs sit in NCCL waits.",
        example: "`nvidia-smi --query-gpu` shows GPU 5 at 800 MHz with `clocks_event_reasons.active` 0x…08 (HW Slowdown) and 86 °C, while GPUs 0–4, 6 and 7 run at 1800 MHz, all at 100 % utilisation.",
        fix: "Drain the node (or the replica) first. Then decode the reason: thermal → cooling (fans, inlet air, heatsink); HW slowdown / power brake → power delivery (PSU, cables, BMC log); a power limit below its peers' → restore it with `nvidia-smi -i N -pl W`. If it persists, reseat or replace the GPU.",
        zh: RuleText {
            title: "某张 GPU 比同组其他卡慢",
            detects: "同一份输入里有两张及以上的忙碌 GPU（同一时刻的读数，或一段序列里每张卡的中位数），其中一张的 SM 时钟低于其他卡中位数的 0.75 倍，并解读它的降频原因；置信度较低的情况：单独一张忙碌 GPU 被 HW Slowdown、过热或 power brake 降频。只有 SW Power Cap 属于满载 GPU 维持功耗上限的正常表现，不报告。",
            why: "在张量并行或流水线并行下，每一步都要等最慢的那张卡，所以一张降频的 GPU 会拉长这个副本上每个请求的每个 decode 步：TBT 长尾变长，健康的卡则在 NCCL 里空等。",
            example: "`nvidia-smi --query-gpu` 显示 GPU 5 只有 800 MHz，`clocks_event_reasons.active` 为 0x…08（HW Slowdown），温度 86 °C；而 GPU 0–4、6、7 都在 1800 MHz，全部 100% 利用率。",
            fix: "先把节点（或副本）摘流。然后解读原因：过热 → 查散热（风扇、进风、散热器）；HW Slowdown / power brake → 查供电（电源、线缆、BMC 日志）；功耗上限低于同组其他卡 → 用 `nvidia-smi -i N -pl W` 恢复。如果问题依旧，重新插拔或更换这张 GPU。",
        },
    },
    check,
};

/// Under load, as the GPU model says ([`peers::busy`]).
fn busy(r: &GpuReading) -> bool {
    peers::busy(r.util_pct, r.power_w, r.power_limit_w)
}

/// Held down by the hardware, not the workload ([`REASONS_HW`], or dmon's thermal violation).
fn hw_throttled(r: &GpuReading) -> bool {
    r.has_reason(REASONS_HW) || r.thermal_violation == Some(true)
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

    /// Every reason seen in its readings but `idle` (NVML bits).
    fn reasons(&self) -> u64 {
        self.readings.iter().fold(0, |m, r| m | r.reasons) & !REASON_IDLE
    }

    fn median_of(&self, f: impl Fn(&GpuReading) -> Option<f64>) -> Option<f64> {
        median(&mut self.readings.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
    }
}

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    // Busy readings with a clock, per input and GPU index (indices of different inputs may be
    // different machines).
    let mut by_input: BTreeMap<&str, BTreeMap<u32, Vec<&GpuReading>>> = BTreeMap::new();
    for r in f.gpus.readings.iter().filter(|r| r.sm_clock_mhz.is_some() && busy(r)) {
        by_input.entry(&*r.evidence.input).or_default().entry(r.index).or_default().push(r);
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
        let found = if gpus.len() >= 2 { straggler(&gpus, lang) } else { None };
        if let Some(finding) = found
            && best.as_ref().is_none_or(|b| finding.confidence > b.confidence)
        {
            best = Some(finding);
        }
    }
    best.or_else(|| lone_throttled(f, lang))
}

/// The peer comparison.
fn straggler(gpus: &[Gpu<'_>], lang: Lang) -> Option<Finding> {
    let clocks: Vec<(u32, f64)> = gpus.iter().map(|g| (g.index, g.clock)).collect();
    let mut slow: Vec<(&Gpu<'_>, f64, f64)> = Vec::new(); // (gpu, peers' median clock, ratio)
    for g in gpus {
        let peer = peers::peers_of(&clocks, g.index).0?;
        if peers::straggles(g.clock, peer, peers::SLOW_RATIO) {
            slow.push((g, peer, g.clock / peer));
        }
    }
    // More than half "slow" means the peers are the odd ones; nothing to single out.
    if slow.is_empty() || slow.len() * 2 > gpus.len() {
        return None;
    }
    triage_base::sort::sort_by(&mut slow, |a, b| a.2.total_cmp(&b.2));
    let (g, peer_clock, ratio) = slow[0];
    let peers: Vec<&Gpu<'_>> = gpus.iter().filter(|p| slow.iter().all(|s| s.0.index != p.index)).collect();
    let hw = g.readings.iter().any(|r| hw_throttled(r));

    let (why, remediation) = causes(g, &peers, lang);
    let idx = g.index;

    let others = if slow.len() > 1 {
        let rest: Vec<String> =
            slow[1..].iter().map(|(s, _, _)| format!("GPU {} ({:.0} MHz)", s.index, s.clock)).collect();
        lang.pick(
            format!(" Also slow: {}.", rest.join(", ")),
            format!("同样偏慢的还有：{}。", rest.join("、")),
        )
    } else {
        String::new()
    };
    let (clock, n_peers) = (g.clock, gpus.len() - 1);
    let summary = lang.pick(
        format!(
            "GPU {idx} runs its SM clock at {clock:.0} MHz under load while its {n_peers} peers run at a median {peer_clock:.0} MHz ({ratio:.2}×): {}.{others}",
            why.join("; ")
        ),
        format!(
            "GPU {idx} 在负载下 SM 时钟只有 {clock:.0} MHz，而其他 {n_peers} 张卡的中位数是 {peer_clock:.0} MHz（{ratio:.2}×）：{}。{others}",
            why.join("；")
        ),
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
    let finding = RULE.doc.finding(
        lang,
        summary,
        FindingBody {
            confidence: confidence.min(0.85),
            evidence,
            remediation,
            next_checks: texts(lang, &[
                (
                    "watch `nvidia-smi dmon -s pucvmet` for a minute: pclk, pviol and tviol per GPU",
                    "用 `nvidia-smi dmon -s pucvmet` 观察一分钟：逐卡看 pclk、pviol 和 tviol",
                ),
                (
                    "read `nvidia-smi -q -d PERFORMANCE` on the node: the Clocks Event Reasons counters say how long each reason has been active",
                    "在节点上看 `nvidia-smi -q -d PERFORMANCE`：Clocks Event Reasons 计数器给出每种原因累计生效了多久",
                ),
                (
                    "compare ITL on this node with other replicas of the same model",
                    "把这个节点的 ITL 与同一模型的其他副本对比",
                ),
            ]),
        },
    );
    Some(about(finding, g.typical()))
}

/// The finding names its GPU (index, and UUID when the output gave it), so a GPU series' own
/// `slow-gpu` for the same GPU merges into it (`gpu_recording::add`).
fn about(mut finding: Finding, r: Option<&GpuReading>) -> Finding {
    if let Some(r) = r {
        finding.subject = Some(Subject {
            gpu: Some(r.index.to_string()),
            uuid: r.uuid.as_deref().map(crate::text::quote_redacted),
            ..Subject::default()
        });
    }
    finding
}

/// Why `g` runs slower than `peers` — each active clock-event reason, read against the peers'
/// temperature and power limit — and what to do about it, in `lang`.
fn causes(g: &Gpu<'_>, peers: &[&Gpu<'_>], lang: Lang) -> (Vec<String>, Vec<String>) {
    let peer_med = |f: &dyn Fn(&GpuReading) -> Option<f64>| {
        median(&mut peers.iter().filter_map(|p| p.median_of(f)).collect::<Vec<_>>())
    };
    let reasons = g.reasons();
    let zh = lang == Lang::Zh;
    let s = |en: &str, cn: &str| lang.pick(en, cn).to_owned();
    let idx = g.index;
    let mut why: Vec<String> = Vec::new();
    let mut remediation: Vec<String> = vec![lang.pick(
        format!(
            "drain the node (or take GPU {idx} out of the replica) now: with tensor parallelism every step runs at the slowest GPU's pace"
        ),
        format!("立即把节点摘流（或把 GPU {idx} 移出副本）：张量并行下每一步都按最慢那张卡的速度走"),
    )];
    let temp = g.median_of(|r| r.temp_c);
    let peer_temp = peer_med(&|r| r.temp_c);
    let temp_note = match (temp, peer_temp, zh) {
        (Some(t), Some(p), false) => format!(" at {t:.0} °C (peers {p:.0} °C)"),
        (Some(t), None, false) => format!(" at {t:.0} °C"),
        (Some(t), Some(p), true) => format!("（{t:.0} °C，其他卡 {p:.0} °C）"),
        (Some(t), None, true) => format!("（{t:.0} °C）"),
        _ => String::new(),
    };
    if reasons & REASON_HW_THERMAL != 0
        || reasons & REASON_SW_THERMAL != 0
        || g.readings.iter().any(|r| r.thermal_violation == Some(true))
    {
        why.push(lang.pick(
            format!("thermal slowdown is active{temp_note}: the GPU is too hot"),
            format!("过热降频生效中{temp_note}，这张 GPU 温度过高"),
        ));
        remediation.push(s(
            "check cooling: fans, inlet temperature, blocked airflow, heatsink contact (`nvidia-smi -q -d TEMPERATURE`, the BMC's sensor log)",
            "检查散热：风扇、进风温度、风道是否堵塞、散热器接触（`nvidia-smi -q -d TEMPERATURE`、BMC 的传感器日志）",
        ));
    }
    if reasons & REASON_HW_POWER_BRAKE != 0 {
        why.push(s(
            "HW Power Brake Slowdown is active: an external power-brake signal from the power supply or chassis",
            "HW Power Brake Slowdown 生效中，这是来自电源或机箱的外部 power brake 信号",
        ));
    }
    if reasons & REASON_HW_SLOWDOWN != 0
        && reasons & REASON_HW_THERMAL == 0
        && reasons & REASON_HW_POWER_BRAKE == 0
    {
        why.push(lang.pick(
            format!("HW Slowdown is active{temp_note}: the board pulled its own clock down (over-temperature or a power-brake signal)"),
            format!("HW Slowdown 生效中{temp_note}，板卡自己拉低了时钟（过温或 power brake 信号）"),
        ));
    }
    if reasons & (REASON_HW_SLOWDOWN | REASON_HW_POWER_BRAKE) != 0 {
        let power = s(
            "check power delivery: PSU health, power cables, the BMC event log (`ipmitool sel list`)",
            "检查供电：电源健康状况、电源线缆、BMC 事件日志（`ipmitool sel list`）",
        );
        // HW Slowdown fires on over-temperature as well as on a power brake: a GPU clearly hotter
        // than its peers points at cooling first.
        let hot = matches!((temp, peer_temp), (Some(t), Some(p)) if t >= p + 10.0);
        if reasons & REASON_HW_THERMAL != 0 || reasons & REASON_SW_THERMAL != 0 {
            remediation.push(power);
        } else if hot {
            remediation.push(s(
                "check cooling first: it runs much hotter than its peers, and HW Slowdown fires on over-temperature (fans, inlet air, heatsink contact)",
                "先查散热：它比其他卡热得多，而 HW Slowdown 在过温时也会触发（风扇、进风、散热器接触）",
            ));
            remediation.push(power);
        } else {
            remediation.push(power);
            remediation.push(s(
                "check cooling too: HW Slowdown also fires on over-temperature",
                "散热也要查：HW Slowdown 在过温时同样会触发",
            ));
        }
    }
    if reasons & REASON_SW_POWER_CAP != 0 {
        let (limit, peer_limit) = (g.median_of(|r| r.power_limit_w), peer_med(&|r| r.power_limit_w));
        match (limit, peer_limit) {
            (Some(l), Some(p)) if l < 0.95 * p => {
                why.push(lang.pick(
                    format!("SW Power Cap is active under a power limit of {l:.0} W while its peers run at {p:.0} W"),
                    format!("SW Power Cap 生效中，功耗上限只有 {l:.0} W，而其他卡是 {p:.0} W"),
                ));
                remediation.push(lang.pick(
                    format!("restore its power limit: `sudo nvidia-smi -i {idx} -pl {p:.0}` (and find what lowered it)"),
                    format!("恢复它的功耗上限：`sudo nvidia-smi -i {idx} -pl {p:.0}`（并查清是什么把它调低的）"),
                ));
            }
            _ => {
                let w = g.median_of(|r| r.power_w);
                why.push(match (w, zh) {
                    (Some(w), false) => format!("SW Power Cap is active at {w:.0} W: it reaches its power limit at a lower clock than its peers, which points at a hot or failing part"),
                    (None, false) => "SW Power Cap is active: it reaches its power limit at a lower clock than its peers, which points at a hot or failing part".to_owned(),
                    (Some(w), true) => format!("SW Power Cap 生效中（{w:.0} W），它在比其他卡更低的时钟下就触到了功耗上限，说明有部件过热或故障"),
                    (None, true) => "SW Power Cap 生效中，它在比其他卡更低的时钟下就触到了功耗上限，说明有部件过热或故障".to_owned(),
                });
                remediation.push(lang.pick(
                    format!("compare power limits and draw across GPUs (`nvidia-smi -q -d POWER`); check `nvidia-smi -i {idx} -pl` matches the peers"),
                    format!("逐卡对比功耗上限和实际功耗（`nvidia-smi -q -d POWER`）；确认 `nvidia-smi -i {idx} -pl` 与其他卡一致"),
                ));
            }
        }
    }
    if reasons & REASON_APPLICATIONS_CLOCKS != 0 {
        why.push(s(
            "its application clocks are set lower (Applications Clocks Setting is active)",
            "它的应用时钟被设得更低（Applications Clocks Setting 生效中）",
        ));
        remediation.push(lang.pick(
            format!("reset clocks: `sudo nvidia-smi -i {idx} -rac` and `-rgc`"),
            format!("重置时钟：`sudo nvidia-smi -i {idx} -rac` 和 `-rgc`"),
        ));
    }
    if why.is_empty() {
        why.push(if g.readings.iter().any(|r| r.reasons_known) {
            s(
                "no throttle reason is reported: check for locked clocks (`nvidia-smi -q -d CLOCK`), XID errors (`dmesg | grep -i xid`) and its PCIe link",
                "没有报告任何降频原因，请检查时钟是否被锁定（`nvidia-smi -q -d CLOCK`）、XID 错误（`dmesg | grep -i xid`）以及它的 PCIe 链路",
            )
        } else {
            s(
                "this output does not show throttle reasons: run `nvidia-smi -q -d PERFORMANCE` on the node to see them",
                "这份输出里没有降频原因，可在节点上运行 `nvidia-smi -q -d PERFORMANCE` 查看",
            )
        });
    }
    remediation.push(s(
        "if it persists after the fix, reseat or replace the GPU",
        "修复后问题依旧的话，重新插拔或更换这张 GPU",
    ));
    (why, remediation)
}

/// No peers to compare with: a busy GPU held down by a hardware reason is still a lead.
fn lone_throttled(f: &Facts, lang: Lang) -> Option<Finding> {
    let zh = lang == Lang::Zh;
    // A hardware slowdown is only ever active on a GPU that is working (an idle one says
    // `Idle`); `-q -d PERFORMANCE` shows no utilisation, so "not idle" stands in for busy.
    let r = f.gpus.readings.iter().find(|r| (busy(r) || !r.has_reason(REASON_IDLE)) && hw_throttled(r))?;
    let reasons = reason_names(r.reasons & REASONS_HW);
    let mut what = if reasons.is_empty() {
        lang.pick("a thermal violation", "过热违规（thermal violation）").to_owned()
    } else {
        reasons.join(", ")
    };
    if let Some(t) = r.temp_c {
        what.push_str(&lang.pick(format!(" at {t:.0} °C"), format!("（{t:.0} °C）")));
    }
    let clock = match (r.sm_clock_mhz, r.max_sm_clock_mhz, zh) {
        (Some(c), Some(m), false) => format!(" (SM clock {c:.0} of {m:.0} MHz)"),
        (Some(c), None, false) => format!(" (SM clock {c:.0} MHz)"),
        (Some(c), Some(m), true) => format!("（SM 时钟 {c:.0} / {m:.0} MHz）"),
        (Some(c), None, true) => format!("（SM 时钟 {c:.0} MHz）"),
        _ => String::new(),
    };
    let deep =
        matches!((r.sm_clock_mhz, r.max_sm_clock_mhz), (Some(c), Some(m)) if c < peers::SLOW_RATIO * m);
    let mut evidence = vec![r.evidence.clone()];
    evidence.extend(r.detail.iter().filter(|d| d.line != r.evidence.line).take(2).cloned());
    let idx = r.index;
    let finding = RULE.doc.finding(
        lang,
        lang.pick(
            format!(
                "GPU {idx} is throttled under load by {what}{clock}. There are no peer readings to compare with, so this is a lead rather than a verdict: a hardware-throttled GPU slows every step of the replica it serves."
            ),
            format!(
                "GPU {idx} 在负载下因 {what} 被降频{clock}。没有同组其他卡的读数可以对比，所以这只是线索而非定论：被硬件降频的 GPU 会拖慢它所在副本的每一步。"
            ),
        ),
        FindingBody {
            confidence: if deep { 0.5 } else { 0.45 },
            evidence,
            remediation: texts(lang, &[
                (
                    "check cooling (fans, inlet temperature, airflow) and power delivery (PSU, cables, BMC event log)",
                    "检查散热（风扇、进风温度、风道）和供电（电源、线缆、BMC 事件日志）",
                ),
                (
                    "drain the node if decode latency on it is worse than on its peers",
                    "如果这个节点的 decode 延迟比其他节点差，就把它摘流",
                ),
                ("reseat or replace the GPU if the reason stays active", "如果降频原因一直存在，重新插拔或更换这张 GPU"),
            ]),
            next_checks: texts(lang, &[
                (
                    "run `nvidia-smi --query-gpu=index,clocks.sm,clocks_event_reasons.active,temperature.gpu,power.draw --format=csv` on all GPUs of the node to compare peers",
                    "对节点上所有 GPU 运行 `nvidia-smi --query-gpu=index,clocks.sm,clocks_event_reasons.active,temperature.gpu,power.draw --format=csv`，逐卡对比",
                ),
                (
                    "read the Clocks Event Reasons counters in `nvidia-smi -q -d PERFORMANCE`",
                    "查看 `nvidia-smi -q -d PERFORMANCE` 中的 Clocks Event Reasons 计数器",
                ),
            ]),
        },
    );
    Some(about(finding, Some(r)))
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::rules::RuleId;
    use crate::testutil::fixture;

    const EIGHT: &str = fixture!("smi/synthetic_8gpu_one_slow.txt");
    const CAPPED: &str = fixture!("smi/smi_power_capped.txt");
    const Q_CAPPED: &str = fixture!("smi/smi_q_power_capped.txt");
    const SERIES: &str = fixture!("smi/smi_query_series_load.csv");
    const DMON: &str = fixture!("smi/smi_dmon_load.txt");
    const IDLE: &str = fixture!("smi/smi_idle.txt");

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
        let f = case(&[("smi", EIGHT)]).snapshot(RuleId::SlowGpu, "articles_800_vs_1800").unwrap();
        assert!(f.summary.starts_with("GPU 5 runs its SM clock at 800 MHz"), "{}", f.summary);
        assert!(f.summary.contains("7 peers run at a median 1800 MHz"), "{}", f.summary);
        assert!(f.summary.contains("HW Slowdown") && f.summary.contains("86 °C"), "{}", f.summary);
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
        // Four GPUs, no hardware reason, a deep drop (0.52×): the snapshot holds the confidence.
        let f = case(&[("series.csv", &format!("{HEADER}{text}"))])
            .snapshot(RuleId::SlowGpu, "series_medians")
            .unwrap();
        assert!(f.summary.starts_with("GPU 2 runs its SM clock at 920 MHz"), "{}", f.summary);
        assert!(f.summary.contains("no throttle reason is reported"), "{}", f.summary);
    }

    #[test]
    fn lower_power_limit_than_peers() {
        let text = csv(&[
            (0, 1800, 620.0, 700.0, 60, 100, "0x0000000000000000"),
            (1, 1790, 615.0, 700.0, 61, 100, "0x0000000000000000"),
            (2, 1150, 398.0, 400.0, 58, 100, "0x0000000000000004"),
            (3, 1805, 625.0, 700.0, 60, 100, "0x0000000000000000"),
        ]);
        let f = case(&[("smi", &text)]).snapshot(RuleId::SlowGpu, "lower_power_limit").unwrap();
        assert!(f.summary.contains("power limit of 400 W while its peers run at 700 W"), "{}", f.summary);
        assert!(f.remediation.iter().any(|r| r.contains("nvidia-smi -i 2 -pl 700")), "{:?}", f.remediation);
    }

    #[test]
    fn lone_gpu_with_hw_thermal_is_a_lead() {
        let text = csv(&[(0, 990, 450.0, 700.0, 91, 100, "0x0000000000000048")]);
        let f = case(&[("smi", &text)]).snapshot(RuleId::SlowGpu, "lone_gpu_hw_thermal").unwrap();
        assert!(f.summary.contains("hw_slowdown, hw_thermal at 91 °C"), "{}", f.summary);
    }

    #[test]
    fn quiet_on_the_real_h200_captures() {
        // Idle with only `Idle` active; and a lone GPU at its 700 W power limit, SW-capped.
        for text in [IDLE, CAPPED, Q_CAPPED, SERIES, DMON] {
            assert!(case(&[("smi", text)]).fired(RuleId::SlowGpu).is_none());
        }
    }

    #[test]
    fn quiet_when_peers_are_equally_capped_or_the_slow_one_is_idle() {
        let capped: Vec<_> =
            (0..8).map(|i| (i, 1440 + i * 5, 695.0, 700.0, 59, 99, "0x0000000000000004")).collect();
        assert!(
            case(&[("smi", &csv(&capped))]).snapshot(RuleId::SlowGpu, "quiet_peers_equally_capped").is_none()
        );
        let mut idle_one = capped.clone();
        idle_one[3] = (3, 345, 78.0, 700.0, 38, 0, "0x0000000000000001");
        assert!(
            case(&[("smi", &csv(&idle_one))])
                .snapshot(RuleId::SlowGpu, "quiet_when_peers_are_equally_capped_or_the_slow_one_is_idle")
                .is_none()
        );
        // Two different machines in two inputs are not peers.
        let a = csv(&[(0, 1800, 620.0, 700.0, 60, 100, "0x0000000000000000")]);
        let b = csv(&[(0, 1000, 620.0, 700.0, 60, 100, "0x0000000000000000")]);
        assert!(
            case(&[("a", &a), ("b", &b)])
                .snapshot(RuleId::SlowGpu, "quiet_when_peers_are_equally_capped_or_the_slow_one_is_idle_2")
                .is_none()
        );
    }

    crate::rules::snapshots! {
        corpus_tbt_smi_dmon_clock_drop: [("tbt-smi-dmon-clock-drop.txt", fixture!("incidents/gpu/tbt-smi-dmon-clock-drop.txt"))],
        corpus_tbt_smi_q_hw_power_brake: [("tbt-smi-q-hw-power-brake.txt", fixture!("incidents/gpu/tbt-smi-q-hw-power-brake.txt"))],
    }
}
