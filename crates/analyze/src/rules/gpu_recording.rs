//! Findings of the GPU rules over a recording ([`triage_gpu::recording`]): one per GPU and rule,
//! under the rule ids `triage-runner` reports (`slow-gpu`, `gpu-power-cap`, `gpu-hw-throttle`,
//! `kv-leak`, `gpu-xid`, `gpu-ecc`), so a recording analysed here and replayed by the runner
//! give the same (rule, GPU) pairs. Each says the span it held, the GPU's worst and typical
//! readings under load, and the peers it was compared with; its evidence is the line of the
//! sample that raised it.

use super::RuleId;
use super::{Lang, RULES};
use crate::facts::Facts;
use crate::parsers::gpu_series::{GpuSeriesFacts, SeriesSource};
use crate::report::{EvidenceLine, Finding, Subject};
use triage_gpu::recording::Held;

/// Titles of the GPU rules the text analyzer has no rule of its own for.
const TITLES: &[(RuleId, &str, &str)] = &[
    (RuleId::GpuPowerCap, "A GPU held at its power limit", "GPU 被功耗上限压住"),
    (RuleId::GpuHwThrottle, "A GPU throttled by the hardware", "GPU 被硬件降频"),
    (RuleId::ThroughputZero, "Requests running, no token generated", "有请求在运行却不出 token"),
    (RuleId::GpuXid, "A GPU reported an XID error", "GPU 报告了 XID 错误"),
    (RuleId::GpuEcc, "Uncorrected ECC errors on a GPU", "GPU 出现不可纠正的 ECC 错误"),
];

/// Every recording's findings, in the order raised, added to the other rules' `findings`. A
/// series' `slow-gpu` that the snapshot rule already names for the same input and GPU (an
/// nvidia-smi series is read both ways) is not repeated: the snapshot's finding, which reads the
/// reasons against the peers' temperature and power limits, keeps its words and gains the
/// series' span.
pub(crate) fn add(f: &Facts, findings: &mut Vec<Finding>, lang: Lang) {
    // Only the other rules' findings are snapshots: a recording's own `slow-gpu` raised again
    // later (a straggler in hours 0, 6 and 12 of a day) is a finding of its own each time.
    let others = findings.len();
    for g in &f.gpu_series {
        for h in &g.finished.held {
            let gpu = h.finding.gpu.map(|i| i.to_string());
            let snapshot = findings[..others].iter_mut().find(|x| {
                h.finding.rule == RuleId::SlowGpu
                    && gpu.is_some()
                    && x.rule == RuleId::SlowGpu
                    && x.subject.as_ref().is_some_and(|s| s.gpu == gpu)
                    && x.evidence.first().is_some_and(|e| *e.input == *g.input)
            });
            match snapshot {
                Some(snapshot) => {
                    let (en, zh) = span(g, h);
                    snapshot.summary.push_str(
                        &lang.pick(format!(" Over the series: {en}."), format!("在序列中：{zh}。")),
                    );
                }
                None => findings.push(finding(g, h, lang)),
            }
        }
    }
}

fn secs(x: f64) -> String {
    if x >= 100.0 { format!("{x:.0}") } else { format!("{x:.1}") }
}

/// When a finding was raised and how long it held, in English and Chinese: `raised 12.7 s into
/// the nvidia-smi dmon series, held 11.7 s (still active at its end; times assumed 1 s apart:
/// the series carries no timestamps)`.
fn span(g: &GpuSeriesFacts, h: &Held) -> (String, String) {
    let held_s = h.to_t - h.from_t;
    let into = g.finished.from_t.map_or(0.0, |t0| h.from_t - t0);
    let (what_en, what_zh) = match g.source {
        SeriesSource::Nvml => ("the recording", "录制"),
        SeriesSource::SmiCsv => ("the nvidia-smi --query-gpu series", "nvidia-smi --query-gpu 序列"),
        SeriesSource::SmiDmon => ("the nvidia-smi dmon series", "nvidia-smi dmon 序列"),
        SeriesSource::Dcgm => ("the dcgm-exporter scrapes", "dcgm-exporter 抓取序列"),
    };
    let mut en = format!("raised {} s into {what_en}, held {} s", secs(into), secs(held_s));
    let mut zh = format!("{what_zh}开始后 {} s 出现，持续 {} s", secs(into), secs(held_s));
    let mut notes_en = Vec::new();
    let mut notes_zh = Vec::new();
    if h.open {
        notes_en.push("still active at its end".to_owned());
        notes_zh.push("到结束仍在".to_owned());
    }
    if let Some(i) = g.assumed_interval_s {
        notes_en.push(format!("times assumed {i} s apart where the series carries no timestamps"));
        notes_zh.push(format!("序列没有时间戳之处按间隔 {i} s 计"));
    }
    if !notes_en.is_empty() {
        en.push_str(&format!(" ({})", notes_en.join("; ")));
        zh.push_str(&format!("（{}）", notes_zh.join("；")));
    }
    (en, zh)
}

