//! The app shell: header, language toggle, navigation, one page at a time.

use crate::browser;
use crate::fixed::{Erase, fixed};
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
        // `#/triage?prometheus=…`: the page, then its parameters (pages/prometheus.rs).
        let path = hash.trim_start_matches('#').trim_start_matches('/');
        let slug = path.split('?').next().unwrap_or(path);
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
    // Whether the browser says it has a network (`navigator.onLine`, kept by its `online` and
    // `offline` events): the probe and the Prometheus source say when they cannot work.
    let online = Online(RwSignal::new(browser::on_line()));
    provide_context(online);
    let _ = window_event_listener(leptos::ev::online, move |_| online.0.set(true));
    let _ = window_event_listener(leptos::ev::offline, move |_| online.0.set(false));
    let page = RwSignal::new(Page::from_hash(&current_hash()));
    // On a narrow screen the navigation folds into a menu (style.css shows the button and hides
    // the links below 760 px); choosing a page folds it again.
    let menu = RwSignal::new(false);
    // Follow the back/forward buttons.
    let listener = leptos::ev::hashchange;
    let _ = window_event_listener(listener, move |_| page.set(Page::from_hash(&current_hash())));
    Effect::new(effect(move |_| {
        let l = lang.get();
        browser::storage_set(LANG_KEY, if l == Lang::Zh { "zh" } else { "en" });
        if let Some(doc) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.document_element()) {
            let _ = doc.set_attribute("lang", if l == Lang::Zh { "zh-CN" } else { "en" });
        }
    }));
    fixed(view! {
        <header>
            <div class="brand">
                <strong>"llm-triage"</strong>
                <span class="tagline">{tx(lang, Msg::Tagline)}</span>
            </div>
            <button
                class="menu-toggle"
                data-testid="menu-toggle"
                aria-controls="site-nav"
                aria-expanded=move || if menu.get() { "true" } else { "false" }
                on:click=click(move |_| menu.update(|m| *m = !*m))
            >
                "☰ " {move || t(lang.get(), page.get().label())}
            </button>
            <nav id="site-nav" class:open=move || menu.get() aria-label=tx(lang, Msg::Menu)>
                {Page::ALL
                    .into_iter()
                    .map(|p| {
                        fixed(view! {
                            <a
                                href=format!("#/{}", p.slug())
                                class:active=move || page.get() == p
                                data-testid=format!("nav-{}", p.slug())
                                on:click=click(move |_| menu.set(false))
                            >
                                {tx(lang, p.label())}
                            </a>
                        })
                    })
                    .collect_view()}
            </nav>
            <button
                data-testid="lang-toggle"
                title="Language: English / Chinese (中文)"
                aria-label="Language: English / Chinese"
                on:click=click(move |_| lang.update(|l| *l = if *l == Lang::Zh { Lang::En } else { Lang::Zh }))
            >
                {tx(lang, Msg::LangToggle)}
            </button>
        </header>
        <p class="privacy">{tx(lang, Msg::PrivacyNote)}</p>
        <main>
            {move || match page.get() {
                Page::Triage => pages::triage::TriagePage().erase(),
                Page::Probe => pages::probe::ProbePage().erase(),
                Page::Kv => pages::kv::KvPage().erase(),
                Page::Playbook => pages::playbook::PlaybookPage().erase(),
                Page::Cards => pages::cards::CardsPage().erase(),
                Page::Drill => pages::drill::DrillPage().erase(),
            }}
        </main>
    })
}

/// Whether the browser has a network, as `navigator.onLine` and its events say (provided by
/// [`App`]).
#[derive(Clone, Copy)]
pub struct Online(pub RwSignal<bool>);

/// Whether the browser has a network, tracked (`true` outside [`App`], as in component tests).
pub fn use_online() -> impl Fn() -> bool + Copy + Send + Sync + 'static {
    let online = use_context::<Online>().map(|o| o.0);
    move || online.is_none_or(|o| o.get())
}

/// While the browser is offline, `m` in a notice (`data-testid="offline-notice"`): what the
/// part of the page needs the network for. Nothing while online.
pub fn offline_notice(lang: RwSignal<Lang>, m: Msg) -> impl IntoView {
    let online = use_online();
    move || {
        (!online()).then(|| {
            fixed(view! { <p class="warn offline" role="status" data-testid="offline-notice">{tx(lang, m)}</p> })
        })
    }
}

/// The current language, for pages.
pub fn use_lang() -> RwSignal<Lang> {
    expect_context::<RwSignal<Lang>>()
}

/// `m` in the current language, as a reactive text. Every message shares this one closure type,
/// so the view code for a reactive text is compiled once instead of once per message.
pub fn tx(lang: RwSignal<Lang>, m: Msg) -> impl Fn() -> &'static str + Copy + Send + Sync + 'static {
    move || t(lang.get(), m)
}

/// An `on:input` / `on:change` handler that writes the target's value into `sig` (one handler
/// type for every text field).
pub fn set_text(sig: RwSignal<String>) -> Handler<web_sys::Event> {
    on_event(move |ev| sig.set(event_target_value(&ev)))
}

/// The same for a number field: its parsed value, or `fallback` when it does not parse.
pub fn set_parsed<T>(sig: RwSignal<T>, fallback: T) -> Handler<web_sys::Event>
where
    T: std::str::FromStr + Copy + Send + Sync + 'static,
{
    on_event(move |ev| sig.set(event_target_value(&ev).parse().unwrap_or(fallback)))
}

/// A number signal as the text of a field's `value`.
pub fn num_text<T>(sig: RwSignal<T>) -> impl Fn() -> String + Copy + Send + Sync + 'static
where
    T: ToString + Copy + Send + Sync + 'static,
{
    move || sig.get().to_string()
}

/// An event handler, boxed: tachys compiles its listener code once per event and handler type,
/// so every handler of an event shares one type.
pub type Handler<E> = Box<dyn FnMut(E)>;

/// A boxed `on:click` handler (see [`Handler`]).
pub fn click(f: impl FnMut(web_sys::MouseEvent) + 'static) -> Handler<web_sys::MouseEvent> {
    Box::new(f)
}

/// A boxed `on:input` / `on:change` handler (see [`Handler`]).
pub fn on_event(f: impl FnMut(web_sys::Event) + 'static) -> Handler<web_sys::Event> {
    Box::new(f)
}

/// An effect's function, boxed: every effect is then one type to reactive_graph, whose effect
/// code is compiled once instead of once per effect.
pub fn effect(f: impl FnMut(Option<()>) + 'static) -> Box<dyn FnMut(Option<()>)> {
    Box::new(f)
}
