//! triage-site-analyzer: the part of the site that judges, in its own wasm module.
//!
//! The page (`triage-site`) draws; this module, loaded by the analysis worker (`worker.js`)
//! the first time the page needs it, holds everything that reads evidence: core's `Analyzer`
//! with its parsers, rules and their docs in both languages, the drills' simulator, and the
//! Prometheus exchange. None of it is in the page's wasm, so a first visit does not download
//! it (see `xtask/src/site.rs` for the sizes), and it is built for speed (`opt-level = 3`,
//! profile `site-analyzer`) where the page is built for size.
//!
//! Three doors, all driven by `worker.js`:
//! - [`AnalysisSession`]: pastes and files streamed in as bytes (`session.rs`);
//! - [`call`]: small questions answered as JSON — rule docs, an analysis of short texts, a
//!   drill and the check of a pick (`calls.rs`);
//! - [`PromSession`]: core's Prometheus [`Exchange`](triage_core::prometheus::exchange::Exchange)
//!   held here while the page does the HTTP (`prom.rs`).

mod calls;
mod excerpt;
mod prom;
mod session;

pub use calls::{answer, call};
pub use excerpt::{EXCERPT_CHARS, Excerpt, ExcerptReader, excerpts};
pub use prom::PromSession;
pub use session::AnalysisSession;

/// One input of an analysis request: a file or the paste.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
pub struct NamedText {
    pub name: String,
    pub text: String,
}

/// Analyse `[{name, text}, …]` into a `triage.report/v1` report written in `lang`.
pub fn analyze_inputs(
    inputs: &[NamedText],
    lang: triage_core::lang::Lang,
) -> triage_core::analyze::report::Report {
    let mut a = triage_core::analyze::Analyzer::new().with_lang(lang);
    for input in inputs {
        a.begin(&input.name);
        a.feed(input.text.as_bytes());
        a.end();
    }
    a.finish()
}
