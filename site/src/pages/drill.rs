//! Drill: a random incident from the simulator (run here, in wasm), its files, a choice of
//! causes, and then the analyzer's evidence — practice for the ten-minute path.

use crate::app::{click, num_text, set_parsed, tx, use_lang};
use crate::fixed::fixed;
use crate::i18n::{Lang, Msg};
use crate::pages::triage::ReportView;
use crate::{NamedText, analyze_inputs};
use leptos::prelude::*;
use triage_sim_model::drill::{Drill, Verdict};

#[component]
pub fn DrillPage() -> impl IntoView {
    let lang = use_lang();
    let seed = RwSignal::new((js_sys::Date::now() as u64) % 100_000);
    let drill = RwSignal::new_local(None::<Drill>);
    let verdict = RwSignal::new(None::<Verdict>);
    let start = move |_| {
        verdict.set(None);
        drill.set(Some(Drill::new(seed.get_untracked())));
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
        {move || drill.get().map(|d| {
            let files: Vec<(String, [String; 2], String)> = d
                .files
                .iter()
                .map(|f| {
                    let what = Lang::ALL.map(|l| f.what_in(l).to_owned());
                    (f.name.clone(), what, f.content.clone())
                })
                .collect();
            let symptom = Lang::ALL.map(|l| d.symptom_in(l));
            let choices = d.choices.clone();
            let inputs: Vec<NamedText> = d
                .files
                .iter()
                .filter(|f| f.analyzable)
                .map(|f| NamedText { name: f.name.clone(), text: f.content.clone() })
                .collect();
            let d2 = d.clone();
            fixed(view! {
                <h3>{tx(lang, Msg::DrillSymptom)}</h3>
                <p class="symptom" data-testid="drill-symptom">{move || lang.get().pick(symptom[0], symptom[1])}</p>
                <h3>{tx(lang, Msg::DrillFiles)}</h3>
                {files.into_iter().map(|(name, what, content)| {
                    let head: String = content.lines().take(40).collect::<Vec<_>>().join("\n");
                    fixed(view! {
                        <details class="branch" data-testid="drill-file">
                            <summary><code>{name}</code> " — " {move || lang.get().pick(&what[0], &what[1]).clone()} " (" {content.len()} " B)"</summary>
                            <pre>{head}</pre>
                        </details>
                    })
                }).collect_view()}
                <h3>{tx(lang, Msg::DrillPick)}</h3>
                <div class="choices">
                    {choices.into_iter().map(|c| {
                        let d3 = d2.clone();
                        let cause = Lang::ALL.map(|l| c.cause_in(l));
                        fixed(view! {
                            <button data-testid="drill-choice" data-name=c.name on:click=click(move |_| verdict.set(Some(d3.check(c.name))))>
                                <code>{c.class}</code> " " {move || lang.get().pick(cause[0], cause[1])}
                            </button>
                        })
                    }).collect_view()}
                </div>
                {move || verdict.get().map(|v| {
                    // In the UI language: switching it analyses the drill's files again.
                    let report = analyze_inputs(&inputs, lang.get(), &|_| {});
                    let msg = if v.correct { Msg::DrillRight } else if v.same_class { Msg::DrillSameClass } else { Msg::DrillWrong };
                    fixed(view! {
                        <div class="verdict" data-testid="drill-verdict" data-answer=v.answer data-correct=v.correct.to_string()>
                            {tx(lang, msg)} " " <code>{v.class}</code> " " {v.cause_in(lang.get())} " — " {v.rules.join(", ")}
                        </div>
                        <h3>{tx(lang, Msg::DrillEvidence)}</h3>
                        <ReportView report inputs=inputs.clone()/>
                    })
                })}
            })
        })}
    })
}
