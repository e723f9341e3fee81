//! Small questions the page asks the worker, answered as JSON: `{"ok": …}` or `{"err": "…"}`.
//!
//! | kind          | args                          | ok                                        |
//! |---------------|-------------------------------|-------------------------------------------|
//! | `docs`        | —                             | `[{id, class, en: RuleText, zh: RuleText}]` |
//! | `analyze`     | `{lang, inputs: [{name, text}]}` | `{report, excerpts}`                    |
//! | `drill`       | `{seed}`                      | `{seed, symptom: [en, zh], files, choices}` |
//! | `drill-check` | `{seed, pick, lang}`          | `{verdict, report, excerpts}`             |
//!
//! `files` carry each file's first [`DRILL_HEAD_LINES`] lines and its size, not its content:
//! the analysis of the drill's files happens here, at the check.

use crate::{NamedText, analyze_inputs, excerpts};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use triage_core::analyze::rules;
use triage_core::lang::Lang;
use triage_sim_model::drill::Drill;
use wasm_bindgen::prelude::*;

/// Lines of each drill file the page shows.
pub const DRILL_HEAD_LINES: usize = 40;

#[derive(Deserialize)]
struct AnalyzeArgs {
    lang: String,
    inputs: Vec<NamedText>,
}

#[derive(Deserialize)]
struct DrillArgs {
    seed: u64,
    #[serde(default)]
    pick: String,
    #[serde(default)]
    lang: String,
}

#[derive(Serialize)]
struct RuleTexts {
    title: &'static str,
    detects: &'static str,
    why: &'static str,
    example: &'static str,
    fix: &'static str,
}

fn texts(t: rules::RuleText) -> RuleTexts {
    RuleTexts { title: t.title, detects: t.detects, why: t.why, example: t.example, fix: t.fix }
}

fn lang(s: &str) -> Lang {
    Lang::parse(s).unwrap_or_default()
}

fn docs() -> Value {
    rules::docs()
        .map(|d| json!({"id": d.id, "class": d.class, "en": texts(d.text(Lang::En)), "zh": texts(d.text(Lang::Zh))}))
        .collect()
}

fn analyze(args: AnalyzeArgs) -> Value {
    let report = analyze_inputs(&args.inputs, lang(&args.lang));
    let shown = excerpts(&report, &args.inputs);
    json!({"report": report, "excerpts": shown})
}

fn both(f: impl Fn(Lang) -> String) -> [String; 2] {
    Lang::ALL.map(f)
}

fn drill(seed: u64) -> Value {
    let d = Drill::new(seed);
    let files: Vec<Value> = d
        .files
        .iter()
        .map(|f| {
            let head: Vec<&str> = f.content.lines().take(DRILL_HEAD_LINES).collect();
            json!({"name": f.name, "what": both(|l| f.what_in(l).to_owned()), "bytes": f.content.len(), "head": head.join("\n")})
        })
        .collect();
    let choices: Vec<Value> = d
        .choices
        .iter()
        .map(|c| json!({"name": c.name, "class": c.class, "cause": both(|l| c.cause_in(l).to_owned())}))
        .collect();
    json!({"seed": d.seed, "symptom": both(|l| d.symptom_in(l).to_owned()), "files": files, "choices": choices})
}

fn drill_check(args: DrillArgs) -> Value {
    let d = Drill::new(args.seed);
    let v = d.check(&args.pick);
    let inputs: Vec<NamedText> = d
        .files
        .into_iter()
        .filter(|f| f.analyzable)
        .map(|f| NamedText { name: f.name, text: f.content })
        .collect();
    let report = analyze_inputs(&inputs, lang(&args.lang));
    let shown = excerpts(&report, &inputs);
    let verdict = json!({
        "correct": v.correct,
        "same_class": v.same_class,
        "answer": v.answer,
        "class": v.class,
        "cause": both(|l| v.cause_in(l).to_owned()),
        "rules": v.rules,
    });
    json!({"verdict": verdict, "report": report, "excerpts": shown})
}

/// Answer question `kind` with `args` (JSON); see the module's table.
pub fn answer(kind: &str, args: &str) -> Result<Value, String> {
    let parse = |e: serde_json::Error| format!("{kind}: bad arguments: {e}");
    match kind {
        "docs" => Ok(docs()),
        "analyze" => serde_json::from_str(args).map(analyze).map_err(parse),
        "drill" => serde_json::from_str::<DrillArgs>(args).map(|a| drill(a.seed)).map_err(parse),
        "drill-check" => serde_json::from_str(args).map(drill_check).map_err(parse),
        _ => Err(format!("no such question: {kind:?}")),
    }
}

/// [`answer`] as the worker hands it back: `{"ok": …}` or `{"err": "…"}`.
#[wasm_bindgen]
pub fn call(kind: &str, args: &str) -> String {
    let v = match answer(kind, args) {
        Ok(v) => json!({"ok": v}),
        Err(e) => json!({"err": e}),
    };
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_has_docs_in_both_languages() {
        let docs = answer("docs", "").unwrap();
        let docs = docs.as_array().unwrap();
        assert_eq!(docs.len(), rules::docs().count());
        for d in docs {
            assert_ne!(d["en"]["title"], d["zh"]["title"], "{d}");
            assert!(!d["zh"]["fix"].as_str().unwrap().is_empty());
        }
    }

    #[test]
    fn a_drill_hides_its_answer_and_its_check_names_it_with_evidence() {
        let d = answer("drill", r#"{"seed":3}"#).unwrap();
        assert!(d["files"].as_array().unwrap().len() >= 3);
        assert!(d["choices"].as_array().unwrap().len() >= 11);
        assert!(!d.to_string().contains("\"answer\""), "the drill does not say its answer");
        let first = d["choices"][0]["name"].as_str().unwrap();
        let c = answer("drill-check", &format!(r#"{{"seed":3,"pick":"{first}","lang":"zh"}}"#)).unwrap();
        let answer_name = c["verdict"]["answer"].as_str().unwrap();
        let fired: Vec<&str> =
            c["report"]["findings"].as_array().unwrap().iter().map(|f| f["rule"].as_str().unwrap()).collect();
        let rules = c["verdict"]["rules"].as_array().unwrap();
        assert!(rules.iter().any(|r| fired.contains(&r.as_str().unwrap())), "{answer_name}: {fired:?}");
        let right =
            answer("drill-check", &format!(r#"{{"seed":3,"pick":"{answer_name}","lang":"en"}}"#)).unwrap();
        assert_eq!(right["verdict"]["correct"], true);
    }

    #[test]
    fn a_question_it_does_not_know_or_bad_arguments_are_errors_not_panics() {
        assert!(call("nope", "{}").contains("\"err\""));
        assert!(call("analyze", "{not json").contains("bad arguments"));
        assert!(call("drill-check", r#"{"seed":"x"}"#).contains("\"err\""));
    }
}
