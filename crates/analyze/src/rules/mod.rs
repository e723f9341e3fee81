//! The diagnosis rules: one file per rule, named after the problem it detects.
//!
//! Each file holds the rule's documentation (what it detects, why it matters, an example, what
//! to try), its `check` over [`Facts`], and its tests. [`RULES`] lists them all; the CLI, the
//! site's playbook and the flashcards all read the same [`RuleDoc`]s.

use super::facts::Facts;
use super::report::{Class, EvidenceLine, Finding};
pub use crate::ids::{RuleId, listed};
pub use registry::RULES;
pub use triage_base::lang::Lang;

mod activation_peak;
mod allocator_fragmentation;
mod api_key_rejected;
mod base_url_wrong;
mod bench_itl_tail;
mod bench_overloaded;
mod bench_ttft_tail;
mod chunked_prefill_off;
mod client_calls_metrics_port;
mod client_retries_failing;
mod cold_start;
mod colocated_process;
mod context_length_exceeded;
mod cpu_offload_split;
mod decode_rate_collapses;
mod decode_slower_same_load;
mod decode_slows_with_context;
mod engine_dead;
mod engine_start_failed;
pub(crate) mod generic;
mod gpu_hw_error;
mod gpu_not_detected;
pub(crate) mod gpu_recording;
mod host_ram_exhausted;
mod input_too_long;
mod kv_leak;
mod kv_offload_degraded;
mod kv_pool_exhausted;
mod kv_pressure_preemption;
mod kv_reservation_too_large;
mod long_prompt_blocks_prefill;
mod long_sequence_in_batch;
mod max_seq_len_reduced_by_kv;
mod mean_not_p99;
mod missing_timestamps;
mod model_not_found;
mod nccl_hang;
mod no_abort_on_timeout;
mod prefill_stalls_decode;
mod prefix_cache_hit_collapse;
mod prefix_cache_ineffective;
mod prefix_cache_miss_reprefill;
mod queueing_exceeds_capacity;
mod registry;
pub(crate) mod replica_skewed;
mod request_exceeds_build_limits;
mod retries_mask_failures;
mod scheduler_stall;
mod slow_gpu;
mod spec_decode_acceptance_low;
mod tbt_above_target;
mod timeout_too_short;
mod ttft_above_target;
mod ttft_grows_with_load;
mod ubatch_too_small;
pub(crate) mod unclaimed_error;
mod upstream_cut;
mod warmup_oom;
mod weights_exceed_gpu;
mod worker_died;

/// A rule's documentation, shown wherever the rule's findings are. The top-level text fields
/// are English; [`RuleDoc::zh`] holds the same sections in Chinese, and [`RuleDoc::text`] picks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleDoc {
    /// The rule's id (kebab-case, named after the problem, in reports).
    pub id: RuleId,
    /// The failure class of the rule's findings.
    pub class: Class,
    /// Short name of the problem (English).
    pub title: &'static str,
    /// What the rule detects: the lines and numbers it reads (English).
    pub detects: &'static str,
    /// Why the problem matters (English).
    pub why: &'static str,
    /// An example input or situation that fires it (English).
    pub example: &'static str,
    /// What to try (English).
    pub fix: &'static str,
    /// The same sections in Chinese.
    pub zh: RuleText,
}

/// The text sections of a rule's documentation in one language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleText {
    /// Short name of the problem.
    pub title: &'static str,
    /// What the rule detects: the lines and numbers it reads.
    pub detects: &'static str,
    /// Why the problem matters.
    pub why: &'static str,
    /// An example input or situation that fires it.
    pub example: &'static str,
    /// What to try.
    pub fix: &'static str,
}

/// A rule: its docs and its check, which writes its finding in the language asked for.
#[derive(Clone, Copy)]
pub struct Rule {
    /// The rule's documentation.
    pub doc: RuleDoc,
    /// Reads the facts; a finding in the given language when the rule fires, else `None`.
    pub check: fn(&Facts, Lang) -> Option<Finding>,
}

pub(crate) use crate::text::Both;

/// A parser's `lines` for a rule together with the known messages the signal table matched for
/// it (`rule`, at most `max`) in any other section — each line once, in input then line order.
pub(crate) fn with_signal_lines(
    mut lines: Vec<EvidenceLine>,
    f: &Facts,
    rule: RuleId,
    max: usize,
) -> Vec<EvidenceLine> {
    for l in f.signals.lines_for(rule, max) {
        if !lines.iter().any(|e| e.input == l.input && e.line == l.line) {
            lines.push(l);
        }
    }
    triage_base::sort::sort_by(&mut lines, |a, b| a.input.cmp(&b.input).then(a.line.cmp(&b.line)));
    lines
}

