//! The streaming analysis `worker.js` drives with a file's or a paste's bytes.

use crate::excerpt::{Excerpt, ExcerptReader, marks_for};
use triage_core::lang::Lang;
use wasm_bindgen::prelude::*;

/// A streaming analysis for the worker (`static/worker.js`): inputs arrive as bytes in any
/// chunking (a `File`'s stream, a paste encoded once), straight into wasm memory; no text is
/// ever a JS string. `finish` gives the report; then `excerpt_*` read the inputs that have
/// evidence a second time for the source view.
#[wasm_bindgen]
pub struct AnalysisSession {
    analyzer: Option<triage_core::analyze::Analyzer>,
    /// The language the report (and its Markdown headings) is written in.
    lang: Lang,
    report: Option<triage_core::analyze::report::Report>,
    /// The current input starts with these bytes still unseen (the UTF-8 BOM, for files).
    bom_left: usize,
    excerpt: Option<ExcerptReader>,
    excerpts: Vec<Excerpt>,
    /// Bytes of the current input seen so far, BOM included (offsets into the file).
    offset: u64,
    /// Per input: where some lines start, `(byte offset, line number)`, at least
    /// [`MARK_EVERY`] bytes apart, so that the excerpt pass reads only around the evidence.
    marks: Vec<(String, Vec<(u64, usize)>)>,
}

/// Bytes between two line marks: the excerpt pass reads at most about twice this around each
/// evidence line, and a 1 GiB input keeps 1,024 marks.
pub const MARK_EVERY: u64 = 1 << 20;

/// Lines of context the source view shows around each evidence line (as `ExcerptReader`).
const CONTEXT: usize = 2;

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl AnalysisSession {
    /// Drop a leading UTF-8 BOM as the browser's `File.text()` does (so a file reads as it did
    /// when the page read it as text); `bytes` is what remains.
    fn skip_bom<'a>(&mut self, bytes: &'a [u8]) -> &'a [u8] {
        if self.bom_left == 0 {
            return bytes;
        }
        let seen = BOM.len() - self.bom_left;
        let n = bytes.len().min(self.bom_left);
        if bytes[..n] == BOM[seen..seen + n] {
            self.bom_left -= n;
            if self.bom_left == 0 { &bytes[n..] } else { &[] }
        } else {
            // Not a BOM after all: what was held back is part of the input.
            self.bom_left = 0;
            if seen > 0 {
                let held = &BOM[..seen];
                if let Some(a) = self.analyzer.as_mut() {
                    a.feed(held);
                }
                if let Some(x) = self.excerpt.as_mut() {
                    x.feed(held);
                }
            }
            bytes
        }
    }
}

#[wasm_bindgen]
impl AnalysisSession {
    /// A session whose report is written in `lang` (`en` or `zh`; anything else is English).
    #[wasm_bindgen(constructor)]
    pub fn new(lang: &str) -> AnalysisSession {
        let lang = Lang::parse(lang).unwrap_or_default();
        AnalysisSession {
            analyzer: Some(triage_core::analyze::Analyzer::new().with_lang(lang)),
            lang,
            report: None,
            bom_left: 0,
            excerpt: None,
            excerpts: Vec::new(),
            offset: 0,
            marks: Vec::new(),
        }
    }

    /// Start input `name`; `file`: its bytes come from a file (a leading BOM is dropped).
    pub fn begin(&mut self, name: &str, file: bool) {
        self.bom_left = if file { BOM.len() } else { 0 };
        self.offset = 0;
        self.marks.push((name.to_owned(), vec![(0, 1)]));
        if let Some(a) = self.analyzer.as_mut() {
            a.begin(name);
        }
    }

    /// The next bytes of the current input (lines and UTF-8 may be split anywhere).
    pub fn feed(&mut self, bytes: &[u8]) {
        let at = self.offset;
        self.offset += bytes.len() as u64;
        let fed = self.skip_bom(bytes);
        let Some(a) = self.analyzer.as_mut() else { return };
        a.feed(fed);
        // Mark where the line after this chunk's last `\n` starts, now and then.
        let Some((_, marks)) = self.marks.last_mut() else { return };
        let last = marks.last().map_or(0, |m| m.0);
        if self.offset - last >= MARK_EVERY
            && let Some(i) = memchr::memrchr(b'\n', bytes)
        {
            marks.push((at + i as u64 + 1, a.lines_read() + 1));
        }
    }

    /// The current input ended.
    pub fn end(&mut self) {
        self.bom_left = 0;
        if let Some(a) = self.analyzer.as_mut() {
            a.end();
        }
    }