/// What to look at next, by what the series was read from.
fn next_check(source: SeriesSource, lang: Lang) -> &'static str {
    match source {
        SeriesSource::Nvml => lang.pick(
            "replay the same recording with `triage-runner replay FILE` to see each tick's findings",
            "用 `triage-runner replay FILE` 回放同一份录制，逐 tick 查看发现",
        ),
        SeriesSource::SmiCsv | SeriesSource::SmiDmon | SeriesSource::Dcgm => lang.pick(
            "record the node with `triage-runner record` for NVML's full readings (every throttle reason, violation counters, XIDs) at 1 Hz, then analyse the recording",
            "用 `triage-runner record` 以 1 Hz 录制该节点的完整 NVML 读数（全部降频原因、违规计数、XID），再分析这份录制",
        ),
    }
}

fn finding(g: &GpuSeriesFacts, h: &Held, lang: Lang) -> Finding {
    let gf = &h.finding;
    let (mut en, mut zh) = (format!("{}: ", gf.title), format!("{}：", gf.title));
    let (span_en, span_zh) = span(g, h);
    en.push_str(&span_en);
    zh.push_str(&span_zh);
    if let Some(mean) = h.sm_clock_mhz.mean() {
        en.push_str(&format!(
            "; SM clock under load {:.0}–{:.0} MHz, typically {mean:.0}",
            h.sm_clock_mhz.min, h.sm_clock_mhz.max
        ));
        zh.push_str(&format!(
            "；负载下 SM 时钟 {:.0}–{:.0} MHz，通常 {mean:.0}",
            h.sm_clock_mhz.min, h.sm_clock_mhz.max
        ));
    }
    if let Some(mean) = h.power_w.mean() {
        en.push_str(&format!(", power {:.0}–{:.0} W (typically {mean:.0})", h.power_w.min, h.power_w.max));
        zh.push_str(&format!("，功耗 {:.0}–{:.0} W（通常 {mean:.0}）", h.power_w.min, h.power_w.max));
    }
    if let Some(p) = h.peers_sm_clock_mhz {
        let peers: Vec<String> = h.peers.iter().map(u32::to_string).collect();
        en.push_str(&format!(
            "; busy peers (GPU {}) at a median {p:.0} MHz when it was raised",
            peers.join(", ")
        ));
        zh.push_str(&format!("；出现时忙碌的其他卡（GPU {}）SM 时钟中位数 {p:.0} MHz", peers.join("、")));
    }
    let title = match RULES.iter().find(|r| r.doc.id.is(&gf.rule)) {
        Some(r) => r.doc.text(lang).title.to_owned(),
        None => TITLES
            .iter()
            .find(|(id, ..)| id.is(&gf.rule))
            .map_or_else(|| gf.title.clone(), |(_, en, zh)| lang.pick(*en, *zh).to_owned()),
    };
    let mut evidence =
        vec![EvidenceLine::quoted_shared(&g.input, h.line, gf.evidence.first().map_or("", String::as_str))];
    evidence.extend(gf.evidence.iter().skip(1).map(|e| EvidenceLine::quoted_shared(&g.input, h.line, e)));
    let gpu = gf.gpu;
    let meta_gpu = gpu.and_then(|i| g.meta.as_ref()?.gpus.iter().find(|m| m.index == i));
    Finding {
        class: gf.class,
        rule: gf.rule.clone(),
        title,
        confidence: gf.confidence,
        summary: lang.pick(en, zh),
        evidence,
        remediation: vec![gf.remediation.clone()],
        next_checks: vec![next_check(g.source, lang).to_owned()],
        subject: gpu.map(|i| Subject {
            gpu: Some(i.to_string()),
            uuid: meta_gpu.map(|m| crate::text::quote_redacted(&m.uuid)).filter(|u| !u.is_empty()),
            model_name: meta_gpu.map(|m| crate::text::quote_redacted(&m.name)).filter(|n| !n.is_empty()),
            ..Subject::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use crate::Lang;
    use crate::report::Verdict;
    use crate::rules::RuleId;
    use crate::testutil::{run, run_in};
    use triage_gpu::{Series, WatchConfig, replay};

    const H200X8: &str = crate::testutil::fixture!("nvml/h200x8_one_slow.jsonl");

    /// The recordings in `tests/data/nvml`: the analyzer's (rule, GPU) pairs are the runner's
    /// replay's (`crates/cli/tests/integration/gpu_recordings.rs` checks every recording on disk too).
    #[test]
    fn the_same_rule_and_gpu_pairs_as_the_runners_replay() {
        let real = crate::testutil::fixture!("nvml/h200_series.jsonl");
        for (name, text) in [("h200x8_one_slow.jsonl", H200X8), ("h200_series.jsonl", real)] {
            let mut want: Vec<(String, Option<String>)> =
                replay(&Series::parse(text), None, WatchConfig::default())
                    .into_iter()
                    .map(|f| (f.rule, f.gpu.map(|g| g.to_string())))
                    .collect();
            let report = run(name, text).report;
            let mut got: Vec<(String, Option<String>)> = report
                .findings
                .iter()
                .map(|f| (f.rule.clone(), f.subject.as_ref().and_then(|s| s.gpu.clone())))
                .collect();
            triage_base::sort::sort(&mut want);
            triage_base::sort::sort(&mut got);
            assert_eq!(got, want, "{name}");
            assert!(!want.is_empty(), "{name}: the fixture shows nothing");
            assert_eq!(report.inputs[0].kind.as_str(), "gpu_series", "{name}");
        }
    }

    #[test]
    fn the_straggler_is_tbt_tail_naming_gpu_5_and_the_power_cap_alone_is_healthy() {
        let r = run("h200x8_one_slow.jsonl", H200X8).report;
        assert_eq!(r.verdict, Verdict::TbtTail, "{:#?}", r.findings);
        let top = &r.findings[0];
        assert_eq!(top.rule, RuleId::SlowGpu);
        assert_eq!(top.subject.as_ref().unwrap().gpu.as_deref(), Some("5"));
        assert!(top.summary.contains("800") && top.summary.contains("1800 MHz"), "{}", top.summary);
        assert!(top.summary.contains("held 12.2 s"), "{}", top.summary);
        assert_eq!(top.evidence[0].line, 1015);
        // The real H200 at its power limit: the runner's advisory, and HEALTHY.
        let real = crate::testutil::fixture!("nvml/h200_series.jsonl");
        let r = run("h200.jsonl", real).report;
        assert_eq!(r.verdict, Verdict::Healthy, "{:#?}", r.findings);
        assert_eq!(r.findings.iter().map(|f| f.rule.as_str()).collect::<Vec<_>>(), [RuleId::GpuPowerCap]);
        let zh = run_in(Lang::Zh, "h200.jsonl", real).report;
        assert_eq!(zh.findings[0].title, "GPU 被功耗上限压住");
        assert!(zh.findings[0].summary.contains("录制开始后"), "{}", zh.findings[0].summary);
    }

    /// A recording pasted with damage: junk lines are issues with their numbers, the rest read.
    #[test]
    fn junk_lines_are_issues_and_the_rest_is_read() {
        let mut text = String::from("{\"meta\": {\"gpus\": [{\"index\": 0}]}}\n");
        for (i, line) in H200X8.lines().skip(1).enumerate() {
            text.push_str(line);
            text.push('\n');
            if i == 40 {
                text.push_str("{\"t\": \"soon\", \"gpu\": 1, \"sm_clock_mhz\": 9}\n");
            }
        }
        // A key in a value serde quotes back in its message: redacted in the issue.
        text.push_str(
            "{\"t\": \"sk-proj-abcdefghijklmnopqrstuvwxyz0123456789\", \"gpu\": 1, \"sm_clock_mhz\": 9}\n",
        );
        let r = run("damaged.jsonl", &text).report;
        assert_eq!(r.verdict, Verdict::TbtTail);
        let issues: Vec<usize> = r.inputs.iter().flat_map(|i| i.issues.iter().map(|x| x.line)).collect();
        assert_eq!(issues[0], 43, "{:?}", r.inputs);
        assert_eq!(issues.len(), 2, "{:?}", r.inputs);
        let all = format!("{:?}", r.inputs);
        assert!(!all.contains("abcdefghijklmnop"), "{all}");
    }

    /// The recording's samples, parsed.
    fn samples(text: &str) -> Vec<triage_gpu::GpuSample> {
        text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }

    /// Unix seconds as nvidia-smi's CSV writes them (`2026/11/30 00:11:05.732`).
    fn smi_time(t: f64) -> String {
        let (days, secs) = ((t / 86_400.0).floor() as i64, t.rem_euclid(86_400.0));
        let (y, m, d) = triage_base::time::civil_from_days(days);
        let (h, mi, sec) = ((secs / 3600.0) as i64, (secs % 3600.0 / 60.0) as i64, secs % 60.0);
        format!("{y}/{m:02}/{d:02} {h:02}:{mi:02}:{sec:06.3}")
    }

    /// (rule, GPU) pairs of a report, sorted.
    fn pairs(report: &crate::report::Report) -> Vec<(String, Option<String>)> {
        let mut got: Vec<(String, Option<String>)> = report
            .findings
            .iter()
            .map(|f| (f.rule.to_string(), f.subject.as_ref().and_then(|s| s.gpu.clone())))
            .collect();
        triage_base::sort::sort(&mut got);
        got
    }

    /// (rule, GPU) pairs of the runner's replay of `samples`, sorted.
    fn replayed(samples: &[triage_gpu::GpuSample]) -> Vec<(String, Option<String>)> {
        let text: String = samples.iter().map(|s| serde_json::to_string(s).unwrap() + "\n").collect();
        let mut want: Vec<(String, Option<String>)> =
            replay(&Series::parse(&text), None, WatchConfig::default())
                .into_iter()
                .map(|f| (f.rule, f.gpu.map(|g| g.to_string())))
                .collect();
        triage_base::sort::sort(&mut want);
        want
    }

    /// The eight-GPU recording written as `nvidia-smi --query-gpu … --format=csv -l` writes it:
    /// the same (rule, GPU) pairs as the runner's replay of the recording, the straggler named
    /// once (the snapshot rule's words, the series' span).
    #[test]
    fn a_query_gpu_loop_is_judged_like_the_recording() {
        let s = samples(H200X8);
        let mut csv = String::from(
            "timestamp, index, uuid, pstate, clocks.sm [MHz], clocks.max.sm [MHz], power.draw [W], power.limit [W], utilization.gpu [%], memory.used [MiB], memory.total [MiB], temperature.gpu, clocks_event_reasons.active\n",
        );
        for x in &s {
            let mib = |b: Option<u64>| b.unwrap_or(0) as f64 / 1_048_576.0;
            csv.push_str(&format!(
                "{}, {}, {}, P{}, {} MHz, {} MHz, {:.2} W, {:.2} W, {} %, {:.0} MiB, {:.0} MiB, {}, 0x{:016x}\n",
                smi_time(x.t),
                x.gpu,
                x.uuid.as_deref().unwrap_or("[N/A]"),
                x.pstate.unwrap_or(0),
                x.sm_clock_mhz.unwrap_or(0),
                x.max_sm_clock_mhz.unwrap_or(0),
                f64::from(x.power_mw.unwrap_or(0)) / 1e3,
                f64::from(x.power_limit_mw.unwrap_or(0)) / 1e3,
                x.util_gpu_pct.unwrap_or(0),
                mib(x.mem_used_bytes),
                mib(x.mem_total_bytes),
                x.temp_c.unwrap_or(0),
                x.clock_event_reasons.unwrap_or(0),
            ));
        }
        let r = run("smi.csv", &csv).report;
        assert_eq!(pairs(&r), replayed(&s));
        assert_eq!(r.verdict, Verdict::TbtTail);
        let slow: Vec<_> = r.findings.iter().filter(|f| f.rule == RuleId::SlowGpu).collect();
        assert_eq!(slow.len(), 1, "{:#?}", r.findings);
        assert!(slow[0].summary.contains("HW Slowdown"), "{}", slow[0].summary);
        assert!(
            slow[0].summary.contains("Over the series: raised 12.7 s into the nvidia-smi --query-gpu series"),
            "{}",
            slow[0].summary
        );
        assert!(!slow[0].summary.contains("assumed"), "{}", slow[0].summary);
        assert!(r.series.contains_key("gpu.sm_clock_mhz.5"), "{:?}", r.series.keys());
    }

    /// The same recording as dcgm-exporter scrapes one after another, with and without sample
    /// timestamps.
    #[test]
    fn dcgm_scrapes_over_time_are_judged_like_the_recording() {
        let s = samples(H200X8);
        let mut ticks: Vec<Vec<&triage_gpu::GpuSample>> = Vec::new();
        for x in &s {
            match ticks.last_mut() {
                Some(t) if t.iter().all(|y| y.gpu != x.gpu) => t.push(x),
                _ => ticks.push(vec![x]),
            }
        }
        for stamped in [true, false] {
            let mut text = String::new();
            for tick in &ticks {
                let ts =
                    if stamped { format!(" {}", (tick[0].t * 1000.0).round() as i64) } else { String::new() };
                type Get = fn(&triage_gpu::GpuSample) -> Option<f64>;
                let fields: [(&str, Get); 9] = [
                    ("DCGM_FI_DEV_SM_CLOCK", |x| x.sm_clock_mhz.map(f64::from)),
                    ("DCGM_FI_DEV_MAX_SM_CLOCK", |x| x.max_sm_clock_mhz.map(f64::from)),
                    ("DCGM_FI_DEV_POWER_USAGE", |x| x.power_mw.map(|p| f64::from(p) / 1e3)),
                    ("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", |x| x.power_limit_mw.map(|p| f64::from(p) / 1e3)),
                    ("DCGM_FI_DEV_GPU_UTIL", |x| x.util_gpu_pct.map(f64::from)),
                    ("DCGM_FI_DEV_FB_USED", |x| x.mem_used_bytes.map(|b| (b as f64 / 1_048_576.0).round())),
                    ("DCGM_FI_DEV_FB_FREE", |x| {
                        Some(((x.mem_total_bytes? - x.mem_used_bytes?) as f64 / 1_048_576.0).round())
                    }),
                    ("DCGM_FI_DEV_GPU_TEMP", |x| x.temp_c.map(f64::from)),
                    ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", |x| x.clock_event_reasons.map(|r| r as f64)),
                ];
                for (name, get) in fields {
                    text.push_str(&format!("# HELP {name} a DCGM field\n# TYPE {name} gauge\n"));
                    for x in tick {
                        let labels = format!(
                            "gpu=\"{}\",UUID=\"{}\",pci_bus_id=\"00000000:{:02X}:00.0\",device=\"nvidia{}\",modelName=\"NVIDIA H200\",Hostname=\"node-7\"",
                            x.gpu,
                            x.uuid.as_deref().unwrap_or(""),
                            0x18 + x.gpu,
                            x.gpu
                        );
                        if let Some(v) = get(x) {
                            text.push_str(&format!("{name}{{{labels}}} {v}{ts}\n"));
                        }
                    }
                }
            }
            let r = run("dcgm.prom", &text).report;
            if stamped {
                assert_eq!(pairs(&r), replayed(&s));
            }
            assert_eq!(r.verdict, Verdict::TbtTail, "stamped {stamped}: {:#?}", r.findings);
            let slow: Vec<_> = r.findings.iter().filter(|f| f.rule == RuleId::SlowGpu).collect();
            assert_eq!(slow.len(), 1, "{:#?}", r.findings);
            assert_eq!(slow[0].subject.as_ref().unwrap().gpu.as_deref(), Some("5"));
            assert_eq!(slow[0].summary.contains("assumed 1 s apart"), !stamped, "{}", slow[0].summary);
            assert!(slow[0].summary.contains("dcgm-exporter scrapes"), "{}", slow[0].summary);
            assert_eq!(r.inputs[0].kind.as_str(), "prom_metrics");
        }
        // One scrape: the snapshot rule alone compares the GPUs of that moment.
        let one: String = {
            let mut t = String::new();
            for x in
                ticks.iter().find(|t| t.iter().any(|x| x.gpu == 5 && x.sm_clock_mhz == Some(800))).unwrap()
            {
                t.push_str(&format!(
                    "DCGM_FI_DEV_SM_CLOCK{{gpu=\"{}\",Hostname=\"n\"}} {}\n",
                    x.gpu,
                    x.sm_clock_mhz.unwrap()
                ));
                t.push_str(&format!("DCGM_FI_DEV_GPU_UTIL{{gpu=\"{}\",Hostname=\"n\"}} 99\n", x.gpu));
            }
            t
        };
        let r = run("one.prom", &one).report;
        assert_eq!(r.verdict, Verdict::TbtTail, "{:#?}", r.findings);
        assert_eq!(r.findings[0].rule, RuleId::SlowGpu);
        assert!(r.series.keys().all(|k| !k.starts_with("gpu.")), "one scrape is not a recording");
    }

    /// `nvidia-smi dmon` without `-o DT`: ticks 1 s apart, as the series says; the rules see what
    /// dmon carries (no maximum clock or power limit, the power cap from `pviol`).
    #[test]
    fn a_dmon_series_is_judged_on_what_dmon_carries() {
        let s = samples(H200X8);
        let mut text = String::from(
            "# gpu    pwr  gtemp     sm    mem   mclk   pclk  pviol  tviol     fb\n# Idx      W      C      %      %    MHz    MHz      %   bool     MB\n",
        );
        let mut reduced = Vec::new();
        let (mut tick, mut seen) = (0u32, std::collections::BTreeSet::new());
        for x in &s {
            if !seen.insert(x.gpu) {
                seen.clear();
                seen.insert(x.gpu);
                tick += 1;
            }
            let pviol = if x.reasons() & 0x4 != 0 { 100 } else { 0 };
            let fb = x.mem_used_bytes.unwrap_or(0) / 1_048_576;
            let pwr = (f64::from(x.power_mw.unwrap_or(0)) / 1e3).round() as u32;
            text.push_str(&format!(
                "{:>5} {pwr:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {pviol:>6} {:>6} {fb:>7}\n",
                x.gpu,
                x.temp_c.unwrap_or(0),
                x.util_gpu_pct.unwrap_or(0),
                x.util_mem_pct.unwrap_or(0),
                x.mem_clock_mhz.unwrap_or(0),
                x.sm_clock_mhz.unwrap_or(0),
                0,
            ));
            reduced.push(triage_gpu::GpuSample {
                t: f64::from(tick),
                gpu: x.gpu,
                sm_clock_mhz: x.sm_clock_mhz,
                power_mw: Some(pwr * 1000),
                util_gpu_pct: x.util_gpu_pct,
                mem_used_bytes: Some(fb * 1_048_576),
                temp_c: x.temp_c,
                clock_event_reasons: Some(if pviol > 0 { 0x4 } else { 0 }),
                ..triage_gpu::GpuSample::default()
            });
        }
        let r = run("dmon.txt", &text).report;
        assert_eq!(pairs(&r), replayed(&reduced));
        assert_eq!(r.verdict, Verdict::TbtTail, "{:#?}", r.findings);
        let slow = r.findings.iter().find(|f| f.rule == RuleId::SlowGpu).unwrap();
        assert!(
            slow.summary.contains("nvidia-smi dmon series") && slow.summary.contains("assumed 1 s apart"),
            "{}",
            slow.summary
        );
        let cap = r.findings.iter().find(|f| f.rule == RuleId::GpuPowerCap).unwrap();
        assert!(!cap.summary.contains('?'), "{}", cap.summary);
    }

    /// A straggler raised three times over a recording is three findings, not one with the
    /// later spans merged into it.
    #[test]
    fn a_straggler_raised_again_is_a_finding_each_time() {
        let mut text = String::new();
        for round in 0..3u32 {
            for sec in 0..40u32 {
                let t = 1_795_990_000.0 + f64::from(round * 80 + sec);
                for gpu in 0..4u32 {
                    let (sm, util) = if gpu == 2 { (800, 99) } else { (1800, 99) };
                    text.push_str(&format!(
                        "{{\"t\": {t}, \"gpu\": {gpu}, \"sm_clock_mhz\": {sm}, \"max_sm_clock_mhz\": 1980, \"power_mw\": 600000, \"power_limit_mw\": 700000, \"util_gpu_pct\": {util}}}\n"
                    ));
                }
            }
            for sec in 40..80u32 {
                let t = 1_795_990_000.0 + f64::from(round * 80 + sec);
                for gpu in 0..4u32 {
                    text.push_str(&format!(
                        "{{\"t\": {t}, \"gpu\": {gpu}, \"sm_clock_mhz\": 1980, \"power_mw\": 80000, \"power_limit_mw\": 700000, \"util_gpu_pct\": 0}}\n"
                    ));
                }
            }
        }
        let r = run("rounds.jsonl", &text).report;
        let slow = r.findings.iter().filter(|f| f.rule == RuleId::SlowGpu).count();
        assert_eq!(slow, 3, "{:#?}", r.findings);
        assert_eq!(pairs(&r), replayed(&samples(&text)));
    }
}
