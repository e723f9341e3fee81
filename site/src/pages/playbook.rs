//! Playbook: the four trees as interactive branches (each branch is a rule and its docs), the
//! configuration pitfalls, what an error no rule explains means, and a client-config generator
//! linted as you type by the analyzer. The rule docs and the lint come from the analysis worker
//! (`docs`, `analyze`): the page's own wasm carries neither.

use crate::app::{set_text, tx, use_lang};
use crate::fixed::{Erase, fixed};
use crate::i18n::Msg;
use crate::worker;
use leptos::prelude::*;
use serde::Deserialize;
use triage_report::{Class, Finding, Report};

const TREES: [(Class, Msg); 4] = [
    (Class::TtftHigh, Msg::TreeTtft),
    (Class::TbtTail, Msg::TreeTbt),
    (Class::Oom, Msg::TreeOom),
    (Class::ThroughputZero, Msg::TreeThroughput),
];

/// A rule's docs in one language.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct DocText {
    pub title: String,
    pub detects: String,
    pub why: String,
    pub example: String,
    pub fix: String,
}

/// A rule's docs in both languages, as the worker gives them.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct Doc {
    pub id: String,
    pub class: Class,
    pub en: DocText,
    pub zh: DocText,
}

/// Each rule of `class` in `docs` as a branch, its docs in the UI language.
#[component]
pub fn Branches(class: Class, docs: Vec<Doc>) -> impl IntoView {
    let lang = use_lang();
    docs.into_iter()
        .filter(move |d| d.class == class)
        .map(|d| {
            let id = d.id.clone();
            let d = std::sync::Arc::new(d);
            let field = |f: fn(&DocText) -> String| {
                let d = d.clone();
                move || f(lang.get().pick(&d.en, &d.zh))
            };
            fixed(view! {
                <details class="branch" data-testid="playbook-branch" data-rule=id.clone()>
                    <summary>{field(|t| t.title.clone())} " " <code>{id.clone()}</code></summary>
                    <dl>
                        <dt>{tx(lang, Msg::Detects)}</dt><dd>{field(|t| t.detects.clone())}</dd>
                        <dt>{tx(lang, Msg::Why)}</dt><dd>{field(|t| t.why.clone())}</dd>
                        <dt>{tx(lang, Msg::ExampleLabel)}</dt><dd><code>{field(|t| t.example.clone())}</code></dd>
                        <dt>{tx(lang, Msg::Fix)}</dt><dd>{field(|t| t.fix.clone())}</dd>
                    </dl>
                </details>
            })
        })
        .collect_view()
}

fn generated(base: &str, model: &str, timeout_ms: &str, retries: &str) -> String {
    format!(
        "{{ \"env\": {{ \"ANTHROPIC_BASE_URL\": \"{base}\", \"ANTHROPIC_AUTH_TOKEN\": \"<your key>\", \"ANTHROPIC_MODEL\": \"{model}\", \"API_TIMEOUT_MS\": \"{timeout_ms}\" }} }}\n\n\
         model_provider = \"gateway\"\nmodel = \"{model}\"\n\n[model_providers.gateway]\nname = \"gateway\"\nbase_url = \"{base}\"\nenv_key = \"GATEWAY_API_KEY\"\nwire_api = \"chat\"\nrequest_max_retries = {retries}\ntimeout_ms = {timeout_ms}\nmax_retries = {retries}\n\n\
         export ANTHROPIC_BASE_URL=\"{base}\"\nexport API_TIMEOUT_MS=\"{timeout_ms}\"\n"
    )
}

#[component]
pub fn PlaybookPage() -> impl IntoView {
    let lang = use_lang();
    let base = RwSignal::new("https://gateway.example.com/api".to_owned());
    let model = RwSignal::new("claude-sonnet-4-5".to_owned());
    let timeout = RwSignal::new("60000".to_owned());
    let retries = RwSignal::new("2".to_owned());
    let text = Memo::new(move |_| generated(&base.get(), &model.get(), &timeout.get(), &retries.get()));
    let docs = RwSignal::new(None::<Result<Vec<Doc>, String>>);
    leptos::task::spawn_local(async move {
        docs.set(Some(worker::call::<Vec<Doc>>("docs", &serde_json::Value::Null).await));
    });
    // The generator's config linted by the analyzer in the worker; an answer to an older text
    // (the user typed on) is dropped.
    let lint = RwSignal::new(Vec::<Finding>::new());
    let asked = StoredValue::new(0u32);
    Effect::new(move |_| {
        let args = serde_json::json!({
            "lang": lang.get().as_str(),
            "inputs": [{"name": "generated config", "text": text.get()}],
        });
        let n = asked.get_value().wrapping_add(1);
        asked.set_value(n);
        leptos::task::spawn_local(async move {
            #[derive(Deserialize)]
            struct Analysed {
                report: Report,
            }
            if let Ok(a) = worker::call::<Analysed>("analyze", &args).await
                && asked.get_value() == n
            {
                lint.set(a.report.findings.into_iter().filter(|f| f.class == Class::Config).collect());
            }
        });
    });
    let branches = move |class: Class| {
        move || match docs.get() {
            None => fixed(view! { <p class="note">"…"</p> }).erase(),
            Some(Err(e)) => fixed(view! { <p class="error">{e}</p> }).erase(),
            Some(Ok(d)) => fixed(view! { <Branches class docs=d/> }).erase(),
        }
    };
    fixed(view! {
        <p>{tx(lang, Msg::PlaybookIntro)}</p>
        {TREES
            .into_iter()
            .map(|(class, title)| {
                fixed(view! {
                    <section class="tree" data-testid="playbook-tree">
                        <h2>{tx(lang, title)} " " <code>{class.as_str()}</code></h2>
                        {branches(class)}
                    </section>
                })
            })
            .collect_view()}
        <section class="tree">
            <h2>{tx(lang, Msg::Pitfalls)} " " <code>"CONFIG"</code></h2>
            {branches(Class::Config)}
        </section>
        <section class="tree">
            <h2>{tx(lang, Msg::Unexplained)} " " <code>"INCONCLUSIVE"</code></h2>
            {branches(Class::Inconclusive)}
        </section>
        <section class="generator form">
            <h2>{tx(lang, Msg::Generator)}</h2>
            <label class="wide">{tx(lang, Msg::GeneratorBase)}
                <input type="url" data-testid="gen-base" prop:value=base on:input=set_text(base)/>
            </label>
            <label>{tx(lang, Msg::ProbeModel)}
                <input type="text" prop:value=model on:input=set_text(model)/>
            </label>
            <label>{tx(lang, Msg::GeneratorTimeout)}
                <input type="number" data-testid="gen-timeout" prop:value=timeout on:input=set_text(timeout)/>
            </label>
            <label>{tx(lang, Msg::GeneratorRetries)}
                <input type="number" data-testid="gen-retries" prop:value=retries on:input=set_text(retries)/>
            </label>
            <pre data-testid="gen-output">{move || text.get()}</pre>
            <h3>{tx(lang, Msg::GeneratorLint)}</h3>
            <ul data-testid="gen-lint">
                {move || {
                    let found = lint.get();
                    if found.is_empty() {
                        fixed(view! { <li class="ok">"✓"</li> })
                    } else {
                        found
                            .into_iter()
                            .map(|f| fixed(view! { <li data-testid="gen-finding" data-rule=f.rule.clone()><code>{f.rule.clone()}</code> ": " {f.summary.clone()}</li> }))
                            .collect_view()
                            .erase()
                    }
                }}
            </ul>
        </section>
    })
}
