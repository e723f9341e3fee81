//! KV calculator: the core's estimator (the same `KvRequest` the CLI builds from its flags), with
//! presets, a pasted config.json, sliders, and a chart of concurrency against context length.

use crate::app::{effect, num_text, set_parsed, set_text, tx, use_lang};
use crate::fixed::fixed;
use crate::i18n::{Msg, t};
use leptos::prelude::*;
use triage_base::lang::Lang;
use triage_kv::gpus::GPUS;
use triage_kv::missing::describe_in as describe_missing;
use triage_kv::presets::PRESETS;
use triage_kv::report::KvReport;
use triage_kv::request::{KvRequest, build_report_in};
use triage_kv::units::fmt_int;
use wasm_bindgen::JsCast;

#[component]
pub fn KvPage() -> impl IntoView {
    let lang = use_lang();
    let model = RwSignal::new("llama-3.1-8b".to_owned());
    let config = RwSignal::new(String::new());
    let kv_dtype = RwSignal::new("auto".to_owned());
    let tp = RwSignal::new(1u32);
    let gpu = RwSignal::new("h100".to_owned());
    let util = RwSignal::new(0.9f64);
    let max_len = RwSignal::new(32_768u64);
    let available = RwSignal::new(String::new());

    let request = move || KvRequest {
        model: Some(model.get()),
        kv_dtype: kv_dtype.get(),
        tp: tp.get(),
        gpu: Some(gpu.get()),
        gpu_memory_utilization: format!("{:.2}", util.get()),
        max_model_len: Some(max_len.get()),
        available_kv_gib: Some(available.get()).filter(|a| !a.trim().is_empty()),
        ..KvRequest::default()
    };
    let report = Memo::new(move |_| {
        let cfg = config.get();
        let cfg = (!cfg.trim().is_empty()).then_some(cfg);
        let lang = lang.get();
        build_report_in(&request(), cfg.as_deref(), None, lang).map_err(|e| e.message_in(lang))
    });
    // Concurrency at lengths from 1k up to max_model_len: one estimate per point, same code.
    let curve = Memo::new(move |_| {
        let cfg = config.get();
        let cfg = (!cfg.trim().is_empty()).then_some(cfg);
        let top = max_len.get().max(1024);
        let mut points = Vec::new();
        let mut len = 1024u64;
        while len <= top {
            let r = KvRequest { at_len: Some(len), ..request() };
            if let Some(c) = build_report_in(&r, cfg.as_deref(), None, Lang::En)
                .ok()
                .and_then(|rep| rep.estimate.max_concurrency)
            {
                points.push((len as f64, c));
            }
            len *= 2;
        }
        points
    });
    let canvas = NodeRef::<leptos::html::Canvas>::new();
    Effect::new(effect(move |_| {
        let points = curve.get();
        let label = t(lang.get(), Msg::KvChartX);
        if let Some(c) = canvas.get() {
            let c: web_sys::HtmlCanvasElement = c.unchecked_into();
            super::chart::line(&c, &points, label);
        }
    }));

    fixed(view! {
        <section class="kv form">
            <label>{tx(lang, Msg::KvModel)}
                <select data-testid="kv-model" on:change=set_text(model)>
                    {PRESETS.iter().map(|p| fixed(view! { <option value=p.id selected=p.id == "llama-3.1-8b">{p.id}</option> })).collect_view()}
                </select>
            </label>
            <label>{tx(lang, Msg::KvDtype)}
                <select data-testid="kv-dtype" on:change=set_text(kv_dtype)>
                    {["auto", "bf16", "fp16", "fp8", "fp8_e4m3", "fp8_ds_mla"].map(|d| fixed(view! { <option value=d>{d}</option> })).collect_view()}
                </select>
            </label>
            <label>{tx(lang, Msg::KvTp)}
                <select data-testid="kv-tp" on:change=set_parsed(tp, 1)>
                    {[1u32, 2, 4, 8, 16].map(|n| fixed(view! { <option value=n>{n}</option> })).collect_view()}
                </select>
            </label>
            <label>{tx(lang, Msg::KvGpu)}
                <select data-testid="kv-gpu" on:change=set_text(gpu)>
                    {GPUS.iter().map(|g| fixed(view! { <option value=g.id selected=g.id == "h100">{g.name}</option> })).collect_view()}
                </select>
            </label>
            <label>{tx(lang, Msg::KvUtil)} " " {move || format!("{:.2}", util.get())}
                <input type="range" min="0.5" max="0.98" step="0.01" data-testid="kv-util"
                    prop:value=num_text(util)
                    on:input=set_parsed(util, 0.9)/>
            </label>
            <label>{tx(lang, Msg::KvMaxLen)}
                <input type="number" min="1" data-testid="kv-max-len"
                    prop:value=num_text(max_len)
                    on:input=set_parsed(max_len, 32_768)/>
            </label>
            <label>{tx(lang, Msg::KvAvailable)}
                <input type="text" inputmode="decimal" data-testid="kv-available" placeholder="54.62"
                    prop:value=available
                    on:input=set_text(available)/>
            </label>
            <label class="wide">{tx(lang, Msg::KvConfig)}
                <textarea rows="4" data-testid="kv-config" placeholder="{\"num_hidden_layers\": 32, …}"
                    prop:value=config
                    on:input=set_text(config)></textarea>
            </label>
        </section>
        {move || match report.get() {
            Err(e) => fixed(view! { <p class="error" data-testid="kv-error">{e}</p> }),
            Ok(r) => fixed(view! { <KvResult r/> }),
        }}
        <h2>{tx(lang, Msg::KvChart)}</h2>
        <canvas node_ref=canvas width="760" height="260" data-testid="kv-chart"></canvas>
    })
}

