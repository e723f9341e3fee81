//! `triage cards`: the core's flashcard deck, filtered by topic, as `triage.cards/v1` JSON or as
//! a TSV file Anki imports as it is (`triage_core::cards::anki`). Every card comes from
//! `triage_core::cards::deck`, the deck the site shows.

use crate::args::{CardsArgs, CardsFormat};
use std::process::ExitCode;
use triage_core::cards::{Card, Tag, anki, deck, export};
use triage_core::lang::Lang;

/// The tags asked for; an unknown one is a usage error naming the known ones.
pub fn parse_tags(names: &[String]) -> anyhow::Result<Vec<Tag>> {
    names
        .iter()
        .map(|n| {
            Tag::parse(n).map_or_else(
                || {
                    let known: Vec<&str> = Tag::ALL.iter().map(|t| t.as_str()).collect();
                    crate::output::usage(format!("unknown tag {n:?}: expected one of {}", known.join(", ")))
                },
                Ok,
            )
        })
        .collect()
}

/// The deck's cards with any of `tags` (all cards when none is given).
pub fn select(tags: &[Tag]) -> Vec<Card> {
    deck().into_iter().filter(|c| tags.is_empty() || tags.iter().any(|t| c.has_tag(*t))).collect()
}

/// What `triage cards` prints.
pub fn render(cards: &[Card], lang: Lang, format: CardsFormat) -> anyhow::Result<String> {
    Ok(match format {
        CardsFormat::Json => serde_json::to_string_pretty(&export(cards, lang))? + "\n",
        CardsFormat::Tsv => anki::tsv(cards, lang),
    })
}

/// Run `triage cards`.
pub fn run(args: &CardsArgs) -> anyhow::Result<ExitCode> {
    let tags = parse_tags(&args.tags)?;
    let cards = select(&tags);
    let out = render(&cards, args.lang.into(), args.format)?;
    match args.format {
        CardsFormat::Json => crate::output::json(&out)?,
        CardsFormat::Tsv => crate::output::text(&out)?,
    }
    Ok(ExitCode::SUCCESS)
}
