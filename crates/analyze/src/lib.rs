//! `triage analyze`: recognise what was pasted, extract facts, run the rules, rank the findings.
//!
//! The pipeline is streaming and line-based, so a 1 GB request log is analysed in bounded
//! memory: [`Analyzer::feed`] takes bytes as they come; each line is recognised
//! ([`kind::recognize`]), routed to the open section's parser (one per [`InputKind`]), which
//! writes [`facts::Facts`]; [`Analyzer::finish`] runs every rule in [`rules::RULES`] and builds
//! the `triage.report/v1` [`report::Report`]. [`prometheus::replay`] reads a Prometheus window
//! into the same facts, so every rule judges a fleet's series unchanged.
//!
//! All the rules live here together, with the parsers that feed them; the report contract
//! (`triage-report`), the foundation (`triage-base`) and the GPU and KV models (`triage-gpu`,
//! `triage-kv`) are crates of their own, which a page that shows reports links without linking
//! any rule.

#![deny(missing_docs)]

pub mod facts;
pub mod families;
pub mod figures;
pub mod ids;
pub mod kind;
pub mod names;
pub use triage_report::markdown;
pub mod needles;
pub mod normalize;
pub mod parsers;
pub mod prefixes;
pub mod prometheus;
pub use triage_report as report;
pub mod rules;
pub mod signals;
pub use signals::heard;
#[cfg(test)]
pub(crate) mod testutil;
pub mod text;
pub use triage_base::time;

use facts::Facts;
use kind::{InputKind, recognize};
use parsers::{Cx, SectionParser};
use report::{InputSection, Issue, Report, Verdict};
pub use triage_base::lang::Lang;

/// Lines longer than this are cut before parsing (and the cut is reported).
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Most sections listed in a report. Kinds alternating line by line open a section per line, and
/// the list grew with the input (in memory and in the report); past it sections are still read,
/// only counted.
pub const MAX_SECTIONS: usize = 1_000;

/// Bytes of a line kept while it arrives in pieces: past the limit, so that the line is still
/// seen to be cut, and by two, so that it still is once a trailing CR is stripped. Keeping only
/// the limit made a long line reported as cut when fed whole and not when fed in chunks.
const KEEP_LINE_BYTES: usize = MAX_LINE_BYTES + 2;

struct Open {
    kind: InputKind,
    parser: Box<dyn SectionParser>,
    start: usize,
    end: usize,
    issues: Vec<Issue>,
    /// What an unknown section may be the head of (its lines then belong to the next section).
    head: Head,
}

struct InputState {
    name: std::sync::Arc<str>,
    line_no: usize,
    partial: Vec<u8>,
    open: Option<Open>,
    /// Every line goes to this kind's parser (no recognition).
    forced: Option<InputKind>,
    /// Alarm lines and known messages, whatever section they are in.
    watch: signals::Watch,
}

/// The streaming analyzer. See the module docs.
pub struct Analyzer {
    facts: Facts,
    sections: Sections,
    input: Option<InputState>,
    /// The language findings, figure definitions and issues are written in.
    lang: Lang,
}

impl Default for Analyzer {
    fn default() -> Self {
        Analyzer::new()
    }
}

impl Analyzer {
    /// An analyzer that writes its report in English.
    pub fn new() -> Analyzer {
        Analyzer { facts: Facts::default(), sections: Sections::default(), input: None, lang: Lang::En }
    }

    /// Write the report's text (finding titles, summaries, remediation, next checks, figure
    /// definitions, input issues) in `lang`. Everything else — verdict, classes, rule ids,
    /// confidences, evidence, figure values — is the same in every language. Set it before
    /// feeding: issues are written as the lines are read.
    pub fn with_lang(mut self, lang: Lang) -> Analyzer {
        self.lang = lang;
        self
    }

    /// Judge tails against these targets instead of the defaults ([`facts::Slo`]).
    pub fn with_slo(mut self, slo: facts::Slo) -> Analyzer {
        self.facts.slo = slo;
        self
    }

    /// The language the report is written in.
    pub fn lang(&self) -> Lang {
        self.lang
    }

