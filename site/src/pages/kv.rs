//! KV calculator: the core's estimator (the same `KvRequest` the CLI builds from its flags), with
//! presets, a pasted config.json, sliders, and a chart of concurrency against context length.

use crate::app::use_lang;
use crate::i18n::{Msg, t};
use leptos::prelude::*;
use triage_core::kv::gpus::GPUS;
use triage_core::kv::presets::PRESETS;
use triage_core::kv::report::KvReport;
use triage_core::kv::request::{KvRequest, build_report};
use triage_core::kv::units::fmt_int;
use wasm_bindgen::JsCast;

#[component]
pub fn KvPage() -> impl IntoView {
    let lang = use_lang();
    let tr = move |m: Msg| t(lang.get(), m);
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
        build_report(&request(), cfg.as_deref(), None).map_err(|e| e.to_string())
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
            if let Ok(rep) = build_report(&r, cfg.as_deref(), None) {
                points.push((len as f64, rep.estimate.max_concurrency));
            }
            len *= 2;
        }
        points
    });
    let canvas = NodeRef::<leptos::html::Canvas>::new();
    Effect::new(move |_| {
        let points = curve.get();
        let label = t(lang.get(), Msg::KvChartX);
        if let Some(c) = canvas.get() {
            let c: web_sys::HtmlCanvasElement = c.unchecked_into();
            super::chart::line(&c, &points, label);
        }
    });

    view! {
        <section class="kv form">
            <label>{move || tr(Msg::KvModel)}
                <select data-testid="kv-model" on:change=move |ev| model.set(event_target_value(&ev))>
                    {PRESETS.iter().map(|p| view! { <option value=p.id selected=p.id == "llama-3.1-8b">{p.id}</option> }).collect_view()}
                </select>
            </label>
            <label>{move || tr(Msg::KvDtype)}
                <select data-testid="kv-dtype" on:change=move |ev| kv_dtype.set(event_target_value(&ev))>
                    {["auto", "bf16", "fp16", "fp8", "fp8_e4m3", "fp8_ds_mla"].map(|d| view! { <option value=d>{d}</option> }).collect_view()}
                </select>
            </label>
            <label>{move || tr(Msg::KvTp)}
                <select data-testid="kv-tp" on:change=move |ev| tp.set(event_target_value(&ev).parse().unwrap_or(1))>
                    {[1u32, 2, 4, 8, 16].map(|n| view! { <option value=n>{n}</option> }).collect_view()}
                </select>
            </label>
            <label>{move || tr(Msg::KvGpu)}
                <select data-testid="kv-gpu" on:change=move |ev| gpu.set(event_target_value(&ev))>
                    {GPUS.iter().map(|g| view! { <option value=g.id selected=g.id == "h100">{g.name}</option> }).collect_view()}
                </select>
            </label>
            <label>{move || tr(Msg::KvUtil)} " " {move || format!("{:.2}", util.get())}
                <input type="range" min="0.5" max="0.98" step="0.01" data-testid="kv-util"
                    prop:value=move || util.get().to_string()
                    on:input=move |ev| util.set(event_target_value(&ev).parse().unwrap_or(0.9))/>
            </label>
            <label>{move || tr(Msg::KvMaxLen)}
                <input type="number" min="1" data-testid="kv-max-len"
                    prop:value=move || max_len.get().to_string()
                    on:input=move |ev| max_len.set(event_target_value(&ev).parse().unwrap_or(32_768))/>
            </label>
            <label>{move || tr(Msg::KvAvailable)}
                <input type="text" inputmode="decimal" data-testid="kv-available" placeholder="54.62"
                    prop:value=move || available.get()
                    on:input=move |ev| available.set(event_target_value(&ev))/>
            </label>
            <label class="wide">{move || tr(Msg::KvConfig)}
                <textarea rows="4" data-testid="kv-config" placeholder="{\"num_hidden_layers\": 32, …}"
                    prop:value=move || config.get()
                    on:input=move |ev| config.set(event_target_value(&ev))></textarea>
            </label>
        </section>
        {move || match report.get() {
            Err(e) => view! { <p class="error" data-testid="kv-error">{e}</p> }.into_any(),
            Ok(r) => view! { <KvResult r/> }.into_any(),
        }}
        <h2>{move || tr(Msg::KvChart)}</h2>
        <canvas node_ref=canvas width="760" height="260" data-testid="kv-chart"></canvas>
    }
}

#[component]
fn KvResult(r: KvReport) -> impl IntoView {
    let lang = use_lang();
    let tr = move |m: Msg| t(lang.get(), m);
    let e = r.estimate;
    view! {
        <table class="kv-result">
            <tbody>
                <tr><td>{move || tr(Msg::KvBytesPerToken)}</td><td data-testid="kv-bytes-per-token">{fmt_int(e.bytes_per_token_per_rank)}</td></tr>
                <tr><td>{move || tr(Msg::KvBlocks)}</td><td data-testid="kv-blocks">{fmt_int(e.blocks)}</td></tr>
                <tr><td>{move || tr(Msg::KvTokens)}</td><td data-testid="kv-tokens">{fmt_int(e.tokens)}</td></tr>
                <tr><td>{move || tr(Msg::KvConcurrency)}</td><td data-testid="kv-concurrency">{format!("{:.2}x", e.max_concurrency)}</td></tr>
                <tr><td>{move || tr(Msg::KvFits)}</td><td data-testid="kv-max-num-seqs">{fmt_int(e.max_num_seqs)}</td></tr>
            </tbody>
        </table>
        {(!e.warnings.is_empty()).then(|| view! { <ul class="warnings">{e.warnings.iter().map(|w| view! { <li>{w.clone()}</li> }).collect_view()}</ul> })}
        <h3>{move || tr(Msg::KvFormula)}</h3>
        <ul class="formula">{e.formula.iter().map(|f| view! { <li><code>{f.clone()}</code></li> }).collect_view()}</ul>
        <h3>{move || tr(Msg::KvAssumptions)}</h3>
        <ul class="assumptions">{e.assumptions.iter().map(|a| view! { <li>{a.clone()}</li> }).collect_view()}</ul>
    }
}
