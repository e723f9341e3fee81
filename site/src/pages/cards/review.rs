//! The review session: the next card, its answer, four ratings, undo, bury and suspend, all by
//! keyboard (space, 1–4, u, b) as well as by click. Numeric cards take a typed number, checked
//! with the card's stated tolerance before the answer shows.

use super::{Shared, clock};
use crate::app::{click, effect, on_event, tx, use_lang};
use crate::fixed::{Erased, fixed};
use crate::i18n::{Msg, tf};
use leptos::prelude::*;
use triage_cards::review::{Progress, Rating, interval_text};

/// A typed answer as a number: thousands separators, spaces and a trailing unit-less `%` are
/// tolerated (`32,768`, `1 234.5`, `1.2e4`).
pub fn parse_typed(s: &str) -> Option<f64> {
    let clean: String = s.chars().filter(|c| !matches!(c, ',' | '_' | ' ' | '\u{a0}' | '，')).collect();
    clean.trim_end_matches('%').parse::<f64>().ok().filter(|v| v.is_finite())
}

/// A number as the verdict prints it: up to four decimals, no trailing zeros.
fn number(v: f64) -> String {
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_owned()
}

pub fn view(shared: Shared) -> Erased {
    let lang = use_lang();
    let shown = RwSignal::new(false);
    // The typed answer and whether it was right (numeric cards).
    let typed = RwSignal::new(None::<(String, bool)>);
    let queue = Memo::new(move |_| {
        shared.tick.track();
        let filter = shared.filter.get();
        shared.progress.with(|p| shared.deck.with_value(|d| p.queue(&d.cards, &d.order, &filter, clock())))
    });
    // The card on screen stays there until it is answered, buried, suspended or leaves play
    // (a filter): a learning card falling due meanwhile (the tick) waits its turn instead of
    // replacing the card being read or the number being typed.
    let pinned = RwSignal::new(None::<usize>);
    let current = Memo::new(move |_| {
        let next = queue.get().next;
        let filter = shared.filter.get();
        let stays = |i: usize| {
            shared.progress.with(|p| {
                shared.deck.with_value(|d| d.cards.get(i).is_some_and(|c| p.takes_part(c, &filter, clock())))
            })
        };
        pinned.get().filter(|&i| stays(i)).or(next)
    });
    let current_id = move || {
        current.get_untracked().and_then(|i| shared.deck.with_value(|d| d.cards.get(i).map(|c| c.id.clone())))
    };
    let reset = move || {
        shown.set(false);
        typed.set(None);
    };
    // An import replaces the progress: the card on screen and its answer go.
    Effect::new(effect(move |prev: Option<()>| {
        shared.imported.track();
        if prev.is_some() {
            pinned.set(None);
            reset();
        }
    }));
    // Another card on screen starts unanswered.
    Effect::new(effect(move |_| {
        let c = current.get();
        if pinned.get_untracked() != c {
            pinned.set(c);
            reset();
        }
    }));
    // Do `f` to the card on screen (rate, bury, suspend), then let the queue pick the next one.
    let act = move |f: &dyn Fn(&mut Progress, &str)| {
        let Some(id) = current_id() else { return };
        pinned.set(None);
        shared.update(|p| f(p, &id));
        reset();
    };
    let rate = move |r: Rating| {
        if shown.get_untracked() {
            let ok = typed.get_untracked().map(|t| t.1);
            act(&|p, id| p.rate(id, r, ok, clock()));
        }
    };
    // Undo shows the card it gave back, whatever else is due.
    let undo = move || {
        let mut back = None;
        shared.update(|p| back = p.undo());
        let at = back.and_then(|id| shared.deck.with_value(|d| d.cards.iter().position(|c| c.id == id)));
        if at.is_some() {
            pinned.set(at);
        }
        reset();
    };
    let bury = move || act(&|p, id| p.bury(id, clock()));
    let suspend = move || act(&|p, id| p.suspend(id, true));
    let keys = window_event_listener(leptos::ev::keydown, move |ev| {
        if ev.ctrl_key() || ev.meta_key() || ev.alt_key() {
            return;
        }
        let target = ev.target().and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlElement>(t).ok());
        let in_field =
            target.as_ref().is_some_and(|e| matches!(e.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT"));
        // A numeric card's answer box has the focus: Esc leaves it, and u and b still undo and
        // bury while nothing is typed in it; every other key is typing.
        let answer_box = target
            .filter(|e| e.get_attribute("data-testid").as_deref() == Some("card-answer"))
            .and_then(|e| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlInputElement>(e).ok());
        match &answer_box {
            Some(input) => match ev.key().as_str() {
                "Escape" => {
                    let _ = input.blur();
                    return;
                }
                "u" | "U" | "b" | "B" if input.value().is_empty() => {}
                _ => return,
            },
            None if in_field => return,
            None => {}
        }
        // A handled key is not also typed: the next card's answer box takes the focus while the
        // key is still down, and would receive the "3" that rated the card before it.
        match ev.key().as_str() {
            " " if current.get_untracked().is_some() => {
                ev.prevent_default();
                shown.set(true);
            }
            "u" | "U" => {
                ev.prevent_default();
                undo();
            }
            "b" | "B" => {
                ev.prevent_default();
                bury();
            }
            k => {
                if let Some(r) = Rating::from_key(k) {
                    ev.prevent_default();
                    rate(r);
                }
            }
        }
    });
    on_cleanup(move || keys.remove());
    let new_per_day = on_event(move |ev| {
        if let Ok(n) = event_target_value(&ev).trim().parse::<u32>()
            && (1..=10_000).contains(&n)
        {
            shared.update(|p| p.settings.new_per_day = n);
        } else {
            // Refused: the box shows the number in force again.
            let input: web_sys::HtmlInputElement = event_target(&ev);
            input.set_value(&shared.progress.with_untracked(|p| p.settings.new_per_day.to_string()));
        }
    });
    let count = move |f: fn(&triage_cards::review::Counts) -> usize| move || f(&queue.get().counts);
    fixed(view! {
        <p class="cards-meta">
            <span data-testid="cards-new">{count(|c| c.new)}</span> " " {tx(lang, Msg::CardsNew)} " · "
            <span data-testid="cards-learning">{count(|c| c.learning)}</span> " " {tx(lang, Msg::CardsLearning)} " · "
            <span data-testid="cards-due">{count(|c| c.due)}</span> " " {tx(lang, Msg::CardsDue)}
            " · " <span data-testid="cards-total">{move || shared.deck.with_value(|d| d.cards.len())}</span> " " {tx(lang, Msg::CardsCards)} " · "
            <span data-testid="cards-reviewed">{move || shared.progress.with(|p| p.cards.len())}</span> " " {tx(lang, Msg::CardsReviewed)}
        </p>
        {move || match current.get() {
            None => fixed(view! { <p data-testid="cards-done">{tx(lang, Msg::CardsDone)}</p> }),
            Some(i) => card_view(shared, i, shown, typed, rate),
        }}
        <div class="row">
            <button data-testid="cards-undo" disabled=move || { shared.progress.track(); !shared.progress.with_untracked(|p| p.can_undo()) } on:click=click(move |_| undo())>{tx(lang, Msg::CardsUndo)}</button>
            <button data-testid="card-bury" disabled=move || current.get().is_none() on:click=click(move |_| bury())>{tx(lang, Msg::CardsBury)}</button>
            <button data-testid="card-suspend" disabled=move || current.get().is_none() on:click=click(move |_| suspend())>{tx(lang, Msg::CardsSuspend)}</button>
            <label class="note">{tx(lang, Msg::CardsNewPerDay)} " "
                <input type="number" min="1" max="10000" style="width: 6em" data-testid="cards-new-per-day"
                    prop:value=move || shared.progress.with(|p| p.settings.new_per_day.to_string()) on:change=new_per_day/>
            </label>
        </div>
        <p class="note">{tx(lang, Msg::CardsKeys)}</p>
    })
}

fn card_view(
    shared: Shared,
    i: usize,
    shown: RwSignal<bool>,
    typed: RwSignal<Option<(String, bool)>>,
    rate: impl Fn(Rating) + Copy + Send + Sync + 'static,
) -> Erased {
    let lang = use_lang();
    let card = shared.deck.with_value(|d| d.cards[i].clone());
    let id = card.id.clone();
    let numeric = card.answer.is_some();
    let tags = card.tags.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(" · ");
    let answer_box = NodeRef::<leptos::html::Input>::new();
    answer_box.on_load(|el| {
        let _ = el.focus();
    });
    let checked = card.clone();
    let on_enter: Box<dyn FnMut(web_sys::KeyboardEvent)> = Box::new(move |ev: web_sys::KeyboardEvent| {
        if ev.key() != "Enter" {
            return;
        }
        ev.prevent_default();
        let Some(input) = answer_box.get_untracked() else { return };
        let text = input.value();
        let ok = parse_typed(&text).and_then(|v| checked.check(v)).unwrap_or(false);
        typed.set(Some((text, ok)));
        shown.set(true);
        let _ = input.blur();
    });
    let back_card = card.clone();
    let front_card = card.clone();
    fixed(view! {
        <article class="card">
            <div class="kind"><code data-testid="card-kind">{card.kind.as_str()}</code> " · " {tags}</div>
            <div class="front" data-testid="card-front" data-card=id.clone() data-kind=card.kind.as_str()>{move || front_card.front(lang.get()).to_owned()}</div>
            {numeric.then(|| fixed(view! {
                <input type="text" inputmode="decimal" autocomplete="off" class="answer" data-testid="card-answer" node_ref=answer_box
                    placeholder=tx(lang, Msg::CardsTypeAnswer) disabled=move || shown.get() on:keydown=on_enter/>
            }))}
            {move || if shown.get() {
                let back = back_card.clone();
                let verdict = typed.get().map(|(text, ok)| {
                    let args = [
                        ("typed", text.trim().to_owned()),
                        ("answer", back.answer.map(number).unwrap_or_default()),
                        ("tolerance", back.tolerance.map(number).unwrap_or_else(|| "0".to_owned())),
                    ];
                    let args: Vec<(&str, &str)> = args.iter().map(|(k, v)| (*k, v.as_str())).collect();
                    let text = tf(lang.get(), if ok { Msg::CardsRight } else { Msg::CardsWrong }, &args);
                    fixed(view! { <p class=if ok { "ok" } else { "error" } data-testid="card-verdict" data-correct=ok.to_string()>{text}</p> })
                });
                let preview = shared.progress.with_untracked(|p| p.preview(&back.id, clock()));
                let button = move |r: Rating, m: Msg, test: &'static str, after: i64| {
                    fixed(view! {
                        <button data-testid=test on:click=click(move |_| rate(r))>{tx(lang, m)} <span class="note">" · " {move || interval_text(after, lang.get())}</span></button>
                    })
                };
                fixed(view! {
                    {verdict}
                    <div class="back" data-testid="card-back">{move || back.back(lang.get()).to_owned()}</div>
                    <div class="ratings">
                        {button(Rating::Again, Msg::Again, "rate-again", preview[0])}
                        {button(Rating::Hard, Msg::Hard, "rate-hard", preview[1])}
                        {button(Rating::Good, Msg::Good, "rate-good", preview[2])}
                        {button(Rating::Easy, Msg::Easy, "rate-easy", preview[3])}
                    </div>
                })
            } else {
                fixed(view! { <button class="primary" data-testid="card-show" on:click=click(move |_| shown.set(true))>{tx(lang, Msg::CardsShow)}</button> })
            }}
        </article>
    })
}
