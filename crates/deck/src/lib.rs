//! The interview deck, built from the same sources the analyzer and the estimator use, so a card
//! never teaches something the tool does not do:
//!
//! - [`concept`] — every rule's docs (what it means, why it happens, what to change, what to
//!   check next), every definition and how the tools differ, the formulas, the pitfalls and the
//!   article's interview questions;
//! - [`log`] — short real-format excerpts (curated from the incident corpus, embedded with
//!   `include_str!`): the answer is what the [`Analyzer`](triage_analyze::Analyzer) says of
//!   them — class, rule and the evidence lines it cites — computed when the deck is built;
//! - [`numeric`] — questions answered by typing a number, generated from a fixed parameter
//!   grid by the KV estimator ([`triage_kv::request::build_report_in`], what `triage kv`
//!   runs) and the histogram code ([`triage_base::stats::buckets`]), with a stated tolerance;
//!   the back is the estimator's own formula lines;
//! - [`anatomy`] — what each field of each engine's log line means.
//!
//! The card and its contracts are `triage-cards`'s. Building the deck is pure: no files, no
//! clock. The site's page never builds it: `cargo xtask site` writes it to `deck.json`.

#![deny(missing_docs)]

pub mod anatomy;
pub mod concept;
pub mod log;
pub mod numeric;

use triage_cards::Card;

/// The whole deck, in a stable order: concepts, log excerpts, numbers, line anatomy.
pub fn deck() -> Vec<Card> {
    let mut cards = concept::cards();
    cards.extend(log::cards());
    cards.extend(numeric::cards());
    cards.extend(anatomy::cards());
    cards
}

#[cfg(test)]
mod tests {

    use super::*;
    use triage_base::lang::has_cjk;
    use triage_cards::{CardKind, Lang, Tag, anki, export, numbers_in};

    #[test]
    fn deck_has_every_kind_and_enough_cards_with_unique_ids() {
        use triage_analyze::rules;
        use triage_base::defs;
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

    #[test]
    fn every_anki_line_has_three_fields_and_no_raw_tab_or_newline_inside() {
        let d = deck();
        for lang in Lang::ALL {
            let t = anki::tsv(&d, lang);
            assert!(t.starts_with(anki::HEADER));
            let lines: Vec<&str> = t.lines().skip(3).collect();
            assert_eq!(lines.len(), d.len());
            for (line, c) in lines.iter().zip(&d) {
                let cols: Vec<&str> = line.split('\t').collect();
                assert_eq!(cols.len(), 3, "{}", c.id);
                assert!(!cols[0].is_empty() && !cols[1].is_empty(), "{}", c.id);
                assert!(!cols[0].starts_with('"') && !cols[1].starts_with('"'), "{}", c.id);
                assert!(cols[2].split(' ').all(|t| !t.is_empty()), "{}", c.id);
                assert!(cols[2].ends_with(c.kind.as_str()));
                assert!(!line.contains('\r'));
            }
        }
    }
}
