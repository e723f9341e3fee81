//! The app shell: header, language toggle, navigation, one page at a time.

use crate::browser;
use crate::i18n::{Lang, Msg, t};
use crate::pages;
use leptos::prelude::*;

/// The pages, addressed by the URL hash (`#/probe`) so links and reloads keep the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Page {
    Triage,
    Probe,
    Kv,
    Playbook,
    Cards,
    Drill,
}

impl Page {
    const ALL: [Page; 6] = [Page::Triage, Page::Probe, Page::Kv, Page::Playbook, Page::Cards, Page::Drill];

    fn slug(self) -> &'static str {
        match self {
            Page::Triage => "triage",
            Page::Probe => "probe",
            Page::Kv => "kv",
            Page::Playbook => "playbook",
            Page::Cards => "cards",
            Page::Drill => "drill",
        }
    }

    fn label(self) -> Msg {
        match self {
            Page::Triage => Msg::NavTriage,
            Page::Probe => Msg::NavProbe,
            Page::Kv => Msg::NavKv,
            Page::Playbook => Msg::NavPlaybook,
            Page::Cards => Msg::NavCards,
            Page::Drill => Msg::NavDrill,
        }
    }

    fn from_hash(hash: &str) -> Page {
        let slug = hash.trim_start_matches('#').trim_start_matches('/');
        Page::ALL.into_iter().find(|p| p.slug() == slug).unwrap_or(Page::Triage)
    }
}

const LANG_KEY: &str = "triage.lang";

fn initial_lang() -> Lang {
    match browser::storage_get(LANG_KEY).as_deref() {
        Some("zh") => Lang::Zh,
        Some("en") => Lang::En,
        _ if browser::navigator_language().to_ascii_lowercase().starts_with("zh") => Lang::Zh,
        _ => Lang::En,
    }
}

fn current_hash() -> String {
    web_sys::window().and_then(|w| w.location().hash().ok()).unwrap_or_default()
}

#[component]
pub fn App() -> impl IntoView {
    let lang = RwSignal::new(initial_lang());
    provide_context(lang);
    let page = RwSignal::new(Page::from_hash(&current_hash()));
    // Follow the back/forward buttons.
    let listener = leptos::ev::hashchange;
    let _ = window_event_listener(listener, move |_| page.set(Page::from_hash(&current_hash())));
    Effect::new(move |_| {
        let l = lang.get();
        browser::storage_set(LANG_KEY, if l == Lang::Zh { "zh" } else { "en" });
        if let Some(doc) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.document_element()) {
            let _ = doc.set_attribute("lang", if l == Lang::Zh { "zh-CN" } else { "en" });
        }
    });
    let tr = move |m: Msg| t(lang.get(), m);
    view! {
        <header>
            <div class="brand">
                <strong>"llm-triage"</strong>
                <span class="tagline">{move || tr(Msg::Tagline)}</span>
            </div>
            <nav>
                {Page::ALL
                    .into_iter()
                    .map(|p| {
                        view! {
                            <a
                                href=format!("#/{}", p.slug())
                                class:active=move || page.get() == p
                                data-testid=format!("nav-{}", p.slug())
                            >
                                {move || tr(p.label())}
                            </a>
                        }
                    })
                    .collect_view()}
            </nav>
            <button
                data-testid="lang-toggle"
                on:click=move |_| lang.update(|l| *l = if *l == Lang::Zh { Lang::En } else { Lang::Zh })
            >
                {move || tr(Msg::LangToggle)}
            </button>
        </header>
        <p class="privacy">{move || tr(Msg::PrivacyNote)}</p>
        <main>
            {move || match page.get() {
                Page::Triage => pages::triage::TriagePage().into_any(),
                Page::Probe => pages::probe::ProbePage().into_any(),
                Page::Kv => pages::kv::KvPage().into_any(),
                Page::Playbook => pages::playbook::PlaybookPage().into_any(),
                Page::Cards => pages::cards::CardsPage().into_any(),
                Page::Drill => pages::drill::DrillPage().into_any(),
            }}
        </main>
    }
}

/// The current language, for pages.
pub fn use_lang() -> RwSignal<Lang> {
    expect_context::<RwSignal<Lang>>()
}
