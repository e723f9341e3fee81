//! Component tests in a real browser (wasm-bindgen-test, headless Chromium): pages mounted on
//! their own, showing what core computes.

use leptos::prelude::*;
use triage_site::i18n::Lang;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn mount_in_div(f: impl FnOnce() -> AnyView + 'static) -> web_sys::HtmlElement {
    let doc = web_sys::window().unwrap().document().unwrap();
    let div: web_sys::HtmlElement = doc.create_element("div").unwrap().unchecked_into();
    doc.body().unwrap().append_child(&div).unwrap();
    let handle = mount_to(div.clone(), move || {
        provide_context(RwSignal::new(Lang::En));
        f()
    });
    handle.forget();
    div
}

fn text_of(root: &web_sys::HtmlElement, testid: &str) -> String {
    root.query_selector(&format!("[data-testid={testid}]"))
        .unwrap()
        .map(|e| e.text_content().unwrap_or_default())
        .unwrap_or_default()
}

#[wasm_bindgen_test]
fn the_kv_page_shows_the_estimate_for_the_default_preset() {
    let root = mount_in_div(|| triage_site::pages::kv::KvPage().into_any());
    // Llama-3.1-8B in bf16: 32 layers × 8 KV heads × 256 values × 2 bytes.
    assert_eq!(text_of(&root, "kv-bytes-per-token"), "131,072");
    assert!(text_of(&root, "kv-concurrency").ends_with('x'));
}

#[wasm_bindgen_test]
fn the_playbook_lists_every_rule_as_a_branch() {
    let root = mount_in_div(|| triage_site::pages::playbook::PlaybookPage().into_any());
    let branches = root.query_selector_all("[data-testid=playbook-branch]").unwrap().length() as usize;
    assert_eq!(branches, triage_core::analyze::rules::RULES.len());
}

#[wasm_bindgen_test]
fn the_catalogue_has_both_languages_for_every_message() {
    use triage_site::i18n::{Msg, t};
    for m in
        [Msg::NavTriage, Msg::Analyze, Msg::ProbeStart, Msg::KvBytesPerToken, Msg::CardsShow, Msg::DrillNew]
    {
        assert!(!t(Lang::En, m).is_empty() && !t(Lang::Zh, m).is_empty());
        assert_ne!(t(Lang::En, m), t(Lang::Zh, m));
    }
}
