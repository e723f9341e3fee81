//! Interview flashcards: the deck, and (feature `review`) reviewing it with FSRS.
//!
//! Cards are generated from the same sources the analyzer and the estimator use, so a card never
//! teaches something the tool does not do:
//!
//! - [`concept`] — every rule's docs (what it means, why it happens, what to change, what to
//!   check next), every definition and how the tools differ, the formulas, the pitfalls and the
//!   article's interview questions;
//! - [`log`] — short real-format excerpts (curated from the incident corpus, embedded with
//!   `include_str!`): the answer is what the [`Analyzer`](crate::analyze::Analyzer) says of
//!   them — class, rule and the evidence lines it cites — computed when the deck is built;
//! - [`numeric`] — questions answered by typing a number, generated from a fixed parameter
//!   grid by the KV estimator ([`crate::kv::request::build_report_in`], what `triage kv`
//!   runs) and the histogram code ([`crate::stats::buckets`]), with a stated tolerance; the
//!   back is the estimator's own formula lines;
//! - [`anatomy`] — what each field of each engine's log line means.
//!
//! Every card is written in English and Chinese ([`Lang`]); numbers, flags, rule ids and quoted
//! lines are the same in both. [`export`] is the `triage.cards/v1` contract and [`anki::tsv`] a
//! file Anki imports as it is. Building the deck is pure: no files, no clock.

pub mod anatomy;
pub mod anki;
pub mod concept;
#[cfg(feature = "full-deck")]
pub mod log;
#[cfg(feature = "full-deck")]
pub mod numeric;
#[cfg(feature = "review")]
pub mod review;

use serde::{Deserialize, Serialize};

/// A language of the deck (the core's one language type, re-exported here).
pub use crate::lang::Lang;

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

/// A card of `kind` with its texts as (English, Chinese) pairs.
pub(crate) fn card(
    id: String,
    kind: CardKind,
    tags: &[Tag],
    front: (String, String),
    back: (String, String),
) -> Card {
    let mut tags = tags.to_vec();
    crate::sort::sort(&mut tags);
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

/// The whole deck, in a stable order: concepts, log excerpts, numbers, line anatomy.
pub fn deck() -> Vec<Card> {
    let mut cards = concept::cards();
    #[cfg(feature = "full-deck")]
    {
        cards.extend(log::cards());
        cards.extend(numeric::cards());
    }
    cards.extend(anatomy::cards());
    cards
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
    use crate::lang::has_cjk;

    #[cfg(feature = "full-deck")]
    #[test]
    fn deck_has_every_kind_and_enough_cards_with_unique_ids() {
        use crate::analyze::rules;
        use crate::defs;
        let d = deck();
        assert!(d.len() >= 200, "{} cards", d.len());
        for kind in CardKind::ALL {
            let n = d.iter().filter(|c| c.kind == kind).count();
            assert!(n >= 10, "{kind:?}: {n}");
        }
        for tag in Tag::ALL {
            assert!(d.iter().filter(|c| c.has_tag(tag)).count() >= 5, "{tag}");
            assert_eq!(Tag::parse(tag.as_str()), Some(tag));
        }
        assert_eq!(Tag::parse("Client-Config"), Some(Tag::ClientConfig));
        let mut ids: Vec<&str> = d.iter().map(|c| c.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), d.len(), "duplicate ids");
        for r in rules::docs() {
            for part in ["", ":why", ":fix", ":check"] {
                let id = format!("rule:{}{part}", r.id);
                assert!(d.iter().any(|c| c.id == id), "{id}");
            }
        }
        for def in defs::ALL {
            let id = format!("definition:{}", def.name.to_ascii_lowercase());
            assert!(d.iter().any(|c| c.id == id), "{id}");
        }
        // The ids of the first deck stay (progress is stored under them).
        for id in ["interview:kv-formula", "anatomy:vllm-stats", "definition:ttft", "rule:kv-leak"] {
            assert!(d.iter().any(|c| c.id == id), "{id}");
        }
        // The same deck every time.
        assert_eq!(deck(), d);
    }

    /// The parity test: every card in both languages — both sides non-empty, the Chinese side in
    /// Chinese and not a copy of the English one, the same numbers on both sides.
    #[test]
    fn every_card_is_in_both_languages_with_the_same_numbers() {
        let mut differ = Vec::new();
        for c in deck() {
            for (side, en, zh) in [("front", &c.front_en, &c.front_zh), ("back", &c.back_en, &c.back_zh)] {
                assert!(!en.trim().is_empty() && !zh.trim().is_empty(), "{} {side}: empty", c.id);
                assert!(has_cjk(zh), "{} {side}: zh is not Chinese: {zh}", c.id);
                assert_ne!(en, zh, "{} {side}: zh is the English text", c.id);
                let (mut a, mut b) = (numbers_in(en), numbers_in(zh));
                a.sort_unstable();
                b.sort_unstable();
                if a != b {
                    differ.push(format!(
                        "{} {side}: numbers differ: {a:?} vs {b:?}\n  en: {en}\n  zh: {zh}",
                        c.id
                    ));
                }
            }
            assert!(!c.tags.is_empty(), "{}: no tag", c.id);
            assert!(c.tags.windows(2).all(|w| w[0] < w[1]), "{}: tags not sorted", c.id);
            assert_eq!(c.answer.is_some(), c.kind == CardKind::Numeric, "{}", c.id);
            assert_eq!(c.tolerance.is_some(), c.kind == CardKind::Numeric, "{}", c.id);
        }
        assert!(differ.is_empty(), "{} sides differ:\n{}", differ.len(), differ.join("\n"));
    }

    #[test]
    fn numbers_are_read_as_written() {
        assert_eq!(numbers_in("131,072 B at 54.60x, 3 s"), ["131072", "54.60", "3"]);
        assert_eq!(numbers_in("1) a, 2) b."), ["1", "2"]);
        assert_eq!(numbers_in("「47,552」，共 3 个"), ["47552", "3"]);
        assert_eq!(numbers_in("E2E p99 fp8 at 7B"), ["7"]);
    }

    #[cfg(feature = "full-deck")]
    #[test]
    fn export_is_the_contract() {
        let d = deck();
        let json = serde_json::to_string(&export(&d, Lang::Zh)).unwrap();
        assert!(json.starts_with(r#"{"schema":"triage.cards/v1","cards":[{"id":""#), "{json:.80}");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let cards = v["cards"].as_array().unwrap();
        assert_eq!(cards.len(), d.len());
        for c in cards {
            let keys: Vec<&str> = c.as_object().unwrap().keys().map(String::as_str).collect();
            let numeric = c["kind"] == "numeric";
            let mut want = vec!["back", "front", "id", "kind", "tags"];
            if numeric {
                want.extend(["answer", "tolerance"]);
            }
            let (mut keys, mut want) = (keys, want);
            keys.sort_unstable();
            want.sort_unstable();
            assert_eq!(keys, want, "{}", c["id"]);
        }
        let typed = d.iter().find(|c| c.kind == CardKind::Numeric).unwrap();
        let a = typed.answer.unwrap();
        assert_eq!(typed.check(a), Some(true));
        assert_eq!(typed.check(a + typed.tolerance.unwrap() + a.abs() * 0.01 + 1.0), Some(false));
        assert_eq!(d[0].check(1.0), None);
    }
}
