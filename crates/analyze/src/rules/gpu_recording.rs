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
    for g in &f.gpu_series {
        for h in &g.finished.held {
            let gpu = h.finding.gpu.map(|i| i.to_string());
            let snapshot = findings.iter_mut().find(|x| {
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
}