    /// Lines of the current input read so far, each ended by `\n` (0 before any): the next
    /// line completed is line `lines_read() + 1`, as evidence numbers it. A host that knows
    /// where in its bytes that line starts can later read the input again from there (the
    /// site's source view reads only the regions around the evidence).
    pub fn lines_read(&self) -> usize {
        self.input.as_ref().map_or(0, |s| s.line_no)
    }

    /// Start a new input (a file, a paste). Ends the previous one if still open.
    pub fn begin(&mut self, name: &str) {
        self.end();
        self.input = Some(InputState {
            name: name.into(),
            line_no: 0,
            partial: Vec::new(),
            open: None,
            forced: None,
            watch: signals::Watch::default(),
        });
    }

    /// Start a new input whose every line is read as `kind`, without recognition (the user said
    /// what it is; also the fuzz targets' way into one parser).
    pub fn begin_as(&mut self, name: &str, kind: InputKind) {
        self.begin(name);
        if let Some(state) = self.input.as_mut() {
            state.forced = Some(kind);
        }
    }

    /// Feed bytes of the current input (any chunking).
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.input.is_none() {
            self.begin("input");
        }
        let mut rest = bytes;
        while let Some(pos) = memchr::memchr(b'\n', rest) {
            let line = &rest[..pos];
            rest = &rest[pos + 1..];
            let state = self.input.as_mut().expect("begun above");
            if state.partial.is_empty() {
                self.line(line);
            } else {
                let mut buf = std::mem::take(&mut state.partial);
                buf.extend_from_slice(&line[..line.len().min(KEEP_LINE_BYTES.saturating_sub(buf.len()))]);
                self.line(&buf);
            }
        }
        if !rest.is_empty() {
            let state = self.input.as_mut().expect("begun above");
            let room = KEEP_LINE_BYTES.saturating_sub(state.partial.len());
            state.partial.extend_from_slice(&rest[..rest.len().min(room)]);
        }
    }

    /// The current input ended.
    pub fn end(&mut self) {
        let Some(state) = self.input.as_mut() else { return };
        if !state.partial.is_empty() {
            let last = std::mem::take(&mut state.partial);
            self.line(&last);
        }
        let Some(mut state) = self.input.take() else { return };
        state.watch.end(&mut self.facts.signals);
        if let Some(open) = state.open.take() {
            let lang = self.lang;
            close(&mut self.facts, &mut self.sections, &state.name, open, lang);
        }
    }

    /// Analyse one whole text as an input.
    pub fn add_text(&mut self, name: &str, text: &str) {
        self.begin(name);
        self.feed(text.as_bytes());
        self.end();
    }

    fn line(&mut self, raw: &[u8]) {
        let state = self.input.as_mut().expect("an input is open");
        state.line_no += 1;
        let no = state.line_no;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let cut = raw.len() > MAX_LINE_BYTES;
        let raw = &raw[..raw.len().min(MAX_LINE_BYTES)];
        // Valid UTF-8 (the common case) is borrowed; only broken lines pay for the lossy copy.
        let lossy = match std::str::from_utf8(raw) {
            Ok(s) => std::borrow::Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(raw),
        };
        if self.sample_line(no, &lossy, cut) {
            return;
        }
        let line = text::strip_ansi(&lossy);
        match normalize::clean(&line) {
            normalize::Clean::One(clean) => self.logical(no, &clean, cut),
            normalize::Clean::Many(lines) => {
                for l in &lines {
                    self.logical(no, l, cut);
                }
            }
        }
    }

    /// A recording's sample line goes straight to the open recording: machine-written numbers
    /// with no markup, wrapping or message in them, so no clean-up and no signal scan (a day
    /// of eight GPUs at 1 Hz is 700,000 of them). Whether it was one.
    fn sample_line(&mut self, no: usize, line: &str, cut: bool) -> bool {
        let lang = self.lang;
        let state = self.input.as_mut().expect("an input is open");
        match state.open.as_mut() {
            Some(open) if open.kind == InputKind::GpuSeries && parsers::gpu_series::is_sample_line(line) => {
                let read = ReadLine { no, text: line, cut, vllm_needles: 0 };
                feed_open(&mut self.facts, &state.name, open, read, lang);
                true
            }
            _ => false,
        }
    }

    /// One logical line of physical line `no` (see [`normalize`]).
    fn logical(&mut self, no: usize, line: &str, cut: bool) {
        if self.sample_line(no, line, cut) {
            return;
        }
        let lang = self.lang;
        let state = self.input.as_mut().expect("an input is open");
        let seen = state.watch.line(&mut self.facts.signals, &state.name, no, line);
        if seen.llama {
            let name = &state.name;
            self.facts.llama.line(line, || report::EvidenceLine::quoted(name, no, line));
        }
        let read = ReadLine { no, text: line, cut, vllm_needles: seen.vllm };

        if let Some(kind) = state.forced {
            let open = state.open.get_or_insert_with(|| {
                self.facts.kinds.insert(kind);
                Open {
                    kind,
                    parser: parsers::new_parser(kind),
                    start: no,
                    end: no,
                    issues: Vec::new(),
                    head: Head::Fresh,
                }
            });
            feed_open(&mut self.facts, &state.name, open, read, lang);
            return;
        }
        // Fast path: the open section's parser claims the line without recognition.
        if let Some(open) = state.open.as_mut()
            && open.kind != InputKind::Unknown
            && open.parser.continues(line, seen.bare, seen.vllm)
        {
            feed_open(&mut self.facts, &state.name, open, read, lang);
            return;
        }
        let recognised = recognize(line);
        match (recognised, state.open.as_mut()) {
            (Some(kind), Some(open)) if kind == open.kind => {
                feed_open(&mut self.facts, &state.name, open, read, lang)
            }
            (Some(kind), _) => {
                let mut start = no;
                if let Some(prev) = state.open.take() {
                    // A traceback's head ("Traceback…", "File …") is weak; its last line names the
                    // error. Give the head to the section the last line opens.
                    if prev.kind == InputKind::Unknown && prev.head.belongs_to(kind) {
                        start = prev.start;
                    } else {
                        close(&mut self.facts, &mut self.sections, &state.name, prev, lang);
                    }
                }
                self.facts.kinds.insert(kind);
                let mut open = Open {
                    kind,
                    parser: parsers::new_parser(kind),
                    start,
                    end: no,
                    issues: Vec::new(),
                    head: Head::Fresh,
                };
                feed_open(&mut self.facts, &state.name, &mut open, read, lang);
                state.open = Some(open);
            }
            (None, Some(open)) => feed_open(&mut self.facts, &state.name, open, read, lang),
            (None, None) => {
                if line.trim().is_empty() {
                    return;
                }
                let mut open = Open {
                    kind: InputKind::Unknown,
                    parser: parsers::new_parser(InputKind::Unknown),
                    start: no,
                    end: no,
                    issues: Vec::new(),
                    head: Head::Fresh,
                };
                feed_open(&mut self.facts, &state.name, &mut open, read, lang);
                state.open = Some(open);
            }
        }
    }

    /// Run the rules and build the report.
    pub fn finish(self) -> Report {
        self.finish_with_facts().0
    }

    /// As [`Analyzer::finish`], also handing back the facts the rules read (the test harness,
    /// `testutil`, asserts on both).
    pub(crate) fn finish_with_facts(mut self) -> (Report, Facts) {
        self.end();
        if self.sections.dropped > 0
            && let Some(last) = self.sections.listed.last_mut()
        {
            let n = self.sections.dropped;
            last.issues.push(Issue {
                line: last.lines[1],
                message: self.lang.pick(
                    format!("{n} more section(s) were read but are not listed: a report lists the first {MAX_SECTIONS}"),
                    format!("另有 {n} 个片段已读取但未列出：报告只列出前 {MAX_SECTIONS} 个"),
                ),
            });
        }
        let (facts, lang) = (self.facts, self.lang);
        let mut findings: Vec<report::Finding> =
            rules::RULES.iter().filter_map(|r| (r.check)(&facts, lang)).collect();
        // A GPU recording: the runner's rules over it, one finding per GPU and rule.
        rules::gpu_recording::add(&facts, &mut findings, lang);
        let consequences = rules::consequences(&facts);
        let advisory = |f: &report::Finding| rules::listed(rules::ADVISORIES, &f.rule);
        // The generic layer decides only when no exact rule named a cause; then the family seen
        // first leads.
        rules::generic::settle(&facts, &mut findings, |f| {
            f.class != report::Class::Inconclusive && !advisory(f) && !rules::listed(consequences, &f.rule)
        });
        // A symptom's figure over its target says nothing more once a rule names a cause of the
        // same class.
        let caused: Vec<report::Class> = findings
            .iter()
            .filter(|f| !rules::listed(rules::SYMPTOMS, &f.rule) && !advisory(f))
            .map(|f| f.class)
            .collect();
        findings.retain(|f| !rules::listed(rules::SYMPTOMS, &f.rule) || !caused.contains(&f.class));
        // Errors no finding explains: never HEALTHY, and say what to paste next.
        if let Some(f) = rules::unclaimed_error::finding(&facts, &findings, lang) {
            findings.push(f);
        }
        // An outage (out of memory, nothing served) outranks the slowness that came before it:
        // the queue that grew before an OOM is context, the OOM is the incident.
        let outage = |f: &report::Finding| {
            matches!(f.class, report::Class::Oom | report::Class::ThroughputZero) && f.confidence >= 0.5
        };
        // What a failure read from words brought down (a dead engine after a GPU fault) follows it.
        let generic = findings.iter().any(|f| rules::generic::is_generic(&f.rule));
        let follows = |f: &report::Finding| generic && rules::listed(consequences, &f.rule);
        triage_base::sort::sort_by(&mut findings, |a, b| {
            follows(a)
                .cmp(&follows(b))
                .then(outage(b).cmp(&outage(a)))
                .then(b.confidence.total_cmp(&a.confidence))
                .then(b.class.severity().cmp(&a.class.severity()))
                .then(a.rule.cmp(&b.rule))
        });
        // The verdict is the first finding that names a cause; an unexplained error alone (or
        // next to a consequence such as a dead engine) leaves it INCONCLUSIVE, with the
        // unexplained error first; so does an input that shows no health.
        let unexplained = findings.iter().any(|f| f.rule == rules::unclaimed_error::RULE.doc.id);
        let names_cause = |f: &report::Finding| {
            f.class != report::Class::Inconclusive
                && !advisory(f)
                && !(unexplained && rules::listed(consequences, &f.rule))
        };
        let verdict = match findings.iter().find(|f| names_cause(f)) {
            Some(f) => Verdict::from(f.class),
            None if findings.iter().all(advisory) && facts.health_evidence() => Verdict::Healthy,
            None => Verdict::Inconclusive,
        };
        if verdict == Verdict::Inconclusive
            && let Some(i) = findings.iter().position(|f| f.rule == rules::unclaimed_error::RULE.doc.id)
        {
            let f = findings.remove(i);
            findings.insert(0, f);
        }
        let report = Report {
            schema: report::SCHEMA.to_owned(),
            verdict,
            findings,
            inputs: self.sections.listed,
            figures: figures::figures(&facts, lang),
            series: figures::series(&facts),
            prometheus: None,
        };
        (report, facts)
    }
}

