//! triage-site: the static site, a Leptos client-side app over triage-core.
//!
//! `mount()` starts the app (called by `app.js`); `worker_analyze()` is the analysis entry the
//! Web Worker (`worker.js`) calls with the same wasm module, so large pastes never freeze the
//! page. Components hold no parsing logic: core computes, pages show.

pub mod app;
pub mod browser;
pub mod fixed;
pub mod i18n;
pub mod pages;

use wasm_bindgen::prelude::*;

/// Start the app in `<body>`.
#[wasm_bindgen]
pub fn mount() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(app::App);
}

/// One input of an analysis request: a file or the paste.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
pub struct NamedText {
    pub name: String,
    pub text: String,
}

/// Analyse `[{name, text}, …]` into a `triage.report/v1` report written in `lang`, calling
/// `progress` with the fraction done every 1 MiB.
pub fn analyze_inputs(
    inputs: &[NamedText],
    lang: i18n::Lang,
    progress: &dyn Fn(f64),
) -> triage_core::analyze::report::Report {
    const STEP: usize = 1 << 20;
    let total: usize = inputs.iter().map(|i| i.text.len()).sum::<usize>().max(1);
    let mut done = 0usize;
    let mut a = triage_core::analyze::Analyzer::new().with_lang(lang);
    for input in inputs {
        a.begin(&input.name);
        for chunk in input.text.as_bytes().chunks(STEP) {
            a.feed(chunk);
            done += chunk.len();
            progress(done as f64 / total as f64);
        }
        a.end();
    }
    a.finish()
}

/// One input's evidence lines with their context, as the source view shows them: the input's
/// name and (line number, text cut to [`EXCERPT_CHARS`] characters, is evidence).
pub type Excerpt = (String, Vec<(usize, String, bool)>);

/// Characters of a line the source view shows.
pub const EXCERPT_CHARS: usize = 400;

/// Lines of context shown around each evidence line.
const EXCERPT_CONTEXT: usize = 2;

/// Bytes of a line kept for its excerpt: enough for [`EXCERPT_CHARS`] characters of the lossy
/// decoding however they are encoded (a character, or a replacement, takes 1 to 4 bytes).
const EXCERPT_KEEP_BYTES: usize = EXCERPT_CHARS * 4 + 4;

/// The evidence lines `report` names in input `name`, sorted and without repeats.
fn marks_for(report: &triage_core::analyze::report::Report, name: &str) -> Vec<usize> {
    let mut wanted: Vec<usize> = report
        .findings
        .iter()
        .flat_map(|f| f.evidence.iter())
        .filter(|e| e.input == name)
        .map(|e| e.line)
        .collect();
    triage_core::sort::sort(&mut wanted);
    wanted.dedup();
    wanted
}

/// Collects one input's excerpt from its bytes in any chunking: lines as `str::lines` splits
/// them (at `\n`, a `\r` before it dropped), each decoded as `String::from_utf8_lossy` does
/// (as the browser's `File.text()` does), only the wanted lines kept and only their first
/// [`EXCERPT_KEEP_BYTES`] bytes (memory bounded whatever the input).
pub struct ExcerptReader {
    name: String,
    wanted: Vec<usize>,
    line_no: usize,
    /// The current line's first bytes, when it is wanted.
    partial: Vec<u8>,
    /// Bytes of the current line so far (an unfinished last line counts only when not empty).
    len: usize,
    lines: Vec<(usize, String, bool)>,
}

impl ExcerptReader {
    /// Read input `name` for the evidence lines `wanted` (sorted) names.
    pub fn new(name: &str, wanted: Vec<usize>) -> ExcerptReader {
        ExcerptReader {
            name: name.to_owned(),
            wanted,
            line_no: 1,
            partial: Vec::new(),
            len: 0,
            lines: Vec::new(),
        }
    }

    fn shown(&self, n: usize) -> bool {
        let from = self.wanted.partition_point(|w| *w + EXCERPT_CONTEXT < n);
        self.wanted.get(from).is_some_and(|w| w.abs_diff(n) <= EXCERPT_CONTEXT)
    }

    /// Whether no line after the current one can be shown.
    pub fn done(&self) -> bool {
        self.wanted.last().is_none_or(|w| self.line_no > w + EXCERPT_CONTEXT)
    }