#[component]
fn KvResult(r: KvReport) -> impl IntoView {
    let lang = use_lang();
    let e = r.estimate;
    // A figure the inputs do not determine reads "unknown"; the list below says what settles it.
    let unknown = t(lang.get_untracked(), Msg::KvUnknown);
    let int = |v: Option<u64>| v.map_or_else(|| unknown.to_owned(), fmt_int);
    let concurrency = e.max_concurrency.map_or_else(|| unknown.to_owned(), |c| format!("{c:.2}x"));
    let missing: Vec<String> = e.missing.iter().map(|m| describe_missing(m, lang.get_untracked())).collect();
    fixed(view! {
        <table class="kv-result">
            <tbody>
                <tr><td>{tx(lang, Msg::KvBytesPerToken)}</td><td data-testid="kv-bytes-per-token">{fmt_int(e.bytes_per_token_per_rank)}</td></tr>
                <tr><td>{tx(lang, Msg::KvBlocks)}</td><td data-testid="kv-blocks">{int(e.blocks)}</td></tr>
                <tr><td>{tx(lang, Msg::KvTokens)}</td><td data-testid="kv-tokens">{int(e.tokens)}</td></tr>
                <tr><td>{tx(lang, Msg::KvConcurrency)}</td><td data-testid="kv-concurrency">{concurrency}</td></tr>
                <tr><td>{tx(lang, Msg::KvFits)}</td><td data-testid="kv-max-num-seqs">{int(e.max_num_seqs)}</td></tr>
            </tbody>
        </table>
        {(!missing.is_empty()).then(|| fixed(view! {
            <h3>{tx(lang, Msg::KvMissing)}</h3>
            <ul class="missing" data-testid="kv-missing">{missing.into_iter().map(|m| fixed(view! { <li>{m}</li> })).collect_view()}</ul>
        }))}
        {(!e.warnings.is_empty()).then(|| fixed(view! { <ul class="warnings">{e.warnings.iter().map(|w| fixed(view! { <li>{w.clone()}</li> })).collect_view()}</ul> }))}
        <h3>{tx(lang, Msg::KvFormula)}</h3>
        <ul class="formula">{e.formula.iter().map(|f| fixed(view! { <li><code>{f.clone()}</code></li> })).collect_view()}</ul>
        <h3>{tx(lang, Msg::KvAssumptions)}</h3>
        <ul class="assumptions">{e.assumptions.iter().map(|a| fixed(view! { <li>{a.clone()}</li> })).collect_view()}</ul>
    })
}