/// The lines of `items` in `lang`.
pub(crate) fn texts(lang: Lang, items: &[Both]) -> Vec<String> {
    items.iter().map(|(en, zh)| lang.pick(*en, *zh).to_owned()).collect()
}

impl RuleDoc {
    /// The documentation's text in `lang`.
    pub fn text(&self, lang: Lang) -> RuleText {
        match lang {
            Lang::En => RuleText {
                title: self.title,
                detects: self.detects,
                why: self.why,
                example: self.example,
                fix: self.fix,
            },
            Lang::Zh => self.zh,
        }
    }

    /// A finding of this rule, titled in `lang` (the summary and `body` are already in it).
    pub(crate) fn finding(&self, lang: Lang, summary: String, body: FindingBody) -> Finding {
        let FindingBody { confidence, evidence, remediation, next_checks } = body;
        Finding {
            class: self.class,
            rule: self.id.as_str().to_owned(),
            title: self.text(lang).title.to_owned(),
            confidence: (confidence.clamp(0.0, 1.0) * 100.0).round() / 100.0,
            summary,
            evidence,
            remediation,
            next_checks,
            subject: None,
        }
    }

    /// The ending of a rule that collects reasons: none, no finding; else a finding whose summary
    /// is `"{lead}: {reason}; {reason}."` (`"{lead}：{reason}；{reason}。"` in Chinese; `lead` is
    /// `(en, zh)`, and an empty lead leaves the reasons alone: `"{reason}; {reason}."`), the rest
    /// from `body`.
    pub(crate) fn finding_from_reasons(
        &self,
        lang: Lang,
        lead: (&str, &str),
        reasons: &[String],
        body: FindingBody,
    ) -> Option<Finding> {
        self.finding_from_reasons_then(lang, lead, reasons, String::new, body)
    }

    /// As [`Self::finding_from_reasons`], with `then()` — text already in `lang`, made only when
    /// there are reasons — right after the reasons' closing stop: `"{lead}: {reasons}.{then}"`.
    pub(crate) fn finding_from_reasons_then(
        &self,
        lang: Lang,
        lead: (&str, &str),
        reasons: &[String],
        then: impl FnOnce() -> String,
        body: FindingBody,
    ) -> Option<Finding> {
        if reasons.is_empty() {
            return None;
        }
        let (lead, separator, joiner, stop) = match lang {
            Lang::En => (lead.0, ": ", "; ", "."),
            Lang::Zh => (lead.1, "：", "；", "。"),
        };
        let lead = if lead.is_empty() { String::new() } else { format!("{lead}{separator}") };
        let summary = format!("{lead}{}{stop}{}", reasons.join(joiner), then());
        Some(self.finding(lang, summary, body))
    }

    /// A finding of this rule made from the known messages it explains ([`Signals::for_rule`]):
    /// `None` when none was seen. The summary is `finding.summary` of the number of lines that
    /// matched; the evidence, the first four of those lines.
    ///
    /// [`Signals::for_rule`]: crate::signals::Signals::for_rule
    pub(crate) fn finding_from_signals(
        &self,
        f: &Facts,
        lang: Lang,
        finding: SignalFinding<'_, impl FnOnce(u64) -> String>,
    ) -> Option<Finding> {
        let n = f.signals.count_for(self.id);
        if n == 0 {
            return None;
        }
        let SignalFinding { confidence, summary, remediation, next_checks } = finding;
        Some(self.finding(
            lang,
            summary(n),
            FindingBody {
                confidence,
                evidence: f.signals.lines_for(self.id, 4),
                remediation: texts(lang, remediation),
                next_checks: texts(lang, next_checks),
            },
        ))
    }
}

/// What a finding says besides its summary, already in the report's language: how sure, the
/// lines that prove it, what to change, what to check next.
pub(crate) struct FindingBody {
    pub confidence: f64,
    pub evidence: Vec<EvidenceLine>,
    pub remediation: Vec<String>,
    pub next_checks: Vec<String>,
}

/// What a finding made from known messages says ([`RuleDoc::finding_from_signals`]): how sure, the
/// summary given how many lines matched (already in the report's language), and what to change
/// and check next in both languages.
pub(crate) struct SignalFinding<'a, S> {
    pub confidence: f64,
    pub summary: S,
    pub remediation: &'a [Both],
    pub next_checks: &'a [Both],
}