    /// The `triage.report/v1` report as JSON; ends the analysis. The bytes are those
    /// `triage analyze --format json` prints for the same inputs (pretty, a final newline, the
    /// characters a terminal acts on as `\u` escapes): the page shows the report parsed from
    /// them and offers them as they are ("Download JSON").
    pub fn finish(&mut self) -> Result<String, JsValue> {
        let report =
            self.analyzer.take().ok_or_else(|| JsValue::from_str("analysis already finished"))?.finish();
        let json = serde_json::to_string_pretty(&report).map_err(|e| JsValue::from_str(&e.to_string()))?;
        self.report = Some(report);
        Ok(triage_core::safe::escape_json_controls(&(json + "\n")).into_owned())
    }

    /// After `finish`: the report as Markdown, the bytes `triage analyze --format markdown`
    /// prints (core's one renderer, control characters escaped as the CLI does) — "Copy as
    /// Markdown".
    pub fn markdown(&self) -> String {
        let Some(r) = self.report.as_ref() else { return String::new() };
        triage_core::safe::escape_controls(&triage_core::analyze::markdown::report(r, self.lang)).into_owned()
    }

    /// After `finish`: whether input `name` has evidence lines to show (read it again if so).
    pub fn wants_excerpt(&self, name: &str) -> bool {
        self.report.as_ref().is_some_and(|r| !marks_for(r, name).is_empty())
    }

    /// After `finish`: the regions of input `name` to read again for its excerpt, as
    /// `[start, end, first line, …]` (byte offsets; `end` −1 for the end of the input), in
    /// order and not overlapping; before each, call [`AnalysisSession::excerpt_seek`] with
    /// its first line. Empty when no line of it is evidence.
    pub fn excerpt_plan(&self, name: &str) -> Vec<f64> {
        let wanted = self.report.as_ref().map(|r| marks_for(r, name)).unwrap_or_default();
        let marks = self.marks.iter().find(|(n, _)| n == name).map_or(&[(0, 1)][..], |(_, m)| m);
        plan(marks, &wanted)
            .into_iter()
            .flat_map(|(s, e, l)| [s as f64, e.map_or(-1.0, |e| e as f64), l as f64])
            .collect()
    }

    /// The excerpt's reading jumps to line `line` (the first line of a region of the plan).
    pub fn excerpt_seek(&mut self, line: usize) {
        if line > 1 {
            // Mid-input: no BOM to look for.
            self.bom_left = 0;
        }
        if let Some(x) = self.excerpt.as_mut() {
            x.seek(line);
        }
    }

    /// After `finish`: start reading input `name` again for its excerpt.
    pub fn excerpt_begin(&mut self, name: &str, file: bool) {
        let wanted = self.report.as_ref().map(|r| marks_for(r, name)).unwrap_or_default();
        self.bom_left = if file { BOM.len() } else { 0 };
        self.excerpt = Some(ExcerptReader::new(name, wanted));
    }

    /// The next bytes of the input read for its excerpt; `false` once nothing more is needed.
    pub fn excerpt_feed(&mut self, bytes: &[u8]) -> bool {
        let bytes = self.skip_bom(bytes);
        self.excerpt.as_mut().is_some_and(|x| {
            x.feed(bytes);
            !x.done()
        })
    }

    /// The input read for its excerpt ended.
    pub fn excerpt_end(&mut self) {
        self.bom_left = 0;
        if let Some(x) = self.excerpt.take().and_then(ExcerptReader::finish) {
            self.excerpts.push(x);
        }
    }

    /// Every excerpt read, as JSON (`[[name, [[line, text, evidence], …]], …]`).
    pub fn excerpts(&self) -> Result<String, JsValue> {
        serde_json::to_string(&self.excerpts).map_err(|e| JsValue::from_str(&e.to_string()))
    }
}

/// The regions to read for lines `wanted` (sorted) given line `marks` (ascending, the first at
/// `(0, 1)`): for each wanted line, from the last mark at or before its context to the first
/// mark after it; regions that touch are merged. `(start, end or None for the end, first line)`.
pub fn plan(marks: &[(u64, usize)], wanted: &[usize]) -> Vec<(u64, Option<u64>, usize)> {
    let mut out: Vec<(u64, Option<u64>, usize)> = Vec::new();
    for &w in wanted {
        let from = marks.partition_point(|m| m.1 + CONTEXT <= w).saturating_sub(1);
        let (start, line) = marks.get(from).copied().unwrap_or((0, 1));
        let end = marks.iter().find(|m| m.1 > w + CONTEXT + 1).map(|m| m.0);
        match out.last_mut() {
            // Touches or overlaps the last region: grow it.
            Some(last) if last.1.is_none_or(|e| start <= e) => {
                last.1 = match (last.1, end) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
            }
            _ => out.push((start, end, line)),
        }
    }
    out
}
