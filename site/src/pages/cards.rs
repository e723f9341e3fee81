//! Flashcards: the core's deck (interview questions, definitions, every rule, log anatomy, log
//! reading, numbers) with FSRS scheduling; progress in localStorage, exportable and importable as
//! JSON.
//!
//! The deck's text is not compiled into the page's wasm: `cargo xtask site` writes core's
//! `cards::deck()` less the rule cards to `deck.json` beside it, and this page fetches that file
//! from its own origin when it opens (the first visit does not download it), then makes the rule
//! cards from the rule docs the wasm carries for the analyzer (`cards::with_rule_cards`).

use crate::app::{click, on_event, tx, use_lang};
use crate::browser;
use crate::fixed::fixed;
use crate::i18n::Msg;
use leptos::prelude::*;
use std::collections::BTreeMap;
use triage_core::cards::fsrs::{Memory, Rating, review};
use triage_core::cards::{Card, with_rule_cards};

const STORE: &str = "triage.cards.v1";
/// The deck, written by `cargo xtask site` next to `index.html`.
pub const DECK_FILE: &str = "./deck.json";
/// New cards introduced per day.
const NEW_PER_DAY: usize = 20;

fn now_days() -> f64 {
    js_sys::Date::now() / 86_400_000.0
}

fn load() -> BTreeMap<String, Memory> {
    browser::storage_get(STORE).and_then(|s| serde_json::from_str(&s).ok()).unwrap_or_default()
}

fn save(p: &BTreeMap<String, Memory>) {
    if let Ok(s) = serde_json::to_string(p) {
        browser::storage_set(STORE, &s);
    }
}

/// What the header counts, as Anki does: new cards still open today, learning cards due now
/// (stability under a day: still in short-term memory), review cards due now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub new: usize,
    pub learning: usize,
    pub due: usize,
}

pub fn counts(cards: &[Card], progress: &BTreeMap<String, Memory>, now: f64) -> Counts {
    let introduced_today = progress.values().filter(|m| m.reviews == 1 && now - m.last_review < 1.0).count();
    let unseen = cards.iter().filter(|c| !progress.contains_key(&c.id)).count();
    let due = progress.values().filter(|m| m.due <= now);
    let learning = due.clone().filter(|m| m.stability < 1.0).count();
    Counts {
        new: unseen.min(NEW_PER_DAY.saturating_sub(introduced_today)),
        learning,
        due: due.count() - learning,
    }
}

