//! Progress as three small charts (plotters, as the site's other charts): retention and reviews
//! per day over the last 30 days, and how many graduated cards fall due on each of the next 30.

use super::{Shared, clock};
use crate::app::{effect, tx, use_lang};
use crate::fixed::{Erased, fixed};
use crate::i18n::{Msg, tf};
use crate::pages::chart;
use leptos::prelude::*;
use triage_cards::review::STATS_DAYS;

pub fn view(shared: Shared) -> Erased {
    let lang = use_lang();
    let stats = Memo::new(move |_| {
        shared.tick.track();
        shared.progress.with(|p| p.stats(clock()))
    });
    let (retention, reviews, forecast) = (
        NodeRef::<leptos::html::Canvas>::new(),
        NodeRef::<leptos::html::Canvas>::new(),
        NodeRef::<leptos::html::Canvas>::new(),
    );
    Effect::new(effect(move |_| {
        let s = stats.get();
        let l = lang.get();
        let days_ago = crate::i18n::t(l, Msg::CardsDaysAgo);
        if let Some(c) = retention.get() {
            // x: days before today (29 … 0), y: percent recalled; days without reviews are left out.
            let points: Vec<(f64, f64)> = s
                .retention_per_day
                .iter()
                .enumerate()
                .filter_map(|(i, r)| r.map(|r| ((STATS_DAYS - 1 - i) as f64, 100.0 * r)))
                .collect();
            chart::line(&c, &points, days_ago);
        }
        if let Some(c) = reviews.get() {
            let items = day_items(&s.reviews_per_day, |i| (i as i64 + 1 - STATS_DAYS as i64).to_string());
            chart::day_bars(&c, &items, crate::i18n::t(l, Msg::CardsReviewsAxis));
        }
        if let Some(c) = forecast.get() {
            let items = day_items(&s.forecast, |i| format!("+{i}"));
            chart::day_bars(&c, &items, crate::i18n::t(l, Msg::CardsDueAxis));
        }
    }));
    let figure = move |f: fn(&triage_cards::review::Stats) -> String| move || stats.with(f);
    fixed(view! {
        <p class="cards-meta">
            {tx(lang, Msg::CardsStatsReviews)} " " <b data-testid="stats-reviews">{figure(|s| s.reviews.to_string())}</b> " · "
            {tx(lang, Msg::CardsStatsToday)} " " <b data-testid="stats-today">{figure(|s| s.reviews_per_day.last().copied().unwrap_or(0).to_string())}</b> " · "
            {tx(lang, Msg::CardsStatsRetention)} " " <b data-testid="stats-retention">{figure(|s| s.retention.map_or_else(|| "–".to_owned(), |r| format!("{:.0}%", 100.0 * r)))}</b> " · "
            {tx(lang, Msg::CardsStatsTomorrow)} " " <b data-testid="stats-tomorrow">{figure(|s| s.forecast.get(1).copied().unwrap_or(0).to_string())}</b>
        </p>
        <p class="note">{move || tf(lang.get(), Msg::CardsRetentionDef, &[])}</p>
        <h3>{tx(lang, Msg::CardsChartRetention)}</h3>
        <canvas node_ref=retention width="760" height="200" data-testid="chart-retention"></canvas>
        <h3>{tx(lang, Msg::CardsChartReviews)}</h3>
        <canvas node_ref=reviews width="760" height="200" data-testid="chart-reviews"></canvas>
        <h3>{tx(lang, Msg::CardsChartForecast)}</h3>
        <canvas node_ref=forecast width="760" height="200" data-testid="chart-forecast"></canvas>
    })
}

/// Bars for per-day counts, labelled every fifth day.
fn day_items(values: &[u32], label: impl Fn(usize) -> String) -> Vec<(String, f64)> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            (if i % 5 == 0 || i + 1 == values.len() { label(i) } else { String::new() }, f64::from(*v))
        })
        .collect()
}
