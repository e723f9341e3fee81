//! Drill: a random incident from the simulator, its files, a choice of causes, and then the
//! analyzer's evidence — practice for the ten-minute path. The simulator and the analyzer run
//! in the analysis worker (`site/analyzer/src/calls.rs`: `drill`, `drill-check`); the page shows.

use crate::app::{click, num_text, set_parsed, tx, use_lang};
use crate::fixed::{Erase, fixed};
use crate::i18n::Msg;
use crate::pages::triage::ReportView;
use crate::{Excerpt, worker};
use leptos::prelude::*;
use serde::Deserialize;
use triage_report::Report;

/// One file the incident left: its first lines and its size (the worker keeps the rest).
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct DrillFile {
    pub name: String,
    /// What it is, in English and Chinese.
    pub what: [String; 2],
    pub bytes: usize,
    pub head: String,
}

/// One cause a person can pick.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct DrillChoice {
    pub name: String,
    pub class: String,
    pub cause: [String; 2],
}

/// A drill as the worker describes it (the answer stays there until a pick is checked).
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct DrillView {
    pub seed: u64,
    pub symptom: [String; 2],
    pub files: Vec<DrillFile>,
    pub choices: Vec<DrillChoice>,
}

/// What a pick was worth.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct Verdict {
    pub correct: bool,
    pub same_class: bool,
    pub answer: String,
    pub class: String,
    pub cause: [String; 2],
    pub rules: Vec<String>,
}

/// A checked pick: the verdict and the analyzer's report of the drill's files.
#[derive(Clone, Debug, Deserialize)]
pub struct Checked {
    pub verdict: Verdict,
    pub report: Report,
    pub excerpts: Vec<Excerpt>,
}

#[component]
pub fn DrillPage() -> impl IntoView {
    let lang = use_lang();
    let seed = RwSignal::new((js_sys::Date::now() as u64) % 100_000);
    let drill = RwSignal::new(None::<DrillView>);
    let error = RwSignal::new(None::<String>);
    let start = move |_| {
        error.set(None);
        let s = seed.get_untracked();
        leptos::task::spawn_local(async move {
            match worker::call::<DrillView>("drill", &serde_json::json!({ "seed": s })).await {
                Ok(d) => drill.set(Some(d)),
                Err(e) => error.set(Some(e)),
            }
        });
    };
    fixed(view! {
        <p>{tx(lang, Msg::DrillIntro)}</p>
        <div class="row">
            <label>{tx(lang, Msg::DrillSeed)} " "
                <input type="number" data-testid="drill-seed" prop:value=num_text(seed)
                    on:input=set_parsed(seed, 0)/>
            </label>
            <button class="primary" data-testid="drill-start" on:click=click(start)>{tx(lang, Msg::DrillNew)}</button>
        </div>
        {move || error.get().map(|e| fixed(view! { <p class="error" data-testid="drill-error">{e}</p> }))}
        {move || drill.get().map(|d| fixed(view! { <DrillShown drill=d/> }))}
    })
}

/// A drill on screen: symptom, files, choices, and after a pick the verdict and the evidence
/// (asked again in the new language when the UI switches).
#[component]
pub fn DrillShown(drill: DrillView) -> impl IntoView {
    let lang = use_lang();
    let picked = RwSignal::new(None::<String>);
    let checked = RwSignal::new(None::<Result<Checked, String>>);
    let seed = drill.seed;
    Effect::new(move |_| {
        let l = lang.get();
        let Some(pick) = picked.get() else { return };
        leptos::task::spawn_local(async move {
            let args = serde_json::json!({ "seed": seed, "pick": pick, "lang": l.as_str() });
            let got = worker::call::<Checked>("drill-check", &args).await;
            checked.set(Some(got));
        });
    });
    let symptom = drill.symptom.clone();
    fixed(view! {
        <h3>{tx(lang, Msg::DrillSymptom)}</h3>
        <p class="symptom" data-testid="drill-symptom">{move || lang.get().pick(&symptom[0], &symptom[1]).clone()}</p>
        <h3>{tx(lang, Msg::DrillFiles)}</h3>
        {drill.files.into_iter().map(|f| {
            let what = f.what;
            fixed(view! {
                <details class="branch" data-testid="drill-file">
                    <summary><code>{f.name}</code> " — " {move || lang.get().pick(&what[0], &what[1]).clone()} " (" {f.bytes} " B)"</summary>
                    <pre>{f.head}</pre>
                </details>
            })
        }).collect_view()}
        <h3>{tx(lang, Msg::DrillPick)}</h3>
        <div class="choices">
            {drill.choices.into_iter().map(|c| {
                let name = c.name.clone();
                let cause = c.cause;
                fixed(view! {
                    <button data-testid="drill-choice" data-name=c.name.clone() on:click=click(move |_| {
                        checked.set(None);
                        picked.set(Some(name.clone()));
                    })>
                        <code>{c.class}</code> " " {move || lang.get().pick(&cause[0], &cause[1]).clone()}
                    </button>
                })
            }).collect_view()}
        </div>
        {move || checked.get().map(|got| match got {
            Err(e) => fixed(view! { <p class="error" data-testid="drill-error">{e}</p> }).erase(),
            Ok(c) => {
                let v = c.verdict;
                let msg = if v.correct { Msg::DrillRight } else if v.same_class { Msg::DrillSameClass } else { Msg::DrillWrong };
                let cause = v.cause;
                fixed(view! {
                    <div class="verdict" data-testid="drill-verdict" data-answer=v.answer data-correct=v.correct.to_string()>
                        {tx(lang, msg)} " " <code>{v.class}</code> " " {move || lang.get().pick(&cause[0], &cause[1]).clone()} " — " {v.rules.join(", ")}
                    </div>
                    <h3>{tx(lang, Msg::DrillEvidence)}</h3>
                    <ReportView report=c.report excerpts=c.excerpts/>
                })
                .erase()
            }
        })}
    })
}
