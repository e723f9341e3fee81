//! Flashcards: the core's whole deck (interview questions, definitions, every rule, log
//! anatomy, log reading, numbers), reviewed with FSRS as the open-spaced-repetition project
//! ships it (core's `cards::review`, on `rs-fsrs`).
//!
//! The deck's text is not in the page's wasm: `cargo xtask site` writes core's `cards::deck()` to
//! `deck.json` beside it, and this page fetches that file from its own origin when it opens (the
//! first visit does not download it). Progress (`triage.cards.progress/v2`: each card's FSRS
//! state, the review log, suspended and buried cards, settings) lives in `localStorage` and is
//! exported and imported as that same file.
//!
//! Three views share the deck and the progress: [`review`] (the session, keyboard first),
//! [`browse`] (search, filter, suspend) and [`stats`] (the charts).

pub mod browse;
pub mod review;
pub mod stats;

use crate::app::{click, on_event, tx, use_lang};
use crate::browser;
use crate::fixed::fixed;
use crate::i18n::{Msg, tf};
use leptos::prelude::*;
use triage_cards::review::{Clock, Filter, Progress, import};
use triage_cards::{Card, CardKind, Tag, anki};

/// Where progress is kept.
const STORE: &str = "triage.cards.v2";
/// The first page's progress (FSRS memory per card), carried over once.
const STORE_V1: &str = "triage.cards.v1";
/// The deck, written by `cargo xtask site` next to `index.html`.
pub const DECK_FILE: &str = "./deck.json";

/// The clock now, in this browser's time zone.
pub fn clock() -> Clock {
    Clock {
        now_ms: js_sys::Date::now() as i64,
        tz_offset_min: js_sys::Date::new_0().get_timezone_offset() as i64,
    }
}

/// Where saved progress that could not be read is kept, so the next save does not lose it.
const STORE_UNREADABLE: &str = "triage.cards.v2.unreadable";

/// The saved progress (the first page's file carried over when there is no other), or a fresh
/// one and why the saved one could not be read — its text then kept under [`STORE_UNREADABLE`].
fn load() -> (Progress, Option<String>) {
    let Some(text) = browser::storage_get(STORE).or_else(|| browser::storage_get(STORE_V1)) else {
        return (Progress::default(), None);
    };
    match import(&text) {
        Ok(p) => (p, None),
        Err(e) => {
            if browser::storage_get(STORE_UNREADABLE).is_none() {
                browser::storage_set(STORE_UNREADABLE, &text);
            }
            (Progress::default(), Some(e.to_string()))
        }
    }
}

/// Keep `p` (compact JSON; the export is the same file pretty-printed); false when the browser
/// refused it (storage full or blocked).
fn save(p: &Progress) -> bool {
    serde_json::to_string(p).is_ok_and(|json| browser::storage_set(STORE, &json))
}

/// How the last import went.
#[derive(Clone, Debug, PartialEq)]
enum Imported {
    Ok,
    /// The file was refused: why.
    Failed(String),
    /// The file was read but the browser would not store it (its compact JSON's bytes): nothing
    /// was kept.
    NotSaved(usize),
}

/// The deck and the order its new cards are introduced in.
#[derive(Default)]
pub struct Deck {
    pub cards: Vec<Card>,
    pub order: Vec<usize>,
}

/// What the three views share.
#[derive(Clone, Copy)]
pub struct Shared {
    pub deck: StoredValue<Deck>,
    /// `None` until `deck.json` has arrived; `Err` if it could not be read.
    pub loaded: RwSignal<Option<Result<(), String>>>,
    pub progress: RwSignal<Progress>,
    pub filter: RwSignal<Filter>,
    /// Bumped every 20 s, so learning cards that fall due appear without a click.
    pub tick: RwSignal<u32>,
    /// The last save failed: the page says so (export keeps the progress).
    pub unsaved: RwSignal<bool>,
    /// Bumped when an import replaces the progress: the session starts over from the queue.
    pub imported: RwSignal<u32>,
}