    fn keep(&mut self, bytes: &[u8]) {
        self.len = self.len.saturating_add(bytes.len());
        if self.shown(self.line_no) {
            let room = EXCERPT_KEEP_BYTES.saturating_sub(self.partial.len());
            self.partial.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
    }

    fn close_line(&mut self, strip_cr: bool) {
        let n = self.line_no;
        if self.shown(n) {
            let mut raw = std::mem::take(&mut self.partial);
            // Only a line kept whole ends in its own `\r`.
            if strip_cr && raw.len() == self.len && raw.last() == Some(&b'\r') {
                raw.pop();
            }
            let text: String = String::from_utf8_lossy(&raw).chars().take(EXCERPT_CHARS).collect();
            self.lines.push((n, text, self.wanted.binary_search(&n).is_ok()));
        }
        self.partial.clear();
        self.len = 0;
        self.line_no += 1;
    }

    /// The next bytes of the input.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() && !self.done() {
            match memchr::memchr(b'\n', bytes) {
                Some(pos) => {
                    self.keep(&bytes[..pos]);
                    self.close_line(true);
                    bytes = &bytes[pos + 1..];
                }
                None => {
                    self.keep(bytes);
                    bytes = &[];
                }
            }
        }
    }

    /// The input ended: its excerpt, `None` when no line of it is evidence.
    pub fn finish(mut self) -> Option<Excerpt> {
        if self.len > 0 && !self.done() {
            self.close_line(false);
        }
        (!self.wanted.is_empty()).then_some((self.name, self.lines))
    }
}

/// The source view's excerpts of `inputs` for `report`: every evidence line with
/// [`EXCERPT_CONTEXT`] lines around it, per input that has evidence.
pub fn excerpts(report: &triage_core::analyze::report::Report, inputs: &[NamedText]) -> Vec<Excerpt> {
    inputs
        .iter()
        .filter_map(|input| {
            let mut r = ExcerptReader::new(&input.name, marks_for(report, &input.name));
            r.feed(input.text.as_bytes());
            r.finish()
        })
        .collect()
}

/// A streaming analysis for the worker (`static/worker.js`): inputs arrive as bytes in any
/// chunking (a `File`'s stream, a paste encoded once), straight into wasm memory; no text is
/// ever a JS string. `finish` gives the report; then `excerpt_*` read the inputs that have
/// evidence a second time for the source view.
#[wasm_bindgen]
pub struct AnalysisSession {
    analyzer: Option<triage_core::analyze::Analyzer>,
    report: Option<triage_core::analyze::report::Report>,
    /// The current input starts with these bytes still unseen (the UTF-8 BOM, for files).
    bom_left: usize,
    excerpt: Option<ExcerptReader>,
    excerpts: Vec<Excerpt>,
}

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
        let lang = i18n::Lang::parse(lang).unwrap_or_default();
        AnalysisSession {
            analyzer: Some(triage_core::analyze::Analyzer::new().with_lang(lang)),
            report: None,
            bom_left: 0,
            excerpt: None,
            excerpts: Vec::new(),
        }
    }

    /// Start input `name`; `file`: its bytes come from a file (a leading BOM is dropped).
    pub fn begin(&mut self, name: &str, file: bool) {
        self.bom_left = if file { BOM.len() } else { 0 };
        if let Some(a) = self.analyzer.as_mut() {
            a.begin(name);
        }
    }

    /// The next bytes of the current input (lines and UTF-8 may be split anywhere).
    pub fn feed(&mut self, bytes: &[u8]) {
        let bytes = self.skip_bom(bytes);
        if let Some(a) = self.analyzer.as_mut() {
            a.feed(bytes);
        }
    }

    /// The current input ended.
    pub fn end(&mut self) {
        self.bom_left = 0;
        if let Some(a) = self.analyzer.as_mut() {
            a.end();
        }
    }

    /// The `triage.report/v1` report as JSON; ends the analysis.
    pub fn finish(&mut self) -> Result<String, JsValue> {
        let report =
            self.analyzer.take().ok_or_else(|| JsValue::from_str("analysis already finished"))?.finish();
        let json = serde_json::to_string(&report).map_err(|e| JsValue::from_str(&e.to_string()))?;
        self.report = Some(report);
        Ok(json)
    }

    /// After `finish`: whether input `name` has evidence lines to show (read it again if so).
    pub fn wants_excerpt(&self, name: &str) -> bool {
        self.report.as_ref().is_some_and(|r| !marks_for(r, name).is_empty())
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
