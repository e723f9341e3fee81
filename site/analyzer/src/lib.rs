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
pub mod session;

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

/// Inputs of the corpus [`warm_up`] reads: a vLLM log with stats lines, a `/metrics` scrape,
/// an OOM traceback, an `nvidia-smi` table and a dead NCCL group, so most parsers run.
const WARM_UP: [&str; 5] = [
    include_str!("../../../tests/data/incidents/ttft_queueing.log"),
    include_str!("../../../tests/data/incidents/throughput_kv_leak.prom"),
    include_str!("../../../tests/data/oom/h200_200gib.txt"),
    include_str!("../../../tests/data/smi/synthetic_8gpu_one_slow.txt"),
    include_str!("../../../tests/data/incidents/throughput_nccl_dead.log"),
];

/// Bytes of each input [`warm_up`] feeds (each corpus file repeated to this size).
pub const WARM_UP_BYTES: usize = 16 << 10;

/// Analyse a small built-in corpus three times, so that the browser's engine compiles the
/// analyzer's hot code with its optimizing tier before the user's input arrives (V8 starts a
/// module on its baseline compiler and optimizes a function once it has run a while). The
/// worker calls it once, right after loading the module, while the user is still choosing what
/// to paste. Most of its cost is what the first analysis would pay anyway (V8 compiles a wasm
/// function when it is first called), so it only moves work earlier. Measured in Node 20 (V8)
/// on the 30 MiB log of `cargo xtask bench site`: the first analysis after loading took 179 ms
/// (feed 142, finish 37) cold, 138–150 ms after this; this itself ~85 ms (16 KiB or 128 KiB
/// per input made no difference to the gain, so the smaller). Returns the bytes analysed.
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn warm_up() -> usize {
    let mut total = 0;
    for _ in 0..3 {
        let mut a = triage_core::analyze::Analyzer::new();
        for (i, text) in WARM_UP.iter().enumerate() {
            a.begin(&format!("warm-up-{i}"));
            let mut fed = 0;
            while fed < WARM_UP_BYTES {
                a.feed(text.as_bytes());
                fed += text.len();
            }
            a.end();
            total += fed;
        }
        let report = a.finish();
        total += serde_json::to_string(&report).map_or(0, |s| s.len().min(1));
    }
    total
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_warm_up_reads_every_corpus_input() {
        assert!(super::warm_up() >= 3 * super::WARM_UP.len() * super::WARM_UP_BYTES);
    }
}
