//! triage-site: the static site, a Leptos client-side app over triage-core.
//!
//! `mount()` starts the app (called by `app.js`). The page draws; everything that judges —
//! the analyzer, the drills' simulator, the Prometheus exchange — runs in the analysis worker
//! on its own wasm module (`site/analyzer`, driven through [`worker`]), which a first visit
//! does not download. Components hold no parsing logic: core computes, pages show.

pub mod app;
pub mod browser;
pub mod fixed;
pub mod i18n;
pub mod pages;
pub mod worker;

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

/// One input's evidence lines with their context, as the source view shows them: the input's
/// name and (line number, text, is evidence); read by the worker (`site/analyzer/src/excerpt.rs`).
pub type Excerpt = (String, Vec<(usize, String, bool)>);
