//! Drill: a random incident from the simulator (run here, in wasm), its files, a choice of
//! causes, and then the analyzer's evidence — practice for the ten-minute path.

use crate::app::use_lang;
use crate::i18n::{Msg, t};
use crate::pages::triage::ReportView;
use crate::{NamedText, analyze_inputs};
use leptos::prelude::*;
use triage_sim_model::drill::{Drill, Verdict};

#[component]
pub fn DrillPage() -> impl IntoView {
    let lang = use_lang();
    let tr = move |m: Msg| t(lang.get(), m);
    let seed = RwSignal::new((js_sys::Date::now() as u64) % 100_000);
    let drill = RwSignal::new_local(None::<Drill>);
    let verdict = RwSignal::new(None::<Verdict>);
    let start = move |_| {
        verdict.set(None);
        drill.set(Some(Drill::new(seed.get_untracked())));
    };
    view! {
        <p>{move || tr(Msg::DrillIntro)}</p>
        <div class="row">
            <label>{move || tr(Msg::DrillSeed)} " "
                <input type="number" data-testid="drill-seed" prop:value=move || seed.get().to_string()
                    on:input=move |ev| seed.set(event_target_value(&ev).parse().unwrap_or(0))/>
            </label>
            <button class="primary" data-testid="drill-start" on:click=start>{move || tr(Msg::DrillNew)}</button>
        </div>
        {move || drill.get().map(|d| {
            let files: Vec<(String, String, String)> =
                d.files.iter().map(|f| (f.name.clone(), f.what.clone(), f.content.clone())).collect();
            let choices = d.choices.clone();
            let inputs: Vec<NamedText> = d
                .files
                .iter()
                .filter(|f| f.analyzable)
                .map(|f| NamedText { name: f.name.clone(), text: f.content.clone() })
                .collect();
            let d2 = d.clone();
            view! {
                <h3>{move || tr(Msg::DrillSymptom)}</h3>
                <p class="symptom" data-testid="drill-symptom">{d.symptom}</p>
                <h3>{move || tr(Msg::DrillFiles)}</h3>
                {files.into_iter().map(|(name, what, content)| {
                    let head: String = content.lines().take(40).collect::<Vec<_>>().join("\n");
                    view! {
                        <details class="branch" data-testid="drill-file">
                            <summary><code>{name}</code> " — " {what} " (" {content.len()} " B)"</summary>
                            <pre>{head}</pre>
                        </details>
                    }
                }).collect_view()}
                <h3>{move || tr(Msg::DrillPick)}</h3>
                <div class="choices">
                    {choices.into_iter().map(|c| {
                        let d3 = d2.clone();
                        view! {
                            <button data-testid="drill-choice" data-name=c.name on:click=move |_| verdict.set(Some(d3.check(c.name)))>
                                <code>{c.class}</code> " " {c.cause}
                            </button>
                        }
                    }).collect_view()}
                </div>
                {move || verdict.get().map(|v| {
                    // In the UI language: switching it analyses the drill's files again.
                    let report = analyze_inputs(&inputs, lang.get(), &|_| {});
                    let msg = if v.correct { Msg::DrillRight } else if v.same_class { Msg::DrillSameClass } else { Msg::DrillWrong };
                    view! {
                        <div class="verdict" data-testid="drill-verdict" data-answer=v.answer data-correct=v.correct.to_string()>
                            {move || tr(msg)} " " <code>{v.class}</code> " " {v.cause} " — " {v.rules.join(", ")}
                        </div>
                        <h3>{move || tr(Msg::DrillEvidence)}</h3>
                        <ReportView report inputs=inputs.clone()/>
                    }
                })}
            }
        })}
    }
}
