//! `triage analyze`: recognise what was pasted, extract facts, run the rules, rank the findings.
//!
//! The pipeline is streaming and line-based, so a 1 GB request log is analysed in bounded
//! memory: [`Analyzer::feed`] takes bytes as they come; each line is recognised
//! ([`kind::recognize`]), routed to the open section's parser (one per [`InputKind`]), which
//! writes [`facts::Facts`]; [`Analyzer::finish`] runs every rule in [`rules::RULES`] and builds
//! the `triage.report/v1` [`report::Report`].

pub mod facts;
pub mod figures;
pub mod kind;
pub mod parsers;
pub mod report;
pub mod rules;
pub mod text;
pub mod time;

use facts::Facts;
use kind::{InputKind, recognize};
use parsers::{Cx, SectionParser};
use report::{InputSection, Issue, Report, Verdict};

/// Lines longer than this are cut before parsing (and the cut is reported).
pub const MAX_LINE_BYTES: usize = 1 << 20;

struct Open {
    kind: InputKind,
    parser: Box<dyn SectionParser>,
    start: usize,
    end: usize,
    issues: Vec<Issue>,
    /// Lines of an unknown section that belong to the next section if it is a traceback's end.
    traceback: bool,
}

struct InputState {
    name: String,
    line_no: usize,
    partial: Vec<u8>,
    open: Option<Open>,
}

/// The streaming analyzer. See the module docs.
pub struct Analyzer {
    facts: Facts,
    sections: Vec<InputSection>,
    input: Option<InputState>,
}

impl Default for Analyzer {
    fn default() -> Self {
        Analyzer::new()
    }
}

impl Analyzer {
    pub fn new() -> Analyzer {
        Analyzer { facts: Facts::default(), sections: Vec::new(), input: None }
    }

    /// Start a new input (a file, a paste). Ends the previous one if still open.
    pub fn begin(&mut self, name: &str) {
        self.end();
        self.input = Some(InputState { name: name.to_owned(), line_no: 0, partial: Vec::new(), open: None });
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
                buf.extend_from_slice(&line[..line.len().min(MAX_LINE_BYTES.saturating_sub(buf.len()))]);
                self.line(&buf);
            }
        }
        if !rest.is_empty() {
            let state = self.input.as_mut().expect("begun above");
            let room = MAX_LINE_BYTES.saturating_sub(state.partial.len());
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
        if let Some(mut state) = self.input.take() {
            if let Some(open) = state.open.take() {
                close(&mut self.facts, &mut self.sections, &state.name, open);
            }
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
        let lossy = String::from_utf8_lossy(raw);
        let line = text::strip_ansi(&lossy);
        let line: &str = &line;

        // Fast path: the open section's parser claims the line without recognition.
        if let Some(open) = state.open.as_mut()
            && open.kind != InputKind::Unknown
            && open.parser.continues(line)
        {
            feed_open(&mut self.facts, &state.name, open, no, line, cut);
            return;
        }
        let recognised = recognize(line);
        match (recognised, state.open.as_mut()) {
            (Some(kind), Some(open)) if kind == open.kind => {
                feed_open(&mut self.facts, &state.name, open, no, line, cut)
            }
            (Some(kind), _) => {
                let mut start = no;
                if let Some(prev) = state.open.take() {
                    // A traceback's head ("Traceback…", "File …") is weak; its last line names the
                    // error. Give the head to the section the last line opens.
                    if prev.kind == InputKind::Unknown && prev.traceback && kind == InputKind::OomTrace {
                        start = prev.start;
                    } else {
                        close(&mut self.facts, &mut self.sections, &state.name, prev);
                    }
                }
                self.facts.kinds.insert(kind);
                let mut open = Open {
                    kind,
                    parser: parsers::new_parser(kind),
                    start,
                    end: no,
                    issues: Vec::new(),
                    traceback: false,
                };
                feed_open(&mut self.facts, &state.name, &mut open, no, line, cut);
                state.open = Some(open);
            }
            (None, Some(open)) => feed_open(&mut self.facts, &state.name, open, no, line, cut),
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
                    traceback: false,
                };
                feed_open(&mut self.facts, &state.name, &mut open, no, line, cut);
                state.open = Some(open);
            }
        }
    }

    /// Run the rules and build the report.
    pub fn finish(mut self) -> Report {
        self.end();
        let facts = self.facts;
        let mut findings: Vec<report::Finding> =
            rules::RULES.iter().filter_map(|r| (r.check)(&facts)).collect();
        findings.sort_by(|a, b| {
            b.confidence
                .total_cmp(&a.confidence)
                .then(b.class.severity().cmp(&a.class.severity()))
                .then(a.rule.cmp(&b.rule))
        });
        let verdict = match findings.first() {
            Some(f) => Verdict::from(f.class),
            None if facts.understood_anything() => Verdict::Healthy,
            None => Verdict::Inconclusive,
        };
        Report {
            schema: report::SCHEMA.to_owned(),
            verdict,
            findings,
            inputs: self.sections,
            figures: figures::figures(&facts),
        }
    }
}

fn feed_open(facts: &mut Facts, name: &str, open: &mut Open, no: usize, line: &str, cut: bool) {
    open.end = no;
    if open.kind == InputKind::Unknown && !open.traceback {
        let t = line.trim_start();
        open.traceback = t.starts_with("Traceback (most recent call last)") || t.starts_with("File \"");
    }
    let mut cx = Cx { input: name, facts, issues: &mut open.issues };
    if cut {
        cx.issue(no, format!("line longer than {MAX_LINE_BYTES} bytes; the rest was not read"));
    }
    open.parser.line(&mut cx, no, line);
}

fn close(facts: &mut Facts, sections: &mut Vec<InputSection>, name: &str, mut open: Open) {
    let mut cx = Cx { input: name, facts, issues: &mut open.issues };
    open.parser.finish(&mut cx);
    sections.push(InputSection {
        name: name.to_owned(),
        kind: open.kind,
        lines: [open.start, open.end],
        issues: open.issues,
    });
}

/// Analyse whole texts: `(name, text)` pairs.
pub fn analyze(inputs: &[(&str, &str)]) -> Report {
    let mut a = Analyzer::new();
    for (name, text) in inputs {
        a.add_text(name, text);
    }
    a.finish()
}