/// The next card: the most overdue reviewed card, else a new one (within the daily limit).
fn next_card(cards: &[Card], progress: &BTreeMap<String, Memory>, now: f64) -> Option<usize> {
    let due = cards
        .iter()
        .enumerate()
        .filter_map(|(i, c)| progress.get(&c.id).filter(|m| m.due <= now).map(|m| (i, m.due)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i);
    let introduced_today = progress.values().filter(|m| m.reviews == 1 && now - m.last_review < 1.0).count();
    due.or_else(|| {
        (introduced_today < NEW_PER_DAY)
            .then(|| cards.iter().position(|c| !progress.contains_key(&c.id)))
            .flatten()
    })
}

#[component]
pub fn CardsPage() -> impl IntoView {
    let lang = use_lang();
    // `None` until `deck.json` has arrived; `Err` if it could not be read.
    let deck = RwSignal::new(None::<Result<(), String>>);
    let cards = StoredValue::new(Vec::<Card>::new());
    leptos::task::spawn_local(async move {
        let got = browser::fetch_own(DECK_FILE)
            .await
            .and_then(|t| serde_json::from_str::<Vec<Card>>(&t).map_err(|e| e.to_string()))
            .map(with_rule_cards);
        match got {
            Ok(c) => {
                cards.set_value(c);
                deck.set(Some(Ok(())));
            }
            Err(e) => deck.set(Some(Err(e))),
        }
    });
    let progress = RwSignal::new(load());
    let shown = RwSignal::new(false);
    let current = Memo::new(move |_| {
        deck.track();
        cards.with_value(|c| next_card(c, &progress.get(), now_days()))
    });
    let count = Memo::new(move |_| {
        deck.track();
        let now = now_days();
        cards.with_value(|c| progress.with(|p| counts(c, p, now)))
    });
    let rate = move |rating: Rating| {
        let Some(i) = current.get_untracked() else { return };
        let id = cards.with_value(|c| c[i].id.clone());
        progress.update(|p| {
            let m = review(p.get(&id).copied(), rating, now_days(), 0.9);
            p.insert(id, m);
            save(p);
        });
        shown.set(false);
    };
    let keys = window_event_listener(leptos::ev::keydown, move |ev| {
        let target_is_field = ev
            .target()
            .and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::Element>(t).ok())
            .is_some_and(|e| matches!(e.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT"));
        if target_is_field {
            return;
        }
        match ev.key().as_str() {
            " " => {
                ev.prevent_default();
                shown.set(true);
            }
            "1" if shown.get_untracked() => rate(Rating::Again),
            "2" if shown.get_untracked() => rate(Rating::Hard),
            "3" if shown.get_untracked() => rate(Rating::Good),
            "4" if shown.get_untracked() => rate(Rating::Easy),
            _ => {}
        }
    });
    on_cleanup(move || keys.remove());
    let import = move |ev: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        let Some(file) = input.files().and_then(|f| f.get(0)) else { return };
        leptos::task::spawn_local(async move {
            if let Ok(text) = wasm_bindgen_futures::JsFuture::from(file.text()).await
                && let Some(Ok(p)) =
                    text.as_string().map(|s| serde_json::from_str::<BTreeMap<String, Memory>>(&s))
            {
                save(&p);
                progress.set(p);
            }
        });
    };
    fixed(view! {
        <p class="cards-meta">
            <span data-testid="cards-new">{move || count.get().new}</span> " " {tx(lang, Msg::CardsNew)} " · "
            <span data-testid="cards-learning">{move || count.get().learning}</span> " " {tx(lang, Msg::CardsLearning)} " · "
            <span data-testid="cards-due">{move || count.get().due}</span> " " {tx(lang, Msg::CardsDue)}
            " · " <span data-testid="cards-total">{move || { deck.track(); cards.with_value(|c| c.len()) }}</span> " cards · "
            <span data-testid="cards-reviewed">{move || progress.with(|p| p.len())}</span> " reviewed"
        </p>
        {move || match (deck.get(), current.get()) {
            (None, _) => fixed(view! { <p class="note" data-testid="cards-loading">{tx(lang, Msg::CardsLoading)}</p> }),
            (Some(Err(e)), _) => fixed(view! { <p class="error" data-testid="cards-error">{tx(lang, Msg::CardsLoadFailed)} " " {e}</p> }),
            (Some(Ok(())), None) => fixed(view! { <p data-testid="cards-done">{tx(lang, Msg::CardsDone)}</p> }),
            (Some(Ok(())), Some(i)) => {
                let card = cards.with_value(|c| c[i].clone());
                let (front_card, back_card) = (card.clone(), card.clone());
                fixed(view! {
                    <article class="card">
                        <div class="kind"><code>{format!("{:?}", card.kind)}</code></div>
                        <div class="front" data-testid="card-front" data-card=card.id.clone()>{move || front_card.front(lang.get()).to_owned()}</div>
                        {move || if shown.get() {
                            let back = back_card.clone();
                            fixed(view! {
                                <div class="back" data-testid="card-back">{move || back.back(lang.get()).to_owned()}</div>
                                <div class="ratings">
                                    <button data-testid="rate-again" on:click=click(move |_| rate(Rating::Again))>{tx(lang, Msg::Again)}</button>
                                    <button data-testid="rate-hard" on:click=click(move |_| rate(Rating::Hard))>{tx(lang, Msg::Hard)}</button>
                                    <button data-testid="rate-good" on:click=click(move |_| rate(Rating::Good))>{tx(lang, Msg::Good)}</button>
                                    <button data-testid="rate-easy" on:click=click(move |_| rate(Rating::Easy))>{tx(lang, Msg::Easy)}</button>
                                </div>
                            })
                        } else {
                            fixed(view! { <button class="primary" data-testid="card-show" on:click=click(move |_| shown.set(true))>{tx(lang, Msg::CardsShow)}</button> })
                        }}
                    </article>
                })
            }
        }}
        <p class="note">{tx(lang, Msg::CardsKeys)}</p>
        <div class="row">
            <button data-testid="cards-export" on:click=click(move |_| browser::download("triage-cards-progress.json", &serde_json::to_string_pretty(&progress.get_untracked()).unwrap_or_default()))>
                {tx(lang, Msg::CardsExport)}
            </button>
            <label class="file">{tx(lang, Msg::CardsImport)}
                <input type="file" accept="application/json" data-testid="cards-import" on:change=on_event(import)/>
            </label>
        </div>
    })
}
