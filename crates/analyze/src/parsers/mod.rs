//! One parser per input kind. Each reads the lines of its sections and writes [`Facts`].
//!
//! Parsers are total: any line is accepted; what cannot be read becomes an [`Issue`] with its
//! line number (bounded per section), never a panic.

use super::facts::Facts;
use super::kind::InputKind;
use super::report::{EvidenceLine, Issue};
use super::text::quote_redacted;
use triage_base::lang::Lang;

pub mod bench;
pub mod client_config;
mod dcgm;
pub mod gpu_series;
pub mod llama;
pub mod nvidia_smi;
pub mod oom;
pub mod prom;
pub mod request_log;
pub mod sglang;
pub mod sse;
pub mod table;
pub mod tgi;
pub mod vllm;

/// Most issues kept per section; the rest are counted in one final issue.
const MAX_ISSUES: usize = 20;

/// What a parser sees of the world while it reads a section.
pub struct Cx<'a> {
    /// The name of the input being read (shared by its evidence lines).
    pub input: &'a std::sync::Arc<str>,
    /// Where the parser writes what it learns.
    pub facts: &'a mut Facts,
    /// The section's issues (use [`Cx::issue`], which bounds them).
    pub issues: &'a mut Vec<Issue>,
    /// The language issues are written in.
    pub lang: Lang,
    /// What the alarm watch's one scan of this line found: the vLLM parser's needles.
    pub vllm_needles: u64,
}

impl Cx<'_> {
    /// Evidence pointing at `line` of the current input: secrets redacted, then cut.
    pub fn evidence(&self, line: usize, text: &str) -> EvidenceLine {
        EvidenceLine::quoted_shared(self.input, line, text)
    }

    /// Report a problem at `line`. After [`MAX_ISSUES`], issues are only counted.
    pub fn issue(&mut self, line: usize, message: impl Into<String>) {
        if self.issues.len() < MAX_ISSUES {
            self.issues.push(Issue { line, message: message.into() });
        } else if self.issues.len() == MAX_ISSUES {
            let message = self.lang.pick(
                "more issues in this section; showing the first 20",
                "本片段还有更多问题，只列出前 20 条",
            );
            self.issues.push(Issue { line, message: message.to_owned() });
        }
    }

    /// Report a problem at `line`, written in the analysis's language: `(English, Chinese)`.
    pub fn issue_in(&mut self, line: usize, en: impl Into<String>, zh: impl Into<String>) {
        let message = match self.lang {
            Lang::En => en.into(),
            Lang::Zh => zh.into(),
        };
        self.issue(line, message);
    }
}

/// A parser for one section.
pub trait SectionParser {
    /// Cheap check: does this line belong to this section even when a recogniser would say
    /// otherwise? (JSON-lines rows, CSV rows, table bodies.) `bare` is the line without the
    /// prefixes people paste (`[rank0]:`, `(EngineCore_0 pid=1)`, timestamps); `vllm_needles`
    /// what the line scan found of the vLLM parser's needles ([`Cx::vllm_needles`]). Default: no.
    fn continues(&self, _line: &str, _bare: &str, _vllm_needles: u64) -> bool {
        false
    }
    /// Reads line `no` (1-based, in the input) of the section.
    fn line(&mut self, cx: &mut Cx<'_>, no: usize, line: &str);
    /// Called once at the end of the section, to write what was kept open.
    fn finish(self: Box<Self>, _cx: &mut Cx<'_>) {}
}

/// Lines nobody recognised. Counted, and the first one quoted, so the report says what it did
/// not understand instead of guessing.
#[derive(Default)]
struct Unknown {
    lines: usize,
    first: Option<(usize, String)>,
    /// Tables and `key: value` figures in text no reader knows ([`table`]).
    tables: table::TableReader,
}

impl SectionParser for Unknown {
    fn line(&mut self, cx: &mut Cx<'_>, no: usize, line: &str) {
        self.tables.line(cx, no, line);
        if !line.trim().is_empty() {
            self.lines += 1;
            // Unrecognised text may hold a key: never quote one.
            self.first.get_or_insert_with(|| (no, quote_redacted(line)));
        }
    }

    fn finish(mut self: Box<Self>, cx: &mut Cx<'_>) {
        self.tables.end(cx);
        if let Some((no, text)) = self.first {
            let n = self.lines;
            cx.issue_in(
                no,
                format!("{n} line(s) not recognised as any known format, starting with: {text}"),
                format!("{n} 行未能识别为任何已知格式，第一行是：{text}"),
            );
        }
    }
}

pub(crate) fn new_parser(kind: InputKind) -> Box<dyn SectionParser> {
    match kind {
        InputKind::RequestLog => Box::new(request_log::RequestLogParser::default()),
        InputKind::VllmLog => Box::new(vllm::VllmParser::default()),
        InputKind::SglangLog => Box::new(sglang::SglangParser::default()),
        InputKind::TgiLog => Box::new(tgi::TgiParser::default()),
        InputKind::PromMetrics => Box::new(prom::PromParser::default()),
        InputKind::NvidiaSmi => Box::new(nvidia_smi::SmiParser::default()),
        InputKind::GpuSeries => Box::new(gpu_series::GpuSeriesParser::default()),
        InputKind::OomTrace => Box::new(oom::OomParser::default()),
        InputKind::ClientConfig => Box::new(client_config::ClientParser::default()),
        InputKind::BenchOutput => Box::new(bench::BenchParser::default()),
        InputKind::SseStream => Box::new(sse::SseTranscriptParser::default()),
        InputKind::Unknown => Box::new(Unknown::default()),
    }
}
