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

/// The worker's entry point (see `static/worker.js`): parallel arrays of input names and texts
/// (plain JS strings: cheaper to post than one JSON document), and the language of the report
/// (`en` or `zh`; anything else is English).
#[wasm_bindgen]
pub fn worker_analyze(
    names: Vec<String>,
    texts: Vec<String>,
    lang: String,
    progress: &js_sys::Function,
) -> Result<String, JsValue> {
    let inputs: Vec<NamedText> =
        names.into_iter().zip(texts).map(|(name, text)| NamedText { name, text }).collect();
    let lang = i18n::Lang::parse(&lang).unwrap_or_default();
    let report = analyze_inputs(&inputs, lang, &|p| {
        let _ = progress.call1(&JsValue::NULL, &JsValue::from_f64(p));
    });
    serde_json::to_string(&report).map_err(|e| JsValue::from_str(&e.to_string()))
}
