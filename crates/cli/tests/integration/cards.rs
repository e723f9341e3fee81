//! `triage cards` end to end: the `triage.cards/v1` JSON contract, the Anki TSV (header, three
//! columns, no raw tab or newline inside a field), `--tag` filtering, Chinese output, usage
//! errors, and numeric cards whose answers are what `triage kv --format json` prints.

use serde_json::Value;
use std::process::Output;
use triage_core::cards::numeric::kv_questions;

use crate::util::triage;

fn run(args: &[&str]) -> Output {
    triage().args(args).output().expect("run triage")
}

fn stdout(args: &[&str]) -> String {
    let out = run(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn cards_json(extra: &[&str]) -> Value {
    let mut args = vec!["cards", "--format", "json"];
    args.extend(extra);
    serde_json::from_str(&stdout(&args)).expect("valid JSON")
}

#[test]
fn json_is_the_contract() {
    let v = cards_json(&[]);
    assert_eq!(v["schema"], "triage.cards/v1");
    let cards = v["cards"].as_array().unwrap();
    assert!(cards.len() >= 200, "{}", cards.len());
    let mut kinds = std::collections::BTreeSet::new();
    for c in cards {
        let obj = c.as_object().unwrap();
        let numeric = c["kind"] == "numeric";
        let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
        keys.sort_unstable();
        let mut want = vec!["back", "front", "id", "kind", "tags"];
        if numeric {
            want.extend(["answer", "tolerance"]);
            assert!(c["answer"].is_number() && c["tolerance"].is_number(), "{}", c["id"]);
        }
        want.sort_unstable();
        assert_eq!(keys, want, "{}", c["id"]);
        assert!(c["id"].as_str().is_some_and(|s| !s.is_empty()));
        assert!(c["front"].as_str().is_some_and(|s| !s.is_empty()));
        assert!(c["back"].as_str().is_some_and(|s| !s.is_empty()));
        assert!(!c["tags"].as_array().unwrap().is_empty());
        kinds.insert(c["kind"].as_str().unwrap().to_owned());
    }
    assert_eq!(kinds.into_iter().collect::<Vec<_>>(), ["anatomy", "concept", "log", "numeric"]);
}

#[test]
fn tsv_imports_into_anki_as_it_is() {
    let t = stdout(&["cards", "--format", "tsv"]);
    let mut lines = t.lines();
    assert_eq!(lines.next(), Some("#separator:tab"));
    assert_eq!(lines.next(), Some("#html:true"));
    assert_eq!(lines.next(), Some("#tags column:3"));
    let rows: Vec<&str> = lines.collect();
    let n = cards_json(&[])["cards"].as_array().unwrap().len();
    assert_eq!(rows.len(), n, "one line per card: no raw newline inside a field");
    let mut br = 0;
    for row in rows {
        let cols: Vec<&str> = row.split('\t').collect();
        assert_eq!(cols.len(), 3, "three columns, no raw tab inside a field: {row:.120}");
        assert!(!cols[0].is_empty() && !cols[1].is_empty());
        assert!(!row.contains('\r'));
        for tag in cols[2].split(' ') {
            assert!(!tag.is_empty() && tag.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{tag:?}");
        }
        br += usize::from(cols[0].contains("<br>") || cols[1].contains("<br>"));
    }
    assert!(br > 50, "newlines are written as <br>");
}

#[test]
fn tag_filters_and_unknown_tag_is_a_usage_error() {
    let all = cards_json(&[]);
    let all = all["cards"].as_array().unwrap();
    for tag in ["kv", "client_config", "metrics"] {
        let v = cards_json(&["--tag", tag]);
        let some = v["cards"].as_array().unwrap();
        assert!(!some.is_empty() && some.len() < all.len(), "{tag}");
        assert!(some.iter().all(|c| c["tags"].as_array().unwrap().iter().any(|t| t == tag)), "{tag}");
        let want = all.iter().filter(|c| c["tags"].as_array().unwrap().iter().any(|t| t == tag)).count();
        assert_eq!(some.len(), want, "{tag}");
    }
    // Repeated: any of them; `client-config` is read as `client_config`.
    let both = cards_json(&["--tag", "gpu", "--tag", "client-config"]);
    assert!(
        both["cards"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| { c["tags"].as_array().unwrap().iter().any(|t| t == "gpu" || t == "client_config") })
    );
    let out = run(&["cards", "--tag", "nonsense"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown tag") && err.contains("client_config"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn chinese_output_has_the_same_cards() {
    let en = cards_json(&[]);
    let zh = cards_json(&["--lang", "zh"]);
    let (en, zh) = (en["cards"].as_array().unwrap(), zh["cards"].as_array().unwrap());
    assert_eq!(en.len(), zh.len());
    let cjk = |s: &str| s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
    for (e, z) in en.iter().zip(zh) {
        assert_eq!(e["id"], z["id"]);
        assert_eq!(e["kind"], z["kind"]);
        assert_eq!(e["tags"], z["tags"]);
        assert_eq!(e["answer"], z["answer"]);
        assert!(cjk(z["front"].as_str().unwrap()) && cjk(z["back"].as_str().unwrap()), "{}", z["id"]);
        assert_ne!(e["back"], z["back"], "{}", z["id"]);
    }
    let t = stdout(&["cards", "--format", "tsv", "--lang", "zh", "--tag", "oom"]);
    assert!(t.starts_with("#separator:tab\n") && cjk(&t));
}

/// A few numeric cards against the binary's own `triage kv --format json`.
#[test]
fn numeric_answers_equal_triage_kv() {
    let v = cards_json(&["--tag", "kv"]);
    let cards = v["cards"].as_array().unwrap();
    let questions = kv_questions();
    let mut checked = 0;
    for (i, q) in questions.iter().enumerate() {
        if i % 6 != 0 {
            continue;
        }
        let card = cards.iter().find(|c| c["id"] == q.id.as_str()).unwrap_or_else(|| panic!("{}", q.id));
        let mut args = vec!["kv".to_owned()];
        args.extend(q.flags());
        args.extend(["--format".to_owned(), "json".to_owned()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let kv: Value = serde_json::from_str(&stdout(&args)).expect("kv JSON");
        let want = q.answer(&kv).unwrap_or_else(|| panic!("{}: no answer in {kv}", q.id));
        assert_eq!(card["answer"].as_f64(), Some(want), "{} ({args:?})", q.id);
        checked += 1;
    }
    assert!(checked >= 5, "{checked}");
}