/// Rules that name why an engine died or could not start: when one of them fires, the death
/// (`engine-dead`, `engine-start-failed`) is its consequence and ranks below it.
pub(crate) const CAUSES_OF_DEATH: &[RuleId] = &[
    RuleId::KvReservationTooLarge,
    RuleId::WarmupOom,
    RuleId::KvPoolExhausted,
    RuleId::WeightsExceedGpu,
    RuleId::HostRamExhausted,
    RuleId::InputTooLong,
    RuleId::ActivationPeak,
    RuleId::AllocatorFragmentation,
    RuleId::ColocatedProcess,
    RuleId::NcclHang,
    RuleId::WorkerDied,
    RuleId::GpuHwError,
    RuleId::SchedulerStall,
];

/// Rules that report a consequence, not a cause: an engine that died. An error no rule explains
/// next to one of them leaves the verdict INCONCLUSIVE — the death is certain, its cause is not.
pub const CONSEQUENCES: &[RuleId] = &[RuleId::EngineDead];

/// With a CUDA fault in the paste (an illegal memory access, an unspecified launch failure, a
/// device-side assert), what the fault brought down — the NCCL watchdog that caught it, the
/// worker or engine that died of it — is a consequence too: the fault is the cause, and only a
/// hardware error explains it.
const CONSEQUENCES_OF_A_CUDA_FAULT: &[RuleId] =
    &[RuleId::EngineDead, RuleId::NcclHang, RuleId::WorkerDied, RuleId::EngineStartFailed];

/// Signals of a CUDA fault whose cause the message does not name.
const CUDA_FAULTS: &[&str] = &[
    "cuda-illegal-memory-access",
    "cuda-device-side-assert",
    "torch-cuda-error-unspecified-launch-failure",
    "torch-cuda-error-misaligned-address",
];

/// The consequence rules for these facts ([`CONSEQUENCES`], more with a CUDA fault).
pub fn consequences(f: &Facts) -> &'static [RuleId] {
    if CUDA_FAULTS.iter().any(|id| f.signals.seen(id).is_some()) {
        CONSEQUENCES_OF_A_CUDA_FAULT
    } else {
        CONSEQUENCES
    }
}

/// Rules that report a symptom's figure over its target with no cause ("Nothing here says why
/// yet"): when a rule names a cause of the same class, the symptom finding says nothing more and
/// is dropped (`Analyzer::finish`).
pub const SYMPTOMS: &[RuleId] = &[RuleId::TtftAboveTarget, RuleId::TbtAboveTarget];

/// Rules that point out a blind spot in how the service is observed (a dashboard of means,
/// logs without timestamps) or a tuning left on the table (a prefix cache that hits nothing,
/// speculative drafts that are never accepted),
/// not a fault: they never decide the verdict, and a service whose
/// only findings are these is HEALTHY when the input shows health. `gpu-power-cap` (a GPU
/// recording's, [`gpu_recording`]) is how a fully loaded GPU holds its power limit: context, not a
/// fault.
pub const ADVISORIES: &[RuleId] = &[
    RuleId::MissingTimestamps,
    RuleId::MeanNotP99,
    RuleId::PrefixCacheIneffective,
    RuleId::SpecDecodeAcceptanceLow,
    RuleId::GpuPowerCap,
];

/// The docs of every rule (for the site's playbook and the flashcards).
pub fn docs() -> impl Iterator<Item = &'static RuleDoc> {
    RULES.iter().map(|r| &r.doc)
}

/// Quantile of a sketch, when it has data.
pub(crate) fn q(s: &triage_base::stats::QuantileSketch, p: f64) -> Option<f64> {
    s.quantile(p)
}

/// The rules' one test harness: `case(inputs)` analyses the inputs as `triage analyze` does, in
/// English and in Chinese, and checks the two reports are the same but for their text (the same
/// findings, numbers and evidence; the Chinese text Chinese). A test then reads the report
/// ([`Case::en`]), one rule's finding ([`Case::fired`]) or its snapshot ([`Case::snapshot`]).
#[cfg(test)]
pub(crate) fn case(inputs: &[(&str, &str)]) -> Case {
    let en = crate::analyze(inputs);
    let zh = crate::analyze_in(Lang::Zh, inputs);
    crate::assert_same_but_text(&en, &zh, "case");
    Case { en, zh, names: inputs.iter().map(|(name, _)| (*name).to_owned()).collect() }
}

/// One analysis in both languages ([`case`]).
#[cfg(test)]
pub(crate) struct Case {
    /// The English report.
    pub en: crate::report::Report,
    /// The Chinese report (the same but for its text).
    pub zh: crate::report::Report,
    /// The inputs' names, for the snapshots' descriptions.
    names: Vec<String>,
}

