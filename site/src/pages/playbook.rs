//! Playbook: the four trees as interactive branches (each branch is a rule and its docs), the
//! configuration pitfalls, what an error no rule explains means, and a client-config generator
//! linted as you type by the analyzer.

use crate::app::{set_text, tx, use_lang};
use crate::fixed::{Erase, fixed};
use crate::i18n::Msg;
use leptos::prelude::*;
use triage_core::analyze::report::Class;
use triage_core::analyze::rules;

const TREES: [(Class, Msg); 4] = [
    (Class::TtftHigh, Msg::TreeTtft),
    (Class::TbtTail, Msg::TreeTbt),
    (Class::Oom, Msg::TreeOom),
    (Class::ThroughputZero, Msg::TreeThroughput),
];

/// Each rule of `class` as a branch, its docs in the UI language (core holds both).
#[component]
fn Branches(class: Class) -> impl IntoView {
    let lang = use_lang();
    rules::docs()
        .filter(move |d| d.class == class)
        .map(|d| {
            let doc = move || d.text(lang.get());
            fixed(view! {
                <details class="branch" data-testid="playbook-branch" data-rule=d.id>
                    <summary>{move || doc().title} " " <code>{d.id}</code></summary>
                    <dl>
                        <dt>{tx(lang, Msg::Detects)}</dt><dd>{move || doc().detects}</dd>
                        <dt>{tx(lang, Msg::Why)}</dt><dd>{move || doc().why}</dd>
                        <dt>{tx(lang, Msg::ExampleLabel)}</dt><dd><code>{move || doc().example}</code></dd>
                        <dt>{tx(lang, Msg::Fix)}</dt><dd>{move || doc().fix}</dd>
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
    let lint = Memo::new(move |_| {
        triage_core::analyze::analyze_in(lang.get(), &[("generated config", &text.get())])
            .findings
            .into_iter()
            .filter(|f| f.class == Class::Config)
            .collect::<Vec<_>>()
    });
    fixed(view! {
        <p>{tx(lang, Msg::PlaybookIntro)}</p>
        {TREES
            .into_iter()
            .map(|(class, title)| {
                fixed(view! {
                    <section class="tree" data-testid="playbook-tree">
                        <h2>{tx(lang, title)} " " <code>{class.as_str()}</code></h2>
                        <Branches class/>
                    </section>
                })
            })
            .collect_view()}
        <section class="tree">
            <h2>{tx(lang, Msg::Pitfalls)} " " <code>"CONFIG"</code></h2>
            <Branches class=Class::Config/>
        </section>
        <section class="tree">
            <h2>{tx(lang, Msg::Unexplained)} " " <code>"INCONCLUSIVE"</code></h2>
            <Branches class=Class::Inconclusive/>
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