/// Weak lines at the start of a block whose recognisable line comes later: a traceback's
/// `Traceback…`/`File …` lines before the OOM message, a pretty-printed config's `{` and
/// `"env": {` before its first key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Head {
    Fresh,
    Traceback,
    /// Every line so far is JSON/TOML structure or a comment.
    Config,
    Neither,
}

impl Head {
    fn next(self, line: &str) -> Head {
        let t = line.trim();
        if self == Head::Traceback
            || t.starts_with("Traceback (most recent call last)")
            || t.starts_with("File \"")
        {
            return Head::Traceback;
        }
        let structural = t.is_empty()
            || t.starts_with(['{', '}', '[', ']', '"', '#'])
            || t.split_once('=').is_some_and(|(k, _)| {
                let k = k.trim();
                !k.is_empty()
                    && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-')
            });
        match self {
            Head::Fresh | Head::Config if structural => Head::Config,
            _ => Head::Neither,
        }
    }

    fn belongs_to(self, kind: InputKind) -> bool {
        matches!(
            (self, kind),
            (Head::Traceback, InputKind::OomTrace)
                | (Head::Config, InputKind::ClientConfig | InputKind::BenchOutput)
        )
    }
}

/// One line as the analyzer read it, on its way to a section's parser.
#[derive(Clone, Copy)]
struct ReadLine<'a> {
    no: usize,
    /// ANSI codes and a trailing CR stripped, cut at [`MAX_LINE_BYTES`].
    text: &'a str,
    /// The line was longer than [`MAX_LINE_BYTES`].
    cut: bool,
    /// The vLLM parser's dispatch needles the signal scan found ([`parsers::Cx::vllm_needles`]).
    vllm_needles: u64,
}