#[cfg(test)]
impl Case {
    /// The English finding of `rule`, if it fired.
    pub(crate) fn fired(&self, rule: RuleId) -> Option<Finding> {
        self.en.findings.iter().find(|f| f.rule == rule).cloned()
    }

    /// The finding of `rule` in `lang`, if it fired.
    pub(crate) fn fired_in(&self, lang: Lang, rule: RuleId) -> Option<Finding> {
        let r = match lang {
            Lang::En => &self.en,
            Lang::Zh => &self.zh,
        };
        r.findings.iter().find(|f| f.rule == rule).cloned()
    }

    /// What `rule` finds, in both languages, checked against the snapshot
    /// `snapshots/{rule}@{name}.snap` (`None` when it does not fire). The snapshot shows
    /// everything a reader of the finding sees — class, confidence, title and summary in English
    /// and Chinese, each evidence line with the input and line number it cites, remediation and
    /// next checks in both languages — so a change to any of it is a reviewed diff, not a pinned
    /// literal. `INSTA_UPDATE=always` rewrites the snapshots; a missing one fails.
    pub(crate) fn snapshot(&self, rule: RuleId, name: &str) -> Option<Finding> {
        use std::fmt::Write as _;
        assert!(RULES.iter().any(|r| r.doc.id == rule), "{rule} is not a rule");
        let (en, zh) = (&self.en, &self.zh);
        let find = |r: &crate::report::Report| r.findings.iter().find(|f| f.rule == rule).cloned();
        let mut out = String::new();
        let (e, z) = (find(en), find(zh));
        match (&e, &z) {
            (Some(e), Some(z)) => {
                let _ = writeln!(out, "rule: {}", e.rule);
                let _ = writeln!(out, "class: {:?}", e.class);
                let _ = writeln!(out, "confidence: {}", e.confidence);
                let _ = writeln!(out, "title.en: {}", e.title);
                let _ = writeln!(out, "title.zh: {}", z.title);
                let _ = writeln!(out, "summary.en: {}", e.summary);
                let _ = writeln!(out, "summary.zh: {}", z.summary);
                let _ = writeln!(out, "evidence:");
                for l in &e.evidence {
                    let _ = writeln!(out, "  {}:{}: {}", l.input, l.line, l.text);
                }
                for (name, en_items, zh_items) in [
                    ("remediation", &e.remediation, &z.remediation),
                    ("next_checks", &e.next_checks, &z.next_checks),
                ] {
                    for (lang, items) in [("en", en_items), ("zh", zh_items)] {
                        let _ = writeln!(out, "{name}.{lang}:");
                        for item in items {
                            let _ = writeln!(out, "  - {item}");
                        }
                    }
                }
            }
            (None, None) => out.push_str("None\n"),
            (e, z) => panic!("{rule}: fires in one language only: en {e:?}, zh {z:?}"),
        }
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path("snapshots");
        settings.set_prepend_module_to_snapshot(false);
        settings.set_omit_expression(true);
        settings.set_description(format!("{rule} on {name}: {}", self.names.join(", ")));
        settings.bind(|| insta::assert_snapshot!(format!("{rule}@{name}"), out));
        e
    }
}
/// Declares one snapshot test per case for the rule of the file it is used in
/// (`super::RULE`): `snapshots! { case: [("input name", text), …], … }` makes the test
/// `tests::snapshots::case`, which calls [`Case::snapshot`] — ruff's one test per rule ×
/// fixture. The texts may be `&str` or `String`.
#[cfg(test)]
macro_rules! snapshots {
    ($($case:ident: [$(($name:expr, $text:expr)),* $(,)?]),* $(,)?) => {
        mod snapshots {
            #[allow(unused_imports)]
            use super::*;
            #[allow(unused_imports)]
            use crate::testutil::fixture;
            $(
                #[test]
                fn $case() {
                    crate::rules::case(&[$(($name, AsRef::<str>::as_ref(&$text))),*])
                        .snapshot(super::super::RULE.doc.id, stringify!($case));
                }
            )*
        }
    };
}
#[cfg(test)]
pub(crate) use snapshots;

