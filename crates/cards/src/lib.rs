//! Interview flashcards: the card, the `triage.cards/v1` contract, the Anki export and (feature
//! `review`) reviewing a deck with FSRS.
//!
//! The deck itself is built by `triage-deck` from the same sources the analyzer and the
//! estimator use; this crate holds what a page that reviews cards needs, and links no rule.
//! Every card is written in English and Chinese ([`Lang`]); numbers, flags, rule ids and quoted
//! lines are the same in both. [`export`] is the `triage.cards/v1` contract and [`anki::tsv`] a
//! file Anki imports as it is.

#![deny(missing_docs)]

pub mod anki;
#[cfg(feature = "review")]
pub mod review;

use serde::{Deserialize, Serialize};

/// A language of the deck (the foundation's one language type, re-exported here).
pub use triage_base::lang::Lang;

/// The JSON contract `triage cards --format json` prints.
pub const SCHEMA: &str = "triage.cards/v1";

/// What kind of question a card asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CardKind {
    /// A fact, a definition, a formula, a pitfall or an interview question.
    Concept,
    /// A log excerpt: which failure class, which root cause.
    Log,
    /// Answered by typing a number, checked with [`Card::tolerance`].
    Numeric,
    /// What the fields of an engine's log line mean.
    Anatomy,
}

impl CardKind {
    /// Every kind, in the order the deck lists them.
    pub const ALL: [CardKind; 4] = [CardKind::Concept, CardKind::Log, CardKind::Numeric, CardKind::Anatomy];

    /// The serialised name (`concept`, `log`, `numeric`, `anatomy`).
    pub fn as_str(self) -> &'static str {
        match self {
            CardKind::Concept => "concept",
            CardKind::Log => "log",
            CardKind::Numeric => "numeric",
            CardKind::Anatomy => "anatomy",
        }
    }
}

/// A topic. Printed as one word with no spaces (Anki's tags cannot hold one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tag {
    /// Time to first token.
    Ttft,
    /// Time between tokens.
    Tbt,
    /// Out of memory.
    Oom,
    /// Throughput at zero.
    Throughput,
    /// The KV cache.
    Kv,
    /// The GPU itself.
    Gpu,
    /// Client settings.
    ClientConfig,
    /// Metrics and how to read them.
    Metrics,
    /// The inference engines.
    Engines,
}

impl Tag {
    /// Every tag, in the order printed.
    pub const ALL: [Tag; 9] = [
        Tag::Ttft,
        Tag::Tbt,
        Tag::Oom,
        Tag::Throughput,
        Tag::Kv,
        Tag::Gpu,
        Tag::ClientConfig,
        Tag::Metrics,
        Tag::Engines,
    ];

    /// `ttft`, `tbt`, `oom`, `throughput`, `kv`, `gpu`, `client_config`, `metrics`, `engines`.
    pub fn as_str(self) -> &'static str {
        match self {
            Tag::Ttft => "ttft",
            Tag::Tbt => "tbt",
            Tag::Oom => "oom",
            Tag::Throughput => "throughput",
            Tag::Kv => "kv",
            Tag::Gpu => "gpu",
            Tag::ClientConfig => "client_config",
            Tag::Metrics => "metrics",
            Tag::Engines => "engines",
        }
    }

    /// A tag by name, case-insensitive; `-` and spaces count as `_` (`client-config`).
    pub fn parse(s: &str) -> Option<Tag> {
        let norm = s.trim().to_ascii_lowercase().replace(['-', ' '], "_");
        Tag::ALL.into_iter().find(|t| t.as_str() == norm)
    }

    /// What the topic is, for people.
    pub fn label(self, lang: Lang) -> &'static str {
        let (en, zh) = match self {
            Tag::Ttft => ("TTFT", "首 token 延迟（TTFT）"),
            Tag::Tbt => ("TBT / inter-token latency", "token 间延迟（TBT）"),
            Tag::Oom => ("OOM", "显存溢出（OOM）"),
            Tag::Throughput => ("throughput", "吞吐"),
            Tag::Kv => ("KV cache", "KV 缓存"),
            Tag::Gpu => ("GPU", "GPU"),
            Tag::ClientConfig => ("client config", "客户端配置"),
            Tag::Metrics => ("metrics definitions", "指标定义"),
            Tag::Engines => ("engines", "推理引擎"),
        };
        lang.pick(en, zh)
    }
}

impl std::fmt::Display for Tag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One card, in both languages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Card {
    /// Stable id (progress is stored under it), e.g. `rule:kv-leak:why`.
    pub id: String,
    /// What kind of card it is.
    pub kind: CardKind,
    /// Topics, sorted, at least one.
    pub tags: Vec<Tag>,
    /// The question, in English.
    pub front_en: String,
    /// The answer, in English.
    pub back_en: String,
    /// The question, in Chinese.
    pub front_zh: String,
    /// The answer, in Chinese.
    pub back_zh: String,
    /// Numeric cards: the number to type, in the unit the front names.
    pub answer: Option<f64>,
    /// Numeric cards: a typed number within this distance of [`Card::answer`] is right.
    pub tolerance: Option<f64>,
}