fn feed_open(facts: &mut Facts, name: &std::sync::Arc<str>, open: &mut Open, read: ReadLine<'_>, lang: Lang) {
    let ReadLine { no, text: line, cut, vllm_needles } = read;
    open.end = no;
    if open.kind == InputKind::Unknown {
        open.head = open.head.next(line);
    }
    let mut cx = Cx { input: name, facts, issues: &mut open.issues, lang, vllm_needles };
    if cut {
        cx.issue(
            no,
            lang.pick(
                format!("line longer than {MAX_LINE_BYTES} bytes; the rest was not read"),
                format!("该行超过 {MAX_LINE_BYTES} 字节，超出部分未读取"),
            ),
        );
    }
    open.parser.line(&mut cx, no, line);
}

fn close(facts: &mut Facts, sections: &mut Sections, name: &std::sync::Arc<str>, mut open: Open, lang: Lang) {
    let mut cx = Cx { input: name, facts, issues: &mut open.issues, lang, vllm_needles: 0 };
    open.parser.finish(&mut cx);
    if sections.listed.len() >= MAX_SECTIONS {
        sections.dropped += 1;
        return;
    }
    sections.listed.push(InputSection {
        name: name.to_string(),
        kind: open.kind,
        lines: [open.start, open.end],
        issues: open.issues,
    });
}