#[cfg(test)]
mod tests {
    use crate::rules::RuleId;
    #[test]
    fn ids_are_unique_kebab_case_and_documented() {
        let mut ids: Vec<&str> = super::docs().map(|d| d.id.as_str()).collect();
        for d in super::docs() {
            assert!(
                d.id.as_str().bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{}",
                d.id
            );
            for (name, text) in [
                ("title", d.title),
                ("detects", d.detects),
                ("why", d.why),
                ("example", d.example),
                ("fix", d.fix),
            ] {
                assert!(text.len() > 10, "{}: {name} is too short", d.id);
            }
        }
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n);
    }

    /// The rules that fire from their known messages alone: each fires on one of its messages and
    /// stays quiet on a neighbouring line of the same engine.
    #[test]
    fn message_rules_fire_on_their_messages_only() {
        for (rule, fires, quiet) in [
            (
                RuleId::ApiKeyRejected,
                "srv    operator(): unauthorized: Invalid API Key\n",
                "srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 200\n",
            ),
            (
                RuleId::HostRamExhausted,
                "Error: 500 Internal Server Error: model requires more system memory (41.2 GiB) than is available (27.5 GiB)\n",
                "time=2025-09-22T14:10:41.521Z level=INFO source=server.go:1289 msg=\"system memory\" total=\"62.7 GiB\" free=\"58.1 GiB\"\n",
            ),
            (
                RuleId::PrefixCacheMissReprefill,
                "slot update_slots: id  0 | task 1234 | forcing full prompt re-processing due to lack of cache data (likely due to SWA or hybrid/recurrent memory, see https://github.com/ggml-org/llama.cpp/pull/13194)\n",
                "slot update_slots: id  0 | task 1234 | n_past = 2048, cache reuse\n",
            ),
            (
                RuleId::UbatchTooSmall,
                "srv    send_error: task id = 3, error: input (2048 tokens) is too large to process. increase the physical batch size (current batch size: 512)\n",
                "srv  update_slots: all slots are idle\n",
            ),
            (
                RuleId::WeightsExceedGpu,
                "llama_model_load: error loading model: unable to allocate CUDA0 buffer\n",
                "load_tensors:        CUDA0 model buffer size =  4403.49 MiB\n",
            ),
            (
                RuleId::MaxSeqLenReducedByKv,
                "[03/04/2025-10:00:01] [TRT-LLM] [W] Adjusted max_seq_len to 41216\n",
                "[03/04/2025-10:00:01] [TRT-LLM] [I] max_seq_len=131072, max_num_tokens=8192\n",
            ),
            (
                RuleId::RequestExceedsBuildLimits,
                "ValueError: sampling_params's beam_width (4) should not exceed max_beam_width (1)\n",
                "[03/04/2025-10:00:01] [TRT-LLM] [I] max_beam_width=1\n",
            ),
            (
                RuleId::GpuNotDetected,
                "time=2025-09-22T14:10:41.521Z level=INFO source=types.go:50 msg=\"inference compute\" id=cpu library=cpu compute=\"\" name=cpu total=\"62.7 GiB\"\n",
                "time=2025-09-22T14:10:41.521Z level=INFO source=types.go:50 msg=\"inference compute\" id=GPU-1 library=cuda compute=9.0 name=CUDA0\n",
            ),
        ] {
            assert!(super::case(&[("server.log", fires)]).fired(rule).is_some(), "{rule}: {fires}");
            assert!(super::case(&[("server.log", quiet)]).fired(rule).is_none(), "{rule}: {quiet}");
        }
    }

    /// Every rule is documented in Chinese too: each section present, different from the
    /// English one and written in Chinese; code spans (flags, log quotes) are kept as they are.
    #[test]
    fn every_rule_is_documented_in_chinese() {
        use triage_base::lang::{Lang, has_cjk};
        assert_eq!(super::RULES.len(), 68);
        for d in super::docs() {
            let (en, zh) = (d.text(Lang::En), d.text(Lang::Zh));
            assert_eq!(en.title, d.title);
            for (name, e, z) in [
                ("title", en.title, zh.title),
                ("detects", en.detects, zh.detects),
                ("why", en.why, zh.why),
                ("example", en.example, zh.example),
                ("fix", en.fix, zh.fix),
            ] {
                assert!(!z.trim().is_empty(), "{}: zh {name} is empty", d.id);
                assert_ne!(e, z, "{}: zh {name} is the English text", d.id);
                assert!(has_cjk(z), "{}: zh {name} is not Chinese: {z}", d.id);
                // What is quoted in backticks (flags, metric names, log lines) is not translated.
                for span in e.split('`').skip(1).step_by(2) {
                    assert!(z.contains(&format!("`{span}`")), "{}: zh {name} lost `{span}`", d.id);
                }
            }
            let titles: Vec<&str> = super::docs().map(|x| x.text(Lang::Zh).title).collect();
            assert_eq!(titles.iter().filter(|t| **t == zh.title).count(), 1, "{}: zh title repeated", d.id);
        }
    }
}