impl Shared {
    /// Change the progress and save it.
    pub fn update(self, f: impl FnOnce(&mut Progress)) {
        let mut saved = true;
        self.progress.update(|p| {
            f(p);
            saved = save(p);
        });
        self.unsaved.set(!saved);
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum View {
    Review,
    Browse,
    Stats,
}

#[component]
pub fn CardsPage() -> impl IntoView {
    let lang = use_lang();
    let (saved, unreadable) = load();
    let shared = Shared {
        deck: StoredValue::new(Deck::default()),
        loaded: RwSignal::new(None),
        progress: RwSignal::new(saved),
        filter: RwSignal::new(Filter::default()),
        tick: RwSignal::new(0),
        unsaved: RwSignal::new(false),
        imported: RwSignal::new(0),
    };
    leptos::task::spawn_local(async move {
        let got = browser::fetch_own(DECK_FILE)
            .await
            .and_then(|t| serde_json::from_str::<Vec<Card>>(&t).map_err(|e| e.to_string()));
        match got {
            Ok(cards) => {
                let order = triage_cards::review::new_order(&cards);
                shared.deck.set_value(Deck { cards, order });
                shared.loaded.set(Some(Ok(())));
            }
            Err(e) => shared.loaded.set(Some(Err(e))),
        }
    });
    if let Ok(h) =
        set_interval_with_handle(move || shared.tick.update(|t| *t += 1), std::time::Duration::from_secs(20))
    {
        on_cleanup(move || h.clear());
    }
    let view_on = RwSignal::new(View::Review);
    let tab = move |v: View, id: &'static str, m: Msg| {
        fixed(view! {
            <button data-testid=id class:primary=move || view_on.get() == v on:click=click(move |_| view_on.set(v))>{tx(lang, m)}</button>
        })
    };
    let pick_tag = on_event(move |ev| shared.filter.update(|f| f.tag = Tag::parse(&event_target_value(&ev))));
    let pick_kind = on_event(move |ev| {
        let v = event_target_value(&ev);
        shared.filter.update(|f| f.kind = CardKind::ALL.into_iter().find(|k| k.as_str() == v));
    });
    let import_error = RwSignal::new(None::<Imported>);
    let import_file = move |ev: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        let Some(file) = input.files().and_then(|f| f.get(0)) else { return };
        input.set_value("");
        leptos::task::spawn_local(async move {
            let text =
                wasm_bindgen_futures::JsFuture::from(file.text()).await.ok().and_then(|t| t.as_string());
            match text.map(|t| import(&t)) {
                // Kept first, shown after: progress the browser would not keep is refused, and
                // the progress on screen (and stored) stays what it was — it once said
                // "imported", worked on the new progress, and a reload reverted it.
                Some(Ok(p)) => match serde_json::to_string(&p) {
                    Ok(json) if browser::storage_set(STORE, &json) => {
                        shared.unsaved.set(false);
                        shared.progress.set(p);
                        shared.imported.update(|n| *n += 1);
                        import_error.set(Some(Imported::Ok));
                    }
                    Ok(json) => import_error.set(Some(Imported::NotSaved(json.len()))),
                    Err(e) => import_error.set(Some(Imported::Failed(e.to_string()))),
                },
                Some(Err(e)) => import_error.set(Some(Imported::Failed(e.to_string()))),
                None => {
                    import_error.set(Some(Imported::Failed("the file could not be read as text".to_owned())))
                }
            }
        });
    };
    let anki_export = move |_| {
        let l = lang.get_untracked();
        let filter = shared.filter.get_untracked();
        let tsv = shared.deck.with_value(|d| anki::tsv(d.cards.iter().filter(|c| filter.admits(c)), l));
        browser::download("triage-cards-anki.tsv", &tsv, "text/tab-separated-values");
    };
    fixed(view! {
        <div class="row cards-bar">
            {tab(View::Review, "cards-tab-review", Msg::CardsReview)}
            {tab(View::Browse, "cards-tab-browse", Msg::CardsBrowse)}
            {tab(View::Stats, "cards-tab-stats", Msg::CardsStats)}
            <select data-testid="cards-tag" on:change=pick_tag title=tx(lang, Msg::CardsTag)>
                <option value="">{tx(lang, Msg::CardsAllTopics)}</option>
                {Tag::ALL.iter().map(|t| fixed(view! { <option value=t.as_str()>{move || t.label(lang.get())}</option> })).collect_view()}
            </select>
            <select data-testid="cards-kind" on:change=pick_kind title=tx(lang, Msg::CardsKind)>
                <option value="">{tx(lang, Msg::CardsAllKinds)}</option>
                {CardKind::ALL.iter().map(|k| fixed(view! { <option value=k.as_str()>{k.as_str()}</option> })).collect_view()}
            </select>
        </div>
        {move || match shared.loaded.get() {
            None => fixed(view! { <p class="note" data-testid="cards-loading">{tx(lang, Msg::CardsLoading)}</p> }),
            Some(Err(e)) => fixed(view! { <p class="error" data-testid="cards-error">{tx(lang, Msg::CardsLoadFailed)} " " {e}</p> }),
            Some(Ok(())) => match view_on.get() {
                View::Review => review::view(shared),
                View::Browse => browse::view(shared),
                View::Stats => stats::view(shared),
            },
        }}
        <div class="row">
            <button data-testid="cards-export" on:click=click(move |_| browser::download("triage-cards-progress.json", &shared.progress.with_untracked(Progress::to_json), "application/json"))>
                {tx(lang, Msg::CardsExport)}
            </button>
            <label class="file">{tx(lang, Msg::CardsImport)}
                <input type="file" accept="application/json,.json" data-testid="cards-import" on:change=on_event(import_file)/>
            </label>
            <button data-testid="cards-anki" on:click=click(anki_export) title=tx(lang, Msg::CardsAnkiHint)>{tx(lang, Msg::CardsAnki)}</button>
        </div>
        {move || import_error.get().map(|e| match e {
            Imported::Ok => fixed(view! { <p class="ok" data-testid="cards-import-ok">{move || tf(lang.get(), Msg::CardsImported, &[("n", &shared.progress.with(|p| p.cards.len()).to_string())])}</p> }),
            Imported::Failed(e) => fixed(view! { <p class="error" data-testid="cards-import-error">{tx(lang, Msg::CardsImportFailed)} " " {e}</p> }),
            Imported::NotSaved(bytes) => {
                let kb = bytes.div_ceil(1024).to_string();
                fixed(view! { <p class="error" data-testid="cards-import-unsaved">{move || tf(lang.get(), Msg::CardsImportNotSaved, &[("kb", &kb)])}</p> })
            }
        })}
        {unreadable.map(|e| fixed(view! {
            <p class="warn" data-testid="cards-unreadable">{move || tf(lang.get(), Msg::CardsUnreadable, &[("error", &e), ("key", STORE_UNREADABLE)])}</p>
        }))}
        {move || shared.unsaved.get().then(|| fixed(view! { <p class="warn" data-testid="cards-unsaved">{tx(lang, Msg::CardsUnsaved)}</p> }))}
        <p class="note">{tx(lang, Msg::CardsAnkiSteps)}</p>
    })
}
