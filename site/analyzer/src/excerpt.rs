//! The source view's excerpts: each evidence line with the lines around it, read from the
//! input's bytes in any chunking, memory bounded.

use crate::NamedText;

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
pub(crate) fn marks_for(report: &triage_core::analyze::report::Report, name: &str) -> Vec<usize> {
    let mut wanted: Vec<usize> = report
        .findings
        .iter()
        .flat_map(|f| f.evidence.iter())
        .filter(|e| &*e.input == name)
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

    /// Jump to the start of line `line_no` (at or after the current line): what was read of the
    /// current line is dropped. The excerpt pass reads only the regions around the evidence.
    pub fn seek(&mut self, line_no: usize) {
        if line_no > self.line_no {
            self.partial.clear();
            self.len = 0;
            self.line_no = line_no;
        }
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
