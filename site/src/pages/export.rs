//! Into the ticket: a report shown on the page, copied as Markdown or saved as JSON — the bytes
//! `triage analyze --format markdown` and `--format json` print for the same inputs. Both are
//! made where the report is, in the analysis worker (core's one Markdown renderer,
//! `triage_report::markdown`; the CLI's pretty JSON), so the page's module carries
//! neither; keys and credential shapes are already redacted in the report itself.

use crate::app::{click, tx, use_lang};
use crate::browser;
use crate::fixed::fixed;
use crate::i18n::Msg;
use leptos::prelude::*;

/// A report's two exports, as the worker wrote them.
#[derive(Clone, Debug, PartialEq)]
pub struct Exports {
    /// `triage.report/v1`, pretty, with a final newline (`--format json`).
    pub json: String,
    /// The report as Markdown (`--format markdown`).
    pub markdown: String,
}

/// What the copy button last did.
#[derive(Clone, Copy, PartialEq)]
enum CopyState {
    Idle,
    Done,
    Failed,
}

/// "Copy as Markdown" and "Download JSON" for one report.
#[component]
pub fn ExportButtons(exports: Exports) -> impl IntoView {
    let lang = use_lang();
    let state = RwSignal::new(CopyState::Idle);
    let Exports { json, markdown } = exports;
    let md = StoredValue::new(markdown);
    let copy = move |_| {
        let text = md.get_value();
        leptos::task::spawn_local(async move {
            let ok = browser::copy_text(&text).await.is_ok();
            state.set(if ok { CopyState::Done } else { CopyState::Failed });
        });
    };
    let download = move |_| browser::download("triage-report.json", &json, "application/json");
    fixed(view! {
        <div class="row export">
            <button data-testid="copy-markdown" on:click=click(copy)>{tx(lang, Msg::CopyMarkdown)}</button>
            <button data-testid="download-json" on:click=click(download)>{tx(lang, Msg::DownloadJson)}</button>
            <span class="note" data-testid="copy-status">
                {move || match state.get() {
                    CopyState::Idle => tx(lang, Msg::ExportNote)(),
                    CopyState::Done => tx(lang, Msg::Copied)(),
                    CopyState::Failed => tx(lang, Msg::CopyFailed)(),
                }}
            </span>
        </div>
        // Where the clipboard is refused (plain http on a LAN address, a locked-down browser):
        // the Markdown itself, selected, for copying by hand.
        {move || (state.get() == CopyState::Failed).then(|| {
            let text = md.get_value();
            fixed(view! {
                <textarea class="export-fallback" readonly rows="8" data-testid="markdown-fallback"
                    on:focus=|ev: leptos::ev::FocusEvent| {
                        let el: web_sys::HtmlTextAreaElement = event_target(&ev);
                        el.select();
                    }
                    prop:value=text
                ></textarea>
            })
        })}
    })
}