/// The report's sections: the first [`MAX_SECTIONS`] listed, the ones read beyond counted.
#[derive(Default)]
struct Sections {
    listed: Vec<InputSection>,
    dropped: usize,
}

/// Analyse whole texts: `(name, text)` pairs. The report is in English.
pub fn analyze(inputs: &[(&str, &str)]) -> Report {
    analyze_in(Lang::En, inputs)
}

/// Analyse whole texts, writing the report's text in `lang`.
pub fn analyze_in(lang: Lang, inputs: &[(&str, &str)]) -> Report {
    let mut a = Analyzer::new().with_lang(lang);
    for (name, text) in inputs {
        a.add_text(name, text);
    }
    a.finish()
}

/// Test helper: `zh` is `en` written in Chinese — the same verdict, findings (rule, class,
/// confidence, evidence, number of remediation and next-check lines), inputs, figure values and
/// series; finding titles and summaries in Chinese.
#[cfg(test)]
pub(crate) fn assert_same_but_text(en: &Report, zh: &Report, ctx: &str) {
    use triage_base::lang::has_cjk;
    assert_eq!(en.schema, zh.schema, "{ctx}");
    assert_eq!(en.verdict, zh.verdict, "{ctx}");
    let key = |r: &Report| {
        r.findings
            .iter()
            .map(|f| {
                (
                    f.rule.clone(),
                    f.class,
                    f.confidence,
                    f.evidence.clone(),
                    f.remediation.len(),
                    f.next_checks.len(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(key(en), key(zh), "{ctx}");
    for (e, z) in en.findings.iter().zip(&zh.findings) {
        assert!(has_cjk(&z.title) && has_cjk(&z.summary), "{ctx}: {} is not in Chinese: {z:?}", z.rule);
        assert_ne!(e.title, z.title, "{ctx}: {}", z.rule);
        assert_ne!(e.summary, z.summary, "{ctx}: {}", z.rule);
        assert!(z.remediation.iter().chain(&z.next_checks).any(|s| has_cjk(s)), "{ctx}: {}", z.rule);
    }
    let inputs = |r: &Report| {
        r.inputs
            .iter()
            .map(|i| (i.name.clone(), i.kind, i.lines, i.issues.iter().map(|x| x.line).collect::<Vec<_>>()))
            .collect::<Vec<_>>()
    };
    assert_eq!(inputs(en), inputs(zh), "{ctx}");
    let figures =
        |r: &Report| r.figures.iter().map(|(k, f)| (k.clone(), f.value.clone())).collect::<Vec<_>>();
    assert_eq!(figures(en), figures(zh), "{ctx}");
    for (name, f) in &zh.figures {
        assert!(has_cjk(&f.definition), "{ctx}: figure {name}: {}", f.definition);
    }
    assert_eq!(en.series, zh.series, "{ctx}");
}

#[cfg(test)]
mod tests {
    use super::testutil::fixture;
    use super::*;
    use proptest::prelude::*;

    /// Pieces of every format, so random mixes reach every parser.
    const PIECES: &[&str] = &[
        "INFO 11-29 10:00:05 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 5.4 tokens/s, Running: 1 reqs, Waiting: 14 reqs, GPU KV cache usage: 76.5%\n",
        "WARNING 11-29 10:00:00 scheduler.py:1] Sequence group x is preempted by PreemptionMode.RECOMPUTE mode\n",
        "{\"request_id\":\"a\",\"enqueue_time\":1764460800.0,\"first_token_time\":1764460801}\n",
        "request_id,enqueue_time,first_token_time\nr,1,2\n",
        "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{a=\"b\"} 3\n",
        "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} 5\n",
        "| NVIDIA-SMI 580.159.04 |\n|   0  NVIDIA H200   On |\n",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.23 GiB is free.\n",
        "export ANTHROPIC_BASE_URL=\"https://x/api?utm_source=y\"\n",
        "Mean TTFT (ms): 12.5\n",
        "[2026-11-29 10:00:00] Decode batch. #running-req: 2, #token: 10, token usage: 0.9, #queue-req: 3\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n",
        "Traceback (most recent call last):\n  File \"x.py\", line 1\n",
        "\x1b[31m",
        "\r\n",
        "\n",
        "{",
        "\"",
        ",",
        "=",
        ":",
        "\u{fffd}",
        "  ",
        "0x4",
        "ms",
    ];

    fn report(chunks: &[&[u8]]) -> Report {
        let mut a = Analyzer::new();
        a.begin("fuzz");
        for c in chunks {
            a.feed(c);
        }
        a.finish()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        #[test]
        fn never_panics_and_chunking_does_not_matter(
            picks in proptest::collection::vec(0..PIECES.len(), 0..40),
            noise in proptest::collection::vec(any::<u8>(), 0..64),
            cut in 0usize..2000,
        ) {
            let mut input: Vec<u8> = picks.iter().flat_map(|&i| PIECES[i].bytes()).collect();
            let at = cut.min(input.len());
            input.splice(at..at, noise);
            let whole = report(&[&input]);
            let (a, b) = input.split_at(cut.min(input.len()));
            prop_assert_eq!(&report(&[a, b]), &whole);
            let bytes: Vec<&[u8]> = input.chunks(7).collect();
            prop_assert_eq!(&report(&bytes), &whole);
        }

        #[test]
        fn every_parser_takes_arbitrary_lines(kind in 0usize..11, data in proptest::collection::vec(any::<u8>(), 0..512)) {
            let kinds = [
                InputKind::RequestLog, InputKind::VllmLog, InputKind::SglangLog, InputKind::TgiLog,
                InputKind::PromMetrics, InputKind::NvidiaSmi, InputKind::OomTrace, InputKind::ClientConfig,
                InputKind::BenchOutput, InputKind::SseStream, InputKind::Unknown,
            ];
            let mut a = Analyzer::new();
            a.begin_as("fuzz", kinds[kind]);
            a.feed(&data);
            let r = a.finish();
            prop_assert!(r.inputs.len() <= 1);
        }
    }

    #[test]
    fn sections_split_a_mixed_paste() {
        let paste = concat!(
            "INFO 11-29 10:00:05 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 5.4 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 6.5%\n",
            "\n",
            "# TYPE vllm:num_requests_waiting gauge\n",
            "vllm:num_requests_waiting 0\n",
            "{\"request_id\":\"a\",\"enqueue_time\":1,\"first_token_time\":1.2,\"last_token_time\":2,\"finish_time\":2}\n",
            "what is this\n",
        );
        let r = analyze(&[("paste", paste)]);
        let kinds: Vec<(&str, [usize; 2])> = r.inputs.iter().map(|i| (i.kind.as_str(), i.lines)).collect();
        assert_eq!(kinds, vec![("vllm_log", [1, 2]), ("prom_metrics", [3, 4]), ("request_log", [5, 6])]);
        assert_eq!(r.inputs[2].issues[0].line, 6);
        assert_eq!(r.verdict, Verdict::Healthy);
    }

    #[test]
    fn sections_are_bounded() {
        let r = analyze(&[("paste", &"Mean TTFT (ms): 1\nvllm:x_total 1\n".repeat(MAX_SECTIONS))]);
        assert_eq!(r.inputs.len(), MAX_SECTIONS);
        let last = &r.inputs[MAX_SECTIONS - 1].issues;
        assert!(
            last.iter().any(|i| i.message.starts_with(&format!("{MAX_SECTIONS} more section(s)"))),
            "{last:?}"
        );
    }

    /// The fuzz target's two chunkings disagreed on a line over the limit: fed whole it was
    /// reported cut, fed in pieces it was silently kept at the limit. A trailing CR must not
    /// change that either.
    #[test]
    fn a_cut_line_is_reported_however_it_is_chunked() {
        for (extra, end) in [(1, "\n"), (10, "\n"), (0, "\r\n"), (1, "\r\n"), (0, "\r\r\n"), (2, "\r\r\n")] {
            let mut input = "a".repeat(MAX_LINE_BYTES + extra).into_bytes();
            input.extend_from_slice(end.as_bytes());
            input.extend_from_slice(b"what is this\n");
            let whole = report(&[&input]);
            let (a, b) = input.split_at(MAX_LINE_BYTES / 2);
            assert_eq!(report(&[a, b]), whole, "{extra} {end:?}");
            let pieces: Vec<&[u8]> = input.chunks(MAX_LINE_BYTES / 3).collect();
            assert_eq!(report(&pieces), whole, "{extra} {end:?}");
            let cut = whole.inputs[0].issues.iter().any(|i| i.message.contains("longer than"));
            assert_eq!(cut, extra > 0 || end == "\r\r\n", "{extra} {end:?}");
        }
    }

    /// The incident corpus in Chinese: the same report as in English, only the text differs.
    #[test]
    fn chinese_reports_match_english_ones() {
        const FIXTURES: &[(&str, &str)] = &[
            ("healthy.log", fixture!("incidents/healthy.log")),
            ("tbt_preemption.log", fixture!("incidents/tbt_preemption.log")),
            ("throughput_kv_leak.prom", fixture!("incidents/throughput_kv_leak.prom")),
            ("throughput_nccl_dead.log", fixture!("incidents/throughput_nccl_dead.log")),
            ("throughput_stall.log", fixture!("incidents/throughput_stall.log")),
            ("ttft_long_prompts.jsonl", fixture!("incidents/ttft_long_prompts.jsonl")),
            ("ttft_queueing.log", fixture!("incidents/ttft_queueing.log")),
            ("h200_200gib.txt", fixture!("oom/h200_200gib.txt")),
            ("8gpu.txt", fixture!("smi/synthetic_8gpu_one_slow.txt")),
            ("settings.json", fixture!("configs/claude_settings.json")),
            ("config.toml", fixture!("configs/codex_config.toml")),
            ("oom.log", fixture!("kv/vllm-v1-oom-max-model-len.log")),
        ];
        let mut fired = std::collections::BTreeSet::new();
        for (name, text) in FIXTURES {
            let en = analyze(&[(name, text)]);
            let zh = analyze_in(Lang::Zh, &[(name, text)]);
            assert_same_but_text(&en, &zh, name);
            fired.extend(zh.findings.iter().map(|f| f.rule.clone()));
            // English stays the default.
            let mut a = Analyzer::new();
            assert_eq!(a.lang(), Lang::En);
            a.add_text(name, text);
            assert_eq!(a.finish(), en, "{name}");
        }
        assert!(fired.len() >= 12, "{fired:?}");
        // Unrecognised lines and issues are reported in Chinese as well, on the same lines.
        let zh = analyze_in(Lang::Zh, &[("paste", "hello\nworld\n")]);
        assert!(zh.inputs[0].issues[0].message.starts_with("2 行未能识别"), "{:?}", zh.inputs[0].issues);
    }

    #[test]
    fn nothing_recognised_is_inconclusive() {
        let r = analyze(&[("paste", "hello\nworld\n")]);
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert_eq!(r.inputs[0].kind, InputKind::Unknown);
        assert!(r.inputs[0].issues[0].message.contains("2 line(s) not recognised"));
        assert_eq!(analyze(&[]).verdict, Verdict::Inconclusive);
    }
}