impl Card {
    /// The question in `lang`.
    pub fn front(&self, lang: Lang) -> &str {
        match lang {
            Lang::En => &self.front_en,
            Lang::Zh => &self.front_zh,
        }
    }

    /// The answer in `lang`.
    pub fn back(&self, lang: Lang) -> &str {
        match lang {
            Lang::En => &self.back_en,
            Lang::Zh => &self.back_zh,
        }
    }

    /// Whether the card carries `tag`.
    pub fn has_tag(&self, tag: Tag) -> bool {
        self.tags.contains(&tag)
    }

    /// For a numeric card, whether `typed` is within the tolerance of the answer; `None` for the
    /// other kinds.
    pub fn check(&self, typed: f64) -> Option<bool> {
        let answer = self.answer?;
        let tolerance = self.tolerance.unwrap_or(0.0);
        Some(typed.is_finite() && (typed - answer).abs() <= tolerance + answer.abs() * 1e-12)
    }
}

/// A card of `kind` with its texts as (English, Chinese) pairs (tags sorted, duplicates dropped).
pub fn card(
    id: String,
    kind: CardKind,
    tags: &[Tag],
    front: (String, String),
    back: (String, String),
) -> Card {
    let mut tags = tags.to_vec();
    triage_base::sort::sort(&mut tags);
    tags.dedup();
    Card {
        id,
        kind,
        tags,
        front_en: front.0,
        back_en: back.0,
        front_zh: front.1,
        back_zh: back.1,
        answer: None,
        tolerance: None,
    }
}

/// One card of the `triage.cards/v1` contract, in one language.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CardOut<'a> {
    /// The card's stable id.
    pub id: &'a str,
    /// What kind of card it is.
    pub kind: CardKind,
    /// Its topics.
    pub tags: &'a [Tag],
    /// The question.
    pub front: &'a str,
    /// The answer.
    pub back: &'a str,
    /// Numeric cards: the number to type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<f64>,
    /// Numeric cards: how far a typed number may be from the answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
}

/// The `triage.cards/v1` document: `{"schema","cards":[{"id","kind","tags","front","back",
/// "answer"?,"tolerance"?}]}` (`answer` and `tolerance` only on numeric cards).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeckOut<'a> {
    /// Always `triage.cards/v1`.
    pub schema: &'static str,
    /// The cards, in deck order.
    pub cards: Vec<CardOut<'a>>,
}

/// `cards` as the `triage.cards/v1` document in `lang`.
pub fn export<'a>(cards: impl IntoIterator<Item = &'a Card>, lang: Lang) -> DeckOut<'a> {
    DeckOut {
        schema: SCHEMA,
        cards: cards
            .into_iter()
            .map(|c| CardOut {
                id: &c.id,
                kind: c.kind,
                tags: &c.tags,
                front: c.front(lang),
                back: c.back(lang),
                answer: c.answer,
                tolerance: c.tolerance,
            })
            .collect(),
    }
}

/// Numbers as they are written in a card: digits with `,` grouping and one decimal point.
/// Digits inside a word (`p99`, `fp8`, `E2E`) name something and are not numbers. Tests compare
/// the two languages' lists.
pub fn numbers_in(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let b: Vec<char> = s.chars().collect();
    for (i, &c) in b.iter().enumerate() {
        let joins = (c == ',' || c == '.')
            && !cur.is_empty()
            && b.get(i + 1).is_some_and(|n| n.is_ascii_digit())
            && (c == '.' || b.get(i + 1..i + 4).is_some_and(|w| w.iter().all(|n| n.is_ascii_digit())));
        if c.is_ascii_digit() {
            if cur.is_empty() {
                in_word = i > 0 && (b[i - 1].is_ascii_alphabetic() || b[i - 1] == '_');
            }
            cur.push(c);
        } else if joins {
            if c == '.' {
                cur.push('.');
            }
        } else if !cur.is_empty() {
            let n = std::mem::take(&mut cur);
            if !in_word {
                out.push(n);
            }
        }
    }
    if !cur.is_empty() && !in_word {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_as_written() {
        assert_eq!(numbers_in("131,072 B at 54.60x, 3 s"), ["131072", "54.60", "3"]);
        assert_eq!(numbers_in("1) a, 2) b."), ["1", "2"]);
        assert_eq!(numbers_in("「47,552」，共 3 个"), ["47552", "3"]);
        assert_eq!(numbers_in("E2E p99 fp8 at 7B"), ["7"]);
    }
}
