//! Every card, searchable: the topic and kind filters above apply, the search box matches id,
//! question and answer in both languages; each row says where the card is in its cycle and
//! suspends or restores it.

use super::{Shared, clock};
use crate::app::{click, set_text, tx, use_lang};
use crate::fixed::{Erased, fixed};
use crate::i18n::{Msg, tf};
use leptos::prelude::*;
use triage_cards::Card;
use triage_cards::review::{Phase, interval_text};

/// Rows drawn at most (the rest are counted).
const SHOWN: usize = 100;

/// Whether `card` matches every word of `query` (case-insensitive, either language).
pub fn matches(card: &Card, query: &str) -> bool {
    let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
    if words.is_empty() {
        return true;
    }
    let hay = [&card.id, &card.front_en, &card.back_en, &card.front_zh, &card.back_zh];
    words.iter().all(|w| hay.iter().any(|h| h.to_lowercase().contains(w.as_str())))
}

pub fn view(shared: Shared) -> Erased {
    let lang = use_lang();
    let query = RwSignal::new(String::new());
    let hits = Memo::new(move |_| {
        let filter = shared.filter.get();
        let q = query.get();
        shared.deck.with_value(|d| {
            d.cards
                .iter()
                .enumerate()
                .filter(|(_, c)| filter.admits(c) && matches(c, &q))
                .map(|(i, _)| i)
                .collect::<Vec<_>>()
        })
    });
    fixed(view! {
        <div class="row">
            <input type="text" data-testid="browse-search" placeholder=tx(lang, Msg::CardsSearch) on:input=set_text(query)/>
        </div>
        <p class="note" data-testid="browse-count">{move || {
            let n = hits.with(Vec::len);
            tf(lang.get(), Msg::CardsFound, &[("n", &n.to_string()), ("shown", &n.min(SHOWN).to_string())])
        }}</p>
        <table class="browse">
            <tbody>
                {move || {
                    shared.progress.track();
                    let now = clock();
                    hits.get().into_iter().take(SHOWN).map(|i| row(shared, i, now)).collect_view()
                }}
            </tbody>
        </table>
    })
}

fn row(shared: Shared, i: usize, now: triage_cards::review::Clock) -> Erased {
    let lang = use_lang();
    let card = shared.deck.with_value(|d| d.cards[i].clone());
    let id = card.id.clone();
    let state = shared.progress.with_untracked(|p| p.cards.get(&id).copied());
    let suspended = shared.progress.with_untracked(|p| p.suspended.contains(&id));
    let phase = state.map_or(Phase::New, |s| s.phase);
    let when = state.filter(|s| s.phase != Phase::New).map(|s| {
        let l = lang.get_untracked();
        if s.due_ms <= now.now_ms {
            crate::i18n::t(l, Msg::CardsDue).to_owned()
        } else {
            interval_text(s.due_ms - now.now_ms, l)
        }
    });
    let toggle = id.clone();
    let front = card.clone();
    fixed(view! {
        <tr data-testid="browse-row" data-card=id.clone() data-phase=format!("{phase:?}").to_lowercase() data-suspended=suspended.to_string()>
            <td><code>{card.kind.as_str()}</code></td>
            <td>{move || triage_base::safe::cut(front.front(lang.get()), 140)}</td>
            <td class="note">{format!("{phase:?}").to_lowercase()} {when.map(|w| format!(" · {w}"))}</td>
            <td>
                <button data-testid="browse-suspend" on:click=click(move |_| shared.update(|p| p.suspend(&toggle, !suspended)))>
                    {tx(lang, if suspended { Msg::CardsUnsuspend } else { Msg::CardsSuspend })}
                </button>
            </td>
        </tr>
    })
}
